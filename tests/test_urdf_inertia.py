"""``load_urdf(..., inertia="physical")`` (the default) refuses rotational inertias that no rigid body
has (principal moments violating the triangle inequality); ``inertia="accept"`` loads them as
Pinocchio does."""

from __future__ import annotations

import numpy as np
import pytest
from reference_files import grbda_file

from loopdyn.errors import InputError, URDFError
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


def test_refusal_is_the_default():
    with pytest.raises(URDFError, match="'rod'.*triangle inequality.*inertia='accept'"):
        load_urdf(_robot(0.01, 0.01, 0.05))


def test_accept_loads_the_tensor_as_written():
    model = load_urdf(_robot(0.01, 0.01, 0.05), inertia="accept")
    np.testing.assert_array_equal(model.bodies[0].inertia.inertia, np.diag([0.01, 0.01, 0.05]))


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


def test_grbda_mini_cheetah_hip_links_are_reported():
    path = grbda_file("mini_cheetah.urdf")
    with pytest.raises(URDFError, match=r"_hip_link") as info:
        load_urdf(path, inertia="physical")
    name = str(info.value).split("link '")[1].split("'")[0]
    lines = path.read_text().splitlines()
    assert f'name="{name}"' in lines[info.value.line - 1]
    with pytest.raises(URDFError, match=r"_hip_link"):
        load_urdf(path)  # refused by default too
    load_urdf(path, inertia="accept")
