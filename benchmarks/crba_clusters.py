"""The cluster mass matrix (C-CRBA) against the tree CRBA on ``spanning_tree(model)`` and, when a
baseline copy of the package is importable as ``loopdyn_base`` (e.g. an older commit's ``src/loopdyn``
renamed), against that baseline: medians measured interleaved in one process.

Usage: ``PYTHONPATH=/path/to/base/src:src python benchmarks/crba_clusters.py [robot ...]``.
"""

from __future__ import annotations

import sys

import numpy as np

import loopdyn
from loopdyn.bench.timing import interleaved
from loopdyn.robots import build

ROBOTS = ("pbt_chain", "mit_humanoid", "tello", "four_bar", "planar_leg_linkage", "gt_chain",
          "mini_cheetah", "jvrc1")  # fmt: skip


def _base():
    try:
        import loopdyn_base
        from loopdyn_base.robots import build as build_base
    except ImportError:
        return None, None
    return loopdyn_base, build_base


def contenders(name: str, base, build_base) -> dict:
    """``{label: fn}``: the cluster mass matrix (this package and the baseline) and the tree CRBA."""
    kw = {"n": 12} if "chain" in name else {}
    model = build(name, **kw)
    tree = loopdyn.spanning_tree(model)
    d, dt = model.create_data(), tree.create_data()
    q = loopdyn.random_configuration(model, 0)
    qs = loopdyn.to_spanning(model, q, np.zeros(model.nv))[0]
    fns = {"new": lambda: loopdyn.crba(model, d, q), "tree": lambda: loopdyn.crba(tree, dt, qs)}
    if base is not None:
        mb = build_base(name, **kw)
        db = mb.create_data()
        fns["base"] = lambda: base.crba(mb, db, q)
        H = fns["new"]()
        assert np.abs(fns["base"]() - H).max() <= 1e-12 * max(1.0, np.abs(H).max())
    for f in fns.values():  # compile and warm up
        f()
    return fns


def main(argv=None) -> int:
    names = (argv if argv is not None else sys.argv[1:]) or list(ROBOTS)
    base, build_base = _base()
    print(f"{'robot':20s} {'new µs':>8s} {'base µs':>8s} {'tree µs':>8s} {'new/base':>8s} {'new/tree':>8s}"
          f" {'base/tree':>9s}")  # fmt: skip
    for name in names:
        t = interleaved(contenders(name, base, build_base), repeats=15, target=2e-3)
        tb = t.get("base", float("nan"))
        print(f"{name:20s} {t['new'] * 1e6:8.2f} {tb * 1e6:8.2f} {t['tree'] * 1e6:8.2f} {t['new'] / tb:8.2f} "
              f"{t['new'] / t['tree']:8.2f} {tb / t['tree']:9.2f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
