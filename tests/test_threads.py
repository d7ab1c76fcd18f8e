"""Threads (issue 29 §6): the kernels release the GIL; one Data per thread runs them in parallel.

* Eight threads, each with its own Data of one shared model (a tree with a free flyer, and Mini
  Cheetah: a model with loops), run a mix of calls — rnea, aba, crba, two Delassus methods, contact
  dynamics and the higher-order derivatives — each on its own rotation of the states: every result is
  bitwise identical to the serial run's: the issue's figure, 10 000 calls per thread (about 6 s for
  both models on a shared 2-core machine; ``benchmarks/threads.py`` times it against the serial run).
* One Data shared between threads is refused, not corrupted: a kernel marks the Data in use with an
  atomic compare-and-swap (``ib[0, I0_BUSY]``) and a call from another thread meanwhile raises
  :class:`~loopdyn.errors.DataInUseError`, writing nothing. Every result the threads do get is still
  the serial one; the flag is down after every call, failed or not.
"""

from __future__ import annotations

import copy
import threading

import numpy as np
import pytest

import loopdyn as ld
from loopdyn.errors import DataInUseError, InputError
from loopdyn.model import layout as L

THREADS = 8
CALLS = 10_000  # per thread, per model (the figure)
SHARED_CALLS = 1_000  # per thread, all threads on one Data
STATES = 12


def _tree():
    return ld.robots.build("aerial_manipulator")


def _loops():
    return ld.robots.build("mini_cheetah")


def _constraints(m):
    leaves = [b.name for i, b in enumerate(m.bodies, start=1)
              if not any(c.parent == i for c in m.bodies) and "rotor" not in b.name]  # feet, hands
    return [ld.Constraint(leaves[-1], "6d"), ld.Constraint(leaves[0], "3d")]


def _calls(m):
    """name → f(model, data, state) returning an array (or a tuple of arrays)."""
    cons = _constraints(m)
    calls = {
        "rnea": lambda m, d, s: ld.rnea(m, d, s["q"], s["v"], s["a"]),
        "rnea_fext": lambda m, d, s: ld.rnea(m, d, s["q"], s["v"], s["a"], f_ext=s["f"]),
        "aba": lambda m, d, s: ld.aba(m, d, s["q"], s["v"], s["tau"]),
        "crba": lambda m, d, s: ld.crba(m, d, s["q"]),
        "delassus": lambda m, d, s: ld.delassus(m, d, s["q"], cons),
        "delassus_efpa": lambda m, d, s: ld.delassus(m, d, s["q"], cons, method="efpa"),
        "contact": lambda m, d, s: ld.constrained_forward_dynamics(m, d, s["q"], s["v"], s["tau"], cons),
        "ho_rnea": lambda m, d, s: ld.higher_order.rnea(m, d, s["q"], s["dv"]),
        "ho_aba": lambda m, d, s: ld.higher_order.aba(m, d, s["q"], s["v"], s["dtau"]),
    }
    if not m.has_constraints:
        calls["minverse"] = lambda m, d, s: ld.minverse(m, d, s["q"])
    return calls


def _states(m, seed=0):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(STATES):
        out.append({
            "q": ld.random_configuration(m, rng),
            "v": rng.normal(size=m.nv),
            "a": rng.normal(size=m.nv),
            "tau": rng.normal(size=m.nv) * 5.0,
            "f": rng.normal(size=(m.njoints, 6)),
            "dv": rng.normal(size=(4, m.nv)),
            "dtau": rng.normal(size=(3, m.nv)),
        })
    return out


def _flat(result):
    return np.concatenate([np.ravel(x) for x in result]) if isinstance(result, tuple) else np.ravel(result)


def _schedule(t: int, k: int, ncalls: int) -> tuple[int, int]:
    """The (call, state) thread t makes at its k-th step: every thread its own rotation."""
    return (k + 3 * t) % ncalls, (5 * k + t) % STATES


def _run_threads(m, datas, calls, states, n, reference):
    """Threads t = 0 … len(datas) − 1 run ``n`` scheduled calls on ``datas[t]`` (the same Data may be
    passed to several), started together. Returns per thread (mismatches, DataInUseErrors, errors)."""
    names = list(calls)
    barrier = threading.Barrier(len(datas))
    report = [None] * len(datas)

    def work(t):
        bad, busy, other = [], 0, []
        barrier.wait()
        for k in range(n):
            c, s = _schedule(t, k, len(names))
            try:
                r = _flat(calls[names[c]](m, datas[t], states[s]))
            except DataInUseError:
                busy += 1
                continue
            except Exception as exc:  # noqa: BLE001 - reported, and the test fails on it
                other.append(repr(exc))
                continue
            if not np.array_equal(r, reference[c, s]):
                bad.append((names[c], s))
        report[t] = (bad, busy, other)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(len(datas))]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return report


@pytest.fixture(scope="module", params=["tree", "loops"])
def case(request):
    m = _tree() if request.param == "tree" else _loops()
    calls = _calls(m)
    states = _states(m)
    d = m.create_data()
    reference = {
        (c, s): _flat(f(m, d, states[s])) for c, f in enumerate(calls.values()) for s in range(STATES)
    }
    return m, calls, states, reference


def test_eight_threads_with_their_own_data_match_the_serial_run_bitwise(case):
    m, calls, states, reference = case
    datas = [m.create_data() for _ in range(THREADS - 1)] + [copy.deepcopy(m.create_data())]
    report = _run_threads(m, datas, calls, states, CALLS, reference)
    for bad, busy, other in report:
        assert other == [] and busy == 0
        assert bad == []
    assert all(d.ib[0, L.I0_BUSY] == 0 for d in datas)


def test_negative_control_the_threads_do_differ_from_a_wrong_reference(case):
    """The bitwise comparison has teeth: one ulp off in one reference entry is caught."""
    m, calls, states, reference = case
    wrong = dict(reference)
    c, s = _schedule(0, 0, len(calls))
    wrong[c, s] = wrong[c, s].copy()
    wrong[c, s][0] = np.nextafter(wrong[c, s][0], np.inf)
    report = _run_threads(m, [m.create_data()], calls, states, 1, wrong)
    assert report[0][0] == [(list(calls)[c], s)]


def test_a_data_in_use_refuses_the_call_and_writes_nothing(case):
    """Deterministic: the flag of a kernel running in another thread, set by hand."""
    m, calls, states, reference = case
    d = m.create_data()
    d.ib[0, L.I0_BUSY] = 1
    floats = d.ws.copy() if d.cluster_arrays is None else d.cluster_arrays[1].copy()
    higher_order = ("ho_rnea", "ho_aba")  # their kernels never touch the Data's workspace
    for name, f in calls.items():
        if name in higher_order:
            continue
        with pytest.raises(DataInUseError, match="another thread"):
            f(m, d, states[0])
    ld_fk = ld.forward_kinematics
    with pytest.raises(DataInUseError):
        ld_fk(m, d, states[0]["q"])
    now = d.ws if d.cluster_arrays is None else d.cluster_arrays[1]
    np.testing.assert_array_equal(now, floats)
    d.ib[0, L.I0_BUSY] = 0
    for c, (name, f) in enumerate(calls.items()):
        np.testing.assert_array_equal(_flat(f(m, d, states[0])), reference[c, 0], err_msg=name)
    # a copy of a Data in use is not in use
    d.ib[0, L.I0_BUSY] = 1
    assert copy.deepcopy(d).ib[0, L.I0_BUSY] == 0


def test_the_flag_is_down_after_failed_calls(case):
    m, calls, states, _ = case
    d = m.create_data()
    s = dict(states[0])
    s["v"] = s["v"].copy()
    s["v"][0] = np.nan
    for name in ("rnea", "aba", "contact"):
        with pytest.raises(InputError):
            calls[name](m, d, s)
        assert d.ib[0, L.I0_BUSY] == 0, name


def test_one_data_shared_by_eight_threads_is_refused_or_right_never_wrong(case):
    """Eight threads on ONE Data: each call either returns the serial result bitwise or raises
    DataInUseError; nothing else, never a corrupted result."""
    m, calls, states, reference = case
    shared = m.create_data()
    report = _run_threads(m, [shared] * THREADS, calls, states, SHARED_CALLS, reference)
    for bad, _busy, other in report:
        assert other == [] and bad == []
    assert shared.ib[0, L.I0_BUSY] == 0
    print("DataInUseError per thread:", [r[1] for r in report])
