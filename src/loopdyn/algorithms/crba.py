"""The joint-space mass matrix by the composite-rigid-body algorithm (CRBA; Featherstone, RBDA
Table 6.2) and its inverse by the sparse LᵀL factorisation (RBDA §6.5, Table 6.3)."""

from __future__ import annotations

import numpy as np

from ..jit import inlined, njit, sequence
from ..model import layout as L
from ..model.joints import FREEFLYER, PRISMATIC, REVOLUTE, REVOLUTE_UNBOUNDED, SPHERICAL
from ..spatial import ops
from .borrow import acquire, borrowed, release
from .common import check_configuration, jcalc, kernel, pivot_positive, s_column
from .status import DATA_IN_USE, SINGULAR, STATUS_BASE


@inlined
def zero_fill(M):
    """M[:, :] = 0 as plain loops (Numba's broadcast slice assignment costs several times more on
    the small matrices here)."""
    for a in range(M.shape[0]):
        for b in range(M.shape[1]):
            M[a, b] = 0.0


@inlined
def s_dot(ib, ws, j, k, F):
    """``S_j[:, k]ᵀ F`` for body j's joint and a 6-tuple force F, reading only the non-zero entries of
    the motion subspace (the same sum as ``dot6(s_column(...), F)`` without the products by zero)."""
    jt = ib[j, L.I_JTYPE]
    if jt == REVOLUTE or jt == REVOLUTE_UNBOUNDED:
        return ws[j, L.W_AXIS] * F[0] + ws[j, L.W_AXIS + 1] * F[1] + ws[j, L.W_AXIS + 2] * F[2]
    if jt == PRISMATIC:
        return ws[j, L.W_AXIS] * F[3] + ws[j, L.W_AXIS + 1] * F[4] + ws[j, L.W_AXIS + 2] * F[5]
    if jt == SPHERICAL:
        return F[k]
    return F[k + 3] if k < 3 else F[k - 3]  # FREEFLYER: v = [linear; angular]


@inlined
def freeflyer_block(M, iv, Ic, ws, i):
    """The 6 × 6 diagonal block ``Sᵀ Ic S`` of a free-flyer joint (S a permutation: v = [linear;
    angular]), written from the compact inertia (m, h, Ī) without products: ``[[m 1, (h×)ᵀ], [h×, Ī]]``,
    armature added on the diagonal (RBDA eq. 6.16 with S the identity up to order)."""
    mass, h0, h1, h2, xx, yy, zz, xy, xz, yz = Ic
    blk = (
        (mass, 0.0, 0.0, 0.0, h2, -h1),
        (0.0, mass, 0.0, -h2, 0.0, h0),
        (0.0, 0.0, mass, h1, -h0, 0.0),
        (0.0, -h2, h1, xx, xy, xz),
        (h2, 0.0, -h0, xy, yy, yz),
        (-h1, h0, 0.0, xz, yz, zz),
    )
    for a in range(6):
        row = blk[a]
        for b in range(6):
            M[iv + a, iv + b] = row[b]
        M[iv + a, iv + a] += ws[i, L.W_ARM + a]


# rows ≥ 1 of the W_TMP scratch during crba_core: body i's motion subspace expressed in the frame of
# the root body of its subtree (column k at W_SR + 6 k, up to 6 columns), and body i's placement in
# that frame (rotation W_RR, origin W_RP)
W_SR = L.W_TMP
W_RR = L.W_TMP + 36
W_RP = L.W_TMP + 45
# the root-frame walk pays one transform and one root-frame S per body to save one transform per
# (body, ancestor) pair: it is chosen when bodies have more than DEEP such ancestors on average
# (ib[0, I0_ANCESTORS], counted when the model is compiled), in models of at least DEEP_BODIES bodies
DEEP = 6.0
DEEP_BODIES = 16


@inlined
def ancestor_entries(ib, ws, j, ivi, F, M):
    """``H_ij = S_jᵀ F`` for every DoF of the ancestor j (F in j's frame), both triangles of M."""
    ivj = ib[j, L.I_IV]
    for k in range(ib[j, L.I_NV]):
        h = ops.dot6(s_column(ib, ws, j, k), F)  # branch-free: s_dot's joint-type test costs more here
        M[ivi, ivj + k] = h
        M[ivj + k, ivi] = h


@inlined
def walk_local(ib, ws, i, ivi, F, M):
    """Row/column ivi of M above the diagonal for a 1-DoF body i: ``F ← ʲX_λᵀ F`` up the tree and
    ``H_ij = S_jᵀ F`` at every ancestor j (RBDA Table 6.2, inner loop), both triangles written."""
    j = i
    while ib[j, L.I_PARENT] > 0:
        F = ops.force_to_parent(ops.load9(ws, j, L.W_R), ops.load3(ws, j, L.W_P), F)
        j = ib[j, L.I_PARENT]
        ancestor_entries(ib, ws, j, ivi, F, M)


@inlined
def root_frame_pass(ib, ws, i, R, p):
    """Body i (not a root): its placement in its root body's frame, ʳX_i = ʳX_λ ᵡX_i, and its motion
    subspace there, ʳX_i S_i (stored at W_RR, W_RP and W_SR)."""
    par = ib[i, L.I_PARENT]
    if ib[par, L.I_PARENT] > 0:
        Rr = ops.load9(ws, par, W_RR)
        t = ops.rot_vec(Rr, p)
        pr = ops.load3(ws, par, W_RP)
        R, p = ops.rot_mul(Rr, R), (pr[0] + t[0], pr[1] + t[1], pr[2] + t[2])
    ops.store9(ws, i, W_RR, R)
    ops.store3(ws, i, W_RP, p)
    jt = ib[i, L.I_JTYPE]
    if jt == REVOLUTE or jt == REVOLUTE_UNBOUNDED:  # [R a; p × R a]
        w = ops.rot_vec(R, ops.load3(ws, i, L.W_AXIS))
        ops.store6(ws, i, W_SR, w + ops.cross3(p, w))
    elif jt == PRISMATIC:  # [0; R a]
        ops.store6(ws, i, W_SR, (0.0, 0.0, 0.0) + ops.rot_vec(R, ops.load3(ws, i, L.W_AXIS)))
    else:
        for k in range(ib[i, L.I_NV]):
            ops.store6(ws, i, W_SR + 6 * k, ops.motion_to_parent(R, p, s_column(ib, ws, i, k)))


@inlined
def walk_root(ib, ws, i, ivi, F, M):
    """Row/column ivi of M above the diagonal for a 1-DoF body i (RBDA Table 6.2, inner loop),
    both triangles written: ``H_ij = S_jᵀ ᶦX_jᵀ F`` at every ancestor j, evaluated in the root body's
    frame r as ``(ʳX_j S_j)ᵀ (ʳX_iᵀ F)`` — one force transform per body instead of one per ancestor
    (the frame-invariance of the power ``Sᵀ F``)."""
    j = ib[i, L.I_PARENT]
    if j == 0:
        return
    F = ops.force_to_parent(ops.load9(ws, i, W_RR), ops.load3(ws, i, W_RP), F)
    while ib[j, L.I_PARENT] > 0:
        ivj = ib[j, L.I_IV]
        for k in range(ib[j, L.I_NV]):
            h = ops.dot6(ops.load6(ws, j, W_SR + 6 * k), F)
            M[ivi, ivj + k] = h
            M[ivj + k, ivi] = h
        j = ib[j, L.I_PARENT]
    ancestor_entries(ib, ws, j, ivi, F, M)  # the root body: its own frame


@inlined
def multi_dof_columns(ib, ws, i, Ic, M):
    """Rows/columns of a multi-DoF body i (not a root free flyer): F = Ic S in row 0's scratch
    (column k at W_TMP + 6 k), ``H_ii = Sᵀ F`` (+ armature), then ``F ← ʲX_λᵀ F`` up the tree and
    ``H_ij = S_jᵀ F`` at every ancestor (RBDA Table 6.2)."""
    T = L.W_TMP
    nvi = ib[i, L.I_NV]
    ivi = ib[i, L.I_IV]
    for k in range(nvi):
        ops.store6(ws, 0, T + 6 * k, ops.inertia_mul(Ic, s_column(ib, ws, i, k)))
    for k in range(nvi):
        for l in range(nvi):
            M[ivi + k, ivi + l] = s_dot(ib, ws, i, k, ops.load6(ws, 0, T + 6 * l))
        M[ivi + k, ivi + k] += ws[i, L.W_ARM + k]  # armature
    j = i
    while ib[j, L.I_PARENT] > 0:
        R = ops.load9(ws, j, L.W_R)
        p = ops.load3(ws, j, L.W_P)
        for l in range(nvi):
            ops.store6(ws, 0, T + 6 * l, ops.force_to_parent(R, p, ops.load6(ws, 0, T + 6 * l)))
        j = ib[j, L.I_PARENT]
        ivj = ib[j, L.I_IV]
        for k in range(ib[j, L.I_NV]):
            for l in range(nvi):
                h = s_dot(ib, ws, j, k, ops.load6(ws, 0, T + 6 * l))
                M[ivi + l, ivj + k] = h
                M[ivj + k, ivi + l] = h


@inlined
def crba_sweeps(ib, ws, q, M, deep):
    """The two sweeps of RBDA Table 6.2 (see :func:`crba_core`); ``deep`` (a constant where this is
    inlined) chooses the root-frame walk."""
    nb = ib[0, L.I0_NBODIES]
    zero_fill(M)  # entries of bodies on different branches stay zero
    for i in range(1, nb + 1):
        R, p = jcalc(ib, ws, i, q)
        ops.store10(ws, i, L.W_IC, ops.load10(ws, i, L.W_INER))
        if deep and ib[i, L.I_PARENT] > 0:
            root_frame_pass(ib, ws, i, R, p)
    for i in range(nb, 0, -1):
        par = ib[i, L.I_PARENT]
        Ic = ops.load10(ws, i, L.W_IC)
        if par > 0:  # Ic_λ += ᶦX_λᵀ Ic_i ᶦX_λ (eq. 6.16)
            R = ops.load9(ws, i, L.W_R)
            p = ops.load3(ws, i, L.W_P)
            ops.store10(
                ws, par, L.W_IC, ops.add10(ops.load10(ws, par, L.W_IC), ops.inertia_to_parent(R, p, Ic))
            )
        ivi = ib[i, L.I_IV]
        if ib[i, L.I_NV] == 1:  # the common case, with F in registers
            F = ops.inertia_mul(Ic, s_column(ib, ws, i, 0))
            M[ivi, ivi] = s_dot(ib, ws, i, 0, F) + ws[i, L.W_ARM]
            if deep:
                walk_root(ib, ws, i, ivi, F, M)
            else:
                walk_local(ib, ws, i, ivi, F, M)
        elif par == 0 and ib[i, L.I_JTYPE] == FREEFLYER:  # a floating base: no ancestors, no products
            freeflyer_block(M, ivi, Ic, ws, i)
        else:
            multi_dof_columns(ib, ws, i, Ic, M)


@njit(cache=True, fastmath={"contract"})
def crba_local(ib, ws, q, M):
    """:func:`crba_core` with the ancestor walk in local frames."""
    # uncounted here too: the call boundary hides that the caller's arrays are borrowed
    ib, ws, q, M = borrowed((ib, ws, q, M))
    crba_sweeps(ib, ws, q, M, False)


@njit(cache=True, fastmath={"contract"})
def crba_root(ib, ws, q, M):
    """:func:`crba_core` with the ancestor walk in each subtree's root frame."""
    # uncounted here too: the call boundary hides that the caller's arrays are borrowed
    ib, ws, q, M = borrowed((ib, ws, q, M))
    crba_sweeps(ib, ws, q, M, True)


@sequence
def crba_core(ib, ws, q, M):
    """Fill the full symmetric mass matrix M (nv × nv) at configuration q (validated), armature
    included on the diagonal (RBDA Table 6.2; eq. 6.16 for the composite inertias).

    Compiled with fused multiply-adds allowed (``fastmath={"contract"}``: no reassociation, no
    change to NaN/inf handling; each a·b + c rounds once instead of twice): 10–25 % faster here.

    Composite inertias Ic live in ws[i, W_IC] and the placements in ws[i, W_R], ws[i, W_P] (left there
    for the callers that reuse them); for multi-DoF joints other than a root free flyer the 6 × nv
    block F = Ic S is kept in row 0's scratch (column k at W_TMP + 6 k); rows ≥ 1 of W_TMP hold the
    root-frame placements and motion subspaces of ``root_frame_pass``.
    Deep trees (≥ DEEP_BODIES bodies, more than DEEP non-root ancestors per body on average) walk the
    ancestors in the root frame (:func:`walk_root`), the others in local frames (:func:`walk_local`).
    """
    nb = ib[0, L.I0_NBODIES]
    if nb >= DEEP_BODIES and ib[0, L.I0_ANCESTORS] > DEEP * nb:
        crba_root(ib, ws, q, M)
    else:
        crba_local(ib, ws, q, M)


@njit(cache=True)
def dof_parents(ib, lam):
    """λ(k) for every velocity coordinate: the previous coordinate of the same joint, else the last
    coordinate of the parent body's joint, else −1."""
    nb = ib[0, L.I0_NBODIES]
    for i in range(1, nb + 1):
        iv = ib[i, L.I_IV]
        par = ib[i, L.I_PARENT]
        lam[iv] = ib[par, L.I_IV] + ib[par, L.I_NV] - 1 if par > 0 else -1
        for k in range(1, ib[i, L.I_NV]):
            lam[iv + k] = iv + k - 1


@njit(cache=True)
def ltl_in_place(M, lam):
    """Overwrite the lower triangle of M with L such that M = Lᵀ L, exploiting branch-induced
    sparsity (RBDA Table 6.3). Returns −1 on success, else the failing coordinate."""
    n = M.shape[0]
    for k in range(n - 1, -1, -1):
        if not M[k, k] > 0.0:
            return k
        a = np.sqrt(M[k, k])
        M[k, k] = a
        i = lam[k]
        while i != -1:
            M[k, i] /= a
            i = lam[i]
        i = lam[k]
        while i != -1:
            j = i
            while j != -1:
                M[i, j] -= M[k, i] * M[k, j]
                j = lam[j]
            i = lam[i]
    return -1


@njit(cache=True)
def ltl_singular_body(ib, ws, M):
    """After a successful :func:`ltl_in_place` of the tree's mass matrix: the first body, leaves
    first, whose 1-DoF pivot ``L_kk²`` is not positive relative to its diagonal entry M_kk
    (:func:`~.common.pivot_positive`: the pivots are the ABA's D), or 0. ``ltl_in_place`` only
    rejects pivots ≤ 0, which rounding at an exact singularity (a gimbal at its lock) can miss."""
    for i in range(ib[0, L.I0_NBODIES], 0, -1):
        if ib[i, L.I_NV] == 1:
            k = ib[i, L.I_IV]
            if not pivot_positive(ib, ws, i, M[k, k] * M[k, k]):
                return i
    return 0


@njit(cache=True)
def ltl_solve_transposed(L, lam, X):
    """``X ← L⁻ᵀ X`` in place (X: n × p), L in the lower triangle of ``L`` (from ``ltl_in_place``).
    Back substitution in scatter form: only the ancestors (λ chain) of each coordinate are touched."""
    n, p = X.shape
    for i in range(n - 1, -1, -1):
        d = L[i, i]
        for c in range(p):
            X[i, c] /= d
        j = lam[i]
        while j != -1:
            lij = L[i, j]
            for c in range(p):
                X[j, c] -= lij * X[i, c]
            j = lam[j]


@njit(cache=True)
def ltl_solve(L, lam, X):
    """``X ← L⁻¹ X`` in place (forward substitution over each coordinate's ancestors)."""
    n, p = X.shape
    for i in range(n):
        j = lam[i]
        while j != -1:
            lij = L[i, j]
            for c in range(p):
                X[i, c] -= lij * X[j, c]
            j = lam[j]
        d = L[i, i]
        for c in range(p):
            X[i, c] /= d


@njit(cache=True)
def minverse_from_ltl(M, lam, Minv):
    """Minv = L⁻¹ L⁻ᵀ from the LᵀL factor stored in the lower triangle of M."""
    n = M.shape[0]
    Linv = np.zeros((n, n))
    for k in range(n):
        Linv[k, k] = 1.0 / M[k, k]
        # row k of L⁻¹: only ancestors j of k are non-zero; L[k, m] is non-zero for ancestors m of k
        j = lam[k]
        while j != -1:
            acc = 0.0
            m = lam[k]
            while m != -1 and m >= j:
                acc += M[k, m] * Linv[m, j]
                m = lam[m]
            Linv[k, j] = -acc / M[k, k]
            j = lam[j]
    for a in range(n):
        for b in range(a, n):
            acc = 0.0
            for k in range(n):
                acc += Linv[a, k] * Linv[b, k]
            Minv[a, b] = acc
            Minv[b, a] = acc


@kernel("int64(int64[:, ::1], float64[:, ::1], float64[::1], float64[:, ::1])")
def crba_kernel(ib, ws, q, M):
    ib, ws, q, M = borrowed((ib, ws, q, M))
    st = check_configuration(ib, q)
    if st != 0:
        return st
    if not acquire(ib):
        return DATA_IN_USE * STATUS_BASE
    crba_core(ib, ws, q, M)
    release(ib)
    return 0


@kernel("int64(int64[:, ::1], float64[:, ::1], float64[::1], float64[:, ::1])")
def minverse_kernel(ib, ws, q, Minv):
    ib, ws, q, Minv = borrowed((ib, ws, q, Minv))
    st = check_configuration(ib, q)
    if st != 0:
        return st
    n = ib[0, L.I0_NV]
    M = np.empty((n, n))
    lam = np.empty(n, dtype=np.int64)
    if not acquire(ib):
        return DATA_IN_USE * STATUS_BASE
    crba_core(ib, ws, q, M)
    dof_parents(ib, lam)
    bad = ltl_in_place(M, lam)
    if bad >= 0:
        for i in range(1, ib[0, L.I0_NBODIES] + 1):
            if ib[i, L.I_IV] <= bad < ib[i, L.I_IV] + ib[i, L.I_NV]:
                bad = -i
    else:
        bad = -ltl_singular_body(ib, ws, M)  # the pivots the test above accepted, relative to M_ii
    release(ib)
    if bad < 0:
        return SINGULAR * STATUS_BASE - bad
    minverse_from_ltl(M, lam, Minv)
    return 0
