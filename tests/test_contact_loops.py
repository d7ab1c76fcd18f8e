"""``constrained_forward_dynamics`` on models with loops in one compiled call
(:func:`loopdyn.algorithms.contact.contact_loops_kernel`: C-ABA, the bias from its body motions,
cluster PV-OSIMr on its articulated inertias, the damped Cholesky and C-ABA's passes with the
constraint wrenches) against one KKT solve built
from Pinocchio alone on the spanning tree (:class:`loop_oracles.SpanningPinocchio`: loop rows from the
frame Jacobians of the two sides of each loop joint, the couplings' ratios and sympy of the implicit
constraints' φ; contact rows from frame Jacobians; biases from classical accelerations), with
damping, desired accelerations and external forces, and a negative control (the loops' bias dropped);
redundant sets; no constraints; bad inputs (specific errors, nothing corrupted)."""

from __future__ import annotations

import numpy as np
import pytest
from cluster_models import random_cluster_model
from loop_oracles import SpanningPinocchio
from test_cluster_delassus import rel_err

import loopdyn
from loopdyn import Constraint
from loopdyn.contact import constrained_forward_dynamics
from loopdyn.errors import RedundantConstraintsError, ShapeError

TOL = 1e-9


def _constraints(model, rng, floating):
    names = [b.name for b in model.bodies]
    cons = [Constraint(names[-1], "3d", (np.eye(3), rng.normal(size=3) * 0.1))]
    cons.append(
        Constraint(names[len(names) // 2], "6d" if floating else "3d", (np.eye(3), rng.normal(size=3) * 0.1))
    )
    return cons


def _kkt(model, q, v, tau, cons, k, mu, f):
    """(ÿ, λ) from Pinocchio alone on the spanning tree, one KKT solve (see loop_oracles)."""
    return SpanningPinocchio(model).forward_dynamics(q, v, tau, cons, k, mu, f)


@pytest.mark.parametrize("seed,blocks,floating", [(3, 5, True), (5, 5, False)])
@pytest.mark.parametrize("mu", [0.0, 1e-3, 0.5])
def test_against_the_kkt_system(seed, blocks, floating, mu):
    model = random_cluster_model(seed, blocks, floating)
    d = model.create_data()
    rng = np.random.default_rng(60 + seed)
    cons = _constraints(model, rng, floating)
    m = sum(c.dim for c in cons)
    oracle = SpanningPinocchio(model)
    assert {"LoopJoint", "Coupling", "ImplicitConstraint"} <= {type(c).__name__ for c in model.constraints}
    for with_forces in (False, True):
        q = loopdyn.random_configuration(model, rng)
        v, tau = rng.normal(size=model.nv), rng.normal(size=model.nv)
        f = rng.normal(size=(model.njoints, 6)) if with_forces else None
        k = rng.normal(size=m)
        ddy, lam = constrained_forward_dynamics(model, d, q, v, tau, cons, desired=k, mu=mu, f_ext=f)
        ddy_r, lam_r = oracle.forward_dynamics(q, v, tau, cons, k, mu, f)
        assert rel_err(ddy, ddy_r) < TOL
        assert rel_err(lam, lam_r) < TOL
        # negative control: the oracle without the loops' bias γ (K a = 0) is measurably different
        ddy_n, lam_n = oracle.forward_dynamics(q, v, tau, cons, k, mu, f, loop_bias=False)
        assert rel_err(ddy, ddy_n) > 1e3 * TOL and rel_err(lam, lam_n) > 1e3 * TOL


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
    ddy_r, lam_r = _kkt(model, q, v, tau, [c, c], np.zeros(6), 1e-6, None)
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
