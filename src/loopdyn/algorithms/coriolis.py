"""The Coriolis matrix C(q, v), the rate of the mass matrix Ṁ and the Christoffel symbols Γ(q), on
kinematic trees and on trees of clusters (models with loops, in independent coordinates).

Trees: a factorisation C with ``C v = nle − g`` and ``Ṁ − 2C`` skew-symmetric
----------------------------------------------------------------------------------
World frame, Featherstone's [ω; v] spatial vectors at a fixed origin (the same conventions and the
same workspace columns as :mod:`.derivatives`). Body i has world motion-subspace columns S_i (one per
velocity coordinate of its joint), velocity ``v_i = v_λ + S_i q̇_i``, world inertia I_i; with
``J_i`` the body Jacobian (the columns S_j of every joint j ⪯ i on its path), ``v_i = J_i q̇`` and

    M = Σ_i J_iᵀ I_i J_i,   J̇_i's column j = Ṡ_j = v_j × S_j   (a column moves with its body j),
    İ_i = v_i ×* I_i − I_i v_i×   (the inertia moves with its body).

Choose, per body, the 6 × 6 (Echeandia & Wensing, "Numerical methods to compute the Coriolis matrix
and Christoffel symbols for rigid-body systems", JCND 2021 — the choice Pinocchio's
``computeCoriolisMatrix`` makes)

    B_i = ½ (v_i ×* I_i − I_i v_i× + X(I_i v_i)),   X(h) x := x ×* h,                    (C1)

and ``C = Σ_i J_iᵀ (I_i J̇_i + B_i J_i)``. Then ``C q̇ = Σ J_iᵀ (I_i J̇_i q̇ + v_i ×* I_i v_i)`` is the
RNEA's velocity-product force (B_i v_i = v_i ×* I_i v_i since v × v = 0), and
``Ṁ − 2C = Σ J̇ᵀIJ − JᵀIJ̇ + Jᵀ(İ − 2B)J = Σ J̇ᵀIJ − JᵀIJ̇ − JᵀX(Iv)J`` is skew: X(h) is
skew (``yᵀ(x ×* h) = −xᵀ(y ×* h)``).

Entry (r, c) for coordinates r of body i and c of body j needs i and j on one path; the sums over
the bodies below the deeper of the two become composites ``Ic_i = Σ_{k⪰i} I_k``,
``Bc_i = Σ_{k⪰i} B_k`` (world frame: plain sums):

    j ⪯ i:  C_rc = S_rᵀ (Ic_i Ṡ_c + Bc_i S_c) = (Ic_i S_r)·Ṡ_c + (Bc_iᵀ S_r)·S_c,            (C2)
    i ≺ j:  C_rc = S_rᵀ (Ic_j Ṡ_c + Bc_j S_c),                                             (C3)

one backward pass, each (body, ancestor) pair visited once: O(n·d), as the RNEA derivatives (D5 of
:mod:`.derivatives` is (C2)–(C3) with the Ψ̇ terms of a moving q and 2B for B).

Ṁ from its own formula, ``Ṁ = Σ J̇ᵀIJ + JᵀİJ + JᵀIJ̇``, with ``İc_i = 2Bc_i − X(hc_i)`` (C1 summed,
``hc_i = Σ_{k⪰i} I_k v_k``) and ``−S_rᵀ X(hc) S_c = (S_r ×* hc)·S_c``: for j ⪯ i

    Ṁ_rc = Ṁ_cr = (Ic_i Ṡ_r)·S_c + (Ic_i S_r)·Ṡ_c + (2Bc_iᵀ S_r)·S_c + (S_r ×* hc_i)·S_c.      (C4)

It is not computed as C + Cᵀ (which it equals), so that the skew-symmetry of Ṁ − 2C is a check.

Christoffel symbols: C is linear in v, ``Γ[:, :, k] = ∂C/∂v_k = C(q, e_k)``, so ``C = Σ_k Γ[:, :, k]
v_k`` exactly; computed as nv Coriolis matrices at the unit velocities (one kernel call).

Models with loops (spec "derivatives and identification on loops" §4)
-----------------------------------------------------------------------
Spanning velocity ``q̇ = G ẏ``; ``H = Gᵀ M_s G``; with ``q̈ = G ÿ + Ġ ẏ`` the independent-coordinate
Coriolis matrix

    C_y = Gᵀ (C_s G + M_s Ġ),   Ḣ = Gᵀ Ṁ_s G + Ġᵀ M_s G + Gᵀ M_s Ġ,                         (C5)

(C_s, M_s, Ṁ_s the spanning tree's, by (C2)–(C4)) satisfies ``C_y ẏ + Gᵀ g_s = nle`` and
``Ḣ − 2C_y = Gᵀ(Ṁ_s − 2C_s)G + (ĠᵀM_sG − GᵀM_sĠ)``, skew. G is constant on explicit clusters and
single bodies (Ġ = 0). On an implicit cluster (``K G = 0`` with G's independent rows the identity),
``K̇ G + K Ġ = 0`` gives ``Ġ_d = −K_d⁻¹ (K̇ G)``, ``Ġ_i = 0``, where ``K̇ u = ∂²φ(q̇, u)``. The compiled
constraint program gives ``k(w) = −∂²φ(w, w)`` (a quadratic form in w at fixed q), so by
polarisation, exactly for a quadratic form,

    −K̇ u = ¼ (k(q̇ + u) − k(q̇ − u)),                                                    (C6)

two runs of the program's k part per independent coordinate, on the registers its φ, K part left
(u = α G e_l, α = |q̇| / |G e_l| so that both terms are of one size: the difference then loses no
digits to a large |u| or |q̇|). Where the program has a native rate function (a Data's programs run
natively: :meth:`loopdyn.Data.load_rate_programs`), K̇ itself is its Taylor coefficient 1 along q̇
(:func:`loopdyn.constraints.native.generate_taylor_source`), one call per cluster, and ``−K̇ G`` a
product (Tello's four differentials: 16 runs of k replaced by 4 calls).

The products with G are not formed from spanning matrices: the spanning pass projects C_s (or Ṁ_s)
and the columns of Gᵀ M_s at the loops' dependent coordinates as it makes them, a cluster's bodies
grouped through their common output body (:func:`cluster_coriolis_pass`, as
:func:`.derivatives.cluster_backward_pass` does for the RNEA derivatives); ``Gᵀ M_s Ġ`` then only
over the implicit clusters' columns and Ġ's nonzero rows: O(n·d) in all.
"""

from __future__ import annotations

import numpy as np

from ..constraints.tape import T_CONST_START, T_NATIVE_KDOT, call_native, evaluate_k
from ..jit import inlined, lazy, njit, shared
from ..model import layout as L
from ..spatial import ops
from .borrow import (
    STACK_FLOATS,
    acquire,
    address_of,
    borrowed,
    floats_at,
    model_views,
    release,
    stack_floats,
    view,
)
from .cluster_kinematics import (
    cluster_coordinates,
    cluster_tables_at,
    kd_inverse_at,
    lu_solve_inplace,
    tapes,
    validate_cluster_configuration,
    validate_cluster_state,
)
from .common import check_configuration, check_vector, jcalc, kernel, s_column
from .crba import zero_fill
from .derivatives import (
    AGG,
    D_B,
    D_S,
    D_V,
    add_to_sums,
    body_done,
    bt_mul,
    cluster_scratch,
    common_output,
    dependent_entries,
    load_sum,
    project_blocks,
    store_b_matrix,
    to_parent,
    world_placement,
    zero_scratch,
)
from .status import DATA_IN_USE, LOOP_CODE_MISSING, SINGULAR_CLUSTER, STATUS_BASE

D_SD = L.W_TMP + 36  # Ṡ columns (column k at +6k); W_F holds h_i = I_i v_i, then hc_i

# what the cores compute (bits of ``which``) and what the kernels return (``what``)
WANT_C, WANT_M, WANT_MDOT = 1, 2, 4
CORIOLIS, MDOT, CHRISTOFFEL = 0, 1, 2


@inlined
def forward_body(ib, ws, i, q, v, ref):
    """Body i's world placement, S_i, v_i, Ṡ_i = v_i × S_i, I_i, h_i = I_i v_i (into W_F) and
    2B_i (C1) (into W_IA, row-major)."""
    R, p = jcalc(ib, ws, i, q)
    oR, op = world_placement(ib, ws, i, R, p, ref)
    vi = ops.load6(ws, ib[i, L.I_PARENT], D_V)
    nv, iv = ib[i, L.I_NV], ib[i, L.I_IV]
    for k in range(nv):
        sk = ops.motion_to_parent(oR, op, s_column(ib, ws, i, k))
        ops.store6(ws, i, D_S + 6 * k, sk)
        vi = ops.add6(vi, ops.scale6(sk, v[iv + k]))
    for k in range(nv):  # Ṡ needs the final v_i (all columns of a multi-DoF joint)
        ops.store6(ws, i, D_SD + 6 * k, ops.cross_motion(vi, ops.load6(ws, i, D_S + 6 * k)))
    ops.store6(ws, i, D_V, vi)
    I = ops.inertia_to_parent(oR, op, ops.load10(ws, i, L.W_INER))
    ops.store10(ws, i, L.W_IC, I)
    h = ops.inertia_mul(I, vi)
    ops.store6(ws, i, L.W_F, h)
    store_b_matrix(ws, i, I, vi, h)  # v ×* I − I v× + X(h) = 2 B_i


@inlined
def column_force(ws, i, k, Ic):
    """``u = Ic_i Ṡ + Bc_i S`` for body i's coordinate k: C's column entries are ``S_rᵀ u`` (C3)."""
    return ops.add6(
        ops.inertia_mul(Ic, ops.load6(ws, i, D_SD + 6 * k)),
        ops.scale6(ops.mat6_mul(ws, i, D_B, ops.load6(ws, i, D_S + 6 * k)), 0.5),
    )


@inlined
def rows_of_body(ib, ws, i, C, M, Md, which, cl, stop):
    """Entries (r, c) for r a coordinate of body i and c of any j ⪯ i (i included) up to, not
    including, body ``stop`` (0: every ancestor), composites of i final: C by (C2), M (both ways), Ṁ
    by (C4) (both ways). ``cl`` None: into the spanning matrices; else (the walk stays in i's cluster)
    into the cluster's block (0: C, 1: Ṁ, 2: M) in its local coordinates, and, when ``stop`` is a
    body, Ic S, 2Bcᵀ S, the Ṁ row vector and u (:func:`column_force`) to the cluster's sums
    (:func:`.derivatives.add_to_sums`; :func:`cluster_coriolis_pass`)."""
    if cl is not None:
        blk = borrowed(cl)[6]
    Ic = ops.load10(ws, i, L.W_IC)
    hc = ops.load6(ws, i, L.W_F)
    ivi = ib[i, L.I_IV]
    for k in range(ib[i, L.I_NV]):
        s = ops.load6(ws, i, D_S + 6 * k)
        ics = ops.inertia_mul(Ic, s)
        bts = bt_mul(ws, i, s)  # (2 Bc_i)ᵀ S_r
        md_s = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        if which & WANT_MDOT:  # (C4) without its (Ic S_r)·Ṡ_c term: Ic Ṡ_r + 2Bcᵀ S_r + S_r ×* hc
            icsd = ops.inertia_mul(Ic, ops.load6(ws, i, D_SD + 6 * k))
            md_s = ops.add6(ops.add6(icsd, bts), ops.cross_force(s, hc))
        r = ivi + k
        lr = ib[i, L.I_SUB] + k  # local (cl)
        if cl is not None:
            if stop > 0:
                if which & WANT_C:  # C: A, B, and U (at 18; 12 unused)
                    add_to_sums(cl, r, 0, ics, bts)
                    add_to_sums(cl, r, 12, md_s, column_force(ws, i, k, Ic))
                else:  # Ṁ: A and D side by side (at 0 and 6), one pass over G's row
                    add_to_sums(cl, r, 0, ics, md_s)
        j = i
        while j != stop:
            ivj = ib[j, L.I_IV]
            for l in range(ib[j, L.I_NV]):
                c = ivj + l
                lc = ib[j, L.I_SUB] + l
                sjl = ops.load6(ws, j, D_S + 6 * l)
                sdjl = ops.load6(ws, j, D_SD + 6 * l)
                if which & WANT_C:
                    x = ops.dot6(ics, sdjl) + 0.5 * ops.dot6(bts, sjl)
                    if cl is None:
                        C[r, c] = x
                    else:
                        blk[0, lr, lc] = x
                if which & WANT_M:
                    m = ops.dot6(ics, sjl)
                    if cl is None:
                        M[r, c] = m
                        M[c, r] = m
                    else:
                        blk[2, lr, lc] = m
                        blk[2, lc, lr] = m
                if which & WANT_MDOT:
                    md = ops.dot6(md_s, sjl) + ops.dot6(ics, sdjl)
                    if cl is None:
                        Md[r, c] = md
                        Md[c, r] = md
                    else:
                        blk[1, lr, lc] = md
                        blk[1, lc, lr] = md
            j = ib[j, L.I_PARENT]


@inlined
def columns_of_body(ib, ws, i, C, cl, stop):
    """C's entries (r, c) for c a coordinate of body i and r of a strict ancestor up to, not including,
    body ``stop``: (C3); ``cl`` as :func:`rows_of_body`."""
    if cl is not None:
        blk = borrowed(cl)[6]
    Ic = ops.load10(ws, i, L.W_IC)
    ivi = ib[i, L.I_IV]
    for k in range(ib[i, L.I_NV]):
        u = column_force(ws, i, k, Ic)
        c = ivi + k
        j = ib[i, L.I_PARENT]
        while j != stop:
            ivj = ib[j, L.I_IV]
            for l in range(ib[j, L.I_NV]):
                x = ops.dot6(ops.load6(ws, j, D_S + 6 * l), u)
                if cl is None:
                    C[ivj + l, c] = x
                else:
                    blk[0, ib[j, L.I_SUB] + l, ib[i, L.I_SUB] + k] = x
            j = ib[j, L.I_PARENT]


@inlined
def coriolis_outside(ib, ws, ic, cb, wc, k, top, out, what, dcol, GXm, agg):
    """Cluster k's entries against the ancestors of body ``top`` (itself included), from its sums
    (A = Σ G Ic S at 0, then for C: B = Σ G 2Bcᵀ S at 6 and U = Σ G u at 18; for Ṁ: D = Σ G (Ṁ row
    vector) at 6, :func:`rows_of_body`): for each independent coordinate
    a and coordinate c of those bodies, C: ``Σ_r G[r, a] C[r, c] = A·Ṡ_c + ½ B·S_c`` and
    ``Σ_r C[c, r] G[r, a] = S_c·U``, or Ṁ: ``D·S_c + A·Ṡ_c`` both ways, projected on c through G's
    row c into ``out``; and at a dependent c, ``Σ_r G[r, a] M[r, c] = A·S_c`` into the columns of
    Gᵀ M_s (``GXm``, when it has any)."""
    GM = ic[0, L.C0_GMAP]
    y0 = ic[k, L.C_IV]
    for a in range(ic[k, L.C_M]):
        o = AGG * a
        A, B = load_sum(agg, o), load_sum(agg, o + 6)  # B: D for Ṁ
        U = load_sum(agg, o + 18)
        ya = y0 + a
        j = top
        while j > 0:
            ivj = ib[j, L.I_IV]
            for l in range(ib[j, L.I_NV]):
                c = ivj + l
                s = ops.load6(ws, j, D_S + 6 * l)
                sd = ops.load6(ws, j, D_SD + 6 * l)
                asd = ops.dot6(A, sd)
                if what == CORIOLIS:
                    x = asd + 0.5 * ops.dot6(B, s)
                    y = ops.dot6(s, U)
                else:
                    x = ops.dot6(B, s) + asd  # D·S_c + A·Ṡ_c
                    y = x
                for f in range(GM + cb[GM + c], GM + cb[GM + c + 1], 2):
                    b, g = cb[f], wc[cb[f + 1]]
                    out[ya, b] += g * x
                    out[b, ya] += g * y
                kc = dcol[c]
                if kc >= 0:
                    GXm[ya, kc] += ops.dot6(A, s)
            j = ib[j, L.I_PARENT]


@inlined
def cluster_coriolis_pass(ib, ws, out, what, proj):
    """The backward pass of :func:`coriolis_pass` on a spanning tree, cluster by cluster (children
    first), projected on the independent coordinates as :func:`.derivatives.cluster_backward_pass`
    does for the RNEA derivatives: ``out`` ← Gᵀ C_s G (``what`` = CORIOLIS) or Gᵀ Ṁ_s G (MDOT), and,
    with implicit clusters (``GXm`` has columns), the columns of Gᵀ M_s at their dependent
    coordinates."""
    ic, cb, wc, dcol, GXm, aggs, depv, blks = borrowed(proj)
    implicit = GXm.shape[1] > 0
    which = (WANT_C if what == CORIOLIS else WANT_MDOT) | (WANT_M if implicit else 0)
    ao, bo = zero_scratch(aggs, blks)
    none = view(blks, 0, (0, 0))
    for k in range(ic[0, L.C0_NCL], 0, -1):
        first, nbk, y0, m = ic[k, L.C_FIRST], ic[k, L.C_NB], ic[k, L.C_IV], ic[k, L.C_M]
        agg, blk, ao, bo = cluster_scratch(ic, k, aggs, blks, ao, bo)
        cl = (ic, cb, wc, dcol, depv, agg, blk, y0)
        grouped = common_output(ib, ic, cb, k)
        for b in range(nbk - 1, -1, -1):
            i = cb[first + b]
            stop = ib[i, L.I_OUT]
            rows_of_body(ib, ws, i, none, none, none, which, cl, stop)
            if what == CORIOLIS:
                columns_of_body(ib, ws, i, none, cl, stop)
            body_done(ib, ws, i, blk)
            if stop > 0 and (grouped < 0 or b == 0):  # as the RNEA derivatives' pass
                coriolis_outside(ib, ws, ic, cb, wc, k, stop, out, what, dcol, GXm, agg)
                if grouped < 0:
                    for t in range(AGG * m):
                        agg[t] = 0.0
        if ic[k, L.C_KIND] == L.IMPLICIT:
            dependent_entries(ib, ws, ic, cb, wc, k, none, GXm, dcol, depv)
        # C (block 0) or Ṁ (block 1) into out; M's dependent columns (block 2; none: no columns)
        outs = (out, none, none) if what == CORIOLIS else (none, out, none)
        project_blocks(ib, ic, cb, wc, k, blk, outs, (none, none, GXm), dcol)


@inlined
def coriolis_pass(ib, ws, q, v, C, M, Md, which, proj):
    """The tree's C (C2–C3), M and Ṁ (C4) at (q, v), validated inputs, into the nv × nv ``C``, ``M``,
    ``Md`` — those whose bit (WANT_C, WANT_M, WANT_MDOT) is set in ``which`` (the others are not
    touched: pass empty arrays). M includes the armature. ``proj`` None: a tree; else the spanning
    tree of a model with clusters, projected as it goes (:func:`cluster_coriolis_pass`: ``C`` or
    ``Md`` then receives Gᵀ C_s G or Gᵀ Ṁ_s G)."""
    nb = ib[0, L.I0_NBODIES]
    if which & WANT_C:
        zero_fill(C)  # entries of bodies on different branches stay zero
    if which & WANT_M:
        zero_fill(M)
    if which & WANT_MDOT:
        zero_fill(Md)
    ops.store6(ws, 0, D_V, (0.0, 0.0, 0.0, 0.0, 0.0, 0.0))
    if nb == 0:
        return
    # reference frame: world axes, origin at body 1 at this q (as the RNEA derivatives: every entry is
    # frame-invariant, and moments about a near origin keep their digits)
    ref = jcalc(ib, ws, 1, q)[1]
    for i in range(1, nb + 1):
        forward_body(ib, ws, i, q, v, ref)
    if proj is not None:
        if which & WANT_C:
            cluster_coriolis_pass(ib, ws, C, CORIOLIS, proj)
        else:
            cluster_coriolis_pass(ib, ws, Md, MDOT, proj)
        return
    for i in range(nb, 0, -1):
        rows_of_body(ib, ws, i, C, M, Md, which, None, 0)
        if which & WANT_C:
            columns_of_body(ib, ws, i, C, None, 0)
        par = ib[i, L.I_PARENT]
        if par > 0:
            to_parent(ws, i, par)  # Ic, 2Bc and hc (in W_F) of the parent
    if which & WANT_M and ws[0, L.W_ARM] != 0.0:  # armature: constant, on M's diagonal only
        for i in range(1, nb + 1):
            iv = ib[i, L.I_IV]
            for k in range(ib[i, L.I_NV]):
                M[iv + k, iv + k] += ws[i, L.W_ARM + k]


@njit(cache=True, fastmath={"contract"})
def coriolis_core(ib, ws, q, v, C, M, Md, which):
    """The tree's C (C2–C3), M and Ṁ (C4) at (q, v), validated inputs, into the nv × nv ``C``, ``M``,
    ``Md`` — those whose bit (WANT_C, WANT_M, WANT_MDOT) is set in ``which`` (the others are not
    touched: pass empty arrays). M includes the armature. One compiled pass for every ``which``: the
    flag is a run-time int64 (call sites pass ``np.int64(...)``: a bare global constant would be
    typed as a literal and compile a copy of this function per value)."""
    ib, ws, q, v, C, M, Md = borrowed((ib, ws, q, v, C, M, Md))
    coriolis_pass(ib, ws, q, v, C, M, Md, which, None)


@njit(cache=True)
def scatter_christoffel(C, out, k):
    """``Γ[:, :, k] = C`` into ``out``, Γ (nv, nv, nv) C-ordered seen as (nv·nv, nv)."""
    C, out = borrowed((C, out))
    n = C.shape[0]
    for a in range(n):
        for b in range(n):
            out[a * n + b, k] = C[a, b]


@njit(cache=True)
def christoffel_core(ib, ws, q, out, C, e):
    """Γ of a tree at q (validated) into ``out`` (nv·nv × nv): C at every unit velocity; ``C`` (nv × nv)
    and ``e`` (nv) scratch."""
    ib, ws, q, out, C, e = borrowed((ib, ws, q, out, C, e))
    n = e.shape[0]
    none = view(e, 0, (0, 0))
    for k in range(n):
        for x in range(n):
            e[x] = 0.0
        e[k] = 1.0
        coriolis_core(ib, ws, q, e, C, none, none, np.int64(WANT_C))
        scatter_christoffel(C, out, k)


@kernel("int64(int64[:, ::1], float64[:, ::1], float64[::1], float64[::1], float64[:, ::1], int64)")
def coriolis_kernel(ib, ws, q, v, out, what):
    """A tree's Coriolis matrix (``what`` = CORIOLIS), Ṁ (MDOT) into ``out`` (nv × nv), or its
    Christoffel symbols (CHRISTOFFEL; ``v`` ignored) into ``out`` (nv·nv × nv). Returns a status."""
    ib, ws, q, v, out = borrowed((ib, ws, q, v, out))
    st = check_configuration(ib, q)
    if st == 0 and what != CHRISTOFFEL:
        st = check_vector(v, ib[0, L.I0_NV], 1)
    if st != 0:
        return st
    if not acquire(ib):
        return DATA_IN_USE * STATUS_BASE
    n = ib[0, L.I0_NV]
    if what == CORIOLIS:
        coriolis_core(ib, ws, q, v, out, view(v, 0, (0, 0)), view(v, 0, (0, 0)), np.int64(WANT_C))
    elif what == MDOT:
        coriolis_core(ib, ws, q, v, view(v, 0, (0, 0)), view(v, 0, (0, 0)), out, np.int64(WANT_MDOT))
    else:
        need = n * n + n
        buf = stack_floats() if need <= STACK_FLOATS else np.empty(need)
        buf = borrowed((buf,))[0]
        christoffel_core(ib, ws, q, out, view(buf, 0, (n, n)), view(buf, n * n, (n,)))
    release(ib)
    return 0


# ---------------------------------------------------------------------------------------------
# trees of clusters (C5–C6)


@njit(cache=True)
def cluster_buffer_size(ic, n, what):
    """Floats of scratch :func:`c_coriolis_core` (and, for CHRISTOFFEL, :func:`c_christoffel_core`)
    need: the clusters' sums and blocks of :func:`cluster_coriolis_pass` (``AGG`` per independent
    coordinate, 3 n² per cluster), the dependent coordinates' vectors (12 each) and the columns of
    Gᵀ M_s at them (nv each), Ġ of the implicit clusters (Σ N M), the polarisation's scratch (N + 2
    rows + NROW² + NROW M at most) or the native rate function's (K, K̇: 2 rows × N), and for Γ, C_y
    and ẏ = e_k."""
    gd = 0
    sc = 0
    for k in range(1, ic[0, L.C0_NCL] + 1):
        if ic[k, L.C_KIND] == L.IMPLICIT:
            nn, m, nrow = ic[k, L.C_N], ic[k, L.C_M], ic[k, L.C_NROW]
            gd += nn * m
            nt = nrow + ic[k, L.C_NCHECK]
            sc = max(sc, nn + 2 * nt + nrow * nrow + nrow * m, 2 * nt * nn)
    extra = n * n + n if what == CHRISTOFFEL else 0
    pass_size = AGG * ic[0, L.C0_SUMM] + 3 * ic[0, L.C0_SUMN2] + (12 + n) * ic[0, L.C0_NDEP]
    return pass_size + gd + sc + extra


@inlined
def implicit_gdot(ic, cb, wc, code, consts, table, outputs, k, gd, sc):
    """Ġ of implicit cluster k (N × M, row-major) into ``gd`` by (C6), right after its coordinates
    (its program's registers and K, q̇ still in place); ``sc`` scratch. Returns a status."""
    row = ic[k]
    n, m, nrow = row[L.C_N], row[L.C_M], row[L.C_NROW]
    nt = nrow + row[L.C_NCHECK]
    scr, G, dep = row[L.C_SCR], row[L.C_G], row[L.C_DEP]
    qdl = scr + n
    K = scr + 2 * n + nt
    p = row[L.C_PROG]
    regs = wc[ic[0, L.C0_REGS] :]
    for j in range(n * m):
        gd[j] = 0.0
    qq = 0.0
    for j in range(n):
        qq += wc[qdl + j] * wc[qdl + j]
    if qq == 0.0:  # at rest: K̇ = 0
        return 0
    w = view(sc, 0, (n,))
    kp = view(sc, n, (nt,))
    km = view(sc, n + nt, (nt,))
    kd = n + 2 * nt  # K_d (NROW × NROW), then the right-hand sides (NROW × M), row-major
    rhs = kd + nrow * nrow
    for l in range(m):
        uu = 0.0
        for j in range(n):
            uu += wc[G + j * m + l] * wc[G + j * m + l]
        alpha = np.sqrt(qq / uu)  # uu ≥ 1: G has a 1 on the independent row
        for j in range(n):
            w[j] = wc[qdl + j] + alpha * wc[G + j * m + l]
        evaluate_k(code, consts, table, outputs, p, w, regs, kp)
        for j in range(n):
            w[j] = wc[qdl + j] - alpha * wc[G + j * m + l]
        evaluate_k(code, consts, table, outputs, p, w, regs, km)
        for r in range(nrow):  # −K̇ G e_l (C6), kept rows
            sc[rhs + r * m + l] = 0.25 * (kp[r] - km[r]) / alpha
    if nrow == 2:
        for l in range(m):
            two_row_gdot(ic, cb, wc, k, l, sc[rhs + l], sc[rhs + m + l], gd)
        return 0
    for r in range(nrow):
        for c in range(nrow):
            sc[kd + r * nrow + c] = wc[K + r * n + cb[dep + c]]
    if not lu_solve_inplace(sc, kd, nrow, sc, rhs, m):
        return SINGULAR_CLUSTER * STATUS_BASE + k
    for r in range(nrow):
        for l in range(m):
            gd[cb[dep + r] * m + l] = sc[rhs + r * m + l]
    return 0


@inlined
def two_row_gdot(ic, cb, wc, k, l, r0, r1, gd):
    """Column l of Ġ_d = K_d⁻¹ (−K̇ G) for implicit cluster k with two kept rows, from that column's
    right-hand sides ``r0``, ``r1`` and the K_d⁻¹ that the cluster's coordinates left
    (:func:`.cluster_kinematics.kd_inverse_at`), into ``gd`` (N × M, row-major)."""
    m, dep = ic[k, L.C_M], ic[k, L.C_DEP]
    inv = kd_inverse_at(ic, k)
    gd[cb[dep] * m + l] = wc[inv] * r0 + wc[inv + 1] * r1
    gd[cb[dep + 1] * m + l] = wc[inv + 2] * r0 + wc[inv + 3] * r1


@lazy("int64(" + ", ".join(["int64"] * 11) + ")", missing_status=LOOP_CODE_MISSING * STATUS_BASE,
      needed_by="loop_rates")  # fmt: skip
def implicit_gdot_pass(ic_at, nic, cb_at, ncb, wc_at, nwc, k, gd_at, ngd, sc_at, nsc):
    """:func:`implicit_gdot` as a lazy pass (loopdyn.jit.lazy), arrays as addresses and sizes, as
    :func:`~loopdyn.algorithms.cluster_kinematics.implicit_coordinates_pass`: a model without implicit
    loops compiles its Coriolis kernels without the constraint programs' interpreter."""
    ic, cb, wc, code, consts, table, outputs = cluster_tables_at(ic_at, nic, cb_at, ncb, wc_at, nwc)
    return implicit_gdot(ic, cb, wc, code, consts, table, outputs, k, floats_at(gd_at, (ngd,)),
                         floats_at(sc_at, (nsc,)))  # fmt: skip


_call_implicit_gdot = implicit_gdot_pass.call


@inlined
def implicit_gdot_call(ic, cb, wc, k, gd, sc):
    """Call :func:`implicit_gdot_pass` on these C-contiguous arrays."""
    return _call_implicit_gdot(address_of(ic), ic.shape[0], address_of(cb), cb.shape[0], address_of(wc),
                               wc.shape[0], k, address_of(gd), gd.shape[0], address_of(sc),
                               sc.shape[0])  # fmt: skip


@inlined
def native_gdot(ic, cb, wc, consts, table, k, gd, KK):
    """Ġ of implicit cluster k with two kept rows (N × M, row-major) into ``gd`` from its program's
    native rate function (``table[p, T_NATIVE_KDOT]``: K̇ = ∂²φ(q̇, ·), the second block it writes into
    the 2 NT × N scratch ``KK``): ``Ġ_d = −K_d⁻¹ (K̇ G)``, ``Ġ_i = 0``, with the K_d⁻¹ that the
    cluster's coordinates left (:func:`.cluster_kinematics.kd_inverse_at`). Inlined into the kernel:
    no lazy pass, no interpreter (the polarisation of :func:`implicit_gdot` is the fallback)."""
    row = ic[k]
    n, m, nt = row[L.C_N], row[L.C_M], row[L.C_NROW] + row[L.C_NCHECK]
    scr, G, p = row[L.C_SCR], row[L.C_G], row[L.C_PROG]
    for j in range(n * m):
        gd[j] = 0.0
    kappa = consts[table[p, T_CONST_START] :]
    call_native(table[p, T_NATIVE_KDOT], view(wc, scr, (2 * n,)), KK, KK, KK, kappa)  # q, q̇ in
    K0, K1 = nt * n, nt * n + n  # K̇'s two kept rows
    for l in range(m):
        r0 = 0.0
        r1 = 0.0
        for j in range(n):
            g = wc[G + j * m + l]
            r0 -= KK[K0 + j] * g
            r1 -= KK[K1 + j] * g
        two_row_gdot(ic, cb, wc, k, l, r0, r1, gd)


@shared(fastmath={"contract"})
def c_coriolis_core(ib, ws, ic, cb, wc, code, consts, table, outputs, q, v, out, what, buf):
    """C_y (``what`` = CORIOLIS) or Ḣ (MDOT) of a model with clusters at (q, ẏ), validated inputs, into
    the nv × nv ``out`` by (C5); ``buf`` holds :func:`cluster_buffer_size` floats. Returns a status."""
    ib, ws, ic, cb, wc, code, consts, table, outputs, q, v, out, buf = borrowed(
        (ib, ws, ic, cb, wc, code, consts, table, outputs, q, v, out, buf)
    )
    n, nvs, nqs = out.shape[0], ic[0, L.C0_NVS], ic[0, L.C0_NQS]
    ncl = ic[0, L.C0_NCL]
    nd, na, nblk = ic[0, L.C0_NDEP], AGG * ic[0, L.C0_SUMM], 3 * ic[0, L.C0_SUMN2]
    aggs = view(buf, 0, (na,))  # cluster_coriolis_pass's sums and blocks, the dependent coordinates'
    blks = view(buf, na, (nblk,))  # vectors, the columns of Gᵀ M_s at them; then Ġ and scratch
    depv = view(buf, na + nblk, (nd, 12))
    GXm = view(buf, na + nblk + 12 * nd, (n, nd))
    gd0 = na + nblk + (12 + n) * nd
    gd = gd0
    for k in range(1, ncl + 1):
        if ic[k, L.C_KIND] == L.IMPLICIT:
            gd += ic[k, L.C_N] * ic[k, L.C_M]
    sc = view(buf, gd, (buf.shape[0] - gd,))
    no_a = wc[0:0]
    implicit = False
    gd = gd0
    for k in range(1, ncl + 1):  # spanning q, q̇ = G ẏ (and G); Ġ of the implicit clusters
        st = cluster_coordinates(ib, ic, cb, wc, code, consts, table, outputs, k, q, v, no_a)
        if st != 0:
            return st
        if ic[k, L.C_KIND] == L.IMPLICIT:
            implicit = True
            nm = ic[k, L.C_N] * ic[k, L.C_M]
            if table[ic[k, L.C_PROG], T_NATIVE_KDOT] != 0 and ic[k, L.C_NROW] == 2:
                native_gdot(ic, cb, wc, consts, table, k, view(buf, gd, (nm,)), sc)
            else:
                st = implicit_gdot_call(ic, cb, wc, k, view(buf, gd, (nm,)), sc)
                if st != 0:
                    return st
            gd += nm
    qs = view(wc, ic[0, L.C0_QS], (nqs,))
    qds = view(wc, ic[0, L.C0_QDS], (nvs,))
    none = view(buf, 0, (0, 0))
    zero_fill(GXm)
    dcol = view(cb, ic[0, L.C0_DCOL], (nvs,))
    proj = (ic, cb, wc, dcol, GXm, aggs, depv, blks)
    if what == CORIOLIS:  # Gᵀ C_s G or Gᵀ Ṁ_s G, and Gᵀ M_s at the dependent coordinates
        coriolis_pass(ib, ws, qs, qds, out, none, none, np.int64(WANT_C), proj)
    else:
        coriolis_pass(ib, ws, qs, qds, none, none, out, np.int64(WANT_MDOT), proj)
    if not implicit:
        return 0
    # Gᵀ M_s Ġ: Ġ's non-zero entries are the implicit clusters' (their dependent rows, their columns):
    # column col = iv + l of the result is Σ_r Ġ[s_r, l] (Gᵀ M_s)[:, s_r] over the cluster's dependent
    # spanning coordinates s_r (GXm's column dcol[s_r])
    gd = gd0
    for k in range(1, ncl + 1):
        if ic[k, L.C_KIND] != L.IMPLICIT:
            continue
        nn, m, iv, first = ic[k, L.C_N], ic[k, L.C_M], ic[k, L.C_IV], ic[k, L.C_FIRST]
        dep, nrow = ic[k, L.C_DEP], ic[k, L.C_NROW]
        for l in range(m):
            col = iv + l
            for r in range(nrow):
                gjl = buf[gd + cb[dep + r] * m + l]
                d = dcol[ib[cb[first + cb[dep + r]], L.I_IV]]
                for x in range(n):
                    out[x, col] += gjl * GXm[x, d]
                if what == MDOT:  # Ḣ: + Ġᵀ M_s G, the transpose
                    for x in range(n):
                        out[col, x] += gjl * GXm[x, d]
        gd += nn * m
    return 0


@njit(cache=True)
def c_christoffel_core(ib, ws, ic, cb, wc, code, consts, table, outputs, q, out, buf):
    """Γ of a model with clusters at q (validated): C_y at every unit ẏ. Returns a status."""
    ib, ws, ic, cb, wc, code, consts, table, outputs, q, out, buf = borrowed(
        (ib, ws, ic, cb, wc, code, consts, table, outputs, q, out, buf)
    )
    nv = 0
    for k in range(1, ic[0, L.C0_NCL] + 1):
        nv += ic[k, L.C_NV]
    size = buf.shape[0] - nv * nv - nv
    C = view(buf, size, (nv, nv))
    e = view(buf, size + nv * nv, (nv,))
    inner = view(buf, 0, (size,))
    for k in range(nv):
        for x in range(nv):
            e[x] = 0.0
        e[k] = 1.0
        st = c_coriolis_core(
            ib, ws, ic, cb, wc, code, consts, table, outputs, q, e, C, np.int64(CORIOLIS), inner
        )
        if st != 0:
            return st
        scatter_christoffel(C, out, k)
    return 0


@kernel("int64(int64[::1], float64[::1], float64[::1], float64[::1], float64[:, ::1], int64)")
def c_coriolis_kernel(ints, floats, q, v, out, what):
    """C_y (``what`` = CORIOLIS) or Ḣ (MDOT) into ``out`` (nv × nv), or Γ (CHRISTOFFEL; ``v``
    ignored) into ``out`` (nv·nv × nv), of a model with clusters. Returns a status."""
    ints, floats, q, v, out = borrowed((ints, floats, q, v, out))
    ib, ws, ic, cb, wc = model_views(ints, floats)
    code, consts, table, outputs = tapes(ic, cb, wc)
    if what == CHRISTOFFEL:
        st = validate_cluster_configuration(ib, ic, cb, q)
    else:
        st = validate_cluster_state(ib, ic, cb, q, v, v[0:0], view(wc, 0, (0, 6)), False)
    if st != 0:
        return st
    if not acquire(ints):
        return DATA_IN_USE * STATUS_BASE
    n = out.shape[1] if what == CHRISTOFFEL else out.shape[0]
    need = cluster_buffer_size(ic, n, what)
    buf = stack_floats() if need <= STACK_FLOATS else np.empty(need)
    buf = borrowed((buf,))[0]
    inner = view(buf, 0, (need,))
    if what == CHRISTOFFEL:
        st = c_christoffel_core(ib, ws, ic, cb, wc, code, consts, table, outputs, q, out, inner)
    else:
        st = c_coriolis_core(ib, ws, ic, cb, wc, code, consts, table, outputs, q, v, out, what, inner)
    release(ints)
    return st
