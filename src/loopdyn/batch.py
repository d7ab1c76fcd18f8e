"""Batched dynamics: many states in one call, spread over all cores (``rnea``, ``aba``, ``crba``,
``constrained_forward_dynamics``, ``rnea_derivatives``, ``aba_derivatives``,
``constrained_forward_dynamics_derivatives``, ``regressor``, ``coriolis_matrix``,
``mass_matrix_derivative``).

Each function takes one state per row (``Q`` of shape (N, nq), ``V``/``A``/``TAU`` of shape (N, nv))
and returns one result per row, equal to the single-state function's (:func:`loopdyn.rnea`,
:func:`loopdyn.aba`, :func:`loopdyn.crba`) — for trees and for models with loops (C-RNEA, C-ABA and
the cluster mass matrix, in independent coordinates).

Threads. The rows are cut into chunks that the threads (the calling one and ``numba.get_num_threads()
− 1`` pool threads; ``numba.set_num_threads`` sets the count) take one at a time, each running the
GIL-free compiled kernel on its chunk with private copies of the workspaces. Two choices make this
scale on a machine shared with other processes, where Numba's OpenMP ``prange`` did not (2 threads
ran at 0.5–0.9× one thread's throughput as soon as another process kept a core busy):

* chunks are handed out dynamically, so a thread slowed by another process takes fewer of them
  instead of holding back the whole call (OpenMP's static split made every call wait for it);
* idle threads sleep (condition variables) instead of spinning; libgomp's spinning threads, left
  runnable, took CPU time from the very thread they were waiting for.

A bad row (wrong size, NaN, non-unit quaternion, a loop not closed…) raises the exception the
single-state function would raise, its message starting with ``row k:`` (the first bad row).

``constrained_forward_dynamics`` takes one constraint set for all the rows, compiled once (as the
single-state function does) and run by one kernel per chunk over the single-state cores.

Dask. Given a Dask array for any per-state argument, each function returns Dask arrays instead
(lazily; a tuple of them where it returns a tuple), one task per chunk of states: see
:mod:`loopdyn.batch_dask`. NumPy arguments given with it are cut into the Dask argument's chunks.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

from .algorithms import batch as kernels
from .algorithms import coriolis as coriolis_kernels
from .algorithms import derivatives as derivative_kernels
from .algorithms.common import compiled
from .algorithms.status import raise_for_status
from .batch_dask import map_rows
from .constraint_rows import prepare
from .contact import compiled_constraints, damping
from .errors import InputError, NonFiniteError, ShapeError
from .model.data import load_deferred_passes

__all__ = [
    "aba",
    "aba_derivatives",
    "constrained_forward_dynamics",
    "constrained_forward_dynamics_derivatives",
    "coriolis_matrix",
    "crba",
    "mass_matrix_derivative",
    "regressor",
    "rnea",
    "rnea_derivatives",
]

# rows per chunk: enough chunks per thread that they balance (a thread slowed by another process
# takes fewer), each long enough that handing it out (a few µs of Python) is negligible
_CHUNKS_PER_THREAD = 8
_MAX_CHUNK = 256
_MIN_ROWS_PER_THREAD = 32  # fewer rows than this per thread: not worth waking a thread

_pool: ThreadPoolExecutor | None = None
_pool_size = 0
_pool_lock = threading.Lock()


def _get_pool(workers: int) -> ThreadPoolExecutor:
    """The module's pool with at least ``workers`` threads (created on first use, grown if needed)."""
    global _pool, _pool_size
    with _pool_lock:
        if _pool is None or _pool_size < workers:
            if _pool is not None:
                _pool.shutdown(wait=False)
            _pool = ThreadPoolExecutor(workers, thread_name_prefix="loopdyn-batch")
            _pool_size = workers
        return _pool


def _lazy(*xs) -> bool:
    """Whether any of ``xs`` is a Dask array (then the call builds a Dask graph): for NumPy arrays
    one type comparison each (``batch_dask.is_dask`` written out)."""
    for x in xs:
        if type(x) is not np.ndarray and hasattr(x, "__dask_graph__"):
            return True
    return False


def _qvx(model, **xs) -> dict:
    """The per-state arguments for :func:`~loopdyn.batch_dask.map_rows`: the first a configuration
    (nq entries per state), the others velocity-sized (nv)."""
    widths = [model.nq] + [model.nv] * (len(xs) - 1)
    return {name: (x, (w,)) for (name, x), w in zip(xs.items(), widths, strict=True)}


def _contact_rows(model, Q, V, TAU, desired, f_ext, m: int) -> tuple[dict, dict]:
    """The per-state arguments of the constrained functions (``desired`` among them if it has one
    row per state), and ``{"desired": desired}`` if it is the same for every state (None or (m,))."""
    rows = _qvx(model, Q=Q, V=V, TAU=TAU)
    rows["f_ext"] = (f_ext, (model.njoints, 6))
    if desired is not None and np.ndim(desired) == 2:
        rows["desired"] = (desired, (m,))
        return rows, {}
    return rows, {"desired": None if desired is None else np.asarray(desired)}


def _rows(x, name: str, n: int | None, width: int) -> np.ndarray:
    try:
        arr = np.ascontiguousarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be an array of real numbers: {exc}") from None
    if arr.ndim == 1 and arr.shape[0] == width:
        raise ShapeError(f"{name} must be 2-D (one state per row); got a single vector — use {name}[None]")
    if arr.ndim != 2 or arr.shape[1] != width or (n is not None and arr.shape[0] != n):
        rows = "N" if n is None else str(n)
        raise ShapeError(f"{name} must have shape ({rows}, {width}), got {arr.shape}")
    return arr


def _check(model, status, names, sizes) -> None:
    bad = np.flatnonzero(status)
    if bad.size:
        k = int(bad[0])
        try:
            raise_for_status(model, int(status[k]), names, sizes)
        except InputError as exc:
            raise type(exc)(f"row {k}: {exc}") from None


def _model_arrays(model) -> tuple:
    """The model arguments of the kernels, from a fresh Data: (ib, ws) for a tree,
    ``Data.cluster_arrays`` with loops."""
    data = model.create_data()
    return data.cluster_arrays if model.has_constraints else (data.ib, data.ws)


def _private(arrays: tuple) -> tuple:
    """``arrays`` with the workspace the kernels write copied: ``ws`` of a tree, the packed float
    buffer (ws and wc) of a model with loops — the second model array either way."""
    out = list(arrays)
    out[1] = arrays[1].copy()
    return tuple(out)


def _run(stub, model, n: int, args: tuple, scratch: int = 0, arrays: tuple | None = None) -> None:
    """Run a batch kernel over rows 0 .. n−1: on the calling thread alone for a small batch, else in
    dynamically handed-out chunks on the calling thread and pool threads, each with its own
    workspaces (the kernels release the GIL) and, if ``scratch`` > 0, its own float scratch of that
    size (passed after the model arrays). ``arrays``: the model arrays (default: a fresh Data's)."""
    # compile (or load) the kernel here, once, not concurrently in the threads
    kern = stub if hasattr(stub, "signatures") else compiled(stub)
    if arrays is None:
        arrays = _model_arrays(model)
    nthreads = max(1, min(numba.get_num_threads(), n // _MIN_ROWS_PER_THREAD))
    chunk = max(1, min(_MAX_CHUNK, n // (_CHUNKS_PER_THREAD * nthreads))) if nthreads > 1 else max(n, 1)
    starts = iter(range(0, n, chunk))
    lock = threading.Lock()

    def work(private: tuple) -> None:
        if scratch:
            private = (*private, np.zeros(scratch))
        while True:
            with lock:
                s = next(starts, -1)
            if s < 0:
                return
            kern(*private, *args, s, min(n, s + chunk))

    futures = [_get_pool(nthreads - 1).submit(work, _private(arrays)) for _ in range(nthreads - 1)]
    try:
        work(arrays)  # the calling thread works too, on the fresh Data's own workspaces
    finally:
        for f in futures:
            f.result()


def _state_batch(tree_kern, cluster_kern, model, Q, V, X, names) -> np.ndarray:
    """Run a (Q, V, X) → (N, nv) batch kernel with validated inputs."""
    Q = _rows(Q, names[0], None, model.nq)
    n = Q.shape[0]
    V = _rows(V, names[1], n, model.nv)
    X = _rows(X, names[2], n, model.nv)
    out = np.empty((n, model.nv))
    status = np.zeros(n, dtype=np.int64)
    kern = cluster_kern if model.has_constraints else tree_kern
    _run(kern, model, n, (Q, V, X, out, status))
    _check(model, status, tuple(x.lower() for x in names), (model.nq, model.nv, model.nv))
    return out


def rnea(model, Q, V, A) -> np.ndarray:
    """Inverse dynamics for N states (RBDA Table 5.1; with loops C-RNEA, Chignoli et al. 2024
    eqs. 29–35): returns τ of shape (N, nv), row k equal to
    ``loopdyn.rnea(model, data, Q[k], V[k], A[k])``."""
    if _lazy(Q, V, A):
        return map_rows(rnea, model, _qvx(model, Q=Q, V=V, A=A), ((model.nv,),))
    return _state_batch(
        kernels.rnea_batch_kernel, kernels.c_rnea_batch_kernel, model, Q, V, A, ("Q", "V", "A")
    )


def aba(model, Q, V, TAU) -> np.ndarray:
    """Forward dynamics for N states (RBDA Table 7.1; with loops C-ABA, Alg. 1): returns the
    accelerations, shape (N, nv), row k equal to ``loopdyn.aba(model, data, Q[k], V[k], TAU[k])``."""
    if _lazy(Q, V, TAU):
        return map_rows(aba, model, _qvx(model, Q=Q, V=V, TAU=TAU), ((model.nv,),))
    return _state_batch(
        kernels.aba_batch_kernel, kernels.c_aba_batch_kernel, model, Q, V, TAU, ("Q", "V", "TAU")
    )


def crba(model, Q) -> np.ndarray:
    """Mass matrices for N configurations (RBDA Table 6.2; with loops H = Gᵀ H_span G, §VI): returns
    (N, nv, nv), full and symmetric, ``[k]`` equal to ``loopdyn.crba(model, data, Q[k])``."""
    if _lazy(Q):
        return map_rows(crba, model, _qvx(model, Q=Q), ((model.nv, model.nv),))
    Q = _rows(Q, "Q", None, model.nq)
    n = Q.shape[0]
    out = np.empty((n, model.nv, model.nv))
    status = np.zeros(n, dtype=np.int64)
    kern = kernels.c_crba_batch_kernel if model.has_constraints else kernels.crba_batch_kernel
    _run(kern, model, n, (Q, out, status))
    _check(model, status, ("q",), (model.nq,))
    return out


def regressor(model, Q, V, A, armature: bool = False) -> np.ndarray:
    """:func:`loopdyn.regressor` for N states: shape (N, nv, 10 nbodies (+ spanning nv with
    ``armature``)), ``[k]`` equal to ``loopdyn.regressor(model, data, Q[k], V[k], A[k], armature)``
    (Atkeson et al. 1986; with loops ``Gᵀ Y_span``)."""
    p = 10 * model.nbodies + (model.spanning_nv if armature else 0)
    if _lazy(Q, V, A):
        return map_rows(regressor, model, _qvx(model, Q=Q, V=V, A=A), ((model.nv, p),), armature=armature)
    Q = _rows(Q, "Q", None, model.nq)
    n = Q.shape[0]
    V = _rows(V, "V", n, model.nv)
    A = _rows(A, "A", n, model.nv)
    out = np.empty((n, model.nv, p))
    status = np.zeros(n, dtype=np.int64)
    kern = kernels.c_regressor_batch_kernel if model.has_constraints else kernels.regressor_batch_kernel
    _run(kern, model, n, (Q, V, A, out, status))
    _check(model, status, ("q", "v", "a"), (model.nq, model.nv, model.nv))
    return out


def _desired_rows(desired, n: int, m: int) -> np.ndarray:
    """A new (n, m) array of the desired constraint accelerations: zeros for None, a vector (m,)
    repeated, or one row per state (n, m); NaN or inf raise, naming the first bad row."""
    out = np.zeros((n, m))
    if desired is None:
        return out
    try:
        k = np.asarray(desired, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"desired must be an array of real numbers: {exc}") from None
    if k.shape not in ((m,), (n, m)):
        raise ShapeError(
            f"desired must have shape ({m},) or ({n}, {m}) (one entry per constraint row), got {k.shape}"
        )
    bad = ~np.isfinite(k)
    if bad.any():
        if k.ndim == 1:
            raise NonFiniteError("desired contains NaN or inf")
        raise NonFiniteError(f"row {int(np.flatnonzero(bad.any(axis=1))[0])}: desired contains NaN or inf")
    out[:] = k
    return out


def _force_rows(f_ext, n: int, njoints: int) -> np.ndarray:
    """External forces (n, njoints, 6) as a contiguous float array; (n, 0, 6) for None ('no forces')."""
    if f_ext is None:
        return np.zeros((n, 0, 6))
    try:
        arr = np.ascontiguousarray(f_ext, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise InputError(f"f_ext must be an array of real numbers: {exc}") from None
    if arr.shape != (n, njoints, 6):
        raise ShapeError(f"f_ext must have shape ({n}, {njoints}, 6) (per state one row per joint, row 0 = "
                         f"universe), got {arr.shape}")  # fmt: skip
    return arr


def constrained_forward_dynamics(
    model, Q, V, TAU, constraints, desired=None, mu: float = 0.0, f_ext=None
) -> tuple[np.ndarray, np.ndarray]:
    """Constrained forward dynamics for N states under one constraint set: returns ``(DDQ, LAM)`` of
    shapes (N, nv) and (N, m), row k equal to ``loopdyn.constrained_forward_dynamics(model, data, Q[k],
    V[k], TAU[k], constraints, desired_k, mu, f_ext[k])`` — the accelerations and the constraint forces
    λ (Pinocchio's sign and layout: ``M q̈ + c = τ + Jᵀ λ``).

    Per state (RBDA eqs. 8.6–8.8): ``a0 = M⁻¹ (τ − c)``, ``(Λ⁻¹ + μ I) λ = k − (J a0 + γ)`` with
    ``Λ⁻¹ = J M⁻¹ Jᵀ`` by PV-OSIMr (Sathya et al. 2023, Alg. 3; on models with loops the cluster
    version, with C-ABA, Chignoli et al. 2024 Alg. 1, in the independent coordinates), and
    ``q̈ = a0 + M⁻¹ Jᵀ λ``: the single-state kernels' cores, one compiled call per chunk of rows.

    * ``constraints`` — one list of :class:`~loopdyn.Constraint` for every state;
    * ``desired`` — the desired constraint accelerations: None (zero), one vector (m,) for every state,
      or one row per state (N, m);
    * ``mu`` — the damping, as in the single-state function (``mu = 0``: independent rows required,
      else :class:`~loopdyn.errors.RedundantConstraintsError` naming the first row that has them);
    * ``f_ext`` — None or external forces per state, shape (N, njoints, 6).

    A bad row (size, NaN, non-unit quaternion, a loop not closed, redundant constraints) raises the
    single-state function's exception, its message starting with ``row k:``.
    """
    mu = damping(mu)
    rows = prepare(model, constraints)
    m = rows.m
    if _lazy(Q, V, TAU, desired, f_ext):
        per_state, same = _contact_rows(model, Q, V, TAU, desired, f_ext, m)
        outputs = ((model.nv,), (m,))
        return map_rows(
            constrained_forward_dynamics, model, per_state, outputs, constraints=constraints, mu=mu, **same
        )
    Q = _rows(Q, "Q", None, model.nq)
    n = Q.shape[0]
    V = _rows(V, "V", n, model.nv)
    TAU = _rows(TAU, "TAU", n, model.nv)
    LAM = _desired_rows(desired, n, m)
    if m == 0 and f_ext is None:  # as the single-state function: the plain forward dynamics
        return aba(model, Q, V, TAU), LAM
    F = _force_rows(f_ext, n, model.njoints)
    DDQ = np.empty((n, model.nv))
    status = np.zeros(n, dtype=np.int64)
    data = model.create_data()
    prog = compiled_constraints(model, data, rows)
    if model.has_constraints:
        kern = kernels.contact_loops_batch_kernel
        arrays = data.cluster_arrays
        args = (Q, V, TAU, F, mu, prog.cf, prog.ci, prog.T, prog.cemp, prog.asm, DDQ, LAM, status)
    else:
        kern = kernels.contact_batch_kernel
        arrays = (data.ib, data.ws)
        args = (Q, V, TAU, F, mu, prog.cf, prog.ci, DDQ, LAM, status)
    _run(kern, model, n, args, scratch=max(prog.size, 1), arrays=arrays)
    _check(model, status, ("q", "v", "tau", "f_ext"), (model.nq, model.nv, model.nv, model.njoints))
    return DDQ, LAM


def _derivative_batch(tree_kern, cluster_kern, model, Q, V, X, names) -> tuple:
    """Run a (Q, V, X) → three (N, nv, nv) derivative batch kernel with validated inputs (models with
    clusters, implicit loops included, take the cluster kernel)."""
    Q = _rows(Q, names[0], None, model.nq)
    n = Q.shape[0]
    V = _rows(V, names[1], n, model.nv)
    X = _rows(X, names[2], n, model.nv)
    nv = model.nv
    out = np.empty((3, n, nv, nv))
    if model.has_constraints:
        data = model.create_data()
        load_deferred_passes(data, "loop_derivatives")  # the implicit loops' terms
        arrays = data.cluster_arrays
        scratch, kern = derivative_kernels.c_buffer_size(data.ic, nv) + nv * nv + nv, cluster_kern
    else:
        arrays, scratch, kern = None, 4 * nv * nv + nv, tree_kern
    status = np.zeros(n, dtype=np.int64)
    _run(kern, model, n, (Q, V, X, out, status), scratch=scratch, arrays=arrays)
    _check(model, status, tuple(x.lower() for x in names), (model.nq, model.nv, model.nv))
    return out[0], out[1], out[2]


def rnea_derivatives(model, Q, V, A) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`loopdyn.rnea_derivatives` for N states: ``(dtau_dq, dtau_dv, dtau_da)``, each of shape
    (N, nv, nv), ``[k]`` equal to the single-state function's at ``(Q[k], V[k], A[k])`` (no external
    forces), on all cores."""
    if _lazy(Q, V, A):
        return map_rows(rnea_derivatives, model, _qvx(model, Q=Q, V=V, A=A), ((model.nv, model.nv),) * 3)
    kern, c_kern = kernels.rnea_derivatives_batch_kernel, kernels.c_rnea_derivatives_batch_kernel
    return _derivative_batch(kern, c_kern, model, Q, V, A, ("Q", "V", "A"))


def aba_derivatives(model, Q, V, TAU) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`loopdyn.aba_derivatives` for N states: ``(dddq_dq, dddq_dv, dddq_dtau)``, each of shape
    (N, nv, nv), ``[k]`` equal to the single-state function's at ``(Q[k], V[k], TAU[k])`` (no
    external forces), on all cores."""
    if _lazy(Q, V, TAU):
        return map_rows(aba_derivatives, model, _qvx(model, Q=Q, V=V, TAU=TAU), ((model.nv, model.nv),) * 3)
    kern, c_kern = kernels.aba_derivatives_batch_kernel, kernels.c_aba_derivatives_batch_kernel
    return _derivative_batch(kern, c_kern, model, Q, V, TAU, ("Q", "V", "TAU"))


def constrained_forward_dynamics_derivatives(
    model, Q, V, TAU, constraints, desired=None, mu: float = 0.0, f_ext=None
) -> tuple[np.ndarray, ...]:
    """:func:`loopdyn.constrained_forward_dynamics_derivatives` for N states under one constraint set:
    ``(DDQ, FORCES, DDDQ_DQ, DDDQ_DV, DDDQ_DTAU, DFORCES_DQ, DFORCES_DV, DFORCES_DTAU)`` of shapes
    (N, nv), (N, m), three (N, nv, nv) and three (N, m, nv), row k equal to the single-state
    function's at ``(Q[k], V[k], TAU[k])`` with ``desired`` (None, (m,) or (N, m)) and ``f_ext``
    (None or (N, njoints, 6)) as in :func:`constrained_forward_dynamics`.

    On all cores, one kernel call per chunk of rows
    (:func:`~loopdyn.algorithms.batch.contact_derivatives_batch_kernel`, and
    ``c_contact_derivatives_batch_kernel`` on models with clusters); without constraints, row by row
    on the calling thread (the ABA derivatives). The six derivative arrays are views of two
    buffers of shape (N, 3, ·, nv) (one contiguous block per state for the kernel). A bad row raises
    the single-state function's exception, its message starting with ``row k:``.
    """
    from .algorithms.contact_derivatives import work_size
    from .contact_derivatives import constrained_forward_dynamics_derivatives as single
    from .contact_derivatives import spanning_constraints

    mu = damping(mu)
    rows = prepare(model, constraints)
    if _lazy(Q, V, TAU, desired, f_ext):
        m, nv = rows.m, model.nv
        per_state, same = _contact_rows(model, Q, V, TAU, desired, f_ext, m)
        shapes = ((nv,), (m,), (nv, nv), (nv, nv), (nv, nv), (m, nv), (m, nv), (m, nv))
        func = constrained_forward_dynamics_derivatives
        return map_rows(func, model, per_state, shapes, constraints=constraints, mu=mu, **same)
    Q = _rows(Q, "Q", None, model.nq)
    n = Q.shape[0]
    V = _rows(V, "V", n, model.nv)
    TAU = _rows(TAU, "TAU", n, model.nv)
    m, nv = rows.m, model.nv
    LAM = _desired_rows(desired, n, m)
    F = _force_rows(f_ext, n, model.njoints)
    DDQ = np.empty((n, nv))
    DA = np.empty((n, 3, nv, nv))
    DL = np.empty((n, 3, m, nv))
    if model.has_constraints and m > 0:
        status = np.zeros(n, dtype=np.int64)
        data = model.create_data()
        load_deferred_passes(data, "loop_derivatives")
        prog = compiled_constraints(model, data, rows)
        spanning = spanning_constraints(data, rows)
        args = (Q, V, TAU, F, mu, prog.cf, prog.ci, prog.T, prog.cemp, prog.asm, spanning.cf, spanning.ci,
                DDQ, LAM, DA, DL, status)  # fmt: skip
        _run(kernels.c_contact_derivatives_batch_kernel, model, n, args, scratch=max(prog.size, 1),
             arrays=data.cluster_arrays)  # fmt: skip
        _check(model, status, ("q", "v", "tau", "f_ext"), (model.nq, model.nv, model.nv, model.njoints))
    elif m == 0:
        data = model.create_data()
        for k in range(n):
            try:
                r = single(model, data, Q[k], V[k], TAU[k], constraints, LAM[k], mu,
                           None if f_ext is None else F[k])  # fmt: skip
            except InputError as exc:
                raise type(exc)(f"row {k}: {exc}") from None
            DDQ[k], LAM[k] = r.ddq, r.forces
            DA[k] = r[2:5]
            DL[k] = r[5:8]
    else:
        status = np.zeros(n, dtype=np.int64)
        data = model.create_data()
        prog = compiled_constraints(model, data, rows)
        nb = data.ib.shape[0] - 1
        args = (Q, V, TAU, F, mu, prog.cf, prog.ci, prog.size, DDQ, LAM, DA, DL, status)
        _run(kernels.contact_derivatives_batch_kernel, model, n, args,
             scratch=prog.size + work_size(nb, nv, m), arrays=(data.ib, data.ws))  # fmt: skip
        _check(model, status, ("q", "v", "tau", "f_ext"), (model.nq, model.nv, model.nv, model.njoints))
    return DDQ, LAM, DA[:, 0], DA[:, 1], DA[:, 2], DL[:, 0], DL[:, 1], DL[:, 2]


def _coriolis_batch(model, Q, V, what) -> np.ndarray:
    """Run the Coriolis batch kernel (``what``: C or Ṁ) with validated inputs: (N, nv, nv)."""
    Q = _rows(Q, "Q", None, model.nq)
    n = Q.shape[0]
    V = _rows(V, "V", n, model.nv)
    nv = model.nv
    out = np.empty((n, nv, nv))
    status = np.zeros(n, dtype=np.int64)
    if model.has_constraints:
        data = model.create_data()
        load_deferred_passes(data, "loop_rates")  # Ġ of the implicit loops
        kern, arrays = kernels.c_coriolis_batch_kernel, data.cluster_arrays
        scratch = int(coriolis_kernels.cluster_buffer_size(data.ic, nv, what))
    else:
        kern, arrays, scratch = kernels.coriolis_batch_kernel, None, 1
    _run(kern, model, n, (Q, V, out, status, what), scratch=scratch, arrays=arrays)
    _check(model, status, ("q", "v"), (model.nq, model.nv))
    return out


def coriolis_matrix(model, Q, V) -> np.ndarray:
    """:func:`loopdyn.coriolis_matrix` for N states: (N, nv, nv), ``[k]`` equal to the single-state
    function's at ``(Q[k], V[k])`` (trees and models with loops, on all cores)."""
    if _lazy(Q, V):
        return map_rows(coriolis_matrix, model, _qvx(model, Q=Q, V=V), ((model.nv, model.nv),))
    return _coriolis_batch(model, Q, V, coriolis_kernels.CORIOLIS)


def mass_matrix_derivative(model, Q, V) -> np.ndarray:
    """:func:`loopdyn.mass_matrix_derivative` for N states: (N, nv, nv), ``[k]`` equal to the
    single-state function's at ``(Q[k], V[k])``."""
    if _lazy(Q, V):
        return map_rows(mass_matrix_derivative, model, _qvx(model, Q=Q, V=V), ((model.nv, model.nv),))
    return _coriolis_batch(model, Q, V, coriolis_kernels.MDOT)
