"""Jain's spatial-operator sweeps on the cluster tree of a model with loops (spec §2.4, §2.7).

After constraint embedding every cluster 𝒢 is one node of a tree with a generalised velocity space:
its stacked body velocities ``V_𝒢`` (6 n_𝒢) obey ``V_𝒢 = 𝒳_𝒢 V_℘ + 𝖲_𝒢 ẏ_𝒢``, with 𝖲_𝒢 = H̲_R𝒢*
(6 n_𝒢 × m_𝒢, the cluster motion subspace of C-ABA, loop closure and massless bodies included) and
𝒳_𝒢 the sparse transform that ties each body i of 𝒢 to its output body Λ(i) in the parent cluster
(``(𝒳_𝒢 V_℘)_i = ᶦX_Λ V_Λ(i)``; 𝒳* = φ(℘, 𝒢) of spec §2.4). The ATBI quantities per cluster come
from C-ABA's backward pass (:func:`loopdyn.algorithms.cluster_dynamics.c_aba_backward`, the steps
A1–A7 of spec §2.7) at zero velocity: 𝖴 = P_𝒢 H̲*, 𝖣 = H̲ P_𝒢 H̲* (+ armature), so Jain's gain is
``G_𝒢 = 𝖴 𝖣⁻¹`` and ``τ̄_𝒢 = I − G_𝒢 𝖲_𝒢ᵀ``.

* :func:`c_compliance_kernel` — Eq. 22 lifted to clusters, base→tip over the cluster tree:
  ``Υ⁺_𝒢 = 𝒳_𝒢 Υ_℘ 𝒳_𝒢ᵀ`` and ``Υ_𝒢 = τ̄*_𝒢 Υ⁺_𝒢 τ̄_𝒢 + 𝖲_𝒢 𝖣⁻¹ 𝖲_𝒢ᵀ`` (6 n_𝒢 × 6 n_𝒢): its
  diagonal 6×6 blocks are the bodies' compliances ``𝒥ₖ 𝓜⁻¹ 𝒥ₖ*``, its other blocks those between
  bodies of the same cluster; bodies of different clusters (Eq. 21) through the articulated
  transforms ``ψ(℘, 𝒢) = 𝒳_𝒢ᵀ τ̄_𝒢``: ``Ω(i, j) = ψ*(a, i) Υ_a ψ(a, j)``, a the lowest common
  ancestor cluster.
* :func:`c_factor_kernel` and :func:`c_apply_kernel` — the innovations factorisation
  ``𝓜 = [I + H_Ra φ_a 𝒦] 𝒟 [I + H_Ra φ_a 𝒦]*`` and its inverse ``[I − H_Ra ψ_a 𝒦]`` (spec §2.7),
  each factor applied to a vector in one sweep over the cluster tree with cluster blocks.

Spatial vectors are Featherstone-ordered ``[angular; linear]`` inside, in body frames.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..algorithms.borrow import borrowed
from ..algorithms.cluster_dynamics import c_aba_backward, placement_in_output
from ..algorithms.cluster_kinematics import c_fk_core, tapes, validate_cluster_state
from ..algorithms.common import kernel
from ..model import layout as L
from ..spatial import ops

# status of the factor kernel when the Cholesky factor of a cluster's 𝖣 fails (index: the cluster)
FACTOR_NOT_PD = 1 << 40

# columns of the compact cluster index of a factor (ClusterIndex.cl)
X_FIRST, X_NB, X_M, X_IV, X_FOFF, X_PARENT = 0, 1, 2, 3, 4, 5
# operator codes (the same as factorization.OP_*)
OP_L, OP_LT, OP_LINV, OP_LINVT, OP_D, OP_DINV, OP_M, OP_MINV = 0, 1, 2, 3, 4, 5, 6, 7


@njit(cache=True)
def articulated_clusters(ib, ws, ic, cb, wc, q):
    """Validate q, then the cluster kinematics at zero velocity and C-ABA's backward pass without
    forces (the ATBI sweep A1–A7 of spec §2.7). Returns a status."""
    code, consts, table, outputs = tapes(ic, cb, wc)
    nv = 0
    for k in range(1, ic[0, L.C0_NCL] + 1):
        nv += ic[k, L.C_NV]
    zero = np.zeros(nv)
    no_forces = np.zeros((0, 6))
    st = validate_cluster_state(ib, ic, cb, q, zero, zero, no_forces, True)
    if st != 0:
        return st
    st = c_fk_core(ib, ws, ic, cb, wc, code, consts, table, outputs, q, zero, np.zeros(0), False)
    if st != 0:
        return st
    return c_aba_backward(ib, ws, ic, cb, wc, zero, no_forces)


@njit(cache=True)
def gains(ic, wc, k, G, goff):
    """G_𝒢 = 𝖴 𝖣⁻¹ (6 n_𝒢 × m, row-major) of cluster k into G[goff:]."""
    nb, m = ic[k, L.C_NB], ic[k, L.C_M]
    U, DI = ic[k, L.C_U], ic[k, L.C_DINV]
    for r in range(6 * nb):
        for c in range(m):
            s = 0.0
            for x in range(m):
                s += wc[U + r * m + x] * wc[DI + x * m + c]
            G[goff + r * m + c] = s


@njit(cache=True)
def carried_compliance(ib, ws, ic, cb, wc, k, ups, uoff, Yp):
    """Υ⁺_𝒢 = 𝒳_𝒢 Υ_℘ 𝒳_𝒢ᵀ (Eq. 22, first line) of cluster k into Yp: block (a, b) is
    ᵃX_Λ Υ_℘(Λ(a), Λ(b)) ᵇX_Λᵀ."""
    first, nb = ic[k, L.C_FIRST], ic[k, L.C_NB]
    p = ic[k, L.C_PARENT]
    n6 = 6 * nb
    if p == 0:
        for r in range(n6):
            for c in range(n6):
                Yp[r, c] = 0.0
        return
    pn6 = 6 * ic[p, L.C_NB]
    T = np.empty((6, 6))
    for a in range(nb):
        ia = cb[first + a]
        Ra, pa = placement_in_output(ib, ws, ic, k, ia)
        sa = ib[ib[ia, L.I_OUT], L.I_SUB]
        for b in range(a, nb):
            ibb = cb[first + b]
            Rb, pb = placement_in_output(ib, ws, ic, k, ibb)
            sb = ib[ib[ibb, L.I_OUT], L.I_SUB]
            src = uoff[p] + (6 * sa) * pn6 + 6 * sb
            for r in range(6):  # T = Υ_℘(Λa, Λb) ᵇX_Λᵀ, row by row: (ᵇX_Λ rowᵀ)ᵀ
                row = ops.motion_to_child(Rb, pb, ops.load6_at(ups, src + r * pn6))
                for c in range(6):
                    T[r, c] = row[c]
            for c in range(6):  # ᵃX_Λ T, column by column
                col = ops.motion_to_child(Ra, pa, (T[0, c], T[1, c], T[2, c], T[3, c], T[4, c], T[5, c]))
                for r in range(6):
                    Yp[6 * a + r, 6 * b + c] = col[r]
                    Yp[6 * b + c, 6 * a + r] = col[r]


@njit(cache=True)
def cluster_compliance(ic, wc, k, G, goff, Yp, ups, uoff, Wg, SG, GW):
    """Υ_𝒢 = τ̄* Υ⁺ τ̄ + 𝖲 𝖣⁻¹ 𝖲ᵀ (Eq. 22, second line, lifted to cluster k), evaluated as
    ``Υ⁺ − 𝖲 Wᵀ − W 𝖲ᵀ + 𝖲 (Gᵀ W + 𝖣⁻¹) 𝖲ᵀ`` with W = Υ⁺ G, into ups[uoff[k]:] (6 n_𝒢 × 6 n_𝒢)."""
    nb, m = ic[k, L.C_NB], ic[k, L.C_M]
    S, DI = ic[k, L.C_S], ic[k, L.C_DINV]
    n6 = 6 * nb
    for r in range(n6):  # W = Υ⁺ G
        for c in range(m):
            s = 0.0
            for x in range(n6):
                s += Yp[r, x] * G[goff + x * m + c]
            Wg[r, c] = s
    for r in range(m):  # Gᵀ W + 𝖣⁻¹
        for c in range(m):
            s = wc[DI + r * m + c]
            for x in range(n6):
                s += G[goff + x * m + r] * Wg[x, c]
            GW[r, c] = s
    for r in range(n6):  # 𝖲 (Gᵀ W + 𝖣⁻¹)
        for c in range(m):
            s = 0.0
            for x in range(m):
                s += wc[S + r * m + x] * GW[x, c]
            SG[r, c] = s
    o = uoff[k]
    for r in range(n6):  # symmetric: the upper triangle, mirrored
        for c in range(r, n6):
            s = Yp[r, c]
            for x in range(m):
                s += (SG[r, x] - Wg[r, x]) * wc[S + c * m + x] - wc[S + r * m + x] * Wg[c, x]
            ups[o + r * n6 + c] = s
            ups[o + c * n6 + r] = s


@njit(cache=True)
def compliance_sweep(ib, ws, ic, cb, wc, ups, uoff, G, goff):
    """Eq. 22 on the cluster tree, base→tip: Υ_𝒢 of every cluster (and the gains G_𝒢)."""
    ncl = ic[0, L.C0_NCL]
    n6, mm = 6, 1
    for k in range(1, ncl + 1):
        n6 = max(n6, 6 * ic[k, L.C_NB])
        mm = max(mm, ic[k, L.C_M])
    Yp = np.empty((n6, n6))
    Wg = np.empty((n6, mm))
    SG = np.empty((n6, mm))
    GW = np.empty((mm, mm))
    for k in range(1, ncl + 1):
        gains(ic, wc, k, G, goff[k])
        carried_compliance(ib, ws, ic, cb, wc, k, ups, uoff, Yp)
        cluster_compliance(ic, wc, k, G, goff[k], Yp, ups, uoff, Wg, SG, GW)


@njit(cache=True, inline="always")
def store_pinocchio_flat(src, o, stride, out):
    """out (6×6) = the Featherstone-ordered block at src[o] (row stride ``stride``) in Pinocchio's
    [linear; angular] order."""
    for a in range(6):
        for b in range(6):
            out[a, b] = src[o + ((a + 3) % 6) * stride + (b + 3) % 6]


@njit(cache=True)
def articulated_transforms(ib, ws, ic, cb, wc, G, goff, depth, Psi):
    """Psi[j, d] = ψ(a, j) (6 n_a × 6) for every body j and every ancestor cluster a (depth d) of
    j's cluster (itself included, where ψ selects j's block): ψ(℘, j) = 𝒳_mᵀ τ̄_m ψ(m, j),
    τ̄_m = I − G_m 𝖲_mᵀ (Eq. 21 on the cluster tree)."""
    n6max = Psi.shape[2]
    T = np.empty((n6max, 6))
    ST = np.empty((n6max, 6))
    for j in range(1, ib[0, L.I0_NBODIES] + 1):
        c = ib[j, L.I_CLUSTER]
        P = Psi[j, depth[c]]
        P[:, :] = 0.0
        for r in range(6):
            P[6 * ib[j, L.I_SUB] + r, r] = 1.0
        mc = c
        while ic[mc, L.C_PARENT] > 0:
            p = ic[mc, L.C_PARENT]
            first, nb, m, S = ic[mc, L.C_FIRST], ic[mc, L.C_NB], ic[mc, L.C_M], ic[mc, L.C_S]
            P = Psi[j, depth[mc]]
            for x in range(m):  # 𝖲ᵀ ψ
                for c6 in range(6):
                    s = 0.0
                    for r in range(6 * nb):
                        s += wc[S + r * m + x] * P[r, c6]
                    ST[x, c6] = s
            for r in range(6 * nb):  # T = ψ − G (𝖲ᵀ ψ)
                for c6 in range(6):
                    s = P[r, c6]
                    for x in range(m):
                        s -= G[goff[mc] + r * m + x] * ST[x, c6]
                    T[r, c6] = s
            Q = Psi[j, depth[p]]
            Q[:, :] = 0.0
            for a in range(nb):  # 𝒳ᵀ T: body a's block to its output body's block
                ia = cb[first + a]
                R, pp = placement_in_output(ib, ws, ic, mc, ia)
                sa = ib[ib[ia, L.I_OUT], L.I_SUB]
                for c6 in range(6):
                    f = ops.force_to_parent(R, pp, (T[6 * a, c6], T[6 * a + 1, c6], T[6 * a + 2, c6],
                                                    T[6 * a + 3, c6], T[6 * a + 4, c6], T[6 * a + 5, c6]))
                    for r in range(6):
                        Q[6 * sa + r, c6] += f[r]
            mc = p


@njit(cache=True)
def all_blocks(ib, ic, ups, uoff, depth, Psi, out):
    """out[i, j] = Ω(i, j) = ψ*(a, i) Υ_a ψ(a, j), a = the lowest common ancestor cluster of i's and
    j's clusters (Pinocchio order); Ω(j, i) = Ω(i, j)ᵀ."""
    nbod = ib[0, L.I0_NBODIES]
    T = np.empty((Psi.shape[2], 6))
    Y = np.empty(36)
    for i in range(1, nbod + 1):
        for j in range(i, nbod + 1):
            a, b = ib[i, L.I_CLUSTER], ib[j, L.I_CLUSTER]
            while depth[a] > depth[b]:
                a = ic[a, L.C_PARENT]
            while depth[b] > depth[a]:
                b = ic[b, L.C_PARENT]
            while a != b:
                a, b = ic[a, L.C_PARENT], ic[b, L.C_PARENT]
            if a == 0:
                continue
            n6 = 6 * ic[a, L.C_NB]
            A, B, o = Psi[i, depth[a]], Psi[j, depth[a]], uoff[a]
            for r in range(n6):  # T = Υ_a ψ(a, j)
                for c in range(6):
                    s = 0.0
                    for x in range(n6):
                        s += ups[o + r * n6 + x] * B[x, c]
                    T[r, c] = s
            for r in range(6):  # ψ*(a, i) T
                for c in range(6):
                    s = 0.0
                    for x in range(n6):
                        s += A[x, r] * T[x, c]
                    Y[6 * r + c] = s
            store_pinocchio_flat(Y, 0, 6, out[i, j])
            for r in range(6):
                for c in range(6):
                    out[j, i, c, r] = out[i, j, r, c]


@kernel(
    "int64(int64[:, ::1], float64[:, ::1], int64[:, ::1], int64[::1], float64[::1], "
    "float64[::1], float64[:, :, :, ::1], boolean)"
)
def c_compliance_kernel(ib, ws, ic, cb, wc, q, out, off_diagonal):
    """Every body's compliance Υ(k) = 𝒥ₖ 𝓜⁻¹ 𝒥ₖ* (out[k, 0], Pinocchio order), or with
    ``off_diagonal`` every block 𝒥ᵢ 𝓜⁻¹ 𝒥ⱼ* (out[i, j]); a model with loops. Returns a status."""
    ib, ws, ic, cb, wc, q, out = borrowed((ib, ws, ic, cb, wc, q, out))
    st = articulated_clusters(ib, ws, ic, cb, wc, q)
    if st != 0:
        return st
    ncl = ic[0, L.C0_NCL]
    uoff = np.zeros(ncl + 2, np.int64)
    goff = np.zeros(ncl + 2, np.int64)
    depth = np.zeros(ncl + 1, np.int64)
    n6max = 6
    for k in range(1, ncl + 1):
        nb = ic[k, L.C_NB]
        uoff[k + 1] = uoff[k] + 36 * nb * nb
        goff[k + 1] = goff[k] + 6 * nb * ic[k, L.C_M]
        depth[k] = depth[ic[k, L.C_PARENT]] + 1
        n6max = max(n6max, 6 * nb)
    ups = np.empty(uoff[ncl + 1])
    G = np.empty(goff[ncl + 1])
    compliance_sweep(ib, ws, ic, cb, wc, ups, uoff, G, goff)
    if not off_diagonal:
        for i in range(1, ib[0, L.I0_NBODIES] + 1):
            k = ib[i, L.I_CLUSTER]
            n6 = 6 * ic[k, L.C_NB]
            s = ib[i, L.I_SUB]
            store_pinocchio_flat(ups, uoff[k] + (6 * s) * n6 + 6 * s, n6, out[i, 0])
        return 0
    Psi = np.empty((ib[0, L.I0_NBODIES] + 1, int(depth.max()) + 1, n6max, 6))
    articulated_transforms(ib, ws, ic, cb, wc, G, goff, depth, Psi)
    all_blocks(ib, ic, ups, uoff, depth, Psi, out)
    return 0
