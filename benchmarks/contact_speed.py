"""Contact dynamics and the Delassus matrix against Pinocchio, and a closed loop against Pinocchio's
constraint dynamics (issue #11 item 2).

Per-call medians measured interleaved in one process (:func:`loopdyn.bench.timing.interleaved`):

* ``constrained_forward_dynamics`` against ``pinocchio.constraintDynamics`` (RigidConstraintModel,
  LOCAL, μ = 0, one proximal iteration: the exact solve) on solo12 (four 3-D feet) and
  talos_reduced (two 6-D soles);
* ``delassus`` (PV-OSIMr) against ``pinocchio.computeDelassusMatrix`` on the same constraints;
* a planar four-bar closed by a point loop joint: ``loopdyn.aba`` on the model with the loop (C-ABA)
  against Pinocchio's ``constraintDynamics`` on the spanning tree with the loop closed by a 3-D
  constraint (the z row is redundant in the plane: proximal iterations with μ = 1e-12, as in
  ``benchmarks/cluster_dynamics.py``);
* the built-in five-bar (:func:`loopdyn.robots.five_bar`: two actuated cranks, a revolute loop joint
  between the distal links, 2 DoF) the same way: C-ABA against ``constraintDynamics`` on its spanning
  tree with the tips joined by a 3-D constraint (the y row redundant in the xz plane);
* the derivatives on the same two loops: ``aba_derivatives`` against ``constraintDynamics`` +
  ``computeConstraintDynamicsDerivatives`` on the closed spanning chain, and on the five-bar with its
  end effector held ``constrained_forward_dynamics_derivatives`` against the same calls with a
  second constraint (issue #30: "faster than Pinocchio's closed-chain constraintDynamics +
  computeConstraintDynamicsDerivatives").

Each row also checks the two results agree. A second table times ``constrained_forward_dynamics`` on a
model with loops (Mini Cheetah: geared rotors, four point feet; one compiled call) against one C-ABA
on the same model (Pinocchio has no geared-rotor constraint to compare with): the call runs one C-ABA, the
cluster PV-OSIMr on its articulated inertias and C-ABA's backward and forward passes again. Usage:
``python benchmarks/contact_speed.py [--quick]``.
"""

from __future__ import annotations

import argparse
import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

import loopdyn as ld  # noqa: E402
from loopdyn.baselines.constraints import spanning_state  # noqa: E402
from loopdyn.bench.timing import interleaved  # noqa: E402

FEET = {
    "solo12": [ld.Constraint(f, "3d") for f in ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")],
    "talos_reduced": [ld.Constraint("left_sole_link", "6d"), ld.Constraint("right_sole_link", "6d")],
}


def _pin_constraints(pin, pm, cons):
    cms, cds = pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData()
    for c in cons:
        f = pm.frames[pm.getFrameId(c.body)]
        kind = pin.ContactType.CONTACT_6D if c.kind == "6d" else pin.ContactType.CONTACT_3D
        cm = pin.RigidConstraintModel(kind, pm, f.parentJoint, f.placement, pin.ReferenceFrame.LOCAL)
        cms.append(cm)
        cds.append(cm.createData())
    return cms, cds


def _row(label, what, t, err):
    ratio = t["loopdyn"] / t["pinocchio"]
    us = f"{t['loopdyn'] * 1e6:.2f} | {t['pinocchio'] * 1e6:.2f}"
    print(f"| {label} | {what} | {us} | {ratio:.2f} | {err:.1e} |")
    return ratio


def _trees(pin, repeats, target):
    ratios = {}
    for name, cons in FEET.items():
        ratios.update(_tree(pin, name, cons, repeats, target))
    return ratios


def _tree(pin, name, cons, repeats, target):
    ratios = {}
    path, floating = ld.robots.example_robot_urdf(name)
    lm = ld.load_urdf(path, floating_base=floating)
    d = lm.create_data()
    pm = pin.buildModelFromUrdf(path, *([pin.JointModelFreeFlyer()] if floating else []))
    pd = pm.createData()
    cms, cds = _pin_constraints(pin, pm, cons)
    pin.initConstraintDynamics(pm, pd, cms, cds)
    prox = pin.ProximalSettings(1e-12, 0.0, 1)
    rng = np.random.default_rng(0)
    q = ld.random_configuration(lm, rng)
    v = rng.standard_normal(lm.nv)
    tau = rng.standard_normal(lm.nv)
    ddq, _ = ld.constrained_forward_dynamics(lm, d, q, v, tau, cons)
    err = float(np.abs(ddq - pin.constraintDynamics(pm, pd, q, v, tau, cms, cds, prox)).max())
    t = interleaved(
        {
            "loopdyn": lambda: ld.constrained_forward_dynamics(lm, d, q, v, tau, cons),
            "pinocchio": lambda: pin.constraintDynamics(pm, pd, q, v, tau, cms, cds, prox),
        },
        repeats=repeats,
        target=target,
    )
    ratios[(name, "constrained_forward_dynamics")] = _row(name, "constrained_forward_dynamics", t, err)
    W = ld.delassus(lm, d, q, cons)
    err = float(np.abs(W - pin.computeDelassusMatrix(pm, pd, q, cms, cds, 0.0)).max())
    t = interleaved(
        {
            "loopdyn": lambda: ld.delassus(lm, d, q, cons),
            "pinocchio": lambda: pin.computeDelassusMatrix(pm, pd, q, cms, cds, 0.0),
        },
        repeats=repeats,
        target=target,
    )
    ratios[(name, "delassus")] = _row(name, "delassus", t, err)
    return ratios


def _four_bar():
    """A planar four-bar (crank independent) closed by a point loop joint; gravity in its plane."""
    m = ld.Model("four-bar", gravity=(0.0, -9.81, 0.0))
    z = (0.0, 0.0, 1.0)
    inertia = ld.Inertia(1.0, (0.1, 0.0, 0.0), np.diag([0.01, 0.02, 0.02]))
    m.add_body("crank", 0, ld.Revolute(z), None, inertia)
    m.add_body("coupler", "crank", ld.Revolute(z), (np.eye(3), [0.3, 0, 0]), inertia, independent=False)
    m.add_body("rocker", 0, ld.Revolute(z), (np.eye(3), [0.7, 0, 0]), inertia, independent=False)
    m.add_loop("loop", "coupler", "rocker", "point", (np.eye(3), [0.8, 0, 0]), (np.eye(3), [0.6, 0, 0]))
    return m


def _loop_points(pin, model):
    """The placements of the model's one loop joint's two points in their bodies, as Pinocchio SE3s."""
    (loop,) = model.constraints
    return [pin.SE3(np.asarray(R, dtype=float), np.asarray(p, dtype=float))
            for R, p in (loop.predecessor_placement, loop.successor_placement)]  # fmt: skip


def _pin_closed_chain(pin, model, joint, a, Ma, b, Mb):
    """Pinocchio's spanning tree of a planar linkage (every joint a ``joint`` revolute, from the
    loopdyn model's placements and inertias) with the loop closed by a 3-D constraint between frame
    ``Ma`` of joint ``a`` and ``Mb`` of joint ``b``: ``(model, data, constraint models and datas,
    proximal settings)``, ready for ``constraintDynamics``."""
    pm = pin.Model()
    pm.gravity = pin.Motion(np.r_[model.gravity, 0.0, 0.0, 0.0])
    for body in model.bodies:
        jid = pm.addJoint(body.parent, joint(), pin.SE3(body.rotation, body.translation), body.joint_name)
        inertia = body.inertia
        pm.appendBodyToJoint(jid, pin.Inertia(inertia.mass, inertia.com, inertia.inertia), pin.SE3.Identity())
    cm = pin.RigidConstraintModel(pin.ContactType.CONTACT_3D, pm, pm.getJointId(a), Ma, pm.getJointId(b), Mb,
                                  pin.ReferenceFrame.LOCAL)  # fmt: skip
    cms, cds = pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData()
    cms.append(cm)
    cds.append(cm.createData())
    pd = pm.createData()
    pin.initConstraintDynamics(pm, pd, cms, cds)
    return pm, pd, cms, cds, pin.ProximalSettings(1e-12, 1e-12, 20)


def _c_aba_vs_constraint_dynamics(pin, model, closed, q, v, tau, independent, repeats, target):
    """C-ABA against constraintDynamics on the closed spanning chain ``closed`` (from
    :func:`_pin_closed_chain`), the spanning joint forces zero but on the ``independent`` joints:
    ``(interleaved times, largest difference of the accelerations)``."""
    pm, pd, cms, cds, prox = closed
    data = model.create_data()
    qs, vs, _, _ = spanning_state(model, q, v)
    ts = np.zeros(model.spanning_nv)
    ts[independent] = tau
    a = ld.aba(model, data, q, v, tau)
    err = float(np.abs(a - pin.constraintDynamics(pm, pd, qs, vs, ts, cms, cds, prox)[independent]).max())
    t = interleaved(
        {
            "loopdyn": lambda: ld.aba(model, data, q, v, tau),
            "pinocchio": lambda: pin.constraintDynamics(pm, pd, qs, vs, ts, cms, cds, prox),
        },
        repeats=repeats,
        target=target,
    )
    return t, err


def _loops(pin, repeats, target):
    model = _four_bar()
    tip = _loop_points(pin, model)  # the coupler's and the rocker's ends
    closed = _pin_closed_chain(pin, model, pin.JointModelRZ, "coupler", tip[0], "rocker", tip[1])
    q = ld.random_configuration(model, 0)
    t, err = _c_aba_vs_constraint_dynamics(pin, model, closed, q, np.array([0.7]), np.array([0.3]), [0],
                                           repeats, target)  # fmt: skip
    ratios = {("four_bar", "C-ABA vs constraintDynamics"): _row("four_bar (3-D loop)", "C-ABA", t, err)}
    ratios.update(_five_bar(pin, repeats, target))
    return ratios


def _five_bar(pin, repeats, target):
    """C-ABA on the built-in five-bar against constraintDynamics on its spanning tree (revolute joints
    about y) with the distal tips joined by a 3-D constraint."""
    model = ld.robots.five_bar()
    tips = _loop_points(pin, model)
    closed = _pin_closed_chain(pin, model, pin.JointModelRY, "left_elbow", tips[0], "right_elbow", tips[1])
    rng = np.random.default_rng(0)
    q = ld.random_configuration(model, rng)
    v, tau = rng.standard_normal(2), rng.standard_normal(2)
    # the motors are the independent coordinates: G's rows 0 and 2 are the identity
    t, err = _c_aba_vs_constraint_dynamics(pin, model, closed, q, v, tau, [0, 2], repeats, target)
    return {("five_bar", "C-ABA vs constraintDynamics"): _row("five_bar (revolute loop)", "C-ABA", t, err)}


def _loop_derivatives(pin, repeats, target):
    """Derivatives on the closed loops against Pinocchio's (issue #30): ``aba_derivatives`` on the
    four-bar and the five-bar (independent coordinates) against ``constraintDynamics`` +
    ``computeConstraintDynamicsDerivatives`` on the closed spanning chain (spanning coordinates, the
    loop a 3-D constraint), and ``constrained_forward_dynamics_derivatives`` on the five-bar with its
    end effector held in the plane (rows x and z) against the same two calls with a second 3-D
    constraint at the tip. err: the largest difference of ∂q̈/∂τ at the independent coordinates
    (Pinocchio's spanning τ nonzero at the independent joints only, where G's rows are the identity).
    With the end effector held the five-bar has no motion left and ∂q̈/∂τ vanishes on both sides:
    that row's err is no check (``tests/test_contact_derivatives.py`` checks those derivatives).
    """
    ratios = {}
    four = _four_bar()
    tip = _loop_points(pin, four)
    five = ld.robots.five_bar()
    tips = _loop_points(pin, five)
    held = [ld.Constraint("end_effector", np.eye(6)[[0, 2]])]
    cases = (
        ("four_bar", four, (pin.JointModelRZ, "coupler", tip[0], "rocker", tip[1]), [0], None),
        ("five_bar", five, (pin.JointModelRY, "left_elbow", tips[0], "right_elbow", tips[1]), [0, 2], None),
        ("five_bar", five, (pin.JointModelRY, "left_elbow", tips[0], "right_elbow", tips[1]), [0, 2], held),
    )
    for name, model, chain, ind, cons in cases:
        pm, pd, cms, cds, prox = _pin_closed_chain(pin, model, *chain)
        if cons:  # the end effector: the left tip as a second 3-D constraint (its y row redundant)
            elbow, local = pm.getJointId("left_elbow"), pin.ReferenceFrame.LOCAL
            cm = pin.RigidConstraintModel(pin.ContactType.CONTACT_3D, pm, elbow, tips[0], local)
            cms.append(cm)
            cds.append(cm.createData())
            pin.initConstraintDynamics(pm, pd, cms, cds)
        data = model.create_data()
        rng = np.random.default_rng(1)
        q = ld.random_configuration(model, rng)
        v, tau = rng.standard_normal(model.nv), rng.standard_normal(model.nv)
        qs, vs, _, _ = spanning_state(model, q, v)
        ts = np.zeros(model.spanning_nv)
        ts[ind] = tau

        def theirs(pm=pm, pd=pd, qs=qs, vs=vs, ts=ts, cms=cms, cds=cds, prox=prox):
            pin.constraintDynamics(pm, pd, qs, vs, ts, cms, cds, prox)
            pin.computeConstraintDynamicsDerivatives(pm, pd, cms, cds, prox)

        if cons:
            def ours(model=model, data=data, q=q, v=v, tau=tau, cons=cons):
                return ld.constrained_forward_dynamics_derivatives(model, data, q, v, tau, cons).dddq_dtau
        else:
            def ours(model=model, data=data, q=q, v=v, tau=tau):
                return ld.aba_derivatives(model, data, q, v, tau)[2]

        theirs()
        err = float(np.abs(ours() - np.asarray(pd.ddq_dtau)[np.ix_(ind, ind)]).max())
        t = interleaved({"loopdyn": ours, "pinocchio": theirs}, repeats=repeats, target=target)
        what = "cfd derivatives (end effector held)" if cons else "aba_derivatives"
        ratios[(name, what + " vs constraintDynamics + derivatives")] = _row(
            f"{name} (closed chain{' + end effector' if cons else ''})", what, t, err
        )
    return ratios


def _loop_contact(repeats, target):
    """constrained_forward_dynamics on Mini Cheetah (loops: rotor clusters) against its C-ABA."""
    model = ld.robots.mini_cheetah()
    data = model.create_data()
    feet = [
        ld.Constraint(f"{leg}_knee_link", "3d", (np.eye(3), [0.0, 0.0, -0.2]))
        for leg in ("FL", "FR", "HL", "HR")
    ]
    rng = np.random.default_rng(0)
    q = ld.random_configuration(model, rng)
    v, tau = rng.standard_normal(model.nv), rng.standard_normal(model.nv)
    t = interleaved(
        {
            "cfd": lambda: ld.constrained_forward_dynamics(model, data, q, v, tau, feet),
            "c-aba": lambda: ld.aba(model, data, q, v, tau),
        },
        repeats=repeats,
        target=target,
    )
    print("\n| robot | constrained_forward_dynamics µs | C-ABA µs | ratio |")
    print("|---|---:|---:|---:|")
    cfd, aba = t["cfd"], t["c-aba"]
    print(f"| mini_cheetah (4 feet, loops) | {cfd * 1e6:.2f} | {aba * 1e6:.2f} | {cfd / aba:.2f} |")
    return {("mini_cheetah", "constrained_forward_dynamics / C-ABA"): cfd / aba}


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="fewer repetitions (a smoke test)")
    args = ap.parse_args(argv)
    try:
        import pinocchio as pin
    except ImportError:
        print("pinocchio is not installed: nothing to compare against")
        return {}
    repeats, target = (5, 1e-3) if args.quick else (21, 2e-3)
    print(f"# Contact dynamics and Delassus: loopdyn {ld.__version__} vs Pinocchio {pin.__version__}\n")
    print("median µs per call, interleaved; err = largest |difference| of the results\n")
    print("| robot | function | loopdyn µs | Pinocchio µs | ratio | err |")
    print("|---|---|---:|---:|---:|---:|")
    ratios = _trees(pin, repeats, target)
    ratios.update(_loops(pin, repeats, target))
    ratios.update(_loop_derivatives(pin, repeats, target))
    ratios.update(_loop_contact(repeats, target))
    return ratios


if __name__ == "__main__":
    main()
