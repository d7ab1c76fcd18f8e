"""The Delassus algorithms of models with loops in world coordinates — cluster PV-OSIMr and C-EFPA —
and their kernels, which choose between them and the body-coordinate versions.

The cluster PV-OSIMr of :mod:`.cluster_pv_osimr` (Sathya et al. 2023, Algorithm 3, over the tree
of clusters of Chignoli et al. 2024) works in body coordinates: each cluster pays the congruence of its
articulated inertia into its output body's frame and one force transform per propagated column. When
every cluster hands its parent one port — a tree joint, a star (a link and its geared rotors) or a
one-port cluster (every body hangs, directly or through bodies of the cluster, from one output body Λ
outside it: the belts, the ankles, the differentials, the planar loops of the built-in robots) —
the algorithm runs in world coordinates as the tree's does (:mod:`.pv_osim_world`), with no
transform left after the first forward sweep:

* lines 1–2: every body's placement, world rigid-body inertia (the initial ``Iᴬ_b``) and world
  joint axis ``s_b`` (:func:`~.pv_osim_world.world_link`, on the spanning coordinates). A body's
  velocity is ``v_Λ + 𝖲_b ẏ`` with the world motion subspace
  ``𝖲_b = 𝖲_cp + s_b G_b`` (cp: the in-cluster parent; none for a body hinged on Λ), so
* line 8: ``U = Σ_b Iᴬ_b 𝖲_b`` (6 × m) and ``D = Σ_b 𝖲_bᵀ Iᴬ_b 𝖲_b + Gᵀ diag(armature) G``;
* lines 9–10: ``Iᴬ_Λ += Σ_b Iᴬ_b − U D⁻¹ Uᵀ``, a plain sum;
* lines 12–15 (eqs. 16–17): a force ``χ`` on body e of the cluster (its chain child's port, or a
  port of a branching cluster) gives ``Y = 𝖲_eᵀ χ``, adds ``Yᵀ D⁻¹ Y`` to Ω and reaches Λ as
  ``χ − U D⁻¹ Y``;
* lines 3–4: the end-effector rows ``K_e`` become world rows ``K_e ᵇX_0`` (forces moved to the world).

Clusters with one or two independent coordinates (stars, revolute joints, one-DoF loops; belts,
differentials, two-DoF ankles) take these steps in registers, with D⁻¹ in closed form; a free-flyer
without armature has an invertible S, so ``Ω = Pᵀ (Iᴬ)⁻¹ P`` and nothing reaches its parent (as in the
tree's version); any other cluster takes the general m-column step (m × m Cholesky). Written like
that, the whole call costs 1.05–1.3× the tree's world PV-OSIMr on the same bodies (it was 1.4–1.8×
in body coordinates; ``benchmarks/cluster_speed.py``).

C-EFPA (Chignoli et al. 2024 §VIII, eqs. 57–67) takes the same steps without the propagators: each
constraint row's force starts on its body as ``K_e`` carried to the world (eq. 62) and goes up with the
articulated inertias; at every cluster it passes, ``y = 𝖲_eᵀ χ`` and each pair of rows present adds
``y₁ᵀ D⁻¹ y₂`` to Λ⁻¹, then the force moves on to Λ as ``χ − U D⁻¹ y`` (:func:`c_efpa_world_core`).
These pairwise sums cost O(m² d) for m rows d clusters deep, where the body-coordinate version's pass
down the paths (eqs. 63–67) costs O(m d + m²): the kernel takes the world version up to
``EFPA_WORLD_ROWS`` = 12 rows (two 6-D or four 3-D contacts), the other beyond.

For PV-OSIMr, the branching structure, the buffer layout and lines 16–28 (forward sweep over the
branching nodes, CEMPs, assembly) are those of :mod:`.cluster_pv_osimr`: they do not depend on the
coordinates the propagators are expressed in. "World" is the world's axes with the origin at link
1's origin, as in the tree's version. A model with any other cluster (several output bodies) runs the
body-coordinate versions.
"""

from __future__ import annotations

import numpy as np

from ..jit import inlined, shared
from ..model import layout as L
from ..spatial import ops
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
from .cluster_delassus import c_efpa_core
from .cluster_kinematics import spanning_positions_all, tapes, validate_cluster_configuration
from .cluster_pv_osimr import (
    N_CHAIN,
    N_DIM,
    N_ENTRY,
    N_FULL,
    N_HASES,
    N_INN,
    N_OD,
    N_PARENT,
    N_PD,
    N_PORT,
    c_pv_osimr_core,
    cpv_assemble,
    cpv_branch_inverse_inertias,
    cpv_cemps,
    cpv_omega,
    unpack_tables,
)
from .common import cluster_pivot_positive, jcalc, kernel
from .pv_osim_world import W_OO, W_SW, is_free, sym6_inverse, world_link
from .status import DATA_IN_USE, SINGULAR, STATUS_BASE

#: C-EFPA runs in world coordinates up to this many constraint rows (two 6-D or four 3-D contacts): its
#: pairwise sums cost O(m² d), against O(m d + m²) for the body-coordinate version's pass down the paths
EFPA_WORLD_ROWS = 12

__all__ = [
    "c_efpa_kernel",
    "c_efpa_world_core",
    "c_pv_osimr_kernel",
    "c_pv_osimr_world_core",
    "one_port_tree",
]


@inlined
def one_port_tree(ic):
    """Whether every cluster hands its parent one port (a tree joint, ``C_STAR`` or ``C_ONEPORT``): the
    condition of the world-coordinate version."""
    for k in range(1, ic[0, L.C0_NCL] + 1):
        if ic[k, L.C_KIND] != L.SINGLE_BODY and ic[k, L.C_STAR] == 0 and ic[k, L.C_ONEPORT] == 0:
            return False
    return True


@inlined
def cpw_world_kinematics(ib, ws, ic, cb, wc, code, consts, table, outputs, q):
    """Lines 1–2: the spanning positions (and G of the implicit clusters), then every body's world
    placement, world rigid-body inertia (W_IA) and world joint axes (W_SW). Returns a status."""
    st = spanning_positions_all(ib, ic, cb, wc, code, consts, table, outputs, q)
    if st != 0:
        return st
    qs = wc[ic[0, L.C0_QS] : ic[0, L.C0_QS] + ic[0, L.C0_NQS]]
    origin = jcalc(ib, ws, 1, qs)[1]  # the frame's origin: link 1's, for conditioning
    for i in range(1, ib[0, L.I0_NBODIES] + 1):
        world_link(ib, ws, i, qs, origin)
    return 0


@inlined
def cpw_seed_end_effectors(ib, ws, cbody, crow, K, T, buf, ncl):
    """Lines 3–4: for every EE, ``ᵏP_e = (K_e ᵇX_0)ᵀ`` — each row carried to the world as a force — on
    its body's block of the parent cluster, ``ᵏΩ_e = 0``."""
    for e in range(cbody.shape[0]):
        x = ncl + 1 + e
        pd = T[x, N_PD]
        if pd < 0:
            continue
        me = crow[e + 1] - crow[e]
        for a in range(T[T[x, N_PARENT], N_FULL] * me):
            buf[pd + a] = 0.0
        b = cbody[e]
        sb = 6 * ib[b, L.I_SUB]
        oR, op = ops.load9(ws, b, L.W_OR), ops.load3(ws, b, W_OO)
        for r in range(me):
            kw = ops.force_to_parent(oR, op, ops.load6(K, crow[e] + r, 0))
            for c in range(6):
                buf[pd + (sb + c) * me + r] = kw[c]
        for a in range(me * me):
            buf[T[x, N_OD] + a] = 0.0


@inlined
def cpw_factor(ib, ws, ic, cb, wc, k, Sw, Uw, Dw, Dinv, scr):
    """Line 8 for cluster k in world coordinates: its bodies' ``𝖲_b`` (``Sw``, rows ``6 j + r``, m
    columns), ``U = Σ_b Iᴬ_b 𝖲_b`` (``Uw``, 6 × m), ``D`` (``Dw``) and ``D⁻¹`` (``Dinv``), all
    row-major. Returns m, or −1 if D is not positive definite."""
    first = ic[k, L.C_FIRST]
    if ic[k, L.C_KIND] == L.SINGLE_BODY:  # 𝖲 = the joint's world S (G = 1)
        i = cb[first]
        m = ib[i, L.I_NV]
        for r in range(6):
            for l in range(m):
                Sw[r * m + l] = ws[i, W_SW + 6 * l + r]
        nb = 1
    else:
        m, nb, G = ic[k, L.C_M], ic[k, L.C_NB], ic[k, L.C_G]
        for j in range(nb):  # 𝖲_j = 𝖲_cp + s_j G_j (in-cluster parents come first)
            i = cb[first + j]
            s = ops.load6(ws, i, W_SW)
            cp = ib[i, L.I_CPAR]
            jp = ib[cp, L.I_SUB] if cp > 0 else -1
            for r in range(6):
                for l in range(m):
                    x = s[r] * wc[G + j * m + l]
                    if jp >= 0:
                        x += Sw[(6 * jp + r) * m + l]
                    Sw[(6 * j + r) * m + l] = x
    for a in range(6 * m):
        Uw[a] = 0.0
    for a in range(m * m):
        Dw[a] = 0.0
    for j in range(nb):
        i = cb[first + j]
        for l in range(m):
            col = ops.mat6_mul(ws, i, L.W_IA, ops.col6w(Sw, 6 * j * m + l, m))  # Iᴬ_b 𝖲_b[:, l]
            for r in range(6):
                Uw[r * m + l] += col[r]
            for l2 in range(l, m):
                Dw[l2 * m + l] += ops.dot6(ops.col6w(Sw, 6 * j * m + l2, m), col)
    A = ic[k, L.C_ARM]  # + Gᵀ diag(armature) G
    if ic[k, L.C_KIND] == L.SINGLE_BODY:
        for l in range(m):
            Dw[l * m + l] += wc[A + l]
    else:
        G = ic[k, L.C_G]
        for j in range(ic[k, L.C_N]):
            arm = wc[A + j]
            if arm != 0.0:
                for l in range(m):
                    for l2 in range(l, m):
                        Dw[l2 * m + l] += arm * wc[G + j * m + l] * wc[G + j * m + l2]
    for l in range(m):
        for l2 in range(l + 1, m):
            Dw[l * m + l2] = Dw[l2 * m + l]
    if m == 1:
        if not cluster_pivot_positive(ib, ws, ic, cb, k, Dw[0]):
            return -1
        Dinv[0] = 1.0 / Dw[0]
        return 1
    if not ops.spd_inverse(Dw, 0, m, Dinv, 0, scr, 0):
        return -1
    return m


@inlined
def factor_scratch(fbuf, o, nS, nU, nD):
    """Views of ``fbuf`` from ``o`` for one cluster's factors: ``Sw`` (its bodies' world 𝖲_b, rows
    ``6 j + r``; nS), ``Uw`` (U = Σ Iᴬ_b 𝖲_b, 6 × m; nU), ``X`` (U D⁻¹; nU), ``Dw`` and ``Dinv`` (nD
    each) and 72 for the Cholesky factors of D: ``nS + 2 nU + 2 nD + 72`` floats."""
    Sw = view(fbuf, o, (nS,))
    Uw = view(fbuf, o + nS, (nU,))
    X = view(fbuf, o + nS + nU, (nU,))
    Dw = view(fbuf, o + nS + 2 * nU, (nD,))
    Dinv = view(fbuf, o + nS + 2 * nU + nD, (nD,))
    scr = view(fbuf, o + nS + 2 * nU + 2 * nD, (72,))
    return Sw, Uw, X, Dw, Dinv, scr


@inlined
def cpw_parent_block(ib, ic, cb, T, k, buf):
    """Clear ``^{λ}P_{D(k)}`` (the parent cluster's bodies get nothing but Λ, whose block the caller
    writes) and return the first row of Λ's block (0 if k's parent is the world)."""
    pd = T[k, N_PD]
    if pd < 0:
        return 0
    for a in range(T[T[k, N_PARENT], N_FULL] * T[k, N_DIM]):
        buf[pd + a] = 0.0
    return 6 * ib[ib[cb[ic[k, L.C_FIRST]], L.I_OUT], L.I_SUB]


@inlined
def cpw_factor1(ib, ws, ic, cb, wc, k, Sw):
    """:func:`cpw_factor` for one independent coordinate, in registers: ``(U, D)`` with U a 6-tuple
    (``Sw`` gets the bodies' 𝖲_b as 6-vectors)."""
    first = ic[k, L.C_FIRST]
    if ic[k, L.C_KIND] == L.SINGLE_BODY:
        i = cb[first]
        s = ops.load6(ws, i, W_SW)
        ops.store6_at(Sw, 0, s)
        U = ops.mat6_mul(ws, i, L.W_IA, s)
        return U, ops.dot6(s, U) + wc[ic[k, L.C_ARM]]
    G, A = ic[k, L.C_G], ic[k, L.C_ARM]
    star = ic[k, L.C_STAR] != 0  # every body hinged on Λ: 𝖲_b = s_b G_b
    U = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    d = 0.0
    for j in range(ic[k, L.C_NB]):
        i = cb[first + j]
        g = wc[G + j]
        s = ops.scale6(ops.load6(ws, i, W_SW), g)
        if not star:
            cp = ib[i, L.I_CPAR]
            if cp > 0:  # 𝖲_b = 𝖲_cp + s_b G_b
                s = ops.add6(s, ops.load6_at(Sw, 6 * ib[cp, L.I_SUB]))
        ops.store6_at(Sw, 6 * j, s)
        u = ops.mat6_mul(ws, i, L.W_IA, s)
        U = ops.add6(U, u)
        d += ops.dot6(s, u) + wc[A + j] * g * g
    return U, d


@inlined
def add_body_inertias(ws, ic, cb, k, lam):
    """``Iᴬ_Λ += Σ_b Iᴬ_b`` over the bodies of cluster k (whole 6 × 6 rows: contiguous loops the
    compiler vectorises)."""
    first = ic[k, L.C_FIRST]
    for j in range(ic[k, L.C_NB]):
        i = cb[first + j]
        for a in range(36):
            ws[lam, L.W_IA + a] += ws[i, L.W_IA + a]


@inlined
def cpw_inertia_to_output1(ib, ws, ic, cb, k, U, dinv):
    """:func:`cpw_inertia_to_output` for one independent coordinate: ``Iᴬ_Λ += Σ_b Iᴬ_b − U Uᵀ / D``."""
    lam = ib[cb[ic[k, L.C_FIRST]], L.I_OUT]
    if lam == 0:
        return
    add_body_inertias(ws, ic, cb, k, lam)
    for r in range(6):
        x = U[r] * dinv
        o = L.W_IA + 6 * r
        ws[lam, o] -= x * U[0]
        ws[lam, o + 1] -= x * U[1]
        ws[lam, o + 2] -= x * U[2]
        ws[lam, o + 3] -= x * U[3]
        ws[lam, o + 4] -= x * U[4]
        ws[lam, o + 5] -= x * U[5]


@inlined
def cpw_factor2(ib, ws, ic, cb, wc, k, Sw):
    """:func:`cpw_factor` for a cluster (no tree joint has two DoF) with two independent coordinates
    (belts, differentials, two-DoF ankles), in registers: ``(U0, U1, D00, D01, D11)`` with U's
    columns as 6-tuples (``Sw`` gets the bodies' 𝖲_b, rows ``6 j + r``, two columns)."""
    first, G, A = ic[k, L.C_FIRST], ic[k, L.C_G], ic[k, L.C_ARM]
    z6 = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    U0, U1 = z6, z6
    d00 = d01 = d11 = 0.0
    for j in range(ic[k, L.C_NB]):
        i = cb[first + j]
        g0, g1 = wc[G + 2 * j], wc[G + 2 * j + 1]
        s = ops.load6(ws, i, W_SW)
        s0, s1 = ops.scale6(s, g0), ops.scale6(s, g1)
        cp = ib[i, L.I_CPAR]
        if cp > 0:  # 𝖲_b = 𝖲_cp + s_b G_b
            o = 12 * ib[cp, L.I_SUB]
            s0 = ops.add6(s0, ops.col6w(Sw, o, 2))
            s1 = ops.add6(s1, ops.col6w(Sw, o + 1, 2))
        for r in range(6):
            Sw[12 * j + 2 * r], Sw[12 * j + 2 * r + 1] = s0[r], s1[r]
        u0, u1 = ops.mat6_mul(ws, i, L.W_IA, s0), ops.mat6_mul(ws, i, L.W_IA, s1)
        U0, U1 = ops.add6(U0, u0), ops.add6(U1, u1)
        arm = wc[A + j]
        d00 += ops.dot6(s0, u0) + arm * g0 * g0
        d01 += ops.dot6(s0, u1) + arm * g0 * g1
        d11 += ops.dot6(s1, u1) + arm * g1 * g1
    return U0, U1, d00, d01, d11


@inlined
def cpw_inertia_to_output2(ib, ws, ic, cb, k, U0, U1, i00, i01, i11):
    """:func:`cpw_inertia_to_output` for two coordinates: ``Iᴬ_Λ += Σ_b Iᴬ_b − U D⁻¹ Uᵀ`` with
    ``D⁻¹ = [[i00, i01], [i01, i11]]``."""
    lam = ib[cb[ic[k, L.C_FIRST]], L.I_OUT]
    if lam == 0:
        return
    add_body_inertias(ws, ic, cb, k, lam)
    for r in range(6):
        x0 = U0[r] * i00 + U1[r] * i01  # (U D⁻¹)[r, :]
        x1 = U0[r] * i01 + U1[r] * i11
        o = L.W_IA + 6 * r
        ws[lam, o] -= x0 * U0[0] + x1 * U1[0]
        ws[lam, o + 1] -= x0 * U0[1] + x1 * U1[1]
        ws[lam, o + 2] -= x0 * U0[2] + x1 * U1[2]
        ws[lam, o + 3] -= x0 * U0[3] + x1 * U1[3]
        ws[lam, o + 4] -= x0 * U0[4] + x1 * U1[4]
        ws[lam, o + 5] -= x0 * U0[5] + x1 * U1[5]


@inlined
def cpw_propagate2(ib, ic, cb, T, ports, k, Sw, U0, U1, i00, i01, i11, buf, Y, Z):
    """:func:`cpw_propagate` for two coordinates, in scalars."""
    dim, ch, pd = T[k, N_DIM], T[k, N_CHAIN], T[k, N_PD]
    branching = T[k, N_INN] == 1
    lam_rows = cpw_parent_block(ib, ic, cb, T, k, buf)
    e = max(T[k, N_ENTRY], 0)
    so = 0 if branching else T[ch, N_PD] + 6 * e * dim
    se0, se1 = ops.col6w(Sw, 12 * e, 2), ops.col6w(Sw, 12 * e + 1, 2)
    for col in range(dim):
        if branching:
            p, c = ports[T[k, N_PORT] + col // 6], col % 6
            chi = (1.0 if c == 0 else 0.0, 1.0 if c == 1 else 0.0, 1.0 if c == 2 else 0.0,
                   1.0 if c == 3 else 0.0, 1.0 if c == 4 else 0.0, 1.0 if c == 5 else 0.0)  # fmt: skip
            y0, y1 = Sw[12 * p + 2 * c], Sw[12 * p + 2 * c + 1]
        else:
            chi = ops.col6w(buf, so + col, dim)
            y0, y1 = ops.dot6(se0, chi), ops.dot6(se1, chi)
        z0 = i00 * y0 + i01 * y1
        z1 = i01 * y0 + i11 * y1
        Y[0, col], Y[1, col], Z[0, col], Z[1, col] = y0, y1, z0, z1
        if pd >= 0:
            for r in range(6):
                buf[pd + (lam_rows + r) * dim + col] = chi[r] - U0[r] * z0 - U1[r] * z1
    cpv_omega(T, k, buf, Y, Z, 2)  # eq. 16


@inlined
def cpw_propagate_free(ws, T, k, i, buf, Y, Z):
    """Lines 12–15 for a free-flyer joint without armature (``S`` invertible): ``Ω = Pᵀ (Iᴬ)⁻¹ P``
    with ``(Iᴬ)⁻¹`` at W_DINV, and nothing reaches the parent (``χ − U D⁻¹ Sᵀχ = 0``)."""
    dim, ch, pd = T[k, N_DIM], T[k, N_CHAIN], T[k, N_PD]
    branching = T[k, N_INN] == 1
    if pd >= 0:
        for a in range(T[T[k, N_PARENT], N_FULL] * dim):
            buf[pd + a] = 0.0
    so = 0 if branching else T[ch, N_PD] + 6 * T[k, N_ENTRY] * dim
    for col in range(dim):
        if branching:
            c = col % 6
            chi = (1.0 if c == 0 else 0.0, 1.0 if c == 1 else 0.0, 1.0 if c == 2 else 0.0,
                   1.0 if c == 3 else 0.0, 1.0 if c == 4 else 0.0, 1.0 if c == 5 else 0.0)  # fmt: skip
        else:
            chi = ops.col6w(buf, so + col, dim)
        z = ops.mat6_mul(ws, i, L.W_DINV, chi)
        for r in range(6):
            Y[r, col] = chi[r]
            Z[r, col] = z[r]
    cpv_omega(T, k, buf, Y, Z, 6)  # eq. 16


@inlined
def cpw_propagate1(ib, ic, cb, T, ports, k, Sw, U, dinv, buf, Y, Z):
    """:func:`cpw_propagate` for one independent coordinate, in scalars."""
    dim, ch, pd = T[k, N_DIM], T[k, N_CHAIN], T[k, N_PD]
    branching = T[k, N_INN] == 1
    lam_rows = cpw_parent_block(ib, ic, cb, T, k, buf)
    e = T[k, N_ENTRY]
    so = 0 if branching else T[ch, N_PD] + 6 * e * dim
    se = ops.load6_at(Sw, 6 * max(e, 0))
    for col in range(dim):
        if branching:
            c = col % 6
            yv = Sw[6 * ports[T[k, N_PORT] + col // 6] + c]
            zv = yv * dinv
            if pd >= 0:
                for r in range(6):
                    buf[pd + (lam_rows + r) * dim + col] = (1.0 if r == c else 0.0) - U[r] * zv
        else:
            chi = ops.col6w(buf, so + col, dim)
            yv = ops.dot6(se, chi)
            zv = yv * dinv
            if pd >= 0:
                for r in range(6):
                    buf[pd + (lam_rows + r) * dim + col] = chi[r] - U[r] * zv
        Y[0, col] = yv
        Z[0, col] = zv
    cpv_omega(T, k, buf, Y, Z, 1)  # eq. 16


@inlined
def cpw_inertia_to_output(ib, ws, ic, cb, k, m, Uw, Dinv, X):
    """Lines 9–10: ``Iᴬ_Λ += Σ_b Iᴬ_b − U D⁻¹ Uᵀ``; ``X`` is scratch for ``U D⁻¹``."""
    lam = ib[cb[ic[k, L.C_FIRST]], L.I_OUT]
    if lam == 0:
        return
    add_body_inertias(ws, ic, cb, k, lam)
    for r in range(6):
        for l in range(m):
            acc = 0.0
            for l2 in range(m):
                acc += Uw[r * m + l2] * Dinv[l2 * m + l]
            X[r * m + l] = acc
    for r in range(6):
        for c in range(6):
            acc = 0.0
            for l in range(m):
                acc += X[r * m + l] * Uw[c * m + l]
            ws[lam, L.W_IA + 6 * r + c] -= acc


@inlined
def cpw_propagate(ib, ic, cb, T, ports, k, m, Sw, Uw, Dinv, buf, Y, Z, y):
    """Lines 12–15 for cluster k (with EEs below), world coordinates: per column χ of the propagator
    from D(k) — a unit force on a port of a branching cluster (line 7), else its chain child's column
    on the entry body e — ``Y = 𝖲_eᵀ χ``, ``Z = D⁻¹ Y``, and ``χ − U Z`` on Λ's block of the parent's
    propagator (eq. 17); then ``^{λ}Ω_{D(k)} = ᵏΩ + Yᵀ Z`` (eq. 16)."""
    dim, ch, pd = T[k, N_DIM], T[k, N_CHAIN], T[k, N_PD]
    branching = T[k, N_INN] == 1
    lam_rows = cpw_parent_block(ib, ic, cb, T, k, buf)
    e = T[k, N_ENTRY]
    so = 0 if branching else T[ch, N_PD] + 6 * e * dim
    for col in range(dim):
        if branching:  # χ = the unit force c on port p
            p = ports[T[k, N_PORT] + col // 6]
            c = col % 6
            for l in range(m):
                y[l] = Sw[(6 * p + c) * m + l]
            chi = (1.0 if c == 0 else 0.0, 1.0 if c == 1 else 0.0, 1.0 if c == 2 else 0.0,
                   1.0 if c == 3 else 0.0, 1.0 if c == 4 else 0.0, 1.0 if c == 5 else 0.0)  # fmt: skip
        else:
            chi = ops.col6w(buf, so + col, dim)
            for l in range(m):
                y[l] = ops.dot6(ops.col6w(Sw, 6 * e * m + l, m), chi)
        for l in range(m):
            Y[l, col] = y[l]
            acc = 0.0
            for l2 in range(m):
                acc += Dinv[l * m + l2] * y[l2]
            Z[l, col] = acc
        if pd >= 0:
            for r in range(6):
                acc = chi[r]
                for l in range(m):
                    acc -= Uw[r * m + l] * Z[l, col]
                buf[pd + (lam_rows + r) * dim + col] = acc
    cpv_omega(T, k, buf, Y, Z, m)  # eq. 16


@shared(fastmath={"contract"})
def c_pv_osimr_world_core(ib, ws, ic, cb, wc, code, consts, table, outputs, q, cbody, crow, K, T, ports,
                          order, cemp, asm, buf, out):  # fmt: skip
    """Cluster PV-OSIMr in world coordinates on a validated state of a model whose every cluster has
    one port (:func:`one_port_tree`); writes Λ⁻¹ into ``out``. Returns 0 or a status."""
    # uncounted here too: the call boundary hides that the caller's arrays are borrowed
    (
        ib, ws, ic, cb, wc, code, consts, table, outputs, q, cbody, crow, K, T, ports, order, cemp, asm,
        buf, out
    ) = borrowed((
        ib, ws, ic, cb, wc, code, consts, table, outputs, q, cbody, crow, K, T, ports, order, cemp, asm,
        buf, out
    ))
    st = cpw_world_kinematics(ib, ws, ic, cb, wc, code, consts, table, outputs, q)  # lines 1–2
    if st != 0:
        return st
    ncl = ic[0, L.C0_NCL]
    wmax, mmax, nbmax = 6, 1, 1
    for k in range(1, ncl + 1):
        wmax = max(wmax, 6 * ic[k, L.C_NB])
        mmax = max(mmax, ic[k, L.C_M], ib[cb[ic[k, L.C_FIRST]], L.I_NV])
        nbmax = max(nbmax, ic[k, L.C_NB])
    for e in range(cbody.shape[0]):
        wmax = max(wmax, crow[e + 1] - crow[e])
    fbuf = stack_floats()  # the scratch below: on the kernel's stack when it fits
    nS, nU, nD = 6 * nbmax * mmax, 6 * mmax, mmax * mmax
    nf = 2 * wmax + mmax + 2 * mmax * wmax + nS + 2 * nU + 2 * nD + 72
    if nf > STACK_FLOATS:
        fbuf = np.empty(nf)
    f = view(fbuf, 0, (2, wmax))  # the forward sweep's column
    o = 2 * wmax
    y = view(fbuf, o, (mmax,))
    o += mmax
    Y = view(fbuf, o, (mmax, wmax))  # 𝖲_eᵀ P
    o += mmax * wmax
    Z = view(fbuf, o, (mmax, wmax))  # D⁻¹ 𝖲_eᵀ P
    o += mmax * wmax
    Sw, Uw, X, Dw, Dinv, scr = factor_scratch(fbuf, o, nS, nU, nD)
    cpw_seed_end_effectors(ib, ws, cbody, crow, K, T, buf, ncl)  # lines 3–4
    for k in range(ncl, 0, -1):  # line 5: clusters from the leaves
        if ic[k, L.C_M] == 1:  # one coordinate (a star, a revolute joint, a 1-DoF loop): in scalars
            U, d = cpw_factor1(ib, ws, ic, cb, wc, k, Sw)  # line 8
            if not cluster_pivot_positive(ib, ws, ic, cb, k, d):
                return SINGULAR * STATUS_BASE + cb[ic[k, L.C_FIRST]]
            if T[k, N_HASES] != 0:  # lines 12–15
                cpw_propagate1(ib, ic, cb, T, ports, k, Sw, U, 1.0 / d, buf, Y, Z)
            cpw_inertia_to_output1(ib, ws, ic, cb, k, U, 1.0 / d)  # lines 9–10
            continue
        if ic[k, L.C_M] == 2 and ic[k, L.C_KIND] != L.SINGLE_BODY:  # in scalars, D⁻¹ in closed form
            U0, U1, d00, d01, d11 = cpw_factor2(ib, ws, ic, cb, wc, k, Sw)  # line 8
            ok, i00, i01, i11 = ops.spd2_inverse(d00, d01, d11)
            if not ok:  # D not positive definite
                return SINGULAR * STATUS_BASE + cb[ic[k, L.C_FIRST]]
            if T[k, N_HASES] != 0:  # lines 12–15
                cpw_propagate2(ib, ic, cb, T, ports, k, Sw, U0, U1, i00, i01, i11, buf, Y, Z)
            cpw_inertia_to_output2(ib, ws, ic, cb, k, U0, U1, i00, i01, i11)  # lines 9–10
            continue
        i = cb[ic[k, L.C_FIRST]]
        if ic[k, L.C_KIND] == L.SINGLE_BODY and is_free(ib, ws, i):  # Ω = (Iᴬ)⁻¹, nothing to Λ
            if not sym6_inverse(ws, i, L.W_IA, L.W_DINV):
                return SINGULAR * STATUS_BASE + i
            if T[k, N_HASES] != 0:
                cpw_propagate_free(ws, T, k, i, buf, Y, Z)
            continue
        m = cpw_factor(ib, ws, ic, cb, wc, k, Sw, Uw, Dw, Dinv, scr)  # line 8
        if m < 0:
            return SINGULAR * STATUS_BASE + cb[ic[k, L.C_FIRST]]
        if T[k, N_HASES] != 0:  # lines 12–15
            cpw_propagate(ib, ic, cb, T, ports, k, m, Sw, Uw, Dinv, buf, Y, Z, y)
        cpw_inertia_to_output(ib, ws, ic, cb, k, m, Uw, Dinv, X)  # lines 9–10
    cpv_branch_inverse_inertias(T, ports, order, buf, f)  # line 17
    cpv_cemps(T, ports, cemp, buf)  # lines 18–22
    cpv_assemble(T, crow, asm, buf, f, out, ncl)  # lines 23–28
    return 0


@inlined
def cef_rows_step(ib, ic, cb, k, m, Sw, Uw, Dinv, chi, curk, curb, present, y, z, out):
    """C-EFPA at cluster k (eqs. 62–67 in world coordinates): for the constraint rows whose force has
    reached a body e of k, ``y = 𝖲_eᵀ χ`` and ``z = D⁻¹ y``; every pair of them adds ``y₁ · z₂`` to
    Λ⁻¹; each force then reaches Λ as ``χ − U z``. ``Sw``/``Uw``/``Dinv`` as :func:`cpw_factor`."""
    n = 0
    for r in range(curk.shape[0]):
        if curk[r] == k:
            present[n] = r
            n += 1
    if n == 0:
        return
    for t in range(n):
        r = present[t]
        o = 6 * curb[r] * m
        for l in range(m):
            acc = 0.0
            for c in range(6):
                acc += Sw[o + c * m + l] * chi[r, c]
            y[t, l] = acc
        for l in range(m):
            acc = 0.0
            for l2 in range(m):
                acc += Dinv[l * m + l2] * y[t, l2]
            z[t, l] = acc
    for t1 in range(n):
        r1 = present[t1]
        for t2 in range(t1, n):
            acc = 0.0
            for l in range(m):
                acc += y[t1, l] * z[t2, l]
            out[r1, present[t2]] += acc
    lam = ib[cb[ic[k, L.C_FIRST]], L.I_OUT]
    for t in range(n):
        r = present[t]
        for c in range(6):
            acc = chi[r, c]
            for l in range(m):
                acc -= Uw[c * m + l] * z[t, l]
            chi[r, c] = acc
        curk[r] = ib[lam, L.I_CLUSTER] if lam > 0 else 0
        curb[r] = ib[lam, L.I_SUB] if lam > 0 else 0


@inlined
def cef_rows_free(ws, i, k, chi, curk, present, out):
    """:func:`cef_rows_step` at a free-flyer without armature: ``χ₁ᵀ (Iᴬ)⁻¹ χ₂`` per pair (W_DINV holds
    ``(Iᴬ)⁻¹``), and nothing reaches the parent."""
    n = 0
    for r in range(curk.shape[0]):
        if curk[r] == k:
            present[n] = r
            n += 1
    for t1 in range(n):
        r1 = present[t1]
        c1 = (chi[r1, 0], chi[r1, 1], chi[r1, 2], chi[r1, 3], chi[r1, 4], chi[r1, 5])
        w = ops.mat6_mul(ws, i, L.W_DINV, c1)
        for t2 in range(t1, n):
            r2 = present[t2]
            out[r1, r2] += (w[0] * chi[r2, 0] + w[1] * chi[r2, 1] + w[2] * chi[r2, 2] + w[3] * chi[r2, 3]
                            + w[4] * chi[r2, 4] + w[5] * chi[r2, 5])  # fmt: skip
    for t in range(n):
        curk[present[t]] = 0


@shared(fastmath={"contract"})
def c_efpa_world_core(ib, ws, ic, cb, wc, code, consts, table, outputs, q, cbody, crow, K, out):
    """C-EFPA in world coordinates on a validated state of a model whose every cluster has one port
    (:func:`one_port_tree`); writes Λ⁻¹ into ``out``. Returns 0 or a status.

    The articulated inertias and the constraint rows go up together, clusters from the leaves: each
    row's force starts as ``K_e`` carried to the world on its body (eq. 62), and at every cluster it
    passes (:func:`cef_rows_step`) adds its share to Λ⁻¹ and moves on to the output body."""
    # uncounted here too: the call boundary hides that the caller's arrays are borrowed
    ib, ws, ic, cb, wc, code, consts, table, outputs, q, cbody, crow, K, out = borrowed(
        (ib, ws, ic, cb, wc, code, consts, table, outputs, q, cbody, crow, K, out)
    )
    st = cpw_world_kinematics(ib, ws, ic, cb, wc, code, consts, table, outputs, q)
    if st != 0:
        return st
    ncl = ic[0, L.C0_NCL]
    mmax, nbmax = 1, 1
    for k in range(1, ncl + 1):
        mmax = max(mmax, ic[k, L.C_M], ib[cb[ic[k, L.C_FIRST]], L.I_NV])
        nbmax = max(nbmax, ic[k, L.C_NB])
    nc = cbody.shape[0]
    M = crow[nc]
    fbuf = stack_floats()  # scratch: on the kernel's stack when it fits
    nS, nU, nD = 6 * nbmax * mmax, 6 * mmax, mmax * mmax
    nf = 6 * M + 2 * M * mmax + nS + 2 * nU + 2 * nD + 72
    if nf > STACK_FLOATS:
        fbuf = np.empty(nf)
    ibuf = stack_ints()
    if 3 * M > STACK_INTS:
        ibuf = np.empty(3 * M, dtype=np.int64)
    curk = view(ibuf, 0, (M,))  # the cluster each row's force has reached (0: gone to the world)
    curb = view(ibuf, M, (M,))  # and its body there (sub-index)
    present = view(ibuf, 2 * M, (M,))
    chi = view(fbuf, 0, (M, 6))  # the rows' forces, world coordinates
    o = 6 * M
    y = view(fbuf, o, (M, mmax))
    o += M * mmax
    z = view(fbuf, o, (M, mmax))
    o += M * mmax
    Sw, Uw, X, Dw, Dinv, scr = factor_scratch(fbuf, o, nS, nU, nD)
    for e in range(nc):  # eq. 62: K_e as world forces on the constrained body
        b = cbody[e]
        oR, op = ops.load9(ws, b, L.W_OR), ops.load3(ws, b, W_OO)
        for r in range(crow[e], crow[e + 1]):
            curk[r] = ib[b, L.I_CLUSTER] if b > 0 else 0
            curb[r] = ib[b, L.I_SUB] if b > 0 else 0
            kw = ops.force_to_parent(oR, op, ops.load6(K, r, 0))
            for c in range(6):
                chi[r, c] = kw[c] if b > 0 else 0.0
    out[:, :] = 0.0
    for k in range(ncl, 0, -1):
        i = cb[ic[k, L.C_FIRST]]
        if ic[k, L.C_KIND] == L.SINGLE_BODY and is_free(ib, ws, i):
            if not sym6_inverse(ws, i, L.W_IA, L.W_DINV):
                return SINGULAR * STATUS_BASE + i
            cef_rows_free(ws, i, k, chi, curk, present, out)
            continue
        if ic[k, L.C_M] == 1:
            U, d = cpw_factor1(ib, ws, ic, cb, wc, k, Sw)
            if not cluster_pivot_positive(ib, ws, ic, cb, k, d):
                return SINGULAR * STATUS_BASE + i
            dinv = 1.0 / d
            Dinv[0] = dinv
            for r in range(6):
                Uw[r] = U[r]
            cef_rows_step(ib, ic, cb, k, 1, Sw, Uw, Dinv, chi, curk, curb, present, y, z, out)
            cpw_inertia_to_output1(ib, ws, ic, cb, k, U, dinv)
            continue
        if ic[k, L.C_M] == 2 and ic[k, L.C_KIND] != L.SINGLE_BODY:
            U0, U1, d00, d01, d11 = cpw_factor2(ib, ws, ic, cb, wc, k, Sw)
            ok, i00, i01, i11 = ops.spd2_inverse(d00, d01, d11)
            if not ok:
                return SINGULAR * STATUS_BASE + i
            Dinv[0], Dinv[1], Dinv[2], Dinv[3] = i00, i01, i01, i11
            for r in range(6):
                Uw[2 * r], Uw[2 * r + 1] = U0[r], U1[r]
            cef_rows_step(ib, ic, cb, k, 2, Sw, Uw, Dinv, chi, curk, curb, present, y, z, out)
            cpw_inertia_to_output2(ib, ws, ic, cb, k, U0, U1, i00, i01, i11)
            continue
        m = cpw_factor(ib, ws, ic, cb, wc, k, Sw, Uw, Dw, Dinv, scr)
        if m < 0:
            return SINGULAR * STATUS_BASE + i
        cef_rows_step(ib, ic, cb, k, m, Sw, Uw, Dinv, chi, curk, curb, present, y, z, out)
        cpw_inertia_to_output(ib, ws, ic, cb, k, m, Uw, Dinv, X)
    for r in range(M):  # the upper triangle was accumulated
        for c in range(r):
            out[r, c] = out[c, r]
    return 0


@kernel(
    "int64(int64[::1], float64[::1], float64[::1], int64[::1], float64[:, ::1], float64[::1], "
    "float64[:, ::1])"
)
def c_pv_osimr_kernel(ints, floats, q, tables, K, buf, out):
    """Cluster PV-OSIMr: Λ⁻¹ of the constraint rows ``K`` into ``out``, with the structure's ``tables``
    (:func:`~.cluster_pv_osimr.pack_tables`) and the calling thread's ``buf``; in world coordinates
    when every cluster has one port, else in body coordinates (:mod:`.cluster_pv_osimr`)."""
    ints, floats, q, tables, K, buf, out = borrowed((ints, floats, q, tables, K, buf, out))
    ib, ws, ic, cb, wc = model_views(ints, floats)
    cbody, crow, T, ports, order, cemp, asm = unpack_tables(tables)
    code, consts, table, outputs = tapes(ic, cb, wc)
    st = validate_cluster_configuration(ib, ic, cb, q)
    if st != 0:
        return st
    if not acquire(ints):
        return DATA_IN_USE * STATUS_BASE
    if one_port_tree(ic):
        st = c_pv_osimr_world_core(ib, ws, ic, cb, wc, code, consts, table, outputs, q, cbody, crow, K, T,
                                   ports, order, cemp, asm, buf, out)  # fmt: skip
    else:
        st = c_pv_osimr_core(ib, ws, ic, cb, wc, code, consts, table, outputs, q, cbody, crow, K, T, ports,
                             order, cemp, asm, buf, out, np.int64(0))  # fmt: skip
    release(ints)
    return st  # fmt: skip


@kernel(
    "int64(int64[::1], float64[::1], float64[::1], int64[::1], int64[::1], float64[:, ::1], "
    "float64[:, ::1])"
)
def c_efpa_kernel(ints, floats, q, cbody, crow, K, out):
    """C-EFPA: Λ⁻¹ of the constraint rows ``K`` (constraint e on body ``cbody[e]``, rows
    ``crow[e] … crow[e + 1] − 1``) into ``out``; in world coordinates when every cluster has one port,
    else in body coordinates (:func:`~.cluster_delassus.c_efpa_core`) — also beyond ``EFPA_WORLD_ROWS``
    rows, where the body-coordinate version's O(m d + m²) down pass beats the pairwise sums."""
    ints, floats, q, cbody, crow, K, out = borrowed((ints, floats, q, cbody, crow, K, out))
    ib, ws, ic, cb, wc = model_views(ints, floats)
    code, consts, table, outputs = tapes(ic, cb, wc)
    st = validate_cluster_configuration(ib, ic, cb, q)
    if st != 0:
        return st
    if not acquire(ints):
        return DATA_IN_USE * STATUS_BASE
    if crow[cbody.shape[0]] <= EFPA_WORLD_ROWS and one_port_tree(ic):
        st = c_efpa_world_core(ib, ws, ic, cb, wc, code, consts, table, outputs, q, cbody, crow, K, out)
    else:
        st = c_efpa_core(ib, ws, ic, cb, wc, code, consts, table, outputs, q, cbody, crow, K, out)
    release(ints)
    return st
