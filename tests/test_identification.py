"""Inertial parameters, the joint-torque regressor and the identifiable (base) parameters (issue 31).

Oracles:
* trees: Pinocchio's ``computeJointTorqueRegressor`` and per-body ``toDynamicParameters`` (≤ 1e-9);
* every model (trees, explicit clusters, implicit loops, compound joints, free-flyer roots): ``Y π ==
  rnea`` (≤ 1e-12 relative to the rounding scale ``|Y| |π|``), and Y column by column against the
  verified ``rnea`` of two *other* physical models: rnea is linear in π, so
  ``Y e_c = (rnea(π₀ + δ e_c) − rnea(π₀ − δ e_c)) / 2δ`` exactly (to rounding), for every column c on
  the small models and along random directions of π on the large ones;
* identifiability: the textbook base parameters of a planar two-link arm (6 with gravity in the
  plane, 4 with gravity normal to it) and of a two-link arm with a geared rotor at each joint, written
  here by hand; the rank against an SVD of regressors at other states; β reproduces τ; negative
  controls (a base parameter dropped, a wrong gear ratio in a hand-written row).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import trees
from cluster_models import random_cluster_model

import loopdyn as ld
from loopdyn.errors import DataMismatchError, InertiaWarning, ModelError, ShapeError


def rounding_scale(Y, pi) -> float:
    """The size rounding errors of ``Y π`` are measured against: ``max_r Σ_c |Y_rc| |π_c|``."""
    return float(max(1.0, (np.abs(Y) @ np.abs(pi)).max()))


def random_states(model, rng, n):
    for _ in range(n):
        q = ld.random_configuration(model, rng)
        yield q, rng.normal(size=model.nv), rng.normal(size=model.nv)


# ---------------------------------------------------------------------------------------------
# trees against Pinocchio
def test_regressor_matches_pinocchio(pin_case):
    import pinocchio as pin

    lm, pm = pin_case.lm, pin_case.pm
    pd, data = pm.createData(), lm.create_data()
    pi = ld.inertial_parameters(lm)
    pi_pin = np.concatenate([pm.inertias[i].toDynamicParameters() for i in range(1, pm.njoints)])
    assert pi.shape == pi_pin.shape
    np.testing.assert_allclose(pi, pi_pin, rtol=1e-12, atol=1e-12 * max(1.0, np.abs(pi_pin).max()))
    worst = 0.0
    for q, v, a in pin_case.states(5):
        Y = ld.regressor(lm, data, q, v, a)
        Yp = pin.computeJointTorqueRegressor(pm, pd, q, v, a)
        worst = max(worst, float(np.abs(Y - Yp).max()) / max(1.0, float(np.abs(Yp).max())))
    assert worst <= 1e-9, f"{pin_case.name}: regressor vs Pinocchio {worst:.2e}"


# ---------------------------------------------------------------------------------------------
# every kind of model: Y π == rnea, armature included
def _geared_arm(gravity=(0.0, -9.81, 0.0), ratios=(9.0, 6.0), l1=0.7, seed=3) -> ld.Model:
    """A planar two-link arm (z axes, link 2 at (l1, 0, 0) of link 1); with ``ratios``, a rotor at each
    joint (rotor 1 on the ground, rotor 2 on link 1 beside link 2) geared to it."""
    rng = np.random.default_rng(seed)

    def inertia():
        c = rng.normal(size=3) * 0.1
        A = rng.normal(size=3)
        return ld.Inertia(rng.uniform(1.0, 2.0), c, np.diag([0.06, 0.07, 0.08]) + 0.002 * np.outer(A, A))

    m = ld.Model("arm", gravity=gravity)
    T = np.eye(4)
    T[0, 3] = l1
    m.add_body("link1", 0, ld.Revolute((0, 0, 1)), None, inertia())
    m.add_body("link2", "link1", ld.Revolute((0, 0, 1)), T, inertia())
    if ratios is not None:
        m.add_body("rotor1", 0, ld.Revolute((0, 0, 1)), None, inertia())
        m.add_body("rotor2", "link1", ld.Revolute((0, 0, 1)), T, inertia())
        m.add_coupling("gear1", "link1", "rotor1", ratios[0])  # q_rotor1 = 9 q_link1
        m.add_coupling("gear2", "link2", "rotor2", ratios[1])
    return m


def _compound_tree() -> ld.Model:
    m = ld.Model("compound")
    m.add_body("base", 0, ld.FreeFlyer(), None, ld.Inertia(3.0, (0.1, 0, 0), np.diag([0.1, 0.2, 0.25])))
    m.add_body("wrist", "base", ld.Universal((1, 0, 0), (0, 1, 0)), (np.eye(3), np.array([0.3, 0.0, 0.1])),
               ld.Inertia(1.0, (0, 0.05, 0.1), np.diag([0.02, 0.03, 0.04])))  # fmt: skip
    return m


LOOP_MODELS = {
    "mini_cheetah": ld.robots.mini_cheetah,
    "mit_humanoid_leg": ld.robots.mit_humanoid_leg,
    "tello": ld.robots.tello,
    "jvrc1": ld.robots.jvrc1,
    "gt_chain": lambda: ld.robots.gt_chain(3, seed=1),
    "pbt_chain": lambda: ld.robots.pbt_chain(4, seed=2),
    "four_bar": ld.robots.four_bar,
    "five_bar": ld.robots.five_bar,
    "delta_robot": ld.robots.delta_robot,
    "planar_leg_linkage": ld.robots.planar_leg_linkage,
    "rssr_linkage": ld.robots.rssr_linkage,
    "aerial_manipulator": ld.robots.aerial_manipulator,
    "random_clusters_floating": lambda: random_cluster_model(7, n_blocks=4, floating=True),
    "geared_arm": _geared_arm,
    "compound_tree": _compound_tree,
}


@pytest.fixture(scope="module", params=list(LOOP_MODELS))
def any_model(request):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InertiaWarning)
        m = LOOP_MODELS[request.param]()
    rng = np.random.default_rng(5)
    m.armature = rng.uniform(0.0, 0.5, size=m.spanning_nv)
    return request.param, m


def test_regressor_times_parameters_is_rnea(any_model):
    name, model = any_model
    bare = model.copy()
    bare.armature = 0.0
    rng = np.random.default_rng(11)
    for armature, m in ((True, model), (False, bare)):
        data = m.create_data()
        pi = ld.inertial_parameters(m, armature=armature)
        for q, v, a in random_states(m, rng, 4):
            Y = ld.regressor(m, data, q, v, a, armature=armature)
            assert Y.shape == (m.nv, 10 * m.nbodies + (m.spanning_nv if armature else 0))
            tau = ld.rnea(m, data, q, v, a)
            err = float(np.abs(Y @ pi - tau).max()) / rounding_scale(Y, pi)
            assert err <= 1e-12, f"{name} (armature={armature}): |Y π − rnea| = {err:.2e}"
        if armature:  # negative control: the armature columns matter on this model
            assert np.abs(Y[:, : 10 * m.nbodies] @ pi[: 10 * m.nbodies] - tau).max() > 1e-6


def _fat_parameters(model) -> np.ndarray:
    """A physical π₀ far inside the physical set (unit masses at the origins, 10·1 rotational
    inertias, unit armature): π₀ ± δ e_c stays physical for δ ≤ 0.5."""
    pi = np.zeros(10 * model.nbodies + model.spanning_nv)
    for i in range(model.nbodies):
        pi[10 * i] = 1.0
        pi[10 * i + 4], pi[10 * i + 6], pi[10 * i + 9] = 10.0, 10.0, 10.0
    pi[10 * model.nbodies :] = 1.0
    return pi


def _rnea_at(model, pi, q, v, a) -> np.ndarray:
    m = ld.with_inertial_parameters(model, pi, inertia="accept")
    return ld.rnea(m, m.create_data(), q, v, a)


COLUMN_BY_COLUMN = ("geared_arm", "five_bar", "four_bar", "compound_tree", "gt_chain")


def test_regressor_columns_by_linearity(any_model):
    """Each column of Y (or, on the large models and the implicit loops, whose Data take a second to
    build, Y along random directions of π) against rnea of two physical models whose parameters differ
    along that column only: rnea is linear in π, so the central difference is exact to rounding."""
    name, model = any_model
    rng = np.random.default_rng(17)
    q, v, a = next(random_states(model, rng, 1))
    Y = ld.regressor(model, model.create_data(), q, v, a, armature=True)
    pi0, delta = _fat_parameters(model), 0.5
    if name in COLUMN_BY_COLUMN:
        directions = np.eye(pi0.size)
    else:
        directions = rng.normal(size=(2, pi0.size)) * 0.2
    for d in directions:
        expected = (_rnea_at(model, pi0 + delta * d, q, v, a) - _rnea_at(model, pi0 - delta * d, q, v, a)) / (
            2 * delta
        )
        scale = max(1.0, float(np.abs(_rnea_at(model, pi0, q, v, a)).max()), float(np.abs(Y @ d).max()))
        err = float(np.abs(Y @ d - expected).max()) / scale
        assert err <= 1e-11, f"{name}: Y along {np.flatnonzero(d)[:3]}…: {err:.2e}"


def test_negative_control_column_oracle_detects_a_wrong_column():
    """The linearity oracle is not vacuous: a regressor with two columns swapped fails it."""
    model = _geared_arm()
    rng = np.random.default_rng(2)
    q, v, a = next(random_states(model, rng, 1))
    Y = ld.regressor(model, model.create_data(), q, v, a)
    Y[:, [9, 6]] = Y[:, [6, 9]]  # link1's Izz and Iyy
    pi0, delta = _fat_parameters(model)[: 10 * model.nbodies], 0.5
    e = np.zeros_like(pi0)
    e[9] = 1.0
    plus, minus = _rnea_at(model, pi0 + delta * e, q, v, a), _rnea_at(model, pi0 - delta * e, q, v, a)
    expected = (plus - minus) / (2 * delta)
    assert np.abs(Y[:, 9] - expected).max() > 1e-3


def test_batch_regressor_equals_single_calls():
    for model in (trees.robot_case("solo12", False)[0], ld.robots.mini_cheetah(), ld.robots.five_bar()):
        rng = np.random.default_rng(4)
        states = list(random_states(model, rng, 70))
        Q, V, A = (np.array([s[i] for s in states]) for i in range(3))
        for armature in (False, True):
            out = ld.batch.regressor(model, Q, V, A, armature=armature)
            data = model.create_data()
            for k in (0, 33, 69):
                np.testing.assert_array_equal(out[k], ld.regressor(model, data, Q[k], V[k], A[k], armature))
        Q[5, 0] = np.nan
        with pytest.raises(ld.errors.NonFiniteError, match="row 5"):
            ld.batch.regressor(model, Q, V, A)


# ---------------------------------------------------------------------------------------------
# identifiable parameters: the textbook cases by hand
def _rows(names, rows: list[dict[str, float]]) -> np.ndarray:
    out = np.zeros((len(rows), len(names)))
    for i, row in enumerate(rows):
        for key, c in row.items():
            out[i, names.index(key)] = c
    return out


def _same_row_space(B, H, tol=1e-9) -> bool:
    rB, rH = np.linalg.matrix_rank(B, tol), np.linalg.matrix_rank(H, tol)
    return rB == rH == np.linalg.matrix_rank(np.vstack([B, H]), tol)


def _planar_textbook(l1: float, in_plane: bool) -> list[dict[str, float]]:
    """Khalil's regrouping for a planar RR arm (Izz about the joint axis): ZZ1R = ZZ1 + l1² m2,
    MX1R = MX1 + l1 m2, MY1R = MY1 (only with gravity in the plane), ZZ2, MX2, MY2."""
    rows = [{"link1.Izz": 1.0, "link2.m": l1**2}, {"link2.Izz": 1.0}, {"link2.mcx": 1.0}, {"link2.mcy": 1.0}]
    if in_plane:
        rows += [{"link1.mcx": 1.0, "link2.m": l1}, {"link1.mcy": 1.0}]
    return rows


@pytest.mark.parametrize("in_plane", [True, False])
def test_planar_arm_base_parameters(in_plane):
    l1 = 0.7
    model = _geared_arm(gravity=(0.0, -9.81, 0.0) if in_plane else (0.0, 0.0, -9.81), ratios=None, l1=l1)
    bp = ld.identifiable_parameters(model, rng=1)
    assert bp.rank == (6 if in_plane else 4)
    H = _rows(list(bp.parameter_names), _planar_textbook(l1, in_plane))
    assert _same_row_space(bp.B, H)
    # the regrouping is written exactly (l1² = 49/100)
    assert "link1.Izz + link2.m·(49/100)" in bp.expressions


def _geared_textbook(l1: float, N1: float) -> list[dict[str, float]]:
    """The geared arm with gravity in the plane: rotor 1 spins at N1 q̇1 about link 1's axis, so its Izz
    joins link 1's with N1²; rotor 2 spins at q̇1 + N2 q̇2 (its Izz stays apart: the gyroscopic
    coupling with link 1); the masses of the bodies on link 1's tip regroup as in the planar arm; the
    rotors' first moments turn with angles N1 q1 and q1 + N2 q2, unlike any link's."""
    m_tip = {"link2.m": l1**2, "rotor2.m": l1**2}
    return [
        {"link1.Izz": 1.0, "rotor1.Izz": N1**2, **m_tip},
        {"link1.mcx": 1.0, "link2.m": l1, "rotor2.m": l1},
        {"link1.mcy": 1.0},
        {"link2.Izz": 1.0},
        {"link2.mcx": 1.0},
        {"link2.mcy": 1.0},
        {"rotor2.Izz": 1.0},
        {"rotor1.mcx": 1.0},
        {"rotor1.mcy": 1.0},
        {"rotor2.mcx": 1.0},
        {"rotor2.mcy": 1.0},
    ]


def test_geared_arm_base_parameters():
    model = _geared_arm()
    bp = ld.identifiable_parameters(model, rng=2)
    names = list(bp.parameter_names)
    H = _rows(names, _geared_textbook(0.7, 9.0))
    assert bp.rank == 11
    assert _same_row_space(bp.B, H)
    # the rotor's inertia appears with the square of its gear ratio, exactly, beside its link's
    row = bp.B[bp.names.index("link1.Izz")]
    np.testing.assert_allclose(row, H[0], rtol=1e-14, atol=0)
    assert bp.expressions[bp.names.index("link1.Izz")] == (
        "link1.Izz + link2.m·(49/100) + rotor1.Izz·81 + rotor2.m·(49/100)"
    )
    # negative control: the ratio instead of its square is not a base parameter
    wrong = _rows(names, [{"link1.Izz": 1.0, "rotor1.Izz": 9.0, "link2.m": 0.49, "rotor2.m": 0.49}])
    assert not _same_row_space(bp.B, np.vstack([H[1:], wrong]))


@pytest.mark.parametrize("case", ["geared_arm", "mini_cheetah", "five_bar", "solo12"])
def test_base_parameters_reproduce_torques_and_rank(case):
    if case == "geared_arm":
        model = _geared_arm()
    elif case == "solo12":
        model = trees.robot_case("solo12", False)[0]
    else:
        model = LOOP_MODELS[case]()
    armature = case == "geared_arm"
    bp = ld.identifiable_parameters(model, rng=3, armature=armature)
    pi = ld.inertial_parameters(model, armature)
    beta = bp.parameters(pi)
    data = model.create_data()
    rng = np.random.default_rng(99)  # other states than those the base parameters were found at
    Ys, Yb, taus = [], [], []
    for q, v, a in random_states(model, rng, 3 * len(pi) // model.nv + 5):
        Y = ld.regressor(model, data, q, v, a, armature)
        Yb.append(bp.regressor(model, data, q, v, a))
        Ys.append(Y)
        taus.append(Y @ pi)
        err = float(np.abs(Yb[-1] @ beta - Y @ pi).max()) / rounding_scale(Y, pi)
        assert err <= 1e-12, f"{case}: |Y_β β − Y π| = {err:.2e}"
    W = np.vstack(Ys)
    norms = np.linalg.norm(W, axis=0)
    live = norms > 1e-12 * norms.max()  # columns of parameters that act (others: rounding noise)
    s = np.linalg.svd(W[:, live] / norms[live], compute_uv=False)
    assert bp.rank == int(np.count_nonzero(s > 1e-9 * s[0])), "rank vs SVD at other states"
    # identification from torques recovers β exactly; dropping any base parameter makes the fit fail
    Wb, tau = np.vstack(Yb), np.concatenate(taus)
    fit = np.linalg.lstsq(Wb, tau, rcond=None)[0]
    np.testing.assert_allclose(fit, beta, rtol=1e-7, atol=1e-7 * np.abs(beta).max())
    for drop in range(bp.rank):
        keep = np.arange(bp.rank) != drop
        res = tau - Wb[:, keep] @ np.linalg.lstsq(Wb[:, keep], tau, rcond=None)[0]
        # the true β_drop is never 0 here: its column cannot be made up by the others
        if abs(beta[drop]) > 1e-6 * np.abs(beta).max():
            assert np.abs(res).max() > 1e-8 * np.abs(tau).max(), f"{case}: {bp.names[drop]} not needed?"


# ---------------------------------------------------------------------------------------------
# with_inertial_parameters and bad input
def test_with_inertial_parameters_round_trip():
    model = _geared_arm()
    model.armature = [0.1, 0.2, 0.3, 0.4]
    pi = ld.inertial_parameters(model, armature=True)
    pi2 = pi.copy()
    pi2[0] *= 2.0
    pi2[-1] = 0.7
    m2 = ld.with_inertial_parameters(model, pi2)
    np.testing.assert_allclose(ld.inertial_parameters(m2, armature=True), pi2, rtol=1e-14, atol=1e-15)
    np.testing.assert_array_equal(ld.inertial_parameters(model, armature=True), pi)  # untouched
    assert m2 is not model and m2._key is not model._key


def test_bad_parameters_name_the_body():
    model = _geared_arm()
    pi = ld.inertial_parameters(model)
    with pytest.raises(ModelError, match="10 per body"):
        ld.with_inertial_parameters(model, pi[:-1])
    bad = pi.copy()
    bad[10] = -1.0  # link2's mass
    with pytest.raises(ModelError, match="link2.*mass"):
        ld.with_inertial_parameters(model, bad)
    bad = pi.copy()
    bad[10 + 4] = -5.0  # link2's Ixx: not positive semi-definite
    with pytest.raises(ModelError, match="link2.*positive semi-definite"):
        ld.with_inertial_parameters(model, bad)
    bad = pi.copy()
    bad[20] = 0.0  # rotor1 massless with a first moment
    with pytest.raises(ModelError, match="rotor1.*first moment"):
        ld.with_inertial_parameters(model, bad)
    bad = pi.copy()
    bad[30 + 4 : 30 + 10] = [0.01, 0.0, 0.01, 0.0, 0.0, 1.0]  # rotor2 about its origin; with its c …
    m = bad[30]
    c = bad[31:34] / m
    bad[30 + 4 : 30 + 10] += m * np.array([c[1] ** 2 + c[2] ** 2, -c[0] * c[1], c[0] ** 2 + c[2] ** 2,
                                           -c[0] * c[2], -c[1] * c[2], c[0] ** 2 + c[1] ** 2])  # fmt: skip
    with pytest.raises(ModelError, match="rotor2.*triangle"):
        ld.with_inertial_parameters(model, bad, inertia="physical")
    with pytest.warns(InertiaWarning, match="rotor2"):
        ld.with_inertial_parameters(model, bad)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ld.with_inertial_parameters(model, bad, inertia="accept")
    bad = pi.copy()
    bad[3] = np.nan
    with pytest.raises(ModelError, match="link1.*finite"):
        ld.with_inertial_parameters(model, bad)


def test_regressor_bad_input():
    model = ld.robots.five_bar()
    data = model.create_data()
    q = ld.random_configuration(model, 0)
    z = np.zeros(model.nv)
    with pytest.raises(ShapeError, match="v"):
        ld.regressor(model, data, q, np.zeros(model.nv + 1), z)
    with pytest.raises(DataMismatchError):
        ld.regressor(model, ld.robots.four_bar().create_data(), q, z, z)
    # lists are converted
    np.testing.assert_array_equal(ld.regressor(model, data, list(q), [0.0] * model.nv, z),
                                  ld.regressor(model, data, q, z, z))  # fmt: skip


def test_readme_section_runs():

    from doc_pages import code_blocks

    block = code_blocks("tutorials/identification", "## Identification")[0]
    ns: dict = {"np": np, "ld": ld}
    exec(compile(block, "docs/tutorials/identification.md", "exec"), ns)
    base = ns["base"]
    assert base.rank == 11
    assert base.expressions[0] == "link1.Izz + link2.m·(1/4) + rotor1.Izz·81 + rotor2.m·(1/4)"
    Y, pi, Yb, beta = ns["Y"], ns["pi"], ns["Yb"], ns["beta"]
    assert np.abs(Yb @ beta - Y @ pi).max() <= 1e-12 * rounding_scale(Y, pi)


def test_identification_example(tmp_path, capsys):
    """examples/identify_leg.py: the exact model's fit predicts new torques to the noise level; the
    approximate model's (reflected inertia as armature) is several times worse; the PNG is written."""
    import importlib.util
    from pathlib import Path

    import matplotlib  # noqa: F401 (the example plots: a test dependency)

    path = Path(__file__).resolve().parents[1] / "examples" / "identify_leg.py"
    spec = importlib.util.spec_from_file_location("identify_leg", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    r = example.main(tmp_path)
    assert (tmp_path / "identify_leg.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "wrote" in capsys.readouterr().out
    assert r["rms"] < 1.2 * r["noise"]
    assert r["rms_approximate"] > 2.0 * r["rms"]
    # without noise the fit is exact (the base parameters are identifiable along this trajectory)
    exact = example.main(tmp_path, noise=0.0)
    np.testing.assert_allclose(exact["beta"], exact["beta_true"], rtol=1e-6,
                               atol=1e-8 * np.abs(exact["beta_true"]).max())  # fmt: skip


def test_identifiable_parameters_bad_input_and_busy_flag():
    from loopdyn.errors import InputError
    from loopdyn.model import layout as L

    model = _geared_arm(ratios=None)
    with pytest.raises(InputError, match="samples"):
        ld.identifiable_parameters(model, samples=0)
    with pytest.raises(InputError, match="tol"):
        ld.identifiable_parameters(model, tol=2.0)
    # a failed call leaves the Data usable (the kernel's in-use flag down)
    for m in (model, ld.robots.five_bar()):
        data = m.create_data()
        q = ld.random_configuration(m, 0)
        with pytest.raises(ld.errors.NonFiniteError):
            ld.regressor(m, data, q, np.full(m.nv, np.nan), np.zeros(m.nv))
        assert data.ib[0, L.I0_BUSY] == 0
        ld.regressor(m, data, q, np.zeros(m.nv), np.zeros(m.nv))
