"""The exceptions loopdyn raises.

Every error loopdyn raises on purpose derives from :class:`LoopdynError`, so ``except LoopdynError``
catches them all. Input errors also derive from the built-in exception a Python user would expect
(``ValueError`` or ``TypeError``), so generic handlers keep working.
"""

from __future__ import annotations


class LoopdynError(Exception):
    """Base class of every exception raised by loopdyn."""


class ModelError(LoopdynError, ValueError):
    """A model being built is inconsistent (unknown parent, duplicate name, bad inertia, ...)."""


class URDFError(ModelError):
    """A URDF document is malformed. ``line`` is the source line of the offending element, if known."""

    def __init__(self, message: str, line: int | None = None, source: str | None = None):
        where = ""
        if source:
            where += f"{source}"
        if line is not None:
            where += f"{':' if where else 'line '}{line}"
        super().__init__(f"{where}: {message}" if where else message)
        self.line = line
        self.source = source


class UnsupportedFeatureError(LoopdynError, NotImplementedError):
    """The input uses a feature loopdyn does not support (yet), e.g. a URDF ``<mimic>`` joint."""


class InputError(LoopdynError, ValueError):
    """An argument of an algorithm is invalid: wrong shape, not finite, ..."""


class ShapeError(InputError):
    """An array argument has the wrong shape."""


class NonFiniteError(InputError):
    """An array argument contains NaN or infinity."""


class ConfigurationError(InputError):
    """A configuration vector is not on the configuration manifold (e.g. a non-unit quaternion)."""


class DataMismatchError(InputError):
    """A Data object is used with a model it was not created for (or the model changed since)."""


class RedundantConstraintsError(InputError):
    """The constraint rows are linearly dependent (the Delassus matrix is singular), so the forces
    are not unique: use the damped form (``mu > 0``) or remove the redundant rows."""


class SDFError(ModelError):
    """An SDF document is malformed. ``line`` is the source line of the offending element, if known."""

    def __init__(self, message: str, line: int | None = None, source: str | None = None):
        where = source or ""
        if line is not None:
            where += f"{':' if where else 'line '}{line}"
        super().__init__(f"{where}: {message}" if where else message)
        self.line = line
        self.source = source
