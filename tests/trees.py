"""Random kinematic trees built identically in loopdyn and in Pinocchio, and random states.

A tree is first drawn as a :class:`TreeRecipe` (plain data: bodies, fixed links, frames), then built
by :func:`build_loopdyn` and, when Pinocchio is installed, by :func:`build_pinocchio`. The two models
have the same joints in the same order, so their q, v, tau vectors compare element by element.

Pinocchio is used by the tests only, as an independent oracle; this module imports it lazily so the
identity tests (which do not need it) run without it.

Also here: loading the example-robot-data URDFs in both libraries, matching frames between the two
models, a reference configuration integrator and small geometry helpers shared by the tests.
"""

from __future__ import annotations

import functools
import os
import sysconfig
from dataclasses import dataclass, field

import numpy as np

import loopdyn

# ----------------------------------------------------------------------------------------------
# small geometry helpers


def quat_to_matrix(q) -> np.ndarray:
    """Rotation matrix of the unit quaternion ``q = (x, y, z, w)``."""
    x, y, z, w = q
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def quat_multiply(a, b) -> np.ndarray:
    """Hamilton product ``a ⊗ b`` of two (x, y, z, w) quaternions."""
    ax, ay, az, aw = a
    bx, by, bz, bw = b
    return np.array(
        [
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw,
            aw * bw - ax * bx - ay * by - az * bz,
        ]
    )


def quat_exp(w) -> np.ndarray:
    """Unit quaternion (x, y, z, w) of the rotation vector ``w``."""
    w = np.asarray(w, float)
    th = float(np.linalg.norm(w))
    if th < 1e-12:
        return np.array([0.5 * w[0], 0.5 * w[1], 0.5 * w[2], 1.0]) / np.sqrt(1.0 + 0.25 * th * th)
    s = np.sin(0.5 * th) / th
    return np.array([s * w[0], s * w[1], s * w[2], np.cos(0.5 * th)])


def random_quaternion(rng) -> np.ndarray:
    """Uniformly distributed unit quaternion (x, y, z, w), with w >= 0."""
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    return q if q[3] >= 0 else -q


def random_rotation(rng) -> np.ndarray:
    return quat_to_matrix(random_quaternion(rng))


def skew(x) -> np.ndarray:
    return np.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])


def homogeneous(R, p) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3] = R
    T[:3, 3] = p
    return T


# ----------------------------------------------------------------------------------------------
# recipes

#: Joint kinds a random tree draws from (the free flyer is only used as the root of floating trees).
JOINT_KINDS = (
    "revolute",  # random unit axis
    "revolute_aligned",  # ±x, ±y or ±z (Pinocchio: RX/RY/RZ for the positive ones)
    "prismatic",
    "prismatic_aligned",
    "unbounded",
    "unbounded_aligned",
    "spherical",
)

AXES_ALIGNED = (
    (1.0, 0.0, 0.0),
    (0.0, 1.0, 0.0),
    (0.0, 0.0, 1.0),
    (-1.0, 0.0, 0.0),
    (0.0, -1.0, 0.0),
    (0.0, 0.0, -1.0),
)


@dataclass
class LinkSpec:
    """One link of the recipe: moving (``kind`` a joint kind) or fixed (``kind == "fixed"``)."""

    name: str
    joint_name: str
    parent: int  # index into TreeRecipe.links, -1 = universe
    kind: str
    axis: np.ndarray | None
    R: np.ndarray  # joint placement in the parent link's frame
    p: np.ndarray
    mass: float
    com: np.ndarray
    I_com: np.ndarray


@dataclass
class FrameSpec:
    name: str
    link: int  # index into TreeRecipe.links, -1 = universe
    R: np.ndarray
    p: np.ndarray


@dataclass
class TreeRecipe:
    name: str
    gravity: np.ndarray
    links: list[LinkSpec] = field(default_factory=list)
    frames: list[FrameSpec] = field(default_factory=list)


def random_inertia(rng) -> tuple[float, np.ndarray, np.ndarray]:
    """A physically valid (mass, com, rotational inertia about the com).

    The rotational inertia comes from random second moments ``s_k >= 0`` of the mass distribution
    along principal axes: ``I_x = s_y + s_z`` etc., which satisfies the triangle inequality
    ``I_x <= I_y + I_z`` by construction; then it is rotated by a random rotation.
    """
    mass = float(rng.uniform(0.1, 5.0))
    com = rng.uniform(-0.3, 0.3, size=3)
    s = mass * rng.uniform(0.002, 0.05, size=3)
    if rng.random() < 0.1:
        s[rng.integers(3)] = 0.0  # a flat body: triangle inequality tight on one side
    principal = np.array([s[1] + s[2], s[0] + s[2], s[0] + s[1]])
    Rr = random_rotation(rng)
    I_com = Rr @ np.diag(principal) @ Rr.T
    return mass, com, 0.5 * (I_com + I_com.T)


def _random_placement(rng) -> tuple[np.ndarray, np.ndarray]:
    u = rng.random()
    p = rng.uniform(-0.5, 0.5, size=3)
    if u < 0.15:
        return np.eye(3), p  # axis-aligned placement
    if u < 0.2:
        return np.eye(3), np.zeros(3)  # identity placement
    return random_rotation(rng), p


def random_recipe(
    rng,
    n_bodies: int,
    *,
    floating: bool = False,
    joint_mix: dict[str, float] | None = None,
    fixed_prob: float = 0.15,
    n_op_frames: int | None = None,
    random_gravity: bool = False,
    depth_first_order: bool = True,
    name: str = "tree",
) -> TreeRecipe:
    """Draw a random tree with ``n_bodies`` moving bodies (plus some fixed links and op frames).

    ``joint_mix`` maps joint kinds (:data:`JOINT_KINDS`) to relative weights (default uniform).
    ``floating`` makes body 1 a free flyer attached to the world, and every other link descend
    from it. After each moving body, with probability ``fixed_prob`` a fixed link is attached to a
    random existing link (its inertia is merged into that link's body). With ``depth_first_order``
    (the default, required by Pinocchio) the links are then renumbered depth-first; otherwise
    they stay in the order drawn (parents before children, subtrees not contiguous).
    """
    kinds = list(JOINT_KINDS) if joint_mix is None else list(joint_mix)
    weights = np.ones(len(kinds)) if joint_mix is None else np.array([joint_mix[k] for k in kinds], float)
    weights = weights / weights.sum()
    gravity = np.array([0.0, 0.0, -9.81])
    if random_gravity:
        gravity = rng.normal(size=3) * 5.0
    recipe = TreeRecipe(name, gravity)

    def parent_choices() -> list[int]:
        # links a new link may attach to: the universe (-1) and every link so far, but a floating
        # tree keeps a single root
        first = 0 if floating and recipe.links else -1
        return list(range(first, len(recipe.links)))

    def add_fixed() -> None:
        k = len(recipe.links)
        parent = int(rng.choice(parent_choices()))
        R, p = _random_placement(rng)
        mass, com, I_com = random_inertia(rng)
        recipe.links.append(LinkSpec(f"fixed_link{k}", f"fixed_joint{k}", parent, "fixed", None, R, p,
                                     mass, com, I_com))

    for b in range(n_bodies):
        k = len(recipe.links)
        if floating and b == 0:
            kind, parent = "freeflyer", -1
            R, p = np.eye(3), np.zeros(3)
        else:
            kind = str(rng.choice(kinds, p=weights))
            parent = int(rng.choice(parent_choices()))
            R, p = _random_placement(rng)
        axis = None
        if kind in ("revolute", "prismatic", "unbounded"):
            axis = rng.normal(size=3)
            axis /= np.linalg.norm(axis)
        elif kind.endswith("_aligned"):
            axis = np.array(AXES_ALIGNED[rng.integers(len(AXES_ALIGNED))])
        mass, com, I_com = random_inertia(rng)
        recipe.links.append(LinkSpec(f"link{k}", f"joint{k}", parent, kind, axis, R, p, mass, com, I_com))
        if rng.random() < fixed_prob:
            add_fixed()

    n_op = max(1, n_bodies // 3) if n_op_frames is None else n_op_frames
    for f in range(n_op):
        link = int(rng.integers(-1, len(recipe.links)))
        R, p = _random_placement(rng)
        recipe.frames.append(FrameSpec(f"op_frame{f}", link, R, p))
    return depth_first(recipe) if depth_first_order else recipe


def depth_first(recipe: TreeRecipe) -> TreeRecipe:
    """The same tree with its links renumbered in depth-first (pre-)order.

    Pinocchio assumes this order without checking it: its CRBA (and everything built on the
    ``nvSubtree`` ranges) treats the velocity indices of a joint's subtree as one contiguous block,
    and silently returns a wrong mass matrix for, e.g., joints added with parents (0, 0, 1).
    loopdyn accepts any order in which parents come first, which the identity tests check on the
    trees in drawn order.
    """
    children: dict[int, list[int]] = {}
    for k, link in enumerate(recipe.links):
        children.setdefault(link.parent, []).append(k)
    order: list[int] = []
    stack = list(reversed(children.get(-1, [])))
    while stack:
        k = stack.pop()
        order.append(k)
        stack.extend(reversed(children.get(k, [])))
    new_index = {old: new for new, old in enumerate(order)}
    new_index[-1] = -1
    links = []
    for old in order:
        link = recipe.links[old]
        links.append(LinkSpec(link.name, link.joint_name, new_index[link.parent], link.kind, link.axis,
                              link.R, link.p, link.mass, link.com, link.I_com))
    frames = [FrameSpec(f.name, new_index[f.link], f.R, f.p) for f in recipe.frames]
    return TreeRecipe(recipe.name, recipe.gravity, links, frames)


def is_depth_first(recipe: TreeRecipe) -> bool:
    return [link.name for link in depth_first(recipe).links] == [link.name for link in recipe.links]


# ----------------------------------------------------------------------------------------------
# building the recipe in loopdyn


def _loopdyn_joint(spec: LinkSpec):
    axis = None if spec.axis is None else tuple(float(x) for x in spec.axis)
    if spec.kind in ("revolute", "revolute_aligned"):
        return loopdyn.Revolute(axis)
    if spec.kind in ("prismatic", "prismatic_aligned"):
        return loopdyn.Prismatic(axis)
    if spec.kind in ("unbounded", "unbounded_aligned"):
        return loopdyn.RevoluteUnbounded(axis)
    if spec.kind == "spherical":
        return loopdyn.Spherical()
    if spec.kind == "freeflyer":
        return loopdyn.FreeFlyer()
    if spec.kind == "fixed":
        return loopdyn.Fixed()
    raise ValueError(spec.kind)


def build_loopdyn(recipe: TreeRecipe) -> loopdyn.Model:
    """The recipe as a loopdyn model. Parents are given alternately by index and by name, so both
    ways of naming a parent are exercised; fixed links are always named (they have no index)."""
    m = loopdyn.Model(recipe.name, gravity=recipe.gravity)
    body_of = {-1: 0}  # recipe link -> loopdyn body index (moving links only)
    for k, spec in enumerate(recipe.links):
        if spec.parent == -1:
            parent = 0 if k % 2 else "universe"
        else:
            pspec = recipe.links[spec.parent]
            parent = pspec.name if (pspec.kind == "fixed" or k % 2) else body_of[spec.parent]
        placement = (spec.R, spec.p) if k % 3 else homogeneous(spec.R, spec.p)
        inertia = loopdyn.Inertia(spec.mass, spec.com, spec.I_com)
        idx = m.add_body(spec.name, parent, _loopdyn_joint(spec), placement, inertia,
                         joint_name=spec.joint_name)
        if spec.kind != "fixed":
            body_of[k] = idx
    for f in recipe.frames:
        parent = "universe" if f.link == -1 else recipe.links[f.link].name
        m.add_frame(f.name, parent, (f.R, f.p), kind="op")
    return m


# ----------------------------------------------------------------------------------------------
# building the recipe in Pinocchio


def _pin():
    import pinocchio

    return pinocchio


def _pin_joint(spec: LinkSpec):
    pin = _pin()
    a = spec.axis
    positive = spec.kind.endswith("_aligned") and a.max() > 0
    axis_index = int(np.argmax(np.abs(a))) if a is not None else -1
    if spec.kind in ("revolute", "revolute_aligned"):
        if positive:
            return (pin.JointModelRX, pin.JointModelRY, pin.JointModelRZ)[axis_index]()
        return pin.JointModelRevoluteUnaligned(a)
    if spec.kind in ("prismatic", "prismatic_aligned"):
        if positive:
            return (pin.JointModelPX, pin.JointModelPY, pin.JointModelPZ)[axis_index]()
        return pin.JointModelPrismaticUnaligned(a)
    if spec.kind in ("unbounded", "unbounded_aligned"):
        if positive:
            return (pin.JointModelRUBX, pin.JointModelRUBY, pin.JointModelRUBZ)[axis_index]()
        return _pin_unbounded_unaligned(a)
    if spec.kind == "spherical":
        return pin.JointModelSpherical()
    if spec.kind == "freeflyer":
        return pin.JointModelFreeFlyer()
    raise ValueError(spec.kind)


def _pin_unbounded_unaligned(axis):
    """Pinocchio's Python bindings cannot set the axis of a ``JointModelRevoluteUnboundedUnaligned``
    (only its default constructor is exposed), but its URDF parser builds one for a ``continuous``
    joint with an arbitrary axis: parse a one-joint URDF and take the joint model from there."""
    pin = _pin()
    xyz = " ".join(repr(float(x)) for x in axis)
    urdf = (
        '<robot name="r"><link name="a"/><link name="b"/>'
        f'<joint name="j" type="continuous"><parent link="a"/><child link="b"/><axis xyz="{xyz}"/></joint>'
        "</robot>"
    )
    jm = pin.buildModelFromXML(urdf).joints[1]
    assert jm.shortname() == "JointModelRevoluteUnboundedUnaligned", jm.shortname()
    return jm


def build_pinocchio(recipe: TreeRecipe):
    """The recipe as a Pinocchio model, with the frames Pinocchio's URDF parser would create:
    a joint frame and a body frame per moving link, a fixed-joint frame and a body frame per fixed
    link (whose inertia is appended to the parent joint), and the op frames."""
    pin = _pin()
    pm = pin.Model()
    pm.name = recipe.name
    pm.gravity = pin.Motion(np.concatenate([recipe.gravity, np.zeros(3)]))
    # recipe link -> (pinocchio joint id, placement of the link in that joint's frame, body frame id)
    where = {-1: (0, pin.SE3.Identity(), 0)}
    for k, spec in enumerate(recipe.links):
        pjid, pM, pframe = where[spec.parent]
        M = pM * pin.SE3(spec.R, spec.p)
        inertia = pin.Inertia(spec.mass, spec.com, spec.I_com)
        if spec.kind == "fixed":
            pm.appendBodyToJoint(pjid, inertia, M)
            jf = pm.addFrame(pin.Frame(spec.joint_name, pjid, pframe, M, pin.FrameType.FIXED_JOINT))
            bf = pm.addBodyFrame(spec.name, pjid, M, jf)
            where[k] = (pjid, M, bf)
        else:
            jid = pm.addJoint(pjid, _pin_joint(spec), M, spec.joint_name)
            pm.appendBodyToJoint(jid, inertia, pin.SE3.Identity())
            jf = pm.addJointFrame(jid, pframe)
            bf = pm.addBodyFrame(spec.name, jid, pin.SE3.Identity(), jf)
            where[k] = (jid, pin.SE3.Identity(), bf)
    for f in recipe.frames:
        pjid, pM, pframe = where[f.link]
        pm.addFrame(pin.Frame(f.name, pjid, pframe, pM * pin.SE3(f.R, f.p), pin.FrameType.OP_FRAME))
    return pm


def random_tree(rng, n_bodies: int, *, with_pinocchio: bool = True, **kwargs):
    """``(loopdyn_model, pinocchio_model)`` of one random tree (see :func:`random_recipe` for the
    keyword arguments). The Pinocchio model is ``None`` when ``with_pinocchio`` is false."""
    recipe = random_recipe(rng, n_bodies, **kwargs)
    lm = build_loopdyn(recipe)
    pm = build_pinocchio(recipe) if with_pinocchio else None
    return lm, pm


# ----------------------------------------------------------------------------------------------
# the trees and robots the tests run on

#: (seed, moving bodies, floating, fixed-link probability, extra keyword arguments)
TREE_SPECS = [
    (101, 1, False, 0.0, {"joint_mix": {"revolute": 1.0}}),
    (102, 1, False, 0.0, {"joint_mix": {"prismatic": 1.0}}),
    (103, 1, False, 0.0, {"joint_mix": {"unbounded": 1.0}}),
    (104, 1, False, 0.0, {"joint_mix": {"spherical": 1.0}}),
    (105, 1, True, 0.5, {}),
    (106, 2, False, 0.5, {"joint_mix": {"revolute_aligned": 1.0, "prismatic_aligned": 1.0}}),
    (107, 3, False, 0.3, {}),
    (108, 4, True, 0.3, {}),
    (109, 5, False, 0.2, {"random_gravity": True}),
    (110, 6, True, 0.2, {"joint_mix": {"spherical": 1.0, "unbounded_aligned": 1.0}}),
    (111, 7, False, 0.4, {}),
    (112, 8, True, 0.1, {"random_gravity": True}),
    (113, 9, False, 0.0, {"joint_mix": {"revolute": 3.0, "prismatic": 1.0}}),
    (114, 10, True, 0.3, {}),
    (115, 12, False, 0.2, {}),
    (116, 13, True, 0.2, {"joint_mix": {"revolute_aligned": 1.0}}),
    (117, 15, False, 0.5, {"random_gravity": True}),
    (118, 16, True, 0.1, {}),
    (119, 18, False, 0.2, {"joint_mix": {"spherical": 1.0, "prismatic": 1.0, "unbounded": 1.0}}),
    (120, 20, True, 0.2, {}),
    (121, 22, False, 0.1, {}),
    (122, 25, True, 0.3, {"random_gravity": True}),
    (123, 28, False, 0.2, {}),
    (124, 30, True, 0.15, {}),
]


def tree_case_id(spec) -> str:
    seed, n, floating, _, _ = spec
    return f"tree{seed}-n{n}-{'floating' if floating else 'fixed'}"


def tree_recipe(index: int, depth_first_order: bool = True) -> TreeRecipe:
    seed, n, floating, fixed_prob, extra = TREE_SPECS[index]
    rng = np.random.default_rng(seed)
    name = tree_case_id(TREE_SPECS[index]) + ("" if depth_first_order else "-drawn-order")
    return random_recipe(rng, n, floating=floating, fixed_prob=fixed_prob, name=name,
                         depth_first_order=depth_first_order, **extra)


@functools.cache
def tree_case(index: int, with_pinocchio: bool = True, depth_first_order: bool = True):
    """``(loopdyn_model, pinocchio_model_or_None)`` of ``TREE_SPECS[index]`` (cached). Pinocchio
    needs the depth-first order (see :func:`depth_first`)."""
    if with_pinocchio and not depth_first_order:
        raise ValueError("Pinocchio silently mis-computes trees that are not in depth-first order")
    recipe = tree_recipe(index, depth_first_order)
    return build_loopdyn(recipe), (build_pinocchio(recipe) if with_pinocchio else None)


def drawn_order_indices() -> list[int]:
    """Indices of the trees whose drawn order is not depth-first (worth testing as drawn)."""
    return [i for i in range(len(TREE_SPECS)) if not is_depth_first(tree_recipe(i, False))]


def example_robot_data_dir() -> str:
    return os.path.join(sysconfig.get_paths()["purelib"], "cmeel.prefix/share/example-robot-data/robots")


#: name -> (URDF path relative to the example-robot-data directory, floating base, loopdyn mimic mode)
ROBOTS = {
    "solo12": ("solo_description/robots/solo12.urdf", True, None),
    "hyq": ("hyq_description/robots/hyq_no_sensors.urdf", True, None),
    "talos_reduced": ("talos_data/robots/talos_reduced.urdf", True, None),
    "panda": ("panda_description/urdf/panda.urdf", False, "independent"),
    "ur5": ("ur_description/urdf/ur5_robot.urdf", False, None),
}


def robot_urdf_path(name: str) -> str:
    return os.path.join(example_robot_data_dir(), ROBOTS[name][0])


@functools.cache
def robot_case(name: str, with_pinocchio: bool = True):
    """``(loopdyn_model, pinocchio_model_or_None)`` of an example-robot-data robot (cached).

    Pinocchio keeps ``<mimic>`` joints as independent joints by default, which is what loopdyn's
    ``mimic="independent"`` does.
    """
    rel, floating, mimic = ROBOTS[name]
    path = robot_urdf_path(name)
    # inertias as written, as Pinocchio reads them (hyq's base_link is not a physical inertia)
    kwargs = {"floating_base": floating, "inertia": "accept"}
    if mimic is not None:
        kwargs["mimic"] = mimic
    from loopdyn.io import load_urdf

    lm = load_urdf(path, **kwargs)
    pm = None
    if with_pinocchio:
        pin = _pin()
        if floating:
            pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
        else:
            pm = pin.buildModelFromUrdf(path)
    return lm, pm


# ----------------------------------------------------------------------------------------------
# matching frames


_PIN_KIND = {"op": "OP_FRAME", "joint": "JOINT", "fixed_joint": "FIXED_JOINT", "body": "BODY"}


def frame_pairs(lm, pm) -> list[tuple[int, int, str]]:
    """``(loopdyn frame index, pinocchio frame id, label)`` for every loopdyn frame that has a
    Pinocchio frame of the same name and kind (every frame, for the random trees)."""
    by_key = {}
    for i, f in enumerate(pm.frames):
        by_key.setdefault((f.name, str(f.type).rsplit(".", 1)[-1]), i)
    out = []
    for k, f in enumerate(lm.frames):
        key = (f.name, _PIN_KIND[f.kind])
        if key in by_key:
            out.append((k, by_key[key], f"{f.kind} frame {f.name!r}"))
    return out


# ----------------------------------------------------------------------------------------------
# states


def joint_blocks(lm):
    """``(kind code, iq, nq, iv, nv)`` per moving body, from the loopdyn model."""
    return [(b.joint.code, b.idx_q, b.joint.nq, b.idx_v, b.joint.nv) for b in lm.bodies]


def random_configuration(rng, lm) -> np.ndarray:
    """A random valid configuration: angles in [-π, π], displacements in [-1, 1], unit
    quaternions, (cos θ, sin θ) pairs, free-flyer positions in [-1, 1]^3."""
    from loopdyn.model import joints as J

    q = np.zeros(lm.nq)
    for code, iq, _, _, _ in joint_blocks(lm):
        if code == J.REVOLUTE:
            q[iq] = rng.uniform(-np.pi, np.pi)
        elif code == J.PRISMATIC:
            q[iq] = rng.uniform(-1.0, 1.0)
        elif code == J.REVOLUTE_UNBOUNDED:
            th = rng.uniform(-np.pi, np.pi)
            q[iq : iq + 2] = np.cos(th), np.sin(th)
        elif code == J.SPHERICAL:
            q[iq : iq + 4] = random_quaternion(rng)
        elif code == J.FREEFLYER:
            q[iq : iq + 3] = rng.uniform(-1.0, 1.0, size=3)
            q[iq + 3 : iq + 7] = random_quaternion(rng)
        else:
            raise AssertionError(f"unexpected joint code {code}")
    return q


def random_state(rng, lm, scale: float = 1.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A random valid ``(q, v, a)``; v and a are normal with standard deviation ``scale``."""
    q = random_configuration(rng, lm)
    v = scale * rng.normal(size=lm.nv)
    a = scale * rng.normal(size=lm.nv)
    return q, v, a


def integrate(lm, q, v, dt) -> np.ndarray:
    """Reference ``q ⊕ v dt`` (Pinocchio's convention): revolute and prismatic add, unbounded
    rotates the (cos, sin) pair, spherical right-multiplies by ``exp(ω dt)``, the free flyer moves
    along the exponential of the constant body twist ``v dt`` (SE(3) exponential)."""
    from loopdyn.model import joints as J

    q = np.array(q, dtype=float)
    out = q.copy()
    for code, iq, _, iv, _ in joint_blocks(lm):
        if code in (J.REVOLUTE, J.PRISMATIC):
            out[iq] = q[iq] + v[iv] * dt
        elif code == J.REVOLUTE_UNBOUNDED:
            c, s = q[iq], q[iq + 1]
            dc, ds = np.cos(v[iv] * dt), np.sin(v[iv] * dt)
            out[iq : iq + 2] = c * dc - s * ds, s * dc + c * ds
        elif code == J.SPHERICAL:
            out[iq : iq + 4] = quat_multiply(q[iq : iq + 4], quat_exp(v[iv : iv + 3] * dt))
        elif code == J.FREEFLYER:
            p, quat = q[iq : iq + 3], q[iq + 3 : iq + 7]
            dR, dp = se3_exp(v[iv : iv + 3] * dt, v[iv + 3 : iv + 6] * dt)
            out[iq : iq + 3] = p + quat_to_matrix(quat) @ dp
            out[iq + 3 : iq + 7] = quat_multiply(quat, dR)
        else:
            raise AssertionError(f"unexpected joint code {code}")
    return out


def se3_exp(nu, w) -> tuple[np.ndarray, np.ndarray]:
    """Exponential of the twist (linear ``nu``, angular ``w``): (quaternion, translation)."""
    th = float(np.linalg.norm(w))
    W = skew(w)
    if th < 1e-8:
        V = np.eye(3) + 0.5 * W + W @ W / 6.0
    else:
        V = np.eye(3) + (1 - np.cos(th)) / th**2 * W + (th - np.sin(th)) / th**3 * W @ W
    return quat_exp(w), V @ nu


def configuration_rate(lm, q, v) -> np.ndarray:
    """dq/dt for the velocity ``v`` at ``q`` in ambient coordinates (for ODE integration):
    quaternions ``½ q ⊗ (ω, 0)``, (cos, sin) pairs ``(-s, c) θ'``, free-flyer position ``R v_lin``.
    The exact flow of this field keeps quaternion and (cos, sin) norms constant."""
    from loopdyn.model import joints as J

    dq = np.zeros(lm.nq)
    for code, iq, _, iv, _ in joint_blocks(lm):
        if code in (J.REVOLUTE, J.PRISMATIC):
            dq[iq] = v[iv]
        elif code == J.REVOLUTE_UNBOUNDED:
            dq[iq : iq + 2] = -q[iq + 1] * v[iv], q[iq] * v[iv]
        elif code == J.SPHERICAL:
            dq[iq : iq + 4] = 0.5 * quat_multiply(q[iq : iq + 4], np.append(v[iv : iv + 3], 0.0))
        elif code == J.FREEFLYER:
            quat = q[iq + 3 : iq + 7]
            dq[iq : iq + 3] = quat_to_matrix(quat / np.linalg.norm(quat)) @ v[iv : iv + 3]
            dq[iq + 3 : iq + 7] = 0.5 * quat_multiply(quat, np.append(v[iv + 3 : iv + 6], 0.0))
        else:
            raise AssertionError(f"unexpected joint code {code}")
    return dq


def normalize_configuration(lm, q) -> np.ndarray:
    """Project ``q`` back on the configuration manifold (unit quaternions and (cos, sin) pairs)."""
    from loopdyn.model import joints as J

    q = np.array(q, dtype=float)
    for code, iq, _, _, _ in joint_blocks(lm):
        if code == J.REVOLUTE_UNBOUNDED:
            q[iq : iq + 2] /= np.linalg.norm(q[iq : iq + 2])
        elif code == J.SPHERICAL:
            q[iq : iq + 4] /= np.linalg.norm(q[iq : iq + 4])
        elif code == J.FREEFLYER:
            q[iq + 3 : iq + 7] /= np.linalg.norm(q[iq + 3 : iq + 7])
    return q


# ----------------------------------------------------------------------------------------------
# comparisons


def assert_close(actual, expected, rtol: float = 1e-9, atol: float = 1e-10, what: str = "value") -> None:
    """Element-wise ``|actual - expected| <= atol + rtol |expected|`` (NumPy's allclose rule), with a
    message giving the worst element, its index and both values."""
    actual = np.asarray(actual, dtype=float)
    expected = np.asarray(expected, dtype=float)
    if actual.shape != expected.shape:
        raise AssertionError(f"{what}: shape {actual.shape} != expected {expected.shape}")
    if not np.all(np.isfinite(actual)):
        raise AssertionError(f"{what}: non-finite values in the result:\n{actual}")
    err = np.abs(actual - expected)
    bound = atol + rtol * np.abs(expected)
    if np.all(err <= bound):
        return
    excess = err / bound
    idx = np.unravel_index(int(np.argmax(excess)), err.shape)
    worst_rel = f"{err[idx] / abs(expected[idx]):.3e}" if expected[idx] != 0 else "inf"
    raise AssertionError(
        f"{what}: {int(np.sum(err > bound))} of {err.size} elements out of tolerance "
        f"(rtol={rtol:g}, atol={atol:g}); max abs error {err.max():.3e}, "
        f"max |expected| {np.abs(expected).max():.3e}; worst at index {tuple(int(i) for i in idx)}: "
        f"actual {float(actual[idx])!r}, expected {float(expected[idx])!r} "
        f"(abs err {err[idx]:.3e}, rel err {worst_rel})"
    )
