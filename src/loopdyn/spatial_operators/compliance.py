"""Operational-space compliance of every body in one O(n) sweep (Jain, partitioning paper §4, Eq. 22).

``Υ(k) = 𝒥ₖ 𝓜⁻¹ 𝒥ₖ*`` is the 6×6 compliance of body k: it maps a spatial force applied at body k's
frame origin to the resulting spatial acceleration of body k (both in body k's frame). Eq. 22 runs
base→tip after the ATBI sweep:

    Υ⁺(k) = φ*(℘(k),k) Υ(℘(k)) φ(℘(k),k)
    Υ(k)  = τ̄*(k) Υ⁺(k) τ̄(k) + H*(k) D⁻¹(k) H(k),      τ̄(k) = I − G(k) H(k)

(the τ̄, not τ, of the printed paper: spec §1.7 [C]). Since τ̄ is a rank-n(k) correction of the
identity, the second line is evaluated as ``Υ⁺ − H* Wᵀ − W H + H* (Gᵀ W + D⁻¹) H`` with
``W = Υ⁺ G`` (O(36 n(k)) instead of two 6×6 products).

The off-diagonal blocks of the full operational-space compliance Ω = 𝒥 𝓜⁻¹ 𝒥* (Eq. 21) are
``Υ(i) ψ(i,j)`` for i inboard of j, with the articulated transform ``ψ(℘(k),k) = φ(℘(k),k) τ̄(k)``;
for bodies on different branches with lowest common ancestor a the block is ``ψ*(a,i) Υ(a) ψ(a,j)``
(the same sum of Ω = ψ* H* D⁻¹ H ψ).

On a model with loops the same recursions run over the cluster tree, with the clusters' stacked
6 n_𝒢 × 6 n_𝒢 compliances (:mod:`.cluster_sweeps`).
"""

from __future__ import annotations

import numpy as np

from ..jit import njit
from .cluster_sweeps import c_compliance_kernel
from .tree_arrays import (
    M_S,
    NV,
    PARENT,
    W_DINV,
    W_G,
    W_RP,
    W_TB,
    W_UPS,
    W_X,
    articulated_sweep,
    as_configuration,
    check_cluster_data,
    check_q,
    motion_congruence,
    raise_cluster_status,
    raise_status,
    tree_arrays,
)


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
def compliance_kernel(ib, geo, mats, armature, q, W, Psi, out, off_diagonal):
    st = check_q(ib, q)
    if st != 0:
        return st
    st = articulated_sweep(ib, geo, mats, armature, q, W)
    if st != 0:
        return st
    nb = ib.shape[0] - 1
    sc = np.empty((5, 3, 3))
    Yp = np.empty((6, 6))
    Wg = np.empty((6, 6))
    SGW = np.empty((6, 6))
    GW = np.empty((6, 6))
    # base → tip (Eq. 22)
    for i in range(1, nb + 1):
        n = ib[i, NV]
        par = ib[i, PARENT]
        S = mats[i, M_S]
        G = W[i, W_G]
        Dinv = W[i, W_DINV]
        if par > 0:  # Υ⁺ = φ* Υ(℘) φ
            RP = W[i, W_RP]
            motion_congruence(RP[:3, :3], RP[3, :3], W[par, W_UPS], Yp, sc)
        else:
            Yp[:, :] = 0.0
        for a in range(6):  # W = Υ⁺ G
            for r in range(n):
                s = 0.0
                for k in range(6):
                    s += Yp[a, k] * G[k, r]
                Wg[a, r] = s
        for r in range(n):  # Gᵀ W + D⁻¹
            for c in range(n):
                s = Dinv[r, c]
                for k in range(6):
                    s += G[k, r] * Wg[k, c]
                GW[r, c] = s
        for a in range(6):  # S (Gᵀ W + D⁻¹)
            for c in range(n):
                s = 0.0
                for r in range(n):
                    s += S[a, r] * GW[r, c]
                SGW[a, c] = s
        Ups = W[i, W_UPS]
        for a in range(6):
            for b in range(a, 6):
                s = Yp[a, b]
                for r in range(n):
                    s += -S[a, r] * Wg[b, r] - Wg[a, r] * S[b, r] + SGW[a, r] * S[b, r]
                Ups[a, b] = s
                Ups[b, a] = s
    if not off_diagonal:
        for i in range(1, nb + 1):
            store_pinocchio(W[i, W_UPS], out[i, 0])
        return 0
    # τ̄(k) = I − G Hᵀ and ψ(a, j) for every ancestor a of j (Psi[j, a]):
    # ψ(℘(m),j) = φ(℘(m),m) τ̄(m) ψ(m,j)
    T = np.empty((6, 6))
    for i in range(1, nb + 1):
        tb = W[i, W_TB]
        for a in range(6):
            for b in range(6):
                s = 1.0 if a == b else 0.0
                for k in range(ib[i, NV]):
                    s -= W[i, W_G, a, k] * mats[i, M_S, b, k]
                tb[a, b] = s
    depth = np.zeros(nb + 1, np.int64)
    for j in range(1, nb + 1):
        depth[j] = depth[ib[j, PARENT]] + 1
        for a in range(6):
            for b in range(6):
                Psi[j, j, a, b] = 1.0 if a == b else 0.0
        m = j
        while m > 0:
            matmul6(W[m, W_TB], Psi[j, m], T)
            matmul6_tn(W[m, W_X], T, Psi[j, ib[m, PARENT]])
            m = ib[m, PARENT]
    for i in range(1, nb + 1):
        for j in range(1, nb + 1):
            a, b = i, j
            while depth[a] > depth[b]:
                a = ib[a, PARENT]
            while depth[b] > depth[a]:
                b = ib[b, PARENT]
            while a != b:
                a = ib[a, PARENT]
                b = ib[b, PARENT]
            if a == 0:
                continue
            matmul6(W[a, W_UPS], Psi[j, a], T)
            matmul6_tn(Psi[i, a], T, Yp)
            store_pinocchio(Yp, out[i, j])
    return 0


_NO_PSI = np.zeros((1, 1, 6, 6))


def _cluster_compliances(model, data, q, off_diagonal: bool) -> np.ndarray:
    """The cluster-tree version (spec §2.7): one C-ABA backward sweep, then Eq. 22 over the clusters."""
    check_cluster_data(model, data)
    qq = as_configuration(q, model.nq)
    n = model.nbodies + 1
    out = np.zeros((n, n, 6, 6)) if off_diagonal else np.zeros((n, 1, 6, 6))
    st = c_compliance_kernel(*data.cluster_arrays, qq, out, bool(off_diagonal))
    if st:
        raise_cluster_status(model, st, "body_compliances")
    return out if off_diagonal else out[:, 0]


def body_compliances(model, data, q, off_diagonal: bool = False) -> np.ndarray:
    """The 6×6 operational-space compliance ``Υ(k) = Jₖ M⁻¹ Jₖᵀ`` of every body, in one O(n) sweep.

    Jain's Eq. 22 (spatial operator algebra): after one tip→base articulated-body sweep, one
    base→tip sweep gives every body's compliance — the response (spatial acceleration of body k)
    to a unit spatial force applied at body k, at zero velocity and without gravity. ``M`` includes
    the joints' armature. Massless bodies are fine (their compliance is that of their frame) as long
    as the mass matrix is not singular.

    Parameters
    ----------
    model, data:
        A :class:`~loopdyn.Model` and a Data created by it. On a model with loops the bodies are
        those of the spanning tree and ``M`` is the mass matrix of the independent coordinates
        (``Jₖ`` = the spanning tree's Jacobian times G): Eq. 22 runs over the cluster tree with
        cluster blocks after one C-ABA backward sweep (:mod:`.cluster_sweeps`), O(Σ n_𝒢² m_𝒢).
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
    if model.has_constraints:
        return _cluster_compliances(model, data, q, off_diagonal)
    arr = tree_arrays(model, data, "body_compliances")
    qq = as_configuration(q, arr.nq)
    nb = arr.nb
    if off_diagonal:
        out = np.zeros((nb + 1, nb + 1, 6, 6))
        psi = np.zeros((nb + 1, nb + 1, 6, 6))
        st = compliance_kernel(arr.ib, arr.geo, arr.mats, arr.armature, qq, arr.work, psi, out, True)
    else:
        out = np.zeros((nb + 1, 6, 6))
        st = compliance_kernel(arr.ib, arr.geo, arr.mats, arr.armature, qq, arr.work, _NO_PSI, out[:, None],
                               False)
    if st:
        raise_status(model, st, "body_compliances")
    return out
