"""Compiled baselines (Chignoli et al. 2024 §II-C…II-E, spec §2.7): one Numba kernel per call.

Every kernel starts from the cluster state, evaluates ``G``, ``g`` (and ``K``, ``k``) with the cluster
constraint tapes (:func:`loopdyn.baselines.compiled.compiled_maps_core`), then runs the spanning
tree's kernels (``rnea_core``, ``crba_core``, the ``LᵀL`` factorisation) and dense linear algebra
written here (Cholesky, triangular solves, dense products), as GRBDA's ``RigidBodyTreeModel`` does in
C++:

* :func:`projected_rnea_kernel` — ``τ = Gᵀ RNEA_span(q_s, v_s, G ÿ + g)`` (spec §2.7.1);
* :func:`projection_kernel` — ``ÿ = (GᵀHG)⁻¹(τ − Gᵀ(C + H g))``, dense Cholesky (§2.7.3, paper
  eq. (8));
* :func:`lagrange_kernel` — the KKT system ``[H Kᵀ; K 0][q̈; −λ] = [τ_span − C; k]`` (§2.7.4, paper
  eq. (6)) with a dense Cholesky of H (``method = 0``) or the sparse ``H = LᵀL`` (``method = 1``);
* :func:`projected_delassus_kernel` — ``Λ⁻¹ = J (GᵀHG)⁻¹ Jᵀ``, ``J = J_span G`` (§2.7.5).

The model-dependent arrays are the first twelve arguments (see :class:`loopdyn.baselines.calls.Pack`):
the cluster model's ``ib, ic, cb, wc, code, consts, table, outputs`` (the constraint tapes), the
spanning tree's ``ib, ws``, an integer pack ``ix`` and a float scratch ``sc``.

``ix`` = ``[tree, nq_span, nv_span, nv, nc, nk, m_cap]``, then ``krow`` (nk: the first row of each
cluster in K), the LᵀL dof parents ``λ`` (nv_span) and the spanning index of every independent
velocity (nv). ``tree = 1`` for a model without constraints (``G = 1``, ``g = 0``; the cluster arrays
are then placeholders). ``sc`` holds the scratch of :func:`regions` and, persistently, the rows of K
of the explicit clusters (``K0``).

Kernels return 0, a :mod:`loopdyn.algorithms.status` code, or a negative code of this module
(a dense factorisation that failed: :data:`NOT_PD_PROJECTED`, :data:`NOT_PD_MASS`, :data:`NOT_PD_GTG`,
:data:`NOT_PD_SCHUR`).
"""

from __future__ import annotations

import math

import numpy as np

from ..algorithms.borrow import borrowed
from ..algorithms.cluster_kinematics import validate_cluster_state
from ..algorithms.common import check_configuration, check_forces, check_vector, kernel, s_column
from ..algorithms.crba import crba_core, ltl_in_place, ltl_solve, ltl_solve_transposed
from ..algorithms.rnea import rnea_core
from ..jit import inlined, njit, shared
from ..model import layout as L
from ..spatial import ops
from .compiled import compiled_maps_core

#: negative statuses: which dense matrix was not positive definite
NOT_PD_PROJECTED = -1  # GᵀHG
NOT_PD_MASS = -2  # the spanning tree's H
NOT_PD_GTG = -3  # GᵀG (G without full column rank)
NOT_PD_SCHUR = -4  # K H⁻¹ Kᵀ (redundant loop constraints)

HEADER = 7  # entries of ix before krow


# ---------------------------------------------------------------------------------------------
# the scratch layout
@njit(cache=True)
def scratch_size(nqs, nvs, nv, nc, m):
    """Floats of ``sc`` for the given sizes (``m``: Delassus rows the scratch is sized for)."""
    return regions_offsets(nqs, nvs, nv, nc, m)[-1]


@inlined
def regions_offsets(nqs, nvs, nv, nc, m):
    """Offsets of the regions of ``sc`` (see :func:`regions`), and the total size last."""
    mx = max(nc, m) + 1
    sizes = (nc * nvs, nqs, nvs, nvs * nv, nvs, nc * nvs, nc, nvs * nvs, nvs, nvs, nvs, nvs * nv, nv * nv,
             nc * (nc + 1), nvs * mx, m * nvs, m * nv, max(max(nvs, nv), mx))  # fmt: skip
    out = [0] * (len(sizes) + 1)
    for r in range(len(sizes)):
        out[r + 1] = out[r] + sizes[r]
    return (out[0], out[1], out[2], out[3], out[4], out[5], out[6], out[7], out[8], out[9], out[10], out[11],
            out[12], out[13], out[14], out[15], out[16], out[17], out[18])  # fmt: skip


@inlined
def regions(ix, sc):
    """Views of ``sc``: K0 (explicit rows of K, persistent), q_s, v_s, G, g, K, k, H, C, W, Z (zeros),
    HG, A (nv × nv), S (nc × (nc + 1): the Schur complement and a column), X (nv_span × (max(nc, m)
    + 1)), J (m × nv_span), Jg (m × nv), y."""
    nqs, nvs, nv, nc, m = ix[1], ix[2], ix[3], ix[4], ix[6]
    o = regions_offsets(nqs, nvs, nv, nc, m)
    mx = max(nc, m) + 1
    return (
        sc[o[0] : o[1]].reshape((nc, nvs)),
        sc[o[1] : o[2]],
        sc[o[2] : o[3]],
        sc[o[3] : o[4]].reshape((nvs, nv)),
        sc[o[4] : o[5]],
        sc[o[5] : o[6]].reshape((nc, nvs)),
        sc[o[6] : o[7]],
        sc[o[7] : o[8]].reshape((nvs, nvs)),
        sc[o[8] : o[9]],
        sc[o[9] : o[10]],
        sc[o[10] : o[11]],
        sc[o[11] : o[12]].reshape((nvs, nv)),
        sc[o[12] : o[13]].reshape((nv, nv)),
        sc[o[13] : o[14]].reshape((nc, nc + 1)),
        sc[o[14] : o[15]].reshape((nvs, mx)),
        sc[o[15] : o[16]].reshape((m, nvs)),
        sc[o[16] : o[17]].reshape((m, nv)),
        sc[o[17] : o[18]],
    )


# ---------------------------------------------------------------------------------------------
# dense linear algebra (small, in place)
@inlined
def dot_rows(A, i, B, j, n):
    """``Σ_{k<n} A[i, k] B[j, k]`` with four partial sums (independent chains: no FMA latency stall)."""
    s0 = s1 = s2 = s3 = 0.0
    k = 0
    while k + 4 <= n:
        s0 += A[i, k] * B[j, k]
        s1 += A[i, k + 1] * B[j, k + 1]
        s2 += A[i, k + 2] * B[j, k + 2]
        s3 += A[i, k + 3] * B[j, k + 3]
        k += 4
    while k < n:
        s0 += A[i, k] * B[j, k]
        k += 1
    return (s0 + s1) + (s2 + s3)


@inlined
def cholesky_in_place(A, n):
    """Overwrite the lower triangle of ``A[:n, :n]`` with L, ``A = L Lᵀ`` (Cholesky–Crout by rows;
    reads the lower triangle only). False if a pivot is not positive."""
    for j in range(n):
        d = A[j, j] - dot_rows(A, j, A, j, j)
        if not d > 0.0:
            return False
        d = math.sqrt(d)
        A[j, j] = d
        for i in range(j + 1, n):
            A[i, j] = (A[i, j] - dot_rows(A, i, A, j, j)) / d
    return True


@inlined
def cholesky_solve(Lf, n, B, p):
    """``B[:n, :p] ← (L Lᵀ)⁻¹ B[:n, :p]`` with L in the lower triangle of ``Lf`` (forward, then backward
    substitution; rows of B updated as a whole, so the inner loops run over the right-hand sides)."""
    for i in range(n):
        for k in range(i):
            lik = Lf[i, k]
            if lik != 0.0:
                for c in range(p):
                    B[i, c] -= lik * B[k, c]
        d = Lf[i, i]
        for c in range(p):
            B[i, c] /= d
    for i in range(n - 1, -1, -1):
        for k in range(i + 1, n):
            lki = Lf[k, i]
            if lki != 0.0:
                for c in range(p):
                    B[i, c] -= lki * B[k, c]
        d = Lf[i, i]
        for c in range(p):
            B[i, c] /= d


@inlined
def matmul(A, B, out):
    """``out = A B`` (dense; row updates, so the inner loop runs over the columns of B)."""
    n, p = A.shape[0], B.shape[1]
    for i in range(n):
        for c in range(p):
            out[i, c] = 0.0
        for k in range(A.shape[1]):
            a = A[i, k]
            if a != 0.0:
                for c in range(p):
                    out[i, c] += a * B[k, c]


@inlined
def gt_mul(G, B, out):
    """``out = Gᵀ B`` (dense)."""
    n, p = G.shape[1], B.shape[1]
    for i in range(n):
        for c in range(p):
            out[i, c] = 0.0
    for k in range(G.shape[0]):
        for i in range(n):
            gki = G[k, i]
            if gki != 0.0:
                for c in range(p):
                    out[i, c] += gki * B[k, c]


@inlined
def gt_vec(G, x, out):
    """``out = Gᵀ x``."""
    for i in range(G.shape[1]):
        out[i] = 0.0
    for k in range(G.shape[0]):
        xk = x[k]
        for i in range(G.shape[1]):
            out[i] += G[k, i] * xk


@inlined
def g_vec(G, y, g, out):
    """``out = G y + g`` (G has few non-zeros per row: they alone are multiplied)."""
    for k in range(G.shape[0]):
        s = g[k]
        for i in range(G.shape[1]):
            gki = G[k, i]
            if gki != 0.0:
                s += gki * y[i]
        out[k] = s


# ---------------------------------------------------------------------------------------------
# the spanning state and the constraint maps
@njit(cache=True)
def validate_state(ib, ic, cb, ibs, ix, q, v, x, fext):
    """Status of (q, v, x, f_ext): the cluster state's checks, or the tree's for a tree. An empty
    ``x`` is 'not given'."""
    if ix[0] == 0:
        return validate_cluster_state(ib, ic, cb, q, v, x, fext, x.shape[0] != 0)
    st = check_configuration(ibs, q)
    if st == 0:
        st = check_vector(v, ix[3], 1)
    if st == 0 and x.shape[0] != 0:
        st = check_vector(x, ix[3], 2)
    if st == 0:
        st = check_forces(ibs, fext)
    return st


@shared
def spanning_maps(ib, ic, cb, wc, code, consts, table, outputs, ix, sc, q, v):
    """q_s, v_s, G, g, K, k (the regions of ``sc``) at the cluster state (q, v), validated. Returns
    a status (a cluster off its constraints, a singular K_d)."""
    K0, qs, vs, G, g, K, k = regions(ix, sc)[:7]
    nqs, nvs = ix[1], ix[2]
    G[:, :] = 0.0
    g[:] = 0.0
    if ix[0] != 0:  # a tree: G = 1, g = 0
        for j in range(nqs):
            qs[j] = q[j]
        for j in range(nvs):
            vs[j] = v[j]
            G[j, j] = 1.0
        return 0
    K[:, :] = K0  # the explicit clusters' constant rows; implicit rows: zero, then the tapes'
    k[:] = 0.0
    krow = ix[HEADER : HEADER + ix[5]]
    st = compiled_maps_core(ib, ic, cb, wc, code, consts, table, outputs, q, v, krow, G, g, K, k)
    if st != 0:
        return st
    o, ov = ic[0, L.C0_QS], ic[0, L.C0_QDS]
    for j in range(nqs):
        qs[j] = wc[o + j]
    for j in range(nvs):
        vs[j] = wc[ov + j]
    return 0


# ---------------------------------------------------------------------------------------------
# projected RNEA (spec §2.7.1)
_SIG = "int64[:, ::1], int64[:, ::1], int64[::1], float64[::1], int64[:, ::1], float64[::1], int64[:, ::1], int64[::1], int64[:, ::1], float64[:, ::1], int64[::1], float64[::1], "  # noqa: E501


@kernel("int64(" + _SIG + "float64[::1], float64[::1], float64[::1], float64[:, ::1], float64[::1])")
def projected_rnea_kernel(ib, ic, cb, wc, code, consts, table, outputs, ibs, wss, ix, sc, q, v, a, fext, tau):
    """``tau = Gᵀ RNEA_span(q_s, v_s, G a + g, f_ext)`` (nv)."""
    (ib, ic, cb, wc, code, consts, table, outputs, ibs, wss, ix, sc, q, v, a, fext, tau) = borrowed(
        (ib, ic, cb, wc, code, consts, table, outputs, ibs, wss, ix, sc, q, v, a, fext, tau)
    )
    st = validate_state(ib, ic, cb, ibs, ix, q, v, a, fext)
    if st == 0:
        st = spanning_maps(ib, ic, cb, wc, code, consts, table, outputs, ix, sc, q, v)
    if st != 0:
        return st
    R = regions(ix, sc)
    qs, vs, G, g, C, W = R[1], R[2], R[3], R[4], R[8], R[9]
    g_vec(G, a, g, W)  # q̈_span = G ÿ + g
    rnea_core(ibs, wss, qs, vs, W, fext, C, True)
    gt_vec(G, C, tau)
    return 0


# ---------------------------------------------------------------------------------------------
# projection forward dynamics (spec §2.7.3)
@inlined
def mass_and_bias(ibs, wss, ix, sc, fext):
    """H (CRBA) and C = RNEA_span(q_s, v_s, 0, f_ext) on the spanning tree, into their regions."""
    R = regions(ix, sc)
    qs, vs, H, C, Z = R[1], R[2], R[7], R[8], R[10]
    crba_core(ibs, wss, qs, H)
    Z[:] = 0.0
    rnea_core(ibs, wss, qs, vs, Z, fext, C, True)


@kernel("int64(" + _SIG + "float64[::1], float64[::1], float64[::1], float64[:, ::1], float64[::1])")
def projection_kernel(ib, ic, cb, wc, code, consts, table, outputs, ibs, wss, ix, sc, q, v, tau, fext, out):
    """``out = [ÿ; q̈_span]`` with ``ÿ = (GᵀHG)⁻¹(τ − Gᵀ(C + H g))`` and ``q̈_span = G ÿ + g``."""
    (ib, ic, cb, wc, code, consts, table, outputs, ibs, wss, ix, sc, q, v, tau, fext, out) = borrowed(
        (ib, ic, cb, wc, code, consts, table, outputs, ibs, wss, ix, sc, q, v, tau, fext, out)
    )
    st = validate_state(ib, ic, cb, ibs, ix, q, v, tau, fext)
    if st == 0:
        st = spanning_maps(ib, ic, cb, wc, code, consts, table, outputs, ix, sc, q, v)
    if st != 0:
        return st
    mass_and_bias(ibs, wss, ix, sc, fext)
    R = regions(ix, sc)
    G, g, H, C, HG, A, y = R[3], R[4], R[7], R[8], R[11], R[12], R[17]
    nvs, nv = ix[2], ix[3]
    matmul(H, G, HG)
    gt_mul(G, HG, A)  # A = GᵀHG
    for c in range(nvs):  # C + H g (g is zero but at dependent coordinates of implicit clusters)
        gc = g[c]
        if gc != 0.0:
            for r in range(nvs):
                C[r] += H[r, c] * gc
    gt_vec(G, C, y)
    for i in range(nv):
        y[i] = tau[i] - y[i]
    if not cholesky_in_place(A, nv):
        return NOT_PD_PROJECTED
    ops.cholesky_solve_vector(A, nv, y)
    for i in range(nv):
        out[i] = y[i]
    g_vec(G, y, g, out[nv : nv + nvs])
    return 0


# ---------------------------------------------------------------------------------------------
# Lagrange multipliers (spec §2.7.4)
@inlined
def lifted_forces(ix, sc, tau):
    """W ← τ_span − C with ``τ_span = G (GᵀG)⁻¹ τ`` (G from :func:`spanning_maps`, C from
    :func:`mass_and_bias`). False if GᵀG is singular."""
    R = regions(ix, sc)
    G, C, W, A, y = R[3], R[8], R[9], R[12], R[17]
    nvs, nv = ix[2], ix[3]
    gt_mul(G, G, A)
    if not cholesky_in_place(A, nv):
        return False
    for i in range(nv):
        y[i] = tau[i]
    ops.cholesky_solve_vector(A, nv, y)
    for r in range(nvs):
        s = -C[r]
        for i in range(nv):
            s += G[r, i] * y[i]
        W[r] = s
    return True


@inlined
def schur_solve(ix, sc, X, lam):
    """``λ = S⁻¹(k − K X[:, nc])`` with ``S = K H⁻¹ Kᵀ`` in the S region and ``X[:, nc] = H⁻¹ τ'``.
    False if S is not positive definite (redundant constraints)."""
    R = regions(ix, sc)
    nc = ix[4]
    K, k, S = R[5], R[6], R[13][:, :nc]
    if not cholesky_in_place(S, nc):
        return False
    for r in range(nc):
        lam[r] = k[r]
    for r in range(nc):
        s = 0.0
        for c in range(K.shape[1]):
            s += K[r, c] * X[c, nc]
        lam[r] -= s
    ops.cholesky_solve_vector(S, nc, lam)
    return True


@njit(cache=True)
def lagrange_dense(ix, sc, lam):
    """Dense KKT (GRBDA ``LagrangeMultiplierEigen``): Cholesky of H, ``S = K H⁻¹ Kᵀ``,
    ``λ = S⁻¹(k − K H⁻¹ τ')``, ``q̈ = H⁻¹(τ' + Kᵀ λ)`` into the first column of X. Returns a status."""
    R = regions(ix, sc)
    nvs, nc = ix[2], ix[4]
    K, H, W, S, X = R[5], R[7], R[9], R[13][:, :nc], R[14]
    for r in range(nvs):  # X = [Kᵀ | τ']
        for c in range(nc):
            X[r, c] = K[c, r]
        X[r, nc] = W[r]
    if not cholesky_in_place(H, nvs):
        return NOT_PD_MASS
    cholesky_solve(H, nvs, X, nc + 1)  # [H⁻¹Kᵀ | H⁻¹τ']
    matmul(K, X[:, :nc], S)  # S = K H⁻¹ Kᵀ
    if nc and not schur_solve(ix, sc, X, lam):
        return NOT_PD_SCHUR
    for r in range(nvs):
        s = X[r, nc]
        for c in range(nc):
            s += X[r, c] * lam[c]
        X[r, 0] = s
    return 0


@njit(cache=True)
def lagrange_ltl(ix, sc, lam):
    """KKT with the sparse ``H = LᵀL`` (GRBDA ``LagrangeMultiplierCustom``): ``[Y z] = L⁻ᵀ[Kᵀ τ']``,
    ``S = YᵀY``, ``λ = S⁻¹(k − Yᵀ z)``, ``q̈ = L⁻¹(z + Y λ)`` into the first column of X."""
    R = regions(ix, sc)
    nvs, nc = ix[2], ix[4]
    K, k, H, W, S1, X, y = R[5], R[6], R[7], R[9], R[13], R[14], R[17]
    S = S1[:, :nc]
    lamp = ix[HEADER + ix[5] : HEADER + ix[5] + nvs]
    if ltl_in_place(H, lamp) >= 0:
        return NOT_PD_MASS
    for r in range(nvs):
        for c in range(nc):
            X[r, c] = K[c, r]
        X[r, nc] = W[r]
    ltl_solve_transposed(H, lamp, X[:, : nc + 1])
    gt_mul(X[:, :nc], X[:, : nc + 1], S1)  # [S | Yᵀz] = Yᵀ [Y z], S = YᵀY
    for a in range(nc):
        lam[a] = k[a] - S1[a, nc]
    if nc:
        if not cholesky_in_place(S, nc):
            return NOT_PD_SCHUR
        ops.cholesky_solve_vector(S, nc, lam)
    for r in range(nvs):  # w = z + Y λ, then L⁻¹ w
        s = X[r, nc]
        for c in range(nc):
            s += X[r, c] * lam[c]
        y[r] = s
    for r in range(nvs):
        X[r, 0] = y[r]
    ltl_solve(H, lamp, X[:, :1])
    return 0


@kernel("int64(" + _SIG + "float64[::1], float64[::1], float64[::1], float64[:, ::1], int64, float64[::1])")
def lagrange_kernel(ib, ic, cb, wc, code, consts, table, outputs, ibs, wss, ix, sc, q, v, tau, fext, method,
                    out):  # fmt: skip
    """``out = [ÿ; q̈_span; λ]`` by Lagrange multipliers: ``method`` 0 dense Cholesky, 1 ``LᵀL``."""
    (ib, ic, cb, wc, code, consts, table, outputs, ibs, wss, ix, sc, q, v, tau, fext, method, out) = borrowed(
        (ib, ic, cb, wc, code, consts, table, outputs, ibs, wss, ix, sc, q, v, tau, fext, method, out)
    )
    st = validate_state(ib, ic, cb, ibs, ix, q, v, tau, fext)
    if st == 0:
        st = spanning_maps(ib, ic, cb, wc, code, consts, table, outputs, ix, sc, q, v)
    if st != 0:
        return st
    mass_and_bias(ibs, wss, ix, sc, fext)
    nvs, nv, nc = ix[2], ix[3], ix[4]
    if not lifted_forces(ix, sc, tau):
        return NOT_PD_GTG
    lam = out[nv + nvs : nv + nvs + nc]
    st = lagrange_dense(ix, sc, lam) if method == 0 else lagrange_ltl(ix, sc, lam)
    if st != 0:
        return st
    X = regions(ix, sc)[14]
    ind = ix[HEADER + ix[5] + nvs : HEADER + ix[5] + nvs + nv]
    for r in range(nvs):
        out[nv + r] = X[r, 0]
    for i in range(nv):  # ÿ = G⁺(q̈ − g): the independent entries (unit rows of G, g = 0 there)
        out[i] = X[ind[i], 0]
    return 0


# ---------------------------------------------------------------------------------------------
# projected Delassus / projected EFPA (spec §2.7.5)
@inlined
def world_placements(ibs, wss):
    """W_OR, W_OP of every body from the W_R, W_P that ``crba_core`` left."""
    for i in range(1, ibs[0, L.I0_NBODIES] + 1):
        par = ibs[i, L.I_PARENT]
        oR = ops.load9(wss, par, L.W_OR)
        t = ops.rot_vec(oR, ops.load3(wss, i, L.W_P))
        ops.store9(wss, i, L.W_OR, ops.rot_mul(oR, ops.load9(wss, i, L.W_R)))
        ops.store3(wss, i, L.W_OP, (wss[par, L.W_OP] + t[0], wss[par, L.W_OP + 1] + t[1],
                                    wss[par, L.W_OP + 2] + t[2]))  # fmt: skip


@inlined
def spanning_jacobian(ibs, wss, cbody, crow, Kc, J):
    """``J`` (m × nv_span): row r of constraint e = ``K[r]`` (acting on body motion [ω; v] in body
    coordinates) times ``ᵇX_j S_j`` for every joint j on the body's path (zero elsewhere)."""
    J[:, :] = 0.0
    for e in range(cbody.shape[0]):
        b = cbody[e]
        if b == 0:
            continue
        oRb, opb = ops.load9(wss, b, L.W_OR), ops.load3(wss, b, L.W_OP)
        j = b
        while j > 0:
            oR, op = ops.load9(wss, j, L.W_OR), ops.load3(wss, j, L.W_OP)
            for kk in range(ibs[j, L.I_NV]):
                col = ops.motion_to_child(oRb, opb, ops.motion_to_parent(oR, op, s_column(ibs, wss, j, kk)))
                c = ibs[j, L.I_IV] + kk
                for r in range(crow[e], crow[e + 1]):
                    J[r, c] = (Kc[r, 0] * col[0] + Kc[r, 1] * col[1] + Kc[r, 2] * col[2] + Kc[r, 3] * col[3]
                               + Kc[r, 4] * col[4] + Kc[r, 5] * col[5])  # fmt: skip
            j = ibs[j, L.I_PARENT]


@kernel("int64(" + _SIG + "float64[::1], int64[::1], int64[::1], float64[:, ::1], float64[:, ::1])")
def projected_delassus_kernel(ib, ic, cb, wc, code, consts, table, outputs, ibs, wss, ix, sc, q, cbody, crow,
                              Kc, out):  # fmt: skip
    """``out = J (GᵀHG)⁻¹ Jᵀ`` (m × m, symmetrised) for the constraint rows (cbody, crow, Kc) of the
    spanning tree, ``J = J_span G``."""
    (ib, ic, cb, wc, code, consts, table, outputs, ibs, wss, ix, sc, q, cbody, crow, Kc, out) = borrowed(
        (ib, ic, cb, wc, code, consts, table, outputs, ibs, wss, ix, sc, q, cbody, crow, Kc, out)
    )
    R = regions(ix, sc)
    Z = R[10]
    nv, m = ix[3], crow[crow.shape[0] - 1]
    for i in range(nv):
        Z[i] = 0.0
    st = validate_state(ib, ic, cb, ibs, ix, q, Z[:nv], Z[:0], np.empty((0, 6)))
    if st == 0:
        st = spanning_maps(ib, ic, cb, wc, code, consts, table, outputs, ix, sc, q, Z[:nv])
    if st != 0:
        return st
    G, H, HG, A, X, J, Jg = R[3], R[7], R[11], R[12], R[14], R[15], R[16]
    crba_core(ibs, wss, R[1], H)
    world_placements(ibs, wss)
    spanning_jacobian(ibs, wss, cbody, crow, Kc, J[:m])
    matmul(H, G, HG)
    gt_mul(G, HG, A)
    if not cholesky_in_place(A, nv):
        return NOT_PD_PROJECTED
    Jm, Jgm = J[:m], Jg[:m]
    matmul(Jm, G, Jgm)  # J = J_span G
    for i in range(nv):  # X = Jᵀ, then A⁻¹ Jᵀ
        for r in range(m):
            X[i, r] = Jgm[r, i]
    cholesky_solve(A, nv, X, m)
    for r1 in range(m):
        for r2 in range(r1, m):
            s = 0.0
            for i in range(nv):
                s += Jgm[r1, i] * X[i, r2]
            out[r1, r2] = s
            out[r2, r1] = s  # symmetric by construction
    return 0
