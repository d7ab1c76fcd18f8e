"""``loopdyn bench``, higher-order section: Ali, Gabellieri & Franchi (2026) §7, on loopdyn.

(a) Fig. 3 — the ID → FD round trip on the aerial manipulator for r = 0…5 along the 30 s reference
trajectory (3000 instants): the largest error per order. (b) Per-call times of
:func:`loopdyn.higher_order.rnea` / :func:`~loopdyn.higher_order.aba` for r = 0…5 beside the paper's
(Fig. 3 caption; C++ on an i7-12700H). (c) Fig. 4 — time against N (five branches of N_BOD bodies,
Table 3 parameters, N = 1 + 5 N_BOD) at r = 0…5 and against r = 0…10 at N = 101, with the fitted
log-log slope in N and a quadratic fit in r. (d) The automatic-differentiation baselines a user
would otherwise reach for, in the same process on the same robot: nested ``jax.jacfwd`` and
Taylor-mode ``jax.experimental.jet`` of an order-0 inverse dynamics written in JAX (compiled with
``jax.jit``; compile time excluded, printed separately), and the same nested ``jax.jacfwd`` run
eagerly, without ``jax.jit`` (the setting of the paper's own baseline, CasADi nested ``jtimes`` with
JIT off), with the ratio per order; the AD orders stop when a compile-time (or, eager, run-time)
budget is spent (XLA compilation of the nested graphs grows quickly with r), and ``--quick`` runs
r ≤ 2. JAX is optional (the ``bench`` extra). (e) Beyond the paper, closed loops: the same functions on
built-in robots with loops (a four-bar, a five-bar, Tello's differentials), timed interleaved with
the same functions on their spanning trees (same bodies, no loops), and the round trip's error.
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path

import numpy as np

from .. import higher_order as ho
from ..dynamics import aba, rnea
from ..model.configuration import random_configuration
from ..model.joints import FreeFlyer, Revolute
from ..model.model import Model
from ..model.state import spanning_tree, to_spanning
from ..robots import registry
from ..robots.aerial import PAPER_TIMES_US, B, D, aerial_manipulator, aerial_reference, aerial_times
from ..spatial.inertia import Inertia
from .timing import interleaved

__all__ = ["branches", "jax_inverse_dynamics", "run"]


def branches(n_bod: int) -> Model:
    """Fig. 4's tree: the aerial manipulator's base with five branches of ``n_bod`` links each
    (Table 3 links; branch roots evenly spaced on a circle of radius c/2 at z = −b, axes cycling
    y, x, z — the paper does not say how the roots are placed)."""
    model = Model(f"branches_{n_bod}", gravity=(0.0, 0.0, -9.81))
    model.add_body("base", 0, FreeFlyer(), inertia=Inertia(2.5, np.zeros(3), np.diag([0.03, 0.03, 0.05])))
    link = Inertia(0.25, (0.0, 0.0, -D), np.diag([0.002, 0.002, 0.001]))
    axes = ((0.0, 1.0, 0.0), (1.0, 0.0, 0.0), (0.0, 0.0, 1.0))
    for k in range(5):
        parent = "base"
        phi = 2 * math.pi * k / 5
        for j in range(n_bod):
            off = (0.09 * math.cos(phi), 0.09 * math.sin(phi), -B) if j == 0 else (0.0, 0.0, -2 * D)
            name = f"b{k}_{j}"
            model.add_body(name, parent, Revolute(axes[j % 3]), (np.eye(3), np.array(off)), link)
            parent = name
    return model


def _time_id_fd(model, data, q, dv, v, dtau, repeats: int, reference: bool = False) -> dict:
    """Median seconds per call of the ID on ``dv`` and the FD on ``(v, dtau)``, interleaved; with
    ``reference`` also of the order-0 tree :func:`loopdyn.rnea` / :func:`loopdyn.aba` at the same
    state (``ref_rnea``, ``ref_aba``): timings drift between runs, their ratios much less."""
    fns = {"rnea": lambda: ho.rnea(model, data, q, dv), "aba": lambda: ho.aba(model, data, q, v, dtau)}
    if reference:
        a, tau = np.ascontiguousarray(dv[1]), np.ascontiguousarray(dtau[0])
        fns["ref_rnea"] = lambda: rnea(model, data, q, v, a)
        fns["ref_aba"] = lambda: aba(model, data, q, v, tau)
        for f in fns.values():  # compiled and loaded before calibration
            f()
    return interleaved(fns, repeats=repeats)


def _tiny() -> bool:
    """The bench's smoke-test mode (``LOOPDYN_BENCH_TINY=1``, used by the test suite)."""
    from .paper import TINY_ENV

    return bool(os.environ.get(TINY_ENV))


def _round_trip(quick: bool) -> dict:
    model = aerial_manipulator()
    data = model.create_data()
    times = aerial_times()[:: 300 if _tiny() else 10 if quick else 1]
    err = np.zeros(6)
    scale = np.zeros(6)
    for t in times:
        q, dv = aerial_reference(t, 5)
        tau = ho.rnea(model, data, q, dv)
        back = ho.aba(model, data, q, dv[0], tau)
        err = np.maximum(err, np.abs(back - dv[1:]).max(axis=1))
        scale = np.maximum(scale, np.abs(dv[1:]).max(axis=1))
    print(f"## (a) Fig. 3 — ID → FD round trip, aerial manipulator, {len(times)} instants over 30 s\n")
    print("| r | max abs error of v^(r+1) | max abs v^(r+1) |\n|---|---|---|")
    for r in range(6):
        print(f"| {r} | {err[r]:.2e} | {scale[r]:.2e} |")
    return {"instants": len(times), "max_abs_error": err.tolist(), "max_abs_value": scale.tolist()}


def _per_call(quick: bool) -> dict:
    model = aerial_manipulator()
    data = model.create_data()
    q, dv = aerial_reference(7.3, 5)
    out = {"rnea_us": [], "aba_us": [], "ref_rnea_us": [], "ref_aba_us": []}
    for r in range(6):
        dvr = np.ascontiguousarray(dv[: r + 2])
        tau = ho.rnea(model, data, q, dvr)
        v = np.ascontiguousarray(dv[0])
        t = _time_id_fd(model, data, q, dvr, v, tau, 1 if _tiny() else 7 if quick else 21, reference=True)
        for key in ("rnea", "aba", "ref_rnea", "ref_aba"):
            out[key + "_us"].append(t[key] * 1e6)
    out["rnea_ratio"] = [a / b for a, b in zip(out["rnea_us"], out["ref_rnea_us"], strict=True)]
    out["aba_ratio"] = [a / b for a, b in zip(out["aba_us"], out["ref_aba_us"], strict=True)]
    print(
        "\n## (b) Per-call time from Python, aerial manipulator (N = 7, 12 DoF), median of interleaved runs\n"
    )
    print(
        "| r | ID (µs) | ID / loopdyn.rnea | paper ID (µs) | FD (µs) | FD / loopdyn.aba | paper FD (µs) |\n"
        "|---|---|---|---|---|---|---|"
    )
    for r in range(6):
        cells = (out["rnea_us"][r], out["rnea_ratio"][r], PAPER_TIMES_US["rnea"][r])
        cells += (out["aba_us"][r], out["aba_ratio"][r], PAPER_TIMES_US["aba"][r])
        print(f"| {r} | " + " | ".join(f"{x:.2f}" for x in cells) + " |")
    print(
        f"(ratios: to the order-0 tree loopdyn.rnea / loopdyn.aba at the same state, timed interleaved: "
        f"median {np.median(out['ref_rnea_us']):.2f} / {np.median(out['ref_aba_us']):.2f} µs; paper: "
        "C++/Eigen on an i7-12700H, implementation timed unspecified; here one Numba kernel per call)"
    )
    return out


def _inputs(model, rng, r):
    from ..model.configuration import random_configuration

    q = random_configuration(model)
    q[:7] = (0, 0, 0, 0, 0, 0, 1)  # C0_1 = I as in the paper
    dv = rng.normal(size=(r + 2, model.nv))
    return q, dv


def _scaling(quick: bool) -> dict:
    rng = np.random.default_rng(0)
    sizes = [1, 5] if _tiny() else [1, 5, 20, 50] if quick else [1, 2, 5, 10, 20, 50, 100, 199]
    # (N_BOD up to 199 as the paper: N = 996)
    repeats = 1 if _tiny() else 5 if quick else 9
    res = {"n_bod": sizes, "N": [1 + 5 * n for n in sizes], "rnea_us": [], "aba_us": []}
    for n in sizes:
        model = branches(n)
        data = model.create_data()
        row_id, row_fd = [], []
        for r in range(6):
            q, dv = _inputs(model, rng, r)
            v = np.zeros(model.nv)
            v[6:] = dv[0, 6:]
            dtau = np.zeros((r + 1, model.nv))
            t = _time_id_fd(model, data, q, dv, v, dtau, repeats)
            row_id.append(t["rnea"] * 1e6)
            row_fd.append(t["aba"] * 1e6)
        res["rnea_us"].append(row_id)
        res["aba_us"].append(row_fd)
    N = np.array(res["N"], float)
    big = N >= 21 if np.count_nonzero(N >= 21) >= 2 else N > 0  # small N: fixed cost of a Python call
    res["slope_N"] = {}
    for key in ("rnea_us", "aba_us"):
        T = np.array(res[key])
        res["slope_N"][key] = [float(np.polyfit(np.log(N[big]), np.log(T[big, r]), 1)[0]) for r in range(6)]
    print("\n## (c) Fig. 4 — time per call (µs) against N = 1 + 5 N_BOD (five branches), r = 0…5\n")
    print(
        "| N | "
        + " | ".join(f"ID r={r}" for r in range(6))
        + " | "
        + " | ".join(f"FD r={r}" for r in range(6))
        + " |"
    )
    print("|---" * 13 + "|")
    for k, n in enumerate(res["N"]):
        cells = [f"{x:.1f}" for x in res["rnea_us"][k]] + [f"{x:.1f}" for x in res["aba_us"][k]]
        print(f"| {n} | " + " | ".join(cells) + " |")
    for key, name in (("rnea_us", "ID"), ("aba_us", "FD")):
        sl = ", ".join(f"{s:.2f}" for s in res["slope_N"][key])
        print(f"{name}: log-log slope in N (N ≥ 21), r = 0…5: {sl}  (1 = linear)")
    # against r at N = 101
    model = branches(2 if _tiny() else 20)
    data = model.create_data()
    t_id, t_fd = [], []
    for r in range(11):
        q, dv = _inputs(model, rng, r)
        v = np.zeros(model.nv)
        v[6:] = dv[0, 6:]
        dtau = np.zeros((r + 1, model.nv))
        t = _time_id_fd(model, data, q, dv, v, dtau, repeats)
        t_id.append(t["rnea"] * 1e6)
        t_fd.append(t["aba"] * 1e6)
    rr = np.arange(11.0)
    res["vs_r"] = {"N": model.nbodies, "r": rr.tolist(), "rnea_us": t_id, "aba_us": t_fd, "fits": {}}
    print("\n| r | " + " | ".join(str(int(r)) for r in rr) + " |\n|---" * 1 + "|---" * 11 + "|")
    for key, name, T in (("rnea_us", "ID", t_id), ("aba_us", "FD", t_fd)):
        T = np.array(T)
        print(f"| {name} (µs) | " + " | ".join(f"{x:.1f}" for x in T) + " |")
        fits = {}
        for label, deg in (("linear", 1), ("quadratic", 2)):
            c = np.polyfit(rr, T, deg)
            fits[label] = float(np.max(np.abs(np.polyval(c, rr) - T)) / T.max())
        c = np.polyfit(rr, np.log(T), 1)  # exponential a·e^{br}
        fits["exponential"] = float(np.max(np.abs(np.exp(np.polyval(c, rr)) - T)) / T.max())
        fits["quadratic_coefficients"] = np.polyfit(rr, T, 2).tolist()
        res["vs_r"]["fits"][key] = fits
    for key, name in (("rnea_us", "ID"), ("aba_us", "FD")):
        f = res["vs_r"]["fits"][key]
        a, b, c = f["quadratic_coefficients"]
        print(
            f"{name} at N = {res['vs_r']['N']}: quadratic fit {a:.3f} r² + {b:.2f} r + {c:.1f} µs, "
            f"max residual {100 * f['quadratic']:.1f} % (linear {100 * f['linear']:.1f} %, exponential "
            f"{100 * f['exponential']:.1f} %) of the largest time"
        )
    return res


# ---------------------------------------------------------------------------------------------
# automatic-differentiation baselines (JAX)
def jax_inverse_dynamics(model):
    """τ(t) along the aerial reference trajectory: an order-0 RNEA (body frame, Featherstone) in JAX
    with analytic q(t), v(t) and a(t) = dv/dt by AD. Written for free-flyer + revolute trees."""
    import jax
    import jax.numpy as jnp

    from ..robots.aerial import ETA, HORIZON, Q0

    bodies = model.bodies
    g = jnp.asarray(model.gravity)

    def skew(x):
        return jnp.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])

    def rot(axis, th):
        K = skew(jnp.asarray(axis))
        return jnp.eye(3) + jnp.sin(th) * K + (1.0 - jnp.cos(th)) * K @ K

    def state(t):
        w, wy, amp = 2 * jnp.pi / 20, 2 * jnp.pi / 30, math.radians(25.0)
        psi = amp * jnp.sin(wy * t)
        Rb = rot((0.0, 0.0, 1.0), psi)
        xd = jnp.array([-w * jnp.sin(w * t), w * jnp.cos(w * t), 0.0])
        wj = jnp.pi / HORIZON
        qj = jnp.asarray(Q0) + 0.5 * jnp.asarray(ETA) * (1 - jnp.cos(wj * t))
        v = jnp.concatenate(
            [
                Rb.T @ xd,
                jnp.array([0.0, 0.0, amp * wy * jnp.cos(wy * t)]),
                0.5 * jnp.asarray(ETA) * wj * jnp.sin(wj * t),
            ]
        )
        return Rb, qj, v

    def tau_of_t(t):
        Rb, qj, v = state(t)
        a = jax.jacfwd(lambda s: state(s)[2])(t)
        n = len(bodies)
        vel, acc, frc, Xs = [None] * (n + 1), [None] * (n + 1), [None] * (n + 1), [None] * (n + 1)
        for i, b in enumerate(bodies, start=1):
            if i == 1:  # free-flyer root: body twist (ω; v), acceleration minus gravity in the body frame
                vel[1] = jnp.concatenate([v[3:6], v[0:3]])
                acc[1] = jnp.concatenate([a[3:6], a[0:3] - Rb.T @ g])
            else:
                k = b.idx_v - 6
                Rl = jnp.asarray(b.rotation) @ rot(b.joint.axis_array(), qj[k])
                pl = jnp.asarray(b.translation)
                Xs[i] = (Rl, pl)
                vp, ap = vel[b.parent], acc[b.parent]

                def to_child(m, Rl=Rl, pl=pl):
                    w = Rl.T @ m[:3]
                    return jnp.concatenate([w, Rl.T @ (m[3:] - jnp.cross(pl, m[:3]))])

                s = jnp.concatenate([jnp.asarray(b.joint.axis_array()), jnp.zeros(3)])
                vel[i] = to_child(vp) + s * v[b.idx_v]
                vi = vel[i]
                sq = s * v[b.idx_v]
                cross = jnp.concatenate(
                    [jnp.cross(vi[:3], sq[:3]), jnp.cross(vi[3:], sq[:3]) + jnp.cross(vi[:3], sq[3:])]
                )
                acc[i] = to_child(ap) + s * a[b.idx_v] + cross
            m, c, Ic = b.inertia.mass, jnp.asarray(b.inertia.com), jnp.asarray(b.inertia.inertia)
            Io = Ic + m * skew(c) @ skew(c).T
            I6 = jnp.block([[Io, m * skew(c)], [m * skew(c).T, m * jnp.eye(3)]])
            h = I6 @ vel[i]
            wv = vel[i]
            frc[i] = I6 @ acc[i] + jnp.concatenate(
                [jnp.cross(wv[:3], h[:3]) + jnp.cross(wv[3:], h[3:]), jnp.cross(wv[:3], h[3:])]
            )
        out = [None] * (n + 1)
        for i in range(n, 0, -1):
            b = bodies[i - 1]
            f = frc[i]
            if i == 1:
                out[1] = jnp.concatenate([f[3:], f[:3]])
            else:
                out[i] = jnp.dot(jnp.asarray(b.joint.axis_array()), f[:3])[None]
                Rl, pl = Xs[i]
                fp = jnp.concatenate([Rl @ f[:3] + jnp.cross(pl, Rl @ f[3:]), Rl @ f[3:]])
                frc[b.parent] = frc[b.parent] + fp
        return jnp.concatenate(out[1:])

    return tau_of_t


#: XLA on one thread, set before JAX is first imported: loopdyn's kernel runs on one thread, and
#: XLA's worker threads, spinning between calls, otherwise take the core from the call timed next on
#: a 2-core machine (our r = 5 ID read 24 µs instead of 4.4 beside a test run). One thread is also
#: as fast or faster for these small graphs (nested jacfwd at r = 5: 592 µs against 447–850).
SINGLE_THREAD_XLA = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"


def single_thread_xla() -> None:
    """Ask for :data:`SINGLE_THREAD_XLA` (no effect once JAX has created its CPU client)."""
    os.environ.setdefault("XLA_FLAGS", SINGLE_THREAD_XLA)


def _ad_baselines(quick: bool, ours_us: list) -> dict | None:
    single_thread_xla()
    try:
        import jax
        from jax.experimental import jet
    except ImportError:
        print("\n## (d) AD baselines skipped: JAX is not installed (pip install 'loopdyn[bench]')")
        return None
    if _tiny():
        print("\n## (d) AD baselines skipped in the smoke-test mode")
        return None
    jax.config.update("jax_enable_x64", True)
    model = aerial_manipulator()
    tau_of_t = jax_inverse_dynamics(model)
    t0 = 7.3
    q, dv = aerial_reference(t0, 5)
    data = model.create_data()
    ours = ho.rnea(model, data, q, dv)
    orders = [0, 1, 2] if quick else [0, 5, 1, 2, 3, 4]  # r = 5 early: the paper's largest order
    n = max(orders) + 1
    res = {
        "ours_us": [None] * n,  # higher_order.rnea, timed interleaved with the AD baselines
        "nested_jacfwd_us": [None] * n,
        "jet_us": [None] * n,
        "nested_jacfwd_eager_us": [None] * n,
        "compile_s": {"nested": [None] * n, "jet": [None] * n, "eager": [None] * n},
        "max_error": [None] * n,
    }
    budget = {"jet": 15.0, "nested": 10.0, "eager": 5.0}  # compile seconds (eager: warm-up and calls)
    if not quick:  # nested jacfwd at r = 5 compiles in 45–50 s (r ≤ 4: 30 s in all)
        budget = {"jet": 60.0, "nested": 120.0, "eager": 40.0}
    spent = {"jet": 0.0, "nested": 0.0, "eager": 0.0}
    for r in orders:
        f = tau_of_t
        for _ in range(r):
            f = jax.jacfwd(f)
        fns = {}
        if spent["nested"] < budget["nested"]:
            fns["nested"] = jax.jit(f)
        if spent["jet"] < budget["jet"]:
            if r == 0:
                fns["jet"] = jax.jit(lambda t: jet.jet(tau_of_t, (t,), ((1.0,),))[0])
            else:
                s_in = (1.0,) + (0.0,) * (r - 1)
                fns["jet"] = jax.jit(lambda t, s=s_in: jet.jet(tau_of_t, (t,), (s,))[1][-1])
        timings = {}
        err = 0.0
        if spent["eager"] < budget["eager"]:  # no jax.jit: op by op; a median of 3 calls (≫ 5 ms each)
            t1 = time.perf_counter()
            val = np.asarray(f(t0).block_until_ready())  # warm-up: JAX's per-primitive caches
            res["compile_s"]["eager"][r] = time.perf_counter() - t1
            calls = []
            for _ in range(3):
                t2 = time.perf_counter()
                f(t0).block_until_ready()
                calls.append(time.perf_counter() - t2)
            spent["eager"] += time.perf_counter() - t1
            res["nested_jacfwd_eager_us"][r] = sorted(calls)[1] * 1e6
            err = max(err, float(np.abs(val - ours[r]).max() / max(1.0, np.abs(ours[r]).max())))
            res["max_error"][r] = err
        for name, fn in fns.items():
            t1 = time.perf_counter()
            val = np.asarray(fn(t0).block_until_ready())
            dt = time.perf_counter() - t1
            spent[name] += dt
            res["compile_s"][name][r] = dt
            err = max(err, float(np.abs(val - ours[r]).max() / max(1.0, np.abs(ours[r]).max())))
            timings[name] = lambda fn=fn: fn(t0).block_until_ready()
        if not timings:
            continue
        dvr = np.ascontiguousarray(dv[: r + 2])
        timings["ours"] = lambda dvr=dvr: ho.rnea(model, data, q, dvr)
        t = interleaved(timings, repeats=5 if quick else 11, target=5e-3)
        res["ours_us"][r] = t["ours"] * 1e6
        res["jet_us"][r] = t["jet"] * 1e6 if "jet" in t else None
        res["nested_jacfwd_us"][r] = t["nested"] * 1e6 if "nested" in t else None
        res["max_error"][r] = err
    print(
        "\n## (d) Automatic-differentiation baselines, same robot and instant: jet and nested jacfwd "
        "compiled with jax.jit (compile time excluded); nested jacfwd eager, no jax.jit (the paper's "
        "CasADi baseline runs with JIT off; median of 3 calls after a warm-up call)\n"
    )
    print(
        "| r | ours ID (µs) | jet, jit (µs) | jet / ours | nested jacfwd, jit (µs) | nested / ours | "
        "nested jacfwd, eager (µs) | eager / ours | AD vs ours |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in range(n):
        if res["max_error"][r] is None:
            print(f"| {r} | {ours_us[r]:.2f} | not run (budget) | – | not run | – | not run | – | – |")
            continue
        mine = res["ours_us"][r] or ours_us[r]  # interleaved with the compiled baselines when they ran
        cells = []
        for key in ("jet_us", "nested_jacfwd_us", "nested_jacfwd_eager_us"):
            x = res[key][r]
            cells.append(f"{x:.1f} | {x / mine:.0f}×" if x is not None else "not run (budget) | –")
        cells.append(f"{res['max_error'][r]:.1e}")
        print(f"| {r} | {mine:.2f} | " + " | ".join(cells) + " |")
    comp = {
        k: ", ".join(f"r={r}: {x:.1f}" for r, x in enumerate(v) if x is not None)
        for k, v in res["compile_s"].items()
    }
    print(
        f"compile seconds — jet: {comp['jet']}; nested jacfwd: {comp['nested']}; eager warm-up: "
        f"{comp['eager']}"
    )
    return res


def _loop_fns(model, data, q, dv, tau, tree, tdata, qs, dvs, taus) -> dict:
    """The four calls (e) times: ID and FD on the model with loops and on its spanning tree."""
    return {
        "rnea": lambda: ho.rnea(model, data, q, dv),
        "aba": lambda: ho.aba(model, data, q, dv[0], tau),
        "tree_rnea": lambda: ho.rnea(tree, tdata, qs, dvs),
        "tree_aba": lambda: ho.aba(tree, tdata, qs, dvs[0], taus),
    }


def _loops(quick: bool) -> dict:
    """(e) Closed loops: per-call medians of ``higher_order.rnea`` / ``aba`` against the same on the
    spanning tree at the spanning state (interleaved), r = 0, 2, 5, and the round trip's forward error
    (relative to max|v^(k)|) and backward error (relative to max|τ^(0…k)|)."""
    rng = np.random.default_rng(7)
    orders = (0, 2) if _tiny() else (0, 2, 5)
    repeats = 1 if _tiny() else 5 if quick else 15
    rows = []
    print("\n## (e) Closed loops: higher-order dynamics on robots with implicit loops (not in the paper)\n")
    print("| robot | r | ID (µs) | ID / tree | FD (µs) | FD / tree | round trip: forward error "
          "| backward error |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for name in ("four_bar", "five_bar", "tello"):
        model = registry.build(name)
        data = model.create_data()
        tree = spanning_tree(model)
        tdata = tree.create_data()
        q = random_configuration(model, rng)
        for r in orders:
            dv = rng.normal(size=(r + 2, model.nv)) * (0.7 ** np.arange(r + 2))[:, None]
            tau = ho.rnea(model, data, q, dv)
            back = ho.aba(model, data, q, dv[0], tau)
            err = float(np.max(np.abs(back - dv[1:]).max(axis=1) / np.abs(dv[1:]).max(axis=1)))
            # the backward error: inverse dynamics of the result against the τ it came from, per order
            # relative to max|τ^(0…k)| (free of cond(H) and of the growth of the forward error with k)
            again = ho.rnea(model, data, q, np.vstack([dv[:1], back]))
            berr = float(max(np.abs(again[k] - tau[k]).max() / np.abs(tau[: k + 1]).max()
                             for k in range(r + 1)))  # fmt: skip
            qs = to_spanning(model, q, dv[0])[0]
            dvs = rng.normal(size=(r + 2, tree.nv)) * (0.7 ** np.arange(r + 2))[:, None]
            taus = ho.rnea(tree, tdata, qs, dvs)
            fns = _loop_fns(model, data, q, dv, tau, tree, tdata, qs, dvs, taus)
            for f in fns.values():
                f()
            t = interleaved(fns, repeats=repeats)
            row = {"robot": name, "r": r, "nv": model.nv, "round_trip_rel_error": err}
            row["backward_error"] = berr
            row.update({k + "_us": v * 1e6 for k, v in t.items()})
            row["rnea_ratio"] = t["rnea"] / t["tree_rnea"]
            row["aba_ratio"] = t["aba"] / t["tree_aba"]
            rows.append(row)
            print(f"| {name} | {r} | {row['rnea_us']:.2f} | {row['rnea_ratio']:.2f} | {row['aba_us']:.2f} | "
                  f"{row['aba_ratio']:.2f} | {err:.1e} | {berr:.1e} |")  # fmt: skip
    print(
        "(tree: the same function on spanning_tree(model), same bodies without the loops, at the spanning "
        "state; FD on loops assembles and factorises H = GᵀMG per call, the joint-space method; forward "
        "error: max over orders of |v^(k) − dv[k]| / max|dv[k]|, which carries cond(H) and grows with the "
        "order; backward error: max over orders of |ID(result)^(k) − τ^(k)| / max|τ^(0…k)|)"
    )
    return {"rows": rows}


def _plots(out: Path, scaling: dict) -> list[str]:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    written = []
    for key, name in (("rnea_us", "H-GRNE (ID)"), ("aba_us", "H-GABI (FD)")):
        fig, ax = plt.subplots(1, 2, figsize=(10, 4))
        T = np.array(scaling[key])
        for r in range(6):
            ax[0].loglog(scaling["N"], T[:, r], "o-", label=f"r = {r}")
        ax[0].set_xlabel("N (bodies)")
        ax[0].set_ylabel("time per call (µs)")
        ax[0].set_title(f"Fig. 4: {name} against N")
        ax[0].legend(fontsize=8)
        ax[0].grid(True, alpha=0.3)
        ax[1].plot(scaling["vs_r"]["r"], scaling["vs_r"][key], "o-")
        ax[1].set_xlabel("order r")
        ax[1].set_ylabel("time per call (µs)")
        ax[1].set_title(f"{name} against r, N = 101")
        ax[1].grid(True, alpha=0.3)
        path = out / f"fig4_{key.split('_')[0]}.png"
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(str(path))
    return written


def run(quick: bool, out: Path | None) -> dict:
    """Run the higher-order section, print its report (markdown) and return every number; with
    ``out`` also write ``out/higher_order.json`` and the Fig. 4 PNGs."""
    t_start = time.perf_counter()
    print("# loopdyn bench — higher-order dynamics (Ali, Gabellieri & Franchi 2026, §7)\n")
    results = {"round_trip": _round_trip(quick)}
    results["per_call"] = _per_call(quick)
    results["scaling"] = _scaling(quick)
    results["ad"] = _ad_baselines(quick, results["per_call"]["rnea_us"])
    results["loops"] = _loops(quick)
    if out is not None:
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        results["figures"] = _plots(out, results["scaling"])
        for p in results["figures"]:
            print(f"wrote {p}")
        path = out / "higher_order.json"
        path.write_text(json.dumps(results, indent=2))
        print(f"wrote {path}")
    results["seconds"] = time.perf_counter() - t_start
    print(f"\nhigher-order section: {results['seconds']:.0f} s")
    return results
