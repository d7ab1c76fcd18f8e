"""Link constraints and the Delassus matrix ``Λ⁻¹ = J M⁻¹ Jᵀ`` (inverse operational-space inertia)
of a kinematic tree.

Three methods:

* ``"dense"`` — the reference: ``J`` stacked from LOCAL frame Jacobians, ``M`` from the CRBA,
  ``Λ⁻¹ = Zᵀ Z`` with ``L Z = Jᵀ`` (``M = L Lᵀ``, Cholesky). O(n³ + m n²).
* ``"efpa"`` — the extended-force-propagator algorithm of Wensing, Featherstone and Orin (2012), in
  its local-frame form (spec ``delassus-pv-osimr-sathya2023`` §3.4 and §3.7). O(n + m d + m²)
  arithmetic (n bodies, m constraint rows, d depth); the closest-common-ancestor search adds
  O(m_b² log d) integer work.
* ``"ltl"`` — LTL-OSIM (Featherstone 2010): ``Λ⁻¹ = (J L⁻¹)(J L⁻¹)ᵀ`` with ``M = LᵀL`` the
  branch-induced sparse factorisation (RBDA §6.5); each row of ``J L⁻¹`` lives on the ancestor dofs
  of its link, so the triangular solves and products touch ancestors only. O(n d² + m² d + m d²).

EFPA, in link coordinates (``Xup_i = ⁱX_{π(i)}``, ``U_i = Iᴬ_i S_i``, ``D_i = S_iᵀ U_i``):

* force propagator ``P_i f = Xup_iᵀ (f − U_i D_i⁻¹ S_iᵀ f)`` carries a force from i to π(i);
* motion propagator ``P_iᵀ a = a' − S_i D_i⁻¹ U_iᵀ a'`` with ``a' = Xup_i a``;
* CEMPs: ``ᵖK_e = ⁱK_e P_iᵀ`` up every ancestor of the constrained link (the rows of K propagate
  like forces);
* ``W_i = ⁰Ω_i ⁱK_eᵀ = P_iᵀ W_π(i) + S_i D_i⁻¹ S_iᵀ ⁱK_eᵀ`` down the same path;
* ``Λ⁻¹_{e1,e2} = ᶜK_{e1} W_c`` at ``c = cca(ℓ_e1, ℓ_e2)`` (the link itself for e1 = e2 or for two
  constraints on one link; zero when the two links hang from the world through different subtrees).

Constraint rows follow Pinocchio's LOCAL convention: the constraint frame's spatial velocity
``[linear; angular]`` in its own axes; ``"3d"`` keeps the linear rows, ``"6d"`` all six, and a
custom ``m_e × 6`` matrix ``K_e`` multiplies that 6-vector.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit

from ..errors import InputError, ModelError, UnsupportedFeatureError
from ..model import layout as L
from ..spatial import ops
from .aba import inertia_to_parent, joint_factor
from .common import (
    SINGULAR,
    STATUS_BASE,
    as_float_vector,
    check_configuration,
    jcalc,
    kernel,
    raise_for_status,
    s_column,
)
from .crba import crba_core, dof_parents, ltl_in_place
from .validation import check_data

__all__ = [
    "CLUSTER_METHODS",
    "TREE_METHODS",
    "Constraint",
    "constraint_jacobian",
    "damped_delassus_inverse",
    "delassus",
]

_KINDS = ("6d", "3d")


# ---------------------------------------------------------------------------------------------
# constraints
def _as_placement(placement) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
    """None, a 4×4 homogeneous matrix or (R, p) → ((R row-major, 9), (p, 3)) as hashable tuples."""
    if placement is None:
        return None
    try:
        if isinstance(placement, tuple | list) and len(placement) == 2:
            R = np.asarray(placement[0], dtype=float)
            p = np.asarray(placement[1], dtype=float)
            if R.shape == (9,):  # the normalised form (row-major R)
                R = R.reshape(3, 3)
        else:
            T = np.asarray(placement, dtype=float)
            if T.shape != (4, 4):
                raise InputError(f"placement must be a 4×4 matrix or (R, p), got shape {T.shape}")
            R, p = T[:3, :3], T[:3, 3]
    except (TypeError, ValueError) as exc:
        if isinstance(exc, InputError):
            raise
        raise InputError(f"placement must be a 4×4 matrix or (R, p) of real numbers: {exc}") from None
    if R.shape != (3, 3) or p.shape != (3,):
        raise InputError(f"placement (R, p) must have shapes (3, 3) and (3,), got {R.shape} and {p.shape}")
    if not (np.all(np.isfinite(R)) and np.all(np.isfinite(p))):
        raise InputError("placement contains NaN or inf")
    if not np.allclose(R.T @ R, np.eye(3), atol=1e-9) or np.linalg.det(R) < 0:
        raise InputError("placement rotation is not a proper rotation matrix")
    return tuple(float(x) for x in R.ravel()), tuple(float(x) for x in p)


def _as_kind(kind) -> str | tuple[tuple[float, ...], ...]:
    if isinstance(kind, str):
        k = kind.lower()
        if k not in _KINDS:
            raise InputError(f"constraint kind must be '6d', '3d' or an (m_e × 6) array, got {kind!r}")
        return k
    try:
        K = np.asarray(kind, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"constraint kind must be '6d', '3d' or an (m_e × 6) array, got {kind!r}") from None
    if K.ndim == 1 and K.shape[0] == 6:
        K = K[None, :]
    if K.ndim != 2 or K.shape[1] != 6 or K.shape[0] == 0:
        raise InputError(f"a custom constraint matrix K_e must have shape (m_e, 6), m_e ≥ 1; got {K.shape}")
    if not np.all(np.isfinite(K)):
        raise InputError("constraint matrix K_e contains NaN or inf")
    return tuple(tuple(float(x) for x in row) for row in K)


@dataclass(frozen=True)
class Constraint:
    """A constraint on the motion of one link: ``K_e · v_c = …`` where ``v_c`` is the spatial
    velocity ``[linear; angular]`` of the constraint frame c in its own axes (Pinocchio's LOCAL).

    * ``body`` — a body name or any frame name (e.g. a URDF link merged into its parent body by a
      fixed joint); the constraint frame is that frame composed with ``placement``.
    * ``kind`` — ``"6d"`` (weld: all six rows), ``"3d"`` (point contact: the three linear rows) or a
      custom ``(m_e × 6)`` matrix ``K_e``.
    * ``placement`` — ``None`` (the frame itself), a 4×4 homogeneous matrix or ``(R, p)``: the
      constraint frame in the frame named by ``body``.

    Stored normalised (the kind as a lower-case string or a tuple of rows, the placement as
    ``((R row-major), (p))``), so constraints are hashable and compare by value.
    """

    body: str | int
    kind: Any = "6d"
    placement: Any = None

    def __post_init__(self):
        if not isinstance(self.body, str | int | np.integer) or isinstance(self.body, bool):
            raise InputError(f"constraint body must be a body or frame name, got {self.body!r}")
        if isinstance(self.body, np.integer):
            object.__setattr__(self, "body", int(self.body))
        object.__setattr__(self, "kind", _as_kind(self.kind))
        object.__setattr__(self, "placement", _as_placement(self.placement))

    @property
    def dim(self) -> int:
        """The number of rows m_e."""
        return {"6d": 6, "3d": 3}[self.kind] if isinstance(self.kind, str) else len(self.kind)

    def selection(self) -> np.ndarray:
        """``K_e`` (m_e × 6) applied to the constraint-frame velocity ``[linear; angular]``."""
        if self.kind == "6d":
            return np.eye(6)
        if self.kind == "3d":
            return np.eye(6)[:3]
        return np.array(self.kind, dtype=float)


def _resolve(model, c: Constraint) -> tuple[int, np.ndarray, np.ndarray]:
    """(body index, R, p): the constraint frame in its body's frame."""
    if isinstance(c.body, int):
        if not 0 <= c.body <= model.nbodies:
            raise ModelError(
                f"constraint body index {c.body} out of range (model has {model.nbodies} bodies)"
            )
        b, Rf, pf = c.body, np.eye(3), np.zeros(3)
    else:
        try:
            fid = model._frame_index(c.body)
        except KeyError:
            raise KeyError(
                f"constraint on unknown body or frame {c.body!r} in model {model.name!r}"
            ) from None
        f = model.frames[fid]
        b, Rf, pf = int(f.body), np.asarray(f.rotation, float), np.asarray(f.translation, float)
    if c.placement is None:
        return b, Rf, pf
    R = np.array(c.placement[0]).reshape(3, 3)
    p = np.array(c.placement[1])
    return b, Rf @ R, Rf @ p + pf


def _skew(x) -> np.ndarray:
    return np.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])


_CACHE: dict = {}


def _prepare(model, constraints):
    """Per (model state, constraint list), cached: body indices, row offsets, the rows K_e^loc acting
    on the body's [ω; v] motion in body coordinates, the constraint frames (body, R (9) + p (3)), and
    the user selections K_e."""
    try:
        cons = tuple(constraints)
    except TypeError:
        raise InputError("constraints must be a sequence of loopdyn Constraint objects") from None
    for c in cons:
        if not isinstance(c, Constraint):
            raise InputError(f"constraints must be loopdyn Constraint objects, got {type(c).__name__}")
    key = (id(model), cons)
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is model._key:
        return hit[1]
    nc = len(cons)
    cbody = np.zeros(nc, dtype=np.int64)
    crow = np.zeros(nc + 1, dtype=np.int64)
    frames = np.zeros((nc, 12))
    sels = []
    for e, c in enumerate(cons):
        b, R, p = _resolve(model, c)
        cbody[e] = b
        crow[e + 1] = crow[e] + c.dim
        frames[e, :9] = R.ravel()
        frames[e, 9:] = p
        sels.append(c.selection())
    m = int(crow[nc])
    K = np.zeros((m, 6))
    for e in range(nc):
        R = frames[e, :9].reshape(3, 3)
        p = frames[e, 9:]
        # body motion [ω; v] ↦ frame velocity [Rᵀ (v + ω × p); Rᵀ ω]  (rows [linear; angular])
        X = np.zeros((6, 6))
        X[:3, :3] = -R.T @ _skew(p)
        X[:3, 3:] = R.T
        X[3:, :3] = R.T
        K[crow[e] : crow[e + 1]] = sels[e] @ X
    out = (cbody, crow, np.ascontiguousarray(K), frames, sels)
    if len(_CACHE) > 256:
        _CACHE.clear()
    _CACHE[key] = (model._key, out)
    return out


# ---------------------------------------------------------------------------------------------
# EFPA kernel
_Z6 = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)


@njit(cache=True, inline="always")
def _dinv_proj(ib, ws, i, f, a, y):
    """y[:nv] = D_i⁻¹ (S_iᵀ f − U_iᵀ a) for the 6-tuples f (force) and a (motion); y[6:12] scratch."""
    nv = ib[i, L.I_NV]
    for k in range(nv):
        y[6 + k] = ops.dot6(s_column(ib, ws, i, k), f) - ops.dot6(ops.load6(ws, i, L.W_U + 6 * k), a)
    for k in range(nv):
        acc = 0.0
        for l in range(nv):
            acc += ws[i, L.W_DINV + nv * k + l] * y[6 + l]
        y[k] = acc


@njit(cache=True, inline="always")
def _s_comb(ib, ws, i, y):
    """S_i y[:nv] as a 6-tuple."""
    acc = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    for k in range(ib[i, L.I_NV]):
        acc = ops.add6(acc, ops.scale6(s_column(ib, ws, i, k), y[k]))
    return acc


@njit(cache=True, inline="always")
def _u_comb(ib, ws, i, y):
    """U_i y[:nv] as a 6-tuple."""
    acc = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    for k in range(ib[i, L.I_NV]):
        acc = ops.add6(acc, ops.scale6(ops.load6(ws, i, L.W_U + 6 * k), y[k]))
    return acc


@njit(cache=True, inline="always")
def add_row_inertia(ws, b, K, r0, r1, added):
    """Iᴬ_b += added · K[r0:r1]ᵀ K[r0:r1]: the penalty inertia of the damped Delassus matrix (the
    rows K act on body b's motion in its own coordinates)."""
    for r in range(r0, r1):
        for a in range(6):
            x = added * K[r, a]
            for c in range(6):
                ws[b, L.W_IA + 6 * a + c] += x * K[r, c]


@njit(cache=True, inline="always")
def common_depth(path, e1, e2, dmax):
    """The deepest t ≤ dmax with path[e1, t] == path[e2, t] (0: only the world in common). Equality
    is monotone in t (the paths run from the root), so a binary search: O(log depth)."""
    lo = 0
    hi = dmax
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if path[e1, mid] == path[e2, mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


@njit(cache=True)
def efpa_core(ib, ws, q, cbody, crow, K, added, out):
    """EFPA on validated inputs; writes Λ⁻¹ (m × m) into ``out``. Returns 0 or a SINGULAR status.

    ``added`` ≥ 0: before the sweep, ``added · K_eᵀ K_e`` is added to the inertia of each constrained
    link (the penalised system of Pinocchio's damped Delassus; 0 for the plain matrix).
    Workspace per body as the ABA: W_IA (articulated inertia, then Iᵃ), W_U = Iᴬ S, W_DINV = D⁻¹.
    """
    nb = ib[0, L.I0_NBODIES]
    nc = cbody.shape[0]
    # pass 1: placements in the parent, Iᴬ ← I (+ penalty)
    for i in range(1, nb + 1):
        jcalc(ib, ws, i, q)
        ops.store_inertia_matrix(ws, i, L.W_IA, ops.load10(ws, i, L.W_INER))
    if added > 0.0:
        for e in range(nc):
            if cbody[e] > 0:
                add_row_inertia(ws, cbody[e], K, crow[e], crow[e + 1], added)
    # pass 2: articulated inertias (ABA's second loop without bias forces)
    for i in range(nb, 0, -1):
        if not joint_factor(ib, ws, i):  # U = Iᴬ S, D⁻¹ = (Sᵀ U + armature)⁻¹ as the ABA
            return SINGULAR * STATUS_BASE + i
        par = ib[i, L.I_PARENT]
        if par > 0:
            inertia_to_parent(ib, ws, i, par)  # Iᴬ_par += Xupᵀ (Iᴬ − U D⁻¹ Uᵀ) Xup
    # the root → link path of every constraint, indexed by depth
    depth = np.empty(nb + 1, dtype=np.int64)
    depth[0] = 0
    for i in range(1, nb + 1):
        depth[i] = depth[ib[i, L.I_PARENT]] + 1
    dmax = 0
    for e in range(nc):
        dmax = max(dmax, depth[cbody[e]])
    path = np.zeros((nc, dmax + 1), dtype=np.int64)
    for e in range(nc):
        j = cbody[e]
        while j > 0:
            path[e, depth[j]] = j
            j = ib[j, L.I_PARENT]
    m = crow[nc]
    KC = np.empty((m, dmax + 1, 6))  # ᵗK_e rows at the path's link of depth t (link coordinates)
    W = np.empty((m, dmax + 1, 6))  # ⁰Ω_t ᵗK_eᵀ columns
    y = np.empty(12)
    for e in range(nc):
        d = depth[cbody[e]]
        if d == 0:
            continue
        for r in range(crow[e], crow[e + 1]):
            k = (K[r, 0], K[r, 1], K[r, 2], K[r, 3], K[r, 4], K[r, 5])
            for c in range(6):
                KC[r, d, c] = k[c]
            for t in range(d, 1, -1):  # backward: ᵖK = P_i applied to the rows (as forces)
                i = path[e, t]
                _dinv_proj(ib, ws, i, k, _Z6, y)
                k = ops.force_to_parent(
                    ops.load9(ws, i, L.W_R), ops.load3(ws, i, L.W_P), ops.sub6(k, _u_comb(ib, ws, i, y))
                )
                for c in range(6):
                    KC[r, t - 1, c] = k[c]
            w = _Z6
            for t in range(1, d + 1):  # forward: W_i = P_iᵀ W_π(i) + S D⁻¹ Sᵀ ⁱK
                i = path[e, t]
                kt = (KC[r, t, 0], KC[r, t, 1], KC[r, t, 2], KC[r, t, 3], KC[r, t, 4], KC[r, t, 5])
                a = (
                    _Z6
                    if t == 1
                    else ops.motion_to_child(ops.load9(ws, i, L.W_R), ops.load3(ws, i, L.W_P), w)
                )
                _dinv_proj(ib, ws, i, kt, a, y)
                w = ops.add6(a, _s_comb(ib, ws, i, y))
                for c in range(6):
                    W[r, t, c] = w[c]
    # assembly: Λ⁻¹_{e1,e2} = ᶜK_e1 · W_c(e2) at the closest common ancestor c
    for e1 in range(nc):
        d1 = depth[cbody[e1]]
        for e2 in range(e1, nc):
            d2 = depth[cbody[e2]]
            c = common_depth(path, e1, e2, min(d1, d2))
            for r1 in range(crow[e1], crow[e1 + 1]):
                r2a = r1 if e1 == e2 else crow[e2]
                for r2 in range(r2a, crow[e2 + 1]):
                    v = 0.0
                    if c > 0:
                        for s in range(6):
                            v += KC[r1, c, s] * W[r2, c, s]
                    out[r1, r2] = v
                    out[r2, r1] = v
    return 0


@kernel(
    "int64(int64[:, ::1], float64[:, ::1], float64[::1], int64[::1], int64[::1], float64[:, ::1], float64, "
    "float64[:, ::1])"
)
def efpa_kernel(ib, ws, q, cbody, crow, K, added, out):
    st = check_configuration(ib, q)
    if st != 0:
        return st
    return efpa_core(ib, ws, q, cbody, crow, K, added, out)


# ---------------------------------------------------------------------------------------------
# LTL-OSIM kernel
@njit(cache=True)
def constraint_jacobian_core(ib, ws, cbody, crow, K, J):
    """J (m × nv) from the rows K (acting on the body's [ω; v] in body coordinates), after jcalc of
    every body: the rows propagate up the ancestor path like forces, ``J_r,k = (ᵇX_jᵀ K_r) · S_j,k``.
    Entries outside the ancestor dofs of the constrained body are left untouched (zero them first)."""
    for e in range(cbody.shape[0]):
        for r in range(crow[e], crow[e + 1]):
            k = (K[r, 0], K[r, 1], K[r, 2], K[r, 3], K[r, 4], K[r, 5])
            j = cbody[e]
            while j > 0:
                iv = ib[j, L.I_IV]
                for c in range(ib[j, L.I_NV]):
                    J[r, iv + c] = ops.dot6(s_column(ib, ws, j, c), k)
                k = ops.force_to_parent(ops.load9(ws, j, L.W_R), ops.load3(ws, j, L.W_P), k)
                j = ib[j, L.I_PARENT]


@njit(cache=True)
def ltl_delassus_core(ib, ws, q, cbody, crow, K, Mf, lam, J, Y, out):
    """LTL-OSIM (Featherstone 2010) on validated inputs: ``M = Lᵀ L`` (branch-induced sparse factor,
    left in the lower triangle of ``Mf``), ``J`` (m × nv; zero outside each row's ancestor dofs),
    ``Y = J L⁻¹`` (same sparsity) and ``out = Λ⁻¹ = Y Yᵀ``. ``lam`` receives the dof parents.
    Returns 0 or a SINGULAR status.

    Cost O(n d²) for the factor, O(m d²) for the sparse triangular solves (each row of Y lives on the
    d ancestor dofs of its link) and O(m² d) for the products (the sum runs over one row's ancestors).
    """
    nb = ib[0, L.I0_NBODIES]
    crba_core(ib, ws, q, Mf)  # also runs jcalc on every body
    dof_parents(ib, lam)
    bad = ltl_in_place(Mf, lam)
    if bad >= 0:
        for i in range(1, nb + 1):
            if ib[i, L.I_IV] <= bad < ib[i, L.I_IV] + ib[i, L.I_NV]:
                return SINGULAR * STATUS_BASE + i
        return SINGULAR * STATUS_BASE
    J[:, :] = 0.0
    constraint_jacobian_core(ib, ws, cbody, crow, K, J)
    nc = cbody.shape[0]
    last = np.full(crow[nc], -1, dtype=np.int64)  # the last dof of each row's link (−1: the world)
    for e in range(nc):
        b = cbody[e]
        for r in range(crow[e], crow[e + 1]):
            if b > 0:
                last[r] = ib[b, L.I_IV] + ib[b, L.I_NV] - 1
    for r in range(crow[nc]):  # y L = j, k = n−1 … 0 over the ancestors only
        for c in range(Y.shape[1]):
            Y[r, c] = 0.0
        k = last[r]
        while k != -1:
            Y[r, k] = J[r, k]
            k = lam[k]
        k = last[r]
        while k != -1:
            y = Y[r, k] / Mf[k, k]
            Y[r, k] = y
            i = lam[k]
            while i != -1:
                Y[r, i] -= Mf[k, i] * y
                i = lam[i]
            k = lam[k]
    for r1 in range(crow[nc]):
        for r2 in range(r1, crow[nc]):
            v = 0.0
            k = last[r1]
            while k != -1:
                v += Y[r1, k] * Y[r2, k]
                k = lam[k]
            out[r1, r2] = v
            out[r2, r1] = v
    return 0


@kernel(
    "int64(int64[:, ::1], float64[:, ::1], float64[::1], int64[::1], int64[::1], float64[:, ::1], "
    "float64[:, ::1], int64[::1], float64[:, ::1], float64[:, ::1], float64[:, ::1])"
)
def ltl_kernel(ib, ws, q, cbody, crow, K, Mf, lam, J, Y, out):
    st = check_configuration(ib, q)
    if st != 0:
        return st
    return ltl_delassus_core(ib, ws, q, cbody, crow, K, Mf, lam, J, Y, out)


def _run_ltl(model, data, q, prep):
    """(Λ⁻¹, J, Y = J L⁻¹, the factor (lower triangle of an nv × nv array), dof parents)."""
    cbody, crow, K = prep[0], prep[1], prep[2]
    m, n = int(crow[-1]), data.nv
    Mf = np.empty((n, n))
    lam = np.empty(n, dtype=np.int64)
    J = np.empty((m, n))
    Y = np.empty((m, n))
    out = np.empty((m, m))
    try:
        st = ltl_kernel(data.ib, data.ws, q, cbody, crow, K, Mf, lam, J, Y, out)
    except TypeError:
        st = ltl_kernel(data.ib, data.ws, as_float_vector(q, "q"), cbody, crow, K, Mf, lam, J, Y, out)
    if st:
        raise_for_status(model, st, ("q",), (model.nq,))
    return out, J, Y, Mf, lam


# ---------------------------------------------------------------------------------------------
# Python API
#: methods for kinematic trees (the first is the default)
TREE_METHODS = ("pv-osimr", "pv-osim", "efpa", "ltl", "dense")
#: methods for models with loops or couplings (the first is the default)
CLUSTER_METHODS = ("c-pv-osimr", "c-efpa", "dense", "projected", "approximate")
_CLUSTER_ALIASES = {"efpa": "c-efpa", "pv-osimr": "c-pv-osimr"}


def _method(model, data, method) -> str:
    """Validate ``data`` and ``method`` for ``model``; the method's canonical name."""
    if data.source_key is not model._key or (not model.has_constraints and data.model_key is not model._key):
        check_data(model, data, clusters_supported=True)
    if model.has_constraints:
        if method is None:
            return CLUSTER_METHODS[0]
        method = _CLUSTER_ALIASES.get(method, method)
        if method in CLUSTER_METHODS:
            return method
        if method in TREE_METHODS:
            raise UnsupportedFeatureError(
                f"method {method!r} handles kinematic trees only; model {model.name!r} has loops or "
                f"couplings: use one of {CLUSTER_METHODS}"
            )
        raise InputError(f"method must be one of {CLUSTER_METHODS} for a model with loops, got {method!r}")
    if method is None:
        return TREE_METHODS[0]
    if method in TREE_METHODS:
        return method
    if method in CLUSTER_METHODS:
        raise UnsupportedFeatureError(
            f"method {method!r} is for models with loops or couplings; model {model.name!r} is a tree: "
            f"use one of {TREE_METHODS}"
        )
    raise InputError(f"method must be one of {TREE_METHODS}, got {method!r}")


def _run_efpa(model, data, q, prep, added):
    cbody, crow, K = prep[0], prep[1], prep[2]
    m = int(crow[-1])
    out = np.empty((m, m))
    try:
        st = efpa_kernel(data.ib, data.ws, q, cbody, crow, K, added, out)
    except TypeError:
        st = efpa_kernel(data.ib, data.ws, as_float_vector(q, "q"), cbody, crow, K, float(added), out)
    if st:
        raise_for_status(model, st, ("q",), (model.nq,))
    return out


def cluster_call(kern, model, data, q, prep, *extra):
    """Run a cluster Delassus kernel ``kern(<data arrays>, q, cbody, crow, K, *extra)`` whose last
    argument is its output; return that output. Arguments whose types do not match the kernel's
    signature are coerced with clear errors; a non-zero status raises."""
    from .cluster_dynamics import _args
    from .cluster_kinematics import raise_cluster_status

    cbody, crow, K = prep[0], prep[1], prep[2]
    try:
        st = kern(*_args(data), q, cbody, crow, K, *extra)
    except TypeError:
        st = kern(*_args(data), as_float_vector(q, "q"), cbody, crow, K, *extra)
    if st:
        raise_cluster_status(model, st, ("q",))
    return extra[-1]


def _run_c_efpa(model, data, q, prep):
    from .cluster_delassus import c_efpa_kernel

    m = int(prep[1][-1])
    return cluster_call(c_efpa_kernel, model, data, q, prep, np.empty((m, m)))


def constraint_jacobian(model, data, q, constraints) -> np.ndarray:
    """The constraint rows ``J`` (m × nv, a new array): per constraint, ``K_e`` times the LOCAL
    Jacobian of its frame (rows ``[linear; angular]`` of the frame's velocity in its own axes), with
    respect to the model's velocity (the independent velocities of a model with loops:
    ``J = J_span G``)."""
    _method(model, data, None)
    return _jacobian(model, data, q, _prepare(model, constraints))


def _jacobian(model, data, q, prep):
    """J (m × nv) of the prepared constraints: the cluster kernel for a model with loops (J_span G),
    the tree's LOCAL frame Jacobians otherwise."""
    if model.has_constraints:
        from .cluster_delassus import cluster_jacobian_kernel

        J = np.empty((int(prep[1][-1]), model.nv))
        return cluster_call(cluster_jacobian_kernel, model, data, q, prep, J)
    return _constraint_jacobian(model, data, q, prep)


def _constraint_jacobian(model, data, q, prep):
    """J (m × nv): K_e times the LOCAL Jacobian of each constraint frame (trees)."""
    from .kinematics import LOCAL, jacobian_kernel

    cbody, crow, _, frames, sels = prep
    q = as_float_vector(q, "q")
    J = np.zeros((int(crow[-1]), data.nv))
    Je = np.empty((6, data.nv))
    for e in range(len(cbody)):
        if cbody[e] == 0:
            continue
        st = jacobian_kernel(
            data.ib, data.ws, q, data.empty, int(cbody[e]), frames[e], LOCAL, Je, data.no_forces
        )
        if st:
            raise_for_status(model, st, ("q",), (model.nq,))
        J[crow[e] : crow[e + 1]] = sels[e] @ Je
    return J


def _dense(model, data, q, prep):
    """``J H⁻¹ Jᵀ`` by a dense Cholesky factorisation of the mass matrix (trees: CRBA; models with
    loops: the cluster mass matrix and the constraint rows in independent coordinates)."""
    from scipy.linalg import solve_triangular

    from .crba import crba

    M = crba(model, data, q)
    J = _jacobian(model, data, q, prep)
    try:
        Lc = np.linalg.cholesky(M)
    except np.linalg.LinAlgError:
        raise InputError("the mass matrix is not positive definite (a massless subtree?)") from None
    Z = solve_triangular(Lc, J.T, lower=True, check_finite=False)
    G = Z.T @ Z
    return 0.5 * (G + G.T)


def _compute(model, data, q, constraints, method, prep=None):
    method = _method(model, data, method)
    if prep is None:
        prep = _prepare(model, constraints)
    if method == "c-efpa":
        return _run_c_efpa(model, data, q, prep)
    if method == "c-pv-osimr":
        from .cluster_pv_osimr import run_c_pv_osimr

        return run_c_pv_osimr(model, data, q, prep)
    if method == "projected":
        from ..baselines.projection import projected_delassus

        return projected_delassus(model, q, constraints, compiled=True)
    if method == "approximate":
        from ..baselines.approximate import approximate_delassus

        return approximate_delassus(model, q, constraints)
    if method == "efpa":
        return _run_efpa(model, data, q, prep, 0.0)
    if method == "ltl":
        return _run_ltl(model, data, q, prep)[0]
    if method == "pv-osim":
        from .pv_osim import run_pv_osim

        return run_pv_osim(model, data, q, prep)
    if method == "pv-osimr":
        from .pv_osim import run_pv_osimr

        return run_pv_osimr(model, data, q, prep, 0.0)
    return _dense(model, data, q, prep)


def delassus(model, data, q, constraints, method: str | None = None) -> np.ndarray:
    """The Delassus matrix ``Λ⁻¹ = J H(q)⁻¹ Jᵀ`` (m × m, symmetric positive semi-definite; a new
    array) of the link ``constraints`` (a sequence of :class:`Constraint`), blocks in the given order.

    ``J`` stacks, per constraint, ``K_e`` times the LOCAL frame Jacobian (rows ``[linear; angular]``)
    of its constraint frame (:func:`constraint_jacobian`); for a model with loops, ``H`` and ``J`` are
    in the independent coordinates (``H = Gᵀ H_span G``, ``J = J_span G``). Armature is included.

    ``method`` on a kinematic tree (n bodies, m rows, d depth):

    * ``"pv-osimr"`` (default) — PV-OSIMr (Sathya et al. 2023), O(n + m²);
    * ``"pv-osim"`` — PV-OSIM, O(n + m² d);
    * ``"efpa"`` — extended force propagators (Wensing, Featherstone, Orin 2012), O(n + m d + m²);
    * ``"ltl"`` — LTL-OSIM (Featherstone 2010), ``(J L⁻¹)(J L⁻¹)ᵀ`` with the sparse ``M = LᵀL``;
    * ``"dense"`` — CRBA, ``J`` and a dense Cholesky: the reference.

    On a model with loops or couplings (clusters):

    * ``"c-pv-osimr"`` (default) — PV-OSIMr over the tree of clusters;
    * ``"c-efpa"`` — C-EFPA (Chignoli et al. 2024 §VIII); ``"efpa"`` and ``"pv-osimr"`` are
      accepted as aliases of the cluster versions;
    * ``"dense"`` — the cluster mass matrix and ``J`` in independent coordinates, dense Cholesky;
    * ``"projected"`` — the paper's baseline ``J (GᵀH_spanG)⁻¹ Jᵀ`` built on the spanning tree
      (:func:`loopdyn.baselines.projected_delassus`, G from the compiled constraint code);
    * ``"approximate"`` — EFPA on the reflected-inertia model (rotors dropped, their inertia as
      armature; :func:`loopdyn.baselines.approximate_delassus`): fast but not exact.

    Redundant constraint sets give a singular Λ⁻¹, returned as is.
    """
    return _compute(model, data, q, constraints, method)


def damped_delassus_inverse(model, data, q, constraints, mu: float, method: str | None = None) -> np.ndarray:
    """``(Λ⁻¹ + μ I)⁻¹`` for ``μ > 0`` (m × m, symmetric positive definite; a new array).

    * ``"efpa"`` / ``"pv-osimr"`` on a tree (default ``"pv-osimr"``): no m × m factorisation. As
      Pinocchio's ``computeDampedDelassusMatrixInverse``, the algorithm runs on the penalised system
      ``M + Jᵀ J / μ`` (each constrained link gets the extra inertia ``K_eᵀ K_e / μ``), giving
      ``G̃ = J (M + JᵀJ/μ)⁻¹ Jᵀ``, and Woodbury's identity gives ``(Λ⁻¹ + μ I)⁻¹ = (I − G̃/μ)/μ``.
      O(n + m²), but the subtraction loses about ``log10(‖Λ⁻¹‖/μ)`` digits: for μ ≪ ‖Λ⁻¹‖ prefer
      ``"dense"``.
    * any other method (and every method of a model with loops): Cholesky of ``Λ⁻¹ + μ I`` with that
      method's Λ⁻¹ (accurate for any μ).
    """
    method = _method(model, data, method)
    try:
        mu = float(mu)
    except (TypeError, ValueError):
        raise InputError(f"mu must be a positive real number, got {mu!r}") from None
    if not (np.isfinite(mu) and mu > 0.0):
        raise InputError(f"mu must be a positive finite number, got {mu!r}")
    prep = _prepare(model, constraints)
    m = int(prep[1][-1])
    if method in ("efpa", "pv-osimr"):
        if method == "efpa":
            Gt = _run_efpa(model, data, q, prep, 1.0 / mu)
        else:
            from .pv_osim import run_pv_osimr

            Gt = run_pv_osimr(model, data, q, prep, 1.0 / mu)
        out = (np.eye(m) - Gt / mu) / mu
        return 0.5 * (out + out.T)
    from scipy.linalg import cho_factor, cho_solve

    G = _compute(model, data, q, constraints, method, prep)
    G[np.diag_indices(m)] += mu
    out = cho_solve(cho_factor(G, lower=True), np.eye(m))
    return 0.5 * (out + out.T)
