"""The approximate ("reflected inertia") and unconstrained models (:mod:`loopdyn.baselines.approximate`,
spec §2.7.2): structure (links kept, rotors dropped, dof), the reflected inertia in closed form, and
— for rotors without mass — exactness against the model's dynamics projected from its spanning tree,
``H = Gᵀ H_span G``, ``C = Gᵀ (C_span + H_span g)``."""

from __future__ import annotations

import numpy as np
import pytest
from cluster_models import random_cluster_model
from trees import assert_close

import loopdyn
from loopdyn.baselines import ApproximateModel, approximate_model, unconstrained_model
from loopdyn.errors import InputError, UnsupportedFeatureError

# random positive definite rotational inertias, not all of which a rigid body can have (the triangle
# inequality): the algorithms hold for any, so the builder's InertiaWarning is expected here
pytestmark = pytest.mark.filterwarnings("ignore::loopdyn.errors.InertiaWarning")

N_STATES = 10
EXPLICIT_CASES = [(seed, n, seed % 2 == 1) for seed, n in ((11, 3), (12, 4), (13, 5), (14, 6), (15, 4))]


def _inertia(m=1.0, c=(0.0, 0.0, 0.0), diag=(0.01, 0.02, 0.03)):
    return loopdyn.Inertia(m, c, np.diag(diag))


def _rotational_about_origin(inertia: loopdyn.Inertia) -> np.ndarray:
    c = np.asarray(inertia.com)
    return inertia.inertia + inertia.mass * (c @ c * np.eye(3) - np.outer(c, c))


def _massless_rotors(model: loopdyn.Model) -> loopdyn.Model:
    """The model with every rotor of its approximate model made massless."""
    rotors = set(approximate_model(model).rotors)
    for b in model.bodies:
        if b.name in rotors:
            b.inertia = loopdyn.Inertia.zero()
    model._touch()
    return model


def _exact(model, q, v, a):
    """(H, C, a_span) of the model at (q, v) from its spanning tree: G column by column from
    to_spanning's velocities, g from its acceleration with ÿ = 0, dense projection."""
    tree = loopdyn.spanning_tree(model)
    td = tree.create_data()
    qs, _ = loopdyn.to_spanning(model, q, np.zeros(model.nv))
    G = np.column_stack([loopdyn.to_spanning(model, q, e)[1] for e in np.eye(model.nv)])
    _, vs, g = loopdyn.to_spanning(model, q, v, np.zeros(model.nv))
    assert_close(vs, G @ v, atol=1e-12, what="v_span = G v")
    H_span = loopdyn.crba(tree, td, qs)
    C_span = loopdyn.nonlinear_effects(tree, td, qs, vs)
    return G.T @ H_span @ G, G.T @ (C_span + H_span @ g), G @ a + g


def _states(model, seed):
    rng = np.random.default_rng(seed)
    return [
        (loopdyn.random_configuration(model, rng), rng.normal(size=model.nv), rng.normal(size=model.nv))
        for _ in range(N_STATES)
    ]


# ---------------------------------------------------------------------------------------------
# structure
@pytest.mark.parametrize(("seed", "n", "floating"), EXPLICIT_CASES)
def test_structure(seed, n, floating):
    model = random_cluster_model(seed, n, floating, blocks=("geared", "belt"))
    for am in (approximate_model(model), unconstrained_model(model)):
        assert isinstance(am, ApproximateModel)
        assert am.nv == am.tree.nv == model.nv
        assert am.nq == model.nq  # explicit clusters: same coordinates
        assert not am.tree.has_constraints
        names = [b.name for b in am.tree.bodies]
        assert not any("rotor" in nm for nm in names)
        assert sorted(am.rotors) == sorted(b.name for b in model.bodies if "rotor" in b.name)
        assert len(names) == model.nbodies - len(am.rotors)
        assert am.tree.velocity_names == model.velocity_names  # same coordinates, same order
        # links keep their joints, placements, inertias (rotor mass not lumped)
        for b in am.tree.bodies:
            src = model.bodies[model.body_id(b.name) - 1]
            assert b.joint is src.joint and b.inertia is src.inertia
            assert np.array_equal(b.rotation, src.rotation) and np.array_equal(b.translation, src.translation)
            assert am.tree.body_names[b.parent] == model.body_names[src.parent]
        assert not any(f.name in am.rotors for f in am.tree.frames)
        assert abs(am.tree.mass - (model.mass - sum(model.bodies[model.body_id(r) - 1].inertia.mass
                                                    for r in am.rotors))) < 1e-12  # fmt: skip
    assert np.all(unconstrained_model(model).tree.armature == 0.0)
    assert np.any(approximate_model(model).tree.armature > 0.0)
    assert_close(approximate_model(model).tree.armature, np.diag(approximate_model(model).reflected_inertia))
    assert_close(unconstrained_model(model).reflected_inertia, approximate_model(model).reflected_inertia)


def test_geared_joint_closed_form():
    """One link driven through a gear of ratio N by a rotor with an off-axis centre of mass:
    armature = N² axisᵀ Ī_rotor,origin axis."""
    N = 7.5
    axis = np.array([1.0, 2.0, 2.0]) / 3.0
    rotor_inertia = loopdyn.Inertia(
        0.3, [0.01, -0.02, 0.03], [[2e-4, 1e-5, 0], [1e-5, 3e-4, 2e-5], [0, 2e-5, 1e-4]]
    )
    m = loopdyn.Model("geared")
    m.add_body("link", 0, loopdyn.Revolute((0, 0, 1)), (np.eye(3), [0, 0, 0.1]), _inertia())
    m.add_body(
        "rotor", 0, loopdyn.Revolute(axis), (np.eye(3), [0.05, 0, 0]), rotor_inertia, independent=False
    )
    m.add_coupling("gear", "link", "rotor", N)
    expected = N**2 * axis @ _rotational_about_origin(rotor_inertia) @ axis
    am = approximate_model(m)
    assert am.rotors == ["rotor"]
    assert_close(am.tree.armature, [expected], rtol=1e-13, atol=0)
    assert_close(am.reflected_inertia, [[expected]], rtol=1e-13, atol=0)
    assert_close(unconstrained_model(m).tree.armature, [0.0])
    # the tree's mass matrix is the link's own inertia about its axis plus the armature
    d = am.tree.create_data()
    M = loopdyn.crba(am.tree, d, np.array([0.4]))
    assert_close(M, [[_rotational_about_origin(_inertia())[2, 2] + expected]], rtol=1e-12)


def test_belt_closed_form():
    """Knee and ankle driven by belts: rotor 1 reflects onto the knee only, rotor 2 (which follows
    knee + ankle) onto the full 2×2 block (spec §2.7.2, RevolutePairWithRotor)."""
    N1, N2 = 4.0, 9.0
    I1 = loopdyn.Inertia(0.2, [0, 0, 0.01], np.diag([1e-4, 2e-4, 3e-4]))
    I2 = loopdyn.Inertia(0.25, [0.02, 0, 0], np.diag([2e-4, 1e-4, 4e-4]))
    m = loopdyn.Model("belt")
    m.add_body("base", 0, loopdyn.Prismatic((1, 0, 0)), inertia=_inertia(2.0))
    m.add_body("knee", "base", loopdyn.Revolute((0, 1, 0)), inertia=_inertia(1.0, (0, 0, -0.1)))
    m.add_body("knee_rotor", "base", loopdyn.Revolute((0, 0, 1)), inertia=I1, independent=False)
    m.add_body("ankle_rotor", "base", loopdyn.Revolute((1, 0, 0)), inertia=I2, independent=False)
    m.add_body("ankle", "knee", loopdyn.Revolute((0, 1, 0)), (np.eye(3), [0, 0, -0.3]), _inertia(0.5))
    m.add_coupling("knee_belt", "knee", "knee_rotor", N1)
    m.add_coupling("ankle_belt", "ankle", "ankle_rotor", N2)
    r1 = N1**2 * _rotational_about_origin(I1)[2, 2]
    r2 = N2**2 * _rotational_about_origin(I2)[0, 0]
    am = approximate_model(m)
    assert [b.name for b in am.tree.bodies] == ["base", "knee", "ankle"]
    H = np.zeros((3, 3))
    H[1:, 1:] = [[r1 + r2, r2], [r2, r2]]
    assert_close(am.reflected_inertia, H, rtol=1e-13, atol=1e-16)
    assert_close(am.tree.armature, np.diag(H), rtol=1e-13, atol=1e-16)


def test_own_armature_is_kept():
    model = random_cluster_model(21, 4, False, blocks=("geared", "belt"))
    arm = np.linspace(0.01, 0.02, model.spanning_nv)
    model.armature = arm
    am = approximate_model(model)
    src = [model.bodies[model.body_id(b.name) - 1] for b in am.tree.bodies]
    own = np.concatenate([arm[b.idx_v : b.idx_v + b.joint.nv] for b in src])
    assert_close(am.tree.armature, own + np.diag(am.reflected_inertia), rtol=1e-14, atol=0)
    assert_close(unconstrained_model(model).tree.armature, own, rtol=0, atol=0)


def test_tree_model_unchanged():
    """A model without constraints: the approximate model is the same tree."""
    rng = np.random.default_rng(5)
    m = loopdyn.Model("tree")
    m.add_body("a", 0, loopdyn.FreeFlyer(), inertia=_inertia(2.0))
    m.add_body("b", "a", loopdyn.Spherical(), (np.eye(3), [0.1, 0, 0]), _inertia(1.0, (0, 0.1, 0)))
    m.add_body("c", "b", loopdyn.Revolute((0, 1, 0)), (np.eye(3), [0, 0, 0.2]), _inertia(0.5))
    am = approximate_model(m)
    assert am.rotors == [] and am.tree.nbodies == 3
    q = loopdyn.random_configuration(m, rng)
    v, a = rng.normal(size=m.nv), rng.normal(size=m.nv)
    qt, vt, at = am.state(q, v, a)
    assert_close(
        loopdyn.rnea(am.tree, am.tree.create_data(), qt, vt, at), loopdyn.rnea(m, m.create_data(), q, v, a)
    )


# ---------------------------------------------------------------------------------------------
# exactness with massless rotors
@pytest.mark.parametrize(("seed", "n", "floating"), EXPLICIT_CASES)
@pytest.mark.parametrize("mode", ["diagonal", "none"])
def test_exact_with_massless_rotors(seed, n, floating, mode):
    model = _massless_rotors(random_cluster_model(seed, n, floating, blocks=("geared", "belt")))
    am = approximate_model(model, mode)
    assert np.all(am.tree.armature == 0.0)
    d = am.tree.create_data()
    rng = np.random.default_rng(seed)
    for s, (q, v, a) in enumerate(_states(model, seed)):
        H, C, _ = _exact(model, q, v, a)
        qt, vt, at = am.state(q, v, a)
        assert_close(qt, q, rtol=0, atol=0, what="explicit clusters: same q")
        assert_close(loopdyn.crba(am.tree, d, qt), H, what=f"state {s}: H")
        assert_close(loopdyn.nonlinear_effects(am.tree, d, qt, vt), C, what=f"state {s}: C")
        tau = loopdyn.rnea(am.tree, d, qt, vt, at)
        assert_close(am.torque_to_model(tau), H @ a + C, what=f"state {s}: rnea")
        tau = rng.normal(size=model.nv)
        assert_close(loopdyn.aba(am.tree, d, qt, vt, am.from_model_torque(tau)), np.linalg.solve(H, tau - C),
                     rtol=1e-8, atol=1e-9, what=f"state {s}: aba")  # fmt: skip


@pytest.mark.parametrize("seed", [31, 32])
def test_differential_massless_rotors(seed):
    """Tello-like differentials (implicit): the tree runs on the links' spanning coordinates; with
    massless rotors ``τ_y = G_lᵀ RNEA_tree(q_l, q̇_l, G_l ÿ + g_l)`` is the model's exact τ."""
    model = _massless_rotors(random_cluster_model(seed, 3, seed % 2 == 0, blocks=("differential", "geared")))
    am = approximate_model(model)
    assert am.has_implicit and am.nv == model.nv
    assert all(r.startswith(("dr", "rotor")) for r in am.rotors)
    d = am.tree.create_data()
    rng = np.random.default_rng(seed)
    for s, (q, v, a) in enumerate(_states(model, seed)[:5]):
        H, C, a_span = _exact(model, q, v, a)
        qs, vs = loopdyn.to_spanning(model, q, v)
        qt, vt, at = am.state(q, v, a)
        kept = [model.bodies[model.body_id(b.name) - 1] for b in am.tree.bodies]
        assert_close(qt, np.concatenate([qs[b.idx_q : b.idx_q + b.joint.nq] for b in kept]), what="q")
        assert_close(vt, np.concatenate([vs[b.idx_v : b.idx_v + b.joint.nv] for b in kept]), what="v")
        assert_close(at, np.concatenate([a_span[b.idx_v : b.idx_v + b.joint.nv] for b in kept]), what="a")
        tau = am.torque_to_model(loopdyn.rnea(am.tree, d, qt, vt, at), q)
        assert_close(tau, H @ a + C, rtol=1e-8, atol=1e-9, what=f"state {s}: τ")
        tau = rng.normal(size=model.nv)
        assert_close(am.torque_to_model(am.from_model_torque(tau, q), q), tau, what="torque maps round trip")
        # forward dynamics: the tree's link accelerations are those of the exact ÿ
        ydd = np.linalg.solve(H, tau - C)
        at_exact = am.state(q, v, ydd)[2]
        assert_close(loopdyn.aba(am.tree, d, qt, vt, am.from_model_torque(tau, q)), at_exact,
                     rtol=1e-7, atol=1e-8, what=f"state {s}: aba")  # fmt: skip
    with pytest.raises(InputError, match="pass q"):
        am.torque_to_model(np.zeros(model.nv))


# ---------------------------------------------------------------------------------------------
# refused models and inputs
def test_fourbar_refused():
    model = random_cluster_model(41, 1, False, blocks=("fourbar",))
    with pytest.raises(UnsupportedFeatureError, match="crank1"):
        approximate_model(model)


def test_rotor_with_children_refused():
    m = loopdyn.Model("bad")
    m.add_body("link", 0, loopdyn.Revolute((0, 0, 1)), inertia=_inertia())
    m.add_body("rotor", 0, loopdyn.Revolute((0, 0, 1)), inertia=_inertia(0.1), independent=False)
    m.add_body("on_rotor", "rotor", loopdyn.Revolute((1, 0, 0)), inertia=_inertia(0.1))
    m.add_coupling("gear", "link", "rotor", 5.0)
    with pytest.raises(UnsupportedFeatureError, match="on_rotor"):
        approximate_model(m)


def test_bad_inputs():
    model = random_cluster_model(12, 4, False, blocks=("geared", "belt"))
    with pytest.raises(InputError):
        approximate_model(model, "block")
    am = approximate_model(model)
    with pytest.raises(loopdyn.errors.ShapeError):
        am.state(np.zeros(model.nq + 1))
    with pytest.raises(loopdyn.errors.ShapeError):
        am.torque_to_model(np.zeros(model.nv + 1))
    model.armature = 0.5
    with pytest.raises(InputError, match="changed"):
        am.state(np.zeros(model.nq))


# ---------------------------------------------------------------------------------------------
# Tello
def test_tello():
    from loopdyn.robots import tello_model as tello

    model = tello.tello_humanoid()  # written in code: no file to miss
    for am in (approximate_model(model), unconstrained_model(model)):
        assert am.nv == model.nv == 24
        assert len(am.rotors) == 18 and all("rotor" in r for r in am.rotors)
        assert not any("rotor" in b.name for b in am.tree.bodies)
        assert am.tree.nbodies == model.nbodies - 18
    am = approximate_model(model)
    arm = dict(zip(am.tree.velocity_names, am.tree.armature, strict=True))
    # differentials: zero reflected inertia (spec pitfall 28); geared joints: N² I_rot
    for side in ("left", "right"):
        for link in ("gimbal", "thigh", "shin", "foot"):
            body = am.tree.bodies[am.tree.body_id(f"{side}-{link}") - 1]
            assert arm[body.joint_name] == 0.0
        for link, N in (("hip-clamp", 6.0), ("elbow", 9.0)):
            body = am.tree.bodies[am.tree.body_id(f"{side}-{link}") - 1]
            rotor = model.bodies[model.body_id(f"{side}-{link}-rotor") - 1]
            ax = rotor.joint.axis_array()
            assert_close(
                arm[body.joint_name], N**2 * ax @ _rotational_about_origin(rotor.inertia) @ ax, rtol=1e-12
            )
    rng = np.random.default_rng(0)
    q = loopdyn.random_configuration(model, rng)
    v, a = rng.normal(size=model.nv), rng.normal(size=model.nv)
    qt, vt, at = am.state(q, v, a)
    assert qt.shape == (am.tree.nq,) and vt.shape == at.shape == (24,)
    tau = am.torque_to_model(loopdyn.rnea(am.tree, am.tree.create_data(), qt, vt, at), q)
    # the values. With massless rotors the approximate model (then the unconstrained one) is exact:
    # Pinocchio alone on the spanning tree with the rotors' inertia zeroed (loop_oracles: the
    # differentials' rows by sympy from φ) gives back ÿ = a for its torques. With the rotors' mass it
    # adds the geared joints' reflected inertia N² I_rot ÿ, the differentials none.
    import pinocchio as pin
    from loop_oracles import SpanningPinocchio

    free = unconstrained_model(model)
    assert [b.name for b in free.tree.bodies] == [b.name for b in am.tree.bodies]
    tau0 = am.torque_to_model(loopdyn.rnea(free.tree, free.tree.create_data(), qt, vt, at), q)
    oracle = SpanningPinocchio(model)
    assert np.all(oracle.pm.armature == 0.0)
    ydd, _ = oracle.forward_dynamics(q, v, tau0)  # negative control: with the rotors' mass, not exact
    assert np.abs(ydd - a).max() > 1e-3 * np.abs(a).max()
    for rotor in am.rotors:
        oracle.pm.inertias[int(oracle.jmap[model.body_id(rotor)])] = pin.Inertia.Zero()
    ydd, _ = oracle.forward_dynamics(q, v, tau0)
    assert_close(ydd, a, rtol=1e-9, atol=1e-9 * np.abs(a).max(), what="massless rotors: exact")
    geared = {name: value for name, value in arm.items() if value != 0.0}
    assert len(geared) == 10 and set(geared) <= set(model.velocity_names)  # hip clamps, arms
    reflected = np.array([geared.get(name, 0.0) for name in model.velocity_names]) * a
    assert_close(tau - tau0, reflected, rtol=1e-9, atol=1e-12 * np.abs(tau).max(), what="reflected inertia")
