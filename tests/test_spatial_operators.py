"""Jain's spatial-operator functions: body compliances (Eq. 22) and the innovations factorisation.

Oracles: Pinocchio (LOCAL joint Jacobians, CRBA), loopdyn's own frame Jacobians with CRBA (a
different code path: the composite-rigid-body algorithm and dense inversion), loopdyn.aba and
NumPy's dense linear algebra.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
import trees
from trees import assert_close

import loopdyn
from loopdyn.errors import (
    ConfigurationError,
    DataMismatchError,
    NonFiniteError,
    ShapeError,
    SingularInertiaError,
    UnsupportedFeatureError,
)
from loopdyn.model import FreeFlyer, Revolute, Spherical
from loopdyn.spatial import Inertia

TREE_INDICES = [0, 3, 4, 7, 9, 11, 13, 18, 19, 23]
ROBOTS = ["ur5", "solo12", "talos_reduced"]


def _dense_mass(pm, q):
    pd = pm.createData()
    M = pin.crba(pm, pd, q)
    return np.triu(M) + np.triu(M, 1).T


def _local_jacobians(pm, q):
    pd = pm.createData()
    pin.computeJointJacobians(pm, pd, q)
    jac = [np.reshape(pin.getJointJacobian(pm, pd, k, pin.LOCAL), (6, pm.nv)) for k in range(1, pm.njoints)]
    return [np.zeros((6, pm.nv))] + jac


def _rel(a, b):
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def _cases():
    out = [(f"tree{i}", lambda i=i: trees.tree_case(i)) for i in TREE_INDICES]
    out += [(name, lambda name=name: trees.robot_case(name)) for name in ROBOTS]
    return out


CASES = _cases()


@pytest.mark.parametrize("label,make", CASES, ids=[c[0] for c in CASES])
def test_body_compliances_match_pinocchio_local_jacobians(label, make):
    lm, pm = make()
    rng = np.random.default_rng(7)
    data = lm.create_data()
    for _ in range(2):
        q = trees.random_configuration(rng, lm)
        Y = loopdyn.body_compliances(lm, data, q)
        assert Y.shape == (lm.njoints, 6, 6)
        assert np.all(Y[0] == 0.0)
        Minv = np.linalg.inv(_dense_mass(pm, q))
        J = _local_jacobians(pm, q)
        for k in range(1, lm.njoints):
            ref = J[k] @ Minv @ J[k].T
            assert np.max(np.abs(ref)) > 0.0
            assert _rel(Y[k], ref) < 1e-9, (label, k, _rel(Y[k], ref))
        # negative control: the blocks are body-specific (a shuffled assignment does not match)
        k = lm.njoints - 1
        if k >= 2:
            wrong = J[1] @ Minv @ J[1].T
            assert _rel(Y[k], wrong) > 1e-6


@pytest.mark.parametrize("index", [7, 13, 19])
def test_body_compliances_match_loopdyn_frame_jacobians_and_crba(index):
    lm, _ = trees.tree_case(index, with_pinocchio=False)
    data = lm.create_data()
    rng = np.random.default_rng(index)
    q = trees.random_configuration(rng, lm)
    Y = loopdyn.body_compliances(lm, data, q)
    Minv = np.linalg.inv(loopdyn.crba(lm, data, q))
    for k in range(1, lm.njoints):
        J = loopdyn.frame_jacobian(lm, data, q, lm.frame_id(lm.body_names[k], "body"), "local")
        ref = J @ Minv @ J.T
        assert _rel(Y[k], ref) < 1e-9


OFF_DIAGONAL_CASES = [CASES[5], CASES[8], CASES[-2]]


@pytest.mark.parametrize("label,make", OFF_DIAGONAL_CASES, ids=[c[0] for c in OFF_DIAGONAL_CASES])
def test_body_compliance_off_diagonal_blocks(label, make):
    lm, pm = make()
    rng = np.random.default_rng(3)
    q = trees.random_configuration(rng, lm)
    data = lm.create_data()
    Om = loopdyn.body_compliances(lm, data, q, off_diagonal=True)
    assert Om.shape == (lm.njoints, lm.njoints, 6, 6)
    Minv = np.linalg.inv(_dense_mass(pm, q))
    J = np.vstack(_local_jacobians(pm, q))
    ref = (J @ Minv @ J.T).reshape(lm.njoints, 6, lm.njoints, 6).transpose(0, 2, 1, 3)
    assert_close(Om, ref, rtol=1e-9, atol=1e-9 * np.max(np.abs(ref)), what=f"{label} Ω")
    diag = loopdyn.body_compliances(lm, data, q)
    for k in range(lm.njoints):
        assert_close(Om[k, k], diag[k], rtol=1e-12, atol=1e-14)


def test_body_compliances_include_armature():
    lm, pm = trees.tree_case(9)
    lm2 = trees.build_loopdyn(trees.tree_recipe(9))
    arm = np.linspace(0.05, 0.4, lm2.nv)
    lm2.armature = arm
    q = trees.random_configuration(np.random.default_rng(1), lm2)
    M = _dense_mass(pm, q) + np.diag(arm)
    J = _local_jacobians(pm, q)
    Y = loopdyn.body_compliances(lm2, lm2.create_data(), q)
    Y0 = loopdyn.body_compliances(lm, lm.create_data(), q)
    Minv = np.linalg.inv(M)
    for k in range(1, lm2.njoints):
        assert _rel(Y[k], J[k] @ Minv @ J[k].T) < 1e-9
    assert _rel(Y[-1], Y0[-1]) > 1e-4  # negative control: the armature does change Υ


# ------------------------------------------------------------------------------------------------
# the innovations factorisation


@pytest.mark.parametrize("label,make", CASES, ids=[c[0] for c in CASES])
def test_mass_matrix_factor_reproduces_M_and_inverse(label, make):
    lm, pm = make()
    rng = np.random.default_rng(11)
    data = lm.create_data()
    q = trees.random_configuration(rng, lm)
    F = loopdyn.mass_matrix_factor(lm, data, q)
    M = _dense_mass(pm, q)
    Minv = np.linalg.inv(M)
    assert _rel(F.matrix(), M) < 1e-9
    assert _rel(F.inverse(), Minv) < 1e-9
    L, D, Linv = F.factor_matrix(), F.D_matrix(), F.factor_inverse_matrix()
    assert _rel(L @ D @ L.T, M) < 1e-9  # M = [I + HφK] D [I + HφK]ᵀ
    assert _rel(Linv @ L, np.eye(lm.nv)) < 1e-9  # [I + HφK]⁻¹ = I − HψK
    assert _rel(Linv.T @ np.linalg.inv(D) @ Linv, Minv) < 1e-9
    # structure: unit diagonal, block (i, j) zero unless joint i is an ancestor-or-self of joint j
    anc = np.zeros((lm.nv, lm.nv), bool)
    for j, bj in enumerate(lm.bodies, start=1):
        a = j
        while a > 0:
            ba = lm.bodies[a - 1]
            anc[ba.idx_v : ba.idx_v + ba.joint.nv, bj.idx_v : bj.idx_v + bj.joint.nv] = True
            a = ba.parent
    assert np.all(L[~anc] == 0.0) and np.all(Linv[~anc] == 0.0)
    assert_close(np.diag(L), np.ones(lm.nv), rtol=0, atol=1e-12)
    assert np.all(D[~np.equal.outer(_block_ids(lm), _block_ids(lm))] == 0.0)
    sign, logdet = np.linalg.slogdet(M)
    assert sign > 0 and abs(F.logdet() - logdet) < 1e-9 * max(1.0, abs(logdet))
    # vector and matrix right-hand sides
    b = rng.normal(size=lm.nv)
    B = rng.normal(size=(lm.nv, 3))
    assert _rel(F.solve(b), np.linalg.solve(M, b)) < 1e-9
    assert _rel(F.solve(B), np.linalg.solve(M, B)) < 1e-9
    assert _rel(F.multiply(b), M @ b) < 1e-9
    assert _rel(F.apply_factor(b, transpose=True), L.T @ b) < 1e-12
    assert _rel(F.apply_factor_inverse(b, transpose=True), Linv.T @ b) < 1e-12
    assert _rel(F.apply_D_inverse(b), np.linalg.solve(D, b)) < 1e-9


def _block_ids(lm):
    out = np.empty(lm.nv, int)
    for i, b in enumerate(lm.bodies):
        out[b.idx_v : b.idx_v + b.joint.nv] = i
    return out


@pytest.mark.parametrize("index", [4, 9, 13, 19, 23])
def test_factor_solve_equals_aba_without_velocity_and_gravity(index):
    recipe = trees.tree_recipe(index)
    recipe.gravity = np.zeros(3)
    lm = trees.build_loopdyn(recipe)
    data = lm.create_data()
    rng = np.random.default_rng(index)
    for _ in range(3):
        q = trees.random_configuration(rng, lm)
        tau = rng.normal(size=lm.nv)
        F = loopdyn.mass_matrix_factor(lm, data, q)
        ref = loopdyn.aba(lm, data, q, np.zeros(lm.nv), tau)
        assert_close(F.solve(tau), ref, rtol=1e-9, atol=1e-10 * np.max(np.abs(ref)))
    # the factor keeps its own arrays: a later factor at another q does not change it
    q1, q2 = trees.random_configuration(rng, lm), trees.random_configuration(rng, lm)
    F1 = loopdyn.mass_matrix_factor(lm, data, q1)
    x1 = F1.solve(tau)
    loopdyn.mass_matrix_factor(lm, data, q2)
    assert np.array_equal(F1.solve(tau), x1)
    if lm.nbodies > 1:  # negative control (a single free body's M does not depend on q)
        assert _rel(F1.solve(tau), loopdyn.aba(lm, data, q2, np.zeros(lm.nv), tau)) > 1e-6


# ------------------------------------------------------------------------------------------------
# bad input


def _small_model(leaf_mass=1.0):
    m = loopdyn.Model("small")
    heavy = Inertia(1.0, (0.1, 0.0, 0.2), np.diag([0.1, 0.2, 0.3]))
    m.add_body("a", 0, Revolute((0, 0, 1)), inertia=heavy)
    m.add_body("b", "a", Spherical(), (np.eye(3), np.array([0.3, 0.0, 0.0])), heavy)
    m.add_body("tip", "b", Revolute((1, 0, 0)), (np.eye(3), np.array([0.0, 0.4, 0.0])),
               Inertia(leaf_mass, (0.0, 0.1, 0.0), np.diag([0.01, 0.02, 0.03]) * leaf_mass),
               joint_name="tip_joint")
    return m


@pytest.mark.parametrize("fn", [loopdyn.body_compliances, loopdyn.mass_matrix_factor])
def test_bad_input_raises_specific_errors(fn):
    m = _small_model()
    data = m.create_data()
    q = loopdyn.neutral(m)
    with pytest.raises(ShapeError):
        fn(m, data, q[:-1])
    with pytest.raises(ShapeError):
        fn(m, data, "abc")
    bad = q.copy()
    bad[2] = np.nan
    with pytest.raises(NonFiniteError):
        fn(m, data, bad)
    bad = q.copy()
    bad[1:5] = [0.5, 0.5, 0.5, 0.9]
    with pytest.raises(ConfigurationError, match="'b'"):
        fn(m, data, bad)
    with pytest.raises(DataMismatchError):
        fn(m, _small_model().create_data(), q)
    with pytest.raises(SingularInertiaError, match="tip_joint"):
        m0 = _small_model(0.0)
        fn(m0, m0.create_data(), q)


def test_massless_leaf_error_names_the_joint_and_data_stays_usable():
    m = _small_model(0.0)
    data = m.create_data()
    with pytest.raises(SingularInertiaError, match="'tip_joint'"):
        loopdyn.body_compliances(m, data, loopdyn.neutral(m))


def test_body_compliances_on_models_with_loops_use_the_cluster_tree():
    """Models with loops are handled on the cluster tree (tests/test_spatial_operators_loops.py, its
    values there on many models; here the four-bar at neutral against the same oracle: Pinocchio on
    the spanning tree, J_span G (GᵀH_spanG)⁻¹ Gᵀ J_spanᵀ); the tree-only arrays still refuse them with
    the reason."""
    from test_spatial_operators_loops import Reference

    from loopdyn.spatial_operators.tree_arrays import tree_arrays

    m = loopdyn.robots.four_bar()
    data = m.create_data()
    q = loopdyn.neutral(m)
    Y = loopdyn.body_compliances(m, data, q)
    ref = Reference(m, q)
    assert Y.shape == (m.njoints, 6, 6) and np.all(Y[0] == 0.0)
    for k in range(1, m.njoints):
        assert np.abs(ref.block(k, k)).max() > 0.0
        assert _rel(Y[k], ref.block(k, k)) < 1e-10, (k, _rel(Y[k], ref.block(k, k)))
    # negative control: the blocks are body-specific
    assert _rel(Y[m.njoints - 1], ref.block(1, 1)) > 1e-3
    with pytest.raises(UnsupportedFeatureError, match="loops"):
        tree_arrays(m, data, "body_compliances")


def _block_udu(M, blocks):
    """Reference: block UDUᵀ of M by dense elimination from the last block (NumPy), L unit upper."""
    M = M.copy()
    n = M.shape[0]
    L, D = np.eye(n), np.zeros((n, n))
    for c in range(len(blocks) - 1, -1, -1):
        sc = blocks[c]
        D[sc, sc] = M[sc, sc]
        rest = np.arange(0, sc.start)
        L[rest, sc] = M[rest, sc] @ np.linalg.inv(M[sc, sc])
        M[np.ix_(rest, rest)] -= L[rest, sc] @ M[sc, rest]
    return L, D


@pytest.mark.parametrize("index", [7, 13, 19])
def test_tree_factor_is_the_unique_block_udu_factorisation(index):
    """The spatial-operator factors equal the block UDUᵀ of CRBA's M by dense elimination (uniqueness),
    the fact the cluster-tree version relies on."""
    lm, pm = trees.tree_case(index)
    q = trees.random_configuration(np.random.default_rng(0), lm)
    F = loopdyn.mass_matrix_factor(lm, lm.create_data(), q)
    blocks = [slice(b.idx_v, b.idx_v + b.joint.nv) for b in lm.bodies]
    L, D = _block_udu(_dense_mass(pm, q), blocks)
    assert_close(F.factor_matrix(), L, rtol=1e-9, atol=1e-10 * np.abs(L).max())
    assert_close(F.D_matrix(), D, rtol=1e-9, atol=1e-10 * np.abs(D).max())


def _loop_models():
    import cluster_models

    return [("four_bar", loopdyn.robots.four_bar), ("mit_humanoid_leg", loopdyn.robots.mit_humanoid_leg),
            ("mini_cheetah", loopdyn.robots.mini_cheetah),
            ("random-clusters", lambda: cluster_models.random_cluster_model(3, 5, floating=True)),
            ("random-clusters-b", lambda: cluster_models.random_cluster_model(8, 6))]


@pytest.mark.parametrize("label,make", _loop_models(), ids=[c[0] for c in _loop_models()])
def test_mass_matrix_factor_on_the_cluster_tree(label, make):
    from loopdyn.baselines import projected_mass_matrix

    m = make()
    data = m.create_data()
    rng = np.random.default_rng(4)
    q = loopdyn.random_configuration(m, rng)
    F = loopdyn.mass_matrix_factor(m, data, q)
    M = projected_mass_matrix(m, q)  # Gᵀ H_span G on the spanning tree: not the cluster kernels
    Minv = np.linalg.inv(M)
    assert _rel(F.matrix(), M) < 1e-9
    assert _rel(F.inverse(), Minv) < 1e-9
    L, D, Linv = F.factor_matrix(), F.D_matrix(), F.factor_inverse_matrix()
    assert _rel(L @ D @ L.T, M) < 1e-9 and _rel(Linv @ L, np.eye(m.nv)) < 1e-9
    # block structure: one D block per cluster, L non-zero only on (ancestor cluster, cluster) blocks
    cl = m.clusters().clusters
    allowed = np.zeros((m.nv, m.nv), bool)
    same = np.zeros((m.nv, m.nv), bool)
    for c in cl:
        sc = slice(c.iv, c.iv + c.nv)
        same[sc, sc] = True
        a = c.index
        while a >= 0:
            allowed[cl[a].iv : cl[a].iv + cl[a].nv, sc] = True
            a = cl[a].parent
    assert np.all(L[~allowed] == 0.0) and np.all(D[~same] == 0.0)
    assert abs(F.logdet() - np.linalg.slogdet(M)[1]) < 1e-9 * max(1.0, abs(np.linalg.slogdet(M)[1]))
    # solve = C-ABA at zero velocity without gravity (gravity compensated through loopdyn.gravity)
    tau = rng.normal(size=m.nv)
    ref = loopdyn.aba(m, data, q, np.zeros(m.nv), tau + loopdyn.gravity(m, data, q))
    assert _rel(F.solve(tau), ref) < 1e-9
    assert _rel(F.solve(np.c_[tau, 2 * tau])[:, 1], 2 * ref) < 1e-9
    assert _rel(F.multiply(ref), tau) < 1e-9


def test_factor_operator_input_checks():
    m = _small_model()
    F = loopdyn.mass_matrix_factor(m, m.create_data(), loopdyn.neutral(m))
    with pytest.raises(ShapeError):
        F.solve(np.zeros(m.nv + 1))
    with pytest.raises(NonFiniteError):
        F.multiply(np.full(m.nv, np.inf))
    assert F.solve(np.zeros((m.nv, 0))).shape == (m.nv, 0)
    with pytest.raises(ShapeError):
        F.solve(np.array([1j, 0.0, 0.0, 0.0, 0.0]))
    empty = loopdyn.Model("empty")
    d0 = empty.create_data()
    assert loopdyn.body_compliances(empty, d0, np.zeros(0)).shape == (1, 6, 6)
    F0 = loopdyn.mass_matrix_factor(empty, d0, [])
    assert F0.solve(np.zeros(0)).shape == (0,) and F0.logdet() == 0.0


def test_free_flyer_root_and_model_change_invalidates_cache():
    m = loopdyn.Model("ff")
    m.add_body("base", 0, FreeFlyer(), inertia=Inertia(2.0, (0.1, 0.2, 0.3), np.diag([0.2, 0.3, 0.4])))
    data = m.create_data()
    q = loopdyn.neutral(m)
    Y1 = loopdyn.body_compliances(m, data, q)
    # a single free body: Υ is the inverse of its spatial inertia (Pinocchio layout)
    I = Inertia(2.0, (0.1, 0.2, 0.3), np.diag([0.2, 0.3, 0.4])).matrix()
    perm = [3, 4, 5, 0, 1, 2]
    assert_close(Y1[1], np.linalg.inv(I[np.ix_(perm, perm)]), rtol=1e-12, atol=1e-12)
    m.add_body("arm", "base", Revolute((0, 1, 0)), inertia=Inertia(1.0, (0.3, 0, 0), np.eye(3) * 0.01))
    with pytest.raises(DataMismatchError):
        loopdyn.body_compliances(m, data, np.r_[q, 0.0])
    d2, q2 = m.create_data(), np.r_[q, 0.0]
    Y2 = loopdyn.body_compliances(m, d2, q2)
    assert Y2.shape == (3, 6, 6) and _rel(Y2[1], Y1[1]) > 1e-6
    # the new model's values: J_k M⁻¹ J_kᵀ from the LOCAL frame Jacobians and CRBA
    Minv = np.linalg.inv(loopdyn.crba(m, d2, q2))
    for k in (1, 2):
        J = loopdyn.frame_jacobian(m, d2, q2, m.frame_id(m.body_names[k], "body"), "local")
        assert _rel(Y2[k], J @ Minv @ J.T) < 1e-12, k


@pytest.mark.parametrize("index", trees.drawn_order_indices()[:3])
def test_trees_not_in_depth_first_order(index):
    """Subtrees need not be contiguous: compliances (all blocks) and the factor against loopdyn's frame
    Jacobians and CRBA."""
    lm, _ = trees.tree_case(index, with_pinocchio=False, depth_first_order=False)
    data = lm.create_data()
    q = trees.random_configuration(np.random.default_rng(index), lm)
    M = loopdyn.crba(lm, data, q)
    Om = loopdyn.body_compliances(lm, data, q, off_diagonal=True)
    J = [np.zeros((6, lm.nv))] + [loopdyn.frame_jacobian(lm, data, q, lm.frame_id(n, "body"))
                                  for n in lm.body_names[1:]]
    Minv = np.linalg.inv(M)
    for i in range(1, lm.njoints):
        for j in range(1, lm.njoints):
            ref = J[i] @ Minv @ J[j].T
            assert_close(Om[i, j], ref, rtol=1e-9, atol=1e-10 * max(1.0, np.abs(ref).max()))
    F = loopdyn.mass_matrix_factor(lm, data, q)
    assert _rel(F.matrix(), M) < 1e-9 and _rel(F.inverse(), Minv) < 1e-9


def test_cluster_factor_names_the_joints_of_a_singular_cluster():
    m = loopdyn.Model("geared")
    m.add_body("arm", 0, Revolute((0, 0, 1)), None, Inertia(1.0, (0.3, 0.0, 0.0), np.eye(3) * 0.01))
    m.add_body("link", "arm", Revolute((0, 0, 1)), (np.eye(3), np.array([0.5, 0, 0])), Inertia.zero())
    m.add_body("rotor", "arm", Revolute((0, 0, 1)), None, Inertia.zero())
    m.add_coupling("gear", "link", "rotor", 3.0)
    data = m.create_data()
    with pytest.raises(SingularInertiaError, match="'link'"):
        loopdyn.mass_matrix_factor(m, data, loopdyn.neutral(m))
