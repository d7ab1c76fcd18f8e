"""loopdyn.higher_order: closed form, hybrid dynamics, Lemma 2, physical identities and the errata
of the paper (spec §6.2, §7), each against something that does not come from the code under test
(Pinocchio, loopdyn's order-0 algorithms, dense textbook formulas) or with a negative control."""

from __future__ import annotations

import numpy as np
import pytest
import trees

import loopdyn as ld
from loopdyn import higher_order as ho

FLOATING = [4, 7, 9, 11]
ALL = [0, 3, 4, 7, 9, 11, 19]


def case(index):
    lm, _ = trees.tree_case(index, with_pinocchio=False)
    return lm, lm.create_data()


def stacks(rng, lm, rows, rho=0.7):
    return rng.normal(size=(rows, lm.nv)) * rho ** np.arange(rows)[:, None]


def skew(x):
    return np.array([[0, -x[2], x[1]], [x[2], 0, -x[0]], [-x[1], x[0], 0]])


def ad(V):
    w, v = V[:3], V[3:]
    return np.block([[skew(w), np.zeros((3, 3))], [skew(v), skew(w)]])


def Ad(R, p):
    return np.block([[R, np.zeros((3, 3))], [skew(p) @ R, R]])


# ----------------------------------------------------------------------------------------------
# closed form (spec §7.5)
@pytest.mark.parametrize("index", ALL)
def test_closed_form_mass_matrix_equation_of_motion_and_skew_symmetry(index):
    import pinocchio as pin
    lm, pm = trees.tree_case(index)
    pdata = pm.createData()
    data = lm.create_data()
    rng = np.random.default_rng(index)
    q = trees.random_configuration(rng, lm)
    v, a = rng.normal(size=lm.nv), rng.normal(size=lm.nv)
    cf = ho.closed_form(lm, data, q, v)
    M_pin = pin.crba(pm, pdata, q)
    M_pin = np.triu(M_pin) + np.triu(M_pin, 1).T
    np.testing.assert_allclose(cf.M, cf.P.T @ M_pin @ cf.P, atol=1e-12 * np.abs(cf.M).max())
    np.testing.assert_allclose(cf.M, cf.M.T, atol=1e-13 * np.abs(cf.M).max())
    assert np.linalg.eigvalsh(cf.M).min() > 0
    np.testing.assert_allclose(cf.P @ cf.nu, v, atol=1e-13 * max(1, np.abs(v).max()))
    # order-0 EoM: M̄ ν̇ + C ν + g = Pᵀ τ with ν̇ = P⁻¹ a (first derivative, ad_V V = 0)
    tau = pin.rnea(pm, pdata, q, v, a)
    lhs = cf.M @ np.linalg.solve(cf.P, a) + cf.C @ cf.nu + cf.g
    np.testing.assert_allclose(lhs, cf.P.T @ tau, atol=1e-11 * max(1, np.abs(tau).max()))
    # gravity vector
    g_ref = cf.P.T @ pin.computeGeneralizedGravity(pm, pdata, q)
    np.testing.assert_allclose(cf.g, g_ref, atol=1e-12 * max(1, np.abs(g_ref).max()))
    # M̄̇ − 2C skew-symmetric (Lemma 1)
    K = cf.M_dot - 2 * cf.C
    assert np.abs(K + K.T).max() <= 1e-12 * max(1.0, np.abs(cf.M_dot).max())
    # negative control: dropping C's −𝐒ᵀ ad_𝐕ᵀ 𝐌 𝐒 term (built here from Pinocchio's world-frame
    # Jacobians, twists and inertias, then to ν by P) must break the skew-symmetry (the symmetric
    # part of the dropped term is −𝐒ᵀ𝐌̇𝐒/2: zero for one body on one revolute joint, tree 0)
    pin.computeJointJacobians(pm, pdata, q)
    A = np.zeros((lm.nv, lm.nv))
    for j in range(1, pm.njoints):
        Jw = np.reshape(pin.getJointJacobian(pm, pdata, j, pin.WORLD), (6, lm.nv))
        Mw = pdata.oMi[j].act(pm.inertias[j]).matrix()
        A += Jw.T @ pin.Motion(Jw @ v).action.T @ Mw @ Jw
    K_drop = cf.M_dot - 2 * (cf.C + cf.P.T @ A @ cf.P)
    if lm.nv > 1:
        assert np.abs(K_drop + K_drop.T).max() > 1e-3 * max(1.0, np.abs(cf.M_dot).max())
    # M̄̇ against a central difference of M̄ along q(t) = q ⊕ t v
    h = 1e-5
    Mp = ho.closed_form(lm, data, ld.integrate(lm, q, h * v), v).M
    Mm = ho.closed_form(lm, data, ld.integrate(lm, q, -h * v), v).M
    np.testing.assert_allclose(cf.M_dot, (Mp - Mm) / (2 * h), atol=1e-7 * max(1, np.abs(cf.M_dot).max()))


@pytest.mark.parametrize("index", FLOATING)
def test_joint_block_of_mass_matrix_does_not_depend_on_base_pose(index):
    lm, data = case(index)
    rng = np.random.default_rng(index)
    q = trees.random_configuration(rng, lm)
    q2 = q.copy()
    q2[:7] = trees.random_configuration(rng, lm)[:7]
    M1 = ho.closed_form(lm, data, q, np.zeros(lm.nv)).M
    M2 = ho.closed_form(lm, data, q2, np.zeros(lm.nv)).M
    np.testing.assert_allclose(M1[6:, 6:], M2[6:, 6:], atol=1e-12 * np.abs(M1).max())
    assert np.abs(M1[:6, :6] - M2[:6, :6]).max() > 1e-3  # the base block is world-referenced


# ----------------------------------------------------------------------------------------------
# hybrid dynamics (spec §7.4 item 20)
@pytest.mark.parametrize("index", ALL)
def test_hybrid_three_cases(index):
    lm, data = case(index)
    rng = np.random.default_rng(index + 5)
    q = trees.random_configuration(rng, lm)
    dv = stacks(rng, lm, 7)
    fe = rng.normal(size=(6, lm.njoints, 6)) * 0.7 ** np.arange(6)[:, None, None]
    tau = ho.rnea(lm, data, q, dv, fe)
    scale = np.abs(tau).max()
    names = lm.joint_names[1:]
    import pinocchio as pin

    pm = trees.tree_case(index)[1]
    pd = pm.createData()
    fe0 = pin.StdVec_Force()
    for row in fe[0]:
        fe0.append(pin.Force(np.array(row, dtype=float)))
    # all joints prescribed (base twist given): the inverse dynamics; its order 0 is Pinocchio's RNEA
    out, t = ho.hybrid(lm, data, q, dv, np.zeros_like(tau), names, fe)
    np.testing.assert_array_equal(out, dv[1:])  # the prescribed half comes back as given
    np.testing.assert_allclose(t[0], pin.rnea(pm, pd, q, dv[0], dv[1], fe0), atol=1e-11 * scale)
    np.testing.assert_allclose(t, tau, atol=1e-12 * scale)
    # nothing prescribed (base wrench given): the forward dynamics; its order 0 is Pinocchio's ABA
    out, t = ho.hybrid(lm, data, q, dv[:1].repeat(7, 0), tau, [], fe)
    np.testing.assert_allclose(out[0], pin.aba(pm, pd, q, dv[0], tau[0], fe0), atol=1e-10 * max(1.0, scale))
    np.testing.assert_allclose(out, ho.aba(lm, data, q, dv[0], tau, fe), atol=1e-12 * scale)
    np.testing.assert_array_equal(t, tau)  # the prescribed half comes back as given
    # mixed partitions on the ID-consistent trajectory, base in either half
    for pres in (names[::2], names[1::2]):
        known = np.zeros(lm.nv, bool)
        for n in pres:
            b = lm.bodies[lm.joint_names.index(n) - 1]
            known[b.idx_v : b.idx_v + b.joint.nv] = True
        dvin = dv.copy()
        dvin[1:, ~known] = 0.0
        tin = tau.copy()
        tin[:, known] = 0.0
        out, t = ho.hybrid(lm, data, q, dvin, tin, pres, fe)
        np.testing.assert_allclose(out, dv[1:], atol=1e-9 * scale)
        np.testing.assert_allclose(t, tau, atol=1e-11 * scale)


# ----------------------------------------------------------------------------------------------
# Lemma 2 (spec §3.7, §7.4 item 21)
@pytest.mark.parametrize("index", FLOATING)
def test_lemma2_articulated_inertia_is_the_same_at_every_order(index):
    """The response of the base's v^(r+1) to its wrench τ^(r) is the inverse of the base's
    articulated inertia for every r; reference: the Schur complement of the mass matrix (crba)."""
    lm, data = case(index)
    rng = np.random.default_rng(index)
    q = trees.random_configuration(rng, lm)
    M = ld.crba(lm, data, q)
    MA = M[:6, :6] - M[:6, 6:] @ np.linalg.solve(M[6:, 6:], M[6:, :6])  # Sᵀ M^A_1 S
    v = rng.normal(size=lm.nv)
    for r in (0, 2, 5):
        dtau = stacks(rng, lm, r + 1)
        base = ho.aba(lm, data, q, v, dtau)
        resp = np.empty((6, 6))
        for k in range(6):
            d2 = dtau.copy()
            d2[r, k] += 1.0
            got = ho.aba(lm, data, q, v, d2)
            np.testing.assert_array_equal(got[:r], base[:r])  # lower orders untouched
            resp[:, k] = got[r, :6] - base[r, :6]
        np.testing.assert_allclose(
            resp, np.linalg.inv(MA), rtol=1e-8, atol=1e-9 * np.abs(np.linalg.inv(MA)).max()
        )


@pytest.mark.parametrize("index", [6, 8, 12])
def test_lemma2_negative_control_order_one_bias_is_not_the_derivative_of_order_zero_bias(index):
    """b^(1) (τ̇ at zero jerk) − d/dt b^(0) (b^(0) = τ at zero acceleration = nle) = Ṁ a ≠ 0; d/dt nle
    from Pinocchio's RNEA derivatives, Ṁ from closed_form (fixed base: P = 1)."""
    import pinocchio as pin
    lm, pm = trees.tree_case(index)
    pdata = pm.createData()
    data = lm.create_data()
    rng = np.random.default_rng(index)
    q = trees.random_configuration(rng, lm)
    v, a = rng.normal(size=lm.nv), rng.normal(size=lm.nv)
    b1 = ho.rnea(lm, data, q, np.stack([v, a, np.zeros(lm.nv)]))[1]
    dq, dvel, _ = pin.computeRNEADerivatives(pm, pdata, q, v, np.zeros(lm.nv))
    db0 = dq @ v + dvel @ a
    Mdot_a = ho.closed_form(lm, data, q, v).M_dot @ a
    assert np.abs(b1 - db0).max() > 1e-3 * np.abs(b1).max()
    np.testing.assert_allclose(b1 - db0, Mdot_a, atol=1e-10 * max(1, np.abs(b1).max()))


# ----------------------------------------------------------------------------------------------
# physical identities (spec §7.3–7.4)
@pytest.mark.parametrize("index", FLOATING)
def test_free_fall(index):
    lm, data = case(index)
    rng = np.random.default_rng(index)
    q = trees.random_configuration(rng, lm)
    out = ho.aba(lm, data, q, np.zeros(lm.nv), np.zeros((6, lm.nv)))
    R = trees.quat_to_matrix(q[3:7])
    np.testing.assert_allclose(out[0, :3], R.T @ lm.gravity, atol=1e-12)
    np.testing.assert_allclose(out[0, 3:], 0.0, atol=1e-12)
    np.testing.assert_allclose(out[1:], 0.0, atol=1e-11)


@pytest.mark.parametrize("index", FLOATING)
def test_static_hover_all_higher_orders_vanish(index):
    lm, data = case(index)
    rng = np.random.default_rng(index)
    q = trees.random_configuration(rng, lm)
    tau = ho.rnea(lm, data, q, np.zeros((8, lm.nv)))
    np.testing.assert_allclose(tau[0], ld.gravity(lm, data, q), atol=1e-12 * np.abs(tau[0]).max())
    np.testing.assert_allclose(tau[1:], 0.0, atol=1e-12 * np.abs(tau[0]).max())


@pytest.mark.parametrize("index", FLOATING)
def test_world_frame_invariance(index):
    """Rotating and moving the world (base pose C → G C, gravity → R_G g) leaves every τ^(r)
    unchanged: the free-flyer rows are child-frame wrenches."""
    lm, data = case(index)
    rng = np.random.default_rng(index)
    q = trees.random_configuration(rng, lm)
    dv = stacks(rng, lm, 7)
    fe = rng.normal(size=(6, lm.njoints, 6))
    tau = ho.rnea(lm, data, q, dv, fe)
    RG, pG = trees.random_rotation(rng), rng.normal(size=3)
    moved = trees.tree_case(index, with_pinocchio=False)[0]
    import copy

    moved = copy.deepcopy(moved)
    moved.gravity = RG @ lm.gravity
    q2 = q.copy()
    q2[:3] = RG @ q[:3] + pG
    from scipy.spatial.transform import Rotation

    q2[3:7] = (Rotation.from_matrix(RG) * Rotation.from_quat(q[3:7])).as_quat()
    tau2 = ho.rnea(moved, moved.create_data(), q2, dv, fe)
    np.testing.assert_allclose(tau2, tau, atol=1e-11 * np.abs(tau).max())
    # negative control: rotating the world but not gravity changes τ
    q3 = q2.copy()
    tau3 = ho.rnea(lm, data, q3, dv, fe)
    assert np.abs(tau3 - tau).max() > 1e-3


# ----------------------------------------------------------------------------------------------
# converters (D9–D12)
def test_converters_round_trip_and_first_order():
    rng = np.random.default_rng(2)
    R, p = trees.random_rotation(rng), rng.normal(size=3)
    Vb = rng.normal(size=(7, 6))
    Vs = ho.body_to_spatial_twist((R, p), Vb)
    np.testing.assert_allclose(ho.spatial_to_body_twist((R, p), Vs), Vb, atol=1e-12)
    A = Ad(R, p)
    perm = [3, 4, 5, 0, 1, 2]
    np.testing.assert_allclose(Vs[:2], (A @ Vb[:2, perm].T).T, atol=1e-13)  # V̇^s = Ad V̇^b exactly
    assert np.abs(Vs[2] - A @ Vb[2, perm]).max() > 1e-3  # not from the second derivative on
    Wb = rng.normal(size=(6, 6))
    W0 = ho.body_to_spatial_wrench((R, p), Vs, Wb)
    np.testing.assert_allclose(ho.spatial_to_body_wrench((R, p), Vs, W0), Wb, atol=1e-12)
    Ainv_T = np.linalg.inv(A).T
    np.testing.assert_allclose(W0[0], Ainv_T @ Wb[0, perm], atol=1e-13)
    # Table 5b: Ẇ^b = Ad_Cᵀ (ad_Vᵀ W⁰ + Ẇ⁰)
    np.testing.assert_allclose(Wb[1, perm], A.T @ (ad(Vs[0]).T @ W0[0] + W0[1]), atol=1e-12)
    with pytest.raises(ld.errors.ShapeError):
        ho.body_to_spatial_twist((R, p), np.zeros((3, 5)))
    with pytest.raises(ld.errors.ShapeError):
        ho.body_to_spatial_wrench((R, p), Vs[:2], Wb)
    with pytest.raises(ld.errors.NonFiniteError):
        ho.body_to_spatial_twist((R, p), np.full((2, 6), np.nan))


# ----------------------------------------------------------------------------------------------
# erratum E1 (App. E text: Euler–Poincaré with ad_V instead of ad_Vᵀ)
@pytest.mark.parametrize("index", FLOATING)
def test_erratum_E1_euler_poincare_needs_the_transpose(index):
    """Dense spatial Newton–Euler from loopdyn's forward kinematics: the base wrench Σ_i (Π̇_i − M_i G⁰)
    with ``Π̇ = M V̇ − ad_Vᵀ M V`` is τ's free-flyer rows (mapped by Ad_Cᵀ); the printed ``− ad_V M V``
    is not."""
    lm, data = case(index)
    rng = np.random.default_rng(index)
    q = trees.random_configuration(rng, lm)
    v, a = rng.normal(size=lm.nv), rng.normal(size=lm.nv)
    tau = ho.rnea(lm, data, q, np.stack([v, a]))[0]
    ld.forward_kinematics(lm, data, q, v, a)
    oMi, vb, ab = data.oMi, data.v, data.a
    G = np.concatenate([np.zeros(3), lm.gravity])
    right = np.zeros(6)
    wrong = np.zeros(6)
    for i, b in enumerate(lm.bodies, start=1):
        R, p = oMi[i, :3, :3], oMi[i, :3, 3]
        A = Ad(R, p)
        Mb = np.zeros((6, 6))
        c, m = b.inertia.com, b.inertia.mass
        Mb[:3, :3] = b.inertia.inertia + m * skew(c) @ skew(c).T
        Mb[:3, 3:] = m * skew(c)
        Mb[3:, :3] = m * skew(c).T
        Mb[3:, 3:] = m * np.eye(3)
        Ainv = np.linalg.inv(A)
        M = Ainv.T @ Mb @ Ainv
        V = A @ np.concatenate([vb[i, 3:], vb[i, :3]])
        Vd = A @ np.concatenate([ab[i, 3:], ab[i, :3]])  # exact at first order (ad_V V = 0)
        right += M @ Vd - ad(V).T @ M @ V - M @ G
        wrong += M @ Vd - ad(V) @ M @ V - M @ G
    C1 = Ad(oMi[1, :3, :3], oMi[1, :3, 3])
    base = (C1.T @ right)[[3, 4, 5, 0, 1, 2]]
    np.testing.assert_allclose(base, tau[:6], atol=1e-11 * np.abs(tau).max())
    assert np.abs((C1.T @ wrong)[[3, 4, 5, 0, 1, 2]] - tau[:6]).max() > 1e-2


@pytest.mark.parametrize("index", FLOATING)
def test_momentum_conservation(index):
    """No gravity, no external force, zero base wrench, arbitrary joint forces τ^(k): the total spatial
    momentum h = (M̄ ν)_base is conserved. Order 1 from the closed form (ḣ = (M̄̇ ν + M̄ ν̇)_base, with
    ν̇ = P⁻¹ a from the FD); every order through the base rows of the (AD-checked) inverse dynamics
    on the FD's derivatives, which are h^(k+1) minus the applied wrenches (here none)."""
    import copy

    lm, _ = case(index)
    model = copy.deepcopy(lm)
    model.gravity = (0.0, 0.0, 0.0)
    data = model.create_data()
    rng = np.random.default_rng(index)
    q = trees.random_configuration(rng, model)
    v = rng.normal(size=model.nv)
    dtau = stacks(rng, model, 6)
    dtau[:, :6] = 0.0
    acc = ho.aba(model, data, q, v, dtau)
    cf = ho.closed_form(model, data, q, v)
    hdot = cf.M_dot @ cf.nu + cf.M @ np.linalg.solve(cf.P, acc[0])
    h = cf.M @ cf.nu
    assert np.abs(h[:6]).max() > 1e-2  # the robot moves
    np.testing.assert_allclose(hdot[:6], 0.0, atol=1e-11 * np.abs(cf.M).max() * max(1, np.abs(v).max()))
    tau = ho.rnea(model, data, q, np.vstack([v, acc]))
    np.testing.assert_allclose(tau[:, :6], 0.0, atol=1e-8 * max(1.0, np.abs(dtau).max()))
    np.testing.assert_allclose(tau[:, 6:], dtau[:, 6:], atol=1e-8 * max(1.0, np.abs(dtau).max()))
    # negative control: with gravity the momentum is not conserved
    data_g = lm.create_data()
    acc_g = ho.aba(lm, data_g, q, v, dtau)
    cf_g = ho.closed_form(lm, data_g, q, v)
    hdot_g = cf_g.M_dot @ cf_g.nu + cf_g.M @ np.linalg.solve(cf_g.P, acc_g[0])
    assert np.abs(hdot_g[:6]).max() > 1e-2
