"""The exact reference methods of :mod:`loopdyn.baselines` (projection, Lagrange multipliers dense and
LᵀL) against each other, against the tree algorithms on plain trees, and against Pinocchio's
constraint dynamics on closed loops (a planar four-bar closed by a point or a 6D weld constraint, a
spatial 4R loop closed by a point constraint); plus the GT / PBT chains they are benchmarked on."""

from __future__ import annotations

import numpy as np
import pytest
import trees
from cluster_models import random_cluster_model
from trees import assert_close

import loopdyn
from loopdyn.baselines.constraints import (
    constraint_jacobians,
    explicit_G,
    independent_indices,
    spanning_state,
)
from loopdyn.baselines.lagrange import lagrange_forward_dynamics, lift_forces
from loopdyn.baselines.projection import (
    projected_bias,
    projected_mass_matrix,
    projected_rnea,
    projection_forward_dynamics,
)
from loopdyn.robots.serial import gt_chain, pbt_chain

# random positive definite rotational inertias, not all of which a rigid body can have (the triangle
# inequality): the algorithms hold for any, so the builder's InertiaWarning is expected here
pytestmark = pytest.mark.filterwarnings("ignore::loopdyn.errors.InertiaWarning")

N_STATES = 6
RTOL = 1e-9

MODELS = {
    **{f"clusters{s}": (lambda s=s: random_cluster_model(s, 4, floating=s % 2 == 1)) for s in range(8)},
    "clusters-big": lambda: random_cluster_model(42, 8, floating=True),
    "gt6-uniform": lambda: gt_chain(6),
    "gt6-random": lambda: gt_chain(6, seed=3),
    "gt1-random": lambda: gt_chain(1, seed=4),
    "pbt6-uniform": lambda: pbt_chain(6),
    "pbt6-random": lambda: pbt_chain(6, seed=5),
    "pbt8-random": lambda: pbt_chain(8, seed=11),
}


@pytest.fixture(scope="module", params=list(MODELS))
def model(request):
    return MODELS[request.param]()


def states(model, n=N_STATES, seed=0):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        q = loopdyn.random_configuration(model, rng)
        yield q, rng.normal(size=model.nv), rng.normal(size=model.nv), rng


def rel_close(actual, expected, what, rtol=RTOL):
    """``|actual − expected| ≤ rtol · max|expected|`` (relative to the vector's scale)."""
    scale = max(1.0, float(np.max(np.abs(expected)))) if np.size(expected) else 1.0
    err = float(np.max(np.abs(np.asarray(actual) - expected))) if np.size(expected) else 0.0
    assert err <= rtol * scale, f"{what}: max error {err:.3e} (scale {scale:.3e})"


# ---------------------------------------------------------------------------------------------
# constraint matrices
def test_constraint_identities(model):
    """K G = 0, K g = k, v_span = G v and a_span = G a + g as loopdyn.to_spanning, and the selection
    of the independent entries is G⁺."""
    for q, v, a, _ in states(model):
        G, g = explicit_G(model, q, v)
        qs, vs, as_, G2, g2 = spanning_state(model, q, v, a)
        assert np.array_equal(G, G2) and np.array_equal(g, g2)
        K, k = constraint_jacobians(model, qs, vs)
        assert G.shape == (model.spanning_nv, model.nv) and K.shape[1] == model.spanning_nv
        assert K.shape[0] == model.spanning_nv - model.nv  # independent rows only
        rel_close(K @ G, np.zeros((K.shape[0], model.nv)), "K G")
        rel_close(K @ g, k, "K g")
        ref = loopdyn.to_spanning(model, q, v, a)
        rel_close(qs, ref[0], "q_span vs to_spanning", 1e-12)
        rel_close(vs, ref[1], "v_span vs to_spanning")
        rel_close(as_, ref[2], "a_span vs to_spanning")
        ind = independent_indices(model)
        rel_close(np.linalg.pinv(G) @ (as_ - g), as_[ind], "G⁺(q̈ − g) vs selection")
        rel_close(G[ind], np.eye(model.nv), "unit rows of G at the independent coordinates", 0)


def test_projected_mass_matrix_spd(model):
    for q, _, _, _ in states(model, 3, seed=1):
        M = projected_mass_matrix(model, q)
        assert np.array_equal(M, M.T) or np.max(np.abs(M - M.T)) <= 1e-12 * np.max(np.abs(M))
        assert np.linalg.eigvalsh(0.5 * (M + M.T))[0] > 0.0


# ---------------------------------------------------------------------------------------------
# the three forward dynamics agree, and invert projected RNEA
@pytest.mark.parametrize("with_fext", [False, True], ids=["no-fext", "fext"])
def test_forward_dynamics_methods_agree(model, with_fext):
    for q, v, _, rng in states(model, seed=2 + with_fext):
        tau = 3.0 * rng.normal(size=model.nv)
        f = rng.normal(size=(model.njoints, 6)) * 2.0 if with_fext else None
        y_proj, qdd_proj = projection_forward_dynamics(model, q, v, tau, f, full_output=True)
        y_dense, qdd_dense, _ = lagrange_forward_dynamics(model, q, v, tau, f, "dense", full_output=True)
        y_ltl, qdd_ltl, _ = lagrange_forward_dynamics(model, q, v, tau, f, "ltl", full_output=True)
        rel_close(y_dense, y_proj, "LM dense vs projection")
        rel_close(y_ltl, y_proj, "LM ltl vs projection")
        rel_close(qdd_dense, qdd_proj, "spanning q̈: LM dense vs projection")
        rel_close(qdd_ltl, qdd_proj, "spanning q̈: LM ltl vs projection")
        # the accelerations satisfy the constraints
        qs, vs, _, _ = spanning_state(model, q, v)
        K, k = constraint_jacobians(model, qs, vs)
        for name, qdd in (("projection", qdd_proj), ("dense", qdd_dense), ("ltl", qdd_ltl)):
            rel_close(K @ qdd, k, f"K q̈ = k ({name})")
        # inverse of the forward dynamics
        rel_close(projected_rnea(model, q, v, y_proj, f), tau, "projected_rnea(FD(τ)) = τ")


def test_lagrange_multipliers_agree(model):
    for q, v, _, rng in states(model, 3, seed=7):
        tau = rng.normal(size=model.nv)
        _, _, lam_d = lagrange_forward_dynamics(model, q, v, tau, method="dense", full_output=True)
        _, _, lam_l = lagrange_forward_dynamics(model, q, v, tau, method="ltl", full_output=True)
        rel_close(lam_l, lam_d, "λ: ltl vs dense", 1e-8)


def test_projected_bias_and_rnea(model):
    for q, v, a, rng in states(model, 3, seed=4):
        f = rng.normal(size=(model.njoints, 6))
        b = projected_bias(model, q, v, f)
        rel_close(b, projected_rnea(model, q, v, np.zeros(model.nv), f), "bias = projected_rnea(a = 0)")
        M = projected_mass_matrix(model, q)
        rel_close(M @ a + b, projected_rnea(model, q, v, a, f), "M a + bias = projected_rnea")


def test_lift_forces_is_pseudo_inverse(model):
    for q, v, _, rng in states(model, 2, seed=5):
        G, _ = explicit_G(model, q, v)
        tau = rng.normal(size=model.nv)
        ts = lift_forces(G, tau)
        rel_close(ts, np.linalg.pinv(G.T) @ tau, "(Gᵀ)⁺ τ")
        rel_close(G.T @ ts, tau, "Gᵀ τ_span = τ")


# ---------------------------------------------------------------------------------------------
# plain trees: everything reduces to the tree algorithms
@pytest.mark.parametrize("index", [4, 7, 9, 13, 17])
def test_plain_tree_reduces_to_tree_algorithms(index):
    lm, _ = trees.tree_case(index, with_pinocchio=False)
    assert not lm.has_constraints
    data = lm.create_data()
    rng = np.random.default_rng(index)
    for _ in range(4):
        q, v, a = trees.random_state(rng, lm)
        tau = rng.normal(size=lm.nv)
        f = rng.normal(size=(lm.njoints, 6))
        G, g = explicit_G(lm, q, v)
        assert np.array_equal(G, np.eye(lm.nv)) and not g.any()
        assert constraint_jacobians(lm, q, v)[0].shape == (0, lm.nv)
        ref = loopdyn.aba(lm, data, q, v, tau, f)
        assert_close(projection_forward_dynamics(lm, q, v, tau, f), ref, what="projection vs aba")
        assert_close(lagrange_forward_dynamics(lm, q, v, tau, f, "dense"), ref, what="LM dense vs aba")
        assert_close(lagrange_forward_dynamics(lm, q, v, tau, f, "ltl"), ref, what="LM ltl vs aba")
        assert_close(projected_rnea(lm, q, v, a, f), loopdyn.rnea(lm, data, q, v, a, f), what="rnea")
        assert_close(projected_mass_matrix(lm, q), loopdyn.crba(lm, data, q), what="crba")
        assert_close(projected_bias(lm, q, v), loopdyn.nonlinear_effects(lm, data, q, v), what="nle")


def test_bad_method_and_shapes():
    m = gt_chain(2)
    q = np.zeros(m.nv)
    with pytest.raises(ValueError, match="method"):
        lagrange_forward_dynamics(m, q, q, q, method="qr")
    with pytest.raises(ValueError, match="tau"):
        projection_forward_dynamics(m, q, q, np.zeros(3))
    with pytest.raises(ValueError, match="q"):
        explicit_G(m, np.zeros(4), q)


def test_cache_follows_model_changes():
    m = gt_chain(2, seed=1)
    q = np.zeros(2)
    G0 = explicit_G(m, q, q)[0]
    assert G0.shape == (4, 2)
    m.add_body(
        "extra", "link-1", loopdyn.Revolute((0, 0, 1)), None, loopdyn.Inertia(1.0, (0.1, 0, 0), np.eye(3))
    )
    G, _ = explicit_G(m, np.zeros(3), np.zeros(3))
    # the new body is a tree joint of its own: G gains a unit row and column, the rest unchanged
    expected = np.zeros((5, 3))
    expected[:4, :2], expected[4, 2] = G0, 1.0
    assert m.bodies[-1].idx_v == 4 and np.array_equal(G, expected)


# ---------------------------------------------------------------------------------------------
# the chains
@pytest.mark.parametrize("n", [1, 4, 7])
def test_gt_chain_structure(n):
    for seed in (None, 0):
        m = gt_chain(n, seed)
        assert (m.nq, m.nv, m.spanning_nv) == (n, n, 2 * n)
        clusters = m.clusters().clusters
        assert len(clusters) == n
        for i, c in enumerate(clusters):
            assert [m.bodies[b - 1].name for b in c.bodies] == [f"link-{i}", f"rotor-{i}"]
            parent = 0 if i == 0 else m.body_id(f"link-{i - 1}")
            assert all(m.bodies[b - 1].parent == parent for b in c.bodies)
            ratio = -c.K_const[0, 0] / c.K_const[0, 1]
            assert (ratio == 6.0) if seed is None else (ratio in (1, 2, 3, 4, 5))
            assert m.frames[m.frame_id(f"cp-{i}")].body == m.body_id(f"link-{i}")
    assert np.allclose(gt_chain(3).gravity, (9.81, 0, 0))
    assert np.allclose(gt_chain(3, 1).gravity, (0, 0, -9.81))


@pytest.mark.parametrize("n", [2, 6])
def test_pbt_chain_structure(n):
    for seed in (None, 0, 1, 2):
        m = pbt_chain(n, seed)
        assert (m.nq, m.nv, m.spanning_nv) == (n, n, 2 * n)
        clusters = m.clusters().clusters
        assert len(clusters) == n // 2
        for i, c in enumerate(clusters):
            names = [m.bodies[b - 1].name for b in c.bodies]
            assert names == [f"link-A-{i}", f"rotor-A-{i}", f"rotor-B-{i}", f"link-B-{i}"]
            assert [names[k] for k in c.independent] == [f"link-A-{i}", f"link-B-{i}"]
            G = c.G_const
            if seed is None:  # rotor-A = 6 q_A, rotor-B = 6 (q_A + q_B)
                assert np.allclose(G, [[1, 0], [6, 0], [6, 6], [0, 1]])
            else:
                assert G[1, 1] == 0 and G[1, 0] >= 1 and G[2, 0] >= 1 and G[2, 1] >= G[2, 0]
            for f in (f"cp-A-{i}", f"cp-B-{i}"):
                assert m.frames[m.frame_id(f)].body == m.body_id(f"link-{f[3]}-{i}")
    with pytest.raises(ValueError):
        pbt_chain(3)


def test_chains_reproducible():
    a, b = gt_chain(5, 9), gt_chain(5, 9)
    q = np.linspace(-1, 1, 5)
    assert np.array_equal(projected_mass_matrix(a, q), projected_mass_matrix(b, q))
    assert not np.array_equal(projected_mass_matrix(a, q), projected_mass_matrix(gt_chain(5, 10), q))


def test_uniform_gt_chain_one_link_closed_form():
    """One uniform link + rotor about z: H_ind = I_zz + m c² + N² I_rot = 1 + 0.25 + 36e-4, and
    gravity (9.81, 0, 0) acting at the centre of mass (0.5, 0, 0) rotated by q."""
    m = gt_chain(1)
    for q in (0.0, 0.7, -2.0):
        M = projected_mass_matrix(m, np.array([q]))
        assert M[0, 0] == pytest.approx(1.25 + 36e-4, rel=1e-13)
        # U = −m g·x_c with x_c = 0.5 (cos q, sin q, 0), so τ_g = ∂U/∂q = 9.81 · 0.5 sin q
        tau_g = projected_bias(m, np.array([q]), np.zeros(1))
        assert tau_g[0] == pytest.approx(9.81 * 0.5 * np.sin(q), abs=1e-12)


# ---------------------------------------------------------------------------------------------
# Pinocchio: constraint dynamics on the same spanning tree
def _rotation(rng):
    x = rng.normal(size=4)
    x /= np.linalg.norm(x)
    return trees.quat_to_matrix(x)


def _inertia(rng):
    A = rng.normal(size=(3, 3))
    return loopdyn.Inertia(
        rng.uniform(0.5, 2.0), rng.uniform(-0.2, 0.2, 3), A @ A.T * 0.02 + 0.01 * np.eye(3)
    )


def _to_pinocchio(pin, m):
    """The spanning tree of a model with only revolute joints, as a Pinocchio model."""
    pm = pin.Model()
    pm.gravity = pin.Motion(np.r_[m.gravity, 0.0, 0.0, 0.0])
    for i, b in enumerate(m.bodies, start=1):
        assert b.joint.kind == "revolute"
        joint = pin.JointModelRevoluteUnaligned(b.joint.axis_array())
        jid = pm.addJoint(b.parent, joint, pin.SE3(b.rotation, b.translation), b.joint_name)
        assert jid == i
        inertia = b.inertia
        pm.appendBodyToJoint(jid, pin.Inertia(inertia.mass, inertia.com, inertia.inertia), pin.SE3.Identity())
    return pm


def _four_bar(pin, rng):
    """A planar four-bar (crank, coupler, rocker about parallel z axes) on a moving base, in a random
    orientation, closed by a point loop joint (3 rows of rank 2)."""
    m = loopdyn.Model("four-bar")
    R0, p0 = _rotation(rng), rng.uniform(-0.3, 0.3, 3)
    z = (0.0, 0.0, 1.0)
    l1, l2, l3, ground = 0.3, 0.8, 0.6, 0.7
    m.add_body("base", 0, loopdyn.Revolute(rng.normal(size=3)), (_rotation(rng), rng.uniform(-0.3, 0.3, 3)),
               _inertia(rng))  # fmt: skip
    m.add_body("crank", "base", loopdyn.Revolute(z), (R0, p0), _inertia(rng))
    m.add_body(
        "coupler", "crank", loopdyn.Revolute(z), (np.eye(3), [l1, 0, 0]), _inertia(rng), independent=False
    )
    m.add_body("rocker", "base", loopdyn.Revolute(z), (R0, p0 + R0 @ [ground, 0, 0]), _inertia(rng),
               independent=False)  # fmt: skip
    pa, pb = np.array([l2, 0.0, 0.0]), np.array([l3, 0.0, 0.0])
    m.add_loop("loop", "coupler", "rocker", "point", (np.eye(3), pa), (np.eye(3), pb))
    contact = (
        pin.ContactType.CONTACT_3D,
        "coupler",
        pin.SE3(np.eye(3), pa),
        "rocker",
        pin.SE3(np.eye(3), pb),
    )
    return m, contact


def _four_bar_weld(pin, rng):
    """The four-bar of :func:`_four_bar` with one more body, a pin turning about z at the rocker's tip,
    welded to the coupler's tip: a revolute loop joint written as a 6D constraint (6 rows of rank 3)."""
    m, _ = _four_bar(pin, rng)
    m.remove_constraint("loop")
    m.add_body("pin", "rocker", loopdyn.Revolute((0.0, 0.0, 1.0)), (np.eye(3), [0.6, 0, 0]), _inertia(rng),
               independent=False)  # fmt: skip
    Ma = pin.SE3(np.eye(3), np.array([0.8, 0.0, 0.0]))
    m.add_loop("weld", "coupler", "pin", "weld", (Ma.rotation, Ma.translation), None)
    return m, (pin.ContactType.CONTACT_6D, "coupler", Ma, "pin", pin.SE3.Identity())


def _spatial_point_loop(pin, rng):
    """A spatial loop of 4 revolute joints with random axes (2 per branch) closed by a point joint
    (3 rows of rank 3): one degree of freedom."""
    m = loopdyn.Model("4R-point")
    for branch in ("a", "b"):
        prev = 0
        for i in range(2):
            m.add_body(f"{branch}{i}", prev, loopdyn.Revolute(rng.normal(size=3)),
                       (_rotation(rng), rng.uniform(-0.4, 0.4, 3)), _inertia(rng),
                       independent=branch == "a" and i == 0)  # fmt: skip
            prev = f"{branch}{i}"

    def world(name):  # placement at q = 0
        T, b = pin.SE3.Identity(), m.body_id(name)
        while b:
            body = m.bodies[b - 1]
            T, b = pin.SE3(body.rotation, body.translation) * T, body.parent
        return T

    Ma = pin.SE3(np.eye(3), rng.uniform(-0.3, 0.3, 3))
    Mb = world("b1").inverse() * world("a1") * Ma  # the points coincide at q = 0
    Mb = pin.SE3(np.eye(3), Mb.translation)
    m.add_loop("ball", "a1", "b1", "point", (Ma.rotation, Ma.translation), (Mb.rotation, Mb.translation))
    return m, (pin.ContactType.CONTACT_3D, "a1", Ma, "b1", Mb)


MECHANISMS = {"four-bar-point": _four_bar, "four-bar-weld": _four_bar_weld, "4R-point": _spatial_point_loop}


@pytest.mark.parametrize("mechanism", list(MECHANISMS))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_against_pinocchio_constraint_dynamics(mechanism, seed):
    import pinocchio as pin
    rng = np.random.default_rng(seed)
    m, (ctype, ja, Ma, jb, Mb) = MECHANISMS[mechanism](pin, rng)
    (cluster,) = [c for c in m.clusters().clusters if c.kind]
    assert cluster.m == 1
    pm = _to_pinocchio(pin, m)
    pd = pm.createData()
    cm = pin.RigidConstraintModel(
        ctype, pm, pm.getJointId(ja), Ma, pm.getJointId(jb), Mb, pin.ReferenceFrame.LOCAL
    )
    cms = pin.StdVec_RigidConstraintModel()
    cms.append(cm)
    cds = pin.StdVec_RigidConstraintData()
    cds.append(cm.createData())
    pin.initConstraintDynamics(pm, pd, cms, cds)
    prox = pin.ProximalSettings(1e-14, 1e-12, 100)
    worst = 0.0
    data = m.create_data()
    for q, v, _, rng_ in states(m, 8, seed=10 + seed):
        tau = 3.0 * rng_.normal(size=m.nv)
        qs, vs, G, g = spanning_state(m, q, v)
        tau_span = lift_forces(G, tau)
        qdd_pin = pin.constraintDynamics(pm, pd, qs, vs, tau_span, cms, cds, prox)
        for method in ("dense", "ltl"):
            ydd, qdd, _ = lagrange_forward_dynamics(m, q, v, tau, method=method, full_output=True)
            rel_close(qdd, qdd_pin, f"{mechanism}: spanning q̈ (LM {method}) vs Pinocchio", 1e-8)
            rel_close(G @ ydd + g, qdd_pin, f"{mechanism}: G ÿ + g (LM {method}) vs Pinocchio", 1e-8)
        ydd, qdd = projection_forward_dynamics(m, q, v, tau, full_output=True)
        rel_close(qdd, qdd_pin, f"{mechanism}: G ÿ + g (projection) vs Pinocchio", 1e-8)
        ydd_c = loopdyn.aba(m, data, q, v, tau)  # C-ABA itself against Pinocchio
        rel_close(G @ ydd_c + g, qdd_pin, f"{mechanism}: G ÿ + g (C-ABA) vs Pinocchio", 1e-8)
        worst = max(worst, float(np.max(np.abs(qdd - qdd_pin)) / max(1.0, np.max(np.abs(qdd_pin)))))
    print(f"{mechanism} seed {seed}: worst relative difference to Pinocchio {worst:.2e}")


# ---------------------------------------------------------------------------------------------
# the compiled constraint source (for timing the baselines as the paper does)
def test_compiled_maps_equal_the_independent_maps(model):
    """G, g, K, k and the spanning state from the cluster kernels' constraint tapes equal the sympy /
    partition-formula maps, and every baseline gives the same result with either source."""
    from loopdyn.baselines.compiled import compiled_maps

    for q, v, x, rng in states(model, n=3, seed=5):
        qs, vs, G, g = spanning_state(model, q, v)
        K, k = constraint_jacobians(model, qs, vs)
        cq, cv, cG, cg, cK, ck = compiled_maps(model, q, v)
        for name, a, b in (("q_span", cq, qs), ("v_span", cv, vs), ("G", cG, G), ("g", cg, g), ("K", cK, K),
                           ("k", ck, k)):  # fmt: skip
            assert a.shape == b.shape, name
            rel_close(a, b, name, rtol=1e-11)
        f = rng.normal(size=(model.njoints, 6))
        rel_close(projected_rnea(model, q, v, x, f, compiled=True), projected_rnea(model, q, v, x, f), "ID")
        rel_close(projection_forward_dynamics(model, q, v, x, f, compiled=True),
                  projection_forward_dynamics(model, q, v, x, f), "projection")  # fmt: skip
        for method in ("dense", "ltl"):
            rel_close(lagrange_forward_dynamics(model, q, v, x, f, method, compiled=True),
                      lagrange_forward_dynamics(model, q, v, x, f, method), f"LM {method}")  # fmt: skip


def test_compiled_maps_on_tello():
    """Tello's nonlinear differentials (implicit clusters): the compiled K, k equal sympy's."""
    from loopdyn.baselines.compiled import compiled_maps

    model = loopdyn.robots.tello(arms=False)
    rng = np.random.default_rng(2)
    for _ in range(3):
        q = loopdyn.random_configuration(model, rng)
        v = rng.normal(size=model.nv)
        qs, vs, G, g = spanning_state(model, q, v)
        K, k = constraint_jacobians(model, qs, vs)
        _, _, cG, cg, cK, ck = compiled_maps(model, q, v)
        for name, a, b in (("G", cG, G), ("g", cg, g), ("K", cK, K), ("k", ck, k)):
            rel_close(a, b, name, rtol=1e-11)
