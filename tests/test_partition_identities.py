"""Jain's partitioning identities (spec §1.6–1.7, §5.1) on models produced by loopdyn.partition.

A small dense NumPy implementation of the spatial-operator quantities (the ATBI sweep P, D, G, τ, τ̄,
P⁺ and the compliance sweep Υ, textbook formulas, Featherstone [angular; linear] ordering) is
anchored on the spec's golden case GT-1 and then used to check, at the partitioned joints of random
trees:

* the partition satisfies Lemma 2.1 — the sub-hinge placements compose to the original joint's
  (Eq. 5a) and the merged hinge map spans the original joint's motion with the map's T (Eq. 5b);
* Eqs. 9a, 9b, F₂, F₂′, 10, 11a, 11b, 14, 15a, 15b, 16, 17, 18, 19, 24, 25 as written, with
  n″ ≥ 2 and n′ ≥ 2 included (n″ + n′ = 6 as well), by grouping sub-hinges into a compound outboard
  hinge k″ and a compound massless body k′;
* P_u, P_u⁺, τ̄_u and Υ_u computed on the *original* model (they do not depend on the choice of
  generalized velocities) against the partitioned ones, and loopdyn.body_compliances against the
  dense Υ for physical and massless bodies;
* the negative controls of §5.1 item 7.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import trees
from trees import assert_close

import loopdyn
from loopdyn.model import FREEFLYER, PRISMATIC, REVOLUTE, REVOLUTE_UNBOUNDED, SPHERICAL, Revolute
from loopdyn.spatial import Inertia

PIN = [3, 4, 5, 0, 1, 2]  # Featherstone [angular; linear] → Pinocchio [linear; angular]


def _skew(x):
    return np.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])


def _motion_transform(T):
    R, p = T[:3, :3], T[:3, 3]
    X = np.zeros((6, 6))
    X[:3, :3] = X[3:, 3:] = R.T
    X[3:, :3] = -R.T @ _skew(p)
    return X


def _subspace(b):
    j = b.joint
    S = np.zeros((6, j.nv))
    if j.code in (REVOLUTE, REVOLUTE_UNBOUNDED):
        S[:3, 0] = j.axis_array()
    elif j.code == PRISMATIC:
        S[3:, 0] = j.axis_array()
    elif j.code == SPHERICAL:
        S[:3, :3] = np.eye(3)
    else:
        assert j.code == FREEFLYER
        S[3:, :3] = np.eye(3)
        S[:3, 3:] = np.eye(3)
    return S


class Dense:
    """A tree as dense per-body (parent, X = φ*(℘(k),k), S = H*(k), M, column labels)."""

    def __init__(self, model, data, q):
        loopdyn.forward_kinematics(model, data, q)
        liMi = data.liMi
        self.parent, self.X, self.S, self.M, self.labels = {}, {}, {}, {}, {}
        for k, b in enumerate(model.bodies, start=1):
            self.parent[k] = b.parent
            self.X[k] = _motion_transform(liMi[k])
            self.S[k] = _subspace(b)
            self.M[k] = b.inertia.matrix()
            self.labels[k] = list(range(b.idx_v, b.idx_v + b.joint.nv))

    def merge(self, c, check_massless=True):
        """Merge c's parent m (massless, only child c) into c: H_u*(c) = [H*(c), φ*(m,c) H*(m)] (Eq. 5b,
        k″ block first), φ_u*(℘(m),c) = φ*(m,c) φ*(℘(m),m) (Eq. 5a)."""
        m = self.parent[c]
        assert [k for k, p in self.parent.items() if p == m] == [c]
        if check_massless:
            assert np.all(self.M[m] == 0.0)
        self.S[c] = np.hstack([self.S[c], self.X[c] @ self.S[m]])
        self.labels[c] = self.labels[c] + self.labels[m]
        self.X[c] = self.X[c] @ self.X[m]
        self.parent[c] = self.parent[m]
        for d in (self.parent, self.X, self.S, self.M, self.labels):
            del d[m]

    def sweep(self):
        """ATBI (Eq. 7) tip→base, then Υ (Eq. 22) base→tip. Returns a dict of per-body dicts."""
        P, Pp, D, G, tau, tb, Y, Yp = ({} for _ in range(8))
        keys = sorted(self.parent)
        for k in keys:
            P[k] = self.M[k].copy()
        for k in reversed(keys):
            S = self.S[k]
            D[k] = S.T @ P[k] @ S
            G[k] = P[k] @ S @ np.linalg.inv(D[k])
            tau[k] = G[k] @ S.T
            tb[k] = np.eye(6) - tau[k]
            Pp[k] = tb[k] @ P[k]
            if self.parent[k] > 0:
                P[self.parent[k]] += self.X[k].T @ Pp[k] @ self.X[k]
        for k in keys:
            par = self.parent[k]
            Yp[k] = self.X[k] @ Y[par] @ self.X[k].T if par > 0 else np.zeros((6, 6))
            Y[k] = tb[k].T @ Yp[k] @ tb[k] + self.S[k] @ np.linalg.inv(D[k]) @ self.S[k].T
        return {"P": P, "Pp": Pp, "D": D, "G": G, "tau": tau, "tb": tb, "Y": Y, "Yp": Yp}


def _close(a, b, what, rtol=1e-9):
    b = np.asarray(b, float)
    assert_close(a, b, rtol=rtol, atol=rtol * max(1.0, float(np.max(np.abs(b)))), what=what)


def _differs(a, b, what, factor=1e-6):
    scale = max(float(np.max(np.abs(b))), 1e-300)
    assert float(np.max(np.abs(np.asarray(a) - np.asarray(b)))) > factor * scale, f"{what} should differ"


# ------------------------------------------------------------------------------------------------
# golden case GT-1 (spec §4): a U-joint partitioned by one massless body


def _gt1():
    m = loopdyn.Model("gt1")
    m.add_body("b2", 0, Revolute((0, 0, 1)), None, Inertia(3.0, (0.5, 0, 0), np.diag([0.1, 0.2, 0.3])))
    m.add_body("k1p", "b2", Revolute((0, 0, 1)), (np.eye(3), np.array([1.0, 0, 0])), Inertia.zero())
    m.add_body("b1", "k1p", Revolute((1, 0, 0)), None,
               Inertia(2.0, (0.1, 0.2, 0.3), np.diag([0.3, 0.4, 0.5])))
    return m, np.array([0.7, 0.3, 0.5])


def test_golden_case_gt1_loopdyn():
    m, q = _gt1()
    d = m.create_data()
    order = [2, 1, 0]  # the spec's order (q2, q1, q_b)
    M = loopdyn.crba(m, d, q)
    M_ref = np.array([[0.56, -0.0718319753, -0.7580690458], [-0.0718319753, 0.4990234818, 0.6713613882],
                      [-0.7580690458, 0.6713613882, 3.8936992945]])
    assert_close(M[np.ix_(order, order)], M_ref, rtol=0, atol=2e-10)
    v = np.array([0.1, -0.2, 0.4])
    acc = loopdyn.aba(m, d, q, v, np.zeros(3))
    assert_close(acc[order], [-1.5233307759, 0.2098793984, -0.3269892792], rtol=0, atol=2e-10)
    Y = loopdyn.body_compliances(m, d, q)
    diag = [2.4791366839, 0.4723650935, 1.5827467747, 0.039794929, 0.3202890361, 0.0955891131]
    assert_close(np.diag(Y[3]), np.array(diag)[PIN], rtol=0, atol=2e-9)
    F = loopdyn.mass_matrix_factor(m, d, q)
    assert_close(np.diag(F.D_matrix())[1:], [0.4898094949, 0.56], rtol=0, atol=2e-10)


def test_golden_case_gt1_dense_reference():
    m, q = _gt1()
    dense = Dense(m, m.create_data(), q)
    part = dense.sweep()
    assert_close(part["G"][3][:, 0], [1, -0.0714285714, -0.1071428571, 0, -1.0714285714, 0.7142857143],
                 rtol=0, atol=2e-10)
    assert_close(part["G"][2][:, 0], [0, -0.134030132, 1, -0.1293925541, 0.22020833, 0.0165973621],
                 rtol=0, atol=2e-9)
    un = copy.deepcopy(dense)
    un.merge(3)
    u = un.sweep()
    assert_close(u["D"][3], [[0.56, -0.0718319753], [-0.0718319753, 0.4990234818]], rtol=0, atol=2e-10)
    assert_close(u["G"][3].T, [[1, -0.0250195956, 0.0136682674, -0.0165973621, -1.0456193184, 0.7026119996],
                               [0, 0.361803032, 0.9418400301, -0.1293925541, 0.2012081897, -0.0910079417]],
                 rtol=0, atol=2e-9)
    assert_close(np.diag(u["P"][1]), [0.1604431184, 3.9530372737, 2.1945558075, 4.9020931995, 4.1445558075,
                                      4.9926923334], rtol=0, atol=2e-9)
    _close(part["P"][1], u["P"][1], "P_u(2) = P(2)")
    _close(part["Y"][3], u["Y"][3], "Υ_u(1) = Υ(1)")


# ------------------------------------------------------------------------------------------------
# the identities at partitioned joints of random trees

# (tree index, free-flyer rotation, which partitioned joint (index into map.joints), n_out): the
# k″ group is the last n_out sub-hinge bodies of the chain, k′ the rest merged into one massless body
SPLITS = [
    (3, "spherical", 0, 1),  # spherical → z | y, x  : n″ = 1, n′ = 2
    (3, "spherical", 0, 2),  # n″ = 2, n′ = 1
    (4, "spherical", 0, 1),  # free flyer → (x, y, z) | spherical : n″ = 3, n′ = 3 (n″ + n′ = 6)
    (4, "euler", 0, 2),  # free flyer → (x, y, z, rz) | (ry, rx) : n″ = 2, n′ = 4
    (4, "euler", 0, 4),  # n″ = 4, n′ = 2
    (9, "euler", 1, 2),  # a spherical joint inside a floating tree
    (18, "spherical", 0, 1),
    (19, "euler", 0, 3),  # n″ = 3, n′ = 3 with a subtree below
]


def _setup(index, rot, which, n_out):
    lm, _ = trees.tree_case(index, with_pinocchio=False)
    lp, mp = loopdyn.partition(lm, free_flyer_rotation=rot)
    pj = mp.joints[which]
    rng = np.random.default_rng(100 + index)
    while True:
        q = trees.random_configuration(rng, lm)
        qp = mp.to_partitioned_q(q)
        thetas = [qp[j.iq_p + (4 if j.kind == "free-flyer" else 1)] for j in mp.joints if j.euler]
        if all(abs(np.cos(t)) > 0.3 for t in thetas):
            break
    dp = lp.create_data()
    dense = Dense(lp, dp, qp)
    chain = list(pj.bodies)
    k = chain[-1]
    for _ in range(n_out - 1):
        dense.merge(k)  # the k″ group: outboard sub-hinges on the physical body
    inner = chain[: len(chain) - n_out]
    kp = inner[-1]
    for _ in range(len(inner) - 1):
        dense.merge(kp)  # the k′ group: one massless body
    return lm, lp, mp, pj, q, qp, dp, dense, k, kp


SPLIT_IDS = [f"tree{s[0]}-{s[1]}-j{s[2]}-{s[3]}" for s in SPLITS]


@pytest.mark.parametrize("index,rot,which,n_out", SPLITS, ids=SPLIT_IDS)
def test_partitioning_identities(index, rot, which, n_out):
    lm, lp, mp, pj, q, qp, dp, part_tree, k, kp = _setup(index, rot, which, n_out)
    un_tree = copy.deepcopy(part_tree)
    un_tree.merge(k)
    p, u = part_tree.sweep(), un_tree.sweep()
    n2, n1 = part_tree.S[k].shape[1], part_tree.S[kp].shape[1]  # n″, n′
    assert n2 == sum(lp.bodies[b - 1].joint.nv for b in pj.bodies[len(pj.bodies) - n_out:])
    phi = part_tree.X[k].T  # φ(k′,k); φ*(k′,k) = X_k
    Hpp = part_tree.S[k].T  # H(k″)
    Hc = part_tree.S[kp].T @ phi  # H_C(k) = H(k′) φ(k′,k)  (n′ × 6)
    P, Pp, D, G, tau, tb = (p[x][k] for x in ("P", "Pp", "D", "G", "tau", "tb"))
    Dk1, Gk1, tauk1, tbk1 = p["D"][kp], p["G"][kp], p["tau"][kp], p["tb"][kp]
    Pu, Ppu, Du, Gu, tauu, tbu = (u[x][k] for x in ("P", "Pp", "D", "G", "tau", "tb"))
    D1inv = np.linalg.inv(Dk1)

    # Lemma 2.1 holds for the partition: Eq. 5a against the original joint's placement, Eq. 5b against
    # the original joint's motion subspace and the map's velocity matrix (natural column order)
    d = lm.create_data()
    orig = Dense(lm, d, q)
    ko = int(np.nonzero(mp.body_map == k)[0][0])
    _close(un_tree.X[k], orig.X[ko], "Eq. 5a: φ_u = φ(k+1,k′) φ(k′,k)")
    b = lm.bodies[ko - 1]
    Tb = mp.velocity_map(qp)[b.idx_v : b.idx_v + b.joint.nv][:, un_tree.labels[k]]
    # (the joint's block of T, columns in the merged hinge's order)
    assert b.joint.nv == un_tree.S[k].shape[1] == n2 + n1
    _close(un_tree.S[k], orig.S[ko] @ Tb, "Eq. 5b: H_u* = H_orig* T")
    # Eq. 17/18/19, on the merged hinge and on the original joint (coordinate-invariant quantities)
    o = orig.sweep()
    _close(Pu, P, "Eq. 17: P_u(k) = P(k)")
    _close(o["P"][ko], P, "Eq. 17 (original joint)")
    rank_n1 = Pp @ Hc.T @ D1inv @ Hc @ Pp
    _close(Ppu, Pp - rank_n1, "Eq. 18")
    if b.joint.nv == un_tree.S[k].shape[1]:  # the whole joint merged: compare with the original joint
        _close(o["Pp"][ko], Pp - rank_n1, "Eq. 18 (original joint)")
        _close(o["tb"][ko], tb - Pp @ Hc.T @ D1inv @ Hc @ tb, "Eq. 11b (original joint)")
        _close(o["Y"][ko], p["Y"][k], "Eq. 24 (original joint)")
    _close(phi @ Ppu @ phi.T, p["Pp"][kp], "Eq. 19")
    _close(p["P"][kp], phi @ Pp @ phi.T, "P(k′) = φ P⁺(k) φ*")
    # Lemma 3.1
    Du_ref = np.block([[D, Hpp @ P @ Hc.T], [Hc @ P @ Hpp.T, Hc @ P @ Hc.T]])
    _close(Du, Du_ref, "Eq. 9a")
    Dinv_blk = np.zeros((n2 + n1, n2 + n1))
    Dinv_blk[:n2, :n2] = np.linalg.inv(D)
    left = np.vstack([-G.T @ Hc.T, np.eye(n1)])
    right = np.hstack([-Hc @ G, np.eye(n1)])
    _close(np.linalg.inv(Du), Dinv_blk + left @ D1inv @ right, "Eq. 9b")
    schur = Du[n2:, n2:] - Du[n2:, :n2] @ np.linalg.solve(D, Du[:n2, n2:])
    _close(schur, Hc @ Pp @ Hc.T, "F₂")
    _close(schur, Dk1, "F₂ = D(k′)")
    assert np.all(np.linalg.eigvalsh(Dk1) > 0)
    _close(np.linalg.det(Du), np.linalg.det(D) * np.linalg.det(Dk1), "F₂′")
    _close(Gu, np.hstack([G, np.zeros((6, n1))]) + Pp @ Hc.T @ D1inv @ right, "Eq. 10")
    _close(tauu, tau + Pp @ Hc.T @ D1inv @ Hc @ tb, "Eq. 11a")
    _close(tbu, tb - Pp @ Hc.T @ D1inv @ Hc @ tb, "Eq. 11b")
    # Lemma 3.2
    _close(phi @ Gu, np.hstack([tbk1 @ phi @ G, Gk1]), "Eq. 14")
    _close(phi @ tauu, phi @ tau + tauk1 @ phi @ tb, "Eq. 15a")
    _close(phi @ tbu, tbk1 @ phi @ tb, "Eq. 15b")
    phi_up = part_tree.X[kp].T  # φ(k+1,k′)
    _close(un_tree.X[k].T @ tbu, (phi_up @ tbk1) @ (phi @ tb), "ψ_u(k+1,k) = ψ(k+1,k′) ψ(k′,k)")
    Hu = un_tree.S[k].T
    rhs16 = Hpp.T @ np.linalg.inv(D) @ Hpp + tb.T @ Hc.T @ D1inv @ Hc @ tb
    _close(Hu.T @ np.linalg.inv(Du) @ Hu, rhs16, "Eq. 16")
    # Lemma 4.1
    _close(u["Y"][k], p["Y"][k], "Eq. 24")
    _close(u["Yp"][k], phi.T @ p["Yp"][kp] @ phi, "Eq. 25")
    # loopdyn's O(n) sweep on the partitioned model: Υ of the physical and of the massless body
    Y = loopdyn.body_compliances(lp, dp, qp)
    _close(Y[k], p["Y"][k][np.ix_(PIN, PIN)], "body_compliances, physical body")
    _close(Y[kp], p["Y"][kp][np.ix_(PIN, PIN)], "body_compliances, massless body")

    # negative controls (spec §5.1 item 7): the per-hinge gains do not agree individually
    _differs(Ppu, Pp, "P_u⁺ vs P⁺")
    _differs(Gu, np.hstack([G, np.zeros((6, n1))]), "G_u vs [G, 0]")
    _differs(tbu, tb, "τ̄_u vs τ̄")
    _differs(Du, np.block([[D, np.zeros((n2, n1))], [np.zeros((n1, n2)), Dk1]]), "D_u vs blockdiag")
    _differs(u["Yp"][k], p["Yp"][k], "Υ_u⁺ vs Υ⁺")
    # the β ordering [β(k′); β(k″)] without permuting breaks the block form of Eq. 9a
    swapped = np.hstack([un_tree.S[k][:, n2:], un_tree.S[k][:, :n2]])
    _differs(swapped.T @ P @ swapped, Du_ref, "Eq. 9a with the k′ block first")


@pytest.mark.parametrize("index,rot,which,n_out", [SPLITS[2], SPLITS[3], SPLITS[7]],
                         ids=["ff-spherical", "ff-euler", "tree19"])
def test_negative_control_mass_on_the_intermediate_body(index, rot, which, n_out):
    """With M(k′) ≠ 0 the equivalence fails (Eq. 17 at the parent, Eq. 24 at k)."""
    lm, lp, mp, pj, q, qp, dp, part_tree, k, kp = _setup(index, rot, which, n_out)
    rng = np.random.default_rng(0)
    mass, com, I_com = trees.random_inertia(rng)
    heavy = copy.deepcopy(part_tree)
    heavy.M[kp] = 1e-3 * Inertia(mass, com, I_com).matrix()
    un_tree = copy.deepcopy(heavy)
    un_tree.merge(k, check_massless=False)  # drops M(k′): the "equivalent" unpartitioned model
    h, u = heavy.sweep(), un_tree.sweep()
    _close(h["P"][k], u["P"][k], "P(k) itself does not see M(k′)")
    _differs(h["Y"][k], u["Y"][k], "Υ(k) with a massive k′", 1e-7)
    par = heavy.parent[kp]
    if par > 0:
        _differs(h["P"][par], u["P"][par], "P(k+1) with a massive k′", 1e-7)


def test_negative_control_force_on_the_intermediate_body():
    """b(k′) ≠ 0 (a force on the massless body) changes the accelerations but not the compliances."""
    lm, _ = trees.tree_case(9, with_pinocchio=False)
    lp, mp = loopdyn.partition(lm, free_flyer_rotation="euler")
    rng = np.random.default_rng(2)
    q, v, _ = trees.random_state(rng, lm)
    tau = rng.normal(size=lm.nv)
    qp, vp = mp.to_partitioned_q(q), mp.to_partitioned_v(q, v)
    d, dp = lm.create_data(), lp.create_data()
    a_ref = mp.to_partitioned_a(q, v, loopdyn.aba(lm, d, q, v, tau))
    taup = mp.to_partitioned_tau(q, tau)
    _close(loopdyn.aba(lp, dp, qp, vp, taup), a_ref, "control: no force on k′")
    f = np.zeros((lp.njoints, 6))
    f[mp.massless_bodies[0]] = rng.normal(size=6)
    _differs(loopdyn.aba(lp, dp, qp, vp, taup, f), a_ref, "θ̈ with b(k′) ≠ 0")


def _crm(V):
    """Featherstone's motion cross-product matrix V×ₘ ([angular; linear])."""
    w, v = V[:3], V[3:]
    out = np.zeros((6, 6))
    out[:3, :3] = out[3:, 3:] = _skew(w)
    out[3:, :3] = _skew(v)
    return out


# (tree, free-flyer rotation, joint, whether the massless sub-hinges contribute: a chain of prismatic
# sub-hinges at the root has V × S β = 0 on every massless body)
CORIOLIS = [(3, "spherical", 0, True), (4, "euler", 0, True), (4, "spherical", 0, False),
            (19, "euler", 0, True)]


@pytest.mark.parametrize("index,rot,which,control", CORIOLIS)
def test_coriolis_consistency_eq_5c(index, rot, which, control):
    """Eq. 5c (spec §5.1 item 2): the Coriolis term of the unpartitioned compound hinge,
    c_u(k) = V(k) ×ₘ (H_u* β_u) + Ḣ_u* β_u with Ḣ_u* by finite differences, equals the sum of the
    sub-hinges' own terms carried to k, Σⱼ φ*(j,k) a(j) with a(j) = V(j) ×ₘ (H*(j) β(j))."""
    lm, _ = trees.tree_case(index, with_pinocchio=False)
    lp, mp = loopdyn.partition(lm, free_flyer_rotation=rot)
    pj = mp.joints[which]
    rng = np.random.default_rng(7)
    qp = mp.to_partitioned_q(trees.random_configuration(rng, lm))
    vp = rng.normal(size=lp.nv)
    dp = lp.create_data()
    loopdyn.forward_kinematics(lp, dp, qp, vp)
    V = dp.v[:, PIN]  # Pinocchio [linear; angular] → [angular; linear]
    chain = list(pj.bodies)
    k = chain[-1]

    def merged(qx):
        t = Dense(lp, lp.create_data(), qx)
        for _ in range(len(chain) - 1):
            t.merge(k)
        return t

    base = Dense(lp, lp.create_data(), qp)
    un = merged(qp)
    beta = vp[un.labels[k]]
    h = 1e-6
    S_plus = merged(loopdyn.integrate(lp, qp, h * vp)).S[k]
    dS = (S_plus - merged(loopdyn.integrate(lp, qp, -h * vp)).S[k]) / (2 * h)
    c_u = _crm(V[k]) @ un.S[k] @ beta + dS @ beta
    total, own = np.zeros(6), None
    for j in chain:
        bj = lp.bodies[j - 1]
        a_j = _crm(V[j]) @ base.S[j] @ vp[bj.idx_v : bj.idx_v + bj.joint.nv]
        Xjk = np.eye(6)  # motion transform from body j to body k along the chain
        m = k
        while m != j:
            Xjk = Xjk @ base.X[m]
            m = base.parent[m]
        total += Xjk @ a_j
        own = a_j if j == k else own
    assert_close(c_u, total, rtol=1e-6, atol=1e-6 * max(1.0, np.abs(total).max()), what="Eq. 5c")
    if control:
        _differs(c_u, own, "c_u vs the outboard sub-hinge's own term alone")


@pytest.mark.parametrize("index,rot", [(4, "euler"), (9, "spherical"), (18, "spherical")])
def test_operator_forms_on_the_partitioned_model(index, rot):
    """Spec §5.1 item 9 on a model with massless bodies, with dense system-level operators (E_φ, φ, H,
    K = E_φ G, ψ = (I − E_φ τ̄)⁻¹): V = φ* H* β, 𝓜 = HφMφ*H*, 𝒞 = Hφ(Mφ*a + b), the innovations
    factorisation and its inverse, and the operator form of forward dynamics
    θ̈ = [I − HψK]* D⁻¹ [𝒯 − Hψ(K𝒯 + P a + b)] − K*ψ* a — against loopdyn's FK, CRBA, RNEA, ABA and
    mass_matrix_factor on the partitioned model."""
    lm, _ = trees.tree_case(index, with_pinocchio=False)
    lp, mp = loopdyn.partition(lm, free_flyer_rotation=rot)
    rng = np.random.default_rng(11)
    while True:
        q = trees.random_configuration(rng, lm)
        qp = mp.to_partitioned_q(q)
        thetas = [qp[j.iq_p + (4 if j.kind == "free-flyer" else 1)] for j in mp.joints if j.euler]
        if all(abs(np.cos(t)) > 0.3 for t in thetas):
            break
    vp, tau = rng.normal(size=lp.nv), rng.normal(size=lp.nv)
    dp = lp.create_data()
    t = Dense(lp, dp, qp)
    sw = t.sweep()
    keys = sorted(t.parent)
    blk = {k: slice(6 * i, 6 * i + 6) for i, k in enumerate(keys)}
    n6, nv = 6 * len(keys), lp.nv
    shapes = ((n6, n6), (nv, n6), (n6, n6), (n6, n6), (n6, nv), (n6, n6))
    E, H, Mb, Pb, Gb, TBb = (np.zeros(s) for s in shapes)
    Db = np.zeros((nv, nv))
    for k in keys:
        lab = t.labels[k]
        if t.parent[k] > 0:
            E[blk[t.parent[k]], blk[k]] = t.X[k].T  # φ(℘(k), k)
        H[lab, blk[k]] = t.S[k].T
        Mb[blk[k], blk[k]] = t.M[k]
        Pb[blk[k], blk[k]] = sw["P"][k]
        Gb[blk[k], lab] = sw["G"][k]
        TBb[blk[k], blk[k]] = sw["tb"][k]
        Db[np.ix_(lab, lab)] = sw["D"][k]
    I6n, Inv = np.eye(n6), np.eye(nv)
    phi = np.linalg.inv(I6n - E)
    psi = np.linalg.inv(I6n - E @ TBb)
    K = E @ Gb
    V = phi.T @ H.T @ vp
    loopdyn.forward_kinematics(lp, dp, qp, vp)
    for k in keys:
        _close(V[blk[k]], dp.v[k][PIN], f"V({k}) = φ* H* β")
    # Coriolis a(k) (with the base acceleration −g seeded into the root's children) and gyroscopic b(k)
    a, b = np.zeros(n6), np.zeros(n6)
    g0 = np.r_[0.0, 0.0, 0.0, -lp.gravity]
    for k in keys:
        Vk = V[blk[k]]
        lab = t.labels[k]
        a[blk[k]] = _crm(Vk) @ t.S[k] @ vp[lab]
        if t.parent[k] == 0:
            a[blk[k]] += t.X[k] @ g0
        b[blk[k]] = -_crm(Vk).T @ t.M[k] @ Vk
    Mass = H @ phi @ Mb @ phi.T @ H.T
    _close(Mass, loopdyn.crba(lp, dp, qp), "𝓜 = HφMφ*H*")
    _close(H @ phi @ (Mb @ phi.T @ a + b), loopdyn.nonlinear_effects(lp, dp, qp, vp), "𝒞 = Hφ(Mφ*a + b)")
    L = Inv + H @ phi @ K
    _close(L @ Db @ L.T, Mass, "innovations factorisation")
    _close(np.linalg.inv(L), Inv - H @ psi @ K, "[I + HφK]⁻¹ = I − HψK")
    Linv = Inv - H @ psi @ K
    _close(Linv.T @ np.linalg.inv(Db) @ Linv, np.linalg.inv(Mass), "𝓜⁻¹ factorisation")
    F = loopdyn.mass_matrix_factor(lp, dp, qp)
    _close(F.factor_matrix(), L, "mass_matrix_factor: I + HφK")
    _close(F.factor_inverse_matrix(), Linv, "mass_matrix_factor: I − HψK")
    _close(F.D_matrix(), Db, "mass_matrix_factor: D")
    rhs = tau - H @ psi @ (K @ tau + Pb @ a + b)
    acc = Linv.T @ np.linalg.solve(Db, rhs) - K.T @ psi.T @ a
    _close(acc, loopdyn.aba(lp, dp, qp, vp, tau), "operator forward dynamics = ABA")
