"""Constrained forward dynamics of a kinematic tree under link constraints, in one kernel call.

With the constraint rows ``J`` (per constraint ``K_e`` times the LOCAL Jacobian of its frame) and
Pinocchio's sign for the forces ``λ`` (``M ddq + c = τ + Jᵀ λ``, ``J ddq + γ = k``), the
constraint-space solution (Featherstone RBDA §8.1, eqs 8.6–8.8 with the operational-space inverse
inertia Λ⁻¹ = J M⁻¹ Jᵀ of Sathya et al. 2023, eq 1) is::

    a0  = M⁻¹ (τ − c)                            one ABA (RBDA Table 7.1)
    (Λ⁻¹ + μ I) λ = k − (J a0 + γ)               Λ⁻¹ by PV-OSIMr (Sathya et al. 2023, Algorithm 3)
    ddq = a0 + M⁻¹ Jᵀ λ                          the ABA's factors applied to the forces Jᵀ λ

:func:`contact_core` runs it on validated inputs, reusing the articulated-body factors of the ABA
(``U_i = Iᴬ_i S_i`` and ``D_i⁻¹``, which do not depend on v or τ) three times:

1. **ABA** (:func:`loopdyn.algorithms.aba.aba_core`) → ``a0`` and the body velocities and
   accelerations (the accelerations carry the gravity seed ``a_0 = −a_g``, removed in step 2);
2. **bias** ``J a0 + γ`` (:func:`contact_bias`) from the accelerations of the constrained bodies: the
   spatial LOCAL acceleration of the frame for ``"6d"`` and custom rows (``K_e`` times it), and the
   classical acceleration of the point for ``"3d"`` (spatial linear + ``ω_c × v_c``);
3. **Λ⁻¹** by PV-OSIMr's lines 3–4 and 12–28 only (:func:`loopdyn.algorithms.pv_osim.pv_osimr_from_factors`);
   its lines 1–11 are the ABA's backward sweep;
4. **λ** by an in-place Cholesky of ``Λ⁻¹ + μ I`` (:func:`damped_cholesky`), which reports dependent rows
   (a pivot below ``RANK_TOL · m · max diag``) when ``μ = 0``;
5. **ddq** = a0 + Δ with ``Δ = M⁻¹ Jᵀ λ`` by the ABA's second and third sweeps on the forces alone
   (:func:`force_response`: no inertia, velocity or bias term; RBDA Table 7.1 with ``c = 0``).

The constraint set is compiled once per prepared constraint list (:func:`contact_program`): the
PV-OSIMr structure ``bk`` with the constraint records appended (``ci``), and the rows ``K`` with the
frames (``cf``).
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field

import numpy as np
from numba import njit

from ..model import layout as L
from ..spatial import ops
from .aba import aba_core
from .borrow import borrowed
from .common import gravity_seed, kernel, s_column
from .pv_osim import F_HAS, H_LINK, H_USER, LINK_W, LK_FLAGS, packed_structure_of, pv_osimr_from_factors
from .rnea import validate_qva
from .status import DAMPED_NOT_PD, REDUNDANT_CONSTRAINTS, STATUS_BASE

__all__ = ["ContactProgram", "contact_kernel", "contact_program"]

#: a pivot of the Cholesky factor of Λ⁻¹ below this (relative to the largest diagonal entry, squared,
#: times m) is taken as a dependent constraint row
RANK_TOL = 1e-12

# constraint records appended to bk at bk[H_USER]: the count, then CI_W ints per constraint
CI_BODY, CI_ROW0, CI_ROW1, CI_CLASSICAL = range(4)
CI_W = 4


# ---------------------------------------------------------------------------------------------
# the compiled constraint set (pure Python; once per prepared constraint list)
@dataclass
class ContactProgram:
    """A prepared constraint list compiled for :func:`contact_kernel`.

    * ``cf`` (m + 2 nc, 6) — the rows ``K`` acting on the body motion ``[ω; v]`` (first m rows), then
      per constraint its frame in its body: ``R`` row-major (9) and ``p`` (3) over two rows;
    * ``ci`` — the PV-OSIMr structure, then (at ``ci[H_USER]``) the count and per constraint its body,
      first and end row and whether its rows are a point's classical acceleration (``"3d"``);
    * per-thread float scratch: PV-OSIMr's, then Λ⁻¹ (m × m), then the gravity seed per body (3).
    """

    m: int
    cf: np.ndarray
    ci: np.ndarray
    size: int
    local: threading.local = field(default_factory=threading.local)

    def scratch(self) -> np.ndarray:
        """This thread's scratch (allocated once)."""
        buf = getattr(self.local, "sc", None)
        if buf is None:
            buf = self.local.sc = np.zeros(self.size)
        return buf


def contact_program(ib, body, row, K, frames, classical) -> ContactProgram:
    """Compile a constraint list: ``body`` (nc), ``row`` (nc + 1), ``K`` (m × 6), ``frames`` (nc × 12:
    R row-major, p), ``classical`` (nc booleans: ``"3d"`` rows)."""
    p = packed_structure_of(ib, body, row)
    nc = len(body)
    m = int(row[-1])
    nb = int(ib[0, L.I0_NBODIES])
    extra = np.zeros(1 + CI_W * nc, dtype=np.int64)
    extra[0] = nc
    for e in range(nc):
        o = 1 + CI_W * e
        extra[o + CI_BODY] = body[e]
        extra[o + CI_ROW0], extra[o + CI_ROW1] = row[e], row[e + 1]
        extra[o + CI_CLASSICAL] = 1 if classical[e] else 0
    ci = np.concatenate([p.bk, extra])
    ci[H_USER] = len(p.bk)
    cf = np.zeros((m + 2 * nc, 6))
    cf[:m] = K
    cf[m:] = np.asarray(frames, dtype=float).reshape(2 * nc, 6)
    return ContactProgram(m, np.ascontiguousarray(cf), ci, p.scratch_size + m * m + 3 * (nb + 1))


# ---------------------------------------------------------------------------------------------
# kernel steps
@njit(cache=True, inline="always")
def contact_bias(ib, ws, cf, ci, gs, lam):
    """Step 2: ``lam ← k − (J a0 + γ)`` (``lam`` holds k on entry) from the body motions of the ABA.

    The ABA's accelerations include ``ⁱX_0 a_0`` with ``a_0 = [0; −a_g]``: its linear part, rotated
    into each body (``g_i = R_iᵀ g_λ(i)``, into ``gs``), is subtracted. A constraint on body b with
    frame (R, p) reads ``K_e a_b`` (spatial LOCAL acceleration) and, for ``"3d"``, adds
    ``ω_c × v_c = Rᵀ (ω × (v + ω × p))`` (classical acceleration of the point)."""
    nb = ib[0, L.I0_NBODIES]
    g0 = gravity_seed(ws)
    gs[0], gs[1], gs[2] = g0[3], g0[4], g0[5]
    for i in range(1, nb + 1):
        par = ib[i, L.I_PARENT]
        g = ops.rot_t_vec(ops.load9(ws, i, L.W_R), (gs[3 * par], gs[3 * par + 1], gs[3 * par + 2]))
        gs[3 * i], gs[3 * i + 1], gs[3 * i + 2] = g
    u = ci[H_USER]
    m = lam.shape[0]
    for e in range(ci[u]):
        o = u + 1 + CI_W * e
        b = ci[o + CI_BODY]
        if b == 0:
            continue  # on the world: no motion
        a = ops.load6(ws, b, L.W_A)
        a = (a[0], a[1], a[2], a[3] - gs[3 * b], a[4] - gs[3 * b + 1], a[5] - gs[3 * b + 2])
        r0 = ci[o + CI_ROW0]
        for r in range(r0, ci[o + CI_ROW1]):
            lam[r] -= ops.dot6(ops.load6(cf, r, 0), a)
        if ci[o + CI_CLASSICAL]:
            fr = m + 2 * e
            R = (cf[fr, 0], cf[fr, 1], cf[fr, 2], cf[fr, 3], cf[fr, 4], cf[fr, 5],
                 cf[fr + 1, 0], cf[fr + 1, 1], cf[fr + 1, 2])  # fmt: skip
            p = (cf[fr + 1, 3], cf[fr + 1, 4], cf[fr + 1, 5])
            vb = ops.load6(ws, b, L.W_V)
            w = (vb[0], vb[1], vb[2])
            vp = ops.cross3(w, p)
            c = ops.rot_t_vec(R, ops.cross3(w, (vb[3] + vp[0], vb[4] + vp[1], vb[5] + vp[2])))
            for k in range(3):
                lam[r0 + k] -= c[k]


@njit(cache=True, inline="always")
def damped_cholesky(G, m, mu):
    """Step 4: ``G ← L`` (lower triangle) with ``L Lᵀ = G + μ I``, in place. Returns 0, or
    REDUNDANT_CONSTRAINTS (``μ = 0`` and a squared pivot ≤ RANK_TOL · m · max diag, or not positive) /
    DAMPED_NOT_PD (``μ > 0`` and a pivot not positive), with the row as index."""
    scale = 0.0
    for j in range(m):
        scale = max(scale, abs(G[j, j] + mu))
    tol = RANK_TOL * m * max(scale, 2.2250738585072014e-308)
    for j in range(m):
        d = G[j, j] + mu
        for k in range(j):
            d -= G[j, k] * G[j, k]
        if not d > 0.0 or (mu == 0.0 and d <= tol):
            kind = REDUNDANT_CONSTRAINTS if mu == 0.0 else DAMPED_NOT_PD
            return kind * STATUS_BASE + j
        ljj = math.sqrt(d)
        G[j, j] = ljj
        inv = 1.0 / ljj
        for i in range(j + 1, m):
            s = G[i, j]
            for k in range(j):
                s -= G[i, k] * G[j, k]
            G[i, j] = s * inv
    return 0


@njit(cache=True, inline="always")
def cholesky_solve(Lf, m, x):
    """``x ← (L Lᵀ)⁻¹ x`` with the factor of :func:`damped_cholesky`."""
    for i in range(m):
        s = x[i]
        for k in range(i):
            s -= Lf[i, k] * x[k]
        x[i] = s / Lf[i, i]
    for i in range(m - 1, -1, -1):
        s = x[i]
        for k in range(i + 1, m):
            s -= Lf[k, i] * x[k]
        x[i] = s / Lf[i, i]


@njit(cache=True, inline="always")
def force_response(ib, ws, cf, ci, lam, ddq):
    """Step 5: ``ddq += M⁻¹ Jᵀ λ`` with the ABA's factors (RBDA Table 7.1, second and third loops,
    with the constraint forces as the only bias: ``pᴬ_b = −K_eᵀ λ_e``; no inertia is recomputed).
    Leaves the body accelerations of the constrained motion in ``ws[:, W_A]`` (gravity seed included,
    as after an ABA) and uses ``W_F`` / ``W_UU`` as scratch."""
    nb = ib[0, L.I0_NBODIES]
    off_link = ci[H_LINK]
    for i in range(nb + 1):
        if i == 0 or ci[off_link + LINK_W * i + LK_FLAGS] & F_HAS:
            ops.store6(ws, i, L.W_F, (0.0, 0.0, 0.0, 0.0, 0.0, 0.0))
    u = ci[H_USER]
    for e in range(ci[u]):
        o = u + 1 + CI_W * e
        b = ci[o + CI_BODY]
        if b == 0:
            continue
        f = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        for r in range(ci[o + CI_ROW0], ci[o + CI_ROW1]):
            f = ops.add6(f, ops.scale6(ops.load6(cf, r, 0), lam[r]))
        ops.store6(ws, b, L.W_F, ops.sub6(ops.load6(ws, b, L.W_F), f))
    for i in range(nb, 0, -1):  # second loop: u = −Sᵀ pᴬ, pᵃ = pᴬ + U D⁻¹ u
        if not ci[off_link + LINK_W * i + LK_FLAGS] & F_HAS:
            continue
        nv = ib[i, L.I_NV]
        pA = ops.load6(ws, i, L.W_F)
        for k in range(nv):
            ws[i, L.W_UU + k] = -ops.dot6(s_column(ib, ws, i, k), pA)
        par = ib[i, L.I_PARENT]
        if par == 0:
            continue
        for k in range(nv):
            y = 0.0
            for l in range(nv):
                y += ws[i, L.W_DINV + nv * k + l] * ws[i, L.W_UU + l]
            pA = ops.add6(pA, ops.scale6(ops.load6(ws, i, L.W_U + 6 * k), y))
        R = ops.load9(ws, i, L.W_R)
        ops.add_to6(ws, par, L.W_F, ops.force_to_parent(R, ops.load3(ws, i, L.W_P), pA))
    for i in range(1, nb + 1):  # third loop: Δ = D⁻¹ (u − Uᵀ a'), a = a' + S Δ (W_F now holds Δa)
        nv = ib[i, L.I_NV]
        iv = ib[i, L.I_IV]
        has = ci[off_link + LINK_W * i + LK_FLAGS] & F_HAS
        R = ops.load9(ws, i, L.W_R)
        ai = ops.motion_to_child(R, ops.load3(ws, i, L.W_P), ops.load6(ws, ib[i, L.I_PARENT], L.W_F))
        for k in range(nv):
            uk = ws[i, L.W_UU + k] if has else 0.0
            ws[0, L.W_TMP + k] = uk - ops.dot6(ops.load6(ws, i, L.W_U + 6 * k), ai)
        for k in range(nv):
            y = 0.0
            for l in range(nv):
                y += ws[i, L.W_DINV + nv * k + l] * ws[0, L.W_TMP + l]
            ddq[iv + k] += y
            ai = ops.add6(ai, ops.scale6(s_column(ib, ws, i, k), y))
        ops.store6(ws, i, L.W_F, ai)
        ops.add_to6(ws, i, L.W_A, ai)


@njit(cache=True)
def contact_core(ib, ws, q, v, tau, fext, mu, cf, ci, sc, ddq, lam):
    """Steps 1–5 on validated inputs (see the module docstring). ``lam`` holds the desired constraint
    accelerations k on entry and λ on return; ``ddq`` receives the accelerations. Returns 0, SINGULAR,
    REDUNDANT_CONSTRAINTS or DAMPED_NOT_PD."""
    st = aba_core(ib, ws, q, v, tau, fext, ddq)  # step 1: a0
    if st != 0:
        return st
    m = lam.shape[0]
    nb = ib[0, L.I0_NBODIES]
    g0 = sc.shape[0] - 3 * (nb + 1) - m * m
    G = sc[g0 : g0 + m * m].reshape((m, m))
    contact_bias(ib, ws, cf, ci, sc[g0 + m * m :], lam)  # step 2: k − (J a0 + γ)
    pv_osimr_from_factors(ib, ws, cf, ci, sc, G)  # step 3: Λ⁻¹
    st = damped_cholesky(G, m, mu)  # step 4: λ
    if st != 0:
        return st
    cholesky_solve(G, m, lam)
    force_response(ib, ws, cf, ci, lam, ddq)  # step 5: ddq = a0 + M⁻¹ Jᵀ λ
    return 0


@kernel(
    "int64(int64[:, ::1], float64[:, ::1], float64[::1], float64[::1], float64[::1], float64[:, ::1], "
    "float64, float64[:, ::1], int64[::1], float64[::1], float64[::1], float64[::1])"
)
def contact_kernel(ib, ws, q, v, tau, fext, mu, cf, ci, sc, ddq, lam):
    ib, ws, q, v, tau, fext, cf, ci, sc, ddq, lam = borrowed((ib, ws, q, v, tau, fext, cf, ci, sc, ddq, lam))
    st = validate_qva(ib, q, v, tau, fext)
    if st != 0:
        return st
    return contact_core(ib, ws, q, v, tau, fext, mu, cf, ci, sc, ddq, lam)
