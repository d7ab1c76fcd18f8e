"""Jain's partitioning as a model transformation: multi-DoF joints → chains of 1-DoF sub-hinges.

Jain, *Partitioning of Recursive Multibody Dynamics* (spec ``partitioning-and-constraint-embedding-
jain.md`` §1.2–1.4, Lemma 2.1): a multi-DoF hinge between bodies k+1 and k is equivalent to a chain
of sub-hinges separated by **massless** bodies k′, provided the placement factorises
(``φ_u(k+1,k) = φ(k+1,k′) φ(k′,k)``, Eq. 5a), the hinge maps split accordingly (Eq. 5b) and the
inserted bodies have exactly zero mass, inertia and gyroscopic force (Eq. 5d). The articulated
inertias of the physical bodies are then unchanged (Eq. 17), and so are their velocities,
accelerations, inter-body forces and compliances (Eqs. 4, 24).

Choices made here (spec §1.4):

* **Placement of k′.** The massless bodies sit at the joint's own frame: the first (inboard)
  sub-hinge carries the original joint placement, the others have identity placements (rule 1:
  k′ physically between k+1 and k; rule 2: an identity factor where there is no sparsity to gain).
* **Which DoFs go where.** Inboard coordinates are put on the massless bodies, the outboard ones on
  the physical body (rule 4).
* **Spherical** → three revolutes about the joint frame's z, y and x axes (intrinsic z-y′-x″ Euler
  angles ``(ψ, θ, φ)``, ``R = Rz(ψ) Ry(θ) Rx(φ)``), two massless bodies. Euler angles have a
  **gimbal singularity** at ``cos θ = 0``: there the three axes are not independent, the partitioned
  model's mass matrix is singular (its algorithms raise an error naming the inboard ``__rz``
  sub-hinge, whose axis then coincides with the ``__rx`` one), and the coordinate maps below
  raise :class:`~loopdyn.errors.GimbalLockError` naming the joint when ``|cos θ|`` is below
  ``gimbal_tolerance``.
* **FreeFlyer** → three prismatic sub-hinges along the joint frame's x, y, z axes (the position of
  the body in its parent, as the free-flyer's first three coordinates), then either a
  :class:`~loopdyn.model.joints.Spherical` joint on the physical body (``free_flyer_rotation=
  "spherical"``, the default: quaternion, no singularity; three massless bodies) or the three Euler
  revolutes above (``"euler"``: five massless bodies, the gimbal singularity as for spherical
  joints).

Compound joints (:mod:`loopdyn.model.compound`: universal, gimbal, planar) are stored partitioned
already; :func:`partition` leaves them as they are and keeps their records. Its inverse is
:func:`loopdyn.model.merge.merge` (round trips described there).

The partitioned model's velocities are the sub-hinge rates, a different set of generalized
velocities from the original (quaternion) joints' — a change of variables ``v = T(q) v_p``, not a
re-ordering (spec §1.4 "Caveat for 6-DoF joints"). :class:`PartitionMap` converts q, v, a and τ.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from ..errors import (
    ConfigurationError,
    GimbalLockError,
    ModelError,
    NonFiniteError,
    ShapeError,
    UnsupportedFeatureError,
)
from ..spatial.inertia import Inertia
from .joints import FREEFLYER, SPHERICAL, Prismatic, Revolute, Spherical
from .model import BODY_FRAME, JOINT_FRAME, Model

_EX, _EY, _EZ = (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)


@dataclass(frozen=True)
class PartitionedJoint:
    """How one original joint maps to its sub-hinge chain.

    ``kind`` is ``"spherical"`` or ``"free-flyer"``; ``euler`` says whether the rotation is three
    Euler revolutes (else a Spherical joint); ``iq``/``iv`` are the original joint's coordinate
    offsets and ``iq_p``/``iv_p`` the chain's in the partitioned model; ``bodies`` the partitioned
    model's body indices of the chain, inboard first (all massless except the last).
    """

    joint_name: str
    kind: str
    euler: bool
    iq: int
    iv: int
    iq_p: int
    iv_p: int
    bodies: tuple[int, ...]


def _rot(axis: int, t: float) -> np.ndarray:
    c, s = math.cos(t), math.sin(t)
    if axis == 0:
        return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])
    if axis == 1:
        return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def _quat_to_matrix(x, y, z, w) -> np.ndarray:
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def _matrix_to_quat(R: np.ndarray) -> np.ndarray:
    """Unit quaternion (x, y, z, w) of a rotation matrix, with w ≥ 0."""
    tr = R[0, 0] + R[1, 1] + R[2, 2]
    if tr > 0.0:
        s = 2.0 * math.sqrt(1.0 + tr)
        q = np.array([(R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s, 0.25 * s])
    else:
        k = int(np.argmax(np.diag(R)))
        i, j = (k + 1) % 3, (k + 2) % 3
        s = 2.0 * math.sqrt(max(1.0 + R[k, k] - R[i, i] - R[j, j], 0.0))
        q = np.empty(4)
        q[k] = 0.25 * s
        q[i] = (R[i, k] + R[k, i]) / s
        q[j] = (R[j, k] + R[k, j]) / s
        q[3] = (R[j, i] - R[i, j]) / s
    if q[3] < 0.0:
        q = -q
    return q / np.linalg.norm(q)


def euler_zyx(R: np.ndarray) -> np.ndarray:
    """Angles ``(ψ, θ, φ)`` with ``R = Rz(ψ) Ry(θ) Rx(φ)``, θ ∈ [−π/2, π/2]. At the singularity
    (cos θ = 0) only ψ ± φ is defined; φ = 0 is returned."""
    s = -R[2, 0]
    c = math.hypot(R[0, 0], R[1, 0])
    theta = math.atan2(s, c)
    if c < 1e-12:
        return np.array([math.atan2(-R[0, 1], R[1, 1]), theta, 0.0])
    return np.array([math.atan2(R[1, 0], R[0, 0]), theta, math.atan2(R[2, 1], R[2, 2])])


def euler_rate_matrix(theta: float, phi: float) -> np.ndarray:
    """E with ``ω = E (ψ̇, θ̇, φ̇)``, ω the angular velocity in the outboard (child) frame."""
    sb, cb, sc, cc = math.sin(theta), math.cos(theta), math.sin(phi), math.cos(phi)
    return np.array([[-sb, 0.0, 1.0], [cb * sc, cc, 0.0], [cb * cc, -sc, 0.0]])


def euler_rate_matrix_dot(theta: float, phi: float, dtheta: float, dphi: float) -> np.ndarray:
    """dE/dt along (θ̇, φ̇)."""
    sb, cb, sc, cc = math.sin(theta), math.cos(theta), math.sin(phi), math.cos(phi)
    dEb = np.array([[-cb, 0.0, 0.0], [-sb * sc, 0.0, 0.0], [-sb * cc, 0.0, 0.0]])
    dEc = np.array([[0.0, 0.0, 0.0], [cb * cc, -sc, 0.0], [-cb * sc, -cc, 0.0]])
    return dEb * dtheta + dEc * dphi


def _skew(x) -> np.ndarray:
    return np.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])


def _units(model: Model) -> list[tuple[tuple[int, ...], int, int, int, int]]:
    """(bodies, iq, nq, iv, nv) of each block of the model's state: bodies (tree) or clusters."""
    if model.has_constraints:
        return [(tuple(c.bodies), c.iq, c.nq, c.iv, c.nv) for c in model.clusters().clusters]
    return [((i,), b.idx_q, b.joint.nq, b.idx_v, b.joint.nv) for i, b in enumerate(model.bodies, start=1)]


class PartitionMap:
    """Conversions between the coordinates of a model and of its partition (:func:`partition`).

    With ``T(q)`` the velocity map of the partitioned joints (``v = T v_p``; identity elsewhere):

    * ``to_partitioned_q`` / ``from_partitioned_q`` — configurations (quaternion ↔ Euler angles;
      free-flyer position unchanged);
    * ``to_partitioned_v`` / ``from_partitioned_v`` — ``v_p = T⁻¹ v``, ``v = T v_p``;
    * ``to_partitioned_a`` / ``from_partitioned_a`` — ``a = T a_p + Ṫ v_p``;
    * ``to_partitioned_tau`` / ``from_partitioned_tau`` — ``τ_p = Tᵀ τ`` (same power ``τᵀv``);
    * ``velocity_map(q_p)`` — the dense ``T`` (nv × nv_p).

    Within a chain the partitioned velocities are in the natural inboard-first order (``tx, ty, tz``
    then ``rz, ry, rx`` or the spherical joint's angular velocity), which is the reverse of the
    outboard-first block order of Jain's Eq. 2 (spec §1.4).

    Maps that invert ``T`` raise :class:`GimbalLockError` (naming the joint) at an Euler chain's
    gimbal singularity, ``|cos θ| < gimbal_tolerance``. ``body_map[i]`` is the partitioned model's
    index of original body i; ``massless_bodies`` lists the inserted bodies.
    """

    def __init__(self, original: Model, partitioned: Model, joints: list[PartitionedJoint],
                 body_map: np.ndarray, gimbal_tolerance: float):
        self.original = original
        self.partitioned = partitioned
        self.joints = tuple(joints)
        self.body_map = body_map
        self.massless_bodies = tuple(b for j in joints for b in j.bodies[:-1])
        self.gimbal_tolerance = float(gimbal_tolerance)
        # state blocks copied unchanged: (original offset, partitioned offset, size). The units of the
        # state are the bodies of a tree, the clusters (in the cluster-state layout) of a model with
        # loops; a partitioned joint is a unit of its own in both models.
        new_unit = {}
        for unit in _units(partitioned):
            for b in unit[0]:
                new_unit[b] = unit
        by_physical = {j.bodies[-1]: j for j in joints}
        fixed = []
        self._q_copy, self._v_copy = [], []
        for bodies, iq, nq, iv, nv in _units(original):
            first = int(body_map[bodies[0]])
            if len(bodies) == 1 and first in by_physical:
                j = by_physical[first]
                start = new_unit[j.bodies[0]]
                oq, ov = start[1], start[3]
                for b in j.bodies:  # the chain's coordinates are contiguous, inboard first
                    u = new_unit[b]
                    if len(u[0]) != 1 or u[1] != oq or u[3] != ov:  # pragma: no cover - layout guard
                        raise UnsupportedFeatureError(f"partition: unexpected layout at {j.joint_name!r}")
                    oq, ov = oq + u[2], ov + u[4]
                fixed.append(replace(j, iq=iq, iv=iv, iq_p=start[1], iv_p=start[3]))
                continue
            nu = new_unit[first]
            if sorted(nu[0]) != sorted(int(body_map[b]) for b in bodies):  # pragma: no cover - layout guard
                raise UnsupportedFeatureError("partition: the clusters of the two models differ")
            self._q_copy.append((iq, nu[1], nq))
            self._v_copy.append((iv, nu[3], nv))
        order = {j.joint_name: k for k, j in enumerate(joints)}
        self.joints = tuple(sorted(fixed, key=lambda j: order[j.joint_name]))

    # ---- helpers ---------------------------------------------------------------------------
    @staticmethod
    def _vec(x, n: int, name: str) -> np.ndarray:
        try:
            a = np.array(x, dtype=float)
        except (TypeError, ValueError) as exc:
            raise ShapeError(f"{name} must be an array of {n} real numbers: {exc}") from None
        if a.shape != (n,):
            raise ShapeError(f"{name} must be a 1-D array of size {n}, got shape {a.shape}")
        if not np.all(np.isfinite(a)):
            raise NonFiniteError(f"{name} contains NaN or inf")
        return a

    def _copy(self, src, dst, table, to_p: bool) -> None:
        for o, p, n in table:
            if to_p:
                dst[p : p + n] = src[o : o + n]
            else:
                dst[o : o + n] = src[p : p + n]

    def _rotation_block(self, j: PartitionedJoint, qp) -> tuple[int, int]:
        """(offset of the rotation coordinates in q_p, offset of the rotation velocities in v_p)."""
        if j.kind == "free-flyer":
            return j.iq_p + 3, j.iv_p + 3
        return j.iq_p, j.iv_p

    def _euler_E(self, j: PartitionedJoint, qp, check: bool) -> np.ndarray:
        o, _ = self._rotation_block(j, qp)
        theta, phi = qp[o + 1], qp[o + 2]
        if check and abs(math.cos(theta)) < self.gimbal_tolerance:
            raise GimbalLockError(
                f"joint {j.joint_name!r}: its Euler-angle sub-hinges are at the gimbal singularity "
                f"(|cos θ| = {abs(math.cos(theta)):.3g} < {self.gimbal_tolerance:g}, θ = q_p[{o + 1}]); the "
                "angular velocity cannot be expressed in Euler-angle rates there"
            )
        return euler_rate_matrix(theta, phi)

    def _joint_rotation(self, j: PartitionedJoint, qp) -> np.ndarray:
        o, _ = self._rotation_block(j, qp)
        if j.euler:
            return _rot(2, qp[o]) @ _rot(1, qp[o + 1]) @ _rot(0, qp[o + 2])
        return _quat_to_matrix(*qp[o : o + 4])

    def _T_block(self, j: PartitionedJoint, qp, check: bool) -> np.ndarray:
        """The joint's velocity map block (nv_j × nv_p,j)."""
        if j.kind == "spherical":
            return self._euler_E(j, qp, check)
        T = np.zeros((6, 6))
        T[:3, :3] = self._joint_rotation(j, qp).T  # child-frame linear velocity = Rᵀ ṗ
        T[3:, 3:] = self._euler_E(j, qp, check) if j.euler else np.eye(3)
        return T

    def _nvp(self, j: PartitionedJoint) -> int:
        return 3 if j.kind == "spherical" else 6

    # ---- configurations --------------------------------------------------------------------
    def to_partitioned_q(self, q) -> np.ndarray:
        """The partitioned model's configuration of ``q`` (Euler angles in (−π, π], θ ∈ [−π/2, π/2])."""
        q = self._vec(q, self.original.nq, "q")
        qp = np.empty(self.partitioned.nq)
        self._copy(q, qp, self._q_copy, True)
        for j in self.joints:
            quat = q[j.iq + 3 : j.iq + 7] if j.kind == "free-flyer" else q[j.iq : j.iq + 4]
            n = float(np.linalg.norm(quat))
            if not np.all(np.isfinite(quat)) or abs(n - 1.0) > 1e-6:
                raise ConfigurationError(f"q: the quaternion of joint {j.joint_name!r} is not unit-norm")
            o = j.iq_p
            if j.kind == "free-flyer":
                qp[o : o + 3] = q[j.iq : j.iq + 3]
                o += 3
            if j.euler:
                qp[o : o + 3] = euler_zyx(_quat_to_matrix(*(quat / n)))
            else:
                qp[o : o + 4] = quat
        return qp

    def from_partitioned_q(self, qp) -> np.ndarray:
        """The original model's configuration of the partitioned ``q_p`` (quaternions with w ≥ 0)."""
        qp = self._vec(qp, self.partitioned.nq, "q_p")
        q = np.empty(self.original.nq)
        self._copy(qp, q, self._q_copy, False)
        for j in self.joints:
            o = j.iq
            if j.kind == "free-flyer":
                q[o : o + 3] = qp[j.iq_p : j.iq_p + 3]
                o += 3
            q[o : o + 4] = _matrix_to_quat(self._joint_rotation(j, qp))
        return q

    # ---- velocities, accelerations, forces ---------------------------------------------------
    def velocity_map(self, qp) -> np.ndarray:
        """Dense ``T(q_p)`` (nv × nv_p) with ``v = T v_p``."""
        qp = self._vec(qp, self.partitioned.nq, "q_p")
        T = np.zeros((self.original.nv, self.partitioned.nv))
        for o, p, n in self._v_copy:
            T[o : o + n, p : p + n] = np.eye(n)
        for j in self.joints:
            n = self._nvp(j)
            T[j.iv : j.iv + n, j.iv_p : j.iv_p + n] = self._T_block(j, qp, False)
        return T

    def from_partitioned_v(self, qp, vp) -> np.ndarray:
        """``v = T(q_p) v_p``."""
        vp = self._vec(vp, self.partitioned.nv, "v_p")
        return self.velocity_map(qp) @ vp

    def to_partitioned_v(self, q, v) -> np.ndarray:
        """``v_p = T⁻¹ v`` (GimbalLockError at an Euler singularity)."""
        qp = self.to_partitioned_q(q)
        v = self._vec(v, self.original.nv, "v")
        vp = np.empty(self.partitioned.nv)
        self._copy(v, vp, self._v_copy, True)
        for j in self.joints:
            n = self._nvp(j)
            vp[j.iv_p : j.iv_p + n] = np.linalg.solve(self._T_block(j, qp, True), v[j.iv : j.iv + n])
        return vp

    def _Tdot_vp(self, j: PartitionedJoint, qp, vp) -> np.ndarray:
        """``Ṫ v_p`` for one joint."""
        o, ov = self._rotation_block(j, qp)
        if j.euler:
            rates = vp[ov : ov + 3]
            Ed = euler_rate_matrix_dot(qp[o + 1], qp[o + 2], rates[1], rates[2])
            w_dot_part = Ed @ rates
            w = euler_rate_matrix(qp[o + 1], qp[o + 2]) @ rates
        else:
            w_dot_part = np.zeros(3)
            w = vp[ov : ov + 3]
        if j.kind == "spherical":
            return w_dot_part
        v_lin = self._joint_rotation(j, qp).T @ vp[j.iv_p : j.iv_p + 3]
        return np.concatenate([-np.cross(w, v_lin), w_dot_part])  # d(Rᵀ)/dt ṗ = −ω × (Rᵀ ṗ)

    def from_partitioned_a(self, qp, vp, ap) -> np.ndarray:
        """``a = T a_p + Ṫ v_p``."""
        qp = self._vec(qp, self.partitioned.nq, "q_p")
        vp = self._vec(vp, self.partitioned.nv, "v_p")
        ap = self._vec(ap, self.partitioned.nv, "a_p")
        a = self.velocity_map(qp) @ ap
        for j in self.joints:
            n = self._nvp(j)
            a[j.iv : j.iv + n] += self._Tdot_vp(j, qp, vp)
        return a

    def to_partitioned_a(self, q, v, a) -> np.ndarray:
        """``a_p = T⁻¹ (a − Ṫ v_p)`` (GimbalLockError at an Euler singularity)."""
        qp = self.to_partitioned_q(q)
        vp = self.to_partitioned_v(q, v)
        a = self._vec(a, self.original.nv, "a")
        ap = np.empty(self.partitioned.nv)
        self._copy(a, ap, self._v_copy, True)
        for j in self.joints:
            n = self._nvp(j)
            rhs = a[j.iv : j.iv + n] - self._Tdot_vp(j, qp, vp)
            ap[j.iv_p : j.iv_p + n] = np.linalg.solve(self._T_block(j, qp, True), rhs)
        return ap

    def to_partitioned_tau(self, q, tau) -> np.ndarray:
        """``τ_p = Tᵀ τ``: the sub-hinge forces doing the same power as ``τ``."""
        tau = self._vec(tau, self.original.nv, "tau")
        return self.velocity_map(self.to_partitioned_q(q)).T @ tau

    def from_partitioned_tau(self, qp, taup) -> np.ndarray:
        """``τ = T⁻ᵀ τ_p`` (GimbalLockError at an Euler singularity)."""
        qp = self._vec(qp, self.partitioned.nq, "q_p")
        taup = self._vec(taup, self.partitioned.nv, "tau_p")
        tau = np.empty(self.original.nv)
        self._copy(taup, tau, self._v_copy, False)
        for j in self.joints:
            n = self._nvp(j)
            tau[j.iv : j.iv + n] = np.linalg.solve(self._T_block(j, qp, True).T, taup[j.iv_p : j.iv_p + n])
        return tau

    def __repr__(self) -> str:
        return (f"<loopdyn.PartitionMap {self.original.name!r} → {self.partitioned.name!r}: "
                f"{len(self.joints)} joints partitioned, {len(self.massless_bodies)} massless bodies>")


def _selected(model: Model, joints, names: dict) -> set[str]:
    """The names of the joints :func:`partition` splits (``joints``: None, a name or names)."""
    if joints is None:
        return {b.joint_name for b in model.bodies if b.joint.code in (SPHERICAL, FREEFLYER)}
    if isinstance(joints, str):
        joints = [joints]
    try:
        joints = list(joints)
    except TypeError:
        raise ModelError(f"partition: joints must be joint names, got {joints!r}") from None
    selected = set()
    for name in joints:
        if not isinstance(name, str) or name not in names:
            raise ModelError(f"partition: no joint named {name!r} in model {model.name!r}")
        if model.compound_joint(name) is not None:
            continue  # already a chain of 1-DoF sub-hinges: partitioning is the identity on it
        if names[name].joint.code not in (SPHERICAL, FREEFLYER):
            raise ModelError(
                f"partition: joint {name!r} is {names[name].joint.kind!r}; only spherical and free-flyer "
                "joints can be partitioned"
            )
        selected.add(name)
    return selected


def partition(model: Model, joints=None, *, free_flyer_rotation: str = "spherical",
              gimbal_tolerance: float = 1e-6) -> tuple[Model, PartitionMap]:
    """Split multi-DoF joints into chains of 1-DoF sub-hinges separated by massless bodies.

    Parameters
    ----------
    model:
        A model. On a model with loops or couplings the partitioned joints must be outside the
        clusters (they always are: clusters hold 1-DoF joints only); constraints are kept, and the
        maps work in the cluster-state layout. A model whose loops contain a multi-DoF joint has no
        cluster state to map from: partition its ``spanning_tree`` and close the loops on the result
        again (``add_loop``) — UnsupportedFeatureError says so.
    joints:
        Names of the joints to partition (each Spherical or FreeFlyer); default every Spherical and
        FreeFlyer joint. A compound joint (:mod:`loopdyn.model.compound`: Universal, Gimbal, Planar,
        Compound) is already stored as its chain of 1-DoF sub-hinges: naming it is allowed and leaves
        it as it is (partitioning is the identity on it), and the result keeps every compound joint.
    free_flyer_rotation:
        ``"spherical"`` (default): a free flyer becomes 3 prismatic sub-hinges and a Spherical joint;
        ``"euler"``: 3 prismatic and 3 revolute sub-hinges (z, y, x Euler angles).
    gimbal_tolerance:
        ``|cos θ|`` below which the coordinate maps report an Euler chain's gimbal singularity.

    Returns
    -------
    (Model, PartitionMap)
        The partitioned model (physical bodies keep their names, inertias and frames; sub-hinge joints
        are named ``<joint>__tx``, ``__ty``, ``__tz``, ``__rz``, ``__ry``, ``__rx``, ``__rot``; massless
        bodies ``<body>__massless<k>``; a joint frame with the original joint's name is kept on the
        physical body) and the coordinate conversions.

    Notes
    -----
    The transformation follows spec §1.4 (see the module docstring). Frame *indices* change (names
    are kept). Joints with armature cannot be partitioned (the armature acts on the original
    coordinates, not on the sub-hinge rates): UnsupportedFeatureError.
    """
    if not isinstance(model, Model):
        raise ModelError(f"partition expects a loopdyn Model, got {type(model).__name__}")
    if free_flyer_rotation not in ("spherical", "euler"):
        raise ModelError(f"free_flyer_rotation must be 'spherical' or 'euler', got {free_flyer_rotation!r}")
    if not (np.isfinite(gimbal_tolerance) and 0.0 <= gimbal_tolerance < 1.0):
        raise ModelError(f"gimbal_tolerance must be in [0, 1), got {gimbal_tolerance!r}")
    names = {b.joint_name: b for b in model.bodies}
    selected = _selected(model, joints, names)
    if model.has_constraints:
        try:
            ct = model.clusters()
        except UnsupportedFeatureError as exc:
            # a multi-DoF joint inside a loop: the model has no cluster state for the map to start from
            raise UnsupportedFeatureError(
                f"partition: model {model.name!r} has a multi-DoF joint inside a loop, so it has no "
                "cluster state for the coordinate maps to start from. Partition its spanning tree "
                "instead, part, _ = loopdyn.partition(loopdyn.spanning_tree(model)), then close the "
                "loops on part again (part.add_loop(...): the physical bodies keep their names). "
                f"({exc})"
            ) from exc
        for name in sorted(selected):
            c = ct.clusters[ct.body_cluster[model.joint_id(name)]]
            if len(c.bodies) > 1 or c.constraints:  # pragma: no cover - clusters hold 1-DoF joints only
                raise UnsupportedFeatureError(
                    f"partition: joint {name!r} is inside a cluster (a loop or a coupling); partitioning "
                    "joints inside clusters is not supported yet"
                )
    for name in selected:
        if np.any(names[name].armature_vector() != 0.0):
            raise UnsupportedFeatureError(
                f"partition: joint {name!r} has armature, which acts on its own coordinates and has no "
                "equivalent on the sub-hinge rates"
            )

    out = Model(f"{model.name}", gravity=model.gravity)
    out.universe_inertia = model.universe_inertia
    body_map = np.zeros(model.njoints, dtype=np.int64)
    parts: list[PartitionedJoint] = []
    zero = Inertia.zero
    for i, b in enumerate(model.bodies, start=1):
        parent = int(body_map[b.parent])
        placement = (b.rotation, b.translation)
        if b.joint_name not in selected:
            body_map[i] = out.add_body(b.name, parent, b.joint, placement, b.inertia, joint_name=b.joint_name,
                                       independent=b.independent, armature=b.armature_vector(),
                                       inertia_check="accept")  # checked when the model was built
            continue
        ff = b.joint.code == FREEFLYER
        euler = (not ff) or free_flyer_rotation == "euler"
        subs: list[tuple[str, object]] = []
        if ff:
            lo, hi = b.joint.lower_position(), b.joint.upper_position()
            for k, (sfx, ax) in enumerate((("tx", _EX), ("ty", _EY), ("tz", _EZ))):
                subs.append((sfx, Prismatic(ax, lower=lo[k], upper=hi[k])))
        if euler:
            subs += [("rz", Revolute(_EZ)), ("ry", Revolute(_EY)), ("rx", Revolute(_EX))]
        else:
            subs.append(("rot", Spherical()))
        iq_p, iv_p = out.spanning_nq, out.spanning_nv
        chain = []
        for k, (sfx, joint) in enumerate(subs):
            last = k == len(subs) - 1
            bname = b.name if last else f"{b.name}__massless{k + 1}"
            jname = f"{b.joint_name}__{sfx}"
            for nm in (bname, jname):
                if any(f.name == nm for f in model.frames) and not (last and nm == b.name):
                    raise ModelError(f"partition: the name {nm!r} chosen for a sub-hinge is already used")
            idx = out.add_body(bname, parent, joint, placement if k == 0 else None,
                               b.inertia if last else zero(), joint_name=jname, inertia_check="accept")
            chain.append(idx)
            parent = idx
        body_map[i] = chain[-1]
        out.add_frame(b.joint_name, chain[-1], None, kind=JOINT_FRAME)  # the original joint's frame
        parts.append(PartitionedJoint(b.joint_name, "free-flyer" if ff else "spherical", euler,
                                      b.idx_q, b.idx_v, iq_p, iv_p, tuple(chain)))
    # frames other than the ones add_body creates for moving bodies (fixed links, operational frames)
    auto = {(b.name, BODY_FRAME) for b in model.bodies} | {(b.joint_name, JOINT_FRAME) for b in model.bodies}
    for f in model.frames[1:]:
        if (f.name, f.kind) in auto:
            continue
        out.add_frame(f.name, int(body_map[f.body]), (f.rotation, f.translation), kind=f.kind)
    for rec in model.compound_joints:  # compound joints are unchanged (their bodies renumbered)
        out.compound_joints.append(replace(rec, bodies=tuple(int(body_map[i]) for i in rec.bodies)))
    if model.has_constraints:  # loops and couplings refer to bodies and joints by name: unchanged
        out.constraints = list(model.constraints)
        out.declared_clusters = list(model.declared_clusters)
        out.constraint_tolerance = model.constraint_tolerance  # (also invalidates the cached layout)
    return out, PartitionMap(model, out, parts, body_map, gimbal_tolerance)
