"""Shared fixtures: the random trees and example-robot-data robots the tests run on, their states.

``tests/`` has no ``__init__.py``, so pytest (rootdir-relative "rootdir/conftest" import mode)
puts this directory on ``sys.path`` and the helper module is imported as ``trees``.
"""

from __future__ import annotations

import os

# One BLAS thread per test process, set before NumPy and SciPy load their OpenBLAS: pytest-xdist
# already runs one worker per core, and a threaded OpenBLAS in each oversubscribes the cores. Its
# threads then wait for a core while spinning: on the shared 2-core machine the base-parameter test of
# mini_cheetah (a few hundred least-squares solves of 800 × 180) took 290 CPU-s with two BLAS threads
# and 1.5 s with one. Subprocesses (the docs build, the examples) inherit the setting.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

from dataclasses import dataclass  # noqa: E402

import numpy as np
import pytest
import trees

import loopdyn

#: random states per robot/tree in every comparison
N_STATES = 50

TREE_IDS = [trees.tree_case_id(spec) for spec in trees.TREE_SPECS]
ROBOT_IDS = list(trees.ROBOTS)


@dataclass
class Case:
    """One model under test: the loopdyn model, its Pinocchio twin (or None) and a seed."""

    name: str
    lm: loopdyn.Model
    pm: object | None
    seed: int

    def rng(self, salt: int = 0) -> np.random.Generator:
        return np.random.default_rng([self.seed, salt])

    def states(self, n: int = N_STATES, scale: float = 1.0, salt: int = 0):
        """``n`` reproducible random ``(q, v, a)`` triples."""
        rng = self.rng(salt)
        return [trees.random_state(rng, self.lm, scale) for _ in range(n)]

    def random_fext(self, rng) -> np.ndarray:
        """A random external-force array ``(njoints, 6)``; row 0 holds garbage that must be ignored."""
        return rng.normal(size=(self.lm.njoints, 6)) * 3.0


def load_case(case_id: str, with_pinocchio: bool) -> Case:
    if case_id in ROBOT_IDS:
        lm, pm = trees.robot_case(case_id, with_pinocchio)
        seed = 1000 + ROBOT_IDS.index(case_id)
    else:
        index = TREE_IDS.index(case_id)
        lm, pm = trees.tree_case(index, with_pinocchio)
        seed = trees.TREE_SPECS[index][0]
    return Case(case_id, lm, pm, seed)


@pytest.fixture(params=TREE_IDS + ROBOT_IDS)
def pin_case(request) -> Case:
    """Every tree and robot, with its Pinocchio twin (Pinocchio is a test dependency: no skip)."""
    return load_case(request.param, with_pinocchio=True)


@pytest.fixture(params=TREE_IDS + ROBOT_IDS)
def any_case(request) -> Case:
    """Every tree and robot, loopdyn only."""
    return load_case(request.param, with_pinocchio=False)


@pytest.fixture(params=TREE_IDS)
def tree_case(request) -> Case:
    """Every random tree, loopdyn only."""
    return load_case(request.param, with_pinocchio=False)
