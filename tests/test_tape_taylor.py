"""Taylor-mode runs of constraint programs (loopdyn.constraints.taylor) against sympy's exact series.

For each expression φ(q) and a polynomial curve q(t) = Σ_k c_k t^k with rational coefficients, the
coefficients of φ(q(t)) and of K(q(t)) = ∂φ/∂q(q(t)) up to t^R come from sympy (the expression
composed with the curve, its Taylor coefficients at 0 by mpmath in 40 digits)
and from the program run in Taylor arithmetic. Every opcode of the tape is covered (the test checks
that the programs used contain each one), including the branch for a power of a series starting at
zero (``x³`` along a curve through 0; ``|x|`` is tested away from 0, where it is smooth). Negative
control: a curve that differs from the one given to sympy in one high coefficient changes only that
order and above, and the comparison fails.
"""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from loopdyn.constraints import OPCODES, compile_constraint, pack_programs
from loopdyn.constraints.tape import T_C, T_K_LEN, T_N, T_OUT_START
from loopdyn.constraints.taylor import taylor_sweep

R = 6
x, y = sp.symbols("x y", real=True)

#: (rows, curve coefficients of x and y): each row an expression the tape compiles to the opcodes named
CASES = {
    "arith": ([x * y - x / (1 + y * y), -x + 3 * y, x**3 * y**-2], None),
    "trig": ([sp.sin(x) * sp.cos(y) + sp.tan(x - y) / 3], None),
    "exp_log_sqrt": ([sp.exp(x * y) + sp.log(2 + x) * sp.sqrt(3 + y), (2 + x) ** sp.Rational(3, 2)], None),
    "inverse_trig": ([sp.asin(x / 3) + sp.acos(y / 4) - sp.atan(x * y), sp.atan2(1 + y, 2 - x)], None),
    "general_power": ([(2 + x) ** (1 + y / 5), sp.Abs(x - 3) * sp.sign(y - 5)], None),
    # series through zero: x(0) = y(0) = 0 (powers take their zero branch)
    "through_zero": ([x**3 + y**5, x**4 * y - x**3 * y**3], ([0, sp.Rational(2, 3), -1, sp.Rational(1, 2)],
                                                             [0, 0, sp.Rational(-3, 4), 1])),  # fmt: skip
}

DEFAULT_CURVE = (
    [sp.Rational(3, 10), sp.Rational(-7, 10), sp.Rational(1, 2), sp.Rational(-1, 4), sp.Rational(1, 5)],
    [sp.Rational(-2, 5), sp.Rational(9, 10), sp.Rational(-3, 10), sp.Rational(2, 5), sp.Rational(-1, 10)],
)


def sympy_coefficients(rows, curve) -> tuple[np.ndarray, np.ndarray]:
    """(R+1, c) coefficients of φ(q(t)) and (R+1, c, 2) of K(q(t)): K by sympy, the compositions
    with the curve expanded by mpmath's Taylor coefficients in 40 digits."""
    import mpmath

    t = sp.Symbol("t", real=True)
    sub = {s: sum(ck * t**k for k, ck in enumerate(cs)) for s, cs in zip((x, y), curve, strict=True)}
    phi = np.zeros((R + 1, len(rows)))
    Kc = np.zeros((R + 1, len(rows), 2))
    with mpmath.workdps(40):
        for i, r in enumerate(rows):
            for e_idx, e in enumerate([r, sp.diff(r, x), sp.diff(r, y)]):
                e = e.replace(sp.DiracDelta, lambda *_: sp.S.Zero)  # sign' = 0 away from 0, as the tape's
                f = sp.lambdify(t, e.subs(sub), "mpmath")
                coeffs = [float(c) for c in mpmath.taylor(f, 0, R)]
                if e_idx == 0:
                    phi[:, i] = coeffs
                else:
                    Kc[:, i, e_idx - 1] = coeffs
    return phi, Kc


def taylor_coefficients(rows, curve) -> tuple[np.ndarray, np.ndarray, set]:
    """The same from the program run in Taylor arithmetic, and the opcodes it contains."""
    prog = compile_constraint(rows, [x, y])
    P = pack_programs([prog])
    n, c, o = int(P.table[0, T_N]), int(P.table[0, T_C]), int(P.table[0, T_OUT_START])
    T = np.zeros((P.max_reg, R + 1))
    A = np.zeros((P.max_reg, R + 1))
    s1, s2 = np.empty(R + 1), np.empty(R + 1)
    phi = np.zeros((R + 1, c))
    Kc = np.zeros((R + 1, c, n))
    for k in range(R + 1):
        for j in range(n):
            T[j, k] = float(curve[j][k]) if k < len(curve[j]) else 0.0
        taylor_sweep(P.code, P.consts, P.table, 0, int(P.table[0, T_K_LEN]), k, T, A, s1, s2)
        for r in range(c):
            i = P.outputs[o + r]
            phi[k, r] = T[i, k] if i >= 0 else 0.0
            for j in range(n):
                i = P.outputs[o + c + r * n + j]
                Kc[k, r, j] = T[i, k] if i >= 0 else 0.0
    ops = {name for name, code in OPCODES.items() if np.any(prog.code[:, 0] == code)}
    return phi, Kc, ops


@pytest.mark.parametrize("name", list(CASES))
def test_coefficients_equal_sympy_series(name):
    rows, curve = CASES[name]
    curve = curve or DEFAULT_CURVE
    ref_phi, ref_K = sympy_coefficients(rows, curve)
    phi, Kc, _ = taylor_coefficients(rows, curve)
    for k in range(R + 1):
        scale = max(1.0, np.abs(ref_phi[k]).max(), np.abs(ref_K[k]).max())
        assert np.abs(phi[k] - ref_phi[k]).max() <= 1e-12 * scale, (name, k, phi[k], ref_phi[k])
        assert np.abs(Kc[k] - ref_K[k]).max() <= 1e-12 * scale, (name, k)


def test_every_opcode_is_covered():
    seen = set()
    for rows, curve in CASES.values():
        seen |= taylor_coefficients(rows, curve or DEFAULT_CURVE)[2]
    assert seen >= set(OPCODES) - {"COPY"}, set(OPCODES) - seen  # COPY is never emitted


def test_negative_control_a_changed_coefficient_is_seen_from_its_order_on():
    rows, _ = CASES["trig"]
    ref_phi, _ = sympy_coefficients(rows, DEFAULT_CURVE)
    changed = (list(DEFAULT_CURVE[0]), list(DEFAULT_CURVE[1]))
    changed[0][3] += sp.Rational(1, 1000)
    phi, _, _ = taylor_coefficients(rows, changed)
    assert np.abs(phi[:3] - ref_phi[:3]).max() <= 1e-13  # orders below the change agree
    assert np.abs(phi[3] - ref_phi[3]).max() > 1e-5  # the comparison sees the change


@pytest.mark.parametrize("name", list(CASES))
def test_tangent_sweep_lanes_equal_one_sweep_per_direction(name):
    # tangent_sweep (coefficient 1 along several directions in one sweep, for the loop derivatives'
    # terms) against taylor_sweep run once per direction: equal bit for bit, companions included,
    # on programs that hold every opcode (the zero branch of powers in "through_zero")
    from loopdyn.constraints.taylor import tangent_sweep

    rows, curve = CASES[name]
    curve = curve or DEFAULT_CURVE
    P = pack_programs([compile_constraint(rows, [x, y])])
    n, stop, nreg = int(P.table[0, T_N]), int(P.table[0, T_K_LEN]), P.max_reg
    rng = np.random.default_rng(5)
    lanes = rng.normal(size=(n, 3))
    lanes[:, 0] = [float(curve[j][1]) for j in range(n)]  # the curve's own direction as lane 0
    s1, s2 = np.empty(R + 1), np.empty(R + 1)
    T = np.zeros((nreg, 3))
    A = np.zeros((nreg, 3))
    for j in range(n):
        T[j, 0] = float(curve[j][0])
    taylor_sweep(P.code, P.consts, P.table, 0, stop, 0, T, A, s1, s2)
    D, DA = np.zeros((nreg, 3)), np.zeros((nreg, 3))
    D[:n] = lanes
    tangent_sweep(P.code, P.consts, P.table, 0, stop, T.copy(), A.copy(), D, DA, 3, s1, s2)
    written = sorted({int(d) for d in P.code[:stop, 1]})
    for lane in range(3):
        T1, A1 = T.copy(), A.copy()
        T1[:n, 1] = lanes[:, lane]
        taylor_sweep(P.code, P.consts, P.table, 0, stop, 1, T1, A1, s1, s2)
        assert np.array_equal(D[written, lane], T1[written, 1]), (name, lane)
        assert np.array_equal(DA[written, lane], A1[written, 1]), (name, lane)
    # not vacuous: the lanes differ from one another where the program depends on its inputs (at
    # "through_zero" every first coefficient vanishes: powers of series starting at zero)
    if name != "through_zero":
        assert not np.array_equal(D[written, 1], D[written, 2])
