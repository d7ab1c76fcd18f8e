"""loopdyn.partition: multi-DoF joints as chains of 1-DoF sub-hinges separated by massless bodies.

Checked against the unpartitioned model (Jain's Lemma 2.1: the same physics at the physical bodies,
spec §5.1 item 1) through the coordinate map, against Pinocchio for the partitioned model itself,
and the map against finite differences and loopdyn.integrate.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import trees
from trees import assert_close

import loopdyn
from loopdyn.errors import GimbalLockError, ModelError, NonFiniteError, ShapeError, UnsupportedFeatureError
from loopdyn.model import FreeFlyer, Revolute, Spherical
from loopdyn.spatial import Inertia

# (tree index, free-flyer rotation): trees with spherical joints, free flyers or both
CASES = [(3, "spherical"), (4, "spherical"), (4, "euler"), (9, "spherical"), (9, "euler"),
         (18, "spherical"), (19, "euler"), (21, "spherical")]


def _rel(a, b):
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def _state(lm, mp, rng):
    """A random state away from the gimbal singularities of the Euler sub-hinges."""
    while True:
        q, v, a = trees.random_state(rng, lm)
        qp = mp.to_partitioned_q(q)
        if all(abs(math.cos(qp[j.iq_p + (4 if j.kind == "free-flyer" else 1)])) > 0.2
               for j in mp.joints if j.euler):
            return q, v, a, qp


@pytest.mark.parametrize("index,rot", CASES, ids=[f"tree{i}-{r}" for i, r in CASES])
def test_partitioned_model_is_the_same_mechanism(index, rot):
    lm, _ = trees.tree_case(index, with_pinocchio=False)
    lp, mp = loopdyn.partition(lm, free_flyer_rotation=rot)
    n_multi = sum(b.joint.code in (loopdyn.model.SPHERICAL, loopdyn.model.FREEFLYER) for b in lm.bodies)
    assert len(mp.joints) == n_multi > 0
    assert all(b.joint.nv == 1 or b.joint.code == loopdyn.model.SPHERICAL for b in lp.bodies)
    assert all(lp.bodies[k - 1].inertia.mass == 0.0 for k in mp.massless_bodies)
    assert lp.nv == lm.nv and lp.nbodies == lm.nbodies + len(mp.massless_bodies)
    d, dp = lm.create_data(), lp.create_data()
    rng = np.random.default_rng(index)
    bm = mp.body_map
    for _ in range(2):
        q, v, a, qp = _state(lm, mp, rng)
        vp, ap = mp.to_partitioned_v(q, v), mp.to_partitioned_a(q, v, a)
        T = mp.velocity_map(qp)
        assert_close(T @ vp, v, rtol=1e-12, atol=1e-12)
        # M_p = Tᵀ M T (Eq. 2 ordering is T's), C through rnea, ABA accelerations (1e-10 relative)
        M, Mp = loopdyn.crba(lm, d, q), loopdyn.crba(lp, dp, qp)
        assert _rel(Mp, T.T @ M @ T) < 1e-10
        tau = loopdyn.rnea(lm, d, q, v, a)
        assert _rel(loopdyn.rnea(lp, dp, qp, vp, ap), mp.to_partitioned_tau(q, tau)) < 1e-10
        assert _rel(loopdyn.aba(lp, dp, qp, vp, mp.to_partitioned_tau(q, tau)), ap) < 1e-10
        nle, nlep = loopdyn.nonlinear_effects(lm, d, q, v), loopdyn.nonlinear_effects(lp, dp, qp, vp)
        assert _rel(nlep, T.T @ (nle + M @ mp.from_partitioned_a(qp, vp, np.zeros(lp.nv)))) < 1e-10
        # body placements, velocities, accelerations at the physical bodies; frames by name
        loopdyn.forward_kinematics(lm, d, q, v, a)
        loopdyn.forward_kinematics(lp, dp, qp, vp, ap)
        assert_close(dp.oMi[bm], d.oMi, rtol=1e-10, atol=1e-12, what="placements")
        assert_close(dp.v[bm], d.v, rtol=1e-10, atol=1e-10, what="velocities")
        assert_close(dp.a[bm], d.a, rtol=1e-10, atol=1e-9, what="accelerations")
        for f in lm.frames[1:]:
            assert_close(loopdyn.frame_placement(lp, dp, f.name), loopdyn.frame_placement(lm, d, f.name),
                         rtol=1e-10, atol=1e-12, what=f"frame {f.name}")
        # compliances (Eq. 24) at physical bodies
        Y, Yp = loopdyn.body_compliances(lm, d, q), loopdyn.body_compliances(lp, dp, qp)
        assert _rel(Yp[bm], Y) < 1e-10


@pytest.mark.parametrize("index,rot", [(7, "euler"), (10, "spherical"), (15, "spherical")])
def test_partitioned_model_matches_pinocchio(index, rot):
    """The partitioned model is an ordinary tree with massless bodies: Pinocchio agrees on it."""
    import pinocchio as pin
    lm, _ = trees.tree_case(index, with_pinocchio=False)
    lp, mp = loopdyn.partition(lm, free_flyer_rotation=rot)
    pm = pin.Model()
    ids = [0]
    for b in lp.bodies:
        j = b.joint
        if j.code == loopdyn.model.SPHERICAL:
            jm = pin.JointModelSpherical()
        elif j.code == loopdyn.model.PRISMATIC:
            jm = pin.JointModelPrismaticUnaligned(np.array(j.axis))
        elif j.code == loopdyn.model.REVOLUTE:
            jm = pin.JointModelRevoluteUnaligned(np.array(j.axis))
        else:
            raise AssertionError(f"unexpected joint {j.kind}")
        jid = pm.addJoint(ids[b.parent], jm, pin.SE3(b.rotation, b.translation), b.joint_name)
        inertia = pin.Inertia(b.inertia.mass, b.inertia.com, b.inertia.inertia)
        pm.appendBodyToJoint(jid, inertia, pin.SE3.Identity())
        ids.append(jid)
    pd = pm.createData()
    rng = np.random.default_rng(1)
    q, v, a, qp = _state(lm, mp, rng)
    vp = mp.to_partitioned_v(q, v)
    taup = rng.normal(size=lp.nv)
    dp = lp.create_data()
    assert _rel(loopdyn.aba(lp, dp, qp, vp, taup), pin.aba(pm, pd, qp, vp, taup)) < 1e-9
    Mpin = pin.crba(pm, pd, qp)
    Mpin = np.triu(Mpin) + np.triu(Mpin, 1).T
    assert _rel(loopdyn.crba(lp, dp, qp), Mpin) < 1e-10


@pytest.mark.parametrize("index,rot", [(9, "spherical"), (9, "euler"), (18, "spherical")])
def test_coordinate_maps(index, rot):
    lm, _ = trees.tree_case(index, with_pinocchio=False)
    lp, mp = loopdyn.partition(lm, free_flyer_rotation=rot)
    rng = np.random.default_rng(3)
    q, v, a, qp = _state(lm, mp, rng)
    # q round trip (quaternions up to sign: compare the configurations' difference)
    back = mp.from_partitioned_q(qp)
    assert np.max(np.abs(loopdyn.difference(lm, q, back))) < 1e-12
    vp = mp.to_partitioned_v(q, v)
    assert_close(mp.from_partitioned_v(qp, vp), v, rtol=1e-12, atol=1e-12)
    ap = mp.to_partitioned_a(q, v, a)
    assert_close(mp.from_partitioned_a(qp, vp, ap), a, rtol=1e-10, atol=1e-11)
    # the velocity map against finite differences of the configurations (loopdyn.integrate)
    h = 1e-6
    fd = loopdyn.difference(lm, mp.from_partitioned_q(loopdyn.integrate(lp, qp, -h * vp)),
                            mp.from_partitioned_q(loopdyn.integrate(lp, qp, h * vp))) / (2 * h)
    assert_close(fd, v, rtol=1e-6, atol=1e-7, what="v = T v_p against finite differences")
    # a = T a_p + Ṫ v_p against finite differences of v(t) = T(q_p(t)) v_p(t)
    def v_of(t):
        return mp.from_partitioned_v(loopdyn.integrate(lp, qp, t * vp + 0.5 * t * t * ap), vp + t * ap)

    fd_a = (v_of(h) - v_of(-h)) / (2 * h)
    assert_close(fd_a, a, rtol=1e-6, atol=1e-6, what="a against finite differences")
    # τ: same power
    tau = rng.normal(size=lm.nv)
    taup = mp.to_partitioned_tau(q, tau)
    assert abs(taup @ vp - tau @ v) < 1e-10 * max(1.0, abs(tau @ v))
    assert_close(mp.from_partitioned_tau(qp, taup), tau, rtol=1e-10, atol=1e-11)


def test_gimbal_singularity_is_reported_by_the_maps():
    m = loopdyn.Model("g")
    m.add_body("b", 0, Spherical(), None, Inertia(1.0, (0.1, 0.2, 0.3), np.diag([0.1, 0.2, 0.3])),
               joint_name="shoulder")
    lp, mp = loopdyn.partition(m)
    qp = np.array([0.3, math.pi / 2, 0.2])
    q = mp.from_partitioned_q(qp)
    with pytest.raises(GimbalLockError, match="shoulder"):
        mp.to_partitioned_v(q, np.ones(3))
    with pytest.raises(GimbalLockError, match="shoulder"):
        mp.from_partitioned_tau(qp, np.ones(3))
    assert mp.velocity_map(qp).shape == (3, 3)  # T itself exists (and is singular)
    assert abs(np.linalg.det(mp.velocity_map(qp))) < 1e-12
    # near the lock: the z-y-x rates of the body angular velocity ω = (1, 1, 1), from the Euler-angle
    # kinematics written here (R = Rz Ry Rx, ω = Rxᵀ Ryᵀ e_z ż + Rxᵀ e_y ẏ + e_x ẋ); cond(E) ≈ 2e3
    qp[1] = math.pi / 2 - 1e-3
    q = mp.from_partitioned_q(qp)
    vp = mp.to_partitioned_v(q, np.ones(3))

    def rot(axis, t):
        c, s = math.cos(t), math.sin(t)
        i, j = [(1, 2), (2, 0), (0, 1)][axis]
        R = np.eye(3)
        R[i, i], R[i, j], R[j, i], R[j, j] = c, -s, s, c
        return R

    Rz, Ry, Rx = rot(2, qp[0]), rot(1, qp[1]), rot(0, qp[2])
    assert_close(trees.quat_to_matrix(q), Rz @ Ry @ Rx, rtol=0, atol=1e-15, what="q of the angles")
    E = np.column_stack([Rx.T @ Ry.T @ [0, 0, 1], Rx.T @ [0, 1, 0], [1, 0, 0]])
    ref = np.linalg.solve(E, np.ones(3))
    assert np.abs(ref).max() > 100.0  # the rates are large here (the lock is near)
    assert_close(vp, ref, rtol=1e-15 * np.linalg.cond(E), atol=0, what="Euler rates near the lock")


def test_bad_input():
    m = loopdyn.Model("m")
    m.add_body("a", 0, Revolute((0, 0, 1)), None, Inertia(1.0, (0.1, 0, 0), np.eye(3) * 0.1))
    m.add_body("b", "a", Spherical(), None, Inertia(1.0, (0.1, 0, 0), np.eye(3) * 0.1), joint_name="ball")
    with pytest.raises(ModelError, match="'a'"):
        loopdyn.partition(m, ["a"])
    with pytest.raises(ModelError, match="nope"):
        loopdyn.partition(m, ["nope"])
    with pytest.raises(ModelError):
        loopdyn.partition(m, free_flyer_rotation="quaternion")
    with pytest.raises(ModelError):
        loopdyn.partition(m, 3)
    with pytest.raises(ModelError):
        loopdyn.partition(m, [3])
    with pytest.raises(ModelError):
        loopdyn.partition(m, gimbal_tolerance=2.0)
    with pytest.raises(ModelError):
        loopdyn.partition("not a model")
    clash = loopdyn.Model("clash")
    clash.add_body("b", 0, Spherical(), None, Inertia(1.0, (0.1, 0, 0), np.eye(3) * 0.1), joint_name="j")
    clash.add_frame("b__massless1", "b")
    with pytest.raises(ModelError, match="b__massless1"):
        loopdyn.partition(clash)
    lp, mp = loopdyn.partition(m, "ball")
    assert [b.joint_name for b in lp.bodies] == ["a", "ball__rz", "ball__ry", "ball__rx"]
    assert lp.frame_id("ball", "joint") >= 0
    with pytest.raises(ShapeError):
        mp.to_partitioned_q(np.zeros(3))
    with pytest.raises(NonFiniteError):
        mp.to_partitioned_v(loopdyn.neutral(m), [0.0, np.nan, 0.0, 0.0])
    with pytest.raises(ShapeError):
        mp.from_partitioned_tau(np.zeros(4), "abc")
    m2 = loopdyn.Model("arm")
    m2.add_body("base", 0, FreeFlyer(), None, Inertia(1.0), armature=0.1)
    with pytest.raises(UnsupportedFeatureError, match="armature"):
        loopdyn.partition(m2)
    lp, mp = loopdyn.partition(loopdyn.robots.four_bar())  # a model with loops, nothing to partition
    assert lp.has_constraints and not mp.joints and lp.nv == 1
    # nothing to partition: a copy with the same dynamics
    lp, mp = loopdyn.partition(m, [])
    assert lp.nbodies == m.nbodies and not mp.joints


def _loop_models():
    import cluster_models

    return [("mini_cheetah", loopdyn.robots.mini_cheetah),
            ("random-clusters", lambda: cluster_models.random_cluster_model(3, 5, floating=True))]


@pytest.mark.parametrize("label,make", _loop_models(), ids=[c[0] for c in _loop_models()])
@pytest.mark.parametrize("rot", ["spherical", "euler"])
def test_partition_of_a_model_with_loops_keeps_the_cluster_algorithms_exact(label, make, rot):
    """Massless bodies outside the clusters of a model with loops: C-ABA, C-RNEA, the cluster mass
    matrix, frame Jacobians, Delassus matrices and constrained dynamics give the same physics."""
    m = make()
    lp, mp = loopdyn.partition(m, free_flyer_rotation=rot)
    assert lp.has_constraints and len(mp.joints) >= 1 and len(lp.constraints) == len(m.constraints)
    d, dp = m.create_data(), lp.create_data()
    rng = np.random.default_rng(5)
    checked = 0
    for _ in range(3):
        q = loopdyn.random_configuration(m, rng)
        v, tau = rng.normal(size=m.nv), rng.normal(size=m.nv)
        qp = mp.to_partitioned_q(q)
        thetas = [qp[j.iq_p + (4 if j.kind == "free-flyer" else 1)] for j in mp.joints if j.euler]
        if any(abs(math.cos(t)) < 0.2 for t in thetas):
            continue
        vp = mp.to_partitioned_v(q, v)
        T = mp.velocity_map(qp)
        M, Mp = loopdyn.crba(m, d, q), loopdyn.crba(lp, dp, qp)
        assert _rel(Mp, T.T @ M @ T) < 1e-10
        a = loopdyn.aba(m, d, q, v, tau)
        ap = loopdyn.aba(lp, dp, qp, vp, mp.to_partitioned_tau(q, tau))
        assert _rel(ap, mp.to_partitioned_a(q, v, a)) < 1e-10
        assert _rel(loopdyn.rnea(lp, dp, qp, vp, ap), mp.to_partitioned_tau(q, tau)) < 1e-10
        frame = m.bodies[-1].name
        J, Jp = loopdyn.frame_jacobian(m, d, q, frame), loopdyn.frame_jacobian(lp, dp, qp, frame)
        assert _rel(Jp, J @ T) < 1e-10
        cons = [loopdyn.Constraint(frame, "6d"), loopdyn.Constraint(m.bodies[len(m.bodies) // 2].name, "3d")]
        for method in (None, "dense"):
            W = loopdyn.delassus(m, d, q, cons, method=method)
            assert _rel(loopdyn.delassus(lp, dp, qp, cons, method=method), W) < 1e-9
        ac, lam = loopdyn.constrained_forward_dynamics(m, d, q, v, tau, cons, mu=1e-8)
        acp, lamp = loopdyn.constrained_forward_dynamics(lp, dp, qp, vp, mp.to_partitioned_tau(q, tau), cons,
                                                         mu=1e-8)
        # the two constraints are nearly redundant here (damped Delassus condition number ~5e11,
        # |λ| up to 2e8): the split of λ between them is fixed only to cond·ε, the generalised
        # constraint force Jᵀλ and the accelerations (the physics) to ~1e-9
        Jc = loopdyn.constraint_jacobian(m, d, q, cons)
        assert _rel(Jc.T @ lamp, Jc.T @ lam) < 1e-8
        assert _rel(acp, mp.to_partitioned_a(q, v, ac)) < 1e-8
        F = loopdyn.mass_matrix_factor(lp, dp, qp)
        assert _rel(F.matrix(), Mp) < 1e-10
        checked += 1
    assert checked >= 2


def test_readme_section_runs():
    """The documentation's partitioning / spatial-operator example runs as written and its comments hold."""

    from doc_pages import code_blocks

    blocks = code_blocks("tutorials/partitioning")
    assert len(blocks) == 1
    ns = {"ld": loopdyn, "np": np}
    exec(compile(blocks[0], "docs/tutorials/partitioning.md", "exec"), ns)
    solo, sdata, q, v, tau = ns["solo"], ns["sdata"], ns["q"], ns["v"], ns["tau"]
    assert _rel(ns["ddq"], loopdyn.aba(solo, sdata, q, v, tau)) < 1e-10
    assert ns["Y"].shape == (solo.njoints, 6, 6)
    # Υ(k) = Jₖ M⁻¹ Jₖᵀ with Pinocchio's LOCAL joint Jacobians and CRBA (solo12: same joint order)
    import pinocchio as pin

    pm = trees.robot_case("solo12")[1]
    pd = pm.createData()
    Mpin = pin.crba(pm, pd, q)
    Minv = np.linalg.inv(np.triu(Mpin) + np.triu(Mpin, 1).T)
    pin.computeJointJacobians(pm, pd, q)
    assert pm.njoints == solo.njoints
    for k in range(1, solo.njoints):
        J = pin.getJointJacobian(pm, pd, k, pin.LOCAL)
        assert _rel(ns["Y"][k], J @ Minv @ J.T) < 1e-10, k
    M = loopdyn.crba(solo, sdata, q)
    assert _rel(ns["x"], np.linalg.solve(M, tau)) < 1e-10
    assert abs(ns["logdet"] - np.linalg.slogdet(M)[1]) < 1e-9
