"""Configuration-space helpers (neutral, random_configuration, integrate, difference, normalize)
against Pinocchio on random trees mixing every joint type, plus round trips and input errors."""

from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
import pytest

from loopdyn.errors import ConfigurationError, InputError, NonFiniteError, ShapeError
from loopdyn.model import (
    FreeFlyer,
    Model,
    Prismatic,
    Revolute,
    RevoluteUnbounded,
    Spherical,
)
from loopdyn.model.configuration import (
    difference,
    integrate,
    is_normalized,
    neutral,
    normalize,
    random_configuration,
)
from loopdyn.spatial import Inertia, quat_to_matrix, so3_exp

TOL = 1e-12
SEEDS = list(range(12))


# ----------------------------------------------------------------------------------------------
# random twin models
def _random_rotation(rng) -> np.ndarray:
    q = rng.normal(size=4)
    return quat_to_matrix(q / np.linalg.norm(q))


def _random_axis(rng) -> np.ndarray:
    a = rng.normal(size=3)
    return a / np.linalg.norm(a)


def build_twins(seed: int, nbodies: int = 10, free_root: bool | None = None):
    """The same random tree in loopdyn and in Pinocchio (joint i ↔ joint i)."""
    rng = np.random.default_rng(seed)
    lm = Model(f"tree{seed}")
    pm = pin.Model()
    if free_root is None:
        free_root = seed % 3 != 2
    kinds = ["revolute", "revolute_limited", "prismatic", "prismatic_limited", "unbounded", "spherical"]
    for i in range(1, nbodies + 1):
        parent = 0 if i == 1 else int(rng.integers(0, i))
        R, p = _random_rotation(rng), rng.uniform(-1.0, 1.0, 3)
        inertia = Inertia(1.0, rng.uniform(-0.1, 0.1, 3), np.diag([0.1, 0.2, 0.25]))
        if i == 1 and free_root:
            kind = "free"
        else:
            kind = kinds[int(rng.integers(0, len(kinds)))]
        axis = _random_axis(rng)
        if kind == "free":
            joint, pj = FreeFlyer(lower=(-2.0, -1.0, 0.0), upper=(2.0, 1.0, 3.0)), pin.JointModelFreeFlyer()
        elif kind.startswith("revolute"):
            lim = (-0.5, 1.7) if kind.endswith("limited") else (None, None)
            joint, pj = Revolute(tuple(axis), *lim), pin.JointModelRevoluteUnaligned(axis)
        elif kind.startswith("prismatic"):
            lim = (-0.2, 0.3) if kind.endswith("limited") else (None, None)
            joint, pj = Prismatic(tuple(axis), *lim), pin.JointModelPrismaticUnaligned(axis)
        elif kind == "unbounded":
            joint = RevoluteUnbounded(tuple(axis))
            pj = pin.JointModelRevoluteUnboundedUnaligned()
            pj.axis = axis
        else:
            joint, pj = Spherical(), pin.JointModelSpherical()
        lm.add_body(f"b{i}", parent, joint, (R, p), inertia, joint_name=f"j{i}")
        jid = pm.addJoint(parent, pj, pin.SE3(R, p), f"j{i}")
        assert jid == i
    assert (lm.nq, lm.nv) == (pm.nq, pm.nv)
    for i, b in enumerate(lm.bodies, start=1):
        assert (b.idx_q, b.idx_v) == (pm.joints[i].idx_q, pm.joints[i].idx_v)
    return lm, pm


@pytest.fixture(params=SEEDS, ids=[f"tree{s}" for s in SEEDS])
def twins(request):
    return build_twins(request.param)


def assert_close(a, b, tol: float = TOL) -> None:
    a, b = np.asarray(a, float), np.asarray(b, float)
    assert a.shape == b.shape
    scale = max(1.0, float(np.max(np.abs(b), initial=0.0)))
    err = float(np.max(np.abs(a - b), initial=0.0))
    assert err <= tol * scale, f"max |a - b| = {err:.3g}\n{a}\n{b}"


def _quaternion_slices(model):
    """(joint name, slice) of every quaternion and (cos, sin) pair of ``model``'s q."""
    out = []
    for b in model.bodies:
        if isinstance(b.joint, Spherical):
            out.append((b.joint_name, slice(b.idx_q, b.idx_q + 4)))
        elif isinstance(b.joint, FreeFlyer):
            out.append((b.joint_name, slice(b.idx_q + 3, b.idx_q + 7)))
        elif isinstance(b.joint, RevoluteUnbounded):
            out.append((b.joint_name, slice(b.idx_q, b.idx_q + 2)))
    return out


# ----------------------------------------------------------------------------------------------
# against Pinocchio
def test_neutral(twins):
    lm, pm = twins
    assert_close(neutral(lm), pin.neutral(pm), 0.0)


@pytest.mark.parametrize("scale", [0.3, 2.0, 8.0])
def test_integrate_vs_pinocchio(twins, scale):
    """Large velocities too (|ω| > π, > 2π), where the sign conventions of the quaternions matter."""
    lm, pm = twins
    rng = np.random.default_rng(7)
    for _ in range(20):
        q = random_configuration(lm, rng)
        v = rng.normal(size=lm.nv) * scale
        assert_close(integrate(lm, q, v), pin.integrate(pm, q, v))
        dt = float(rng.uniform(-2.0, 2.0))
        assert_close(integrate(lm, q, v, dt), pin.integrate(pm, q, v * dt))


def test_difference_vs_pinocchio(twins):
    lm, pm = twins
    rng = np.random.default_rng(8)
    for _ in range(30):
        q0 = random_configuration(lm, rng)
        q1 = random_configuration(lm, rng)
        d = difference(lm, q0, q1)
        # Pinocchio's log is less accurate near a half turn; elsewhere agree to rounding
        assert_close(d, pin.difference(pm, q0, q1), 1e-10)
        near = integrate(lm, q0, rng.normal(size=lm.nv) * 0.5)
        assert_close(difference(lm, q0, near), pin.difference(pm, q0, near))


def test_round_trips(twins):
    lm, _ = twins
    rng = np.random.default_rng(9)
    for _ in range(30):
        q0 = random_configuration(lm, rng)
        q1 = random_configuration(lm, rng)
        q1_again = integrate(lm, q0, difference(lm, q0, q1))
        # same configuration; quaternions may differ by sign (same rotation)
        assert_close(difference(lm, q1, q1_again), np.zeros(lm.nv), 1e-11)
        for name, sl in _quaternion_slices(lm):
            a, b = q1_again[sl], q1[sl]
            assert min(np.abs(a - b).max(), np.abs(a + b).max()) <= 1e-11, name
        v = rng.normal(size=lm.nv) * 0.4  # small enough to stay below π per rotation
        assert_close(difference(lm, q0, integrate(lm, q0, v)), v, 1e-11)
        assert_close(difference(lm, q0, q0), np.zeros(lm.nv), 1e-15)
        assert_close(integrate(lm, q0, np.zeros(lm.nv)), q0, 0.0)
        # antisymmetry
        assert_close(difference(lm, q1, q0), -difference(lm, q0, q1), 1e-10)


def test_integrate_is_a_flow(twins):
    """Constant velocity: integrating for dt1 then dt2 equals integrating for dt1 + dt2."""
    lm, _ = twins
    rng = np.random.default_rng(10)
    for _ in range(10):
        q = random_configuration(lm, rng)
        v = rng.normal(size=lm.nv)
        a = integrate(lm, integrate(lm, q, v, 0.3), v, 0.45)
        b = integrate(lm, q, v, 0.75)
        assert_close(difference(lm, a, b), np.zeros(lm.nv), 1e-11)


def test_free_flyer_velocity_is_local():
    """FreeFlyer v = (linear, angular) in the child frame: a pure linear velocity along local x moves
    the body along its rotated x axis; the position rate at dt → 0 is R v_lin."""
    lm = Model()
    lm.add_body("base", 0, FreeFlyer())
    R = so3_exp([0.3, -0.8, 1.1])
    q = np.r_[1.0, 2.0, 3.0, pin.Quaternion(R).coeffs()]
    out = integrate(lm, q, [1.0, 0.0, 0.0, 0.0, 0.0, 0.0], 0.5)
    assert_close(out[:3], q[:3] + 0.5 * R[:, 0])
    out = integrate(lm, q, [0.0, 0.0, 0.0, 0.0, 0.0, 0.7], 1.0)
    assert_close(quat_to_matrix(out[3:]), R @ so3_exp([0.0, 0.0, 0.7]))
    assert_close(out[:3], q[:3])


# ----------------------------------------------------------------------------------------------
# random configurations, normalization
def test_random_configuration_limits_and_norms(twins):
    lm, pm = twins
    lo, hi = lm.lower_position_limit, lm.upper_position_limit
    for seed in range(20):
        q = random_configuration(lm, seed)
        assert q.shape == (lm.nq,)
        assert is_normalized(lm, q, 1e-14)
        for name, sl in _quaternion_slices(lm):
            assert abs(np.linalg.norm(q[sl]) - 1.0) < 1e-14, name
        for b in lm.bodies:
            j, i = b.joint, b.idx_q
            if isinstance(j, Revolute | Prismatic):
                finite_lo, finite_hi = np.isfinite(lo[i]), np.isfinite(hi[i])
                if finite_lo and finite_hi:
                    assert lo[i] <= q[i] <= hi[i]
                elif isinstance(j, Revolute):
                    assert -math.pi <= q[i] <= math.pi
                else:
                    assert -1.0 <= q[i] <= 1.0
            elif isinstance(j, FreeFlyer):
                assert np.all(q[i : i + 3] >= np.array(j.lower)) and np.all(q[i : i + 3] <= np.array(j.upper))
        # usable by Pinocchio as is
        assert pin.isNormalized(pm, q, 1e-12)


def test_random_configuration_rng():
    lm, _ = build_twins(3)
    assert_close(random_configuration(lm, 42), random_configuration(lm, 42), 0.0)
    assert_close(random_configuration(lm, np.random.default_rng(5)),
                 random_configuration(lm, np.random.default_rng(5)), 0.0)
    assert not np.array_equal(random_configuration(lm, 1), random_configuration(lm, 2))
    assert random_configuration(lm).shape == (lm.nq,)
    with pytest.raises(InputError):
        random_configuration(lm, "seed")


def test_random_configuration_one_sided_limits():
    lm = Model()
    lm.add_body("a", 0, Revolute((0, 0, 1), lower=1.0))
    lm.add_body("b", 1, Prismatic((1, 0, 0), upper=-3.0))
    lm.add_body("c", 2, Revolute((0, 1, 0), lower=0.5, upper=0.5))
    rng = np.random.default_rng(0)
    for _ in range(50):
        q = random_configuration(lm, rng)
        assert 1.0 <= q[0] <= 1.0 + 2 * math.pi
        assert -5.0 <= q[1] <= -3.0
        assert q[2] == 0.5


def test_random_rotations_are_uniform():
    """Haar measure: the rotation angle θ has density (1 - cos θ)/π, mean π/2 + 2/π."""
    lm = Model()
    lm.add_body("ball", 0, Spherical())
    rng = np.random.default_rng(123)
    quats = np.array([random_configuration(lm, rng) for _ in range(20000)])
    theta = 2.0 * np.arctan2(np.linalg.norm(quats[:, :3], axis=1), np.abs(quats[:, 3]))
    assert abs(theta.mean() - (math.pi / 2 + 2 / math.pi)) < 0.02
    assert np.all(quats[:, 3] >= 0.0)
    assert abs(quats[:, :3].mean(axis=0)).max() < 0.02


def test_normalize(twins):
    lm, _ = twins
    rng = np.random.default_rng(11)
    q = random_configuration(lm, rng)
    bad = q.copy()
    for _, sl in _quaternion_slices(lm):
        bad[sl] *= rng.uniform(0.5, 2.0)
    n = normalize(lm, bad)
    assert is_normalized(lm, n, 1e-15)
    assert_close(n, q, 1e-15)
    assert n is not bad
    if _quaternion_slices(lm):
        assert not is_normalized(lm, bad)
        assert is_normalized(lm, bad, tol=1.5)


def test_normalize_zero_quaternion():
    lm = Model()
    lm.add_body("ball", 0, Spherical(), joint_name="ball_joint")
    with pytest.raises(ConfigurationError, match="ball_joint"):
        normalize(lm, np.zeros(4))


# ----------------------------------------------------------------------------------------------
# input errors
def _model():
    lm = Model()
    lm.add_body("base", 0, FreeFlyer(), joint_name="root")
    lm.add_body("ball", 1, Spherical(), joint_name="shoulder")
    lm.add_body("wheel", 2, RevoluteUnbounded((0, 1, 0)), joint_name="wheel_joint")
    lm.add_body("arm", 2, Revolute((1, 0, 0)), joint_name="elbow")
    return lm


def test_shape_errors():
    lm = _model()
    q, v = neutral(lm), np.zeros(lm.nv)
    with pytest.raises(ShapeError, match=r"q .*size 14"):
        integrate(lm, q[:-1], v)
    assert (lm.nq, lm.nv) == (14, 11)
    with pytest.raises(ShapeError, match=r"v .*size 11"):
        integrate(lm, q, np.zeros(12))
    with pytest.raises(ShapeError, match=r"v .*size 11"):
        integrate(lm, q, v.reshape(-1, 1))
    with pytest.raises(ShapeError, match=r"q0 .*size 14"):
        difference(lm, np.zeros(3), q)
    with pytest.raises(ShapeError, match=r"q1 .*size 14"):
        difference(lm, q, q[None, :])
    with pytest.raises(ShapeError, match=r"q .*size 14"):
        normalize(lm, np.zeros(15))
    with pytest.raises(ShapeError, match=r"q .*size 14"):
        is_normalized(lm, np.zeros(2))
    with pytest.raises(InputError):
        integrate(lm, q, ["a"] * lm.nv)
    with pytest.raises(InputError):
        integrate(lm, q, v, dt="x")
    with pytest.raises(InputError):
        integrate(lm, q.astype(complex), v)
    # ShapeError is a ValueError for generic handlers
    assert issubclass(ShapeError, ValueError)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_errors(bad):
    lm = _model()
    q, v = neutral(lm), np.zeros(lm.nv)
    q_bad, v_bad = q.copy(), v.copy()
    q_bad[1], v_bad[4] = bad, bad
    with pytest.raises(NonFiniteError, match="q"):
        integrate(lm, q_bad, v)
    with pytest.raises(NonFiniteError, match="v"):
        integrate(lm, q, v_bad)
    with pytest.raises(NonFiniteError, match="dt"):
        integrate(lm, q, v, bad)
    with pytest.raises(NonFiniteError, match="q1"):
        difference(lm, q, q_bad)
    with pytest.raises(NonFiniteError):
        normalize(lm, q_bad)
    with pytest.raises(NonFiniteError):
        is_normalized(lm, q_bad)


@pytest.mark.parametrize(
    "where, joint", [(slice(3, 7), "root"), (slice(7, 11), "shoulder"), (slice(11, 13), "wheel_joint")]
)
def test_non_unit_configuration_errors(where, joint):
    lm = _model()
    q, v = neutral(lm), np.zeros(lm.nv)
    bad = q.copy()
    bad[where] *= 1.01
    with pytest.raises(ConfigurationError, match=joint):
        integrate(lm, bad, v)
    with pytest.raises(ConfigurationError, match=joint):
        difference(lm, bad, q)
    with pytest.raises(ConfigurationError, match=joint):
        difference(lm, q, bad)
    assert not is_normalized(lm, bad)
    # inputs are never modified, nor normalized silently
    assert np.linalg.norm(bad[where]) == pytest.approx(1.01)
    # within the tolerance: accepted, the norm error is kept, not corrected
    slight = q.copy()
    slight[where] *= 1.0 + 1e-8
    out = integrate(lm, slight, np.full(lm.nv, 0.1))
    assert np.linalg.norm(out[where]) == pytest.approx(1.0 + 1e-8, abs=1e-14)
    assert is_normalized(lm, slight)


def test_outputs_are_new_arrays():
    lm = _model()
    q, v = neutral(lm), np.zeros(lm.nv)
    out = integrate(lm, q, v)
    assert out is not q and not np.shares_memory(out, q)
    n = normalize(lm, q)
    assert not np.shares_memory(n, q)


def test_empty_model():
    lm = Model()
    assert neutral(lm).shape == (0,)
    assert random_configuration(lm, 0).shape == (0,)
    assert integrate(lm, [], []).shape == (0,)
    assert difference(lm, [], []).shape == (0,)
    assert is_normalized(lm, [])
