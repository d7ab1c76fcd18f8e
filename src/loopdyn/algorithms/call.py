"""The one way a public function runs a kernel: fast path, coercion on a type mismatch, status.

Kernels are compiled for exactly one signature (:func:`loopdyn.algorithms.common.kernel`), so the
public functions pass the user's arrays straight through. When an argument has another dtype or
layout (a list, an int array, a non-contiguous view) Numba raises ``TypeError`` before running
anything; :func:`run` then coerces the user arguments with clear errors and calls again. A non-zero
status becomes the specific exception it stands for (:func:`loopdyn.algorithms.status.raise_for_status`).

Each public function describes its kernel's user arguments once, as a module constant::

    JAC_ARGS = KernelArgs(2, ("q", CONFIGURATION))
    ...
    run(jacobian_kernel, model, JAC_ARGS, (data.ib, data.ws, q, frame, out))

The per-control-cycle functions of :mod:`loopdyn.dynamics` (``rnea``, ``aba``, ``crba``) write the
same three steps out in their own body instead — call; on ``TypeError`` call again with
:meth:`KernelArgs.coerce_user`; raise for a status — because the Python frame of :func:`run` is about
a tenth of a 1–2 µs call on a small robot.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError, ShapeError
from ..jit import lazy_group
from ..model.data import load_deferred_passes
from .status import DEFERRED_LAZY_CODE, LOOP_CODE_MISSING, STATUS_BASE, raise_for_status

# the position of a cluster kernel's first user argument: after Data.cluster_arrays (ints, floats)
CLUSTER_FIRST = 2

# kinds of user argument
CONFIGURATION = 0  # q: 1-D float64 of size nq
TANGENT = 1  # v, a, tau: 1-D float64 of size nv
FORCES = 2  # f_ext: (njoints, 6) float64 (the empty (0, 6) array stands for 'none')
SCALAR = 3  # a float


class KernelArgs:
    """Where a kernel's user arguments sit among its arguments, their names and their kinds.

    ``first`` is the position of the first user argument; the user arguments follow one another in
    the order the kernel numbers them in its status codes.
    """

    __slots__ = ("first", "names", "kinds")

    def __init__(self, first: int, *args: tuple[str, int]):
        self.first = first
        self.names = tuple(name for name, _ in args)
        self.kinds = tuple(kind for _, kind in args)

    def coerce(self, model, args: tuple) -> tuple:
        """``args`` with every user argument converted to the kernel's type (or a clear error)."""
        first = self.first
        return (*args[:first], *self.coerce_user(model, args[first : first + len(self.names)]),
                *args[first + len(self.names) :])  # fmt: skip

    def coerce_user(self, model, user: tuple) -> tuple:
        """The user arguments ``user`` (the first ``len(user)`` of this kernel's, in order) converted to
        the kernel's types, or a clear error; what already has the type is passed through."""
        out = []
        for x, name, kind in zip(user, self.names, self.kinds, strict=False):  # user: a prefix
            if kind == FORCES:
                if not (isinstance(x, np.ndarray) and x.shape == (0, 6) and x.dtype == np.float64):
                    x = as_force_array(x, model.njoints)  # (0, 6): 'no forces', kept
            elif kind == SCALAR:
                x = as_float(x, name)
            else:
                x = as_float_vector(x, name)
            out.append(x)
        return tuple(out)


def missing_code_loaded(data, status: int) -> bool:
    """Whether ``status`` says that a kernel met a lazy pass this process had not loaded (of a group in
    :data:`.status.DEFERRED_LAZY_CODE`, its number the status' index) and it is loaded now: the caller
    runs the call again. Called only on a non-zero status: a call that succeeds pays nothing for it.
    Only for kernels whose arguments are the user's inputs and fresh outputs: a kernel that reads an
    array it also writes (the contact kernels' ``desired`` / forces) would run again on what its first
    run left there; load the group before such a call instead."""
    if status // STATUS_BASE != LOOP_CODE_MISSING:
        return False
    group = lazy_group(status % STATUS_BASE)
    return group in DEFERRED_LAZY_CODE and load_deferred_passes(data, group)


def run(kern, model, spec: KernelArgs, args: tuple) -> None:
    """Run ``kern(*args)``; on a type mismatch coerce the user arguments and run again; raise the
    exception a non-zero status stands for."""
    try:
        st = kern(*args)
    except TypeError:
        st = kern(*spec.coerce(model, args))
    if st:
        raise_for_status(model, st, spec.names)


def _kernel_array(x, name: str) -> np.ndarray:
    """``x`` as a contiguous, writeable float64 array (the kernels' type; a read-only array — NumPy's
    view of a JAX array, a broadcast — is copied: the kernels only read it, but Numba types read-only
    arrays apart), with a clear error."""
    try:
        arr = np.ascontiguousarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be an array of real numbers: {exc}") from None
    return arr if arr.flags.writeable else arr.copy()


def as_float_vector(x, name: str) -> np.ndarray:
    """Coerce an argument to a contiguous float64 1-D array, with a clear error."""
    arr = _kernel_array(x, name)
    if arr.ndim != 1:
        raise ShapeError(f"{name} must be 1-D, got shape {arr.shape}")
    return arr


def as_force_array(f_ext, njoints: int) -> np.ndarray:
    """Coerce external forces to a contiguous float64 ``(njoints, 6)`` array, with a clear error."""
    arr = _kernel_array(f_ext, "f_ext")
    if arr.shape != (njoints, 6):
        raise ShapeError(f"f_ext must have shape ({njoints}, 6) (row 0 = universe), got {arr.shape}")
    return arr


def as_float(x, name: str) -> float:
    """Coerce a scalar argument to float, with a clear error."""
    try:
        return float(x)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be a real number, got {x!r}") from None
