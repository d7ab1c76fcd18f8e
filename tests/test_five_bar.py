"""The built-in five-bar (``loopdyn.robots.five_bar``): its geometry, and C-ABA, the cluster mass
matrix and C-RNEA against an oracle built independently from Pinocchio on the spanning tree (the loop
closed by the tips' point constraint: the null-space map G from Pinocchio's frame Jacobians, H = GᵀMG,
C = Gᵀ(c + M g)); energy conservation of passive motion; the registry entry."""

from __future__ import annotations

import numpy as np
import pytest

import loopdyn
from loopdyn import robots

TOL = 1e-9
L_GROUND, L_CRANK, L_DISTAL = 0.15, 0.20, 0.25
IND, DEP = [0, 2], [1, 3]  # spanning joints: left_motor, left_elbow, right_motor, right_elbow


def close(a, b, what, rtol=TOL):
    a, b = np.asarray(a), np.asarray(b)
    scale = max(1.0, float(np.max(np.abs(b))))
    err = float(np.max(np.abs(a - b)))
    assert err <= rtol * scale, f"{what}: max error {err:.3g} (scale {scale:.3g})"
    return err / scale


def test_structure_and_registry():
    m = robots.five_bar()
    assert (m.nbodies, len(m.clusters().clusters), m.nq, m.nv) == (4, 1, 4, 2)
    assert [b.joint_name for b in m.bodies] == ["left_motor", "left_elbow", "right_motor", "right_elbow"]
    assert m.mass == pytest.approx(2 * 0.30 + 2 * 0.20, rel=1e-15)
    assert "five_bar" in robots.names() and "five_bar" in robots.__all__
    assert robots.build("five_bar").nv == 2
    info = robots.registry.info("five_bar")
    assert (info.bodies, info.clusters, info.nv, info.nq) == (4, 1, 2, 4)
    with pytest.raises(loopdyn.errors.UnsupportedFeatureError):
        robots.build("five_bar", "approximate")  # no rotors to drop


# ----------------------------------------------------------------------------------------------
# the Pinocchio oracle on the spanning tree
def _pinocchio(pin, m):
    """The spanning tree as a Pinocchio model (revolute joints about y), with the two tip frames."""
    pm = pin.Model()
    pm.gravity = pin.Motion(np.r_[m.gravity, 0.0, 0.0, 0.0])
    for i, b in enumerate(m.bodies, start=1):
        assert b.joint.kind == "revolute" and np.allclose(b.joint.axis_array(), [0, 1, 0])
        jid = pm.addJoint(b.parent, pin.JointModelRY(), pin.SE3(b.rotation, b.translation), b.joint_name)
        assert jid == i
        I = b.inertia
        pm.appendBodyToJoint(jid, pin.Inertia(I.mass, I.com, I.inertia), pin.SE3.Identity())
    tip = pin.SE3(np.eye(3), np.array([L_DISTAL, 0.0, 0.0]))
    fl = pm.addFrame(pin.Frame("tip_left", pm.getJointId("left_elbow"), tip, pin.FrameType.OP_FRAME))
    fr = pm.addFrame(pin.Frame("tip_right", pm.getJointId("right_elbow"), tip, pin.FrameType.OP_FRAME))
    return pm, fl, fr


def _g_map(pin, pm, fl, fr, q):
    """``(G, J)``: the tips' point constraint in the plane (rows x and z of ``J_left − J_right``, world
    axes) and its null-space map ``G = [1; −J_D⁻¹ J_I]`` at q."""
    kd = pm.createData()
    world = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
    pin.computeJointJacobians(pm, kd, q)
    pin.updateFramePlacements(pm, kd)
    J = (pin.getFrameJacobian(pm, kd, fl, world) - pin.getFrameJacobian(pm, kd, fr, world))[[0, 2]]
    G = np.zeros((4, 2))
    G[IND] = np.eye(2)
    G[DEP] = -np.linalg.solve(J[:, DEP], J[:, IND])
    return G, J


def _closed_chain(pin, pm):
    """Pinocchio's closed chain on the spanning tree: the loop closed by a 3-D contact between the tips
    (LOCAL), ``(constraint models, constraint datas, data, proximal settings)`` ready for
    ``constraintDynamics`` (the y row is redundant in the plane: proximal iterations)."""
    tip = pin.SE3(np.eye(3), np.array([L_DISTAL, 0.0, 0.0]))
    cm = pin.RigidConstraintModel(pin.ContactType.CONTACT_3D, pm, pm.getJointId("left_elbow"), tip,
                                  pm.getJointId("right_elbow"), tip, pin.ReferenceFrame.LOCAL)  # fmt: skip
    cms, cds = pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData()
    cms.append(cm)
    cds.append(cm.createData())
    pd = pm.createData()
    pin.initConstraintDynamics(pm, pd, cms, cds)
    return cms, cds, pd, pin.ProximalSettings(1e-14, 1e-12, 100)


def _oracle(pin, pm, fl, fr, q, v):
    """H = GᵀMG, C = Gᵀ(c + M g), and the spanning velocity, from the tips' point constraint in the
    plane (rows x and z of p_left − p_right; y is identically satisfied)."""
    pd = pm.createData()
    world = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
    G, J = _g_map(pin, pm, fl, fr, q)
    vs = G @ v
    pin.forwardKinematics(pm, pd, q, vs, np.zeros(4))
    pin.updateFramePlacements(pm, pd)
    acc = pin.getFrameClassicalAcceleration
    gamma = (acc(pm, pd, fl, world).linear - acc(pm, pd, fr, world).linear)[[0, 2]]
    g = np.zeros(4)
    g[DEP] = -np.linalg.solve(J[:, DEP], gamma)
    M = pin.crba(pm, pd, q)
    M = np.triu(M) + np.triu(M, 1).T
    c = pin.rnea(pm, pd, q, vs, np.zeros(4))
    return G.T @ M @ G, G.T @ (c + M @ g), vs, J


def test_geometry_against_pinocchio():
    """At q = 0 the mechanism is assembled symmetric: the tips meet on the symmetry axis at the height
    the link lengths give (crank at 120°), the cranks' pivots 0.15 m apart."""
    import pinocchio as pin
    m = robots.five_bar()
    pm, fl, fr = _pinocchio(pin, m)
    pd = pm.createData()
    pin.framesForwardKinematics(pm, pd, np.zeros(4))
    elbow_x = -L_GROUND / 2 + L_CRANK * np.cos(2 * np.pi / 3)
    height = L_CRANK * np.sin(2 * np.pi / 3) + np.sqrt(L_DISTAL**2 - elbow_x**2)
    for f in (fl, fr):
        close(pd.oMf[f].translation, [0.0, 0.0, height], "tip at q = 0", 1e-14)
    close(pd.oMi[1].translation, [-L_GROUND / 2, 0, 0], "left pivot", 1e-15)
    close(pd.oMi[3].translation, [L_GROUND / 2, 0, 0], "right pivot", 1e-15)
    close(pd.oMi[2].translation - pd.oMi[1].translation, L_CRANK * np.array([-0.5, 0, np.sqrt(3) / 2]),
          "left crank", 1e-15)  # fmt: skip


def test_dynamics_against_the_spanning_tree_oracle():
    import pinocchio as pin
    m = robots.five_bar()
    d = m.create_data()
    pm, fl, fr = _pinocchio(pin, m)
    rng = np.random.default_rng(3)
    worst = {"H": 0.0, "C-RNEA": 0.0, "C-ABA": 0.0}
    checked = 0
    for _ in range(30):
        q = loopdyn.random_configuration(m, rng)
        v, a, tau = rng.normal(size=2), rng.normal(size=2), rng.normal(size=2)
        H, C, vs, J = _oracle(pin, pm, fl, fr, q, v)
        if np.linalg.svd(J[:, DEP], compute_uv=False).min() < 1e-3:
            continue  # near a singular pose of the random configuration
        assert np.array_equal(loopdyn.to_spanning(m, q, v)[0], q)  # the positions are the spanning angles
        close(loopdyn.to_spanning(m, q, v)[1], vs, "spanning velocity")
        worst["H"] = max(worst["H"], close(loopdyn.crba(m, d, q), H, "H = GᵀMG"))
        worst["C-RNEA"] = max(worst["C-RNEA"], close(loopdyn.rnea(m, d, q, v, a), H @ a + C, "C-RNEA"))
        ddy = np.linalg.solve(H, tau - C)
        worst["C-ABA"] = max(worst["C-ABA"], close(loopdyn.aba(m, d, q, v, tau), ddy, "C-ABA"))
        checked += 1
    assert checked >= 20, f"only {checked} of 30 random states away from a singular pose"
    print("five_bar vs the Pinocchio spanning-tree oracle, worst relative errors:", worst)


def test_against_pinocchio_constraint_dynamics():
    """C-ABA against Pinocchio's constraintDynamics on the spanning tree with the loop closed by a
    3-D contact between the tips (the y row is redundant in the plane: proximal iterations)."""
    import pinocchio as pin
    m = robots.five_bar()
    d = m.create_data()
    pm, fl, fr = _pinocchio(pin, m)
    cms, cds, pd, prox = _closed_chain(pin, pm)
    rng = np.random.default_rng(4)
    for _ in range(10):
        q = loopdyn.random_configuration(m, rng)
        v, tau = rng.normal(size=2), rng.normal(size=2)
        _, _, vs, _ = _oracle(pin, pm, fl, fr, q, v)
        ts = np.zeros(4)
        ts[IND] = tau  # the motors' torques; Gᵀ τ_span = τ since G's independent rows are the identity
        qdd = pin.constraintDynamics(pm, pd, q, vs, ts, cms, cds, prox)
        close(loopdyn.aba(m, d, q, v, tau), qdd[IND], "C-ABA vs constraintDynamics", 1e-8)


def _hanging():
    """The assembly pose mirrored through the ground line (cranks at −120° and −60°, tip below the
    ground): a closed configuration, written from the geometry alone."""
    a1 = 2 * np.pi / 3
    elbow_x = -L_GROUND / 2 + L_CRANK * np.cos(a1)
    a2 = np.arctan2(np.sqrt(L_DISTAL**2 - elbow_x**2), -elbow_x)
    return np.array([2 * a1, 2 * (a2 - a1), -2 * a1, -2 * (a2 - a1)])


@pytest.mark.parametrize(
    "case,q0,v0,h,steps",
    [
        ("no gravity, 2 s", np.zeros(4), np.array([0.6, 0.4]), 1e-3, 2000),
        ("gravity, 0.2 s", _hanging(), np.array([0.5, 0.3]), 2.5e-4, 800),
    ],
)
def test_passive_motion_conserves_energy(case, q0, v0, h, steps):
    """Passive motion integrated by RK4 (no projection) keeps the energy to 1e-8 relative and the loop
    closed to 1e-9: without gravity for 2 s from the assembly pose, and with gravity for 0.2 s (a
    fast fall from the hanging pose; longer runs reach the mechanism's singular poses, where the
    distal links align, and a passive five-bar has no stable pose away from them)."""
    from test_cluster_dynamics import _energy, _rk4

    m = robots.five_bar()
    if case.startswith("no gravity"):
        m.gravity = np.zeros(3)
    m.constraint_tolerance = 1e-4  # RK4's intermediate stages leave the constraints by O(h²)
    assert np.max(np.abs(loopdyn.constraint_residual(m, q0))) < 1e-14
    E0 = _energy(m, q0, v0)
    q1, v1 = _rk4(m, q0, v0, h, steps)
    scale = max(abs(E0), 0.5 * v0 @ loopdyn.crba(m, m.create_data(), q0) @ v0)
    assert abs(_energy(m, q1, v1) - E0) <= 1e-8 * scale, case
    assert np.max(np.abs(loopdyn.constraint_residual(m, q1))) <= 1e-9, case
    assert np.max(np.abs(q1 - q0)) > 0.5, case  # it did move


def test_aba_derivatives_against_pinocchio_closed_chain_dynamics():
    """``loopdyn.aba_derivatives`` on the five-bar against Pinocchio's closed-chain dynamics (the
    spanning tree, the loop closed by a 3-D contact between the tips, proximal iterations for its
    redundant y row), in the independent coordinates through Pinocchio's own kinematics:
    ``G = [1; −J_D⁻¹ J_I]`` from the tips' Jacobians (rows x, z) and ``v_s = G ẏ``.

    * ∂ÿ/∂ẏ = (∂q̈_s/∂v G)[I] and ∂ÿ/∂τ = ∂q̈_s/∂τ[I, I] from ``computeConstraintDynamicsDerivatives``,
      ≤ 1e-8 relative (the proximal solve's 1e-12 regularisation);
    * ∂ÿ/∂δ by 4th-order central differences of ``constraintDynamics`` along the closed curve
      ``q(ε) = loopdyn.integrate(q, ε e_j)`` with ``v_s = G(q(ε)) ẏ``, ≤ 1e-7 relative. Pinocchio's own
      ∂q̈_s/∂q is not used: with the redundant row its derivative goes through (Λ⁻¹ + μ)⁻¹ at
      μ = 1e-12 and disagrees with differences of its own ``constraintDynamics`` (measured with
      Pinocchio 4.1: by 40–420 on entries of size 140–560, while its ∂q̈_s/∂v agrees to 2e-8).

    States away from the singular poses (σ_min(J_D) ≥ 1e-2)."""
    import pinocchio as pin

    m = robots.five_bar()
    d = m.create_data()
    pm, fl, fr = _pinocchio(pin, m)
    cms, cds, pd, prox = _closed_chain(pin, pm)
    rng = np.random.default_rng(8)
    checked = 0
    worst = 0.0
    for _ in range(12):
        q = loopdyn.random_configuration(m, rng)
        v, tau = rng.normal(size=2), rng.normal(size=2)
        G, J = _g_map(pin, pm, fl, fr, q)
        if np.linalg.svd(J[:, DEP], compute_uv=False).min() < 1e-2:
            continue
        ts = np.zeros(4)
        ts[IND] = tau

        def ydd(delta, q=q, v=v, ts=ts):
            qe = loopdyn.integrate(m, q, delta)
            return pin.constraintDynamics(pm, pd, qe, _g_map(pin, pm, fl, fr, qe)[0] @ v, ts, cms, cds,
                                          prox)[IND].copy()  # fmt: skip

        h = 1e-3
        cols = []
        for e in np.eye(2):
            cols.append((8 * (ydd(h * e) - ydd(-h * e)) - (ydd(2 * h * e) - ydd(-2 * h * e))) / (12 * h))
        pin.constraintDynamics(pm, pd, q, G @ v, ts, cms, cds, prox)
        pin.computeConstraintDynamicsDerivatives(pm, pd, cms, cds, prox)
        dq, dv, dt = loopdyn.aba_derivatives(m, d, q, v, tau)
        worst = max(worst, close(dq, np.column_stack(cols), "dddq_dq vs differences of Pinocchio's", 1e-7))
        worst = max(worst, close(dv, (pd.ddq_dv @ G)[IND], "dddq_dv vs Pinocchio's closed chain", 1e-8))
        worst = max(worst, close(dt, pd.ddq_dtau[np.ix_(IND, IND)], "dddq_dtau vs Pinocchio's", 1e-8))
        checked += 1
    assert checked >= 8, f"only {checked} of 12 random states away from a singular pose"
    print("five_bar aba_derivatives vs Pinocchio's closed chain, worst relative error:", worst)
