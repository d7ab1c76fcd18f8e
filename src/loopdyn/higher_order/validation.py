"""Input checks of :mod:`loopdyn.higher_order`, written once: kernel status codes and the exceptions
they stand for, and the slow-path coercion of arguments the compiled kernels refused."""

from __future__ import annotations

import numpy as np

from ..errors import ConfigurationError, InputError, NonFiniteError, ShapeError  # noqa: F401 (re-exported)

STATUS_BASE = 1_000_000
BAD_SHAPE = 1  # index = argument position
NOT_FINITE = 10  # kind NOT_FINITE + argument position; index = flat index of the first bad element
BAD_QUAT = 3  # index = body
BAD_UNIT_COMPLEX = 4  # index = body
SINGULAR = 5  # index = body
ORDER_MISMATCH = 6  # index = argument position whose order disagrees with the first stack's
UNIT_TOL = 1e-6  # as loopdyn's other algorithms: | |quaternion| - 1 | and | cos² + sin² - 1 |


def status(kind: int, index: int) -> int:
    return kind * STATUS_BASE + index


def raise_for_status(model, st: int, names: tuple, shapes: tuple) -> None:
    """Raise the specific exception for kernel status ``st``. ``names``/``shapes`` describe the
    kernel's array arguments by position (``shapes`` as human-readable strings)."""
    kind, index = divmod(int(st), STATUS_BASE)
    if kind == BAD_SHAPE:
        raise ShapeError(f"{names[index]} must have shape {shapes[index]}")
    if kind == ORDER_MISMATCH:
        raise ShapeError(
            f"{names[index]}: its number of derivative orders does not match the other stacks' "
            f"(expected shape {shapes[index]})"
        )
    if NOT_FINITE <= kind < NOT_FINITE + 10:
        raise NonFiniteError(f"{names[kind - NOT_FINITE]} contains NaN or inf (first at flat index {index})")
    if kind in (BAD_QUAT, BAD_UNIT_COMPLEX, SINGULAR):
        b = model.bodies[index - 1]
        if kind == BAD_QUAT:
            o = b.idx_q + (3 if b.joint.nq == 7 else 0)
            raise ConfigurationError(
                f"q: the quaternion of joint {b.joint_name!r} (q[{o}:{o + 4}]) is not unit-norm within "
                f"{UNIT_TOL:g}; normalize it (loopdyn.normalize)"
            )
        if kind == BAD_UNIT_COMPLEX:
            raise ConfigurationError(
                f"q: (cos, sin) of continuous joint {b.joint_name!r} (q[{b.idx_q}:{b.idx_q + 2}]) is not "
                f"unit-norm within {UNIT_TOL:g}"
            )
        raise InputError(
            f"the articulated inertia seen by joint {b.joint_name!r} is not positive definite "
            "(a massless subtree or a singular mechanism)"
        )
    raise InputError(f"higher-order kernel failed with status {st}")


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
