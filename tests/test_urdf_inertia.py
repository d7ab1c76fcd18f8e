"""Rotational inertias that no rigid body has (principal moments violating the triangle inequality):
``load_urdf`` loads them with an :class:`~loopdyn.errors.InertiaWarning` by default
(``inertia="warn"``), ``inertia="physical"`` refuses them and ``inertia="accept"`` loads them
silently, as Pinocchio does. Absurd numbers (an inertia of 1e308) are refused naming the link."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from reference_files import grbda_file

from loopdyn.errors import InertiaWarning, InputError, URDFError
from loopdyn.io import load_urdf


def _robot(ixx, iyy, izz, ixy=0.0, ixz=0.0, iyz=0.0, rpy="0 0 0") -> str:
    c = dict(ixx=ixx, iyy=iyy, izz=izz, ixy=ixy, ixz=ixz, iyz=iyz)
    tensor = " ".join(f'{k}="{float(v)!r}"' for k, v in c.items())
    return f"""<robot name="r">
  <link name="base"/>
  <link name="rod">
    <inertial>
      <origin xyz="0.1 0 0" rpy="{rpy}"/>
      <mass value="2.0"/>
      <inertia {tensor}/>
    </inertial>
  </link>
  <joint name="j" type="continuous"><parent link="base"/><child link="rod"/><axis xyz="0 0 1"/></joint>
</robot>"""


def _point_mass_inertia(rng, n=6):
    """The rotational inertia about the centre of mass of n random point masses (always physical)."""
    m = rng.uniform(0.1, 1.0, n)
    x = rng.normal(size=(n, 3))
    c = (m[:, None] * x).sum(0) / m.sum()
    r = x - c
    return sum(mk * (rk @ rk * np.eye(3) - np.outer(rk, rk)) for mk, rk in zip(m, r, strict=True))


def test_violating_link_is_refused_with_its_name_and_line():
    xml = _robot(0.01, 0.01, 0.05)  # 0.01 + 0.01 < 0.05
    with pytest.raises(URDFError, match="'rod'.*triangle inequality") as info:
        load_urdf(xml, inertia="physical")
    assert info.value.line == 3
    assert "inertia='accept'" in str(info.value)


def test_the_default_loads_with_a_warning_naming_file_link_line_and_how_far_off(tmp_path):
    xml = _robot(0.01, 0.01, 0.05)  # I3 - I1 - I2 = 0.03, 3/7 of the trace 0.07
    with pytest.warns(InertiaWarning) as record:
        model = load_urdf(xml)
    assert len(record) == 1
    message = str(record[0].message)
    assert message.startswith("line 3: link 'rod': rotational inertia violates the triangle inequality")
    assert "by 0.03 (42.9 % of the trace)" in message
    np.testing.assert_array_equal(model.bodies[0].inertia.inertia, np.diag([0.01, 0.01, 0.05]))
    assert record[0].filename == __file__  # the warning points at the caller's line
    # from a file: the path and the line
    path = tmp_path / "rod.urdf"
    path.write_text(xml)
    with pytest.warns(InertiaWarning, match=rf"^{path}:3: link 'rod': .* \(42\.9 % of the trace\)"):
        load_urdf(path)
    assert issubclass(InertiaWarning, UserWarning)


def test_accept_loads_the_tensor_as_written_without_a_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = load_urdf(_robot(0.01, 0.01, 0.05), inertia="accept")
    np.testing.assert_array_equal(model.bodies[0].inertia.inertia, np.diag([0.01, 0.01, 0.05]))


def test_physical_inertias_load_without_a_warning():
    """Negative control of the warning: a physical inertia, a zero one and a rounding-level one."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_urdf(_robot(0.01, 0.02, 0.025))
        load_urdf(_robot(0.0, 0.0, 0.0))
        # icub's head: principal moments -2.4e-35, 0, 2.4e-35 (a point mass in all but rounding)
        load_urdf(_robot(0.0, 0.0, 0.0, ixz=2.40741e-35), inertia="physical")


def test_the_test_is_relative_to_the_trace():
    """The same shape of inertia at every scale: refused at 1e-3 and at 1e3; a 1e-7 relative excess
    (printing rounding) passes at every scale, a 1e-5 one fails."""
    for scale in (1e-3, 1.0, 1e3):
        with pytest.raises(URDFError, match="'rod'"):
            load_urdf(_robot(0.01 * scale, 0.01 * scale, 0.05 * scale), inertia="physical")
        load_urdf(_robot(1.0 * scale, 1.0 * scale, 2.0 * scale * (1 + 1e-7)), inertia="physical")
        with pytest.raises(URDFError, match="'rod'"):
            load_urdf(_robot(1.0 * scale, 1.0 * scale, 2.0 * scale * (1 + 1e-5)), inertia="physical")


@pytest.mark.parametrize("entry", ["ixx", "ixy", "izz"])
def test_overflowing_inertia_is_the_loaders_error_naming_the_link(entry):
    """An inertia entry of 1e308 (NumPy's eigenvalue solver used to fail on it: LinAlgError) and
    other absurd values (beyond 1e30) are refused naming the link and the line, in every mode."""
    c = dict(ixx=0.1, iyy=0.1, izz=0.1)
    c[entry] = 1e308
    for mode in ("warn", "physical", "accept"):
        with pytest.raises(URDFError, match=r"link 'rod': inertia: 1e\+308 is larger than 1e\+30") as info:
            load_urdf(_robot(**c), inertia=mode)
        assert info.value.line == 7
    with pytest.raises(URDFError, match="link 'rod': mass: 1e\\+31"):
        load_urdf(_robot(0.1, 0.1, 0.1).replace('value="2.0"', 'value="1e31"'))
    with pytest.raises(URDFError, match="link 'rod': origin xyz: 1e\\+200"):
        load_urdf(_robot(0.1, 0.1, 0.1).replace('xyz="0.1 0 0"', 'xyz="1e200 0 0"'))
    load_urdf(_robot(1e29, 1e29, 1e29))  # huge but not absurd


@pytest.mark.parametrize("seed", range(20))
def test_physical_inertias_pass_and_perturbed_ones_fail(seed):
    """Point-mass bodies (an independent construction) always pass, in any orientation; pushing the
    largest principal moment past the sum of the two others makes them fail (negative control)."""
    rng = np.random.default_rng(seed)
    inertia = _point_mass_inertia(rng)
    rpy = " ".join(repr(float(a)) for a in rng.uniform(-3, 3, 3))
    c = dict(ixx=inertia[0, 0], iyy=inertia[1, 1], izz=inertia[2, 2], ixy=inertia[0, 1])
    c.update(ixz=inertia[0, 2], iyz=inertia[1, 2])
    load_urdf(_robot(**c, rpy=rpy), inertia="physical")
    w, V = np.linalg.eigh(inertia)
    w2 = w.copy()
    w2[2] = (w[0] + w[1]) * 1.01
    bad = V @ np.diag(w2) @ V.T
    c = dict(ixx=bad[0, 0], iyy=bad[1, 1], izz=bad[2, 2], ixy=bad[0, 1], ixz=bad[0, 2], iyz=bad[1, 2])
    with pytest.raises(URDFError, match="'rod'"):
        load_urdf(_robot(**c, rpy=rpy), inertia="physical")


def test_limit_cases_pass():
    """A thin rod (I1 = 0, I2 = I3), a flat plate (I3 = I1 + I2) and a point mass are physical."""
    load_urdf(_robot(0.0, 0.3, 0.3), inertia="physical")
    load_urdf(_robot(0.1, 0.2, 0.3), inertia="physical")
    load_urdf(_robot(0.0, 0.0, 0.0), inertia="physical")
    # printed to 7 significant digits: the rounding (1e-7 relative) is within the tolerance (1e-6)
    load_urdf(_robot(0.3333333, 0.6666666, 1.0), inertia="physical")


def test_unknown_mode_is_an_input_error():
    with pytest.raises(InputError, match="inertia must be one of"):
        load_urdf(_robot(0.1, 0.1, 0.1), inertia="pinocchio")
    with pytest.raises(InputError, match="inertia must be one of"):
        load_urdf(_robot(0.1, 0.1, 0.1), inertia="refuse")


def test_grbda_mini_cheetah_hip_links_are_reported():
    path = grbda_file("mini_cheetah.urdf")
    with pytest.raises(URDFError, match=r"_hip_link") as info:
        load_urdf(path, inertia="physical")
    name = str(info.value).split("link '")[1].split("'")[0]
    lines = path.read_text().splitlines()
    assert f'name="{name}"' in lines[info.value.line - 1]
    with pytest.warns(InertiaWarning, match=r"mini_cheetah\.urdf:\d+: link '.*_hip_link'"):
        load_urdf(path)  # loaded with a warning by default
    load_urdf(path, inertia="accept")
