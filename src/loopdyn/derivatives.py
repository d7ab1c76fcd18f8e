"""Analytical derivatives of the dynamics: the public functions.

:func:`rnea_derivatives` and :func:`aba_derivatives` follow Pinocchio's conventions
(``computeRNEADerivatives``, ``computeABADerivatives``):

* the derivative with respect to ``q`` is taken in the tangent space,
  ``∂f/∂q := ∂/∂δ f(loopdyn.integrate(model, q, δ))`` at δ = 0 (δ of size nv: for a free flyer the
  body-frame twist [linear; angular], for a ball joint the body-frame rotation vector);
* ``v`` and ``a`` (``tau``) are held fixed, and so are the external forces, in their body frames.

Each call is one kernel call (:mod:`loopdyn.algorithms.derivatives`):

* a kinematic tree: the recursive O(n·d) world-frame algorithm of Carpentier & Mansard (RSS 2018);
* a model whose clusters are all explicit (constant G: geared rotors, belts, gear trains — Mini
  Cheetah, the MIT Humanoid, ...): in independent coordinates y, exact, as ``Gᵀ (∂τ_s/∂x) G`` with the
  recursive tree derivatives ∂τ_s/∂x of the spanning tree at ``(G y, G ẏ, G ÿ)`` — the tree part is
  recursive, the congruence with G is a sparse dense-matrix product (O(nnz(G)²)), and the ABA
  derivatives solve with a dense Cholesky factor of H (O(nv³)), not recursively;
* a model with an implicit loop (four-bar, five-bar, Tello's differentials: G(q), g(q, q̇)) raises
  :class:`~loopdyn.errors.UnsupportedFeatureError` — the configuration dependence of G and g is not
  differentiated yet.
"""

from __future__ import annotations

import numpy as np

from .algorithms import derivatives as kernels
from .algorithms.call import CONFIGURATION, FORCES, TANGENT, KernelArgs, run
from .algorithms.validation import check_data
from .errors import UnsupportedFeatureError
from .model import layout as L

STATE = KernelArgs(2, ("q", CONFIGURATION), ("v", TANGENT), ("a", TANGENT), ("f_ext", FORCES))
FORWARD = KernelArgs(2, ("q", CONFIGURATION), ("v", TANGENT), ("tau", TANGENT), ("f_ext", FORCES))


def _check_clusters(model, data, name: str) -> None:
    """Refuse a model with an implicit cluster (its G(q) and g(q, q̇) are not differentiated yet)."""
    if (data.ic[1:, L.C_KIND] == L.IMPLICIT).any():
        raise UnsupportedFeatureError(
            f"{name}: models with implicit loops (constraints φ(q) = 0: four-bars, differentials, "
            "closed linkages) are not supported yet — trees and explicit clusters (constant G: gears, "
            "belts, geared rotors) are; differentiate loopdyn.rnea / loopdyn.aba numerically along "
            "loopdyn.integrate meanwhile"
        )


def rnea_derivatives(model, data, q, v, a, f_ext=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Partial derivatives of inverse dynamics ``τ = rnea(q, v, a, f_ext)``.

    Parameters
    ----------
    model, data:
        A :class:`~loopdyn.Model` (a tree, or with explicit clusters only) and a
        :class:`~loopdyn.Data` created by it.
    q, v, a:
        Configuration (nq), velocity (nv), acceleration (nv); on a model with clusters, independent
        coordinates (as :func:`loopdyn.rnea`), and every derivative is with respect to them.
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
        For a model with an implicit loop.
    """
    if data.source_key is not model._key:
        check_data(model, data)
    nv = data.nv
    dq, dv, M = np.empty((nv, nv)), np.empty((nv, nv)), np.empty((nv, nv))
    fext = data.no_forces if f_ext is None else f_ext
    if model.has_constraints:
        _check_clusters(model, data, "rnea_derivatives")
        kern = kernels.c_rnea_derivatives_kernel
    else:
        kern = kernels.rnea_derivatives_kernel
    m1, m2 = data.kernel_arrays
    run(kern, model, STATE, (m1, m2, q, v, a, fext, dq, dv, M))
    return dq, dv, M


def aba_derivatives(model, data, q, v, tau, f_ext=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Partial derivatives of forward dynamics ``q̈ = aba(q, v, tau, f_ext)``.

    ``q̈`` is computed by the ABA; then ``∂q̈/∂x = −M⁻¹ ∂τ/∂x`` at ``a = q̈`` (x = q, v) and
    ``∂q̈/∂τ = M⁻¹`` — M⁻¹ applied by the sparse LᵀL factorisation of M (RBDA Table 6.3) inside the
    same kernel call (on a model with explicit clusters: C-ABA for ÿ, and a dense Cholesky factor of
    H = Gᵀ M_s G). Arguments as :func:`rnea_derivatives` with ``tau`` (nv) in place of ``a``.

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
    if data.source_key is not model._key:
        check_data(model, data)
    nv = data.nv
    ddq = np.empty(nv)
    dq, dv, minv, scratch = (np.empty((nv, nv)) for _ in range(4))
    fext = data.no_forces if f_ext is None else f_ext
    if model.has_constraints:
        _check_clusters(model, data, "aba_derivatives")
        kern = kernels.c_aba_derivatives_kernel
    else:
        kern = kernels.aba_derivatives_kernel
    m1, m2 = data.kernel_arrays
    run(kern, model, FORWARD, (m1, m2, q, v, tau, fext, ddq, dq, dv, minv, scratch))
    return dq, dv, minv
