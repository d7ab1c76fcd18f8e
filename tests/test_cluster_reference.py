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


def _aba_at_neutral_matches_pinocchio(m, data):
    """C-ABA at the neutral configuration (the cluster's reference), v = 1, τ = 0, against Pinocchio
    alone on the spanning tree (loop_oracles: the pin's rows from frame Jacobians, one KKT solve)."""
    from loop_oracles import SpanningPinocchio

    q, v, tau = loopdyn.neutral(m), np.ones(m.nv), np.zeros(m.nv)
    ref, _ = SpanningPinocchio(m).forward_dynamics(q, v, tau)
    a = loopdyn.aba(m, data, q, v, tau)
    assert np.max(np.abs(a - ref)) <= 1e-9 * max(1.0, np.max(np.abs(ref))), (a, ref)


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
    _aba_at_neutral_matches_pinocchio(m, data)


def _assembled_near(angles):
    """An assembly configuration near ``angles`` (crank, coupler, rocker), solved independently of
    loopdyn: the crank angle fixed, the coupler and rocker from the two-circle intersection nearest."""
    t1 = angles[0]
    b = np.array([CRANK * np.cos(t1), CRANK * np.sin(t1)])
    d = np.linalg.norm(D[:2] - b)
    a = (COUPLER**2 - ROCKER**2 + d**2) / (2 * d)
    h = np.sqrt(COUPLER**2 - a**2)
    u = (D[:2] - b) / d
    best = None
    for sign in (1.0, -1.0):
        c = b + a * u + sign * h * np.array([-u[1], u[0]])
        t2 = np.arctan2(c[1] - b[1], c[0] - b[0]) - t1
        phi = np.arctan2(-D[1], CRANK + COUPLER - D[0])
        t3 = np.arctan2(c[1] - D[1], c[0] - D[0]) - phi
        q = np.array([t1, (t2 + np.pi) % (2 * np.pi) - np.pi, (t3 + np.pi) % (2 * np.pi) - np.pi])
        if best is None or np.linalg.norm(q - angles) < np.linalg.norm(best - angles):
            best = q
    return best


@pytest.mark.parametrize("independent", [("rocker",), ("crank",)])
def test_a_user_reference_configuration_is_the_assembly_built_around(independent):
    """With ``set_reference_configuration`` the cluster's reference (its neutral state, where the choice
    of independent joints is validated) is the assembly nearest the given configuration — here the
    other assembly branch (coupler bent the other way) than the one nearest zero."""
    m = four_bar(independent)
    names = [b.name for b in m.bodies]
    target = _assembled_near(np.array([0.9, 2.2, 1.6]))
    c1, c2 = _planar_points(target)
    assert np.max(np.abs(c1 - c2)) < 1e-12  # the oracle's configuration closes the loop
    default_ref = next(c for c in m.clusters().clusters if c.kind).q_ref.copy()
    m.set_reference_configuration(target + 0.05)  # near it, not on it
    (cluster,) = [c for c in m.clusters().clusters if c.kind]
    got = cluster.q_ref[[[m.bodies[b - 1].name for b in cluster.bodies].index(n) for n in names]]
    assert np.max(np.abs(got - target)) < 0.2  # the solution nearest the given configuration
    assert np.max(np.abs(got - default_ref[[0, 1, 2]])) > 0.5  # negative control: not the default one
    c1, c2 = _planar_points(got)
    assert np.max(np.abs(c1 - c2)) < 1e-12
    data = m.create_data()
    _aba_at_neutral_matches_pinocchio(m, data)
    np.testing.assert_allclose(m.reference_configuration, target + 0.05)
    m.set_reference_configuration(None)
    assert m.reference_configuration is None


def test_a_bad_reference_configuration_is_refused_and_changes_nothing():
    m = four_bar()
    with pytest.raises(ModelError, match="spanning tree's nq"):
        m.set_reference_configuration(np.zeros(2))
    with pytest.raises(ModelError, match="finite"):
        m.set_reference_configuration([0.0, np.nan, 0.0])
    assert m.reference_configuration is None
