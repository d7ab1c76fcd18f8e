"""Armature (``M + diag(armature)``, Pinocchio's ``model.armature``) in the tree algorithms: RNEA, ABA,
CRBA, the inverse mass matrix, the nonlinear effects and the batch kernels, against Pinocchio on random
trees; the identities aba(rnea(a)) = a and M a = rnea(a) − nle; and the validation of bad input."""

from __future__ import annotations

import numpy as np
import pytest
import trees
from trees import assert_close

import loopdyn
from loopdyn.errors import ModelError

N_STATES = 20

#: (seed, bodies, floating, extra keyword arguments of trees.random_recipe)
ARMATURE_TREES = [
    (501, 1, False, {"joint_mix": {"revolute": 1.0}}),
    (502, 4, False, {}),
    (503, 7, True, {}),
    (504, 10, False, {"joint_mix": {"spherical": 1.0, "prismatic": 1.0, "unbounded_aligned": 1.0}}),
    (505, 15, True, {"random_gravity": True}),
    (506, 24, True, {}),
]
IDS = [f"arm{seed}-n{n}-{'floating' if fl else 'fixed'}" for seed, n, fl, _ in ARMATURE_TREES]


def _random_armature(rng, nv: int) -> np.ndarray:
    """Armature of every magnitude, some coordinates without any."""
    arm = 10.0 ** rng.uniform(-3.0, 1.0, nv)
    arm[rng.random(nv) < 0.25] = 0.0
    return arm


@pytest.fixture(params=range(len(ARMATURE_TREES)), ids=IDS)
def arm_case(request):
    """(loopdyn model, Pinocchio model or None, rng) with the same random armature set on both."""
    seed, n, floating, extra = ARMATURE_TREES[request.param]
    rng = np.random.default_rng(seed)
    try:
        import pinocchio  # noqa: F401

        with_pin = True
    except ImportError:
        with_pin = False
    lm, pm = trees.random_tree(rng, n, floating=floating, with_pinocchio=with_pin, **extra)
    arm = _random_armature(rng, lm.nv)
    lm.armature = arm
    if pm is not None:
        pm.armature = arm.copy()
    return lm, pm, rng


def _states(rng, lm):
    return [trees.random_state(rng, lm) for _ in range(N_STATES)]


def _pin():
    import pinocchio

    return pinocchio


def _sym(M) -> np.ndarray:
    return np.triu(M) + np.triu(M, 1).T


def test_rnea_vs_pinocchio(arm_case):
    pin = _pin()
    lm, pm, rng = arm_case
    ld, pd = lm.create_data(), pm.createData()
    for s, (q, v, a) in enumerate(_states(rng, lm)):
        assert_close(loopdyn.rnea(lm, ld, q, v, a), pin.rnea(pm, pd, q, v, a), what=f"state {s}: rnea")


def test_aba_vs_pinocchio(arm_case):
    pin = _pin()
    lm, pm, rng = arm_case
    ld, pd = lm.create_data(), pm.createData()
    for s, (q, v, _) in enumerate(_states(rng, lm)):
        tau = rng.normal(size=lm.nv) * 5.0
        assert_close(loopdyn.aba(lm, ld, q, v, tau), pin.aba(pm, pd, q, v, tau), what=f"state {s}: aba")


def test_crba_minverse_vs_pinocchio(arm_case):
    pin = _pin()
    lm, pm, rng = arm_case
    ld, pd = lm.create_data(), pm.createData()
    for s, (q, _, _) in enumerate(_states(rng, lm)):
        M = loopdyn.crba(lm, ld, q)
        M_pin = _sym(pin.crba(pm, pd, q))
        assert_close(M, M_pin, what=f"state {s}: crba")
        assert_close(
            loopdyn.minverse(lm, ld, q), _sym(pin.computeMinverse(pm, pd, q)), what=f"state {s}: Minv"
        )


def test_nonlinear_effects_vs_pinocchio(arm_case):
    pin = _pin()
    lm, pm, rng = arm_case
    ld, pd = lm.create_data(), pm.createData()
    for s, (q, v, _) in enumerate(_states(rng, lm)):
        assert_close(
            loopdyn.nonlinear_effects(lm, ld, q, v),
            pin.nonLinearEffects(pm, pd, q, v),
            what=f"state {s}: nle",
        )
        assert_close(
            loopdyn.gravity(lm, ld, q), pin.computeGeneralizedGravity(pm, pd, q), what=f"state {s}: g"
        )


def test_identities(arm_case):
    lm, _, rng = arm_case
    ld = lm.create_data()
    arm = lm.armature
    for s, (q, v, a) in enumerate(_states(rng, lm)):
        tau = loopdyn.rnea(lm, ld, q, v, a)
        assert_close(loopdyn.aba(lm, ld, q, v, tau), a, rtol=1e-8, atol=1e-8, what=f"state {s}: aba(rnea)")
        M = loopdyn.crba(lm, ld, q)
        nle = loopdyn.nonlinear_effects(lm, ld, q, v)
        assert_close(M @ a + nle, tau, rtol=1e-9, atol=1e-9, what=f"state {s}: M a + nle")
        assert_close(M @ loopdyn.minverse(lm, ld, q), np.eye(lm.nv), atol=1e-8, what=f"state {s}: M M⁻¹")
    # armature enters as diag(armature): compare with the same tree without it
    q, v, a = _states(rng, lm)[0]
    M = loopdyn.crba(lm, ld, q)
    tau = loopdyn.rnea(lm, ld, q, v, a)
    lm.armature = np.zeros(lm.nv)
    ld0 = lm.create_data()
    assert_close(M - loopdyn.crba(lm, ld0, q), np.diag(arm), atol=1e-12, what="M − M_bare")
    assert_close(tau - loopdyn.rnea(lm, ld0, q, v, a), arm * a, atol=1e-10, what="τ − τ_bare")


def test_batch(arm_case):
    lm, _, rng = arm_case
    ld = lm.create_data()
    states = _states(rng, lm)[:5]
    Q = np.array([s[0] for s in states])
    V = np.array([s[1] for s in states])
    A = np.array([s[2] for s in states])
    T = loopdyn.batch.rnea(lm, Q, V, A)
    for k in range(len(states)):
        assert_close(T[k], loopdyn.rnea(lm, ld, Q[k], V[k], A[k]), what=f"batch rnea row {k}")
    assert_close(loopdyn.batch.aba(lm, Q, V, T), A, rtol=1e-8, atol=1e-8, what="batch aba(rnea)")
    Ms = loopdyn.batch.crba(lm, Q)
    for k in range(len(states)):
        assert_close(Ms[k], loopdyn.crba(lm, ld, Q[k]), what=f"batch crba row {k}")


def _I(m=1.0, c=(0.0, 0.0, 0.0)):
    return loopdyn.Inertia(m, c, np.eye(3) * 0.01)


def test_add_body_armature():
    m = loopdyn.Model("arm")
    m.add_body("a", 0, loopdyn.Revolute((0, 0, 1)), inertia=_I(1.0, (0.1, 0, 0)), armature=0.5)
    m.add_body("b", "a", loopdyn.Spherical(), inertia=_I(1.0, (0, 0, 0.1)), armature=[0.1, 0.2, 0.3])
    m.add_body("c", "b", loopdyn.Prismatic((1, 0, 0)), inertia=_I())
    m.add_body("f", "c", loopdyn.Fixed(), inertia=_I(0.5), armature=0.0)
    assert np.array_equal(m.armature, [0.5, 0.1, 0.2, 0.3, 0.0])
    d = m.create_data()
    q = loopdyn.neutral(m)
    M = loopdyn.crba(m, d, q)
    m.armature = 0.0  # a scalar sets every coordinate
    assert np.array_equal(m.armature, np.zeros(5))
    assert_close(M - loopdyn.crba(m, m.create_data(), q), np.diag([0.5, 0.1, 0.2, 0.3, 0.0]), atol=1e-14)


def test_armature_makes_massless_joint_regular():
    """A massless leaf is singular for ABA without armature, regular with it."""
    m = loopdyn.Model("massless")
    m.add_body("a", 0, loopdyn.Revolute((0, 0, 1)), inertia=_I(1.0, (0.1, 0, 0)))
    m.add_body("b", "a", loopdyn.Revolute((0, 1, 0)), armature=0.2)
    q, v, tau = np.zeros(2), np.zeros(2), np.array([0.0, 1.0])
    ddq = loopdyn.aba(m, m.create_data(), q, v, tau)
    assert_close(ddq, [0.0, 5.0], atol=1e-12)


def test_setter_bumps_version_and_invalidates_data():
    m, _ = trees.random_tree(np.random.default_rng(7), 3, with_pinocchio=False)
    d = m.create_data()
    version = m._version
    m.armature = np.ones(m.nv)
    assert m._version > version
    with pytest.raises(loopdyn.errors.DataMismatchError):
        loopdyn.crba(m, d, loopdyn.neutral(m))


@pytest.mark.parametrize(
    "bad",
    [-1.0, [0.1, -0.1], [0.1, np.nan], [np.inf, 0.0], [0.1, 0.2, 0.3], [[0.1, 0.2]], "abc"],
    ids=["negative", "negative-entry", "nan", "inf", "wrong-size", "wrong-shape", "not-a-number"],
)
def test_bad_armature_setter(bad):
    m = loopdyn.Model("two")
    m.add_body("a", 0, loopdyn.Revolute((0, 0, 1)), inertia=loopdyn.Inertia(1.0, [0, 0, 0], np.eye(3)))
    m.add_body("b", "a", loopdyn.Revolute((0, 1, 0)), inertia=loopdyn.Inertia(1.0, [0, 0, 0], np.eye(3)))
    m.armature = [0.1, 0.2]
    version = m._version
    with pytest.raises(ModelError):
        m.armature = bad
    assert m._version == version  # refused: the model is unchanged
    assert np.array_equal(m.armature, [0.1, 0.2])


@pytest.mark.parametrize(
    ("joint", "bad"),
    [
        (loopdyn.Revolute((0, 0, 1)), -0.5),
        (loopdyn.Revolute((0, 0, 1)), np.nan),
        (loopdyn.Revolute((0, 0, 1)), [0.1, 0.2]),
        (loopdyn.Spherical(), [0.1, 0.2]),
        (loopdyn.Spherical(), [0.1, np.inf, 0.2]),
        (loopdyn.Fixed(), 0.3),
    ],
    ids=["negative", "nan", "too-many", "too-few", "inf", "fixed-nonzero"],
)
def test_bad_armature_add_body(joint, bad):
    m = loopdyn.Model("one")
    m.add_body("a", 0, loopdyn.Revolute((0, 0, 1)), inertia=loopdyn.Inertia(1.0, [0, 0, 0], np.eye(3)))
    n = m.nbodies
    with pytest.raises(ModelError):
        m.add_body("b", "a", joint, armature=bad)
    assert m.nbodies == n
