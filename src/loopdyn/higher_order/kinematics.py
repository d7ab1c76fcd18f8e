"""Shared per-body building blocks of the higher-order kernels (spec §2.0, paper Alg. 1, D1–D9).

Everything is *spatial* (world frame, moments about the world origin), twists ordered (ω; v) and
wrenches (n; f), as in the paper. A joint's motion subspace is a set of columns rigidly attached to
its child body, so every column obeys ``Ṡ = ad_{V_child} S`` (D1; for 1-DoF joints this is the paper's
``ad_{V_j} S_j = ad_{V_p(j)} S_j``). This covers revolute, continuous, prismatic, spherical and
free-flyer joints with Pinocchio's velocity coordinates (child-frame angular / linear velocity).

Tables are indexed ``[order, body, ...]`` (body 0 = the world, at rest) or ``[order, column, 6]``.
A body's spatial inertia is kept as (mass, world centre of mass ``c``, world rotational inertia about
the origin ``Ī``) — ``M = [[Ī, m[c]], [m[c]ᵀ, m 1]]`` — so that ``M^(k)`` (D3) costs O(k) 3-vector and
3×3 operations instead of O(k) 6×6 products: ``c`` is a body-fixed point and ``Ī = J + m[c][c]ᵀ``
with ``J = R J_c Rᵀ``, ``J̇ = [ω]J − J[ω]``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..model.joints import FREEFLYER, PRISMATIC, REVOLUTE, REVOLUTE_UNBOUNDED, SPHERICAL
from .arrays import HB_IQ, HB_IV, HB_JTYPE, HB_NV, HB_PARENT, HF_AXIS, HF_COM, HF_IC, HF_JP, HF_JR, HF_MASS


@njit(cache=True)
def binomials(n):
    """Pascal's triangle ``C[a, b] = binom(a, b)`` for a, b ≤ n."""
    C = np.zeros((n + 1, n + 1))
    for a in range(n + 1):
        C[a, 0] = 1.0
        for b in range(1, a + 1):
            C[a, b] = C[a - 1, b - 1] + C[a - 1, b]
    return C


@njit(cache=True, inline="always")
def ad_into(V, s, out):
    """out = ad_V s = (ω×a ; v×a + ω×b) for V = (ω; v), s = (a; b)  (paper eq. 5)."""
    w0, w1, w2, v0, v1, v2 = V[0], V[1], V[2], V[3], V[4], V[5]
    a0, a1, a2, b0, b1, b2 = s[0], s[1], s[2], s[3], s[4], s[5]
    out[0] = w1 * a2 - w2 * a1
    out[1] = w2 * a0 - w0 * a2
    out[2] = w0 * a1 - w1 * a0
    out[3] = v1 * a2 - v2 * a1 + w1 * b2 - w2 * b1
    out[4] = v2 * a0 - v0 * a2 + w2 * b0 - w0 * b2
    out[5] = v0 * a1 - v1 * a0 + w0 * b1 - w1 * b0


@njit(cache=True)
def joint_local(hb, hf, i, q, Rl, pl):
    """Placement of body i in its parent: joint placement · joint motion(q) (Pinocchio's order)."""
    jt = hb[i, HB_JTYPE]
    iq = hb[i, HB_IQ]
    Rm = np.empty((3, 3))
    pm = np.zeros(3)
    if jt == REVOLUTE or jt == REVOLUTE_UNBOUNDED:
        if jt == REVOLUTE:
            c, s = math.cos(q[iq]), math.sin(q[iq])
        else:
            c, s = q[iq], q[iq + 1]
        x, y, z = hf[i, HF_AXIS], hf[i, HF_AXIS + 1], hf[i, HF_AXIS + 2]
        t = 1.0 - c
        Rm[0, 0], Rm[0, 1], Rm[0, 2] = c + t * x * x, t * x * y - s * z, t * x * z + s * y
        Rm[1, 0], Rm[1, 1], Rm[1, 2] = t * x * y + s * z, c + t * y * y, t * y * z - s * x
        Rm[2, 0], Rm[2, 1], Rm[2, 2] = t * x * z - s * y, t * y * z + s * x, c + t * z * z
    elif jt == PRISMATIC:
        for a in range(3):
            for b in range(3):
                Rm[a, b] = 1.0 if a == b else 0.0
            pm[a] = q[iq] * hf[i, HF_AXIS + a]
    else:  # SPHERICAL or FREEFLYER: unit quaternion (x, y, z, w)
        o = iq
        if jt == FREEFLYER:
            pm[0], pm[1], pm[2] = q[iq], q[iq + 1], q[iq + 2]
            o = iq + 3
        x, y, z, w = q[o], q[o + 1], q[o + 2], q[o + 3]
        Rm[0, 0], Rm[0, 1], Rm[0, 2] = 1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)
        Rm[1, 0], Rm[1, 1], Rm[1, 2] = 2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)
        Rm[2, 0], Rm[2, 1], Rm[2, 2] = 2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)
    for a in range(3):
        acc = hf[i, HF_JP + a]
        for b in range(3):
            acc += hf[i, HF_JR + 3 * a + b] * pm[b]
            s2 = 0.0
            for c2 in range(3):
                s2 += hf[i, HF_JR + 3 * a + c2] * Rm[c2, b]
            Rl[a, b] = s2
        pl[a] = acc


@njit(cache=True)
def pose_and_screws(hb, hf, i, q, Rw, pw, S):
    """World pose of body i at order 0 (``C_i = C_p(i) · placement · motion``, the PoE of Alg. 1
    line 5–6 written with local placements) and its world joint screws ``S_i = Ad_{C_i} S_local``."""
    par = hb[i, HB_PARENT]
    Rl = np.empty((3, 3))
    pl = np.empty(3)
    joint_local(hb, hf, i, q, Rl, pl)
    for a in range(3):
        acc = pw[0, par, a]
        for b in range(3):
            acc += Rw[0, par, a, b] * pl[b]
            s2 = 0.0
            for c in range(3):
                s2 += Rw[0, par, a, c] * Rl[c, b]
            Rw[0, i, a, b] = s2
        pw[0, i, a] = acc
    jt = hb[i, HB_JTYPE]
    iv = hb[i, HB_IV]
    for c in range(hb[i, HB_NV]):
        wl = np.zeros(3)  # local column (ω_l; v_l)
        vl = np.zeros(3)
        if jt == REVOLUTE or jt == REVOLUTE_UNBOUNDED:
            for a in range(3):
                wl[a] = hf[i, HF_AXIS + a]
        elif jt == PRISMATIC:
            for a in range(3):
                vl[a] = hf[i, HF_AXIS + a]
        elif jt == SPHERICAL:
            wl[c] = 1.0
        elif c < 3:  # free-flyer: (linear, angular) velocity in the child frame
            vl[c] = 1.0
        else:
            wl[c - 3] = 1.0
        col = S[0, iv + c]
        for a in range(3):
            w = 0.0
            v = 0.0
            for b in range(3):
                w += Rw[0, i, a, b] * wl[b]
                v += Rw[0, i, a, b] * vl[b]
            col[a] = w
            col[3 + a] = v
        p = pw[0, i]  # Ad_C (ω; v) = (Rω ; p × Rω + R v)
        col[3] += p[1] * col[2] - p[2] * col[1]
        col[4] += p[2] * col[0] - p[0] * col[2]
        col[5] += p[0] * col[1] - p[1] * col[0]


@njit(cache=True)
def screw_derivative(hb, i, k, C, V, S):
    """D1: ``S^(k) = Σ_{m<k} binom(k−1, m) ad_{V_i^(m)} S^(k−1−m)`` for the columns of joint i."""
    iv = hb[i, HB_IV]
    tmp = np.empty(6)
    for c in range(iv, iv + hb[i, HB_NV]):
        for a in range(6):
            S[k, c, a] = 0.0
        for m in range(k):
            ad_into(V[m, i], S[k - 1 - m, c], tmp)
            f = C[k - 1, m]
            for a in range(6):
                S[k, c, a] += f * tmp[a]


@njit(cache=True)
def twist_bias(hb, i, k, C, S, vd, out):
    """D6 generalised: ``out = Σ_{m=1}^{k} binom(k, m) S^(m) v^(k−m)`` (``V_bias,i^(k)``)."""
    iv = hb[i, HB_IV]
    for a in range(6):
        out[a] = 0.0
    for m in range(1, k + 1):
        for c in range(hb[i, HB_NV]):
            f = C[k, m] * vd[k - m, iv + c]
            for a in range(6):
                out[a] += f * S[m, iv + c, a]


@njit(cache=True)
def body_derivative(hf, i, k, C, V, Rw, pw, cw, Jw, Ib):
    """Order-k derivatives of body i's pose and inertia parameters from its twists ``V^(0..k−1)``:
    ``R^(k)`` (eq. 20 for the rotation: ``Ṙ = [ω]R``), the body origin ``p^(k)`` and centre of mass
    ``c^(k)`` (body-fixed points: ``ṗ = v + ω×p``), ``J^(k)`` and ``Ī^(k)`` (D3 in these parameters)."""
    m_ = hf[i, HF_MASS]
    if k == 0:
        for a in range(3):
            cw[0, i, a] = pw[0, i, a]
            for b in range(3):
                cw[0, i, a] += Rw[0, i, a, b] * hf[i, HF_COM + b]
        for a in range(3):
            for b in range(3):
                acc = 0.0
                for c in range(3):
                    for d in range(3):
                        acc += Rw[0, i, a, c] * hf[i, HF_IC + 3 * c + d] * Rw[0, i, b, d]
                Jw[0, i, a, b] = acc
    else:
        for a in range(3):
            for b in range(3):
                Rw[k, i, a, b] = 0.0
                Jw[k, i, a, b] = 0.0
        for a in range(3):  # p^(k) = v^(k−1) + Σ binom(k−1, m) ω^(m) × p^(k−1−m)
            pw[k, i, a] = V[k - 1, i, 3 + a]
        for m in range(k):
            f = C[k - 1, m]
            w = V[m, i]
            for a in range(3):
                a1, a2 = (a + 1) % 3, (a + 2) % 3
                pw[k, i, a] += f * (w[a1] * pw[k - 1 - m, i, a2] - w[a2] * pw[k - 1 - m, i, a1])
                for b in range(3):  # [ω] X: column-wise cross products
                    Rw[k, i, a, b] += f * (w[a1] * Rw[k - 1 - m, i, a2, b] - w[a2] * Rw[k - 1 - m, i, a1, b])
                    jx = w[a1] * Jw[k - 1 - m, i, a2, b] - w[a2] * Jw[k - 1 - m, i, a1, b]
                    Jw[k, i, a, b] += f * jx
        for a in range(3):  # J^(k) = Σ ([ω]J − J[ω]) = X + Xᵀ with X = Σ [ω]J (J symmetric)
            for b in range(a, 3):
                s = Jw[k, i, a, b] + Jw[k, i, b, a]
                Jw[k, i, a, b] = s
                Jw[k, i, b, a] = s
        for a in range(3):
            cw[k, i, a] = pw[k, i, a]
            for b in range(3):
                cw[k, i, a] += Rw[k, i, a, b] * hf[i, HF_COM + b]
    # Ī^(k) = J^(k) + m Σ_l binom(k, l) [c^(l)][c^(k−l)]ᵀ, with [a][b]ᵀ = (a·b) 1 − b aᵀ
    for a in range(3):
        for b in range(3):
            Ib[k, i, a, b] = Jw[k, i, a, b]
    for l in range(k + 1):
        f = m_ * C[k, l]
        x = cw[l, i]
        y = cw[k - l, i]
        d = x[0] * y[0] + x[1] * y[1] + x[2] * y[2]
        for a in range(3):
            Ib[k, i, a, a] += f * d
            for b in range(3):
                Ib[k, i, a, b] -= f * y[a] * x[b]


@njit(cache=True)
def inertia_mul_add(hf, i, j, Ib, cw, x, f, out):
    """out += f · M_i^(j) x, with ``M = [[Ī, m[c]], [m[c]ᵀ, m 1]]`` differentiated j times."""
    m_ = hf[i, HF_MASS]
    c = cw[j, i]
    I = Ib[j, i]
    for a in range(3):
        a1, a2 = (a + 1) % 3, (a + 2) % 3
        top = I[a, 0] * x[0] + I[a, 1] * x[1] + I[a, 2] * x[2] + m_ * (c[a1] * x[3 + a2] - c[a2] * x[3 + a1])
        bot = -m_ * (c[a1] * x[a2] - c[a2] * x[a1])
        if j == 0:
            bot += m_ * x[3 + a]
        out[a] += f * top
        out[3 + a] += f * bot


@njit(cache=True)
def applied_wrench_sub(hf, fext, i, r, C, g, Rw, pw, cw, F, out):
    """out −= W_grav,i^(r) + W_app,i^(r) (spatial). Gravity: ``M^(r) G⁰ = (m c^(r) × g ; δ_r0 m g)``
    (D7). Applied: ``fext[k, i] = (f; n)`` in body i's frame (Pinocchio's layout); its spatial image is
    ``(R n + p × R f ; R f)``, differentiated by Leibniz with ``R^(m)``, ``p^(m)`` (D9)."""
    m_ = hf[i, HF_MASS]
    c = cw[r, i]
    for a in range(3):
        a1, a2 = (a + 1) % 3, (a + 2) % 3
        out[a] -= m_ * (c[a1] * g[a2] - c[a2] * g[a1])
        if r == 0:
            out[3 + a] -= m_ * g[a]
    if fext.shape[0] == 0:
        return
    for a in range(3):
        F[r, i, a] = 0.0
    nn = np.zeros(3)
    for m in range(r + 1):
        f = C[r, m]
        fe = fext[r - m, i]
        for a in range(3):
            for b in range(3):
                F[r, i, a] += f * Rw[m, i, a, b] * fe[b]
                nn[a] += f * Rw[m, i, a, b] * fe[3 + b]
    for m in range(r + 1):
        f = C[r, m]
        p = pw[m, i]
        Fm = F[r - m, i]
        for a in range(3):
            a1, a2 = (a + 1) % 3, (a + 2) % 3
            nn[a] += f * (p[a1] * Fm[a2] - p[a2] * Fm[a1])
    for a in range(3):
        out[a] -= nn[a]
        out[3 + a] -= F[r, i, a]


@njit(cache=True)
def momentum_derivative(hf, i, n, kmax, C, V, Ib, cw, out):
    """out = Σ_{m=0}^{kmax} binom(n, m) M^(n−m) V^(m)  (D4 with kmax = n; D5 with kmax = n − 1)."""
    for a in range(6):
        out[a] = 0.0
    for m in range(kmax + 1):
        inertia_mul_add(hf, i, n - m, Ib, cw, V[m, i], C[n, m], out)
