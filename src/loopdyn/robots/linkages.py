"""Planar linkages written in code: the planar leg linkage of the cluster paper's code (spec §5.8)
and a five-bar parallel mechanism.

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

:func:`five_bar` — a planar 2-DoF five-bar in a vertical plane (this project's own numbers, see its
docstring): two actuated cranks on the ground, two distal links joined by a revolute loop joint.
"""

from __future__ import annotations

import numpy as np

from ..model.joints import Revolute
from ..model.model import BODY_FRAME, Model
from .builtin import in_urdf_order, make_inertia

__all__ = ["five_bar", "planar_leg_linkage"]

EY, EZ = (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)
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
            inertia_check="accept",  # planar links: Izz only, as in the reference file
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


# ----------------------------------------------------------------------------------------------
# five-bar: ground (base) 0.15 m, cranks 0.20 m, distal links 0.25 m; aluminium-tube-like links
# modelled as slender rods (I = m l² / 12 about the centre of mass, a small spin inertia along the rod)
_FIVE_BAR_GROUND = 0.15
_FIVE_BAR_CRANK = (0.20, 0.30)  # (length, mass)
_FIVE_BAR_DISTAL = (0.25, 0.20)
_FIVE_BAR_CRANK_ANGLE = 2.0 * np.pi / 3.0  # the left crank at q = 0, from +x towards +z (up-left)


def _rod(length: float, mass: float):
    """A slender rod along +x from its joint: centre of mass at l/2, I_yy = I_zz = m l² / 12."""
    bend = mass * length**2 / 12.0
    return make_inertia(mass, (length / 2.0, 0.0, 0.0), (1e-3 * bend, 0.0, 0.0, bend, 0.0, bend))


def _about_y(angle: float) -> np.ndarray:
    """The rotation taking +x to (cos a, 0, sin a): a rotation about y by −a."""
    c, s = np.cos(angle), np.sin(angle)
    return np.array([[c, 0.0, -s], [0.0, 1.0, 0.0], [s, 0.0, c]])


def five_bar() -> Model:
    """A planar five-bar linkage (2-DoF parallel mechanism) in the vertical xz plane, gravity −z.

    Two cranks turn about y on the ground at ``(∓0.075, 0, 0)`` (ground link 0.15 m):
    ``left_crank`` and ``right_crank`` (joints ``left_motor``, ``right_motor``: the actuated,
    independent coordinates); on each, at 0.20 m, a distal link (``left_distal``, ``right_distal``;
    joints ``left_elbow``, ``right_elbow``, dependent) of 0.25 m; the distal tips are joined by the
    revolute loop joint ``tip`` about y. Frame ``end_effector`` at the left distal tip.

    Links are slender rods (cranks 0.30 kg, distal links 0.20 kg; centre of mass mid-length,
    ``I_yy = I_zz = m l² / 12``, ``I_xx`` a thousandth of that). At q = 0 the mechanism is assembled
    symmetric, "elbows out": the cranks at 120° and 60° from +x, the tip on the symmetry axis at
    z ≈ 0.352 m, far from the singular poses (a crank and its distal link aligned, or the two distal
    links aligned). One implicit cluster of four bodies; nq = 4 (spanning angles), nv = 2."""
    ground = _FIVE_BAR_GROUND
    l1, m1 = _FIVE_BAR_CRANK
    l2, m2 = _FIVE_BAR_DISTAL
    a1 = _FIVE_BAR_CRANK_ANGLE
    elbow = np.array([-ground / 2.0 + l1 * np.cos(a1), l1 * np.sin(a1)])  # left elbow (x, z)
    a2 = np.arctan2(np.sqrt(l2**2 - elbow[0] ** 2), -elbow[0])  # left distal link, to x = 0
    model = Model("five_bar")
    for side, sign in (("left", 1.0), ("right", -1.0)):
        crank, distal = _about_y(np.pi / 2 + sign * (a1 - np.pi / 2)), _about_y(sign * (a2 - a1))
        model.add_body(f"{side}_crank", 0, Revolute(EY), (crank, np.array([-sign * ground / 2.0, 0.0, 0.0])),
                       _rod(l1, m1), joint_name=f"{side}_motor")  # fmt: skip
        model.add_body(f"{side}_distal", f"{side}_crank", Revolute(EY), (distal, np.array([l1, 0.0, 0.0])),
                       _rod(l2, m2), joint_name=f"{side}_elbow", independent=False)  # fmt: skip
    tip = (np.eye(3), np.array([l2, 0.0, 0.0]))
    model.add_loop("tip", "left_distal", "right_distal", "revolute", tip, tip, axis=EY)
    model.add_frame("end_effector", "left_distal", tip)
    model.clusters()
    return model
