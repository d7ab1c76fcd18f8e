"""Projection baselines on the spanning tree (spec §2.7.1, §2.7.3): exact, dense, slow.

With ``v_span = G ẏ`` and ``a_span = G ÿ + g`` (see :mod:`loopdyn.baselines.constraints`):

* projected RNEA: ``τ = Gᵀ RNEA_span(q_s, v_s, G ÿ + g, f_ext)``;
* projected mass matrix ``H_ind = Gᵀ H G`` and bias ``C_ind = Gᵀ(C + H g)``, with ``H`` the spanning
  tree's CRBA and ``C = RNEA_span(q_s, v_s, 0, f_ext)`` (gravity and external forces included);
* projection forward dynamics ``ÿ = (GᵀHG)⁻¹(τ − Gᵀ(C + H g))`` by a dense Cholesky factorisation.

On a tree (no constraints) G = 1 and g = 0: these reduce to ``loopdyn.rnea`` / ``crba`` / ``aba``.
"""

from __future__ import annotations

import numpy as np

from ..constraint_rows import jacobian, prepare
from ..dynamics import crba, rnea
from . import calls
from .constraints import as_vector, baseline_cache, spanning_state

__all__ = [
    "projected_bias",
    "projected_delassus",
    "projected_mass_matrix",
    "projected_rnea",
    "projection_forward_dynamics",
]


def projected_rnea(model, q, v, a, f_ext=None, *, compiled: bool = False) -> np.ndarray:
    """Inverse dynamics ``τ = Gᵀ RNEA_span(q_s, v_s, G a + g, f_ext)`` (independent forces, nv; spec
    §2.7.1). ``compiled``: one kernel call (:mod:`loopdyn.baselines.kernels`: G, g from the cluster
    constraint tapes, the spanning tree's RNEA and Gᵀ in compiled code, as the paper's implementation);
    otherwise the independent dense maps and NumPy (the oracle)."""
    if compiled:
        return calls.projected_rnea(model, q, v, a, f_ext)
    cache = baseline_cache(model)
    qs, vs, G, g = spanning_state(model, q, v)
    as_ = G @ as_vector(a, model.nv, "a") + g
    return G.T @ rnea(cache.tree, cache.data, qs, vs, as_, f_ext)


def projected_mass_matrix(model, q) -> np.ndarray:
    """``Gᵀ H G`` (nv × nv), the mass matrix of the independent coordinates."""
    cache = baseline_cache(model)
    qs, _, G, _ = spanning_state(model, q, np.zeros(model.nv))
    H = crba(cache.tree, cache.data, qs)
    return G.T @ H @ G


def projected_bias(model, q, v, f_ext=None) -> np.ndarray:
    """``Gᵀ(C + H g)`` (nv): the independent forces needed for ``ÿ = 0`` (gravity, velocity products
    and external forces included)."""
    cache = baseline_cache(model)
    qs, vs, G, g = spanning_state(model, q, v)
    C = rnea(cache.tree, cache.data, qs, vs, np.zeros(cache.nvs), f_ext)
    H = crba(cache.tree, cache.data, qs)
    return G.T @ (C + H @ g)


def projection_forward_dynamics(
    model, q, v, tau, f_ext=None, *, full_output: bool = False, compiled: bool = False
):
    """Forward dynamics by projection: ``ÿ = (GᵀHG)⁻¹(τ − Gᵀ(C + H g))`` (dense Cholesky).

    Returns ``ÿ`` (nv, cluster-state order), or ``(ÿ, q̈_span)`` with ``q̈_span = G ÿ + g`` when
    ``full_output``. ``compiled``: one kernel call (:mod:`loopdyn.baselines.kernels`: G, g from the
    cluster constraint tapes, CRBA, RNEA, GᵀHG and its Cholesky factorisation in compiled code), as the
    paper's implementation; otherwise the independent dense maps and NumPy/SciPy (the oracle).
    """
    if compiled:
        ydd, qdd = calls.projection(model, q, v, tau, f_ext)
        return (ydd, qdd) if full_output else ydd
    cache = baseline_cache(model)
    tau = np.asarray(tau, dtype=float)
    if tau.shape != (model.nv,):
        raise ValueError(f"tau must have shape ({model.nv},), got {tau.shape}")
    qs, vs, G, g = spanning_state(model, q, v)
    H = crba(cache.tree, cache.data, qs)
    C = rnea(cache.tree, cache.data, qs, vs, np.zeros(cache.nvs), f_ext)
    A = G.T @ H @ G
    b = tau - G.T @ (C + H @ g)
    from scipy.linalg import cho_factor, cho_solve

    ydd = cho_solve(cho_factor(A, lower=True, check_finite=False), b, check_finite=False)
    if full_output:
        return ydd, G @ ydd + g
    return ydd


def projected_delassus(model, q, constraints, *, compiled: bool = False) -> np.ndarray:
    """The paper's projected inverse operational-space inertia (spec §2.7.5):
    ``Λ⁻¹ = J (GᵀHG)⁻¹ Jᵀ`` with ``J = J_span G``, ``J_span`` stacking ``K_e`` times the LOCAL frame
    Jacobian of each constraint frame on the spanning tree, ``H`` the spanning tree's CRBA and dense
    Cholesky (m × m, a new array). ``compiled``: one kernel call (:mod:`loopdyn.baselines.kernels`);
    otherwise the independent dense maps and NumPy/SciPy (the oracle)."""
    cache = baseline_cache(model)
    if compiled:
        return calls.projected_delassus_rows(model, q, prepare(cache.tree, constraints))
    qs, _, G, _ = spanning_state(model, q, np.zeros(model.nv))
    H = crba(cache.tree, cache.data, qs)
    J = jacobian(cache.tree, cache.data, qs, prepare(cache.tree, constraints)) @ G
    A = G.T @ H @ G
    from scipy.linalg import cho_factor, cho_solve

    X = cho_solve(cho_factor(A, lower=True, check_finite=False), J.T, check_finite=False)
    out = J @ X
    return 0.5 * (out + out.T)
