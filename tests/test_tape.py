"""Constraint tapes: sympy formulas compiled into register programs and run by the Numba interpreter.

Oracles: ``sympy.lambdify(modules="math")`` of the same symbolic φ, K = ∂φ/∂q and K̇q̇ (random
expressions, the Tello hip differential), closed-form four-bar Jacobians, and finite differences.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
import sympy as sp
from numba import njit

from loopdyn.constraints import (
    OPCODES,
    ConstraintProgram,
    compile_constraint,
    evaluate,
    evaluate_phi,
    pack_programs,
)
from loopdyn.constraints import evaluate_k as _evaluate_k_step
from loopdyn.constraints import evaluate_phi_K as _evaluate_phi_K_step
from loopdyn.errors import ModelError


# the split evaluation's two halves are compiled steps (loopdyn.jit.inlined): called from compiled code
@njit
def evaluate_phi_K(code, consts, table, outputs, p, q, regs, phi_out, K_out):
    _evaluate_phi_K_step(code, consts, table, outputs, p, q, regs, phi_out, K_out)


@njit
def evaluate_k(code, consts, table, outputs, p, qd, regs, k_out):
    _evaluate_k_step(code, consts, table, outputs, p, qd, regs, k_out)

RTOL = 1e-12


def assert_close(actual, expected, rtol=RTOL, what=""):
    """``|a − e| ≤ rtol · max(1, |e|)`` entrywise, with the scale of the whole array as a floor."""
    actual = np.asarray(actual, dtype=float)
    expected = np.asarray(expected, dtype=float)
    assert actual.shape == expected.shape, what
    scale = max(1.0, float(np.max(np.abs(expected), initial=0.0)))
    err = np.abs(actual - expected)
    assert np.all(np.isfinite(actual)), f"{what}: non-finite {actual}"
    assert np.all(err <= rtol * np.maximum(np.abs(expected), scale)), (
        f"{what}: max error {err.max():.3e} (scale {scale:.3e})\nactual   {actual}\nexpected {expected}"
    )


# ---------------------------------------------------------------------------------------------
# references


def reference(phi, q):
    """lambdify(math) of φ, K and k = −K̇q̇ computed by plain sympy (real symbols)."""
    qd = sp.symbols(f"qd0:{len(q)}", real=True)
    Phi = sp.Matrix(phi)
    K = Phi.jacobian(q)
    kb = -((K * sp.Matrix(qd)).jacobian(q) * sp.Matrix(qd))
    kb = kb.replace(sp.DiracDelta, lambda *a: sp.S.Zero)  # |x|'' = 0 almost everywhere
    f_phi = sp.lambdify([q], list(Phi), modules="math")
    f_K = sp.lambdify([q], [list(K.row(i)) for i in range(K.rows)], modules="math")
    f_k = sp.lambdify([q, qd], list(kb), modules="math")
    return (
        lambda x: np.array(f_phi(list(x)), dtype=float).reshape(-1),
        lambda x: np.array(f_K(list(x)), dtype=float).reshape(len(phi), len(q)),
        lambda x, v: np.array(f_k(list(x), list(v)), dtype=float).reshape(-1),
    )


def run(prog: ConstraintProgram, q, qd):
    """Evaluate through pack_programs + the Numba kernels (also checks evaluate_phi)."""
    pk = pack_programs([prog])
    regs = np.full(pk.max_reg + 3, np.nan)
    phi, K, k = np.full(prog.c, np.nan), np.full(prog.c * prog.n, np.nan), np.full(prog.c, np.nan)
    evaluate(pk.code, pk.consts, pk.table, pk.outputs, 0, np.asarray(q, float), np.asarray(qd, float),
             regs, phi, K, k)  # fmt: skip
    phi2 = np.full(prog.c, np.nan)
    evaluate_phi(pk.code, pk.consts, pk.table, pk.outputs, 0, np.asarray(q, float), regs, phi2)
    np.testing.assert_array_equal(phi2, phi)
    return phi, K.reshape(prog.c, prog.n), k


# ---------------------------------------------------------------------------------------------
# random expressions


class ExprGen:
    """Random well-conditioned sympy expressions in the symbols ``q`` (seeded)."""

    def __init__(self, rng: random.Random, q):
        self.rng = rng
        self.q = q

    def leaf(self):
        r = self.rng.random()
        if r < 0.7:
            return self.rng.choice(self.q)
        if r < 0.85:
            return sp.Rational(self.rng.randint(-9, 9), self.rng.randint(1, 7))
        return self.rng.choice([sp.pi / 3, sp.E / 2, sp.Float(self.rng.uniform(-2, 2))])

    def real(self, depth):
        """Polynomial / trigonometric expression (sympy knows it is real)."""
        if depth <= 0 or self.rng.random() < 0.25:
            return self.leaf()
        k = self.rng.randrange(5)
        a = self.real(depth - 1)
        if k == 0:
            return a + self.real(depth - 1)
        if k == 1:
            return a - self.real(depth - 1)
        if k == 2:
            return a * self.real(depth - 1)
        if k == 3:
            return sp.sin(a)
        return sp.cos(a)

    def positive(self, depth):
        a = self.expr(depth)
        return self.rng.choice([2 + sp.sin(a), 1 + a**2, sp.exp(sp.cos(a)), sp.Rational(3, 2) + sp.cos(a)])

    def bounded(self, depth):
        return self.rng.choice([sp.sin, sp.cos])(self.expr(depth))

    def expr(self, depth):
        if depth <= 0 or self.rng.random() < 0.15:
            return self.leaf()
        d = depth - 1
        ops = [
            lambda: self.expr(d) + self.expr(d),
            lambda: self.expr(d) - self.expr(d),
            lambda: self.expr(d) * self.expr(d),
            lambda: self.expr(d) / self.positive(d),
            lambda: sp.sin(self.expr(d)),
            lambda: sp.cos(self.expr(d)),
            lambda: sp.tan(self.bounded(d) / 2),
            lambda: sp.sqrt(self.positive(d)),
            lambda: self.expr(d) ** self.rng.choice([2, 3, 4]),
            lambda: self.positive(d) ** self.rng.choice([-1, -2, -3]),
            lambda: self.positive(d) ** (sp.Rational(self.rng.choice([3, -1, -3]), 2)),
            lambda: self.positive(d) ** sp.Rational(1, 3),
            lambda: self.positive(d) ** self.bounded(d),
            lambda: sp.exp(self.bounded(d)),
            lambda: sp.log(self.positive(d)),
            lambda: sp.atan2(self.expr(d), self.positive(d)),
            lambda: sp.atan2(self.real(d), self.real(d)),
            lambda: sp.asin(self.bounded(d) * sp.Rational(9, 10)),
            lambda: sp.acos(self.bounded(d) * sp.Rational(9, 10)),
            lambda: sp.atan(self.expr(d)),
            lambda: sp.Abs(self.real(d)),
            lambda: -self.expr(d),
        ]
        return self.rng.choice(ops)()


def random_case(seed):
    rng = random.Random(seed)
    n = rng.randint(1, 4)
    c = rng.randint(1, 3)
    q = sp.symbols(f"q0:{n}", real=True)
    gen = ExprGen(rng, list(q))
    phi = []
    for _ in range(c):
        e = gen.expr(rng.randint(1, 4))
        while not e.free_symbols:
            e = gen.expr(3)
        phi.append(e)
    return phi, list(q)


@pytest.mark.parametrize("seed", range(40))
def test_random_expressions_match_lambdify(seed):
    phi, q = random_case(seed)
    prog = compile_constraint(phi, q)
    f_phi, f_K, f_k = reference(phi, q)
    rng = np.random.default_rng(seed)
    checked = 0
    for _ in range(6):
        x = rng.uniform(-1.5, 1.5, len(q))
        v = rng.uniform(-2, 2, len(q))
        try:
            ref = (f_phi(x), f_K(x), f_k(x, v))
        except (ValueError, ZeroDivisionError, OverflowError):  # a domain edge of the oracle
            continue
        if not all(np.all(np.isfinite(r)) for r in ref):
            continue
        out = run(prog, x, v)
        for name, a, b in zip(("phi", "K", "k"), out, ref, strict=True):
            assert_close(a, b, what=f"seed {seed} {name}: {phi}")
        checked += 1
    assert checked >= 3


# ---------------------------------------------------------------------------------------------
# finite differences


def four_bar_phi(la, lb, lc, ox, oy, q):
    q0, q1, q2 = q
    return [
        la * sp.cos(q0) + lb * sp.cos(q0 + q2) - ox - lc * sp.cos(q1),
        la * sp.sin(q0) + lb * sp.sin(q0 + q2) - oy - lc * sp.sin(q1),
    ]


def tello_hip_phi(q):
    """Tello hip differential φ (spec §3.10) over q = [q_r1, q_r2, q_l1, q_l2], y = q_r / 6."""
    qr1, qr2, ql1, ql2 = q
    y1, y2 = qr1 / 6, qr2 / 6
    R = sp.Rational
    sin, cos = sp.sin, sp.cos
    phi1 = (
        R(57, 2500) * sin(y1) - R(49, 5000) * cos(ql1) - R(399, 20000) * sin(ql1)
        - R(8, 625) * cos(y1) * cos(ql2) - R(57, 2500) * cos(ql1) * sin(ql2)
        - R(7, 625) * sin(y1) * sin(ql1) + R(7, 625) * sin(ql1) * sin(ql2)
        - R(8, 625) * cos(ql1) * sin(y1) * sin(ql2) + R(3021, 160000)
    )  # fmt: skip
    phi2 = (
        R(57, 2500) * sin(y2) - R(49, 5000) * cos(ql1) + R(399, 20000) * sin(ql1)
        - R(8, 625) * cos(y2) * cos(ql2) - R(57, 2500) * cos(ql1) * sin(ql2)
        + R(7, 625) * sin(y2) * sin(ql1) - R(7, 625) * sin(ql1) * sin(ql2)
        - R(8, 625) * cos(ql1) * sin(y2) * sin(ql2) + R(3021, 160000)
    )  # fmt: skip
    return [phi1, phi2]


def tello_hip_ik(ql1, ql2):
    """Post-gearbox rotor angles (y1, y2) from the link angles (spec §3.10, hip IK)."""
    s1, c1, s2, c2 = math.sin(ql1), math.cos(ql1), math.sin(ql2), math.cos(ql2)
    a1 = 57 / 2500 - (8 / 625) * c1 * s2 - (7 / 625) * s1
    b1 = -(8 / 625) * c2
    cc1 = (49 / 5000) * c1 + (399 / 20000) * s1 + (57 / 2500) * c1 * s2 - (7 / 625) * s1 * s2 - 3021 / 160000
    d1 = math.sqrt(a1 * a1 + b1 * b1 - cc1 * cc1)
    a2 = (7 / 625) * s1 - (8 / 625) * c1 * s2 + 57 / 2500
    cc2 = (49 / 5000) * c1 - (399 / 20000) * s1 + (57 / 2500) * c1 * s2 + (7 / 625) * s1 * s2 - 3021 / 160000
    d2 = math.sqrt(a2 * a2 + b1 * b1 - cc2 * cc2)
    y1 = math.atan2(-b1 * d1 + a1 * cc1, b1 * cc1 + a1 * d1)
    y2 = math.atan2(-b1 * d2 + a2 * cc2, b1 * cc2 + a2 * d2)
    return y1, y2


def fd_cases():
    q3 = sp.symbols("q0:3")
    q4 = sp.symbols("q0:4", real=True)
    cases = [
        ("four_bar", four_bar_phi(1.0, 0.7, 0.9, 0.5, 0.2, q3), list(q3)),
        ("tello_hip", tello_hip_phi(q4), list(q4)),
    ]
    for seed in (3, 11, 17, 29):
        phi, q = random_case(seed)
        cases.append((f"random{seed}", phi, q))
    return cases


@pytest.mark.parametrize("name,phi,q", fd_cases(), ids=[c[0] for c in fd_cases()])
def test_finite_differences(name, phi, q):
    prog = compile_constraint(phi, q)
    rng = np.random.default_rng(5)
    n = len(q)
    h = 1e-6
    for _ in range(5):
        x = rng.uniform(-1.2, 1.2, n)
        v = rng.uniform(-1, 1, n)
        phi0, K0, k0 = run(prog, x, v)
        K_fd = np.empty_like(K0)
        for j in range(n):
            e = np.zeros(n)
            e[j] = h
            K_fd[:, j] = (run(prog, x + e, v)[0] - run(prog, x - e, v)[0]) / (2 * h)
        Kdot = (run(prog, x + h * v, v)[1] - run(prog, x - h * v, v)[1]) / (2 * h)
        scale = max(1.0, np.abs(K0).max())
        np.testing.assert_allclose(K0, K_fd, rtol=1e-7, atol=1e-7 * scale, err_msg=name)
        np.testing.assert_allclose(k0, -Kdot @ v, rtol=1e-7, atol=1e-7 * max(1.0, np.abs(k0).max()))


# ---------------------------------------------------------------------------------------------
# four-bar: closed form


@pytest.mark.parametrize(
    "la,lb,lc,loff,alpha",
    [(0.096, 0.031, 0.096, 0.031, 0.0), (1, 1, 1, 1, 1.0), (5, 12, 12, 10, 0.0), (5, 12, 12, 10, 2.0)],
)
def test_four_bar_closed_form(la, lb, lc, loff, alpha):
    q = sp.symbols("q0:3")
    ox, oy = loff * math.cos(alpha), loff * math.sin(alpha)
    prog = compile_constraint(four_bar_phi(la, lb, lc, ox, oy, q), q)
    assert prog.n == 3 and prog.c == 2
    rng = np.random.default_rng(1)
    for _ in range(20):
        q0, q1, q2 = x = rng.uniform(-math.pi, math.pi, 3)
        v = rng.uniform(-3, 3, 3)
        s0, c0, s1, c1, s02, c02 = (math.sin(q0), math.cos(q0), math.sin(q1), math.cos(q1),
                                    math.sin(q0 + q2), math.cos(q0 + q2))  # fmt: skip
        phi_ref = [la * c0 + lb * c02 - ox - lc * c1, la * s0 + lb * s02 - oy - lc * s1]
        K_ref = np.array(
            [[-la * s0 - lb * s02, lc * s1, -lb * s02],
             [la * c0 + lb * c02, -lc * c1, lb * c02]]
        )  # fmt: skip
        w02 = v[0] + v[2]
        Kdot = np.array(
            [[-la * c0 * v[0] - lb * c02 * w02, lc * c1 * v[1], -lb * c02 * w02],
             [-la * s0 * v[0] - lb * s02 * w02, lc * s1 * v[1], -lb * s02 * w02]]
        )  # fmt: skip
        phi, K, k = run(prog, x, v)
        assert_close(phi, phi_ref, what="phi")
        assert_close(K, K_ref, what="K")
        assert_close(k, -Kdot @ v, what="k")


# ---------------------------------------------------------------------------------------------
# Tello hip differential


def test_tello_hip_differential():
    q = sp.symbols("q_r1 q_r2 q_l1 q_l2", real=True)
    phi = tello_hip_phi(q)
    prog = compile_constraint(phi, q)
    print(
        f"\nTello hip tape: {prog.n_instr} instructions (phi prefix {prog.phi_len}, phi+K prefix "
        f"{prog.K_len}), {prog.n_reg} registers, {prog.consts.size} constants, {prog.op_counts()}"
    )
    assert prog.phi_len < prog.K_len < prog.n_instr
    # K has exact zeros: row 1 does not depend on q_r2, row 2 not on q_r1
    assert prog.K[0, 1] == -1 and prog.K[1, 0] == -1
    f_phi, f_K, f_k = reference(phi, q)
    rng = np.random.default_rng(2)
    for _ in range(20):
        x = rng.uniform(-2, 2, 4)
        v = rng.uniform(-30, 30, 4)
        out = run(prog, x, v)
        for name, a, b in zip(("phi", "K", "k"), out, (f_phi(x), f_K(x), f_k(x, v)), strict=True):
            assert_close(a, b, what=name)
    # consistent states from the closed-form IK satisfy φ = 0
    found = 0
    while found < 10:
        ql = rng.uniform(-1, 1, 2)
        try:
            y = tello_hip_ik(*ql)
        except ValueError:  # no real solution (sqrt of a negative): resample, as GRBDA does
            continue
        x = np.array([6 * y[0], 6 * y[1], ql[0], ql[1]])
        phi_val, _, _ = run(prog, x, np.zeros(4))
        np.testing.assert_allclose(phi_val, 0.0, atol=1e-14)
        found += 1


# ---------------------------------------------------------------------------------------------
# packing


def test_pack_programs_matches_unpacked():
    q3 = sp.symbols("q0:3")
    q4 = sp.symbols("q0:4", real=True)
    a, b = sp.symbols("a b")
    programs = [
        compile_constraint(four_bar_phi(1.0, 0.7, 0.9, 0.5, 0.2, q3), q3),
        compile_constraint(tello_hip_phi(q4), q4),
        compile_constraint([a - 2 * b, sp.Integer(0), 3 * a + sp.pi], [a, b]),  # constant K, zero row
        compile_constraint([a], [a]),  # output is an input register
        compile_constraint([], [a, b]),  # no rows
        compile_constraint(random_case(7)[0], random_case(7)[1]),
        compile_constraint(random_case(8)[0], random_case(8)[1]),
    ]
    pk = pack_programs(programs)
    assert pk.code.dtype == np.int64 and pk.code.shape == (sum(p.n_instr for p in programs), 4)
    assert pk.table.shape == (len(programs), 14) and pk.table.dtype == np.int64
    assert pk.consts.dtype == np.float64 and pk.outputs.dtype == np.int64
    assert pk.outputs.size == sum(2 * p.c + p.c * p.n for p in programs)
    assert pk.max_reg == max(p.n_reg for p in programs)
    assert len(pk) == len(programs)
    regs = np.zeros(pk.max_reg)
    # inputs of other layouts: a strided view and an offset slice
    big = np.random.default_rng(0).uniform(-1, 1, 64)
    for p, prog in enumerate(programs):
        x = big[1 : 1 + 2 * prog.n : 2]
        v = big[40 : 40 + prog.n]
        phi, K, k = np.full(pk.max_c, 7.0), np.full(pk.max_c * pk.max_n, 7.0), np.full(pk.max_c, 7.0)
        evaluate(pk.code, pk.consts, pk.table, pk.outputs, p, x, v, regs, phi, K, k)
        phi_u, K_u, k_u = run(prog, np.ascontiguousarray(x), np.ascontiguousarray(v))
        np.testing.assert_array_equal(phi[: prog.c], phi_u)
        np.testing.assert_array_equal(K[: prog.c * prog.n], K_u.reshape(-1))
        np.testing.assert_array_equal(k[: prog.c], k_u)
        assert np.all(phi[prog.c :] == 7.0) and np.all(K[prog.c * prog.n :] == 7.0)  # untouched
        phi2 = np.full(pk.max_c, 7.0)
        evaluate_phi(pk.code, pk.consts, pk.table, pk.outputs, p, x, regs, phi2)
        np.testing.assert_array_equal(phi2, phi)
        # the split evaluation: φ and K from the tape's prefix (q̇ registers left as garbage), then
        # only the k part at q̇ on the same registers
        regs[:] = np.nan
        phi3, K3, k3 = np.full(pk.max_c, 7.0), np.full(pk.max_c * pk.max_n, 7.0), np.full(pk.max_c, 7.0)
        evaluate_phi_K(pk.code, pk.consts, pk.table, pk.outputs, p, x, regs, phi3, K3)
        np.testing.assert_array_equal(phi3[: prog.c], phi_u)
        np.testing.assert_array_equal(K3[: prog.c * prog.n], K_u.reshape(-1))
        evaluate_k(pk.code, pk.consts, pk.table, pk.outputs, p, v, regs, k3)
        np.testing.assert_array_equal(k3[: prog.c], k_u)
        # the Python convenience gives the same numbers
        for got, want in zip(prog.evaluate(x, v), (phi_u, K_u, k_u), strict=True):
            np.testing.assert_array_equal(got, want)
    # constants / structural zeros of the small linear program
    lin = programs[2]
    assert lin.phi[1] == -1 and np.all(lin.K[1] == -1) and np.all(lin.kbias == -1)
    phi, K, k = lin.evaluate([0.3, -0.4], [1.0, 2.0])
    assert_close(phi, [0.3 + 0.8, 0.0, 0.9 + math.pi])
    assert_close(K, [[1, -2], [0, 0], [3, 0]])
    assert_close(k, [0, 0, 0])
    assert programs[3].phi[0] == 0 and programs[3].n_instr == 1  # φ = q0; K = 1.0 (one CONST)
    assert pack_programs([]).table.shape == (0, 14)


# ---------------------------------------------------------------------------------------------
# opcodes and hand-written programs


def every_opcode_phi(x, y):
    """Four rows whose tape uses every opcode but COPY (also the native programs' test case)."""
    return [
        sp.sin(x) * sp.cos(y) - x / (2 + y**2) + sp.tan(x / 3) + sp.exp(y / 2),
        sp.log(2 + sp.sin(x)) + sp.atan2(y, sp.cos(x) - 2 * y) + (2 + sp.cos(y)) ** (x / 3) + sp.Abs(x - y),
        sp.sqrt(3 + x) + (2 + x**2) ** -3 + (3 + sp.sin(y)) ** sp.Rational(-3, 2) + x**5,
        sp.asin(sp.sin(x) / 2) + sp.acos(sp.cos(y) / 2) + sp.atan(x * y) + 1 / (4 + x) - sp.sin(x) ** 3,
    ]


def test_every_opcode_is_emitted_and_correct():
    x, y = sp.symbols("x y", real=True)
    phi = every_opcode_phi(x, y)
    prog = compile_constraint(phi, [x, y])
    used = set(prog.op_counts())
    assert used >= set(OPCODES) - {"COPY"}, set(OPCODES) - used
    f_phi, f_K, f_k = reference(phi, [x, y])
    rng = np.random.default_rng(3)
    for _ in range(10):
        xs = rng.uniform(-1, 1, 2)
        vs = rng.uniform(-1, 1, 2)
        out = run(prog, xs, vs)
        for name, a, b in zip(("phi", "K", "k"), out, (f_phi(xs), f_K(xs), f_k(xs, vs)), strict=True):
            assert_close(a, b, what=name)
    assert "SIN" in prog.disassemble()


def test_hand_written_program_with_copy():
    op = OPCODES
    # n = 1: r0 = q, r1 = qd; r2 = copy q; r3 = 2.5; r4 = q * 2.5; r5 = q**-2; r6 = copy r4
    code = [
        (op["COPY"], 2, 0, 0),
        (op["CONST"], 3, 1, 0),
        (op["MUL"], 4, 2, 3),
        (op["POW_INT"], 5, 0, -2),
        (op["COPY"], 6, 4, 0),
    ]
    code.append((op["MUL"], 7, 1, 1))  # k_1 = q̇²: reads q̇, after the φ/K prefix
    prog = ConstraintProgram(
        n=1, c=2, code=np.array(code), consts=np.array([9.0, 2.5]), n_reg=8,
        phi=np.array([6, 5]), K=np.array([[3], [-1]]), kbias=np.array([-1, 7]),
    )  # fmt: skip
    assert prog.phi_len == prog.K_len == 5  # the shortest prefixes
    phi, K, k = prog.evaluate([0.5], [4.0])
    np.testing.assert_array_equal(phi, [1.25, 4.0])
    np.testing.assert_array_equal(K, [[2.5], [0.0]])
    np.testing.assert_array_equal(k, [0.0, 16.0])
    with pytest.raises(ValueError):
        prog.code[0, 0] = 1  # read-only


@pytest.mark.parametrize(
    "code,n_reg,phi,msg",
    [
        ([(OPCODES["ADD"], 2, 0, 3)], 4, [2], "before it is written"),
        ([(OPCODES["ADD"], 1, 0, 0)], 4, [1], "writes register 1"),
        ([(99, 2, 0, 0)], 4, [2], "unknown opcode"),
        ([(OPCODES["CONST"], 2, 5, 0)], 4, [2], "constant index"),
        ([(OPCODES["NEG"], 2, 0, 0)], 4, [3], "does not compute"),
        ([(OPCODES["NEG"], 2, 0, 0), (OPCODES["NEG"], 2, 0, 0)], 4, [2], "written before"),
        ([(OPCODES["NEG"], 2, 0, 0)], 4, [1], "phi names register 1"),  # φ = q̇
        ([(OPCODES["NEG"], 2, 1, 0)], 4, [2], "reads q̇"),
        ([], 4, [0], "needs 0 <= phi_len"),  # phi_len = 1 > n_instr = 0
        ([(OPCODES["NEG"], 2, 0, 0), (OPCODES["NEG"], 3, 2, 0)], 4, [3], "phi names register 3"),
    ],
)
def test_invalid_programs_are_rejected(code, n_reg, phi, msg):
    with pytest.raises(ModelError, match=msg):
        ConstraintProgram(
            n=1, c=1, code=np.array(code), consts=np.array([1.0]), n_reg=n_reg,
            phi=np.array(phi), K=np.array([[-1]]), kbias=np.array([-1]), phi_len=1,
        )  # fmt: skip


# ---------------------------------------------------------------------------------------------
# errors


def test_unsupported_function_is_named():
    x, y = sp.symbols("x y")
    with pytest.raises(ModelError, match="Heaviside"):
        compile_constraint([sp.Heaviside(x) * y], [x, y])
    f = sp.Function("my_user_func")
    with pytest.raises(ModelError, match="my_user_func"):
        compile_constraint([x + f(y)], [x, y])
    with pytest.raises(ModelError, match="Piecewise"):
        compile_constraint([sp.Piecewise((x, y > 0), (y, True))], [x, y])
    with pytest.raises(ModelError, match="Max"):
        compile_constraint([sp.Max(x, y)], [x, y])
    with pytest.raises(ModelError, match="imaginary"):
        compile_constraint([x + sp.I * y], [x, y])


def test_stray_symbol_is_named():
    x, y, length = sp.symbols("x y length")
    with pytest.raises(ModelError, match="length"):
        compile_constraint([x * length + y], [x, y])
    with pytest.raises(ModelError, match="duplicates"):
        compile_constraint([x], [x, x])
    with pytest.raises(ModelError, match="Symbols"):
        compile_constraint([x], [x, 2 * y])
    with pytest.raises(ModelError, match="not finite"):
        compile_constraint([x + sp.oo], [x])


def test_matrix_input_and_symbol_assumptions():
    # plain (non-real) symbols: |x| still differentiates to sign(x); a Matrix is accepted as φ
    x, y = sp.symbols("x y")
    prog = compile_constraint(sp.Matrix([sp.Abs(x) * y, sp.sin(x) ** 2]), [x, y])
    phi, K, k = prog.evaluate([-0.5, 2.0], [1.0, 3.0])
    assert_close(phi, [1.0, math.sin(-0.5) ** 2])
    assert_close(K, [[-2.0, 0.5], [math.sin(-1.0), 0.0]])
    # k = −K̇q̇: row 0 = −(2 sign(x) ẋ ẏ) = 6; row 1 = −2 cos(2x) ẋ²
    assert_close(k, [6.0, -2 * math.cos(-1.0)])


# ---------------------------------------------------------------------------------------------
# sin/cos with numeric phases


def test_shared_phases_rewritten_exactly():
    """sin(A + c), cos(A + c) of one A with several numeric phases c become sin A, cos A (one pair per
    A); a phase of its own is left alone (negative control). Values, K and k against lambdify of the
    formulas as written, at the tape's tolerance: the Tello knee-ankle differential and a
    hand-made case."""
    from loopdyn.robots.tello_model import knee_ankle_differential_phi

    def trig_args(prog):
        counts = prog.op_counts()
        return counts.get("SIN", 0), counts.get("COS", 0)

    q = sp.symbols("q0:4", real=True)
    x, y = q[0], q[1]
    cases = [
        # A = x with phases 0, 1/3, π/7; A = x + y with one phase (kept): 2 pairs
        ([sp.sin(x + sp.Rational(1, 3)) * sp.cos(x + sp.pi / 7) + sp.cos(x) - sp.sin(x + y + 2)], (x, y),
         (2, 2)),  # fmt: skip
        # no A with two phases: nothing to rewrite, one pair per argument
        ([sp.sin(x + 1) + sp.cos(y + 2)], (x, y), (2, 2)),
        (knee_ankle_differential_phi(list(q)), q, (3, 3)),
    ]
    rng = np.random.default_rng(11)
    for phi, syms, pairs in cases:
        prog = compile_constraint(phi, syms)
        assert trig_args(prog) == pairs, prog.op_counts()
        f_phi, f_K, f_k = reference(phi, list(syms))
        for _ in range(10):
            xs = rng.uniform(-2, 2, len(syms))
            vs = rng.uniform(-20, 20, len(syms))
            out = run(prog, xs, vs)
            for name, a, b in zip(("phi", "K", "k"), out, (f_phi(xs), f_K(xs), f_k(xs, vs)), strict=True):
                assert_close(a, b, what=name)
