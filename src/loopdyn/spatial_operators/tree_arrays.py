"""Flat per-model arrays and the articulated-body (ATBI) sweep shared by the spatial-operator functions.

Everything here follows Jain's spatial operator algebra (SOA) as summarised in
``specs/partitioning-and-constraint-embedding-jain.md`` §1.5 (Eq. 7 / steps F0–F6), written with
Featherstone's body-frame matrices (spec §3): ``φ*(℘(k),k) = X_k`` is the 6×6 motion transform
from the parent's frame to body k's frame and ``φ(℘(k),k) = X_kᵀ``. Inside the kernels spatial
vectors are Featherstone-ordered ``[angular; linear]``; the public functions convert to Pinocchio's
``[linear; angular]`` at the boundary.

The arrays are built once per model from its public attributes (``bodies``: parent, joint,
placement, inertia, armature) and cached with the model.
"""

from __future__ import annotations

import math
import weakref

import numpy as np

from ..algorithms.validation import check_data
from ..errors import ConfigurationError, NonFiniteError, ShapeError, UnsupportedFeatureError
from ..jit import inlined, njit
from ..model.joints import FREEFLYER, PRISMATIC, REVOLUTE, REVOLUTE_UNBOUNDED, SPHERICAL

#: tolerance on | |quaternion| − 1 | and | cos² + sin² − 1 | (as loopdyn's other algorithms)
UNIT_TOL = 1e-6
#: a pivot of D(k) below this fraction of D(k)'s largest diagonal entry is treated as singular
PIVOT_TOL = 1e-12

# kernel status kinds: status = kind * STATUS_BASE + index
STATUS_BASE = 1 << 32
BAD_SIZE = 1
NOT_FINITE = 2
BAD_QUAT = 3
BAD_UNIT_COMPLEX = 4
SINGULAR_D = 5

# operator codes of the factors' apply kernels (tree and cluster tree)
OP_L = 0  # I + HφK
OP_LT = 1  # [I + HφK]*
OP_LINV = 2  # I − HψK
OP_LINVT = 3  # [I − HψK]*
OP_D = 4
OP_DINV = 5
OP_M = 6  # L D Lᵀ
OP_MINV = 7  # L⁻ᵀ D⁻¹ L⁻¹


# columns of TreeArrays.ib (row 0, the universe: IQ holds nq and IV holds nv)
PARENT, JTYPE, IQ, IV, NV = 0, 1, 2, 3, 4
# columns of TreeArrays.geo: joint placement rotation (row-major), translation, axis
G_R, G_P, G_AXIS = 0, 9, 12
# slots of TreeArrays.mats
M_S, M_INERTIA = 0, 1
# slots of a workspace W (nb + 1, W_SLOTS, 6, 6)
W_X, W_P, W_G, W_DINV, W_DCHOL, W_UPS, W_TB, W_RP = 0, 1, 2, 3, 4, 5, 6, 7
W_SLOTS = 8


class TreeArrays:
    """The model's tree as flat arrays (row 0 = universe), few of them so that kernel calls are cheap.

    * ``ib`` (nb + 1, 5) int: parent, joint type, q offset, v offset, nv of each body;
    * ``geo`` (nb + 1, 15): joint placement R (row-major) and p in the parent body, joint axis;
    * ``mats`` (nb + 1, 2, 6, 6): the motion subspace S (first nv columns, [angular; linear]) and
      the spatial inertia (Featherstone ordering);
    * ``armature`` (nv,).
    """

    __slots__ = ("ib", "geo", "mats", "armature", "nq", "nv", "nb", "token", "compiled", "work",
                 "__weakref__")

    def __init__(self, model, token):
        nb = model.nbodies
        self.nb = nb
        self.nq = model.nq
        self.nv = model.nv
        self.token = token
        self.compiled = None
        self.ib = np.zeros((nb + 1, 5), np.int64)
        self.ib[0, IQ] = self.nq
        self.ib[0, IV] = self.nv
        self.geo = np.zeros((nb + 1, 15))
        self.mats = np.zeros((nb + 1, 2, 6, 6))
        self.armature = np.zeros(max(self.nv, 0))
        for i, b in enumerate(model.bodies, start=1):
            j = b.joint
            if j.code not in (REVOLUTE, REVOLUTE_UNBOUNDED, PRISMATIC, SPHERICAL, FREEFLYER):
                raise UnsupportedFeatureError(
                    f"joint {b.joint_name!r}: joint type {j.kind!r} is not supported by the spatial-operator "
                    "functions"
                )
            self.ib[i] = (b.parent, j.code, b.idx_q, b.idx_v, j.nv)
            ax = j.axis_array()
            self.geo[i, G_R : G_R + 9] = np.asarray(b.rotation).reshape(-1)
            self.geo[i, G_P : G_P + 3] = b.translation
            self.geo[i, G_AXIS : G_AXIS + 3] = ax
            S = self.mats[i, M_S]
            if j.code in (REVOLUTE, REVOLUTE_UNBOUNDED):
                S[:3, 0] = ax  # [angular; linear]
            elif j.code == PRISMATIC:
                S[3:, 0] = ax
            elif j.code == SPHERICAL:
                S[:3, :3] = np.eye(3)
            else:  # free flyer: v = [linear; angular] in the child frame
                S[3:, :3] = np.eye(3)
                S[:3, 3:] = np.eye(3)
            self.mats[i, M_INERTIA] = b.inertia.matrix()  # Featherstone [angular; linear]
            self.armature[b.idx_v : b.idx_v + j.nv] = b.armature_vector()
        self.work = new_work(nb)  # scratch of the functions that return no factor


def new_work(nb: int) -> np.ndarray:
    """A workspace for the sweeps (uninitialised: the kernels write every entry they read)."""
    return np.empty((nb + 1, W_SLOTS, 6, 6))


_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def tree_arrays(model, data, what: str) -> TreeArrays:
    """The cached arrays of ``model`` after checking that ``data`` belongs to it and that it is a tree.

    Fast path: the model's compiled form is the one the arrays were built with (it is rebuilt after
    any change to the model) and ``data`` carries the identity token already validated for it."""
    if model.has_constraints:
        raise UnsupportedFeatureError(
            f"{what}: model {model.name!r} has loops or couplings: these arrays describe kinematic trees "
            "only (models with loops go through the cluster-tree kernels of cluster_sweeps)"
        )
    arr = _CACHE.get(model)
    compiled = model.compiled()
    if arr is not None and arr.compiled is compiled and getattr(data, "source_key", None) is arr.token:
        return arr
    check_data(model, data)
    token = data.source_key  # check_data guarantees this is the model's current identity token
    if arr is None or arr.compiled is not compiled:
        arr = TreeArrays(model, token)
        arr.compiled = compiled
        _CACHE[model] = arr
    arr.token = token
    return arr


def as_configuration(q, nq: int) -> np.ndarray:
    """``q`` as a contiguous float64 vector of size ``nq`` (ShapeError / NonFiniteError otherwise)."""
    if type(q) is np.ndarray and q.dtype == np.float64 and q.shape == (nq,) and q.flags.c_contiguous:
        return q  # the common case, without copies
    try:
        if np.iscomplexobj(q):
            raise TypeError("complex values")
        arr = np.ascontiguousarray(q, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ShapeError(f"q must be an array of {nq} real numbers: {exc}") from None
    if arr.shape != (nq,):
        raise ShapeError(f"q must be a 1-D array of size {nq}, got shape {arr.shape}")
    return arr


def raise_status(model, status: int, what: str) -> None:
    """Raise the exception a kernel status stands for, naming the joint at fault."""
    from ..errors import SingularInertiaError

    kind, index = divmod(int(status), STATUS_BASE)
    if kind == NOT_FINITE:
        raise NonFiniteError(f"{what}: q contains NaN or inf (first at index {index})")
    names = model.joint_names
    if kind == BAD_QUAT:
        raise ConfigurationError(
            f"{what}: the quaternion of joint {names[index]!r} is not unit-norm within {UNIT_TOL:g}; "
            "normalize it (loopdyn.normalize)"
        )
    if kind == BAD_UNIT_COMPLEX:
        raise ConfigurationError(
            f"{what}: (cos, sin) of continuous joint {names[index]!r} is not unit-norm within {UNIT_TOL:g}"
        )
    if kind == SINGULAR_D:
        raise SingularInertiaError(
            f"{what}: the articulated inertia seen by joint {names[index]!r} is singular along the joint's "
            "motion (D = Sᵀ P S is not positive definite): the subtree it moves is massless (e.g. a "
            "massless leaf body) or cannot resist the joint's motion"
        )
    raise ShapeError(f"{what}: bad input (status {status})")


def check_cluster_data(model, data) -> None:
    """``data`` belongs to ``model`` (a model with loops: its cluster arrays are used)."""
    if getattr(data, "source_key", None) is not model._key:
        check_data(model, data)


def raise_cluster_status(model, status: int, what: str) -> None:
    """Raise the exception a cluster kernel's status stands for; a cluster whose articulated inertia
    is singular along its motion (status SINGULAR, index: the cluster's first body) is named by its
    joints."""
    from ..algorithms import status as codes
    from ..errors import SingularInertiaError

    kind, index = divmod(int(status), codes.STATUS_BASE)
    if kind == codes.SINGULAR:
        ct = model.clusters()
        c = next(c for c in ct.clusters if index in c.bodies)
        names = [model.joint_names[b] for b in c.bodies]
        raise SingularInertiaError(
            f"{what}: the articulated inertia of the cluster of joints {names} is singular along its motion "
            "(D = Sᵀ P S is not positive definite): the bodies it moves are massless or cannot resist its "
            "motion"
        )
    codes.raise_for_status(model, status, ("q",))


# ------------------------------------------------------------------------------------------------
# kernels


@njit(cache=True)
def check_q(ib, q):
    """0 or a status: size, finiteness, unit quaternions and (cos, sin) pairs."""
    nq = ib[0, IQ]
    if q.shape[0] != nq:
        return BAD_SIZE * STATUS_BASE
    for k in range(nq):
        if not math.isfinite(q[k]):
            return NOT_FINITE * STATUS_BASE + k
    for i in range(1, ib.shape[0]):
        jt = ib[i, JTYPE]
        o = ib[i, IQ]
        if jt == SPHERICAL or jt == FREEFLYER:
            o = o + 3 if jt == FREEFLYER else o
            n = math.sqrt(q[o] ** 2 + q[o + 1] ** 2 + q[o + 2] ** 2 + q[o + 3] ** 2)
            if abs(n - 1.0) > UNIT_TOL:
                return BAD_QUAT * STATUS_BASE + i
        elif jt == REVOLUTE_UNBOUNDED:
            if abs(math.sqrt(q[o] ** 2 + q[o + 1] ** 2) - 1.0) > UNIT_TOL:
                return BAD_UNIT_COMPLEX * STATUS_BASE + i
    return 0


@inlined
def joint_motion(jt, geo, q, o, R, p):
    """The joint's own motion (R, p) of the child in the joint frame (Pinocchio's convention)."""
    p[:] = 0.0
    if jt == REVOLUTE or jt == REVOLUTE_UNBOUNDED:
        if jt == REVOLUTE:
            c, s = math.cos(q[o]), math.sin(q[o])
        else:
            c, s = q[o], q[o + 1]
        x, y, z = geo[G_AXIS], geo[G_AXIS + 1], geo[G_AXIS + 2]
        t = 1.0 - c
        R[0, 0] = c + t * x * x
        R[0, 1] = t * x * y - s * z
        R[0, 2] = t * x * z + s * y
        R[1, 0] = t * x * y + s * z
        R[1, 1] = c + t * y * y
        R[1, 2] = t * y * z - s * x
        R[2, 0] = t * x * z - s * y
        R[2, 1] = t * y * z + s * x
        R[2, 2] = c + t * z * z
        return
    if jt == PRISMATIC:
        for a in range(3):
            for b in range(3):
                R[a, b] = 1.0 if a == b else 0.0
            p[a] = q[o] * geo[G_AXIS + a]
        return
    if jt == FREEFLYER:
        for a in range(3):
            p[a] = q[o + a]
        o = o + 3
    x, y, z, w = q[o], q[o + 1], q[o + 2], q[o + 3]
    R[0, 0] = 1.0 - 2.0 * (y * y + z * z)
    R[0, 1] = 2.0 * (x * y - z * w)
    R[0, 2] = 2.0 * (x * z + y * w)
    R[1, 0] = 2.0 * (x * y + z * w)
    R[1, 1] = 1.0 - 2.0 * (x * x + z * z)
    R[1, 2] = 2.0 * (y * z - x * w)
    R[2, 0] = 2.0 * (x * z - y * w)
    R[2, 1] = 2.0 * (y * z + x * w)
    R[2, 2] = 1.0 - 2.0 * (x * x + y * y)


@inlined
def motion_transform(R, p, X):
    """X = ᶜX_ₚ, the motion transform from the parent frame to a child placed at (R, p) in it,
    Featherstone ordering: [[Rᵀ, 0], [−Rᵀ p×, Rᵀ]]."""
    X[:, :] = 0.0
    for a in range(3):
        for b in range(3):
            X[a, b] = R[b, a]
            X[3 + a, 3 + b] = R[b, a]
    # −Rᵀ p×: column b of p× is p × e_b
    for a in range(3):
        X[3 + a, 0] = -(R[1, a] * (p[2]) + R[2, a] * (-p[1]))
        X[3 + a, 1] = -(R[0, a] * (-p[2]) + R[2, a] * p[0])
        X[3 + a, 2] = -(R[0, a] * p[1] + R[1, a] * (-p[0]))


@inlined
def rot_congruence(R, A, ra, ca, out, transpose, t):
    """out = R A Rᵀ (or Rᵀ A R when ``transpose``) for the 3×3 block of A at (ra, ca); t: 3×3 scratch."""
    if transpose:
        for a in range(3):
            for b in range(3):
                t[a, b] = R[0, a] * A[ra, ca + b] + R[1, a] * A[ra + 1, ca + b] + R[2, a] * A[ra + 2, ca + b]
        for a in range(3):
            for b in range(3):
                out[a, b] = t[a, 0] * R[0, b] + t[a, 1] * R[1, b] + t[a, 2] * R[2, b]
    else:
        for a in range(3):
            for b in range(3):
                t[a, b] = R[a, 0] * A[ra, ca + b] + R[a, 1] * A[ra + 1, ca + b] + R[a, 2] * A[ra + 2, ca + b]
        for a in range(3):
            for b in range(3):
                out[a, b] = t[a, 0] * R[b, 0] + t[a, 1] * R[b, 1] + t[a, 2] * R[b, 2]


@inlined
def force_congruence_add(R, p, A, out, sc):
    """out += Xᵀ A X for a symmetric 6×6 A, X = ᶜX_ₚ of the placement (R, p) (an articulated inertia
    carried to the parent). With X = blockdiag(Rᵀ) [[1, 0], [−p×, 1]] and aᵢⱼ = R Aᵢⱼ Rᵀ:
    Xᵀ A X = [[a₁₁ + p× a₁₂ᵀ − K p×, K], [Kᵀ, a₂₂]], K = a₁₂ + p× a₂₂. sc: (5, 3, 3) scratch."""
    a11, a12, a22, K, t = sc[0], sc[1], sc[2], sc[3], sc[4]
    rot_congruence(R, A, 0, 0, a11, False, t)
    rot_congruence(R, A, 0, 3, a12, False, t)
    rot_congruence(R, A, 3, 3, a22, False, t)
    for b in range(3):  # K = a12 + p× a22
        K[0, b] = a12[0, b] + p[1] * a22[2, b] - p[2] * a22[1, b]
        K[1, b] = a12[1, b] + p[2] * a22[0, b] - p[0] * a22[2, b]
        K[2, b] = a12[2, b] + p[0] * a22[1, b] - p[1] * a22[0, b]
    for b in range(3):
        # column b of p× a12ᵀ is p × a12[b, :]; row a of K p× is K[a, :] × p reversed: (K p×)[a] = p-cross
        pt0 = p[1] * a12[b, 2] - p[2] * a12[b, 1]
        pt1 = p[2] * a12[b, 0] - p[0] * a12[b, 2]
        pt2 = p[0] * a12[b, 1] - p[1] * a12[b, 0]
        for a in range(3):
            if b == 0:
                kp = K[a, 1] * p[2] - K[a, 2] * p[1]
            elif b == 1:
                kp = K[a, 2] * p[0] - K[a, 0] * p[2]
            else:
                kp = K[a, 0] * p[1] - K[a, 1] * p[0]
            pt = pt0 if a == 0 else (pt1 if a == 1 else pt2)
            out[a, b] += a11[a, b] + pt - kp
            out[a, 3 + b] += K[a, b]
            out[3 + b, a] += K[a, b]
            out[3 + a, 3 + b] += a22[a, b]


@inlined
def motion_congruence(R, p, Y, out, sc):
    """out = X Y Xᵀ for a symmetric 6×6 Y, X = ᶜX_ₚ of the placement (R, p) (a compliance carried to
    the child). With Y = [[A, B], [Bᵀ, C]], T = [[1, 0], [−p×, 1]]:
    T Y Tᵀ = [[A, Lᵀ], [L, L p× + C − p× B]], L = Bᵀ − p× A, then each block rotated by Rᵀ · R.
    sc: (5, 3, 3) scratch."""
    L, BR, t, u = sc[0], sc[1], sc[2], sc[3]
    # L = Bᵀ − p× A
    for b in range(3):
        L[0, b] = Y[3 + 0, b] - (p[1] * Y[2, b] - p[2] * Y[1, b])
        L[1, b] = Y[3 + 1, b] - (p[2] * Y[0, b] - p[0] * Y[2, b])
        L[2, b] = Y[3 + 2, b] - (p[0] * Y[1, b] - p[1] * Y[0, b])
    # BR = L p× + C − p× B
    for a in range(3):
        for b in range(3):
            if b == 0:
                lp = L[a, 1] * p[2] - L[a, 2] * p[1]
            elif b == 1:
                lp = -L[a, 0] * p[2] + L[a, 2] * p[0]
            else:
                lp = L[a, 0] * p[1] - L[a, 1] * p[0]
            if a == 0:
                pb = p[1] * Y[2, 3 + b] - p[2] * Y[1, 3 + b]
            elif a == 1:
                pb = p[2] * Y[0, 3 + b] - p[0] * Y[2, 3 + b]
            else:
                pb = p[0] * Y[1, 3 + b] - p[1] * Y[0, 3 + b]
            BR[a, b] = lp + Y[3 + a, 3 + b] - pb
    rot_congruence(R, Y, 0, 0, t, True, u)
    for a in range(3):
        for b in range(3):
            out[a, b] = t[a, b]
    rot_congruence(R, L, 0, 0, t, True, u)
    for a in range(3):
        for b in range(3):
            out[3 + a, b] = t[a, b]
            out[b, 3 + a] = t[a, b]
    rot_congruence(R, BR, 0, 0, t, True, u)
    for a in range(3):
        for b in range(3):
            out[3 + a, 3 + b] = t[a, b]


@njit(cache=True)
def articulated_sweep(ib, geo, mats, armature, q, W):
    """Kinematics and the tip→base ATBI sweep (spec §1.5.3 F0–F6, Featherstone RBDA Table 7.1).

    Writes per body k: W[k, W_X] = φ*(℘(k),k); W[k, W_P] = P(k), the articulated inertia (Eq. 7 U2);
    W[k, W_G][:, :n_k] = G(k) = P(k) H*(k) D⁻¹(k) (U4); W[k, W_DINV][:n_k, :n_k] = D⁻¹(k) with
    D(k) = H(k) P(k) H*(k) + diag(armature) (U3); W[k, W_DCHOL] its Cholesky factor; and the
    placement (R, p) of body k in its parent in W[k, W_RP][:3, :3] and W[k, W_RP][3, :3]. Returns 0,
    or a status naming the first body whose D is not positive definite.
    """
    nb = ib.shape[0] - 1
    Rj = np.empty((3, 3))
    pj = np.empty(3)
    U = np.empty((6, 6))
    Pa = np.empty((6, 6))
    y = np.empty(6)
    sc = np.empty((5, 3, 3))
    for i in range(1, nb + 1):
        joint_motion(ib[i, JTYPE], geo[i], q, ib[i, IQ], Rj, pj)
        RP = W[i, W_RP]
        for a in range(3):
            pa = geo[i, G_P + a]
            for b in range(3):
                s = 0.0
                for c in range(3):
                    s += geo[i, G_R + 3 * a + c] * Rj[c, b]
                RP[a, b] = s
                pa += geo[i, G_R + 3 * a + b] * pj[b]
            RP[3, a] = pa
        motion_transform(RP[:3, :3], RP[3, :3], W[i, W_X])
        W[i, W_P, :, :] = mats[i, M_INERTIA]
    for i in range(nb, 0, -1):
        n = ib[i, NV]
        iv = ib[i, IV]
        Pi = W[i, W_P]
        S = mats[i, M_S]
        # U = P S (6×n), D = Sᵀ U + armature
        for a in range(6):
            for c in range(n):
                s = 0.0
                for b in range(6):
                    s += Pi[a, b] * S[b, c]
                U[a, c] = s
        L = W[i, W_DCHOL]
        L[:, :] = 0.0
        D = W[i, W_DINV]  # holds D first, then D⁻¹
        dmax = 0.0
        for r in range(n):
            for c in range(n):
                s = 0.0
                for b in range(6):
                    s += S[b, r] * U[b, c]
                D[r, c] = s
            D[r, r] += armature[iv + r]
            dmax = max(dmax, abs(D[r, r]))
        # Cholesky D = L Lᵀ with a relative pivot test
        for c in range(n):
            s = D[c, c]
            for k in range(c):
                s -= L[c, k] * L[c, k]
            if not (s > PIVOT_TOL * dmax) or s <= 0.0:
                return SINGULAR_D * STATUS_BASE + i
            L[c, c] = math.sqrt(s)
            for r in range(c + 1, n):
                t = D[r, c]
                for k in range(c):
                    t -= L[r, k] * L[c, k]
                L[r, c] = t / L[c, c]
        # D⁻¹ from L: solve L Lᵀ Y = I column by column (into Pa, then copied)
        for c in range(n):
            for r in range(n):
                t = 1.0 if r == c else 0.0
                for k in range(r):
                    t -= L[r, k] * y[k]
                y[r] = t / L[r, r]
            for r in range(n - 1, -1, -1):
                t = y[r]
                for k in range(r + 1, n):
                    t -= L[k, r] * y[k]
                y[r] = t / L[r, r]
            for r in range(n):
                Pa[r, c] = y[r]
        for r in range(n):
            for c in range(n):
                D[r, c] = Pa[r, c]
        # G = U D⁻¹ ; P⁺ = P − G Uᵀ ; P(℘) += Xᵀ P⁺ X  (U2/U4/U7)
        Gi = W[i, W_G]
        for a in range(6):
            for c in range(n):
                s = 0.0
                for k in range(n):
                    s += U[a, k] * D[k, c]
                Gi[a, c] = s
        pi = ib[i, PARENT]
        if pi > 0:
            for a in range(6):
                for b in range(6):
                    s = Pi[a, b]
                    for k in range(n):
                        s -= Gi[a, k] * U[b, k]
                    Pa[a, b] = s
            RP = W[i, W_RP]
            force_congruence_add(RP[:3, :3], RP[3, :3], Pa, W[pi, W_P], sc)
    return 0
