"""``loopdyn bench``: tree dynamics, loopdyn against Pinocchio, called from Python.

For each robot: per-call medians of ``rnea``, ``aba`` and ``crba`` for loopdyn and Pinocchio
measured interleaved in this process, and their ratio (loopdyn / Pinocchio; below 1 means loopdyn
is faster). Then batch throughput on one core and on all cores. The first-call (compile or
cache-load) time of the kernels is reported separately. Pinocchio is optional: without it only
loopdyn's times are shown.
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
from ..dynamics import aba, crba, rnea
from ..model.configuration import random_configuration
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
                    if pin is not None:
                        fp()
        for alg, fl, fp in _calls(lm, ld_data, q, v, a, pin, pm, pd):
            fns = {"loopdyn": fl} if pin is None else {"loopdyn": fl, "pinocchio": fp}
            t = interleaved(fns, repeats=repeats)
            rec = {"loopdyn_s": t["loopdyn"]}
            cols = f"{t['loopdyn'] * 1e6:.2f} | "
            if pin is not None:
                rec["pinocchio_s"] = t["pinocchio"]
                rec["ratio"] = t["loopdyn"] / t["pinocchio"]
                cols += f"{t['pinocchio'] * 1e6:.2f} | {rec['ratio']:.2f} |"
            else:
                cols += "– | – |"
            entry["algorithms"][alg] = rec
            print(f"| {label} | {lm.nq} | {lm.nv} | {alg} | {cols}")
            sys.stdout.flush()
        results["robots"].append(entry)

    print("\n## Batch throughput (states per second)\n")
    print("| robot | algorithm | 1 core | all cores | threads |")
    print("|---|---|---:|---:|---:|")
    nthreads = numba.get_num_threads()
    n = batch_states or (2000 if quick else 20000)
    for entry in results["robots"]:
        if entry["name"] not in ("solo12", "talos_reduced", "chain12"):
            continue
        lm = next(m for lbl, m, _ in _cases(quick) if lbl == entry["name"])
        Q = np.stack([random_configuration(lm, rng) for _ in range(n)])
        V = rng.standard_normal((n, lm.nv))
        A = rng.standard_normal((n, lm.nv))
        entry["batch"] = {}
        for alg, fn in _batch_calls(lm, Q, V, A):
            rates = []
            for threads in (1, nthreads):
                numba.set_num_threads(threads)
                fn()  # warm-up (and first compile)
                best = min(_timed(fn) for _ in range(3 if quick else 5))
                rates.append(n / best)
            numba.set_num_threads(nthreads)
            entry["batch"][alg] = {
                "states_per_s_1_core": rates[0],
                "states_per_s_all_cores": rates[1],
                "threads": nthreads,
            }
            print(f"| {entry['name']} | {alg} | {rates[0]:,.0f} | {rates[1]:,.0f} | {nthreads} |")
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
    """(algorithm, loopdyn call, Pinocchio call) for one robot and state."""
    return (
        ("rnea", lambda: rnea(lm, ld_data, q, v, a), lambda: pin.rnea(pm, pd, q, v, a)),
        ("aba", lambda: aba(lm, ld_data, q, v, a), lambda: pin.aba(pm, pd, q, v, a)),
        ("crba", lambda: crba(lm, ld_data, q), lambda: pin.crba(pm, pd, q)),
    )


def _batch_calls(lm, Q, V, A):
    return (
        ("rnea", lambda: batch.rnea(lm, Q, V, A)),
        ("aba", lambda: batch.aba(lm, Q, V, A)),
        ("crba", lambda: batch.crba(lm, Q)),
    )


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0
