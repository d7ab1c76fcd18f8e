"""The MJCF and SDF loaders under the mutation fuzzer of ``tests/loader_fuzz.py``, longer than the
test does: every MJCF file MuJoCo, dm_control and gymnasium ship (those that load unmutated) and
example-robot-data's SDF files (Cassie's), besides loopdyn's own test files.

Each mutant must load (then rnea/aba are finite, consistent and equal MuJoCo's on the same tree) or
raise a LoopdynError naming the element. The loader gets ``--hard-limit`` seconds (an alarm: a real
hang is cut there and counted a failure); loads slower than ``--limit`` (10 s, the issue's bound)
are listed as slow, with what made them slow.

Usage: ``PYTHONPATH=src python benchmarks/fuzz_loaders.py [--mutants 1000] [--seed 29]
[--formats mjcf sdf] [--limit 10] [--hard-limit 120]``. Prints per format: the seeds, the counts
(loaded, compared with MuJoCo, clean errors by class, failures, slow) and the times.
"""

from __future__ import annotations

import argparse
import collections
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import loader_fuzz as F  # noqa: E402


def run(fmt: str, mutants: int, base_seed: int, limit: float, hard_limit: float, work: Path) -> dict:
    seeds = F.mjcf_seeds(full=True) if fmt == "mjcf" else F.sdf_seeds(full=True)
    t0 = time.perf_counter()
    usable, outcomes = F.usable_seeds(seeds, fmt, work, time_limit=max(hard_limit, 600.0))
    warm = time.perf_counter() - t0
    print(
        f"{fmt}: {len(usable)} of {len(seeds)} seed files load unmutated ({warm:.0f} s, compiling included)"
    )
    for seed, out in outcomes.items():
        if out.status != "loaded":
            first = out.message.splitlines()[0][:120] if out.message else ""
            print(f"  not a seed: {seed.name}: {out.detail}: {first}")
    counts: collections.Counter = collections.Counter()
    errors: collections.Counter = collections.Counter()
    failures, slow, times = [], [], []
    t0 = time.perf_counter()
    for i in range(mutants):
        mutant = F.make_mutant(usable[i % len(usable)], fmt, i, base_seed)
        out = F.run_mutant(mutant, fmt, work, time_limit=hard_limit, hard_limit=2 * hard_limit)
        times.append(out.load_seconds)
        counts[out.status] += 1
        counts["compared"] += out.compared
        counts["inertia warnings"] += out.inertia_warnings > 0
        if out.status == "error":
            errors[out.detail] += 1
        elif out.status == "loaded" and out.detail.startswith("dynamics refused"):
            counts["dynamics refused"] += 1
            errors[f"(loaded) {out.detail.split(': ')[1]}"] += 1
        if out.status == "failure":
            failures.append((mutant, out))
        if out.load_seconds > limit:
            slow.append((mutant, out))
        if (i + 1) % 100 == 0:
            print(f"  {i + 1} mutants, {time.perf_counter() - t0:.0f} s", flush=True)
    total = time.perf_counter() - t0
    print(
        f"{fmt}: {mutants} mutants in {total:.0f} s ({1e3 * total / mutants:.0f} ms each, checks included; "
        f"slowest load {max(times):.1f} s): loaded {counts['loaded']} (compared with MuJoCo "
        f"{counts['compared']}, the dynamics refused {counts['dynamics refused']}), clean errors "
        f"{counts['error']}, failures {counts['failure']}, loads slower than {limit:g} s {len(slow)}; "
        f"InertiaWarnings in {counts['inertia warnings']}"
    )
    for name, n in errors.most_common():
        print(f"  {name:40s} {n}")
    for mutant, out in failures:
        print(f"  FAILURE {mutant.seed.name} #{mutant.index} {mutant.operations}: {out.detail}: "
              f"{out.message[:200]!r} {out.notes}")  # fmt: skip
    for mutant, out in slow:
        what = f"{mutant.seed.name} #{mutant.index} {mutant.operations}"
        print(f"  SLOW {out.load_seconds:.1f} s {what} -> {out.status}")
    return {"counts": counts, "errors": errors, "failures": failures, "slow": slow, "seconds": total}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mutants", type=int, default=1000, help="mutants per format (default 1000)")
    parser.add_argument("--seed", type=int, default=29, help="base seed of the mutations (default 29)")
    parser.add_argument("--formats", nargs="+", default=["mjcf", "sdf"], choices=["mjcf", "sdf"])
    parser.add_argument("--limit", type=float, default=10.0, help="seconds above which a mutant is slow")
    parser.add_argument("--hard-limit", type=float, default=120.0, help="seconds after which a mutant is cut")
    args = parser.parse_args(argv)
    failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        cwd = os.getcwd()
        os.chdir(tmp)  # MuJoCo writes its warnings to MUJOCO_LOG.TXT in the working directory
        try:
            for fmt in args.formats:
                result = run(fmt, args.mutants, args.seed, args.limit, args.hard_limit, Path(tmp) / fmt)
                failed += len(result["failures"])
        finally:
            os.chdir(cwd)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
