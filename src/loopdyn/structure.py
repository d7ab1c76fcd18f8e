"""The structure of the equations of motion: the Coriolis matrix, the rate of the mass matrix and the
Christoffel symbols (loopdyn issue #31, item 4).

``M(q) a + C(q, v) v + g(q) = τ`` with a factorisation C of the velocity-product forces chosen so that
``Ṁ − 2C`` is skew-symmetric (the property passivity-based controllers and observers use). One kernel
call per user call (:mod:`loopdyn.algorithms.coriolis`, where the derivation is):

* a kinematic tree: the recursive O(n·d) algorithm in the world frame with Echeandia & Wensing's
  per-body factorisation — the same C as Pinocchio's ``computeCoriolisMatrix``;
* a model with loops, in independent coordinates y (spec §4): ``C_y = Gᵀ (C_s G + M_s Ġ)`` and
  ``Ḣ = Gᵀ Ṁ_s G + Ġᵀ M_s G + Gᵀ M_s Ġ`` from the spanning tree's C_s, M_s, Ṁ_s, with Ġ of an implicit
  loop from its compiled constraint program (G is constant on explicit clusters: gears, belts).

Every function checks its inputs as :func:`loopdyn.rnea` does and raises the same
:mod:`loopdyn.errors` exceptions (naming the argument, the joint or the cluster).
"""

from __future__ import annotations

import numpy as np

from .algorithms import coriolis as kernels
from .algorithms.call import CONFIGURATION, TANGENT, KernelArgs, missing_code_loaded
from .algorithms.status import raise_for_status
from .algorithms.validation import check_data

__all__ = ["christoffel", "coriolis_matrix", "mass_matrix_derivative"]

STATE = KernelArgs(2, ("q", CONFIGURATION), ("v", TANGENT))


def _run(model, data, q, v, what, out) -> np.ndarray:
    """The kernel call, written out as in :mod:`loopdyn.dynamics` (a Python frame less: a tenth of a
    small robot's call): on a type mismatch the user arguments are coerced and the call repeated; a
    status becomes its exception."""
    if data.source_key is not model._key:
        check_data(model, data)
    m1, m2 = data.kernel_arrays
    if model.has_constraints:
        kern = kernels.c_coriolis_kernel
        if data.rates_pending:  # Ġ of the implicit loops: their native K̇ functions, once (the
            data.load_rate_programs()  # interpreted pass, if a cluster needs it, at its first call)
    else:
        kern = kernels.coriolis_kernel
    try:
        st = kern(m1, m2, q, v, out, what)
    except TypeError:  # a list, another dtype, a read-only or strided array: converted, run again
        st = kern(m1, m2, *STATE.coerce_user(model, (q, v)), out, what)
    if st:
        if missing_code_loaded(data, st):  # Ġ of the implicit loops, compiled at the first call
            return _run(model, data, q, v, what, out)
        raise_for_status(model, st, STATE.names)
    return out


def coriolis_matrix(model, data, q, v) -> np.ndarray:
    """The Coriolis matrix ``C(q, v)`` (nv × nv, a new array).

    ``C v + gravity(q) = nonlinear_effects(q, v)`` and ``Ṁ − 2C`` is skew-symmetric. On a tree, C is
    Pinocchio's (``computeCoriolisMatrix``; Echeandia & Wensing 2021). On a model with loops, in
    independent coordinates: ``C_y = Gᵀ (C_s G + M_s Ġ)`` (C_s, M_s of the spanning tree), with
    ``C_y ẏ + Gᵀ g_s = nonlinear_effects`` and ``Ḣ − 2 C_y`` skew.

    Parameters
    ----------
    model, data:
        A :class:`~loopdyn.Model` and a :class:`~loopdyn.Data` created by it.
    q, v:
        Configuration (nq) and velocity (nv), as :func:`loopdyn.rnea` (independent coordinates on a
        model with loops; positions on the loop).

    Raises
    ------
    loopdyn.errors.ShapeError, NonFiniteError, ConfigurationError, ...:
        For a bad ``q`` or ``v`` (the argument, element, joint or cluster is named).
    """
    return _run(model, data, q, v, kernels.CORIOLIS, np.empty((data.nv, data.nv)))


def mass_matrix_derivative(model, data, q, v) -> np.ndarray:
    """``Ṁ = dM/dt`` along the motion (q, v) (nv × nv, symmetric, a new array): on a tree
    ``Σ_i J̇_iᵀ I_i J_i + J_iᵀ İ_i J_i + J_iᵀ I_i J̇_i``; on a model with loops the rate of
    ``H = Gᵀ M_s G`` along the loop's motion, ``Ḣ = Gᵀ Ṁ_s G + Ġᵀ M_s G + Gᵀ M_s Ġ``. Arguments and
    errors as :func:`coriolis_matrix`. (Computed by its own recursion; it equals ``C + Cᵀ``.)"""
    return _run(model, data, q, v, kernels.MDOT, np.empty((data.nv, data.nv)))


def christoffel(model, data, q, symmetric: bool = False) -> np.ndarray:
    """The Christoffel symbols of the first kind of :func:`coriolis_matrix`'s factorisation:
    ``Γ`` (nv × nv × nv, a new array) with ``C(q, v) = Σ_k Γ[:, :, k] v_k``, i.e.
    ``Γ[i, j, k] = ∂C_ij/∂v_k`` (C is linear in v).

    The returned Γ is that of the Echeandia–Wensing factorisation (on loops, of ``Gᵀ(C_s G + M_s Ġ)``),
    the one that makes ``Ṁ − 2C`` skew. It is **not symmetric in its last two indices (j, k) in
    general**: with a free flyer or a ball joint (body-frame, tangent-space velocities) it is not.
    On fixed-base models of revolute and prismatic joints, and on models with loops of them (in the
    independent coordinates y), it is symmetric and equals the classical symbols of the first kind
    ``½ (∂M_ij/∂q_k + ∂M_ik/∂q_j − ∂M_jk/∂q_i)`` (the tests check both against differences of
    :func:`loopdyn.crba`).

    With ``symmetric=True``, ``½ (Γ[i, j, k] + Γ[i, k, j])`` instead: the same quadratic form
    ``Σ_jk Γ_ijk v_j v_k`` (so the same ``C(q, v) v``), symmetric in (j, k) on every model; with
    tangent-space velocities, ``Σ_k Γ_sym[:, :, k] v_k`` need not make ``Ṁ − 2C`` skew.

    Arguments and errors as :func:`coriolis_matrix` (no ``v``). One kernel call: nv Coriolis
    matrices at the unit velocities, O(nv · n · d).
    """
    nv = data.nv
    out = np.empty((nv, nv, nv))
    _run(model, data, q, np.zeros(0), kernels.CHRISTOFFEL, out.reshape(nv * nv, nv))
    if symmetric:
        out = 0.5 * (out + out.transpose(0, 2, 1))
    return out
