"""The Coriolis matrix, Ṁ and the Christoffel symbols (issue #31 item 4): cold compile time and speed.

1. Cold compile: the first call of each public function in a fresh child process with empty Numba
   and loopdyn caches (``NUMBA_CACHE_DIR``, ``LOOPDYN_CACHE_DIR`` set to new folders), CPU seconds
   (``time.process_time()``) around that first call only — its kernel and every helper it compiles.
   The tree kernel (``coriolis_kernel``: C, Ṁ and Γ behind one signature) on solo12, the cluster
   kernel (``c_coriolis_kernel``) on Mini Cheetah and on the five-bar (the same kernel; the implicit
   loop's constraint program is compiled as well).
2. Speed on trees: µs per call, medians of interleaved blocks in one process
   (:func:`loopdyn.bench.timing.interleaved`), ``loopdyn.coriolis_matrix`` against
   ``pinocchio.computeCoriolisMatrix`` on solo12 and talos_reduced (target ≤ 1.0×), with the largest
   relative difference of the two results; ``mass_matrix_derivative`` and ``christoffel`` beside.
3. Models with loops: ``coriolis_matrix`` against the same function on ``spanning_tree(model)`` at the
   spanning state (same bodies; target ≤ 1.5×).

Note: loopdyn's calls validate their inputs and return a new array; Pinocchio's writes into its Data.

Usage: ``python benchmarks/coriolis.py [--quick] [--no-compile]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

import loopdyn as ld  # noqa: E402
from loopdyn.bench.timing import interleaved  # noqa: E402

TREES = ("solo12", "talos_reduced")
LOOPS = ("mini_cheetah", "mit_humanoid", "tello", "jvrc1", "gt_chain", "pbt_chain", "five_bar", "four_bar")
ARGS = {"gt_chain": (12,), "pbt_chain": (12,)}

FIRST_CALL = r"""
import sys, time
import numpy as np
import loopdyn as ld
if sys.argv[2] == "solo12":
    path, floating = ld.robots.example_robot_urdf("solo12")
    m = ld.load_urdf(path, floating_base=floating)
else:
    m = getattr(ld.robots, sys.argv[2])()
d = m.create_data()
rng = np.random.default_rng(0)
q = ld.random_configuration(m, rng)
v = rng.normal(size=m.nv)
f = getattr(ld, sys.argv[1])
t = time.process_time()
f(m, d, q) if sys.argv[1] == "christoffel" else f(m, d, q, v)
print(time.process_time() - t)
"""


def cold_compile(name: str, robot: str) -> float:
    """CPU seconds of the first call of ``loopdyn.<name>`` on ``robot`` in a fresh process with empty
    caches."""
    with tempfile.TemporaryDirectory() as numba_dir, tempfile.TemporaryDirectory() as loopdyn_dir:
        env = dict(os.environ, NUMBA_CACHE_DIR=numba_dir, LOOPDYN_CACHE_DIR=loopdyn_dir)
        cmd = [sys.executable, "-c", FIRST_CALL, name, robot]
        out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def rel(a, b) -> float:
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def tree_row(pin, name: str, repeats: int, target: float) -> tuple:
    path, floating = ld.robots.example_robot_urdf(name)
    lm = ld.load_urdf(path, floating_base=floating)
    d = lm.create_data()
    pm = pin.buildModelFromUrdf(path, *([pin.JointModelFreeFlyer()] if floating else []))
    pd = pm.createData()
    rng = np.random.default_rng(0)
    q = ld.random_configuration(lm, rng)
    v = rng.standard_normal(lm.nv)
    err = rel(ld.coriolis_matrix(lm, d, q, v), pin.computeCoriolisMatrix(pm, pd, q, v))
    ld.mass_matrix_derivative(lm, d, q, v)
    ld.christoffel(lm, d, q)
    t = interleaved(
        {
            "loopdyn": lambda: ld.coriolis_matrix(lm, d, q, v),
            "pinocchio": lambda: pin.computeCoriolisMatrix(pm, pd, q, v),
            "mdot": lambda: ld.mass_matrix_derivative(lm, d, q, v),
            "gamma": lambda: ld.christoffel(lm, d, q),
        },
        repeats=repeats,
        target=target,
    )
    return (name, lm.nv, *(t[k] * 1e6 for k in ("loopdyn", "pinocchio", "mdot", "gamma")), err)


def loop_row(robot: str, repeats: int, target: float) -> tuple:
    m = getattr(ld.robots, robot)(*ARGS.get(robot, ()))
    d = m.create_data()
    t = ld.spanning_tree(m)
    td = t.create_data()
    rng = np.random.default_rng(0)
    q = ld.random_configuration(m, rng)
    v = rng.standard_normal(m.nv)
    qs, vs = ld.to_spanning(m, q, v)
    ld.coriolis_matrix(m, d, q, v)
    ld.coriolis_matrix(t, td, qs, vs)
    tm = interleaved(
        {
            "loops": lambda: ld.coriolis_matrix(m, d, q, v),
            "tree": lambda: ld.coriolis_matrix(t, td, qs, vs),
            "mdot": lambda: ld.mass_matrix_derivative(m, d, q, v),
        },
        repeats=repeats,
        target=target,
    )
    return (robot, m.nv, t.nv, tm["loops"] * 1e6, tm["tree"] * 1e6, tm["mdot"] * 1e6)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer, shorter timing blocks")
    parser.add_argument("--no-compile", action="store_true", help="skip the cold-compile measurements")
    args = parser.parse_args()
    if not args.no_compile:
        print("cold first call (empty caches), CPU seconds:")
        for name, robot, kind in (
            ("coriolis_matrix", "solo12", "tree kernel"),
            ("christoffel", "solo12", "tree kernel, Γ"),
            ("coriolis_matrix", "mini_cheetah", "cluster kernel"),
            ("coriolis_matrix", "five_bar", "cluster kernel + the loop's program"),
        ):
            print(f"  {name:16s} {robot:13s} {cold_compile(name, robot):6.1f} s  ({kind})")
    import pinocchio as pin

    repeats, target = (7, 1e-3) if args.quick else (21, 2e-3)
    print("\ntree           nv  coriolis_matrix µs  pinocchio µs  ratio  Ṁ µs  christoffel µs  max rel. diff")
    for robot in TREES:
        name, nv, ours, theirs, mdot, gamma, err = tree_row(pin, robot, repeats, target)
        cols = f"{ours:18.2f}  {theirs:12.2f}  {ours / theirs:5.2f} {mdot:6.2f}  {gamma:14.1f}"
        print(f"{name:14s} {nv:3d} {cols}  {err:.1e}")
    print("\nmodel with loops  nv  nv_s  coriolis_matrix µs  spanning tree µs  ratio  Ḣ µs")
    for name in LOOPS:
        robot, nv, nvs, ours, tree, mdot = loop_row(name, repeats, target)
        print(f"{robot:17s} {nv:3d} {nvs:4d} {ours:18.2f}  {tree:16.2f}  {ours / tree:5.2f} {mdot:6.2f}")


if __name__ == "__main__":
    main()
