"""The planar leg linkage (:func:`loopdyn.robots.linkages.planar_leg_linkage`, spec §5.8): structure,
loop closure (at q = 0, along the parallelogram, on random states; checked against the spec's
four-bar formula and against the frames' world positions), and C-ABA against the projection
baseline."""

from __future__ import annotations

import math

import numpy as np
import pytest

import loopdyn
from loopdyn.baselines.projection import projected_mass_matrix, projection_forward_dynamics
from loopdyn.model.clusters import IMPLICIT
from loopdyn.robots.linkages import planar_leg_linkage

# spec §3.9 / §5.8: path1 = [la, lb] (driver, foot), path2 = [lc] (support), offset (o, 0)
LA, LB, LC, OFFSET = 0.096, 0.031, 0.096, 0.031
# joint placements on the thigh (spec §5.8)
DRIVER_X, SUPPORT_X = 0.011, 0.042


@pytest.fixture(scope="module")
def model():
    return planar_leg_linkage()


def rel_err(a, b) -> float:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    """max |a − b| relative to max |b|."""
    return float(np.max(np.abs(a - b))) / float(np.max(np.abs(b)))


def coordinates(model, q) -> dict[str, float]:
    """Joint angles by body name (every joint has one position coordinate)."""
    qs, _ = loopdyn.to_spanning(model, q)
    return {b.name: qs[b.idx_q] for b in model.bodies}


def fourbar_phi(x: dict[str, float]) -> np.ndarray:
    """Spec §3.9: φ = ℓa[c0, s0] + ℓb[c02, s02] − o − ℓc[c1, s1], q0 driver, q1 support, q2 foot."""
    q0, q1, q2 = x["shank_driver"], x["shank_support"], x["foot"]
    return (
        LA * np.array([math.cos(q0), math.sin(q0)])
        + LB * np.array([math.cos(q0 + q2), math.sin(q0 + q2)])
        - np.array([OFFSET, 0.0])
        - LC * np.array([math.cos(q1), math.sin(q1)])
    )


def loop_points(model, qs, vs=None):
    """World placements and world-aligned linear velocities of the two loop points and of the
    end-effector, by forward kinematics of the spanning tree at spanning positions ``qs`` (and
    spanning velocities ``vs``)."""
    tree = loopdyn.spanning_tree(model)
    tree.add_frame("foot_loop_point", "foot", (np.eye(3), np.array([0.031, 0.0, 0.0])))
    tree.add_frame("support_loop_point", "shank_support", (np.eye(3), np.array([0.096, 0.0, 0.0])))
    data = tree.create_data()
    loopdyn.forward_kinematics(tree, data, qs, np.zeros(4) if vs is None else vs)
    names = ("foot_loop_point", "support_loop_point", "end-effector")
    placements = [loopdyn.frame_placement(tree, data, n) for n in names]
    velocities = [loopdyn.frame_velocity(tree, data, n, "local_world_aligned")[:3] for n in names]
    return placements, velocities


def test_structure(model):
    assert (model.nbodies, model.nq, model.nv) == (4, 4, 2)
    assert (model.spanning_nq, model.spanning_nv) == (4, 4)
    assert model.joint_names == [
        "universe",
        "base_to_thigh",
        "thigh_to_driver",
        "driver_to_foot",
        "thigh_to_support",
    ]
    assert model.velocity_names == ["base_to_thigh", "thigh_to_driver"]
    assert model.frame_names[1] == "base" and model.frames[1].body == 0  # fixed base
    clusters = model.clusters().clusters
    assert len(clusters) == 2
    thigh, fourbar = clusters
    assert [model.bodies[b - 1].name for b in thigh.bodies] == ["thigh"]
    assert fourbar.kind == IMPLICIT
    names = [model.bodies[b - 1].name for b in fourbar.bodies]
    assert sorted(names) == ["foot", "shank_driver", "shank_support"]
    assert [names[k] for k in fourbar.independent] == ["shank_driver"]
    assert (fourbar.n, fourbar.m, fourbar.nq, fourbar.nv) == (3, 1, 3, 1)
    assert len(fourbar.rows) == 2  # a planar loop: rank 2 of the revolute loop joint's 5 rows
    assert [c.name for c in model.constraints] == ["linkage"]
    assert model.constraints[0].kind == "revolute"
    assert model.mass == pytest.approx(0.23 + 0.004 + 0.225 + 0.017, rel=1e-15)
    for b in model.bodies:
        assert b.joint.axis == (0.0, 0.0, 1.0)
        np.testing.assert_array_equal(b.rotation, np.eye(3))
    ee = model.frames[model.frame_id("end-effector")]
    assert model.body_names[ee.body] == "foot"
    np.testing.assert_allclose(ee.translation, [0.127, 0.0, 0.0], rtol=0, atol=1e-15)


def test_loop_closes_at_zero(model):
    """q = 0 (every link on the thigh's x axis) closes the loop; it is the parallelogram's collinear
    change point, where K_d is singular, so the cluster algorithms refuse it."""
    assert np.max(np.abs(loopdyn.constraint_residual(model, np.zeros(4)))) <= 1e-15
    (foot, support, ee), _ = loop_points(model, np.zeros(4))
    np.testing.assert_allclose(foot[:3, 3], [DRIVER_X + LA + LB, 0.0, 0.0], rtol=0, atol=1e-15)
    np.testing.assert_allclose(support[:3, 3], foot[:3, 3], rtol=0, atol=1e-15)
    np.testing.assert_allclose(ee[:3, 3], [DRIVER_X + LA + 0.127, 0.0, 0.0], rtol=0, atol=1e-15)
    with pytest.raises(loopdyn.errors.ConfigurationError, match="singular"):
        loopdyn.crba(model, model.create_data(), np.zeros(4))


def test_parallelogram(model):
    """Support parallel to the driver and foot parallel to the thigh close the loop for any angles."""
    index = {b.name: b.idx_q for b in model.bodies}
    # the cluster state of this model holds the spanning positions in spanning order
    assert model.clusters().position_names == [b.joint_name for b in model.bodies]
    for thigh, a in [(0.3, 0.7), (-1.2, -0.4), (2.0, 2.5)]:
        q = np.zeros(4)
        q[index["thigh"]], q[index["shank_driver"]] = thigh, a
        q[index["shank_support"]], q[index["foot"]] = a, -a
        assert np.max(np.abs(loopdyn.constraint_residual(model, q))) <= 1e-15
        (foot, support, ee), _ = loop_points(model, q)
        np.testing.assert_allclose(foot[:3, 3], support[:3, 3], rtol=0, atol=1e-15)
        # the foot keeps the thigh's direction
        d = np.array([math.cos(thigh), math.sin(thigh), 0.0])
        np.testing.assert_allclose(ee[:3, 3] - foot[:3, 3], 0.096 * d, rtol=0, atol=1e-15)


def test_random_states_satisfy_the_constraint(model):
    rng = np.random.default_rng(5)
    for _ in range(20):
        q = loopdyn.random_configuration(model, rng)
        v = rng.normal(size=model.nv)
        assert np.max(np.abs(loopdyn.constraint_residual(model, q))) <= 1e-11
        assert np.max(np.abs(fourbar_phi(coordinates(model, q)))) <= 1e-11
        (foot, support, _), (v_foot, v_support, _) = loop_points(model, *loopdyn.to_spanning(model, q, v))
        np.testing.assert_allclose(foot[:3, 3], support[:3, 3], rtol=0, atol=1e-11)
        # the spanning velocity G ẏ moves the two loop points together
        scale = max(1.0, float(np.max(np.abs(v_foot))))
        np.testing.assert_allclose(v_foot, v_support, rtol=0, atol=1e-10 * scale)


def test_c_aba_agrees_with_the_projection_baseline(model):
    data = model.create_data()
    rng = np.random.default_rng(11)
    for _ in range(10):
        q = loopdyn.random_configuration(model, rng)
        v, tau = rng.normal(size=model.nv), rng.normal(size=model.nv) * 0.01
        expected = projection_forward_dynamics(model, q, v, tau)
        assert rel_err(loopdyn.aba(model, data, q, v, tau), expected) <= 1e-10
        H = loopdyn.crba(model, data, q)
        assert rel_err(H, projected_mass_matrix(model, q)) <= 1e-10
        assert np.all(np.linalg.eigvalsh(H) > 0.0)


def test_gravity_does_no_work(model):
    """Every axis is z and gravity is along −z: at rest no joint force is needed; with gravity in
    the plane of motion it is."""
    rng = np.random.default_rng(3)
    q = loopdyn.random_configuration(model, rng)
    data = model.create_data()
    assert np.max(np.abs(loopdyn.nonlinear_effects(model, data, q, np.zeros(2)))) <= 1e-15
    model_x = planar_leg_linkage()
    model_x.gravity = (9.81, 0.0, 0.0)
    assert np.max(np.abs(loopdyn.nonlinear_effects(model_x, model_x.create_data(), q, np.zeros(2)))) > 1e-3


def test_mass_matrix_on_the_parallelogram(model):
    """On the parallelogram branch (support angle = driver angle a, foot angle −a: the foot keeps the
    thigh's direction t), the kinetic energy written by hand from spec §5.8's masses, centres of
    mass and I_zz gives the cluster mass matrix of ẏ = (ṫ, ȧ)."""

    def d(theta, x):  # ∂/∂θ of R(θ) (x, 0)
        return x * np.array([-math.sin(theta), math.cos(theta)])

    index = {b.name: b.idx_q for b in model.bodies}
    data = model.create_data()
    for t, a in [(0.4, 0.9), (-2.0, -0.6), (1.0, 2.2)]:
        u = t + a
        # (mass, I_zz, ∂p_com/∂t, ∂p_com/∂a, ω per (ṫ, ȧ))
        bodies = [
            (0.23, 45.389e-6, d(t, 0.0364), np.zeros(2), (1.0, 0.0)),
            (0.004, 3.257e-6, d(t, 0.011) + d(u, 0.048), d(u, 0.048), (1.0, 1.0)),
            (0.225, 22.918e-6, d(t, 0.042) + d(u, 0.04), d(u, 0.04), (1.0, 1.0)),
            (0.017, 22.176e-6, d(t, 0.011) + d(u, 0.096) + d(t, 0.0635), d(u, 0.096), (1.0, 0.0)),
        ]
        H = np.zeros((2, 2))
        for m, izz, jt, ja, w in bodies:
            J = np.column_stack([jt, ja])
            H += m * J.T @ J + izz * np.outer(w, w)
        q = np.zeros(4)
        q[index["thigh"]], q[index["shank_driver"]] = t, a
        q[index["shank_support"]], q[index["foot"]] = a, -a
        assert rel_err(loopdyn.crba(model, data, q), H) <= 1e-12
