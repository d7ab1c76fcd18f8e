"""``loopdyn.batch`` on Dask arrays (issue 32, part 1): lazy results, one task per chunk, equal bit for
bit to the in-process batch (NumPy in) on a tree (solo12) and a model with loops (Mini Cheetah), on a
real ``dask.distributed.LocalCluster`` of worker processes and on the threaded scheduler; a worker
killed in the middle of a computation (its chunks rerun, the result complete and identical); a bad
row deep in a large array named by its global index; the model one key of the graph (pickled once,
not per task), each kernel compiled or loaded once per worker; an ``ImportError`` naming the extra
without Dask.

The in-process batch is the oracle here: its own correctness (against the single-state functions,
and those against Pinocchio and the dense formulas) is tested in test_batch.py, test_batch_contact.py
and the tests they cite. What is tested here is that the Dask layer cuts, runs and reassembles the
rows without changing a bit, and names the right row.
"""

from __future__ import annotations

import logging
import os
import pickle
import signal
import subprocess
import sys
import textwrap
import time

import dask
import dask.array as da
import numpy as np
import pytest
import trees
from dask.core import get_dependencies
from distributed import Client, LocalCluster

import loopdyn as ld
from loopdyn import Constraint, batch
from loopdyn.errors import MissingDependencyError, NonFiniteError, ShapeError

SOLO_FEET = [Constraint(f, "3d") for f in ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")]
CHEETAH_FEET = [
    Constraint(f"{leg}_knee_link", "3d", (np.eye(3), [0.0, 0.0, -0.2])) for leg in ("FL", "FR", "HL", "HR")
]


def _case(name):
    if name == "mini_cheetah":
        return ld.robots.mini_cheetah(), CHEETAH_FEET
    lm, _ = trees.robot_case(name, with_pinocchio=False)
    return lm, SOLO_FEET


@pytest.fixture(scope="module", params=["solo12", "mini_cheetah"])
def case(request):
    return _case(request.param)


@pytest.fixture(scope="module")
def client():
    """Two worker processes of one thread each (the nanny restarts a killed worker)."""
    with LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=logging.ERROR
    ) as cluster, Client(cluster) as c:  # fmt: skip
        yield c


def _states(model, n, seed=0):
    rng = np.random.default_rng(seed)
    Q = np.stack([ld.random_configuration(model, rng) for _ in range(n)])
    return Q, rng.normal(size=(n, model.nv)), rng.normal(size=(n, model.nv))


def _same(got, want, what):
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want), what
    for j, (g, w) in enumerate(zip(got, want, strict=True)):
        assert isinstance(g, np.ndarray) and g.shape == w.shape, f"{what}[{j}]: {type(g)} {np.shape(g)}"
        assert np.array_equal(g, w), f"{what}[{j}]: max |dask - in-process| = {np.max(np.abs(g - w)):.3g}"


def test_distributed_equals_in_process(case, client):
    model, cons = case
    n = 403  # five chunks of 90 and a short one
    Q, V, X = _states(model, n)
    Qd, Vd, Xd = (da.from_array(a, chunks=(90, -1)) for a in (Q, V, X))
    calls = {
        "rnea": lambda B, q, v, x: B.rnea(model, q, v, x),
        "aba": lambda B, q, v, x: B.aba(model, q, v, x),
        "crba": lambda B, q, v, x: B.crba(model, q),
        "cfd": lambda B, q, v, x: B.constrained_forward_dynamics(model, q, v, x, cons, mu=1e-6),
    }
    if not model.has_constraints:
        calls["aba_derivatives"] = lambda B, q, v, x: B.aba_derivatives(model, q, v, x)
    want = {k: f(batch, Q, V, X) for k, f in calls.items()}  # compiles (or loads) the kernels once, here
    lazy = {k: f(batch, Qd, Vd, Xd) for k, f in calls.items()}
    for k, out in lazy.items():
        for o in out if isinstance(out, tuple) else (out,):
            assert isinstance(o, da.Array) and o.numblocks[0] == 5, k
    got = client.compute(lazy, sync=True)
    for k in calls:
        _same(got[k], want[k], f"{model.name}: {k}")
    # each worker process compiled or loaded each kernel it ran once (one signature, one load)
    loads = client.run(_kernel_loads)
    for worker, counts in loads.items():
        assert counts and all(c == 1 for c in counts.values()), f"{worker}: {counts}"


def _kernel_loads() -> dict:
    """On a worker: for each batch kernel compiled in this process, how many times it was compiled
    or loaded from the cache (Numba's dispatcher statistics)."""
    from loopdyn.algorithms import batch as kernels

    out = {}
    for name in dir(kernels):
        fn = getattr(kernels, name)
        if name.endswith("_batch_kernel") and hasattr(fn, "stats"):
            out[name] = sum(fn.stats.cache_hits.values()) + sum(fn.stats.cache_misses.values())
    return out


@pytest.mark.parametrize("name", ["solo12", "mini_cheetah"])
def test_every_function_on_the_threaded_scheduler(name):
    model, cons = _case(name)
    n = 21
    Q, V, X = _states(model, n, seed=2)
    rng = np.random.default_rng(5)
    F = rng.normal(size=(n, model.njoints, 6))
    K = rng.normal(size=(n, 3 * len(cons)))
    Qd = da.from_array(Q, chunks=8)
    Xd = da.from_array(X, chunks=5)  # chunked otherwise: rechunked to Q's chunks
    calls = {
        "rnea": lambda q, x: batch.rnea(model, q, V, x),
        "aba": lambda q, x: batch.aba(model, q, V, x),
        "crba": lambda q, x: batch.crba(model, q),
        "regressor": lambda q, x: batch.regressor(model, q, V, x, armature=True),
        "coriolis_matrix": lambda q, x: batch.coriolis_matrix(model, q, V),
        "mass_matrix_derivative": lambda q, x: batch.mass_matrix_derivative(model, q, V),
        "rnea_derivatives": lambda q, x: batch.rnea_derivatives(model, q, V, x),
        "aba_derivatives": lambda q, x: batch.aba_derivatives(model, q, V, x),
        "cfd": lambda q, x: batch.constrained_forward_dynamics(model, q, V, x, cons, K, 1e-6, F),
        "cfd_vector": lambda q, x: batch.constrained_forward_dynamics(model, q, V, x, cons, K[0]),
        "cfd_derivatives": lambda q, x: batch.constrained_forward_dynamics_derivatives(
            model, q, V, x, cons, K, 1e-6, F
        ),
    }
    with dask.config.set(scheduler="threads", num_workers=2):
        for k, f in calls.items():
            want = f(Q, X)
            out = f(Qd, Xd)
            outs = out if isinstance(out, tuple) else (out,)
            assert all(isinstance(o, da.Array) and o.chunks[0] == (8, 8, 5) for o in outs), k
            _same(dask.compute(*outs) if isinstance(out, tuple) else out.compute(), want, f"{name}: {k}")


def test_numpy_in_numpy_out_and_eager_shape_errors():
    model = ld.robots.four_bar()
    Q, V, X = _states(model, 6)
    assert type(batch.aba(model, Q, V, X)) is np.ndarray
    # a Dask argument among NumPy ones makes the call lazy, whichever argument it is
    out = batch.aba(model, Q, V, da.from_array(X, chunks=4))
    assert isinstance(out, da.Array) and out.chunks == ((4, 2), (model.nv,))
    # two calls on different states, computed together: distinct keys, both results right
    Qd = da.from_array(Q, chunks=4)
    both = dask.compute(batch.aba(model, Qd, V, X), batch.aba(model, Qd, V, 2 * X), scheduler="threads")
    _same(both, (batch.aba(model, Q, V, X), batch.aba(model, Q, V, 2 * X)), "two calls")
    # shapes are checked against the whole arrays when the graph is built, nothing computed
    with pytest.raises(ShapeError, match=r"V must have shape \(6, "):
        batch.aba(model, da.from_array(Q, chunks=4), V[:5], X)
    with pytest.raises(ShapeError, match=r"TAU must have shape \(6, "):
        batch.aba(model, da.from_array(Q, chunks=4), V, X[:, :-1])


def test_model_is_one_key_of_the_graph():
    """Every block task depends on one key holding the model; no task's own spec carries it (so a
    scheduler pickles the model once per graph and a worker fetches it once, not once per task)."""
    model, cons = _case("mini_cheetah")
    Q, V, X = _states(model, 40)
    out = batch.constrained_forward_dynamics(model, da.from_array(Q, chunks=5), V, X, cons)
    graph = dict(out[0].__dask_graph__())  # as built (before fusion)
    size = len(pickle.dumps(model))
    big = [k for k, task in graph.items() if len(pickle.dumps(task)) > size // 2]
    assert len(big) == 1, big
    users = [k for k in graph if big[0] in get_dependencies(graph, k)]
    assert len(users) == 8 and len({k[0] for k in users}) == 1, users  # one task per chunk (8 of 5 states)


def _tiled(model, n_unique, reps, seed=0):
    """``reps`` copies of ``n_unique`` states as NumPy arrays and as lazy Dask arrays, one chunk per copy."""
    Q, V, X = _states(model, n_unique, seed)
    lazy = tuple(da.concatenate([da.from_array(a, chunks=(n_unique, -1))] * reps) for a in (Q, V, X))
    return (Q, V, X), lazy


def test_worker_killed_mid_computation(client):
    model = ld.robots.mini_cheetah()
    (Q, V, X), (Qd, Vd, Xd) = _tiled(model, 4000, 24)
    want = np.tile(batch.aba(model, Q, V, X), (24, 1))
    out = batch.aba(model, Qd, Vd, Xd)
    fut = client.compute(out)
    pids = client.run(os.getpid)

    def results() -> dict:  # worker → the chunks of the result it holds
        return {w: [k for k in keys if k[0] == out.name] for w, keys in client.has_what().items()}

    deadline = time.monotonic() + 120
    while not any(results().values()):  # a chunk done: work under way
        assert time.monotonic() < deadline, "no chunk finished"
        time.sleep(0.02)
    held = results()
    victim = max(held, key=lambda w: len(held[w]))  # a worker holding finished chunks
    os.kill(pids[victim], signal.SIGKILL)
    assert not fut.done(), "the computation ended before the worker was killed: the test proves nothing"
    got = fut.result(timeout=240)
    _same(got, want, "aba after a killed worker")
    assert pids[victim] not in client.run(os.getpid).values()  # the worker was replaced


def test_bad_row_named_by_its_global_index(client):
    model = ld.robots.mini_cheetah()
    (Q, V, X), (Qd, Vd, Xd) = _tiled(model, 1000, 30)
    bad = 23456  # in the 24th chunk
    hit = (da.arange(Qd.shape[0], chunks=1000) == bad)[:, None] & (np.arange(model.nq) == 0)
    Qbad = da.where(hit, np.nan, Qd)
    with pytest.raises(NonFiniteError, match=rf"^row {bad}: q contains NaN"):
        client.compute(batch.aba(model, Qbad, Vd, Xd), sync=True)
    # negative control: in-process on that chunk's rows alone, the row is local
    with pytest.raises(NonFiniteError, match=rf"^row {bad % 1000}: q"):
        batch.aba(model, Qbad[23000:24000].compute(), V, X)
    # a tuple-valued function, and a per-state argument other than q (desired)
    K = np.zeros((Qd.shape[0], 12))
    K[bad + 7, 3] = np.inf
    with pytest.raises(NonFiniteError, match=rf"^row {bad + 7}: desired"):
        out = batch.constrained_forward_dynamics(model, Qd, Vd, Xd, CHEETAH_FEET, K)
        client.compute(out, sync=True)


def test_without_dask_the_error_names_the_extra():
    code = textwrap.dedent(
        """
        import sys
        import dask.array as da
        import numpy as np
        import loopdyn as ld
        model = ld.robots.four_bar()
        Q = da.zeros((4, model.nq), chunks=2)
        V = np.zeros((4, model.nv))
        for name in [k for k in sys.modules if k == "dask" or k.startswith("dask.")]:
            sys.modules[name] = None  # as if Dask were not installed
        try:
            ld.batch.aba(model, Q, V, V)
        except ImportError as exc:
            print(type(exc).__name__, "|", exc)
        """
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith(MissingDependencyError.__name__ + " |"), run.stdout + run.stderr
    assert "loopdyn[dask]" in run.stdout and "loopdyn.batch.aba" in run.stdout
