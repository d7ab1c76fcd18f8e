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
* a model with clusters (explicit or implicit): exact, in the independent coordinates, but a dense
  first version in Python (several kernel calls): the spanning tree's RNEA and frame-acceleration
  derivatives from the tree kernels, composed with G and, on implicit loops, with the configuration
  and velocity dependence of G and g (:func:`loopdyn.derivatives.loop_tangent_maps`); then (5)–(6)
  with a Cholesky factor of ``H = Gᵀ M_s G`` (no inverse formed).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .algorithms import contact_derivatives as kernels
from .algorithms import derivatives as derivative_kernels
from .algorithms import rnea as tree_rnea
from .algorithms.call import CONFIGURATION, FORCES, TANGENT, KernelArgs, run
from .algorithms.contact import contact_program
from .algorithms.validation import check_data
from .constraint_rows import ConstraintRows, prepare
from .contact import compiled_constraints, constrained_forward_dynamics, damping, desired_accelerations
from .derivatives import aba_derivatives, loop_tangent_maps

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
_STATE = KernelArgs(2, ("q", CONFIGURATION), ("v", TANGENT), ("a", TANGENT), ("f_ext", FORCES))


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
    mu = damping(mu)
    rows = prepare(model, constraints)
    m = rows.m
    k = desired_accelerations(desired, m)
    if m == 0:
        ddq, *_ = constrained_forward_dynamics(model, data, q, v, tau, constraints, None, mu, f_ext)
        dq, dv, dt = aba_derivatives(model, data, q, v, tau, f_ext)
        z = np.zeros((0, model.nv))
        return ConstrainedDynamicsDerivatives(ddq, k, dq, dv, dt, z, z.copy(), z.copy())
    if model.has_constraints:
        return _loop_derivatives(model, data, q, v, tau, constraints, rows, k, mu, f_ext)
    prog = compiled_constraints(model, data, rows)
    n = data.nv
    out = np.empty(n + 3 * n * n + 3 * m * n)  # one allocation; the results are contiguous views of it
    ddq = out[:n]
    dA = out[n : n + 3 * n * n].reshape(3, n, n)
    dL = out[n + 3 * n * n :].reshape(3, m, n)
    fext = data.no_forces if f_ext is None else f_ext
    args = (data.ib, data.ws, q, v, tau, fext, mu, prog.cf, prog.ci, prog.scratch(), _work(data, prog, m),
            ddq, k, dA, dL)  # fmt: skip
    run(kernels.contact_derivatives_kernel, model, _ARGS, args)
    return ConstrainedDynamicsDerivatives(ddq, k, dA[0], dA[1], dA[2], dL[0], dL[1], dL[2])


def _frame_program(data, rows: ConstraintRows):
    """The constraint list compiled for the tree kernels, on the spanning tree of a model with loops."""
    prog = rows.compiled.get("contact_spanning")
    if prog is None:
        classical = [kd == "3d" for kd in rows.kinds]
        prog = contact_program(data.ib, rows.body, rows.row, rows.K, rows.frames, classical)
        rows.compiled["contact_spanning"] = prog
    return prog


def _loop_derivatives(model, data, q, v, tau, constraints, rows, k, mu, f_ext):
    """A model with clusters: the KKT sensitivities (5)–(6) with dense G, ∂G, ∂g (module docstring).

    τ_y = Gᵀ τ_s(q_s, G ẏ, G ÿ + g) with the constraint forces held as body forces; the constraint
    accelerations α_y = α_s(q_s, q̇_s, q̈_s), so along δ_j (q_s by G e_j, q̇_s by W e_j, q̈_s by
    Zq e_j) and ẏ_j (q̇_s by G e_j, q̈_s by Zv e_j):
    ``∂α/∂δ = A_q G + A_v W + J_s Zq``, ``∂α/∂ẏ = A_v G + J_s Zv``, ``J = J_s G``, and the inverse
    dynamics as :func:`loopdyn.rnea_derivatives` on loops."""
    from scipy.linalg import cho_factor, cho_solve

    ddy, lam = constrained_forward_dynamics(model, data, q, v, tau, constraints, k, mu, f_ext)
    qs, vs, as_, G, W, Zq, Zv, dG = loop_tangent_maps(model, data, q, v, ddy)
    nvs, nv, m = model.spanning_nv, model.nv, rows.m
    f2 = np.zeros((data.ib.shape[0], 6)) if f_ext is None else np.array(f_ext, dtype=float)
    for e in range(len(rows.body)):  # Jᵀλ as body forces [force; torque]: K_eᵀ λ_e = [n; f]
        b = int(rows.body[e])
        if b:
            w = rows.K[rows.row[e] : rows.row[e + 1]].T @ lam[rows.row[e] : rows.row[e + 1]]
            f2[b, :3] += w[3:]
            f2[b, 3:] += w[:3]
    Xq, Xv, Ms = np.empty((nvs, nvs)), np.empty((nvs, nvs)), np.empty((nvs, nvs))
    ib, ws = data.ib, data.ws
    run(derivative_kernels.rnea_derivatives_kernel, model, _STATE, (ib, ws, qs, vs, as_, f2, Xq, Xv, Ms))
    taus = np.empty(nvs)
    run(tree_rnea.rnea_fext_kernel, model, _STATE, (ib, ws, qs, vs, as_, f2, taus))
    prog = _frame_program(data, rows)
    P = np.empty((m, 3 * nvs))
    Js = np.empty((m, nvs))
    run(kernels.frame_acceleration_derivatives_kernel, model, _STATE,
        (ib, ws, qs, vs, as_, prog.cf, prog.ci, P, Js))  # fmt: skip
    Aq, Av = P[:, :nvs], P[:, nvs : 2 * nvs]
    dtau_dq = G.T @ (Xq @ G + Xv @ W + Ms @ Zq) + np.einsum("jsc,s->cj", dG, taus)
    dtau_dv = G.T @ (Xv @ G + Ms @ Zv)
    H = G.T @ Ms @ G
    J = Js @ G
    dalpha = np.hstack([Aq @ G + Av @ W + Js @ Zq, Av @ G + Js @ Zv, np.zeros((m, nv))])
    factor = cho_factor(H)
    Z = cho_solve(factor, np.hstack([-dtau_dq, -dtau_dv, np.eye(nv)]))  # Z_δ, Z_v, H⁻¹
    JH = J @ Z[:, 2 * nv :]  # J H⁻¹
    Lc = cho_factor(JH @ J.T + mu * np.eye(m))
    dlam = -cho_solve(Lc, J @ Z + dalpha)  # (5)
    dddq = Z + JH.T @ dlam  # (6)
    s = (slice(0, nv), slice(nv, 2 * nv), slice(2 * nv, 3 * nv))
    return ConstrainedDynamicsDerivatives(
        ddy, lam, *(dddq[:, x] for x in s), *(dlam[:, x] for x in s)
    )
