"""``loopdyn bench``: tree dynamics, loopdyn against Pinocchio, called from Python.

For each robot: per-call medians of ``rnea``, ``aba``, ``crba``, ``rnea_derivatives`` and
``aba_derivatives`` (against ``computeRNEADerivatives`` / ``computeABADerivatives``), ``regressor``
(against ``computeJointTorqueRegressor``) and ``coriolis_matrix`` (against ``computeCoriolisMatrix``),
loopdyn and Pinocchio measured interleaved in this process, and their ratio (loopdyn / Pinocchio; below 1
means loopdyn is faster); ``mass_matrix_derivative`` and ``christoffel`` (no Pinocchio counterpart) are
timed alone. Then the same identification and structure functions on two robots with loops against the
same function on their spanning tree (same bodies, loops ignored). Then the throughput of
``loopdyn.batch`` on one thread and on all threads, interleaved, for two trees and two robots with loops
(mini_cheetah, tello) — rnea, aba, crba and the constrained forward dynamics with the feet in contact
("contact fd"), with the load average (the machine may be shared: other processes take cores away from
the "all threads" column). The first-call (compile or cache-load) time of the kernels is reported
separately. Pinocchio is optional: without it only loopdyn's times are shown.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time

import numba
import numpy as np

from .. import batch, io, robots
from ..algorithms.common import compile_all
from ..constraint_rows import Constraint
from ..derivatives import aba_derivatives, rnea_derivatives
from ..dynamics import aba, crba, rnea
from ..identification import regressor
from ..model.configuration import random_configuration
from ..model.state import spanning_tree, to_spanning
from ..structure import christoffel, coriolis_matrix, mass_matrix_derivative
from .timing import interleaved

ALGORITHMS = ("rnea", "aba", "crba")
CHAIN_SIZES = (6, 12, 24, 48)


def _pinocchio():
    try:
        import pinocchio
    except ImportError:
        return None
    return pinocchio


def _cases(quick: bool):
    """(label, loopdyn model, pinocchio model builder) for the benchmark robots available here."""
    names = ["solo12", "talos_reduced"]
    for name in names:
        try:
            path, floating = robots.example_robot_urdf(name)
        except FileNotFoundError:
            print(f"  ({name}: example-robot-data not installed, skipped)", file=sys.stderr)
            continue
        yield name, io.load_urdf(path, floating_base=floating), ("file", path, floating)
    for n in CHAIN_SIZES[:2] if quick else CHAIN_SIZES:
        xml = robots.revolute_chain_urdf(n, seed=n)
        yield f"chain{n}", io.load_urdf(xml), ("xml", xml, False)


def _pin_model(pin, source):
    kind, payload, floating = source
    if kind == "xml":
        return pin.buildModelFromXML(payload)
    if floating:
        return pin.buildModelFromUrdf(payload, pin.JointModelFreeFlyer())
    return pin.buildModelFromUrdf(payload)


def run(quick: bool = False, out_dir: str | None = None, batch_states: int | None = None) -> dict:
    pin = _pinocchio()
    repeats = 9 if quick else 21
    results: dict = {
        "machine": {
            "python": platform.python_version(),
            "cpu_count": os.cpu_count(),
            "numba_threads": numba.get_num_threads(),
            "numba": numba.__version__,
            "pinocchio": getattr(pin, "__version__", None),
        },
        "robots": [],
    }
    t0 = time.perf_counter()
    results["kernel_first_call_seconds"] = compile_all()
    print(
        f"kernels compiled or loaded from cache in {results['kernel_first_call_seconds']:.2f} s "
        f"(first call; later calls pay nothing)\n"
    )

    header = "| robot | nq | nv | algorithm | loopdyn µs | Pinocchio µs | ratio |"
    print("## Tree dynamics from Python: loopdyn vs Pinocchio (median per call, interleaved)\n")
    print(header)
    print("|---|---:|---:|---|---:|---:|---:|")
    rng = np.random.default_rng(0)
    for label, lm, source in _cases(quick):
        ld_data = lm.create_data()
        q = random_configuration(lm, rng)
        v = rng.standard_normal(lm.nv)
        a = rng.standard_normal(lm.nv)
        pm = pd = None
        if pin is not None:
            pm = _pin_model(pin, source)
            pd = pm.createData()
        entry = {"name": label, "nq": lm.nq, "nv": lm.nv, "algorithms": {}}
        if not results["robots"]:  # warm up (CPU frequency, caches) before the first measurement
            t_end = time.perf_counter() + 1.0
            while time.perf_counter() < t_end:
                for _, fl, fp in _calls(lm, ld_data, q, v, a, pin, pm, pd):
                    fl()
                    if pin is not None and fp is not None:
                        fp()
        for alg, fl, fp in _calls(lm, ld_data, q, v, a, pin, pm, pd):
            fns = {"loopdyn": fl} if pin is None or fp is None else {"loopdyn": fl, "pinocchio": fp}
            t = interleaved(fns, repeats=repeats)
            rec = {"loopdyn_s": t["loopdyn"]}
            cols = f"{t['loopdyn'] * 1e6:.2f} | "
            if "pinocchio" in t:
                rec["pinocchio_s"] = t["pinocchio"]
                rec["ratio"] = t["loopdyn"] / t["pinocchio"]
                cols += f"{t['pinocchio'] * 1e6:.2f} | {rec['ratio']:.2f} |"
            else:
                cols += "– | – |"
            entry["algorithms"][alg] = rec
            print(f"| {label} | {lm.nq} | {lm.nv} | {alg} | {cols}")
            sys.stdout.flush()
        results["robots"].append(entry)

    results["structure_on_loops"] = _structure_on_loops(quick, repeats, rng)
    n = batch_states or (2000 if quick else 20000)
    results["batch"] = _batch_section(results, quick, n, rng)
    results["total_seconds"] = time.perf_counter() - t0
    if pin is None:
        print("\n(Pinocchio not installed: `pip install pin` to see the ratios.)")
    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
        path = os.path.join(out_dir, "results.json")
        with open(path, "w") as fh:
            json.dump(results, fh, indent=2)
        print(f"\nwrote {path}")
    return results


def _calls(lm, ld_data, q, v, a, pin, pm, pd):
    """(algorithm, loopdyn call, Pinocchio call or None) for one robot and state."""
    structure = _structure_calls(lm, ld_data, q, v, a)
    pinocchio = {  # the structure functions Pinocchio has
        "regressor": lambda: pin.computeJointTorqueRegressor(pm, pd, q, v, a),
        "coriolis_matrix": lambda: pin.computeCoriolisMatrix(pm, pd, q, v),
    }
    return (
        ("rnea", lambda: rnea(lm, ld_data, q, v, a), lambda: pin.rnea(pm, pd, q, v, a)),
        ("aba", lambda: aba(lm, ld_data, q, v, a), lambda: pin.aba(pm, pd, q, v, a)),
        ("crba", lambda: crba(lm, ld_data, q), lambda: pin.crba(pm, pd, q)),
        ("rnea_derivatives", lambda: rnea_derivatives(lm, ld_data, q, v, a),
         lambda: pin.computeRNEADerivatives(pm, pd, q, v, a)),
        ("aba_derivatives", lambda: aba_derivatives(lm, ld_data, q, v, a),
         lambda: pin.computeABADerivatives(pm, pd, q, v, a)),
        *((fn, structure[fn], pinocchio.get(fn)) for fn in STRUCTURE),
    )  # fmt: skip


STRUCTURE = ("regressor", "coriolis_matrix", "mass_matrix_derivative", "christoffel")


def _structure_calls(model, data, q, v, a) -> dict:
    return {
        "regressor": lambda: regressor(model, data, q, v, a),
        "coriolis_matrix": lambda: coriolis_matrix(model, data, q, v),
        "mass_matrix_derivative": lambda: mass_matrix_derivative(model, data, q, v),
        "christoffel": lambda: christoffel(model, data, q),
    }


DERIVATIVES = ("rnea_derivatives", "aba_derivatives")


def _derivative_calls(model, data, q, v, a) -> dict:
    return {
        "rnea_derivatives": lambda: rnea_derivatives(model, data, q, v, a),
        "aba_derivatives": lambda: aba_derivatives(model, data, q, v, a),
    }


def _structure_on_loops(quick: bool, repeats: int, rng) -> dict:
    """The derivatives, identification and structure functions on robots with loops (in independent
    coordinates) against the same function on the spanning tree (the same bodies in spanning
    coordinates, loops ignored), interleaved; ratio = loops / spanning tree."""
    print("\n## Derivatives, identification and structure on loops, against the spanning tree (medians)\n")
    print("| robot | nv | spanning nv | function | loops µs | spanning tree µs | ratio |")
    print("|---|---:|---:|---|---:|---:|---:|")
    out: dict = {}
    names = ("mini_cheetah",) if quick else ("mini_cheetah", "tello")
    for label in names:
        model = robots.build(label)
        st = spanning_tree(model)
        q = random_configuration(model, rng)
        v = rng.standard_normal(model.nv)
        a = rng.standard_normal(model.nv)
        qs, vs = to_spanning(model, q, v)
        as_ = rng.standard_normal(st.nv)
        md, td = model.create_data(), st.create_data()
        loops = {**_structure_calls(model, md, q, v, a), **_derivative_calls(model, md, q, v, a)}
        tree = {**_structure_calls(st, td, qs, vs, as_), **_derivative_calls(st, td, qs, vs, as_)}
        out[label] = {}
        for fn in (*DERIVATIVES, *STRUCTURE):
            t = interleaved({"loops": loops[fn], "tree": tree[fn]}, repeats=repeats)
            ratio = t["loops"] / t["tree"]
            out[label][fn] = {"loops_s": t["loops"], "spanning_tree_s": t["tree"], "ratio": ratio}
            print(
                f"| {label} | {model.nv} | {st.nv} | {fn} | {t['loops'] * 1e6:.2f} | "
                f"{t['tree'] * 1e6:.2f} | {ratio:.2f} |"
            )
            sys.stdout.flush()
    return out


def _feet(label: str) -> list:
    """The contacts of the batched constrained forward dynamics: point feet (solo12, mini_cheetah's
    knee links 0.2 m down), 6-D soles (talos_reduced, tello)."""
    legs = ("FL", "FR", "HL", "HR")
    return {
        "solo12": [Constraint(f"{leg}_FOOT", "3d") for leg in legs],
        "talos_reduced": [Constraint("left_sole_link", "6d"), Constraint("right_sole_link", "6d")],
        "mini_cheetah": [Constraint(f"{leg}_knee_link", "3d", (np.eye(3), [0.0, 0.0, -0.2])) for leg in legs],
        "tello": [Constraint("left-foot", "6d"), Constraint("right-foot", "6d")],
    }.get(label, [])


def _batch_calls(label, lm, Q, V, A):
    calls = [
        ("rnea", lambda: batch.rnea(lm, Q, V, A)),
        ("aba", lambda: batch.aba(lm, Q, V, A)),
        ("crba", lambda: batch.crba(lm, Q)),
    ]
    feet = _feet(label)
    if feet:
        calls.append(("contact fd", lambda: batch.constrained_forward_dynamics(lm, Q, V, A, feet)))
    return calls


def _batch_models(quick: bool, trees: dict):
    """(label, model) of the batch section: two trees, two robots with loops (mini_cheetah's rotors,
    tello's transmissions)."""
    for name in ("solo12", "talos_reduced"):
        if name in trees:
            yield name, trees[name]
    yield "mini_cheetah", robots.mini_cheetah()
    if not quick:
        yield "tello", robots.tello()


BATCH_DISTINCT = 1000  # distinct random configurations of the batch section


def _batch_section(results: dict, quick: bool, n: int, rng) -> dict:
    """Throughput of loopdyn.batch on one thread and on all of Numba's threads, measured interleaved
    (1, all, all, 1, …) so both see the same machine load; medians. The load average is printed
    beside: on a machine shared with other processes, all cores cannot give cores' worth of speed-up."""
    nthreads = numba.get_num_threads()
    trees = {lbl: m for lbl, m, _ in _cases(quick) if lbl in ("solo12", "talos_reduced")}
    distinct = min(n, BATCH_DISTINCT)
    print(f"\n## Batch throughput ({n} states per call, {distinct} distinct configurations repeated, "
          "random velocities; states per second, median)\n")
    print("| robot | loops | algorithm | 1 thread | all threads | threads | ratio | load avg |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    out = {}
    for label, lm in _batch_models(quick, trees):
        # a random configuration of a robot with loops solves its closure in Python (Tello: 1.5 ms,
        # 30 s for 20000): the configurations repeat, the velocities and accelerations do not
        Q = np.stack([random_configuration(lm, rng) for _ in range(distinct)])
        Q = np.tile(Q, (-(-n // distinct), 1))[:n]
        V = rng.standard_normal((n, lm.nv))
        A = rng.standard_normal((n, lm.nv))
        out[label] = {}
        for alg, fn in _batch_calls(label, lm, Q, V, A):
            med = _scaling(fn, nthreads, repeats=5 if quick else 11)
            load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
            rec = {
                "states_per_s_1_thread": n / med[1],
                "states_per_s_all_threads": n / med[nthreads],
                "threads": nthreads,
                "ratio": med[1] / med[nthreads],
                "load_average": load,
            }
            out[label][alg] = rec
            one, all_ = rec["states_per_s_1_thread"], rec["states_per_s_all_threads"]
            loops = "yes" if lm.has_constraints else "no"
            print(
                f"| {label} | {loops} | {alg} | {one:,.0f} | {all_:,.0f} | {nthreads} | "
                f"{rec['ratio']:.2f} | {load:.1f} |"
            )
            sys.stdout.flush()
    return out


def _scaling(fn, nthreads: int, repeats: int) -> dict:
    """Median seconds per call of ``fn`` on 1 and on ``nthreads`` threads, interleaved."""
    samples: dict[int, list[float]] = {1: [], nthreads: []}
    try:
        for t in (1, nthreads):  # warm-up (and first compile)
            numba.set_num_threads(t)
            fn()
        for r in range(repeats):
            for t in (1, nthreads) if r % 2 == 0 else (nthreads, 1):
                numba.set_num_threads(t)
                samples[t].append(_timed(fn))
    finally:
        numba.set_num_threads(nthreads)
    return {t: sorted(v)[len(v) // 2] for t, v in samples.items()}


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0
