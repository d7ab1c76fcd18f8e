"""URDF+ ``<loop type="universal">`` (``<axis>`` fixed to the predecessor, ``<axis2>`` fixed to the
successor, each in its own constraint frame) → ``Model.add_loop(kind="universal")``.

The mechanism is an R-S-U-R linkage: the RSSR of :func:`loopdyn.robots.rssr_linkage` (crank about z,
rocker about x, non-parallel and non-intersecting ground axes) with the rocker-end ball replaced by a
universal joint whose axes are the rod's z (fixed to the rod) and the rocker's pivot axis x (fixed to
the rocker). The universal joint also fixes the rod's spin, so the mechanism has 1 DoF (the crank)
where the RSSR has 2. The successor's constraint frame is turned by Rz(π/2), so the file writes the
rocker's x as ``<axis2 xyz="0 -1 0">`` — the test of the frame ``<axis2>`` is expressed in.

Oracles:

* the same mechanism built in code with ``Model.add_loop(kind="universal")``: the loaded model's
  CRBA, ABA and RNEA equal the built one's on random states (1e-12; also with the successor frame on
  a link merged by a fixed joint); likewise :func:`loopdyn.robots.delta_robot` (two universal loops,
  itself checked against a Pinocchio KKT oracle) written out as URDF+;
* **Pinocchio** parsing the same file (its URDF parser skips the ``<loop>``): at random
  configurations of the loaded model (found by loopdyn's own loop solver), Pinocchio's forward
  kinematics of the spanning tree puts the two constraint-frame origins at one point and the
  predecessor's axis perpendicular to the successor's, computed from the numbers of the file, not
  from the loaded constraint;
* negative control: the same file with ``type="spherical"`` has one more DoF, one row less, and its
  axes are not perpendicular at its random configurations.
"""

from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
import pytest

import loopdyn
from loopdyn.errors import URDFError
from loopdyn.io.urdf import LOOP_TYPE_KINDS, LOOP_TYPES, load_urdf
from loopdyn.model.joints import Revolute
from loopdyn.spatial.inertia import Inertia

N_STATES = 20
TOL = 1e-12

# geometry (m): crank radius, rocker length, rocker pivot; crank tip and rocker tip at q = 0
R_CRANK, L_ROCKER = 0.04, 0.10
PIVOT = np.array([0.0, 0.18, 0.10])
C0 = np.array([R_CRANK, 0.0, 0.0])
D0 = PIVOT + np.array([0.0, 0.0, -L_ROCKER])
U = D0 - C0
L_ROD = float(np.linalg.norm(U))
PSI = math.atan2(U[1], U[0])  # the gimbal frame: Rz(PSI), x along the rod at q = 0
#: the constraint frames (in the rod's and the rocker's frames) and the axes (in those frames)
PRED_ORIGIN = np.array([L_ROD, 0.0, 0.0])
SUCC_ORIGIN = np.array([0.0, 0.0, -L_ROCKER])
SUCC_YAW = math.pi / 2
AXIS = np.array([0.0, 0.0, 1.0])  # the rod's z, in the rod's constraint frame
AXIS2 = np.array([0.0, -1.0, 0.0])  # the rocker's x, in the successor frame Rz(π/2)
LIMIT = 3.0
#: (name, mass, centre of mass, principal moments) of the massive links
INERTIAS = {
    "crank": (0.05, (0.02, 0.0, 0.0), (1e-6, 7e-6, 7e-6)),
    "rod": (0.12, (L_ROD / 2, 0.0, 0.0), (1.2e-5, 3.5e-4, 3.6e-4)),
    "rocker": (0.08, (0.0, 0.0, -0.05), (6.8e-5, 6.9e-5, 2e-6)),
}


def fmt(v) -> str:
    return " ".join(repr(float(x)) for x in v)


def link(name: str) -> str:
    if name not in INERTIAS:
        return f'<link name="{name}"/>'
    m, com, (ixx, iyy, izz) = INERTIAS[name]
    return (
        f'<link name="{name}"><inertial><origin xyz="{fmt(com)}"/><mass value="{m!r}"/>'
        f'<inertia ixx="{ixx!r}" ixy="0" ixz="0" iyy="{iyy!r}" iyz="0" izz="{izz!r}"/></inertial></link>'
    )


def joint(name, parent, child, axis, xyz=(0, 0, 0), rpy=(0, 0, 0), independent="false") -> str:
    flag = "" if independent is None else f' independent="{independent}"'
    return (
        f'<joint name="{name}" type="revolute"{flag}><parent link="{parent}"/>'
        f'<child link="{child}"/><origin xyz="{fmt(xyz)}" rpy="{fmt(rpy)}"/><axis xyz="{fmt(axis)}"/>'
        f'<limit lower="{-LIMIT!r}" upper="{LIMIT!r}" effort="1" velocity="1"/></joint>'
    )


AXIS_EL = f'<axis xyz="{fmt(AXIS)}"/>'
AXIS2_EL = f'<axis2 xyz="{fmt(AXIS2)}"/>'


def rsur(
    loop_type="universal",
    axis=AXIS_EL,
    axis2=AXIS2_EL,
    name="ujoint",
    flags=True,
) -> str:
    """The R-S-U-R linkage as URDF+, one element per line: the <loop> is on line 10, its <axis> on
    13 and its <axis2> on 14. ``flags``: the crank is independent, and the rod's spin too unless the
    loop is universal (which fixes the spin); ``False``: no ``independent`` attributes (the cluster
    chooses)."""
    spin = "false" if loop_type == "universal" else "true"
    crank, other = ("true", "false") if flags else (None, None)
    spin = spin if flags else None
    ex, ey, ez = (1, 0, 0), (0, 1, 0), (0, 0, 1)
    links = ("base_link", "crank", "rod_massless1", "rod_massless2", "rod", "rocker")
    return "\n".join(
        [
            '<robot name="rsur">',
            "".join(link(n) for n in links),
            joint("crank", "base_link", "crank", ez, independent=crank),
            joint("rod_1", "crank", "rod_massless1", ez, xyz=C0, rpy=(0, 0, PSI), independent=other),
            joint("rod_2", "rod_massless1", "rod_massless2", ey, independent=other),
            joint("rod_3", "rod_massless2", "rod", ex, independent=spin),
            joint("rocker", "base_link", "rocker", ex, xyz=PIVOT, independent=other),
            "<!-- -->",
            "<!-- -->",
            f'<loop name="{name}" type="{loop_type}">',
            f'<predecessor link="rod"><origin xyz="{fmt(PRED_ORIGIN)}"/></predecessor>',
            f'<successor link="rocker"><origin xyz="{fmt(SUCC_ORIGIN)}" rpy="0 0 {SUCC_YAW!r}"/></successor>',
            axis or "<!-- -->",
            axis2 or "<!-- -->",
            "</loop>",
            "</robot>",
        ]
    )


def rz(t: float) -> np.ndarray:
    c, s = math.cos(t), math.sin(t)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def built_in_code() -> loopdyn.Model:
    """The same mechanism with the Model API (the loop as ``add_loop(kind="universal")``)."""

    def inertia(name):
        if name not in INERTIAS:
            return Inertia.zero()
        m, com, moments = INERTIAS[name]
        return Inertia(m, np.array(com, float), np.diag(moments))

    def rev(axis):
        return Revolute(axis, lower=-LIMIT, upper=LIMIT, velocity=1.0, effort=1.0)

    m = loopdyn.Model("rsur")
    rows = [  # body, parent, axis, placement, joint, independent
        ("crank", 0, (0, 0, 1), None, "crank", True),
        ("rod_massless1", "crank", (0, 0, 1), (rz(PSI), C0), "rod_1", False),
        ("rod_massless2", "rod_massless1", (0, 1, 0), None, "rod_2", False),
        ("rod", "rod_massless2", (1, 0, 0), None, "rod_3", False),
        ("rocker", 0, (1, 0, 0), (np.eye(3), PIVOT), "rocker", False),
    ]
    for body, parent, axis, placement, name, independent in rows:
        m.add_body(
            body, parent, rev(axis), placement, inertia(body), joint_name=name, independent=independent
        )
    m.add_loop(
        "ujoint",
        "rod",
        "rocker",
        "universal",
        predecessor_placement=(np.eye(3), PRED_ORIGIN),
        successor_placement=(rz(SUCC_YAW), SUCC_ORIGIN),
        axis=AXIS,
        successor_axis=AXIS2,
    )
    m.clusters()
    return m


def rel_err(a, b) -> float:
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.max(np.abs(a - b))) / max(1e-300, float(np.max(np.abs(b))))


def assert_same_dynamics(a: loopdyn.Model, b: loopdyn.Model, seed: int, n: int, with_rnea=False):
    """crba and aba (and rnea) of ``a`` and ``b`` agree to TOL at ``n`` random states of ``a``."""
    da, db = a.create_data(), b.create_data()
    rng = np.random.default_rng(seed)
    for _ in range(n):
        q = loopdyn.random_configuration(a, rng)
        v, tau, acc = (rng.normal(size=a.nv) for _ in range(3))
        assert rel_err(loopdyn.crba(a, da, q), loopdyn.crba(b, db, q)) <= TOL
        assert rel_err(loopdyn.aba(a, da, q, v, tau), loopdyn.aba(b, db, q, v, tau)) <= TOL
        if with_rnea:
            assert rel_err(loopdyn.rnea(a, da, q, v, acc), loopdyn.rnea(b, db, q, v, acc)) <= TOL


@pytest.fixture(scope="module")
def loaded() -> loopdyn.Model:
    return load_urdf(rsur())


# ---- the mapping ----------------------------------------------------------------------------------
def test_universal_is_a_known_loop_type():
    assert LOOP_TYPE_KINDS["universal"] == "universal"
    assert "universal" in LOOP_TYPES


def test_loaded_constraint_and_structure(loaded):
    (con,) = loaded.constraints
    assert (con.name, con.kind, con.predecessor, con.successor) == ("ujoint", "universal", "rod", "rocker")
    np.testing.assert_array_equal(con.axis, AXIS)
    np.testing.assert_array_equal(con.successor_axis, AXIS2)
    np.testing.assert_allclose(con.successor_placement[0], rz(SUCC_YAW), rtol=0, atol=1e-16)
    np.testing.assert_array_equal(con.successor_placement[1], SUCC_ORIGIN)
    (c,) = loaded.clusters().clusters
    assert (loaded.spanning_nq, loaded.nq, loaded.nv) == (5, 5, 1)
    assert (c.rows_total, len(c.rows)) == (4, 4)
    assert loaded.velocity_names == ["crank"]
    assert np.max(np.abs(loopdyn.constraint_residual(loaded, loopdyn.neutral(loaded)))) <= 1e-13


def test_axes_are_normalised():
    """Axes are unit vectors after loading, whatever their written length."""
    m = load_urdf(rsur(axis='<axis xyz="0 0 2.5"/>', axis2='<axis2 xyz="0 -0.25 0"/>'))
    np.testing.assert_array_equal(m.constraints[0].axis, AXIS)
    np.testing.assert_array_equal(m.constraints[0].successor_axis, AXIS2)


# ---- (1) same dynamics as the mechanism built in code --------------------------------------------
def test_same_dynamics_as_built_in_code(loaded):
    built = built_in_code()
    assert loaded.joint_names == built.joint_names
    assert loaded.velocity_names == built.velocity_names
    assert (loaded.nq, loaded.nv, loaded.spanning_nq) == (built.nq, built.nv, built.spanning_nq)
    np.testing.assert_allclose(
        loaded.clusters().clusters[0].q_ref, built.clusters().clusters[0].q_ref, rtol=0, atol=1e-14
    )
    assert_same_dynamics(loaded, built, 11, N_STATES, with_rnea=True)


def test_negative_control_different_loop_breaks_the_agreement(loaded):
    """Built with the successor axis turned (the rocker's y instead of x): other dynamics."""
    ref = built_in_code()
    built = loopdyn.Model("other")
    for i, b in enumerate(ref.bodies, start=1):
        placement = (b.rotation, b.translation)
        parent = ref.body_names[b.parent]
        built.add_body(
            ref.body_names[i],
            parent,
            b.joint,
            placement,
            b.inertia,
            joint_name=b.joint_name,
            independent=b.independent,
        )
    con = ref.constraints[0]
    placements = (con.predecessor_placement, con.successor_placement)
    built.add_loop(con.name, "rod", "rocker", "universal", *placements, axis=AXIS, successor_axis=(1, 0, 0))
    dl, db = loaded.create_data(), built.create_data()
    q = loopdyn.neutral(loaded)
    assert rel_err(loopdyn.crba(loaded, dl, q), loopdyn.crba(built, db, q)) > 1e-3


def test_loop_end_on_a_link_merged_by_a_fixed_joint():
    """The successor is a link welded to the rocker at the constraint frame: the frame (and <axis2>,
    expressed in it) are carried over to the rocker; same dynamics as the mechanism built in code."""
    tip = (
        '<link name="rocker_tip"/><joint name="tip" type="fixed"><parent link="rocker"/>'
        f'<child link="rocker_tip"/><origin xyz="{fmt(SUCC_ORIGIN)}" rpy="0 0 {SUCC_YAW!r}"/></joint>'
    )
    doc = rsur().split("\n")
    doc[7] = tip  # line 8, a comment in rsur()
    doc[11] = '<successor link="rocker_tip"/>'
    merged, built = load_urdf("\n".join(doc)), built_in_code()
    (con,) = merged.constraints
    assert con.successor == "rocker"
    np.testing.assert_allclose(con.successor_placement[0], rz(SUCC_YAW), rtol=0, atol=1e-16)
    assert_same_dynamics(merged, built, 12, 5)


# ---- (1b) the delta robot (two universal loops) written as URDF+ ---------------------------------
def model_as_urdf(model: loopdyn.Model) -> str:
    """A model of revolute joints and loop joints written as URDF+ (placements as xyz + rpy)."""
    from loopdyn.spatial import matrix_to_rpy

    def origin(R, p) -> str:
        return f'<origin xyz="{fmt(p)}" rpy="{fmt(matrix_to_rpy(R))}"/>'

    out = [f'<robot name="{model.name}">', '<link name="base_link"/>']
    for i, b in enumerate(model.bodies, start=1):
        I, m = b.inertia, b.inertia.mass
        if m > 0:
            t = I.inertia
            tensor = " ".join(
                f'{k}="{float(t[r, c])!r}"'
                for k, (r, c) in zip(
                    ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"),
                    ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2)),
                    strict=True,
                )
            )
            inertial = (
                f'<inertial><origin xyz="{fmt(I.com)}"/><mass value="{m!r}"/><inertia {tensor}/></inertial>'
            )
        else:
            inertial = ""
        out.append(f'<link name="{model.body_names[i]}">{inertial}</link>')
        lo, hi = (float(x) for x in (b.joint.lower_position()[0], b.joint.upper_position()[0]))
        lo, hi = (lo, hi) if math.isfinite(lo) and math.isfinite(hi) else (-LIMIT, LIMIT)
        parent = "base_link" if b.parent == 0 else model.body_names[b.parent]
        out.append(
            f'<joint name="{b.joint_name}" type="revolute" independent="{str(b.independent).lower()}">'
            f'<parent link="{parent}"/><child link="{model.body_names[i]}"/>'
            f'{origin(b.rotation, b.translation)}<axis xyz="{fmt(b.joint.axis)}"/>'
            f'<limit lower="{lo!r}" upper="{hi!r}" effort="1" velocity="1"/></joint>'
        )
    for con in model.constraints:
        out.append(
            f'<loop name="{con.name}" type="{con.kind}">'
            f'<predecessor link="{con.predecessor}">{origin(*con.predecessor_placement)}</predecessor>'
            f'<successor link="{con.successor}">{origin(*con.successor_placement)}</successor>'
            f'<axis xyz="{fmt(con.axis)}"/><axis2 xyz="{fmt(con.successor_axis)}"/></loop>'
        )
    out.append("</robot>")
    return "\n".join(out)


def test_delta_robot_as_urdf_plus():
    """loopdyn.robots.delta_robot() (checked against a Pinocchio KKT oracle in
    test_parallel_mechanisms.py) written as URDF+ with its two universal loops: same model."""
    delta = loopdyn.robots.delta_robot()
    loaded = load_urdf(model_as_urdf(delta))
    assert loaded.joint_names == delta.joint_names and loaded.velocity_names == delta.velocity_names
    assert [c.kind for c in loaded.constraints] == ["universal", "universal"]
    for a, b in zip(loaded.constraints, delta.constraints, strict=True):
        np.testing.assert_allclose(a.axis, b.axis, rtol=0, atol=1e-15)
        np.testing.assert_allclose(a.successor_axis, b.successor_axis, rtol=0, atol=1e-15)
    assert_same_dynamics(loaded, delta, 13, N_STATES)


# ---- (2) the loaded constraint is a universal joint (Pinocchio's kinematics of the same file) ----
def pinocchio_loop_frames(doc: str):
    """Pinocchio's model of the spanning tree (its parser skips <loop>), and a function giving the
    two constraint frames in the world at a loopdyn spanning configuration."""
    pm = pin.buildModelFromXML(doc)
    pd = pm.createData()
    pred_local = pin.SE3(np.eye(3), PRED_ORIGIN)
    succ_local = pin.SE3(pin.rpy.rpyToMatrix(0.0, 0.0, SUCC_YAW), SUCC_ORIGIN)

    def frames(model: loopdyn.Model, q_span):
        names = loopdyn.spanning_tree(model).joint_names
        qp = np.array([q_span[names.index(pm.names[j]) - 1] for j in range(1, pm.njoints)])
        pin.forwardKinematics(pm, pd, qp)
        return (pd.oMi[pm.getJointId("rod_3")] * pred_local, pd.oMi[pm.getJointId("rocker")] * succ_local)

    return frames


def test_loop_frames_are_a_universal_joint(loaded):
    frames = pinocchio_loop_frames(rsur())
    rng = np.random.default_rng(5)
    cranks = []
    for _ in range(N_STATES):
        q = loopdyn.random_configuration(loaded, rng)
        cranks.append(q[0])
        qs, _ = loopdyn.to_spanning(loaded, q)
        A, B = frames(loaded, qs)
        np.testing.assert_allclose(A.translation, B.translation, rtol=0, atol=1e-11)
        a_world, b_world = A.rotation @ AXIS, B.rotation @ AXIS2
        assert abs(a_world @ b_world) <= 1e-11
        # the predecessor axis is the rod's z, the successor's the rocker's pivot axis (world x)
        np.testing.assert_allclose(b_world, [1.0, 0.0, 0.0], rtol=0, atol=1e-12)
    assert np.ptp(cranks) > 1.0  # the crank does move


def test_spherical_negative_control(loaded):
    """The same file with type="spherical": 3 rows instead of 4, the rod's spin free (2 DoF), and the
    axes no longer perpendicular at its configurations."""
    doc = rsur("spherical", axis2="")
    ball = load_urdf(doc)
    assert ball.constraints[0].kind == "point"
    assert (ball.nv, loaded.nv) == (2, 1)
    assert (ball.clusters().clusters[0].rows_total, loaded.clusters().clusters[0].rows_total) == (3, 4)
    frames = pinocchio_loop_frames(doc)
    rng = np.random.default_rng(6)
    worst = 0.0
    for _ in range(N_STATES):
        qs, _ = loopdyn.to_spanning(ball, loopdyn.random_configuration(ball, rng))
        A, B = frames(ball, qs)
        np.testing.assert_allclose(A.translation, B.translation, rtol=0, atol=1e-11)  # still a ball
        worst = max(worst, abs((A.rotation @ AXIS) @ (B.rotation @ AXIS2)))
    assert worst > 0.1


# ---- (3) errors -----------------------------------------------------------------------------------
def with_axis2(axis2_line: str, loop_type: str) -> str:
    return rsur(loop_type, axis='<axis xyz="1 0 0"/>', axis2=axis2_line)


ERRORS = [
    # (document, message regex, line)
    (rsur(axis2=""), r"loop 'ujoint': a universal loop needs an <axis2> element", 10),
    (rsur(axis=""), r"loop 'ujoint': a universal loop needs an <axis> element", 10),
    (rsur(axis='<axis xyz="0 0 0"/>'), r"loop 'ujoint': the axis has zero length", 13),
    (rsur(axis2='<axis2 xyz="0 0 0"/>'), r"loop 'ujoint': the axis2 has zero length", 14),
    (rsur(axis2='<axis2 xyz="0 1"/>'), r"loop 'ujoint': axis2: expected 3 numbers", 14),
    (rsur(axis2="<axis2/>"), r"loop 'ujoint': <axis2> has no 'xyz'", 14),
    (with_axis2('<axis2 xyz="0 1 0"/>', "revolute"), r"loop 'ujoint': <axis2> .* type 'revolute'", 14),
    (with_axis2('<axis2 xyz="0 1 0"/>', "spherical"), r"loop 'ujoint': <axis2> .* type 'spherical'", 14),
]


@pytest.mark.parametrize("doc, message, line", ERRORS)
def test_errors(doc, message, line):
    with pytest.raises(URDFError, match=message) as info:
        load_urdf(doc)
    assert info.value.line == line
    assert f"line {line}" in str(info.value)


def test_axis2_on_a_non_universal_loop_is_refused_in_point_mode_too():
    with pytest.raises(URDFError, match=r"loop 'ujoint': <axis2>") as info:
        load_urdf(with_axis2('<axis2 xyz="0 1 0"/>', "revolute"), loops="point")
    assert info.value.line == 14


def test_never_perpendicular_axes_are_refused_by_the_builder():
    """Axes that are perpendicular nowhere: two links turning about parallel vertical axes, each
    carrying its own vertical axis. The origins can meet but the axes stay parallel, so the loop
    cannot close; the builder's ModelError comes back as a URDFError naming the loop and its line."""
    doc = "\n".join(
        [
            '<robot name="stuck">',
            link("base_link") + link("crank") + link("rocker"),
            joint("crank", "base_link", "crank", (0, 0, 1), independent="true"),
            joint("rocker", "base_link", "rocker", (0, 0, 1), xyz=(1, 0, 0)),
            '<loop name="never" type="universal">',
            '<predecessor link="crank"><origin xyz="0.5 0 0"/></predecessor>',
            '<successor link="rocker"><origin xyz="-0.5 0 0"/></successor>',
            '<axis xyz="0 0 1"/>',
            '<axis2 xyz="0 0 1"/>',
            "</loop>",
            "</robot>",
        ]
    )
    with pytest.raises(URDFError, match=r"loop 'never'.*no configuration") as info:
        load_urdf(doc)
    assert info.value.line == 5


# ---- (4) loops="point" ------------------------------------------------------------------------------
def test_point_mode_ignores_type_and_axes():
    """loops="point" reads the universal loop as a ball (GRBDA's reading): the rod's spin is free, so
    the file is loaded without ``independent`` flags (the cluster chooses its coordinates)."""
    point = load_urdf(rsur(flags=False), loops="point")
    ball = load_urdf(rsur("spherical", axis2="", flags=False))
    (con,) = point.constraints
    assert con.kind == "point" and con.successor_axis is None
    assert point.nv == ball.nv == 2
    assert point.clusters().clusters[0].rows_total == 3
    # axes are not read at all: missing, zero-length or malformed ones are accepted
    for doc in (
        rsur(axis2="", flags=False),
        rsur(axis="", flags=False),
        rsur(axis='<axis xyz="0 0 0"/>', axis2='<axis2 xyz="0 0 0"/>', flags=False),
        rsur(axis2='<axis2 xyz="zero"/>', flags=False),
    ):
        m = load_urdf(doc, loops="point")
        assert m.constraints[0].kind == "point" and m.nv == 2
    assert_same_dynamics(point, ball, 3, 5)


def test_point_mode_keeps_the_flags_of_the_file():
    """The flags written for the universal loop (rod spin dependent) do not fit a ball closure: the
    file's inconsistency under loops="point" is reported, not papered over."""
    with pytest.raises(URDFError, match=r"loop 'ujoint': cluster .* 2 independent coordinate") as info:
        load_urdf(rsur(), loops="point")
    assert info.value.line == 10
