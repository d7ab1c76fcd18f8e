"""Joint types of a kinematic tree.

Coordinates follow Pinocchio's layout so that vectors can be compared element by element:

==================  ====  ====  =====================================================================
joint               nq    nv    coordinates
==================  ====  ====  =====================================================================
Revolute(axis)       1     1    angle [rad]
RevoluteUnbounded    2     1    (cos θ, sin θ) — URDF ``continuous`` (Pinocchio ``RevoluteUnbounded``)
Prismatic(axis)      1     1    displacement [m]
Spherical            4     3    quaternion (x, y, z, w); velocity = angular velocity in the child frame
FreeFlyer            7     6    position of the child in the parent frame, quaternion (x, y, z, w);
                                velocity = (linear, angular) velocity of the child in the child frame
Fixed                0     0    none: the child is merged into its parent (inertia lumped, a frame kept)
==================  ====  ====  =====================================================================

Compound joints (``Universal``, ``Gimbal``, ``Planar``, ``Compound``: chains of these 1-DoF joints
with massless bodies between them) are in :mod:`loopdyn.model.compound`.

Each joint's motion is applied after its fixed placement in the parent body:
``parent_M_child = placement * joint_motion(q)``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import ModelError

# Integer type codes used by the compiled kernels. Never reorder: cached kernels depend on them.
FIXED = 0
REVOLUTE = 1
REVOLUTE_UNBOUNDED = 2
PRISMATIC = 3
SPHERICAL = 4
FREEFLYER = 5


def unit_axis(axis, where: str, what: str = "axis") -> np.ndarray:
    """``axis`` as a unit 3-vector, or a :class:`ModelError` "``where``: ``what`` …" saying why not
    (not 3 finite numbers, or zero length)."""
    try:
        a = np.asarray(axis, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        a = np.zeros(0)
    if a.shape != (3,) or not np.all(np.isfinite(a)):
        raise ModelError(f"{where}: {what} must be 3 finite numbers, got {axis!r}")
    scale = float(np.max(np.abs(a)))
    if scale > 1e150:  # rescaled first, so that the norm does not overflow (entries up to 1e308)
        a = a / scale
    n = float(np.linalg.norm(a))
    if n < 1e-12:
        raise ModelError(f"{where}: {what} {axis!r} has zero length")
    return a / n


def _limit(value, default: float) -> float:
    if value is None:
        return default
    v = float(value)
    if math.isnan(v):
        raise ModelError(f"joint limit is NaN: {value!r}")
    return v


@dataclass(frozen=True)
class Joint:
    """Base class of joints. ``nq``/``nv`` are class constants; ``code`` identifies the kernel path."""

    code = -1
    nq = 0
    nv = 0
    kind = "joint"

    def neutral(self) -> np.ndarray:
        return np.zeros(self.nq)

    # limits: arrays of size nq (position) and nv (velocity, effort); inf when absent
    def lower_position(self) -> np.ndarray:
        return np.full(self.nq, -np.inf)

    def upper_position(self) -> np.ndarray:
        return np.full(self.nq, np.inf)

    def velocity_limit(self) -> np.ndarray:
        return np.full(self.nv, np.inf)

    def effort_limit(self) -> np.ndarray:
        return np.full(self.nv, np.inf)

    def axis_array(self) -> np.ndarray:
        return np.zeros(3)


@dataclass(frozen=True)
class _OneDof(Joint):
    axis: tuple = (0.0, 0.0, 1.0)
    lower: float | None = None
    upper: float | None = None
    velocity: float | None = None
    effort: float | None = None
    nq = 1
    nv = 1

    def __post_init__(self):
        object.__setattr__(self, "axis", tuple(unit_axis(self.axis, type(self).__name__)))
        lo, hi = _limit(self.lower, -np.inf), _limit(self.upper, np.inf)
        if lo > hi:
            raise ModelError(f"{type(self).__name__}: lower limit {lo} > upper limit {hi}")

    def axis_array(self) -> np.ndarray:
        return np.array(self.axis, dtype=float)

    def lower_position(self) -> np.ndarray:
        return np.full(self.nq, _limit(self.lower, -np.inf))

    def upper_position(self) -> np.ndarray:
        return np.full(self.nq, _limit(self.upper, np.inf))

    def velocity_limit(self) -> np.ndarray:
        return np.full(1, _limit(self.velocity, np.inf))

    def effort_limit(self) -> np.ndarray:
        return np.full(1, _limit(self.effort, np.inf))


@dataclass(frozen=True)
class Revolute(_OneDof):
    """Rotation about a unit ``axis`` of the joint frame; q = angle (rad)."""

    code = REVOLUTE
    kind = "revolute"


@dataclass(frozen=True)
class Prismatic(_OneDof):
    """Translation along a unit ``axis`` of the joint frame; q = displacement (m)."""

    code = PRISMATIC
    kind = "prismatic"


@dataclass(frozen=True)
class RevoluteUnbounded(_OneDof):
    """Unlimited rotation about ``axis``; q = (cos θ, sin θ) as Pinocchio's ``RevoluteUnbounded``."""

    code = REVOLUTE_UNBOUNDED
    kind = "continuous"
    nq = 2

    def neutral(self) -> np.ndarray:
        return np.array([1.0, 0.0])

    def lower_position(self) -> np.ndarray:
        return np.full(2, -1.0)

    def upper_position(self) -> np.ndarray:
        return np.full(2, 1.0)


@dataclass(frozen=True)
class Spherical(Joint):
    """Ball joint; q = unit quaternion (x, y, z, w), v = angular velocity in the child frame."""

    code = SPHERICAL
    kind = "spherical"
    nq = 4
    nv = 3

    def neutral(self) -> np.ndarray:
        return np.array([0.0, 0.0, 0.0, 1.0])

    def lower_position(self) -> np.ndarray:
        return np.full(4, -1.0)

    def upper_position(self) -> np.ndarray:
        return np.full(4, 1.0)


@dataclass(frozen=True)
class FreeFlyer(Joint):
    """Six-DoF joint; q = (position, quaternion xyzw), v = (linear, angular) velocity in the child frame.

    ``lower``/``upper`` bound the translation (3 values each); they are used by
    :func:`loopdyn.random_configuration` only.
    """

    lower: tuple = field(default=(-1.0, -1.0, -1.0))
    upper: tuple = field(default=(1.0, 1.0, 1.0))
    code = FREEFLYER
    kind = "free-flyer"
    nq = 7
    nv = 6

    def neutral(self) -> np.ndarray:
        return np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0])

    def lower_position(self) -> np.ndarray:
        return np.concatenate([np.asarray(self.lower, float), -np.ones(4)])

    def upper_position(self) -> np.ndarray:
        return np.concatenate([np.asarray(self.upper, float), np.ones(4)])


@dataclass(frozen=True)
class Fixed(Joint):
    """Rigid attachment: the child is merged into its parent (inertia lumped), as in Pinocchio."""

    code = FIXED
    kind = "fixed"
