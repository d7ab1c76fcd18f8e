"""The innovations factorisation of the mass matrix and of its inverse, as O(n) operators.

Jain's spatial operator algebra (spec §1.5.3, operator form; Jain's book ch. 7): with the gains of
the articulated-body sweep, ``K = E_φ G`` (``K(℘(k),k) = φ(℘(k),k) G(k)``) and the articulated
transforms ``ψ(℘(k),k) = φ(℘(k),k) τ̄(k)``,

    𝓜      = [I + HφK] D [I + HφK]*                    (innovations factorisation)
    [I + HφK]⁻¹ = I − HψK
    𝓜⁻¹    = [I − HψK]* D⁻¹ [I − HψK]

with D = blockdiag(D(k)). ``I + HφK`` is block-triangular, so each factor applies to a vector in
one sweep over the bodies. The sweeps, in body-frame matrices (φ*(℘(k),k) = X_k):

* ``w = [I + HφK] y`` (tip→base): ``wₖ = yₖ + Hₖ fₖ``, ``f(℘(k)) += X_kᵀ (fₖ + Gₖ yₖ)``;
* ``u = [I + HφK]* x`` (base→tip): ``αₖ = X_k β(℘(k))``, ``uₖ = xₖ + Gₖᵀ αₖ``, ``βₖ = αₖ + H*ₖ xₖ``;
* ``z = [I − HψK] y`` (tip→base): ``zₖ = yₖ − Hₖ fₖ``, ``f(℘(k)) += X_kᵀ (fₖ + Gₖ zₖ)``;
* ``u = [I − HψK]* y`` (base→tip): ``αₖ = X_k β(℘(k))``, ``uₖ = yₖ − Gₖᵀ αₖ``, ``βₖ = αₖ + H*ₖ uₖ``.

``solve`` is therefore the articulated-body algorithm at zero velocity and gravity.

On a model with loops (the cluster tree, spec §2.7) the factors are obtained from the cluster mass
matrix by block elimination along the cluster tree (:class:`ClusterMassMatrixFactor`).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..dynamics import crba
from ..errors import NonFiniteError, ShapeError, UnsupportedFeatureError
from .tree_arrays import (
    IV,
    M_S,
    NV,
    PARENT,
    PIVOT_TOL,
    W_DCHOL,
    W_DINV,
    W_G,
    W_X,
    articulated_sweep,
    as_configuration,
    check_q,
    new_work,
    raise_status,
    tree_arrays,
)

# operator codes of apply_kernel
OP_L = 0  # I + HφK
OP_LT = 1  # [I + HφK]*
OP_LINV = 2  # I − HψK
OP_LINVT = 3  # [I − HψK]*
OP_D = 4
OP_DINV = 5
OP_M = 6  # L D Lᵀ
OP_MINV = 7  # L⁻ᵀ D⁻¹ L⁻¹


@njit(cache=True)
def factor_kernel(ib, geo, mats, armature, q, W):
    st = check_q(ib, q)
    if st != 0:
        return st
    return articulated_sweep(ib, geo, mats, armature, q, W)


@njit(cache=True)
def sweep_up(ib, mats, W, x, out, f, inverse):
    """Tip→base: out = [I + HφK] x, or [I − HψK] x when ``inverse`` (x and out may alias)."""
    nb = ib.shape[0] - 1
    f[:, :] = 0.0
    sign = -1.0 if inverse else 1.0
    for i in range(nb, 0, -1):
        o, n = ib[i, IV], ib[i, NV]
        S = mats[i, M_S]
        for r in range(n):
            s = 0.0
            for a in range(6):
                s += S[a, r] * f[i, a]
            out[o + r] = x[o + r] + sign * s
        src = out if inverse else x  # G z (inverse) or G y (forward)
        pi = ib[i, PARENT]
        if pi > 0:
            G = W[i, W_G]
            X = W[i, W_X]
            for a in range(6):
                g = f[i, a]
                for r in range(n):
                    g += G[a, r] * src[o + r]
                f[i, a] = g
            for b in range(6):
                s = 0.0
                for a in range(6):
                    s += X[a, b] * f[i, a]
                f[pi, b] += s


@njit(cache=True)
def sweep_down(ib, mats, W, x, out, beta, alpha, inverse):
    """Base→tip: out = [I + HφK]* x, or [I − HψK]* x when ``inverse`` (x and out may alias)."""
    nb = ib.shape[0] - 1
    beta[0, :] = 0.0
    sign = -1.0 if inverse else 1.0
    for i in range(1, nb + 1):
        o, n = ib[i, IV], ib[i, NV]
        pb = beta[ib[i, PARENT]]
        X = W[i, W_X]
        G = W[i, W_G]
        S = mats[i, M_S]
        for a in range(6):
            s = 0.0
            for b in range(6):
                s += X[a, b] * pb[b]
            alpha[a] = s
        for r in range(n):
            s = 0.0
            for a in range(6):
                s += G[a, r] * alpha[a]
            out[o + r] = x[o + r] + sign * s
        for a in range(6):
            s = alpha[a]
            for r in range(n):
                s += S[a, r] * (out[o + r] if inverse else x[o + r])
            beta[i, a] = s


@njit(cache=True)
def block_mul(ib, W, slot, x, out, t, chol):
    """out = blockdiag(W[:, slot]) x, or (L Lᵀ) x with L = W[:, slot] when ``chol`` (x and out may
    alias)."""
    for i in range(1, ib.shape[0]):
        o, n = ib[i, IV], ib[i, NV]
        B = W[i, slot]
        if chol:
            for r in range(n):
                s = 0.0
                for k in range(r, n):
                    s += B[k, r] * x[o + k]
                t[r] = s
            for r in range(n):
                s = 0.0
                for k in range(r + 1):
                    s += B[r, k] * t[k]
                out[o + r] = s
        else:
            for r in range(n):
                s = 0.0
                for k in range(n):
                    s += B[r, k] * x[o + k]
                t[r] = s
            for r in range(n):
                out[o + r] = t[r]


@njit(cache=True)
def apply_kernel(op, ib, mats, W, B, out):
    """Apply operator ``op`` to every column of B (nv × m), writing ``out``. Returns 0, or 1 + the flat
    index of the first non-finite entry of B."""
    for r in range(B.shape[0]):
        for c in range(B.shape[1]):
            if not np.isfinite(B[r, c]):
                return 1 + r * B.shape[1] + c
    nb = ib.shape[0] - 1
    f = np.empty((nb + 1, 6))
    alpha = np.empty(6)
    t = np.empty(6)
    x = np.empty(B.shape[0])
    y = np.empty(B.shape[0])
    for c in range(B.shape[1]):
        for r in range(B.shape[0]):
            x[r] = B[r, c]
        if op == OP_L:
            sweep_up(ib, mats, W, x, y, f, False)
        elif op == OP_LT:
            sweep_down(ib, mats, W, x, y, f, alpha, False)
        elif op == OP_LINV:
            sweep_up(ib, mats, W, x, y, f, True)
        elif op == OP_LINVT:
            sweep_down(ib, mats, W, x, y, f, alpha, True)
        elif op == OP_D:
            block_mul(ib, W, W_DCHOL, x, y, t, True)
        elif op == OP_DINV:
            block_mul(ib, W, W_DINV, x, y, t, False)
        elif op == OP_M:
            sweep_down(ib, mats, W, x, y, f, alpha, False)
            block_mul(ib, W, W_DCHOL, y, x, t, True)
            sweep_up(ib, mats, W, x, y, f, False)
        else:  # OP_MINV
            sweep_up(ib, mats, W, x, y, f, True)
            block_mul(ib, W, W_DINV, y, x, t, False)
            sweep_down(ib, mats, W, x, y, f, alpha, True)
        for r in range(B.shape[0]):
            out[r, c] = y[r]
    return 0


@njit(cache=True)
def logdet_kernel(ib, W):
    s = 0.0
    for i in range(1, ib.shape[0]):
        for r in range(ib[i, NV]):
            s += 2.0 * math.log(W[i, W_DCHOL, r, r])
    return s


# ------------------------------------------------------------------------------------------------
# the cluster tree (models with loops): the same factors by block elimination along the cluster tree


@njit(cache=True)
def cluster_udu_kernel(M, cpar, civ, cnv, L, Dchol, Dinv):
    """Factor the cluster mass matrix ``M = L D Lᵀ`` with L unit block-triangular, block (a, c) non-zero
    only for a = c or a an ancestor cluster of c, by eliminating the clusters from the tips (M is
    overwritten on ancestor blocks). By uniqueness of such a factorisation these are the innovations
    factors ``[I + H_Ra φ_a 𝒦]`` and ``𝒟`` of spec §2.7. Returns 0, or 1 + the cluster whose D block
    is not positive definite."""
    nc = cpar.shape[0]
    y = np.empty(M.shape[0])
    for c in range(nc - 1, -1, -1):
        o, n = civ[c], cnv[c]
        dmax = 0.0
        for r in range(n):
            dmax = max(dmax, abs(M[o + r, o + r]))
        for j in range(n):  # Cholesky of the D block
            s = M[o + j, o + j]
            for k in range(j):
                s -= Dchol[o + j, o + k] ** 2
            if not (s > PIVOT_TOL * dmax) or s <= 0.0:
                return 1 + c
            Dchol[o + j, o + j] = math.sqrt(s)
            for r in range(j + 1, n):
                t = M[o + r, o + j]
                for k in range(j):
                    t -= Dchol[o + r, o + k] * Dchol[o + j, o + k]
                Dchol[o + r, o + j] = t / Dchol[o + j, o + j]
        for j in range(n):  # D⁻¹ block, column by column
            for r in range(n):
                t = 1.0 if r == j else 0.0
                for k in range(r):
                    t -= Dchol[o + r, o + k] * y[k]
                y[r] = t / Dchol[o + r, o + r]
            for r in range(n - 1, -1, -1):
                t = y[r]
                for k in range(r + 1, n):
                    t -= Dchol[o + k, o + r] * y[k]
                y[r] = t / Dchol[o + r, o + r]
            for r in range(n):
                Dinv[o + r, o + j] = y[r]
        for r in range(n):
            L[o + r, o + r] = 1.0
        a = cpar[c]
        while a >= 0:  # L(a, c) = M(a, c) D⁻¹
            oa = civ[a]
            for r in range(cnv[a]):
                for j in range(n):
                    t = 0.0
                    for k in range(n):
                        t += M[oa + r, o + k] * Dinv[o + k, o + j]
                    L[oa + r, o + j] = t
            a = cpar[a]
        a = cpar[c]
        while a >= 0:  # M(a, b) −= L(a, c) M(c, b) for ancestors a, b of c
            oa = civ[a]
            b = cpar[c]
            while b >= 0:
                ob = civ[b]
                for r in range(cnv[a]):
                    for j in range(cnv[b]):
                        t = 0.0
                        for k in range(n):
                            t += L[oa + r, o + k] * M[o + k, ob + j]
                        M[oa + r, ob + j] -= t
                b = cpar[b]
            a = cpar[a]
    return 0


@njit(cache=True)
def cluster_block_add(L, rows, cols, nr, nc_, x, out, transpose, sign):
    """out[rows block] += sign · L(rows, cols) x[cols block] (or Lᵀ with the roles swapped)."""
    if transpose:
        for j in range(nc_):
            t = 0.0
            for r in range(nr):
                t += L[rows + r, cols + j] * x[rows + r]
            out[cols + j] += sign * t
    else:
        for r in range(nr):
            t = 0.0
            for j in range(nc_):
                t += L[rows + r, cols + j] * x[cols + j]
            out[rows + r] += sign * t


@njit(cache=True)
def cluster_apply_one(op, cpar, civ, cnv, L, Dchol, Dinv, x, y, t):
    """y = op(x) for one vector; O(Σ_c depth(c) · n_c n_a) for the triangular factors."""
    nc = cpar.shape[0]
    for r in range(x.shape[0]):
        y[r] = x[r]
    if op == OP_L:  # w_a = y_a + Σ_c L(a, c) y_c
        for c in range(nc):
            a = cpar[c]
            while a >= 0:
                cluster_block_add(L, civ[a], civ[c], cnv[a], cnv[c], x, y, False, 1.0)
                a = cpar[a]
    elif op == OP_LT:
        for c in range(nc):
            a = cpar[c]
            while a >= 0:
                cluster_block_add(L, civ[a], civ[c], cnv[a], cnv[c], x, y, True, 1.0)
                a = cpar[a]
    elif op == OP_LINV:  # back substitution from the tips
        for c in range(nc - 1, -1, -1):
            a = cpar[c]
            while a >= 0:
                cluster_block_add(L, civ[a], civ[c], cnv[a], cnv[c], y, y, False, -1.0)
                a = cpar[a]
    elif op == OP_LINVT:  # forward substitution from the root
        for c in range(nc):
            a = cpar[c]
            while a >= 0:
                cluster_block_add(L, civ[a], civ[c], cnv[a], cnv[c], y, y, True, -1.0)
                a = cpar[a]
    else:  # OP_D (via the Cholesky factor) or OP_DINV
        for c in range(nc):
            o, n = civ[c], cnv[c]
            if op == OP_D:
                for r in range(n):
                    s = 0.0
                    for k in range(r, n):
                        s += Dchol[o + k, o + r] * x[o + k]
                    t[r] = s
                for r in range(n):
                    s = 0.0
                    for k in range(r + 1):
                        s += Dchol[o + r, o + k] * t[k]
                    y[o + r] = s
            else:
                for r in range(n):
                    s = 0.0
                    for k in range(n):
                        s += Dinv[o + r, o + k] * x[o + k]
                    y[o + r] = s


@njit(cache=True)
def cluster_apply_kernel(op, cpar, civ, cnv, L, Dchol, Dinv, B, out):
    """Apply operator ``op`` to every column of B; 0 or 1 + the flat index of a non-finite entry."""
    for r in range(B.shape[0]):
        for c in range(B.shape[1]):
            if not np.isfinite(B[r, c]):
                return 1 + r * B.shape[1] + c
    n = B.shape[0]
    x = np.empty(n)
    y = np.empty(n)
    z = np.empty(n)
    t = np.empty(n)
    for c in range(B.shape[1]):
        for r in range(n):
            x[r] = B[r, c]
        if op == OP_M:
            cluster_apply_one(OP_LT, cpar, civ, cnv, L, Dchol, Dinv, x, y, t)
            cluster_apply_one(OP_D, cpar, civ, cnv, L, Dchol, Dinv, y, z, t)
            cluster_apply_one(OP_L, cpar, civ, cnv, L, Dchol, Dinv, z, y, t)
        elif op == OP_MINV:
            cluster_apply_one(OP_LINV, cpar, civ, cnv, L, Dchol, Dinv, x, y, t)
            cluster_apply_one(OP_DINV, cpar, civ, cnv, L, Dchol, Dinv, y, z, t)
            cluster_apply_one(OP_LINVT, cpar, civ, cnv, L, Dchol, Dinv, z, y, t)
        else:
            cluster_apply_one(op, cpar, civ, cnv, L, Dchol, Dinv, x, y, t)
        for r in range(n):
            out[r, c] = y[r]
    return 0


class MassMatrixFactor:
    """The innovations factorisation ``M = [I + HφK] D [I + HφK]ᵀ`` of a tree's mass matrix at one
    configuration (created by :func:`mass_matrix_factor`).

    Every method applies its operator in O(n) per right-hand side (one Numba kernel call), to a
    vector (nv,) or to the columns of a matrix (nv, m):

    * :meth:`solve` — ``M⁻¹ b = [I − HψK]ᵀ D⁻¹ [I − HψK] b`` (forward dynamics at zero velocity
      and gravity, as :func:`loopdyn.aba`);
    * :meth:`multiply` — ``M x``;
    * :meth:`logdet` — ``log det M = Σₖ log det D(k)``;
    * :meth:`apply_factor`, :meth:`apply_factor_inverse`, :meth:`apply_D`, :meth:`apply_D_inverse` —
      the individual factors (``transpose=True`` for the transposes).

    Dense accessors (for tests and small models): :meth:`matrix`, :meth:`inverse`,
    :meth:`factor_matrix` (``I + HφK``), :meth:`factor_inverse_matrix` (``I − HψK``),
    :meth:`D_matrix`.

    The factor keeps its own arrays: it stays valid after the model's Data is reused, but not after
    the model is modified.
    """

    __slots__ = ("nv", "_ib", "_mats", "_W")

    def __init__(self, arr, W):
        self.nv = arr.nv
        self._ib, self._mats, self._W = arr.ib, arr.mats, W

    def _kernel(self, op: int, B, out) -> int:
        return apply_kernel(op, self._ib, self._mats, self._W, B, out)

    def _apply(self, op: int, b, name: str) -> np.ndarray:
        if type(b) is np.ndarray and b.dtype == np.float64 and b.shape == (self.nv,) and b.flags.c_contiguous:
            out = np.empty((self.nv, 1))
            st = self._kernel(op, b.reshape(self.nv, 1), out)
            if st:
                raise NonFiniteError(f"{name} contains NaN or inf (first at index {st - 1})")
            return out[:, 0]
        try:
            if np.iscomplexobj(b):
                raise TypeError("complex values")
            B = np.asarray(b, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ShapeError(f"{name} must be an array of real numbers: {exc}") from None
        vec = B.ndim == 1
        if B.ndim not in (1, 2) or B.shape[0] != self.nv:
            raise ShapeError(f"{name} must have shape ({self.nv},) or ({self.nv}, m), got {B.shape}")
        B2 = B.reshape(self.nv, 1) if vec else B
        if not B2.flags.c_contiguous:
            B2 = np.ascontiguousarray(B2)
        out = np.empty(B2.shape)
        st = self._kernel(op, B2, out)
        if st:
            raise NonFiniteError(f"{name} contains NaN or inf (first at flat index {st - 1})")
        return out[:, 0] if vec else out

    def solve(self, b) -> np.ndarray:
        """``M⁻¹ b`` (b: (nv,) or (nv, m))."""
        return self._apply(OP_MINV, b, "b")

    def multiply(self, x) -> np.ndarray:
        """``M x`` (x: (nv,) or (nv, m))."""
        return self._apply(OP_M, x, "x")

    def logdet(self) -> float:
        """``log det M`` (M is positive definite, so this is ``slogdet(M)[1]``)."""
        return float(logdet_kernel(self._ib, self._W))

    def apply_factor(self, x, transpose: bool = False) -> np.ndarray:
        """``[I + HφK] x`` (or its transpose)."""
        return self._apply(OP_LT if transpose else OP_L, x, "x")

    def apply_factor_inverse(self, x, transpose: bool = False) -> np.ndarray:
        """``[I − HψK] x = [I + HφK]⁻¹ x`` (or its transpose)."""
        return self._apply(OP_LINVT if transpose else OP_LINV, x, "x")

    def apply_D(self, x) -> np.ndarray:
        """``D x`` with D = blockdiag(D(k)), D(k) = H(k) P(k) H*(k) (+ armature)."""
        return self._apply(OP_D, x, "x")

    def apply_D_inverse(self, x) -> np.ndarray:
        """``D⁻¹ x``."""
        return self._apply(OP_DINV, x, "x")

    def matrix(self) -> np.ndarray:
        """Dense ``M`` rebuilt from the factors (O(n²))."""
        return self.multiply(np.eye(self.nv))

    def inverse(self) -> np.ndarray:
        """Dense ``M⁻¹`` from the inverse factorisation (O(n²))."""
        return self.solve(np.eye(self.nv))

    def factor_matrix(self) -> np.ndarray:
        """Dense ``I + HφK`` (unit block-triangular)."""
        return self.apply_factor(np.eye(self.nv))

    def factor_inverse_matrix(self) -> np.ndarray:
        """Dense ``I − HψK``."""
        return self.apply_factor_inverse(np.eye(self.nv))

    def D_matrix(self) -> np.ndarray:
        """Dense block-diagonal ``D``."""
        return self.apply_D(np.eye(self.nv))

    def __repr__(self) -> str:
        return f"<loopdyn.{type(self).__name__} nv={self.nv}>"


class ClusterMassMatrixFactor(MassMatrixFactor):
    """The innovations factorisation on the cluster tree of a model with loops (spec §2.7):
    ``M_r = [I + H_Ra φ_a 𝒦] 𝒟 [I + H_Ra φ_a 𝒦]ᵀ`` in the independent coordinates, one D block per
    cluster, the same interface as :class:`MassMatrixFactor`.

    The factors are computed from the cluster mass matrix (``loopdyn.crba``) by block elimination
    along the cluster tree from the tips (branch-induced sparsity: no fill-in outside ancestor
    blocks); a unit block-triangular factorisation with this sparsity is unique, so these are Jain's
    factors. Cost: the cluster CRBA, then O(Σ_c depth(c)²) block products to factor and
    O(Σ_c depth(c)) block products per application (depth(c) = number of ancestor clusters) — not
    the O(n) spatial sweeps of the tree version, which on the cluster tree would need the cluster
    kernels' articulated quantities. Memory: three dense nv × nv arrays.
    """

    __slots__ = ("_cpar", "_civ", "_cnv", "_L", "_Dchol", "_Dinv")

    def __init__(self, nv, cpar, civ, cnv, L, Dchol, Dinv):
        self.nv = nv
        self._cpar, self._civ, self._cnv = cpar, civ, cnv
        self._L, self._Dchol, self._Dinv = L, Dchol, Dinv

    def _kernel(self, op: int, B, out) -> int:
        return cluster_apply_kernel(op, self._cpar, self._civ, self._cnv, self._L, self._Dchol, self._Dinv,
                                    B, out)

    def logdet(self) -> float:
        """``log det M`` (independent coordinates)."""
        d = np.diag(self._Dchol)
        return float(2.0 * np.sum(np.log(d))) if d.size else 0.0


def _cluster_factor(model, data, q) -> ClusterMassMatrixFactor:
    ct = model.clusters()
    cl = ct.clusters
    cpar = np.array([c.parent for c in cl], dtype=np.int64)
    civ = np.array([c.iv for c in cl], dtype=np.int64)
    cnv = np.array([c.nv for c in cl], dtype=np.int64)
    order = np.argsort(civ, kind="stable")
    if np.any(cpar >= np.arange(len(cl))) or np.any(order != np.arange(len(cl))) or \
            int(cnv.sum()) != model.nv or np.any(civ[1:] != np.cumsum(cnv)[:-1]):
        raise UnsupportedFeatureError(  # pragma: no cover - the cluster tree is built in regular order
            f"mass_matrix_factor: the cluster tree of {model.name!r} is not in regular order"
        )
    M = np.array(crba(model, data, q), dtype=np.float64, order="C")  # validates q and data
    nv = model.nv
    L, Dchol, Dinv = np.zeros((nv, nv)), np.zeros((nv, nv)), np.zeros((nv, nv))
    st = cluster_udu_kernel(M, cpar, civ, cnv, L, Dchol, Dinv)
    if st:
        from ..errors import SingularInertiaError

        c = cl[st - 1]
        names = [model.joint_names[b] for b in c.bodies]
        raise SingularInertiaError(
            f"mass_matrix_factor: the mass matrix block of the cluster of joints {names} is not positive "
            "definite at this configuration (massless bodies without mass below them, or a singular "
            "mechanism)"
        )
    return ClusterMassMatrixFactor(nv, cpar, civ, cnv, L, Dchol, Dinv)


def mass_matrix_factor(model, data, q) -> MassMatrixFactor:
    """Factorise the mass matrix at ``q`` by Jain's innovations factorisation (O(n)).

    ``M(q) = [I + HφK] D [I + HφK]ᵀ`` and ``M⁻¹ = [I − HψK]ᵀ D⁻¹ [I − HψK]``, from one articulated-body
    sweep; the returned :class:`MassMatrixFactor` applies ``M``, ``M⁻¹`` and the factors to vectors
    in O(n) each, and gives ``log det M``. ``M`` includes the joints' armature.

    Parameters
    ----------
    model, data:
        A :class:`~loopdyn.Model` and a Data created by it. On a model with loops the factorisation
        is that of the cluster tree in the independent coordinates (one D block per cluster; see
        :class:`ClusterMassMatrixFactor` for how it is computed and what it costs).
    q:
        Configuration (nq).

    Raises
    ------
    SingularInertiaError
        If M is singular (a massless leaf body, ...), naming the joint.
    """
    if model.has_constraints:
        return _cluster_factor(model, data, q)
    arr = tree_arrays(model, data, "mass_matrix_factor")
    qq = as_configuration(q, arr.nq)
    W = new_work(arr.nb)
    st = factor_kernel(arr.ib, arr.geo, arr.mats, arr.armature, qq, W)
    if st:
        raise_status(model, st, "mass_matrix_factor")
    return MassMatrixFactor(arr, W)
