"""The inverse of partitioning: chains of 1-DoF sub-hinges → compound joints.

:func:`merge` finds every maximal chain of 1-DoF joints (revolute, prismatic, continuous) joined by
massless intermediate bodies and records it as one compound joint (:mod:`loopdyn.model.compound`).
Because a compound joint is stored as its chain of sub-hinges (Jain's partitioning, spec
``partitioning-and-constraint-embedding-jain.md`` §1.4, Lemma 2.1), merging changes no coordinate
and no dynamics: the state of the original model is a state of the merged one.

Round trips (both tested):

* ``merge(partition(m))`` is ``partition(m)`` with each sub-hinge chain that partitioning created
  recorded as a compound joint (a spherical joint's z, y, x chain as a :class:`Gimbal`, a free flyer's
  three prismatic sub-hinges as a :class:`Compound`); same bodies, coordinates and dynamics.
* ``partition(merge(m))`` is ``merge(m)`` with its spherical and free-flyer joints partitioned: a
  compound joint is already a chain of 1-DoF sub-hinges, so partitioning is the identity on it.
"""

from __future__ import annotations

import numpy as np

from ..errors import ModelError
from .compound import PARALLEL_TOL, Compound, CompoundRecord, Gimbal, Planar, Universal, plane_basis
from .joints import PRISMATIC, REVOLUTE, REVOLUTE_UNBOUNDED, Joint
from .model import BODY_FRAME, JOINT_FRAME, Model

_ONE_DOF_CODES = (REVOLUTE, PRISMATIC, REVOLUTE_UNBOUNDED)
_EXACT = 1e-12  # tolerance on unit vectors and translations for recognising a joint type


def _joint_limits(joints: list[Joint]) -> dict:
    """Per-coordinate limits of sub-hinges as the keyword arguments of a compound joint."""
    absent = {"lower": -np.inf, "upper": np.inf, "velocity": np.inf, "effort": np.inf}
    out = {}
    for key, default in absent.items():
        vals = [getattr(j, key) for j in joints]
        out[key] = None if all(v is None for v in vals) else tuple(default if v is None else v for v in vals)
    return out


def _parallel(a, b) -> bool:
    return float(np.linalg.norm(np.cross(a, b))) < PARALLEL_TOL


def recognise(joints: list[Joint], placements: list[tuple[np.ndarray, np.ndarray]]):
    """The compound joint of a sub-hinge chain and the placement of its first sub-hinge.

    ``joints``: the 1-DoF sub-hinges, inboard first; ``placements``: each one's ``(R, p)`` relative to
    the previous sub-hinge's child frame (the first's relative to the parent body). Rotation-only
    internal placements are moved in front of the chain (``P J(a, q) = J(P a, q) P`` for a rotation
    ``P`` and a revolute or prismatic ``J``), which gives sub-hinges at one point with axes
    ``b_k = (P_{k+1} ⋯ P_m)ᵀ a_k`` and a first placement ``(R_1 P_2 ⋯ P_m, p_1)``: two revolutes with
    non-parallel axes make a :class:`Universal`, three a :class:`Gimbal`, prismatic-prismatic-revolute
    with orthonormal right-handed axes a :class:`Planar`. Anything else is a :class:`Compound` with the
    sub-hinges as they are. Returns ``(joint, first placement, changed)``, ``changed`` false when the
    joint's expansion is the chain as given (internal placements the identity).
    """
    codes = [j.code for j in joints]
    internal_rot = all(float(np.linalg.norm(p)) <= _EXACT for _, p in placements[1:])
    if internal_rot and REVOLUTE_UNBOUNDED not in codes:
        Q = np.eye(3)
        axes = [None] * len(joints)
        for k in range(len(joints) - 1, -1, -1):
            axes[k] = Q.T @ joints[k].axis_array()
            if k > 0:
                Q = placements[k][0] @ Q
        R1, p1 = placements[0]
        first = (R1 @ Q, p1.copy())
        lim = _joint_limits(joints)
        found = None
        if codes == [REVOLUTE] * 2 and not _parallel(axes[0], axes[1]):
            found = Universal(axes[0], axes[1], **lim)
        elif codes == [REVOLUTE] * 3 and not _parallel(axes[0], axes[1]) and not _parallel(axes[1], axes[2]):
            found = Gimbal(tuple(axes), **lim)
        elif codes == [PRISMATIC, PRISMATIC, REVOLUTE]:
            e1, e2 = plane_basis(axes[2], axes[0]) if abs(axes[0] @ axes[2]) <= _EXACT else (None, None)
            if e1 is not None and np.linalg.norm(e2 - axes[1]) <= _EXACT:
                found = Planar(tuple(axes[2]), tuple(axes[0]), **lim)
        if found is not None:
            return found, first, not (np.array_equal(Q, np.eye(3)) and all(
                np.array_equal(a, j.axis_array()) for a, j in zip(axes, joints, strict=True)))
    hinges = tuple((j, (np.eye(3), np.zeros(3)) if k == 0 else (R.copy(), p.copy()))
                   for k, (j, (R, p)) in enumerate(zip(joints, placements, strict=True)))
    return Compound(hinges), (placements[0][0].copy(), placements[0][1].copy()), False


def _chains(model: Model) -> list[list[int]]:
    """Maximal chains of 1-DoF sub-hinges joined by massless intermediate bodies (body indices)."""
    n = model.nbodies
    children: list[list[int]] = [[] for _ in range(n + 1)]
    for i, b in enumerate(model.bodies, start=1):
        children[b.parent].append(i)
    own = {(b.name, BODY_FRAME) for b in model.bodies} | {(b.joint_name, JOINT_FRAME) for b in model.bodies}
    framed = {f.body for f in model.frames[1:] if (f.name, f.kind) not in own}
    used = {i for rec in model.compound_joints for i in rec.bodies}
    named = set()  # bodies constraints refer to by name (loop and coupling ends)
    for c in model.constraints:
        for attr in ("predecessor", "successor"):
            if isinstance(getattr(c, attr, None), str):
                named.add(getattr(c, attr))

    def one_dof(i: int) -> bool:
        return model.bodies[i - 1].joint.code in _ONE_DOF_CODES and i not in used

    def links(i: int) -> bool:  # body i is a massless link between sub-hinges i and i + 1
        b = model.bodies[i - 1]
        return (
            one_dof(i) and children[i] == [i + 1] and one_dof(i + 1) and i not in framed
            and b.name not in named and not np.any(b.inertia.compact())
        )

    chains = []
    for i in range(1, n + 1):
        if not one_dof(i) or (i > 1 and links(i - 1)):
            continue  # not a sub-hinge, or inside a chain started earlier
        chain = [i]
        while links(chain[-1]):
            chain.append(chain[-1] + 1)
        if len(chain) > 1:
            chains.append(chain)
    return chains


def merge(model: Model) -> Model:
    """Record every chain of 1-DoF joints joined by massless links as one compound joint.

    A chain is a maximal run of revolute, prismatic or continuous joints, each intermediate body of
    which is massless (zero mass and inertia, exactly), has that chain's next body as its only child
    and the next index (so the chain's coordinates are contiguous), no frame of its own (fixed links,
    operational frames) and no constraint naming it; bodies already in a compound joint are left as
    they are. The chain becomes a :class:`Universal`, :class:`Gimbal` or :class:`Planar` joint when its
    sub-hinges are one (see :func:`recognise`), else a :class:`Compound`; it is named after its last
    sub-hinge's joint (the one that moves the physical body), and the bodies and joints keep their
    names.

    Coordinates are unchanged: a state of ``model`` is a state of the result, with the same dynamics
    (exactly for chains whose internal placements are the identity, as a URDF universal joint written
    as two revolutes meeting at one point; to rounding when rotation-only internal placements are
    moved in front of the chain). A model without such chains gives an equal model (a copy: same
    bodies, joints, frames and coordinates, no compound joint added). Returns a new model; ``model``
    is not modified.
    """
    if not isinstance(model, Model):
        raise ModelError(f"merge expects a loopdyn Model, got {type(model).__name__}")
    out = model.copy()
    for chain in _chains(out):
        bodies = [out.bodies[i - 1] for i in chain]
        joints = [b.joint for b in bodies]
        joint, first, changed = recognise(joints, [(b.rotation, b.translation) for b in bodies])
        name = bodies[-1].joint_name
        subs = joint.expand(name)
        if changed:  # rotations moved in front of the chain: store the joint's own expansion
            for k, (b, (sub, (R, p))) in enumerate(zip(bodies, subs, strict=True)):
                b.joint = sub
                if k == 0:
                    b.rotation, b.translation = first[0] @ R, first[0] @ p + first[1]
                else:
                    b.rotation, b.translation = R.copy(), p.copy()
        out.compound_joints.append(CompoundRecord(name, joint, tuple(chain)))
    out._touch()
    return out
