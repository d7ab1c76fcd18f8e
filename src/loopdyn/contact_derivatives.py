"""Derivatives of the constrained (contact) forward dynamics:
:func:`constrained_forward_dynamics_derivatives`.

Conventions: those of :func:`loopdyn.constrained_forward_dynamics` (the same constraint objects,
force sign ``M q̈ + c = τ + Jᵀ λ``, LOCAL frames — ``"3d"`` rows are the classical acceleration of
the point, ``"6d"`` and custom rows the spatial acceleration —, ``desired``, the damping μ) and of
Pinocchio's ``computeConstraintDynamicsDerivatives`` with LOCAL contact models: ∂/∂q is the tangent
derivative along ``loopdyn.integrate(model, q, δ)`` at δ = 0, with v, τ and the external forces (in
their body frames) held fixed.

The derivation (spec §3; Carpentier et al., RSS 2021) is in :mod:`loopdyn.algorithms.contact_derivatives`:
differentiating ``M q̈ − Jᵀλ = τ − c`` and ``J q̈ + γ + μ λ = k`` at the solution gives
``(Λ⁻¹ + μ I) ∂λ = −(J Z_x + ∂α/∂x)`` and ``∂q̈ = Z_x + M⁻¹ Jᵀ ∂λ``, with ``Z_x`` the unconstrained
sensitivities (the ABA derivatives at ``a = q̈`` with the constraint forces held as body forces) and
``∂α/∂x`` the derivative of the constraint frames' acceleration at fixed ``a``.

By model:

* a tree: one kernel call (:func:`~loopdyn.algorithms.contact_derivatives.contact_derivatives_kernel`):
  the forward solve, the recursive RNEA derivatives, the frame-acceleration derivatives, the sparse
  factor of M and the m × m Cholesky factor of the forward solve reused;
* a model with clusters (explicit or implicit): exact, in the independent coordinates, in one kernel
  call (:func:`~loopdyn.algorithms.contact_derivatives.c_contact_derivatives_kernel`): the forward
  solve of :func:`loopdyn.constrained_forward_dynamics`, then the RNEA derivatives
  in independent coordinates (with the implicit loops' ∂G and ∂g), the spanning tree's
  frame-acceleration derivatives composed with G and with the loops' tangent maps, and (5)–(6) with
  a dense Cholesky factor of ``H = Gᵀ M_s G`` (H⁻¹ = ∂q̈/∂τ from it).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .algorithms import contact_derivatives as kernels
from .algorithms.call import CONFIGURATION, FORCES, TANGENT, KernelArgs, run
from .algorithms.contact import contact_program
from .algorithms.status import raise_for_status
from .algorithms.validation import check_data
from .constraint_rows import ConstraintRows, prepare
from .contact import compiled_constraints, constrained_forward_dynamics, damping, desired_accelerations
from .derivatives import aba_derivatives
from .model.data import load_deferred_passes

__all__ = ["ConstrainedDynamicsDerivatives", "constrained_forward_dynamics_derivatives"]


class ConstrainedDynamicsDerivatives(NamedTuple):
    """The result of :func:`constrained_forward_dynamics_derivatives` (new arrays)."""

    ddq: np.ndarray  #: (nv,) accelerations
    forces: np.ndarray  #: (m,) constraint forces λ
    dddq_dq: np.ndarray  #: (nv, nv) ∂q̈/∂q (tangent)
    dddq_dv: np.ndarray  #: (nv, nv)
    dddq_dtau: np.ndarray  #: (nv, nv)
    dforces_dq: np.ndarray  #: (m, nv) ∂λ/∂q (tangent)
    dforces_dv: np.ndarray  #: (m, nv)
    dforces_dtau: np.ndarray  #: (m, nv)


_ARGS = KernelArgs(2, ("q", CONFIGURATION), ("v", TANGENT), ("tau", TANGENT), ("f_ext", FORCES))


def _work(data, prog, m: int):
    """The per-thread scratch of the tree kernel (kept with the compiled constraint list)."""
    wk = getattr(prog.local, "cfd", None)
    if wk is None:
        wk = prog.local.cfd = np.zeros(kernels.work_size(data.ib.shape[0] - 1, data.nv, m))
    return wk


def constrained_forward_dynamics_derivatives(
    model, data, q, v, tau, constraints, desired=None, mu: float = 0.0, f_ext=None
) -> ConstrainedDynamicsDerivatives:
    """The constrained forward dynamics and its partial derivatives with respect to q, v and τ.

    Arguments as :func:`loopdyn.constrained_forward_dynamics`. Returns a
    :class:`ConstrainedDynamicsDerivatives` ``(ddq, forces, dddq_dq, dddq_dv, dddq_dtau, dforces_dq,
    dforces_dv, dforces_dtau)``: ``ddq`` and ``forces`` as ``constrained_forward_dynamics`` returns
    them, then ``∂q̈/∂x`` (nv × nv) and ``∂λ/∂x`` (m × nv) for x = q (tangent space: column j is the
    derivative along ``integrate(model, q, δ e_j)``), v and τ — Pinocchio's
    ``computeConstraintDynamicsDerivatives`` with LOCAL contact models. On a model with loops
    everything is in its independent coordinates and exact (G's and g's dependence on the state
    differentiated).

    Raises as :func:`loopdyn.constrained_forward_dynamics` (shapes, NaN/inf, a redundant constraint
    set with ``mu = 0`` → :class:`~loopdyn.errors.RedundantConstraintsError`, ...).
    """
    if data.source_key is not model._key:
        check_data(model, data)
    if mu.__class__ is not float or not 0.0 <= mu < math.inf:
        mu = damping(mu)
    rows = prepare(model, constraints)
    m = rows.m
    k = np.zeros(m) if desired is None else desired_accelerations(desired, m)
    if m == 0:
        ddq, *_ = constrained_forward_dynamics(model, data, q, v, tau, constraints, None, mu, f_ext)
        dq, dv, dt = aba_derivatives(model, data, q, v, tau, f_ext)
        z = np.zeros((0, model.nv))
        return ConstrainedDynamicsDerivatives(ddq, k, dq, dv, dt, z, z.copy(), z.copy())
    if model.has_constraints:
        return _loop_derivatives(model, data, q, v, tau, constraints, rows, k, mu, f_ext)
    prog = compiled_constraints(model, data, rows)
    n = data.nv
    # three arrays: one buffer sliced and reshaped into them cost 0.67 µs a call, these 0.33
    ddq, dA, dL = np.empty(n), np.empty((3, n, n)), np.empty((3, m, n))
    fext = data.no_forces if f_ext is None else f_ext
    args = (data.ib, data.ws, q, v, tau, fext, mu, prog.cf, prog.ci, prog.scratch(), _work(data, prog, m),
            ddq, k, dA, dL)  # fmt: skip
    run(kernels.contact_derivatives_kernel, model, _ARGS, args)
    return ConstrainedDynamicsDerivatives(ddq, k, dA[0], dA[1], dA[2], dL[0], dL[1], dL[2])


def spanning_constraints(data, rows: ConstraintRows):
    """The constraint list compiled for the tree kernels, on the spanning tree of a model with loops."""
    prog = rows.compiled.get("contact_spanning")
    if prog is None:
        classical = [kd == "3d" for kd in rows.kinds]
        prog = contact_program(data.ib, rows.body, rows.row, rows.K, rows.frames, classical)
        rows.compiled["contact_spanning"] = prog
    return prog


def _loop_tables(model, data, rows: ConstraintRows) -> tuple:
    """The program and the eight tables the loops' kernel reads, kept with the constraint list: a
    tuple lookup per call instead of two programs' attributes."""
    prog = compiled_constraints(model, data, rows)
    spanning = spanning_constraints(data, rows)
    tables = (prog, prog.cf, prog.ci, prog.T, prog.cemp, prog.asm, spanning.cf, spanning.ci)
    rows.compiled["contact_derivatives_loops"] = tables
    return tables


def _loop_derivatives(model, data, q, v, tau, constraints, rows, k, mu, f_ext):
    """A model with clusters, in one kernel call (``c_contact_derivatives_kernel``): the forward solve
    (:func:`~loopdyn.algorithms.contact.contact_loops_core`), then the KKT sensitivities (5)–(6) in
    independent coordinates ((10) of :mod:`loopdyn.algorithms.contact_derivatives`), the implicit
    loops' ∂G and ∂g included."""
    tables = rows.compiled.get("contact_derivatives_loops") or _loop_tables(model, data, rows)
    prog, cf, ci, T, cemp, asm, cfs, cis = tables
    n, m = model.nv, rows.m
    # three arrays: one buffer sliced and reshaped into them cost 0.67 µs a call, these 0.33
    ddq, dA, dL = np.empty(n), np.empty((3, n, n)), np.empty((3, m, n))
    fext = data.no_forces if f_ext is None else f_ext
    ints, floats = data.cluster_arrays
    args = (ints, floats, q, v, tau, fext, mu, cf, ci, T, cemp, asm, prog.scratch(), cfs, cis, ddq, k, dA, dL)
    # the implicit loops' terms, loaded before the call: the kernel writes the forces over ``desired``
    load_deferred_passes(data, "loop_derivatives")
    kern = kernels.c_contact_derivatives_kernel
    try:  # algorithms.call.run written out (a Python frame less per call)
        st = kern(*args)
    except TypeError:
        st = kern(*_ARGS.coerce(model, args))  # q, v, tau, f_ext where the tree's are
    if st:
        raise_for_status(model, st, _ARGS.names)
    return ConstrainedDynamicsDerivatives(ddq, k, dA[0], dA[1], dA[2], dL[0], dL[1], dL[2])
