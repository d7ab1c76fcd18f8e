"""The public layer: explicit tree / cluster dispatch, unknown names, trees as their own spanning
trees, the Delassus method table, and the declared workspace layout."""

import numpy as np
import pytest
import trees

import loopdyn
from loopdyn import delassus_methods as delassus_module
from loopdyn.errors import LoopdynError, UnknownNameError, UnsupportedFeatureError
from loopdyn.model import layout as L


@pytest.fixture(scope="module")
def tree():
    rng = np.random.default_rng(11)
    lm, _ = trees.random_tree(rng, 6, floating=True, with_pinocchio=False)
    return lm


def test_to_spanning_of_a_tree_returns_its_state(tree):
    rng = np.random.default_rng(1)
    q, v, a = trees.random_state(rng, tree)
    qs, vs = loopdyn.to_spanning(tree, q, v)
    assert np.array_equal(qs, q) and np.array_equal(vs, v)
    assert qs is not q and vs is not v  # copies: the caller's arrays are never aliased
    qs, vs, as_ = loopdyn.to_spanning(tree, q, v, a)
    assert np.array_equal(as_, a)
    qs, vs = loopdyn.to_spanning(tree, q)
    assert np.array_equal(vs, np.zeros(tree.nv))
    with pytest.raises(LoopdynError, match="q must be a 1-D array of size"):
        loopdyn.to_spanning(tree, q[:-1], v)


def test_unknown_frame_and_constraint_body_name_close_names(tree):
    d = tree.create_data()
    q = loopdyn.neutral(tree)
    name = tree.bodies[2].name
    typo = name + "x"
    with pytest.raises(UnknownNameError, match=f"did you mean '{name}'"):
        loopdyn.frame_jacobian(tree, d, q, typo)
    with pytest.raises(UnknownNameError, match=f"did you mean '{name}'"):
        loopdyn.delassus(tree, d, q, [loopdyn.Constraint(typo, "3d")])
    with pytest.raises(KeyError):  # still a KeyError for generic handlers
        tree.body_id(typo)
    err = pytest.raises(UnknownNameError, tree.frame_index, 10_000)
    assert "out of range" in str(err.value)


def test_tree_only_functions_refuse_models_with_loops():
    model = loopdyn.robots.four_bar()
    d = model.create_data()
    q = loopdyn.neutral(model)
    with pytest.raises(UnsupportedFeatureError, match="trees only"):
        loopdyn.frame_jacobian_time_variation(model, d, q, np.zeros(model.nv), model.bodies[-1].name)
    # the batch functions are no longer tree-only (issue 11): one row = the single-state call
    tau = loopdyn.batch.rnea(model, q[None], np.zeros((1, model.nv)), np.zeros((1, model.nv)))
    expected = loopdyn.rnea(model, d, q, np.zeros(model.nv), np.zeros(model.nv))
    assert np.allclose(tau[0], expected, rtol=1e-12, atol=1e-12)


def test_every_listed_method_is_registered_and_baselines_register_theirs():
    for name in delassus_module.TREE_METHODS:
        assert (name, False) in delassus_module.METHODS
    for name in delassus_module.CLUSTER_METHODS:  # 'projected' and 'approximate' from loopdyn.baselines
        assert (name, True) in delassus_module.METHODS
    runner = delassus_module.METHODS[("projected", True)].runner
    assert runner.__module__ == "loopdyn.baselines"


def test_a_registered_method_is_used(tree):
    d = tree.create_data()
    q = loopdyn.neutral(tree)
    cons = [loopdyn.Constraint(tree.bodies[-1].name, "3d")]
    saved = delassus_module.METHODS[("dense", False)]
    try:
        delassus_module.register_method("dense", lambda *args: np.full((3, 3), 7.0), for_loops=False)
        assert np.array_equal(loopdyn.delassus(tree, d, q, cons, method="dense"), np.full((3, 3), 7.0))
    finally:
        delassus_module.METHODS[("dense", False)] = saved
    assert not np.array_equal(loopdyn.delassus(tree, d, q, cons, method="dense"), np.full((3, 3), 7.0))


def test_declared_layout_is_contiguous_and_complete():
    tables = (("I_", L.IB_COLUMNS, L.NI), ("W_", L.WS_COLUMNS, L.NW), ("C_", L.IC_COLUMNS, L.NC))
    for prefix, table, width in tables:
        at = 0
        for name, w, meaning in table:
            assert getattr(L, prefix + name) == at, name
            assert meaning
            at += w
        assert at == width
    assert L.W_TMP + 168 == L.NW  # the kernels' scratch is the last column block
    text = L.describe()
    assert "W_IA" in text and "articulated-body inertia" in text
    assert not hasattr(L, "W_PA")  # the unused articulated-bias column is gone (W_F holds it)


def test_threads_with_their_own_data_give_the_serial_results(tree):
    """The kernels release the GIL: user threads run them at the same time, each on its own Data."""
    import threading

    rng = np.random.default_rng(5)
    states = [trees.random_state(rng, tree) for _ in range(2)]
    serial = [loopdyn.aba(tree, tree.create_data(), q, v, a) for q, v, a in states]
    out = [None, None]

    def work(k):
        data = tree.create_data()
        q, v, a = states[k]
        for _ in range(200):
            out[k] = loopdyn.aba(tree, data, q, v, a)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(2):
        assert np.array_equal(out[k], serial[k])
    from loopdyn.algorithms import aba as aba_kernels

    assert aba_kernels.aba_kernel.targetoptions.get("nogil") is True
