"""Tello written in code (:func:`loopdyn.robots.tello_model.tello`) against GRBDA's tello_humanoid.urdf /
tello_legs.urdf loaded with the same constraint additions, and on its own (no file): sizes per the
spec's §5 table, flags, masses, forward dynamics against the projection baseline."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from reference_files import grbda_file

import loopdyn
from loopdyn.baselines.projection import projection_forward_dynamics
from loopdyn.constraints.definitions import Coupling, ImplicitConstraint
from loopdyn.errors import InputError
from loopdyn.model.clusters import EXPLICIT, IMPLICIT
from loopdyn.robots import tello_model as tello

# spec §5 table: (bodies, clusters, nv, spanning nv, nq)
SIZES = {True: (37, 15, 24, 42, 33), False: (21, 7, 16, 26, 25)}
# the masses written in the files, summed by hand: per leg 5 rotors of 0.07 kg + hip clamp, gimbal,
# thigh, shin, foot; per arm four links (massless rotors); the torso (tello_humanoid.urdf only)
LEG_MASS = 5 * 0.07 + 1.3289 + 0.4433 + 1.5424 + 0.3072 + 0.1025
ARM_MASS = 0.788506 + 0.80125 + 0.905588 + 0.34839
MASS = {True: 2.3008 + 2 * LEG_MASS + 2 * ARM_MASS, False: 2 * LEG_MASS}


def ref(name: str) -> Path:
    return grbda_file(name)  # fails (never skips) when the file is missing


_MODELS: dict = {}


def built(arms: bool) -> loopdyn.Model:
    if arms not in _MODELS:
        _MODELS[arms] = tello.tello(arms=arms)
    return _MODELS[arms]


def reference(arms: bool) -> loopdyn.Model:
    """load_urdf of the file + the additions tello_humanoid / tello_legs make to a loaded file."""
    key = ("ref", arms)
    if key not in _MODELS:
        if arms:
            _MODELS[key] = tello.tello_humanoid(ref("tello_humanoid.urdf"))
        else:
            _MODELS[key] = tello.tello_legs(ref("tello_legs.urdf"), floating_base=True)
    return _MODELS[key]


def rel_err(a, b) -> float:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    """max |a − b| relative to max |b|."""
    return float(np.max(np.abs(a - b))) / float(np.max(np.abs(b)))


def local_names(model, c) -> list[str]:
    return [model.bodies[b - 1].name for b in c.bodies]


ARMS = pytest.mark.parametrize("arms", [True, False], ids=["humanoid", "legs"])


# ----------------------------------------------------------------------------------------------
# against the reference files
@ARMS
def test_same_structure_as_the_reference_file(arms):
    r, model = reference(arms), built(arms)
    assert model.name == r.name
    assert (model.nq, model.nv, model.spanning_nq, model.spanning_nv) == (
        r.nq,
        r.nv,
        r.spanning_nq,
        r.spanning_nv,
    )
    assert model.body_names == r.body_names
    assert model.joint_names == r.joint_names
    assert model.frame_names == r.frame_names
    assert model.velocity_names == r.velocity_names
    assert [(f.body, f.kind) for f in model.frames] == [(f.body, f.kind) for f in r.frames]
    for f, g in zip(model.frames, r.frames, strict=True):
        np.testing.assert_allclose(f.placement, g.placement, rtol=0, atol=1e-12, err_msg=f.name)
    np.testing.assert_array_equal(model.gravity, r.gravity)
    assert model.universe_inertia.mass == r.universe_inertia.mass == 0.0
    for b, c in zip(model.bodies, r.bodies, strict=True):
        assert (b.name, b.joint_name, b.parent, b.independent) == (
            c.name,
            c.joint_name,
            c.parent,
            c.independent,
        )
        assert b.joint == c.joint, b.joint_name  # type, axis and limits
        np.testing.assert_allclose(b.rotation, c.rotation, rtol=0, atol=1e-12, err_msg=b.joint_name)
        np.testing.assert_allclose(b.translation, c.translation, rtol=0, atol=1e-12, err_msg=b.joint_name)
        assert b.inertia.mass == c.inertia.mass, b.name
        np.testing.assert_allclose(b.inertia.com, c.inertia.com, rtol=0, atol=1e-12, err_msg=b.name)
        np.testing.assert_allclose(b.inertia.inertia, c.inertia.inertia, rtol=0, atol=1e-12, err_msg=b.name)
        np.testing.assert_array_equal(b.armature_vector(), c.armature_vector())
    assert [type(c) for c in model.constraints] == [type(c) for c in r.constraints]
    for c, d in zip(model.constraints, r.constraints, strict=True):
        assert c.name == d.name
        if isinstance(c, Coupling):
            assert (c.predecessor, c.successor, c.ratio) == (d.predecessor, d.successor, d.ratio)
        else:
            assert isinstance(c, ImplicitConstraint)
            assert c.joints == d.joints
    ct, rt = model.clusters().clusters, r.clusters().clusters
    assert [(c.kind, c.bodies, c.independent, c.nq, c.nv) for c in ct] == [
        (c.kind, c.bodies, c.independent, c.nq, c.nv) for c in rt
    ]
    for c, d in zip(ct, rt, strict=True):
        if c.kind == IMPLICIT:
            assert [str(e) for e in c.phi_exprs] == [str(e) for e in d.phi_exprs]
            np.testing.assert_allclose(c.q_ref, d.q_ref, rtol=0, atol=1e-12)


@ARMS
def test_same_dynamics_as_the_reference_file(arms):
    """Cluster mass matrix and bias force (gravity and velocity products) on 10 random states."""
    r, model = reference(arms), built(arms)
    d_ref, d = r.create_data(), model.create_data()
    rng = np.random.default_rng(2024)
    for _ in range(10):
        q = loopdyn.random_configuration(model, rng)
        v = rng.normal(size=model.nv)
        assert rel_err(loopdyn.crba(model, d, q), loopdyn.crba(r, d_ref, q)) <= 1e-10
        C_ref = loopdyn.nonlinear_effects(r, d_ref, q, v)
        assert np.max(np.abs(C_ref)) > 1.0  # gravity alone loads the free base
        assert rel_err(loopdyn.nonlinear_effects(model, d, q, v), C_ref) <= 1e-10


# ----------------------------------------------------------------------------------------------
# without the files
@ARMS
def test_sizes_per_the_spec_table(arms):
    model = built(arms)
    nbodies, nclusters, nv, nvs, nq = SIZES[arms]
    assert model.nbodies == nbodies
    assert len(model.clusters().clusters) == nclusters
    assert (model.nv, model.spanning_nv, model.nq) == (nv, nvs, nq)
    assert model.spanning_nq == nvs + 1  # one quaternion
    kinds = [c.kind for c in model.clusters().clusters]
    assert kinds.count(IMPLICIT) == 4  # two differentials per leg
    assert kinds.count(EXPLICIT) == (10 if arms else 2)  # hip clamps (+ 8 arm joints)
    assert model.mass == pytest.approx(MASS[arms], rel=1e-12)
    assert len(model.velocity_names) == nv


@ARMS
def test_flags_and_transmissions(arms):
    """The independent coordinates: rotors in the differentials; in the hip-clamp transmission the
    clamp (tello_humanoid.urdf) or its rotor (tello_legs.urdf); the arm links."""
    model = built(arms)
    root = "torso" if arms else "ground"
    base = "torso-to-ground" if arms else "root_joint"
    names = model.velocity_names
    assert names[:6] == [f"{base}[{k}]" for k in range(6)]
    for side in ("left", "right"):
        clamp = f"{root}-to-{side}-hip-clamp" + ("" if arms else "-rotor")
        assert clamp in names
        for joint in ("hip-clamp-to-hip-rotor-1", "hip-clamp-to-hip-rotor-2"):
            assert f"{side}-{joint}" in names
        for joint in ("thigh-to-knee-ankle-rotor-1", "thigh-to-knee-ankle-rotor-2"):
            assert f"{side}-{joint}" in names
        for joint in ("hip-clamp-to-gimbal", "gimbal-to-thigh", "thigh-to-shin", "shin-to-foot"):
            assert f"{side}-{joint}" not in names
    ratios = sorted(c.ratio for c in model.constraints if isinstance(c, Coupling))
    assert ratios == ([6.0] * 8 + [9.0] * 2 if arms else [6.0] * 2)


def test_aliases():
    humanoid, legs = built(True), built(False)
    assert tello.tello_humanoid().joint_names == humanoid.joint_names
    free = tello.tello_legs(floating_base=True)
    assert (free.joint_names, free.nq, free.nv) == (legs.joint_names, legs.nq, legs.nv)
    fixed = tello.tello_legs()
    assert fixed.joint_names == ["universe"] + legs.joint_names[2:]
    assert (fixed.nbodies, fixed.nq, fixed.nv) == (20, 18, 10)
    assert fixed.frames[1].name == "ground" and fixed.frames[1].body == 0
    bare = tello.tello_humanoid(transmissions=False)
    assert (bare.nq, bare.nv) == (43, 34)


def test_parameters():
    assert tello.tello(parameters="current").nv == 24
    with pytest.raises(InputError, match="parameters must be one of"):
        tello.tello(parameters="paper")


def test_no_file_is_read(monkeypatch):
    """The built-in model needs no data: with every reference directory gone and load_urdf and file
    reads refused, tello() still builds."""
    monkeypatch.setenv(tello.GRBDA_URDF_DIR_ENV, "/nonexistent")
    monkeypatch.setattr(tello, "_DEFAULT_GRBDA_URDF_DIRS", ())

    def refuse(*args, **kwargs):
        raise AssertionError("a file was read")

    monkeypatch.setattr("loopdyn.io.urdf.load_urdf", refuse)
    monkeypatch.setattr(Path, "read_bytes", refuse)
    monkeypatch.setattr(Path, "read_text", refuse)
    for arms in (True, False):
        assert tello.tello(arms=arms).nv == SIZES[arms][2]
    with pytest.raises(FileNotFoundError):
        tello.grbda_urdf_path("tello_humanoid.urdf")


def test_c_aba_agrees_with_the_projection_baseline():
    """C-ABA of the legs model (massless floating base) equals dense projection forward dynamics."""
    model = built(False)
    data = model.create_data()
    rng = np.random.default_rng(7)
    for _ in range(10):
        q = loopdyn.random_configuration(model, rng)
        v, tau = rng.normal(size=model.nv), rng.normal(size=model.nv)
        expected = projection_forward_dynamics(model, q, v, tau)
        assert rel_err(loopdyn.aba(model, data, q, v, tau), expected) <= 1e-10
