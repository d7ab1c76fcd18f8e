"""Built-in robots, written in code: the GRBDA URDF+ example robots (spec §5).

Each function returns the :class:`~loopdyn.model.model.Model` that :func:`loopdyn.load_urdf` builds
from the corresponding GRBDA reference file (``robot-models/<name>.urdf``), without reading any file:
same body, joint and frame names, same joint order (depth first from the root link, siblings sorted
by joint name, as the URDF reader orders them), same placements, inertias, joint limits, couplings,
loops and ``independent`` flags.

* :func:`double_pendulum` — planar two-link pendulum, fixed base, no constraint (nv = 2).
* :func:`four_bar` — parallelogram four-bar linkage closed by a revolute loop joint: one implicit
  cluster {link1, link2, link3}, nq = 3 (spanning), nv = 1.
* :func:`mit_humanoid_leg` — one MIT Humanoid leg, fixed base: three geared transmissions (hip rz,
  rx, ry) and the knee-ankle parallel belt transmission, rotor masses 0 (nv = 5).
* :func:`mini_cheetah` — MIT Mini Cheetah: the file's own floating joint ``base_to_floating_base``
  (a free flyer from the welded root link ``base`` to ``"Floating Base"``) and 12 geared
  transmissions (nq = 19, nv = 18).

The MIT Humanoid and JVRC-1 are in :mod:`loopdyn.robots.humanoids`.

Parameter sets. ``parameters="current"`` (the default) is the reference file, i.e. GRBDA HEAD
(spec §7 pitfall 26): Mini Cheetah rotors of mass 0.055, the rz(π) hip joint rotation and abad
y-location 0.049. ``parameters="paper"`` is the model of the paper's experiments (Chignoli et al.
2024 §IX, GRBDA at the paper's commit, spec §5.1–5.2 and §7 pitfalls 12, 26, 27); the functions'
docstrings list exactly what differs. Coupling names are the files' own, including Mini Cheetah's
``*_tranmission`` spelling, in both sets.
"""

from __future__ import annotations

import numpy as np

from ..errors import InputError
from ..io.urdf import rpy_to_matrix
from ..model.joints import FreeFlyer, Revolute
from ..model.model import BODY_FRAME, Model
from ..spatial.inertia import Inertia

__all__ = ["double_pendulum", "four_bar", "list_robots", "mini_cheetah", "mit_humanoid_leg"]

EX, EY, EZ = (1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)
_O = (0.0, 0.0, 0.0)

# A joint row: (joint name, child body, parent body (None: the root link), axis, origin xyz, origin
# rpy, independent, mass, centre of mass, (ixx, ixy, ixz, iyy, iyz, izz) about the centre of mass).
# None of the reference files rotates an <inertial>, so the tensors are in the body frame.

# ----------------------------------------------------------------------------------------------
# double pendulum — numbers taken from the GRBDA reference data (robot-models/double_pendulum.urdf)
_DP_LIMITS = (-3.14, 3.14, 30.0, 1.0)  # (lower, upper, effort, velocity)
_DP_JOINTS = (
    ("joint1", "link1", None, EZ, _O, _O, True, 2.0, _O, (0.05, 0.0, 0.0, 0.03, 0.0, 0.01)),
    ("joint2", "link2", "link1", EZ, (0.1, 0.0, 0.0), _O, True, 1.0, _O, (0.01, 0.0, 0.0, 0.005, 0.0, 0.2)),
)

# ----------------------------------------------------------------------------------------------
# four-bar linkage — numbers taken from the GRBDA reference data (robot-models/four_bar.urdf)
_FB_LIMITS = (-13.14, 13.14, 30.0, 1.0)
_FB_LINK_I = (0.011253, 0.0, 0.0, 0.036203, 0.0, 0.042673)
_FB_JOINTS = (
    ("joint1", "link1", None, EZ, _O, _O, True, 3.3, _O, _FB_LINK_I),
    ("joint2", "link2", "link1", EZ, (0.5, 0.0, 0.0), _O, False, 3.3, _O, _FB_LINK_I),
    ("joint3", "link3", None, EZ, (1.0, 0.0, 0.0), _O, False, 3.3, _O, _FB_LINK_I),
)
# (name, kind, predecessor, frame origin on it, successor, frame origin on it, axis)
_FB_LOOPS = (("loop1", "revolute", "link2", (1.0, 0.0, 0.0), "link3", (0.5, 0.0, 0.0), EZ),)

# ----------------------------------------------------------------------------------------------
# MIT Humanoid leg — numbers taken from the GRBDA reference data (robot-models/mit_humanoid_leg.urdf)
_MHL_LIMITS = (-10.0, 10.0, 150.0, 100.0)
SMALL_ROTOR_Z = (1.084e-4, 0.0, 0.0, 1.084e-4, 0.0, 1.6841e-4)
SMALL_ROTOR_X = (1.6841e-4, 0.0, 0.0, 1.084e-4, 0.0, 1.084e-4)
SMALL_ROTOR_Y = (1.084e-4, 0.0, 0.0, 1.6841e-4, 0.0, 1.084e-4)
LARGE_ROTOR_Y = (3.443e-4, 0.0, 0.0, 5.548e-4, 0.0, 3.443e-4)
# The table lists the bodies in the paper's registration order (link before rotor, knee-ankle
# cluster [knee_link, knee_rotor, ankle_rotor, ankle_link]).
_MHL_JOINTS = (
    ("base_to_hipz_link", "hip_rz_link", None, EZ, (-0.00565, -0.082, -0.05735), (0.0, -0.174533, 0.0),
     True, 0.84563, (-0.064842, -3.6e-05, -0.063090),
     (0.0015373, 1.1e-06, 0.0005578, 0.0014252, 2.4e-06, 0.0012028)),
    ("base_to_hipz_rotor", "hip_rz_rotor", None, EZ, (-0.00842837, -0.082, -0.041593), (0.0, -0.174533, 0.0),
     False, 0.0, _O, SMALL_ROTOR_Z),
    ("hipz_to_hipx_link", "hip_rx_link", "hip_rz_link", EX, (-0.06435, 0.0, -0.07499), (0.0, 0.436332, 0.0),
     True, 1.20868, (0.067232, -0.013018, 0.0001831),
     (0.0017535, -6.3e-06, -0.000080, 0.003338, -1.3e-05, 0.0019927)),
    ("hipz_to_hipx_rotor", "hip_rx_rotor", "hip_rz_link", EX, (-0.0827, 0.0, -0.066436), (0.0, 0.436332, 0.0),
     False, 0.0, _O, SMALL_ROTOR_X),
    ("hipx_to_hipy_link", "hip_ry_link", "hip_rx_link", EY, (0.071, 0.0018375, 0.0), (0.0, -0.261799, 0.0),
     True, 2.64093, (0.0132054, 0.0269864, -0.096021),
     (0.0243761, 9.96e-05, 0.0006548, 0.0259015, 0.0026713, 0.0038929)),
    ("hipx_to_hipy_rotor", "hip_ry_rotor", "hip_rx_link", EY, (0.071, 0.024, 0.0), (0.0, -0.261799, 0.0),
     False, 0.0, _O, LARGE_ROTOR_Y),
    ("hipy_to_knee_link", "knee_link", "hip_ry_link", EY, (0.0, 0.0, -0.267), _O,
     True, 0.35435, (0.00528, 0.0014762, -0.13201),
     (0.003051, 0.0, 0.0000873, 0.003033, 3.93e-05, 0.0002529)),
    ("hipy_to_knee_rotor", "knee_rotor", "hip_ry_link", EY, (0.013, -0.0497, -0.0178), _O,
     False, 0.0, _O, LARGE_ROTOR_Y),
    ("hipy_to_ankle_rotor", "ankle_rotor", "hip_ry_link", EY, (0.01563, -0.0454, -0.13354), _O,
     False, 0.0, _O, SMALL_ROTOR_Y),
    ("knee_to_ankle", "ankle_link", "knee_link", EY, (0.0, 0.0, -0.2785), _O,
     True, 0.280951, (0.022623, 0.0, -0.012826),
     (0.0000842, 0.0, -0.0000488, 0.0007959, 0.0, 0.0007681)),
)  # fmt: skip
# (name, predecessor, successor, ratio): ratio · Σ q(predecessor path) = Σ q(successor path); the
# ankle rotor hangs from hip_ry_link, so q_ankle_rotor = 12 (q_knee + q_ankle)
_MHL_COUPLINGS = (
    ("hipz_transmission", "hip_rz_link", "hip_rz_rotor", 6.0),
    ("hipx_transmission", "hip_rx_link", "hip_rx_rotor", 6.0),
    ("hipy_transmission", "hip_ry_link", "hip_ry_rotor", 6.0),
    ("knee_transmission", "knee_link", "knee_rotor", 12.0),
    ("ankle_transmission", "ankle_link", "ankle_rotor", 12.0),
)

# ----------------------------------------------------------------------------------------------
# MIT Mini Cheetah — numbers taken from the GRBDA reference data (robot-models/mini_cheetah.urdf).
# The file writes some values as the doubles nearest to 11253e-6 etc. computed in floating point
# (0.011252999999999999, 3.2999999999999996e-05, ...); they are copied as written.
_MC_LIMITS = (-10.0, 10.0, 150.0, 100.0)
_MC_BASE_JOINT = "base_to_floating_base"
_MC_TORSO = ("Floating Base", 3.3, _O, (0.011252999999999999, 0.0, 0.0, 0.036203, 0.0, 0.042672999999999996))
_MC_ROTOR_MASS = 0.055
_MC_ROTOR_X = (6.3e-05, 0.0, 0.0, 3.2999999999999996e-05, 0.0, 3.2999999999999996e-05)
_MC_ROTOR_Y = (3.2999999999999996e-05, 0.0, 0.0, 6.3e-05, 0.0, 3.2999999999999996e-05)
_MC_RZ_PI = (0.0, 0.0, 3.141592653589793)
# the paper-era values (spec §5.1, §7 pitfall 26): massless rotors, abad y-location 0.05, no rz(π)
_MC_PAPER_ROTOR_MASS = 0.0
_MC_PAPER_ABAD_Y = 0.05
_MC_PAPER_HIP_RPY = _O
# One leg, the front left (FL) one: "{}" is the leg prefix, "torso" the floating base. The other legs
# negate x of the abad locations (hind legs) and mirror about the xz plane (right legs): y of the
# locations and centres of mass, ixy and iyz negated.
_MC_LEG_JOINTS = (
    ("torso_to_{}_abad_j", "{}_abad_link", "torso", EX, (0.19, 0.049, 0.0), _O,
     True, 0.54, (0.0, 0.036, 0.0), (0.000381, 5.8e-05, 4.5e-07, 0.00056, 9.499999999999999e-07, 0.000444)),
    ("torso_to_{}_abad_rotor_j", "{}_abad_rotor", "torso", EX, (0.125, 0.049, 0.0), _O,
     False, _MC_ROTOR_MASS, _O, _MC_ROTOR_X),
    ("{}_abad_to_hip_j", "{}_hip_link", "{}_abad_link", EY, (0.0, 0.062, 0.0), _MC_RZ_PI,
     True, 0.634, (0.0, 0.016, -0.02), (0.001983, 0.000245, 1.3e-05, 0.002103, 1.5e-06, 0.000408)),
    ("{}_abad_to_hip_rotor_j", "{}_hip_rotor", "{}_abad_link", EY, (0.0, 0.04, 0.0), _MC_RZ_PI,
     False, _MC_ROTOR_MASS, _O, _MC_ROTOR_Y),
    ("{}_hip_to_knee_j", "{}_knee_link", "{}_hip_link", EY, (0.0, 0.0, -0.209), _O,
     True, 0.064, (0.0, 0.0, -0.061), (6e-06, 0.0, 0.0, 0.000248, 0.0, 0.000245)),
    ("{}_hip_to_knee_rotor_j", "{}_knee_rotor", "{}_hip_link", EY, _O, _O,
     False, _MC_ROTOR_MASS, _O, _MC_ROTOR_Y),
)  # fmt: skip
_MC_LEG_COUPLINGS = (
    ("{}_abad_tranmission", "{}_abad_link", "{}_abad_rotor", 6.0),
    ("{}_hip_tranmission", "{}_hip_link", "{}_hip_rotor", 6.0),
    ("{}_knee_tranmission", "{}_knee_link", "{}_knee_rotor", 9.33),
)
# (prefix, x sign of the abad locations, y sign) in the file's order, which is also GRBDA's leg
# index order 0..3 (the paper's registration order)
_MC_LEGS = (("FR", 1.0, -1.0), ("FL", 1.0, 1.0), ("HR", -1.0, -1.0), ("HL", -1.0, 1.0))

_ROBOTS = {
    "double_pendulum": "planar two-link pendulum on a fixed base, no constraint (nv = 2)",
    "four_bar": "planar parallelogram four-bar linkage closed by a revolute loop joint (nv = 1)",
    "mit_humanoid_leg": "MIT Humanoid leg on a fixed base, 3 geared + 1 parallel-belt transmission (nv = 5)",
    "mini_cheetah": "MIT Mini Cheetah quadruped, floating base and 12 geared transmissions (nv = 18)",
}


def list_robots() -> dict[str, str]:
    """The built-in robots: ``{name: one-line description}``; ``name`` is also the function's name."""
    return dict(_ROBOTS)


# ----------------------------------------------------------------------------------------------
def in_urdf_order(rows, top=None):
    """The rows in the URDF reader's order: depth first from the root link, the children of a link
    visited in increasing order of their joint names; ``top`` is the parent of the first rows."""
    children: dict = {}
    for row in rows:
        children.setdefault(row[2], []).append(row)
    order = []
    stack = sorted(children.get(top, []), key=lambda r: r[0], reverse=True)
    while stack:
        row = stack.pop()
        order.append(row)
        stack.extend(sorted(children.get(row[1], []), key=lambda r: r[0], reverse=True))
    if len(order) != len(rows):  # pragma: no cover - the tables are trees
        raise AssertionError("the joint table is not a tree")
    return order


def make_inertia(mass, com, tensor) -> Inertia:
    ixx, ixy, ixz, iyy, iyz, izz = tensor
    return Inertia(mass, com, np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]]))


PARAMETER_SETS = ("current", "paper")


def check_parameters(parameters: str, robot: str) -> bool:
    """True for the paper-era set, False for the current one (the reference file)."""
    if parameters not in PARAMETER_SETS:
        raise InputError(f"{robot}: parameters must be one of {PARAMETER_SETS}, got {parameters!r}")
    return parameters == "paper"


def add_joints(model: Model, rows, limits, top=None, urdf_order: bool = True) -> None:
    """Add the revolute joints of ``rows`` in URDF order (``urdf_order=False``: in the table's
    order, which must list parents first), from the rows whose parent is ``top`` (``None``: the
    root link, welded to the world)."""
    lower, upper, effort, velocity = limits
    for name, body, parent, axis, xyz, rpy, independent, mass, com, tensor in (
        in_urdf_order(rows, top) if urdf_order else rows
    ):
        model.add_body(
            body,
            0 if parent is None else parent,
            Revolute(axis, lower=lower, upper=upper, velocity=velocity, effort=effort),
            (rpy_to_matrix(*rpy), np.array(xyz, dtype=float)),
            make_inertia(mass, com, tensor),
            joint_name=name,
            independent=independent,
            inertia_check="accept",  # as the reference file gives them (some break the triangle inequality)
        )


def fixed_base(name: str, root: str) -> Model:
    """A model whose root link ``root`` (massless in every reference file) is welded to the world."""
    model = Model(name)
    model.add_frame(root, 0, None, kind=BODY_FRAME)
    return model


def double_pendulum() -> Model:
    """GRBDA's ``double_pendulum.urdf``: two links on z axes, fixed base ``base_link``; nq = nv = 2."""
    model = fixed_base("double_pendulum", "base_link")
    add_joints(model, _DP_JOINTS, _DP_LIMITS)
    return model


def four_bar() -> Model:
    """GRBDA's ``four_bar.urdf``: a parallelogram (ground 1.0, crank 0.5, coupler 1.0, rocker 0.5)
    closed by the revolute loop ``loop1``; joint1 independent; nq = 3, nv = 1."""
    model = fixed_base("four_bar", "base_link")
    add_joints(model, _FB_JOINTS, _FB_LIMITS)
    for name, kind, pred, pred_xyz, succ, succ_xyz, axis in _FB_LOOPS:
        model.add_loop(
            name,
            pred,
            succ,
            kind,
            predecessor_placement=(np.eye(3), np.array(pred_xyz)),
            successor_placement=(np.eye(3), np.array(succ_xyz)),
            axis=axis,
        )
    model.clusters()
    return model


def mit_humanoid_leg(parameters: str = "current") -> Model:
    """GRBDA's ``mit_humanoid_leg.urdf``: fixed base ``base``, 10 bodies in 4 clusters (hip rz, rx,
    ry geared transmissions and the knee-ankle parallel belt), massless rotors; nq = nv = 5.

    ``parameters="current"`` (default): the reference file, bodies in the URDF reader's order.
    ``parameters="paper"`` reproduces the paper's leg (Fig. 14). The numbers are the same: the
    leg's rotors are massless in both (spec §5.2, §7 pitfall 26), and the one formula that changed,
    the belt cross-coupling ratio (PAPER N2·b1, HEAD N2·b21, pitfall 27), gives 12 either way
    (N2 = 6, b1 = b21 = 2). What differs is the body registration order (pitfalls 8, 12): the paper
    registers [hip_rz_link, hip_rz_rotor, hip_rx_link, hip_rx_rotor, hip_ry_link, hip_ry_rotor,
    knee_link, knee_rotor, ankle_rotor, ankle_link] (HEAD's knee-ankle cluster order is
    [ankle_rotor, knee_link, knee_rotor, ankle_link], the file's is [ankle_rotor, knee_link,
    ankle_link, knee_rotor]). The independent coordinates are [hip_rz, hip_rx, hip_ry, knee, ankle]
    in both; the model is named ``mit_humanoid_leg_paper``."""
    paper = check_parameters(parameters, "mit_humanoid_leg")
    model = fixed_base("mit_humanoid_leg_paper" if paper else "mit_humanoid_leg", "base")
    add_joints(model, _MHL_JOINTS, _MHL_LIMITS, urdf_order=not paper)
    for name, pred, succ, ratio in _MHL_COUPLINGS:
        model.add_coupling(name, pred, succ, ratio)
    model.clusters()
    return model


def mirrored_row(row, key: str, sy: float, *, root: str | None = None, sx: float = 1.0,
                 mirror_rpy: bool = False, mass: float | None = None):  # fmt: skip
    """One joint row for the side or prefix ``key`` from a template row: names formatted with
    ``key``, the template's parent ``"torso"`` replaced by ``root``, y coordinates multiplied by
    ``sy`` (a reflection through the xz plane: the inertia's xy and yz products change sign too),
    the x coordinate of joints on ``root`` by ``sx``, the rpy roll and yaw by ``sy`` if
    ``mirror_rpy``; ``mass`` replaces the template's mass when given."""
    name, body, parent, axis, xyz, rpy, independent, m, com, tensor = row
    ixx, ixy, ixz, iyy, iyz, izz = tensor
    on_root = parent == "torso"
    return (
        name.format(key),
        body.format(key),
        root if on_root else parent.format(key),
        axis,
        (sx * xyz[0] if on_root else xyz[0], sy * xyz[1], xyz[2]),
        (sy * rpy[0], rpy[1], sy * rpy[2]) if mirror_rpy else rpy,
        independent,
        m if mass is None else mass,
        (com[0], sy * com[1], com[2]),
        (ixx, sy * ixy, ixz, iyy, sy * iyz, izz),
    )


def _mirror_leg(prefix: str, sx: float, sy: float, paper: bool = False):
    """The rows of one Mini Cheetah leg from the FL template (``paper``: the paper-era values)."""
    rows = []
    for name, body, parent, axis, xyz, rpy, independent, mass, com, tensor in _MC_LEG_JOINTS:
        ixx, ixy, ixz, iyy, iyz, izz = tensor
        if paper:
            if not independent:
                mass = _MC_PAPER_ROTOR_MASS
            if rpy == _MC_RZ_PI:
                rpy = _MC_PAPER_HIP_RPY
            if name == "torso_to_{}_abad_j":
                xyz = (xyz[0], _MC_PAPER_ABAD_Y, xyz[2])
        row = (name, body, parent, axis, xyz, rpy, independent, mass, com, tensor)
        rows.append(mirrored_row(row, prefix, sy, root=_MC_TORSO[0], sx=sx))
    return rows


def mini_cheetah(parameters: str = "current") -> Model:
    """GRBDA's ``mini_cheetah.urdf``: root link ``base`` welded to the world, the free flyer
    ``base_to_floating_base`` to the torso ``"Floating Base"``, four legs (FL, FR, HL, HR in joint
    order) of three geared transmissions each; 25 bodies, 13 clusters, nq = 19, nv = 18.

    ``parameters="current"`` (default): the reference file (GRBDA HEAD): rotor mass 0.055, hip
    joints (link and rotor) rotated by rz(π), abad joints at (±0.19, ±0.049, 0).

    ``parameters="paper"`` reproduces the paper's Mini Cheetah (spec §5.1, §7 pitfalls 12, 26),
    named ``mini_cheetah_paper``:

    * the 12 rotors are massless (mass 0 instead of 0.055; their rotational inertia
      diag(33, 33, 63)·1e-6 about the spin axis is kept);
    * no rz(π) rotation in the hip link and hip rotor joint placements (identity instead);
    * the abad *link* joints at y = ±0.05 instead of ±0.049. The spec states the change for the
      abad location only: whether the paper's abad *rotor* location (±0.125, ±0.049, 0) also had
      0.05 cannot be established from it, so the rotor keeps 0.049;
    * bodies registered in the paper's order: legs FR, FL, HR, HL (GRBDA leg indices 0..3), each
      [abad link, abad rotor, hip link, hip rotor, knee link, knee rotor], so the independent
      velocities are the free flyer's then FR, FL, HR, HL (abad, hip, knee).

    Everything else (names, torso, link inertias, gear ratios 6, 6, 9.33) is the same.
    """
    paper = check_parameters(parameters, "mini_cheetah")
    model = fixed_base("mini_cheetah_paper" if paper else "mini_cheetah", "base")
    torso, mass, com, tensor = _MC_TORSO
    model.add_body(torso, 0, FreeFlyer(), None, make_inertia(mass, com, tensor), joint_name=_MC_BASE_JOINT)
    rows = [row for prefix, sx, sy in _MC_LEGS for row in _mirror_leg(prefix, sx, sy, paper)]
    add_joints(model, rows, _MC_LIMITS, torso, urdf_order=not paper)
    for prefix, _, _ in _MC_LEGS:
        for name, pred, succ, ratio in _MC_LEG_COUPLINGS:
            model.add_coupling(name.format(prefix), pred.format(prefix), succ.format(prefix), ratio)
    model.clusters()
    return model
