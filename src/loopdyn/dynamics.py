"""Inverse dynamics, forward dynamics and the mass matrix: the public functions.

Each function checks that ``data`` belongs to ``model``, chooses the kernel — the tree algorithm
(:mod:`loopdyn.algorithms.rnea`, :mod:`~loopdyn.algorithms.aba`, :mod:`~loopdyn.algorithms.crba`) for
a kinematic tree, the cluster algorithm (:mod:`loopdyn.algorithms.cluster_dynamics`: C-RNEA, C-ABA,
GᵀH_spanG) for a model with loops or couplings — and runs it the way
:func:`loopdyn.algorithms.call.run` does (type coercion on a mismatch, status → exception), written
out in the function: these are called every control cycle, and a Python frame less is ~0.1 µs of a
1–2 µs call on a small robot. Without ``f_ext`` they call the kernels that take no force argument.
"""

from __future__ import annotations

import numpy as np

from .algorithms import aba as tree_aba
from .algorithms import cluster_dynamics as cluster
from .algorithms import crba as tree_crba
from .algorithms import rnea as tree_rnea
from .algorithms.call import CONFIGURATION, FORCES, TANGENT, KernelArgs, run
from .algorithms.status import raise_for_status
from .algorithms.validation import check_data

# the user arguments of the kernels, after the two model arrays of Data.kernel_arrays ((ib, ws) of a
# tree, (ints, floats) of a model with loops); the kernels without f_ext take the first three
STATE = KernelArgs(2, ("q", CONFIGURATION), ("v", TANGENT), ("a", TANGENT), ("f_ext", FORCES))
FORWARD = KernelArgs(2, ("q", CONFIGURATION), ("v", TANGENT), ("tau", TANGENT), ("f_ext", FORCES))
CONFIG = KernelArgs(2, ("q", CONFIGURATION))


def rnea(model, data, q, v, a, f_ext=None) -> np.ndarray:
    """Inverse dynamics: the joint forces ``τ`` that produce accelerations ``a`` at state ``(q, v)``.

    ``τ = M(q) a + C(q, v) v + g(q) − Σ Jᵢᵀ fᵢ`` (armature included in M). On a model with loops,
    C-RNEA in independent coordinates (Chignoli et al. 2024, eq. 29).

    Parameters
    ----------
    model, data:
        A :class:`~loopdyn.Model` and a :class:`~loopdyn.Data` created by it.
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
    if data.source_key is not model._key:
        check_data(model, data)
    out = np.empty(data.nv)
    m1, m2 = data.kernel_arrays
    if f_ext is None:
        kern = cluster.c_rnea_kernel if model.has_constraints else tree_rnea.rnea_kernel
        try:
            st = kern(m1, m2, q, v, a, out)
        except TypeError:  # a list, another dtype, a read-only or strided array: converted, run again
            st = kern(m1, m2, *STATE.coerce_user(model, (q, v, a)), out)
    else:
        kern = cluster.c_rnea_fext_kernel if model.has_constraints else tree_rnea.rnea_fext_kernel
        try:
            st = kern(m1, m2, q, v, a, f_ext, out)
        except TypeError:
            st = kern(m1, m2, *STATE.coerce_user(model, (q, v, a, f_ext)), out)
    if st:
        raise_for_status(model, st, STATE.names)
    return out


def nonlinear_effects(model, data, q, v) -> np.ndarray:
    """``C(q, v) v + g(q)``: the joint forces needed for zero acceleration (Pinocchio's ``nle``); for a
    model with loops the independent-coordinate bias ``Gᵀ(C_span + H_span g)``."""
    return rnea(model, data, q, v, np.zeros(model.nv))


def gravity(model, data, q) -> np.ndarray:
    """``g(q)``: the joint forces that hold the robot still against gravity
    (Pinocchio's ``computeGeneralizedGravity``)."""
    zero = np.zeros(model.nv)
    return rnea(model, data, q, zero, zero)


def aba(model, data, q, v, tau, f_ext=None) -> np.ndarray:
    """Forward dynamics: the accelerations produced by joint forces ``tau`` at state ``(q, v)``.

    The articulated-body algorithm (RBDA Table 7.1) on a tree, C-ABA (Chignoli et al. 2024 §VII) on a
    model with loops. Arguments as :func:`rnea` (with ``tau`` in place of ``a``). Returns ``a`` (nv),
    a new array.
    """
    if data.source_key is not model._key:
        check_data(model, data)
    out = np.empty(data.nv)
    m1, m2 = data.kernel_arrays
    if f_ext is None:
        kern = cluster.c_aba_kernel if model.has_constraints else tree_aba.aba_kernel
        try:
            st = kern(m1, m2, q, v, tau, out)
        except TypeError:  # as in rnea
            st = kern(m1, m2, *FORWARD.coerce_user(model, (q, v, tau)), out)
    else:
        kern = cluster.c_aba_fext_kernel if model.has_constraints else tree_aba.aba_fext_kernel
        try:
            st = kern(m1, m2, q, v, tau, f_ext, out)
        except TypeError:
            st = kern(m1, m2, *FORWARD.coerce_user(model, (q, v, tau, f_ext)), out)
    if st:
        raise_for_status(model, st, FORWARD.names)
    return out


def crba(model, data, q) -> np.ndarray:
    """The joint-space mass matrix ``M(q)`` (nv × nv, full and symmetric; a new array), armature
    included; for a model with loops, in independent coordinates: ``H = Gᵀ H_span G``."""
    if data.source_key is not model._key:
        check_data(model, data)
    out = np.empty((data.nv, data.nv))
    m1, m2 = data.kernel_arrays
    kern = cluster.c_crba_kernel if model.has_constraints else tree_crba.crba_kernel
    try:
        st = kern(m1, m2, q, out)
    except TypeError:  # as in rnea
        st = kern(m1, m2, *CONFIG.coerce_user(model, (q,)), out)
    if st:
        raise_for_status(model, st, CONFIG.names)
    return out


def minverse(model, data, q) -> np.ndarray:
    """The inverse mass matrix ``M(q)⁻¹`` (nv × nv, full and symmetric), by the sparse LᵀL
    factorisation of M, O(n d²) for a tree of depth d (for a model with loops: Cholesky of H)."""
    if model.has_constraints:
        from scipy.linalg import cho_factor, cho_solve

        return cho_solve(cho_factor(crba(model, data, q)), np.eye(model.nv))
    if data.source_key is not model._key:
        check_data(model, data)
    out = np.empty((data.nv, data.nv))
    run(tree_crba.minverse_kernel, model, CONFIG, (data.ib, data.ws, q, out))
    return out
