"""``load_urdf(mimic="coupling")``: a ``<mimic>`` joint geared to the joint it mimics.

Oracle: Pinocchio on the same file loaded with every joint independent (its default), reduced by a
G that is built here from the ``<mimic>`` elements alone: ``H = Gᵀ H_pin G``, ``τ = Gᵀ τ_pin``
with ``v_span = G v``, ``a = H⁻¹ Gᵀ (τ_span − h_pin)``.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

import loopdyn
from loopdyn.errors import UnsupportedFeatureError

LINK = (
    "<link name='{n}'><inertial><mass value='{m}'/><origin xyz='{c}'/>"
    "<inertia ixx='{i}' iyy='{i}' izz='{i}' ixy='0' ixz='0' iyz='0'/></inertial></link>"
)
JOINT = (
    "<joint name='{n}' type='{t}'><parent link='{p}'/><child link='{c}'/>"
    "<origin xyz='{o}' rpy='{r}'/><axis xyz='{a}'/><limit lower='-3' upper='3' effort='1' velocity='1'/>"
    "{extra}</joint>"
)


def _gripper(multiplier: float, jtype: str = "revolute", offset: float = 0.0) -> str:
    """A base arm joint carrying a palm with two fingers in separate branches; finger 2 mimics 1."""
    links = "".join(
        LINK.format(n=n, m=m, c=c, i=i)
        for n, m, c, i in [
            ("base", 2.0, "0 0 0", 0.1),
            ("palm", 1.2, "0.05 0 0.1", 0.02),
            ("f1", 0.3, "0.02 0.01 0.03", 0.004),
            ("f2", 0.25, "-0.01 0.02 0.04", 0.003),
        ]
    )
    mimic = f"<mimic joint='j_f1' multiplier='{multiplier}' offset='{offset}'/>"
    joints = (
        JOINT.format(
            n="j_palm", t="revolute", p="base", c="palm", o="0 0 0.3", r="0 0.2 0", a="0 1 0", extra=""
        )
        + JOINT.format(n="j_f1", t=jtype, p="palm", c="f1", o="0.04 0 0.1", r="0.1 0 0", a="1 0 0", extra="")
        + JOINT.format(
            n="j_f2", t=jtype, p="palm", c="f2", o="-0.04 0 0.1", r="0 0 0.3", a="0.6 0.8 0", extra=mimic
        )
    )
    return f"<robot name='gripper'>{links}{joints}</robot>"


def _G(pin_model, mimics: dict[str, tuple[str, float]]) -> tuple[np.ndarray, list[int]]:
    """G (spanning v from the kept coordinates) and the kept spanning indices, from the mimic table."""
    nv = pin_model.nv
    dependent = {
        pin_model.joints[pin_model.getJointId(j)].idx_v: (pin_model.joints[pin_model.getJointId(t)].idx_v, k)
        for j, (t, k) in mimics.items()
    }
    kept = [i for i in range(nv) if i not in dependent]
    G = np.zeros((nv, len(kept)))
    for col, i in enumerate(kept):
        G[i, col] = 1.0
    for i, (t, k) in dependent.items():
        G[i, kept.index(t)] = k
    return G, kept


def _check_against_pinocchio(source, floating: bool, mimics: dict, states: int = 20) -> None:
    model = loopdyn.load_urdf(source, floating_base=floating, mimic="coupling")
    if isinstance(source, str) and source.lstrip().startswith("<"):
        pm = (
            pin.buildModelFromXML(source, pin.JointModelFreeFlyer())
            if floating
            else pin.buildModelFromXML(source)
        )
    else:
        pm = (
            pin.buildModelFromUrdf(source, pin.JointModelFreeFlyer())
            if floating
            else pin.buildModelFromUrdf(source)
        )
    pd = pm.createData()
    data = model.create_data()
    G, kept = _G(pm, mimics)
    assert model.nv == len(kept)
    rng = np.random.default_rng(7)
    for _ in range(states):
        q = loopdyn.random_configuration(model, rng=rng)
        v, a, tau = rng.standard_normal((3, model.nv))
        q_span, v_span = loopdyn.to_spanning(model, q, v)
        # the spanning state obeys the <mimic> elements (checked from the table, not from loopdyn)
        for j, (t, k) in mimics.items():
            iq, it = pm.joints[pm.getJointId(j)].idx_q, pm.joints[pm.getJointId(t)].idx_q
            assert q_span[iq] == pytest.approx(k * q_span[it], abs=1e-14)
        np.testing.assert_allclose(v_span, G @ v, rtol=0, atol=1e-13)
        H_pin = pin.crba(pm, pd, q_span)
        H_pin = np.triu(H_pin) + np.triu(H_pin, 1).T
        H = G.T @ H_pin @ G
        scale = np.abs(H).max()
        np.testing.assert_allclose(loopdyn.crba(model, data, q), H, rtol=0, atol=1e-12 * scale)
        tau_ref = G.T @ pin.rnea(pm, pd, q_span, G @ v, G @ a)
        np.testing.assert_allclose(
            loopdyn.rnea(model, data, q, v, a), tau_ref, rtol=0, atol=1e-10 * max(1.0, np.abs(tau_ref).max())
        )
        h = G.T @ pin.rnea(pm, pd, q_span, G @ v, np.zeros(pm.nv))
        a_ref = np.linalg.solve(H, tau - h)
        np.testing.assert_allclose(
            loopdyn.aba(model, data, q, v, tau), a_ref, rtol=0, atol=1e-9 * max(1.0, np.abs(a_ref).max())
        )


@pytest.mark.parametrize("multiplier", [1.0, -2.5])
def test_mimic_coupling_matches_reduced_pinocchio(multiplier):
    _check_against_pinocchio(_gripper(multiplier), False, {"j_f2": ("j_f1", multiplier)})


def test_mimic_coupling_prismatic_fingers():
    _check_against_pinocchio(_gripper(-1.0, "prismatic"), True, {"j_f2": ("j_f1", -1.0)})


def test_panda_fingers_coupled():
    path, floating = loopdyn.robots.example_robot_urdf("panda")
    _check_against_pinocchio(path, floating, {"panda_finger_joint2": ("panda_finger_joint1", 1.0)}, states=5)


def test_mimic_coupling_refuses_an_offset_naming_the_joint():
    with pytest.raises(UnsupportedFeatureError, match="'j_f2'.*offset is 0.1.*mimic='independent'"):
        loopdyn.load_urdf(_gripper(1.0, offset=0.1), mimic="coupling")


def test_mimic_coupling_refuses_a_continuous_joint():
    with pytest.raises(UnsupportedFeatureError, match="'j_f2'.*'continuous' joint"):
        loopdyn.load_urdf(_gripper(1.0, jtype="continuous"), mimic="coupling")


def test_default_mimic_error_names_both_options():
    with pytest.raises(UnsupportedFeatureError, match="mimic='coupling'.*mimic='independent'"):
        loopdyn.load_urdf(_gripper(1.0))


def test_negative_control_independent_model_differs():
    """The reduced oracle is not vacuous: without the coupling the mass matrix has another size and
    a coupled model's H is not the independent model's H restricted to the kept coordinates."""
    xml = _gripper(-2.5)
    coupled = loopdyn.load_urdf(xml, mimic="coupling")
    free = loopdyn.load_urdf(xml, mimic="independent")
    assert coupled.nv == free.nv - 1
    q = np.array([0.3, -0.4])
    q_span, _ = loopdyn.to_spanning(coupled, q)
    H_free = loopdyn.crba(free, free.create_data(), q_span)
    H = loopdyn.crba(coupled, coupled.create_data(), q)
    assert np.abs(H - H_free[:2, :2]).max() > 1e-3
