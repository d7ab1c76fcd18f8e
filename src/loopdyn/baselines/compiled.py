"""The baselines' dense ``G``, ``g``, ``K``, ``k`` from the compiled cluster kinematics.

:mod:`loopdyn.baselines.constraints` builds these matrices independently of the cluster kernels (sympy
for implicit clusters), which makes the baselines oracles for the cluster algorithms, but evaluates
Tello-like nonlinear constraints through lambdified NumPy code on every call. The paper's baselines
(GRBDA's ``RigidBodyTreeModel``) evaluate the constraints with the same compiled code as the cluster
algorithms; to time them fairly, ``compiled=True`` in :func:`~loopdyn.baselines.projected_rnea`,
:func:`~loopdyn.baselines.projection_forward_dynamics`,
:func:`~loopdyn.baselines.lagrange_forward_dynamics` and :func:`~loopdyn.baselines.projected_delassus`
runs the kernels of :mod:`loopdyn.baselines.kernels`, which take G, g, K, k from
:func:`compiled_maps_core` here: one pass of the cluster coordinate kernel (the constraint tapes), then
a dense scatter. :func:`compiled_maps` returns the same maps to Python (for the tests: both sources
agree).
"""

from __future__ import annotations

import numpy as np

from ..algorithms.borrow import borrowed
from ..algorithms.call import as_float_vector
from ..algorithms.cluster_kinematics import cluster_coordinates, validate_cluster_state
from ..algorithms.common import kernel
from ..algorithms.status import raise_for_status
from ..jit import shared
from ..model import layout as L
from .constraints import baseline_cache, constraint_jacobians, spanning_state

__all__ = ["cluster_setup", "compiled_maps", "compiled_maps_core"]


@shared
def compiled_maps_core(ib, ic, cb, wc, code, consts, table, outputs, q, v, krow, G, g, K, k):
    """Dense G (nvs × nv), g (nvs), and the rows of implicit clusters in K, k (rows from ``krow[c]``);
    the spanning q, q̇ are left in the buffers of ``wc``. G, g, K, k must be zero (K: explicit rows
    pre-filled) on entry."""
    empty = np.zeros(0)
    for c in range(1, ic[0, L.C0_NCL] + 1):
        st = cluster_coordinates(ib, ic, cb, wc, code, consts, table, outputs, c, q, v, empty)
        if st != 0:
            return st
        first, iv, m = ic[c, L.C_FIRST], ic[c, L.C_IV], ic[c, L.C_M]
        if ic[c, L.C_KIND] == L.SINGLE_BODY:
            b = cb[first]
            for j in range(ib[b, L.I_NV]):
                G[ib[b, L.I_IV] + j, iv + j] = 1.0
            continue
        n, Go, gb = ic[c, L.C_N], ic[c, L.C_G], ic[c, L.C_GB]
        for j in range(n):  # one 1-DoF joint per body inside a cluster
            sv = ib[cb[first + j], L.I_IV]
            for l in range(m):
                G[sv, iv + l] = wc[Go + j * m + l]
            g[sv] = wc[gb + j]
        if ic[c, L.C_KIND] == L.IMPLICIT:  # K(q), k(q, q̇) as the tapes left them (see cluster_coordinates)
            nrow = ic[c, L.C_NROW]
            nt = nrow + ic[c, L.C_NCHECK]  # the program's rows: kept ones, then branch checks
            Ko = ic[c, L.C_SCR] + 2 * n + nt
            kb = Ko + nt * n
            for r in range(nrow):
                for j in range(n):
                    K[krow[c] + r, ib[cb[first + j], L.I_IV]] = wc[Ko + r * n + j]
                k[krow[c] + r] = wc[kb + r]
    return 0


@kernel(
    "int64(int64[:, ::1], int64[:, ::1], int64[::1], float64[::1], int64[:, ::1], float64[::1], "
    "int64[:, ::1], int64[::1], float64[::1], float64[::1], int64[::1], float64[:, ::1], float64[::1], "
    "float64[:, ::1], float64[::1])"
)
def compiled_maps_kernel(ib, ic, cb, wc, code, consts, table, outputs, q, v, krow, G, g, K, k):
    ib, ic, cb, wc, code, consts, table, outputs, q, v, krow, G, g, K, k = borrowed(
        (ib, ic, cb, wc, code, consts, table, outputs, q, v, krow, G, g, K, k)
    )
    st = validate_cluster_state(ib, ic, cb, q, v, np.zeros(0), np.zeros((0, 6)), False)
    if st != 0:
        return st
    return compiled_maps_core(ib, ic, cb, wc, code, consts, table, outputs, q, v, krow, G, g, K, k)


def cluster_setup(model):
    """``(baseline cache, (a private Data of the model, K row offset of each cluster))``."""
    cache = baseline_cache(model)
    extra = cache.compiled
    if extra is None:
        data = model.create_data()
        krow = np.zeros(data.ic.shape[0], dtype=np.int64)
        for c, info in enumerate(cache.clusters, start=1):
            krow[c] = info.row
        extra = (data, krow)
        cache.compiled = extra
    return cache, extra


def compiled_maps(model, q, v, constraints: bool = True):
    """``(q_span, v_span, G, g, K, k)`` at the cluster state ``(q, v)`` by the compiled cluster
    coordinates (same layout as :func:`loopdyn.baselines.spanning_state` and
    :func:`loopdyn.baselines.constraint_jacobians`); only the first four when not ``constraints``."""
    cache, (data, krow) = cluster_setup(model)
    nvs = cache.nvs
    if not cache.implicit:  # constant maps (trees, explicit clusters): nothing to evaluate
        qs, vs, G, g = spanning_state(model, q, v)
        return (qs, vs, G, g, *constraint_jacobians(model, qs, vs)) if constraints else (qs, vs, G, g)
    G = np.zeros((nvs, model.nv))
    g = np.zeros(nvs)
    K = cache.K0.copy()
    k = np.zeros(cache.nc)
    args = (data.ib, data.ic, data.cb, data.wc, data.code, data.consts, data.table, data.outputs)
    st = compiled_maps_kernel(*args, as_float_vector(q, "q"), as_float_vector(v, "v"), krow, G, g, K, k)
    if st:
        raise_for_status(model, st, ("q", "v"))
    ic, wc = data.ic, data.wc
    qs = wc[ic[0, L.C0_QS] : ic[0, L.C0_QS] + model.spanning_nq].copy()
    vs = wc[ic[0, L.C0_QDS] : ic[0, L.C0_QDS] + nvs].copy()
    return (qs, vs, G, g, K, k) if constraints else (qs, vs, G, g)
