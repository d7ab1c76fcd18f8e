"""Kinematics of a tree of clusters (Chignoli et al. 2024 §V; spec §1.9–1.10, §2.0).

For every cluster, in regular order:

1. its spanning coordinates: ``q = G y`` (explicit), or the stored spanning positions (implicit, which
   must satisfy φ(q) = 0);
2. ``G`` and ``g``: constant (explicit) or from the constraint program — K(q), k(q, q̇) — by the
   partition ``G = P[1; −K_d⁻¹K_i]``, ``g = P[0; K_d⁻¹k]`` (eq. 3 and §1.2);
3. for each body i, its placement in the frame of its output body Λ(i) and, in that frame, its
   velocity relative to Λ(i), ``w_i = Σ_{j ∈ path(i)} s̃_j q̇_j``, and the derivative of that
   velocity, ``ẇ_i = Σ_j (s̃_j q̈_j + (w_j × s̃_j) q̇_j)`` (s̃_j = joint j's subspace in Λ's frame);
4. the cluster motion subspace 𝖲 (eq. 24): block i = ᶦX_Λ Σ_{j ∈ path(i)} s̃_j G[j, :], and the bias
   𝖼 (eqs. 25–26 with the v × vJ term of §7.4): block i = ᶦX_Λ (ẇ_i|_{ÿ=0} + v_Λ × w_i);
5. ``v_i = ᶦX_Λ (v_Λ + w_i)`` and ``a_i = ᶦX_Λ (a_Λ + ẇ_i + v_Λ × w_i)``.

Single-body clusters use the tree recursion unchanged.
"""

from __future__ import annotations

import numpy as np

from ..constraints.tape import TABLE_WIDTH, evaluate_k, evaluate_phi_K
from ..jit import inlined, lazy, njit, shared
from ..model import layout as L
from ..spatial import ops
from .borrow import acquire, address_of, borrowed, floats_at, ints_at, model_views, release, view
from .common import (
    check_forces,
    check_unit,
    check_vector,
    gravity_seed,
    jcalc,
    kernel,
    s_column,
    s_mul,
    velocity_pass,
)
from .status import CONSTRAINT_VIOLATED, DATA_IN_USE, LOOP_CODE_MISSING, SINGULAR_CLUSTER, STATUS_BASE


@njit(cache=True)
def lu_solve_inplace(A, a0, n, B, b0, nrhs):
    """Solve A X = B for the n × n matrix at A[a0:] (row-major) and n × nrhs right-hand sides at
    B[b0:] (row-major), by Gaussian elimination with partial pivoting, in place. False if singular."""
    scale = 0.0
    for k in range(n * n):
        scale = max(scale, abs(A[a0 + k]))
    for col in range(n):
        piv = col
        best = abs(A[a0 + col * n + col])
        for r in range(col + 1, n):
            x = abs(A[a0 + r * n + col])
            if x > best:
                best, piv = x, r
        if not best > 1e-12 * max(scale, 1e-300):
            return False
        if piv != col:
            for k in range(n):
                A[a0 + col * n + k], A[a0 + piv * n + k] = A[a0 + piv * n + k], A[a0 + col * n + k]
            for k in range(nrhs):
                B[b0 + col * nrhs + k], B[b0 + piv * nrhs + k] = (
                    B[b0 + piv * nrhs + k],
                    B[b0 + col * nrhs + k],
                )
        d = A[a0 + col * n + col]
        for r in range(col + 1, n):
            f = A[a0 + r * n + col] / d
            if f != 0.0:
                for k in range(col, n):
                    A[a0 + r * n + k] -= f * A[a0 + col * n + k]
                for k in range(nrhs):
                    B[b0 + r * nrhs + k] -= f * B[b0 + col * nrhs + k]
    for col in range(n - 1, -1, -1):
        d = A[a0 + col * n + col]
        for k in range(nrhs):
            acc = B[b0 + col * nrhs + k]
            for j in range(col + 1, n):
                acc -= A[a0 + col * n + j] * B[b0 + j * nrhs + k]
            B[b0 + col * nrhs + k] = acc / d
    return True


@inlined
def small_inverse(wc, K, n, cb, dep, nrow, out):
    """``wc[out : out + nrow²] = K_d⁻¹`` (row-major) in closed form for ``nrow`` ≤ 2, where K_d is
    the square block of the constraint Jacobian at ``wc[K:]`` (``nrow × n``, row-major) on the
    dependent columns ``cb[dep : dep + nrow]``. False if K_d is singular by the test
    :func:`lu_solve_inplace` applies with partial pivoting: a pivot at most ``1e-12 × max|K_d|``
    (the second pivot of a 2 × 2 block is ``|det| / max(|a|, |c|)``)."""
    a = wc[K + cb[dep]]
    if nrow == 1:
        if not abs(a) > 1e-12 * max(abs(a), 1e-300):
            return False
        wc[out] = 1.0 / a
        return True
    ok, i00, i01, i10, i11 = inverse2(a, wc[K + cb[dep + 1]], wc[K + n + cb[dep]], wc[K + n + cb[dep + 1]])
    wc[out] = i00
    wc[out + 1] = i01
    wc[out + 2] = i10
    wc[out + 3] = i11
    return ok


@inlined
def inverse2(a, b, c, d):
    """``(ok, [[a, b], [c, d]]⁻¹ row-major)`` in closed form; ``ok`` is False (and the entries
    meaningless) when the block is singular by the test :func:`lu_solve_inplace` applies with partial
    pivoting: a pivot at most ``1e-12 × max|entry|`` (the second pivot is ``|det| / max(|a|, |c|)``)."""
    tol = 1e-12 * max(max(abs(a), abs(b)), max(abs(c), abs(d)), 1e-300)
    p1 = max(abs(a), abs(c))
    det = a * d - b * c
    if not (p1 > tol and abs(det) > tol * p1):
        return False, 0.0, 0.0, 0.0, 0.0
    return True, d / det, -b / det, -c / det, a / det


@inlined
def tapes(ic, cb, wc):
    """The constraint programs (``code, consts, table, outputs`` of a
    :class:`~loopdyn.constraints.tape.PackedPrograms`) as views of the cluster tables they are packed
    into (``ic[0]``: TCODE, TTABLE, TOUT in cb, TCONST in wc), so that the cluster kernels take five
    model arrays."""
    o, n = ic[0, L.C0_TCODE], ic[0, L.C0_NTCODE]
    code = cb[o : o + 4 * n].reshape((n, 4))
    o, n = ic[0, L.C0_TTABLE], ic[0, L.C0_NTPROG]
    table = cb[o : o + TABLE_WIDTH * n].reshape((n, TABLE_WIDTH))
    o = ic[0, L.C0_TOUT]
    outputs = cb[o : o + ic[0, L.C0_NTOUT]]
    o = ic[0, L.C0_TCONST]
    consts = wc[o : o + ic[0, L.C0_NTCONST]]
    return code, consts, table, outputs


@inlined
def cluster_coordinates(ib, ic, cb, wc, code, consts, table, outputs, k, q, v, a):
    """Spanning q, q̇, q̈ of cluster k into the spanning buffers (and, for an implicit cluster, G, g
    into wc). Returns a status. A tree joint copies its coordinates; an explicit cluster multiplies
    by its constant G (g = 0); an implicit one runs its constraint program
    (:func:`implicit_coordinates`). An empty ``v``: positions (and G) only; an empty ``a``: ÿ = 0."""
    kind = ic[k, L.C_KIND]
    first = ic[k, L.C_FIRST]
    QS, QDS, QDDS = ic[0, L.C0_QS], ic[0, L.C0_QDS], ic[0, L.C0_QDDS]
    iq, iv = ic[k, L.C_IQ], ic[k, L.C_IV]
    has_a = a.shape[0] != 0
    has_v = v.shape[0] != 0
    if kind == L.SINGLE_BODY:
        b = cb[first]
        bq, bv = ib[b, L.I_IQ], ib[b, L.I_IV]
        for j in range(ib[b, L.I_NQ]):
            wc[QS + bq + j] = q[iq + j]
        if has_v:
            for j in range(ib[b, L.I_NV]):
                wc[QDS + bv + j] = v[iv + j]
                wc[QDDS + bv + j] = a[iv + j] if has_a else 0.0
        return 0
    if kind == L.IMPLICIT:  # through the lazy pass: a model without implicit loops never compiles it
        return implicit_coordinates_call(ib, ic, cb, wc, k, q, v, a)
    # explicit: q = G y, q̇ = G ẏ, q̈ = G ÿ with a constant G (1-DoF joints: q index = body's)
    n, m, G = ic[k, L.C_N], ic[k, L.C_M], ic[k, L.C_G]
    if m == 1:  # one independent coordinate (a geared rotor and its link, a gear train): q_j = G_j y
        y = q[iq]
        yd = v[iv] if has_v else 0.0
        ydd = a[iv] if has_a else 0.0
        for j in range(n):
            b = cb[first + j]
            g = wc[G + j]
            wc[QS + ib[b, L.I_IQ]] = g * y
            bv = ib[b, L.I_IV]
            wc[QDS + bv] = g * yd
            wc[QDDS + bv] = g * ydd
        return 0
    for j in range(n):
        b = cb[first + j]
        x = 0.0
        xd = 0.0
        xdd = 0.0
        for l in range(m):
            g = wc[G + j * m + l]
            x += g * q[iq + l]
            if has_v:
                xd += g * v[iv + l]
            if has_a:
                xdd += g * a[iv + l]
        wc[QS + ib[b, L.I_IQ]] = x
        wc[QDS + ib[b, L.I_IV]] = xd
        wc[QDDS + ib[b, L.I_IV]] = xdd
    return 0


@inlined
def spanning_positions(ib, ic, cb, wc, k, q):
    """Spanning q of a tree joint or an explicit cluster k: a tree joint copies its coordinates, an
    explicit cluster of 1-DoF joints multiplies by its constant G (eq. 3). The positions-only part of
    :func:`cluster_coordinates` (the mass matrix needs no rates); that function keeps its own fused
    loop over G for q, q̇ and q̈: calling this one and then a rates loop made C-RNEA and C-ABA 3–8 %
    slower (kernel A/B)."""
    QS, first, iq = ic[0, L.C0_QS], ic[k, L.C_FIRST], ic[k, L.C_IQ]
    if ic[k, L.C_KIND] == L.SINGLE_BODY:
        b = cb[first]
        bq = QS + ib[b, L.I_IQ]
        for j in range(ib[b, L.I_NQ]):
            wc[bq + j] = q[iq + j]
        return
    n, m, G = ic[k, L.C_N], ic[k, L.C_M], ic[k, L.C_G]
    for j in range(n):
        x = 0.0
        for l in range(m):
            x += wc[G + j * m + l] * q[iq + l]
        wc[QS + ib[cb[first + j], L.I_IQ]] = x


@inlined
def spanning_accelerations(ib, ic, cb, wc, a):
    """The spanning accelerations ``q̈_s = G ÿ + g`` of every cluster for ÿ = ``a``, from G and g as
    :func:`cluster_coordinates` left them at the same q, q̇ (run with no ÿ, as C-ABA's kinematics do):
    what the derivatives at ÿ = C-ABA's result need, without the loops' constraint programs again."""
    QDDS = ic[0, L.C0_QDDS]
    for k in range(1, ic[0, L.C0_NCL] + 1):
        kind, first, iv = ic[k, L.C_KIND], ic[k, L.C_FIRST], ic[k, L.C_IV]
        if kind == L.SINGLE_BODY:
            bv = QDDS + ib[cb[first], L.I_IV]
            for j in range(ib[cb[first], L.I_NV]):
                wc[bv + j] = a[iv + j]
            continue
        n, m, G, gb = ic[k, L.C_N], ic[k, L.C_M], ic[k, L.C_G], ic[k, L.C_GB]
        for j in range(n):  # 1-DoF joints: the q̈_s index is the body's
            x = wc[gb + j] if kind == L.IMPLICIT else 0.0
            for l in range(m):
                x += wc[G + j * m + l] * a[iv + l]
            wc[QDDS + ib[cb[first + j], L.I_IV]] = x


@inlined
def spanning_positions_all(ib, ic, cb, wc, code, consts, table, outputs, q):
    """The spanning configuration of every cluster (and G of the implicit ones, whose constraint
    program also checks that q is on the loop), positions only: the first step of the mass matrix and
    of the world-coordinate Delassus kernels. Returns a status."""
    no_v = wc[0:0]  # no velocity: an empty view, not an allocation per call
    for k in range(1, ic[0, L.C0_NCL] + 1):
        if ic[k, L.C_KIND] != L.IMPLICIT:
            spanning_positions(ib, ic, cb, wc, k, q)
            continue
        st = cluster_coordinates(ib, ic, cb, wc, code, consts, table, outputs, k, q, no_v, no_v)
        if st != 0:
            return st
    return 0


@inlined
def implicit_coordinates(ib, ic, cb, wc, code, consts, table, outputs, k, q, v, a):
    """Implicit cluster k: check φ(q) = 0 on the assembly branch, then ``G = P[1; −K_d⁻¹K_i]`` and
    ``g = P[0; K_d⁻¹k]`` from the constraint program (eq. 3, §1.2), and the spanning q, q̇, q̈.

    Inlined with the programs' native calls: as a function of its own, its twelve arguments cost
    35–40 ns a cluster (a quarter of the four-bar's coordinates; measured in one process)."""
    row = ic[k]
    first = row[L.C_FIRST]
    QS, QDS, QDDS = ic[0, L.C0_QS], ic[0, L.C0_QDS], ic[0, L.C0_QDDS]
    iq, iv = row[L.C_IQ], row[L.C_IV]
    n, m, nrow = row[L.C_N], row[L.C_M], row[L.C_NROW]
    nt = nrow + row[L.C_NCHECK]  # program rows: the kept ones, then the assembly-branch checks
    G, gb = row[L.C_G], row[L.C_GB]
    ind, dep = row[L.C_IND], row[L.C_DEP]
    scr = row[L.C_SCR]
    ql, qdl = scr, scr + n
    phi, K = scr + 2 * n, scr + 2 * n + nt
    kb = K + nt * n
    lu = kb + nt
    rhs = lu + nrow * nrow
    for j in range(n):  # spanning positions stored; check φ, then G from K(q)
        wc[ql + j] = q[iq + j]
    p = row[L.C_PROG]
    regs = wc[ic[0, L.C0_REGS] :]
    evaluate_phi_K(code, consts, table, outputs, p, wc[ql : ql + n], regs, wc[phi : phi + nt],
                   wc[K : K + nt * n])  # fmt: skip
    for r in range(nt):  # the constraints, and that they hold on the assembly branch
        if not abs(wc[phi + r]) <= wc[ic[0, L.C0_PHITOL]]:
            return CONSTRAINT_VIOLATED * STATUS_BASE + k
    if nrow == 2:  # every built-in loop: the same steps with K_d⁻¹ and X in registers
        return implicit_two_rows(ib, ic, cb, wc, code, consts, table, outputs, k, v, a, regs)
    # K_d X = K_i → G_dep = −X. One row: K_d⁻¹ in closed form, kept in the LU scratch for k below
    # (small_inverse; two rows took implicit_two_rows above); beyond, an LU in place (K_d is
    # factorised again for k)
    inverse = nrow <= 2
    if inverse:
        if not small_inverse(wc, K, n, cb, dep, nrow, lu):
            return SINGULAR_CLUSTER * STATUS_BASE + k
        for r in range(nrow):
            for l in range(m):
                x = 0.0
                for c in range(nrow):
                    x += wc[lu + r * nrow + c] * wc[K + c * n + cb[ind + l]]
                wc[rhs + r * m + l] = x
    else:
        for r in range(nrow):
            for c in range(nrow):
                wc[lu + r * nrow + c] = wc[K + r * n + cb[dep + c]]
            for l in range(m):
                wc[rhs + r * m + l] = wc[K + r * n + cb[ind + l]]
        if not lu_solve_inplace(wc, lu, nrow, wc, rhs, m):
            return SINGULAR_CLUSTER * STATUS_BASE + k
    for j in range(n * m):
        wc[G + j] = 0.0
    for l in range(m):
        wc[G + cb[ind + l] * m + l] = 1.0
    for r in range(nrow):
        for l in range(m):
            wc[G + cb[dep + r] * m + l] = -wc[rhs + r * m + l]
    if v.shape[0] == 0:  # positions and G only
        for j in range(n):
            wc[QS + ib[cb[first + j], L.I_IQ]] = wc[ql + j]
        return 0
    for j in range(n):  # q̇ = G ẏ
        acc = 0.0
        for l in range(m):
            acc += wc[G + j * m + l] * v[iv + l]
        wc[qdl + j] = acc
    # k(q, q̇) → g = P[0; K_d⁻¹ k], from the registers the φ, K pass left (the tape's k part only)
    evaluate_k(code, consts, table, outputs, p, wc[qdl : qdl + n], regs, wc[kb : kb + nt])
    if inverse:
        for r in range(nrow):
            x = 0.0
            for c in range(nrow):
                x += wc[lu + r * nrow + c] * wc[kb + c]
            wc[rhs + r] = x
    else:  # K_d factorised again (the LU above was done in place)
        for r in range(nrow):
            for c in range(nrow):
                wc[lu + r * nrow + c] = wc[K + r * n + cb[dep + c]]
            wc[rhs + r] = wc[kb + r]
        # np.int64: a bare 1 would be typed as a literal and compile a second lu_solve_inplace
        if not lu_solve_inplace(wc, lu, nrow, wc, rhs, np.int64(1)):
            return SINGULAR_CLUSTER * STATUS_BASE + k
    for j in range(n):
        wc[gb + j] = 0.0
    for r in range(nrow):
        wc[gb + cb[dep + r]] = wc[rhs + r]
    for j in range(n):  # scatter into the spanning buffers (1-DoF joints: q index = body's)
        b = cb[first + j]
        wc[QS + ib[b, L.I_IQ]] = wc[ql + j]
        wc[QDS + ib[b, L.I_IV]] = wc[qdl + j]
        acc = wc[gb + j]
        if a.shape[0] != 0:
            for l in range(m):
                acc += wc[G + j * m + l] * a[iv + l]
        wc[QDDS + ib[b, L.I_IV]] = acc
    return 0



@inlined
def cluster_tables_at(ic_at, nic, cb_at, ncb, wc_at, nwc):
    """``ic, cb, wc`` from their addresses and sizes (:func:`~.borrow.address_of`), and the constraint
    programs packed into them (:func:`tapes`): what a lazy pass (:func:`loopdyn.jit.lazy`) given the
    cluster tables as integers works on."""
    ic = ints_at(ic_at, (nic, L.NC))
    cb = ints_at(cb_at, (ncb,))
    wc = floats_at(wc_at, (nwc,))
    code, consts, table, outputs = tapes(ic, cb, wc)
    return ic, cb, wc, code, consts, table, outputs


@lazy("int64(" + ", ".join(["int64"] * 15) + ")", missing_status=LOOP_CODE_MISSING * STATUS_BASE,
      needed_by="implicit_loops")  # fmt: skip
def implicit_coordinates_pass(ib_at, nib, ic_at, nic, cb_at, ncb, wc_at, nwc, k, q_at, nq, v_at, nv,
                              a_at, na):  # fmt: skip
    """:func:`implicit_coordinates` as a pass of its own, compiled only in a process that has a model
    with implicit loops (:func:`loopdyn.jit.lazy`; :class:`loopdyn.Data` asks for it): what trees and
    explicit clusters need compiles without the constraint programs' interpreter, the K_d solves and
    the loop-closure checks (a third of the first C-ABA call on Mini Cheetah). It takes its arrays as
    addresses and sizes (:func:`implicit_coordinates_call`): with fifteen integers the four-bar's
    C-RNEA runs 2–4 % slower than with the code inlined, with twelve Numba arrays (some ninety machine
    words) it ran 10–17 % slower, about 100 ns a cluster."""
    ib = ints_at(ib_at, (nib, L.NI))
    ic, cb, wc, code, consts, table, outputs = cluster_tables_at(ic_at, nic, cb_at, ncb, wc_at, nwc)
    q = floats_at(q_at, (nq,))
    v = floats_at(v_at, (nv,))
    a = floats_at(a_at, (na,))
    return implicit_coordinates(ib, ic, cb, wc, code, consts, table, outputs, k, q, v, a)


_call_implicit = implicit_coordinates_pass.call


@inlined
def implicit_coordinates_call(ib, ic, cb, wc, k, q, v, a):
    """Call :func:`implicit_coordinates_pass` on these arrays (C-contiguous: the kernels' own, and
    the user's state vectors as the kernels validated them). The constraint programs are read from
    their views in cb and wc (:func:`tapes`)."""
    return _call_implicit(address_of(ib), ib.shape[0], address_of(ic), ic.shape[0], address_of(cb),
                          cb.shape[0], address_of(wc), wc.shape[0], k, address_of(q), q.shape[0],
                          address_of(v), v.shape[0], address_of(a), a.shape[0])  # fmt: skip

@inlined
def kd_inverse_at(ic, k):
    """Where :func:`implicit_two_rows` leaves K_d⁻¹ (2 × 2, row-major) of implicit cluster k in wc: the
    scratch's LU area (layout: q, q̇ (n each), φ (nt), K (nt × n), k (nt), then K_d's LU)."""
    n, nt = ic[k, L.C_N], ic[k, L.C_NROW] + ic[k, L.C_NCHECK]
    return ic[k, L.C_SCR] + 2 * n + nt + nt * n + nt


@inlined
def implicit_two_rows(ib, ic, cb, wc, code, consts, table, outputs, k, v, a, regs):
    """The rest of :func:`implicit_coordinates` (after φ, K and the branch check) for an implicit cluster
    with two kept constraint rows, the scratch read once: K_d⁻¹ (:func:`inverse2`) and each column
    of X = K_d⁻¹ K_i held in registers, q̇_dep = −X ẏ summed while G = P[1; −X] is written,
    g_dep = K_d⁻¹ k. The generic steps accumulate the same sums through the cluster's scratch in wc,
    which every store to the spanning buffers (the same array) forces the compiler to read back; for
    Tello's differentials and the four- and five-bars those steps took more than the constraint
    programs."""
    row = ic[k]
    first, n, m = row[L.C_FIRST], row[L.C_N], row[L.C_M]
    iv, G, gb, ind = row[L.C_IV], row[L.C_G], row[L.C_GB], row[L.C_IND]
    nt = 2 + row[L.C_NCHECK]
    scr = row[L.C_SCR]
    ql, qdl = scr, scr + n
    K = scr + 2 * n + nt
    kb = K + nt * n
    d0, d1 = cb[row[L.C_DEP]], cb[row[L.C_DEP] + 1]
    ok, i00, i01, i10, i11 = inverse2(wc[K + d0], wc[K + d1], wc[K + n + d0], wc[K + n + d1])
    if not ok:
        return SINGULAR_CLUSTER * STATUS_BASE + k
    inv = kd_inverse_at(ic, k)  # kept for Ġ (coriolis.implicit_gdot), which would factorise K_d again
    wc[inv], wc[inv + 1], wc[inv + 2], wc[inv + 3] = i00, i01, i10, i11
    for j in range(n * m):
        wc[G + j] = 0.0
    with_v = v.shape[0] != 0
    qd0 = 0.0
    qd1 = 0.0
    for l in range(m):  # column l of G: 1 at the independent coordinate, −X[:, l] at the dependent
        jl = cb[ind + l]
        kl0, kl1 = wc[K + jl], wc[K + n + jl]
        x0 = i00 * kl0 + i01 * kl1
        x1 = i10 * kl0 + i11 * kl1
        wc[G + jl * m + l] = 1.0
        wc[G + d0 * m + l] = -x0
        wc[G + d1 * m + l] = -x1
        if with_v:
            yd = v[iv + l]
            wc[qdl + jl] = yd
            qd0 -= x0 * yd
            qd1 -= x1 * yd
    QS, QDS, QDDS = ic[0, L.C0_QS], ic[0, L.C0_QDS], ic[0, L.C0_QDDS]
    if not with_v:  # positions and G only
        for j in range(n):
            wc[QS + ib[cb[first + j], L.I_IQ]] = wc[ql + j]
        return 0
    wc[qdl + d0] = qd0
    wc[qdl + d1] = qd1
    p = row[L.C_PROG]
    evaluate_k(code, consts, table, outputs, p, wc[qdl : qdl + n], regs, wc[kb : kb + nt])
    k0, k1 = wc[kb], wc[kb + 1]
    g0 = i00 * k0 + i01 * k1
    g1 = i10 * k0 + i11 * k1
    for j in range(n):
        wc[gb + j] = 0.0
    wc[gb + d0] = g0
    wc[gb + d1] = g1
    has_a = a.shape[0] != 0
    for j in range(n):  # scatter into the spanning buffers (1-DoF joints: q index = body's)
        b = cb[first + j]
        wc[QS + ib[b, L.I_IQ]] = wc[ql + j]
        wc[QDS + ib[b, L.I_IV]] = wc[qdl + j]
    for l in range(m):  # q̈ = G ÿ + g: ÿ at the independent coordinates, g − X ÿ at the dependent
        jl = cb[ind + l]
        ydd = a[iv + l] if has_a else 0.0
        wc[QDDS + ib[cb[first + jl], L.I_IV]] = ydd
        g0 += wc[G + d0 * m + l] * ydd
        g1 += wc[G + d1 * m + l] * ydd
    wc[QDDS + ib[cb[first + d0], L.I_IV]] = g0
    wc[QDDS + ib[cb[first + d1], L.I_IV]] = g1
    return 0


@inlined
def cluster_bodies(ib, ws, ic, cb, wc, k, qs, qds, qdds, with_vel, with_acc):
    """Placements, velocities, accelerations, 𝖲 and 𝖼 of the bodies of cluster k (coordinates done),
    in body frames, by the spanning tree's recursion through each body's parent (its in-cluster
    parent, or its output body Λ(i)): with q̇ = G ẏ and q̈ = G ÿ + g,

    * ``v_i = ᶦX_λ v_λ + s_i q̇_i`` and ``a_i = ᶦX_λ a_λ + s_i q̈_i + v_i × s_i q̇_i`` (the tree's);
    * 𝖲 block i = ``ᶦX_cp 𝖲_cp + s_i G_i`` and ``𝖼_i = ᶦX_cp 𝖼_cp + s_i g_i + v_i × s_i q̇_i``, where cp
      is the in-cluster parent (none: the first terms vanish), so that
      ``a_i = ᶦX_Λ a_Λ + 𝖲_i ÿ + 𝖼_i`` (eqs. 24–26);
    * the placement in Λ(i)'s frame (ᶦX_Λ, for the passes to the parent cluster): the joint's when
      cp is none, else composed through cp.

    Velocities and 𝖼 (W_V, W_C) only ``with_vel`` (the Delassus sweeps need placements and 𝖲 alone);
    accelerations (W_A) only ``with_acc``: C-ABA computes its own.
    """
    first, nb = ic[k, L.C_FIRST], ic[k, L.C_NB]
    if ic[k, L.C_KIND] == L.SINGLE_BODY:
        i = cb[first]
        R, p = jcalc(ib, ws, i, qs)
        if with_vel:
            velocity_pass(ib, ws, i, qds, R, p)
        if with_acc:
            ai = ops.motion_to_child(R, p, ops.load6(ws, ib[i, L.I_PARENT], L.W_A))
            ops.store6(ws, i, L.W_A, ops.add6(ops.add6(ai, s_mul(ib, ws, i, qdds)), ops.load6(ws, i, L.W_C)))
        return
    m, G, gb, S = ic[k, L.C_M], ic[k, L.C_G], ic[k, L.C_GB], ic[k, L.C_S]
    if ic[k, L.C_STAR] != 0:  # every body hinged on Λ with g = 0: the tree's step, 𝖲 block j = s_j G_j
        for j in range(nb):
            i = cb[first + j]
            R, p = jcalc(ib, ws, i, qs)  # ᶦX_Λ is the joint's: W_XR, W_XP = R, p
            ops.store9(ws, i, L.W_XR, R)
            ops.store3(ws, i, L.W_XP, p)
            if with_vel:
                velocity_pass(ib, ws, i, qds, R, p)  # v_i, and 𝖼_i = W_C = v_i × s_i q̇_i
            s = s_column(ib, ws, i, 0)
            if with_acc:
                a_i = ops.motion_to_child(R, p, ops.load6(ws, ib[i, L.I_PARENT], L.W_A))
                ops.store6(ws, i, L.W_A, ops.add6(ops.add6(a_i, ops.scale6(s, qdds[ib[i, L.I_IV]])),
                                                  ops.load6(ws, i, L.W_C)))  # fmt: skip
            g = wc[G + j]
            for r in range(6):
                wc[S + 6 * j + r] = s[r] * g
        return
    for j in range(nb):
        i = cb[first + j]
        R, p = jcalc(ib, ws, i, qs)
        if with_vel:
            velocity_pass(ib, ws, i, qds, R, p)  # v_i, and W_C = v_i × s_i q̇_i
        s = s_column(ib, ws, i, 0)
        iv = ib[i, L.I_IV]
        c_tree = ops.load6(ws, i, L.W_C)
        if with_acc:
            a_i = ops.motion_to_child(R, p, ops.load6(ws, ib[i, L.I_PARENT], L.W_A))
            ops.store6(ws, i, L.W_A, ops.add6(ops.add6(a_i, ops.scale6(s, qdds[iv])), c_tree))
        c_i = ops.add6(ops.scale6(s, wc[gb + j]), c_tree)
        cp = ib[i, L.I_CPAR]
        if cp == 0:
            ops.store9(ws, i, L.W_XR, R)
            ops.store3(ws, i, L.W_XP, p)
            for l in range(m):
                g_jl = wc[G + j * m + l]
                for r in range(6):
                    wc[S + (6 * j + r) * m + l] = s[r] * g_jl
        else:  # through the in-cluster parent: ᶦX_Λ = ᶦX_cp ᶜᵖX_Λ, 𝖲_i = ᶦX_cp 𝖲_cp + s_i G_i
            XR0 = ops.load9(ws, cp, L.W_XR)
            t = ops.rot_vec(XR0, p)
            ops.store9(ws, i, L.W_XR, ops.rot_mul(XR0, R))
            ops.store3(
                ws, i, L.W_XP, (ws[cp, L.W_XP] + t[0], ws[cp, L.W_XP + 1] + t[1], ws[cp, L.W_XP + 2] + t[2])
            )
            if with_vel:
                c_i = ops.add6(c_i, ops.motion_to_child(R, p, ops.load6(ws, cp, L.W_C)))
            jp = ib[cp, L.I_SUB]
            for l in range(m):
                col = ops.motion_to_child(R, p, ops.col6w(wc, S + 6 * jp * m + l, m))
                g_jl = wc[G + j * m + l]
                for r in range(6):
                    wc[S + (6 * j + r) * m + l] = col[r] + s[r] * g_jl
        if with_vel:
            ops.store6(ws, i, L.W_C, c_i)


@shared
def c_fk_core(ib, ws, ic, cb, wc, code, consts, table, outputs, q, v, a, with_gravity):
    """Cluster forward kinematics for the whole tree (see the module docstring). Returns a status.
    Body accelerations only when ``a`` is given (not empty); with ``with_gravity`` the base then
    accelerates upwards (a_0 = −a_g), as the dynamics need. An empty ``v``: placements and 𝖲 only
    (no velocities, no 𝖼; implicit clusters skip their k(q, q̇) program)."""
    # uncounted here too: the call boundary hides that the caller's arrays are borrowed
    ib, ws, ic, cb, wc, code, consts, table, outputs, q, v, a, with_gravity = borrowed(
        (ib, ws, ic, cb, wc, code, consts, table, outputs, q, v, a, with_gravity)
    )
    ops.store6(ws, 0, L.W_V, (0.0, 0.0, 0.0, 0.0, 0.0, 0.0))
    ops.store6(ws, 0, L.W_A, gravity_seed(ws) if with_gravity else (0.0, 0.0, 0.0, 0.0, 0.0, 0.0))
    with_vel = v.shape[0] != 0
    with_acc = with_vel and a.shape[0] != 0
    QS, QDS, QDDS = ic[0, L.C0_QS], ic[0, L.C0_QDS], ic[0, L.C0_QDDS]
    qs = wc[QS : QS + ic[0, L.C0_NQS]]  # the spanning state, filled cluster by cluster
    qds = wc[QDS : QDS + ic[0, L.C0_NVS]]
    qdds = wc[QDDS : QDDS + ic[0, L.C0_NVS]]
    for k in range(1, ic[0, L.C0_NCL] + 1):
        st = cluster_coordinates(ib, ic, cb, wc, code, consts, table, outputs, k, q, v, a)
        if st != 0:
            return st
        cluster_bodies(ib, ws, ic, cb, wc, k, qs, qds, qdds, with_vel, with_acc)
    return 0


@kernel(
    "int64(int64[::1], float64[::1], "
    "float64[::1], float64[::1], float64[::1])"
)
def c_fk_kernel(ints, floats, q, v, a):
    """Validated cluster forward kinematics (a may be empty: no accelerations)."""
    ints, floats, q, v, a = borrowed((ints, floats, q, v, a))
    ib, ws, ic, cb, wc = model_views(ints, floats)
    code, consts, table, outputs = tapes(ic, cb, wc)
    st = validate_cluster_state(ib, ic, cb, q, v, a, view(wc, 0, (0, 6)), False)
    if st != 0:
        return st
    if not acquire(ints):
        return DATA_IN_USE * STATUS_BASE
    st = c_fk_core(ib, ws, ic, cb, wc, code, consts, table, outputs, q, v, a, False)
    release(ints)
    return st


@inlined
def validate_cluster_state(ib, ic, cb, q, v, x, fext, x_required):
    """Status of a cluster state (q, v) and a vector x of independent size (accelerations or forces;
    when not ``x_required`` an empty x means 'not given'), and of external forces (empty or
    (nbodies + 1, 6)): sizes, finiteness, unit quaternions of single-body clusters."""
    nq = 0
    nv = 0
    for k in range(1, ic[0, L.C0_NCL] + 1):
        nq += ic[k, L.C_NQ]
        nv += ic[k, L.C_NV]
    st = check_vector(q, nq, 0)
    if st == 0:
        st = check_vector(v, nv, 1)
    if st == 0 and (x_required or x.shape[0] != 0):
        st = check_vector(x, nv, 2)
    if st == 0:
        st = check_forces(ib, fext)
    if st != 0:
        return st
    return check_cluster_units(ib, ic, cb, q)


@inlined
def validate_cluster_configuration(ib, ic, cb, q):
    """Status of a cluster configuration q alone: size, finiteness, unit quaternions."""
    nq = 0
    for k in range(1, ic[0, L.C0_NCL] + 1):
        nq += ic[k, L.C_NQ]
    st = check_vector(q, nq, 0)
    if st != 0:
        return st
    return check_cluster_units(ib, ic, cb, q)


@inlined
def check_cluster_units(ib, ic, cb, q):
    """Status of the unit quaternions and (cos, sin) pairs of the single-body clusters of q."""
    for k in range(1, ic[0, L.C0_NCL] + 1):
        if ic[k, L.C_KIND] == L.SINGLE_BODY:
            b = cb[ic[k, L.C_FIRST]]
            kind = check_unit(ib[b, L.I_JTYPE], q, ic[k, L.C_IQ])
            if kind != 0:
                return kind * STATUS_BASE + b
    return 0


@njit(cache=True)
def placements_from_parents(ib, ws):
    for i in range(1, ib[0, L.I0_NBODIES] + 1):
        par = ib[i, L.I_PARENT]
        oR = ops.load9(ws, par, L.W_OR)
        t = ops.rot_vec(oR, ops.load3(ws, i, L.W_P))
        ops.store9(ws, i, L.W_OR, ops.rot_mul(oR, ops.load9(ws, i, L.W_R)))
        ops.store3(
            ws, i, L.W_OP, (ws[par, L.W_OP] + t[0], ws[par, L.W_OP + 1] + t[1], ws[par, L.W_OP + 2] + t[2])
        )
