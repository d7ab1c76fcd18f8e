"""The UIUC Tello humanoid, written in code, and its differential transmissions (spec §3.10, §5.3).

:func:`tello` builds Tello without reading any file: the spanning tree of GRBDA's
``tello_humanoid.urdf`` (``arms=True``) or ``tello_legs.urdf`` (``arms=False``) — same body, joint and
frame names, same joint order (depth first from the root link, siblings sorted by joint name, as
:func:`loopdyn.load_urdf` orders them), same placements, inertias, joint limits and ``independent``
flags, with every number taken from those reference files — and then adds the constraints the files
leave out (GRBDA adds them in C++):

* per leg, the **hip differential** (hip rotors 1, 2 → gimbal, thigh) and the **knee-ankle
  differential** (knee-ankle rotors 1, 2 → shin, foot), each an implicit constraint ``φ(y, q_l) = 0``
  over ``q = [q_rotor1, q_rotor2, q_link1, q_link2]`` with ``y = q_rotor / N`` the post-gearbox rotor
  angles (N = 6) — :func:`add_tello_differentials`;
* per leg, the hip-clamp geared transmission, and per arm (``tello_humanoid.urdf`` only) the
  shoulder ry/rx/rz (N = 6) and elbow (N = 9) geared transmissions — :func:`add_tello_transmissions`.

φ is the one derived by GRBDA's MATLAB scripts (``derive_tello_{hip,knee_ankle}_differential.m``),
with the rotor and link roles of the derivation (GRBDA HEAD's ``Tello.cpp`` swaps them, spec §7.25):
the physically consistent form, which the paper-era dedicated differential classes used as well.
The rotor coordinates of the model are the *pre-gearbox* rotor angles, so the independent
velocities of a differential cluster are the two rotor joint velocities ``N ẏ`` (the files mark the
rotors ``independent="true"`` and the links ``"false"``).

Sizes with everything added (spec §5 table): ``tello(arms=True)`` — the paper's 24-DoF "Tello
Humanoid" (GRBDA ``TelloWithArms``): the file's own floating joint ``torso-to-ground``, 37 bodies,
15 clusters, nq = 33, nv = 6 + 2·(1 + 2 + 2) + 2·4 = 24; ``tello(arms=False)`` — Tello's legs
(GRBDA ``Tello``): ``tello_legs.urdf`` whose root link ``ground`` (massless in the file) becomes a
free-flying base joined to the world by ``root_joint``, 21 bodies, 7 clusters, nq = 25, nv = 16
(with a fixed base, :func:`tello_legs` ``(floating_base=False)``: nq = 18, nv = 10).

:func:`tello_humanoid` / :func:`tello_legs` give the same models, or with a ``path`` load that URDF
file (e.g. one of GRBDA's) and add the constraints to it.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np

from ..errors import InputError, ModelError
from ..model.joints import FreeFlyer
from ..model.model import BODY_FRAME, Model
from .builtin import add_joints, make_inertia, mirrored_row

__all__ = [
    "GEAR_RATIO",
    "add_tello_differentials",
    "add_tello_transmissions",
    "grbda_urdf_path",
    "hip_differential_ik",
    "hip_differential_phi",
    "knee_ankle_differential_ik",
    "knee_ankle_differential_phi",
    "tello",
    "tello_humanoid",
    "tello_legs",
]

#: gear ratio of every Tello leg actuator
GEAR_RATIO = 6.0
SIDES = ("left", "right")
#: (link, rotor, ratio) of the arm transmissions of ``tello_humanoid.urdf`` (TelloWithArms)
ARM_TRANSMISSIONS = (("shoulder-ry", 6.0), ("shoulder-rx", 6.0), ("shoulder-rz", 6.0), ("elbow", 9.0))

#: environment variable naming the directory of GRBDA's URDF+ reference files
GRBDA_URDF_DIR_ENV = "LOOPDYN_GRBDA_URDF_DIR"
#: where the reference files are looked for otherwise: ``shared/`` beside a source checkout of loopdyn
_DEFAULT_GRBDA_URDF_DIRS = (
    str(Path(__file__).resolve().parents[4] / "shared" / "reference-models" / "grbda-urdf"),
)

#: the values of :func:`tello`'s ``parameters``
PARAMETER_SETS = ("current",)

# ----------------------------------------------------------------------------------------------
# the spanning tree, written in code — every number taken from the GRBDA reference data
# (robot-models/tello_humanoid.urdf and tello_legs.urdf; the numbers are written as the files write
# them, e.g. 126e-03, and the files' 3.1415927 / 1.5707963 rather than π, π/2).
#
# A row: (joint name, child body, parent body, axis, origin xyz, origin rpy, independent, mass, centre
# of mass, (ixx, ixy, ixz, iyy, iyz, izz) about the centre of mass), as in loopdyn.robots.builtin.
EX, EY, EZ = (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)
_O = (0.0, 0.0, 0.0)
#: (lower, upper, effort, velocity) of every revolute joint of both files
_LIMITS = (-10.0, 10.0, 150.0, 100.0)
#: the leg rotors (hip clamp, hip and knee-ankle differentials): mass, centre of mass, tensor
_ROTOR = (0.07, _O, (2.5984e-05, 0.0, 0.0, 2.5984e-05, 0.0, 5.1512e-05))
#: tello_humanoid.urdf: the floating joint ``torso-to-ground`` from the (massless) root link
#: ``ground`` to the torso (identity origin)
_TORSO = ("torso-to-ground", "torso", 2.3008, (0.0073, -0.0013, -0.0023),
          (0.0366, 0., -0.0006, 0.0142, -0.0002, 0.0291))  # fmt: skip
#: tello_legs.urdf: the root link; with a floating base, the free flyer's name (load_urdf's default)
_LEGS_ROOT = "ground"
_LEGS_ROOT_JOINT = "root_joint"
_HIP_ROTOR_1_RPY = (-1.5707963, 3.1415927, 0.0)
_HIP_ROTOR_2_RPY = (1.5707963, 0.0, 0.0)
_KNEE_ANKLE_ROTOR_1_RPY = (1.5707963, 0.0, 0.0)
_KNEE_ANKLE_ROTOR_2_RPY = (-1.5707963, 3.1415927, 0.0)
#: origin rpy of the hip-clamp rotor joint: the files turn the left one by (about) π about x, not the
#: right one
_CLAMP_ROTOR_RPY = {"left": (3.1415927, 0.0, 0.0), "right": (0.0, 0.0, 0.0)}


def _leg_rows(side: str, root: str, clamp_independent: bool):
    """The ten joints of one leg. Both files have the same legs, but for the root link (``torso`` /
    ``ground``, which also prefixes the hip-clamp joint names) and the ``independent`` flags of the
    hip-clamp transmission (``tello_humanoid.urdf``: the clamp; ``tello_legs.urdf``: its rotor). The
    right leg is the left one with the hip clamp's y location negated and its rotor not turned; the
    inertias are not mirrored."""
    sy = 1.0 if side == "left" else -1.0
    s = side
    return (
        (f"{root}-to-{s}-hip-clamp-rotor", f"{s}-hip-clamp-rotor", root, EZ, (0.0, sy * 126e-03, -26e-03),
         _CLAMP_ROTOR_RPY[s], not clamp_independent, *_ROTOR),
        (f"{root}-to-{s}-hip-clamp", f"{s}-hip-clamp", root, EZ, (0.0, sy * 126e-03, -87e-03), _O,
         clamp_independent, 1.3289, (-0.001, 0.0, -0.0069), (0.0032, 0., 0.0001, 0.0033, 0., 0.0027)),
        # hip differential
        (f"{s}-hip-clamp-to-hip-rotor-1", f"{s}-hip-rotor-1", f"{s}-hip-clamp", EZ, (0.0, 0.04, 0.0),
         _HIP_ROTOR_1_RPY, True, *_ROTOR),
        (f"{s}-hip-clamp-to-hip-rotor-2", f"{s}-hip-rotor-2", f"{s}-hip-clamp", EZ, (0.0, -0.04, 0.0),
         _HIP_ROTOR_2_RPY, True, *_ROTOR),
        (f"{s}-hip-clamp-to-gimbal", f"{s}-gimbal", f"{s}-hip-clamp", EX, (0.0, 0.0, -142.5e-03), _O,
         False, 0.4433, (-0.0027, 0.0, 0.0258), (0.0018, 0.0, 0.0, 0.0017, 0.0, 0.0015)),
        (f"{s}-gimbal-to-thigh", f"{s}-thigh", f"{s}-gimbal", EY, _O, _O,
         False, 1.5424, (0.003, -0.0001, -0.0323), (0.0103, 0.0, -0.0005, 0.0097, 0.0, 0.0027)),
        # knee-ankle differential
        (f"{s}-thigh-to-knee-ankle-rotor-1", f"{s}-knee-ankle-rotor-1", f"{s}-thigh", EZ,
         (0.0, 26.55e-03, 0.0), _KNEE_ANKLE_ROTOR_1_RPY, True, *_ROTOR),
        (f"{s}-thigh-to-knee-ankle-rotor-2", f"{s}-knee-ankle-rotor-2", f"{s}-thigh", EZ,
         (0.0, -26.55e-03, 0.0), _KNEE_ANKLE_ROTOR_2_RPY, True, *_ROTOR),
        (f"{s}-thigh-to-shin", f"{s}-shin", f"{s}-thigh", EY, (0.0, 0.0, -226.8e-03), _O,
         False, 0.3072, (0.0047, -0.0003, -0.1043), (0.0054, 0.0, -0.0002, 0.0054, 0.0, 0.0001)),
        (f"{s}-shin-to-foot", f"{s}-foot", f"{s}-shin", EY, (0.0, 0.0, -260e-03), _O,
         False, 0.1025, (0.0042, 0.0, -0.0251), (0.094e-03, 0.0, -0.0038e-03, 0.1773e-03, 0.0, 0.0901e-03)),
    )  # fmt: skip


# The left arm of tello_humanoid.urdf (the MIT Humanoid's arm; massless rotors, spec §5.3); "{}" is the
# side. The right arm mirrors it about the xz plane: y of the locations and centres of mass, ixy and
# iyz negated.
_ARM_ROTOR_Y = (0.0, _O, (0.1084e-03, 0.0, 0.0, 0.1684e-03, 0.0, 0.1084e-03))
_ARM_ROTOR_X = (0.0, _O, (0.1684e-03, 0.0, 0.0, 0.1084e-03, 0.0, 0.1084e-03))
_ARM_ROTOR_Z = (0.0, _O, (0.1084e-03, 0.0, 0.0, 0.1084e-03, 0.0, 0.1684e-03))
_ARM_ROWS = (
    ("torso-to-{}-shoulder-ry", "{}-shoulder-ry", "torso", EY, (0.01346, 0.17608, 0.24657), _O,
     True, 0.788506, (0.009265, 0.052623, -0.0001249),
     (0.0013678, 0.0000266, 0.0000021, 0.0007392, -0.0000012, 0.000884)),
    ("torso-to-{}-shoulder-ry-rotor", "{}-shoulder-ry-rotor", "torso", EY, (0.01346, 0.16, 0.24657), _O,
     False, *_ARM_ROTOR_Y),
    ("{}-shoulder-ry-to-shoulder-rx", "{}-shoulder-rx", "{}-shoulder-ry", EX, (0.0, 0.0575, 0.0), _O,
     True, 0.80125, (0.0006041, 0.0001221, -0.082361),
     (0.0011524, 0.0000007, 0.0000396, 0.0011921, 0.0000014, 0.0012386)),
    ("{}-shoulder-ry-to-shoulder-rx-rotor", "{}-shoulder-rx-rotor", "{}-shoulder-ry", EX,
     (0.0, 0.0575, 0.0), _O, False, *_ARM_ROTOR_X),
    ("{}-shoulder-rx-to-shoulder-rz", "{}-shoulder-rz", "{}-shoulder-rx", EZ, (0.0, 0.0, -0.1025), _O,
     True, 0.905588, (0.0001703, -0.016797, -0.060),
     (0.0012713, 0.000001, -0.000008, 0.0017477, -0.0000225, 0.0008191)),
    ("{}-shoulder-rx-to-shoulder-rz-rotor", "{}-shoulder-rz-rotor", "{}-shoulder-rx", EZ,
     (0.0, 0.0, -0.1025), _O, False, *_ARM_ROTOR_Z),
    ("{}-shoulder-rz-to-elbow", "{}-elbow", "{}-shoulder-rz", EY, (0.0, 0.0, -0.1455), _O,
     True, 0.34839, (-0.0059578, 0.000111, -0.0426735),
     (0.001570, 0.0000002, 0.0000335, 0.0016167, 0.000003, 0.0000619)),
    ("{}-shoulder-rz-to-elbow-rotor", "{}-elbow-rotor", "{}-shoulder-rz", EY, (0.0, -0.0325, -0.06), _O,
     False, *_ARM_ROTOR_Y),
)  # fmt: skip


def _arm_rows(side: str):
    """The eight joints of one arm from the left-arm template (mirrored for the right arm)."""
    return [mirrored_row(row, side, 1.0 if side == "left" else -1.0, root="torso") for row in _ARM_ROWS]


def _tello_tree(arms: bool, floating_base: bool = True) -> Model:
    """The spanning tree of ``tello_humanoid.urdf`` (``arms``) or ``tello_legs.urdf`` as
    :func:`loopdyn.load_urdf` builds it (``floating_base`` for the legs file: its root link is a
    free-flying body; the humanoid file has its own floating joint and ignores it)."""
    if arms:
        model = Model("tello_humanoid")
        model.add_frame("ground", 0, None, kind=BODY_FRAME)  # the root link, welded to the world
        joint, body, mass, com, tensor = _TORSO
        model.add_body(body, 0, FreeFlyer(), None, make_inertia(mass, com, tensor), joint_name=joint)
        rows = [row for side in SIDES for row in _leg_rows(side, body, clamp_independent=True)]
        rows += [row for side in SIDES for row in _arm_rows(side)]
        add_joints(model, rows, _LIMITS, body)
        return model
    model = Model("tello_legs")
    if floating_base:  # a massless free-flying root link
        model.add_body(_LEGS_ROOT, 0, FreeFlyer(), None, None, joint_name=_LEGS_ROOT_JOINT)
    else:
        model.add_frame(_LEGS_ROOT, 0, None, kind=BODY_FRAME)
    rows = [row for side in SIDES for row in _leg_rows(side, _LEGS_ROOT, clamp_independent=False)]
    add_joints(model, rows, _LIMITS, _LEGS_ROOT)
    return model


# ----------------------------------------------------------------------------------------------
# the constraint formulas (spec §3.10), written once for sympy and for NumPy
def _hip_phi(y1, y2, ql1, ql2, sin, cos, r):
    """Hip differential φ(y, q_l): y = post-gearbox rotor angles, (ql1, ql2) = (gimbal, thigh)."""
    phi1 = (
        r(57, 2500) * sin(y1)
        - r(49, 5000) * cos(ql1)
        - r(399, 20000) * sin(ql1)
        - r(8, 625) * cos(y1) * cos(ql2)
        - r(57, 2500) * cos(ql1) * sin(ql2)
        - r(7, 625) * sin(y1) * sin(ql1)
        + r(7, 625) * sin(ql1) * sin(ql2)
        - r(8, 625) * cos(ql1) * sin(y1) * sin(ql2)
        + r(3021, 160000)
    )
    phi2 = (
        r(57, 2500) * sin(y2)
        - r(49, 5000) * cos(ql1)
        + r(399, 20000) * sin(ql1)
        - r(8, 625) * cos(y2) * cos(ql2)
        - r(57, 2500) * cos(ql1) * sin(ql2)
        + r(7, 625) * sin(y2) * sin(ql1)
        - r(7, 625) * sin(ql1) * sin(ql2)
        - r(8, 625) * cos(ql1) * sin(y2) * sin(ql2)
        + r(3021, 160000)
    )
    return [phi1, phi2]


def _knee_ankle_phi(y1, y2, ql1, ql2, sin, cos, r, pi):
    """Knee-ankle differential φ(y, q_l): (ql1, ql2) = (knee = shin, ankle = foot)."""
    d = y1 / 2 - y2 / 2
    phi1 = (
        r(21, 6250) * cos(d + r(1979, 4500) * pi)
        - r(13, 625) * cos(d + r(493, 1500) * pi)
        - r(273, 12500) * cos(pi / 9)
        - r(7, 2500) * sin(d + ql2 + r(231, 500) * pi)
        + r(91, 5000) * sin(ql2 + r(2, 15) * pi)
        - r(147, 50000) * sin(ql2 + pi / 45)
        + r(163349, 6250000)
    )
    phi2 = ql1 - y1 / 2 - y2 / 2  # the knee angle is the mean of the two post-gearbox rotor angles
    return [phi1, phi2]


def _sympy():
    import sympy as sp

    return sp, sp.Rational


def hip_differential_phi(q, gear_ratio: float = GEAR_RATIO) -> list:
    """φ of the hip differential over ``q = [q_rotor1, q_rotor2, q_gimbal, q_thigh]`` (pre-gearbox
    rotor angles). ``q`` may hold sympy symbols (sympy expressions are returned) or numbers."""
    q_r1, q_r2, ql1, ql2 = q
    if _is_symbolic(q):
        sp, R = _sympy()
        n = sp.nsimplify(gear_ratio)
        return _hip_phi(q_r1 / n, q_r2 / n, ql1, ql2, sp.sin, sp.cos, R)
    return [
        float(x)
        for x in _hip_phi(q_r1 / gear_ratio, q_r2 / gear_ratio, ql1, ql2, np.sin, np.cos, lambda a, b: a / b)
    ]


def knee_ankle_differential_phi(q, gear_ratio: float = GEAR_RATIO) -> list:
    """φ of the knee-ankle differential over ``q = [q_rotor1, q_rotor2, q_shin, q_foot]``."""
    q_r1, q_r2, ql1, ql2 = q
    if _is_symbolic(q):
        sp, R = _sympy()
        n = sp.nsimplify(gear_ratio)
        return _knee_ankle_phi(q_r1 / n, q_r2 / n, ql1, ql2, sp.sin, sp.cos, R, sp.pi)
    out = _knee_ankle_phi(
        q_r1 / gear_ratio, q_r2 / gear_ratio, ql1, ql2, np.sin, np.cos, lambda a, b: a / b, math.pi
    )
    return [float(x) for x in out]


def _is_symbolic(q) -> bool:
    return any(type(x).__module__.startswith("sympy") for x in q)


def hip_differential_ik(q_gimbal: float, q_thigh: float) -> tuple[float, float]:
    """Post-gearbox rotor angles ``(y1, y2)`` of the hip differential for given link angles (the
    closed form of GRBDA's ``thd_IK_pos``); NaN where the links are out of reach."""
    s1, c1 = math.sin(q_gimbal), math.cos(q_gimbal)
    s2, c2 = math.sin(q_thigh), math.cos(q_thigh)
    b = -(8 / 625) * c2
    a1 = 57 / 2500 - (8 / 625) * c1 * s2 - (7 / 625) * s1
    c_1 = (49 / 5000) * c1 + (399 / 20000) * s1 + (57 / 2500) * c1 * s2 - (7 / 625) * s1 * s2 - 3021 / 160000
    a2 = (7 / 625) * s1 - (8 / 625) * c1 * s2 + 57 / 2500
    c_2 = (49 / 5000) * c1 - (399 / 20000) * s1 + (57 / 2500) * c1 * s2 + (7 / 625) * s1 * s2 - 3021 / 160000
    out = []
    for a, c in ((a1, c_1), (a2, c_2)):
        disc = a * a + b * b - c * c
        if disc < 0:
            out.append(math.nan)
            continue
        d = math.sqrt(disc)
        out.append(math.atan2(-b * d + a * c, b * c + a * d))
    return out[0], out[1]


def knee_ankle_differential_ik(q_knee: float, q_ankle: float) -> tuple[float, float]:
    """Post-gearbox rotor angles ``(y1, y2)`` of the knee-ankle differential (GRBDA's
    ``tkad_IK_pos``); NaN where the links are out of reach."""
    alpha0 = (180 - 59.16) * math.pi / 180
    beta = q_ankle + (180 - 66) * math.pi / 180
    sp9, cp9 = math.sin(math.pi / 9), math.cos(math.pi / 9)
    a = -(21 / 6250) * sp9 - (7 / 2500) * math.sin(beta)
    b = 13 / 625 - (7 / 2500) * math.cos(beta) - (21 / 6250) * cp9
    c = (
        (273 / 12500) * cp9
        + (91 / 5000) * math.cos(beta)
        - (147 / 50000) * cp9 * math.cos(beta)
        - (147 / 50000) * sp9 * math.sin(beta)
        - 163349 / 6250000
    )
    disc = a * a + b * b - c * c
    if disc < 0:
        return math.nan, math.nan
    d = math.sqrt(disc)
    alpha = math.atan2(b * d + a * c, b * c - a * d)
    return q_knee - (alpha - alpha0), q_knee + (alpha - alpha0)


# ----------------------------------------------------------------------------------------------
# adding the constraints to a model
def _joint_of(model: Model, link: str, what: str) -> str:
    """Name of the joint that moves the body ``link``."""
    try:
        body = model.body_id(link)
    except KeyError:
        raise ModelError(
            f"{what}: the model has no body {link!r} (is it a Tello model loaded from GRBDA's "
            "tello_humanoid.urdf / tello_legs.urdf?)"
        ) from None
    if body == 0:
        raise ModelError(f"{what}: {link!r} is the universe")
    return model.bodies[body - 1].joint_name


def add_tello_differentials(model: Model, *, gear_ratio: float = GEAR_RATIO, sides=SIDES) -> Model:
    """Add the hip and knee-ankle differentials of each leg as implicit constraints.

    For each ``side`` in ``sides`` this adds ``"{side}-hip-differential"`` over the joints moving
    ``{side}-hip-rotor-1``, ``{side}-hip-rotor-2``, ``{side}-gimbal``, ``{side}-thigh`` and
    ``"{side}-knee-ankle-differential"`` over ``{side}-knee-ankle-rotor-1``,
    ``{side}-knee-ankle-rotor-2``, ``{side}-shin``, ``{side}-foot`` (the body names of GRBDA's Tello
    files), with φ of :func:`hip_differential_phi` and :func:`knee_ankle_differential_phi`. Each
    becomes a 4-body implicit cluster with 2 independent coordinates — the two rotors, provided the
    joints' ``independent`` flags say so (they do in the reference files); with no flags given
    (all true) the cluster picks its independent coordinates itself.

    Returns ``model`` (modified in place).
    """
    for side in sides:
        for cname, bodies, phi in (
            ("hip-differential", ("hip-rotor-1", "hip-rotor-2", "gimbal", "thigh"), hip_differential_phi),
            (
                "knee-ankle-differential",
                ("knee-ankle-rotor-1", "knee-ankle-rotor-2", "shin", "foot"),
                knee_ankle_differential_phi,
            ),
        ):
            name = f"{side}-{cname}"
            joints = [_joint_of(model, f"{side}-{b}", name) for b in bodies]
            model.add_implicit_constraint(name, joints, lambda q, _phi=phi: _phi(q, gear_ratio))
    return model


def add_tello_transmissions(model: Model, *, gear_ratio: float = GEAR_RATIO, sides=SIDES) -> Model:
    """Add the geared transmissions of Tello as couplings: per leg the hip clamp
    (``{side}-hip-clamp`` ← ``{side}-hip-clamp-rotor``, ratio ``gear_ratio``) and, when the model has
    arms (``tello_humanoid.urdf``), per arm shoulder ry/rx/rz (ratio 6) and elbow (ratio 9).
    Returns ``model`` (modified in place)."""
    names = set(model.body_names)
    for side in sides:
        link = f"{side}-hip-clamp"
        _joint_of(model, link, f"{link}-transmission")
        _joint_of(model, f"{link}-rotor", f"{link}-transmission")
        model.add_coupling(f"{link}-transmission", link, f"{link}-rotor", gear_ratio)
        for part, ratio in ARM_TRANSMISSIONS:
            link = f"{side}-{part}"
            if link in names and f"{link}-rotor" in names:
                model.add_coupling(f"{link}-transmission", link, f"{link}-rotor", ratio)
    return model


# ----------------------------------------------------------------------------------------------
# the reference files
def grbda_urdf_path(filename: str) -> Path:
    """Path of one of GRBDA's URDF+ reference files: looked up in the directory named by the
    ``LOOPDYN_GRBDA_URDF_DIR`` environment variable, then in the shared reference-model directory."""
    dirs = [os.environ[GRBDA_URDF_DIR_ENV]] if os.environ.get(GRBDA_URDF_DIR_ENV) else []
    dirs += list(_DEFAULT_GRBDA_URDF_DIRS)
    for d in dirs:
        path = Path(d) / filename
        if path.is_file():
            return path
    raise FileNotFoundError(
        f"{filename}: GRBDA's URDF+ reference file was not found in {dirs}; set {GRBDA_URDF_DIR_ENV} "
        "to the directory holding GRBDA's robot-models, or pass path="
    )


def tello(arms: bool = True, parameters: str = "current") -> Model:
    """UIUC Tello, built in code, with its differentials and geared transmissions.

    Parameters
    ----------
    arms:
        ``True`` (default): the paper's 24-DoF "Tello Humanoid" (GRBDA ``TelloWithArms``, the numbers
        of ``tello_humanoid.urdf``): floating torso (joint ``torso-to-ground``), two legs of a
        hip-clamp transmission and two differentials, two arms of four geared transmissions —
        37 bodies, 15 clusters, nq = 33, nv = 24. ``False``: Tello's legs (GRBDA ``Tello``, the
        numbers of ``tello_legs.urdf``) on a massless free-flying base ``ground`` (joint
        ``root_joint``) — 21 bodies, 7 clusters, nq = 25, nv = 16.
    parameters:
        Only ``"current"``: the parameters of the reference files (GRBDA HEAD). The spec lists no
        paper-era Tello parameters that differ: the leg rotors weigh 0.07 kg and the arm rotors
        0 kg in both (spec §7.26), and the differentials use the physical φ(y = q_rotor/6, q_link)
        that the paper-era classes used (spec §3.10, §7.25; GRBDA HEAD's swapped roles are not
        reproduced). What else differs from the paper-era code is not a parameter: its
        differential clusters took the post-gearbox angles ``y = q_rotor / 6`` as independent
        coordinates where this model takes the rotor joint angles (a constant rescaling of the
        independent velocities), and the zero reflected inertia of the paper-era differentials
        (spec §7.28) belongs to the approximate model (:mod:`loopdyn.baselines.approximate`), not
        to this one.

    Returns
    -------
    Model
        The same bodies, joints, frames, joint order, placements, inertias, limits and
        ``independent`` flags as :func:`loopdyn.load_urdf` gives for the reference file (with
        ``floating_base=True`` for ``tello_legs.urdf``), plus the constraints of
        :func:`add_tello_transmissions` and :func:`add_tello_differentials`; clusters built. No
        file is read.
    """
    if parameters not in PARAMETER_SETS:
        raise InputError(
            f"tello: parameters must be one of {PARAMETER_SETS}, got {parameters!r} (no paper-era Tello "
            "parameters differ from the current ones, see the docstring)"
        )
    if arms:
        return tello_humanoid()
    return tello_legs(floating_base=True)


def _with_constraints(model: Model, transmissions: bool) -> Model:
    if transmissions:
        add_tello_transmissions(model)
    add_tello_differentials(model)
    model.clusters()
    return model


def tello_humanoid(path: str | os.PathLike | None = None, *, transmissions: bool = True) -> Model:
    """Tello with arms (GRBDA ``TelloWithArms``, the paper's 24-DoF Tello).

    Without ``path``, the model of ``tello_humanoid.urdf`` built in code (no file read; the same as
    :func:`tello` ``(arms=True)``); with ``path``, that URDF file loaded with
    :func:`loopdyn.load_urdf` (it must have Tello's body names, e.g. GRBDA's file, see
    :func:`grbda_urdf_path`). The file has its own ``floating`` joint (``torso-to-ground``), so no
    extra free flyer is added. The differentials are added, and with ``transmissions`` (default) the
    hip-clamp and arm geared transmissions, giving nv = 24 (without them: 34).
    """
    if path is None:
        model = _tello_tree(arms=True)
    else:
        from ..io.urdf import load_urdf

        model = load_urdf(path)
    return _with_constraints(model, transmissions)


def tello_legs(
    path: str | os.PathLike | None = None, *, floating_base: bool = False, transmissions: bool = True
) -> Model:
    """Tello's legs (GRBDA ``Tello``), with the differentials and (default) the hip-clamp
    transmissions.

    Without ``path``, the model of ``tello_legs.urdf`` built in code (no file read); with ``path``,
    that URDF file loaded with :func:`loopdyn.load_urdf`. The root link ``ground`` carries the hip
    clamps and has no inertia: with ``floating_base=True`` it becomes a massless free-flying base
    (joint ``root_joint``; nv = 16, as the spec's Tello-legs row counts it, and the same as
    :func:`tello` ``(arms=False)``); by default it is fixed (nv = 10)."""
    if path is None:
        model = _tello_tree(arms=False, floating_base=floating_base)
    else:
        from ..io.urdf import load_urdf

        model = load_urdf(path, floating_base=floating_base)
    return _with_constraints(model, transmissions)
