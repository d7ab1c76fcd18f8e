"""Kernels with an explicit Numba signature, compiled (or loaded from the on-disk cache) on their first
call rather than at import, so that ``import loopdyn`` stays fast on a fresh installation.

The explicit signature makes arguments of any other type raise ``TypeError`` (the Python wrappers
then coerce them and report a specific error) instead of silently compiling a new specialisation.
"""

from __future__ import annotations

import sys

from numba import njit


def lazy_kernel(signature: str):
    """Decorator: ``njit(signature, cache=True)`` on first call; the compiled dispatcher then replaces
    the stub in its module's namespace (callers look kernels up as module globals)."""

    def deco(pyfunc):
        module = sys.modules[pyfunc.__module__]
        name = pyfunc.__name__

        def stub(*args):
            current = getattr(module, name)
            if current is stub:
                current = njit(signature, cache=True)(pyfunc)
                setattr(module, name, current)
            return current(*args)

        stub.__name__ = name
        stub.__doc__ = pyfunc.__doc__
        stub.py_func = pyfunc
        return stub

    return deco
