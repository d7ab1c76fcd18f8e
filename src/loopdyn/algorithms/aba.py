"""Forward dynamics by the articulated-body algorithm (ABA; Featherstone, RBDA Table 7.1).

``a = aba(q, v, τ)`` solves ``M(q) a = τ − C(q, v) v − g(q) + Σ Jᵢᵀ fᵢ`` in O(n) without forming M.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..model import layout as L
from ..spatial import ops
from .common import (
    SINGULAR,
    STATUS_BASE,
    as_float_vector,
    as_force_array,
    jcalc,
    kernel,
    raise_for_status,
    s_column,
    s_mul_add,
    set_gravity_seed,
    velocity_pass,
)
from .rnea import validate_qva
from .validation import check_data


@njit(cache=True)
def aba_core(ib, ws, q, v, tau, fext, ddq):
    """ABA on validated inputs; writes the accelerations into ``ddq``. Returns 0 or a SINGULAR status."""
    nb = ib[0, L.I0_NBODIES]
    scratch = ws[0, L.W_TMP : L.W_TMP + 168]  # D | spd scratch | D⁻¹u | pa | transform tmp
    # pass 1 (RBDA 7.1, lines 1–8): kinematics, IA = I, pA = v ×* I v − f_ext
    for i in range(1, nb + 1):
        jcalc(ib, ws, i, q)
        velocity_pass(ib, ws, i, v)
        row = ws[i]
        I = row[L.W_INER : L.W_INER + 10]
        ops.inertia_to_matrix(I, row[L.W_IA : L.W_IA + 36])
        pA = row[L.W_F : L.W_F + 6]  # pA is accumulated in W_F so that external forces apply there
        Iv = row[L.W_TMP : L.W_TMP + 6]
        ops.inertia_mul(I, row[L.W_V : L.W_V + 6], Iv)
        for k in range(6):
            pA[k] = 0.0
        ops.cross_force_add(row[L.W_V : L.W_V + 6], Iv, pA)
        if fext.shape[0] != 0:
            pA[0] -= fext[i, 3]
            pA[1] -= fext[i, 4]
            pA[2] -= fext[i, 5]
            pA[3] -= fext[i, 0]
            pA[4] -= fext[i, 1]
            pA[5] -= fext[i, 2]
    # pass 2 (lines 9–18): articulated inertias and bias forces, leaves to root
    for i in range(nb, 0, -1):
        row = ws[i]
        nv = ib[i, L.I_NV]
        iv = ib[i, L.I_IV]
        IA = row[L.W_IA : L.W_IA + 36]
        pA = row[L.W_F : L.W_F + 6]
        U = row[L.W_U : L.W_U + 36]
        Dinv = row[L.W_DINV : L.W_DINV + 36]
        u = row[L.W_UU : L.W_UU + 6]
        s = row[L.W_TMP : L.W_TMP + 6]
        # U = IA S, D = Sᵀ U, u = τ − Sᵀ pA
        D = scratch[0:36]
        for k in range(nv):
            s_column(ib, ws, i, k, s)
            ops.sym6_mul(IA, s, U[6 * k : 6 * k + 6])
            u[k] = tau[iv + k] - (s[0] * pA[0] + s[1] * pA[1] + s[2] * pA[2] + s[3] * pA[3] + s[4] * pA[4]
                                  + s[5] * pA[5])
        for k in range(nv):
            s_column(ib, ws, i, k, s)
            for l in range(nv):
                Ul = U[6 * l : 6 * l + 6]
                D[nv * k + l] = s[0] * Ul[0] + s[1] * Ul[1] + s[2] * Ul[2] + s[3] * Ul[3] + s[4] * Ul[4] + s[5] * Ul[5]
        if nv == 1:
            if not D[0] > 0.0:
                return SINGULAR * STATUS_BASE + i
            Dinv[0] = 1.0 / D[0]
        elif not ops.spd_inverse(D, nv, Dinv, scratch[36:108]):
            return SINGULAR * STATUS_BASE + i
        par = ib[i, L.I_PARENT]
        if par == 0:
            continue
        # Ia = IA − U D⁻¹ Uᵀ ;  pa = pA + Ia c + U D⁻¹ u
        Ia = row[L.W_TMP + 6 : L.W_TMP + 42]
        for k in range(36):
            Ia[k] = IA[k]
        Du = scratch[108:114]
        for k in range(nv):
            acc = 0.0
            for l in range(nv):
                acc += Dinv[nv * k + l] * u[l]
            Du[k] = acc
        pa = scratch[114:120]
        for r in range(6):
            pa[r] = pA[r]
        for k in range(nv):
            Uk = U[6 * k : 6 * k + 6]
            for l in range(nv):
                dkl = Dinv[nv * k + l]
                Ul = U[6 * l : 6 * l + 6]
                for r in range(6):
                    for c in range(6):
                        Ia[6 * r + c] -= Uk[r] * dkl * Ul[c]
            for r in range(6):
                pa[r] += Uk[r] * Du[k]
        c = row[L.W_C : L.W_C + 6]
        for r in range(6):
            pa[r] += (Ia[6 * r] * c[0] + Ia[6 * r + 1] * c[1] + Ia[6 * r + 2] * c[2] + Ia[6 * r + 3] * c[3]
                      + Ia[6 * r + 4] * c[4] + Ia[6 * r + 5] * c[5])
        R = row[L.W_R : L.W_R + 9]
        p = row[L.W_P : L.W_P + 3]
        prow = ws[par]
        ops.matrix_to_parent_add(R, p, Ia, prow[L.W_IA : L.W_IA + 36], scratch[120:168])
        ops.force_to_parent_add(R, p, pa, prow[L.W_F : L.W_F + 6])
    # pass 3 (lines 19–24): accelerations, root to leaves
    set_gravity_seed(ws)
    for i in range(1, nb + 1):
        row = ws[i]
        nv = ib[i, L.I_NV]
        iv = ib[i, L.I_IV]
        par = ib[i, L.I_PARENT]
        ai = row[L.W_A : L.W_A + 6]
        ops.motion_to_child(row[L.W_R : L.W_R + 9], row[L.W_P : L.W_P + 3], ws[par, L.W_A : L.W_A + 6], ai)
        for k in range(6):
            ai[k] += row[L.W_C + k]
        U = row[L.W_U : L.W_U + 36]
        Dinv = row[L.W_DINV : L.W_DINV + 36]
        u = row[L.W_UU : L.W_UU + 6]
        tmp = scratch[0:6]
        for k in range(nv):
            Uk = U[6 * k : 6 * k + 6]
            tmp[k] = u[k] - (Uk[0] * ai[0] + Uk[1] * ai[1] + Uk[2] * ai[2] + Uk[3] * ai[3] + Uk[4] * ai[4]
                             + Uk[5] * ai[5])
        for k in range(nv):
            acc = 0.0
            for l in range(nv):
                acc += Dinv[nv * k + l] * tmp[l]
            ddq[iv + k] = acc
        s_mul_add(ib, ws, i, ddq, ai)
    return 0


@kernel("int64(int64[:, ::1], float64[:, ::1], float64[::1], float64[::1], float64[::1], float64[:, ::1], "
        "float64[::1])")
def aba_kernel(ib, ws, q, v, tau, fext, ddq):
    st = validate_qva(ib, q, v, tau, fext)
    if st != 0:
        return st
    return aba_core(ib, ws, q, v, tau, fext, ddq)


_NAMES = ("q", "v", "tau", "f_ext")


def aba(model, data, q, v, tau, f_ext=None) -> np.ndarray:
    """Forward dynamics: the accelerations produced by joint forces ``tau`` at state ``(q, v)``.

    Arguments as :func:`loopdyn.rnea` (with ``tau`` in place of ``a``). Returns ``a`` (nv), a new array.
    """
    if data.model_key is not model._key:
        check_data(model, data)
    out = np.empty(data.nv)
    try:
        st = aba_kernel(data.ib, data.ws, q, v, tau, data.no_forces if f_ext is None else f_ext, out)
    except TypeError:
        q, v, tau = (as_float_vector(x, n) for x, n in zip((q, v, tau), _NAMES, strict=False))
        fx = data.no_forces if f_ext is None else as_force_array(f_ext, model.njoints)
        st = aba_kernel(data.ib, data.ws, q, v, tau, fx, out)
    if st:
        raise_for_status(model, st, _NAMES, (model.nq, model.nv, model.nv))
    return out
