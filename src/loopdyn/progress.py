"""A tiny progress bar on stderr for the long parts of ``loopdyn bench`` (no dependency).

On a terminal the bar is redrawn in place (at most ten times a second); otherwise (stderr redirected
to a file or a pipe) one line is written when the task finishes, so logs stay readable.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """``with Progress(total, "label") as bar: ... bar.update()`` — ``update(n)`` advances by n steps,
    ``note`` (optional) names the current step."""

    def __init__(self, total: int, label: str, stream: TextIO | None = None, width: int = 28):
        self.total = max(1, int(total))
        self.label = label
        self.stream = sys.stderr if stream is None else stream
        self.width = width
        self.done = 0
        self.note = ""
        self._t0 = time.perf_counter()
        self._last = 0.0
        self._tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._draw(force=True)

    def update(self, n: int = 1, note: str = "") -> None:
        self.done = min(self.total, self.done + n)
        self.note = note
        self._draw()

    def close(self) -> None:
        elapsed = time.perf_counter() - self._t0
        if self._tty:
            self._draw(force=True)
            self.stream.write("\n")
        else:
            self.stream.write(f"{self.label}: {self.done}/{self.total} done in {elapsed:.1f} s\n")
        self.stream.flush()

    def __enter__(self) -> Progress:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _draw(self, force: bool = False) -> None:
        if not self._tty:
            return
        now = time.perf_counter()
        if not force and now - self._last < 0.1 and self.done < self.total:
            return
        self._last = now
        filled = self.width * self.done // self.total
        bar = "#" * filled + "-" * (self.width - filled)
        note = f" {self.note}" if self.note else ""
        line = f"{self.label} [{bar}] {self.done}/{self.total} {now - self._t0:5.1f} s{note}"
        self.stream.write("\r" + line[:100].ljust(100))  # padded: a shorter note erases a longer one
        self.stream.flush()
