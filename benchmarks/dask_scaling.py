"""The batch functions on Dask (issue 32 §1): 10⁶ forward-dynamics states, in-process against a
``dask.distributed.LocalCluster`` of 1 and 2 worker processes (one thread each).

Two models: solo12 (a tree: ABA) and Mini Cheetah (12 geared loops: C-ABA). The states: a pool of
``--chunk`` random states, each chunk made from them in its own task (the pools stored on the
cluster before the clock starts), its velocities and torques scaled differently, so no array of 10⁶
states is ever held by a worker. (Drawing them per chunk with
``dask.array.random`` cost as much as the dynamics.)

* **in-process** — ``loopdyn.batch.aba`` on NumPy arrays of all the states at once (drawn beforehand,
  not timed), on ``numba.get_num_threads()`` threads (the machine's cores);
* **LocalCluster, w workers** — ``loopdyn.batch.aba`` on the Dask arrays, each chunk's result
  reduced to a checksum at once (``.sum()``), so a worker's memory does not grow with the number of
  states. Each worker loads the kernel before the clock starts (``client.run``). The run is done
  with ``N/10`` and then ``N`` states, and the peak resident memory of each worker process
  (``VmHWM``) is read after each: streaming means the two are about equal.

Reported per row: states per second, the ratio to the in-process batch, and the overhead per chunk
``(wall × workers − Σ task compute time) / chunks`` (Dask's task stream: the time a worker is not
running a task, per chunk of states), and the same per task (a chunk is two tasks: its index, and its
inputs, batch call and checksum fused into one).
The per-chunk checksums of the cluster runs equal the in-process ones bit for bit.

Usage: ``python benchmarks/dask_scaling.py [--states N] [--chunk C]``. The machine's load average
is printed before and after each model (the machine may be shared).
"""

from __future__ import annotations

import argparse
import logging
import os
import resource
import sys
import time
import warnings
from pathlib import Path

import dask.array as da
import numba
import numpy as np
from distributed import Client, LocalCluster, wait

import loopdyn as ld

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def _model(name: str):
    if name == "mini_cheetah":
        return ld.robots.mini_cheetah()
    import trees  # the tests' example-robot-data loader

    return trees.robot_case(name, with_pinocchio=False)[0]


def _inputs(model, n: int, pool: int, seed: int = 0, client=None):
    """Lazy (Q, V, TAU): pools of ``pool`` random states, chunk k made from them by one task (the
    configurations as drawn, the velocities and torques scaled by 1 + k / chunks, so that no two
    chunks are the same states); Dask fuses these tasks into the chunk's batch task. With a
    ``client``, the pools are first stored on the cluster (before any clock starts), so that the
    timed graph holds only the tasks, as the in-process batch is given its arrays ready."""
    import dask

    rng = np.random.default_rng(seed)
    Qp = np.stack([ld.random_configuration(model, rng) for _ in range(pool)])
    pools = [dask.delayed(x, pure=True) for x in (Qp, *rng.standard_normal((2, pool, model.nv)))]
    if client is not None:  # 10 MiB sent once, untimed: Dask's warning about a large graph is moot
        warnings.filterwarnings("ignore", message="Sending large graph")
        pools = client.persist(pools)
        wait(pools)
    reps = n // pool
    index = da.arange(reps, chunks=1)

    def chunks(p, width, scale: bool):
        return index.map_blocks(_chunk, p, reps, scale, new_axis=1, chunks=((pool,) * reps, (width,)),
                                meta=np.empty((0, 0)))  # fmt: skip

    return (
        chunks(pools[0], model.nq, False),
        chunks(pools[1], model.nv, True),
        chunks(pools[2], model.nv, True),
    )


def _chunk(k: np.ndarray, p: np.ndarray, reps: int, scale: bool) -> np.ndarray:
    """Chunk ``k[0]`` of the inputs: the pool ``p``, scaled by 1 + k / reps if ``scale``."""
    return p * (1 + k[0] / reps) if scale else p


def _peak_mib() -> float:
    """The process's peak resident memory (MiB): Linux's ``VmHWM`` (that of the process's own memory
    since its ``exec``; ``ru_maxrss`` would include its parent's at the fork, here the benchmark's
    own 10⁶ states), else ``ru_maxrss``."""
    try:
        with open("/proc/self/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _warm(model) -> int:
    """On a worker: load the kernel (and the model's tables) before the clock starts."""
    rng = np.random.default_rng(0)
    q = np.stack([ld.random_configuration(model, rng) for _ in range(4)])
    ld.batch.aba(model, q, np.zeros((4, model.nv)), np.zeros((4, model.nv)))
    return os.getpid()


def _chunk_sums(out, pool: int):
    """One checksum per chunk of ``pool`` states: a Dask array of one number per chunk (the chunks'
    results are reduced as soon as they are made), or the same from the in-process result."""
    if isinstance(out, np.ndarray):
        return out.reshape(-1, pool * out.shape[1]).sum(axis=1)[:, None]
    # elementwise in the blocks' layout (no axis dropped), so that Dask fuses it into the chunk's task
    return out.map_blocks(lambda b: np.array([[b.sum()]]), chunks=((1,) * out.numblocks[0], (1,)))


def in_process(model, n: int, pool: int) -> tuple[float, np.ndarray]:
    Q, V, TAU = (x.compute() for x in _inputs(model, n, pool))
    ld.batch.aba(model, Q[:8], V[:8], TAU[:8])  # compile or load
    t0 = time.perf_counter()
    out = ld.batch.aba(model, Q, V, TAU)
    wall = time.perf_counter() - t0
    return wall, _chunk_sums(out, pool)


def on_cluster(name: str, model, workers: int, n: int, pool: int) -> dict:
    with LocalCluster(
        n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
        silence_logs=logging.ERROR,
    ) as cluster, Client(cluster) as client:  # fmt: skip
        client.run(_warm, model)
        rows = {}
        for size in (n // 10, n):
            checksum = _chunk_sums(ld.batch.aba(model, *_inputs(model, size, pool, client=client)), pool)
            with _TaskStream(client) as ts:
                t0 = time.perf_counter()
                total = client.compute(checksum, sync=True)
                wall = time.perf_counter() - t0
            busy, tasks = ts.busy()
            rows[size] = {
                "wall": wall,
                "checksum": total,
                "tasks": tasks,
                "overhead": (wall * workers - busy) / (size // pool),
                "peak": client.run(_peak_mib),
            }
        return rows


class _TaskStream:
    """Dask's task stream over a block: the summed compute time of the tasks and their count."""

    def __init__(self, client):
        from distributed import get_task_stream

        self._cm = get_task_stream(client)

    def __enter__(self):
        self._ts = self._cm.__enter__()
        return self

    def __exit__(self, *exc):
        return self._cm.__exit__(*exc)

    def busy(self) -> tuple[float, int]:
        busy, count = 0.0, 0
        for rec in self._ts.data:
            for ss in rec["startstops"]:
                if ss["action"] == "compute":
                    busy += ss["stop"] - ss["start"]
            count += 1
        return busy, count


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--states", type=int, default=1_000_000)
    ap.add_argument("--chunk", type=int, default=25_000, help="states per chunk (= the configuration pool)")
    ap.add_argument("--models", nargs="+", default=["solo12", "mini_cheetah"])
    args = ap.parse_args(argv)
    n, pool = args.states, args.chunk
    threads = numba.get_num_threads()
    print(f"{n} states, chunks of {pool}; in-process on {threads} threads; {os.cpu_count()} cpus")
    for name in args.models:
        model = _model(name)
        print(f"\n{name} ({'C-ABA' if model.has_constraints else 'ABA'}), load average {os.getloadavg()}")
        wall, ref = in_process(model, n, pool)
        print(f"  in-process batch      {n / wall:12.0f} states/s  (1.00)   wall {wall:.2f} s")
        rates = {}
        for w in (1, 2):
            rows = on_cluster(name, model, w, n, pool)
            r = rows[n]
            rates[w] = n / r["wall"]
            diff = np.max(np.abs(r["checksum"] - ref) / np.maximum(1.0, np.abs(ref)))
            same = (
                "checksums equal bit for bit"
                if np.array_equal(r["checksum"], ref)
                else f"CHECKSUMS DIFFER {diff:.3g}"
            )
            peaks = " ".join(
                f"{rows[n // 10]['peak'][k]:.0f}→{r['peak'][k]:.0f}" for k in sorted(r["peak"])
            )  # fmt: skip
            print(
                f"  LocalCluster {w} worker{'s' if w > 1 else ' '}  {rates[w]:12.0f} states/s  "
                f"({rates[w] * wall / n:.2f})   wall {r['wall']:.2f} s, "
                f"{n // pool} chunks ({r['tasks']} tasks), "
                f"overhead {1e3 * r['overhead']:.1f} ms/chunk, "
                f"{1e3 * r['overhead'] * (n // pool) / r['tasks']:.1f} ms/task; "
                f"peak RSS per worker (MiB, N/10→N) {peaks}; {same}"
            )
        print(f"  2 workers / 1 worker: {rates[2] / rates[1]:.2f} (target ≥ 1.7); "
              f"2 workers / in-process: {rates[2] * wall / n:.2f} (target ≥ 0.85)")  # fmt: skip
        print(f"  load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
