"""Analytical derivatives of inverse and forward dynamics on kinematic trees.

Carpentier & Mansard, "Analytical derivatives of rigid body dynamics algorithms", RSS 2018 (C&M):
the RNEA's partial derivatives by one forward and one backward pass over the tree with every
quantity in the world frame, O(n·d) for n bodies of depth d; the ABA's from them (C&M §IV-C).

Conventions (Pinocchio's): the derivative with respect to q is taken in the tangent space,
``∂f/∂q := ∂/∂δ f(integrate(q, δ))`` at δ = 0, with v, a (or τ) held fixed and the external forces
held fixed in their body frames.

The derivation (world frame, Featherstone's [ω; v] spatial vectors at a fixed origin)
--------------------------------------------------------------------------------------
Body i has world placement ᵒXᵢ, world motion-subspace columns ``S_i = ᵒXᵢ Sᵢᵇ`` (Sᵢᵇ constant in the
body frame), velocity ``v_i = v_λ + S_i q̇_i``, acceleration ``a_i = a_λ + S_i q̈_i + (v_i × S_i) q̇_i``
(``a_0 = −a_gravity``), world inertia ``I_i = ᵒXᵢ* Iᵢᵇ ᵒXᵢ⁻¹``, net force
``f_i = I_i a_i + v_i ×* I_i v_i − f_ext,i`` and ``τ_i = S_iᵀ F_i`` with ``F_i = Σ_{k ⪰ i} f_k``.

(D1) A tangent step δ_j on joint j (a column of S_j: the joint's integrate multiplies its body
placement on the right by the exponential of the body-frame step) moves every body k ⪰ j rigidly
by the world twist S_j: quantities *attached* to such a body change as ``∂X/∂δ_j = S_j × X``
(motions: S_k for k ⪰ j — including the other columns of joint j itself —, f_ext in its body frame),
``S_j ×* F`` (forces), ``S_j ×* I − I S_j ×`` (inertias). C&M eqs. (14)–(15).

(D2) Velocities and accelerations are *not* attached: the parent's v_λ(j), a_λ(j) do not move. With
``Ψ̇_j := v_λ(j) × S_j`` and ``Ψ̈_j := a_λ(j) × S_j + v_λ(j) × Ψ̇_j`` (C&M eq. 16, our notation):
``∂v_k/∂δ_j = S_j × v_k + Ψ̇_j`` and ``∂a_k/∂δ_j = S_j × a_k + Ψ̈_j + Ψ̇_j × v_k`` for k ⪰ j
(sum the attached columns along the path, then the Jacobi identity on ``(v_m × S_m) q̇_m``).

(D3) Hence, for k ⪰ j, ``∂f_k/∂δ_j = S_j ×* f_k + I_k Ψ̈_j + B_k Ψ̇_j`` where the 6 × 6
``B_k x := v_k ×* (I_k x) − I_k (v_k × x) + x ×* (I_k v_k)`` (C&M's B up to a factor): the terms that
move with the body recombine into ``S_j ×* f_k`` (covariance), what is left comes from Ψ̇, Ψ̈.
Summing over the subtree: ``∂F_i/∂δ_j = S_j ×* F_i + Ic_i Ψ̈_j + Bc_i Ψ̇_j`` (i ⪰ j), with the
composite ``Ic_i = Σ_{k⪰i} I_k``, ``Bc_i = Σ_{k⪰i} B_k``.

(D4) ``∂τ_i/∂δ_j``. If j ⪯ i (j = i included): ``∂S_i = S_j × S_i``, and since
``(S_j × S_i)ᵀ F = −S_iᵀ (S_j ×* F)`` the two rigid terms cancel:
``∂τ_i/∂δ_j = (Ic_i S_i)ᵀ Ψ̈_j + (Bc_iᵀ S_i)ᵀ Ψ̇_j``. If i ≺ j (strict ancestor): S_i does not move
and only the subtree of j does: ``∂τ_i/∂δ_j = S_iᵀ (S_j ×* F_j + Ic_j Ψ̈_j + Bc_j Ψ̇_j)``.
C&M Algorithm 1, lines 14–17.

(D5) Velocity: ``∂v_k/∂q̇_j = S_j``, ``∂a_k/∂q̇_j = S_j × v_k + Ψ̇_j + Ṡ_j`` with ``Ṡ_j = v_j × S_j``,
so ``∂f_k/∂q̇_j = I_k (Ψ̇_j + Ṡ_j) + B_k S_j`` and ``∂τ_i/∂q̇_j = (Ic_i S_i)ᵀ (Ψ̇_j + Ṡ_j) +
(Bc_iᵀ S_i)ᵀ S_j`` (j ⪯ i), ``S_iᵀ (Ic_j (Ψ̇_j + Ṡ_j) + Bc_j S_j)`` (i ≺ j). Acceleration:
``∂τ_i/∂q̈_j = S_iᵀ Ic_{max(i,j)} S_j = M_ij`` (+ armature on the diagonal).

Every entry therefore needs only per-body 6-vectors and the composites, and each (body, ancestor)
pair is visited once from the descendant's side: O(n·d). Bodies on different branches give zero.

Workspace (ws rows, the columns of :mod:`loopdyn.model.layout` reused with the meanings below; row 0
holds the universe's v = 0 and a = −a_g):
D_OR, D_OP (W_TMP + 84, + 93) placement in the reference frame (world axes, origin at body 1);
D_V, D_A (W_TMP + 72, + 78) world v_i, a_i; W_F f_i then F_i;
W_IC I_i then Ic_i (compact); W_IA B_i then Bc_i (row-major 6 × 6); W_U the world S_i columns
(column k at +6k); W_DINV Ψ̇ columns; D_PSIDD (W_TMP) Ψ̈ columns; D_VCOL (W_TMP + 36) the
velocity columns Ψ̇ + Ṡ.
"""

from __future__ import annotations

import numpy as np

from ..jit import inlined, njit, sequence, shared
from ..model import layout as L
from ..spatial import ops
from .aba import aba_core
from .borrow import (
    STACK_FLOATS,
    STACK_INTS,
    acquire,
    borrowed,
    model_views,
    release,
    stack_floats,
    stack_ints,
    view,
)
from .cluster_dynamics import c_aba_core
from .cluster_kinematics import cluster_coordinates, spanning_accelerations, tapes, validate_cluster_state
from .common import external_force, gravity_seed, jcalc, kernel, s_column
from .crba import dof_parents, ltl_in_place, ltl_singular_body, zero_fill
from .loop_derivatives import (
    call_loop_corrections,
    call_loop_tangent_terms,
    has_implicit,
    terms_size,
)
from .rnea import validate_qva
from .status import DATA_IN_USE, SINGULAR, STATUS_BASE

# the derivative kernel's columns beyond the named ones (see the module docstring)
D_S = L.W_U
D_PSID = L.W_DINV
D_PSIDD = L.W_TMP
D_VCOL = L.W_TMP + 36
D_B = L.W_IA
D_V = L.W_TMP + 72  # world v_i (W_V keeps its body-frame meaning for Data.v)
D_A = L.W_TMP + 78  # world a_i
D_OR = L.W_TMP + 84  # placement in the reference frame (W_OR, W_OP keep Data.oMi's world placements)
D_OP = L.W_TMP + 93


@inlined
def world_placement(ib, ws, i, R, p, ref):
    """ᵒXᵢ = ᵒX_λ ᶫXᵢ in the reference frame (world axes, origin ``ref``) into D_OR, D_OP; returns
    (oR, op)."""
    par = ib[i, L.I_PARENT]
    if par > 0:
        Rp = ops.load9(ws, par, D_OR)
        t = ops.rot_vec(Rp, p)
        pp = ops.load3(ws, par, D_OP)
        R, p = ops.rot_mul(Rp, R), (pp[0] + t[0], pp[1] + t[1], pp[2] + t[2])
    else:
        p = (p[0] - ref[0], p[1] - ref[1], p[2] - ref[2])
    ops.store9(ws, i, D_OR, R)
    ops.store3(ws, i, D_OP, p)
    return R, p


@inlined
def store_b_matrix(ws, i, I, v, h):
    """B_i (D3) row-major into W_IA: column c is ``v ×* (I e_c) − I (v × e_c) + e_c ×* h``."""
    for c in range(6):
        e = ops.unit6(c)
        col = ops.add6(
            ops.sub6(ops.cross_force(v, ops.inertia_mul(I, e)), ops.inertia_mul(I, ops.cross_motion(v, e))),
            ops.cross_force(e, h),
        )
        for r in range(6):
            ws[i, D_B + 6 * r + c] = col[r]


@inlined
def bt_mul(ws, i, x):
    """Bc_iᵀ x for the row-major 6 × 6 at W_IA."""
    o = D_B
    return (
        ws[i, o] * x[0] + ws[i, o + 6] * x[1] + ws[i, o + 12] * x[2]
        + ws[i, o + 18] * x[3] + ws[i, o + 24] * x[4] + ws[i, o + 30] * x[5],
        ws[i, o + 1] * x[0] + ws[i, o + 7] * x[1] + ws[i, o + 13] * x[2]
        + ws[i, o + 19] * x[3] + ws[i, o + 25] * x[4] + ws[i, o + 31] * x[5],
        ws[i, o + 2] * x[0] + ws[i, o + 8] * x[1] + ws[i, o + 14] * x[2]
        + ws[i, o + 20] * x[3] + ws[i, o + 26] * x[4] + ws[i, o + 32] * x[5],
        ws[i, o + 3] * x[0] + ws[i, o + 9] * x[1] + ws[i, o + 15] * x[2]
        + ws[i, o + 21] * x[3] + ws[i, o + 27] * x[4] + ws[i, o + 33] * x[5],
        ws[i, o + 4] * x[0] + ws[i, o + 10] * x[1] + ws[i, o + 16] * x[2]
        + ws[i, o + 22] * x[3] + ws[i, o + 28] * x[4] + ws[i, o + 34] * x[5],
        ws[i, o + 5] * x[0] + ws[i, o + 11] * x[1] + ws[i, o + 17] * x[2]
        + ws[i, o + 23] * x[3] + ws[i, o + 29] * x[4] + ws[i, o + 35] * x[5],
    )  # fmt: skip


@inlined
def forward_body(ib, ws, i, q, v, a, fext, ref):
    """Forward pass for body i (C&M Algorithm 1, lines 2–9): world placement, S_i, v_i, a_i, Ψ̇, Ψ̈,
    Ψ̇ + Ṡ, the world inertia I_i, the net force f_i and B_i."""
    R, p = jcalc(ib, ws, i, q)
    oR, op = world_placement(ib, ws, i, R, p, ref)
    par = ib[i, L.I_PARENT]
    vp = ops.load6(ws, par, D_V)
    ap = ops.load6(ws, par, D_A)
    nv = ib[i, L.I_NV]
    iv = ib[i, L.I_IV]
    vi = vp
    ai = ap
    for k in range(nv):
        sk = ops.motion_to_parent(oR, op, s_column(ib, ws, i, k))
        ops.store6(ws, i, D_S + 6 * k, sk)
        vi = ops.add6(vi, ops.scale6(sk, v[iv + k]))
        ai = ops.add6(ai, ops.scale6(sk, a[iv + k]))
        psid = ops.cross_motion(vp, sk)  # Ψ̇ = v_λ × S
        ops.store6(ws, i, D_PSID + 6 * k, psid)
        ops.store6(ws, i, D_PSIDD + 6 * k, ops.add6(ops.cross_motion(ap, sk), ops.cross_motion(vp, psid)))
    for k in range(nv):  # Ṡ = v_i × S needs the final v_i (all columns of a multi-DoF joint)
        sk = ops.load6(ws, i, D_S + 6 * k)
        sdot = ops.cross_motion(vi, sk)
        ops.store6(ws, i, D_VCOL + 6 * k, ops.add6(ops.load6(ws, i, D_PSID + 6 * k), sdot))
        ai = ops.add6(ai, ops.scale6(sdot, v[iv + k]))
    ops.store6(ws, i, D_V, vi)
    ops.store6(ws, i, D_A, ai)
    I = ops.inertia_to_parent(oR, op, ops.load10(ws, i, L.W_INER))
    ops.store10(ws, i, L.W_IC, I)
    h = ops.inertia_mul(I, vi)
    fx = ops.force_to_parent(oR, op, external_force(fext, i))
    ops.store6(ws, i, L.W_F, ops.sub6(ops.add6(ops.inertia_mul(I, ai), ops.cross_force(vi, h)), fx))
    store_b_matrix(ws, i, I, vi, h)


@inlined
def rows_of_body(ib, ws, i, dq, dv, M, cl, stop):
    """Rows of body i's coordinates against every ancestor j ⪯ i (i itself included) up to, not
    including, body ``stop`` (0: every ancestor): (D4), (D5) and M_ij, with Ic_i, Bc_i final. Writes
    M both ways (symmetric). ``cl`` None: the entries are written to the spanning matrices ``dq``,
    ``dv``, ``M``; else (the walk then stays in i's cluster: ``stop`` is i's output body) to the
    cluster's block in its local coordinates (layout ``I_SUB``), and, when ``stop`` is a body, Ic_i S
    and Bc_iᵀ S to the cluster's sums (:func:`add_to_sums`; ``cl``: :func:`cluster_backward_pass`)."""
    if cl is not None:
        blk = borrowed(cl)[6]
    Ic = ops.load10(ws, i, L.W_IC)
    ivi = ib[i, L.I_IV]
    for k in range(ib[i, L.I_NV]):
        s = ops.load6(ws, i, D_S + 6 * k)
        ics = ops.inertia_mul(Ic, s)
        bts = bt_mul(ws, i, s)
        r = ivi + k
        lr = ib[i, L.I_SUB] + k  # local (cl)
        if cl is not None:
            if stop > 0:
                add_to_sums(cl, r, 0, ics, bts)
        j = i
        while j != stop:
            ivj = ib[j, L.I_IV]
            for l in range(ib[j, L.I_NV]):
                c = ivj + l
                xq = ops.dot6(ics, ops.load6(ws, j, D_PSIDD + 6 * l)) + ops.dot6(
                    bts, ops.load6(ws, j, D_PSID + 6 * l)
                )
                sjl = ops.load6(ws, j, D_S + 6 * l)
                xv = ops.dot6(ics, ops.load6(ws, j, D_VCOL + 6 * l)) + ops.dot6(bts, sjl)
                m = ops.dot6(ics, sjl)
                if cl is None:
                    dq[r, c] = xq
                    dv[r, c] = xv
                    M[r, c] = m
                    M[c, r] = m
                else:
                    lc = ib[j, L.I_SUB] + l
                    blk[0, lr, lc] = xq
                    blk[1, lr, lc] = xv
                    blk[2, lr, lc] = m
                    blk[2, lc, lr] = m
            j = ib[j, L.I_PARENT]


@inlined
def column_forces(ws, i, k, Ic, F):
    """The forces whose products with an ancestor's S give column k of body i's coordinates (the
    i ≺ j cases of (D4), (D5)): ``u_q = S ×* F_i + Ic_i Ψ̈ + Bc_i Ψ̇`` and ``u_v = Ic_i (Ψ̇ + Ṡ) + Bc_i S``."""
    s = ops.load6(ws, i, D_S + 6 * k)
    uq = ops.add6(
        ops.add6(ops.cross_force(s, F), ops.inertia_mul(Ic, ops.load6(ws, i, D_PSIDD + 6 * k))),
        ops.mat6_mul(ws, i, D_B, ops.load6(ws, i, D_PSID + 6 * k)),
    )
    uv = ops.add6(ops.inertia_mul(Ic, ops.load6(ws, i, D_VCOL + 6 * k)), ops.mat6_mul(ws, i, D_B, s))
    return uq, uv


@inlined
def columns_of_body(ib, ws, i, dq, dv, cl, stop):
    """Columns of body i's coordinates in the rows of its strict ancestors up to, not including, body
    ``stop`` (the i ≺ j cases of (D4) and (D5), with the roles named the other way round here);
    ``cl``, ``stop`` as :func:`rows_of_body` (u_q, u_v to the cluster's sums)."""
    if cl is not None:
        blk = borrowed(cl)[6]
    Ic = ops.load10(ws, i, L.W_IC)
    F = ops.load6(ws, i, L.W_F)
    ivi = ib[i, L.I_IV]
    for k in range(ib[i, L.I_NV]):
        uq, uv = column_forces(ws, i, k, Ic, F)
        c = ivi + k
        if cl is not None:
            if stop > 0:
                add_to_sums(cl, c, 12, uq, uv)
        j = ib[i, L.I_PARENT]
        while j != stop:
            ivj = ib[j, L.I_IV]
            for l in range(ib[j, L.I_NV]):
                sjl = ops.load6(ws, j, D_S + 6 * l)
                if cl is None:
                    dq[ivj + l, c] = ops.dot6(sjl, uq)
                    dv[ivj + l, c] = ops.dot6(sjl, uv)
                else:
                    lr, lc = ib[j, L.I_SUB] + l, ib[i, L.I_SUB] + k
                    blk[0, lr, lc] = ops.dot6(sjl, uq)
                    blk[1, lr, lc] = ops.dot6(sjl, uv)
            j = ib[j, L.I_PARENT]


@inlined
def to_parent(ws, i, par):
    """Composites (world frame: plain sums): F_λ += F_i, Ic_λ += Ic_i, Bc_λ += Bc_i."""
    ops.add_to6(ws, par, L.W_F, ops.load6(ws, i, L.W_F))
    ops.store10(ws, par, L.W_IC, ops.add10(ops.load10(ws, par, L.W_IC), ops.load10(ws, i, L.W_IC)))
    for r in range(36):
        ws[par, D_B + r] += ws[i, D_B + r]


# The spanning pass of a model with clusters, projected on the independent coordinates (proj given):
# a cluster whose bodies all leave it through one output body Λ (a link and its rotors, a differential
# hanging from one body, every single body) has the same ancestors outside it for every body. The
# entries against those ancestors are linear in the per-body vectors Ic_i S_r, Bc_iᵀ S_r (rows) and
# u_q, u_v (columns), so their projections Σ_r G[r, a] X[r, c] and Σ_c X[r, c] G[c, a] are the
# products with the sums ``A_a = Σ_r G[r, a] Ic_i S_r``, ``B_a``, ``Uq_a``, ``Uv_a`` over the cluster's
# coordinates r (m of each instead of one per body): one walk from Λ to the root per independent
# coordinate — the "output-relative" regrouping that the cluster CRBA makes for H
# (:func:`.cluster_dynamics.c_crba_one_port_pair`). The entries between two coordinates of the
# cluster go to its own n × n block, projected once its bodies are done (:func:`project_blocks`,
# G_kᵀ X_k G_k with the cluster's dense G_k). A cluster whose bodies leave it through different
# bodies (a declared cluster can) walks each body's sums from that body's output.

AGG = 24  # floats per independent coordinate in the sums' scratch: A, B, Uq, Uv


@inlined
def common_output(ib, ic, cb, k):
    """The output body Λ that every body of cluster k leaves it through (0: the universe), or −1."""
    first = ic[k, L.C_FIRST]
    out = ib[cb[first], L.I_OUT]
    for j in range(1, ic[k, L.C_NB]):
        if ib[cb[first + j], L.I_OUT] != out:
            return -1
    return out


@inlined
def add_to_sums(cl, r, at, x, y):
    """Coordinate r's pair of vectors added to its cluster's sums: ``agg[AGG a + at:]`` +=
    G[r, a] (x, y) — (Ic S, Bc ᵀS) at 0, (u_q, u_v) at 12 (a: the cluster's independent coordinates
    from ``y0``); a dependent coordinate's own x (rows: Ic S) or y (columns: u_v) into its row of
    ``depv`` (for the columns of Gᵀ M_s and Gᵀ X_v at it)."""
    ic, cb, wc, dcol, depv, agg, blk, y0 = borrowed(cl)
    GM = ic[0, L.C0_GMAP]
    for e in range(GM + cb[GM + r], GM + cb[GM + r + 1], 2):
        o = AGG * (cb[e] - y0) + at
        g = wc[cb[e + 1]]
        for t in range(6):
            agg[o + t] += g * x[t]
            agg[o + 6 + t] += g * y[t]
    d = dcol[r]
    if d >= 0:  # depv[d] = (Ic S, u_v)
        for t in range(6):
            if at == 0:
                depv[d, t] = x[t]
            else:
                depv[d, 6 + t] = y[t]


@inlined
def load_sum(agg, o):
    """The 6-vector at ``agg[o:]``."""
    return (agg[o], agg[o + 1], agg[o + 2], agg[o + 3], agg[o + 4], agg[o + 5])


@inlined
def outside_entries(ib, ws, ic, cb, wc, k, out, dq, dv, H, dcol, GXv, GXm, agg):
    """Cluster k's entries against the ancestors of body ``out`` (itself included), from the sums:
    for each independent coordinate a of the cluster and coordinate c of those bodies,
    ``Σ_r G[r, a] X[r, c]`` (rows: A_a Ψ̈_c + B_a Ψ̇_c, A_a (Ψ̇_c + Ṡ_c) + B_a S_c, A_a S_c) and
    ``Σ_r X[c, r] G[r, a]`` (columns: S_c u_q, S_c u_v), projected on c through G's row c (layout
    ``C0_GMAP``), and at a dependent c to the columns of Gᵀ X_v, Gᵀ M_s."""
    GM = ic[0, L.C0_GMAP]
    y0 = ic[k, L.C_IV]
    for a in range(ic[k, L.C_M]):  # one walk per independent coordinate, its four sums in registers
        o = AGG * a
        A, B = load_sum(agg, o), load_sum(agg, o + 6)
        Uq, Uv = load_sum(agg, o + 12), load_sum(agg, o + 18)
        ya = y0 + a
        j = out
        while j > 0:
            ivj = ib[j, L.I_IV]
            for l in range(ib[j, L.I_NV]):
                c = ivj + l
                s = ops.load6(ws, j, D_S + 6 * l)
                pdd, pd = ops.load6(ws, j, D_PSIDD + 6 * l), ops.load6(ws, j, D_PSID + 6 * l)
                xq = ops.dot6(A, pdd) + ops.dot6(B, pd)
                xv = ops.dot6(A, ops.load6(ws, j, D_VCOL + 6 * l)) + ops.dot6(B, s)
                xm = ops.dot6(A, s)
                yq = ops.dot6(s, Uq)
                yv = ops.dot6(s, Uv)
                for f in range(GM + cb[GM + c], GM + cb[GM + c + 1], 2):
                    b, g = cb[f], wc[cb[f + 1]]
                    dq[ya, b] += g * xq
                    dv[ya, b] += g * xv
                    gm = g * xm
                    H[ya, b] += gm
                    H[b, ya] += gm
                    dq[b, ya] += g * yq
                    dv[b, ya] += g * yv
                kc = dcol[c]
                if kc >= 0:
                    GXv[ya, kc] += xv
                    GXm[ya, kc] += xm
            j = ib[j, L.I_PARENT]


@inlined
def dependent_entries(ib, ws, ic, cb, wc, k, GXv, GXm, dcol, depv):
    """The columns of Gᵀ M_s and Gᵀ X_v at implicit cluster k's dependent coordinates r from the
    bodies above r's body (``M_s[c, r] = S_cᵀ Ic S_r``, ``X_v[c, r] = S_cᵀ u_v``: r's own vectors in
    ``depv``), through G's row c; ``GXv`` with no columns: Gᵀ M_s only (the Coriolis matrix). Two
    dependent coordinates with the same output body share one walk (Tello's Coriolis matrix 1.38–1.48
    → 1.33–1.39 of the spanning tree's; its RNEA derivatives did not move)."""
    with_v = GXv.shape[1] > 0
    GM = ic[0, L.C0_GMAP]
    first, dep, nrow = ic[k, L.C_FIRST], ic[k, L.C_DEP], ic[k, L.C_NROW]
    rr = 0
    while rr < nrow:
        body = cb[first + cb[dep + rr]]
        out = ib[body, L.I_OUT]
        d = dcol[ib[body, L.I_IV]]
        ics, uv = load_sum(depv[d], 0), load_sum(depv[d], 6)
        pair = rr + 1 < nrow and ib[cb[first + cb[dep + rr + 1]], L.I_OUT] == out
        d2 = dcol[ib[cb[first + cb[dep + rr + 1]], L.I_IV]] if pair else d
        ics2, uv2 = load_sum(depv[d2], 0), load_sum(depv[d2], 6)
        j = out
        while j > 0:
            ivj = ib[j, L.I_IV]
            for l in range(ib[j, L.I_NV]):
                c = ivj + l
                s = ops.load6(ws, j, D_S + 6 * l)
                em, ev = ops.dot6(ics, s), ops.dot6(s, uv)
                em2, ev2 = ops.dot6(ics2, s), ops.dot6(s, uv2)
                for f in range(GM + cb[GM + c], GM + cb[GM + c + 1], 2):
                    b, g = cb[f], wc[cb[f + 1]]
                    GXm[b, d] += g * em
                    if with_v:
                        GXv[b, d] += g * ev
                    if pair:
                        GXm[b, d2] += g * em2
                        if with_v:
                            GXv[b, d2] += g * ev2
            j = ib[j, L.I_PARENT]
        rr += 2 if pair else 1


@inlined
def project_blocks(ib, ic, cb, wc, k, blk, outs, gxs, dcol):
    """Cluster k's own blocks ``G_kᵀ X_t G_k`` (X_t = ``blk[t]``, t = 0, 1, 2: the n × n entries between
    its coordinates; G_k its n × m block of G, row-major at ``ic[k, C_G]``) added to the diagonal block
    of ``outs[t]``, and ``G_kᵀ X_t`` at the cluster's dependent coordinates to those columns of
    ``gxs[t]`` (``dcol``); an array with no rows (``outs``) or no columns (``gxs``) is skipped. The
    three sums over a column of G_k are made side by side: three calls, each a chain of dependent
    additions, took Tello's four differentials 0.2 µs a cluster in its RNEA derivatives."""
    n, m, y0, G = ic[k, L.C_N], ic[k, L.C_M], ic[k, L.C_IV], ic[k, L.C_G]
    o0, o1, o2 = outs
    g0, g1, g2 = gxs
    t0, t1, t2 = o0.shape[0] > 0, o1.shape[0] > 0, o2.shape[0] > 0
    kind = ic[k, L.C_KIND]
    if kind == L.SINGLE_BODY:  # G_k = 1 (no dependent coordinates)
        for a in range(n):
            for b in range(n):
                if t0:
                    o0[y0 + a, y0 + b] += blk[0, a, b]
                if t1:
                    o1[y0 + a, y0 + b] += blk[1, a, b]
                if t2:
                    o2[y0 + a, y0 + b] += blk[2, a, b]
        return
    if m == 1 and kind == L.EXPLICIT:  # a geared link and its rotors: numbers, no dependent coordinates
        x0 = 0.0
        x1 = 0.0
        x2 = 0.0
        for r in range(n):
            gr = wc[G + r]
            for c in range(n):
                g = gr * wc[G + c]
                x0 += g * blk[0, r, c]
                x1 += g * blk[1, r, c]
                x2 += g * blk[2, r, c]
        if t0:
            o0[y0, y0] += x0
        if t1:
            o1[y0, y0] += x1
        if t2:
            o2[y0, y0] += x2
        return
    first = ic[k, L.C_FIRST]
    to_gx = g0.shape[1] > 0 or g1.shape[1] > 0 or g2.shape[1] > 0
    for a in range(m):
        ya = y0 + a
        for c in range(n):  # (G_kᵀ X_t)[a, c] of the three blocks, then times row c of G_k
            x0 = 0.0
            x1 = 0.0
            x2 = 0.0
            for r in range(n):
                g = wc[G + r * m + a]
                x0 += g * blk[0, r, c]
                x1 += g * blk[1, r, c]
                x2 += g * blk[2, r, c]
            for b in range(m):
                g = wc[G + c * m + b]
                if t0:
                    o0[ya, y0 + b] += x0 * g
                if t1:
                    o1[ya, y0 + b] += x1 * g
                if t2:
                    o2[ya, y0 + b] += x2 * g
            if to_gx:
                d = dcol[ib[cb[first + c], L.I_IV]]  # 1-DoF bodies: local coordinate c is body c's
                if d >= 0:
                    if g0.shape[1] > 0:
                        g0[ya, d] += x0
                    if g1.shape[1] > 0:
                        g1[ya, d] += x1
                    if g2.shape[1] > 0:
                        g2[ya, d] += x2


@inlined
def zero_scratch(aggs, blks):
    """The clusters' sums and blocks zeroed, once per call (entries between in-cluster branches stay
    zero); returns the end of each, where the last cluster's start is counted back from."""
    for t in range(aggs.shape[0]):
        aggs[t] = 0.0
    for t in range(blks.shape[0]):
        blks[t] = 0.0
    return aggs.shape[0], blks.shape[0]


@inlined
def cluster_scratch(ic, k, aggs, blks, ao, bo):
    """Cluster k's sums (``AGG`` per independent coordinate) and block (3 × n × n) in ``aggs``,
    ``blks``, the clusters visited from the last (``ao``, ``bo``: the end of cluster k's places);
    returns them and their starts."""
    n, m = ic[k, L.C_N], ic[k, L.C_M]
    ao -= AGG * m
    bo -= 3 * n * n
    return view(aggs, ao, (AGG * m,)), view(blks, bo, (3, n, n)), ao, bo


@inlined
def body_done(ib, ws, i, blk):
    """Body i's part of its cluster's pass is over: its armature (constant, on M's diagonal only) onto
    the cluster's M block (``blk[2]``, local coordinates), its composites to its parent
    (:func:`to_parent`). Shared by the derivatives' and the Coriolis matrix's cluster passes."""
    sub = ib[i, L.I_SUB]
    for kk in range(ib[i, L.I_NV]):
        blk[2, sub + kk, sub + kk] += ws[i, L.W_ARM + kk]
    par = ib[i, L.I_PARENT]
    if par > 0:
        to_parent(ws, i, par)


@inlined
def projection_scratch(ic, cb, buf, n):
    """``(dcol, GXv, GXm, aggs, depv, blks)``: the views of :func:`c_rnea_derivatives_core`'s ``buf``
    (the clusters' sums and blocks, the dependent coordinates' vectors, the columns of ``Gᵀ X_v``
    and ``Gᵀ M_s`` at them) for a model of ``n`` independent coordinates, and layout ``C0_DCOL``."""
    nd, na, nblk = ic[0, L.C0_NDEP], AGG * ic[0, L.C0_SUMM], 3 * ic[0, L.C0_SUMN2]
    o = na + nblk
    return (view(cb, ic[0, L.C0_DCOL], (ic[0, L.C0_NVS],)), view(buf, o + 12 * nd, (n, nd)),
            view(buf, o + 12 * nd + n * nd, (n, nd)), view(buf, 0, (na,)), view(buf, o, (nd, 12)),
            view(buf, na, (nblk,)))  # fmt: skip


@inlined
def cluster_backward_pass(ib, ws, dq, dv, H, proj):
    """The backward pass of :func:`rnea_derivatives_core` on a spanning tree, cluster by cluster
    (children first), projected on the independent coordinates (see above). Every cluster has its
    own block and sums in ``blks``, ``aggs`` (zeroed once per call: zeroing a small block per cluster
    became a ``memset`` call per row)."""
    ic, cb, wc, buf = borrowed(proj)
    dcol, GXv, GXm, aggs, depv, blks = projection_scratch(ic, cb, buf, dq.shape[0])
    ao, bo = zero_scratch(aggs, blks)
    none = view(blks, 0, (0, 0))
    for k in range(ic[0, L.C0_NCL], 0, -1):
        first, nbk, y0, m = ic[k, L.C_FIRST], ic[k, L.C_NB], ic[k, L.C_IV], ic[k, L.C_M]
        agg, blk, ao, bo = cluster_scratch(ic, k, aggs, blks, ao, bo)
        cl = (ic, cb, wc, dcol, depv, agg, blk, y0)
        out = common_output(ib, ic, cb, k)  # −1: the bodies leave the cluster through different bodies
        for b in range(nbk - 1, -1, -1):  # bodies after their in-cluster children
            i = cb[first + b]
            stop = ib[i, L.I_OUT]  # the walks stay in the cluster
            rows_of_body(ib, ws, i, dq, dv, H, cl, stop)
            columns_of_body(ib, ws, i, dq, dv, cl, stop)
            body_done(ib, ws, i, blk)
            # the sums walked from the output body: the cluster's, once its bodies are done (b = 0:
            # every body has that output), or each body's own (out < 0); one call site (compile time)
            if stop > 0 and (out < 0 or b == 0):
                outside_entries(ib, ws, ic, cb, wc, k, stop, dq, dv, H, dcol, GXv, GXm, agg)
                if out < 0:
                    for t in range(AGG * m):
                        agg[t] = 0.0
        if ic[k, L.C_KIND] == L.IMPLICIT:
            dependent_entries(ib, ws, ic, cb, wc, k, GXv, GXm, dcol, depv)
        project_blocks(ib, ic, cb, wc, k, blk, (dq, dv, H), (none, GXv, GXm), dcol)


@shared(fastmath={"contract"})
def rnea_derivatives_core(ib, ws, q, v, a, fext, dq, dv, M, proj):
    """∂τ/∂q (tangent), ∂τ/∂v and ∂τ/∂a = M (full, armature included) of the RNEA at (q, v, a) with
    the external forces ``fext`` ((0, 6): none), validated inputs, into the nv × nv ``dq``, ``dv``,
    ``M`` (see the module docstring for the derivation). ``proj``: None for a tree; for the spanning
    tree of a model with clusters, ``(ic, cb, wc, buf)`` (``buf``: :func:`projection_scratch`; the
    buffer, not its six views: every array argument of a pass called by address is copied field by
    field, and the six views cost the four-bar's RNEA derivatives 0.26 µs of 2.3), and every entry is
    projected on the independent coordinates as it is made (:func:`cluster_backward_pass`): ``dq``,
    ``dv``, ``M`` are then the model's nv × nv ``Gᵀ X G``."""
    # uncounted here too: the call boundary hides that the caller's arrays are borrowed
    ib, ws, q, v, a, fext, dq, dv, M = borrowed((ib, ws, q, v, a, fext, dq, dv, M))
    nb = ib[0, L.I0_NBODIES]
    zero_fill(dq)  # entries of bodies on different branches stay zero
    zero_fill(dv)
    zero_fill(M)
    ops.store6(ws, 0, D_V, (0.0, 0.0, 0.0, 0.0, 0.0, 0.0))
    ops.store6(ws, 0, D_A, gravity_seed(ws))
    # the reference frame: world axes, origin at body 1's (a root: parents come first) at this q, held
    # fixed while differentiating — any inertial frame gives the same τ and derivatives, and one near
    # the robot keeps the moments p × f small: referred to the world origin, a free-flying robot 10 km
    # away lost 5 digits (relative error 4e-8 against differences)
    if nb == 0:
        return
    ref = jcalc(ib, ws, 1, q)[1]
    for i in range(1, nb + 1):
        forward_body(ib, ws, i, q, v, a, fext, ref)
    if proj is None:
        for i in range(nb, 0, -1):
            rows_of_body(ib, ws, i, dq, dv, M, None, 0)
            columns_of_body(ib, ws, i, dq, dv, None, 0)
            par = ib[i, L.I_PARENT]
            if par > 0:
                to_parent(ws, i, par)
    else:
        cluster_backward_pass(ib, ws, dq, dv, M, proj)
        return  # (the clusters' pass adds the armature to their blocks)
    if ws[0, L.W_ARM] != 0.0:  # armature: constant, on M's diagonal only
        for i in range(1, nb + 1):
            iv = ib[i, L.I_IV]
            for k in range(ib[i, L.I_NV]):
                M[iv + k, iv + k] += ws[i, L.W_ARM + k]


@sequence
def rnea_derivatives_checked(ib, ws, q, v, a, fext, dq, dv, M):
    """The RNEA derivatives after validating the inputs; returns the status (0: written)."""
    st = validate_qva(ib, q, v, a, fext)
    if st != 0:
        return st
    rnea_derivatives_core(ib, ws, q, v, a, fext, dq, dv, M, None)
    return 0


@kernel(
    "int64(int64[:, ::1], float64[:, ::1], float64[::1], float64[::1], float64[::1], float64[:, ::1], "
    "float64[:, ::1], float64[:, ::1], float64[:, ::1])"
)
def rnea_derivatives_kernel(ib, ws, q, v, a, fext, dq, dv, M):
    """RNEA derivatives of a tree; ``fext`` (nbodies + 1, 6) or (0, 6) for none."""
    ib, ws, q, v, a, fext, dq, dv, M = borrowed((ib, ws, q, v, a, fext, dq, dv, M))
    if not acquire(ib):
        return DATA_IN_USE * STATUS_BASE
    st = rnea_derivatives_checked(ib, ws, q, v, a, fext, dq, dv, M)
    release(ib)
    return st


@njit(cache=True)
def minv_apply(ib, ws, Lf, lam, dq, dv, minv, X):
    """From M (in ``Lf``, overwritten by its LᵀL factor, RBDA Table 6.3): ``dq ← −M⁻¹ dq``,
    ``dv ← −M⁻¹ dv``, ``minv ← M⁻¹``, solved together as the columns of ``X = [−dq | −dv | 1]``
    (n × 3n scratch: one array, whose row updates LLVM vectorises; three arrays updated in one loop
    took twice as long). Returns 0 or the SINGULAR status of the body whose pivot fails."""
    ib, ws, Lf, lam, dq, dv, minv, X = borrowed((ib, ws, Lf, lam, dq, dv, minv, X))
    n = Lf.shape[0]
    dof_parents(ib, lam)
    bad = ltl_in_place(Lf, lam)
    if bad >= 0:
        for i in range(1, ib[0, L.I0_NBODIES] + 1):
            if ib[i, L.I_IV] <= bad < ib[i, L.I_IV] + ib[i, L.I_NV]:
                return SINGULAR * STATUS_BASE + i
        return SINGULAR * STATUS_BASE
    b = ltl_singular_body(ib, ws, Lf)
    if b > 0:
        return SINGULAR * STATUS_BASE + b
    for r in range(n):
        for c in range(n):
            X[r, c] = -dq[r, c]
            X[r, n + c] = -dv[r, c]
            X[r, 2 * n + c] = 1.0 if r == c else 0.0
    ltl_solve_rows(Lf, lam, X)
    for r in range(n):
        for c in range(n):
            dq[r, c] = X[r, c]
            dv[r, c] = X[r, n + c]
            minv[r, c] = X[r, 2 * n + c]
    return 0


@njit(cache=True, fastmath={"contract"})
def ltl_solve_rows(Lf, lam, X):
    """``X ← L⁻¹ L⁻ᵀ X`` (= M⁻¹ X) with the LᵀL factor of :func:`~.crba.ltl_in_place` (RBDA Table
    6.3): back substitution over each coordinate's λ chain, then forward, whole rows of X at a time."""
    Lf, lam, X = borrowed((Lf, lam, X))
    n, p = Lf.shape[0], X.shape[1]
    for i in range(n - 1, -1, -1):  # X ← L⁻ᵀ X
        d = 1.0 / Lf[i, i]
        for c in range(p):
            X[i, c] *= d
        j = lam[i]
        while j != -1:
            lij = Lf[i, j]
            for c in range(p):
                X[j, c] -= lij * X[i, c]
            j = lam[j]
    for i in range(n):  # X ← L⁻¹ X
        j = lam[i]
        while j != -1:
            lij = Lf[i, j]
            for c in range(p):
                X[i, c] -= lij * X[j, c]
            j = lam[j]
        d = 1.0 / Lf[i, i]
        for c in range(p):
            X[i, c] *= d


@sequence
def aba_derivatives_checked(ib, ws, q, v, tau, fext, ddq, dq, dv, minv, Lf, lam, X):
    """ABA derivatives after validating the inputs (C&M §IV-C): q̈ = ABA(q, v, τ), then the RNEA
    derivatives at a = q̈ (∂τ/∂a = M into ``Lf``), then ∂q̈/∂x = −M⁻¹ ∂τ/∂x and ∂q̈/∂τ = M⁻¹."""
    st = validate_qva(ib, q, v, tau, fext)
    if st != 0:
        return st
    st = aba_core(ib, ws, q, v, tau, fext, ddq)
    if st != 0:
        return st
    rnea_derivatives_core(ib, ws, q, v, ddq, fext, dq, dv, Lf, None)
    return minv_apply(ib, ws, Lf, lam, dq, dv, minv, X)


@kernel(
    "int64(int64[:, ::1], float64[:, ::1], float64[::1], float64[::1], float64[::1], float64[:, ::1], "
    "float64[::1], float64[:, ::1], float64[:, ::1], float64[:, ::1], float64[:, ::1])"
)
def aba_derivatives_kernel(ib, ws, q, v, tau, fext, ddq, dq, dv, minv, Lf):
    """ABA derivatives of a tree: q̈ into ``ddq``, ∂q̈/∂q, ∂q̈/∂v, ∂q̈/∂τ = M⁻¹ into ``dq``, ``dv``,
    ``minv``; ``Lf`` (nv × nv) is scratch for the factor of M."""
    ib, ws, q, v, tau, fext, ddq, dq, dv, minv, Lf = borrowed(
        (ib, ws, q, v, tau, fext, ddq, dq, dv, minv, Lf)
    )
    if not acquire(ib):
        return DATA_IN_USE * STATUS_BASE
    n = ib[0, L.I0_NV]
    # λ of every coordinate: on the stack (no allocation) up to STACK_INTS coordinates
    lam = view(stack_ints(), 0, (n,)) if n <= STACK_INTS else np.empty(n, np.int64)
    X = view(stack_floats(), 0, (n, 3 * n)) if 3 * n * n <= STACK_FLOATS else np.empty((n, 3 * n))
    st = aba_derivatives_checked(ib, ws, q, v, tau, fext, ddq, dq, dv, minv, Lf, lam, X)
    release(ib)
    return st


# ---------------------------------------------------------------------------------------------
# models with clusters (explicit: geared rotors, belts, gear trains; implicit loops)
#
# Independent coordinates y, spanning q_s = G y (1-DoF joints), q̇_s = G ẏ, q̈_s = G ÿ (g = 0), and
# τ_y = Gᵀ τ_s(q_s, G ẏ, G ÿ) (Chignoli et al. 2024, eq. 29). A tangent step δ of y moves q_s by G δ,
# so with the spanning tree's derivatives (the recursive kernel above on the spanning tree):
# ∂τ_y/∂δ = Gᵀ (∂τ_s/∂q_s) G, ∂τ_y/∂ẏ = Gᵀ (∂τ_s/∂q̇_s) G, ∂τ_y/∂ÿ = Gᵀ M_s G = H (spec §2 with
# ∂G = 0, g = 0). Implicit clusters (G(q), g(q, q̇)) add the terms of ∂G/∂q, ∂g/∂q
# (:mod:`.loop_derivatives`, (L5)–(L6)), which read the columns of Gᵀ X_v and Gᵀ M_s at the loops'
# dependent coordinates.
#
# The congruences Gᵀ X G are not formed from the spanning matrices: the spanning pass projects its
# entries on the independent coordinates as it makes them, cluster by cluster
# (:func:`cluster_backward_pass`). No nv_s × nv_s matrix is written: forming the three spanning
# matrices and then the two sparse products took GT 96 (nv_s = 192) 80 µs more than the spanning
# tree's own derivatives (the second product, Z G, walks columns: 62 µs of it), Tello 2.3 µs; the
# grouped pass takes GT 96 0.68 of the spanning tree's time.


@njit(cache=True)
def c_terms_offset(ic, nv):
    """Where :func:`c_rnea_derivatives_core` leaves the implicit loops' terms in its ``buf``: after the
    clusters' sums and blocks of :func:`cluster_backward_pass` (``AGG`` floats per independent
    coordinate, 3 n² per cluster of n spanning coordinates), the dependent coordinates' vectors (12
    each) and the columns of ``Gᵀ X_v`` and ``Gᵀ M_s`` at them (2 nv each; layout ``C0_SUMM``,
    ``C0_SUMN2``, ``C0_NDEP``)."""
    return AGG * ic[0, L.C0_SUMM] + 3 * ic[0, L.C0_SUMN2] + (12 + 2 * nv) * ic[0, L.C0_NDEP]


@njit(cache=True)
def c_buffer_size(ic, nv):
    """Floats of :func:`c_rnea_derivatives_core`'s ``buf``: up to :func:`c_terms_offset`, then with
    implicit clusters the loops' terms (:func:`.loop_derivatives.terms_size`) and τ_s (nv_s)."""
    size = c_terms_offset(ic, nv)
    if has_implicit(ic):
        size += terms_size(ic) + ic[0, L.C0_NVS]
    return size


@shared  # called by five kernels (single, batch, contact): compiled once, called by address
def c_rnea_derivatives_core(ints, floats, q, v, a, fext, dq, dv, H, buf, ready):
    """RNEA derivatives in independent coordinates of a model with clusters (see above; implicit ones
    add :mod:`.loop_derivatives`' terms), validated inputs; ``buf`` holds :func:`c_buffer_size` floats
    (the loops' terms at :func:`c_terms_offset`: left there for the callers). ``ready`` (int64) nonzero:
    the cluster kinematics already ran at this q, v (C-ABA's, before the ABA and contact derivatives),
    and only q̈_s = G ÿ + g is formed (the four-bar's ABA derivatives ran its loop program twice).
    Returns a status.

    The model comes as its two packed buffers (``Data.cluster_arrays``), its nine views made here: a
    pass called by address receives every array argument field by field, and the nine cost the
    four-bar's RNEA derivatives about 0.07 µs a call more than the two."""
    # uncounted here too: the call boundary hides that the caller's arrays are borrowed
    ints, floats, q, v, a, fext, dq, dv, H, buf = borrowed((ints, floats, q, v, a, fext, dq, dv, H, buf))
    ib, ws, ic, cb, wc = model_views(ints, floats)
    code, consts, table, outputs = tapes(ic, cb, wc)
    if ready != 0:
        spanning_accelerations(ib, ic, cb, wc, a)
    else:
        for k in range(1, ic[0, L.C0_NCL] + 1):  # spanning q, q̇ = G ẏ, q̈ = G ÿ
            st = cluster_coordinates(ib, ic, cb, wc, code, consts, table, outputs, k, q, v, a)
            if st != 0:
                return st
    nqs, nvs = ic[0, L.C0_NQS], ic[0, L.C0_NVS]
    QS, QDS, QDDS = ic[0, L.C0_QS], ic[0, L.C0_QDS], ic[0, L.C0_QDDS]
    n = dq.shape[0]
    nd = ic[0, L.C0_NDEP]
    # buf: the clusters' sums and blocks, the dependent coordinates' vectors and the columns of
    # Gᵀ X_v and Gᵀ M_s at them (none: 0 columns; projection_scratch), then the loops' terms
    # (c_terms_offset)
    _, GXv, GXm, _, _, _ = projection_scratch(ic, cb, buf, n)
    zero_fill(GXv)
    zero_fill(GXm)
    # views built directly (C layout, as the tree kernel is compiled for)
    rnea_derivatives_core(ib, ws, view(wc, QS, (nqs,)), view(wc, QDS, (nvs,)), view(wc, QDDS, (nvs,)), fext,
                          dq, dv, H, (ic, cb, wc, buf))  # fmt: skip
    if nd > 0:  # G(q), g(q, q̇): the terms of ∂G and ∂g (loop_derivatives, (L5)–(L6))
        o = c_terms_offset(ic, n)
        nt = terms_size(ic)
        terms = view(buf, o, (nt,))
        st = call_loop_tangent_terms(ib, ic, cb, wc, code, consts, table, outputs, v, a, terms)
        if st != 0:
            return st
        taus = view(buf, o + nt, (nvs,))
        spanning_forces(ib, ic, cb, ws, view(wc, QDDS, (nvs,)), taus)
        st = call_loop_corrections(ib, ic, cb, wc, GXv, GXm, taus, terms, dq, dv)
        if st != 0:
            return st
    return 0


@njit(cache=True)
def spanning_forces(ib, ic, cb, ws, a, tau):
    """The spanning tree's joint forces ``τ_i = S_iᵀ F_i`` (+ armature · q̈) of the implicit clusters'
    bodies (the only ones :func:`.loop_derivatives.loop_corrections` reads; the other entries of
    ``tau`` are not written), from the world-frame ``S_i`` and ``F_i`` that
    :func:`rnea_derivatives_core` leaves in ws (its backward pass summed F)."""
    ib, ic, cb, ws, a, tau = borrowed((ib, ic, cb, ws, a, tau))
    for c in range(1, ic[0, L.C0_NCL] + 1):
        if ic[c, L.C_KIND] != L.IMPLICIT:
            continue
        for b in range(ic[c, L.C_FIRST], ic[c, L.C_FIRST] + ic[c, L.C_NB]):
            i = cb[b]
            F = ops.load6(ws, i, L.W_F)
            iv = ib[i, L.I_IV]
            for k in range(ib[i, L.I_NV]):
                tau[iv + k] = ops.dot6(ops.load6(ws, i, D_S + 6 * k), F) + ws[i, L.W_ARM + k] * a[iv + k]


@kernel(
    "int64(int64[::1], float64[::1], float64[::1], float64[::1], float64[::1], float64[:, ::1], "
    "float64[:, ::1], float64[:, ::1], float64[:, ::1])"
)
def c_rnea_derivatives_kernel(ints, floats, q, v, a, fext, dq, dv, H):
    """RNEA derivatives of a model with clusters (independent coordinates; implicit loops included)."""
    ints, floats, q, v, a, fext, dq, dv, H = borrowed((ints, floats, q, v, a, fext, dq, dv, H))
    ib, ws, ic, cb, wc = model_views(ints, floats)
    st = validate_cluster_state(ib, ic, cb, q, v, a, fext, True)
    if st != 0:
        return st
    if not acquire(ints):
        return DATA_IN_USE * STATUS_BASE
    need = c_buffer_size(ic, dq.shape[0])
    # the spanning matrices on the stack (no allocation) while they fit
    buf = stack_floats() if need <= STACK_FLOATS else np.empty(need)
    st = c_rnea_derivatives_core(ints, floats, q, v, a, fext, dq, dv, H, borrowed((buf,))[0], np.int64(0))
    release(ints)
    return st


@njit(cache=True)
def cholesky_in_place(A):
    """The lower triangle of A ← its Cholesky factor (A = L Lᵀ, dense). Returns −1, or the first
    coordinate whose pivot is not positive."""
    A = borrowed((A,))[0]
    n = A.shape[0]
    for j in range(n):
        d = A[j, j]
        for k in range(j):
            d -= A[j, k] * A[j, k]
        if not d > 0.0:
            return j
        d = np.sqrt(d)
        A[j, j] = d
        for i in range(j + 1, n):
            s = A[i, j]
            for k in range(j):
                s -= A[i, k] * A[j, k]
            A[i, j] = s / d
    return -1


@njit(cache=True, fastmath={"contract"})
def cholesky_solve(Lf, X):
    """``X ← (L Lᵀ)⁻¹ X`` in place, L in the lower triangle of ``Lf`` (:func:`cholesky_in_place`). Row
    operations on X (``X[i] −= L[i, k] X[k]``): contiguous rows, all right-hand sides at once."""
    Lf, X = borrowed((Lf, X))
    n, p = X.shape
    for i in range(n):  # L Y = X
        for k in range(i):
            f = Lf[i, k]
            if f != 0.0:
                for c in range(p):
                    X[i, c] -= f * X[k, c]
        d = 1.0 / Lf[i, i]
        for c in range(p):
            X[i, c] *= d
    for i in range(n - 1, -1, -1):  # Lᵀ X = Y
        for k in range(i + 1, n):
            f = Lf[k, i]
            if f != 0.0:
                for c in range(p):
                    X[i, c] -= f * X[k, c]
        d = 1.0 / Lf[i, i]
        for c in range(p):
            X[i, c] *= d


@inlined
def c_hinv_apply(ic, cb, Hf, dq, dv, hinv):
    """``dq ← −H⁻¹ dq``, ``dv ← −H⁻¹ dv``, ``hinv ← H⁻¹`` by the dense Cholesky factor of H (in
    ``Hf``, overwritten). Returns 0, or the SINGULAR status of the first body of the cluster whose
    coordinate has a non-positive pivot."""
    bad = cholesky_in_place(Hf)
    if bad >= 0:
        for k in range(1, ic[0, L.C0_NCL] + 1):
            if ic[k, L.C_IV] <= bad < ic[k, L.C_IV] + ic[k, L.C_NV]:
                return SINGULAR * STATUS_BASE + cb[ic[k, L.C_FIRST]]
        return SINGULAR * STATUS_BASE
    n = Hf.shape[0]
    for r in range(n):
        for c in range(n):
            hinv[r, c] = 1.0 if r == c else 0.0
            dq[r, c] = -dq[r, c]
            dv[r, c] = -dv[r, c]
    cholesky_solve(Hf, hinv)
    cholesky_solve(Hf, dq)
    cholesky_solve(Hf, dv)
    return 0


@kernel(
    "int64(int64[::1], float64[::1], float64[::1], float64[::1], float64[::1], float64[:, ::1], "
    "float64[::1], float64[:, ::1], float64[:, ::1], float64[:, ::1], float64[:, ::1])"
)
def c_aba_derivatives_kernel(ints, floats, q, v, tau, fext, ddy, dq, dv, hinv, Hf):
    """ABA derivatives of a model with clusters (implicit loops included): ÿ by C-ABA into ``ddy``, then
    the RNEA derivatives at a = ÿ (H into ``Hf``) and ∂ÿ/∂x = −H⁻¹ ∂τ_y/∂x, ∂ÿ/∂τ = H⁻¹ (spec §2)."""
    ints, floats, q, v, tau, fext, ddy, dq, dv, hinv, Hf = borrowed(
        (ints, floats, q, v, tau, fext, ddy, dq, dv, hinv, Hf)
    )
    ib, ws, ic, cb, wc = model_views(ints, floats)
    code, consts, table, outputs = tapes(ic, cb, wc)
    st = validate_cluster_state(ib, ic, cb, q, v, tau, fext, True)
    if st != 0:
        return st
    if not acquire(ints):
        return DATA_IN_USE * STATUS_BASE
    need = c_buffer_size(ic, dq.shape[0])
    buf = stack_floats() if need <= STACK_FLOATS else np.empty(need)
    st = c_aba_core(ib, ws, ic, cb, wc, code, consts, table, outputs, q, v, tau, fext, ddy)
    if st == 0:
        st = c_rnea_derivatives_core(ints, floats, q, v, ddy, fext, dq, dv, Hf, borrowed((buf,))[0],
                                     np.int64(1))  # C-ABA's kinematics  # fmt: skip
    if st == 0:
        st = c_hinv_apply(ic, cb, Hf, dq, dv, hinv)
    release(ints)
    return st
