"""Constraint formulas written through intermediate symbols: ordered definitions, then rows.

A loop closure φ(q) composed as one sympy expression per row grows about 3× per joint when the joint
axes are general (each 3×3 rotation multiplies every entry by a sum of three products): a point loop
over 9 such joints is ~330 000 operations, and its derivatives, common subexpressions and tape grow
with it. :class:`Formulas` keeps the formulas linear in the loop length instead: a frame (R, p) whose
entries have grown past a size threshold becomes fresh symbols ``t_i``, each with its defining
formula over q and earlier symbols, and the rows are written over q and those symbols.

Everything downstream differentiates through the definitions by the chain rule, never expanding them:

* :mod:`loopdyn.constraints.tape` (:func:`~loopdyn.constraints.tape.compile_constraint` with
  ``definitions``): forward mode, one new symbol per nonzero ``∂t_i/∂q_j``, ``ṫ_i``, ``ẗ_i``;
* :class:`Jet3` here: values with their first three derivatives in every coordinate, evaluated
  definition by definition (the second and third derivatives of the rows that
  :mod:`loopdyn.derivatives` needs, and the baselines' K and k).

A loop that stays below the threshold has no definitions: its rows are the composed expressions they
always were (same tapes, same symbolic-cache keys).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

__all__ = ["Definitions", "Formulas", "Jet3", "jet_function"]

#: a loop's frames are composed through symbols once ``n ×`` the size of the rows they make would
#: exceed this (:func:`loopdyn.constraints.geometry.loop_frames`: operations counted before
#: multiplying, an upper bound of sympy's ``count_ops``, rotations weighted by how the rows multiply
#: them; n the loop's joints, as K has n columns and k sums n² second derivatives). Today's loops stay
#: below it — Cassie's SDF 21 690, its v2 16 530, the delta robot 13 872, the five-bar 7092, Cassie's
#: prismatic loops 1938, the four-bar 1836, the RSSR linkage 375 — so their formulas, tapes and
#: symbolic-cache keys are unchanged (tested); general axes pass it after about 5 joints.
SIZE_THRESHOLD = 24000


@dataclass
class Definitions:
    """The ordered definitions ``t_i = f_i(q, t_0 … t_{i−1})`` of one cluster, built while its
    formulas are written (:func:`loopdyn.constraints.geometry.frame_in_ancestor`). A formula defined
    twice gets the same symbol (both sides of a loop and its branch rows share their frames)."""

    prefix: str = "_t"
    items: list = field(default_factory=list)  # [(symbol, formula)]
    frames: dict = field(default_factory=dict)  # loop joint name → its frames (geometry.loop_frames)
    _by_formula: dict = field(default_factory=dict)

    def define(self, formula):
        """A symbol standing for ``formula`` (the formula itself if it is a number or a symbol)."""
        import sympy as sp

        formula = sp.sympify(formula)
        if formula.is_number or formula.is_Symbol:
            return formula
        sym = self._by_formula.get(formula)
        if sym is None:
            sym = sp.Symbol(f"{self.prefix}{len(self.items)}", real=True)
            self.items.append((sym, formula))
            self._by_formula[formula] = sym
        return sym

    def used_by(self, rows) -> tuple:
        """The definitions ``rows`` need, directly or through other definitions, in order."""
        index = {s: i for i, (s, _) in enumerate(self.items)}
        need: set = set()
        stack = [s for e in rows for s in getattr(e, "free_symbols", ()) if s in index]
        while stack:
            s = stack.pop()
            if s in need:
                continue
            need.add(s)
            stack.extend(x for x in self.items[index[s]][1].free_symbols if x in index)
        return tuple(item for item in self.items if item[0] in need)


@dataclass(frozen=True)
class Formulas:
    """Constraint rows over the coordinates ``q`` and the symbols of ``definitions``.

    Attributes:
        definitions: ``((t_0, f_0), (t_1, f_1), …)``; ``f_i`` uses q and ``t_0 … t_{i−1}`` only.
        rows: the rows, sympy expressions over q and the ``t_i``.
        q: the coordinate symbols.
    """

    definitions: tuple
    rows: tuple
    q: tuple

    def expanded(self) -> list:
        """The rows with every definition substituted (exponentially large for long loops: for tests
        and small formulas only)."""
        sub = {}
        for s, f in self.definitions:
            sub[s] = f.xreplace(sub)
        return [e.xreplace(sub) for e in self.rows]


# ---------------------------------------------------------------------------------------------
# third-order jets


def _sym3(a: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``a_i B_jk + a_j B_ik + a_k B_ij``."""
    return (
        a[:, None, None] * B[None, :, :] + a[None, :, None] * B[:, None, :] + a[None, None, :] * B[:, :, None]
    )


class Jet3:
    """A value with its gradient, Hessian and third-derivative tensor in n coordinates (dense, exact:
    the product rule and Faà di Bruno's formula to third order, no truncation error)."""

    __slots__ = ("f", "g", "H", "T")
    __array_priority__ = 100

    def __init__(self, f: float, g: np.ndarray, H: np.ndarray, T: np.ndarray):
        self.f, self.g, self.H, self.T = f, g, H, T

    @classmethod
    def variable(cls, value: float, j: int, n: int) -> Jet3:
        g = np.zeros(n)
        g[j] = 1.0
        return cls(float(value), g, np.zeros((n, n)), np.zeros((n, n, n)))

    def _lift(self, x) -> Jet3:
        if isinstance(x, Jet3):
            return x
        n = self.g.shape[0]
        return Jet3(float(x), np.zeros(n), np.zeros((n, n)), np.zeros((n, n, n)))

    def __add__(self, o):
        if not isinstance(o, Jet3):
            return Jet3(self.f + float(o), self.g, self.H, self.T)
        return Jet3(self.f + o.f, self.g + o.g, self.H + o.H, self.T + o.T)

    __radd__ = __add__

    def __neg__(self):
        return Jet3(-self.f, -self.g, -self.H, -self.T)

    def __sub__(self, o):
        return self + (-o)

    def __rsub__(self, o):
        return (-self) + o

    def __mul__(self, o):
        if not isinstance(o, Jet3):
            c = float(o)
            return Jet3(self.f * c, self.g * c, self.H * c, self.T * c)
        a, b = self, o
        gg = np.outer(a.g, b.g)
        return Jet3(
            a.f * b.f,
            a.f * b.g + b.f * a.g,
            a.f * b.H + b.f * a.H + gg + gg.T,
            a.f * b.T + b.f * a.T + _sym3(a.g, b.H) + _sym3(b.g, a.H),
        )

    __rmul__ = __mul__

    def compose(self, d0: float, d1: float, d2: float, d3: float) -> Jet3:
        """``h(self)`` for a scalar function h with h, h′, h″, h‴ = d0 … d3 at ``self.f``:
        ``∂³h = h‴ g⊗g⊗g + h″ sym(g⊗H) + h′ T`` (Faà di Bruno)."""
        g, H = self.g, self.H
        gg = np.outer(g, g)
        return Jet3(
            d0,
            d1 * g,
            d1 * H + d2 * gg,
            d1 * self.T + d2 * _sym3(g, H) + d3 * gg[:, :, None] * g[None, None, :],
        )

    def __pow__(self, e):
        if isinstance(e, Jet3):
            return jet_exp(e * jet_log(self))
        e = float(e)
        x = self.f
        if e == int(e) and e >= 0:
            k = int(e)
            if k == 0:
                return self._lift(1.0)
            d = [x**k, k * x ** (k - 1) if k >= 1 else 0.0,
                 k * (k - 1) * x ** (k - 2) if k >= 2 else 0.0,
                 k * (k - 1) * (k - 2) * x ** (k - 3) if k >= 3 else 0.0]  # fmt: skip
            return self.compose(*d)
        d1, d2, d3 = e * x ** (e - 1), e * (e - 1) * x ** (e - 2), e * (e - 1) * (e - 2) * x ** (e - 3)
        return self.compose(x**e, d1, d2, d3)

    def __rpow__(self, base):
        return jet_exp(self * math.log(float(base)))

    def __truediv__(self, o):
        return self * (o**-1.0 if isinstance(o, Jet3) else 1.0 / float(o))

    def __rtruediv__(self, o):
        return (self**-1.0) * o


def jet_sin(x):
    if not isinstance(x, Jet3):
        return math.sin(x)
    s, c = math.sin(x.f), math.cos(x.f)
    return x.compose(s, c, -s, -c)


def jet_cos(x):
    if not isinstance(x, Jet3):
        return math.cos(x)
    s, c = math.sin(x.f), math.cos(x.f)
    return x.compose(c, -s, -c, s)


def jet_exp(x):
    if not isinstance(x, Jet3):
        return math.exp(x)
    e = math.exp(x.f)
    return x.compose(e, e, e, e)


def jet_log(x):
    if not isinstance(x, Jet3):
        return math.log(x)
    return x.compose(math.log(x.f), 1.0 / x.f, -1.0 / x.f**2, 2.0 / x.f**3)


def jet_sqrt(x):
    if not isinstance(x, Jet3):
        return math.sqrt(x)
    return x**0.5


def jet_tan(x):
    if not isinstance(x, Jet3):
        return math.tan(x)
    t = math.tan(x.f)
    s2 = 1.0 + t * t  # tan′ = 1 + tan², tan″ = 2 tan tan′, tan‴ = 2 tan′² + 2 tan tan″
    return x.compose(t, s2, 2 * t * s2, 2 * s2 * s2 + 4 * t * t * s2)


_JET_MODULE = {
    "sin": jet_sin, "cos": jet_cos, "exp": jet_exp, "log": jet_log, "sqrt": jet_sqrt, "tan": jet_tan
}  # fmt: skip


def jet_function(formulas: Formulas):
    """A function of q (numbers) returning the rows as :class:`Jet3` values (``φ``, ``∂φ``, ``∂²φ``,
    ``∂³φ`` of each row), evaluated definition by definition. Rows may use ``+ − × ÷``, powers,
    ``sin``, ``cos``, ``tan``, ``exp``, ``log``, ``sqrt`` (the functions loop closures are written
    with); another function raises :class:`~loopdyn.errors.ModelError` here."""
    import sympy as sp

    from ..errors import ModelError

    allowed = {sp.sin, sp.cos, sp.tan, sp.exp, sp.log}
    for e in [f for _, f in formulas.definitions] + list(formulas.rows):
        for node in sp.preorder_traversal(e):
            if isinstance(node, sp.Function) and node.func not in allowed:
                raise ModelError(f"constraint formula uses {node.func}, which Jet3 does not support")
    q = list(formulas.q)
    names = q + [s for s, _ in formulas.definitions]
    steps = []
    for i, (_, f) in enumerate(formulas.definitions):
        steps.append(sp.lambdify(names[: len(q) + i], f, modules=[_JET_MODULE, "math"]))
    rows_f = [sp.lambdify(names, e, modules=[_JET_MODULE, "math"]) for e in formulas.rows]
    n = len(q)

    def evaluate(qv) -> list:
        vals = [Jet3.variable(qv[j], j, n) for j in range(n)]
        for step in steps:
            vals.append(step(*vals))
        out = []
        for fr in rows_f:
            r = fr(*vals)
            out.append(r if isinstance(r, Jet3) else vals[0]._lift(r) if vals else r)
        return out

    return evaluate
