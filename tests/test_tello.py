"""Tello's differentials (:mod:`loopdyn.robots.tello_model`): the constraint formulas of the spec (§3.10),
the clusters they make on GRBDA's tello_humanoid.urdf / tello_legs.urdf, and the model sizes."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
import sympy as sp
from reference_files import grbda_file

from loopdyn.errors import ModelError
from loopdyn.io import load_urdf
from loopdyn.model import state
from loopdyn.model.clusters import EXPLICIT, IMPLICIT
from loopdyn.robots import tello_model as tello


def ref(name: str) -> Path:
    return grbda_file(name)  # fails (never skips) when the file is missing


@pytest.fixture(scope="module")
def humanoid():
    return tello.tello_humanoid(ref("tello_humanoid.urdf"))


def differential_clusters(model):
    return [c for c in model.clusters().clusters if c.kind == IMPLICIT]


def local_names(model, c) -> list[str]:
    return [model.bodies[b - 1].name for b in c.bodies]


# ----------------------------------------------------------------------------------------------
# the formulas
LINK_ANGLES = [(a, b) for a in np.linspace(-0.8, 0.8, 9) for b in np.linspace(-0.8, 0.8, 9)]


@pytest.mark.parametrize(
    "phi, ik",
    [
        (tello.hip_differential_phi, tello.hip_differential_ik),
        (tello.knee_ankle_differential_phi, tello.knee_ankle_differential_ik),
    ],
    ids=["hip", "knee-ankle"],
)
def test_closed_form_ik_solves_phi(phi, ik):
    """The spec's closed-form inverse kinematics (GRBDA's IK_pos) and its φ were transcribed
    independently: φ(N·IK(q_l), q_l) = 0 checks both."""
    solved = 0
    for ql in LINK_ANGLES:
        y = ik(*ql)
        if not np.all(np.isfinite(y)):
            continue
        solved += 1
        r = phi([6 * y[0], 6 * y[1], *ql])
        assert np.max(np.abs(r)) < 1e-15, (ql, y, r)
    assert solved >= 0.8 * len(LINK_ANGLES)  # (the ankle cannot reach every corner of the grid)


def test_zero_link_angles():
    # straight leg: the hip rotors turn together, the knee-ankle rotors (almost) not at all
    y1, y2 = tello.hip_differential_ik(0.0, 0.0)
    assert y1 == pytest.approx(y2, abs=1e-15)
    y1, y2 = tello.knee_ankle_differential_ik(0.0, 0.0)
    assert y1 == pytest.approx(-y2, abs=1e-15) and abs(y1) < 1e-4
    # the knee angle is the mean of the post-gearbox rotor angles
    y1, y2 = tello.knee_ankle_differential_ik(0.4, -0.2)
    assert (y1 + y2) / 2 == pytest.approx(0.4, abs=1e-15)


@pytest.mark.parametrize("phi", [tello.hip_differential_phi, tello.knee_ankle_differential_phi])
def test_symbolic_and_numeric_phi_agree(phi):
    syms = sp.symbols("a b c d", real=True)
    f = sp.lambdify([syms], phi(list(syms)), modules="numpy")
    rng = np.random.default_rng(3)
    for _ in range(20):
        q = rng.uniform(-2, 2, 4)
        np.testing.assert_allclose(np.array(f(q), float), phi(list(q)), rtol=0, atol=1e-15)


def test_rotor_coordinates_are_pre_gearbox():
    ql = (0.3, -0.2)
    y = tello.hip_differential_ik(*ql)
    assert np.max(np.abs(tello.hip_differential_phi([6 * y[0], 6 * y[1], *ql]))) < 1e-15
    assert np.max(np.abs(tello.hip_differential_phi([y[0], y[1], *ql]))) > 1e-4
    assert np.max(np.abs(tello.hip_differential_phi([y[0], y[1], *ql], gear_ratio=1.0))) < 1e-15


# ----------------------------------------------------------------------------------------------
# the models
def test_tello_humanoid_sizes(humanoid):
    """nv = 6 (torso) + per leg 1 (hip clamp) + 2 + 2 (differentials) + per arm 4 = 24; nq counts the
    spanning positions of the four implicit clusters: 7 + 2·(1 + 4 + 4) + 8 = 33 (spec §5)."""
    assert humanoid.nv == 24
    assert humanoid.nq == 33
    assert humanoid.spanning_nv == 42
    assert len(humanoid.clusters().clusters) == 15


def test_tello_humanoid_differential_clusters(humanoid):
    clusters = differential_clusters(humanoid)
    assert len(clusters) == 4
    seen = set()
    for c in clusters:
        names = local_names(humanoid, c)
        (con,) = c.constraints
        seen.add(con.name)
        side, kind = con.name.split("-", 1)
        rotors = [f"{side}-hip-rotor-1", f"{side}-hip-rotor-2"]
        links = [f"{side}-gimbal", f"{side}-thigh"]
        if kind == "knee-ankle-differential":
            rotors = [f"{side}-knee-ankle-rotor-1", f"{side}-knee-ankle-rotor-2"]
            links = [f"{side}-shin", f"{side}-foot"]
        assert sorted(names) == sorted(rotors + links)
        assert (c.n, c.m, c.nq, c.nv) == (4, 2, 4, 2)
        assert len(c.rows) == 2
        assert [names[k] for k in c.independent] == rotors  # the file's flags, in spanning order
        assert not c.auto_independent
        # the output body: hip clamp for the hip, thigh for the knee-ankle differential
        parent = humanoid.clusters().clusters[c.parent]
        expected = f"{side}-hip-clamp" if kind == "hip-differential" else f"{side}-thigh"
        assert expected in local_names(humanoid, parent)
    assert seen == {
        f"{s}-{k}" for s in ("left", "right") for k in ("hip-differential", "knee-ankle-differential")
    }
    velocity = humanoid.velocity_names
    for side in ("left", "right"):
        assert f"{side}-hip-clamp-to-hip-rotor-1" in velocity
        assert f"{side}-thigh-to-knee-ankle-rotor-2" in velocity
        assert f"{side}-hip-clamp-to-gimbal" not in velocity
        assert f"{side}-shin-to-foot" not in velocity


def test_tello_humanoid_transmissions(humanoid):
    explicit = [c for c in humanoid.clusters().clusters if c.kind == EXPLICIT]
    assert len(explicit) == 10  # 2 hip clamps + 8 arm joints
    ratios = sorted(c.constraints[0].ratio for c in explicit)
    assert ratios == [6.0] * 8 + [9.0] * 2
    summary = humanoid.clusters().summary(humanoid)
    assert (
        "'left-knee-ankle-rotor-1', 'left-knee-ankle-rotor-2', 'left-shin', 'left-foot'] — "
        "implicit, 4 spanning / 2" in summary
    )


def test_differential_phi_in_the_model_is_the_physical_one(humanoid):
    """Configurations built from the closed-form IK satisfy the clusters' φ: the joints are passed to
    φ in the right order and the rotors are pre-gearbox."""
    for c in differential_clusters(humanoid):
        names = local_names(humanoid, c)
        f = sp.lambdify([c.symbols], c.phi_exprs, modules="numpy")
        side = names[0].split("-")[0]
        hip = c.constraints[0].name.endswith("hip-differential")
        ik = tello.hip_differential_ik if hip else tello.knee_ankle_differential_ik
        rot = ["hip-rotor-1", "hip-rotor-2"] if hip else ["knee-ankle-rotor-1", "knee-ankle-rotor-2"]
        lnk = ["gimbal", "thigh"] if hip else ["shin", "foot"]
        for ql in [(0.0, 0.0), (0.3, -0.4), (-0.5, 0.2)]:
            y = ik(*ql)
            value = {f"{side}-{rot[0]}": 6 * y[0], f"{side}-{rot[1]}": 6 * y[1]}
            value.update({f"{side}-{lnk[0]}": ql[0], f"{side}-{lnk[1]}": ql[1]})
            q = np.array([value[n] for n in names])
            assert np.max(np.abs(np.array(f(q), float))) < 1e-14
            # and the dependent block K_d is invertible there (not a singular branch point)
            K = np.array(sp.lambdify([c.symbols], sp.Matrix(c.phi_exprs).jacobian(c.symbols))(q), float)
            assert abs(np.linalg.det(K[:, c.dependent])) > 1e-6


def test_without_transmissions():
    model = tello.tello_humanoid(ref("tello_humanoid.urdf"), transmissions=False)
    assert model.nv == 42 - 8  # each differential removes two velocities
    assert model.nq == 43


@pytest.mark.parametrize("floating_base, nv, nq", [(False, 10, 18), (True, 16, 25)])
def test_tello_legs(floating_base, nv, nq):
    """tello_legs.urdf has a fixed root ``ground``; with a free-flying (massless) base it has the
    spec's 16 DoF and 25 positions."""
    model = tello.tello_legs(ref("tello_legs.urdf"), floating_base=floating_base)
    assert model.nv == nv
    assert model.nq == nq
    clusters = differential_clusters(model)
    assert len(clusters) == 4
    for c in clusters:
        names = local_names(model, c)
        assert [names[k] for k in c.independent] == [n for n in names if "rotor" in n]
    # tello_legs.urdf flags the hip-clamp rotor independent (tello_humanoid.urdf: the clamp)
    (clamp,) = [c for c in model.clusters().clusters if "left-hip-clamp" in local_names(model, c)]
    assert local_names(model, clamp)[clamp.independent[0]] == "left-hip-clamp-rotor"


def test_add_differentials_to_a_loaded_file():
    model = load_urdf(ref("tello_legs.urdf"))
    assert not model.has_constraints and model.nv == 20
    tello.add_tello_differentials(model)
    assert model.nv == 20 - 8
    assert len(differential_clusters(model)) == 4
    with pytest.raises(ModelError, match="duplicate constraint name 'left-hip-differential'"):
        tello.add_tello_differentials(model, sides=("left",))


def test_not_a_tello_model():
    model = load_urdf(ref("mit_humanoid_leg.urdf"))
    with pytest.raises(ModelError, match="no body 'left-hip-rotor-1'"):
        tello.add_tello_differentials(model)


def test_missing_reference_directory(monkeypatch, tmp_path):
    """grbda_urdf_path looks in $LOOPDYN_GRBDA_URDF_DIR; tello_humanoid() needs no file (the model is
    written in code, see test_tello_builtin.py), tello_humanoid(path) loads the file given."""
    monkeypatch.setenv(tello.GRBDA_URDF_DIR_ENV, str(tmp_path))
    monkeypatch.setattr(tello, "_DEFAULT_GRBDA_URDF_DIRS", ())
    with pytest.raises(FileNotFoundError, match="LOOPDYN_GRBDA_URDF_DIR"):
        tello.grbda_urdf_path("tello_humanoid.urdf")
    assert tello.tello_humanoid().nv == 24
    (tmp_path / "tello_humanoid.urdf").write_bytes(ref("tello_humanoid.urdf").read_bytes())
    assert tello.grbda_urdf_path("tello_humanoid.urdf") == tmp_path / "tello_humanoid.urdf"
    assert tello.tello_humanoid(tello.grbda_urdf_path("tello_humanoid.urdf")).nv == 24


# ----------------------------------------------------------------------------------------------
# states (loopdyn.model.state)
def test_random_configurations_satisfy_the_constraints(humanoid):
    rng = np.random.default_rng(11)
    for _ in range(10):
        q = state.random_configuration(humanoid, rng)
        assert q.shape == (33,)
        assert np.max(np.abs(state.constraint_residual(humanoid, q))) <= 1e-12


def test_random_configurations_are_on_the_physical_branch(humanoid):
    """The reference configuration is the well-conditioned solution nearest zero, so random
    configurations stay on the assembled branch (the foot does not wrap around)."""
    rng = np.random.default_rng(5)
    for _ in range(5):
        q = state.random_configuration(humanoid, rng)
        for c in differential_clusters(humanoid):
            names = local_names(humanoid, c)
            value = dict(zip(names, q[c.iq : c.iq + c.n], strict=True))
            side = names[0].split("-")[0]
            if c.constraints[0].name.endswith("knee-ankle-differential"):
                ql = (value[f"{side}-shin"], value[f"{side}-foot"])
                assert all(abs(x) < math.pi for x in ql), ql
