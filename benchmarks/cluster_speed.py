"""Loops at tree speed: each cluster algorithm against loopdyn's own tree algorithm over the same
bodies (``spanning_tree(model)``, constraints dropped) at the matching state.

Per robot and algorithm it prints the cluster time, the spanning-tree time and their ratio, as
medians measured interleaved in one process (:func:`loopdyn.bench.timing.interleaved`):

* ``rnea`` — C-RNEA against RNEA;
* ``aba`` — C-ABA against ABA;
* ``crba`` — the cluster mass matrix ``GᵀH_spanG`` (C-CRBA) against CRBA;
* ``pv-osimr`` / ``efpa`` — the Delassus matrix of one 6-D constraint on the deepest body (the end
  effector): cluster PV-OSIMr / C-EFPA against PV-OSIMr / EFPA on the tree.

Targets (issue #11): ratio ≤ 1.3 on the explicit-cluster robots, ≤ 1.5 on the implicit loops
(``four_bar``, ``planar_leg_linkage``).

Usage: ``python benchmarks/cluster_speed.py [--quick] [--robots a,b,...]``.
"""

from __future__ import annotations

import argparse

import numpy as np

import loopdyn
from loopdyn.bench.timing import interleaved
from loopdyn.robots import build

ROBOTS = {
    "gt_chain(12)": ("gt_chain", {"n": 12}, 1.3),
    "pbt_chain(12)": ("pbt_chain", {"n": 12}, 1.3),
    "mini_cheetah": ("mini_cheetah", {}, 1.3),
    "mit_humanoid": ("mit_humanoid", {}, 1.3),
    "tello": ("tello", {}, 1.3),
    "jvrc1": ("jvrc1", {}, 1.3),
    "four_bar": ("four_bar", {}, 1.5),
    "planar_leg_linkage": ("planar_leg_linkage", {}, 1.5),
}

ALGORITHMS = ("rnea", "aba", "crba", "pv-osimr", "efpa")


def _deepest_body(model) -> str:
    depth = {}
    best, name = -1, None
    for i, b in enumerate(model.bodies, start=1):
        depth[i] = 1 + depth.get(b.parent, 0)
        if depth[i] > best:
            best, name = depth[i], b.name
    return name


def contenders(model, seed: int = 0):
    """``{algorithm: (cluster_fn, tree_fn)}`` at one random state of ``model``."""
    rng = np.random.default_rng(seed)
    tree = loopdyn.spanning_tree(model)
    data, tdata = model.create_data(), tree.create_data()
    q = loopdyn.random_configuration(model, seed)
    v = rng.standard_normal(model.nv)
    a = rng.standard_normal(model.nv)
    tau = loopdyn.rnea(model, data, q, v, a)
    qs, vs, as_ = loopdyn.to_spanning(model, q, v, a)
    taus = loopdyn.rnea(tree, tdata, qs, vs, as_)
    ee = [loopdyn.Constraint(_deepest_body(model), "6d")]
    pairs = {
        "rnea": (lambda: loopdyn.rnea(model, data, q, v, a), lambda: loopdyn.rnea(tree, tdata, qs, vs, as_)),
        "aba": (lambda: loopdyn.aba(model, data, q, v, tau), lambda: loopdyn.aba(tree, tdata, qs, vs, taus)),
        "crba": (lambda: loopdyn.crba(model, data, q), lambda: loopdyn.crba(tree, tdata, qs)),
        "pv-osimr": (
            lambda: loopdyn.delassus(model, data, q, ee, method="c-pv-osimr"),
            lambda: loopdyn.delassus(tree, tdata, qs, ee, method="pv-osimr"),
        ),
        "efpa": (
            lambda: loopdyn.delassus(model, data, q, ee, method="c-efpa"),
            lambda: loopdyn.delassus(tree, tdata, qs, ee, method="efpa"),
        ),
    }
    for fc, ft in pairs.values():  # compile and warm up
        fc()
        ft()
    return pairs


def measure(names, repeats: int, target: float):
    rows = []
    for label in names:
        fn, kw, limit = ROBOTS[label]
        model = build(fn, **kw)
        for alg, (fc, ft) in contenders(model).items():
            t = interleaved({"cluster": fc, "tree": ft}, repeats=repeats, target=target)
            rows.append((label, alg, t["cluster"] * 1e6, t["tree"] * 1e6, t["cluster"] / t["tree"], limit))
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="fewer repeats")
    p.add_argument(
        "--robots", default=",".join(ROBOTS), help="comma-separated subset of " + ", ".join(ROBOTS)
    )
    args = p.parse_args(argv)
    names = [s.strip() for s in args.robots.split(",") if s.strip()]
    repeats, target = (7, 1e-3) if args.quick else (21, 2e-3)
    print(f"{'robot':20s} {'algorithm':9s} {'cluster µs':>11s} {'tree µs':>9s} {'ratio':>6s} target")
    for label, alg, tc, tt, r, limit in measure(names, repeats, target):
        mark = "ok" if r <= limit else "MISSED"
        print(f"{label:20s} {alg:9s} {tc:11.2f} {tt:9.2f} {r:6.2f} ≤{limit} {mark}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
