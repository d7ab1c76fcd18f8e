"""A cache of what the symbolic work on loop-closure constraints produces: arrays, keyed on the formulas.

Building a model with implicit loops differentiates each loop's ``φ(q)`` with sympy twice: once when
the clusters are set up (K at candidate assemblies, to choose the rows, the assembly and the
partition) and once when its tape is compiled (K and the bias ``k = −K̇q̇``, then common
subexpressions). For Cassie's four loops that is 10–20 s per build, every time the same file is
loaded. The results are plain arrays, so they are kept:

* in this process, in a dictionary (a test suite builds the same robot many times);
* on disk, as ``.npz`` files (no pickles) in ``$LOOPDYN_CACHE_DIR/symbolic``, else
  ``~/.cache/loopdyn/symbolic`` (:func:`loopdyn.constraints.cache_folder.cache_dir`).

A key is the SHA-256 of a tag, the sympy formulas' ``srepr`` (exact: symbols with their assumptions,
rationals and floats as written) and any numbers the result depends on, and of loopdyn's own source
(:func:`loopdyn.jit.source_digest`), so a change to the code that computes a result never loads an
old one. Files are written under a temporary name and moved into place, so concurrent builds (pytest
workers, a process pool) are safe; an unreadable entry is computed again, with a
:class:`~loopdyn.jit.CacheWarning`; a folder that cannot be written only loses the disk copy.
``LOOPDYN_SYMBOLIC_CACHE=0`` turns the cache off (everything is computed).
"""

from __future__ import annotations

import hashlib
import os
import threading
import warnings
from collections.abc import Callable

import numpy as np

from ..jit import CacheWarning, source_digest
from .cache_folder import cache_dir

__all__ = ["enabled", "key", "cached_arrays"]

_MEMORY: dict[str, dict[str, np.ndarray]] = {}
_LOCK = threading.Lock()


def enabled() -> bool:
    """Whether the cache is on (``LOOPDYN_SYMBOLIC_CACHE`` is not ``0``)."""
    return os.environ.get("LOOPDYN_SYMBOLIC_CACHE", "1").strip().lower() not in ("0", "false", "no", "off")


def key(tag: str, *parts) -> str:
    """The cache key of a result named ``tag`` that depends on ``parts``: sympy objects (or lists of
    them), NumPy arrays and plain Python values (compared by ``repr``)."""
    import sympy as sp

    h = hashlib.sha256()
    h.update(tag.encode())
    h.update(source_digest().encode())
    for p in parts:
        h.update(b"\1")
        if isinstance(p, np.ndarray):
            h.update(str(p.dtype).encode() + str(p.shape).encode())
            h.update(np.ascontiguousarray(p).tobytes())
        elif isinstance(p, list | tuple) and any(isinstance(e, sp.Basic) for e in p):
            h.update(sp.srepr(list(p)).encode())
        elif isinstance(p, sp.Basic):
            h.update(sp.srepr(p).encode())
        else:
            h.update(repr(p).encode())
    return h.hexdigest()[:40]


def cached_arrays(key_: str, compute: Callable[[], dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """The arrays stored under ``key_``, else ``compute()`` (stored, then returned). The arrays
    returned are read-only copies shared by every caller: copy before writing."""
    if not enabled():
        return compute()
    with _LOCK:
        hit = _MEMORY.get(key_)
    if hit is not None:
        return hit
    folder = cache_dir("symbolic")
    path = None if folder is None else folder / f"{key_}.npz"
    arrays = _read(path) if path is not None and path.exists() else None
    if arrays is None:
        arrays = {k: np.asarray(v) for k, v in compute().items()}
        if path is not None:
            _write(path, arrays)
    for a in arrays.values():
        a.flags.writeable = False
    with _LOCK:
        _MEMORY[key_] = arrays
    return arrays


def _read(path) -> dict[str, np.ndarray] | None:
    try:
        with np.load(path, allow_pickle=False) as f:
            return {k: f[k] for k in f.files}
    except Exception as exc:  # noqa: BLE001 - any unreadable entry is computed again
        warnings.warn(f"unreadable symbolic cache entry {path} ({exc}): computed again", CacheWarning,
                      stacklevel=3)  # fmt: skip
        return None


def _write(path, arrays: dict[str, np.ndarray]) -> None:
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.{threading.get_ident()}.tmp.npz")
    try:
        np.savez(tmp, **arrays)
        os.replace(tmp, path)
    except OSError as exc:
        warnings.warn(f"could not write the symbolic cache entry {path} ({exc})", CacheWarning, stacklevel=3)
        try:
            tmp.unlink()
        except OSError:
            pass
