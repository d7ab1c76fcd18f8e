"""Batched dynamics: many states in one call, spread over all cores (``rnea``, ``aba``, ``crba``).

Each function takes one state per row (``Q`` of shape (N, nq), ``V``/``A``/``TAU`` of shape (N, nv))
and returns one result per row. Rows are split into chunks processed in parallel by Numba threads,
each with a private copy of the workspace; the thread count is Numba's (``numba.set_num_threads``).
"""

from __future__ import annotations

import numba
import numpy as np

from .algorithms import batch as kernels
from .algorithms.status import raise_for_status
from .algorithms.validation import require_tree
from .errors import InputError, ShapeError

__all__ = ["aba", "crba", "rnea"]


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
    require_tree(model, "the batch functions (call loopdyn.rnea / aba / crba per state)")
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
    return _state_batch(kernels.rnea_batch_kernel, model, Q, V, A, ("Q", "V", "A"))


def aba(model, Q, V, TAU) -> np.ndarray:
    """Forward dynamics for N states: returns accelerations of shape (N, nv)."""
    return _state_batch(kernels.aba_batch_kernel, model, Q, V, TAU, ("Q", "V", "TAU"))


def crba(model, Q) -> np.ndarray:
    """Mass matrices for N configurations: returns (N, nv, nv)."""
    require_tree(model, "the batch functions (call loopdyn.rnea / aba / crba per state)")
    c = model.compiled()
    Q = _rows(Q, "Q", None, model.nq)
    n = Q.shape[0]
    out = np.empty((n, model.nv, model.nv))
    status = np.zeros(n, dtype=np.int64)
    kernels.crba_batch_kernel(np.array(c.ib), np.array(c.ws), Q, out, status, _chunks(n))
    _check(model, status, ("q",), (model.nq,))
    return out
