"""What compiling costs a user (issue #28): cold first calls, `loopdyn compile`, and each kernel.

Every measurement starts from an empty Numba cache and an empty loopdyn program cache (fresh folders
given to child processes through ``NUMBA_CACHE_DIR`` and ``LOOPDYN_CACHE_DIR``); nothing already
compiled on this machine is used.

1. ``import loopdyn`` in a fresh process.
2. The six-call script a new user runs: C-ABA, C-RNEA and the mass matrix on ``mini_cheetah``, ABA,
   RNEA and CRBA on its spanning tree, contact dynamics with four feet — the seconds of each first
   call, the whole script, and its peak resident memory; then the same script again on the filled
   cache (what every later run pays).
3. ``loopdyn.compile()`` (every kernel, worker processes on all cores): wall time, the slowest
   kernels, each worker's peak memory, and the type variants of each compiled helper found in the
   cache (a helper compiled for several argument types costs a compilation per variant).
4. With ``--isolated``: each kernel alone in a process with an empty cache (its full cold cost,
   helpers included; long: tens of minutes).

Usage: ``python benchmarks/compile_time.py [--isolated] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

SIX_CALLS = r"""
import json, resource, sys, time
t0 = time.perf_counter()
import numpy as np
import loopdyn as ld
times = {"import": time.perf_counter() - t0}
robot = ld.robots.mini_cheetah(); data = robot.create_data()
tree = ld.spanning_tree(robot); tdata = tree.create_data()
q = ld.random_configuration(robot, rng=0)
rng = np.random.default_rng(0)
v, a = rng.normal(size=robot.nv), rng.normal(size=robot.nv)
qt, vt, at = ld.to_spanning(robot, q, v, a)
feet = [ld.Constraint(f"{leg}_knee_link", "3d") for leg in ("FL", "FR", "HL", "HR")]
calls = {
    "C-ABA (mini_cheetah)": lambda: ld.aba(robot, data, q, v, a),
    "C-RNEA (mini_cheetah)": lambda: ld.rnea(robot, data, q, v, a),
    "cluster mass matrix (mini_cheetah)": lambda: ld.crba(robot, data, q),
    "ABA (spanning tree)": lambda: ld.aba(tree, tdata, qt, vt, at),
    "RNEA (spanning tree)": lambda: ld.rnea(tree, tdata, qt, vt, at),
    "CRBA (spanning tree)": lambda: ld.crba(tree, tdata, qt),
    "contact dynamics, four feet (mini_cheetah)": lambda: ld.constrained_forward_dynamics(
        robot, data, q, v, a, feet),
}
for name, f in calls.items():
    t = time.perf_counter(); f(); times[name] = time.perf_counter() - t
times["script"] = time.perf_counter() - t0
times["peak_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(times))
"""

ONE_KERNEL = r"""
import json, resource, sys, time
import importlib
mod, name = sys.argv[1], sys.argv[2]
module = importlib.import_module("loopdyn." + mod)
from loopdyn.algorithms import common
t = time.perf_counter(); common.compiled(getattr(module, name)); dt = time.perf_counter() - t
print(json.dumps({"seconds": dt, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def _child(code: str, caches: Path, *args: str) -> dict:
    env = {**os.environ, "NUMBA_CACHE_DIR": str(caches / "numba"), "LOOPDYN_CACHE_DIR": str(caches / "ld")}
    t0 = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr[-2000:])
    res = json.loads(out.stdout.strip().splitlines()[-1])
    res["process_seconds"] = time.perf_counter() - t0
    return res


def _variants(cache: Path) -> Counter:
    """Overloads per compiled function found in a Numba cache folder (one index file a function)."""
    counts: Counter = Counter()
    for index in cache.rglob("*.nbi"):
        with open(index, "rb") as fh:
            pickle.load(fh)  # Numba's version
            try:
                _stamp, overloads = pickle.loads(fh.read())
            except Exception:  # an index from another Numba: not ours to read
                continue
        counts[index.name.split("-")[0]] = len(overloads)
    return counts


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--isolated", action="store_true", help="also each kernel alone from an empty cache")
    ap.add_argument("--json", metavar="FILE", help="write every number to FILE")
    args = ap.parse_args()
    results: dict = {"python": sys.version.split()[0], "cpu_count": os.cpu_count()}
    with tempfile.TemporaryDirectory(prefix="loopdyn-compile-") as tmp:
        tmp = Path(tmp)
        imp = _child("import time; t=time.perf_counter(); import loopdyn; import json; "
                     "print(json.dumps({'import': time.perf_counter()-t}))", tmp / "import")  # fmt: skip
        results["import_seconds"] = imp["import"]
        print(f"import loopdyn: {imp['import']:.2f} s\n")

        cold = _child(SIX_CALLS, tmp / "six")
        warm = _child(SIX_CALLS, tmp / "six")
        results["six_calls"] = {"cold": cold, "warm": warm}
        print("## The six-call script from an empty cache (first call of each, seconds)\n")
        print("| call | cold | cache filled |\n|---|---:|---:|")
        for k in cold:
            if k not in ("import", "script", "peak_mb", "process_seconds"):
                print(f"| {k} | {cold[k]:.1f} | {warm[k]:.3f} |")
        print(f"| **whole script** | **{cold['script']:.1f}** | {warm['script']:.2f} |")
        print(f"| peak resident memory (MB) | {cold['peak_mb']:.0f} | {warm['peak_mb']:.0f} |\n")

        env_cache = tmp / "all"
        os.environ["NUMBA_CACHE_DIR"] = str(env_cache / "numba")  # the workers inherit it
        os.environ["LOOPDYN_CACHE_DIR"] = str(env_cache / "ld")
        import loopdyn

        report = loopdyn.compile(progress=False)
        again = loopdyn.compile(progress=False)
        variants = _variants(env_cache / "numba")
        results["compile_all"] = {
            "seconds": report.seconds,
            "jobs": report.jobs,
            "second_run_seconds": again.seconds,
            "kernels": [k.__dict__ for k in report.kernels],
            "worker_peak_mb": max(k.peak_mb for k in report.kernels),
            "variants": dict(variants),
        }
        print(f"## `loopdyn.compile()`: {len(report.kernels)} kernels, {report.jobs} workers\n")
        print(f"wall time {report.seconds:.0f} s from an empty cache, {again.seconds:.1f} s when cached; "
              f"peak memory of a worker {results['compile_all']['worker_peak_mb']:.0f} MB\n")  # fmt: skip
        print("```\n" + report.table(15) + "\n```\n")
        multi = {k: n for k, n in variants.items() if n > 1}
        print(f"functions in the cache: {len(variants)}; with more than one type variant: "
              + (", ".join(f"{k} ({n})" for k, n in sorted(multi.items())) or "none") + "\n")

        if args.isolated:
            print("## Each kernel alone from an empty cache\n")
            print("| kernel | seconds | peak MB |\n|---|---:|---:|")
            rows = []
            for family, mod, name in loopdyn.compilation.kernels():
                res = _child(ONE_KERNEL, tmp / f"iso-{mod}-{name}", mod, name)
                rows.append({"family": family, "module": mod, "name": name, **res})
                print(f"| {mod}.{name} | {res['seconds']:.1f} | {res['peak_mb']:.0f} |", flush=True)
            results["isolated"] = rows
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
