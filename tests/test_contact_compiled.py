"""The compiled contact dynamics on trees (``loopdyn.algorithms.contact``, one kernel call) against
independent oracles: Pinocchio's ``constraintDynamics`` on random trees (3-D / 6-D constraints, fixed
and floating bases), a dense KKT solve built from CRBA, RNEA, the constraint Jacobian and the NumPy
constraint accelerations (3-D / 6-D / custom rows, damping, desired accelerations, external forces);
redundant rows; bad inputs (specific errors, nothing corrupted); and the default Delassus path
against the dense one."""

from __future__ import annotations

import numpy as np
import pytest
import trees
from test_delassus import random_constraints, rel_err

import loopdyn as ld
from loopdyn import Constraint, constraint_jacobian, crba, delassus, rnea
from loopdyn.contact import constrained_forward_dynamics, constraint_acceleration
from loopdyn.errors import (
    ConfigurationError,
    DataMismatchError,
    InputError,
    NonFiniteError,
    RedundantConstraintsError,
    ShapeError,
)

TOL = 1e-9


def kkt(lm, d, q, v, tau, cons, k, mu, f_ext=None):
    """The dense KKT solve: ``[[M, −Jᵀ], [J, μ I]] [ddq; λ] = [τ − c; k − γ]``."""
    nv = lm.nv
    M = crba(lm, d, q)
    J = constraint_jacobian(lm, d, q, cons)
    m = J.shape[0]
    c = rnea(lm, d, q, v, np.zeros(nv), f_ext)
    gamma = constraint_acceleration(lm, d, q, v, np.zeros(nv), cons)
    A = np.block([[M, -J.T], [J, mu * np.eye(m)]])
    x = np.linalg.solve(A, np.r_[tau - c, k - gamma])
    return x[:nv], x[nv:], J


def full_rank(J) -> bool:
    s = np.linalg.svd(J, compute_uv=False)
    return J.shape[0] <= J.shape[1] and s.min() > 1e-6 * max(1.0, s.max())


# ----------------------------------------------------------------------------------------------
# against a dense KKT solve
@pytest.mark.parametrize("floating", [False, True])
def test_random_trees_vs_dense_kkt(floating):
    rng = np.random.default_rng(31 + floating)
    checked = 0
    for n in [2, 4, 7, 12, 20, 30]:
        lm, _ = trees.random_tree(rng, n, floating=floating, with_pinocchio=False)
        d = lm.create_data()
        for _ in range(4):
            cons = random_constraints(rng, lm, int(rng.integers(1, 4)), frames_only=True)
            q, v, tau = trees.random_state(rng, lm)
            m = sum(c.dim for c in cons)
            k = rng.normal(size=m)
            f_ext = rng.normal(size=(lm.njoints, 6))
            J = constraint_jacobian(lm, d, q, cons)
            for mu in (0.0, 1e-3, 0.7):
                if mu == 0.0 and not full_rank(J):
                    with pytest.raises(RedundantConstraintsError):
                        constrained_forward_dynamics(lm, d, q, v, tau, cons, desired=k, f_ext=f_ext)
                    continue
                ddq, lam = constrained_forward_dynamics(lm, d, q, v, tau, cons, desired=k, mu=mu, f_ext=f_ext)
                ddq_r, lam_r, _ = kkt(lm, d, q, v, tau, cons, k, mu, f_ext)
                assert rel_err(ddq, ddq_r) < TOL, (n, mu)
                assert rel_err(lam, lam_r) < TOL, (n, mu)
                checked += 1
    assert checked > 40


def test_custom_rows_and_placements_vs_dense_kkt():
    """Custom K_e (1 to 8 rows: blocks wider than 6 are split), 3-D and 6-D on placed frames of one
    floating tree, with and without desired accelerations."""
    rng = np.random.default_rng(5)
    lm, _ = trees.random_tree(rng, 24, floating=True, with_pinocchio=False)
    d = lm.create_data()
    names = [f.name for f in lm.frames if f.body > 0]
    for trial in range(12):
        cons = []
        for _ in range(3):
            kind = ["3d", "6d", rng.normal(size=(int(rng.integers(1, 9)), 6))][trial % 3]
            placement = (trees.random_rotation(rng), rng.normal(size=3) * 0.3)
            cons.append(Constraint(names[rng.integers(len(names))], kind, placement))
        q, v, tau = trees.random_state(rng, lm)
        m = sum(c.dim for c in cons)
        k = rng.normal(size=m) if trial % 2 else np.zeros(m)
        mu = 1e-4 if not full_rank(constraint_jacobian(lm, d, q, cons)) else 0.0
        desired = k if trial % 2 else None
        ddq, lam = constrained_forward_dynamics(lm, d, q, v, tau, cons, desired=desired, mu=mu)
        ddq_r, lam_r, _ = kkt(lm, d, q, v, tau, cons, k, mu)
        assert rel_err(ddq, ddq_r) < TOL
        assert rel_err(lam, lam_r) < TOL


def test_data_left_as_after_aba_with_the_forces():
    """After the call, the body accelerations in the Data are those of ABA with τ + Jᵀλ (the
    constraint frames then do not accelerate: the NumPy constraint accelerations read them)."""
    lm, _ = trees.robot_case("solo12", with_pinocchio=False)
    d = lm.create_data()
    cons = [Constraint(f, "3d") for f in ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")]
    rng = np.random.default_rng(3)
    q, v, tau = trees.random_state(rng, lm)
    ddq, lam = constrained_forward_dynamics(lm, d, q, v, tau, cons)
    J = constraint_jacobian(lm, d, q, cons)
    assert rel_err(ld.aba(lm, d, q, v, tau + J.T @ lam), ddq) < TOL
    assert np.abs(constraint_acceleration(lm, d, q, v, ddq, cons)).max() < 1e-9 * max(1.0, np.abs(ddq).max())


# ----------------------------------------------------------------------------------------------
# against Pinocchio
def _pin_constraints(pin, pm, pairs, lm, cons):
    by_name = {lm.frames[k].name: pf for k, pf, _ in pairs}
    cms, cds = pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData()
    for c in cons:
        f = pm.frames[by_name[c.body]]
        M = f.placement * pin.SE3(np.array(c.placement[0]).reshape(3, 3), np.array(c.placement[1]))
        kind = pin.ContactType.CONTACT_6D if c.kind == "6d" else pin.ContactType.CONTACT_3D
        cm = pin.RigidConstraintModel(kind, pm, f.parentJoint, M, pin.ReferenceFrame.LOCAL)
        cms.append(cm)
        cds.append(cm.createData())
    return cms, cds


def _supporting_dofs(lm, b: int) -> int:
    n = 0
    while b > 0:
        body = lm.bodies[b - 1]
        n += body.joint.nv
        b = body.parent
    return n


@pytest.mark.parametrize("floating", [False, True])
def test_random_trees_vs_pinocchio(floating):
    import pinocchio as pin
    rng = np.random.default_rng(77 + floating)
    checked = 0
    for n in [6, 10, 16, 25, 40]:
        lm, pm = trees.random_tree(rng, n, floating=floating)
        d = lm.create_data()
        pairs = [p for p in trees.frame_pairs(lm, pm) if _supporting_dofs(lm, lm.frames[p[0]].body) >= 6]
        if not pairs:
            continue
        for _ in range(5):
            cons = []
            for _ in range(int(rng.integers(1, 3))):
                name = lm.frames[pairs[rng.integers(len(pairs))][0]].name
                kind = ["3d", "6d"][int(rng.integers(2))]
                cons.append(Constraint(name, kind, (trees.random_rotation(rng), rng.normal(size=3) * 0.3)))
            q, v, tau = trees.random_state(rng, lm)
            if not full_rank(constraint_jacobian(lm, d, q, cons)):
                continue
            cms, cds = _pin_constraints(pin, pm, pairs, lm, cons)
            pd = pm.createData()
            pin.initConstraintDynamics(pm, pd, cms, cds)
            exact = pin.ProximalSettings(1e-14, 0.0, 1)
            ddq_p = pin.constraintDynamics(pm, pd, q, v, tau, cms, cds, exact)
            ddq, lam = constrained_forward_dynamics(lm, d, q, v, tau, cons)
            assert rel_err(ddq, ddq_p) < TOL
            assert rel_err(lam, np.asarray(pd.lambda_c)) < TOL
            checked += 1
    assert checked >= 8


# ----------------------------------------------------------------------------------------------
# redundant rows, bad inputs
def _solo():
    lm, _ = trees.robot_case("solo12", with_pinocchio=False)
    cons = [Constraint(f, "3d") for f in ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")]
    return lm, lm.create_data(), cons


def test_redundant_rows():
    lm, d, cons = _solo()
    rng = np.random.default_rng(8)
    q, v, tau = trees.random_state(rng, lm)
    twice = [*cons, Constraint("FL_FOOT", "3d")]  # the same point twice
    with pytest.raises(RedundantConstraintsError, match="mu > 0"):
        constrained_forward_dynamics(lm, d, q, v, tau, twice)
    with pytest.raises(RedundantConstraintsError):
        constrained_forward_dynamics(lm, d, q, v, tau, [Constraint(0, "6d")])  # on the world
    mu = 1e-6
    ddq, lam = constrained_forward_dynamics(lm, d, q, v, tau, twice, mu=mu)
    ddq_r, lam_r, _ = kkt(lm, d, q, v, tau, twice, np.zeros(15), mu)
    assert rel_err(ddq, ddq_r) < 1e-7 and rel_err(lam, lam_r) < 1e-7
    assert np.allclose(lam[:3], lam[12:])  # the load splits evenly between the two copies
    # a constraint on the world with damping: λ = k / μ, the rest unconstrained
    k = rng.normal(size=6)
    ddq, lam = constrained_forward_dynamics(lm, d, q, v, tau, [Constraint(0, "6d")], desired=k, mu=0.5)
    assert rel_err(lam, k / 0.5) < 1e-14
    assert rel_err(ddq, ld.aba(lm, d, q, v, tau)) < 1e-13


def test_bad_inputs_raise_and_corrupt_nothing():
    lm, d, cons = _solo()
    rng = np.random.default_rng(9)
    q, v, tau = trees.random_state(rng, lm)
    k = rng.normal(size=12)
    ref = constrained_forward_dynamics(lm, lm.create_data(), q, v, tau, cons, desired=k)
    saved = [x.copy() for x in (q, v, tau, k)]
    bad_q = q.copy()
    bad_q[3:7] *= 1.5  # non-unit quaternion
    nan_v = v.copy()
    nan_v[4] = np.nan
    cases = [
        (ShapeError, dict(q=q[:-1])),
        (ShapeError, dict(v=v[:-1])),
        (ShapeError, dict(tau=np.zeros(lm.nv + 1))),
        (NonFiniteError, dict(v=nan_v)),
        (NonFiniteError, dict(tau=np.full(lm.nv, np.inf))),
        (ConfigurationError, dict(q=bad_q)),
        (ShapeError, dict(f_ext=np.zeros((3, 6)))),
        (ShapeError, dict(desired=np.zeros(11))),
        (InputError, dict(desired=np.full(12, np.nan))),
        (InputError, dict(mu=-1.0)),
        (InputError, dict(mu=np.nan)),
        (InputError, dict(mu=np.inf)),
        (InputError, dict(mu="x")),
        (InputError, dict(constraints=[Constraint("FL_FOOT", "3d"), "FR_FOOT"])),
        (InputError, dict(constraints=3)),
        (InputError, dict(q=["a"] * lm.nq)),
    ]
    for exc, over in cases:
        args = dict(q=q, v=v, tau=tau, constraints=cons, desired=k, mu=0.0, f_ext=None) | over
        with pytest.raises(exc):
            constrained_forward_dynamics(lm, d, **args)
        for x, s in zip((q, v, tau, k), saved, strict=True):
            assert np.array_equal(x, s)
        # the same Data gives the reference result right after
        ddq, lam = constrained_forward_dynamics(lm, d, q, v, tau, cons, desired=k)
        assert np.array_equal(ddq, ref[0]) and np.array_equal(lam, ref[1])
    other = trees.robot_case("talos_reduced", with_pinocchio=False)[0].create_data()
    with pytest.raises(DataMismatchError):
        constrained_forward_dynamics(lm, other, q, v, tau, cons)


def test_coerced_inputs_and_returned_arrays():
    lm, d, cons = _solo()
    rng = np.random.default_rng(10)
    q, v, tau = trees.random_state(rng, lm)
    ref = constrained_forward_dynamics(lm, d, q, v, tau, cons)
    ddq, lam = constrained_forward_dynamics(lm, d, list(q), list(v), list(tau), cons)
    assert np.array_equal(ddq, ref[0]) and np.array_equal(lam, ref[1])
    # tuple of constraints, strided vectors, integer mu
    v2 = np.zeros(2 * lm.nv)
    v2[::2] = v
    ddq, lam = constrained_forward_dynamics(lm, d, q, v2[::2], tau, tuple(cons), mu=0)
    assert np.array_equal(ddq, ref[0]) and np.array_equal(lam, ref[1])
    # fresh arrays every call (not views of scratch)
    ddq2, lam2 = constrained_forward_dynamics(lm, d, q, v, tau, cons)
    assert ddq2 is not ref[0] and not np.shares_memory(lam2, ref[1]) and lam2.base is None


# ----------------------------------------------------------------------------------------------
# the Delassus fast path
@pytest.mark.parametrize("floating", [False, True])
def test_delassus_default_vs_dense(floating):
    rng = np.random.default_rng(40 + floating)
    for n in [1, 3, 8, 20]:
        lm, _ = trees.random_tree(rng, n, floating=floating, with_pinocchio=False)
        d = lm.create_data()
        for _ in range(3):
            cons = random_constraints(rng, lm, int(rng.integers(1, 6)))
            q, _, _ = trees.random_state(rng, lm)
            W = delassus(lm, d, q, cons)
            assert rel_err(W, delassus(lm, d, q, cons, method="dense")) < TOL
            assert np.array_equal(W, delassus(lm, d, q, cons, method="pv-osimr"))
    with pytest.raises(DataMismatchError):
        delassus(lm, trees.robot_case("solo12", False)[0].create_data(), q, cons)
    with pytest.raises(ShapeError):
        delassus(lm, d, q[:-1], cons)
