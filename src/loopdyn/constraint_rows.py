"""Link constraints (contacts, welds on a link) and their rows: :class:`Constraint`, :func:`prepare`
and the constraint Jacobian.

A constraint acts on the spatial velocity ``[linear; angular]`` of a *constraint frame* in its own
axes (Pinocchio's LOCAL convention): ``"3d"`` keeps the linear rows (a point contact), ``"6d"`` all six
(a weld), and a custom ``m_e × 6`` matrix ``K_e`` multiplies that 6-vector.

The kernels take the rows in one flat form, :class:`ConstraintRows`, built once per (model state,
constraint list) by :func:`prepare` and cached.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .algorithms import cluster_delassus
from .algorithms import kinematics as tree_kinematics
from .algorithms.call import CLUSTER_FIRST, CONFIGURATION, KernelArgs, as_float_vector, run
from .algorithms.validation import check_data
from .errors import InputError, UnknownNameError
from .model.model import as_placement
from .spatial.inertia import skew

__all__ = ["Constraint", "ConstraintRows", "constraint_jacobian", "jacobian", "prepare"]

_KINDS = ("6d", "3d")


def _as_kind(kind) -> str | tuple[tuple[float, ...], ...]:
    if isinstance(kind, str):
        k = kind.lower()
        if k not in _KINDS:
            raise InputError(f"constraint kind must be '6d', '3d' or an (m_e × 6) array, got {kind!r}")
        return k
    try:
        K = np.asarray(kind, dtype=float)
    except (TypeError, ValueError):
        raise InputError(f"constraint kind must be '6d', '3d' or an (m_e × 6) array, got {kind!r}") from None
    if K.ndim == 1 and K.shape[0] == 6:
        K = K[None, :]
    if K.ndim != 2 or K.shape[1] != 6 or K.shape[0] == 0:
        raise InputError(f"a custom constraint matrix K_e must have shape (m_e, 6), m_e ≥ 1; got {K.shape}")
    if not np.all(np.isfinite(K)):
        raise InputError("constraint matrix K_e contains NaN or inf")
    return tuple(tuple(float(x) for x in row) for row in K)


@dataclass(frozen=True)
class Constraint:
    """A constraint on the motion of one link: ``K_e · v_c = …`` where ``v_c`` is the spatial
    velocity ``[linear; angular]`` of the constraint frame c in its own axes (Pinocchio's LOCAL).

    * ``body`` — a body name or any frame name (e.g. a URDF link merged into its parent body by a
      fixed joint), or a body index; the constraint frame is that frame composed with ``placement``.
    * ``kind`` — ``"6d"`` (weld: all six rows), ``"3d"`` (point contact: the three linear rows) or a
      custom ``(m_e × 6)`` matrix ``K_e``.
    * ``placement`` — ``None`` (the frame itself), a 4×4 homogeneous matrix or ``(R, p)``: the
      constraint frame in the frame named by ``body``.

    Stored normalised (the kind as a lower-case string or a tuple of rows, the placement as
    ``((R row-major), (p))``), so constraints are hashable and compare by value.
    """

    body: str | int
    kind: Any = "6d"
    placement: Any = None

    def __post_init__(self):
        if not isinstance(self.body, str | int | np.integer) or isinstance(self.body, bool):
            raise InputError(f"constraint body must be a body or frame name, got {self.body!r}")
        if isinstance(self.body, np.integer):
            object.__setattr__(self, "body", int(self.body))
        object.__setattr__(self, "kind", _as_kind(self.kind))
        if self.placement is not None:
            R, p = as_placement(self.placement, "constraint placement", InputError)
            object.__setattr__(self, "placement", (tuple(map(float, R.ravel())), tuple(map(float, p))))

    @property
    def dim(self) -> int:
        """The number of rows m_e."""
        return {"6d": 6, "3d": 3}[self.kind] if isinstance(self.kind, str) else len(self.kind)

    def selection(self) -> np.ndarray:
        """``K_e`` (m_e × 6) applied to the constraint-frame velocity ``[linear; angular]``."""
        if self.kind == "6d":
            return np.eye(6)
        if self.kind == "3d":
            return np.eye(6)[:3]
        return np.array(self.kind, dtype=float)


@dataclass(frozen=True)
class ConstraintRows:
    """A constraint list in the form the kernels read (constraint e has rows ``row[e]:row[e+1]``).

    * ``body`` (nc,) — the body each constraint acts on (0: the world, rows identically zero);
    * ``row`` (nc + 1,) — row offsets;
    * ``K`` (m, 6) — the rows acting on the body's motion ``[ω; v]`` in body coordinates;
    * ``frames`` (nc, 12) — each constraint frame in its body: R row-major (9), p (3);
    * ``selections`` — the user's ``K_e`` (m_e × 6) per constraint;
    * ``kinds`` — ``"6d"``, ``"3d"`` or ``"custom"`` per constraint;
    * ``compiled`` — the kernels' compiled forms of these rows (e.g. the contact-dynamics program),
      built on first use by the modules that need them and kept with the rows.
    """

    body: np.ndarray
    row: np.ndarray
    K: np.ndarray
    frames: np.ndarray
    selections: tuple
    kinds: tuple
    compiled: dict = field(default_factory=dict, compare=False, repr=False)

    @property
    def m(self) -> int:
        """The number of rows."""
        return int(self.row[-1])


def _resolve(model, c: Constraint) -> tuple[int, np.ndarray, np.ndarray]:
    """(body index, R, p): the constraint frame in its body's frame."""
    if isinstance(c.body, int):
        if not 0 <= c.body <= model.nbodies:
            raise UnknownNameError(
                f"constraint body index {c.body} out of range "
                f"(model {model.name!r} has {model.nbodies} bodies)"
            )
        b, Rf, pf = c.body, np.eye(3), np.zeros(3)
    else:
        f = model.frames[model.frame_index(c.body)]
        b, Rf, pf = int(f.body), np.asarray(f.rotation, float), np.asarray(f.translation, float)
    if c.placement is None:
        return b, Rf, pf
    R = np.array(c.placement[0]).reshape(3, 3)
    p = np.array(c.placement[1])
    return b, Rf @ R, Rf @ p + pf


# (id(model), constraints) → (model key when built, rows); a model change makes its entries stale
_ROWS_CACHE: dict = {}
_ROWS_CACHE_SIZE = 256
# id(model) → (model key, constraints, rows, constraints as a list) of the model's last call: the hot
# path of a control loop (the same constraint list every cycle) costs one dict lookup and one
# sequence comparison, whose element comparisons stop at identity
_LAST: dict = {}


def prepare(model, constraints) -> ConstraintRows:
    """The :class:`ConstraintRows` of ``constraints`` (a sequence of :class:`Constraint`) on ``model``,
    cached per (model state, constraint list)."""
    last = _LAST.get(id(model))
    cls = constraints.__class__
    if last is not None and last[0] is model._key and (cls is list or cls is tuple):
        # a list is compared with a list copy of the last call's constraints (no tuple made per call)
        if last[3 if cls is list else 1] == constraints:
            return last[2]
    try:
        cons = constraints if type(constraints) is tuple else tuple(constraints)
    except TypeError:
        raise InputError("constraints must be a sequence of loopdyn Constraint objects") from None
    rows = _prepare(model, cons)
    if len(_LAST) >= _ROWS_CACHE_SIZE:
        _LAST.clear()
    _LAST[id(model)] = (model._key, cons, rows, list(cons))
    return rows


def _prepare(model, cons: tuple) -> ConstraintRows:
    for c in cons:
        if not isinstance(c, Constraint):
            raise InputError(f"constraints must be loopdyn Constraint objects, got {type(c).__name__}")
    key = (id(model), cons)
    hit = _ROWS_CACHE.get(key)
    if hit is not None and hit[0] is model._key:
        return hit[1]
    nc = len(cons)
    body = np.zeros(nc, dtype=np.int64)
    row = np.zeros(nc + 1, dtype=np.int64)
    frames = np.zeros((nc, 12))
    K = np.zeros((sum(c.dim for c in cons), 6))
    for e, c in enumerate(cons):
        b, R, p = _resolve(model, c)
        body[e] = b
        row[e + 1] = row[e] + c.dim
        frames[e, :9] = R.ravel()
        frames[e, 9:] = p
        # body motion [ω; v] ↦ frame velocity [Rᵀ (v + ω × p); Rᵀ ω]  (rows [linear; angular])
        X = np.zeros((6, 6))
        X[:3, :3] = -R.T @ skew(p)
        X[:3, 3:] = R.T
        X[3:, :3] = R.T
        K[row[e] : row[e + 1]] = c.selection() @ X
    rows = ConstraintRows(
        body,
        row,
        np.ascontiguousarray(K),
        frames,
        tuple(c.selection() for c in cons),
        tuple(c.kind if isinstance(c.kind, str) else "custom" for c in cons),
    )
    if len(_ROWS_CACHE) >= _ROWS_CACHE_SIZE:
        _ROWS_CACHE.clear()
    _ROWS_CACHE[key] = (model._key, rows)
    return rows


_TREE_JACOBIAN = KernelArgs(2, ("q", CONFIGURATION))
_CLUSTER_ROWS = KernelArgs(CLUSTER_FIRST, ("q", CONFIGURATION))


def jacobian(model, data, q, rows: ConstraintRows) -> np.ndarray:
    """``J`` (m × nv, a new array) of prepared constraint rows: per constraint, ``K_e`` times the LOCAL
    Jacobian of its frame; on a model with loops, in independent velocities (``J_span G``, by the
    cluster kinematics)."""
    if model.has_constraints:
        J = np.empty((rows.m, model.nv))
        run(cluster_delassus.c_jacobian_kernel, model, _CLUSTER_ROWS,
            (*data.cluster_arrays, q, rows.body, rows.row, rows.K, J))  # fmt: skip
        return J
    q = as_float_vector(q, "q")
    J = np.zeros((rows.m, data.nv))
    Je = np.empty((6, data.nv))
    for e in range(len(rows.body)):
        if rows.body[e] == 0:
            continue
        run(tree_kinematics.jacobian_kernel, model, _TREE_JACOBIAN,
            (data.ib, data.ws, q, data.empty, int(rows.body[e]), rows.frames[e], tree_kinematics.LOCAL, Je,
             data.no_forces))  # fmt: skip
        J[rows.row[e] : rows.row[e + 1]] = rows.selections[e] @ Je
    return J


def constraint_jacobian(model, data, q, constraints) -> np.ndarray:
    """The constraint rows ``J`` (m × nv, a new array): per constraint, ``K_e`` times the LOCAL
    Jacobian of its frame (rows ``[linear; angular]`` of the frame's velocity in its own axes), with
    respect to the model's velocity (the independent velocities of a model with loops:
    ``J = J_span G``)."""
    if data.source_key is not model._key:
        check_data(model, data)
    return jacobian(model, data, q, prepare(model, constraints))
