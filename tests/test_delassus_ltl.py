"""LTL-OSIM (``delassus(..., method="ltl")``): the Delassus matrix from the branch-induced sparse
factor ``M = LᵀL`` agrees with the dense reference, EFPA and Pinocchio on random trees and example
robots; its constraint Jacobian and factor are the dense ones."""

from __future__ import annotations

import numpy as np
import pytest
import trees
from test_delassus import TOL, check_psd, pin_reference, random_constraints, rel_err

import loopdyn
from loopdyn import Constraint, crba, damped_delassus_inverse, delassus
from loopdyn.algorithms.crba import ltl_solve
from loopdyn.constraint_rows import jacobian, prepare
from loopdyn.delassus_methods import run_ltl
from loopdyn.errors import ConfigurationError, ShapeError
from loopdyn.model import layout as L


@pytest.mark.parametrize("floating", [False, True])
def test_ltl_matches_dense_and_efpa_random_trees(floating):
    rng = np.random.default_rng(31 + floating)
    for n in [1, 2, 3, 5, 8, 12, 17, 25, 40]:
        lm, _ = trees.random_tree(rng, n, floating=floating, with_pinocchio=False)
        d = lm.create_data()
        for s in range(3):
            cons = random_constraints(rng, lm, int(rng.integers(1, 9)))
            q, _, _ = trees.random_state(rng, lm)
            G = delassus(lm, d, q, cons, method="dense")
            T = delassus(lm, d, q, cons, method="ltl")
            assert T.shape == G.shape == (sum(c.dim for c in cons),) * 2
            assert rel_err(T, G) < TOL, f"n={n}, state {s}"
            assert rel_err(T, delassus(lm, d, q, cons, method="efpa")) < TOL, f"n={n}, state {s}"
            check_psd(T, f"ltl n={n}")


def test_ltl_factor_and_jacobian():
    """J from the kernel equals the frame-Jacobian J, Lᵀ L = M, Y = J L⁻¹ and L⁻¹ Yᵀ = M⁻¹ Jᵀ."""
    rng = np.random.default_rng(5)
    for floating in (False, True):
        lm, _ = trees.random_tree(rng, 20, floating=floating, with_pinocchio=False)
        d = lm.create_data()
        cons = random_constraints(rng, lm, 6)
        q, _, _ = trees.random_state(rng, lm)
        prep = prepare(lm, cons)
        G, J, Y, Mf, lam = run_ltl(lm, d, q, prep)
        M = crba(lm, d, q)
        Lf = np.tril(Mf)
        assert rel_err(Lf.T @ Lf, M) < 1e-12
        assert rel_err(J, jacobian(lm, d, q, prep)) < 1e-13
        assert rel_err(Y @ Lf, J) < 1e-12
        cbody, crow = prep.body, prep.row
        for e in range(len(cons)):  # J and Y live on the ancestor dofs of the constrained link
            anc = np.zeros(lm.nv, dtype=bool)
            b = int(cbody[e])
            k = int(d.ib[b, L.I_IV] + d.ib[b, L.I_NV] - 1) if b > 0 else -1
            while k != -1:
                anc[k] = True
                k = int(lam[k])
            assert np.all(J[crow[e] : crow[e + 1]][:, ~anc] == 0.0)
            assert np.all(Y[crow[e] : crow[e + 1]][:, ~anc] == 0.0)
        lam_c = rng.normal(size=J.shape[0])
        x = (Y.T @ lam_c)[:, None]
        ltl_solve(Mf, lam, x)
        assert rel_err(x[:, 0], np.linalg.solve(M, J.T @ lam_c)) < 1e-9


def test_ltl_redundant_world_and_order():
    rng = np.random.default_rng(3)
    lm, _ = trees.random_tree(rng, 4, floating=False, with_pinocchio=False)
    d = lm.create_data()
    body = lm.bodies[-1].name
    cons = [Constraint(body, "3d", (np.eye(3), rng.normal(size=3))) for _ in range(4)]
    cons += [Constraint(body, rng.normal(size=(12, 6))), Constraint(body, "6d"), Constraint("universe", "6d")]
    q, _, _ = trees.random_state(rng, lm)
    T = delassus(lm, d, q, cons, method="ltl")
    assert T.shape[0] == 36 > lm.nv
    assert rel_err(T, delassus(lm, d, q, cons, method="dense")) < TOL
    assert np.all(T[-6:] == 0.0) and np.all(T[:, -6:] == 0.0)
    perm = rng.permutation(len(cons))
    Tp = delassus(lm, d, q, [cons[k] for k in perm], method="ltl")
    offs = np.cumsum([0] + [c.dim for c in cons])
    rows = np.concatenate([np.arange(offs[k], offs[k + 1]) for k in perm])
    assert rel_err(Tp, T[np.ix_(rows, rows)]) < 1e-13
    assert delassus(lm, d, q, [], method="ltl").shape == (0, 0)


def test_ltl_multi_dof_joints():
    """Spherical / free joints inside the tree (several dofs per joint, λ chains within a joint)."""
    rng = np.random.default_rng(17)
    m = loopdyn.Model("multi")
    joints = [
        loopdyn.Spherical(),
        loopdyn.Revolute([0, 0, 1]),
        loopdyn.Spherical(),
        loopdyn.Prismatic([1, 0, 0]),
    ]
    parents = [0, 1, 2, 1]
    for k, (jt, p) in enumerate(zip(joints, parents, strict=True), start=1):
        m.add_body(
            f"l{k}",
            p if p == 0 else f"l{p}",
            jt,
            (trees.random_rotation(rng), rng.normal(size=3) * 0.3),
            loopdyn.Inertia(*trees.random_inertia(rng)),
        )
    d = m.create_data()
    cons = [Constraint("l3", "6d"), Constraint("l4", "3d"), Constraint("l2", rng.normal(size=(2, 6)))]
    for _ in range(3):
        q, _, _ = trees.random_state(rng, m)
        assert rel_err(delassus(m, d, q, cons, method="ltl"), delassus(m, d, q, cons, method="dense")) < TOL


def test_ltl_errors():
    rng = np.random.default_rng(1)
    lm, _ = trees.random_tree(rng, 4, floating=True, with_pinocchio=False)
    d = lm.create_data()
    q, _, _ = trees.random_state(rng, lm)
    cons = [Constraint(lm.bodies[-1].name, "6d")]
    with pytest.raises(ShapeError):
        delassus(lm, d, q[:-1], cons, method="ltl")
    qb = q.copy()
    qb[3:7] *= 2.0
    with pytest.raises(ConfigurationError):
        delassus(lm, d, qb, cons, method="ltl")


def test_ltl_random_trees_vs_pinocchio():
    import pinocchio as pin
    rng = np.random.default_rng(23)
    for n, floating in [(3, False), (8, True), (15, False), (24, True)]:
        lm, pm = trees.random_tree(rng, n, floating=floating, with_pinocchio=True)
        d = lm.create_data()
        cons = random_constraints(rng, lm, 5, frames_only=True)
        q, _, _ = trees.random_state(rng, lm)
        G, _ = pin_reference(pin, pm, q, lm, cons)
        assert rel_err(delassus(lm, d, q, cons, method="ltl"), G) < 1e-9, n


def test_ltl_damped_inverse():
    rng = np.random.default_rng(19)
    lm, _ = trees.random_tree(rng, 14, floating=True, with_pinocchio=False)
    d = lm.create_data()
    cons = random_constraints(rng, lm, 5)
    q, _, _ = trees.random_state(rng, lm)
    mu = 1e-3
    ref = damped_delassus_inverse(lm, d, q, cons, mu)
    assert rel_err(damped_delassus_inverse(lm, d, q, cons, mu, method="ltl"), ref) < 1e-9
