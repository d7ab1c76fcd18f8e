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


class InertiaWarning(UserWarning):
    """A body's rotational inertia about its centre of mass violates the triangle inequality
    (principal moments ``I1 + I2 < I3``: no rigid body has it) and was loaded as written: the default
    ``inertia="warn"`` of the loaders and ``inertia_check="warn"`` of ``Model.add_body``
    (``"physical"`` raises instead, ``"accept"`` is silent). The message names the file, link and
    line where known, and how far off the inertia is relative to its trace. Silence it for a file
    you trust with ``inertia="accept"`` or ``warnings.filterwarnings("ignore",
    category=InertiaWarning)``."""


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


class DataInUseError(LoopdynError, RuntimeError):
    """A :class:`~loopdyn.Data` was passed to a call while a call running in another thread was using
    it. A Data is one thread's workspace: the compiled kernels release the GIL and write into it, so
    two threads sharing one would corrupt each other's results; loopdyn detects the overlap and raises
    this instead. Give each thread its own Data (``model.create_data()`` or ``copy.deepcopy(data)``)."""


class RedundantConstraintsError(InputError):
    """The constraint rows are linearly dependent (the Delassus matrix is singular), so the forces
    are not unique: use the damped form (``mu > 0``) or remove the redundant rows."""


class UnknownNameError(LoopdynError, KeyError):
    """A body, joint, frame or constraint name (or index) that the model does not have. The message
    lists the closest names the model does have. Also a ``KeyError``, as a failed look-up."""

    def __str__(self) -> str:  # KeyError would print the message in quotes
        return str(self.args[0]) if self.args else ""


def unknown_name(what: str, name, candidates, where: str) -> UnknownNameError:
    """An :class:`UnknownNameError` for ``name`` among ``candidates``, suggesting the closest ones."""
    import difflib

    close = difflib.get_close_matches(str(name), [str(c) for c in candidates], n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    return UnknownNameError(f"no {what} named {name!r} in {where}{hint}")


class MJCFError(ModelError):
    """An MJCF (MuJoCo) document is malformed or does not compile; the message is MuJoCo's."""


class MJCFFileNotFoundError(MJCFError, FileNotFoundError):
    """The MJCF file given to :func:`loopdyn.load_mjcf` does not exist."""


class MissingDependencyError(LoopdynError, ImportError):
    """An optional package a function needs is not installed (e.g. ``mujoco`` for MJCF)."""


class SingularInertiaError(InputError):
    """The articulated inertia seen by a joint is singular along the joint's motion (``D = Sᵀ P S`` is
    not positive definite): the subtree it moves is massless (e.g. a massless leaf body) or cannot
    resist that motion, so the mass matrix is singular. The message names the joint."""


class GimbalLockError(ConfigurationError):
    """A chain of Euler-angle sub-hinges (from :func:`loopdyn.partition`, or a ball joint inside a loop
    loaded as a :class:`~loopdyn.model.compound.Gimbal`) is at or too near its gimbal singularity,
    where angular velocities have no Euler-rate representation. The message names the joint."""


class JointConversionWarning(UserWarning):
    """Informational: a joint was loaded as another joint with exactly the same motion, but other
    coordinates — a ball joint inside a loop as a :class:`~loopdyn.model.compound.Gimbal` (see
    :meth:`loopdyn.Model.embed_ball_joints`). One line per joint, naming it, its axes and where its
    angles are singular. Silence it with ``warnings.simplefilter("ignore", JointConversionWarning)``."""


class SDFError(ModelError):
    """An SDF document is malformed. ``line`` is the source line of the offending element, if known."""

    def __init__(self, message: str, line: int | None = None, source: str | None = None):
        where = source or ""
        if line is not None:
            where += f"{':' if where else 'line '}{line}"
        super().__init__(f"{where}: {message}" if where else message)
        self.line = line
        self.source = source
