"""Planar linkages written in code: the planar leg linkage of the cluster paper's code (spec §5.8).

:func:`planar_leg_linkage` — GRBDA's ``PlanarLegLinkage`` (``robot-models/planar_leg_linkage.urdf``):
a fixed base, a ``thigh`` on a revolute joint, and on the thigh a parallelogram four-bar
{``shank_driver``, ``shank_support``, ``foot``} closed by a revolute loop joint between ``foot`` and
``shank_support``. The driver's angle is the four-bar's independent coordinate. Two clusters: the
thigh, and one implicit cluster of three bodies (spanning positions 3, velocity 1); nq = 4, nv = 2.

Every axis is z and every joint placement a pure translation along x, so the mechanism moves in the
xy plane (gravity, along −z, does no work on it). The four-bar (spec §3.9: ``path1 = [0.096, 0.031]``,
``path2 = [0.096]``, offset ``(0.031, 0)``) is a parallelogram: ground 0.031 (driver and support
joints on the thigh), driver 0.096, coupler 0.031 (the foot, from its joint to the loop point),
support 0.096. At q = 0 every link lies on the thigh's x axis: the loop closes there, but that is
the parallelogram's collinear (change-point) configuration, where the loop Jacobian loses rank; the
clusters' reference configuration and random configurations are taken away from it
(:mod:`loopdyn.model.state`).
"""

from __future__ import annotations

import numpy as np

from ..model.joints import Revolute
from ..model.model import BODY_FRAME, Model
from .builtin import in_urdf_order, make_inertia

__all__ = ["planar_leg_linkage"]

EZ = (0.0, 0.0, 1.0)
_O = (0.0, 0.0, 0.0)

# Numbers of spec §5.8 (GRBDA's PlanarLegLinkage): placements, masses, centres of mass and I_zz. The
# spec gives only I_zz; the other components are 0, as in GRBDA's planar_leg_linkage.urdf (they do
# not enter the planar dynamics). Names of the root link, joints and loop: those of that file.
# (joint name, body, parent (None: the root link), origin xyz, independent, mass, centre of mass, I_zz)
_ROOT = "base"
_JOINTS = (
    ("base_to_thigh", "thigh", None, _O, True,
     0.23, (0.0364, 0.0, 0.0), 45.389e-6),
    ("thigh_to_driver", "shank_driver", "thigh", (0.011, 0.0, 0.0), True,
     0.004, (0.048, 0.0, 0.0), 3.257e-6),
    ("thigh_to_support", "shank_support", "thigh", (0.042, 0.0, 0.0), False,
     0.225, (0.04, 0.0, 0.0), 22.918e-6),
    ("driver_to_foot", "foot", "shank_driver", (0.096, 0.0, 0.0), False,
     0.017, (0.0635, 0.0, 0.0), 22.176e-6),
)  # fmt: skip
#: the loop: (name, predecessor, point on it, successor, point on it); revolute about z
_LOOP = ("linkage", "foot", (0.031, 0.0, 0.0), "shank_support", (0.096, 0.0, 0.0))
#: the end-effector frame on the foot: the coupler's length past the loop point
_END_EFFECTOR = ("end-effector", "foot", (0.031 + 0.096, 0.0, 0.0))


def planar_leg_linkage() -> Model:
    """The planar leg linkage of spec §5.8 (GRBDA ``PlanarLegLinkage``): fixed base ``base``; joints
    ``base_to_thigh``, ``thigh_to_driver`` (independent), ``driver_to_foot`` and ``thigh_to_support``
    (dependent), in the URDF reader's order (depth first, siblings by joint name), all revolute about
    z with no limits; the revolute loop joint ``linkage`` between ``foot`` at (0.031, 0, 0) and
    ``shank_support`` at (0.096, 0, 0); the frame ``end-effector`` on ``foot`` at (0.127, 0, 0).
    4 bodies, 2 clusters, nq = 4 (the four-bar's three spanning positions), nv = 2."""
    model = Model("planar_leg_linkage")
    model.add_frame(_ROOT, 0, None, kind=BODY_FRAME)  # the root link, welded to the world
    rows = [(name, body, parent) for name, body, parent, *_ in _JOINTS]
    by_name = {row[0]: row for row in _JOINTS}
    for name, _, _ in in_urdf_order(rows):
        _, body, parent, xyz, independent, mass, com, izz = by_name[name]
        model.add_body(
            body,
            0 if parent is None else parent,
            Revolute(EZ),
            (np.eye(3), np.array(xyz, dtype=float)),
            make_inertia(mass, com, (0.0, 0.0, 0.0, 0.0, 0.0, izz)),
            joint_name=name,
            independent=independent,
        )
    name, pred, pred_xyz, succ, succ_xyz = _LOOP
    model.add_loop(
        name,
        pred,
        succ,
        "revolute",
        predecessor_placement=(np.eye(3), np.array(pred_xyz)),
        successor_placement=(np.eye(3), np.array(succ_xyz)),
        axis=EZ,
    )
    frame, body, xyz = _END_EFFECTOR
    model.add_frame(frame, body, (np.eye(3), np.array(xyz)))
    model.clusters()
    return model
