"""Jain's spatial-operator functions against the obvious alternatives (issue 12).

Per-call medians, measured interleaved (:func:`loopdyn.bench.timing.interleaved`):

1. ``body_compliances`` (all n bodies' 6×6 compliances in one O(n) sweep, Eq. 22) against n
   separate single-body Delassus calls ``loopdyn.delassus(model, data, q, [Constraint(body, "6d")])``;
2. the innovations factorisation: ``MassMatrixFactor.solve`` (O(n) per right-hand side, factor
   reused) and ``mass_matrix_factor`` + ``solve`` against ``loopdyn.aba`` at zero velocity;
3. ABA on the partitioned model (``loopdyn.partition``: spherical and free-flyer joints as chains of
   1-DoF sub-hinges with massless bodies) against ABA on the original model (the paper claims that
   smaller steps can pay off; the ratio is reported as measured).

Models: example-robot-data robots (floating bases: a free flyer each; TALOS has no spherical joints)
and serial chains of n spherical joints with random links.

Models with loops (mini_cheetah, pbt_chain(24), and pbt_chain(96) where the cluster tree is deep;
spec §2.7), second table:

4. ``body_compliances`` (Eq. 22 over the cluster tree) against n separate cluster Delassus calls,
   one 6-D constraint on each spanning-tree body;
5. the factor's ``solve`` (O(n) sweeps over the clusters) against the former dense block elimination
   (``block_elimination_factor``: O(n·depth)) and C-ABA at zero velocity, factor reused; and
   factorisation + solve, new against old.

Usage: ``python benchmarks/spatial_operators.py [--quick]``.
"""

from __future__ import annotations

import argparse
import os
import platform

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

import loopdyn  # noqa: E402
from loopdyn.bench.timing import interleaved  # noqa: E402
from loopdyn.model import Spherical  # noqa: E402
from loopdyn.robots.examples import example_robot_urdf, example_robots  # noqa: E402
from loopdyn.spatial import Inertia  # noqa: E402
from loopdyn.spatial_operators import block_elimination_factor  # noqa: E402


def spherical_chain(n: int, seed: int = 0) -> loopdyn.Model:
    """A serial chain of n spherical joints, random link offsets and inertias."""
    rng = np.random.default_rng(seed)
    m = loopdyn.Model(f"spherical-chain-{n}")
    parent = 0
    for i in range(n):
        A = rng.normal(size=(3, 3))
        I = A @ A.T * 0.01 + np.eye(3) * 0.01
        off = np.array([0.0, 0.0, 0.3]) + rng.uniform(-0.05, 0.05, 3)
        parent = m.add_body(f"link{i}", parent, Spherical(), (np.eye(3), off if i else np.zeros(3)),
                            Inertia(rng.uniform(0.5, 2.0), rng.uniform(-0.1, 0.1, 3) + [0, 0, 0.15], I))
    return m


def models(quick: bool):
    out = []
    for name in example_robots():
        path, floating = example_robot_urdf(name)
        if quick and name not in ("solo12", "talos_reduced"):
            continue
        model = loopdyn.load_urdf(path, floating_base=floating, mimic="independent", inertia="accept")
        out.append((name, model))
    for n in (4, 12) if quick else (4, 12, 30):
        out.append((f"sph-chain-{n}", spherical_chain(n)))
    return out


def measure(name: str, model: loopdyn.Model, repeats: int, ratios: dict) -> str:
    """One table row; appends this model's ratios to ``ratios``."""
    data = model.create_data()
    rng = np.random.default_rng(0)
    q = loopdyn.random_configuration(model, rng)
    v = rng.normal(size=model.nv)
    tau = rng.normal(size=model.nv)
    z = np.zeros(model.nv)
    cons = [[loopdyn.Constraint(b.name, "6d")] for b in model.bodies]
    F = loopdyn.mass_matrix_factor(model, data, q)

    def all_delassus():
        for c in cons:
            loopdyn.delassus(model, data, q, c)

    t = interleaved({
        "comp": lambda: loopdyn.body_compliances(model, data, q),
        "del": all_delassus,
        "solve": lambda: F.solve(tau),
        "fs": lambda: loopdyn.mass_matrix_factor(model, data, q).solve(tau),
        "aba0": lambda: loopdyn.aba(model, data, q, z, tau),
    }, repeats=repeats)
    row = (f"{name:16s} {model.nbodies:3d} {model.nv:3d} | {t['comp'] * 1e6:8.1f}µ "
           f"{t['del'] * 1e6:10.1f}µ {t['del'] / t['comp']:6.1f} | {t['solve'] * 1e6:7.1f}µ "
           f"{t['fs'] * 1e6:9.1f}µ {t['aba0'] * 1e6:8.1f}µ {t['solve'] / t['aba0']:6.2f} "
           f"{t['fs'] / t['aba0']:6.2f} | ")
    ratios["delassus/compliances"].append(t["del"] / t["comp"])
    ratios["solve/aba"].append(t["solve"] / t["aba0"])
    ratios["factor+solve/aba"].append(t["fs"] / t["aba0"])
    lp, mp = loopdyn.partition(model)
    if not mp.joints:
        return row + f"{'(no multi-DoF joint)':>28s}"
    dp = lp.create_data()
    qp, vp = mp.to_partitioned_q(q), mp.to_partitioned_v(q, v)
    taup = mp.to_partitioned_tau(q, tau)
    tp = interleaved({"p": lambda: loopdyn.aba(lp, dp, qp, vp, taup),
                      "o": lambda: loopdyn.aba(model, data, q, v, tau)}, repeats=repeats)
    ratios["partitioned/original"].append(tp["p"] / tp["o"])
    return row + f"{tp['p'] * 1e6:8.1f}µ {tp['o'] * 1e6:7.1f}µ {tp['p'] / tp['o']:9.2f}"


LOOP_RATIOS = ("loops: delassus/compliances", "loops: old solve/new solve", "loops: new solve/c-aba",
               "loops: old f+s/new f+s")


def measure_loops(name: str, model: loopdyn.Model, repeats: int, ratios: dict) -> str:
    """One row of the models-with-loops table; appends this model's ratios to ``ratios``."""
    data = model.create_data()
    rng = np.random.default_rng(0)
    q = loopdyn.random_configuration(model, rng)
    tau = rng.normal(size=model.nv)
    z = np.zeros(model.nv)
    cons = [[loopdyn.Constraint(b.name, "6d")] for b in loopdyn.spanning_tree(model).bodies]
    F = loopdyn.mass_matrix_factor(model, data, q)
    B = block_elimination_factor(model, data, q)

    def all_delassus():
        for c in cons:
            loopdyn.delassus(model, data, q, c)

    t = interleaved({
        "comp": lambda: loopdyn.body_compliances(model, data, q),
        "del": all_delassus,
        "solve": lambda: F.solve(tau),
        "old": lambda: B.solve(tau),
        "aba0": lambda: loopdyn.aba(model, data, q, z, tau),
        "fs": lambda: loopdyn.mass_matrix_factor(model, data, q).solve(tau),
        "fs_old": lambda: block_elimination_factor(model, data, q).solve(tau),
    }, repeats=repeats)
    ratios["loops: delassus/compliances"].append(t["del"] / t["comp"])
    ratios["loops: old solve/new solve"].append(t["old"] / t["solve"])
    ratios["loops: new solve/c-aba"].append(t["solve"] / t["aba0"])
    ratios["loops: old f+s/new f+s"].append(t["fs_old"] / t["fs"])
    return (f"{name:16s} {model.nbodies:3d} {model.nv:3d} | {t['comp'] * 1e6:8.1f}µ {t['del'] * 1e6:10.1f}µ "
            f"{t['del'] / t['comp']:6.1f} | {t['solve'] * 1e6:7.1f}µ {t['old'] * 1e6:7.1f}µ "
            f"{t['aba0'] * 1e6:8.1f}µ {t['old'] / t['solve']:7.2f} {t['solve'] / t['aba0']:6.2f} | "
            f"{t['fs'] * 1e6:8.1f}µ "
            f"{t['fs_old'] * 1e6:8.1f}µ {t['fs_old'] / t['fs']:6.2f}")


def run_loops(repeats: int, ratios: dict) -> None:
    print(f"\n{'with loops':16s} {'n':>3s} {'nv':>3s} | {'Υ all':>9s} {'n×Delassus':>11s} {'ratio':>6s} | "
          f"{'solve':>8s} {'old':>8s} {'c-aba':>9s} {'old/new':>7s} {'s/aba':>6s} | {'f+s':>9s} "
          f"{'old f+s':>9s} {'old/new':>6s}")
    for name, model in (("mini_cheetah", loopdyn.robots.mini_cheetah()),
                        ("pbt_chain24", loopdyn.robots.pbt_chain(24)),
                        ("pbt_chain96", loopdyn.robots.pbt_chain(96))):
        print(measure_loops(name, model, repeats, ratios), flush=True)


def run(quick: bool) -> None:
    repeats = 7 if quick else 21
    cpu = platform.processor() or platform.machine()
    print(f"# spatial-operator benchmark — {cpu}, numpy {np.__version__}")
    print(f"{'model':16s} {'n':>3s} {'nv':>3s} | {'Υ all':>9s} {'n×Delassus':>11s} {'ratio':>6s} | "
          f"{'solve':>8s} {'fact+solve':>10s} {'aba(v=0)':>9s} {'s/aba':>6s} {'fs/aba':>6s} | "
          f"{'aba part.':>9s} {'aba':>8s} {'part/orig':>9s}")
    ratios = {"delassus/compliances": [], "solve/aba": [], "factor+solve/aba": [], "partitioned/original": []}
    for name, model in models(quick):
        print(measure(name, model, repeats, ratios), flush=True)
    ratios.update({k: [] for k in LOOP_RATIOS})
    run_loops(repeats, ratios)
    print("\nmedian ratios over the models:")
    for k, r in ratios.items():
        print(f"  {k:30s} {float(np.median(r)):7.2f}   (min {min(r):.2f}, max {max(r):.2f}, {len(r)} models)")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer models and repeats")
    ap.add_argument("--loops-only", action="store_true", help="only the models with loops")
    args = ap.parse_args()
    if args.loops_only:
        r: dict = {k: [] for k in LOOP_RATIOS}
        run_loops(7 if args.quick else 21, r)
        for k, v in r.items():
            print(f"  {k:30s} {float(np.median(v)):7.2f}   (min {min(v):.2f}, max {max(v):.2f})")
    else:
        run(args.quick)
