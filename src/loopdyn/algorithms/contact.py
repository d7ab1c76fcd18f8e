"""Constrained forward dynamics of a kinematic tree under link constraints, in one kernel call.

With the constraint rows ``J`` (per constraint ``K_e`` times the LOCAL Jacobian of its frame) and
Pinocchio's sign for the forces ``λ`` (``M ddq + c = τ + Jᵀ λ``, ``J ddq + γ = k``), the
constraint-space solution (Featherstone RBDA §8.1, eqs 8.6–8.8 with the operational-space inverse
inertia Λ⁻¹ = J M⁻¹ Jᵀ of Sathya et al. 2023, eq 1) is::

    a0  = M⁻¹ (τ − c)                            one ABA (RBDA Table 7.1)
    (Λ⁻¹ + μ I) λ = k − (J a0 + γ)               Λ⁻¹ by PV-OSIMr (Sathya et al. 2023, Algorithm 3)
    ddq = a0 + M⁻¹ Jᵀ λ                          the ABA's factors applied to the forces Jᵀ λ

:func:`contact_core` runs it on validated inputs in *world coordinates* (world axes, origin at link 1
for conditioning; :mod:`loopdyn.algorithms.pv_osim_world`): an articulated inertia goes to its parent
by a plain sum, a force by none at all, so neither the ABA's backward sweep nor PV-OSIMr's propagators
change frames. The articulated-body factors (``U_i = Iᴬ_i S_i`` and ``D_i⁻¹``, which do not depend on v
or τ) serve three times:

1. **ABA** in world coordinates (:func:`world_aba_forward`, :func:`world_aba_backward`,
   :func:`world_aba_accelerations`; RBDA Table 7.1 with ``c_i = v_i × S q̇_i``) → ``a0`` and the link
   velocities and accelerations (the accelerations carry the gravity seed ``a_0 = −a_g``, removed in
   step 2);
2. **bias** ``J a0 + γ`` (:func:`contact_bias`) from the motions of the constrained links, brought to
   their own coordinates: the spatial LOCAL acceleration of the frame for ``"6d"`` and custom rows
   (``K_e`` times it), and the classical acceleration of the point for ``"3d"`` (spatial linear +
   ``ω_c × v_c``);
3. **Λ⁻¹** by PV-OSIMr (Sathya et al. 2023, Algorithm 3) on the same factors: its lines 12–15 run
   inside the ABA's backward sweep (:func:`~loopdyn.algorithms.pv_osim_world.pvw_link_step`), its
   lines 3–4 seed the world rows ``K_e ᵇX_0`` before it, its lines 16–28 assemble after it;
4. **λ** by an in-place Cholesky of ``Λ⁻¹ + μ I`` (:func:`damped_cholesky`), which reports dependent rows
   (a pivot below ``RANK_TOL · m · max diag``) when ``μ = 0``;
5. **ddq** = a0 + Δ with ``Δ = M⁻¹ Jᵀ λ`` by the ABA's second and third sweeps on the forces alone
   (:func:`force_response`: no inertia, velocity or bias term; RBDA Table 7.1 with ``c = 0``).

The tree core is compiled with fused multiply-adds (``fastmath={"contract"}``), nothing else relaxed.
On a model with loops, :func:`contact_loops_kernel` chains the cluster cores: C-ABA (its kinematics
close the loops, once per call), the bias from C-ABA's body motions with the gravity seed taken off,
cluster PV-OSIMr on C-ABA's articulated inertias (they depend on q alone), the same Cholesky, and
C-ABA's backward and forward passes again with ``Jᵀ λ`` entered as the constraint wrenches
``K_eᵀ λ_e`` on the constrained bodies.

The constraint set is compiled once per prepared constraint list (:func:`contact_program`): the
PV-OSIMr structure ``bk`` with the constraint records appended (``ci``), and the rows ``K`` with the
frames (``cf``).
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field

import numpy as np

from ..jit import inlined, shared
from ..model import layout as L
from ..spatial import ops
from .borrow import acquire, borrowed, model_views, release
from .cluster_dynamics import c_aba_backward, c_aba_core, c_aba_forward
from .cluster_kinematics import tapes, validate_cluster_state
from .cluster_pv_osimr import c_pv_osimr_core
from .common import external_force, gravity_seed, jcalc, kernel
from .pv_osim import (
    EE_DIM,
    EE_LINK,
    EE_UROW,
    EE_W,
    F_HAS,
    H_EE,
    H_LINK,
    H_NE,
    H_USER,
    LINK_W,
    LK_FLAGS,
    PD_OFF,
    SLOT_W,
    packed_structure_of,
    pvr_assemble,
)
from .pv_osim_world import (
    W_OO,
    W_SW,
    pvw_link_step,
    seed_world_rows,
    world_factor,
    world_inertia_to_parent,
    world_link,
)
from .rnea import validate_qva
from .status import DAMPED_NOT_PD, DATA_IN_USE, REDUNDANT_CONSTRAINTS, SINGULAR, STATUS_BASE

__all__ = [
    "ContactProgram",
    "LoopProgram",
    "contact_kernel",
    "contact_loops_kernel",
    "contact_program",
    "loop_program",
]

#: a pivot of the Cholesky factor of Λ⁻¹ below this (relative to the largest diagonal entry, squared,
#: times m) is taken as a dependent constraint row
RANK_TOL = 1e-12

# constraint records appended to bk at bk[H_USER]: the count, then CI_W ints per constraint
CI_BODY, CI_ROW0, CI_ROW1, CI_CLASSICAL = range(4)
CI_W = 4


# ---------------------------------------------------------------------------------------------
# the compiled constraint set (pure Python; once per prepared constraint list)
class ThreadScratch:
    """Per-thread float scratch of ``size`` entries for a compiled constraint program (a mixin: the
    dataclass provides ``size`` and ``local``)."""

    size: int
    local: threading.local

    def scratch(self) -> np.ndarray:
        """This thread's scratch (allocated once)."""
        buf = getattr(self.local, "sc", None)
        if buf is None:
            buf = self.local.sc = np.zeros(self.size)
        return buf


@dataclass
class ContactProgram(ThreadScratch):
    """A prepared constraint list compiled for :func:`contact_kernel`.

    * ``cf`` (m + 2 nc, 6) — the rows ``K`` acting on the body motion ``[ω; v]`` (first m rows), then
      per constraint its frame in its body: ``R`` row-major (9) and ``p`` (3) over two rows;
    * ``ci`` — the PV-OSIMr structure, then (at ``ci[H_USER]``) the count and per constraint its body,
      first and end row and whether its rows are a point's classical acceleration (``"3d"``);
    * per-thread float scratch: PV-OSIMr's, then Λ⁻¹ (m × m).
    """

    m: int
    cf: np.ndarray
    ci: np.ndarray
    size: int
    local: threading.local = field(default_factory=threading.local)


def contact_program(ib, body, row, K, frames, classical) -> ContactProgram:
    """Compile a constraint list: ``body`` (nc), ``row`` (nc + 1), ``K`` (m × 6), ``frames`` (nc × 12:
    R row-major, p), ``classical`` (nc booleans: ``"3d"`` rows)."""
    p = packed_structure_of(ib, body, row)
    nc = len(body)
    m = int(row[-1])
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
    return ContactProgram(m, np.ascontiguousarray(cf), ci, p.scratch_size + m * m)


# ---------------------------------------------------------------------------------------------
# kernel steps: the ABA in world coordinates (axes of the world, origin at link 1)
@inlined
def world_aba_forward(ib, ws, q, v, fext, origin):
    """Step 1, first sweep (RBDA Table 7.1, first loop, in world coordinates): per link its placement,
    world inertia Iᴬ = I and motion subspace S (:func:`~loopdyn.algorithms.pv_osim_world.world_link`),
    velocity ``v_i = v_π(i) + S q̇_i`` (W_V), ``c_i = v_i × S q̇_i`` (W_C; with S constant in the link,
    ``Ṡ = v_i × S`` in any fixed frame) and bias force ``pᴬ_i = v_i ×* I v_i − f_ext`` (W_F; the
    external force moved from the link to the world frame)."""
    for i in range(1, ib[0, L.I0_NBODIES] + 1):
        Iw = world_link(ib, ws, i, q, origin)
        iv = ib[i, L.I_IV]
        vJ = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        for k in range(ib[i, L.I_NV]):
            vJ = ops.add6(vJ, ops.scale6(ops.load6(ws, i, W_SW + 6 * k), v[iv + k]))
        par = ib[i, L.I_PARENT]
        vi = vJ if par == 0 else ops.add6(ops.load6(ws, par, L.W_V), vJ)
        ops.store6(ws, i, L.W_V, vi)
        ops.store6(ws, i, L.W_C, ops.cross_motion(vi, vJ))
        pA = ops.cross_force(vi, ops.inertia_mul(Iw, vi))
        if fext.shape[0] != 0:
            oR = ops.load9(ws, i, L.W_OR)
            pA = ops.sub6(pA, ops.force_to_parent(oR, ops.load3(ws, i, W_OO), external_force(fext, i)))
        ops.store6(ws, i, L.W_F, pA)


@inlined
def world_aba_backward(ib, ws, tau, bk, sc):
    """Step 1, second sweep (world coordinates): ``U = Iᴬ S``, ``D⁻¹``, ``u = τ − Sᵀ pᴬ`` (W_UU), the
    PV-OSIMr link step of step 3 (lines 12–15, on the same factors), and to the parent — no change of
    frame — ``Iᴬ − U D⁻¹ Uᵀ`` and ``pᴬ + Iᴬ c + U D⁻¹ (u − Uᵀ c)``. Returns 0 or SINGULAR."""
    for i in range(ib[0, L.I0_NBODIES], 0, -1):
        if not world_factor(ib, ws, i):
            return SINGULAR * STATUS_BASE + i
        nv = ib[i, L.I_NV]
        iv = ib[i, L.I_IV]
        pA = ops.load6(ws, i, L.W_F)
        for k in range(nv):
            ws[i, L.W_UU + k] = tau[iv + k] - ops.dot6(ops.load6(ws, i, W_SW + 6 * k), pA)
        par = ib[i, L.I_PARENT]
        pvw_link_step(ib, ws, bk, sc, i, par, False)
        if par == 0:
            continue
        c = ops.load6(ws, i, L.W_C)
        pa = ops.add6(pA, ops.mat6_mul(ws, i, L.W_IA, c))
        for k in range(nv):
            ws[0, L.W_TMP + k] = ws[i, L.W_UU + k] - ops.dot6(ops.load6(ws, i, L.W_U + 6 * k), c)
        for k in range(nv):
            y = 0.0
            for l in range(nv):
                y += ws[i, L.W_DINV + nv * k + l] * ws[0, L.W_TMP + l]
            pa = ops.add6(pa, ops.scale6(ops.load6(ws, i, L.W_U + 6 * k), y))
        world_inertia_to_parent(ib, ws, i, par)
        ops.add_to6(ws, par, L.W_F, pa)
    return 0


@inlined
def world_joint_step(ib, ws, i, a, uu, ddq):
    """``Δ = D⁻¹ (u − Uᵀ a)`` for link i (u = ``W_UU`` if ``uu``, else 0), added to ``ddq``; returns
    ``a + S Δ`` (world coordinates)."""
    nv = ib[i, L.I_NV]
    iv = ib[i, L.I_IV]
    if nv == 1:
        u = ws[i, L.W_UU] if uu else 0.0
        y = ws[i, L.W_DINV] * (u - ops.dot6(ops.load6(ws, i, L.W_U), a))
        ddq[iv] += y
        return ops.add6(a, ops.scale6(ops.load6(ws, i, W_SW), y))
    for k in range(nv):
        u = ws[i, L.W_UU + k] if uu else 0.0
        ws[0, L.W_TMP + k] = u - ops.dot6(ops.load6(ws, i, L.W_U + 6 * k), a)
    for k in range(nv):
        y = 0.0
        for l in range(nv):
            y += ws[i, L.W_DINV + nv * k + l] * ws[0, L.W_TMP + l]
        ddq[iv + k] += y
        a = ops.add6(a, ops.scale6(ops.load6(ws, i, W_SW + 6 * k), y))
    return a


@inlined
def world_aba_accelerations(ib, ws, ddq):
    """Step 1, third sweep: ``a_i = a_π(i) + c_i``, ``q̈_i = D⁻¹ (u − Uᵀ a_i)``, ``a_i += S q̈_i`` (W_A,
    world, from the gravity seed ``a_0 = −a_g``)."""
    a0 = gravity_seed(ws)
    for i in range(1, ib[0, L.I0_NBODIES] + 1):
        iv = ib[i, L.I_IV]
        for k in range(ib[i, L.I_NV]):
            ddq[iv + k] = 0.0
        par = ib[i, L.I_PARENT]
        a = ops.add6(a0 if par == 0 else ops.load6(ws, par, L.W_A), ops.load6(ws, i, L.W_C))
        ops.store6(ws, i, L.W_A, world_joint_step(ib, ws, i, a, True, ddq))


@inlined
def contact_bias(ib, ws, cf, ci, lam):
    """Step 2: ``lam ← k − (J a0 + γ)`` (``lam`` holds k on entry) from the world motions of the ABA:
    body b's velocity and acceleration (gravity seed removed) in its own coordinates, ``K_e a_b``
    (spatial LOCAL acceleration) and, for ``"3d"``, ``ω_c × v_c = Rᵀ (ω × (v + ω × p))`` (classical
    acceleration of the point with frame (R, p) in b)."""
    g0 = gravity_seed(ws)
    u = ci[H_USER]
    m = lam.shape[0]
    for e in range(ci[u]):
        o = u + 1 + CI_W * e
        b = ci[o + CI_BODY]
        if b == 0:
            continue  # on the world: no motion
        oR = ops.load9(ws, b, L.W_OR)
        oo = ops.load3(ws, b, W_OO)
        a = ops.motion_to_child(oR, oo, ops.sub6(ops.load6(ws, b, L.W_A), g0))
        r0 = ci[o + CI_ROW0]
        for r in range(r0, ci[o + CI_ROW1]):
            lam[r] -= ops.dot6(ops.load6(cf, r, 0), a)
        if ci[o + CI_CLASSICAL]:
            fr = m + 2 * e
            R = (cf[fr, 0], cf[fr, 1], cf[fr, 2], cf[fr, 3], cf[fr, 4], cf[fr, 5],
                 cf[fr + 1, 0], cf[fr + 1, 1], cf[fr + 1, 2])  # fmt: skip
            p = (cf[fr + 1, 3], cf[fr + 1, 4], cf[fr + 1, 5])
            vb = ops.motion_to_child(oR, oo, ops.load6(ws, b, L.W_V))
            w = (vb[0], vb[1], vb[2])
            vp = ops.cross3(w, p)
            c = ops.rot_t_vec(R, ops.cross3(w, (vb[3] + vp[0], vb[4] + vp[1], vb[5] + vp[2])))
            for k in range(3):
                lam[r0 + k] -= c[k]


@inlined
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


@inlined
def force_response(ib, ws, ci, sc, lam, ddq):
    """Step 5: ``ddq += M⁻¹ Jᵀ λ`` with the ABA's world factors (RBDA Table 7.1, second and third
    loops, with the constraint forces as the only bias: ``pᴬ_b = −K_eᵀ λ_e``, the world rows ``K_e``
    being the EE seeds of PV-OSIMr's lines 3–4; no inertia recomputed, no change of frame). Uses
    ``W_F`` / ``W_UU`` as scratch."""
    nb = ib[0, L.I0_NBODIES]
    off_link = ci[H_LINK]
    for i in range(nb + 1):
        if i == 0 or ci[off_link + LINK_W * i + LK_FLAGS] & F_HAS:
            ops.store6(ws, i, L.W_F, (0.0, 0.0, 0.0, 0.0, 0.0, 0.0))
    off_ee = ci[H_EE]
    for k in range(ci[H_NE]):
        o = off_ee + EE_W * k
        s = SLOT_W * (nb + 1 + k) + PD_OFF
        ur = ci[o + EE_UROW]
        f = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        for c in range(ci[o + EE_DIM]):
            f = ops.add6(f, ops.scale6(ops.load6_at(sc, s + 6 * c), lam[ur + c]))
        b = ci[o + EE_LINK]
        ops.store6(ws, b, L.W_F, ops.sub6(ops.load6(ws, b, L.W_F), f))
    for i in range(nb, 0, -1):  # second loop: u = −Sᵀ pᴬ, pᵃ = pᴬ + U D⁻¹ u
        if not ci[off_link + LINK_W * i + LK_FLAGS] & F_HAS:
            continue
        nv = ib[i, L.I_NV]
        pA = ops.load6(ws, i, L.W_F)
        for k in range(nv):
            ws[i, L.W_UU + k] = -ops.dot6(ops.load6(ws, i, W_SW + 6 * k), pA)
        par = ib[i, L.I_PARENT]
        if par == 0:
            continue
        for k in range(nv):
            y = 0.0
            for l in range(nv):
                y += ws[i, L.W_DINV + nv * k + l] * ws[i, L.W_UU + l]
            pA = ops.add6(pA, ops.scale6(ops.load6(ws, i, L.W_U + 6 * k), y))
        ops.add_to6(ws, par, L.W_F, pA)
    for i in range(1, nb + 1):  # third loop: Δ = D⁻¹ (u − Uᵀ a'), a = a' + S Δ (W_F now holds Δa)
        has = ci[off_link + LINK_W * i + LK_FLAGS] & F_HAS != 0
        a = world_joint_step(ib, ws, i, ops.load6(ws, ib[i, L.I_PARENT], L.W_F), has, ddq)
        ops.store6(ws, i, L.W_F, a)


@shared(fastmath={"contract"})
def contact_core(ib, ws, q, v, tau, fext, mu, cf, ci, sc, ddq, lam):
    """Steps 1–5 on validated inputs (see the module docstring). ``lam`` holds the desired constraint
    accelerations k on entry and λ on return; ``ddq`` receives the accelerations. Returns 0, SINGULAR,
    REDUNDANT_CONSTRAINTS or DAMPED_NOT_PD."""
    # uncounted here too: the call boundary hides that the caller's arrays are borrowed
    ib, ws, q, v, tau, fext, mu, cf, ci, sc, ddq, lam = borrowed(
        (ib, ws, q, v, tau, fext, mu, cf, ci, sc, ddq, lam)
    )
    world_aba_forward(ib, ws, q, v, fext, jcalc(ib, ws, 1, q)[1])  # step 1 (origin at link 1)
    seed_world_rows(ws, cf, ci, sc, 0.0)  # step 3, lines 3–4
    st = world_aba_backward(ib, ws, tau, ci, sc)  # step 1 and step 3's lines 12–15
    if st != 0:
        return st
    world_aba_accelerations(ib, ws, ddq)  # step 1: a0
    m = lam.shape[0]
    g0 = sc.shape[0] - m * m
    G = sc[g0:].reshape((m, m))
    contact_bias(ib, ws, cf, ci, lam)  # step 2: k − (J a0 + γ)
    pvr_assemble(ci, sc, G)  # step 3, lines 16–28: Λ⁻¹
    st = damped_cholesky(G, m, mu)  # step 4: λ
    if st != 0:
        return st
    ops.cholesky_solve_vector(G, m, lam)
    force_response(ib, ws, ci, sc, lam, ddq)  # step 5: ddq = a0 + M⁻¹ Jᵀ λ
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
    if not acquire(ib):
        return DATA_IN_USE * STATUS_BASE
    st = contact_core(ib, ws, q, v, tau, fext, mu, cf, ci, sc, ddq, lam)
    release(ib)
    return st


# ---------------------------------------------------------------------------------------------
# models with loops: the cluster cores chained in one kernel
@dataclass
class LoopProgram(ThreadScratch):
    """A prepared constraint list compiled for :func:`contact_loops_kernel` (a model with loops).

    * ``cf`` — as :class:`ContactProgram`: the rows ``K`` (m × 6) then the frames;
    * ``ci`` — header ``(nc, len(ports), len(order), scratch of the cluster PV-OSIMr)``, then the
      constraint bodies (nc), row offsets (nc + 1), ``"3d"`` flags (nc), and the cluster PV-OSIMr's
      ``ports`` and ``order``;
    * ``T``, ``cemp``, ``asm`` — the cluster PV-OSIMr's other tables
      (:class:`~loopdyn.algorithms.cluster_pv_osimr.ClusterStructure`);
    * per-thread float scratch: the cluster PV-OSIMr's buffer, Λ⁻¹ (m × m), the external forces plus the
      constraint wrenches ((nbodies + 1) × 6).
    """

    m: int
    cf: np.ndarray
    ci: np.ndarray
    T: np.ndarray
    cemp: np.ndarray
    asm: np.ndarray
    size: int
    local: threading.local = field(default_factory=threading.local)


def loop_program(ib, structure, body, row, K, frames, classical) -> LoopProgram:
    """Compile a constraint list on a model with loops (``structure``: its cluster PV-OSIMr structure)."""
    nc = len(body)
    m = int(row[-1])
    ports = np.asarray(structure.ports, dtype=np.int64)
    order = np.asarray(structure.order, dtype=np.int64)
    head = np.array([nc, len(ports), len(order), structure.size], dtype=np.int64)
    flags = np.array([1 if c else 0 for c in classical], dtype=np.int64)
    ci = np.concatenate([head, np.asarray(body, np.int64), np.asarray(row, np.int64), flags, ports, order])
    cf = np.zeros((m + 2 * nc, 6))
    cf[:m] = K
    cf[m:] = np.asarray(frames, dtype=float).reshape(2 * nc, 6)
    nb = int(ib[0, L.I0_NBODIES])
    size = structure.size + m * m + 6 * (nb + 1)
    return LoopProgram(m, np.ascontiguousarray(cf), ci, structure.table, structure.cemp, structure.asm, size)


@inlined
def body_frame_bias(ib, ws, cf, cbody, crow, classical, lam):
    """``lam ← k − (J a0 + γ)`` from the body motions C-ABA left (link coordinates): ``K_e a_b`` and,
    for ``"3d"``, ``Rᵀ (ω × (v + ω × p))``, where ``a_b`` is the body's acceleration without gravity.
    C-ABA's accelerations carry the base's upward seed ``a_0 = −a_g`` (:func:`gravity_seed`), which
    reaches body b as ``ᵇX₀ a_0 = (0, ⁰R_bᵀ (−a_g))`` (no angular part); it is taken off here, ⁰R_b
    composed from the parent placements up the body's path — instead of a second forward kinematics
    (the loops' closure again) at (q, v, a0)."""
    m = lam.shape[0]
    seed = gravity_seed(ws)
    for e in range(cbody.shape[0]):
        b = cbody[e]
        if b == 0:
            continue
        R0 = ops.load9(ws, b, L.W_R)  # ⁰R_b = ⁰R_λ … ᵖR_b
        j = ib[b, L.I_PARENT]
        while j != 0:
            R0 = ops.rot_mul(ops.load9(ws, j, L.W_R), R0)
            j = ib[j, L.I_PARENT]
        g = ops.rot_t_vec(R0, (seed[3], seed[4], seed[5]))
        a = ops.load6(ws, b, L.W_A)
        a = (a[0], a[1], a[2], a[3] - g[0], a[4] - g[1], a[5] - g[2])
        r0 = crow[e]
        for r in range(r0, crow[e + 1]):
            lam[r] -= ops.dot6(ops.load6(cf, r, 0), a)
        if classical[e]:
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


@inlined
def constraint_wrenches(fext, cf, cbody, crow, lam, f2):
    """``f2 = f_ext + Σ_e K_eᵀ λ_e`` per body (Pinocchio's ``[force; torque]`` rows, link coordinates):
    ``Jᵀ λ`` as external forces, since ``J_e = K_e J_b``."""
    has_fext = fext.shape[0] != 0
    for b in range(f2.shape[0]):  # loops, not slice assignment: Numba's broadcasting code is large
        for k in range(6):
            f2[b, k] = fext[b, k] if has_fext else 0.0
    for e in range(cbody.shape[0]):
        b = cbody[e]
        if b == 0:
            continue
        w = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        for r in range(crow[e], crow[e + 1]):
            w = ops.add6(w, ops.scale6(ops.load6(cf, r, 0), lam[r]))
        for k in range(3):
            f2[b, k] += w[3 + k]
            f2[b, 3 + k] += w[k]


@inlined
def loop_factor(ci, sc, m):
    """The Cholesky factor of ``Λ⁻¹ + μ I`` (m × m, lower triangle) that :func:`contact_loops_core`
    leaves in its scratch ``sc`` (after the cluster PV-OSIMr's buffer of ``ci[3]`` floats)."""
    return sc[ci[3] : ci[3] + m * m].reshape((m, m))


@shared
def contact_loops_core(ints, floats, q, v, tau, fext, mu, cf, ci, T, cemp, asm, sc, ddq, lam):
    """Constrained forward dynamics of a model with loops on validated inputs (independent coordinates):
    C-ABA → ``a0`` and the body motions at (q, v, a0) → the bias ``k − (J a0 + γ)``; cluster
    PV-OSIMr on C-ABA's kinematics and articulated inertias → Λ⁻¹; the damped Cholesky solve → λ;
    C-ABA's backward and forward passes again (its kinematics kept) with the constraint wrenches
    ``K_eᵀ λ_e`` added to the external forces → ``ddq`` (= ``H⁻¹ (τ − C + Jᵀ λ)``). The loops are
    closed once, by the first C-ABA's kinematics; the derivatives
    (:func:`~.contact_derivatives.c_contact_derivatives_core`) read that closure too."""
    # uncounted here too: the call boundary hides that the caller's arrays are borrowed; the model as
    # its two packed buffers (Data.cluster_arrays), its views made here: a call by address copies
    # every array argument field by field
    ints, floats, q, v, tau, fext, cf, ci, T, cemp, asm, sc, ddq, lam = borrowed(
        (ints, floats, q, v, tau, fext, cf, ci, T, cemp, asm, sc, ddq, lam)
    )
    ib, ws, ic, cb, wc = model_views(ints, floats)
    code, consts, table, outputs = tapes(ic, cb, wc)
    nc = ci[0]
    o = 4
    cbody = ci[o : o + nc]
    crow = ci[o + nc : o + 2 * nc + 1]
    classical = ci[o + 2 * nc + 1 : o + 3 * nc + 1]
    o += 3 * nc + 1
    ports = ci[o : o + ci[1]]
    order = ci[o + ci[1] : o + ci[1] + ci[2]]
    m = lam.shape[0]
    nbuf = ci[3]
    nb = ib[0, L.I0_NBODIES]
    buf = sc[:nbuf]
    G = loop_factor(ci, sc, m)
    f2 = sc[nbuf + m * m : nbuf + m * m + 6 * (nb + 1)].reshape((nb + 1, 6))
    st = c_aba_core(ib, ws, ic, cb, wc, code, consts, table, outputs, q, v, tau, fext, ddq)  # a0
    if st != 0:
        return st
    body_frame_bias(ib, ws, cf, cbody, crow, classical, lam)  # from C-ABA's body motions at (q, v, a0)
    # Λ⁻¹ on C-ABA's articulated inertias and kinematics (they depend on q alone)
    st = c_pv_osimr_core(ib, ws, ic, cb, wc, code, consts, table, outputs, q, cbody, crow, cf[:m], T, ports,
                         order, cemp, asm, buf, G, np.int64(1))  # fmt: skip
    if st != 0:
        return st
    st = damped_cholesky(G, m, mu)
    if st != 0:
        return st
    ops.cholesky_solve_vector(G, m, lam)
    constraint_wrenches(fext, cf, cbody, crow, lam, f2)
    # C-ABA again without its kinematics (the first one's placements, velocities and 𝖼 are still in
    # the Data): its backward pass with the new bias forces, its forward pass
    st = c_aba_backward(ib, ws, ic, cb, wc, tau, f2)
    if st != 0:
        return st
    c_aba_forward(ib, ws, ic, cb, wc, ddq)
    return 0


@kernel(
    "int64(int64[::1], float64[::1], "
    "float64[::1], float64[::1], float64[::1], float64[:, ::1], "
    "float64, float64[:, ::1], int64[::1], int64[:, ::1], int64[:, ::1], int64[:, ::1], float64[::1], "
    "float64[::1], float64[::1])"
)
def contact_loops_kernel(ints, floats, q, v, tau, fext, mu, cf, ci, T, cemp, asm, sc, ddq, lam):
    (ints, floats, q, v, tau, fext, cf, ci, T, cemp, asm, sc, ddq, lam) = borrowed(
        (ints, floats, q, v, tau, fext, cf, ci, T, cemp, asm, sc, ddq, lam)
    )
    ib, ws, ic, cb, wc = model_views(ints, floats)
    st = validate_cluster_state(ib, ic, cb, q, v, tau, fext, True)
    if st != 0:
        return st
    if not acquire(ib):
        return DATA_IN_USE * STATUS_BASE
    st = contact_loops_core(ints, floats, q, v, tau, fext, mu, cf, ci, T, cemp, asm, sc, ddq, lam)
    release(ib)
    return st
