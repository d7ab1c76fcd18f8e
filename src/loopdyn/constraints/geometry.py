"""Symbolic kinematics of a cluster, for the constraint formulas of loop joints.

The position and orientation of a frame on a cluster body, relative to the cluster's nearest common
ancestor (NCA), depend only on the cluster's own coordinates: they are built here with sympy from the
joint placements (numbers) and the 1-DoF joint motions (symbols), and a loop joint's φ(q) is written
from them. K and k are then derived by :mod:`loopdyn.constraints.tape`.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from ..errors import ModelError
from ..model.joints import PRISMATIC, REVOLUTE
from . import formulas
from .formulas import Definitions


def _matrix(R) -> sp.Matrix:
    return sp.Matrix(3, 3, [sp.Float(float(x), 17) if abs(float(x)) > 1e-15 else 0 for x in np.ravel(R)])


def _vector(p) -> sp.Matrix:
    return sp.Matrix([sp.Float(float(x), 17) if abs(float(x)) > 1e-15 else 0 for x in np.ravel(p)])


def _axis_rotation(axis, angle) -> sp.Matrix:
    """Rodrigues' rotation about a unit axis (numbers) by a symbolic angle."""
    a = np.asarray(axis, float)
    c, s = sp.cos(angle), sp.sin(angle)
    K = sp.Matrix([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    K = K.applyfunc(lambda x: sp.Float(float(x), 17) if abs(float(x)) > 1e-15 else 0)
    return sp.eye(3) + s * K + (1 - c) * (K * K)


def _ops(e) -> int:
    return 0 if e == 0 else int(sp.count_ops(e))


def step_size(R_pb: sp.Matrix, p_pb: sp.Matrix, R: sp.Matrix, p: sp.Matrix, size_R, size_p) -> tuple:
    """The size of the frame ``(R_pb R, p_pb + R_pb p)`` from the sizes of ``R``, ``p`` (nested
    lists of numbers) and the operations of the joint's ``R_pb``, ``p_pb``, before multiplying: an
    entry ``Σ_k a_k b_k`` counts ``Σ_k (|a_k| + |b_k| + 1)`` over its nonzero products, plus the
    additions. Returns ``(size_R, size_p)``: the measure :func:`loop_frames` bounds, an upper bound
    of sympy's ``count_ops`` of the product (no simplification counted), computed without forming
    it."""
    oR = [[_ops(R_pb[i, k]) for k in range(3)] for i in range(3)]

    def entry(i, terms):
        nz = [(oR[i][k] + s + 1) for k, (x, s) in enumerate(terms) if R_pb[i, k] != 0 and x != 0]
        return sum(nz) + max(len(nz) - 1, 0)

    new_R = [[entry(i, [(R[k, j], size_R[k][j]) for k in range(3)]) for j in range(3)] for i in range(3)]
    new_p = []
    for i in range(3):
        e = entry(i, [(p[k], size_p[k]) for k in range(3)])
        o = _ops(p_pb[i])
        new_p.append(e + o + (1 if e and p_pb[i] != 0 else 0))
    return new_R, new_p


def frame_in_ancestor(
    model, body: int, ancestor: int, R_f, p_f, symbols: dict, definitions: Definitions | None = None
) -> tuple[sp.Matrix, sp.Matrix]:
    """Symbolic placement (R, p) of the frame at (R_f, p_f) on ``body`` in the frame of ``ancestor``
    (a body on its supporting path, or 0 for the world). ``symbols`` maps body index → joint symbol.

    With ``definitions``, the frame in each joint's parent becomes 12 symbols of ``definitions``
    (each a sum of at most three products of the previous symbols with the joint's rotation), and so
    does the frame returned: its formulas grow linearly with the path instead of about 3× per joint
    (general axes)."""
    R, p, _ = _compose(model, _path(model, body, ancestor), R_f, p_f, symbols, None, definitions)
    return R, p


def _path(model, body: int, ancestor: int) -> list[int]:
    path = []
    b = body
    while b != ancestor:
        if b == 0:
            raise ModelError(f"body {ancestor} does not support body {body}")
        path.append(b)
        b = model.bodies[b - 1].parent
    return path


def _rows_weight(kind: str) -> int:
    """The weight of the frames' rotations in the size of a loop joint's rows: 0 for position rows
    only (point, spherical), 1 for universal loops (one product of two rotated axes), 8 for rows that
    multiply the two rotations entry by entry (revolute, prismatic, weld: their derivatives expand
    those products; a 7-joint weld loop of a fuzzed fruit fly, weighted 2, took 80 s to compile)."""
    return {"point": 0, "spherical": 0, "universal": 1}.get(kind, 8)


def loop_frames(model, loop, nca: int, symbols: dict, definitions: Definitions | None = None) -> tuple:
    """``(Ra, pa, Rb, pb)``: the loop joint's frames A and B in the NCA's frame.

    Without ``definitions``, composed expressions. With ``definitions``, the same composed expressions
    while the rows they make stay small: ``n (|pa| + |pb| + w (|Ra| + |Rb|))`` (sizes by
    :func:`step_size`, ``w`` the number of times the rows use the rotations: 0 for point and
    spherical loops, 1 universal, 8 otherwise: :func:`_rows_weight`; ``n`` the joints of the loop,
    K's columns) at most
    :data:`~loopdyn.constraints.formulas.SIZE_THRESHOLD`, true of every loop of today's robots (their
    rows, tapes and cache keys are unchanged); otherwise both sides through symbols of
    ``definitions`` (see :func:`frame_in_ancestor`). The composition stops as soon as the bound is
    passed, so no large formula is ever formed. Point and spherical loops do not compose the
    rotations at all (their rows do not use them; ``Ra``, ``Rb`` are then ``None``). The frames are
    remembered by ``definitions`` for the loop's branch rows."""
    a = model.body_id(loop.predecessor)
    b = model.body_id(loop.successor)
    sides = (
        (_path(model, a, nca), loop.predecessor_placement),
        (_path(model, b, nca), loop.successor_placement),
    )
    if definitions is None:
        (Ra, pa, _), (Rb, pb, _) = (_compose(model, path, *pl, symbols, None, None) for path, pl in sides)
        return Ra, pa, Rb, pb
    got = definitions.frames.get(loop.name)
    if got is None:
        w = _rows_weight(loop.kind)
        # K has n columns and k = −K̇q̇ sums n² second derivatives of the rows: the bound is on size × n
        budget = formulas.SIZE_THRESHOLD // max(len(sides[0][0]) + len(sides[1][0]), 1)
        composed = []
        for path, pl in sides:
            R, p, used = _compose(model, path, *pl, symbols, (budget, w), None, rotation=w > 0)
            if p is None:
                break
            budget -= used
            composed.append((R, p))
        if len(composed) == 2:
            got = (*composed[0], *composed[1])
        else:  # past the threshold: linear growth through symbols
            (Ra, pa, _), (Rb, pb, _) = (
                _compose(model, path, *pl, symbols, None, definitions) for path, pl in sides
            )
            got = (Ra, pa, Rb, pb)
        definitions.frames[loop.name] = got
    return got


def _compose(model, path, R_f, p_f, symbols, limit, definitions, rotation: bool = True):
    """The frame (R_f, p_f) of ``path[0]`` in the parent of ``path[-1]``, joint by joint inwards, and
    its size ``|p| + w |R|`` for ``limit = (bound, w)``; ``(None, None, size)`` as soon as the next
    partial frame's size would exceed ``bound`` (:func:`step_size`, so nothing larger is formed).
    Every partial frame is named by ``definitions`` if given; ``rotation=False`` composes p only."""
    R = _matrix(R_f)
    p = _vector(p_f)
    size_R = [[_ops(R[i, j]) for j in range(3)] for i in range(3)]
    size_p = [_ops(p[i]) for i in range(3)]
    size = 0
    for b in path:
        spec = model.bodies[b - 1]
        j = spec.joint
        if j.code == REVOLUTE:
            Rm, pm = _axis_rotation(j.axis_array(), symbols[b]), sp.zeros(3, 1)
        elif j.code == PRISMATIC:
            Rm, pm = sp.eye(3), _vector(j.axis_array()) * symbols[b]
        else:  # guarded by the cluster builder
            raise ModelError(f"joint {spec.joint_name!r} ({j.kind}) cannot be part of a loop")
        RJ, pJ = _matrix(spec.rotation), _vector(spec.translation)
        # parent_M_body = joint placement · joint motion; frame in parent = parent_M_body · frame
        R_pb = RJ * Rm
        p_pb = pJ + RJ * pm
        if limit is not None:
            size_R, size_p = step_size(R_pb, p_pb, R, p, size_R, size_p)
            size = sum(size_p) + limit[1] * sum(map(sum, size_R))
            if size > limit[0]:
                return None, None, size
        p = p_pb + R_pb * p
        if rotation:
            R = R_pb * R
        if definitions is not None:
            R, p = R.applyfunc(definitions.define), p.applyfunc(definitions.define)
    return (R if rotation else None), p, size


def _perpendicular_pair(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two unit vectors completing the unit vector a to an orthonormal basis."""
    t = np.array([1.0, 0.0, 0.0]) if abs(a[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    e1 = np.cross(a, t)
    e1 /= np.linalg.norm(e1)
    return e1, np.cross(a, e1)


def loop_joint_phi(model, loop, nca: int, symbols: dict, definitions: Definitions | None = None) -> list:
    """φ rows of a :class:`~loopdyn.constraints.definitions.LoopJoint` (see its docstring), over
    the symbols of ``definitions`` for long paths (see :func:`frame_in_ancestor`)."""
    Ra, pa, Rb, pb = loop_frames(model, loop, nca, symbols, definitions)
    rows = list(pa - pb)  # origins coincide (in the NCA frame)
    if loop.kind in ("point", "spherical"):
        return rows
    axis = np.asarray(loop.axis, float)
    if loop.kind == "universal":
        # Cardan joint: axis a (fixed in A) ⟂ axis b (fixed in B). {R : a·(R b) = 0} is exactly the
        # set Rot(a, θ1) Rot(b, θ2) of a universal joint's relative orientations (R b ⟂ a is R b =
        # Rot(a, θ1) b for some θ1, and then Rot(a, θ1)ᵀ R fixes b): one row, no second branch.
        ax_a = Ra * _vector(axis)
        ax_b = Rb * _vector(np.asarray(loop.successor_axis, float))
        return rows + [(ax_a.T * ax_b)[0]]
    e1, e2 = _perpendicular_pair(axis)
    if loop.kind == "revolute":  # the axis of A is perpendicular to B's two normals ⇒ axes aligned
        ax_a = Ra * _vector(axis)
        return rows + [(ax_a.T * (Rb * _vector(e1)))[0], (ax_a.T * (Rb * _vector(e2)))[0]]
    # relative orientation Rr = Raᵀ Rb; its skew part vanishes when the frames are aligned
    Rr = Ra.T * Rb
    rot = [(Rr[2, 1] - Rr[1, 2]) / 2, (Rr[0, 2] - Rr[2, 0]) / 2, (Rr[1, 0] - Rr[0, 1]) / 2]
    if loop.kind == "weld":
        return rows + rot
    # prismatic: aligned frames, relative displacement only along the axis (in frame A)
    d = Ra.T * (pa - pb)
    return [(d.T * _vector(e1))[0], (d.T * _vector(e2))[0]] + rot


def loop_joint_branch(model, loop, nca: int, symbols: dict, definitions: Definitions | None = None) -> list:
    """Rows that vanish on the loop joint's assembly branch and are far from zero off it.

    The orientation rows of :func:`loop_joint_phi` vanish on a whole set of relative orientations,
    not only at the aligned one: the skew part of ``Rr = Raᵀ Rb`` (weld, prismatic) is also zero at a
    half-turn, and the two axis rows of a revolute loop also at anti-parallel axes — configurations
    where the loop is open. These rows tell the two apart: ``(3 − tr Rr) / 4`` (0 aligned, 1 at a
    half-turn) and ``(1 − a_A · a_B) / 2`` (0 aligned axes, 1 opposite). They are quadratic at the
    solution (never kept as constraint rows), and are checked with the kept rows. Point, spherical
    and universal loop joints have none (their rows vanish on their joint's whole configuration set)."""
    if loop.kind in ("point", "spherical", "universal"):
        return []
    Ra, _, Rb, _ = loop_frames(model, loop, nca, symbols, definitions)
    if loop.kind == "revolute":
        axis = _vector(np.asarray(loop.axis, float))
        return [(1 - ((Ra * axis).T * (Rb * axis))[0]) / 2]
    Rr = Ra.T * Rb
    return [(3 - Rr.trace()) / 4]
