"""Compound joints (Universal, Gimbal, Planar, Compound) against Pinocchio's native joints.

loopdyn stores a compound joint as its chain of 1-DoF sub-hinges with massless bodies between (Jain's
partitioning, Lemma 2.1); Pinocchio has the joints themselves: ``JointModelUniversal``,
``JointModelSphericalZYX`` (the default z-y-x gimbal), ``JointModelPlanar``. Random trees are built in
both and rnea, aba, crba, frame placements and frame Jacobians compared on random states.

Coordinate mapping (loopdyn → Pinocchio):

* Universal, Gimbal z-y-x: identical (q = angles, v = their rates).
* Gimbal with other axes: Pinocchio's three ``JointModelRevoluteUnaligned`` with massless bodies
  between (Pinocchio's own treatment of massless bodies), same coordinates.
* Planar(normal n, e1, e2 = n × e1), q = (x, y, θ), v = (ẋ, ẏ, θ̇): Pinocchio's planar joint placed
  at ``P · (Rn, 0)``, ``Rn = [e1 e2 n]``, with ``q_pin = (x, y, cos θ, sin θ)``,
  ``v_pin = T v``, ``T = blockdiag(Rz(θ)ᵀ, 1)``, ``a_pin = T a + Ṫ v``, ``τ = Tᵀ τ_pin``,
  ``M = Tᵀ M_pin T``, ``J = J_pin T``; its body frame is loopdyn's turned by Rn, so the body's inertia
  and the placements of its children and frames are expressed in that frame on the Pinocchio side.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from trees import random_inertia, random_rotation

import loopdyn as ld
from loopdyn.errors import InputError, ModelError

KINDS = ("revolute", "universal", "gimbal_zyx", "gimbal", "planar", "compound")


def _rand_axis(rng) -> np.ndarray:
    a = rng.normal(size=3)
    return a / np.linalg.norm(a)


def _recipe(rng, n: int, kinds=KINDS) -> list[dict]:
    """Random specs in depth-first order (Pinocchio's CRBA needs each subtree's columns contiguous)."""
    specs = []
    path: list[int] = []  # ancestors of the last body: a parent among them keeps the order depth first
    for k in range(n):
        parent = int(rng.choice([-1, *path]))
        path = [*path[: path.index(parent) + 1], k] if parent >= 0 else [k]
        kind = kinds[k % len(kinds)] if k < len(kinds) else str(rng.choice(kinds))
        mass, com, Ic = random_inertia(rng)
        s = {"kind": kind, "parent": parent, "R": random_rotation(rng),
             "p": rng.uniform(-0.5, 0.5, 3), "inertia": (mass, com, Ic), "name": f"b{k}", "joint": f"j{k}",
             "frame": (random_rotation(rng), rng.uniform(-0.3, 0.3, 3))}
        if kind == "revolute":
            s["axes"] = [_rand_axis(rng)]
        elif kind == "universal":
            s["axes"] = [_rand_axis(rng), _rand_axis(rng)]
        elif kind == "gimbal":
            s["axes"] = [_rand_axis(rng) for _ in range(3)]
        elif kind == "planar":
            s["normal"] = _rand_axis(rng)
        elif kind == "compound":  # revolute, then prismatic at an offset: a generic chain
            s["axes"] = [_rand_axis(rng), _rand_axis(rng)]
            s["inner"] = (random_rotation(rng), rng.uniform(-0.3, 0.3, 3))
        specs.append(s)
    return specs


def _ld_joint(s):
    kind = s["kind"]
    if kind == "revolute":
        return ld.Revolute(s["axes"][0])
    if kind == "universal":
        return ld.Universal(*s["axes"])
    if kind == "gimbal_zyx":
        return ld.Gimbal()
    if kind == "gimbal":
        return ld.Gimbal(tuple(s["axes"]))
    if kind == "planar":
        return ld.Planar(s["normal"])
    return ld.Compound(((ld.Revolute(s["axes"][0]), None), (ld.Prismatic(s["axes"][1]), s["inner"])))


def build_loopdyn(specs) -> ld.Model:
    m = ld.Model("compound", gravity=(0.3, -0.2, -9.81))
    for s in specs:
        parent = 0 if s["parent"] < 0 else specs[s["parent"]]["name"]
        m.add_body(s["name"], parent, _ld_joint(s), (s["R"], s["p"]), ld.Inertia(*s["inertia"]),
                   joint_name=s["joint"])
        m.add_frame(f"f_{s['name']}", s["name"], s["frame"])
    return m


def _planar_Rn(normal) -> np.ndarray:
    e1, e2 = ld.model.compound.plane_basis(np.asarray(normal, float))
    return np.column_stack([e1, e2, normal])


def build_pinocchio(specs):
    pm = pin.Model()
    pm.gravity = pin.Motion(np.array([0.3, -0.2, -9.81, 0.0, 0.0, 0.0]))
    jid, turn = {}, {}  # joint id of each spec's physical body; its Pinocchio body frame in loopdyn's
    for k, s in enumerate(specs):
        parent = 0 if s["parent"] < 0 else jid[s["parent"]]
        pturn = pin.SE3.Identity() if s["parent"] < 0 else turn[s["parent"]]
        M = pturn.inverse() * pin.SE3(s["R"], s["p"])
        kind = s["kind"]
        turn[k] = pin.SE3.Identity()
        if kind == "revolute":
            j = pm.addJoint(parent, pin.JointModelRevoluteUnaligned(s["axes"][0]), M, s["joint"])
        elif kind == "universal":
            j = pm.addJoint(parent, pin.JointModelUniversal(*s["axes"]), M, s["joint"])
        elif kind == "gimbal_zyx":
            j = pm.addJoint(parent, pin.JointModelSphericalZYX(), M, s["joint"])
        elif kind == "planar":
            turn[k] = pin.SE3(_planar_Rn(s["normal"]), np.zeros(3))
            j = pm.addJoint(parent, pin.JointModelPlanar(), M * turn[k], s["joint"])
        else:
            subs = [pin.JointModelRevoluteUnaligned(a) for a in s["axes"]]
            inner = [pin.SE3.Identity()] * len(subs)
            if kind == "compound":
                subs[1] = pin.JointModelPrismaticUnaligned(s["axes"][1])
                inner[1] = pin.SE3(*s["inner"])
            j = parent
            for i, sub in enumerate(subs):
                j = pm.addJoint(j, sub, M if i == 0 else inner[i], f"{s['joint']}_{i}")
        jid[k] = j
        inertia = pin.Inertia(*s["inertia"])
        pm.appendBodyToJoint(j, turn[k].actInv(inertia) if kind == "planar" else inertia, pin.SE3.Identity())
        pm.addFrame(pin.Frame(f"f_{s['name']}", j, 0, turn[k].inverse() * pin.SE3(*s["frame"]),
                              pin.FrameType.OP_FRAME))
    return pm


class StateMap:
    """loopdyn (q, v, a) → Pinocchio's, and T (v_pin = T v) for the planar joints."""

    def __init__(self, specs, m: ld.Model):
        self.specs, self.m = specs, m

    def __call__(self, q, v, a):
        qp, vp, ap, T = [], [], [], []
        i = 0
        for s in self.specs:
            n = self.m.compound_joint(s["joint"]).joint.nv if s["kind"] != "revolute" else 1
            qs, vs, as_ = q[i : i + n], v[i : i + n], a[i : i + n]
            if s["kind"] == "planar":
                c, sn = np.cos(qs[2]), np.sin(qs[2])
                Rt = np.array([[c, sn], [-sn, c]])
                Tb = np.eye(3)
                Tb[:2, :2] = Rt
                J = np.array([[0.0, 1.0], [-1.0, 0.0]])
                qp.append([qs[0], qs[1], c, sn])
                vp.append(Tb @ vs)
                ap.append(Tb @ as_ + np.concatenate([vs[2] * J @ Rt @ vs[:2], [0.0]]))
                T.append(Tb)
            else:
                qp.append(qs)
                vp.append(vs)
                ap.append(as_)
                T.append(np.eye(n))
            i += n
        from scipy.linalg import block_diag

        return np.concatenate(qp), np.concatenate(vp), np.concatenate(ap), block_diag(*T)


def _close(a, b, what, rtol=1e-10):
    scale = max(1.0, float(np.max(np.abs(b))))
    err = float(np.max(np.abs(np.asarray(a) - np.asarray(b))))
    assert err <= rtol * scale, f"{what}: max error {err:.3g} (scale {scale:.3g})"


@pytest.mark.parametrize("seed", range(6))
def test_against_pinocchio_native_joints(seed):
    rng = np.random.default_rng(seed)
    specs = _recipe(rng, 8 + seed)
    m, pm = build_loopdyn(specs), build_pinocchio(specs)
    d, pd = m.create_data(), pm.createData()
    smap = StateMap(specs, m)
    assert m.nv == pm.nv
    frames = [f"f_{s['name']}" for s in specs]
    for _ in range(20):
        q, v, a = rng.uniform(-np.pi, np.pi, m.nq), rng.normal(size=m.nv), rng.normal(size=m.nv)
        qp, vp, ap, T = smap(q, v, a)
        tau_p = pin.rnea(pm, pd, qp, vp, ap)
        tau = ld.rnea(m, d, q, v, a)
        _close(tau, T.T @ tau_p, "rnea")
        M = ld.crba(m, d, q)
        Mp = pin.crba(pm, pd, qp)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        _close(M, T.T @ Mp @ T, "crba")
        # forward dynamics: the accelerations of τ, mapped
        ddq = ld.aba(m, d, q, v, tau)
        _close(ddq, a, "aba(rnea)")
        tau_pin = np.linalg.solve(T.T, tau)
        ddq_p = pin.aba(pm, pd, qp, vp, tau_pin)
        # backward error: Pinocchio's inverse dynamics of loopdyn's accelerations gives back τ
        _close(pin.rnea(pm, pd, qp, vp, smap(q, v, ddq)[2]), tau_pin, "pinocchio rnea(loopdyn aba)")
        # forward error, within the conditioning of the mass matrix (random gimbal angles come close
        # to their singularity)
        _close(smap(q, v, ddq)[2], ddq_p, "aba vs pinocchio", rtol=1e-13 * max(100.0, np.linalg.cond(M)))
        pin.computeJointJacobians(pm, pd, qp)
        pin.updateFramePlacements(pm, pd)
        ld.forward_kinematics(m, d, q)
        for f in frames:
            fid = pm.getFrameId(f)
            _close(ld.frame_placement(m, d, f), pd.oMf[fid].homogeneous, f"placement of {f}")
            for ref, pref in (("local", pin.LOCAL), ("world", pin.WORLD)):
                Jp = pin.getFrameJacobian(pm, pd, fid, pref)
                _close(ld.frame_jacobian(m, d, q, f, ref), Jp @ T, f"{ref} Jacobian of {f}")


def test_universal_layout_and_names():
    m = ld.Model("u")
    inertia = ld.Inertia(1.0, (0.1, 0.0, 0.2), np.diag([0.1, 0.2, 0.3]))
    m.add_body("base", 0, ld.Revolute((0, 0, 1)), None, inertia, joint_name="yaw")
    idx = m.add_body("arm", "base", ld.Universal((1, 0, 0), (0, 1, 0)), (np.eye(3), [0, 0, 0.5]), inertia,
                     joint_name="wrist")
    assert idx == m.body_id("arm") == m.joint_id("wrist") == 3
    assert m.body_names == ["universe", "base", "wrist/1", "arm"]
    assert m.joint_names == ["universe", "yaw", "wrist/1", "wrist"]
    assert m.velocity_names == ["yaw", "wrist[0]", "wrist[1]"]
    assert m.nq == m.nv == 3 and m.bodies[1].inertia.mass == 0.0
    rec = m.compound_joint("wrist")
    assert rec.joint.kind == "universal" and rec.bodies == (2, 3) and m.compound_joint("yaw") is None
    assert "compound joint 'wrist' (universal)" in m.summary()
    # the joint frame of the compound joint is on the physical body
    assert m.frames[m.frame_id("wrist", "joint")].body == 3


def test_gimbal_lock_error_names_the_joint():
    """z-y-z angles lock at q2 = 0 exactly (axes 1 and 3 aligned), a representable configuration."""
    m = ld.Model("g")
    inertia = ld.Inertia(1.0, (0, 0, 0.1), np.diag([0.01, 0.02, 0.03]))
    m.add_body("ball", 0, ld.Gimbal(((0, 0, 1), (0, 1, 0), (0, 0, 1))), None, inertia, joint_name="hip")
    d = m.create_data()
    # away from the lock, the values: Pinocchio's z, y, z hinges with massless bodies between
    pm = pin.Model()
    jid = 0
    for joint in (pin.JointModelRZ(), pin.JointModelRY(), pin.JointModelRZ()):
        jid = pm.addJoint(jid, joint, pin.SE3.Identity(), f"h{jid}")
        pm.appendBodyToJoint(jid, pin.Inertia.Zero(), pin.SE3.Identity())
    pm.appendBodyToJoint(jid, pin.Inertia(1.0, np.array([0, 0, 0.1]), np.diag([0.01, 0.02, 0.03])),
                         pin.SE3.Identity())
    pd = pm.createData()
    q = np.array([0.1, 0.3, 0.2])
    Mp = pin.crba(pm, pd, q)
    Mp = np.triu(Mp) + np.triu(Mp, 1).T
    rtol = 1e-13 * max(100.0, np.linalg.cond(Mp))  # cond ~ 1/sin²(q2) near the lock
    calls = (lambda q: ld.minverse(m, d, q), lambda q: ld.aba(m, d, q, q, q))
    for call, ref in zip(calls, (np.linalg.inv(Mp), pin.aba(pm, pd, q, q, q)), strict=True):
        with pytest.raises(InputError, match=r"'hip/1' \(sub-hinge 1 of 3 of gimbal joint 'hip'\)"):
            call(np.zeros(3))
        _close(call(q), ref, "gimbal near its lock against Pinocchio", rtol=rtol)


@pytest.mark.parametrize(
    ("joint", "message"),
    [
        (ld.Universal((1, 0, 0), (2, 0, 0)), "axes of the universal joint are parallel"),
        (ld.Universal((1, 0, 0), (-1, 0, 0)), "parallel"),
        (ld.Universal((0, 0, 0), (0, 1, 0)), "universal axis1 .* zero length"),
        (ld.Universal((np.nan, 0, 0), (0, 1, 0)), "universal axis1 must be 3 finite numbers"),
        (ld.Universal((1, 0), (0, 1, 0)), "universal axis1 must be 3 finite numbers"),
        (ld.Gimbal(((0, 0, 1), (0, 0, 2), (1, 0, 0))), "axes 1 and 2 of the gimbal joint are parallel"),
        (ld.Gimbal(((0, 0, 1), (1, 0, 0), (-1, 0, 0))), "axes 2 and 3 of the gimbal joint are parallel"),
        (ld.Gimbal(((0, 0, 1), (1, 0, 0))), "needs 3 axes"),
        (ld.Gimbal(((0, 0, 1), (1, 0, 0), (0, np.inf, 0))), "gimbal axis 3 must be 3 finite"),
        (ld.Planar((0, 0, 0)), "planar normal .* zero length"),
        (ld.Planar((0, 0, 1), x_axis=(1, 0, 1)), "not perpendicular"),
        (ld.Universal((1, 0, 0), (0, 1, 0), lower=(1, 2, 3)), "lower must be"),
        (ld.Gimbal(upper="high"), "upper must be"),
        (ld.Compound(()), "needs a sequence"),
        (ld.Compound(((ld.Spherical(), None),)), "sub-hinge 1 must be"),
    ],
)
def test_bad_compound_joints_name_the_joint(joint, message):
    m = ld.Model("bad")
    with pytest.raises(ModelError, match="joint 'knee'") as info:
        m.add_body("shank", 0, joint, None, ld.Inertia(1.0), joint_name="knee")
    assert info.match(message)
    assert m.nbodies == 0 and not m.compound_joints  # nothing added


def test_compound_name_clash_adds_nothing():
    m = ld.Model("clash")
    m.add_body("knee/1", 0, ld.Revolute(), None, ld.Inertia(1.0))
    with pytest.raises(ModelError, match="duplicate body name 'knee/1'"):
        m.add_body("shank", "knee/1", ld.Universal(), None, ld.Inertia(1.0), joint_name="knee")
    assert m.nbodies == 1


def test_limits_and_armature_split_over_sub_hinges():
    m = ld.Model("lim")
    j = ld.Planar(lower=(-1, -2, -3), upper=2.0, effort=(10, 20, 30))
    m.add_body("slider", 0, j, None, ld.Inertia(1.0, inertia=np.eye(3)), armature=(0.1, 0.2, 0.3))
    assert np.array_equal(m.lower_position_limit, [-1, -2, -3])
    assert np.array_equal(m.upper_position_limit, [2, 2, 2])
    assert np.array_equal(m.effort_limit, [10, 20, 30])
    assert np.array_equal(m.armature, [0.1, 0.2, 0.3])
    assert np.array_equal(j.lower_position(), [-1, -2, -3]) and j.nq == j.nv == 3
    M = ld.crba(m, m.create_data(), np.zeros(3))
    assert np.allclose(np.diag(M), [1.1, 1.2, 1.3], rtol=0, atol=1e-14)  # unit mass, unit inertia about z


def test_compound_joint_inside_a_loop():
    """A universal joint on a four-bar-like loop: the sub-hinges are ordinary cluster joints."""
    m = ld.Model("loop")
    inertia = ld.Inertia(1.0, (0.2, 0.0, 0.0), np.diag([0.01, 0.02, 0.02]))
    m.add_body("crank", 0, ld.Revolute((0, 0, 1)), None, inertia)
    m.add_body("rod", "crank", ld.Universal((0, 0, 1), (0, 1, 0)), (np.eye(3), [0.4, 0, 0]), inertia,
               joint_name="u")
    m.add_body("rocker", 0, ld.Revolute((0, 0, 1)), (np.eye(3), [0.4, 0.4, 0]), inertia)
    m.add_loop("close", "rod", "rocker", "point", (np.eye(3), [0.4, 0, 0]), (np.eye(3), [0.4, 0, 0]))
    q0 = np.array([np.pi / 2, -np.pi / 2, 0.0, np.pi / 2])
    m.set_reference_configuration(q0)
    d = m.create_data()
    q = ld.project_configuration(m, ld.neutral(m))
    v = np.ones(m.nv)
    tau = ld.rnea(m, d, q, v, np.zeros(m.nv))
    assert np.allclose(ld.aba(m, d, q, v, tau), 0.0, atol=1e-9)


PLANAR_URDF = """<robot name="slider">
  <link name="ground"/>
  <joint name="plane" type="planar"><parent link="ground"/><child link="puck"/>
    <origin xyz="0.1 0.2 0.3" rpy="0.3 -0.2 0.5"/><axis xyz="0 0 1"/></joint>
  <link name="puck"><inertial><mass value="1.5"/><origin xyz="0.05 0.02 0.01"/>
    <inertia ixx="0.02" ixy="0.001" ixz="0" iyy="0.03" iyz="0" izz="0.04"/></inertial></link>
  <joint name="pin" type="revolute"><parent link="puck"/><child link="arm"/>
    <origin xyz="0.2 0 0.1"/><axis xyz="0 1 0"/><limit lower="-2" upper="2" effort="10" velocity="5"/></joint>
  <link name="arm"><inertial><mass value="0.7"/><origin xyz="0.1 0 0"/>
    <inertia ixx="0.01" ixy="0" ixz="0" iyy="0.02" iyz="0" izz="0.02"/></inertial></link>
</robot>"""


def test_urdf_planar_joint_against_pinocchio():
    """Pinocchio's URDF parser makes the same ``planar`` joint a JointModelPlanar (normal z)."""
    m = ld.load_urdf(PLANAR_URDF)
    pm = pin.buildModelFromXML(PLANAR_URDF)
    d, pd = m.create_data(), pm.createData()
    assert m.compound_joint("plane").joint == ld.Planar((0, 0, 1)) and m.nv == pm.nv == 4
    specs = [{"kind": "planar", "joint": "plane"}, {"kind": "revolute", "joint": "pin"}]
    smap = StateMap(specs, m)
    rng = np.random.default_rng(7)
    for _ in range(20):
        q, v, a = rng.uniform(-2, 2, m.nq), rng.normal(size=m.nv), rng.normal(size=m.nv)
        qp, vp, ap, T = smap(q, v, a)
        tau = ld.rnea(m, d, q, v, a)
        _close(tau, T.T @ pin.rnea(pm, pd, qp, vp, ap), "rnea")
        Mp = pin.crba(pm, pd, qp)
        _close(ld.crba(m, d, q), T.T @ (np.triu(Mp) + np.triu(Mp, 1).T) @ T, "crba")
        _close(smap(q, v, ld.aba(m, d, q, v, tau))[2], pin.aba(pm, pd, qp, vp, np.linalg.solve(T.T, tau)),
               "aba")


def _sdf(axis2="0 1 0", parent="base", child="arm"):
    return f"""<sdf version="1.7"><model name="u">
  <link name="base"><pose>0 0 0 0 0 0</pose><inertial><mass>2</mass></inertial></link>
  <joint name="weld" type="fixed"><parent>world</parent><child>base</child></joint>
  <link name="arm"><pose>0.3 0 0.2 0 0 0</pose>
    <inertial><pose>0.1 0.02 0 0 0 0</pose><mass>1.2</mass>
      <inertia><ixx>0.01</ixx><ixy>0.001</ixy><ixz>0</ixz><iyy>0.02</iyy><iyz>0</iyz><izz>0.03</izz></inertia>
    </inertial></link>
  <joint name="u" type="universal"><parent>{parent}</parent><child>{child}</child>
    <axis><xyz>1 0 0</xyz><limit><lower>-1</lower><upper>1</upper></limit></axis>
    <axis2><xyz>{axis2}</xyz><limit><lower>-0.5</lower><upper>0.7</upper></limit></axis2></joint>
</model></sdf>"""


def test_sdf_universal_joint_against_pinocchio():
    m = ld.load_sdf(_sdf())
    rec = m.compound_joint("u")
    assert rec.joint == ld.Universal((1, 0, 0), (0, 1, 0), lower=(-1, -0.5), upper=(1, 0.7))
    assert np.array_equal(m.lower_position_limit, [-1, -0.5])
    pm = pin.Model()
    j = pm.addJoint(0, pin.JointModelUniversal(np.array([1.0, 0, 0]), np.array([0, 1.0, 0])),
                    pin.SE3(np.eye(3), np.array([0.3, 0, 0.2])), "u")
    I_c = np.array([[0.01, 0.001, 0], [0.001, 0.02, 0], [0, 0, 0.03]])
    pm.appendBodyToJoint(j, pin.Inertia(1.2, np.array([0.1, 0.02, 0]), I_c), pin.SE3.Identity())
    d, pd = m.create_data(), pm.createData()
    rng = np.random.default_rng(8)
    for _ in range(20):
        q, v, a = rng.uniform(-2, 2, 2), rng.normal(size=2), rng.normal(size=2)
        tau = ld.rnea(m, d, q, v, a)
        _close(tau, pin.rnea(pm, pd, q, v, a), "rnea")
        _close(ld.aba(m, d, q, v, tau), pin.aba(pm, pd, q, v, tau), "aba")
        _close(ld.crba(m, d, q), np.triu(pin.crba(pm, pd, q)) + np.triu(pin.crba(pm, pd, q), 1).T, "crba")


def test_sdf_universal_bad_input():
    with pytest.raises(ld.errors.SDFError, match="joint 'u'.*parallel"):
        ld.load_sdf(_sdf(axis2="2 0 0"))
    with pytest.raises(ld.errors.UnsupportedFeatureError, match="joint 'u'.*universal"):
        ld.load_sdf(_sdf(parent="arm", child="base"))  # the tree reverses the joint


def test_generic_compound_of_continuous_joints():
    """A Compound of two continuous sub-hinges at an offset: q = two (cos, sin) pairs; its errors name
    the compound joint."""
    m = ld.Model("cc")
    j = ld.Compound(((ld.RevoluteUnbounded((1, 0, 0)), None),
                     (ld.RevoluteUnbounded((0, 1, 0)), (np.eye(3), [0.1, 0, 0]))))
    m.add_body("rotor", 0, j, None, ld.Inertia(1.0, (0, 0, 0.1), np.eye(3) * 0.01), joint_name="knee")
    assert (m.nq, m.nv, j.nq, j.nv) == (4, 2, 4, 2) and np.array_equal(j.neutral(), [1, 0, 1, 0])
    assert m.bodies[1].translation.tolist() == [0.1, 0.0, 0.0]
    with pytest.raises(ld.errors.ConfigurationError, match=r"sub-hinge 1 of 2 of compound joint 'knee'"):
        ld.rnea(m, m.create_data(), np.array([2.0, 0.0, 1.0, 0.0]), np.zeros(2), np.zeros(2))
    assert j == ld.Compound(((ld.RevoluteUnbounded((1, 0, 0)), None),
                             (ld.RevoluteUnbounded((0, 1, 0)), (np.eye(3), [0.1, 0, 0]))))
