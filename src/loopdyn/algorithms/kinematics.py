"""Kernels of forward kinematics and frame Jacobians (with their time variation) of a kinematic tree.

Reference frames for Jacobians follow Pinocchio:

* ``"local"`` — the frame's own axes and origin;
* ``"world"`` — the world axes, velocities measured at the world origin;
* ``"local_world_aligned"`` — the world axes, velocities measured at the frame origin.

Jacobian rows are ``[linear; angular]`` (Pinocchio's layout), columns follow ``v``.
"""

from __future__ import annotations

from ..jit import inlined, njit
from ..model import layout as L
from ..spatial import ops
from .borrow import acquire, borrowed, release
from .common import check_configuration, check_vector, jcalc, kernel, s_column, s_mul, velocity_pass
from .status import DATA_IN_USE, STATUS_BASE

# reference frames of Jacobians (kernel codes)
LOCAL = 0
WORLD = 1
LOCAL_WORLD_ALIGNED = 2


@njit(cache=True)
def placements_core(ib, ws, q):
    """Placements of every body in its parent (W_R, W_P) and in the world (W_OR, W_OP)."""
    for i in range(1, ib[0, L.I0_NBODIES] + 1):
        R, p = jcalc(ib, ws, i, q)
        par = ib[i, L.I_PARENT]
        oR = ops.load9(ws, par, L.W_OR)
        t = ops.rot_vec(oR, p)
        ops.store9(ws, i, L.W_OR, ops.rot_mul(oR, R))
        ops.store3(
            ws, i, L.W_OP, (ws[par, L.W_OP] + t[0], ws[par, L.W_OP + 1] + t[1], ws[par, L.W_OP + 2] + t[2])
        )


@njit(cache=True)
def velocities_core(ib, ws, v):
    """Body velocities (W_V) and velocity-product terms (W_C), after placements_core."""
    ops.store6(ws, 0, L.W_V, (0.0, 0.0, 0.0, 0.0, 0.0, 0.0))
    for i in range(1, ib[0, L.I0_NBODIES] + 1):
        velocity_pass(ib, ws, i, v, ops.load9(ws, i, L.W_R), ops.load3(ws, i, L.W_P))


@kernel("int64(int64[:, ::1], float64[:, ::1], float64[::1], float64[::1], float64[::1])")
def fk_kernel(ib, ws, q, v, a):
    """Placements; velocities if v is non-empty; accelerations (no gravity) if a is non-empty too."""
    ib, ws, q, v, a = borrowed((ib, ws, q, v, a))
    st = check_configuration(ib, q)
    nv = ib[0, L.I0_NV]
    if st == 0 and v.shape[0] != 0:
        st = check_vector(v, nv, 1)
    if st == 0 and a.shape[0] != 0:
        st = check_vector(a, nv, 2)
    if st != 0:
        return st
    if not acquire(ib):
        return DATA_IN_USE * STATUS_BASE
    placements_core(ib, ws, q)
    if v.shape[0] != 0:
        velocities_core(ib, ws, v)
        if a.shape[0] != 0:
            ops.store6(ws, 0, L.W_A, (0.0, 0.0, 0.0, 0.0, 0.0, 0.0))
            for i in range(1, ib[0, L.I0_NBODIES] + 1):
                R = ops.load9(ws, i, L.W_R)
                p = ops.load3(ws, i, L.W_P)
                ai = ops.motion_to_child(R, p, ops.load6(ws, ib[i, L.I_PARENT], L.W_A))
                ops.store6(ws, i, L.W_A, ops.add6(ops.add6(ai, s_mul(ib, ws, i, a)), ops.load6(ws, i, L.W_C)))
    release(ib)
    return 0


@inlined
def write_column(out, col, m, ref, Rf, pf):
    """Write the world-at-origin motion m = [ω; v_O] into column ``col`` of ``out`` (rows
    [linear; angular]) in reference ``ref``: WORLD as is, else measured at the frame origin pf, and
    for LOCAL in the frame axes Rf."""
    w = (m[0], m[1], m[2])
    u = (m[3], m[4], m[5])
    if ref != WORLD:  # velocity of the point at the frame origin: v_O + ω × p
        u = (
            u[0] + w[1] * pf[2] - w[2] * pf[1],
            u[1] + w[2] * pf[0] - w[0] * pf[2],
            u[2] + w[0] * pf[1] - w[1] * pf[0],
        )
    if ref == LOCAL:
        u = ops.rot_t_vec(Rf, u)
        w = ops.rot_t_vec(Rf, w)
    out[0, col], out[1, col], out[2, col] = u
    out[3, col], out[4, col], out[5, col] = w


@kernel(
    "int64(int64[:, ::1], float64[:, ::1], float64[::1], float64[::1], int64, float64[::1], int64, "
    "float64[:, ::1], float64[:, ::1])"
)
def jacobian_kernel(ib, ws, q, v, body, fp, ref, J, dJ):
    """Frame Jacobian J (6 × nv) of the frame attached to ``body`` at ``fp`` = (R (9), p (3)); if v is
    non-empty, also its time derivative dJ."""
    ib, ws, q, v, body, fp, ref, J, dJ = borrowed((ib, ws, q, v, body, fp, ref, J, dJ))
    st = check_configuration(ib, q)
    if st == 0 and v.shape[0] != 0:
        st = check_vector(v, ib[0, L.I0_NV], 1)
    if st != 0:
        return st
    if not acquire(ib):
        return DATA_IN_USE * STATUS_BASE
    placements_core(ib, ws, q)
    with_dj = v.shape[0] != 0
    if with_dj:
        velocities_core(ib, ws, v)
    # world placement of the frame
    fR = (fp[0], fp[1], fp[2], fp[3], fp[4], fp[5], fp[6], fp[7], fp[8])
    fpp = (fp[9], fp[10], fp[11])
    oRb = ops.load9(ws, body, L.W_OR)
    t = ops.rot_vec(oRb, fpp)
    Rf = ops.rot_mul(oRb, fR)
    pf = (ws[body, L.W_OP] + t[0], ws[body, L.W_OP + 1] + t[1], ws[body, L.W_OP + 2] + t[2])
    J[:, :] = 0.0
    zero = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    vf = zero  # frame velocity in frame coordinates
    pdot = (0.0, 0.0, 0.0)  # world velocity of the frame origin
    if with_dj:
        dJ[:, :] = 0.0
        vb = ops.load6(ws, body, L.W_V)
        vf = ops.motion_to_child(fR, fpp, vb)
        ovf = ops.motion_to_parent(oRb, ops.load3(ws, body, L.W_OP), vb)
        pdot = (
            ovf[3] + ovf[1] * pf[2] - ovf[2] * pf[1],
            ovf[4] + ovf[2] * pf[0] - ovf[0] * pf[2],
            ovf[5] + ovf[0] * pf[1] - ovf[1] * pf[0],
        )
    j = body
    while j > 0:
        oR = ops.load9(ws, j, L.W_OR)
        op = ops.load3(ws, j, L.W_OP)
        ov = ops.motion_to_parent(oR, op, ops.load6(ws, j, L.W_V)) if with_dj else zero
        for k in range(ib[j, L.I_NV]):
            c = ib[j, L.I_IV] + k
            col = ops.motion_to_parent(oR, op, s_column(ib, ws, j, k))  # world Jacobian column [ω; v_O]
            write_column(J, c, col, ref, Rf, pf)
            if with_dj:
                dcol = ops.cross_motion(ov, col)  # d/dt (ᵒX_j S_j) = ov_j × (ᵒX_j S_j)
                if ref == LOCAL:
                    # d/dt (ᶠX_o col) = ᶠX_o dcol − v_f × (ᶠX_o col)
                    dl = ops.sub6(
                        ops.motion_to_child(Rf, pf, dcol),
                        ops.cross_motion(vf, ops.motion_to_child(Rf, pf, col)),
                    )
                    dJ[0, c], dJ[1, c], dJ[2, c] = dl[3], dl[4], dl[5]
                    dJ[3, c], dJ[4, c], dJ[5, c] = dl[0], dl[1], dl[2]
                else:
                    if ref == LOCAL_WORLD_ALIGNED:
                        # d/dt (v_O + ω × p_f) = dv_O + dω × p_f + ω × ṗ_f
                        wx = ops.cross3((col[0], col[1], col[2]), pdot)
                        dcol = (dcol[0], dcol[1], dcol[2], dcol[3] + wx[0], dcol[4] + wx[1], dcol[5] + wx[2])
                    write_column(dJ, c, dcol, ref, Rf, pf)
        j = ib[j, L.I_PARENT]
    release(ib)
    return 0
