"""The relative pivot test of 1-DoF joints (issue 29 §6): a mass matrix singular to rounding raises.

A gimbal (three revolute sub-hinges on massless bodies) at its lock has a singular mass matrix, but
in floating point the last pivot of the articulated-body elimination comes out as a few rounding errors
of either sign: ``d > 0`` accepted it and the ABA returned accelerations of 1e16. Every tree path now
compares a 1-DoF pivot with ``SPD_RTOL`` times the joint's diagonal mass-matrix entry M_ii (the test
``spd_inverse`` applies to multi-DoF pivots), first against a configuration-independent bound of M_ii
(``W_MBOUND``), then, only if that cannot decide, against M_ii itself. The oracles: Pinocchio's
``JointModelSphericalZYX`` near the lock, dense solves with ``crba``, and the diagonal of ``crba``
for the bound.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from trees import random_inertia, random_rotation

import loopdyn as ld
from loopdyn.errors import SingularInertiaError
from loopdyn.model import layout as L
from loopdyn.spatial.ops import SPD_RTOL

LOCK = math.pi / 2  # the z-y-x gimbal locks at q2 = ±π/2 (axes 1 and 3 aligned)
HIP = r"'hip/1' \(sub-hinge 1 of 3 of gimbal joint 'hip'\)"


def _gimbal_parameters(rng):
    """The inertias of the base and the gimbal's body, and the gimbal's placement."""
    return random_inertia(rng), random_inertia(rng), (random_rotation(rng), rng.uniform(-0.5, 0.5, 3))


def _gimbal_model(seed: int = 0, tip: bool = True) -> ld.Model:
    """A revolute base, a z-y-x gimbal 'hip' on it and (``tip``) a revolute link below the gimbal."""
    rng = np.random.default_rng(seed)
    m = ld.Model("gimbal", gravity=(0.2, -0.1, -9.81))
    base, ball, placement = _gimbal_parameters(rng)
    m.add_body("base", 0, ld.Revolute((0, 1, 0)), None, ld.Inertia(*base), joint_name="yaw")
    m.add_body("ball", "base", ld.Gimbal(), placement, ld.Inertia(*ball), joint_name="hip")
    if tip:
        m.add_body("tip", "ball", ld.Revolute(rng.normal(size=3)),
                   (random_rotation(rng), rng.uniform(-0.5, 0.5, 3)), ld.Inertia(*random_inertia(rng)),
                   joint_name="knee")
    m.add_frame("foot", "ball" if not tip else "tip", (np.eye(3), np.array([0.1, 0.0, 0.2])))
    return m


def _state(m, rng, q2):
    q = rng.uniform(-2.0, 2.0, m.nq)
    q[2] = q2  # the gimbal's middle angle (q = yaw, hip[0], hip[1], hip[2], ...)
    return q, rng.normal(size=m.nv), rng.normal(size=m.nv)


CONS = [ld.Constraint("foot", "3d")]
CALLS = {
    "aba": lambda m, d, q, v, t: ld.aba(m, d, q, v, t),
    "aba_fext": lambda m, d, q, v, t: ld.aba(m, d, q, v, t, f_ext=np.ones((m.njoints, 6))),
    "minverse": lambda m, d, q, v, t: ld.minverse(m, d, q),
    "pv-osimr": lambda m, d, q, v, t: ld.delassus(m, d, q, CONS),
    "pv-osim": lambda m, d, q, v, t: ld.delassus(m, d, q, CONS, method="pv-osim"),
    "efpa": lambda m, d, q, v, t: ld.delassus(m, d, q, CONS, method="efpa"),
    "ltl": lambda m, d, q, v, t: ld.delassus(m, d, q, CONS, method="ltl"),
    "dense": lambda m, d, q, v, t: ld.delassus(m, d, q, CONS, method="dense"),
    "contact": lambda m, d, q, v, t: ld.constrained_forward_dynamics(m, d, q, v, t, CONS),
}


@pytest.mark.parametrize("call", list(CALLS))
@pytest.mark.parametrize("q2", [LOCK, -LOCK])
def test_a_gimbal_at_its_lock_raises_naming_the_joint(call, q2):
    m = _gimbal_model()
    d = m.create_data()
    rng = np.random.default_rng(1)
    for _ in range(3):
        q, v, tau = _state(m, rng, q2)
        with pytest.raises(SingularInertiaError, match=HIP):
            CALLS[call](m, d, q, v, tau)
    assert d.ib[0, L.I0_BUSY] == 0
    # the failed calls corrupted nothing: a valid call gives what a fresh Data gives
    q, v, tau = _state(m, rng, 0.4)
    np.testing.assert_array_equal(np.atleast_1d(CALLS[call](m, d, q, v, tau)[0]),
                                  np.atleast_1d(CALLS[call](m, m.create_data(), q, v, tau)[0]))


def test_negative_control_the_lock_gives_a_tiny_positive_pivot():
    """``d > 0`` is not enough: at the lock the pivot the ABA computes for hip/1 (read back from the
    workspace it left, ``d = sᵀ U``) is a few rounding errors of the joint's diagonal mass-matrix entry,
    and often positive — the old test accepted it and returned accelerations of 1e16."""
    m = _gimbal_model(tip=False)
    d = m.create_data()
    i = m.body_id("hip/1")
    axis = m.compiled().ws[i, L.W_AXIS : L.W_AXIS + 3]
    rng = np.random.default_rng(2)
    positive = 0
    for _ in range(20):
        q, v, tau = _state(m, rng, LOCK)
        Mii = ld.crba(m, d, q)[1, 1]
        with pytest.raises(SingularInertiaError):
            ld.aba(m, d, q, v, tau)
        pivot = float(axis @ d.ws[i, L.W_U : L.W_U + 3])  # revolute: s = [axis; 0]
        assert abs(pivot) <= SPD_RTOL * Mii
        positive += pivot > 0.0
    assert positive > 0


@pytest.mark.parametrize("delta", [1e-2, 1e-4])
def test_near_the_lock_the_gimbal_matches_pinocchio(delta):
    """Well-conditioned (cond(M) ~ 1/δ²): the test does not fire; aba and M⁻¹ match Pinocchio's
    spherical z-y-x joint, the Delassus methods the dense one."""
    pin = pytest.importorskip("pinocchio")
    m = _gimbal_model(tip=False)
    base, ball, placement = _gimbal_parameters(np.random.default_rng(0))  # _gimbal_model's
    pm = pin.Model()
    pm.gravity = pin.Motion(np.r_[m.gravity, 0.0, 0.0, 0.0])
    j = pm.addJoint(0, pin.JointModelRevoluteUnaligned(np.array([0.0, 1.0, 0.0])), pin.SE3.Identity(), "yaw")
    pm.appendBodyToJoint(j, pin.Inertia(*base), pin.SE3.Identity())
    j = pm.addJoint(j, pin.JointModelSphericalZYX(), pin.SE3(*placement), "hip")
    pm.appendBodyToJoint(j, pin.Inertia(*ball), pin.SE3.Identity())
    pd = pm.createData()
    d = m.create_data()
    rng = np.random.default_rng(3)
    for sign in (1.0, -1.0):
        q, v, tau = _state(m, rng, sign * (LOCK - delta))
        a = ld.aba(m, d, q, v, tau)
        ap = pin.aba(pm, pd, q, v, tau)
        scale = np.abs(ap).max()
        np.testing.assert_allclose(a, ap, rtol=0, atol=1e-13 * scale / delta**2)
        Mi = ld.minverse(m, d, q)
        Mip = pin.computeMinverse(pm, pd, q)
        Mip = np.triu(Mip) + np.triu(Mip, 1).T
        np.testing.assert_allclose(Mi, Mip, rtol=0, atol=1e-13 * np.abs(Mip).max() / delta**2)
        ref = ld.delassus(m, d, q, CONS, method="dense")
        for method in ("pv-osimr", "pv-osim", "efpa", "ltl"):
            np.testing.assert_allclose(ld.delassus(m, d, q, CONS, method=method), ref, rtol=0,
                                       atol=1e-12 * np.abs(ref).max() / delta**2)


def _coupled_gimbal_model() -> ld.Model:
    """A model with a cluster (two revolutes coupled 2:1) and, on another branch, the gimbal: the
    gimbal's sub-hinges are single-body clusters of the cluster kernels."""
    rng = np.random.default_rng(4)
    m = ld.Model("coupled_gimbal")
    m.add_body("a", 0, ld.Revolute((0, 0, 1)), None, ld.Inertia(*random_inertia(rng)), joint_name="ja")
    m.add_body("b", 0, ld.Revolute((0, 0, 1)), (np.eye(3), np.array([0.3, 0.0, 0.0])),
               ld.Inertia(*random_inertia(rng)), joint_name="jb")
    m.add_coupling("belt", "a", "b", 2.0)
    m.add_body("base", 0, ld.Revolute((0, 1, 0)), (np.eye(3), np.array([0.0, 0.5, 0.0])),
               ld.Inertia(*random_inertia(rng)), joint_name="yaw")
    m.add_body("ball", "base", ld.Gimbal(), (random_rotation(rng), rng.uniform(-0.5, 0.5, 3)),
               ld.Inertia(*random_inertia(rng)), joint_name="hip")
    m.add_frame("foot", "ball", (np.eye(3), np.array([0.1, 0.0, 0.2])))
    return m


def test_a_gimbal_at_its_lock_in_a_model_with_loops_raises():
    m = _coupled_gimbal_model()
    assert m.has_constraints
    d = m.create_data()
    rng = np.random.default_rng(5)
    i2 = m.velocity_names.index("hip/2")  # the gimbal's middle angle in the model's (cluster) state
    for q2 in (LOCK, -LOCK):
        q = rng.uniform(-2.0, 2.0, m.nq)
        q[i2] = q2
        v, tau = rng.normal(size=m.nv), rng.normal(size=m.nv)
        calls = (
            lambda q, v, tau: ld.aba(m, d, q, v, tau),
            lambda q, v, tau: ld.delassus(m, d, q, CONS, method="c-efpa"),
            lambda q, v, tau: ld.delassus(m, d, q, CONS, method="c-pv-osimr"),
            lambda q, v, tau: ld.delassus(m, d, q, CONS, method="dense"),
        )
        for call in calls:
            with pytest.raises(SingularInertiaError, match="hip"):
                call(q, v, tau)
        # near the lock: C-ABA against a dense solve with the cluster mass matrix and bias
        q[i2] = q2 - np.sign(q2) * 1e-3
        a = ld.aba(m, d, q, v, tau)
        H = ld.crba(m, d, q)
        ref = np.linalg.solve(H, tau - ld.nonlinear_effects(m, d, q, v))
        np.testing.assert_allclose(a, ref, rtol=0, atol=1e-12 * np.abs(ref).max() * 1e6)


def _revolute_above_prismatic() -> ld.Model:
    """A revolute joint above a prismatic one: its diagonal mass-matrix entry grows without bound with
    the slide, so its bound is +inf and every call takes the exact path."""
    rng = np.random.default_rng(6)
    m = ld.Model("telescope")
    m.add_body("turret", 0, ld.Revolute((0, 0, 1)), None, ld.Inertia(*random_inertia(rng)), joint_name="yaw")
    m.add_body("boom", "turret", ld.Prismatic((1, 0, 0)), None, ld.Inertia(*random_inertia(rng)),
               joint_name="slide")
    m.add_body("ball", "boom", ld.Gimbal(), (np.eye(3), np.array([0.2, 0.0, 0.0])),
               ld.Inertia(*random_inertia(rng)), joint_name="hip")
    m.add_frame("foot", "ball", (np.eye(3), np.array([0.1, 0.0, 0.2])))
    return m


def test_an_unbounded_entry_takes_the_exact_path():
    m = _revolute_above_prismatic()
    bound = m.compiled().ws[:, L.W_MBOUND]
    assert bound[1] == math.inf and np.isfinite(bound[2:]).all()
    d = m.create_data()
    rng = np.random.default_rng(7)
    for slide in (0.0, 3.0, -50.0):
        q = rng.uniform(-2.0, 2.0, m.nq)
        q[1] = slide
        v, tau = rng.normal(size=m.nv), rng.normal(size=m.nv)
        ref = np.linalg.solve(ld.crba(m, d, q), tau - ld.nonlinear_effects(m, d, q, v))
        np.testing.assert_allclose(ld.aba(m, d, q, v, tau), ref, rtol=1e-9, atol=1e-9 * np.abs(ref).max())
        q[3] = LOCK  # hip[1]
        with pytest.raises(SingularInertiaError, match="'hip/1'"):
            ld.aba(m, d, q, v, tau)


@pytest.mark.parametrize("seed", range(6))
def test_the_bound_exceeds_the_diagonal_entry_everywhere(seed):
    """W_MBOUND ≥ M_ii (crba's diagonal, armature included) for every 1-DoF joint, at random
    configurations of random trees with revolute, prismatic, spherical, free and compound joints."""
    from test_compound_joints import _recipe, build_loopdyn

    rng = np.random.default_rng(seed)
    m = build_loopdyn(_recipe(rng, 8))
    m.add_body("free", 0, ld.FreeFlyer(), None, ld.Inertia(*random_inertia(rng)))
    m.add_body("ball", "free", ld.Spherical(), (np.eye(3), rng.uniform(-1, 1, 3)),
               ld.Inertia(*random_inertia(rng)))
    m.add_body("arm", "ball", ld.Revolute(rng.normal(size=3)), (random_rotation(rng), rng.uniform(-1, 1, 3)),
               ld.Inertia(*random_inertia(rng)), armature=0.3)
    bound = m.compiled().ws[:, L.W_MBOUND]
    d = m.create_data()
    one = [(b.idx_v, i) for i, b in enumerate(m.bodies, start=1) if b.joint.nv == 1]
    worst = 0.0
    for _ in range(30):
        q = ld.random_configuration(m, rng)
        M = ld.crba(m, d, q)
        for iv, i in one:
            assert M[iv, iv] <= bound[i]
            if np.isfinite(bound[i]) and bound[i] > 0:
                worst = max(worst, M[iv, iv] / bound[i])
    assert worst > 1e-3  # and it is not absurdly loose somewhere (a negative control on the bound)
