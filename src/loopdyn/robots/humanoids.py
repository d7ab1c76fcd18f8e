"""Built-in humanoids, written in code: the MIT Humanoid and the geared JVRC-1 (spec §5.2, §5.4).

As in :mod:`loopdyn.robots.builtin`, each function returns, by default, the model that
:func:`loopdyn.load_urdf` builds from the GRBDA reference file (``robot-models/<file>.urdf``)
without reading any file: same body, joint and frame names, same joint order (depth first from the
root link, siblings sorted by joint name), same placements, inertias, limits, couplings and
``independent`` flags.

* :func:`mit_humanoid` — ``mit_humanoid.urdf``: floating base, per leg three geared transmissions
  (hip rz, rx, ry) and the knee-ankle parallel belt transmission, per arm four geared transmissions
  (shoulder ry, rx, rz, elbow); 37 bodies, 17 clusters, nq = 25, nv = 24.
* :func:`jvrc1` — JVRC-1 with every joint geared (the paper's, the default: 65 bodies) or as
  ``jvrc1_humanoid.urdf`` (``parameters="current"``: 58 bodies, 25 geared joints); 33 clusters,
  nq = 39, nv = 38.

``parameters="paper"`` gives the model of the paper's experiments (Chignoli et al. 2024 §IX); each
docstring lists exactly what differs from the reference file.
"""

from __future__ import annotations

from ..model.joints import FreeFlyer
from ..model.model import Model
from .builtin import (
    EX,
    EY,
    EZ,
    LARGE_ROTOR_Y,
    SMALL_ROTOR_X,
    SMALL_ROTOR_Y,
    SMALL_ROTOR_Z,
    add_joints,
    check_parameters,
    fixed_base,
    make_inertia,
    mirrored_row,
)

__all__ = ["jvrc1", "mit_humanoid"]

_O = (0.0, 0.0, 0.0)
_LIMITS = (-10.0, 10.0, 150.0, 100.0)  # (lower, upper, effort, velocity) of every revolute joint

# ----------------------------------------------------------------------------------------------
# MIT Humanoid — numbers taken from the GRBDA reference data (robot-models/mit_humanoid.urdf).
_MH_ROOT = "ground"
_MH_BASE_JOINT = "world_to_base"
_MH_TORSO = (
    "Floating Base",
    8.52,
    (0.009896, 0.004771, 0.100522),
    (0.172699, 0.001419, 0.004023, 0.105949, -0.001672, 0.091906),
)
_MH_SMALL_ROTOR_MASS = 0.05
_MH_LARGE_ROTOR_MASS = 0.1
_SMALL, _LARGE = "small rotor", "large rotor"  # placeholders for the rotor masses of a parameter set
# Rows as in builtin (joint, child, parent, axis, xyz, rpy, independent, mass, com, inertia about the
# com) for the RIGHT side: "{}" is the side, "torso" the floating base. The left side mirrors the
# right one about the xz plane: y of the placements and centres of mass, roll and yaw, ixy and iyz
# negated. Each table lists the bodies in the paper's registration order (link before rotor; the
# knee-ankle cluster [knee_link, knee_rotor, ankle_rotor, ankle_link]).
_MH_LEG = (
    ("base_to_{}_hipz_link", "{}_hip_rz_link", "torso", EZ,
     (-0.00565, -0.082, -0.05735), (0.0, -0.174533, 0.0), True, 0.84563, (-0.064842, 3.6e-05, -0.063090),
     (0.0015373, -1.1e-06, 0.0005578, 0.0014252, -2.4e-06, 0.0012028)),
    ("{}_base_to_hipz_rotor", "{}_hip_rz_rotor", "torso", EZ, (-0.00842837, -0.082, -0.041593),
     (0.0, -0.174533, 0.0), False, _SMALL, _O, SMALL_ROTOR_Z),
    ("{}_hipz_to_hipx_link", "{}_hip_rx_link", "{}_hip_rz_link", EX,
     (-0.06435, 0.0, -0.07499), (0.0, 0.436332, 0.0), True, 1.20868, (0.067232, 0.013018, 0.0001831),
     (0.0017535, 6.3e-06, -0.000080, 0.003338, 1.3e-05, 0.0019927)),
    ("{}_hipz_to_hipx_rotor", "{}_hip_rx_rotor", "{}_hip_rz_link", EX, (-0.0827, 0.0, -0.066436),
     (0.0, 0.436332, 0.0), False, _SMALL, _O, SMALL_ROTOR_X),
    ("{}_hipx_to_hipy_link", "{}_hip_ry_link", "{}_hip_rx_link", EY,
     (0.071, 0.0018375, 0.0), (0.0, -0.261799, 0.0), True, 2.64093, (0.0132054, -0.0269864, -0.096021),
     (0.0243761, -9.96e-05, 0.0006548, 0.0259015, -0.0026713, 0.0038929)),
    ("{}_hipx_to_hipy_rotor", "{}_hip_ry_rotor", "{}_hip_rx_link", EY,
     (0.071, 0.024, 0.0), (0.0, -0.261799, 0.0), False, _LARGE, _O, LARGE_ROTOR_Y),
    ("{}_hipy_to_knee_link", "{}_knee_link", "{}_hip_ry_link", EY, (0.0, 0.0, -0.267), _O,
     True, 0.35435, (0.00528, -0.0014762, -0.13201),
     (0.003051, 0.0, 0.0000873, 0.003033, -3.93e-05, 0.0002529)),
    ("{}_hipy_to_knee_rotor", "{}_knee_rotor", "{}_hip_ry_link", EY, (0.013, -0.0497, -0.0178), _O,
     False, _LARGE, _O, LARGE_ROTOR_Y),
    ("{}_hipy_to_ankle_rotor", "{}_ankle_rotor", "{}_hip_ry_link", EY, (0.01563, -0.0454, -0.13354), _O,
     False, _SMALL, _O, SMALL_ROTOR_Y),
    ("{}_knee_to_ankle", "{}_ankle_link", "{}_knee_link", EY, (0.0, 0.0, -0.2785), _O,
     True, 0.280951, (0.022623, 0.0, -0.012826),
     (0.0000842, 0.0, -0.0000488, 0.0007959, 0.0, 0.0007681)),
)  # fmt: skip
_MH_ARM = (
    ("base_to_{}_shouldery_link", "{}_shoulder_ry_link", "torso", EY, (0.01346, -0.17608, 0.24657), _O,
     True, 0.788506, (0.009265, -0.052623, -0.0001249),
     (0.0013678, -2.66e-05, 0.0000021, 0.0007392, 1.2e-06, 0.000884)),
    ("base_to_{}_shouldery_rotor", "{}_shoulder_ry_rotor", "torso", EY, (0.01346, -0.16, 0.24657), _O,
     False, _SMALL, _O, SMALL_ROTOR_Y),
    ("{}_shouldery_shoulderx_link", "{}_shoulder_rx_link", "{}_shoulder_ry_link", EX, (0.0, -0.0575, 0.0), _O,
     True, 0.80125, (0.0006041, -0.0001221, -0.082361),
     (0.0011524, -7e-07, 0.0000396, 0.0011921, -1.4e-06, 0.0012386)),
    ("{}_shouldery_to_shoulderx_rotor", "{}_shoulder_rx_rotor", "{}_shoulder_ry_link", EX,
     (0.0, -0.0575, 0.0), _O, False, _SMALL, _O, SMALL_ROTOR_X),
    ("{}_shoulderx_shoulderz_link", "{}_shoulder_rz_link", "{}_shoulder_rx_link", EZ,
     (0.0, 0.0, -0.10250), _O, True, 0.905588, (0.0001703, 0.016797, -0.060),
     (0.0012713, -1e-06, -0.000008, 0.0017477, 2.25e-05, 0.0008191)),
    ("{}_shoulderx_to_shoulderz_rotor", "{}_shoulder_rz_rotor", "{}_shoulder_rx_link", EZ,
     (0.0, 0.0, -0.10250), _O, False, _SMALL, _O, SMALL_ROTOR_Z),
    ("{}_shoulderz_elbow_link", "{}_elbow_link", "{}_shoulder_rz_link", EY, (0.0, 0.0, -0.1455), _O,
     True, 0.34839, (-0.0059578, -0.000111, -0.0426735),
     (0.001570, -2e-07, 0.0000335, 0.0016167, -3e-06, 0.0000619)),
    ("{}_shoulderz_to_elbow_rotor", "{}_elbow_rotor", "{}_shoulder_rz_link", EY, (0.0, 0.0325, -0.06), _O,
     False, _SMALL, _O, SMALL_ROTOR_Y),
)  # fmt: skip
# (name, predecessor, successor, ratio); the ankle rotor hangs from hip_ry_link, so the ankle
# coupling reads q_ankle_rotor = 12 (q_knee + q_ankle) (spec §5.2: N 6, belts 2 and 1)
_MH_LEG_COUPLINGS = (
    ("{}_hipz_transmission", "{}_hip_rz_link", "{}_hip_rz_rotor", 6.0),
    ("{}_hipx_transmission", "{}_hip_rx_link", "{}_hip_rx_rotor", 6.0),
    ("{}_hipy_transmission", "{}_hip_ry_link", "{}_hip_ry_rotor", 6.0),
    ("{}_knee_transmission", "{}_knee_link", "{}_knee_rotor", 12.0),
    ("{}_ankle_transmission", "{}_ankle_link", "{}_ankle_rotor", 12.0),
)
_MH_ARM_COUPLINGS = (
    ("{}_shouldery_transmission", "{}_shoulder_ry_link", "{}_shoulder_ry_rotor", 6.0),
    ("{}_shoulderx_transmission", "{}_shoulder_rx_link", "{}_shoulder_rx_rotor", 6.0),
    ("{}_shoulderz_transmission", "{}_shoulder_rz_link", "{}_shoulder_rz_rotor", 6.0),
    ("{}_elbow_transmission", "{}_elbow_link", "{}_elbow_rotor", 9.0),
)
_MH_SIDES = (("right", 1.0), ("left", -1.0))  # (side, y sign relative to the right-side tables)


def _mh_rows(table, side: str, sy: float, rotor_mass: dict):
    return [
        mirrored_row(row, side, sy, root=_MH_TORSO[0], mirror_rpy=True, mass=rotor_mass.get(row[7], row[7]))
        for row in table
    ]


def mit_humanoid(parameters: str = "current") -> Model:
    """GRBDA's ``mit_humanoid.urdf``: root link ``ground`` welded to the world, the free flyer
    ``world_to_base`` to the torso ``"Floating Base"`` (8.52 kg), two legs (hip rz, rx, ry geared,
    N = 6; knee-ankle parallel belt, ``q_knee_rotor = 12 q_knee``, ``q_ankle_rotor = 12 (q_knee +
    q_ankle)``) and two arms (shoulder ry, rx, rz, N = 6; elbow, N = 9); small rotors 0.05 kg, large
    rotors (hip ry, knee) 0.1 kg; 37 bodies, 17 clusters, nq = 25, nv = 24.

    ``parameters="current"`` (default): the reference file (GRBDA HEAD), bodies in the URDF
    reader's order (depth first, siblings sorted by joint name: the left leg and arm, then the
    right ones, the two hip rz rotors last).

    ``parameters="paper"`` reproduces the paper's 24-DoF MIT Humanoid (spec §5.2, §7 pitfalls 8,
    12, 26, 27), named ``mit_humanoid_paper``:

    * the 18 rotors are massless (mass 0 instead of 0.05 for the small and 0.1 for the large
      rotors; their rotational inertias are kept);
    * bodies registered in the paper's order: the torso, the legs, then the arms, each limb's
      clusters from the torso outwards with [link, rotor] per geared cluster and [knee_link,
      knee_rotor, ankle_rotor, ankle_link] for the knee-ankle cluster. Right before left, as GRBDA's
      leg indices (right = 0, left = 1); the spec gives no index for the arms, so right before left
      for them is assumed, not documented.

    The belt cross-coupling ratio changed after the paper (PAPER N2·b1, HEAD N2·b21, pitfall 27),
    but N2 = 6 and b1 = b21 = 2 here, so both give 12: the coupling ratios (6, 6, 6, 12, 12; 6, 6, 6,
    9) are the same in both sets, as are all names, placements and link inertias.
    """
    paper = check_parameters(parameters, "mit_humanoid")
    rotor_mass = {
        _SMALL: 0.0 if paper else _MH_SMALL_ROTOR_MASS,
        _LARGE: 0.0 if paper else _MH_LARGE_ROTOR_MASS,
    }
    model = fixed_base("mit_humanoid_paper" if paper else "mit_humanoid", _MH_ROOT)
    torso, mass, com, tensor = _MH_TORSO
    model.add_body(torso, 0, FreeFlyer(), None, make_inertia(mass, com, tensor), joint_name=_MH_BASE_JOINT)
    rows = [
        row
        for table in (_MH_LEG, _MH_ARM)
        for side, sy in _MH_SIDES
        for row in _mh_rows(table, side, sy, rotor_mass)
    ]
    add_joints(model, rows, _LIMITS, torso, urdf_order=not paper)
    for table in (_MH_LEG_COUPLINGS, _MH_ARM_COUPLINGS):  # the file's order: per joint, right then left
        for name, pred, succ, ratio in table:
            for side, _ in _MH_SIDES:
                model.add_coupling(name.format(side), pred.format(side), succ.format(side), ratio)
    model.clusters()
    return model


# ----------------------------------------------------------------------------------------------
# JVRC-1 — numbers taken from the GRBDA reference data (robot-models/jvrc1_humanoid.urdf). No joint
# or inertial of the file is rotated and every product of inertia is zero, so a row gives the
# principal moments. The two sides are written out: the file is not an exact mirror image (the
# right hip pitch joint sits at z = -0.087, the left one at z = 0, and the round-off terms differ).
_JV_ROOT = "base"
_JV_BASE_JOINT = "base_to_pelvis"
_JV_PELVIS = ("pelvis", 10.0, (-0.01, 0.0, 0.034), (0.089583, 0.089583, 0.1125))
_JV_ROTOR_MASS = 0.07
_JV_ROTOR_I = (2e-05, 2e-05, 5e-05)  # the same tensor whatever the rotor's axis (spec §5.4)
_JV_RATIO = 6.0
_I196 = (0.00196, 0.00196, 0.00196)
_I064 = (0.00064, 0.00064, 0.00064)
_I_THIGH = (0.031925, 0.034525, 0.00865)
# (joint, child, parent, axis, xyz, mass, com, (ixx, iyy, izz), has a rotor in the file), in the
# file's order; every joint of the paper's model has a rotor.
_JV_JOINTS = (
    ("pelvis-to-waist-yaw", "waist-yaw", "pelvis", EZ, (0.0, 0.0, 0.192),
     1.0, (0.0, 0.0, -0.07), (0.00173, 0.00173, 0.0032), True),
    ("waist-yaw-to-waist-pitch", "waist-pitch", "waist-yaw", EY, (0.0, 0.0, -1.11e-16),
     1.0, _O, (0.002425, 0.002425, 0.002425), True),
    ("waist-pitch-to-waist-roll", "waist-roll", "waist-pitch", EX, (0.0, 0.0, -1.11e-16),
     10.0, (0.02, 0.0, 0.24), (0.157083, 0.101083, 0.1367), True),
    ("waist-roll-to-neck-yaw", "neck-yaw", "waist-roll", EZ, (-0.003, 0.0, 0.453),
     0.5, (0.0, 0.0, -0.05), (0.000729167, 0.000729167, 0.000625), False),
    ("neck-yaw-to-neck-roll", "neck-roll", "neck-yaw", EX, (8.24e-18, 0.0, 2.22e-16),
     0.5, _O, (0.0005, 0.0005, 0.0005), False),
    ("neck-roll-to-neck-pitch", "neck-pitch", "neck-roll", EY, (8.24e-18, 0.0, 2.22e-16),
     2.0, (0.01, 0.0, 0.11), (0.00968, 0.00968, 0.00968), False),
    # left leg
    ("pelvis-to-left-hip-pitch", "left-hip-pitch", "pelvis", EY, (0.0, 0.096, 0.0), 1.0, _O, _I196, True),
    ("left-hip-pitch-to-hip-roll", "left-hip-roll", "left-hip-pitch", EX, (0.0, -2.77e-17, 0.0),
     1.0, _O, _I196, True),
    ("left-hip-roll-to-hip-yaw", "left-hip-yaw", "left-hip-roll", EZ, (0.0, -2.77e-17, 0.0),
     3.0, (0.01, 0.0, -0.22), _I_THIGH, True),
    ("left-hip-yaw-to-knee", "left-knee", "left-hip-yaw", EY, (-0.02, -2.77e-17, -0.389),
     3.0, (0.04, 0.0, -0.16), _I_THIGH, True),
    ("left-knee-to-ankle-roll", "left-ankle-roll", "left-knee", EX, (0.04, 1.52e-16, -0.357),
     1.0, _O, _I064, True),
    ("left-ankle-roll-to-ankle-pitch", "left-ankle-pitch", "left-ankle-roll", EY,
     (-4.86e-17, 3.61e-16, -2.22e-16), 1.5, (0.03, 0.0, -0.07), (0.001417, 0.005617, 0.006217), True),
    # right leg
    ("pelvis-to-right-hip-pitch", "right-hip-pitch", "pelvis", EY, (0.0, -0.096, -0.087),
     1.0, _O, _I196, True),
    ("right-hip-pitch-to-hip-roll", "right-hip-roll", "right-hip-pitch", EX, (0.0, 2.77e-17, 0.0),
     1.0, _O, _I196, True),
    ("right-hip-roll-to-hip-yaw", "right-hip-yaw", "right-hip-roll", EZ, (0.0, 2.77e-17, 0.0),
     3.0, (0.01, 0.0, -0.22), _I_THIGH, True),
    ("right-hip-yaw-to-knee", "right-knee", "right-hip-yaw", EY, (-0.02, 2.77e-17, -0.389),
     3.0, (0.04, 0.0, -0.16), _I_THIGH, True),
    ("right-knee-to-ankle-roll", "right-ankle-roll", "right-knee", EX, (0.04, 1.11e-16, -0.357),
     1.0, _O, _I064, True),
    ("right-ankle-roll-to-ankle-pitch", "right-ankle-pitch", "right-ankle-roll", EY,
     (-1.734e-17, -4.44e-16, -1.11e-16), 1.5, (0.03, 0.0, -0.07), (0.001417, 0.005617, 0.006217), True),
    # left arm
    ("waist-roll-to-left-shoulder-pitch", "left-shoulder-pitch", "waist-roll", EY, (0.0, 0.24, 0.33),
     1.0, _O, _I196, True),
    ("left-shoulder-pitch-to-shoulder-roll", "left-shoulder-roll", "left-shoulder-pitch", EX,
     (0.0, 2.78e-17, -5.55e-16), 1.0, _O, _I196, True),
    ("left-shoulder-roll-to-shoulder-yaw", "left-shoulder-yaw", "left-shoulder-roll", EZ,
     (0.0, 2.78e-17, -5.55e-16), 2.0, (-0.01, 0.0, -0.19), (0.01365, 0.0146, 0.00635), True),
    ("left-shoulder-yaw-to-elbow-pitch", "left-elbow-pitch", "left-shoulder-yaw", EY,
     (0.004, -2.78e-17, -0.305), 1.0, (-0.02, 0.0, -0.1), (0.010675, 0.010675, 0.0027), True),
    ("left-elbow-pitch-to-elbow-yaw", "left-elbow-yaw", "left-elbow-pitch", EZ, (-0.004, 3.89e-16, -0.239),
     1.0, _O, _I064, True),
    ("left-elbow-yaw-to-wrist-roll", "left-wrist-roll", "left-elbow-yaw", EX, (0.0, -2.78e-16, -1.80e-16),
     0.5, _O, (0.00032, 0.00032, 0.00032), False),
    ("left-wrist-roll-to-wrist-yaw", "left-wrist-yaw", "left-wrist-roll", EZ, (0.0, -2.78e-16, -1.80e-16),
     0.5, (0.0, -0.01, -0.06), (0.0004625, 0.0007625, 0.0004625), False),
    # right arm
    ("waist-roll-to-right-shoulder-pitch", "right-shoulder-pitch", "waist-roll", EY, (0.0, -0.24, 0.33),
     1.0, _O, _I196, True),
    ("right-shoulder-pitch-to-shoulder-roll", "right-shoulder-roll", "right-shoulder-pitch", EX,
     (0.0, -2.78e-17, -7.77e-16), 1.0, _O, _I196, True),
    ("right-shoulder-roll-to-shoulder-yaw", "right-shoulder-yaw", "right-shoulder-roll", EZ,
     (0.0, -2.78e-17, -7.77e-16), 2.0, (-0.01, 0.0, -0.19), (0.01365, 0.0146, 0.00635), True),
    ("right-shoulder-yaw-to-elbow-pitch", "right-elbow-pitch", "right-shoulder-yaw", EY,
     (0.004, 2.78e-17, -0.305), 1.0, (-0.02, 0.0, -0.1), (0.010675, 0.010675, 0.0027), True),
    ("right-elbow-pitch-to-elbow-yaw", "right-elbow-yaw", "right-elbow-pitch", EZ, (-0.004, -5e-16, -0.239),
     1.0, _O, _I064, True),
    ("right-elbow-yaw-to-wrist-roll", "right-wrist-roll", "right-elbow-yaw", EX, (0.0, 2.78e-16, -1.80e-16),
     0.5, _O, (0.00032, 0.00032, 0.00032), False),
    ("right-wrist-roll-to-wrist-yaw", "right-wrist-yaw", "right-wrist-roll", EZ, (0.0, 2.78e-16, -1.80e-16),
     0.5, (0.0, 0.01, -0.06), (0.0004625, 0.0007625, 0.0004625), False),
)  # fmt: skip


def _diagonal(moments):
    ixx, iyy, izz = moments
    return (ixx, 0.0, 0.0, iyy, 0.0, izz)


def jvrc1(parameters: str = "paper") -> Model:
    """JVRC-1 with every joint geared (the paper's robot) or as GRBDA's ``jvrc1_humanoid.urdf``: root
    link ``base`` welded to the world, the free flyer
    ``base_to_pelvis`` to the pelvis (10 kg), waist yaw-pitch-roll, neck yaw-roll-pitch, per leg
    hip pitch-roll-yaw, knee, ankle roll-pitch, per arm shoulder pitch-roll-yaw, elbow pitch-yaw,
    wrist roll-yaw (32 revolute joints); 33 clusters, nq = 39, nv = 38.

    Unlike the other robots, the default is the paper's parameter set: the reference file gears only
    25 of the 32 joints, while the paper's JVRC-1 — the robot the name stands for in the benchmarks —
    gears every joint.

    ``parameters="current"``: the reference file. Its geared joints (N = 6) have a rotor
    ``<link>-rotor`` of mass 0.07 and inertia diag(2e-5, 2e-5, 5e-5), at the link joint's frame on
    the link's parent, turning about the same axis, coupled by ``<link>-transmission``. The file
    gears 25 of the 32 joints: the rotors of the neck (yaw, roll, pitch) and of both wrists (roll,
    yaw) are commented out. So 58 bodies (61.75 kg), 25 couplings.

    ``parameters="paper"`` (default): the paper's JVRC-1 "modified so every joint has a geared transmission"
    (spec §5.4, §6.1, the §5 table: 65 bodies, 33 clusters, nv = 38), named ``jvrc1_paper``: the 7
    missing rotors are added exactly as the file's other rotors (spec §5.4: N = 6 everywhere, rotor
    m 0.07, Ī = diag(2e-5, 2e-5, 5e-5) for every axis, rotor frame = link joint frame), with the
    names of the file's commented-out entries (``neck-yaw-rotor``, ``neck-yaw-transmission``, ...;
    joints ``<link joint>-rotor``); 65 bodies (62.24 kg), 32 couplings. No other paper-era
    difference is documented for JVRC-1 (§7 pitfall 26 does not list it), so every other number is
    the file's; and since the spec does not give the paper's registration order for this robot, the
    bodies are in the URDF reader's order (as if the 7 rotors were in the file).
    """
    paper = check_parameters(parameters, "jvrc1")
    model = fixed_base("jvrc1_paper" if paper else "jvrc1", _JV_ROOT)
    pelvis, mass, com, moments = _JV_PELVIS
    model.add_body(
        pelvis, 0, FreeFlyer(), None, make_inertia(mass, com, _diagonal(moments)), joint_name=_JV_BASE_JOINT
    )
    rows, couplings = [], []
    for joint, body, parent, axis, xyz, mass, com, moments, geared in _JV_JOINTS:
        rows.append((joint, body, parent, axis, xyz, _O, True, mass, com, _diagonal(moments)))
        if geared or paper:
            rotor = f"{body}-rotor"
            rotor_inertia = _diagonal(_JV_ROTOR_I)
            rows.append(
                (f"{joint}-rotor", rotor, parent, axis, xyz, _O, False, _JV_ROTOR_MASS, _O, rotor_inertia)
            )
            couplings.append((f"{body}-transmission", body, rotor))
    add_joints(model, rows, _LIMITS, pelvis)
    for name, pred, succ in couplings:
        model.add_coupling(name, pred, succ, _JV_RATIO)
    model.clusters()
    return model
