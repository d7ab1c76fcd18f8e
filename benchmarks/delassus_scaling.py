"""Scaling of the Delassus-matrix algorithms on the families of spec ``delassus-pv-osimr-sathya2023``
§4.2 / §6.3: wall-clock medians of interleaved runs (as ``loopdyn.bench.timing.interleaved``) of
``delassus(..., method=…)`` for dense, ltl, efpa, pv-osim and pv-osimr, and the log-log growth
exponents fitted with ``np.polyfit`` (over all sizes, over the 3 largest, and over the minimum
instead of the median time of each size — the minimum is less disturbed by other load).

Families:

* ``k2_chain`` — a chain of k² revolute links with a 6D weld at links k, 2k, …, k² (paper Fig. 4(a)):
  n = d = k², m = 6k. Predicted exponents in k: PV-OSIMr 2, EFPA 3 (md), PV-OSIM 4 (m²d), dense 6.
* ``weld_chain`` — a chain of n links with a 6D weld on every link: PV-OSIMr and EFPA 2, PV-OSIM 3.
* ``long_tree_b{b}`` — the long tree of paper Fig. 3: a floating stem of s links with b branches of
  7 links at each end, a weld at every branch tip (m = 12 b fixed): every algorithm is linear in s;
  the marginal cost per stem link (µs, slope of a linear fit) of PV-OSIMr does not depend on b while
  PV-OSIM's and EFPA's grow with b.
* ``comb`` — fixed n (a 64-link stem with a 2-link tooth per stem link), welds on m_b evenly spread
  tooth tips: PV-OSIMr O(n + m²), its time over m_b² levels off.

Wall-clock, not operation counts: at small sizes the per-call overhead and the O(n) sweep flatten the
exponents, which approach the asymptotic ones only at the larger sizes.

Run ``python benchmarks/delassus_scaling.py [--quick] [--json FILE]``; ``run(quick)`` returns the
numbers as a dict.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

# single-threaded BLAS: per-call latency of the dense factorisations (threads only add jitter here)
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

import loopdyn  # noqa: E402
from loopdyn.bench.timing import calibrate  # noqa: E402

METHODS = ("dense", "ltl", "efpa", "pv-osim", "pv-osimr")
PREDICTED = {
    "k2_chain": {"dense": 6, "ltl": 6, "efpa": 3, "pv-osim": 4, "pv-osimr": 2},
    "weld_chain": {"dense": 3, "ltl": 3, "efpa": 2, "pv-osim": 3, "pv-osimr": 2},
    "long_tree": {m: 1 for m in METHODS},
    "comb": {"dense": 2, "ltl": 2, "efpa": 2, "pv-osim": 2, "pv-osimr": 2},
}


# ----------------------------------------------------------------------------------------------
# models
def _inertia(k: int) -> loopdyn.Inertia:
    """A deterministic, physically valid link inertia (varied with k)."""
    mass = 1.0 + 0.3 * np.sin(k)
    com = np.array([0.05, 0.02 * np.cos(k), 0.1])
    I_com = np.diag([0.01 + 0.002 * (k % 3), 0.012, 0.008 + 0.001 * (k % 5)])
    return loopdyn.Inertia(mass, com, I_com)


_AXES = ((0.0, 0.0, 1.0), (0.0, 1.0, 0.0), (1.0, 0.0, 0.0))


def _placement(k: int):
    c, s = np.cos(0.3 * k), np.sin(0.3 * k)
    R = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    return R, np.array([0.0, 0.02, 0.2])


def tree_model(parents, name: str, floating: bool = False) -> loopdyn.Model:
    """Revolute links ``l1 …`` with ``parents[i-1] = π(i)`` (link 1 a free flyer if ``floating``)."""
    m = loopdyn.Model(name)
    for k, p in enumerate(parents, start=1):
        joint = loopdyn.FreeFlyer() if (floating and k == 1) else loopdyn.Revolute(_AXES[k % 3])
        m.add_body(f"l{k}", p if p == 0 else f"l{p}", joint, _placement(k), _inertia(k))
    return m


def k2_chain(k: int):
    n = k * k
    model = tree_model(list(range(n)), f"k2chain{k}")
    return model, [loopdyn.Constraint(f"l{k * j}", "6d") for j in range(1, k + 1)]


def weld_chain(n: int):
    model = tree_model(list(range(n)), f"weldchain{n}")
    return model, [loopdyn.Constraint(f"l{j}", "6d") for j in range(1, n + 1)]


def long_tree(s: int, b: int, branch: int = 7):
    """Floating stem 1 … s; b branches of ``branch`` links at stem link s and at stem link 1."""
    parents = [0] + list(range(1, s))
    tips = []
    for root in (s, 1):
        for _ in range(b):
            first = len(parents) + 1
            parents.append(root)
            parents.extend(range(first, first + branch - 1))
            tips.append(first + branch - 1)
    model = tree_model(parents, f"longtree{s}_{b}", floating=True)
    return model, [loopdyn.Constraint(f"l{t}", "6d") for t in tips]


def comb(mb: int, teeth: int = 64):
    """A stem of ``teeth`` links with a 2-link tooth on each; welds on ``mb`` evenly spread tooth tips."""
    parents = list(range(teeth))
    tips = []
    for j in range(1, teeth + 1):
        first = len(parents) + 1
        parents.extend([j, first])
        tips.append(first + 1)
    model = tree_model(parents, f"comb{teeth}_{mb}")
    chosen = [tips[int(round(x))] for x in np.linspace(0, teeth - 1, mb)]
    return model, [loopdyn.Constraint(f"l{t}", "6d") for t in chosen]


# ----------------------------------------------------------------------------------------------
# measurements
def _time(model, cons, methods, repeats: int, target: float) -> dict[str, float]:
    data = model.create_data()
    q = _configuration(model)
    fns = {}
    for meth in methods:
        loopdyn.delassus(model, data, q, cons, method=meth)  # compile / warm the caches
        fns[meth] = lambda meth=meth: loopdyn.delassus(model, data, q, cons, method=meth)
    return _interleaved(fns, repeats, target)


def _interleaved(fns, repeats: int, target: float) -> dict[str, tuple[float, float]]:
    """(median, min) seconds per call of each function, measured in alternating blocks as
    :func:`loopdyn.bench.timing.interleaved` (the min is the more robust number on a shared machine)."""
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


def _configuration(model) -> np.ndarray:
    rng = np.random.default_rng(model.nv)
    return loopdyn.random_configuration(model, rng)


def _fit(xs, ys, last: int | None = None) -> float | None:
    """Log-log slope over all points (or the ``last`` largest sizes that have a time)."""
    pts = [(x, y) for x, y in zip(xs, ys, strict=True) if y is not None]
    if last is not None:
        pts = pts[-last:]
    if len(pts) < 2:
        return None
    x, y = np.array(pts, float).T
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def _family(name, sizes, build, size_label, methods_for, repeats, target) -> dict:
    rows = []
    for size in sizes:
        model, cons = build(size)
        meths = methods_for(model)
        t = _time(model, cons, meths, repeats, target)
        rows.append(
            {
                size_label: size,
                "n": model.nv,
                "m": sum(c.dim for c in cons),
                "seconds": {m: t[m][0] if m in t else None for m in METHODS},
                "seconds_min": {m: t[m][1] if m in t else None for m in METHODS},
            }
        )
        times = ", ".join(f"{m} {t[m][0] * 1e6:.1f}" for m in meths)
        print(f"  {name.split()[0]} {size_label}={size}: {times} µs", file=sys.stderr, flush=True)
    xs = [r[size_label] for r in rows]
    exps = {m: _fit(xs, [r["seconds"][m] for r in rows]) for m in METHODS}
    exps3 = {m: _fit(xs, [r["seconds"][m] for r in rows], last=3) for m in METHODS}
    exps_min = {m: _fit(xs, [r["seconds_min"][m] for r in rows]) for m in METHODS}
    return {
        "family": name,
        "size": size_label,
        "rows": rows,
        "exponents": exps,
        "exponents_last3": exps3,
        "exponents_min_times": exps_min,
    }


def _markdown(fam: dict, predicted: dict | None, extra: dict | None = None) -> str:
    lab = fam["size"]
    head = f"| {lab} | n | m | " + " | ".join(f"{m} µs" for m in METHODS) + " |"
    lines = [f"### {fam['family']}", "", head, "|" + "---:|" * (3 + len(METHODS))]
    for r in fam["rows"]:
        cells = [f"{r['seconds'][m] * 1e6:.1f}" if r["seconds"][m] is not None else "–" for m in METHODS]
        lines.append(f"| {r[lab]} | {r['n']} | {r['m']} | " + " | ".join(cells) + " |")
    for key, label in (
        ("exponents", f"**exponent in {lab}**"),
        ("exponents_last3", "exponent, 3 largest"),
        ("exponents_min_times", "exponent, min times"),
    ):
        exps = fam[key]
        lines.append(
            f"| {label} | | | "
            + " | ".join(f"**{exps[m]:.2f}**" if exps[m] is not None else "–" for m in METHODS)
            + " |"
        )
    if predicted:
        lines.append(
            "| predicted (asymptotic) | | | " + " | ".join(str(predicted[m]) for m in METHODS) + " |"
        )
    if extra:
        for label, vals in extra.items():
            lines.append(
                f"| {label} | | | "
                + " | ".join(f"{vals[m]:.2f}" if vals.get(m) is not None else "–" for m in METHODS)
                + " |"
            )
    return "\n".join(lines)


CLUSTER_METHODS = ("c-pv-osimr", "c-efpa", "projected", "dense")


def _cluster_family(quick: bool, repeats: int, target: float) -> dict:
    """Models with loops: a random PBT chain of N DoF (N/2 four-body belt clusters) with a 6D weld on
    the distal link of every cluster (m = 3N rows). C-EFPA propagates every row down its whole path,
    O(m 𝖽) = O(N²) with a large constant; cluster PV-OSIMr composes the propagators between branching
    clusters, O(N + m²) with a 6 × 6 product per pair; the dense and projected methods factorise
    GᵀHG (O(N³), small at these sizes)."""
    from loopdyn.robots import pbt_chain

    sizes = (4, 8, 12, 16, 24, 32) if quick else (4, 8, 12, 16, 24, 32, 48, 64)
    rows = []
    for n in sizes:
        model = pbt_chain(n, seed=n)
        cons = [loopdyn.Constraint(f"link-B-{i}", "6d") for i in range(n // 2)]
        t = _time(model, cons, CLUSTER_METHODS, repeats, target)
        rows.append({"N": n, "m": 6 * len(cons), "seconds": {k: v[0] for k, v in t.items()},
                     "seconds_min": {k: v[1] for k, v in t.items()}})  # fmt: skip
        times = ", ".join(f"{k} {v[0] * 1e6:.1f}" for k, v in t.items())
        print(f"  pbt_welds N={n}: {times} µs", file=sys.stderr, flush=True)
    xs = [r["N"] for r in rows]
    exps = {k: _fit(xs, [r["seconds"][k] for r in rows]) for k in CLUSTER_METHODS}
    exps3 = {k: _fit(xs, [r["seconds"][k] for r in rows], last=3) for k in CLUSTER_METHODS}
    lines = ["### pbt_welds (models with loops: PBT chain of N DoF, a 6D weld on every belt cluster, m = 3N)",
             "", "| N | m | " + " | ".join(f"{k} µs" for k in CLUSTER_METHODS) + " |",
             "|---:|---:|" + "---:|" * len(CLUSTER_METHODS)]  # fmt: skip
    for r in rows:
        cells = " | ".join(f"{r['seconds'][k] * 1e6:.1f}" for k in CLUSTER_METHODS)
        lines.append(f"| {r['N']} | {r['m']} | {cells} |")
    cells = " | ".join(f"**{exps[k]:.2f}**" for k in CLUSTER_METHODS)
    lines.append(f"| **exponent in N** | | {cells} |")
    lines.append("| exponent, 3 largest | | " + " | ".join(f"{exps3[k]:.2f}" for k in CLUSTER_METHODS) + " |")
    return {"family": "pbt_welds", "size": "N", "rows": rows, "exponents": exps, "exponents_last3": exps3,
            "markdown": "\n".join(lines)}  # fmt: skip


def run(quick: bool = False) -> dict:
    """Time every family; print markdown tables (stdout) and return the numbers."""
    t_start = time.perf_counter()
    repeats = 15 if quick else 21
    target = 3e-3 if quick else 5e-3  # seconds per timed block
    cap = 260 if quick else 600  # largest nv for the O(n³)-ish dense and ltl

    def methods_for(model):
        return [m for m in METHODS if m not in ("dense", "ltl") or model.nv <= cap]

    results: dict = {"quick": quick, "families": []}
    out = ["## Delassus scaling (median µs per call, interleaved; exponent = log-log slope)", ""]

    ks = (4, 6, 8, 11, 16, 22) if quick else (4, 6, 8, 11, 16, 22, 32)
    fam = _family("k2_chain (6D at links k, 2k, …, k²)", ks, k2_chain, "k", methods_for, repeats, target)
    results["families"].append(fam)
    out += [_markdown(fam, PREDICTED["k2_chain"]), ""]

    ns = (8, 16, 32, 64, 128, 192) if quick else (8, 16, 32, 64, 128, 256)
    fam = _family("weld_chain (6D on every link)", ns, weld_chain, "n", methods_for, repeats, target)
    results["families"].append(fam)
    out += [_markdown(fam, PREDICTED["weld_chain"]), ""]

    stems = (10, 40, 80, 160, 320) if quick else (10, 25, 50, 100, 200, 400)
    marginal: dict[str, dict[str, float]] = {}
    for b in (1, 2, 4):
        fam = _family(f"long_tree_b{b} (stem s, {b} branch(es) of 7 links at each end)", stems,
                      lambda s, b=b: long_tree(s, b), "s", methods_for, repeats, target)  # fmt: skip
        slope = {}
        for m in METHODS:
            pts = [(r["s"], r["seconds"][m]) for r in fam["rows"] if r["seconds"][m] is not None]
            slope[m] = float(np.polyfit(*np.array(pts).T, 1)[0] * 1e6) if len(pts) >= 2 else None
        fam["marginal_us_per_stem_link"] = slope
        marginal[f"b={b}"] = slope
        results["families"].append(fam)
        out += [_markdown(fam, PREDICTED["long_tree"], {"µs per stem link": slope}), ""]
    lines = ["### long tree: marginal cost per stem link (µs, slope of a linear fit in s)", ""]
    lines.append("| b | " + " | ".join(METHODS) + " |")
    lines.append("|---|" + "---:|" * len(METHODS))
    for b, slope in marginal.items():
        lines.append(
            f"| {b} | "
            + " | ".join(f"{slope[m]:.3f}" if slope[m] is not None else "–" for m in METHODS)
            + " |"
        )
    out += lines + [""]

    mbs = (2, 4, 8, 16, 32, 64)
    fam = _family("comb (64-link stem, 2-link teeth, n = 192; welds on m_b tooth tips)", mbs, comb, "m_b",
                  methods_for, repeats, target)  # fmt: skip
    ratio = {}
    for m in METHODS:  # time / m_b² at the two largest sizes: levels off for an O(n + m²) method
        r1, r2 = fam["rows"][-2], fam["rows"][-1]
        if r1["seconds"][m] is not None and r2["seconds"][m] is not None:
            ratio[m] = (r2["seconds"][m] / r2["m_b"] ** 2) / (r1["seconds"][m] / r1["m_b"] ** 2)
    fam["ratio_t_over_mb2_last_two"] = ratio
    results["families"].append(fam)
    out += [_markdown(fam, PREDICTED["comb"], {"(t/m_b²) last / previous": ratio}), ""]

    fam = _cluster_family(quick, repeats, target)
    results["families"].append(fam)
    out += [fam["markdown"], ""]

    results["seconds_total"] = time.perf_counter() - t_start
    out.append(f"(total {results['seconds_total']:.0f} s)")
    text = "\n".join(out)
    print(text)
    results["markdown"] = text
    return results


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats (< 2 minutes)")
    ap.add_argument("--json", metavar="FILE", help="write the numbers to FILE")
    args = ap.parse_args(argv)
    res = run(quick=args.quick)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(res, fh, indent=2)
        print(f"\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
