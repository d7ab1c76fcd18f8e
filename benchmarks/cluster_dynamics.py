"""Forward dynamics of robots with transmissions and loops: the exact baselines against each other and
against the cluster algorithm (C-ABA, ``loopdyn.aba`` on a model with constraints) when available.

Per-call medians, measured interleaved (:func:`loopdyn.bench.timing.interleaved`), on the GT and PBT
chains (spec §5.5–5.6, random parameters) for N = 4, 8, …, 24 links:

* ``projection`` — ``(GᵀHG)⁻¹(τ − Gᵀ(C + Hg))``, dense Cholesky;
* ``LM dense`` / ``LM ltl`` — Lagrange multipliers with a dense Cholesky / the sparse LᵀL of H;
* ``C-ABA`` — ``loopdyn.aba`` on the cluster model (skipped if it does not support constraints);
* ``tree ABA`` — ``loopdyn.aba`` on the spanning tree ignoring the constraints (a lower bound).

(the baselines timed are the compiled ones, ``compiled=True``: one Numba kernel call each, see
:mod:`loopdyn.baselines.kernels`; the max. rel. diff. column compares them and C-ABA with the
independent NumPy/sympy oracle path of the projection method)

Plus, if Pinocchio is installed, its ``constraintDynamics`` on a planar four-bar closed by a point
contact, next to the same four-bar in loopdyn.

Usage: ``python benchmarks/cluster_dynamics.py [--quick]``.
"""

from __future__ import annotations

import argparse
import os
import platform

# single-threaded BLAS: per-call latency of small dense factorisations (threads only add jitter here)
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

import loopdyn  # noqa: E402
from loopdyn.baselines.constraints import spanning_state  # noqa: E402
from loopdyn.baselines.lagrange import lagrange_forward_dynamics, lift_forces  # noqa: E402
from loopdyn.baselines.projection import projection_forward_dynamics  # noqa: E402
from loopdyn.bench.timing import interleaved  # noqa: E402
from loopdyn.robots.serial import gt_chain, pbt_chain  # noqa: E402


def _cluster_aba(model, data):
    """``loopdyn.aba`` on the cluster model if it supports constraints (the lead's C-ABA), else None."""
    try:
        q = loopdyn.random_configuration(model, 0)
        z = np.zeros(model.nv)
        loopdyn.aba(model, data, q, z, z)
    except Exception:  # noqa: BLE001 - any failure means: not available
        return None
    return loopdyn.aba


def _contenders(model, q, v, tau):
    data = model.create_data()
    tree = loopdyn.spanning_tree(model)
    tdata = tree.create_data()
    qs, vs, _, _ = spanning_state(model, q, v)
    ts = np.zeros(tree.nv)
    fns = {
        "projection": lambda: projection_forward_dynamics(model, q, v, tau, compiled=True),
        "LM dense": lambda: lagrange_forward_dynamics(model, q, v, tau, method="dense", compiled=True),
        "LM ltl": lambda: lagrange_forward_dynamics(model, q, v, tau, method="ltl", compiled=True),
    }
    aba = _cluster_aba(model, data)
    if aba is not None:
        fns["C-ABA"] = lambda: aba(model, data, q, v, tau)
    fns["tree ABA"] = lambda: loopdyn.aba(tree, tdata, qs, vs, ts)
    for f in fns.values():  # compile and warm up
        f()
    return fns


def _id_contenders(model, q, v, a):
    """Inverse dynamics: C-RNEA against the projected RNEA Gᵀ RNEA_span (spec §2.7.1)."""
    from loopdyn.baselines.projection import projected_rnea

    data = model.create_data()
    fns = {
        "projected RNEA": lambda: projected_rnea(model, q, v, a, compiled=True),
        "C-RNEA": lambda: loopdyn.rnea(model, data, q, v, a),
    }
    for f in fns.values():
        f()
    return fns


def _growth(times: dict, sizes: list[int]) -> dict:
    """Fitted exponent p of t ∝ N^p (least squares on log t against log N), per method."""
    logn = np.log(np.asarray(sizes, float))
    return {k: float(np.polyfit(logn, np.log(np.asarray(v)), 1)[0]) for k, v in times.items()}


def _check(model, q, v, tau) -> float:
    """Largest relative disagreement of the timed contenders' ÿ (tree ABA excluded) from the oracle
    projection (independent G, g by sympy and NumPy)."""
    ref = projection_forward_dynamics(model, q, v, tau)
    out = [projection_forward_dynamics(model, q, v, tau, compiled=True)]
    out += [lagrange_forward_dynamics(model, q, v, tau, method=m, compiled=True) for m in ("dense", "ltl")]
    data = model.create_data()
    aba = _cluster_aba(model, data)
    if aba is not None:
        out.append(aba(model, data, q, v, tau))
    scale = max(1.0, float(np.max(np.abs(ref))))
    return max(float(np.max(np.abs(o - ref))) for o in out) / scale


def _four_bar():
    """A planar four-bar (crank independent) closed by a point loop joint; gravity in its plane."""
    m = loopdyn.Model("four-bar", gravity=(0.0, -9.81, 0.0))
    z = (0.0, 0.0, 1.0)
    inertia = loopdyn.Inertia(1.0, (0.1, 0.0, 0.0), np.diag([0.01, 0.02, 0.02]))
    m.add_body("crank", 0, loopdyn.Revolute(z), None, inertia)
    m.add_body("coupler", "crank", loopdyn.Revolute(z), (np.eye(3), [0.3, 0, 0]), inertia, independent=False)
    m.add_body("rocker", 0, loopdyn.Revolute(z), (np.eye(3), [0.7, 0, 0]), inertia, independent=False)
    m.add_loop("loop", "coupler", "rocker", "point", (np.eye(3), [0.8, 0, 0]), (np.eye(3), [0.6, 0, 0]))
    return m


def _pinocchio_four_bar(model):
    try:
        import pinocchio as pin
    except ImportError:
        return None
    pm = pin.Model()
    pm.gravity = pin.Motion(np.r_[model.gravity, 0.0, 0.0, 0.0])
    for b in model.bodies:
        jid = pm.addJoint(b.parent, pin.JointModelRZ(), pin.SE3(b.rotation, b.translation), b.joint_name)
        I = b.inertia
        pm.appendBodyToJoint(jid, pin.Inertia(I.mass, I.com, I.inertia), pin.SE3.Identity())
    cm = pin.RigidConstraintModel(
        pin.ContactType.CONTACT_3D,
        pm,
        pm.getJointId("coupler"),
        pin.SE3(np.eye(3), np.array([0.8, 0, 0])),
        pm.getJointId("rocker"),
        pin.SE3(np.eye(3), np.array([0.6, 0, 0])),
        pin.ReferenceFrame.LOCAL,
    )
    cms = pin.StdVec_RigidConstraintModel()
    cms.append(cm)
    cds = pin.StdVec_RigidConstraintData()
    cds.append(cm.createData())
    pd = pm.createData()
    pin.initConstraintDynamics(pm, pd, cms, cds)
    prox = pin.ProximalSettings(1e-12, 1e-12, 20)
    return lambda qs, vs, ts: pin.constraintDynamics(pm, pd, qs, vs, ts, cms, cds, prox)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer sizes and repetitions (a smoke test)")
    args = ap.parse_args(argv)
    sizes = [4, 12, 24] if args.quick else list(range(4, 25, 4))
    repeats, target = (5, 1e-3) if args.quick else (21, 2e-3)
    print(f"# Cluster forward dynamics — {platform.processor() or platform.machine()}, "
          f"loopdyn {loopdyn.__version__}, median µs per call\n")  # fmt: skip
    header = None
    growth: dict = {}
    id_rows = []
    for name, build in (("GT", gt_chain), ("PBT", pbt_chain)):
        per_method: dict = {}
        for n in sizes:
            model = build(n, seed=0)
            rng = np.random.default_rng(n)
            q = loopdyn.random_configuration(model, rng)
            v, tau = rng.normal(size=model.nv), rng.normal(size=model.nv)
            fns = _contenders(model, q, v, tau)
            if header is None:
                header = list(fns)
                print("| robot | N | " + " | ".join(header) + " | max rel. diff |")
                print("|---|---|" + "---|" * (len(header) + 1))
            t = interleaved(fns, repeats=repeats, target=target)
            for k, x in t.items():
                per_method.setdefault(k, []).append(x)
            ti = interleaved(_id_contenders(model, q, v, tau), repeats=repeats, target=target)
            for k, x in ti.items():
                per_method.setdefault(k, []).append(x)
            id_rows.append((name, n, ti))
            cells = [f"{t[k] * 1e6:.1f}" if k in t else "—" for k in header]
            print(
                f"| {name} | {n} | " + " | ".join(cells) + f" | {_check(model, q, v, tau):.1e} |", flush=True
            )
        growth[name] = _growth(per_method, sizes)

    print("\n| robot | N | projected RNEA | C-RNEA | ratio |\n|---|---|---|---|---|")
    for name, n, ti in id_rows:
        r = ti["projected RNEA"] / ti["C-RNEA"]
        print(f"| {name} | {n} | {ti['projected RNEA'] * 1e6:.1f} | {ti['C-RNEA'] * 1e6:.1f} | {r:.1f}× |")
    methods = list(next(iter(growth.values())))
    print("\nFitted growth exponent p (time ∝ N^p) over N = " + ", ".join(map(str, sizes)) + ":\n")
    print("| robot | " + " | ".join(methods) + " |\n|---|" + "---|" * len(methods))
    for name, g in growth.items():
        print(f"| {name} | " + " | ".join(f"{g[k]:.2f}" for k in methods) + " |")

    m = _four_bar()
    rng = np.random.default_rng(0)
    q = loopdyn.random_configuration(m, rng)
    v, tau = rng.normal(size=m.nv), rng.normal(size=m.nv)
    qs, vs, G, g = spanning_state(m, q, v)
    fns = _contenders(m, q, v, tau)
    pin_fd = _pinocchio_four_bar(m)
    note = "Pinocchio not installed"
    if pin_fd is not None:
        ts = lift_forces(G, tau)
        fns["Pinocchio constraintDynamics"] = lambda: pin_fd(qs, vs, ts)
        _, qdd = projection_forward_dynamics(m, q, v, tau, full_output=True)
        note = f"Pinocchio vs projection: max |Δq̈| = {np.max(np.abs(pin_fd(qs, vs, ts) - qdd)):.1e}"
    t = interleaved(fns, repeats=repeats, target=target)
    print("\n| four-bar (point loop) | " + " | ".join(t) + " |")
    print("|---|" + "---|" * len(t))
    print("| µs per call | " + " | ".join(f"{x * 1e6:.1f}" for x in t.values()) + " |")
    print(f"\n{note}")


if __name__ == "__main__":
    main()
