"""Lagrange-multiplier (KKT) forward dynamics on the spanning tree (spec §2.7.4; Featherstone RBDA
§8.5, "method 2"): exact, the classic baseline for systems with loops.

The spanning tree's equations with the loop constraints ``K q̈ = k``::

    [H  Kᵀ] [ q̈]   [τ_span − C]
    [K  0 ] [−λ] = [    k     ]

where ``H`` is the spanning tree's mass matrix (CRBA), ``C = RNEA_span(q_s, v_s, 0, f_ext)`` and
``τ_span = (Gᵀ)⁺ τ`` lifts the independent forces to the spanning tree (Moore–Penrose; as G has full
column rank, ``(Gᵀ)⁺ = G (GᵀG)⁻¹``, and ``Gᵀ τ_span = τ``). With ``τ' = τ_span − C``:

* ``method="dense"`` (GRBDA ``LagrangeMultiplierEigen``): dense Cholesky of H,
  ``A = K H⁻¹ Kᵀ``, ``λ = A⁻¹(k − K H⁻¹ τ')``, ``q̈ = H⁻¹(τ' + Kᵀ λ)``;
* ``method="ltl"`` (GRBDA ``LagrangeMultiplierCustom``): the sparse ``H = LᵀL`` factorisation that
  exploits branch-induced sparsity (RBDA §6.5), ``Y = L⁻ᵀ Kᵀ``, ``z = L⁻ᵀ τ'``, ``A = YᵀY``,
  ``λ = A⁻¹(k − Yᵀ z)``, ``q̈ = L⁻¹(z + Y λ)``.

The independent accelerations are ``ÿ = G⁺(q̈ − g)``. G has a unit row at each independent
coordinate (the partition ``G = P[1; −K_d⁻¹K_i]``) and g is zero there, so for the ``q̈`` solved
above (which satisfies ``K q̈ = k``, i.e. ``q̈ − g ∈ range G``) this pseudo-inverse is exactly the
selection of the independent entries of ``q̈``, cluster by cluster in cluster-state order
(:func:`loopdyn.baselines.constraints.independent_indices`); no least-squares solve is needed.
"""

from __future__ import annotations

import numpy as np

from ..algorithms.crba import dof_parents, ltl_in_place, ltl_solve, ltl_solve_transposed
from ..dynamics import crba, rnea
from . import calls
from .constraints import baseline_cache, constraint_jacobians, spanning_state

__all__ = ["lagrange_forward_dynamics", "ltl_solve", "ltl_solve_transposed"]

METHODS = ("dense", "ltl")


def _lam(cache) -> np.ndarray:
    if cache.lam is None:
        lam = np.empty(cache.nvs, dtype=np.int64)
        dof_parents(cache.data.ib, lam)
        cache.lam = lam
    return cache.lam


def lift_forces(G: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """``τ_span = (Gᵀ)⁺ τ = G (GᵀG)⁻¹ τ``: the minimum-norm spanning forces with ``Gᵀ τ_span = τ``."""
    GtG = G.T @ G
    from scipy.linalg import cho_factor, cho_solve

    return G @ cho_solve(cho_factor(GtG, lower=True, check_finite=False), tau, check_finite=False)


def lagrange_forward_dynamics(
    model, q, v, tau, f_ext=None, method: str = "dense", *, full_output=False, compiled: bool = False
):
    """Forward dynamics by Lagrange multipliers on the spanning tree (see the module docstring).

    Parameters
    ----------
    model:
        A :class:`loopdyn.Model` (with or without constraints).
    q, v, tau:
        Cluster state (nq), independent velocity (nv) and independent forces (nv).
    f_ext:
        Optional external forces (njoints, 6), rows ``[force; torque]`` in body frames.
    method:
        ``"dense"`` (Cholesky of H) or ``"ltl"`` (sparse LᵀL factorisation of H).
    full_output:
        Also return the spanning accelerations and the multipliers.
    compiled:
        One kernel call (:mod:`loopdyn.baselines.kernels`: G, K, k from the cluster constraint
        tapes, CRBA, RNEA, the factorisations and solves in compiled code), as the paper's
        implementation; otherwise the independent dense maps and NumPy/SciPy (the oracle).

    Returns
    -------
    ``ÿ`` (nv, cluster-state order), or ``(ÿ, q̈_span, λ)`` when ``full_output``.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    if compiled:
        ydd, qdd, lam = calls.lagrange(model, q, v, tau, f_ext, ltl=method == "ltl")
        return (ydd, qdd, lam) if full_output else ydd
    cache = baseline_cache(model)
    tau = np.asarray(tau, dtype=float)
    if tau.shape != (model.nv,):
        raise ValueError(f"tau must have shape ({model.nv},), got {tau.shape}")
    from scipy.linalg import cho_factor, cho_solve

    qs, vs, G, _ = spanning_state(model, q, v)
    K, k = constraint_jacobians(model, qs, vs)
    H = crba(cache.tree, cache.data, qs)
    C = rnea(cache.tree, cache.data, qs, vs, np.zeros(cache.nvs), f_ext)
    tau_span = lift_forces(G, tau) if cache.constrained else tau
    tp = tau_span - C
    nc = K.shape[0]
    if method == "dense":
        cf = cho_factor(H, lower=True, check_finite=False)
        Hinv_tp = cho_solve(cf, tp, check_finite=False)
        if nc:
            Hinv_Kt = cho_solve(cf, K.T, check_finite=False)
            A = K @ Hinv_Kt
            lam = np.linalg.solve(A, k - K @ Hinv_tp)
            qdd = Hinv_tp + Hinv_Kt @ lam
        else:
            lam, qdd = np.zeros(0), Hinv_tp
    else:
        lamp = _lam(cache)
        bad = ltl_in_place(H, lamp)  # H now holds L in its lower triangle
        if bad >= 0:
            raise np.linalg.LinAlgError(f"spanning mass matrix not positive definite at coordinate {bad}")
        YZ = np.empty((cache.nvs, nc + 1))
        YZ[:, :nc] = K.T
        YZ[:, nc] = tp
        ltl_solve_transposed(H, lamp, YZ)  # [Y z] = L⁻ᵀ [Kᵀ τ']
        Y, z = YZ[:, :nc], YZ[:, nc]
        if nc:
            A = Y.T @ Y
            lam = np.linalg.solve(A, k - Y.T @ z)
            w = (z + Y @ lam).reshape(-1, 1)
        else:
            lam, w = np.zeros(0), z.reshape(-1, 1).copy()
        ltl_solve(H, lamp, w)
        qdd = w[:, 0]
    ydd = qdd[cache.ind_span]
    if full_output:
        return ydd, qdd, lam
    return ydd
