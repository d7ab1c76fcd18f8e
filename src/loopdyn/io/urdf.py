"""Loading URDF robot descriptions into a :class:`~loopdyn.model.model.Model`.

The resulting model is laid out exactly as Pinocchio's ``buildModelFromUrdf`` lays it out, so that
configuration vectors, joint indices and frame indices can be exchanged between the two libraries:

* Joints are numbered by a depth-first traversal of the link tree starting at the root link; the
  children of a link are visited in increasing order of their *joint* names (byte-wise string order,
  which is Python's ``str`` order), not in file order. This is the order in which urdfdom (used by
  Pinocchio) stores joints: a map keyed by joint name.
* ``<origin xyz rpy>`` is the placement ``(Rz(yaw) Ry(pitch) Rx(roll), xyz)`` of the joint frame in
  the parent link frame; the joint axis is normalised; a missing ``<axis>`` means ``(1, 0, 0)``.
* ``<inertial><origin rpy>`` rotates the inertia tensor: ``I_link = R I R^T``.
* ``fixed`` joints merge the child link into its parent (inertia lumped, a ``fixed_joint`` frame and
  a ``body`` frame added). Without a floating base the root link is welded to the world: its inertia
  goes to the universe and it gets a ``body`` frame on body 0.
* ``continuous`` joints become :class:`~loopdyn.model.joints.RevoluteUnbounded` (q = (cos, sin)),
  ``floating`` joints :class:`~loopdyn.model.joints.FreeFlyer`, ``planar`` joints
  :class:`~loopdyn.model.compound.Planar` with ``<axis>`` as the plane's normal (q = (x, y, θ), stored
  as two prismatic and one revolute sub-hinge with massless bodies ``<joint>/1``, ``<joint>/2``; its
  ``<limit>``, meaningless for a planar joint, is ignored).

Unsupported: ``<mimic>`` on a moving joint unless ``mimic="independent"`` is
passed (the mimicking joint is then an ordinary independent joint, as in Pinocchio's default).
``<mimic>`` on a ``fixed`` joint is ignored, as Pinocchio ignores it.

URDF+ (the kinematic-loop extension read by GRBDA, Chignoli et al. 2024) is read as well:

* ``<joint independent="true|false">``: whether the joint's coordinate is one of its cluster's
  independent coordinates. Default true; as in GRBDA only the exact strings ``"true"`` and ``"True"``
  mean true, anything else means false. The flag matters only for a joint that ends up in a cluster
  (a body tied by a ``<loop>`` or ``<coupling>``); elsewhere it is ignored. In particular a file with
  ``independent="false"`` flags but no constraints (GRBDA's ``tello_humanoid.urdf``, whose
  differentials are added in code, see :mod:`loopdyn.robots.tello_model`) loads as a plain tree: every
  body is a cluster of its own and every joint is independent. The flags are kept on the bodies
  (``Body.independent``), so constraints added later with the :class:`~loopdyn.model.model.Model` API
  use them.
* ``<coupling name><predecessor link/><successor link/><ratio value/></coupling>`` (a top-level
  element; a ``type`` attribute, e.g. ``"rolling"``, is accepted and ignored) becomes
  :meth:`Model.add_coupling <loopdyn.model.model.Model.add_coupling>`:
  ``ratio·Σ_{b∈P} q_b − Σ_{b∈Q} q_b = 0``. Both links must be moved by a joint of their own.
* ``<loop name type><predecessor link><origin/></predecessor><successor link><origin/></successor>
  <axis/></loop>`` becomes :meth:`Model.add_loop <loopdyn.model.model.Model.add_loop>`; each
  ``<origin>`` is the constraint frame in its link's frame and ``<axis>`` (default ``(1, 0, 0)``) is
  expressed in the predecessor's constraint frame. With ``loops="exact"`` (default) the loop type is
  honoured: ``revolute``/``continuous`` → a revolute loop joint, ``prismatic`` → prismatic,
  ``fixed`` → weld, ``spherical``/``point`` → point coincidence, ``universal`` → a universal
  (Cardan) loop joint; ``planar`` is not supported. With ``loops="point"`` every loop constrains
  only the coincidence of the two frame origins, which is what GRBDA does (its loop ``type`` and
  axes are ignored). A loop end may be a link merged by a ``fixed`` joint, or the root link of a
  fixed-base model: the constraint frame is then carried over to the body the link is rigidly
  attached to (the universe for the root link).
* ``universal`` loops (a loopdyn extension of URDF+, with SDF's ``<axis>``/``<axis2>`` naming of a
  universal joint's two axes) need both axes written out, as no default would be safe: ``<axis
  xyz>`` is the axis fixed to the predecessor, in the predecessor's constraint frame, and ``<axis2
  xyz>`` the cross axis fixed to the successor, in the successor's constraint frame. The loop keeps
  the two frame origins together and the two axes perpendicular (4 rows; ``Model.add_loop(...,
  kind="universal", axis=..., successor_axis=...)``). Like every loop it is assembled where its
  constraints hold, nearest the file's zero pose; a loop whose axes can never be made perpendicular
  is refused when the clusters are built. ``<axis2>`` on a loop of another type is refused, in both
  ``loops`` modes, rather than silently ignored.

Loop and coupling names share one namespace and must be unique. The clusters are built when the file
is loaded, so a cluster whose ``independent`` flags do not match its constraints is reported then,
as a :class:`~loopdyn.errors.URDFError` pointing at one of the cluster's constraints. Unlike GRBDA,
the axis sign is kept, ``fixed``/``prismatic``/``continuous`` tree joints are allowed outside
clusters, and ``<inertial><origin rpy>`` is honoured.

The reader is strict where urdfdom is strict (missing attributes, malformed numbers, ``<limit>``
without ``effort``/``velocity``, revolute/prismatic joints without ``<limit>``) and a little stricter
where Pinocchio silently builds a meaningless model (zero-length axis, empty names, inverted limits,
negative masses, inertia tensors that are not positive semi-definite, masses, lengths and inertias
beyond 1e30 in magnitude; with ``inertia="physical"``, rotational inertias whose principal moments
violate the triangle inequality). Every problem is reported as a :class:`~loopdyn.errors.URDFError`
naming the element and its line in the source. By default (``inertia="warn"``) a rotational inertia
that violates the triangle inequality is loaded as written, with an
:class:`~loopdyn.errors.InertiaWarning` naming the file, link, line and how far off it is.
"""

from __future__ import annotations

import math
import os
import re
import xml.parsers.expat
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import InputError, ModelError, UnsupportedFeatureError, URDFError
from ..model.compound import Planar
from ..model.joints import Fixed, FreeFlyer, Joint, Prismatic, Revolute, RevoluteUnbounded, unit_axis
from ..model.model import BODY_FRAME, Model
from ..spatial.inertia import INERTIA_MODES, Inertia, check_magnitude, check_physical_inertia

__all__ = ["load_urdf"]

MIMIC_MODES = ("error", "independent", "coupling")
LOOP_MODES = ("exact", "point")
JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed", "floating", "planar")
# URDF+ <loop type> → loopdyn loop kind (loops="exact"); "planar" is known but not supported (as a loop)
LOOP_TYPE_KINDS = {
    "revolute": "revolute",
    "continuous": "revolute",
    "prismatic": "prismatic",
    "fixed": "weld",
    "spherical": "point",
    "point": "point",
    "universal": "universal",  # <axis> fixed to the predecessor, <axis2> to the successor (both required)
}
LOOP_TYPES = (*LOOP_TYPE_KINDS, "planar")

# A decimal floating-point literal as urdfdom accepts it (no hex, no inf/nan, no '_' separators).
_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")


# ----------------------------------------------------------------------------------------------
# a minimal element tree that remembers source lines
@dataclass
class _Element:
    """An XML element: tag, attributes, children and the line its start tag is on."""

    tag: str
    attrib: dict[str, str]
    line: int
    children: list[_Element] = field(default_factory=list)

    def find(self, tag: str) -> _Element | None:
        """First child element called ``tag`` (urdfdom reads the first occurrence only)."""
        for child in self.children:
            if child.tag == tag:
                return child
        return None

    def findall(self, tag: str) -> list[_Element]:
        """All child elements called ``tag``, in document order."""
        return [child for child in self.children if child.tag == tag]


def _parse_xml(data: bytes, source: str | None, encoding: str | None) -> _Element:
    """Parse ``data`` with expat into :class:`_Element` nodes, recording each element's line.

    A UTF-8 byte-order mark and blank lines before the first markup are skipped (line numbers still
    count them), so that an XML declaration preceded by blank lines is accepted. Entity declarations
    are refused (URDF does not use them, and they are the vehicle of entity expansion attacks);
    external entities are never fetched.
    """
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    stripped = data.lstrip(b" \t\r\n")
    offset = data[: len(data) - len(stripped)].count(b"\n")
    parser = xml.parsers.expat.ParserCreate(encoding)
    stack: list[_Element] = []
    roots: list[_Element] = []

    def start(tag: str, attrib: dict[str, str]) -> None:
        element = _Element(tag, attrib, parser.CurrentLineNumber + offset)
        if stack:
            stack[-1].children.append(element)
        else:
            roots.append(element)
        stack.append(element)

    def end(tag: str) -> None:
        stack.pop()

    def entity_declaration(name: str, *args) -> None:
        raise URDFError(
            f"XML entity declarations are not supported (entity {name!r})",
            line=parser.CurrentLineNumber + offset,
            source=source,
        )

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    parser.EntityDeclHandler = entity_declaration
    try:
        parser.Parse(stripped, True)
    except xml.parsers.expat.ExpatError as exc:
        reason = xml.parsers.expat.ErrorString(exc.code)
        raise URDFError(
            f"malformed XML: {reason} (column {exc.offset + 1})", line=exc.lineno + offset, source=source
        ) from None
    return roots[0]


# ----------------------------------------------------------------------------------------------
# the parsed document, before it is turned into a model
@dataclass
class _Link:
    name: str
    inertia: Inertia
    line: int


@dataclass
class _Joint:
    name: str
    type: str
    parent: str
    child: str
    rotation: np.ndarray
    translation: np.ndarray
    joint: Joint
    mimic: str | None
    line: int
    independent: bool = True  # URDF+ ``independent`` attribute
    mimic_multiplier: float = 1.0  # ``<mimic multiplier>``, used by ``mimic="coupling"``


@dataclass
class _LinkRef:
    """A ``<predecessor>`` or ``<successor>`` of a URDF+ constraint: link, frame on it, line."""

    link: str
    rotation: np.ndarray
    translation: np.ndarray
    line: int


@dataclass
class _Coupling:
    name: str
    predecessor: _LinkRef
    successor: _LinkRef
    ratio: float
    line: int


@dataclass
class _Loop:
    name: str
    type: str
    kind: str  # the loopdyn loop kind
    predecessor: _LinkRef
    successor: _LinkRef
    axis: tuple[float, float, float]
    line: int
    successor_axis: tuple[float, float, float] | None = None  # universal loops: <axis2>


class _Reader:
    """Turns :class:`_Element` nodes into :class:`_Link` / :class:`_Joint` records, validating them."""

    def __init__(self, source: str | None):
        self.source = source

    def error(self, message: str, element: _Element) -> URDFError:
        """A :class:`URDFError` located at ``element``."""
        return URDFError(message, line=element.line, source=self.source)

    def attribute(self, element: _Element, name: str, what: str) -> str:
        """The required attribute ``name`` of ``element`` (``what`` describes the element)."""
        value = element.attrib.get(name)
        if value is None:
            raise self.error(f"{what}: <{element.tag}> has no {name!r} attribute", element)
        return value

    def number(self, text: str, element: _Element, what: str) -> float:
        """A finite decimal number."""
        token = text.strip()
        if not _NUMBER.fullmatch(token):
            raise self.error(f"{what}: {text!r} is not a number", element)
        value = float(token)
        if not math.isfinite(value):
            raise self.error(f"{what}: {text!r} is not a finite number", element)
        return value

    def vector(self, text: str, element: _Element, what: str) -> np.ndarray:
        """Three whitespace-separated finite numbers."""
        parts = text.split()
        if len(parts) != 3:
            raise self.error(f"{what}: expected 3 numbers, got {len(parts)} in {text!r}", element)
        return np.array([self.number(part, element, what) for part in parts])

    def magnitude(self, values, element: _Element, what: str) -> None:
        """Refuse a mass, length or inertia beyond 1e30 in magnitude (see
        :func:`~loopdyn.spatial.inertia.check_magnitude`), naming ``element``'s line."""
        try:
            check_magnitude(values, what)
        except ModelError as exc:
            raise self.error(str(exc), element) from None

    def origin(self, parent: _Element, what: str) -> tuple[np.ndarray, np.ndarray]:
        """The placement given by the first ``<origin>`` child of ``parent`` (identity if absent)."""
        element = parent.find("origin")
        if element is None:
            return np.eye(3), np.zeros(3)
        xyz = element.attrib.get("xyz")
        rpy = element.attrib.get("rpy")
        p = np.zeros(3) if xyz is None else self.vector(xyz, element, f"{what}: origin xyz")
        self.magnitude(p, element, f"{what}: origin xyz")
        angles = np.zeros(3) if rpy is None else self.vector(rpy, element, f"{what}: origin rpy")
        return rpy_to_matrix(*angles), p

    def name(self, element: _Element) -> str:
        """The non-empty ``name`` attribute of a link or joint."""
        value = self.attribute(element, "name", f"<{element.tag}>")
        if not value:
            raise self.error(f"<{element.tag}> has an empty name", element)
        return value

    # ------------------------------------------------------------------------------------------
    def link(self, element: _Element) -> _Link:
        """A ``<link>``: name and inertia (zero if there is no ``<inertial>``)."""
        name = self.name(element)
        what = f"link {name!r}"
        inertial = element.find("inertial")
        if inertial is None:
            return _Link(name, Inertia.zero(), element.line)
        R, com = self.origin(inertial, what)
        mass_el = inertial.find("mass")
        if mass_el is None:
            raise self.error(f"{what}: <inertial> has no <mass>", inertial)
        mass = self.number(self.attribute(mass_el, "value", what), mass_el, f"{what}: mass")
        self.magnitude(mass, mass_el, f"{what}: mass")
        tensor_el = inertial.find("inertia")
        if tensor_el is None:
            raise self.error(f"{what}: <inertial> has no <inertia>", inertial)
        c = {
            key: self.number(self.attribute(tensor_el, key, what), tensor_el, f"{what}: inertia {key}")
            for key in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
        }
        self.magnitude(list(c.values()), tensor_el, f"{what}: inertia")
        tensor = np.array(
            [
                [c["ixx"], c["ixy"], c["ixz"]],
                [c["ixy"], c["iyy"], c["iyz"]],
                [c["ixz"], c["iyz"], c["izz"]],
            ]
        )
        try:
            inertia = Inertia(mass, com, R @ tensor @ R.T, name=what)
        except ModelError as exc:
            raise self.error(str(exc), inertial) from None
        return _Link(name, inertia, element.line)

    def joint(self, element: _Element, mimic_mode: str) -> _Joint:
        """A ``<joint>``: type, parent and child links, placement and the loopdyn joint object."""
        name = self.name(element)
        what = f"joint {name!r}"
        jtype = self.attribute(element, "type", what)
        if jtype not in JOINT_TYPES:
            raise self.error(
                f"{what}: unknown joint type {jtype!r} (expected one of {', '.join(JOINT_TYPES)})", element
            )
        links = []
        for tag in ("parent", "child"):
            link_el = element.find(tag)
            if link_el is None:
                raise self.error(f"{what}: no <{tag}> element", element)
            link = self.attribute(link_el, "link", what)
            if not link:
                raise self.error(f"{what}: <{tag}> names an empty link", link_el)
            links.append(link)
        R, p = self.origin(element, what)

        mimic = None
        mimic_el = element.find("mimic")
        if mimic_el is not None:
            mimic = self.attribute(mimic_el, "joint", what)
            factors = {"multiplier": 1.0, "offset": 0.0}
            for key in factors:
                if key in mimic_el.attrib:
                    factors[key] = self.number(mimic_el.attrib[key], mimic_el, f"{what}: mimic {key}")
            if mimic_mode == "coupling" and jtype != "fixed":
                self.magnitude(factors["multiplier"], mimic_el, f"{what}: mimic multiplier")
                self.check_mimic_coupling(mimic_el, what, jtype, factors)
            # a fixed joint has no coordinate to couple: Pinocchio ignores its <mimic> (talos_reduced
            # has such joints), and so do we
            if mimic_mode == "error" and jtype != "fixed":
                exc = UnsupportedFeatureError(
                    f"{_where(self.source, mimic_el.line)}{what} mimics joint {mimic!r}: <mimic> joints "
                    "are not loaded by default; pass mimic='coupling' to couple it to the joint it "
                    "mimics (exact, one coordinate less) or mimic='independent' to load it as an "
                    "independent joint (as Pinocchio's buildModelFromUrdf does by default)"
                )
                exc.line, exc.source = mimic_el.line, self.source
                raise exc

        limits = self.limits(element, jtype, what)
        if jtype in ("revolute", "prismatic") and limits is None:
            raise self.error(f"{what}: a {jtype} joint needs a <limit> element", element)
        has_axis = jtype in ("revolute", "continuous", "prismatic", "planar")
        axis = self.axis(element, what) if has_axis else None
        joint: Joint
        try:
            if jtype == "fixed":
                joint = Fixed()
            elif jtype == "floating":
                joint = FreeFlyer()
            elif jtype == "planar":
                joint = Planar(axis)
            else:
                if jtype == "continuous":
                    lim = limits or {}
                    joint = RevoluteUnbounded(axis, velocity=lim.get("velocity"), effort=lim.get("effort"))
                else:
                    cls = Revolute if jtype == "revolute" else Prismatic
                    joint = cls(axis, **limits)
        except ModelError as exc:
            raise self.error(f"{what}: {exc}", element) from None
        # URDF+: default true; GRBDA reads only the exact strings "true"/"True" as true
        independent = element.attrib.get("independent", "true") in ("true", "True")
        if mimic_mode != "coupling" or jtype == "fixed":
            mimic = None
        multiplier = factors["multiplier"] if mimic is not None else 1.0
        return _Joint(
            name, jtype, links[0], links[1], R, p, joint, mimic, element.line, independent, multiplier
        )

    def check_mimic_coupling(self, mimic_el: _Element, what: str, jtype: str, factors: dict) -> None:
        """Refuse a ``<mimic>`` that ``mimic="coupling"`` cannot represent exactly."""
        why = None
        if jtype not in ("revolute", "prismatic"):
            why = f"it is a {jtype!r} joint (a coupled joint must be revolute or prismatic)"
        elif factors["offset"] != 0.0:
            why = f"its offset is {factors['offset']:g} (a coupling has no offset)"
        elif factors["multiplier"] == 0.0:
            why = "its multiplier is 0"
        if why is not None:
            exc = UnsupportedFeatureError(
                f"{_where(self.source, mimic_el.line)}{what}: its <mimic> cannot be loaded as a "
                f"coupling: {why}; pass mimic='independent' to load it as an independent joint"
            )
            exc.line, exc.source = mimic_el.line, self.source
            raise exc

    # ------------------------------------------------------------------------------------------
    # URDF+ constraints
    def link_ref(self, element: _Element, tag: str, what: str, with_origin: bool) -> _LinkRef:
        """The ``<predecessor>``/``<successor>`` child ``tag`` of a constraint element."""
        ref_el = element.find(tag)
        if ref_el is None:
            raise self.error(f"{what}: no <{tag}> element", element)
        link = self.attribute(ref_el, "link", what)
        if not link:
            raise self.error(f"{what}: <{tag}> names an empty link", ref_el)
        if with_origin:
            R, p = self.origin(ref_el, f"{what} {tag}")
        else:
            R, p = np.eye(3), np.zeros(3)
        return _LinkRef(link, R, p, ref_el.line)

    def coupling(self, element: _Element) -> _Coupling:
        """A URDF+ ``<coupling>``: predecessor and successor links and the ratio."""
        name = self.name(element)
        what = f"coupling {name!r}"
        pred = self.link_ref(element, "predecessor", what, with_origin=False)
        succ = self.link_ref(element, "successor", what, with_origin=False)
        ratio_el = element.find("ratio")
        if ratio_el is None:
            raise self.error(f"{what}: no <ratio> element", element)
        ratio = self.number(self.attribute(ratio_el, "value", what), ratio_el, f"{what}: ratio")
        if ratio == 0.0:
            raise self.error(f"{what}: the ratio must be non-zero", ratio_el)
        self.magnitude(ratio, ratio_el, f"{what}: ratio")
        return _Coupling(name, pred, succ, ratio, element.line)

    def loop(self, element: _Element, mode: str) -> _Loop:
        """A URDF+ ``<loop>``: type, the constraint frames on the two links and the axis."""
        name = self.name(element)
        what = f"loop {name!r}"
        ltype = self.attribute(element, "type", what)
        if ltype not in LOOP_TYPES:
            raise self.error(
                f"{what}: unknown loop type {ltype!r} (expected one of {', '.join(LOOP_TYPES)})", element
            )
        if mode == "point":
            kind = "point"
        elif ltype == "planar":
            exc = UnsupportedFeatureError(
                f"{_where(self.source, element.line)}{what} is of type 'planar', which loopdyn does not "
                "support; pass loops='point' to constrain only the coincidence of the two frame origins "
                "(as GRBDA does)"
            )
            exc.line, exc.source = element.line, self.source
            raise exc
        else:
            kind = LOOP_TYPE_KINDS[ltype]
        pred = self.link_ref(element, "predecessor", what, with_origin=True)
        succ = self.link_ref(element, "successor", what, with_origin=True)
        axis2_el = element.find("axis2")
        if axis2_el is not None and ltype != "universal":
            raise self.error(
                f"{what}: <axis2> (the successor axis of a universal loop) on a loop of type {ltype!r}; "
                "remove it, or make the loop type 'universal'",
                axis2_el,
            )
        successor_axis = None
        if kind == "universal":
            axis = self.axis(element, what, required="the axis fixed to the predecessor")
            successor_axis = self.axis(element, what, "axis2", "the cross axis fixed to the successor")
        elif kind in ("revolute", "prismatic"):
            axis = self.axis(element, what)
        else:
            axis = (1.0, 0.0, 0.0)
        return _Loop(name, ltype, kind, pred, succ, axis, element.line, successor_axis)

    def axis(
        self, element: _Element, what: str, tag: str = "axis", required: str | None = None
    ) -> tuple[float, float, float]:
        """The normalised axis of the child ``<tag xyz>`` of ``element``; ``(1, 0, 0)`` when there
        is none, unless ``required`` (what the axis is, for the message) says it must be written."""
        axis_el = element.find(tag)
        if axis_el is None:
            if required is not None:
                raise self.error(
                    f"{what}: a {element.attrib.get('type')} loop needs an <{tag}> element ({required}, "
                    "in its constraint frame)",
                    element,
                )
            return (1.0, 0.0, 0.0)
        a = self.vector(self.attribute(axis_el, "xyz", what), axis_el, f"{what}: {tag}")
        try:
            return tuple(float(x) for x in unit_axis(a, what, tag))  # no overflow for huge entries
        except ModelError:
            raise self.error(f"{what}: the {tag} has zero length", axis_el) from None

    def limits(self, element: _Element, jtype: str, what: str) -> dict[str, float] | None:
        """``lower``/``upper`` (default 0) and the required ``effort``/``velocity`` of ``<limit>``."""
        limit_el = element.find("limit")
        if limit_el is None:
            return None
        out = {}
        for key in ("lower", "upper", "effort", "velocity"):
            text = limit_el.attrib.get(key)
            if text is None:
                if key in ("effort", "velocity"):
                    raise self.error(f"{what}: <limit> has no {key!r} attribute", limit_el)
                out[key] = 0.0
            else:
                out[key] = self.number(text, limit_el, f"{what}: limit {key}")
        # inverted limits matter only where they bound a coordinate (talos_reduced, for one, keeps
        # the <limit> of joints it turned into fixed ones)
        if jtype in ("revolute", "prismatic") and out["lower"] > out["upper"]:
            raise self.error(
                f"{what}: lower limit {out['lower']:g} is greater than upper limit {out['upper']:g}", limit_el
            )
        return out


def _where(source: str | None, line: int | None) -> str:
    """The ``source:line: `` prefix of error messages (as :class:`URDFError` writes it)."""
    if line is None:
        return f"{source}: " if source else ""
    return f"{source}:{line}: " if source else f"line {line}: "


def rpy_to_matrix(roll: float, pitch: float, yaw: float) -> np.ndarray:
    """The URDF rotation of fixed-axis roll-pitch-yaw angles: ``Rz(yaw) @ Ry(pitch) @ Rx(roll)``."""
    cr, sr = math.cos(roll), math.sin(roll)
    cp, sp = math.cos(pitch), math.sin(pitch)
    cy, sy = math.cos(yaw), math.sin(yaw)
    return np.array(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ]
    )


# ----------------------------------------------------------------------------------------------
def _read_source(source) -> tuple[_Element, str | None]:
    """Parse ``source`` (a path or a string/bytes of XML) into its root element."""
    if isinstance(source, bytes | bytearray):
        return _parse_xml(bytes(source), None, None), None
    if isinstance(source, str) and source.lstrip("\ufeff \t\r\n").startswith("<"):
        return _parse_xml(source.encode("utf-8"), None, "UTF-8"), None
    if isinstance(source, str | os.PathLike):
        if isinstance(source, str) and not source.strip():
            raise URDFError("load_urdf: the source is an empty string: neither a path nor URDF XML")
        path = Path(source)
        if path.is_dir():
            raise URDFError("is a directory, not a URDF file", source=str(path))
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise
        except OSError as exc:
            raise URDFError(f"cannot be read: {exc.strerror or exc}", source=str(path)) from None
        return _parse_xml(data, str(path), None), str(path)
    raise InputError(f"load_urdf: source must be a path or a string of XML, got {type(source).__name__}")


def _tree_order(
    links: dict[str, _Link], joints: dict[str, _Joint], reader: _Reader, robot: _Element
) -> tuple[str, list[_Joint]]:
    """Check that the joints form a tree over the links; return the root link and the joints in
    Pinocchio's order (depth first, siblings sorted by joint name)."""
    parent_joint: dict[str, _Joint] = {}
    children: dict[str, list[_Joint]] = {name: [] for name in links}
    for joint in joints.values():
        for role, link in (("parent", joint.parent), ("child", joint.child)):
            if link not in links:
                raise URDFError(
                    f"joint {joint.name!r}: {role} link {link!r} is not defined by any <link>",
                    line=joint.line,
                    source=reader.source,
                )
        if joint.child in parent_joint:
            other = parent_joint[joint.child]
            raise URDFError(
                f"link {joint.child!r} has two parent joints, {other.name!r} (line {other.line}) and "
                f"{joint.name!r}: the links do not form a tree",
                line=joint.line,
                source=reader.source,
            )
        parent_joint[joint.child] = joint
        children[joint.parent].append(joint)

    roots = [link for link in links.values() if link.name not in parent_joint]
    if len(roots) > 1:
        listed = ", ".join(f"{link.name!r} (line {link.line})" for link in roots)
        raise URDFError(
            f"the links form more than one tree: root links {listed}; a URDF must have exactly one "
            "link without a parent joint",
            line=roots[1].line,
            source=reader.source,
        )

    order: list[_Joint] = []
    reached = set()
    if roots:
        root = roots[0].name
        reached.add(root)
        stack = sorted(children[root], key=lambda j: j.name, reverse=True)
        while stack:
            joint = stack.pop()
            order.append(joint)
            reached.add(joint.child)
            stack.extend(sorted(children[joint.child], key=lambda j: j.name, reverse=True))
    if len(reached) < len(links):
        # every unreached link has a parent, so walking up from one of them must loop
        start = next(name for name in links if name not in reached)
        seen: list[str] = []
        link = start
        while link not in seen:
            seen.append(link)
            link = parent_joint[link].parent
        cycle = seen[seen.index(link) :]
        names = " -> ".join(parent_joint[name].name for name in reversed(cycle))
        raise URDFError(
            f"the joints form a cycle ({names}); a URDF must be a tree"
            + ("" if roots else ", and no link is without a parent joint"),
            line=parent_joint[cycle[0]].line,
            source=reader.source,
        )
    if not roots:  # pragma: no cover - a finite graph in which every link has a parent has a cycle
        raise URDFError("no root link", line=robot.line, source=reader.source)
    return roots[0].name, order


def load_urdf(
    source: str | os.PathLike | bytes,
    floating_base: bool = False,
    *,
    mimic: str = "error",
    loops: str = "exact",
    root_joint_name: str = "root_joint",
    gravity=(0.0, 0.0, -9.81),
    inertia: str = "warn",
) -> Model:
    """Build a :class:`~loopdyn.model.model.Model` from a URDF document.

    Parameters
    ----------
    source:
        Path to a ``.urdf`` file, or the XML itself (a string whose first non-blank character is
        ``<``, or bytes).
    floating_base:
        If true, a :class:`~loopdyn.model.joints.FreeFlyer` joint named ``root_joint_name`` connects
        the world to the root link (Pinocchio's ``buildModelFromUrdf(path, JointModelFreeFlyer())``).
        Otherwise the root link is welded to the world and its inertia belongs to the universe.
    mimic:
        ``"error"`` (default): a moving joint with a ``<mimic>`` element raises
        :class:`~loopdyn.errors.UnsupportedFeatureError`. ``"independent"``: the ``<mimic>`` element is
        ignored and the joint is an ordinary independent joint (Pinocchio's default behaviour).
        ``"coupling"``: the joint is geared to the joint it mimics, ``q = multiplier · q_mimicked``
        (an explicit constraint with a constant G, like a geared motor), so it has no coordinate of
        its own in the independent state; both joints must be revolute or prismatic and the offset
        zero (UnsupportedFeatureError naming the joint otherwise).
        ``<mimic>`` on a ``fixed`` joint is always ignored.
    loops:
        How URDF+ ``<loop>`` elements are read. ``"exact"`` (default): the loop ``type`` is honoured
        (``revolute``/``continuous`` → revolute loop joint, ``prismatic`` → prismatic, ``fixed`` →
        weld, ``spherical``/``point`` → point coincidence, ``universal`` → universal loop joint with
        ``<axis>`` fixed to the predecessor and ``<axis2>`` fixed to the successor, both required).
        ``"point"``: every loop only makes the two frame origins coincide, as GRBDA does (exact for
        planar linkages with parallel axes, under-constrained for spatial loops); the loop type and
        axes are then not used, but ``<axis2>`` on a loop that is not ``universal`` is still refused.
    root_joint_name:
        Name of the free-flyer joint added when ``floating_base`` is true.
    gravity:
        Gravity vector of the model, in the world frame.
    inertia:
        What to do with a link whose principal moments of inertia about its centre of mass violate
        the triangle inequality (``I1 + I2 >= I3``, which every rigid body satisfies; tested relative
        to the inertia's trace, see :func:`~loopdyn.spatial.inertia.inertia_violation`, so zero and
        rounding-level inertias pass). ``"warn"`` (default): it is loaded as written, with an
        :class:`~loopdyn.errors.InertiaWarning` naming the file, the link, its line and how far off
        the inertia is. ``"physical"``: it is refused with a :class:`~loopdyn.errors.URDFError`
        naming the link and its line, as MuJoCo's compiler refuses it. ``"accept"``: it is loaded as
        written without a warning, as Pinocchio does. Every inertia must be positive semi-definite
        in every mode. Many shipped files have such links (example-robot-data's anymal, go1, b1,
        hyq, allegro, romeo, pr2; GRBDA's mini_cheetah, jvrc1 and double_pendulum).

    Returns
    -------
    Model
        Joints, coordinates, placements, inertias and frames ordered as Pinocchio orders them, plus
        the URDF+ couplings and loops (in document order); its clusters are already built.

    Raises
    ------
    URDFError
        ``source`` is an empty string or a directory, or the document is malformed: not well-formed
        XML, missing or malformed attributes, a mass, length or inertia beyond 1e30, unknown
        joint type or link, links that do not form a single tree; or a URDF+ constraint is: missing
        or non-finite ratio, unknown loop type, unknown link, duplicate name, coupling on a link
        without a joint of its own, ``independent`` flags that do not fit a cluster's constraints,
        a universal loop without ``<axis>`` or ``<axis2>``, a zero-length axis, ``<axis2>`` on a
        loop that is not universal, a loop that cannot be closed (e.g. universal axes that can never
        be perpendicular). ``line`` is the offending line.
    UnsupportedFeatureError
        A ``planar`` loop (``loops="exact"``), a moving ``<mimic>`` joint with
        ``mimic="error"``, a joint other than revolute/prismatic inside a cluster.
    FileNotFoundError
        ``source`` is a path that does not exist.
    """
    if mimic not in MIMIC_MODES:
        raise InputError(f"load_urdf: mimic must be one of {MIMIC_MODES}, got {mimic!r}")
    if loops not in LOOP_MODES:
        raise InputError(f"load_urdf: loops must be one of {LOOP_MODES}, got {loops!r}")
    if inertia not in INERTIA_MODES:
        raise InputError(f"load_urdf: inertia must be one of {INERTIA_MODES}, got {inertia!r}")
    robot, src = _read_source(source)
    reader = _Reader(src)
    if robot.tag != "robot":
        raise reader.error(f"the root element is <{robot.tag}>, expected <robot>", robot)
    robot_name = reader.attribute(robot, "name", "<robot>")

    links: dict[str, _Link] = {}
    joints: dict[str, _Joint] = {}
    constraints: dict[str, _Coupling | _Loop] = {}
    for element in robot.children:
        if element.tag == "link":
            link = reader.link(element)
            if link.name in links:
                raise reader.error(
                    f"duplicate link name {link.name!r} (first defined at line {links[link.name].line})",
                    element,
                )
            links[link.name] = link
        elif element.tag == "joint":
            joint = reader.joint(element, mimic)
            if joint.name in joints:
                raise reader.error(
                    f"duplicate joint name {joint.name!r} (first defined at line {joints[joint.name].line})",
                    element,
                )
            joints[joint.name] = joint
        elif element.tag in ("coupling", "loop"):
            con = reader.coupling(element) if element.tag == "coupling" else reader.loop(element, loops)
            if con.name in constraints:
                first = constraints[con.name]
                raise reader.error(
                    f"duplicate constraint name {con.name!r} (first defined at line {first.line}; "
                    "<loop> and <coupling> names share one namespace)",
                    element,
                )
            constraints[con.name] = con
    if not links:
        raise reader.error(f"robot {robot_name!r} has no <link>", robot)
    for link in links.values():
        try:
            check_physical_inertia(
                link.inertia, f"link {link.name!r}", inertia, where=_where(src, link.line),
                hint="pass inertia='accept' to load it as written (as Pinocchio does)",
            )
        except ModelError as exc:
            raise URDFError(str(exc), line=link.line, source=src) from None

    root, order = _tree_order(links, joints, reader, robot)
    model = Model(robot_name, gravity=gravity)
    root_link = links[root]
    try:
        if floating_base:
            model.add_body(root, 0, FreeFlyer(), None, root_link.inertia, joint_name=root_joint_name,
                           inertia_check="accept")  # checked above, naming the line
        else:
            model.add_frame(root, 0, None, kind=BODY_FRAME)
            model.universe_inertia = model.universe_inertia + root_link.inertia
    except ModelError as exc:
        raise URDFError(f"root link {root!r}: {exc}", line=root_link.line, source=src) from None
    for joint in order:
        try:
            model.add_body(
                joint.child,
                joint.parent,
                joint.joint,
                (joint.rotation, joint.translation),
                links[joint.child].inertia,
                joint_name=joint.name,
                independent=joint.independent,
                inertia_check="accept",
            )
        except ModelError as exc:
            raise URDFError(f"joint {joint.name!r}: {exc}", line=joint.line, source=src) from None
    if constraints:
        _add_constraints(model, list(constraints.values()), links, joints, src)
    mimics = [joint for joint in order if joint.mimic is not None]
    if mimics:
        _add_mimic_couplings(model, mimics, joints, src)
    return model


def _add_mimic_couplings(
    model: Model, mimics: list[_Joint], joints: dict[str, _Joint], src: str | None
) -> None:
    """``mimic="coupling"``: gear each mimicking joint to the joint it mimics (explicit constraint
    ``q_joint = multiplier · q_mimicked``) and rebuild the clusters."""
    for joint in mimics:
        target = joints.get(joint.mimic)
        if target is None or target.type not in ("revolute", "prismatic"):
            why = "no such joint" if target is None else f"it is a {target.type!r} joint"
            raise UnsupportedFeatureError(
                f"{_where(src, joint.line)}joint {joint.name!r} mimics joint {joint.mimic!r}, which "
                f"cannot carry a coupling ({why}); pass mimic='independent'"
            )
        try:
            model.add_explicit_constraint(
                f"{joint.name}_mimic",
                (joint.mimic, joint.name),
                (joint.mimic,),
                [[1.0], [joint.mimic_multiplier]],
            )
        except ModelError as exc:
            raise URDFError(f"joint {joint.name!r}: <mimic>: {exc}", line=joint.line, source=src) from None
    try:
        model.clusters()
    except UnsupportedFeatureError as exc:
        err = UnsupportedFeatureError(f"{_where(src, mimics[0].line)}<mimic> couplings: {exc}")
        err.line, err.source = mimics[0].line, src
        raise err from None
    except ModelError as exc:
        raise URDFError(f"<mimic> couplings: {exc}", line=mimics[0].line, source=src) from None


# ----------------------------------------------------------------------------------------------
# URDF+ constraints
def _add_constraints(
    model: Model,
    constraints: list[_Coupling | _Loop],
    links: dict[str, _Link],
    joints: dict[str, _Joint],
    src: str | None,
) -> None:
    """Add the URDF+ couplings and loops to ``model`` and build its clusters."""
    parent_joint = {joint.child: joint for joint in joints.values()}

    def carrier(con, ref: _LinkRef) -> tuple[str, np.ndarray, np.ndarray]:
        """The model body ``ref.link`` is rigidly attached to, and ``ref``'s frame on that body."""
        if ref.link not in links:
            raise URDFError(
                f"{_kind(con)} {con.name!r}: link {ref.link!r} is not defined by any <link>",
                line=ref.line,
                source=src,
            )
        frame = model.frames[model.frame_id(ref.link, BODY_FRAME)]
        body = model.body_names[frame.body]
        if isinstance(con, _Coupling) and body != ref.link:
            if ref.link in parent_joint:
                why = f"it is merged into {body!r} by the fixed joint {parent_joint[ref.link].name!r}"
            else:
                why = "it is the root link, welded to the world"
            raise URDFError(
                f"coupling {con.name!r}: link {ref.link!r} has no joint coordinate ({why}); a coupling "
                "relates the coordinates of joints that move their links",
                line=ref.line,
                source=src,
            )
        return body, frame.rotation @ ref.rotation, frame.rotation @ ref.translation + frame.translation

    for con in constraints:
        pred = carrier(con, con.predecessor)
        succ = carrier(con, con.successor)
        try:
            if isinstance(con, _Coupling):
                model.add_coupling(con.name, pred[0], succ[0], con.ratio)
            else:
                model.add_loop(
                    con.name,
                    pred[0],
                    succ[0],
                    con.kind,
                    predecessor_placement=(pred[1], pred[2]),
                    successor_placement=(succ[1], succ[2]),
                    axis=con.axis,
                    successor_axis=con.successor_axis,
                )
        except ModelError as exc:
            raise URDFError(f"{_kind(con)} {con.name!r}: {exc}", line=con.line, source=src) from None

    # build the clusters now, so that inconsistent flags are reported against the file
    try:
        model.clusters()
    except (ModelError, UnsupportedFeatureError) as exc:
        con = _culprit(str(exc), constraints)
        line = None if con is None else con.line
        about = "" if con is None else f"{_kind(con)} {con.name!r}: "
        if isinstance(exc, UnsupportedFeatureError):
            err = UnsupportedFeatureError(f"{_where(src, line)}{about}{exc}")
            err.line, err.source = line, src
            raise err from None
        raise URDFError(f"{about}{exc}", line=line, source=src) from None


def _kind(con) -> str:
    return "coupling" if isinstance(con, _Coupling) else "loop"


def _culprit(message: str, constraints: list[_Coupling | _Loop]):
    """The first constraint (document order) whose name or one of whose links the message quotes."""
    for con in constraints:
        names = (con.name, con.predecessor.link, con.successor.link)
        if any(f"'{name}'" in message or f'"{name}"' in message for name in names):
            return con
    return None
