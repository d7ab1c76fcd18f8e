"""loopdyn.higher_order on models with implicit loops, against an independent Taylor-mode oracle.

The oracle (:func:`_taylor_oracle`) is written here from the model's parameters alone, for models whose
bodies are revolute joints forming ONE implicit cluster (four_bar, five_bar, rssr_linkage):

* the independent coordinates follow ``y(t) = y0 + Σ_{k≥1} dv[k−1] t^k / k!`` (so ``ẏ^(k)(0) = dv[k]``);
* the spanning positions ``q_s(t)`` close the loop ``φ(q_s) = 0`` (the cluster's sympy φ, expanded
  to a polynomial in sin q_j, cos q_j and evaluated in JAX) by a Newton step on the dependent
  coordinates from the prediction ``x0 + t ẋ0 + t²/2 ẍ0`` (error O(t³) → O(t⁶), enough for order 5;
  checked: the derivatives 0…5 of φ(q_s(t)) vanish);
* ``G = P[1; −K_d⁻¹K_i]`` and ``g = P[0; −K_d⁻¹ K̇q̇]`` with K and K̇q̇ by JAX forward mode on φ, the
  small solves by the adjugate formula (jet has no rule for the LU of ``jnp.linalg.solve``);
* ``τ(t) = G(q_s)ᵀ RNEA(q_s, G ẏ, G ÿ + g, f_ext(t))`` with the spanning tree's RNEA written here
  (Featherstone, body frames, external forces ``[force; torque]`` in body frames subtracted, as
  ``loopdyn.rnea``), and ``f_ext(t) = Σ_k f_ext[k] t^k / k!``;
* τ^(0…r) at t = 0 by Taylor-mode AD (``jax.experimental.jet``): the curve enters as the jet series of
  the inputs (y^(k) = dv[k−1], ẏ^(k) = dv[k], ÿ^(k) = dv[k+1], f^(k) = f_ext[k]); one compilation per
  model for all its states (vmap), with XLA's expensive CPU passes off (:data:`XLA_OPTIONS`).

The oracle is checked on its own: order 0 = ``loopdyn.rnea`` (C-RNEA, ≤ 1e-10; measured ≤ 3e-14);
order 1 = the chain rule through ``loopdyn.rnea_derivatives`` (≤ 1e-10; measured ≤ 1.1e-14); orders
1, 2 = Richardson-extrapolated central differences in t of its own τ(t) (Newton converged at each t)
(≤ 1e-8 / 1e-6; measured ≤ 3e-12 / 1e-8); φ^(0…5) along the curve ≤ 1e-11 (measured ≤ 1e-12); a
negative control freezing G at t = 0 agrees at order 0 and differs by 0.25…1.4 (relative) at orders
1…5 on five_bar and rssr_linkage. ``higher_order.rnea`` is then checked against it (order k
relative to max|τ^(k)|, :func:`rel_err_rows`; measured ≤ 4e-13), ``higher_order.aba`` by its backward
error on the oracle's τ and in round trips (:func:`residual_orders`), then order-0 identities and
bad input. The states are on the loop to rounding (``project_configuration(tol=1e-14)``): both sides
then evaluate the same point (the oracle closes the loop at t = 0; loopdyn takes q as given, as
``loopdyn.rnea`` does).

Cost (CPU, this shared machine): ~6–14 s per oracle robot (tracing ~2 s and compiling ~5 s one batched
Taylor-mode graph of ~1.1e4 operations, plus ~1.5 s for τ(t)); the file ~35 s including imports.
"""

from __future__ import annotations

import functools
import math
import re
import time

import jax
import numpy as np
import pytest
import sympy
from jax.experimental import jet
from revolute_tables import XLA_OPTIONS, revolute_tables, skew

import loopdyn
from loopdyn import higher_order as ho
from loopdyn.errors import LoopdynError

jax.config.update("jax_enable_x64", True)
jnp = jax.numpy

RTOL = 1e-9
ORDER = 5  # orders 0…ORDER
N_NEWTON = 1  # from x0 + t ẋ0 + t²/2 ẍ0 (error O(t³)): O(t⁶) after one step, enough for ORDER = 5
N_NEWTON_AT = 4  # τ(t) at a finite t (the difference checks): converged to rounding
COND_MAX = 3.0  # the oracle's states: cond(K_d) at most this (see rel_err_orders; four_bar's second
# state at cond(K_d) ≈ 10 compared to 3e-12 of max|τ^(3)| even on the loop to rounding)
ORACLE_ROBOTS = ["four_bar", "five_bar", "rssr_linkage"]
ROUND_TRIP_ROBOTS = ORACLE_ROBOTS + ["planar_leg_linkage", "delta_robot", "tello"]


def rel_err(a, b) -> float:
    """Largest entry-wise error relative to the largest entry of ``b`` (at least 1e-300)."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    return float(np.max(np.abs(a - b)) / max(float(np.max(np.abs(b))), 1e-300))


def rel_err_rows(a, b) -> np.ndarray:
    """Row k: the error of row k relative to max|b[k]| (one scale per order)."""
    return np.array([rel_err(x, y) for x, y in zip(a, b, strict=True)])


def residual_orders(model, data, q, v, got, tau, fext=None) -> np.ndarray:
    """Row k (order k of forward dynamics): the backward error of ``got`` = v^(1…r+1), i.e. how far
    inverse dynamics of (v, got) is from the forces τ it was solved from, ``max|rnea(q, [v; got])[k]
    − τ^(k)|`` relative to the largest entry of τ^(0…k). Free of the conditioning that the forward
    error carries (cond(H) reaches 3e5 on Tello, and an error of v^(j) enters τ^(k) for every j ≤ k
    with weights that grow with k)."""
    back = ho.rnea(model, data, q, np.vstack([v[None], got]), fext)
    return np.array([float(np.max(np.abs(back[k] - tau[k])) / np.max(np.abs(tau[: k + 1])))
                     for k in range(len(got))])  # fmt: skip


def rel_err_orders(a, b) -> np.ndarray:
    """Row k (order k of τ): the error of row k relative to the largest entry of b[0…k].

    The rounding of τ^(k) is set by its terms, not by its value: τ^(k) holds G^(j)ᵀ τ_s^(k−j) for
    j ≤ k, with τ_s^(0) (gravity) the size of τ^(0), and G^(k) is a series quotient whose terms grow
    like |K_d^(1)/K_d|^k while they cancel. On four_bar's parallelogram branch G is constant (so the
    frozen-G oracle is exact there), and the oracle's τ^(5) measured against it is off by up to 3e-8 of
    max|τ^(5)| at cond(K_d) ≈ 10 (where τ^(5) happens to be small), 1.5e-10 of max|τ^(0…5)| at
    cond(K_d) ≤ 3; five_bar and rssr_linkage: ≤ 3e-14 (the oracle at q and q + 2π)."""
    return np.array([float(np.max(np.abs(a[k] - b[k])) / np.max(np.abs(b[: k + 1]))) for k in range(len(b))])


# ------------------------------------------------------------------------------------------------
# the oracle
def _crm_tensor() -> np.ndarray:
    """T with ``(v×) = T @ v`` (T: (6, 6, 6), contracted on its last index): Featherstone's spatial
    motion cross product, [angular; linear]."""
    T = np.zeros((6, 6, 6))
    for k in range(6):
        e = np.zeros(6)
        e[k] = 1.0
        w, u = skew(e[:3]), skew(e[3:])
        T[:, :, k] = np.block([[w, np.zeros((3, 3))], [u, w]])
    return T


CRM = _crm_tensor()


def _solve(A, B):
    """``A⁻¹ B`` for n ≤ 3 by the adjugate (only mul, add, div: jet has no rule for the LU of
    ``jnp.linalg.solve``). For n = 3 with rows a0, a1, a2: A⁻¹ = [a1×a2, a2×a0, a0×a1] / a0·(a1×a2)
    (columns)."""
    n = A.shape[0]
    assert n <= 3, "the oracle's explicit solve is written for at most 3 dependent coordinates"
    if n == 1:
        return B / A[0, 0]
    if n == 2:
        adj = jnp.stack([jnp.stack([A[1, 1], -A[0, 1]]), jnp.stack([-A[1, 0], A[0, 0]])])
        return adj @ B / (A[0, 0] * A[1, 1] - A[0, 1] * A[1, 0])
    cols = [jnp.cross(A[1], A[2]), jnp.cross(A[2], A[0]), jnp.cross(A[0], A[1])]
    return jnp.stack(cols, axis=1) @ B / (A[0] @ cols[0])


class _Oracle:
    """τ^(0…r) along a curve of a model whose bodies are revolute joints forming one implicit cluster,
    from the model's parameters only (see the module docstring). Every piece is written with few,
    vectorised JAX operations: Taylor mode (jet) costs O(r²) operations per primitive, whatever its
    size, so the operation count is the trace cost."""

    def __init__(self, model):
        (c,) = model.clusters().clusters
        assert c.kind == 2 and list(c.bodies) == list(range(1, model.nbodies + 1)), model.name
        for k, b in enumerate(model.bodies):
            assert b.joint.nq == 1 and b.joint.nv == 1 and b.joint.code == 1, (model.name, b.name)
            assert b.idx_q == b.idx_v == k, (model.name, b.name)
            assert not np.any(b.armature_vector()), (model.name, b.name)
        self.n = c.n
        self.nv, self.nj = c.m, model.njoints
        self.ind, self.dep = np.array(c.independent), np.array(c.dependent)
        self.perm = np.argsort(np.concatenate([self.ind, self.dep]))  # concat(y, x)[perm] = q
        self._trig_polynomial(c)
        # bodies: X_i = X0_i + sin q_i XS_i − cos q_i XC_i (Rodrigues: R = R0 (I + s A + (1 − c) A²))
        self.X0, self.XS, self.XC, self.S, self.I6 = revolute_tables(model.bodies)
        self.parents = [b.parent for b in model.bodies]
        self.grav = np.concatenate([np.zeros(3), -np.asarray(model.gravity, float)])

    def _trig_polynomial(self, c) -> None:
        """φ as written by the cluster (sympy), expanded to a polynomial in sin q_j, cos q_j:
        ``φ = C @ Π_j F_j`` with ``F_j = E0_j + ES_j sin q_j + EC_j cos q_j`` (one entry per
        monomial; a coordinate of degree > 1 in a monomial is refused)."""
        q = list(c.symbols)
        gens = [f(x) for x in q for f in (sympy.sin, sympy.cos)]
        polys = [sympy.Poly(sympy.expand(e), *gens) for e in c.phi_exprs]
        monomials = sorted({m for p in polys for m in p.monoms()})
        index = {m: k for k, m in enumerate(monomials)}
        self.C = np.zeros((len(polys), len(monomials)))
        for i, p in enumerate(polys):
            for m, coef in p.terms():
                self.C[i, index[m]] = float(coef)
        E = np.array(monomials).reshape(len(monomials), self.n, 2)  # exponents of (sin, cos)
        assert E.sum(axis=2).max() <= 1, f"{c}: φ has a monomial of degree > 1 in one coordinate"
        self.E0 = (E.sum(axis=2) == 0).astype(float).T  # (n, monomials)
        self.ES, self.EC = E[:, :, 0].T.astype(float), E[:, :, 1].T.astype(float)
        # the expansion is the same function: check at a few points
        f = sympy.lambdify(q, list(c.phi_exprs), "numpy")
        self.K_numpy = sympy.lambdify(q, sympy.Matrix(list(c.phi_exprs)).jacobian(q), "numpy")  # (states)
        for x in np.random.default_rng(0).uniform(-3, 3, (3, self.n)):
            assert np.allclose(np.asarray(f(*x), float), np.asarray(self.phi(jnp.asarray(x))), atol=1e-12)

    # -- the loop --------------------------------------------------------------------------------
    def phi(self, q):
        F = self.E0 + self.ES * jnp.sin(q)[:, None] + self.EC * jnp.cos(q)[:, None]
        M = F[0]
        for j in range(1, self.n):
            M = M * F[j]
        return jnp.asarray(self.C) @ M

    def K(self, q):
        """K = ∂φ/∂q (JAX forward mode)."""
        return jax.jacfwd(self.phi)(q)

    def kdot(self, q, qd):
        """K̇ q̇ = (∂²φ/∂q²)[q̇, q̇] (nested JAX forward mode)."""
        return jax.jvp(lambda x: jax.jvp(self.phi, (x,), (qd,))[1], (q,), (qd,))[1]

    def join(self, y, x):
        return jnp.concatenate([y, x])[self.perm]

    def G(self, K):
        """v_span = G ẏ: ``[1; −K_d⁻¹ K_i]`` in the spanning order."""
        return self.join(jnp.eye(self.nv), -_solve(K[:, self.dep], K[:, self.ind]))

    # -- the spanning tree's inverse dynamics ----------------------------------------------------
    def rnea(self, q, qd, qdd, fext):
        """Featherstone's RNEA in body frames; ``fext`` (njoints, 6) ``[force; torque]``, subtracted."""
        X = self.X0 + self.XS * jnp.sin(q)[:, None, None] - self.XC * jnp.cos(q)[:, None, None]
        Sqd, Sqdd = self.S * qd[:, None], self.S * qdd[:, None]
        vel = {0: jnp.zeros(6)}
        for i, p in enumerate(self.parents, start=1):
            vel[i] = X[i - 1] @ vel[p] + Sqd[i - 1]
        V = jnp.stack([vel[i] for i in range(1, self.n + 1)])
        coriolis = jnp.einsum("ijk,bk,bj->bi", CRM, V, Sqd)  # v_i × (S_i q̇_i)
        acc = {0: jnp.asarray(self.grav)}
        for i, p in enumerate(self.parents, start=1):
            acc[i] = X[i - 1] @ acc[p] + (Sqdd[i - 1] + coriolis[i - 1])
        A = jnp.stack([acc[i] for i in range(1, self.n + 1)])
        IV = jnp.einsum("bij,bj->bi", self.I6, V)
        fe = fext[1:, np.array([3, 4, 5, 0, 1, 2])]  # [torque; force]
        F = jnp.einsum("bij,bj->bi", self.I6, A) - jnp.einsum("ijk,bk,bi->bj", CRM, V, IV) - fe
        f = {i: F[i - 1] for i in range(1, self.n + 1)}
        for i in range(self.n, 0, -1):
            p = self.parents[i - 1]
            if p > 0:
                f[p] = f[p] + X[i - 1].T @ f[i]
        return jnp.sum(self.S * jnp.stack([f[i] for i in range(1, self.n + 1)]), axis=1)

    # -- τ along the curve -----------------------------------------------------------------------
    def tau(self, t, y, yd, ydd, fe, start, frozen, n_newton: int = N_NEWTON):
        """τ at the point of the curve where the independent coordinates are ``y`` (velocity ``yd``,
        acceleration ``ydd``), the loop closed by Newton from ``x0 + t xd0``; ``frozen`` ∈ {0, 1}
        blends G with the constant G0 (1: the wrong oracle of the negative control)."""
        x0, xd0, xdd0, G0 = start
        x = x0 + t * xd0 + (0.5 * t * t) * xdd0
        for _ in range(n_newton):
            q = self.join(y, x)
            x = x - _solve(self.K(q)[:, self.dep], self.phi(q))
        q = self.join(y, x)
        K = self.K(q)
        G = self.G(K)
        G = G + frozen * (G0 - G)
        qd = G @ yd
        g = self.join(jnp.zeros(self.nv), -_solve(K[:, self.dep], self.kdot(q, qd)))
        return G.T @ self.rnea(q, qd, G @ ydd + g, fe), self.phi(q)

    def start(self, q0, yd0, ydd0):
        """x0, ẋ0, ẍ0 (the dependent coordinates' derivatives) and G0 at t = 0 (order 0)."""
        K0 = self.K(q0)
        G0 = self.G(K0)
        qd0 = G0 @ yd0
        qdd0 = G0 @ ydd0 - self.join(jnp.zeros(self.nv), _solve(K0[:, self.dep], self.kdot(q0, qd0)))
        return q0[self.dep], qd0[self.dep], qdd0[self.dep], G0

    def series(self, q0, dv, fext, frozen):
        """(τ^(0…r), φ(q_s)^(0…r)) at t = 0, r = len(dv) − 2: the curve's derivatives enter as jet
        series of its inputs (y^(k) = dv[k−1], ẏ^(k) = dv[k], ÿ^(k) = dv[k+1], f^(k) = fext[k])."""
        r = dv.shape[0] - 2
        start = self.start(q0, dv[0], dv[1])

        def f(t, y, yd, ydd, fe):
            return self.tau(t, y, yd, ydd, fe, start, frozen)

        primals = (0.0, q0[self.ind], dv[0], dv[1], fext[0])
        if r == 0:
            out = f(*primals)
            return out[0][None], out[1][None]
        series = (
            (1.0,) + (0.0,) * (r - 1),
            tuple(dv[k - 1] for k in range(1, r + 1)),
            tuple(dv[k] for k in range(1, r + 1)),
            tuple(dv[k + 1] for k in range(1, r + 1)),
            tuple(fext[k] for k in range(1, r + 1)),
        )
        (tau, phi), (dtau, dphi) = jet.jet(f, primals, series)
        return jnp.stack([tau, *dtau]), jnp.stack([phi, *dphi])

    def at(self, q0, dv, fext, t):
        """τ(t) (order 0) at time t of the same curve: y(t) = y0 + Σ dv[k−1] tᵏ/k! and likewise."""
        nrow = dv.shape[0]
        start = self.start(q0, dv[0], dv[1])

        def poly(rows, start):
            return sum(
                rows[k] * t ** (k - start) / math.factorial(k - start) for k in range(start, len(rows))
            )

        y = q0[self.ind] + sum(dv[k - 1] * t**k / math.factorial(k) for k in range(1, nrow + 1))
        return self.tau(t, y, poly(dv, 0), poly(dv, 1), poly(fext, 0), start, 0.0, N_NEWTON_AT)[0]


@functools.cache
def _oracle(name: str) -> _Oracle:
    return _Oracle(getattr(loopdyn.robots, name)())


#: XLA options for the oracle's compilations: the Taylor-mode graph is ~10⁴ small operations, which
#: XLA's CPU fusion emitters and backend optimisation take ~20 s to compile; without them ~7 s (the
#: oracle runs once per model, so its run time does not matter)


def _compiled(f, *args):
    return jax.jit(f).lower(*args).compile(compiler_options=XLA_OPTIONS)


def _forces(model, fext, rows: int) -> np.ndarray:
    return np.zeros((rows, model.njoints, 6)) if fext is None else np.asarray(fext, float)


def _taylor_oracle(model, q, dv, fext=None, frozen=False):
    """τ^(0…r) (``(r + 1, nv)``, r = ``len(dv) − 2``) of ``model`` (one implicit cluster of revolute
    joints) at ``q`` along the curve whose independent coordinates have derivatives ``dv``, with
    external-force derivatives ``fext`` (``(r + 1, njoints, 6)``, body frames), and the derivatives
    ``(r + 1, m)`` of φ along the closed curve; ``frozen``: the wrong oracle of the negative control
    (G frozen at t = 0). ``q``, ``dv``, ``fext``, ``frozen`` may carry one leading batch axis (all of
    them): one compilation for the batch."""
    o = _oracle(model.name)
    batch = np.ndim(q) == 2
    if fext is None:
        fext = np.zeros(np.shape(dv)[:-2] + (np.shape(dv)[-2] - 1, model.njoints, 6))
    args = tuple(np.asarray(x, float) for x in (q, dv, fext, frozen))
    tau, phi = _compiled(jax.vmap(o.series) if batch else o.series, *args)(*args)
    return np.asarray(tau), np.asarray(phi)


# ------------------------------------------------------------------------------------------------
# states and the oracle's results, once per model
def _state(model, rng, order: int = ORDER, forces: bool = False):
    """A random valid q, dv ``(order + 2, nv)`` with rows scaled like 0.7**k, and (with ``forces``)
    f_ext ``(order + 1, njoints, 6)`` with rows scaled like 0.7**k (index 0, the universe, zero)."""
    # on the loop to rounding: τ^(k) is sensitive to q at high orders, and random_configuration's
    # tolerance (|φ| ≤ 1e-8, here 7e-15 on four_bar) moved the oracle's τ^(4) (which closes the loop
    # at t = 0) from loopdyn's (which takes q as given, as loopdyn.rnea) by 3e-8 relative
    q = loopdyn.project_configuration(model, loopdyn.random_configuration(model, rng), tol=1e-14)
    dv = rng.normal(size=(order + 2, model.nv)) * (0.7 ** np.arange(order + 2))[:, None]
    if not forces:
        return q, dv, None
    fext = rng.normal(size=(order + 1, model.njoints, 6)) * (0.7 ** np.arange(order + 1))[:, None, None]
    fext[:, 0] = 0.0
    return q, dv, fext


class _Cases:
    """Three states of one robot — two without and one with external forces — and the oracle's
    τ^(0…5) and φ^(0…5) at each, plus the frozen-G oracle at the first and the third without its
    forces: one batched oracle call."""

    def __init__(self, name: str):
        self.name = name
        self.model = getattr(loopdyn.robots, name)()
        self.data = self.model.create_data()
        rng = np.random.default_rng(60)
        o = _oracle(name)
        self.states = []
        for forces in (False, False, True):  # well-conditioned loops: cond(K_d) ≤ COND_MAX
            for _ in range(200):
                state = _state(self.model, rng, forces=forces)
                K = np.asarray(o.K_numpy(*state[0]), float)
                if np.linalg.cond(K[:, o.dep]) <= COND_MAX:
                    break
            else:
                raise AssertionError(f"{name}: no state with cond(K_d) <= {COND_MAX} in 200 draws")
            self.states.append(state)
        # batch: the three states, state 0 with G frozen, state 2 without its forces
        q = np.stack([s[0] for s in self.states] + [self.states[0][0], self.states[2][0]])
        dv = np.stack([s[1] for s in self.states] + [self.states[0][1], self.states[2][1]])
        zero = _forces(self.model, None, ORDER + 1)
        fe = np.stack([_forces(self.model, s[2], ORDER + 1) for s in self.states] + [zero, zero])
        t0 = time.process_time()
        self.tau, self.phi = _taylor_oracle(self.model, q, dv, fe, np.array([0.0, 0.0, 0.0, 1.0, 0.0]))
        self.cpu = time.process_time() - t0
        self.frozen, self.without_forces = self.tau[3], self.tau[4]

    def tau_at(self, k: int):
        """t ↦ the oracle's τ(t) (order 0) along the curve of state k (one compilation)."""
        o, (q, dv, fext) = _oracle(self.name), self.states[k]
        fe = _forces(self.model, fext, ORDER + 1)
        at = _compiled(o.at, q, dv, fe, 0.0)
        return lambda t: np.asarray(at(q, dv, fe, t))


@functools.cache
def _cached_cases(name: str) -> _Cases:
    return _Cases(name)


@pytest.fixture(params=ORACLE_ROBOTS)
def cases(request) -> _Cases:
    return _cached_cases(request.param)


# ------------------------------------------------------------------------------------------------
# the oracle on its own
def _richardson(f, h: float, k: int) -> np.ndarray:
    """k-th derivative (k = 1, 2) at 0 of f by central differences with steps h and h/2 combined by
    Richardson extrapolation (error O(h⁴))."""

    def central(s):
        if k == 1:
            return (f(s) - f(-s)) / (2 * s)
        return (f(s) - 2 * f(0.0) + f(-s)) / (s * s)

    return (4 * central(h / 2) - central(h)) / 3


def test_oracle_order0_equals_crnea_and_orders_1_2_equal_differences(cases):
    """The oracle's τ^(0) equals loopdyn.rnea (C-RNEA) to 1e-10 at every state; its τ^(1), τ^(2)
    equal Richardson-extrapolated central differences in t of its own τ(t) along the curve (Newton
    re-closing the loop at each t) to 1e-8 / 1e-6; φ(q_s(t)) has vanishing derivatives 0…5 (the curve
    stays on the loop); its τ^(1) equals the chain rule through loopdyn.rnea_derivatives to 1e-10."""
    name, model, d = cases.name, cases.model, cases.data
    for k, (q, dv, fext) in enumerate(cases.states):
        crnea = loopdyn.rnea(model, d, q, dv[0], dv[1], None if fext is None else fext[0])
        err0 = rel_err(cases.tau[k, 0], crnea)
        assert err0 <= 1e-10, f"{name}, state {k}: oracle order 0 vs loopdyn.rnea: {err0:.2e}"
        assert np.max(np.abs(cases.phi[k])) <= 1e-11, f"{name}, state {k}: φ(q_s(t)) ≠ 0"
    for k, (q, dv, fext) in enumerate(cases.states):
        # order 1 exactly, from loopdyn.rnea_derivatives (checked against Pinocchio, differences and
        # JAX in test_derivatives.py) along the curve, plus the forces' rate (τ is affine in f_ext)
        f0 = None if fext is None else fext[0]
        dq, dqd, dqdd = loopdyn.rnea_derivatives(model, d, q, dv[0], dv[1], f0)
        rate = dq @ dv[0] + dqd @ dv[1] + dqdd @ dv[2]
        if fext is not None:
            rate += loopdyn.rnea(model, d, q, dv[0], dv[1], f0 + fext[1]) - loopdyn.rnea(
                model, d, q, dv[0], dv[1], f0
            )
        e1 = rel_err(cases.tau[k, 1], rate)
        assert e1 <= 1e-10, f"{name}, state {k}: oracle order 1 vs rnea_derivatives: {e1:.2e}"
    for k in (0, 2):  # without and with external forces
        f = cases.tau_at(k)
        assert rel_err(f(0.0), cases.tau[k, 0]) <= 1e-12
        e1 = rel_err(_richardson(f, 2e-3, 1), cases.tau[k, 1])
        e2 = rel_err(_richardson(f, 1e-2, 2), cases.tau[k, 2])
        assert e1 <= 1e-8, f"{name}, state {k}: oracle order 1 vs differences: {e1:.2e}"
        assert e2 <= 1e-6, f"{name}, state {k}: oracle order 2 vs differences: {e2:.2e}"


@pytest.mark.parametrize("name", ["five_bar", "rssr_linkage"])
def test_negative_control_frozen_G_differs_at_orders_1_and_up(name):
    """The oracle with G frozen at t = 0 (exact for constant G, wrong on implicit loops) agrees at
    order 0 and differs at every order ≥ 1 by far more than RTOL, so the comparisons below cannot pass
    vacuously. (four_bar is a parallelogram: its G is constant, and freezing it changes nothing.)"""
    c = _cached_cases(name)
    errs = rel_err_rows(c.frozen, c.tau[0])
    assert errs[0] <= 1e-12, f"{name}: frozen G at order 0: {errs[0]:.2e}"
    assert np.all(errs[1:] > 1e4 * RTOL), f"{name}: frozen G vs true per order: {errs}"


# ------------------------------------------------------------------------------------------------
# higher_order.rnea / aba on implicit loops
def test_rnea_orders_0_to_5_match_the_oracle(cases):
    """``higher_order.rnea(q, dv[:r + 2])`` for r = 0…5 equals the oracle's τ^(0…r), order k to RTOL
    relative to max|τ^(k)| (:func:`rel_err_rows`), at two states without external forces."""
    name, model, d = cases.name, cases.model, cases.data
    for k in (0, 1):
        q, dv, _ = cases.states[k]
        for r in range(ORDER + 1):
            got = ho.rnea(model, d, q, dv[: r + 2])
            assert got.shape == (r + 1, model.nv), (name, r)
            errs = rel_err_rows(got, cases.tau[k, : r + 1])
            assert np.all(errs <= RTOL), f"{name}, state {k}, r = {r}: errors per order {errs}"


def test_rnea_with_external_forces_matches_the_oracle(cases):
    """f_ext rows (body frames, subtracted as in loopdyn.rnea) against the oracle with body forces;
    the forces change every order by far more than RTOL (the comparison is not vacuous)."""
    name, model, d = cases.name, cases.model, cases.data
    q, dv, fext = cases.states[2]
    assert np.all(rel_err_orders(cases.without_forces, cases.tau[2]) > 1e3 * RTOL)
    for r in (0, 2, ORDER):
        got = ho.rnea(model, d, q, dv[: r + 2], fext[: r + 1])
        errs = rel_err_rows(got, cases.tau[2, : r + 1])
        assert np.all(errs <= RTOL), f"{name} with f_ext, r = {r}: errors per order {errs}"


def test_aba_of_the_oracle_torques_gives_back_dv(cases):
    """``higher_order.aba`` fed the ORACLE's τ^(0…5) returns accelerations whose inverse dynamics
    give back that τ to RTOL of max|τ^(0…k)| per order (the backward error; the forward error against
    dv[1:] carries the conditioning: 3e-8 at order 5 on rssr_linkage's third state), with and
    without f_ext."""
    name, model, d = cases.name, cases.model, cases.data
    for k in (0, 2):
        q, dv, fext = cases.states[k]
        got = ho.aba(model, d, q, dv[0], cases.tau[k], fext)
        errs = residual_orders(model, d, q, dv[0], got, cases.tau[k], fext)
        assert np.all(errs <= RTOL), f"{name}, state {k}: aba(oracle τ) vs dv[1:] (residuals): {errs}"


def _round_trip_case(name):
    model = getattr(loopdyn.robots, name)()
    return model, model.create_data()


@pytest.mark.parametrize("name", ROUND_TRIP_ROBOTS)
def test_order0_equals_rnea_aba_and_round_trip(name):
    """Order 0 of ``higher_order.rnea`` is ``loopdyn.rnea`` and of ``higher_order.aba`` is
    ``loopdyn.aba``; ``aba(q, dv[0], rnea(q, dv))`` reproduces τ (backward error ≤ RTOL) for
    r = 0…5 (tello, a larger robot with differentials and explicit clusters, with external forces),
    and a wrong highest order is seen (negative control)."""
    model, d = _round_trip_case(name)
    rng = np.random.default_rng(64)
    forces = name in ("tello", "delta_robot")
    q, dv, fext = _state(model, rng, forces=forces)
    f0 = None if fext is None else fext[0]
    tau = ho.rnea(model, d, q, dv, fext)
    assert tau.shape == (ORDER + 1, model.nv)
    err = rel_err(tau[0], loopdyn.rnea(model, d, q, dv[0], dv[1], f0))
    assert err <= RTOL, f"{name}: higher_order.rnea order 0 vs loopdyn.rnea: {err:.2e}"
    acc = ho.aba(model, d, q, dv[0], tau[:1], None if fext is None else fext[:1])
    err = rel_err(acc[0], loopdyn.aba(model, d, q, dv[0], tau[0], f0))
    assert err <= RTOL, f"{name}: higher_order.aba order 0 vs loopdyn.aba: {err:.2e}"
    for r in range(ORDER + 1):
        fe = None if fext is None else fext[: r + 1]
        tau_r = ho.rnea(model, d, q, dv[: r + 2], fe)
        back = ho.aba(model, d, q, dv[0], tau_r, fe)
        assert back.shape == (r + 1, model.nv), (name, r)
        errs = residual_orders(model, d, q, dv[0], back, tau_r, fe)
        assert np.all(errs <= RTOL), f"{name}, r = {r}: round trip residuals per order {errs}"
    # negative control: the residual sees a wrong highest order
    wrong = back.copy()
    wrong[-1] += 1e-3 * np.abs(dv[-1]).max()
    assert residual_orders(model, d, q, dv[0], wrong, tau_r, fe)[-1] > RTOL


# ------------------------------------------------------------------------------------------------
# bad input
def _raised(f):
    try:
        f()
    except LoopdynError as exc:
        return type(exc)
    return None


@pytest.mark.parametrize("name", ["five_bar", "rssr_linkage", "tello"])
def test_bad_input_raises_the_cluster_functions_errors_and_data_stays_usable(name):
    """A configuration off the loop (a dependent coordinate moved by 1e-3) raises the class that
    loopdyn.rnea / loopdyn.aba raise for the same q; a dv / dtau of the wrong shape raises the class
    the tree version raises for the same mistake; a following good call returns the same result."""
    model = getattr(loopdyn.robots, name)()
    d = model.create_data()
    rng = np.random.default_rng(66)
    q, dv, _ = _state(model, rng, order=2)
    good_tau = ho.rnea(model, d, q, dv)
    good_acc = ho.aba(model, d, q, dv[0], good_tau)
    # off the loop: the first dependent coordinate of the first implicit cluster
    c = next(c for c in model.clusters().clusters if c.kind == 2)
    off = q.copy()
    off[c.iq + c.dependent[0]] += 1e-3  # the cluster's q: its spanning positions
    body = re.escape(model.bodies[c.bodies[0] - 1].name)  # the message names the cluster's bodies
    expected = _raised(lambda: loopdyn.rnea(model, d, off, dv[0], dv[1]))
    assert expected is not None, f"{name}: loopdyn.rnea accepted a configuration off the loop"
    with pytest.raises(expected, match=body):
        ho.rnea(model, d, off, dv)
    expected = _raised(lambda: loopdyn.aba(model, d, off, dv[0], good_tau[0]))
    assert expected is not None
    with pytest.raises(expected, match=body):
        ho.aba(model, d, off, dv[0], good_tau)
    # wrong shapes: the class the tree version raises for the same mistake
    tree = loopdyn.spanning_tree(model)
    td = tree.create_data()
    tq = loopdyn.random_configuration(tree, rng)
    tdv = rng.normal(size=(4, tree.nv))
    mistakes = (  # (the argument, the tree call, the same mistake on the model)
        ("dv", lambda: ho.rnea(tree, td, tq, tdv[:, :-1]), lambda: ho.rnea(model, d, q, dv[:, :-1])),
        ("dv", lambda: ho.rnea(tree, td, tq, tdv[0]), lambda: ho.rnea(model, d, q, dv[0])),
        ("dv", lambda: ho.rnea(tree, td, tq, tdv[:1]), lambda: ho.rnea(model, d, q, dv[:1])),
        (
            "dtau",
            lambda: ho.aba(tree, td, tq, tdv[0], tdv[1:, :-1]),
            lambda: ho.aba(model, d, q, dv[0], good_tau[:, :-1]),
        ),
        (
            "v",
            lambda: ho.aba(tree, td, tq, tdv[0, :-1], tdv[1:]),
            lambda: ho.aba(model, d, q, dv[0, :-1], good_tau),
        ),
    )
    for arg, on_tree, on_model in mistakes:
        expected = _raised(on_tree)
        assert expected is not None, f"{arg}: the tree version accepted the mistake"
        with pytest.raises(expected, match=rf"\b{arg}\b"):
            on_model()
    # the Data stays usable
    np.testing.assert_array_equal(ho.rnea(model, d, q, dv), good_tau)
    np.testing.assert_array_equal(ho.aba(model, d, q, dv[0], good_tau), good_acc)
