"""Configuration-space operations for any model: neutral and random configurations, integration on
the manifold, differences, normalization.

A kinematic tree uses :mod:`loopdyn.model.tree_configuration` (Pinocchio's conventions, joint by
joint); a model with loops or couplings uses :mod:`loopdyn.model.state`, which works on the clusters'
coordinates and keeps implicit clusters on their constraints.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from . import state
from . import tree_configuration as tree
from .tree_configuration import NORM_TOLERANCE, is_normalized, normalize

__all__ = [
    "NORM_TOLERANCE",
    "difference",
    "integrate",
    "is_normalized",
    "neutral",
    "normalize",
    "random_configuration",
]


def neutral(model) -> np.ndarray:
    """The neutral configuration (size ``nq``): zero angles and displacements, identity rotations; for
    an implicit cluster, the reference configuration found when the model was built."""
    return state.neutral(model) if model.has_constraints else tree.neutral(model)


def random_configuration(
    model, rng: int | np.random.SeedSequence | np.random.Generator | None = None
) -> np.ndarray:
    """A random configuration inside the joints' position limits that satisfies every constraint
    (see :func:`loopdyn.model.tree_configuration.random_configuration` for the distributions).

    ``rng`` is ``None`` (fresh entropy), an int seed or a :class:`numpy.random.Generator`."""
    if model.has_constraints:
        return state.random_configuration(model, rng)
    return tree.random_configuration(model, rng)


def integrate(model, q: ArrayLike, v: ArrayLike, dt: float = 1.0) -> np.ndarray:
    """The configuration reached from ``q`` by moving with constant velocity ``v`` for ``dt``:
    ``q ⊕ v dt`` (Pinocchio's ``integrate(model, q, v * dt)``; on a model with loops, implicit
    clusters are projected back onto their constraints)."""
    if model.has_constraints:
        return state.integrate(model, q, v, dt)
    return tree.integrate(model, q, v, dt)


def difference(model, q0: ArrayLike, q1: ArrayLike) -> np.ndarray:
    """The velocity ``v`` (size ``nv``) with ``integrate(model, q0, v) == q1`` (Pinocchio's
    ``difference``): the shortest one for rotations (angles in ``[-π, π]``)."""
    if model.has_constraints:
        return state.difference(model, q0, q1)
    return tree.difference(model, q0, q1)
