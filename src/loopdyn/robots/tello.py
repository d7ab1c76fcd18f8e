"""The UIUC Tello humanoid: its differential transmissions, added in code to a URDF model.

GRBDA's ``tello_humanoid.urdf`` and ``tello_legs.urdf`` describe Tello's spanning tree only: the
rotors and links carry URDF+ ``independent`` flags, but the files have no ``<coupling>`` and no
``<loop>`` (GRBDA adds the constraints in C++). Loaded alone they are plain trees (see
:mod:`loopdyn.io.urdf`). This module adds the constraints (spec §3.10, §5.3):

* per leg, the **hip differential** (hip rotors 1, 2 → gimbal, thigh) and the **knee-ankle
  differential** (knee-ankle rotors 1, 2 → shin, foot), each an implicit constraint ``φ(y, q_l) = 0``
  over ``q = [q_rotor1, q_rotor2, q_link1, q_link2]`` with ``y = q_rotor / N`` the post-gearbox rotor
  angles (N = 6) — :func:`add_tello_differentials`;
* per leg, the hip-clamp geared transmission, and per arm (``tello_humanoid.urdf`` only) the
  shoulder ry/rx/rz (N = 6) and elbow (N = 9) geared transmissions — :func:`add_tello_transmissions`.

φ is the one derived by GRBDA's MATLAB scripts (``derive_tello_{hip,knee_ankle}_differential.m``),
with the rotor and link roles of the derivation (GRBDA HEAD's ``Tello.cpp`` swaps them, spec §7.25).
The rotor coordinates of the model are the *pre-gearbox* rotor angles, so the independent
velocities of a differential cluster are the two rotor joint velocities ``N ẏ`` (the URDF marks the
rotors ``independent="true"`` and the links ``"false"``).

Sizes with everything added: ``tello_humanoid.urdf`` (floating joint in the file) nv = 6 + 2·(1 + 2 +
2) + 2·4 = 24 (the paper's 24-DoF Tello); ``tello_legs.urdf`` (fixed base in the file) nv = 10, or
16 with ``floating_base=True`` (spec §5 table: Tello legs, 16 DoF).
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np

from ..errors import ModelError
from ..model.model import Model

__all__ = [
    "GEAR_RATIO",
    "add_tello_differentials",
    "add_tello_transmissions",
    "grbda_urdf_path",
    "hip_differential_ik",
    "hip_differential_phi",
    "knee_ankle_differential_ik",
    "knee_ankle_differential_phi",
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


def tello_humanoid(path: str | os.PathLike | None = None, *, transmissions: bool = True) -> Model:
    """Tello with arms (GRBDA ``TelloWithArms``, the paper's 24-DoF Tello) from ``tello_humanoid.urdf``.

    The file has its own ``floating`` joint (``torso-to-ground``), so it is loaded without an extra
    free flyer. The differentials are added, and with ``transmissions`` (default) the hip-clamp and
    arm geared transmissions, giving nv = 24 (without them: 34).
    """
    from ..io.urdf import load_urdf

    model = load_urdf(grbda_urdf_path("tello_humanoid.urdf") if path is None else path)
    if transmissions:
        add_tello_transmissions(model)
    add_tello_differentials(model)
    return model


def tello_legs(
    path: str | os.PathLike | None = None, *, floating_base: bool = False, transmissions: bool = True
) -> Model:
    """Tello's legs (GRBDA ``Tello``) from ``tello_legs.urdf``, with the differentials and (default)
    the hip-clamp transmissions. The file's root link ``ground`` carries the hip clamps and has no
    inertia: with ``floating_base=True`` it becomes a massless free-flying base (nv = 16, as the
    spec's Tello-legs row counts it); by default it is fixed (nv = 10)."""
    from ..io.urdf import load_urdf

    model = load_urdf(
        grbda_urdf_path("tello_legs.urdf") if path is None else path, floating_base=floating_base
    )
    if transmissions:
        add_tello_transmissions(model)
    add_tello_differentials(model)
    return model
