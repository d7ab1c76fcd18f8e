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
  ``Υ⁺_𝒢 = 𝒳_𝒢 Υ_℘ 𝒳_𝒢ᵀ`` and ``Υ_𝒢 = τ̄*_𝒢 Υ⁺_𝒢 τ̄_𝒢 + 𝖲_𝒢 𝖣⁻¹ 𝖲_𝒢ᵀ`` (6 n_𝒢 × 6 n_𝒢), evaluated
  as ``Z Υ_℘(ports, ports) Zᵀ + 𝖲 𝖣⁻¹ 𝖲ᵀ`` with ``Z = τ̄ᵀ 𝒳`` restricted to the output bodies
  ("ports"): its diagonal 6×6 blocks are the bodies' compliances ``𝒥ₖ 𝓜⁻¹ 𝒥ₖ*``, its other blocks
  those between bodies of the same cluster (only those between carriers of child clusters are
  formed unless all blocks are asked for); bodies of different clusters (Eq. 21) through the articulated
  transforms ``ψ(℘, 𝒢) = 𝒳_𝒢ᵀ τ̄_𝒢``: ``Ω(i, j) = ψ*(a, i) Υ_a ψ(a, j)``, a the lowest common
  ancestor cluster.
* :func:`c_factor_kernel` and :func:`c_apply_kernel` — the innovations factorisation
  ``𝓜 = [I + H_Ra φ_a 𝒦] 𝒟 [I + H_Ra φ_a 𝒦]*`` and its inverse ``[I − H_Ra ψ_a 𝒦]`` (spec §2.7),
  each factor applied to a vector in one sweep over the cluster tree with cluster blocks.

Spatial vectors are Featherstone-ordered ``[angular; linear]`` inside, in body frames.
"""

from __future__ import annotations

import math

import numpy as np

from ..algorithms.borrow import acquire, borrowed, model_views, release
from ..algorithms.cluster_dynamics import c_aba_backward, placement_in_output
from ..algorithms.cluster_kinematics import c_fk_core, tapes, validate_cluster_state
from ..algorithms.common import kernel
from ..algorithms.status import DATA_IN_USE, SINGULAR, STATUS_BASE
from ..jit import inlined, njit, shared
from ..model import layout as L
from ..spatial import ops
from .tree_arrays import OP_D, OP_DINV, OP_L, OP_LINV, OP_LINVT, OP_LT, OP_M

# columns of the compact cluster index of a factor (ClusterIndex.cl)
X_FIRST, X_NB, X_M, X_IV, X_FOFF, X_PARENT = 0, 1, 2, 3, 4, 5


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
    st = c_fk_core(ib, ws, ic, cb, wc, code, consts, table, outputs, q, np.zeros(0), np.zeros(0), False)
    if st != 0:
        return st
    return c_aba_backward(ib, ws, ic, cb, wc, np.zeros(0), no_forces)


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
def projected_ports(ib, ws, ic, cb, wc, k, G, goff, Z, GX, psub):
    """Z = τ̄_𝒢ᵀ 𝒳_𝒢 (6 n_𝒢 × 6 n_ports) of cluster k, 𝒳_𝒢 restricted to the columns of its ports (the
    distinct output bodies, sub-indices psub in the parent cluster): Υ⁺_𝒢 = 𝒳 Υ_℘ 𝒳ᵀ, so
    τ̄ᵀ Υ⁺ τ̄ = Z Υ_℘(ports, ports) Zᵀ. Returns the number of ports."""
    first, nb, m, S = ic[k, L.C_FIRST], ic[k, L.C_NB], ic[k, L.C_M], ic[k, L.C_S]
    npt = 0
    for a in range(nb):
        i = cb[first + a]
        sa = ib[ib[i, L.I_OUT], L.I_SUB]
        g = 0
        while g < npt and psub[g] != sa:
            g += 1
        if g == npt:
            psub[g] = sa
            npt += 1
    w = 6 * npt
    for r in range(6 * nb):
        for c in range(w):
            Z[r, c] = 0.0
    for a in range(nb):  # 𝒳: block (a, port of a) = ᵃX_Λ = [[Rᵀ, 0], [−Rᵀ p×, Rᵀ]]
        i = cb[first + a]
        sa = ib[ib[i, L.I_OUT], L.I_SUB]
        g = 0
        while psub[g] != sa:
            g += 1
        R, p = placement_in_output(ib, ws, ic, k, i)
        for c in range(6):
            col = ops.motion_to_child(R, p, ops.unit6(c))
            for r in range(6):
                Z[6 * a + r, 6 * g + c] = col[r]
    for x in range(m):  # GX = Gᵀ 𝒳
        for c in range(w):
            s = 0.0
            for r in range(6 * nb):
                s += G[goff + r * m + x] * Z[r, c]
            GX[x, c] = s
    for r in range(6 * nb):  # Z = 𝒳 − 𝖲 (Gᵀ 𝒳)
        for c in range(w):
            s = Z[r, c]
            for x in range(m):
                s -= wc[S + r * m + x] * GX[x, c]
            Z[r, c] = s
    return npt


@njit(cache=True)
def cluster_compliance_ports(ic, cb, wc, k, ups, uoff, Z, npt, psub, A, SD, blocks):
    """Υ_𝒢 = Z Υ_℘(ports, ports) Zᵀ + 𝖲 𝖣⁻¹ 𝖲ᵀ (Eq. 22 lifted to cluster k; Z of
    :func:`projected_ports`, npt = 0 for a cluster on the world) into ups[uoff[k]:] (6 n_𝒢 × 6 n_𝒢):
    the blocks (a, b) with ``blocks[body a] and blocks[body b]`` (the carriers, which the child
    clusters read, or every body for the off-diagonal blocks) and every diagonal block; the others
    are left unwritten."""
    nb, m, S, DI = ic[k, L.C_NB], ic[k, L.C_M], ic[k, L.C_S], ic[k, L.C_DINV]
    first = ic[k, L.C_FIRST]
    n6, w = 6 * nb, 6 * npt
    p = ic[k, L.C_PARENT]
    if npt > 0:
        pn6 = 6 * ic[p, L.C_NB]
        for r in range(n6):  # A = Z Υ_℘(ports, ports)
            for c in range(w):
                A[r, c] = 0.0
        for g1 in range(npt):
            for g2 in range(npt):
                blk = uoff[p] + (6 * psub[g1]) * pn6 + 6 * psub[g2]
                for r in range(n6):
                    for c in range(6):
                        s = 0.0
                        for x in range(6):
                            s += Z[r, 6 * g1 + x] * ups[blk + x * pn6 + c]
                        A[r, 6 * g2 + c] += s
    for r in range(n6):  # SD = 𝖲 𝖣⁻¹
        for c in range(m):
            s = 0.0
            for x in range(m):
                s += wc[S + r * m + x] * wc[DI + x * m + c]
            SD[r, c] = s
    o = uoff[k]
    for a in range(nb):
        for b in range(a, nb):
            if a != b and not (blocks[cb[first + a]] and blocks[cb[first + b]]):
                continue
            for r in range(6 * a, 6 * a + 6):
                for c in range(max(r, 6 * b) if a == b else 6 * b, 6 * b + 6):
                    s = 0.0
                    for x in range(w):
                        s += A[r, x] * Z[c, x]
                    for x in range(m):
                        s += SD[r, x] * wc[S + c * m + x]
                    ups[o + r * n6 + c] = s
                    ups[o + c * n6 + r] = s


@njit(cache=True)
def compliance_sweep(ib, ws, ic, cb, wc, ups, uoff, G, goff, all_blocks):
    """Eq. 22 on the cluster tree, base→tip: Υ_𝒢 of every cluster (and the gains G_𝒢); only the
    diagonal and carrier blocks unless ``all_blocks``."""
    ncl = ic[0, L.C0_NCL]
    blocks = np.zeros(ib.shape[0], np.bool_)
    for j in range(1, ib.shape[0]):
        blocks[j] = all_blocks
        blocks[ib[j, L.I_OUT]] = True
    n6, mm = 6, 1
    for k in range(1, ncl + 1):
        n6 = max(n6, 6 * ic[k, L.C_NB])
        mm = max(mm, ic[k, L.C_M])
    Z = np.empty((n6, n6))
    A = np.empty((n6, n6))
    GX = np.empty((mm, n6))
    SD = np.empty((n6, mm))
    psub = np.empty(n6 // 6, np.int64)
    for k in range(1, ncl + 1):
        gains(ic, wc, k, G, goff[k])
        npt = 0 if ic[k, L.C_PARENT] == 0 else projected_ports(ib, ws, ic, cb, wc, k, G, goff[k], Z, GX, psub)
        cluster_compliance_ports(ic, cb, wc, k, ups, uoff, Z, npt, psub, A, SD, blocks)


@inlined
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
    "int64(int64[::1], float64[::1], "
    "float64[::1], float64[:, :, :, ::1], boolean)"
)
def c_compliance_kernel(ints, floats, q, out, off_diagonal):
    """Every body's compliance Υ(k) = 𝒥ₖ 𝓜⁻¹ 𝒥ₖ* (out[k, 0], Pinocchio order), or with
    ``off_diagonal`` every block 𝒥ᵢ 𝓜⁻¹ 𝒥ⱼ* (out[i, j]); a model with loops. Returns a status."""
    ints, floats, q, out = borrowed((ints, floats, q, out))
    if not acquire(ints):
        return DATA_IN_USE * STATUS_BASE
    st = compliance_core(ints, floats, q, out, off_diagonal)
    release(ints)
    return st


@shared
def compliance_core(ints, floats, q, out, off_diagonal):
    """:func:`c_compliance_kernel` once the Data is acquired."""
    ints, floats, q, out = borrowed((ints, floats, q, out))
    ib, ws, ic, cb, wc = model_views(ints, floats)
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
    compliance_sweep(ib, ws, ic, cb, wc, ups, uoff, G, goff, off_diagonal)
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


# ------------------------------------------------------------------------------------------------
# the innovations factorisation on the cluster tree (spec §2.7). Per cluster 𝒢 the factor keeps, at
# fc[cl[k, X_FOFF]:] (row-major): 𝖲_𝒢 (6 n_b × m), then per port p (an output body Λ of 𝒢's bodies,
# in the parent cluster) V_p = Σ_{a: Λ(a) = p} ᵃX_Λᵀ G_a (6 × m), then 𝖣⁻¹ and the Cholesky factor of
# 𝖣 (m × m); per body i its placement (R, p) in Λ(i) in pl[i]. Only the "carrier" bodies (those
# other clusters are attached to) have non-zero forces in the tip→base sweep and are needed by the
# base→tip sweep, so the sweeps touch the ports and carriers only. The factor's own arrays stay
# valid after the Data is reused.
# columns of the compact cluster index (factorization.ClusterIndex.cl)
X_FIRST, X_NB, X_M, X_IV, X_FOFF, X_PARENT, X_CFIRST, X_NCAR, X_PFIRST, X_NPORT = range(10)


@inlined
def v_offset(cl, k):
    """Offset in fc of cluster k's port matrices V_p."""
    return cl[k, X_FOFF] + 6 * cl[k, X_NB] * cl[k, X_M]


@inlined
def d_offset(cl, k):
    """Offset in fc of cluster k's 𝖣⁻¹ (its Cholesky factor follows)."""
    return v_offset(cl, k) + 6 * cl[k, X_NPORT] * cl[k, X_M]


@njit(cache=True)
def cholesky_rows(src, o, m, dst, d):
    """dst[d:] = the lower Cholesky factor of the m × m SPD matrix at src[o:] (row-major, upper part
    zero). False if it is not positive definite."""
    for r in range(m):
        for c in range(m):
            dst[d + r * m + c] = 0.0
    for c in range(m):
        s = src[o + c * m + c]
        for k in range(c):
            s -= dst[d + c * m + k] ** 2
        if not s > 0.0:
            return False
        dst[d + c * m + c] = math.sqrt(s)
        for r in range(c + 1, m):
            t = src[o + r * m + c]
            for k in range(c):
                t -= dst[d + r * m + k] * dst[d + c * m + k]
            dst[d + r * m + c] = t / dst[d + c * m + c]
    return True


@njit(cache=True)
def port_gains(ib, ws, ic, cb, k, cl, bport, G, fc, pl):
    """Cluster k's placements into pl and its port matrices V_p = Σ_{a: Λ(a) = p} ᵃX_Λᵀ G_a into fc
    (G: the gains 𝖴𝖣⁻¹ of the cluster, 6 n_b × m)."""
    first, nb, m = ic[k, L.C_FIRST], ic[k, L.C_NB], ic[k, L.C_M]
    vo = v_offset(cl, k)
    for x in range(6 * cl[k, X_NPORT] * m):
        fc[vo + x] = 0.0
    for a in range(nb):
        i = cb[first + a]
        R, p = placement_in_output(ib, ws, ic, k, i)
        for x in range(9):
            pl[i, x] = R[x]
        for x in range(3):
            pl[i, 9 + x] = p[x]
        if cl[k, X_NPORT] == 0:
            continue
        o = vo + 6 * m * bport[i]
        for l in range(m):
            g = ops.force_to_parent(R, p, ops.col6w(G, (6 * a) * m + l, m))
            for r in range(6):
                fc[o + r * m + l] += g[r]


@kernel(
    "int64(int64[::1], float64[::1], "
    "float64[::1], int64[:, ::1], int64[::1], float64[::1], float64[:, ::1])"
)
def c_factor_kernel(ints, floats, q, cl, bport, fc, pl):
    """The factors of spec §2.7 at q (C-ABA's backward sweep at zero velocity), copied into the
    factor's arrays. Returns a status (SINGULAR at a cluster's first body if 𝖣 is not positive
    definite)."""
    ints, floats, q, cl, bport, fc, pl = borrowed((ints, floats, q, cl, bport, fc, pl))
    if not acquire(ints):
        return DATA_IN_USE * STATUS_BASE
    st = factor_core(ints, floats, q, cl, bport, fc, pl)
    release(ints)
    return st


@njit(cache=True)
def factor_core(ints, floats, q, cl, bport, fc, pl):
    """:func:`c_factor_kernel` once the Data is acquired."""
    ints, floats, q, cl, bport, fc, pl = borrowed((ints, floats, q, cl, bport, fc, pl))
    ib, ws, ic, cb, wc = model_views(ints, floats)
    st = articulated_clusters(ib, ws, ic, cb, wc, q)
    if st != 0:
        return st
    ncl = ic[0, L.C0_NCL]
    gmax = 1
    for k in range(1, ncl + 1):
        gmax = max(gmax, 6 * ic[k, L.C_NB] * ic[k, L.C_M])
    G = np.empty(gmax)
    for k in range(1, ncl + 1):
        m, S = ic[k, L.C_M], ic[k, L.C_S]
        fo = cl[k, X_FOFF]
        for x in range(6 * ic[k, L.C_NB] * m):
            fc[fo + x] = wc[S + x]
        gains(ic, wc, k, G, 0)
        port_gains(ib, ws, ic, cb, k, cl, bport, G, fc, pl)
        do, DI = d_offset(cl, k), ic[k, L.C_DINV]
        for x in range(m * m):
            fc[do + x] = wc[DI + x]
        # 𝖣 itself is left by C-ABA's backward pass at wc[C_DSCR] (its scratch starts after it)
        if not cholesky_rows(wc, ic[k, L.C_DSCR], m, fc, do + m * m):
            return SINGULAR * STATUS_BASE + cb[ic[k, L.C_FIRST]]
    return 0


@inlined
def placement(pl, i):
    return ((pl[i, 0], pl[i, 1], pl[i, 2], pl[i, 3], pl[i, 4], pl[i, 5], pl[i, 6], pl[i, 7], pl[i, 8]),
            (pl[i, 9], pl[i, 10], pl[i, 11]))


@inlined
def row6(a, i):
    return (a[i, 0], a[i, 1], a[i, 2], a[i, 3], a[i, 4], a[i, 5])


@njit(cache=True)
def c_sweep_up(cl, carriers, ports, bout, fc, pl, x, out, f, inverse):
    """Tip→base over the clusters: out = [I + H φ 𝒦] x, or [I − H ψ 𝒦] x when ``inverse``:
    ``out_𝒢 = x_𝒢 ± 𝖲_𝒢ᵀ f_𝒢`` (f non-zero at carriers only), then to the parent cluster
    ``f_Λ(a) += ᵃX_Λᵀ f_a`` for the carriers and ``f_p += V_p src_𝒢`` for the ports (src = x, or out).
    f: (nbodies + 1, 6) scratch."""
    f[:, :] = 0.0
    sign = -1.0 if inverse else 1.0
    for k in range(cl.shape[0] - 1, 0, -1):
        m, iv, fo = cl[k, X_M], cl[k, X_IV], cl[k, X_FOFF]
        c0, nc = cl[k, X_CFIRST], cl[k, X_NCAR]
        for l in range(m):
            s = 0.0
            for c in range(c0, c0 + nc):
                i, a = carriers[c, 0], carriers[c, 1]
                for r in range(6):
                    s += fc[fo + (6 * a + r) * m + l] * f[i, r]
            out[iv + l] = x[iv + l] + sign * s
        if cl[k, X_PARENT] == 0:
            continue
        for c in range(c0, c0 + nc):
            i = carriers[c, 0]
            R, p = placement(pl, i)
            g = ops.force_to_parent(R, p, row6(f, i))
            for r in range(6):
                f[bout[i], r] += g[r]
        src = out if inverse else x
        vo, p0 = v_offset(cl, k), cl[k, X_PFIRST]
        for g in range(cl[k, X_NPORT]):
            P = ports[p0 + g]
            for r in range(6):
                s = 0.0
                for l in range(m):
                    s += fc[vo + (6 * g + r) * m + l] * src[iv + l]
                f[P, r] += s


@njit(cache=True)
def c_sweep_down(cl, carriers, ports, bout, fc, pl, x, out, beta, inverse):
    """Base→tip over the clusters: out = [I + H φ 𝒦]* x, or [I − H ψ 𝒦]* x when ``inverse``:
    ``out_𝒢 = x_𝒢 ± Σ_p V_pᵀ β_p`` over the ports, then for the carriers
    ``β_a = ᵃX_Λ β_Λ(a) + 𝖲_a src_𝒢`` (src = x, or out). beta: (nbodies + 1, 6) scratch."""
    sign = -1.0 if inverse else 1.0
    for k in range(1, cl.shape[0]):
        m, iv, fo = cl[k, X_M], cl[k, X_IV], cl[k, X_FOFF]
        vo, p0 = v_offset(cl, k), cl[k, X_PFIRST]
        for l in range(m):
            s = 0.0
            for g in range(cl[k, X_NPORT]):
                P = ports[p0 + g]
                for r in range(6):
                    s += fc[vo + (6 * g + r) * m + l] * beta[P, r]
            out[iv + l] = x[iv + l] + sign * s
        src = out if inverse else x
        c0 = cl[k, X_CFIRST]
        for c in range(c0, c0 + cl[k, X_NCAR]):
            i, a = carriers[c, 0], carriers[c, 1]
            if cl[k, X_PARENT] == 0:
                al = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
            else:
                R, p = placement(pl, i)
                al = ops.motion_to_child(R, p, row6(beta, bout[i]))
            for r in range(6):
                s = al[r]
                for l in range(m):
                    s += fc[fo + (6 * a + r) * m + l] * src[iv + l]
                beta[i, r] = s


@njit(cache=True)
def c_block_mul(cl, fc, x, out, t, chol):
    """out = blockdiag(𝖣⁻¹) x, or 𝖣 x = (C Cᵀ) x with C the Cholesky factor when ``chol`` (x and out may
    alias)."""
    for k in range(1, cl.shape[0]):
        m, o = cl[k, X_M], cl[k, X_IV]
        B = d_offset(cl, k) + (m * m if chol else 0)
        if chol:
            for r in range(m):  # t = Cᵀ x
                s = 0.0
                for c in range(r, m):
                    s += fc[B + c * m + r] * x[o + c]
                t[r] = s
            for r in range(m):
                s = 0.0
                for c in range(r + 1):
                    s += fc[B + r * m + c] * t[c]
                out[o + r] = s
        else:
            for r in range(m):
                s = 0.0
                for c in range(m):
                    s += fc[B + r * m + c] * x[o + c]
                t[r] = s
            for r in range(m):
                out[o + r] = t[r]


@njit(cache=True)
def c_apply_kernel(op, cl, carriers, ports, bout, fc, pl, B, out):
    """Apply operator ``op`` (OP_*) to every column of B (nv × ncols), writing ``out``. Returns 0, or
    1 + the flat index of the first non-finite entry of B."""
    for r in range(B.shape[0]):
        for c in range(B.shape[1]):
            if not np.isfinite(B[r, c]):
                return 1 + r * B.shape[1] + c
    n = B.shape[0]
    f = np.empty((bout.shape[0], 6))
    t = np.empty(max(n, 1))
    x = np.empty(n)
    y = np.empty(n)
    for c in range(B.shape[1]):
        for r in range(n):
            x[r] = B[r, c]
        if op == OP_L or op == OP_LINV:
            c_sweep_up(cl, carriers, ports, bout, fc, pl, x, y, f, op == OP_LINV)
        elif op == OP_LT or op == OP_LINVT:
            c_sweep_down(cl, carriers, ports, bout, fc, pl, x, y, f, op == OP_LINVT)
        elif op == OP_D or op == OP_DINV:
            c_block_mul(cl, fc, x, y, t, op == OP_D)
        elif op == OP_M:  # L D Lᵀ
            c_sweep_down(cl, carriers, ports, bout, fc, pl, x, y, f, False)
            c_block_mul(cl, fc, y, x, t, True)
            c_sweep_up(cl, carriers, ports, bout, fc, pl, x, y, f, False)
        else:  # OP_MINV: L⁻ᵀ D⁻¹ L⁻¹
            c_sweep_up(cl, carriers, ports, bout, fc, pl, x, y, f, True)
            c_block_mul(cl, fc, y, x, t, False)
            c_sweep_down(cl, carriers, ports, bout, fc, pl, x, y, f, True)
        for r in range(n):
            out[r, c] = y[r]
    return 0


@njit(cache=True)
def c_logdet(cl, fc):
    """log det 𝓜 = Σ_𝒢 log det 𝖣_𝒢."""
    s = 0.0
    for k in range(1, cl.shape[0]):
        m = cl[k, X_M]
        C = d_offset(cl, k) + m * m
        for r in range(m):
            s += 2.0 * math.log(fc[C + r * m + r])
    return s
