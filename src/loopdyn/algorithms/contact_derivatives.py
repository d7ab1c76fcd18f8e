"""Derivatives of the constrained (contact) forward dynamics of a kinematic tree, in one kernel call.

The forward problem (:mod:`.contact`, Pinocchio's sign ``M q̈ + c = τ + Jᵀ λ``, damping μ ≥ 0)::

    M(q) q̈ − J(q)ᵀ λ = τ − c(q, v)                                    (1)
    J(q) q̈ + γ(q, v) + μ λ = k                                         (2)

(2) is what the forward solve ``(Λ⁻¹ + μ I) λ = k − (J a0 + γ)``, ``q̈ = a0 + M⁻¹ Jᵀ λ`` satisfies.
Write ``τ_ID(q, v, a; λ) := rnea(q, v, a, f_ext + Jᵀλ)`` — the inverse dynamics with the constraint
forces entered as external body forces ``K_eᵀ λ_e`` held fixed in their body frames (so that their
derivative in q is the derivative of ``Jᵀ(q) λ`` at fixed λ) — and ``α(q, v, a) := J a + γ``, the
constraint frames' accelerations (spatial LOCAL for ``"6d"`` and custom rows, classical for ``"3d"``).
Then (1) reads ``τ_ID(q, v, q̈; λ) = τ`` and (2) ``α(q, v, q̈) + μ λ = k``. Differentiating both along
x ∈ {δ (tangent of q), v, τ} at the solution (Carpentier et al., RSS 2021 "Proximal and sparse
resolution of constrained dynamic equations", §V; spec §3)::

    M ∂q̈ − Jᵀ ∂λ = ∂τ/∂x − ∂τ_ID/∂x                                     (3)
    J ∂q̈ + μ ∂λ = −∂α/∂x                                               (4)

with ``∂τ_ID/∂x`` the RNEA derivatives at ``a = q̈`` with those forces, ``∂τ/∂τ = 1`` (zero for δ, v)
and ``∂α/∂x`` the frame-acceleration derivatives at fixed ``a`` (zero for τ). With the unconstrained
sensitivities ``Z_x := M⁻¹ (∂τ/∂x − ∂τ_ID/∂x)`` (``Z_δ, Z_v = −M⁻¹ ∂τ_ID/∂x``, ``Z_τ = M⁻¹``; the
ABA derivatives at ``a = q̈``), (3) gives ``∂q̈ = Z_x + M⁻¹ Jᵀ ∂λ`` and (4) then::

    (Λ⁻¹ + μ I) ∂λ = −(J Z_x + ∂α/∂x),      Λ⁻¹ = J M⁻¹ Jᵀ                (5)
    ∂q̈ = Z_x + (J M⁻¹)ᵀ ∂λ                                             (6)

The kernel: the forward solve (:func:`~.contact.contact_core`, whose Cholesky factor of Λ⁻¹ + μ I is
reused for (5)); the RNEA derivatives at (q, v, q̈) with ``f_ext + Jᵀλ`` (:mod:`.derivatives`, which
leaves the world-frame kinematics it computed in ``ws``); from those, ``∂α/∂x`` and J
(:func:`frame_acceleration_derivatives`, below); the sparse LᵀL factor of M (RBDA Table 6.3) applied
to ``[−∂τ_ID/∂δ | −∂τ_ID/∂v | 1]`` (:func:`~.derivatives.minv_apply`); then (5) and (6) as dense
m × 3n products. ``J M⁻¹`` is the last block of ``J Z``, so no inverse of M is formed beyond the
M⁻¹ that ∂q̈/∂τ needs anyway.

Frame-acceleration derivatives (world frame, the notation of :mod:`.derivatives`)
--------------------------------------------------------------------------------
A constraint frame c is fixed in body b. Its LOCAL spatial velocity and acceleration are
``ᶜX_0 v_b`` and ``ᶜX_0 a_b`` (world v_b, a_b; a_b without the gravity seed). A tangent step δ_j of
a joint j ⪯ b moves body b (and c) by the world twist S_j, so ``∂ᶜX_0/∂δ_j = −ᶜX_0 (S_j ×)``, while
(D2 of :mod:`.derivatives`) ``∂v_b/∂δ_j = S_j × v_b + Ψ̇_j``,
``∂a_b/∂δ_j = S_j × a_b + Ψ̈_j + Ψ̇_j × v_b``. The rigid terms cancel::

    ∂(ᶜX_0 v_b)/∂δ_j = ᶜX_0 Ψ̇_j,     ∂(ᶜX_0 a_b)/∂δ_j = ᶜX_0 (Ψ̈_j + Ψ̇_j × v_b)         (7)

(Ψ̈_j without the gravity seed a_0: ``Ψ̈_j − a_0 × S_j``). Velocity (D5): ``∂v_b/∂q̇_j = S_j``,
``∂a_b/∂q̇_j = S_j × v_b + Ψ̇_j + Ṡ_j``::

    ∂(ᶜX_0 v_b)/∂q̇_j = ᶜX_0 S_j,     ∂(ᶜX_0 a_b)/∂q̇_j = ᶜX_0 (S_j × v_b + Ψ̇_j + Ṡ_j)      (8)

and J's column j is ``K_e ᶜX_0 S_j``. The kernel works in body b's coordinates (the rows ``K`` of
:class:`~loopdyn.constraint_rows.ConstraintRows` act on body b's motion ``[ω; v]``). A ``"3d"`` row
adds the classical term ``c = Rᵀ (ω × (v + ω × p))`` (body b's ``[ω; v]`` in its coordinates, the
frame (R, p) in b), whose derivative along a change ``(dω, dv)`` of that velocity is
``Rᵀ (dω × (v + ω × p) + ω × (dv + dω × p))``                                             (9)
with ``(dω, dv)`` the body-coordinate forms of the velocity derivatives of (7), (8).
"""

from __future__ import annotations

import numpy as np

from ..jit import inlined, njit, shared
from ..model import layout as L
from ..spatial import ops
from .borrow import (
    STACK_FLOATS,
    STACK_INTS,
    acquire,
    borrowed,
    model_views,
    release,
    stack_floats,
    stack_ints,
    view,
)
from .cluster_kinematics import validate_cluster_state
from .common import gravity_seed, jcalc, kernel
from .contact import (
    CI_BODY,
    CI_CLASSICAL,
    CI_ROW0,
    CI_ROW1,
    CI_W,
    contact_core,
    contact_loops_core,
    loop_factor,
)
from .derivatives import (
    D_A,
    D_OP,
    D_OR,
    D_PSID,
    D_PSIDD,
    D_S,
    D_V,
    D_VCOL,
    c_buffer_size,
    c_hinv_apply,
    c_rnea_derivatives_core,
    c_terms_offset,
    forward_body,
    minv_apply,
    rnea_derivatives_core,
)
from .loop_derivatives import term_offsets, terms_size
from .pv_osim import H_USER
from .rnea import validate_qva
from .status import DATA_IN_USE, STATUS_BASE


@inlined
def classical_term_derivative(cf, fr, vb, dvb):
    """(9): ``Rᵀ (dω × (v + ω × p) + ω × (dv + dω × p))`` for the frame (R, p) stored at rows fr, fr + 1
    of ``cf``, body velocity ``vb`` and its change ``dvb`` (body coordinates, [ω; v])."""
    R = (cf[fr, 0], cf[fr, 1], cf[fr, 2], cf[fr, 3], cf[fr, 4], cf[fr, 5],
         cf[fr + 1, 0], cf[fr + 1, 1], cf[fr + 1, 2])  # fmt: skip
    p = (cf[fr + 1, 3], cf[fr + 1, 4], cf[fr + 1, 5])
    w = (vb[0], vb[1], vb[2])
    dw = (dvb[0], dvb[1], dvb[2])
    wp = ops.cross3(w, p)
    dwp = ops.cross3(dw, p)
    t1 = ops.cross3(dw, (vb[3] + wp[0], vb[4] + wp[1], vb[5] + wp[2]))
    t2 = ops.cross3(w, (dvb[3] + dwp[0], dvb[4] + dwp[1], dvb[5] + dwp[2]))
    return ops.rot_t_vec(R, (t1[0] + t2[0], t1[1] + t2[1], t1[2] + t2[2]))


@njit(cache=True, fastmath={"contract"})
def frame_acceleration_derivatives(ib, ws, cf, ci, P, J):
    """``P = [∂α/∂δ | ∂α/∂v | 0]`` (m × 3n) and J (m × n), overwritten, eqs. (7)–(9), from the
    world-frame kinematics left in ``ws`` by :func:`~.derivatives.forward_body` (S_j, Ψ̇_j, Ψ̈_j,
    Ψ̇_j + Ṡ_j, v_b, placements). ``ci``: the constraint records at ``ci[H_USER]``."""
    ib, ws, cf, ci, P, J = borrowed((ib, ws, cf, ci, P, J))
    m, n = J.shape
    for r in range(m):
        for c in range(3 * n):
            P[r, c] = 0.0
        for c in range(n):
            J[r, c] = 0.0
    g0 = gravity_seed(ws)
    u = ci[H_USER]
    for e in range(ci[u]):
        o = u + 1 + CI_W * e
        b = ci[o + CI_BODY]
        if b == 0:
            continue  # on the world: rows identically zero
        r0, r1 = ci[o + CI_ROW0], ci[o + CI_ROW1]
        classical = ci[o + CI_CLASSICAL] != 0
        oR = ops.load9(ws, b, D_OR)
        op = ops.load3(ws, b, D_OP)
        vw = ops.load6(ws, b, D_V)
        vb = ops.motion_to_child(oR, op, vw)
        j = b
        while j > 0:
            ivj = ib[j, L.I_IV]
            for l in range(ib[j, L.I_NV]):
                c = ivj + l
                s = ops.load6(ws, j, D_S + 6 * l)
                psid = ops.load6(ws, j, D_PSID + 6 * l)
                psidd = ops.sub6(ops.load6(ws, j, D_PSIDD + 6 * l), ops.cross_motion(g0, s))
                dvq = ops.motion_to_child(oR, op, psid)  # (7)
                daq = ops.motion_to_child(oR, op, ops.add6(psidd, ops.cross_motion(psid, vw)))
                dvv = ops.motion_to_child(oR, op, s)  # (8)
                dav = ops.motion_to_child(
                    oR, op, ops.add6(ops.cross_motion(s, vw), ops.load6(ws, j, D_VCOL + 6 * l))
                )
                for r in range(r0, r1):
                    k = ops.load6(cf, r, 0)
                    P[r, c] = ops.dot6(k, daq)
                    P[r, n + c] = ops.dot6(k, dav)
                    J[r, c] = ops.dot6(k, dvv)
                if classical:  # (9)
                    tq = classical_term_derivative(cf, m + 2 * e, vb, dvq)
                    tv = classical_term_derivative(cf, m + 2 * e, vb, dvv)
                    for k3 in range(3):
                        P[r0 + k3, c] += tq[k3]
                        P[r0 + k3, n + c] += tv[k3]
            j = ib[j, L.I_PARENT]


@kernel(
    "int64(int64[:, ::1], float64[:, ::1], float64[::1], float64[::1], float64[::1], float64[:, ::1], "
    "int64[::1], float64[:, ::1], float64[:, ::1])"
)
def frame_acceleration_derivatives_kernel(ib, ws, q, v, a, cf, ci, P, J):
    """The constraint frames' acceleration derivatives of a tree at (q, v, a), eqs. (7)–(9):
    ``P = [∂α/∂δ | ∂α/∂v | 0]`` (m × 3n), J (m × n); ``cf``, ``ci`` a compiled constraint list
    (:func:`~.contact.contact_program`). Also run on the spanning tree of a model with loops."""
    ib, ws, q, v, a, cf, ci, P, J = borrowed((ib, ws, q, v, a, cf, ci, P, J))
    no_forces = np.zeros((0, 6))
    st = validate_qva(ib, q, v, a, no_forces)
    if st != 0:
        return st
    if not acquire(ib):
        return DATA_IN_USE * STATUS_BASE
    nb = ib[0, L.I0_NBODIES]
    if nb > 0:
        ops.store6(ws, 0, D_V, (0.0, 0.0, 0.0, 0.0, 0.0, 0.0))
        ops.store6(ws, 0, D_A, gravity_seed(ws))
        ref = jcalc(ib, ws, 1, q)[1]  # any fixed origin gives the same LOCAL quantities
        for i in range(1, nb + 1):
            forward_body(ib, ws, i, q, v, a, no_forces, ref)
    frame_acceleration_derivatives(ib, ws, cf, ci, P, J)
    release(ib)
    return 0


@inlined
def wrenches_into(fext, cf, ci, lam, f2):
    """``f2 = f_ext + Σ_e K_eᵀ λ_e`` per body (Pinocchio's ``[force; torque]`` rows, body frames):
    ``Jᵀ λ`` as external forces held in the body frames."""
    has_fext = fext.shape[0] != 0
    for b in range(f2.shape[0]):
        for k in range(6):
            f2[b, k] = fext[b, k] if has_fext else 0.0
    u = ci[H_USER]
    for e in range(ci[u]):
        o = u + 1 + CI_W * e
        b = ci[o + CI_BODY]
        if b == 0:
            continue
        w = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
        for r in range(ci[o + CI_ROW0], ci[o + CI_ROW1]):
            w = ops.add6(w, ops.scale6(ops.load6(cf, r, 0), lam[r]))
        for k in range(3):
            f2[b, k] += w[3 + k]
            f2[b, 3 + k] += w[k]


@njit(cache=True, fastmath={"contract"})
def kkt_sensitivities(Lc, Jm, dA, P, dL):
    """(5) and (6): with the Cholesky factor of Λ⁻¹ + μ I in the lower triangle of ``Lc`` (m × m),
    J (m × n, overwritten), ``dA`` = (Z_δ, Z_v, M⁻¹) and ``P`` (m × 3n) holding (∂α/∂δ, ∂α/∂v, 0):
    ``P ← J Z + P``, ``dL[x] = −(Λ⁻¹ + μ I)⁻¹ P_x``, then ``dA[x] += (J M⁻¹)ᵀ dL[x]`` (J M⁻¹ = P's last
    block before the solve, kept in J's place)."""
    Lc, Jm, dA, P, dL = borrowed((Lc, Jm, dA, P, dL))
    m, n = Jm.shape
    for x in range(3):  # P_x += J Z_x
        for r in range(m):
            for i in range(n):
                jri = Jm[r, i]
                if jri != 0.0:
                    for c in range(n):
                        P[r, x * n + c] += jri * dA[x, i, c]
    for r in range(m):  # J is not needed any more: keep J M⁻¹ (P's last block) in its place
        for c in range(n):
            Jm[r, c] = P[r, 2 * n + c]
    w = 3 * n
    for i in range(m):  # P ← (L Lᵀ)⁻¹ P, rows at a time: forward substitution ...
        for k in range(i):
            lik = Lc[i, k]
            for c in range(w):
                P[i, c] -= lik * P[k, c]
        d = 1.0 / Lc[i, i]
        for c in range(w):
            P[i, c] *= d
    for i in range(m - 1, -1, -1):  # ... and backward (row i of L is column i of Lᵀ)
        d = 1.0 / Lc[i, i]
        for c in range(w):
            P[i, c] *= d
        for k in range(i):
            lik = Lc[i, k]
            for c in range(w):
                P[k, c] -= lik * P[i, c]
    for x in range(3):
        for r in range(m):
            for c in range(n):
                dL[x, r, c] = -P[r, x * n + c]
    for x in range(3):  # (6)
        for r in range(m):
            for i in range(n):
                jm = Jm[r, i]
                for c in range(n):
                    dA[x, i, c] += jm * dL[x, r, c]


@shared(fastmath={"contract"})
def contact_derivatives_core(ib, ws, q, v, tau, fext, mu, cf, ci, sc, wk, lidx, ddq, lam, dA, dL):
    """The derivatives of the constrained forward dynamics on validated inputs (module docstring):
    ``ddq``, ``lam`` (k on entry, λ on return) and ``dA`` = (∂q̈/∂δ, ∂q̈/∂v, ∂q̈/∂τ), ``dL`` = (∂λ/∂δ,
    ∂λ/∂v, ∂λ/∂τ). ``sc``: the contact program's scratch; ``wk``: (nb + 1) 6 + n² + 5 m n + 3 n²
    floats; ``lidx``: n ints. Returns a status."""
    ib, ws, q, v, tau, fext, mu, cf, ci, sc, wk, lidx, ddq, lam, dA, dL = borrowed(
        (ib, ws, q, v, tau, fext, mu, cf, ci, sc, wk, lidx, ddq, lam, dA, dL)
    )
    nb = ib[0, L.I0_NBODIES]
    n = ddq.shape[0]
    m = lam.shape[0]
    st = contact_core(ib, ws, q, v, tau, fext, mu, cf, ci, sc, ddq, lam)  # q̈, λ; factor of Λ⁻¹ + μ I
    if st != 0:
        return st
    Lc = sc[sc.shape[0] - m * m :].reshape((m, m))
    o = 0
    f2 = view(wk, o, (nb + 1, 6))
    o += 6 * (nb + 1)
    Lf = view(wk, o, (n, n))
    o += n * n
    P = view(wk, o, (m, 3 * n))
    o += 3 * m * n
    Jm = view(wk, o, (m, n))
    o += m * n
    X = view(wk, o, (n, 3 * n))
    wrenches_into(fext, cf, ci, lam, f2)
    rnea_derivatives_core(ib, ws, q, v, ddq, f2, dA[0], dA[1], Lf, None)  # ∂τ_ID/∂δ, ∂τ_ID/∂v, M
    # ∂α/∂δ, ∂α/∂v into P's first two blocks, J into Jm (7)–(9); P's last block J M⁻¹ comes from J Z
    frame_acceleration_derivatives(ib, ws, cf, ci, P, Jm)
    st = minv_apply(ib, ws, Lf, lidx, dA[0], dA[1], dA[2], X)  # Z_δ, Z_v, M⁻¹
    if st != 0:
        return st
    kkt_sensitivities(Lc, Jm, dA, P, dL)
    return 0


@kernel(
    "int64(int64[:, ::1], float64[:, ::1], float64[::1], float64[::1], float64[::1], float64[:, ::1], "
    "float64, float64[:, ::1], int64[::1], float64[::1], float64[::1], float64[::1], float64[::1], "
    "float64[:, :, ::1], float64[:, :, ::1])"
)
def contact_derivatives_kernel(ib, ws, q, v, tau, fext, mu, cf, ci, sc, wk, ddq, lam, dA, dL):
    """Constrained forward dynamics of a tree and its derivatives (see the module docstring)."""
    ib, ws, q, v, tau, fext, cf, ci, sc, wk, ddq, lam, dA, dL = borrowed(
        (ib, ws, q, v, tau, fext, cf, ci, sc, wk, ddq, lam, dA, dL)
    )
    st = validate_qva(ib, q, v, tau, fext)
    if st != 0:
        return st
    if not acquire(ib):
        return DATA_IN_USE * STATUS_BASE
    n = ib[0, L.I0_NV]
    lidx = view(stack_ints(), 0, (n,)) if n <= STACK_INTS else np.empty(n, np.int64)
    st = contact_derivatives_core(ib, ws, q, v, tau, fext, mu, cf, ci, sc, wk, lidx, ddq, lam, dA, dL)
    release(ib)
    return st


def work_size(nb: int, n: int, m: int) -> int:
    """Floats of :func:`contact_derivatives_core`'s ``wk``."""
    return 6 * (nb + 1) + n * n + 3 * m * n + m * n + 3 * n * n


# ---------------------------------------------------------------------------------------------
# models with clusters (explicit and implicit): (3)–(6) in the independent coordinates y
#
# With q̇_s = G ẏ, q̈_s = G ÿ + g and the constraint forces as body forces of the spanning tree:
# ``∂τ_ID/∂x`` and H by :func:`~.derivatives.c_rnea_derivatives_core` (the implicit loops' ∂G, ∂g
# included, (L5)–(L6) of :mod:`.loop_derivatives`); the constraint frames' accelerations are the
# spanning tree's ``α_s(q_s, q̇_s, q̈_s)``, so along δ_j (q_s by G e_j, q̇_s by W e_j, q̈_s by Zq e_j)
# and ẏ_j (q̇_s by G e_j, q̈_s by Zv e_j)
#
#     J = J_s G,   ∂α/∂δ = A_q G + A_v W + J_s Zq,   ∂α/∂ẏ = A_v G + J_s Zv                 (10)
#
# (A_q, A_v, J_s the spanning tree's (7)–(9)); then (5)–(6) with H's dense Cholesky factor in place
# of M's sparse one, and Λ⁻¹ + μ I = J H⁻¹ Jᵀ + μ I factorised here.


@njit(cache=True, fastmath={"contract"})
def cluster_frame_terms(ib, ic, cb, wc, Ps, Js, terms, J, P):
    """(10): ``J`` (m × nv) and ``P = [∂α/∂δ | ∂α/∂ẏ | 0]`` (m × 3 nv) from the spanning tree's
    ``Ps = [A_q | A_v | ·]`` (m × 3 nv_s) and ``Js``, through G's sparse columns and the implicit loops'
    ``terms`` (the layout of :func:`.loop_derivatives.loop_tangent_terms`)."""
    ib, ic, cb, wc, Ps, Js, terms, J, P = borrowed((ib, ic, cb, wc, Ps, Js, terms, J, P))
    m, nvs = Js.shape
    n = J.shape[1]
    GC = ic[0, L.C0_GCOLS]
    for r in range(m):
        for x in range(n):
            aq = 0.0
            av = 0.0
            js = 0.0
            for e in range(GC + cb[GC + x], GC + cb[GC + x + 1], 2):
                s = cb[e]
                g = wc[cb[e + 1]]
                aq += Ps[r, s] * g
                av += Ps[r, nvs + s] * g
                js += Js[r, s] * g
            P[r, x] = aq
            P[r, n + x] = av
            P[r, 2 * n + x] = 0.0
            J[r, x] = js
    at = 0
    for k in range(1, ic[0, L.C0_NCL] + 1):  # + A_v W + J_s Zq and + J_s Zv: the loops' dependent rows
        if ic[k, L.C_KIND] != L.IMPLICIT:
            continue
        first, iv = ic[k, L.C_FIRST], ic[k, L.C_IV]
        nn, mm, nrow, dep = ic[k, L.C_N], ic[k, L.C_M], ic[k, L.C_NROW], ic[k, L.C_DEP]
        for l in range(mm):
            _, W, Zq, Zv, at = term_offsets(at, nn, mm)
            for rr in range(nrow):
                j = cb[dep + rr]
                sv = ib[cb[first + j], L.I_IV]
                w, zq, zv = terms[W + j], terms[Zq + j], terms[Zv + j]
                for r in range(m):
                    P[r, iv + l] += Ps[r, nvs + sv] * w + Js[r, sv] * zq
                    P[r, n + iv + l] += Js[r, sv] * zv


@shared(fastmath={"contract"})
def c_contact_derivatives_core(
    ints, floats, q, v, tau, fext, mu, cf, ci, T, cemp, asm, sc, cfs, cis, ddq, lam, dA, dL
):
    """The constrained forward dynamics of a model with clusters and its derivatives on validated inputs:
    ``ddq``, ``lam`` (k on entry, λ on return) by :func:`~.contact.contact_loops_core` (``cf`` … ``sc``:
    the constraint list compiled for it, a :class:`~.contact.LoopProgram`, and its scratch), then (3)–(6)
    in independent coordinates with (10): ``dA`` = (∂ÿ/∂δ, ∂ÿ/∂ẏ, ∂ÿ/∂τ), ``dL`` = (∂λ/∂δ, ∂λ/∂ẏ,
    ∂λ/∂τ). ``cfs``, ``cis``: the same list compiled on the spanning tree. (5) reuses the forward
    solve's Cholesky factor of Λ⁻¹ + μ I (:func:`~.contact.loop_factor`). Returns a status. The model
    comes as its two packed buffers, as to :func:`~.derivatives.c_rnea_derivatives_core`."""
    ints, floats, q, v, tau, fext, cf, ci, T, cemp, asm, sc, cfs, cis, ddq, lam, dA, dL = borrowed(
        (ints, floats, q, v, tau, fext, cf, ci, T, cemp, asm, sc, cfs, cis, ddq, lam, dA, dL)
    )
    ib, ws, ic, cb, wc = model_views(ints, floats)
    st = contact_loops_core(ints, floats, q, v, tau, fext, mu, cf, ci, T, cemp, asm, sc, ddq, lam)
    if st != 0:
        return st
    n, m, nvs = ddq.shape[0], lam.shape[0], ic[0, L.C0_NVS]
    # the scratch below in one buffer, in this pass's stack frame when it fits (seven heap arrays a
    # call before): spanning body forces, the RNEA derivatives' buffer, H's factor, the frame terms
    nf = 6 * (ib[0, L.I0_NBODIES] + 1)
    nbuf = c_buffer_size(ic, n)
    need = nf + nbuf + n * n + 4 * m * nvs + 4 * m * n
    scratch = stack_floats() if need <= STACK_FLOATS else np.empty(need)
    scratch = borrowed((scratch,))[0]
    f2 = view(scratch, 0, (nf // 6, 6))
    buf = view(scratch, nf, (nbuf,))
    Hf = view(scratch, nf + nbuf, (n, n))
    at = nf + nbuf + n * n
    Ps = view(scratch, at, (m, 3 * nvs))
    Js = view(scratch, at + 3 * m * nvs, (m, nvs))
    J = view(scratch, at + 4 * m * nvs, (m, n))
    P = view(scratch, at + 4 * m * nvs + m * n, (m, 3 * n))
    wrenches_into(fext, cfs, cis, lam, f2)  # Jᵀλ as body forces of the spanning tree
    st = c_rnea_derivatives_core(ints, floats, q, v, ddq, f2, dA[0], dA[1], Hf, buf,
                                 np.int64(1))  # the kinematics of the solve's C-ABA  # fmt: skip
    if st != 0:
        return st
    frame_acceleration_derivatives(ib, ws, cfs, cis, Ps, Js)  # (7)–(9) on the spanning tree
    o = c_terms_offset(ic, n)
    cluster_frame_terms(ib, ic, cb, wc, Ps, Js, buf[o : o + terms_size(ic)], J, P)
    st = c_hinv_apply(ic, cb, Hf, dA[0], dA[1], dA[2])  # Z_δ = −H⁻¹ ∂τ_ID/∂δ, Z_v, H⁻¹
    if st != 0:
        return st
    kkt_sensitivities(loop_factor(ci, sc, m), J, dA, P, dL)
    return 0


@kernel(
    "int64(int64[::1], float64[::1], float64[::1], float64[::1], float64[::1], float64[:, ::1], float64, "
    "float64[:, ::1], int64[::1], int64[:, ::1], int64[:, ::1], int64[:, ::1], float64[::1], "
    "float64[:, ::1], int64[::1], float64[::1], float64[::1], float64[:, :, ::1], float64[:, :, ::1])"
)
def c_contact_derivatives_kernel(
    ints, floats, q, v, tau, fext, mu, cf, ci, T, cemp, asm, sc, cfs, cis, ddq, lam, dA, dL
):
    """:func:`c_contact_derivatives_core` on a model with clusters; ``fext`` (nbodies + 1, 6) or (0, 6)."""
    ints, floats, q, v, tau, fext, cf, ci, T, cemp, asm, sc, cfs, cis, ddq, lam, dA, dL = borrowed(
        (ints, floats, q, v, tau, fext, cf, ci, T, cemp, asm, sc, cfs, cis, ddq, lam, dA, dL)
    )
    ib, ws, ic, cb, wc = model_views(ints, floats)
    st = validate_cluster_state(ib, ic, cb, q, v, tau, fext, True)
    if st != 0:
        return st
    if not acquire(ints):
        return DATA_IN_USE * STATUS_BASE
    st = c_contact_derivatives_core(ints, floats, q, v, tau, fext, mu, cf, ci, T, cemp, asm, sc, cfs, cis,
                                    ddq, lam, dA, dL)  # fmt: skip
    release(ints)
    return st
