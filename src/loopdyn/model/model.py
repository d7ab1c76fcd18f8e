"""Building a kinematic-tree model body by body.

A :class:`Model` is a Python object for *building*: bodies, joints, frames, names. Algorithms run on
its compiled form (flat NumPy arrays, see :mod:`loopdyn.model.layout`), which every
:class:`~loopdyn.model.data.Data` created by :meth:`Model.create_data` carries.

Indices follow Pinocchio: body/joint 0 is the ``"universe"``; body ``i`` is moved by joint ``i``.
"""

from __future__ import annotations

import math
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, replace

import numpy as np

from ..errors import (
    JointConversionWarning,
    ModelError,
    UnknownNameError,
    UnsupportedFeatureError,
    unknown_name,
)
from ..spatial.inertia import INERTIA_MODES, Inertia, check_physical_inertia
from ..spatial.lie import quat_to_matrix
from . import layout as L
from .compound import (
    CompoundJoint,
    CompoundRecord,
    Gimbal,
    choose_gimbal_sequence,
    gimbal_angles,
    sequence_name,
)
from .joints import FIXED, SPHERICAL, FreeFlyer, Joint
from .placement import as_placement, homogeneous

# Frame kinds (as Pinocchio's FrameType)
OP_FRAME = "op"
JOINT_FRAME = "joint"
FIXED_JOINT_FRAME = "fixed_joint"
BODY_FRAME = "body"
FRAME_KINDS = (OP_FRAME, JOINT_FRAME, FIXED_JOINT_FRAME, BODY_FRAME)


@dataclass
class Frame:
    """A named frame rigidly attached to body ``body`` at ``(rotation, translation)`` in its frame."""

    name: str
    body: int
    rotation: np.ndarray
    translation: np.ndarray
    kind: str = OP_FRAME

    @property
    def placement(self) -> np.ndarray:
        """4×4 placement of the frame in its body's frame."""
        return homogeneous(self.rotation, self.translation)


@dataclass
class Body:
    """One moving body of the tree and the joint that moves it (joint i moves body i)."""

    name: str
    joint_name: str
    parent: int
    joint: Joint
    rotation: np.ndarray  # joint placement in the parent body's frame
    translation: np.ndarray
    inertia: Inertia
    idx_q: int  # index in the spanning-tree configuration
    idx_v: int  # index in the spanning-tree velocity
    independent: bool = True  # inside a cluster: is this joint's coordinate an independent one?
    armature: np.ndarray | None = None  # (joint.nv,) added to the mass matrix's diagonal (None: zeros)

    def armature_vector(self) -> np.ndarray:
        """The joint's armature, one value per velocity coordinate."""
        return np.zeros(self.joint.nv) if self.armature is None else self.armature


class Model:
    """A kinematic tree of rigid bodies, built with :meth:`add_body`.

    Parameters
    ----------
    name:
        A label for the robot.
    gravity:
        Gravity vector in the world frame (default ``(0, 0, -9.81)``).
    """

    def __init__(self, name: str = "model", gravity=(0.0, 0.0, -9.81)):
        self.name = name
        g = np.array(gravity, dtype=float).reshape(-1)
        if g.shape != (3,) or not np.all(np.isfinite(g)):
            raise ModelError(f"gravity must be 3 finite numbers, got {gravity!r}")
        self._gravity = g
        self.bodies: list[Body] = []
        self.frames: list[Frame] = [Frame("universe", 0, np.eye(3), np.zeros(3), FIXED_JOINT_FRAME)]
        self.universe_inertia = Inertia.zero()  # what fixed links attached to the world add up to
        self.constraints: list = []  # loop and coupling constraints (loopdyn.constraints.definitions)
        self.declared_clusters: list[tuple[str, ...]] = []  # clusters declared with add_cluster
        self._constraint_tolerance = 1e-8
        self._reference = None  # spanning-tree configuration the loops are assembled around (None: zero)
        self._ball_joints_deferred = 0  # > 0 inside deferred_ball_joints(): no automatic Gimbal
        self._nq = 0  # spanning-tree sizes
        self._nv = 0
        self._clusters = None
        self._version = 0
        self._key = object()  # identity token: a Data is valid while its token is the model's
        self._compiled = None
        #: compound joints (universal, gimbal, planar, chains recorded by ``merge``), each stored as its
        #: chain of 1-DoF sub-hinges (:mod:`loopdyn.model.compound`)
        self.compound_joints: list[CompoundRecord] = []
        #: True if the model has loop or coupling constraints (it is then a tree of clusters). Kept up
        #: to date by every change through the builder methods; read it, never set it. A plain
        #: attribute, not a property: every public function reads it to choose its kernel.
        self.has_constraints = False

    # ------------------------------------------------------------------------------------------
    # sizes and names
    @property
    def nq(self) -> int:
        """Size of the configuration vector: the spanning tree's for a tree model; for a model with
        constraints, per cluster the independent positions (explicit constraints) or the spanning
        positions (implicit constraints)."""
        return self.clusters().nq if self.has_constraints else self._nq

    @property
    def nv(self) -> int:
        """Number of independent velocities."""
        return self.clusters().nv if self.has_constraints else self._nv

    @property
    def spanning_nq(self) -> int:
        """Configuration size of the spanning tree (all bodies, no constraints)."""
        return self._nq

    @property
    def spanning_nv(self) -> int:
        return self._nv

    @property
    def nbodies(self) -> int:
        """Number of moving bodies (= number of joints, universe excluded)."""
        return len(self.bodies)

    @property
    def njoints(self) -> int:
        """Number of joints including the universe (Pinocchio's ``njoints``)."""
        return len(self.bodies) + 1

    @property
    def gravity(self) -> np.ndarray:
        return self._gravity.copy()

    @gravity.setter
    def gravity(self, value) -> None:
        g = np.array(value, dtype=float).reshape(-1)
        if g.shape != (3,) or not np.all(np.isfinite(g)):
            raise ModelError(f"gravity must be 3 finite numbers, got {value!r}")
        self._gravity = g
        self._touch()

    @property
    def body_names(self) -> list[str]:
        """Names of the bodies, index 0 = ``"universe"``."""
        return ["universe"] + [b.name for b in self.bodies]

    @property
    def joint_names(self) -> list[str]:
        """Names of the joints, index 0 = ``"universe"`` (Pinocchio's ``model.names``)."""
        return ["universe"] + [b.joint_name for b in self.bodies]

    @property
    def velocity_names(self) -> list[str]:
        """One name per velocity coordinate: the joint name, ``name[k]`` for multi-DoF joints (and for
        the sub-hinges of a compound joint ``name``); for a model with constraints, the independent
        joints in state order."""
        if self.has_constraints:
            return self.clusters().velocity_names
        return self.spanning_velocity_names

    @property
    def spanning_velocity_names(self) -> list[str]:
        """Velocity names of the spanning tree."""
        out = []
        compound = {}
        for rec in self.compound_joints:
            for k, i in enumerate(rec.bodies):
                compound[i] = (rec.name, k)
        for i, b in enumerate(self.bodies, start=1):
            if i in compound:
                out.append(f"{compound[i][0]}[{compound[i][1]}]")
            elif b.joint.nv == 1:
                out.append(b.joint_name)
            else:
                out.extend(f"{b.joint_name}[{k}]" for k in range(b.joint.nv))
        return out

    @property
    def frame_names(self) -> list[str]:
        return [f.name for f in self.frames]

    def compound_joint(self, name: str) -> CompoundRecord | None:
        """The compound joint called ``name`` (:class:`~loopdyn.model.compound.CompoundRecord`), or
        ``None`` if ``name`` is not one."""
        for rec in self.compound_joints:
            if rec.name == name:
                return rec
        return None

    def joint_label(self, index: int) -> str:
        """``'name'`` of joint ``index``, and for a sub-hinge of a compound joint which one it is
        (used by error messages)."""
        name = self.bodies[index - 1].joint_name
        for rec in self.compound_joints:
            if index in rec.bodies:
                k = rec.bodies.index(index)
                return (f"{name!r} (sub-hinge {k + 1} of {len(rec.bodies)} of {rec.joint.kind} joint "
                        f"{rec.name!r})")
        return repr(name)

    def body_id(self, name: str) -> int:
        """Index of the body called ``name`` (0 for ``"universe"``)."""
        if name == "universe":
            return 0
        for i, b in enumerate(self.bodies):
            if b.name == name:
                return i + 1
        raise unknown_name("body", name, self.body_names, f"model {self.name!r}")

    def joint_id(self, name: str) -> int:
        """Index of the joint called ``name`` (0 for ``"universe"``)."""
        if name == "universe":
            return 0
        for i, b in enumerate(self.bodies):
            if b.joint_name == name:
                return i + 1
        raise unknown_name("joint", name, self.joint_names, f"model {self.name!r}")

    def frame_id(self, name: str, kind: str | None = None) -> int:
        """Index of the frame called ``name`` (optionally of a given kind: body, joint, fixed_joint, op)."""
        for i, f in enumerate(self.frames):
            if f.name == name and (kind is None or f.kind == kind):
                return i
        what = "frame" + (f" of kind {kind!r}" if kind else "")
        raise unknown_name(what, name, self.frame_names, f"model {self.name!r}")

    def frame_index(self, frame) -> int:
        """Index of ``frame``: a frame index, or a name (a body's frame first, then any other frame of
        that name). Raises :class:`~loopdyn.errors.UnknownNameError` listing close names."""
        if isinstance(frame, int | np.integer) and not isinstance(frame, bool):
            if not 0 <= int(frame) < len(self.frames):
                raise UnknownNameError(
                    f"frame index {frame} out of range (model {self.name!r} has {len(self.frames)} frames)"
                )
            return int(frame)
        if not isinstance(frame, str):
            raise UnknownNameError(f"a frame is given by its name or index, got {frame!r}")
        for kind in (BODY_FRAME, None):
            for i, f in enumerate(self.frames):
                if f.name == frame and (kind is None or f.kind == kind):
                    return i
        raise unknown_name("frame", frame, self.frame_names, f"model {self.name!r}")

    def _resolve_parent(self, parent) -> tuple[int, np.ndarray, np.ndarray]:
        """Parent given by body index, body name or frame name → (body, R, p) of that frame in the body."""
        if parent is None:
            return 0, np.eye(3), np.zeros(3)
        if isinstance(parent, int | np.integer):
            if not 0 <= int(parent) <= self.nbodies:
                raise ModelError(f"parent index {parent} out of range (model has {self.nbodies} bodies)")
            return int(parent), np.eye(3), np.zeros(3)
        if not isinstance(parent, str):
            raise ModelError(f"parent must be a body index or a name, got {parent!r}")
        for kind in (BODY_FRAME, None):
            for f in self.frames:
                if f.name == parent and (kind is None or f.kind == kind):
                    return f.body, f.rotation, f.translation
        raise ModelError(f"unknown parent {parent!r}: no body or frame of that name in model {self.name!r}")

    def _check_new_name(self, name: str, what: str) -> None:
        if not isinstance(name, str) or not name:
            raise ModelError(f"{what} name must be a non-empty string, got {name!r}")

    # ------------------------------------------------------------------------------------------
    # building
    def add_body(
        self,
        name: str,
        parent,
        joint: Joint,
        placement=None,
        inertia: Inertia | None = None,
        *,
        joint_name: str | None = None,
        independent: bool = True,
        armature=0.0,
        inertia_check: str = "warn",
    ) -> int:
        """Add a body moved by ``joint`` relative to ``parent``.

        Parameters
        ----------
        name:
            Body (link) name; must be unique.
        parent:
            Parent body index, body name or frame name (0, ``None`` or ``"universe"``: the world).
            Naming a link that was merged by a fixed joint attaches to the body it was merged into.
        joint:
            A joint instance (:mod:`loopdyn.model.joints`). :class:`~loopdyn.model.joints.Fixed`
            merges the body into its parent: inertia lumped, a ``body`` frame and a ``fixed_joint``
            frame added, no new coordinates.
        placement:
            Joint frame in the parent frame: 4×4 homogeneous matrix or ``(R, p)``; default identity.
        inertia:
            :class:`~loopdyn.spatial.inertia.Inertia` of the body in its own (joint) frame.
        joint_name:
            Name of the joint (default: ``name``).
        independent:
            For a joint that ends up inside a cluster (a loop or a coupling): whether its coordinate is
            one of the cluster's independent coordinates (URDF+ ``independent``); for a compound joint,
            of all its sub-hinges. Ignored otherwise.
        armature:
            Rotor inertia reflected through a transmission, added to the diagonal of the mass matrix
            (``M + diag(armature)``, Pinocchio's ``model.armature``): a scalar for every velocity
            coordinate of the joint or one value per coordinate, finite and ≥ 0. A fixed joint
            accepts only 0.
        inertia_check:
            What to do if ``inertia``'s rotational inertia about its centre of mass violates the
            triangle inequality (no rigid body has it; see
            :func:`~loopdyn.spatial.inertia.inertia_violation`): ``"warn"`` (default) adds the body
            with an :class:`~loopdyn.errors.InertiaWarning` naming it, ``"physical"`` raises
            :class:`~loopdyn.errors.ModelError`, ``"accept"`` adds it silently (the loaders pass
            ``"accept"``: they check each link themselves, naming its file and line).

        Returns
        -------
        int
            Index of the new body, or for a fixed joint the index of the body it was merged into.
        """
        self._check_new_name(name, "body")
        jname = name if joint_name is None else joint_name
        self._check_new_name(jname, "joint")
        if not isinstance(joint, Joint):
            raise ModelError(f"{jname}: joint must be a loopdyn joint instance, got {joint!r}")
        if any(f.name == name and f.kind == BODY_FRAME for f in self.frames):
            raise ModelError(f"duplicate body name {name!r}")
        if any(f.name == jname and f.kind in (JOINT_FRAME, FIXED_JOINT_FRAME) for f in self.frames):
            raise ModelError(f"duplicate joint name {jname!r}")
        if inertia is not None and not isinstance(inertia, Inertia):
            raise ModelError(f"{name}: inertia must be a loopdyn Inertia, got {inertia!r}")
        if isinstance(joint, CompoundJoint):
            self._check_inertia(inertia, name, inertia_check)
            return self._add_compound(name, parent, joint, placement, inertia, jname, independent, armature)
        parent_body, Rf, pf = self._resolve_parent(parent)
        R, p = as_placement(placement, f"placement of joint {jname!r}")
        # the joint frame expressed in the parent *body* frame
        Rj, pj = Rf @ R, Rf @ p + pf
        inertia = Inertia.zero() if inertia is None else inertia
        self._check_inertia(inertia, name, inertia_check)
        if isinstance(joint, FreeFlyer) and parent_body != 0:
            # allowed (Pinocchio allows it too), nothing special needed
            pass
        arm = _armature_values(armature, joint.nv, f"armature of joint {jname!r}")

        if joint.code == FIXED:
            lumped = inertia.transformed(Rj, pj)
            if parent_body == 0:
                self.universe_inertia = self.universe_inertia + lumped
            else:
                b = self.bodies[parent_body - 1]
                b.inertia = b.inertia + lumped
            self.frames.append(Frame(jname, parent_body, Rj, pj, FIXED_JOINT_FRAME))
            self.frames.append(Frame(name, parent_body, Rj, pj, BODY_FRAME))
            self._touch()
            return parent_body

        body = Body(
            name, jname, parent_body, joint, Rj, pj, inertia, self._nq, self._nv, bool(independent), arm
        )
        self.bodies.append(body)
        idx = len(self.bodies)
        self._nq += joint.nq
        self._nv += joint.nv
        self.frames.append(Frame(jname, idx, np.eye(3), np.zeros(3), JOINT_FRAME))
        self.frames.append(Frame(name, idx, np.eye(3), np.zeros(3), BODY_FRAME))
        self._touch()
        return idx

    @staticmethod
    def _check_inertia(inertia: Inertia | None, name: str, mode: str) -> None:
        """``add_body``'s ``inertia_check``; a warning points at the caller of ``add_body``."""
        if mode not in INERTIA_MODES:
            raise ModelError(f"body {name!r}: inertia_check must be one of {INERTIA_MODES}, got {mode!r}")
        if inertia is not None:
            check_physical_inertia(
                inertia, f"body {name!r}", mode, hint="pass inertia_check='accept' to add it as given",
                stacklevel=3,
            )

    def _add_compound(self, name, parent, joint, placement, inertia, jname, independent, armature,
                      names=None) -> int:
        """Add the chain of sub-hinges of a compound joint (see :meth:`add_body`) and record it.
        ``names``: (body name, joint name) of each sub-hinge but the last (default ``<jname>/k``)."""
        subs = joint.expand(jname)  # validates the joint, errors name it
        m = len(subs)
        if names is None:
            names = [(f"{jname}/{k}", f"{jname}/{k}") for k in range(1, m)]
        names = [*names, (name, jname)]
        for bname, jn in names:
            self._check_new_name(bname, "body")
            if any(f.name == bname and f.kind == BODY_FRAME for f in self.frames):
                raise ModelError(f"duplicate body name {bname!r} (a sub-hinge body of joint {jname!r})")
            if any(f.name == jn and f.kind in (JOINT_FRAME, FIXED_JOINT_FRAME) for f in self.frames):
                raise ModelError(f"duplicate joint name {jn!r} (a sub-hinge of joint {jname!r})")
        if len({n for n, _ in names}) != m or len({n for _, n in names}) != m:
            raise ModelError(f"joint {jname!r}: its sub-hinge names {names} are not distinct")
        nv = sum(j.nv for j, _ in subs)
        arm = _armature_values(armature, nv, f"armature of joint {jname!r}")
        arm = np.zeros(nv) if arm is None else arm
        if inertia is not None and not isinstance(inertia, Inertia):
            raise ModelError(f"{name}: inertia must be a loopdyn Inertia, got {inertia!r}")
        R0, p0 = as_placement(placement, f"placement of joint {jname!r}")
        self._resolve_parent(parent)  # fails before anything is added
        bodies, iv = [], 0
        for k, ((sub, (R, p)), (bname, jn)) in enumerate(zip(subs, names, strict=True)):
            pl = (R0 @ R, R0 @ p + p0) if k == 0 else (R, p)
            last = k == m - 1
            parent = self.add_body(bname, parent, sub, pl, inertia if last else Inertia.zero(), joint_name=jn,
                                   independent=independent, armature=arm[iv : iv + sub.nv],
                                   inertia_check="accept")  # checked by the caller
            iv += sub.nv
            bodies.append(parent)
        self.compound_joints.append(CompoundRecord(jname, joint, tuple(bodies)))
        return parent

    def copy(self) -> Model:
        """A copy of the model (bodies, frames, constraints, compound joints; own arrays)."""
        out = Model(self.name, self._gravity)
        for key, value in self.__dict__.items():
            if key not in out.__dict__:  # attributes added by loaders (e.g. sdf_cut_joints)
                setattr(out, key, value)
        out.bodies = [
            replace(b, rotation=b.rotation.copy(), translation=b.translation.copy(),
                    armature=None if b.armature is None else b.armature.copy())
            for b in self.bodies
        ]
        out.frames = [replace(f, rotation=f.rotation.copy(), translation=f.translation.copy())
                      for f in self.frames]
        out.universe_inertia = self.universe_inertia
        out.constraints = list(self.constraints)
        out.declared_clusters = list(self.declared_clusters)
        out.compound_joints = list(self.compound_joints)
        out._constraint_tolerance = self._constraint_tolerance
        out._reference = None if self._reference is None else self._reference.copy()
        out._nq, out._nv = self._nq, self._nv
        out._touch()
        return out

    def add_frame(self, name: str, parent, placement=None, kind: str = OP_FRAME) -> int:
        """Add a frame rigidly attached to ``parent`` (body index, body name or frame name) at
        ``placement`` (4×4 or ``(R, p)``, relative to the parent frame). Returns the frame index."""
        self._check_new_name(name, "frame")
        if kind not in FRAME_KINDS:
            raise ModelError(f"frame kind must be one of {FRAME_KINDS}, got {kind!r}")
        if any(f.name == name and f.kind == kind for f in self.frames):
            raise ModelError(f"duplicate frame {name!r} of kind {kind!r}")
        body, Rf, pf = self._resolve_parent(parent)
        R, p = as_placement(placement, f"placement of frame {name!r}")
        self.frames.append(Frame(name, body, Rf @ R, Rf @ p + pf, kind))
        self._touch()
        return len(self.frames) - 1

    # ------------------------------------------------------------------------------------------
    # constraints and clusters
    def _check_constraint_name(self, name: str) -> None:
        self._check_new_name(name, "constraint")
        if any(c.name == name for c in self.constraints):
            raise ModelError(f"duplicate constraint name {name!r}")

    def _moving_body(self, name: str, what: str) -> int:
        """Index of a moving body named ``name`` (a link merged by a fixed joint is refused)."""
        try:
            return self.body_id(name)
        except KeyError:
            pass
        if any(f.name == name for f in self.frames):
            raise ModelError(
                f"{what}: {name!r} is a link merged into its parent by a fixed joint; constrain a moving body"
            )
        raise ModelError(f"{what}: no body named {name!r} in model {self.name!r}")

    def _joint(self, name: str, what: str) -> int:
        try:
            return self.joint_id(name)
        except KeyError:
            raise ModelError(f"{what}: no joint named {name!r} in model {self.name!r}") from None

    def add_coupling(self, name: str, predecessor: str, successor: str, ratio: float) -> None:
        """Couple two bodies: ``ratio · Σ_{b∈P} q_b = Σ_{b∈Q} q_b`` where P and Q are the bodies from
        the bodies' nearest common ancestor (exclusive) to ``predecessor`` and ``successor``.
        A geared motor: ``add_coupling("knee_gear", "shank", "knee_rotor", ratio=N)``."""
        from ..constraints.definitions import Coupling

        self._check_constraint_name(name)
        self._moving_body(predecessor, name)
        self._moving_body(successor, name)
        r = float(ratio)
        if not np.isfinite(r) or r == 0.0:
            raise ModelError(f"{name}: coupling ratio must be finite and non-zero, got {ratio!r}")
        from .clusters import check_coupling_cycles

        self.constraints.append(Coupling(name, predecessor, successor, r))
        try:
            check_coupling_cycles(self)
        except ModelError:
            self.constraints.pop()  # refused: the model is left as it was
            raise
        self._touch()
        self._auto_embed_ball_joints()

    def add_explicit_constraint(self, name: str, joints, independent, G) -> None:
        """Constrain joints explicitly: ``q[joints] = G · q[independent]`` with a constant ``G``
        (len(joints) × len(independent)); ``independent`` ⊆ ``joints``, and their rows of G must be the
        identity. Marks the other joints dependent."""
        joints, independent = tuple(joints), tuple(independent)
        Gm = np.atleast_2d(np.array(G, dtype=float))
        if Gm.shape != (len(joints), len(independent)) or not np.all(np.isfinite(Gm)):
            raise ModelError(
                f"{name}: G must be finite of shape ({len(joints)}, {len(independent)}), got {Gm.shape}"
            )
        if not set(independent) <= set(joints):
            raise ModelError(f"{name}: independent joints {independent} must be among {joints}")
        for k, y in enumerate(independent):
            row = Gm[joints.index(y)]
            if not np.allclose(row, np.eye(len(independent))[k], atol=1e-14, rtol=0):
                raise ModelError(
                    f"{name}: the row of G for independent joint {y!r} must be a unit row, got {row}"
                )
        rows = []
        for r, j in enumerate(joints):
            if j in independent:
                continue
            row = np.zeros(len(joints))
            row[r] = 1.0
            for k, y in enumerate(independent):
                row[joints.index(y)] -= Gm[r, k]
            rows.append(row)
        self.add_linear_constraint(name, joints, np.array(rows).reshape(-1, len(joints)))
        for j in joints:
            self.bodies[self.joint_id(j) - 1].independent = j in independent

    def remove_constraint(self, name: str) -> None:
        """Remove the constraint called ``name`` (e.g. after the cluster tree refused it)."""
        for k, c in enumerate(self.constraints):
            if c.name == name:
                del self.constraints[k]
                self._touch()
                return
        raise unknown_name("constraint", name, [c.name for c in self.constraints], f"model {self.name!r}")

    def add_linear_constraint(self, name: str, joints, K) -> None:
        """Constrain joints linearly: ``K · q[joints] = 0`` with a constant ``K`` (c × len(joints))."""
        from ..constraints.definitions import LinearConstraint

        self._check_constraint_name(name)
        joints = tuple(joints)
        for j in joints:
            self._joint(j, name)
        Km = np.atleast_2d(np.array(K, dtype=float))
        if Km.shape[1] != len(joints) or not np.all(np.isfinite(Km)):
            raise ModelError(f"{name}: K must be finite with {len(joints)} columns, got shape {Km.shape}")
        self.constraints.append(LinearConstraint(name, joints, Km))
        self._touch()
        self._auto_embed_ball_joints()

    def add_loop(
        self,
        name: str,
        predecessor: str,
        successor: str,
        kind: str = "point",
        predecessor_placement=None,
        successor_placement=None,
        axis=(1.0, 0.0, 0.0),
        successor_axis=None,
    ) -> None:
        """Close a loop with a joint of ``kind`` (``"point"``, ``"spherical"``, ``"revolute"``,
        ``"prismatic"``, ``"weld"``, ``"universal"``) between a frame on ``predecessor`` and a frame on
        ``successor`` (placements: 4×4 or ``(R, p)`` in each body's frame; ``axis`` in the predecessor
        frame). A ``"universal"`` (Cardan) loop joint keeps the two frames' origins together and its
        ``axis`` (fixed to the predecessor) perpendicular to ``successor_axis`` (in the successor
        frame, fixed to the successor): 4 rows; the two axes must be perpendicular in the assembled
        mechanism (checked when the clusters are built: the loop must close)."""
        from ..constraints.definitions import LOOP_KINDS, LoopJoint

        self._check_constraint_name(name)
        if kind not in LOOP_KINDS:
            raise ModelError(f"{name}: loop kind must be one of {LOOP_KINDS}, got {kind!r}")
        self._moving_body(predecessor, name)
        self._moving_body(successor, name)
        Ra, pa = as_placement(predecessor_placement, f"{name}: predecessor placement")
        Rb, pb = as_placement(successor_placement, f"{name}: successor placement")
        a = np.array(axis, dtype=float).reshape(-1)
        if a.shape != (3,) or not np.all(np.isfinite(a)) or np.linalg.norm(a) < 1e-12:
            raise ModelError(f"{name}: axis must be a non-zero 3-vector, got {axis!r}")
        b = None
        if kind == "universal":
            if successor_axis is None:
                raise ModelError(f"{name}: a universal loop joint needs successor_axis (successor frame)")
            b = np.array(successor_axis, dtype=float).reshape(-1)
            if b.shape != (3,) or not np.all(np.isfinite(b)) or np.linalg.norm(b) < 1e-12:
                raise ModelError(f"{name}: successor_axis must be a non-zero 3-vector, got {successor_axis}")
            b = tuple(b / np.linalg.norm(b))
        elif successor_axis is not None:
            raise ModelError(f"{name}: successor_axis only applies to a universal loop joint, not {kind!r}")
        self.constraints.append(
            LoopJoint(name, kind, predecessor, successor, (Ra, pa), (Rb, pb), tuple(a / np.linalg.norm(a)), b)
        )
        self._touch()
        self._auto_embed_ball_joints()

    def add_implicit_constraint(self, name: str, joints, phi) -> None:
        """Constrain joints by a formula ``phi(q) = 0``: ``phi`` receives a list of sympy symbols (the
        coordinates of ``joints``, in order) and returns a list of sympy expressions (use ``sympy.sin``
        etc.). K = ∂φ/∂q and k = −K̇q̇ are derived symbolically."""
        from ..constraints.definitions import ImplicitConstraint

        self._check_constraint_name(name)
        joints = tuple(joints)
        if not joints:
            raise ModelError(f"{name}: an implicit constraint needs at least one joint")
        for j in joints:
            self._joint(j, name)
        if not callable(phi):
            raise ModelError(f"{name}: phi must be a function of a list of sympy symbols")
        self.constraints.append(ImplicitConstraint(name, joints, phi))
        self._touch()
        self._auto_embed_ball_joints()

    def add_cluster(self, bodies) -> None:
        """Declare that ``bodies`` (names) form one cluster. Clusters are otherwise found
        automatically from the constraints; a declared cluster must satisfy the tree condition."""
        names = tuple(bodies)
        if not names:
            raise ModelError("add_cluster: a cluster needs at least one body")
        for b in names:
            self._moving_body(b, "add_cluster")
        self.declared_clusters.append(names)
        self._touch()
        self._auto_embed_ball_joints()

    # ------------------------------------------------------------------------------------------
    # ball joints inside loops
    def embed_ball_joints(self, orientations=None) -> tuple[str, ...]:
        """Store every ball joint (:class:`~loopdyn.model.joints.Spherical`) that lies inside a cluster
        as a :class:`~loopdyn.model.compound.Gimbal`, in place; return the names of the joints converted.

        Clusters hold 1-DoF joints only (their constraint programs differentiate one coordinate per
        body), so a ball joint inside a loop — Cassie's achilles rods, the rods of parallel ankles — is
        stored as three revolute sub-hinges about coordinate axes of its joint frame, through its
        centre, with two massless bodies between them (``"<joint>/1"``, ``"<joint>/2"``): exactly the
        ball joint's motion and dynamics (Jain's partitioning, Lemma 2.1), in the angle coordinates
        ``q = (q1, q2, q3)``, ``R = R(e_a, q1) R(e_b, q2) R(e_c, q3)`` with rates ``q̇`` instead of the
        quaternion and the angular velocity ω (``ω = E(q) q̇``). The physical body keeps its name, joint
        name, frames and inertia; its index, and those of the bodies after it, grow by two.

        **Range.** Three angles have a singularity (gimbal lock): where the first axis and the turned
        last axis align, ``R e_c = ±e_a`` — a middle angle of ±90° for a Tait–Bryan sequence (three
        different axes), of 0° or 180° for a proper Euler one (first = last). There the mass matrix is
        singular and angular velocities have no angle rates. The sequence is chosen per joint among the
        twelve (z, y, x first on ties, Pinocchio's ``JointModelSphericalZYX``) so that this set is as
        far as possible from the joint's reference orientations: its geodesic distance
        ``arccos |R[a, c]|`` is at least 70.5° for one orientation (π/2 at the identity). The joint
        works for every rotation closer to its reference orientation than that distance.

        Parameters
        ----------
        orientations:
            ``{joint name: rotations}`` (a 3×3 rotation or an ``(n, 3, 3)`` stack each, the joint's
            rotations in the configurations to stay away from the singularity in, e.g. a robot file's
            initial pose and home keyframe); entries of joints not converted are ignored. Default: the
            joint's rotation in :attr:`reference_configuration`, or the identity.

        Notes
        -----
        Called by :meth:`add_loop` (and the other constraint methods) whenever a constraint puts a ball
        joint inside a cluster, outside a :meth:`deferred_ball_joints` block; the loaders call it
        themselves, with the file's reference orientations. Each converted joint is announced by one
        :class:`~loopdyn.errors.JointConversionWarning` line naming it, its axes and its range. A ball
        joint that a coupling, a linear or an implicit constraint ties directly is left as it is (those
        act on 1-DoF coordinates: the cluster tree refuses it, naming it). The reference configuration,
        if set, is converted too (its quaternion becomes the three angles).

        Raises
        ------
        UnsupportedFeatureError
            A ball joint to convert has armature (which acts on ω and has no equivalent on the angle
            rates); nothing is changed.
        ModelError
            An orientation is not a rotation, or the constraints do not form clusters.
        """
        return self._embed_ball_joints(orientations, stacklevel=3)

    def _embed_ball_joints(self, orientations, stacklevel: int) -> tuple[str, ...]:
        from .clusters import bodies_in_clusters

        if not any(b.joint.code == SPHERICAL for b in self.bodies):
            return ()
        inside, named = bodies_in_clusters(self)
        targets = [i for i in sorted(inside) if self.bodies[i - 1].joint.code == SPHERICAL and i not in named]
        if not targets:
            return ()
        if orientations is not None and not isinstance(orientations, dict):
            raise ModelError(f"embed_ball_joints: orientations must be a dict joint name → rotations, got "
                             f"{type(orientations).__name__}")
        plans = []
        for i in targets:
            b = self.bodies[i - 1]
            if b.armature is not None and np.any(b.armature):
                raise UnsupportedFeatureError(
                    f"joint {b.joint_name!r}: a ball joint inside a loop is stored as a Gimbal, and its "
                    f"armature {b.armature.tolist()} (on the angular velocity) has no equivalent on the "
                    "gimbal's angle rates"
                )
            rotations = self._ball_orientations(b, (orientations or {}).get(b.joint_name))
            seq, margin = choose_gimbal_sequence(rotations)
            plans.append((i, b.joint_name, seq, margin, len(rotations)))
        for i, _, seq, _, _ in reversed(plans):  # last first: the earlier indices stay valid
            self._gimbal_in_place(i, seq)
        self.compound_joints.sort(key=lambda r: r.bodies[0])
        self._touch()
        for _, name, seq, margin, n in plans:
            lock = "±90°" if seq[0] != seq[2] else "0° or 180°"
            which = "its reference orientation" if n == 1 else f"each of its {n} reference orientations"
            warnings.warn(
                f"loopdyn: ball joint {name!r} is inside a loop and is stored as a Gimbal: rotations about "
                f"its frame's {sequence_name(seq)} axes in turn (coordinates {name}[0], {name}[1], "
                f"{name}[2]); exact, but singular (gimbal lock) where {name}[1] = {lock}, "
                f"{math.degrees(margin):.1f}° of rotation away from {which}",
                JointConversionWarning,
                stacklevel=stacklevel,
            )
        return tuple(p[1] for p in plans)

    @contextmanager
    def deferred_ball_joints(self):
        """Within the ``with`` block, constraints that put a ball joint inside a cluster leave it a
        :class:`~loopdyn.model.joints.Spherical` joint (body indices stay put); call
        :meth:`embed_ball_joints` after it (the loaders do, with the file's reference orientations)."""
        self._ball_joints_deferred += 1
        try:
            yield self
        finally:
            self._ball_joints_deferred -= 1

    def _auto_embed_ball_joints(self) -> None:
        """:meth:`embed_ball_joints` after a constraint was added, unless deferred. Its errors are left
        to :meth:`clusters`, which reports the constraint or joint (as before the constraint was
        converted, the model is unchanged)."""
        if self._ball_joints_deferred or not any(b.joint.code == SPHERICAL for b in self.bodies):
            return
        try:
            self._embed_ball_joints(None, stacklevel=4)  # the warning points at the add_loop call
        except (ModelError, UnsupportedFeatureError):
            pass

    def _ball_orientations(self, b: Body, given) -> np.ndarray:
        """The rotations ``(n, 3, 3)`` of ball joint ``b`` to keep its gimbal's singularity away from."""
        if given is None:
            if self._reference is None:
                return np.eye(3)[None]
            quat = self._reference[b.idx_q : b.idx_q + 4]
            n = float(np.linalg.norm(quat))
            return (quat_to_matrix(quat / n) if n > 1e-12 else np.eye(3))[None]
        try:
            R = np.array(given, dtype=float)
        except (TypeError, ValueError):
            R = np.full(1, np.nan)
        if R.shape == (3, 3):
            R = R[None]
        if (
            R.ndim != 3
            or R.shape[1:] != (3, 3)
            or not R.shape[0]
            or not np.all(np.isfinite(R))
            or np.max(np.abs(R @ np.swapaxes(R, 1, 2) - np.eye(3))) > 1e-6
            or np.min(np.linalg.det(R)) < 0.0
        ):
            raise ModelError(
                f"embed_ball_joints: the orientations of joint {b.joint_name!r} must be rotation matrices "
                f"(3×3 or n×3×3), got {given!r}"
            )
        return R

    def _gimbal_in_place(self, i: int, seq) -> None:
        """Replace the Spherical joint of body ``i`` by a Gimbal about the axes ``seq`` (two massless
        bodies inserted before it; later bodies, frames, records and the reference shifted)."""
        b = self.bodies[i - 1]
        eye = np.eye(3)
        gimbal = Gimbal(tuple(tuple(float(x) for x in eye[k]) for k in seq))
        subs = [joint for joint, _ in gimbal.expand(b.joint_name)]
        taken = {f.name for f in self.frames}
        names = []
        for k in (1, 2):
            nm = f"{b.joint_name}/{k}"
            while nm in taken:
                nm += "_"
            taken.add(nm)
            names.append(nm)

        def shifted(x: int) -> int:
            return x + 2 if x >= i else x

        zero = Inertia.zero()
        chain = [
            Body(names[0], names[0], b.parent, subs[0], b.rotation.copy(), b.translation.copy(), zero,
                 0, 0, b.independent),
            Body(names[1], names[1], i, subs[1], eye.copy(), np.zeros(3), zero, 0, 0, b.independent),
            replace(b, parent=i + 1, joint=subs[2], rotation=eye.copy(), translation=np.zeros(3)),
        ]
        later = [replace(x, parent=shifted(x.parent)) for x in self.bodies[i:]]
        self.bodies = [*self.bodies[: i - 1], *chain, *later]
        nq = nv = 0
        for body in self.bodies:
            body.idx_q, body.idx_v = nq, nv
            nq, nv = nq + body.joint.nq, nv + body.joint.nv
        self.frames = [replace(f, body=shifted(f.body)) for f in self.frames]
        for k, nm in enumerate(names):
            self.frames.append(Frame(nm, i + k, eye.copy(), np.zeros(3), JOINT_FRAME))
            self.frames.append(Frame(nm, i + k, eye.copy(), np.zeros(3), BODY_FRAME))
        self.compound_joints = [
            replace(r, bodies=tuple(shifted(x) for x in r.bodies)) for r in self.compound_joints
        ]
        self.compound_joints.append(CompoundRecord(b.joint_name, gimbal, (i, i + 1, i + 2), "spherical"))
        if self._reference is not None:
            iq = b.idx_q
            angles, _ = gimbal_angles(seq, self._ball_orientations(b, None)[0])
            self._reference = np.concatenate([self._reference[:iq], angles, self._reference[iq + 4 :]])
        self._nq, self._nv = nq, nv

    @property
    def reference_configuration(self) -> np.ndarray | None:
        """The spanning-tree configuration (size ``spanning_nq``) the loops are assembled around, or
        ``None`` (zero angles and displacements). See :meth:`set_reference_configuration`."""
        return None if self._reference is None else self._reference.copy()

    def set_reference_configuration(self, q_span) -> None:
        """Assemble the loops around ``q_span`` (a spanning-tree configuration, e.g. the robot's
        keyframe or initial pose; ``None``: around zero).

        Each implicit cluster's reference configuration — its ``neutral`` state, and where the choice
        of independent coordinates (URDF+ ``independent`` flags, or automatic) is validated — is the
        solution of its constraints nearest ``q_span`` among those found from it and around it, instead
        of the one nearest zero. Use it when the mechanism is singular at zero (a crank and a rod
        collinear) or assembles on another branch there. A choice of independent coordinates that
        becomes singular elsewhere is reported where that happens, by the algorithms
        (:class:`~loopdyn.errors.ConfigurationError` naming the cluster)."""
        if q_span is None:
            self._reference = None
        else:
            try:
                q = np.array(q_span, dtype=float).reshape(-1)
            except (TypeError, ValueError) as exc:
                raise ModelError(f"reference configuration must be real numbers: {exc}") from None
            if q.shape != (self.spanning_nq,) or not np.all(np.isfinite(q)):
                raise ModelError(
                    f"reference configuration must be {self.spanning_nq} finite numbers (the spanning "
                    f"tree's nq), got shape {np.shape(q_span)}"
                )
            self._reference = q
        self._touch()

    @property
    def constraint_tolerance(self) -> float:
        """Largest ``|φ(q)|`` the algorithms accept for the positions of implicit clusters (default 1e-8,
        as GRBDA); an integrator whose intermediate stages leave the constraints by more may raise it."""
        return self._constraint_tolerance

    @constraint_tolerance.setter
    def constraint_tolerance(self, value: float) -> None:
        v = float(value)
        if not np.isfinite(v) or v <= 0.0:
            raise ModelError(f"constraint_tolerance must be finite and > 0, got {value!r}")
        self._constraint_tolerance = v
        self._touch()

    def clusters(self):
        """The tree of clusters (:class:`loopdyn.model.clusters.ClusterTree`), built on first use."""
        if self._clusters is None:
            from .clusters import build_cluster_tree

            self._clusters = build_cluster_tree(self)
        return self._clusters

    def _touch(self) -> None:
        self.has_constraints = bool(self.constraints or self.declared_clusters)
        self._version += 1
        self._key = object()
        self._compiled = None
        self._clusters = None

    # ------------------------------------------------------------------------------------------
    # limits and summary
    @property
    def lower_position_limit(self) -> np.ndarray:
        return np.concatenate([np.zeros(0)] + [b.joint.lower_position() for b in self.bodies])

    @property
    def upper_position_limit(self) -> np.ndarray:
        return np.concatenate([np.zeros(0)] + [b.joint.upper_position() for b in self.bodies])

    @property
    def velocity_limit(self) -> np.ndarray:
        return np.concatenate([np.zeros(0)] + [b.joint.velocity_limit() for b in self.bodies])

    @property
    def effort_limit(self) -> np.ndarray:
        return np.concatenate([np.zeros(0)] + [b.joint.effort_limit() for b in self.bodies])

    @property
    def armature(self) -> np.ndarray:
        """Armature of every velocity coordinate of the spanning tree (spanning nv; a copy): the
        diagonal term the tree algorithms add to the mass matrix, ``M + diag(armature)``."""
        return np.concatenate([np.zeros(0)] + [b.armature_vector() for b in self.bodies])

    @armature.setter
    def armature(self, value) -> None:
        try:
            arm = np.array(value, dtype=float)
        except (TypeError, ValueError) as exc:
            raise ModelError(f"armature must be an array of real numbers: {exc}") from None
        if arm.ndim == 0:
            arm = np.full(self._nv, float(arm))
        if arm.shape != (self._nv,):
            raise ModelError(
                f"armature must have one value per velocity coordinate of the spanning tree "
                f"({self._nv}), got shape {arm.shape}"
            )
        _check_armature(arm, "armature")
        for b in self.bodies:
            x = arm[b.idx_v : b.idx_v + b.joint.nv].copy()
            b.armature = x if np.any(x) else None
        self._touch()

    @property
    def mass(self) -> float:
        """Total mass of the moving bodies."""
        return float(sum(b.inertia.mass for b in self.bodies))

    def __repr__(self) -> str:
        return f"<loopdyn.Model {self.name!r}: {self.nbodies} bodies, nq={self.nq}, nv={self.nv}>"

    def summary(self) -> str:
        """A human-readable table of bodies and joints."""
        lines = [
            repr(self),
            f"  {'#':>3} {'body':24s} {'joint':24s} {'type':12s} {'parent':24s} {'mass':>8s}",
        ]
        for i, b in enumerate(self.bodies, start=1):
            lines.append(
                f"  {i:3d} {b.name:24s} {b.joint_name:24s} {b.joint.kind:12s} "
                f"{self.body_names[b.parent]:24s} {b.inertia.mass:8.3f}"
            )
        for rec in self.compound_joints:
            i0 = self.bodies[rec.bodies[0] - 1]
            nv = sum(self.bodies[i - 1].joint.nv for i in rec.bodies)
            note = ""
            if rec.converted_from:
                axes = ", ".join("xyz"[int(np.argmax(np.abs(a)))] for a in rec.joint.axes)
                note = f" — a {rec.converted_from} joint inside a loop, axes {axes}"
            lines.append(
                f"  compound joint {rec.name!r} ({rec.joint.kind}): sub-hinge bodies "
                f"{[self.body_names[i] for i in rec.bodies]}, v[{i0.idx_v}:{i0.idx_v + nv}]{note}"
            )
        if self.has_constraints:
            ct = self.clusters()
            lines.append(
                f"  {len(ct.clusters)} clusters, {len(self.constraints)} constraints; spanning tree "
                f"nq = {self._nq}, nv = {self._nv}; independent nv = {self.nv}"
            )
            lines.append(ct.summary(self))
        return "\n".join(lines)

    # ------------------------------------------------------------------------------------------
    # compiled form
    def compiled(self):
        """The flat arrays the kernels use (built on first use, rebuilt after a change)."""
        if self._compiled is None:
            self._compiled = _compile(self)
        return self._compiled

    def create_data(self, native_programs: bool | None = None):
        """A new :class:`~loopdyn.model.data.Data` workspace for this model.

        Args:
            native_programs: run the loop-closure programs of implicit clusters as native functions
                compiled once per machine (:mod:`loopdyn.constraints.native`; results identical to the
                interpreted tapes, faster). None (default): on unless ``LOOPDYN_NATIVE_PROGRAMS=0``;
                False: interpret the tapes. Models without implicit clusters are not affected.
        """
        from .data import Data

        return Data(self, native_programs)


def _check_armature(arm: np.ndarray, what: str) -> None:
    if not np.all(np.isfinite(arm)):
        raise ModelError(f"{what} contains NaN or inf: {arm}")
    if np.any(arm < 0.0):
        raise ModelError(f"{what} must be >= 0, got {arm}")


def _armature_values(value, nv: int, what: str) -> np.ndarray | None:
    """Validated armature of one joint: ``None`` when all zero, else its ``nv`` values."""
    try:
        arm = np.array(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ModelError(f"{what} must be a number or an array of numbers: {exc}") from None
    if nv == 0 and not (arm.size == 0 or (arm.ndim == 0 and arm == 0.0)):
        raise ModelError(f"{what}: the joint has no velocity coordinate, armature must be 0, got {value!r}")
    if arm.ndim == 0:
        arm = np.full(nv, float(arm))
    if arm.shape != (nv,):
        raise ModelError(
            f"{what}: expected a scalar or {nv} value(s) (one per velocity coordinate), got {value!r}"
        )
    _check_armature(arm, what)
    return arm if np.any(arm) else None


@dataclass(frozen=True)
class CompiledModel:
    ib: np.ndarray  # (nbodies + 1, NI) int64
    ws: np.ndarray  # (nbodies + 1, NW) float64 template (parameters filled, workspace zero)
    frame_body: np.ndarray  # (nframes,) int64
    frame_placement: np.ndarray  # (nframes, 12) float64: R row-major (9), p (3)
    version: int
    clusters: object = None  # CompiledClusters for a model with constraints


def _compile(model: Model) -> CompiledModel:
    nb = model.nbodies
    ib = np.zeros((nb + 1, L.NI), dtype=np.int64)
    ws = np.zeros((nb + 1, L.NW), dtype=np.float64)
    ib[0, L.I0_NBODIES] = nb
    ib[0, L.I0_NQ] = model._nq
    ib[0, L.I0_NV] = model._nv
    ws[0, L.W0_GRAVITY : L.W0_GRAVITY + 3] = model._gravity
    for i, b in enumerate(model.bodies, start=1):
        ib[i, L.I_PARENT] = b.parent
        ib[i, L.I_JTYPE] = b.joint.code
        ib[i, L.I_IQ] = b.idx_q
        ib[i, L.I_IV] = b.idx_v
        ib[i, L.I_NQ] = b.joint.nq
        ib[i, L.I_NV] = b.joint.nv
        ws[i, L.W_JR : L.W_JR + 9] = b.rotation.reshape(-1)
        ws[i, L.W_JP : L.W_JP + 3] = b.translation
        ws[i, L.W_INER : L.W_INER + 10] = b.inertia.compact()
        ws[i, L.W_AXIS : L.W_AXIS + 3] = b.joint.axis_array()
        if b.armature is not None:
            ws[i, L.W_ARM : L.W_ARM + b.joint.nv] = b.armature
            ws[0, L.W_ARM] = 1.0  # row 0: the model has armature (RNEA skips it otherwise)
    depth = np.zeros(nb + 1, dtype=np.int64)  # non-root ancestors of each body (parents come first)
    for i in range(1, nb + 1):
        par = ib[i, L.I_PARENT]
        depth[i] = 0 if par == 0 else depth[par] + 1
    ib[0, L.I0_ANCESTORS] = int(depth.sum())
    ws[:, L.W_MBOUND] = mass_diagonal_bounds(ib, ws)
    # row 0 of ib holds the model sizes; the kernels never read a parent for row 0
    nf = len(model.frames)
    frame_body = np.array([f.body for f in model.frames], dtype=np.int64)
    frame_placement = np.zeros((nf, 12))
    for k, f in enumerate(model.frames):
        frame_placement[k, :9] = f.rotation.reshape(-1)
        frame_placement[k, 9:] = f.translation
    compiled_clusters = None
    if model.has_constraints:
        from .clusters import compile_clusters

        compiled_clusters = compile_clusters(model, model.clusters(), ib, ws)
    for arr in (ib, ws, frame_body, frame_placement):
        arr.setflags(write=False)
    return CompiledModel(ib, ws, frame_body, frame_placement, model._version, compiled_clusters)


def mass_diagonal_bounds(ib: np.ndarray, ws: np.ndarray) -> np.ndarray:
    """Per body (row 0: 0), an upper bound over all configurations of the diagonal mass-matrix entry
    ``M_ii = s_iᵀ Ic_i s_i + armature`` of its joint if that joint has one coordinate (0 otherwise).

    For a prismatic joint ``M_ii`` is the mass of the subtree (plus armature), whatever the
    configuration. For a revolute joint (axis through the body's origin) ``M_ii = ∫ |a × x|² dm`` over
    the subtree ≤ ``Σ_k (m_k d_k² + 2 d_k |h_k| + tr(Ī_k) / 2)``, where ``d_k = D_k − D_i`` bounds the
    distance from body i's origin to body k's, ``D`` being the sum of the joint offsets from the root
    (subtree sums of m, m D, m D², |h|, |h| D and tr(Ī)/2 give it in O(n)); it is +inf when a prismatic
    or free joint lies between body i and a body with mass. A body's articulated pivot never exceeds its
    ``M_ii``, so ``pivot > SPD_RTOL · bound`` proves the relative pivot test without computing ``M_ii``
    (:func:`loopdyn.algorithms.common.pivot_positive`)."""
    from .joints import PRISMATIC, REVOLUTE, REVOLUTE_UNBOUNDED, SPHERICAL

    nb = ib.shape[0] - 1
    parent = ib[:, L.I_PARENT]
    jt = ib[:, L.I_JTYPE]
    rotational = np.isin(jt, (REVOLUTE, REVOLUTE_UNBOUNDED, SPHERICAL, FIXED))
    offset = np.linalg.norm(ws[:, L.W_JP : L.W_JP + 3], axis=1)
    D = np.zeros(nb + 1)  # path length from the root (parents come first)
    for i in range(1, nb + 1):
        D[i] = D[parent[i]] + offset[i]
    m = ws[:, L.W_INER].copy()
    h = np.linalg.norm(ws[:, L.W_INER + 1 : L.W_INER + 4], axis=1)
    # subtree sums, leaves first: m, m D, m D², |h|, |h| D, tr(Ī)/2 (rows of S), and whether a body with
    # mass hangs below a translating joint (its distance to the ancestors is unbounded)
    S = np.stack([m, m * D, m * D * D, h, h * D, 0.5 * ws[:, L.W_INER + 4 : L.W_INER + 7].sum(axis=1)])
    unbounded = np.zeros(nb + 1, dtype=bool)
    for i in range(nb, 0, -1):
        p = parent[i]
        S[:, p] += S[:, i]
        unbounded[p] |= unbounded[i] or (not rotational[i] and S[0, i] > 0.0)
    out = np.zeros(nb + 1)
    for i in range(1, nb + 1):
        if ib[i, L.I_NV] != 1:
            continue
        m0, m1, m2, h0, h1, polar = S[:, i]
        if jt[i] == PRISMATIC:
            bound = m0
        elif unbounded[i]:
            bound = math.inf
        else:
            d = D[i]
            # Σ m (D_k − d)² + 2 |h| (D_k − d) + tr/2, with a margin for the cancellation of the sums
            bound = (m2 - 2.0 * d * m1 + d * d * m0) + 2.0 * (h1 - d * h0) + polar
            bound += 1e-9 * (m2 + d * d * m0 + 2.0 * (h1 + d * h0))
        out[i] = bound * (1.0 + 1e-6) + ws[i, L.W_ARM]
    return out
