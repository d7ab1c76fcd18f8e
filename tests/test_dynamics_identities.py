"""Identities the algorithms must satisfy among themselves (no Pinocchio needed).

* ``aba(rnea(a)) = a``; ``rnea(q, v, a) = crba(q) a + nonlinear_effects(q, v)``; ``rnea(q, 0, 0)``
  is the generalized gravity, which is the gradient of the potential energy;
* the mass matrix is symmetric positive definite and ``minverse`` is its inverse;
* the batch functions equal a loop of single calls;
* power balance ``dE/dt = vᵀτ`` and energy conservation along RK4 trajectories;
* the frame Jacobian maps v to the frame velocity, and its time variation is the derivative of the
  Jacobian along ``q(t) = q ⊕ v t``;
* the trees in the order they were drawn (subtrees not contiguous in v) give the same dynamics as
  the same trees renumbered depth-first;
* input validation: wrong shapes, non-finite numbers, non-unit quaternions, foreign Data — and a
  failed call leaves the Data usable.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import trees
from conftest import TREE_IDS, Case, load_case
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from trees import assert_close

import loopdyn
from loopdyn.errors import (
    ConfigurationError,
    DataMismatchError,
    LoopdynError,
    NonFiniteError,
    ShapeError,
)

EPS = np.finfo(float).eps
REFERENCES = ("local", "world", "local_world_aligned")

DRAWN_ORDER = trees.drawn_order_indices()
DRAWN_ORDER_IDS = [TREE_IDS[i] + "-drawn-order" for i in DRAWN_ORDER]


@pytest.fixture(params=DRAWN_ORDER)
def drawn_pair(request) -> tuple[Case, Case]:
    """The same random tree in depth-first order and in the order its links were drawn."""
    index = request.param
    dfs = load_case(TREE_IDS[index], with_pinocchio=False)
    lm, _ = trees.tree_case(index, with_pinocchio=False, depth_first_order=False)
    return dfs, Case(lm.name, lm, None, dfs.seed)


def test_random_trees_cover_the_cases():
    """The tree set spans what the comparisons should exercise."""
    recipes = [trees.tree_recipe(i) for i in range(len(trees.TREE_SPECS))]
    kinds = {link.kind for r in recipes for link in r.links}
    assert set(trees.JOINT_KINDS) | {"freeflyer", "fixed"} <= kinds
    sizes = [spec[1] for spec in trees.TREE_SPECS]
    assert len(recipes) >= 20 and min(sizes) == 1 and max(sizes) == 30
    assert {spec[2] for spec in trees.TREE_SPECS} == {True, False}
    links = [(r, link) for r in recipes for link in r.links]
    assert any(link.kind == "fixed" and link.parent == -1 for _, link in links), "fixed link on the world"
    assert any(link.kind == "fixed" and link.parent >= 0 and r.links[link.parent].kind == "fixed"
               for r, link in links), "chain of fixed links"
    assert any(link.kind != "fixed" and link.parent >= 0 and r.links[link.parent].kind == "fixed"
               for r, link in links), "moving body on a fixed link"
    assert any(f.link >= 0 and r.links[f.link].kind == "fixed" for r in recipes for f in r.frames)
    assert len(DRAWN_ORDER) >= 5


def symmetric(M) -> np.ndarray:
    return 0.5 * (M + M.T)


# ----------------------------------------------------------------------------------------------
# algebraic identities


def test_aba_inverts_rnea(any_case):
    lm = any_case.lm
    ld = lm.create_data()
    rng = any_case.rng(salt=20)
    for s, (q, v, a) in enumerate(any_case.states(salt=20)):
        tau = loopdyn.rnea(lm, ld, q, v, a)
        assert_close(loopdyn.aba(lm, ld, q, v, tau), a, what=f"{any_case.name}, state {s}: aba(rnea(a))")
        fext = any_case.random_fext(rng)
        tau = loopdyn.rnea(lm, ld, q, v, a, f_ext=fext)
        assert_close(loopdyn.aba(lm, ld, q, v, tau, f_ext=fext), a,
                     what=f"{any_case.name}, state {s}: aba(rnea(a, f_ext), f_ext)")


def test_rnea_is_mass_matrix_times_a_plus_nonlinear_effects(any_case):
    lm = any_case.lm
    ld = lm.create_data()
    for s, (q, v, a) in enumerate(any_case.states(salt=21)):
        tau = loopdyn.rnea(lm, ld, q, v, a)
        M = loopdyn.crba(lm, ld, q)
        h = loopdyn.nonlinear_effects(lm, ld, q, v)
        assert_close(tau, M @ a + h, what=f"{any_case.name}, state {s}: rnea = M a + h")
        assert_close(h, loopdyn.rnea(lm, ld, q, v, np.zeros(lm.nv)),
                     what=f"{any_case.name}, state {s}: nonlinear_effects = rnea(q, v, 0)")
        assert_close(loopdyn.gravity(lm, ld, q), loopdyn.rnea(lm, ld, q, np.zeros(lm.nv), np.zeros(lm.nv)),
                     what=f"{any_case.name}, state {s}: gravity = rnea(q, 0, 0)")


def test_external_forces_enter_through_jacobian_transpose(any_case):
    """A force f on body i (in its frame) changes tau by -J_iᵀ f, J_i the local Jacobian of body i."""
    lm = any_case.lm
    ld = lm.create_data()
    body_frame = [0] + [lm.frame_id(name, "body") for name in lm.body_names[1:]]
    rng = any_case.rng(salt=22)
    for s, (q, v, a) in enumerate(any_case.states(n=10, salt=22)):
        fext = any_case.random_fext(rng)
        delta = np.zeros(lm.nv)
        for i in range(1, lm.njoints):
            delta -= loopdyn.frame_jacobian(lm, ld, q, body_frame[i], "local").T @ fext[i]
        assert_close(loopdyn.rnea(lm, ld, q, v, a, f_ext=fext), loopdyn.rnea(lm, ld, q, v, a) + delta,
                     what=f"{any_case.name}, state {s}: rnea(f_ext) = rnea - Σ Jᵢᵀ fᵢ")


def test_mass_matrix_symmetric_positive_definite(any_case):
    lm = any_case.lm
    ld = lm.create_data()
    for s, (q, _, _) in enumerate(any_case.states(salt=23)):
        M = loopdyn.crba(lm, ld, q)
        assert M.shape == (lm.nv, lm.nv)
        assert_close(M, M.T, what=f"{any_case.name}, state {s}: M - Mᵀ")
        np.linalg.cholesky(symmetric(M))  # raises LinAlgError unless positive definite
        assert np.linalg.eigvalsh(symmetric(M)).min() > 0.0


def test_minverse_inverts_crba(any_case):
    lm = any_case.lm
    ld = lm.create_data()
    eye = np.eye(lm.nv)
    for s, (q, _, _) in enumerate(any_case.states(salt=24)):
        M = loopdyn.crba(lm, ld, q)
        Minv = loopdyn.minverse(lm, ld, q)
        assert_close(Minv, Minv.T, what=f"{any_case.name}, state {s}: minverse symmetric")
        assert_close(Minv @ M, eye, what=f"{any_case.name}, state {s}: minverse @ crba")
        assert_close(M @ Minv, eye, what=f"{any_case.name}, state {s}: crba @ minverse")


def test_aba_is_minverse_times_tau_minus_nle(any_case):
    lm = any_case.lm
    ld = lm.create_data()
    rng = any_case.rng(salt=25)
    for s, (q, v, _) in enumerate(any_case.states(n=10, salt=25)):
        tau = rng.normal(size=lm.nv) * 5.0
        expected = loopdyn.minverse(lm, ld, q) @ (tau - loopdyn.nonlinear_effects(lm, ld, q, v))
        assert_close(loopdyn.aba(lm, ld, q, v, tau), expected,
                     what=f"{any_case.name}, state {s}: aba = M⁻¹ (tau - h)")


# ----------------------------------------------------------------------------------------------
# batch


def test_batch_equals_loop(any_case):
    lm = any_case.lm
    ld = lm.create_data()
    states = any_case.states(salt=26)
    Q = np.array([s[0] for s in states])
    V = np.array([s[1] for s in states])
    A = np.array([s[2] for s in states])
    TAU = any_case.rng(salt=26).normal(size=(len(states), lm.nv)) * 5.0
    n = len(states)

    tau = loopdyn.batch.rnea(lm, Q, V, A)
    assert tau.shape == (n, lm.nv)
    assert_close(tau, [loopdyn.rnea(lm, ld, *s) for s in states], what=f"{any_case.name}: batch rnea")
    ddq = loopdyn.batch.aba(lm, Q, V, TAU)
    assert ddq.shape == (n, lm.nv)
    assert_close(ddq, [loopdyn.aba(lm, ld, Q[k], V[k], TAU[k]) for k in range(n)],
                 what=f"{any_case.name}: batch aba")
    M = loopdyn.batch.crba(lm, Q)
    assert M.shape == (n, lm.nv, lm.nv)
    assert_close(M, [loopdyn.crba(lm, ld, Q[k]) for k in range(n)], what=f"{any_case.name}: batch crba")


def test_batch_single_row_and_validation():
    lm, _ = trees.tree_case(9, with_pinocchio=False)
    ld = lm.create_data()
    q, v, a = trees.random_state(np.random.default_rng(5), lm)
    assert_close(loopdyn.batch.rnea(lm, q[None], v[None], a[None])[0], loopdyn.rnea(lm, ld, q, v, a),
                 what="batch rnea, one row")
    with pytest.raises(ShapeError):
        loopdyn.batch.rnea(lm, np.stack([q, q]), np.stack([v, v, v]), np.stack([a, a]))
    with pytest.raises(ShapeError):
        loopdyn.batch.crba(lm, np.zeros((2, lm.nq + 1)))
    Q = np.stack([q, q])
    Q[1, 0] = np.nan
    with pytest.raises(NonFiniteError):
        loopdyn.batch.crba(lm, Q)


# ----------------------------------------------------------------------------------------------
# drawn order (not depth-first) against depth-first order


def _permutation(dfs: Case, drawn: Case) -> tuple[np.ndarray, np.ndarray]:
    """Index maps (q, v) from the drawn-order model's coordinates to the depth-first model's."""
    iq, iv = [], []
    by_name = {b.name: b for b in dfs.lm.bodies}
    for b in drawn.lm.bodies:
        twin = by_name[b.name]
        iq.extend(range(twin.idx_q, twin.idx_q + twin.joint.nq))
        iv.extend(range(twin.idx_v, twin.idx_v + twin.joint.nv))
    return np.array(iq, dtype=int), np.array(iv, dtype=int)


def test_drawn_order_matches_depth_first_order(drawn_pair):
    """Renumbering the bodies permutes the coordinates and changes nothing else."""
    dfs, drawn = drawn_pair
    iq, iv = _permutation(dfs, drawn)
    d1, d2 = dfs.lm.create_data(), drawn.lm.create_data()
    rng = dfs.rng(salt=27)
    for s, (q, v, a) in enumerate(dfs.states(salt=27)):
        qd, vd, ad = q[iq], v[iv], a[iv]
        where = f"{drawn.name}, state {s}"
        assert_close(loopdyn.rnea(drawn.lm, d2, qd, vd, ad), loopdyn.rnea(dfs.lm, d1, q, v, a)[iv],
                     what=f"{where}: rnea")
        M2 = loopdyn.crba(drawn.lm, d2, qd)
        assert_close(M2, loopdyn.crba(dfs.lm, d1, q)[np.ix_(iv, iv)], what=f"{where}: crba")
        tau = rng.normal(size=dfs.lm.nv)
        assert_close(loopdyn.aba(drawn.lm, d2, qd, vd, tau[iv]), loopdyn.aba(dfs.lm, d1, q, v, tau)[iv],
                     what=f"{where}: aba")
        assert_close(loopdyn.minverse(drawn.lm, d2, qd), loopdyn.minverse(dfs.lm, d1, q)[np.ix_(iv, iv)],
                     what=f"{where}: minverse")
        k = s % len(drawn.lm.frames)
        name, kind = drawn.lm.frames[k].name, drawn.lm.frames[k].kind
        kk = dfs.lm.frame_id(name, kind)
        assert_close(loopdyn.frame_jacobian(drawn.lm, d2, qd, k, "world"),
                     loopdyn.frame_jacobian(dfs.lm, d1, q, kk, "world")[:, iv],
                     what=f"{where}: world Jacobian of frame {name!r}")


# ----------------------------------------------------------------------------------------------
# energy


def body_coms_world(lm, ld, q) -> np.ndarray:
    loopdyn.forward_kinematics(lm, ld, q)
    oMi = ld.oMi
    return np.array([oMi[i, :3, :3] @ b.inertia.com + oMi[i, :3, 3] for i, b in enumerate(lm.bodies, 1)])


def potential_energy(lm, ld, q) -> float:
    """U = -Σ m_i gᵀ c_i over the moving bodies (fixed links are lumped into them)."""
    if lm.nbodies == 0:
        return 0.0
    masses = np.array([b.inertia.mass for b in lm.bodies])
    return float(-masses @ (body_coms_world(lm, ld, q) @ lm.gravity))


def energy(lm, ld, q, v) -> tuple[float, float]:
    """(total energy, a scale of its terms for round-off bounds)."""
    kinetic = 0.5 * v @ loopdyn.crba(lm, ld, q) @ v
    potential = potential_energy(lm, ld, q)
    masses = np.array([b.inertia.mass for b in lm.bodies])
    scale = kinetic + float(masses @ np.abs(body_coms_world(lm, ld, q) @ lm.gravity))
    return kinetic + potential, scale


def rk4(lm, ld, q, v, tau, h, steps):
    """Classical RK4 in ambient coordinates: q' = configuration_rate(q, v), v' = aba(q, v, tau).

    Dynamics are evaluated at the stage configuration projected back on the manifold (the stage
    points are off it by O(h²)); the exact flow of q' keeps quaternion norms, so the projection
    after each step only removes RK4's O(h⁵) norm drift."""

    def f(q, v):
        return trees.configuration_rate(lm, q, v), loopdyn.aba(lm, ld, trees.normalize_configuration(lm, q),
                                                               v, tau)

    for _ in range(steps):
        k1q, k1v = f(q, v)
        k2q, k2v = f(q + 0.5 * h * k1q, v + 0.5 * h * k1v)
        k3q, k3v = f(q + 0.5 * h * k2q, v + 0.5 * h * k2v)
        k4q, k4v = f(q + h * k3q, v + h * k3v)
        q = trees.normalize_configuration(lm, q + h / 6 * (k1q + 2 * k2q + 2 * k3q + k4q))
        v = v + h / 6 * (k1v + 2 * k2v + 2 * k3v + k4v)
    return q, v


ENERGY_CASES = [i for i, spec in enumerate(trees.TREE_SPECS) if spec[1] <= 16]
ENERGY_IDS = [TREE_IDS[i] for i in ENERGY_CASES] + ["solo12", "panda", "ur5"]


@pytest.fixture(params=ENERGY_IDS)
def energy_case(request) -> Case:
    return load_case(request.param, with_pinocchio=False)


def test_gravity_is_gradient_of_potential_energy(energy_case):
    lm = energy_case.lm
    ld = lm.create_data()
    h = 1e-6
    for s, (q, _, _) in enumerate(energy_case.states(n=5, salt=28)):
        g = loopdyn.gravity(lm, ld, q)
        fd = np.array([
            (potential_energy(lm, ld, trees.integrate(lm, q, e, h))
             - potential_energy(lm, ld, trees.integrate(lm, q, e, -h))) / (2 * h)
            for e in np.eye(lm.nv)
        ])
        # central difference: truncation O(h²) ≈ 1e-12, round-off ≈ eps |U| / h ≈ 1e-8 for |U| ~ 100
        _, scale = energy(lm, ld, q, np.zeros(lm.nv))
        assert_close(g, fd, rtol=1e-6, atol=1e-6 + 10 * EPS * scale / h,
                     what=f"{energy_case.name}, state {s}: gravity vs dU/dq")


def test_power_balance(energy_case):
    """dE/dt = vᵀτ under constant τ.

    dE/dt is estimated by D(h) = (E(h) - E(-h)) / 2h over one RK4 step each way: D(h) - dE/dt =
    c h² + O(h⁴) (RK4's local error O(h⁵) adds O(h⁴)), so |D(h/2) - dE/dt| ≈ |D(h) - D(h/2)| / 3
    (Richardson). The step is halved from 1e-3 until that estimate is below 1e-7 of the power scale
    Σ|vᵢτᵢ| (light limbs under random torques accelerate fast and need small steps); then the error
    must be within twice the estimate plus round-off. A wrong dynamics model makes D converge to
    something other than vᵀτ, which no step size hides."""
    lm = energy_case.lm
    ld = lm.create_data()
    rng = energy_case.rng(salt=29)

    def D(q, v, tau, h):
        qp, vp = rk4(lm, ld, q, v, tau, h, 1)
        qm, vm = rk4(lm, ld, q, v, tau, -h, 1)
        return (energy(lm, ld, qp, vp)[0] - energy(lm, ld, qm, vm)[0]) / (2 * h)

    for s, (q, v, _) in enumerate(energy_case.states(n=5, scale=0.5, salt=29)):
        tau = rng.normal(size=lm.nv)
        power = float(v @ tau)
        power_scale = 1.0 + float(np.abs(v * tau).sum())
        _, scale = energy(lm, ld, q, v)
        h = 1e-3
        previous = D(q, v, tau, h)
        while True:
            h /= 2
            current = D(q, v, tau, h)
            truncation = abs(previous - current) / 3
            if truncation <= 1e-7 * power_scale or h < 1e-6:
                break
            previous = current
        roundoff = 100 * EPS * scale / h
        err = abs(current - power)
        where = f"{energy_case.name}, state {s}: dE/dt ≈ {current!r} (h={h:.2e}), vᵀτ = {power!r}"
        assert err <= 2 * truncation + roundoff, (
            f"{where}: error {err:.3e} > 2 × truncation estimate {truncation:.3e} + round-off {roundoff:.3e}")
        assert err <= 1e-6 * power_scale, f"{where}: error {err:.3e}"


def test_energy_conservation(energy_case):
    """With τ = 0 (and no friction) E is constant. RK4's energy drift over a fixed time is O(h⁴):
    halving the step must shrink it about 16-fold (we require 4-fold, or round-off level)."""
    lm = energy_case.lm
    ld = lm.create_data()
    T, h = 0.2, 4e-3
    zero = np.zeros(lm.nv)
    for s, (q, v, _) in enumerate(energy_case.states(n=2, scale=0.5, salt=30)):
        E0, scale = energy(lm, ld, q, v)
        drifts = []
        for step in (h, h / 2):
            qT, vT = rk4(lm, ld, q, v, zero, step, round(T / step))
            drifts.append(energy(lm, ld, qT, vT)[0] - E0)
        roundoff = 1e3 * EPS * scale * math.sqrt(T / h)
        assert abs(drifts[1]) <= abs(drifts[0]) / 4 + roundoff, (
            f"{energy_case.name}, state {s}: energy drift {drifts[0]:.3e} (h={h}) -> {drifts[1]:.3e} "
            f"(h={h / 2}): not O(h⁴), E0 = {E0!r}")
        assert abs(drifts[1]) <= 1e-6 * scale, f"{energy_case.name}, state {s}: drift {drifts[1]:.3e}"


# ----------------------------------------------------------------------------------------------
# Jacobians


def test_jacobian_maps_velocity_to_frame_velocity(any_case):
    """J_local(body frame of i) v = v_i (body spatial velocity) and J a + dJ v = a_i."""
    lm = any_case.lm
    ld = lm.create_data()
    for s, (q, v, a) in enumerate(any_case.states(n=10, salt=31)):
        loopdyn.forward_kinematics(lm, ld, q, v, a)
        vel, acc = ld.v, ld.a
        for i, name in enumerate(lm.body_names[1:], start=1):
            k = lm.frame_id(name, "body")
            J = loopdyn.frame_jacobian(lm, ld, q, k, "local")
            dJ = loopdyn.frame_jacobian_time_variation(lm, ld, q, v, k, "local")
            assert_close(J @ v, vel[i], what=f"{any_case.name}, state {s}: J v of body {name!r}")
            assert_close(J @ a + dJ @ v, acc[i], what=f"{any_case.name}, state {s}: J a + dJ v of {name!r}")


@pytest.mark.parametrize("reference", REFERENCES)
def test_jacobian_time_variation_is_derivative_along_trajectory(any_case, reference):
    """dJ/dt against a central difference of J along q(t) = q ⊕ v t (h = 1e-5: truncation
    h²/6 |J'''| ≈ 1e-11, round-off eps |J| / h ≈ 1e-10, hence the 1e-6 tolerance)."""
    lm = any_case.lm
    ld = lm.create_data()
    h = 1e-5
    nf = len(lm.frames)
    for s, (q, v, _) in enumerate(any_case.states(salt=32)):
        for k in {(3 * s) % nf, (3 * s + 1) % nf, (3 * s + 2) % nf}:
            dJ = loopdyn.frame_jacobian_time_variation(lm, ld, q, v, k, reference)
            Jp = loopdyn.frame_jacobian(lm, ld, trees.integrate(lm, q, v, h), k, reference)
            Jm = loopdyn.frame_jacobian(lm, ld, trees.integrate(lm, q, v, -h), k, reference)
            assert_close(dJ, (Jp - Jm) / (2 * h), rtol=1e-6, atol=1e-6,
                         what=f"{any_case.name}, state {s}: {reference} dJ/dt of frame {lm.frames[k].name!r}")


def test_model_without_degrees_of_freedom():
    """Only fixed links: empty vectors and matrices, frames still placed."""
    lm = loopdyn.Model("static")
    R = trees.random_rotation(np.random.default_rng(1))
    lm.add_body("plate", 0, loopdyn.Fixed(), (R, [0.1, 0.2, 0.3]), loopdyn.Inertia(2.0))
    lm.add_frame("tip", "plate", (np.eye(3), [0.0, 0.0, 0.5]))
    ld = lm.create_data()
    empty = np.zeros(0)
    assert loopdyn.rnea(lm, ld, empty, empty, empty).shape == (0,)
    assert loopdyn.aba(lm, ld, empty, empty, empty).shape == (0,)
    assert loopdyn.crba(lm, ld, empty).shape == (0, 0)
    assert loopdyn.minverse(lm, ld, empty).shape == (0, 0)
    loopdyn.forward_kinematics(lm, ld, empty)
    expected = trees.homogeneous(R, [0.1, 0.2, 0.3]) @ trees.homogeneous(np.eye(3), [0.0, 0.0, 0.5])
    assert_close(loopdyn.frame_placement(lm, ld, "tip"), expected, what="tip placement")
    assert loopdyn.frame_jacobian(lm, ld, empty, "tip").shape == (6, 0)


# ----------------------------------------------------------------------------------------------
# property-based: small random trees drawn by Hypothesis


@settings(max_examples=30, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 8),
    floating=st.booleans(),
    fixed_prob=st.sampled_from([0.0, 0.3, 0.8]),
    depth_first_order=st.booleans(),
)
def test_identities_on_hypothesis_trees(seed, n, floating, fixed_prob, depth_first_order):
    rng = np.random.default_rng(seed)
    lm, _ = trees.random_tree(rng, n, floating=floating, fixed_prob=fixed_prob, with_pinocchio=False,
                              depth_first_order=depth_first_order, random_gravity=bool(seed % 2))
    ld = lm.create_data()
    q, v, a = trees.random_state(rng, lm)
    tau = loopdyn.rnea(lm, ld, q, v, a)
    M = loopdyn.crba(lm, ld, q)
    assert_close(tau, M @ a + loopdyn.nonlinear_effects(lm, ld, q, v), what="rnea = M a + h")
    assert_close(loopdyn.aba(lm, ld, q, v, tau), a, what="aba(rnea(a))")
    assert_close(loopdyn.minverse(lm, ld, q) @ M, np.eye(lm.nv), what="minverse @ crba")


# ----------------------------------------------------------------------------------------------
# input validation


@pytest.fixture
def validation_model():
    """A fresh floating tree with spherical and unbounded joints (index 9: spec 110)."""
    lm = trees.build_loopdyn(trees.tree_recipe(9))
    kinds = {b.joint.kind for b in lm.bodies}
    assert {"free-flyer", "spherical", "continuous"} <= kinds
    return lm


def _calls(lm, ld, q, v, a, tau, fext):
    """Every public algorithm as (label, thunk) with the given arguments."""
    frame = len(lm.frames) - 1
    return [
        ("rnea", lambda: loopdyn.rnea(lm, ld, q, v, a)),
        ("rnea f_ext", lambda: loopdyn.rnea(lm, ld, q, v, a, f_ext=fext)),
        ("aba", lambda: loopdyn.aba(lm, ld, q, v, tau)),
        ("aba f_ext", lambda: loopdyn.aba(lm, ld, q, v, tau, f_ext=fext)),
        ("crba", lambda: loopdyn.crba(lm, ld, q)),
        ("minverse", lambda: loopdyn.minverse(lm, ld, q)),
        ("nonlinear_effects", lambda: loopdyn.nonlinear_effects(lm, ld, q, v)),
        ("gravity", lambda: loopdyn.gravity(lm, ld, q)),
        ("forward_kinematics", lambda: loopdyn.forward_kinematics(lm, ld, q, v, a)),
        ("frame_jacobian", lambda: loopdyn.frame_jacobian(lm, ld, q, frame)),
        ("frame_jacobian_time_variation", lambda: loopdyn.frame_jacobian_time_variation(lm, ld, q, v, frame)),
    ]


def _reference_results(lm, q, v, a, tau, fext):
    ld = lm.create_data()
    return [np.array(f() if label != "forward_kinematics" else (f(), ld.oMi)[1], dtype=float)
            for label, f in _calls(lm, ld, q, v, a, tau, fext)]


def _check_still_correct(lm, ld, q, v, a, tau, fext, expected, context):
    for (label, f), ref in zip(_calls(lm, ld, q, v, a, tau, fext), expected, strict=True):
        out = f() if label != "forward_kinematics" else (f(), ld.oMi)[1]
        assert_close(out, ref, what=f"{label} after {context}")


def _valid(lm, seed=0):
    rng = np.random.default_rng(seed)
    q, v, a = trees.random_state(rng, lm)
    tau = rng.normal(size=lm.nv)
    fext = rng.normal(size=(lm.njoints, 6))
    return q, v, a, tau, fext


def _bad_variants(lm, q, v, a, tau, fext, make):
    """(description, q, v, a, tau, fext) with one argument spoiled by ``make(name, x)``."""
    base = {"q": q, "v": v, "a": a, "tau": tau, "fext": fext}
    for name in base:
        for desc, bad in make(name, base[name]):
            args = dict(base)
            args[name] = bad
            yield f"{name} {desc}", args


_USES = {
    "rnea": ("q", "v", "a"),
    "rnea f_ext": ("q", "v", "a", "fext"),
    "aba": ("q", "v", "tau"),
    "aba f_ext": ("q", "v", "tau", "fext"),
    "crba": ("q",),
    "minverse": ("q",),
    "nonlinear_effects": ("q", "v"),
    "gravity": ("q",),
    "forward_kinematics": ("q", "v", "a"),
    "frame_jacobian": ("q",),
    "frame_jacobian_time_variation": ("q", "v"),
}


def _involves(label: str, name: str) -> bool:
    return name in _USES[label]


def _raises(f, error, label: str, problems: list[str], must_mention: str | None = None) -> None:
    """Call ``f`` expecting ``error``; record what went wrong in ``problems``."""
    try:
        f()
    except error as exc:
        if not isinstance(exc, LoopdynError):
            problems.append(f"{label}: {type(exc).__name__} does not derive from LoopdynError")
        elif not str(exc):
            problems.append(f"{label}: empty error message")
        elif must_mention is not None and must_mention not in str(exc):
            problems.append(f"{label}: message does not name {must_mention!r}: {exc}")
    except Exception as exc:  # noqa: BLE001 - reported below
        problems.append(f"{label}: raised {type(exc).__name__} instead of {error.__name__}: {exc}")
    else:
        problems.append(f"{label}: did not raise {error.__name__}")


def _expect_errors(lm, make, error, context):
    """Every algorithm, with every spoiled argument it takes, raises ``error``; afterwards the same
    Data still gives the right answers."""
    q, v, a, tau, fext = _valid(lm)
    expected = _reference_results(lm, q, v, a, tau, fext)
    ld = lm.create_data()
    _calls(lm, ld, q, v, a, tau, fext)[0][1]()  # leave a valid state in the Data first
    problems: list[str] = []
    checked = 0
    for desc, args in _bad_variants(lm, q, v, a, tau, fext, make):
        name = desc.split()[0]
        for label, f in _calls(lm, ld, args["q"], args["v"], args["a"], args["tau"], args["fext"]):
            if _involves(label, name):
                _raises(f, error, f"{label} with {desc}", problems)
                checked += 1
    assert checked > 0
    assert not problems, f"{len(problems)} of {checked} calls misbehaved:\n" + "\n".join(problems)
    _check_still_correct(lm, ld, q, v, a, tau, fext, expected, context)


def test_wrong_shapes_raise_shape_error(validation_model):
    def make(name, x):
        if name == "fext":
            return [("(njoints-1, 6)", x[:-1]), ("(njoints, 3)", x[:, :3]), ("flat", x.reshape(-1))]
        return [("one too long", np.append(x, 0.0)), ("one too short", x[:-1]), ("2-D", x[None, :]),
                ("empty", np.zeros(0))]

    _expect_errors(validation_model, make, ShapeError, "shape errors")


def test_non_finite_inputs_raise_non_finite_error(validation_model):
    def make(name, x):
        out = []
        for bad in (np.nan, np.inf, -np.inf):
            y = np.array(x, dtype=float)
            if name == "q":
                y[0] = bad  # a free-flyer position coordinate: only finiteness is violated
            else:
                y.reshape(-1)[y.size // 2] = bad
            out.append((f"with {bad}", y))
        return out

    _expect_errors(validation_model, make, NonFiniteError, "non-finite errors")


def test_non_unit_quaternion_raises_configuration_error(validation_model):
    lm = validation_model
    q, v, a, tau, fext = _valid(lm)
    spherical = next(b for b in lm.bodies if b.joint.kind == "spherical")
    floating = next(b for b in lm.bodies if b.joint.kind == "free-flyer")
    unbounded = next(b for b in lm.bodies if b.joint.kind == "continuous")
    spoiled = [
        (spherical, spherical.idx_q, 4, 1.1),
        (spherical, spherical.idx_q, 4, 0.0),
        (floating, floating.idx_q + 3, 4, 0.9),
        (unbounded, unbounded.idx_q, 2, 1.5),
    ]
    expected = _reference_results(lm, q, v, a, tau, fext)
    ld = lm.create_data()
    problems: list[str] = []
    for body, start, size, factor in spoiled:
        bad = q.copy()
        bad[start : start + size] *= factor
        for label, f in _calls(lm, ld, bad, v, a, tau, fext):
            _raises(f, ConfigurationError, f"{label} with the {body.joint.kind} coordinates × {factor}",
                    problems, must_mention=body.joint_name)
    assert not problems, "\n".join(problems)
    _check_still_correct(lm, ld, q, v, a, tau, fext, expected, "configuration errors")


def test_data_of_another_model_raises(validation_model):
    lm = validation_model
    other = trees.build_loopdyn(trees.tree_recipe(9))  # identical content, different model
    q, v, a, tau, fext = _valid(lm)
    expected = _reference_results(lm, q, v, a, tau, fext)
    foreign = other.create_data()
    problems: list[str] = []
    for label, f in _calls(lm, foreign, q, v, a, tau, fext):
        _raises(f, DataMismatchError, label, problems)
    assert not problems, "\n".join(problems)
    # the foreign Data still works with its own model, and fresh data with ours
    _check_still_correct(other, foreign, q, v, a, tau, fext, expected, "a data mismatch")
    ld = lm.create_data()
    _check_still_correct(lm, ld, q, v, a, tau, fext, expected, "a data mismatch")


def test_data_is_stale_after_the_model_changes(validation_model):
    lm = validation_model
    ld = lm.create_data()
    q, v, a, _, _ = _valid(lm)
    loopdyn.rnea(lm, ld, q, v, a)
    lm.add_body("late_body", lm.nbodies, loopdyn.Revolute((0, 0, 1)), inertia=loopdyn.Inertia(1.0))
    q2 = np.append(q, 0.3)
    v2, a2 = np.append(v, 0.1), np.append(a, -0.2)
    with pytest.raises(DataMismatchError):
        loopdyn.rnea(lm, ld, q2, v2, a2)
    fresh = lm.create_data()
    # the values with the late body: Pinocchio's twin of the recipe plus the same body
    import pinocchio as pin

    before = trees.build_pinocchio(trees.tree_recipe(9))
    assert before.njoints == lm.nbodies  # the late body is not in it (its parent is its last joint)
    pm = pin.Model(before)
    jid = pm.addJoint(pm.njoints - 1, pin.JointModelRZ(), pin.SE3.Identity(), "late_body")
    pm.appendBodyToJoint(jid, pin.Inertia(1.0, np.zeros(3), np.zeros((3, 3))), pin.SE3.Identity())
    ref = pin.rnea(pm, pm.createData(), q2, v2, a2)
    assert_close(loopdyn.rnea(lm, fresh, q2, v2, a2), ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max(),
                 what="rnea with the late body")
    old = np.r_[pin.rnea(before, before.createData(), q, v, a), 0.0]
    assert np.abs(old - ref).max() > 1e-3 * np.abs(ref).max()  # negative control: the body matters


def test_inputs_are_not_modified(validation_model):
    lm = validation_model
    q, v, a, tau, fext = _valid(lm)
    copies = [x.copy() for x in (q, v, a, tau, fext)]
    ld = lm.create_data()
    for _, f in _calls(lm, ld, q, v, a, tau, fext):
        f()
    for x, c in zip((q, v, a, tau, fext), copies, strict=True):
        assert np.array_equal(x, c)


def test_lists_and_integer_arrays_are_accepted(validation_model):
    lm = validation_model
    q, v, a, _, _ = _valid(lm)
    ld = lm.create_data()
    expected = loopdyn.rnea(lm, ld, q, v, a)
    assert_close(loopdyn.rnea(lm, ld, list(q), list(v), list(a)), expected, what="rnea on lists")
    zeros = np.zeros(lm.nv, dtype=int)
    assert_close(loopdyn.rnea(lm, ld, q, zeros, zeros), loopdyn.gravity(lm, ld, q), what="integer v, a")


@pytest.mark.parametrize("loops", [False, True], ids=["tree", "five_bar"])
def test_read_only_and_strided_inputs_are_accepted(validation_model, loops):
    """NumPy's view of a JAX array and np.broadcast_to give read-only arrays, slices give strided
    ones: Numba types both apart from the kernels' signature; the public functions convert them
    (without a Numba dispatch error) and give the same answers, with and without external forces."""
    lm = loopdyn.robots.five_bar() if loops else validation_model
    ld = lm.create_data()
    rng = np.random.default_rng(7)
    q = loopdyn.random_configuration(lm, rng)
    v, a = rng.standard_normal(lm.nv), rng.standard_normal(lm.nv)
    fext = rng.standard_normal((lm.njoints, 6))

    def read_only(x):
        y = x.copy()
        y.setflags(write=False)
        return y

    def strided(x):
        y = np.repeat(x, 2, axis=-1)[..., ::2]
        assert not y.flags.c_contiguous and np.array_equal(y, x)
        return y

    tau = loopdyn.rnea(lm, ld, q, v, a)
    tau_f = loopdyn.rnea(lm, ld, q, v, a, fext)
    expected = [tau, tau_f, loopdyn.aba(lm, ld, q, v, tau), loopdyn.aba(lm, ld, q, v, tau_f, fext),
                loopdyn.crba(lm, ld, q)]  # fmt: skip
    for how in (read_only, strided):
        Q, V, A, T, TF, F = (how(x) for x in (q, v, a, tau, tau_f, fext))
        got = [loopdyn.rnea(lm, ld, Q, V, A), loopdyn.rnea(lm, ld, Q, V, A, F), loopdyn.aba(lm, ld, Q, V, T),
               loopdyn.aba(lm, ld, Q, V, TF, F), loopdyn.crba(lm, ld, Q)]  # fmt: skip
        for g, e in zip(got, expected, strict=True):
            assert np.array_equal(g, e), how.__name__
    assert not np.array_equal(expected[0], expected[1])  # the forces were not dropped
