"""Shared per-body building blocks of the higher-order kernels (spec §2.0, paper Alg. 1, D1–D9).

Everything is *spatial* as in the paper — twists ordered (ω; v), wrenches (n; f), world axes — but
each body's quantities are referred to a point of its own: the position ``o_i`` of its frame's origin
at the instant of the call, a point fixed in the inertial frame. Body i's twists, joint screws,
inertia and wrenches are those of the paper written in the inertial frame parallel to the world with
origin ``o_i``. The recursions hold in every inertial frame, and a constant change of inertial frame
commutes with every time derivative (``Ad_X ad_V Ad_X⁻¹ = ad_{Ad_X V}``), so the only new operation is
the pure translation by ``d_i = o_i − o_p(i)`` (world axes) where a quantity crosses from a parent to
a child: a twist's linear part gains ``ω × d_i`` (:func:`twist_shift`), a wrench's moment ``d_i × f``
(:func:`wrench_shift_add`), an inertia the congruence of both (:func:`inertia_shift_add`; a block
of a cluster's, :func:`block_shift_add`). Nothing depends on where the robot is: the free-flyer's
position enters only ``d`` of the root, which nothing reads. And nothing is large: a world-origin
formulation carries twists ``v = ω × p`` and inertias ``m[c][c]ᵀ`` that grow with the distance from
the origin and cancel in every projection, losing digits in proportion (issue #29: 7 % at third
order a kilometre from the origin).

A joint's motion subspace is a set of columns rigidly attached to its child body, so every column
obeys ``Ṡ = ad_{V_child} S`` (D1; for 1-DoF joints this is the paper's ``ad_{V_j} S_j = ad_{V_p(j)}
S_j``). This covers revolute, continuous, prismatic, spherical and free-flyer joints with Pinocchio's
velocity coordinates (child-frame angular / linear velocity); about the child's origin a rotation's
column is ``(r; 0)``, a translation's ``(0; r)``.

Tables are indexed ``[order, body, ...]`` (body 0 = the world, at rest) or ``[order, column, 6]``.
A body's spatial inertia is kept as (mass, centre of mass ``c`` relative to ``o_i``, rotational
inertia ``Ī`` about ``o_i``) — ``M = [[Ī, m[c]], [m[c]ᵀ, m 1]]`` — so that ``M^(k)`` (D3) costs O(k)
3-vector and 3×3 operations instead of O(k) 6×6 products: ``c`` is a body-fixed point and ``Ī = J +
m[c][c]ᵀ`` with ``J = R J_c Rᵀ``, ``J̇ = [ω]J − J[ω]``.
"""

from __future__ import annotations

import math

import numpy as np

from ..algorithms.borrow import view
from ..jit import inlined, njit
from ..model.joints import FREEFLYER, PRISMATIC, REVOLUTE, REVOLUTE_UNBOUNDED, SPHERICAL
from .arrays import HB_IQ, HB_IV, HB_JTYPE, HB_NV, HB_PARENT, HF_AXIS, HF_COM, HF_IC, HF_JP, HF_JR, HF_MASS


@njit(cache=True)
def binomials(n):
    """Pascal's triangle ``C[a, b] = binom(a, b)`` for a, b ≤ n."""
    C = np.empty((n + 1, n + 1))
    fill_binomials(C)
    return C


@inlined
def fill_binomials(C):
    """Pascal's triangle into the square array ``C``."""
    n = C.shape[0] - 1
    C[:, :] = 0.0
    for a in range(n + 1):
        C[a, 0] = 1.0
        for b in range(1, a + 1):
            C[a, b] = C[a - 1, b - 1] + C[a - 1, b]


@inlined
def joint_local(hb, hf, i, q):
    """Placement of body i in its parent, joint placement · joint motion(q) (Pinocchio's order), as
    a 12-tuple: row-major rotation, translation."""
    jt = hb[i, HB_JTYPE]
    iq = hb[i, HB_IQ]
    p0 = p1 = p2 = 0.0
    if jt == REVOLUTE or jt == REVOLUTE_UNBOUNDED:
        if jt == REVOLUTE:
            c, s = math.cos(q[iq]), math.sin(q[iq])
        else:
            c, s = q[iq], q[iq + 1]
        x, y, z = hf[i, HF_AXIS], hf[i, HF_AXIS + 1], hf[i, HF_AXIS + 2]
        t = 1.0 - c
        m = (c + t * x * x, t * x * y - s * z, t * x * z + s * y,
             t * x * y + s * z, c + t * y * y, t * y * z - s * x,
             t * x * z - s * y, t * y * z + s * x, c + t * z * z)  # fmt: skip
    elif jt == PRISMATIC:
        m = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0)
        p0, p1, p2 = q[iq] * hf[i, HF_AXIS], q[iq] * hf[i, HF_AXIS + 1], q[iq] * hf[i, HF_AXIS + 2]
    else:  # SPHERICAL or FREEFLYER: unit quaternion (x, y, z, w)
        o = iq
        if jt == FREEFLYER:
            p0, p1, p2 = q[iq], q[iq + 1], q[iq + 2]
            o = iq + 3
        x, y, z, w = q[o], q[o + 1], q[o + 2], q[o + 3]
        m = (1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w),
             2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w),
             2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y))  # fmt: skip
    J = hf[i, HF_JR : HF_JR + 9]
    t0 = hf[i, HF_JP] + J[0] * p0 + J[1] * p1 + J[2] * p2
    t1 = hf[i, HF_JP + 1] + J[3] * p0 + J[4] * p1 + J[5] * p2
    t2 = hf[i, HF_JP + 2] + J[6] * p0 + J[7] * p1 + J[8] * p2
    return (
        J[0] * m[0] + J[1] * m[3] + J[2] * m[6], J[0] * m[1] + J[1] * m[4] + J[2] * m[7],
        J[0] * m[2] + J[1] * m[5] + J[2] * m[8],
        J[3] * m[0] + J[4] * m[3] + J[5] * m[6], J[3] * m[1] + J[4] * m[4] + J[5] * m[7],
        J[3] * m[2] + J[4] * m[5] + J[5] * m[8],
        J[6] * m[0] + J[7] * m[3] + J[8] * m[6], J[6] * m[1] + J[7] * m[4] + J[8] * m[7],
        J[6] * m[2] + J[7] * m[5] + J[8] * m[8],
        t0, t1, t2,
    )  # fmt: skip


@inlined
def pose_and_screws(hb, hf, i, q, Rw, pw, dw, S):
    """Body i at order 0 (Alg. 1 lines 5–6 written with local placements): its world rotation ``R_i
    = R_p(i) · placement · motion``, the offset ``d_i = o_i − o_p(i)`` of its origin from its parent's
    (world axes) into ``dw[i]``, its origin ``p_i = 0`` (quantities are about ``o_i``) and its joint
    screws about ``o_i``: ``(r; 0)`` for a rotation about the world axis r, ``(0; r)`` for a
    translation."""
    par = hb[i, HB_PARENT]
    L = joint_local(hb, hf, i, q)
    P = Rw[0, par]  # the parent's rotation, loaded once (the tables share one buffer: every store
    a00, a01, a02, a10, a11, a12 = P[0, 0], P[0, 1], P[0, 2], P[1, 0], P[1, 1], P[1, 2]  # would
    a20, a21, a22 = P[2, 0], P[2, 1], P[2, 2]  # force a reload)
    R = (
        a00 * L[0] + a01 * L[3] + a02 * L[6], a00 * L[1] + a01 * L[4] + a02 * L[7],
        a00 * L[2] + a01 * L[5] + a02 * L[8],
        a10 * L[0] + a11 * L[3] + a12 * L[6], a10 * L[1] + a11 * L[4] + a12 * L[7],
        a10 * L[2] + a11 * L[5] + a12 * L[8],
        a20 * L[0] + a21 * L[3] + a22 * L[6], a20 * L[1] + a21 * L[4] + a22 * L[7],
        a20 * L[2] + a21 * L[5] + a22 * L[8],
    )  # fmt: skip
    dw[i, 0] = a00 * L[9] + a01 * L[10] + a02 * L[11]
    dw[i, 1] = a10 * L[9] + a11 * L[10] + a12 * L[11]
    dw[i, 2] = a20 * L[9] + a21 * L[10] + a22 * L[11]
    Ri = Rw[0, i]
    Ri[0, 0], Ri[0, 1], Ri[0, 2] = R[0], R[1], R[2]
    Ri[1, 0], Ri[1, 1], Ri[1, 2] = R[3], R[4], R[5]
    Ri[2, 0], Ri[2, 1], Ri[2, 2] = R[6], R[7], R[8]
    pw[0, i, 0], pw[0, i, 1], pw[0, i, 2] = 0.0, 0.0, 0.0
    jt = hb[i, HB_JTYPE]
    iv = hb[i, HB_IV]
    if jt == REVOLUTE or jt == REVOLUTE_UNBOUNDED or jt == PRISMATIC:  # one unit axis
        x, y, z = hf[i, HF_AXIS], hf[i, HF_AXIS + 1], hf[i, HF_AXIS + 2]
        screw_column(
            R[0] * x + R[1] * y + R[2] * z,
            R[3] * x + R[4] * y + R[5] * z,
            R[6] * x + R[7] * y + R[8] * z,
            jt != PRISMATIC, S[0, iv],
        )  # fmt: skip
    else:  # spherical: the three rotation axes; free flyer: the three translations, then rotations
        first_angular = 0 if jt == SPHERICAL else 3
        for c in range(hb[i, HB_NV]):
            k = c % 3
            screw_column(R[k], R[3 + k], R[6 + k], c >= first_angular, S[0, iv + c])


@inlined
def screw_column(r0, r1, r2, angular, col):
    """The screw about the body's origin of a unit local axis with world image ``r``: ``(r ; 0)`` for
    a rotation, ``(0 ; r)`` for a translation."""
    if angular:
        col[0], col[1], col[2] = r0, r1, r2
        col[3], col[4], col[5] = 0.0, 0.0, 0.0
    else:
        col[0], col[1], col[2] = 0.0, 0.0, 0.0
        col[3], col[4], col[5] = r0, r1, r2


@inlined
def twist_shift(x, d):
    """The twist ``x = (ω; v)`` about a point o, referred to the point ``o + d``: ``(ω; v + ω × d)``."""
    w0, w1, w2 = x[0], x[1], x[2]
    return (
        w0, w1, w2,
        x[3] + w1 * d[2] - w2 * d[1], x[4] + w2 * d[0] - w0 * d[2], x[5] + w0 * d[1] - w1 * d[0],
    )  # fmt: skip


@inlined
def twist_shift_add(x, d, out):
    """``out += (ω; v + ω × d)``: the twist ``x = (ω; v)`` about a point o added about ``o + d``."""
    w0, w1, w2 = x[0], x[1], x[2]
    out[0] += w0
    out[1] += w1
    out[2] += w2
    out[3] += x[3] + w1 * d[2] - w2 * d[1]
    out[4] += x[4] + w2 * d[0] - w0 * d[2]
    out[5] += x[5] + w0 * d[1] - w1 * d[0]


@inlined
def wrench_shift_add(n0, n1, n2, f0, f1, f2, d, out):
    """``out += (n + d × f ; f)``: the wrench ``(n; f)`` about a point ``o + d`` added about o."""
    out[0] += n0 + d[1] * f2 - d[2] * f1
    out[1] += n1 + d[2] * f0 - d[0] * f2
    out[2] += n2 + d[0] * f1 - d[1] * f0
    out[3] += f0
    out[4] += f1
    out[5] += f2


@inlined
def block_shift_add(M, da, db, out, ro, co):
    """``out[ro:ro+6, co:co+6] += X_aᵀ M X_b`` for a 6×6 ``M`` mapping twists about ``o + db`` to
    wrenches about ``o + da``, ``X`` the twist shift of :func:`twist_shift`: the same map about o
    (``M`` is overwritten with ``M X_b``). With ``[d]`` the cross-product matrix, ``M X_b`` has the
    left columns ``M[:, :3] − M[:, 3:] [db]`` (row r: ``M[r, :3] − M[r, 3:] × db``) and ``X_aᵀ N`` the
    top rows ``N[:3] + [da] N[3:]`` (column c: ``N[:3, c] + da × N[3:, c]``)."""
    for r in range(6):
        m3, m4, m5 = M[r, 3], M[r, 4], M[r, 5]
        M[r, 0] -= m4 * db[2] - m5 * db[1]
        M[r, 1] -= m5 * db[0] - m3 * db[2]
        M[r, 2] -= m3 * db[1] - m4 * db[0]
    for c in range(6):
        y0, y1, y2 = M[3, c], M[4, c], M[5, c]
        out[ro, co + c] += M[0, c] + da[1] * y2 - da[2] * y1
        out[ro + 1, co + c] += M[1, c] + da[2] * y0 - da[0] * y2
        out[ro + 2, co + c] += M[2, c] + da[0] * y1 - da[1] * y0
        out[ro + 3, co + c] += y0
        out[ro + 4, co + c] += y1
        out[ro + 5, co + c] += y2


@inlined
def inertia_shift_add(M, mo, d, out, o):
    """``out[o:o+6, o:o+6] += Xᵀ M X`` for the symmetric 6×6 block ``M[mo:mo+6, mo:mo+6]`` about the
    point ``p + d`` (an inertia), ``X`` the twist shift of :func:`twist_shift`: the same inertia about
    p. With ``M = [[A, B], [Bᵀ, E]]``, ``[d]`` the cross-product matrix and ``H = [d] E``: ``B' = B +
    H`` and ``A' = A − G − Gᵀ`` with ``G = (B + H/2) [d]`` (row r: ``(B + H/2)[r] × d``), E unchanged.
    The lower-left block of ``M`` is not read."""
    d0, d1, d2 = d[0], d[1], d[2]
    for r in range(3):
        if r == 0:  # row r of [d] = (sa at column ca, sb at column cb): H[r] = sa E[ca] + sb E[cb]
            sa, ca, sb, cb = -d2, 1, d1, 2
        elif r == 1:
            sa, ca, sb, cb = d2, 0, -d0, 2
        else:
            sa, ca, sb, cb = -d1, 0, d0, 1
        ea, eb = mo + 3 + ca, mo + 3 + cb
        h0 = sa * M[ea, mo + 3] + sb * M[eb, mo + 3]
        h1 = sa * M[ea, mo + 4] + sb * M[eb, mo + 4]
        h2 = sa * M[ea, mo + 5] + sb * M[eb, mo + 5]
        b0, b1, b2 = M[mo + r, mo + 3] + h0, M[mo + r, mo + 4] + h1, M[mo + r, mo + 5] + h2  # B'[r]
        out[o + r, o + 3] += b0
        out[o + r, o + 4] += b1
        out[o + r, o + 5] += b2
        out[o + 3, o + r] += b0
        out[o + 4, o + r] += b1
        out[o + 5, o + r] += b2
        k0, k1, k2 = b0 - 0.5 * h0, b1 - 0.5 * h1, b2 - 0.5 * h2
        g0, g1, g2 = k1 * d2 - k2 * d1, k2 * d0 - k0 * d2, k0 * d1 - k1 * d0  # G[r]
        out[o + r, o] += M[mo + r, mo] - g0
        out[o + r, o + 1] += M[mo + r, mo + 1] - g1
        out[o + r, o + 2] += M[mo + r, mo + 2] - g2
        out[o, o + r] -= g0
        out[o + 1, o + r] -= g1
        out[o + 2, o + r] -= g2
        for c in range(3):
            out[o + 3 + r, o + 3 + c] += M[mo + 3 + r, mo + 3 + c]


@inlined
def screw_derivative(hb, i, k, C, V, S):
    """D1: ``S^(k) = Σ_{m<k} binom(k−1, m) ad_{V_i^(m)} S^(k−1−m)`` for the columns of joint i."""
    iv = hb[i, HB_IV]
    for c in range(iv, iv + hb[i, HB_NV]):
        x0 = x1 = x2 = y0 = y1 = y2 = 0.0
        for m in range(k):
            w = V[m, i]
            s = S[k - 1 - m, c]
            f = C[k - 1, m]
            x0 += f * (w[1] * s[2] - w[2] * s[1])
            x1 += f * (w[2] * s[0] - w[0] * s[2])
            x2 += f * (w[0] * s[1] - w[1] * s[0])
            y0 += f * (w[4] * s[2] - w[5] * s[1] + w[1] * s[5] - w[2] * s[4])
            y1 += f * (w[5] * s[0] - w[3] * s[2] + w[2] * s[3] - w[0] * s[5])
            y2 += f * (w[3] * s[1] - w[4] * s[0] + w[0] * s[4] - w[1] * s[3])
        S[k, c, 0], S[k, c, 1], S[k, c, 2] = x0, x1, x2
        S[k, c, 3], S[k, c, 4], S[k, c, 5] = y0, y1, y2


@inlined
def twist_bias(hb, i, k, C, S, vd, out):
    """D6 generalised: ``out = Σ_{m=1}^{k} binom(k, m) S^(m) v^(k−m)`` (``V_bias,i^(k)``)."""
    iv = hb[i, HB_IV]
    o0 = o1 = o2 = o3 = o4 = o5 = 0.0  # accumulated in registers
    for m in range(1, k + 1):
        for c in range(iv, iv + hb[i, HB_NV]):
            f = C[k, m] * vd[k - m, c]
            s = S[m, c]
            o0 += f * s[0]
            o1 += f * s[1]
            o2 += f * s[2]
            o3 += f * s[3]
            o4 += f * s[4]
            o5 += f * s[5]
    out[0], out[1], out[2], out[3], out[4], out[5] = o0, o1, o2, o3, o4, o5


@inlined
def body_derivative(hf, i, k, C, V, Rw, pw, cw, Jw, Ib, pose):
    """Order-k derivatives of body i's pose and inertia parameters from its twists ``V^(0..k−1)``:
    ``R^(k)`` (eq. 20 for the rotation: ``Ṙ = [ω]R``), the body origin ``p^(k)`` and centre of mass
    ``c^(k)`` (body-fixed points: ``ṗ = v + ω×p``), ``J^(k)`` and ``Ī^(k)`` (D3 in these parameters).
    ``R^(k)`` and ``p^(k)`` (k ≥ 1) only if ``pose`` (they serve body-frame applied forces only)."""
    pose_derivative(hf, i, k, C, V, Rw, pw, cw, Jw, pose)
    inertia_about_origin(hf, i, k, C, cw, Jw, Ib)


@inlined
def pose_derivative(hf, i, k, C, V, Rw, pw, cw, Jw, pose):
    """:func:`body_derivative` without ``Ī^(k)``: ``c^(k)``, ``J^(k)`` (and ``R^(k)``, ``p^(k)`` if
    ``pose``), all :func:`momentum_com` needs."""
    if k == 0:
        centre_and_rotated_inertia(hf, i, Rw[0, i], cw[0, i], Jw[0, i])
    else:
        centre_and_inertia_derivative(i, k, C, V, cw, Jw)
        if pose:
            pose_rate_derivative(i, k, C, V, Rw, pw)


@inlined
def centre_and_rotated_inertia(hf, i, R, c, J):
    """Order 0: the centre of mass relative to the body's origin ``c = R c_b`` and ``J = R J_c Rᵀ``
    (world axes), from locals (the tables share one buffer: each store would otherwise force the
    reload of ``R``)."""
    r00, r01, r02, r10, r11, r12 = R[0, 0], R[0, 1], R[0, 2], R[1, 0], R[1, 1], R[1, 2]
    r20, r21, r22 = R[2, 0], R[2, 1], R[2, 2]
    b0, b1, b2 = hf[i, HF_COM], hf[i, HF_COM + 1], hf[i, HF_COM + 2]
    c[0] = r00 * b0 + r01 * b1 + r02 * b2
    c[1] = r10 * b0 + r11 * b1 + r12 * b2
    c[2] = r20 * b0 + r21 * b1 + r22 * b2
    j00, j01, j02 = hf[i, HF_IC], hf[i, HF_IC + 1], hf[i, HF_IC + 2]
    j10, j11, j12 = hf[i, HF_IC + 3], hf[i, HF_IC + 4], hf[i, HF_IC + 5]
    j20, j21, j22 = hf[i, HF_IC + 6], hf[i, HF_IC + 7], hf[i, HF_IC + 8]
    # T = R J_c, row by row, then J = T Rᵀ (symmetric: the upper triangle, mirrored)
    t00, t01, t02 = (
        r00 * j00 + r01 * j10 + r02 * j20,
        r00 * j01 + r01 * j11 + r02 * j21,
        r00 * j02 + r01 * j12 + r02 * j22,
    )
    t10, t11, t12 = (
        r10 * j00 + r11 * j10 + r12 * j20,
        r10 * j01 + r11 * j11 + r12 * j21,
        r10 * j02 + r11 * j12 + r12 * j22,
    )
    t20, t21, t22 = (
        r20 * j00 + r21 * j10 + r22 * j20,
        r20 * j01 + r21 * j11 + r22 * j21,
        r20 * j02 + r21 * j12 + r22 * j22,
    )
    J[0, 0] = t00 * r00 + t01 * r01 + t02 * r02
    J[1, 1] = t10 * r10 + t11 * r11 + t12 * r12
    J[2, 2] = t20 * r20 + t21 * r21 + t22 * r22
    J[0, 1] = J[1, 0] = t00 * r10 + t01 * r11 + t02 * r12
    J[0, 2] = J[2, 0] = t00 * r20 + t01 * r21 + t02 * r22
    J[1, 2] = J[2, 1] = t10 * r20 + t11 * r21 + t12 * r22


@inlined
def centre_and_inertia_derivative(i, k, C, V, cw, Jw):
    """k ≥ 1: ``c^(k) = v^(k−1) + Σ_m binom(k−1, m) ω^(m) × c^(k−1−m)`` (a body-fixed point) and
    ``J^(k) = X + Xᵀ``, ``X = Σ_m binom(k−1, m) [ω^(m)] J^(k−1−m)`` (J symmetric), accumulated in
    registers and stored once."""
    c0, c1, c2 = V[k - 1, i, 3], V[k - 1, i, 4], V[k - 1, i, 5]
    x00 = x01 = x02 = x10 = x11 = x12 = x20 = x21 = x22 = 0.0
    for m in range(k):
        f = C[k - 1, m]
        w0, w1, w2 = f * V[m, i, 0], f * V[m, i, 1], f * V[m, i, 2]
        j = k - 1 - m
        y0, y1, y2 = cw[j, i, 0], cw[j, i, 1], cw[j, i, 2]
        c0 += w1 * y2 - w2 * y1
        c1 += w2 * y0 - w0 * y2
        c2 += w0 * y1 - w1 * y0
        J = Jw[j, i]  # symmetric: its upper triangle is read
        j00, j01, j02, j11, j12, j22 = J[0, 0], J[0, 1], J[0, 2], J[1, 1], J[1, 2], J[2, 2]
        y0, y1, y2 = j00, j01, j02  # [ω] J, column by column
        x00 += w1 * y2 - w2 * y1
        x10 += w2 * y0 - w0 * y2
        x20 += w0 * y1 - w1 * y0
        y0, y1, y2 = j01, j11, j12
        x01 += w1 * y2 - w2 * y1
        x11 += w2 * y0 - w0 * y2
        x21 += w0 * y1 - w1 * y0
        y0, y1, y2 = j02, j12, j22
        x02 += w1 * y2 - w2 * y1
        x12 += w2 * y0 - w0 * y2
        x22 += w0 * y1 - w1 * y0
    cw[k, i, 0], cw[k, i, 1], cw[k, i, 2] = c0, c1, c2
    J = Jw[k, i]
    J[0, 0], J[1, 1], J[2, 2] = x00 + x00, x11 + x11, x22 + x22
    s01, s02, s12 = x01 + x10, x02 + x20, x12 + x21
    J[0, 1], J[1, 0], J[0, 2], J[2, 0], J[1, 2], J[2, 1] = s01, s01, s02, s02, s12, s12


@inlined
def pose_rate_derivative(i, k, C, V, Rw, pw):
    """k ≥ 1: ``R^(k)`` (``Ṙ = [ω]R``) and the body origin ``p^(k)`` (``ṗ = v + ω × p``), by Leibniz;
    only for applied forces given in the body frame."""
    for a in range(3):
        pw[k, i, a] = V[k - 1, i, 3 + a]
        for b in range(3):
            Rw[k, i, a, b] = 0.0
    for m in range(k):
        f = C[k - 1, m]
        w0, w1, w2 = f * V[m, i, 0], f * V[m, i, 1], f * V[m, i, 2]
        j = k - 1 - m
        x0, x1, x2 = pw[j, i, 0], pw[j, i, 1], pw[j, i, 2]
        pw[k, i, 0] += w1 * x2 - w2 * x1
        pw[k, i, 1] += w2 * x0 - w0 * x2
        pw[k, i, 2] += w0 * x1 - w1 * x0
        for b in range(3):
            x0, x1, x2 = Rw[j, i, 0, b], Rw[j, i, 1, b], Rw[j, i, 2, b]
            Rw[k, i, 0, b] += w1 * x2 - w2 * x1
            Rw[k, i, 1, b] += w2 * x0 - w0 * x2
            Rw[k, i, 2, b] += w0 * x1 - w1 * x0


@inlined
def inertia_about_origin(hf, i, k, C, cw, Jw, Ib):
    """``Ī^(k) = J^(k) + m Σ_l binom(k, l) [c^(l)][c^(k−l)]ᵀ`` (D3), with ``[a][b]ᵀ = (a·b) 1 − b aᵀ``."""
    m_ = hf[i, HF_MASS]
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


@inlined
def inertia_mul_add(hf, i, j, Ib, cw, x, f, out):
    """out += f · M_i^(j) x, with ``M = [[Ī, m[c]], [m[c]ᵀ, m 1]]`` differentiated j times."""
    m_ = hf[i, HF_MASS]
    c0, c1, c2 = m_ * cw[j, i, 0], m_ * cw[j, i, 1], m_ * cw[j, i, 2]
    x0, x1, x2, x3, x4, x5 = x[0], x[1], x[2], x[3], x[4], x[5]
    out[0] += f * (Ib[j, i, 0, 0] * x0 + Ib[j, i, 0, 1] * x1 + Ib[j, i, 0, 2] * x2 + c1 * x5 - c2 * x4)
    out[1] += f * (Ib[j, i, 1, 0] * x0 + Ib[j, i, 1, 1] * x1 + Ib[j, i, 1, 2] * x2 + c2 * x3 - c0 * x5)
    out[2] += f * (Ib[j, i, 2, 0] * x0 + Ib[j, i, 2, 1] * x1 + Ib[j, i, 2, 2] * x2 + c0 * x4 - c1 * x3)
    b0, b1, b2 = c2 * x1 - c1 * x2, c0 * x2 - c2 * x0, c1 * x0 - c0 * x1  # −m c × ω
    if j == 0:
        b0 += m_ * x3
        b1 += m_ * x4
        b2 += m_ * x5
    out[3] += f * b0
    out[4] += f * b1
    out[5] += f * b2


@inlined
def applied_wrench_sub(hf, fext, i, r, C, g, Rw, pw, cw, F, out):
    """out −= W_grav,i^(r) + W_app,i^(r) (spatial). Gravity: ``M^(r) G⁰ = (m c^(r) × g ; δ_r0 m g)``
    (D7). Applied: ``fext[k, i] = (f; n)`` in body i's frame (Pinocchio's layout); its spatial image is
    ``(R n + p × R f ; R f)``, differentiated by Leibniz with ``R^(m)``, ``p^(m)`` (D9)."""
    m_ = hf[i, HF_MASS]
    c0, c1, c2 = cw[r, i, 0], cw[r, i, 1], cw[r, i, 2]
    g0, g1, g2 = g[0], g[1], g[2]
    out[0] -= m_ * (c1 * g2 - c2 * g1)
    out[1] -= m_ * (c2 * g0 - c0 * g2)
    out[2] -= m_ * (c0 * g1 - c1 * g0)
    if r == 0:
        out[3] -= m_ * g0
        out[4] -= m_ * g1
        out[5] -= m_ * g2
    if fext.shape[0] == 0:
        return
    for a in range(3):
        F[r, i, a] = 0.0
    n0 = n1 = n2 = 0.0
    for m in range(r + 1):
        f = C[r, m]
        fe = fext[r - m, i]
        Rm = Rw[m, i]
        for a in range(3):
            F[r, i, a] += f * (Rm[a, 0] * fe[0] + Rm[a, 1] * fe[1] + Rm[a, 2] * fe[2])
        n0 += f * (Rm[0, 0] * fe[3] + Rm[0, 1] * fe[4] + Rm[0, 2] * fe[5])
        n1 += f * (Rm[1, 0] * fe[3] + Rm[1, 1] * fe[4] + Rm[1, 2] * fe[5])
        n2 += f * (Rm[2, 0] * fe[3] + Rm[2, 1] * fe[4] + Rm[2, 2] * fe[5])
    for m in range(r + 1):
        f = C[r, m]
        p = pw[m, i]
        Fm = F[r - m, i]
        n0 += f * (p[1] * Fm[2] - p[2] * Fm[1])
        n1 += f * (p[2] * Fm[0] - p[0] * Fm[2])
        n2 += f * (p[0] * Fm[1] - p[1] * Fm[0])
    out[0] -= n0
    out[1] -= n1
    out[2] -= n2
    for a in range(3):
        out[3 + a] -= F[r, i, a]


@njit(cache=True)
def tables(K, R, nb, nv):
    """:func:`tables_ext` without extra room (its first eleven tables)."""
    V, S, Rw, pw, dw, cw, Jw, Ib, F, W, vd, _ = tables_ext(K, R, nb, nv, 0)
    return V, S, Rw, pw, dw, cw, Jw, Ib, F, W, vd


@njit(cache=True)
def tables_ext(K, R, nb, nv, extra):
    """One allocation for the per-call tables of orders 0…K (views of a single buffer): V, S, Rw, pw,
    dw (order 0 only: the offsets ``d_i``), cw, Jw, Ib (kinematics and inertia derivatives), F
    (applied forces), W (joint wrenches, orders
    0…R), vd (velocity derivatives 0…K), and ``extra`` floats of room for the caller's own tables
    (one allocation per call). World row 0 of V, Rw, pw is the world at rest."""
    return table_views(np.empty(table_floats(K, R, nb, nv) + extra), K, R, nb, nv)


@inlined
def table_floats(K, R, nb, nv):
    """The number of floats of the tables of :func:`table_views`."""
    n3, n6, n9 = (K + 1) * (nb + 1) * 3, (K + 1) * (nb + 1) * 6, (K + 1) * (nb + 1) * 9
    return n6 + (K + 1) * nv * 6 + 3 * n9 + 2 * n3 + (nb + 1) * 3 + (R + 1) * (nb + 1) * 9 + (K + 1) * nv


@inlined
def table_views(buf, K, R, nb, nv):
    """The tables of :func:`tables_ext` as views of ``buf`` (at least :func:`table_floats` floats),
    and the rest of ``buf``. A kernel passes a borrowed buffer (:func:`loopdyn.algorithms.borrow.
    borrowed`, kept alive with :func:`keep_alive`): then no view is reference-counted."""
    n3, n6, n9 = (K + 1) * (nb + 1) * 3, (K + 1) * (nb + 1) * 6, (K + 1) * (nb + 1) * 9
    o = 0
    V = view(buf, o, (K + 1, nb + 1, 6))
    o += n6
    S = view(buf, o, (K + 1, nv, 6))
    o += (K + 1) * nv * 6
    Rw = view(buf, o, (K + 1, nb + 1, 3, 3))
    o += n9
    pw = view(buf, o, (K + 1, nb + 1, 3))
    o += n3
    dw = view(buf, o, (nb + 1, 3))
    o += (nb + 1) * 3
    cw = view(buf, o, (K + 1, nb + 1, 3))
    o += n3
    Jw = view(buf, o, (K + 1, nb + 1, 3, 3))
    o += n9
    Ib = view(buf, o, (K + 1, nb + 1, 3, 3))
    o += n9
    F = view(buf, o, (R + 1, nb + 1, 3))
    o += (R + 1) * (nb + 1) * 3
    W = view(buf, o, (R + 1, nb + 1, 6))
    o += (R + 1) * (nb + 1) * 6
    vd = view(buf, o, (K + 1, nv))
    o += (K + 1) * nv
    for a in range(3):
        dw[0, a] = 0.0
    for k in range(K + 1):  # the world: identity pose, at rest at every order
        for a in range(6):
            V[k, 0, a] = 0.0
        for a in range(3):
            pw[k, 0, a] = 0.0
            for b in range(3):
                Rw[k, 0, a, b] = 1.0 if (a == b and k == 0) else 0.0
    return V, S, Rw, pw, dw, cw, Jw, Ib, F, W, vd, buf[o:]


@inlined
def momentum_derivative(hf, i, n, kmax, C, V, Ib, cw, out):
    """out = Σ_{m=0}^{kmax} binom(n, m) M^(n−m) V^(m)  (D4 with kmax = n; D5 with kmax = n − 1)."""
    for a in range(6):
        out[a] = 0.0
    for m in range(kmax + 1):
        inertia_mul_add(hf, i, n - m, Ib, cw, V[m, i], C[n, m], out)


@inlined
def momentum_com(hf, i, n, full, C, V, cw, Jw, out):
    """out = Π_i^(n) (``full``; D4) or Π_i^(n) − M_i V_i^(n) (not ``full``; D5's bias), from the
    centre-of-mass form of the spatial momentum ``Π = (J ω + m c × u ; m u)``, ``u = ċ = v + ω × c``
    (J: rotational inertia about the centre of mass, world axes), differentiated by Leibniz:
    ``Π^(n) = (Σ_l binom(n, l) (J^(l) ω^(n−l) + m c^(l) × u^(n−l)) ; m u^(n))`` with
    ``u^(j) = c^(j+1)`` for j < n and ``u^(n) = v^(n) + Σ_m binom(n, m) ω^(m) × c^(n−m)``. The terms
    of ``V^(n)`` are ``M V^(n) = (J ω^(n) + m c × (v^(n) + ω^(n) × c) ; m (v^(n) + ω^(n) × c))``.
    Needs ``c^(0…n)``, ``J^(0…n)`` and ``V^(0…n)`` (``V^(0…n−1)`` if not ``full``); no ``Ī``. With
    ``full`` and ``c^(n+1)`` already tabulated (inverse dynamics, n < K), ``u^(n) = c^(n+1)`` is read."""
    m_ = hf[i, HF_MASS]
    lo = 0 if full else 1
    if full and n + 1 < cw.shape[0]:
        u0, u1, u2 = cw[n + 1, i, 0], cw[n + 1, i, 1], cw[n + 1, i, 2]
    else:
        u0 = u1 = u2 = 0.0  # u^(n), without the V^(n) part unless full
        for m in range(n):
            f = C[n, m]
            w0, w1, w2 = f * V[m, i, 0], f * V[m, i, 1], f * V[m, i, 2]
            x = cw[n - m, i]
            u0 += w1 * x[2] - w2 * x[1]
            u1 += w2 * x[0] - w0 * x[2]
            u2 += w0 * x[1] - w1 * x[0]
        if full:
            w0, w1, w2 = V[n, i, 0], V[n, i, 1], V[n, i, 2]
            x = cw[0, i]
            u0 += V[n, i, 3] + w1 * x[2] - w2 * x[1]
            u1 += V[n, i, 4] + w2 * x[0] - w0 * x[2]
            u2 += V[n, i, 5] + w0 * x[1] - w1 * x[0]
    a0 = a1 = a2 = 0.0
    for l in range(lo, n + 1):  # Σ binom(n, l) J^(l) ω^(n−l)
        f = C[n, l]
        J = Jw[l, i]
        w0, w1, w2 = f * V[n - l, i, 0], f * V[n - l, i, 1], f * V[n - l, i, 2]
        a0 += J[0, 0] * w0 + J[0, 1] * w1 + J[0, 2] * w2
        a1 += J[0, 1] * w0 + J[1, 1] * w1 + J[1, 2] * w2  # J symmetric: the upper triangle
        a2 += J[0, 2] * w0 + J[1, 2] * w1 + J[2, 2] * w2
    x = cw[0, i]  # l = 0: c × u^(n)
    b0 = x[1] * u2 - x[2] * u1
    b1 = x[2] * u0 - x[0] * u2
    b2 = x[0] * u1 - x[1] * u0
    for l in range(1, n + 1):  # c^(l) × u^(n−l), u^(n−l) = c^(n−l+1)
        f = C[n, l]
        x = cw[l, i]
        y = cw[n - l + 1, i]
        b0 += f * (x[1] * y[2] - x[2] * y[1])
        b1 += f * (x[2] * y[0] - x[0] * y[2])
        b2 += f * (x[0] * y[1] - x[1] * y[0])
    out[0] = a0 + m_ * b0
    out[1] = a1 + m_ * b1
    out[2] = a2 + m_ * b2
    out[3] = m_ * u0
    out[4] = m_ * u1
    out[5] = m_ * u2
