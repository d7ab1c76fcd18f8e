"""``loopdyn.batch`` (issue 11, item 4): the batched rnea / aba / crba on trees and on models with
loops equal the single-state functions row by row (1e-12), whatever the thread count and chunking;
shapes; a bad row raises the single-state function's exception, naming the row.

The oracle of the single-state functions themselves is elsewhere (Pinocchio for trees in
test_dynamics_vs_pinocchio, the dense Gᵀ H_span G / KKT formulas for clusters in
test_cluster_dynamics); here the batch is checked against them, and on the loop models also against
an identity independent of the batch code path: aba(rnea(a)) = a.
"""

from __future__ import annotations

import numba
import numpy as np
import pytest

import loopdyn
from loopdyn.errors import ConfigurationError, NonFiniteError, ShapeError

TOL = 1e-12


def _models():
    r = loopdyn.robots
    return {
        "mini_cheetah": r.mini_cheetah,
        "tello": r.tello,
        "four_bar": r.four_bar,
        "gt_chain": lambda: r.gt_chain(6, seed=3),
        "chain7": lambda: loopdyn.io.load_urdf(r.revolute_chain_urdf(7, seed=7)),
    }


@pytest.fixture(scope="module", params=list(_models()))
def model(request):
    return _models()[request.param]()


def _states(model, n, seed=0):
    rng = np.random.default_rng(seed)
    Q = np.stack([loopdyn.random_configuration(model, rng) for _ in range(n)])
    V = rng.normal(size=(n, model.nv))
    A = rng.normal(size=(n, model.nv))
    return Q, V, A


def _close(x, y, what):
    x, y = np.asarray(x), np.asarray(y)
    assert x.shape == y.shape, what
    scale = max(1.0, float(np.max(np.abs(y))))
    err = float(np.max(np.abs(x - y)))
    assert err <= TOL * scale, f"{what}: max |batch - single| = {err:.3g}"


@pytest.mark.parametrize("threads", [1, 2])
def test_batch_equals_single_state_functions(model, threads):
    n = 150  # enough rows for several chunks per thread
    Q, V, A = _states(model, n)
    d = model.create_data()
    old = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        tau = loopdyn.batch.rnea(model, Q, V, A)
        ddq = loopdyn.batch.aba(model, Q, V, tau)
        M = loopdyn.batch.crba(model, Q)
    finally:
        numba.set_num_threads(old)
    assert tau.shape == (n, model.nv) and ddq.shape == (n, model.nv) and M.shape == (n, model.nv, model.nv)
    _close(tau, [loopdyn.rnea(model, d, Q[k], V[k], A[k]) for k in range(n)], f"{model.name}: rnea")
    _close(ddq, [loopdyn.aba(model, d, Q[k], V[k], tau[k]) for k in range(n)], f"{model.name}: aba")
    _close(M, [loopdyn.crba(model, d, Q[k]) for k in range(n)], f"{model.name}: crba")
    # independent of both code paths being the same: forward dynamics inverts inverse dynamics
    err = np.max(np.abs(ddq - A)) / max(1.0, np.max(np.abs(A)))
    assert err < 1e-9, f"{model.name}: aba(rnea(a)) - a = {err:.3g}"
    assert np.array_equal(M, np.swapaxes(M, 1, 2)), f"{model.name}: batch crba not symmetric"


def test_batch_small_and_empty(model):
    Q, V, A = _states(model, 3, seed=1)
    d = model.create_data()
    _close(loopdyn.batch.rnea(model, Q[:1], V[:1], A[:1])[0], loopdyn.rnea(model, d, Q[0], V[0], A[0]),
           f"{model.name}: one row")  # fmt: skip
    assert loopdyn.batch.rnea(model, Q[:0], V[:0], A[:0]).shape == (0, model.nv)
    assert loopdyn.batch.crba(model, Q[:0]).shape == (0, model.nv, model.nv)


def test_bad_rows_are_named(model):
    n = 100
    Q, V, A = _states(model, n, seed=2)
    V[57, 0] = np.nan
    with pytest.raises(NonFiniteError, match=r"^row 57: v contains NaN"):
        loopdyn.batch.rnea(model, Q, V, A)
    A[80, -1] = np.inf
    with pytest.raises(NonFiniteError, match=r"^row 80: tau"):
        loopdyn.batch.aba(model, Q, np.zeros_like(V), A)
    Q[63, 0] = np.nan
    with pytest.raises(NonFiniteError, match=r"^row 63: q"):
        loopdyn.batch.crba(model, Q)


def test_off_constraint_row_is_named():
    m = loopdyn.robots.four_bar()  # implicit loop: q must satisfy φ(q) = 0
    Q, V, A = _states(m, 90, seed=3)
    Q[41] += 0.3
    with pytest.raises(ConfigurationError, match=r"^row 41: q: the positions of cluster"):
        loopdyn.batch.rnea(m, Q, V, A)
    with pytest.raises(ConfigurationError, match=r"^row 41: "):
        loopdyn.batch.crba(m, Q)


def test_shapes_are_checked(model):
    Q, V, A = _states(model, 4, seed=4)
    with pytest.raises(ShapeError, match="V must have shape"):
        loopdyn.batch.rnea(model, Q, V[:3], A)
    with pytest.raises(ShapeError, match="single vector"):
        loopdyn.batch.aba(model, Q[0], V, A)
    with pytest.raises(ShapeError, match="Q must have shape"):
        loopdyn.batch.crba(model, np.zeros((2, model.nq + 1)))


def test_concurrent_batches_from_user_threads():
    """Several user threads running batches at once (sharing the pool) get their own results."""
    from concurrent.futures import ThreadPoolExecutor

    models = [loopdyn.robots.mini_cheetah(), loopdyn.robots.four_bar()]
    jobs = [(m, *_states(m, 200, seed=10 + i)) for i, m in enumerate(models * 2)]
    expected = [loopdyn.batch.rnea(m, Q, V, A) for m, Q, V, A in jobs]
    with ThreadPoolExecutor(4) as ex:
        got = list(ex.map(lambda job: loopdyn.batch.rnea(*job), jobs))
    for (m, *_), e, g in zip(jobs, expected, got, strict=True):
        assert np.array_equal(e, g), m.name
