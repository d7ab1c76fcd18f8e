"""Rotations, unit quaternions and the exponential maps of SO(3) and SE(3).

Conventions
-----------
* Quaternions are stored **(x, y, z, w)** (vector part first, scalar last), as Pinocchio and Eigen's
  ``coeffs()`` do. ``q`` and ``-q`` are the same rotation; functions that *choose* a quaternion
  (:func:`matrix_to_quat`, :func:`quat_log`) return the canonical one with ``w >= 0``.
* Rotations are *active*: ``R`` maps coordinates in the rotated (child) frame to coordinates in the
  reference (parent) frame, ``x_parent = R @ x_child``.
* Twists are in **Featherstone order** ``xi = [ω; v]`` (angular first). Pinocchio's ``exp6``/``log6``
  and its ``Motion.vector`` use the opposite order ``[v; ω]``; see
  :func:`loopdyn.spatial.plucker.to_pinocchio_order`.
* :func:`se3_exp` is the exponential of a *body* twist: ``M(t) = M(0) · exp(t ξ)`` for a body
  moving with constant twist ``ξ`` expressed in its own frame, and returns ``(R, p)`` with
  ``R = so3_exp(ω)`` and ``p = J_l(ω) v`` (``J_l`` the left Jacobian of SO(3)).

All functions take single elements (a 3-vector, a 3×3 matrix, a quaternion); they are reference
implementations for model building, configuration-space helpers and tests, not for inner loops.
Small angles use Taylor series, so every map is accurate to rounding near the identity; the
logarithms are accurate up to (and at) a rotation angle of π.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

from .inertia import skew

__all__ = [
    "quat_to_matrix",
    "matrix_to_quat",
    "quat_multiply",
    "quat_conjugate",
    "quat_exp",
    "quat_log",
    "so3_exp",
    "so3_log",
    "so3_right_jacobian",
    "so3_left_jacobian",
    "so3_right_jacobian_inverse",
    "so3_left_jacobian_inverse",
    "se3_exp",
    "se3_log",
    "rot_x",
    "rot_y",
    "rot_z",
    "rpy_to_matrix",
    "matrix_to_rpy",
]

# Below these angles the closed forms are replaced by Taylor series (truncation error < 1e-20).
_SMALL_ANGLE = 1e-4
_SMALL_ANGLE_LOG = 1e-2


def _vec3(x: ArrayLike) -> np.ndarray:
    a = np.asarray(x, dtype=float).reshape(-1)
    if a.shape != (3,):
        raise ValueError(f"expected a 3-vector, got shape {np.shape(x)}")
    return a


def _mat3(x: ArrayLike) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    if a.shape != (3, 3):
        raise ValueError(f"expected a 3x3 matrix, got shape {a.shape}")
    return a


def _quat(x: ArrayLike) -> np.ndarray:
    a = np.asarray(x, dtype=float).reshape(-1)
    if a.shape != (4,):
        raise ValueError(f"expected a quaternion (x, y, z, w), got shape {np.shape(x)}")
    return a


# ----------------------------------------------------------------------------------------------
# quaternions
def quat_to_matrix(q: ArrayLike) -> np.ndarray:
    """Rotation matrix of the unit quaternion ``q = (x, y, z, w)``.

    The quaternion is not normalized (as Eigen's ``toRotationMatrix``): a non-unit input gives a
    non-orthogonal matrix. Normalize it first if in doubt.
    """
    x, y, z, w = _quat(q)
    tx, ty, tz = 2.0 * x, 2.0 * y, 2.0 * z
    twx, twy, twz = tx * w, ty * w, tz * w
    txx, txy, txz = tx * x, ty * x, tz * x
    tyy, tyz, tzz = ty * y, tz * y, tz * z
    return np.array(
        [
            [1.0 - (tyy + tzz), txy - twz, txz + twy],
            [txy + twz, 1.0 - (txx + tzz), tyz - twx],
            [txz - twy, tyz + twx, 1.0 - (txx + tyy)],
        ]
    )


def matrix_to_quat(R: ArrayLike) -> np.ndarray:
    """Unit quaternion ``(x, y, z, w)`` of the rotation matrix ``R``, canonical ``w >= 0``.

    Uses Shepperd's method (the square root is taken of the largest of ``1 + tr R`` and
    ``1 + 2 R_ii - tr R``), which is accurate for every rotation, including half turns. The result
    is normalized, so a slightly non-orthogonal ``R`` still gives a unit quaternion.
    """
    R = _mat3(R)
    tr = R[0, 0] + R[1, 1] + R[2, 2]
    k = int(np.argmax([R[0, 0], R[1, 1], R[2, 2]]))
    if tr >= R[k, k]:
        s = 2.0 * math.sqrt(max(1.0 + tr, 0.0))
        q = np.array([(R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s, 0.25 * s])
    else:
        i, j, l = k, (k + 1) % 3, (k + 2) % 3
        s = 2.0 * math.sqrt(max(1.0 + R[i, i] - R[j, j] - R[l, l], 0.0))
        q = np.empty(4)
        q[i] = 0.25 * s
        q[j] = (R[j, i] + R[i, j]) / s
        q[l] = (R[l, i] + R[i, l]) / s
        q[3] = (R[l, j] - R[j, l]) / s
    q /= np.linalg.norm(q)
    if q[3] < 0.0:
        q = -q
    return q


def quat_multiply(q1: ArrayLike, q2: ArrayLike) -> np.ndarray:
    """Hamilton product ``q1 ⊗ q2`` (so that ``quat_to_matrix(q1 ⊗ q2) = R(q1) @ R(q2)``)."""
    x1, y1, z1, w1 = _quat(q1)
    x2, y2, z2, w2 = _quat(q2)
    return np.array(
        [
            w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
            w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
            w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
            w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
        ]
    )


def quat_conjugate(q: ArrayLike) -> np.ndarray:
    """Conjugate ``(-x, -y, -z, w)``: the inverse rotation for a unit quaternion."""
    x, y, z, w = _quat(q)
    return np.array([-x, -y, -z, w])


def quat_exp(omega: ArrayLike) -> np.ndarray:
    """Unit quaternion of the rotation vector ``omega``: ``(sin(θ/2) ω/θ, cos(θ/2))``, θ = |ω|.

    No sign canonicalization: for θ > π the scalar part is negative (this is what Pinocchio's
    ``exp3_quat`` and the spherical joint's ``integrate`` return).
    """
    w = _vec3(omega)
    t2 = float(w @ w)
    t = math.sqrt(t2)
    if t < _SMALL_ANGLE:
        a = 0.5 - t2 / 48.0 + t2 * t2 / 3840.0
        c = 1.0 - t2 / 8.0 + t2 * t2 / 384.0
    else:
        s, c = math.sin(0.5 * t), math.cos(0.5 * t)
        a = s / t
    return np.array([a * w[0], a * w[1], a * w[2], c])


def quat_log(q: ArrayLike) -> np.ndarray:
    """Rotation vector ω (|ω| <= π) of the quaternion ``q`` (``q`` and ``-q`` give the same ω).

    Scale invariant: a non-unit quaternion is treated as its normalization (callers that must
    reject non-unit quaternions check the norm themselves).
    """
    q = _quat(q)
    v, w = q[:3], q[3]
    if w < 0.0:
        v, w = -v, -w
    n = math.sqrt(float(v @ v))
    if n == 0.0 and w == 0.0:
        raise ValueError("quat_log: the zero quaternion is not a rotation")
    if n < 1e-8 * w:  # atan(y)/y with y = n/w, series to y^4 (truncation < 1e-32)
        y2 = (n / w) ** 2
        f = 2.0 * (1.0 - y2 / 3.0 + y2 * y2 / 5.0) / w
    else:
        f = 2.0 * math.atan2(n, w) / n
    return f * v


# ----------------------------------------------------------------------------------------------
# SO(3)
def _so3_coeffs(t2: float) -> tuple[float, float, float]:
    """``(sin θ/θ, (1 - cos θ)/θ², (θ - sin θ)/θ³)`` for ``θ² = t2``, accurate for small θ."""
    t = math.sqrt(t2)
    if t < _SMALL_ANGLE:
        a = 1.0 - t2 / 6.0 + t2 * t2 / 120.0
        b = 0.5 - t2 / 24.0 + t2 * t2 / 720.0
        c = 1.0 / 6.0 - t2 / 120.0 + t2 * t2 / 5040.0
    else:
        sh = math.sin(0.5 * t)
        a = math.sin(t) / t
        b = 2.0 * sh * sh / t2
        if t < _SMALL_ANGLE_LOG:
            c = 1.0 / 6.0 - t2 / 120.0 + t2 * t2 / 5040.0 - t2**3 / 362880.0
        else:
            c = (t - math.sin(t)) / (t2 * t)
    return a, b, c


def _so3_inv_coeff(t2: float) -> float:
    """``(1 - (θ/2) cot(θ/2)) / θ²`` for ``θ² = t2`` (the ``[ω]×²`` coefficient of ``J⁻¹``)."""
    if t2 < _SMALL_ANGLE_LOG**2:
        return 1.0 / 12.0 + t2 / 720.0 + t2 * t2 / 30240.0 + t2**3 / 1209600.0
    h = 0.5 * math.sqrt(t2)
    return (1.0 - h * math.cos(h) / math.sin(h)) / t2


def so3_exp(omega: ArrayLike) -> np.ndarray:
    """Rotation matrix ``exp([ω]×)`` (Rodrigues' formula); equals Pinocchio's ``exp3``."""
    w = _vec3(omega)
    a, b, _ = _so3_coeffs(float(w @ w))
    W = skew(w)
    return np.eye(3) + a * W + b * (W @ W)


def so3_log(R: ArrayLike) -> np.ndarray:
    """Rotation vector ω with ``so3_exp(ω) = R`` and ``|ω| <= π``.

    Computed through the quaternion (Shepperd's method, then ``2 atan2(|v|, w)``), which is
    accurate near the identity and near half turns alike. At exactly θ = π the sign of ω is
    arbitrary (both are valid logarithms).
    """
    return quat_log(matrix_to_quat(R))


def so3_right_jacobian(omega: ArrayLike) -> np.ndarray:
    """Right Jacobian ``J_r(ω) = I - (1-cos θ)/θ² [ω]× + (θ-sin θ)/θ³ [ω]×²``.

    ``exp(ω + δ) ≈ exp(ω) exp(J_r(ω) δ)``; Pinocchio calls it ``Jexp3``.
    """
    w = _vec3(omega)
    _, b, c = _so3_coeffs(float(w @ w))
    W = skew(w)
    return np.eye(3) - b * W + c * (W @ W)


def so3_left_jacobian(omega: ArrayLike) -> np.ndarray:
    """Left Jacobian ``J_l(ω) = J_r(-ω) = J_r(ω)ᵀ``: ``exp(ω + δ) ≈ exp(J_l(ω) δ) exp(ω)``.

    It is also the matrix ``V`` of the SE(3) exponential, ``p = J_l(ω) v``.
    """
    w = _vec3(omega)
    _, b, c = _so3_coeffs(float(w @ w))
    W = skew(w)
    return np.eye(3) + b * W + c * (W @ W)


def so3_right_jacobian_inverse(omega: ArrayLike) -> np.ndarray:
    """``J_r(ω)⁻¹ = I + ½[ω]× + (1 - (θ/2)cot(θ/2))/θ² [ω]×²`` (Pinocchio's ``Jlog3`` at ``exp(ω)``).

    Singular at θ = 2π; valid for the logarithm range θ <= π.
    """
    w = _vec3(omega)
    W = skew(w)
    return np.eye(3) + 0.5 * W + _so3_inv_coeff(float(w @ w)) * (W @ W)


def so3_left_jacobian_inverse(omega: ArrayLike) -> np.ndarray:
    """``J_l(ω)⁻¹ = I - ½[ω]× + (1 - (θ/2)cot(θ/2))/θ² [ω]×²``."""
    w = _vec3(omega)
    W = skew(w)
    return np.eye(3) - 0.5 * W + _so3_inv_coeff(float(w @ w)) * (W @ W)


# ----------------------------------------------------------------------------------------------
# SE(3)
def se3_exp(xi: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Exponential of the twist ``xi = [ω; v]`` (**Featherstone order**): ``(R, p)`` with
    ``R = so3_exp(ω)`` and ``p = J_l(ω) v``.

    Pinocchio's ``exp6`` takes ``[v; ω]``: ``pin.exp6(np.r_[v, ω])`` equals ``se3_exp(np.r_[ω, v])``.
    """
    x = np.asarray(xi, dtype=float).reshape(-1)
    if x.shape != (6,):
        raise ValueError(f"expected a 6-vector twist [ω; v], got shape {np.shape(xi)}")
    w, v = x[:3], x[3:]
    a, b, c = _so3_coeffs(float(w @ w))
    W = skew(w)
    W2 = W @ W
    R = np.eye(3) + a * W + b * W2
    p = v + b * (W @ v) + c * (W2 @ v)
    return R, p


def se3_log(R: ArrayLike, p: ArrayLike) -> np.ndarray:
    """Twist ``[ω; v]`` (**Featherstone order**) with ``se3_exp([ω; v]) = (R, p)``, ``|ω| <= π``.

    ``v = J_l(ω)⁻¹ p``. Pinocchio's ``log6`` returns the same twist in the order ``[v; ω]``.
    """
    w = so3_log(R)
    p = _vec3(p)
    W = skew(w)
    v = p - 0.5 * (W @ p) + _so3_inv_coeff(float(w @ w)) * (W @ (W @ p))
    return np.concatenate([w, v])


# ----------------------------------------------------------------------------------------------
# elementary rotations and roll-pitch-yaw
def rot_x(angle: float) -> np.ndarray:
    """Active rotation by ``angle`` (rad) about the x axis."""
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def rot_y(angle: float) -> np.ndarray:
    """Active rotation by ``angle`` (rad) about the y axis."""
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def rot_z(angle: float) -> np.ndarray:
    """Active rotation by ``angle`` (rad) about the z axis."""
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def rpy_to_matrix(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """URDF ``rpy``: ``Rz(yaw) @ Ry(pitch) @ Rx(roll)`` (fixed-axis x, then y, then z)."""
    return rot_z(yaw) @ rot_y(pitch) @ rot_x(roll)


def matrix_to_rpy(R: ArrayLike) -> np.ndarray:
    """``(roll, pitch, yaw)`` with ``rpy_to_matrix(roll, pitch, yaw) = R``.

    Ranges: roll, yaw in [-π, π], pitch in [-π/2, π/2]. Yaw is read first, then pitch and roll
    from ``Rz(-yaw) R = Ry(pitch) Rx(roll)``, so the result reproduces ``R`` to rounding even
    near gimbal lock (|pitch| = π/2, where only roll ∓ yaw is defined; there yaw is set to 0 and the
    rotation about the vertical goes into roll).
    """
    R = _mat3(R)
    if math.hypot(R[0, 0], R[1, 0]) < 1e-15:  # exactly at gimbal lock (to rounding)
        yaw = 0.0
    else:
        yaw = math.atan2(R[1, 0], R[0, 0])
    A = rot_z(-yaw) @ R  # = Ry(pitch) Rx(roll) = [[cp, sp sr, sp cr], [0, cr, -sr], [-sp, cp sr, cp cr]]
    pitch = math.atan2(-A[2, 0], max(A[0, 0], 0.0))  # A00 = cos(pitch) >= 0 up to rounding
    roll = math.atan2(-A[1, 2], A[1, 1])
    return np.array([roll, pitch, yaw])
