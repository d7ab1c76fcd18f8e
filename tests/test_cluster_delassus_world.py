"""The Delassus algorithms of models with loops in world coordinates
(``algorithms.cluster_delassus_world``: cluster PV-OSIMr, the default, and C-EFPA), which ``delassus``
runs whenever every cluster hands its parent one port.

It is checked against the spanning-tree oracle of ``test_cluster_delassus`` (J (GᵀH_spanG)⁻¹ Jᵀ built
from the tree algorithms, G from the state map) and against the body-coordinate version of the same
algorithms, forced by clearing the star and one-port flags in a Data's own cluster table (negative
control: the kernel's choice is asserted both ways). The cases the world version treats apart are
each exercised: one-coordinate clusters in scalars (stars, revolute joints, one-DoF loops), several
coordinates (belts, differentials, spherical joints), a free-flyer without armature (``(Iᴬ)⁻¹``,
nothing to the parent) and with armature (the general path), armature on coupled joints, branching
clusters, constraints on rotors and on the world, a robot far from the origin.
"""

from __future__ import annotations

import numpy as np
import pytest
from cluster_models import random_cluster_model
from numba import njit
from test_cluster_delassus import random_constraints, rel_err, spanning_oracle

import loopdyn
from loopdyn import Constraint, delassus
from loopdyn.algorithms.cluster_delassus_world import EFPA_WORLD_ROWS
from loopdyn.algorithms.cluster_delassus_world import one_port_tree as _one_port_tree_step
from loopdyn.model import layout as L


@njit
def one_port_tree(ic):  # the step is callable from compiled code only (loopdyn.jit.inlined)
    return _one_port_tree_step(ic)


ROBOTS = ["mini_cheetah", "mit_humanoid", "tello", "jvrc1", "four_bar", "planar_leg_linkage", "five_bar",
          "delta_robot", "rssr_linkage"]  # fmt: skip
CHAINS = [("gt_chain", 5), ("pbt_chain", 6)]
RANDOM = [(1, 3, False), (2, 4, True), (4, 6, True), (7, 8, True)]
TOL = 1e-10


def _build(name, n=None):
    return loopdyn.robots.build(name, **({} if n is None else {"n": n}))


def _body_coordinate_data(model):
    """A Data whose own cluster table has no star or one-port flag: the kernel then runs the
    body-coordinate PV-OSIMr (generic cluster steps)."""
    d = model.create_data()
    d.ic[:, L.C_STAR] = 0
    d.ic[:, L.C_ONEPORT] = 0
    return d


def _models():
    for name in ROBOTS:
        yield name, _build(name)
    for name, n in CHAINS:
        yield f"{name}({n})", _build(name, n)
    for seed, blocks, floating in RANDOM:
        yield f"random{seed}", random_cluster_model(seed, blocks, floating)


MODELS = dict(_models())


METHODS = ("c-pv-osimr", "c-efpa")


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("name", sorted(MODELS))
def test_world_path_equals_the_oracle_and_the_body_coordinate_path(name, method):
    model = MODELS[name]
    d, dl = model.create_data(), _body_coordinate_data(model)
    has_coupled = any(d.ic[k, L.C_STAR] or d.ic[k, L.C_ONEPORT] for k in range(1, d.ic[0, L.C0_NCL] + 1))
    assert one_port_tree(d.ic), "every built-in and random cluster model has one-port clusters only"
    assert has_coupled and not one_port_tree(dl.ic), "the control Data must take the other path"
    rng = np.random.default_rng(len(name))
    for trial in range(3):
        q = loopdyn.random_configuration(model, trial)
        cons = random_constraints(rng, model, int(rng.integers(1, 5)))
        world = delassus(model, d, q, cons, method=method)
        local = delassus(model, dl, q, cons, method=method)
        oracle = spanning_oracle(model, q, cons)[0]
        assert rel_err(world, oracle) < TOL, (name, trial)
        assert rel_err(world, local) < 1e-11, (name, trial)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("floating_armature", [False, True])
def test_armature_on_coupled_joints_and_on_the_free_flyer(floating_armature, method):
    """Armature enters D as Gᵀ diag(armature) G; a free-flyer with armature leaves the (Iᴬ)⁻¹ shortcut
    for the general six-coordinate step."""
    model = random_cluster_model(2, 4, True)
    rng = np.random.default_rng(3)
    arm = rng.uniform(0.05, 0.5, model.spanning_nv)
    if not floating_armature:
        arm[:6] = 0.0
    model.armature = arm
    d = model.create_data()
    for trial in range(3):
        q = loopdyn.random_configuration(model, trial)
        cons = random_constraints(rng, model, 3)
        got = delassus(model, d, q, cons, method=method)
        assert rel_err(got, spanning_oracle(model, q, cons)[0]) < TOL
    q = loopdyn.random_configuration(model, 0)  # negative control: the armature changes the matrix
    cons = [Constraint(model.bodies[-1].name, "6d")]
    with_arm = delassus(model, model.create_data(), q, cons, method=method)
    model.armature = np.zeros(model.spanning_nv)
    assert rel_err(with_arm, delassus(model, model.create_data(), q, cons, method=method)) > 1e-6

@pytest.mark.parametrize("method", METHODS)
def test_branching_clusters_and_feet_of_a_floating_robot(method):
    """Four 3-D feet of Mini Cheetah (the trunk is a branching free-flyer) and two 6-D feet of the MIT
    Humanoid, with a rotor and a world constraint added."""
    for name, feet, kind in (("mini_cheetah", 4, "3d"), ("mit_humanoid", 2, "6d")):
        model = _build(name)
        leaves = [b.name for b in model.bodies if not any(c.parent == b.name for c in model.bodies)]
        links = [n for n in leaves if "rotor" not in n][:feet]
        rotor = next(n for n in leaves if "rotor" in n)
        cons = [Constraint(n, kind) for n in links] + [Constraint(rotor, "6d"), Constraint("universe", "3d")]
        d = model.create_data()
        for trial in range(2):
            q = loopdyn.random_configuration(model, trial)
            got = delassus(model, d, q, cons, method=method)
            assert rel_err(got, spanning_oracle(model, q, cons)[0]) < TOL


@pytest.mark.parametrize("method", METHODS)
def test_a_robot_far_from_the_origin_gives_the_same_matrix(method):
    """The world frame's origin is link 1's: a floating base 1 km away gives the same Λ⁻¹ (constraints
    in the links' frames) to 1e-12."""
    model = _build("mini_cheetah")
    d = model.create_data()
    q = loopdyn.random_configuration(model, 1)
    cons = [Constraint(model.bodies[-1].name, "6d"), Constraint(model.bodies[5].name, "3d")]
    near = delassus(model, d, q, cons, method=method)
    q_far = q.copy()
    q_far[:3] += (1000.0, -700.0, 300.0)
    assert rel_err(delassus(model, d, q_far, cons, method=method), near) < 1e-12


@pytest.mark.parametrize("method", METHODS)
def test_the_data_stays_valid_for_the_other_algorithms(method):
    """The world path writes its own workspace columns; RNEA, ABA and the mass matrix on the same Data
    afterwards equal those on a fresh Data."""
    model = _build("pbt_chain", 6)
    rng = np.random.default_rng(0)
    q = loopdyn.random_configuration(model, 2)
    v, a = rng.normal(size=model.nv), rng.normal(size=model.nv)
    d = model.create_data()
    delassus(model, d, q, [Constraint(model.bodies[-1].name, "6d")], method=method)
    fresh = model.create_data()
    np.testing.assert_array_equal(loopdyn.rnea(model, d, q, v, a), loopdyn.rnea(model, fresh, q, v, a))
    np.testing.assert_array_equal(loopdyn.aba(model, d, q, v, a), loopdyn.aba(model, fresh, q, v, a))
    np.testing.assert_array_equal(loopdyn.crba(model, d, q), loopdyn.crba(model, fresh, q))


def test_c_efpa_beyond_the_world_row_limit_is_exact():
    """Past ``EFPA_WORLD_ROWS`` rows C-EFPA takes the body-coordinate version; both sides of the limit
    equal the oracle."""
    model = _build("mini_cheetah")
    d = model.create_data()
    q = loopdyn.random_configuration(model, 4)
    names = [b.name for b in model.bodies]
    few = [Constraint(names[-1], "6d"), Constraint(names[7], "6d")]
    many = few + [Constraint(names[3], "3d")]
    assert sum(c.dim for c in few) == EFPA_WORLD_ROWS < sum(c.dim for c in many)
    for cons in (few, many):
        got = delassus(model, d, q, cons, method="c-efpa")
        assert rel_err(got, spanning_oracle(model, q, cons)[0]) < TOL
