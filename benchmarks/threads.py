"""Threads (issue 29 §6): 8 threads, each with its own Data of one shared model, 10 000 mixed calls
each, against the serial run.

For a tree (the aerial manipulator: a free flyer and two 3-R arms) and a model with loops (Mini
Cheetah: 12 geared transmissions), each thread makes ``--calls`` calls cycling through rnea (with and
without external forces), aba, crba, the default and EFPA Delassus matrices, contact dynamics and the
higher-order rnea/aba (and minverse on the tree), each thread on its own rotation of 12 random states.
Every result is compared bitwise with the same call's result in a serial run. Reported: the wall time
of the threaded run, the time of the same calls run serially in one thread, their ratio (the kernels
release the GIL; the Python around them does not), and then the same with all threads sharing ONE
Data: how many calls raised :class:`~loopdyn.errors.DataInUseError` (the others must still be right).

Usage: ``python benchmarks/threads.py [--calls N] [--threads T]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import test_threads as tt  # noqa: E402  (the test's models, calls, states and schedule)


def run(model, label: str, n: int, nthreads: int) -> dict:
    calls = tt._calls(model)
    states = tt._states(model)
    d = model.create_data()
    reference = {
        (c, s): tt._flat(f(model, d, states[s]))
        for c, f in enumerate(calls.values())
        for s in range(tt.STATES)
    }
    names = list(calls)
    t0 = time.perf_counter()  # serial: the same n × nthreads calls, one thread, one Data
    for t in range(nthreads):
        for k in range(n):
            c, s = tt._schedule(t, k, len(names))
            calls[names[c]](model, d, states[s])
    serial = time.perf_counter() - t0
    datas = [model.create_data() for _ in range(nthreads)]
    t0 = time.perf_counter()
    report = tt._run_threads(model, datas, calls, states, n, reference)
    threaded = time.perf_counter() - t0
    mismatches = sum(len(r[0]) for r in report)
    errors = sum(len(r[2]) for r in report) + sum(r[1] for r in report)
    t0 = time.perf_counter()
    shared = tt._run_threads(model, [model.create_data()] * nthreads, calls, states, n, reference)
    shared_time = time.perf_counter() - t0
    refused = sum(r[1] for r in shared)
    shared_bad = sum(len(r[0]) + len(r[2]) for r in shared)
    total = n * nthreads
    print(
        f"| {label} | {nthreads} × {n} | {threaded:.2f} | {serial:.2f} | {serial / threaded:.2f} | "
        f"{mismatches} | {errors} | {refused} ({100.0 * refused / total:.1f} %) | {shared_bad} | "
        f"{shared_time:.2f} |"
    )
    return {"mismatches": mismatches, "errors": errors, "shared_bad": shared_bad}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--calls", type=int, default=10_000, help="calls per thread (default 10 000)")
    p.add_argument("--threads", type=int, default=8)
    args = p.parse_args()
    print(f"{os.cpu_count()} CPUs")
    print("| model | threads × calls | threaded s | serial s | speed-up | mismatches | errors "
          "| one shared Data: DataInUseError | wrong | s |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    bad = 0
    for label, build in (("aerial manipulator (tree)", tt._tree), ("Mini Cheetah (loops)", tt._loops)):
        r = run(build(), label, args.calls, args.threads)
        bad += r["mismatches"] + r["errors"] + r["shared_bad"]
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
