"""Operational-space compliance of every body in one O(n) sweep (Jain, partitioning paper §4, Eq. 22).

``Υ(k) = 𝒥ₖ 𝓜⁻¹ 𝒥ₖ*`` is the 6×6 compliance of body k: it maps a spatial force applied at body k's
frame origin to the resulting spatial acceleration of body k (both in body k's frame). Eq. 22 runs
base→tip after the ATBI sweep:

    Υ⁺(k) = φ*(℘(k),k) Υ(℘(k)) φ(℘(k),k)
    Υ(k)  = τ̄*(k) Υ⁺(k) τ̄(k) + H*(k) D⁻¹(k) H(k),      τ̄(k) = I − G(k) H(k)

(the τ̄, not τ, of the printed paper: spec §1.7 [C]). The off-diagonal blocks of the full
operational-space compliance Ω = 𝒥 𝓜⁻¹ 𝒥* (Eq. 21) are ``Υ(i) ψ(i,j)`` for i inboard of j, with the
articulated transform ``ψ(℘(k),k) = φ(℘(k),k) τ̄(k)``; for bodies on different branches with lowest
common ancestor a the block is ``ψ*(a,i) Υ(a) ψ(a,j)`` (the same sum of Ω = ψ* H* D⁻¹ H ψ).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .tree_arrays import articulated_sweep, as_configuration, check_q, raise_status, tree_arrays


@njit(cache=True)
def tau_bar(G, S, n, out):
    """τ̄ = I − G H (6×6), H = Sᵀ."""
    for a in range(6):
        for b in range(6):
            s = 1.0 if a == b else 0.0
            for k in range(n):
                s -= G[a, k] * S[b, k]
            out[a, b] = s


@njit(cache=True)
def matmul6(A, B, out):
    for a in range(6):
        for b in range(6):
            s = 0.0
            for k in range(6):
                s += A[a, k] * B[k, b]
            out[a, b] = s


@njit(cache=True)
def matmul6_tn(A, B, out):
    """out = Aᵀ B."""
    for a in range(6):
        for b in range(6):
            s = 0.0
            for k in range(6):
                s += A[k, a] * B[k, b]
            out[a, b] = s


@njit(cache=True)
def store_pinocchio(Y, out):
    """Write a Featherstone-ordered 6×6 block in Pinocchio's [linear; angular] order."""
    for a in range(6):
        for b in range(6):
            out[a, b] = Y[(a + 3) % 6, (b + 3) % 6]


@njit(cache=True)
def compliance_kernel(par, jtype, iq, nvj, R0, p0, axis, S, inertia, iv, armature, q, nq,
                      X, P, G, Dinv, Dchol, Ups, Psi, out, off_diagonal):
    st = check_q(jtype, iq, q, nq)
    if st != 0:
        return st
    st = articulated_sweep(par, jtype, iq, nvj, R0, p0, axis, S, inertia, iv, armature, q,
                           X, P, G, Dinv, Dchol)
    if st != 0:
        return st
    nb = par.shape[0] - 1
    tb = np.empty((nb + 1, 6, 6))
    T = np.empty((6, 6))
    Yp = np.empty((6, 6))
    Ups[0, :, :] = 0.0
    # base → tip (Eq. 22)
    for i in range(1, nb + 1):
        n = nvj[i]
        tau_bar(G[i], S[i], n, tb[i])
        Xi = X[i]
        # Υ⁺ = X Υ(℘) Xᵀ
        matmul6(Xi, Ups[par[i]], T)
        for a in range(6):
            for b in range(6):
                s = 0.0
                for k in range(6):
                    s += T[a, k] * Xi[b, k]
                Yp[a, b] = s
        # Υ = τ̄ᵀ Υ⁺ τ̄ + S D⁻¹ Sᵀ
        matmul6(Yp, tb[i], T)
        matmul6_tn(tb[i], T, Ups[i])
        for a in range(6):
            for b in range(6):
                s = 0.0
                for r in range(n):
                    for c in range(n):
                        s += S[i, a, r] * Dinv[i, r, c] * S[i, b, c]
                Ups[i, a, b] += s
    if not off_diagonal:
        for i in range(1, nb + 1):
            store_pinocchio(Ups[i], out[i, 0])
        return 0
    # ψ(a, j) for every ancestor a of j (Psi[j, a]); ψ(℘(m),j) = φ(℘(m),m) τ̄(m) ψ(m,j)
    depth = np.zeros(nb + 1, np.int64)
    for j in range(1, nb + 1):
        depth[j] = depth[par[j]] + 1
        for a in range(6):
            for b in range(6):
                Psi[j, j, a, b] = 1.0 if a == b else 0.0
        m = j
        while m > 0:
            matmul6(tb[m], Psi[j, m], T)
            matmul6_tn(X[m], T, Psi[j, par[m]])
            m = par[m]
    for i in range(1, nb + 1):
        for j in range(1, nb + 1):
            a, b = i, j
            while depth[a] > depth[b]:
                a = par[a]
            while depth[b] > depth[a]:
                b = par[b]
            while a != b:
                a = par[a]
                b = par[b]
            if a == 0:
                continue
            matmul6(Ups[a], Psi[j, a], T)
            matmul6_tn(Psi[i, a], T, Yp)
            store_pinocchio(Yp, out[i, j])
    return 0


def body_compliances(model, data, q, off_diagonal: bool = False) -> np.ndarray:
    """The 6×6 operational-space compliance ``Υ(k) = Jₖ M⁻¹ Jₖᵀ`` of every body, in one O(n) sweep.

    Jain's Eq. 22 (spatial operator algebra): after one tip→base articulated-body sweep, one
    base→tip sweep gives every body's compliance — the response (spatial acceleration of body k)
    to a unit spatial force applied at body k, at zero velocity and without gravity. ``M`` includes
    the joints' armature.

    Parameters
    ----------
    model, data:
        A kinematic-tree :class:`~loopdyn.Model` (no loops; UnsupportedFeatureError otherwise) and a
        Data created by it.
    q:
        Configuration (nq).
    off_diagonal:
        If true, return the whole operational-space compliance ``Ω = J M⁻¹ Jᵀ`` of all bodies as
        blocks (O(n²) output): ``out[i, j] = Jᵢ M⁻¹ Jⱼᵀ`` (``Υ(i) ψ(i, j)`` when i is inboard of j,
        Eq. 21); ``out[k, k]`` is ``Υ(k)``.

    Returns
    -------
    numpy.ndarray
        ``(njoints, 6, 6)`` (or ``(njoints, njoints, 6, 6)`` with ``off_diagonal``): block k in body
        k's own frame, Pinocchio's ``[linear; angular]`` layout, i.e. ``J M⁻¹ Jᵀ`` for Pinocchio's
        LOCAL joint Jacobian J of joint k. Row 0 (the universe) is zero.

    Raises
    ------
    SingularInertiaError
        If the mass matrix is singular (a massless leaf body, ...), naming the joint.
    """
    arr = tree_arrays(model, data, "body_compliances")
    qq = as_configuration(q, arr.nq)
    nb = arr.nb
    X = np.empty((nb + 1, 6, 6))
    P = np.empty((nb + 1, 6, 6))
    G = np.zeros((nb + 1, 6, 6))
    Dinv = np.zeros((nb + 1, 6, 6))
    Dchol = np.zeros((nb + 1, 6, 6))
    Ups = np.empty((nb + 1, 6, 6))
    if off_diagonal:
        out = np.zeros((nb + 1, nb + 1, 6, 6))
        Psi = np.zeros((nb + 1, nb + 1, 6, 6))
    else:
        out = np.zeros((nb + 1, 6, 6))
        Psi = np.zeros((1, 1, 6, 6))
    st = compliance_kernel(arr.parent, arr.jtype, arr.iq, arr.nvj, arr.R0, arr.p0, arr.axis, arr.S,
                           arr.inertia, arr.iv, arr.armature, qq, arr.nq, X, P, G, Dinv, Dchol, Ups, Psi,
                           out if off_diagonal else out[:, None], off_diagonal)
    if st:
        raise_status(model, st, "body_compliances")
    return out
