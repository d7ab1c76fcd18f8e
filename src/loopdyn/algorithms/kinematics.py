"""Forward kinematics, frame placements, frame Jacobians and their time variation.

Reference frames for Jacobians follow Pinocchio:

* ``"local"`` — the frame's own axes and origin;
* ``"world"`` — the world axes, velocities measured at the world origin;
* ``"local_world_aligned"`` — the world axes, velocities measured at the frame origin.

Jacobian rows are ``[linear; angular]`` (Pinocchio's layout), columns follow ``v``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..errors import InputError, ShapeError
from ..model import layout as L
from ..spatial import ops
from .common import (
    as_float_vector,
    check_configuration,
    check_vector,
    jcalc,
    kernel,
    raise_for_status,
    s_column,
    s_mul,
    velocity_pass,
)
from .validation import check_data

LOCAL = 0
WORLD = 1
LOCAL_WORLD_ALIGNED = 2
_REFERENCES = {"local": LOCAL, "world": WORLD, "local_world_aligned": LOCAL_WORLD_ALIGNED}


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
    st = check_configuration(ib, q)
    nv = ib[0, L.I0_NV]
    if st == 0 and v.shape[0] != 0:
        st = check_vector(v, nv, 1)
    if st == 0 and a.shape[0] != 0:
        st = check_vector(a, nv, 2)
    if st != 0:
        return st
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
    return 0


@njit(cache=True, inline="always")
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
    st = check_configuration(ib, q)
    if st == 0 and v.shape[0] != 0:
        st = check_vector(v, ib[0, L.I0_NV], 1)
    if st != 0:
        return st
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
    return 0


# ---------------------------------------------------------------------------------------------
# Python API
def forward_kinematics(model, data, q, v=None, a=None) -> None:
    """Placements (``data.oMi``), and if given velocities (``data.v``) and accelerations
    (``data.a``, gravity excluded) of every body. For a model with loops, ``q``, ``v``, ``a`` are the
    cluster state (independent velocities and accelerations)."""
    if data.model_key is not model._key:
        if model.has_constraints:
            from .cluster_kinematics import cluster_forward_kinematics

            return cluster_forward_kinematics(model, data, q, v, a)
        check_data(model, data)
    if a is not None and v is None:
        raise InputError("forward_kinematics: accelerations need velocities (pass v)")
    _reject_empty(data, v, "v")
    _reject_empty(data, a, "a")
    e = data.empty
    args = [q, e if v is None else v, e if a is None else a]
    try:
        st = fk_kernel(data.ib, data.ws, *args)
    except TypeError:
        args = [as_float_vector(x, n) for x, n in zip(args, ("q", "v", "a"), strict=True)]
        st = fk_kernel(data.ib, data.ws, *args)
    if st:
        raise_for_status(model, st, ("q", "v", "a"), (model.nq, model.nv, model.nv))


def frame_placement(model, data, frame) -> np.ndarray:
    """4×4 world placement of ``frame`` (name or index) from the last :func:`forward_kinematics`."""
    fid = model._frame_index(frame)
    b = int(data.frame_body[fid])
    fp = data.frame_placement[fid]
    oR = data.ws[b, L.W_OR : L.W_OR + 9].reshape(3, 3)
    op = data.ws[b, L.W_OP : L.W_OP + 3]
    T = np.eye(4)
    T[:3, :3] = oR @ fp[:9].reshape(3, 3)
    T[:3, 3] = op + oR @ fp[9:]
    return T


def update_frame_placements(model, data) -> np.ndarray:
    """(nframes, 4, 4) world placements of all frames from the last :func:`forward_kinematics`."""
    oR = data.ws[data.frame_body, L.W_OR : L.W_OR + 9].reshape(-1, 3, 3)
    op = data.ws[data.frame_body, L.W_OP : L.W_OP + 3]
    fR = data.frame_placement[:, :9].reshape(-1, 3, 3)
    out = np.zeros((len(data.frame_body), 4, 4))
    out[:, :3, :3] = oR @ fR
    out[:, :3, 3] = op + np.einsum("kij,kj->ki", oR, data.frame_placement[:, 9:])
    out[:, 3, 3] = 1.0
    return out


def _reject_empty(data, x, name: str) -> None:
    # the kernels read an empty vector as 'not given'; an empty vector passed by the user is an error
    if x is not None and data.nv > 0 and np.size(x) == 0:
        raise ShapeError(f"{name} must be a 1-D array of size {data.nv}, got an empty array")


def _reference(reference: str) -> int:
    try:
        return _REFERENCES[reference]
    except KeyError:
        raise InputError(f"reference must be one of {sorted(_REFERENCES)}, got {reference!r}") from None


def _jacobians(model, data, q, v, frame, reference):
    if data.model_key is not model._key:
        check_data(model, data)
    ref = _reference(reference)
    _reject_empty(data, v, "v")
    fid = model._frame_index(frame)
    J = np.empty((6, data.nv))
    dJ = np.empty((6, data.nv)) if v is not None else np.empty((0, 0))
    vv = data.empty if v is None else v
    args = (data.ib, data.ws, q, vv, int(data.frame_body[fid]), data.frame_placement[fid], ref, J, dJ)
    try:
        st = jacobian_kernel(*args)
    except TypeError:
        q2 = as_float_vector(q, "q")
        v2 = vv if v is None else as_float_vector(v, "v")
        st = jacobian_kernel(data.ib, data.ws, q2, v2, *args[4:])
    if st:
        raise_for_status(model, st, ("q", "v"), (model.nq, model.nv))
    return J, dJ


def frame_jacobian(model, data, q, frame, reference: str = "local") -> np.ndarray:
    """The 6 × nv Jacobian of ``frame`` (name or index) at ``q``, rows ``[linear; angular]``, in
    ``reference`` ∈ {"local", "world", "local_world_aligned"} (Pinocchio's meanings).

    For a model with loops, ``q`` is its cluster state and the columns are its independent
    velocities (``J_span G``, by the cluster kinematics)."""
    if model.has_constraints:
        return _cluster_frame_jacobian(model, data, q, frame, reference)
    return _jacobians(model, data, q, None, frame, reference)[0]


def _cluster_frame_jacobian(model, data, q, frame, reference):
    from .delassus import Constraint, constraint_jacobian

    ref = _reference(reference)
    name = model.frames[model._frame_index(frame)].name
    J = constraint_jacobian(model, data, q, [Constraint(name, "6d")])
    if ref == LOCAL:
        return J
    from .cluster_kinematics import placements_from_parents

    placements_from_parents(data.ib, data.ws)  # world placements from the kernel's parent placements
    T = frame_placement(model, data, name)
    R, p = T[:3, :3], T[:3, 3]
    out = np.empty_like(J)
    out[3:] = R @ J[3:]
    out[:3] = R @ J[:3]
    if ref == WORLD:  # the velocity of the point at the world origin: v_p + p × ω
        out[:3] += np.cross(p, out[3:].T).T
    return out


def frame_jacobian_time_variation(model, data, q, v, frame, reference: str = "local") -> np.ndarray:
    """The time derivative ``dJ/dt`` of :func:`frame_jacobian` (same ``reference``) when moving with
    velocity ``v`` — Pinocchio's ``getFrameJacobianTimeVariation``. ``J̇ v`` is the bias term of the
    frame's spatial acceleration ``J a + J̇ v`` in that reference."""
    return _jacobians(model, data, q, v, frame, reference)[1]


def _frame_motion(model, data, frame, reference: str, column: int) -> np.ndarray:
    """A body motion (velocity or acceleration, from the last forward_kinematics) seen from
    ``frame`` in ``reference``, rows [linear; angular]."""
    ref = _reference(reference)
    fid = model._frame_index(frame)
    b = int(data.frame_body[fid])
    m = data.ws[b, column : column + 6]
    w_b, u_b = m[:3], m[3:]
    fR = data.frame_placement[fid, :9].reshape(3, 3)
    fp = data.frame_placement[fid, 9:]
    # at the frame origin, body axes
    u_f = u_b + np.cross(w_b, fp)
    if ref == LOCAL:
        return np.concatenate([fR.T @ u_f, fR.T @ w_b])
    oR = data.ws[b, L.W_OR : L.W_OR + 9].reshape(3, 3)
    w_o, u_fo = oR @ w_b, oR @ u_f
    if ref == LOCAL_WORLD_ALIGNED:
        return np.concatenate([u_fo, w_o])
    p_f = data.ws[b, L.W_OP : L.W_OP + 3] + oR @ fp  # WORLD: measured at the world origin
    return np.concatenate([u_fo - np.cross(w_o, p_f), w_o])


def frame_velocity(model, data, frame, reference: str = "local") -> np.ndarray:
    """Spatial velocity ``[linear; angular]`` of ``frame`` in ``reference``, from the last
    :func:`forward_kinematics` with ``v`` (Pinocchio's ``getFrameVelocity``)."""
    return _frame_motion(model, data, frame, reference, L.W_V)


def frame_acceleration(model, data, frame, reference: str = "local") -> np.ndarray:
    """Spatial acceleration ``[linear; angular]`` of ``frame`` in ``reference``, from the last
    :func:`forward_kinematics` with ``v`` and ``a`` (Pinocchio's ``getFrameAcceleration``)."""
    return _frame_motion(model, data, frame, reference, L.W_A)


def frame_classical_acceleration(model, data, frame, reference: str = "local") -> np.ndarray:
    """Classical acceleration ``[linear; angular]`` of ``frame``'s origin — the second time derivative
    of its position, ``a_spatial + ω × v`` — in ``reference`` (Pinocchio's
    ``getFrameClassicalAcceleration``)."""
    acc = frame_acceleration(model, data, frame, reference)
    vel = frame_velocity(model, data, frame, reference)
    acc[:3] += np.cross(vel[3:], vel[:3])
    return acc
