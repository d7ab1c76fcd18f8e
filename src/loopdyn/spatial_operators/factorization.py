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

On a model with loops (the cluster tree, spec §2.7) the same sweeps run over the clusters with
cluster blocks (:class:`ClusterMassMatrixFactor`, kernels in :mod:`.cluster_sweeps`).
"""

from __future__ import annotations

import math
import weakref

import numpy as np

from ..errors import NonFiniteError, ShapeError
from ..jit import njit
from ..model import layout as L
from .cluster_sweeps import c_apply_kernel, c_factor_kernel, c_logdet
from .tree_arrays import (
    IV,
    M_S,
    NV,
    OP_D,
    OP_DINV,
    OP_L,
    OP_LINV,
    OP_LINVT,
    OP_LT,
    OP_M,
    OP_MINV,
    PARENT,
    W_DCHOL,
    W_DINV,
    W_G,
    W_X,
    articulated_sweep,
    as_configuration,
    check_cluster_data,
    check_q,
    new_work,
    raise_cluster_status,
    raise_status,
    tree_arrays,
)


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
    ``𝓜 = [I + H_Ra φ_a 𝒦] 𝒟 [I + H_Ra φ_a 𝒦]ᵀ`` in the independent coordinates, one 𝒟 block per
    cluster, the same interface as :class:`MassMatrixFactor`.

    Made by one C-ABA backward sweep at zero velocity (the cluster ATBI steps A1–A7); every operator
    is then applied in one or three O(n) sweeps over the cluster tree with cluster blocks
    (:mod:`.cluster_sweeps`): O(Σ_𝒢 (carriers + ports) m_𝒢) per right-hand side, O(n) memory (the
    clusters' 𝖲, port gains V_p = Σ ᵃX_Λᵀ G_a, 𝒟⁻¹ and Cholesky factors of 𝒟, and each body's
    placement in its output body).
    """

    __slots__ = ("_index", "_fc", "_pl")

    def __init__(self, nv, index, fc, pl):
        self.nv = nv
        self._index, self._fc, self._pl = index, fc, pl

    def _kernel(self, op: int, B, out) -> int:
        ix = self._index
        return c_apply_kernel(op, ix.cl, ix.carriers, ix.ports, ix.bout, self._fc, self._pl, B, out)

    def logdet(self) -> float:
        """``log det M`` (independent coordinates)."""
        return float(c_logdet(self._index.cl, self._fc))


class ClusterIndex:
    """The cluster tree of a model as the factor's sweeps read it (built once per compiled model).

    * ``cl`` (ncl + 1, 10) int, per cluster: first body (in ``bodies``), number of bodies, m, offset
      in v, offset of the cluster's numbers in a factor's array, parent cluster, first carrier and
      number of carriers, first port and number of ports (columns ``cluster_sweeps.X_*``);
    * ``bodies``: the clusters' bodies; ``carriers`` (n, 2): the bodies other clusters are attached
      to (body, index in its cluster); ``ports``: each cluster's distinct output bodies (none for a
      cluster on the world); ``bport``: each body's port index in its cluster; ``bout``: Λ(i).
    """

    __slots__ = ("cl", "bodies", "carriers", "ports", "bport", "bout", "nf", "nbodies", "compiled",
                 "__weakref__")

    def __init__(self, model, data, compiled):
        ib, ic, cb = data.ib, data.ic, data.cb
        ncl = int(ic[0, L.C0_NCL])
        self.bout = np.ascontiguousarray(ib[:, L.I_OUT], dtype=np.int64)
        carrier = np.zeros(len(self.bout), bool)
        carrier[self.bout[1:]] = True
        carrier[0] = False
        self.cl = np.zeros((ncl + 1, 10), np.int64)
        self.bport = np.full(len(self.bout), -1, np.int64)
        bodies, carriers, ports, nf = [], [], [], 0
        for k in range(1, ncl + 1):
            first, nb, m, par = (int(ic[k, c]) for c in (L.C_FIRST, L.C_NB, L.C_M, L.C_PARENT))
            members = [int(b) for b in cb[first : first + nb]]
            mine = [(b, a) for a, b in enumerate(members) if carrier[b]]
            outs = [] if par == 0 else list(dict.fromkeys(int(self.bout[b]) for b in members))
            for b in members:
                if par != 0:
                    self.bport[b] = outs.index(int(self.bout[b]))
            self.cl[k] = (len(bodies), nb, m, ic[k, L.C_IV], nf, par, len(carriers), len(mine), len(ports),
                          len(outs))
            bodies += members
            carriers += mine
            ports += outs
            nf += 6 * (nb + len(outs)) * m + 2 * m * m
        self.bodies = np.array(bodies, np.int64)
        self.carriers = np.array(carriers, np.int64).reshape(-1, 2)
        self.ports = np.array(ports, np.int64)
        self.nf = nf
        self.nbodies = model.nbodies
        self.compiled = compiled


_INDEX: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def cluster_index(model, data) -> ClusterIndex:
    """The cached :class:`ClusterIndex` of ``model`` (``data`` already checked)."""
    compiled = model.compiled()
    ix = _INDEX.get(model)
    if ix is None or ix.compiled is not compiled:
        ix = ClusterIndex(model, data, compiled)
        _INDEX[model] = ix
    return ix


def _cluster_factor(model, data, q) -> ClusterMassMatrixFactor:
    check_cluster_data(model, data)
    qq = as_configuration(q, model.nq)
    ix = cluster_index(model, data)
    fc = np.empty(ix.nf)
    pl = np.zeros((ix.nbodies + 1, 12))
    st = c_factor_kernel(*data.cluster_arrays, qq, ix.cl, ix.bport, fc, pl)
    if st:
        raise_cluster_status(model, st, "mass_matrix_factor")
    return ClusterMassMatrixFactor(model.nv, ix, fc, pl)


def mass_matrix_factor(model, data, q) -> MassMatrixFactor:
    """Factorise the mass matrix at ``q`` by Jain's innovations factorisation (O(n)).

    ``M(q) = [I + HφK] D [I + HφK]ᵀ`` and ``M⁻¹ = [I − HψK]ᵀ D⁻¹ [I − HψK]``, from one articulated-body
    sweep; the returned :class:`MassMatrixFactor` applies ``M``, ``M⁻¹`` and the factors to vectors
    in O(n) each, and gives ``log det M``. ``M`` includes the joints' armature.

    Parameters
    ----------
    model, data:
        A :class:`~loopdyn.Model` and a Data created by it. On a model with loops the factorisation
        is that of the cluster tree in the independent coordinates (one D block per cluster, the
        same O(n) sweeps with cluster blocks: :class:`ClusterMassMatrixFactor`).
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
