"""The derivatives of the dynamics on implicit loops: how the spanning state moves with the independent
coordinates when G and g depend on the configuration (spec §2; Chignoli et al. 2024 §X name these
derivatives as the open step).

An implicit cluster (four-bar, five-bar, Tello's differentials) has ``n`` spanning coordinates ``q_s``
with ``φ(q_s) = 0``, ``m`` independent ones ``y = q_s[I]`` and ``nrow = n − m`` dependent ones D. Its
spanning rates are ``q̇_s = G ẏ``, ``q̈_s = G ÿ + g`` with (K = ∂φ/∂q_s, K_D square)

    G = P[1; −K_D⁻¹ K_I],   g = P[0; K_D⁻¹ k],   k = −K̇ q̇_s = −∂²φ(q̇_s, q̇_s).                 (L1)

A tangent step δ_l of the cluster's independent coordinate l moves q_s by ``u = G e_l``
(``loopdyn.integrate`` re-closes the loop) and, ẏ and ÿ held, changes only this cluster's block of G
and g. Differentiating ``K G = 0`` (G's independent rows fixed) and ``K_D g_D = k`` along u, with q̇_s
moving by ``w = (∂G/∂δ_l) ẏ`` (∂K[u] := ∂²φ(u, ·)):

    ∂G_D/∂δ_l = −K_D⁻¹ (∂K[u] G),                                                             (L2)
    ∂g_D/∂δ_l = K_D⁻¹ (−∂³φ(q̇_s, q̇_s, u) − 2 ∂²φ(q̇_s, w) − ∂K[u] g),                         (L3)

and along ẏ_l (u = 0, q̇_s moving by G e_l): ``∂g_D/∂ẏ_l = K_D⁻¹ (−2 ∂²φ(q̇_s, G e_l))``.          (L4)

The spanning state therefore moves, per δ_l, by ``(u, W_l, Zq_l) = (G e_l, ∂G_l ẏ, ∂G_l ÿ + ∂g_l)``
and, per ẏ_l, by ``(0, G e_l, Zv_l)`` with ``Zv_l = ∂g/∂ẏ_l``. With the spanning tree's derivatives
X_q, X_v, M_s (:mod:`.derivatives`, Carpentier & Mansard 2018) and its forces τ_s, the independent
coordinates' ``τ_y = Gᵀ τ_s`` has

    ∂τ_y/∂δ_l = Gᵀ (X_q G e_l + X_v W_l + M_s Zq_l) + (∂G/∂δ_l)ᵀ τ_s,                           (L5)
    ∂τ_y/∂ẏ_l = Gᵀ (X_v G e_l + M_s Zv_l),   ∂τ_y/∂ÿ = Gᵀ M_s G = H.                            (L6)

:func:`~.derivatives.c_rnea_derivatives_core` computes the ``Gᵀ X G`` terms for every model;
:func:`loop_corrections` adds the remaining terms of (L5)–(L6) for the implicit clusters.

The second and third derivatives of φ come from the cluster's own constraint program (the cluster
kernels' tape) run in Taylor arithmetic (:func:`loopdyn.constraints.taylor.taylor_sweep`): along the
line ``q_s + t q̇_s`` the coefficients of K are ``K_0 = K``, ``K_1 = ∂²φ(q̇_s, ·)`` and
``K_2 = ½ ∂³φ(q̇_s, q̇_s, ·)``; along ``q_s + t u`` the first one is ``∂K[u]``. So a cluster costs three
sweeps of its program's φ, K prefix — coefficient 0; coefficient 1 along q̇ and along every u = G e_l
at once (:func:`loopdyn.constraints.taylor.tangent_sweep`, m + 1 lanes: one per direction cost Tello's
RNEA derivatives 5 % more, the delta robot's 15 %); coefficient 2 along q̇ — and no symbolic
differentiation (the first version of these terms differentiated the sympy rows three times per model).
Where the Data has loaded the program's native Taylor function
(:func:`loopdyn.constraints.native.generate_taylor_source`: the same operations in the same order as
straight-line code, bit-identical; ``Data.load_taylor_programs``), one call of it replaces the three
sweeps (Tello's RNEA derivatives 16.9 → 12.6 µs, the delta robot's 25 → 9).

``terms`` layout, implicit clusters in order, then for each independent coordinate l (cluster-local
coordinate order, n rows): ``∂G/∂δ_l`` (n × m, row-major), ``W_l`` (n), ``Zq_l`` (n), ``Zv_l`` (n).
"""

from __future__ import annotations

import numpy as np

from ..constraints.tape import (
    T_C,
    T_CONST_START,
    T_K_LEN,
    T_N,
    T_NATIVE_TAYLOR,
    T_NREG,
    T_OUT_START,
    T_TAYLOR_M,
    call_native,
)
from ..constraints.taylor import K_coefficient, tangent_sweep, taylor_sweep
from ..jit import inlined, lazy, njit
from ..model import layout as L
from .borrow import STACK_FLOATS, acquire, borrowed, model_views, release, stack_floats, view
from .cluster_kinematics import kd_inverse_at, lu_solve_inplace, tapes
from .common import kernel
from .status import DATA_IN_USE, LOOP_CODE_MISSING, SINGULAR_CLUSTER, STATUS_BASE

__all__ = [
    "has_implicit",
    "terms_size",
    "term_offsets",
    "kd_inverse",
    "loop_tangent_terms",
    "loop_corrections",
    "call_loop_tangent_terms",
    "call_loop_corrections",
    "loop_terms_kernel",
]


@njit(cache=True)
def has_implicit(ic):
    """Whether the cluster table has an implicit cluster."""
    for k in range(1, ic[0, L.C0_NCL] + 1):
        if ic[k, L.C_KIND] == L.IMPLICIT:
            return True
    return False


@njit(cache=True)
def terms_size(ic):
    """Floats of :func:`loop_tangent_terms`'s output: Σ over implicit clusters of ``m (n m + 3 n)``."""
    size = 0
    for k in range(1, ic[0, L.C0_NCL] + 1):
        if ic[k, L.C_KIND] == L.IMPLICIT:
            n, m = ic[k, L.C_N], ic[k, L.C_M]
            size += m * (n * m + 3 * n)
    return size


@inlined
def term_offsets(at, n, m):
    """Offsets of one independent coordinate's block of ``terms`` starting at ``at`` (module docstring):
    ``(∂G/∂δ_l, W_l, Zq_l, Zv_l, the next block)`` for a cluster of n spanning, m independent coordinates."""
    W = at + n * m
    return at, W, W + n, W + 2 * n, W + 3 * n


@njit(cache=True)
def kd_inverse(outputs, o, nK, T, idx, dep, nrow, KD, KDinv, at):
    """``K_D⁻¹`` (``nrow × nrow``, row-major) into ``KDinv[at:]`` from the order-0 registers ``T`` of a
    loop's program (K's registers at ``outputs[o:]``, ``nK`` columns; the dependent columns at
    ``idx[dep : dep + nrow]``), by the cluster kernels' LU (:func:`.cluster_kinematics.lu_solve_inplace`,
    its singularity test); ``KD``: nrow² scratch. False if K_D is singular."""
    for r in range(nrow):
        for l in range(nrow):
            i = outputs[o + r * nK + idx[dep + l]]
            KD[r * nrow + l] = T[i, 0] if i >= 0 else 0.0
            KDinv[at + r * nrow + l] = 1.0 if r == l else 0.0
    return lu_solve_inplace(KD, 0, nrow, KDinv, at, nrow)


@inlined
def two_row_terms(cb, wc, G, dep, n, m, iv, KK, cn, i00, i01, i10, i11, gl, v, a, terms, at):
    """(L2)–(L4) of an implicit cluster with two kept constraint rows (every built-in loop) into
    ``terms[at:]``, with K_D⁻¹ = [[i00, i01], [i10, i11]] and the sums in registers; K's coefficients
    in ``KK`` as :func:`loop_tangent_terms` left them (blocks of ``cn`` floats: K, K_1, K_2, then ∂K[G e_l]
    per l) and ``gl`` = g on the cluster's coordinates. ∂G, W, Zq and Zv vanish outside the two dependent
    rows d0, d1. The general steps of :func:`loop_tangent_terms` go through its scratch, which shares
    memory with ``terms`` as far as the compiler knows: each store made it read the sums back. Returns
    the offset after the cluster's blocks."""
    d0, d1 = cb[dep], cb[dep + 1]
    K1, K2 = cn, 2 * cn
    for l in range(m):
        dG, W, Zq, Zv, nxt = term_offsets(at, n, m)
        dK = (3 + l) * cn  # ∂K[u], u = G e_l
        b0 = 0.0  # ∂²φ(q̇, u) = K_1 u
        b1 = 0.0
        c0 = 0.0  # ½ ∂³φ(q̇, q̇, u) = K_2 u
        c1 = 0.0
        e0 = 0.0  # ∂K[u] g
        e1 = 0.0
        for j in range(n):
            u = wc[G + j * m + l]
            b0 += KK[K1 + j] * u
            b1 += KK[K1 + n + j] * u
            c0 += KK[K2 + j] * u
            c1 += KK[K2 + n + j] * u
            e0 += KK[dK + j] * gl[j]
            e1 += KK[dK + n + j] * gl[j]
        for j in range(dG, nxt):
            terms[j] = 0.0
        w0 = 0.0  # W = ∂G ẏ and ∂G ÿ at the dependent rows
        w1 = 0.0
        y0 = 0.0
        y1 = 0.0
        for c in range(m):  # ∂G_D[:, c] = −K_D⁻¹ (∂K[u] G e_c) (L2)
            p0 = 0.0
            p1 = 0.0
            for j in range(n):
                x = wc[G + j * m + c]
                p0 += KK[dK + j] * x
                p1 += KK[dK + n + j] * x
            x0 = -(i00 * p0 + i01 * p1)
            x1 = -(i10 * p0 + i11 * p1)
            terms[dG + d0 * m + c] = x0
            terms[dG + d1 * m + c] = x1
            w0 += x0 * v[iv + c]
            w1 += x1 * v[iv + c]
            y0 += x0 * a[iv + c]
            y1 += x1 * a[iv + c]
        # (L3): −∂³φ(q̇, q̇, u) − 2 ∂²φ(q̇, w) − ∂K[u] g, w nonzero at d0, d1 only
        r0 = -2.0 * (c0 + KK[K1 + d0] * w0 + KK[K1 + d1] * w1) - e0
        r1 = -2.0 * (c1 + KK[K1 + n + d0] * w0 + KK[K1 + n + d1] * w1) - e1
        terms[W + d0] = w0
        terms[W + d1] = w1
        terms[Zq + d0] = y0 + i00 * r0 + i01 * r1
        terms[Zq + d1] = y1 + i10 * r0 + i11 * r1
        terms[Zv + d0] = -2.0 * (i00 * b0 + i01 * b1)  # (L4)
        terms[Zv + d1] = -2.0 * (i10 * b0 + i11 * b1)
        at = nxt
    return at


@lazy(
    "int64(int64[:, ::1], int64[:, ::1], int64[::1], float64[::1], int64[:, ::1], float64[::1], "
    "int64[:, ::1], int64[::1], float64[:], float64[:], float64[::1])",
    missing_status=LOOP_CODE_MISSING * STATUS_BASE,
    needed_by="loop_derivatives",
)  # compiled when a model with implicit loops first needs it (loopdyn.jit.lazy); called once a call
def loop_tangent_terms(ib, ic, cb, wc, code, consts, table, outputs, v, a, terms):
    """(L2)–(L4) for every implicit cluster into ``terms`` (module docstring), at the spanning state and
    G that the cluster kinematics left in wc for (q, v, a). Returns a status (``K_D`` singular names the
    cluster: the cluster kinematics would have refused it first)."""
    # uncounted here too: the call boundary hides that the caller's arrays are borrowed
    ib, ic, cb, wc, code, consts, table, outputs, v, a, terms = borrowed(
        (ib, ic, cb, wc, code, consts, table, outputs, v, a, terms)
    )
    QS, QDS, QDDS = ic[0, L.C0_QS], ic[0, L.C0_QDS], ic[0, L.C0_QDDS]
    nreg = 1
    width = 1
    mmax = 1
    kk = 1
    for k in range(1, ic[0, L.C0_NCL] + 1):
        if ic[k, L.C_KIND] == L.IMPLICIT:
            p = ic[k, L.C_PROG]
            nreg = max(nreg, table[p, T_NREG])
            width = max(width, ic[k, L.C_N])
            mmax = max(mmax, ic[k, L.C_M])
            kk = max(kk, (3 + ic[k, L.C_M]) * table[p, T_C] * table[p, T_N])
    # the scratch below in one buffer, in this pass's stack frame when it fits (fourteen heap arrays
    # a call cost the four-bar's RNEA derivatives 0.2 µs of 2.9)
    w6 = width * width
    nl = mmax + 1
    need = nreg * (6 + 2 * nl) + 6 + 3 * w6 + 2 * width + kk + width * (2 + mmax)
    buf = stack_floats() if need <= STACK_FLOATS else np.empty(need)
    buf = borrowed((buf,))[0]
    T = view(buf, 0, (nreg, 3))  # Taylor coefficients 0..2 of every register, and their companions
    A = view(buf, 3 * nreg, (nreg, 3))
    D = view(buf, 6 * nreg, (nreg, nl))  # coefficient 1 along q̇ (lane 0) and along G e_l (lane 1 + l)
    DA = view(buf, (6 + nl) * nreg, (nreg, nl))
    zeroed = False  # the registers, zeroed before the first interpreted sweep
    off = (6 + 2 * nl) * nreg
    s1 = view(buf, off, (3,))
    s2 = view(buf, off + 3, (3,))
    off += 6
    KD = view(buf, off, (w6,))  # K_D, then its LU
    KDi = view(buf, off + w6, (w6,))  # K_D⁻¹
    P = view(buf, off + 2 * w6, (w6,))  # ∂K[u] G (nrow × m)
    gl = view(buf, off + 3 * w6, (width,))
    rhs = view(buf, off + 3 * w6 + width, (width,))
    KK = view(buf, off + 3 * w6 + 2 * width, (kk,))  # K's coefficients (below), c × n blocks
    x_in = view(buf, off + 3 * w6 + 2 * width + kk, (width * (2 + mmax),))  # a native function's input
    at = 0
    for k in range(1, ic[0, L.C0_NCL] + 1):
        if ic[k, L.C_KIND] != L.IMPLICIT:
            continue
        first, iv = ic[k, L.C_FIRST], ic[k, L.C_IV]
        n, m, nrow = ic[k, L.C_N], ic[k, L.C_M], ic[k, L.C_NROW]
        G, dep, p = ic[k, L.C_G], ic[k, L.C_DEP], ic[k, L.C_PROG]
        o = table[p, T_OUT_START] + table[p, T_C]  # the registers of K's rows (n = table[p, T_N] columns)
        cn = table[p, T_C] * n  # one block of KK: K's c × n entries, row-major
        for j in range(n):  # the line q_s + t q̇_s, and g = q̈_s − G ÿ on it
            b = cb[first + j]
            sv = ib[b, L.I_IV]
            T[j, 0] = wc[QS + ib[b, L.I_IQ]]
            T[j, 1] = wc[QDS + sv]
            T[j, 2] = 0.0
            x = wc[QDDS + sv]
            for l in range(m):
                x -= wc[G + j * m + l] * a[iv + l]
            gl[j] = x
        # KK: K (coefficient 0), coefficients 1 and 2 along q̇ (K_1 = ∂²φ(q̇, ·), K_2 = ½ ∂³φ(q̇, q̇, ·))
        # and coefficient 1 along each u = G e_l (the lines q_s + t u: ∂K[u], (L2))
        if table[p, T_NATIVE_TAYLOR] != 0 and table[p, T_TAYLOR_M] == m:
            for j in range(n):  # the program's native Taylor function (loopdyn.constraints.native)
                x_in[j] = T[j, 0]
                x_in[n + j] = T[j, 1]
            for j in range(n * m):
                x_in[2 * n + j] = wc[G + j]
            call_native(table[p, T_NATIVE_TAYLOR], x_in, x_in, KK, KK, consts[table[p, T_CONST_START] :])
        else:  # interpreted: coefficient 0; coefficient 1 along m + 1 lanes; coefficient 2 along q̇
            if not zeroed:
                for j in range(3 * n, (6 + 2 * nl) * nreg):  # (T[:n] holds this cluster's line)
                    buf[j] = 0.0
                zeroed = True
            stop = table[p, T_K_LEN]
            taylor_sweep(code, consts, table, p, stop, 0, T, A, s1, s2)
            for j in range(n):
                D[j, 0] = T[j, 1]
                for l in range(m):
                    D[j, 1 + l] = wc[G + j * m + l]
            tangent_sweep(code, consts, table, p, stop, T, A, D, DA, m + 1, s1, s2)
            for r in range(nreg):  # lane 0 as coefficient 1 (the lane sweep used T[:, 1] as scratch)
                T[r, 1] = D[r, 0]
                A[r, 1] = DA[r, 0]
            taylor_sweep(code, consts, table, p, stop, 2, T, A, s1, s2)
            c = table[p, T_C]
            K_coefficient(outputs, o, n, c, T, 0, KK, 0)
            K_coefficient(outputs, o, n, c, T, 1, KK, cn)
            K_coefficient(outputs, o, n, c, T, 2, KK, 2 * cn)
            for l in range(m):
                K_coefficient(outputs, o, n, c, D, 1 + l, KK, (3 + l) * cn)
        if nrow == 2:  # K_D⁻¹ as the cluster's coordinates left it (cluster_kinematics.implicit_two_rows)
            inv = kd_inverse_at(ic, k)
            at = two_row_terms(cb, wc, G, dep, n, m, iv, KK, cn, wc[inv], wc[inv + 1], wc[inv + 2],
                               wc[inv + 3], gl, v, a, terms, at)  # fmt: skip
            continue
        for r in range(nrow):  # K_D⁻¹ by the cluster kernels' LU (its singularity test)
            for c in range(nrow):
                KD[r * nrow + c] = KK[r * n + cb[dep + c]]
                KDi[r * nrow + c] = 1.0 if r == c else 0.0
        if not lu_solve_inplace(KD, 0, nrow, KDi, 0, nrow):
            return SINGULAR_CLUSTER * STATUS_BASE + k
        K1 = KK[cn:]
        K2 = KK[2 * cn :]
        for l in range(m):
            dG, W, Zq, Zv, at = term_offsets(at, n, m)
            dK = KK[(3 + l) * cn :]  # ∂K[u], u = G e_l (L2)
            for j in range(n):  # u itself, where (L3) reads T[j, 1]
                T[j, 1] = wc[G + j * m + l]
            for s in range(nrow):  # P = ∂K[u] G
                for c in range(m):
                    x = 0.0
                    for j in range(n):
                        x += dK[s * n + j] * wc[G + j * m + c]
                    P[s * m + c] = x
            for j in range(n * m):
                terms[dG + j] = 0.0
            for r in range(nrow):  # ∂G_D = −K_D⁻¹ P (L2)
                row = cb[dep + r]
                for c in range(m):
                    x = 0.0
                    for s in range(nrow):
                        x -= KDi[r * nrow + s] * P[s * m + c]
                    terms[dG + row * m + c] = x
            for j in range(n):  # W = ∂G ẏ, and ∂G ÿ into Zq (zero on the independent rows)
                x = 0.0
                y = 0.0
                for c in range(m):
                    x += terms[dG + j * m + c] * v[iv + c]
                    y += terms[dG + j * m + c] * a[iv + c]
                terms[W + j] = x
                terms[Zq + j] = y
                terms[Zv + j] = 0.0
            for s in range(nrow):  # (L3): −∂³φ(q̇, q̇, u) − 2 ∂²φ(q̇, w) − ∂K[u] g, with ∂³φ(q̇, q̇, ·) = 2 K_2
                x = 0.0
                for j in range(n):
                    e = s * n + j
                    x -= 2.0 * (K2[e] * T[j, 1] + K1[e] * terms[W + j]) + dK[e] * gl[j]
                rhs[s] = x
            for r in range(nrow):
                x = 0.0
                for s in range(nrow):
                    x += KDi[r * nrow + s] * rhs[s]
                terms[Zq + cb[dep + r]] += x
            for s in range(nrow):  # (L4): −2 ∂²φ(q̇, G e_l)
                x = 0.0
                for j in range(n):
                    x -= 2.0 * K1[s * n + j] * T[j, 1]
                rhs[s] = x
            for r in range(nrow):
                x = 0.0
                for s in range(nrow):
                    x += KDi[r * nrow + s] * rhs[s]
                terms[Zv + cb[dep + r]] = x
    return 0


@lazy(
    "int64(int64[:, ::1], int64[:, ::1], int64[::1], float64[::1], float64[:, ::1], float64[:, ::1], "
    "float64[::1], float64[::1], float64[:, :], float64[:, :])",
    missing_status=LOOP_CODE_MISSING * STATUS_BASE,
    needed_by="loop_derivatives",
    fastmath={"contract"},
)  # as loop_tangent_terms: Mini Cheetah's first rnea_derivatives compiled neither (10.6 → 6 CPU-s)
def loop_corrections(ib, ic, cb, wc, GXv, GXm, taus, terms, dq, dv):
    """Add the implicit clusters' terms of (L5)–(L6) to ``dq`` = ``Gᵀ X_q G`` and ``dv`` = ``Gᵀ X_v G``:
    ``Gᵀ (X_v W_l + M_s Zq_l) + ∂G_lᵀ τ_s`` and ``Gᵀ M_s Zv_l`` in column ``iv + l``, from
    :func:`loop_tangent_terms`'s ``terms``, the columns of ``Gᵀ X_v`` (``GXv``) and ``Gᵀ M_s`` (``GXm``)
    at the dependent spanning coordinates (nv × ``ic[0, C0_NDEP]``, in the order of layout ``C0_DCOL``:
    the projected spanning pass of :mod:`.derivatives` makes them) and the
    spanning tree's forces ``taus``. W, Zq and Zv vanish outside the cluster's dependent rows, so column
    ``iv + l`` gains Σ_r (Gᵀ X_v)[:, s_r] W_r + (Gᵀ M_s)[:, s_r] Zq_r: O(nv · nrow) per independent
    coordinate of a loop (forming X_v W and M_s Zq first, then multiplying by Gᵀ, cost Tello 1.4 µs
    more)."""
    ib, ic, cb, wc, GXv, GXm, taus, terms, dq, dv = borrowed((ib, ic, cb, wc, GXv, GXm, taus, terms, dq, dv))
    nv = dq.shape[0]
    at = 0
    DC = ic[0, L.C0_DCOL]  # a spanning coordinate's column in GXv, GXm
    for k in range(1, ic[0, L.C0_NCL] + 1):
        if ic[k, L.C_KIND] != L.IMPLICIT:
            continue
        first, iv = ic[k, L.C_FIRST], ic[k, L.C_IV]
        n, m, nrow, dep = ic[k, L.C_N], ic[k, L.C_M], ic[k, L.C_NROW], ic[k, L.C_DEP]
        for l in range(m):
            dG, W, Zq, Zv, at = term_offsets(at, n, m)
            col = iv + l
            for r in range(nrow):  # W, Zq, Zv vanish on the independent rows
                j = cb[dep + r]
                d = cb[DC + ib[cb[first + j], L.I_IV]]
                w, zq, zv = terms[W + j], terms[Zq + j], terms[Zv + j]
                for x in range(nv):
                    dq[x, col] += GXv[x, d] * w + GXm[x, d] * zq  # (L5)
                    dv[x, col] += GXm[x, d] * zv  # (L6)
            for c in range(m):  # (∂G/∂δ_l)ᵀ τ_s: this cluster's columns only
                x = 0.0
                for j in range(n):
                    x += terms[dG + j * m + c] * taus[ib[cb[first + j], L.I_IV]]
                dq[iv + c, col] += x
    return 0


call_loop_tangent_terms = loop_tangent_terms.call
call_loop_corrections = loop_corrections.call


@kernel("int64(int64[::1], float64[::1], float64[::1], float64[::1], float64[::1])")
def loop_terms_kernel(ints, floats, v, a, terms):
    """:func:`loop_tangent_terms` on the state that the cluster kinematics (``c_fk_kernel`` at the same
    q, v, a, with validated inputs) left in the Data: for the dense contact derivatives on loops."""
    ints, floats, v, a, terms = borrowed((ints, floats, v, a, terms))
    ib, ws, ic, cb, wc = model_views(ints, floats)
    code, consts, table, outputs = tapes(ic, cb, wc)
    if not acquire(ints):
        return DATA_IN_USE * STATUS_BASE
    st = call_loop_tangent_terms(ib, ic, cb, wc, code, consts, table, outputs, v, a, terms)
    release(ints)
    return st
