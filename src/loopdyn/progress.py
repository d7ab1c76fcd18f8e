"""Progress of long steps: ``loopdyn bench`` and ``loopdyn compile``.

On a terminal the bar is tqdm's (the ``bench`` extra installs it; without tqdm nothing is drawn but
the lines below). Written to a file or a pipe, each step prints a line when it starts and one when
it ends, so a log shows what is running, and, with ``lines=True``, one line per item as it finishes
(``loopdyn compile``: one per kernel).
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """``with Progress(total, "label") as bar: ... bar.update(note="item")`` — ``update(n)`` advances
    by n items; ``note`` names the item just finished. ``enabled=False`` prints nothing."""

    def __init__(
        self,
        total: int,
        label: str,
        stream: TextIO | None = None,
        enabled: bool = True,
        lines: bool = False,
    ):
        self.total = max(1, int(total))
        self.label = label
        self.stream = sys.stderr if stream is None else stream
        self.enabled = enabled
        self.lines = lines
        self.done = 0
        self._t0 = time.perf_counter()
        self._bar = None
        if not enabled:
            return
        tty = bool(getattr(self.stream, "isatty", lambda: False)())
        if tty:
            try:
                from tqdm import tqdm
            except ImportError:
                tqdm = None
            if tqdm is not None:
                self._bar = tqdm(total=self.total, desc=label, file=self.stream, dynamic_ncols=True)
                return
        self.stream.write(f"{label}: started ({self.total} steps)\n")
        self.stream.flush()

    def update(self, n: int = 1, note: str = "") -> None:
        self.done = min(self.total, self.done + n)
        if not self.enabled:
            return
        if self._bar is not None:
            if note:
                self._bar.set_postfix_str(note, refresh=False)
            self._bar.update(n)
        elif self.lines:
            self.stream.write(f"{self.label}: [{self.done}/{self.total}] {note}\n")
            self.stream.flush()

    def close(self) -> None:
        if not self.enabled:
            return
        elapsed = time.perf_counter() - self._t0
        if self._bar is not None:
            self._bar.close()
            return
        self.stream.write(f"{self.label}: {self.done}/{self.total} done in {elapsed:.1f} s\n")
        self.stream.flush()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
