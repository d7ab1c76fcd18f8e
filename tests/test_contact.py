"""Constrained forward dynamics (``constrained_forward_dynamics``) against Pinocchio's
``constraintDynamics`` (solo12 on four point feet, talos_reduced on two 6D soles), the constraint
accelerations, the equations of motion, redundant constraints with damping, and no constraints."""

from __future__ import annotations

import numpy as np
import pytest
import trees
from test_delassus import rel_err

from loopdyn import Constraint, aba, delassus, forward_kinematics, frame_velocity
from loopdyn.constraint_rows import jacobian as rows_jacobian
from loopdyn.constraint_rows import prepare
from loopdyn.contact import constrained_forward_dynamics, constraint_acceleration
from loopdyn.errors import InputError, RedundantConstraintsError, ShapeError

TOL = 1e-8

ROBOTS = {
    "solo12": [Constraint(f, "3d") for f in ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")],
    "talos_reduced": [Constraint("left_sole_link", "6d"), Constraint("right_sole_link", "6d")],
}


def pin_contacts(pin, pm, cons):
    cms, cds = pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData()
    for c in cons:
        f = pm.frames[pm.getFrameId(c.body)]
        M = f.placement
        if c.placement is not None:
            M = M * pin.SE3(np.array(c.placement[0]).reshape(3, 3), np.array(c.placement[1]))
        ct = pin.ContactType.CONTACT_6D if c.kind == "6d" else pin.ContactType.CONTACT_3D
        cm = pin.RigidConstraintModel(ct, pm, f.parentJoint, M, pin.ReferenceFrame.LOCAL)
        cms.append(cm)
        cds.append(cm.createData())
    return cms, cds


def jacobian(lm, d, q, cons):
    return rows_jacobian(lm, d, q, prepare(lm, cons))


@pytest.mark.parametrize("robot", list(ROBOTS))
def test_vs_pinocchio_constraint_dynamics(robot):
    import pinocchio as pin
    lm, pm = trees.robot_case(robot)
    d = lm.create_data()
    cons = ROBOTS[robot]
    cms, cds = pin_contacts(pin, pm, cons)
    pd = pm.createData()
    pin.initConstraintDynamics(pm, pd, cms, cds)
    probe = pin.Model(pm)  # a copy with one frame per constraint, to read Pinocchio's accelerations
    fids = [
        probe.addFrame(pin.Frame(f"c{k}", cm.joint1_id, 0, cm.joint1_placement, pin.FrameType.OP_FRAME))
        for k, cm in enumerate(cms)
    ]
    probe_data = probe.createData()
    rng = np.random.default_rng(2)
    for _ in range(4):
        q, v, tau = trees.random_state(rng, lm)
        ddq, lam = constrained_forward_dynamics(lm, d, q, v, tau, cons)
        prox = pin.ProximalSettings(1e-14, 1e-12, 100)
        ddq_p = pin.constraintDynamics(pm, pd, q, v, tau, cms, cds, prox)
        assert rel_err(ddq, ddq_p) < TOL
        assert rel_err(lam, np.asarray(pd.lambda_c)) < TOL
        # the constraint frames do not accelerate (Pinocchio's own frame accelerations)
        pin.forwardKinematics(probe, probe_data, q, v, ddq)
        for c, fid in zip(cons, fids, strict=True):
            if c.kind == "3d":
                acc = pin.getFrameClassicalAcceleration(probe, probe_data, fid, pin.LOCAL).linear
            else:
                acc = pin.getFrameAcceleration(probe, probe_data, fid, pin.LOCAL).vector
            assert np.abs(acc).max() < 1e-8 * max(1.0, np.abs(ddq).max())


@pytest.mark.parametrize("robot", list(ROBOTS))
def test_desired_accelerations_and_equations_of_motion(robot):
    lm, _ = trees.robot_case(robot, with_pinocchio=False)
    d = lm.create_data()
    cons = ROBOTS[robot]
    m = sum(c.dim for c in cons)
    rng = np.random.default_rng(6)
    for _ in range(3):
        q, v, tau = trees.random_state(rng, lm)
        k = rng.normal(size=m)
        f_ext = rng.normal(size=(lm.njoints, 6))
        ddq, lam = constrained_forward_dynamics(lm, d, q, v, tau, cons, desired=k, f_ext=f_ext)
        assert rel_err(constraint_acceleration(lm, d, q, v, ddq, cons), k) < TOL
        J = jacobian(lm, d, q, cons)
        assert rel_err(aba(lm, d, q, v, tau + J.T @ lam, f_ext), ddq) < TOL
        # damped form: J ddq + γ = k − μ λ exactly
        mu = 1e-3
        ddq_m, lam_m = constrained_forward_dynamics(lm, d, q, v, tau, cons, desired=k, mu=mu, f_ext=f_ext)
        assert rel_err(constraint_acceleration(lm, d, q, v, ddq_m, cons), k - mu * lam_m) < TOL
        assert rel_err(aba(lm, d, q, v, tau + J.T @ lam_m, f_ext), ddq_m) < TOL


def test_classical_acceleration_convention_3d():
    """3D rows: the classical acceleration of the point (spatial linear + ω × v); 6D: spatial."""
    lm, _ = trees.robot_case("solo12", with_pinocchio=False)
    d = lm.create_data()
    rng = np.random.default_rng(9)
    q, v, _ = trees.random_state(rng, lm)
    a = rng.normal(size=lm.nv)
    c3, c6 = Constraint("FL_FOOT", "3d"), Constraint("FL_FOOT", "6d")
    acc3 = constraint_acceleration(lm, d, q, v, a, [c3])
    acc6 = constraint_acceleration(lm, d, q, v, a, [c6])
    forward_kinematics(lm, d, q, v)
    vel = frame_velocity(lm, d, "FL_FOOT")
    assert rel_err(acc3, acc6[:3] + np.cross(vel[3:], vel[:3])) < 1e-12


def test_redundant_constraints():
    """3D + 6D on the same sole: mu = 0 raises, mu > 0 gives the accelerations of the 6D-only
    problem when the desired accelerations are consistent."""
    lm, _ = trees.robot_case("talos_reduced", with_pinocchio=False)
    d = lm.create_data()
    rng = np.random.default_rng(12)
    base = ROBOTS["talos_reduced"]
    cons = [*base, Constraint("left_sole_link", "3d")]
    for _ in range(2):
        q, v, tau = trees.random_state(rng, lm)
        with pytest.raises(RedundantConstraintsError, match="mu > 0"):
            constrained_forward_dynamics(lm, d, q, v, tau, cons)
        forward_kinematics(lm, d, q, v)
        vel = frame_velocity(lm, d, "left_sole_link")
        k = np.zeros(15)
        k[12:] = np.cross(vel[3:], vel[:3])  # the point's classical acceleration when the sole is welded
        ddq_ref, lam_ref = constrained_forward_dynamics(lm, d, q, v, tau, base)
        ddq, lam = constrained_forward_dynamics(lm, d, q, v, tau, cons, desired=k, mu=1e-9)
        assert np.all(np.isfinite(ddq)) and np.all(np.isfinite(lam))
        assert rel_err(ddq, ddq_ref) < 1e-6
        assert rel_err(constraint_acceleration(lm, d, q, v, ddq, cons), k) < 1e-6
        # the total wrench on the left sole is the same (split between the two constraints)
        J = jacobian(lm, d, q, cons)
        Jb = jacobian(lm, d, q, base)
        assert rel_err(J.T @ lam, Jb.T @ lam_ref) < 1e-6


def test_no_constraints_is_aba():
    rng = np.random.default_rng(4)
    for floating in (False, True):
        lm, _ = trees.random_tree(rng, 12, floating=floating, with_pinocchio=False)
        d = lm.create_data()
        q, v, tau = trees.random_state(rng, lm)
        f_ext = rng.normal(size=(lm.njoints, 6))
        ddq, lam = constrained_forward_dynamics(lm, d, q, v, tau, [], f_ext=f_ext)
        assert lam.shape == (0,)
        assert np.array_equal(ddq, aba(lm, d, q, v, tau, f_ext))


def test_random_trees_consistency():
    """Random trees with mixed constraints: ddq solves the KKT system of the dense reference."""
    from test_delassus import random_constraints

    rng = np.random.default_rng(14)
    for n, floating in [(6, False), (15, True), (25, True)]:
        lm, _ = trees.random_tree(rng, n, floating=floating, with_pinocchio=False)
        d = lm.create_data()
        cons = random_constraints(rng, lm, 3, frames_only=True)
        q, v, tau = trees.random_state(rng, lm)
        mu = 1e-6  # random constraint sets may be redundant
        ddq, lam = constrained_forward_dynamics(lm, d, q, v, tau, cons, mu=mu)
        J = jacobian(lm, d, q, cons)
        G = delassus(lm, d, q, cons, method="dense")
        a0 = aba(lm, d, q, v, tau)
        rhs = -constraint_acceleration(lm, d, q, v, a0, cons)
        assert rel_err(lam, np.linalg.solve(G + mu * np.eye(len(G)), rhs)) < 1e-6
        assert rel_err(aba(lm, d, q, v, tau + J.T @ lam), ddq) < TOL


def test_errors():
    lm, _ = trees.robot_case("solo12", with_pinocchio=False)
    d = lm.create_data()
    rng = np.random.default_rng(1)
    q, v, tau = trees.random_state(rng, lm)
    cons = ROBOTS["solo12"]
    with pytest.raises(ShapeError):
        constrained_forward_dynamics(lm, d, q, v, tau, cons, desired=np.zeros(5))
    for bad in (-1.0, np.nan, "x"):
        with pytest.raises(InputError):
            constrained_forward_dynamics(lm, d, q, v, tau, cons, mu=bad)
    with pytest.raises(RedundantConstraintsError):
        constrained_forward_dynamics(lm, d, q, v, tau, [Constraint("universe", "3d")])
    with pytest.raises(ShapeError):
        constrained_forward_dynamics(lm, d, q, v[:-1], tau, cons)
    from cluster_models import random_cluster_model

    cm = random_cluster_model(2, n_blocks=2)
    z = np.zeros(cm.nv)
    with pytest.raises(ShapeError):  # models with loops are checked the same way
        constrained_forward_dynamics(
            cm, cm.create_data(), np.zeros(cm.nq), z[:-1], z, [Constraint(cm.bodies[-1].name, "3d")]
        )
