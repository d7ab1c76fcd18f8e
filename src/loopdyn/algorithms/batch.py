"""Kernels of the batched tree dynamics (:mod:`loopdyn.batch`): many states per call, the rows split
into chunks processed in parallel by Numba threads, each with a private copy of the workspace."""

from __future__ import annotations

import numpy as np
from numba import prange

from .aba import aba_core
from .borrow import borrowed
from .common import check_configuration, kernel
from .crba import crba_core
from .rnea import rnea_core, validate_qva

_SIG3 = (
    "void(int64[:, ::1], float64[:, ::1], float64[:, ::1], float64[:, ::1], float64[:, ::1], "
    "float64[:, ::1], int64[::1], int64)"
)


@kernel(_SIG3, parallel=True)
def rnea_batch_kernel(ib, ws, Q, V, A, out, status, nchunks):
    ib, ws, Q, V, A, out, status = borrowed((ib, ws, Q, V, A, out, status))
    n = Q.shape[0]
    no_forces = np.zeros((0, 6))
    for c in prange(nchunks):
        w = ws.copy()
        for k in range(c * n // nchunks, (c + 1) * n // nchunks):
            st = validate_qva(ib, Q[k], V[k], A[k], no_forces)
            status[k] = st
            if st == 0:
                rnea_core(ib, w, Q[k], V[k], A[k], no_forces, out[k], True)


@kernel(_SIG3, parallel=True)
def aba_batch_kernel(ib, ws, Q, V, TAU, out, status, nchunks):
    ib, ws, Q, V, TAU, out, status = borrowed((ib, ws, Q, V, TAU, out, status))
    n = Q.shape[0]
    no_forces = np.zeros((0, 6))
    for c in prange(nchunks):
        w = ws.copy()
        for k in range(c * n // nchunks, (c + 1) * n // nchunks):
            st = validate_qva(ib, Q[k], V[k], TAU[k], no_forces)
            if st == 0:
                st = aba_core(ib, w, Q[k], V[k], TAU[k], no_forces, out[k])
            status[k] = st


@kernel(
    "void(int64[:, ::1], float64[:, ::1], float64[:, ::1], float64[:, :, ::1], int64[::1], int64)",
    parallel=True,
)
def crba_batch_kernel(ib, ws, Q, out, status, nchunks):
    ib, ws, Q, out, status = borrowed((ib, ws, Q, out, status))
    n = Q.shape[0]
    for c in prange(nchunks):
        w = ws.copy()
        for k in range(c * n // nchunks, (c + 1) * n // nchunks):
            st = check_configuration(ib, Q[k])
            status[k] = st
            if st == 0:
                crba_core(ib, w, Q[k], out[k])
