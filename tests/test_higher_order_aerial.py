"""The paper's aerial manipulator (spec §4) and its reference trajectory (spec §4.5)."""

from __future__ import annotations

import numpy as np
import pytest

import loopdyn as ld
from loopdyn import higher_order as ho
from loopdyn.robots import aerial_manipulator, aerial_reference, aerial_times

#: spec §4.2 table: joint axis points p_j and axes e_j at home, centres of mass, world frame
AXIS_POINTS = [
    (0.09, 0, -0.10),
    (0.09, 0, -0.22),
    (0.09, 0, -0.34),
    (-0.09, 0, -0.10),
    (-0.09, 0, -0.22),
    (-0.09, 0, -0.34),
]
COMS = [
    (0.09, 0, -0.16),
    (0.09, 0, -0.28),
    (0.09, 0, -0.40),
    (-0.09, 0, -0.16),
    (-0.09, 0, -0.28),
    (-0.09, 0, -0.40),
]
AXES = [(0, 1, 0), (1, 0, 0), (0, 0, 1)] * 2
SCREWS = [
    (0, 1, 0, 0.10, 0, 0.09),
    (1, 0, 0, 0, -0.22, 0),
    (0, 0, 1, 0, -0.09, 0),
    (0, 1, 0, 0.10, 0, -0.09),
    (1, 0, 0, 0, -0.22, 0),
    (0, 0, 1, 0, 0.09, 0),
]


def test_geometry_and_inertias_are_table_3():
    model = aerial_manipulator()
    data = model.create_data()
    assert (model.nq, model.nv, model.nbodies) == (13, 12, 7)
    assert model.mass == pytest.approx(4.0)
    ld.forward_kinematics(model, data, ld.neutral(model))
    oMi = data.oMi
    for j in range(6):
        b = model.bodies[j + 1]
        T = oMi[j + 2]
        np.testing.assert_allclose(T[:3, 3], AXIS_POINTS[j], atol=1e-15)
        np.testing.assert_allclose(T[:3, :3], np.eye(3), atol=1e-15)
        np.testing.assert_allclose(T[:3, :3] @ b.inertia.com + T[:3, 3], COMS[j], atol=1e-15)
        e = T[:3, :3] @ b.joint.axis_array()
        np.testing.assert_allclose(e, AXES[j], atol=1e-15)
        np.testing.assert_allclose(np.concatenate([e, np.cross(T[:3, 3], e)]), SCREWS[j], atol=1e-15)
        assert b.inertia.mass == 0.25
        np.testing.assert_allclose(b.inertia.inertia, np.diag([0.002, 0.002, 0.001]))
    base = model.bodies[0]
    assert base.inertia.mass == 2.5
    np.testing.assert_allclose(base.inertia.inertia, np.diag([0.03, 0.03, 0.05]))
    assert len(aerial_times()) == 3000 and aerial_times()[-1] == pytest.approx(29.99)


def test_static_hover_needs_the_weight_and_nothing_at_higher_orders():
    model = aerial_manipulator()
    data = model.create_data()
    q, _ = aerial_reference(0.0, 0)
    q[:3] = 0.0
    q[3:7] = (0, 0, 0, 1)
    tau = ho.rnea(model, data, q, np.zeros((7, 12)))
    assert tau[0, 2] == pytest.approx(4.0 * 9.81, rel=1e-14)  # 39.24 N, body-frame base force
    np.testing.assert_allclose(tau[1:], 0.0, atol=1e-14)
    # joint torques hold the arms' weight: τ_j = −S_jᵀ Σ_{sub(j)} M_i G⁰ (spec §7.3 item 13)
    np.testing.assert_allclose(tau[0], ld.gravity(model, data, q), rtol=1e-14, atol=1e-14)


def test_reference_trajectory_derivatives_match_autodiff():
    import jax
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    from jax.experimental import jet

    def v_of_t(t):
        w, wy, amp = 2 * jnp.pi / 20, 2 * jnp.pi / 30, jnp.deg2rad(25.0)
        xd = jnp.array([-w * jnp.sin(w * t), w * jnp.cos(w * t)])
        psi = amp * jnp.sin(wy * t)
        c, s = jnp.cos(psi), jnp.sin(psi)
        vb = jnp.array([c * xd[0] + s * xd[1], -s * xd[0] + c * xd[1], 0.0])
        wb = jnp.array([0.0, 0.0, amp * wy * jnp.cos(wy * t)])
        eta = jnp.deg2rad(jnp.array([60.0, 50.0, 40.0, 55.0, 45.0, 35.0]))
        qd = 0.5 * eta * (jnp.pi / 30) * jnp.sin(jnp.pi * t / 30)
        return jnp.concatenate([vb, wb, qd])

    for t in (0.0, 7.3, 15.0, 29.99):
        q, dv = aerial_reference(t, 5)
        primal, series = jet.jet(v_of_t, (t,), ((1.0,) + (0.0,) * 5,))
        ref = np.stack([np.asarray(primal)] + [np.asarray(s) for s in series])
        np.testing.assert_allclose(dv, ref, rtol=1e-12, atol=1e-14)
        psi = np.deg2rad(25.0) * np.sin(2 * np.pi * t / 30)
        np.testing.assert_allclose(
            q[:7],
            [
                np.cos(2 * np.pi * t / 20),
                np.sin(2 * np.pi * t / 20),
                0,
                0,
                0,
                np.sin(psi / 2),
                np.cos(psi / 2),
            ],
            atol=1e-15,
        )


def test_fig3_round_trip_along_the_trajectory():
    """Paper Fig. 3: ID then FD for r = 0…5 returns the reference derivatives."""
    model = aerial_manipulator()
    data = model.create_data()
    for t in aerial_times()[::300]:
        q, dv = aerial_reference(t, 5)
        tau = ho.rnea(model, data, q, dv)
        back = ho.aba(model, data, q, dv[0], tau)
        # relative to the joint-force scale (|τ| ≈ 40 N): the FD divides by inertias of 1e-3 kg m²
        np.testing.assert_allclose(back, dv[1:], rtol=0, atol=1e-10 * np.abs(tau).max())


def test_bench_section_smoke(tmp_path, monkeypatch, capsys):
    from loopdyn.bench import higher_order as bench
    from loopdyn.bench.paper import TINY_ENV

    monkeypatch.setenv(TINY_ENV, "1")
    res = bench.run(quick=True, out=tmp_path)
    out = capsys.readouterr().out
    assert "Fig. 3" in out and "Fig. 4" in out and "paper ID" in out
    assert len(res["round_trip"]["max_abs_error"]) == 6
    assert max(res["round_trip"]["max_abs_error"]) < 1e-8
    assert len(res["per_call"]["rnea_us"]) == 6 and all(t > 0 for t in res["per_call"]["aba_us"])
    assert (tmp_path / "higher_order.json").exists()
    assert bench.branches(3).nbodies == 16
    # (e) closed loops: every robot and order timed against its spanning tree, the round trip exact
    assert "(e) Closed loops" in out
    rows = res["loops"]["rows"]
    robots = ("four_bar", "five_bar", "tello")
    assert {(r["robot"], r["r"]) for r in rows} == {(n, k) for n in robots for k in (0, 2)}
    assert all(r["rnea_us"] > 0 and r["tree_aba_us"] > 0 and r["round_trip_rel_error"] < 1e-8 for r in rows)
    assert all(r["backward_error"] < 1e-10 for r in rows)


def test_readme_higher_order_section_runs():

    from doc_pages import code_blocks

    from loopdyn.higher_order import aba as ho_aba

    blocks = code_blocks("tutorials/higher-order")
    assert blocks
    ns = {"ld": ld}
    for code in blocks:
        exec(compile(code, "docs/tutorials/higher-order.md", "exec"), ns)
    assert ns["dtau"].shape == (6, 12)
    np.testing.assert_allclose(ns["back"], ns["dv"][1:], atol=1e-10 * np.abs(ns["dtau"]).max())
    np.testing.assert_allclose(ns["tau_out"], ns["dtau"], atol=1e-10 * np.abs(ns["dtau"]).max())
    np.testing.assert_allclose(ns["v_out"], ns["dv"][1:], atol=1e-9)
    # the closed-loop example: order 0 is C-RNEA, and the round trip
    fb, d, q, dv = ns["fb"], ns["fb_data"], ns["q_fb"], ns["dv_fb"]
    ref = ld.rnea(fb, d, q, dv[0], dv[1])
    np.testing.assert_allclose(ns["dtau_fb"][0], ref, atol=1e-12 * np.abs(ref).max())
    np.testing.assert_allclose(ho_aba(fb, d, q, dv[0], ns["dtau_fb"]), dv[1:], atol=1e-9 * np.abs(dv).max())
