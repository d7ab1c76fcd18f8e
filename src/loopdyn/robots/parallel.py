"""Spatial parallel mechanisms with multi-DoF joints inside their loops: the RSSR linkage and a delta
robot.

Multi-DoF joints inside loops are written as **chains of 1-DoF revolute sub-hinges separated by
massless bodies** (Jain, *Partitioning of Recursive Multibody Dynamics*, Lemma 2.1, spec §1.3–1.4):
the chain is exactly equivalent to the multi-DoF joint (Eq. 5a–5d: the placements factorise, each
sub-hinge keeps its own constant axis, and the inserted bodies have M(k′) = 0), and it lets the
cluster machinery — constraint tapes that differentiate one angle per body, the choice of independent
coordinates among the joint angles, C-ABA's one-column-per-body motion subspace — run unchanged. A
ball joint is three sub-hinges (a gimbal) and a universal joint two; a ball or universal joint that
*closes* a loop is a ``"point"`` or ``"universal"`` loop joint (:meth:`loopdyn.Model.add_loop`).

A gimbal z-y-x (``R = Rz(a) Ry(b) Rx(c)``) is singular where ``cos b = 0`` (first and last axes
aligned); a universal joint's two axes stay perpendicular and never lock.

* :func:`rssr_linkage` — the spatial four-bar R-S-S-R: crank and rocker on non-parallel,
  non-intersecting ground axes, joined by a rod with a ball joint at each end. 2 DoF.
* :func:`delta_robot` — a 3-R-U-U delta: three actuated arms at 120°, forearms idealised as single
  rods with universal joints at both ends (the parallelogram's two hinge directions), so the platform
  only translates. 3 DoF, the motor angles independent.
"""

from __future__ import annotations

import math

import numpy as np

from ..model.joints import Revolute
from ..model.model import Model
from ..spatial.inertia import Inertia

__all__ = ["delta_robot", "rssr_linkage"]

_EX, _EY, _EZ = (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)


def _rz(t: float) -> np.ndarray:
    c, s = math.cos(t), math.sin(t)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def _ry(t: float) -> np.ndarray:
    c, s = math.cos(t), math.sin(t)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def rod_inertia(mass: float, length: float, radius: float, axis: int, start=(0.0, 0.0, 0.0)) -> Inertia:
    """A thin-walled tube of ``mass``, ``length`` and ``radius`` along body axis ``axis`` (0, 1, 2; a
    negative length points the other way) starting at ``start``: centre of mass at its middle, axial
    moment ``m r²``, transverse moments ``m (L²/12 + r²/2)``."""
    d = np.zeros(3)
    d[axis] = length
    com = np.asarray(start, float) + d / 2
    I = np.full(3, mass * (length**2 / 12 + radius**2 / 2))
    I[axis] = mass * radius**2
    return Inertia(mass, com, np.diag(I))


def _revolute_chain(
    model: Model, name: str, parent, placement, axes, inertia: Inertia, independent=None
) -> int:
    """A multi-DoF joint as 1-DoF revolute sub-hinges ``<name>_1 … <name>_m`` about ``axes`` (each in
    the frame of its own sub-hinge) separated by massless bodies ``<name>_massless<k>`` (Jain's
    partitioning, Lemma 2.1: exact because M(k′) = 0). The first sub-hinge carries ``placement``, the
    others sit at the same point with identity placements; the last moves body ``name`` (``inertia``).
    ``independent`` gives the URDF+ flag per sub-hinge (default all True). Returns the body index."""
    flags = [True] * len(axes) if independent is None else list(independent)
    for k, axis in enumerate(axes):
        last = k == len(axes) - 1
        parent = model.add_body(
            name if last else f"{name}_massless{k + 1}",
            parent,
            Revolute(axis),
            placement if k == 0 else None,
            inertia if last else Inertia.zero(),
            joint_name=f"{name}_{k + 1}",
            independent=flags[k],
        )
    return parent


# ---- RSSR ---------------------------------------------------------------------------------------
#: crank radius, rocker length (m); the rocker pivot B; the rod length follows from the reference
_RSSR_CRANK = 0.04
_RSSR_ROCKER = 0.10
_RSSR_PIVOT = (0.0, 0.18, 0.10)


def rssr_linkage() -> Model:
    """The spatial four-bar R-S-S-R (crank – rod – rocker), a built-in example of ball joints in a loop.

    Geometry (m, world frame, gravity −z): the crank turns about z at the origin (radius 0.04 along
    its x); the rocker turns about x at B = (0, 0.18, 0.10) (length 0.10 along its −z): the two ground
    axes are perpendicular and 0.10 apart (non-planar). The rod (length ≈ 0.1844) joins the crank tip
    to the rocker tip. At q = 0 the crank points along +x, the rocker hangs straight down and the rod
    is horizontal.

    * Ball joint at the crank end: a gimbal of three revolute sub-hinges ``rod_1`` (about the crank's
      z), ``rod_2`` (y), ``rod_3`` (x = the rod's own axis) with two massless bodies (Jain's
      partitioning, Lemma 2.1: exact). Its singularity ``cos(q_rod_2) = 0`` is the rod parallel to
      the crank axis; over a whole crank turn on the assembly branch of q = 0 the rod stays within
      3.2° of the crank plane (``|cos(q_rod_2)| ≥ 0.998``; the rocker swings between −21° and +26°),
      so the gimbal stays far from it.
    * Ball joint at the rocker end: the ``"point"`` loop joint ``ball`` (3 rows).
    * Masses: steel crank 0.05 kg, aluminium tube rod 0.12 kg (radius 8 mm), rocker 0.08 kg.

    **2 DoF**: the crank angle and the rod's spin about its own axis (which moves no ball joint centre);
    both are independent coordinates (``crank`` and ``rod_3``), the gimbal's first two angles and the
    rocker are dependent. The crank turns fully (a crank-rocker). One implicit cluster of 5 bodies
    (nq = 5 spanning positions, nv = 2)."""
    r, ell = _RSSR_CRANK, _RSSR_ROCKER
    B = np.array(_RSSR_PIVOT)
    C0 = np.array([r, 0.0, 0.0])  # crank tip at q = 0
    D0 = B + np.array([0.0, 0.0, -ell])  # rocker tip at q = 0
    u = D0 - C0
    L = float(np.linalg.norm(u))
    model = Model("rssr_linkage")
    crank = model.add_body(
        "crank", 0, Revolute(_EZ), None, rod_inertia(0.05, r, 0.004, 0), joint_name="crank"
    )
    # gimbal frame: z = crank axis, x along the rod at q = 0 (the rod is horizontal there)
    R0 = _rz(math.atan2(u[1], u[0]))
    _revolute_chain(
        model, "rod", crank, (R0, C0), (_EZ, _EY, _EX), rod_inertia(0.12, L, 0.008, 0), (False, False, True)
    )
    model.add_body(
        "rocker",
        0,
        Revolute(_EX),
        (np.eye(3), B),
        rod_inertia(0.08, -ell, 0.005, 2),
        joint_name="rocker",
        independent=False,
    )
    model.add_loop(
        "ball",
        "rod",
        "rocker",
        "point",
        predecessor_placement=(np.eye(3), np.array([L, 0.0, 0.0])),
        successor_placement=(np.eye(3), np.array([0.0, 0.0, -ell])),
    )
    model.add_frame("rod_tip", "rod", (np.eye(3), np.array([L, 0.0, 0.0])))
    model.clusters()
    return model


# ---- delta robot ----------------------------------------------------------------------------------
_DELTA_BASE = 0.25  # base radius: shoulder axes
_DELTA_ARM = 0.15
_DELTA_PLATFORM = 0.04  # platform radius: platform universal joints
_DELTA_HEIGHT = 0.40  # platform centre below the base at q = 0
_DELTA_ARM_ANGLE = 0.5  # arms' angle below the base plane at q = 0 (rad)
#: motor ranges (rad, about the q = 0 reference) used by random_configuration
_DELTA_MOTOR_RANGE = (-0.6, 0.6)


def delta_robot() -> Model:
    """A delta robot (3-R-U-U), a built-in example of universal joints inside and closing loops.

    Three legs at γ = 0°, 120°, 240° about the vertical: leg i's shoulder is at radius 0.25 in the
    base plane z = 0, its actuated revolute ``motor_i`` turns about the horizontal tangent of that
    circle; the arm (0.15 m, 0.2 kg) points outward and 0.5 rad below horizontal at q = 0. The
    forearm (rod, 0.1 kg; the real robot's parallelogram idealised as one rod) has a universal joint at
    each end whose axes are the parallelogram's two hinge directions: at the elbow ``forearm_i_1``
    parallel to the motor axis, then ``forearm_i_2`` about the forearm's x (perpendicular to the rod,
    in the leg's plane); at the platform the same two directions in reverse order. Those axis
    directions make every leg keep the platform's orientation about two axes, and three legs keep it
    fixed: the platform (0.25 kg, radius 0.04) translates, 3 DoF.

    Tree and loops (bodies depth first, as a URDF would give them): the platform hangs from leg 1
    (``arm_1``; elbow sub-hinges ``forearm_1_1``, ``forearm_1_2`` with the massless body
    ``forearm_1_massless1``; ``forearm_1``; wrist sub-hinges ``platform_1``, ``platform_2`` with
    ``platform_massless1``; ``platform`` — one massless body per universal joint, Jain's
    partitioning: exact); legs 2 and 3 end at their forearms and are closed on the platform by the
    ``"universal"`` loop joints ``wrist_2`` and ``wrist_3`` (4 rows each). 11 spanning coordinates,
    8 constraint rows, 3 independent coordinates: the motor angles (regular at q = 0, where the
    platform is 0.40 m below the base centre). One implicit cluster of 11 bodies (nq = 11, nv = 3).
    Universal joints never lock (their axes stay perpendicular). The motor angles are singular as
    independent coordinates only at the delta's parallel (type-2) singularities, where the forearm
    directions stop spanning space (e.g. all three nearly parallel, the platform then swings with the
    motors locked); the base is wider than the platform (0.25 m against 0.04 m) so that even the
    hanging position (arms vertical, forearms tilted inward by about 26°) is far from them. Motor
    limits ±0.6 rad about q = 0 (the range random configurations are drawn from); frame
    ``platform_centre`` on the platform."""
    model = Model("delta_robot")
    Rb, La, Rp, h, th0 = _DELTA_BASE, _DELTA_ARM, _DELTA_PLATFORM, _DELTA_HEIGHT, _DELTA_ARM_ANGLE
    # in a leg's frame (x radial, y tangent, z up): elbow E and platform joint P at q = 0
    E = np.array([Rb + La * math.cos(th0), 0.0, -La * math.sin(th0)])
    P = np.array([Rp, 0.0, -h])
    d = P - E
    Lf = float(np.linalg.norm(d))
    alpha = math.atan2(-d[0], -d[2])  # the forearm frame Ry(α): its −z along the rod
    lo, hi = _DELTA_MOTOR_RANGE
    arm = rod_inertia(0.2, La, 0.01, 0)
    fore = rod_inertia(0.1, -Lf, 0.006, 2)
    tips = []
    for i in range(3):  # depth first (as a URDF's order): leg 1 and the platform, then legs 2 and 3
        g = 2 * math.pi * i / 3
        Rl = _rz(g)
        a = model.add_body(
            f"arm_{i + 1}",
            0,
            Revolute(_EY, lower=lo, upper=hi),
            (Rl @ _ry(th0), Rl @ np.array([Rb, 0.0, 0.0])),
            arm,
            joint_name=f"motor_{i + 1}",
        )
        f = _revolute_chain(
            model,
            f"forearm_{i + 1}",
            a,
            (_ry(alpha - th0), np.array([La, 0.0, 0.0])),
            (_EY, _EX),
            fore,
            (False, False),
        )
        tips.append((f, Rl))
        if i == 0:
            # the platform, through leg 1's wrist: a massless body world-aligned at q = 0 (the forearm's
            # orientation is Rl Ry(α) there), axes b_1 (the forearm's x) then a_1 (the motor axis)
            Rf = Rl @ _ry(alpha)
            platform_inertia = Inertia(0.25, np.array([-Rp, 0.0, 0.0]), np.diag([1.2e-4, 1.2e-4, 2.2e-4]))
            _revolute_chain(
                model,
                "platform",
                f,
                (Rf.T, np.array([0.0, 0.0, -Lf])),
                (tuple(Rf @ np.array(_EX)), tuple(Rl @ np.array(_EY))),
                platform_inertia,
                (False, False),
            )
    # the platform's frame: origin at leg 1's wrist centre (radius Rp on leg 1), world-aligned at q = 0
    centre = np.array([-Rp, 0.0, 0.0])
    model.add_frame("platform_centre", "platform", (np.eye(3), centre))
    for i in (1, 2):
        _, Rl = tips[i]
        model.add_loop(
            f"wrist_{i + 1}",
            f"forearm_{i + 1}",
            "platform",
            "universal",
            predecessor_placement=(np.eye(3), np.array([0.0, 0.0, -Lf])),
            successor_placement=(np.eye(3), centre + Rl @ np.array([Rp, 0.0, 0.0])),
            axis=_EX,
            successor_axis=tuple(Rl @ np.array(_EY)),
        )
    model.clusters()
    return model
