"""The joint-torque regressor: ``τ = Y(q, v, a) π``, linear in the inertial parameters π, on trees and on
trees of clusters (models with loops, in independent coordinates).

Per body b, π_b = (m, m c_x, m c_y, m c_z, Ī_xx, Ī_xy, Ī_yy, Ī_xz, Ī_yz, Ī_zz), Ī the rotational
inertia about the body's origin (Pinocchio's ``toDynamicParameters`` order). The spatial inertia is
linear in π_b, ``I_b = Σ_c π_b,c I(e_c)``, so the body's net force is linear too (Atkeson, An &
Hollerbach 1986):

    f_b = I_b a_b + v_b ×* I_b v_b = F_b π_b,      column c of F_b:  I(e_c) a_b + v_b ×* I(e_c) v_b     (1)

with v_b, a_b the body's velocity and acceleration (gravity as a base acceleration −a_g, RBDA §5.3). The
joint force of joint j is ``τ_j = S_jᵀ Σ_{b ⪰ j} ʲX_bᵀ f_b`` (RBDA eq. 5.11 unrolled), so

    Y[rows of j, columns of b] = S_jᵀ ʲX_bᵀ F_b      for every b in the subtree of j, else 0.        (2)

Equation (2) is evaluated in the world frame, where the pairing of a motion and a force is invariant:
``S_jᵀ ʲX_bᵀ F_b = (⁰X_j S_j)ᵀ (⁰X_bᵀ F_b)``. Each body's F_b is carried to the world once and each
joint's S_j once (kept in the body's scratch row ``W_TMP``), and each (ancestor j, body b) pair costs
four six-term and six three-term dot products per coordinate of j (the rotational inertias exert no
net force, only moments).

Models with loops (spec `derivatives-and-identification-on-loops.md` §5): the spanning tree's τ_s is
``Y_s(q, q̇, q̈) π`` at ``q̇ = G ẏ``, ``q̈ = G ÿ + g``, and τ_y = Gᵀ τ_s (cluster spec eq. 29), so

    Y_y = Gᵀ Y_s(q, G ẏ, G ÿ + g):   Y_y[x, ·] = Σ_r G[r, x] Y_s[r, ·]                                  (3)

computed row by row of Y_s as it is formed, through the sparse rows of G (layout ``C0_GMAP``); the
dense Y_s is never stored. Armature (one parameter per spanning velocity coordinate r) adds the
column ``Gᵀ e_r q̈_s[r]`` (the tree: ``e_r a_r``).
"""

from __future__ import annotations

from ..jit import inlined, njit, sequence
from ..model import layout as L
from ..spatial import ops
from .borrow import acquire, borrowed, model_views, release, view
from .cluster_kinematics import cluster_coordinates, tapes, validate_cluster_state
from .common import gravity_seed, jcalc, kernel, s_column, s_mul, velocity_pass
from .crba import zero_fill
from .rnea import validate_qva
from .status import DATA_IN_USE, STATUS_BASE

#: parameters per body
NPARAM = 10
#: where a body's scratch row keeps F_b in the world frame: the 6-vector columns of m and of m c_x,
#: m c_y, m c_z at W_FB + 6 c (c = 0 .. 3), then the rotational-inertia columns, whose force part is 0,
#: as their 3 moments at W_FB + 24 + 3 (c − 4) ...
W_FB = L.W_TMP
#: ... and its joint's motion subspace in the world frame (column k at W_SW + 6 k, at most 6)
W_SW = L.W_TMP + 42


@inlined
def store_world_force(ws, b, o, R, p, n, f):
    """The body-frame force (n, f) carried to the world frame (body at R, p), into ws[b, o:o + 6]."""
    fw = ops.rot_vec(R, f)
    nw = ops.rot_vec(R, n)
    ops.store6(ws, b, o, (nw[0] + p[1] * fw[2] - p[2] * fw[1], nw[1] + p[2] * fw[0] - p[0] * fw[2],
                          nw[2] + p[0] * fw[1] - p[1] * fw[0], fw[0], fw[1], fw[2]))  # fmt: skip


@inlined
def store_force_regressor(ws, b, R, p, v, a):
    """F_b (eq. 1) of body b, carried to the world frame (body placement R, p in the world), into
    ``ws[b, W_FB:W_FB + 42]``. With v = (ω, u), a = (α, β) and the classical linear acceleration
    β' = β + ω × u, the columns of eq. (1) written out (I(e_c) of each parameter, the cross products
    expanded; ``[a]×[b]× − [b]×[a]× = [a × b]×`` merges the moment of the first moments):

    * m: (0, β');
    * m c_k (unit vector e_k): (e_k × β', α × e_k + ω (ω·e_k) − |ω|² e_k);
    * Ī entry with unit symmetric E: (E α + ω × E ω, 0).
    """
    w0, w1, w2, u0, u1, u2 = v
    al0, al1, al2, be0, be1, be2 = a
    b0, b1, b2 = be0 + w1 * u2 - w2 * u1, be1 + w2 * u0 - w0 * u2, be2 + w0 * u1 - w1 * u0
    ww = w0 * w0 + w1 * w1 + w2 * w2
    z = 0.0
    o = W_FB
    store_world_force(ws, b, o, R, p, (z, z, z), (b0, b1, b2))
    store_world_force(ws, b, o + 6, R, p, (z, -b2, b1), (w0 * w0 - ww, al2 + w1 * w0, w2 * w0 - al1))
    store_world_force(ws, b, o + 12, R, p, (b2, z, -b0), (w0 * w1 - al2, w1 * w1 - ww, al0 + w2 * w1))
    store_world_force(ws, b, o + 18, R, p, (-b1, b0, z), (al1 + w0 * w2, w1 * w2 - al0, w2 * w2 - ww))
    o = W_FB + 24  # xx, xy, yy, xz, yz, zz: moments only, rotated to the world
    ops.store3(ws, b, o, ops.rot_vec(R, (al0, w2 * w0, -w1 * w0)))
    ops.store3(ws, b, o + 3, ops.rot_vec(R, (al1 - w2 * w0, al0 + w2 * w1, w0 * w0 - w1 * w1)))
    ops.store3(ws, b, o + 6, ops.rot_vec(R, (-w2 * w1, al1, w0 * w1)))
    ops.store3(ws, b, o + 9, ops.rot_vec(R, (al2 + w0 * w1, w2 * w2 - w0 * w0, al0 - w1 * w2)))
    ops.store3(ws, b, o + 12, ops.rot_vec(R, (w1 * w1 - w2 * w2, al2 - w0 * w1, al1 + w0 * w2)))
    ops.store3(ws, b, o + 15, ops.rot_vec(R, (w1 * w2, -w0 * w2, al2)))


@njit(cache=True)
def regressor_forward(ib, ws, q, v, a):
    """The forward pass of RNEA (RBDA eqs. 5.7–5.8: placements, v_i, a_i with gravity as −a_g at the
    base), plus each body's world placement, F_b in the world frame (eq. 1) and its joint's S in the
    world frame — everything eq. (2) needs."""
    nb = ib[0, L.I0_NBODIES]
    ops.store6(ws, 0, L.W_A, gravity_seed(ws))
    for i in range(1, nb + 1):
        R, p = jcalc(ib, ws, i, q)
        vi = velocity_pass(ib, ws, i, v, R, p)
        par = ib[i, L.I_PARENT]
        ai = ops.add6(
            ops.add6(ops.motion_to_child(R, p, ops.load6(ws, par, L.W_A)), s_mul(ib, ws, i, a)),
            ops.load6(ws, i, L.W_C),
        )
        ops.store6(ws, i, L.W_A, ai)
        if par == 0:
            OR, OP = R, p
        else:  # ⁰X_i = ⁰X_λ ^λX_i
            ORp = ops.load9(ws, par, L.W_OR)
            t = ops.rot_vec(ORp, p)
            OPp = ops.load3(ws, par, L.W_OP)
            OR, OP = ops.rot_mul(ORp, R), (OPp[0] + t[0], OPp[1] + t[1], OPp[2] + t[2])
        ops.store9(ws, i, L.W_OR, OR)
        ops.store3(ws, i, L.W_OP, OP)
        store_force_regressor(ws, i, OR, OP, vi, ai)
        for k in range(ib[i, L.I_NV]):
            ops.store6(ws, i, W_SW + 6 * k, ops.motion_to_parent(OR, OP, s_column(ib, ws, i, k)))


@inlined
def pair_row(ws, j, k, b):
    """Eq. (2): the 10 entries ``S_jᵀ ʲX_bᵀ F_b`` for coordinate k of joint j and body b (world-frame
    pairing of joint j's motion subspace column with each column of F_b; the rotational-inertia
    columns have moments only)."""
    s = ops.load6(ws, j, W_SW + 6 * k)
    o = W_FB + 24
    return (
        ops.dot6(s, ops.load6(ws, b, W_FB)),
        ops.dot6(s, ops.load6(ws, b, W_FB + 6)),
        ops.dot6(s, ops.load6(ws, b, W_FB + 12)),
        ops.dot6(s, ops.load6(ws, b, W_FB + 18)),
        s[0] * ws[b, o] + s[1] * ws[b, o + 1] + s[2] * ws[b, o + 2],
        s[0] * ws[b, o + 3] + s[1] * ws[b, o + 4] + s[2] * ws[b, o + 5],
        s[0] * ws[b, o + 6] + s[1] * ws[b, o + 7] + s[2] * ws[b, o + 8],
        s[0] * ws[b, o + 9] + s[1] * ws[b, o + 10] + s[2] * ws[b, o + 11],
        s[0] * ws[b, o + 12] + s[1] * ws[b, o + 13] + s[2] * ws[b, o + 14],
        s[0] * ws[b, o + 15] + s[1] * ws[b, o + 16] + s[2] * ws[b, o + 17],
    )


@njit(cache=True)
def tree_regressor_fill(ib, ws, a, Y):
    """Y (nv × 10 nb, plus nv armature columns if Y has them) from the forward pass (eq. 2): each body
    b against each joint on its path to the root."""
    zero_fill(Y)
    nb = ib[0, L.I0_NBODIES]
    for b in range(1, nb + 1):
        col = NPARAM * (b - 1)
        j = b
        while j > 0:
            iv = ib[j, L.I_IV]
            for k in range(ib[j, L.I_NV]):
                y = pair_row(ws, j, k, b)
                for c in range(NPARAM):
                    Y[iv + k, col + c] = y[c]
            j = ib[j, L.I_PARENT]
    if Y.shape[1] > NPARAM * nb:  # armature: τ_r += armature_r a_r
        for r in range(a.shape[0]):
            Y[r, NPARAM * nb + r] = a[r]


@njit(cache=True)
def cluster_regressor_fill(ib, ws, ic, cb, wc, Y):
    """Y_y = Gᵀ Y_s (eq. 3): each row of Y_s's block (r, b), once formed (eq. 2), is added to the rows
    x of the nonzeros G[r, x] of its spanning row r; armature columns ``Gᵀ e_r q̈_s[r]`` if Y has
    them."""
    zero_fill(Y)
    nb = ib[0, L.I0_NBODIES]
    GM = ic[0, L.C0_GMAP]
    for b in range(1, nb + 1):
        col = NPARAM * (b - 1)
        j = b
        while j > 0:
            iv = ib[j, L.I_IV]
            for k in range(ib[j, L.I_NV]):
                r = iv + k
                y = pair_row(ws, j, k, b)
                for e in range(GM + cb[GM + r], GM + cb[GM + r + 1], 2):
                    x, g = cb[e], wc[cb[e + 1]]
                    for c in range(NPARAM):
                        Y[x, col + c] += g * y[c]
            j = ib[j, L.I_PARENT]
    if Y.shape[1] > NPARAM * nb:
        QDDS = ic[0, L.C0_QDDS]
        for r in range(ic[0, L.C0_NVS]):
            for e in range(GM + cb[GM + r], GM + cb[GM + r + 1], 2):
                Y[cb[e], NPARAM * nb + r] += wc[cb[e + 1]] * wc[QDDS + r]


@sequence
def regressor_checked(ib, ws, q, v, a, Y):
    """The tree regressor after validating (q, v, a); returns the status (0: Y written)."""
    st = validate_qva(ib, q, v, a, view(ws, 0, (0, 6)))
    if st != 0:
        return st
    regressor_forward(ib, ws, q, v, a)
    tree_regressor_fill(ib, ws, a, Y)
    return 0


@sequence
def c_regressor_core(ib, ws, ic, cb, wc, code, consts, table, outputs, q, v, a, Y):
    """Eq. (3) on a validated state: spanning q, q̇ = G ẏ, q̈ = G ÿ + g (and G) per cluster, the tree's
    forward pass on them, then Y_y = Gᵀ Y_s. Returns a status (a loop not closed, K_d singular)."""
    for k in range(1, ic[0, L.C0_NCL] + 1):
        st = cluster_coordinates(ib, ic, cb, wc, code, consts, table, outputs, k, q, v, a)
        if st != 0:
            return st
    nqs, nvs = ic[0, L.C0_NQS], ic[0, L.C0_NVS]
    QS, QDS, QDDS = ic[0, L.C0_QS], ic[0, L.C0_QDS], ic[0, L.C0_QDDS]
    regressor_forward(ib, ws, wc[QS : QS + nqs], wc[QDS : QDS + nvs], wc[QDDS : QDDS + nvs])
    cluster_regressor_fill(ib, ws, ic, cb, wc, Y)
    return 0


@sequence
def c_regressor_checked(ints, floats, q, v, a, Y):
    """The cluster regressor after validating (q, ẏ, ÿ); returns the status (0: Y written)."""
    ib, ws, ic, cb, wc = model_views(ints, floats)
    code, consts, table, outputs = tapes(ic, cb, wc)
    st = validate_cluster_state(ib, ic, cb, q, v, a, view(floats, 0, (0, 6)), True)
    if st != 0:
        return st
    return c_regressor_core(ib, ws, ic, cb, wc, code, consts, table, outputs, q, v, a, Y)


@kernel("int64(int64[:, ::1], float64[:, ::1], float64[::1], float64[::1], float64[::1], float64[:, ::1])")
def regressor_kernel(ib, ws, q, v, a, Y):
    """Y(q, v, a) of a tree (eq. 2), nv × 10 nb (+ nv armature columns if Y is that wide)."""
    ib, ws, q, v, a, Y = borrowed((ib, ws, q, v, a, Y))
    if not acquire(ib):
        return DATA_IN_USE * STATUS_BASE
    st = regressor_checked(ib, ws, q, v, a, Y)
    release(ib)
    return st


@kernel("int64(int64[::1], float64[::1], float64[::1], float64[::1], float64[::1], float64[:, ::1])")
def c_regressor_kernel(ints, floats, q, v, a, Y):
    """Y_y(q, ẏ, ÿ) of a model with loops (eq. 3), nv × 10 nb (+ spanning-nv armature columns)."""
    ints, floats, q, v, a, Y = borrowed((ints, floats, q, v, a, Y))
    if not acquire(ints):
        return DATA_IN_USE * STATUS_BASE
    st = c_regressor_checked(ints, floats, q, v, a, Y)
    release(ints)
    return st
