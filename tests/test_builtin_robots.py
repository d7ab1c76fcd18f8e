"""Built-in robots (loopdyn.robots.builtin) against the GRBDA URDF+ reference files they reproduce,
and on their own: sizes, masses, inverse/forward dynamics consistency."""

from __future__ import annotations

import numpy as np
import pytest
from reference_files import grbda_file

import loopdyn
from loopdyn.robots import builtin

# name: (nq, nv, number of bodies, number of constraints, total mass)
EXPECTED = {
    "double_pendulum": (2, 2, 2, 0, 3.0),
    "four_bar": (3, 1, 3, 1, 9.9),
    "mit_humanoid_leg": (5, 5, 10, 5, 0.84563 + 1.20868 + 2.64093 + 0.35435 + 0.280951),
    "mini_cheetah": (19, 18, 25, 12, 3.3 + 4 * (0.54 + 0.634 + 0.064 + 3 * 0.055)),
}
ROBOTS = list(EXPECTED)


def build(name: str) -> loopdyn.Model:
    return getattr(builtin, name)()


def reference(name: str) -> loopdyn.Model:
    return loopdyn.load_urdf(grbda_file(name), inertia="accept")  # the paper's files: see test_urdf_inertia


def rel_err(a, b) -> float:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.max(np.abs(a - b))) / max(1.0, float(np.max(np.abs(b))))


def random_state(model, rng):
    return loopdyn.random_configuration(model, rng), rng.normal(size=model.nv)


def test_list_robots():
    robots = builtin.list_robots()
    assert list(robots) == ROBOTS
    for name, description in robots.items():
        assert isinstance(description, str) and description and "\n" not in description
        assert callable(getattr(builtin, name))


# ----------------------------------------------------------------------------------------------
# against the reference files
@pytest.mark.parametrize("name", ROBOTS)
def test_same_structure_as_the_reference_file(name):
    ref, model = reference(name), build(name)
    assert (model.nq, model.nv) == (ref.nq, ref.nv)
    assert (model.spanning_nq, model.spanning_nv) == (ref.spanning_nq, ref.spanning_nv)
    assert model.velocity_names == ref.velocity_names
    assert model.joint_names == ref.joint_names
    assert model.body_names == ref.body_names
    assert model.frame_names == ref.frame_names
    assert [f.body for f in model.frames] == [f.body for f in ref.frames]
    np.testing.assert_array_equal(model.gravity, ref.gravity)
    assert model.universe_inertia.mass == ref.universe_inertia.mass
    for b, r in zip(model.bodies, ref.bodies, strict=True):
        assert (b.name, b.joint_name, b.parent, b.independent) == (
            r.name,
            r.joint_name,
            r.parent,
            r.independent,
        )
        assert b.joint == r.joint, b.joint_name
        np.testing.assert_allclose(b.rotation, r.rotation, rtol=0, atol=1e-15, err_msg=b.joint_name)
        np.testing.assert_allclose(b.translation, r.translation, rtol=0, atol=1e-15, err_msg=b.joint_name)
        assert b.inertia.mass == r.inertia.mass, b.name
        np.testing.assert_allclose(b.inertia.com, r.inertia.com, rtol=0, atol=1e-15, err_msg=b.name)
        np.testing.assert_allclose(b.inertia.inertia, r.inertia.inertia, rtol=0, atol=1e-15, err_msg=b.name)
    assert len(model.constraints) == len(ref.constraints)
    for c, r in zip(model.constraints, ref.constraints, strict=True):
        assert type(c) is type(r)
        assert (c.name, c.predecessor, c.successor) == (r.name, r.predecessor, r.successor)
        if hasattr(r, "ratio"):
            assert c.ratio == r.ratio
        else:
            assert (c.kind, c.axis) == (r.kind, r.axis)
            for pc, pr in zip(
                (*c.predecessor_placement, *c.successor_placement),
                (*r.predecessor_placement, *r.successor_placement),
                strict=True,
            ):
                np.testing.assert_allclose(pc, pr, rtol=0, atol=1e-15)
    if ref.has_constraints:
        assert [c.bodies for c in model.clusters().clusters] == [c.bodies for c in ref.clusters().clusters]


@pytest.mark.parametrize("name", ROBOTS)
def test_same_dynamics_as_the_reference_file(name):
    ref, model = reference(name), build(name)
    d_ref, d = ref.create_data(), model.create_data()
    rng = np.random.default_rng(2024)
    for _ in range(10):
        q, v = random_state(model, rng)
        H_ref = loopdyn.crba(ref, d_ref, q)
        assert rel_err(loopdyn.crba(model, d, q), H_ref) <= 1e-12
        C_ref = loopdyn.nonlinear_effects(ref, d_ref, q, v)
        assert rel_err(loopdyn.nonlinear_effects(model, d, q, v), C_ref) <= 1e-12


# ----------------------------------------------------------------------------------------------
# without the files
@pytest.mark.parametrize("name", ROBOTS)
def test_sizes_and_mass(name):
    model = build(name)
    nq, nv, nbodies, nconstraints, mass = EXPECTED[name]
    assert (model.nq, model.nv, model.nbodies, len(model.constraints)) == (nq, nv, nbodies, nconstraints)
    assert model.has_constraints == (nconstraints > 0)
    total = model.mass
    print(f"{name}: total mass {total:.6f} kg")
    assert total == pytest.approx(mass, rel=1e-12)
    assert len(model.velocity_names) == nv


def test_cluster_structure():
    assert len(builtin.four_bar().clusters().clusters) == 1
    leg = builtin.mit_humanoid_leg()
    assert len(leg.clusters().clusters) == 4
    assert leg.velocity_names == [
        "base_to_hipz_link",
        "hipz_to_hipx_link",
        "hipx_to_hipy_link",
        "hipy_to_knee_link",
        "knee_to_ankle",
    ]
    cheetah = builtin.mini_cheetah()
    assert len(cheetah.clusters().clusters) == 13
    legs = [
        joint.format(leg)
        for leg in ("FL", "FR", "HL", "HR")
        for joint in ("torso_to_{}_abad_j", "{}_abad_to_hip_j", "{}_hip_to_knee_j")
    ]
    assert cheetah.velocity_names == [f"base_to_floating_base[{k}]" for k in range(6)] + legs
    assert (cheetah.spanning_nq, cheetah.spanning_nv) == (31, 30)


@pytest.mark.parametrize("name", ROBOTS)
def test_forward_dynamics_inverts_inverse_dynamics(name):
    model = build(name)
    d = model.create_data()
    rng = np.random.default_rng(7)
    for _ in range(5):
        q, v = random_state(model, rng)
        a = rng.normal(size=model.nv)
        tau = loopdyn.rnea(model, d, q, v, a)
        assert rel_err(loopdyn.aba(model, d, q, v, tau), a) <= 1e-9
        H = loopdyn.crba(model, d, q)
        np.testing.assert_allclose(H, H.T, rtol=0, atol=1e-12)
        assert np.linalg.eigvalsh(H)[0] > 0
        C = loopdyn.nonlinear_effects(model, d, q, v)
        assert rel_err(tau, H @ a + C) <= 1e-9
