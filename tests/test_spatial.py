"""Property tests of the spatial algebra: Plücker transforms, cross products, spatial inertias,
quaternions, the SO(3)/SE(3) exponential maps and roll-pitch-yaw angles.

Pinocchio serves as an independent oracle for ``exp3``, ``exp6``, quaternions, ``Jexp3``/``Jlog3``,
SE3 actions and spatial inertias (after reordering Pinocchio's ``[linear; angular]`` blocks).
"""

from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from loopdyn.errors import ModelError
from loopdyn.spatial import (
    Inertia,
    crf,
    crm,
    force_transform,
    from_pinocchio_order,
    inverse_force_transform,
    inverse_motion_transform,
    matrix_to_quat,
    matrix_to_rpy,
    motion_transform,
    quat_conjugate,
    quat_exp,
    quat_log,
    quat_multiply,
    quat_to_matrix,
    rot_x,
    rot_y,
    rot_z,
    rpy_to_matrix,
    se3_exp,
    se3_log,
    skew,
    so3_exp,
    so3_left_jacobian,
    so3_left_jacobian_inverse,
    so3_log,
    so3_right_jacobian,
    so3_right_jacobian_inverse,
    spatial_inertia_matrix,
    to_pinocchio_order,
)

TOL = 1e-12

settings.register_profile(
    "loopdyn-spatial", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
SETTINGS = settings.get_profile("loopdyn-spatial")


def close(a, b, tol: float = TOL) -> bool:
    """Elementwise ``|a - b| <= tol * max(1, |b|_max)`` (relative for large magnitudes)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    scale = max(1.0, float(np.max(np.abs(b))) if b.size else 1.0)
    return a.shape == b.shape and float(np.max(np.abs(a - b), initial=0.0)) <= tol * scale


def assert_close(a, b, tol: float = TOL) -> None:
    assert close(a, b, tol), f"max |a - b| = {np.max(np.abs(np.asarray(a) - np.asarray(b)))}\n{a}\n{b}"


# ----------------------------------------------------------------------------------------------
# strategies
finite = st.floats(min_value=-1.0, max_value=1.0, allow_nan=False, allow_infinity=False)


def _unit_quat(x) -> np.ndarray:
    x = np.asarray(x, float)
    n = float(np.linalg.norm(x))
    return np.array([0.0, 0.0, 0.0, 1.0]) if n < 1e-3 else x / n


quaternions = st.tuples(finite, finite, finite, finite).map(_unit_quat)
rotations = quaternions.map(quat_to_matrix)


def _vectors(scale: float, n: int = 3):
    return st.lists(finite, min_size=n, max_size=n).map(lambda x: scale * np.array(x))


translations = _vectors(3.0)
twists = _vectors(2.0, 6)
# rotation vectors of norm < π (exactly invertible by the logarithm)
small_rotvecs = st.tuples(quaternions, st.floats(0.0, math.pi - 1e-6)).map(
    lambda t: _axis(t[0]) * t[1]
)


def _axis(q) -> np.ndarray:
    v = np.asarray(q[:3], float)
    n = float(np.linalg.norm(v))
    return np.array([1.0, 0.0, 0.0]) if n < 1e-6 else v / n


def _inertia(args) -> Inertia:
    """A physically valid inertia: principal moments from non-negative second moments
    (triangle inequality holds), rotated by a random rotation."""
    mass, com, s, R = args
    s = np.abs(s)
    Ic = R @ np.diag([s[1] + s[2], s[0] + s[2], s[0] + s[1]]) @ R.T
    return Inertia(mass, com, Ic)


inertias = st.tuples(st.floats(0.01, 10.0), _vectors(1.0), _vectors(2.0), rotations).map(_inertia)


# ----------------------------------------------------------------------------------------------
# Plücker transforms
@SETTINGS
@given(rotations, translations)
def test_force_transform_is_inverse_transpose(R, p):
    X = motion_transform(R, p)
    assert_close(force_transform(R, p), np.linalg.inv(X).T)
    assert_close(inverse_force_transform(R, p), X.T)
    assert_close(inverse_motion_transform(R, p) @ X, np.eye(6))
    assert_close(X @ inverse_motion_transform(R, p), np.eye(6))
    assert_close(force_transform(R, p) @ inverse_force_transform(R, p), np.eye(6))


@SETTINGS
@given(rotations, translations, rotations, translations)
def test_transform_composition(R1, p1, R2, p2):
    """C at (R2, p2) in B, B at (R1, p1) in A: C at (R1 R2, R1 p2 + p1) in A."""
    R, p = R1 @ R2, R1 @ p2 + p1
    assert_close(motion_transform(R, p), motion_transform(R2, p2) @ motion_transform(R1, p1))
    assert_close(force_transform(R, p), force_transform(R2, p2) @ force_transform(R1, p1))
    assert_close(
        inverse_motion_transform(R, p), inverse_motion_transform(R1, p1) @ inverse_motion_transform(R2, p2)
    )


@SETTINGS
@given(rotations, translations, twists)
def test_motion_transform_matches_point_velocities(R, p, m):
    """B_X_A maps a twist given in A to the same rigid motion expressed in B: the velocity of any
    point, computed in either frame, agrees."""
    mB = motion_transform(R, p) @ m
    x_B = np.array([0.3, -0.2, 0.5])
    x_A = R @ x_B + p
    vel_A = m[3:] + np.cross(m[:3], x_A)
    vel_B = mB[3:] + np.cross(mB[:3], x_B)
    assert_close(R @ vel_B, vel_A)
    assert_close(R @ mB[:3], m[:3])


@SETTINGS
@given(rotations, translations, twists, twists)
def test_power_invariant(R, p, m, f):
    """fᵀ m is frame independent: (X* f)ᵀ (X m) = fᵀ m."""
    assert math.isclose(
        float((force_transform(R, p) @ f) @ (motion_transform(R, p) @ m)), float(f @ m), abs_tol=1e-11
    )


@SETTINGS
@given(rotations, translations)
def test_transforms_vs_pinocchio_actions(R, p):
    M = pin.SE3(R, p)  # A_M_B
    perm = lambda A: to_pinocchio_order(to_pinocchio_order(A).T).T  # noqa: E731
    assert_close(perm(inverse_motion_transform(R, p)), M.action)
    assert_close(perm(motion_transform(R, p)), M.inverse().action)
    assert_close(perm(inverse_force_transform(R, p)), M.dualAction)
    assert_close(perm(force_transform(R, p)), M.inverse().dualAction)


# ----------------------------------------------------------------------------------------------
# cross products
@SETTINGS
@given(twists, twists)
def test_crm_crf(m, u):
    assert_close(crf(m), -crm(m).T)
    # m ×ₘ u for motion vectors = time derivative of a moving vector, m ×* f = -crm(m)ᵀ f
    expected = np.concatenate([np.cross(m[:3], u[:3]), np.cross(m[3:], u[:3]) + np.cross(m[:3], u[3:])])
    assert_close(crm(m) @ u, expected)
    expected_f = np.concatenate([np.cross(m[:3], u[:3]) + np.cross(m[3:], u[3:]), np.cross(m[:3], u[3:])])
    assert_close(crf(m) @ u, expected_f)
    assert_close(crm(m) @ m, np.zeros(6))


@SETTINGS
@given(rotations, translations, twists)
def test_crm_equivariance(R, p, m):
    X = motion_transform(R, p)
    Xi = inverse_motion_transform(R, p)
    assert_close(X @ crm(m) @ Xi, crm(X @ m), 1e-11)
    Xf = force_transform(R, p)
    assert_close(Xf @ crf(m) @ np.linalg.inv(Xf), crf(X @ m), 1e-11)


@SETTINGS
@given(twists, twists)
def test_crm_vs_pinocchio_cross(m, u):
    Mm = pin.Motion(to_pinocchio_order(m))
    Mu = pin.Motion(to_pinocchio_order(u))
    assert_close(crm(m) @ u, from_pinocchio_order(Mm.cross(Mu).vector))
    Fu = pin.Force(to_pinocchio_order(u))
    assert_close(crf(m) @ u, from_pinocchio_order(Mm.cross(Fu).vector))


# ----------------------------------------------------------------------------------------------
# spatial inertia
@SETTINGS
@given(inertias)
def test_inertia_matrix_consistency(I):
    M = I.matrix()
    assert_close(M, spatial_inertia_matrix(I.mass, I.com, I.inertia))
    assert_close(M, M.T)
    assert np.linalg.eigvalsh(M)[0] >= -1e-12 * max(1.0, np.abs(M).max())
    pm = pin.Inertia(I.mass, I.com, I.inertia).matrix()
    assert_close(M, from_pinocchio_order(from_pinocchio_order(pm).T).T)


@SETTINGS
@given(inertias, rotations, translations, twists)
def test_inertia_transform(I, R, p, v):
    """Inertia given in B, B at (R, p) in A: I_A = (A_X_B)⁻ᵀ I_B (A_X_B)⁻¹ and kinetic energy and
    momentum transform consistently."""
    IA = I.transformed(R, p)
    X = inverse_motion_transform(R, p)  # A_X_B
    Xinv = motion_transform(R, p)
    expected = Xinv.T @ I.matrix() @ Xinv
    assert_close(IA.matrix(), expected, 1e-11)
    assert IA.mass == pytest.approx(I.mass, rel=1e-15)
    ev = np.linalg.eigvalsh(IA.matrix())
    assert ev[0] >= -1e-10 * max(1.0, ev[-1])
    assert np.linalg.eigvalsh(IA.inertia)[0] >= -1e-10 * max(1.0, np.abs(IA.inertia).max())
    vA = X @ v
    assert math.isclose(0.5 * vA @ IA.matrix() @ vA, 0.5 * v @ I.matrix() @ v, rel_tol=1e-11, abs_tol=1e-11)
    # momentum is a force: h_A = A_X*_B h_B
    assert_close(IA.matrix() @ vA, inverse_force_transform(R, p) @ (I.matrix() @ v), 1e-11)
    # back and forth
    back = IA.transformed(R.T, -R.T @ p)
    assert_close(back.matrix(), I.matrix(), 1e-11)


@SETTINGS
@given(inertias, inertias, rotations, translations)
def test_inertia_addition(I1, I2, R, p):
    I2 = I2.transformed(R, p)
    S = I1 + I2
    assert_close(S.matrix(), I1.matrix() + I2.matrix(), 1e-11)
    assert S.mass == pytest.approx(I1.mass + I2.mass, rel=1e-15)
    assert_close((I2 + I1).matrix(), S.matrix(), 1e-11)


def test_inertia_addition_zero_mass():
    I = Inertia(0.0, [1.0, 2.0, 3.0], np.diag([1.0, 2.0, 2.5]))
    S = I + Inertia.zero()
    assert_close(S.matrix(), I.matrix())
    assert_close((Inertia(2.0, [0.1, 0.2, 0.3], np.eye(3)) + I).matrix(),
                 Inertia(2.0, [0.1, 0.2, 0.3], np.eye(3)).matrix() + I.matrix())


@SETTINGS
@given(inertias)
def test_inertia_compact_round_trip(I):
    c = I.compact()
    assert c.shape == (10,)
    J = Inertia.from_compact(c)
    assert_close(J.matrix(), I.matrix(), 1e-11)
    assert_close(J.com, I.com)
    assert J.mass == I.mass
    # the compact 3×3 block is the rotational inertia about the frame origin
    M = I.matrix()
    assert_close(c[4:], [M[0, 0], M[1, 1], M[2, 2], M[0, 1], M[0, 2], M[1, 2]])
    assert_close(c[1:4], I.mass * I.com)


def test_inertia_rejects_invalid():
    with pytest.raises(ModelError):
        Inertia(-1.0)
    with pytest.raises(ModelError):
        Inertia(1.0, inertia=-np.eye(3))
    with pytest.raises(ModelError):
        Inertia(1.0, inertia=[[1.0, 0.5, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])


# ----------------------------------------------------------------------------------------------
# quaternions
@SETTINGS
@given(quaternions)
def test_quaternion_matrix_round_trip(q):
    R = quat_to_matrix(q)
    assert_close(R.T @ R, np.eye(3))
    assert np.linalg.det(R) == pytest.approx(1.0, abs=1e-12)
    q2 = matrix_to_quat(R)
    assert q2[3] >= 0.0
    assert_close(q2, q if q[3] > 1e-8 else (-q if q[3] < -1e-8 else q2))
    assert min(np.abs(q2 - q).max(), np.abs(q2 + q).max()) <= TOL
    assert_close(quat_to_matrix(q2), R)
    assert_close(R, pin.Quaternion(q).matrix())
    pq = pin.Quaternion(R).coeffs()
    assert min(np.abs(q2 - pq).max(), np.abs(q2 + pq).max()) <= TOL


@SETTINGS
@given(quaternions, quaternions)
def test_quaternion_product(q1, q2):
    assert_close(quat_to_matrix(quat_multiply(q1, q2)), quat_to_matrix(q1) @ quat_to_matrix(q2))
    assert_close(quat_multiply(q1, q2), (pin.Quaternion(q1) * pin.Quaternion(q2)).coeffs())
    assert_close(quat_multiply(q1, quat_conjugate(q1)), [0.0, 0.0, 0.0, 1.0])
    assert_close(quat_to_matrix(quat_conjugate(q1)), quat_to_matrix(q1).T)


@pytest.mark.parametrize("k", range(3))
@pytest.mark.parametrize("angle", [math.pi, math.pi - 1e-9, -math.pi + 1e-7, 1e-13, 0.0])
def test_matrix_to_quat_special_angles(k, angle):
    R = [rot_x, rot_y, rot_z][k](angle)
    q = matrix_to_quat(R)
    assert np.linalg.norm(q) == pytest.approx(1.0, abs=1e-15)
    assert_close(quat_to_matrix(q), R)


# ----------------------------------------------------------------------------------------------
# SO(3)
@SETTINGS
@given(_vectors(6.0))
def test_so3_exp_vs_pinocchio(w):
    R = so3_exp(w)
    assert_close(R, pin.exp3(w))
    assert_close(R.T @ R, np.eye(3))
    assert_close(quat_to_matrix(quat_exp(w)), R)
    assert_close(quat_exp(w), pin.exp3_quat(w))


@SETTINGS
@given(small_rotvecs)
def test_so3_log_exp(w):
    assert_close(so3_log(so3_exp(w)), w)
    assert_close(quat_log(quat_exp(w)), w)
    assert_close(quat_log(-quat_exp(w)), w)


@SETTINGS
@given(rotations)
def test_so3_exp_log(R):
    w = so3_log(R)
    assert np.linalg.norm(w) <= math.pi + 1e-12
    assert_close(so3_exp(w), R)
    # Pinocchio's log3 loses up to ~1e-11 near θ = π; ours is exact to rounding there
    assert_close(so3_exp(w), pin.exp3(pin.log3(R)), 1e-10)


@pytest.mark.parametrize("eps", [0.0, 1e-15, 1e-12, 1e-9, 1e-6, 1e-3])
@pytest.mark.parametrize("axis", [(1, 0, 0), (0, 1, 0), (0, 0, 1), (1, 2, 3), (-1, 0.5, 1e-3)])
def test_so3_log_near_pi_and_zero(eps, axis):
    a = np.array(axis, float)
    a /= np.linalg.norm(a)
    # near π
    R = so3_exp((math.pi - eps) * a)
    w = so3_log(R)
    assert np.linalg.norm(w) <= math.pi + 1e-15
    assert_close(so3_exp(w), R)
    if eps >= 1e-9:  # away from the exact half turn the logarithm is unique
        assert_close(w, (math.pi - eps) * a)
    # near 0
    assert_close(so3_log(so3_exp(eps * a)), eps * a, 1e-15)
    assert_close(so3_exp(eps * a), pin.exp3(eps * a), 1e-15)


@SETTINGS
@given(_vectors(3.0), _vectors(1.0))
def test_so3_jacobians(w, d):
    Jr = so3_right_jacobian(w)
    assert_close(Jr, pin.Jexp3(w))
    assert_close(so3_left_jacobian(w), Jr.T)
    assert_close(so3_left_jacobian(w), so3_right_jacobian(-w))
    if np.linalg.norm(w) < math.pi - 1e-3:
        assert_close(so3_right_jacobian_inverse(w) @ Jr, np.eye(3), 1e-11)
        assert_close(so3_left_jacobian_inverse(w) @ so3_left_jacobian(w), np.eye(3), 1e-11)
        # Pinocchio's Jlog3 loses ~1e-9 to cancellation for 1e-4 < θ < 1e-2, and its log3 up to
        # ~1e-10 near θ = π (both checked against finite differences): compare away from those
        theta = np.linalg.norm(w)
        if theta > 1e-2:
            assert_close(so3_right_jacobian_inverse(w), pin.Jlog3(so3_exp(w)), 1e-11 if theta < 2.5 else 1e-8)
    # first-order: exp(w + h d) ≈ exp(w) exp(h Jr d) ≈ exp(h Jl d) exp(w)
    h = 1e-6
    assert_close(so3_exp(w + h * d), so3_exp(w) @ so3_exp(h * Jr @ d), 1e-11)
    assert_close(so3_exp(w + h * d), so3_exp(h * so3_left_jacobian(w) @ d) @ so3_exp(w), 1e-11)


def _reference_so3_coeffs(theta: float):
    """sin t/t, (1 - cos t)/t², (t - sin t)/t³ in extended precision: long Taylor series below 0.1
    (no cancellation), closed forms above."""
    t = np.longdouble(theta)
    if theta < 0.1:
        t2 = t * t
        terms = range(12)
        fact = [math.factorial(n) for n in range(30)]
        a = sum((-t2) ** k / np.longdouble(fact[2 * k + 1]) for k in terms)
        b = sum((-t2) ** k / np.longdouble(fact[2 * k + 2]) for k in terms)
        c = sum((-t2) ** k / np.longdouble(fact[2 * k + 3]) for k in terms)
        return a, b, c
    return np.sin(t) / t, (1 - np.cos(t)) / t**2, (t - np.sin(t)) / t**3


@pytest.mark.parametrize("theta", [0.0, 1e-12, 1e-8, 1e-5, 9.99e-5, 1e-4, 1.01e-4, 9.9e-3, 1.01e-2, 0.5])
def test_small_angle_branches(theta):
    """The Taylor branches agree with the closed forms (computed in extended precision)."""
    w = theta * np.array([0.48, -0.6, 0.64])
    Wl = np.array(skew(w), dtype=np.longdouble)
    a, b, c = _reference_so3_coeffs(theta)
    W2 = Wl @ Wl
    I3 = np.eye(3, dtype=np.longdouble)
    assert_close(so3_exp(w), np.asarray(I3 + a * Wl + b * W2, float), 4e-15)
    assert_close(so3_right_jacobian(w), np.asarray(I3 - b * Wl + c * W2, float), 4e-15)
    v = np.array([0.3, -1.0, 2.0])
    R, p = se3_exp(np.r_[w, v])
    assert_close(p, np.asarray((I3 + b * Wl + c * W2) @ v.astype(np.longdouble), float), 4e-15)
    assert_close(se3_log(R, p), np.r_[w, v], 1e-14)


# ----------------------------------------------------------------------------------------------
# SE(3)
@SETTINGS
@given(_vectors(4.0), _vectors(3.0))
def test_se3_exp_vs_pinocchio(w, v):
    R, p = se3_exp(np.concatenate([w, v]))
    M = pin.exp6(np.concatenate([v, w]))  # Pinocchio order [v; ω]
    assert_close(R, M.rotation)
    assert_close(p, M.translation)
    assert_close(R, so3_exp(w))
    assert_close(p, so3_left_jacobian(w) @ v)


@SETTINGS
@given(rotations, translations)
def test_se3_exp_log(R, p):
    xi = se3_log(R, p)
    R2, p2 = se3_exp(xi)
    assert_close(R2, R)
    assert_close(p2, p, 1e-11)
    theta = np.linalg.norm(xi[:3])
    if theta < math.pi - 1e-6:  # (Pinocchio's log loses accuracy near π, see test_so3_jacobians)
        assert_close(xi, from_pinocchio_order(pin.log6(pin.SE3(R, p)).vector), 1e-11 if theta < 2.5 else 1e-8)


@SETTINGS
@given(small_rotvecs, _vectors(3.0))
def test_se3_log_exp(w, v):
    xi = np.concatenate([w, v])
    assert_close(se3_log(*se3_exp(xi)), xi, 1e-10)


@SETTINGS
@given(twists)
def test_se3_exp_is_flow_of_body_twist(xi):
    """exp(ξ) = exp(ξ/2)·exp(ξ/2) (one-parameter subgroup) and d/dt exp(tξ) at 0 is ξ."""
    R1, p1 = se3_exp(0.5 * xi)
    R, p = se3_exp(xi)
    assert_close(R1 @ R1, R)
    assert_close(R1 @ p1 + p1, p)
    h = 1e-7
    Rh, ph = se3_exp(h * xi)
    assert_close(ph / h, xi[3:], 1e-6)


def test_order_helpers():
    x = np.arange(6.0)
    assert_close(to_pinocchio_order(x), [3, 4, 5, 0, 1, 2])
    assert_close(from_pinocchio_order(to_pinocchio_order(x)), x)
    A = np.arange(18.0).reshape(6, 3)
    assert_close(from_pinocchio_order(to_pinocchio_order(A)), A)
    assert_close(to_pinocchio_order(A)[:3], A[3:])
    with pytest.raises(ValueError):
        to_pinocchio_order(np.zeros(5))
    with pytest.raises(ValueError):
        to_pinocchio_order(np.zeros((3, 6)))


# ----------------------------------------------------------------------------------------------
# elementary rotations, roll-pitch-yaw
@SETTINGS
@given(st.floats(-math.pi, math.pi))
def test_elementary_rotations(t):
    assert_close(rot_x(t), so3_exp([t, 0.0, 0.0]))
    assert_close(rot_y(t), so3_exp([0.0, t, 0.0]))
    assert_close(rot_z(t), so3_exp([0.0, 0.0, t]))


@SETTINGS
@given(
    st.floats(-math.pi + 1e-9, math.pi),
    st.floats(-math.pi / 2 + 1e-6, math.pi / 2 - 1e-6),
    st.floats(-math.pi + 1e-9, math.pi),
)
def test_rpy_round_trip(r, p, y):
    R = rpy_to_matrix(r, p, y)
    assert_close(R, pin.rpy.rpyToMatrix(r, p, y))
    assert_close(matrix_to_rpy(R), [r, p, y], 1e-9)  # pitch near ±π/2 is ill-conditioned
    assert_close(rpy_to_matrix(*matrix_to_rpy(R)), R)


@SETTINGS
@given(rotations)
def test_matrix_to_rpy(R):
    rpy = matrix_to_rpy(R)
    assert_close(rpy_to_matrix(*rpy), R)
    assert -math.pi <= rpy[0] <= math.pi and -math.pi / 2 <= rpy[1] <= math.pi / 2
    assert_close(rpy_to_matrix(*rpy), rpy_to_matrix(*pin.rpy.matrixToRpy(R)))


@pytest.mark.parametrize("pitch", [math.pi / 2, -math.pi / 2])
@pytest.mark.parametrize("roll_yaw", [(0.3, 0.0), (0.0, -1.2), (2.0, 1.0), (-3.0, 2.5)])
def test_rpy_gimbal_lock(pitch, roll_yaw):
    R = rpy_to_matrix(roll_yaw[0], pitch, roll_yaw[1])
    rpy = matrix_to_rpy(R)
    assert rpy[1] == pytest.approx(pitch, abs=1e-7)
    assert_close(rpy_to_matrix(*rpy), R)
