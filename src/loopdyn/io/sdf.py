"""Loading SDFormat (SDF) robot descriptions, with their closed loops and gearboxes, into a
:class:`~loopdyn.model.model.Model`.

SDF describes a robot as a graph of links and joints that may contain cycles (a rod with a ball joint
at each end, a four-bar) and geared motors as ``gearbox`` joints. :func:`load_sdf` turns the graph
into a spanning tree plus loop constraints, and every gearbox into a coupling. No SDF library is
needed: the XML is read with the standard library (``xml.parsers.expat``), like :func:`load_urdf`,
and every error names the element and its line.

Conventions (SDFormat 1.4 to 1.9, one ``<model>`` per file):

* A link's ``<pose>`` (``x y z roll pitch yaw``, rotation ``Rz(yaw) Ry(pitch) Rx(roll)``) is its
  frame in the model frame; a joint's ``<pose>`` is the joint frame in its *child* link's frame;
  ``<inertial><pose>`` is the centre-of-mass frame in the link frame. These poses define the zero
  configuration: every joint coordinate is 0 there. ``relative_to`` / ``frame`` attributes other
  than the defaults are not supported.
* ``<axis><xyz>`` (default ``0 0 1``) is expressed in the joint frame, or in the model frame with
  ``<use_parent_model_frame>1`` (SDF ≤ 1.6) or ``expressed_in="__model__"`` (SDF ≥ 1.7).
* A link without ``<inertial>`` has SDF's default inertia: mass 1, unit rotational inertia at the
  link origin.
* Joint types: ``revolute`` → :class:`~loopdyn.model.joints.Revolute` (limits of ±1e16 or more are
  read as no limit), ``continuous`` → :class:`~loopdyn.model.joints.RevoluteUnbounded`,
  ``prismatic``, ``ball`` → :class:`~loopdyn.model.joints.Spherical`, ``fixed`` (the child link is
  merged into its parent), ``universal`` → :class:`~loopdyn.model.compound.Universal` about ``<axis>``
  then ``<axis2>`` (each with its own ``<limit>``; two revolute sub-hinges with a massless body
  ``<joint>/1``; refused when the tree reverses the joint), ``gearbox`` → a coupling (below).
  ``revolute2`` and ``screw``
  joints, nested models, ``<include>`` and ``<frame>`` elements raise
  :class:`~loopdyn.errors.UnsupportedFeatureError`. ``<dynamics>`` (damping, friction, springs) is
  ignored: loopdyn models have no passive joint forces.
* The root: the model is attached to the world by the joints whose parent is ``world``; without such
  a joint (and unless ``<static>`` is true) the model floats: ``floating_base=None`` (default) picks
  a :class:`~loopdyn.model.joints.FreeFlyer` named ``root_joint_name`` on the canonical link (the
  first ``<link>``, or the model's ``canonical_link`` attribute), at identity in the world when its
  configuration is neutral. ``floating_base=False`` welds the canonical link to the world at its
  pose (the ``<model><pose>`` composed with the link pose), through a fixed joint ``<link>_weld``.

**Bodies and frames.** Every link moved by a joint becomes a body named after the link whose frame is
the *joint frame* (as in Pinocchio, where body frame = joint frame). The link's own frame is the
body frame called like the link (``model.frame_id(link, "body")``), placed where the SDF link frame
is; the two differ only when the joint has a ``<pose>``.

**Cut joints (the loops).** The spanning tree is chosen deterministically: the joints other than
gearboxes are taken in document order, ball joints after all others, and each joint that would close a
cycle of the joints already taken becomes a *cut joint*; ``cut_joints=[...]`` names cut joints
explicitly (they are set aside first; the rest must still connect every link). Ball joints are cut
preferably because loopdyn's clusters hold only revolute and prismatic joints: a cut ball joint is a
``"spherical"`` loop (the two joint-frame origins coincide). A cut joint becomes
:meth:`Model.add_loop <loopdyn.model.model.Model.add_loop>` between its parent link (predecessor) and
its child link (successor), at the joint frame on each: revolute/continuous → ``"revolute"``,
prismatic → ``"prismatic"``, fixed → ``"weld"``, ball → ``"spherical"``. The tree is then traversed
depth first from the root, the children of a link in increasing order of joint names (the order
:func:`~loopdyn.io.urdf.load_urdf` and Pinocchio use). A tree joint traversed from its SDF child to
its SDF parent is *reversed*: it becomes the same joint type with the axis negated, so that its
coordinate is still the SDF joint angle (a reversed ball joint's quaternion is the inverse rotation).
A ball joint that stays inside a loop (not cut: a loop with two ball joints, or ``cut_joints``
naming another joint) is stored as a :class:`~loopdyn.model.compound.Gimbal` (three revolute
sub-hinges about the joint frame's axes, two massless bodies ``<joint>/1``, ``<joint>/2``; exact) by
:meth:`Model.embed_ball_joints <loopdyn.model.model.Model.embed_ball_joints>`, announced by one
:class:`~loopdyn.errors.JointConversionWarning` line naming it: z, y, x, whose singularity (a middle
angle of ±90°) is as far as can be from the zero pose, where the joint's rotation is the identity. Its
coordinates are the three angles and their rates (see :mod:`loopdyn.model.compound`).

**Gearboxes.** SDF's gearbox joint enforces ``θ₂ = −gearbox_ratio · θ₁``, θ₁ the angle of the parent
link relative to ``gearbox_reference_body`` about ``<axis>`` and θ₂ the angle of the child link
relative to the reference body about ``<axis2>``. loopdyn supports the geared-motor layout: the parent
and the child link are each moved by one revolute joint (of the spanning tree) from the reference body
whose axis is parallel to the gearbox axis; the gearbox then becomes
:meth:`Model.add_coupling(name, parent, child, ratio=-gearbox_ratio·s₁·s₂)
<loopdyn.model.model.Model.add_coupling>` (``s`` = ±1, the orientation of the joint axis relative to
the gearbox axis). Other layouts raise :class:`~loopdyn.errors.UnsupportedFeatureError`.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import xml.parsers.expat
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import InputError, ModelError, SDFError, UnsupportedFeatureError
from ..model.compound import Universal
from ..model.joints import (
    Fixed,
    FreeFlyer,
    Joint,
    Prismatic,
    Revolute,
    RevoluteUnbounded,
    Spherical,
    unit_axis,
)
from ..model.model import BODY_FRAME, FIXED_JOINT_FRAME, Model
from ..spatial.inertia import INERTIA_MODES, Inertia, check_magnitude, check_physical_inertia
from .urdf import rpy_to_matrix

__all__ = ["load_sdf"]

WORLD = "world"
JOINT_TYPES = ("revolute", "continuous", "prismatic", "ball", "fixed", "gearbox", "universal")
UNSUPPORTED_JOINT_TYPES = ("revolute2", "screw")
LOOP_KIND = {
    "revolute": "revolute",
    "continuous": "revolute",
    "prismatic": "prismatic",
    "fixed": "weld",
    "ball": "spherical",
}
UNSUPPORTED_ELEMENTS = ("model", "include", "frame")  # inside <model>
NO_LIMIT = 1e16  # SDF's default joint limits are ±1e16: "no limit"
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")

Placement = tuple[np.ndarray, np.ndarray]  # (R, p)


# ----------------------------------------------------------------------------------------------
# placements
def _compose(a: Placement, b: Placement) -> Placement:
    return a[0] @ b[0], a[0] @ b[1] + a[1]


def _inverse(a: Placement) -> Placement:
    return a[0].T, -(a[0].T @ a[1])


_IDENTITY: Placement = (np.eye(3), np.zeros(3))


def _is_identity(a: Placement) -> bool:
    return bool(np.max(np.abs(a[0] - np.eye(3))) < 1e-15 and np.max(np.abs(a[1])) < 1e-15)


# ----------------------------------------------------------------------------------------------
# XML with line numbers
@dataclass
class _Element:
    tag: str
    attrib: dict[str, str]
    line: int
    children: list[_Element] = field(default_factory=list)
    text: str = ""

    def find(self, tag: str) -> _Element | None:
        return next((c for c in self.children if c.tag == tag), None)

    def findall(self, tag: str) -> list[_Element]:
        return [c for c in self.children if c.tag == tag]


def _parse(data: bytes, source: str | None, encoding: str | None) -> _Element:
    """Parse with expat, recording each element's line and text; entity declarations are refused."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    stripped = data.lstrip(b" \t\r\n")
    offset = data[: len(data) - len(stripped)].count(b"\n")
    parser = xml.parsers.expat.ParserCreate(encoding)
    stack: list[_Element] = []
    roots: list[_Element] = []
    texts: list[list[str]] = []

    def start(tag, attrib):
        element = _Element(tag, attrib, parser.CurrentLineNumber + offset)
        (stack[-1].children if stack else roots).append(element)
        stack.append(element)
        texts.append([])

    def end(tag):
        stack.pop().text = "".join(texts.pop()).strip()

    def chars(data):
        if texts:
            texts[-1].append(data)

    def entity(name, *args):
        raise SDFError(
            f"XML entity declarations are not supported (entity {name!r})",
            parser.CurrentLineNumber + offset,
            source,
        )

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.CharacterDataHandler = chars
    parser.EntityDeclHandler = entity
    try:
        parser.Parse(stripped, True)
    except xml.parsers.expat.ExpatError as exc:
        reason = xml.parsers.expat.ErrorString(exc.code)
        raise SDFError(
            f"malformed XML: {reason} (column {exc.offset + 1})", exc.lineno + offset, source
        ) from None
    return roots[0]


def _read_source(source) -> tuple[_Element, str | None]:
    if isinstance(source, bytes | bytearray):
        return _parse(bytes(source), None, None), None
    if isinstance(source, str) and source.lstrip("\ufeff \t\r\n").startswith("<"):
        return _parse(source.encode("utf-8"), None, "UTF-8"), None
    if isinstance(source, str | os.PathLike):
        if isinstance(source, str) and not source.strip():
            raise SDFError("load_sdf: the source is an empty string: neither a path nor SDF XML")
        path = Path(source)
        if path.is_dir():
            raise SDFError("is a directory, not an SDF file", None, str(path))
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise SDFError(f"cannot be read: {exc.strerror or exc}", None, str(path)) from None
        return _parse(data, str(path), None), str(path)
    raise InputError(f"load_sdf: source must be a path or a string of XML, got {type(source).__name__}")


# ----------------------------------------------------------------------------------------------
# the parsed document
@dataclass
class _Link:
    name: str
    pose: Placement  # link frame in the model frame
    inertia: Inertia  # in the link frame
    line: int


@dataclass
class _Joint:
    name: str
    type: str
    parent: str
    child: str
    pose: Placement  # joint frame in the child link frame
    axis: np.ndarray | None  # unit, in the joint frame (revolute, continuous, prismatic, gearbox)
    limits: dict
    line: int
    axis2: np.ndarray | None = None  # gearbox, universal: in the joint frame
    limits2: dict = field(default_factory=dict)  # universal: the limits of <axis2>
    reference: str | None = None  # gearbox
    ratio: float = 0.0  # gearbox


def _universal(axis1, axis2, limits1: dict, limits2: dict) -> Universal:
    """A :class:`Universal` joint with the per-axis limits of ``<axis>`` and ``<axis2>``."""
    absent = {"lower": -np.inf, "upper": np.inf, "effort": np.inf, "velocity": np.inf}
    kw = {k: None if k not in limits1 and k not in limits2 else (limits1.get(k, d), limits2.get(k, d))
          for k, d in absent.items()}
    return Universal(axis1, tuple(float(x) for x in axis2), **kw)


class _Reader:
    def __init__(self, source: str | None):
        self.source = source

    def error(self, message: str, element: _Element) -> SDFError:
        return SDFError(message, element.line, self.source)

    def unsupported(self, message: str, element: _Element) -> UnsupportedFeatureError:
        where = f"{self.source or 'line'}{':' if self.source else ' '}{element.line}: "
        exc = UnsupportedFeatureError(where + message)
        exc.line, exc.source = element.line, self.source
        return exc

    def numbers(self, element: _Element, n: int, what: str) -> np.ndarray:
        parts = element.text.split()
        if len(parts) != n:
            raise self.error(f"{what}: expected {n} numbers, got {element.text!r}", element)
        out = []
        for part in parts:
            if not _NUMBER.fullmatch(part):
                raise self.error(f"{what}: {part!r} is not a number", element)
            value = float(part)
            if not math.isfinite(value):
                raise self.error(f"{what}: {part!r} is not a finite number", element)
            out.append(value)
        return np.array(out)

    def magnitude(self, values, element: _Element, what: str) -> None:
        """Refuse a mass, length, inertia or ratio beyond 1e30 in magnitude (see
        :func:`~loopdyn.spatial.inertia.check_magnitude`), naming ``element``'s line."""
        try:
            check_magnitude(values, what)
        except ModelError as exc:
            raise self.error(str(exc), element) from None

    def scalar(self, parent: _Element, tag: str, default: float | None, what: str) -> float:
        element = parent.find(tag)
        if element is None:
            if default is None:
                raise self.error(f"{what}: no <{tag}> element", parent)
            return default
        return float(self.numbers(element, 1, f"{what}: <{tag}>")[0])

    def pose(self, parent: _Element, what: str, allowed_relative_to: tuple[str, ...]) -> Placement:
        element = parent.find("pose")
        if element is None:
            return _IDENTITY
        for attr in ("frame", "relative_to"):
            ref = element.attrib.get(attr, "")
            if ref and ref not in allowed_relative_to:
                raise self.unsupported(
                    f"{what}: <pose {attr}={ref!r}> is not supported (poses must be "
                    "given in their default frame)",
                    element,
                )
        if element.attrib.get("rotation_format", "euler_rpy") != "euler_rpy":
            raise self.unsupported(
                f"{what}: <pose rotation_format={element.attrib['rotation_format']!r}> is not supported",
                element,
            )
        x = self.numbers(element, 6, f"{what}: <pose>")
        self.magnitude(x[:3], element, f"{what}: <pose> position")
        if element.attrib.get("degrees", "false") in ("true", "1"):
            x[3:] = np.radians(x[3:])
        return rpy_to_matrix(*x[3:]), x[:3]

    def name(self, element: _Element) -> str:
        value = element.attrib.get("name")
        if not value:
            raise self.error(f"<{element.tag}> has no (or an empty) 'name' attribute", element)
        return value

    # ------------------------------------------------------------------------------------------
    def link(self, element: _Element) -> _Link:
        name = self.name(element)
        what = f"link {name!r}"
        pose = self.pose(element, what, ("__model__",))
        inertial = element.find("inertial")
        if inertial is None:  # SDF's default inertial: mass 1, unit inertia at the link origin
            return _Link(name, pose, Inertia(1.0, np.zeros(3), np.eye(3)), element.line)
        R, com = self.pose(inertial, what, (name,))
        mass = self.scalar(inertial, "mass", 1.0, what)
        self.magnitude(mass, inertial.find("mass") or inertial, f"{what}: <mass>")
        tensor_el = inertial.find("inertia")
        c = {"ixx": 1.0, "iyy": 1.0, "izz": 1.0, "ixy": 0.0, "ixz": 0.0, "iyz": 0.0}
        if tensor_el is not None:
            c = {key: self.scalar(tensor_el, key, default, f"{what}: inertia") for key, default in c.items()}
            self.magnitude(list(c.values()), tensor_el, f"{what}: <inertia>")
        tensor = np.array(
            [[c["ixx"], c["ixy"], c["ixz"]], [c["ixy"], c["iyy"], c["iyz"]], [c["ixz"], c["iyz"], c["izz"]]]
        )
        try:
            inertia = Inertia(mass, com, R @ tensor @ R.T, name=what)
        except ModelError as exc:
            raise self.error(str(exc), inertial) from None
        return _Link(name, pose, inertia, element.line)

    def axis(self, joint_el: _Element, tag: str, what: str) -> tuple:
        """The unit axis ``tag`` (``axis``/``axis2``, default ``0 0 1``) and the frame it is expressed in:
        ``("joint", a)``, ``("model", a)`` or ``("link", name, a)``."""
        axis_el = joint_el.find(tag)
        if axis_el is None:
            return ("joint", np.array([0.0, 0.0, 1.0]))
        xyz_el = axis_el.find("xyz")
        a = np.array([0.0, 0.0, 1.0]) if xyz_el is None else self.numbers(xyz_el, 3, f"{what}: <{tag}><xyz>")
        try:
            a = unit_axis(a, what, tag)  # no overflow for huge entries
        except ModelError:
            raise self.error(f"{what}: the axis has zero length", xyz_el or axis_el) from None
        upm = axis_el.find("use_parent_model_frame")
        expressed = "" if xyz_el is None else xyz_el.attrib.get("expressed_in", "")
        in_model = expressed == "__model__" or (upm is not None and upm.text.strip() in ("1", "true"))
        return (
            ("model", a) if in_model else ("joint", a) if expressed in ("", None) else ("link", expressed, a)
        )

    def limits(self, joint_el: _Element, what: str, tag: str = "axis") -> dict:
        out = {}
        axis_el = joint_el.find(tag)
        limit_el = None if axis_el is None else axis_el.find("limit")
        if limit_el is None:
            return out
        for key, sdf in (
            ("lower", "lower"),
            ("upper", "upper"),
            ("effort", "effort"),
            ("velocity", "velocity"),
        ):
            el = limit_el.find(sdf)
            if el is None:
                continue
            value = float(self.numbers(el, 1, f"{what}: limit {sdf}")[0])
            if key in ("lower", "upper") and abs(value) >= NO_LIMIT:
                continue
            if key in ("effort", "velocity") and value < 0:  # SDF: −1 = no limit
                continue
            out[key] = value
        return out

    def joint(self, element: _Element) -> tuple[_Joint, tuple]:
        name = self.name(element)
        what = f"joint {name!r}"
        jtype = element.attrib.get("type")
        if jtype is None:
            raise self.error(f"{what}: no 'type' attribute", element)
        if jtype in UNSUPPORTED_JOINT_TYPES:
            raise self.unsupported(f"{what} is of type {jtype!r}, which loopdyn does not support", element)
        if jtype not in JOINT_TYPES:
            raise self.error(
                f"{what}: unknown joint type {jtype!r} (expected one of "
                f"{', '.join(JOINT_TYPES + UNSUPPORTED_JOINT_TYPES)})",
                element,
            )
        ends = []
        for tag in ("parent", "child"):
            el = element.find(tag)
            if el is None or not el.text:
                raise self.error(f"{what}: no (or an empty) <{tag}>", el or element)
            ends.append(el.text)
        child = ends[1]
        if ends[0] == child:
            raise self.error(f"{what}: parent and child are the same link {child!r}", element)
        pose = self.pose(element, what, (child,))
        raw_axes = (None, None)
        if jtype in ("revolute", "continuous", "prismatic", "gearbox", "universal"):
            raw_axes = (
                self.axis(element, "axis", what),
                self.axis(element, "axis2", what) if jtype in ("gearbox", "universal") else None,
            )
        joint = _Joint(name, jtype, ends[0], child, pose, None, self.limits(element, what), element.line)
        if jtype == "universal":
            joint.limits2 = self.limits(element, what, "axis2")
        if jtype == "gearbox":
            ref_el = element.find("gearbox_reference_body")
            if ref_el is None or not ref_el.text:
                raise self.error(f"{what}: a gearbox joint needs a <gearbox_reference_body>", element)
            joint.reference = ref_el.text
            joint.ratio = self.scalar(element, "gearbox_ratio", 1.0, what)
            if joint.ratio == 0.0:
                raise self.error(f"{what}: gearbox_ratio must be non-zero", element.find("gearbox_ratio"))
            self.magnitude(joint.ratio, element.find("gearbox_ratio"), f"{what}: <gearbox_ratio>")
        return joint, raw_axes


# ----------------------------------------------------------------------------------------------
def load_sdf(
    source: str | os.PathLike | bytes,
    floating_base: bool | None = None,
    *,
    cut_joints=None,
    root_joint_name: str = "root_joint",
    gravity=(0.0, 0.0, -9.81),
    inertia: str = "warn",
) -> Model:
    """Build a :class:`~loopdyn.model.model.Model` from an SDF document (see the module docstring for
    the conventions, the choice of cut joints and how gearboxes are read).

    Parameters
    ----------
    source:
        Path to a ``.sdf`` file, or the XML itself (a string starting with ``<``, or bytes).
    floating_base:
        ``None`` (default): a free-flyer on the canonical link unless the model is attached to the
        world by a joint or is ``<static>``. ``True``: a free-flyer (refused if a joint attaches the
        model to the world). ``False``: the canonical link is welded to the world at its pose.
    cut_joints:
        Names of the joints to cut (each closes a loop); default: chosen as described above.
    root_joint_name:
        Name of the free-flyer joint.
    gravity:
        Gravity vector of the model, in the world frame.
    inertia:
        What to do with a link whose rotational inertia violates the triangle inequality, as in
        :func:`~loopdyn.io.urdf.load_urdf`: ``"warn"`` (default) loads it as written with an
        :class:`~loopdyn.errors.InertiaWarning` naming the file, link, line and how far off it is;
        ``"physical"`` refuses it (:class:`~loopdyn.errors.SDFError` naming the link and its line);
        ``"accept"`` loads it as written without a warning.

    Returns
    -------
    Model
        The spanning tree, a loop per cut joint and a coupling per gearbox; clusters already built.
        ``model.sdf_cut_joints`` lists the cut joints. Ball joints left inside loops are gimbals.

    Raises
    ------
    SDFError
        ``source`` is an empty string or a directory; or a malformed document: bad XML, missing or
        malformed elements, a mass, length, inertia or gear ratio beyond 1e30, unknown links, links
        not connected,
        a named cut joint that closes no loop, a gearbox whose links are not found.
    UnsupportedFeatureError
        ``revolute2``/``universal``/``screw`` joints, nested models, ``<include>``, ``<frame>``, poses
        relative to other frames, a gearbox of another layout.
    FileNotFoundError
        ``source`` is a path that does not exist.
    """
    if inertia not in INERTIA_MODES:
        raise InputError(f"load_sdf: inertia must be one of {INERTIA_MODES}, got {inertia!r}")
    if floating_base not in (None, True, False):
        raise InputError(f"load_sdf: floating_base must be None, True or False, got {floating_base!r}")
    root_el, src = _read_source(source)
    reader = _Reader(src)
    if root_el.tag != "sdf":
        raise reader.error(f"the root element is <{root_el.tag}>, expected <sdf>", root_el)
    if root_el.find("world") is not None:
        raise reader.unsupported(
            "<world> files are not supported: load a file with one <model>", root_el.find("world")
        )
    models = root_el.findall("model")
    if len(models) != 1:
        raise reader.error(f"expected exactly one <model> in <sdf>, found {len(models)}", root_el)
    model_el = models[0]
    model_name = reader.name(model_el)
    for tag in UNSUPPORTED_ELEMENTS:
        if model_el.find(tag) is not None:
            el = model_el.find(tag)
            raise reader.unsupported(
                f"<{tag}> inside <model> is not supported (nested models, includes and explicit frames)", el
            )
    model_pose = reader.pose(model_el, f"model {model_name!r}", ())
    static_el = model_el.find("static")
    static = static_el is not None and static_el.text.strip() in ("1", "true")

    links: dict[str, _Link] = {}
    for el in model_el.findall("link"):
        link = reader.link(el)
        if link.name in links or link.name == WORLD:
            raise reader.error(f"duplicate or reserved link name {link.name!r}", el)
        links[link.name] = link
    if not links:
        raise reader.error(f"model {model_name!r} has no <link>", model_el)
    for link in links.values():
        try:
            where = f"{src}:{link.line}: " if src else f"line {link.line}: "
            check_physical_inertia(link.inertia, f"link {link.name!r}", inertia, where=where)
        except ModelError as exc:
            raise SDFError(str(exc), link.line, src) from None

    joints: dict[str, _Joint] = {}
    for el in model_el.findall("joint"):
        joint, raw_axes = reader.joint(el)
        if joint.name in joints:
            raise reader.error(f"duplicate joint name {joint.name!r}", el)
        for role, link in (("parent", joint.parent), ("child", joint.child)):
            if link not in links and not (role == "parent" and link == WORLD):
                raise reader.error(
                    f"joint {joint.name!r}: {role} link {link!r} is not defined by any <link>", el
                )
        if joint.type == "gearbox" and joint.reference not in links and joint.reference != WORLD:
            raise reader.error(
                f"joint {joint.name!r}: gearbox_reference_body {joint.reference!r} is not a link", el
            )
        # axes → the joint frame
        X_M_J = _compose(links[joint.child].pose, joint.pose)
        resolved = []
        for raw in raw_axes:
            if raw is None:
                resolved.append(None)
            elif raw[0] == "joint":
                resolved.append(raw[1])
            elif raw[0] == "model":
                resolved.append(X_M_J[0].T @ raw[1])
            else:
                frame = raw[1]
                if frame == joint.child:
                    resolved.append(joint.pose[0].T @ raw[2])
                elif frame in links:
                    resolved.append(X_M_J[0].T @ links[frame].pose[0] @ raw[2])
                else:
                    raise reader.unsupported(
                        f"joint {joint.name!r}: axis expressed_in={frame!r} is not supported", el
                    )
        joint.axis, joint.axis2 = resolved
        joints[joint.name] = joint

    builder = _Builder(reader, src, model_name, links, joints, gravity)
    return builder.build(floating_base, static, model_pose, cut_joints, root_joint_name, model_el)


class _Builder:
    def __init__(self, reader, src, name, links, joints, gravity):
        self.reader, self.src, self.links, self.joints = reader, src, links, joints
        self.model = Model(name, gravity=gravity)
        # per link: (carrier body index, link frame in the carrier body's frame)
        self.carrier: dict[str, tuple[int, Placement]] = {}
        self.body_pose: dict[int, Placement] = {0: _IDENTITY}  # body frame in the model frame, q = 0

    def fail(self, message: str, line: int | None) -> SDFError:
        return SDFError(message, line, self.src)

    def unsupported(self, message: str, line: int | None) -> UnsupportedFeatureError:
        where = f"{self.src or 'line'}{':' if self.src else ' '}{line}: " if line is not None else ""
        exc = UnsupportedFeatureError(where + message)
        exc.line, exc.source = line, self.src
        return exc

    # ------------------------------------------------------------------------------------------
    def spanning_tree(self, cut_joints, root_nodes: list[str]) -> tuple[list[_Joint], list[_Joint]]:
        """Kruskal in document order, ball joints last, the named cut joints set aside first."""
        kin = [j for j in self.joints.values() if j.type != "gearbox"]
        forced = []
        if cut_joints is not None:
            if isinstance(cut_joints, str):
                cut_joints = [cut_joints]
            for name in cut_joints:
                if name not in self.joints:
                    close = ", ".join(sorted(self.joints)[:50])
                    raise InputError(f"load_sdf: cut_joints names {name!r}, which is not a joint ({close})")
                if self.joints[name].type == "gearbox":
                    raise InputError(
                        f"load_sdf: cut_joints names the gearbox {name!r}; gearboxes are couplings"
                    )
                forced.append(self.joints[name])
        parent = {n: n for n in [*self.links, WORLD]}

        def find(x):
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for a, b in zip(root_nodes, root_nodes[1:], strict=False):
            parent[find(a)] = find(b)
        tree, cut = [], list(forced)
        order = [j for j in kin if j.type != "ball" and j not in forced]
        order += [j for j in kin if j.type == "ball" and j not in forced]
        for j in order:
            a, b = find(j.parent), find(j.child)
            if a == b:
                cut.append(j)
            else:
                parent[a] = b
                tree.append(j)
        roots = {find(n) for n in self.links}
        if len(roots) > 1 or (root_nodes and find(root_nodes[0]) not in roots):
            groups: dict[str, list[str]] = {}
            for n in self.links:
                groups.setdefault(find(n), []).append(n)
            listed = "; ".join(
                ", ".join(repr(x) for x in g[:4]) + (" ..." if len(g) > 4 else "") for g in groups.values()
            )
            if forced:
                raise self.fail(
                    f"the links are not connected once the cut joints "
                    f"{[j.name for j in forced]} are removed (groups: {listed}): a cut joint "
                    "must close a loop",
                    forced[0].line,
                )
            raise self.fail(f"the links are not all connected by joints (groups: {listed})", None)
        cut.sort(key=lambda j: j.line)
        return tree, cut

    # ------------------------------------------------------------------------------------------
    def add_link_body(self, link: _Link, parent_link: str, joint: _Joint, reversed_: bool) -> None:
        """Add ``link`` (the tree child) moved by ``joint`` from ``parent_link``."""
        m = self.model
        pbody, X_pb_P = self.carrier[parent_link]
        P = self.links[parent_link] if parent_link != WORLD else None
        X_M_P = P.pose if P is not None else self.world_pose
        X_P_L0 = _compose(_inverse(X_M_P), link.pose)
        if not reversed_:
            X_L_J = joint.pose  # the joint frame on the child link (= the tree child)
            axis = joint.axis
        else:  # the SDF child is the tree parent: the joint frame on it, carried over to ``link``
            X_P_J = joint.pose
            X_L_J = _compose(_inverse(X_P_L0), X_P_J)
            axis = None if joint.axis is None else -joint.axis
        axis = None if axis is None else tuple(float(x) for x in axis)
        X_pb_J = _compose(X_pb_P, _compose(X_P_L0, X_L_J))
        what = f"joint {joint.name!r}"
        try:
            if joint.type == "fixed":
                ld_joint: Joint = Fixed()
            elif joint.type == "ball":
                ld_joint = Spherical()
            elif joint.type == "continuous":
                ld_joint = RevoluteUnbounded(
                    axis, **{k: v for k, v in joint.limits.items() if k in ("effort", "velocity")}
                )
            elif joint.type == "revolute":
                ld_joint = Revolute(axis, **joint.limits)
            elif joint.type == "universal":
                if reversed_:
                    raise self.unsupported(
                        f"{what}: a universal joint whose child link is the parent in the tree is not "
                        "supported", joint.line)
                ld_joint = _universal(axis, joint.axis2, joint.limits, joint.limits2)
            else:
                ld_joint = Prismatic(axis, **joint.limits)
        except ModelError as exc:
            raise self.fail(f"{what}: {exc}", joint.line) from None
        X_J_L = _inverse(X_L_J)
        try:
            if joint.type == "fixed":
                X_pb_L = _compose(X_pb_P, X_P_L0)
                idx = m.add_body(link.name, pbody, ld_joint, X_pb_L, link.inertia, joint_name=joint.name,
                                 inertia_check="accept")  # checked per link, naming its line
                self._place_frame(joint.name, FIXED_JOINT_FRAME, X_pb_J)
                self.carrier[link.name] = (idx, X_pb_L)
                return
            body_inertia = link.inertia.transformed(*X_J_L)
            idx = m.add_body(link.name, pbody, ld_joint, X_pb_J, body_inertia, joint_name=joint.name,
                             inertia_check="accept")
        except ModelError as exc:
            raise self.fail(f"{what}: {exc}", joint.line) from None
        if not _is_identity(X_J_L):
            self._place_frame(link.name, BODY_FRAME, X_J_L)
        self.carrier[link.name] = (idx, X_J_L)
        self.body_pose[idx] = _compose(self.body_pose[pbody], X_pb_J)

    def _place_frame(self, name: str, kind: str, placement: Placement) -> None:
        k = self.model.frame_id(name, kind)
        f = self.model.frames[k]
        self.model.frames[k] = dataclasses.replace(
            f, rotation=placement[0].copy(), translation=placement[1].copy()
        )

    # ------------------------------------------------------------------------------------------
    def build(self, floating_base, static, model_pose, cut_joints, root_joint_name, model_el) -> Model:
        m, links, joints = self.model, self.links, self.joints
        world_joints = [j for j in joints.values() if j.type != "gearbox" and j.parent == WORLD]
        canonical = model_el.attrib.get("canonical_link") or next(iter(links))
        if canonical not in links:
            raise self.fail(f"canonical_link {canonical!r} is not a link", model_el.line)
        if floating_base is True and (world_joints or static):
            why = (
                f"joint {world_joints[0].name!r} attaches it to the world" if world_joints else "it is static"
            )
            raise InputError(f"load_sdf: floating_base=True but {why}")
        floating = (not world_joints and not static) if floating_base is None else floating_base
        # the world frame in the model frame (links are posed in the model frame)
        self.world_pose = _inverse(model_pose)
        self.body_pose[0] = self.world_pose if not floating or world_joints else _IDENTITY
        tree, cut = self.spanning_tree(cut_joints, [WORLD] if world_joints else [])
        m.sdf_cut_joints = [j.name for j in cut]

        if world_joints:
            self.carrier[WORLD] = (0, _IDENTITY)
            start = WORLD
        else:
            root = links[canonical]
            try:
                if floating:
                    idx = m.add_body(
                        root.name, 0, FreeFlyer(), None, root.inertia, joint_name=root_joint_name,
                        inertia_check="accept",
                    )
                    self.carrier[root.name] = (idx, _IDENTITY)
                    self.body_pose[idx] = root.pose
                else:
                    X = _compose(model_pose, root.pose)
                    m.add_body(root.name, 0, Fixed(), X, root.inertia, joint_name=f"{root.name}_weld",
                               inertia_check="accept")
                    self.carrier[root.name] = (0, X)
            except ModelError as exc:
                raise self.fail(f"link {root.name!r}: {exc}", root.line) from None
            start = root.name

        # depth first from the root, children by joint name
        adjacent: dict[str, list[tuple[_Joint, str, bool]]] = {n: [] for n in [*links, WORLD]}
        for j in tree:
            adjacent[j.parent].append((j, j.child, False))
            adjacent[j.child].append((j, j.parent, True))
        stack = sorted(adjacent[start], key=lambda t: t[0].name, reverse=True)
        seen = {start}
        while stack:
            joint, other, reversed_ = stack.pop()
            if other in seen:
                continue
            if other == WORLD:  # a joint to the world reached from the floating side
                raise self.unsupported(
                    f"joint {joint.name!r} attaches the model to the world from inside the tree", joint.line
                )
            seen.add(other)
            here = joint.child if reversed_ else joint.parent
            self.add_link_body(links[other], here, joint, reversed_)
            stack.extend(
                sorted(
                    (t for t in adjacent[other] if t[1] not in seen), key=lambda t: t[0].name, reverse=True
                )
            )

        with m.deferred_ball_joints():  # the body indices of self.carrier stay valid meanwhile
            for j in cut:
                self.add_loop(j)
            for j in joints.values():
                if j.type == "gearbox":
                    self.add_gearbox(j)
        if m.constraints:
            try:
                m.embed_ball_joints()  # a ball joint left inside a loop: a gimbal, clear at the zero pose
                m.clusters()
            except UnsupportedFeatureError as exc:
                line = next((j.line for j in joints.values() if f"'{j.name}'" in str(exc)), None)
                raise self.unsupported(str(exc), line) from None
            except ModelError as exc:
                line = next((j.line for j in joints.values() if f"'{j.name}'" in str(exc)), None)
                raise self.fail(str(exc), line) from None
        return m

    # ------------------------------------------------------------------------------------------
    def _frame_on_body(self, link: str, X_L_F: Placement) -> tuple[str, Placement]:
        body, X_b_L = self.carrier[link]
        return self.model.body_names[body], _compose(X_b_L, X_L_F)

    def add_loop(self, j: _Joint) -> None:
        links = self.links
        X_M_P = links[j.parent].pose if j.parent != WORLD else self.world_pose
        X_C_J = j.pose
        X_P_J = _compose(_compose(_inverse(X_M_P), links[j.child].pose), X_C_J)
        pred = self._frame_on_body(j.parent, X_P_J)
        succ = self._frame_on_body(j.child, X_C_J)
        if j.type not in LOOP_KIND:
            raise self.unsupported(
                f"joint {j.name!r}: a {j.type} joint cannot be cut to close a loop (loop joints are "
                f"{', '.join(sorted(LOOP_KIND))}); name another joint of the loop in cut_joints", j.line)
        kind = LOOP_KIND[j.type]
        axis = (1.0, 0.0, 0.0) if j.axis is None else tuple(j.axis)
        try:
            self.model.add_loop(
                j.name,
                pred[0],
                succ[0],
                kind,
                predecessor_placement=pred[1],
                successor_placement=succ[1],
                axis=axis,
            )
        except ModelError as exc:
            raise self.fail(f"cut joint {j.name!r}: {exc}", j.line) from None

    def add_gearbox(self, j: _Joint) -> None:
        m = self.model
        ref_body = 0 if j.reference == WORLD else self.carrier[j.reference][0]
        X_M_J = _compose(self.links[j.child].pose, j.pose)
        signs = []
        for link, axis in ((j.parent, j.axis), (j.child, j.axis2)):
            body, X_b_L = self.carrier.get(link, (0, None))
            b = m.bodies[body - 1] if body > 0 else None
            if b is None or m.body_names[body] != link or b.joint.kind not in ("revolute", "prismatic"):
                raise self.unsupported(
                    f"gearbox {j.name!r}: link {link!r} is not moved by a revolute joint of its "
                    "own (loopdyn reads gearboxes between two links each turned by a revolute "
                    "joint from the reference body)",
                    j.line,
                )
            if b.parent != ref_body:
                raise self.unsupported(
                    f"gearbox {j.name!r}: link {link!r} is moved by joint {b.joint_name!r} from "
                    f"{m.body_names[b.parent]!r}, not from the gearbox reference body "
                    f"{j.reference!r}",
                    j.line,
                )
            joint_axis = self.body_pose[body][0] @ b.joint.axis_array()  # model frame, q = 0
            gear_axis = X_M_J[0] @ axis
            c = float(joint_axis @ gear_axis)
            if abs(abs(c) - 1.0) > 1e-6:
                raise self.unsupported(
                    f"gearbox {j.name!r}: its axis is not parallel to the axis of joint "
                    f"{b.joint_name!r} (cos = {c:.6g})",
                    j.line,
                )
            signs.append(1.0 if c > 0 else -1.0)
        ratio = -j.ratio * signs[0] * signs[1]
        try:
            m.add_coupling(j.name, j.parent, j.child, ratio)
        except ModelError as exc:
            raise self.fail(f"gearbox {j.name!r}: {exc}", j.line) from None
