"""The compiled-code cache (loopdyn.jit) under the conditions users meet: several processes compiling
one kernel at once, a read-only package folder, a source file changed after compiling, a corrupted
cache entry. Each case runs fresh Python processes on a private copy of the package and a private
cache folder, and reads the kernel's cache statistics (Numba's hits and misses) from inside them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import loopdyn

CHILD = r"""
import json, sys, warnings
import numpy as np
warnings.simplefilter("always")
with warnings.catch_warnings(record=True) as caught:
    import loopdyn as ld
    from loopdyn.algorithms import rnea as R
    m = ld.robots.double_pendulum()
    d = m.create_data()
    q, v, a = np.array([0.3, -0.7]), np.array([1.1, 0.4]), np.array([-0.2, 0.9])
    tau = ld.rnea(m, d, q, v, a)
stats = R.rnea_kernel.stats
print(json.dumps({
    "file": ld.__file__,
    "hits": sum(stats.cache_hits.values()),
    "misses": sum(stats.cache_misses.values()),
    "cache_path": stats.cache_path,
    "tau": tau.tolist(),
    "warnings": [f"{w.category.__name__}: {w.message}" for w in caught],
}))
"""


def _expected_tau() -> np.ndarray:
    m = loopdyn.robots.double_pendulum()
    q, v, a = np.array([0.3, -0.7]), np.array([1.1, 0.4]), np.array([-0.2, 0.9])
    return loopdyn.rnea(m, m.create_data(), q, v, a)


@pytest.fixture(scope="module")
def package_copy(tmp_path_factory) -> Path:
    """A copy of the loopdyn package (sources only) in a folder of its own."""
    root = tmp_path_factory.mktemp("pkg")
    src = Path(loopdyn.__file__).resolve().parent
    shutil.copytree(src, root / "loopdyn", ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc"))
    return root


def _env(pkg: Path, cache: Path | None, home: Path | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_CACHE_DIR")}
    env["PYTHONPATH"] = str(pkg)
    env["LOOPDYN_NATIVE_PROGRAMS"] = "0"
    if cache is not None:
        env["NUMBA_CACHE_DIR"] = str(cache)
    if home is not None:
        env["HOME"] = str(home)
        env["XDG_CACHE_HOME"] = str(home / ".cache")
    return env


def _spawn(pkg: Path, cache: Path | None, home: Path | None = None, read_only: bool = False):
    cmd = [sys.executable, "-c", CHILD]
    if read_only and os.geteuid() == 0:
        # root writes through file permissions: mount the package folder read-only instead, in a
        # mount namespace of the child's own
        remount = 'mount --bind "$0" "$0" && mount -o remount,ro,bind "$0" "$0" && exec "$@"'
        cmd = ["unshare", "--mount", "sh", "-c", remount, str(pkg), *cmd]
    return subprocess.Popen(
        cmd,
        env=_env(pkg, cache, home),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=str(home or pkg),
    )


def _result(proc) -> dict:
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err[-3000:]
    res = json.loads(out.strip().splitlines()[-1])
    return res


def _run(pkg: Path, cache: Path | None, home: Path | None = None, read_only: bool = False) -> dict:
    return _result(_spawn(pkg, cache, home, read_only))


@pytest.fixture(scope="module")
def warm_cache(package_copy, tmp_path_factory) -> Path:
    """A cache folder in which two processes compiled the RNEA kernel at the same time."""
    cache = tmp_path_factory.mktemp("cache")
    procs = [_spawn(package_copy, cache) for _ in range(2)]
    results = [_result(p) for p in procs]
    expected = _expected_tau()
    for res in results:  # both compiled (the cache was empty when they started) and both are right
        assert res["file"].startswith(str(package_copy))
        assert res["misses"] == 1 and res["hits"] == 0
        assert np.array_equal(res["tau"], expected)
        assert not res["warnings"]
    return cache


def test_two_processes_compiling_at_once_leave_a_usable_cache(package_copy, warm_cache):
    res = _run(package_copy, warm_cache)
    assert (res["hits"], res["misses"]) == (1, 0)  # loaded, not compiled
    assert np.array_equal(res["tau"], _expected_tau())
    assert not res["warnings"]


def test_a_changed_source_file_recompiles(package_copy, tmp_path):
    # Numba's own cache folder is per source folder: a copy of the package of its own, compiled once
    pkg = tmp_path / "pkg"
    shutil.copytree(package_copy, pkg)
    cache = tmp_path / "cache"
    first = _run(pkg, cache)
    assert (first["hits"], first["misses"]) == (0, 1)
    again = _run(pkg, cache)
    assert (again["hits"], again["misses"]) == (1, 0)  # negative control: unchanged sources load
    # the change is in a file the kernel calls (spatial algebra), not in the kernel's own file, whose
    # modification time is all Numba's own cache looks at: that would load stale machine code
    ops = pkg / "loopdyn" / "spatial" / "ops.py"
    ops.write_text(ops.read_text() + "\n# edited\n")
    edited = _run(pkg, cache)
    assert (edited["hits"], edited["misses"]) == (0, 1)  # recompiled, not the stale code
    assert np.array_equal(edited["tau"], _expected_tau())


def test_a_corrupted_cache_entry_is_recompiled_with_a_warning(package_copy, warm_cache, tmp_path):
    cache = tmp_path / "cache"
    shutil.copytree(warm_cache, cache)
    entries = [p for p in cache.rglob("*.rnea_kernel-*") if p.suffix in (".nbi", ".nbc")]
    assert {p.suffix for p in entries} == {".nbi", ".nbc"}, entries
    for path in entries:
        if path.suffix == ".nbc":
            path.write_bytes(b"not a pickle" + os.urandom(64))
    res = _run(package_copy, cache)
    assert res["misses"] == 1
    assert np.array_equal(res["tau"], _expected_tau())
    assert any(w.startswith("CacheWarning") and "rnea_kernel" in w for w in res["warnings"]), res["warnings"]
    # the recompiled entry replaced the corrupted one: the next process loads it silently
    again = _run(package_copy, cache)
    assert (again["hits"], again["misses"]) == (1, 0)
    assert not again["warnings"]


def test_a_corrupted_index_is_recompiled_with_a_warning(package_copy, warm_cache, tmp_path):
    cache = tmp_path / "cache"
    shutil.copytree(warm_cache, cache)
    (index,) = [p for p in cache.rglob("*.rnea_kernel-*.nbi")]
    index.write_bytes(index.read_bytes()[:20])  # truncated
    res = _run(package_copy, cache)
    assert res["misses"] == 1
    assert np.array_equal(res["tau"], _expected_tau())
    assert any(w.startswith("CacheWarning") for w in res["warnings"]), res["warnings"]
    again = _run(package_copy, cache)
    assert (again["hits"], again["misses"]) == (1, 0)


def test_a_read_only_package_folder_caches_in_the_user_folder(package_copy, tmp_path):
    pkg = tmp_path / "ro"
    shutil.copytree(package_copy, pkg)
    home = tmp_path / "home"
    home.mkdir()
    if os.geteuid() != 0:
        for path in [pkg, *pkg.rglob("*")]:
            if path.is_dir():
                path.chmod(0o555)
    try:
        first = _run(pkg, None, home=home, read_only=True)
        second = _run(pkg, None, home=home, read_only=True)
    finally:
        for path in [pkg, *pkg.rglob("*")]:
            if path.is_dir():
                path.chmod(0o755)
    assert not list(pkg.rglob("*.nbi"))  # nothing written beside the sources
    assert first["cache_path"].startswith(str(home)), first["cache_path"]
    assert (first["misses"], second["hits"], second["misses"]) == (1, 1, 0)
    assert np.array_equal(second["tau"], _expected_tau())


def test_a_step_called_from_python_raises_instead_of_crashing():
    """Steps have no Python entry point (loopdyn.jit.inlined): a call from Python is a clear error."""
    from loopdyn.algorithms.cluster_delassus_world import one_port_tree
    from loopdyn.spatial import ops

    with pytest.raises(TypeError, match=r"loopdyn\.spatial\.ops\.dot6 is a compiled step"):
        ops.dot6((1.0,) * 6, (2.0,) * 6)
    with pytest.raises(TypeError, match="one_port_tree is a compiled step"):
        one_port_tree(np.zeros((2, 4), dtype=np.int64))


STEPS_CHILD = r"""
import json, sys
import numpy as np
import loopdyn as ld
from loopdyn import jit
m = ld.robots.double_pendulum()
d = m.create_data()
q, v, a = np.array([0.3, -0.7]), np.array([1.1, 0.4]), np.array([-0.2, 0.9])
qdd = ld.aba(m, d, q, v, a)  # a kernel not in the cache; steps of the RNEA's are
steps = [f for mod in list(sys.modules.values()) if getattr(mod, "__name__", "").startswith("loopdyn")
         for f in vars(mod).values() if isinstance(f, jit.StepDispatcher) and f.overloads]
libraries = [cres.library for f in set(steps) for cres in f.overloads.values()]
from loopdyn.algorithms import aba as A
print(json.dumps({
    "qdd": qdd.tolist(),
    "kernel_misses": sum(A.aba_kernel.stats.cache_misses.values()),
    "steps": len(set(steps)),
    "step_hits": sum(sum(f.stats.cache_hits.values()) for f in set(steps)),
    "step_misses": sum(sum(f.stats.cache_misses.values()) for f in set(steps)),
    "all_step_libraries": all(isinstance(lib, jit.StepLibrary) for lib in libraries),
    "machine_code": sum(lib.get_pointer_to_function(f.name) != 0 for lib in libraries
                        for f in lib._final_module.functions if not f.is_declaration),
}))
"""


def test_steps_are_cached_as_ir_and_reused_by_a_kernel_compiled_later(package_copy, warm_cache):
    """A kernel compiled in a later process loads the steps an earlier one compiled (cached as LLVM
    IR, loopdyn.jit.StepLibrary), no step is turned into machine code of its own, and the kernel is
    right (against the same call in this process)."""
    proc = subprocess.run(
        [sys.executable, "-c", STEPS_CHILD],
        env=_env(package_copy, warm_cache),
        capture_output=True,
        text=True,
        timeout=600,
        cwd=str(package_copy),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    m = loopdyn.robots.double_pendulum()
    q, v, a = np.array([0.3, -0.7]), np.array([1.1, 0.4]), np.array([-0.2, 0.9])
    assert np.array_equal(res["qdd"], loopdyn.aba(m, m.create_data(), q, v, a))
    assert res["kernel_misses"] == 1, res  # compiled in the child
    assert res["steps"] > 5 and res["all_step_libraries"], res
    assert res["step_hits"] > 0  # the RNEA kernel's steps, compiled by warm_cache's processes
    assert res["machine_code"] == 0
