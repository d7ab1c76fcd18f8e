"""Input checks of :mod:`loopdyn.higher_order`: the kernel status codes (loopdyn's, from
:mod:`loopdyn.algorithms.status`) and the slow-path coercion of arguments the compiled kernels refused."""

from __future__ import annotations

import numpy as np

from ..algorithms import status
from ..algorithms.status import (  # noqa: F401  (the codes the kernels of this family return)
    BAD_QUAT,
    BAD_SHAPE,
    BAD_UNIT_COMPLEX,
    NOT_FINITE,
    ORDER_MISMATCH,
    SINGULAR,
    STATUS_BASE,
    UNIT_TOL,
)
from ..errors import ConfigurationError, InputError, NonFiniteError, ShapeError  # noqa: F401 (re-exported)


def raise_for_status(model, st: int, names: tuple, shapes: tuple) -> None:
    """Raise the specific exception for kernel status ``st`` (:func:`loopdyn.algorithms.status.
    raise_for_status`); ``names``/``shapes`` describe the kernel's array arguments by position
    (``shapes`` as human-readable strings)."""
    status.raise_for_status(model, st, names, shapes=shapes)


def as_array(x, name: str, ndim: int) -> np.ndarray:
    """``x`` as a C-contiguous float64 array with ``ndim`` dimensions, or a specific error."""
    if isinstance(x, np.ndarray) and x.dtype == np.bool_:
        raise InputError(f"{name} must be an array of real numbers, got booleans")
    try:
        arr = np.ascontiguousarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be an array of real numbers: {exc}") from None
    if not arr.flags.writeable:  # e.g. a read-only view of a JAX array: the kernels take mutable arrays
        arr = arr.copy()
    if arr.ndim != ndim:
        raise ShapeError(f"{name} must be a {ndim}-D array, got shape {arr.shape}")
    return arr
