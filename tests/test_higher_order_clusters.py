"""loopdyn.higher_order on models with explicit clusters of constant G (geared rotors, belts):
order 0 against loopdyn's cluster algorithms (C-RNEA, C-ABA), higher orders against Gᵀ times the
AD oracle's spanning-tree τ^(k) at the spanning trajectory, implicit clusters refused."""

from __future__ import annotations

import numpy as np
import pytest

import loopdyn as ld
from loopdyn import errors
from loopdyn import higher_order as ho

ROBOTS = {
    "mini_cheetah": lambda: ld.robots.mini_cheetah(),
    "mit_humanoid_leg": lambda: ld.robots.mit_humanoid_leg(),
    "mit_humanoid": lambda: ld.robots.mit_humanoid(),
    "jvrc1": lambda: ld.robots.jvrc1(),
    "gt_chain": lambda: ld.robots.gt_chain(n=4),
    "pbt_chain": lambda: ld.robots.pbt_chain(n=4),
}


def global_G(model) -> np.ndarray:
    """v_span = G v from the model's public cluster information."""
    G = np.zeros((model.spanning_nv, model.nv))
    for c in model.clusters().clusters:
        if c.kind == 0:
            b = model.bodies[c.bodies[0] - 1]
            G[b.idx_v : b.idx_v + c.nv, c.iv : c.iv + c.nv] = np.eye(c.nv)
        else:
            for loc, bi in enumerate(c.bodies):
                G[model.bodies[bi - 1].idx_v, c.iv : c.iv + c.m] = c.G_const[loc]
    return G


@pytest.mark.parametrize("name", list(ROBOTS))
def test_order_zero_is_loopdyn_cluster_rnea_and_aba_and_round_trip(name):
    model = ROBOTS[name]()
    data = model.create_data()
    rng = np.random.default_rng(0)
    for _ in range(2):
        q = ld.random_configuration(model)
        dv = rng.normal(size=(7, model.nv)) * 0.7 ** np.arange(7)[:, None]
        fe = rng.normal(size=(6, model.njoints, 6)) * 0.7 ** np.arange(6)[:, None, None]
        tau = ho.rnea(model, data, q, dv, fe)
        ref = ld.rnea(model, data, q, dv[0], dv[1], fe[0])
        np.testing.assert_allclose(tau[0], ref, atol=1e-11 * np.abs(ref).max())
        a = ho.aba(model, data, q, dv[0], tau, fe)
        np.testing.assert_allclose(a[0], ld.aba(model, data, q, dv[0], tau[0], fe[0]), atol=1e-9)
        np.testing.assert_allclose(a, dv[1:], atol=1e-9 * max(1.0, np.abs(tau).max()))
        # Gᵀ times the spanning tree's derivatives at the spanning state
        tree = ld.spanning_tree(model)
        G = global_G(model)
        qs = ld.to_spanning(model, q, dv[0])[0]
        ts = ho.rnea(tree, tree.create_data(), qs, dv @ G.T, fe)
        np.testing.assert_allclose(tau, ts @ G, atol=1e-11 * np.abs(tau).max())


@pytest.mark.parametrize("name", ["pbt_chain"])
def test_higher_orders_match_autodiff_of_the_spanning_tree(name):
    import jax
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    from test_higher_order import Trajectory, taylor

    model = getattr(ld.robots, name)(n=2)
    data = model.create_data()
    tree = ld.spanning_tree(model)
    G = global_G(model)
    rng = np.random.default_rng(3)
    coef = np.stack([rng.uniform(0.3, 1.0, model.nv), rng.uniform(0.5, 2.0, model.nv),
                     rng.uniform(-np.pi, np.pi, model.nv), rng.uniform(-0.5, 0.5, model.nv)])  # fmt: skip

    def y(t):
        a, w, ph, b = (jnp.asarray(x) for x in coef)
        return a * jnp.sin(w * t + ph) + b * t * t

    class Spanning(Trajectory):
        def motion(self, i, t):  # spanning joint angle = row of G times y(t) (revolute joints)
            b = self.model.bodies[i]
            th = jnp.dot(jnp.asarray(G[b.idx_v]), y(t))
            from test_higher_order import _axis_rot

            return _axis_rot(jnp.asarray(b.joint.axis_array()), th), jnp.zeros(3)

    traj = Spanning(tree, rng, forces=False)
    t0, order = 0.3, 3
    ref_span = taylor(traj.tau, t0, order)
    dv = taylor(jax.jacfwd(y), t0, order + 1)
    got = ho.rnea(model, data, np.asarray(y(t0)), dv)
    for k in range(order + 1):
        expected = G.T @ ref_span[k]
        np.testing.assert_allclose(got[k], expected, rtol=1e-9, atol=1e-9 * np.abs(ref_span[k]).max())


@pytest.mark.parametrize("name", ["four_bar", "planar_leg_linkage"])
def test_implicit_clusters_are_refused_naming_the_cluster(name):
    model = ld.robots.build(name)
    data = model.create_data()
    q = ld.neutral(model)
    with pytest.raises(errors.UnsupportedFeatureError, match="cluster .* is implicit"):
        ho.rnea(model, data, q, np.zeros((2, model.nv)))
    with pytest.raises(errors.UnsupportedFeatureError, match="cluster .* is implicit"):
        ho.aba(model, data, q, np.zeros(model.nv), np.zeros((1, model.nv)))


def test_cluster_models_bad_input_and_unsupported_functions():
    model = ld.robots.mini_cheetah()
    data = model.create_data()
    q = ld.random_configuration(model)
    dv = np.zeros((3, model.nv))
    with pytest.raises(errors.ShapeError, match="dv"):
        ho.rnea(model, data, q, dv[:, :-1])
    with pytest.raises(errors.ShapeError, match="q"):
        ho.rnea(model, data, q[:-1], dv)
    qb = q.copy()
    qb[3:7] *= 2.0
    with pytest.raises(errors.ConfigurationError):
        ho.rnea(model, data, qb, dv)
    bad = dv.copy()
    bad[1, 0] = np.nan
    with pytest.raises(errors.NonFiniteError, match="dv"):
        ho.rnea(model, data, q, bad)
    with pytest.raises(errors.ShapeError, match="f_ext"):
        ho.aba(model, data, q, dv[0], dv, np.zeros((2, model.njoints, 6)))
    with pytest.raises(errors.UnsupportedFeatureError):
        ho.closed_form(model, data, q, dv[0])
    with pytest.raises(errors.UnsupportedFeatureError):
        ho.hybrid(model, data, q, dv, dv[1:], [])


@pytest.mark.parametrize("name", list(ROBOTS))
def test_cluster_recursion_matches_the_joint_space_factorisation(name):
    """The order-r cluster articulated-body recursion (``cluster_aba``) against the joint-space
    variant that assembles ``Gᵀ(M_span + armature)G`` from spanning-tree evaluations and factorises it
    (an independent formulation), r = 0…5 with external forces."""
    from loopdyn.higher_order import clusters as cl
    from loopdyn.higher_order.arrays import model_arrays

    model = ROBOTS[name]()
    data = model.create_data()
    hb, hf = model_arrays(model, data)
    mi, mf = cl.cluster_maps(model, data)
    rng = np.random.default_rng(7)
    for r in range(6):
        q = ld.random_configuration(model)
        v = rng.normal(size=model.nv)
        dtau = rng.normal(size=(r + 1, model.nv)) * 5.0
        fe = rng.normal(size=(r + 1, model.njoints, 6))
        got = ho.aba(model, data, q, v, dtau, fe)
        ref = np.empty_like(got)
        assert cl.cluster_aba_dense_kernel(hb, hf, mi, mf, q, v, dtau, fe, ref) == 0
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-10 * np.abs(ref).max())
