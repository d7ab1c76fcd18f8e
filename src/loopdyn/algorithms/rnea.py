"""Inverse dynamics by the recursive Newton–Euler algorithm (RNEA; Featherstone, RBDA Table 5.1).

``τ = rnea(q, v, a)`` solves ``τ = M(q) a + C(q, v) v + g(q) − Σ Jᵢᵀ fᵢ`` in O(n), where M includes
the joints' armature (``M + diag(armature)``).
"""

from __future__ import annotations

from ..jit import njit, sequence
from ..model import layout as L
from ..spatial import ops
from .borrow import acquire, borrowed, release, view
from .common import (
    check_configuration,
    check_forces,
    check_vector,
    external_force,
    gravity_seed,
    jcalc,
    kernel,
    s_mul,
    st_mul,
    velocity_pass,
)
from .status import DATA_IN_USE, STATUS_BASE


@njit(cache=True)
def rnea_core(ib, ws, q, v, a, fext, tau, with_gravity):
    """RNEA on validated inputs; writes τ into ``tau``. ``fext`` may be empty (no external forces)."""
    # uncounted here too: the call boundary hides that the caller's arrays are borrowed
    ib, ws, q, v, a, fext, tau, with_gravity = borrowed((ib, ws, q, v, a, fext, tau, with_gravity))
    nb = ib[0, L.I0_NBODIES]
    ops.store6(ws, 0, L.W_A, gravity_seed(ws) if with_gravity else (0.0, 0.0, 0.0, 0.0, 0.0, 0.0))
    # forward pass (RBDA eqs. 5.7–5.9): velocities, accelerations, net forces
    for i in range(1, nb + 1):
        R, p = jcalc(ib, ws, i, q)
        vi = velocity_pass(ib, ws, i, v, R, p)
        ai = ops.add6(
            ops.add6(ops.motion_to_child(R, p, ops.load6(ws, ib[i, L.I_PARENT], L.W_A)), s_mul(ib, ws, i, a)),
            ops.load6(ws, i, L.W_C),
        )
        ops.store6(ws, i, L.W_A, ai)
        I = ops.load10(ws, i, L.W_INER)
        fi = ops.add6(ops.inertia_mul(I, ai), ops.cross_force(vi, ops.inertia_mul(I, vi)))
        ops.store6(ws, i, L.W_F, ops.sub6(fi, external_force(fext, i)))
    # backward pass (eqs. 5.10–5.11): joint forces (plus armature · q̈ when the model has armature,
    # flagged in row 0), and transmission to the parent
    armature = ws[0, L.W_ARM] != 0.0
    for i in range(nb, 0, -1):
        fi = ops.load6(ws, i, L.W_F)
        st_mul(ib, ws, i, fi, tau)
        if armature:
            iv = ib[i, L.I_IV]
            for k in range(ib[i, L.I_NV]):
                tau[iv + k] += ws[i, L.W_ARM + k] * a[iv + k]
        par = ib[i, L.I_PARENT]
        if par > 0:
            ops.add_to6(
                ws, par, L.W_F, ops.force_to_parent(ops.load9(ws, i, L.W_R), ops.load3(ws, i, L.W_P), fi)
            )


@njit(cache=True)
def validate_qva(ib, q, v, a, fext):
    st = check_configuration(ib, q)
    if st == 0:
        st = check_vector(v, ib[0, L.I0_NV], 1)
    if st == 0:
        st = check_vector(a, ib[0, L.I0_NV], 2)
    if st == 0:
        st = check_forces(ib, fext)
    return st


@sequence
def rnea_checked(ib, ws, q, v, a, fext, tau):
    """RNEA with gravity after validating the inputs; returns the status (0: τ written)."""
    st = validate_qva(ib, q, v, a, fext)
    if st != 0:
        return st
    rnea_core(ib, ws, q, v, a, fext, tau, True)
    return 0


# two kernels, with and without f_ext: the public function's common call (no external forces) passes
# two arguments fewer, ~90 ns less of Numba's dispatch in a 1–2 µs call on a small robot
@kernel("int64(int64[:, ::1], float64[:, ::1], float64[::1], float64[::1], float64[::1], float64[::1])")
def rnea_kernel(ib, ws, q, v, a, tau):
    ib, ws, q, v, a, tau = borrowed((ib, ws, q, v, a, tau))
    if not acquire(ib):
        return DATA_IN_USE * STATUS_BASE
    st = rnea_checked(ib, ws, q, v, a, view(ws, 0, (0, 6)), tau)
    release(ib)
    return st


@kernel(
    "int64(int64[:, ::1], float64[:, ::1], float64[::1], float64[::1], float64[::1], float64[:, ::1], "
    "float64[::1])"
)
def rnea_fext_kernel(ib, ws, q, v, a, fext, tau):
    ib, ws, q, v, a, fext, tau = borrowed((ib, ws, q, v, a, fext, tau))
    if not acquire(ib):
        return DATA_IN_USE * STATUS_BASE
    st = rnea_checked(ib, ws, q, v, a, fext, tau)
    release(ib)
    return st
