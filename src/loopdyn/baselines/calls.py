"""The Python side of the compiled baselines (:mod:`loopdyn.baselines.kernels`): the per-model arrays
the kernels read (:class:`Pack`) and one kernel call per baseline call.

The functions here are what ``compiled=True`` runs in :func:`~loopdyn.baselines.projected_rnea`,
:func:`~loopdyn.baselines.projection_forward_dynamics`, :func:`~loopdyn.baselines.lagrange_forward_dynamics`
and :func:`~loopdyn.baselines.projected_delassus`. The scratch belongs to the model's baseline cache:
like the other baselines, these are not meant to run on one model from several threads at once.
"""

from __future__ import annotations

import numpy as np

from ..algorithms.call import CONFIGURATION, FORCES, TANGENT, KernelArgs
from ..algorithms.crba import dof_parents
from ..algorithms.status import raise_for_status
from ..model import layout as L
from . import kernels
from .compiled import cluster_setup
from .constraints import baseline_cache

__all__ = ["Pack", "lagrange", "pack", "projected_delassus_rows", "projected_rnea", "projection"]

_ID_ARGS = KernelArgs(12, ("q", CONFIGURATION), ("v", TANGENT), ("a", TANGENT), ("f_ext", FORCES))
_FD_ARGS = KernelArgs(12, ("q", CONFIGURATION), ("v", TANGENT), ("tau", TANGENT), ("f_ext", FORCES))
_Q_ARGS = KernelArgs(12, ("q", CONFIGURATION))
_NOT_PD = {
    kernels.NOT_PD_PROJECTED: "the projected mass matrix GᵀHG is not positive definite",
    kernels.NOT_PD_MASS: "the spanning tree's mass matrix is not positive definite",
    kernels.NOT_PD_GTG: "GᵀG is singular (G has no full column rank)",
    kernels.NOT_PD_SCHUR: "K H⁻¹ Kᵀ is singular (redundant loop constraints)",
}
_NO_FORCES = np.zeros((0, 6))


class Pack:
    """The first twelve kernel arguments of one model (see :mod:`loopdyn.baselines.kernels`)."""

    __slots__ = ("arrays", "nv", "nvs", "nc", "m_cap", "K0", "sizes")

    def __init__(self, model, cache):
        tree = not cache.constrained
        tdata = cache.data
        if tree:
            ib = tdata.ib
            ic = np.zeros((1, L.NC), dtype=np.int64)
            i1, i2, f1 = np.zeros(0, np.int64), np.zeros((0, 1), np.int64), np.zeros(0)
            cl = (ib, ic, i1, f1, i2, f1, i2, i1)
            krow = np.zeros(0, np.int64)
        else:
            _, (data, krow) = cluster_setup(model)
            cl = (data.ib, data.ic, data.cb, data.wc, data.code, data.consts, data.table, data.outputs)
        lam = np.empty(cache.nvs, dtype=np.int64)
        dof_parents(tdata.ib, lam)
        self.nv, self.nvs, self.nc = cache.nv, cache.nvs, cache.nc
        self.sizes = (model.spanning_nq if not tree else model.nq, cache.nvs, cache.nv, cache.nc)
        self.K0 = cache.K0 if cache.K0 is not None else np.zeros((0, cache.nvs))
        head = [int(tree), *self.sizes, krow.size, 0]
        ix = np.concatenate([np.array(head, np.int64), krow, lam, cache.ind_span]).astype(np.int64)
        self.arrays = (*cl, tdata.ib, tdata.ws, ix, np.zeros(0))
        self.m_cap = -1
        self.reserve(6)

    def reserve(self, m: int) -> None:
        """Make the scratch large enough for ``m`` Delassus rows (the explicit rows of K copied in)."""
        if m <= self.m_cap:
            return
        ix = self.arrays[10]
        ix[6] = m
        sc = np.zeros(kernels.scratch_size(*self.sizes, m))
        sc[: self.K0.size] = self.K0.ravel()  # region K0 comes first
        self.arrays = (*self.arrays[:11], sc)
        self.m_cap = m


def pack(model) -> Pack:
    """The model's :class:`Pack`, built once per model state."""
    cache = baseline_cache(model)
    if cache.pack is None:
        cache.pack = Pack(model, cache)
    return cache.pack


def _call(kern, model, spec: KernelArgs, args: tuple) -> None:
    """Run a baseline kernel: coerce the user arguments on a type mismatch, raise on a status."""
    try:
        st = kern(*args)
    except TypeError:
        st = kern(*spec.coerce(model, args))
    if st < 0:
        raise np.linalg.LinAlgError(_NOT_PD[st])
    if st:
        raise_for_status(model, st, spec.names)


def projected_rnea(model, q, v, a, f_ext=None) -> np.ndarray:
    """``Gᵀ RNEA_span(q_s, v_s, G a + g, f_ext)`` in one kernel call (a new array, nv)."""
    p = pack(model)
    out = np.empty(p.nv)
    fext = _NO_FORCES if f_ext is None else f_ext
    _call(kernels.projected_rnea_kernel, model, _ID_ARGS, (*p.arrays, q, v, a, fext, out))
    return out


def projection(model, q, v, tau, f_ext=None) -> tuple[np.ndarray, np.ndarray]:
    """``(ÿ, q̈_span)`` of the projection method in one kernel call."""
    p = pack(model)
    out = np.empty(p.nv + p.nvs)
    fext = _NO_FORCES if f_ext is None else f_ext
    _call(kernels.projection_kernel, model, _FD_ARGS, (*p.arrays, q, v, tau, fext, out))
    return out[: p.nv], out[p.nv :]


def lagrange(model, q, v, tau, f_ext=None, ltl: bool = False):
    """``(ÿ, q̈_span, λ)`` of the Lagrange-multiplier method (dense Cholesky, or ``LᵀL``) in one
    kernel call."""
    p = pack(model)
    out = np.empty(p.nv + p.nvs + p.nc)
    fext = _NO_FORCES if f_ext is None else f_ext
    _call(kernels.lagrange_kernel, model, _FD_ARGS, (*p.arrays, q, v, tau, fext, int(ltl), out))
    return out[: p.nv], out[p.nv : p.nv + p.nvs], out[p.nv + p.nvs :]


def projected_delassus_rows(model, q, rows) -> np.ndarray:
    """``J (GᵀHG)⁻¹ Jᵀ`` in one kernel call for constraint rows prepared on the model or on its
    spanning tree (the same bodies and frames)."""
    p = pack(model)
    p.reserve(rows.m)
    out = np.empty((rows.m, rows.m))
    _call(kernels.projected_delassus_kernel, model, _Q_ARGS, (*p.arrays, q, rows.body, rows.row, rows.K, out))
    return out
