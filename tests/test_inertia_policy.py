"""The inertia policy shared by the loaders and the builder, and the sources every loader refuses.

A rotational inertia whose principal moments violate the triangle inequality (no rigid body has it)
is loaded with an :class:`~loopdyn.errors.InertiaWarning` by default (``"warn"``), refused with
``"physical"`` and loaded silently with ``"accept"``, by ``load_urdf``, ``load_sdf``, ``load_mjcf``
(where MuJoCo's compiler decides first) and ``Model.add_body``. One implementation
(:func:`loopdyn.spatial.inertia.check_physical_inertia`) decides, relative to the inertia's trace.

The held-out example-robot-data robots that the old default refused load, and their dynamics match
Pinocchio's (an independent implementation reading the same files).
"""

from __future__ import annotations

import warnings
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
import trees

import loopdyn as ld
from loopdyn.errors import InertiaWarning, MJCFError, ModelError, SDFError, URDFError
from loopdyn.spatial.inertia import (
    INERTIA_ATOL,
    TRIANGLE_RTOL,
    Inertia,
    check_physical_inertia,
    inertia_violation,
)

BAD = np.diag([0.01, 0.01, 0.05])  # 0.01 + 0.01 < 0.05: excess 0.03, 42.9 % of the trace 0.07


def _silent():
    """A context in which any warning is an error (the negative control of every warning test)."""
    ctx = warnings.catch_warnings()
    ctx.__enter__()
    warnings.simplefilter("error")
    return ctx


def _point_masses(rng, n=5) -> np.ndarray:
    """Rotational inertia about the centre of mass of n random point masses (always physical)."""
    m = rng.uniform(0.1, 1.0, n)
    x = rng.normal(size=(n, 3))
    r = x - (m[:, None] * x).sum(0) / m.sum()
    return sum(mk * (rk @ rk * np.eye(3) - np.outer(rk, rk)) for mk, rk in zip(m, r, strict=True))


# ------------------------------------------------------------------------------------------------
# the one check


@pytest.mark.parametrize("seed", range(10))
def test_the_check_accepts_real_bodies_and_refuses_a_perturbed_one(seed):
    """Point-mass bodies (independent of the check) pass at any scale; pushing their largest
    principal moment 1e-4 of the trace past the sum of the two others fails, at any scale."""
    rng = np.random.default_rng(seed)
    I = _point_masses(rng)
    w, V = np.linalg.eigh(I)
    for scale in (1e-9, 1.0, 1e9):
        assert inertia_violation(Inertia(1.0, np.zeros(3), scale * I)) is None
        w2 = w.copy()
        w2[2] = w[0] + w[1] + 1e-4 * w.sum()
        bad = Inertia(1.0, np.zeros(3), scale * (V @ np.diag(w2) @ V.T))
        if scale * 1e-4 * w.sum() > INERTIA_ATOL:  # above the absolute floor
            assert "triangle inequality" in inertia_violation(bad)


def test_the_check_is_relative_to_the_trace_with_an_absolute_floor():
    assert inertia_violation(Inertia(1.0, np.zeros(3), np.zeros((3, 3)))) is None
    # icub's head: ixz = 2.4e-35 only (principal moments -2.4e-35, 0, 2.4e-35)
    head = np.zeros((3, 3))
    head[0, 2] = head[2, 0] = 2.40741e-35
    assert inertia_violation(Inertia(1.33687, np.zeros(3), head)) is None
    # within the relative tolerance / just beyond it
    ok = np.diag([1.0, 1.0, 2.0 + 4 * TRIANGLE_RTOL * 0.5])
    assert inertia_violation(Inertia(1.0, np.zeros(3), ok)) is None
    beyond = np.diag([1.0, 1.0, 2.0 + 4 * TRIANGLE_RTOL * 2])
    assert inertia_violation(Inertia(1.0, np.zeros(3), beyond)) is not None
    message = inertia_violation(Inertia(1.0, np.zeros(3), BAD))
    assert "0.01 + 0.01 < 0.05 by 0.03 (42.9 % of the trace)" in message


def test_check_modes():
    inertia = Inertia(1.0, np.zeros(3), BAD)
    with pytest.raises(ModelError, match="^thing: rotational inertia violates .*; do something$"):
        check_physical_inertia(inertia, "thing", "physical", hint="do something")
    with pytest.warns(InertiaWarning, match=r"^here: thing: rotational inertia .*loaded as written"):
        check_physical_inertia(inertia, "thing", "warn", where="here: ")
    ctx = _silent()
    try:
        check_physical_inertia(inertia, "thing", "accept")
        check_physical_inertia(Inertia(1.0, np.zeros(3), np.diag([0.01, 0.02, 0.03])), "thing", "warn")
    finally:
        ctx.__exit__(None, None, None)
    with pytest.raises(ModelError, match="must be one of"):
        check_physical_inertia(inertia, "thing", "refuse")


def test_absurd_inertias_are_model_errors_not_linalg_errors():
    """NumPy's eigenvalue solver fails on entries of 1e308 ('Eigenvalues did not converge'): the
    check scales first, and values beyond 1e30 are refused by name."""
    for bad in (np.diag([1e308, 1.0, 1.0]), np.full((3, 3), 1e308), np.diag([1e31, 1e31, 1e31])):
        with pytest.raises(ModelError, match=r"^body 'b': rotational inertia: .* larger than 1e\+30"):
            Inertia(1.0, np.zeros(3), bad, name="body 'b'")
    with pytest.raises(ModelError, match="mass: 1e\\+300 is larger"):
        Inertia(1e300, np.zeros(3), np.eye(3))
    with pytest.raises(ModelError, match="centre of mass: 1e\\+200 is larger"):
        Inertia(1.0, (1e200, 0.0, 0.0), np.eye(3))
    big = Inertia(1e29, (1e29, 0.0, 0.0), np.diag([1e29, 1e29, 1e29]))  # huge, not absurd
    assert inertia_violation(big) is None


# ------------------------------------------------------------------------------------------------
# the builder


def test_builder_warns_by_default_naming_the_body():
    model = ld.Model("m")
    with pytest.warns(
        InertiaWarning, match=r"^body 'rod': rotational inertia .* \(42\.9 % of the trace\)"
    ) as rec:
        model.add_body("rod", 0, ld.Revolute((0, 0, 1)), None, Inertia(1.0, np.zeros(3), BAD))
    assert len(rec) == 1 and rec[0].filename == __file__  # it points at the call of add_body
    np.testing.assert_array_equal(model.bodies[0].inertia.inertia, BAD)
    with pytest.raises(ModelError, match="body 'rod2': rotational inertia .*inertia_check='accept'"):
        model.add_body(
            "rod2", 0, ld.Revolute((0, 0, 1)), None, Inertia(1.0, np.zeros(3), BAD), inertia_check="physical"
        )
    assert model.nbodies == 1  # nothing added
    with pytest.raises(ModelError, match="inertia_check must be one of"):
        model.add_body("rod3", 0, ld.Revolute((0, 0, 1)), None, None, inertia_check="no")
    ctx = _silent()
    try:
        model.add_body(
            "rod4", 0, ld.Revolute((0, 0, 1)), None, Inertia(1.0, np.zeros(3), BAD), inertia_check="accept"
        )
        model.add_body("ok", 0, ld.Revolute((0, 0, 1)), None, Inertia(1.0, np.zeros(3), np.diag([1, 2, 3.0])))
        # a fixed joint lumps a checked inertia; a compound joint warns once, for its last body
        model.add_body("lump", "ok", ld.Fixed(), None, Inertia(1.0, np.zeros(3), np.eye(3)))
    finally:
        ctx.__exit__(None, None, None)
    with pytest.warns(InertiaWarning, match="^body 'cardan'") as rec:
        model.add_body(
            "cardan", "ok", ld.Universal((1, 0, 0), (0, 1, 0)), None, Inertia(1.0, np.zeros(3), BAD)
        )
    assert len(rec) == 1
    # rebuilding a model (partition: bodies copied, a ball joint split into sub-hinges) does not warn again
    ctx = _silent()
    try:
        model.add_body(
            "ball", "ok", ld.Spherical(), None, Inertia(1.0, np.zeros(3), BAD), inertia_check="accept"
        )
        split, _ = ld.partition(model)
    finally:
        ctx.__exit__(None, None, None)
    assert split.nbodies == model.nbodies + 2


# ------------------------------------------------------------------------------------------------
# SDF and MJCF


SDF = """<?xml version="1.0"?>
<sdf version="1.6">
<model name="m">
<link name="base"><inertial><mass>1</mass><inertia><ixx>0.01</ixx><iyy>0.01</iyy><izz>0.05</izz></inertia>
</inertial></link>
<link name="arm"><pose>0.1 0 0 0 0 0</pose></link>
<joint name="j" type="revolute"><parent>base</parent><child>arm</child></joint>
</model>
</sdf>
"""


def test_sdf_policy_names_file_link_and_line(tmp_path):
    path = tmp_path / "m.sdf"
    path.write_text(SDF)
    with pytest.warns(InertiaWarning, match=rf"^{path}:4: link 'base': .*\(42\.9 % of the trace\)") as rec:
        model = ld.load_sdf(path)
    assert len(rec) == 1
    np.testing.assert_array_equal(model.bodies[0].inertia.inertia, BAD)
    with pytest.raises(SDFError, match="link 'base': rotational inertia") as info:
        ld.load_sdf(path, inertia="physical")
    assert (info.value.line, info.value.source) == (4, str(path))
    ctx = _silent()
    try:
        ld.load_sdf(path, inertia="accept")
        ld.load_sdf(SDF.replace("<izz>0.05</izz>", "<izz>0.02</izz>"))  # physical: no warning
    finally:
        ctx.__exit__(None, None, None)


MJCF = """<mujoco model="m">
  <worldbody>
    <body name="rod"><joint name="j" type="hinge"/>
      <inertial pos="0.1 0 0" mass="1" diaginertia="0.01 0.01 0.05"/>
    </body>
  </worldbody>
</mujoco>
"""


def test_mjcf_policy_mujoco_decides_for_documents_loopdyn_for_compiled_models():
    """MuJoCo's compiler refuses such an inertia in a document (its message names the body and
    line), in every mode; in an MjModel edited after compilation, loopdyn's policy applies."""
    mujoco = pytest.importorskip("mujoco")
    for mode in ("warn", "physical", "accept"):
        with pytest.raises(MJCFError, match=r"A \+ B >= C(.|\n)*Element name 'rod', id 1, line 3"):
            ld.load_mjcf(MJCF, inertia=mode)
    m = mujoco.MjModel.from_xml_string(MJCF.replace("0.01 0.01 0.05", "0.01 0.02 0.025"))
    ctx = _silent()
    try:
        ld.load_mjcf(m)  # physical
    finally:
        ctx.__exit__(None, None, None)
    m.body_inertia[1] = [0.01, 0.01, 0.05]
    with pytest.warns(InertiaWarning, match=r"^MjModel: body 'rod': .*\(42\.9 % of the trace\)"):
        model = ld.load_mjcf(m)
    np.testing.assert_allclose(model.bodies[0].inertia.inertia, BAD, rtol=0, atol=1e-17)
    with pytest.raises(MJCFError, match="^MjModel: body 'rod': rotational inertia violates"):
        ld.load_mjcf(m, inertia="physical")
    ctx = _silent()
    try:
        ld.load_mjcf(m, inertia="accept")
    finally:
        ctx.__exit__(None, None, None)
    m.body_inertia[1] = [1e308, 1.0, 1.0]
    with pytest.raises(MJCFError, match="body 'rod': inertia .* larger than 1e\\+30"):
        ld.load_mjcf(m)


# ------------------------------------------------------------------------------------------------
# sources that are not files


@pytest.mark.parametrize(
    ("load", "error"), [(ld.load_urdf, URDFError), (ld.load_sdf, SDFError), (ld.load_mjcf, MJCFError)]
)
def test_empty_string_and_directory_get_the_loaders_error(load, error, tmp_path):
    with pytest.raises(error, match="empty string"):
        load("")
    with pytest.raises(error, match="empty string"):
        load("  \n")
    for folder in (tmp_path, str(tmp_path)):
        with pytest.raises(error, match="is a directory") as info:
            load(folder)
        assert str(tmp_path) in str(info.value)
        assert not isinstance(info.value, IsADirectoryError)
    with pytest.raises(FileNotFoundError):  # still a FileNotFoundError for a missing file
        load(tmp_path / "missing.xml")


# ------------------------------------------------------------------------------------------------
# the held-out example-robot-data robots the old default refused

HELD_OUT = {  # name: (file, floating base, links that violate the triangle inequality)
    "anymal": ("anymal_b_simple_description/robots/anymal.urdf", True, ["base"]),
    "allegro": (
        "allegro_hand_description/urdf/allegro_right_hand.urdf", False,
        ["link_3.0", "link_7.0", "link_11.0", "link_15.0"],
    ),
    "romeo": ("romeo_description/urdf/romeo_small.urdf", True, ["RShoulderYawLink", "RElbowYawLink"]),
    "icub": ("icub_description/robots/icub.urdf", True, []),  # only rounding-level inertias (1e-35..1e-18)
}  # fmt: skip


def _violations_by_hand(path: Path) -> list[str]:
    """Links whose tensor, read with ElementTree, has I1 + I2 < I3 beyond 1e-6 of the trace and 1e-12."""
    out = []
    for link in ET.parse(path).getroot().findall("link"):
        el = link.find("inertial")
        if el is None:
            continue
        t = {k: float(v) for k, v in el.find("inertia").attrib.items()}
        I = np.array(
            [[t["ixx"], t["ixy"], t["ixz"]], [t["ixy"], t["iyy"], t["iyz"]], [t["ixz"], t["iyz"], t["izz"]]]
        )
        w = np.linalg.eigvalsh(I)
        if w[2] - w[0] - w[1] > 1e-6 * w.sum() + 1e-12:
            out.append(link.get("name"))
    return out


@pytest.mark.parametrize("name", sorted(HELD_OUT))
def test_held_out_robots_load_with_warnings_and_match_pinocchio(name):
    pin = pytest.importorskip("pinocchio")
    rel, floating, violating = HELD_OUT[name]
    path = Path(trees.example_robot_data_dir()) / rel
    if not path.is_file():
        pytest.skip("example-robot-data is not installed")
    assert _violations_by_hand(path) == violating
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        lm = ld.load_urdf(path, floating_base=floating, mimic="independent")
    assert [w.category for w in rec] == [InertiaWarning] * len(violating)
    lines = path.read_text().splitlines()
    for w, link in zip(rec, violating, strict=True):
        message = str(w.message)
        assert message.startswith(f"{path}:") and f": link '{link}': rotational inertia" in message
        line = int(message[len(str(path)) + 1 :].split(":")[0])
        assert f'name="{link}"' in lines[line - 1]
        assert "% of the trace" in message
    if violating:
        with pytest.raises(URDFError, match=f"link '{violating[0]}'"):
            ld.load_urdf(path, floating_base=floating, mimic="independent", inertia="physical")
    pm = (
        pin.buildModelFromUrdf(str(path), pin.JointModelFreeFlyer())
        if floating
        else pin.buildModelFromUrdf(str(path))
    )
    assert (lm.nq, lm.nv) == (pm.nq, pm.nv)
    pd, data = pm.createData(), lm.create_data()
    rng = np.random.default_rng(29)
    eps = np.finfo(float).eps
    for _ in range(4):
        q, v, a = trees.random_state(rng, lm)
        tau = pin.rnea(pm, pd, q, v, a).copy()
        assert np.max(np.abs(ld.rnea(lm, data, q, v, a) - tau)) <= 1e-9 * np.max(np.abs(tau))
        expected = pin.aba(pm, pd, q, v, tau).copy()
        M = pin.crba(pm, pd, q)
        M = np.triu(M) + np.triu(M, 1).T
        acc = ld.aba(lm, data, q, v, tau)
        # forward error: 1e-9, or what the conditioning of M allows; backward error: to rounding
        bound = max(1e-9, 10 * eps * np.linalg.cond(M))
        assert np.max(np.abs(acc - expected)) <= bound * np.max(np.abs(expected))
        residual = M @ acc + pin.nle(pm, pd, q, v) - tau
        assert np.max(np.abs(residual)) <= 1e-12 * np.max(np.abs(tau))
