"""Dense constraint matrices of a model with loops, for the reference (baseline) methods.

Everything here is deliberately simple and written independently of the cluster kernels
(:mod:`loopdyn.model.clusters`' compiled form, :mod:`loopdyn.constraints.tape`,
:mod:`loopdyn.algorithms.cluster_kinematics`), so that the baselines can serve as oracles for them:

* explicit clusters use their constant ``K`` (``cluster.K_const``), ``k = 0``;
* implicit clusters use sympy: ``K = ∂φ/∂q`` and ``k = −K̇ q̇ = −∂(K q̇)/∂q · q̇`` are derived from
  ``cluster.phi_exprs`` and lambdified once per model (cached); a long loop written through
  definitions (:mod:`loopdyn.constraints.formulas`) uses third-order jets instead (``k = −q̇ᵀ∂²φ q̇``);
* ``G`` and ``g`` come from ``K`` and ``k`` by the partition formula (spec §1.2):
  ``G = P[1; −K_d⁻¹K_i]``, ``g = P[0; K_d⁻¹k]`` with each cluster's ``independent`` / ``dependent``
  lists; single-body clusters contribute identity blocks.

All matrices are dense over the spanning tree's velocity (``nvs = model.spanning_nv``) and the model's
independent velocity (``nv``), rows of ``K`` cluster by cluster in cluster order.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

import numpy as np

from ..model.clusters import EXPLICIT, IMPLICIT

__all__ = [
    "constraint_jacobians",
    "explicit_G",
    "independent_indices",
    "spanning_positions",
    "spanning_state",
]


@dataclass
class _ClusterInfo:
    kind: int  # 0 (single body), EXPLICIT or IMPLICIT
    iq: int  # offsets in the cluster state
    nq: int
    iv: int
    nv: int
    qcols: np.ndarray  # spanning position indices of the cluster's coordinates (local order)
    vcols: np.ndarray  # spanning velocity indices (local order)
    independent: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    dependent: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    row: int = 0  # first row of this cluster in K
    nrows: int = 0
    K_const: np.ndarray | None = None
    G_local: np.ndarray | None = None  # explicit clusters: from K_const by the partition formula
    K_fn: object = None  # implicit clusters: q_local -> K (nrows × n)
    k_fn: object = None  # implicit clusters: (q_local, qd_local) -> k (nrows)


@dataclass
class _Baseline:
    key: object
    tree: object  # the spanning tree (loopdyn.Model)
    data: object  # a Data of the spanning tree
    constrained: bool
    nvs: int
    nv: int
    nc: int  # constraint rows
    clusters: list[_ClusterInfo]
    ind_span: np.ndarray  # spanning velocity index of each independent velocity (cluster-state order)
    Aq: np.ndarray | None = None  # q_span = Aq q (copies, and q_c = G y for explicit clusters)
    G0: np.ndarray | None = None  # G with the blocks of implicit clusters left zero
    K0: np.ndarray | None = None  # K with the rows of implicit clusters left zero
    implicit: list[_ClusterInfo] = field(default_factory=list)
    lam: np.ndarray | None = None  # dof parents of the spanning tree (LᵀL), filled on demand
    compiled: tuple | None = None  # (cluster Data, K row offsets) for loopdyn.baselines.compiled
    pack: object = None  # the compiled kernels' arrays (loopdyn.baselines.calls.Pack)


_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _partition_G(K: np.ndarray, ind: np.ndarray, dep: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``G = P[1; −K_d⁻¹K_i]`` of one cluster, and its ``K_d`` (for ``g = P[0; K_d⁻¹k]``)."""
    n = K.shape[1]
    G = np.zeros((n, ind.size))
    G[ind, np.arange(ind.size)] = 1.0
    Kd = K[:, dep]
    if dep.size:
        G[dep, :] = -np.linalg.solve(Kd, K[:, ind])
    return G, Kd


def _lambdify_implicit(c):
    """K(q) and k(q, q̇) = −∂(K q̇)/∂q · q̇ of an implicit cluster, by sympy (not the tape compiler)."""
    import sympy as sp

    q = list(c.symbols)
    if c.definitions:  # a long loop written through definitions: jets (constraints.formulas), no expansion
        from ..constraints.formulas import Formulas, jet_function

        jets = jet_function(Formulas(tuple(c.definitions), tuple(c.phi_exprs), tuple(q)))

        def K_jet(x):
            return np.array([r.g for r in jets(np.asarray(x, float))]).reshape(len(c.phi_exprs), len(q))

        def k_jet(x, xd):
            xd = np.asarray(xd, float)
            return np.array([-(xd @ r.H @ xd) for r in jets(np.asarray(x, float))])

        return K_jet, k_jet
    qd = list(sp.symbols(f"qd0:{len(q)}", real=True))
    phi = sp.Matrix(c.phi_exprs)
    K = phi.jacobian(q)
    k = -(K * sp.Matrix(qd)).jacobian(q) * sp.Matrix(qd)
    K_l = sp.lambdify([q], K, modules="numpy", cse=True)
    k_l = sp.lambdify([q, qd], k, modules="numpy", cse=True)
    shape_K = (len(c.phi_exprs), len(q))

    def K_fn(x):
        return np.asarray(K_l(x), dtype=float).reshape(shape_K)

    def k_fn(x, xd):
        return np.asarray(k_l(x, xd), dtype=float).reshape(-1)

    return K_fn, k_fn


def _build(model) -> _Baseline:
    from ..model.state import spanning_tree

    tree = spanning_tree(model)
    data = tree.create_data()
    nvs = model.spanning_nv
    if not model.has_constraints:
        ind = np.arange(nvs, dtype=np.int64)
        return _Baseline(model._key, tree, data, False, nvs, nvs, 0, [], ind)
    ct = model.clusters()
    infos: list[_ClusterInfo] = []
    ind_span = np.zeros(ct.nv, dtype=np.int64)
    row = 0
    for c in ct.clusters:
        bodies = [model.bodies[b - 1] for b in c.bodies]
        qcols = np.concatenate([np.arange(b.idx_q, b.idx_q + b.joint.nq) for b in bodies]).astype(np.int64)
        vcols = np.concatenate([np.arange(b.idx_v, b.idx_v + b.joint.nv) for b in bodies]).astype(np.int64)
        info = _ClusterInfo(c.kind, c.iq, c.nq, c.iv, c.nv, qcols, vcols)
        if c.kind == 0:
            ind_span[c.iv : c.iv + c.nv] = vcols
            infos.append(info)
            continue
        info.independent = np.asarray(c.independent, dtype=np.int64)
        info.dependent = np.asarray(c.dependent, dtype=np.int64)
        ind_span[c.iv : c.iv + c.nv] = vcols[info.independent]
        info.row = row
        if c.kind == EXPLICIT:
            info.K_const = np.array(c.K_const, dtype=float).reshape(-1, c.n)
            info.nrows = info.K_const.shape[0]
            info.G_local, _ = _partition_G(info.K_const, info.independent, info.dependent)
        elif c.kind == IMPLICIT:
            info.nrows = len(c.phi_exprs)
            info.K_fn, info.k_fn = _lambdify_implicit(c)
        else:  # pragma: no cover - guarded by the cluster builder
            raise ValueError(f"unknown cluster kind {c.kind}")
        row += info.nrows
        infos.append(info)
    cache = _Baseline(model._key, tree, data, True, nvs, ct.nv, row, infos, ind_span)
    # the constant parts of the dense maps, filled once
    cache.Aq = np.zeros((model.spanning_nq, ct.nq))
    cache.G0 = np.zeros((nvs, ct.nv))
    cache.K0 = np.zeros((row, nvs))
    for c in infos:
        qrange = np.arange(c.iq, c.iq + c.nq)
        vrange = np.arange(c.iv, c.iv + c.nv)
        if c.kind == EXPLICIT:
            cache.Aq[np.ix_(c.qcols, qrange)] = c.G_local
            cache.G0[np.ix_(c.vcols, vrange)] = c.G_local
            cache.K0[c.row : c.row + c.nrows, c.vcols] = c.K_const
        else:  # single bodies and implicit clusters store spanning positions
            cache.Aq[c.qcols, qrange] = 1.0
            if c.kind == 0:
                cache.G0[c.vcols, vrange] = 1.0
            else:
                cache.implicit.append(c)
    return cache


def baseline_cache(model) -> _Baseline:
    """The per-model cache (spanning tree, its Data, index maps, lambdified functions); rebuilt after
    the model changes."""
    cache = _CACHE.get(model)
    if cache is None or cache.key is not model._key:
        cache = _build(model)
        _CACHE[model] = cache
    return cache


def as_vector(x, size: int, name: str) -> np.ndarray:
    arr = np.asarray(x, dtype=float)
    if arr.shape != (size,):
        raise ValueError(f"{name} must have shape ({size},), got {arr.shape}")
    return arr


# ---------------------------------------------------------------------------------------------
def independent_indices(model) -> np.ndarray:
    """Spanning velocity index of each independent velocity, in cluster-state order. Because G has
    unit rows at these indices and g is zero there, ``ÿ = G⁺(q̈ − g) = q̈[independent_indices]`` for
    any spanning ``q̈`` that satisfies ``K q̈ = k``."""
    return baseline_cache(model).ind_span.copy()


def spanning_positions(model, q) -> np.ndarray:
    """Spanning-tree positions of a cluster state ``q``: single-body clusters copied, explicit
    clusters completed by ``q_c = G y`` (G from K_const by the partition formula), implicit clusters
    copied (they store spanning positions)."""
    cache = baseline_cache(model)
    if not cache.constrained:
        return as_vector(q, model.nq, "q").copy()
    return cache.Aq @ as_vector(q, model.nq, "q")


def _cluster_K(c: _ClusterInfo, qs: np.ndarray) -> np.ndarray:
    """K of an implicit cluster (its kept rows × its coordinates)."""
    return c.K_fn(qs[c.qcols])


def _cluster_k(c: _ClusterInfo, qs: np.ndarray, vs: np.ndarray) -> np.ndarray:
    """k = −K̇ q̇ of an implicit cluster."""
    return c.k_fn(qs[c.qcols], vs[c.vcols])


def constraint_jacobians(model, q_span, v_span) -> tuple[np.ndarray, np.ndarray]:
    """Dense ``(K, k)`` over the whole spanning-tree velocity: ``K`` (nc × nvs), ``k`` (nc) with
    ``K q̈ = k``; rows cluster by cluster (each cluster's independent rows), nc = 0 for a tree."""
    cache = baseline_cache(model)
    qs = as_vector(q_span, model.spanning_nq, "q_span")
    vs = as_vector(v_span, model.spanning_nv, "v_span")
    if not cache.constrained:
        return np.zeros((0, cache.nvs)), np.zeros(0)
    K = cache.K0.copy()
    k = np.zeros(cache.nc)
    for c in cache.implicit:
        rows = slice(c.row, c.row + c.nrows)
        K[rows, c.vcols] = _cluster_K(c, qs)
        k[rows] = _cluster_k(c, qs, vs)
    return K, k


def _G_g(cache: _Baseline, qs: np.ndarray, v: np.ndarray):
    """Dense G, g at spanning positions qs and independent velocity v; also returns v_span = G v.
    Only the blocks of implicit clusters depend on the state; the rest is the cached G0."""
    G = cache.G0.copy()
    g = np.zeros(cache.nvs)
    vs = G @ v
    for c in cache.implicit:
        Gc, Kd = _partition_G(_cluster_K(c, qs), c.independent, c.dependent)
        G[np.ix_(c.vcols, np.arange(c.iv, c.iv + c.nv))] = Gc
        vs[c.vcols] = Gc @ v[c.iv : c.iv + c.nv]
        if c.dependent.size:
            g[c.vcols[c.dependent]] = np.linalg.solve(Kd, _cluster_k(c, qs, vs))
    return G, g, vs


def explicit_G(model, q, v) -> tuple[np.ndarray, np.ndarray]:
    """Dense ``(G, g)``: ``G`` (nvs × nv) and ``g`` (nvs) with ``v_span = G v`` and
    ``a_span = G a + g`` at the cluster state ``(q, v)``. For a tree, ``G = 1`` and ``g = 0``."""
    cache = baseline_cache(model)
    q = as_vector(q, model.nq, "q")
    v = as_vector(v, model.nv, "v")
    if not cache.constrained:
        return np.eye(cache.nvs), np.zeros(cache.nvs)
    G, g, _ = _G_g(cache, spanning_positions(model, q), v)
    return G, g


def spanning_state(model, q, v, a=None):
    """``(q_span, v_span, G, g)``, or ``(q_span, v_span, a_span, G, g)`` when ``a`` is given, computed
    with the dense matrices of this module (an independent twin of :func:`loopdyn.to_spanning`)."""
    cache = baseline_cache(model)
    q = as_vector(q, model.nq, "q")
    v = as_vector(v, model.nv, "v")
    if not cache.constrained:
        G, g, qs, vs = np.eye(cache.nvs), np.zeros(cache.nvs), q.copy(), v.copy()
    else:
        qs = spanning_positions(model, q)
        G, g, vs = _G_g(cache, qs, v)
    if a is None:
        return qs, vs, G, g
    a = as_vector(a, model.nv, "a")
    return qs, vs, G @ a + g, G, g
