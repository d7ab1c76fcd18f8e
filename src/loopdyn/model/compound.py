"""Compound joints: universal, gimbal, planar and generic chains of 1-DoF sub-hinges.

A compound joint is **stored as its chain of 1-DoF sub-hinges separated by massless bodies**. This
is Jain's partitioning (*Partitioning of Recursive Multibody Dynamics*, spec
``partitioning-and-constraint-embedding-jain.md`` §1.2–1.4): by Lemma 2.1 a multi-DoF hinge between
bodies k+1 and k has exactly the dynamics of a chain of sub-hinges whose inserted bodies k′ have
zero mass, inertia and gyroscopic force (Eq. 5d), provided the placement factorises (Eq. 5a) and the
hinge map splits into the sub-hinges' columns (Eq. 5b); the articulated inertias of the physical
bodies are then those of the compound joint (Eqs. 17–19). The spec lists universal/gimbal joints
and multi-DoF translational (planar) hinges as the "trivial partitioning" case: each sub-hinge has a
*constant* hinge map, and the identity is used for the factors of Eq. 5a (§1.4 rule 2).

Storing the chain rather than adding kernel paths is a deliberate choice: every existing algorithm
(trees, clusters, Delassus matrices, contact, higher-order derivatives) runs on revolute and
prismatic sub-hinges and massless bodies already, so a compound joint is supported everywhere,
including inside loops, with no kernel change. Its coordinates are the sub-hinge coordinates,
inboard first, and its velocities their rates, so ``q``/``v`` are the joint's own (no change of
variables, unlike :func:`loopdyn.partition` of a quaternion joint).

==================  ====  ====  ===============================================================
joint               nq    nv    coordinates (sub-hinges, inboard first)
==================  ====  ====  ===============================================================
Universal(a1, a2)    2     2    angles (q1, q2): ``R = R(a1, q1) R(a2, q2)`` (Pinocchio's
                                ``JointModelUniversal``); a2 turns with the first rotation
Gimbal(axes)         3     3    angles (q1, q2, q3): ``R = R(a1, q1) R(a2, q2) R(a3, q3)``; the
                                default z, y, x axes are Pinocchio's ``JointModelSphericalZYX``
Planar(normal)       3     3    (x, y, θ): position ``x e1 + y e2`` in the plane ⟂ ``normal``,
                                then rotation θ about ``normal``; rates (ẋ, ẏ, θ̇) in the joint
                                frame (Pinocchio's ``JointModelPlanar`` uses (x, y, cos θ, sin θ)
                                and the child-frame linear velocity instead)
Compound(hinges)     Σ     Σ    the sub-hinges' own coordinates
==================  ====  ====  ===============================================================

``Model.add_body(name, parent, Universal(a1, a2), placement, inertia, joint_name="j")`` adds the
massless bodies ``"j/1"``, …, ``"j/(m−1)"`` (their sub-hinge joints carry the same names) and the
physical body ``name``, moved by the last sub-hinge, whose joint is called ``"j"``: the user's joint
name refers to the physical body, as for any other joint. The model records the compound joint
(:class:`CompoundRecord`), so velocity names (``j[0]``, ``j[1]``), ``Model.summary`` and error
messages talk about it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import ModelError
from .joints import Joint, Prismatic, Revolute, RevoluteUnbounded, unit_axis
from .placement import as_placement

#: sine of the angle below which two axes count as parallel
PARALLEL_TOL = 1e-8
_ONE_DOF = (Revolute, Prismatic, RevoluteUnbounded)


def _raw_axis(axis):
    """``axis`` as a tuple of floats when possible (validated later, by :meth:`CompoundJoint.expand`,
    where the joint's name is known); left as given otherwise."""
    try:
        a = np.asarray(axis, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        return axis
    return tuple(float(x) for x in a)


def _fmt(a) -> str:
    return "(" + ", ".join(f"{float(x):.6g}" for x in a) + ")"


def _check_not_parallel(a, b, joint: str, kind: str, what: str) -> None:
    if np.linalg.norm(np.cross(a, b)) < PARALLEL_TOL:
        raise ModelError(
            f"joint {joint!r}: the {what} of the {kind} joint are parallel ({_fmt(a)} and {_fmt(b)}); "
            "its sub-hinges would not be independent (a singular mass matrix at every configuration)"
        )


def _per_coordinate(value, n: int, joint: str, what: str) -> list:
    """``None``, a scalar or ``n`` values → a list of ``n`` values (``None`` for absent)."""
    if value is None:
        return [None] * n
    try:
        arr = np.atleast_1d(np.asarray(value, dtype=float))
    except (TypeError, ValueError):
        arr = np.full(n + 1, np.nan)  # reported below
    if arr.shape == (1,):
        arr = np.full(n, arr[0])
    if arr.shape != (n,) or np.any(np.isnan(arr)):
        raise ModelError(f"joint {joint!r}: {what} must be None, a number or {n} numbers, got {value!r}")
    return [float(x) for x in arr]


_IDENTITY = (np.eye(3), np.zeros(3))


@dataclass(frozen=True)
class CompoundJoint(Joint):
    """A joint made of 1-DoF sub-hinges (stored as a chain of them with massless bodies between).

    Subclasses define :meth:`expand`: the sub-hinges, inboard first, each a 1-DoF joint and its
    placement ``(R, p)`` relative to the previous sub-hinge's child frame (the first one's relative to
    the compound joint's frame). ``code`` is −1: a compound joint never reaches the kernels.
    """

    code = -1

    @property
    def nq(self) -> int:  # type: ignore[override]
        return sum(j.nq for j, _ in self.expand("compound"))

    @property
    def nv(self) -> int:  # type: ignore[override]
        return sum(j.nv for j, _ in self.expand("compound"))

    def expand(self, name: str) -> list[tuple[Joint, tuple[np.ndarray, np.ndarray]]]:
        """Validated sub-hinges of the joint called ``name`` (errors name it)."""
        raise NotImplementedError

    def _limits(self, name: str, nv: int) -> list[dict]:
        keys = ("lower", "upper", "velocity", "effort")
        vals = {k: _per_coordinate(getattr(self, k), nv, name, k) for k in keys}
        return [{k: vals[k][i] for k in keys} for i in range(nv)]

    def _concat(self, method: str) -> np.ndarray:
        return np.concatenate([getattr(j, method)() for j, _ in self.expand("compound")])

    def neutral(self) -> np.ndarray:
        return self._concat("neutral")

    def lower_position(self) -> np.ndarray:
        return self._concat("lower_position")

    def upper_position(self) -> np.ndarray:
        return self._concat("upper_position")

    def velocity_limit(self) -> np.ndarray:
        return self._concat("velocity_limit")

    def effort_limit(self) -> np.ndarray:
        return self._concat("effort_limit")


@dataclass(frozen=True)
class Universal(CompoundJoint):
    """Two revolutes about ``axis1`` then ``axis2`` (both in the joint frame at q = 0; ``axis2`` turns
    with the first rotation): ``R = R(axis1, q1) R(axis2, q2)``, as Pinocchio's ``JointModelUniversal``.
    The axes must not be parallel. ``lower``/``upper``/``velocity``/``effort``: a number or 2 values."""

    axis1: tuple = (1.0, 0.0, 0.0)
    axis2: tuple = (0.0, 1.0, 0.0)
    lower: object = None
    upper: object = None
    velocity: object = None
    effort: object = None
    kind = "universal"

    def __post_init__(self):
        object.__setattr__(self, "axis1", _raw_axis(self.axis1))
        object.__setattr__(self, "axis2", _raw_axis(self.axis2))

    def expand(self, name: str):
        a1 = unit_axis(self.axis1, f"joint {name!r}", "universal axis1")
        a2 = unit_axis(self.axis2, f"joint {name!r}", "universal axis2")
        _check_not_parallel(a1, a2, name, "universal", "axes")
        lim = self._limits(name, 2)
        return [(Revolute(a1, **lim[0]), _IDENTITY), (Revolute(a2, **lim[1]), _IDENTITY)]


@dataclass(frozen=True)
class Gimbal(CompoundJoint):
    """Three revolutes (a ball joint given as three axes): ``R = R(a1, q1) R(a2, q2) R(a3, q3)``, each
    axis in the frame turned by the previous rotations (intrinsic angles). Default z, y, x: Pinocchio's
    ``JointModelSphericalZYX``. ``a1`` and ``a3`` must not be parallel to ``a2`` (else the joint is
    singular everywhere); it is singular (gimbal lock) where ``R(a2, q2)ᵀ a1`` is parallel to ``a3``."""

    axes: tuple = ((0.0, 0.0, 1.0), (0.0, 1.0, 0.0), (1.0, 0.0, 0.0))
    lower: object = None
    upper: object = None
    velocity: object = None
    effort: object = None
    kind = "gimbal"

    def __post_init__(self):
        try:
            axes = tuple(_raw_axis(a) for a in self.axes)
        except TypeError:
            axes = self.axes
        object.__setattr__(self, "axes", axes)

    def expand(self, name: str):
        try:
            n = len(self.axes)
        except TypeError:
            n = -1
        if n != 3:
            raise ModelError(f"joint {name!r}: a gimbal joint needs 3 axes, got {self.axes!r}")
        a = [unit_axis(x, f"joint {name!r}", f"gimbal axis {k + 1}") for k, x in enumerate(self.axes)]
        _check_not_parallel(a[0], a[1], name, "gimbal", "axes 1 and 2")
        _check_not_parallel(a[1], a[2], name, "gimbal", "axes 2 and 3")
        lim = self._limits(name, 3)
        return [(Revolute(a[k], **lim[k]), _IDENTITY) for k in range(3)]


def plane_basis(normal: np.ndarray, x_axis=None, name: str = "planar") -> tuple[np.ndarray, np.ndarray]:
    """(e1, e2) with e1, e2, normal right-handed orthonormal. ``x_axis`` (default: the joint frame's x
    axis, or its y axis when x is within 25° of the normal) gives e1; it must be ⟂ ``normal``."""
    if x_axis is None:
        x = np.array([1.0, 0.0, 0.0]) if abs(normal[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
        e1 = x - (x @ normal) * normal
        e1 = e1 / np.linalg.norm(e1)
    else:
        e1 = unit_axis(x_axis, f"joint {name!r}", "planar x_axis")
        if abs(e1 @ normal) > 1e-9:
            raise ModelError(f"joint {name!r}: planar x_axis {_fmt(e1)} is not perpendicular to the "
                             f"normal {_fmt(normal)}")
        if abs(e1 @ normal) > 0.0:
            e1 = e1 - (e1 @ normal) * normal
            e1 = e1 / np.linalg.norm(e1)
    return e1, np.cross(normal, e1)


@dataclass(frozen=True)
class Planar(CompoundJoint):
    """Motion in the plane ⟂ ``normal``: prismatic along e1, prismatic along e2, revolute about
    ``normal`` (e1 = ``x_axis``, default the joint frame's x axis projected on the plane; e2 = normal ×
    e1). q = (x, y, θ), v = (ẋ, ẏ, θ̇) with x, y in the joint frame. With normal z this is URDF's
    ``planar`` joint; Pinocchio's ``JointModelPlanar`` has q = (x, y, cos θ, sin θ) and
    v = (Rz(θ)ᵀ (ẋ, ẏ), θ̇)."""

    normal: tuple = (0.0, 0.0, 1.0)
    x_axis: object = None
    lower: object = None
    upper: object = None
    velocity: object = None
    effort: object = None
    kind = "planar"

    def __post_init__(self):
        object.__setattr__(self, "normal", _raw_axis(self.normal))
        if self.x_axis is not None:
            object.__setattr__(self, "x_axis", _raw_axis(self.x_axis))

    def expand(self, name: str):
        n = unit_axis(self.normal, f"joint {name!r}", "planar normal")
        e1, e2 = plane_basis(n, self.x_axis, name)
        lim = self._limits(name, 3)
        return [(Prismatic(e1, **lim[0]), _IDENTITY), (Prismatic(e2, **lim[1]), _IDENTITY),
                (Revolute(n, **lim[2]), _IDENTITY)]


@dataclass(frozen=True, eq=False)
class Compound(CompoundJoint):
    """Any chain of 1-DoF sub-hinges: ``hinges`` is a sequence of ``(joint, placement)`` with ``joint``
    a :class:`Revolute`, :class:`Prismatic` or :class:`RevoluteUnbounded` and ``placement`` (4×4,
    ``(R, p)`` or ``None``) its frame relative to the previous sub-hinge's child frame (the first one's
    relative to the compound joint's frame). :func:`loopdyn.merge` records chains that are not a
    universal, gimbal or planar joint as this."""

    hinges: tuple = ()
    kind = "compound"

    def expand(self, name: str):
        try:
            items = list(self.hinges)
        except TypeError:
            items = None
        if not items:
            raise ModelError(f"joint {name!r}: a compound joint needs a sequence of (joint, placement)")
        out = []
        for k, item in enumerate(items):
            if not (isinstance(item, tuple | list) and len(item) == 2 and isinstance(item[0], _ONE_DOF)):
                raise ModelError(
                    f"joint {name!r}: sub-hinge {k + 1} must be (Revolute|Prismatic|RevoluteUnbounded, "
                    f"placement), got {item!r}"
                )
            out.append((item[0], as_placement(item[1], f"joint {name!r}: placement of sub-hinge {k + 1}")))
        return out

    def __eq__(self, other) -> bool:
        if type(other) is not Compound:
            return NotImplemented
        a, b = self.expand("compound"), other.expand("compound")
        return len(a) == len(b) and all(
            ja == jb and np.array_equal(pa[0], pb[0]) and np.array_equal(pa[1], pb[1])
            for (ja, pa), (jb, pb) in zip(a, b, strict=True)
        )

    __hash__ = None  # type: ignore[assignment]


@dataclass(frozen=True)
class CompoundRecord:
    """A compound joint of a model: its ``name`` (the joint name of the last sub-hinge, which moves the
    physical body), the :class:`CompoundJoint` and the model's body indices of its sub-hinges,
    inboard first (all but the last massless)."""

    name: str
    joint: CompoundJoint
    bodies: tuple[int, ...]
