"""The joint-torque regressor (issue #31): cold compile time, and speed against Pinocchio and against the
spanning tree.

1. Cold compile: the first call of ``loopdyn.regressor`` (tree kernel on solo12, cluster kernel on
   Mini Cheetah) and of ``loopdyn.batch.regressor`` in a fresh child process with empty Numba and
   loopdyn caches (``NUMBA_CACHE_DIR``, ``LOOPDYN_CACHE_DIR``: new folders), CPU seconds
   (``time.process_time()``) around that first call only — the kernel and every helper it compiles.
2. Trees: µs per call, medians (and the fastest block) of interleaved blocks in one process
   (as :func:`loopdyn.bench.timing.interleaved`), ``loopdyn.regressor`` against
   ``pinocchio.computeJointTorqueRegressor`` on solo12 and talos_reduced (target ≤ 1.0×); each row
   checks the two results agree (largest relative difference).
3. Models with loops: ``loopdyn.regressor`` (Y = Gᵀ Y_span) against the same function on
   ``spanning_tree(model)`` (same bodies, spanning coordinates; target ≤ 1.5×) on the GT and PBT
   chains, Mini Cheetah, the MIT Humanoid, Tello and JVRC-1.

Note: loopdyn's call allocates and returns a new nv × 10 nb array and validates its inputs; Pinocchio
writes into its Data (and returns a reference to it).

Usage: ``python benchmarks/identification.py [--quick] [--no-compile]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import time  # noqa: E402

import numpy as np  # noqa: E402

import loopdyn as ld  # noqa: E402
from loopdyn.bench.timing import calibrate  # noqa: E402

ROBOTS = ("solo12", "talos_reduced")
LOOPS = ("gt_chain", "pbt_chain", "mini_cheetah", "mit_humanoid", "tello", "jvrc1")

FIRST_CALL = r"""
import sys, time
import numpy as np
import loopdyn as ld
robot = sys.argv[2]
if robot == "solo12":
    path, floating = ld.robots.example_robot_urdf("solo12")
    m = ld.load_urdf(path, floating_base=floating)
else:
    m = getattr(ld.robots, robot)()
d = m.create_data()
rng = np.random.default_rng(0)
q = ld.random_configuration(m, rng)
v, a = rng.normal(size=m.nv), rng.normal(size=m.nv)
t = time.process_time()
if sys.argv[1] == "batch":
    ld.batch.regressor(m, q[None], v[None], a[None])
else:
    ld.regressor(m, d, q, v, a)
print(time.process_time() - t)
"""


def interleaved(fns: dict, repeats: int, target: float) -> dict[str, tuple[float, float]]:
    """(median, fastest) seconds per call of each function over alternating blocks of ``target``
    seconds (as :func:`loopdyn.bench.timing.interleaved`, which reports the medians only): on a machine
    shared with other work the fastest block is the less disturbed measure, the median the usual one."""
    numbers = {k: calibrate(f, target) for k, f in fns.items()}
    samples: dict[str, list[float]] = {k: [] for k in fns}
    for r in range(repeats):
        for k in list(fns) if r % 2 == 0 else list(reversed(fns)):
            f, n = fns[k], numbers[k]
            t0 = time.perf_counter()
            for _ in range(n):
                f()
            samples[k].append((time.perf_counter() - t0) / n)
    return {k: (sorted(v)[len(v) // 2], min(v)) for k, v in samples.items()}


def cold_compile(name: str, robot: str) -> float:
    """CPU seconds of the first call of ``name`` ("regressor" or "batch") on ``robot`` in a fresh
    process with empty caches."""
    with tempfile.TemporaryDirectory() as numba_dir, tempfile.TemporaryDirectory() as loopdyn_dir:
        env = dict(os.environ, NUMBA_CACHE_DIR=numba_dir, LOOPDYN_CACHE_DIR=loopdyn_dir)
        out = subprocess.run(
            [sys.executable, "-c", FIRST_CALL, name, robot], env=env, capture_output=True, text=True,
            check=True,
        )
    return float(out.stdout.strip().splitlines()[-1])


def build(robot: str) -> ld.Model:
    if robot == "gt_chain":
        return ld.robots.gt_chain(8, seed=0)
    if robot == "pbt_chain":
        return ld.robots.pbt_chain(8, seed=0)
    return getattr(ld.robots, robot)()


def trees(pin, repeats: int, target: float) -> list[tuple]:
    rows = []
    for name in ROBOTS:
        path, floating = ld.robots.example_robot_urdf(name)
        lm = ld.load_urdf(path, floating_base=floating, inertia="accept")
        d = lm.create_data()
        pm = pin.buildModelFromUrdf(path, *([pin.JointModelFreeFlyer()] if floating else []))
        pd = pm.createData()
        rng = np.random.default_rng(0)
        q = ld.random_configuration(lm, rng)
        v, a = rng.standard_normal(lm.nv), rng.standard_normal(lm.nv)
        Y = ld.regressor(lm, d, q, v, a)
        Yp = np.array(pin.computeJointTorqueRegressor(pm, pd, q, v, a))
        err = float(np.abs(Y - Yp).max() / np.abs(Yp).max())
        t = interleaved(
            {
                "loopdyn": lambda s=(lm, d, q, v, a): ld.regressor(*s),
                "pinocchio": lambda s=(pm, pd, q, v, a): pin.computeJointTorqueRegressor(*s),
            },
            repeats=repeats,
            target=target,
        )
        rows.append((name, Y.shape, t["loopdyn"], t["pinocchio"], err))
    return rows


def loops(repeats: int, target: float) -> list[tuple]:
    rows = []
    for robot in LOOPS:
        m = build(robot)
        d = m.create_data()
        t = ld.spanning_tree(m)
        td = t.create_data()
        rng = np.random.default_rng(0)
        q = ld.random_configuration(m, rng)
        v, a = rng.standard_normal(m.nv), rng.standard_normal(m.nv)
        qs, vs, as_ = ld.to_spanning(m, q, v, a)
        Y = ld.regressor(m, d, q, v, a)
        ld.regressor(t, td, qs, vs, as_)
        tm = interleaved(
            {
                "loops": lambda s=(m, d, q, v, a): ld.regressor(*s),
                "tree": lambda s=(t, td, qs, vs, as_): ld.regressor(*s),
            },
            repeats=repeats,
            target=target,
        )
        rows.append((robot, Y.shape, tm["loops"], tm["tree"]))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer, shorter timing blocks")
    parser.add_argument("--no-compile", action="store_true", help="skip the cold-compile measurements")
    args = parser.parse_args()
    if not args.no_compile:
        print("cold first call (empty caches), CPU seconds:")
        for name, robot, kind in (("regressor", "solo12", "tree kernel"),
                                  ("regressor", "mini_cheetah", "cluster kernel"),
                                  ("batch", "solo12", "tree batch kernel"),
                                  ("batch", "mini_cheetah", "cluster batch kernel")):  # fmt: skip
            print(f"  {name:10s} {robot:13s} {cold_compile(name, robot):6.1f} s  ({kind})")
    import pinocchio as pin

    repeats, target = (7, 1e-3) if args.quick else (21, 2e-3)
    print("\nµs per call, median (fastest block)")
    print("robot          Y shape      loopdyn µs     pinocchio µs    ratio        max rel. diff")
    for robot, shape, ours, theirs, err in trees(pin, repeats, target):
        print(f"{robot:14s} {str(shape):11s} {fmt(ours)}  {fmt(theirs)}  {ratio(ours, theirs)}  {err:.1e}")
    print("\nmodel with loops  Y shape      loops µs       spanning tree µs  ratio")
    for robot, shape, ours, tree in loops(repeats, target):
        print(f"{robot:17s} {str(shape):11s} {fmt(ours)}  {fmt(tree)}     {ratio(ours, tree)}")


def fmt(t: tuple[float, float]) -> str:
    return f"{t[0] * 1e6:6.2f} ({t[1] * 1e6:6.2f})"


def ratio(a: tuple[float, float], b: tuple[float, float]) -> str:
    return f"{a[0] / b[0]:4.2f} ({a[1] / b[1]:4.2f})"


if __name__ == "__main__":
    main()
