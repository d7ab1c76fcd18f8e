"""URDF+ (GRBDA's kinematic-loop extension of URDF) in :func:`loopdyn.io.load_urdf`: ``independent``
flags, ``<coupling>`` and ``<loop>`` elements, the reference files of GRBDA's ``robot-models`` and
the errors of malformed constraints."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from reference_files import grbda_file

from loopdyn.constraints.definitions import Coupling, LoopJoint
from loopdyn.errors import InputError, UnsupportedFeatureError, URDFError
from loopdyn.io import load_urdf
from loopdyn.model import state
from loopdyn.model.clusters import EXPLICIT, IMPLICIT

DATA = Path(__file__).parent / "data" / "urdf"


def ref(name: str) -> Path:
    return grbda_file(name)  # fails (never skips) when the file is missing


def multi(model):
    """The clusters with constraints."""
    return [c for c in model.clusters().clusters if c.kind != 0]


def names(model, c) -> list[str]:
    return [model.bodies[b - 1].name for b in c.bodies]


# ----------------------------------------------------------------------------------------------
# the reference files
# (file, nv, nq, spanning nv, clusters, couplings, loops); the files with a robot floating base
# have their own ``floating`` joint, so they are loaded with floating_base=False
REFERENCE = [
    ("double_pendulum.urdf", 2, 2, 2, 2, 0, 0),
    ("four_bar.urdf", 1, 3, 3, 1, 0, 1),
    ("revolute_rotor_chain.urdf", 3, 3, 6, 3, 3, 0),
    ("mini_cheetah.urdf", 18, 19, 30, 13, 12, 0),
    ("mit_humanoid.urdf", 24, 25, 42, 17, 18, 0),
    ("mit_humanoid_leg.urdf", 5, 5, 10, 4, 5, 0),
    # the spec's JVRC-1 has 32 geared joints (65 bodies); the URDF+ file has rotors on 25 of them
    ("jvrc1_humanoid.urdf", 38, 39, 63, 33, 25, 0),
    # approximate models: the same robots without rotors, plain trees
    ("mini_cheetah_approximate.urdf", 18, 19, 18, 13, 0, 0),
    ("mit_humanoid_approximate.urdf", 24, 25, 24, 19, 0, 0),
    ("jvrc1_humanoid_approximate.urdf", 38, 39, 38, 33, 0, 0),
    ("tello_humanoid_approximate.urdf", 24, 25, 24, 19, 0, 0),
    # independent flags but no constraints (added in code, loopdyn.robots.tello_model): plain trees
    ("tello_humanoid.urdf", 42, 43, 42, 37, 0, 0),
    ("tello_legs.urdf", 20, 20, 20, 20, 0, 0),
]


@pytest.mark.parametrize(
    "filename, nv, nq, nv_span, nclusters, ncouplings, nloops", REFERENCE, ids=[r[0] for r in REFERENCE]
)
def test_reference_file_sizes(filename, nv, nq, nv_span, nclusters, ncouplings, nloops):
    model = load_urdf(ref(filename), inertia="accept")
    assert model.nv == nv
    assert model.nq == nq
    assert model.spanning_nv == nv_span
    assert len(model.velocity_names) == nv
    assert sum(isinstance(c, Coupling) for c in model.constraints) == ncouplings
    assert sum(isinstance(c, LoopJoint) for c in model.constraints) == nloops
    assert model.has_constraints == bool(ncouplings or nloops)
    if model.has_constraints:
        tree = model.clusters()
        assert len(tree.clusters) == nclusters
        assert tree.nv == nv and tree.nq == nq
        # every constraint belongs to exactly one cluster
        assert sum(len(c.constraints) for c in tree.clusters) == len(model.constraints)
    else:
        assert model.nbodies == nclusters


@pytest.mark.parametrize("filename", [r[0] for r in REFERENCE])
def test_reference_file_spanning_tree_matches_pinocchio(filename):
    """URDF+ additions do not change the tree: urdfdom (Pinocchio) ignores them."""
    import pinocchio as pin
    path = ref(filename)
    model = load_urdf(path, inertia="accept")  # GRBDA's files have non-physical inertias
    pm = pin.buildModelFromUrdf(str(path))
    assert model.joint_names == list(pm.names)
    assert model.spanning_nq == pm.nq and model.spanning_nv == pm.nv
    for i, body in enumerate(model.bodies, start=1):
        assert body.parent == pm.parents[i]
        assert body.idx_q == pm.idx_qs[i]
        np.testing.assert_allclose(body.translation, pm.jointPlacements[i].translation, atol=1e-12)
        np.testing.assert_allclose(body.rotation, pm.jointPlacements[i].rotation, atol=1e-12)
        assert body.inertia.mass == pytest.approx(pm.inertias[i].mass, abs=1e-12)


def test_floating_base_flag_on_a_file_with_its_own_floating_joint_adds_a_second_free_flyer():
    """mini_cheetah.urdf already has ``base_to_floating_base`` (floating): floating_base=True would
    make the massless ``base`` link a second free body, nv = 24 instead of 18."""
    path = ref("mini_cheetah.urdf")
    assert load_urdf(path, inertia="accept").nv == 18
    doubled = load_urdf(path, floating_base=True, inertia="accept")
    assert doubled.nv == 24
    assert [b.joint.kind for b in doubled.bodies[:2]] == ["free-flyer", "free-flyer"]


def test_four_bar_cluster():
    model = load_urdf(ref("four_bar.urdf"))
    (c,) = model.clusters().clusters
    assert c.kind == IMPLICIT
    assert names(model, c) == ["link1", "link2", "link3"]
    assert (c.n, c.m) == (3, 1)
    assert [model.bodies[c.bodies[k] - 1].joint_name for k in c.independent] == ["joint1"]
    assert not c.auto_independent
    assert c.rows_total == 5 and len(c.rows) == 2  # revolute loop joint: 5 equations of rank 2
    assert model.velocity_names == ["joint1"]
    (loop,) = model.constraints
    assert loop.kind == "revolute" and loop.predecessor == "link2" and loop.successor == "link3"
    np.testing.assert_allclose(loop.predecessor_placement[1], [1.0, 0.0, 0.0])
    np.testing.assert_allclose(loop.successor_placement[1], [0.5, 0.0, 0.0])
    np.testing.assert_allclose(loop.axis, [0.0, 0.0, 1.0])


def test_four_bar_point_and_exact_loops_give_the_same_mechanism():
    path = ref("four_bar.urdf")
    exact = load_urdf(path)
    point = load_urdf(path, loops="point")
    assert point.constraints[0].kind == "point"
    assert exact.nv == point.nv == 1
    assert exact.nq == point.nq == 3
    ce, cp = exact.clusters().clusters[0], point.clusters().clusters[0]
    assert (cp.rows_total, len(cp.rows)) == (3, 2)  # z row vanishes for a planar linkage
    assert (ce.rows_total, len(ce.rows)) == (5, 2)
    assert ce.independent == cp.independent


def test_revolute_rotor_chain_coupling_rows():
    """``ratio·q_link − q_rotor = 0`` for each [link, rotor] pair, rotor = 6 × link."""
    model = load_urdf(ref("revolute_rotor_chain.urdf"))
    clusters = model.clusters().clusters
    assert [names(model, c) for c in clusters] == [
        ["link-0", "rotor-0"],
        ["link-1", "rotor-1"],
        ["link-2", "rotor-2"],
    ]
    assert [c.parent for c in clusters] == [-1, 0, 1]
    for c in clusters:
        assert c.kind == EXPLICIT
        np.testing.assert_array_equal(c.K_const, [[6.0, -1.0]])
        np.testing.assert_allclose(c.G_const, [[1.0], [6.0]])
        assert c.independent == [0] and c.dependent == [1]
        assert (c.nq, c.nv) == (1, 1)
    assert model.velocity_names == ["joint1", "joint2", "joint3"]
    # the rotors are flagged dependent in the file; the links default to independent
    flags = {b.joint_name: b.independent for b in model.bodies}
    assert flags == {
        "joint1": True,
        "joint1r": False,
        "joint2": True,
        "joint2r": False,
        "joint3": True,
        "joint3r": False,
    }


def test_mit_humanoid_knee_ankle_cluster():
    model = load_urdf(ref("mit_humanoid.urdf"))
    tree = model.clusters()
    four = [c for c in tree.clusters if len(c.bodies) == 4]
    assert len(four) == 2
    for side in ("left", "right"):
        (c,) = [c for c in four if names(model, c)[0].startswith(side)]
        local = {name: k for k, name in enumerate(names(model, c))}
        assert set(local) == {f"{side}_{b}" for b in ("knee_link", "knee_rotor", "ankle_link", "ankle_rotor")}
        assert c.kind == EXPLICIT and (c.n, c.m) == (4, 2)
        ind = [model.bodies[c.bodies[k] - 1].name for k in c.independent]
        assert sorted(ind) == sorted([f"{side}_knee_link", f"{side}_ankle_link"])
        # rows in the order of the file: knee rotor = 12 q_knee; ankle rotor = 12 (q_knee + q_ankle)
        knee_row = np.zeros(4)
        knee_row[local[f"{side}_knee_link"]] = 12.0
        knee_row[local[f"{side}_knee_rotor"]] = -1.0
        ankle_row = np.zeros(4)
        ankle_row[local[f"{side}_knee_link"]] = 12.0
        ankle_row[local[f"{side}_ankle_link"]] = 12.0
        ankle_row[local[f"{side}_ankle_rotor"]] = -1.0
        np.testing.assert_array_equal(c.K_const, [knee_row, ankle_row])
        assert [k.name for k in c.constraints] == [f"{side}_knee_transmission", f"{side}_ankle_transmission"]
        # G: the ankle rotor turns 12 (q_knee + q_ankle)
        y = np.array([0.3, -0.7])  # (independent coordinates in spanning order)
        q = c.G_const @ y
        q_knee, q_ankle = q[local[f"{side}_knee_link"]], q[local[f"{side}_ankle_link"]]
        assert q[local[f"{side}_ankle_rotor"]] == pytest.approx(12 * (q_knee + q_ankle))
        assert q[local[f"{side}_knee_rotor"]] == pytest.approx(12 * q_knee)
        np.testing.assert_allclose(c.K_const @ c.G_const, 0.0, atol=1e-15)
    # every other multi-body cluster is a [link, rotor] pair with one coordinate
    pairs = [c for c in tree.clusters if len(c.bodies) == 2]
    assert len(pairs) == 14 and all(c.m == 1 for c in pairs)
    text = tree.summary(model)
    assert (
        "['left_ankle_rotor', 'left_knee_link', 'left_ankle_link', 'left_knee_rotor'] — "
        "explicit, 4 spanning / 2" in text
    )
    assert "(left_hipy_to_knee_link, left_knee_to_ankle)" in text
    assert "constraints ['left_knee_transmission', 'left_ankle_transmission']" in text
    assert len(text.splitlines()) == 16  # the free-flyer cluster is not listed
    assert model.velocity_names[:6] == [f"world_to_base[{k}]" for k in range(6)]
    assert "left_knee_to_ankle" in model.velocity_names
    assert not any("rotor" in n for n in model.velocity_names)


def test_mit_humanoid_leg_clusters():
    model = load_urdf(ref("mit_humanoid_leg.urdf"))
    sizes = sorted(len(c.bodies) for c in model.clusters().clusters)
    assert sizes == [2, 2, 2, 4]
    assert model.clusters().clusters[0].parent == -1


def test_mini_cheetah_and_jvrc1_clusters_are_geared_pairs():
    for filename, pairs in (("mini_cheetah.urdf", 12), ("jvrc1_humanoid.urdf", 25)):
        model = load_urdf(ref(filename), inertia="accept")
        clusters = multi(model)
        assert len(clusters) == pairs
        for c in clusters:
            assert len(c.bodies) == 2 and c.m == 1 and c.kind == EXPLICIT
            (con,) = c.constraints
            assert con.ratio == 6.0 or (filename == "mini_cheetah.urdf" and con.ratio == pytest.approx(9.33))
            # the independent coordinate is the link's, as the file says
            assert model.bodies[c.bodies[c.independent[0]] - 1].name == con.predecessor


def test_tello_file_flags_are_kept_but_unused():
    """tello_humanoid.urdf flags rotors/links but has no constraints: a plain tree whose flags are
    stored on the bodies (for constraints added later, see loopdyn.robots.tello_model)."""
    model = load_urdf(ref("tello_humanoid.urdf"))
    assert not model.has_constraints
    assert model.nv == model.spanning_nv == 42
    flags = {b.name: b.independent for b in model.bodies}
    assert flags["left-hip-rotor-1"] and flags["left-hip-rotor-2"]
    assert not flags["left-gimbal"] and not flags["left-thigh"]
    assert not flags["left-hip-clamp-rotor"] and flags["left-hip-clamp"]
    assert flags["torso"]  # the floating joint has no flag


# ----------------------------------------------------------------------------------------------
# synthetic documents
LINK = (
    '<link name="{0}"><inertial><mass value="1"/>'
    '<inertia ixx="1" ixy="0" ixz="0" iyy="1" iyz="0" izz="1"/></inertial></link>'
)


def joint(name, parent, child, xyz="0 0 0", independent=None, jtype="revolute"):
    flag = "" if independent is None else f' independent="{independent}"'
    limit = (
        '<limit effort="1" velocity="1" lower="-3" upper="3"/>' if jtype in ("revolute", "prismatic") else ""
    )
    axis = '<axis xyz="0 0 1"/>' if jtype != "fixed" else ""
    return (
        f'<joint name="{name}" type="{jtype}"{flag}><parent link="{parent}"/><child link="{child}"/>'
        f'<origin xyz="{xyz}"/>{axis}{limit}</joint>'
    )


def four_bar(
    loop_type="revolute",
    flags=("true", "false", "false"),
    pred="link2",
    succ="link3",
    pred_xyz="1 0 0",
    succ_xyz="0.5 0 0",
    axis='<axis xyz="0 0 1"/>',
    extra="",
    links=("link1", "link2", "link3"),
) -> str:
    """GRBDA's four_bar.urdf, with a loop (one element per line, so line numbers are predictable:
    the <loop> is on line 8, its <predecessor> on 9, its <successor> on 10)."""
    return "\n".join(
        [
            '<robot name="fb">',
            '<link name="base_link"/>' + "".join(LINK.format(name) for name in links),
            joint("joint1", "base_link", "link1", independent=flags[0]),
            joint("joint2", "link1", "link2", "0.5 0 0", independent=flags[1]),
            joint("joint3", "base_link", "link3", "1 0 0", independent=flags[2]),
            extra or "<!-- -->",
            "<!-- -->",
            f'<loop name="loop1" type="{loop_type}">',
            f'<predecessor link="{pred}"><origin xyz="{pred_xyz}"/></predecessor>',
            f'<successor link="{succ}"><origin xyz="{succ_xyz}"/></successor>',
            axis,
            "</loop>",
            "</robot>",
        ]
    )


def geared(ratio='<ratio value="6.0"/>', pred="link", succ="rotor", extra="", flags=("true", "false")) -> str:
    """A link and its rotor on the ground, coupled (the <coupling> is on line 5, its children on
    6-8)."""
    return "\n".join(
        [
            '<robot name="gear">',
            '<link name="ground"/>' + LINK.format("link") + LINK.format("rotor"),
            joint("j_link", "ground", "link", independent=flags[0]),
            joint("j_rotor", "ground", "rotor", independent=flags[1]) + extra,
            '<coupling name="gear" type="rolling">',
            f'<predecessor link="{pred}"/>',
            f'<successor link="{succ}"/>',
            ratio,
            "</coupling>",
            "</robot>",
        ]
    )


def test_geared_pair():
    model = load_urdf(geared())
    (c,) = model.clusters().clusters
    np.testing.assert_array_equal(c.K_const, [[6.0, -1.0]])
    assert model.nv == 1 and model.velocity_names == ["j_link"]


@pytest.mark.parametrize(
    "loop_type, kind",
    [
        ("revolute", "revolute"),
        ("continuous", "revolute"),
        ("prismatic", "prismatic"),
        ("fixed", "weld"),
        ("spherical", "point"),
        ("point", "point"),
    ],
)
def test_loop_type_mapping(loop_type, kind):
    # no flags: the cluster picks its independent coordinates (a weld or a prismatic loop leaves the
    # planar four-bar no freedom)
    model = load_urdf(four_bar(loop_type, flags=("true", "true", "true")))
    assert model.constraints[0].kind == kind
    assert model.nv == (1 if kind in ("revolute", "point") else 0)
    point = load_urdf(four_bar(loop_type, flags=("true", "true", "true")), loops="point")
    assert point.constraints[0].kind == "point"
    assert point.nv == 1


def test_planar_loop_needs_point_mode():
    with pytest.raises(UnsupportedFeatureError, match="loops='point'") as info:
        load_urdf(four_bar("planar"))
    assert info.value.line == 8
    assert load_urdf(four_bar("planar"), loops="point").nv == 1


def test_loop_on_a_link_merged_by_a_fixed_joint_uses_its_body():
    """A loop end on a fixed child link is the same frame on the link's body."""
    tip = '<link name="tip"/>' + joint("tip_joint", "link3", "tip", "0.25 0 0", jtype="fixed")
    model = load_urdf(four_bar(succ="tip", succ_xyz="0.25 0 0", extra=tip))
    reference = load_urdf(four_bar())
    (loop,) = model.constraints
    assert loop.successor == "link3"
    np.testing.assert_allclose(loop.successor_placement[1], [0.5, 0.0, 0.0], atol=1e-15)
    assert model.nv == reference.nv == 1
    a, b = model.clusters().clusters[0], reference.clusters().clusters[0]
    np.testing.assert_allclose(a.q_ref, b.q_ref, atol=1e-12)


def test_loop_to_the_fixed_root_link():
    """A four-bar written as a chain closed onto the (fixed) root link."""
    doc = "\n".join(
        [
            '<robot name="chain">',
            '<link name="base_link"/>' + "".join(LINK.format(n) for n in ("l1", "l2", "l3")),
            joint("j1", "base_link", "l1"),
            joint("j2", "l1", "l2", "0.5 0 0", independent="false"),
            joint("j3", "l2", "l3", "1 0 0", independent="false"),
            '<loop name="close" type="revolute">',
            '<predecessor link="l3"><origin xyz="0.5 0 0"/></predecessor>',
            '<successor link="base_link"><origin xyz="1 0 0"/></successor>',
            '<axis xyz="0 0 1"/>',
            "</loop>",
            "</robot>",
        ]
    )
    model = load_urdf(doc)
    assert model.constraints[0].successor == "universe"
    assert model.nv == 1 and model.velocity_names == ["j1"]
    (c,) = model.clusters().clusters
    assert names(model, c) == ["l1", "l2", "l3"]


@pytest.mark.parametrize(
    "value, expected",
    [
        ("true", True),
        ("True", True),
        (None, True),
        ("false", False),
        ("TRUE", False),
        ("1", False),
        ("yes", False),
    ],
)
def test_independent_attribute_semantics(value, expected):
    """GRBDA: default true; only the exact strings "true"/"True" are true."""
    model = load_urdf(geared(flags=(value, "true")))  # the rotor is independent if the link is not
    assert model.bodies[model.body_id("link") - 1].independent is expected


def test_loops_mode_is_checked():
    with pytest.raises(InputError, match="loops must be one of"):
        load_urdf(four_bar(), loops="exact-ish")


def test_plain_urdf_is_unchanged():
    model = load_urdf(DATA / "mixed_tree.urdf")
    assert not model.has_constraints
    assert model.constraints == []
    assert model.nv == model.spanning_nv and model.nq == model.spanning_nq
    assert all(b.independent for b in model.bodies)


# ----------------------------------------------------------------------------------------------
# errors
ERRORS = [
    # (document, message regex, line)
    (geared(pred="nolink"), "coupling 'gear': link 'nolink' is not defined", 6),
    (geared(succ="nolink"), "coupling 'gear': link 'nolink' is not defined", 7),
    (four_bar(pred="nolink"), "loop 'loop1': link 'nolink' is not defined", 9),
    (four_bar(succ="nolink"), "loop 'loop1': link 'nolink' is not defined", 10),
    (geared(ratio=""), "coupling 'gear': no <ratio> element", 5),
    (geared(ratio="<ratio/>"), "coupling 'gear': <ratio> has no 'value' attribute", 8),
    (geared(ratio='<ratio value="inf"/>'), "ratio: 'inf' is not a number", 8),
    (geared(ratio='<ratio value="nan"/>'), "ratio: 'nan' is not a number", 8),
    (geared(ratio='<ratio value="1e999"/>'), "ratio: '1e999' is not a finite number", 8),
    (geared(ratio='<ratio value="six"/>'), "ratio: 'six' is not a number", 8),
    (geared(ratio='<ratio value="0"/>'), "the ratio must be non-zero", 8),
    (four_bar("hinge"), "loop 'loop1': unknown loop type 'hinge'", 8),
    (
        four_bar().replace('<loop name="loop1" type="revolute">', '<loop name="loop1">'),
        "<loop> has no 'type'",
        8,
    ),
    (four_bar(axis='<axis xyz="0 0 0"/>'), "loop 'loop1': the axis has zero length", 11),
    (four_bar(pred_xyz="1 0"), "loop 'loop1' predecessor: origin xyz: expected 3 numbers", 9),
    (
        four_bar().replace('<predecessor link="link2">', "<predecessor>"),
        "loop 'loop1': <predecessor> has no 'link'",
        9,
    ),
    (
        four_bar().replace('<successor link="link3"><origin xyz="0.5 0 0"/></successor>', ""),
        "loop 'loop1': no <successor>",
        8,
    ),
    # flags that do not fit the constraints are reported at a constraint of the cluster
    (
        four_bar(flags=("true", "true", "false")),
        "loop 'loop1': cluster .* 2 joint\\(s\\) are marked independent",
        8,
    ),
    (
        geared(flags=("false", "false")),
        "coupling 'gear': cluster .* 0 joint\\(s\\) are marked independent",
        5,
    ),
    # a coupling relates joint coordinates: not on the fixed root link or a merged link
    (
        geared(pred="ground"),
        "coupling 'gear': link 'ground' has no joint coordinate \\(it is the root link",
        6,
    ),
    (
        geared(succ="cap", extra=LINK.format("cap") + joint("j_cap", "rotor", "cap", jtype="fixed")),
        "link 'cap' has no joint coordinate \\(it is merged into 'rotor' by the fixed joint 'j_cap'\\)",
        7,
    ),
    # a loop between two links of one body ties nothing
    (four_bar(pred="link3", succ="link3"), "loop 'loop1': .*ties no moving body", 8),
]


@pytest.mark.parametrize("doc, message, line", ERRORS)
def test_urdf_plus_errors(doc, message, line):
    with pytest.raises(URDFError, match=message) as info:
        load_urdf(doc)
    assert info.value.line == line


def test_duplicate_constraint_names():
    second = (
        '<coupling name="gear"><predecessor link="link"/><successor link="rotor"/>'
        '<ratio value="2"/></coupling>'
    )
    doc = geared().replace("</robot>", second + "\n</robot>")
    with pytest.raises(
        URDFError, match="duplicate constraint name 'gear' \\(first defined at line 5"
    ) as info:
        load_urdf(doc)
    assert info.value.line == 10
    loop = '<loop name="loop1" type="point"><predecessor link="link2"/><successor link="link3"/></loop>'
    doc = four_bar().replace("</robot>", loop + "\n</robot>")
    with pytest.raises(URDFError, match="duplicate constraint name 'loop1'") as info:
        load_urdf(doc)
    assert info.value.line == 13
    # loops and couplings share a namespace
    doc = four_bar().replace(
        "</robot>",
        second.replace("gear", "loop1").replace('"link"', '"link1"').replace('"rotor"', '"link2"')
        + "\n</robot>",
    )
    with pytest.raises(URDFError, match="duplicate constraint name 'loop1'"):
        load_urdf(doc)


def test_error_names_the_file(tmp_path):
    path = tmp_path / "bad.urdf"
    path.write_text(geared(pred="nolink"))
    with pytest.raises(URDFError) as info:
        load_urdf(path)
    assert info.value.source == str(path)
    assert str(info.value).startswith(f"{path}:6: ")


def test_continuous_joint_inside_a_cluster_is_unsupported():
    doc = geared().replace('name="j_rotor" type="revolute"', 'name="j_rotor" type="continuous"')
    with pytest.raises(UnsupportedFeatureError, match="only revolute and prismatic") as info:
        load_urdf(doc)
    assert info.value.line == 5


# ----------------------------------------------------------------------------------------------
# states (loopdyn.model.state)
STATE_FILES = [r[0] for r in REFERENCE]


@pytest.mark.parametrize("filename", STATE_FILES)
def test_random_configurations_satisfy_the_constraints(filename):
    model = load_urdf(ref(filename), inertia="accept")
    rng = np.random.default_rng(7)
    for _ in range(10):
        q = state.random_configuration(model, rng)
        assert q.shape == (model.nq,)
        r = state.constraint_residual(model, q)
        assert (np.max(np.abs(r)) if r.size else 0.0) <= 1e-12
