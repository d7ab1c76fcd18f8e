"""Compile loopdyn's kernels ahead of use: :func:`compile` and ``loopdyn compile``.

Every kernel is compiled by Numba the first time it is called and kept in Numba's on-disk cache
(:mod:`loopdyn.jit`), so each machine pays for it once. :func:`compile` pays it up front, for every
kernel or for the named families, in worker processes on all cores, and reports what each kernel
cost. A second run finds everything in the cache and returns in seconds.
"""

from __future__ import annotations

import importlib
import os
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TextIO

from .errors import LoopdynError

__all__ = ["FAMILIES", "KernelTiming", "CompileReport", "compile", "kernels"]

# family -> the modules whose kernels it holds (each registers its kernels when imported)
FAMILIES: dict[str, tuple[str, ...]] = {
    "trees": ("algorithms.rnea", "algorithms.aba", "algorithms.crba", "algorithms.kinematics"),
    "loops": ("algorithms.cluster_dynamics", "algorithms.cluster_kinematics", "algorithms.cluster_delassus"),
    "delassus": (
        "algorithms.pv_osim",
        "algorithms.pv_osim_world",
        "algorithms.efpa",
        "algorithms.ltl_osim",
        "algorithms.cluster_pv_osimr",
        "algorithms.cluster_delassus_world",
    ),
    "contact": ("algorithms.contact",),
    "derivatives": (
        "algorithms.derivatives",
        "algorithms.loop_derivatives",
        "algorithms.contact_derivatives",
    ),
    "identification": ("algorithms.regressor",),
    "coriolis": ("algorithms.coriolis",),
    "batch": ("algorithms.batch",),
    "higher_order": (
        "higher_order.dynamics",
        "higher_order.closed_form",
        "higher_order.cluster_aba",
        "higher_order.clusters",
        "higher_order.loops",
    ),
    "baselines": ("baselines.kernels", "baselines.compiled"),
    "spatial_operators": ("spatial_operators.cluster_sweeps",),
}


@dataclass(frozen=True)
class KernelTiming:
    """One kernel: its family, module and name, the seconds its compilation (or cache load) took in its
    worker (less when helpers it shares with kernels compiled before it in that worker, or already in
    the cache, were reused), whether it came from the cache, and the worker's peak resident memory
    (MB) after it."""

    family: str
    module: str
    name: str
    seconds: float
    cached: bool
    peak_mb: float


@dataclass(frozen=True)
class CompileReport:
    """What :func:`compile` did: the kernels, the wall time and the number of worker processes."""

    kernels: tuple[KernelTiming, ...]
    seconds: float
    jobs: int

    @property
    def compiled(self) -> int:
        """How many kernels were compiled (not loaded from the cache)."""
        return sum(not k.cached for k in self.kernels)

    def summary(self) -> str:
        """One line: how many kernels, compiled or from the cache, in how long, by how many workers."""
        return (
            f"{len(self.kernels)} kernels ({self.compiled} compiled, {len(self.kernels) - self.compiled} "
            f"from the cache) in {self.seconds:.1f} s with {self.jobs} worker processes"
        )

    def slowest(self, n: int = 10) -> list[KernelTiming]:
        """The n kernels that took longest."""
        return sorted(self.kernels, key=lambda k: -k.seconds)[:n]

    def table(self, n: int = 10) -> str:
        """A plain-text table of the n slowest kernels."""
        rows = [f"{'kernel':44s} {'family':13s} {'seconds':>8s} {'peak MB':>8s}"]
        for k in self.slowest(n):
            src = "cache" if k.cached else ""
            name = f"{k.module}.{k.name}"
            rows.append(f"{name:44s} {k.family:13s} {k.seconds:8.1f} {k.peak_mb:8.0f} {src}")
        return "\n".join(rows)


def _family_modules(families: Iterable[str] | None) -> list[tuple[str, str]]:
    names = list(FAMILIES) if families is None else list(families)
    unknown = [f for f in names if f not in FAMILIES]
    if unknown:
        raise LoopdynError(f"unknown kernel family {unknown[0]!r}; the families are {', '.join(FAMILIES)}")
    return [(f, m) for f in names for m in FAMILIES[f]]


def kernels(families: Iterable[str] | None = None) -> list[tuple[str, str, str]]:
    """``(family, module, kernel name)`` of every kernel of the named families (all by default)."""
    from .algorithms import common

    out = []
    for family, mod in _family_modules(families):
        module = importlib.import_module(f"{__package__}.{mod}")
        for stub in common.registered_kernels():
            if stub.module is module:
                out.append((family, mod, stub.__name__))
    return out


def _compile_in_worker(family: str, mod: str, name: str) -> KernelTiming:
    """Worker: compile (or load) one kernel; its time and this process's peak memory."""
    import resource

    from .algorithms import common

    module = importlib.import_module(f"{__package__}.{mod}")
    stub = getattr(module, name)
    t0 = time.perf_counter()
    dispatcher = common.compiled(stub) if hasattr(stub, "signature") else stub
    seconds = time.perf_counter() - t0
    cached = sum(dispatcher.stats.cache_hits.values()) > 0 and not dispatcher.stats.cache_misses
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    return KernelTiming(family, mod, name, seconds, cached, peak)


def _interleaved(todo: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """The kernels taken from each family in turn. Kernels of one family call the same shared passes
    (:func:`loopdyn.jit.shared`): two workers starting two of them at once would both compile those
    passes, where a worker starting one after another finds them in the cache."""
    by_family: dict[str, list] = {}
    for task in todo:
        by_family.setdefault(task[0], []).append(task)
    queues = list(by_family.values())
    out = []
    while any(queues):
        out.extend(q.pop(0) for q in queues if q)
    return out


def _compile_task(task: tuple[str, str, str]) -> tuple[bool, object]:
    """Pool task: ``(True, KernelTiming)`` or ``(False, (module, name, error))``."""
    try:
        return True, _compile_in_worker(*task)
    except Exception as exc:
        return False, (task[1], task[2], f"{type(exc).__name__}: {exc}")


def compile(  # noqa: A001 - the public name the CLI mirrors: `loopdyn compile`
    families: Sequence[str] | None = None,
    jobs: int | None = None,
    progress: bool = True,
    stream: TextIO | None = None,
    tasks_per_worker: int = 4,
) -> CompileReport:
    """Compile every kernel of loopdyn (or those of ``families``: see :data:`FAMILIES`) into Numba's
    on-disk cache, ``jobs`` worker processes at a time (default: every core), and return what each
    kernel cost (:class:`CompileReport`). Kernels already in the cache load in a fraction of a second.

    ``progress`` shows a progress bar on a terminal, or one line per kernel when ``stream`` (default
    standard error) is a file or a pipe. Each worker compiles ``tasks_per_worker`` kernels and is
    then replaced, so that the memory a compilation leaves behind does not accumulate.
    """
    todo = _interleaved(kernels(families))
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(todo) or 1))
    stream = sys.stderr if stream is None else stream
    t0 = time.perf_counter()
    results: list[KernelTiming] = []
    import multiprocessing

    from .progress import Progress

    ctx = multiprocessing.get_context("spawn")  # a clean interpreter: no inherited compiler state
    bar = Progress(len(todo), "loopdyn compile", stream=stream, enabled=progress, lines=True)
    # multiprocessing's Pool replaces a worker after a few kernels (concurrent.futures' executor can
    # hang on Python 3.11 when its workers are replaced)
    with bar, ctx.Pool(processes=jobs, maxtasksperchild=max(1, tasks_per_worker)) as pool:
        for ok, item in pool.imap_unordered(_compile_task, todo):
            if not ok:  # a kernel that does not compile is a bug: say which
                raise LoopdynError(f"compiling {item[0]}.{item[1]} failed: {item[2]}")
            results.append(item)
            src = " (cache)" if item.cached else ""
            bar.update(1, note=f"{item.name} {item.seconds:.1f} s{src}")
    return CompileReport(tuple(results), time.perf_counter() - t0, jobs)
