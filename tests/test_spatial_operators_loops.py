"""Jain's spatial-operator functions on models with loops (the cluster tree, spec §1.7 and §2.7).

Oracles, all assembled densely on the spanning tree (``loopdyn.spanning_tree``), never from the
cluster kernels under test:

* ``Υ(k) = 𝒥ₖ 𝓜⁻¹ 𝒥ₖᵀ`` with ``𝒥ₖ = J_k,span G`` (Pinocchio's LOCAL joint Jacobian of body k on the
  spanning tree, G from the sympy-based baselines ``loopdyn.baselines.explicit_G``) and
  ``𝓜 = Gᵀ H_span G`` (Pinocchio's CRBA on the spanning tree);
* the factor against that 𝓜, its inverse and ``slogdet``, and its solve against ``loopdyn.aba``.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from trees import assert_close

import loopdyn
from loopdyn.baselines import explicit_G
from loopdyn.errors import (
    ConfigurationError,
    DataMismatchError,
    NonFiniteError,
    ShapeError,
    SingularInertiaError,
)
from loopdyn.model import Revolute
from loopdyn.spatial import Inertia

# random positive definite rotational inertias, not all of which a rigid body can have (the triangle
# inequality): the algorithms hold for any, so the builder's InertiaWarning is expected here
pytestmark = pytest.mark.filterwarnings("ignore::loopdyn.errors.InertiaWarning")


def _pin_joint(joint):
    kind = joint.kind
    if kind == "revolute":
        return pin.JointModelRevoluteUnaligned(joint.axis_array())
    if kind == "prismatic":
        return pin.JointModelPrismaticUnaligned(joint.axis_array())
    if kind == "spherical":
        return pin.JointModelSpherical()
    if kind == "free-flyer":
        return pin.JointModelFreeFlyer()
    raise AssertionError(f"no Pinocchio twin for joint kind {kind!r}")


def _depth_first(tree):
    """The bodies in depth-first order (Pinocchio needs every subtree's joints to be contiguous)."""
    children = {i: [] for i in range(tree.nbodies + 1)}
    for i, b in enumerate(tree.bodies, start=1):
        children[b.parent].append(i)
    order, stack = [], list(reversed(children[0]))
    while stack:
        i = stack.pop()
        order.append(i)
        stack.extend(reversed(children[i]))
    return order


def to_pinocchio(tree):
    """A loopdyn tree (a spanning tree) as a Pinocchio model with the same joints, placements,
    inertias and armature, its bodies added depth first; returns (model, qmap, vmap, jmap):
    ``q_pin = q[qmap]``, loopdyn's v index ``vmap[k]`` is Pinocchio's k, body i is joint jmap[i]."""
    pm = pin.Model()
    order = _depth_first(tree)
    jmap = np.zeros(tree.nbodies + 1, int)
    qmap, vmap, arm = [], [], []
    for i in order:
        b = tree.bodies[i - 1]
        jid = pm.addJoint(int(jmap[b.parent]), _pin_joint(b.joint),
                          pin.SE3(np.asarray(b.rotation), np.asarray(b.translation)), b.joint_name)
        jmap[i] = jid
        assert pm.idx_qs[jid] == len(qmap) and pm.idx_vs[jid] == len(vmap)
        qmap += range(b.idx_q, b.idx_q + b.joint.nq)
        vmap += range(b.idx_v, b.idx_v + b.joint.nv)
        arm += list(b.armature_vector())
        I = b.inertia
        pin_inertia = pin.Inertia(I.mass, np.asarray(I.com), np.asarray(I.inertia))
        pm.appendBodyToJoint(jid, pin_inertia, pin.SE3.Identity())
    pm.armature = np.array(arm)
    return pm, np.array(qmap, int), np.array(vmap, int), jmap


class Reference:
    """Dense quantities of a model with loops at q, from Pinocchio on its spanning tree."""

    def __init__(self, model, q):
        tree = loopdyn.spanning_tree(model)
        pm, qmap, vmap, jmap = to_pinocchio(tree)
        pd = pm.createData()
        qs, _ = loopdyn.to_spanning(model, q)
        G, _ = explicit_G(model, q, np.zeros(model.nv))
        Gp = G[vmap]  # rows in Pinocchio's v order
        Hs = pin.crba(pm, pd, qs[qmap])
        Hs = np.triu(Hs) + np.triu(Hs, 1).T
        self.M = Gp.T @ Hs @ Gp
        self.Minv = np.linalg.inv(self.M)
        pin.computeJointJacobians(pm, pd, qs[qmap])
        self.J = [np.zeros((6, model.nv))] + [
            np.reshape(pin.getJointJacobian(pm, pd, int(jmap[k]), pin.LOCAL), (6, pm.nv)) @ Gp
            for k in range(1, tree.nbodies + 1)
        ]

    def block(self, i, j):
        return self.J[i] @ self.Minv @ self.J[j].T


def _rel(a, b):
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def _armed_linkage():
    """A revolute base, a four-bar with a massless coupler, a gear pair with a massless rotor, armature
    on several joints (spanning and independent)."""
    rng = np.random.default_rng(11)

    def inertia():
        A = rng.normal(size=(3, 3))
        return Inertia(rng.uniform(0.5, 2.0), rng.uniform(-0.2, 0.2, 3), A @ A.T * 0.02 + 0.01 * np.eye(3))

    m = loopdyn.Model("armed-linkage")
    z = (0.0, 0.0, 1.0)
    m.add_body("base", 0, Revolute((0.3, 1.0, 0.2)), None, inertia(), armature=0.05)
    m.add_body("crank", "base", Revolute(z), (np.eye(3), [0.1, 0.0, 0.2]), inertia(), armature=0.02)
    m.add_body("coupler", "crank", Revolute(z), (np.eye(3), [0.3, 0, 0]), Inertia.zero(), independent=False)
    m.add_body("rocker", "base", Revolute(z), (np.eye(3), [0.8, 0.0, 0.2]), inertia(), independent=False,
               armature=0.03)
    m.add_loop("loop", "coupler", "rocker", "revolute", (np.eye(3), [0.8, 0, 0]), (np.eye(3), [0.6, 0, 0]),
               axis=z)
    m.add_body("link", "coupler", Revolute((1.0, 0.0, 0.0)), (np.eye(3), [0.4, 0.0, 0.0]), inertia())
    m.add_body("rotor", "coupler", Revolute((1.0, 0.0, 0.0)), None, Inertia.zero(), independent=False,
               armature=0.01)
    m.add_coupling("gear", "link", "rotor", 6.0)
    m.add_body("tip", "link", Revolute((0.0, 1.0, 0.0)), (np.eye(3), [0.0, 0.3, 0.0]), inertia())
    # more than one body of a cluster carrying others: the crank (and the coupler), the rotor (and the link)
    m.add_body("crank_arm", "crank", Revolute((1.0, 0.0, 0.0)), (np.eye(3), [0.1, 0.1, 0.0]), inertia())
    m.add_body("rotor_arm", "rotor", Revolute((0.0, 0.0, 1.0)), (np.eye(3), [0.0, 0.2, 0.1]), inertia())
    return m


def _models():
    import cluster_models

    return [
        ("four_bar", loopdyn.robots.four_bar),
        ("planar_leg_linkage", loopdyn.robots.planar_leg_linkage),
        ("mini_cheetah", loopdyn.robots.mini_cheetah),
        ("pbt_chain6", lambda: loopdyn.robots.pbt_chain(6)),
        ("tello", loopdyn.robots.tello),
        ("armed_linkage", _armed_linkage),
        ("random-clusters-3", lambda: cluster_models.random_cluster_model(3, 5, floating=True)),
        ("random-clusters-8", lambda: cluster_models.random_cluster_model(8, 6)),
        ("random-clusters-21", lambda: cluster_models.random_cluster_model(21, 7, floating=True)),
    ]


MODELS = _models()
IDS = [c[0] for c in MODELS]


@pytest.mark.parametrize("label,make", MODELS, ids=IDS)
def test_body_compliances_on_loops_match_pinocchio_on_the_spanning_tree(label, make):
    m = make()
    data = m.create_data()
    rng = np.random.default_rng(5)
    for _ in range(2):
        q = loopdyn.random_configuration(m, rng)
        Y = loopdyn.body_compliances(m, data, q)
        ref = Reference(m, q)
        assert _rel(ref.M, loopdyn.crba(m, data, q)) < 1e-10  # the oracle itself (not the code under test)
        assert Y.shape == (m.njoints, 6, 6) and np.all(Y[0] == 0.0)
        for k in range(1, m.njoints):
            assert _rel(Y[k], ref.block(k, k)) < 1e-10, (label, k, m.joint_names[k])


def test_massless_bodies_inside_clusters_are_covered():
    """The cases above include massless bodies inside clusters, and clusters with several bodies that
    carry other clusters (facts the tests rely on)."""
    from loopdyn.spatial_operators.cluster_sweeps import X_NCAR
    from loopdyn.spatial_operators.factorization import cluster_index

    masses = {label: min(b.inertia.mass for b in loopdyn.spanning_tree(make()).bodies)
              for label, make in MODELS}
    assert masses["tello"] == 0.0 and masses["pbt_chain6"] == 0.0 and masses["armed_linkage"] == 0.0
    m = _armed_linkage()
    assert cluster_index(m, m.create_data()).cl[1:, X_NCAR].max() == 2


@pytest.mark.parametrize("label,make", MODELS, ids=IDS)
def test_all_compliance_blocks_on_loops(label, make):
    """Off-diagonal blocks Ω(i, j) = 𝒥ᵢ 𝓜⁻¹ 𝒥ⱼᵀ (same cluster, ancestor clusters, other branches);
    an off-diagonal block's scale is √(‖Υ(i)‖ ‖Υ(j)‖) (Cauchy–Schwarz), the error is measured
    against it."""
    m = make()
    data = m.create_data()
    q = loopdyn.random_configuration(m, np.random.default_rng(9))
    Om = loopdyn.body_compliances(m, data, q, off_diagonal=True)
    ref = Reference(m, q)
    n = m.njoints
    assert Om.shape == (n, n, 6, 6) and np.all(Om[0] == 0.0) and np.all(Om[:, 0] == 0.0)
    diag = [np.abs(ref.block(k, k)).max() for k in range(n)]
    for i in range(1, n):
        for j in range(1, n):
            r = ref.block(i, j)
            scale = max(np.sqrt(diag[i] * diag[j]), 1e-300)
            assert np.max(np.abs(Om[i, j] - r)) < 1e-10 * scale, (label, i, j)
    Y = loopdyn.body_compliances(m, data, q)
    for k in range(1, n):
        assert_close(Om[k, k], Y[k], rtol=1e-12, atol=1e-13 * np.abs(Y[k]).max())


def test_compliance_of_a_gear_pair_by_hand():
    """A link and its rotor geared by N about parallel axes (one independent coordinate y = link
    angle, rotor angle N y): 𝓜 = I_link + N² I_rotor about the axis, so the link's compliance about
    its axis is 1 / 𝓜 and the rotor's is N² / 𝓜 (textbook, no code under test)."""
    m = loopdyn.Model("gear")
    I1, I2, N = 0.7, 0.05, 9.0
    m.add_body("link", 0, Revolute((0, 0, 1)), None, Inertia(1.0, (0, 0, 0), np.diag([0.1, 0.2, I1])))
    m.add_body("rotor", 0, Revolute((0, 0, 1)), (np.eye(3), [0.0, 0.0, 0.1]),
               Inertia(0.2, (0, 0, 0), np.diag([0.01, 0.01, I2])))
    m.add_coupling("gear", "link", "rotor", N)
    Y = loopdyn.body_compliances(m, m.create_data(), loopdyn.neutral(m))
    Mr = I1 + N * N * I2
    e = np.zeros((6, 6))
    e[5, 5] = 1.0
    assert_close(Y[1], e / Mr, rtol=1e-13, atol=1e-15)
    assert_close(Y[2], e * N * N / Mr, rtol=1e-13, atol=1e-15)


def test_compliance_input_errors_on_loops():
    m = loopdyn.robots.four_bar()
    data = m.create_data()
    q = loopdyn.neutral(m)
    with pytest.raises(ShapeError):
        loopdyn.body_compliances(m, data, q[:-1])
    with pytest.raises(NonFiniteError):
        loopdyn.body_compliances(m, data, np.full(m.nq, np.nan))
    with pytest.raises(DataMismatchError):
        loopdyn.body_compliances(m, loopdyn.robots.four_bar().create_data(), q)
    assert _rel(loopdyn.body_compliances(m, data, list(q))[2], loopdyn.body_compliances(m, data, q)[2]) == 0.0
    mc = loopdyn.robots.mini_cheetah()
    qc = loopdyn.neutral(mc)
    qc[3:7] *= 2.0  # the free flyer's quaternion
    for fn in (loopdyn.body_compliances, loopdyn.mass_matrix_factor):
        with pytest.raises(ConfigurationError):
            fn(mc, mc.create_data(), qc)


def _singular_gear():
    m = loopdyn.Model("geared")
    m.add_body("arm", 0, Revolute((0, 0, 1)), None, Inertia(1.0, (0.3, 0.0, 0.0), np.eye(3) * 0.01))
    m.add_body("link", "arm", Revolute((0, 0, 1)), (np.eye(3), np.array([0.5, 0, 0])), Inertia.zero())
    m.add_body("rotor", "arm", Revolute((0, 0, 1)), None, Inertia.zero())
    m.add_coupling("gear", "link", "rotor", 3.0)
    return m


def test_singular_cluster_is_named_by_the_compliances():
    m = _singular_gear()
    with pytest.raises(SingularInertiaError, match="'link'.*'rotor'"):
        loopdyn.body_compliances(m, m.create_data(), loopdyn.neutral(m))


@pytest.mark.parametrize("label,make", MODELS, ids=IDS)
def test_factor_on_loops_reproduces_M_its_inverse_and_aba(label, make):
    from loopdyn.spatial_operators import ClusterMassMatrixFactor, block_elimination_factor

    m = make()
    data = m.create_data()
    rng = np.random.default_rng(17)
    q = loopdyn.random_configuration(m, rng)
    F = loopdyn.mass_matrix_factor(m, data, q)
    assert isinstance(F, ClusterMassMatrixFactor)
    ref = Reference(m, q)
    assert _rel(F.matrix(), ref.M) < 1e-10 and _rel(F.inverse(), ref.Minv) < 1e-10
    sign, logdet = np.linalg.slogdet(ref.M)
    assert sign > 0 and abs(F.logdet() - logdet) < 1e-10 * max(1.0, abs(logdet))
    L, D, Linv = F.factor_matrix(), F.D_matrix(), F.factor_inverse_matrix()
    eye = np.eye(m.nv)
    assert _rel(L @ D @ L.T, ref.M) < 1e-10 and _rel(Linv @ L, eye) < 1e-10
    assert _rel(Linv.T @ np.linalg.inv(D) @ Linv, ref.Minv) < 1e-10
    assert _rel(F.apply_factor(eye, transpose=True), L.T) < 1e-12
    assert _rel(F.apply_factor_inverse(eye, transpose=True), Linv.T) < 1e-12
    assert _rel(F.apply_D_inverse(eye), np.linalg.inv(D)) < 1e-10
    # the unique unit block-triangular factors: those of the dense block elimination of crba's M
    B = block_elimination_factor(m, data, q)
    assert _rel(L, B.factor_matrix()) < 1e-10 and _rel(D, B.D_matrix()) < 1e-10
    # solve = C-ABA at zero velocity without gravity (gravity compensated through loopdyn.gravity)
    tau = rng.normal(size=(m.nv, 3))
    grav = loopdyn.gravity(m, data, q)
    ddq = np.stack([loopdyn.aba(m, data, q, np.zeros(m.nv), t + grav) for t in tau.T], 1)
    assert _rel(F.solve(tau), ddq) < 1e-10 and _rel(F.solve(tau[:, 1]), ddq[:, 1]) < 1e-10
    assert _rel(F.multiply(ddq), tau) < 1e-10


def test_cluster_factor_keeps_its_own_arrays():
    """A factor stays valid after its Data is used at another configuration."""
    m = loopdyn.robots.mini_cheetah()
    data = m.create_data()
    rng = np.random.default_rng(2)
    q1, q2 = loopdyn.random_configuration(m, rng), loopdyn.random_configuration(m, rng)
    F1 = loopdyn.mass_matrix_factor(m, data, q1)
    M1 = Reference(m, q1).M
    loopdyn.mass_matrix_factor(m, data, q2)
    loopdyn.body_compliances(m, data, q2)
    loopdyn.aba(m, data, q2, np.zeros(m.nv), np.ones(m.nv))
    assert _rel(F1.matrix(), M1) < 1e-10 and _rel(F1.solve(M1 @ np.arange(m.nv)), np.arange(m.nv)) < 1e-10


def test_cluster_factor_input_checks():
    m = loopdyn.robots.four_bar()
    data = m.create_data()
    F = loopdyn.mass_matrix_factor(m, data, loopdyn.neutral(m))
    with pytest.raises(ShapeError):
        F.solve(np.zeros(m.nv + 1))
    with pytest.raises(NonFiniteError):
        F.multiply(np.full(m.nv, np.inf))
    assert F.solve(np.zeros((m.nv, 0))).shape == (m.nv, 0)
    with pytest.raises(NonFiniteError):
        loopdyn.mass_matrix_factor(m, data, np.full(m.nq, np.nan))
    with pytest.raises(DataMismatchError):
        loopdyn.mass_matrix_factor(m, loopdyn.robots.four_bar().create_data(), loopdyn.neutral(m))
    with pytest.raises(SingularInertiaError, match="'link'.*'rotor'"):
        g = _singular_gear()
        loopdyn.mass_matrix_factor(g, g.create_data(), loopdyn.neutral(g))


@pytest.mark.parametrize("label,make", MODELS[2:6], ids=IDS[2:6])
def test_compliances_equal_single_body_cluster_delassus(label, make):
    """Υ(k) is the Delassus matrix of one 6-D constraint on body k (loopdyn.delassus: the cluster
    Delassus kernels, another code path)."""
    m = make()
    data = m.create_data()
    q = loopdyn.random_configuration(m, np.random.default_rng(23))
    Y = loopdyn.body_compliances(m, data, q)
    for k, b in enumerate(loopdyn.spanning_tree(m).bodies, start=1):
        D = loopdyn.delassus(m, data, q, [loopdyn.Constraint(b.name, "6d")])
        assert _rel(Y[k], D) < 1e-10, (label, b.name)
