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
from numba import njit

from ..algorithms.validation import check_data
from ..errors import ConfigurationError, NonFiniteError, ShapeError, UnsupportedFeatureError
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


class TreeArrays:
    """The model's tree as flat arrays (index 0 = universe)."""

    __slots__ = ("parent", "jtype", "iq", "iv", "nvj", "R0", "p0", "axis", "S", "inertia", "armature",
                 "nq", "nv", "nb", "token", "__weakref__")

    def __init__(self, model, token):
        nb = model.nbodies
        self.nb = nb
        self.nq = model.nq
        self.nv = model.nv
        self.token = token
        self.parent = np.zeros(nb + 1, np.int64)
        self.jtype = np.zeros(nb + 1, np.int64)
        self.iq = np.zeros(nb + 1, np.int64)
        self.iv = np.zeros(nb + 1, np.int64)
        self.nvj = np.zeros(nb + 1, np.int64)
        self.R0 = np.zeros((nb + 1, 3, 3))
        self.R0[0] = np.eye(3)
        self.p0 = np.zeros((nb + 1, 3))
        self.axis = np.zeros((nb + 1, 3))
        self.S = np.zeros((nb + 1, 6, 6))
        self.inertia = np.zeros((nb + 1, 6, 6))
        self.armature = np.zeros(max(self.nv, 0))
        for i, b in enumerate(model.bodies, start=1):
            j = b.joint
            if j.code not in (REVOLUTE, REVOLUTE_UNBOUNDED, PRISMATIC, SPHERICAL, FREEFLYER):
                raise UnsupportedFeatureError(
                    f"joint {b.joint_name!r}: joint type {j.kind!r} is not supported by the spatial-operator "
                    "functions"
                )
            self.parent[i] = b.parent
            self.jtype[i] = j.code
            self.iq[i] = b.idx_q
            self.iv[i] = b.idx_v
            self.nvj[i] = j.nv
            self.R0[i] = b.rotation
            self.p0[i] = b.translation
            ax = j.axis_array()
            self.axis[i] = ax
            if j.code in (REVOLUTE, REVOLUTE_UNBOUNDED):
                self.S[i, :3, 0] = ax  # [angular; linear]
            elif j.code == PRISMATIC:
                self.S[i, 3:, 0] = ax
            elif j.code == SPHERICAL:
                self.S[i, :3, :3] = np.eye(3)
            else:  # free flyer: v = [linear; angular] in the child frame
                self.S[i, 3:, :3] = np.eye(3)
                self.S[i, :3, 3:] = np.eye(3)
            self.inertia[i] = b.inertia.matrix()  # Featherstone [angular; linear]
            self.armature[b.idx_v : b.idx_v + j.nv] = b.armature_vector()


_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def tree_arrays(model, data, what: str) -> TreeArrays:
    """The cached arrays of ``model`` after checking that ``data`` belongs to it and that it is a tree."""
    if model.has_constraints:
        raise UnsupportedFeatureError(
            f"{what}: model {model.name!r} has loops or couplings; the spatial-operator functions handle "
            "kinematic trees only so far (the cluster-tree version, spec §2.7, is not implemented). Use "
            "loopdyn.spanning_tree(model) for the spanning tree's quantities"
        )
    check_data(model, data)
    token = data.source_key  # check_data guarantees this is the model's current identity token
    arr = _CACHE.get(model)
    if arr is None or arr.token is not token:
        arr = TreeArrays(model, token)
        _CACHE[model] = arr
    return arr


def as_configuration(q, nq: int) -> np.ndarray:
    """``q`` as a contiguous float64 vector of size ``nq`` (ShapeError / NonFiniteError otherwise)."""
    try:
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


# ------------------------------------------------------------------------------------------------
# kernels


@njit(cache=True)
def check_q(jtype, iq, q, nq):
    """0 or a status: size, finiteness, unit quaternions and (cos, sin) pairs."""
    if q.shape[0] != nq:
        return BAD_SIZE * STATUS_BASE
    for k in range(nq):
        if not math.isfinite(q[k]):
            return NOT_FINITE * STATUS_BASE + k
    for i in range(1, jtype.shape[0]):
        jt = jtype[i]
        if jt == SPHERICAL or jt == FREEFLYER:
            o = iq[i] + 3 if jt == FREEFLYER else iq[i]
            n = math.sqrt(q[o] ** 2 + q[o + 1] ** 2 + q[o + 2] ** 2 + q[o + 3] ** 2)
            if abs(n - 1.0) > UNIT_TOL:
                return BAD_QUAT * STATUS_BASE + i
        elif jt == REVOLUTE_UNBOUNDED:
            if abs(math.sqrt(q[iq[i]] ** 2 + q[iq[i] + 1] ** 2) - 1.0) > UNIT_TOL:
                return BAD_UNIT_COMPLEX * STATUS_BASE + i
    return 0


@njit(cache=True)
def joint_motion(jt, axis, q, o, R, p):
    """The joint's own motion (R, p) of the child in the joint frame (Pinocchio's convention)."""
    p[:] = 0.0
    if jt == REVOLUTE or jt == REVOLUTE_UNBOUNDED:
        if jt == REVOLUTE:
            c, s = math.cos(q[o]), math.sin(q[o])
        else:
            c, s = q[o], q[o + 1]
        x, y, z = axis[0], axis[1], axis[2]
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
            p[a] = q[o] * axis[a]
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


@njit(cache=True)
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


@njit(cache=True)
def articulated_sweep(par, jtype, iq, nvj, R0, p0, axis, S, inertia, iv, armature, q,
                      X, P, G, Dinv, Dchol):
    """Kinematics and the tip→base ATBI sweep (spec §1.5.3 F0–F6, Featherstone RBDA Table 7.1).

    Writes per body k: X[k] = φ*(℘(k),k); P[k] = P(k) the articulated inertia (Eq. 7 U2);
    G[k][:, :n_k] = G(k) = P(k) H*(k) D⁻¹(k) (U4); Dinv[k][:n_k, :n_k] = D⁻¹(k) with
    D(k) = H(k) P(k) H*(k) + diag(armature) (U3); Dchol[k] its Cholesky factor. Returns 0, or a
    status naming the first body whose D is not positive definite.
    """
    nb = par.shape[0] - 1
    Rj = np.empty((3, 3))
    pj = np.empty(3)
    R = np.empty((3, 3))
    p = np.empty(3)
    U = np.empty((6, 6))
    Pa = np.empty((6, 6))
    T = np.empty((6, 6))
    y = np.empty(6)
    for i in range(1, nb + 1):
        joint_motion(jtype[i], axis[i], q, iq[i], Rj, pj)
        for a in range(3):
            p[a] = p0[i, a]
            for b in range(3):
                R[a, b] = 0.0
                for c in range(3):
                    R[a, b] += R0[i, a, c] * Rj[c, b]
                p[a] += R0[i, a, b] * pj[b]
        motion_transform(R, p, X[i])
        P[i, :, :] = inertia[i]
    for i in range(nb, 0, -1):
        n = nvj[i]
        Pi = P[i]
        # U = P S (6×n), D = Sᵀ U + armature
        for a in range(6):
            for c in range(n):
                s = 0.0
                for b in range(6):
                    s += Pi[a, b] * S[i, b, c]
                U[a, c] = s
        L = Dchol[i]
        L[:, :] = 0.0
        D = Dinv[i]  # holds D first, then D⁻¹
        dmax = 0.0
        for r in range(n):
            for c in range(n):
                s = 0.0
                for b in range(6):
                    s += S[i, b, r] * U[b, c]
                D[r, c] = s
            D[r, r] += armature[iv[i] + r]
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
        # D⁻¹ from L: solve L Lᵀ Y = I column by column
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
                T[r, c] = y[r]
        for r in range(n):
            for c in range(n):
                D[r, c] = T[r, c]
        # G = U D⁻¹ ; P⁺ = P − G Uᵀ ; P(℘) += Xᵀ P⁺ X  (U2/U4/U7)
        for a in range(6):
            for c in range(n):
                s = 0.0
                for k in range(n):
                    s += U[a, k] * D[k, c]
                G[i, a, c] = s
        pi = par[i]
        if pi > 0:
            for a in range(6):
                for b in range(6):
                    s = Pi[a, b]
                    for k in range(n):
                        s -= G[i, a, k] * U[b, k]
                    Pa[a, b] = s
            Xi = X[i]
            for a in range(6):
                for b in range(6):
                    s = 0.0
                    for k in range(6):
                        s += Pa[a, k] * Xi[k, b]
                    T[a, b] = s
            for a in range(6):
                for b in range(6):
                    s = 0.0
                    for k in range(6):
                        s += Xi[k, a] * T[k, b]
                    P[pi, a, b] += s
    return 0
