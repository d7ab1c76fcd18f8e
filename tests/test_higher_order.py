"""loopdyn.higher_order against an independent oracle: automatic differentiation (JAX) of an order-0
inverse dynamics written here, along analytic trajectories.

The oracle never uses a velocity recursion: it composes each body's world pose from analytic joint
motions (joints ``a sin(ωt + φ) + b t²``; spherical joints and free-flyer bases as ``R0 Rz(α)
Ry(β) Rx(γ)`` of such functions, free-flyer positions likewise), gets body twists and accelerations
by differentiating those poses (``vee(Rᵀ Ṙ)``, ``Rᵀ ṗ``), applies Newton–Euler to each body in its
own frame and projects the subtree wrenches on each joint's axes. Its k-th time derivative comes from
Taylor-mode AD (``jax.experimental.jet``) and is compared with ``higher_order.rnea``'s τ^(k), k ≤ 5.
The inputs ``q`` and ``dv`` are also taken from the poses (joint velocities by AD of the joint motion).

Cost: Taylor mode costs O(r²) operations per traced primitive whatever its size, so the oracle is
written with few, vectorised operations over all bodies (:func:`_oracle_series`: three jet passes, the
time derivatives a pass needs entering as its inputs' series shifted by one instead of AD nested in
jet), every model padded to the same arrays, and one ``jax.jit`` compilation (with XLA's expensive CPU
passes off: 3 instead of 24 CPU-s) serves every case of this file: ~4 CPU-s once (4.7k jaxpr
equations), then milliseconds per case. (Before: one eager jet per case of a per-body loop with
``jacfwd`` nested twice, ~115 CPU-s for the file; now ~6.) Its values equal that former oracle's to
≤ 7e-14 relative; a broken oracle (a series shifted by one, a Coriolis term dropped, the body twist for
the spatial one) fails the tests.
"""
from __future__ import annotations

import functools

import jax
import numpy as np
import pytest
import trees
from jax.experimental import jet
from revolute_tables import XLA_OPTIONS

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
#: bodies of every model of this file padded to this many slots (slot 0: the universe; the padding:
#: massless bodies at rest on the universe), so that all of them trace and compile one oracle
SLOTS = 12
#: pointer-jumping steps composing the world poses: trees up to 2**JUMPS deep (this file's: ≤ 6)
JUMPS = 3
#: XLA options for the oracle's compilation: its Taylor-mode graph is a few thousand small operations,
#: which XLA's CPU fusion emitters and backend optimisation take several times longer to compile (the
#: oracle runs once per case, so its run time does not matter)


def _skew_np(x) -> np.ndarray:
    return np.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])


#: Levi-Civita symbol: (a × b)_i = ε_ijk a_j b_k
EPS = np.zeros((3, 3, 3))
for _i, _j, _k in ((0, 1, 2), (1, 2, 0), (2, 0, 1)):
    EPS[_i, _j, _k], EPS[_i, _k, _j] = 1.0, -1.0


def _cross(a, b):
    """a × b over the leading (batch) axes."""
    return jnp.einsum("ijk,...j,...k->...i", EPS, a, b)


def _vee(W):
    """(W₃₂, W₁₃, W₂₁) of (…, 3, 3) matrices: ω of W = [ω×]."""
    return jnp.stack([W[..., 2, 1], W[..., 0, 2], W[..., 1, 0]], axis=-1)


def _mT(A):
    return jnp.swapaxes(A, -1, -2)


def _quat_axis(axis, th):
    return np.concatenate([np.sin(th / 2) * np.asarray(axis, float), [np.cos(th / 2)]])


def _s(coef, t):
    """a sin(ωt + φ) + b t² of ``coef = (a, ω, φ, b)`` (rows; NumPy or JAX)."""
    a, w, ph, b = coef
    xp = jnp if isinstance(t, jax.Array) else np
    return a * xp.sin(w * t + ph) + b * t * t


def _poses(m, t):
    """Pass 1: each body's pose in its parent's frame (R_l, p_l), in the world frame (R, p), and f_ext
    at time t."""
    s = _s(m["coef"], t)  # (SLOTS, 7): p_x, p_y, p_z, α, β, γ, θ
    # R_l = JR R0 Rz(α) Ry(β) Rx(γ) Rot(axis, θ), the factors by Rodrigues F_k = B0_k + sin θ_k B1_k +
    # (1 − cos θ_k) B2_k (B0 = I, B1 = K, B2 = K², the constant JR R0 multiplied into the first), their
    # product in two batched steps (F0 F1)(F2 F3)
    th = s[:, 3:]
    F = m["B0"] + jnp.einsum("bkc,bkcij->bkij", jnp.stack([jnp.sin(th), 1.0 - jnp.cos(th)], axis=-1), m["B"])
    F = F[:, 0::2] @ F[:, 1::2]
    Rl = F[:, 0] @ F[:, 1]
    pl = m["Jp"] + jnp.einsum("bij,bj->bi", m["JR"], s[:, :3])
    # homogeneous transforms: body i in the frame of its 2^k-th ancestor anc[k][i] (slot 0, the universe,
    # maps to itself with the identity); after JUMPS steps, in the world frame
    bottom = jnp.broadcast_to(jnp.array([0.0, 0.0, 0.0, 1.0]), (SLOTS, 1, 4))
    T = jnp.concatenate([jnp.concatenate([Rl, pl[:, :, None]], axis=2), bottom], axis=1)
    for k in range(JUMPS):
        T = T[m["anc"][k]] @ T
    fe = m["fA"] * jnp.sin(m["fw"] * t) + m["fB"] * t
    return Rl, pl, T[:, :3, :3], T[:, :3, 3], fe


def _velocity(m, Rl, dRl, dpl):
    """Pass 2: joint velocities, the body's twist relative to its parent in its own frame,
    ``Sel [R_lᵀ ṗ_l; vee(R_lᵀ Ṙ_l)]`` (SLOTS, 6): the joint's nv, then 0 (= the joint motion's
    ``[R_mᵀ ṗ_m; vee(R_mᵀ Ṙ_m)]``, the joint placement being constant)."""
    u = jnp.concatenate([jnp.einsum("bji,bj->bi", Rl, dpl), _vee(_mT(Rl) @ dRl)], axis=1)
    return jnp.einsum("bij,bj->bi", m["Sel"], u)


def _dynamics(m, R, dR, ddR, p, dp, ddp, fe, vdot):
    """Pass 3: τ (SLOTS, 6) by Newton–Euler in body frames, and the spatial twists (SLOTS, 6)."""
    w, lin = _vee(_mT(R) @ dR), jnp.einsum("bji,bj->bi", R, dp)
    dw = _vee(_mT(dR) @ dR + _mT(R) @ ddR)
    dlin = jnp.einsum("bji,bj->bi", dR, dp) + jnp.einsum("bji,bj->bi", R, ddp)
    mass, c, Ic = m["mass"][:, None], m["com"], m["Ic"]
    vc = lin + _cross(w, c)  # CoM velocity, body axes
    ac = dlin + _cross(dw, c)  # d/dt of (v + ω × c) in body axes
    f_lin = mass * (ac + _cross(w, vc)) - mass * jnp.einsum("bji,j->bi", R, m["g"])
    n = jnp.einsum("bij,bj->bi", Ic, dw) + _cross(w, jnp.einsum("bij,bj->bi", Ic, w))
    n = n + _cross(c, f_lin) - fe[:, 3:]
    f_lin = f_lin - fe[:, :3]
    # world wrenches (moment about the origin; force), summed over each body's subtree
    fw = jnp.einsum("bij,bj->bi", R, f_lin)
    W = jnp.concatenate([jnp.einsum("bij,bj->bi", R, n) + _cross(p, fw), fw], axis=1)
    W = m["subtree"] @ W
    nw, fw = W[:, :3], W[:, 3:]
    f_loc = jnp.einsum("bji,bj->bi", R, fw)
    n_loc = jnp.einsum("bji,bj->bi", R, nw - _cross(p, fw))
    tau = jnp.einsum("bij,bj->bi", m["Sel"], jnp.concatenate([f_loc, n_loc], axis=1))
    ws = _vee(dR @ _mT(R))
    return tau + m["arm"] * vdot, jnp.concatenate([ws, dp - _cross(ws, p)], axis=1)


def _oracle_series(t0, m, order: int):
    """The oracle's derivatives at ``t0`` of the trajectory in the padded arrays ``m`` (see
    :meth:`Trajectory.arrays`): three Taylor-mode (jet) passes, each a few vectorised operations over
    all bodies at once; a pass that needs a time derivative of a quantity gets its series shifted by one
    (ẋ^(k) = x^(k+1)), so no AD is nested inside jet.

    1. :func:`_poses` (order + 2): each joint's own motion (R_m, p_m) from its seven functions
       ``s = (p_x, p_y, p_z, α, β, γ, θ)``: ``R_m = R0 Rz(α) Ry(β) Rx(γ) Rot(axis, θ)``,
       ``p_m = (p_x, p_y, p_z)`` (the functions a joint does not have are 0, each rotation by Rodrigues
       ``I + sin K + (1 − cos) K²``), the body's pose in its parent's frame ``(JR R_m, Jp + JR p_m)``,
       the world poses ``(R, p)`` composed along the tree, and f_ext(t);
    2. :func:`_velocity` (order + 1): joint velocities ``v = Sel [R_mᵀ ṗ_m; vee(R_mᵀ Ṙ_m)]`` (from the
       pose in the parent's frame: the same, the joint placement being constant);
    3. :func:`_dynamics` (order): Newton–Euler of each body in its own frame on ``ω = vee(RᵀṘ)``,
       ``v = Rᵀṗ``, ``ω̇ = vee(ṘᵀṘ + RᵀR̈)``, ``v̇ = Ṙᵀṗ + Rᵀp̈``, subtree wrenches summed in world
       coordinates and projected on each joint's coordinates, plus armature × v̇; and each body's
       spatial twist ``(vee(ṘRᵀ); ṗ − ω × p)`` (the errata test).
    """
    nr = order + 2  # derivatives of the poses needed: τ^(order) holds R^(order + 2)
    (Rl, pl, R, p, fe), ser = jet.jet(functools.partial(_poses, m), (t0,), ((1.0,) + (0.0,) * (nr - 1),))
    dRl, dpl, dR, dp, dfe = ([x, *s] for x, s in zip((Rl, pl, R, p, fe), ser, strict=True))
    v, v_ser = jet.jet(
        functools.partial(_velocity, m), (Rl, dRl[1], dpl[1]), (dRl[1:nr], dRl[2 : nr + 1], dpl[2 : nr + 1])
    )
    dv = [v, *v_ser]  # v^(0…order + 1)
    primals = (R, dR[1], dR[2], p, dp[1], dp[2], fe, dv[1])
    series = (dR[1 : order + 1], dR[2 : order + 2], dR[3 : order + 3], dp[1 : order + 1],
              dp[2 : order + 2], dp[3 : order + 3], dfe[1 : order + 1], dv[2 : order + 2])
    (tau, Vs), (tau_ser, Vs_ser) = jet.jet(functools.partial(_dynamics, m), primals, series)
    return {"dv": jnp.stack(dv), "fe": jnp.stack(dfe[: order + 1]), "tau": jnp.stack([tau, *tau_ser]),
            "R": R, "p": p, "spatial": jnp.stack([Vs, *Vs_ser])}


@functools.cache
def _compiled_oracle(order: int):
    """:func:`_oracle_series` compiled once for all models (their arrays padded to ``SLOTS``)."""
    example = {k: jax.ShapeDtypeStruct(shape, dtype) for k, (shape, dtype) in ARRAY_SHAPES.items()}
    return (
        jax.jit(functools.partial(_oracle_series, order=order))
        .lower(0.0, example)
        .compile(compiler_options=XLA_OPTIONS)
    )


#: the padded model and trajectory arrays of :func:`_oracle_series`: name -> (shape, dtype)
ARRAY_SHAPES = {
    "coef": ((4, SLOTS, 7), float), "B0": ((SLOTS, 4, 3, 3), float),
    "B": ((SLOTS, 4, 2, 3, 3), float), "JR": ((SLOTS, 3, 3), float), "Jp": ((SLOTS, 3), float),
    "anc": ((JUMPS, SLOTS), np.int64), "subtree": ((SLOTS, SLOTS), float), "mass": ((SLOTS,), float),
    "com": ((SLOTS, 3), float), "Ic": ((SLOTS, 3, 3), float), "Sel": ((SLOTS, 6, 6), float),
    "arm": ((SLOTS, 6), float), "g": ((3,), float), "fA": ((SLOTS, 6), float),
    "fB": ((SLOTS, 6), float), "fw": ((SLOTS, 6), float),
}


class Series:
    """The oracle's derivatives at one time, in loopdyn's coordinates."""

    def __init__(self, model, q, out):
        nj, order = model.njoints, out["tau"].shape[0] - 1
        self.q = q
        self.dv = np.zeros((order + 2, model.nv))  # v^(0…order + 1)
        self.tau = np.zeros((order + 1, model.nv))  # τ^(0…order)
        for i, b in enumerate(model.bodies, start=1):
            iv, nv = b.idx_v, b.joint.nv
            self.dv[:, iv : iv + nv] = out["dv"][:, i, :nv]
            self.tau[:, iv : iv + nv] = out["tau"][:, i, :nv]
        self.fe = np.asarray(out["fe"][:, :nj])  # f_ext^(0…order), body frames, [force; torque]
        self.R, self.p = np.asarray(out["R"][:nj]), np.asarray(out["p"][:nj])  # world poses
        self.spatial = np.asarray(out["spatial"][:, :nj])  # spatial twists (ω; ṗ − ω × p)^(0…order)


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

    def arrays(self) -> dict:
        """The model's parameters and the trajectory's, padded to ``SLOTS`` (see ARRAY_SHAPES)."""
        model, nj = self.model, self.model.njoints
        assert nj <= SLOTS, f"{model.name}: {nj} joints, the oracle is padded to {SLOTS}"
        m = {k: np.zeros(shape, dtype) for k, (shape, dtype) in ARRAY_SHAPES.items()}
        R0 = np.tile(np.eye(3), (SLOTS, 1, 1))
        m["JR"][:] = np.eye(3)
        K = np.zeros((SLOTS, 4, 3, 3))  # Rodrigues' K of α, β, γ, θ
        K[:, :3] = [_skew_np([0, 0, 1]), _skew_np([0, 1, 0]), _skew_np([1, 0, 0])]
        parent = np.zeros(SLOTS, np.int64)
        for i, b in enumerate(model.bodies, start=1):
            (a, w, ph, bb), q0 = self.params[i - 1]
            coef, code = np.stack([a, w, ph, bb]), b.joint.code
            axis = np.asarray(b.joint.axis_array(), float) if code <= J.PRISMATIC else None
            if code in (J.REVOLUTE, J.REVOLUTE_UNBOUNDED):  # θ
                m["coef"][:, i, 6] = coef[:, 0]
                K[i, 3] = _skew_np(axis)
                m["Sel"][i, 0, 3:] = axis
            elif code == J.PRISMATIC:  # p = axis s
                m["coef"][:, i, :3] = np.stack([a * axis, w + 0 * axis, ph + 0 * axis, bb * axis])
                m["Sel"][i, 0, :3] = axis
            elif code == J.SPHERICAL:  # α, β, γ
                m["coef"][:, i, 3:6] = coef
                R0[i] = trees.quat_to_matrix(q0)
                m["Sel"][i, :3, 3:] = np.eye(3)
            else:  # free flyer: p, α, β, γ
                m["coef"][:, i, :6] = coef
                R0[i] = trees.quat_to_matrix(q0)
                m["Sel"][i] = np.eye(6)
            m["JR"][i], m["Jp"][i] = b.rotation, b.translation
            m["mass"][i], m["com"][i], m["Ic"][i] = b.inertia.mass, b.inertia.com, b.inertia.inertia
            m["arm"][i, : b.joint.nv] = b.armature_vector()
            parent[i] = b.parent
            j = i
            while j > 0:  # i is in the subtree of each of its ancestors j
                m["subtree"][j, i] = 1.0
                j = model.bodies[j - 1].parent
        m["B0"][:] = np.eye(3)
        m["B"][:, :, 0], m["B"][:, :, 1] = K, K @ K
        first = m["JR"] @ R0  # the constant factor in front of Rz(α)
        m["B0"][:, 0], m["B"][:, 0] = first, first[:, None] @ m["B"][:, 0]
        anc = parent
        for k in range(JUMPS):
            m["anc"][k] = anc
            anc = anc[anc]
        assert not anc.any(), f"{model.name}: deeper than 2**{JUMPS}"
        m["g"] = np.asarray(model.gravity, float)
        m["fA"][:nj], m["fB"][:nj], m["fw"][:nj] = self.fA, self.fB, self.fw
        return m

    def q(self, t: float) -> np.ndarray:
        out = np.zeros(self.model.nq)
        for i, b in enumerate(self.model.bodies):
            coef, q0 = self.params[i]
            s = _s(coef, t)
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

    def series(self, t0: float, order: int = 5) -> Series:
        """q(t0) and the oracle's derivatives at t0 (one compiled call)."""
        m = {k: jnp.asarray(x) for k, x in self.arrays().items()}
        out = _compiled_oracle(order)(jnp.asarray(t0, float), m)
        return Series(self.model, self.q(t0), {k: np.asarray(x) for k, x in out.items()})


def reference(traj: Trajectory, t0: float, order: int):
    """q, dv (order + 2 rows), f_ext (order + 1 rows), τ^(0…order) from the oracle."""
    s = traj.series(t0, order)
    return s.q, s.dv, s.fe, s.tau


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
def _hat_ad(V):
    def sk(x):
        return np.array([[0, -x[2], x[1]], [x[2], 0, -x[0]], [-x[1], x[0], 0]])

    return np.block([[sk(V[:3]), np.zeros((3, 3))], [sk(V[3:]), sk(V[:3])]])


def test_errata_E2_E3_negative_controls_on_the_aerial_manipulator():
    model = ld.robots.aerial_manipulator()
    data = model.create_data()
    traj = Trajectory(model, np.random.default_rng(5), forces=False)
    t0 = 0.4
    # the oracle's order-5 pass (the one the other tests compile), its orders 0…2
    s = traj.series(t0)
    Vs = s.spatial[:3]  # (3, njoints, 6): V, V̇, V̈ per body, V = (ω; ṗ − ω × p) spatial
    R, p, dv = s.R, s.p, s.dv[:3]
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
    tau = ho.rnea(model, data, s.q, dv[:3])
    C1 = (R[1], p[1])
    W0 = ho.body_to_spatial_wrench(C1, Vs[:, 1], tau[:, :6])

    # Ẇ⁰ from τ (checked against AD above) and D9 (checked against Table 5b in the identities tests)
    printed = W0[1] + _hat_ad(Vs[0, 1]).T @ W0[0]
    assert np.abs(printed - W0[1]).max() > 1e-3 * np.abs(W0[1]).max()
    np.testing.assert_allclose(
        ho.spatial_to_body_wrench(C1, Vs[:, 1], W0)[1], tau[1, :6], atol=1e-10 * np.abs(tau).max()
    )
