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


def frame_in_ancestor(
    model, body: int, ancestor: int, R_f, p_f, symbols: dict
) -> tuple[sp.Matrix, sp.Matrix]:
    """Symbolic placement (R, p) of the frame at (R_f, p_f) on ``body`` in the frame of ``ancestor``
    (a body on its supporting path, or 0 for the world). ``symbols`` maps body index → joint symbol."""
    R = _matrix(R_f)
    p = _vector(p_f)
    b = body
    while b != ancestor:
        if b == 0:
            raise ModelError(f"body {ancestor} does not support body {body}")
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
        p = p_pb + R_pb * p
        R = R_pb * R
        b = spec.parent
    return R, p


def _perpendicular_pair(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two unit vectors completing the unit vector a to an orthonormal basis."""
    t = np.array([1.0, 0.0, 0.0]) if abs(a[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    e1 = np.cross(a, t)
    e1 /= np.linalg.norm(e1)
    return e1, np.cross(a, e1)


def loop_joint_phi(model, loop, nca: int, symbols: dict) -> list:
    """φ rows of a :class:`~loopdyn.constraints.definitions.LoopJoint` (see its docstring)."""
    a = model.body_id(loop.predecessor)
    b = model.body_id(loop.successor)
    Ra, pa = frame_in_ancestor(model, a, nca, *loop.predecessor_placement, symbols)
    Rb, pb = frame_in_ancestor(model, b, nca, *loop.successor_placement, symbols)
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


def loop_joint_branch(model, loop, nca: int, symbols: dict) -> list:
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
    a = model.body_id(loop.predecessor)
    b = model.body_id(loop.successor)
    Ra, _ = frame_in_ancestor(model, a, nca, *loop.predecessor_placement, symbols)
    Rb, _ = frame_in_ancestor(model, b, nca, *loop.successor_placement, symbols)
    if loop.kind == "revolute":
        axis = _vector(np.asarray(loop.axis, float))
        return [(1 - ((Ra * axis).T * (Rb * axis))[0]) / 2]
    Rr = Ra.T * Rb
    return [(3 - Rr.trace()) / 4]
