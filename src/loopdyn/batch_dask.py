"""The batch functions on Dask arrays: lazy, one task per chunk of states, run by whatever scheduler
the user has (threads, processes, a ``dask.distributed`` cluster).

:mod:`loopdyn.batch` sends a call here when one of its per-state arguments is a Dask array; NumPy in
stays NumPy out there and never imports this module's dependencies. :func:`map_rows` builds the
graph:

* **Rows.** The per-state arguments are chunked along the states (axis 0) like the first Dask
  argument: a NumPy argument is cut into the same chunks, a Dask argument chunked otherwise along
  the states is rechunked to them, and the trailing axes (one state's q, v, forces…) are made one
  chunk each. Each chunk of rows is one task, which calls the in-process batch function (the NumPy
  path of :mod:`loopdyn.batch`) on its rows, on the one thread Dask runs it on — Dask's workers and
  threads are the parallelism, so the task sets Numba's thread count to 1 for its thread only.
* **The model.** The model and the arguments shared by every state (the constraint set, μ, a desired
  vector) are one key of the graph (``dask.delayed``) on which every task depends: pickled once with
  the graph, not once per task; on a distributed cluster a worker fetches it once and keeps it while
  it has tasks that need it. A worker process compiles or loads (from loopdyn's on-disk cache) each
  kernel once, on its first task.
* **Outputs.** A function of several outputs (the derivatives, ``(DDQ, LAM)``) runs once per chunk;
  each output is a Dask array of one cheap selection per chunk of that task's tuple.
* **Errors.** The shapes are checked when the graph is built, against the whole arrays. A bad row
  (NaN, a non-unit quaternion, a loop not closed…) fails its task with the in-process function's
  exception, its ``row k:`` made global by adding the chunk's first row: ``row 1234567: …``. The
  computation fails: no result is returned with rows missing. With bad rows in several chunks, the
  error names the first bad row of the chunk that failed first.

Without Dask installed, a Dask array given to a batch function raises
:class:`~loopdyn.errors.MissingDependencyError` (an ``ImportError``) naming the extra ``loopdyn[dask]``.
"""

from __future__ import annotations

import operator
import re
from typing import Any

import numba
import numpy as np

from .errors import InputError, MissingDependencyError, ShapeError

__all__ = ["is_dask", "map_rows"]

_ROW = re.compile(r"row (\d+): ")


def is_dask(x) -> bool:
    """True when ``x`` is a Dask collection (by the Dask protocol; nothing is imported)."""
    return type(x) is not np.ndarray and hasattr(x, "__dask_graph__")


def _dask_array(what: str):
    """The ``dask.array`` module, or :class:`MissingDependencyError` naming the extra."""
    try:
        import dask
        import dask.array as da
    except ImportError as exc:
        raise MissingDependencyError(
            f"{what} was given a Dask array, but Dask is not installed ({exc}); "
            "install the extra: pip install 'loopdyn[dask]'"
        ) from None
    return dask, da


def map_rows(
    func,
    model,
    rows: dict[str, tuple[Any, tuple[int, ...]]],
    outputs: tuple[tuple[int, ...], ...],
    **shared,
):
    """``func(model, **row_blocks, **shared)`` lazily, one task per chunk of states.

    * ``func`` — an in-process batch function of :mod:`loopdyn.batch` (importable by name: the tasks
      refer to it, they do not copy it);
    * ``rows`` — the per-state arguments, ``name → (array or None, shape of one state's entry)``;
      None is passed on as None;
    * ``outputs`` — the shape of one state's entry of each output (one tuple per output; ``func``
      returns one array when there is one output, a tuple otherwise);
    * ``shared`` — the other arguments, the same for every state (the model's key holds them).

    Returns one Dask array (one output) or a tuple of them, of shapes ``(N,) + outputs[j]``.
    """
    dask, da = _dask_array(f"loopdyn.batch.{func.__name__}")
    given = {name: x for name, (x, _) in rows.items() if x is not None}
    tails = {name: tuple(tail) for name, (x, tail) in rows.items() if x is not None}
    first = next(name for name, x in given.items() if is_dask(x))
    arrays = {}
    for name, x in given.items():
        if is_dask(x) and not isinstance(x, da.Array):
            raise InputError(f"{name} must be a NumPy or Dask array, got {type(x).__name__}")
        arrays[name] = x if is_dask(x) else np.asarray(x)
    n = arrays[first].shape[0] if arrays[first].ndim else -1
    for name, x in arrays.items():
        if x.shape != (n, *tails[name]):
            raise ShapeError(f"{name} must have shape ({n if name != first else 'N'}, "
                             f"{', '.join(map(str, tails[name]))}), got {x.shape}")  # fmt: skip
    chunks = arrays[first].chunks[0]
    flat = []
    for name, x in arrays.items():
        width = int(np.prod(tails[name], dtype=np.int64))
        if is_dask(x):
            x = x.rechunk({0: chunks, **{k: -1 for k in range(1, x.ndim)}}).reshape(n, width)
        else:
            x = da.from_array(x.reshape(n, width), chunks=(chunks, width))
        flat.append(x)
    static = dask.delayed((model, func, shared), pure=True, traverse=False)
    blocks = da.map_blocks(
        _block, *flat, names=tuple(arrays), tails=tuple(tails.values()), nones=tuple(set(rows) - set(given)),
        static=static, drop_axis=1, meta=np.empty((0,), dtype=object),
        token=f"loopdyn-{func.__name__}",  # the keys' prefix; their hash names the inputs
    )  # fmt: skip
    if len(outputs) == 1:
        (tail,) = outputs
        return _select(blocks, None, tail, da)
    return tuple(_select(blocks, j, tail, da) for j, tail in enumerate(outputs))


def _select(blocks, j: int | None, tail: tuple[int, ...], da):
    """The Dask array of output ``j`` of every chunk's result (the result itself for ``j`` None)."""
    pick = _identity if j is None else operator.itemgetter(j)
    new_axis = list(range(1, 1 + len(tail))) or None
    chunks = (blocks.chunks[0], *((t,) for t in tail))
    meta = np.empty((0,) * (1 + len(tail)))
    return blocks.map_blocks(pick, new_axis=new_axis, chunks=chunks, meta=meta, dtype=np.float64)


def _identity(x):
    return x


def _block(*blocks, names, tails, nones, static, block_info=None):
    """One task: the in-process batch function on one chunk of rows, on this thread alone, with the
    chunk's first row added to the row an error names."""
    model, func, shared = static
    start = block_info[0]["array-location"][0][0] if block_info else 0
    kwargs = {
        name: b.reshape((b.shape[0], *tail)) for name, b, tail in zip(names, blocks, tails, strict=True)
    }
    kwargs.update(dict.fromkeys(nones))
    threads = numba.get_num_threads()
    numba.set_num_threads(1)  # thread-local: Dask's threads and workers run the chunks in parallel
    try:
        return func(model, **kwargs, **shared)
    except InputError as exc:
        raise _global_row(exc, start) from None
    finally:
        numba.set_num_threads(threads)


def _global_row(exc: InputError, start: int) -> InputError:
    """``exc`` with its leading ``row k:`` (local to the chunk) made ``row start + k:``."""
    msg = str(exc)
    m = _ROW.match(msg)
    if m is None:
        return exc
    return type(exc)(f"row {start + int(m.group(1))}: {msg[m.end() :]}")
