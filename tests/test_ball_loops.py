"""Ball joints inside loops (issue #29 §3): loaded as gimbals, checked against MuJoCo.

A ball joint that lies inside a loop (Cassie's achilles and plantar rods, the rods of parallel
ankles) is stored as a :class:`loopdyn.Gimbal` (three revolute sub-hinges through its centre, two
massless bodies), by ``load_mjcf``, ``load_sdf`` and the ``Model`` builder alike.

Oracles, all MuJoCo's, from the same mechanism written as MJCF (never loopdyn's):

* the spanning tree: ``mj_fullM`` and MuJoCo's recursive Newton–Euler ``mj_rne`` (``M q̈ + bias``);
* the loops: the exact KKT solution of ``[M Jᵀ; J 0] [q̈; −λ] = [τ − b; −J̇q̇]`` from MuJoCo's M, bias
  and the equality rows of ``efc_J`` (J̇q̇ by a 4th-order central difference of ``efc_J``), and the
  projected mass matrix ``GᵀMG`` with ``J G = 0``.

MuJoCo's coordinates of a ball joint are a quaternion and the angular velocity ω of the child in its
own frame; loopdyn's are the gimbal's three angles and their rates. The tests convert with their own
formulas (MuJoCo's quaternion routines, the gimbal's ``ω = E(q) q̇`` and ``ω̇ = E q̈ + Ė q̇`` written
out here): ``qvel = T v``, ``qacc = T a + c``, hence ``M = Tᵀ M_mj T`` and
``τ = Tᵀ (M_mj (T a + c) + b_mj)``.
"""

from __future__ import annotations

import math
import warnings

import mujoco  # a test dependency (pyproject's test extra): always installed, never skipped
import numpy as np
import pytest

import loopdyn as ld
from loopdyn.errors import GimbalLockError, JointConversionWarning, ModelError, UnsupportedFeatureError

TOL_M = 1e-12  # M and inverse dynamics against MuJoCo's (both exact up to rounding)
TOL_FD = 1e-9  # forward dynamics against the KKT solution (its J̇q̇ is a finite difference)


@pytest.fixture(autouse=True)
def _mujoco_log_elsewhere(tmp_path, monkeypatch):
    """MuJoCo may write MUJOCO_LOG.TXT in the working directory: keep it out of the checkout."""
    monkeypatch.chdir(tmp_path)


# ------------------------------------------------------------------------------------------------
# the mechanisms
#: A spatial four-bar (RSSR): crank (hinge) – rod (ball joint at the crank) – rocker (hinge), closed by
#: a point constraint between the rod's tip and the rocker's tip (a second ball joint).
RSSR = """<mujoco model="rssr"><compiler angle="radian"/><option gravity="0.3 -0.2 -9.81"/>
<worldbody>
  <body name="crank">
    <joint name="crank" axis="0 0 1"/>
    <inertial pos="0.02 0 0.01" mass="0.05" diaginertia="1e-4 2e-4 2.5e-4"/>
    <body name="rod" pos="0.04 0 0">
      <joint name="rod_ball" type="ball"/>
      <inertial pos="-0.02 0.09 0.01" quat="0.9 0.1 0.3 0.2" mass="0.12" diaginertia="4e-4 3.5e-4 1e-4"/>
    </body>
  </body>
  <body name="rocker" pos="0 0.18 0.1">
    <joint name="rocker" axis="1 0 0"/>
    <inertial pos="0 0.01 -0.05" mass="0.08" diaginertia="1e-4 1.2e-4 0.5e-4"/>
  </body>
</worldbody>
<equality><connect name="tip" body1="rod" body2="rocker" anchor="-0.04 0.18 0"/></equality>
{extra}</mujoco>"""

#: The same four-bar in SDF: the tip is a second ball joint (cut: a point loop), the rod's ball joint
#: stays in the spanning tree, inside the loop.
RSSR_SDF = """<?xml version="1.0"?><sdf version="1.7"><model name="rssr">
<link name="crank"><inertial><pose>0.02 0 0.01 0 0 0</pose><mass>0.05</mass>
  <inertia><ixx>1e-4</ixx><iyy>2e-4</iyy><izz>2.5e-4</izz><ixy>0</ixy><ixz>0</ixz><iyz>0</iyz></inertia>
  </inertial></link>
<link name="rod"><pose>0.04 0 0 0 0 0</pose><inertial><pose>{rod_pose}</pose><mass>0.12</mass>
  <inertia><ixx>4e-4</ixx><iyy>3.5e-4</iyy><izz>1e-4</izz><ixy>0</ixy><ixz>0</ixz><iyz>0</iyz></inertia>
  </inertial></link>
<link name="rocker"><pose>0 0.18 0.1 0 0 0</pose><inertial><pose>0 0.01 -0.05 0 0 0</pose><mass>0.08</mass>
  <inertia><ixx>1e-4</ixx><iyy>1.2e-4</iyy><izz>0.5e-4</izz><ixy>0</ixy><ixz>0</ixz><iyz>0</iyz></inertia>
  </inertial></link>
<joint name="crank" type="revolute"><parent>world</parent><child>crank</child><axis><xyz>0 0 1</xyz></axis>
</joint>
<joint name="rod_ball" type="ball"><parent>crank</parent><child>rod</child></joint>
<joint name="rocker" type="revolute"><parent>world</parent><child>rocker</child><axis><xyz>1 0 0</xyz></axis>
</joint>
<joint name="tip" type="ball"><parent>rod</parent><child>rocker</child><pose>0 0 -0.1 0 0 0</pose></joint>
</model></sdf>"""


def _rod_inertial_pose() -> str:
    """The rod's inertial frame of RSSR (``quat="0.9 0.1 0.3 0.2"``) as SDF's ``x y z roll pitch yaw``."""
    R = _quat_to_matrix([0.9, 0.1, 0.3, 0.2])
    pitch = math.asin(-R[2, 0])
    roll, yaw = math.atan2(R[2, 1], R[2, 2]), math.atan2(R[1, 0], R[0, 0])
    return f"-0.02 0.09 0.01 {roll!r} {pitch!r} {yaw!r}"


def _rssr_builder(reference_rotation=None) -> ld.Model:
    """The four-bar built in code: a Spherical joint, then the loop (which converts it)."""
    m = ld.Model("rssr", gravity=(0.3, -0.2, -9.81))
    m.add_body("crank", 0, ld.Revolute((0, 0, 1)), None,
               ld.Inertia(0.05, (0.02, 0, 0.01), np.diag([1e-4, 2e-4, 2.5e-4])))  # fmt: skip
    R_i = _quat_to_matrix([0.9, 0.1, 0.3, 0.2])
    m.add_body("rod", "crank", ld.Spherical(), (np.eye(3), (0.04, 0, 0)),
               ld.Inertia(0.12, (-0.02, 0.09, 0.01), R_i @ np.diag([4e-4, 3.5e-4, 1e-4]) @ R_i.T),
               joint_name="rod_ball")  # fmt: skip
    m.add_body("rocker", 0, ld.Revolute((1, 0, 0)), (np.eye(3), (0, 0.18, 0.1)),
               ld.Inertia(0.08, (0, 0.01, -0.05), np.diag([1e-4, 1.2e-4, 0.5e-4])))  # fmt: skip
    if reference_rotation is not None:
        q = np.zeros(m.spanning_nq)
        q[1:5] = _matrix_to_quat_xyzw(reference_rotation)
        m.set_reference_configuration(q)
    m.add_loop("tip", "rod", "rocker", "point", (np.eye(3), (-0.04, 0.18, 0)), (np.eye(3), (0, 0, -0.1)))
    return m


#: A Cassie-like leg with a floating pelvis: hip roll, yaw, pitch; a knee, a knee spring ("shin"), the
#: tarsus and a heel spring; the achilles rod hangs from the thigh by a ball joint and is connected to
#: the heel spring's tip (the first loop); the foot crank on the tarsus drives the foot through the
#: plantar rod, ball-jointed at the crank and connected to the foot (the second loop).
CASSIE_LEG = """<mujoco model="cassie_like_leg"><compiler angle="radian"/><option gravity="0 0 -9.81"/>
<worldbody>
  <body name="pelvis" pos="0 0 1">
    <freejoint name="root"/>
    <inertial pos="0.03 0 0.05" mass="10" fullinertia="0.09 0.08 0.07 0.001 -0.002 0.0005"/>
    <body name="hip_roll" pos="0.02 -0.1 -0.07">
      <joint name="hip_roll" axis="1 0 0"/>
      <inertial pos="-0.01 0 0" mass="1.2" diaginertia="0.002 0.003 0.0025"/>
      <body name="hip_yaw" pos="0 0 -0.09">
        <joint name="hip_yaw" axis="0 0 1"/>
        <inertial pos="0 0 -0.03" mass="0.9" diaginertia="0.0015 0.0018 0.001"/>
        <body name="thigh" pos="0 -0.01 -0.06">
          <joint name="hip_pitch" axis="0 1 0"/>
          <inertial pos="0.01 0 -0.15" quat="0.98 0.05 -0.1 0.1" mass="5.3" diaginertia="0.06 0.055 0.012"/>
          <body name="achilles_rod" pos="-0.02 0.03 0">
            <joint name="achilles" type="ball"/>
            <inertial pos="-0.025 -0.005 -0.37" quat="0.99 0.02 -0.03 0" mass="0.18"
              diaginertia="0.009 0.009 2e-4"/>
          </body>
          <body name="knee" pos="0 0 -0.4">
            <joint name="knee" axis="0 1 0"/>
            <inertial pos="0.02 0 -0.02" mass="0.7" diaginertia="0.001 0.0012 0.0008"/>
            <body name="shin" pos="0 0 -0.03">
              <joint name="shin_spring" axis="0 1 0"/>
              <inertial pos="0 0 -0.2" quat="0.97 0 0.1 0.2" mass="0.58" diaginertia="0.012 0.0115 0.0009"/>
              <body name="tarsus" pos="0 0 -0.42">
                <joint name="tarsus" axis="0 1 0"/>
                <inertial pos="0.01 0 -0.2" quat="0.99 0.05 0 0.1" mass="0.78"
                  diaginertia="0.016 0.015 0.0011"/>
                <body name="heel_spring" pos="-0.05 0 0">
                  <joint name="heel_spring" axis="0 1 0"/>
                  <inertial pos="-0.01 0.01 0.04" mass="0.13" diaginertia="2e-4 1.8e-4 5e-5"/>
                </body>
                <body name="foot_crank" pos="0.03 0.01 -0.05">
                  <joint name="foot_crank" axis="0 1 0"/>
                  <inertial pos="0.02 0 0" mass="0.05" diaginertia="2e-5 3e-5 2e-5"/>
                  <body name="plantar_rod" pos="0.04 0 0">
                    <joint name="plantar" type="ball"/>
                    <inertial pos="0.005 -0.005 -0.19" mass="0.1" diaginertia="0.0013 0.0013 1e-5"/>
                  </body>
                </body>
                <body name="foot" pos="0 0 -0.45">
                  <joint name="foot" axis="0 1 0"/>
                  <inertial pos="0.03 0 -0.01" quat="0.9 0 0.3 0.1" mass="0.15"
                    diaginertia="3e-4 2.8e-4 1e-4"/>
                </body>
              </body>
            </body>
          </body>
        </body>
      </body>
    </body>
  </body>
</worldbody>
<equality>
  <connect name="achilles_heel" body1="achilles_rod" body2="heel_spring" anchor="-0.05 -0.01 -0.76"/>
  <connect name="plantar_foot" body1="plantar_rod" body2="foot" anchor="0.01 -0.01 -0.39"/>
</equality>
{keyframe}</mujoco>"""

#: The home pose: pelvis pose and the joints set by hand (knee bent); the others solved for the loops.
HOME_SET = {"hip_roll": 0.06, "hip_yaw": -0.03, "hip_pitch": 0.55, "knee": -1.05, "shin_spring": 0.02,
            "heel_spring": -0.03, "foot_crank": -0.6}  # fmt: skip


# ------------------------------------------------------------------------------------------------
# rotations, written out here (MuJoCo's routines where it has them)
def _quat_to_matrix(qw) -> np.ndarray:
    R = np.zeros(9)
    q = np.asarray(qw, float)
    mujoco.mju_quat2Mat(R, q / np.linalg.norm(q))
    return R.reshape(3, 3)


def _matrix_to_quat_xyzw(R) -> np.ndarray:
    qw = np.zeros(4)
    mujoco.mju_mat2Quat(qw, np.ascontiguousarray(R, dtype=float).reshape(-1))
    return qw[[1, 2, 3, 0]]


def _axis_rot(k: int, t: float) -> np.ndarray:
    q, axis = np.zeros(4), np.zeros(3)
    axis[k] = 1.0
    mujoco.mju_axisAngle2Quat(q, axis, t)
    return _quat_to_matrix(q)


def _skew(x) -> np.ndarray:
    return np.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])


def _gimbal_quat(seq, angles) -> np.ndarray:
    """MuJoCo quaternion (w first) of R(e_a, q1) R(e_b, q2) R(e_c, q3), with MuJoCo's products."""
    out = np.array([1.0, 0.0, 0.0, 0.0])
    for k, t in zip(seq, angles, strict=True):
        axis, qk, res = np.zeros(3), np.zeros(4), np.zeros(4)
        axis[k] = 1.0
        mujoco.mju_axisAngle2Quat(qk, axis, t)
        mujoco.mju_mulQuat(res, out, qk)
        out = res
    return out


def _gimbal_E_and_Edot_qd(seq, angles, rates):
    """``ω = E q̇`` (child frame) and ``Ė q̇`` for the gimbal ``R(e_a, q1) R(e_b, q2) R(e_c, q3)``."""
    ea, eb, ec = (np.eye(3)[k] for k in seq)
    R2t, R3t = _axis_rot(seq[1], angles[1]).T, _axis_rot(seq[2], angles[2]).T
    E = np.column_stack([R3t @ R2t @ ea, R3t @ eb, ec])
    d1, d2, d3 = rates
    dcol1 = -d3 * _skew(ec) @ R3t @ R2t @ ea - d2 * R3t @ _skew(eb) @ R2t @ ea
    dcol2 = -d3 * _skew(ec) @ R3t @ eb
    return E, d1 * dcol1 + d2 * dcol2


def _sequence(model, joint: str) -> tuple[int, ...]:
    rec = model.compound_joint(joint)
    assert rec is not None and rec.joint.kind == "gimbal" and rec.converted_from == "spherical"
    return tuple(int(np.argmax(a)) for a in rec.joint.axes)


# ------------------------------------------------------------------------------------------------
# loopdyn spanning state ↔ MuJoCo, by joint names (the oracle's own map)
def _to_mujoco_by_hand(model, m, q, v):
    """``(qpos, qvel, T, c)`` of the spanning state ``(q, v)``: ``qvel = T v`` and ``qacc = T a + c``."""
    qpos, qvel = np.zeros(m.nq), np.zeros(m.nv)
    T, c = np.zeros((m.nv, model.spanning_nv)), np.zeros(m.nv)
    for j in range(m.njnt):
        name = mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_JOINT, j)
        qa, va, jtype = int(m.jnt_qposadr[j]), int(m.jnt_dofadr[j]), int(m.jnt_type[j])
        if jtype == mujoco.mjtJoint.mjJNT_BALL:
            rec = model.compound_joint(name)
            seq = _sequence(model, name)
            iq, iv = model.bodies[rec.bodies[0] - 1].idx_q, model.bodies[rec.bodies[0] - 1].idx_v
            angles, rates = q[iq : iq + 3], v[iv : iv + 3]
            E, Edqd = _gimbal_E_and_Edot_qd(seq, angles, rates)
            qpos[qa : qa + 4] = _gimbal_quat(seq, angles)
            qvel[va : va + 3] = E @ rates
            T[va : va + 3, iv : iv + 3] = E
            c[va : va + 3] = Edqd
            continue
        b = model.bodies[model.joint_id(name) - 1]
        if jtype == mujoco.mjtJoint.mjJNT_FREE:
            x, y, z, w = q[b.idx_q + 3 : b.idx_q + 7]
            R = _quat_to_matrix([w, x, y, z])
            qpos[qa : qa + 3], qpos[qa + 3 : qa + 7] = q[b.idx_q : b.idx_q + 3], [w, x, y, z]
            lin, ang = v[b.idx_v : b.idx_v + 3], v[b.idx_v + 3 : b.idx_v + 6]
            qvel[va : va + 3], qvel[va + 3 : va + 6] = R @ lin, ang
            T[va : va + 3, b.idx_v : b.idx_v + 3] = R
            T[va + 3 : va + 6, b.idx_v + 3 : b.idx_v + 6] = np.eye(3)
            c[va : va + 3] = R @ np.cross(ang, lin)
        else:
            qpos[qa], qvel[va] = q[b.idx_q], v[b.idx_v]
            T[va, b.idx_v] = 1.0
    return qpos, qvel, T, c


def _rel(a, b) -> float:
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def _mj_forward(m, d, qpos, qvel):
    d.qpos[:], d.qvel[:] = qpos, qvel
    mujoco.mj_forward(m, d)


def _mj_M(m, d) -> np.ndarray:
    M = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, M)
    return M


def _eq_rows(m, d, qpos, qvel):
    _mj_forward(m, d, qpos, qvel)
    rows = d.efc_type == mujoco.mjtConstraint.mjCNSTR_EQUALITY
    return d.efc_J.reshape(d.nefc, m.nv)[rows].copy(), d.efc_pos[rows].copy()


def _jdot_qdot(m, d, qpos, qvel, h=1e-3):
    """J̇q̇ by a 4th-order central difference of efc_J along q(t) = qpos ⊕ t·qvel."""
    Js = []
    for t in (-2 * h, -h, h, 2 * h):
        qt = qpos.copy()
        mujoco.mj_integratePos(m, qt, qvel, t)
        Js.append(_eq_rows(m, d, qt, qvel)[0])
    return (Js[0] - 8 * Js[1] + 8 * Js[2] - Js[3]) / (12 * h) @ qvel


def _spanning_dofs(model, joints) -> list[int]:
    return [model.bodies[model.joint_id(j) - 1].idx_v for j in joints]


def _independent_dofs(model) -> list[int]:
    out = []
    for c in model.clusters().clusters:
        if c.kind == 0:
            b = model.bodies[c.bodies[0] - 1]
            out.extend(range(b.idx_v, b.idx_v + b.joint.nv))
        else:
            out.extend(model.bodies[c.bodies[k] - 1].idx_v for k in c.independent)
    return out


# ------------------------------------------------------------------------------------------------
# the comparisons
def _check_spanning_tree(model, m, rng, n=12, angle=1.2):
    """Spanning-tree M and inverse dynamics against mj_fullM and mj_rne (random states, gimbal
    middle angles within ±``angle``)."""
    tree = ld.spanning_tree(model)
    data = tree.create_data()
    d = mujoco.MjData(m)
    worst_M = worst_tau = 0.0
    for _ in range(n):
        q = ld.random_configuration(tree, rng)
        for rec in tree.compound_joints:
            q[tree.bodies[rec.bodies[1] - 1].idx_q] = rng.uniform(-angle, angle)
        v, a = rng.standard_normal(tree.nv), rng.standard_normal(tree.nv)
        qpos, qvel, T, c = _to_mujoco_by_hand(tree, m, q, v)
        _mj_forward(m, d, qpos, qvel)
        M_mj = _mj_M(m, d)
        d.qacc[:] = T @ a + c
        tau_mj = np.zeros(m.nv)
        mujoco.mj_rne(m, d, 1, tau_mj)  # M qacc + bias, MuJoCo's own recursion
        worst_M = max(worst_M, _rel(ld.crba(tree, data, q), T.T @ M_mj @ T))
        worst_tau = max(worst_tau, _rel(ld.rnea(tree, data, q, v, a), T.T @ tau_mj))
    assert worst_M < TOL_M, worst_M
    assert worst_tau < TOL_M, worst_tau
    return worst_M, worst_tau


def _check_loops(model, m, states, rng):
    """C-ABA against MuJoCo's KKT solution, the cluster mass matrix against GᵀMG and the cluster bias
    against Gᵀ(b + M g), on cluster states ``(q, v)``."""
    m.opt.jacobian = mujoco.mjtJacobian.mjJAC_DENSE
    d = mujoco.MjData(m)
    data = model.create_data()
    ind = _independent_dofs(model)
    assert len(ind) == model.nv
    dep = [i for i in range(model.spanning_nv) if i not in set(ind)]
    worst = {"aba": 0.0, "crba": 0.0, "nle": 0.0}
    for q, v in states:
        qs, vs = ld.to_spanning(model, q, v)
        qpos, qvel, T, c = _to_mujoco_by_hand(model, m, qs, vs)
        if hasattr(model, "mujoco_coordinates"):  # load_mjcf's conversion agrees with the oracle's
            qpos_ld, qvel_ld = ld.to_mujoco(model, q, v)
            assert np.allclose(qpos_ld, qpos, rtol=0, atol=1e-14)  # both quaternions have w > 0 here
            assert np.allclose(qvel_ld, qvel, rtol=1e-13, atol=1e-13)
            q_back, v_back = ld.from_mujoco(model, qpos, qvel)
            assert np.allclose(q_back, q, rtol=0, atol=1e-13)
            assert np.allclose(v_back, v, rtol=1e-12, atol=1e-12)
        J, residual = _eq_rows(m, d, qpos, qvel)
        assert np.max(np.abs(residual)) < 1e-10  # the loopdyn state satisfies MuJoCo's constraints
        assert np.max(np.abs(J @ qvel)) < 1e-10 * max(1.0, np.max(np.abs(qvel)))
        M, b = _mj_M(m, d), d.qfrc_bias.copy()
        k = -_jdot_qdot(m, d, qpos, qvel)
        # the KKT solution for the spanning forces τ on the independent coordinates
        tau_span = np.zeros(model.spanning_nv)
        tau_span[ind] = rng.standard_normal(model.nv)
        tau_mj = np.linalg.solve(T.T, tau_span)
        U, s, Vt = np.linalg.svd(J)
        r = int(np.sum(s > 1e-9 * s[0]))
        Jr, kr = Vt[:r], (U.T @ k)[:r] / s[:r]
        A = np.block([[M, Jr.T], [Jr, np.zeros((r, r))]])
        a_kkt = np.linalg.solve(A, np.r_[tau_mj - b, kr])[: m.nv]
        assert _rel(np.linalg.solve(M, tau_mj - b), a_kkt) > 1e-6  # negative control: the loops matter
        a = ld.aba(model, data, q, v, tau_span[ind])
        _, _, a_span = ld.to_spanning(model, q, v, a)
        worst["aba"] = max(worst["aba"], _rel(T @ a_span + c, a_kkt))
        # in loopdyn's coordinates: M_ld = Tᵀ M T, b_ld = Tᵀ (b + M c), J_ld = J T, k_ld = k − J c
        M_ld, b_ld, J_ld, k_ld = T.T @ M @ T, T.T @ (b + M @ c), J @ T, k - J @ c
        G = np.zeros((model.spanning_nv, model.nv))
        G[ind, np.arange(model.nv)] = 1.0
        g = np.zeros(model.spanning_nv)
        G[dep] = -np.linalg.lstsq(J_ld[:, dep], J_ld[:, ind], rcond=None)[0]
        g[dep] = np.linalg.lstsq(J_ld[:, dep], k_ld, rcond=None)[0]
        worst["crba"] = max(worst["crba"], _rel(ld.crba(model, data, q), G.T @ M_ld @ G))
        nle = ld.nonlinear_effects(model, data, q, v)
        worst["nle"] = max(worst["nle"], _rel(nle, G.T @ (b_ld + M_ld @ g)))
    assert worst["aba"] < TOL_FD, worst
    assert worst["crba"] < TOL_M, worst
    assert worst["nle"] < TOL_FD, worst
    return worst


def _states_near(model, q0, rng, n, scale=0.3):
    return [(ld.integrate(model, q0, scale * rng.standard_normal(model.nv)), rng.standard_normal(model.nv))
            for _ in range(n)]  # fmt: skip


def _load(kind: str) -> tuple[ld.Model, list]:
    """The four-bar loaded by ``kind``, and the JointConversionWarnings it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        if kind == "mjcf":
            model = ld.load_mjcf(RSSR.format(extra=""))
        elif kind == "sdf":
            model = ld.load_sdf(RSSR_SDF.format(rod_pose=_rod_inertial_pose()), gravity=(0.3, -0.2, -9.81))
        else:
            model = _rssr_builder()
    return model, [w for w in caught if issubclass(w.category, JointConversionWarning)]


# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["mjcf", "sdf", "builder"])
def test_ball_jointed_four_bar_matches_mujoco(kind):
    """The RSSR four-bar loaded from MJCF, from SDF and built in code: the rod's ball joint becomes a
    z, y, x gimbal (the identity reference), announced once; M, inverse and forward dynamics are
    MuJoCo's."""
    model, caught = _load(kind)
    assert len(caught) == 1
    message = str(caught[0].message)
    assert "'rod_ball'" in message and "z, y, x" in message and "±90°" in message and "90.0°" in message
    assert _sequence(model, "rod_ball") == (2, 1, 0)
    assert [b.joint.kind for b in model.bodies] == ["revolute"] * 5
    assert model.body_names == ["universe", "crank", "rod_ball/1", "rod_ball/2", "rod", "rocker"]
    assert [b.inertia.mass for b in model.bodies[1:3]] == [0.0, 0.0]
    assert (model.spanning_nq, model.spanning_nv, model.nv) == (5, 5, 2)
    m = mujoco.MjModel.from_xml_string(RSSR.format(extra=""))
    rng = np.random.default_rng(29)
    _check_spanning_tree(model, m, rng)
    _check_loops(model, m, _states_near(model, ld.neutral(model), rng, 12), rng)


def test_the_three_loaders_give_the_same_model():
    """MJCF, SDF and the builder: the same bodies, joints and numbers (up to rounding of the inertial
    frame's angles in SDF)."""
    (mj, _), (sdf, _), (built, _) = (_load(k) for k in ("mjcf", "sdf", "builder"))
    q = ld.random_configuration(mj, np.random.default_rng(1))
    for other in (sdf, built):
        assert other.joint_names == mj.joint_names
        assert _rel(ld.crba(other, other.create_data(), q), ld.crba(mj, mj.create_data(), q)) < 1e-12


def test_cassie_like_leg_matches_mujoco_at_its_home_keyframe():
    """A floating Cassie-like leg, its achilles and plantar rods ball-jointed inside two loops closed
    by MJCF connects, states near the home keyframe (converted by from_mujoco): both balls become
    gimbals chosen clear of qpos0 and of the home pose; M, inverse and forward dynamics are MuJoCo's."""
    xml = _cassie_leg_with_home()
    m = mujoco.MjModel.from_xml_string(xml)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = ld.load_mjcf(xml)
    lines = [str(w.message) for w in caught if issubclass(w.category, JointConversionWarning)]
    assert len(lines) == 2 and "'achilles'" in lines[0] and "'plantar'" in lines[1]
    assert all("each of its 2 reference orientations" in s for s in lines)
    assert model.nv == m.nv - 6  # two connects of 3 rows each
    # each gimbal's sequence is the best of the twelve at qpos0 and home, by the oracle's own measure
    home = m.key_qpos[0]
    for name in ("achilles", "plantar"):
        qa = int(m.jnt_qposadr[mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, name)])
        Rs = [_quat_to_matrix(m.qpos0[qa : qa + 4]), _quat_to_matrix(home[qa : qa + 4])]

        def margin(seq, Rs=Rs):
            return min(math.acos(min(1.0, abs(R[seq[0], seq[2]]))) for R in Rs)

        seqs = [(a, b, c) for a in range(3) for b in range(3) for c in range(3) if a != b and b != c]
        assert margin(_sequence(model, name)) == pytest.approx(max(margin(s) for s in seqs), abs=1e-12)
        assert margin(_sequence(model, name)) > math.radians(60)
    # the home keyframe's pitch of the achilles rod (about y) would bring z, y, x closer to its lock
    assert _sequence(model, "achilles") != (2, 1, 0)
    q_home, v_home = ld.from_mujoco(model, m.key_qpos[0], m.key_qvel[0])
    assert np.max(np.abs(ld.constraint_residual(model, q_home))) < 1e-12
    qpos, qvel = ld.to_mujoco(model, q_home, v_home)
    assert np.allclose(qpos, m.key_qpos[0], rtol=0, atol=1e-15) and np.allclose(qvel, 0.0, atol=0)
    rng = np.random.default_rng(3)
    _check_spanning_tree(model, m, rng, n=8)
    _check_loops(model, m, _states_near(model, q_home, rng, 10, scale=0.05), rng)


def _cassie_leg_with_home() -> str:
    """CASSIE_LEG with a keyframe "home": the pelvis posed, the HOME_SET joints moved there from qpos0
    in 20 steps, the tarsus, the foot and both balls following the loops by Newton's method on
    MuJoCo's equality residuals (efc_pos, efc_J) with minimal-norm steps (the rods' spin stays put)."""
    m = mujoco.MjModel.from_xml_string(CASSIE_LEG.format(keyframe=""))
    d = mujoco.MjData(m)
    qpos = m.qpos0.copy()
    fixed = set(range(6))
    targets = []
    for name, value in HOME_SET.items():
        j = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, name)
        targets.append((int(m.jnt_qposadr[j]), value))
        fixed.add(int(m.jnt_dofadr[j]))
    free = [i for i in range(m.nv) if i not in fixed]
    for t in np.linspace(0.05, 1.0, 20):
        for qa, value in targets:
            qpos[qa] = t * value
        for _ in range(30):
            J, r = _eq_rows(m, d, qpos, np.zeros(m.nv))
            if np.max(np.abs(r)) < 1e-15:
                break
            step = np.zeros(m.nv)
            step[free] = -np.linalg.lstsq(J[:, free], r, rcond=None)[0]
            mujoco.mj_integratePos(m, qpos, step, 1.0)
    mujoco.mj_normalizeQuat(m, qpos)
    assert np.max(np.abs(_eq_rows(m, d, qpos, np.zeros(m.nv))[1])) < 1e-14
    qpos[:7] = [0.05, -0.02, 0.93, 0.995, 0.03, -0.05, 0.07]  # the pelvis pose (the loops ignore it)
    qpos[3:7] /= np.linalg.norm(qpos[3:7])
    key = " ".join(repr(float(x)) for x in qpos)
    return CASSIE_LEG.format(keyframe=f'<keyframe><key name="home" qpos="{key}"/></keyframe>')


# ------------------------------------------------------------------------------------------------
# the choice of axes, the singularity, the builder's controls, what stays refused
def _key(name: str, quat) -> str:
    qpos = " ".join(repr(float(x)) for x in [0.0, *quat, 0.0])
    return f'<keyframe><key name="{name}" qpos="{qpos}"/></keyframe>'


def test_the_home_keyframe_steers_the_axes_clear_of_its_pose():
    """A keyframe "home" turning the rod's ball 90° about y — exactly the lock of z, y, x: the loader
    picks x, z, y, 90° from both qpos0 and home, and from_mujoco converts the keyframe (and back).
    Negative control: under another name the keyframe is not a reference, z, y, x is kept, and
    converting the keyframe raises GimbalLockError naming the joint (and the state of a batch)."""
    quarter = [math.cos(math.pi / 4), 0.0, math.sin(math.pi / 4), 0.0]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = ld.load_mjcf(RSSR.format(extra=_key("home", quarter)))
    (line,) = [str(w.message) for w in caught if issubclass(w.category, JointConversionWarning)]
    assert "x, z, y" in line and "90.0° of rotation away from each of its 2 reference orientations" in line
    assert _sequence(model, "rod_ball") == (0, 2, 1)
    m = mujoco.MjModel.from_xml_string(RSSR.format(extra=_key("home", quarter)))
    q, v = ld.from_mujoco(model, m.key_qpos[0], m.key_qvel[0], spanning=True)
    assert np.allclose(q[1:4], [0.0, 0.0, math.pi / 2], rtol=0, atol=1e-15)  # R = Rx(0) Rz(0) Ry(π/2)
    qpos, _ = ld.to_mujoco(model, q, v, spanning=True)
    assert np.allclose(qpos, m.key_qpos[0], rtol=0, atol=1e-16)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", JointConversionWarning)
        other = ld.load_mjcf(RSSR.format(extra=_key("stand", quarter)))
    assert _sequence(other, "rod_ball") == (2, 1, 0)
    with pytest.raises(GimbalLockError, match=r"ball joint 'rod_ball'.*z, y, x.*singularity"):
        ld.from_mujoco(other, m.key_qpos[0], m.key_qvel[0])
    batch = np.array([m.qpos0, m.key_qpos[0]])
    with pytest.raises(GimbalLockError, match=r"state 1\): ball joint 'rod_ball'"):
        ld.from_mujoco(other, batch, np.zeros((2, m.nv)))
    # near, not at, the lock: converted, with rates that grow as 1/cos of the middle angle
    near = [math.cos(math.pi / 4 - 1e-3), 0.0, math.sin(math.pi / 4 - 1e-3), 0.0]
    qpos = np.r_[0.0, near, 0.0]
    q, v = ld.from_mujoco(other, qpos, np.r_[0.0, 1.0, 0.0, 0.0, 0.0], spanning=True)
    assert q[2] == pytest.approx(math.pi / 2 - 2e-3, abs=1e-12)
    assert np.allclose(ld.to_mujoco(other, q, v, spanning=True)[1], [0.0, 1.0, 0.0, 0.0, 0.0], atol=1e-12)


def test_batches_of_states_with_gimbals_convert_row_by_row():
    model, _ = _load("mjcf")
    rng = np.random.default_rng(5)
    states = _states_near(model, ld.neutral(model), rng, 4)
    Q, V = np.array([s[0] for s in states]), np.array([s[1] for s in states])
    qpos, qvel = ld.to_mujoco(model, Q, V)
    for k in range(4):
        one = ld.to_mujoco(model, Q[k], V[k])
        assert np.array_equal(qpos[k], one[0]) and np.array_equal(qvel[k], one[1])
    q2, v2 = ld.from_mujoco(model, qpos, qvel)
    assert np.allclose(q2, Q, rtol=0, atol=1e-14) and np.allclose(v2, V, rtol=1e-13, atol=1e-13)


def test_builder_reference_configuration_orients_and_is_converted():
    """A reference configuration set before the loop: its rod rotation Ry(0.3) chooses x, z, y (z, y, x
    would be 0.3 rad closer to its lock) and becomes the angles (0, 0, 0.3)."""
    with pytest.warns(JointConversionWarning, match="'rod_ball'.*x, z, y"):
        m = _rssr_builder(reference_rotation=_axis_rot(1, 0.3))
    assert _sequence(m, "rod_ball") == (0, 2, 1)
    assert np.allclose(m.reference_configuration, [0.0, 0.0, 0.0, 0.3, 0.0], rtol=0, atol=1e-15)


def test_deferred_ball_joints_and_explicit_orientations():
    m = ld.Model("deferred")
    m.add_body("crank", 0, ld.Revolute((0, 0, 1)), None, ld.Inertia(1.0, (0.1, 0, 0), np.eye(3) * 0.01))
    m.add_body("rod", "crank", ld.Spherical(), (np.eye(3), (0.1, 0, 0)),
               ld.Inertia(1.0, (0, 0.1, 0), np.eye(3) * 0.01), joint_name="rod_ball")  # fmt: skip
    m.add_body("rocker", 0, ld.Revolute((1, 0, 0)), (np.eye(3), (0, 0.2, 0.1)),
               ld.Inertia(1.0, (0, 0, -0.05), np.eye(3) * 0.01))  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no conversion, no warning inside the block
        with m.deferred_ball_joints():
            m.add_loop("tip", "rod", "rocker", "point", (np.eye(3), (-0.1, 0.2, 0)),
                       (np.eye(3), (0, 0, -0.1)))  # fmt: skip
    assert m.bodies[1].joint.kind == "spherical" and m.compound_joint("rod_ball") is None
    with pytest.raises(UnsupportedFeatureError, match=r"joint 'rod_ball' \(spherical\).*embed_ball_joints"):
        m.clusters()
    with pytest.raises(ModelError, match="'rod_ball' must be rotation matrices"):
        m.embed_ball_joints({"rod_ball": 2.0 * np.eye(3)})
    assert m.bodies[1].joint.kind == "spherical"  # refused: nothing changed
    with pytest.raises(ModelError, match="dict"):
        m.embed_ball_joints([np.eye(3)])
    with pytest.warns(JointConversionWarning, match="x, z, y"):
        converted = m.embed_ball_joints({"rod_ball": _axis_rot(1, math.pi / 2), "other": np.eye(3)})
    assert converted == ("rod_ball",)
    assert m.embed_ball_joints() == ()  # nothing left to convert
    assert m.nv == 2 and "a spherical joint inside a loop, axes x, z, y" in m.summary()


def test_what_stays_refused():
    """A ball joint with armature (on ω: no equivalent on angle rates), from MJCF and in the builder,
    and a ball joint a coupling ties directly: refused, naming the joint."""
    xml = RSSR.format(extra="").replace('type="ball"/>', 'type="ball" armature="0.01"/>')
    with pytest.raises(UnsupportedFeatureError, match=r"MJCF string: joint 'rod_ball'.*armature"):
        ld.load_mjcf(xml)
    m = ld.Model("armature")
    m.add_body("a", 0, ld.Revolute((0, 0, 1)), None, ld.Inertia(1.0, (0.1, 0, 0), np.eye(3) * 0.01))
    m.add_body("b", "a", ld.Spherical(), (np.eye(3), (0.1, 0, 0)),
               ld.Inertia(1.0, (0, 0.1, 0), np.eye(3) * 0.01), armature=0.01)  # fmt: skip
    m.add_loop("close", "b", "a", "point", (np.eye(3), (0, 0.1, 0)), (np.eye(3), (0.1, 0.1, 0)))
    with pytest.raises(UnsupportedFeatureError, match=r"joint 'b' \(spherical\).*armature"):
        m.clusters()
    m = ld.Model("coupled")
    m.add_body("a", 0, ld.Revolute((0, 0, 1)), None, ld.Inertia(1.0, (0.1, 0, 0), np.eye(3) * 0.01))
    m.add_body("b", "a", ld.Spherical(), None, ld.Inertia(1.0, (0, 0.1, 0), np.eye(3) * 0.01))
    m.add_body("c", 0, ld.Revolute((0, 0, 1)), None, ld.Inertia(1.0, (0.1, 0, 0), np.eye(3) * 0.01))
    m.add_coupling("gear", "b", "c", 2.0)
    assert m.bodies[1].joint.kind == "spherical"
    with pytest.raises(UnsupportedFeatureError, match=r"joint 'b' \(spherical\).*coupling"):
        m.clusters()


def test_gimbal_angles_of_the_twelve_sequences():
    """``gimbal_angles`` inverts the product of the three axis rotations (composed by MuJoCo) for each
    of the twelve sequences, middle angle in its principal range; ``gimbal_quaternion`` and
    ``gimbal_rate_matrix`` agree with MuJoCo's product and with ω = E q̇ written out here; the chosen
    sequence is the one farthest from a rotation, at least arccos(1/3) = 70.5° away."""
    from loopdyn.model.compound import (
        GIMBAL_SEQUENCES,
        choose_gimbal_sequence,
        gimbal_angles,
        gimbal_quaternion,
        gimbal_rate_matrix,
    )

    assert len(set(GIMBAL_SEQUENCES)) == 12
    rng = np.random.default_rng(12)
    for seq in GIMBAL_SEQUENCES:
        for _ in range(20):
            qw = rng.standard_normal(4)
            R = _quat_to_matrix(qw)
            angles, lock = gimbal_angles(seq, R)
            assert np.allclose(_quat_to_matrix(_gimbal_quat(seq, angles)), R, rtol=0, atol=1e-14)
            if seq[0] != seq[2]:
                assert abs(angles[1]) <= math.pi / 2 and lock == pytest.approx(math.cos(angles[1]), abs=1e-14)
            else:
                assert 0 <= angles[1] <= math.pi and lock == pytest.approx(math.sin(angles[1]), abs=1e-14)
            mj = _gimbal_quat(seq, angles)
            ours = gimbal_quaternion(seq, angles)[[3, 0, 1, 2]]
            assert ours[0] >= 0 and np.allclose(ours, np.sign(mj[0]) * mj, rtol=0, atol=1e-15)
            E, _ = _gimbal_E_and_Edot_qd(seq, angles, np.zeros(3))
            assert np.allclose(gimbal_rate_matrix(seq, angles), E, rtol=0, atol=1e-15)
    for _ in range(200):
        R = _quat_to_matrix(rng.standard_normal(4))
        seq, margin = choose_gimbal_sequence(R)
        best = max(math.acos(min(1.0, abs(R[s[0], s[2]]))) for s in GIMBAL_SEQUENCES)
        assert margin == pytest.approx(best, abs=1e-14) and margin >= math.acos(1 / 3) - 1e-12
    assert choose_gimbal_sequence(np.eye(3)) == ((2, 1, 0), math.pi / 2)
