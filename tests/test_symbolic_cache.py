"""The cache of the symbolic work on implicit loops (``loopdyn.constraints.symbolic_cache``): a model
built again — in this process or, from the disk, in another — is the same model, built without
differentiating anything; a changed formula is differentiated again; a corrupted entry is recomputed
with a warning."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

import loopdyn as ld
from loopdyn.constraints import symbolic_cache, tape
from loopdyn.constraints.tape import compile_constraint
from loopdyn.jit import CacheWarning
from loopdyn.model import clusters


@pytest.fixture
def fresh_cache(monkeypatch, tmp_path):
    """An empty disk cache and an empty in-process cache (restored afterwards)."""
    monkeypatch.setenv("LOOPDYN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(symbolic_cache, "_MEMORY", {})
    return tmp_path / "symbolic"


def _count_symbolic_work(monkeypatch) -> dict[str, int]:
    """Counts the calls of the two functions that differentiate with sympy."""
    calls = {"tape": 0, "assembly": 0}
    emit, assemble = tape._differentiate_and_emit, clusters._assemble

    def counted_emit(*a, **k):
        calls["tape"] += 1
        return emit(*a, **k)

    def counted_assemble(*a, **k):
        calls["assembly"] += 1
        return assemble(*a, **k)

    monkeypatch.setattr(tape, "_differentiate_and_emit", counted_emit)
    monkeypatch.setattr(clusters, "_assemble", counted_assemble)
    return calls


def _compiled_arrays(model) -> dict[str, np.ndarray]:
    cc = model.compiled().clusters
    return {name: getattr(cc, name) for name in ("ic", "cb", "wc", "code", "consts", "table", "outputs")}


def _dynamics(model, seed=3):
    rng = np.random.default_rng(seed)
    q = ld.random_configuration(model, rng=seed)
    v, tau = rng.normal(size=model.nv), rng.normal(size=model.nv)
    data = model.create_data()
    return ld.aba(model, data, q, v, tau), ld.crba(model, data, q)


@pytest.mark.parametrize("robot", ["four_bar", "planar_leg_linkage"])
def test_a_model_built_again_is_the_same_and_differentiates_nothing(robot, fresh_cache, monkeypatch):
    calls = _count_symbolic_work(monkeypatch)
    first = ld.robots.build(robot)
    first_arrays, first_dyn = _compiled_arrays(first), _dynamics(first)
    assert calls["tape"] > 0 and calls["assembly"] > 0  # negative control: the counters count
    assert list(fresh_cache.glob("*.npz"))
    before = dict(calls)
    # the same process: from memory; another process (memory emptied): from the disk
    for memory in ("kept", "emptied"):
        if memory == "emptied":
            monkeypatch.setattr(symbolic_cache, "_MEMORY", {})
        again = ld.robots.build(robot)
        assert calls == before, memory
        for name, arr in _compiled_arrays(again).items():
            assert np.array_equal(arr, first_arrays[name]), (memory, name)
        for x, y in zip(_dynamics(again), first_dyn, strict=True):
            assert np.array_equal(x, y), memory


def test_a_changed_formula_is_differentiated_again(fresh_cache, monkeypatch):
    calls = _count_symbolic_work(monkeypatch)
    x, y = sp.symbols("x y", real=True)
    p1 = compile_constraint([sp.sin(x) + 0.5 * y**2], [x, y])
    p2 = compile_constraint([sp.sin(x) + 0.5 * y**2], [x, y])
    assert calls["tape"] == 1 and np.array_equal(p1.code, p2.code)
    p3 = compile_constraint([sp.sin(x) + 0.25 * y**2], [x, y])  # one constant changed
    p4 = compile_constraint([sp.sin(x) + 0.5 * y**2], [y, x])  # the coordinates in another order
    assert calls["tape"] == 3
    q, qd = np.array([0.3, -0.7]), np.array([1.1, 0.4])
    phi1, K1, k1 = p1.evaluate(q, qd)
    phi3, K3, _ = p3.evaluate(q, qd)
    phi4, K4, _ = p4.evaluate(q[::-1], qd[::-1])
    assert phi1[0] == pytest.approx(np.sin(0.3) + 0.5 * 0.49, rel=1e-15)
    assert phi3[0] == pytest.approx(np.sin(0.3) + 0.25 * 0.49, rel=1e-15)
    np.testing.assert_allclose(K1, [[np.cos(0.3), -0.7]], rtol=1e-15)
    np.testing.assert_allclose(K4, [[-0.7, np.cos(0.3)]], rtol=1e-15)
    assert phi4[0] == phi1[0]
    np.testing.assert_allclose(k1, [np.sin(0.3) * 1.1**2 - 0.4**2], rtol=1e-14)


def test_a_corrupted_entry_is_computed_again_with_a_warning(fresh_cache, monkeypatch):
    x = sp.symbols("x", real=True)
    good = compile_constraint([sp.cos(x) ** 2 - 0.1], [x])
    (entry,) = fresh_cache.glob("*.npz")
    entry.write_bytes(b"not an npz file")
    monkeypatch.setattr(symbolic_cache, "_MEMORY", {})
    calls = _count_symbolic_work(monkeypatch)
    with pytest.warns(CacheWarning, match="unreadable symbolic cache entry"):
        again = compile_constraint([sp.cos(x) ** 2 - 0.1], [x])
    assert calls["tape"] == 1
    assert np.array_equal(again.code, good.code) and np.array_equal(again.consts, good.consts)
    monkeypatch.setattr(symbolic_cache, "_MEMORY", {})
    compile_constraint([sp.cos(x) ** 2 - 0.1], [x])  # the entry was rewritten: read, not computed
    assert calls["tape"] == 1


def test_off_by_environment(fresh_cache, monkeypatch):
    monkeypatch.setenv("LOOPDYN_SYMBOLIC_CACHE", "0")
    calls = _count_symbolic_work(monkeypatch)
    x = sp.symbols("x", real=True)
    for _ in range(2):
        compile_constraint([sp.tan(x) - 0.2], [x])
    assert calls["tape"] == 2 and not fresh_cache.exists()


def test_cached_arrays_are_read_only(fresh_cache):
    x = sp.symbols("x", real=True)
    prog = compile_constraint([sp.exp(x) - 2.0], [x])
    with pytest.raises(ValueError, match="read-only"):
        prog.code[0, 0] = 0
