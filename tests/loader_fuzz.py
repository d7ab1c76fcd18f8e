"""A seeded mutation fuzzer for loopdyn's MJCF and SDF loaders, and the oracles that judge a mutant.

Used by ``tests/test_loader_fuzz.py`` (a few hundred mutants per format, in CI) and by
``benchmarks/fuzz_loaders.py`` (the long run). A *mutant* is a seed file (loopdyn's test files, and
the MJCF/SDF files shipped by example-robot-data, MuJoCo, dm_control and gymnasium) with one to
three random edits of its XML tree: an element deleted, duplicated, swapped with another or moved
under another parent; an attribute deleted, copied or swapped; a number replaced by NaN, ±inf, a
huge, tiny, negative or malformed one, or scaled; a reference made dangling or pointed at another
element (cycles in SDF's joint graph, new loop equalities in MJCF); a name duplicated; a joint axis
zeroed, a mass made negative, an inertia made non-physical, a joint's type changed.

Every mutant must end in one of two ways (:func:`run_mutant`):

* it **loads**: then ``rnea`` and ``aba`` on random states are finite, ``aba`` inverts ``rnea`` (a
  backward-error check against ``crba`` and ``nonlinear_effects``), and the tree (for a model with
  loops, its spanning tree) equals MuJoCo's on the same model: for MJCF MuJoCo compiles the mutant
  itself; for SDF, which MuJoCo does not read, this module writes the mutant's tree as MJCF from the
  SDF definition (read here with ElementTree, independently of the loader). A dynamics call may also
  refuse the model with a named :class:`~loopdyn.errors.LoopdynError` (a singular mass matrix);
* or it raises a :class:`~loopdyn.errors.LoopdynError` whose message names the element: a line
  number, or a quoted name, tag or attribute of the document.

Anything else (another exception, a bare message, non-finite or wrong dynamics, a NumPy warning
escaping the loader, or more than ``time_limit`` seconds) is a *failure*.
"""

from __future__ import annotations

import copy
import hashlib
import importlib.util
import math
import os
import re
import signal
import sysconfig
import time
import warnings
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import loopdyn as ld
from loopdyn.errors import LoopdynError

HERE = Path(__file__).parent
DATA = HERE / "data"

# ------------------------------------------------------------------------------------------------
# seed files


def _package_dir(package: str) -> Path | None:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def _erd_dir() -> Path | None:
    for key in ("purelib", "platlib"):
        d = Path(sysconfig.get_paths()[key]) / "cmeel.prefix" / "share" / "example-robot-data" / "robots"
        if d.is_dir():
            return d
    return None


#: loopdyn's test files whose loops take seconds to compile symbolically (SymPy): the long run only
SLOW_MJCF = ("sites_loops.xml",)
SLOW_SDF = ("ball_rod.sdf",)
#: small shipped MJCF files the in-test fuzz uses besides loopdyn's own: fast to compile (1-15 ms;
#: dm_control's suite files take 100-200 ms each, MuJoCo generating their skybox textures)
SMALL_MJCF = {
    "dm_control": ["suite/acrobot.xml", "third_party/ant/ant.xml"],
    "gymnasium": [
        f"envs/mujoco/assets/{name}.xml"
        for name in (
            "inverted_pendulum", "inverted_double_pendulum", "reacher", "pusher", "walker2d", "humanoid",
            "hopper", "half_cheetah", "ant", "swimmer", "point",
        )  # fmt: skip
    ],
}


def mjcf_seeds(full: bool = False) -> list[Path]:
    """MJCF seed files: loopdyn's test files and small files of MuJoCo, dm_control and gymnasium;
    with ``full``, every ``*.xml`` those packages ship with a ``<mujoco>`` root (the caller drops the
    ones that do not load unmutated: includes of missing files, flexes, ...), and MuJoCo's."""
    out = [p for p in sorted((DATA / "mjcf").glob("*.xml")) if full or p.name not in SLOW_MJCF]
    for package, files in [*SMALL_MJCF.items(), ("mujoco", [])]:
        root = _package_dir(package)
        if root is None:
            continue
        if full:
            for path in sorted(root.rglob("*.xml")):
                with open(path, "rb") as fh:
                    head = fh.read(4096)
                if b"<mujoco" in head and path not in out:
                    out.append(path)
        else:
            out += [root / f for f in files if (root / f).is_file()]
    return out


def sdf_seeds(full: bool = False) -> list[Path]:
    """SDF seed files: loopdyn's test files; with ``full``, also example-robot-data's (Cassie)."""
    out = [p for p in sorted((DATA / "sdf").glob("*.sdf")) if full or p.name not in SLOW_SDF]
    erd = _erd_dir()
    if full and erd is not None:
        out += sorted(erd.rglob("*.sdf"))
    return out


# ------------------------------------------------------------------------------------------------
# the mutation engine

BAD_NUMBERS = (
    "nan", "NaN", "inf", "-inf", "+inf", "1e308", "-1e308", "1e400", "-1e400", "1e-320", "1e-300",
    "1e30", "-1e30", "1e15", "0", "-0", "-1", "-1e-9", "abc", "", "1,5", "0x10", "1_000", "1e", ".", "--1",
    "3.0.1", "1e-30",
)  # fmt: skip
SCALES = (-1.0, 0.0, 1e6, 1e-6, 1e12, 1e-12, 1e300, 1e-300, 2.0, 0.5)
_FLOAT = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")

MJCF_REFERENCES = (
    "class", "childclass", "body1", "body2", "joint", "joint1", "joint2", "site", "site1", "site2",
    "tendon", "tendon1", "tendon2", "mesh", "material", "texture", "target", "objname", "body",
    "geom1", "geom2", "file",
)  # fmt: skip
MJCF_JOINT_TYPES = ("hinge", "slide", "ball", "free", "spherical", "")
SDF_JOINT_TYPES = (
    "revolute", "continuous", "prismatic", "ball", "fixed", "gearbox", "universal", "revolute2", "screw",
    "hinge", "",
)  # fmt: skip
SDF_REFERENCES = ("parent", "child", "gearbox_reference_body")
NON_PHYSICAL = ("0.01 0.01 0.05", "1 1 3", "0 0 1", "1e-6 1e-6 1", "-1 2 2", "1 1 2.0000001")


@dataclass
class Mutant:
    seed: Path
    index: int
    operations: list[str]
    text: str


def _elements(root: ET.Element) -> list[ET.Element]:
    return [e for e in root.iter() if e is not root and isinstance(e.tag, str)]


def _parents(root: ET.Element) -> dict[ET.Element, ET.Element]:
    return {child: parent for parent in root.iter() for child in parent}


def _numeric_fields(root: ET.Element, fmt: str) -> list[tuple[ET.Element, str | None]]:
    """(element, attribute) of every attribute (MJCF) or text (SDF, ``None``) made of numbers."""
    out = []
    for el in _elements(root):
        if fmt == "mjcf":
            out += [
                (el, k)
                for k, v in el.attrib.items()
                if v.split() and all(_FLOAT.fullmatch(t) for t in v.split())
            ]
        elif el.text and el.text.split() and all(_FLOAT.fullmatch(t) for t in el.text.split()):
            out.append((el, None))
    return out


def _get(el: ET.Element, attr: str | None) -> str:
    return (el.text or "") if attr is None else el.attrib.get(attr, "")


def _set(el: ET.Element, attr: str | None, value: str) -> None:
    if attr is None:
        el.text = value
    else:
        el.attrib[attr] = value


def _names(root: ET.Element, tag: str | None = None) -> list[str]:
    return [e.attrib["name"] for e in _elements(root) if "name" in e.attrib and (tag is None or e.tag == tag)]


class Mutator:
    """Applies random edits to an XML tree of the given format (``"mjcf"`` or ``"sdf"``)."""

    def __init__(self, fmt: str, rng: np.random.Generator):
        self.fmt = fmt
        self.rng = rng

    def pick(self, seq):
        return seq[int(self.rng.integers(len(seq)))] if len(seq) else None

    # -- generic edits ---------------------------------------------------------------------------
    def delete_element(self, root):
        el = self.pick(_elements(root))
        _parents(root)[el].remove(el)
        return f"delete <{el.tag}>"

    def duplicate_element(self, root):
        el = self.pick(_elements(root))
        parent = _parents(root)[el]
        parent.insert(list(parent).index(el) + 1, copy.deepcopy(el))
        return f"duplicate <{el.tag}>"

    def swap_elements(self, root):
        """Two elements trade places (siblings half of the time: document order matters)."""
        els = _elements(root)
        a = self.pick(els)
        parents = _parents(root)
        if self.rng.random() < 0.5:
            sib = [e for e in parents[a] if e is not a and isinstance(e.tag, str)]
            b = self.pick(sib)
        else:
            inside = set(a.iter())
            b = self.pick([e for e in els if e not in inside and a not in set(e.iter())])
        if b is None:
            return "swap (nothing)"
        pa, pb = parents[a], parents[b]
        ia, ib = list(pa).index(a), list(pb).index(b)
        pa[ia] = b
        pb[ib] = a
        return f"swap <{a.tag}> and <{b.tag}>"

    def move_element(self, root):
        els = _elements(root)
        a = self.pick(els)
        inside = set(a.iter())
        target = self.pick([e for e in [root, *els] if e not in inside])
        _parents(root)[a].remove(a)
        target.insert(int(self.rng.integers(len(target) + 1)), a)
        return f"move <{a.tag}> under <{target.tag}>"

    def delete_attribute(self, root):
        el = self.pick([e for e in [root, *_elements(root)] if e.attrib])
        if el is None:
            return "delete attribute (nothing)"
        key = self.pick(sorted(el.attrib))
        del el.attrib[key]
        return f"delete <{el.tag} {key}>"

    def swap_attributes(self, root):
        pairs = [(e, k) for e in _elements(root) for k in e.attrib]
        if len(pairs) < 2:
            return "swap attributes (nothing)"
        (e1, k1), (e2, k2) = (pairs[i] for i in self.rng.choice(len(pairs), 2, replace=False))
        e1.attrib[k1], e2.attrib[k2] = e2.attrib[k2], e1.attrib[k1]
        return f"swap <{e1.tag} {k1}> and <{e2.tag} {k2}>"

    def copy_attribute(self, root):
        pairs = [(e, k) for e in _elements(root) for k in e.attrib]
        el = self.pick(_elements(root))
        if not pairs:
            return "copy attribute (nothing)"
        src, key = self.pick(pairs)
        el.attrib[key] = src.attrib[key]
        return f"copy {key}={src.attrib[key]!r} onto <{el.tag}>"

    def swap_texts(self, root):
        els = [e for e in _elements(root) if e.text and e.text.strip()]
        if len(els) < 2:
            return "swap texts (nothing)"
        a, b = (els[i] for i in self.rng.choice(len(els), 2, replace=False))
        a.text, b.text = b.text, a.text
        return f"swap texts of <{a.tag}> and <{b.tag}>"

    def bad_number(self, root):
        fields = _numeric_fields(root, self.fmt)
        if not fields:
            return "bad number (nothing)"
        el, attr = self.pick(fields)
        tokens = _get(el, attr).split()
        what = self.rng.random()
        if what < 0.15 and len(tokens) > 1:
            tokens.pop(int(self.rng.integers(len(tokens))))
            desc = "drop a number"
        elif what < 0.25:
            tokens.append(self.pick(("1", "0", "nan")))
            desc = "add a number"
        else:
            k = int(self.rng.integers(len(tokens)))
            tokens[k] = self.pick(BAD_NUMBERS)
            desc = f"number {k} -> {tokens[k]!r}"
        _set(el, attr, " ".join(tokens))
        return f"<{el.tag}{'' if attr is None else ' ' + attr}>: {desc}"

    def scale_number(self, root):
        fields = _numeric_fields(root, self.fmt)
        if not fields:
            return "scale number (nothing)"
        el, attr = self.pick(fields)
        tokens = _get(el, attr).split()
        k = int(self.rng.integers(len(tokens)))
        factor = self.pick(SCALES)
        tokens[k] = repr(float(tokens[k]) * factor)
        _set(el, attr, " ".join(tokens))
        return f"<{el.tag}{'' if attr is None else ' ' + attr}>: number {k} x {factor:g}"

    def duplicate_name(self, root):
        named = [e for e in _elements(root) if "name" in e.attrib]
        if len(named) < 2:
            return "duplicate name (nothing)"
        a, b = (named[i] for i in self.rng.choice(len(named), 2, replace=False))
        a.attrib["name"] = b.attrib["name"]
        return f"<{a.tag}> renamed {b.attrib['name']!r} (as a <{b.tag}>)"

    # -- format-aware edits ----------------------------------------------------------------------
    def dangling_reference(self, root):
        if self.fmt == "mjcf":
            refs = [(e, k) for e in _elements(root) for k in e.attrib if k in MJCF_REFERENCES]
        else:
            refs = [(e, None) for e in _elements(root) if e.tag in SDF_REFERENCES]
            refs += [(e, "canonical_link") for e in [root, *_elements(root)] if e.tag == "model"]
        if not refs:
            return "dangling reference (nothing)"
        el, attr = self.pick(refs)
        names = _names(root) + (["world"] if self.fmt == "sdf" else [])
        value = "no_such_thing" if self.rng.random() < 0.4 or not names else self.pick(names)
        _set(el, attr, value)
        return f"<{el.tag}{'' if attr is None else ' ' + attr}> -> {value!r}"

    def zero_axis(self, root):
        if self.fmt == "mjcf":
            fields = [(e, "axis") for e in _elements(root) if "axis" in e.attrib or e.tag == "joint"]
        else:
            fields = [(e, None) for e in _elements(root) if e.tag == "xyz"]
        if not fields:
            return "zero axis (nothing)"
        el, attr = self.pick(fields)
        _set(el, attr, self.pick(("0 0 0", "0 0 1e-300", "nan 0 1", "1e308 1e308 0")))
        return f"<{el.tag}> axis -> {_get(el, attr)!r}"

    def negative_mass(self, root):
        if self.fmt == "mjcf":
            fields = [
                (e, "mass") for e in _elements(root) if e.tag in ("inertial", "geom") or "mass" in e.attrib
            ]
        else:
            fields = [(e, None) for e in _elements(root) if e.tag == "mass"]
        if not fields:
            return "negative mass (nothing)"
        el, attr = self.pick(fields)
        _set(el, attr, self.pick(("-1", "-1e-12", "0", "1e-300", "1e300")))
        return f"<{el.tag}> mass -> {_get(el, attr)!r}"

    def bad_inertia(self, root):
        if self.fmt == "mjcf":
            els = [e for e in _elements(root) if e.tag == "inertial"]
            if not els:
                return "bad inertia (nothing)"
            el = self.pick(els)
            el.attrib.pop("fullinertia", None)
            el.attrib["diaginertia"] = self.pick(NON_PHYSICAL)
            return f"<inertial diaginertia={el.attrib['diaginertia']!r}>"
        els = [e for e in _elements(root) if e.tag == "inertia"]
        if not els:
            return "bad inertia (nothing)"
        el = self.pick(els)
        values = self.pick(NON_PHYSICAL).split()
        for key, value in zip(("ixx", "iyy", "izz"), values, strict=True):
            sub = el.find(key)
            if sub is None:
                sub = ET.SubElement(el, key)
            sub.text = value
        return f"<inertia> diagonal -> {' '.join(values)}"

    def joint_type(self, root):
        els = [e for e in _elements(root) if e.tag == "joint"]
        if not els:
            return "joint type (nothing)"
        el = self.pick(els)
        el.attrib["type"] = self.pick(MJCF_JOINT_TYPES if self.fmt == "mjcf" else SDF_JOINT_TYPES)
        return f"joint {el.attrib.get('name')!r} type -> {el.attrib['type']!r}"

    def add_constraint(self, root):
        """A new loop: an MJCF equality between random bodies or joints, an SDF joint between random
        links (which closes a cycle of the joint graph)."""
        if self.fmt == "mjcf":
            bodies = _names(root, "body")
            joints = _names(root, "joint")
            eq = root.find("equality")
            if eq is None:
                eq = ET.SubElement(root, "equality")
            kind = self.pick(("connect", "weld", "joint"))
            if kind == "joint" and len(joints) >= 1:
                attrib = {"joint1": self.pick(joints), "joint2": self.pick(joints)}
                if self.rng.random() < 0.5:
                    attrib["polycoef"] = "0 0.5 0 0 0"
            elif bodies:
                attrib = {"body1": self.pick(bodies), "body2": self.pick(bodies + ["world"])}
                if kind == "connect":
                    attrib["anchor"] = " ".join(f"{x:.3g}" for x in self.rng.uniform(-0.2, 0.2, 3))
            else:
                return "add constraint (nothing)"
            ET.SubElement(eq, kind if kind != "joint" or "joint1" in attrib else "connect", attrib)
            return f"equality {kind} {attrib}"
        model = root.find("model")
        links = _names(model, "link") if model is not None else []
        if len(links) < 2:
            return "add constraint (nothing)"
        parent, child = self.pick(links + ["world"]), self.pick(links)
        jtype = self.pick(("revolute", "prismatic", "ball", "fixed", "continuous", "universal"))
        joint = ET.SubElement(model, "joint", {"name": f"fuzz_{int(self.rng.integers(1000))}", "type": jtype})
        ET.SubElement(joint, "parent").text = parent
        ET.SubElement(joint, "child").text = child
        if self.rng.random() < 0.7:
            ET.SubElement(joint, "pose").text = " ".join(f"{x:.3g}" for x in self.rng.uniform(-0.2, 0.2, 6))
        axis = ET.SubElement(joint, "axis")
        ET.SubElement(axis, "xyz").text = self.pick(("0 0 1", "1 0 0", "0 1 0", "0.6 0.8 0"))
        return f"joint {jtype} {parent!r} -> {child!r}"

    OPERATIONS = (
        ("delete_element", 3), ("duplicate_element", 2), ("swap_elements", 2), ("move_element", 1),
        ("delete_attribute", 2), ("swap_attributes", 1), ("copy_attribute", 1), ("swap_texts", 1),
        ("bad_number", 6), ("scale_number", 4), ("duplicate_name", 1), ("dangling_reference", 3),
        ("zero_axis", 1), ("negative_mass", 1), ("bad_inertia", 1), ("joint_type", 2), ("add_constraint", 2),
    )  # fmt: skip

    def mutate(self, root: ET.Element) -> list[str]:
        """Apply one to three random edits to ``root`` in place; their descriptions."""
        names = [n for n, _ in self.OPERATIONS]
        weights = np.array([w for _, w in self.OPERATIONS], float)
        done = []
        for _ in range(int(self.rng.choice([1, 1, 2, 3]))):
            op = names[int(self.rng.choice(len(names), p=weights / weights.sum()))]
            try:
                done.append(getattr(self, op)(root))
            except (KeyError, ValueError, TypeError, IndexError):  # e.g. no element to edit
                done.append(f"{op} (nothing)")
        return done


def make_mutant(seed: Path, fmt: str, index: int, base_seed: int) -> Mutant:
    """Mutant ``index`` of ``seed``: reproducible from ``(base_seed, seed file name, index)``."""
    digest = hashlib.sha256(f"{base_seed}:{seed.name}:{index}".encode()).digest()
    rng = np.random.default_rng(int.from_bytes(digest[:8], "little"))
    root = ET.fromstring(seed.read_bytes())
    ops = Mutator(fmt, rng).mutate(root)
    return Mutant(seed, index, ops, ET.tostring(root, encoding="unicode"))


# ------------------------------------------------------------------------------------------------
# running a mutant


class MutantTimeout(Exception):
    """A mutant ran past its time limit."""


@dataclass
class Outcome:
    status: str  # "loaded", "error" or "failure"
    detail: str = ""  # the error class, or what was compared ("mujoco", "identities", ...)
    message: str = ""
    seconds: float = 0.0  # the whole run, checks included
    load_seconds: float = math.nan  # the loader's call
    compared: bool = False  # against MuJoCo
    inertia_warnings: int = 0
    notes: list[str] = field(default_factory=list)


_LINE = re.compile(r"(?:\bline \d+|:\d+:|, line \d+)")
_QUOTED = re.compile(r"'([^'\n]{1,200})'|\"([^\"\n]{1,200})\"|<(/?[A-Za-z_][\w\-]*)")


_UNNAMED = re.compile(
    r"(?:body|joint|site|tendon|equality)\d+_*|#\d+"
)  # load_mjcf's names of unnamed elements


def names_an_element(message: str, text: str) -> bool:
    """Whether an error message points at something in the document: a line number, a quoted name,
    tag or attribute that occurs in ``text``, or the name ``load_mjcf`` gives an unnamed element
    (its kind and index, e.g. ``'equality3'``)."""
    if _LINE.search(message):
        return True
    for m in _QUOTED.finditer(message):
        token = next(g for g in m.groups() if g is not None).lstrip("/")
        if not token:
            continue
        if f'"{token}"' in text or f">{token}<" in text or f"<{token}" in text or f"{token}=" in text:
            return True
        if _UNNAMED.fullmatch(token):
            return True
        # MuJoCo names a missing file with its folder prefixed ('meshes/x.stl' for file="x.stl")
        if "/" in token and f'"{token.rsplit("/", 1)[1]}"' in text:
            return True
    return False


def mirror_dir(seed: Path, work: Path) -> Path:
    """A folder under ``work`` holding symbolic links to everything beside ``seed`` (so that includes,
    meshes and textures resolve), where the mutant is written. Paths that climb out of the seed's
    folder (``../``) do not resolve there: such a seed (dm_control's ``dog_v2/dog.xml``) does not load
    unmutated and is left out."""
    key = hashlib.sha256(str(seed.parent.resolve()).encode()).hexdigest()[:12]
    out = work / key
    if not out.is_dir():
        out.mkdir(parents=True)
        for entry in seed.parent.iterdir():
            link = out / entry.name
            if not link.exists():
                os.symlink(entry.resolve(), link)
    return out


def _alarm(seconds: float):
    def handler(signum, frame):
        raise MutantTimeout(f"more than {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    return previous


def _disarm(previous) -> None:
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, previous)


def usable_seeds(
    seeds: list[Path], fmt: str, work: Path, time_limit: float = 600.0
) -> tuple[list[Path], dict]:
    """The seeds that load unmutated and pass the checks (run once each, which also compiles the
    kernels the mutants need), and the outcome of every seed."""
    outcomes = {}
    for seed in seeds:
        outcomes[seed] = run_mutant(Mutant(seed, -1, [], seed.read_text()), fmt, work, time_limit=time_limit)
    return [s for s in seeds if outcomes[s].status == "loaded"], outcomes


def run_mutant(
    mutant: Mutant,
    fmt: str,
    work: Path,
    *,
    time_limit: float = 10.0,
    hard_limit: float | None = None,
    states: int = 2,
) -> Outcome:
    """Load ``mutant`` (written beside a mirror of its seed's folder) and judge the result. The loader
    must return (a model or an error) within ``time_limit`` seconds; the whole run, checks included,
    is cut by an alarm after ``hard_limit`` seconds (default ``6 * time_limit``): a real hang."""
    hard_limit = 6 * time_limit if hard_limit is None else hard_limit
    folder = mirror_dir(mutant.seed, work) if fmt == "mjcf" else work
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"__mutant_{os.getpid()}.{'xml' if fmt == 'mjcf' else 'sdf'}"
    path.write_text(mutant.text)
    rng = np.random.default_rng(abs(mutant.index))
    start = time.perf_counter()
    load_seconds = math.nan
    previous = _alarm(hard_limit)
    out = Outcome("failure")
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                try:
                    if fmt == "mjcf":
                        model = ld.load_mjcf(path, tendons="ignore")
                    else:
                        model = ld.load_sdf(path)
                finally:
                    load_seconds = time.perf_counter() - start
            except LoopdynError as exc:
                msg = str(exc)
                ok = names_an_element(msg, mutant.text)
                out = Outcome("error" if ok else "failure", type(exc).__name__, msg)
                if not ok:
                    out.notes.append("the error does not name an element")
            else:
                out = _check_loaded(model, fmt, path, mutant.text, rng, states)
        inertia = [w for w in caught if w.category.__name__ == "InertiaWarning"]
        out.inertia_warnings = len(inertia)
        for w in inertia:
            if not names_an_element(str(w.message), mutant.text):
                out.status = "failure"
                out.notes.append(f"an InertiaWarning names no element: {w.message}")
        numpy_warnings = [w for w in caught if issubclass(w.category, RuntimeWarning)]
        if numpy_warnings:
            out.status = "failure"
            out.notes.append(f"a RuntimeWarning escaped: {numpy_warnings[0].message}")
    except MutantTimeout as exc:
        out = Outcome("failure", "timeout", str(exc))
    except Exception as exc:  # noqa: BLE001 - anything else is what the fuzzer looks for
        out = Outcome("failure", type(exc).__name__, f"{type(exc).__name__}: {exc}")
    finally:
        _disarm(previous)
        out.seconds = time.perf_counter() - start
        out.load_seconds = load_seconds
    if load_seconds > time_limit:
        out.status = "failure"
        out.notes.append(f"the loader took {load_seconds:.1f} s")
    return out


# ------------------------------------------------------------------------------------------------
# checks of a loaded model


def _rel_err(actual, expected, scale) -> float:
    return float(np.max(np.abs(np.asarray(actual) - expected), initial=0.0) / max(scale, 1e-300))


def _identity_checks(model, rng, states: int) -> tuple[str, list[str]]:
    """rnea/aba finite; aba inverts rnea (backward error against crba and nonlinear_effects); rnea
    equals crba·a + nonlinear_effects. Returns ("identities" or the dynamics error, problems)."""
    problems = []
    try:
        data = model.create_data(native_programs=False)
        q0 = ld.neutral(model)
        for _ in range(states):
            q = ld.integrate(model, q0, 0.5 * rng.standard_normal(model.nv))
            v, a = rng.standard_normal(model.nv), rng.standard_normal(model.nv)
            tau = ld.rnea(model, data, q, v, a)
            acc = ld.aba(model, data, q, v, tau)
            M = ld.crba(model, data, q)
            b = ld.nonlinear_effects(model, data, q, v)
            if not (np.all(np.isfinite(tau)) and np.all(np.isfinite(acc))):
                problems.append("rnea/aba not finite")
                continue
            scale = float(np.max(np.abs(M) @ np.abs(a) + np.abs(b), initial=0.0))
            if _rel_err(tau, M @ a + b, scale) > 1e-9:
                problems.append(f"rnea != crba a + nle ({_rel_err(tau, M @ a + b, scale):.2e})")
            scale2 = float(np.max(np.abs(M) @ np.abs(acc) + np.abs(b) + np.abs(tau), initial=0.0))
            if _rel_err(M @ acc + b, tau, scale2) > 1e-9:
                problems.append(f"aba does not invert rnea ({_rel_err(M @ acc + b, tau, scale2):.2e})")
    except LoopdynError as exc:  # e.g. a singular mass matrix, a mechanism that cannot move
        return f"dynamics refused: {type(exc).__name__}", []
    return "identities", problems


def _check_loaded(model, fmt: str, path: Path, text: str, rng, states: int) -> Outcome:
    detail, problems = _identity_checks(model, rng, states)
    compared = False
    if not detail.startswith("dynamics refused"):
        tree = ld.spanning_tree(model) if model.has_constraints else model
        try:
            compared, more = (
                compare_mjcf_with_mujoco(tree, path, rng, states)
                if fmt == "mjcf"
                else compare_sdf_with_mujoco(tree, model, text, rng, states)
            )
        except LoopdynError as exc:
            compared, more = False, []
            detail = f"dynamics refused: {type(exc).__name__}"
        problems += more
    out = Outcome("loaded" if not problems else "failure", detail, "; ".join(problems), compared=compared)
    return out


# ------------------------------------------------------------------------------------------------
# MuJoCo as the oracle


def _mujoco():
    import mujoco

    return mujoco


def _rot(qw) -> np.ndarray:
    mujoco = _mujoco()
    R = np.zeros(9)
    mujoco.mju_quat2Mat(R, np.asarray(qw, float) / np.linalg.norm(qw))
    return R.reshape(3, 3)


def _random_mj_state(m, rng):
    mujoco = _mujoco()
    qpos = m.qpos0 + 0.6 * rng.standard_normal(m.nq)
    for j in range(m.njnt):
        a = int(m.jnt_qposadr[j])
        if m.jnt_type[j] == 0:
            qpos[a : a + 3] = rng.uniform(-1, 1, 3)
            qpos[a + 3 : a + 7] = rng.standard_normal(4)
        elif m.jnt_type[j] == 1:
            qpos[a : a + 4] = rng.standard_normal(4)
    mujoco.mj_normalizeQuat(m, qpos)
    return qpos, rng.standard_normal(m.nv)


def _mj_terms(m, qpos, qvel):
    """MuJoCo's M (armature included) and bias at (qpos, qvel); ``T`` and ``c`` with
    ``v_mj = T v`` and ``a_mj = T a + c`` (free joints: linear velocity in the world frame)."""
    mujoco = _mujoco()
    d = mujoco.MjData(m)
    d.qpos[:], d.qvel[:] = qpos, qvel
    mujoco.mj_forward(m, d)
    M = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, M)
    T, c = np.eye(m.nv), np.zeros(m.nv)
    for j in range(m.njnt):
        if m.jnt_type[j] == 0:
            qa, va = int(m.jnt_qposadr[j]), int(m.jnt_dofadr[j])
            R = _rot(qpos[qa + 3 : qa + 7])
            T[va : va + 3, va : va + 3] = R
            c[va : va + 3] = R @ np.cross(qvel[va + 3 : va + 6], R.T @ qvel[va : va + 3])
    return M, d.qfrc_bias.copy(), T, c


def tolerance(m) -> float:
    """The relative tolerance of a comparison with MuJoCo's model ``m``: 1e-9, or what the rounding of
    positions allows when the model reaches far from its origin. Both libraries hold positions of
    magnitude ``L`` to ``eps·L`` absolute, so a lever arm of ``ℓ`` between bodies far out is off by
    ``eps·L/ℓ`` relative (``ℓ`` ≥ 1 cm in the seed files; a mutant may move a body 1e11 m away)."""
    lengths = [np.abs(m.body_pos), np.abs(m.body_ipos), np.abs(m.jnt_pos)]
    far = max((float(np.max(x, initial=0.0)) for x in lengths), default=0.0)
    return max(1e-9, 100 * np.finfo(float).eps * far / 1e-2)


def _compare(tree, q, v, M_mj, b_mj, T, c, rng, rtol: float = 1e-9) -> list[str]:
    """rnea and aba of ``tree`` at (q, v) against MuJoCo's M and bias (in loopdyn's coordinates)."""
    M = T.T @ M_mj @ T
    b = T.T @ (b_mj + M_mj @ c)
    a = rng.standard_normal(tree.nv)
    data = tree.create_data()
    tau = ld.rnea(tree, data, q, v, a)
    expected = M @ a + b
    problems = []
    scale = float(np.max(np.abs(M) @ np.abs(a) + np.abs(b), initial=0.0))
    if not np.all(np.isfinite(tau)) or _rel_err(tau, expected, scale) > rtol:
        problems.append(f"rnea differs from MuJoCo's ({_rel_err(tau, expected, scale):.2e} > {rtol:.0e})")
    acc = ld.aba(tree, data, q, v, expected)
    scale2 = float(np.max(np.abs(M) @ np.abs(acc) + np.abs(b) + np.abs(expected), initial=0.0))
    if not np.all(np.isfinite(acc)) or _rel_err(M @ acc + b, expected, scale2) > rtol:
        problems.append(
            f"aba differs from MuJoCo's ({_rel_err(M @ acc + b, expected, scale2):.2e} > {rtol:.0e})"
        )
    return problems


def compare_mjcf_with_mujoco(tree, path: Path, rng, states: int) -> tuple[bool, list[str]]:
    """The (spanning) tree of a loaded MJCF mutant against MuJoCo's compilation of the same file."""
    mujoco = _mujoco()
    m = mujoco.MjModel.from_xml_path(str(path))
    if (tree.spanning_nq, tree.spanning_nv) != (m.nq, m.nv):
        return False, [f"coordinates differ from MuJoCo's: ({tree.nq}, {tree.nv}) vs ({m.nq}, {m.nv})"]
    problems = []
    for _ in range(states):
        qpos, qvel = _random_mj_state(m, rng)
        M_mj, b_mj, T, c = _mj_terms(m, qpos, qvel)
        q, v = ld.from_mujoco(tree, qpos, qvel)
        problems += _compare(tree, q, v, M_mj, b_mj, T, c, rng, tolerance(m))
    return True, problems


# ------------------------------------------------------------------------------------------------
# SDF → MJCF, from the SDF definition (independent of loopdyn's loader)


class _NotComparable(Exception):
    """The SDF mutant uses something this small translator does not write as MJCF."""


def _rpy(r, p, y) -> np.ndarray:
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    Rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    Ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    Rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return Rz @ Ry @ Rx


def _pose(el) -> np.ndarray:
    """4×4 of the first ``<pose>`` child (identity if none)."""
    out = np.eye(4)
    p = None if el is None else el.find("pose")
    if p is None:
        return out
    if p.attrib.get("relative_to") not in (None, "", "__model__") or p.attrib.get("frame"):
        raise _NotComparable("pose relative to a frame")
    x = np.array((p.text or "").split(), float)
    if x.size != 6:
        raise _NotComparable("pose")
    if p.attrib.get("degrees", "false") in ("true", "1"):
        x[3:] = np.radians(x[3:])
    out[:3, :3] = _rpy(*x[3:])
    out[:3, 3] = x[:3]
    return out


def _text(el, tag, default):
    sub = el.find(tag)
    if sub is None:
        return default
    return float(sub.text)


def _axis(joint, tag, X_model_child, X_child_joint) -> np.ndarray:
    """The axis ``tag`` of ``joint`` in its child link's frame."""
    el = joint.find(tag)
    a = np.array([0.0, 0.0, 1.0])
    xyz = None if el is None else el.find("xyz")
    if xyz is not None:
        a = np.array(xyz.text.split(), float)
    a = a / np.max(np.abs(a))  # (entries up to 1e308: the norm of a itself would overflow)
    a = a / np.linalg.norm(a)
    upm = None if el is None else el.find("use_parent_model_frame")
    expressed = "" if xyz is None else xyz.attrib.get("expressed_in", "")
    if expressed == "__model__" or (upm is not None and (upm.text or "").strip() in ("1", "true")):
        return X_model_child[:3, :3].T @ a
    if expressed:
        raise _NotComparable("axis expressed in a link frame")
    return X_child_joint[:3, :3] @ a


def _fmt(x) -> str:
    return " ".join(repr(float(v)) for v in np.ravel(x))


def sdf_tree_as_mjcf(text: str, cut: list[str], root_joint: str = "root_joint") -> tuple[str, dict]:
    """The spanning tree of an SDF document (``cut`` joints and gearboxes left out) as MJCF: one
    MuJoCo body per link in its link frame, hinge/slide/ball joints at the SDF joint frames, the
    universal joint as two hinges named ``<joint>/1`` and ``<joint>``, a free joint named
    ``root_joint`` on the canonical link of a floating model. Returns the XML, per MuJoCo joint
    name the SDF joint type, and per ball joint the rotation ``R`` of its joint frame in the MuJoCo
    body (SDF turns a ball joint's child about the joint frame's axes: ``R_mj(q) = R R(q) Rᵀ``)."""
    model = ET.fromstring(text).find("model")
    links = {el.attrib["name"]: el for el in model.findall("link")}
    X = {name: _pose(el) for name, el in links.items()}
    model_pose = _pose(model)
    X["world"] = np.linalg.inv(model_pose)
    joints = [
        j for j in model.findall("joint") if j.attrib.get("type") != "gearbox" and j.attrib["name"] not in cut
    ]
    static = (model.findtext("static") or "").strip() in ("1", "true")
    world_joints = [j for j in joints if j.findtext("parent") == "world"]
    if static:
        raise _NotComparable("static model")
    adjacent: dict[str, list] = {n: [] for n in [*links, "world"]}
    for j in joints:
        p, c = j.findtext("parent"), j.findtext("child")
        adjacent[p].append((j, c, False))
        adjacent[c].append((j, p, True))
    kinds = {}
    ball_frames = {}

    def inertial(link) -> str:
        el = links[link].find("inertial")
        if el is None:
            return '<inertial pos="0 0 0" mass="1" fullinertia="1 1 1 0 0 0"/>'
        Xi = _pose(el)
        m = _text(el, "mass", 1.0)
        t = el.find("inertia")
        c = {"ixx": 1.0, "iyy": 1.0, "izz": 1.0, "ixy": 0.0, "ixz": 0.0, "iyz": 0.0}
        if t is not None:
            c = {k: _text(t, k, d) for k, d in c.items()}
        Ic = np.array(
            [[c["ixx"], c["ixy"], c["ixz"]], [c["ixy"], c["iyy"], c["iyz"]], [c["ixz"], c["iyz"], c["izz"]]]
        )
        Il = Xi[:3, :3] @ Ic @ Xi[:3, :3].T
        full = [Il[0, 0], Il[1, 1], Il[2, 2], Il[0, 1], Il[0, 2], Il[1, 2]]
        return f'<inertial pos="{_fmt(Xi[:3, 3])}" mass="{m!r}" fullinertia="{_fmt(full)}"/>'

    def body(link, parent, joint, reversed_, seen) -> str:
        rel = np.linalg.inv(X[parent]) @ X[link]
        quat = np.zeros(4)
        _mujoco().mju_mat2Quat(quat, rel[:3, :3].ravel().copy())
        parts = [f'<body name="{link}" pos="{_fmt(rel[:3, 3])}" quat="{_fmt(quat)}">']
        if joint is None:
            if parent == "world" and not world_joints:
                parts.append(f'<freejoint name="{root_joint}"/>')
                kinds[root_joint] = "free"
        else:
            jtype = joint.attrib["type"]
            name = joint.attrib["name"]
            child = joint.findtext("child")
            X_CJ = _pose(joint)
            X_LJ = X_CJ if not reversed_ else np.linalg.inv(X[link]) @ X[child] @ X_CJ
            sign = -1.0 if reversed_ else 1.0

            def axis_here(tag):
                a_child = _axis(joint, tag, X[child], X_CJ)  # in the SDF child's frame
                R = np.eye(3) if not reversed_ else (np.linalg.inv(X[link]) @ X[child])[:3, :3]
                return sign * (R @ a_child)

            anchor = _fmt(X_LJ[:3, 3])
            if jtype in ("revolute", "continuous"):
                parts.append(
                    f'<joint name="{name}" type="hinge" pos="{anchor}" axis="{_fmt(axis_here("axis"))}"/>'
                )
            elif jtype == "prismatic":
                parts.append(
                    f'<joint name="{name}" type="slide" pos="{anchor}" axis="{_fmt(axis_here("axis"))}"/>'
                )
            elif jtype == "ball":  # MuJoCo's ball turns the body's axes, loopdyn's the joint frame's
                parts.append(f'<joint name="{name}" type="ball" pos="{anchor}"/>')
                ball_frames[name] = X_LJ[:3, :3]
            elif jtype == "universal":
                if reversed_:
                    raise _NotComparable("reversed universal joint")
                parts.append(
                    f'<joint name="{name}/1" type="hinge" pos="{anchor}" axis="{_fmt(axis_here("axis"))}"/>'
                )
                parts.append(
                    f'<joint name="{name}" type="hinge" pos="{anchor}" axis="{_fmt(axis_here("axis2"))}"/>'
                )
                kinds[f"{name}/1"] = "revolute"
            elif jtype != "fixed":
                raise _NotComparable(f"joint type {jtype}")
            kinds[name] = jtype
        parts.append(inertial(link))
        for j, other, rev in sorted(adjacent[link], key=lambda t: t[0].attrib["name"]):
            if other in seen or other == "world":
                continue
            seen.add(other)
            parts.append(body(other, link, j, rev, seen))
        parts.append("</body>")
        return "\n".join(parts)

    seen = {"world"}
    bodies = []
    if world_joints:
        for j, other, rev in sorted(adjacent["world"], key=lambda t: t[0].attrib["name"]):
            if other not in seen:
                seen.add(other)
                bodies.append(body(other, "world", j, rev, seen))
    else:
        canonical = model.attrib.get("canonical_link") or next(iter(links))
        seen.add(canonical)
        bodies.append(body(canonical, "world", None, False, seen))
    xml = (
        '<mujoco><compiler angle="radian" inertiafromgeom="false" balanceinertia="false"/>'
        '<option gravity="0 0 -9.81"/><worldbody>' + "\n".join(bodies) + "</worldbody></mujoco>"
    )
    return xml, kinds, ball_frames


def compare_sdf_with_mujoco(tree, model, text: str, rng, states: int) -> tuple[bool, list[str]]:
    """The (spanning) tree of a loaded SDF mutant against MuJoCo's model of the SDF definition.
    Not compared (False) when the translator does not handle the document or MuJoCo refuses it
    (e.g. its inertia checks)."""
    mujoco = _mujoco()
    cut = list(getattr(model, "sdf_cut_joints", []))
    try:
        xml, kinds, ball_frames = sdf_tree_as_mjcf(text, cut)
        m = mujoco.MjModel.from_xml_string(xml)
    except (_NotComparable, ValueError, KeyError, TypeError, AttributeError):
        return False, []
    if any(b.joint.kind == "free-flyer" for b in tree.bodies) != any(k == "free" for k in kinds.values()):
        return False, []
    # loopdyn's coordinates of MuJoCo's state, joint by joint (names as written above)
    problems = []
    for _ in range(states):
        qpos, qvel = _random_mj_state(m, rng)
        q, v = np.zeros(tree.nq), np.zeros(tree.nv)
        Tball = np.eye(m.nv)
        for b in tree.bodies:
            j = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, b.joint_name)
            if j < 0:
                return False, [f"joint {b.joint_name!r} of loopdyn's model is not in the SDF's tree"]
            qa, va = int(m.jnt_qposadr[j]), int(m.jnt_dofadr[j])
            iq, iv, kind = b.idx_q, b.idx_v, b.joint.kind
            if kind in ("revolute", "prismatic"):
                q[iq], v[iv] = qpos[qa], qvel[va]
            elif kind == "continuous":
                q[iq : iq + 2] = math.cos(qpos[qa]), math.sin(qpos[qa])
                v[iv] = qvel[va]
            elif kind == "spherical":
                R = ball_frames[b.joint_name]
                quat = np.zeros(4)
                mujoco.mju_mat2Quat(quat, (R.T @ _rot(qpos[qa : qa + 4]) @ R).ravel().copy())
                q[iq : iq + 4] = quat[[1, 2, 3, 0]]
                v[iv : iv + 3] = R.T @ qvel[va : va + 3]
                Tball[va : va + 3, va : va + 3] = R
            elif kind == "free-flyer":
                R = _rot(qpos[qa + 3 : qa + 7])
                q[iq : iq + 7] = qpos[[qa, qa + 1, qa + 2, qa + 4, qa + 5, qa + 6, qa + 3]]
                v[iv : iv + 3] = R.T @ qvel[va : va + 3]
                v[iv + 3 : iv + 6] = qvel[va + 3 : va + 6]
            else:
                return False, [f"unexpected joint kind {kind}"]
        if tree.nv != m.nv:
            return False, [f"{tree.nv} velocities, MuJoCo's tree of the SDF has {m.nv}"]
        M_mj, b_mj, T, c = _mj_terms(m, qpos, qvel)
        # loopdyn's velocity order is not MuJoCo's: permute MuJoCo's terms into loopdyn's order
        P = np.zeros((m.nv, tree.nv))
        for b in tree.bodies:
            j = mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, b.joint_name)
            va = int(m.jnt_dofadr[j])
            for k in range(b.joint.nv):
                P[va + k, b.idx_v + k] = 1.0
        problems += _compare(tree, q, v, M_mj, b_mj, T @ Tball @ P, c, rng, tolerance(m))
    return True, problems
