"""Dynamics of a tree of clusters: C-RNEA, C-ABA and the cluster mass matrix
(Chignoli et al. 2024 §VI–VII; spec §2.1–2.3 with the corrections of §7.4).

All three start from the cluster kinematics of :mod:`.cluster_kinematics`, which leaves, per body,
its placement in its output body's frame, its velocity and the bias 𝖼 (``W_C``), and per cluster the
motion subspace 𝖲 (6 n_b × m). Cluster transforms are never formed: body i of a cluster is tied to
its output body Λ(i) (in the parent cluster) by its placement in Λ(i)'s frame, so

* motion to the child: ``a_i = ᶦX_Λ a_Λ``;
* force to the parent: ``f_Λ += ᶦX_Λᵀ f_i``;
* articulated inertia to the parent: block (Λ(a), Λ(b)) += ᵃX_Λᵀ 𝖨_ab ᵇX_Λ.

A single-body cluster is a tree joint: its placement is in its parent, its 𝖲 is the joint's S.
"""

from __future__ import annotations

from ..jit import inlined, lazy, njit, sequence, shared
from ..model import layout as L
from ..model.joints import FREEFLYER
from ..spatial import ops
from .borrow import acquire, address_of, borrowed, floats_at, ints_at, model_views, release, view
from .cluster_kinematics import (
    c_fk_core,
    cluster_coordinates,
    spanning_positions_all,
    tapes,
    validate_cluster_configuration,
    validate_cluster_state,
)
from .common import cluster_pivot_positive, external_force, gravity_seed, jcalc, kernel, s_column
from .crba import freeflyer_block, zero_fill
from .rnea import rnea_core
from .status import DATA_IN_USE, LOOP_CODE_MISSING, SINGULAR, STATUS_BASE


# ---------------------------------------------------------------------------------------------
# small helpers
@inlined
def placement_in_output(ib, ws, ic, k, i):
    """Placement (R, p) of body i (of cluster k) in the frame of its output body."""
    if ic[k, L.C_KIND] == L.SINGLE_BODY:
        return ops.load9(ws, i, L.W_R), ops.load3(ws, i, L.W_P)
    return ops.load9(ws, i, L.W_XR), ops.load3(ws, i, L.W_XP)


@inlined
def s_col(ib, ws, ic, cb, wc, k, j, l):
    """Column l of block j (the cluster's j-th body) of 𝖲_k, body frame, as a 6-tuple (every cluster,
    a tree joint included, keeps 𝖲 in its table: no branching here, which keeps the loops tight)."""
    m = ic[k, L.C_M]
    return ops.col6w(wc, ic[k, L.C_S] + 6 * j * m + l, m)


@inlined
def has_port(ic, k):
    """Whether cluster k hands its parent one port (a star, layout ``C_STAR``, or a one-port cluster,
    ``C_ONEPORT``): C-ABA's backward sweep then leaves the port V at :func:`port_at`."""
    return ic[k, L.C_STAR] != 0 or ic[k, L.C_ONEPORT] != 0


@inlined
def port_at(ic, k):
    """Offset in wc of the port ``V = Σ_b ᵇX_Λᵀ 𝖴_b`` (6 × m, row-major) of a star or one-port cluster
    k with a parent, written by C-ABA's backward sweep (in the cluster's group scratch)."""
    nb = ic[k, L.C_NB]
    return ic[k, L.C_MASK] + nb * nb + nb


@inlined
def touch_block(w, mask, nb, a, b, IA, nb6):
    """Make block (a, b) of a cluster's 𝖨^A usable: zero it the first time it becomes non-zero."""
    if w[mask + a * nb + b] == 0.0:
        w[mask + a * nb + b] = 1.0
        o = IA + (6 * a) * nb6 + 6 * b
        for r in range(6):
            for c in range(6):
                w[o + r * nb6 + c] = 0.0


# ---------------------------------------------------------------------------------------------
# C-RNEA (eqs. 32–35 and 31), evaluated through eq. 29: 𝖲_kᵀ 𝖿^𝒥_k = G_kᵀ τ_𝒥k. The forward
# recursion 𝖺_k = ᵏ𝖷_λ 𝖺_λ + 𝖲_k ÿ_k + 𝖼_k is, body by body, the spanning tree's with q̈ = G ÿ + g,
# and the backward recursion of 𝖿^𝒥 is the spanning tree's force recursion regrouped by cluster; so
# C-RNEA = the tree recursion on the cluster's spanning coordinates, then τ_k = G_kᵀ τ_𝒥k per
# cluster — no cluster transform or 𝖲 needs forming.
@inlined
def c_rnea_core(ib, ws, ic, cb, wc, code, consts, table, outputs, q, v, a, fext, tau):
    for k in range(1, ic[0, L.C0_NCL] + 1):  # spanning q, q̇ = G ẏ, q̈ = G ÿ + g (eqs. 3, 33)
        st = cluster_coordinates(ib, ic, cb, wc, code, consts, table, outputs, k, q, v, a)
        if st != 0:
            return st
    nqs, nvs = ic[0, L.C0_NQS], ic[0, L.C0_NVS]
    QS, QDS, QDDS, TAUS = ic[0, L.C0_QS], ic[0, L.C0_QDS], ic[0, L.C0_QDDS], ic[0, L.C0_TAUS]
    rnea_core(ib, ws, wc[QS : QS + nqs], wc[QDS : QDS + nvs], wc[QDDS : QDDS + nvs], fext,
              wc[TAUS : TAUS + nvs], True)  # fmt: skip
    GC = ic[0, L.C0_GCOLS]  # τ_k = G_kᵀ τ_𝒥k (eqs. 29, 31): one sum per independent coordinate,
    for x in range(tau.shape[0]):  # through the sparse columns of G (no read-modify-write of τ)
        acc = 0.0
        for e in range(GC + cb[GC + x], GC + cb[GC + x + 1], 2):
            acc += wc[cb[e + 1]] * wc[TAUS + cb[e]]
        tau[x] = acc
    return 0


# ---------------------------------------------------------------------------------------------
# C-ABA (Algorithm 1; GRBDA order: articulated inertias, bias forces, accelerations)
@sequence
def c_aba_core(ib, ws, ic, cb, wc, code, consts, table, outputs, q, v, tau, fext, ddy):
    """C-ABA on a validated state: the cluster kinematics and the three passes (each compiled once and
    shared with the Delassus, spatial-operator and contact kernels: inlined into every kernel they
    would cut about 0.4 µs a call and multiply the compile time, to minutes for C-ABA alone)."""
    st = c_fk_core(ib, ws, ic, cb, wc, code, consts, table, outputs, q, v, wc[0:0], False)
    if st != 0:
        return st
    st = c_aba_backward(ib, ws, ic, cb, wc, tau, fext)
    if st != 0:
        return st
    c_aba_forward(ib, ws, ic, cb, wc, ddy)
    return 0


@inlined
def c_aba_init(ib, ws, ic, cb, wc, fext, bias):
    """C-ABA forward pass #1 (Alg. lines 20–21): 𝖨^A = 𝖨 and 𝗉^A = 𝗏 ×* 𝖨 𝗏 − f_ext, after the cluster
    kinematics filled 𝗏.

    Storage: the diagonal block 𝖨^A_bb and 𝗉^A_b of every body b live in its row of ws (W_IA, W_F),
    as in the tree ABA; a cluster's off-diagonal blocks — non-zero only when a child cluster is
    attached to two of its bodies — in wc[C_IA] (6 NB × 6 NB), flagged in its mask (NB × NB)."""
    for i in range(1, ib[0, L.I0_NBODIES] + 1):
        I = ops.load10(ws, i, L.W_INER)
        if ib[i, L.I_ROTOR] == 0:  # a rotor's 𝖨^A is its 𝖨, read from W_INER (and W_IPAR)
            ops.store_inertia_matrix(ws, i, L.W_IA, I)
        if bias:
            vi = ops.load6(ws, i, L.W_V)
            pa = ops.sub6(ops.cross_force(vi, ops.inertia_mul(I, vi)), external_force(fext, i))
            ops.store6(ws, i, L.W_F, pa)
    for k in range(1, ic[0, L.C0_NCL] + 1):  # the masks (a one-port cluster's 𝖨^A has no off-diagonal block)
        nb, MK = ic[k, L.C_NB], ic[k, L.C_MASK]
        if nb > 1 and not has_port(ic, k):
            for x in range(nb * nb):
                wc[MK + x] = 0.0


@inlined
def u_col(wc, U, m, a, l):
    """Column l of block row a of 𝖴 (6 NB × M, row-major at wc[U]) as a 6-tuple."""
    return ops.col6w(wc, U + (6 * a) * m + l, m)


@inlined
def diag_mul(ib, ws, i, x):
    """𝖨^A_ii x for body i: the rigid inertia of a rotor (I_ROTOR, a leaf), else its ws row's W_IA."""
    if ib[i, L.I_ROTOR] != 0:
        return ops.inertia_mul(ops.load10(ws, i, L.W_INER), x)
    return ops.mat6_mul(ws, i, L.W_IA, x)


@inlined
def inertia_to_output(ib, ws, i, R, p, lam):
    """Λ's 𝖨^A += ᶦX_Λᵀ 𝖨^A_i ᶦX_Λ (the full-rank part of body i's diagonal block, (R, p) = ᶦX_Λ): a
    rotor's term does not depend on its angle and is read from W_IPAR."""
    if ib[i, L.I_ROTOR] != 0:
        for x in range(36):
            ws[lam, L.W_IA + x] += ws[i, L.W_IPAR + x]
    else:
        ops.mat6_to_parent_add(ws, i, L.W_IA, R, p, lam, L.W_IA)


@inlined
def ia_mul(ib, ws, ic, cb, wc, k, a, b, x):
    """𝖨^A_ab x (a 6-tuple) for bodies a, b of cluster k: the diagonal block from body a's ws row, an
    off-diagonal one from wc (zero unless flagged in the mask)."""
    nb = ic[k, L.C_NB]
    if a == b:
        return diag_mul(ib, ws, cb[ic[k, L.C_FIRST] + a], x)
    if wc[ic[k, L.C_MASK] + a * nb + b] == 0.0:
        return (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    return ops.block_mul(wc, ic[k, L.C_IA] + (6 * a) * (6 * nb) + 6 * b, 6 * nb, x)


@inlined
def c_aba_joint_factor(ib, ws, ic, cb, wc, k, tau, has_armature, bias):
    """Cluster k (Alg. lines 25–28, eq. 49): 𝖴 = 𝖨^A 𝖲, 𝗎 = τ − 𝖲ᵀ𝗉^A, 𝖣 = 𝖲ᵀ𝖴 (+ Gᵀ diag(A) G with
    armature, and 𝗎 −= Gᵀ diag(A) g) and 𝖣⁻¹. False if 𝖣 is not positive definite."""
    first, nb, m, iv = ic[k, L.C_FIRST], ic[k, L.C_NB], ic[k, L.C_M], ic[k, L.C_IV]
    U, DI, UU, DS = ic[k, L.C_U], ic[k, L.C_DINV], ic[k, L.C_UU], ic[k, L.C_DSCR]
    for l in range(m):  # 𝖴 = 𝖨^A 𝖲 (eq. 49), block row by block row; 𝗎 = τ − 𝖲ᵀ 𝗉^A
        ul = tau[iv + l] if bias else 0.0
        for a in range(nb):
            sa = s_col(ib, ws, ic, cb, wc, k, a, l)
            if bias:
                ul -= ops.dot6(sa, ops.load6(ws, cb[first + a], L.W_F))
            col = ia_mul(ib, ws, ic, cb, wc, k, a, a, sa)
            for b in range(nb):
                if b != a:
                    col = ops.add6(
                        col, ia_mul(ib, ws, ic, cb, wc, k, a, b, s_col(ib, ws, ic, cb, wc, k, b, l))
                    )
            for r in range(6):
                wc[U + (6 * a + r) * m + l] = col[r]
        wc[UU + l] = ul
    for l1 in range(m):  # 𝖣 = 𝖲ᵀ 𝖴
        for l2 in range(m):
            acc = 0.0
            for j in range(nb):
                acc += ops.dot6(s_col(ib, ws, ic, cb, wc, k, j, l1), u_col(wc, U, m, j, l2))
            if has_armature:  # Gᵀ diag(A) G
                for j in range(ic[k, L.C_N]):
                    acc += _g(ic, wc, k, j, l1) * _armature(ic, wc, k, j) * _g(ic, wc, k, j, l2)
            wc[DS + l1 * m + l2] = acc
    if bias and has_armature and ic[k, L.C_KIND] != L.SINGLE_BODY:  # armature: 𝗎 −= Gᵀ diag(A) g
        for l in range(m):
            for j in range(ic[k, L.C_N]):
                arm = _armature(ic, wc, k, j)
                wc[UU + l] -= _g(ic, wc, k, j, l) * arm * wc[ic[k, L.C_GB] + j]
    if m == 1:
        if not cluster_pivot_positive(ib, ws, ic, cb, k, wc[DS]):
            return False
        wc[DI] = 1.0 / wc[DS]
        return True
    return ops.spd_inverse(wc, DS, m, wc, DI, wc, DS + m * m)


@inlined
def parent_block(ws, ic, cb, wc, p_k, s1, s2):
    """Where block (s1, s2) of parent cluster p_k's 𝖨^A is stored: (array, offset, row stride) — the
    port body's ws row for a diagonal block, wc for an off-diagonal one (zeroed and flagged the first
    time it is touched)."""
    if s1 == s2:
        return ws[cb[ic[p_k, L.C_FIRST] + s1]], L.W_IA, 6
    pnb = ic[p_k, L.C_NB]
    pnb6 = 6 * pnb
    touch_block(wc, ic[p_k, L.C_MASK], pnb, s1, s2, ic[p_k, L.C_IA], pnb6)
    return wc, ic[p_k, L.C_IA] + (6 * s1) * pnb6 + 6 * s2, pnb6


@inlined
def c_aba_ports(ib, ws, ic, cb, wc, k, GS, GV, bias):
    """Cluster k to its parent, first half (Alg. lines 30–33, eq. 56): the full-rank part
    Σ_{non-zero blocks} ᵃX_Λᵀ 𝖨^A_ab ᵇX_Λ into the parent's 𝖨^A, Σ_a ᵃX_Λᵀ (𝗉^A + 𝖨^A 𝖼)_a into its 𝗉^A,
    and per output body ("port") p the columns V_p = Σ_{a: Λ(a) = p} ᵃX_Λᵀ 𝖴_a, kept at wc[GV] (the
    port's sub-index in its cluster at wc[GS]). Returns the number of ports."""
    first, nb, m = ic[k, L.C_FIRST], ic[k, L.C_NB], ic[k, L.C_M]
    nb6 = 6 * nb
    IA, U, MK = ic[k, L.C_IA], ic[k, L.C_U], ic[k, L.C_MASK]
    p_k = ic[k, L.C_PARENT]
    tmp = ic[k, L.C_DSCR] + m * m + 36  # the block transforms' scratch
    ng = 0
    for a in range(nb):
        ia = cb[first + a]
        Ra, pa_ = placement_in_output(ib, ws, ic, k, ia)
        lam = ib[ia, L.I_OUT]
        sa = ib[lam, L.I_SUB]
        g = 0
        while g < ng and wc[GS + g] != sa:
            g += 1
        if g == ng:
            wc[GS + g] = sa
            for x in range(6 * m):
                wc[GV + g * 6 * m + x] = 0.0
            ng += 1
        for l in range(m):
            xu = ops.force_to_parent(Ra, pa_, u_col(wc, U, m, a, l))
            for r in range(6):
                wc[GV + g * 6 * m + r * m + l] += xu[r]
        # full-rank part: the diagonal block to the port's diagonal block, then any off-diagonal ones
        pb_ = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        if bias:
            pb_ = ops.add6(ops.load6(ws, ia, L.W_F), diag_mul(ib, ws, ia, ops.load6(ws, ia, L.W_C)))
        inertia_to_output(ib, ws, ia, Ra, pa_, lam)
        for b in range(nb):
            if b == a or wc[MK + a * nb + b] == 0.0:
                continue
            ibb = cb[first + b]
            src = IA + (6 * a) * nb6 + 6 * b
            if bias:
                pb_ = ops.add6(pb_, ops.block_mul(wc, src, nb6, ops.load6(ws, ibb, L.W_C)))
            Rb, pb = placement_in_output(ib, ws, ic, k, ibb)
            dst_arr, dst, dstride = parent_block(ws, ic, cb, wc, p_k, sa, ib[ib[ibb, L.I_OUT], L.I_SUB])
            ops.gen6_to_parent(wc, src, nb6, Ra, pa_, Rb, pb, dst_arr, dst, dstride, wc, tmp)
        if bias:
            ops.add_to6(ws, lam, L.W_F, ops.force_to_parent(Ra, pa_, pb_))
    return ng


@inlined
def c_aba_low_rank(ib, ws, ic, cb, wc, k, GS, GV, ng, bias):
    """Cluster k to its parent, second half (eq. 56): with 𝗐 = 𝖣⁻¹ (𝗎 − 𝖴ᵀ𝖼), the parent's
    𝗉^A += V 𝗐 and 𝖨^A −= V 𝖣⁻¹ Vᵀ over the ports of :func:`c_aba_ports`."""
    first, nb, m = ic[k, L.C_FIRST], ic[k, L.C_NB], ic[k, L.C_M]
    U, DI, UU, DS = ic[k, L.C_U], ic[k, L.C_DINV], ic[k, L.C_UU], ic[k, L.C_DSCR]
    p_k = ic[k, L.C_PARENT]
    pfirst = ic[p_k, L.C_FIRST]
    W = DS + m * m  # 𝗐, held after 𝖣 in the scratch; 𝗎 − 𝖴ᵀ𝖼 at W + 36
    for l in range(m if bias else 0):
        e = wc[UU + l]
        for a in range(nb):
            e -= ops.dot6(u_col(wc, U, m, a, l), ops.load6(ws, cb[first + a], L.W_C))
        wc[W + 36 + l] = e
    for l in range(m if bias else 0):
        acc = 0.0
        for l2 in range(m):
            acc += wc[DI + l * m + l2] * wc[W + 36 + l2]
        wc[W + l] = acc
    for g1 in range(ng):
        s1 = int(wc[GS + g1])
        V1 = GV + g1 * 6 * m  # V_g1 (6 × m, row-major)
        port = cb[pfirst + s1]
        for r in range(6 if bias else 0):  # bias: + V_g1 𝗐
            acc = 0.0
            for l in range(m):
                acc += wc[V1 + r * m + l] * wc[W + l]
            ws[port, L.W_F + r] += acc
        for g2 in range(ng):  # low-rank part: − V_g1 𝖣⁻¹ V_g2ᵀ
            V2 = GV + g2 * 6 * m
            dst_arr, dst, dstride = parent_block(ws, ic, cb, wc, p_k, s1, int(wc[GS + g2]))
            for r in range(6):
                for l1 in range(m):
                    vd = 0.0
                    for l2 in range(m):
                        vd += wc[V1 + r * m + l2] * wc[DI + l2 * m + l1]
                    if vd != 0.0:
                        for c in range(6):
                            dst_arr[dst + r * dstride + c] -= vd * wc[V2 + c * m + l1]


@inlined
def c_aba_star(ib, ws, ic, cb, wc, k, tau, has_armature, bias):
    """A star cluster k (layout ``C_STAR``: one independent coordinate y, every body b hinged on the
    same output body Λ, e.g. a link and its geared rotor) in one step of C-ABA's backward pass
    (Alg. lines 25–33, eqs. 49 and 56), in registers. 𝖲 block b = s_b G_b and 𝖨^A is block-diagonal,
    so with 𝖴_b = 𝖨^A_b 𝖲_b, 𝗎 = τ − Σ 𝖲_bᵀ𝗉^A_b, 𝖣 = Σ 𝖲_bᵀ𝖴_b (+ Σ G_b² armature_b) and the one port
    V = Σ ᵇX_Λᵀ 𝖴_b, the parent's 𝖨^A += Σ ᵇX_Λᵀ 𝖨^A_b ᵇX_Λ − V Vᵀ/𝖣 (a rotor's term is its constant
    W_IPAR) and its 𝗉^A += Σ ᵇX_Λᵀ (𝗉^A + 𝖨^A 𝖼)_b + V (𝗎 − Σ 𝖴_b·𝖼_b)/𝖣. Leaves 𝖴, 𝗎 and 𝖣⁻¹ where
    the generic step does, 𝖣 too (for :func:`c_aba_forward`, the Delassus and spatial-operator
    sweeps), and V at :func:`port_at`. False if 𝖣 ≤ 0."""
    first, nb, U, G = ic[k, L.C_FIRST], ic[k, L.C_NB], ic[k, L.C_U], ic[k, L.C_G]
    to_parent = ic[k, L.C_PARENT] != 0
    lam = ib[cb[first], L.I_OUT]
    u = tau[ic[k, L.C_IV]] if bias else 0.0
    d = 0.0
    uc = 0.0  # Σ 𝖴_b·𝖼_b
    V = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    for j in range(nb):
        i = cb[first + j]
        g = wc[G + j]
        sg = ops.scale6(s_column(ib, ws, i, 0), g)  # 𝖲_b (body frame)
        Ub = diag_mul(ib, ws, i, sg)
        for r in range(6):
            wc[U + 6 * j + r] = Ub[r]
        d += ops.dot6(sg, Ub)
        if has_armature:
            d += g * g * _armature(ic, wc, k, j)
        if bias:
            u -= ops.dot6(sg, ops.load6(ws, i, L.W_F))
        if to_parent:  # carry body b's full-rank part and its 𝖴 column to Λ's frame
            R, p = ops.load9(ws, i, L.W_R), ops.load3(ws, i, L.W_P)  # ᵇX_Λ: b is hinged on Λ
            V = ops.add6(V, ops.force_to_parent(R, p, Ub))
            if bias:
                cvec = ops.load6(ws, i, L.W_C)
                uc += ops.dot6(Ub, cvec)
                pb = ops.add6(ops.load6(ws, i, L.W_F), diag_mul(ib, ws, i, cvec))  # (𝗉^A + 𝖨^A 𝖼)_b
                ops.add_to6(ws, lam, L.W_F, ops.force_to_parent(R, p, pb))
            inertia_to_output(ib, ws, i, R, p, lam)
    if not d > 0.0:
        return False
    dinv = 1.0 / d
    wc[ic[k, L.C_UU]] = u
    wc[ic[k, L.C_DSCR]] = d  # 𝖣 itself (the spatial-operator sweeps factor it again)
    wc[ic[k, L.C_DINV]] = dinv
    if to_parent:  # the low-rank part through the one port, kept for the Delassus sweeps
        w = (u - uc) * dinv
        P = port_at(ic, k)
        for r in range(6):
            wc[P + r] = V[r]
            if bias:
                ws[lam, L.W_F + r] += V[r] * w
            vr = V[r] * dinv
            for c in range(6):
                ws[lam, L.W_IA + 6 * r + c] -= vr * V[c]
    return True


@inlined
def small_spd_inverse(wc, DS, DI, m):
    """𝖣⁻¹ at wc[DI] of the m × m 𝖣 at wc[DS] (closed form for m ≤ 2, else by Cholesky with the scratch
    after 𝖣). False if 𝖣 is not positive definite."""
    if m == 1:
        if not wc[DS] > 0.0:
            return False
        wc[DI] = 1.0 / wc[DS]
        return True
    if m == 2:
        ok, i00, i01, i11 = ops.spd2_inverse(wc[DS], wc[DS + 1], wc[DS + 3])
        if not ok:
            return False
        wc[DI], wc[DI + 1], wc[DI + 2], wc[DI + 3] = i00, i01, i01, i11
        return True
    return ops.spd_inverse(wc, DS, m, wc, DI, wc, DS + m * m)


@njit(cache=True)  # called by its lazy pass (c_aba_one_port_pass), not inlined into the backward pass
def c_aba_one_port(ib, ws, ic, cb, wc, k, tau, has_armature, bias):
    """A one-port cluster k (layout ``C_ONEPORT``: every body b has the same output body Λ, and no
    child cluster couples two of its bodies, so 𝖨^A is block-diagonal) in one step of C-ABA's
    backward pass (Alg. lines 25–33, eqs. 49 and 56) — the star step for any number m of coordinates
    and bodies with in-cluster parents (𝖲 from the cluster kinematics' table). Per body b:
    𝖴_b = 𝖨^A_b 𝖲_b, 𝗎 −= 𝖲_bᵀ𝗉^A_b, 𝖣 += 𝖲_bᵀ𝖴_b, the port V += ᵇX_Λᵀ 𝖴_b and the full-rank part
    ᵇX_Λᵀ 𝖨^A_b ᵇX_Λ, ᵇX_Λᵀ (𝗉^A + 𝖨^A 𝖼)_b into Λ; then Λ's 𝖨^A −= V 𝖣⁻¹ Vᵀ and its
    𝗉^A += V 𝖣⁻¹ (𝗎 − 𝖴ᵀ𝖼). Leaves 𝖴, 𝗎, 𝖣 and 𝖣⁻¹ where the generic step does. False if 𝖣 is not
    positive definite."""
    first, nb, m, iv = ic[k, L.C_FIRST], ic[k, L.C_NB], ic[k, L.C_M], ic[k, L.C_IV]
    U, DI, UU, DS = ic[k, L.C_U], ic[k, L.C_DINV], ic[k, L.C_UU], ic[k, L.C_DSCR]
    to_parent = ic[k, L.C_PARENT] != 0
    lam = ib[cb[first], L.I_OUT]
    V = port_at(ic, k)  # the port (6 × m, row-major)
    UC = V + 6 * m  # 𝗎 − 𝖴ᵀ𝖼 (m), after V (the group scratch holds nb ≥ 2 of them)
    for l in range(m):
        wc[UU + l] = tau[iv + l] if bias else 0.0
        wc[UC + l] = wc[UU + l]
        for r in range(6):
            wc[V + r * m + l] = 0.0
    for x in range(m * m):
        wc[DS + x] = 0.0
    for a in range(nb):
        i = cb[first + a]
        R, p = placement_in_output(ib, ws, ic, k, i)
        for l in range(m):  # 𝖴_b = 𝖨^A_b 𝖲_b (eq. 49) and its port column
            Ub = diag_mul(ib, ws, i, s_col(ib, ws, ic, cb, wc, k, a, l))
            for r in range(6):
                wc[U + (6 * a + r) * m + l] = Ub[r]
            if to_parent:
                xu = ops.force_to_parent(R, p, Ub)
                for r in range(6):
                    wc[V + r * m + l] += xu[r]
        for l1 in range(m):  # 𝖣 += 𝖲_bᵀ 𝖴_b (lower triangle)
            sl = s_col(ib, ws, ic, cb, wc, k, a, l1)
            for l2 in range(l1 + 1):
                wc[DS + l1 * m + l2] += ops.dot6(sl, u_col(wc, U, m, a, l2))
        if bias:  # 𝗎 −= 𝖲_bᵀ 𝗉^A_b; 𝗎 − 𝖴ᵀ𝖼 likewise
            fa, ca = ops.load6(ws, i, L.W_F), ops.load6(ws, i, L.W_C)
            for l in range(m):
                su = ops.dot6(s_col(ib, ws, ic, cb, wc, k, a, l), fa)
                wc[UU + l] -= su
                wc[UC + l] -= su + ops.dot6(u_col(wc, U, m, a, l), ca)
            if to_parent:
                pb = ops.add6(fa, diag_mul(ib, ws, i, ca))  # (𝗉^A + 𝖨^A 𝖼)_b
                ops.add_to6(ws, lam, L.W_F, ops.force_to_parent(R, p, pb))
        if to_parent:
            inertia_to_output(ib, ws, i, R, p, lam)
    for l1 in range(m):
        for l2 in range(l1):
            wc[DS + l2 * m + l1] = wc[DS + l1 * m + l2]
    if has_armature:  # 𝖣 += Gᵀ diag(A) G, 𝗎 −= Gᵀ diag(A) g
        for l1 in range(m):
            for j in range(ic[k, L.C_N]):
                arm = _armature(ic, wc, k, j)
                if arm != 0.0:
                    ga = _g(ic, wc, k, j, l1) * arm
                    for l2 in range(m):
                        wc[DS + l1 * m + l2] += ga * _g(ic, wc, k, j, l2)
                    if bias:
                        wc[UU + l1] -= ga * wc[ic[k, L.C_GB] + j]
                        wc[UC + l1] -= ga * wc[ic[k, L.C_GB] + j]
    if not small_spd_inverse(wc, DS, DI, m):
        return False
    if to_parent:  # the low-rank part through the one port: 𝗐 = 𝖣⁻¹ (𝗎 − 𝖴ᵀ𝖼)
        for r in range(6):
            acc = 0.0
            for l in range(m):
                vd = 0.0
                for l2 in range(m):
                    vd += wc[V + r * m + l2] * wc[DI + l2 * m + l]
                if bias:
                    acc += vd * wc[UC + l]
                for c in range(6):
                    ws[lam, L.W_IA + 6 * r + c] -= vd * wc[V + c * m + l]
            if bias:
                ws[lam, L.W_F + r] += acc
    return True


@njit(cache=True)
def c_aba_one_port2(ib, ws, ic, cb, wc, k, tau, has_armature, bias):
    """:func:`c_aba_one_port` for two coordinates (m = 2: Tello's differentials, a belt pair), in
    registers: the two columns of the port V, 𝖣 and 𝗎 − 𝖴ᵀ𝖼 are tuples and scalars, never stored and
    read back in the loop over bodies. Same outputs in the same places."""
    first, nb, iv = ic[k, L.C_FIRST], ic[k, L.C_NB], ic[k, L.C_IV]
    U, DI, UU, DS, S = ic[k, L.C_U], ic[k, L.C_DINV], ic[k, L.C_UU], ic[k, L.C_DSCR], ic[k, L.C_S]
    to_parent = ic[k, L.C_PARENT] != 0
    lam = ib[cb[first], L.I_OUT]
    z6 = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    V0, V1 = z6, z6  # the port's two columns
    d00, d01, d11 = 0.0, 0.0, 0.0
    u0 = tau[iv] if bias else 0.0
    u1 = tau[iv + 1] if bias else 0.0
    uc0, uc1 = u0, u1  # 𝗎 − 𝖴ᵀ𝖼
    pl = z6  # Σ ᵇX_Λᵀ (𝗉^A + 𝖨^A 𝖼)_b
    for a in range(nb):
        i = cb[first + a]
        R, p = placement_in_output(ib, ws, ic, k, i)
        s0 = ops.col6w(wc, S + 12 * a, 2)
        s1 = ops.col6w(wc, S + 12 * a + 1, 2)
        U0 = diag_mul(ib, ws, i, s0)  # 𝖴_b = 𝖨^A_b 𝖲_b (eq. 49)
        U1 = diag_mul(ib, ws, i, s1)
        for r in range(6):
            wc[U + 12 * a + 2 * r] = U0[r]
            wc[U + 12 * a + 2 * r + 1] = U1[r]
        d00 += ops.dot6(s0, U0)
        d01 += ops.dot6(s0, U1)
        d11 += ops.dot6(s1, U1)
        if bias:
            fa, ca = ops.load6(ws, i, L.W_F), ops.load6(ws, i, L.W_C)
            su0, su1 = ops.dot6(s0, fa), ops.dot6(s1, fa)
            u0 -= su0
            u1 -= su1
            uc0 -= su0 + ops.dot6(U0, ca)
            uc1 -= su1 + ops.dot6(U1, ca)
            if to_parent:
                pl = ops.add6(pl, ops.force_to_parent(R, p, ops.add6(fa, diag_mul(ib, ws, i, ca))))
        if to_parent:
            V0 = ops.add6(V0, ops.force_to_parent(R, p, U0))
            V1 = ops.add6(V1, ops.force_to_parent(R, p, U1))
            inertia_to_output(ib, ws, i, R, p, lam)
    if has_armature:  # 𝖣 += Gᵀ diag(A) G, 𝗎 −= Gᵀ diag(A) g
        for j in range(ic[k, L.C_N]):
            arm = _armature(ic, wc, k, j)
            g0, g1 = _g(ic, wc, k, j, 0), _g(ic, wc, k, j, 1)
            d00 += g0 * arm * g0
            d01 += g0 * arm * g1
            d11 += g1 * arm * g1
            if bias:
                gbj = arm * wc[ic[k, L.C_GB] + j]
                u0 -= g0 * gbj
                u1 -= g1 * gbj
                uc0 -= g0 * gbj
                uc1 -= g1 * gbj
    wc[UU], wc[UU + 1] = u0, u1
    wc[DS], wc[DS + 1], wc[DS + 2], wc[DS + 3] = d00, d01, d01, d11
    ok, i00, i01, i11 = ops.spd2_inverse(d00, d01, d11)
    if not ok:
        return False
    wc[DI], wc[DI + 1], wc[DI + 2], wc[DI + 3] = i00, i01, i01, i11
    if to_parent:  # the low-rank part through the one port: Λ's 𝖨^A −= V 𝖣⁻¹ Vᵀ, 𝗉^A += V 𝖣⁻¹ (𝗎 − 𝖴ᵀ𝖼)
        P = port_at(ic, k)
        W0 = ops.add6(ops.scale6(V0, i00), ops.scale6(V1, i01))  # V 𝖣⁻¹, column by column
        W1 = ops.add6(ops.scale6(V0, i01), ops.scale6(V1, i11))
        for r in range(6):
            wc[P + 2 * r] = V0[r]
            wc[P + 2 * r + 1] = V1[r]
            for c in range(6):
                ws[lam, L.W_IA + 6 * r + c] -= W0[r] * V0[c] + W1[r] * V1[c]
        if bias:
            ops.add_to6(ws, lam, L.W_F, ops.add6(pl, ops.add6(ops.scale6(W0, uc0), ops.scale6(W1, uc1))))
    return True


# The backward pass's steps for one-port clusters of several bodies and its generic step to the
# parent cluster are lazy passes (loopdyn.jit.lazy): compiled only in a process with a model that
# has such a cluster (loopdyn.Data asks for them, model.data.lazy_code_needed). Stars and a root
# body (Mini Cheetah's, a humanoid's rotors and floating base) never compile them: 2 of the 9.9 s
# of Mini Cheetah's first C-ABA call. The arrays go as addresses and sizes, as for the implicit
# loops' pass (cluster_kinematics.implicit_coordinates_pass).
_LAZY_ABA_SIG = "int64(" + ", ".join(["int64"] * 15) + ")"


@inlined
def _tables_at(ib_at, nib, ws_at, nws, ic_at, nic, cb_at, ncb, wc_at, nwc):
    """``ib, ws, ic, cb, wc`` from their addresses and sizes (:func:`~.borrow.address_of`)."""
    return (ints_at(ib_at, (nib, L.NI)), floats_at(ws_at, (nws, L.NW)), ints_at(ic_at, (nic, L.NC)),
            ints_at(cb_at, (ncb,)), floats_at(wc_at, (nwc,)))  # fmt: skip


@lazy(_LAZY_ABA_SIG, missing_status=LOOP_CODE_MISSING * STATUS_BASE, needed_by="one_port_clusters")
def c_aba_one_port_pass(ib_at, nib, ws_at, nws, ic_at, nic, cb_at, ncb, wc_at, nwc, k, tau_at, ntau,
                        has_armature, bias):  # fmt: skip
    """:func:`c_aba_one_port` (one-port clusters with m ≠ 2: the four-bar, the delta robot) as a lazy
    pass. Returns 0 or a SINGULAR status."""
    ib, ws, ic, cb, wc = _tables_at(ib_at, nib, ws_at, nws, ic_at, nic, cb_at, ncb, wc_at, nwc)
    if not c_aba_one_port(ib, ws, ic, cb, wc, k, floats_at(tau_at, (ntau,)), has_armature != 0, bias != 0):
        return SINGULAR * STATUS_BASE + cb[ic[k, L.C_FIRST]]
    return 0


@lazy(_LAZY_ABA_SIG, missing_status=LOOP_CODE_MISSING * STATUS_BASE, needed_by="one_port_pairs")
def c_aba_one_port2_pass(ib_at, nib, ws_at, nws, ic_at, nic, cb_at, ncb, wc_at, nwc, k, tau_at, ntau,
                         has_armature, bias):  # fmt: skip
    """:func:`c_aba_one_port2` (one-port clusters with m = 2: Tello's differentials, the five-bar, a
    belt pair) as a lazy pass. Returns 0 or a SINGULAR status."""
    ib, ws, ic, cb, wc = _tables_at(ib_at, nib, ws_at, nws, ic_at, nic, cb_at, ncb, wc_at, nwc)
    if not c_aba_one_port2(ib, ws, ic, cb, wc, k, floats_at(tau_at, (ntau,)), has_armature != 0, bias != 0):
        return SINGULAR * STATUS_BASE + cb[ic[k, L.C_FIRST]]
    return 0


_call_one_port = c_aba_one_port_pass.call
_call_one_port2 = c_aba_one_port2_pass.call


@inlined
def one_port_call(ib, ws, ic, cb, wc, k, tau, has_armature, bias):
    """One-port cluster k's backward step through its lazy pass; returns its status."""
    if ic[k, L.C_M] == 2:
        return _call_one_port2(address_of(ib), ib.shape[0], address_of(ws), ws.shape[0], address_of(ic),
                               ic.shape[0], address_of(cb), cb.shape[0], address_of(wc), wc.shape[0], k,
                               address_of(tau), tau.shape[0], int(has_armature), int(bias))  # fmt: skip
    return _call_one_port(address_of(ib), ib.shape[0], address_of(ws), ws.shape[0], address_of(ic),
                          ic.shape[0], address_of(cb), cb.shape[0], address_of(wc), wc.shape[0], k,
                          address_of(tau), tau.shape[0], int(has_armature), int(bias))  # fmt: skip


@lazy("int64(" + ", ".join(["int64"] * 12) + ")", missing_status=LOOP_CODE_MISSING * STATUS_BASE,
      needed_by="generic_clusters")  # fmt: skip
def c_aba_to_parent_pass(ib_at, nib, ws_at, nws, ic_at, nic, cb_at, ncb, wc_at, nwc, k, bias):
    """The generic step of cluster k to its parent, after its joint factor (:func:`c_aba_joint_factor`):
    :func:`c_aba_ports`, then :func:`c_aba_low_rank`. For clusters whose bodies hand their parent
    several ports, and single bodies below the root; a lazy pass, since no built-in robot has such a
    cluster (a tree joint after a geared one would be one). Returns 0."""
    ib, ws, ic, cb, wc = _tables_at(ib_at, nib, ws_at, nws, ic_at, nic, cb_at, ncb, wc_at, nwc)
    GS = ic[k, L.C_MASK] + ic[k, L.C_NB] * ic[k, L.C_NB]  # port sub-indices (nb), then V (nb × 6 × m)
    GV = GS + ic[k, L.C_NB]
    ng = c_aba_ports(ib, ws, ic, cb, wc, k, GS, GV, bias != 0)
    c_aba_low_rank(ib, ws, ic, cb, wc, k, GS, GV, ng, bias != 0)
    return 0


_call_to_parent = c_aba_to_parent_pass.call


@inlined
def to_parent_call(ib, ws, ic, cb, wc, k, bias):
    """The generic step of cluster k to its parent through its lazy pass; returns its status."""
    return _call_to_parent(address_of(ib), ib.shape[0], address_of(ws), ws.shape[0], address_of(ic),
                            ic.shape[0], address_of(cb), cb.shape[0], address_of(wc), wc.shape[0], k,
                            int(bias))  # fmt: skip


@shared
def c_aba_backward(ib, ws, ic, cb, wc, tau, fext):
    """C-ABA's first two passes (after the cluster kinematics): per cluster the articulated inertia
    𝖨^A, 𝖴 = 𝖨^A 𝖲, 𝖣⁻¹ and 𝗎 = τ − 𝖲ᵀ𝗉^A. Returns 0 or a SINGULAR status.

    To the parent cluster (Alg. lines 30–33) 𝖨^a = 𝖨^A − 𝖴𝖣⁻¹𝖴ᵀ is never formed densely: with 𝒳 the
    (sparse) cluster transform and V_p = Σ_{a: Λ(a) = p} ᵃX_Λᵀ 𝖴_a per output body p,
    𝒳ᵀ𝖨^a𝒳 = Σ_{non-zero blocks} ᵃX_Λᵀ 𝖨^A_ab ᵇX_Λ − V 𝖣⁻¹ Vᵀ and
    𝒳ᵀ𝗉^a = Σ_a ᵃX_Λᵀ (𝗉^A + 𝖨^A 𝖼)_a + V 𝖣⁻¹ (𝗎 − 𝖴ᵀ𝖼) (eq. 56).

    An empty ``tau``: the articulated inertias alone (𝖨^A, 𝖴, 𝖣, 𝖣⁻¹; no 𝗉^A, no 𝗎), as the Delassus
    and spatial-operator sweeps need after positions-only kinematics."""
    # uncounted here too: the call boundary hides that the caller's arrays are borrowed
    ib, ws, ic, cb, wc, tau, fext = borrowed((ib, ws, ic, cb, wc, tau, fext))
    has_armature = ws[0, L.W_ARM] != 0.0  # set when the model has armature
    bias = tau.shape[0] != 0
    c_aba_init(ib, ws, ic, cb, wc, fext, bias)
    for k in range(ic[0, L.C0_NCL], 0, -1):  # backward pass (lines 25–35)
        if ic[k, L.C_STAR] != 0:
            if not c_aba_star(ib, ws, ic, cb, wc, k, tau, has_armature, bias):
                return SINGULAR * STATUS_BASE + cb[ic[k, L.C_FIRST]]
            continue
        if ic[k, L.C_ONEPORT] != 0:
            status = one_port_call(ib, ws, ic, cb, wc, k, tau, has_armature, bias)
            if status != 0:
                return status
            continue
        if not c_aba_joint_factor(ib, ws, ic, cb, wc, k, tau, has_armature, bias):
            return SINGULAR * STATUS_BASE + cb[ic[k, L.C_FIRST]]
        if ic[k, L.C_PARENT] != 0:
            status = to_parent_call(ib, ws, ic, cb, wc, k, bias)
            if status != 0:
                return status
    return 0


@shared
def c_aba_forward(ib, ws, ic, cb, wc, ddy):
    """C-ABA's last pass (lines 38–43): ÿ and the body accelerations, after :func:`c_aba_backward`."""
    # uncounted here too: the call boundary hides that the caller's arrays are borrowed
    ib, ws, ic, cb, wc, ddy = borrowed((ib, ws, ic, cb, wc, ddy))
    ncl = ic[0, L.C0_NCL]
    ops.store6(ws, 0, L.W_A, gravity_seed(ws))
    for k in range(1, ncl + 1):
        first, nb, m, iv = ic[k, L.C_FIRST], ic[k, L.C_NB], ic[k, L.C_M], ic[k, L.C_IV]
        U, DI, UU, DS = ic[k, L.C_U], ic[k, L.C_DINV], ic[k, L.C_UU], ic[k, L.C_DSCR]
        if m == 1 and has_port(ic, k):  # one coordinate, one output body: in scalars
            aL = ops.load6(ws, ib[cb[first], L.I_OUT], L.W_A)
            acc = wc[UU]
            for j in range(nb):  # 𝖺' = ᵇX_Λ 𝖺_Λ + 𝖼 and 𝗎 − 𝖴ᵀ 𝖺'
                i = cb[first + j]
                ap = ops.add6(ops.motion_to_child(ops.load9(ws, i, L.W_XR), ops.load3(ws, i, L.W_XP), aL),
                              ops.load6(ws, i, L.W_C))  # fmt: skip
                ops.store6(ws, i, L.W_A, ap)
                acc -= ops.dot6(ops.load6_at(wc, U + 6 * j), ap)
            y = wc[DI] * acc
            ddy[iv] = y
            S = ic[k, L.C_S]
            for j in range(nb):  # 𝖺 = 𝖺' + 𝖲 ÿ
                i = cb[first + j]
                ai = ops.add6(ops.load6(ws, i, L.W_A), ops.scale6(ops.load6_at(wc, S + 6 * j), y))
                ops.store6(ws, i, L.W_A, ai)
            continue
        if m == 2:  # two coordinates, in registers: 𝗎 − 𝖴ᵀ𝖺' summed as the 𝖺' are made
            r0, r1 = wc[UU], wc[UU + 1]
            for j in range(nb):
                i = cb[first + j]
                R, p = placement_in_output(ib, ws, ic, k, i)
                ap = ops.add6(ops.motion_to_child(R, p, ops.load6(ws, ib[i, L.I_OUT], L.W_A)),
                              ops.load6(ws, i, L.W_C))  # fmt: skip
                ops.store6(ws, i, L.W_A, ap)
                r0 -= ops.dot6(ops.col6w(wc, U + 12 * j, 2), ap)
                r1 -= ops.dot6(ops.col6w(wc, U + 12 * j + 1, 2), ap)
            y0 = wc[DI] * r0 + wc[DI + 1] * r1
            y1 = wc[DI + 2] * r0 + wc[DI + 3] * r1
            ddy[iv], ddy[iv + 1] = y0, y1
            S = ic[k, L.C_S]
            for j in range(nb):  # 𝖺 = 𝖺' + 𝖲 ÿ
                i = cb[first + j]
                sy = ops.add6(ops.scale6(ops.col6w(wc, S + 12 * j, 2), y0),
                              ops.scale6(ops.col6w(wc, S + 12 * j + 1, 2), y1))  # fmt: skip
                ops.store6(ws, i, L.W_A, ops.add6(ops.load6(ws, i, L.W_A), sy))
            continue
        for j in range(nb):  # 𝖺' = ᵏ𝖷_λ 𝖺_λ + 𝖼
            i = cb[first + j]
            R, p = placement_in_output(ib, ws, ic, k, i)
            ap = ops.add6(
                ops.motion_to_child(R, p, ops.load6(ws, ib[i, L.I_OUT], L.W_A)), ops.load6(ws, i, L.W_C)
            )
            ops.store6(ws, i, L.W_A, ap)
        for l in range(m):  # 𝗎 − 𝖴ᵀ 𝖺'
            acc = wc[UU + l]
            for j in range(nb):
                acc -= ops.dot6(ops.col6w(wc, U + (6 * j) * m + l, m), ops.load6(ws, cb[first + j], L.W_A))
            wc[DS + l] = acc
        for l in range(m):  # ÿ = 𝖣⁻¹ (𝗎 − 𝖴ᵀ 𝖺')
            acc = 0.0
            for l2 in range(m):
                acc += wc[DI + l * m + l2] * wc[DS + l2]
            ddy[iv + l] = acc
        for j in range(nb):  # 𝖺 = 𝖺' + 𝖲 ÿ
            i = cb[first + j]
            acc6 = ops.load6(ws, i, L.W_A)
            for l in range(m):
                acc6 = ops.add6(acc6, ops.scale6(s_col(ib, ws, ic, cb, wc, k, j, l), ddy[iv + l]))
            ops.store6(ws, i, L.W_A, acc6)
    return 0


# ---------------------------------------------------------------------------------------------
# mass matrix H = Gᵀ H_span G: the spanning tree's CRBA (composite inertias, F = Ic S carried to the
# ancestors) with every entry H_span[r, s] projected on the independent coordinates as it is made,
# through the sparse rows of G (layout.C0_GMAP): no nvs × nvs matrix, no dense projection
@inlined
def project_entry(ic, cb, wc, H, r, s, h):
    """Add H_span[r, s] = h (and, for r ≠ s, H_span[s, r]) to H = Gᵀ H_span G, lower triangle only
    (exactly symmetric once mirrored): H[a, b] += G[r, a] h G[s, b] for a ≥ b, the transposed
    term for b ≥ a."""
    GM = ic[0, L.C0_GMAP]
    for e in range(GM + cb[GM + r], GM + cb[GM + r + 1], 2):
        x = wc[cb[e + 1]] * h
        a = cb[e]
        for f in range(GM + cb[GM + s], GM + cb[GM + s + 1], 2):
            y = x * wc[cb[f + 1]]
            b = cb[f]
            if a >= b:
                H[a, b] += y
            if r != s and b >= a:
                H[b, a] += y


@inlined
def c_crba_star_column(ib, ws, ic, cb, wc, k, H):
    """Column of H for star cluster k (layout ``C_STAR``: one coordinate y, bodies b hinged on the
    same body Λ, composite inertias complete): since no body of the cluster supports another,
    Σ_b G_b ᵇX_Λᵀ Ic_b s_b is the cluster's composite force in Λ's frame, so
    ``H[y, y] = Σ_b G_b² (s_bᵀ Ic_b s_b + armature_b)`` and, carried up Λ's ancestors j,
    ``H[y, ·] += Gᵀ_j (s_j · F)`` — one walk to the root per cluster instead of one per body."""
    first, nb, G, iv = ic[k, L.C_FIRST], ic[k, L.C_NB], ic[k, L.C_G], ic[k, L.C_IV]
    F = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    h = 0.0
    for j in range(nb):
        i = cb[first + j]
        g = wc[G + j]
        s = s_column(ib, ws, i, 0)
        Fi = ops.inertia_mul(ops.load10(ws, i, L.W_IC), s)
        h += g * g * (ops.dot6(s, Fi) + ws[i, L.W_ARM])
        R, p = ops.load9(ws, i, L.W_R), ops.load3(ws, i, L.W_P)  # ᵇX_Λ: b is hinged on Λ
        F = ops.add6(F, ops.scale6(ops.force_to_parent(R, p, Fi), g))
    H[iv, iv] += h
    GM = ic[0, L.C0_GMAP]
    j = ib[cb[first], L.I_PARENT]
    while j > 0:
        ivj = ib[j, L.I_IV]
        for x in range(ib[j, L.I_NV]):  # H[y, a] += G[r, a] (s_r · F), r = j's spanning coordinate
            e = ops.dot6(s_column(ib, ws, j, x), F)
            r = ivj + x
            for f in range(GM + cb[GM + r], GM + cb[GM + r + 1], 2):
                a = cb[f]
                if a <= iv:
                    H[iv, a] += wc[cb[f + 1]] * e
                else:
                    H[a, iv] += wc[cb[f + 1]] * e
        if ib[j, L.I_PARENT] > 0:
            F = ops.force_to_parent(ops.load9(ws, j, L.W_R), ops.load3(ws, j, L.W_P), F)
        j = ib[j, L.I_PARENT]


@inlined
def lower_add(H, y, a, h):
    """H[y, a] += h in the lower triangle (y ≠ a)."""
    if a <= y:
        H[y, a] += h
    else:
        H[a, y] += h


@inlined
def g_pair(wc, G, m, j):
    """Row j of a cluster's G (at wc[G], m ≤ 2 columns) as two numbers, the second 0 when m = 1."""
    return wc[G + j * m], (wc[G + j * m + 1] if m == 2 else 0.0)


@njit(cache=True, fastmath={"contract"})
def c_crba_one_port_pair(ib, ws, ic, cb, wc, k, H):
    """Rows of H of one-port cluster k (layout ``C_ONEPORT``: every body has the same output body Λ)
    of 1-DoF bodies with m ≤ 2 independent coordinates (every one-port cluster of the built-in
    robots), called once every composite inertia of the cluster is complete. Body b's spanning
    coordinate r is row b of the cluster's G (``g_pair``). Inside the cluster, F_r = Ic_b s_b walks
    up the in-cluster parents (``ib[·, I_CPAR]``) and the block ``Σ G[r, ·]ᵀ H_span[r, s] G[s, ·]``
    is summed in three numbers (h00, h10, h11). Outside, F_r is carried to Λ's frame and combined
    per independent coordinate, ``F_l = Σ_r G[r, l] ᵇX_Λᵀ F_r`` (the composite force of the cluster
    moving along ÿ_l), and the m combined columns walk from Λ to the root once,
    ``H[y_l, a] += G[s, a] (S_s · F_l)`` for every coordinate s of Λ and its ancestors (rows of G
    through layout.C0_GMAP): H = Gᵀ H_span G (spec §2.3) regrouped by the linearity of F in G, m
    walks to the root per cluster instead of one per body; everything in registers."""
    first, nb, m, y0, G = ic[k, L.C_FIRST], ic[k, L.C_NB], ic[k, L.C_M], ic[k, L.C_IV], ic[k, L.C_G]
    out = ib[cb[first], L.I_OUT]
    C0 = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    C1 = C0
    h00, h10, h11 = 0.0, 0.0, 0.0
    for b in range(nb):
        i = cb[first + b]
        g0, g1 = g_pair(wc, G, m, b)
        si = s_column(ib, ws, i, 0)
        F = ops.inertia_mul(ops.load10(ws, i, L.W_IC), si)
        h = ops.dot6(si, F) + ws[i, L.W_ARM]  # H_span[r, r]
        h00 += g0 * g0 * h
        h10 += g1 * g0 * h
        h11 += g1 * g1 * h
        j = i
        while True:  # F up the in-cluster ancestors j: H_span[r, s] = H_span[s, r] = s_jᵀ F
            up = ib[j, L.I_CPAR]
            if up == 0 and out == 0:
                break
            F = ops.force_to_parent(ops.load9(ws, j, L.W_R), ops.load3(ws, j, L.W_P), F)
            if up == 0:
                break
            j = up
            e0, e1 = g_pair(wc, G, m, ib[j, L.I_SUB])
            h = ops.dot6(s_column(ib, ws, j, 0), F)
            h00 += 2.0 * g0 * e0 * h
            h10 += (g1 * e0 + e1 * g0) * h
            h11 += 2.0 * g1 * e1 * h
        C0 = ops.add6(C0, ops.scale6(F, g0))  # F_l += G[r, l] F_r, in Λ's frame (unused if Λ = world)
        C1 = ops.add6(C1, ops.scale6(F, g1))
    H[y0, y0] += h00
    if m == 2:
        H[y0 + 1, y0] += h10
        H[y0 + 1, y0 + 1] += h11
    GM = ic[0, L.C0_GMAP]
    j = out
    while j > 0:
        ivj = ib[j, L.I_IV]
        for x in range(ib[j, L.I_NV]):  # H[y_l, a] += G[s, a] (s_s · F_l), s = j's coordinate
            sx = s_column(ib, ws, j, x)
            h0 = ops.dot6(sx, C0)
            h1 = ops.dot6(sx, C1)
            s = ivj + x
            for f in range(GM + cb[GM + s], GM + cb[GM + s + 1], 2):
                a, g = cb[f], wc[cb[f + 1]]
                lower_add(H, y0, a, g * h0)
                if m == 2:
                    lower_add(H, y0 + 1, a, g * h1)
        up = ib[j, L.I_PARENT]
        if up > 0:
            R, p = ops.load9(ws, j, L.W_R), ops.load3(ws, j, L.W_P)
            C0 = ops.force_to_parent(R, p, C0)
            C1 = ops.force_to_parent(R, p, C1)
        j = up


@inlined
def one_port_pair_fits(ib, ic, cb, k):
    """Whether one-port cluster k takes :func:`c_crba_one_port_pair`: m ≤ 2, every body 1-DoF."""
    if ic[k, L.C_M] > 2:
        return False
    for b in range(ic[k, L.C_NB]):
        if ib[cb[ic[k, L.C_FIRST] + b], L.I_NV] != 1:
            return False
    return True


@shared(fastmath={"contract"})  # fused multiply-adds, as the tree CRBA
def c_crba_core(ib, ws, ic, cb, wc, code, consts, table, outputs, q, H):
    # uncounted here too: the call boundary hides that the caller's arrays are borrowed
    ib, ws, ic, cb, wc, code, consts, table, outputs, q, H = borrowed(
        (ib, ws, ic, cb, wc, code, consts, table, outputs, q, H)
    )
    st = spanning_positions_all(ib, ic, cb, wc, code, consts, table, outputs, q)  # (and G if implicit)
    if st != 0:
        return st
    QS = ic[0, L.C0_QS]
    qs = wc[QS : QS + ic[0, L.C0_NQS]]
    nb = ib[0, L.I0_NBODIES]
    T = L.W_TMP  # F = Ic S, one 6-column per DoF of the body, in row 0's scratch
    zero_fill(H)  # entries of clusters on different branches stay zero
    for i in range(1, nb + 1):
        jcalc(ib, ws, i, qs)
        ops.store10(ws, i, L.W_IC, ops.load10(ws, i, L.W_INER))
    for i in range(nb, 0, -1):
        par = ib[i, L.I_PARENT]
        Ic = ops.load10(ws, i, L.W_IC)
        if par > 0:  # Ic_λ += ᶦX_λᵀ Ic_i ᶦX_λ
            R, p = ops.load9(ws, i, L.W_R), ops.load3(ws, i, L.W_P)
            Icp = ops.add10(ops.load10(ws, par, L.W_IC), ops.inertia_to_parent(R, p, Ic))
            ops.store10(ws, par, L.W_IC, Icp)
        kc = ib[i, L.I_CLUSTER]
        tree_joint = ic[kc, L.C_KIND] == L.SINGLE_BODY  # G = 1: its rows are its independent ones
        # a star cluster's column once its first body is reached; a 1-DoF tree joint is a star of one
        # body with G = 1 (its table's G)
        if ic[kc, L.C_STAR] != 0 or (tree_joint and ib[i, L.I_NV] == 1):
            if i == cb[ic[kc, L.C_FIRST]]:
                c_crba_star_column(ib, ws, ic, cb, wc, kc, H)
            continue
        if tree_joint and par == 0 and ib[i, L.I_JTYPE] == FREEFLYER:  # a floating base, no products
            freeflyer_block(H, ic[kc, L.C_IV], Ic, ws, i)
            continue
        # likewise a one-port cluster of 1-DoF bodies with m ≤ 2 (any other: the generic path below)
        if ic[kc, L.C_ONEPORT] != 0 and one_port_pair_fits(ib, ic, cb, kc):
            if i == cb[ic[kc, L.C_FIRST]]:  # its first body is its lowest (compile_clusters)
                c_crba_one_port_pair(ib, ws, ic, cb, wc, kc, H)
            continue
        nvi, ivi = ib[i, L.I_NV], ib[i, L.I_IV]
        y0 = ic[kc, L.C_IV]
        for k in range(nvi):  # F = Ic S ; H_span[ii] = Sᵀ F (+ armature)
            ops.store6(ws, 0, T + 6 * k, ops.inertia_mul(Ic, s_column(ib, ws, i, k)))
        for k in range(nvi):
            sk = s_column(ib, ws, i, k)
            for l in range(k + 1):
                h = ops.dot6(sk, ops.load6(ws, 0, T + 6 * l)) + (ws[i, L.W_ARM + k] if k == l else 0.0)
                if tree_joint:
                    H[y0 + k, y0 + l] += h
                else:
                    project_entry(ic, cb, wc, H, ivi + k, ivi + l, h)
        j = i
        while ib[j, L.I_PARENT] > 0:  # F = ʲX_λᵀ F, H_span[i, λ..] = Fᵀ S_λ
            R, p = ops.load9(ws, j, L.W_R), ops.load3(ws, j, L.W_P)
            for l in range(nvi):
                ops.store6(ws, 0, T + 6 * l, ops.force_to_parent(R, p, ops.load6(ws, 0, T + 6 * l)))
            j = ib[j, L.I_PARENT]
            ivj = ib[j, L.I_IV]
            for k in range(ib[j, L.I_NV]):
                sk = s_column(ib, ws, j, k)
                for l in range(nvi):
                    h = ops.dot6(sk, ops.load6(ws, 0, T + 6 * l))
                    project_entry(ic, cb, wc, H, ivi + l, ivj + k, h)
    for a in range(H.shape[0]):  # the upper triangle from the lower
        for b in range(a):
            H[b, a] = H[a, b]
    return 0


@inlined
def _armature(ic, wc, k, j):
    """Armature of the j-th spanning coordinate of cluster k (from the cluster's table)."""
    return wc[ic[k, L.C_ARM] + j]


@inlined
def _g(ic, wc, k, j, l):
    """G_k[j, l] (the identity for a tree joint, from the cluster's table)."""
    return wc[ic[k, L.C_G] + j * ic[k, L.C_M] + l]


# ---------------------------------------------------------------------------------------------
# kernels and Python wrappers
_SIG_STATE = "int64(int64[::1], float64[::1], float64[::1], float64[::1], float64[::1], float64[::1])"
_SIG_STATE_FEXT = (
    "int64(int64[::1], float64[::1], "
    "float64[::1], float64[::1], float64[::1], float64[:, ::1], "
    "float64[::1])"
)


@sequence
def c_rnea_checked(ints, floats, q, v, a, fext, tau):
    """C-RNEA after validating the inputs; returns the status (0: τ written)."""
    ib, ws, ic, cb, wc = model_views(ints, floats)
    code, consts, table, outputs = tapes(ic, cb, wc)
    st = validate_cluster_state(ib, ic, cb, q, v, a, fext, True)
    if st != 0:
        return st
    return c_rnea_core(ib, ws, ic, cb, wc, code, consts, table, outputs, q, v, a, fext, tau)


@sequence
def c_aba_checked(ints, floats, q, v, tau, fext, ddy):
    """C-ABA after validating the inputs; returns the status (0: ÿ written)."""
    ib, ws, ic, cb, wc = model_views(ints, floats)
    code, consts, table, outputs = tapes(ic, cb, wc)
    st = validate_cluster_state(ib, ic, cb, q, v, tau, fext, True)
    if st != 0:
        return st
    return c_aba_core(ib, ws, ic, cb, wc, code, consts, table, outputs, q, v, tau, fext, ddy)


# with and without f_ext, as the tree's rnea_kernel / rnea_fext_kernel (one argument fewer to dispatch
# in the common call)
@kernel(_SIG_STATE)
def c_rnea_kernel(ints, floats, q, v, a, tau):
    ints, floats, q, v, a, tau = borrowed((ints, floats, q, v, a, tau))
    if not acquire(ints):
        return DATA_IN_USE * STATUS_BASE
    st = c_rnea_checked(ints, floats, q, v, a, view(floats, 0, (0, 6)), tau)
    release(ints)
    return st


@kernel(_SIG_STATE_FEXT)
def c_rnea_fext_kernel(ints, floats, q, v, a, fext, tau):
    ints, floats, q, v, a, fext, tau = borrowed((ints, floats, q, v, a, fext, tau))
    if not acquire(ints):
        return DATA_IN_USE * STATUS_BASE
    st = c_rnea_checked(ints, floats, q, v, a, fext, tau)
    release(ints)
    return st


@kernel(_SIG_STATE)
def c_aba_kernel(ints, floats, q, v, tau, ddy):
    ints, floats, q, v, tau, ddy = borrowed((ints, floats, q, v, tau, ddy))
    if not acquire(ints):
        return DATA_IN_USE * STATUS_BASE
    st = c_aba_checked(ints, floats, q, v, tau, view(floats, 0, (0, 6)), ddy)
    release(ints)
    return st


@kernel(_SIG_STATE_FEXT)
def c_aba_fext_kernel(ints, floats, q, v, tau, fext, ddy):
    ints, floats, q, v, tau, fext, ddy = borrowed((ints, floats, q, v, tau, fext, ddy))
    if not acquire(ints):
        return DATA_IN_USE * STATUS_BASE
    st = c_aba_checked(ints, floats, q, v, tau, fext, ddy)
    release(ints)
    return st


@kernel(
    "int64(int64[::1], float64[::1], "
    "float64[::1], float64[:, ::1])"
)
def c_crba_kernel(ints, floats, q, H):
    ints, floats, q, H = borrowed((ints, floats, q, H))
    ib, ws, ic, cb, wc = model_views(ints, floats)
    code, consts, table, outputs = tapes(ic, cb, wc)
    st = validate_cluster_configuration(ib, ic, cb, q)
    if st != 0:
        return st
    if not acquire(ints):
        return DATA_IN_USE * STATUS_BASE
    st = c_crba_core(ib, ws, ic, cb, wc, code, consts, table, outputs, q, H)
    release(ints)
    return st
