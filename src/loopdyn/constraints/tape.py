"""Symbolic loop-closure constraints compiled into flat register-machine programs ("tapes").

A loop-closure constraint on a cluster of ``n`` joint coordinates ``q`` (1-DoF joints, so ``q̇`` is
the velocity) is ``φ(q) = 0`` with ``c`` rows. The dynamics kernels need, at every call, ``φ(q)``,
the Jacobian ``K = ∂φ/∂q`` (``c × n``) and the bias ``k = −K̇ q̇`` where
``K̇ q̇ = Σ_j (∂(K q̇)/∂q_j) q̇_j``.

:func:`compile_constraint` differentiates the sympy formulas once, at model-build time, removes the
common subexpressions of *all* the outputs together (``sympy.cse``) and flattens the result into a
:class:`ConstraintProgram`: a list of ``(opcode, dst, a, b)`` instructions over a register file
(``float64`` scratch) plus a table of ``float64`` constants. :func:`pack_programs` concatenates any
number of programs into a :class:`PackedPrograms`, and the single generic Numba interpreter
:func:`evaluate` (``@njit(cache=True)``) runs any of them: a model with many constraints of different
shapes needs no per-model compilation and no Python loop.

Registers
    Registers ``0 .. n−1`` hold ``q``, ``n .. 2n−1`` hold ``q̇``; every instruction writes a fresh
    register (static single assignment), so ``n_reg = 2n + (number of instructions)``. Registers are
    local to a program: every program addresses its registers from 0.

Instructions (``code[i] = (opcode, dst, a, b)``; ``r`` = registers, ``κ`` = the program's constants)
    ========== =======================================  ==========================================
    opcode     effect                                   notes
    ========== =======================================  ==========================================
    MUL        ``r[dst] = r[a] * r[b]``                  also used for squares (``x**2``)
    ADD        ``r[dst] = r[a] + r[b]``
    SUB        ``r[dst] = r[a] - r[b]``
    SIN, COS   ``r[dst] = sin(r[a])``, ``cos(r[a])``
    CONST      ``r[dst] = κ[a]``                         ``a`` relative to the program's constants
    DIV        ``r[dst] = r[a] / r[b]``                  ``x**-1`` and every ``num/den`` product
    NEG        ``r[dst] = -r[a]``
    POW_INT    ``r[dst] = r[a] ** b``                    ``b`` an integer (may be negative)
    SQRT       ``r[dst] = sqrt(r[a])``                   ``x**(1/2)``; ``x**(p/2)`` = POW_INT(SQRT)
    TAN, EXP,  ``tan``, ``exp``, ``log``, ``|x|``
    LOG, ABS
    ATAN2      ``r[dst] = atan2(r[a], r[b])``            sympy's ``atan2(y, x)``: ``a`` = y, ``b`` = x
    POW        ``r[dst] = r[a] ** r[b]``                 any other power
    COPY       ``r[dst] = r[a]``                         never emitted by the compiler
    SIGN       ``r[dst] = sign(r[a])``                   ``sign(0) = 0``; the derivative of ``|x|``
    ASIN,      ``asin``, ``acos``, ``atan``
    ACOS, ATAN
    ========== =======================================  ==========================================

Outputs
    ``ConstraintProgram.phi[r]``, ``K[r, j]`` and ``kbias[r]`` name the register holding each output
    (possibly an input register: ``φ = q_0`` gives ``phi[0] = 0``), or ``−1`` for an exact
    (structural) zero; the interpreter writes ``0.0`` for those.

Tape order
    The tape computes φ first, then what K needs beyond it, then what k needs beyond that (each
    stage emits only the subexpressions it is the first to use). ``phi_len`` and ``K_len`` are the
    corresponding prefix lengths: running ``code[:phi_len]`` gives φ alone, which is what
    :func:`evaluate_phi` does (for Newton projection onto ``φ = 0``), at a fraction of the cost of the
    full tape. ``code[:K_len]`` gives φ and K.

Semantics of the supported functions are those of Python's :mod:`math` on real numbers (``|x|``
has derivative ``sign(x)`` and second derivative ``0``; the tape does not check domains: ``sqrt`` or
``log`` of a negative number gives NaN, like ``numpy``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from types import SimpleNamespace
from typing import TYPE_CHECKING

import numpy as np
from llvmlite import ir
from numba import types, uint64
from numba.extending import intrinsic

from ..errors import ModelError
from ..jit import inlined, njit
from .symbolic_cache import cached_arrays, key

if TYPE_CHECKING:
    import sympy

__all__ = [
    "ConstraintProgram",
    "PackedPrograms",
    "compile_constraint",
    "evaluate",
    "evaluate_phi",
    "pack_programs",
    "OPCODES",
]

# ---------------------------------------------------------------------------------------------
# opcodes (module-level ints: Numba freezes them as compile-time constants)
MUL = 0
ADD = 1
SUB = 2
SIN = 3
COS = 4
CONST = 5
DIV = 6
NEG = 7
POW_INT = 8
SQRT = 9
TAN = 10
EXP = 11
LOG = 12
ATAN2 = 13
POW = 14
ABS = 15
COPY = 16
SIGN = 17
ASIN = 18
ACOS = 19
ATAN = 20

#: opcode name -> number
OPCODES: dict[str, int] = {
    "MUL": MUL,
    "ADD": ADD,
    "SUB": SUB,
    "SIN": SIN,
    "COS": COS,
    "CONST": CONST,
    "DIV": DIV,
    "NEG": NEG,
    "POW_INT": POW_INT,
    "SQRT": SQRT,
    "TAN": TAN,
    "EXP": EXP,
    "LOG": LOG,
    "ATAN2": ATAN2,
    "POW": POW,
    "ABS": ABS,
    "COPY": COPY,
    "SIGN": SIGN,
    "ASIN": ASIN,
    "ACOS": ACOS,
    "ATAN": ATAN,
}
_OPNAMES = {v: k for k, v in OPCODES.items()}
_COMMUTATIVE = (ADD, MUL)
_BINARY = (MUL, ADD, SUB, DIV, ATAN2, POW)

#: number of columns of :attr:`PackedPrograms.table`, and their meaning
TABLE_WIDTH = 14
T_CODE_START = 0
T_CODE_LEN = 1
T_CONST_START = 2
T_NREG = 3
T_N = 4
T_C = 5
T_OUT_START = 6
T_PHI_LEN = 7
T_K_LEN = 8
#: the address of the program's native φ, K function and of its k function
#: (:mod:`loopdyn.constraints.native`), or 0: interpret the tape
T_NATIVE_PHI_K = 9
T_NATIVE_K = 10
#: the address of the program's native Taylor function (K's coefficients 0, 1, 2 along q̇ and 1 along
#: the columns of G, :func:`loopdyn.constraints.native.generate_taylor_source`) or 0, and the number m
#: of G's columns it was made for (0: not made)
T_NATIVE_TAYLOR = 11
T_TAYLOR_M = 12
#: the address of the program's native rate function (K and K̇ = ∂²φ(q̇, ·): the same generator with
#: coefficients 0 and 1 along q̇ only, for Ġ of the Coriolis matrix) or 0
T_NATIVE_KDOT = 13


# ---------------------------------------------------------------------------------------------
# sympy support, built on first use: the kernels import this module without paying for sympy


@functools.cache
def _symbolic() -> SimpleNamespace:
    """sympy, real-valued ``|x|`` / ``sign(x)`` with the derivatives the kernels need, op tables."""
    import sympy

    class RealAbs(sympy.Function):
        """``|x|`` of a real argument: its derivative is ``sign(x)`` whatever sympy knows of ``x``."""

        nargs = 1

        @classmethod
        def eval(cls, arg):
            return sympy.Abs(arg) if arg.is_number else None

        def fdiff(self, argindex=1):
            return RealSign(self.args[0])

    class RealSign(sympy.Function):
        """``sign(x)`` of a real argument: its derivative is taken as 0 (true almost everywhere)."""

        nargs = 1

        @classmethod
        def eval(cls, arg):
            return sympy.sign(arg) if arg.is_number else None

        def fdiff(self, argindex=1):
            return sympy.S.Zero

    unary = {
        sympy.sin: SIN,
        sympy.cos: COS,
        sympy.tan: TAN,
        sympy.exp: EXP,
        sympy.log: LOG,
        sympy.asin: ASIN,
        sympy.acos: ACOS,
        sympy.atan: ATAN,
        RealAbs: ABS,
        RealSign: SIGN,
    }
    return SimpleNamespace(
        sp=sympy,
        RealAbs=RealAbs,
        RealSign=RealSign,
        unary=unary,
        supported=set(unary) | {sympy.atan2, sympy.Abs, sympy.sign},
    )


_SUPPORTED_NAMES = "sin, cos, tan, exp, log, sqrt, asin, acos, atan, atan2, Abs, sign, powers"


# ---------------------------------------------------------------------------------------------
# programs


@dataclass(frozen=True, eq=False)
class ConstraintProgram:
    """One constraint ``φ(q) = 0`` compiled into a tape (see the module docstring for the format).

    Built by :func:`compile_constraint`; evaluated by :func:`evaluate` after :func:`pack_programs`
    (or, from Python, by :meth:`evaluate`). The arrays are read-only. Equality is identity.

    Attributes:
        n: number of coordinates ``q`` (and velocities ``q̇``).
        c: number of constraint rows.
        code: ``int64 (n_instr, 4)`` instructions ``(opcode, dst, a, b)``.
        consts: ``float64 (n_consts,)`` constants, indexed by ``CONST`` instructions from 0.
        n_reg: registers used, including the ``2n`` inputs (``0..n−1`` = q, ``n..2n−1`` = q̇).
        phi: ``int64 (c,)`` register holding ``φ_r`` (``−1``: identically zero).
        K: ``int64 (c, n)`` register holding ``K_rj = ∂φ_r/∂q_j``, or ``−1`` for a structural zero.
        kbias: ``int64 (c,)`` register holding ``k_r = −(K̇ q̇)_r``, or ``−1`` for zero.
        phi_len: the first ``phi_len`` instructions compute φ (they read q only); default (−1):
            the shortest such prefix.
        K_len: the first ``K_len`` instructions compute φ and K (they read q only); default (−1):
            the shortest such prefix.
    """

    n: int
    c: int
    code: np.ndarray
    consts: np.ndarray
    n_reg: int
    phi: np.ndarray
    K: np.ndarray
    kbias: np.ndarray
    phi_len: int = -1
    K_len: int = -1

    def __post_init__(self):
        code = np.ascontiguousarray(self.code, dtype=np.int64).reshape(-1, 4)
        consts = np.ascontiguousarray(self.consts, dtype=np.float64).reshape(-1)
        phi = np.ascontiguousarray(self.phi, dtype=np.int64).reshape(self.c)
        K = np.ascontiguousarray(self.K, dtype=np.int64).reshape(self.c, self.n)
        kbias = np.ascontiguousarray(self.kbias, dtype=np.int64).reshape(self.c)
        phi_len, K_len = _validate(
            self.n, self.c, code, consts, int(self.n_reg), phi, K, kbias, int(self.phi_len), int(self.K_len)
        )
        for name, arr in (("code", code), ("consts", consts), ("phi", phi), ("K", K), ("kbias", kbias)):
            arr.flags.writeable = False
            object.__setattr__(self, name, arr)
        object.__setattr__(self, "phi_len", phi_len)
        object.__setattr__(self, "K_len", K_len)

    @property
    def n_instr(self) -> int:
        """Number of instructions of the tape."""
        return int(self.code.shape[0])

    def op_counts(self) -> dict[str, int]:
        """How many instructions of each opcode the tape holds (by opcode name)."""
        ops, counts = np.unique(self.code[:, 0], return_counts=True)
        return {_OPNAMES[int(o)]: int(k) for o, k in zip(ops, counts, strict=True)}

    def disassemble(self) -> str:
        """A human-readable listing of the tape and its outputs (for debugging)."""
        lines = []

        def r(i):
            i = int(i)
            if i < 0:
                return "0"
            if i < self.n:
                return f"q{i}"
            if i < 2 * self.n:
                return f"qd{i - self.n}"
            return f"r{i}"

        for pc, (op, d, a, b) in enumerate(self.code):
            name = _OPNAMES[int(op)]
            if op == CONST:
                args = repr(float(self.consts[a]))
            elif op == POW_INT:
                args = f"{r(a)}, {int(b)}"
            elif op in _BINARY:
                args = f"{r(a)}, {r(b)}"
            else:
                args = r(a)
            lines.append(f"{pc:4d}  {r(d):>6} = {name} {args}")
        for i in range(self.c):
            lines.append(f"phi[{i}] = {r(self.phi[i])}")
        for i in range(self.c):
            lines.append(f"K[{i}] = " + ", ".join(r(x) for x in self.K[i]))
        for i in range(self.c):
            lines.append(f"k[{i}] = {r(self.kbias[i])}")
        return "\n".join(lines)

    @cached_property
    def _packed(self) -> PackedPrograms:
        return pack_programs([self])

    def evaluate(self, q, qd=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Evaluate from Python: ``(φ (c,), K (c, n), k (c,))`` at ``q`` and ``q̇`` (default 0).

        A convenience for tests and model building; kernels call :func:`evaluate` directly.
        """
        q = np.ascontiguousarray(q, dtype=np.float64).reshape(-1)
        qd = np.zeros(self.n) if qd is None else np.ascontiguousarray(qd, dtype=np.float64).reshape(-1)
        if q.shape[0] != self.n or qd.shape[0] != self.n:
            raise ValueError(f"q and qd must have {self.n} entries")
        pk = self._packed
        regs = np.empty(max(pk.max_reg, 1))
        phi, K, k = np.empty(self.c), np.empty(self.c * self.n), np.empty(self.c)
        evaluate(pk.code, pk.consts, pk.table, pk.outputs, 0, q, qd, regs, phi, K, k)
        return phi, K.reshape(self.c, self.n), k


def _validate(n, c, code, consts, n_reg, phi, K, kbias, phi_len, K_len) -> tuple[int, int]:
    """Check a tape: it only reads registers it has written and constants it has (the interpreter
    trusts it), writes every register once, φ and K come from the prefixes ``phi_len`` / ``K_len``
    (``−1``: the shortest prefix that computes them), which do not read q̇. Returns the prefixes."""
    if n < 0 or c < 0:
        raise ModelError("a constraint program needs n >= 0 coordinates and c >= 0 rows")
    if n_reg < 2 * n:
        raise ModelError(f"n_reg = {n_reg} < 2n = {2 * n}")
    n_instr = code.shape[0]
    # born[r]: index of the instruction writing r (-1 for q, -2 for q̇, n_instr + 1 if never written)
    never = n_instr + 1
    born = np.full(n_reg + 1, never, dtype=np.int64)  # one spare entry: a safe index for -1
    born[:n] = -1
    born[n : 2 * n] = -2
    reads_qd = np.zeros(n_instr, dtype=bool)
    for pc, (op, d, a, b) in enumerate(code.tolist()):
        if op not in _OPNAMES:
            raise ModelError(f"instruction {pc}: unknown opcode {op}")
        reads = []
        if op == CONST:
            if not 0 <= a < consts.shape[0]:
                raise ModelError(f"instruction {pc}: constant index {a} out of range")
        elif op in _BINARY:
            reads = [a, b]
        else:
            reads = [a]
        for x in reads:
            if not (0 <= x < n_reg and born[x] < pc):
                raise ModelError(f"instruction {pc}: reads register {x} before it is written")
            reads_qd[pc] |= bool(born[x] == -2)
        if not 2 * n <= d < n_reg or born[d] != never:
            raise ModelError(f"instruction {pc}: writes register {d} (inputs or written before)")
        born[d] = pc

    def shortest(arr):
        arr = arr.reshape(-1)
        return int(max((born[r] + 1 for r in arr if 2 * n <= r < n_reg), default=0))

    if phi_len < 0:
        phi_len = shortest(phi)
    if K_len < 0:
        K_len = max(phi_len, shortest(K))
    if not 0 <= phi_len <= K_len <= n_instr:
        raise ModelError("a constraint program needs 0 <= phi_len <= K_len <= n_instr")
    if reads_qd[:K_len].any():
        pc = int(np.argmax(reads_qd[:K_len]))
        raise ModelError(f"instruction {pc}: the φ/K part of the tape reads q̇")
    for name, arr, limit in (("phi", phi, phi_len), ("K", K, K_len), ("kbias", kbias, n_instr)):
        arr = arr.reshape(-1)
        at = born[np.clip(arr, 0, n_reg)]
        ok = (arr == -1) | ((arr >= 0) & (arr < n_reg) & (at < limit))
        if name != "kbias":
            ok &= at != -2  # φ and K do not depend on q̇
        if not ok.all():
            bad = int(arr[~ok][0])
            raise ModelError(f"{name} names register {bad}, which its part of the tape does not compute")
    return phi_len, K_len


@dataclass(frozen=True, eq=False)
class PackedPrograms:
    """Many :class:`ConstraintProgram` concatenated into flat arrays for :func:`evaluate`.

    Layout (program ``p``, ``T = table[p]``):

    * ``code`` ``int64 (Σ n_instr, 4)``: the programs' instructions back to back, unmodified —
      program ``p`` is ``code[T[0] : T[0] + T[1]]``; its register numbers start at 0 and its
      ``CONST`` indices are relative to ``T[2]`` (so packing rewrites nothing).
    * ``consts`` ``float64 (Σ n_consts,)``: the programs' constants back to back.
    * ``table`` ``int64 (n_programs, 14)``: ``[code_start, code_len, const_start, n_reg, n, c,
      out_start, phi_len, K_len, native_phi_K, native_k, native_taylor, taylor_m, native_kdot]`` (the
      prefixes of the tape that compute φ alone, φ and K; the addresses of the program's native
      functions, 0 here:
      :func:`loopdyn.constraints.native.fill_addresses` and ``Data.load_taylor_programs`` set them
      in a model's Data).
    * ``outputs`` ``int64 (Σ (2c + c n),)``: from ``out_start``, the registers of ``φ`` (``c``),
      ``K`` (``c n``, row-major) and ``k`` (``c``); ``−1`` = zero.
    * ``max_reg``: the largest ``n_reg`` (size of the register scratch), ``max_n``, ``max_c``: the
      largest ``n`` and ``c`` (sizes of the output buffers: ``K_out`` needs ``c n``).
    """

    code: np.ndarray
    consts: np.ndarray
    table: np.ndarray
    outputs: np.ndarray
    max_reg: int
    max_n: int
    max_c: int

    def __len__(self) -> int:
        return int(self.table.shape[0])


def pack_programs(programs: Sequence[ConstraintProgram]) -> PackedPrograms:
    """Concatenate programs into one :class:`PackedPrograms` (layout in its docstring).

    Program ``p`` of the result is ``programs[p]``; the instructions and constants are copied
    verbatim (register numbers and constant indices are program-relative).
    """
    programs = list(programs)
    for p in programs:
        if not isinstance(p, ConstraintProgram):
            raise TypeError(f"pack_programs expects ConstraintProgram objects, got {type(p).__name__}")
    table = np.zeros((len(programs), TABLE_WIDTH), dtype=np.int64)
    code_start = const_start = out_start = 0
    outs = []
    for i, p in enumerate(programs):
        table[i, :T_NATIVE_PHI_K] = (
            code_start, p.n_instr, const_start, p.n_reg, p.n, p.c, out_start, p.phi_len, p.K_len
        )
        outs.append(np.concatenate([p.phi, p.K.reshape(-1), p.kbias]))
        code_start += p.n_instr
        const_start += p.consts.shape[0]
        out_start += outs[-1].shape[0]
    code = np.concatenate([p.code for p in programs]) if programs else np.zeros((0, 4), np.int64)
    consts = np.concatenate([p.consts for p in programs]) if programs else np.zeros(0)
    outputs = np.concatenate(outs) if outs else np.zeros(0, np.int64)
    return PackedPrograms(
        code=np.ascontiguousarray(code, dtype=np.int64),
        consts=np.ascontiguousarray(consts, dtype=np.float64),
        table=table,
        outputs=np.ascontiguousarray(outputs, dtype=np.int64),
        max_reg=max((p.n_reg for p in programs), default=0),
        max_n=max((p.n for p in programs), default=0),
        max_c=max((p.c for p in programs), default=0),
    )


# ---------------------------------------------------------------------------------------------
# compiler


_ODD = {SIN: True, TAN: True, ASIN: True, ATAN: True, SIGN: True, COS: False, ABS: False}


class _Emitter:
    """Flattens sympy expressions into SSA instructions.

    Values are built in *signed* form ``(register, negated)`` — the value is ``−r`` if ``negated`` —
    so that negative coefficients become ``SUB`` (or vanish in products) instead of ``NEG``
    instructions; ``NEG`` is emitted only where a true value is needed (outputs, function
    arguments). Identical instructions are shared (value numbering) and constants pooled.
    """

    def __init__(self, n: int, inputs: dict):
        self.code: list[tuple[int, int, int, int]] = []
        self.consts: list[float] = []
        self.const_pool: dict[str, int] = {}  # float.hex -> register
        self.instr_pool: dict[tuple[int, int, int], int] = {}  # (op, a, b) -> register
        self.memo: dict = {e: (r, False) for e, r in inputs.items()}  # expression -> signed value
        self.pending: dict = {}  # CSE symbol -> its (not yet emitted) definition
        self.n_reg = 2 * n
        self.sym = _symbolic()

    # -- instructions
    def op(self, opcode: int, a: int, b: int = 0) -> int:
        if opcode in _COMMUTATIVE and b < a:
            a, b = b, a
        key = (opcode, a, b)
        reg = self.instr_pool.get(key)
        if reg is None:
            reg = self.n_reg
            self.n_reg += 1
            self.code.append((opcode, reg, a, b))
            self.instr_pool[key] = reg
        return reg

    def const(self, value: float) -> int:
        key = float(value).hex()
        reg = self.const_pool.get(key)
        if reg is None:
            self.consts.append(float(value))
            reg = self.op(CONST, len(self.consts) - 1)
            self.const_pool[key] = reg
        return reg

    @staticmethod
    def real(expr) -> float:
        try:
            value = float(expr)
        except TypeError:
            raise ModelError(f"constraint constant {expr} is not a real number") from None
        if not math.isfinite(value):
            raise ModelError(f"constraint constant {expr} is not finite")
        return value

    def product(self, regs: list[int]) -> int:
        acc = regs[0]
        for r in regs[1:]:
            acc = self.op(MUL, acc, r)
        return acc

    # -- expressions
    def emit(self, expr) -> int:
        """The register holding the value of ``expr``."""
        if expr.is_number:
            return self.const(self.real(expr))
        reg, neg = self.value(expr)
        return self.op(NEG, reg) if neg else reg

    def value(self, expr) -> tuple[int, bool]:
        """``expr`` in signed form ``(register, negated)``."""
        got = self.memo.get(expr)
        if got is not None:
            return got
        if expr in self.pending:
            got = self.value(self.pending.pop(expr))
        elif expr.is_number:
            v = self.real(expr)
            got = (self.const(-v), True) if v < 0 else (self.const(v), False)
        elif expr.is_Add:
            other = self.memo.get(-expr)
            got = (other[0], not other[1]) if other is not None else self._add(expr)
        elif expr.is_Mul:
            got = self._mul(expr)
        elif expr.is_Pow:
            got = self._pow(expr.base, expr.exp)
        elif expr.func in self.sym.unary:
            opcode = self.sym.unary[expr.func]
            if opcode in _ODD:  # f(−x) = −f(x) or f(x)
                reg, neg = self.value(expr.args[0])
                got = (self.op(opcode, reg), neg and _ODD[opcode])
            else:
                got = (self.op(opcode, self.emit(expr.args[0])), False)
        elif expr.func is self.sym.sp.atan2:
            got = (self.op(ATAN2, self.emit(expr.args[0]), self.emit(expr.args[1])), False)
        else:  # _check_supported ran before: only an internal error lands here
            raise ModelError(f"cannot compile {expr!r} ({type(expr).__name__})")
        self.memo[expr] = got
        return got

    def _add(self, expr) -> tuple[int, bool]:
        pos, neg = [], []
        numeric = self.sym.sp.S.Zero
        for term in expr.args:
            if term.is_number:
                numeric += term
                continue
            reg, n = self.value(term)
            (neg if n else pos).append(reg)
        if numeric != 0:
            v = self.real(numeric)
            (neg if v < 0 else pos).append(self.const(abs(v)))
        if not pos:  # −(a + b + ...)
            return self.product_sum(neg), True
        acc = self.product_sum(pos)
        for r in neg:
            acc = self.op(SUB, acc, r)
        return acc, False

    def product_sum(self, regs: list[int]) -> int:
        acc = regs[0]
        for r in regs[1:]:
            acc = self.op(ADD, acc, r)
        return acc

    def _mul(self, expr) -> tuple[int, bool]:
        numeric, num, den = [], [], []
        neg = False
        for f in expr.args:
            if f.is_number:
                numeric.append(f)
                continue
            if f.is_Pow and f.exp.is_Number and f.exp < 0:
                reg, n = self.value(self.sym.sp.Pow(f.base, -f.exp))
                den.append(reg)
            else:
                reg, n = self.value(f)
                num.append(reg)
            neg ^= n
        coeff = self.real(self.sym.sp.Mul(*numeric)) if numeric else 1.0
        if coeff < 0:
            neg = not neg
        if abs(coeff) != 1.0:
            num.insert(0, self.const(abs(coeff)))
        if den:
            out = self.op(DIV, self.product(num) if num else self.const(1.0), self.product(den))
        else:
            out = self.product(num)
        return out, neg

    def _pow(self, base, e) -> tuple[int, bool]:
        if e.is_Integer:
            p = int(e)
            reg, neg = self.value(base)
            if p == -1:
                return self.op(DIV, self.const(1.0), reg), neg
            if p == 2:
                return self.op(MUL, reg, reg), False
            return self.op(POW_INT, reg, p), neg and p % 2 == 1
        if e.is_Rational and e.q == 2:
            s = self.op(SQRT, self.emit(base))
            if e.p == 1:
                return s, False
            if e.p == -1:
                return self.op(DIV, self.const(1.0), s), False
            return self.op(POW_INT, s, int(e.p)), False
        return self.op(POW, self.emit(base), self.emit(e)), False


def _check_supported(expr, where: str) -> None:
    S = _symbolic()
    for node in S.sp.preorder_traversal(expr):
        if node.is_Symbol or node.is_Number or node.is_NumberSymbol or node.is_Add or node.is_Mul:
            continue
        if node.is_Pow:
            continue
        if isinstance(node, S.sp.Function) and node.func in S.supported:
            continue
        if node is S.sp.I:
            raise ModelError(f"{where} contains the imaginary unit I (constraints must be real)")
        name = getattr(node.func, "__name__", None) or str(node.func)
        raise ModelError(
            f"{where} uses the unsupported function or object {name!r} (in {node}); "
            f"supported: {_SUPPORTED_NAMES}"
        )


def compile_constraint(
    phi: Sequence[sympy.Expr], q: Sequence[sympy.Symbol], definitions: Sequence = ()
) -> ConstraintProgram:
    """Compile the constraint ``φ(q) = 0`` into a :class:`ConstraintProgram`.

    Args:
        phi: the ``c`` constraint rows, sympy expressions (or numbers) in the symbols ``q``; a
            sympy ``Matrix`` works too. Supported: ``+ − × ÷``, integer, half-integer and general
            powers, ``sqrt``, ``sin``, ``cos``, ``tan``, ``exp``, ``log``, ``asin``, ``acos``,
            ``atan``, ``atan2``, ``Abs``, ``sign``, and numeric constants (rationals, floats,
            ``pi``, ``E``, constant subexpressions such as ``cos(pi/9)``).
        q: the ``n`` distinct coordinate symbols, in the column order of ``K``. They are treated
            as real (``|x|`` has derivative ``sign(x)``).
        definitions: ordered ``(t_i, f_i)`` pairs (:class:`~loopdyn.constraints.formulas.Formulas`):
            ``phi`` may use the symbols ``t_i``, each standing for its formula ``f_i`` over q and the
            earlier ``t``. They are differentiated by the chain rule without being substituted
            (:func:`_differentiate_definitions`), so the tape grows with the number of definitions,
            not with the size of the expanded formulas. Without definitions the program is the one
            the composed rows always gave.

    Returns:
        The program computing ``φ``, ``K = ∂φ/∂q`` and ``k = −K̇ q̇`` (see the module docstring).

    Raises:
        ModelError: ``phi`` uses a function the tape does not support (the message names it), a
            symbol that is not in ``q``, a non-real or non-finite constant, or ``q`` has
            duplicates or non-symbols.
    """
    S = _symbolic()
    sympy = S.sp
    q = list(q)
    for s in q:
        if not isinstance(s, sympy.Symbol):
            raise ModelError(f"constraint coordinates must be sympy Symbols, got {s!r}")
    if len(set(q)) != len(q):
        raise ModelError("constraint coordinates contain duplicates")
    if isinstance(phi, sympy.MatrixBase):
        phi = list(phi)
    elif isinstance(phi, (sympy.Basic, int, float)):
        phi = [phi]
    try:
        rows = [sympy.sympify(e) for e in phi]
    except (sympy.SympifyError, TypeError) as exc:
        raise ModelError(f"constraint rows must be sympy expressions: {exc}") from None
    n, c = len(q), len(rows)
    qset = set(q)
    defs = [(t, sympy.sympify(f)) for t, f in definitions]
    for i, (t, f) in enumerate(defs):
        if not isinstance(t, sympy.Symbol) or t in qset:
            raise ModelError(f"definition {i}: {t!r} must be a new sympy Symbol")
        _check_supported(f, f"definition {i} ({t})")
        stray = sorted((s for s in f.free_symbols if s not in qset), key=str)
        if stray:
            raise ModelError(f"definition {i} ({t}) uses {', '.join(map(str, stray))}, not defined before it")
        qset.add(t)
    for r, e in enumerate(rows):
        if not isinstance(e, sympy.Expr):
            raise ModelError(f"constraint row {r} is not a scalar expression: {e!r}")
        _check_supported(e, f"constraint row {r}")
        stray = sorted((s for s in e.free_symbols if s not in qset), key=str)
        if stray:
            names = ", ".join(str(s) for s in stray)
            raise ModelError(f"constraint row {r} uses symbol(s) {names} that are not coordinates q")

    if defs:
        ts, fs = [t for t, _ in defs], [f for _, f in defs]
        arrays = cached_arrays(
            key("tape-definitions", ts, fs, rows, q), lambda: _differentiate_definitions(S, defs, rows, q)
        )
    else:
        arrays = cached_arrays(key("tape", rows, q), lambda: _differentiate_and_emit(S, rows, q))
    return ConstraintProgram(
        n=n, c=c, code=arrays["code"], consts=arrays["consts"], n_reg=int(arrays["sizes"][0]),
        phi=arrays["phi"], K=arrays["K"], kbias=arrays["kbias"],
        phi_len=int(arrays["sizes"][1]), K_len=int(arrays["sizes"][2]),
    )  # fmt: skip


def _differentiate_and_emit(S, rows: list, q: list) -> dict[str, np.ndarray]:
    """:func:`compile_constraint`'s work on validated rows in the coordinates ``q``: K and k by sympy,
    common subexpressions, the tape (as the arrays of a :class:`ConstraintProgram`)."""
    sympy = S.sp
    n, c = len(q), len(rows)
    # real internal symbols; |x| and sign(x) with real derivatives
    x = [sympy.Dummy(f"q{j}", real=True) for j in range(n)]
    xd = [sympy.Dummy(f"qd{j}", real=True) for j in range(n)]
    sub = dict(zip(q, x, strict=True))
    rows = [e.xreplace(sub).replace(sympy.Abs, S.RealAbs).replace(sympy.sign, S.RealSign) for e in rows]

    rows = _shared_phases(sympy, rows, x)
    Phi = sympy.Matrix(c, 1, rows)
    K = Phi.jacobian(x) if c and n else sympy.zeros(c, n)
    Kqd = K * sympy.Matrix(n, 1, xd)
    Kdot_qd = Kqd.jacobian(x) * sympy.Matrix(n, 1, xd) if c and n else sympy.zeros(c, 1)
    kb = [-e for e in Kdot_qd]
    for e in list(K) + kb:  # derivatives of supported functions are supported; belt and braces
        _check_supported(e, "a derivative of the constraint")

    outputs = list(Phi) + list(K) + kb
    live = [i for i, e in enumerate(outputs) if e != 0]
    repl, reduced = sympy.cse(
        [outputs[i] for i in live], symbols=sympy.numbered_symbols("_t", cls=sympy.Dummy)
    )
    todo = dict(zip(live, reduced, strict=True))

    # emit φ, then K, then k: each stage adds only the subexpressions it is the first to use
    em = _Emitter(n, {**{s: j for j, s in enumerate(x)}, **{s: n + j for j, s in enumerate(xd)}})
    em.pending = dict(repl)
    regs = np.full(len(outputs), -1, dtype=np.int64)
    n_phi, n_K = c, c + c * n
    stage_len = []
    for lo, hi in ((0, n_phi), (n_phi, n_K), (n_K, len(outputs))):
        for i in range(lo, hi):
            if i in todo:
                regs[i] = em.emit(todo[i])
        stage_len.append(len(em.code))
    return _program_arrays(em, regs, n_phi, n_K, c, n, stage_len)


def _program_arrays(em, regs: np.ndarray, n_phi: int, n_K: int, c: int, n: int, stage_len: list) -> dict:
    """The arrays of a compiled constraint program: the emitter's code and constants, the output
    registers of φ, K (c × n) and k, and the sizes (registers, φ prefix, K prefix)."""
    return {
        "code": np.array(em.code, dtype=np.int64).reshape(-1, 4),
        "consts": np.array(em.consts, dtype=np.float64),
        "phi": regs[:n_phi],
        "K": regs[n_phi:n_K].reshape(c, n),
        "kbias": regs[n_K:],
        "sizes": np.array([em.n_reg, stage_len[0], stage_len[1]], dtype=np.int64),
    }


def _differentiate_definitions(S, defs: list, rows: list, q: list) -> dict[str, np.ndarray]:
    """:func:`compile_constraint`'s work when the rows use definitions ``t_i = f_i``.

    φ is flattened into the tape as usual, each definition's formula where it is first used. K and k
    are then derived from φ's part of the tape itself, instruction by instruction, in forward mode
    (:class:`_TapeDerivatives`): no sympy differentiation, no expansion of the definitions, so the
    tape stays linear in the size of the definitions (for long loops, in the loop's length)."""
    import sys

    sympy = S.sp
    n, c = len(q), len(rows)
    x = [sympy.Dummy(f"q{j}") for j in range(n)]
    sub = dict(zip(q, x, strict=True))
    sub.update({t: sympy.Dummy(str(t)) for t, _ in defs})

    def real(e):
        return e.xreplace(sub).replace(sympy.Abs, S.RealAbs).replace(sympy.sign, S.RealSign)

    em = _Emitter(n, {s: j for j, s in enumerate(x)})
    em.pending = {sub[t]: real(f) for t, f in defs}
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20000))  # a definition's formula refers to the previous one
    try:
        phi = [em.emit(e) if e != 0 else -1 for e in (real(r) for r in rows)]
    finally:
        sys.setrecursionlimit(limit)
    phi_len = len(em.code)
    try:
        D = _TapeDerivatives(em, n, phi_len)
        K = D.jacobian(phi)
        K_len = len(em.code)
        kbias = D.bias(phi)
    except _NoRule:
        return _differentiate_definitions_sympy(S, defs, rows, q)
    return {
        "code": np.array(em.code, dtype=np.int64).reshape(-1, 4),
        "consts": np.array(em.consts, dtype=np.float64),
        "phi": np.array(phi, dtype=np.int64),
        "K": np.array(K, dtype=np.int64).reshape(c, n),
        "kbias": np.array(kbias, dtype=np.int64),
        "sizes": np.array([em.n_reg, phi_len, K_len], dtype=np.int64),
    }


class _NoRule(Exception):
    """An instruction :class:`_TapeDerivatives` has no rule for."""


_ONE = -2  # the derivative value 1 (a seed), kept symbolic so that products by it cost nothing


class _TapeDerivatives:
    """Forward-mode differentiation of the first ``stop`` instructions of an emitter's tape, emitting
    the derivative instructions into the same tape (with its value numbering and constant pool).

    A derivative value is ``None`` (a structural zero), :data:`_ONE` or a register.

    * :meth:`jacobian`: every register's gradient ``{j: ∂r/∂q_j}`` (its nonzero entries only), by the
      chain rule per instruction (``∂(ab) = a ∂b + b ∂a``, ``∂(a/b) = (∂a − (a/b) ∂b)/b``,
      ``∂f(a) = f′(a) ∂a``); K's rows are the gradients of φ's registers.
    * :meth:`bias`: along ``q(τ) = q + τ q̇`` (so ``q̈ = 0``) every register's first and second rates
      ``ṙ``, ``r̈`` (``(ab)¨ = a b̈ + 2 ȧ ḃ + ä b``, ``(a/b)¨ = (ä − 2 (a/b)˙ ḃ − (a/b) b̈)/b``,
      ``f(a)¨ = f′(a) ä + f″(a) ȧ²``); ``k = −K̇q̇ = −φ̈`` (``(K q̇)˙ = K̇q̇ + K q̈``).
    """

    def __init__(self, em: _Emitter, n: int, stop: int):
        self.em, self.n = em, n
        self.prefix = list(em.code[:stop])

    # -- arithmetic on derivative values
    def _reg(self, x):
        return self.em.const(1.0) if x == _ONE else x

    def mul(self, x, y):
        if x is None or y is None:
            return None
        if x == _ONE:
            return y
        if y == _ONE:
            return x
        return self.em.op(MUL, x, y)

    def add(self, x, y):
        if x is None:
            return y
        if y is None:
            return x
        return self.em.op(ADD, self._reg(x), self._reg(y))

    def sub(self, x, y):
        if y is None:
            return x
        if x is None:
            return self.neg(y)
        return self.em.op(SUB, self._reg(x), self._reg(y))

    def neg(self, x):
        return None if x is None else self.em.op(NEG, self._reg(x))

    def div(self, x, b):
        return None if x is None else self.em.op(DIV, self._reg(x), b)

    # -- f′ and f″ of the unary operations, as registers (f″ only when ``second``)
    def coefficients(self, op, d, a, b, second: bool):
        em = self.em
        if op == SIN:
            return em.op(COS, a), (em.op(NEG, d) if second else None)
        if op == COS:
            return em.op(NEG, em.op(SIN, a)), (em.op(NEG, d) if second else None)
        if op == POW_INT:
            e = int(b)
            if e == 0:
                return None, None
            f1 = a if e == 2 else (_ONE if e == 1 else em.op(POW_INT, a, e - 1))
            f1 = self.mul(em.const(float(e)), f1) if e != 1 else _ONE
            if not second or e == 1:
                return f1, None
            if e == 2:
                return f1, em.const(2.0)
            return f1, self.mul(em.const(float(e * (e - 1))), a if e == 3 else em.op(POW_INT, a, e - 2))
        if op == SQRT:  # (√a)′ = 1/(2√a), (√a)″ = −1/(4 a √a)
            f1 = em.op(DIV, em.const(0.5), d)
            return f1, (em.op(NEG, em.op(DIV, f1, em.op(MUL, em.const(2.0), a))) if second else None)
        if op == EXP:
            return d, d
        if op == LOG:
            f1 = em.op(DIV, em.const(1.0), a)
            return f1, (em.op(NEG, em.op(MUL, f1, f1)) if second else None)
        if op == TAN:  # 1 + t², 2 t (1 + t²)
            f1 = em.op(ADD, em.const(1.0), em.op(MUL, d, d))
            return f1, (em.op(MUL, em.const(2.0), em.op(MUL, d, f1)) if second else None)
        if op == ATAN:  # 1/(1 + a²), −2a/(1 + a²)²
            f1 = em.op(DIV, em.const(1.0), em.op(ADD, em.const(1.0), em.op(MUL, a, a)))
            if not second:
                return f1, None
            return f1, em.op(NEG, em.op(MUL, em.const(2.0), em.op(MUL, a, em.op(MUL, f1, f1))))
        if op == ABS:
            return em.op(SIGN, a), None
        if op == SIGN:
            return None, None
        raise _NoRule(_OPNAMES[op])

    # -- K
    def jacobian(self, phi: list) -> list:
        grad: dict = {j: {j: _ONE} for j in range(self.n)}
        for op, d, a, b in self.prefix:
            if op == CONST:
                continue
            ga = grad.get(a, {})
            gb = grad.get(b, {}) if op in _BINARY else {}
            if op in (ADD, SUB):
                g = dict(ga)
                for j, v in gb.items():
                    g[j] = self.add(g.get(j), v) if op == ADD else self.sub(g.get(j), v)
            elif op == NEG:
                g = {j: self.neg(v) for j, v in ga.items()}
            elif op == COPY:
                g = dict(ga)
            elif op == MUL:
                g = {j: self.mul(b, v) for j, v in ga.items()}
                for j, v in gb.items():
                    g[j] = self.add(g.get(j), self.mul(a, v))
            elif op == DIV:
                g = dict(ga)
                for j, v in gb.items():
                    g[j] = self.sub(g.get(j), self.mul(d, v))
                g = {j: self.div(v, b) for j, v in g.items()}
            elif op in _BINARY:  # ATAN2, POW
                raise _NoRule(_OPNAMES[op])
            else:
                if not ga:
                    continue
                f1, _ = self.coefficients(op, d, a, b, second=False)
                g = {j: self.mul(f1, v) for j, v in ga.items()}
            g = {j: v for j, v in g.items() if v is not None}
            if g:
                grad[d] = g
        K = []
        for r in phi:
            g = grad.get(r, {}) if r >= 0 else {}
            K.extend(self._reg(g[j]) if j in g else -1 for j in range(self.n))
        return K

    # -- k
    def bias(self, phi: list) -> list:
        n = self.n
        dot: dict = {j: n + j for j in range(n)}  # ṙ (q̇_j for q_j)
        acc: dict = {}  # r̈ (0 for q_j)
        for op, d, a, b in self.prefix:
            if op == CONST:
                continue
            ad, aa = dot.get(a), acc.get(a)
            bd, ba = (dot.get(b), acc.get(b)) if op in _BINARY else (None, None)
            if op in (ADD, SUB):
                f = self.add if op == ADD else self.sub
                rd, ra = f(ad, bd), f(aa, ba)
            elif op == NEG:
                rd, ra = self.neg(ad), self.neg(aa)
            elif op == COPY:
                rd, ra = ad, aa
            elif op == MUL:
                rd = self.add(self.mul(a, bd), self.mul(ad, b))
                cross = self.mul(ad, bd)
                ra = self.add(self.add(self.mul(a, ba), self.mul(aa, b)), self.add(cross, cross))
            elif op == DIV:
                rd = self.div(self.sub(ad, self.mul(d, bd)), b)
                bd_rd = self.mul(rd, bd)
                ra = self.div(self.sub(self.sub(aa, self.add(bd_rd, bd_rd)), self.mul(d, ba)), b)
            elif op in _BINARY:
                raise _NoRule(_OPNAMES[op])
            else:
                if ad is None:
                    continue
                f1, f2 = self.coefficients(op, d, a, b, second=True)
                rd = self.mul(f1, ad)
                ra = self.add(self.mul(f1, aa), self.mul(f2, self.mul(ad, ad)))
            if rd is not None:
                dot[d] = rd
            if ra is not None:
                acc[d] = ra
        return [self.em.op(NEG, self._reg(acc[r])) if r >= 0 and acc.get(r) is not None else -1 for r in phi]


def _differentiate_definitions_sympy(S, defs: list, rows: list, q: list) -> dict[str, np.ndarray]:
    """:func:`_differentiate_definitions` for rows whose tape uses an operation without a rule in
    :class:`_TapeDerivatives` (``asin``, ``acos``, ``atan2``, a general power): forward mode over
    the definitions by sympy (slower to build: sympy differentiates every definition).

    For every symbol ``s`` (a coordinate or a ``t_i``) three things are known, as small formulas over
    earlier symbols, each a new symbol of its own unless it is a number or a symbol already:

    * its gradient ``∂s/∂q_j`` for the ``j`` it depends on (structural zeros are absent):
      ``∂t/∂q_j = Σ_a ∂f/∂a · ∂a/∂q_j`` over the arguments ``a`` of ``f`` (chain rule);
    * its rate along ``q(τ) = q + τ q̇``: ``ṫ = Σ_a ∂f/∂a · ȧ`` (``q̇_j`` for a coordinate);
    * its second rate along the same line (``q̈ = 0``):
      ``ẗ = Σ_a ∂f/∂a · ä + Σ_{a,b} ∂²f/∂a∂b · ȧ ḃ`` (0 for a coordinate).

    A row ``φ_r = g(a…)`` then has ``K_rj = Σ_a ∂g/∂a · ∂a/∂q_j`` and ``k_r = −K̇q̇ = −φ̈_r`` (since
    ``(K q̇)˙ = K̇ q̇ + K q̈`` and ``q̈ = 0``), the same sums. Every formula is as small as a definition,
    and there are at most ``(n + 2)`` per definition: the tape grows linearly with the loop. The
    formulas are flattened into the tape in the usual stage order (φ, then K, then k); a symbol's
    formula is emitted where it is first used (so φ's prefix reads q only)."""
    import sys

    sympy = S.sp
    n, c = len(q), len(rows)
    # symbols without assumptions: sympy's assumption queries on real symbols dominate otherwise
    x = [sympy.Dummy(f"q{j}") for j in range(n)]
    xd = [sympy.Dummy(f"qd{j}") for j in range(n)]
    sub = dict(zip(q, x, strict=True))
    sub.update({t: sympy.Dummy(str(t)) for t, _ in defs})

    def real(e):
        return e.xreplace(sub).replace(sympy.Abs, S.RealAbs).replace(sympy.sign, S.RealSign)

    pending: dict = {}  # symbol → formula, emitted on first use
    order: dict = {s: i for i, s in enumerate(x)}  # symbol → position (deterministic argument order)
    grad: dict = {s: {j: sympy.S.One} for j, s in enumerate(x)}
    vel: dict = {s: xd[j] for j, s in enumerate(x)}
    acc: dict = {s: sympy.S.Zero for s in x}
    counter = [0]

    def name(e):
        if e.is_number or e.is_Symbol:
            return e
        s = sympy.Dummy(f"d{counter[0]}")
        counter[0] += 1
        pending[s] = e
        return s

    def chain(f):
        """(∂f/∂q_j by j, ḟ, f̈) of a formula over known symbols."""
        args = sorted((a for a in f.free_symbols if a in order), key=order.__getitem__)
        partial = {a: sympy.diff(f, a) for a in args}
        g: dict = {}
        for a in args:
            for j, ga in grad[a].items():
                g[j] = g.get(j, 0) + partial[a] * ga
        rate = sympy.Add(*[partial[a] * vel[a] for a in args])
        second = [partial[a] * acc[a] for a in args]
        for ia, a in enumerate(args):
            for b in args[ia:]:
                h = sympy.diff(partial[a], b)
                if h != 0:
                    second.append((1 if a == b else 2) * h * vel[a] * vel[b])
        return g, rate, sympy.Add(*second)

    for t, f in defs:
        t, f = sub[t], real(f)
        pending[t] = f
        g, rate, second = chain(f)
        grad[t] = {j: name(e) for j, e in sorted(g.items()) if e != 0}
        vel[t], acc[t] = name(rate), name(second)
        order[t] = len(order)

    rows = [real(e) for e in rows]
    Phi, K, kb = list(rows), [sympy.S.Zero] * (c * n), []
    for r, e in enumerate(rows):
        g, _, second = chain(e)
        for j, v in g.items():
            K[r * n + j] = v
        kb.append(-second)

    outputs = Phi + K + kb
    em = _Emitter(n, {**{s: j for j, s in enumerate(x)}, **{s: n + j for j, s in enumerate(xd)}})
    em.pending = pending
    regs = np.full(len(outputs), -1, dtype=np.int64)
    n_phi, n_K = c, c + c * n
    stage_len = []
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20000))  # a definition's formula refers to the previous one
    try:
        for lo, hi in ((0, n_phi), (n_phi, n_K), (n_K, len(outputs))):
            for i in range(lo, hi):
                if outputs[i] != 0:
                    regs[i] = em.emit(outputs[i])
            stage_len.append(len(em.code))
    finally:
        sys.setrecursionlimit(limit)
    return _program_arrays(em, regs, n_phi, n_K, c, n, stage_len)


def _shared_phases(sympy, rows: list, x: list) -> list:
    """``sin(A + c)`` and ``cos(A + c)`` with a numeric phase ``c`` rewritten through ``sin A`` and
    ``cos A`` (``sin A cos c + cos A sin c``, ``cos A cos c − sin A sin c``; ``cos c``, ``sin c``
    constants), for every ``A`` that appears with two or more phases (zero included): the rows, their
    K and their k then need one ``sin``/``cos`` pair per ``A`` instead of one per phase. Exact;
    equal to the unrewritten rows to rounding. Tello's knee-ankle differential has ``d + c₁``,
    ``d + c₂``, ``d + q_a + c₃``, ``q_a + c₄``, ``q_a + c₅``: five pairs become three."""
    trig = (sympy.sin, sympy.cos)
    phases: dict = {}  # A → the phases it appears with
    for e in rows:
        for t in e.atoms(*trig):
            c, A = t.args[0].as_independent(*x, as_Add=True)
            if A != 0:
                phases.setdefault(A, set()).add(c)
    shared = {A for A, cs in phases.items() if len(cs) > 1}
    if not shared:
        return rows

    def split(t):
        c, A = t.args[0].as_independent(*x, as_Add=True)
        if c == 0 or A not in shared:
            return t
        sA, cA = sympy.sin(A), sympy.cos(A)
        sc, cc = sympy.sin(c).evalf(40), sympy.cos(c).evalf(40)  # numbers: no radicals for CSE to split
        return sA * cc + cA * sc if t.func is sympy.sin else cA * cc - sA * sc

    return [e.replace(lambda t: isinstance(t, trig), split) for e in rows]


# ---------------------------------------------------------------------------------------------
# interpreter


@inlined
def _run(code, consts, start, stop, cbase, regs):
    """Run instructions ``start .. stop−1`` on ``regs`` (constants indexed from ``cbase``).

    The cheap arithmetic opcodes come first, in order of frequency; the library calls (whose own
    cost dwarfs one more comparison) sit in a nested chain. Indices are cast to unsigned, which
    spares Numba's negative-index wraparound on every access (tapes are validated at build time).
    """
    for i in range(start, stop):
        op = code[i, 0]
        d = uint64(code[i, 1])
        a = uint64(code[i, 2])
        b = uint64(code[i, 3])
        if op == MUL:
            regs[d] = regs[a] * regs[b]
        elif op == ADD:
            regs[d] = regs[a] + regs[b]
        elif op == SUB:
            regs[d] = regs[a] - regs[b]
        elif op == CONST:
            regs[d] = consts[uint64(cbase + code[i, 2])]
        elif op == NEG:
            regs[d] = -regs[a]
        elif op == DIV:
            regs[d] = regs[a] / regs[b]
        else:
            x = regs[a]
            if op == SIN:
                x = math.sin(x)
            elif op == COS:
                x = math.cos(x)
            elif op == POW_INT:
                e = code[i, 3]
                m = -e if e < 0 else e
                r = 1.0
                while m > 0:  # binary exponentiation
                    if m & 1:
                        r *= x
                    x *= x
                    m >>= 1
                x = 1.0 / r if e < 0 else r
            elif op == SQRT:
                x = math.sqrt(x)
            elif op == TAN:
                x = math.tan(x)
            elif op == EXP:
                x = math.exp(x)
            elif op == LOG:
                x = math.log(x)
            elif op == ATAN2:
                x = math.atan2(x, regs[b])
            elif op == POW:
                x = x ** regs[b]
            elif op == ABS:
                x = abs(x)
            elif op == SIGN:
                x = 1.0 if x > 0.0 else (-1.0 if x < 0.0 else x)
            elif op == ASIN:
                x = math.asin(x)
            elif op == ACOS:
                x = math.acos(x)
            elif op == ATAN:
                x = math.atan(x)
            # COPY: x = regs[a] as is
            regs[d] = x


@njit(cache=True)
def evaluate(code, consts, table, outputs, p, q, qd, regs, phi_out, K_out, k_out):
    """Run program ``p`` of a :class:`PackedPrograms`: ``φ``, ``K`` and ``k = −K̇ q̇`` at ``(q, q̇)``.

    Args:
        code, consts, table, outputs: the arrays of a :class:`PackedPrograms`.
        p: the program index (row of ``table``).
        q, qd: ``float64`` 1-D arrays of (at least) ``n`` entries; only the first ``n`` are read.
        regs: ``float64`` 1-D scratch of at least ``max_reg`` entries (overwritten).
        phi_out: receives ``φ`` in ``phi_out[:c]``.
        K_out: receives ``K`` row-major in ``K_out[:c*n]``.
        k_out: receives ``k`` in ``k_out[:c]``.

    Allocates nothing and checks nothing (the tape was validated when it was built). The tape runs as
    its φ, K prefix (:func:`evaluate_phi_K`) and then the rest (:func:`evaluate_k`).
    """
    evaluate_phi_K(code, consts, table, outputs, p, q, regs, phi_out, K_out)
    evaluate_k(code, consts, table, outputs, p, qd, regs, k_out)


@inlined
def evaluate_phi_K(code, consts, table, outputs, p, q, regs, phi_out, K_out):
    """Run the prefix of program ``p`` that computes ``φ(q)`` and ``K(q)`` (``table[p, T_K_LEN]``
    instructions; q̇ is not read) into ``phi_out[:c]`` and ``K_out[:c*n]``. The registers keep the
    intermediate results for :func:`evaluate_k`. Arguments as in :func:`evaluate`.

    When the table holds the address of the program's native φ, K function
    (:mod:`loopdyn.constraints.native`), that function runs instead of the interpreter: the same
    operations in the same order, with the same results. Inlined, so that the native path costs the
    caller one indirect call (a call to a compiled function with nine array arguments cost more than
    Tello's whole native program); the interpreter is a function of its own."""
    native = table[p, T_NATIVE_PHI_K]
    if native != 0:
        call_native(native, q, regs, phi_out, K_out, consts[table[p, T_CONST_START] :])
    else:
        interpret_phi_K(code, consts, table, outputs, p, q, regs, phi_out, K_out)


@inlined
def evaluate_k(code, consts, table, outputs, p, qd, regs, k_out):
    """Run the rest of program ``p`` — ``k = −K̇ q̇`` at q̇ = ``qd`` — into ``k_out[:c]``, on the
    registers left by :func:`evaluate_phi_K` at the same q (no other program run in between): the
    tape's φ and K instructions are not repeated. The program's native k function runs instead of
    the interpreter when the table holds its address (:func:`evaluate_phi_K` then ran natively too:
    the two columns are set together). Inlined, as :func:`evaluate_phi_K`."""
    native = table[p, T_NATIVE_K]
    if native != 0:
        call_native(native, qd, regs, k_out, k_out, consts[table[p, T_CONST_START] :])
    else:
        interpret_k(code, consts, table, outputs, p, qd, regs, k_out)


@njit(cache=True)
def interpret_phi_K(code, consts, table, outputs, p, q, regs, phi_out, K_out):
    """The interpreter's :func:`evaluate_phi_K`."""
    start = table[p, T_CODE_START]
    n = table[p, T_N]
    c = table[p, T_C]
    o = table[p, T_OUT_START]
    for j in range(n):
        regs[j] = q[j]
    _run(code, consts, start, start + table[p, T_K_LEN], table[p, T_CONST_START], regs)
    for r in range(c):
        i = outputs[o + r]
        phi_out[r] = regs[i] if i >= 0 else 0.0
    o += c
    for r in range(c * n):
        i = outputs[o + r]
        K_out[r] = regs[i] if i >= 0 else 0.0


@njit(cache=True)
def interpret_k(code, consts, table, outputs, p, qd, regs, k_out):
    """The interpreter's :func:`evaluate_k`."""
    start = table[p, T_CODE_START]
    n = table[p, T_N]
    c = table[p, T_C]
    for j in range(n):
        regs[n + j] = qd[j]
    _run(code, consts, start + table[p, T_K_LEN], start + table[p, T_CODE_LEN], table[p, T_CONST_START], regs)
    o = table[p, T_OUT_START] + c + c * n
    for r in range(c):
        i = outputs[o + r]
        k_out[r] = regs[i] if i >= 0 else 0.0


@intrinsic
def call_native(typingctx, address, x, regs, out1, out2, kappa):
    """``call_native(address, x, regs, out1, out2, kappa)`` calls the native program function at
    ``address`` (an ``int64`` of :func:`loopdyn.constraints.native.native_addresses`, signature
    ``void(double*, double*, double*, double*, double*)``) with the data pointers of five ``float64``
    1-D arrays. The caller guarantees that the address is a program this process has loaded and that
    the arrays hold what the program reads and writes."""
    arrays = (x, regs, out1, out2, kappa)
    if not isinstance(address, types.Integer) or not all(
        isinstance(a, types.Array) and a.ndim == 1 and a.dtype == types.float64 for a in arrays
    ):
        return None

    def codegen(context, builder, signature, args):
        dbl = ir.DoubleType().as_pointer()
        fn = builder.inttoptr(args[0], ir.FunctionType(ir.VoidType(), [dbl] * 5).as_pointer())
        ptrs = [
            context.make_array(ty)(context, builder, value=v).data
            for ty, v in zip(signature.args[1:], args[1:], strict=True)
        ]
        builder.call(fn, ptrs)
        return context.get_dummy_value()

    return types.void(address, x, regs, out1, out2, kappa), codegen


@njit(cache=True)
def evaluate_phi(code, consts, table, outputs, p, q, regs, phi_out):
    """Run only the φ part of program ``p``: ``phi_out[:c] = φ(q)`` (for Newton projection).

    The compiler puts the instructions that φ needs first on the tape, and ``table[p, T_PHI_LEN]`` is their
    count, so this runs that prefix only (a quarter to a half of the tape in practice). Arguments as
    in :func:`evaluate` (``q̇`` is not read: φ does not depend on it).
    """
    start = table[p, T_CODE_START]
    n = table[p, T_N]
    c = table[p, T_C]
    o = table[p, T_OUT_START]
    for j in range(n):
        regs[j] = q[j]
    _run(code, consts, start, start + table[p, T_PHI_LEN], table[p, T_CONST_START], regs)
    for r in range(c):
        i = outputs[o + r]
        phi_out[r] = regs[i] if i >= 0 else 0.0
