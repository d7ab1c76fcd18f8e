"""Forward kinematics, frame placements, velocities and accelerations, frame Jacobians and their time
variation: the public functions (kernels: :mod:`loopdyn.algorithms.kinematics` for trees,
:mod:`loopdyn.algorithms.cluster_kinematics` for models with loops).

Reference frames for Jacobians follow Pinocchio:

* ``"local"`` — the frame's own axes and origin;
* ``"world"`` — the world axes, velocities measured at the world origin;
* ``"local_world_aligned"`` — the world axes, velocities measured at the frame origin.

Jacobian rows are ``[linear; angular]`` (Pinocchio's layout), columns follow ``v``.
"""

from __future__ import annotations

import numpy as np

from .algorithms import cluster_kinematics
from .algorithms import kinematics as tree
from .algorithms.call import CLUSTER_FIRST, CONFIGURATION, TANGENT, KernelArgs, run
from .algorithms.kinematics import LOCAL, LOCAL_WORLD_ALIGNED, WORLD
from .algorithms.validation import check_data, require_tree
from .constraint_rows import Constraint, jacobian, prepare
from .errors import InputError, ShapeError
from .model import layout as L

_REFERENCES = {"local": LOCAL, "world": WORLD, "local_world_aligned": LOCAL_WORLD_ALIGNED}
_QVA = (("q", CONFIGURATION), ("v", TANGENT), ("a", TANGENT))
_TREE_FK = KernelArgs(2, *_QVA)
_CLUSTER_FK = KernelArgs(CLUSTER_FIRST, *_QVA)
_TREE_JACOBIAN = KernelArgs(2, ("q", CONFIGURATION), ("v", TANGENT))


def forward_kinematics(model, data, q, v=None, a=None) -> None:
    """Placements (``data.oMi``), and if given velocities (``data.v``) and accelerations
    (``data.a``, gravity excluded) of every body. For a model with loops, ``q``, ``v``, ``a`` are the
    cluster state (independent velocities and accelerations)."""
    if data.source_key is not model._key:
        check_data(model, data)
    if a is not None and v is None:
        raise InputError("forward_kinematics: accelerations need velocities (pass v)")
    _reject_empty(data, v, "v")
    _reject_empty(data, a, "a")
    e = data.empty
    if model.has_constraints:  # the cluster kinematics want velocities: zero when not given
        vv = np.zeros(data.nv) if v is None else v
        run(
            cluster_kinematics.c_fk_kernel,
            model,
            _CLUSTER_FK,
            (*data.cluster_arrays, q, vv, e if a is None else a),
        )
        cluster_kinematics.placements_from_parents(data.ib, data.ws)  # world placements from the parents'
        return
    run(tree.fk_kernel, model, _TREE_FK, (data.ib, data.ws, q, e if v is None else v, e if a is None else a))


def frame_placement(model, data, frame) -> np.ndarray:
    """4×4 world placement of ``frame`` (name or index) from the last :func:`forward_kinematics`."""
    fid = model.frame_index(frame)
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
    if data.source_key is not model._key:
        check_data(model, data)
    ref = _reference(reference)
    _reject_empty(data, v, "v")
    fid = model.frame_index(frame)
    J = np.empty((6, data.nv))
    dJ = np.empty((6, data.nv)) if v is not None else np.empty((0, 0))
    vv = data.empty if v is None else v
    args = (data.ib, data.ws, q, vv, int(data.frame_body[fid]), data.frame_placement[fid], ref, J, dJ)
    run(tree.jacobian_kernel, model, _TREE_JACOBIAN, args)
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
    if data.source_key is not model._key:
        check_data(model, data)
    ref = _reference(reference)
    fid = model.frame_index(frame)
    J = jacobian(model, data, q, prepare(model, [Constraint(model.frames[fid].name, "6d")]))
    if ref == LOCAL:
        return J
    name = model.frames[fid].name
    cluster_kinematics.placements_from_parents(
        data.ib, data.ws
    )  # world placements from the kernel's parent placements
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
    require_tree(model, "frame_jacobian_time_variation")
    return _jacobians(model, data, q, v, frame, reference)[1]


def _frame_motion(model, data, frame, reference: str, column: int) -> np.ndarray:
    """A body motion (velocity or acceleration, from the last forward_kinematics) seen from
    ``frame`` in ``reference``, rows [linear; angular]."""
    ref = _reference(reference)
    fid = model.frame_index(frame)
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
