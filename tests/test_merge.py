"""``loopdyn.merge``: chains of 1-DoF joints joined by massless links → compound joints.

Oracles: Pinocchio's own model of the same URDF (two revolutes and a massless link are what
Pinocchio builds too), and the unmerged model (merging changes no coordinate and no dynamics).
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

import loopdyn as ld
from loopdyn.errors import ModelError

_I = '<inertia ixx="{a}" ixy="0.001" ixz="0" iyy="{b}" iyz="0" izz="{c}"/>'


def _link(name, mass=None):
    if mass is None:
        return f'<link name="{name}"/>'
    inertia = _I.format(a=0.02 * mass, b=0.03 * mass, c=0.04 * mass)
    return (f'<link name="{name}"><inertial><mass value="{mass}"/><origin xyz="0.05 0.02 -0.03" '
            f'rpy="0.1 0.2 0.3"/>{inertia}</inertial></link>')


def _joint(name, parent, child, kind="revolute", xyz="0 0 0", rpy="0 0 0", axis="1 0 0"):
    limit = '<limit lower="-2" upper="2" effort="10" velocity="5"/>'
    limit = limit if kind in ("revolute", "prismatic") else ""
    return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="{xyz}" rpy="{rpy}"/><axis xyz="{axis}"/>{limit}</joint>')


#: a universal joint written as two revolutes and a massless link ("cross"), meeting at one point
UNIVERSAL_URDF = (
    '<robot name="wrist">' + _link("base", 2.0) + _link("upper", 1.0) + _link("cross") + _link("hand", 0.5)
    + _joint("shoulder", "base", "upper", axis="0 0 1", xyz="0 0 0.2", rpy="0.1 0.2 0.3")
    + _joint("wrist_x", "upper", "cross", xyz="0.3 0 0", rpy="0 0.4 0", axis="1 0 0")
    + _joint("wrist_y", "cross", "hand", axis="0 1 0")
    + "</robot>"
)

#: more chains: a universal with a rotated inner frame, an offset chain (generic), a planar chain, a
#: massless link with a frame of its own (not merged), a continuous chain (generic)
MANY_URDF = (
    '<robot name="many">' + _link("base", 2.0)
    + "".join(_link(n) for n in ("m1", "mo", "p1", "p2", "tagged", "marker", "cu"))
    + "".join(_link(n, 0.7) for n in ("k", "slider", "puck", "heavy", "spin"))
    + _joint("rx1", "base", "m1", xyz="0.1 0 0", rpy="0.3 0 0", axis="0.6 0.8 0")
    + _joint("ry1", "m1", "k", rpy="0.2 -0.1 0.4", axis="0 0 1")
    + _joint("c1", "base", "mo", xyz="0 0.1 0", axis="0 0 1")
    + _joint("c2", "mo", "slider", kind="prismatic", xyz="0.1 0 0", axis="1 0 0")
    + _joint("px", "base", "p1", kind="prismatic", xyz="0 0 0.3", rpy="0 0 0.7", axis="1 0 0")
    + _joint("py", "p1", "p2", kind="prismatic", axis="0 1 0")
    + _joint("rz", "p2", "puck", axis="0 0 1")
    + _joint("f1", "base", "tagged", xyz="-0.1 0 0", axis="0 1 0")
    + _joint("f2", "tagged", "heavy", axis="1 0 0")
    + _joint("fm", "tagged", "marker", kind="fixed", xyz="0 0 0.1")
    + _joint("u1", "base", "cu", kind="continuous", xyz="0 -0.1 0", axis="1 0 0")
    + _joint("u2", "cu", "spin", kind="continuous", axis="0 1 0")
    + "</robot>"
)


def _rx(t):
    c, s = np.cos(t), np.sin(t)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


def _ry(t):
    c, s = np.cos(t), np.sin(t)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def _rz(t):
    c, s = np.cos(t), np.sin(t)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def _states(m, rng, n=20):
    for _ in range(n):
        q = ld.random_configuration(m, rng=rng)
        yield q, rng.normal(size=m.nv), rng.normal(size=m.nv)


def _dyn(m, q, v, a):
    d = m.create_data()
    tau = ld.rnea(m, d, q, v, a)
    return tau, ld.aba(m, d, q, v, tau), ld.crba(m, d, q)


def _close(a, b, rtol=1e-10):
    assert np.max(np.abs(a - b)) <= rtol * max(1.0, np.max(np.abs(b)))


def test_urdf_universal_merged_same_layout_and_identical_dynamics():
    m = ld.load_urdf(UNIVERSAL_URDF)
    mm = ld.merge(m)
    recs = [(r.name, r.joint.kind, r.bodies) for r in mm.compound_joints]
    assert recs == [("wrist_y", "universal", (2, 3))]
    u = mm.compound_joint("wrist_y").joint
    assert u.axis1 == (1.0, 0.0, 0.0) and u.axis2 == (0.0, 1.0, 0.0)
    assert u.lower == (-2.0, -2.0) and u.upper == (2.0, 2.0)
    assert (mm.nq, mm.nv, mm.body_names, mm.joint_names) == (m.nq, m.nv, m.body_names, m.joint_names)
    assert mm.velocity_names == ["shoulder", "wrist_y[0]", "wrist_y[1]"]
    assert not m.compound_joints  # the input is not modified
    pp, pmap = ld.partition(mm)
    assert [(r.name, r.bodies) for r in pp.compound_joints] == [("wrist_y", (2, 3))]
    pm = pin.buildModelFromXML(UNIVERSAL_URDF)
    pd = pm.createData()
    rng = np.random.default_rng(0)
    for q, v, a in _states(m, rng):
        ref = _dyn(m, q, v, a)
        for other in (mm, pp):  # identical: merging and partitioning leave the sub-hinges as they are
            for x, y in zip(_dyn(other, q, v, a), ref, strict=True):
                assert np.array_equal(x, y)
        assert np.array_equal(pmap.to_partitioned_q(q), q)
        # and Pinocchio agrees (the independent oracle)
        tau, ddq, M = ref
        _close(tau, pin.rnea(pm, pd, q, v, a))
        _close(ddq, pin.aba(pm, pd, q, v, tau))
        Mp = pin.crba(pm, pd, q)
        _close(M, np.triu(Mp) + np.triu(Mp, 1).T)


def test_merge_recognises_each_kind_of_chain():
    m = ld.load_urdf(MANY_URDF)
    mm = ld.merge(m)
    kinds = {r.name: r.joint.kind for r in mm.compound_joints}
    assert kinds == {"ry1": "universal", "c2": "compound", "rz": "planar", "u2": "compound"}
    assert mm.compound_joint("f2") is None  # 'tagged' carries the frames of its fixed child 'marker'
    planar = mm.compound_joint("rz").joint
    assert np.allclose(planar.normal, (0, 0, 1)) and np.allclose(planar.x_axis, (1, 0, 0))
    # the universal joint with a rotated inner frame: the rotation P2 moved in front, axis1 = P2ᵀ a1
    P2 = _rz(0.4) @ _ry(-0.1) @ _rx(0.2)  # URDF rpy = (0.2, -0.1, 0.4)
    u = mm.compound_joint("ry1").joint
    assert np.allclose(u.axis1, P2.T @ np.array([0.6, 0.8, 0.0]), rtol=0, atol=1e-15)
    assert u.axis2 == (0.0, 0.0, 1.0)
    assert mm.nq == m.nq and [b.idx_q for b in mm.bodies] == [b.idx_q for b in m.bodies]
    pm = pin.buildModelFromXML(MANY_URDF)
    pd = pm.createData()
    rng = np.random.default_rng(1)
    for q, v, a in _states(m, rng):
        ref = _dyn(m, q, v, a)
        got = _dyn(mm, q, v, a)
        for x, y in zip(got, ref, strict=True):
            _close(x, y, 1e-12)
        tau, ddq, M = got
        _close(tau, pin.rnea(pm, pd, q, v, a))
        _close(ddq, pin.aba(pm, pd, q, v, tau))
        Mp = pin.crba(pm, pd, q)
        _close(M, np.triu(Mp) + np.triu(Mp, 1).T)
        for f in ("heavy", "marker", "k", "puck"):  # frame placements unchanged by the merge
            d1, d2 = m.create_data(), mm.create_data()
            ld.forward_kinematics(m, d1, q)
            ld.forward_kinematics(mm, d2, q)
            _close(ld.frame_placement(mm, d2, f), ld.frame_placement(m, d1, f), 1e-13)
    assert ld.merge(mm).compound_joints == mm.compound_joints  # idempotent


def test_merge_of_partition_and_partition_of_merge():
    m = ld.Model("sph")
    inertia = ld.Inertia(1.2, (0.1, -0.05, 0.2), np.diag([0.03, 0.04, 0.05]))
    m.add_body("torso", 0, ld.FreeFlyer(), None, inertia, joint_name="root")
    m.add_body("head", "torso", ld.Spherical(), (np.eye(3), [0, 0, 0.4]), inertia, joint_name="neck")
    m.add_body("arm", "torso", ld.Universal((1, 0, 0), (0, 0, 1)), (np.eye(3), [0.2, 0, 0]), inertia,
               joint_name="shoulder")
    part, _ = ld.partition(m)
    mp = ld.merge(part)
    kinds = {r.name: (r.joint.kind, len(r.bodies)) for r in mp.compound_joints}
    assert kinds == {"shoulder": ("universal", 2), "neck__rx": ("gimbal", 3), "root__tz": ("compound", 3)}
    assert mp.compound_joint("neck__rx").joint == ld.Gimbal()
    # same bodies and parameters: the compiled arrays are equal
    for x, y in ((mp.compiled().ib, part.compiled().ib), (mp.compiled().ws, part.compiled().ws)):
        assert np.array_equal(x, y)
    # partition(merge(m)): the compound joint is left as it is, the spherical and free flyer partitioned
    pm2, pmap = ld.partition(ld.merge(m), joints=["shoulder", "neck", "root"])
    assert [(r.name, r.joint.kind) for r in pm2.compound_joints] == [("shoulder", "universal")]
    assert np.array_equal(pm2.compiled().ws, part.compiled().ws)
    rng = np.random.default_rng(2)
    q = ld.random_configuration(m, rng=rng)
    v = rng.normal(size=m.nv)
    qp = pmap.to_partitioned_q(q)
    assert np.allclose(pmap.from_partitioned_v(qp, pmap.to_partitioned_v(q, v)), v, rtol=0, atol=1e-13)
    iu = m.bodies[m.compound_joint("shoulder").bodies[0] - 1].idx_q
    ip = pm2.bodies[pm2.compound_joint("shoulder").bodies[0] - 1].idx_q
    assert np.array_equal(qp[ip : ip + 2], q[iu : iu + 2])  # the universal's coordinates carried over


def test_merge_without_chains_returns_an_equal_model():
    m = ld.Model("plain")
    inertia = ld.Inertia(1.0, (0.1, 0, 0), np.eye(3) * 0.01)
    m.add_body("a", 0, ld.Revolute((0, 0, 1)), None, inertia)
    m.add_body("b", "a", ld.Prismatic((1, 0, 0)), (np.eye(3), [0.3, 0, 0]), inertia)
    m.add_body("c", "b", ld.Spherical(), None, inertia)
    m.add_frame("tip", "c", (np.eye(3), [0.1, 0, 0]))
    mm = ld.merge(m)
    assert mm is not m and not mm.compound_joints
    assert (mm.body_names, mm.joint_names, mm.frame_names, mm.velocity_names) == (
        m.body_names, m.joint_names, m.frame_names, m.velocity_names)
    for attr in ("ib", "ws", "frame_body", "frame_placement"):
        assert np.array_equal(getattr(mm.compiled(), attr), getattr(m.compiled(), attr))
    assert [(b.name, b.joint, b.parent) for b in mm.bodies] == [(b.name, b.joint, b.parent) for b in m.bodies]


def test_merge_skips_massless_links_named_by_constraints_and_rejects_non_models():
    m = ld.Model("c")
    inertia = ld.Inertia(1.0, (0.1, 0, 0), np.eye(3) * 0.01)
    m.add_body("a", 0, ld.Revolute((0, 0, 1)), None, inertia)
    m.add_body("mid", "a", ld.Revolute((1, 0, 0)), (np.eye(3), [0.3, 0, 0]), None)
    m.add_body("b", "mid", ld.Revolute((0, 1, 0)), None, inertia)
    m.add_body("c", 0, ld.Revolute((0, 0, 1)), (np.eye(3), [0.3, 0.1, 0]), inertia)
    assert [r.name for r in ld.merge(m).compound_joints] == ["b"]
    m.add_coupling("gear", "mid", "c", 2.0)
    assert not ld.merge(m).compound_joints
    with pytest.raises(ModelError, match="merge expects a loopdyn Model"):
        ld.merge("robot.urdf")


def test_merge_inside_a_loop_keeps_the_cluster_state():
    """Two revolutes and a massless link on a loop: merged into a Universal joint recorded over the same
    sub-hinges, with the same cluster-state layout and identical dynamics; built directly with
    ``Universal`` the model has the same bodies too."""
    inertia = ld.Inertia(1.0, (0.2, 0.0, 0.0), np.diag([0.01, 0.02, 0.02]))

    def build(universal: bool) -> ld.Model:
        m = ld.Model("loop")
        m.add_body("crank", 0, ld.Revolute((0, 0, 1)), None, inertia)
        if universal:
            m.add_body("rod", "crank", ld.Universal((0, 0, 1), (0, 1, 0)), (np.eye(3), [0.4, 0, 0]), inertia,
                       joint_name="u")
        else:
            m.add_body("u/1", "crank", ld.Revolute((0, 0, 1)), (np.eye(3), [0.4, 0, 0]), None)
            m.add_body("rod", "u/1", ld.Revolute((0, 1, 0)), None, inertia, joint_name="u")
        m.add_body("rocker", 0, ld.Revolute((0, 0, 1)), (np.eye(3), [0.4, 0.4, 0]), inertia)
        m.add_loop("close", "rod", "rocker", "point", (np.eye(3), [0.4, 0, 0]), (np.eye(3), [0.4, 0, 0]))
        m.set_reference_configuration([np.pi / 2, -np.pi / 2, 0.0, np.pi / 2])
        return m

    plain, direct = build(False), build(True)
    merged = ld.merge(plain)
    assert [(r.name, r.joint, r.bodies) for r in merged.compound_joints] == [
        (r.name, r.joint, r.bodies) for r in direct.compound_joints]
    assert merged.velocity_names == plain.velocity_names and merged.nv == plain.nv
    assert np.array_equal(merged.compiled().ws, direct.compiled().ws)
    q = ld.project_configuration(plain, ld.neutral(plain))
    v = np.full(plain.nv, 0.7)
    tau = np.linspace(-1.0, 1.0, plain.nv)
    ddq = ld.aba(plain, plain.create_data(), q, v, tau)
    assert np.array_equal(ld.aba(merged, merged.create_data(), q, v, tau), ddq)
    # and the accelerations satisfy the closed-loop equations: rnea of the result gives τ back
    assert np.allclose(ld.rnea(plain, plain.create_data(), q, v, ddq), tau, rtol=0, atol=1e-10)
