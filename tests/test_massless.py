"""Massless intermediate bodies are first-class on trees (issue 12 item 1).

A spherical joint is the same mechanism as three revolutes (z, y, x) joined by two massless bodies,
and a free flyer the same as three prismatic sub-hinges plus a spherical joint (or plus three
revolutes). The models are built by hand here (not by loopdyn.partition) and related by textbook
coordinate maps; every algorithm must give the same *physical* answer on both: body velocities,
accelerations and compliances, constraint forces, Delassus matrices, and M, M⁻¹, τ and Jacobians
related by the velocity map ``v = T v_p`` (``M_p = Tᵀ M T``, ``τ_p = Tᵀ τ``, ``J_p = J T``).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.spatial.transform import Rotation
from trees import assert_close, random_inertia, random_rotation

import loopdyn
from loopdyn.errors import SingularInertiaError
from loopdyn.model import FreeFlyer, Prismatic, Revolute, Spherical
from loopdyn.spatial import Inertia

EX, EY, EZ = (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)


def _inertia(rng):
    m, c, I = random_inertia(rng)
    return Inertia(m, c, I)


def euler_rate_matrix(b, c):
    """ω (child frame) = E (ȧ, ḃ, ċ) for R = Rz(a) Ry(b) Rx(c)."""
    return np.array([[-math.sin(b), 0.0, 1.0],
                     [math.cos(b) * math.sin(c), math.cos(c), 0.0],
                     [math.cos(b) * math.cos(c), -math.sin(c), 0.0]])


def test_euler_rate_matrix_against_finite_differences():
    rng = np.random.default_rng(0)
    for _ in range(5):
        ang, rate = rng.uniform(-1.2, 1.2, 3), rng.normal(size=3)
        h = 1e-6
        R = Rotation.from_euler("ZYX", ang).as_matrix()
        dR = (Rotation.from_euler("ZYX", ang + h * rate).as_matrix()
              - Rotation.from_euler("ZYX", ang - h * rate).as_matrix()) / (2 * h)
        W = R.T @ dR
        w = np.array([W[2, 1], W[0, 2], W[1, 0]])
        assert_close(euler_rate_matrix(ang[1], ang[2]) @ rate, w, rtol=1e-7, atol=1e-8)


# ------------------------------------------------------------------------------------------------
# the model pairs


def _pair_spherical(seed):
    """(U, P, pieces): U has a spherical joint 'ball'; P has revolutes z, y, x on two massless bodies."""
    rng = np.random.default_rng(seed)
    inert = [_inertia(rng) for _ in range(3)]
    R1, p1 = random_rotation(rng), rng.uniform(-0.5, 0.5, 3)
    R2, p2 = random_rotation(rng), rng.uniform(-0.5, 0.5, 3)
    axis = rng.normal(size=3)
    tool = (random_rotation(rng), rng.uniform(-0.3, 0.3, 3))
    models = []
    for massless in (False, True):
        m = loopdyn.Model("massless" if massless else "ball")
        m.add_body("base", 0, Revolute(EZ), inertia=inert[0])
        if massless:
            m.add_body("ball_z", "base", Revolute(EZ), (R1, p1), Inertia.zero(), joint_name="ball_jz")
            m.add_body("ball_y", "ball_z", Revolute(EY), None, Inertia.zero(), joint_name="ball_jy")
            m.add_body("ball", "ball_y", Revolute(EX), None, inert[1], joint_name="ball_jx")
        else:
            m.add_body("ball", "base", Spherical(), (R1, p1), inert[1], joint_name="ball_j")
        m.add_body("tip", "ball", Revolute(axis), (R2, p2), inert[2])
        m.add_frame("tool", "tip", tool)
        models.append(m)
    U, P = models

    def state(rng):
        qb, ang, qt = rng.uniform(-3, 3), rng.uniform(-1.3, 1.3, 3), rng.uniform(-3, 3)
        qp = np.r_[qb, ang, qt]
        q = np.r_[qb, Rotation.from_euler("ZYX", ang).as_quat(), qt]  # (x, y, z, w)
        T = np.zeros((U.nv, P.nv))
        T[0, 0] = T[4, 4] = 1.0
        T[1:4, 1:4] = euler_rate_matrix(ang[1], ang[2])
        return q, qp, T

    return U, P, state, {"base": ("base", "base"), "ball": ("ball", "ball"), "tip": ("tip", "tip")}


def _pair_free_flyer(seed, euler):
    """U: free-flyer 'trunk' + a revolute 'leg'; P: prismatic x, y, z (massless) + spherical trunk,
    or + revolutes z, y, x (``euler``)."""
    rng = np.random.default_rng(seed)
    inert = [_inertia(rng) for _ in range(2)]
    R2, p2 = random_rotation(rng), rng.uniform(-0.5, 0.5, 3)
    axis = rng.normal(size=3)
    foot = (random_rotation(rng), rng.uniform(-0.3, 0.3, 3))
    models = []
    for massless in (False, True):
        m = loopdyn.Model("massless" if massless else "ff")
        if massless:
            parent = 0
            subs = [("tx", Prismatic(EX)), ("ty", Prismatic(EY)), ("tz", Prismatic(EZ))]
            subs += [("rz", Revolute(EZ)), ("ry", Revolute(EY)), ("rx", Revolute(EX))] if euler else \
                [("rot", Spherical())]
            for k, (sfx, j) in enumerate(subs):
                last = k == len(subs) - 1
                parent = m.add_body("trunk" if last else f"trunk_{sfx}", parent, j, None,
                                    inert[0] if last else Inertia.zero(), joint_name=f"root_{sfx}")
        else:
            m.add_body("trunk", 0, FreeFlyer(), None, inert[0], joint_name="root")
        m.add_body("leg", "trunk", Revolute(axis), (R2, p2), inert[1])
        m.add_frame("foot", "leg", foot)
        models.append(m)
    U, P = models

    def state(rng):
        pos, ang, ql = rng.uniform(-1, 1, 3), rng.uniform(-1.3, 1.3, 3), rng.uniform(-3, 3)
        rot = Rotation.from_euler("ZYX", ang)
        q = np.r_[pos, rot.as_quat(), ql]
        qp = np.r_[pos, ang if euler else rot.as_quat(), ql]
        T = np.zeros((U.nv, P.nv))
        T[:3, :3] = rot.as_matrix().T  # free-flyer linear velocity is in the body frame
        T[3:6, 3:6] = euler_rate_matrix(ang[1], ang[2]) if euler else np.eye(3)
        T[6, 6] = 1.0
        return q, qp, T

    return U, P, state, {"trunk": ("trunk", "trunk"), "leg": ("leg", "leg")}


PAIRS = {
    "spherical-vs-3-revolutes": lambda: _pair_spherical(1),
    "spherical-vs-3-revolutes-b": lambda: _pair_spherical(2),
    "freeflyer-vs-3-prismatic-spherical": lambda: _pair_free_flyer(3, False),
    "freeflyer-vs-3-prismatic-3-revolutes": lambda: _pair_free_flyer(4, True),
}


def _body_rows(U, P, bodies):
    return [(U.body_id(u), P.body_id(p)) for u, p in bodies.values()]


@pytest.mark.parametrize("name", list(PAIRS))
def test_massless_model_gives_the_same_physics(name):
    U, P, state, bodies = PAIRS[name]()
    du, dp = U.create_data(), P.create_data()
    rng = np.random.default_rng(42)
    rows = _body_rows(U, P, bodies)
    frame = U.frames[-1].name  # the op frame on the last body
    for _ in range(3):
        q, qp, T = state(rng)
        vp = rng.normal(size=P.nv)
        v = T @ vp
        tau = rng.normal(size=U.nv) * 3
        taup = T.T @ tau  # same power
        # CRBA and minverse: M_p = Tᵀ M T, M_p⁻¹ = T⁻¹ M⁻¹ T⁻ᵀ
        M, Mp = loopdyn.crba(U, du, q), loopdyn.crba(P, dp, qp)
        assert_close(Mp, T.T @ M @ T, rtol=1e-9, atol=1e-10 * np.abs(Mp).max(), what="M")
        Ti = np.linalg.inv(T)
        Mpi = loopdyn.minverse(P, dp, qp)
        assert_close(Mpi, Ti @ loopdyn.minverse(U, du, q) @ Ti.T, rtol=1e-9, atol=1e-10 * np.abs(Mpi).max(),
                     what="M⁻¹")
        # ABA: the same body accelerations (and velocities)
        a, ap = loopdyn.aba(U, du, q, v, tau), loopdyn.aba(P, dp, qp, vp, taup)
        loopdyn.forward_kinematics(U, du, q, v, a)
        loopdyn.forward_kinematics(P, dp, qp, vp, ap)
        Vu, Vp, Au, Ap = du.v, dp.v, du.a, dp.a
        for iu, ip in rows:
            assert_close(Vp[ip], Vu[iu], rtol=1e-9, atol=1e-10, what="body velocity")
            assert_close(Ap[ip], Au[iu], rtol=1e-9, atol=1e-9, what="body acceleration")
            assert_close(du.oMi[iu], dp.oMi[ip], rtol=1e-9, atol=1e-12, what="placement")
        for ref in ("local", "world", "local_world_aligned"):
            assert_close(loopdyn.frame_velocity(P, dp, frame, ref), loopdyn.frame_velocity(U, du, frame, ref),
                         rtol=1e-9, atol=1e-10, what=f"frame velocity {ref}")
            assert_close(loopdyn.frame_classical_acceleration(P, dp, frame, ref),
                         loopdyn.frame_classical_acceleration(U, du, frame, ref), rtol=1e-9, atol=1e-9,
                         what=f"frame classical acceleration {ref}")
        # frame Jacobian time variation: J_p a_p + J̇_p v_p = J a + J̇ v (the same frame acceleration)
        acc_u = loopdyn.frame_jacobian(U, du, q, frame) @ a + loopdyn.frame_jacobian_time_variation(
            U, du, q, v, frame) @ v
        acc_p = loopdyn.frame_jacobian(P, dp, qp, frame) @ ap + loopdyn.frame_jacobian_time_variation(
            P, dp, qp, vp, frame) @ vp
        assert_close(acc_p, acc_u, rtol=1e-9, atol=1e-9, what="J a + J̇ v")
        # gravity: τ_g,p = Tᵀ τ_g (no velocity terms)
        g = loopdyn.gravity(U, du, q)
        assert_close(loopdyn.gravity(P, dp, qp), T.T @ g, rtol=1e-9, atol=1e-10 * np.abs(g).max(),
                     what="g(q)")
        # RNEA: the forces that produce those accelerations do the same power
        assert_close(loopdyn.rnea(P, dp, qp, vp, ap), taup, rtol=1e-9, atol=1e-9, what="rnea")
        # frame Jacobians: J_p = J T
        Ju = loopdyn.frame_jacobian(U, du, q, frame)
        Jp = loopdyn.frame_jacobian(P, dp, qp, frame)
        assert_close(Jp, Ju @ T, rtol=1e-9, atol=1e-12, what="frame Jacobian")
        # Delassus and constrained dynamics on physical frames: identical
        cons = [loopdyn.Constraint(frame, "6d"), loopdyn.Constraint(list(bodies)[0], "3d")]
        for method in (None, "dense", "efpa"):
            Du = loopdyn.delassus(U, du, q, cons, method=method)
            Dp = loopdyn.delassus(P, dp, qp, cons, method=method)
            assert_close(Dp, Du, rtol=1e-9, atol=1e-10 * np.abs(Du).max(), what=f"delassus {method}")
        au, lu = loopdyn.constrained_forward_dynamics(U, du, q, v, tau, cons, mu=1e-6)
        apc, lp = loopdyn.constrained_forward_dynamics(P, dp, qp, vp, taup, cons, mu=1e-6)
        assert_close(lp, lu, rtol=1e-8, atol=1e-8 * np.abs(lu).max(), what="constraint forces")
        loopdyn.forward_kinematics(U, du, q, v, au)
        loopdyn.forward_kinematics(P, dp, qp, vp, apc)
        for iu, ip in rows:
            assert_close(dp.a[ip], du.a[iu], rtol=1e-8, atol=1e-8, what="constrained body acceleration")
        # body compliances (Eq. 24): equal at physical bodies; at massless bodies J M⁻¹ Jᵀ
        Yu, Yp = loopdyn.body_compliances(U, du, q), loopdyn.body_compliances(P, dp, qp)
        for iu, ip in rows:
            assert_close(Yp[ip], Yu[iu], rtol=1e-9, atol=1e-10 * np.abs(Yu[iu]).max(), what="Υ")
        physical = {ip for _, ip in rows}
        for k in range(1, P.njoints):
            if k in physical:
                continue
            assert P.bodies[k - 1].inertia.mass == 0.0
            J = loopdyn.frame_jacobian(P, dp, qp, P.frame_id(P.body_names[k], "body"))
            ref = J @ np.linalg.solve(Mp, J.T)
            assert_close(Yp[k], ref, rtol=1e-9, atol=1e-10 * np.abs(ref).max(), what="Υ massless body")
        # the innovations factorisation on the massless model
        F = loopdyn.mass_matrix_factor(P, dp, qp)
        assert_close(F.matrix(), Mp, rtol=1e-9, atol=1e-10 * np.abs(Mp).max(), what="L D Lᵀ")
        assert abs(F.logdet() - (np.linalg.slogdet(M)[1] + 2 * np.linalg.slogdet(T)[1])) < 1e-9


@pytest.mark.parametrize("name", list(PAIRS))
def test_negative_control_a_small_mass_on_the_intermediate_body_changes_the_answer(name):
    U, P, state, bodies = PAIRS[name]()
    massive = loopdyn.Model("massive")
    for b in P.bodies:
        inertia = b.inertia if b.inertia.mass > 0 else Inertia(1e-3, (0.05, 0.0, 0.0), np.eye(3) * 1e-4)
        massive.add_body(b.name, b.parent, b.joint, (b.rotation, b.translation), inertia,
                         joint_name=b.joint_name)
    q, qp, T = state(np.random.default_rng(5))
    Yu = loopdyn.body_compliances(U, U.create_data(), q)
    Ym = loopdyn.body_compliances(massive, massive.create_data(), qp)
    iu, ip = _body_rows(U, P, bodies)[-1]
    assert np.max(np.abs(Ym[ip] - Yu[iu])) > 1e-6 * np.max(np.abs(Yu[iu]))


def test_gimbal_lock_of_the_massless_chain_is_reported_naming_the_joint():
    U, P, _, bodies = PAIRS["spherical-vs-3-revolutes"]()
    data = P.create_data()
    qp = np.array([0.3, 0.4, math.pi / 2, -0.2, 0.5])
    with pytest.raises(SingularInertiaError, match="ball_jz"):
        loopdyn.body_compliances(P, data, qp)
    with pytest.raises(SingularInertiaError, match="ball_jz"):
        loopdyn.mass_matrix_factor(P, data, qp)
    with pytest.raises(SingularInertiaError, match="ball_jz"):  # a relative pivot test (issue 29 §6)
        loopdyn.aba(P, data, qp, qp, qp)
    # near, not at, the singularity: the physical bodies' Υ are those of the spherical-joint model (no
    # singularity there), to the conditioning of the problem P is given: cond(M_p) ~ cond(T)² cond(M),
    # 4e7 here (measured: 2e-9 relative, growing 100× per decade closer to the lock)
    qp[2] = math.pi / 2 - 1e-3
    Yp = loopdyn.body_compliances(P, data, qp)
    q = np.r_[qp[0], Rotation.from_euler("ZYX", qp[1:4]).as_quat(), qp[4]]
    Yu = loopdyn.body_compliances(U, U.create_data(), q)
    tol = np.finfo(float).eps * np.linalg.cond(loopdyn.crba(P, data, qp))
    assert 1e-9 < tol < 1e-7
    for iu, ip in _body_rows(U, P, bodies):
        assert_close(Yp[ip], Yu[iu], rtol=tol, atol=tol * np.abs(Yu[iu]).max(), what="Υ near the lock")
    assert np.all(np.isfinite(loopdyn.aba(P, data, qp, qp, qp)))


# ------------------------------------------------------------------------------------------------
# a massless leaf


def _massless_leaf():
    m = loopdyn.Model("leaf")
    m.add_body("a", 0, Revolute(EZ), inertia=Inertia(1.0, (0.1, 0.0, 0.0), np.eye(3) * 0.1))
    m.add_body("mid", "a", Revolute(EY), (np.eye(3), np.array([0.3, 0.0, 0.0])), Inertia.zero(),
               joint_name="mid_joint")
    m.add_body("tip", "mid", Revolute(EX), (np.eye(3), np.array([0.0, 0.2, 0.0])), Inertia.zero(),
               joint_name="tip_joint")
    return m


@pytest.mark.parametrize("algorithm", ["aba", "minverse", "delassus", "delassus_dense", "delassus_efpa",
                                       "constrained_forward_dynamics", "body_compliances",
                                       "mass_matrix_factor"])
def test_a_massless_leaf_raises_a_clear_error_naming_the_joint(algorithm):
    m = _massless_leaf()
    d = m.create_data()
    q = v = np.zeros(m.nv)
    calls = {
        "aba": lambda: loopdyn.aba(m, d, q, v, v),
        "minverse": lambda: loopdyn.minverse(m, d, q),
        "delassus": lambda: loopdyn.delassus(m, d, q, [loopdyn.Constraint("a", "3d")]),
        "delassus_dense": lambda: loopdyn.delassus(m, d, q, [loopdyn.Constraint("a", "3d")], method="dense"),
        "delassus_efpa": lambda: loopdyn.delassus(m, d, q, [loopdyn.Constraint("a", "3d")], method="efpa"),
        "constrained_forward_dynamics": lambda: loopdyn.constrained_forward_dynamics(
            m, d, q, v, v, [loopdyn.Constraint("a", "3d")]),
        "body_compliances": lambda: loopdyn.body_compliances(m, d, q),
        "mass_matrix_factor": lambda: loopdyn.mass_matrix_factor(m, d, q),
    }
    with pytest.raises(SingularInertiaError, match="'tip_joint'"):
        calls[algorithm]()


def test_a_massless_leaf_leaves_inverse_dynamics_and_crba_defined():
    """RNEA and CRBA are well defined with a massless leaf (M is singular, not an error)."""
    m = _massless_leaf()
    d = m.create_data()
    M = loopdyn.crba(m, d, np.zeros(m.nv))
    assert M[2, 2] == 0.0 and np.all(M[:, 2] == 0.0)
    assert np.all(loopdyn.rnea(m, d, np.zeros(3), np.zeros(3), np.ones(3))[1:] == 0.0)
