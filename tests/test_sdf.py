"""Tests of :func:`loopdyn.load_sdf`.

Oracles, none of which comes from the loader:

* trees: example-robot-data URDFs rewritten as SDF by this test (link frames moved off the joint frames
  by random offsets, axes in the joint or the model frame) against Pinocchio's model of the URDF;
* kinematics: on Cassie's SDF files, every tree joint (reversed ones included) against the SDF
  definition ``X_PC(θ) = X_PJ₀ · motion(axis, θ) · X_JC`` computed here from the file with ElementTree;
  every gearbox's angles, measured from the link placements, satisfy ``θ₂ = −ratio · θ₁``;
* loops: C-ABA on Cassie (spherical loops) against Pinocchio's constraint dynamics on the spanning tree,
  and (gearboxes + loops) against the projection baseline;
* malformed and unsupported documents: specific errors with line numbers.
"""

from __future__ import annotations

import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
import trees

import loopdyn
from loopdyn.errors import (
    InertiaWarning,
    InputError,
    JointConversionWarning,
    SDFError,
    UnsupportedFeatureError,
)

ERD = Path(trees.example_robot_data_dir())
CASSIE = ERD / "cassie_description" / "robots"
RTOL = 1e-9


def _need(path):
    """``path`` from example-robot-data, a test dependency: missing is a failure, not a skip."""
    assert Path(path).exists(), f"{path} not found: is example-robot-data (a test dependency) installed?"
    return path


def rpy(r, p, y):
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    Rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    Ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    Rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return Rz @ Ry @ Rx


def T(R=None, p=None):
    out = np.eye(4)
    if R is not None:
        out[:3, :3] = R
    if p is not None:
        out[:3, 3] = p
    return out


def matrix_to_rpy(R):
    pitch = np.arcsin(-np.clip(R[2, 0], -1, 1))
    return np.arctan2(R[2, 1], R[2, 2]), pitch, np.arctan2(R[1, 0], R[0, 0])


def pose_text(X):
    return " ".join(repr(float(x)) for x in (*X[:3, 3], *matrix_to_rpy(X[:3, :3])))


def axis_rotation(a, th):
    a = np.asarray(a, float) / np.linalg.norm(a)
    K = trees.skew(a)
    return np.eye(3) + np.sin(th) * K + (1 - np.cos(th)) * K @ K


def rel_close(actual, expected, what, rtol=RTOL):
    scale = max(1.0, float(np.max(np.abs(expected))))
    err = float(np.max(np.abs(np.asarray(actual) - expected)))
    assert err <= rtol * scale, f"{what}: max error {err:.3e} (scale {scale:.3e})"


# ---------------------------------------------------------------------------------------------
# the SDF definition, read independently with ElementTree
class SdfSpec:
    def __init__(self, text: str):
        model = ET.fromstring(text).find("model")
        self.links, self.joints = {}, {}
        self.links["world"] = np.linalg.inv(self._pose(model))  # the world frame in the model frame
        for link in model.findall("link"):
            self.links[link.get("name")] = self._pose(link)
        for j in model.findall("joint"):
            axes = []
            for tag in ("axis", "axis2"):
                el = j.find(tag)
                a = np.array([0.0, 0.0, 1.0]) if el is None else np.array(el.find("xyz").text.split(), float)
                upm = el is not None and el.find("use_parent_model_frame") is not None
                upm = upm and el.find("use_parent_model_frame").text.strip() in ("1", "true")
                axes.append((a / np.linalg.norm(a), upm))
            ref = j.find("gearbox_reference_body")
            ratio = j.find("gearbox_ratio")
            self.joints[j.get("name")] = dict(
                type=j.get("type"),
                parent=j.find("parent").text,
                child=j.find("child").text,
                pose=self._pose(j),
                axes=axes,
                reference=None if ref is None else ref.text,
                ratio=None if ratio is None else float(ratio.text),
            )

    @staticmethod
    def _pose(el):
        p = el.find("pose")
        if p is None or not p.text or not p.text.strip():
            return np.eye(4)
        x = np.array(p.text.split(), float)
        return T(rpy(*x[3:]), x[:3])

    def axis_in_model(self, name, k=0):
        j = self.joints[name]
        a, upm = j["axes"][k]
        XJ = self.links[j["child"]] @ j["pose"]
        return a if upm else XJ[:3, :3] @ a

    def expected_relative(self, name, theta):
        """X_P_C(θ) from the definition: joint frame J on the child, J₀ its zero-configuration copy on
        the parent; motion about/along the axis (given in J, or in the model frame)."""
        j = self.joints[name]
        XM_P, XM_C, X_C_J = self.links[j["parent"]], self.links[j["child"]], j["pose"]
        XM_J = XM_C @ X_C_J
        X_P_J0 = np.linalg.inv(XM_P) @ XM_J
        a_J = XM_J[:3, :3].T @ self.axis_in_model(name)
        if j["type"] == "revolute":
            motion = T(axis_rotation(a_J, theta))
        elif j["type"] == "prismatic":
            motion = T(np.eye(3), a_J * theta)
        elif j["type"] == "ball":
            motion = T(trees.quat_to_matrix(theta))
        else:
            motion = np.eye(4)
        return X_P_J0 @ motion @ np.linalg.inv(X_C_J)


def _coordinates(tree, name):
    b = tree.bodies[tree.joint_id(name) - 1]
    return slice(b.idx_q, b.idx_q + b.joint.nq)


def check_joint_definitions(model, spec: SdfSpec, seed: int, n: int = 5) -> int:
    """Every tree joint of ``model``, at random spanning configurations, moves its SDF child relative
    to its SDF parent as the SDF definition says. Returns the number of joints checked."""
    tree = loopdyn.spanning_tree(model)
    data = tree.create_data()
    rng = np.random.default_rng(seed)
    checked = 0
    for _ in range(n):
        q = loopdyn.random_configuration(tree, rng)
        loopdyn.forward_kinematics(tree, data, q)
        place = {name: loopdyn.frame_placement(tree, data, name) for name in spec.links if name != "world"}
        checked = 0
        for name, j in spec.joints.items():
            if j["type"] == "gearbox" or name not in tree.joint_names[1:] and j["type"] != "fixed":
                continue
            if j["type"] == "fixed":
                theta = None
            else:
                theta = q[_coordinates(tree, name)]
                theta = theta if j["type"] == "ball" else float(theta[0])
                if j["type"] == "ball" and tree.bodies[tree.joint_id(name) - 1].name == j["parent"]:
                    theta = theta * [-1, -1, -1, 1]  # reversed: the coordinate is the inverse rotation
            XP = place[j["parent"]] if j["parent"] != "world" else np.eye(4)
            actual = np.linalg.inv(XP) @ place[j["child"]]
            rel_close(actual, spec.expected_relative(name, theta), f"joint {name!r}", 1e-11)
            checked += 1
    return checked


# ---------------------------------------------------------------------------------------------
# URDF → SDF (written here) against Pinocchio's URDF model
def urdf_to_sdf(path: Path, seed: int) -> str:
    """The robot of a URDF file as an SDF model with the same joint frames: link frames moved by random
    offsets (joint <pose> = inverse offset), inertial poses adjusted, axes in the joint or model frame."""
    rng = np.random.default_rng(seed)
    robot = ET.parse(path).getroot()

    def origin(el):
        o = None if el is None else el.find("origin")
        if o is None:
            return np.eye(4)
        xyz = np.array(o.get("xyz", "0 0 0").split(), float)
        return T(rpy(*np.array(o.get("rpy", "0 0 0").split(), float)), xyz)

    joints = robot.findall("joint")
    child_of = {j.find("child").get("link"): j for j in joints}
    links = robot.findall("link")
    root = next(link.get("name") for link in links if link.get("name") not in child_of)
    XM = {root: np.eye(4)}
    pending = list(joints)
    while pending:
        j = pending.pop(0)
        parent = j.find("parent").get("link")
        if parent not in XM:
            pending.append(j)
            continue
        XM[j.find("child").get("link")] = XM[parent] @ origin(j)
    offset = {}
    for link in links:
        name = link.get("name")
        if name == root:
            offset[name] = np.eye(4)
        else:
            offset[name] = T(trees.random_rotation(rng), rng.uniform(-0.2, 0.2, 3))
    out = ['<sdf version="1.6"><model name="converted">']
    for link in sorted(links, key=lambda link: link.get("name") != root):  # the root first (canonical)
        name = link.get("name")
        if name == "world":  # SDF's reserved name: joints to it attach the model to the world
            del offset[name]
            continue
        out.append(f'<link name="{name}"><pose>{pose_text(XM[name] @ offset[name])}</pose>')
        inertial = link.find("inertial")
        if inertial is not None:
            I_el = inertial.find("inertia")
            keys = ("ixx", "iyy", "izz", "ixy", "ixz", "iyz")
            tensor = "".join(f"<{k}>{I_el.get(k, '0')}</{k}>" for k in keys)
            X_I = np.linalg.inv(offset[name]) @ origin(inertial)
            mass = inertial.find("mass").get("value")
            out.append(
                f"<inertial><pose>{pose_text(X_I)}</pose><mass>{mass}</mass><inertia>{tensor}</inertia>"
                "</inertial>"
            )
        else:
            out.append(
                "<inertial><mass>0</mass><inertia><ixx>0</ixx><iyy>0</iyy><izz>0</izz></inertia></inertial>"
            )
        out.append("</link>")
    for j in joints:
        jtype = j.get("type")
        child = j.find("child").get("link")
        pose = np.linalg.inv(offset[child])
        out.append(
            f'<joint name="{j.get("name")}" type="{jtype}"><parent>{j.find("parent").get("link")}</parent>'
            f"<child>{child}</child><pose>{pose_text(pose)}</pose>"
        )
        if jtype in ("revolute", "prismatic"):
            a = np.array(
                (j.find("axis").get("xyz") if j.find("axis") is not None else "1 0 0").split(), float
            )
            if rng.random() < 0.5:
                out.append(f"<axis><xyz>{' '.join(map(repr, a.tolist()))}</xyz></axis>")
            else:
                aM = XM[child][:3, :3] @ a
                out.append(
                    f"<axis><xyz>{' '.join(map(repr, aM.tolist()))}</xyz>"
                    "<use_parent_model_frame>1</use_parent_model_frame></axis>"
                )
        out.append("</joint>")
    out.append("</model></sdf>")
    return "\n".join(out), offset


TREE_ROBOTS = {"solo12": True, "panda": False, "ur5": False}


@pytest.mark.parametrize("name", list(TREE_ROBOTS))
def test_tree_matches_pinocchio_on_the_urdf(name):
    import pinocchio as pin
    path, floating = loopdyn.robots.example_robot_urdf(name)
    sdf, offset = urdf_to_sdf(Path(path), seed=len(name))
    model = loopdyn.load_sdf(sdf, floating_base=floating)
    pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer()) if floating else pin.buildModelFromUrdf(path)
    assert model.joint_names == list(pm.names)
    assert (model.nq, model.nv) == (pm.nq, pm.nv)
    pd, data = pm.createData(), model.create_data()
    rng = np.random.default_rng(1)
    for _ in range(20):
        q = loopdyn.random_configuration(model, rng)
        v = rng.normal(size=model.nv)
        M = pin.crba(pm, pd, q)
        M = np.triu(M) + np.triu(M, 1).T
        rel_close(loopdyn.crba(model, data, q), M, f"{name}: M")
        rel_close(
            loopdyn.nonlinear_effects(model, data, q, v), pin.nonLinearEffects(pm, pd, q, v), f"{name}: b"
        )
        pin.framesForwardKinematics(pm, pd, q)
        loopdyn.forward_kinematics(model, data, q)
        for link, off in offset.items():
            expected = pd.oMf[pm.getFrameId(link, pin.BODY)].homogeneous @ off
            rel_close(loopdyn.frame_placement(model, data, link), expected, f"{name}: frame {link}", 1e-12)


def test_rerooted_tree_reverses_joints_as_the_definition_says():
    """solo12 rooted at a foot (canonical_link): every joint on the path to the base is reversed."""
    path, _ = loopdyn.robots.example_robot_urdf("solo12")
    sdf, _ = urdf_to_sdf(Path(path), seed=3)
    sdf = sdf.replace('<model name="converted">', '<model name="converted" canonical_link="FL_FOOT">')
    model = loopdyn.load_sdf(sdf, floating_base=True)
    assert model.bodies[0].name == "FL_FOOT"
    assert check_joint_definitions(model, SdfSpec(sdf), seed=0) == 16
    # the inertia of the whole robot (world frame, about the world origin) is the file's
    tree_data = model.create_data()
    rng = np.random.default_rng(5)
    spec_el = ET.fromstring(sdf).find("model")
    for _ in range(3):
        q = loopdyn.random_configuration(model, rng)
        loopdyn.forward_kinematics(model, tree_data, q)
        total, first = 0.0, np.zeros(3)
        for link in spec_el.findall("link"):
            X = loopdyn.frame_placement(model, tree_data, link.get("name"))
            inertial = link.find("inertial")
            m = float(inertial.find("mass").text)
            c = SdfSpec._pose(inertial)[:3, 3]
            total += m
            first += m * (X[:3, :3] @ c + X[:3, 3])
        lm, lfirst = 0.0, np.zeros(3)
        for b in model.bodies:
            oMi = loopdyn.frame_placement(model, tree_data, model.frame_names.index(b.joint_name))
            lm += b.inertia.mass
            lfirst += b.inertia.mass * (oMi[:3, :3] @ b.inertia.com + oMi[:3, 3])
        rel_close(lm, total, "mass")
        rel_close(lfirst, first, "first moment of mass")


# ---------------------------------------------------------------------------------------------
# Cassie: loops and gearboxes
@pytest.fixture(scope="module")
def cassie():
    path = _need(CASSIE) / "cassie.sdf"
    # its foot-reference links violate the triangle inequality: loaded as written
    return path, loopdyn.load_sdf(path, inertia="accept")


@pytest.fixture(scope="module")
def cassie_v2():
    path = _need(CASSIE) / "cassie_v2.sdf"
    return path, loopdyn.load_sdf(path)


def test_cassie_structure(cassie, cassie_v2):
    path, model = cassie
    # ball joints are cut first, then the later joint of each remaining loop (document order)
    assert model.sdf_cut_joints == [
        "left-pitch-rod-joint",
        "right-pitch-rod-joint",
        "right-shin-spring-joint",
        "right-plantar-foot-joint",
        "left-shin-spring-joint",
        "left-plantar-foot-joint",
    ]
    kinds = {c.name: getattr(c, "kind", "coupling") for c in model.constraints}
    assert kinds["left-pitch-rod-joint"] == "spherical" and kinds["left-shin-spring-joint"] == "prismatic"
    assert sum(k == "coupling" for k in kinds.values()) == 10  # the gearboxes
    assert model.bodies[0].joint.kind == "free-flyer" and model.bodies[0].name == "pelvis"
    _, v2 = cassie_v2
    assert (v2.nbodies, v2.spanning_nv) == (22 + 1, 22 + 6)


@pytest.mark.parametrize(
    "which", ["cassie", "cassie_v2", "cassie_simple", "cassie_reduced", "cassie_wo_gearbox_spring"]
)
def test_cassie_tree_joints_follow_the_sdf_definition(which, request):
    if which in ("cassie", "cassie_v2"):
        path, model = request.getfixturevalue(which)
    else:
        path = _need(CASSIE) / f"{which}.sdf"
        model = loopdyn.load_sdf(path)
    spec = SdfSpec(Path(path).read_text())
    n = check_joint_definitions(model, spec, seed=1, n=3)
    floating = model.bodies[0].joint.kind == "free-flyer"
    assert n == model.nbodies - floating  # every tree joint


def cassie_configuration(m, rng):
    """A valid configuration. ``random_configuration`` finds none for the full ``cassie.sdf``, whose
    knee-spring loop (two coaxial revolute joints and a prismatic one) is degenerate: there, perturb the
    neutral configuration and project it on the constraints."""
    if m.nbodies < 30:
        q = loopdyn.random_configuration(m, rng)
    else:
        for _ in range(20):
            q = loopdyn.neutral(m) + 0.1 * rng.normal(size=m.nq)
            q[3:7] /= np.linalg.norm(q[3:7])
            try:
                q = loopdyn.project_configuration(m, q)
                break
            except loopdyn.ProjectionError:
                continue
    q = loopdyn.project_configuration(m, q, tol=1e-12)
    assert np.max(np.abs(loopdyn.constraint_residual(m, q))) < 1e-10
    return q


def test_cassie_gearboxes_enforce_the_sdf_ratio(cassie):
    """θ₂ = −ratio·θ₁, both angles measured from the link placements (about the gearbox axes, relative to
    the reference body) at random valid configurations of the cluster model."""
    path, model = cassie
    spec = SdfSpec(Path(path).read_text())
    tree = loopdyn.spanning_tree(model)
    tdata = tree.create_data()
    rng = np.random.default_rng(2)
    gears = [n for n, j in spec.joints.items() if j["type"] == "gearbox"]
    assert len(gears) == 10
    for _ in range(3):
        q = cassie_configuration(model, rng)
        qs, _ = loopdyn.to_spanning(model, q, np.zeros(model.nv))
        loopdyn.forward_kinematics(tree, tdata, qs)
        moved = 0.0
        for name in gears:
            j = spec.joints[name]

            def angle(link, k, j=j, name=name):
                a = spec.axis_in_model(name, k)
                X0 = np.linalg.inv(spec.links[j["reference"]]) @ spec.links[link]
                X = np.linalg.inv(
                    loopdyn.frame_placement(tree, tdata, j["reference"])
                ) @ loopdyn.frame_placement(tree, tdata, link)
                R = X[:3, :3] @ X0[:3, :3].T  # rotation since the zero configuration, in the reference's axes
                a_ref = spec.links[j["reference"]][:3, :3].T @ a
                assert np.allclose(R @ a_ref, a_ref, atol=1e-9)  # a rotation about the gearbox axis
                return np.arctan2(
                    a_ref @ np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]]) / 2,
                    (np.trace(R) - 1) / 2,
                )

            th1, th2 = angle(j["parent"], 0), angle(j["child"], 1)
            assert abs(th2 + j["ratio"] * th1) <= 1e-9 * max(1.0, abs(th2)), name
            moved = max(moved, abs(th1))
        assert moved > 1e-2  # the check is not vacuous


def _pin_tree(pin, m):
    """The spanning tree of ``m`` (free flyer, revolute, prismatic joints) as a Pinocchio model."""
    pm = pin.Model()
    pm.gravity = pin.Motion(np.r_[m.gravity, 0.0, 0.0, 0.0])
    for i, b in enumerate(m.bodies, start=1):
        kind = b.joint.kind
        if kind == "free-flyer":
            joint = pin.JointModelFreeFlyer()
        elif kind == "revolute":
            joint = pin.JointModelRevoluteUnaligned(b.joint.axis_array())
        elif kind == "prismatic":
            joint = pin.JointModelPrismaticUnaligned(b.joint.axis_array())
        else:
            raise AssertionError(kind)
        jid = pm.addJoint(b.parent, joint, pin.SE3(b.rotation, b.translation), b.joint_name)
        assert jid == i
        pm.appendBodyToJoint(
            jid, pin.Inertia(b.inertia.mass, b.inertia.com, b.inertia.inertia), pin.SE3.Identity()
        )
    return pm


@pytest.mark.parametrize("file", ["cassie_simple.sdf"])
def test_cassie_c_aba_matches_pinocchio_constraint_dynamics(file):
    """Four spherical loops (the Achilles rods and the plantar rods) on a pelvis sliding on a vertical
    prismatic joint to the world: C-ABA's spanning accelerations equal Pinocchio's constraint dynamics on
    the spanning tree, on 20 random states."""
    import pinocchio as pin

    from loopdyn.baselines.constraints import spanning_state
    from loopdyn.baselines.lagrange import lift_forces

    path = _need(CASSIE) / file
    m = loopdyn.load_sdf(path, inertia="accept")  # cassie.sdf's foot-reference links are not physical
    spec = SdfSpec(Path(path).read_text())
    pm = _pin_tree(pin, m)
    pd = pm.createData()
    cms = pin.StdVec_RigidConstraintModel()
    for c in m.constraints:
        assert c.kind == "spherical"
        Ma, Mb = (pin.SE3(*c.predecessor_placement), pin.SE3(*c.successor_placement))
        ja, jb = m.body_id(c.predecessor), m.body_id(c.successor)  # = Pinocchio's joint indices
        # the loop frames are the SDF joint frame, at q = 0 (independent of the loader)
        j = spec.joints[c.name]
        XJ = spec.links[j["child"]] @ j["pose"]
        pin.forwardKinematics(pm, pd, pin.neutral(pm))
        expected = XJ[:3, 3]  # the model frame is the world frame
        rel_close((pd.oMi[ja] * Ma).translation, expected, f"{c.name}: predecessor frame at q = 0", 1e-12)
        rel_close((pd.oMi[jb] * Mb).translation, expected, f"{c.name}: successor frame at q = 0", 1e-12)
        cms.append(
            pin.RigidConstraintModel(pin.ContactType.CONTACT_3D, pm, ja, Ma, jb, Mb, pin.ReferenceFrame.LOCAL)
        )
    cds = pin.StdVec_RigidConstraintData()
    for cm in cms:
        cds.append(cm.createData())
    pin.initConstraintDynamics(pm, pd, cms, cds)
    prox = pin.ProximalSettings(1e-14, 1e-12, 200)
    data = m.create_data()
    rng = np.random.default_rng(3)
    for _ in range(20):
        q = loopdyn.project_configuration(m, loopdyn.random_configuration(m, rng), tol=1e-13)
        v = rng.normal(size=m.nv)
        tau = 5.0 * rng.normal(size=m.nv)
        qs, vs, G, g = spanning_state(m, q, v)
        # the spanning state is on the loops (checked with Pinocchio's kinematics)
        pin.forwardKinematics(pm, pd, qs, vs)
        for cm, c in zip(cms, m.constraints, strict=True):
            pa = (pd.oMi[cm.joint1_id] * cm.joint1_placement).translation
            pb = (pd.oMi[cm.joint2_id] * cm.joint2_placement).translation
            assert np.max(np.abs(pa - pb)) < 1e-7, c.name  # see the docstring
        qdd_pin = pin.constraintDynamics(pm, pd, qs, vs, lift_forces(G, tau), cms, cds, prox)
        ydd = loopdyn.aba(m, data, q, v, tau)
        rel_close(G @ ydd + g, qdd_pin, "C-ABA vs Pinocchio constraint dynamics", 1e-9)


@pytest.mark.parametrize("which", ["cassie", "cassie_v2"])
def test_cassie_matches_the_projection_baseline(which, request):
    """The full Cassie (10 gearboxes, 4 spherical loops, 2 prismatic loops) and cassie_v2 against the
    projection baseline. (cassie_v2's plantar loops are planar only to the precision of the file's
    numbers: loopdyn keeps 2 of their 3 rows, as the baseline does, while Pinocchio's constraint
    dynamics enforces all 3 nearly dependent rows, so Pinocchio is the oracle on cassie_simple only.)"""
    from loopdyn.baselines.projection import projection_forward_dynamics

    _, m = request.getfixturevalue(which)
    data = m.create_data()
    rng = np.random.default_rng(4)
    for _ in range(8):
        q = cassie_configuration(m, rng)
        v, tau = rng.normal(size=m.nv), 5.0 * rng.normal(size=m.nv)
        rel_close(
            loopdyn.aba(m, data, q, v, tau), projection_forward_dynamics(m, q, v, tau), "C-ABA vs projection"
        )


def test_cut_joints_override(cassie, cassie_v2):
    path, default = cassie
    m = loopdyn.load_sdf(path, cut_joints=["left-knee-spring-joint"], inertia="accept")
    assert "left-knee-spring-joint" in m.sdf_cut_joints and "left-shin-spring-joint" not in m.sdf_cut_joints
    assert "left-shin-spring-joint" in default.sdf_cut_joints
    kinds = {c.name: getattr(c, "kind", None) for c in m.constraints}
    assert kinds["left-knee-spring-joint"] == "revolute"
    assert m.nv == default.nv
    check_joint_definitions(m, SdfSpec(Path(path).read_text()), seed=4, n=2)
    path2, default2 = cassie_v2
    # cutting the Achilles spring joint leaves the rod's ball joint inside the loop: a gimbal (one
    # line says so), the same mechanism (as many degrees of freedom, C-ABA = the projection baseline)
    with pytest.warns(JointConversionWarning, match="'left-pitch-rod-joint'.*Gimbal"):
        m2 = loopdyn.load_sdf(path2, cut_joints=["left-achilles-spring-joint"])
    assert m2.compound_joint("left-pitch-rod-joint").converted_from == "spherical"
    assert m2.nv == default2.nv
    from loopdyn.baselines.projection import projection_forward_dynamics

    rng = np.random.default_rng(6)
    data = m2.create_data()
    for _ in range(2):
        q = cassie_configuration(m2, rng)
        v, tau = rng.normal(size=m2.nv), 5.0 * rng.normal(size=m2.nv)
        rel_close(loopdyn.aba(m2, data, q, v, tau), projection_forward_dynamics(m2, q, v, tau), "C-ABA")
    with pytest.raises(SDFError, match="must close a loop"):
        loopdyn.load_sdf(path2, cut_joints=["left-roll-op"])
    with pytest.raises(InputError, match="not a joint"):
        loopdyn.load_sdf(path2, cut_joints=["nope"])


# ---------------------------------------------------------------------------------------------
# small documents: gearbox signs, errors
def _doc(body: str, version="1.6") -> str:
    return f'<?xml version="1.0"?>\n<sdf version="{version}">\n<model name="m">\n{body}\n</model>\n</sdf>\n'


_LINKS = "".join(
    f'<link name="{n}"><pose>{x} 0 0 0 0 0</pose><inertial><mass>1</mass></inertial></link>\n'
    for n, x in (("base", 0), ("a", 0.1), ("b", 0.2))
)


def _rev(name, parent, child, axis="0 0 1", extra=""):
    return (
        f'<joint name="{name}" type="revolute"><parent>{parent}</parent><child>{child}</child>'
        f"<axis><xyz>{axis}</xyz></axis>{extra}</joint>\n"
    )


@pytest.mark.parametrize(
    ("axis1", "axis2", "expected"),
    [("0 0 1", "0 0 1", -3.0), ("0 0 1", "0 0 -1", 3.0), ("0 0 -1", "0 0 -1", -3.0)],
)
def test_gearbox_ratio_sign_follows_the_sdf_definition(axis1, axis2, expected):
    """θ₂ = −3 θ₁, θ₁ = q_a·(axis_a · axis1), θ₂ = q_b·(axis_b · axis2): by hand, q_b = expected·q_a."""
    gear = (
        '<joint name="g" type="gearbox"><parent>a</parent><child>b</child>'
        "<gearbox_reference_body>base</gearbox_reference_body><gearbox_ratio>3</gearbox_ratio>"
        f"<axis><xyz>{axis1}</xyz></axis><axis2><xyz>{axis2}</xyz></axis2></joint>"
    )
    m = loopdyn.load_sdf(
        _doc(_LINKS + _rev("ja", "base", "a") + _rev("jb", "base", "b") + gear), floating_base=False
    )
    assert m.nv == 1
    qs, _ = loopdyn.to_spanning(m, np.array([0.3]), np.zeros(1))
    qa, qb = qs[m.bodies[m.joint_id("ja") - 1].idx_q], qs[m.bodies[m.joint_id("jb") - 1].idx_q]
    assert qa != 0 and abs(qb - expected * qa) < 1e-15


def test_errors_name_the_element_and_its_line():
    with pytest.raises(SDFError, match="malformed XML") as info:
        loopdyn.load_sdf(_doc(_LINKS + "<joint name='x'>"))
    assert info.value.line is not None
    with pytest.raises(SDFError, match="joint 'ja': child link 'nope' is not defined") as info:
        loopdyn.load_sdf(_doc(_LINKS + _rev("ja", "base", "nope")))
    assert info.value.line == 7
    with pytest.raises(SDFError, match="<axis><xyz>: 'x' is not a number"):
        loopdyn.load_sdf(_doc(_LINKS + _rev("ja", "base", "a", axis="0 0 x")))
    with pytest.raises(SDFError, match="unknown joint type 'hinge'"):
        loopdyn.load_sdf(_doc(_LINKS.replace("", "") + _rev("ja", "base", "a").replace("revolute", "hinge")))
    with pytest.raises(SDFError, match="not all connected"):
        loopdyn.load_sdf(_doc(_LINKS + _rev("ja", "base", "a")))
    with pytest.raises(SDFError, match="duplicate joint name 'ja'"):
        loopdyn.load_sdf(_doc(_LINKS + _rev("ja", "base", "a") + _rev("ja", "base", "b")))
    with pytest.raises(SDFError, match="root element is <robot>"):
        loopdyn.load_sdf("<robot name='r'/>")
    with pytest.raises(FileNotFoundError):
        loopdyn.load_sdf("/nonexistent/robot.sdf")
    with pytest.raises(InputError):
        loopdyn.load_sdf(42)


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (
            _LINKS + _rev("ja", "base", "a").replace("revolute", "revolute2") + _rev("jb", "base", "b"),
            "joint 'ja' is of type 'revolute2'",
        ),
        (_LINKS + "<include><uri>model://x</uri></include>", "<include>"),
        (_LINKS + '<model name="inner"/>', "<model>"),
        (
            _LINKS.replace("<pose>0.1 0 0 0 0 0</pose>", '<pose relative_to="b">0.1 0 0 0 0 0</pose>'),
            "relative_to='b'",
        ),
        (
            _LINKS
            + _rev("ja", "base", "a")
            + _rev("jb", "base", "b", axis="1 0 0")
            + '<joint name="g" type="gearbox"><parent>a</parent><child>b</child>'
            "<gearbox_reference_body>base</gearbox_reference_body><axis2><xyz>0 0 1</xyz></axis2></joint>",
            "gearbox 'g': its axis is not parallel to the axis of joint 'jb'",
        ),
    ],
)
def test_unsupported_features_are_refused_by_name(body, match):
    with pytest.raises(UnsupportedFeatureError, match=match):
        loopdyn.load_sdf(_doc(body))


def test_physical_inertia_option():
    bad = _LINKS.replace(
        "<inertial><mass>1</mass></inertial>",
        "<inertial><mass>1</mass><inertia><ixx>1</ixx><iyy>1</iyy><izz>3</izz></inertia></inertial>",
        1,
    )
    doc = _doc(bad + _rev("ja", "base", "a") + _rev("jb", "base", "b"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loopdyn.load_sdf(doc, inertia="accept")
    with pytest.raises(SDFError, match="link 'base'.*triangle inequality.*inertia='accept'") as info:
        loopdyn.load_sdf(doc, inertia="physical")
    assert info.value.line == 4
    # the default: loaded as written, with a warning naming the line, the link and how far off
    with pytest.warns(InertiaWarning, match=r"^line 4: link 'base': .* by 1 \(20 % of the trace\)"):
        m = loopdyn.load_sdf(doc)
    np.testing.assert_array_equal(m.bodies[0].inertia.inertia, np.diag([1.0, 1.0, 3.0]))


@pytest.mark.parametrize("canonical", ["base", "b"])
def test_ball_joints_in_the_tree_follow_the_sdf_definition(canonical):
    """A ball joint with a joint pose, traversed forwards (root "base") and backwards (root "b")."""
    body = (
        _LINKS.replace("<pose>0.2 0 0 0 0 0</pose>", "<pose>0.2 0.1 -0.3 0.4 -0.2 1.1</pose>")
        + _rev("ja", "base", "a", axis="0.3 -0.5 0.8")
        + '<joint name="jb" type="ball"><parent>a</parent><child>b</child>'
        "<pose>0.05 -0.02 0.1 0.3 0.2 0.1</pose></joint>"
    )
    doc = _doc(body).replace('<model name="m">', f'<model name="m" canonical_link="{canonical}">')
    m = loopdyn.load_sdf(doc, floating_base=True)
    assert m.bodies[0].name == canonical
    assert [b.joint.kind for b in m.bodies[1:]] == (
        ["revolute", "spherical"] if canonical == "base" else ["spherical", "revolute"]
    )
    assert check_joint_definitions(m, SdfSpec(doc), seed=7) == 2
