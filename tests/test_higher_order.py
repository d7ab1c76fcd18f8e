"""loopdyn.higher_order against an independent oracle: automatic differentiation (JAX) of an order-0
inverse dynamics written here, along analytic trajectories.

The oracle never uses a velocity recursion: it composes each body's world pose from analytic joint
motions (joints ``a sin(ωt + φ) + b t²``; spherical joints and free-flyer bases as ``R0 Rz(α)
Ry(β) Rx(γ)`` of such functions, free-flyer positions likewise), gets body twists and accelerations
by differentiating those poses (``vee(Rᵀ Ṙ)``, ``Rᵀ ṗ``), applies Newton–Euler to each body in its
own frame and projects the subtree wrenches on each joint's axes. Its k-th time derivative comes from
Taylor-mode AD (``jax.experimental.jet``) and is compared with ``higher_order.rnea``'s τ^(k), k ≤ 5.
The inputs ``q`` and ``dv`` are also taken from the poses (joint velocities by AD of the joint motion).
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
import trees
from jax.experimental import jet

import loopdyn as ld
from loopdyn import higher_order as ho
from loopdyn.model import joints as J

jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

RTOL = 1e-9


def rel_err(a, b) -> float:
    return float(np.max(np.abs(np.asarray(a) - np.asarray(b))) / max(1.0, float(np.max(np.abs(b)))))


# ----------------------------------------------------------------------------------------------
# the oracle
def _rx(a):
    c, s = jnp.cos(a), jnp.sin(a)
    return jnp.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def _ry(a):
    c, s = jnp.cos(a), jnp.sin(a)
    return jnp.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def _rz(a):
    c, s = jnp.cos(a), jnp.sin(a)
    return jnp.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def _axis_rot(axis, th):
    K = jnp.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
    return jnp.eye(3) + jnp.sin(th) * K + (1.0 - jnp.cos(th)) * (K @ K)


def _vee(W):
    return jnp.array([W[2, 1], W[0, 2], W[1, 0]])


def _quat_axis(axis, th):
    return np.concatenate([np.sin(th / 2) * np.asarray(axis, float), [np.cos(th / 2)]])


class Trajectory:
    """Analytic trajectory of every joint of ``model`` (and analytic body-frame external forces)."""

    def __init__(self, model, rng, scale: float = 1.0, forces: bool = True):
        self.model = model
        self.params = []
        for b in model.bodies:
            n = {J.FREEFLYER: 6, J.SPHERICAL: 3}.get(b.joint.code, 1)
            coef = np.stack(
                [
                    scale * rng.uniform(0.3, 1.0, n),  # a
                    rng.uniform(0.5, 2.0, n),  # ω
                    rng.uniform(-np.pi, np.pi, n),  # φ
                    scale * rng.uniform(-0.5, 0.5, n),  # b
                ]
            )
            R0 = trees.random_quaternion(rng)
            self.params.append((coef, R0))
        nj = model.njoints
        self.fA = rng.normal(size=(nj, 6)) if forces else np.zeros((nj, 6))
        self.fB = rng.normal(size=(nj, 6)) if forces else np.zeros((nj, 6))
        self.fw = rng.uniform(0.5, 2.0, size=(nj, 6))

    @staticmethod
    def _s(coef, t):
        a, w, ph, b = coef
        return a * jnp.sin(w * t + ph) + b * t * t

    def motion(self, i, t):
        """(R, p) of joint i's own motion at time t (jnp)."""
        b = self.model.bodies[i]
        coef, q0 = self.params[i]
        s = self._s(coef, t)
        code = b.joint.code
        ax = jnp.asarray(b.joint.axis_array())
        if code in (J.REVOLUTE, J.REVOLUTE_UNBOUNDED):
            return _axis_rot(ax, s[0]), jnp.zeros(3)
        if code == J.PRISMATIC:
            return jnp.eye(3), ax * s[0]
        R0 = jnp.asarray(trees.quat_to_matrix(q0))
        if code == J.SPHERICAL:
            return R0 @ _rz(s[0]) @ _ry(s[1]) @ _rx(s[2]), jnp.zeros(3)
        return R0 @ _rz(s[3]) @ _ry(s[4]) @ _rx(s[5]), s[:3]

    def q(self, t: float) -> np.ndarray:
        out = np.zeros(self.model.nq)
        for i, b in enumerate(self.model.bodies):
            coef, q0 = self.params[i]
            s = np.asarray(self._s(coef, t))
            iq, code = b.idx_q, b.joint.code
            if code in (J.REVOLUTE, J.PRISMATIC):
                out[iq] = s[0]
            elif code == J.REVOLUTE_UNBOUNDED:
                out[iq : iq + 2] = np.cos(s[0]), np.sin(s[0])
            else:
                o = 3 if code == J.FREEFLYER else 0
                quat = trees.quat_multiply(q0, _quat_axis([0, 0, 1], s[o]))
                quat = trees.quat_multiply(quat, _quat_axis([0, 1, 0], s[o + 1]))
                quat = trees.quat_multiply(quat, _quat_axis([1, 0, 0], s[o + 2]))
                if code == J.FREEFLYER:
                    out[iq : iq + 3] = s[:3]
                    out[iq + 3 : iq + 7] = quat
                else:
                    out[iq : iq + 4] = quat
        return out

    def v(self, t):
        """Velocity vector in Pinocchio's coordinates, from AD of each joint's motion."""
        parts = []
        for i, b in enumerate(self.model.bodies):
            R, p = self.motion(i, t)
            dR, dp = jax.jacfwd(lambda tt, i=i: self.motion(i, tt))(t)
            code = b.joint.code
            w = _vee(R.T @ dR)
            if code in (J.REVOLUTE, J.REVOLUTE_UNBOUNDED):
                parts.append(jnp.dot(jnp.asarray(b.joint.axis_array()), w)[None])
            elif code == J.PRISMATIC:
                parts.append(jnp.dot(jnp.asarray(b.joint.axis_array()), dp)[None])
            elif code == J.SPHERICAL:
                parts.append(w)
            else:
                parts.append(jnp.concatenate([R.T @ dp, w]))
        return jnp.concatenate(parts)

    def fext(self, t):
        return jnp.asarray(self.fA) * jnp.sin(jnp.asarray(self.fw) * t) + jnp.asarray(self.fB) * t

    def poses(self, t):
        Rs, ps = [jnp.eye(3)], [jnp.zeros(3)]
        for i, b in enumerate(self.model.bodies):
            Rm, pm = self.motion(i, t)
            Rp, pp = Rs[b.parent], ps[b.parent]
            JR, Jp = jnp.asarray(b.rotation), jnp.asarray(b.translation)
            Rs.append(Rp @ JR @ Rm)
            ps.append(pp + Rp @ (Jp + JR @ pm))
        return jnp.stack(Rs), jnp.stack(ps)

    def twists(self, t):
        """Body twists (ω_b; v_b) = (vee(RᵀṘ); Rᵀṗ) of all bodies, by AD of the poses."""
        R, p = self.poses(t)
        dR, dp = jax.jacfwd(self.poses)(t)
        w = jax.vmap(lambda A, B: _vee(A.T @ B))(R, dR)
        v = jnp.einsum("iba,ib->ia", R, dp)
        return jnp.concatenate([w, v], axis=1)

    def tau(self, t):
        """Order-0 inverse dynamics by body-frame Newton–Euler on AD twists (the oracle)."""
        model = self.model
        R, p = self.poses(t)
        Vb = self.twists(t)
        Ab = jax.jacfwd(self.twists)(t)
        fe = self.fext(t)
        g = jnp.asarray(model.gravity)
        Ww = [jnp.zeros(6)]  # per body: wrench (n about world origin; f) in world coordinates
        for i, b in enumerate(model.bodies, start=1):
            m, c, Ic = b.inertia.mass, jnp.asarray(b.inertia.com), jnp.asarray(b.inertia.inertia)
            w, v = Vb[i, :3], Vb[i, 3:]
            dw, dv = Ab[i, :3], Ab[i, 3:]
            vc = v + jnp.cross(w, c)  # CoM velocity, body axes
            ac = dv + jnp.cross(dw, c)  # d/dt of (v + ω × c) in body axes
            f_lin = m * (ac + jnp.cross(w, vc)) - m * R[i].T @ g
            n_c = Ic @ dw + jnp.cross(w, Ic @ w)
            n = n_c + jnp.cross(c, f_lin)
            f_lin = f_lin - fe[i, :3]
            n = n - fe[i, 3:]
            fw = R[i] @ f_lin
            Ww.append(jnp.concatenate([R[i] @ n + jnp.cross(p[i], fw), fw]))
        tot = list(Ww)
        for i in range(model.nbodies, 0, -1):
            par = model.bodies[i - 1].parent
            if par > 0:
                tot[par] = tot[par] + tot[i]
        vdot = jax.jacfwd(self.v)(t)
        out = []
        for i, b in enumerate(model.bodies, start=1):
            nw, fw = tot[i][:3], tot[i][3:]
            f_loc = R[i].T @ fw
            n_loc = R[i].T @ (nw - jnp.cross(p[i], fw))
            code = b.joint.code
            ax = jnp.asarray(b.joint.axis_array())
            if code in (J.REVOLUTE, J.REVOLUTE_UNBOUNDED):
                tj = jnp.dot(ax, n_loc)[None]
            elif code == J.PRISMATIC:
                tj = jnp.dot(ax, f_loc)[None]
            elif code == J.SPHERICAL:
                tj = n_loc
            else:
                tj = jnp.concatenate([f_loc, n_loc])
            arm = jnp.asarray(b.armature_vector())
            out.append(tj + arm * vdot[b.idx_v : b.idx_v + b.joint.nv])
        return jnp.concatenate(out)


def taylor(f, t0: float, order: int) -> np.ndarray:
    """(order + 1, …): f(t0) and its first ``order`` time derivatives (Taylor-mode AD)."""
    primal, series = jet.jet(f, (t0,), ((1.0,) + (0.0,) * (order - 1),))
    return np.stack([np.asarray(primal)] + [np.asarray(s) for s in series])


def reference(traj: Trajectory, t0: float, order: int):
    """q, dv (order + 2 rows), f_ext (order + 1 rows), τ^(0…order) from the oracle."""
    q = traj.q(t0)
    dv = taylor(traj.v, t0, order + 1)
    fe = taylor(traj.fext, t0, order)
    tau = taylor(traj.tau, t0, order)
    return q, dv, fe, tau


# ----------------------------------------------------------------------------------------------
# tests
#: (model, order, external forces): fixed and free-flyer roots; revolute, continuous, prismatic,
#: spherical joints; random gravity; an example-robot-data robot. (solo12 at order 2 was a case too: a
#: free-flyer tree of revolute joints, which the floating random trees cover at order 5, for 45 CPU-s
#: of Taylor-mode tracing per test run; order 1 is checked against Pinocchio's RNEA derivatives on the
#: random trees in test_higher_order_consistency.py, and two example-robot-data robots on free flyers,
#: G1 and anymal, in test_higher_order_invariance.py.)
CASES = [
    ("tree", 0, 5, True),
    ("tree", 1, 5, False),
    ("tree", 2, 5, True),
    ("tree", 3, 5, True),
    ("tree", 7, 5, True),
    ("tree", 9, 5, False),
    ("tree", 11, 5, True),
    ("robot", "ur5", 5, True),
]


def case_model(kind, key):
    if kind == "tree":
        return trees.tree_case(key, with_pinocchio=False)[0]
    return trees.robot_case(key, with_pinocchio=False)[0]


def case_id(c) -> str:
    name = trees.tree_case_id(trees.TREE_SPECS[c[1]]) if c[0] == "tree" else c[1]
    return f"{name}-r{c[2]}{'-fext' if c[3] else ''}"


@pytest.mark.parametrize("case", CASES, ids=[case_id(c) for c in CASES])
def test_rnea_derivatives_match_autodiff(case):
    kind, key, order, forces = case
    lm = case_model(kind, key)
    data = lm.create_data()
    traj = Trajectory(lm, np.random.default_rng(1000 + len(str(key)) + order), forces=forces)
    q, dv, fe, ref = reference(traj, 0.37, order)
    fe = fe if forces else None
    # the oracle's order 0 is loopdyn's (the two inverse dynamics agree on the state itself)
    assert rel_err(ld.rnea(lm, data, q, dv[0], dv[1], None if fe is None else fe[0]), ref[0]) < RTOL
    got = ho.rnea(lm, data, q, dv, fe)
    assert got.shape == (order + 1, lm.nv)
    for k in range(order + 1):
        assert rel_err(got[k], ref[k]) < RTOL, (k, got[k], ref[k])
    # and the forward dynamics returns the trajectory's derivatives
    back = ho.aba(lm, data, q, dv[0], ref, fe)
    for k in range(order + 1):
        assert rel_err(back[k], dv[k + 1]) < 1e-8, k


# ----------------------------------------------------------------------------------------------
# errata E2 and E3 (spec §6.2) on the paper's robot, against AD of the spatial twists
def _spatial_twists(traj, t):
    R, p = traj.poses(t)
    dR, dp = jax.jacfwd(traj.poses)(t)
    w = jax.vmap(lambda A, B: _vee(B @ A.T))(R, dR)
    return jnp.concatenate([w, dp - jnp.cross(w, p)], axis=1)  # (ω; ṗ − ω × p)


def _hat_ad(V):
    def sk(x):
        return np.array([[0, -x[2], x[1]], [x[2], 0, -x[0]], [-x[1], x[0], 0]])

    return np.block([[sk(V[:3]), np.zeros((3, 3))], [sk(V[3:]), sk(V[:3])]])


def test_errata_E2_E3_negative_controls_on_the_aerial_manipulator():
    model = ld.robots.aerial_manipulator()
    data = model.create_data()
    traj = Trajectory(model, np.random.default_rng(5), forces=False)
    t0 = 0.4
    Vs = taylor(lambda t: _spatial_twists(traj, t), t0, 2)  # (3, njoints, 6): V, V̇, V̈ per body
    R, p = (np.asarray(x) for x in traj.poses(t0))
    dv = taylor(traj.v, t0, 2)
    nb = model.nbodies
    # stacked screws in the paper's coordinates: base block I₆ (Ṡ = S̈ = 0), joints S_j = Ad_{C_j} Y
    cols = []  # per body: (body of the column, S, Ṡ, S̈, ν, ν̇, ν̈) with ν the paper's coordinates
    for k in range(6):
        e = np.eye(6)[k]
        cols.append((1, e, 0 * e, 0 * e, Vs[0, 1, k], Vs[1, 1, k], Vs[2, 1, k]))
    for j in range(2, nb + 1):
        b = model.bodies[j - 1]
        Sj = np.concatenate([R[j] @ b.joint.axis_array(), np.cross(p[j], R[j] @ b.joint.axis_array())])
        Sd = _hat_ad(Vs[0, j]) @ Sj
        Sdd = _hat_ad(Vs[1, j]) @ Sj + _hat_ad(Vs[0, j]) @ Sd
        iv = b.idx_v
        cols.append((j, Sj, Sd, Sdd, dv[0, iv], dv[1, iv], dv[2, iv]))

    def support(i):
        out = []
        while i > 0:
            out.append(i)
            i = model.bodies[i - 1].parent
        return out

    for i in range(1, nb + 1):
        path = support(i)
        Vdd_true = sum(S * n2 + 2 * Sd * n1 + Sdd * n0 for (k, S, Sd, Sdd, n0, n1, n2) in cols if k in path)
        np.testing.assert_allclose(Vdd_true, Vs[2, i], atol=1e-10 * np.abs(Vs[2]).max())
        # printed eq. 39: 𝐒̇ → ad_𝐕 𝐒 also where it multiplies ν̇, and 𝐒̈ν written as
        # (ad_{G_p𝐒ν̇} + ad_{G_p ad_𝐕 𝐒ν} + ad_𝐕²) 𝐒ν, which is wrong in the base block
        Vdd_printed = 0.0
        for k, S, _, _, n0, n1, n2 in cols:
            if k not in path:
                continue
            X = sum(S2 * m1 for (k2, S2, _, _, m0, m1, _) in cols if k2 in support(k))
            Y = sum(_hat_ad(Vs[0, k2]) @ S2 * m0 for (k2, S2, _, _, m0, m1, _) in cols if k2 in support(k))
            adV = _hat_ad(Vs[0, k])
            Vdd_printed = (
                Vdd_printed + S * n2 + 2 * adV @ S * n1 + (_hat_ad(X) + _hat_ad(Y) + adV @ adV) @ S * n0
            )
        resid = Vdd_printed - Vdd_true
        np.testing.assert_allclose(resid, _hat_ad(Vs[0, 1]) @ Vs[1, 1], atol=1e-10 * np.abs(Vs[2]).max())
        assert np.abs(resid).max() > 1e-3
    # D12 against AD: the base's body-frame twist derivatives (Pinocchio's v rows) to spatial ones
    np.testing.assert_allclose(
        ho.body_to_spatial_twist((R[1], p[1]), dv[:, :6]), Vs[:, 1], atol=1e-10 * np.abs(Vs[:, 1]).max()
    )
    # E3: the first-order base row. The true τ̄̇ base entry is d/dt of the spatial base wrench W⁰; the
    # printed closed form (𝐒ᵀ ad_𝐕ᵀ for 𝐒̇ᵀ) gives Ad_C⁻ᵀ Ẇ^b = Ẇ⁰ + ad_{V_1}ᵀ W⁰ instead.
    q = traj.q(t0)
    tau = ho.rnea(model, data, q, dv[:3])
    C1 = (R[1], p[1])
    W0 = ho.body_to_spatial_wrench(C1, Vs[:, 1], tau[:, :6])

    # Ẇ⁰ from τ (checked against AD above) and D9 (checked against Table 5b in the identities tests)
    printed = W0[1] + _hat_ad(Vs[0, 1]).T @ W0[0]
    assert np.abs(printed - W0[1]).max() > 1e-3 * np.abs(W0[1]).max()
    np.testing.assert_allclose(
        ho.spatial_to_body_wrench(C1, Vs[:, 1], W0)[1], tau[1, :6], atol=1e-10 * np.abs(tau).max()
    )
