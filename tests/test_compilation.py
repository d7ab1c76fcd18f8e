"""`loopdyn.compile` / `loopdyn compile`: every kernel of the named families compiled in worker
processes into the cache, none of the others; a second run loads them all from the cache."""

from __future__ import annotations

import io

import numpy as np
import pytest

import loopdyn as ld
from loopdyn import cli, compilation
from loopdyn.errors import LoopdynError


def test_families_partition_the_kernels():
    every = compilation.kernels()
    names = [(mod, name) for _, mod, name in every]
    assert len(names) == len(set(names))  # each kernel in one family
    trees = {name for fam, _, name in every if fam == "trees"}
    assert {"rnea_kernel", "aba_kernel", "crba_kernel"} <= trees
    assert not any(name.startswith("c_") for name in trees)  # no cluster kernel in the tree family
    loops = {name for fam, _, name in every if fam == "loops"}
    assert {"c_rnea_kernel", "c_aba_kernel", "c_crba_kernel"} <= loops
    # every kernel module of the package belongs to a family (a new module must be listed)
    from loopdyn.algorithms import common

    registered = {(s.module.__name__.split("loopdyn.")[1], s.__name__) for s in common.registered_kernels()}
    assert registered <= set(names), registered - set(names)


def test_unknown_family_is_named():
    with pytest.raises(LoopdynError, match="'treez'"):
        compilation.kernels(["treez"])
    err = io.StringIO()
    import contextlib

    with contextlib.redirect_stderr(err):
        assert cli.main(["compile", "--families", "treez", "--quiet"]) == 2
    assert "treez" in err.getvalue()


def test_compile_trees_only_then_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "numba"))  # the workers' empty cache
    log = io.StringIO()
    first = ld.compile(families=["trees"], jobs=2, stream=log, tasks_per_worker=1)  # workers replaced
    expected = {name for fam, _, name in compilation.kernels(["trees"])}
    assert {k.name for k in first.kernels} == expected
    assert {k.family for k in first.kernels} == {"trees"}
    assert first.compiled == len(expected) and first.jobs == 2
    assert all(k.seconds > 0 and k.peak_mb > 0 for k in first.kernels)
    lines = log.getvalue().splitlines()  # a log, not a terminal: a line per kernel
    assert lines[0].startswith("loopdyn compile: started")
    assert sum(": [" in line for line in lines) == len(expected)
    # only the tree modules' cache entries were written
    written = {p.name.split(".")[0] for p in (tmp_path / "numba").rglob("*.nbi")}
    assert "cluster_dynamics" not in written and "contact" not in written
    second = ld.compile(families=["trees"], jobs=2, progress=False)
    assert second.compiled == 0 and all(k.cached for k in second.kernels)
    assert max(k.seconds for k in second.kernels) < min(max(k.seconds for k in first.kernels), 5.0)
    assert "rnea_kernel" in second.table()


def test_results_are_identical_before_and_after_warm_up(tmp_path):
    """The same call, compiled in this process and loaded from the cache in another, gives the same
    bits (a corrupted or stale cache would not). Tree kernels only: they are built from the same
    cached steps (``loopdyn.jit``) as the cluster kernels, and compiling C-ABA, C-RNEA and the cluster
    CRBA cold in a process of their own would add about 40 CPU-s to every test run for no new path
    through the cache."""
    import json
    import subprocess
    import sys

    script = (
        "import json, numpy as np, loopdyn as ld\n"
        "t = ld.spanning_tree(ld.robots.mini_cheetah()); dt = t.create_data()\n"
        "qt = ld.random_configuration(t, rng=3); r = np.random.default_rng(4)\n"
        "vt, at = r.normal(size=t.nv), r.normal(size=t.nv)\n"
        "out = [ld.aba(t, dt, qt, vt, at), ld.rnea(t, dt, qt, vt, at), ld.crba(t, dt, qt)]\n"
        "print(json.dumps([x.tolist() for x in out]))\n"
    )
    env = {"NUMBA_CACHE_DIR": str(tmp_path / "numba"), "LOOPDYN_CACHE_DIR": str(tmp_path / "ld")}
    import os

    env = {**os.environ, **env}
    runs = [
        json.loads(subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                                  check=True).stdout)  # fmt: skip
        for _ in range(2)
    ]
    for cold, warm in zip(*runs, strict=True):
        assert np.array_equal(np.array(cold), np.array(warm))
