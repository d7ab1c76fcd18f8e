"""``loopdyn.aba_derivatives`` on implicit loops against Pinocchio's closed-chain dynamics (issue #30:
"contact derivatives against Pinocchio's closed-chain constraintDynamicsDerivatives (four-bar,
five-bar, RSSR closed by RigidConstraintModel) after the change to independent coordinates"; the
five-bar is in ``test_five_bar.py``; here the four-bar, the planar leg linkage and the RSSR).

Pinocchio's model is the spanning tree (built here from the bodies' placements, axes and inertias),
the loop joint a ``CONTACT_3D`` between the two loop points (LOCAL). G = [1; −J_D⁻¹ J_I] comes from
Pinocchio's frame Jacobians (rows of the loop points' relative velocity), so nothing on the oracle
side comes from loopdyn but the state. In the independent coordinates y (spanning coordinates I, where
G's rows are the identity; spanning τ nonzero on I only, so τ_y = τ_s[I]):

* ∂ÿ/∂τ = ∂q̈_s/∂τ_s[I, I] and ∂ÿ/∂ẏ = (∂q̈_s/∂v_s G)[I] from ``computeConstraintDynamicsDerivatives``;
* along the loop (δ_j: q(ε) = ``loopdyn.integrate(q, ε e_j)``, v_s = G(q(ε)) ẏ): 4th-order central
  differences of Pinocchio's ``constraintDynamics``. Pinocchio's own ∂q̈_s/∂q_s is not used: for a
  constraint between two joints it is not the derivative of its ``constraintDynamics`` (Pinocchio
  4.1: on the RSSR, whose point loop has no redundant row, the columns along the loop's tangent
  G e_j differ from central differences of ``constraintDynamics`` by 100–500 %, while its ∂q̈_s/∂v_s
  agrees with them; on the five-bar the same, ``test_five_bar.py``).

The built-in four-bar is a parallelogram in the horizontal plane (H constant, C = 0, no gravity torque):
its ∂ÿ/∂ẏ and ∂ÿ/∂δ vanish, so those comparisons have floors (|ÿ| / |ẏ| and |ÿ|, the same units);
the planar leg linkage is the planar loop whose derivatives do not vanish.

Tolerances: 1e-8 relative for Pinocchio's derivatives (its proximal solve at μ = 1e-12), 1e-7 for
differences. States away from singular poses (σ_min(J_D) ≥ 1e-2).
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

import loopdyn

N_STATES = 10


def rel(a, b) -> float:
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


class ClosedChain:
    """Pinocchio's spanning tree of a one-loop model of revolute joints (body i = joint i) closed by a
    ``CONTACT_3D`` between the loop points; ``rows``: the rows of the points' relative velocity (world
    axes) that define G."""

    def __init__(self, model: loopdyn.Model, rows: list[int]):
        pm = pin.Model()
        pm.gravity = pin.Motion(np.r_[model.gravity, 0.0, 0.0, 0.0])
        for b in model.bodies:
            assert b.joint.kind == "revolute"
            jid = pm.addJoint(b.parent, pin.JointModelRevoluteUnaligned(np.array(b.joint.axis, dtype=float)),
                              pin.SE3(b.rotation, b.translation), b.joint_name)  # fmt: skip
            I = b.inertia
            pm.appendBodyToJoint(jid, pin.Inertia(I.mass, I.com, I.inertia), pin.SE3.Identity())
        (con,) = model.constraints
        ja, jb = model.body_id(con.predecessor), model.body_id(con.successor)
        Ma, Mb = pin.SE3(*con.predecessor_placement), pin.SE3(*con.successor_placement)
        self.fa = pm.addFrame(pin.Frame("loop_a", ja, 0, Ma, pin.FrameType.OP_FRAME))
        self.fb = pm.addFrame(pin.Frame("loop_b", jb, 0, Mb, pin.FrameType.OP_FRAME))
        local = pin.ReferenceFrame.LOCAL
        cm = pin.RigidConstraintModel(pin.ContactType.CONTACT_3D, pm, ja, Ma, jb, Mb, local)
        self.cms, self.cds = pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData()
        self.cms.append(cm)
        self.cds.append(cm.createData())
        self.pm, self.pd, self.kd = pm, pm.createData(), pm.createData()
        pin.initConstraintDynamics(pm, self.pd, self.cms, self.cds)
        self.prox = pin.ProximalSettings(1e-14, 1e-12, 200)
        tree = model.clusters()
        assert tree.position_names == model.joint_names[1:]  # spanning order = Pinocchio's
        self.ind, self.dep, self.rows, at = [], [], rows, 0
        for c in tree.clusters:  # 1-DoF joints: a cluster's spanning coordinates are its bodies
            if c.dependent:
                self.ind += [at + j for j in c.independent]
                self.dep += [at + j for j in c.dependent]
            else:
                self.ind += list(range(at, at + len(c.bodies)))
            at += len(c.bodies)

    def G(self, q) -> tuple[np.ndarray, float]:
        """G at q and σ_min(J_D)."""
        pm, kd = self.pm, self.kd
        pin.computeJointJacobians(pm, kd, q)
        pin.updateFramePlacements(pm, kd)
        W = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
        J = (pin.getFrameJacobian(pm, kd, self.fa, W) - pin.getFrameJacobian(pm, kd, self.fb, W))[self.rows]
        G = np.zeros((pm.nv, len(self.ind)))
        G[self.ind] = np.eye(len(self.ind))
        G[self.dep] = -np.linalg.solve(J[:, self.dep], J[:, self.ind])
        return G, float(np.linalg.svd(J[:, self.dep], compute_uv=False).min())

    def ddq(self, q, vs, ts) -> np.ndarray:
        return pin.constraintDynamics(self.pm, self.pd, q, vs, ts, self.cms, self.cds, self.prox).copy()

    def derivatives(self, q, vs, ts):
        """Pinocchio's (∂q̈_s/∂q_s, ∂q̈_s/∂v_s, ∂q̈_s/∂τ_s) at the state."""
        self.ddq(q, vs, ts)
        pin.computeConstraintDynamicsDerivatives(self.pm, self.pd, self.cms, self.cds, self.prox)
        return np.array(self.pd.ddq_dq), np.array(self.pd.ddq_dv), np.array(self.pd.ddq_dtau)


def along_loop(f, model, q, h=1e-3):
    """4th-order central differences of ``f(q(ε))`` along ``q(ε) = integrate(q, ε e_j)``, one column
    (or one slice) per independent coordinate j."""
    cols = []
    for e in np.eye(model.nv):
        at = [f(loopdyn.integrate(model, q, s * h * e)) for s in (1, -1, 2, -2)]
        cols.append((8 * (at[0] - at[1]) - (at[2] - at[3])) / (12 * h))
    return cols


def states(model, chain, seed):
    """Random states away from singular poses: (q, ẏ, τ, G, spanning τ)."""
    rng = np.random.default_rng(seed)
    found = 0
    for _ in range(4 * N_STATES):
        q = loopdyn.random_configuration(model, rng)
        # fast enough that the velocity terms (and so G's configuration dependence) carry weight
        v, tau = 10.0 * rng.normal(size=model.nv), rng.normal(size=model.nv)
        G, smin = chain.G(q)
        if smin < 1e-2:
            continue
        ts = np.zeros(model.spanning_nv)
        ts[chain.ind] = tau
        yield q, v, tau, G, ts
        found += 1
        if found == N_STATES:
            return
    raise AssertionError(f"only {found} random states away from a singular pose")


def close(a, b, tol, floor=0.0) -> bool:
    """|a − b| ≤ tol · max(|b|, floor) (max norms)."""
    return float(np.max(np.abs(a - b))) <= tol * max(float(np.max(np.abs(b))), floor)


@pytest.mark.parametrize(
    "name, rows", [("four_bar", [0, 1]), ("planar_leg_linkage", [0, 1]), ("rssr_linkage", [0, 1, 2])]
)
def test_aba_derivatives_against_pinocchio_closed_chain(name, rows):
    model = loopdyn.robots.build(name)
    data = model.create_data()
    chain = ClosedChain(model, rows)
    I = chain.ind
    frozen_errors = []
    for q, v, tau, G, ts in states(model, chain, 5):
        dq, dv, dt = loopdyn.aba_derivatives(model, data, q, v, tau)
        ydd = chain.ddq(q, G @ v, ts)[I]
        assert rel(loopdyn.aba(model, data, q, v, tau), ydd) <= 1e-8, name  # the same dynamics
        _, Pv, Pt = chain.derivatives(q, G @ v, ts)
        # floors where a reference can vanish (the four-bar, a parallelogram in the horizontal plane:
        # H constant, C = 0, no gravity torque): |ÿ| / |ẏ| for ∂ÿ/∂ẏ, |ÿ| (per radian) for ∂ÿ/∂δ
        accel = float(np.max(np.abs(ydd)))
        assert close(dt, Pt[np.ix_(I, I)], 1e-8), name
        assert close(dv, (Pv @ G)[I], 1e-8, accel / float(np.max(np.abs(v)))), name
        cols = along_loop(lambda qe, v=v, ts=ts: chain.ddq(qe, chain.G(qe)[0] @ v, ts)[I], model, q)
        assert close(dq, np.column_stack(cols), 1e-7, accel), name
        if name != "four_bar":  # negative control on the velocity terms ÿ(q, ẏ) − ÿ(q, 0), whose
            # derivative carries G's configuration dependence: with v_s = G(q) ẏ held along the
            # loop (G frozen) it must differ from ours
            dq0 = loopdyn.aba_derivatives(model, data, q, 0 * v, tau)[0]

            def velocity_terms(qe, vs=G @ v, ts=ts):
                return chain.ddq(qe, vs, ts)[I] - chain.ddq(qe, np.zeros_like(vs), ts)[I]

            frozen = np.column_stack(along_loop(velocity_terms, model, q))
            frozen_errors.append(rel(dq - dq0, frozen))
    if name != "four_bar":  # (it can vanish at a state: the planar leg's ∂G at its parallelogram pose)
        assert max(frozen_errors) > 1e-2, (name, frozen_errors)
