"""Higher-order dynamics of models with implicit clusters (closed loops: four-bars, five-bars, Tello's
differentials, parallel ankles): the time derivatives τ^(0…r) of inverse dynamics and v^(1…r+1) of
forward dynamics along a trajectory, as :func:`loopdyn.higher_order.rnea` / ``aba`` give them for
trees (Ali et al. 2026 name closed chains as their next step; §8).

The derivation (one implicit cluster; tree joints and explicit clusters map linearly as in
:mod:`.clusters`). The cluster's ``n`` spanning coordinates ``q_s`` keep ``φ(q_s) = 0`` while its ``m``
independent coordinates ``y = q_s[I]`` follow ``y(t)`` with the given derivatives ``y^(k) = v^(k−1)``.
Write ``q_s(t) = Σ_k c_k t^k``. Coefficient ``k ≥ 1`` of ``φ(q_s(t))`` is affine in ``c_k`` with slope
``K_0 = K(q_s(0))``:

    [φ(q_s(t))]_k = K_0 c_k + ρ_k(c_0 … c_{k−1}) = 0,
    c_k[I] = y^(k) / k!,   c_k[D] = −K_{0,D}⁻¹ (K_{0,I} c_k[I] + ρ_k)                       (1)

(``D`` the dependent coordinates, ``K_{0,D}`` square and invertible by the cluster's partition). The
constraint program, run in Taylor arithmetic (:mod:`loopdyn.constraints.taylor`), gives ``ρ_k`` (its
coefficient k with ``c_k[D] = 0``) and, once ``c_k`` is complete, the coefficients ``K_k`` of
``K(q_s(t))``. The spanning velocities' derivatives are ``v_s^(k) = (k+1)! c_{k+1}``: the spanning tree's
H-GRNE (:func:`.dynamics.rnea_core`, paper Alg. 2) gives ``τ_s^(0…r)``. The cluster's joint forces are
``τ = Gᵀ τ_s`` with ``G = P[1; −K_D⁻¹K_I]``, i.e. ``τ = τ_s[I] − K_Iᵀ λ`` with ``K_Dᵀ λ = τ_s[D]``. In
Taylor coefficients (``τ_k = τ^(k)/k!``, ``λ_k`` likewise):

    K_{0,D}ᵀ λ_k = τ_{s,k}[D] − Σ_{j=1..k} K_{j,D}ᵀ λ_{k−j},
    τ_k = τ_{s,k}[I] − Σ_{j=0..k} K_{j,I}ᵀ λ_{k−j}                                             (2)

so G's configuration dependence is differentiated exactly, order by order, and no derivative of G is
ever formed. Cost: the program's φ, K prefix twice per order and cluster (O(r²) per instruction), one
H-GRNE, and (2) in O(r² · rows · n) per cluster.

Forward dynamics: ``τ^(k)`` is affine in the highest derivative ``v^(k+1)`` with slope the mass matrix
``H = Gᵀ (M_s + armature) G`` (``v_s^(k+1) = G v^(k+1) +`` lower orders, by (1)), the same at every
order. ``H`` is assembled column by column (``G e_j`` from ``K(q)``, the spanning tree's H-GRNE at
``v = 0, v̇ = G e_j`` minus gravity's, projected by (2) at order 0) and factorised once; then order by
order ``v^(k+1) = H⁻¹ (τ^(k) − τ^(k)|_{v^(k+1)=0})`` (the joint-space method of
``cluster_aba_dense_kernel``; O(nv · N + r · RNEA(r)), N bodies).
"""

from __future__ import annotations

import weakref

import numpy as np

from ..algorithms.borrow import borrowed
from ..algorithms.common import kernel
from ..algorithms.loop_derivatives import kd_inverse
from ..algorithms.status import CONSTRAINT_VIOLATED, SINGULAR_CLUSTER
from ..constraints.tape import T_C, T_K_LEN, T_N, T_NREG, T_OUT_START, T_PHI_LEN
from ..constraints.taylor import K_coefficient, taylor_sweep
from ..jit import inlined, njit, shared
from ..model import layout
from ..model.clusters import IMPLICIT
from . import validation as hv
from .clusters import (
    apply_map,
    apply_map_t,
    check_cluster_inputs,
    check_cluster_rnea_inputs,
    cluster_maps,
    map_offsets,
    spanning_motion,
)
from .dynamics import (
    cholesky_lower,
    cholesky_solve,
    rnea_core,
)

__all__ = ["has_loops", "loop_tables", "loop_rnea_kernel", "loop_aba_kernel"]

# li: a header, then one record per implicit cluster, then the records' index arrays
LI_NLOOPS, LI_MAXREG, LI_WORK_K, LI_WORK_D, LI_MAXROWS = range(5)
LI_HEADER = 5
# record: cluster index (1-based, for the status codes), program, n, m, kept rows, program rows,
# iq, iv, offset of [spanning v index (n), independent (m), dependent (rows)] in li
R_CLUSTER, R_PROG, R_N, R_M, R_NROW, R_NT, R_IQ, R_IV, R_ARR = range(9)
R_WIDTH = 9

_TABLES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def has_loops(model) -> bool:
    """Whether the model has an implicit cluster (a closed loop)."""
    return any(c.kind == IMPLICIT for c in model.clusters().clusters)


def loop_tables(model, data):
    """``(mi, mf, li, code, consts, table, outputs, tol)`` of a model with implicit clusters: the linear
    maps of its tree joints and explicit clusters (:func:`.clusters.cluster_maps`, loops' positions
    copied), the loops' records ``li`` (layout in this module's constants) and the Data's packed
    constraint programs (the cluster kernels' own: kept rows, then the assembly-branch rows)."""
    entry = _TABLES.get(model)
    if entry is not None and entry[0] is data.source_key:
        return entry[1]
    mi, mf = cluster_maps(model, data, implicit=True)
    loops = [c for c in model.clusters().clusters if c.kind == IMPLICIT]
    li = [0] * LI_HEADER
    arrays: list[int] = []
    at = LI_HEADER + R_WIDTH * len(loops)
    work_k = work_d = max_rows = 0
    for c in loops:
        nrow = c.n - c.m
        p = int(data.ic[c.index + 1, layout.C_PROG])  # the cluster's program in the Data's packed programs
        li += [c.index + 1, p, c.n, c.m, nrow, int(data.table[p, T_C]), c.iq, c.iv, at + len(arrays)]
        arrays += [model.bodies[b - 1].idx_v for b in c.bodies] + list(c.independent) + list(c.dependent)
        work_k += nrow * c.n
        work_d += nrow * nrow
        max_rows = max(max_rows, nrow)
    li[LI_NLOOPS], li[LI_MAXREG] = len(loops), max(int(data.table[:, T_NREG].max()), 1)
    li[LI_WORK_K], li[LI_WORK_D], li[LI_MAXROWS] = work_k, work_d, max(max_rows, 1)
    li = np.array(li + arrays, dtype=np.int64)
    out = (mi, mf, li, data.code, data.consts, data.table, data.outputs,
           float(model.constraint_tolerance))  # fmt: skip
    _TABLES[model] = (data.source_key, out)
    return out


# ---------------------------------------------------------------------------------------------
# (1): the spanning coordinates' Taylor coefficients, loop by loop
@inlined
def loop_record(li, L):
    """Loop L's ``(n, m, kept rows, iv, vidx, ind, dep)``: its sizes, its first independent velocity
    and the offsets in ``li`` of its spanning velocity indices, independent and dependent columns."""
    rec = LI_HEADER + R_WIDTH * L
    vidx = li[rec + R_ARR]
    n, m = li[rec + R_N], li[rec + R_M]
    return n, m, li[rec + R_NROW], li[rec + R_IV], vidx, vidx + n, vidx + n + m


@njit(cache=True)
def loop_series(li, code, consts, table, outputs, tol, q, dv, dvs, Kser, KDinv):
    """For every implicit cluster: the Taylor coefficients ``c_0 … c_rows`` of its spanning coordinates
    by (1) (``rows = dv.shape[0]``), written as ``v_s^(k) = (k+1)! c_{k+1}`` into ``dvs[k]`` at its spanning
    velocities; ``K_0 … K_{rows−2}`` into ``Kser`` and ``K_{0,D}⁻¹`` into ``KDinv`` (loop by loop, for
    (2)). Returns a status: the positions off the constraints (φ or an assembly-branch row above
    ``tol``), or ``K_{0,D}`` singular, name the cluster."""
    rows = dv.shape[0]
    nreg = li[LI_MAXREG]
    T = np.zeros((nreg, rows + 1))
    A = np.zeros((nreg, rows + 1))
    s1 = np.empty(rows + 1)
    s2 = np.empty(rows + 1)
    maxd = li[LI_MAXROWS]
    KD = np.empty(maxd * maxd)
    e = np.empty(maxd)
    ko = 0
    do = 0
    for L in range(li[LI_NLOOPS]):
        rec = LI_HEADER + R_WIDTH * L
        n, m, nrow, iv, vidx, ind, dep = loop_record(li, L)
        p, nt, iq = li[rec + R_PROG], li[rec + R_NT], li[rec + R_IQ]
        o = table[p, T_OUT_START]
        c = table[p, T_C]
        phi_len, K_len = table[p, T_PHI_LEN], table[p, T_K_LEN]
        for j in range(n):
            T[j, 0] = q[iq + j]
        taylor_sweep(code, consts, table, p, K_len, 0, T, A, s1, s2)
        for r in range(nt):  # the constraints and the assembly branch hold at q
            i = outputs[o + r]
            if i >= 0 and not abs(T[i, 0]) <= tol:
                return CONSTRAINT_VIOLATED * hv.STATUS_BASE + li[rec + R_CLUSTER]
        # K_{0,D}⁻¹ by the cluster kernels' LU (their singularity test)
        if not kd_inverse(outputs, o + c, table[p, T_N], T, li, dep, nrow, KD, KDinv, do):
            return SINGULAR_CLUSTER * hv.STATUS_BASE + li[rec + R_CLUSTER]
        K_coefficient(outputs, o + c, n, nrow, T, 0, Kser, ko)
        fact = 1.0
        for k in range(1, rows + 1):
            fact *= k
            for l in range(m):
                T[li[ind + l], k] = dv[k - 1, iv + l] / fact
            for l in range(nrow):
                T[li[dep + l], k] = 0.0
            taylor_sweep(code, consts, table, p, phi_len, k, T, A, s1, s2)  # ρ_k + K_{0,I} c_k[I]
            for r in range(nrow):
                i = outputs[o + r]
                e[r] = T[i, k] if i >= 0 else 0.0
            for l in range(nrow):
                x = 0.0
                for r in range(nrow):
                    x -= KDinv[do + l * nrow + r] * e[r]
                T[li[dep + l], k] = x
            if k < rows:  # the registers at the complete c_k (the next orders read them), and K_k
                taylor_sweep(code, consts, table, p, K_len, k, T, A, s1, s2)
                if k <= rows - 2:
                    K_coefficient(outputs, o + c, n, nrow, T, k, Kser, ko + k * nrow * n)
            for j in range(n):
                dvs[k - 1, li[vidx + j]] = fact * T[j, k]
        ko += (rows - 1) * nrow * n
        do += nrow * nrow
    return 0


@njit(cache=True)
def loop_velocity(li, Kser, KDinv, y, vs):
    """The loops' spanning velocities ``vs = G y`` at q (``G = P[1; −K_{0,D}⁻¹K_{0,I}]``), from K_0 and
    ``K_{0,D}⁻¹`` as :func:`loop_series` left them for one order (``dv`` of two rows)."""
    ko = 0
    do = 0
    for L in range(li[LI_NLOOPS]):
        n, m, nrow, iv, vidx, ind, dep = loop_record(li, L)
        for l in range(m):
            vs[li[vidx + li[ind + l]]] = y[iv + l]
        for r in range(nrow):
            x = 0.0
            for s in range(nrow):
                ki = 0.0  # (K_{0,I} y_I)_s
                for l in range(m):
                    ki += Kser[ko + s * n + li[ind + l]] * y[iv + l]
                x -= KDinv[do + r * nrow + s] * ki
            vs[li[vidx + li[dep + r]]] = x
        ko += nrow * n
        do += nrow * nrow


@njit(cache=True)
def loop_project(li, taus, Kser, KDinv, out):
    """(2): the loops' joint forces ``out[k, iv…]`` (k = 0…r) from the spanning ones ``taus[k]``."""
    R1 = taus.shape[0]
    lam = np.empty((R1, li[LI_MAXROWS]))
    rhs = np.empty(li[LI_MAXROWS])
    ko = 0
    do = 0
    for L in range(li[LI_NLOOPS]):
        n, m, nrow, iv, vidx, ind, dep = loop_record(li, L)
        fact = 1.0
        for k in range(R1):
            if k > 0:
                fact *= k
            for l in range(nrow):  # K_{0,D}ᵀ λ_k = τ_{s,k}[D] − Σ_{j≥1} K_{j,D}ᵀ λ_{k−j}
                col = li[dep + l]
                x = taus[k, li[vidx + col]] / fact
                for j in range(1, k + 1):
                    Kj = ko + j * nrow * n
                    for r in range(nrow):
                        x -= Kser[Kj + r * n + col] * lam[k - j, r]
                rhs[l] = x
            for r in range(nrow):
                x = 0.0
                for l in range(nrow):
                    x += KDinv[do + l * nrow + r] * rhs[l]  # (K_{0,D}⁻¹)ᵀ
                lam[k, r] = x
            for l in range(m):  # τ_k = τ_{s,k}[I] − Σ_j K_{j,I}ᵀ λ_{k−j}
                col = li[ind + l]
                x = taus[k, li[vidx + col]] / fact
                for j in range(k + 1):
                    Kj = ko + j * nrow * n
                    for r in range(nrow):
                        x -= Kser[Kj + r * n + col] * lam[k - j, r]
                out[k, iv + l] = fact * x
        ko += R1 * nrow * n
        do += nrow * nrow


@shared  # called by both kernels, and by the forward one nv + r + 2 times: compiled once
def loop_rnea_core(hb, hf, mi, mf, li, code, consts, table, outputs, tol, q, dv, fext, out):
    """τ^(0…r) into ``out`` ((r+1) × nv) from ``dv`` = v^(0…r+1), on inputs of the right shapes and
    finite: the spanning positions (and their unit quaternions) and the loops' constraints are checked
    here. Returns a status."""
    nq, nv, nqs, nvs, qp, qi, vp, vi, nqe = map_offsets(mi)
    st, qs, dvs = spanning_motion(hb, mi, mf, q, dv)  # the loops' entries of dvs come next
    if st != 0:
        return st
    rows = dv.shape[0]
    Kser = np.empty(max(li[LI_WORK_K] * (rows - 1), 1))
    KDinv = np.empty(max(li[LI_WORK_D], 1))
    st = loop_series(li, code, consts, table, outputs, tol, q, dv, dvs, Kser, KDinv)
    if st != 0:
        return st
    taus = np.empty((rows - 1, nvs))
    rnea_core(hb, hf, qs, dvs, fext, taus)
    for k in range(rows - 1):
        apply_map_t(mi, mf, vp, vi, nqe, nvs, taus[k], out[k])
    loop_project(li, taus, Kser, KDinv, out)
    return 0


_SIG_RNEA = (
    "int64(int64[:, ::1], float64[:, ::1], int64[::1], float64[::1], int64[::1], int64[:, ::1], "
    "float64[::1], int64[:, ::1], int64[::1], float64, float64[::1], float64[:, ::1], float64[:, :, ::1], "
    "float64[:, ::1])"
)


@kernel(_SIG_RNEA)
def loop_rnea_kernel(hb, hf, mi, mf, li, code, consts, table, outputs, tol, q, dv, fext, out):
    """:func:`loopdyn.higher_order.rnea` on a model with loops (module docstring, (1)–(2))."""
    hb, hf, mi, mf, li, code, consts, table, outputs, q, dv, fext, out = borrowed(
        (hb, hf, mi, mf, li, code, consts, table, outputs, q, dv, fext, out)
    )
    st = check_cluster_rnea_inputs(hb, mi, q, dv, fext)
    if st != 0:
        return st
    return loop_rnea_core(hb, hf, mi, mf, li, code, consts, table, outputs, tol, q, dv, fext, out)


_SIG_ABA = (
    "int64(int64[:, ::1], float64[:, ::1], int64[::1], float64[::1], int64[::1], int64[:, ::1], "
    "float64[::1], int64[:, ::1], int64[::1], float64, float64[::1], float64[::1], float64[:, ::1], "
    "float64[:, :, ::1], float64[:, ::1])"
)


@kernel(_SIG_ABA)
def loop_aba_kernel(hb, hf, mi, mf, li, code, consts, table, outputs, tol, q, v, dtau, fext, out):
    """:func:`loopdyn.higher_order.aba` on a model with loops (module docstring: H = GᵀM_sG column by
    column, factorised once; then one order at a time)."""
    hb, hf, mi, mf, li, code, consts, table, outputs, q, v, dtau, fext, out = borrowed(
        (hb, hf, mi, mf, li, code, consts, table, outputs, q, v, dtau, fext, out)
    )
    st = check_cluster_inputs(hb, mi, q, v, dtau, fext)
    if st != 0:
        return st
    nq, nv, nqs, nvs, qp, qi, vp, vi, nqe = map_offsets(mi)
    R = dtau.shape[0] - 1
    no_f = np.zeros((0, 0, 6))
    # H = Gᵀ (M_s + armature) G column by column: G e_j from K(q) (the loops' K_0 by (1) at order
    # 0), the spanning tree's τ_s at v = 0, v̇ = G e_j minus gravity's, projected by (2) at order 0
    dv = np.zeros((R + 2, nv))
    st, qs, dvs = spanning_motion(hb, mi, mf, q, dv[:2])  # at v = 0, v̇ = 0 (the loops' rows come next)
    if st != 0:
        return st
    Kser = np.empty(max(li[LI_WORK_K], 1))
    KDinv = np.empty(max(li[LI_WORK_D], 1))
    st = loop_series(li, code, consts, table, outputs, tol, q, dv[:2], dvs, Kser, KDinv)
    if st != 0:
        return st
    base = np.empty((1, nvs))
    col = np.empty((1, nvs))
    rnea_core(hb, hf, qs, dvs, no_f, base)
    H = np.empty((nv, nv))
    Hj = np.empty((1, nv))
    for j in range(nv):
        dv[1, :] = 0.0
        dv[1, j] = 1.0
        apply_map(mi, mf, vp, vi, nqe, nvs, dv[1], dvs[1])
        loop_velocity(li, Kser, KDinv, dv[1], dvs[1])
        rnea_core(hb, hf, qs, dvs, no_f, col)
        for i in range(nvs):
            col[0, i] -= base[0, i]
        apply_map_t(mi, mf, vp, vi, nqe, nvs, col[0], Hj[0])
        loop_project(li, col, Kser, KDinv, Hj)
        for i in range(nv):
            H[i, j] = Hj[0, i]
    for i in range(nv):  # symmetric up to rounding: its lower triangle factorised
        for j in range(i):
            H[i, j] = H[j, i] = 0.5 * (H[i, j] + H[j, i])
    Lc = np.zeros((nv, nv))
    if not cholesky_lower(H, nv, Lc):
        return hv.SINGULAR * hv.STATUS_BASE + 1
    dv[1, :] = 0.0
    for i in range(nv):
        dv[0, i] = v[i]
    g = np.empty(nv)
    y = np.empty(nv)
    taus = np.empty((R + 1, nv))
    for r in range(R + 1):  # τ^(r) with v^(r+1) = 0, then H v^(r+1) = τ^(r) − that
        fr = fext[: r + 1] if fext.shape[0] > 0 else fext
        loop_rnea_core(
            hb, hf, mi, mf, li, code, consts, table, outputs, tol, q, dv[: r + 2], fr, taus[: r + 1]
        )
        for i in range(nv):
            g[i] = dtau[r, i] - taus[r, i]
        cholesky_solve(Lc, nv, g, y, out[r])
        for i in range(nv):
            dv[r + 1, i] = out[r, i]
    return 0
