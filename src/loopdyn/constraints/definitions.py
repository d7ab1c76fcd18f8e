"""Constraint specifications: what a user (or a URDF+ file) says ties bodies together.

Three kinds, all first-class:

* :class:`Coupling` — explicit linear transmission ``ratio · Σ_{b∈P} q_b − Σ_{b∈Q} q_b = 0`` between
  a predecessor and a successor body (P, Q = the bodies from their nearest common ancestor, exclusive,
  to each of them), e.g. a geared rotor (predecessor = link, successor = rotor, ratio = N) or a belt
  that sums joint angles (URDF+ ``<coupling>``).
* :class:`LinearConstraint` — any constant ``K q_J = 0`` over named joints.
* :class:`LoopJoint` — a joint closing a loop between a frame on one body and a frame on another:
  ``"point"``/``"spherical"`` (origins coincide, 3 rows), ``"revolute"`` (+ axes aligned, 5 rows),
  ``"prismatic"`` (orientations equal, relative position along the axis, 5 rows), ``"weld"`` (6 rows),
  ``"universal"`` (origins coincide and an axis fixed in A stays perpendicular to an axis fixed in B,
  4 rows).
  φ(q), K and k are derived from the kinematics.
* :class:`ImplicitConstraint` — a user formula ``φ(q_J) = 0`` written with sympy functions; K and
  k = −K̇q̇ are derived symbolically.

Redundant rows are normal; the model selects an independent subset when it is compiled.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

LOOP_KINDS = ("point", "spherical", "revolute", "prismatic", "weld", "universal")


@dataclass(frozen=True)
class Coupling:
    """``ratio · Σ_{b∈P} q_b − Σ_{b∈Q} q_b = 0`` (see the module docstring)."""

    name: str
    predecessor: str
    successor: str
    ratio: float


@dataclass(frozen=True)
class LinearConstraint:
    """``K · q[joints] = 0`` with constant ``K`` (c × len(joints))."""

    name: str
    joints: tuple[str, ...]
    K: np.ndarray = field(compare=False)


@dataclass(frozen=True)
class LoopJoint:
    """A loop-closing joint of ``kind`` between frame A (``predecessor`` body at ``predecessor_placement``)
    and frame B (``successor`` body at ``successor_placement``); ``axis`` in frame A for revolute,
    prismatic and universal loop joints; ``successor_axis`` in frame B for universal ones (the cross
    axis, fixed to the successor, perpendicular to ``axis`` at assembly)."""

    name: str
    kind: str
    predecessor: str
    successor: str
    predecessor_placement: tuple = field(compare=False)  # (R, p)
    successor_placement: tuple = field(compare=False)
    axis: tuple = (1.0, 0.0, 0.0)
    successor_axis: tuple | None = None


@dataclass(frozen=True)
class ImplicitConstraint:
    """``phi(q) = 0`` where ``phi`` maps a list of sympy symbols (the coordinates of ``joints``, in that
    order) to a list of sympy expressions."""

    name: str
    joints: tuple[str, ...]
    phi: Callable[[Sequence], Sequence] = field(compare=False)
