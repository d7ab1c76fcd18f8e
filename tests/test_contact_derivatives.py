"""``loopdyn.constrained_forward_dynamics_derivatives`` (issue 30, item 1c).

* trees: against Pinocchio's ``computeConstraintDynamicsDerivatives`` (LOCAL contact models: solo12's
  four feet as 3D contacts, talos_reduced's soles as 6D contacts), ≤ 1e-9 relative;
* trees with external forces, desired accelerations, damping and mixed 3D / 6D / custom rows, and
  models with loops (the four-bar, the five-bar, Mini Cheetah, Tello), against 4th-order central
  differences of the verified ``constrained_forward_dynamics`` along ``integrate``, ≤ 1e-7 relative;
* the identity ``∂(q̈, λ)/∂τ = [[M, −Jᵀ], [J, μ]]⁻¹ [1; 0]`` with M from ``crba`` and J from
  ``constraint_jacobian`` (dense, independent of the kernels' factorisations);
* negative controls: G's state dependence frozen on the four-bar fails the difference check; the
  constrained derivatives differ from the unconstrained ones (the Pinocchio check is not vacuous);
* bad input (shapes, NaN, a singular contact set, bad ``desired`` / ``mu``) → ``loopdyn.errors``, with
  the Data still usable; no constraints → ``aba_derivatives``; the batch equals the single calls.
"""

from __future__ import annotations

import numpy as np
import pytest
import trees
from test_contact import ROBOTS, pin_contacts
from test_delassus import random_constraints
from test_derivatives import central_jacobian

import loopdyn
from loopdyn import Constraint
from loopdyn import contact_derivatives as cd
from loopdyn.errors import (
    ConfigurationError,
    InputError,
    NonFiniteError,
    RedundantConstraintsError,
    ShapeError,
)

RTOL_PIN = 1e-9
RTOL_FD = 1e-7
NAMES = ("dddq_dq", "dddq_dv", "dddq_dtau", "dforces_dq", "dforces_dv", "dforces_dtau")


def rel(a, b) -> float:
    """Max-norm error relative to the max-norm of the reference (of at least 1e-300)."""
    a, b = np.asarray(a), np.asarray(b)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300)) if b.size else 0.0


# ------------------------------------------------------------------------------------------------
# trees against Pinocchio
@pytest.mark.parametrize("robot", list(ROBOTS))
def test_trees_match_pinocchio(robot):
    import pinocchio as pin

    lm, pm = trees.robot_case(robot)
    d = lm.create_data()
    cons = ROBOTS[robot]
    cms, cds = pin_contacts(pin, pm, cons)
    pd = pm.createData()
    pin.initConstraintDynamics(pm, pd, cms, cds)
    prox = pin.ProximalSettings(1e-14, 1e-12, 100)
    rng = np.random.default_rng(11)
    for s in range(4):
        q, v, tau = trees.random_state(rng, lm)
        r = loopdyn.constrained_forward_dynamics_derivatives(lm, d, q, v, tau, cons)
        pin.constraintDynamics(pm, pd, q, v, tau, cms, cds, prox)
        pin.computeConstraintDynamicsDerivatives(pm, pd, cms, cds, prox)
        expected = (pd.ddq, pd.lambda_c, pd.ddq_dq, pd.ddq_dv, pd.ddq_dtau, pd.dlambda_dq, pd.dlambda_dv,
                    pd.dlambda_dtau)  # fmt: skip
        for what, x, y in zip(("ddq", "forces", *NAMES), r, expected, strict=True):
            assert rel(x, y) < RTOL_PIN, f"{robot}, state {s}: {what} {rel(x, y):.2e}"
        # negative control: the contacts change the derivatives (the check above is not vacuous)
        free = loopdyn.aba_derivatives(lm, d, q, v, tau)
        assert rel(r.dddq_dq, free[0]) > 1e-2 and rel(r.dddq_dtau, free[2]) > 1e-2


# ------------------------------------------------------------------------------------------------
# against central differences of the verified forward function
def fd_jacobians(model, d, q, v, tau, cons, k, mu, f, step=1e-4):
    """4th-order central differences of ``(q̈, λ)`` of ``constrained_forward_dynamics`` along
    ``integrate``, v and τ: three (nv + m) × nv matrices."""

    def F(qq, vv, tt):
        a, lam = loopdyn.constrained_forward_dynamics(model, d, qq, vv, tt, cons, desired=k, mu=mu, f_ext=f)
        return np.concatenate([a, lam])

    n = model.nv
    return [central_jacobian(lambda e: F(loopdyn.integrate(model, q, e), v, tau), n, step),
            central_jacobian(lambda e: F(q, v + e, tau), n, step),
            central_jacobian(lambda e: F(q, v, tau + e), n, step)]  # fmt: skip


def fd_check(model, d, q, v, tau, cons, k, mu, f, step=1e-4):
    """The worst relative error of the six derivatives against 4th-order central differences of
    ``constrained_forward_dynamics`` along ``integrate``, v and τ; and the result."""
    r = loopdyn.constrained_forward_dynamics_derivatives(model, d, q, v, tau, cons, desired=k, mu=mu, f_ext=f)
    fd = fd_jacobians(model, d, q, v, tau, cons, k, mu, f, step)
    got = [np.vstack([r[2 + x], r[5 + x]]) for x in range(3)]
    base = loopdyn.constrained_forward_dynamics(model, d, q, v, tau, cons, desired=k, mu=mu, f_ext=f)
    assert rel(np.concatenate([r.ddq, r.forces]), np.concatenate(base)) < 1e-12
    return max(rel(g, e) for g, e in zip(got, fd, strict=True)), r


@pytest.mark.parametrize("seed,n,floating", [(1, 6, True), (2, 8, False), (3, 12, True)])
def test_random_trees_match_central_differences(seed, n, floating):
    rng = np.random.default_rng(100 + seed)
    lm, _ = trees.random_tree(rng, n, floating=floating, with_pinocchio=False)
    d = lm.create_data()
    cons = random_constraints(rng, lm, 3, frames_only=True)
    m = sum(c.dim for c in cons)
    for mu in (1e-2, 0.5):  # damped: random constraint sets may be redundant
        q, v, tau = trees.random_state(rng, lm)
        f = rng.normal(size=(lm.njoints, 6))
        err, _ = fd_check(lm, d, q, v, tau, cons, rng.normal(size=m), mu, f)
        assert err < RTOL_FD, f"mu={mu}: {err:.2e}"


def test_solo12_with_forces_and_desired_match_central_differences():
    lm, _ = trees.robot_case("solo12", with_pinocchio=False)
    d = lm.create_data()
    cons = ROBOTS["solo12"]
    rng = np.random.default_rng(5)
    q, v, tau = trees.random_state(rng, lm)
    err, _ = fd_check(lm, d, q, v, tau, cons, rng.normal(size=12), 0.0, rng.normal(size=(lm.njoints, 6)))
    assert err < RTOL_FD


# the built-in loop robots with contacts on a foot (custom rows where a linkage has few DoF)
LOOP_CASES = {
    "four_bar": [Constraint("link2", [[0.3, -0.2, 0.5, 1.0, 0.7, -0.4]], (np.eye(3), [0.1, 0.05, 0.0]))],
    "five_bar": [Constraint("end_effector", np.eye(6)[[0, 2]])],
    "mini_cheetah": [Constraint("FL_knee_link", "3d", (np.eye(3), [0.0, 0.0, -0.2])),
                     Constraint("HR_knee_link", "3d", (np.eye(3), [0.0, 0.0, -0.2]))],
    "tello": [Constraint("left-foot", "6d"), Constraint("right-foot", "3d", (np.eye(3), [0.05, 0.0, -0.03]))],
}  # fmt: skip


@pytest.fixture(scope="module", params=list(LOOP_CASES))
def loop_case(request):
    return request.param, getattr(loopdyn.robots, request.param)()


def loop_state(model, rng):
    q = loopdyn.random_configuration(model, rng)
    return q, rng.normal(size=model.nv), rng.normal(size=model.nv), rng.normal(size=(model.njoints, 6))


def test_loops_match_central_differences(loop_case):
    name, model = loop_case
    d = model.create_data()
    cons = LOOP_CASES[name]
    m = sum(c.dim for c in cons)
    rng = np.random.default_rng(21)
    for mu in (0.0, 0.1):
        q, v, tau, f = loop_state(model, rng)
        err, _ = fd_check(model, d, q, v, tau, cons, rng.normal(size=m), mu, f)
        assert err < RTOL_FD, f"{name}, mu={mu}: {err:.2e}"


def dense_reference(model, d, q, v, tau, cons, mu, f_ext, frozen=False):
    """The KKT sensitivities (5)–(6) of ``algorithms/contact_derivatives.py`` on a model with loops as
    dense NumPy/SciPy products — the library's first version, kept here as a second computation of the
    kernel's formulas: the spanning tree's RNEA and frame-acceleration derivatives from the tree
    kernels, the loops' tangent maps ``loopdyn.derivatives.loop_tangent_maps`` as dense matrices,
    Cholesky solves with ``H = Gᵀ M_s G``. ``frozen``: G's and g's state dependence dropped (W, Zq,
    Zv, ∂G set to zero), the negative control."""
    from scipy.linalg import cho_factor, cho_solve

    from loopdyn.algorithms import contact_derivatives as ck
    from loopdyn.algorithms import derivatives as dk
    from loopdyn.algorithms import rnea as rk
    from loopdyn.constraint_rows import prepare
    from loopdyn.derivatives import loop_tangent_maps

    rows = prepare(model, cons)
    ddy, lam = loopdyn.constrained_forward_dynamics(model, d, q, v, tau, cons, None, mu, f_ext)
    qs, vs, as_, G, W, Zq, Zv, dG = loop_tangent_maps(model, d, q, v, ddy)
    if frozen:
        W, Zq, Zv, dG = 0 * W, 0 * Zq, 0 * Zv, 0 * dG
    nvs, nv, m = model.spanning_nv, model.nv, rows.m
    f2 = np.zeros((d.ib.shape[0], 6)) if f_ext is None else np.array(f_ext, dtype=float)
    for e in range(len(rows.body)):  # Jᵀλ as body forces [force; torque]: K_eᵀ λ_e = [n; f]
        b = int(rows.body[e])
        if b:
            w = rows.K[rows.row[e] : rows.row[e + 1]].T @ lam[rows.row[e] : rows.row[e + 1]]
            f2[b, :3] += w[3:]
            f2[b, 3:] += w[:3]
    Xq, Xv, Ms = np.empty((nvs, nvs)), np.empty((nvs, nvs)), np.empty((nvs, nvs))
    assert dk.rnea_derivatives_kernel(d.ib, d.ws, qs, vs, as_, f2, Xq, Xv, Ms) == 0
    taus = np.empty(nvs)
    assert rk.rnea_fext_kernel(d.ib, d.ws, qs, vs, as_, f2, taus) == 0
    prog = cd.spanning_constraints(d, rows)
    P, Js = np.empty((m, 3 * nvs)), np.empty((m, nvs))
    assert ck.frame_acceleration_derivatives_kernel(d.ib, d.ws, qs, vs, as_, prog.cf, prog.ci, P, Js) == 0
    Aq, Av = P[:, :nvs], P[:, nvs : 2 * nvs]
    dtau_dq = G.T @ (Xq @ G + Xv @ W + Ms @ Zq) + np.einsum("jsc,s->cj", dG, taus)
    dtau_dv = G.T @ (Xv @ G + Ms @ Zv)
    H = G.T @ Ms @ G
    J = Js @ G
    dalpha = np.hstack([Aq @ G + Av @ W + Js @ Zq, Av @ G + Js @ Zv, np.zeros((m, nv))])
    Z = cho_solve(cho_factor(H), np.hstack([-dtau_dq, -dtau_dv, np.eye(nv)]))  # Z_δ, Z_v, H⁻¹
    JH = J @ Z[:, 2 * nv :]
    dlam = -cho_solve(cho_factor(JH @ J.T + mu * np.eye(m)), J @ Z + dalpha)  # (5)
    dddq = Z + JH.T @ dlam  # (6)
    s = (slice(0, nv), slice(nv, 2 * nv), slice(2 * nv, 3 * nv))
    return (*(dddq[:, x] for x in s), *(dlam[:, x] for x in s))


def test_loops_equal_the_dense_reference(loop_case):
    """The kernel against the dense reference (the same formulas, computed another way), with external
    forces and damping; the difference check above is the independent oracle. Each block relative to
    its largest entry, or to 1e-3 of the largest entry of the six when it is smaller: a block that is
    zero in exact arithmetic (∂q̈/∂τ of the one-DoF four-bar held by one row, of the five-bar held by
    two) is a cancellation whose rounding has no scale of its own (measured: ≤ 2e-14 of the six's)."""
    name, model = loop_case
    d = model.create_data()
    cons = LOOP_CASES[name]
    rng = np.random.default_rng(23)
    for mu in (0.0, 0.1):
        q, v, tau, f = loop_state(model, rng)
        got = loopdyn.constrained_forward_dynamics_derivatives(model, d, q, v, tau, cons, None, mu, f)
        ref = dense_reference(model, d, q, v, tau, cons, mu, f)
        scale = max(np.abs(y).max() for y in ref)  # a block can be exactly zero (the one-DoF four-bar held)
        for what, x, y in zip(NAMES, got[2:], ref, strict=True):
            err = np.abs(x - y).max() / max(np.abs(y).max(), 1e-3 * scale)
            assert err < 1e-10, f"{name}, mu={mu}: {what} {err:.1e}"


def test_negative_control_frozen_g_fails_on_the_four_bar():
    """The difference check passes the dense reference and fails it with G's and g's state dependence
    dropped: it can see the terms the implicit loops add."""
    model = loopdyn.robots.four_bar()
    d = model.create_data()
    cons = LOOP_CASES["four_bar"]
    rng = np.random.default_rng(21)
    q, v, tau, f = loop_state(model, rng)
    fd = fd_jacobians(model, d, q, v, tau, cons, None, 0.0, f)

    def err(r):
        return max(rel(np.vstack([r[x], r[3 + x]]), fd[x]) for x in range(3))

    assert err(dense_reference(model, d, q, v, tau, cons, 0.0, f)) < RTOL_FD
    assert err(dense_reference(model, d, q, v, tau, cons, 0.0, f, frozen=True)) > 1e3 * RTOL_FD


# ------------------------------------------------------------------------------------------------
# identities
def kkt_tau_sensitivity(model, d, q, cons, mu):
    """``(∂q̈/∂τ, ∂λ/∂τ)`` from the dense KKT matrix ``[[M, −Jᵀ], [J, μ 1]]`` (crba, constraint_jacobian)."""
    M = loopdyn.crba(model, d, q)
    J = loopdyn.constraint_jacobian(model, d, q, cons)
    n, m = M.shape[0], J.shape[0]
    K = np.block([[M, -J.T], [J, mu * np.eye(m)]])
    X = np.linalg.solve(K, np.vstack([np.eye(n), np.zeros((m, n))]))
    return X[:n], X[n:]


@pytest.mark.parametrize("case", ["solo12", "talos_reduced", "mini_cheetah", "tello", "five_bar"])
@pytest.mark.parametrize("mu", [0.0, 0.3])
def test_tau_sensitivity_is_the_kkt_solution(case, mu):
    if case in ROBOTS:
        model, _ = trees.robot_case(case, with_pinocchio=False)
        cons = ROBOTS[case]
    else:
        model, cons = getattr(loopdyn.robots, case)(), LOOP_CASES[case]
    d = model.create_data()
    rng = np.random.default_rng(8)
    q = loopdyn.random_configuration(model, rng)
    v, tau = rng.normal(size=model.nv), rng.normal(size=model.nv)
    r = loopdyn.constrained_forward_dynamics_derivatives(model, d, q, v, tau, cons, mu=mu)
    A, B = kkt_tau_sensitivity(model, d, q, cons, mu)
    # relative to the whole solution's scale: on the five-bar held at its end effector (m = nv = 2)
    # ∂q̈/∂τ is zero (the linkage is locked)
    assert rel(np.vstack([r.dddq_dtau, r.dforces_dtau]), np.vstack([A, B])) < 1e-9


def test_no_constraints_is_aba_derivatives():
    lm, _ = trees.robot_case("solo12", with_pinocchio=False)
    d = lm.create_data()
    q, v, tau = trees.random_state(np.random.default_rng(3), lm)
    r = loopdyn.constrained_forward_dynamics_derivatives(lm, d, q, v, tau, [])
    expected = loopdyn.aba_derivatives(lm, d, q, v, tau)
    for x, y in zip(r[2:5], expected, strict=True):
        assert rel(x, y) < 1e-14
    assert r.forces.shape == (0,) and r.dforces_dq.shape == (0, lm.nv)


# ------------------------------------------------------------------------------------------------
# bad input
@pytest.mark.parametrize("case", ["solo12", "mini_cheetah", "four_bar"])
def test_bad_input_raises_and_leaves_data_usable(case):
    if case in ROBOTS:
        model, _ = trees.robot_case(case, with_pinocchio=False)
        cons = ROBOTS[case]
    else:
        model, cons = getattr(loopdyn.robots, case)(), LOOP_CASES[case]
    d = model.create_data()
    rng = np.random.default_rng(9)
    q = loopdyn.random_configuration(model, rng)
    v, tau = rng.normal(size=model.nv), rng.normal(size=model.nv)
    fn = loopdyn.constrained_forward_dynamics_derivatives
    good = fn(model, model.create_data(), q, v, tau, cons)
    bad_v = v.copy()
    bad_v[-1] = np.nan
    with pytest.raises(ShapeError, match="q"):
        fn(model, d, q[:-1], v, tau, cons)
    with pytest.raises(ShapeError, match="tau"):
        fn(model, d, q, v, tau[:-1], cons)
    with pytest.raises(NonFiniteError, match="v"):
        fn(model, d, q, bad_v, tau, cons)
    with pytest.raises(ShapeError, match="desired"):
        fn(model, d, q, v, tau, cons, desired=np.zeros(2))
    with pytest.raises(InputError, match="mu"):
        fn(model, d, q, v, tau, cons, mu=-1.0)
    with pytest.raises(ShapeError, match="f_ext"):
        fn(model, d, q, v, tau, cons, f_ext=np.zeros((2, 6)))
    with pytest.raises(RedundantConstraintsError):  # a singular contact set: one foot twice
        fn(model, d, q, v, tau, [*cons, cons[0]])
    if case == "four_bar":  # positions off the loop
        off = q.copy()
        off[1] += 0.1
        with pytest.raises(ConfigurationError, match="violate its constraints"):
            fn(model, d, off, v, tau, cons)
    again = fn(model, d, q, v, tau, cons)
    for x, y in zip(again, good, strict=True):
        assert np.array_equal(x, y)


# ------------------------------------------------------------------------------------------------
# batch
@pytest.mark.parametrize("case", ["solo12", "four_bar", "tello"])
def test_batch_rows_equal_the_single_state_function(case):
    if case in ROBOTS:
        model, _ = trees.robot_case(case, with_pinocchio=False)
        cons = ROBOTS[case]
    else:
        model, cons = getattr(loopdyn.robots, case)(), LOOP_CASES[case]
    d = model.create_data()
    rng = np.random.default_rng(4)
    N = 70
    m = sum(c.dim for c in cons)
    Q = np.stack([loopdyn.random_configuration(model, rng) for _ in range(N)])
    V, TAU = rng.normal(size=(N, model.nv)), rng.normal(size=(N, model.nv))
    K, F = rng.normal(size=(N, m)), rng.normal(size=(N, model.njoints, 6))
    out = loopdyn.batch.constrained_forward_dynamics_derivatives(model, Q, V, TAU, cons, K, 0.01, F)
    for k in (0, 33, N - 1):
        r = loopdyn.constrained_forward_dynamics_derivatives(model, d, Q[k], V[k], TAU[k], cons, K[k], 0.01,
                                                             F[k])  # fmt: skip
        for x, y in zip(out, r, strict=True):
            assert np.allclose(x[k], y, rtol=1e-13, atol=1e-13 * np.abs(y).max(initial=1.0))
    Q[5, 0] = np.nan
    with pytest.raises(NonFiniteError, match="row 5"):
        loopdyn.batch.constrained_forward_dynamics_derivatives(model, Q, V, TAU, cons)


def test_readme_section_runs():
    from doc_pages import run

    ns = run("tutorials/derivatives")
    r = ns["r"]
    assert r.dforces_dq.shape == (12, 18) and r.dddq_dtau.shape == (18, 18)
