"""``loopdyn.batch.constrained_forward_dynamics`` (issue 11, item 4): many states under one constraint
set equal N single-state calls row by row (1e-14, whatever the thread count) on solo12 (four 3-D
feet), talos_reduced (two 6-D soles) and mini_cheetah (loops: geared rotors; four point feet), with
desired accelerations, damping and external forces; against independent oracles (Pinocchio's
``constraintDynamics`` on solo12, one KKT solve from Pinocchio alone on mini_cheetah's spanning tree); no
constraints; bad rows raise the single-state function's exception, naming the row."""

from __future__ import annotations

import numba
import numpy as np
import pytest
import trees

import loopdyn as ld
from loopdyn import Constraint
from loopdyn.errors import (
    ConfigurationError,
    InputError,
    NonFiniteError,
    RedundantConstraintsError,
    ShapeError,
)

SAME = 1e-14  # batch vs single-state calls (the same compiled cores)
TOL = 1e-9  # against independent oracles

SOLO_FEET = [Constraint(f, "3d") for f in ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")]
TALOS_SOLES = [Constraint("left_sole_link", "6d"), Constraint("right_sole_link", "6d")]
CHEETAH_FEET = [
    Constraint(f"{leg}_knee_link", "3d", (np.eye(3), [0.0, 0.0, -0.2])) for leg in ("FL", "FR", "HL", "HR")
]


def rel_err(a, b) -> float:
    a, b = np.asarray(a), np.asarray(b)
    return float(np.abs(a - b).max() / max(1.0, np.abs(b).max())) if b.size else 0.0


def _case(name):
    if name == "mini_cheetah":
        return ld.robots.mini_cheetah(), CHEETAH_FEET
    lm, _ = trees.robot_case(name, with_pinocchio=False)
    return lm, SOLO_FEET if name == "solo12" else TALOS_SOLES


@pytest.fixture(scope="module", params=["solo12", "talos_reduced", "mini_cheetah"])
def case(request):
    return _case(request.param)


def _states(model, n, seed):
    rng = np.random.default_rng(seed)
    Q = np.stack([ld.random_configuration(model, rng) for _ in range(n)])
    return Q, rng.normal(size=(n, model.nv)), rng.normal(size=(n, model.nv))


def _threads(t, fn):
    old = numba.get_num_threads()
    numba.set_num_threads(min(t, numba.config.NUMBA_NUM_THREADS))
    try:
        return fn()
    finally:
        numba.set_num_threads(old)


def _single(model, Q, V, T, cons, K=None, mu=0.0, F=None):
    d = model.create_data()
    out = [
        ld.constrained_forward_dynamics(
            model,
            d,
            Q[k],
            V[k],
            T[k],
            cons,
            desired=None if K is None else K[k],
            mu=mu,
            f_ext=None if F is None else F[k],
        )  # fmt: skip
        for k in range(Q.shape[0])
    ]
    return np.array([o[0] for o in out]), np.array([o[1] for o in out])


@pytest.mark.parametrize("options", ["plain", "desired+damping+forces"])
def test_equals_single_state_calls(case, options):
    model, cons = case
    n = 150  # several chunks per thread
    Q, V, T = _states(model, n, seed=1)
    m = sum(c.dim for c in cons)
    rng = np.random.default_rng(2)
    kw = {}
    if options != "plain":
        kw = {"desired": rng.normal(size=(n, m)), "mu": 1e-3, "f_ext": rng.normal(size=(n, model.njoints, 6))}
    serial = _threads(1, lambda: ld.batch.constrained_forward_dynamics(model, Q, V, T, cons, **kw))
    threaded = _threads(2, lambda: ld.batch.constrained_forward_dynamics(model, Q, V, T, cons, **kw))
    assert serial[0].shape == (n, model.nv) and serial[1].shape == (n, m)
    assert np.array_equal(serial[0], threaded[0]) and np.array_equal(serial[1], threaded[1])
    ddq, lam = _single(model, Q, V, T, cons, kw.get("desired"), kw.get("mu", 0.0), kw.get("f_ext"))
    assert rel_err(serial[0], ddq) <= SAME, f"{model.name}: ddq"
    assert rel_err(serial[1], lam) <= SAME, f"{model.name}: lambda"


def test_one_desired_vector_for_every_state():
    model, cons = _case("solo12")
    Q, V, T = _states(model, 40, seed=3)
    k = np.random.default_rng(4).normal(size=12)
    got = ld.batch.constrained_forward_dynamics(model, Q, V, T, cons, desired=k)
    want = ld.batch.constrained_forward_dynamics(model, Q, V, T, cons, desired=np.tile(k, (40, 1)))
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])


# ----------------------------------------------------------------------------------------------
# independent oracles
def test_solo12_against_pinocchio():
    import pinocchio as pin
    lm, pm = trees.robot_case("solo12")
    Q, V, T = _states(lm, 40, seed=5)
    ddq, lam = ld.batch.constrained_forward_dynamics(lm, Q, V, T, SOLO_FEET)
    cms, cds = pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData()
    for c in SOLO_FEET:
        f = pm.frames[pm.getFrameId(c.body)]
        cm = pin.RigidConstraintModel(pin.ContactType.CONTACT_3D, pm, f.parentJoint, f.placement,
                                      pin.ReferenceFrame.LOCAL)  # fmt: skip
        cms.append(cm)
        cds.append(cm.createData())
    pd = pm.createData()
    pin.initConstraintDynamics(pm, pd, cms, cds)
    exact = pin.ProximalSettings(1e-14, 0.0, 1)
    worst = 0.0
    for k in range(Q.shape[0]):
        ddq_p = pin.constraintDynamics(pm, pd, Q[k], V[k], T[k], cms, cds, exact)
        errs = rel_err(ddq[k], ddq_p), rel_err(lam[k], np.asarray(pd.lambda_c))
        assert max(errs) < TOL, (k, errs)
        worst = max(worst, *errs)
    print(f"batch solo12 vs Pinocchio constraintDynamics: worst relative error {worst:.2e}")


def test_mini_cheetah_against_the_kkt_system():
    """One KKT solve from Pinocchio alone on the spanning tree (:class:`loop_oracles.SpanningPinocchio`:
    the gears' rows from their ratios, the feet's rows and biases from Pinocchio's frame Jacobians and
    classical accelerations, M and the bias with external forces from its CRBA and RNEA)."""
    from loop_oracles import SpanningPinocchio

    model = ld.robots.mini_cheetah()
    oracle = SpanningPinocchio(model)
    n, m, mu = 6, 12, 1e-4
    Q, V, T = _states(model, n, seed=6)
    rng = np.random.default_rng(7)
    K, F = rng.normal(size=(n, m)), rng.normal(size=(n, model.njoints, 6))
    ddy, lam = ld.batch.constrained_forward_dynamics(model, Q, V, T, CHEETAH_FEET, desired=K, mu=mu, f_ext=F)
    worst = 0.0
    for k in range(n):
        ddy_r, lam_r = oracle.forward_dynamics(Q[k], V[k], T[k], CHEETAH_FEET, K[k], mu, F[k])
        errs = rel_err(ddy[k], ddy_r), rel_err(lam[k], lam_r)
        assert max(errs) < TOL, (k, errs)
        worst = max(worst, *errs)
    print(f"batch mini_cheetah vs the KKT system: worst relative error {worst:.2e}")


def test_no_constraints_is_aba(case):
    model, _ = case
    Q, V, T = _states(model, 50, seed=8)
    ddq, lam = ld.batch.constrained_forward_dynamics(model, Q, V, T, [])
    assert lam.shape == (50, 0)
    assert rel_err(ddq, ld.batch.aba(model, Q, V, T)) <= SAME
    F = np.random.default_rng(9).normal(size=(50, model.njoints, 6))
    ddq, _ = ld.batch.constrained_forward_dynamics(model, Q, V, T, [], f_ext=F)
    d = model.create_data()
    assert rel_err(ddq, [ld.aba(model, d, Q[k], V[k], T[k], F[k]) for k in range(50)]) <= 1e-12


def test_small_and_empty_batches(case):
    model, cons = case
    Q, V, T = _states(model, 2, seed=10)
    ddq, lam = ld.batch.constrained_forward_dynamics(model, Q[:1], V[:1], T[:1], cons)
    d = model.create_data()
    ddq1, lam1 = ld.constrained_forward_dynamics(model, d, Q[0], V[0], T[0], cons)
    assert rel_err(ddq[0], ddq1) <= SAME and rel_err(lam[0], lam1) <= SAME
    ddq, lam = ld.batch.constrained_forward_dynamics(model, Q[:0], V[:0], T[:0], cons)
    assert ddq.shape == (0, model.nv) and lam.shape == (0, sum(c.dim for c in cons))


# ----------------------------------------------------------------------------------------------
# bad inputs
def test_bad_rows_are_named(case):
    model, cons = case
    n = 100
    Q, V, T = _states(model, n, seed=11)
    V[57, 0] = np.nan
    with pytest.raises(NonFiniteError, match=r"^row 57: v contains NaN"):
        ld.batch.constrained_forward_dynamics(model, Q, V, T, cons)
    V[57, 0] = 0.0
    T[80, -1] = np.inf
    with pytest.raises(NonFiniteError, match=r"^row 80: tau"):
        ld.batch.constrained_forward_dynamics(model, Q, V, T, cons)
    T[80, -1] = 0.0
    Q[63, 0] = np.nan
    with pytest.raises(NonFiniteError, match=r"^row 63: q"):
        ld.batch.constrained_forward_dynamics(model, Q, V, T, cons)
    Q[63, 0] = 0.0
    F = np.zeros((n, model.njoints, 6))
    F[12, 1, 2] = np.nan
    with pytest.raises(NonFiniteError, match=r"^row 12: f_ext"):
        ld.batch.constrained_forward_dynamics(model, Q, V, T, cons, f_ext=F)
    K = np.zeros((n, sum(c.dim for c in cons)))
    K[33, 0] = np.nan
    with pytest.raises(NonFiniteError, match=r"^row 33: desired"):
        ld.batch.constrained_forward_dynamics(model, Q, V, T, cons, desired=K)


def test_non_unit_quaternion_and_redundant_rows():
    model, cons = _case("solo12")
    Q, V, T = _states(model, 80, seed=12)
    Q[44, 3:7] *= 1.1  # the free flyer's quaternion
    with pytest.raises(ConfigurationError, match=r"^row 44: q: the quaternion"):
        ld.batch.constrained_forward_dynamics(model, Q, V, T, cons)
    Q[44, 3:7] /= 1.1
    twice = [*cons, Constraint("FL_FOOT", "3d")]
    with pytest.raises(RedundantConstraintsError, match=r"^row 0: the constraints are redundant"):
        ld.batch.constrained_forward_dynamics(model, Q, V, T, twice)
    ddq, lam = ld.batch.constrained_forward_dynamics(model, Q, V, T, twice, mu=1e-6)
    assert np.allclose(lam[:, :3], lam[:, 12:])  # the load splits evenly between the two copies


def test_shapes_and_options_are_checked():
    model, cons = _case("solo12")
    Q, V, T = _states(model, 4, seed=13)
    with pytest.raises(ShapeError, match="V must have shape"):
        ld.batch.constrained_forward_dynamics(model, Q, V[:3], T, cons)
    with pytest.raises(ShapeError, match="single vector"):
        ld.batch.constrained_forward_dynamics(model, Q[0], V, T, cons)
    with pytest.raises(ShapeError, match="TAU must have shape"):
        ld.batch.constrained_forward_dynamics(model, Q, V, np.zeros((4, model.nv + 1)), cons)
    with pytest.raises(ShapeError, match="desired must have shape"):
        ld.batch.constrained_forward_dynamics(model, Q, V, T, cons, desired=np.zeros(11))
    with pytest.raises(ShapeError, match="f_ext must have shape"):
        ld.batch.constrained_forward_dynamics(model, Q, V, T, cons, f_ext=np.zeros((model.njoints, 6)))
    with pytest.raises(InputError, match="mu must be"):
        ld.batch.constrained_forward_dynamics(model, Q, V, T, cons, mu=-1.0)
    with pytest.raises(InputError, match="constraints must be"):
        ld.batch.constrained_forward_dynamics(model, Q, V, T, ["FL_FOOT"])
