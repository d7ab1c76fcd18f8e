"""Side-by-side timing: competing calls measured interleaved in one process, medians reported."""

from __future__ import annotations

import time
from collections.abc import Callable


def calibrate(fn: Callable[[], object], target: float = 2e-3) -> int:
    """How many calls of ``fn`` take about ``target`` seconds (at least 1), after one call that is not
    timed: a first call may load or compile what the function needs (a Data's native Taylor or rate
    functions, a lazy pass), and timed, it made the blocks of the interleaved timing one call long —
    Tello's C measured 1.55–1.71× its spanning tree's in the full bench, 1.35–1.48× when warm."""
    fn()
    n = 1
    while True:
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        dt = time.perf_counter() - t0
        if dt >= target / 4 or n >= 1 << 20:
            return max(1, int(n * target / max(dt, 1e-9)))
        n *= 4


def interleaved(
    fns: dict[str, Callable[[], object]], repeats: int = 21, target: float = 2e-3
) -> dict[str, float]:
    """Median seconds per call of each function, measured in alternating blocks of ``target`` seconds
    so that all contenders see the same machine state (frequency, load, cache)."""
    numbers = {k: calibrate(f, target) for k, f in fns.items()}
    samples: dict[str, list[float]] = {k: [] for k in fns}
    for r in range(repeats):
        order = list(fns) if r % 2 == 0 else list(reversed(fns))
        for k in order:
            f, n = fns[k], numbers[k]
            t0 = time.perf_counter()
            for _ in range(n):
                f()
            samples[k].append((time.perf_counter() - t0) / n)
    return {k: sorted(v)[len(v) // 2] for k, v in samples.items()}
