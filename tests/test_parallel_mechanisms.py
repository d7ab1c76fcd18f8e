"""Multi-DoF joints inside loops (issue #12 item 3): the RSSR linkage and the delta robot of
:mod:`loopdyn.robots.parallel` (ball and universal joints as revolute sub-hinge chains with massless
bodies, Jain's partitioning Lemma 2.1; loops closed by ``"point"`` and ``"universal"`` loop joints).

Oracles, on 20+ random states of each mechanism:

* the projection and Lagrange baselines of :mod:`loopdyn.baselines` (G, g from their own sympy maps);
* a dense KKT system on the spanning tree assembled here from **Pinocchio** alone: Pinocchio's CRBA
  and RNEA of the spanning tree (built here from the bodies' placements, axes and inertias), and the
  loop-closure rows K, k written from Pinocchio's frame Jacobians and accelerations (point: the two
  loop points' world velocities; universal: the rate of the two axes' dot product). G, g follow from
  K, k with the model's choice of independent joints; ``Gᵀ H G`` and ``J (GᵀHG)⁻¹ Jᵀ`` give the
  oracle mass matrix and Delassus matrix;
* Pinocchio's ``constraintDynamics`` (CONTACT_3D between the two bodies) for the RSSR, whose closure
  is a 3-D point constraint. (Pinocchio has no universal-joint constraint model: not for the delta.)

Energy: passive motion (gravity, τ = 0) integrated for 2 s by classical RK4 with configuration
projection; the energy is computed by Pinocchio. Negative controls: a mass on a sub-hinge body that the
oracle does not have, and the oracle without its loop rows, both break the agreement.
"""

from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
import pytest

import loopdyn
from loopdyn.baselines import (
    lagrange_forward_dynamics,
    projected_delassus,
    projected_mass_matrix,
    projected_rnea,
    projection_forward_dynamics,
)
from loopdyn.errors import ConfigurationError, InputError, JointConversionWarning, ModelError
from loopdyn.model.joints import Revolute, Spherical
from loopdyn.robots import parallel
from loopdyn.spatial.inertia import Inertia

TOL = 1e-9
N_STATES = 20
ROBOTS = ("rssr_linkage", "delta_robot")
#: link constraints for the Delassus checks
CONSTRAINTS = {
    "rssr_linkage": [
        loopdyn.Constraint("rocker", "3d", (np.eye(3), np.array([0.0, 0.0, -0.1]))),
        loopdyn.Constraint("rod", "6d", (np.eye(3), np.array([0.05, 0.0, 0.0]))),
    ],
    "delta_robot": [
        loopdyn.Constraint("platform_centre", "3d"),
        loopdyn.Constraint("forearm_2", "6d", (np.eye(3), np.array([0.0, 0.0, -0.2]))),
        loopdyn.Constraint("arm_3", "3d", (np.eye(3), np.array([0.2, 0.0, 0.0]))),
    ],
}


def rel_err(a, b) -> float:
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(np.max(np.abs(a - b))) / max(1e-300, float(np.max(np.abs(b))))


# ---- the Pinocchio oracle -------------------------------------------------------------------------
def _supports(model, j):
    out = set()
    while j:
        out.add(j)
        j = model.bodies[j - 1].parent
    return out


class Oracle:
    """The spanning tree of a loopdyn model in Pinocchio, and its loop rows K, k (see the module
    docstring). Body i of the model is Pinocchio's joint i (regular order)."""

    def __init__(self, model: loopdyn.Model, loops: bool = True):
        # Pinocchio's CRBA needs every subtree's joints contiguous (depth-first order)
        for i in range(1, model.nbodies + 1):
            sub = [j for j in range(i, model.nbodies + 1) if i in _supports(model, j)]
            assert sub == list(range(i, i + len(sub))), f"{model.name}: not depth first at body {i}"
        pm = pin.Model()
        pm.gravity = pin.Motion(np.r_[model.gravity, 0.0, 0.0, 0.0])
        for b in model.bodies:
            assert b.joint.code == Revolute.code
            jid = pm.addJoint(
                b.parent,
                pin.JointModelRevoluteUnaligned(np.array(b.joint.axis)),
                pin.SE3(b.rotation, b.translation),
                b.joint_name,
            )
            pm.appendBodyToJoint(
                jid, pin.Inertia(b.inertia.mass, b.inertia.com, b.inertia.inertia), pin.SE3.Identity()
            )
        self.pm, self.pd = pm, pm.createData()
        self.loops = []
        for con in model.constraints if loops else []:
            ja, jb = model.body_id(con.predecessor), model.body_id(con.successor)
            fa = pm.addFrame(
                pin.Frame(f"{con.name}_a", ja, 0, pin.SE3(*con.predecessor_placement), pin.OP_FRAME)
            )
            fb = pm.addFrame(
                pin.Frame(f"{con.name}_b", jb, 0, pin.SE3(*con.successor_placement), pin.OP_FRAME)
            )
            self.loops.append((con, fa, fb))
        self.pd = pm.createData()
        (c,) = model.clusters().clusters  # one cluster holding every body, spanning order
        assert model.clusters().position_names == model.joint_names[1:]
        self.ind, self.dep = list(c.independent), list(c.dependent)
        self.nvs = model.spanning_nv

    def loop_rows(self, qs, vs):
        """K (rows × nvs) and k = −K̇ q̇ at (qs, vs)."""
        pm, pd = self.pm, self.pd
        pin.forwardKinematics(pm, pd, qs, vs, np.zeros(self.nvs))
        pin.computeJointJacobians(pm, pd, qs)
        pin.updateFramePlacements(pm, pd)
        W = pin.LOCAL_WORLD_ALIGNED
        K, k = [], []
        for con, fa, fb in self.loops:
            Ja, Jb = (pin.getFrameJacobian(pm, pd, f, W) for f in (fa, fb))
            aa, ab = (pin.getFrameClassicalAcceleration(pm, pd, f, W) for f in (fa, fb))
            K += list(Ja[:3] - Jb[:3])
            k += list(-(aa.linear - ab.linear))
            if con.kind == "universal":
                a = pd.oMf[fa].rotation @ np.array(con.axis)
                b = pd.oMf[fb].rotation @ np.array(con.successor_axis)
                wa, wb = (pin.getFrameVelocity(pm, pd, f, W).angular for f in (fa, fb))
                axb = np.cross(a, b)
                K.append(axb @ (Ja[3:] - Jb[3:]))
                dot_axb = np.cross(np.cross(wa, a), b) + np.cross(a, np.cross(wb, b))
                k.append(-(dot_axb @ (wa - wb) + axb @ (aa.angular - ab.angular)))
            else:
                assert con.kind == "point"
        return np.array(K).reshape(-1, self.nvs), np.array(k)

    def G_g(self, qs, vs):
        K, k = self.loop_rows(qs, vs)
        G = np.zeros((self.nvs, len(self.ind)))
        g = np.zeros(self.nvs)
        G[self.ind, range(len(self.ind))] = 1.0
        if K.shape[0]:
            Kd = K[:, self.dep]
            G[self.dep] = -np.linalg.solve(Kd, K[:, self.ind])
            g[self.dep] = np.linalg.solve(Kd, k)
        return G, g, K, k

    def mass_matrix(self, qs):
        H = pin.crba(self.pm, self.pd, qs)
        return np.triu(H) + np.triu(H, 1).T

    def kkt(self, qs, vs, tau):
        """Spanning accelerations of the dense KKT system, τ on the independent joints."""
        H = self.mass_matrix(qs)
        C = pin.rnea(self.pm, self.pd, qs, vs, np.zeros(self.nvs))
        K, k = self.loop_rows(qs, vs)
        ts = np.zeros(self.nvs)
        ts[self.ind] = tau
        n, r = self.nvs, K.shape[0]
        A = np.zeros((n + r, n + r))
        A[:n, :n], A[n:, :n], A[:n, n:] = H, K, K.T
        return np.linalg.solve(A, np.r_[ts - C, k])[:n]

    def energy(self, qs, vs):
        H = self.mass_matrix(qs)
        com = pin.centerOfMass(self.pm, self.pd, qs)
        mass = sum(I.mass for I in self.pm.inertias)
        return 0.5 * vs @ H @ vs - mass * (np.asarray(self.pm.gravity.linear) @ com)

    def delassus(self, qs, G, model, constraints):
        pm, pd = self.pm, self.pd
        pin.computeJointJacobians(pm, pd, qs)
        pin.updateFramePlacements(pm, pd)
        rows = []
        for c in constraints:
            f = model.frames[model.frame_id(c.body)] if isinstance(c.body, str) else None
            R, p = (
                (np.array(c.placement[0]).reshape(3, 3), np.array(c.placement[1]))
                if c.placement
                else (np.eye(3), np.zeros(3))
            )
            M = pin.SE3(f.rotation, f.translation) * pin.SE3(R, p)
            J = pin.getFrameJacobian(pm, pd, f.body, M, pin.LOCAL)  # rows [linear; angular]
            rows.append(J[:3] if c.kind == "3d" else J)
        J = np.vstack(rows) @ G
        A = G.T @ self.mass_matrix(qs) @ G
        return J @ np.linalg.solve(A, J.T)


@pytest.fixture(scope="module", params=ROBOTS)
def robot(request):
    model = loopdyn.robots.build(request.param)
    return request.param, model, Oracle(model)


def states(model, seed, n=N_STATES):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        q = loopdyn.random_configuration(model, rng)
        yield q, rng.normal(size=model.nv), rng.normal(size=model.nv), rng.normal(size=model.nv)


# ---- structure ------------------------------------------------------------------------------------
def test_rssr_structure():
    m = loopdyn.robots.rssr_linkage()
    assert (m.nbodies, m.spanning_nq, m.nq, m.nv) == (5, 5, 5, 2)
    (c,) = m.clusters().clusters
    assert m.velocity_names == ["crank", "rod_3"]  # the crank and the rod's spin
    assert [m.bodies[b - 1].inertia.mass for b in c.bodies] == [0.05, 0.0, 0.0, 0.12, 0.08]
    assert [k.kind for k in m.constraints] == ["point"]
    assert np.max(np.abs(loopdyn.constraint_residual(m, loopdyn.neutral(m)))) <= 1e-16


def test_delta_structure():
    m = loopdyn.robots.delta_robot()
    assert (m.nbodies, m.spanning_nq, m.nq, m.nv) == (11, 11, 11, 3)
    assert m.velocity_names == ["motor_1", "motor_2", "motor_3"]
    assert [k.kind for k in m.constraints] == ["universal", "universal"]
    (c,) = m.clusters().clusters
    assert (c.rows_total, len(c.rows)) == (8, 8)
    assert np.max(np.abs(loopdyn.constraint_residual(m, loopdyn.neutral(m)))) <= 1e-15


def test_delta_platform_only_translates():
    """Three R-U-U legs with the parallelogram's hinge directions keep the platform's orientation."""
    m = loopdyn.robots.delta_robot()
    tree = loopdyn.spanning_tree(m)
    data = tree.create_data()
    rng = np.random.default_rng(2)
    centres = []
    for _ in range(10):
        qs, _ = loopdyn.to_spanning(m, loopdyn.random_configuration(m, rng))
        loopdyn.forward_kinematics(tree, data, qs)
        X = loopdyn.frame_placement(tree, data, "platform_centre")
        np.testing.assert_allclose(X[:3, :3], np.eye(3), rtol=0, atol=1e-10)
        centres.append(X[:3, 3])
    assert np.ptp(np.array(centres), axis=0).min() > 1e-2  # it does move, in every direction


def test_rssr_gimbal_stays_away_from_its_singularity():
    """Over a whole crank turn on the reference branch |cos(rod_2)| ≥ 0.998 (the docstring's range)."""
    m = loopdyn.robots.rssr_linkage()
    q = loopdyn.neutral(m)
    worst = 1.0
    for th in np.linspace(0.0, 2 * np.pi, 181)[1:]:
        q[0] = th
        q = loopdyn.project_configuration(m, q)
        worst = min(worst, abs(math.cos(q[2])))
    assert worst >= 0.998


# ---- against the baselines and the Pinocchio KKT oracle -------------------------------------------
def test_against_baselines_and_pinocchio_kkt(robot):
    name, model, oracle = robot
    data = model.create_data()
    for q, v, a, tau in states(model, 7):
        qs = q.copy()  # one cluster of every body: the cluster state is the spanning configuration
        G, g, _, _ = oracle.G_g(qs, np.zeros(model.spanning_nv))
        vs = G @ v
        G, g, _, _ = oracle.G_g(qs, vs)
        H = oracle.mass_matrix(qs)
        # mass matrix
        M = loopdyn.crba(model, data, q)
        assert rel_err(M, G.T @ H @ G) <= TOL
        assert rel_err(M, projected_mass_matrix(model, q)) <= TOL
        # C-RNEA
        tau_c = loopdyn.rnea(model, data, q, v, a)
        assert rel_err(tau_c, G.T @ pin.rnea(oracle.pm, oracle.pd, qs, vs, G @ a + g)) <= TOL
        assert rel_err(tau_c, projected_rnea(model, q, v, a)) <= TOL
        # C-ABA
        ydd = loopdyn.aba(model, data, q, v, tau)
        qdd = oracle.kkt(qs, vs, tau)
        assert rel_err(ydd, qdd[oracle.ind]) <= TOL
        assert rel_err(G @ ydd + g, qdd) <= TOL
        assert rel_err(ydd, projection_forward_dynamics(model, q, v, tau)) <= TOL
        assert rel_err(ydd, lagrange_forward_dynamics(model, q, v, tau)) <= TOL
        # Delassus (cluster methods)
        cons = CONSTRAINTS[name]
        expected = oracle.delassus(qs, G, model, cons)
        assert rel_err(expected, projected_delassus(model, q, cons)) <= TOL
        for method in ("c-pv-osimr", "c-efpa", "dense", "projected"):
            assert rel_err(loopdyn.delassus(model, data, q, cons, method), expected) <= TOL, method


def test_rssr_against_pinocchio_constraint_dynamics():
    """The RSSR's ball loop joint is Pinocchio's CONTACT_3D between the rod and the rocker."""
    model = loopdyn.robots.rssr_linkage()
    oracle = Oracle(model)
    pm = oracle.pm
    (con,) = model.constraints
    cm = pin.RigidConstraintModel(
        pin.ContactType.CONTACT_3D,
        pm,
        model.body_id(con.predecessor),
        pin.SE3(*con.predecessor_placement),
        model.body_id(con.successor),
        pin.SE3(*con.successor_placement),
        pin.ReferenceFrame.LOCAL,
    )
    cms = pin.StdVec_RigidConstraintModel()
    cms.append(cm)
    cds = pin.StdVec_RigidConstraintData()
    cds.append(cm.createData())
    pd = pm.createData()
    pin.initConstraintDynamics(pm, pd, cms, cds)
    prox = pin.ProximalSettings(1e-14, 1e-12, 200)
    data = model.create_data()
    for q, v, _, tau in states(model, 19):
        G, g, _, _ = oracle.G_g(q, np.zeros(model.spanning_nv))
        vs = G @ v
        ts = np.zeros(model.spanning_nv)
        ts[oracle.ind] = tau
        qdd_pin = pin.constraintDynamics(pm, pd, q, vs, ts, cms, cds, prox)
        qs, vs2, qdd = loopdyn.to_spanning(model, q, v, loopdyn.aba(model, data, q, v, tau))
        assert rel_err(vs2, vs) <= TOL
        assert rel_err(qdd, qdd_pin) <= TOL


# ---- energy ---------------------------------------------------------------------------------------
def rk8_tableau():
    """The 8th-order Runge–Kutta tableau of Dormand & Prince's DOP853 (Hairer, Nørsett, Wanner),
    as SciPy publishes it: A (12 × 12), B (12), C (12)."""
    from scipy.integrate._ivp import dop853_coefficients as dc

    n = dc.N_STAGES
    return dc.A[:n, :n], dc.B, dc.C[:n]


def simulate(model, q, v, dt, duration):
    """A fixed-step 8th-order Runge–Kutta method (DOP853's tableau, no step control) in the
    independent coordinates y: ẏ = v, v̇ = C-ABA(q(y), v, τ = 0), where q(y) is the loop-closed
    configuration (the dependent coordinates projected onto φ = 0 by Newton's method,
    :func:`loopdyn.project_configuration`, at every stage). Returns the energies (Pinocchio)."""
    A, B, C = rk8_tableau()
    oracle = Oracle(model)
    data = model.create_data()
    (c,) = model.clusters().clusters
    ind = c.iq + np.asarray(c.independent)
    last = [q]

    def at(y):
        out = last[0].copy()  # Newton from the latest configuration: same assembly branch
        out[ind] = y
        last[0] = loopdyn.project_configuration(model, out)
        return last[0]

    energies = [oracle.energy(*loopdyn.to_spanning(model, q, v))]
    y = q[ind].copy()
    for _ in range(round(duration / dt)):
        ky, kv = [], []
        for i in range(len(B)):
            yi = y + dt * sum((A[i, j] * ky[j] for j in range(i)), np.zeros_like(y))
            vi = v + dt * sum((A[i, j] * kv[j] for j in range(i)), np.zeros_like(v))
            ky.append(vi)
            kv.append(loopdyn.aba(model, data, at(yi), vi, np.zeros(model.nv)))
        y = y + dt * sum(b * k for b, k in zip(B, ky, strict=True))
        v = v + dt * sum(b * k for b, k in zip(B, kv, strict=True))
        q = at(y)
        energies.append(oracle.energy(*loopdyn.to_spanning(model, q, v)))
    return np.array(energies)


ENERGY_START = {
    # crank turning, the rod spinning slowly
    "rssr_linkage": (None, np.array([3.0, 1.0])),
    # arms 0.8 rad below the reference, released with a small velocity: they swing around the hanging
    # position (about 1.07 rad) and stay regular (σ_min/σ_max of K_d ≥ 0.05 over the 2 s)
    "delta_robot": (np.array([0.8, 0.8, 0.8]), np.array([0.3, -0.2, 0.1])),
}
ENERGY_DT = {"rssr_linkage": 2e-3, "delta_robot": 2e-3}


@pytest.mark.parametrize("name", ROBOTS)
def test_passive_motion_conserves_energy(name):
    model = loopdyn.robots.build(name)
    q = loopdyn.neutral(model)
    lift, v = ENERGY_START[name]
    if lift is not None:
        (c,) = model.clusters().clusters
        q[c.independent] = lift
        q = loopdyn.project_configuration(model, q)
    energies = simulate(model, q, v, dt=ENERGY_DT[name], duration=2.0)
    scale = max(abs(energies[0]), 1e-300)
    drift = float(np.max(np.abs(energies - energies[0]))) / scale
    assert drift <= 1e-8, drift


# ---- negative controls ----------------------------------------------------------------------------
def test_negative_control_mass_on_a_sub_hinge_body():
    """The comparison detects a mass on a massless sub-hinge body that the oracle does not have."""
    model = loopdyn.robots.rssr_linkage()
    oracle = Oracle(model)
    heavy = loopdyn.robots.rssr_linkage()
    heavy.bodies[heavy.body_id("rod_massless1") - 1].inertia = Inertia(
        0.01, (0.01, 0.0, 0.0), np.eye(3) * 1e-6
    )
    heavy._touch()
    data = heavy.create_data()
    q, v, _, tau = next(states(model, 3))
    G, _, _, _ = oracle.G_g(q, np.zeros(model.spanning_nv))
    qdd = oracle.kkt(q, G @ v, tau)
    assert rel_err(loopdyn.aba(heavy, data, q, v, tau), qdd[oracle.ind]) > 1e-3
    assert rel_err(loopdyn.crba(heavy, data, q), G.T @ oracle.mass_matrix(q) @ G) > 1e-3


@pytest.mark.parametrize("name", ROBOTS)
def test_negative_control_loop_dropped(name):
    """The comparison detects a dropped loop: the oracle without its loop rows disagrees."""
    model = loopdyn.robots.build(name)
    oracle, open_tree = Oracle(model), Oracle(model, loops=False)
    data = model.create_data()
    q, v, _, tau = next(states(model, 4))
    G, _, _, _ = oracle.G_g(q, np.zeros(model.spanning_nv))
    qdd_open = open_tree.kkt(q, G @ v, tau)
    assert rel_err(loopdyn.aba(model, data, q, v, tau), qdd_open[oracle.ind]) > 1e-3


# ---- bad input ------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ROBOTS)
def test_configuration_off_the_loop(name):
    model = loopdyn.robots.build(name)
    q = loopdyn.neutral(model)
    q[1] += 0.1  # a dependent sub-hinge angle alone: the loop opens
    data = model.create_data()
    for call in (
        lambda: loopdyn.aba(model, data, q, np.zeros(model.nv), np.zeros(model.nv)),
        lambda: loopdyn.crba(model, data, q),
        lambda: loopdyn.rnea(model, data, q, np.zeros(model.nv), np.zeros(model.nv)),
    ):
        with pytest.raises(ConfigurationError, match="violate its constraints"):
            call()


def _rssr_like(ball, crank_independent=True, rocker_independent=False):
    """The RSSR with the crank-end ball joint given by ``ball(model, crank, placement, inertia)``."""
    m = loopdyn.Model("rssr_variant")
    crank = m.add_body(
        "crank",
        0,
        Revolute((0.0, 0.0, 1.0)),
        None,
        parallel.rod_inertia(0.05, 0.04, 0.004, 0),
        independent=crank_independent,
    )
    B, C0 = np.array([0.0, 0.18, 0.1]), np.array([0.04, 0.0, 0.0])
    u = B + [0.0, 0.0, -0.1] - C0
    ball(m, crank, (parallel._rz(math.atan2(u[1], u[0])), C0), parallel.rod_inertia(0.12, 0.18, 0.008, 0))
    m.add_body(
        "rocker",
        0,
        Revolute((1.0, 0.0, 0.0)),
        (np.eye(3), B),
        parallel.rod_inertia(0.08, -0.1, 0.005, 2),
        independent=rocker_independent,
    )
    m.add_loop(
        "ball",
        "rod",
        "rocker",
        "point",
        (np.eye(3), [np.linalg.norm(u), 0.0, 0.0]),
        (np.eye(3), [0.0, 0.0, -0.1]),
    )
    return m


def test_spherical_joint_inside_a_loop_becomes_a_gimbal():
    """The builder stores a Spherical joint that a loop puts inside a cluster as a z, y, x gimbal (the
    identity reference), announced by one JointConversionWarning: the very mechanism written by hand
    with three revolute sub-hinges (same M and accelerations), and C-ABA matches the projection."""

    def quaternion_ball(m, crank, placement, inertia):
        m.add_body("rod", crank, Spherical(), placement, inertia)

    def by_hand(m, crank, placement, inertia):
        parallel._revolute_chain(m, "rod", crank, placement, ((0, 0, 1), (0, 1, 0), (1, 0, 0)), inertia)

    with pytest.warns(JointConversionWarning, match=r"ball joint 'rod' is inside a loop.*z, y, x") as caught:
        m = _rssr_like(quaternion_ball, rocker_independent=True)  # no flags: chosen automatically
    assert len([w for w in caught if issubclass(w.category, JointConversionWarning)]) == 1
    assert m.compound_joint("rod").joint.kind == "gimbal" and (m.nq, m.nv) == (5, 2)
    hand = _rssr_like(by_hand, rocker_independent=True)
    data, hand_data = m.create_data(), hand.create_data()
    for q, v, _, tau in states(m, 5, 3):
        assert rel_err(loopdyn.crba(m, data, q), loopdyn.crba(hand, hand_data, q)) <= 1e-14
        a = loopdyn.aba(m, data, q, v, tau)
        assert rel_err(a, loopdyn.aba(hand, hand_data, q, v, tau)) <= 1e-13
        assert rel_err(a, projection_forward_dynamics(m, q, v, tau)) <= TOL


def test_gimbal_at_its_singularity_inside_a_loop():
    """A gimbal x-y-x (first and last axes both along the rod at q = 0): at q = 0 its spin
    sub-hinges move the same way, the mass matrix is singular and C-ABA names the cluster, its
    independent joints and the sub-hinge chain."""

    def gimbal(flags):
        def build(m, crank, placement, inertia):
            parallel._revolute_chain(
                m, "rod", crank, placement, ((1, 0, 0), (0, 1, 0), (1, 0, 0)), inertia, flags
            )

        return build

    m = _rssr_like(gimbal((True, False, True)), crank_independent=False)
    data = m.create_data()
    q = loopdyn.neutral(m)
    with pytest.raises(InputError, match=r"\['rod_1', 'rod_3'\] is singular.*rod_1→rod_2.*gimbal"):
        loopdyn.aba(m, data, q, np.zeros(2), np.zeros(2))
    # with the crank independent and rod_1 dependent, K_d is singular at every assembly configuration
    # found (rod_1 spins the rod about itself there): refused when the model is built, naming the joints
    m = _rssr_like(gimbal((False, False, True)))
    with pytest.raises(ModelError, match=r"\['rod_1', 'rod_2', 'rocker'\] dependent, K_d is singular"):
        m.clusters()


def test_universal_loop_joint_arguments():
    m = loopdyn.robots.delta_robot()
    with pytest.raises(ModelError, match="needs successor_axis"):
        m.add_loop("u", "forearm_2", "platform", "universal")
    with pytest.raises(ModelError, match="only applies to a universal"):
        m.add_loop("u", "forearm_2", "platform", "point", successor_axis=(1, 0, 0))
    with pytest.raises(ModelError, match="non-zero"):
        m.add_loop("u", "forearm_2", "platform", "universal", successor_axis=(0, 0, 0))


def test_universal_loop_joint_equals_a_sub_hinge_and_a_revolute_loop_joint():
    """The delta with its wrist 2 closed by a ``"universal"`` loop joint, and the same delta with that
    wrist written as a revolute sub-hinge on a massless body (the forearm-fixed axis) closed on the
    platform by a ``"revolute"`` loop joint (the platform-fixed axis): the same mechanism, so at the
    same motor state (same assembly: same platform position) the same accelerations and mass matrix."""
    model = loopdyn.robots.delta_robot()
    other = loopdyn.robots.delta_robot()
    (wrist,) = [c for c in other.constraints if c.name == "wrist_2"]
    other.remove_constraint("wrist_2")
    other.add_body(
        "wrist_2_massless", wrist.predecessor, Revolute(wrist.axis), wrist.predecessor_placement,
        Inertia.zero(), independent=False,
    )  # fmt: skip
    # the revolute loop joint's frames: both world-aligned at q = 0, where the forearm's orientation is
    # R_f (the massless body's too) and the platform's the identity; its axis: the platform-fixed one
    tree = loopdyn.spanning_tree(model)
    td = tree.create_data()
    loopdyn.forward_kinematics(tree, td, loopdyn.to_spanning(model, loopdyn.neutral(model))[0])
    R_f = loopdyn.frame_placement(tree, td, wrist.predecessor)[:3, :3]
    np.testing.assert_allclose(loopdyn.frame_placement(tree, td, "platform")[:3, :3], np.eye(3), atol=1e-15)
    other.add_loop(
        "wrist_2_revolute", "wrist_2_massless", wrist.successor, "revolute",
        predecessor_placement=(R_f.T, np.zeros(3)), successor_placement=wrist.successor_placement,
        axis=wrist.successor_axis,
    )  # fmt: skip
    assert other.nv == model.nv == 3 and other.spanning_nv == model.spanning_nv + 1
    d1, d2 = model.create_data(), other.create_data()
    t2 = loopdyn.spanning_tree(other)
    t2d = t2.create_data()
    rng = np.random.default_rng(8)
    motors = [b.idx_q for b in model.bodies if b.joint_name.startswith("motor_")]
    motors2 = [b.idx_q for b in other.bodies if b.joint_name.startswith("motor_")]
    for _ in range(10):
        q1 = loopdyn.random_configuration(model, rng)
        q2 = loopdyn.neutral(other)
        q2[motors2] = q1[motors]
        q2 = loopdyn.project_configuration(other, q2)
        loopdyn.forward_kinematics(tree, td, loopdyn.to_spanning(model, q1)[0])
        loopdyn.forward_kinematics(t2, t2d, loopdyn.to_spanning(other, q2)[0])
        x1 = loopdyn.frame_placement(tree, td, "platform_centre")
        x2 = loopdyn.frame_placement(t2, t2d, "platform_centre")
        np.testing.assert_allclose(x2, x1, rtol=0, atol=1e-10)  # the same assembly
        v, tau = rng.normal(size=3), rng.normal(size=3)
        assert rel_err(loopdyn.aba(other, d2, q2, v, tau), loopdyn.aba(model, d1, q1, v, tau)) <= TOL
        assert rel_err(loopdyn.crba(other, d2, q2), loopdyn.crba(model, d1, q1)) <= TOL
