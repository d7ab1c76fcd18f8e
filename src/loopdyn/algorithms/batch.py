"""Kernels of the batched dynamics (:mod:`loopdyn.batch`): the states of rows ``start .. stop−1``, one
after the other, for trees (RNEA, ABA, CRBA) and for models with loops (C-RNEA, C-ABA and the cluster
mass matrix H = Gᵀ H_span G; Chignoli et al. 2024 eqs. 29–35, Alg. 1, §VI).

They release the GIL: :mod:`loopdyn.batch` runs them on its own threads, one chunk of rows per call,
each thread with private copies of the workspaces the cores write — ``ws`` and, for
loops, ``wc`` (spanning coordinates, G, g, the constraint programs' registers, 𝖲, 𝖨^A, 𝖴, 𝖣⁻¹ …).
Every other array (``ib``, ``ic``, ``cb``, ``code``, ``consts``, ``table``, ``outputs``) is only read
and shared.

Like every entry point they borrow their arrays first (:mod:`.borrow`): without it Numba's reference
counting in the row loop made a plain loop 1.6× slower than the same loop compiled as a parallel
region (which receives its arrays uncounted).

The constrained forward dynamics kernels run the single-state cores of :mod:`.contact` on one
compiled constraint set; each thread also brings its own float scratch (``sc``: the PV-OSIMr buffer,
Λ⁻¹ and, with loops, the constraint wrenches).

Every row is validated before it is computed; its status (0 or ``kind * STATUS_BASE + index``) goes
to ``status[row]`` and a failing row leaves its output row unspecified.
"""

from __future__ import annotations

import numpy as np

from ..model import layout as L
from .aba import aba_core
from .borrow import borrowed, model_views, view
from .cluster_dynamics import c_aba_core, c_crba_core, c_rnea_core
from .cluster_kinematics import tapes, validate_cluster_state
from .common import check_configuration, check_vector, kernel
from .contact import contact_core, contact_loops_core
from .contact_derivatives import c_contact_derivatives_core, contact_derivatives_core
from .coriolis import CORIOLIS, WANT_C, WANT_MDOT, c_coriolis_core, coriolis_core
from .crba import crba_core
from .derivatives import (
    c_buffer_size,
    c_hinv_apply,
    c_rnea_derivatives_core,
    minv_apply,
    rnea_derivatives_core,
)
from .regressor import c_regressor_core, regressor_forward, tree_regressor_fill
from .rnea import rnea_core, validate_qva

# ---------------------------------------------------------------------------------------------
# trees
_SIG3 = (
    "void(int64[:, ::1], float64[:, ::1], float64[:, ::1], float64[:, ::1], float64[:, ::1], "
    "float64[:, ::1], int64[::1], int64, int64)"
)


@kernel(_SIG3)
def rnea_batch_kernel(ib, ws, Q, V, A, out, status, start, stop):
    """τ[k] = RNEA(q_k, v_k, a_k) (RBDA Table 5.1) for rows start ≤ k < stop."""
    ib, ws, Q, V, A, out, status = borrowed((ib, ws, Q, V, A, out, status))
    no_forces = np.zeros((0, 6))
    for k in range(start, stop):
        st = validate_qva(ib, Q[k], V[k], A[k], no_forces)
        status[k] = st
        if st == 0:
            rnea_core(ib, ws, Q[k], V[k], A[k], no_forces, out[k], True)


@kernel(_SIG3)
def aba_batch_kernel(ib, ws, Q, V, TAU, out, status, start, stop):
    """q̈[k] = ABA(q_k, v_k, τ_k) (RBDA Table 7.1) for rows start ≤ k < stop."""
    ib, ws, Q, V, TAU, out, status = borrowed((ib, ws, Q, V, TAU, out, status))
    no_forces = np.zeros((0, 6))
    for k in range(start, stop):
        st = validate_qva(ib, Q[k], V[k], TAU[k], no_forces)
        if st == 0:
            st = aba_core(ib, ws, Q[k], V[k], TAU[k], no_forces, out[k])
        status[k] = st


@kernel("void(int64[:, ::1], float64[:, ::1], float64[:, ::1], float64[:, :, ::1], int64[::1], int64, int64)")
def crba_batch_kernel(ib, ws, Q, out, status, start, stop):
    """M[k] = CRBA(q_k) (RBDA Table 6.2), full and symmetric, for rows start ≤ k < stop."""
    ib, ws, Q, out, status = borrowed((ib, ws, Q, out, status))
    for k in range(start, stop):
        st = check_configuration(ib, Q[k])
        status[k] = st
        if st == 0:
            crba_core(ib, ws, Q[k], out[k])


# ---------------------------------------------------------------------------------------------
# trees of clusters (models with loops): the model arrays in the order of Data.cluster_arrays
_CLUSTER = "int64[::1], float64[::1], "
_SIGC3 = (
    "void("
    + _CLUSTER
    + "float64[:, ::1], float64[:, ::1], float64[:, ::1], float64[:, ::1], int64[::1], int64, int64)"
)


@kernel(_SIGC3)
def c_rnea_batch_kernel(ints, floats, Q, V, A, out, status, start, stop):
    """τ[k] = C-RNEA(q_k, ẏ_k, ÿ_k) (eqs. 29–35) for rows start ≤ k < stop."""
    ints, floats, Q, V, A, out, status = borrowed((ints, floats, Q, V, A, out, status))
    ib, ws, ic, cb, wc = model_views(ints, floats)
    code, consts, table, outputs = tapes(ic, cb, wc)
    no_forces = np.zeros((0, 6))
    for k in range(start, stop):
        st = validate_cluster_state(ib, ic, cb, Q[k], V[k], A[k], no_forces, True)
        if st == 0:
            st = c_rnea_core(
                ib, ws, ic, cb, wc, code, consts, table, outputs, Q[k], V[k], A[k], no_forces, out[k]
            )
        status[k] = st


@kernel(_SIGC3)
def c_aba_batch_kernel(ints, floats, Q, V, TAU, out, status, start, stop):
    """ÿ[k] = C-ABA(q_k, ẏ_k, τ_k) (Alg. 1) for rows start ≤ k < stop."""
    ints, floats, Q, V, TAU, out, status = borrowed((ints, floats, Q, V, TAU, out, status))
    ib, ws, ic, cb, wc = model_views(ints, floats)
    code, consts, table, outputs = tapes(ic, cb, wc)
    no_forces = np.zeros((0, 6))
    for k in range(start, stop):
        st = validate_cluster_state(ib, ic, cb, Q[k], V[k], TAU[k], no_forces, True)
        if st == 0:
            st = c_aba_core(
                ib, ws, ic, cb, wc, code, consts, table, outputs, Q[k], V[k], TAU[k], no_forces, out[k]
            )
        status[k] = st


@kernel("void(" + _CLUSTER + "float64[:, ::1], float64[:, :, ::1], int64[::1], int64, int64)")
def c_crba_batch_kernel(ints, floats, Q, out, status, start, stop):
    """H[k] = G_kᵀ H_span(q_k) G_k (§VI) for rows start ≤ k < stop."""
    ints, floats, Q, out, status = borrowed((ints, floats, Q, out, status))
    ib, ws, ic, cb, wc = model_views(ints, floats)
    code, consts, table, outputs = tapes(ic, cb, wc)
    no_forces = np.zeros((0, 6))
    zero = np.zeros(out.shape[1])
    for k in range(start, stop):
        st = validate_cluster_state(ib, ic, cb, Q[k], zero, zero, no_forces, True)
        if st == 0:
            st = c_crba_core(ib, ws, ic, cb, wc, code, consts, table, outputs, Q[k], out[k])
        status[k] = st


# ---------------------------------------------------------------------------------------------
# constrained forward dynamics (one constraint set, compiled once: loopdyn.algorithms.contact)
@kernel(
    "void(int64[:, ::1], float64[:, ::1], float64[::1], float64[:, ::1], float64[:, ::1], float64[:, ::1], "
    "float64[:, :, ::1], float64, float64[:, ::1], int64[::1], float64[:, ::1], float64[:, ::1], int64[::1], "
    "int64, int64)"
)
def contact_batch_kernel(ib, ws, sc, Q, V, TAU, F, mu, cf, ci, DDQ, LAM, status, start, stop):
    """(q̈[k], λ[k]) for rows start ≤ k < stop by :func:`~loopdyn.algorithms.contact.contact_core`
    (one ABA, the bias, PV-OSIMr's Λ⁻¹ — Sathya et al. 2023, Alg. 3 —, the Cholesky of Λ⁻¹ + μ I and
    ``M⁻¹ Jᵀ λ``; RBDA eqs. 8.6–8.8). ``LAM[k]`` holds the desired accelerations k on entry; ``F[k]``
    is row k's external forces, (0, 6) for none; ``sc`` is the calling thread's scratch."""
    ib, ws, sc, Q, V, TAU, F, cf, ci, DDQ, LAM, status = borrowed(
        (ib, ws, sc, Q, V, TAU, F, cf, ci, DDQ, LAM, status)
    )
    for k in range(start, stop):
        st = validate_qva(ib, Q[k], V[k], TAU[k], F[k])
        if st == 0:
            st = contact_core(ib, ws, Q[k], V[k], TAU[k], F[k], mu, cf, ci, sc, DDQ[k], LAM[k])
        status[k] = st


@kernel(
    "void("
    + _CLUSTER
    + "float64[::1], float64[:, ::1], float64[:, ::1], float64[:, ::1], float64[:, :, ::1], float64, "
    "float64[:, ::1], int64[::1], int64[:, ::1], int64[:, ::1], int64[:, ::1], float64[:, ::1], "
    "float64[:, ::1], int64[::1], int64, int64)"
)
def contact_loops_batch_kernel(
    ints, floats, sc, Q, V, TAU, F, mu, cf, ci, T, cemp, asm, DDQ, LAM, status, start, stop
):
    """(ÿ[k], λ[k]) for rows start ≤ k < stop on a model with loops by
    :func:`~loopdyn.algorithms.contact.contact_loops_core` (C-ABA, Alg. 1; the bias from its body motions;
    cluster PV-OSIMr for Λ⁻¹; the Cholesky; C-ABA's passes with the constraint wrenches). Arguments as
    :func:`contact_batch_kernel`, with the model's cluster arrays and the program's tables."""
    (ints, floats, sc, Q, V, TAU, F, cf, ci, T, cemp, asm, DDQ, LAM, status) = borrowed(
        (ints, floats, sc, Q, V, TAU, F, cf, ci, T, cemp, asm, DDQ, LAM, status)
    )
    ib, ws, ic, cb, wc = model_views(ints, floats)
    for k in range(start, stop):
        st = validate_cluster_state(ib, ic, cb, Q[k], V[k], TAU[k], F[k], True)
        if st == 0:
            st = contact_loops_core(ints, floats, Q[k], V[k], TAU[k], F[k], mu, cf, ci, T, cemp, asm, sc,
                                    DDQ[k], LAM[k])  # fmt: skip
        status[k] = st


# ---------------------------------------------------------------------------------------------
# derivatives (issue 30): out has shape (3, N, nv, nv) — out[0, k], out[1, k], out[2, k] are row k's
# ∂/∂q, ∂/∂v and ∂/∂a (M, H) or ∂/∂τ (M⁻¹, H⁻¹)
_SIGD = (
    "void(int64[:, ::1], float64[:, ::1], float64[::1], float64[:, ::1], float64[:, ::1], float64[:, ::1], "
    "float64[:, :, :, ::1], int64[::1], int64, int64)"
)
_SIGCD = (
    "void(" + _CLUSTER + "float64[::1], float64[:, ::1], float64[:, ::1], float64[:, ::1], "
    "float64[:, :, :, ::1], int64[::1], int64, int64)"
)


@kernel(_SIGD)
def rnea_derivatives_batch_kernel(ib, ws, sc, Q, V, A, out, status, start, stop):
    """RNEA derivatives (:mod:`.derivatives`) for rows start ≤ k < stop (``sc`` unused)."""
    ib, ws, sc, Q, V, A, out, status = borrowed((ib, ws, sc, Q, V, A, out, status))
    no_forces = np.zeros((0, 6))
    for k in range(start, stop):
        st = validate_qva(ib, Q[k], V[k], A[k], no_forces)
        status[k] = st
        if st == 0:
            rnea_derivatives_core(ib, ws, Q[k], V[k], A[k], no_forces, out[0, k], out[1, k], out[2, k], None)


@kernel(_SIGD)
def aba_derivatives_batch_kernel(ib, ws, sc, Q, V, TAU, out, status, start, stop):
    """ABA derivatives (:mod:`.derivatives`) for rows start ≤ k < stop; ``sc`` (4 nv² + nv floats, the
    thread's own): the factor of M, the n × 3n solve and q̈."""
    ib, ws, sc, Q, V, TAU, out, status = borrowed((ib, ws, sc, Q, V, TAU, out, status))
    no_forces = np.zeros((0, 6))
    n = ib[0, L.I0_NV]
    Lf = view(sc, 0, (n, n))
    X = view(sc, n * n, (n, 3 * n))
    ddq = view(sc, 4 * n * n, (n,))
    lam = np.empty(n, np.int64)
    for k in range(start, stop):
        st = validate_qva(ib, Q[k], V[k], TAU[k], no_forces)
        if st == 0:
            st = aba_core(ib, ws, Q[k], V[k], TAU[k], no_forces, ddq)
        if st == 0:
            rnea_derivatives_core(ib, ws, Q[k], V[k], ddq, no_forces, out[0, k], out[1, k], Lf, None)
            st = minv_apply(ib, ws, Lf, lam, out[0, k], out[1, k], out[2, k], X)
        status[k] = st


@kernel(_SIGCD)
def c_rnea_derivatives_batch_kernel(ints, floats, sc, Q, V, A, out, status, start, stop):
    """RNEA derivatives of a model with clusters for rows start ≤ k < stop; ``sc``: the
    spanning matrices and scratch of :func:`~.derivatives.c_rnea_derivatives_core`."""
    ints, floats, sc, Q, V, A, out, status = borrowed((ints, floats, sc, Q, V, A, out, status))
    ib, ws, ic, cb, wc = model_views(ints, floats)
    no_forces = np.zeros((0, 6))
    for k in range(start, stop):
        st = validate_cluster_state(ib, ic, cb, Q[k], V[k], A[k], no_forces, True)
        if st == 0:
            st = c_rnea_derivatives_core(ints, floats, Q[k], V[k], A[k], no_forces, out[0, k], out[1, k],
                                         out[2, k], sc, np.int64(0))  # fmt: skip
        status[k] = st


@kernel(_SIGCD)
def c_aba_derivatives_batch_kernel(ints, floats, sc, Q, V, TAU, out, status, start, stop):
    """ABA derivatives of a model with clusters for rows start ≤ k < stop; ``sc``: the
    spanning matrices and scratch, then H's factor (nv²) and ÿ (nv)."""
    ints, floats, sc, Q, V, TAU, out, status = borrowed((ints, floats, sc, Q, V, TAU, out, status))
    ib, ws, ic, cb, wc = model_views(ints, floats)
    code, consts, table, outputs = tapes(ic, cb, wc)
    no_forces = np.zeros((0, 6))
    n = out.shape[2]
    o = c_buffer_size(ic, n)
    Hf = view(sc, o, (n, n))
    ddy = view(sc, o + n * n, (n,))
    for k in range(start, stop):
        st = validate_cluster_state(ib, ic, cb, Q[k], V[k], TAU[k], no_forces, True)
        if st == 0:
            st = c_aba_core(ib, ws, ic, cb, wc, code, consts, table, outputs, Q[k], V[k], TAU[k], no_forces,
                            ddy)  # fmt: skip
        if st == 0:
            st = c_rnea_derivatives_core(ints, floats, Q[k], V[k], ddy, no_forces, out[0, k], out[1, k], Hf,
                                         sc, np.int64(1))  # fmt: skip
        if st == 0:
            st = c_hinv_apply(ic, cb, Hf, out[0, k], out[1, k], out[2, k])
        status[k] = st


@kernel(
    "void("
    + _CLUSTER
    + "float64[::1], float64[:, ::1], float64[:, ::1], float64[:, ::1], float64[:, :, ::1], float64, "
    "float64[:, ::1], int64[::1], int64[:, ::1], int64[:, ::1], int64[:, ::1], float64[:, ::1], "
    "int64[::1], float64[:, ::1], float64[:, ::1], float64[:, :, :, ::1], float64[:, :, :, ::1], "
    "int64[::1], int64, int64)"
)
def c_contact_derivatives_batch_kernel(
    ints, floats, sc, Q, V, TAU, F, mu, cf, ci, T, cemp, asm, cfs, cis, DDQ, LAM, DA, DL, status, start, stop
):
    """The constrained forward dynamics of a model with clusters and its derivatives
    (:func:`~.contact_derivatives.c_contact_derivatives_core`: ``cf`` … ``asm`` the loop program, ``sc``
    the thread's scratch, ``cfs``, ``cis`` the constraint list compiled on the spanning tree) for rows
    start ≤ k < stop. ``LAM[k]``: the desired accelerations on entry, λ on return; ``DA[k]``, ``DL[k]`` as
    :func:`contact_derivatives_batch_kernel`'s."""
    (ints, floats, sc, Q, V, TAU, F, cf, ci, T, cemp, asm, cfs, cis, DDQ, LAM, DA, DL, status) = borrowed(
        (ints, floats, sc, Q, V, TAU, F, cf, ci, T, cemp, asm, cfs, cis, DDQ, LAM, DA, DL, status)
    )
    ib, ws, ic, cb, wc = model_views(ints, floats)
    for k in range(start, stop):
        st = validate_cluster_state(ib, ic, cb, Q[k], V[k], TAU[k], F[k], True)
        if st == 0:
            st = c_contact_derivatives_core(ints, floats, Q[k], V[k], TAU[k], F[k], mu, cf, ci, T, cemp, asm,
                                            sc, cfs, cis, DDQ[k], LAM[k], DA[k], DL[k])  # fmt: skip
        status[k] = st


@kernel(
    "void(int64[:, ::1], float64[:, ::1], float64[::1], float64[:, ::1], float64[:, ::1], float64[:, ::1], "
    "float64[:, :, ::1], float64, float64[:, ::1], int64[::1], int64, float64[:, ::1], float64[:, ::1], "
    "float64[:, :, :, ::1], float64[:, :, :, ::1], int64[::1], int64, int64)"
)
def contact_derivatives_batch_kernel(
    ib, ws, sc, Q, V, TAU, F, mu, cf, ci, nsc, DDQ, LAM, DA, DL, status, start, stop
):
    """Constrained forward dynamics and its derivatives
    (:func:`~loopdyn.algorithms.contact_derivatives.contact_derivatives_core`) for rows
    start ≤ k < stop: ``DDQ[k]``, ``LAM[k]`` (the desired accelerations on entry), ``DA[k]`` =
    (∂q̈/∂q, ∂q̈/∂v, ∂q̈/∂τ), ``DL[k]`` = (∂λ/∂q, ∂λ/∂v, ∂λ/∂τ). ``sc``: the thread's scratch, the
    contact program's first ``nsc`` floats, then the derivative kernel's."""
    ib, ws, sc, Q, V, TAU, F, cf, ci, DDQ, LAM, DA, DL, status = borrowed(
        (ib, ws, sc, Q, V, TAU, F, cf, ci, DDQ, LAM, DA, DL, status)
    )
    n = ib[0, L.I0_NV]
    lidx = np.empty(n, np.int64)
    csc = sc[:nsc]
    wk = sc[nsc:]
    for k in range(start, stop):
        st = validate_qva(ib, Q[k], V[k], TAU[k], F[k])
        if st == 0:
            st = contact_derivatives_core(ib, ws, Q[k], V[k], TAU[k], F[k], mu, cf, ci, csc, wk, lidx, DDQ[k],
                                          LAM[k], DA[k], DL[k])  # fmt: skip
        status[k] = st


# ---------------------------------------------------------------------------------------------
# the joint-torque regressor (issue 31, :mod:`.regressor`): out has shape (N, nv, ncols)
_SIGR = (
    "void(int64[:, ::1], float64[:, ::1], float64[:, ::1], float64[:, ::1], float64[:, ::1], "
    "float64[:, :, ::1], int64[::1], int64, int64)"
)


@kernel(_SIGR)
def regressor_batch_kernel(ib, ws, Q, V, A, out, status, start, stop):
    """Y[k] = Y(q_k, v_k, a_k) (:mod:`.regressor`, eq. 2) for rows start ≤ k < stop."""
    ib, ws, Q, V, A, out, status = borrowed((ib, ws, Q, V, A, out, status))
    no_forces = np.zeros((0, 6))
    for k in range(start, stop):
        st = validate_qva(ib, Q[k], V[k], A[k], no_forces)
        status[k] = st
        if st == 0:
            regressor_forward(ib, ws, Q[k], V[k], A[k])
            tree_regressor_fill(ib, ws, A[k], out[k])


@kernel("void(" + _CLUSTER + "float64[:, ::1], float64[:, ::1], float64[:, ::1], float64[:, :, ::1], "
        "int64[::1], int64, int64)")
def c_regressor_batch_kernel(ints, floats, Q, V, A, out, status, start, stop):
    """Y_y[k] = Gᵀ Y_span(q_k, G ẏ_k, G ÿ_k + g) (:mod:`.regressor`, eq. 3) for rows start ≤ k < stop."""
    ints, floats, Q, V, A, out, status = borrowed((ints, floats, Q, V, A, out, status))
    ib, ws, ic, cb, wc = model_views(ints, floats)
    code, consts, table, outputs = tapes(ic, cb, wc)
    no_forces = np.zeros((0, 6))
    for k in range(start, stop):
        st = validate_cluster_state(ib, ic, cb, Q[k], V[k], A[k], no_forces, True)
        if st == 0:
            st = c_regressor_core(ib, ws, ic, cb, wc, code, consts, table, outputs, Q[k], V[k], A[k], out[k])
        status[k] = st


# ---------------------------------------------------------------------------------------------
# the Coriolis matrix and Ṁ (issue 31, :mod:`.coriolis`): out (N, nv, nv); ``what`` CORIOLIS or MDOT


@kernel(
    "void(int64[:, ::1], float64[:, ::1], float64[::1], float64[:, ::1], float64[:, ::1], "
    "float64[:, :, ::1], int64[::1], int64, int64, int64)"
)
def coriolis_batch_kernel(ib, ws, sc, Q, V, out, status, what, start, stop):
    """A tree's C or Ṁ for rows start ≤ k < stop (``sc`` unused)."""
    ib, ws, sc, Q, V, out, status = borrowed((ib, ws, sc, Q, V, out, status))
    none = view(sc, 0, (0, 0))
    for k in range(start, stop):
        st = check_configuration(ib, Q[k])
        if st == 0:
            st = check_vector(V[k], ib[0, L.I0_NV], 1)
        status[k] = st
        if st == 0:
            if what == CORIOLIS:
                coriolis_core(ib, ws, Q[k], V[k], out[k], none, none, np.int64(WANT_C))
            else:
                coriolis_core(ib, ws, Q[k], V[k], none, none, out[k], np.int64(WANT_MDOT))


@kernel(
    "void(int64[::1], float64[::1], float64[::1], float64[:, ::1], float64[:, ::1], "
    "float64[:, :, ::1], int64[::1], int64, int64, int64)"
)
def c_coriolis_batch_kernel(ints, floats, sc, Q, V, out, status, what, start, stop):
    """C_y or Ḣ of a model with clusters for rows start ≤ k < stop; ``sc``: the thread's scratch of
    :func:`cluster_buffer_size` floats."""
    ints, floats, sc, Q, V, out, status = borrowed((ints, floats, sc, Q, V, out, status))
    ib, ws, ic, cb, wc = model_views(ints, floats)
    code, consts, table, outputs = tapes(ic, cb, wc)
    no_forces = view(wc, 0, (0, 6))
    for k in range(start, stop):
        st = validate_cluster_state(ib, ic, cb, Q[k], V[k], V[k][0:0], no_forces, False)
        if st == 0:
            st = c_coriolis_core(ib, ws, ic, cb, wc, code, consts, table, outputs, Q[k], V[k], out[k], what,
                                 sc)  # fmt: skip
        status[k] = st
