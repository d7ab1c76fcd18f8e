"""The machinery of ``loopdyn bench`` (loopdyn.bench.paper): formulas, the Fig. 14 computation and
the command's results file. No timing is asserted."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from loopdyn import cli, robots
from loopdyn.bench import paper
from loopdyn.progress import Progress


def test_growth_exponent_recovers_a_known_exponent():
    sizes = [2, 4, 6, 8, 12, 16, 20, 24]
    for p in (1.0, 2.5, 3.0):
        times = [3e-6 * n**p for n in sizes]
        assert paper.growth_exponent(sizes, times) == pytest.approx(p, abs=1e-10)
    # a constant factor does not change it, noise of a few percent barely does
    rng = np.random.default_rng(0)
    noisy = [7e-5 * n**2 * (1 + 0.03 * rng.standard_normal()) for n in sizes]
    assert paper.growth_exponent(sizes, noisy) == pytest.approx(2.0, abs=0.05)


def test_percent_is_relative_to_the_cluster_algorithm():
    assert paper.percent(1.5, 1.0) == pytest.approx(50.0)
    assert paper.percent(0.6, 1.0) == pytest.approx(-40.0)
    assert paper.percent(2e-6, 2e-6) == 0.0
    assert paper.percent(3.0, 2.0) == pytest.approx(100 * (3.0 - 2.0) / 2.0)


def test_paper_tables_have_one_number_per_robot():
    for table, (cluster, rows) in paper.PAPER.items():
        assert cluster.startswith("C-")
        for alg, values in rows.items():
            assert len(values) == len(paper.ROBOT_LABELS), (table, alg)
            assert all(float(v) != 0.0 for v in values)
    # the printed entries, exactly (spec §6.3)
    assert paper.PAPER["III"][1]["Lagrange (dense)"][5] == "+212.8"
    assert paper.PAPER["IV"][1]["Approximate EFPA"][5] == "-22.54"


def test_rms_error_values():
    ref = np.zeros((2, 3))
    other = np.array([[3.0, 1.0, -2.0], [4.0, -1.0, 0.0]])
    np.testing.assert_allclose(paper.rms_error(ref, other), [np.sqrt(12.5), 1.0, np.sqrt(2.0)], rtol=1e-15)
    np.testing.assert_allclose(paper.rms_error(other, ref), paper.rms_error(ref, other), rtol=0)


def _fig14_oracle(model, Q, V, A):
    """The exact, approximate and unconstrained torques of the Fig. 14 trajectory from Pinocchio alone
    on the spanning tree: G from the couplings' ratios, τ = Gᵀ RNEA_span(Gq, Gv, Ga); unconstrained =
    the same with the rotors massless (leaves without armature: their joint torque is zero);
    approximate = unconstrained + diag(Σ_rotors (axisᵀ I_r,o axis) g_rᵀ g_r) a (spec §2.7.2)."""
    import pinocchio as pin
    from loop_oracles import SpanningPinocchio

    oracle = SpanningPinocchio(model)
    K, ind = oracle.K_const, oracle.ind
    G = np.zeros((model.spanning_nv, model.nv))
    G[ind, np.arange(model.nv)] = 1.0
    dep = np.setdiff1d(np.arange(model.spanning_nv), ind)
    G[dep] = -np.linalg.solve(K[:, dep], K[:, ind])
    pm, qmap, vmap = oracle.pm, oracle.qmap, oracle.vmap
    massless = pin.Model(pm)
    arm = np.zeros(model.nv)
    for i, b in enumerate(model.bodies, 1):
        if b.idx_v in dep:  # a rotor
            massless.inertias[int(oracle.jmap[i])] = pin.Inertia.Zero()
            m, c, u = b.inertia.mass, np.asarray(b.inertia.com), b.joint.axis_array()
            Ic = np.asarray(b.inertia.inertia)
            Io = Ic + m * (c @ c * np.eye(3) - np.outer(c, c))
            arm += (u @ Io @ u) * G[b.idx_v] ** 2
    out = []
    for pmod in (pm, massless):
        pd = pmod.createData()
        Gp = G[vmap]  # 1-DoF joints only: G maps positions as it maps velocities
        out.append(np.array([Gp.T @ pin.rnea(pmod, pd, (G @ q)[qmap], Gp @ v, Gp @ a)
                             for q, v, a in zip(Q, V, A, strict=True)]))  # fmt: skip
    exact, unconstrained = out
    return exact, unconstrained + arm * A, unconstrained


def test_fig14_errors_on_a_short_trajectory():
    res = paper.accuracy_experiment(duration=0.05)
    n = len(res["t"])
    assert n == 101 and res["exact"].shape == (n, 5)
    # the torques and the RMS errors against Pinocchio alone on the spanning tree
    model = robots.mit_humanoid_leg(parameters="paper")
    exact, approximate, unconstrained = _fig14_oracle(model, res["q"], res["v"], res["a"])
    scale = np.abs(exact).max()
    for key, ref in (("exact", exact), ("approximate", approximate), ("unconstrained", unconstrained)):
        np.testing.assert_allclose(res[key], ref, rtol=0, atol=1e-10 * scale, err_msg=key)
    for key, ref in (("rms_approximate", approximate), ("rms_unconstrained", unconstrained)):
        rms = np.sqrt(np.mean((ref - exact) ** 2, axis=0))
        np.testing.assert_allclose(res[key], rms, rtol=1e-8, atol=1e-10 * scale, err_msg=key)
    np.testing.assert_allclose(res["max_abs_torque"], np.abs(exact).max(axis=0), rtol=1e-10)
    # the rotors matter: ignoring them is worse than the reflected-inertia approximation at the
    # ankle (and at the knee, the joint the paper's script plotted)
    ankle, knee = res["joints"].index("knee_to_ankle"), res["joints"].index("hipy_to_knee_link")
    for j in (ankle, knee):
        assert res["rms_unconstrained"][j] > res["rms_approximate"][j] > 0.0
    # the trajectory is the spec's: q = A sin(2πωt) on every joint
    t = res["t"]
    assert np.allclose(res["q"][:, 2], 0.5 * np.sin(2 * np.pi * 1.5 * t))
    assert t[1] - t[0] == pytest.approx(5e-4)


def test_progress_writes_a_line_at_the_start_and_the_end_when_not_a_terminal():
    buf = io.StringIO()
    with Progress(3, "work", stream=buf) as bar:
        for _ in range(3):
            bar.update(note="step")
    lines = buf.getvalue().splitlines()
    assert lines[0] == "work: started (3 steps)"
    assert lines[1].startswith("work: 3/3 done in ")
    assert len(lines) == 2


def test_progress_writes_one_line_per_item_with_lines():
    buf = io.StringIO()
    with Progress(2, "compile", stream=buf, lines=True) as bar:
        bar.update(note="a_kernel 1.0 s")
        bar.update(note="b_kernel 2.0 s")
    lines = buf.getvalue().splitlines()
    assert lines[1:3] == ["compile: [1/2] a_kernel 1.0 s", "compile: [2/2] b_kernel 2.0 s"]


def test_progress_disabled_writes_nothing():
    buf = io.StringIO()
    with Progress(2, "quiet", stream=buf, enabled=False) as bar:
        bar.update()
    assert buf.getvalue() == ""


def test_cli_bench_writes_results(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(paper.TINY_ENV, "1")
    assert cli.main(["bench", "--quick", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for title in ("Table II", "Table III", "Table IV", "Fig. 11", "Fig. 13", "Fig. 14", "ordering as paper"):
        assert title in out
    res = json.loads((tmp_path / "results.json").read_text())
    report = (tmp_path / "results.md").read_text()  # the printed report, for the README
    assert "Table II" in report and "Fig. 14" in report and report in out
    assert {"machine", "settings", "robots", "scaling", "accuracy", "total_seconds"} <= set(res)
    assert res["settings"]["tiny"] is True
    assert [r["label"] for r in res["robots"]] == [label for _, label in paper.ROBOT_LABELS]
    for r in res["robots"]:
        assert {"name", "nq", "nv", "II", "III", "IV"} <= set(r)
        for table, (cluster, rows) in paper.PAPER.items():
            e = r[table]
            assert set(e["times_s"]) == {cluster, *rows, *paper.EXTRA.get(table, ())}
            assert all(t > 0 for t in e["times_s"].values())
            assert set(e["paper_percent"]) == set(rows)
            for alg, pct in e["percent"].items():
                assert pct == pytest.approx(paper.percent(e["times_s"][alg], e["times_s"][cluster]))
            assert isinstance(e["ordering_matches_paper"], bool)
            assert e["ordering_matches_paper"] == (not e["mismatches"])
            assert max(e["check_max_abs_diff"].values()) < 1e-8  # the baselines agree
    for fig, kinds, algs in (("fig11", ("GT", "PBT"), paper.FIG11), ("fig13", ("PBT",), paper.FIG13)):
        for kind in kinds:
            s = res["scaling"][fig][kind]
            assert s["sizes"] == list(paper.TINY.sizes)
            assert set(s["times_s"]) == set(algs) and set(s["exponent"]) == set(algs)
            assert all(len(v) == len(s["sizes"]) for v in s["times_s"].values())
    acc = res["accuracy"]["fig14"]
    assert len(acc["rms_unconstrained_Nm"]) == len(acc["rms_approximate_Nm"]) == 5
    assert acc["paper"]["unconstrained"] == 4.31 and acc["paper"]["approximate"] == 1.04
    if res.get("figures"):
        for path in res["figures"]:
            assert path.endswith(".png") and (tmp_path / path.rsplit("/", 1)[1]).stat().st_size > 0
