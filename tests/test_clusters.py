"""Clusters: kinematics through the tree of clusters against the spanning tree, the constraint
identities K G = 0 and K g = k, 𝖲 and 𝖼 against finite differences, projection onto the
constraints, and bad input."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from cluster_models import random_cluster_model

import loopdyn
from loopdyn.errors import ConfigurationError, ModelError, ShapeError
from loopdyn.model import layout as L
from loopdyn.model.clusters import EXPLICIT, IMPLICIT

MODELS = [(s, n, f) for s, n, f in [(1, 3, False), (2, 4, True), (3, 5, False), (4, 6, True), (5, 3, True),
                                    (6, 6, False), (7, 8, True), (8, 2, False)]]  # fmt: skip


@pytest.fixture(params=MODELS, ids=[f"clusters{s}-{n}{'-floating' if f else ''}" for s, n, f in MODELS])
def model(request):
    s, n, f = request.param
    return random_cluster_model(s, n, f)


def _states(model, n, seed=0):
    rng = np.random.default_rng(seed)
    return [
        (loopdyn.random_configuration(model, rng), rng.normal(size=model.nv), rng.normal(size=model.nv))
        for _ in range(n)
    ]


def test_structure(model):
    ct = model.clusters()
    assert model.has_constraints
    assert model.nv == sum(c.m if c.kind else c.nv for c in ct.clusters)
    assert len(model.velocity_names) == model.nv
    for c in ct.clusters:
        if c.kind:
            assert len(c.independent) == c.m and len(c.dependent) == c.n - c.m
            assert sorted(c.independent + c.dependent) == list(range(c.n))
    # regular order: every cluster after its parent
    assert all(c.parent < c.index for c in ct.clusters)


def test_kinematics_match_spanning_tree(model):
    tree = loopdyn.spanning_tree(model)
    assert not tree.has_constraints and tree.nv == model.spanning_nv
    d, td = model.create_data(), tree.create_data()
    for q, v, a in _states(model, 10):
        loopdyn.forward_kinematics(model, d, q, v, a)
        qs, vs, as_ = loopdyn.to_spanning(model, q, v, a)
        loopdyn.forward_kinematics(tree, td, qs, vs, as_)
        np.testing.assert_allclose(d.oMi, td.oMi, rtol=0, atol=1e-12)
        np.testing.assert_allclose(d.v, td.v, rtol=1e-10, atol=1e-10)
        np.testing.assert_allclose(d.a, td.a, rtol=1e-9, atol=1e-9)


def _K(c, qc):
    return np.array(sp.lambdify([c.symbols], sp.Matrix(c.phi_exprs).jacobian(c.symbols))(qc), float)


def test_constraint_identities(model):
    """K G = 0 and K g = k (k = −K̇ q̇ by central differences of K, independent of the tapes)."""
    d = model.create_data()
    for q, v, _ in _states(model, 5):
        loopdyn.forward_kinematics(model, d, q, v)
        qs, vs = loopdyn.to_spanning(model, q, v)
        for c in model.clusters().clusters:
            if not c.kind:
                continue
            r = d.ic[c.index + 1]
            G = d.wc[r[L.C_G] : r[L.C_G] + c.n * c.m].reshape(c.n, c.m)
            g = d.wc[r[L.C_GB] : r[L.C_GB] + c.n]
            idx = [model.bodies[b - 1].idx_q for b in c.bodies]
            qc, qdc = qs[idx], vs[[model.bodies[b - 1].idx_v for b in c.bodies]]
            if c.kind == EXPLICIT:
                np.testing.assert_allclose(c.K_const @ G, 0, atol=1e-12)
                np.testing.assert_allclose(g, 0, atol=0)
                np.testing.assert_allclose(qc, G @ q[c.iq : c.iq + c.m], rtol=1e-14, atol=1e-14)
                continue
            K = _K(c, qc)
            h = 1e-6
            kb = -((_K(c, qc + h * qdc) - _K(c, qc - h * qdc)) / (2 * h)) @ qdc
            np.testing.assert_allclose(K @ G, 0, atol=1e-11)
            np.testing.assert_allclose(K @ g, kb, rtol=1e-6, atol=1e-6 * max(1, np.abs(kb).max()))
            np.testing.assert_allclose(K @ qdc, 0, atol=1e-11)


def _vee_rel(R, Rdot):
    W = R.T @ Rdot
    return np.array([W[2, 1] - W[1, 2], W[0, 2] - W[2, 0], W[1, 0] - W[0, 1]]) / 2


def test_motion_subspace_and_bias_vs_finite_differences(model):
    """𝖲 ẏ = the velocity of each body relative to its output body (from differentiated placements),
    and the bias 𝖼 with every other acceleration zero = the derivative of the body velocities along
    the motion with constant ẏ (through loopdyn.integrate, which stays on the constraints)."""
    d = model.create_data()
    h = 1e-5
    for q, v, _ in _states(model, 4, seed=1):
        loopdyn.forward_kinematics(model, d, q, v, np.zeros(model.nv))
        S_blocks, a0 = {}, d.a.copy()
        for c in model.clusters().clusters:
            if not c.kind:
                continue
            r = d.ic[c.index + 1]
            S = d.wc[r[L.C_S] : r[L.C_S] + 6 * len(c.bodies) * c.m].reshape(6 * len(c.bodies), c.m)
            S_blocks[c.index] = S @ v[c.iv : c.iv + c.m]
        places = {}
        vels = {}
        for sgn in (1, -1):
            loopdyn.forward_kinematics(model, d, loopdyn.integrate(model, q, v, sgn * h), v)
            places[sgn] = (
                d.ws[:, L.W_XR : L.W_XR + 9].reshape(-1, 3, 3).copy(),
                d.ws[:, L.W_XP : L.W_XP + 3].copy(),
            )
            vels[sgn] = d.v.copy()
        loopdyn.forward_kinematics(model, d, q, v)
        XR = d.ws[:, L.W_XR : L.W_XR + 9].reshape(-1, 3, 3)
        for c in model.clusters().clusters:
            if not c.kind:
                continue
            for j, b in enumerate(c.bodies):
                Rdot = (places[1][0][b] - places[-1][0][b]) / (2 * h)
                pdot = (places[1][1][b] - places[-1][1][b]) / (2 * h)
                fd = np.concatenate([_vee_rel(XR[b], Rdot), XR[b].T @ pdot])
                np.testing.assert_allclose(
                    S_blocks[c.index][6 * j : 6 * j + 6], fd, atol=1e-7 * max(1, np.abs(fd).max())
                )
        # accelerations with ÿ = 0 (which contain 𝖼) against the derivative of the velocities
        fd_a = (vels[1] - vels[-1]) / (2 * h)
        np.testing.assert_allclose(a0, fd_a, atol=1e-7 * max(1.0, np.abs(fd_a).max()))


def test_projection_and_random_configurations(model):
    rng = np.random.default_rng(3)
    implicit = [c for c in model.clusters().clusters if c.kind == IMPLICIT]
    for _ in range(5):
        q = loopdyn.random_configuration(model, rng)
        assert np.all(np.abs(loopdyn.constraint_residual(model, q)) <= 1e-12)
        if not implicit:
            continue
        bad = q.copy()
        for c in implicit:
            bad[c.iq + np.asarray(c.dependent)] += rng.uniform(-1e-3, 1e-3, len(c.dependent))
        with pytest.raises(ConfigurationError, match="violate its constraints"):
            loopdyn.forward_kinematics(model, model.create_data(), bad)
        fixed = loopdyn.project_configuration(model, bad)
        assert np.max(np.abs(loopdyn.constraint_residual(model, fixed))) <= 1e-12
        for c in implicit:  # independent coordinates untouched
            np.testing.assert_array_equal(
                fixed[c.iq + np.asarray(c.independent)], bad[c.iq + np.asarray(c.independent)]
            )


def test_integrate_difference_roundtrip(model):
    rng = np.random.default_rng(4)
    q = loopdyn.random_configuration(model, rng)
    v = rng.normal(size=model.nv) * 0.1
    q1 = loopdyn.integrate(model, q, v, 0.5)
    assert np.max(np.abs(loopdyn.constraint_residual(model, q1)), initial=0) <= 1e-12
    np.testing.assert_allclose(loopdyn.difference(model, q, q1), 0.5 * v, rtol=1e-9, atol=1e-12)


def test_neutral_satisfies_constraints(model):
    q = loopdyn.neutral(model)
    assert q.shape == (model.nq,)
    assert np.max(np.abs(loopdyn.constraint_residual(model, q)), initial=0) <= 1e-12


# ---------------------------------------------------------------------------------------------
# the four-bar: redundant rows, summary, choice of the independent coordinate
def four_bar(independent="crank"):
    I = loopdyn.Inertia(1.0, (0.1, 0, 0), np.eye(3) * 0.01)
    m = loopdyn.Model("fourbar")
    z = (0.0, 0.0, 1.0)
    m.add_body("crank", 0, loopdyn.Revolute(z), inertia=I, independent=independent == "crank")
    m.add_body(
        "coupler",
        "crank",
        loopdyn.Revolute(z),
        (np.eye(3), [0.5, 0, 0]),
        I,
        independent=independent == "coupler",
    )
    m.add_body(
        "rocker", 0, loopdyn.Revolute(z), (np.eye(3), [1.0, 0, 0]), I, independent=independent == "rocker"
    )
    m.add_loop(
        "loop", "coupler", "rocker", "revolute", (np.eye(3), [1.0, 0, 0]), (np.eye(3), [0.5, 0, 0]), axis=z
    )
    return m


def test_four_bar_redundant_rows_and_summary():
    m = four_bar()
    (c,) = m.clusters().clusters
    assert (m.nq, m.nv, c.rows_total, len(c.rows)) == (3, 1, 5, 2)
    assert m.velocity_names == ["crank"]
    assert "5 constraint rows of rank 2" in m.clusters().summary(m)
    for kind in ("point", "spherical"):  # point closure of a planar loop: 3 rows of rank 2, same DoF
        p = loopdyn.Model("p")
        p.bodies, p.frames = m.bodies, m.frames
        p._nq, p._nv = m._nq, m._nv
        p.add_loop("loop", "coupler", "rocker", kind, (np.eye(3), [1.0, 0, 0]), (np.eye(3), [0.5, 0, 0]))
        assert p.nv == 1 and p.clusters().clusters[0].rows_total == 3


def test_independent_choice_and_singular_partition():
    assert four_bar("rocker").velocity_names == ["rocker"]
    # a parallelogram four-bar cannot be driven by its coupler angle alone? it can: K_d must still be regular
    m = four_bar("coupler")
    assert m.nv == 1
    # a gear whose rotor alone is marked dependent is fine; marking both dependent is not
    I = loopdyn.Inertia(1.0, (0.1, 0, 0), np.eye(3) * 0.01)
    g = loopdyn.Model("gear")
    g.add_body("link", 0, loopdyn.Revolute((0, 0, 1)), inertia=I, independent=False)
    g.add_body("rotor", 0, loopdyn.Revolute((0, 0, 1)), inertia=I, independent=False)
    g.add_coupling("gear", "link", "rotor", 6.0)
    with pytest.raises(ModelError, match="marked independent"):
        g.clusters()
    # a linear constraint whose dependent column is zero: K_d singular, named
    s = loopdyn.Model("singular")
    s.add_body("a", 0, loopdyn.Revolute((0, 0, 1)), inertia=I)
    s.add_body("b", "a", loopdyn.Revolute((0, 0, 1)), inertia=I, independent=False)
    s.add_linear_constraint("only_a", ["a", "b"], [[1.0, 0.0]])
    with pytest.raises(ModelError, match=r"\['b'\] dependent, K_d is singular"):
        s.clusters()


def test_bad_constraints_are_refused():
    I = loopdyn.Inertia(1.0, (0.1, 0, 0), np.eye(3) * 0.01)
    m = loopdyn.Model("bad")
    m.add_body("a", 0, loopdyn.Revolute((0, 0, 1)), inertia=I)
    m.add_body("b", 0, loopdyn.Revolute((0, 0, 1)), inertia=I)
    m.add_body("c", 0, loopdyn.Revolute((0, 0, 1)), inertia=I)
    m.add_body("ball", "a", loopdyn.Spherical(), inertia=I)
    with pytest.raises(ModelError, match="no body named 'nope'"):
        m.add_loop("l", "a", "nope")
    with pytest.raises(ModelError, match="ratio"):
        m.add_coupling("z", "a", "b", 0.0)
    with pytest.raises(ModelError, match="no joint named"):
        m.add_implicit_constraint("f", ["a", "zz"], lambda q: [q[0]])
    m.add_coupling("ab", "a", "b", 2.0)
    m.add_coupling("bc", "b", "c", 3.0)
    before = (list(m.constraints), m.nv)
    with pytest.raises(ModelError, match="cycle of couplings"):
        m.add_coupling("ca", "c", "a", 5.0)
    assert (list(m.constraints), m.nv) == before  # refused, nothing changed
    assert m.nv == 1 + 3  # a, b, c coupled: one independent coordinate; the ball joint: three
    # a ball joint a coupling ties directly (a loop would make it a gimbal: tests/test_ball_loops.py)
    m.add_coupling("ball_gear", "ball", "c", 1.0)
    with pytest.raises(loopdyn.errors.UnsupportedFeatureError, match="'ball'.*coupling"):
        m.clusters()
    with pytest.raises(ModelError, match="duplicate constraint"):
        m.add_coupling("ab", "a", "c", 1.0)


def test_declared_cluster_breaking_the_tree_condition():
    I = loopdyn.Inertia(1.0, (0.1, 0, 0), np.eye(3) * 0.01)
    m = loopdyn.Model("decl")
    m.add_body("a", 0, loopdyn.Revolute((0, 0, 1)), inertia=I)
    m.add_body("b", 0, loopdyn.Revolute((0, 0, 1)), inertia=I)
    m.add_body("a2", "a", loopdyn.Revolute((0, 0, 1)), inertia=I)
    m.add_body("b2", "b", loopdyn.Revolute((0, 0, 1)), inertia=I)
    m.add_cluster(["a2", "b2"])  # hangs from a and b, which are different clusters
    with pytest.raises(ModelError, match="breaks the tree condition"):
        m.clusters()


def test_wrong_sizes_and_tree_only_algorithms():
    m = four_bar()
    d = m.create_data()
    with pytest.raises(ShapeError):
        loopdyn.forward_kinematics(m, d, np.zeros(2))
    with pytest.raises(ShapeError):
        loopdyn.constraint_residual(m, np.zeros(4))
    q = loopdyn.random_configuration(m, 0)
    with pytest.raises(loopdyn.errors.UnsupportedFeatureError, match="spanning_tree"):
        loopdyn.frame_jacobian_time_variation(m, d, q, np.zeros(m.nv), "crank")
    # the batch functions accept models with loops (issue 11): one row = the single-state call
    tau = loopdyn.batch.rnea(m, q[None], np.zeros((1, m.nv)), np.zeros((1, m.nv)))
    assert np.allclose(tau[0], loopdyn.rnea(m, d, q, np.zeros(m.nv), np.zeros(m.nv)), rtol=1e-12, atol=1e-12)


def test_explicit_constraint_with_user_G():
    """q[joints] = G q[independent]: a differential whose output joints follow two motors."""
    I = loopdyn.Inertia(1.0, (0.1, 0, 0), np.eye(3) * 0.01)
    m = loopdyn.Model("diff")
    for name in ("m1", "m2", "pitch"):
        m.add_body(name, 0, loopdyn.Revolute((0, 0, 1)), inertia=I)
    m.add_body("roll", "pitch", loopdyn.Revolute((1, 0, 0)), inertia=I)
    G = [[1, 0], [0, 1], [0.5, 0.5], [0.5, -0.5]]
    m.add_explicit_constraint("diff", ["m1", "m2", "pitch", "roll"], ["m1", "m2"], G)
    assert (m.nq, m.nv, m.velocity_names) == (2, 2, ["m1", "m2"])
    q, v = np.array([0.3, -0.1]), np.array([1.0, 2.0])
    qs, vs = loopdyn.to_spanning(m, q, v)
    np.testing.assert_allclose(qs, np.array(G) @ q, atol=1e-15)
    np.testing.assert_allclose(vs, np.array(G) @ v, atol=1e-15)
    with pytest.raises(ModelError, match="unit row"):
        m.add_explicit_constraint("bad", ["m1", "pitch"], ["m1"], [[2.0], [1.0]])
    m.remove_constraint("diff")
    assert not m.has_constraints and m.nv == 4
