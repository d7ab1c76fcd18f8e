"""The innovations factors of a model with loops by dense block elimination of the cluster mass
matrix along the cluster tree (the former cluster-tree ``mass_matrix_factor``).

Kept as an independent reference for the O(n) sweeps of
:class:`~loopdyn.spatial_operators.factorization.ClusterMassMatrixFactor` (the factors come from
``loopdyn.crba``, not from C-ABA) and as the baseline of ``benchmarks/spatial_operators.py``: a unit
block-triangular factorisation ``M = L D Lᵀ`` whose L is non-zero only on (ancestor cluster, cluster)
blocks is unique, so both give the same factors.
"""

from __future__ import annotations

import math

import numpy as np

from ..dynamics import crba
from ..errors import UnsupportedFeatureError
from ..jit import njit
from .factorization import MassMatrixFactor
from .tree_arrays import OP_D, OP_DINV, OP_L, OP_LINV, OP_LINVT, OP_LT, OP_M, OP_MINV, PIVOT_TOL


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


class BlockEliminationFactor(MassMatrixFactor):
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

    This was ``mass_matrix_factor``'s cluster-tree version before the O(n) sweeps of
    :class:`~loopdyn.spatial_operators.factorization.ClusterMassMatrixFactor`; it is kept as an
    independent reference (tests) and as the benchmark's baseline.
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


def block_elimination_factor(model, data, q) -> BlockEliminationFactor:
    """The innovations factors of the cluster mass matrix by dense block elimination (O(n·depth)
    memory and work): the reference for :func:`loopdyn.mass_matrix_factor` on models with loops."""
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
    return BlockEliminationFactor(nv, cpar, civ, cnv, L, Dchol, Dinv)


