"""The two ancestor walks of the tree CRBA (``algorithms.crba``): in local frames (shallow trees) and
in each subtree's root frame (deep trees, ``DEEP_BODIES`` bodies or more with more than ``DEEP``
non-root ancestors per body on average), checked against Pinocchio's crba and against the columns
of inverse dynamics, on long random chains with short branches and every joint kind."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
import trees
from trees import assert_close

import loopdyn
from loopdyn.algorithms import crba as tree_crba
from loopdyn.model import layout as L

# (seed, moving bodies, floating, joint mix)
DEEP_SPECS = [
    (301, 24, False, {"revolute": 1.0}),
    (302, 30, True, None),  # every joint kind, spherical and prismatic ancestors included
    (303, 20, False, {"spherical": 1.0, "revolute": 2.0, "prismatic_aligned": 1.0}),
    (304, 40, True, {"unbounded": 1.0, "revolute_aligned": 1.0, "prismatic": 1.0}),
]


def deep_recipe(seed: int, n: int, floating: bool, mix, depth_first_order: bool = True):
    """A random tree reshaped into a long chain with short side branches."""
    rng = np.random.default_rng(seed)
    recipe = trees.random_recipe(rng, n, floating=floating, joint_mix=mix, fixed_prob=0.1,
                                 depth_first_order=False, name=f"deep{seed}")
    for k, link in enumerate(recipe.links[1:], start=1):
        link.parent = k - 1 if rng.random() < 0.85 else max(k - 3, 0)
    return trees.depth_first(recipe) if depth_first_order else recipe


def mean_depth(lm) -> tuple[int, float]:
    """(bodies, mean number of non-root ancestors per body), from the model's parent list."""
    parents = [b.parent for b in lm.bodies]
    depth = []
    for j, par in enumerate(parents, start=1):
        depth.append(0 if par == 0 else (1 if parents[par - 1] == 0 else depth[par - 1] + 1))
        assert len(depth) == j
    return len(depth), float(np.mean(depth))


def rnea_columns(lm, ld, q) -> np.ndarray:
    """M(q) column by column: ``M e_k = rnea(q, 0, e_k) − rnea(q, 0, 0)``."""
    z = np.zeros(lm.nv)
    g = loopdyn.rnea(lm, ld, q, z, z)
    return np.column_stack([loopdyn.rnea(lm, ld, q, z, e) - g for e in np.eye(lm.nv)])


@pytest.mark.parametrize("spec", DEEP_SPECS, ids=[f"deep{s[0]}" for s in DEEP_SPECS])
def test_deep_trees_take_the_root_frame_walk_and_match_pinocchio(spec):
    recipe = deep_recipe(*spec)
    lm, pm = trees.build_loopdyn(recipe), trees.build_pinocchio(recipe)
    nb, depth = mean_depth(lm)
    assert nb >= tree_crba.DEEP_BODIES and depth > tree_crba.DEEP, (nb, depth)
    ld, pd = lm.create_data(), pm.createData()
    assert ld.ib[0, L.I0_ANCESTORS] == round(depth * nb)  # the count the kernel decides on
    rng = np.random.default_rng(spec[0])
    for s in range(4):
        q, _, _ = trees.random_state(rng, lm)
        M = loopdyn.crba(lm, ld, q)
        expected = pin.crba(pm, pd, q)
        expected = np.triu(expected) + np.triu(expected, 1).T
        assert_close(M, expected, what=f"deep{spec[0]}, state {s}: crba")
        assert np.array_equal(M, M.T)


@pytest.mark.parametrize("spec", DEEP_SPECS[1:3], ids=[f"deep{s[0]}-drawn" for s in DEEP_SPECS[1:3]])
def test_deep_trees_in_drawn_order_match_inverse_dynamics(spec):
    recipe = deep_recipe(*spec, depth_first_order=False)
    assert not trees.is_depth_first(recipe)
    lm = trees.build_loopdyn(recipe)
    ld = lm.create_data()
    rng = np.random.default_rng(spec[0] + 1)
    for s in range(3):
        q, _, _ = trees.random_state(rng, lm)
        assert_close(loopdyn.crba(lm, ld, q), rnea_columns(lm, ld, q), what=f"drawn deep{spec[0]}, state {s}")


def test_both_walks_agree_with_the_same_tree():
    """Forcing either walk on one deep and one shallow model gives the same matrix (to rounding)."""
    for recipe in (deep_recipe(*DEEP_SPECS[1]), trees.tree_recipe(len(trees.TREE_SPECS) - 1)):
        lm = trees.build_loopdyn(recipe)
        ld = lm.create_data()
        q, _, _ = trees.random_state(np.random.default_rng(7), lm)
        Ml, Mr = np.empty((lm.nv, lm.nv)), np.empty((lm.nv, lm.nv))
        tree_crba.crba_local(ld.ib, ld.ws, q, Ml)
        tree_crba.crba_root(ld.ib, ld.ws, q, Mr)
        assert_close(Mr, Ml, rtol=1e-12, atol=1e-12, what=f"{recipe.name}: root-frame vs local walk")
        assert_close(Ml, rnea_columns(lm, ld, q), what=f"{recipe.name}: local walk vs inverse dynamics")


def test_crba_argument_errors_and_coercion():
    """The tree crba's direct kernel call keeps the slow path: lists and int arrays are coerced,
    wrong sizes and non-unit quaternions raise loopdyn errors."""
    lm, _ = trees.tree_case(len(trees.TREE_SPECS) - 1, with_pinocchio=False)
    ld = lm.create_data()
    q, _, _ = trees.random_state(np.random.default_rng(3), lm)
    M = loopdyn.crba(lm, ld, q)
    assert_close(loopdyn.crba(lm, ld, list(q)), M, rtol=0, atol=0, what="q as a list")
    strided = np.zeros(2 * lm.nq)
    strided[::2] = q
    assert_close(loopdyn.crba(lm, ld, strided[::2]), M, rtol=0, atol=0, what="q as a strided view")
    with pytest.raises(loopdyn.errors.ShapeError):
        loopdyn.crba(lm, ld, q[:-1])
    bad = q.copy()
    bad[3:7] *= 2.0  # the root free flyer's quaternion
    with pytest.raises(loopdyn.errors.LoopdynError):
        loopdyn.crba(lm, ld, bad)
    with pytest.raises(loopdyn.errors.InputError):
        loopdyn.crba(lm, ld, ["a"] * lm.nq)
