"""PV-OSIMr in world coordinates: the Delassus matrix ``Λ⁻¹ = J M⁻¹ Jᵀ`` of link constraints on a
kinematic tree (Sathya, Decré, Swevers 2023, Algorithm 3; spec ``delassus-pv-osimr-sathya2023``)
with every spatial quantity expressed in the world frame.

:mod:`loopdyn.algorithms.pv_osim` runs the algorithm in link coordinates (spec §3.7): each link pays
the congruence ``Xupᵀ Iᵃ Xup`` of its articulated inertia into its parent's coordinates (lines 9–10)
and one rotation per propagated column of ``^{π(i)}P_{D(i)} = Xupᵀ (…)`` (line 13, eq. 17). Here the
first forward sweep places every link in the world instead (``⁰X_i``, one 3 × 3 product) and
expresses its *rigid-body* inertia (10 numbers) and its motion subspace there; from then on no
transform remains:

* lines 9–10: ``Iᴬ_π(i) += Iᴬ_i − U_i D_i⁻¹ U_iᵀ`` is a plain sum (``U_i = Iᴬ_i S_i``, all world);
* line 13 (eq. 17): the force propagator is ``P_i = 1 − U_i D_i⁻¹ S_iᵀ`` — forces in world
  coordinates need no change of frame between a link and its parent;
* line 15 (eq. 16): ``^{π(i)}Ω_{D(i)} = Ob + Wᵀ D⁻¹ W`` with ``W = S_iᵀ Pb``, as in link coordinates;
* lines 3–4: the end-effector rows ``K_e`` (on the link's ``[ω; v]`` in its own axes) become world
  rows ``K_e ⁱX_0``, i.e. each row moved to the world like a force (``⁰X*_i``);
* a free-flyer joint without armature has an invertible ``S``: ``Ω_i = S D⁻¹ Sᵀ = (Iᴬ_i)⁻¹`` (one
  6 × 6 ``L D Lᵀ`` inverse, no ``U`` or ``D``), and ``P_i = 0``, ``Iᴬ_i − U D⁻¹ Uᵀ = 0`` — nothing of a
  free-floating subtree reaches its parent.

The Delassus path needs no velocity, so there is no bias force. The blocks ``ᶜK_e1 ⁰Ω_c ᶜK_e2ᵀ``
(eq. 13) do not depend on the frame the propagators are expressed in, so lines 16–28 are
:func:`loopdyn.algorithms.pv_osim.pvr_assemble` unchanged, on the same packed branching structure
and scratch layout.

"World" means the world's axes with the origin moved to link 1's origin (a root): the sums of
inertias about a far-away origin would lose about ``2 log10(|p| / size)`` digits; this way the result
does not depend on where the robot stands (a floating base 1 km away gives the same Λ⁻¹ to 1e-12).
The core is compiled with fused multiply-adds (``fastmath={"contract"}``), nothing else relaxed.

Workspace (``ws``) per link i: ``W_OR`` its rotation in the world; ``W_OO`` (= ``W_TMP + 36``, rows
≥ 1) its origin relative to link 1's; ``W_IA`` the world articulated inertia (6 × 6, row-major,
symmetric); ``W_SW`` (= ``W_TMP + 6 k``, rows ≥ 1) the k-th column of the world motion subspace
``S_i``; ``W_U``, ``W_DINV`` as in :func:`loopdyn.algorithms.aba.joint_dinv` (for a free-flyer without
armature ``W_DINV`` holds ``(Iᴬ_i)⁻¹``, 6 × 6, by :func:`sym6_inverse`). ``W_OR`` and ``W_OP`` are
left holding the world placements at q, as after a forward kinematics.
"""

from __future__ import annotations

from ..jit import inlined, shared
from ..model import layout as L
from ..model.joints import FREEFLYER, PRISMATIC, REVOLUTE, REVOLUTE_UNBOUNDED
from ..spatial import ops
from .borrow import acquire, borrowed, release
from .common import check_configuration, jcalc, kernel, pivot_positive, s_column
from .pv_osim import (
    EE_DIM,
    EE_LINK,
    EE_UROW,
    EE_W,
    F_HAS,
    F_IN_N,
    H_EE,
    H_LINK,
    H_NB,
    H_NE,
    LINK_W,
    LK_CHAIN,
    LK_FLAGS,
    LK_W,
    OD_OFF,
    PD_OFF,
    SLOT_W,
    pvr_assemble,
)
from .status import DATA_IN_USE, SINGULAR, STATUS_BASE

__all__ = ["pv_osimr_world_core", "pv_osimr_world_kernel", "world_link"]

W_SW = L.W_TMP  # rows ≥ 1: the world motion subspace S_i, column k at W_SW + 6 k
W_OO = L.W_TMP + 36  # rows ≥ 1: the link origin relative to the frame's origin (3)


# ---------------------------------------------------------------------------------------------
# lines 1–2: placements, world inertias and motion subspaces (forward sweep)
@inlined
def world_link(ib, ws, i, q, origin):
    """Link i: its placement ``⁰X_i`` (W_OR, W_OP; its origin relative to ``origin`` at W_OO) from its
    parent's, its rigid-body inertia in world coordinates as the initial articulated inertia (line 2)
    and its world motion subspace ``S_i = ⁰X_i ⁱS_i``. Returns the compact world inertia."""
    R, p = jcalc(ib, ws, i, q)
    par = ib[i, L.I_PARENT]
    if par == 0:
        oR = R
        op = (p[0] - origin[0], p[1] - origin[1], p[2] - origin[2])
    else:
        pR = ops.load9(ws, par, L.W_OR)
        oR = ops.rot_mul(pR, R)
        t = ops.rot_vec(pR, p)
        op = (ws[par, W_OO] + t[0], ws[par, W_OO + 1] + t[1], ws[par, W_OO + 2] + t[2])
    ops.store9(ws, i, L.W_OR, oR)
    ops.store3(ws, i, W_OO, op)
    ops.store3(ws, i, L.W_OP, (op[0] + origin[0], op[1] + origin[1], op[2] + origin[2]))
    Iw = ops.inertia_to_parent(oR, op, ops.load10(ws, i, L.W_INER))
    ops.store_inertia_matrix(ws, i, L.W_IA, Iw)
    jt = ib[i, L.I_JTYPE]
    ax = ops.load3(ws, i, L.W_AXIS)
    if jt == REVOLUTE or jt == REVOLUTE_UNBOUNDED:  # ω = ⁰R a through the link origin: v = o × ω
        w = ops.rot_vec(oR, ax)
        v = ops.cross3(op, w)
        ops.store6(ws, i, W_SW, (w[0], w[1], w[2], v[0], v[1], v[2]))
    elif jt == PRISMATIC:
        v = ops.rot_vec(oR, ax)
        ops.store6(ws, i, W_SW, (0.0, 0.0, 0.0, v[0], v[1], v[2]))
    else:
        for k in range(ib[i, L.I_NV]):
            ops.store6(ws, i, W_SW + 6 * k, ops.motion_to_parent(oR, op, s_column(ib, ws, i, k)))
    return Iw


@inlined
def seed_world_rows(ws, K, bk, sc, added):
    """Lines 3–4 in world coordinates: ``^{π(e)}P_e ← (K_e ᵇX_0)ᵀ`` — each row of ``K_e`` (acting on
    link b's ``[ω; v]`` in b's axes) carried to the world as a force — and ``^{π(e)}Ω_e ← 0``. With
    ``added > 0`` each constrained link also gets the penalty inertia ``added · K_eᵀ K_e`` (world
    rows: the penalised system of the damped Delassus matrix)."""
    nb = bk[H_NB]
    off_ee = bk[H_EE]
    for k in range(bk[H_NE]):
        o = off_ee + EE_W * k
        s = SLOT_W * (nb + 1 + k)
        b = bk[o + EE_LINK]
        w = bk[o + EE_DIM]
        ur = bk[o + EE_UROW]
        oR = ops.load9(ws, b, L.W_OR)
        op = ops.load3(ws, b, W_OO)
        for c in range(w):
            kw = ops.force_to_parent(oR, op, ops.load6(K, ur + c, 0))
            ops.store6_at(sc, s + PD_OFF + 6 * c, kw)
            if added > 0.0:
                for a in range(6):
                    x = added * kw[a]
                    for cc in range(6):
                        ws[b, L.W_IA + 6 * a + cc] += x * kw[cc]
        for a in range(w * w):
            sc[s + OD_OFF + a] = 0.0


# ---------------------------------------------------------------------------------------------
# lines 8–11: the joint factors and the articulated inertia sent to the parent (backward sweep)
@inlined
def is_free(ib, ws, i):
    """A free-flyer joint without armature: ``S`` invertible, ``Ω_i = (Iᴬ_i)⁻¹``."""
    if ib[i, L.I_JTYPE] != FREEFLYER:
        return False
    for k in range(6):
        if ws[i, L.W_ARM + k] != 0.0:
            return False
    return True


@inlined
def sym6_inverse(ws, i, src, dst):
    """``ws[i, dst:dst+36] = A⁻¹`` for the symmetric positive-definite 6 × 6 ``A`` at ``ws[i, src]`` (both
    row-major), by ``A = L D Lᵀ`` (unit lower L, no square root) and ``A⁻¹ = L⁻ᵀ D⁻¹ L⁻¹``; the factors
    live in row 0's W_TMP scratch. False (output untouched) if A is not positive definite."""
    T = L.W_TMP
    Lf = T  # L (strictly lower part, row-major 6 × 6)
    Dd = T + 36  # D (6)
    Di = T + 42  # D⁻¹ (6)
    Li = T + 48  # L⁻¹ (strictly lower part, row-major 6 × 6)
    for j in range(6):
        d = ws[i, src + 7 * j]
        for k in range(j):
            lk = ws[0, Lf + 6 * j + k]
            d -= lk * lk * ws[0, Dd + k]
        if not d > 0.0:
            return False
        dinv = 1.0 / d
        ws[0, Dd + j] = d
        ws[0, Di + j] = dinv
        for r in range(j + 1, 6):  # L[r, j] = (A[r, j] − Σ_k L[r, k] d_k L[j, k]) / d_j
            acc = ws[i, src + 6 * r + j]
            for k in range(j):
                acc -= ws[0, Lf + 6 * r + k] * ws[0, Dd + k] * ws[0, Lf + 6 * j + k]
            ws[0, Lf + 6 * r + j] = acc * dinv
    for r in range(6):  # L⁻¹ (unit lower): X[r, c] = −L[r, c] − Σ_{c<k<r} L[r, k] X[k, c]
        for c in range(r):
            acc = -ws[0, Lf + 6 * r + c]
            for k in range(c + 1, r):
                acc -= ws[0, Lf + 6 * r + k] * ws[0, Li + 6 * k + c]
            ws[0, Li + 6 * r + c] = acc
    for r in range(6):  # (L⁻ᵀ D⁻¹ L⁻¹)[r, c] = Σ_{k ≥ max(r, c)} X[k, r] d_k⁻¹ X[k, c], X[k, k] = 1
        for c in range(r, 6):
            acc = ws[0, Di + c] * (ws[0, Li + 6 * c + r] if c > r else 1.0)
            for k in range(c + 1, 6):
                acc += ws[0, Li + 6 * k + r] * ws[0, Di + k] * ws[0, Li + 6 * k + c]
            ws[i, dst + 6 * r + c] = acc
            ws[i, dst + 6 * c + r] = acc
    return True


@inlined
def world_factor(ib, ws, i):
    """Line 8: ``U_i = Iᴬ_i S_i`` and ``D_i⁻¹ = (S_iᵀ U_i + diag(armature))⁻¹`` in world coordinates
    (row 0's W_TMP columns are scratch). False if D is not positive definite."""
    nv = ib[i, L.I_NV]
    if nv == 1:
        s = ops.load6(ws, i, W_SW)
        U = ops.mat6_mul(ws, i, L.W_IA, s)
        ops.store6(ws, i, L.W_U, U)
        dd = ops.dot6(s, U) + ws[i, L.W_ARM]
        if not pivot_positive(ib, ws, i, dd):  # relative to M_ii (W_R, W_P: world_link's jcalc)
            return False
        ws[i, L.W_DINV] = 1.0 / dd
        return True
    for k in range(nv):
        ops.store6(ws, i, L.W_U + 6 * k, ops.mat6_mul(ws, i, L.W_IA, ops.load6(ws, i, W_SW + 6 * k)))
    T = L.W_TMP
    for k in range(nv):
        sk = ops.load6(ws, i, W_SW + 6 * k)
        for l in range(nv):
            ws[0, T + nv * k + l] = ops.dot6(sk, ops.load6(ws, i, L.W_U + 6 * l))
        ws[0, T + nv * k + k] += ws[i, L.W_ARM + k]
    return ops.spd_inverse(ws[0], T, nv, ws[i], L.W_DINV, ws[0], T + 36)


@inlined
def world_inertia_to_parent(ib, ws, i, par):
    """Lines 9–10: ``Iᴬ_π(i) += Iᴬ_i − U_i D_i⁻¹ U_iᵀ`` — no change of coordinates (upper triangle
    computed, both halves written)."""
    nv = ib[i, L.I_NV]
    if nv == 1:
        U = ops.load6(ws, i, L.W_U)
        dinv = ws[i, L.W_DINV]
        for r in range(6):
            x = U[r] * dinv
            for c in range(r, 6):
                v = ws[i, L.W_IA + 6 * r + c] - x * U[c]
                ws[par, L.W_IA + 6 * r + c] += v
                if c != r:
                    ws[par, L.W_IA + 6 * c + r] += v
        return
    for r in range(6):
        for c in range(r, 6):
            v = ws[i, L.W_IA + 6 * r + c]
            for k in range(nv):
                x = 0.0
                for l in range(nv):
                    x += ws[i, L.W_DINV + nv * k + l] * ws[i, L.W_U + 6 * l + c]
                v -= ws[i, L.W_U + 6 * k + r] * x
            ws[par, L.W_IA + 6 * r + c] += v
            if c != r:
                ws[par, L.W_IA + 6 * c + r] += v


# ---------------------------------------------------------------------------------------------
# lines 12–15: the propagators (world coordinates)
@inlined
def pvw_propagate_1dof(ws, sc, i, par, w, si, sb):
    """Lines 13–15 for a 1-dof link inside a chain: ``W = Sᵀ Pb``, ``^{π(i)}Ω_{D(i)} = Ob + Wᵀ D⁻¹ W``
    (eq. 16) and ``^{π(i)}P_{D(i)} = Pb − U D⁻¹ W`` (eq. 17, no change of frame)."""
    s = ops.load6(ws, i, W_SW)
    dinv = ws[i, L.W_DINV]
    for c in range(w):  # W = Sᵀ Pb, in slot 0
        sc[c] = ops.dot6(s, ops.load6_at(sc, sb + PD_OFF + 6 * c))
    for a in range(w):  # eq. 16
        ya = sc[a] * dinv
        for c in range(a, w):
            v = sc[sb + OD_OFF + w * a + c] + ya * sc[c]
            sc[si + OD_OFF + w * a + c] = v
            sc[si + OD_OFF + w * c + a] = v
    if par > 0:  # eq. 17
        U = ops.load6(ws, i, L.W_U)
        for c in range(w):
            g = ops.sub6(ops.load6_at(sc, sb + PD_OFF + 6 * c), ops.scale6(U, dinv * sc[c]))
            ops.store6_at(sc, si + PD_OFF + 6 * c, g)


@inlined
def pvw_propagate_general(ws, sc, i, nv, par, w, si, sb, in_n):
    """Lines 13–15 for any joint: ``(Pb, Ob)`` are ``(1₆, 0)`` when i ∈ N (lines 6–7), else the chain
    child's; ``W = Sᵀ Pb``, ``Y = D⁻¹ W``, ``^{π(i)}Ω_{D(i)} = Ob + Wᵀ Y`` (eq. 16),
    ``^{π(i)}P_{D(i)} = Pb − U Y`` (eq. 17)."""
    Wb = 0  # slot 0 scratch: W (nv × w, row stride 6) at 0, Y = D⁻¹ W at 36
    Yb = 36
    for k in range(nv):
        sk = ops.load6(ws, i, W_SW + 6 * k)
        for c in range(w):
            sc[Wb + 6 * k + c] = sk[c] if in_n else ops.dot6(sk, ops.load6_at(sc, sb + PD_OFF + 6 * c))
    for k in range(nv):
        for c in range(w):
            acc = 0.0
            for l in range(nv):
                acc += ws[i, L.W_DINV + nv * k + l] * sc[Wb + 6 * l + c]
            sc[Yb + 6 * k + c] = acc
    for a in range(w):
        for c in range(a, w):
            acc = 0.0 if in_n else sc[sb + OD_OFF + w * a + c]
            for k in range(nv):
                acc += sc[Wb + 6 * k + a] * sc[Yb + 6 * k + c]
            sc[si + OD_OFF + w * a + c] = acc
            sc[si + OD_OFF + w * c + a] = acc
    if par > 0:
        for c in range(w):
            g = ops.unit6(c) if in_n else ops.load6_at(sc, sb + PD_OFF + 6 * c)
            for k in range(nv):
                g = ops.sub6(g, ops.scale6(ops.load6(ws, i, L.W_U + 6 * k), sc[Yb + 6 * k + c]))
            ops.store6_at(sc, si + PD_OFF + 6 * c, g)


@inlined
def pvw_propagate_free(ws, sc, i, par, w, si, sb, in_n):
    """Lines 13–15 for a free-flyer without armature: ``Ω_i = (Iᴬ_i)⁻¹`` (in W_DINV), so
    ``^{π(i)}Ω_{D(i)} = Ob + Pbᵀ Ω_i Pb`` (eq. 16) and ``^{π(i)}P_{D(i)} = 0`` (eq. 17: P_i = 0)."""
    Tb = 0  # slot 0 scratch: T = Ω_i Pb (6 × w, column c at 6 c)
    if in_n:
        for k in range(36):
            sc[si + OD_OFF + k] = ws[i, L.W_DINV + k]
    else:
        for c in range(w):
            pc = ops.load6_at(sc, sb + PD_OFF + 6 * c)
            for r in range(6):
                sc[Tb + 6 * c + r] = ops.row6_dot(ws, i, L.W_DINV + 6 * r, pc)
        for a in range(w):
            pa = ops.load6_at(sc, sb + PD_OFF + 6 * a)
            for c in range(a, w):
                v = sc[sb + OD_OFF + w * a + c] + ops.dot6(pa, ops.load6_at(sc, Tb + 6 * c))
                sc[si + OD_OFF + w * a + c] = v
                sc[si + OD_OFF + w * c + a] = v
    if par > 0:
        for k in range(6 * w):
            sc[si + PD_OFF + k] = 0.0


@inlined
def pvw_link_step(ib, ws, bk, sc, i, par, free):
    """Lines 12–15 for link i once its world factors ``S_i``, ``U_i``, ``D_i⁻¹`` are in ``ws``: nothing
    unless ES(i) ≠ ∅."""
    o = bk[H_LINK] + LINK_W * i
    flags = bk[o + LK_FLAGS]
    if flags & F_HAS:
        w = bk[o + LK_W]
        in_n = flags & F_IN_N != 0
        sb = 0 if in_n else SLOT_W * bk[o + LK_CHAIN]
        nv = ib[i, L.I_NV]
        if free:
            pvw_propagate_free(ws, sc, i, par, w, SLOT_W * i, sb, in_n)
        elif nv == 1 and not in_n:
            pvw_propagate_1dof(ws, sc, i, par, w, SLOT_W * i, sb)
        else:
            pvw_propagate_general(ws, sc, i, nv, par, w, SLOT_W * i, sb, in_n)


# ---------------------------------------------------------------------------------------------
# the algorithm
@shared(fastmath={"contract"})
def pv_osimr_world_core(ib, ws, q, K, bk, sc, added, out):
    """PV-OSIMr in world coordinates on validated inputs; writes Λ⁻¹ (user order) into ``out``.
    Returns 0 or SINGULAR (a joint whose ``D`` is not positive definite).

    ``bk``/``sc`` are the packed structure and scratch of :mod:`loopdyn.algorithms.pv_osim`; every
    propagator ``PD[s]`` and inverse inertia ``OD[s]``, ``⁰Ω_s`` is in world coordinates."""
    # uncounted here too: the call boundary hides that the caller's arrays are borrowed
    ib, ws, q, K, bk, sc, added, out = borrowed((ib, ws, q, K, bk, sc, added, out))
    nb = ib[0, L.I0_NBODIES]
    origin = jcalc(ib, ws, 1, q)[1]  # the frame's origin: link 1's (a root), for conditioning
    for i in range(1, nb + 1):  # lines 1–2
        world_link(ib, ws, i, q, origin)
    seed_world_rows(ws, K, bk, sc, added)  # lines 3–4
    for i in range(nb, 0, -1):  # line 5
        par = ib[i, L.I_PARENT]
        free = is_free(ib, ws, i)
        if free:  # line 8: Ω_i = (Iᴬ_i)⁻¹; nothing reaches the parent (lines 9–11)
            if not sym6_inverse(ws, i, L.W_IA, L.W_DINV):
                return SINGULAR * STATUS_BASE + i
            pvw_link_step(ib, ws, bk, sc, i, par, True)
            continue
        if not world_factor(ib, ws, i):  # line 8
            return SINGULAR * STATUS_BASE + i
        pvw_link_step(ib, ws, bk, sc, i, par, False)  # lines 12–15
        if par > 0:  # lines 9–11
            world_inertia_to_parent(ib, ws, i, par)
    pvr_assemble(bk, sc, out)  # lines 16–28
    return 0


@kernel("int64(int64[:, ::1], float64[:, ::1], float64[::1], int64[::1], float64[::1], float64[:, ::1])")
def pv_osimr_world_kernel(ib, ws, q, bk, sc, out):
    """``sc`` is the ``"world"`` scratch of :class:`~loopdyn.algorithms.pv_osim.PackedStructure`: the
    PV-OSIMr scratch, then the rows ``K`` (m × 6) and the added inertia (fewer arguments: a shorter
    dispatch)."""
    ib, ws, q, bk, sc, out = borrowed((ib, ws, q, bk, sc, out))
    st = check_configuration(ib, q)
    if st != 0:
        return st
    m = out.shape[0]
    n = sc.shape[0]
    K = sc[n - 1 - 6 * m : n - 1].reshape((m, 6))
    if not acquire(ib):
        return DATA_IN_USE * STATUS_BASE
    st = pv_osimr_world_core(ib, ws, q, K, bk, sc, sc[n - 1], out)
    release(ib)
    return st
