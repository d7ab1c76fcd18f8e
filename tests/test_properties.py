"""Property-based tests (Hypothesis) over random trees and random models with loops and couplings.

For every drawn model and state:

* the mass matrix (the cluster mass matrix of the independent coordinates, for models with
  constraints) is symmetric positive definite;
* ``aba(rnea(a)) = a`` (to what the conditioning of M allows) and ``rnea = M a + nonlinear_effects``;
* without gravity, the power ``vᵀτ`` of ``τ = rnea(q, v, a)`` equals the rate of change of the kinetic
  energy ``E = ½ vᵀ M(q) v``: ``dE/dt = vᵀ M a + ½ vᵀ Ṁ v``, with ``Ṁ`` the derivative of ``crba``
  along ``q(t) = integrate(q, v t)`` (a 4th-order central difference) — an identity no algorithm
  computes directly (it holds because ``Ṁ − 2C`` is skew);
* the results do not depend on the order in which the bodies were added to the model: the same
  bodies added in another order (parents first) give the same τ, M and accelerations, coordinate by
  coordinate once matched by joint name.

Example counts are small (``max_examples``) and there is no deadline: each example builds new
models, and a model with loops compiles its constraint programs.
"""

from __future__ import annotations

import numpy as np
import pytest
import trees
from cluster_models import random_cluster_model
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import loopdyn as ld
from loopdyn.constraints.definitions import Coupling, ImplicitConstraint, LinearConstraint, LoopJoint
from loopdyn.model.layout import EXPLICIT, SINGLE_BODY

EPS = np.finfo(float).eps
SETTINGS = dict(deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])


# ------------------------------------------------------------------------------------------------
# the same model, bodies added in another order


def rebuild_in_random_order(model: ld.Model, rng) -> ld.Model:
    """``model``'s bodies (names, joints, placements, inertias, flags, armature) added in a random
    order that keeps parents before children, then its constraints, through the public builder."""
    out = ld.Model(model.name, gravity=model.gravity)
    placed, pending = {0}, list(range(1, model.nbodies + 1))
    while pending:
        ready = [i for i in pending if model.bodies[i - 1].parent in placed]
        i = ready[int(rng.integers(len(ready)))]
        b = model.bodies[i - 1]
        out.add_body(b.name, model.body_names[b.parent], b.joint, (b.rotation, b.translation), b.inertia,
                     joint_name=b.joint_name, independent=b.independent, armature=b.armature_vector(),
                     inertia_check="accept")  # fmt: skip
        placed.add(i)
        pending.remove(i)
    for c in model.constraints:
        if isinstance(c, Coupling):
            out.add_coupling(c.name, c.predecessor, c.successor, c.ratio)
        elif isinstance(c, LoopJoint):
            out.add_loop(c.name, c.predecessor, c.successor, c.kind, c.predecessor_placement,
                         c.successor_placement, axis=c.axis, successor_axis=c.successor_axis)  # fmt: skip
        elif isinstance(c, ImplicitConstraint):
            out.add_implicit_constraint(c.name, list(c.joints), c.phi)
        elif isinstance(c, LinearConstraint):
            out.add_linear_constraint(c.name, list(c.joints), c.K)
        else:  # pragma: no cover - the random models have no other kind
            raise AssertionError(f"unexpected constraint {c!r}")
    return out


def layout(model: ld.Model) -> tuple[list, list]:
    """The (joint name, component) of every entry of q and of v, from the documented layouts: a tree's
    joints in body order; for a model with constraints, cluster by cluster (a single body's joint;
    an explicit cluster's independent positions; an implicit cluster's positions of all its bodies;
    the independent velocities)."""
    qn: list = [None] * model.nq
    vn: list = [None] * model.nv
    if not model.has_constraints:
        for b in model.bodies:
            qn[b.idx_q : b.idx_q + b.joint.nq] = [(b.joint_name, k) for k in range(b.joint.nq)]
            vn[b.idx_v : b.idx_v + b.joint.nv] = [(b.joint_name, k) for k in range(b.joint.nv)]
        return qn, vn
    for c in model.clusters().clusters:
        bodies = [model.bodies[i - 1] for i in c.bodies]
        if c.kind == SINGLE_BODY:
            b = bodies[0]
            qn[c.iq : c.iq + c.nq] = [(b.joint_name, k) for k in range(c.nq)]
            vn[c.iv : c.iv + c.nv] = [(b.joint_name, k) for k in range(c.nv)]
            continue
        ind = [bodies[k] for k in c.independent]
        qn[c.iq : c.iq + c.nq] = [(b.joint_name, 0) for b in (ind if c.kind == EXPLICIT else bodies)]
        vn[c.iv : c.iv + c.nv] = [(b.joint_name, 0) for b in ind]
    assert None not in qn and None not in vn
    return qn, vn


def check_order_independence(a: ld.Model, b: ld.Model, rng) -> None:
    qa, va = layout(a)
    qb, vb = layout(b)
    assert sorted(qa) == sorted(qb) and sorted(va) == sorted(vb)
    iq = np.array([qa.index(n) for n in qb])  # b's entry k is a's entry iq[k]
    iv = np.array([va.index(n) for n in vb])
    da, db = a.create_data(native_programs=False), b.create_data(native_programs=False)
    q = ld.random_configuration(a, rng)
    v, acc = rng.standard_normal(a.nv), rng.standard_normal(a.nv)
    tau = ld.rnea(a, da, q, v, acc)
    M = ld.crba(a, da, q)
    scale = float(np.max(np.abs(M) @ np.abs(acc) + np.abs(tau)))
    tau_b = ld.rnea(b, db, q[iq], v[iv], acc[iv])
    assert np.max(np.abs(tau_b - tau[iv])) <= 1e-10 * scale
    M_b = ld.crba(b, db, q[iq])
    assert np.max(np.abs(M_b - M[np.ix_(iv, iv)])) <= 1e-12 * np.max(np.abs(M))
    acc_b = ld.aba(b, db, q[iq], v[iv], tau[iv])
    bound = max(1e-9, 100 * EPS * np.linalg.cond(M))
    assert np.max(np.abs(acc_b - acc[iv])) <= bound * max(1.0, np.max(np.abs(acc)))


# ------------------------------------------------------------------------------------------------
# the identities


def check_identities(model: ld.Model, rng, states: int = 2) -> None:
    data = model.create_data(native_programs=False)
    for _ in range(states):
        q = ld.random_configuration(model, rng)
        v, a = rng.standard_normal(model.nv), rng.standard_normal(model.nv)
        M = ld.crba(model, data, q)
        # symmetric positive definite
        assert np.max(np.abs(M - M.T)) <= 1e-13 * np.max(np.abs(M))
        w = np.linalg.eigvalsh(M)
        assert w[0] > 0.0, w
        tau = ld.rnea(model, data, q, v, a)
        h = ld.nonlinear_effects(model, data, q, v)
        scale = float(np.max(np.abs(M) @ np.abs(a) + np.abs(h)))
        assert np.max(np.abs(tau - (M @ a + h))) <= 1e-11 * scale
        # aba inverts rnea: backward error to rounding, forward error as the conditioning allows
        acc = ld.aba(model, data, q, v, tau)
        assert np.max(np.abs(M @ acc + h - tau)) <= 1e-11 * scale
        assert np.max(np.abs(acc - a)) <= max(1e-9, 100 * EPS * w[-1] / w[0]) * max(1.0, np.max(np.abs(a)))


def check_power_balance(model: ld.Model, rng, states: int = 2) -> None:
    """Without gravity: vᵀ rnea(q, v, a) = vᵀ M a + ½ vᵀ Ṁ v (Ṁ by a 4th-order central difference)."""
    model.gravity = (0.0, 0.0, 0.0)
    data = model.create_data(native_programs=False)
    h = 1e-3
    for _ in range(states):
        q = ld.random_configuration(model, rng)
        v, a = 0.5 * rng.standard_normal(model.nv), rng.standard_normal(model.nv)
        M = [ld.crba(model, data, ld.integrate(model, q, v, t)) for t in (-2 * h, -h, 0.0, h, 2 * h)]
        Mdot = (M[0] - 8 * M[1] + 8 * M[3] - M[4]) / (12 * h)
        tau = ld.rnea(model, data, q, v, a)
        rate = v @ M[2] @ a + 0.5 * v @ Mdot @ v
        scale = float(np.abs(v) @ np.abs(M[2]) @ np.abs(a) + np.abs(v) @ np.abs(Mdot) @ np.abs(v)
                      + np.abs(v) @ np.abs(tau))  # fmt: skip
        assert abs(v @ tau - rate) <= 1e-7 * scale, (v @ tau, rate, scale)
        # negative control: when the velocity terms matter, a wrong factor on them breaks the identity
        if abs(0.5 * v @ Mdot @ v) > 1e-5 * scale:
            assert abs(v @ tau - (v @ M[2] @ a + v @ Mdot @ v)) > 1e-6 * scale


# ------------------------------------------------------------------------------------------------
# random trees


def _tree(seed: int, n: int, floating: bool) -> ld.Model:
    rng = np.random.default_rng(seed)
    recipe = trees.random_recipe(rng, n, floating=floating, fixed_prob=0.3)
    return trees.build_loopdyn(recipe)


TREES = dict(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 8), floating=st.booleans())


@settings(max_examples=15, **SETTINGS)
@given(**TREES)
def test_trees_mass_matrix_and_aba_inverts_rnea(seed, n, floating):
    check_identities(_tree(seed, n, floating), np.random.default_rng(seed + 1))


@settings(max_examples=10, **SETTINGS)
@given(**TREES)
def test_trees_energy_rate_is_the_power_without_gravity(seed, n, floating):
    check_power_balance(_tree(seed, n, floating), np.random.default_rng(seed + 2))


@settings(max_examples=10, **SETTINGS)
@given(**TREES, order=st.integers(0, 2**32 - 1))
def test_trees_do_not_depend_on_the_order_bodies_are_added(seed, n, floating, order):
    model = _tree(seed, n, floating)
    check_order_independence(
        model, rebuild_in_random_order(model, np.random.default_rng(order)), np.random.default_rng(seed + 3)
    )


# ------------------------------------------------------------------------------------------------
# random models with loops and couplings (geared rotors, belts, four-bars, nonlinear differentials)

CLUSTERS = dict(seed=st.integers(0, 10_000), n_blocks=st.integers(1, 2), floating=st.booleans())


@settings(max_examples=5, **SETTINGS)
@given(**CLUSTERS)
def test_cluster_models_mass_matrix_and_aba_inverts_rnea(seed, n_blocks, floating):
    model = random_cluster_model(seed, n_blocks=n_blocks, floating=floating)
    check_identities(model, np.random.default_rng(seed + 1))


@settings(max_examples=4, **SETTINGS)
@given(**CLUSTERS)
def test_cluster_models_energy_rate_is_the_power_without_gravity(seed, n_blocks, floating):
    model = random_cluster_model(seed, n_blocks=n_blocks, floating=floating)
    check_power_balance(model, np.random.default_rng(seed + 2))


@settings(max_examples=4, **SETTINGS)
@given(**CLUSTERS, order=st.integers(0, 2**32 - 1))
def test_cluster_models_do_not_depend_on_the_order_bodies_are_added(seed, n_blocks, floating, order):
    model = random_cluster_model(seed, n_blocks=n_blocks, floating=floating)
    other = rebuild_in_random_order(model, np.random.default_rng(order))
    check_order_independence(model, other, np.random.default_rng(seed + 3))


def test_the_order_check_fails_on_a_different_model():
    """Negative control: the comparison catches a model that is not the same (gravity changed)."""
    model = _tree(7, 5, True)
    other = rebuild_in_random_order(model, np.random.default_rng(1))
    check_order_independence(model, other, np.random.default_rng(2))
    other.gravity = (0.0, 0.0, -9.7)
    with pytest.raises(AssertionError):
        check_order_independence(model, other, np.random.default_rng(2))
