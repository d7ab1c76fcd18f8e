"""The compiled baselines (:mod:`loopdyn.baselines.kernels`, ``compiled=True``: one kernel call each)
against the independent oracle path (``compiled=False``: G, g, K, k by sympy and the partition
formula, NumPy/SciPy dense algebra), on random states of the built-in robots with loops, random
cluster models and plain trees: 1e-10 relative to the result's scale."""

from __future__ import annotations

import numpy as np
import pytest
import trees
from cluster_models import random_cluster_model

import loopdyn
from loopdyn import robots
from loopdyn.baselines import calls
from loopdyn.baselines.lagrange import lagrange_forward_dynamics
from loopdyn.baselines.projection import projected_delassus, projected_rnea, projection_forward_dynamics
from loopdyn.errors import ConfigurationError, NonFiniteError, ShapeError

RTOL = 1e-10

MODELS = {
    "gt_chain12": lambda: robots.gt_chain(12, seed=0),
    "pbt_chain12": lambda: robots.pbt_chain(12, seed=0),
    "mini_cheetah": lambda: robots.mini_cheetah(parameters="paper"),
    "mit_humanoid": lambda: robots.mit_humanoid(parameters="paper"),
    "tello": lambda: robots.tello(arms=True),
    "tello_legs": lambda: robots.tello(arms=False),
    "jvrc1": lambda: robots.jvrc1(parameters="paper"),
    "four_bar": robots.four_bar,
    "planar_leg_linkage": robots.planar_leg_linkage,
    "clusters3": lambda: random_cluster_model(3, 4, floating=True),
    "clusters6": lambda: random_cluster_model(6, 4, floating=False),
    "clusters-big": lambda: random_cluster_model(42, 8, floating=True),
}


@pytest.fixture(scope="module", params=list(MODELS))
def model(request):
    return MODELS[request.param]()


def rel_close(actual, expected, what, rtol=RTOL):
    """``|actual − expected| ≤ rtol · max(1, max|expected|)``, shapes equal."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    if not expected.size:
        return
    scale = max(1.0, float(np.max(np.abs(expected))))
    err = float(np.max(np.abs(actual - expected)))
    assert err <= rtol * scale, f"{what}: max error {err:.3e} (scale {scale:.3e})"


def states(model, n, seed):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        q = loopdyn.random_configuration(model, rng)
        yield q, rng.uniform(-1, 1, model.nv), rng.uniform(-1, 1, model.nv), rng


def constraints_of(model):
    """A 6-D constraint on the last body, a 3-D one on a body in the middle, a custom 2-row one on
    the first (two of them may share a branch: the projected Delassus matrix does not care)."""
    names = [b.name for b in model.bodies]
    K = np.array([[1.0, 0.0, 0.5, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.2, 1.0, 0.0]])
    return [
        loopdyn.Constraint(names[-1], "6d"),
        loopdyn.Constraint(names[len(names) // 2], "3d", (np.eye(3), [0.05, -0.02, 0.1])),
        loopdyn.Constraint(names[0], K),
    ]


@pytest.mark.parametrize("with_fext", [False, True], ids=["no-fext", "fext"])
def test_dynamics_equal_the_oracle(model, with_fext):
    for q, v, x, rng in states(model, 4, seed=11 + with_fext):
        f = 2.0 * rng.normal(size=(model.njoints, 6)) if with_fext else None
        rel_close(projected_rnea(model, q, v, x, f, compiled=True), projected_rnea(model, q, v, x, f),
                  "projected RNEA")  # fmt: skip
        y, qdd = projection_forward_dynamics(model, q, v, x, f, full_output=True, compiled=True)
        y0, qdd0 = projection_forward_dynamics(model, q, v, x, f, full_output=True)
        rel_close(y, y0, "projection ÿ")
        rel_close(qdd, qdd0, "projection q̈_span")
        for method in ("dense", "ltl"):
            y, qdd, lam = lagrange_forward_dynamics(
                model, q, v, x, f, method, full_output=True, compiled=True
            )
            y0, qdd0, lam0 = lagrange_forward_dynamics(model, q, v, x, f, method, full_output=True)
            rel_close(y, y0, f"Lagrange {method} ÿ")
            rel_close(qdd, qdd0, f"Lagrange {method} q̈_span")
            rel_close(lam, lam0, f"Lagrange {method} λ")


def test_projected_delassus_equals_the_oracle(model):
    cons = constraints_of(model)
    data = model.create_data()
    for q, _, _, _ in states(model, 4, seed=3):
        ref = projected_delassus(model, q, cons)
        out = projected_delassus(model, q, cons, compiled=True)
        rel_close(out, ref, "projected Delassus")
        assert np.array_equal(out, out.T)
        rel_close(
            loopdyn.delassus(model, data, q, cons, method="projected"), ref, "delassus(method='projected')"
        )
        # one row set, then a larger one: the scratch grows
        rel_close(projected_delassus(model, q, cons[:1], compiled=True), ref[:6, :6], "one constraint")


def test_compiled_equals_the_cluster_algorithms():
    """The same numbers as C-RNEA / C-ABA (independent code) on a robot with differentials."""
    model = robots.tello(arms=False)
    data = model.create_data()
    for q, v, x, _ in states(model, 3, seed=5):
        rel_close(
            projected_rnea(model, q, v, x, compiled=True),
            loopdyn.rnea(model, data, q, v, x),
            "vs C-RNEA",
            1e-9,
        )
        ref = loopdyn.aba(model, data, q, v, x)
        rel_close(
            projection_forward_dynamics(model, q, v, x, compiled=True), ref, "projection vs C-ABA", 1e-9
        )
        for method in ("dense", "ltl"):
            rel_close(lagrange_forward_dynamics(model, q, v, x, method=method, compiled=True), ref,
                      f"Lagrange {method} vs C-ABA", 1e-9)  # fmt: skip


@pytest.mark.parametrize("index", [4, 9, 17])
def test_plain_trees(index):
    """On a tree (G = 1, g = 0) the kernels reduce to the tree algorithms."""
    lm, _ = trees.tree_case(index, with_pinocchio=False)
    data = lm.create_data()
    rng = np.random.default_rng(index)
    cons = [loopdyn.Constraint(lm.bodies[-1].name, "6d")]
    for _ in range(3):
        q, v, a = trees.random_state(rng, lm)
        tau = rng.normal(size=lm.nv)
        f = rng.normal(size=(lm.njoints, 6))
        rel_close(
            projected_rnea(lm, q, v, a, f, compiled=True), loopdyn.rnea(lm, data, q, v, a, f), "rnea", 1e-9
        )
        ref = loopdyn.aba(lm, data, q, v, tau, f)
        rel_close(projection_forward_dynamics(lm, q, v, tau, f, compiled=True), ref, "projection", 1e-9)
        for method in ("dense", "ltl"):
            rel_close(lagrange_forward_dynamics(lm, q, v, tau, f, method, compiled=True), ref, method, 1e-9)
        rel_close(projected_delassus(lm, q, cons, compiled=True), projected_delassus(lm, q, cons), "Delassus")


def test_inputs_are_checked_and_coerced():
    model = robots.gt_chain(3, seed=1)
    rng = np.random.default_rng(0)
    q = loopdyn.random_configuration(model, rng)
    v, a = rng.normal(size=model.nv), rng.normal(size=model.nv)
    ref = projected_rnea(model, q, v, a, compiled=True)
    rel_close(projected_rnea(model, list(q), list(v), a, compiled=True), ref, "lists")
    rel_close(projected_rnea(model, q, np.repeat(v, 2)[::2], a, compiled=True), ref, "a strided view")
    with pytest.raises(ShapeError, match="a must"):
        projected_rnea(model, q, v, a[:2], compiled=True)
    with pytest.raises(ShapeError, match="tau must"):
        projection_forward_dynamics(model, q, v, np.zeros(model.nv + 1), compiled=True)
    with pytest.raises(ShapeError, match="f_ext"):
        lagrange_forward_dynamics(model, q, v, a, np.zeros((2, 6)), compiled=True)
    bad = v.copy()
    bad[1] = np.nan
    with pytest.raises(NonFiniteError, match="v contains"):
        lagrange_forward_dynamics(model, q, bad, a, method="ltl", compiled=True)
    with pytest.raises(ShapeError, match="q must"):
        projected_delassus(model, q[:1], [loopdyn.Constraint("link-2")], compiled=True)


def test_off_constraint_positions_are_refused():
    model = robots.four_bar()
    q = loopdyn.random_configuration(model, np.random.default_rng(1))
    q[-1] += 0.3  # the dependent angle off the loop
    z = np.zeros(model.nv)
    for fn in (lambda: projected_rnea(model, q, z, z, compiled=True),
               lambda: projection_forward_dynamics(model, q, z, z, compiled=True),
               lambda: lagrange_forward_dynamics(model, q, z, z, compiled=True)):  # fmt: skip
        with pytest.raises(ConfigurationError, match="violate"):
            fn()


def test_pack_follows_model_changes():
    m = robots.gt_chain(2, seed=1)
    rng = np.random.default_rng(2)
    q = loopdyn.random_configuration(m, rng)
    projected_rnea(m, q, q, q, compiled=True)
    first = calls.pack(m)
    m.add_body("extra", "link-1", loopdyn.Revolute((0, 0, 1)), None,
               loopdyn.Inertia(1.0, (0.1, 0, 0), np.eye(3)))  # fmt: skip
    assert calls.pack(m) is not first
    q = loopdyn.random_configuration(m, rng)
    v = rng.normal(size=m.nv)
    rel_close(projected_rnea(m, q, v, v, compiled=True), projected_rnea(m, q, v, v), "after the change")
