"""Numba-compiled spatial algebra on flat arrays — the building blocks of every kernel.

Conventions (Featherstone): motion vectors ``[ω; v]``, force vectors ``[n; f]``. A rigid transform
between a parent frame P and a child frame C is stored as the child's *placement* in the parent:
``R`` (active rotation, the child's axes in parent coordinates, 9 numbers row-major) and ``p`` (the
child's origin in parent coordinates). In Featherstone's Plücker notation this placement is
``ᶜX_P = [[Rᵀ, 0], [−Rᵀ p×, Rᵀ]]`` — but no 6×6 matrix is ever formed here.

Rigid-body inertias use the compact form ``(m, h = m c, Ī_o)`` about the frame origin with
``Ī_o`` stored as ``(xx, yy, zz, xy, xz, yz)``. Articulated inertias are full 6×6 row-major.

All functions write into caller-provided output views and allocate nothing; they are small enough
for LLVM to inline into the kernels.
"""

from __future__ import annotations

import math

from numba import njit


# ---------------------------------------------------------------------------------------------
# rotations
@njit(cache=True, inline="always")
def rot_mul(A, B, out):
    """out = A · B for 3×3 row-major rotations (out must not alias A or B)."""
    for r in range(3):
        a0, a1, a2 = A[3 * r], A[3 * r + 1], A[3 * r + 2]
        out[3 * r] = a0 * B[0] + a1 * B[3] + a2 * B[6]
        out[3 * r + 1] = a0 * B[1] + a1 * B[4] + a2 * B[7]
        out[3 * r + 2] = a0 * B[2] + a1 * B[5] + a2 * B[8]


@njit(cache=True, inline="always")
def rot_axis_angle(ax, ay, az, c, s, out):
    """Rotation about the unit axis (ax, ay, az) with cos c and sin s (Rodrigues)."""
    t = 1.0 - c
    out[0] = c + t * ax * ax
    out[1] = t * ax * ay - s * az
    out[2] = t * ax * az + s * ay
    out[3] = t * ax * ay + s * az
    out[4] = c + t * ay * ay
    out[5] = t * ay * az - s * ax
    out[6] = t * ax * az - s * ay
    out[7] = t * ay * az + s * ax
    out[8] = c + t * az * az


@njit(cache=True, inline="always")
def rot_quat(x, y, z, w, out):
    """Rotation matrix of the unit quaternion (x, y, z, w)."""
    out[0] = 1.0 - 2.0 * (y * y + z * z)
    out[1] = 2.0 * (x * y - z * w)
    out[2] = 2.0 * (x * z + y * w)
    out[3] = 2.0 * (x * y + z * w)
    out[4] = 1.0 - 2.0 * (x * x + z * z)
    out[5] = 2.0 * (y * z - x * w)
    out[6] = 2.0 * (x * z - y * w)
    out[7] = 2.0 * (y * z + x * w)
    out[8] = 1.0 - 2.0 * (x * x + y * y)


# ---------------------------------------------------------------------------------------------
# placements (R, p)
@njit(cache=True, inline="always")
def compose(R1, p1, R2, p2, Rout, pout):
    """(Rout, pout) = (R1, p1) ∘ (R2, p2), i.e. the placement of frame 2 given in frame 1 composed
    with frame 1's placement: Rout = R1 R2, pout = p1 + R1 p2."""
    rot_mul(R1, R2, Rout)
    for r in range(3):
        pout[r] = p1[r] + R1[3 * r] * p2[0] + R1[3 * r + 1] * p2[1] + R1[3 * r + 2] * p2[2]


# ---------------------------------------------------------------------------------------------
# motion and force transforms
@njit(cache=True, inline="always")
def motion_to_child(R, p, m, out):
    """out = ᶜX_P m: a parent-frame motion vector expressed in the child frame."""
    w0, w1, w2 = m[0], m[1], m[2]
    # v + ω × p   (velocity of the point at the child origin, parent axes)
    u0 = m[3] + w1 * p[2] - w2 * p[1]
    u1 = m[4] + w2 * p[0] - w0 * p[2]
    u2 = m[5] + w0 * p[1] - w1 * p[0]
    for r in range(3):
        out[r] = R[r] * w0 + R[3 + r] * w1 + R[6 + r] * w2
        out[3 + r] = R[r] * u0 + R[3 + r] * u1 + R[6 + r] * u2


@njit(cache=True, inline="always")
def motion_to_parent(R, p, m, out):
    """out = ᴾX_C m: a child-frame motion vector expressed in the parent frame."""
    for r in range(3):
        out[r] = R[3 * r] * m[0] + R[3 * r + 1] * m[1] + R[3 * r + 2] * m[2]
    for r in range(3):
        out[3 + r] = R[3 * r] * m[3] + R[3 * r + 1] * m[4] + R[3 * r + 2] * m[5]
    w0, w1, w2 = out[0], out[1], out[2]
    # v_P = v_C' - ω × p  = v_C' + p × ω
    out[3] += p[1] * w2 - p[2] * w1
    out[4] += p[2] * w0 - p[0] * w2
    out[5] += p[0] * w1 - p[1] * w0


@njit(cache=True, inline="always")
def force_to_parent_add(R, p, f, out):
    """out += ᶜX_Pᵀ f: a child-frame force expressed in the parent frame, accumulated."""
    f0 = R[0] * f[3] + R[1] * f[4] + R[2] * f[5]
    f1 = R[3] * f[3] + R[4] * f[4] + R[5] * f[5]
    f2 = R[6] * f[3] + R[7] * f[4] + R[8] * f[5]
    n0 = R[0] * f[0] + R[1] * f[1] + R[2] * f[2]
    n1 = R[3] * f[0] + R[4] * f[1] + R[5] * f[2]
    n2 = R[6] * f[0] + R[7] * f[1] + R[8] * f[2]
    out[0] += n0 + p[1] * f2 - p[2] * f1
    out[1] += n1 + p[2] * f0 - p[0] * f2
    out[2] += n2 + p[0] * f1 - p[1] * f0
    out[3] += f0
    out[4] += f1
    out[5] += f2


@njit(cache=True, inline="always")
def force_to_child(R, p, f, out):
    """out = ᶜX*_P f: a parent-frame force expressed in the child frame."""
    # moment about the child origin, parent axes: n - p × f
    n0 = f[0] - (p[1] * f[5] - p[2] * f[4])
    n1 = f[1] - (p[2] * f[3] - p[0] * f[5])
    n2 = f[2] - (p[0] * f[4] - p[1] * f[3])
    for r in range(3):
        out[r] = R[r] * n0 + R[3 + r] * n1 + R[6 + r] * n2
        out[3 + r] = R[r] * f[3] + R[3 + r] * f[4] + R[6 + r] * f[5]


# ---------------------------------------------------------------------------------------------
# cross products
@njit(cache=True, inline="always")
def cross_motion(v, m, out):
    """out = v × m (spatial motion cross product, crm(v) m)."""
    w0, w1, w2, u0, u1, u2 = v[0], v[1], v[2], v[3], v[4], v[5]
    out[0] = w1 * m[2] - w2 * m[1]
    out[1] = w2 * m[0] - w0 * m[2]
    out[2] = w0 * m[1] - w1 * m[0]
    out[3] = w1 * m[5] - w2 * m[4] + u1 * m[2] - u2 * m[1]
    out[4] = w2 * m[3] - w0 * m[5] + u2 * m[0] - u0 * m[2]
    out[5] = w0 * m[4] - w1 * m[3] + u0 * m[1] - u1 * m[0]


@njit(cache=True, inline="always")
def cross_force_add(v, f, out):
    """out += v ×* f (spatial force cross product, crf(v) f)."""
    w0, w1, w2, u0, u1, u2 = v[0], v[1], v[2], v[3], v[4], v[5]
    out[0] += w1 * f[2] - w2 * f[1] + u1 * f[5] - u2 * f[4]
    out[1] += w2 * f[0] - w0 * f[2] + u2 * f[3] - u0 * f[5]
    out[2] += w0 * f[1] - w1 * f[0] + u0 * f[4] - u1 * f[3]
    out[3] += w1 * f[5] - w2 * f[4]
    out[4] += w2 * f[3] - w0 * f[5]
    out[5] += w0 * f[4] - w1 * f[3]


# ---------------------------------------------------------------------------------------------
# rigid-body inertia (compact)
@njit(cache=True, inline="always")
def inertia_mul(I, m, out):
    """out = I m for a compact rigid-body inertia I = (mass, h, Ī_o)."""
    mass, h0, h1, h2 = I[0], I[1], I[2], I[3]
    xx, yy, zz, xy, xz, yz = I[4], I[5], I[6], I[7], I[8], I[9]
    w0, w1, w2, u0, u1, u2 = m[0], m[1], m[2], m[3], m[4], m[5]
    out[0] = xx * w0 + xy * w1 + xz * w2 + h1 * u2 - h2 * u1
    out[1] = xy * w0 + yy * w1 + yz * w2 + h2 * u0 - h0 * u2
    out[2] = xz * w0 + yz * w1 + zz * w2 + h0 * u1 - h1 * u0
    out[3] = mass * u0 - (h1 * w2 - h2 * w1)
    out[4] = mass * u1 - (h2 * w0 - h0 * w2)
    out[5] = mass * u2 - (h0 * w1 - h1 * w0)


@njit(cache=True, inline="always")
def inertia_to_parent_add(R, p, I, out):
    """out += ᶜX_Pᵀ I ᶜX_P: a compact child-frame inertia expressed in the parent frame, accumulated."""
    mass = I[0]
    # rotate: h' = R h, Ī' = R Ī Rᵀ
    hx = R[0] * I[1] + R[1] * I[2] + R[2] * I[3]
    hy = R[3] * I[1] + R[4] * I[2] + R[5] * I[3]
    hz = R[6] * I[1] + R[7] * I[2] + R[8] * I[3]
    xx, yy, zz, xy, xz, yz = I[4], I[5], I[6], I[7], I[8], I[9]
    # T = Ī R^T  (columns), then Ī' = R T
    t00 = xx * R[0] + xy * R[1] + xz * R[2]
    t10 = xy * R[0] + yy * R[1] + yz * R[2]
    t20 = xz * R[0] + yz * R[1] + zz * R[2]
    t01 = xx * R[3] + xy * R[4] + xz * R[5]
    t11 = xy * R[3] + yy * R[4] + yz * R[5]
    t21 = xz * R[3] + yz * R[4] + zz * R[5]
    t02 = xx * R[6] + xy * R[7] + xz * R[8]
    t12 = xy * R[6] + yy * R[7] + yz * R[8]
    t22 = xz * R[6] + yz * R[7] + zz * R[8]
    rxx = R[0] * t00 + R[1] * t10 + R[2] * t20
    ryy = R[3] * t01 + R[4] * t11 + R[5] * t21
    rzz = R[6] * t02 + R[7] * t12 + R[8] * t22
    rxy = R[0] * t01 + R[1] * t11 + R[2] * t21
    rxz = R[0] * t02 + R[1] * t12 + R[2] * t22
    ryz = R[3] * t02 + R[4] * t12 + R[5] * t22
    # shift from the child origin to the parent origin (p = child origin in the parent):
    # Ī_P = Ī' + m (|p|² 1 − p pᵀ) + 2 (p·h') 1 − h' pᵀ − p h'ᵀ
    px, py, pz = p[0], p[1], p[2]
    pp = px * px + py * py + pz * pz
    ph = px * hx + py * hy + pz * hz
    out[0] += mass
    out[1] += hx + mass * px
    out[2] += hy + mass * py
    out[3] += hz + mass * pz
    out[4] += rxx + mass * (pp - px * px) + 2.0 * ph - 2.0 * hx * px
    out[5] += ryy + mass * (pp - py * py) + 2.0 * ph - 2.0 * hy * py
    out[6] += rzz + mass * (pp - pz * pz) + 2.0 * ph - 2.0 * hz * pz
    out[7] += rxy - mass * px * py - hx * py - px * hy
    out[8] += rxz - mass * px * pz - hx * pz - px * hz
    out[9] += ryz - mass * py * pz - hy * pz - py * hz


@njit(cache=True, inline="always")
def inertia_to_matrix(I, out):
    """out (36, row-major) = the 6×6 matrix of the compact inertia I."""
    mass, h0, h1, h2 = I[0], I[1], I[2], I[3]
    for k in range(36):
        out[k] = 0.0
    out[0], out[7], out[14] = I[4], I[5], I[6]
    out[1] = out[6] = I[7]
    out[2] = out[12] = I[8]
    out[8] = out[13] = I[9]
    # top-right = h×, bottom-left = h×ᵀ
    out[4], out[5] = -h2, h1
    out[9], out[11] = h2, -h0
    out[15], out[16] = -h1, h0
    out[24], out[30] = -h2, h1
    out[19], out[31] = h2, -h0
    out[20], out[26] = -h1, h0
    out[21] = out[28] = out[35] = mass


# ---------------------------------------------------------------------------------------------
# articulated inertia (full symmetric 6×6, row-major)
@njit(cache=True, inline="always")
def matrix_to_parent_add(R, p, A, out, tmp):
    """out += ᶜX_Pᵀ A ᶜX_P for a symmetric 6×6 A (row-major, 36); ``tmp`` is ≥ 45 scratch numbers.

    With ᶜX_Pᵀ = [[1, p×], [0, 1]] · diag(R, R): first rotate every 3×3 block (Z ↦ R Z Rᵀ) giving
    A', B', C'; then shift: C'' = C', B'' = B' + p× C', A'' = A' + p× B'ᵀ − B'' p×.
    """
    # tmp[0:36] = A · diag(Rᵀ, Rᵀ)
    for r in range(6):
        for cb in range(2):
            a0 = A[6 * r + 3 * cb]
            a1 = A[6 * r + 3 * cb + 1]
            a2 = A[6 * r + 3 * cb + 2]
            for c in range(3):
                tmp[6 * r + 3 * cb + c] = a0 * R[3 * c] + a1 * R[3 * c + 1] + a2 * R[3 * c + 2]
    # tmp[0:36] = diag(R, R) · tmp, column by column
    for c in range(6):
        for rb in range(2):
            b0 = tmp[6 * (3 * rb) + c]
            b1 = tmp[6 * (3 * rb + 1) + c]
            b2 = tmp[6 * (3 * rb + 2) + c]
            for r in range(3):
                tmp[6 * (3 * rb + r) + c] = R[3 * r] * b0 + R[3 * r + 1] * b1 + R[3 * r + 2] * b2
    px, py, pz = p[0], p[1], p[2]
    # tmp[36:45] = B'' = B' + p× C'
    for c in range(3):
        c0 = tmp[21 + c]
        c1 = tmp[27 + c]
        c2 = tmp[33 + c]
        tmp[36 + c] = tmp[3 + c] + py * c2 - pz * c1
        tmp[39 + c] = tmp[9 + c] + pz * c0 - px * c2
        tmp[42 + c] = tmp[15 + c] + px * c1 - py * c0
    # A'' = A' + p× B'ᵀ − B'' p×
    for c in range(3):
        # column c of p× B'ᵀ is p × (row c of B')
        b0 = tmp[6 * c + 3]
        b1 = tmp[6 * c + 4]
        b2 = tmp[6 * c + 5]
        tmp[c] += py * b2 - pz * b1
        tmp[6 + c] += pz * b0 - px * b2
        tmp[12 + c] += px * b1 - py * b0
    for r in range(3):
        # row r of B'' p×, with p× = [[0, −pz, py], [pz, 0, −px], [−py, px, 0]]
        b0 = tmp[36 + 3 * r]
        b1 = tmp[37 + 3 * r]
        b2 = tmp[38 + 3 * r]
        tmp[6 * r] -= b1 * pz - b2 * py
        tmp[6 * r + 1] -= b2 * px - b0 * pz
        tmp[6 * r + 2] -= b0 * py - b1 * px
    for r in range(3):
        for c in range(3):
            b = tmp[36 + 3 * r + c]
            out[6 * r + c] += tmp[6 * r + c]
            out[6 * r + 3 + c] += b
            out[6 * (3 + c) + r] += b
            out[6 * (3 + r) + 3 + c] += tmp[6 * (3 + r) + 3 + c]


@njit(cache=True, inline="always")
def sym6_mul(A, m, out):
    """out = A m for a 6×6 row-major A."""
    for r in range(6):
        out[r] = (
            A[6 * r] * m[0] + A[6 * r + 1] * m[1] + A[6 * r + 2] * m[2]
            + A[6 * r + 3] * m[3] + A[6 * r + 4] * m[4] + A[6 * r + 5] * m[5]
        )


@njit(cache=True)
def spd_inverse(A, n, out, scratch):
    """out (n×n, row-major) = A⁻¹ for a small symmetric positive-definite A (n ≤ 6) by Cholesky.
    ``scratch`` holds ≥ 72 numbers. Returns False (out untouched) if A is not positive definite."""
    Lb = scratch[0:36]
    Li = scratch[36:72]
    for j in range(n):
        s = A[n * j + j]
        for k in range(j):
            s -= Lb[6 * j + k] * Lb[6 * j + k]
        if not s > 0.0:
            return False
        d = math.sqrt(s)
        Lb[6 * j + j] = d
        for i in range(j + 1, n):
            s = A[n * i + j]
            for k in range(j):
                s -= Lb[6 * i + k] * Lb[6 * j + k]
            Lb[6 * i + j] = s / d
    for i in range(n):  # Li = L⁻¹ (lower triangular)
        Li[6 * i + i] = 1.0 / Lb[6 * i + i]
        for j in range(i):
            s = 0.0
            for k in range(j, i):
                s -= Lb[6 * i + k] * Li[6 * k + j]
            Li[6 * i + j] = s / Lb[6 * i + i]
    for i in range(n):  # A⁻¹ = Liᵀ Li
        for j in range(i, n):
            s = 0.0
            for k in range(j, n):
                s += Li[6 * k + i] * Li[6 * k + j]
            out[n * i + j] = s
            out[n * j + i] = s
    return True
