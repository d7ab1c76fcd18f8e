"""Inverse dynamics, forward dynamics and the mass matrix: the public functions.

Each function checks that ``data`` belongs to ``model``, chooses the kernel — the tree algorithm
(:mod:`loopdyn.algorithms.rnea`, :mod:`~loopdyn.algorithms.aba`, :mod:`~loopdyn.algorithms.crba`) for
a kinematic tree, the cluster algorithm (:mod:`loopdyn.algorithms.cluster_dynamics`: C-RNEA, C-ABA,
GᵀH_spanG) for a model with loops or couplings — and runs it through
:func:`loopdyn.algorithms.call.run` (type coercion on a mismatch, status → exception).
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from .algorithms import aba as tree_aba
from .algorithms import cluster_dynamics as cluster
from .algorithms import crba as tree_crba
from .algorithms import rnea as tree_rnea
from .algorithms.call import CLUSTER_FIRST, CONFIGURATION, FORCES, TANGENT, KernelArgs, run
from .algorithms.validation import check_data

# the user arguments of the kernels: tree kernels take (ib, ws, ...), cluster kernels the 5 arrays of
# Data.cluster_arrays first
_STATE = (("q", CONFIGURATION), ("v", TANGENT), ("a", TANGENT), ("f_ext", FORCES))
_FORWARD = (("q", CONFIGURATION), ("v", TANGENT), ("tau", TANGENT), ("f_ext", FORCES))
TREE_STATE = KernelArgs(2, *_STATE)
TREE_FORWARD = KernelArgs(2, *_FORWARD)
TREE_Q = KernelArgs(2, ("q", CONFIGURATION))
CLUSTER_STATE = KernelArgs(CLUSTER_FIRST, *_STATE)
CLUSTER_FORWARD = KernelArgs(CLUSTER_FIRST, *_FORWARD)
CLUSTER_Q = KernelArgs(CLUSTER_FIRST, ("q", CONFIGURATION))


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
    fext = data.no_forces if f_ext is None else f_ext
    if model.has_constraints:
        run(cluster.c_rnea_kernel, model, CLUSTER_STATE, (*data.cluster_arrays, q, v, a, fext, out))
    else:
        run(tree_rnea.rnea_kernel, model, TREE_STATE, (data.ib, data.ws, q, v, a, fext, out, True))
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
    fext = data.no_forces if f_ext is None else f_ext
    if model.has_constraints:
        run(cluster.c_aba_kernel, model, CLUSTER_FORWARD, (*data.cluster_arrays, q, v, tau, fext, out))
    else:
        run(tree_aba.aba_kernel, model, TREE_FORWARD, (data.ib, data.ws, q, v, tau, fext, out))
    return out


def crba(model, data, q) -> np.ndarray:
    """The joint-space mass matrix ``M(q)`` (nv × nv, full and symmetric; a new array), armature
    included; for a model with loops, in independent coordinates: ``H = Gᵀ H_span G``."""
    if data.source_key is not model._key:
        check_data(model, data)
    out = np.empty((data.nv, data.nv))
    if model.has_constraints:
        run(cluster.c_crba_kernel, model, CLUSTER_Q, (*data.cluster_arrays, q, out))
    else:
        run(tree_crba.crba_kernel, model, TREE_Q, (data.ib, data.ws, q, out))
    return out


def minverse(model, data, q) -> np.ndarray:
    """The inverse mass matrix ``M(q)⁻¹`` (nv × nv, full and symmetric), by the sparse LᵀL
    factorisation of M, O(n d²) for a tree of depth d (for a model with loops: Cholesky of H)."""
    if model.has_constraints:
        return cho_solve(cho_factor(crba(model, data, q)), np.eye(model.nv))
    if data.source_key is not model._key:
        check_data(model, data)
    out = np.empty((data.nv, data.nv))
    run(tree_crba.minverse_kernel, model, TREE_Q, (data.ib, data.ws, q, out))
    return out
