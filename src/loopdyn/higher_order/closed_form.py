"""Closed-form equations of motion in the paper's coordinates (Prop. 1, Lemma 1; spec §3).

``τ̄ = M̄ ν̇ + C ν + g`` with ``M̄ = 𝐒ᵀ G_c 𝐌 G_p 𝐒`` and the admissible Coriolis matrix
``C = 𝐒ᵀ G_c 𝐌 G_p 𝐒̇ − 𝐒ᵀ G_c ad_𝐕ᵀ 𝐌 G_p 𝐒`` (``M̄̇ − 2C`` skew-symmetric). In the paper's
coordinates ``ν`` a free-flyer root's velocity is its *spatial* twist ``V_1 = (ω; v)`` (world frame,
angular first; its screw block is ``I₆`` and ``𝐒̇`` is 0 there, spec §6.1 pitfall 10); every other
joint keeps loopdyn's coordinate. The change of coordinates is ``v = P ν`` (loopdyn / Pinocchio
``v``), so ``M̄ = Pᵀ M P`` with ``M`` = :func:`loopdyn.crba`, ``τ̄ = Pᵀ τ`` (the base row of ``τ̄`` is the
spatial wrench ``(n; f)`` about the world origin) and, at first order, ``ν̇ = P⁻¹ a``. Without a
floating base ``P = 1``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..algorithms.borrow import borrowed
from ..algorithms.common import kernel
from ..jit import inlined, njit
from ..model.joints import FREEFLYER
from . import validation as hv
from .api import prepare_tree
from .arrays import HB_IV, HB_JTYPE, HB_NV, HB_PARENT
from .dynamics import check_finite, check_q, order_zero
from .kinematics import binomials, body_derivative, inertia_mul_add, screw_derivative, tables


class ClosedForm(NamedTuple):
    """Closed-form terms at one state, in the paper's coordinates ``ν`` (``v = P ν``)."""

    M: np.ndarray  #: M̄ (nv, nv), symmetric positive definite
    C: np.ndarray  #: admissible Coriolis matrix (nv, nv)
    g: np.ndarray  #: gravity vector (nv)
    M_dot: np.ndarray  #: dM̄/dt (nv, nv); M_dot − 2 C is skew-symmetric
    P: np.ndarray  #: change of coordinates v = P ν (nv, nv)
    nu: np.ndarray  #: ν at this state (nv)


@njit(cache=True)
def _adt(V, w, out):
    """out = ad_Vᵀ w = (−ω×n − v×f ; −ω×f)."""
    w0, w1, w2, v0, v1, v2 = V[0], V[1], V[2], V[3], V[4], V[5]
    n0, n1, n2, f0, f1, f2 = w[0], w[1], w[2], w[3], w[4], w[5]
    out[0] = -(w1 * n2 - w2 * n1) - (v1 * f2 - v2 * f1)
    out[1] = -(w2 * n0 - w0 * n2) - (v2 * f0 - v0 * f2)
    out[2] = -(w0 * n1 - w1 * n0) - (v0 * f1 - v1 * f0)
    out[3] = -(w1 * f2 - w2 * f1)
    out[4] = -(w2 * f0 - w0 * f2)
    out[5] = -(w0 * f1 - w1 * f0)


@inlined
def supporting_columns(hb, S, dw, i, cols, s0, s1):
    """The columns of the joints supporting body i (G_p) into ``cols``, their screws S and Ṡ moved to
    body i's origin (``(ω; v + ω × e)``, e = o_i − o_k for joint k) into ``s0`` and ``s1``; returns
    their number."""
    n = 0
    k = i
    e0 = e1 = e2 = 0.0
    while k > 0:
        for c in range(hb[k, HB_IV], hb[k, HB_IV] + hb[k, HB_NV]):
            cols[n] = c
            for j in range(2):
                w0, w1, w2 = S[j, c, 0], S[j, c, 1], S[j, c, 2]
                x0 = S[j, c, 3] + w1 * e2 - w2 * e1
                x1 = S[j, c, 4] + w2 * e0 - w0 * e2
                x2 = S[j, c, 5] + w0 * e1 - w1 * e0
                if j == 0:
                    s0[n, 0], s0[n, 1], s0[n, 2], s0[n, 3], s0[n, 4], s0[n, 5] = w0, w1, w2, x0, x1, x2
                else:
                    s1[n, 0], s1[n, 1], s1[n, 2], s1[n, 3], s1[n, 4], s1[n, 5] = w0, w1, w2, x0, x1, x2
            n += 1
        e0, e1, e2 = e0 + dw[k, 0], e1 + dw[k, 1], e2 + dw[k, 2]
        k = hb[k, HB_PARENT]
    return n


@kernel(
    "int64(int64[:, ::1], float64[:, ::1], float64[::1], float64[::1], float64[:, ::1], float64[:, ::1], "
    "float64[::1], float64[:, ::1], float64[:, ::1], float64[::1])",
)
def closed_form_kernel(hb, hf, q, v, Mb, Cb, gb, Md, P, nu):
    hb, hf, q, v, Mb, Cb, gb, Md, P, nu = borrowed((hb, hf, q, v, Mb, Cb, gb, Md, P, nu))
    st = check_q(hb, q)
    if st == 0:
        if v.shape[0] != hb[0, 2]:
            st = hv.BAD_SHAPE * hv.STATUS_BASE + 1
        else:
            st = check_finite(v, 1)
    if st != 0:
        return st
    nb, nv = hb[0, 0], hb[0, 2]
    V, S, Rw, pw, dw, cw, Jw, Ib, _, _, vd = tables(1, 0, nb, nv)
    vd[0] = v
    C2 = binomials(2)
    order_zero(hb, hf, q, vd, V, S, Rw, pw, dw, cw, Jw, Ib, C2)
    for i in range(1, nb + 1):
        screw_derivative(hb, i, 1, C2, V, S)  # Ṡ = ad_V S (D1)
        body_derivative(hf, i, 1, C2, V, Rw, pw, cw, Jw, Ib, False)  # Ṁ (D3)
    # the paper's coordinates: a free-flyer root's columns become the unit spatial twists, Ṡ = 0 (here
    # about the root's origin; moved to the world origin at the end)
    for a in range(nv):
        nu[a] = v[a]
        for b in range(nv):
            P[a, b] = 1.0 if a == b else 0.0
    for i in range(1, nb + 1):
        if hb[i, HB_JTYPE] == FREEFLYER and hb[i, HB_PARENT] == 0:
            iv = hb[i, HB_IV]
            Sblk = np.empty((6, 6))
            for c in range(6):
                for a in range(6):
                    Sblk[a, c] = S[0, iv + c, a]
            Pinv = np.linalg.inv(Sblk)  # ν_base = S_blk v_base  ⇒  v_base = S_blk⁻¹ ν_base
            for a in range(6):
                nu[iv + a] = V[0, i, a]
                for c in range(6):
                    P[iv + a, iv + c] = Pinv[a, c]
                    S[0, iv + c, a] = 1.0 if a == c else 0.0
                    S[1, iv + c, a] = 0.0
    G = np.zeros(6)
    G[3:] = hf[0, 0:3]
    Mb[:, :] = 0.0
    Cb[:, :] = 0.0
    Md[:, :] = 0.0
    gb[:] = 0.0
    cols = np.empty(nv, dtype=np.int64)
    s0 = np.empty((nv, 6))  # S_b and Ṡ_b about body i's origin
    s1 = np.empty((nv, 6))
    y = np.empty((nv, 6))  # M_i S_b
    ydot = np.empty((nv, 6))  # M_i Ṡ_b, then M_i Ṡ_b − ad_Vᵀ M_i S_b
    mdot = np.empty((nv, 6))  # Ṁ_i S_b, then Ṁ_i S_b + M_i Ṡ_b
    tmp = np.empty(6)
    mg = np.empty(6)
    for i in range(1, nb + 1):
        n = supporting_columns(hb, S, dw, i, cols, s0, s1)
        mg[:] = 0.0
        inertia_mul_add(hf, i, 0, Ib, cw, G, 1.0, mg)
        for t in range(n):
            y[t, :] = 0.0
            ydot[t, :] = 0.0
            mdot[t, :] = 0.0
            inertia_mul_add(hf, i, 0, Ib, cw, s0[t], 1.0, y[t])
            inertia_mul_add(hf, i, 0, Ib, cw, s1[t], 1.0, ydot[t])
            inertia_mul_add(hf, i, 1, Ib, cw, s0[t], 1.0, mdot[t])
            _adt(V[0, i], y[t], tmp)  # once per column, not per pair
            for e in range(6):
                mdot[t, e] += ydot[t, e]  # Ṁ_i S_b + M_i Ṡ_b
                ydot[t, e] -= tmp[e]  # M_i Ṡ_b − ad_Vᵀ M_i S_b
        for s_ in range(n):
            a = cols[s_]
            ga = 0.0
            for e in range(6):
                ga += s0[s_, e] * mg[e]
            gb[a] -= ga
            for t in range(n):
                b = cols[t]
                m_ab = 0.0
                c_ab = 0.0
                d_ab = 0.0
                for e in range(6):
                    m_ab += s0[s_, e] * y[t, e]
                    c_ab += s0[s_, e] * ydot[t, e]
                    d_ab += s1[s_, e] * y[t, e] + s0[s_, e] * mdot[t, e]
                Mb[a, b] += m_ab
                Cb[a, b] += c_ab
                Md[a, b] += d_ab
    base_coordinates_about_world_origin(hb, dw, Mb, Cb, gb, Md, P, nu)
    return 0


@njit(cache=True)
def base_coordinates_about_world_origin(hb, dw, Mb, Cb, gb, Md, P, nu):
    """The closed form's outputs with a free-flyer root's coordinates about its own origin o (``ν =
    X ν_o``, X the twist shift from the world origin to o) changed to the paper's, about the world
    origin: ``Xᵀ M̄ X``, ``Xᵀ C X``, ``Xᵀ M̄̇ X`` (X is constant), ``Xᵀ g``, ``P X`` and ``X⁻¹ ν``."""
    for i in range(1, hb[0, 0] + 1):
        if hb[i, HB_JTYPE] == FREEFLYER and hb[i, HB_PARENT] == 0:  # o = d_i: the root's position
            iv = hb[i, HB_IV]
            o = dw[i]
            to_world_origin(Mb, iv, o, True)
            to_world_origin(Cb, iv, o, True)
            to_world_origin(Md, iv, o, True)
            to_world_origin(P, iv, o, False)
            w0, w1, w2 = nu[iv], nu[iv + 1], nu[iv + 2]  # X⁻¹ ν: v − ω × o
            nu[iv + 3] -= w1 * o[2] - w2 * o[1]
            nu[iv + 4] -= w2 * o[0] - w0 * o[2]
            nu[iv + 5] -= w0 * o[1] - w1 * o[0]
            g0, g1, g2 = gb[iv + 3], gb[iv + 4], gb[iv + 5]  # Xᵀ g: moments about the world origin
            gb[iv] += o[1] * g2 - o[2] * g1
            gb[iv + 1] += o[2] * g0 - o[0] * g2
            gb[iv + 2] += o[0] * g1 - o[1] * g0


@njit(cache=True)
def to_world_origin(A, iv, o, left):
    """``A ← A X``, and then ``A ← Xᵀ A`` if ``left``, on the columns / rows ``iv … iv + 5`` (a base's
    spatial coordinates ``(ω; v)``), ``X`` the twist shift from the world origin to the point o (``v
    + ω × o``): right by X, each row's angular entries ``−=`` its linear ones × o; left by Xᵀ, each
    column's angular rows ``+=`` o × its linear rows."""
    for r in range(A.shape[0]):
        m3, m4, m5 = A[r, iv + 3], A[r, iv + 4], A[r, iv + 5]
        A[r, iv] -= m4 * o[2] - m5 * o[1]
        A[r, iv + 1] -= m5 * o[0] - m3 * o[2]
        A[r, iv + 2] -= m3 * o[1] - m4 * o[0]
    if left:
        for c in range(A.shape[1]):
            y0, y1, y2 = A[iv + 3, c], A[iv + 4, c], A[iv + 5, c]
            A[iv, c] += o[1] * y2 - o[2] * y1
            A[iv + 1, c] += o[2] * y0 - o[0] * y2
            A[iv + 2, c] += o[0] * y1 - o[1] * y0


def closed_form(model, data, q, v) -> ClosedForm:
    """``M̄``, ``C``, ``g``, ``M̄̇`` of the paper's closed-form equations of motion at ``(q, v)``
    (loopdyn coordinates in, the paper's ``ν`` out; see the module docstring for ``v = P ν``)."""
    hb, hf = prepare_tree(model, data)
    q = hv.as_array(q, "q", 1)
    v = hv.as_array(v, "v", 1)
    nv = hb[0, 2]
    out = (
        np.empty((nv, nv)),
        np.empty((nv, nv)),
        np.empty(nv),
        np.empty((nv, nv)),
        np.empty((nv, nv)),
        np.empty(nv),
    )
    st = closed_form_kernel(hb, hf, q, v, *out)
    if st:
        hv.raise_for_status(model, st, ("q", "v"), (f"({model.nq},)", f"({nv},)"))
    return ClosedForm(*out)


__all__ = ["ClosedForm", "closed_form"]
