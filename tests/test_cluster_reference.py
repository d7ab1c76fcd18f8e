"""A user's choice of independent coordinates that is singular only at the configuration nearest zero
(a crank and a coupler collinear at zero joint angles) is accepted: the cluster is built around the
nearest assembly configuration where the choice is regular. A choice singular everywhere is refused."""

from __future__ import annotations

import numpy as np
import pytest

import loopdyn
from loopdyn.errors import ModelError

CRANK, COUPLER = 0.3, 0.8  # crank and coupler collinear along x at zero: C = (1.1, 0)
D = np.array([0.9, -0.5, 0.0])  # the rocker's pivot
ROCKER = float(np.linalg.norm(np.array([CRANK + COUPLER, 0.0, 0.0]) - D))


def _rz(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def four_bar(independent=("rocker",)):
    m = loopdyn.Model("toggle-four-bar")
    z = (0.0, 0.0, 1.0)
    inertia = loopdyn.Inertia(1.0, (0.2, 0.0, 0.0), np.diag([0.01, 0.02, 0.02]))
    phi = np.arctan2(-D[1], CRANK + COUPLER - D[0])  # the rocker points at C at zero
    for name, parent, placement in (("crank", 0, None), ("coupler", "crank", (np.eye(3), [CRANK, 0, 0])),
                                    ("rocker", 0, (_rz(phi), D))):  # fmt: skip
        m.add_body(name, parent, loopdyn.Revolute(z), placement, inertia, independent=name in independent)
    m.add_loop("pin", "coupler", "rocker", "point", (np.eye(3), [COUPLER, 0, 0]), (np.eye(3), [ROCKER, 0, 0]))
    return m


def _planar_points(q):
    """Coupler tip and rocker tip in the plane, from the angles (independent of loopdyn)."""
    t1, t2, t3 = q
    b = np.array([CRANK * np.cos(t1), CRANK * np.sin(t1)])
    c1 = b + COUPLER * np.array([np.cos(t1 + t2), np.sin(t1 + t2)])
    phi = np.arctan2(-D[1], CRANK + COUPLER - D[0])
    c2 = D[:2] + ROCKER * np.array([np.cos(phi + t3), np.sin(phi + t3)])
    return c1, c2


def test_the_zero_configuration_is_a_toggle_for_this_choice():
    """Negative control: at zero the loop closes and the crank and coupler columns of the closure's
    Jacobian are parallel (K_d singular with the rocker independent)."""
    c1, c2 = _planar_points(np.zeros(3))
    assert np.allclose(c1, c2, atol=1e-15)
    d_crank = np.array([-c1[1], c1[0]])  # ż × (C − A)
    d_coupler = np.array([-(c1[1] - 0.0), c1[0] - CRANK])  # ż × (C − B)
    assert abs(d_crank[0] * d_coupler[1] - d_crank[1] * d_coupler[0]) < 1e-15


def test_the_cluster_is_built_where_the_choice_is_regular():
    m = four_bar()
    (cluster,) = [c for c in m.clusters().clusters if c.kind]
    names = [m.bodies[b - 1].name for b in cluster.bodies]
    assert [names[k] for k in cluster.independent] == ["rocker"]
    q_ref = cluster.q_ref
    c1, c2 = _planar_points(q_ref[[names.index(n) for n in ("crank", "coupler", "rocker")]])
    assert np.max(np.abs(c1 - c2)) < 1e-12  # an assembly configuration
    assert abs(np.sin(q_ref[names.index("coupler")])) > 1e-2  # not the toggle


def test_dynamics_on_random_states_match_the_projection_baseline():
    from loopdyn.baselines.projection import projection_forward_dynamics

    m = four_bar()
    data = m.create_data()
    rng = np.random.default_rng(0)
    for _ in range(20):
        q = loopdyn.random_configuration(m, rng)
        v, tau = rng.normal(size=m.nv), rng.normal(size=m.nv)
        a = loopdyn.aba(m, data, q, v, tau)
        ref = projection_forward_dynamics(m, q, v, tau)
        assert np.max(np.abs(a - ref)) <= 1e-9 * max(1.0, np.max(np.abs(ref)))


def test_other_choices_are_unchanged_and_an_impossible_one_is_refused():
    # the automatic choice and the crank choice are regular at zero: built there, as before
    for independent in (("crank", "coupler", "rocker"), ("crank",)):
        (cluster,) = [c for c in four_bar(independent).clusters().clusters if c.kind]
        assert np.max(np.abs(cluster.q_ref)) < 1e-12
    # two independent joints for a one-degree-of-freedom loop: refused, as before
    with pytest.raises(ModelError, match="independent"):
        four_bar(("crank", "rocker")).clusters()


def test_the_toggle_is_reported_where_it_occurs():
    """At run time, the singular configuration itself (zero) is refused with an error naming the cluster
    and the dependent joints, while the configuration the cluster was built around works."""
    m = four_bar()
    data = m.create_data()
    with pytest.raises(loopdyn.errors.ConfigurationError, match=r"singular.*\['crank', 'coupler'\]"):
        loopdyn.aba(m, data, np.zeros(m.nq), np.ones(m.nv), np.zeros(m.nv))
    assert np.all(np.isfinite(loopdyn.aba(m, data, loopdyn.neutral(m), np.ones(m.nv), np.zeros(m.nv))))
