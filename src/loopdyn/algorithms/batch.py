"""Batched dynamics: many states in one call, spread over all cores.

Each function takes one state per row (``Q`` of shape (N, nq), ``V``/``A``/``TAU`` of shape (N, nv))
and returns one result per row. Rows are split into chunks processed in parallel by Numba threads,
each with a private copy of the workspace; the thread count is Numba's (``numba.set_num_threads``).
"""

from __future__ import annotations

import numba
import numpy as np
from numba import prange

from ..errors import InputError, ShapeError, UnsupportedFeatureError
from .aba import aba_core
from .common import check_configuration, kernel, raise_for_status
from .crba import crba_core
from .rnea import rnea_core, validate_qva

_SIG3 = (
    "void(int64[:, ::1], float64[:, ::1], float64[:, ::1], float64[:, ::1], float64[:, ::1], "
    "float64[:, ::1], int64[::1], int64)"
)


@kernel(_SIG3, parallel=True)
def rnea_batch_kernel(ib, ws, Q, V, A, out, status, nchunks):
    n = Q.shape[0]
    no_forces = np.zeros((0, 6))
    for c in prange(nchunks):
        w = ws.copy()
        for k in range(c * n // nchunks, (c + 1) * n // nchunks):
            st = validate_qva(ib, Q[k], V[k], A[k], no_forces)
            status[k] = st
            if st == 0:
                rnea_core(ib, w, Q[k], V[k], A[k], no_forces, out[k], True)


@kernel(_SIG3, parallel=True)
def aba_batch_kernel(ib, ws, Q, V, TAU, out, status, nchunks):
    n = Q.shape[0]
    no_forces = np.zeros((0, 6))
    for c in prange(nchunks):
        w = ws.copy()
        for k in range(c * n // nchunks, (c + 1) * n // nchunks):
            st = validate_qva(ib, Q[k], V[k], TAU[k], no_forces)
            if st == 0:
                st = aba_core(ib, w, Q[k], V[k], TAU[k], no_forces, out[k])
            status[k] = st


@kernel(
    "void(int64[:, ::1], float64[:, ::1], float64[:, ::1], float64[:, :, ::1], int64[::1], int64)",
    parallel=True,
)
def crba_batch_kernel(ib, ws, Q, out, status, nchunks):
    n = Q.shape[0]
    for c in prange(nchunks):
        w = ws.copy()
        for k in range(c * n // nchunks, (c + 1) * n // nchunks):
            st = check_configuration(ib, Q[k])
            status[k] = st
            if st == 0:
                crba_core(ib, w, Q[k], out[k])


def _tree_only(model) -> None:
    if model.has_constraints:
        raise UnsupportedFeatureError(
            f"model {model.name!r} has loops: the batch functions handle kinematic trees; "
            "call loopdyn.rnea / "
            "loopdyn.aba / loopdyn.crba per state"
        )


def _rows(x, name: str, n: int | None, width: int) -> np.ndarray:
    try:
        arr = np.ascontiguousarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be an array of real numbers: {exc}") from None
    if arr.ndim == 1 and arr.shape[0] == width:
        raise ShapeError(f"{name} must be 2-D (one state per row); got a single vector — use {name}[None]")
    if arr.ndim != 2 or arr.shape[1] != width or (n is not None and arr.shape[0] != n):
        rows = "N" if n is None else str(n)
        raise ShapeError(f"{name} must have shape ({rows}, {width}), got {arr.shape}")
    return arr


def _chunks(n: int) -> int:
    return max(1, min(n, 4 * numba.get_num_threads()))


def _check(model, status, names, sizes) -> None:
    bad = np.flatnonzero(status)
    if bad.size:
        k = int(bad[0])
        try:
            raise_for_status(model, int(status[k]), names, sizes)
        except InputError as exc:
            raise type(exc)(f"row {k}: {exc}") from None


def _state_batch(kern, model, Q, V, X, names) -> np.ndarray:
    """Run a (Q, V, X) → (N, nv) batch kernel with validated inputs."""
    _tree_only(model)
    c = model.compiled()
    Q = _rows(Q, names[0], None, model.nq)
    n = Q.shape[0]
    V = _rows(V, names[1], n, model.nv)
    X = _rows(X, names[2], n, model.nv)
    out = np.empty((n, model.nv))
    status = np.zeros(n, dtype=np.int64)
    kern(np.array(c.ib), np.array(c.ws), Q, V, X, out, status, _chunks(n))
    _check(model, status, tuple(x.lower() for x in names), (model.nq, model.nv, model.nv))
    return out


def rnea(model, Q, V, A) -> np.ndarray:
    """Inverse dynamics for N states: returns τ of shape (N, nv)."""
    return _state_batch(rnea_batch_kernel, model, Q, V, A, ("Q", "V", "A"))


def aba(model, Q, V, TAU) -> np.ndarray:
    """Forward dynamics for N states: returns accelerations of shape (N, nv)."""
    return _state_batch(aba_batch_kernel, model, Q, V, TAU, ("Q", "V", "TAU"))


def crba(model, Q) -> np.ndarray:
    """Mass matrices for N configurations: returns (N, nv, nv)."""
    _tree_only(model)
    c = model.compiled()
    Q = _rows(Q, "Q", None, model.nq)
    n = Q.shape[0]
    out = np.empty((n, model.nv, model.nv))
    status = np.zeros(n, dtype=np.int64)
    crba_batch_kernel(np.array(c.ib), np.array(c.ws), Q, out, status, _chunks(n))
    _check(model, status, ("q",), (model.nq,))
    return out
