"""Higher-order inverse and forward dynamics: τ^(0…r) and v^(1…r+1) along a trajectory.

Ali, Gabellieri & Franchi (2026), *Lie group formulation of recursive dynamics algorithms of higher
order for floating-base robots*: H-GRNE-FBS (Alg. 2) and H-GABI-FBS (Alg. 3 with Lemma 2), in the
paper's spatial formulation (each body's quantities about its own origin, world axes: see
:mod:`.kinematics`), with loopdyn's (Pinocchio's) coordinates at the API: row k
of a derivative stack is the k-th time derivative of the velocity vector ``v`` (free-flyer velocity in
the child frame, ``[linear; angular]``), and joint forces of a free-flyer are the child-frame wrench
``[force; torque]``. Order 0 is exactly :func:`loopdyn.rnea` / :func:`loopdyn.aba` (armature included).

Each public function makes one Numba kernel call: one pre-order and one post-order sweep for all
orders at once (inverse dynamics), and for the forward dynamics the articulated inertias factorised
once per call and reused at every order (Lemma 2), then per order one backward and one forward sweep.
"""

from __future__ import annotations

import math

import numpy as np

from ..algorithms.borrow import STACK_FLOATS, borrowed, keep_alive, stack_floats, view
from ..algorithms.borrow import flat as flat_view
from ..algorithms.common import kernel
from ..jit import inlined, njit
from ..model.joints import FREEFLYER, REVOLUTE_UNBOUNDED, SPHERICAL
from . import validation as hv
from .arrays import HB_IQ, HB_IV, HB_JTYPE, HB_NV, HB_PARENT, HF_ARM, HF_MASS
from .kinematics import (
    applied_wrench_sub,
    body_derivative,
    fill_binomials,
    inertia_shift_add,
    momentum_com,
    pose_and_screws,
    pose_derivative,
    screw_derivative,
    table_floats,
    table_views,
    twist_bias,
    twist_shift,
    twist_shift_add,
    wrench_shift_add,
)

_SIG = (
    "int64(int64[:, ::1], float64[:, ::1], float64[::1], float64[:, ::1], float64[:, :, ::1], "
    "float64[:, ::1])"
)
_SIG_NF = "int64(int64[:, ::1], float64[:, ::1], float64[::1], float64[:, ::1], float64[:, ::1])"
_SIG_FD_NF = (
    "int64(int64[:, ::1], float64[:, ::1], float64[::1], float64[::1], float64[:, ::1], float64[:, ::1])"
)
_SIG_FD = (
    "int64(int64[:, ::1], float64[:, ::1], float64[::1], float64[::1], float64[:, ::1], "
    "float64[:, :, ::1], float64[:, ::1])"
)


# ---------------------------------------------------------------------------------------------
# validation inside the kernels
@inlined
def check_finite(x, arg):
    flat = flat_view(x)
    for k in range(flat.shape[0]):
        if not math.isfinite(flat[k]):
            return (hv.NOT_FINITE + arg) * hv.STATUS_BASE + min(k, hv.STATUS_BASE - 1)
    return 0


@inlined
def check_q(hb, q):
    if q.shape[0] != hb[0, 1]:
        return hv.BAD_SHAPE * hv.STATUS_BASE + 0
    st = check_finite(q, 0)
    if st != 0:
        return st
    for i in range(1, hb[0, 0] + 1):
        jt = hb[i, HB_JTYPE]
        iq = hb[i, HB_IQ]
        if jt == SPHERICAL or jt == FREEFLYER:
            o = iq + 3 if jt == FREEFLYER else iq
            n2 = q[o] ** 2 + q[o + 1] ** 2 + q[o + 2] ** 2 + q[o + 3] ** 2
            if abs(math.sqrt(n2) - 1.0) > hv.UNIT_TOL:
                return hv.BAD_QUAT * hv.STATUS_BASE + i
        elif jt == REVOLUTE_UNBOUNDED:
            if abs(math.sqrt(q[iq] ** 2 + q[iq + 1] ** 2) - 1.0) > hv.UNIT_TOL:
                return hv.BAD_UNIT_COMPLEX * hv.STATUS_BASE + i
    return 0


@inlined
def check_stack(x, rows, nv, arg):
    """A (rows, nv) stack (rows < 0: any number ≥ 1) of finite numbers."""
    if x.shape[1] != nv or x.shape[0] < 1 or (rows >= 0 and x.shape[0] != rows):
        if x.shape[1] == nv and x.shape[0] >= 1:
            return hv.ORDER_MISMATCH * hv.STATUS_BASE + arg
        return hv.BAD_SHAPE * hv.STATUS_BASE + arg
    return check_finite(x, arg)


@inlined
def check_motion_inputs(hb, dv, nv, fext):
    """Status of inverse dynamics' ``dv`` (r + 2 ≥ 2 rows of ``nv`` finite numbers: argument 1) and
    ``f_ext`` (empty, or r + 1 rows of finite (njoints, 6) wrenches: argument 2)."""
    st = check_stack(dv, -1, nv, 1)
    if st == 0 and dv.shape[0] < 2:
        st = hv.BAD_SHAPE * hv.STATUS_BASE + 1
    if st == 0:
        st = check_fext(hb, fext, dv.shape[0] - 1, 2)
    return st


@inlined
def check_fext(hb, fext, rows, arg):
    if fext.shape[0] == 0:
        return 0
    if fext.shape[1] != hb[0, 0] + 1 or fext.shape[2] != 6:
        return hv.BAD_SHAPE * hv.STATUS_BASE + arg
    if fext.shape[0] != rows:
        return hv.ORDER_MISMATCH * hv.STATUS_BASE + arg
    return check_finite(fext, arg)


# ---------------------------------------------------------------------------------------------
# H-GRNE (paper Alg. 2)
@njit(cache=True, fastmath={"contract"})  # fused multiply-adds, as the tree CRBA
def rnea_core(hb, hf, q, vd, fext, out):
    """τ^(0…R) into ``out`` (R+1, nv) from ``vd`` = v^(0…R+1) on validated inputs. The per-call tables
    (and binomials, scratch) live on the stack if they fit, else in one heap allocation (borrowed:
    their views are uncounted); either way in this function, so LLVM knows they alias no argument."""
    nb, nv = hb[0, 0], hb[0, 2]
    R = vd.shape[0] - 2
    K = R + 1
    n = table_floats(K, R, nb, nv) + (K + 2) * (K + 2) + 6 + (K + 1) * (K + 1) * 6
    buf = stack_floats()
    if n > STACK_FLOATS:
        bufc = np.empty(n)
        (buf,) = borrowed((bufc,))
    V, S, Rw, pw, dw, cw, Jw, Ib, F, W, _, rest = table_views(buf, K, R, nb, nv)
    C = view(rest, 0, (K + 2, K + 2))
    fill_binomials(C)
    vb = rest[(K + 2) * (K + 2) : (K + 2) * (K + 2) + 6]
    Z = view(rest, (K + 2) * (K + 2) + 6, (K + 1, K + 1, 6))  # the floating root's z_j^(p), u_j^(p)
    g = hf[0, 0:3]
    # pre-order sweep (Alg. 1 then Alg. 2 lines 2–6, 9 without the children's sum)
    for i in range(1, nb + 1):
        par = hb[i, HB_PARENT]
        iv = hb[i, HB_IV]
        pose_and_screws(hb, hf, i, q, Rw, pw, dw, S)
        root = floating_root(hb, i)
        if root:
            root_twists(hb, i, K, C, vd, Rw, V, Z)
        for k in range(K + 1):
            if not root:
                if k > 0:
                    screw_derivative(hb, i, k, C, V, S)  # D1
                twist_bias(hb, i, k, C, S, vd, vb)  # D2 = V_p^(k) (about o_i) + S v^(k) + D6
                twist_shift_add(V[k, par], dw[i], vb)
                for a in range(6):
                    acc = vb[a]
                    for c in range(hb[i, HB_NV]):
                        acc += S[0, iv + c, a] * vd[k, iv + c]
                    V[k, i, a] = acc
            pose_derivative(hf, i, k, C, V, Rw, pw, cw, Jw, fext.shape[0] > 0)  # pose, D3
        for r in range(R + 1):  # W_i^(r) ← Π^(r+1) − W_grav^(r) − W_app^(r)   (D4, D7, D9)
            momentum_com(hf, i, r + 1, True, C, V, cw, Jw, W[r, i])
            applied_wrench_sub(hf, fext, i, r, C, g, Rw, pw, cw, F, W[r, i])
    # post-order sweep (Alg. 2 lines 7–15): children's wrenches, projections
    for i in range(nb, 0, -1):
        par = hb[i, HB_PARENT]
        iv = hb[i, HB_IV]
        if floating_root(hb, i):
            root_forces(hb, hf, i, R, C, vd, Rw, V, W, Z, out)
        for c in range(iv, iv + hb[i, HB_NV] * (1 - floating_root(hb, i))):
            arm = hf[i, HF_ARM + c - iv]
            for r in range(R + 1):  # τ^(r) = Σ_k binom(r, k) S^(r−k)ᵀ W^(k)  (Alg. 2 line 14)
                acc = arm * vd[r + 1, c]
                for k in range(r + 1):
                    s = 0.0
                    for a in range(6):
                        s += S[r - k, c, a] * W[k, i, a]
                    acc += C[r, k] * s
                out[r, c] = acc
        if par > 0:  # the parent's wrench about its own origin
            d = dw[i]
            for r in range(R + 1):
                w = W[r, i]
                wrench_shift_add(w[0], w[1], w[2], w[3], w[4], w[5], d, W[r, par])
    if n > STACK_FLOATS:
        keep_alive(bufc)


@inlined
def floating_root(hb, i):
    """Whether body i hangs from the world by a free-flyer joint (its columns take the steps below)."""
    return hb[i, HB_PARENT] == 0 and hb[i, HB_JTYPE] == FREEFLYER


@inlined
def root_twists(hb, i, K, C, vd, Rw, V, Z):
    """``V^(0…K)`` of a free-flyer root without its six screw derivatives (D1, D2): its twist about its
    origin is ``V = Ad_C ν`` (ν = (ω; v), Pinocchio's child-frame velocity reordered; C = (R, 0), the
    body's pose in the inertial frame at its origin) and ``d/dt (Ad_C x) = Ad_C (ẋ + ad_ν x)``, so with
    ``z_1 = ν̇`` and ``z_{j+1} = ż_j + ad_ν z_j``, ``V^(k) = Ad_C z_k``
    (``V̇ = Ad_C ν̇``: ``ad_ν ν = 0``). The derivatives ``z_j^(p)`` (j + p ≤ K) go into ``Z[j, p]``:
    ``z_1^(p) = ν^(p+1)``, ``z_{j+1}^(p) = z_j^(p+1) + Σ_l binom(p, l) ad_{ν^(l)} z_j^(p−l)``: 35
    six-vector products at K = 6 where the screw derivatives of six columns take 126."""
    iv = hb[i, HB_IV]
    for p in range(K):
        for a in range(3):
            Z[1, p, a] = vd[p + 1, iv + 3 + a]
            Z[1, p, 3 + a] = vd[p + 1, iv + a]
    for j in range(1, K):
        for p in range(K - j):
            x0, x1, x2 = Z[j, p + 1, 0], Z[j, p + 1, 1], Z[j, p + 1, 2]
            y0, y1, y2 = Z[j, p + 1, 3], Z[j, p + 1, 4], Z[j, p + 1, 5]
            for l in range(p + 1):  # ad_ν z = (ω × a ; v × a + ω × b) for z = (a; b)
                f = C[p, l]
                w0, w1, w2 = f * vd[l, iv + 3], f * vd[l, iv + 4], f * vd[l, iv + 5]
                u0, u1, u2 = f * vd[l, iv], f * vd[l, iv + 1], f * vd[l, iv + 2]
                z = Z[j, p - l]
                x0 += w1 * z[2] - w2 * z[1]
                x1 += w2 * z[0] - w0 * z[2]
                x2 += w0 * z[1] - w1 * z[0]
                y0 += u1 * z[2] - u2 * z[1] + w1 * z[5] - w2 * z[4]
                y1 += u2 * z[0] - u0 * z[2] + w2 * z[3] - w0 * z[5]
                y2 += u0 * z[1] - u1 * z[0] + w0 * z[4] - w1 * z[3]
            Z[j + 1, p, 0], Z[j + 1, p, 1], Z[j + 1, p, 2] = x0, x1, x2
            Z[j + 1, p, 3], Z[j + 1, p, 4], Z[j + 1, p, 5] = y0, y1, y2
    Rr = Rw[0, i]
    for k in range(K + 1):  # V^(k) = Ad_C z_k = (R a ; R b), z_0 = ν
        if k == 0:
            a0, a1, a2 = vd[0, iv + 3], vd[0, iv + 4], vd[0, iv + 5]
            b0, b1, b2 = vd[0, iv], vd[0, iv + 1], vd[0, iv + 2]
        else:
            a0, a1, a2, b0, b1, b2 = Z[k, 0, 0], Z[k, 0, 1], Z[k, 0, 2], Z[k, 0, 3], Z[k, 0, 4], Z[k, 0, 5]
        V[k, i, 0] = Rr[0, 0] * a0 + Rr[0, 1] * a1 + Rr[0, 2] * a2
        V[k, i, 1] = Rr[1, 0] * a0 + Rr[1, 1] * a1 + Rr[1, 2] * a2
        V[k, i, 2] = Rr[2, 0] * a0 + Rr[2, 1] * a1 + Rr[2, 2] * a2
        V[k, i, 3] = Rr[0, 0] * b0 + Rr[0, 1] * b1 + Rr[0, 2] * b2
        V[k, i, 4] = Rr[1, 0] * b0 + Rr[1, 1] * b1 + Rr[1, 2] * b2
        V[k, i, 5] = Rr[2, 0] * b0 + Rr[2, 1] * b1 + Rr[2, 2] * b2


@inlined
def root_forces(hb, hf, i, R, C, vd, Rw, V, W, Z, out):
    """τ^(0…R) of a free-flyer root (Alg. 2 line 14 without its screw derivatives): ``Sᵀ W`` is the
    child-frame wrench ``Ad_Cᵀ W`` reordered, and ``d/dt (Ad_Cᵀ w) = Ad_Cᵀ (ẇ + ad_Vᵀ w)``, so with
    ``u_0 = W`` and ``u_{j+1} = u̇_j + ad_Vᵀ u_j``, ``τ^(r) = Ad_Cᵀ u_r`` (+ armature). ``u_j^(p)``
    (j + p ≤ R, ``u_0^(p) = W^(p)``) go into ``Z[j, p]``: ``u_{j+1}^(p) = u_j^(p+1) + Σ_l binom(p, l)
    ad_{V^(l)}ᵀ u_j^(p−l)``, with ``ad_Vᵀ (n; f) = −(ω × n + v × f ; ω × f)``."""
    iv = hb[i, HB_IV]
    for j in range(R):
        src = W[:, i] if j == 0 else Z[j]
        for p in range(R - j):
            n0, n1, n2 = src[p + 1, 0], src[p + 1, 1], src[p + 1, 2]
            f0, f1, f2 = src[p + 1, 3], src[p + 1, 4], src[p + 1, 5]
            for l in range(p + 1):
                c = C[p, l]
                w0, w1, w2 = c * V[l, i, 0], c * V[l, i, 1], c * V[l, i, 2]
                v0, v1, v2 = c * V[l, i, 3], c * V[l, i, 4], c * V[l, i, 5]
                u = src[p - l]
                n0 -= w1 * u[2] - w2 * u[1] + v1 * u[5] - v2 * u[4]
                n1 -= w2 * u[0] - w0 * u[2] + v2 * u[3] - v0 * u[5]
                n2 -= w0 * u[1] - w1 * u[0] + v0 * u[4] - v1 * u[3]
                f0 -= w1 * u[5] - w2 * u[4]
                f1 -= w2 * u[3] - w0 * u[5]
                f2 -= w0 * u[4] - w1 * u[3]
            Z[j + 1, p, 0], Z[j + 1, p, 1], Z[j + 1, p, 2] = n0, n1, n2
            Z[j + 1, p, 3], Z[j + 1, p, 4], Z[j + 1, p, 5] = f0, f1, f2
    Rr = Rw[0, i]
    for r in range(R + 1):  # Ad_Cᵀ (n; f) = (Rᵀ n ; Rᵀ f) (C = (R, 0)), Pinocchio's order [force; torque]
        u = W[0, i] if r == 0 else Z[r, 0]
        n0, n1, n2 = u[0], u[1], u[2]
        for a in range(3):
            out[r, iv + a] = (
                Rr[0, a] * u[3] + Rr[1, a] * u[4] + Rr[2, a] * u[5] + hf[i, HF_ARM + a] * vd[r + 1, iv + a]
            )
            out[r, iv + 3 + a] = (
                Rr[0, a] * n0 + Rr[1, a] * n1 + Rr[2, a] * n2 + hf[i, HF_ARM + 3 + a] * vd[r + 1, iv + 3 + a]
            )


@inlined
def no_forces(hf):
    """An empty ``(0, 0, 6)`` external-force stack (a view of ``hf``: nothing allocated)."""
    return view(hf[0], 0, (0, 0, 6))


@kernel(_SIG)
def rnea_kernel(hb, hf, q, dv, fext, out):
    hb, hf, q, dv, fext, out = borrowed((hb, hf, q, dv, fext, out))
    return rnea_entry(hb, hf, q, dv, fext, out)


@kernel(_SIG_NF)
def rnea_nf_kernel(hb, hf, q, dv, out):
    """:func:`rnea_kernel` without external forces (one argument fewer: a cheaper call from Python)."""
    hb, hf, q, dv, out = borrowed((hb, hf, q, dv, out))
    return rnea_entry(hb, hf, q, dv, no_forces(hf), out)


@inlined
def rnea_entry(hb, hf, q, dv, fext, out):
    """Validation (status, nothing written on failure), then :func:`rnea_core`."""
    st = check_q(hb, q)
    if st == 0:
        st = check_motion_inputs(hb, dv, hb[0, 2], fext)
    if st != 0:
        return st
    rnea_core(hb, hf, q, dv, fext, out)
    return 0


# ---------------------------------------------------------------------------------------------
# H-GABI (paper Alg. 3, Lemma 2)
@inlined
def cholesky_lower(A, n, L):
    """``L[:n, :n]`` lower triangular with ``A[:n, :n] = L Lᵀ``; False if a pivot is not above
    ``1e-14 (1 + |A_jj|)`` (A not positive definite)."""
    for j in range(n):
        d = A[j, j]
        for k in range(j):
            d -= L[j, k] * L[j, k]
        if not d > 1e-14 * (1.0 + abs(A[j, j])):
            return False
        L[j, j] = math.sqrt(d)
        for i in range(j + 1, n):
            s = A[i, j]
            for k in range(j):
                s -= L[i, k] * L[j, k]
            L[i, j] = s / L[j, j]
    return True


@inlined
def cholesky_solve(L, n, b, y, x):
    """``x = (L Lᵀ)⁻¹ b`` by forward then backward substitution (``y``: n floats of scratch; ``x`` may be
    ``b``: b is read only by the forward pass)."""
    for i in range(n):
        s = b[i]
        for k in range(i):
            s -= L[i, k] * y[k]
        y[i] = s / L[i, i]
    for i in range(n - 1, -1, -1):
        s = y[i]
        for k in range(i + 1, n):
            s -= L[k, i] * x[k]
        x[i] = s / L[i, i]


@njit(cache=True)
def spd_inverse(A, n, Ainv, scratch):
    """Inverse of the SPD n×n block ``A[:n, :n]`` by Cholesky into ``Ainv``; False if not SPD.
    ``scratch``: at least 42 floats."""
    L = view(scratch, 0, (6, 6))
    y = scratch[36:42]
    if not cholesky_lower(A, n, L):
        return False
    for c in range(n):  # column c of A⁻¹: solve L Lᵀ x = e_c in place
        for i in range(n):
            Ainv[i, c] = 1.0 if i == c else 0.0
        cholesky_solve(L, n, Ainv[:, c], y, Ainv[:, c])
    return True


@inlined
def spatial_inertia(hf, i, Ib, cw, M):
    """The 6×6 spatial inertia ``[[Ī, m[c]], [m[c]ᵀ, m 1]]`` of body i at order 0."""
    m_ = hf[i, HF_MASS]
    c = cw[0, i]
    for a in range(3):
        for b in range(3):
            M[a, b] = Ib[0, i, a, b]
            M[3 + a, 3 + b] = m_ if a == b else 0.0
    M[0, 3], M[0, 4], M[0, 5] = 0.0, -m_ * c[2], m_ * c[1]
    M[1, 3], M[1, 4], M[1, 5] = m_ * c[2], 0.0, -m_ * c[0]
    M[2, 3], M[2, 4], M[2, 5] = -m_ * c[1], m_ * c[0], 0.0
    for a in range(3):
        for b in range(3):
            M[3 + a, b] = M[b, 3 + a]


@inlined
def prescribed(mask, i):
    """Whether joint i has a prescribed motion (Alg. 4); an empty ``mask`` prescribes none."""
    return mask.shape[0] > 0 and mask[i] == 1


@njit(cache=True, fastmath={"contract"})
def articulated_inertias(hb, hf, mask, S, Ib, cw, dw, MA, U, Dinv, scratch):
    """Post-order sweep of eq. 23 (once per call): ``M^A_j``, ``U = M^A S``, ``D⁻¹ = (SᵀM^A S +
    armature)⁻¹``, each about its body's origin; the parent receives ``M^A − U D⁻¹ Uᵀ`` moved to its
    own origin. Joints with ``mask[i] = 1`` (prescribed motion, Alg. 4 line 5') pass ``M^A``
    unreduced. Returns 0 or the index of the first body whose D is not positive definite.
    ``scratch``: at least 114 floats."""
    nb = hb[0, 0]
    for i in range(1, nb + 1):
        spatial_inertia(hf, i, Ib, cw, MA[i])
    D = view(scratch, 42, (6, 6))
    T = view(scratch, 78, (6, 6))
    for i in range(nb, 0, -1):
        par = hb[i, HB_PARENT]
        iv = hb[i, HB_IV]
        n = hb[i, HB_NV]
        for c in range(n):
            for a in range(6):
                s = 0.0
                for b in range(6):
                    s += MA[i, a, b] * S[0, iv + c, b]
                U[iv + c, a] = s
        if not prescribed(mask, i):
            for c in range(n):
                for d in range(n):
                    s = hf[i, HF_ARM + c] if c == d else 0.0
                    for a in range(6):
                        s += S[0, iv + c, a] * U[iv + d, a]
                    D[c, d] = s
            if n == 1:  # one coordinate: D is a scalar
                if not D[0, 0] > 1e-14 * (1.0 + abs(D[0, 0])):
                    return i
                Dinv[i, 0, 0] = 1.0 / D[0, 0]
            elif not spd_inverse(D, n, Dinv[i], scratch):
                return i
        if par > 0:
            if not prescribed(mask, i) and n == 1:  # M^A − U D⁻¹ Uᵀ, rank one (its lower-left
                dinv = Dinv[i, 0, 0]  # block: not needed)
                for a in range(6):
                    ua = U[iv, a] * dinv
                    for b in range(0 if a < 3 else 3, 6):
                        T[a, b] = MA[i, a, b] - ua * U[iv, b]
            else:
                for a in range(6):
                    for b in range(0 if a < 3 else 3, 6):
                        s = MA[i, a, b]
                        if not prescribed(mask, i):
                            for c in range(n):
                                for d in range(n):
                                    s -= U[iv + c, a] * Dinv[i, c, d] * U[iv + d, b]
                        T[a, b] = s
            inertia_shift_add(T, 0, dw[i], MA[par], 0)
    return 0


@inlined
def order_tables(hb, hf, fext, r, C, g, V, S, vd, Rw, pw, cw, Jw, Ib, F, Vb, B):
    """Alg. 3 lines 10–16 at order r: ``S^(r+1)`` (D1), ``c^(r+1)``, ``J^(r+1)`` (D3, no ``Ī``),
    ``V_bias^(r+1)`` (D6), and the bias ``B_i ← Π_bias^(r+1) − W_grav^(r) − W_app^(r)`` (D5, D7, D9)."""
    for i in range(1, hb[0, 0] + 1):
        screw_derivative(hb, i, r + 1, C, V, S)
        pose_derivative(hf, i, r + 1, C, V, Rw, pw, cw, Jw, fext.shape[0] > 0)
        twist_bias(hb, i, r + 1, C, S, vd, Vb[i])
        momentum_com(hf, i, r + 1, False, C, V, cw, Jw, B[i])
        applied_wrench_sub(hf, fext, i, r, C, g, Rw, pw, cw, F, B[i])


@inlined
def order_zero(hb, hf, q, vd, V, S, Rw, pw, dw, cw, Jw, Ib, C):
    """Alg. 1 at order 0: poses, screws, twists and inertias of every body (``C``: binomials, ≥ 1 × 1)."""
    for i in range(1, hb[0, 0] + 1):
        par = hb[i, HB_PARENT]
        iv = hb[i, HB_IV]
        pose_and_screws(hb, hf, i, q, Rw, pw, dw, S)
        Vi = V[0, i]
        Vi[0], Vi[1], Vi[2], Vi[3], Vi[4], Vi[5] = twist_shift(V[0, par], dw[i])  # the parent's, about o_i
        for c in range(hb[i, HB_NV]):
            x = vd[0, iv + c]
            for a in range(6):
                Vi[a] += S[0, iv + c, a] * x
        body_derivative(hf, i, 0, C, V, Rw, pw, cw, Jw, Ib, False)


@inlined
def joint_wrench_projection(hb, i, c, r, C, S, W):
    """τ̃ of eq. 25: ``Σ_{k<r} binom(r, k) S^(r−k)ᵀ W^(k)`` for column c of joint i."""
    acc = 0.0
    for k in range(r):
        s = 0.0
        for a in range(6):
            s += S[r - k, c, a] * W[k, i, a]
        acc += C[r, k] * s
    return acc


@inlined
def aba_backward(hb, hf, mask, r, C, S, W, vd, dtau, dw, MA, U, Dinv, Vb, B, qt, t6):
    """Order r, backward sweep (Alg. 3 lines 18–23; Alg. 4 line 19'): ``q̃ = D⁻¹(τ^(r) − τ̃ − Sᵀ(M^A
    V_bias + B))`` per joint (the prescribed motion for prescribed joints) and the bias handed to the
    parent (moved to its origin), ``B_p += B_i + M^A_i (S_i q̃_i + V_bias,i)``."""
    for i in range(hb[0, 0], 0, -1):
        par = hb[i, HB_PARENT]
        iv = hb[i, HB_IV]
        n = hb[i, HB_NV]
        for a in range(6):  # t6 = M^A Vb + B, once for the joint and the parent
            s = B[i, a]
            for b in range(6):
                s += MA[i, a, b] * Vb[i, b]
            t6[a] = s
        if prescribed(mask, i):
            for c in range(n):
                qt[iv + c] = vd[r + 1, iv + c]
        else:
            for c in range(n):
                u = dtau[r, iv + c] - joint_wrench_projection(hb, i, iv + c, r, C, S, W)
                for a in range(6):
                    u -= S[0, iv + c, a] * t6[a]
                qt[iv + c] = u  # replaced by q̃ = D⁻¹ u below
            if n == 1:
                qt[iv] *= Dinv[i, 0, 0]
            else:
                for c in range(n):
                    s = 0.0
                    for d in range(n):
                        s += Dinv[i, c, d] * qt[iv + d]
                    t6[6 + c] = s
                for c in range(n):
                    qt[iv + c] = t6[6 + c]
        if par > 0:
            s0, s1, s2, s3, s4, s5 = t6[0], t6[1], t6[2], t6[3], t6[4], t6[5]
            for c in range(n):
                x = qt[iv + c]
                u = U[iv + c]
                s0 += u[0] * x
                s1 += u[1] * x
                s2 += u[2] * x
                s3 += u[3] * x
                s4 += u[4] * x
                s5 += u[5] * x
            wrench_shift_add(s0, s1, s2, s3, s4, s5, dw[i], B[par])


@inlined
def aba_forward(hb, hf, mask, r, C, S, V, W, vd, dtau, dw, MA, U, Dinv, Vb, B, qt, t6, out, tau_out):
    """Order r, forward sweep (Alg. 3 lines 25–30; Alg. 4 lines 28'–31'): ``v^(r+1) = q̃ − D⁻¹Uᵀ
    V_p^(r+1)`` (``V_p`` about the child's origin), the twists ``V^(r+1)`` and the joint wrenches
    ``W^(r) = B + M^A V^(r+1)``; with prescribed joints their ``τ^(r)`` (E5)."""
    for i in range(1, hb[0, 0] + 1):
        par = hb[i, HB_PARENT]
        iv = hb[i, HB_IV]
        n = hb[i, HB_NV]
        p0, p1, p2, p3, p4, p5 = twist_shift(V[r + 1, par], dw[i])  # the parent's, about o_i
        if not prescribed(mask, i):
            for c in range(n):
                u = U[iv + c]
                t6[c] = u[0] * p0 + u[1] * p1 + u[2] * p2 + u[3] * p3 + u[4] * p4 + u[5] * p5
            for c in range(n):
                s = qt[iv + c]
                for d in range(n):
                    s -= Dinv[i, c, d] * t6[d]
                vd[r + 1, iv + c] = s
        for c in range(n):
            out[r, iv + c] = vd[r + 1, iv + c]
        Vi = V[r + 1, i]
        b = Vb[i]
        Vi[0], Vi[1], Vi[2] = p0 + b[0], p1 + b[1], p2 + b[2]
        Vi[3], Vi[4], Vi[5] = p3 + b[3], p4 + b[4], p5 + b[5]
        for c in range(n):
            x = vd[r + 1, iv + c]
            for a in range(6):
                Vi[a] += S[0, iv + c, a] * x
        if r + 1 == dtau.shape[0] and tau_out.shape[0] == 0:
            continue  # W^(R) serves only the hybrid's τ
        for a in range(6):
            s = B[i, a]
            for b in range(6):
                s += MA[i, a, b] * V[r + 1, i, b]
            W[r, i, a] = s
        if tau_out.shape[0] > 0:
            for c in range(iv, iv + n):
                if prescribed(mask, i):  # Q^(r) = Σ binom(r, k) S^(r−k)ᵀ W^(k) with the hybrid M^A (E5)
                    acc = (
                        joint_wrench_projection(hb, i, c, r, C, S, W) + hf[i, HF_ARM + c - iv] * vd[r + 1, c]
                    )
                    for a in range(6):
                        acc += S[0, c, a] * W[r, i, a]
                    tau_out[r, c] = acc
                else:
                    tau_out[r, c] = dtau[r, c]


@njit(cache=True, fastmath={"contract"})  # fused multiply-adds, as the tree CRBA
def aba_core(hb, hf, q, mask, dvk, dtau, fext, out, tau_out):
    """v^(1…R+1) into ``out`` from τ^(0…R) on validated inputs (Alg. 3); with prescribed joints
    (``mask[i] = 1``: their rows 1… of ``dvk`` are the motion, Alg. 4) also their τ^(0…R) into
    ``tau_out``. Row 0 of ``dvk`` is the velocity v. The per-call tables live on the stack if they fit,
    else in one heap allocation (borrowed: uncounted), as in :func:`rnea_core`."""
    nb, nv = hb[0, 0], hb[0, 2]
    R = dtau.shape[0] - 1
    K = R + 1
    na = (nb + 1) * (36 + 36 + 12) + nv * 7 + 12 + 114  # articulated-body tables, scratch
    n = table_floats(K, R, nb, nv) + (K + 2) * (K + 2) + na
    buf = stack_floats()
    if n > STACK_FLOATS:
        bufc = np.empty(n)
        (buf,) = borrowed((bufc,))
    V, S, Rw, pw, dw, cw, Jw, Ib, F, W, vd, rest = table_views(buf, K, R, nb, nv)
    C = view(rest, 0, (K + 2, K + 2))
    fill_binomials(C)
    art = rest[(K + 2) * (K + 2) :]
    g = hf[0, 0:3]
    vd[0] = dvk[0]
    o = (nb + 1) * 36
    MA = view(art, 0, (nb + 1, 6, 6))
    Dinv = view(art, o, (nb + 1, 6, 6))
    Vb = view(art, 2 * o, (nb + 1, 6))
    B = view(art, 2 * o + (nb + 1) * 6, (nb + 1, 6))
    o = 2 * o + (nb + 1) * 12
    U = view(art, o, (nv, 6))
    qt = art[o + nv * 6 : o + nv * 7]
    t6 = art[o + nv * 7 : o + nv * 7 + 12]
    scratch = art[o + nv * 7 + 12 :]
    Vb[:, :] = 0.0
    B[:, :] = 0.0
    order_zero(hb, hf, q, vd, V, S, Rw, pw, dw, cw, Jw, Ib, C)
    bad = articulated_inertias(hb, hf, mask, S, Ib, cw, dw, MA, U, Dinv, scratch)  # Lemma 2: once
    st = 0
    if bad:
        st = hv.SINGULAR * hv.STATUS_BASE + bad
    else:
        for r in range(R + 1):
            for i in range(1, nb + 1):  # prescribed motion of order r + 1 (Alg. 4)
                if prescribed(mask, i):
                    for c in range(hb[i, HB_IV], hb[i, HB_IV] + hb[i, HB_NV]):
                        vd[r + 1, c] = dvk[r + 1, c]
            order_tables(hb, hf, fext, r, C, g, V, S, vd, Rw, pw, cw, Jw, Ib, F, Vb, B)
            aba_backward(hb, hf, mask, r, C, S, W, vd, dtau, dw, MA, U, Dinv, Vb, B, qt, t6)
            aba_forward(hb, hf, mask, r, C, S, V, W, vd, dtau, dw, MA, U, Dinv, Vb, B, qt, t6, out, tau_out)
    if n > STACK_FLOATS:
        keep_alive(bufc)
    return st


@kernel(_SIG_FD)
def aba_kernel(hb, hf, q, v, dtau, fext, out):
    hb, hf, q, v, dtau, fext, out = borrowed((hb, hf, q, v, dtau, fext, out))
    return aba_entry(hb, hf, q, v, dtau, fext, out)


@kernel(_SIG_FD_NF)
def aba_nf_kernel(hb, hf, q, v, dtau, out):
    """:func:`aba_kernel` without external forces (one argument fewer: a cheaper call from Python)."""
    hb, hf, q, v, dtau, out = borrowed((hb, hf, q, v, dtau, out))
    return aba_entry(hb, hf, q, v, dtau, no_forces(hf), out)


@inlined
def aba_entry(hb, hf, q, v, dtau, fext, out):
    """Validation (status, nothing written on failure), then :func:`aba_core` with no prescribed joint."""
    st = check_q(hb, q)
    if st == 0:
        if v.shape[0] != hb[0, 2]:
            st = hv.BAD_SHAPE * hv.STATUS_BASE + 1
        else:
            st = check_finite(v, 1)
    if st == 0:
        st = check_stack(dtau, -1, hb[0, 2], 2)
    if st == 0:
        st = check_fext(hb, fext, dtau.shape[0], 3)
    if st != 0:
        return st
    # an empty mask: no prescribed joint; no τ output
    return aba_core(hb, hf, q, hb[0, :0], view(v, 0, (1, v.shape[0])), dtau, fext, out, out[:0])


_SIG_HYB = (
    "int64(int64[:, ::1], float64[:, ::1], float64[::1], int64[::1], float64[:, ::1], float64[:, ::1], "
    "float64[:, :, ::1], float64[:, ::1], float64[:, ::1])"
)


@kernel(_SIG_HYB)
def hybrid_kernel(hb, hf, q, mask, dv, dtau, fext, out, tau_out):
    hb, hf, q, mask, dv, dtau, fext, out, tau_out = borrowed((hb, hf, q, mask, dv, dtau, fext, out, tau_out))
    st = check_q(hb, q)
    if st == 0:
        st = check_stack(dv, -1, hb[0, 2], 1)
    if st == 0:
        st = check_stack(dtau, dv.shape[0] - 1, hb[0, 2], 2)
    if st == 0:
        st = check_fext(hb, fext, dv.shape[0] - 1, 3)
    if st == 0 and dv.shape[0] < 2:
        st = hv.BAD_SHAPE * hv.STATUS_BASE + 1
    if st != 0:
        return st
    return aba_core(hb, hf, q, mask, dv, dtau, fext, out, tau_out)
