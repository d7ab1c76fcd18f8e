"""``constrained_forward_dynamics`` on models with loops in one compiled call
(:func:`loopdyn.algorithms.contact.contact_loops_kernel`: C-ABA, cluster forward kinematics, cluster
PV-OSIMr, the damped Cholesky and C-ABA with the constraint wrenches) against the KKT system built
from the projection baselines (H = GᵀH_spanG, C = Gᵀ(C_span + H_span g), J = J_span G on the spanning
tree), with damping, desired accelerations and external forces; redundant sets; no constraints; bad
inputs (specific errors, nothing corrupted)."""

from __future__ import annotations

import numpy as np
import pytest
from cluster_models import random_cluster_model
from test_cluster_delassus import rel_err, spanning_oracle

import loopdyn
from loopdyn import Constraint
from loopdyn.baselines import projected_bias, projected_mass_matrix
from loopdyn.contact import constrained_forward_dynamics, constraint_acceleration
from loopdyn.errors import RedundantConstraintsError, ShapeError

TOL = 1e-9


def _constraints(model, rng, floating):
    names = [b.name for b in model.bodies]
    cons = [Constraint(names[-1], "3d", (np.eye(3), rng.normal(size=3) * 0.1))]
    cons.append(
        Constraint(names[len(names) // 2], "6d" if floating else "3d", (np.eye(3), rng.normal(size=3) * 0.1))
    )
    return cons


def _kkt(model, d, q, v, tau, cons, k, mu, f):
    """``[[H, −Jᵀ], [J, μ I]] [ÿ; λ] = [τ − C; k − γ]`` from the projection baselines."""
    m = sum(c.dim for c in cons)
    _, J = spanning_oracle(model, q, cons)
    H = projected_mass_matrix(model, q)
    C = projected_bias(model, q, v, f)
    gamma = constraint_acceleration(model, d, q, v, np.zeros(model.nv), cons)
    A = np.block([[H, -J.T], [J, mu * np.eye(m)]])
    x = np.linalg.solve(A, np.concatenate([tau - C, k - gamma]))
    return x[: model.nv], x[model.nv :]


@pytest.mark.parametrize("seed,blocks,floating", [(3, 5, True), (5, 5, False)])
@pytest.mark.parametrize("mu", [0.0, 1e-3, 0.5])
def test_against_the_kkt_system(seed, blocks, floating, mu):
    model = random_cluster_model(seed, blocks, floating)
    d = model.create_data()
    rng = np.random.default_rng(60 + seed)
    cons = _constraints(model, rng, floating)
    m = sum(c.dim for c in cons)
    for with_forces in (False, True):
        q = loopdyn.random_configuration(model, rng)
        v, tau = rng.normal(size=model.nv), rng.normal(size=model.nv)
        f = rng.normal(size=(model.njoints, 6)) if with_forces else None
        k = rng.normal(size=m)
        ddy, lam = constrained_forward_dynamics(model, d, q, v, tau, cons, desired=k, mu=mu, f_ext=f)
        ddy_r, lam_r = _kkt(model, d, q, v, tau, cons, k, mu, f)
        assert rel_err(ddy, ddy_r) < TOL
        assert rel_err(lam, lam_r) < TOL


def test_redundant_and_empty():
    model = random_cluster_model(3, 5, True)
    d = model.create_data()
    rng = np.random.default_rng(1)
    q = loopdyn.random_configuration(model, rng)
    v, tau = rng.normal(size=model.nv), rng.normal(size=model.nv)
    c = _constraints(model, rng, True)[0]
    with pytest.raises(RedundantConstraintsError):
        constrained_forward_dynamics(model, d, q, v, tau, [c, c])
    ddy, lam = constrained_forward_dynamics(model, d, q, v, tau, [c, c], mu=1e-6)
    ddy_r, lam_r = _kkt(model, d, q, v, tau, [c, c], np.zeros(6), 1e-6, None)
    assert rel_err(ddy, ddy_r) < 1e-7
    assert np.allclose(lam[:3], lam[3:])  # the damped least-squares forces split evenly
    ddy, lam = constrained_forward_dynamics(model, d, q, v, tau, [])
    assert lam.shape == (0,)
    assert rel_err(ddy, loopdyn.aba(model, d, q, v, tau)) < 1e-14


def test_bad_inputs_raise_and_corrupt_nothing():
    model = random_cluster_model(5, 5, False)
    d = model.create_data()
    rng = np.random.default_rng(2)
    cons = _constraints(model, rng, False)
    q = loopdyn.random_configuration(model, rng)
    v, tau = rng.normal(size=model.nv), rng.normal(size=model.nv)
    ref = constrained_forward_dynamics(model, d, q, v, tau, cons)
    ws = d.ws.copy()
    for bad in (dict(q=q[:-1]), dict(v=v[:-1]), dict(tau=np.r_[tau, 0.0]), dict(f_ext=np.zeros((2, 6)))):
        args = dict(q=q, v=v, tau=tau, f_ext=None) | bad
        with pytest.raises(ShapeError):
            constrained_forward_dynamics(
                model, d, args["q"], args["v"], args["tau"], cons, f_ext=args["f_ext"]
            )
    assert np.array_equal(d.ws, ws)
    out = constrained_forward_dynamics(model, d, list(q), list(v), list(tau), cons)  # coerced
    assert rel_err(out[0], ref[0]) < 1e-14 and rel_err(out[1], ref[1]) < 1e-14
