"""Forward dynamics by the articulated-body algorithm (ABA; Featherstone, RBDA Table 7.1).

``a = aba(q, v, τ)`` solves ``M(q) a = τ − C(q, v) v − g(q) + Σ Jᵢᵀ fᵢ`` in O(n) without forming M
(armature included: M + diag(armature), added to each joint's D = Sᵀ U).
"""

from __future__ import annotations

from ..jit import inlined, njit, sequence
from ..model import layout as L
from ..spatial import ops
from .borrow import acquire, borrowed, release, view
from .common import (
    external_force,
    gravity_seed,
    jcalc,
    kernel,
    pivot_positive,
    s_column,
    s_mul,
    velocity_pass,
)
from .rnea import validate_qva
from .status import DATA_IN_USE, SINGULAR, STATUS_BASE


@inlined
def joint_dinv(ib, ws, i):
    """D⁻¹ = (Sᵀ U + diag(armature))⁻¹ of body i's joint into ws[i, W_DINV], U = IA S already in
    ws[i, W_U] (row 0's W_TMP columns are scratch). False if D is not positive definite: a pivot
    below SPD_RTOL times its diagonal entry (of D for a multi-DoF joint, of the mass matrix for a
    1-DoF one: :func:`~.common.pivot_positive`)."""
    nv = ib[i, L.I_NV]
    if nv == 1:
        dd = ops.dot6(s_column(ib, ws, i, 0), ops.load6(ws, i, L.W_U)) + ws[i, L.W_ARM]
        if not pivot_positive(ib, ws, i, dd):
            return False
        ws[i, L.W_DINV] = 1.0 / dd
        return True
    T = L.W_TMP
    for k in range(nv):
        sk = s_column(ib, ws, i, k)
        for l in range(nv):
            ws[0, T + nv * k + l] = ops.dot6(sk, ops.load6(ws, i, L.W_U + 6 * l))
        ws[0, T + nv * k + k] += ws[i, L.W_ARM + k]  # armature
    return ops.spd_inverse(ws[0], T, nv, ws[i], L.W_DINV, ws[0], T + 36)


@inlined
def joint_factor(ib, ws, i):
    """U = IA S into ws[i, W_U] and D⁻¹ (:func:`joint_dinv`) for body i: the bias-free joint step of
    the articulated-body recursion (EFPA, PV-OSIM, PV-OSIMr). False if D is singular."""
    for k in range(ib[i, L.I_NV]):
        ops.store6(ws, i, L.W_U + 6 * k, ops.mat6_mul(ws, i, L.W_IA, s_column(ib, ws, i, k)))
    return joint_dinv(ib, ws, i)


@inlined
def inertia_to_parent(ib, ws, i, par):
    """IA_par += Xupᵀ (IA_i − U D⁻¹ Uᵀ) Xup after :func:`joint_factor` (IA_i is overwritten): the
    bias-free transfer of the articulated-body recursion (the ABA fuses it with its bias forces)."""
    nv = ib[i, L.I_NV]
    for k in range(nv):
        Uk = ops.load6(ws, i, L.W_U + 6 * k)
        for l in range(nv):
            dkl = ws[i, L.W_DINV + nv * k + l]
            Ul = ops.load6(ws, i, L.W_U + 6 * l)
            for r in range(6):
                x = Uk[r] * dkl
                for cc in range(6):
                    ws[i, L.W_IA + 6 * r + cc] -= x * Ul[cc]
    ops.mat6_to_parent_add(ws, i, L.W_IA, ops.load9(ws, i, L.W_R), ops.load3(ws, i, L.W_P), par, L.W_IA)


@njit(cache=True)
def aba_core(ib, ws, q, v, tau, fext, ddq):
    """ABA on validated inputs; writes the accelerations into ``ddq``. Returns 0 or a SINGULAR status.

    Workspace per body: W_IA articulated inertia, W_F bias force pA, W_U = IA S (column k at 6 k),
    W_DINV = D⁻¹, W_UU = u. Row 0's W_TMP columns are scratch: D at +0, Cholesky scratch at +36.
    """
    # uncounted here too: the call boundary hides that the caller's arrays are borrowed
    ib, ws, q, v, tau, fext, ddq = borrowed((ib, ws, q, v, tau, fext, ddq))
    nb = ib[0, L.I0_NBODIES]
    T = L.W_TMP
    # pass 1 (RBDA Table 7.1, first loop): kinematics, IA = I, pA = v ×* I v − f_ext
    for i in range(1, nb + 1):
        R, p = jcalc(ib, ws, i, q)
        vi = velocity_pass(ib, ws, i, v, R, p)
        I = ops.load10(ws, i, L.W_INER)
        ops.store_inertia_matrix(ws, i, L.W_IA, I)
        ops.store6(
            ws, i, L.W_F, ops.sub6(ops.cross_force(vi, ops.inertia_mul(I, vi)), external_force(fext, i))
        )
    # pass 2 (second loop): articulated inertias and bias forces, leaves to root
    for i in range(nb, 0, -1):
        nv = ib[i, L.I_NV]
        iv = ib[i, L.I_IV]
        pA = ops.load6(ws, i, L.W_F)
        for k in range(nv):  # U = IA S,  u = τ − Sᵀ pA
            sk = s_column(ib, ws, i, k)
            ops.store6(ws, i, L.W_U + 6 * k, ops.mat6_mul(ws, i, L.W_IA, sk))
            ws[i, L.W_UU + k] = tau[iv + k] - ops.dot6(sk, pA)
        if not joint_dinv(ib, ws, i):  # D⁻¹ = (Sᵀ U + armature)⁻¹
            return SINGULAR * STATUS_BASE + i
        par = ib[i, L.I_PARENT]
        if par == 0:
            continue
        # Ia = IA − U D⁻¹ Uᵀ (in place: IA_i is not needed afterwards);  pa = pA + Ia c + U D⁻¹ u
        pa = pA
        for k in range(nv):
            Uk = ops.load6(ws, i, L.W_U + 6 * k)
            Dk_u = 0.0
            for l in range(nv):
                dkl = ws[i, L.W_DINV + nv * k + l]
                Dk_u += dkl * ws[i, L.W_UU + l]
                Ul = ops.load6(ws, i, L.W_U + 6 * l)
                for r in range(6):
                    x = Uk[r] * dkl
                    for cc in range(6):
                        ws[i, L.W_IA + 6 * r + cc] -= x * Ul[cc]
            pa = ops.add6(pa, ops.scale6(Uk, Dk_u))
        pa = ops.add6(pa, ops.mat6_mul(ws, i, L.W_IA, ops.load6(ws, i, L.W_C)))
        R = ops.load9(ws, i, L.W_R)
        p = ops.load3(ws, i, L.W_P)
        ops.mat6_to_parent_add(ws, i, L.W_IA, R, p, par, L.W_IA)
        ops.add_to6(ws, par, L.W_F, ops.force_to_parent(R, p, pa))
    # pass 3 (third loop): accelerations, root to leaves
    ops.store6(ws, 0, L.W_A, gravity_seed(ws))
    for i in range(1, nb + 1):
        nv = ib[i, L.I_NV]
        iv = ib[i, L.I_IV]
        R = ops.load9(ws, i, L.W_R)
        p = ops.load3(ws, i, L.W_P)
        ai = ops.add6(
            ops.motion_to_child(R, p, ops.load6(ws, ib[i, L.I_PARENT], L.W_A)), ops.load6(ws, i, L.W_C)
        )
        if nv == 1:
            ddq[iv] = ws[i, L.W_DINV] * (ws[i, L.W_UU] - ops.dot6(ops.load6(ws, i, L.W_U), ai))
        else:
            for k in range(nv):  # u − Uᵀ a'
                ws[0, T + k] = ws[i, L.W_UU + k] - ops.dot6(ops.load6(ws, i, L.W_U + 6 * k), ai)
            for k in range(nv):
                acc = 0.0
                for l in range(nv):
                    acc += ws[i, L.W_DINV + nv * k + l] * ws[0, T + l]
                ddq[iv + k] = acc
        ops.store6(ws, i, L.W_A, ops.add6(ai, s_mul(ib, ws, i, ddq)))
    return 0


@sequence
def aba_checked(ib, ws, q, v, tau, fext, ddq):
    """ABA after validating the inputs; returns the status (0: q̈ written)."""
    st = validate_qva(ib, q, v, tau, fext)
    if st != 0:
        return st
    return aba_core(ib, ws, q, v, tau, fext, ddq)


# with and without f_ext, as rnea_kernel / rnea_fext_kernel
@kernel("int64(int64[:, ::1], float64[:, ::1], float64[::1], float64[::1], float64[::1], float64[::1])")
def aba_kernel(ib, ws, q, v, tau, ddq):
    ib, ws, q, v, tau, ddq = borrowed((ib, ws, q, v, tau, ddq))
    if not acquire(ib):
        return DATA_IN_USE * STATUS_BASE
    st = aba_checked(ib, ws, q, v, tau, view(ws, 0, (0, 6)), ddq)
    release(ib)
    return st


@kernel(
    "int64(int64[:, ::1], float64[:, ::1], float64[::1], float64[::1], float64[::1], float64[:, ::1], "
    "float64[::1])"
)
def aba_fext_kernel(ib, ws, q, v, tau, fext, ddq):
    ib, ws, q, v, tau, fext, ddq = borrowed((ib, ws, q, v, tau, fext, ddq))
    if not acquire(ib):
        return DATA_IN_USE * STATUS_BASE
    st = aba_checked(ib, ws, q, v, tau, fext, ddq)
    release(ib)
    return st
