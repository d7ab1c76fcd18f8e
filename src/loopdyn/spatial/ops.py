"""Numba-compiled spatial algebra on tuples of scalars — the building blocks of every kernel.

Conventions (Featherstone): motion vectors ``[ω; v]``, force vectors ``[n; f]``, as 6-tuples. A rigid
transform between a parent frame P and a child frame C is the child's *placement* in the parent:
``R`` (active rotation, the child's axes in parent coordinates, a row-major 9-tuple) and ``p`` (the
child's origin in parent coordinates, a 3-tuple). In Plücker notation this placement is
``ᶜX_P = [[Rᵀ, 0], [−Rᵀ p×, Rᵀ]]`` — no 6×6 matrix is ever formed.

Rigid-body inertias are compact 10-tuples ``(m, h = m c, Ī_o[xx, yy, zz, xy, xz, yz])`` about the
frame origin. Articulated inertias are full 6×6 matrices stored row-major in 36 consecutive columns
of a workspace row.

Why tuples: a Numba array *view* carries a reference-counted pointer, and the increments and
decrements cost more than the arithmetic of a small spatial operation. Tuples are plain SSA values
that LLVM keeps in registers, so these helpers inline to straight-line floating-point code. Kernels
read and write their 2-D workspaces with explicit ``(row, column)`` indices (``load*``/``store*``).
"""

from __future__ import annotations

import math

from ..jit import inlined, njit

# ---------------------------------------------------------------------------------------------
# loads and stores on 2-D workspaces


@inlined
def load3(a, i, c):
    return (a[i, c], a[i, c + 1], a[i, c + 2])


@inlined
def load6(a, i, c):
    return (a[i, c], a[i, c + 1], a[i, c + 2], a[i, c + 3], a[i, c + 4], a[i, c + 5])


@inlined
def load6_at(a, o):
    """The 6-vector a[o : o + 6] of a flat array, as a tuple."""
    return (a[o], a[o + 1], a[o + 2], a[o + 3], a[o + 4], a[o + 5])


@inlined
def store6_at(a, o, x):
    """a[o : o + 6] = x for a flat array."""
    for r in range(6):
        a[o + r] = x[r]


@inlined
def load9(a, i, c):
    return (
        a[i, c],
        a[i, c + 1],
        a[i, c + 2],
        a[i, c + 3],
        a[i, c + 4],
        a[i, c + 5],
        a[i, c + 6],
        a[i, c + 7],
        a[i, c + 8],
    )


@inlined
def load10(a, i, c):
    return (
        a[i, c],
        a[i, c + 1],
        a[i, c + 2],
        a[i, c + 3],
        a[i, c + 4],
        a[i, c + 5],
        a[i, c + 6],
        a[i, c + 7],
        a[i, c + 8],
        a[i, c + 9],
    )


@inlined
def store3(a, i, c, x):
    a[i, c] = x[0]
    a[i, c + 1] = x[1]
    a[i, c + 2] = x[2]


@inlined
def store6(a, i, c, x):
    a[i, c] = x[0]
    a[i, c + 1] = x[1]
    a[i, c + 2] = x[2]
    a[i, c + 3] = x[3]
    a[i, c + 4] = x[4]
    a[i, c + 5] = x[5]


@inlined
def store9(a, i, c, x):
    for k in range(9):
        a[i, c + k] = x[k]


@inlined
def store10(a, i, c, x):
    for k in range(10):
        a[i, c + k] = x[k]


@inlined
def add_to6(a, i, c, x):
    """a[i, c:c+6] += x."""
    a[i, c] += x[0]
    a[i, c + 1] += x[1]
    a[i, c + 2] += x[2]
    a[i, c + 3] += x[3]
    a[i, c + 4] += x[4]
    a[i, c + 5] += x[5]


# ---------------------------------------------------------------------------------------------
# small vector algebra


@inlined
def unit6(k):
    """The k-th unit 6-vector."""
    return (
        1.0 if k == 0 else 0.0,
        1.0 if k == 1 else 0.0,
        1.0 if k == 2 else 0.0,
        1.0 if k == 3 else 0.0,
        1.0 if k == 4 else 0.0,
        1.0 if k == 5 else 0.0,
    )


@inlined
def add6(x, y):
    return (x[0] + y[0], x[1] + y[1], x[2] + y[2], x[3] + y[3], x[4] + y[4], x[5] + y[5])


@inlined
def sub6(x, y):
    return (x[0] - y[0], x[1] - y[1], x[2] - y[2], x[3] - y[3], x[4] - y[4], x[5] - y[5])


@inlined
def scale6(x, s):
    return (x[0] * s, x[1] * s, x[2] * s, x[3] * s, x[4] * s, x[5] * s)


@inlined
def dot6(x, y):
    return x[0] * y[0] + x[1] * y[1] + x[2] * y[2] + x[3] * y[3] + x[4] * y[4] + x[5] * y[5]


@inlined
def cross3(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


@inlined
def rot_vec(R, x):
    """R x."""
    return (
        R[0] * x[0] + R[1] * x[1] + R[2] * x[2],
        R[3] * x[0] + R[4] * x[1] + R[5] * x[2],
        R[6] * x[0] + R[7] * x[1] + R[8] * x[2],
    )


@inlined
def rot_t_vec(R, x):
    """Rᵀ x."""
    return (
        R[0] * x[0] + R[3] * x[1] + R[6] * x[2],
        R[1] * x[0] + R[4] * x[1] + R[7] * x[2],
        R[2] * x[0] + R[5] * x[1] + R[8] * x[2],
    )


@inlined
def rot_mul(A, B):
    """A B for row-major 3×3 tuples."""
    return (
        A[0] * B[0] + A[1] * B[3] + A[2] * B[6],
        A[0] * B[1] + A[1] * B[4] + A[2] * B[7],
        A[0] * B[2] + A[1] * B[5] + A[2] * B[8],
        A[3] * B[0] + A[4] * B[3] + A[5] * B[6],
        A[3] * B[1] + A[4] * B[4] + A[5] * B[7],
        A[3] * B[2] + A[4] * B[5] + A[5] * B[8],
        A[6] * B[0] + A[7] * B[3] + A[8] * B[6],
        A[6] * B[1] + A[7] * B[4] + A[8] * B[7],
        A[6] * B[2] + A[7] * B[5] + A[8] * B[8],
    )


@inlined
def rot_axis_angle(ax, ay, az, c, s):
    """Rotation about the unit axis (ax, ay, az) with cos c and sin s (Rodrigues)."""
    t = 1.0 - c
    return (
        c + t * ax * ax,
        t * ax * ay - s * az,
        t * ax * az + s * ay,
        t * ax * ay + s * az,
        c + t * ay * ay,
        t * ay * az - s * ax,
        t * ax * az - s * ay,
        t * ay * az + s * ax,
        c + t * az * az,
    )


@inlined
def rot_quat(x, y, z, w):
    """Rotation matrix of the unit quaternion (x, y, z, w)."""
    return (
        1.0 - 2.0 * (y * y + z * z),
        2.0 * (x * y - z * w),
        2.0 * (x * z + y * w),
        2.0 * (x * y + z * w),
        1.0 - 2.0 * (x * x + z * z),
        2.0 * (y * z - x * w),
        2.0 * (x * z - y * w),
        2.0 * (y * z + x * w),
        1.0 - 2.0 * (x * x + y * y),
    )


# ---------------------------------------------------------------------------------------------
# motion and force transforms


@inlined
def motion_to_child(R, p, m):
    """ᶜX_P m: a parent-frame motion vector expressed in the child frame."""
    w = (m[0], m[1], m[2])
    u = (m[3] + m[1] * p[2] - m[2] * p[1], m[4] + m[2] * p[0] - m[0] * p[2], m[5] + m[0] * p[1] - m[1] * p[0])
    a = rot_t_vec(R, w)
    b = rot_t_vec(R, u)
    return (a[0], a[1], a[2], b[0], b[1], b[2])


@inlined
def motion_to_parent(R, p, m):
    """ᴾX_C m: a child-frame motion vector expressed in the parent frame."""
    w = rot_vec(R, (m[0], m[1], m[2]))
    u = rot_vec(R, (m[3], m[4], m[5]))
    return (
        w[0],
        w[1],
        w[2],
        u[0] + p[1] * w[2] - p[2] * w[1],
        u[1] + p[2] * w[0] - p[0] * w[2],
        u[2] + p[0] * w[1] - p[1] * w[0],
    )


@inlined
def force_to_parent(R, p, f):
    """ᶜX_Pᵀ f: a child-frame force expressed in the parent frame."""
    n = rot_vec(R, (f[0], f[1], f[2]))
    g = rot_vec(R, (f[3], f[4], f[5]))
    return (
        n[0] + p[1] * g[2] - p[2] * g[1],
        n[1] + p[2] * g[0] - p[0] * g[2],
        n[2] + p[0] * g[1] - p[1] * g[0],
        g[0],
        g[1],
        g[2],
    )


@inlined
def force_to_child(R, p, f):
    """ᶜX*_P f: a parent-frame force expressed in the child frame."""
    n = (
        f[0] - (p[1] * f[5] - p[2] * f[4]),
        f[1] - (p[2] * f[3] - p[0] * f[5]),
        f[2] - (p[0] * f[4] - p[1] * f[3]),
    )
    a = rot_t_vec(R, n)
    b = rot_t_vec(R, (f[3], f[4], f[5]))
    return (a[0], a[1], a[2], b[0], b[1], b[2])


# ---------------------------------------------------------------------------------------------
# cross products


@inlined
def cross_motion(v, m):
    """v × m (spatial motion cross product, crm(v) m)."""
    w0, w1, w2, u0, u1, u2 = v
    return (
        w1 * m[2] - w2 * m[1],
        w2 * m[0] - w0 * m[2],
        w0 * m[1] - w1 * m[0],
        w1 * m[5] - w2 * m[4] + u1 * m[2] - u2 * m[1],
        w2 * m[3] - w0 * m[5] + u2 * m[0] - u0 * m[2],
        w0 * m[4] - w1 * m[3] + u0 * m[1] - u1 * m[0],
    )


@inlined
def cross_force(v, f):
    """v ×* f (spatial force cross product, crf(v) f)."""
    w0, w1, w2, u0, u1, u2 = v
    return (
        w1 * f[2] - w2 * f[1] + u1 * f[5] - u2 * f[4],
        w2 * f[0] - w0 * f[2] + u2 * f[3] - u0 * f[5],
        w0 * f[1] - w1 * f[0] + u0 * f[4] - u1 * f[3],
        w1 * f[5] - w2 * f[4],
        w2 * f[3] - w0 * f[5],
        w0 * f[4] - w1 * f[3],
    )


# ---------------------------------------------------------------------------------------------
# rigid-body inertia (compact 10-tuple)


@inlined
def inertia_mul(I, m):
    """I m for a compact rigid-body inertia I = (mass, h, Ī_o)."""
    mass, h0, h1, h2, xx, yy, zz, xy, xz, yz = I
    w0, w1, w2, u0, u1, u2 = m
    return (
        xx * w0 + xy * w1 + xz * w2 + h1 * u2 - h2 * u1,
        xy * w0 + yy * w1 + yz * w2 + h2 * u0 - h0 * u2,
        xz * w0 + yz * w1 + zz * w2 + h0 * u1 - h1 * u0,
        mass * u0 - (h1 * w2 - h2 * w1),
        mass * u1 - (h2 * w0 - h0 * w2),
        mass * u2 - (h0 * w1 - h1 * w0),
    )


@inlined
def inertia_to_parent(R, p, I):
    """ᶜX_Pᵀ I ᶜX_P: a compact child-frame inertia expressed in the parent frame."""
    mass = I[0]
    hx, hy, hz = rot_vec(R, (I[1], I[2], I[3]))
    xx, yy, zz, xy, xz, yz = I[4], I[5], I[6], I[7], I[8], I[9]
    # Ī' = R Ī Rᵀ
    Ib = (xx, xy, xz, xy, yy, yz, xz, yz, zz)
    T = rot_mul(R, Ib)
    rxx = T[0] * R[0] + T[1] * R[1] + T[2] * R[2]
    rxy = T[0] * R[3] + T[1] * R[4] + T[2] * R[5]
    rxz = T[0] * R[6] + T[1] * R[7] + T[2] * R[8]
    ryy = T[3] * R[3] + T[4] * R[4] + T[5] * R[5]
    ryz = T[3] * R[6] + T[4] * R[7] + T[5] * R[8]
    rzz = T[6] * R[6] + T[7] * R[7] + T[8] * R[8]
    # shift from the child origin to the parent origin (p = child origin in the parent):
    # Ī_P = Ī' + m (|p|² 1 − p pᵀ) + 2 (p·h') 1 − h' pᵀ − p h'ᵀ
    px, py, pz = p
    pp = px * px + py * py + pz * pz
    ph = px * hx + py * hy + pz * hz
    return (
        mass,
        hx + mass * px,
        hy + mass * py,
        hz + mass * pz,
        rxx + mass * (pp - px * px) + 2.0 * ph - 2.0 * hx * px,
        ryy + mass * (pp - py * py) + 2.0 * ph - 2.0 * hy * py,
        rzz + mass * (pp - pz * pz) + 2.0 * ph - 2.0 * hz * pz,
        rxy - mass * px * py - hx * py - px * hy,
        rxz - mass * px * pz - hx * pz - px * hz,
        ryz - mass * py * pz - hy * pz - py * hz,
    )


@inlined
def add10(x, y):
    return (
        x[0] + y[0],
        x[1] + y[1],
        x[2] + y[2],
        x[3] + y[3],
        x[4] + y[4],
        x[5] + y[5],
        x[6] + y[6],
        x[7] + y[7],
        x[8] + y[8],
        x[9] + y[9],
    )


@inlined
def store_inertia_matrix(a, i, c, I):
    """a[i, c:c+36] = the 6×6 matrix (row-major) of the compact inertia I: [[Ī, h×], [h×ᵀ, m 1]].

    Written out store by store: a loop over a 36-tuple indexes the tuple at run time (LLVM does not
    unroll 36 iterations), which costs five times as much."""
    mass, h0, h1, h2, xx, yy, zz, xy, xz, yz = I
    a[i, c + 0] = xx
    a[i, c + 1] = xy
    a[i, c + 2] = xz
    a[i, c + 3] = 0.0
    a[i, c + 4] = -h2
    a[i, c + 5] = h1
    a[i, c + 6] = xy
    a[i, c + 7] = yy
    a[i, c + 8] = yz
    a[i, c + 9] = h2
    a[i, c + 10] = 0.0
    a[i, c + 11] = -h0
    a[i, c + 12] = xz
    a[i, c + 13] = yz
    a[i, c + 14] = zz
    a[i, c + 15] = -h1
    a[i, c + 16] = h0
    a[i, c + 17] = 0.0
    a[i, c + 18] = 0.0
    a[i, c + 19] = h2
    a[i, c + 20] = -h1
    a[i, c + 21] = mass
    a[i, c + 22] = 0.0
    a[i, c + 23] = 0.0
    a[i, c + 24] = -h2
    a[i, c + 25] = 0.0
    a[i, c + 26] = h0
    a[i, c + 27] = 0.0
    a[i, c + 28] = mass
    a[i, c + 29] = 0.0
    a[i, c + 30] = h1
    a[i, c + 31] = -h0
    a[i, c + 32] = 0.0
    a[i, c + 33] = 0.0
    a[i, c + 34] = 0.0
    a[i, c + 35] = mass


# ---------------------------------------------------------------------------------------------
# articulated inertia (full 6×6, row-major, in 36 workspace columns)


@inlined
def row6_dot(a, i, c, m):
    """a[i, c:c+6] · m."""
    return (a[i, c] * m[0] + a[i, c + 1] * m[1] + a[i, c + 2] * m[2]
            + a[i, c + 3] * m[3] + a[i, c + 4] * m[4] + a[i, c + 5] * m[5])  # fmt: skip


@inlined
def mat6_mul(a, i, c, m):
    """A m for the 6×6 matrix A stored row-major at a[i, c:c+36]."""
    return (row6_dot(a, i, c, m), row6_dot(a, i, c + 6, m), row6_dot(a, i, c + 12, m),
            row6_dot(a, i, c + 18, m), row6_dot(a, i, c + 24, m), row6_dot(a, i, c + 30, m))  # fmt: skip


@inlined
def mat6_to_parent_add(a, i, c, R, p, j, d):
    """a[j, d:d+36] += ᶜX_Pᵀ A ᶜX_P for the symmetric 6×6 A at a[i, c:c+36].

    With ᶜX_Pᵀ = [[1, p×], [0, 1]] · diag(R, R): rotate every 3×3 block (Z ↦ R Z Rᵀ) giving
    A', B', C'; then shift: C'' = C', B'' = B' + p× C', A'' = A' + p× B'ᵀ − B'' p×.
    """
    # the three distinct blocks of A (A and C symmetric; the lower-left block is Bᵀ)
    A0 = (
        a[i, c],
        a[i, c + 1],
        a[i, c + 2],
        a[i, c + 6],
        a[i, c + 7],
        a[i, c + 8],
        a[i, c + 12],
        a[i, c + 13],
        a[i, c + 14],
    )
    B0 = (
        a[i, c + 3],
        a[i, c + 4],
        a[i, c + 5],
        a[i, c + 9],
        a[i, c + 10],
        a[i, c + 11],
        a[i, c + 15],
        a[i, c + 16],
        a[i, c + 17],
    )
    C0 = (
        a[i, c + 21],
        a[i, c + 22],
        a[i, c + 23],
        a[i, c + 27],
        a[i, c + 28],
        a[i, c + 29],
        a[i, c + 33],
        a[i, c + 34],
        a[i, c + 35],
    )
    Rt = (R[0], R[3], R[6], R[1], R[4], R[7], R[2], R[5], R[8])
    A1 = rot_mul(rot_mul(R, A0), Rt)
    B1 = rot_mul(rot_mul(R, B0), Rt)
    C1 = rot_mul(rot_mul(R, C0), Rt)
    px, py, pz = p
    P = (0.0, -pz, py, pz, 0.0, -px, -py, px, 0.0)  # p×
    PC = rot_mul(P, C1)
    B2 = (
        B1[0] + PC[0],
        B1[1] + PC[1],
        B1[2] + PC[2],
        B1[3] + PC[3],
        B1[4] + PC[4],
        B1[5] + PC[5],
        B1[6] + PC[6],
        B1[7] + PC[7],
        B1[8] + PC[8],
    )
    B1t = (B1[0], B1[3], B1[6], B1[1], B1[4], B1[7], B1[2], B1[5], B1[8])
    PB = rot_mul(P, B1t)
    BP = rot_mul(B2, P)
    for r in range(3):
        for k in range(3):
            a[j, d + 6 * r + k] += A1[3 * r + k] + PB[3 * r + k] - BP[3 * r + k]
            a[j, d + 6 * r + 3 + k] += B2[3 * r + k]
            a[j, d + 6 * (3 + k) + r] += B2[3 * r + k]
            a[j, d + 6 * (3 + r) + 3 + k] += C1[3 * r + k]


# ---------------------------------------------------------------------------------------------
# flat 1-D arrays (the cluster workspace ``wc``): 6-vectors, 3×3 and 6×6 blocks at an offset, with a
# row stride for blocks of larger row-major matrices


@inlined
def dot6w(wc, o, s):
    """wc[o:o+6] · s."""
    return (wc[o] * s[0] + wc[o + 1] * s[1] + wc[o + 2] * s[2]
            + wc[o + 3] * s[3] + wc[o + 4] * s[4] + wc[o + 5] * s[5])  # fmt: skip


@inlined
def block_mul(wc, off, stride, s):
    """(6 × 6 block at wc[off], row stride ``stride``) · s."""
    return (dot6w(wc, off, s), dot6w(wc, off + stride, s),
            dot6w(wc, off + 2 * stride, s), dot6w(wc, off + 3 * stride, s),
            dot6w(wc, off + 4 * stride, s), dot6w(wc, off + 5 * stride, s))  # fmt: skip


@inlined
def col6w(wc, o, stride):
    """The 6-vector wc[o], wc[o + stride], ..., wc[o + 5 stride] (a column of a row-major block)."""
    return (
        wc[o],
        wc[o + stride],
        wc[o + 2 * stride],
        wc[o + 3 * stride],
        wc[o + 4 * stride],
        wc[o + 5 * stride],
    )


@inlined
def add6w(wc, o, x):
    for r in range(6):
        wc[o + r] += x[r]


@inlined
def load9w(w, o, stride):
    """The 3×3 block at w[o] (row stride ``stride``) as a row-major 9-tuple."""
    return (w[o], w[o + 1], w[o + 2], w[o + stride], w[o + stride + 1], w[o + stride + 2],
            w[o + 2 * stride], w[o + 2 * stride + 1], w[o + 2 * stride + 2])  # fmt: skip


@inlined
def add9w(w, o, stride, x):
    for r in range(3):
        for c in range(3):
            w[o + r * stride + c] += x[3 * r + c]


@njit(cache=True)
def gen6_to_parent(w, src, sstride, Ra, pa, Rb, pb, out, dst, dstride, scratch, tmp):
    """out[dst block] += ᵃX_Λᵀ A ᵇX_Λ for a general 6×6 block A at w[src] (row strides given);
    scratch[tmp:tmp+36] is scratch."""
    for r in range(6):  # Y = A ᵇX_Λ row by row: (ᵇX_Λᵀ rowᵀ)ᵀ
        row = force_to_parent(Rb, pb, load6_at(w, src + r * sstride))
        for c in range(6):
            scratch[tmp + 6 * r + c] = row[c]
    for c in range(6):  # ᵃX_Λᵀ Y column by column
        col = force_to_parent(Ra, pa, col6w(scratch, tmp + c, 6))
        for r in range(6):
            out[dst + r * dstride + c] += col[r]


@inlined
def cholesky_solve_vector(Lf, n, x):
    """``x ← (L Lᵀ)⁻¹ x`` in place, for the Cholesky factor L in the lower triangle of the 2-D ``Lf``
    (n × n; the upper triangle is not read): forward substitution by rows, backward by columns."""
    for i in range(n):
        s = x[i]
        for k in range(i):
            s -= Lf[i, k] * x[k]
        x[i] = s / Lf[i, i]
    for i in range(n - 1, -1, -1):
        xi = x[i] / Lf[i, i]
        x[i] = xi
        for k in range(i):  # column i of Lᵀ, i.e. row i of L
            x[k] -= Lf[i, k] * xi


# A symmetric matrix is taken as positive definite when each Cholesky pivot exceeds SPD_RTOL times its
# diagonal entry (2 × 2: the determinant exceeds SPD_RTOL·d00·d11, i.e. 1 − ρ² > SPD_RTOL). A matrix
# that is singular in exact arithmetic (a gimbal at its lock, a loop at a toggle) leaves a pivot of a
# few rounding errors, of either sign and larger with fused multiply-adds: "> 0" would accept it and
# return an inverse of 1e16.
SPD_RTOL = 64.0 * 2.220446049250313e-16


@inlined
def spd2_inverse(d00, d01, d11):
    """``(ok, i00, i01, i11)``: the inverse of the symmetric 2 × 2 matrix ``[[d00, d01], [d01, d11]]``
    in closed form; ``ok`` is False (and the rest meaningless) if it is not positive definite
    (relative to its diagonal: :data:`SPD_RTOL`)."""
    det = d00 * d11 - d01 * d01
    if not (d00 > 0.0 and det > SPD_RTOL * (d00 * d11)):  # relative: see SPD_RTOL
        return False, 0.0, 0.0, 0.0
    return True, d11 / det, -d01 / det, d00 / det


@njit(cache=True)
def spd_inverse(w, src, n, out, dst, scratch, scr):
    """out[dst:dst+n²] = A⁻¹ (row-major) for the small symmetric positive-definite A (n ≤ 6) stored
    row-major at w[src:src+n²], by Cholesky; scratch[scr:scr+72] is scratch (any of the three 1-D
    arrays may be the same array). Returns False (output untouched) if A is not positive definite
    (a pivot below :data:`SPD_RTOL` times its diagonal entry)."""
    Lf = scr
    Li = scr + 36
    for col in range(n):
        acc = w[src + n * col + col]
        for k in range(col):
            acc -= scratch[Lf + 6 * col + k] * scratch[Lf + 6 * col + k]
        if not acc > SPD_RTOL * w[src + n * col + col]:  # relative pivot: see SPD_RTOL
            return False
        d = math.sqrt(acc)
        scratch[Lf + 6 * col + col] = d
        for r in range(col + 1, n):
            acc = w[src + n * r + col]
            for k in range(col):
                acc -= scratch[Lf + 6 * r + k] * scratch[Lf + 6 * col + k]
            scratch[Lf + 6 * r + col] = acc / d
    for r in range(n):
        scratch[Li + 6 * r + r] = 1.0 / scratch[Lf + 6 * r + r]
        for col in range(r):
            acc = 0.0
            for k in range(col, r):
                acc -= scratch[Lf + 6 * r + k] * scratch[Li + 6 * k + col]
            scratch[Li + 6 * r + col] = acc / scratch[Lf + 6 * r + r]
    for r in range(n):
        for col in range(r, n):
            acc = 0.0
            for k in range(col, n):
                acc += scratch[Li + 6 * k + r] * scratch[Li + 6 * k + col]
            out[dst + n * r + col] = acc
            out[dst + n * col + r] = acc
    return True
