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


# Shared passes (loopdyn.jit.shared), on a probe module written into the package copy: a pass with an
# inlined step and a raise, a second pass calling the first, and two kernels calling them.
PROBE = r"""
from loopdyn.jit import inlined, njit, shared


@inlined
def twice(x, i):
    return 2.0 * x[i]


@shared(fastmath={"contract"})
def scale_pass(x, y, shift):
    s = 0.0
    for i in range(x.shape[0]):
        y[i] = twice(x, i) + (1.0 if shift else 0.0)
        s += y[i]
    if s < -1e300:
        raise ValueError("scale_pass: the sum overflowed")
    return s


@shared
def outer_pass(x, y):
    return scale_pass(x, y, True) + 1.0


@njit("float64(float64[::1], float64[::1])", cache=True)
def kernel_a(x, y):
    return scale_pass(x, y, False) + outer_pass(x, y)


@njit("float64(float64[::1], float64[::1])", cache=True)
def kernel_b(x, y):
    return outer_pass(x, y)
"""

PROBE_CHILD = r"""
import json, sys, warnings
import numpy as np
warnings.simplefilter("always")
first = sys.argv[1]
with warnings.catch_warnings(record=True) as caught:
    from loopdyn import _shared_probe as P
    x, y = np.arange(5.0), np.zeros(5)
    out = {"b": P.kernel_b(x, y)} if first == "b" else {}
    out["a"] = P.kernel_a(x, y)
    out["b"] = P.kernel_b(x, y)
    out["y"] = y.tolist()
    try:
        P.kernel_a(np.full(3, -1e300), np.zeros(3))
    except ValueError as exc:
        out["raised"] = str(exc)
ir = {}
for k in (P.kernel_a, P.kernel_b):
    if k.stats.cache_misses:  # compiled here: its LLVM IR is at hand
        ir[k.py_func.__name__] = next(iter(k.inspect_llvm().values()))
stats = lambda d: [sum(d.stats.cache_hits.values()), sum(d.stats.cache_misses.values())]
print(json.dumps({**out,
    "stats": {n: stats(getattr(P, n)) for n in ("kernel_a", "kernel_b", "scale_pass", "outer_pass")},
    "declared": {n: sorted(ln.split("@")[1].split("(")[0] for ln in s.splitlines()
                           if ln.startswith("declare") and "loopdyn_shared_" in ln) for n, s in ir.items()},
    "defined": {n: [ln for ln in s.splitlines() if ln.startswith("define") and "_pass" in ln]
                for n, s in ir.items()},
    "warnings": [f"{w.category.__name__}: {w.message}" for w in caught],
}))
"""


@pytest.fixture(scope="module")
def probe_package(tmp_path_factory, package_copy) -> Path:
    root = tmp_path_factory.mktemp("probe")
    shutil.copytree(package_copy, root, dirs_exist_ok=True)
    (root / "loopdyn" / "_shared_probe.py").write_text(PROBE)
    return root


def _child(code: str, pkg: Path, cache: Path, *args: str) -> dict:
    """Run ``code`` in a fresh Python process on the package copy ``pkg`` and the cache folder
    ``cache``; the JSON object it prints last."""
    proc = subprocess.run(
        [sys.executable, "-c", code, *args],
        env=_env(pkg, cache),
        capture_output=True,
        text=True,
        timeout=600,
        cwd=str(pkg),
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _probe(pkg: Path, cache: Path, first: str = "a") -> dict:
    return _child(PROBE_CHILD, pkg, cache, first)


# x = 0..4: scale_pass(x, y, False) = 20, outer_pass = (20 + 5) + 1 = 26; y = 2x + 1 after outer_pass
PROBE_RESULT = {
    "a": 46.0,
    "b": 26.0,
    "y": [1.0, 3.0, 5.0, 7.0, 9.0],
    "raised": "scale_pass: the sum overflowed",
}


def test_shared_passes_are_compiled_once_and_called_not_copied(probe_package, tmp_path):
    """Two kernels call the same passes: each pass is compiled once, declared in the kernels' modules
    and defined in neither; results and an exception raised inside a pass are right."""
    res = _probe(probe_package, tmp_path / "cache")
    assert {k: res[k] for k in PROBE_RESULT} == PROBE_RESULT
    assert res["stats"] == {n: [0, 1] for n in ("kernel_a", "kernel_b", "scale_pass", "outer_pass")}
    assert len(res["declared"]["kernel_a"]) == 2 and len(res["declared"]["kernel_b"]) == 1
    assert set(res["declared"]["kernel_b"]) < set(res["declared"]["kernel_a"])
    assert res["defined"] == {"kernel_a": [], "kernel_b": []}
    assert not res["warnings"]


def test_a_cached_kernel_loads_the_passes_it_calls_first(probe_package, tmp_path):
    """In a new process, a kernel loaded from the cache loads the passes it calls (and the passes they
    call) before its own machine code, whichever kernel comes first."""
    cache = tmp_path / "cache"
    _probe(probe_package, cache)
    for first in ("a", "b"):
        res = _probe(probe_package, cache, first)
        assert {k: res[k] for k in PROBE_RESULT} == PROBE_RESULT
        assert res["stats"] == {n: [1, 0] for n in ("kernel_a", "kernel_b", "scale_pass", "outer_pass")}
        assert not res["warnings"]


def test_a_kernel_loaded_from_the_cache_finds_a_pass_that_had_to_be_recompiled(probe_package, tmp_path):
    """A kernel calls a shared pass by a name of loopdyn's, not by an address or Numba's per-process
    symbol: with the pass's cache entry corrupted, the pass is compiled again (with a warning), the
    kernel is still loaded from the cache, and it calls the new machine code."""
    cache = tmp_path / "cache"
    _probe(probe_package, cache)
    (entry,) = [p for p in cache.rglob("*.scale_pass-*.nbc")]
    entry.write_bytes(b"not a pickle" + os.urandom(64))
    res = _probe(probe_package, cache, "b")
    assert {k: res[k] for k in PROBE_RESULT} == PROBE_RESULT
    assert res["stats"]["kernel_b"] == [1, 0] and res["stats"]["kernel_a"] == [1, 0]  # loaded
    assert res["stats"]["scale_pass"] == [0, 1]  # compiled again
    assert any(w.startswith("CacheWarning") and "scale_pass" in w for w in res["warnings"]), res["warnings"]


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
    """Steps have no Python entry point (loopdyn.jit.inlined), nor have shared passes
    (loopdyn.jit.shared): a call from Python is a clear error."""
    from loopdyn.algorithms import cluster_dynamics as C
    from loopdyn.algorithms.cluster_delassus_world import one_port_tree
    from loopdyn.spatial import ops

    with pytest.raises(TypeError, match=r"loopdyn\.algorithms\.cluster_dynamics\.c_aba_backward is a "):
        C.c_aba_backward(np.zeros(3))
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
    res = _child(STEPS_CHILD, package_copy, warm_cache)
    m = loopdyn.robots.double_pendulum()
    q, v, a = np.array([0.3, -0.7]), np.array([1.1, 0.4]), np.array([-0.2, 0.9])
    assert np.array_equal(res["qdd"], loopdyn.aba(m, m.create_data(), q, v, a))
    assert res["kernel_misses"] == 1, res  # compiled in the child
    assert res["steps"] > 5 and res["all_step_libraries"], res
    assert res["step_hits"] > 0  # the RNEA kernel's steps, compiled by warm_cache's processes
    assert res["machine_code"] == 0
