"""The built-in humanoids (loopdyn.robots.humanoids), the paper-era parameter sets of the built-in
robots, the robot registry (loopdyn.robots.list / build / approximate / unconstrained) and
``loopdyn info`` for built-in names."""

from __future__ import annotations

import math
import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from reference_files import grbda_file

import loopdyn
from loopdyn import robots
from loopdyn.baselines import ApproximateModel
from loopdyn.cli import main
from loopdyn.errors import InertiaWarning, InputError, UnsupportedFeatureError

# robot function → reference file
FILES = {"mit_humanoid": "mit_humanoid", "jvrc1": "jvrc1_humanoid"}


def reference_path(name: str) -> Path:
    return grbda_file(name)  # fails (never skips) when the file is missing


def edited_reference(tmp_path: Path, name: str, edit) -> loopdyn.Model:
    """load_urdf of the reference file after ``edit(root element)`` (a test-only copy in tmp_path)."""
    tree = ET.parse(reference_path(name))
    edit(tree.getroot())
    out = tmp_path / f"{name}_edited.urdf"
    tree.write(out)
    return loopdyn.load_urdf(out, inertia="accept")


def rel_err(a, b) -> float:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.max(np.abs(a - b))) / max(1.0, float(np.max(np.abs(b))))


def assert_same_model(model: loopdyn.Model, ref: loopdyn.Model) -> None:
    """Same names, order, joints, placements, inertias, constraints and clusters, to 1e-15."""
    assert (model.nq, model.nv) == (ref.nq, ref.nv)
    assert (model.spanning_nq, model.spanning_nv) == (ref.spanning_nq, ref.spanning_nv)
    assert model.body_names == ref.body_names
    assert model.joint_names == ref.joint_names
    assert model.velocity_names == ref.velocity_names
    assert model.frame_names == ref.frame_names
    assert [(f.body, f.kind) for f in model.frames] == [(f.body, f.kind) for f in ref.frames]
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
    assert [(c.name, c.predecessor, c.successor, c.ratio) for c in model.constraints] == [
        (c.name, c.predecessor, c.successor, c.ratio) for c in ref.constraints
    ]
    assert [c.bodies for c in model.clusters().clusters] == [c.bodies for c in ref.clusters().clusters]
    assert model.clusters().position_names == ref.clusters().position_names


def assert_same_dynamics(model, ref, n_states: int = 10, seed: int = 2024, tol: float = 1e-12) -> None:
    """Cluster mass matrix and bias of ``model`` and ``ref`` at the same random states, with the
    coordinates of ``ref`` matched to those of ``model`` by name (the models may order them
    differently)."""
    pos, ref_pos = model.clusters().position_names, ref.clusters().position_names
    vel, ref_vel = model.velocity_names, ref.velocity_names
    assert sorted(pos) == sorted(ref_pos) and sorted(vel) == sorted(ref_vel)
    iq = [pos.index(name) for name in ref_pos]  # q_ref = q[iq]
    iv = [vel.index(name) for name in ref_vel]
    d, d_ref = model.create_data(), ref.create_data()
    rng = np.random.default_rng(seed)
    for _ in range(n_states):
        q = loopdyn.random_configuration(model, rng)
        v = rng.normal(size=model.nv)
        H_ref = loopdyn.crba(ref, d_ref, q[iq])
        H = loopdyn.crba(model, d, q)
        assert rel_err(H[np.ix_(iv, iv)], H_ref) <= tol
        C_ref = loopdyn.nonlinear_effects(ref, d_ref, q[iq], v[iv])
        assert rel_err(loopdyn.nonlinear_effects(model, d, q, v)[iv], C_ref) <= tol


def bodies_by_name(model):
    return {b.name: b for b in model.bodies}


def differences(current: loopdyn.Model, paper: loopdyn.Model) -> dict:
    """{(body, field): (current value, paper value)} over the bodies both models have."""
    cur, pap = bodies_by_name(current), bodies_by_name(paper)
    out = {}
    for name in cur.keys() & pap.keys():
        b, p = cur[name], pap[name]
        fields = {
            "joint_name": (b.joint_name, p.joint_name),
            "parent": (current.body_names[b.parent], paper.body_names[p.parent]),
            "joint": (b.joint, p.joint),
            "independent": (b.independent, p.independent),
            "rotation": (b.rotation, p.rotation),
            "translation": (b.translation, p.translation),
            "mass": (b.inertia.mass, p.inertia.mass),
            "com": (b.inertia.com, p.inertia.com),
            "inertia": (b.inertia.inertia, p.inertia.inertia),
        }
        for field, (x, y) in fields.items():
            same = np.array_equal(x, y) if isinstance(x, np.ndarray) else x == y
            if not same:
                out[(name, field)] = (x, y)
    return out


def rz(angle: float) -> np.ndarray:
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


# ----------------------------------------------------------------------------------------------
# the new humanoids against their reference files
@pytest.mark.parametrize("name", list(FILES))
def test_humanoid_same_as_reference_file(name):
    ref = loopdyn.load_urdf(reference_path(FILES[name]), inertia="accept")
    assert_same_model(getattr(robots, name)(parameters="current"), ref)


@pytest.mark.parametrize("name", list(FILES))
def test_humanoid_same_dynamics_as_reference_file(name):
    ref = loopdyn.load_urdf(reference_path(FILES[name]), inertia="accept")
    model = getattr(robots, name)(parameters="current")
    assert model.velocity_names == ref.velocity_names
    assert_same_dynamics(model, ref)


def test_humanoid_sizes():
    # spec §5 table: MIT Humanoid 37 bodies, 17 clusters, nv 24, n_span 42, nq 25
    m = robots.mit_humanoid()
    assert (m.nbodies, len(m.clusters().clusters), m.nv, m.spanning_nv, m.nq) == (37, 17, 24, 42, 25)
    assert len(m.constraints) == 18
    small, large = 14 * 0.05, 4 * 0.1
    links = 2 * (0.84563 + 1.20868 + 2.64093 + 0.35435 + 0.280951) + 2 * (
        0.788506 + 0.80125 + 0.905588 + 0.34839
    )
    assert m.mass == pytest.approx(8.52 + links + small + large, rel=1e-14, abs=0)
    kinds = sorted(len(c.bodies) for c in m.clusters().clusters)
    assert kinds == [1] + [2] * 14 + [4] * 2  # free torso, 14 geared, 2 knee-ankle belts
    # JVRC-1 as its file: 58 bodies (25 geared joints), 33 clusters, nv 38
    j = robots.jvrc1(parameters="current")
    assert (j.nbodies, len(j.clusters().clusters), j.nv, j.nq) == (58, 33, 38, 39)
    assert len(j.constraints) == 25 and j.mass == pytest.approx(61.75, rel=1e-14, abs=0)
    # the paper's JVRC-1, every joint geared: spec §5 table 65 bodies, 33 clusters, nv 38, n_span 70, nq 39
    jp = robots.jvrc1(parameters="paper")
    assert (jp.nbodies, len(jp.clusters().clusters), jp.nv, jp.spanning_nv, jp.nq) == (65, 33, 38, 70, 39)
    assert len(jp.constraints) == 32 and jp.mass == pytest.approx(61.75 + 7 * 0.07, rel=1e-14, abs=0)
    assert sorted(len(c.bodies) for c in jp.clusters().clusters) == [1] + [2] * 32


@pytest.mark.parametrize("name", ["mit_humanoid", "jvrc1", "mini_cheetah", "mit_humanoid_leg"])
@pytest.mark.parametrize("parameters", ["current", "paper"])
def test_forward_dynamics_inverts_inverse_dynamics(name, parameters):
    model = getattr(robots, name)(parameters=parameters)
    d = model.create_data()
    rng = np.random.default_rng(11)
    for _ in range(3):
        q = loopdyn.random_configuration(model, rng)
        v, a = rng.normal(size=model.nv), rng.normal(size=model.nv)
        tau = loopdyn.rnea(model, d, q, v, a)
        assert rel_err(loopdyn.aba(model, d, q, v, tau), a) <= 1e-10
        H = loopdyn.crba(model, d, q)
        assert np.linalg.eigvalsh(H)[0] > 0
        assert rel_err(tau, H @ a + loopdyn.nonlinear_effects(model, d, q, v)) <= 1e-10


def test_bad_parameter_set():
    for f in (robots.mit_humanoid, robots.jvrc1, robots.mini_cheetah, robots.mit_humanoid_leg):
        with pytest.raises(InputError, match="parameters must be one of"):
            f(parameters="head")


# ----------------------------------------------------------------------------------------------
# paper-era parameter sets: exactly the documented differences
def test_mini_cheetah_paper_differences():
    cur, pap = robots.mini_cheetah(), robots.mini_cheetah(parameters="paper")
    assert pap.name == "mini_cheetah_paper"
    assert sorted(cur.body_names) == sorted(pap.body_names)
    diff = differences(cur, pap)
    legs = ("FR", "FL", "HR", "HL")
    expected = (
        {(f"{leg}_{j}_rotor", "mass") for leg in legs for j in ("abad", "hip", "knee")}
        | {(f"{leg}_{j}", "rotation") for leg in legs for j in ("hip_link", "hip_rotor")}
        | {(f"{leg}_abad_link", "translation") for leg in legs}
    )
    assert set(diff) == expected
    for leg in legs:
        sx = 1.0 if leg[0] == "F" else -1.0
        sy = -1.0 if leg[1] == "R" else 1.0
        for j in ("abad", "hip", "knee"):
            assert diff[(f"{leg}_{j}_rotor", "mass")] == (0.055, 0.0)
        for j in ("hip_link", "hip_rotor"):
            R_cur, R_pap = diff[(f"{leg}_{j}", "rotation")]
            np.testing.assert_allclose(R_cur, rz(math.pi), rtol=0, atol=1e-15)
            np.testing.assert_array_equal(R_pap, np.eye(3))
        p_cur, p_pap = diff[(f"{leg}_abad_link", "translation")]
        np.testing.assert_array_equal(p_cur, [sx * 0.19, sy * 0.049, 0.0])
        np.testing.assert_array_equal(p_pap, [sx * 0.19, sy * 0.05, 0.0])
        # the abad rotor keeps y = 0.049 (the spec documents the change for the abad location only)
        rotor = bodies_by_name(pap)[f"{leg}_abad_rotor"]
        np.testing.assert_array_equal(rotor.translation, [sx * 0.125, sy * 0.049, 0.0])
    # registration order of the paper: legs FR, FL, HR, HL; [link, rotor] per cluster
    assert pap.body_names == ["universe", "Floating Base"] + [
        f"{leg}_{j}_{kind}" for leg in legs for j in ("abad", "hip", "knee") for kind in ("link", "rotor")
    ]
    assert pap.velocity_names[6:] == [
        joint.format(leg)
        for leg in legs
        for joint in ("torso_to_{}_abad_j", "{}_abad_to_hip_j", "{}_hip_to_knee_j")
    ]
    assert [(c.name, c.predecessor, c.successor, c.ratio) for c in pap.constraints] == [
        (c.name, c.predecessor, c.successor, c.ratio) for c in cur.constraints
    ]
    assert pap.mass == pytest.approx(3.3 + 4 * (0.54 + 0.634 + 0.064), rel=1e-14, abs=0)


def test_mini_cheetah_paper_is_the_file_with_the_paper_values(tmp_path):
    """Load the reference file edited with the paper's values (massless rotors, abad y = ±0.05, no
    rz(π) at the hips): same model as parameters="paper", up to the order of the bodies."""

    def edit(root):
        for link in root.iter("link"):
            if link.get("name").endswith("_rotor"):
                link.find("inertial/mass").set("value", "0")
        for joint in root.iter("joint"):
            origin = joint.find("origin")
            if joint.get("name").endswith("_abad_j"):
                x, y, z = origin.get("xyz").split()
                origin.set("xyz", f"{x} {math.copysign(0.05, float(y))} {z}")
            if origin is not None and origin.get("rpy") == "0 0 3.141592653589793":
                origin.set("rpy", "0 0 0")

    ref = edited_reference(tmp_path, "mini_cheetah", edit)
    pap = robots.mini_cheetah(parameters="paper")
    assert differences(ref, pap) == {}
    assert_same_dynamics(pap, ref)


def test_mit_humanoid_paper_differences():
    cur, pap = robots.mit_humanoid(), robots.mit_humanoid(parameters="paper")
    assert pap.name == "mit_humanoid_paper"
    assert sorted(cur.body_names) == sorted(pap.body_names)
    diff = differences(cur, pap)
    rotors = {b.name for b in cur.bodies if b.name.endswith("_rotor")}
    assert len(rotors) == 18
    assert set(diff) == {(r, "mass") for r in rotors}
    large = {f"{s}_{j}_rotor" for s in ("left", "right") for j in ("hip_ry", "knee")}
    for r in rotors:
        assert diff[(r, "mass")] == ((0.1 if r in large else 0.05), 0.0)
    leg = ["hip_rz_link", "hip_rz_rotor", "hip_rx_link", "hip_rx_rotor", "hip_ry_link", "hip_ry_rotor"]
    leg += ["knee_link", "knee_rotor", "ankle_rotor", "ankle_link"]
    arm = ["shoulder_ry_link", "shoulder_ry_rotor", "shoulder_rx_link", "shoulder_rx_rotor"]
    arm += ["shoulder_rz_link", "shoulder_rz_rotor", "elbow_link", "elbow_rotor"]
    sides = ("right", "left")
    assert pap.body_names == ["universe", "Floating Base"] + [
        f"{side}_{b}" for limb in (leg, arm) for side in sides for b in limb
    ]
    knee_ankle = [c for c in pap.clusters().clusters if len(c.bodies) == 4]
    assert [[pap.body_names[b] for b in c.bodies] for c in knee_ankle] == [
        [f"{side}_{b}" for b in ("knee_link", "knee_rotor", "ankle_rotor", "ankle_link")] for side in sides
    ]
    assert pap.velocity_names[6:11] == [
        "base_to_right_hipz_link",
        "right_hipz_to_hipx_link",
        "right_hipx_to_hipy_link",
        "right_hipy_to_knee_link",
        "right_knee_to_ankle",
    ]
    assert [(c.name, c.predecessor, c.successor, c.ratio) for c in pap.constraints] == [
        (c.name, c.predecessor, c.successor, c.ratio) for c in cur.constraints
    ]
    assert pap.mass == pytest.approx(cur.mass - 14 * 0.05 - 4 * 0.1, rel=1e-14, abs=0)


def test_mit_humanoid_paper_is_the_file_with_massless_rotors(tmp_path):
    def edit(root):
        for link in root.iter("link"):
            if link.get("name").endswith("_rotor"):
                link.find("inertial/mass").set("value", "0")

    ref = edited_reference(tmp_path, "mit_humanoid", edit)
    pap = robots.mit_humanoid(parameters="paper")
    assert differences(ref, pap) == {}
    assert_same_dynamics(pap, ref)


def test_mit_humanoid_leg_paper_only_reorders():
    cur, pap = robots.mit_humanoid_leg(), robots.mit_humanoid_leg(parameters="paper")
    assert differences(cur, pap) == {}
    assert [b.inertia.mass for b in pap.bodies if b.name.endswith("_rotor")] == [0.0] * 5
    assert pap.body_names[1:] == [
        "hip_rz_link",
        "hip_rz_rotor",
        "hip_rx_link",
        "hip_rx_rotor",
        "hip_ry_link",
        "hip_ry_rotor",
        "knee_link",
        "knee_rotor",
        "ankle_rotor",
        "ankle_link",
    ]
    assert pap.velocity_names == cur.velocity_names  # y = [hip_rz, hip_rx, hip_ry, knee, ankle]
    assert_same_dynamics(pap, cur)


def test_jvrc1_paper_gears_every_joint():
    cur, pap = robots.jvrc1(parameters="current"), robots.jvrc1()  # the default is the paper's
    assert differences(cur, pap) == {}
    added = sorted(set(pap.body_names) - set(cur.body_names))
    ungeared = ["neck-pitch", "neck-roll", "neck-yaw"]
    ungeared += [f"{s}-wrist-{j}" for s in ("left", "right") for j in ("roll", "yaw")]
    assert added == sorted(f"{b}-rotor" for b in ungeared)
    assert not set(cur.body_names) - set(pap.body_names)
    body = bodies_by_name(pap)
    for link in ungeared:
        rotor, b = body[f"{link}-rotor"], body[link]
        assert rotor.joint_name == f"{b.joint_name}-rotor"
        assert (rotor.parent, rotor.joint, rotor.independent) == (b.parent, b.joint, False)
        np.testing.assert_array_equal(rotor.rotation, np.eye(3))
        np.testing.assert_array_equal(rotor.translation, b.translation)
        assert rotor.inertia.mass == 0.07
        np.testing.assert_array_equal(rotor.inertia.com, np.zeros(3))
        np.testing.assert_array_equal(rotor.inertia.inertia, np.diag([2e-5, 2e-5, 5e-5]))
    couplings = {c.name: (c.predecessor, c.successor, c.ratio) for c in pap.constraints}
    assert len(couplings) == 32
    for link in ungeared:
        assert couplings[f"{link}-transmission"] == (link, f"{link}-rotor", 6.0)
    assert all(ratio == 6.0 for _, _, ratio in couplings.values())


def test_jvrc1_paper_is_the_file_with_its_commented_rotors(tmp_path):
    """The reference file with the 7 commented-out rotors added as its other rotors are: the same
    model as parameters="paper", in the same order."""

    def edit(root):
        joints = {j.find("child").get("link"): j for j in root.iter("joint")}
        links = {link.get("name") for link in root.iter("link")}
        rotor_inertial = next(link for link in root.iter("link") if link.get("name") == "waist-yaw-rotor")
        for link, joint in list(joints.items()):
            if link.endswith("-rotor") or link == "pelvis" or f"{link}-rotor" in links:
                continue
            rotor_joint = ET.fromstring(ET.tostring(joint))
            rotor_joint.set("name", joint.get("name") + "-rotor")
            rotor_joint.set("independent", "false")
            rotor_joint.find("child").set("link", f"{link}-rotor")
            rotor = ET.fromstring(ET.tostring(rotor_inertial))
            rotor.set("name", f"{link}-rotor")
            coupling = ET.fromstring(
                f'<coupling name="{link}-transmission"><predecessor link="{link}"/>'
                f'<successor link="{link}-rotor"/><ratio value="6.0"/></coupling>'
            )
            root.extend([rotor_joint, rotor, coupling])

    ref = edited_reference(tmp_path, "jvrc1_humanoid", edit)
    pap = robots.jvrc1(parameters="paper")
    assert ref.nbodies == 65
    # same names and numbers; the constraint order of the edited file differs (added at its end)
    assert pap.body_names == ref.body_names and pap.joint_names == ref.joint_names
    assert differences(ref, pap) == {}
    assert sorted((c.name, c.predecessor, c.successor, c.ratio) for c in pap.constraints) == sorted(
        (c.name, c.predecessor, c.successor, c.ratio) for c in ref.constraints
    )
    assert_same_dynamics(pap, ref, n_states=5)


# ----------------------------------------------------------------------------------------------
# registry
# spec §5 table: (bodies, clusters, nv, nq); JVRC-1's default is the paper's all-geared model
TABLE = {
    "mini_cheetah": (25, 13, 18, 19),
    "mit_humanoid": (37, 17, 24, 25),
    "mit_humanoid_leg": (10, 4, 5, 5),
    "tello": (37, 15, 24, 33),
    "jvrc1": (65, 33, 38, 39),
    "gt_chain": (24, 12, 12, 12),
    "pbt_chain": (24, 6, 12, 12),
    "four_bar": (3, 1, 1, 3),
    "planar_leg_linkage": (4, 2, 2, 4),
    "five_bar": (4, 1, 2, 4),
    "rssr_linkage": (5, 1, 2, 5),
    "delta_robot": (11, 1, 3, 11),
    "double_pendulum": (2, 2, 2, 2),
    "aerial_manipulator": (7, 7, 12, 13),  # the higher-order paper's robot: N = 7, 12 DoF (spec §4)
}


def test_exports():
    for name in TABLE:
        assert callable(getattr(robots, name)), name
        assert name in robots.__all__
    for name in ("list", "build", "approximate", "unconstrained", "list_robots"):
        assert name in robots.__all__
    # the constructor is loopdyn.robots.tello; the module with its helpers is tello_model
    assert robots.tello is robots.tello_model.tello
    assert list(robots.builtin.list_robots()) == [
        "double_pendulum",
        "four_bar",
        "mit_humanoid_leg",
        "mini_cheetah",
    ]


def test_list():
    entries = robots.list()
    assert [e.name for e in entries] == list(TABLE) == robots.names()
    for e in entries:
        assert (e.bodies, e.clusters, e.nv, e.nq) == TABLE[e.name], e.name
        assert isinstance(e.description, str) and e.description and "\n" not in e.description
        assert e.mass == robots.build(e.name).mass
        assert e.as_dict()["bodies"] == e.bodies
    assert robots.list()[0] is entries[0]  # cached
    masses = {e.name: e.mass for e in entries}
    assert masses["mini_cheetah"] == pytest.approx(3.3 + 4 * (0.54 + 0.634 + 0.064 + 3 * 0.055), rel=1e-14)
    assert masses["double_pendulum"] == 3.0


def test_build_and_unknown_names():
    m = robots.build("mini_cheetah", parameters="paper")
    assert m.name == "mini_cheetah_paper"
    assert robots.build("gt_chain", n=4).nv == 4
    assert robots.build("tello", arms=False).nv == 16
    with pytest.raises(KeyError, match="known robots: mini_cheetah, mit_humanoid"):
        robots.build("cheetah")
    with pytest.raises(KeyError, match="planar_leg_linkage"):
        robots.approximate("nope")
    with pytest.raises(InputError, match="variant"):
        robots.build("four_bar", variant="exactly")
    with pytest.raises(InputError, match="only apply to a robot name"):
        robots.approximate(robots.four_bar(), parameters="paper")


TWINS = ["mini_cheetah", "mit_humanoid", "mit_humanoid_leg", "tello", "jvrc1", "gt_chain", "pbt_chain"]


@pytest.mark.parametrize("name", TWINS)
def test_twins_run_rnea(name):
    """The twins' trees run RNEA with the values of Pinocchio's RNEA on the same trees (the unconstrained
    twin without armature, the approximate one with its reflected inertia as Pinocchio's armature)."""
    import pinocchio as pin
    from test_spatial_operators_loops import to_pinocchio

    model = robots.build(name)
    approx = robots.build(name, "approximate")
    free = robots.build(name, variant="unconstrained")
    assert isinstance(approx, ApproximateModel) and isinstance(free, ApproximateModel)
    assert (approx.mode, free.mode) == ("diagonal", "none")
    assert approx.nv == free.nv == model.nv
    rotors = [b for b in model.bodies if b.name in set(approx.rotors)]
    assert rotors and approx.tree.nbodies == free.tree.nbodies == model.nbodies - len(rotors)
    assert approx.tree.mass == pytest.approx(model.mass - sum(b.inertia.mass for b in rotors), rel=1e-14)
    assert np.all(free.tree.armature == 0)
    assert np.all(approx.tree.armature >= 0) and np.any(approx.tree.armature > 0)
    # the oracle: Pinocchio twins of the two trees (same bodies, joints, placements, inertias)
    assert approx.tree.body_names == free.tree.body_names
    pm, qmap, vmap, _ = to_pinocchio(free.tree)
    pm.gravity = pin.Motion(np.r_[free.tree.gravity, np.zeros(3)])
    assert np.all(pm.armature == 0.0)
    pm_a = pin.Model(pm)
    pm_a.armature = approx.tree.armature[vmap]
    pd, pd_a = pm.createData(), pm_a.createData()

    def pin_rnea(pmodel, pdata, q, v, a):
        out = np.empty(model.nv)
        out[vmap] = pin.rnea(pmodel, pdata, q[qmap], v[vmap], a[vmap])
        return out

    rng = np.random.default_rng(5)
    d_a, d_f = approx.tree.create_data(), free.tree.create_data()
    for _ in range(3):
        q = loopdyn.random_configuration(model, rng)
        v, a = rng.normal(size=model.nv), rng.normal(size=model.nv)
        qa, va, aa = approx.state(q, v, a)
        qf, vf, af = free.state(q, v, a)
        tau_a = loopdyn.rnea(approx.tree, d_a, qa, va, aa)
        tau_f = loopdyn.rnea(free.tree, d_f, qf, vf, af)
        assert rel_err(tau_f, pin_rnea(pm, pd, qf, vf, af)) <= 1e-12
        assert rel_err(tau_a, pin_rnea(pm_a, pd_a, qa, va, aa)) <= 1e-12
        # the approximate model adds exactly its diagonal reflected inertia H̃ ÿ
        assert rel_err(tau_a, tau_f + approx.tree.armature * aa) <= 1e-12
        assert rel_err(tau_a, tau_f) > 1e-6  # negative control: the reflected inertia matters here
    # the helpers give the same twins
    np.testing.assert_array_equal(robots.approximate(name).tree.armature, approx.tree.armature)
    np.testing.assert_array_equal(robots.approximate(model).tree.armature, approx.tree.armature)
    assert robots.unconstrained(model).mode == "none"


def armature(approx) -> dict:
    return dict(zip(approx.tree.velocity_names, approx.tree.armature, strict=True))


def test_twin_reflected_inertia_numbers():
    arm = armature(robots.approximate("mini_cheetah"))
    assert arm["torso_to_FL_abad_j"] == pytest.approx(6.0**2 * 6.3e-05, rel=1e-14)  # N² I_rot
    assert arm["FL_hip_to_knee_j"] == pytest.approx(9.33**2 * 6.3e-05, rel=1e-14)
    assert arm["base_to_floating_base[0]"] == 0.0
    arm = armature(robots.approximate("mit_humanoid"))
    assert arm["right_shoulderz_elbow_link"] == pytest.approx(9.0**2 * 1.6841e-4, rel=1e-14)
    # a rotor the paper's JVRC-1 adds
    paper = armature(robots.approximate("jvrc1", parameters="paper"))
    assert paper["waist-roll-to-neck-yaw"] == pytest.approx(6.0**2 * 5e-05, rel=1e-14)
    assert armature(robots.approximate("jvrc1", parameters="current"))["waist-roll-to-neck-yaw"] == 0.0
    assert armature(robots.approximate("jvrc1"))["waist-roll-to-neck-yaw"] > 0.0  # the default gears it


@pytest.mark.parametrize(
    "name", ["four_bar", "planar_leg_linkage", "five_bar", "rssr_linkage", "delta_robot"]
)
def test_linkages_have_no_twins(name):
    with pytest.raises(UnsupportedFeatureError):
        robots.build(name, "approximate")


# ----------------------------------------------------------------------------------------------
# loopdyn info
def test_info_cli_builtin(capsys):
    assert main(["info", "mit_humanoid"]) == 0
    out = capsys.readouterr().out
    assert "<loopdyn.Model 'mit_humanoid': 37 bodies, nq=25, nv=24>" in out
    assert "bodies 37, clusters 17, nq 25, nv 24, total mass 25.9686 kg" in out
    assert "right_knee_transmission" in out

    assert main(["info", "mit_humanoid", "--parameters", "paper", "--variant", "approximate"]) == 0
    out = capsys.readouterr().out
    assert "ApproximateModel of 'mit_humanoid_paper' (diagonal)" in out
    assert "bodies 19, clusters 19, nq 25, nv 24, total mass 24.8686 kg" in out

    assert main(["info", "jvrc1", "--parameters", "paper"]) == 0
    assert "bodies 65, clusters 33, nq 39, nv 38, total mass 62.24 kg" in capsys.readouterr().out

    assert main(["info", "double_pendulum", "--variant", "unconstrained"]) == 0
    assert "bodies 2, clusters 2, nq 2, nv 2, total mass 3 kg" in capsys.readouterr().out


@pytest.mark.parametrize("name", list(TABLE))
def test_info_cli_every_builtin_name(name, capsys):
    assert main(["info", name]) == 0
    bodies, clusters, nv, nq = TABLE[name]
    assert f"bodies {bodies}, clusters {clusters}, nq {nq}, nv {nv}, total mass" in capsys.readouterr().out


def test_info_cli_errors(capsys, tmp_path):
    assert main(["info", "gt_chain", "--parameters", "paper"]) == 2
    assert "no --parameters choice" in capsys.readouterr().err
    assert main(["info", "four_bar", "--variant", "approximate"]) == 2
    assert "loopdyn:" in capsys.readouterr().err
    assert main(["info", str(tmp_path / "missing.urdf")]) == 2  # not a built-in name: the URDF path
    assert main(["info", str(tmp_path / "missing.urdf"), "--parameters", "paper"]) == 2
    assert "built-in robots only" in capsys.readouterr().err


def test_info_cli_file_options(capsys):
    """--inertia and --mimic reach the loaders: hyq's base link loads with an InertiaWarning by
    default, is refused with --inertia physical and loads silently with --inertia accept; panda's
    finger mimic is refused by default and coupled with --mimic coupling."""
    assert {"hyq", "panda"} <= set(robots.example_robots())  # example-robot-data is a test dependency
    with pytest.warns(InertiaWarning) as record:
        assert main(["info", "hyq"]) == 0
    assert "hyq_no_sensors.urdf:81: link 'base_link'" in str(record[0].message)
    assert [str(w.message).split("link '")[1].split("'")[0] for w in record] == [
        "base_link", "lf_foot", "rf_foot", "lh_foot", "rh_foot"
    ]
    assert "nv 18" in capsys.readouterr().out
    assert main(["info", "hyq", "--inertia", "physical"]) == 2
    assert "'base_link'" in capsys.readouterr().err
    with warnings.catch_warnings(record=True) as caught:
        # recorded, not raised: an error raised inside Numba's compiler (a cache warning, when
        # another process writes the same entry) would stay memoised as a typing failure
        warnings.simplefilter("always")
        assert main(["info", "hyq", "--inertia", "accept"]) == 0
    assert not [w for w in caught if issubclass(w.category, InertiaWarning)]
    assert "nv 18" in capsys.readouterr().out
    assert main(["info", "panda"]) == 2
    assert "mimic='coupling'" in capsys.readouterr().err
    assert main(["info", "panda", "--mimic", "coupling"]) == 0
    assert "nq 8, nv 8" in capsys.readouterr().out


def test_uniform_gt_chain_is_the_reference_rotor_chain():
    """gt_chain(3) (uniform) is GRBDA's revolute_rotor_chain.urdf: same mass matrix and, with the
    chain's gravity (9.81, 0, 0) given to the file's model, same bias, on random states."""
    ref = loopdyn.load_urdf(reference_path("revolute_rotor_chain"))
    chain = robots.gt_chain(3)
    ref.gravity = np.array(chain.gravity, dtype=float)
    dr, dc = ref.create_data(), chain.create_data()
    rng = np.random.default_rng(4)
    for _ in range(10):
        q = loopdyn.random_configuration(chain, rng)
        v = rng.normal(size=3)
        assert rel_err(loopdyn.crba(chain, dc, q), loopdyn.crba(ref, dr, q)) <= 1e-12
        assert (
            rel_err(loopdyn.nonlinear_effects(chain, dc, q, v), loopdyn.nonlinear_effects(ref, dr, q, v))
            <= 1e-12
        )
