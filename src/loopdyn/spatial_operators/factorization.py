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
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..errors import ShapeError
from .tree_arrays import articulated_sweep, as_configuration, check_q, raise_status, tree_arrays

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
def factor_kernel(par, jtype, iq, nvj, R0, p0, axis, S, inertia, iv, armature, q, nq, X, P, G, Dinv, Dchol):
    st = check_q(jtype, iq, q, nq)
    if st != 0:
        return st
    return articulated_sweep(par, jtype, iq, nvj, R0, p0, axis, S, inertia, iv, armature, q,
                             X, P, G, Dinv, Dchol)


@njit(cache=True)
def sweep_up(par, iv, nvj, S, X, G, x, out, f, inverse):
    """Tip→base: out = [I + HφK] x, or [I − HψK] x when ``inverse`` (x and out may alias)."""
    nb = par.shape[0] - 1
    f[:, :] = 0.0
    sign = -1.0 if inverse else 1.0
    for i in range(nb, 0, -1):
        o, n = iv[i], nvj[i]
        for r in range(n):
            s = 0.0
            for a in range(6):
                s += S[i, a, r] * f[i, a]
            out[o + r] = x[o + r] + sign * s
        src = out if inverse else x  # G z (inverse) or G y (forward)
        pi = par[i]
        if pi > 0:
            for a in range(6):
                g = f[i, a]
                for r in range(n):
                    g += G[i, a, r] * src[o + r]
                f[i, a] = g
            for b in range(6):
                s = 0.0
                for a in range(6):
                    s += X[i, a, b] * f[i, a]
                f[pi, b] += s


@njit(cache=True)
def sweep_down(par, iv, nvj, S, X, G, x, out, beta, inverse):
    """Base→tip: out = [I + HφK]* x, or [I − HψK]* x when ``inverse`` (x and out may alias)."""
    nb = par.shape[0] - 1
    beta[0, :] = 0.0
    alpha = np.empty(6)
    sign = -1.0 if inverse else 1.0
    for i in range(1, nb + 1):
        o, n = iv[i], nvj[i]
        pb = beta[par[i]]
        for a in range(6):
            s = 0.0
            for b in range(6):
                s += X[i, a, b] * pb[b]
            alpha[a] = s
        for r in range(n):
            s = 0.0
            for a in range(6):
                s += G[i, a, r] * alpha[a]
            xr = x[o + r]
            out[o + r] = xr + sign * s
        for a in range(6):
            s = alpha[a]
            for r in range(n):
                s += S[i, a, r] * (out[o + r] if inverse else x[o + r])
            beta[i, a] = s


@njit(cache=True)
def block_mul(iv, nvj, B, x, out, chol):
    """out = blockdiag(B) x, or (L Lᵀ) x with L = B when ``chol`` (x and out may alias)."""
    t = np.empty(6)
    for i in range(1, iv.shape[0]):
        o, n = iv[i], nvj[i]
        if chol:
            for r in range(n):
                s = 0.0
                for k in range(r, n):
                    s += B[i, k, r] * x[o + k]
                t[r] = s
            for r in range(n):
                s = 0.0
                for k in range(r + 1):
                    s += B[i, r, k] * t[k]
                out[o + r] = s
        else:
            for r in range(n):
                s = 0.0
                for k in range(n):
                    s += B[i, r, k] * x[o + k]
                t[r] = s
            for r in range(n):
                out[o + r] = t[r]


@njit(cache=True)
def apply_kernel(op, par, iv, nvj, S, X, G, Dinv, Dchol, B, out):
    """Apply operator ``op`` to every column of B (nv × m), writing ``out``."""
    nb = par.shape[0] - 1
    f = np.empty((nb + 1, 6))
    x = np.empty(B.shape[0])
    y = np.empty(B.shape[0])
    for c in range(B.shape[1]):
        for r in range(B.shape[0]):
            x[r] = B[r, c]
        if op == OP_L:
            sweep_up(par, iv, nvj, S, X, G, x, y, f, False)
        elif op == OP_LT:
            sweep_down(par, iv, nvj, S, X, G, x, y, f, False)
        elif op == OP_LINV:
            sweep_up(par, iv, nvj, S, X, G, x, y, f, True)
        elif op == OP_LINVT:
            sweep_down(par, iv, nvj, S, X, G, x, y, f, True)
        elif op == OP_D:
            block_mul(iv, nvj, Dchol, x, y, True)
        elif op == OP_DINV:
            block_mul(iv, nvj, Dinv, x, y, False)
        elif op == OP_M:
            sweep_down(par, iv, nvj, S, X, G, x, y, f, False)
            block_mul(iv, nvj, Dchol, y, x, True)
            sweep_up(par, iv, nvj, S, X, G, x, y, f, False)
        else:  # OP_MINV
            sweep_up(par, iv, nvj, S, X, G, x, y, f, True)
            block_mul(iv, nvj, Dinv, y, x, False)
            sweep_down(par, iv, nvj, S, X, G, x, y, f, True)
        for r in range(B.shape[0]):
            out[r, c] = y[r]


@njit(cache=True)
def logdet_kernel(iv, nvj, Dchol):
    s = 0.0
    for i in range(1, iv.shape[0]):
        for r in range(nvj[i]):
            s += 2.0 * math.log(Dchol[i, r, r])
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

    __slots__ = ("nv", "_par", "_iv", "_nvj", "_S", "_X", "_G", "_Dinv", "_Dchol")

    def __init__(self, arr, X, G, Dinv, Dchol):
        self.nv = arr.nv
        self._par, self._iv, self._nvj, self._S = arr.parent, arr.iv, arr.nvj, arr.S
        self._X, self._G, self._Dinv, self._Dchol = X, G, Dinv, Dchol

    def _apply(self, op: int, b, name: str) -> np.ndarray:
        try:
            B = np.asarray(b, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise ShapeError(f"{name} must be an array of real numbers: {exc}") from None
        vec = B.ndim == 1
        if B.ndim not in (1, 2) or B.shape[0] != self.nv:
            raise ShapeError(f"{name} must have shape ({self.nv},) or ({self.nv}, m), got {B.shape}")
        if not np.all(np.isfinite(B)):
            from ..errors import NonFiniteError

            raise NonFiniteError(f"{name} contains NaN or inf")
        B2 = np.ascontiguousarray(B.reshape(self.nv, -1))
        out = np.empty_like(B2)
        apply_kernel(op, self._par, self._iv, self._nvj, self._S, self._X, self._G, self._Dinv, self._Dchol,
                     B2, out)
        return out[:, 0] if vec else out

    def solve(self, b) -> np.ndarray:
        """``M⁻¹ b`` (b: (nv,) or (nv, m))."""
        return self._apply(OP_MINV, b, "b")

    def multiply(self, x) -> np.ndarray:
        """``M x`` (x: (nv,) or (nv, m))."""
        return self._apply(OP_M, x, "x")

    def logdet(self) -> float:
        """``log det M`` (M is positive definite, so this is ``slogdet(M)[1]``)."""
        return float(logdet_kernel(self._iv, self._nvj, self._Dchol))

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
        return f"<loopdyn.MassMatrixFactor nv={self.nv}>"


def mass_matrix_factor(model, data, q) -> MassMatrixFactor:
    """Factorise the mass matrix at ``q`` by Jain's innovations factorisation (O(n)).

    ``M(q) = [I + HφK] D [I + HφK]ᵀ`` and ``M⁻¹ = [I − HψK]ᵀ D⁻¹ [I − HψK]``, from one articulated-body
    sweep; the returned :class:`MassMatrixFactor` applies ``M``, ``M⁻¹`` and the factors to vectors
    in O(n) each, and gives ``log det M``. ``M`` includes the joints' armature.

    Parameters
    ----------
    model, data:
        A kinematic-tree :class:`~loopdyn.Model` and a Data created by it. Models with loops raise
        :class:`~loopdyn.errors.UnsupportedFeatureError` (the cluster-tree factorisation is not
        implemented yet).
    q:
        Configuration (nq).

    Raises
    ------
    SingularInertiaError
        If M is singular (a massless leaf body, ...), naming the joint.
    """
    arr = tree_arrays(model, data, "mass_matrix_factor")
    qq = as_configuration(q, arr.nq)
    nb = arr.nb
    X = np.empty((nb + 1, 6, 6))
    P = np.empty((nb + 1, 6, 6))
    G = np.zeros((nb + 1, 6, 6))
    Dinv = np.zeros((nb + 1, 6, 6))
    Dchol = np.zeros((nb + 1, 6, 6))
    st = factor_kernel(arr.parent, arr.jtype, arr.iq, arr.nvj, arr.R0, arr.p0, arr.axis, arr.S, arr.inertia,
                       arr.iv, arr.armature, qq, arr.nq, X, P, G, Dinv, Dchol)
    if st:
        raise_status(model, st, "mass_matrix_factor")
    return MassMatrixFactor(arr, X, G, Dinv, Dchol)
