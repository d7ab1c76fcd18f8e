"""Taylor-mode evaluation of constraint programs: the Taylor coefficients of ``φ(q(t))`` and
``K(q(t))`` along a curve ``q(t) = Σ_k q_k t^k``, one coefficient at a time.

The higher-order dynamics of a closed loop (:mod:`loopdyn.higher_order.loops`) need the time
derivatives of the spanning coordinates ``q_s(t)`` that keep ``φ(q_s) = 0`` while the independent
coordinates follow their given derivatives, and the time derivatives of ``K(q_s(t))``. Both come from
running the cluster's constraint program (:mod:`loopdyn.constraints.tape`, the kernels' own program:
the φ and K prefix of its tape) on truncated Taylor series instead of numbers.

Every register ``r`` of the program holds a series ``T[r, 0..R]`` (``T[r, k]`` the coefficient of
``t^k``, i.e. the k-th time derivative over ``k!``). Taylor arithmetic is causal: coefficient ``k`` of
an instruction's result depends only on coefficients ``0..k`` of its operands. :func:`taylor_sweep`
computes coefficient ``k`` of every register from coefficients ``0..k−1`` of all registers and
coefficient ``k`` of the inputs ``T[0..n−1, k]``. A caller that solves for an input's coefficient
``k`` (the loop's dependent coordinates: coefficient ``k`` of ``φ`` is affine in it, with slope
``K(q_0)``) sweeps once with a guess, corrects the input and sweeps again.

The recurrences (Griewank & Walther, *Evaluating Derivatives*, 2nd ed., §13.2, Table 13.2) for
``c = f(a)`` (``a_j``, ``c_j`` the coefficients; ``k ≥ 1``):

=========  ===============================================================================
MUL        ``c_k = Σ_{j=0..k} a_j b_{k−j}``
DIV        ``c_k = (a_k − Σ_{j=1..k} b_j c_{k−j}) / b_0``
SIN, COS   ``s_k = (1/k) Σ_{j=1..k} j a_j o_{k−j}``, ``o_k = −(1/k) Σ j a_j s_{k−j}`` (s = sin,
           o = cos; the companion series is kept in ``A``)
EXP        ``c_k = (1/k) Σ_{j=1..k} j a_j c_{k−j}``
LOG        ``c_k = (a_k − (1/k) Σ_{j=1..k−1} j c_j a_{k−j}) / a_0``
POW_INT    ``c_k = (1/(k a_0)) Σ_{j=1..k} ((e+1) j − k) a_j c_{k−j}`` (from ``a c' = e a' c``);
           when ``a_0 = 0`` and ``e > 0``, the truncated series raised by repeated products
SQRT       ``c_k = (a_k − Σ_{j=1..k−1} c_j c_{k−j}) / (2 c_0)``
TAN        ``c' = w a'`` with ``w = 1 + c²`` (kept in ``A``)
ATAN       ``w c' = a'`` with ``w = 1 + a²``; ASIN, ACOS with ``w = √(1 − a²)`` (and ``−a'``)
ATAN2      ``w c' = b a' − a b'`` with ``w = a² + b²`` (``a`` = y, ``b`` = x)
POW        ``c = exp(b L)`` with ``L = log a`` (kept in ``A``)
ABS        ``c_k = σ a_k``, σ the sign of the first non-zero coefficient of ``a`` (SIGN: 0 for k ≥ 1)
=========  ===============================================================================
"""

from __future__ import annotations

import math

from ..jit import njit
from .tape import (
    ABS,
    ACOS,
    ADD,
    ASIN,
    ATAN,
    ATAN2,
    CONST,
    COS,
    DIV,
    EXP,
    LOG,
    MUL,
    NEG,
    POW,
    POW_INT,
    SIGN,
    SIN,
    SQRT,
    SUB,
    T_CODE_START,
    T_CONST_START,
    TAN,
)

__all__ = ["taylor_sweep", "tangent_sweep", "K_coefficient"]


@njit(cache=True, error_model="numpy")  # a division by zero gives inf or NaN, as NumPy
def taylor_sweep(code, consts, table, p, stop, k, T, A, s1, s2):
    """Coefficient ``k`` of every register written by the first ``stop`` instructions of program ``p``
    (``table[p, T_PHI_LEN]`` for φ alone, ``table[p, T_K_LEN]`` for φ and K), from coefficients
    ``0..k−1`` of every register and coefficient ``k`` of the inputs ``T[0..n−1, k]``.

    Args:
        code, consts, table: the arrays of a :class:`~loopdyn.constraints.tape.PackedPrograms`.
        p: the program (row of ``table``).
        stop: how many instructions of the program to run.
        k: the coefficient computed.
        T: ``float64 (≥ n_reg, ≥ k + 1)`` register series (read ``[:, :k]`` and the inputs' ``[:, k]``,
           write ``[:, k]``).
        A: as ``T``: the companion series some opcodes keep (cos of a sin, 1 + tan², …).
        s1, s2: ``float64 (≥ k + 1)`` scratch (a power of a series starting at zero).
    """
    start = table[p, T_CODE_START]
    cbase = table[p, T_CONST_START]
    for i in range(start, start + stop):
        op = code[i, 0]
        d = code[i, 1]
        a = code[i, 2]
        b = code[i, 3]
        if op == MUL:
            s = 0.0
            for j in range(k + 1):
                s += T[a, j] * T[b, k - j]
            T[d, k] = s
        elif op == ADD:
            T[d, k] = T[a, k] + T[b, k]
        elif op == SUB:
            T[d, k] = T[a, k] - T[b, k]
        elif op == CONST:
            T[d, k] = consts[cbase + a] if k == 0 else 0.0
        elif op == NEG:
            T[d, k] = -T[a, k]
        elif op == DIV:
            s = T[a, k]
            for j in range(1, k + 1):
                s -= T[b, j] * T[d, k - j]
            T[d, k] = s / T[b, 0]
        elif op == SIN or op == COS:
            if k == 0:
                sn, cs = math.sin(T[a, 0]), math.cos(T[a, 0])
            else:
                # T[d] holds this op's function, A[d] the companion (cos of a sin, sin of a cos)
                sn = 0.0
                cs = 0.0
                if op == SIN:
                    for j in range(1, k + 1):
                        sn += j * T[a, j] * A[d, k - j]
                        cs -= j * T[a, j] * T[d, k - j]
                else:
                    for j in range(1, k + 1):
                        sn += j * T[a, j] * T[d, k - j]
                        cs -= j * T[a, j] * A[d, k - j]
                sn /= k
                cs /= k
            if op == SIN:
                T[d, k] = sn
                A[d, k] = cs
            else:
                T[d, k] = cs
                A[d, k] = sn
        else:
            _taylor_other(op, code, i, d, a, b, k, T, A, s1, s2)


@njit(cache=True, error_model="numpy")  # a division by zero gives inf or NaN, as NumPy
def tangent_sweep(code, consts, table, p, stop, T, A, D, DA, nl, s1, s2):
    """Coefficient 1 of every register written by the first ``stop`` instructions of program ``p``
    along ``nl`` directions at once ("lanes"): ``D[r, l]`` (and the companion ``DA[r, l]``) is what
    ``T[r, 1]`` (``A[r, 1]``) would be after :func:`taylor_sweep` with ``k = 1`` and the inputs'
    ``T[0..n−1, 1] = D[0..n−1, l]``, bit for bit (the same operations in the same order).

    For a loop's derivative terms, which need coefficient 1 along q̇ and along each column of G
    (:func:`loopdyn.algorithms.loop_derivatives.loop_tangent_terms`): one sweep decodes each
    instruction once for all of them, where one sweep per direction decoded it each time.

    Args:
        code, consts, table, p, stop: as :func:`taylor_sweep`.
        T, A: the register series with coefficient 0 of every register (a ``k = 0`` sweep); the
            less frequent opcodes (library functions, powers) go through :func:`taylor_sweep`'s own
            step one lane at a time, with ``T[:, 1]`` and ``A[:, 1]`` as its scratch: both hold
            garbage afterwards.
        D, DA: ``float64 (≥ n_reg, ≥ nl)``: the inputs' lanes ``D[0..n−1, :]`` in, every written
            register's lanes out.
        nl: the number of lanes.
        s1, s2: ``float64 (≥ 2)`` scratch, as :func:`taylor_sweep`'s.
    """
    start = table[p, T_CODE_START]
    for i in range(start, start + stop):
        op = code[i, 0]
        d = code[i, 1]
        a = code[i, 2]
        b = code[i, 3]
        if op == MUL:
            a0, b0 = T[a, 0], T[b, 0]
            for l in range(nl):
                s = 0.0
                s += a0 * D[b, l]
                s += D[a, l] * b0
                D[d, l] = s
        elif op == ADD:
            for l in range(nl):
                D[d, l] = D[a, l] + D[b, l]
        elif op == SUB:
            for l in range(nl):
                D[d, l] = D[a, l] - D[b, l]
        elif op == CONST:
            for l in range(nl):
                D[d, l] = 0.0
        elif op == NEG:
            for l in range(nl):
                D[d, l] = -D[a, l]
        elif op == DIV:
            b0, c0 = T[b, 0], T[d, 0]
            for l in range(nl):
                s = D[a, l]
                s -= D[b, l] * c0
                D[d, l] = s / b0
        elif op == SIN or op == COS:  # as taylor_sweep's k = 1 step (its sums of one term)
            own, other = T[d, 0], A[d, 0]  # SIN: T[d] the sine, A[d] its cosine; COS the reverse
            for l in range(nl):
                sn = 0.0
                cs = 0.0
                if op == SIN:
                    sn += 1 * D[a, l] * other
                    cs -= 1 * D[a, l] * own
                    D[d, l] = sn / 1
                    DA[d, l] = cs / 1
                else:
                    sn += 1 * D[a, l] * own
                    cs -= 1 * D[a, l] * other
                    D[d, l] = cs / 1
                    DA[d, l] = sn / 1
        else:
            for l in range(nl):  # one lane at a time through the generic step
                T[a, 1] = D[a, l]
                if op == ATAN2 or op == POW:
                    T[b, 1] = D[b, l]
                _taylor_other(op, code, i, d, a, b, 1, T, A, s1, s2)
                D[d, l] = T[d, 1]
                DA[d, l] = A[d, 1]


@njit(cache=True, error_model="numpy")  # a division by zero gives inf or NaN, as NumPy
def _taylor_other(op, code, i, d, a, b, k, T, A, s1, s2):
    """The less frequent opcodes of :func:`taylor_sweep` (library functions and powers)."""
    x0 = T[a, 0]
    if op == POW_INT:
        e = code[i, 3]
        if k == 0:
            m = -e if e < 0 else e
            r = 1.0
            x = x0
            while m > 0:  # binary exponentiation, as the tape's interpreter
                if m & 1:
                    r *= x
                x *= x
                m >>= 1
            T[d, 0] = 1.0 / r if e < 0 else r
        elif x0 != 0.0:
            s = 0.0
            for j in range(1, k + 1):
                s += ((e + 1) * j - k) * T[a, j] * T[d, k - j]
            T[d, k] = s / (k * x0)
        elif e > 0:  # a series starting at zero: the truncated product, e times
            for j in range(k + 1):
                s1[j] = 0.0
            s1[0] = 1.0
            for _ in range(e):
                for j in range(k + 1):
                    s = 0.0
                    for l in range(j + 1):
                        s += s1[l] * T[a, j - l]
                    s2[j] = s
                for j in range(k + 1):
                    s1[j] = s2[j]
            T[d, k] = s1[k]
        else:
            T[d, k] = math.nan
    elif op == SQRT:
        if k == 0:
            T[d, 0] = math.sqrt(x0)
        else:
            s = T[a, k]
            for j in range(1, k):
                s -= T[d, j] * T[d, k - j]
            T[d, k] = s / (2.0 * T[d, 0])
    elif op == EXP:
        if k == 0:
            T[d, 0] = math.exp(x0)
        else:
            s = 0.0
            for j in range(1, k + 1):
                s += j * T[a, j] * T[d, k - j]
            T[d, k] = s / k
    elif op == LOG:
        T[d, k] = _log_coefficient(T, T, a, d, k)
    elif op == TAN:  # c' = w a', w = 1 + c² in A
        if k == 0:
            t = math.tan(x0)
            T[d, 0] = t
            A[d, 0] = 1.0 + t * t
        else:
            s = 0.0
            for j in range(1, k + 1):
                s += j * T[a, j] * A[d, k - j]
            T[d, k] = s / k
            w = 0.0
            for j in range(k + 1):
                w += T[d, j] * T[d, k - j]
            A[d, k] = w
    elif op == ATAN or op == ASIN or op == ACOS:  # w c' = ±a'
        if k == 0:
            if op == ATAN:
                T[d, 0] = math.atan(x0)
                A[d, 0] = 1.0 + x0 * x0
            else:
                T[d, 0] = math.asin(x0) if op == ASIN else math.acos(x0)
                A[d, 0] = math.sqrt(1.0 - x0 * x0)
        else:
            s = (-k if op == ACOS else k) * T[a, k]
            for j in range(1, k):
                s -= j * T[d, j] * A[d, k - j]
            T[d, k] = s / (k * A[d, 0])
            sq = 0.0
            for j in range(k + 1):
                sq += T[a, j] * T[a, k - j]
            if op == ATAN:
                A[d, k] = sq
            else:  # w² = 1 − a²
                for j in range(1, k):
                    sq += A[d, j] * A[d, k - j]
                A[d, k] = -sq / (2.0 * A[d, 0])
    elif op == ATAN2:  # θ = atan2(a, b): w θ' = b a' − a b', w = a² + b²
        if k == 0:
            T[d, 0] = math.atan2(x0, T[b, 0])
            A[d, 0] = x0 * x0 + T[b, 0] * T[b, 0]
        else:
            s = 0.0
            for j in range(k):
                s += (k - j) * (T[b, j] * T[a, k - j] - T[a, j] * T[b, k - j])
            for j in range(1, k):
                s -= j * T[d, j] * A[d, k - j]
            T[d, k] = s / (k * A[d, 0])
            w = 0.0
            for j in range(k + 1):
                w += T[a, j] * T[a, k - j] + T[b, j] * T[b, k - j]
            A[d, k] = w
    elif op == POW:  # c = exp(b L), L = log a in A
        A[d, k] = _log_coefficient(T, A, a, d, k)
        if k == 0:
            T[d, 0] = x0 ** T[b, 0]
        else:
            s = 0.0
            for j in range(1, k + 1):
                m = 0.0  # coefficient j of b L
                for l in range(j + 1):
                    m += T[b, l] * A[d, j - l]
                s += j * m * T[d, k - j]
            T[d, k] = s / k
    elif op == ABS:
        sign = 0.0
        for j in range(k + 1):
            if T[a, j] != 0.0:
                sign = 1.0 if T[a, j] > 0.0 else -1.0
                break
        T[d, k] = sign * T[a, k] if k > 0 else abs(x0)
    elif op == SIGN:
        T[d, k] = (1.0 if x0 > 0.0 else (-1.0 if x0 < 0.0 else x0)) if k == 0 else 0.0
    else:  # COPY
        T[d, k] = T[a, k]


@njit(cache=True, error_model="numpy")  # a division by zero gives inf or NaN, as NumPy
def _log_coefficient(T, L, a, d, k):
    """Coefficient k of c = log(a) (the series a in ``T[a]``, c's lower coefficients in ``L[d]``):
    ``(a_k − (1/k) Σ_{j=1..k−1} j c_j a_{k−j}) / a_0``."""
    if k == 0:
        return math.log(T[a, 0])
    s = T[a, k]
    for j in range(1, k):
        s -= j * L[d, j] * T[a, k - j] / k
    return s / T[a, 0]


@njit(cache=True)
def K_coefficient(outputs, o, n, nrow, T, k, out, at):
    """Coefficient ``k`` of the first ``nrow`` rows of K (``nrow × n``, row-major) from the registers
    ``T`` into ``out[at:]``; ``o``: the offset in ``outputs`` of K's registers
    (``table[p, T_OUT_START] + table[p, T_C]``). An output without a register (K's zeros) gives 0."""
    for r in range(nrow * n):
        i = outputs[o + r]
        out[at + r] = T[i, k] if i >= 0 else 0.0
