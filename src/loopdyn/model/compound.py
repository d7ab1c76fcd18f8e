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
    inboard first (all but the last massless). ``converted_from``: ``"spherical"`` for a ball joint
    inside a loop stored as a gimbal (:meth:`loopdyn.Model.embed_ball_joints`), else empty."""

    name: str
    joint: CompoundJoint
    bodies: tuple[int, ...]
    converted_from: str = ""


# ----------------------------------------------------------------------------------------------
# Gimbals about coordinate axes: the angles of a rotation, and back (a ball joint inside a loop is
# stored as such a gimbal, see Model.embed_ball_joints)

#: The axis sequences a ball joint inside a loop may become, as indices of its frame's x, y, z axes,
#: in the order of preference among equally good ones: Pinocchio's z, y, x first, then the other
#: Tait–Bryan sequences (first and last axes distinct: singular where the middle angle is ±90°), then
#: the proper Euler ones (first and last axes equal: singular where the middle angle is 0 or 180°).
GIMBAL_SEQUENCES = (
    (2, 1, 0), (0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1),
    (0, 1, 0), (0, 2, 0), (1, 0, 1), (1, 2, 1), (2, 0, 2), (2, 1, 2),
)  # fmt: skip

#: ``|cos θ|`` (Tait–Bryan) or ``|sin θ|`` (proper Euler) of the middle angle θ below which a rotation
#: counts as at the gimbal's singularity (the angle rates of an angular velocity blow up as 1/that)
GIMBAL_TOLERANCE = 1e-6

_EYE = np.eye(3)


def gimbal_sequence(axes) -> tuple[int, int, int] | None:
    """The sequence of a gimbal's axes as indices of its frame's x, y, z axes (e.g. ``(2, 1, 0)`` for
    z, y, x), or ``None`` when an axis is not a positive coordinate axis."""
    out = []
    for a in axes:
        a = np.asarray(a, dtype=float)
        k = int(np.argmax(np.abs(a)))
        if a.shape != (3,) or not np.array_equal(a, _EYE[k]):
            return None
        out.append(k)
    return tuple(out) if len(out) == 3 and out[0] != out[1] and out[1] != out[2] else None


def sequence_name(seq) -> str:
    """``"z, y, x"`` for ``(2, 1, 0)``."""
    return ", ".join("xyz"[k] for k in seq)


def _parity(i: int, j: int) -> float:
    """+1 if (i, j, 3 − i − j) is a cyclic permutation of (0, 1, 2), else −1."""
    return 1.0 if (j - i) % 3 == 1 else -1.0


def gimbal_margin(seq, R) -> np.ndarray:
    """Geodesic distance (radians) from the rotation(s) ``R`` (``(..., 3, 3)``) to the singular set of
    the gimbal ``seq``: the rotations with ``R e_c = ±e_a`` (a, c its first and last axes), at the
    angle ``arccos |R[a, c]|``. It is ``π/2 − |θ|`` (Tait–Bryan) or ``min(θ, π − θ)`` (proper Euler)
    for the middle angle θ."""
    R = np.asarray(R, dtype=float)
    return np.arccos(np.clip(np.abs(R[..., seq[0], seq[2]]), 0.0, 1.0))


def choose_gimbal_sequence(rotations) -> tuple[tuple[int, int, int], float]:
    """The sequence of :data:`GIMBAL_SEQUENCES` whose singular set is farthest from every rotation of
    ``rotations`` (``(3, 3)`` or ``(n, 3, 3)``): the largest smallest :func:`gimbal_margin`, ties to
    the earlier sequence. Returns it and its margin (radians). For a single rotation the margin is at
    least ``arccos(1/3)`` = 70.5° (the smallest entry of a rotation matrix is at most 1/3 in
    magnitude), and π/2 at the identity (z, y, x)."""
    R = np.asarray(rotations, dtype=float).reshape(-1, 3, 3)
    best, best_margin = GIMBAL_SEQUENCES[0], -1.0
    for seq in GIMBAL_SEQUENCES:
        margin = float(np.min(gimbal_margin(seq, R)))
        if margin > best_margin + 1e-12:
            best, best_margin = seq, margin
    return best, best_margin


def gimbal_angles(seq, R) -> tuple[np.ndarray, np.ndarray]:
    """Angles ``(q1, q2, q3)`` with ``R = R(e_a, q1) R(e_b, q2) R(e_c, q3)`` for ``seq = (a, b, c)``,
    of one rotation ``(3, 3)`` or a batch ``(..., 3, 3)``; and the distance to the singularity,
    ``|cos q2|`` (Tait–Bryan, ``q2 ∈ [−π/2, π/2]``) or ``|sin q2|`` (proper Euler, ``q2 ∈ [0, π]``),
    with ``q1, q3 ∈ (−π, π]``. Where that distance is 0 only ``q1 ± q3`` is defined (the returned
    split is arbitrary): check it against :data:`GIMBAL_TOLERANCE`."""
    R = np.asarray(R, dtype=float)
    i, j, last = seq
    if i != last:  # Tait–Bryan
        k = last
        e = _parity(i, j)
        lock = np.hypot(R[..., i, i], R[..., i, j])
        q2 = np.arctan2(e * R[..., i, k], lock)
        q1 = np.arctan2(-e * R[..., j, k], R[..., k, k])
        q3 = np.arctan2(-e * R[..., i, j], R[..., i, i])
    else:  # proper Euler: R(e_i) R(e_j) R(e_i)
        k = 3 - i - j
        e = _parity(i, j)
        lock = np.hypot(R[..., j, i], R[..., k, i])
        q2 = np.arctan2(lock, R[..., i, i])
        q1 = np.arctan2(R[..., j, i], -e * R[..., k, i])
        q3 = np.arctan2(R[..., i, j], e * R[..., i, k])
    return np.stack([q1, q2, q3], axis=-1), lock


def _axis_rotation(k: int, t) -> np.ndarray:
    """Rotations about coordinate axis ``k`` by the angles ``t`` (any shape) → ``(..., 3, 3)``."""
    t = np.asarray(t, dtype=float)
    c, s = np.cos(t), np.sin(t)
    R = np.zeros((*t.shape, 3, 3))
    i, j = (k + 1) % 3, (k + 2) % 3
    R[..., k, k] = 1.0
    R[..., i, i] = c
    R[..., j, j] = c
    R[..., j, i] = s
    R[..., i, j] = -s
    return R


def gimbal_rotation(seq, angles) -> np.ndarray:
    """``R(e_a, q1) R(e_b, q2) R(e_c, q3)`` of angles ``(..., 3)`` → ``(..., 3, 3)``."""
    q = np.asarray(angles, dtype=float)
    R1, R2, R3 = (_axis_rotation(seq[n], q[..., n]) for n in range(3))
    return R1 @ R2 @ R3


def gimbal_quaternion(seq, angles) -> np.ndarray:
    """Unit quaternion ``(x, y, z, w)`` of :func:`gimbal_rotation`, the product of the three axis
    quaternions, with ``w ≥ 0``; angles ``(..., 3)`` → ``(..., 4)``."""
    q = np.asarray(angles, dtype=float)
    out = np.zeros((*q.shape[:-1], 4))
    out[..., 3] = 1.0
    for n, k in enumerate(seq):
        h = 0.5 * q[..., n]
        b = np.zeros_like(out)
        b[..., k], b[..., 3] = np.sin(h), np.cos(h)
        x1, y1, z1, w1 = np.moveaxis(out, -1, 0)
        x2, y2, z2, w2 = np.moveaxis(b, -1, 0)
        out = np.stack(
            [
                w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
                w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
                w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
            ],
            axis=-1,
        )
    return np.where(out[..., 3:4] < 0.0, -out, out)


def gimbal_rate_matrix(seq, angles) -> np.ndarray:
    """``E`` with ``ω = E q̇``, ω the angular velocity of the gimbal's child frame relative to its
    parent, in the child frame: columns ``R3ᵀ R2ᵀ e_a``, ``R3ᵀ e_b``, ``e_c``; angles ``(..., 3)`` →
    ``(..., 3, 3)``. Singular exactly where :func:`gimbal_angles` reports the lock."""
    q = np.asarray(angles, dtype=float)
    R2t = np.swapaxes(_axis_rotation(seq[1], q[..., 1]), -1, -2)
    R3t = np.swapaxes(_axis_rotation(seq[2], q[..., 2]), -1, -2)
    E = np.zeros((*q.shape[:-1], 3, 3))
    E[..., :, 0] = (R3t @ R2t)[..., :, seq[0]]
    E[..., :, 1] = R3t[..., :, seq[1]]
    E[..., seq[2], 2] = 1.0
    return E
