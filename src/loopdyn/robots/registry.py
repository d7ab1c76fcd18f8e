"""The built-in robots by name: ``list()``, ``build(name, variant=...)``, ``approximate``,
``unconstrained``.

Every built-in robot is also a one-line constructor of :mod:`loopdyn.robots` (``mini_cheetah()``,
``mit_humanoid()``, ...). The registry adds:

* :func:`list_` (exported as ``loopdyn.robots.list``) — one :class:`RobotInfo` per robot: name,
  one-line description, bodies, clusters, nq, nv and total mass of its default model (computed once,
  then cached);
* :func:`build` — the model by name, ``variant="exact"`` (the model with its constraints),
  ``"approximate"`` (the paper's "Approximate" twin: rotors dropped, their reflected inertia as
  diagonal armature, :func:`~loopdyn.baselines.approximate_model` with ``mode="diagonal"``) or
  ``"unconstrained"`` (rotors dropped, no armature, :func:`~loopdyn.baselines.unconstrained_model`);
  the twins are :class:`~loopdyn.baselines.ApproximateModel` objects, whose ``.tree`` is a plain
  model. Keyword arguments go to the robot's function (``parameters="paper"``, ``n=6``, ...);
* :func:`approximate`, :func:`unconstrained` — the twins of a robot name or of a model.

Approximate twins need rotors a cluster can drop: the implicit linkages (``four_bar``,
``planar_leg_linkage``, ``five_bar``, ``rssr_linkage``, ``delta_robot``) have none, so their twins raise
:class:`~loopdyn.errors.UnsupportedFeatureError` (GRBDA throws for them too, spec §2.7.2).
"""

from __future__ import annotations

import builtins
import importlib
from dataclasses import dataclass, field

from ..errors import InputError, UnknownNameError
from ..model.model import Model

__all__ = ["VARIANTS", "RobotInfo", "approximate", "build", "info", "list", "list_", "names", "unconstrained"]

#: the model variants :func:`build` makes
VARIANTS = ("exact", "approximate", "unconstrained")


@dataclass(frozen=True)
class _Entry:
    module: str  # where the robot's function lives (imported on first use)
    function: str
    description: str
    defaults: dict = field(default_factory=dict)  # keyword arguments of the default model

    def factory(self):
        return getattr(importlib.import_module(self.module, __package__), self.function)


# in the order of the spec's §5 table
_REGISTRY: dict[str, _Entry] = {
    "mini_cheetah": _Entry(
        ".builtin", "mini_cheetah", "MIT Mini Cheetah quadruped: floating base, 12 geared transmissions"
    ),
    "mit_humanoid": _Entry(
        ".humanoids",
        "mit_humanoid",
        "MIT Humanoid: floating base, per leg 3 geared + knee-ankle parallel belt, per arm 4 geared",
    ),
    "mit_humanoid_leg": _Entry(
        ".builtin",
        "mit_humanoid_leg",
        "MIT Humanoid leg on a fixed base: 3 geared + knee-ankle parallel belt",
    ),
    "tello": _Entry(
        ".tello_model",
        "tello",
        "UIUC Tello humanoid: floating base, hip and knee-ankle differentials, geared hip clamps and arms",
    ),
    "jvrc1": _Entry(
        ".humanoids",
        "jvrc1",
        "JVRC-1 humanoid: floating base, all 32 joints geared (25 as in its file with parameters='current')",
    ),
    "gt_chain": _Entry(
        ".serial", "gt_chain", "12-link serial chain of geared transmissions (uniform planar)", {"n": 12}
    ),
    "pbt_chain": _Entry(
        ".serial",
        "pbt_chain",
        "12-link serial chain of parallel-belt transmissions (uniform planar)",
        {"n": 12},
    ),
    "four_bar": _Entry(
        ".builtin", "four_bar", "planar parallelogram four-bar linkage closed by a revolute loop joint"
    ),
    "planar_leg_linkage": _Entry(
        ".linkages", "planar_leg_linkage", "planar leg: revolute thigh and a four-bar shank linkage"
    ),
    "five_bar": _Entry(
        ".linkages",
        "five_bar",
        "planar 2-DoF five-bar: two actuated cranks, distal links joined by a revolute loop joint",
    ),
    "rssr_linkage": _Entry(
        ".parallel",
        "rssr_linkage",
        "spatial four-bar R-S-S-R: crank, rod with a gimbal and a point loop joint as ball joints, rocker",
    ),
    "delta_robot": _Entry(
        ".parallel",
        "delta_robot",
        "3-R-U-U delta robot: universal joints as sub-hinge chains and as universal loop joints",
    ),
    "double_pendulum": _Entry(
        ".builtin", "double_pendulum", "planar two-link pendulum on a fixed base, no constraint"
    ),
    "aerial_manipulator": _Entry(
        ".aerial",
        "aerial_manipulator",
        "tilted hexarotor with two 3-R arms (Ali et al. 2026, Table 3): free flyer, 6 revolute joints",
    ),
}


@dataclass(frozen=True)
class RobotInfo:
    """What :func:`list_` reports about one built-in robot (its default model)."""

    name: str
    description: str
    bodies: int
    clusters: int
    nq: int
    nv: int
    mass: float

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "description": self.description,
            "bodies": self.bodies,
            "clusters": self.clusters,
            "nq": self.nq,
            "nv": self.nv,
            "mass": self.mass,
        }


_INFO: dict[str, RobotInfo] = {}


def names() -> builtins.list[str]:
    """The names of the built-in robots."""
    return [*_REGISTRY]


def _entry(name: str) -> _Entry:
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        raise UnknownNameError(f"unknown robot {name!r}; known robots: {', '.join(_REGISTRY)}") from None


def build(name: str, variant: str = "exact", **kwargs):
    """The built-in robot ``name``: a :class:`~loopdyn.Model` for ``variant="exact"``, an
    :class:`~loopdyn.baselines.ApproximateModel` for ``"approximate"`` (reflected inertia on the
    diagonal) and ``"unconstrained"`` (none). ``kwargs`` go to the robot's function (e.g.
    ``parameters="paper"``; ``n`` and ``seed`` for the chains, default ``n=12``). Unknown names raise
    :class:`KeyError` listing the known ones."""
    entry = _entry(name)
    if variant not in VARIANTS:
        raise InputError(f"build: variant must be one of {VARIANTS}, got {variant!r}")
    model = entry.factory()(**{**entry.defaults, **kwargs})
    if variant == "exact":
        return model
    return _twin(model, variant)


def _twin(model: Model, variant: str):
    from ..baselines.approximate import approximate_model, unconstrained_model

    if variant == "approximate":
        return approximate_model(model, "diagonal")
    return unconstrained_model(model)


def _model(name_or_model, kwargs) -> Model:
    if isinstance(name_or_model, Model):
        if kwargs:
            raise InputError(f"keyword arguments {sorted(kwargs)} only apply to a robot name, not to a model")
        return name_or_model
    return build(name_or_model, **kwargs)


def approximate(name_or_model, **kwargs):
    """The paper's "Approximate" twin (reflected inertia as diagonal armature) of a built-in robot
    (by name; ``kwargs`` go to its function) or of a model."""
    return _twin(_model(name_or_model, kwargs), "approximate")


def unconstrained(name_or_model, **kwargs):
    """The paper's "Unconstrained" twin (rotors dropped, no reflected inertia) of a built-in robot
    (by name; ``kwargs`` go to its function) or of a model."""
    return _twin(_model(name_or_model, kwargs), "unconstrained")


def info(name: str) -> RobotInfo:
    """The :class:`RobotInfo` of one robot (built once, then cached)."""
    entry = _entry(name)
    hit = _INFO.get(name)
    if hit is None:
        model = build(name)
        hit = RobotInfo(
            name,
            entry.description,
            model.nbodies,
            len(model.clusters().clusters),
            model.nq,
            model.nv,
            model.mass,
        )
        _INFO[name] = hit
    return hit


def list_() -> builtins.list[RobotInfo]:
    """One :class:`RobotInfo` per built-in robot (name, description, bodies, clusters, nq, nv, total
    mass of the default model), in the order of the spec's robot table. Exported as
    ``loopdyn.robots.list``; the first call builds every robot once, later calls are free."""
    return [info(name) for name in _REGISTRY]


list = list_  # noqa: A001 - ``loopdyn.robots.list()``; this module uses ``builtins.list`` for the type
