"""loopdyn.higher_order on models with explicit clusters of constant G (geared rotors, belts):
order 0 against loopdyn's cluster algorithms (C-RNEA, C-ABA); orders 0–5 with external forces on
every explicit-cluster built-in robot against Gᵀ τ_span⁽ᵏ⁾ of a Taylor-mode AD oracle (NumPy series
arithmetic, G from the couplings' ratios), and pbt_chain against JAX's jet of the spanning tree's
RNEA (written in JAX here);
implicit clusters in tests/test_higher_order_loops.py."""

from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
import pytest
import trees
from loop_oracles import SpanningPinocchio
from revolute_tables import XLA_OPTIONS, revolute_tables

import loopdyn as ld
from loopdyn import errors
from loopdyn import higher_order as ho
from loopdyn.model import joints as J
from loopdyn.model.clusters import EXPLICIT
from loopdyn.robots import registry

ROBOTS = {
    "mini_cheetah": lambda: ld.robots.mini_cheetah(),
    "mit_humanoid_leg": lambda: ld.robots.mit_humanoid_leg(),
    "mit_humanoid": lambda: ld.robots.mit_humanoid(),
    "jvrc1": lambda: ld.robots.jvrc1(),
    "gt_chain": lambda: ld.robots.gt_chain(n=4),
    "pbt_chain": lambda: ld.robots.pbt_chain(n=4),
}


def global_G(model) -> np.ndarray:
    """v_span = G v from the model's public cluster information."""
    G = np.zeros((model.spanning_nv, model.nv))
    for c in model.clusters().clusters:
        if c.kind == 0:
            b = model.bodies[c.bodies[0] - 1]
            G[b.idx_v : b.idx_v + c.nv, c.iv : c.iv + c.nv] = np.eye(c.nv)
        else:
            for loc, bi in enumerate(c.bodies):
                G[model.bodies[bi - 1].idx_v, c.iv : c.iv + c.m] = c.G_const[loc]
    return G


@pytest.mark.parametrize("name", list(ROBOTS))
def test_order_zero_is_loopdyn_cluster_rnea_and_aba_and_round_trip(name):
    model = ROBOTS[name]()
    data = model.create_data()
    rng = np.random.default_rng(0)
    for _ in range(2):
        q = ld.random_configuration(model)
        dv = rng.normal(size=(7, model.nv)) * 0.7 ** np.arange(7)[:, None]
        fe = rng.normal(size=(6, model.njoints, 6)) * 0.7 ** np.arange(6)[:, None, None]
        tau = ho.rnea(model, data, q, dv, fe)
        ref = ld.rnea(model, data, q, dv[0], dv[1], fe[0])
        np.testing.assert_allclose(tau[0], ref, atol=1e-11 * np.abs(ref).max())
        a = ho.aba(model, data, q, dv[0], tau, fe)
        np.testing.assert_allclose(a[0], ld.aba(model, data, q, dv[0], tau[0], fe[0]), atol=1e-9)
        np.testing.assert_allclose(a, dv[1:], atol=1e-9 * max(1.0, np.abs(tau).max()))
        # Gᵀ times the spanning tree's derivatives at the spanning state
        tree = ld.spanning_tree(model)
        G = global_G(model)
        qs = ld.to_spanning(model, q, dv[0])[0]
        ts = ho.rnea(tree, tree.create_data(), qs, dv @ G.T, fe)
        np.testing.assert_allclose(tau, ts @ G, atol=1e-11 * np.abs(tau).max())


#: XLA options for the jet oracle's compilations (it runs once, so its run time does not matter; XLA's
#: CPU fusion emitters and backend optimisation would take most of its cost)


def _taylor_compiled(f, t0: float, order: int) -> np.ndarray:
    """(order + 1, …): f(t0) and its first ``order`` time derivatives by JAX's Taylor mode (jet),
    traced and compiled once by ``jax.jit`` (with :data:`XLA_OPTIONS`)."""
    import jax
    from jax.experimental import jet

    def series(t):
        primal, terms = jet.jet(f, (t,), ((1.0,) + (0.0,) * (order - 1),))
        return jax.numpy.stack([primal, *terms])

    return np.asarray(jax.jit(series).lower(t0).compile(compiler_options=XLA_OPTIONS)(t0))


def _jax_tree_rnea(tree):
    """``τ(θ, θ̇, θ̈)`` of a tree of revolute joints, written here in JAX from the model's parameters
    alone: Featherstone's RNEA in body frames (spatial vectors [angular; linear], gravity as the
    base's acceleration), plus the joints' armature times θ̈."""
    import jax.numpy as jnp

    for k, b in enumerate(tree.bodies):
        assert b.joint.code in (J.REVOLUTE, J.REVOLUTE_UNBOUNDED) and b.idx_v == k, b.name
    # X(θ) = X0 + sin θ XS − cos θ XC: the parent → child motion transform, linear in R (Rodrigues)
    X0, XS, XC, S, I6 = revolute_tables(tree.bodies, lambda b: b.joint.axis_array())
    arm = [float(b.armature_vector()[0]) for b in tree.bodies]
    parents = [b.parent for b in tree.bodies]
    grav = np.concatenate([np.zeros(3), -np.asarray(tree.gravity, float)])

    def crm(v):
        w, u = _skew_jnp(v[:3]), _skew_jnp(v[3:])
        return jnp.block([[w, jnp.zeros((3, 3))], [u, w]])

    def rnea(th, thd, thdd):
        vel, acc, X, f = {0: jnp.zeros(6)}, {0: jnp.asarray(grav)}, {}, {}
        for i, par in enumerate(parents, start=1):
            X[i] = X0[i - 1] + jnp.sin(th[i - 1]) * XS[i - 1] - jnp.cos(th[i - 1]) * XC[i - 1]
            Sqd = S[i - 1] * thd[i - 1]
            vel[i] = X[i] @ vel[par] + Sqd
            acc[i] = X[i] @ acc[par] + S[i - 1] * thdd[i - 1] + crm(vel[i]) @ Sqd
            f[i] = I6[i - 1] @ acc[i] - crm(vel[i]).T @ (I6[i - 1] @ vel[i])
        tau = [None] * len(parents)
        for i in range(len(parents), 0, -1):
            tau[i - 1] = jnp.dot(S[i - 1], f[i]) + arm[i - 1] * thdd[i - 1]
            if parents[i - 1] > 0:
                f[parents[i - 1]] = f[parents[i - 1]] + X[i].T @ f[i]
        return jnp.stack(tau)

    return rnea


def _skew_jnp(x):
    import jax.numpy as jnp

    return jnp.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])


@pytest.mark.parametrize("name", ["pbt_chain"])
def test_higher_orders_match_autodiff_of_the_spanning_tree(name):
    """τ⁽⁰…³⁾ of ``higher_order.rnea`` against Gᵀ τ_span⁽ᵏ⁾, τ_span(t) = RNEA_span(G y(t), G ẏ(t), G ÿ(t))
    (:func:`_jax_tree_rnea`, ẏ and ÿ by JAX's forward mode on y) differentiated in t by JAX's Taylor
    mode (jet), compiled once."""
    import jax

    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy

    model = getattr(ld.robots, name)(n=2)
    data = model.create_data()
    tree = ld.spanning_tree(model)
    G = global_G(model)
    rng = np.random.default_rng(3)
    coef = np.stack([rng.uniform(0.3, 1.0, model.nv), rng.uniform(0.5, 2.0, model.nv),
                     rng.uniform(-np.pi, np.pi, model.nv), rng.uniform(-0.5, 0.5, model.nv)])  # fmt: skip

    def y(t):
        a, w, ph, b = (jnp.asarray(x) for x in coef)
        return a * jnp.sin(w * t + ph) + b * t * t

    yd = jax.jacfwd(y)
    ydd = jax.jacfwd(yd)
    rnea_span = _jax_tree_rnea(tree)
    Gj = jnp.asarray(G)

    def tau_span(t):  # the spanning joint angles θ = G y(t) (revolute joints)
        return rnea_span(Gj @ y(t), Gj @ yd(t), Gj @ ydd(t))

    t0, order = 0.3, 3
    ref_span = _taylor_compiled(tau_span, t0, order)
    dv = _taylor_compiled(yd, t0, order + 1)
    got = ho.rnea(model, data, np.asarray(y(t0)), dv)
    for k in range(order + 1):
        expected = G.T @ ref_span[k]
        np.testing.assert_allclose(got[k], expected, rtol=1e-9, atol=1e-9 * np.abs(ref_span[k]).max())


# ----------------------------------------------------------------------------------------------
# the oracle for every explicit-cluster robot: Taylor-mode automatic differentiation (truncated
# Taylor series, written here in NumPy) of an order-0 Newton–Euler inverse dynamics of the spanning
# tree along an analytic trajectory. A series is an array whose axis 0 holds the Taylor coefficients
# x_k = x⁽ᵏ⁾(t0)/k!; products are Cauchy products, sin/cos the usual recurrences. Poses are composed
# from the joint motions, twists are (vee(RᵀṘ), Rᵀṗ) of the pose series, their derivatives the
# shifted series: no velocity recursion, nothing from loopdyn but the model's numbers. The spanning
# joints follow θ = G y(t) with G from the couplings' ratios (loop_oracles), y = a sin(ωt + φ) + b t²
# (free-flyer bases: R0 Rz Ry Rx of such functions and such a position), so τ_model⁽ᵏ⁾ = Gᵀ τ_span⁽ᵏ⁾.
def _conv(f, a, b):
    """Series of the bilinear f(a, b): Σ_{i+j=k} f(a_i, b_j), truncated to the shorter length."""
    n = min(len(a), len(b))
    P = f(a[:n, None], b[None, :n])
    return np.stack([sum(P[i, k - i] for i in range(k + 1)) for k in range(n)])


def _mm(a, b):
    return _conv(np.matmul, a, b)


def _mul(a, b):
    return _conv(np.multiply, a, b)


def _cross(a, b):
    return _conv(lambda x, y: np.cross(x, y), a, b)


def _matvec(a, b, transpose=False):
    spec = "...ba,...b->...a" if transpose else "...ab,...b->...a"
    return _conv(lambda x, y: np.einsum(spec, x, y), a, b)


def _sincos(u):
    s, c = np.zeros_like(u), np.zeros_like(u)
    s[0], c[0] = np.sin(u[0]), np.cos(u[0])
    for k in range(1, len(u)):
        s[k] = sum(j * u[j] * c[k - j] for j in range(1, k + 1)) / k
        c[k] = -sum(j * u[j] * s[k - j] for j in range(1, k + 1)) / k
    return s, c


def _d(a):
    """The series of the time derivative (one term shorter)."""
    return a[1:] * np.arange(1, len(a)).reshape((-1,) + (1,) * (a.ndim - 1))


def _derivatives(a):
    """Rows x⁽ᵏ⁾ = k! x_k."""
    return a * np.array([math.factorial(k) for k in range(len(a))]).reshape((-1,) + (1,) * (a.ndim - 1))


def _vee(W):
    return np.stack([W[..., 2, 1], W[..., 0, 2], W[..., 1, 0]], axis=-1)


def _rot(axis, s, c):
    """Series of the rotation about a unit axis by an angle of sine / cosine series s, c."""
    K = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
    one = np.zeros_like(c)
    one[0] = 1.0
    return one[:, None, None] * np.eye(3) + s[:, None, None] * K + (one - c)[:, None, None] * (K @ K)


def _const(x, n):
    """The series of a constant: x, then zeros."""
    out = np.zeros((n,) + np.shape(x))
    out[0] = x
    return out


class TaylorOracle:
    """q, v⁽⁰…ʳ⁺¹⁾, f_ext⁽⁰…ʳ⁾ and τ⁽⁰…ʳ⁾ of an explicit-cluster model along an analytic trajectory."""

    def __init__(self, model, G, rng):
        self.model, self.G = model, G
        nv, nj, nb = model.nv, model.njoints, model.nbodies
        self.coef = np.stack([rng.uniform(0.3, 1.0, nv), rng.uniform(0.5, 2.0, nv),
                              rng.uniform(-np.pi, np.pi, nv), rng.uniform(-0.5, 0.5, nv)])  # fmt: skip
        self.R0 = trees.quat_to_matrix(trees.random_quaternion(rng))
        self.fA, self.fB = rng.normal(size=(nj, 6)), rng.normal(size=(nj, 6))
        self.fw = rng.uniform(0.5, 2.0, size=(nj, 6))
        bodies = model.bodies
        self.ff = {}  # free-flyer body → (its entries in the model's q, v) (the cluster table's layout)
        self.qrows = []  # (model q start, model v start, count): the other entries of q are y(t0)
        for c in model.clusters().clusters:
            if c.kind == 0 and bodies[c.bodies[0] - 1].joint.code == J.FREEFLYER:
                self.ff[c.bodies[0]] = (c.iq, c.iv)
            else:
                assert c.nq == c.nv, "explicit clusters and 1-DoF joints: q holds the independent angles"
                self.qrows.append((c.iq, c.iv, c.nv))
        self.mass = np.array([0.0] + [b.inertia.mass for b in bodies])
        self.com = np.array([np.zeros(3)] + [b.inertia.com for b in bodies])
        self.Ic = np.array([np.zeros((3, 3))] + [b.inertia.inertia for b in bodies])
        self.sub = np.zeros((nb + 1, nb + 1))  # sub[i, j] = 1: body j is in the subtree of body i
        for j in range(1, nb + 1):
            k = j
            while k > 0:
                self.sub[k, j] = 1.0
                k = bodies[k - 1].parent
        nvs = model.spanning_nv
        self.Sn, self.Sf = np.zeros((nvs, nb + 1, 3)), np.zeros((nvs, nb + 1, 3))  # joint axes
        self.arm = np.zeros(nvs)
        for i, b in enumerate(bodies, 1):
            iv = b.idx_v
            self.arm[iv : iv + b.joint.nv] = b.armature_vector()
            if b.joint.code == J.FREEFLYER:
                self.Sf[iv : iv + 3, i] = np.eye(3)
                self.Sn[iv + 3 : iv + 6, i] = np.eye(3)
            elif b.joint.code == J.PRISMATIC:
                self.Sf[iv, i] = b.joint.axis_array()
            else:
                self.Sn[iv, i] = b.joint.axis_array()

    def reference(self, t0: float, order: int):
        model, n, m = self.model, order + 3, order + 1  # poses to order r + 2: accelerations to r
        t = _const(t0, n)
        t[1] = 1.0
        a, w_, ph, b_ = self.coef
        s, _ = _sincos(w_ * t[:, None] + _const(ph, n))
        y = a * s + b_ * _mul(t, t)[:, None]  # (n, nv)
        th = y @ self.G.T  # the spanning coordinates (free-flyer rows unused)
        q = np.zeros(model.nq)
        Rs, ps = [_const(np.eye(3), n)], [np.zeros((n, 3))]
        for iq, iv, k in self.qrows:
            q[iq : iq + k] = y[0, iv : iv + k]
        for i, b in enumerate(model.bodies, 1):
            code = b.joint.code
            if code == J.FREEFLYER:
                iq, iv = self.ff[i]
                sf = y[:, iv : iv + 6]  # G is the identity on a free flyer's columns
                Rm = _const(self.R0, n)
                for k, ax in ((3, (0, 0, 1)), (4, (0, 1, 0)), (5, (1, 0, 0))):
                    Rm = _mm(Rm, _rot(np.array(ax, float), *_sincos(sf[:, k])))
                pm = sf[:, :3]
                q[iq : iq + 3] = pm[0]
                q[iq + 3 : iq + 7] = pin.Quaternion(Rm[0]).coeffs()
            elif code in (J.REVOLUTE, J.REVOLUTE_UNBOUNDED):
                Rm, pm = _rot(b.joint.axis_array(), *_sincos(th[:, b.idx_v])), np.zeros((n, 3))
            else:
                assert code == J.PRISMATIC, b.joint.kind
                Rm, pm = _const(np.eye(3), n), th[:, b.idx_v, None] * b.joint.axis_array()
            Rp, pp = Rs[b.parent], ps[b.parent]
            RJ = Rp @ b.rotation
            Rs.append(_mm(RJ, Rm))
            ps.append(pp + Rp @ b.translation + _matvec(RJ, pm))
        R, p = np.stack(Rs, axis=1), np.stack(ps, axis=1)  # (n, nb + 1, …)
        w = _vee(_conv(lambda x, z: np.swapaxes(x, -1, -2) @ z, R, _d(R)))  # body twists (ω_b, v_b)
        v = _matvec(R, _d(p), transpose=True)
        vm = _d(y)  # the model's velocity series: ẏ, a free flyer's body twist (linear first)
        for i, (_, iv) in self.ff.items():
            vm[:, iv : iv + 6] = np.concatenate([v[:, i], w[:, i]], axis=1)
        dw, dv = _d(w), _d(v)  # (m, …)
        R, p, w, v = R[:m], p[:m], w[:m], v[:m]
        c = self.com
        vc = v + np.cross(w, c)
        ac = dv + np.cross(dw, c)
        g = np.einsum("kiba,b->kia", R, np.asarray(model.gravity, float))
        f = self.mass[:, None] * (ac + _cross(w, vc) - g)
        nc = np.einsum("iab,kib->kia", self.Ic, dw) + _cross(w, np.einsum("iab,kib->kia", self.Ic, w))
        nc = nc + np.cross(c, f)
        fs, fc = _sincos(self.fw * t[:m, None, None])
        fe = self.fA * fs + self.fB * t[:m, None, None]
        f, nc = f - fe[..., :3], nc - fe[..., 3:]
        fw = _matvec(R, f)  # world wrenches about the world origin, summed over subtrees
        nw = _matvec(R, nc) + _cross(p, fw)
        fw, nw = np.einsum("ij,kja->kia", self.sub, fw), np.einsum("ij,kja->kia", self.sub, nw)
        f_loc = _matvec(R, fw, transpose=True)
        n_loc = _matvec(R, nw - _cross(p, fw), transpose=True)
        tau = np.einsum("sia,kia->ks", self.Sn, n_loc) + np.einsum("sia,kia->ks", self.Sf, f_loc)
        tau = tau + self.arm * (_d(_d(y)) @ self.G.T)
        return q, _derivatives(vm), _derivatives(fe), _derivatives(tau) @ self.G


#: every built-in robot whose clusters are all explicit (checked below against the registry)
EXPLICIT_ROBOTS = ["mini_cheetah", "mit_humanoid", "mit_humanoid_leg", "jvrc1", "gt_chain", "pbt_chain"]


def test_the_explicit_cluster_robots_are_all_the_built_in_ones():
    found = []
    for name in registry.names():
        kinds = {c.kind for c in registry.build(name).clusters().clusters}
        if EXPLICIT in kinds and kinds <= {0, EXPLICIT}:
            found.append(name)
    assert sorted(found) == sorted(EXPLICIT_ROBOTS)


@pytest.mark.parametrize("name", EXPLICIT_ROBOTS)
def test_orders_0_to_5_with_external_forces_match_taylor_mode_autodiff(name):
    """τ⁽⁰…⁵⁾ of ``higher_order.rnea`` against Gᵀ τ_span⁽ᵏ⁾ of the Taylor-mode oracle (G from the
    couplings), with external forces, 1e-10 relative; ``higher_order.aba`` of the oracle's τ gives back
    v⁽¹…⁶⁾ to 1e-11 of ‖H⁻¹‖ times the largest torque or force of orders ≤ k (the errors of the
    lower orders feed the higher ones); negative controls: without the forces, and with the rotors'
    rows of G dropped, τ differs."""
    model = registry.build(name)
    data = model.create_data()
    G = SpanningPinocchio(model).coupling_G()
    order = 5
    oracle = TaylorOracle(model, G, np.random.default_rng(len(name)))
    q, dv, fe, ref = oracle.reference(0.37, order)
    assert np.abs(ld.constraint_residual(model, q)).max(initial=0.0) == 0.0  # explicit: y is q
    got = ho.rnea(model, data, q, dv, fe)
    assert got.shape == (order + 1, model.nv)
    for k in range(order + 1):
        err = np.abs(got[k] - ref[k]).max() / max(1.0, np.abs(ref[k]).max())
        assert err < 1e-10, (k, err)
    back = ho.aba(model, data, q, dv[0], ref, fe)
    Hinv = 1.0 / np.linalg.eigvalsh(ld.crba(model, data, q))[0]
    for k in range(order + 1):
        # against the problem's condition: ‖H⁻¹‖ times the size of the torques and forces driving it
        scale = Hinv * max(1.0, np.abs(ref[: k + 1]).max(), np.abs(fe[: k + 1]).max())
        err = np.abs(back[k] - dv[k + 1]).max() / scale
        assert err < 1e-11, (k, err)
    # negative controls (the comparisons above could not pass with the forces or the rotors ignored)
    assert np.abs(ho.rnea(model, data, q, dv) - ref).max() > 1e-3 * np.abs(ref).max()
    G_links = G.copy()
    G_links[np.abs(G).sum(axis=1) > 1.5] = 0.0  # the geared rows (ratios > 1)
    _, _, _, ref_links = TaylorOracle(model, G_links, np.random.default_rng(len(name))).reference(0.37, order)
    assert np.abs(got - ref_links).max() > 1e-3 * np.abs(ref).max()


def test_taylor_arithmetic_against_mpmath():
    """The series arithmetic of the oracle (products, sin/cos, derivatives) against mpmath's
    derivatives in 40-digit arithmetic of sin(u)·cos(u)·t² and of u = 0.7 sin(1.3 t + 0.2) + 0.4 t²,
    at t = 0.37, to order 7."""
    import mpmath

    def u_of(x):
        return 0.7 * mpmath.sin(1.3 * x + 0.2) + 0.4 * x**2

    n, t0 = 8, 0.37
    t = _const(t0, n)
    t[1] = 1.0
    s1, _ = _sincos(1.3 * t + _const(0.2, n))
    u = 0.7 * s1 + 0.4 * _mul(t, t)
    s, c = _sincos(u)
    got = _derivatives(_mul(_mul(s, c), _mul(t, t)))
    with mpmath.workdps(40):
        ref = [float(mpmath.diff(lambda x: mpmath.sin(u_of(x)) * mpmath.cos(u_of(x)) * x**2, t0, k))
               for k in range(n)]  # fmt: skip
        du = [float(mpmath.diff(u_of, t0, k + 1)) for k in range(n - 1)]
    np.testing.assert_allclose(got, ref, rtol=1e-12)
    np.testing.assert_allclose(_derivatives(_d(u)), du, rtol=1e-12)


@pytest.mark.parametrize("name", ["four_bar", "planar_leg_linkage"])
def test_tree_only_functions_refuse_models_with_loops(name):
    """rnea and aba take loops (tests/test_higher_order_loops.py); closed_form and hybrid do not."""
    model = ld.robots.build(name)
    data = model.create_data()
    q = ld.neutral(model)
    with pytest.raises(errors.UnsupportedFeatureError, match="kinematic trees only"):
        ho.closed_form(model, data, q, np.zeros(model.nv))
    with pytest.raises(errors.UnsupportedFeatureError, match="kinematic trees only"):
        ho.hybrid(model, data, q, np.zeros((2, model.nv)), np.zeros((1, model.nv)), [])


def test_cluster_models_bad_input_and_unsupported_functions():
    model = ld.robots.mini_cheetah()
    data = model.create_data()
    q = ld.random_configuration(model)
    dv = np.zeros((3, model.nv))
    with pytest.raises(errors.ShapeError, match="dv"):
        ho.rnea(model, data, q, dv[:, :-1])
    with pytest.raises(errors.ShapeError, match="q"):
        ho.rnea(model, data, q[:-1], dv)
    qb = q.copy()
    qb[3:7] *= 2.0
    with pytest.raises(errors.ConfigurationError):
        ho.rnea(model, data, qb, dv)
    bad = dv.copy()
    bad[1, 0] = np.nan
    with pytest.raises(errors.NonFiniteError, match="dv"):
        ho.rnea(model, data, q, bad)
    with pytest.raises(errors.ShapeError, match="f_ext"):
        ho.aba(model, data, q, dv[0], dv, np.zeros((2, model.njoints, 6)))
    with pytest.raises(errors.UnsupportedFeatureError):
        ho.closed_form(model, data, q, dv[0])
    with pytest.raises(errors.UnsupportedFeatureError):
        ho.hybrid(model, data, q, dv, dv[1:], [])


@pytest.mark.parametrize("name", list(ROBOTS))
def test_cluster_recursion_matches_the_joint_space_factorisation(name):
    """The order-r cluster articulated-body recursion (``cluster_aba``) against the joint-space
    variant that assembles ``Gᵀ(M_span + armature)G`` from spanning-tree evaluations and factorises it
    (an independent formulation), r = 0…5 with external forces."""
    from loopdyn.higher_order import clusters as cl
    from loopdyn.higher_order.arrays import model_arrays

    model = ROBOTS[name]()
    data = model.create_data()
    hb, hf = model_arrays(model, data)
    mi, mf = cl.cluster_maps(model, data)
    rng = np.random.default_rng(7)
    for r in range(6):
        q = ld.random_configuration(model)
        v = rng.normal(size=model.nv)
        dtau = rng.normal(size=(r + 1, model.nv)) * 5.0
        fe = rng.normal(size=(r + 1, model.njoints, 6))
        got = ho.aba(model, data, q, v, dtau, fe)
        ref = np.empty_like(got)
        assert cl.cluster_aba_dense_kernel(hb, hf, mi, mf, q, v, dtau, fe, ref) == 0
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-10 * np.abs(ref).max())
