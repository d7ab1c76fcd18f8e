"""Loading MJCF (MuJoCo) robot descriptions into a :class:`~loopdyn.model.model.Model`.

The file is parsed and compiled by the ``mujoco`` package (the optional extra ``loopdyn[mjcf]``), so
MJCF's defaults, ``<include>``, ``childclass``, frame conventions (``euler``, ``axisangle``, ``zaxis``,
...) and inertias computed from geoms are MuJoCo's own. ``mujoco`` is imported here only, when a
function of this module is called; the rest of loopdyn never imports it.

What the compiled ``mjModel`` becomes
-------------------------------------
* **Bodies** keep MuJoCo's depth-first order, so the loopdyn spanning tree has MuJoCo's joint and dof
  order. A body's inertia is ``(body_mass, body_ipos, R(body_iquat) diag(body_inertia) R(body_iquat)ᵀ)``
  expressed in the loopdyn frame of the body. A body without joints is welded to its parent
  (:class:`~loopdyn.model.joints.Fixed`: inertia lumped, ``body`` frame kept); so are mocap bodies.
* **Joints**: ``hinge`` → :class:`~loopdyn.model.joints.Revolute`, ``slide`` →
  :class:`~loopdyn.model.joints.Prismatic`, ``ball`` → :class:`~loopdyn.model.joints.Spherical`
  (inside a loop: a :class:`~loopdyn.model.compound.Gimbal`, see *Ball joints inside loops*),
  ``free`` (top-level bodies only) → :class:`~loopdyn.model.joints.FreeFlyer` (or, with
  ``floating_base=False``, a weld to the world at the joint's ``qpos0``). MuJoCo moves a body by
  its joints in order, each about its own anchor ``jnt_pos`` (in the body frame):
  ``X_body = X_parent · (body_pos, body_quat) · Π_j T(p_j) M_j(q_j) T(−p_j)``. A body with ``n``
  joints becomes a chain of ``n`` loopdyn bodies: the first ``n − 1`` massless, named
  ``"<body>__<joint>"``, the last one named ``"<body>"`` and carrying the inertia. The loopdyn frame of
  a body moved by joints is the frame ``T(p_n)`` of its last joint's anchor (MuJoCo's body frame
  rotated by the joints but with its origin moved to that anchor); it coincides with MuJoCo's body
  frame when the anchor is at the origin (``pos="0 0 0"``, the default). A hinge or slide ``ref``
  is folded into the joint placement so that the loopdyn coordinate *is* ``qpos``.
* **Armature** ``dof_armature`` → the joint's armature (added to the diagonal of the mass matrix, as
  MuJoCo does). Damping, stiffness, friction loss, limits, actuators and contacts are not dynamics of
  the rigid-body model and are not read (``qfrc_bias`` does not contain them either).
* **Sites** become ``op`` frames of the same name; gravity is ``opt.gravity`` (zero if the gravity
  flag is disabled).
* **Equality constraints** (active ones, ``eq_active0``), with ``equality="exact"``:

  - ``connect`` (body or site semantic) → a ``"point"`` loop between the two anchors;
  - ``weld`` → a ``"weld"`` loop between the frame ``(relquat, relpos)`` on body 1 and the frame
    ``(1, anchor)`` on body 2 (site semantic: the two sites' frames); ``torquescale`` only weights
    MuJoCo's soft constraint and does not change the exact one;
  - ``joint`` with a polynomial of degree ≤ 1, ``q₁ − q₁⁰ = a₀ + a₁ (q₂ − q₂⁰)`` → the linear
    constraint ``q₁ − a₁ q₂ = c`` with ``c = q₁⁰ + a₀ − a₁ q₂⁰``; without ``joint2``, ``q₁ = q₁⁰ + a₀``;
  - ``tendon`` on *fixed* tendons with a polynomial of degree ≤ 1,
    ``L₁ − L₁⁰ = a₀ + a₁ (L₂ − L₂⁰)`` with ``L = Σ coef_i q_i`` → a linear constraint on the joints of
    the tendons.

  A linear constraint with ``c = 0`` becomes :meth:`Model.add_linear_constraint
  <loopdyn.model.model.Model.add_linear_constraint>` (an explicit cluster); with ``c ≠ 0`` it becomes
  the affine formula ``φ = K q − c`` of :meth:`Model.add_implicit_constraint
  <loopdyn.model.model.Model.add_implicit_constraint>`. ``equality="ignore"`` drops every equality
  constraint (the spanning tree). The clusters' independent coordinates are chosen automatically
  (MJCF has no such notion). Inactive equalities (``active="false"``) are not loaded.

  Note: loopdyn's weld (and revolute) loop measures the relative orientation by the skew part of the
  relative rotation, which also vanishes at a relative rotation of π; Newton's method started far
  from the assembled configuration (e.g. :func:`loopdyn.random_configuration`) can land there, a
  configuration MuJoCo sees as violating the weld. Move from :func:`loopdyn.neutral` with
  :func:`loopdyn.integrate` instead, or check :func:`to_mujoco`'s state with MuJoCo's ``efc_pos``.

Ball joints inside loops
------------------------
loopdyn's clusters hold 1-DoF joints, so a ball joint that a loop puts inside a cluster (Cassie's
achilles and plantar rods, the rods of parallel ankles) is stored as a
:class:`~loopdyn.model.compound.Gimbal` (:meth:`Model.embed_ball_joints
<loopdyn.model.model.Model.embed_ball_joints>`): three revolute sub-hinges about coordinate axes of
the joint frame, through its anchor, separated by the massless bodies ``"<joint>/1"`` and
``"<joint>/2"`` — exactly the ball joint's motion and dynamics (Jain's partitioning), in the
coordinates ``(q1, q2, q3)``, ``R = R(e_a, q1) R(e_b, q2) R(e_c, q3)``, with the angle rates as
velocities (``ω = E(q) q̇``). The angles are singular (gimbal lock) where the first axis and the turned
last one align: a middle angle of ±90° for three different axes, of 0° or 180° when the first and
last are the same. Per joint, the sequence is the one of the twelve whose singular set is farthest
from the joint's rotations at ``qpos0`` and at the keyframe named ``"home"`` (if there is one):
at least 70.5° of rotation away for one orientation, 90° at ``qpos0`` (the identity: z, y, x,
Pinocchio's ``JointModelSphericalZYX``). The joint works for every rotation closer to those than that
distance. Each converted joint is named in one :class:`~loopdyn.errors.JointConversionWarning` line
with its axes and that distance; :meth:`Model.summary <loopdyn.model.model.Model.summary>` lists it.
A ball joint with armature inside a loop is refused (the armature acts on ω, and has no equivalent on
the angle rates).

Refused with :class:`~loopdyn.errors.UnsupportedFeatureError` naming the element: flexes, spatial
tendons (with ``tendons="error"``, the default; ``tendons="ignore"`` accepts spatial tendons that no
equality uses), tendon armature, equalities of a degree > 1 or of kinds ``flex`` and ``distance``,
a free joint below another body or sharing its body with other joints, a free joint inside a loop,
a ball joint with armature inside a loop, and ``joint`` or ``tendon`` equalities on a ball joint.
Malformed files raise :class:`~loopdyn.errors.MJCFError` with MuJoCo's message; a missing file
raises :class:`~loopdyn.errors.MJCFFileNotFoundError`. Nothing half-built is ever returned.

Coordinates
-----------
loopdyn uses Pinocchio's layout; MuJoCo's differs for quaternions and free joints:

==========  ==========================================  ==========================================
joint       MuJoCo ``qpos`` / ``qvel``                  loopdyn ``q`` / ``v`` (spanning tree)
==========  ==========================================  ==========================================
hinge       angle / rate                                the same numbers (``ref`` folded in)
slide       displacement / rate                         the same numbers (``ref`` folded in)
ball        quaternion (w, x, y, z) / ω in the body     quaternion (x, y, z, w) / the same ω
ball in a   quaternion (w, x, y, z) / ω in the body     the gimbal's angles (q1, q2, q3) / their
loop                                                    rates ``q̇ = E(q)⁻¹ ω``
free        position, quaternion (w, x, y, z) /         position, quaternion (x, y, z, w) /
            linear velocity of the body origin in the   linear velocity in the body frame
            world frame, ω in the body frame            ``Rᵀ v_world``, the same ω
==========  ==========================================  ==========================================

:func:`from_mujoco` and :func:`to_mujoco` convert (free joints welded by ``floating_base=False`` are
dropped, and restored at their ``qpos0`` with zero velocity); so do they MuJoCo's keyframes,
``from_mujoco(model, mj.key_qpos[k], mj.key_qvel[k])``. Positions round-trip bit for bit, except
the quaternions of ball joints inside loops, recomputed from their angles (to rounding error, with
``w ≥ 0``); velocities too except the linear velocity of free joints, which is rotated, and the ω of
ball joints inside loops (round trip to rounding error, ~1e-16 relative). A ball joint inside a loop
whose rotation is at its gimbal's singularity (``|cos q2|`` or ``|sin q2|`` below 1e-6) has no angle
rates: :func:`from_mujoco` raises :class:`~loopdyn.errors.GimbalLockError` naming it. For a model with
constraints ``q``/``v`` are loopdyn's cluster state (:func:`loopdyn.to_spanning`); ``spanning=True``
converts spanning-tree states instead.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import (
    ConfigurationError,
    GimbalLockError,
    InputError,
    MissingDependencyError,
    MJCFError,
    MJCFFileNotFoundError,
    ModelError,
    ShapeError,
    UnsupportedFeatureError,
)
from ..model.compound import (
    GIMBAL_TOLERANCE,
    gimbal_angles,
    gimbal_quaternion,
    gimbal_rate_matrix,
    gimbal_sequence,
    sequence_name,
)
from ..model.joints import Fixed, FreeFlyer, Prismatic, Revolute, Spherical
from ..model.model import Model
from ..spatial.inertia import INERTIA_MODES, MAGNITUDE_LIMIT, Inertia, check_physical_inertia

__all__ = ["MujocoCoordinates", "from_mujoco", "is_mjcf", "load_mjcf", "to_mujoco"]

EQUALITY_MODES = ("exact", "ignore")
TENDON_MODES = ("error", "ignore")

# mjtJoint, mjtEq, mjtWrap, mjtObj values (fixed by MuJoCo's C API)
_FREE, _BALL, _SLIDE, _HINGE = 0, 1, 2, 3
_EQ_CONNECT, _EQ_WELD, _EQ_JOINT, _EQ_TENDON = 0, 1, 2, 3
_EQ_NAMES = {0: "connect", 1: "weld", 2: "joint", 3: "tendon", 4: "flex", 5: "flexvert", 6: "flexstrain"}
_WRAP_JOINT = 1
_OBJ_BODY, _OBJ_SITE = 1, 6
_IGNORE = " (equality='ignore' loads the robot without its equality constraints)"
_JOINT_TYPE_NAMES = {_FREE: "free", _BALL: "ball", _SLIDE: "slide", _HINGE: "hinge"}


def _mujoco():
    """The ``mujoco`` module, or a clear error naming the extra to install."""
    try:
        import mujoco
    except ImportError as exc:
        raise MissingDependencyError(
            "reading MJCF needs the 'mujoco' package: pip install 'loopdyn[mjcf]' (or pip install mujoco)"
        ) from exc
    return mujoco


# ----------------------------------------------------------------------------------------------
# small rigid-motion helpers (R, p) = pose of a child frame in a parent frame
def _quat_matrix(qw) -> np.ndarray:
    """Rotation matrix of a quaternion given w first (normalised here); ``(..., 4)`` → ``(..., 3, 3)``."""
    quat = np.asarray(qw, float)
    w, x, y, z = np.moveaxis(quat / np.linalg.norm(quat, axis=-1, keepdims=True), -1, 0)
    rows = [
        1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
        2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
        2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y),
    ]  # fmt: skip
    return np.stack(rows, axis=-1).reshape(*quat.shape[:-1], 3, 3)


def _axis_angle(axis, angle: float) -> np.ndarray:
    a = np.asarray(axis, float) / np.linalg.norm(axis)
    K = np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])
    return np.eye(3) + math.sin(angle) * K + (1.0 - math.cos(angle)) * (K @ K)


def _compose(A, B):
    """Pose A·B."""
    return A[0] @ B[0], A[0] @ B[1] + A[1]


def _translation(p):
    return np.eye(3), np.asarray(p, float).copy()


_IDENTITY = (np.eye(3), np.zeros(3))


# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class MujocoCoordinates:
    """How a model loaded by :func:`load_mjcf` maps to its ``mjModel``'s ``qpos``/``qvel``
    (``model.mujoco_coordinates``): spanning ``q = qpos[q_index]``, ``v = qvel[v_index]`` then, for
    each kept free joint ``(qpos address, loopdyn v address)`` in ``free``, the linear velocity
    rotated into the body frame. Free joints welded by ``floating_base=False`` are absent from
    ``q``/``v``; :func:`to_mujoco` gives them ``qpos_fill`` (their initial pose) and zero velocity.
    ``gimbals``: the ball joints stored as gimbals (inside loops), each ``(joint name, qpos address,
    qvel address, loopdyn q address, loopdyn v address, axis sequence)``: their quaternion and ω
    become the gimbal's angles and angle rates."""

    nq: int  # MuJoCo's nq / nv
    nv: int
    q_index: np.ndarray
    v_index: np.ndarray
    free: tuple[tuple[int, int], ...]
    qpos_fill: np.ndarray  # qpos of the welded free joints (qpos0), zeros elsewhere
    nbodies: int  # loopdyn bodies when loaded (a later edit of the model invalidates the mapping)
    cache: dict = field(default_factory=dict, compare=False, repr=False)  # cluster-state selection
    gimbals: tuple[tuple[str, int, int, int, int, tuple[int, int, int]], ...] = ()


def _read(source, mujoco):
    """Compile ``source`` (a path, an XML string or an ``MjModel``) → (MjModel, label)."""
    if isinstance(source, mujoco.MjModel):
        return source, "MjModel"
    if isinstance(source, bytes):
        source = source.decode("utf-8")
    if isinstance(source, str) and source.lstrip().startswith("<"):
        try:
            return mujoco.MjModel.from_xml_string(source), "MJCF string"
        except ValueError as exc:
            raise MJCFError(f"MJCF string: {exc}") from None
    if not isinstance(source, str | os.PathLike):
        raise InputError(f"load_mjcf: expected a path, an XML string or a mujoco.MjModel, got {source!r}")
    if isinstance(source, str) and not source.strip():
        raise MJCFError("load_mjcf: the source is an empty string: neither a path nor MJCF XML")
    path = Path(source)
    if path.is_dir():
        raise MJCFError(f"{path}: is a directory, not an MJCF file")
    if not path.is_file():
        raise MJCFFileNotFoundError(f"MJCF file not found: {str(path)!r}")
    try:
        return mujoco.MjModel.from_xml_path(str(path)), str(path)
    except ValueError as exc:
        raise MJCFError(f"{path}: {exc}") from None


def is_mjcf(path) -> bool:
    """Whether ``path`` looks like an MJCF file: a ``.mjcf`` name, or an ``.xml`` file that does not
    exist or whose first kilobytes contain a ``<mujoco`` element (URDF files have ``<robot>``)."""
    p = Path(path)
    if p.suffix.lower() == ".mjcf":
        return True
    if p.suffix.lower() != ".xml":
        return False
    if not p.is_file():
        return True
    with open(p, "rb") as fh:
        return b"<mujoco" in fh.read(4096)


def _names(mujoco, m, objtype: str, n: int, prefix: str) -> list[str]:
    """Names of the ``n`` objects of a type; an unnamed one is called ``<prefix><id>`` (made unique)."""
    names = [_name(mujoco, m, objtype, i, "") for i in range(n)]
    taken = set(names)
    for i, nm in enumerate(names):
        if not nm:
            nm = f"{prefix}{i}"
            while nm in taken:
                nm += "_"
            names[i] = nm
            taken.add(nm)
    return names


def _name(mujoco, m, objtype: str, i: int, fallback: str) -> str:
    name = mujoco.mj_id2name(m, getattr(mujoco.mjtObj, f"mjOBJ_{objtype}"), i)
    return name if name else fallback


def load_mjcf(
    source,
    floating_base: bool | None = None,
    *,
    equality: str = "exact",
    tendons: str = "error",
    name: str | None = None,
    inertia: str = "warn",
) -> Model:
    """Load a robot from an MJCF file (see the module docstring for the mapping).

    Parameters
    ----------
    source:
        Path of an MJCF file, an MJCF document as a string (starting with ``<``), or a compiled
        ``mujoco.MjModel``.
    floating_base:
        ``None`` (default): as the file says (a ``<freejoint/>`` is a free-flyer). ``True``: also
        require a free joint — raise if no top-level body has one. ``False``: weld every free body
        to the world at its initial pose (the free joint's ``qpos0``, i.e. the body's ``pos``/
        ``quat``); :func:`from_mujoco` drops those coordinates and :func:`to_mujoco` restores them.
    equality:
        ``"exact"``: equality constraints become loops and couplings; ``"ignore"``: they are dropped.
    tendons:
        ``"error"``: a spatial tendon is refused; ``"ignore"``: spatial tendons that no equality
        constraint uses are ignored (they act on the robot through actuators and limits only).
    name:
        Model name (default: the ``<mujoco model>`` name).
    inertia:
        What to do with a body whose rotational inertia violates the triangle inequality, as in
        :func:`~loopdyn.io.urdf.load_urdf`: ``"warn"`` (default), ``"physical"`` or ``"accept"``.
        For an MJCF document MuJoCo's own compiler decides first: it refuses such an inertia
        (:class:`~loopdyn.errors.MJCFError` with its message, naming the body and its line) unless
        ``<compiler balanceinertia="true">`` corrects it, so the option matters for a
        ``mujoco.MjModel`` whose arrays were edited after compilation.

    Returns
    -------
    Model
        With ``model.mujoco_coordinates`` (:class:`MujocoCoordinates`) used by :func:`from_mujoco` and
        :func:`to_mujoco`; its clusters are already built; its ball joints inside loops are gimbals
        (one :class:`~loopdyn.errors.JointConversionWarning` line each, see the module docstring).

    Raises
    ------
    MJCFFileNotFoundError, MJCFError, UnsupportedFeatureError, MissingDependencyError
        See the module docstring. ``MJCFError`` also for an empty string or a directory, and for a
        compiled model with a non-finite number, a zero joint axis or a mass, length or inertia
        beyond 1e30 (MuJoCo compiles NaN with a warning only), naming the body, joint, site,
        equality or tendon.
    """
    if inertia not in INERTIA_MODES:
        raise InputError(f"load_mjcf: inertia must be one of {INERTIA_MODES}, got {inertia!r}")
    if equality not in EQUALITY_MODES:
        raise InputError(f"load_mjcf: equality must be one of {EQUALITY_MODES}, got {equality!r}")
    if tendons not in TENDON_MODES:
        raise InputError(f"load_mjcf: tendons must be one of {TENDON_MODES}, got {tendons!r}")
    if floating_base not in (None, True, False):
        raise InputError(f"load_mjcf: floating_base must be None, True or False, got {floating_base!r}")
    mujoco = _mujoco()
    m, label = _read(source, mujoco)
    try:
        return _build(mujoco, m, label, floating_base, equality, tendons, name, inertia)
    except UnsupportedFeatureError as exc:
        raise UnsupportedFeatureError(f"{label}: {exc}") from None
    except ModelError as exc:
        if isinstance(exc, MJCFError):
            raise
        raise MJCFError(f"{label}: {exc}") from None


def _check_supported(mujoco, m, tendons: str) -> None:
    if m.nflex:
        raise UnsupportedFeatureError(
            f"flex {_name(mujoco, m, 'FLEX', 0, '#0')!r}: deformable flexes are not supported"
        )
    for t in range(m.ntendon):
        tname = _name(mujoco, m, "TENDON", t, f"#{t}")
        adr, num = int(m.tendon_adr[t]), int(m.tendon_num[t])
        spatial = any(int(m.wrap_type[k]) != _WRAP_JOINT for k in range(adr, adr + num))
        if spatial and tendons == "error":
            raise UnsupportedFeatureError(
                f"spatial tendon {tname!r}: spatial tendons are not supported (tendons='ignore' ignores "
                "those no equality uses)"
            )
        if hasattr(m, "tendon_armature") and float(m.tendon_armature[t]) != 0.0:
            raise UnsupportedFeatureError(f"tendon {tname!r}: tendon armature is not supported")


def _check_numbers(mujoco, m, body_names: list[str], joint_names: list[str], equality: str) -> None:
    """Refuse what MuJoCo compiles but no rigid-body model has, naming the element: non-finite numbers
    (MuJoCo compiles NaN with a warning only), zero joint axes, masses, lengths and inertias beyond
    :data:`~loopdyn.spatial.inertia.MAGNITUDE_LIMIT`."""

    def check(values, what: str, quantity: str) -> None:
        x = np.asarray(values, float)
        if not np.all(np.isfinite(x)):
            raise ModelError(f"{what}: {quantity} {x.tolist()} is not finite")
        if x.size and float(np.max(np.abs(x))) > MAGNITUDE_LIMIT:
            raise ModelError(
                f"{what}: {quantity} {x.tolist()} is larger than {MAGNITUDE_LIMIT:g} in magnitude: not a "
                "physical value"
            )

    def rotation(quat, what: str, quantity: str) -> None:
        # MuJoCo normalises quaternions: one with an overflowing entry comes out as zeros (times 1/inf)
        check(quat, what, quantity)
        if not float(np.linalg.norm(quat)) > 0.5:
            raise ModelError(f"{what}: {quantity} {np.asarray(quat).tolist()} is not a rotation")

    check(m.opt.gravity, "<option gravity>", "gravity")
    for b in range(1, m.nbody):
        what = f"body {body_names[b]!r}"
        for quantity, arr in (("pos", m.body_pos), ("ipos", m.body_ipos), ("inertia", m.body_inertia)):
            check(arr[b], what, quantity)
        rotation(m.body_quat[b], what, "quat")
        rotation(m.body_iquat[b], what, "iquat")
        check(m.body_mass[b], what, "mass")
    for j in range(m.njnt):
        what = f"joint {joint_names[j]!r} of body {body_names[int(m.jnt_bodyid[j])]!r}"
        check(m.jnt_pos[j], what, "pos")
        check(m.jnt_axis[j], what, "axis")
        if int(m.jnt_type[j]) in (_HINGE, _SLIDE) and not float(np.linalg.norm(m.jnt_axis[j])) > 0.5:
            raise ModelError(f"{what}: axis {np.asarray(m.jnt_axis[j]).tolist()} is not a direction")
        qa = int(m.jnt_qposadr[j])
        check(m.qpos0[qa : qa + {_FREE: 7, _BALL: 4}.get(int(m.jnt_type[j]), 1)], what, "qpos0 (ref)")
    for d in range(m.nv):
        what = f"joint {joint_names[int(m.dof_jntid[d])]!r}"
        check(m.dof_armature[d], what, "armature")
    for s in range(m.nsite):
        what = f"site {_name(mujoco, m, 'SITE', s, f'#{s}')!r}"
        check(m.site_pos[s], what, "pos")
        rotation(m.site_quat[s], what, "quat")
    if equality == "exact":
        for e in range(m.neq):
            if bool(m.eq_active0[e]):
                check(m.eq_data[e], f"equality {_name(mujoco, m, 'EQUALITY', e, f'equality{e}')!r}", "data")
        for t in range(m.ntendon):
            what = f"tendon {_name(mujoco, m, 'TENDON', t, f'#{t}')!r}"
            adr, num = int(m.tendon_adr[t]), int(m.tendon_num[t])
            check(m.wrap_prm[adr : adr + num], what, "coef")
            check(m.tendon_length0[t], what, "length")


def _build(mujoco, m, label, floating_base, equality, tendons, name, inertia_mode="warn") -> Model:
    _check_supported(mujoco, m, tendons)
    body_names = _names(mujoco, m, "BODY", m.nbody, "body")
    joint_names = _names(mujoco, m, "JOINT", m.njnt, "joint")
    _check_numbers(mujoco, m, body_names, joint_names, equality)
    model_name = name or bytes(m.names).split(b"\0", 1)[0].decode() or "mjcf"
    no_gravity = int(m.opt.disableflags) & int(mujoco.mjtDisableBit.mjDSBL_GRAVITY)
    gravity = np.zeros(3) if no_gravity else m.opt.gravity
    model = Model(model_name, gravity=np.array(gravity, float))

    taken = set(body_names)
    # where each MuJoCo body's frame is: (loopdyn body index, pose of the MuJoCo frame in it)
    where: list[tuple[int, tuple]] = [(0, _IDENTITY)]
    welded: list[int] = []  # free joints welded by floating_base=False
    has_free = False
    for b in range(1, m.nbody):
        parent = int(m.body_parentid[b])
        pbody, poff = where[parent]
        offset = _compose(poff, (_quat_matrix(m.body_quat[b]), np.array(m.body_pos[b], float)))
        R_i = _quat_matrix(m.body_iquat[b])
        inertia = Inertia(
            float(m.body_mass[b]),
            np.array(m.body_ipos[b], float),
            R_i @ np.diag(np.array(m.body_inertia[b], float)) @ R_i.T,
            name=f"body {body_names[b]!r}",
        )
        check_physical_inertia(inertia, f"body {body_names[b]!r}", inertia_mode, where=f"{label}: ",
                               hint="pass inertia='accept' to load it as given", stacklevel=3)
        jadr, jnum = int(m.body_jntadr[b]), int(m.body_jntnum[b])
        if jnum == 0:
            idx = model.add_body(
                body_names[b], pbody, Fixed(), offset, inertia, joint_name=f"{body_names[b]}__weld",
                inertia_check="accept",  # checked above
            )
            where.append((idx, offset))
            continue
        cursor = offset
        current = pbody
        for k in range(jnum):
            j = jadr + k
            jtype = int(m.jnt_type[j])
            jname = joint_names[j]
            anchor = np.array(m.jnt_pos[j], float)
            axis = np.array(m.jnt_axis[j], float)
            dof = int(m.jnt_dofadr[j])
            arm = np.array(m.dof_armature[dof : dof + {_FREE: 6, _BALL: 3}.get(jtype, 1)], float)
            last = k == jnum - 1
            bname = body_names[b] if last else f"{body_names[b]}__{jname}"
            if not last:
                while bname in taken:
                    bname += "_"
                taken.add(bname)
            if jtype == _FREE:
                if parent != 0 or jnum != 1:
                    raise UnsupportedFeatureError(
                        f"free joint {jname!r} of body {body_names[b]!r}: a free joint must be the only "
                        "joint of a top-level body"
                    )
                has_free = True
                qa = int(m.jnt_qposadr[j])
                if floating_base is False:  # welded at its initial pose
                    pose = (_quat_matrix(m.qpos0[qa + 3 : qa + 7]), np.array(m.qpos0[qa : qa + 3], float))
                    idx = model.add_body(body_names[b], 0, Fixed(), pose, inertia, joint_name=jname,
                                         inertia_check="accept")
                    welded.append(j)
                    current, cursor = idx, pose
                    break
                joint, placement, anchor = FreeFlyer(), _IDENTITY, np.zeros(3)
            elif jtype == _BALL:
                joint, placement = Spherical(), _compose(cursor, _translation(anchor))
            elif jtype == _HINGE:
                ref = float(m.qpos0[int(m.jnt_qposadr[j])])
                rot = (_axis_angle(axis, -ref), np.zeros(3))
                joint = Revolute(tuple(axis))
                placement = _compose(_compose(cursor, _translation(anchor)), rot)
            elif jtype == _SLIDE:
                ref = float(m.qpos0[int(m.jnt_qposadr[j])])
                joint = Prismatic(tuple(axis))
                shift = _translation(-ref * axis / np.linalg.norm(axis))
                placement = _compose(_compose(cursor, _translation(anchor)), shift)
            else:  # pragma: no cover - MuJoCo has no other joint type
                raise UnsupportedFeatureError(f"joint {jname!r}: unknown joint type {jtype}")
            current = model.add_body(
                bname,
                current,
                joint,
                placement,
                inertia.transformed(np.eye(3), -anchor) if last else None,
                joint_name=jname,
                armature=arm,
                inertia_check="accept",
            )
            cursor = _translation(-anchor)
        where.append((current, cursor))
    if floating_base is True and not has_free:
        raise UnsupportedFeatureError(
            "floating_base=True: no top-level body has a free joint (add <freejoint/> to the root body)"
        )
    for s in range(m.nsite):
        sname = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_SITE, s)
        if not sname:
            continue
        sbody, soff = where[int(m.site_bodyid[s])]
        model.add_frame(sname, sbody, _compose(soff, _site_pose(m, s)))
    if equality == "exact":
        with model.deferred_ball_joints():  # the indices of ``where`` stay valid while loops are added
            _add_equalities(mujoco, m, model, where, body_names, joint_names)
        model.embed_ball_joints(_ball_orientations(mujoco, m, joint_names))
    if model.has_constraints:
        model.clusters()  # built now: a refused cluster is reported by load_mjcf, not later
    model.mujoco_coordinates = _coordinate_map(m, model, welded, joint_names)
    return model


def _ball_orientations(mujoco, m, joint_names) -> dict[str, np.ndarray]:
    """Each ball joint's rotations at ``qpos0`` and at the keyframe named ``"home"`` (if any): a ball
    joint inside a loop becomes a gimbal whose singularity is as far as possible from them."""
    home = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_KEY, "home")
    states = [np.array(m.qpos0, float)] + ([np.array(m.key_qpos[home], float)] if home >= 0 else [])
    out = {}
    for j in range(m.njnt):
        if int(m.jnt_type[j]) == _BALL:
            qa = int(m.jnt_qposadr[j])
            quats = np.array([x[qa : qa + 4] for x in states])
            ok = np.linalg.norm(quats, axis=1) > 1e-12  # MuJoCo normalises a keyframe's quaternions
            out[joint_names[j]] = _quat_matrix(quats[ok])
    return out


def _coordinate_map(m, model: Model, welded: list[int], joint_names: list[str]) -> MujocoCoordinates:
    """qpos/qvel indices of loopdyn's spanning coordinates (MuJoCo's joint order is loopdyn's)."""
    q_index: list[int] = []
    v_index: list[int] = []
    free = []
    gimbals = []
    fill = np.zeros(m.nq)
    for j in range(m.njnt):
        jtype, qa, va = int(m.jnt_type[j]), int(m.jnt_qposadr[j]), int(m.jnt_dofadr[j])
        rec = model.compound_joint(joint_names[j]) if jtype == _BALL else None
        if j in welded:
            fill[qa : qa + 7] = m.qpos0[qa : qa + 7]
        elif jtype == _FREE:
            free.append((len(q_index), len(v_index)))
            q_index += [qa, qa + 1, qa + 2, qa + 4, qa + 5, qa + 6, qa + 3]
            v_index += list(range(va, va + 6))
        elif rec is not None and rec.converted_from:  # a ball joint inside a loop, stored as a gimbal
            seq = gimbal_sequence(rec.joint.axes)
            gimbals.append((joint_names[j], qa, va, len(q_index), len(v_index), seq))
            q_index += [qa + 1, qa + 2, qa + 3]  # placeholders: the angles are computed
            v_index += [va, va + 1, va + 2]
        elif jtype == _BALL:
            q_index += [qa + 1, qa + 2, qa + 3, qa]
            v_index += [va, va + 1, va + 2]
        else:
            q_index.append(qa)
            v_index.append(va)
    if (model.spanning_nq, model.spanning_nv) != (len(q_index), len(v_index)):  # pragma: no cover
        raise ModelError("internal error: loopdyn and MuJoCo coordinate counts differ")
    return MujocoCoordinates(
        int(m.nq),
        int(m.nv),
        np.array(q_index, dtype=np.int64),
        np.array(v_index, dtype=np.int64),
        tuple(free),
        fill,
        model.nbodies,
        gimbals=tuple(gimbals),
    )


def _site_pose(m, s: int):
    return _quat_matrix(m.site_quat[s]), np.array(m.site_pos[s], float)


def _add_equalities(mujoco, m, model: Model, where, body_names, joint_names) -> None:
    """The active equality constraints of ``m`` as loops and linear constraints of ``model``."""
    for e in range(m.neq):
        if not bool(m.eq_active0[e]):
            continue
        etype = int(m.eq_type[e])
        kind = _EQ_NAMES.get(etype, f"type {etype}")
        ename = _name(mujoco, m, "EQUALITY", e, f"equality{e}")
        what = f"{kind} equality {ename!r}"
        data = np.array(m.eq_data[e], float)
        id1, id2 = int(m.eq_obj1id[e]), int(m.eq_obj2id[e])
        if etype in (_EQ_CONNECT, _EQ_WELD):
            if int(m.eq_objtype[e]) == _OBJ_SITE:
                b1, b2 = int(m.site_bodyid[id1]), int(m.site_bodyid[id2])
                A, B = _site_pose(m, id1), _site_pose(m, id2)
                if etype == _EQ_CONNECT:
                    A, B = _translation(A[1]), _translation(B[1])
            else:
                b1, b2 = id1, max(id2, 0)
                if etype == _EQ_CONNECT:
                    A, B = _translation(data[0:3]), _translation(data[3:6])
                else:
                    A, B = (_quat_matrix(data[6:10]), data[3:6].copy()), _translation(data[0:3])
            (l1, o1), (l2, o2) = where[b1], where[b2]
            if l1 == l2:
                raise UnsupportedFeatureError(
                    f"{what}: bodies {body_names[b1]!r} and {body_names[b2]!r} are rigidly attached to each "
                    "other: the constraint ties nothing"
                )
            model.add_loop(
                ename,
                model.body_names[l1],
                model.body_names[l2],
                "point" if etype == _EQ_CONNECT else "weld",
                _compose(o1, A),
                _compose(o2, B),
            )
        elif etype in (_EQ_JOINT, _EQ_TENDON):
            if id2 >= 0 and np.any(data[2:5] != 0.0):  # without a second object only a₀ counts
                raise UnsupportedFeatureError(
                    f"{what}: polycoef {data[:5].tolist()} is nonlinear: only a₀ + a₁·x is supported"
                    + _IGNORE
                )
            a0, a1 = float(data[0]), float(data[1]) if id2 >= 0 else 0.0
            coef: dict[int, float] = {}
            if etype == _EQ_JOINT:
                terms1, rest1 = {id1: 1.0}, float(m.qpos0[int(m.jnt_qposadr[id1])])
                terms2, rest2 = {}, 0.0
                if id2 >= 0:
                    terms2, rest2 = {id2: 1.0}, float(m.qpos0[int(m.jnt_qposadr[id2])])
            else:
                terms1, rest1 = _fixed_tendon(mujoco, m, id1, what)
                terms2, rest2 = _fixed_tendon(mujoco, m, id2, what) if id2 >= 0 else ({}, 0.0)
            for j, c in terms1.items():
                coef[j] = coef.get(j, 0.0) + c
            for j, c in terms2.items():
                coef[j] = coef.get(j, 0.0) - a1 * c
            rhs = rest1 + a0 - a1 * rest2
            joints = [j for j in sorted(coef) if coef[j] != 0.0]
            for j in joints:
                if int(m.jnt_type[j]) not in (_HINGE, _SLIDE):
                    raise UnsupportedFeatureError(
                        f"{what}: joint {joint_names[j]!r} is a {_JOINT_TYPE_NAMES[int(m.jnt_type[j])]} joint"
                    )
            if not joints:
                raise UnsupportedFeatureError(f"{what}: the constraint involves no joint")
            names = [joint_names[j] for j in joints]
            K = np.array([[coef[j] for j in joints]])
            scale = abs(rest1) + abs(a0) + abs(a1 * rest2)
            if abs(rhs) <= 1e-15 * scale:
                model.add_linear_constraint(ename, names, K)
            else:
                model.add_implicit_constraint(ename, names, _affine(K[0].tolist(), rhs))
        else:
            raise UnsupportedFeatureError(f"{what}: {kind} equality constraints are not supported" + _IGNORE)


def _affine(row: list[float], rhs: float):
    """φ(s) = row·s − rhs, for :meth:`Model.add_implicit_constraint`."""
    return lambda s: [sum(k * x for k, x in zip(row, s, strict=True)) - rhs]


def _fixed_tendon(mujoco, m, t: int, what: str) -> tuple[dict[int, float], float]:
    """A fixed tendon's joint coefficients and its length at qpos0 (MuJoCo's reference length)."""
    adr, num = int(m.tendon_adr[t]), int(m.tendon_num[t])
    terms: dict[int, float] = {}
    for k in range(adr, adr + num):
        if int(m.wrap_type[k]) != _WRAP_JOINT:
            tname = _name(mujoco, m, "TENDON", t, f"#{t}")
            raise UnsupportedFeatureError(f"{what}: tendon {tname!r} is a spatial tendon" + _IGNORE)
        j = int(m.wrap_objid[k])
        terms[j] = terms.get(j, 0.0) + float(m.wrap_prm[k])
    return terms, float(m.tendon_length0[t])


# ----------------------------------------------------------------------------------------------
# coordinates
def _coordinates(model) -> MujocoCoordinates:
    mc = getattr(model, "mujoco_coordinates", None)
    if not isinstance(mc, MujocoCoordinates):
        raise InputError(f"model {model.name!r} was not loaded by load_mjcf: no MuJoCo coordinates")
    if (
        model.nbodies != mc.nbodies
        or model.spanning_nq != mc.q_index.size
        or model.spanning_nv != mc.v_index.size
    ):
        raise InputError(f"model {model.name!r} was edited after load_mjcf: its MuJoCo coordinates are stale")
    return mc


def _as_states(x, size: int, what: str) -> np.ndarray:
    """``x`` as a float array of shape ``(size,)`` or ``(n, size)`` (a batch of states), finite."""
    try:
        arr = np.array(x, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{what} must be an array of real numbers: {exc}") from None
    if arr.ndim not in (1, 2) or arr.shape[-1] != size:
        raise ShapeError(f"{what} must have shape ({size},) or (n, {size}), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise InputError(f"{what} contains NaN or inf")
    return arr


def _rotate_free(mc: MujocoCoordinates, q: np.ndarray, v: np.ndarray, inverse: bool) -> None:
    """In place: each free joint's linear velocity in ``v`` (spanning, one state or a batch) times
    ``R`` (``Rᵀ`` if ``inverse``), R from the joint's (x, y, z, w) quaternion in ``q``."""
    for iq, iv in mc.free:
        R = _quat_matrix(q[..., [iq + 6, iq + 3, iq + 4, iq + 5]])
        lin = v[..., iv : iv + 3]
        v[..., iv : iv + 3] = np.einsum("...ji,...j->...i" if inverse else "...ij,...j->...i", R, lin)


def _ball_to_gimbal(mc: MujocoCoordinates, qpos, qvel, q: np.ndarray, v: np.ndarray) -> None:
    """In place: the angles and angle rates of the gimbals (ball joints inside loops) in ``q``/``v``
    (spanning, one state or a batch) from MuJoCo's quaternions and angular velocities."""
    for name, qa, va, iq, iv, seq in mc.gimbals:
        quat = qpos[..., qa : qa + 4]
        norm = np.linalg.norm(quat, axis=-1)
        if np.any(norm < 1e-12):
            raise ConfigurationError(
                f"qpos: the quaternion of ball joint {name!r} (qpos[{qa}:{qa + 4}]) is zero"
            )
        angles, lock = gimbal_angles(seq, _quat_matrix(quat))
        if np.any(lock < GIMBAL_TOLERANCE):
            k = int(np.argmin(np.atleast_1d(lock)))
            state = f" (state {k})" if lock.ndim else ""
            middle = "cos" if seq[0] != seq[2] else "sin"
            raise GimbalLockError(
                f"qpos{state}: ball joint {name!r} is inside a loop and stored as a gimbal about its frame's "
                f"{sequence_name(seq)} axes, and its rotation qpos[{qa}:{qa + 4}] is at the gimbal's "
                f"singularity (|{middle} {name}[1]| = {float(np.atleast_1d(lock)[k]):.3g} < "
                f"{GIMBAL_TOLERANCE:g}), where the angular velocity has no angle rates"
            )
        q[..., iq : iq + 3] = angles
        E = gimbal_rate_matrix(seq, angles)
        v[..., iv : iv + 3] = np.linalg.solve(E, qvel[..., va : va + 3, None])[..., 0]


def _gimbal_to_ball(mc: MujocoCoordinates, q, v, qpos: np.ndarray, qvel: np.ndarray) -> None:
    """In place: MuJoCo's quaternions (w first, w ≥ 0) and angular velocities ``ω = E q̇`` of the
    gimbals in ``qpos``/``qvel``, from loopdyn's spanning ``q``/``v``."""
    for _, qa, va, iq, iv, seq in mc.gimbals:
        angles = q[..., iq : iq + 3]
        qpos[..., qa : qa + 4] = gimbal_quaternion(seq, angles)[..., [3, 0, 1, 2]]
        qvel[..., va : va + 3] = (gimbal_rate_matrix(seq, angles) @ v[..., iv : iv + 3, None])[..., 0]


def _cluster_selection(model, mc: MujocoCoordinates) -> tuple[np.ndarray, np.ndarray]:
    """Indices ``(iq, iv)`` with cluster state ``q = q_span[iq]``, ``v = v_span[iv]``: a single-body
    cluster keeps its joint's coordinates, an explicit cluster its independent positions, an implicit
    one all its spanning positions; velocities are the independent ones. Cached per cluster tree."""
    from ..model.clusters import EXPLICIT

    tree = model.clusters()
    cached = mc.cache.get("selection")
    if cached is not None and cached[0] is tree:
        return cached[1], cached[2]
    iq, iv = np.empty(model.nq, dtype=np.int64), np.empty(model.nv, dtype=np.int64)
    for c in tree.clusters:
        bodies = [model.bodies[b - 1] for b in c.bodies]
        if c.kind == 0:
            b = bodies[0]
            iq[c.iq : c.iq + c.nq] = np.arange(b.idx_q, b.idx_q + c.nq)
            iv[c.iv : c.iv + c.nv] = np.arange(b.idx_v, b.idx_v + c.nv)
            continue
        ind = [bodies[k] for k in c.independent]
        iq[c.iq : c.iq + c.nq] = [b.idx_q for b in (ind if c.kind == EXPLICIT else bodies)]
        iv[c.iv : c.iv + c.nv] = [b.idx_v for b in ind]
    mc.cache["selection"] = (tree, iq, iv)
    return iq, iv


def from_mujoco(model, qpos, qvel, *, spanning: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """loopdyn ``(q, v)`` of MuJoCo's ``(qpos, qvel)`` for a model loaded by :func:`load_mjcf`.

    Quaternions are reordered (w, x, y, z) → (x, y, z, w); a free joint's linear velocity is rotated
    from the world frame into the body frame (with the normalised quaternion); a ball joint inside a
    loop (a gimbal) gets the angles of its quaternion and the angle rates of its ω — at the gimbal's
    singularity :class:`~loopdyn.errors.GimbalLockError` names the joint (and the state of a batch).
    A keyframe converts the same way: ``from_mujoco(model, mj.key_qpos[k], mj.key_qvel[k])``. For a
    model with
    constraints the result is the cluster state (independent velocities; explicit clusters keep
    their independent positions), unless ``spanning=True``; ``qpos``/``qvel`` should then satisfy the
    constraints (MuJoCo's are soft, loopdyn's exact: see :func:`loopdyn.project_configuration`).
    ``qpos``/``qvel`` may also be batches of shape ``(n, nq)``/``(n, nv)`` (a simulation log).
    """
    mc = _coordinates(model)
    qpos = _as_states(qpos, mc.nq, "qpos")
    qvel = _as_states(qvel, mc.nv, "qvel")
    if qpos.shape[:-1] != qvel.shape[:-1]:
        raise ShapeError(f"qpos and qvel hold different numbers of states: {qpos.shape}, {qvel.shape}")
    q = qpos[..., mc.q_index]
    v = qvel[..., mc.v_index]
    _rotate_free(mc, q, v, inverse=True)
    _ball_to_gimbal(mc, qpos, qvel, q, v)
    if spanning or not model.has_constraints:
        return q, v
    iq, iv = _cluster_selection(model, mc)
    return q[..., iq], v[..., iv]


def to_mujoco(model, q, v, *, spanning: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """MuJoCo ``(qpos, qvel)`` of loopdyn's ``(q, v)``: the inverse of :func:`from_mujoco` (a gimbal's
    angles give its ball joint's quaternion, with ``w ≥ 0``, and its rates ``ω = E(q) q̇``). For a
    model with constraints ``(q, v)`` is the cluster state (completed by :func:`loopdyn.to_spanning`)
    unless ``spanning=True``. Batches of states (2-D arrays) are converted row by row."""
    mc = _coordinates(model)
    if model.has_constraints and not spanning:
        from ..model.state import to_spanning

        q = _as_states(q, model.nq, "q")
        v = _as_states(v, model.nv, "v")
        if q.shape[:-1] != v.shape[:-1]:
            raise ShapeError(f"q and v hold different numbers of states: {q.shape}, {v.shape}")
        if q.ndim == 1:
            q, v = to_spanning(model, q, v)
        else:  # a batch: one cluster-kinematics call per state
            pairs = [to_spanning(model, qi, vi) for qi, vi in zip(q, v, strict=True)]
            q = np.array([p[0] for p in pairs]).reshape(-1, model.spanning_nq)
            v = np.array([p[1] for p in pairs]).reshape(-1, model.spanning_nv)
    q = _as_states(q, mc.q_index.size, "q (spanning)")
    v = _as_states(v, mc.v_index.size, "v (spanning)").copy()
    if q.shape[:-1] != v.shape[:-1]:
        raise ShapeError(f"q and v hold different numbers of states: {q.shape}, {v.shape}")
    _rotate_free(mc, q, v, inverse=False)
    qpos = np.broadcast_to(mc.qpos_fill, (*q.shape[:-1], mc.nq)).copy()
    qpos[..., mc.q_index] = q
    qvel = np.zeros((*q.shape[:-1], mc.nv))
    qvel[..., mc.v_index] = v
    _gimbal_to_ball(mc, q, v, qpos, qvel)
    return qpos, qvel
