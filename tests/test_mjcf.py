"""MJCF loading (loopdyn.load_mjcf) checked against MuJoCo itself.

Oracles, all computed by MuJoCo from the same file (never by loopdyn):

* trees: the joint-space mass matrix ``mj_fullM`` (armature included) and ``qfrc_bias`` at random
  states, site placements ``site_xpos``/``site_xmat`` and site velocities ``mj_objectVelocity``,
  after converting MuJoCo's coordinates by hand (free joint: ``v_mj = T v``, ``T = diag(R, 1)`` on
  the linear velocity, hence ``M = Tᵀ M_mj T`` and ``b = Tᵀ (b_mj + M_mj c)`` with the
  acceleration offset ``c = (R (ω × v_lin), 0)``);
* models with equality constraints: the exact KKT solution of
  ``[M Jᵀ; J 0] [a; −λ] = [τ − b; −J̇q̇]`` assembled from MuJoCo's M, bias and the equality rows of
  ``efc_J``, with J̇q̇ from a 4th-order central difference of ``efc_J`` along the motion; the redundant
  rows (a planar loop closed by a point constraint) are removed by an SVD of J.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import mujoco
import numpy as np
import pytest

import loopdyn as ld
from loopdyn.errors import (
    InputError,
    JointConversionWarning,
    LoopdynError,
    MissingDependencyError,
    MJCFError,
    MJCFFileNotFoundError,
    ShapeError,
    UnsupportedFeatureError,
)

DATA = Path(__file__).parent / "data" / "mjcf"
N_STATES = 20
TOL = 1e-9  # C-ABA against the KKT oracle (its J̇q̇ is a finite difference)
TREE_TOL = 1e-10  # M and bias against MuJoCo's (both exact up to rounding)


@pytest.fixture(autouse=True)
def _mujoco_log_elsewhere(tmp_path, monkeypatch):
    """MuJoCo appends its compiler warnings (deprecated attributes of shipped files, a flex without
    equalities) to MUJOCO_LOG.TXT in the working directory: keep that out of the checkout."""
    monkeypatch.chdir(tmp_path)


def _shipped(package: str, relative: str) -> Path:
    spec = importlib.util.find_spec(package)  # dm_control, gymnasium: test dependencies, never skipped
    assert spec is not None and spec.submodule_search_locations, f"{package} (a test dependency) is missing"
    path = Path(list(spec.submodule_search_locations)[0]) / relative
    assert path.is_file(), f"{package} does not ship {relative} (moved or removed in this version?)"
    return path


SHIPPED = {
    "dm_quadruped": ("dm_control", "suite/quadruped.xml"),
    "dm_humanoid": ("dm_control", "suite/humanoid.xml"),
    "dm_manipulator": ("dm_control", "suite/manipulator.xml"),  # planar arm and hand
    "dm_dog": ("dm_control", "suite/dog.xml"),
    "gym_ant": ("gymnasium", "envs/mujoco/assets/ant.xml"),
    "gym_humanoid": ("gymnasium", "envs/mujoco/assets/humanoid.xml"),
    "gym_pusher": ("gymnasium", "envs/mujoco/assets/pusher.xml"),  # 7-dof arm
    "gym_hopper": ("gymnasium", "envs/mujoco/assets/hopper.xml"),  # ref and joint anchors
}


def _path(key: str) -> Path:
    if key in SHIPPED:
        return _shipped(*SHIPPED[key])
    return DATA / key


# ------------------------------------------------------------------------------------------------
# MuJoCo-side helpers (the oracle)
def _rot(qw) -> np.ndarray:
    """Rotation matrix of a (w, x, y, z) quaternion, with MuJoCo's own routine."""
    R = np.zeros(9)
    mujoco.mju_quat2Mat(R, np.asarray(qw, float) / np.linalg.norm(qw))
    return R.reshape(3, 3)


def _free_joints(m):
    return [(int(m.jnt_qposadr[j]), int(m.jnt_dofadr[j])) for j in range(m.njnt) if m.jnt_type[j] == 0]


def _T_and_c(m, qpos, qvel):
    """``v_mj = T v_ld`` and the acceleration offset ``a_mj = T a_ld + c``, from MuJoCo's definition of
    free-joint velocities (linear in the world frame, angular in the body frame)."""
    T = np.eye(m.nv)
    c = np.zeros(m.nv)
    for qa, va in _free_joints(m):
        R = _rot(qpos[qa + 3 : qa + 7])
        T[va : va + 3, va : va + 3] = R
        v_local = R.T @ qvel[va : va + 3]
        c[va : va + 3] = R @ np.cross(qvel[va + 3 : va + 6], v_local)
    return T, c


def _random_mj_state(m, rng):
    qpos = m.qpos0 + 0.6 * rng.standard_normal(m.nq)
    for j in range(m.njnt):
        a = int(m.jnt_qposadr[j])
        if m.jnt_type[j] == 0:
            qpos[a : a + 3] = rng.uniform(-1, 1, 3)
            qpos[a + 3 : a + 7] = rng.standard_normal(4)
        elif m.jnt_type[j] == 1:
            qpos[a : a + 4] = rng.standard_normal(4)
    mujoco.mj_normalizeQuat(m, qpos)
    return qpos, rng.standard_normal(m.nv)


def _mj_dynamics(m, d, qpos, qvel):
    d.qpos[:] = qpos
    d.qvel[:] = qvel
    mujoco.mj_forward(m, d)
    M = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, M)
    return M, d.qfrc_bias.copy()


def _rel(a, b) -> float:
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


# ------------------------------------------------------------------------------------------------
# trees
TREES = [
    "tree_features.xml",
    "dm_quadruped",
    "dm_humanoid",
    "dm_manipulator",
    "gym_ant",
    "gym_humanoid",
    "gym_pusher",
    "gym_hopper",
    "dm_dog",
]


@pytest.mark.parametrize("key", TREES)
def test_tree_mass_matrix_and_bias_match_mujoco(key):
    path = _path(key)
    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    model = ld.load_mjcf(path, equality="ignore", tendons="ignore")
    assert not model.has_constraints
    assert (model.nq, model.nv) == (m.nq, m.nv)
    assert np.array_equal(model.armature, m.dof_armature)
    data = model.create_data()
    rng = np.random.default_rng(13)
    worst_M = worst_b = 0.0
    for _ in range(N_STATES):
        qpos, qvel = _random_mj_state(m, rng)
        M_mj, b_mj = _mj_dynamics(m, d, qpos, qvel)
        T, c = _T_and_c(m, qpos, qvel)
        q, v = ld.from_mujoco(model, qpos, qvel)
        worst_M = max(worst_M, _rel(ld.crba(model, data, q), T.T @ M_mj @ T))
        worst_b = max(worst_b, _rel(ld.nonlinear_effects(model, data, q, v), T.T @ (b_mj + M_mj @ c)))
    assert worst_M < TREE_TOL, worst_M
    assert worst_b < TREE_TOL, worst_b


def _all_shipped() -> list[str]:
    out = []
    for package, folder in (("dm_control", "suite"), ("gymnasium", "envs/mujoco/assets")):
        spec = importlib.util.find_spec(package)  # a test dependency: missing fails the collection
        assert spec is not None and spec.submodule_search_locations, f"{package} (a test dependency) missing"
        root = Path(list(spec.submodule_search_locations)[0])
        found = [str(p.relative_to(root.parent)) for p in sorted((root / folder).glob("*.xml"))]
        assert found, f"{package} ships no MJCF file in {folder} (moved in this version?)"
        out += found
    return out


@pytest.mark.parametrize("relative", _all_shipped())
def test_every_shipped_mjcf_model_matches_mujoco(relative):
    """Every MJCF file dm_control's suite and gymnasium ship, as a tree (tendons and equalities
    ignored): M and bias on 5 random states."""
    package = relative.split("/")[0]
    path = _shipped(package, relative.split("/", 1)[1])
    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    model = ld.load_mjcf(path, equality="ignore", tendons="ignore")
    data = model.create_data()
    rng = np.random.default_rng(11)
    for _ in range(5 if m.nv else 0):
        qpos, qvel = _random_mj_state(m, rng)
        M_mj, b_mj = _mj_dynamics(m, d, qpos, qvel)
        T, c = _T_and_c(m, qpos, qvel)
        q, v = ld.from_mujoco(model, qpos, qvel)
        assert _rel(ld.crba(model, data, q), T.T @ M_mj @ T) < TREE_TOL
        assert _rel(ld.nonlinear_effects(model, data, q, v), T.T @ (b_mj + M_mj @ c)) < TREE_TOL


@pytest.mark.parametrize("key", ["tree_features.xml", "dm_humanoid", "dm_quadruped"])
def test_site_frames_move_as_in_mujoco(key):
    """Kinematics and velocity conventions, independently of the mass matrix: site placements and
    site velocities (MuJoCo's mj_objectVelocity in the site frame) equal loopdyn's op frames."""
    path = _path(key)
    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    model = ld.load_mjcf(path, equality="ignore", tendons="ignore")
    data = model.create_data()
    sites = [mujoco.mj_id2name(m, mujoco.mjtObj.mjOBJ_SITE, s) for s in range(m.nsite)]
    sites = [(s, n) for s, n in enumerate(sites) if n]
    assert sites
    rng = np.random.default_rng(5)
    for _ in range(5):
        qpos, qvel = _random_mj_state(m, rng)
        d.qpos[:], d.qvel[:] = qpos, qvel
        mujoco.mj_forward(m, d)
        q, v = ld.from_mujoco(model, qpos, qvel)
        ld.forward_kinematics(model, data, q, v)
        for s, name in sites:
            fid = model.frame_id(name, "op")
            X = ld.frame_placement(model, data, fid)
            assert np.allclose(X[:3, 3], d.site_xpos[s], rtol=0, atol=1e-12)
            assert np.allclose(X[:3, :3], d.site_xmat[s].reshape(3, 3), rtol=0, atol=1e-12)
            res = np.zeros(6)
            mujoco.mj_objectVelocity(m, d, mujoco.mjtObj.mjOBJ_SITE, s, res, 1)  # [ω; v] local
            expected = np.r_[res[3:], res[:3]]
            assert np.allclose(ld.frame_velocity(model, data, fid), expected, rtol=0, atol=1e-11)


@pytest.mark.parametrize("key", ["tree_features.xml", "dm_humanoid"])
def test_floating_base_false_welds_the_free_body_at_its_initial_pose(key):
    """The welded model is MuJoCo's with the free joint held at qpos0: its M and bias are the other
    joints' block of mj_fullM and qfrc_bias with that base pose and zero base velocity."""
    path = _path(key)
    m = mujoco.MjModel.from_xml_path(str(path))
    d = mujoco.MjData(m)
    model = ld.load_mjcf(path, floating_base=False, equality="ignore", tendons="ignore")
    assert (model.nq, model.nv) == (m.nq - 7, m.nv - 6)
    data = model.create_data()
    rng = np.random.default_rng(3)
    for _ in range(N_STATES):
        qpos, qvel = _random_mj_state(m, rng)
        qpos[:7], qvel[:6] = m.qpos0[:7], 0.0  # the free joint comes first in these files
        M, b = _mj_dynamics(m, d, qpos, qvel)
        q, v = ld.from_mujoco(model, qpos, qvel)
        if m.nq == m.nv + 1:  # no ball joint besides the free joint: the very same numbers
            assert np.array_equal(q, qpos[7:])
        assert _rel(ld.crba(model, data, q), M[6:, 6:]) < TREE_TOL
        assert _rel(ld.nonlinear_effects(model, data, q, v), b[6:]) < TREE_TOL
        qpos2, qvel2 = ld.to_mujoco(model, q, v)
        assert np.array_equal(qpos2, qpos) and np.array_equal(qvel2, qvel)


def test_tree_features_structure():
    """The hand-written tree: joint types, chains of massless bodies, ref folded into placements."""
    model = ld.load_mjcf(DATA / "tree_features.xml")
    kinds = [b.joint.kind for b in model.bodies]
    assert kinds == [
        "free-flyer",
        "revolute",
        "revolute",
        "prismatic",
        "spherical",
        "revolute",
        "revolute",
        "spherical",
        "prismatic",
    ]
    assert model.body_names[2:5] == ["upper__hip_x", "upper__hip_y", "upper"]
    assert model.bodies[1].inertia.mass == 0.0 and model.bodies[2].inertia.mass == 0.0
    m = mujoco.MjModel.from_xml_path(str(DATA / "tree_features.xml"))
    # the weld-merged foot lumps into the lower leg: total mass is MuJoCo's
    assert model.mass == pytest.approx(float(np.sum(m.body_mass)), rel=1e-14)
    assert np.allclose(model.gravity, [0.3, -0.2, -9.7])


def test_coordinate_round_trips_are_exact():
    path = DATA / "tree_features.xml"
    m = mujoco.MjModel.from_xml_path(str(path))
    model = ld.load_mjcf(path)
    rng = np.random.default_rng(2)
    free = _free_joints(m)
    lin = np.zeros(m.nv, bool)
    for _, va in free:
        lin[va : va + 3] = True
    for _ in range(N_STATES):
        qpos, qvel = _random_mj_state(m, rng)
        q, v = ld.from_mujoco(model, qpos, qvel)
        assert ld.is_normalized(model, q)
        qpos2, qvel2 = ld.to_mujoco(model, q, v)
        assert np.array_equal(qpos2, qpos)  # a permutation: bit for bit
        assert np.array_equal(qvel2[~lin], qvel[~lin])
        assert np.allclose(qvel2[lin], qvel[lin], rtol=1e-15, atol=1e-15)  # rotated there and back
        q3, v3 = ld.from_mujoco(model, *ld.to_mujoco(model, q, v))
        assert np.array_equal(q3, q)
        # the layouts: quaternions (w,x,y,z) -> (x,y,z,w); free linear velocity into the body frame
        qa, va = free[0]
        assert np.array_equal(q[qa + 3 : qa + 7], qpos[[qa + 4, qa + 5, qa + 6, qa + 3]])
        v_body = _rot(qpos[qa + 3 : qa + 7]).T @ qvel[va : va + 3]
        assert np.allclose(v[va : va + 3], v_body, rtol=0, atol=1e-15)


# ------------------------------------------------------------------------------------------------
# models with equality constraints: C-ABA against the KKT solution built from MuJoCo's quantities
def _eq_jacobian(m, d, qpos, qvel):
    d.qpos[:], d.qvel[:] = qpos, qvel
    mujoco.mj_forward(m, d)
    rows = d.efc_type == mujoco.mjtConstraint.mjCNSTR_EQUALITY
    return d.efc_J.reshape(d.nefc, m.nv)[rows].copy(), d.efc_pos[rows].copy()


def _jdot_qdot(m, d, qpos, qvel, h=1e-3):
    """J̇q̇ by a 4th-order central difference of efc_J along q(t) = qpos ⊕ t·qvel."""
    Js = []
    for t in (-2 * h, -h, h, 2 * h):
        qt = qpos.copy()
        mujoco.mj_integratePos(m, qt, qvel, t)
        Js.append(_eq_jacobian(m, d, qt, qvel)[0])
    Jdot = (Js[0] - 8 * Js[1] + 8 * Js[2] - Js[3]) / (12 * h)
    return Jdot @ qvel


def _kkt(m, d, qpos, qvel, tau):
    """MuJoCo's M, bias, equality rows J (and residual), k = −J̇q̇, the KKT accelerations for ``tau``
    and the unconstrained ones (for the negative control)."""
    M, b = _mj_dynamics(m, d, qpos, qvel)
    J, residual = _eq_jacobian(m, d, qpos, qvel)
    k = -_jdot_qdot(m, d, qpos, qvel)
    U, s, Vt = np.linalg.svd(J)
    r = int(np.sum(s > 1e-9 * s[0]))
    Jr, kr = Vt[:r], (U.T @ k)[:r] / s[:r]
    n = m.nv
    A = np.zeros((n + r, n + r))
    A[:n, :n], A[:n, n:], A[n:, :n] = M, Jr.T, Jr
    sol = np.linalg.solve(A, np.r_[tau - b, kr])
    return M, b, J, k, residual, sol[:n], np.linalg.solve(M, tau - b)


def _projected(M, b, J, k, ind):
    """``GᵀMG`` and ``Gᵀ(b + M g)`` with ``v = G v[ind]``, ``a = G a[ind] + g`` solving ``J v = 0``,
    ``J a = k`` for the dependent coordinates (least squares over the redundant rows, which are
    consistent)."""
    n = M.shape[0]
    dep = [i for i in range(n) if i not in set(ind)]
    G = np.zeros((n, len(ind)))
    G[ind, np.arange(len(ind))] = 1.0
    g = np.zeros(n)
    if dep:
        G[dep] = -np.linalg.lstsq(J[:, dep], J[:, ind], rcond=None)[0]
        g[dep] = np.linalg.lstsq(J[:, dep], k, rcond=None)[0]
    return G.T @ M @ G, G.T @ (b + M @ g)


def _independent_spanning_dofs(model) -> list[int]:
    out = []
    for c in model.clusters().clusters:
        if c.kind == 0:
            b = model.bodies[c.bodies[0] - 1]
            out.extend(range(b.idx_v, b.idx_v + b.joint.nv))
        else:
            out.extend(model.bodies[c.bodies[k] - 1].idx_v for k in c.independent)
    return out


def _states_near_reference(model, rng, n, scale=0.3):
    """Configurations reached from the reference configuration (the assembly the file describes) by
    ``loopdyn.integrate`` along a random independent velocity, and random velocities.

    Not ``random_configuration``: a weld (or revolute) loop's orientation rows vanish for a relative
    rotation of π as well, and Newton's method from a far start can land on that spurious branch."""
    q0 = ld.neutral(model)
    return [
        (ld.integrate(model, q0, scale * rng.standard_normal(model.nv)), rng.standard_normal(model.nv))
        for _ in range(n)
    ]


CONSTRAINED = [
    "fourbar_connect.xml",
    "geared_pair.xml",
    "weld_slider.xml",
    "sites_loops.xml",
    "floating_linkage.xml",
    "dm_quadruped",
    "dm_manipulator",
]


@pytest.mark.parametrize("key", CONSTRAINED)
def test_constrained_forward_dynamics_matches_kkt_from_mujoco(key):
    path = _path(key)
    m = mujoco.MjModel.from_xml_path(str(path))
    m.opt.jacobian = mujoco.mjtJacobian.mjJAC_DENSE
    d = mujoco.MjData(m)
    model = ld.load_mjcf(path, tendons="ignore")
    assert model.has_constraints
    data = model.create_data()
    rng = np.random.default_rng(7)
    ind = _independent_spanning_dofs(model)
    assert len(ind) == model.nv
    worst_a = worst_H = worst_b = 0.0
    for q, v in _states_near_reference(model, rng, N_STATES):
        qpos, qvel = ld.to_mujoco(model, q, v)
        T, c = _T_and_c(m, qpos, qvel)
        tau_span = np.zeros(m.nv)
        tau_span[ind] = rng.standard_normal(model.nv)
        tau_mj = np.linalg.solve(T.T, tau_span)  # τ_ld = Tᵀ τ_mj (same power)
        M, b, J, k, residual, a_kkt, a_free = _kkt(m, d, qpos, qvel, tau_mj)
        assert np.max(np.abs(residual)) < 1e-10  # the loopdyn state satisfies MuJoCo's constraints
        assert np.max(np.abs(J @ qvel)) < 1e-10 * max(1.0, np.max(np.abs(qvel)))
        assert _rel(a_free, a_kkt) > 1e-6  # negative control: the constraints matter
        a = ld.aba(model, data, q, v, tau_span[ind])
        _, _, a_span = ld.to_spanning(model, q, v, a)
        worst_a = max(worst_a, _rel(T @ a_span + c, a_kkt))
        # cluster mass matrix and bias in the independent coordinates, from MuJoCo's quantities in
        # loopdyn's coordinates: M_ld = Tᵀ M T, b_ld = Tᵀ (b + M c), J_ld = J T, k_ld = k − J c
        H, nle = _projected(T.T @ M @ T, T.T @ (b + M @ c), J @ T, k - J @ c, ind)
        worst_H = max(worst_H, _rel(ld.crba(model, data, q), H))
        worst_b = max(worst_b, _rel(ld.nonlinear_effects(model, data, q, v), nle))
    assert worst_a < TOL, worst_a
    assert worst_H < TREE_TOL, worst_H
    assert worst_b < TOL, worst_b


def test_constraint_kinds():
    four = ld.load_mjcf(DATA / "fourbar_connect.xml")
    assert [(k.name, k.kind) for k in four.constraints] == [("closure", "point")]
    weld = ld.load_mjcf(DATA / "weld_slider.xml")
    assert [(k.name, k.kind) for k in weld.constraints] == [("tip_weld", "weld")]
    geared = ld.load_mjcf(DATA / "geared_pair.xml")
    kinds = {k.name: type(k).__name__ for k in geared.constraints}
    # gear has no offset (linear); the belt's reference length is -0.5·ref(c) = -0.025 and offset_gear
    # has a0 = 0.3: affine, so implicit formulas
    assert kinds == {
        "gear": "LinearConstraint",
        "belt_lock": "ImplicitConstraint",
        "offset_gear": "ImplicitConstraint",
        "rope_belt": "ImplicitConstraint",  # e − 0.3 d − 1.5 (a − 0.5 c) = L⁰_rope − 1.5 L⁰_belt ≠ 0
    }
    gear = next(k for k in geared.constraints if k.name == "gear")
    assert gear.joints == ("a", "b") and np.array_equal(gear.K, [[2.0, 1.0]])  # b = -2 a
    tree = ld.load_mjcf(DATA / "geared_pair.xml", equality="ignore")
    assert not tree.has_constraints and tree.nv == 6


def test_explicit_cluster_from_mujoco_takes_independent_coordinates():
    model = ld.load_mjcf(_path("dm_quadruped"))
    m = mujoco.MjModel.from_xml_path(str(_path("dm_quadruped")))
    q = ld.random_configuration(model, np.random.default_rng(1))
    v = np.random.default_rng(2).standard_normal(model.nv)
    qpos, qvel = ld.to_mujoco(model, q, v)
    assert qpos.shape == (m.nq,) and qvel.shape == (m.nv,)
    q2, v2 = ld.from_mujoco(model, qpos, qvel)
    assert np.array_equal(q2, q)
    assert np.allclose(v2, v, rtol=1e-15, atol=1e-15)
    qs, vs = ld.from_mujoco(model, qpos, qvel, spanning=True)
    assert np.array_equal(ld.to_mujoco(model, qs, vs, spanning=True)[0], qpos)


# ------------------------------------------------------------------------------------------------
# errors
def _xml(body: str, extra: str = "") -> str:
    return f"""<mujoco model="t"><worldbody>{body}</worldbody>{extra}</mujoco>"""


ARM = """<body name="a"><joint name="ja" axis="0 1 0"/><geom size="0.1" mass="1"/>
  <body name="b" pos="0 0 -0.5"><joint name="jb" axis="0 1 0"/><geom size="0.1" mass="1"/></body></body>
  <body name="c" pos="1 0 0"><joint name="jc" axis="0 1 0"/><geom size="0.1" mass="1"/></body>"""


def test_missing_file():
    with pytest.raises(MJCFFileNotFoundError, match="no_such_robot.xml"):
        ld.load_mjcf("no_such_robot.xml")
    assert issubclass(MJCFFileNotFoundError, FileNotFoundError)


def test_bad_xml(tmp_path):
    bad = tmp_path / "bad.xml"
    bad.write_text("<mujoco><worldbody><body></worldbody></mujoco>")
    with pytest.raises(MJCFError, match="bad.xml"):
        ld.load_mjcf(bad)
    with pytest.raises(MJCFError):
        ld.load_mjcf(_xml("<body><joint type='hinge' axis='0 0 0'/><geom size='1'/></body>"))


def test_connect_naming_a_missing_body():
    with pytest.raises(MJCFError, match="nobody"):
        ld.load_mjcf(_xml(ARM, '<equality><connect body1="b" body2="nobody" anchor="0 0 0"/></equality>'))


def test_nonlinear_polycoef_is_refused():
    cubic = '<joint name="cubic" joint1="ja" joint2="jc" polycoef="0 1 0 0.2 0"/>'
    xml = _xml(ARM, f"<equality>{cubic}</equality>")
    with pytest.raises(UnsupportedFeatureError, match="cubic.*nonlinear"):
        ld.load_mjcf(xml)
    model = ld.load_mjcf(xml, equality="ignore")  # the explicit way around
    assert not model.has_constraints


def test_spatial_tendon_is_refused():
    bodies = """<body name="a"><joint name="ja" axis="0 1 0"/><geom size="0.1" mass="1"/><site name="s1"/>
      </body><body name="c" pos="1 0 0"><joint name="jc" axis="0 1 0"/><geom size="0.1" mass="1"/>
      <site name="s2"/><joint name="jc2" axis="1 0 0"/></body>"""
    xml = _xml(bodies, '<tendon><spatial name="cable"><site site="s1"/><site site="s2"/></spatial></tendon>')
    with pytest.raises(UnsupportedFeatureError, match="spatial tendon 'cable'"):
        ld.load_mjcf(xml)
    assert ld.load_mjcf(xml, tendons="ignore").nv == 3
    with pytest.raises(UnsupportedFeatureError, match="cable"):  # an equality on it is never ignored
        ld.load_mjcf(
            xml.replace("</tendon>", '</tendon><equality><tendon tendon1="cable"/></equality>'),
            tendons="ignore",
        )


def test_flex_is_refused():
    xml = _xml('<flexcomp name="cloth" type="grid" count="3 3 1" spacing="0.1 0.1 0.1" dim="2"/>')
    with pytest.raises(UnsupportedFeatureError, match="flex 'cloth'"):
        ld.load_mjcf(xml)


def test_ball_joint_inside_a_loop_loads_as_a_gimbal_naming_it():
    """(Against MuJoCo: tests/test_ball_loops.py.)"""
    xml = _xml(
        """<body name="a"><joint name="ball_a" type="ball"/><geom size="0.1" mass="1"/></body>
        <body name="c" pos="1 0 0"><joint name="jc" axis="0 1 0"/><geom size="0.1" mass="1"/></body>""",
        '<equality><connect body1="a" body2="c" anchor="0.5 0 0"/></equality>',
    )
    with pytest.warns(JointConversionWarning, match="ball joint 'ball_a' is inside a loop.*Gimbal"):
        model = ld.load_mjcf(xml)
    assert model.compound_joint("ball_a").joint.kind == "gimbal" and model.nv == 1


def test_free_joint_options_and_bad_arguments():
    free = _xml('<body name="a"><freejoint name="root"/><geom size="0.1" mass="1"/></body>')
    assert ld.load_mjcf(free, floating_base=True).nv == 6
    assert ld.load_mjcf(free, floating_base=False).nv == 0
    with pytest.raises(UnsupportedFeatureError, match="floating_base=True"):
        ld.load_mjcf(_xml(ARM), floating_base=True)
    with pytest.raises(InputError, match="equality"):
        ld.load_mjcf(free, equality="soft")
    with pytest.raises(InputError, match="tendons"):
        ld.load_mjcf(free, tendons="maybe")
    with pytest.raises(InputError):
        ld.load_mjcf(3.5)


def test_conversion_input_errors():
    model = ld.load_mjcf(DATA / "tree_features.xml")
    nq, nv = model.nq, model.nv
    with pytest.raises(ShapeError, match="qpos"):
        ld.from_mujoco(model, np.zeros(nq - 1), np.zeros(nv))
    with pytest.raises(InputError, match="qvel"):
        ld.from_mujoco(model, np.r_[np.zeros(3), 1.0, np.zeros(nq - 4)], np.full(nv, np.nan))
    with pytest.raises(InputError, match="not loaded by load_mjcf"):
        ld.to_mujoco(ld.Model("plain"), np.zeros(0), np.zeros(0))
    model.add_body("extra", 0, ld.Revolute((0, 0, 1)))
    with pytest.raises(InputError, match="edited"):
        ld.to_mujoco(model, np.zeros(model.nq), np.zeros(model.nv))


def test_missing_mujoco_package_gives_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "mujoco", None)  # import mujoco now raises ImportError
    with pytest.raises(MissingDependencyError, match=r"loopdyn\[mjcf\]"):
        ld.load_mjcf(DATA / "tree_features.xml")
    assert issubclass(MissingDependencyError, LoopdynError)


def test_rest_of_the_library_does_not_import_mujoco():
    code = "import sys, loopdyn, loopdyn.robots, loopdyn.io; assert 'mujoco' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[1])


def test_cli_info_on_an_mjcf_file(capsys):
    from loopdyn.cli import main

    assert main(["info", str(DATA / "fourbar_connect.xml")]) == 0
    out = capsys.readouterr().out
    assert "fourbar_connect" in out and "closure" in out and "nv 1" in out
    assert main(["info", str(DATA / "no_such.xml")]) == 2
    assert "not found" in capsys.readouterr().err


def test_readme_mjcf_section_runs():
    import dm_control  # noqa: F401 (the documentation's MJCF section needs it: a test dependency)
    from doc_pages import code_blocks

    blocks = code_blocks("tutorials/robot-files", "## MuJoCo (MJCF) files")
    assert blocks
    ns: dict = {"ld": ld, "np": np}
    for code in blocks:
        exec(compile(code, "docs/tutorials/robot-files.md", "exec"), ns)
    assert ns["qpos"].shape == (ns["mj"].nq,) and np.array_equal(ns["qpos"], ns["mj"].qpos0)
    assert ns["ddq"].shape == (ns["quad"].nv,) and ns["quad"].nv == ns["mj"].nv - 4
    # the page's ddq is the constrained motion: MuJoCo's KKT accelerations at the same state
    quad, mj, q, v, ddq = ns["quad"], ns["mj"], ns["q"], ns["v"], ns["ddq"]
    mj.opt.jacobian = mujoco.mjtJacobian.mjJAC_DENSE
    d = mujoco.MjData(mj)
    T, c = _T_and_c(mj, ns["qpos"], ns["qvel"])
    *_, a_kkt, a_free = _kkt(mj, d, ns["qpos"], ns["qvel"], np.zeros(mj.nv))
    _, _, a_span = ld.to_spanning(quad, q, v, ddq)
    assert _rel(T @ a_span + c, a_kkt) < TOL
    assert _rel(a_free, a_kkt) > 1e-6  # negative control: the tendon equalities matter


def test_sources_and_gravity_flag():
    """A path, a str path, an XML string, bytes and a compiled MjModel give the same model; a
    disabled gravity flag gives zero gravity (qfrc_bias has none then)."""
    path = DATA / "fourbar_connect.xml"
    text = path.read_text()
    models = [
        ld.load_mjcf(path),
        ld.load_mjcf(str(path)),
        ld.load_mjcf(text),
        ld.load_mjcf(text.encode()),
        ld.load_mjcf(mujoco.MjModel.from_xml_path(str(path))),
    ]
    H = [ld.crba(mod, mod.create_data(), ld.neutral(mod)) for mod in models]
    assert all(np.array_equal(h, H[0]) for h in H)
    xml = _xml('<body><joint axis="0 1 0"/><geom size="0.1" pos="0.3 0 0"/></body>')
    assert np.array_equal(ld.load_mjcf(xml).gravity, [0.0, 0.0, -9.81])
    off = xml.replace('<mujoco model="t">', '<mujoco model="t"><option><flag gravity="disable"/></option>')
    assert np.array_equal(ld.load_mjcf(off).gravity, np.zeros(3))


# ------------------------------------------------------------------------------------------------
# random MJCF trees: every mapping rule at random (frames, anchors, refs, joint combinations, inertias)
def _random_mjcf(rng: np.random.Generator, nbodies: int) -> str:
    """A random MJCF tree: random body frames, top-level free joints, 0-3 joints per body (hinge,
    slide, ball) with random anchors, axes, refs and armatures, random full inertias."""

    def vec(n, scale=0.3):
        return " ".join(f"{x:.6g}" for x in scale * rng.standard_normal(n))

    def body(i: int, top: bool) -> str:
        out = [f'<body name="b{i}" pos="{vec(3)}" quat="{vec(4, 1.0)}">']
        if top and rng.random() < 0.5:
            out.append(f'<freejoint name="free{i}"/>')
        else:
            kinds = list(rng.choice(["hinge", "slide", "ball"], size=int(rng.integers(i == 0, 4))))
            if "ball" in kinds:  # MuJoCo: no rotation after a ball joint in the same body
                kinds = [k for k in kinds if k != "ball"]
                last_hinge = max((n + 1 for n, k in enumerate(kinds) if k == "hinge"), default=0)
                kinds.insert(last_hinge, "ball")
            for k, kind in enumerate(kinds):
                attrs = (
                    f'name="j{i}_{k}" type="{kind}" pos="{vec(3, 0.1)}" armature="{rng.uniform(0, 0.1):.4g}"'
                )
                if kind != "ball":
                    attrs += f' axis="{vec(3, 1.0)}" ref="{rng.uniform(-1, 1):.4g}"'
                out.append(f"<joint {attrs}/>")
        # a physical inertia: principal moments of a box (triangle inequality), randomly rotated
        x, y, z = rng.uniform(0.05, 0.5, 3) ** 2
        R = np.linalg.qr(rng.standard_normal((3, 3)))[0]
        inertia = R @ np.diag([y + z, x + z, x + y]) @ R.T
        full = " ".join(f"{inertia[a, b]:.12g}" for a, b in ((0, 0), (1, 1), (2, 2), (0, 1), (0, 2), (1, 2)))
        out.append(f'<inertial pos="{vec(3, 0.1)}" mass="{rng.uniform(0.2, 2):.4g}" fullinertia="{full}"/>')
        return "\n".join(out)

    text = ""
    depth = 0
    for i in range(nbodies):
        while depth and rng.random() < 0.35:  # close a random number of open bodies
            text += "</body>\n"
            depth -= 1
        text += body(i, top=depth == 0) + "\n"
        depth += 1
    text += "</body>\n" * depth
    return (
        '<mujoco model="random"><compiler angle="radian"/><option gravity="0.4 -0.3 -9.6"/>'
        f"<worldbody>{text}</worldbody></mujoco>"
    )


@pytest.mark.parametrize("seed", range(16))
def test_random_mjcf_trees_match_mujoco(seed):
    rng = np.random.default_rng([1300, seed])
    xml = _random_mjcf(rng, int(rng.integers(2, 9)))
    m = mujoco.MjModel.from_xml_string(xml)
    d = mujoco.MjData(m)
    model = ld.load_mjcf(xml)
    assert (model.nq, model.nv) == (m.nq, m.nv)
    data = model.create_data()
    assert m.nv > 0  # body 0 always has a joint
    for _ in range(5):
        qpos, qvel = _random_mj_state(m, rng)
        M_mj, b_mj = _mj_dynamics(m, d, qpos, qvel)
        T, c = _T_and_c(m, qpos, qvel)
        q, v = ld.from_mujoco(model, qpos, qvel)
        assert _rel(ld.crba(model, data, q), T.T @ M_mj @ T) < TREE_TOL
        assert _rel(ld.nonlinear_effects(model, data, q, v), T.T @ (b_mj + M_mj @ c)) < TREE_TOL
        qpos2, _ = ld.to_mujoco(model, q, v)
        assert np.array_equal(qpos2, qpos)


@pytest.mark.parametrize("key", ["tree_features.xml", "floating_linkage.xml"])
def test_batches_of_states_convert_row_by_row(key):
    path = _path(key)
    m = mujoco.MjModel.from_xml_path(str(path))
    model = ld.load_mjcf(path)
    rng = np.random.default_rng(8)
    if model.has_constraints:
        states = _states_near_reference(model, rng, 4)
        Q, V = np.array([s[0] for s in states]), np.array([s[1] for s in states])
    else:
        pairs = [_random_mj_state(m, rng) for _ in range(4)]
        Q, V = ld.from_mujoco(model, np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs]))
    qpos, qvel = ld.to_mujoco(model, Q, V)
    assert qpos.shape == (4, m.nq) and qvel.shape == (4, m.nv)
    for k in range(4):
        one = ld.to_mujoco(model, Q[k], V[k])
        assert np.array_equal(qpos[k], one[0])  # gathers: bit for bit
        assert np.allclose(qvel[k], one[1], rtol=1e-15, atol=1e-15)  # rotated free-joint velocity
        back = ld.from_mujoco(model, qpos[k], qvel[k])
        assert np.array_equal(ld.from_mujoco(model, qpos, qvel)[0][k], back[0])
        assert np.allclose(ld.from_mujoco(model, qpos, qvel)[1][k], back[1], rtol=1e-15, atol=1e-15)
    with pytest.raises(ShapeError, match="different numbers of states"):
        ld.from_mujoco(model, qpos, qvel[:3])
    with pytest.raises(ShapeError):
        ld.from_mujoco(model, qpos[None], qvel[None])  # 3-D
