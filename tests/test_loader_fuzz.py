"""The MJCF and SDF loaders under a seeded mutation fuzzer (:mod:`loader_fuzz`).

300 mutants per format of loopdyn's test files and small shipped files (MuJoCo, dm_control,
gymnasium): each must load — then ``rnea``/``aba`` on random states are finite, consistent, and the
tree equals MuJoCo's on the same model (for SDF, MuJoCo's model of the SDF definition) — or raise a
:class:`~loopdyn.errors.LoopdynError` naming the element, within 10 s. ``benchmarks/fuzz_loaders.py``
runs the same fuzzer longer, over every shipped file.

Below the fuzz, each loader bug the fuzzer found, kept as a small regression case, and negative
controls showing that the oracles can fail.
"""

from __future__ import annotations

import collections
import math
import os
import warnings
from pathlib import Path

import numpy as np
import pytest

import loopdyn as ld
from loopdyn.errors import MJCFError, SDFError, URDFError

pytest.importorskip("mujoco")
import loader_fuzz as F  # noqa: E402  (after the skip: it needs MuJoCo)

MUTANTS = 300
BASE_SEED = 29  # the number: change it to fuzz other mutants
TIME_LIMIT = 10.0  # seconds per mutant


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    """Where mutants are written; MuJoCo's log (MUJOCO_LOG.TXT) goes there too, not in the checkout."""
    folder = tmp_path_factory.mktemp("fuzz")
    cwd = os.getcwd()
    os.chdir(folder)
    yield folder
    os.chdir(cwd)


def _fuzz(fmt: str, work: Path):
    seeds = F.mjcf_seeds() if fmt == "mjcf" else F.sdf_seeds()
    usable, outcomes = F.usable_seeds(seeds, fmt, work)
    assert usable == seeds, {str(s): o for s, o in outcomes.items() if o.status != "loaded"}
    results = []
    for i in range(MUTANTS):
        mutant = F.make_mutant(seeds[i % len(seeds)], fmt, i, BASE_SEED)
        results.append((mutant, F.run_mutant(mutant, fmt, work, time_limit=TIME_LIMIT, states=1)))
    return results


def _report(results) -> str:
    lines = []
    for mutant, out in results:
        if out.status == "failure":
            lines.append(
                f"{mutant.seed.name} #{mutant.index} {mutant.operations}: {out.detail} {out.message[:300]!r} "
                f"{out.notes} ({out.seconds:.1f} s)"
            )
    return "\n".join(lines)


@pytest.mark.parametrize("fmt", ["mjcf", "sdf"])
def test_mutants_load_correctly_or_raise_a_named_error(fmt, work):
    results = _fuzz(fmt, work)
    failures = _report(results)
    assert not failures, f"{fmt} mutants that failed:\n{failures}"
    statuses = collections.Counter(out.status for _, out in results)
    errors = collections.Counter(out.detail for _, out in results if out.status == "error")
    compared = sum(out.compared for _, out in results)
    # the fuzzer exercises both outcomes, several error kinds, and MuJoCo's comparison
    assert statuses["loaded"] >= 0.2 * MUTANTS and statuses["error"] >= 0.2 * MUTANTS, statuses
    assert len(errors) >= 2, errors
    assert compared >= 0.15 * MUTANTS, compared
    assert max(out.load_seconds for _, out in results) < TIME_LIMIT


# ------------------------------------------------------------------------------------------------
# negative controls: the oracles and the error check can fail


def test_a_wrong_model_fails_the_mujoco_comparison(work):
    path = F.DATA / "mjcf" / "tree_features.xml"
    model = ld.load_mjcf(path)
    ok, problems = F.compare_mjcf_with_mujoco(model, path, np.random.default_rng(0), 2)
    assert ok and not problems
    text = path.read_text()
    for old, new in (
        ('gravity="0.3 -0.2 -9.7"', 'gravity="0.3 -0.2 -9.71"'),
        ('armature="0.3"', 'armature="0.31"'),
    ):
        assert old in text
        wrong = ld.load_mjcf(text.replace(old, new, 1))  # the same structure, one number off
        ok, problems = F.compare_mjcf_with_mujoco(wrong, path, np.random.default_rng(0), 2)
        assert ok and any("differs from MuJoCo's" in p for p in problems), (old, problems)


def test_a_wrong_model_fails_the_sdf_comparison():
    text = (F.DATA / "sdf" / "tree.sdf").read_text()
    model = ld.load_sdf(text)
    ok, problems = F.compare_sdf_with_mujoco(model, model, text, np.random.default_rng(0), 2)
    assert ok and not problems
    # the translator reads the document, not the model: an edited document no longer matches
    edited = text.replace("<mass>1.2</mass>", "<mass>1.3</mass>")
    ok, problems = F.compare_sdf_with_mujoco(model, model, edited, np.random.default_rng(0), 2)
    assert ok and any("differs from MuJoCo's" in p for p in problems)


def test_the_error_check_needs_a_line_or_a_name_of_the_document():
    text = '<mujoco><worldbody><body name="arm"/></worldbody></mujoco>'
    assert F.names_an_element("f.xml:3: something", text)
    assert F.names_an_element("body 'arm': something", text)
    assert F.names_an_element("<worldbody> is wrong", text)
    assert F.names_an_element("equality 'equality3': unnamed, named by its index", text)
    assert not F.names_an_element("Revolute: axis (0.0, 0.0, 0.0) has zero length", text)
    assert not F.names_an_element("body 'leg': something", text)
    # MuJoCo's message for a missing file prefixes its folder
    assert F.names_an_element("Error opening file 'meshes/cube.stl'", '<mesh file="cube.stl"/>')
    assert not F.names_an_element("Error opening file 'meshes/cube.stl'", '<mesh file="other.stl"/>')


def test_mutants_are_reproducible():
    seed = F.DATA / "sdf" / "fourbar.sdf"
    a, b = F.make_mutant(seed, "sdf", 7, BASE_SEED), F.make_mutant(seed, "sdf", 7, BASE_SEED)
    assert a.text == b.text and a.operations == b.operations
    assert F.make_mutant(seed, "sdf", 8, BASE_SEED).text != a.text


# ------------------------------------------------------------------------------------------------
# regression cases: the loader bugs the fuzzer found (each the smallest document that showed it)


def _no_runtime_warning():
    ctx = warnings.catch_warnings()
    ctx.__enter__()
    warnings.simplefilter("error", RuntimeWarning)
    return ctx


SDF_TREE = """<sdf version="1.6"><model name="m">
<link name="base"><inertial><mass>1</mass></inertial></link>
<link name="arm"><pose>0.1 0 0 0 0 0</pose><inertial><pose>0 0 0 0.3 0 0</pose><mass>1</mass>
<inertia><ixx>{ixx}</ixx><iyy>1</iyy><izz>1</izz></inertia></inertial></link>
<joint name="j" type="revolute"><parent>base</parent><child>arm</child><axis><xyz>{axis}</xyz></axis></joint>
</model></sdf>"""


def test_sdf_huge_axis_entries_give_the_direction():
    """``<xyz>1e308 1e308 0</xyz>``: its norm overflowed (RuntimeWarning) and the axis was called zero
    length; it is the direction (1, 1, 0)/√2."""
    ctx = _no_runtime_warning()
    try:
        m = ld.load_sdf(SDF_TREE.format(ixx=1, axis="1e308 1e308 0"))
    finally:
        ctx.__exit__(None, None, None)
    np.testing.assert_allclose(
        m.bodies[1].joint.axis_array(), [math.sqrt(0.5), math.sqrt(0.5), 0.0], rtol=1e-15
    )
    with pytest.raises(SDFError, match="joint 'j': the axis has zero length") as info:
        ld.load_sdf(SDF_TREE.format(ixx=1, axis="1e-300 0 0"))
    assert info.value.line == 5


@pytest.mark.parametrize("ixx", ["1e308", "1e31"])
def test_sdf_absurd_inertia_is_refused_naming_the_link(ixx):
    """An inertia entry of 1e308 in a rotated inertial frame overflowed (RuntimeWarning, then
    LinAlgError or 'not finite'); beyond 1e30 it is refused naming the link and its line."""
    ctx = _no_runtime_warning()
    try:
        with pytest.raises(SDFError, match=r"link 'arm': <inertia>: 1e\+3\d+ is larger than 1e\+30") as info:
            ld.load_sdf(SDF_TREE.format(ixx=ixx, axis="0 0 1"))
    finally:
        ctx.__exit__(None, None, None)
    assert info.value.line == 4


def test_sdf_and_urdf_absurd_lengths_and_ratios_are_refused():
    with pytest.raises(SDFError, match=r"link 'arm': <pose> position: 1e\+200 is larger"):
        ld.load_sdf(SDF_TREE.format(ixx=1, axis="0 0 1").replace("<pose>0.1 0 0", "<pose>1e200 0 0"))
    gearbox = (F.DATA / "sdf" / "gearbox.sdf").read_text().replace("-0.125", "-1e300")
    with pytest.raises(SDFError, match=r"joint 'reduction': <gearbox_ratio>: 1e\+300 is larger"):
        ld.load_sdf(gearbox)
    urdf = """<robot name="r"><link name="a"/><link name="b"/>
<joint name="j" type="fixed"><origin xyz="0 -1e300 0"/><parent link="a"/><child link="b"/></joint></robot>"""
    with pytest.raises(URDFError, match=r"joint 'j': origin xyz: 1e\+300 is larger") as info:
        ld.load_urdf(urdf)
    assert info.value.line == 2


MJCF_HINGE = """<mujoco><worldbody><body name="arm" pos="{pos}">
<joint name="elbow" type="hinge" axis="{axis}"/><geom type="sphere" size="0.1"/>
</body></worldbody></mujoco>"""


@pytest.mark.parametrize(
    ("pos", "axis", "match"),
    [
        ("0 0 0", "1e308 1e308 0", "joint 'elbow' of body 'arm': axis .* is not a direction"),  # was unnamed
        ("0 0 0", "nan 0 1", r"joint 'elbow' of body 'arm': axis \[nan, .* is not finite"),  # was unnamed
        ("0 inf 0", "0 0 1", r"body 'arm': pos \[0.0, inf, 0.0\] is not finite"),  # was a RuntimeWarning
        ("0 1e300 0", "0 0 1", r"body 'arm': pos .* is larger than 1e\+30"),
        # MuJoCo normalises a quaternion with an overflowing entry to zeros (was NaN and a RuntimeWarning)
        ('0 0 0" quat="1 0 1e300 0', "0 0 1", r"body 'arm': quat \[0.0, 0.0, 0.0, 0.0\] is not a rotation"),
    ],
)
def test_mjcf_values_mujoco_compiles_but_no_model_has_are_refused_by_name(pos, axis, match):
    """MuJoCo compiles NaN (with a warning) and overflowing axes (normalised to zero); loopdyn's
    error used to name no element, and NumPy warned on the way."""
    ctx = _no_runtime_warning()
    try:
        with pytest.raises(MJCFError, match=match):
            ld.load_mjcf(MJCF_HINGE.format(pos=pos, axis=axis))
    finally:
        ctx.__exit__(None, None, None)


def test_sdf_loop_that_ties_nothing_is_refused_by_the_dynamics_not_a_type_error():
    """The gearbox seed with its gearbox turned into a revolute joint: a cut revolute joint between two
    links already turning about the same axis from the same body, so every row of the loop is
    redundant. ``integrate`` used to fail in SymPy (TypeError: a Jacobian of no rows); the cluster of
    no constraint rows is now refused by the dynamics with a ConfigurationError naming it."""
    text = (F.DATA / "sdf" / "gearbox.sdf").read_text().replace('type="gearbox"', 'type="revolute"')
    m = ld.load_sdf(text)
    assert m.sdf_cut_joints == ["reduction"]
    q = ld.integrate(m, ld.neutral(m), np.full(m.nv, 0.1))
    assert np.all(np.isfinite(q))
    with pytest.raises(ld.errors.ConfigurationError, match=r"cluster \['output', 'rotor'\]"):
        ld.aba(m, m.create_data(), q, np.zeros(m.nv), np.zeros(m.nv))
