"""Inverse dynamics by the recursive Newton–Euler algorithm (RNEA; Featherstone, RBDA Table 5.1).

``τ = rnea(q, v, a)`` solves ``τ = M(q) a + C(q, v) v + g(q) − Σ Jᵢᵀ fᵢ`` in O(n), where M includes
the joints' armature (``M + diag(armature)``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..model import layout as L
from ..spatial import ops
from .common import (
    as_float_vector,
    as_force_array,
    check_configuration,
    check_forces,
    check_vector,
    external_force,
    gravity_seed,
    jcalc,
    kernel,
    raise_for_status,
    s_mul,
    st_mul,
    velocity_pass,
)
from .validation import check_data


@njit(cache=True)
def rnea_core(ib, ws, q, v, a, fext, tau, with_gravity):
    """RNEA on validated inputs; writes τ into ``tau``. ``fext`` may be empty (no external forces)."""
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


@kernel(
    "int64(int64[:, ::1], float64[:, ::1], float64[::1], float64[::1], float64[::1], float64[:, ::1], "
    "float64[::1], boolean)"
)
def rnea_kernel(ib, ws, q, v, a, fext, tau, with_gravity):
    st = validate_qva(ib, q, v, a, fext)
    if st != 0:
        return st
    rnea_core(ib, ws, q, v, a, fext, tau, with_gravity)
    return 0


def _rnea_slow(model, data, q, v, a, fext, out, with_gravity, names):
    """Coerce arguments with clear errors, then run the kernel (called when the fast path's types fail)."""
    q = as_float_vector(q, names[0])
    v = as_float_vector(v, names[1])
    a = as_float_vector(a, names[2])
    fext = data.no_forces if fext is None else as_force_array(fext, model.njoints)
    st = rnea_kernel(data.ib, data.ws, q, v, a, fext, out, with_gravity)
    if st:
        raise_for_status(model, st, names + ("f_ext",), (model.nq, model.nv, model.nv))
    return out


def rnea(model, data, q, v, a, f_ext=None) -> np.ndarray:
    """Inverse dynamics: the joint forces ``τ`` that produce accelerations ``a`` at state ``(q, v)``.

    Parameters
    ----------
    model, data:
        A :class:`~loopdyn.Model` and a :class:`~loopdyn.model.data.Data` created by it.
    q, v, a:
        Configuration (nq), velocity (nv) and acceleration (nv), Pinocchio's layout.
    f_ext:
        Optional external forces, array (njoints, 6): row i is the spatial force ``[force; torque]``
        applied to body i, expressed in body i's frame; row 0 (universe) is ignored.

    Returns
    -------
    numpy.ndarray
        ``τ`` (nv), a new array.
    """
    if data.model_key is not model._key:
        if model.has_constraints:  # a model with loops: C-RNEA
            from .cluster_dynamics import cluster_rnea

            return cluster_rnea(model, data, q, v, a, f_ext)
        check_data(model, data)
    out = np.empty(data.nv)
    try:
        st = rnea_kernel(data.ib, data.ws, q, v, a, data.no_forces if f_ext is None else f_ext, out, True)
    except TypeError:
        return _rnea_slow(model, data, q, v, a, f_ext, out, True, ("q", "v", "a"))
    if st:
        raise_for_status(model, st, ("q", "v", "a", "f_ext"), (model.nq, model.nv, model.nv))
    return out


def nonlinear_effects(model, data, q, v) -> np.ndarray:
    """``C(q, v) v + g(q)``: the joint forces needed for zero acceleration (Pinocchio's ``nle``); for a
    model with loops the independent-coordinate bias ``Gᵀ(C_span + H_span g)``."""
    if data.model_key is not model._key:
        if model.has_constraints:
            from .cluster_dynamics import cluster_rnea

            return cluster_rnea(model, data, q, v, np.zeros(model.nv))
        check_data(model, data)
    out = np.empty(data.nv)
    zero = np.zeros(data.nv)
    try:
        st = rnea_kernel(data.ib, data.ws, q, v, zero, data.no_forces, out, True)
    except TypeError:
        return _rnea_slow(model, data, q, v, zero, None, out, True, ("q", "v", "a"))
    if st:
        raise_for_status(model, st, ("q", "v", "a", "f_ext"), (model.nq, model.nv, model.nv))
    return out


def gravity(model, data, q) -> np.ndarray:
    """``g(q)``: the joint forces that hold the robot still against gravity
    (Pinocchio's ``computeGeneralizedGravity``)."""
    if data.model_key is not model._key:
        if model.has_constraints:
            from .cluster_dynamics import cluster_rnea

            return cluster_rnea(model, data, q, np.zeros(model.nv), np.zeros(model.nv))
        check_data(model, data)
    out = np.empty(data.nv)
    zero = np.zeros(data.nv)
    try:
        st = rnea_kernel(data.ib, data.ws, q, zero, zero, data.no_forces, out, True)
    except TypeError:
        return _rnea_slow(model, data, q, zero, zero, None, out, True, ("q", "v", "a"))
    if st:
        raise_for_status(model, st, ("q", "v", "a", "f_ext"), (model.nq, model.nv, model.nv))
    return out
