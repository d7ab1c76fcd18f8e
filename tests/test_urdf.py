"""Tests of :func:`loopdyn.io.load_urdf`: models must match Pinocchio's ``buildModelFromUrdf``
(joint order, coordinates, placements, inertias, limits, frames) and malformed documents must be
reported with their line number."""

from __future__ import annotations

import sysconfig
from pathlib import Path

import numpy as np
import pytest

from loopdyn.errors import InputError, UnsupportedFeatureError, URDFError
from loopdyn.io import load_urdf
from loopdyn.io.urdf import rpy_to_matrix

TOL = 1e-12
DATA = Path(__file__).parent / "data" / "urdf"
MIXED = DATA / "mixed_tree.urdf"
ROBOTS = Path(sysconfig.get_paths()["purelib"]) / "cmeel.prefix/share/example-robot-data/robots"

# (id, relative path, floating base, mimic mode)
ROBOT_CASES = [
    ("solo12", "solo_description/robots/solo12.urdf", True, "error"),
    ("hyq", "hyq_description/robots/hyq_no_sensors.urdf", True, "error"),
    ("talos_reduced", "talos_data/robots/talos_reduced.urdf", True, "error"),
    ("panda", "panda_description/urdf/panda.urdf", False, "independent"),
    ("ur5", "ur_description/urdf/ur5_robot.urdf", False, "error"),
]


def robot_path(relative: str) -> Path:
    path = ROBOTS / relative
    assert path.is_file(), f"{path} not found: is example-robot-data (a test dependency) installed?"
    return path


# ----------------------------------------------------------------------------------------------
# comparison with Pinocchio
def pin_build(pin, source: Path | str, floating: bool, from_xml: bool = False):
    """Pinocchio model of ``source`` (mimic joints as independent joints, Pinocchio's default)."""
    build = pin.buildModelFromXML if from_xml else pin.buildModelFromUrdf
    src = source if from_xml else str(source)
    return build(src, pin.JointModelFreeFlyer()) if floating else build(src)


def pin_joint_kind_and_axis(pin, pin_model, i: int) -> tuple[str, np.ndarray | None]:
    """loopdyn kind of Pinocchio joint ``i`` and, for 1-DoF joints, its unit axis (from the motion
    subspace at the neutral configuration)."""
    jm = pin_model.joints[i]
    short = jm.shortname()
    if short == "JointModelFreeFlyer":
        return "free-flyer", None
    if short == "JointModelSpherical":
        return "spherical", None
    if "RevoluteUnbounded" in short or short.startswith("JointModelRUB"):
        kind, part = "continuous", slice(3, 6)
    elif "Revolute" in short or short in ("JointModelRX", "JointModelRY", "JointModelRZ"):
        kind, part = "revolute", slice(3, 6)
    elif "Prismatic" in short or short in ("JointModelPX", "JointModelPY", "JointModelPZ"):
        kind, part = "prismatic", slice(0, 3)
    else:  # pragma: no cover - a joint type these tests do not expect
        raise AssertionError(f"unexpected Pinocchio joint {short}")
    jdata = jm.createData()
    jm.calc(jdata, pin.neutral(pin_model))
    S = np.array(jdata.S).reshape(6)  # Pinocchio motion: (linear, angular)
    return kind, S[part]


def frame_parent(frame) -> int:
    return frame.parentJoint if hasattr(frame, "parentJoint") else frame.parent


def assert_matches_pinocchio(model, pin_model, pin) -> None:
    """Assert that a loopdyn model and a Pinocchio model describe the same tree, to 1e-12."""
    assert model.nq == pin_model.nq
    assert model.nv == pin_model.nv
    assert model.njoints == pin_model.njoints
    assert model.joint_names == list(pin_model.names)
    body_names = [pin_model.frames[pin_model.getFrameId(n)].name for n in model.body_names[1:]]
    assert body_names == model.body_names[1:]

    # universe: what the links welded to the world weigh
    Y0 = pin_model.inertias[0]
    assert model.universe_inertia.mass == pytest.approx(Y0.mass, abs=TOL)
    np.testing.assert_allclose(model.universe_inertia.com, Y0.lever, rtol=0, atol=TOL)
    np.testing.assert_allclose(model.universe_inertia.inertia, Y0.inertia, rtol=0, atol=TOL)

    for i in range(1, pin_model.njoints):
        body = model.bodies[i - 1]
        what = f"joint {i} ({body.joint_name})"
        assert body.parent == pin_model.parents[i], what
        assert body.idx_q == pin_model.idx_qs[i], what
        assert body.idx_v == pin_model.idx_vs[i], what
        assert body.joint.nq == pin_model.nqs[i], what
        assert body.joint.nv == pin_model.nvs[i], what
        kind, axis = pin_joint_kind_and_axis(pin, pin_model, i)
        assert body.joint.kind == kind, what
        if axis is not None:
            np.testing.assert_allclose(body.joint.axis_array(), axis, rtol=0, atol=TOL, err_msg=what)
        M = pin_model.jointPlacements[i]
        np.testing.assert_allclose(body.rotation, M.rotation, rtol=0, atol=TOL, err_msg=what)
        np.testing.assert_allclose(body.translation, M.translation, rtol=0, atol=TOL, err_msg=what)
        Y = pin_model.inertias[i]
        assert body.inertia.mass == pytest.approx(Y.mass, abs=TOL), what
        np.testing.assert_allclose(body.inertia.com, Y.lever, rtol=0, atol=TOL, err_msg=what)
        np.testing.assert_allclose(body.inertia.inertia, Y.inertia, rtol=0, atol=TOL, err_msg=what)
        np.testing.assert_allclose(
            body.inertia.matrix()[[3, 4, 5, 0, 1, 2]][:, [3, 4, 5, 0, 1, 2]],
            Y.matrix(),
            rtol=0,
            atol=1e-11,
            err_msg=what,
        )

        # limits: bounded 1-DoF joints carry the URDF <limit> values
        if kind in ("revolute", "prismatic"):
            q, v = body.idx_q, body.idx_v
            assert model.lower_position_limit[q] == pin_model.lowerPositionLimit[q], what
            assert model.upper_position_limit[q] == pin_model.upperPositionLimit[q], what
        if kind in ("revolute", "prismatic", "continuous"):
            v = body.idx_v
            for ours, theirs in (
                (model.velocity_limit, pin_model.velocityLimit),
                (model.effort_limit, pin_model.effortLimit),
            ):
                if np.isfinite(theirs[v]):
                    assert ours[v] == theirs[v], what
                else:
                    assert ours[v] == np.inf, what

    # frames: same list, same order, same kinds, bodies and placements
    kinds = {
        pin.FrameType.BODY: "body",
        pin.FrameType.JOINT: "joint",
        pin.FrameType.FIXED_JOINT: "fixed_joint",
    }
    pin_frames = [f for f in pin_model.frames if f.type in kinds]
    assert len(pin_frames) == pin_model.nframes  # the URDF parser adds no other kind
    assert [f.name for f in model.frames] == [f.name for f in pin_frames]
    for ours, theirs in zip(model.frames, pin_frames, strict=True):
        what = f"frame {theirs.name!r}"
        assert ours.kind == kinds[theirs.type], what
        assert ours.body == frame_parent(theirs), what
        np.testing.assert_allclose(ours.rotation, theirs.placement.rotation, rtol=0, atol=TOL, err_msg=what)
        np.testing.assert_allclose(
            ours.translation, theirs.placement.translation, rtol=0, atol=TOL, err_msg=what
        )
        # ... and the lookup by name and kind finds it
        assert model.frames[model.frame_id(theirs.name, ours.kind)] is ours


@pytest.mark.parametrize(
    ("relative", "floating", "mimic"), [c[1:] for c in ROBOT_CASES], ids=[c[0] for c in ROBOT_CASES]
)
def test_example_robot_matches_pinocchio(relative, floating, mimic):
    import pinocchio as pin
    path = robot_path(relative)
    # inertias as written, as Pinocchio reads them (hyq's base_link is not physical)
    model = load_urdf(path, floating_base=floating, mimic=mimic, inertia="accept")
    assert_matches_pinocchio(model, pin_build(pin, path, floating), pin)


@pytest.mark.parametrize(
    "relative", ["solo_description/robots/solo12.urdf", "ur_description/urdf/ur5_robot.urdf"]
)
def test_example_robot_other_base_matches_pinocchio(relative):
    """The same robots with the other choice of base (fixed <-> floating)."""
    import pinocchio as pin
    path = robot_path(relative)
    for floating in (False, True):
        model = load_urdf(path, floating_base=floating)
        assert_matches_pinocchio(model, pin_build(pin, path, floating), pin)


@pytest.mark.parametrize("floating", [False, True])
def test_mixed_tree_matches_pinocchio(floating):
    import pinocchio as pin
    model = load_urdf(MIXED, floating_base=floating)
    assert_matches_pinocchio(model, pin_build(pin, MIXED.read_text(), floating, from_xml=True), pin)


def test_mixed_tree_structure():
    """What the hand-made tree is meant to exercise, independently of Pinocchio."""
    model = load_urdf(MIXED)
    # siblings of base visited by joint name, not file order; depth first
    assert model.joint_names == [
        "universe",
        "a_wheel",
        "plate_spin",
        "m_slider",
        "torso_joint",
        "arm_float",
        "elbow",
        "head_pan",
    ]
    kinds = [b.joint.kind for b in model.bodies]
    assert kinds == [
        "continuous",
        "continuous",
        "prismatic",
        "revolute",
        "free-flyer",
        "revolute",
        "revolute",
    ]
    assert model.nq == 2 + 2 + 1 + 1 + 7 + 1 + 1
    assert model.nv == 1 + 1 + 1 + 1 + 6 + 1 + 1
    np.testing.assert_allclose(model.bodies[0].joint.axis_array(), [0, 2**-0.5, 2**-0.5], atol=TOL)
    np.testing.assert_allclose(model.bodies[2].joint.axis_array(), [0, -1, 0], atol=TOL)
    np.testing.assert_allclose(model.bodies[6].joint.axis_array(), [1, 0, 0], atol=TOL)  # no <axis>
    assert model.bodies[6].inertia.mass == 0.0  # no <inertial>
    # the floating joint hangs from "head", itself welded to body "torso"
    assert model.bodies[4].parent == model.body_id("torso")
    # fixed links lumped: base + plate into the universe, head into torso, tool + tip into forearm
    assert model.universe_inertia.mass == pytest.approx(3.5 + 1.2)
    assert model.bodies[model.body_id("torso") - 1].inertia.mass == pytest.approx(2.0 + 1.1)
    assert model.bodies[model.body_id("forearm") - 1].inertia.mass == pytest.approx(0.9 + 0.2 + 0.05)
    assert model.velocity_limit[0] == 20.0 and model.effort_limit[0] == 7.0  # continuous <limit>
    assert model.velocity_limit[1] == np.inf  # continuous without <limit>
    assert model.lower_position_limit[4] == -0.05 and model.upper_position_limit[4] == 0.25
    # the <mimic> of the fixed joint z_head_fixed is ignored, as Pinocchio ignores it
    assert model.frames[model.frame_id("z_head_fixed")].kind == "fixed_joint"


def test_inertial_rpy_rotates_the_tensor():
    """The torso's own inertia (head removed) is ``R I R^T`` about the <inertial> origin."""
    xml = MIXED.read_text()
    start = xml.index("<!-- a fixed link with inertia below a moving link")
    trimmed = load_urdf(xml[:start] + "</robot>")
    own = trimmed.bodies[trimmed.body_id("torso") - 1].inertia
    R = rpy_to_matrix(0.7, -0.3, 1.9)
    np.testing.assert_allclose(own.inertia, R @ np.diag([0.02, 0.03, 0.01]) @ R.T, rtol=0, atol=TOL)
    np.testing.assert_allclose(own.com, [0, 0, 0.1], rtol=0, atol=TOL)
    assert own.mass == 2.0


def test_rpy_convention():
    """``rpy`` is fixed-axis roll about x, then pitch about y, then yaw about z."""
    r, p, y = 0.3, -1.1, 2.5
    Rx = np.array([[1, 0, 0], [0, np.cos(r), -np.sin(r)], [0, np.sin(r), np.cos(r)]])
    Ry = np.array([[np.cos(p), 0, np.sin(p)], [0, 1, 0], [-np.sin(p), 0, np.cos(p)]])
    Rz = np.array([[np.cos(y), -np.sin(y), 0], [np.sin(y), np.cos(y), 0], [0, 0, 1]])
    np.testing.assert_allclose(rpy_to_matrix(r, p, y), Rz @ Ry @ Rx, atol=1e-15)


def test_rpy_matches_pinocchio_on_random_angles():
    import pinocchio as pin
    rng = np.random.default_rng(7)
    for angles in rng.uniform(-4, 4, size=(50, 3)):
        np.testing.assert_allclose(rpy_to_matrix(*angles), pin.rpy.rpyToMatrix(*angles), rtol=0, atol=TOL)


def test_sibling_order_is_bytewise_by_joint_name():
    """Siblings sort by the bytes of their joint names (std::map<std::string>): uppercase before '_'
    before lowercase, and UTF-8 byte order, which is code-point order, for non-ASCII names."""
    names = ["b", "B", "_", "z", "\u00e9", "\u03a9", "Z", "\U0001f600", "\u00ff"]
    xml = _robot(
        _link("base")
        + "".join(_link(f"l{i}") for i in range(len(names)))
        + "".join(_joint(name, "base", f"l{i}") for i, name in enumerate(names))
    )
    model = load_urdf(xml)
    assert model.joint_names == [
        "universe",
        "B",
        "Z",
        "_",
        "b",
        "z",
        "\u00e9",
        "\u00ff",
        "\u03a9",
        "\U0001f600",
    ]
    import pinocchio as pin
    assert list(pin.buildModelFromXML(xml).names) == model.joint_names


def test_root_joint_name_and_gravity():
    model = load_urdf(MIXED, floating_base=True, root_joint_name="base_free", gravity=(0, 0, -1.62))
    assert model.joint_names[1] == "base_free"
    assert model.bodies[0].name == "base" and model.bodies[0].joint.kind == "free-flyer"
    np.testing.assert_allclose(model.gravity, [0, 0, -1.62])
    assert model.name == "mixed_tree"


# ----------------------------------------------------------------------------------------------
# sources
def test_string_path_and_pathlib_give_the_same_model():
    text = MIXED.read_text()
    models = [
        load_urdf(MIXED),
        load_urdf(str(MIXED)),
        load_urdf(text),
        load_urdf("\n  " + text),
        load_urdf(text.encode()),
    ]
    ref = models[0]
    for other in models[1:]:
        assert other.joint_names == ref.joint_names
        assert other.frame_names == ref.frame_names
        for a, b in zip(ref.bodies, other.bodies, strict=True):
            np.testing.assert_array_equal(a.rotation, b.rotation)
            np.testing.assert_array_equal(a.translation, b.translation)
            np.testing.assert_array_equal(a.inertia.compact(), b.inertia.compact())


def test_missing_file():
    with pytest.raises(FileNotFoundError):
        load_urdf(DATA / "does_not_exist.urdf")


def test_bad_arguments():
    with pytest.raises(InputError, match="mimic"):
        load_urdf(MIXED, mimic="ignore")
    with pytest.raises(InputError, match="source"):
        load_urdf(42)


def test_malformed_xml_file_reports_path_and_line():
    with pytest.raises(URDFError) as info:
        load_urdf(DATA / "malformed_xml.urdf")
    assert info.value.line == 10
    assert info.value.source == str(DATA / "malformed_xml.urdf")
    assert "malformed_xml.urdf:10:" in str(info.value)
    assert "mismatched tag" in str(info.value)


# ----------------------------------------------------------------------------------------------
# malformed documents
LIMIT = '<limit lower="-1" upper="1" effort="1" velocity="1"/>'


def _robot(body: str, name: str = "r") -> str:
    return f'<robot name="{name}">\n{body}</robot>\n'


def _link(name: str) -> str:
    return f'<link name="{name}"/>\n'


def _joint(name: str, parent: str, child: str, jtype: str = "revolute", extra: str = LIMIT) -> str:
    return (
        f'<joint name="{name}" type="{jtype}">\n<parent link="{parent}"/>\n<child link="{child}"/>\n'
        f"{extra}\n</joint>\n"
    )


def _raises(xml: str, match: str, line: int | None, error=URDFError):
    with pytest.raises(error, match=match) as info:
        load_urdf(xml)
    if line is not None:
        assert info.value.line == line
        assert f"line {line}" in str(info.value)
    return info.value


def test_not_well_formed():
    err = _raises('<robot name="r">\n<link name="a">\n<link name="b"/>\n</robot>\n', "malformed XML", 4)
    assert err.source is None
    # blank lines before the document are skipped but still counted
    _raises('\n\n<?xml version="1.0"?>\n<robot name="r">\n<link name="a">\n</robot>\n', "malformed XML", 6)


def test_empty_document():
    _raises("<", "malformed XML", 1)


def test_root_element_must_be_robot():
    _raises("<robt name='r'><link name='a'/></robt>", "expected <robot>", 1)


def test_robot_needs_a_name():
    _raises("<robot>\n<link name='a'/>\n</robot>", "'name'", 1)


def test_no_links():
    _raises(_robot(""), "no <link>", 1)


def test_joint_names_an_unknown_link():
    xml = _robot(_link("a") + _link("b") + _joint("j", "a", "ghost"))
    _raises(xml, "child link 'ghost'", 4)
    xml = _robot(_link("a") + _link("b") + _joint("j", "ghost", "b"))
    _raises(xml, "parent link 'ghost'", 4)


def test_unknown_joint_type():
    _raises(_robot(_link("a") + _link("b") + _joint("j", "a", "b", "hinge")), "unknown joint type 'hinge'", 4)


def test_missing_joint_type_and_links():
    _raises(_robot(_link("a") + '<joint name="j">\n<parent link="a"/>\n</joint>\n'), "'type'", 3)
    _raises(
        _robot(_link("a") + '<joint name="j" type="fixed">\n<parent link="a"/>\n</joint>\n'), "no <child>", 3
    )
    _raises(
        _robot(
            _link("a") + _link("b") + '<joint name="j" type="fixed">\n<parent/>\n<child link="b"/>\n'
            "</joint>\n"
        ),
        "'link'",
        5,
    )


def test_missing_or_empty_names():
    _raises(_robot("<link/>\n"), "'name'", 2)
    _raises(_robot('<link name=""/>\n'), "empty name", 2)


def test_two_roots():
    err = _raises(
        _robot(_link("a") + _link("b") + _link("c") + _joint("j", "a", "b")), "more than one tree", 4
    )
    assert "'a'" in str(err) and "'c'" in str(err)


def test_link_with_two_parents():
    xml = _robot(_link("a") + _link("b") + _link("c") + _joint("j", "a", "b") + _joint("k", "c", "b"))
    _raises(xml, "'b' has two parent joints", 10)


def test_cycles():
    # a root exists but two links form a loop
    xml = _robot(
        _link("a")
        + _link("b")
        + _link("c")
        + _joint("j", "a", "b")
        + _joint("k", "b", "c")
        + _joint("l", "c", "b")
    )
    _raises(xml, "two parent joints", None)  # b has parents j and l
    # every link has exactly one parent: a pure cycle
    xml = _robot(_link("a") + _link("b") + _joint("j", "a", "b") + _joint("k", "b", "a"))
    err = _raises(xml, "cycle", None)
    assert "no link is without a parent" in str(err)
    xml = _robot(_link("a") + _link("b") + _link("c") + _joint("j", "a", "b") + _joint("k", "c", "c"))
    _raises(xml, r"cycle \(k\)", 10)


def test_duplicate_names():
    _raises(_robot(_link("a") + _link("a")), "duplicate link name 'a'.*line 2", 3)
    xml = _robot(_link("a") + _link("b") + _link("c") + _joint("j", "a", "b") + _joint("j", "a", "c"))
    _raises(xml, "duplicate joint name 'j'.*line 5", 10)


def test_bad_numbers():
    for text in (
        "0 0 x",
        "0 0",
        "0 0 1 2",
        "1,2,3",
        "0x10 0 0",
        "nan 0 0",
        "inf 0 0",
        "1e999 0 0",
        "1_0 0 0",
    ):
        xml = _robot(
            _link("a") + _link("b") + _joint("j", "a", "b", extra=f'<origin xyz="{text}"/>\n' + LIMIT)
        )
        _raises(xml, "origin xyz", 7)
    # these are fine
    xml = _robot(
        _link("a")
        + _link("b")
        + _joint("j", "a", "b", extra='<origin xyz=" 1e-3   +2 .5 " rpy="-0. 0 1."/>' + LIMIT)
    )
    np.testing.assert_allclose(load_urdf(xml).bodies[0].translation, [1e-3, 2, 0.5])


def test_bad_limits():
    extra = '<limit lower="-1" upper="1" velocity="1"/>'
    _raises(_robot(_link("a") + _link("b") + _joint("j", "a", "b", extra=extra)), "no 'effort'", 7)
    extra = '<limit lower="-1" upper="1" effort="1"/>'
    _raises(_robot(_link("a") + _link("b") + _joint("j", "a", "b", "continuous", extra)), "no 'velocity'", 7)
    _raises(_robot(_link("a") + _link("b") + _joint("j", "a", "b", extra="")), "needs a <limit>", 4)
    _raises(_robot(_link("a") + _link("b") + _joint("j", "a", "b", "prismatic", "")), "needs a <limit>", 4)
    extra = '<limit lower="1" upper="-1" effort="1" velocity="1"/>'
    _raises(_robot(_link("a") + _link("b") + _joint("j", "a", "b", extra=extra)), "greater than upper", 7)
    # ... but only where they bound a coordinate
    for jtype in ("fixed", "continuous", "floating"):
        load_urdf(_robot(_link("a") + _link("b") + _joint("j", "a", "b", jtype, extra)))
    # lower/upper default to 0, as in urdfdom
    model = load_urdf(
        _robot(
            _link("a")
            + _link("b")
            + _joint("j", "a", "b", extra='<limit upper="2" effort="1" velocity="1"/>')
        )
    )
    assert model.lower_position_limit[0] == 0.0 and model.upper_position_limit[0] == 2.0


def test_bad_axis():
    _raises(
        _robot(_link("a") + _link("b") + _joint("j", "a", "b", extra='<axis xyz="0 0 0"/>' + LIMIT)),
        "zero length",
        7,
    )
    _raises(_robot(_link("a") + _link("b") + _joint("j", "a", "b", extra="<axis/>" + LIMIT)), "'xyz'", 7)


def test_bad_inertial():
    def link(inertial: str) -> str:
        return _robot(
            _link("a")
            + f'<link name="b">\n<inertial>\n{inertial}\n</inertial>\n</link>\n'
            + _joint("j", "a", "b")
        )

    full = '<inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/>'
    _raises(link(full), "no <mass>", 4)
    _raises(link('<mass value="1"/>'), "no <inertia>", 4)
    _raises(link("<mass/>" + full), "'value'", 5)
    _raises(link('<mass value="1"/><inertia ixx="1" iyy="1" izz="1"/>'), "'ixy'", 5)
    _raises(link('<mass value="-1"/>' + full), "mass", 4)
    _raises(
        link('<mass value="1"/><inertia ixx="1" ixy="5" ixz="0" iyy="1" iyz="0" izz="1"/>'),
        "positive semi-definite",
        4,
    )


def test_planar_joint_is_a_planar_compound_joint():
    """``planar`` (once refused) loads as loopdyn.Planar about <axis> (default x, as any URDF axis);
    Pinocchio's comparison is in test_compound_joints.py."""
    xml = _robot(_link("a") + _link("b") + _joint("slide_plane", "a", "b", "planar"))
    model = load_urdf(xml)
    rec = model.compound_joint("slide_plane")
    assert rec.joint.kind == "planar" and np.allclose(rec.joint.normal, (1, 0, 0))
    assert model.body_names == ["universe", "slide_plane/1", "slide_plane/2", "b"] and model.nv == 3
    bad = _robot(_link("a") + _link("b") + _joint("p", "a", "b", "planar", '<axis xyz="0 0 0"/>'))
    _raises(bad, "joint 'p': the axis has zero length", 7)


def test_mimic_is_unsupported_by_default():
    mimic = LIMIT + '\n<mimic joint="j" multiplier="-1" offset="0.1"/>'
    xml = _robot(
        _link("a") + _link("b") + _link("c") + _joint("j", "a", "b") + _joint("k", "a", "c", extra=mimic)
    )
    _raises(xml, "'k' mimics joint 'j'.*mimic='independent'", 14, UnsupportedFeatureError)
    model = load_urdf(xml, mimic="independent")
    assert model.joint_names == ["universe", "j", "k"] and model.nq == 2
    # a <mimic> needs the joint it mimics
    bad = xml.replace('joint="j" ', "")
    assert type(_raises(bad, "'joint'", 14)) is URDFError


def test_panda_mimic_default_raises_naming_the_joint():
    path = robot_path("panda_description/urdf/panda.urdf")
    with pytest.raises(UnsupportedFeatureError, match="panda_finger_joint2") as info:
        load_urdf(path)
    assert info.value.line is not None and f"panda.urdf:{info.value.line}:" in str(info.value)
    lines = path.read_text().splitlines()
    assert "<mimic" in lines[info.value.line - 1]


def test_root_joint_name_clash():
    xml = _robot(_link("a") + _link("b") + _joint("root_joint", "a", "b"))
    with pytest.raises(URDFError, match="duplicate joint name 'root_joint'") as info:
        load_urdf(xml, floating_base=True)
    assert info.value.line == 4
    assert load_urdf(xml).joint_names == ["universe", "root_joint"]


def test_entity_declarations_are_refused():
    xml = (
        '<?xml version="1.0"?>\n<!DOCTYPE robot [\n<!ENTITY a "aaaaaaaaaa">\n]>\n'
        '<robot name="r"><link name="&a;"/></robot>'
    )
    _raises(xml, "entity", 3)


def test_elements_outside_robot_children_are_ignored():
    """<joint>/<link> nested in <transmission> or <gazebo> are not URDF joints/links."""
    xml = _robot(
        _link("a")
        + _link("b")
        + _joint("j", "a", "b")
        + '<transmission name="t"><joint name="j"><hardwareInterface>x</hardwareInterface></joint>'
        + '</transmission>\n<gazebo reference="b"><link name="zz"/></gazebo>\n<material name="m"/>\n'
    )
    model = load_urdf(xml)
    assert model.joint_names == ["universe", "j"]
    assert "zz" not in model.frame_names
