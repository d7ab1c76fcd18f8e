"""Configuration-space operations of a kinematic tree: neutral and random configurations, integration
on the manifold, differences, normalization (for any model, with or without loops, use
:mod:`loopdyn.model.configuration`).

Each function matches Pinocchio's function of the same name element by element (same coordinate
layout, same conventions), joint by joint:

* Revolute, Prismatic: ``integrate`` is ``q + v``, ``difference`` is ``q1 - q0``.
* RevoluteUnbounded: ``integrate`` rotates ``(cos θ, sin θ)`` by the angle ``v``; ``difference`` is
  the angle of the relative rotation, in ``(-π, π]``.
* Spherical: ``integrate`` is ``quat ⊗ exp(ω)`` (ω in the child frame, no sign canonicalization:
  the scalar part may become negative for ``|ω| > π``); ``difference`` is
  ``log(quat0⁻¹ ⊗ quat1)`` with ``|ω| <= π``.
* FreeFlyer: ``integrate`` is ``M(q) · exp6(v)`` with ``v = [linear; angular]`` in the child
  frame, and the new quaternion is chosen with a non-negative dot product with the old one;
  ``difference`` is ``log6(M(q0)⁻¹ M(q1))`` as ``[linear; angular]``.

Quaternions are ``(x, y, z, w)``. ``integrate`` and ``difference`` never normalize their inputs:
a quaternion or ``(cos, sin)`` pair whose norm is off by more than :data:`NORM_TOLERANCE` raises
:class:`~loopdyn.errors.ConfigurationError`; within the tolerance the result of ``integrate`` keeps
the input's norm (Pinocchio applies a first-order re-normalization instead, a difference of the
order of the norm error). Call :func:`normalize` explicitly when needed.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from ..errors import ConfigurationError, InputError, NonFiniteError, ShapeError
from ..spatial.lie import (
    quat_exp,
    quat_log,
    quat_multiply,
    quat_to_matrix,
    se3_exp,
    so3_left_jacobian_inverse,
)
from .joints import FREEFLYER, PRISMATIC, REVOLUTE, REVOLUTE_UNBOUNDED, SPHERICAL

if TYPE_CHECKING:
    from .model import Body, Model

__all__ = [
    "NORM_TOLERANCE",
    "neutral",
    "random_configuration",
    "integrate",
    "difference",
    "normalize",
    "is_normalized",
]

#: Largest accepted deviation ``| |q| - 1 |`` of a quaternion or ``(cos, sin)`` pair.
NORM_TOLERANCE = 1e-6

# Sampling ranges for coordinates without finite limits.
_DEFAULT_REVOLUTE_RANGE = math.pi  # [-π, π]
_DEFAULT_PRISMATIC_RANGE = 1.0  # [-1, 1]


# ----------------------------------------------------------------------------------------------
# validation
def _as_vector(x: ArrayLike, size: int, name: str, what: str) -> np.ndarray:
    """``x`` as a new float 1-D array of ``size`` elements, or ShapeError / NonFiniteError."""
    if np.iscomplexobj(x):
        raise InputError(f"{name} must be real, got a complex array")
    try:
        a = np.array(x, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be an array of {size} real numbers ({what}): {exc}") from None
    if a.shape != (size,):
        raise ShapeError(f"{name} must be a 1-D array of size {size} ({what}), got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        bad = np.flatnonzero(~np.isfinite(a))
        raise NonFiniteError(f"{name} contains NaN or inf at index {bad.tolist()}")
    return a


def _as_q(model: Model, q: ArrayLike, name: str) -> np.ndarray:
    return _as_vector(q, model.nq, name, "model.nq")


def _as_v(model: Model, v: ArrayLike, name: str) -> np.ndarray:
    return _as_vector(v, model.nv, name, "model.nv")


def _check_unit(body: Body, q: np.ndarray, name: str, tol: float = NORM_TOLERANCE) -> None:
    """ConfigurationError if the quaternion / (cos, sin) pair of ``body``'s joint is not unit."""
    code = body.joint.code
    if code == SPHERICAL:
        i, n, what = body.idx_q, 4, "quaternion"
    elif code == FREEFLYER:
        i, n, what = body.idx_q + 3, 4, "quaternion"
    elif code == REVOLUTE_UNBOUNDED:
        i, n, what = body.idx_q, 2, "(cos, sin) pair"
    else:
        return
    norm = float(np.linalg.norm(q[i : i + n]))
    if abs(norm - 1.0) > tol:
        raise ConfigurationError(
            f"{name}: {what} {name}[{i}:{i + n}] of joint {body.joint_name!r} ({body.joint.kind}) has norm "
            f"{norm:.9g}, expected 1 (tolerance {tol:g}); call normalize() first"
        )


def _check_all_unit(model: Model, q: np.ndarray, name: str) -> None:
    for body in model.bodies:
        _check_unit(body, q, name)


def as_rng(rng: int | np.random.SeedSequence | np.random.Generator | None) -> np.random.Generator:
    if rng is None or isinstance(rng, int | np.integer | np.random.SeedSequence | np.random.Generator):
        return np.random.default_rng(rng)
    raise InputError(f"rng must be None, an int seed or a numpy.random.Generator, got {rng!r}")


# ----------------------------------------------------------------------------------------------
# per-joint operations (Pinocchio's Lie-group operations)
def _random_quaternion(rng: np.random.Generator) -> np.ndarray:
    """Uniformly distributed rotation (normalized 4-D Gaussian), canonical ``w >= 0``."""
    while True:
        x = rng.standard_normal(4)
        n = float(np.linalg.norm(x))
        if n > 1e-6:
            x /= n
            return -x if x[3] < 0.0 else x


def _sample_interval(rng: np.random.Generator, lo: float, hi: float, half_width: float) -> float:
    """Uniform in [lo, hi]; an infinite side is replaced so that the interval has width
    ``2 half_width`` (both infinite: ``[-half_width, half_width]``)."""
    lo_f, hi_f = math.isfinite(lo), math.isfinite(hi)
    if not lo_f and not hi_f:
        lo, hi = -half_width, half_width
    elif not hi_f:
        hi = lo + 2.0 * half_width
    elif not lo_f:
        lo = hi - 2.0 * half_width
    return float(rng.uniform(lo, hi)) if hi > lo else float(lo)


def _integrate_unbounded(cs: np.ndarray, angle: float) -> np.ndarray:
    c, s = cs
    ca, sa = math.cos(angle), math.sin(angle)
    return np.array([ca * c - sa * s, sa * c + ca * s])


def _difference_unbounded(cs0: np.ndarray, cs1: np.ndarray) -> float:
    c0, s0 = cs0
    c1, s1 = cs1
    return math.atan2(c0 * s1 - s0 * c1, c0 * c1 + s0 * s1)


def _integrate_freeflyer(qj: np.ndarray, vj: np.ndarray) -> np.ndarray:
    p, quat = qj[:3], qj[3:]
    _, dp = se3_exp(np.concatenate([vj[3:], vj[:3]]))  # Featherstone [ω; v] from Pinocchio [v; ω]
    out = np.empty(7)
    out[:3] = p + quat_to_matrix(quat) @ dp
    new = quat_multiply(quat, quat_exp(vj[3:]))
    out[3:] = -new if float(new @ quat) < 0.0 else new  # Pinocchio: keep the new quaternion near the old
    return out


def _difference_freeflyer(q0: np.ndarray, q1: np.ndarray) -> np.ndarray:
    quat0 = q0[3:]
    dp = quat_to_matrix(quat0).T @ (q1[:3] - q0[:3])  # translation of M(q0)⁻¹ M(q1)
    omega = quat_log(quat_multiply(_conj(quat0), q1[3:]))
    out = np.empty(6)
    out[:3] = so3_left_jacobian_inverse(omega) @ dp
    out[3:] = omega
    return out


def _conj(q: np.ndarray) -> np.ndarray:
    return np.array([-q[0], -q[1], -q[2], q[3]])


# ----------------------------------------------------------------------------------------------
# public API
def neutral(model: Model) -> np.ndarray:
    """The neutral configuration (zero angles and displacements, identity rotations), size ``nq``."""
    return np.concatenate([np.zeros(0)] + [b.joint.neutral() for b in model.bodies])


def random_configuration(
    model: Model, rng: int | np.random.SeedSequence | np.random.Generator | None = None
) -> np.ndarray:
    """A random configuration inside the joints' position limits.

    * Revolute / Prismatic: uniform between the finite limits. Without limits, uniform in
      ``[-π, π]`` (revolute) or ``[-1, 1]`` (prismatic); with a single finite limit, an interval of
      the same width starting (or ending) at it.
    * RevoluteUnbounded: a uniform angle, as ``(cos θ, sin θ)``.
    * Spherical: a uniform random rotation (Haar measure on SO(3)), quaternion with ``w >= 0``.
    * FreeFlyer: translation uniform in the joint's ``lower``/``upper`` box (default ±1, an
      infinite bound handled as for prismatic joints), uniform random rotation.

    ``rng`` is ``None`` (fresh entropy), an int seed or a :class:`numpy.random.Generator`.
    """
    gen = as_rng(rng)
    q = np.empty(model.nq)
    for body in model.bodies:
        j = body.joint
        i = body.idx_q
        code = j.code
        if code in (REVOLUTE, PRISMATIC):
            half = _DEFAULT_REVOLUTE_RANGE if code == REVOLUTE else _DEFAULT_PRISMATIC_RANGE
            q[i] = _sample_interval(gen, float(j.lower_position()[0]), float(j.upper_position()[0]), half)
        elif code == REVOLUTE_UNBOUNDED:
            t = gen.uniform(-math.pi, math.pi)
            q[i : i + 2] = (math.cos(t), math.sin(t))
        elif code == SPHERICAL:
            q[i : i + 4] = _random_quaternion(gen)
        elif code == FREEFLYER:
            lo, hi = j.lower_position()[:3], j.upper_position()[:3]
            for k in range(3):
                q[i + k] = _sample_interval(gen, float(lo[k]), float(hi[k]), _DEFAULT_PRISMATIC_RANGE)
            q[i + 3 : i + 7] = _random_quaternion(gen)
        else:  # pragma: no cover - fixed joints have nq = 0 and are never bodies
            raise InputError(f"joint {body.joint_name!r}: unsupported joint type {j.kind!r}")
    return q


def integrate(model: Model, q: ArrayLike, v: ArrayLike, dt: float = 1.0) -> np.ndarray:
    """The configuration reached from ``q`` by moving with constant velocity ``v`` for ``dt``:
    ``q ⊕ v dt`` (Pinocchio's ``integrate(model, q, v * dt)``).

    Raises :class:`~loopdyn.errors.ShapeError` / :class:`~loopdyn.errors.NonFiniteError` for bad
    arrays and :class:`~loopdyn.errors.ConfigurationError` if a quaternion or ``(cos, sin)`` pair of
    ``q`` is not of unit norm (within :data:`NORM_TOLERANCE`; it is not normalized here).
    """
    q = _as_q(model, q, "q")
    v = _as_v(model, v, "v")
    try:
        h = float(dt)
    except (TypeError, ValueError):
        raise InputError(f"dt must be a real number, got {dt!r}") from None
    if not math.isfinite(h):
        raise NonFiniteError(f"dt must be finite, got {dt!r}")
    _check_all_unit(model, q, "q")
    v = v * h
    out = q.copy()
    for body in model.bodies:
        code = body.joint.code
        i, k = body.idx_q, body.idx_v
        if code in (REVOLUTE, PRISMATIC):
            out[i] = q[i] + v[k]
        elif code == REVOLUTE_UNBOUNDED:
            out[i : i + 2] = _integrate_unbounded(q[i : i + 2], v[k])
        elif code == SPHERICAL:
            out[i : i + 4] = quat_multiply(q[i : i + 4], quat_exp(v[k : k + 3]))
        elif code == FREEFLYER:
            out[i : i + 7] = _integrate_freeflyer(q[i : i + 7], v[k : k + 6])
    return out


def difference(model: Model, q0: ArrayLike, q1: ArrayLike) -> np.ndarray:
    """The velocity ``v`` (size ``nv``) with ``integrate(model, q0, v) == q1`` (Pinocchio's
    ``difference``): the shortest one for rotations (angles in ``[-π, π]``).

    Raises :class:`~loopdyn.errors.ShapeError` / :class:`~loopdyn.errors.NonFiniteError` for bad
    arrays and :class:`~loopdyn.errors.ConfigurationError` for non-unit quaternions or
    ``(cos, sin)`` pairs in ``q0`` or ``q1``.
    """
    q0 = _as_q(model, q0, "q0")
    q1 = _as_q(model, q1, "q1")
    _check_all_unit(model, q0, "q0")
    _check_all_unit(model, q1, "q1")
    v = np.empty(model.nv)
    for body in model.bodies:
        code = body.joint.code
        i, k = body.idx_q, body.idx_v
        if code in (REVOLUTE, PRISMATIC):
            v[k] = q1[i] - q0[i]
        elif code == REVOLUTE_UNBOUNDED:
            v[k] = _difference_unbounded(q0[i : i + 2], q1[i : i + 2])
        elif code == SPHERICAL:
            v[k : k + 3] = quat_log(quat_multiply(_conj(q0[i : i + 4]), q1[i : i + 4]))
        elif code == FREEFLYER:
            v[k : k + 6] = _difference_freeflyer(q0[i : i + 7], q1[i : i + 7])
    return v


def normalize(model: Model, q: ArrayLike) -> np.ndarray:
    """A copy of ``q`` with every quaternion and ``(cos, sin)`` pair scaled to unit norm.

    Raises :class:`~loopdyn.errors.ConfigurationError` if one of them is (numerically) zero.
    """
    out = _as_q(model, q, "q")
    for body in model.bodies:
        code = body.joint.code
        if code == SPHERICAL:
            i, n = body.idx_q, 4
        elif code == FREEFLYER:
            i, n = body.idx_q + 3, 4
        elif code == REVOLUTE_UNBOUNDED:
            i, n = body.idx_q, 2
        else:
            continue
        norm = float(np.linalg.norm(out[i : i + n]))
        if not norm > 1e-12:
            raise ConfigurationError(
                f"q: cannot normalize q[{i}:{i + n}] of joint {body.joint_name!r} ({body.joint.kind}): "
                f"norm {norm:.3g}"
            )
        out[i : i + n] /= norm
    return out


def is_normalized(model: Model, q: ArrayLike, tol: float = NORM_TOLERANCE) -> bool:
    """Whether every quaternion and ``(cos, sin)`` pair of ``q`` has a norm within ``tol`` of 1."""
    q = _as_q(model, q, "q")
    try:
        for body in model.bodies:
            _check_unit(body, q, "q", tol)
    except ConfigurationError:
        return False
    return True
