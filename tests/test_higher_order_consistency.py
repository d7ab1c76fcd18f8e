"""loopdyn.higher_order: order 0 against loopdyn.rnea / loopdyn.aba, order 1 against the chain rule
of Pinocchio's computeRNEADerivatives, the ID → FD round trip up to r = 10, and bad input."""

from __future__ import annotations

import numpy as np
import pytest
import trees

import loopdyn as ld
from loopdyn import errors
from loopdyn import higher_order as ho

TREES = [0, 1, 2, 3, 4, 6, 7, 9, 11, 13, 18, 19]
IDS = [trees.tree_case_id(trees.TREE_SPECS[i]) for i in TREES]


def stacks(rng, lm, rows: int, rho: float = 0.7):
    """Random derivative stacks whose k-th row has scale ρ^k (like a smooth trajectory's)."""
    scale = rho ** np.arange(rows)[:, None]
    dv = rng.normal(size=(rows, lm.nv)) * scale
    fe = rng.normal(size=(rows - 1, lm.njoints, 6)) * scale[:-1, :, None]
    return dv, fe


@pytest.mark.parametrize("index", TREES, ids=IDS)
def test_order_zero_is_loopdyn_rnea_and_aba(index):
    lm, _ = trees.tree_case(index, with_pinocchio=False)
    data = lm.create_data()
    rng = np.random.default_rng(index)
    for _ in range(3):
        q = trees.random_configuration(rng, lm)
        dv, fe = stacks(rng, lm, 2)
        tau = ho.rnea(lm, data, q, dv, fe)
        ref = ld.rnea(lm, data, q, dv[0], dv[1], fe[0])
        np.testing.assert_allclose(tau[0], ref, rtol=1e-12, atol=1e-11 * max(1.0, np.abs(ref).max()))
        a = ho.aba(lm, data, q, dv[0], tau, fe)
        ref_a = ld.aba(lm, data, q, dv[0], tau[0], fe[0])
        np.testing.assert_allclose(a[0], ref_a, rtol=1e-11, atol=1e-11 * max(1.0, np.abs(ref_a).max()))


@pytest.mark.parametrize("index", TREES, ids=IDS)
def test_round_trip_to_order_ten(index):
    lm, _ = trees.tree_case(index, with_pinocchio=False)
    data = lm.create_data()
    rng = np.random.default_rng(50 + index)
    for with_forces in (False, True):
        q = trees.random_configuration(rng, lm)
        dv, fe = stacks(rng, lm, 12)
        fe = fe if with_forces else None
        tau = ho.rnea(lm, data, q, dv, fe)
        back = ho.aba(lm, data, q, dv[0], tau, fe)
        assert back.shape == (11, lm.nv)
        for k in range(11):
            err = np.max(np.abs(back[k] - dv[k + 1]))
            assert err <= 1e-9 * max(1.0, np.max(np.abs(tau[k]))), (k, err)
        # orders are computed in sequence: a truncated stack gives the leading rows exactly
        back3 = ho.aba(lm, data, q, dv[0], tau[:4], None if fe is None else fe[:4])
        np.testing.assert_array_equal(back3, back[:4])


PIN_TREES = [0, 3, 4, 7, 9, 11, 19]


@pytest.mark.parametrize("index", PIN_TREES, ids=[IDS[TREES.index(i)] for i in PIN_TREES])
def test_order_one_is_pinocchio_rnea_derivatives_chain_rule(index):
    import pinocchio as pin
    lm, pm = trees.tree_case(index)
    pdata = pm.createData()
    data = lm.create_data()
    rng = np.random.default_rng(70 + index)
    for _ in range(3):
        q = trees.random_configuration(rng, lm)
        dv = rng.normal(size=(3, lm.nv))
        dq, dvel, da = pin.computeRNEADerivatives(pm, pdata, q, dv[0], dv[1])
        ref = dq @ dv[0] + dvel @ dv[1] + da @ dv[2]  # τ̇ = ∂τ/∂q v + ∂τ/∂v a + ∂τ/∂a jerk
        got = ho.rnea(lm, data, q, dv)[1]
        np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-9 * max(1.0, np.abs(ref).max()))


@pytest.mark.parametrize("index", [4, 9], ids=[IDS[TREES.index(i)] for i in [4, 9]])
def test_leading_coefficient_is_the_mass_matrix(index):
    """∂τ^(r)/∂v^(r+1) = M (crba), at every order."""
    lm, _ = trees.tree_case(index, with_pinocchio=False)
    data = lm.create_data()
    rng = np.random.default_rng(3)
    q = trees.random_configuration(rng, lm)
    M = ld.crba(lm, data, q)
    for r in (0, 1, 3, 5):
        dv, _ = stacks(rng, lm, r + 2)
        delta = rng.normal(size=lm.nv)
        d2 = dv.copy()
        d2[r + 1] += delta
        diff = ho.rnea(lm, data, q, d2)[r] - ho.rnea(lm, data, q, dv)[r]
        np.testing.assert_allclose(diff, M @ delta, rtol=1e-9, atol=1e-9 * np.abs(M @ delta).max())


# ----------------------------------------------------------------------------------------------
# bad input
@pytest.fixture(scope="module")
def floating():
    lm, _ = trees.tree_case(9, with_pinocchio=False)  # free-flyer root, spherical and continuous joints
    return lm


def test_bad_input_raises_specific_errors_and_data_stays_usable(floating):
    lm = floating
    data = lm.create_data()
    rng = np.random.default_rng(0)
    q = trees.random_configuration(rng, lm)
    dv, fe = stacks(rng, lm, 4)
    good = ho.rnea(lm, data, q, dv, fe)
    good_fd = ho.aba(lm, data, q, dv[0], good, fe)
    nv, nj = lm.nv, lm.njoints
    with pytest.raises(errors.ShapeError, match="dv"):
        ho.rnea(lm, data, q, dv[:, :-1])
    with pytest.raises(errors.ShapeError, match="dv"):
        ho.rnea(lm, data, q, dv[:1])  # needs at least v and a
    with pytest.raises(errors.ShapeError, match="dv"):
        ho.rnea(lm, data, q, dv[0])  # 1-D
    with pytest.raises(errors.ShapeError, match="q"):
        ho.rnea(lm, data, q[:-1], dv)
    with pytest.raises(errors.ShapeError, match="f_ext.*orders"):
        ho.rnea(lm, data, q, dv, fe[:2])  # r = 2 for dv, r = 1 for f_ext
    with pytest.raises(errors.ShapeError, match="f_ext"):
        ho.rnea(lm, data, q, dv, np.zeros((3, nj - 1, 6)))
    with pytest.raises(errors.ShapeError, match="dtau"):
        ho.aba(lm, data, q, dv[0], np.zeros((3, nv + 1)))
    with pytest.raises(errors.ShapeError, match="f_ext.*orders"):
        ho.aba(lm, data, q, dv[0], good, fe[:1])
    with pytest.raises(errors.ShapeError, match="v"):
        ho.aba(lm, data, q, dv[0][:-1], good)
    bad = dv.copy()
    bad[2, 3] = np.nan
    with pytest.raises(errors.NonFiniteError, match="dv"):
        ho.rnea(lm, data, q, bad)
    badf = fe.copy()
    badf[1, 2, 0] = np.inf
    with pytest.raises(errors.NonFiniteError, match="f_ext"):
        ho.rnea(lm, data, q, dv, badf)
    with pytest.raises(errors.NonFiniteError, match="dtau"):
        ho.aba(lm, data, q, dv[0], np.full((2, nv), np.nan))
    qb = q.copy()
    qb[3:7] *= 1.1  # the free-flyer's quaternion
    with pytest.raises(errors.ConfigurationError, match=lm.bodies[0].joint_name):
        ho.rnea(lm, data, qb, dv)
    with pytest.raises(errors.ConfigurationError):
        ho.aba(lm, data, qb, dv[0], good)
    with pytest.raises(errors.InputError, match="dv"):
        ho.rnea(lm, data, q, "abc")
    with pytest.raises(errors.InputError, match="dv"):
        ho.rnea(lm, data, q, np.ones((3, nv), dtype=bool))
    with pytest.raises(errors.DataMismatchError):
        ho.rnea(lm, trees.tree_case(0, with_pinocchio=False)[0].create_data(), q, dv)
    with pytest.raises(errors.InputError, match="no joint called"):
        ho.hybrid(lm, data, q, dv, good, ["nope"])
    with pytest.raises(errors.InputError, match="joint index"):
        ho.hybrid(lm, data, q, dv, good, [0])
    with pytest.raises(errors.ShapeError, match="dtau"):
        ho.hybrid(lm, data, q, dv, good[:1], [])
    with pytest.raises(errors.ShapeError, match="v"):
        ho.closed_form(lm, data, q, dv[0, :-1])
    # lists and non-contiguous arrays are accepted through the slow path
    np.testing.assert_array_equal(ho.rnea(lm, data, list(q), dv.tolist(), fe), good)
    np.testing.assert_array_equal(ho.rnea(lm, data, q, np.asfortranarray(dv), fe), good)
    # nothing was corrupted
    np.testing.assert_array_equal(ho.rnea(lm, data, q, dv, fe), good)
    np.testing.assert_array_equal(ho.aba(lm, data, q, dv[0], good, fe), good_fd)


def test_hybrid_on_a_model_with_loops_is_refused_with_a_clear_error():
    model = ld.robots.four_bar()
    data = model.create_data()
    q = ld.neutral(model)
    with pytest.raises(errors.UnsupportedFeatureError, match="four_bar"):
        ho.hybrid(model, data, q, np.zeros((2, model.nv)), np.zeros((1, model.nv)), [])


def test_model_change_invalidates_the_cached_arrays():
    import copy

    lm = copy.deepcopy(trees.tree_case(7, with_pinocchio=False)[0])
    data = lm.create_data()
    rng = np.random.default_rng(1)
    q = trees.random_configuration(rng, lm)
    dv, _ = stacks(rng, lm, 3)
    ho.rnea(lm, data, q, dv)  # cached
    lm.gravity = (0.0, 0.0, -1.0)
    with pytest.raises(errors.DataMismatchError):
        ho.rnea(lm, data, q, dv)
    with pytest.raises(errors.DataMismatchError):
        ho.aba(lm, data, q, dv[0], dv[1:])
    data2 = lm.create_data()
    np.testing.assert_allclose(ho.rnea(lm, data2, q, dv)[0], ld.rnea(lm, data2, q, dv[0], dv[1]), atol=1e-12)
