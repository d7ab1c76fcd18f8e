"""Analytical derivatives of RNEA and ABA (``loopdyn.rnea_derivatives``, ``loopdyn.aba_derivatives``) on
trees and on models with explicit clusters (geared rotors), checked against independent oracles:

* Pinocchio's ``computeRNEADerivatives`` / ``computeABADerivatives`` on every random tree and
  example-robot-data robot of the suite (free-flyer roots, ball, prismatic, continuous joints),
  with and without external forces: ≤ 1e-9 relative;
* 4th-order central differences of the verified ``loopdyn.rnea`` / ``loopdyn.aba`` along
  ``loopdyn.integrate`` (the tangent-space convention): ≤ 1e-7 relative;
* identities: ``dtau_da == crba``, ``dddq_dtau == minverse``, ``dddq_dx == −M⁻¹ dtau_dx`` at
  ``a = aba(q, v, τ)``;

with negative controls showing the difference check fails on a derivative that drops one term (the
configuration dependence of the body-fixed external forces; the rotors' gear coupling) or carries a
small error in one entry. Models with implicit loops are checked against central differences, automatic
differentiation (JAX) of an independent implementation and the same identities.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
import trees
from cluster_models import random_cluster_model, two_output_model
from conftest import load_case
from revolute_tables import XLA_OPTIONS

import loopdyn
from loopdyn.errors import (
    ConfigurationError,
    DataMismatchError,
    NonFiniteError,
    ShapeError,
    SingularInertiaError,
)
from loopdyn.model import layout as L

N_STATES = 4
RTOL_PIN = 1e-9
RTOL_FD = 1e-7


def symmetrized_upper(M) -> np.ndarray:
    """Pinocchio's M (``data.M``) and M⁻¹ (``data.Minv``) hold their upper triangle only."""
    return np.triu(M) + np.triu(M, 1).T


def pin_forces(fext: np.ndarray):
    out = pin.StdVec_Force()
    for row in fext:
        out.append(pin.Force(np.array(row, dtype=float)))
    return out


def rel_error(actual, expected, scale: float = 0.0) -> float:
    """Largest entry-wise error relative to the largest entry of ``expected``, or to ``scale`` when
    that is larger (a matrix that is exactly zero, e.g. ∂τ/∂v of a single joint, has no scale of its
    own: the rounding in the two computations is then measured against the scale of the model)."""
    return float(np.max(np.abs(actual - expected)) / max(np.max(np.abs(expected)), scale, 1e-300))


def assert_rel(actual, expected, rtol: float, what: str, scale: float = 0.0) -> None:
    assert actual.shape == expected.shape, what
    err = rel_error(actual, expected, scale)
    assert err <= rtol, f"{what}: relative error {err:.3e} > {rtol:g}"


# ------------------------------------------------------------------------------------------------
# against Pinocchio


@pytest.mark.parametrize("with_forces", [False, True], ids=["no-fext", "fext"])
def test_rnea_derivatives_match_pinocchio(pin_case, with_forces):
    lm, pm = pin_case.lm, pin_case.pm
    ld, pd = lm.create_data(), pm.createData()
    rng = pin_case.rng(30)
    for s, (q, v, a) in enumerate(pin_case.states(N_STATES, salt=30)):
        fext = pin_case.random_fext(rng) if with_forces else None
        dq, dv, da = loopdyn.rnea_derivatives(lm, ld, q, v, a, fext)
        if with_forces:
            pq, pv, pa = pin.computeRNEADerivatives(pm, pd, q, v, a, pin_forces(fext))
        else:
            pq, pv, pa = pin.computeRNEADerivatives(pm, pd, q, v, a)
        what = f"{pin_case.name}, state {s}"
        scale = np.max(np.abs(da))  # the model's mass scale (states are of unit size)
        assert_rel(dq, pq, RTOL_PIN, f"{what}: dtau_dq", scale)
        assert_rel(dv, pv, RTOL_PIN, f"{what}: dtau_dv", scale)
        assert_rel(da, symmetrized_upper(pa), RTOL_PIN, f"{what}: dtau_da")


@pytest.mark.parametrize("with_forces", [False, True], ids=["no-fext", "fext"])
def test_aba_derivatives_match_pinocchio(pin_case, with_forces):
    lm, pm = pin_case.lm, pin_case.pm
    ld, pd = lm.create_data(), pm.createData()
    rng = pin_case.rng(31)
    for s, (q, v, tau) in enumerate(pin_case.states(N_STATES, salt=31)):
        fext = pin_case.random_fext(rng) if with_forces else None
        dq, dv, dtau = loopdyn.aba_derivatives(lm, ld, q, v, tau, fext)
        if with_forces:
            pq, pv, pt = pin.computeABADerivatives(pm, pd, q, v, tau, pin_forces(fext))
        else:
            pq, pv, pt = pin.computeABADerivatives(pm, pd, q, v, tau)
        what = f"{pin_case.name}, state {s}"
        assert_rel(dq, pq, RTOL_PIN, f"{what}: dddq_dq", 1.0)  # q̈ of unit size per unit state
        assert_rel(dv, pv, RTOL_PIN, f"{what}: dddq_dv", 1.0)
        assert_rel(dtau, symmetrized_upper(pt), RTOL_PIN, f"{what}: dddq_dtau")


# ------------------------------------------------------------------------------------------------
# against central differences along loopdyn.integrate

#: trees for the difference checks: fixed and floating roots, every joint kind, random gravity
FD_TREES = ["tree104-n1-fixed", "tree108-n4-floating", "tree110-n6-floating", "tree111-n7-fixed",
            "tree119-n18-fixed", "tree120-n20-floating"]  # fmt: skip
FD_STEP = 1e-3


def central_jacobian(f, n: int, step: float = FD_STEP) -> np.ndarray:
    """Columns ``∂f/∂x_j`` by the 4th-order central difference
    ``(−f(2h) + 8 f(h) − 8 f(−h) + f(−2h)) / 12h``, f taking the step vector."""
    cols = []
    for j in range(n):
        e = np.zeros(n)
        e[j] = step
        cols.append((-f(2 * e) + 8 * f(e) - 8 * f(-e) + f(-2 * e)) / (12 * step))
    return np.stack(cols, axis=1)


def fd_rnea(lm, ld, q, v, a, fext):
    rnea = loopdyn.rnea
    dq = central_jacobian(lambda d: rnea(lm, ld, loopdyn.integrate(lm, q, d), v, a, fext), lm.nv)
    dv = central_jacobian(lambda d: rnea(lm, ld, q, v + d, a, fext), lm.nv)
    da = central_jacobian(lambda d: rnea(lm, ld, q, v, a + d, fext), lm.nv)
    return dq, dv, da


def fd_aba(lm, ld, q, v, tau, fext):
    aba = loopdyn.aba
    dq = central_jacobian(lambda d: aba(lm, ld, loopdyn.integrate(lm, q, d), v, tau, fext), lm.nv)
    dv = central_jacobian(lambda d: aba(lm, ld, q, v + d, tau, fext), lm.nv)
    dt = central_jacobian(lambda d: aba(lm, ld, q, v, tau + d, fext), lm.nv)
    return dq, dv, dt


@pytest.fixture(params=FD_TREES)
def fd_case(request):
    return load_case(request.param, with_pinocchio=False)


def test_rnea_derivatives_match_central_differences(fd_case):
    lm = fd_case.lm
    ld = lm.create_data()
    rng = fd_case.rng(32)
    for s, (q, v, a) in enumerate(fd_case.states(2, salt=32)):
        fext = fd_case.random_fext(rng)
        expected = fd_rnea(lm, ld, q, v, a, fext)
        got = loopdyn.rnea_derivatives(lm, ld, q, v, a, fext)
        for name, x, y in zip(("dtau_dq", "dtau_dv", "dtau_da"), got, expected, strict=True):
            assert_rel(x, y, RTOL_FD, f"{fd_case.name}, state {s}: {name}")


def test_aba_derivatives_match_central_differences(fd_case):
    lm = fd_case.lm
    ld = lm.create_data()
    rng = fd_case.rng(33)
    for s, (q, v, tau) in enumerate(fd_case.states(2, salt=33)):
        fext = fd_case.random_fext(rng)
        expected = fd_aba(lm, ld, q, v, tau, fext)
        got = loopdyn.aba_derivatives(lm, ld, q, v, tau, fext)
        for name, x, y in zip(("dddq_dq", "dddq_dv", "dddq_dtau"), got, expected, strict=True):
            assert_rel(x, y, RTOL_FD, f"{fd_case.name}, state {s}: {name}")


def test_negative_control_difference_check_catches_a_dropped_term():
    """Forgetting that body-fixed external forces turn with their bodies (dropping their term from
    ∂τ/∂q: the derivative computed without them, which differs from the true one by exactly that
    term) must fail the difference check that the true derivative passes; so must a relative error of
    1e-6 in one entry."""
    case = load_case("tree120-n20-floating", with_pinocchio=False)
    lm = case.lm
    ld = lm.create_data()
    rng = case.rng(34)
    q, v, a = trees.random_state(rng, lm)
    fext = case.random_fext(rng)
    fd_dq = fd_rnea(lm, ld, q, v, a, fext)[0]
    dq = loopdyn.rnea_derivatives(lm, ld, q, v, a, fext)[0]
    assert rel_error(dq, fd_dq) <= RTOL_FD
    # τ is affine in f_ext, so the derivative without forces is the true one minus their term
    dropped = loopdyn.rnea_derivatives(lm, ld, q, v, a)[0]
    assert rel_error(dropped, fd_dq) > 1e3 * RTOL_FD
    nudged = dq.copy()
    r, c = np.unravel_index(np.argmax(np.abs(dq)), dq.shape)
    nudged[r, c] *= 1.0 + 1e-6
    assert rel_error(nudged, fd_dq) > RTOL_FD


# ------------------------------------------------------------------------------------------------
# identities


def test_identities(tree_case):
    lm = tree_case.lm
    ld = lm.create_data()
    for s, (q, v, tau) in enumerate(tree_case.states(3, salt=35)):
        what = f"{tree_case.name}, state {s}"
        ddq = loopdyn.aba(lm, ld, q, v, tau)
        M = loopdyn.crba(lm, ld, q)
        Minv = loopdyn.minverse(lm, ld, q)
        dq, dv, da = loopdyn.rnea_derivatives(lm, ld, q, v, ddq)
        assert_rel(da, M, 1e-12, f"{what}: dtau_da == crba")
        assert np.array_equal(da, da.T), what
        aq, av, at = loopdyn.aba_derivatives(lm, ld, q, v, tau)
        assert_rel(at, Minv, 1e-10, f"{what}: dddq_dtau == minverse")
        assert_rel(aq, -Minv @ dq, 1e-10, f"{what}: dddq_dq == -M⁻¹ dtau_dq")
        assert_rel(av, -Minv @ dv, 1e-10, f"{what}: dddq_dv == -M⁻¹ dtau_dv")


def test_armature_is_on_the_mass_matrix_only():
    """A model with armature (also set on Pinocchio's twin): ``dtau_da`` = crba with armature on the
    diagonal, the other derivatives unchanged in form (armature · a depends on neither q nor v)."""
    recipe = trees.tree_recipe(10)  # tree111: seven bodies, fixed root
    lm, pm = trees.build_loopdyn(recipe), trees.build_pinocchio(recipe)
    arm = np.random.default_rng(36).uniform(0.1, 1.0, size=lm.nv)
    lm.armature = arm
    pm.armature = arm.copy()
    ld, pd = lm.create_data(), pm.createData()
    q, v, a = trees.random_state(np.random.default_rng(37), lm)
    dq, dv, da = loopdyn.rnea_derivatives(lm, ld, q, v, a)
    pq, pv, pa = pin.computeRNEADerivatives(pm, pd, q, v, a)
    assert_rel(da, loopdyn.crba(lm, ld, q), 1e-12, "dtau_da == crba with armature")
    assert_rel(da, symmetrized_upper(pa), RTOL_PIN, "dtau_da with armature vs Pinocchio")
    assert_rel(dq, pq, RTOL_PIN, "dtau_dq with armature vs Pinocchio")
    assert_rel(dv, pv, RTOL_PIN, "dtau_dv with armature vs Pinocchio")
    aq, av, at = loopdyn.aba_derivatives(lm, ld, q, v, a)
    pq, pv, pt = pin.computeABADerivatives(pm, pd, q, v, a)
    assert_rel(at, loopdyn.minverse(lm, ld, q), 1e-10, "dddq_dtau == minverse with armature")
    assert_rel(aq, pq, RTOL_PIN, "dddq_dq with armature vs Pinocchio")
    assert_rel(av, pv, RTOL_PIN, "dddq_dv with armature vs Pinocchio")


# ------------------------------------------------------------------------------------------------
# bad input


@pytest.fixture(scope="module")
def floating():
    rng = np.random.default_rng(37)
    lm, _ = trees.random_tree(rng, 6, floating=True, with_pinocchio=False)
    return lm


@pytest.mark.parametrize("fn", ["rnea_derivatives", "aba_derivatives"])
def test_bad_input_raises_naming_the_argument_and_leaves_data_usable(floating, fn):
    lm = floating
    ld = lm.create_data()
    f = getattr(loopdyn, fn)
    third = "a" if fn == "rnea_derivatives" else "tau"
    q, v, a = trees.random_state(np.random.default_rng(38), lm)
    good = f(lm, ld, q, v, a)
    with pytest.raises(ShapeError, match="q must be"):
        f(lm, ld, q[:-1], v, a)
    with pytest.raises(ShapeError, match="v must be"):
        f(lm, ld, q, v[:-1], a)
    with pytest.raises(ShapeError, match=f"{third} must be"):
        f(lm, ld, q, v, np.zeros((2, lm.nv)))
    bad = v.copy()
    bad[2] = np.nan
    with pytest.raises(NonFiniteError, match="v contains NaN"):
        f(lm, ld, q, bad, a)
    bad = a.copy()
    bad[0] = np.inf
    with pytest.raises(NonFiniteError, match=f"{third} contains NaN"):
        f(lm, ld, q, v, bad)
    with pytest.raises(ShapeError, match="f_ext must have shape"):
        f(lm, ld, q, v, a, np.zeros((lm.njoints - 1, 6)))
    qbad = q.copy()
    qbad[3:7] *= 2.0  # the free flyer's quaternion, not unit
    with pytest.raises(ConfigurationError, match="quaternion"):
        f(lm, ld, qbad, v, a)
    with pytest.raises(DataMismatchError):
        f(lm, loopdyn.robots.four_bar().create_data(), q, v, a)
    # lists are accepted (coerced), and the Data is still usable after every failure
    again = f(lm, ld, list(q), list(v), list(a))
    for x, y in zip(good, again, strict=True):
        assert np.array_equal(x, y)


def test_large_tree_past_the_stack_buffers():
    """60 coordinates: the ABA derivatives' n × 3n solve no longer fits the kernel's stack buffer
    (STACK_FLOATS) and takes the heap; still Pinocchio's results."""
    from loopdyn.algorithms.borrow import STACK_FLOATS

    rng = np.random.default_rng(48)
    lm, pm = trees.random_tree(rng, 55, floating=True, fixed_prob=0.0, joint_mix={"revolute": 1.0})
    assert 3 * lm.nv * lm.nv > STACK_FLOATS
    ld, pd = lm.create_data(), pm.createData()
    q, v, tau = trees.random_state(rng, lm)
    dq, dv, dt = loopdyn.aba_derivatives(lm, ld, q, v, tau)
    pq, pv, pt = pin.computeABADerivatives(pm, pd, q, v, tau)
    assert_rel(dq, pq, RTOL_PIN, "dddq_dq, 60 coordinates", 1.0)
    assert_rel(dv, pv, RTOL_PIN, "dddq_dv, 60 coordinates", 1.0)
    assert_rel(dt, symmetrized_upper(pt), RTOL_PIN, "dddq_dtau, 60 coordinates")


def test_compound_joints_match_central_differences():
    """Universal, gimbal and planar joints (chains of 1-DoF sub-hinges with massless bodies between
    them) on a free-flying base, with external forces."""
    m = loopdyn.Model("compound")
    inertia = loopdyn.Inertia(1.3, (0.1, -0.05, 0.2), np.diag([0.1, 0.2, 0.15]))
    m.add_body("base", 0, loopdyn.FreeFlyer(), None, inertia)
    m.add_body("arm", "base", loopdyn.Universal((1, 0, 0), (0, 1, 0)), (np.eye(3), [0, 0, 0.5]), inertia)
    m.add_body("hand", "arm", loopdyn.Gimbal(), (np.eye(3), [0.3, 0, 0.2]), inertia)
    m.add_body("slider", "base", loopdyn.Planar((0.0, 0.0, 1.0)), (np.eye(3), [0.2, 0.1, 0]), inertia)
    d = m.create_data()
    rng = np.random.default_rng(53)
    q = loopdyn.random_configuration(m, rng)
    v, a = rng.normal(size=m.nv), rng.normal(size=m.nv)
    fext = rng.normal(size=(m.njoints, 6))
    for name, x, y in zip(("dtau_dq", "dtau_dv", "dtau_da"), loopdyn.rnea_derivatives(m, d, q, v, a, fext),
                          fd_rnea(m, d, q, v, a, fext), strict=True):  # fmt: skip
        assert_rel(x, y, RTOL_FD, f"compound joints: {name}")
    for name, x, y in zip(("dddq_dq", "dddq_dv", "dddq_dtau"), loopdyn.aba_derivatives(m, d, q, v, a, fext),
                          fd_aba(m, d, q, v, a, fext), strict=True):  # fmt: skip
        assert_rel(x, y, RTOL_FD, f"compound joints: {name}", 1.0)


def test_far_from_the_origin():
    """The derivatives of a free-flying robot do not depend on where it is (gravity is uniform, the
    tangent is the body twist): 10 km from the origin they equal those at the origin to 1e-10 and
    still match the differences. (Referred to the world origin, they lost five digits there.)"""
    case = load_case("tree120-n20-floating", with_pinocchio=False)
    lm = case.lm
    ld = lm.create_data()
    rng = case.rng(39)
    q, v, a = trees.random_state(rng, lm)
    fext = case.random_fext(rng)
    near = loopdyn.rnea_derivatives(lm, ld, q, v, a, fext)
    far_q = q.copy()
    far_q[:3] += (1e4, -7e3, 3e3)
    far = loopdyn.rnea_derivatives(lm, ld, far_q, v, a, fext)
    fd = fd_rnea(lm, ld, far_q, v, a, fext)
    for name, x, y, z in zip(("dtau_dq", "dtau_dv", "dtau_da"), far, near, fd, strict=True):
        assert_rel(x, y, 1e-10, f"{name}: 10 km away vs at the origin")
        assert_rel(x, z, RTOL_FD, f"{name}: 10 km away vs differences")
    far_a = loopdyn.aba_derivatives(lm, ld, far_q, v, a, fext)
    for name, x, y in zip(("dddq_dq", "dddq_dv", "dddq_dtau"), far_a,
                          loopdyn.aba_derivatives(lm, ld, q, v, a, fext), strict=True):  # fmt: skip
        assert_rel(x, y, 1e-10, f"{name}: 10 km away vs at the origin", 1.0)


def test_singular_mass_matrix_raises_and_leaves_data_usable():
    """A massless leaf: M is singular, so aba_derivatives raises SingularInertiaError (as aba does);
    rnea_derivatives is fine (M need not be invertible), and the Data works afterwards."""
    m = loopdyn.Model("massless")
    inertia = loopdyn.Inertia(1.0, (0.1, 0.0, 0.0), np.eye(3) * 0.01)
    m.add_body("a", 0, loopdyn.Revolute((0, 0, 1)), inertia=inertia)
    m.add_body("b", "a", loopdyn.Revolute((0, 1, 0)))
    d = m.create_data()
    q, v, tau = np.array([0.3, -0.2]), np.array([0.5, 1.0]), np.array([0.0, 1.0])
    with pytest.raises(SingularInertiaError):
        loopdyn.aba_derivatives(m, d, q, v, tau)
    dq, dv, M = loopdyn.rnea_derivatives(m, d, q, v, tau)
    assert_rel(M, loopdyn.crba(m, d, q), 1e-12, "M of a massless leaf")
    assert np.all(M[1] == 0.0)


# ------------------------------------------------------------------------------------------------
# models with explicit clusters (constant G: geared rotors), in independent coordinates

#: built-in robots whose clusters are all explicit; jvrc1's spanning tree (70 coordinates) is past the
#: kernels' stack buffer, so its spanning matrices are on the heap
EXPLICIT_ROBOTS = ["mini_cheetah", "mit_humanoid_leg", "mit_humanoid", "jvrc1"]


@pytest.fixture(scope="module", params=EXPLICIT_ROBOTS)
def geared(request):
    model = getattr(loopdyn.robots, request.param)()
    assert model.has_constraints
    return request.param, model


def cluster_state(model, rng):
    q = loopdyn.random_configuration(model, rng)
    return q, rng.normal(size=model.nv), rng.normal(size=model.nv), rng.normal(size=(model.njoints, 6))


def test_explicit_clusters_match_central_differences(geared):
    name, model = geared
    d = model.create_data()
    rng = np.random.default_rng(40)
    q, v, a, fext = cluster_state(model, rng)
    got = loopdyn.rnea_derivatives(model, d, q, v, a, fext)
    expected = fd_rnea(model, d, q, v, a, fext)
    for what, x, y in zip(("dtau_dq", "dtau_dv", "dtau_da"), got, expected, strict=True):
        assert_rel(x, y, RTOL_FD, f"{name}: {what}")
    got = loopdyn.aba_derivatives(model, d, q, v, a, fext)
    expected = fd_aba(model, d, q, v, a, fext)
    for what, x, y in zip(("dddq_dq", "dddq_dv", "dddq_dtau"), got, expected, strict=True):
        assert_rel(x, y, RTOL_FD, f"{name}: {what}")


def test_explicit_clusters_identities(geared):
    name, model = geared
    d = model.create_data()
    rng = np.random.default_rng(41)
    for s in range(3):
        q, v, tau, _ = cluster_state(model, rng)
        what = f"{name}, state {s}"
        ddy = loopdyn.aba(model, d, q, v, tau)
        H = loopdyn.crba(model, d, q)
        Hinv = loopdyn.minverse(model, d, q)
        dq, dv, da = loopdyn.rnea_derivatives(model, d, q, v, ddy)
        assert_rel(da, H, 1e-12, f"{what}: dtau_da == crba")
        aq, av, at = loopdyn.aba_derivatives(model, d, q, v, tau)
        assert_rel(at, Hinv, 1e-9, f"{what}: dddq_dtau == minverse")
        assert_rel(aq, -Hinv @ dq, 1e-9, f"{what}: dddq_dq == -H⁻¹ dtau_dq")
        assert_rel(av, -Hinv @ dv, 1e-9, f"{what}: dddq_dv == -H⁻¹ dtau_dv")


def dense_g(model, q) -> np.ndarray:
    """G (nv_s × nv) column by column: ``v_s = G ẏ`` is linear in ẏ, so ``to_spanning`` of a unit
    velocity is exactly a column."""
    return np.stack([loopdyn.to_spanning(model, q, e)[1] for e in np.eye(model.nv)], axis=1)


def test_explicit_clusters_equal_the_dense_reference_and_a_dropped_coupling_fails():
    """The spec's dense reference ``Gᵀ (∂τ_s/∂x) G`` (the tree derivatives of ``spanning_tree`` at
    ``to_spanning``'s state, G dense) equals the kernel's sparse congruence; and the negative control:
    dropping the rotors' coupling (G's gear-ratio rows zeroed, as if rotors did not move with their
    links) fails the difference check."""
    model = loopdyn.robots.mini_cheetah()
    d = model.create_data()
    tree = loopdyn.spanning_tree(model)
    td = tree.create_data()
    rng = np.random.default_rng(42)
    q, v, a, _ = cluster_state(model, rng)
    G = dense_g(model, q)
    qs, vs, as_ = loopdyn.to_spanning(model, q, v, a)
    Xq, Xv, Xm = loopdyn.rnea_derivatives(tree, td, qs, vs, as_)
    dq, dv, da = loopdyn.rnea_derivatives(model, d, q, v, a)
    assert_rel(dq, G.T @ Xq @ G, 1e-12, "dtau_dq vs dense Gᵀ X G")
    assert_rel(dv, G.T @ Xv @ G, 1e-12, "dtau_dv vs dense Gᵀ X G")
    assert_rel(da, G.T @ Xm @ G, 1e-12, "dtau_da vs dense Gᵀ M G")
    fq, fv, _ = fd_rnea(model, d, q, v, a, None)
    coupled = ~np.all((G == 0.0) | (G == 1.0), axis=1)  # the rotors' rows (gear ratios)
    assert coupled.sum() >= 12
    E = G.copy()
    E[coupled] = 0.0
    # light axisymmetric rotors: their share is ~1e-5 (∂τ/∂q) and ~9e-5 (∂τ/∂v) of the largest entry
    # (a floating base's) here; the ≤ 1e-7 check rejects both by two orders of magnitude
    assert rel_error(E.T @ Xq @ E, fq) > 10 * RTOL_FD
    assert rel_error(E.T @ Xv @ E, fv) > 10 * RTOL_FD


@pytest.mark.parametrize("seed", [3, 11, 29])
def test_random_explicit_clusters_equal_the_dense_reference(seed):
    """The cluster pass groups a cluster's bodies (one walk to the root per independent coordinate,
    the projections made as the entries are): on random floating models of geared and belt clusters
    hanging from plain bodies and from each other, with external forces, it equals the dense
    ``Gᵀ X G`` of the spanning tree's own derivatives (G constant: exact up to rounding)."""
    model = random_cluster_model(seed, n_blocks=6, floating=True, blocks=("geared", "belt"))
    d = model.create_data()
    tree = loopdyn.spanning_tree(model)
    td = tree.create_data()
    rng = np.random.default_rng(seed)
    q, v, a, fext = cluster_state(model, rng)
    G = dense_g(model, q)
    assert G.shape[0] > G.shape[1] + 3  # clusters of several bodies
    qs, vs, as_ = loopdyn.to_spanning(model, q, v, a)
    Xq, Xv, Xm = loopdyn.rnea_derivatives(tree, td, qs, vs, as_, fext)
    dq, dv, da = loopdyn.rnea_derivatives(model, d, q, v, a, fext)
    assert_rel(dq, G.T @ Xq @ G, 1e-12, f"seed {seed}: dtau_dq vs dense Gᵀ X G")
    assert_rel(dv, G.T @ Xv @ G, 1e-12, f"seed {seed}: dtau_dv vs dense Gᵀ X G")
    assert_rel(da, G.T @ Xm @ G, 1e-12, f"seed {seed}: dtau_da vs dense Gᵀ M G")


def test_cluster_whose_bodies_hang_from_different_bodies_equals_the_dense_reference():
    """A declared cluster whose two bodies hang from the two bodies of a geared cluster (link and rotor)
    leaves its parent through two output bodies: its entries against the bodies above are walked body
    by body (the grouped walk needs one output body). Equal to the dense ``Gᵀ X G``; and the grouping
    condition does fail here (the per-body path is the one tested)."""
    m = two_output_model()
    rng = np.random.default_rng(7)
    d = m.create_data()
    outs = {int(d.ib[m.body_id(name), L.I_OUT]) for name in ("a", "b")}
    assert outs == {m.body_id("p1"), m.body_id("p2")}
    tree = loopdyn.spanning_tree(m)
    td = tree.create_data()
    for s in range(2):
        q, v, a, fext = cluster_state(m, rng)
        G = dense_g(m, q)
        qs, vs, as_ = loopdyn.to_spanning(m, q, v, a)
        Xq, Xv, Xm = loopdyn.rnea_derivatives(tree, td, qs, vs, as_, fext)
        dq, dv, da = loopdyn.rnea_derivatives(m, d, q, v, a, fext)
        assert_rel(dq, G.T @ Xq @ G, 1e-12, f"state {s}: dtau_dq vs dense Gᵀ X G")
        assert_rel(dv, G.T @ Xv @ G, 1e-12, f"state {s}: dtau_dv vs dense Gᵀ X G")
        assert_rel(da, G.T @ Xm @ G, 1e-12, f"state {s}: dtau_da vs dense Gᵀ M G")


@pytest.mark.parametrize("seed", [5, 17])
def test_random_implicit_clusters_below_other_bodies_match_central_differences(seed):
    """Four-bars and differentials hanging from plain bodies and other clusters (their entries against
    the bodies above them come from the cluster's sums, and the loops' corrections read the columns of
    Gᵀ X_v, Gᵀ M_s that the pass makes): against central differences along ``integrate``."""
    blocks = ("fourbar", "differential", "geared")
    model = random_cluster_model(seed, n_blocks=5, floating=True, blocks=blocks)
    d = model.create_data()
    rng = np.random.default_rng(seed)
    q, v, a, fext = cluster_state(model, rng)
    got = loopdyn.rnea_derivatives(model, d, q, v, a, fext)
    expected = fd_rnea(model, d, q, v, a, fext)
    scale = np.max(np.abs(got[2]))
    for what, x, y in zip(("dtau_dq", "dtau_dv", "dtau_da"), got, expected, strict=True):
        assert_rel(x, y, RTOL_FD, f"seed {seed}: {what}", scale)


def test_explicit_clusters_bad_input_names_the_argument():
    model = loopdyn.robots.mini_cheetah()
    d = model.create_data()
    rng = np.random.default_rng(43)
    q, v, a, fext = cluster_state(model, rng)
    for f in (loopdyn.rnea_derivatives, loopdyn.aba_derivatives):
        good = f(model, d, q, v, a, fext)
        with pytest.raises(ShapeError, match="q must be"):
            f(model, d, q[:-1], v, a)
        with pytest.raises(ShapeError, match="v must be"):
            f(model, d, q, np.zeros(model.nv + 1), a)
        with pytest.raises(ShapeError, match="f_ext must have shape"):
            f(model, d, q, v, a, fext[:-1])
        bad = a.copy()
        bad[4] = np.nan
        with pytest.raises(NonFiniteError):
            f(model, d, q, v, bad)
        again = f(model, d, q, v, a, fext)
        for x, y in zip(good, again, strict=True):
            assert np.array_equal(x, y)


# ------------------------------------------------------------------------------------------------
# models with implicit loops (G(q), g(q, q̇)): the dense path of spec §2

IMPLICIT_ROBOTS = ["four_bar", "five_bar", "planar_leg_linkage", "rssr_linkage", "delta_robot", "tello"]


@pytest.fixture(scope="module", params=IMPLICIT_ROBOTS)
def looped(request):
    model = getattr(loopdyn.robots, request.param)()
    return request.param, model


def test_implicit_loops_match_central_differences(looped):
    """Along ``integrate`` (which re-closes the loops), with external forces. Some of these linkages
    have ∂τ/∂ẏ exactly or nearly zero at a state (a parallelogram four-bar), so the error is measured
    against the model's mass scale max|H| (RNEA; states of unit size) or 1 (ABA) when that is larger."""
    name, model = looped
    d = model.create_data()
    rng = np.random.default_rng(44)
    for s in range(2):
        q, v, a, fext = cluster_state(model, rng)
        got = loopdyn.rnea_derivatives(model, d, q, v, a, fext)
        scale = np.max(np.abs(got[2]))
        expected = fd_rnea(model, d, q, v, a, fext)
        for what, x, y in zip(("dtau_dq", "dtau_dv", "dtau_da"), got, expected, strict=True):
            assert_rel(x, y, RTOL_FD, f"{name}, state {s}: {what}", scale)
        got = loopdyn.aba_derivatives(model, d, q, v, a, fext)
        expected = fd_aba(model, d, q, v, a, fext)
        for what, x, y in zip(("dddq_dq", "dddq_dv", "dddq_dtau"), got, expected, strict=True):
            assert_rel(x, y, RTOL_FD, f"{name}, state {s}: {what}", 1.0)


def test_implicit_loops_identities(looped):
    name, model = looped
    d = model.create_data()
    rng = np.random.default_rng(45)
    q, v, tau, fext = cluster_state(model, rng)
    ddy = loopdyn.aba(model, d, q, v, tau, fext)
    H = loopdyn.crba(model, d, q)
    Hinv = loopdyn.minverse(model, d, q)
    dq, dv, da = loopdyn.rnea_derivatives(model, d, q, v, ddy, fext)
    assert_rel(da, H, 1e-12, f"{name}: dtau_da == crba")
    aq, av, at = loopdyn.aba_derivatives(model, d, q, v, tau, fext)
    assert_rel(at, Hinv, 1e-9, f"{name}: dddq_dtau == minverse")
    assert_rel(aq, -Hinv @ dq, 1e-9, f"{name}: dddq_dq == -H⁻¹ dtau_dq", 1.0)
    assert_rel(av, -Hinv @ dv, 1e-9, f"{name}: dddq_dv == -H⁻¹ dtau_dv", 1.0)


@pytest.mark.parametrize("robot", ["five_bar", "rssr_linkage", "tello"])
def test_negative_control_freezing_g_fails(robot):
    """Freezing G's configuration dependence (and g's), i.e. ``Gᵀ (∂τ_s/∂x) G`` with the spanning
    tree's derivatives — exact for constant G — must fail the difference check on implicit loops,
    which the full derivative passes (``test_implicit_loops_match_central_differences``)."""
    model = getattr(loopdyn.robots, robot)()
    d = model.create_data()
    tree = loopdyn.spanning_tree(model)
    td = tree.create_data()
    rng = np.random.default_rng(46)
    q, v, a, _ = cluster_state(model, rng)
    G = dense_g(model, q)
    Xq, Xv, _ = loopdyn.rnea_derivatives(tree, td, *loopdyn.to_spanning(model, q, v, a))
    fq, fv, _ = fd_rnea(model, d, q, v, a, None)
    dq, dv, H = loopdyn.rnea_derivatives(model, d, q, v, a)
    scale = np.max(np.abs(H))
    assert rel_error(dq, fq, scale) <= RTOL_FD
    assert rel_error(G.T @ Xq @ G, fq, scale) > 1e3 * RTOL_FD
    assert rel_error(G.T @ Xv @ G, fv, scale) > 1e3 * RTOL_FD


def test_implicit_loops_bad_input():
    model = loopdyn.robots.five_bar()
    d = model.create_data()
    rng = np.random.default_rng(47)
    q, v, a, fext = cluster_state(model, rng)
    for f in (loopdyn.rnea_derivatives, loopdyn.aba_derivatives):
        good = f(model, d, q, v, a, fext)
        with pytest.raises(ShapeError, match="v must be"):
            f(model, d, q, v[:-1], a)
        with pytest.raises(ShapeError, match="f_ext must have shape"):
            f(model, d, q, v, a, fext[:, :3])
        off = q.copy()
        off[1] += 0.1  # a dependent coordinate: off the loop
        with pytest.raises(ConfigurationError, match="violate its constraints"):
            f(model, d, off, v, a)
        bad = v.copy()
        bad[0] = np.inf
        with pytest.raises(NonFiniteError, match="v contains NaN"):
            f(model, d, q, bad, a)
        again = f(model, d, q, v, a, fext)
        for x, y in zip(good, again, strict=True):
            assert np.array_equal(x, y)


def test_readme_section_runs():
    from doc_pages import run

    ns = run("tutorials/derivatives")
    assert ns["dtau_dq"].shape == (18, 18) and ns["Hinv"].shape == (18, 18)
    assert np.allclose(ns["Minv"] @ ns["M"], np.eye(18), atol=1e-9)


# ------------------------------------------------------------------------------------------------
# threads: a Data in use is refused, the flag comes down after failures, threads with their own Data


@pytest.mark.parametrize("robot", ["tree", "mini_cheetah", "five_bar"])
def test_data_in_use_is_refused_and_the_flag_comes_down(robot):
    from loopdyn.errors import DataInUseError
    from loopdyn.model import layout as L

    if robot == "tree":
        model = load_case("tree120-n20-floating", with_pinocchio=False).lm
    else:
        model = getattr(loopdyn.robots, robot)()
    d = model.create_data()
    rng = np.random.default_rng(49)
    q = loopdyn.random_configuration(model, rng)
    v, a = rng.normal(size=model.nv), rng.normal(size=model.nv)
    floats = d.ws.copy() if d.cluster_arrays is None else d.cluster_arrays[1].copy()
    d.ib[0, L.I0_BUSY] = 1
    for f in (loopdyn.rnea_derivatives, loopdyn.aba_derivatives):
        with pytest.raises(DataInUseError):
            f(model, d, q, v, a)
    now = d.ws if d.cluster_arrays is None else d.cluster_arrays[1]
    np.testing.assert_array_equal(now, floats)
    d.ib[0, L.I0_BUSY] = 0
    bad = v.copy()
    bad[0] = np.nan
    for f in (loopdyn.rnea_derivatives, loopdyn.aba_derivatives):
        with pytest.raises(NonFiniteError):
            f(model, d, q, bad, a)
        assert d.ib[0, L.I0_BUSY] == 0
        f(model, d, q, v, a)
        assert d.ib[0, L.I0_BUSY] == 0


def test_threads_with_their_own_data_match_the_serial_run_bitwise():
    from concurrent.futures import ThreadPoolExecutor

    case = load_case("tree120-n20-floating", with_pinocchio=False)
    lm = case.lm
    states = case.states(16, salt=50)
    serial_data = lm.create_data()

    def both(d, s):
        q, v, a = s
        return np.concatenate([np.ravel(x) for x in (*loopdyn.rnea_derivatives(lm, d, q, v, a),
                                                     *loopdyn.aba_derivatives(lm, d, q, v, a))])  # fmt: skip

    reference = [both(serial_data, s) for s in states]

    def worker(k):
        d = lm.create_data()
        return [both(d, states[(k + j) % len(states)]) for j in range(200)]

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(worker, range(4)))
    for k, out in enumerate(results):
        for j, x in enumerate(out):
            assert np.array_equal(x, reference[(k + j) % len(states)]), (k, j)


# ------------------------------------------------------------------------------------------------
# batch


@pytest.mark.parametrize("robot", ["tree", "mini_cheetah", "five_bar"])
def test_batch_rows_equal_the_single_state_functions(robot):
    """``loopdyn.batch.rnea_derivatives`` / ``aba_derivatives``: row k bitwise equal to the single-state
    function's (trees, explicit clusters and implicit loops on the batch kernels and threads); a bad
    row raises the single-state exception prefixed by ``row k:``."""
    if robot == "tree":
        model = load_case("tree120-n20-floating", with_pinocchio=False).lm
    else:
        model = getattr(loopdyn.robots, robot)()
    d = model.create_data()
    rng = np.random.default_rng(51)
    n = 70  # more than one chunk per thread
    Q = np.stack([loopdyn.random_configuration(model, rng) for _ in range(n)])
    V, X = rng.normal(size=(n, model.nv)), rng.normal(size=(n, model.nv))
    for batch_f, f in ((loopdyn.batch.rnea_derivatives, loopdyn.rnea_derivatives),
                       (loopdyn.batch.aba_derivatives, loopdyn.aba_derivatives)):  # fmt: skip
        out = batch_f(model, Q, V, X)
        assert len(out) == 3 and all(o.shape == (n, model.nv, model.nv) for o in out)
        for k in (0, 31, n - 1):
            for got, expected in zip((o[k] for o in out), f(model, d, Q[k], V[k], X[k]), strict=True):
                assert np.array_equal(got, expected), (robot, batch_f.__name__, k)
        bad = V.copy()
        bad[5, 0] = np.nan
        with pytest.raises(NonFiniteError, match="row 5:"):
            batch_f(model, Q, bad, X)


# ------------------------------------------------------------------------------------------------
# implicit loops against automatic differentiation of an independent dense implementation


#: XLA options for the oracle's compilations (it runs once per model, so its run time does not matter;
#: XLA's CPU fusion emitters and backend optimisation would take most of its cost)
N_NEWTON = 30  # Newton iterations closing the loop at the primal point (converged to rounding)


def _jax_oracle(model, q0):
    """``τ_y(δ, ẏ, ÿ)`` of a model whose bodies are revolute joints forming one implicit cluster,
    written here from the model's parameters alone: the spanning tree's RNEA (Featherstone, body
    frames) in JAX, the loop closed by Newton's method on the sympy φ (lambdified to JAX) from the
    independent coordinates moved by δ, G = [1; −K_d⁻¹K_i], g = [0; K_d⁻¹ k] with K and K̇q̇ by
    JAX's own derivatives. Returns ``(δ, ẏ, ÿ) ↦ (τ_y, (∂τ_y/∂δ, ∂τ_y/∂ẏ, ∂τ_y/∂ÿ))`` compiled once
    by ``jax.jit`` (with :data:`XLA_OPTIONS`).

    The derivative through the loop closure is the implicit-function one, by JAX's forward mode on a
    last Newton step: the Newton iterations converge at the primal point (no derivative carried), and
    one more step ``x ← x* − K_d(y, x*)⁻¹ φ(y, x*)`` from that converged x* (a constant) has, at
    φ(y, x*) = 0, the derivative ``−K_d⁻¹K_i`` of the closed loop exactly (the term from differentiating
    K_d⁻¹ multiplies φ = 0). This is independent of loopdyn's formulas."""
    import jax
    import jax.numpy as jnp
    import sympy

    jax.config.update("jax_enable_x64", True)
    (c,) = model.clusters().clusters
    assert c.kind == 2 and list(c.bodies) == list(range(1, model.nbodies + 1))
    ind, dep = np.array(c.independent), np.array(c.dependent)
    n, m = c.n, c.m
    phi_f = sympy.lambdify(c.symbols, list(c.phi_exprs), "jax")

    def phi(q):
        return jnp.stack([jnp.asarray(x, dtype=float) * jnp.ones(()) for x in phi_f(*q)])

    bodies = model.bodies
    grav = jnp.concatenate([jnp.zeros(3), -jnp.asarray(model.gravity)])

    def skew(x):
        return jnp.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])

    def inertia6(b):
        mass, com, Ic = b.inertia.mass, jnp.asarray(b.inertia.com), jnp.asarray(b.inertia.inertia)
        C = skew(com)
        return jnp.block([[Ic + mass * C @ C.T, mass * C], [mass * C.T, mass * jnp.eye(3)]])

    def crm(v):
        w, u = skew(v[:3]), skew(v[3:])
        return jnp.block([[w, jnp.zeros((3, 3))], [u, w]])

    def rnea(q, qd, qdd):
        X, vel, acc, f = {}, {0: jnp.zeros(6)}, {0: grav}, {}
        for i, b in enumerate(bodies, start=1):
            a = jnp.asarray(b.joint.axis, dtype=float)
            th = q[i - 1]
            A = skew(a)
            Rq = jnp.eye(3) + jnp.sin(th) * A + (1 - jnp.cos(th)) * A @ A
            R = jnp.asarray(b.rotation) @ Rq  # child axes in the parent
            p = jnp.asarray(b.translation)
            Xm = jnp.block([[R.T, jnp.zeros((3, 3))], [-R.T @ skew(p), R.T]])  # parent → child motion
            S = jnp.concatenate([a, jnp.zeros(3)])
            X[i] = Xm
            vel[i] = Xm @ vel[b.parent] + S * qd[i - 1]
            acc[i] = Xm @ acc[b.parent] + S * qdd[i - 1] + crm(vel[i]) @ (S * qd[i - 1])
            I6 = inertia6(b)
            f[i] = I6 @ acc[i] - crm(vel[i]).T @ (I6 @ vel[i])
        tau = [None] * len(bodies)
        for i in range(len(bodies), 0, -1):
            b = bodies[i - 1]
            tau[i - 1] = jnp.concatenate([jnp.asarray(b.joint.axis, dtype=float), jnp.zeros(3)]) @ f[i]
            if b.parent > 0:
                f[b.parent] = f[b.parent] + X[i].T @ f[i]
        return jnp.stack(tau)

    def newton_step(q):
        K = jax.jacfwd(phi)(q)
        return q.at[dep].add(-jnp.linalg.solve(K[:, dep], phi(q)))

    def close(q_ind):
        q = jnp.asarray(q0).at[ind].set(jax.lax.stop_gradient(q_ind))
        q = jax.lax.fori_loop(0, N_NEWTON, lambda _, x: newton_step(x), q)  # the primal point
        return newton_step(jax.lax.stop_gradient(q).at[ind].set(q_ind))  # its derivative

    def tau_y(delta, yd, ydd):
        q = close(jnp.asarray(q0)[ind] + delta)
        K = jax.jacfwd(phi)(q)
        Kd, Ki = K[:, dep], K[:, ind]
        G = jnp.zeros((n, m)).at[ind].set(jnp.eye(m)).at[dep].set(-jnp.linalg.solve(Kd, Ki))
        qd = G @ yd
        kdot = jax.jvp(lambda x: jax.jacfwd(phi)(x) @ qd, (q,), (qd,))[1]  # K̇ q̇
        g = jnp.zeros(n).at[dep].set(jnp.linalg.solve(Kd, -kdot))
        return G.T @ rnea(q, qd, G @ ydd + g)

    def both(delta, yd, ydd):  # τ_y, and its Jacobians by forward mode (one compilation)
        jac, tau = jax.jacfwd(lambda *x: (tau_y(*x),) * 2, argnums=(0, 1, 2), has_aux=True)(delta, yd, ydd)
        return tau, jac

    args = (np.zeros(m), np.zeros(m), np.zeros(m))
    return jax.jit(both).lower(*args).compile(compiler_options=XLA_OPTIONS)


@pytest.mark.parametrize("robot", ["four_bar", "five_bar", "rssr_linkage"])
def test_implicit_loops_match_automatic_differentiation(robot):
    model = getattr(loopdyn.robots, robot)()
    d = model.create_data()
    rng = np.random.default_rng(52)
    q = loopdyn.random_configuration(model, rng)
    v, a = rng.normal(size=model.nv), rng.normal(size=model.nv)
    tau_y, (jq, jv, ja) = _jax_oracle(model, q)(np.zeros(model.nv), v, a)
    tau = loopdyn.rnea(model, d, q, v, a)
    assert_rel(np.asarray(tau_y), tau, 1e-10, f"{robot}: the oracle's τ (the same model)")
    jq, jv, ja = np.asarray(jq), np.asarray(jv), np.asarray(ja)
    dq, dv, da = loopdyn.rnea_derivatives(model, d, q, v, a)
    scale = np.max(np.abs(da))
    assert_rel(dq, jq, 1e-9, f"{robot}: dtau_dq vs AD", scale)
    assert_rel(dv, jv, 1e-9, f"{robot}: dtau_dv vs AD", scale)
    assert_rel(da, ja, 1e-9, f"{robot}: dtau_da vs AD")
