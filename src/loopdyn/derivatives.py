"""Analytical derivatives of the dynamics: the public functions.

:func:`rnea_derivatives` and :func:`aba_derivatives` follow Pinocchio's conventions
(``computeRNEADerivatives``, ``computeABADerivatives``):

* the derivative with respect to ``q`` is taken in the tangent space,
  ``∂f/∂q := ∂/∂δ f(loopdyn.integrate(model, q, δ))`` at δ = 0 (δ of size nv: for a free flyer the
  body-frame twist [linear; angular], for a ball joint the body-frame rotation vector);
* ``v`` and ``a`` (``tau``) are held fixed, and so are the external forces, in their body frames.

Kinematic trees only for now: each call is one run of a recursive O(n·d) kernel
(:mod:`loopdyn.algorithms.derivatives`, Carpentier & Mansard, RSS 2018). A model with loops raises
:class:`~loopdyn.errors.UnsupportedFeatureError`.
"""

from __future__ import annotations

import numpy as np

from .algorithms import derivatives as kernels
from .algorithms.call import CONFIGURATION, FORCES, TANGENT, KernelArgs, run
from .algorithms.validation import check_data
from .errors import UnsupportedFeatureError

STATE = KernelArgs(2, ("q", CONFIGURATION), ("v", TANGENT), ("a", TANGENT), ("f_ext", FORCES))
FORWARD = KernelArgs(2, ("q", CONFIGURATION), ("v", TANGENT), ("tau", TANGENT), ("f_ext", FORCES))


def _tree_only(model, name: str) -> None:
    if model.has_constraints:
        raise UnsupportedFeatureError(
            f"{name}: models with loops or coupled joints (clusters) are not supported yet; "
            "differentiate loopdyn.rnea / loopdyn.aba numerically along loopdyn.integrate meanwhile"
        )


def rnea_derivatives(model, data, q, v, a, f_ext=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Partial derivatives of inverse dynamics ``τ = rnea(q, v, a, f_ext)``.

    Parameters
    ----------
    model, data:
        A kinematic-tree :class:`~loopdyn.Model` and a :class:`~loopdyn.Data` created by it.
    q, v, a:
        Configuration (nq), velocity (nv), acceleration (nv).
    f_ext:
        Optional external forces (njoints, 6), rows ``[force; torque]`` in body frames (row 0
        ignored), as :func:`loopdyn.rnea`; held fixed in the body frames when q moves.

    Returns
    -------
    (dtau_dq, dtau_dv, dtau_da):
        Three new (nv, nv) arrays: ``∂τ/∂q`` in the tangent space (column j: the derivative along
        ``integrate(model, q, δ e_j)``), ``∂τ/∂v``, and ``∂τ/∂a = M(q)`` (full and symmetric,
        armature included) — Pinocchio's ``computeRNEADerivatives`` (whose M has the upper triangle
        only).

    Raises
    ------
    loopdyn.errors.ShapeError, NonFiniteError, ...:
        For bad ``q``, ``v``, ``a``, ``f_ext`` (the argument is named), as :func:`loopdyn.rnea`.
    loopdyn.errors.UnsupportedFeatureError:
        For a model with loops or couplings.
    """
    _tree_only(model, "rnea_derivatives")
    if data.source_key is not model._key:
        check_data(model, data)
    nv = data.nv
    dq, dv, M = np.empty((nv, nv)), np.empty((nv, nv)), np.empty((nv, nv))
    fext = data.no_forces if f_ext is None else f_ext
    run(kernels.rnea_derivatives_kernel, model, STATE, (data.ib, data.ws, q, v, a, fext, dq, dv, M))
    return dq, dv, M


def aba_derivatives(model, data, q, v, tau, f_ext=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Partial derivatives of forward dynamics ``q̈ = aba(q, v, tau, f_ext)``.

    ``q̈`` is computed by the ABA; then ``∂q̈/∂x = −M⁻¹ ∂τ/∂x`` at ``a = q̈`` (x = q, v) and
    ``∂q̈/∂τ = M⁻¹`` — M⁻¹ applied by the sparse LᵀL factorisation of M (RBDA Table 6.3) inside the
    same kernel call. Arguments as :func:`rnea_derivatives` with ``tau`` (nv) in place of ``a``.

    Returns
    -------
    (dddq_dq, dddq_dv, dddq_dtau):
        Three new (nv, nv) arrays; ``dddq_dtau = M(q)⁻¹`` is full and symmetric (Pinocchio's
        ``computeABADerivatives`` fills its upper triangle only).

    Raises
    ------
    As :func:`rnea_derivatives`, and :class:`~loopdyn.errors.SingularMassMatrixError` (as
    :func:`loopdyn.aba`) when a joint's articulated inertia is singular.
    """
    _tree_only(model, "aba_derivatives")
    if data.source_key is not model._key:
        check_data(model, data)
    nv = data.nv
    ddq = np.empty(nv)
    dq, dv, minv, scratch = (np.empty((nv, nv)) for _ in range(4))
    fext = data.no_forces if f_ext is None else f_ext
    run(
        kernels.aba_derivatives_kernel,
        model,
        FORWARD,
        (data.ib, data.ws, q, v, tau, fext, ddq, dq, dv, minv, scratch),
    )
    return dq, dv, minv
