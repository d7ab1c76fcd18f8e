"""Order-r forward dynamics on a tree of explicit clusters of constant G: a cluster articulated-body
recursion (C-ABA, Chignoli et al. 2024 Alg. 1) carried to every order with Lemma 2 of Ali, Gabellieri
& Franchi (2026).

Everything is in the paper's spatial form, each body's quantities about its own origin (world axes,
:mod:`.kinematics`), so a body's twist is its parent's (moved to its origin) plus its joint's: for
body b of cluster k, with Λ(b) its nearest ancestor outside k (a body of the parent cluster, its
*port*),

    V_b^(r+1) = X_b V_Λ(b)^(r+1) + 𝖲_b y_k^(r+1) + 𝖼_b,    𝖲_b = Σ_{b' ∈ chain(b)} X_bb' S_b' G_b',
    𝖼_b = Σ_{b' ∈ chain(b)} X_bb' V_bias,b'^(r+1)   (D6),

chain(b) = b and its ancestors inside k, ``X_b`` / ``X_bb'`` the shift of a twist about the port's /
b′'s origin to b's (:func:`~.kinematics.twist_shift`; the offsets ``e_b = o_b − o_Λ(b)`` are tabulated
per position). The port wrenches of k obey ``𝖥 = 𝖨^A 𝖵 + 𝗉`` with a 6 n_b × 6 n_b articulated
inertia 𝖨^A (block (a, b) about the origins of a and b) that is the same at every order (the leading
coefficient of eq. 23 does not depend on r: Lemma 2). So, once per call and per cluster: ``𝖴 = 𝖨^A 𝖲``,
``𝖣 = 𝖲ᵀ𝖴 + Gᵀ diag(armature) G = L Lᵀ`` and the parent's blocks ``(Λa, Λb) += X_aᵀ (𝖨^A −
𝖴𝖣⁻¹𝖴ᵀ)_ab X_b``; then per order one backward sweep over the clusters (bias 𝗉, ``𝗎 = τ_y^(r) − Gᵀτ̃
− 𝖲ᵀ(𝖨^A 𝖼 + 𝗉)``, eq. 25) and one forward sweep (``y^(r+1) = 𝖣⁻¹(𝗎 − 𝖴ᵀ X V_Λ^(r+1))``), then
the spanning joint wrenches ``W^(r)`` that the later orders' τ̃ need (D4). Cost O(N r²) like the
tree's H-GABI.

Tables built by :func:`build_cluster_tables` (cached with the model's maps): ``ct`` one row per cluster
(row 0: number of clusters, floats of per-call storage, largest m, number of positions), ``bt`` one
row per *position* (the cluster's bodies in order, clusters in order): body, port body, port's local
index in the parent cluster (−1: the world), local index of the in-cluster parent (−1: none).
"""

from __future__ import annotations

import weakref

import numpy as np

from ..algorithms.borrow import borrowed, keep_alive
from ..algorithms.common import kernel
from ..jit import inlined, shared
from . import validation as hv
from .arrays import HB_IV, HB_NV, HB_PARENT, HF_ARM
from .clusters import check_cluster_inputs, map_offsets, spanning_q, spanning_v
from .dynamics import (
    check_q,
    cholesky_lower,
    joint_wrench_projection,
    order_tables,
    order_zero,
    spatial_inertia,
)
from .kinematics import (
    binomials,
    block_shift_add,
    inertia_mul_add,
    inertia_shift_add,
    tables,
    twist_shift,
    twist_shift_add,
    wrench_shift_add,
)

# ct columns
CT_NB, CT_M, CT_IV, CT_FIRST, CT_PARENT, CT_IA, CT_U, CT_S, CT_L, CT_FLAG = range(10)
CT_N = 10
# bt columns
BT_BODY, BT_PORTBODY, BT_PORT, BT_INPAR = range(4)
BT_N = 4


_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def cluster_tables(model, data) -> tuple[np.ndarray, np.ndarray]:
    """The cached ``(ct, bt)`` of ``model`` (rebuilt when ``data`` comes from a newer model version;
    ``data`` already checked against ``model``)."""
    entry = _CACHE.get(model)
    if entry is not None and entry[0] is data.source_key:
        return entry[1], entry[2]
    ct, bt = build_cluster_tables(model)
    _CACHE[model] = (data.source_key, ct, bt)
    return ct, bt


def build_cluster_tables(model) -> tuple[np.ndarray, np.ndarray]:
    """``(ct, bt)`` of an explicit-cluster model (module docstring)."""
    clusters = model.clusters().clusters
    parent = [0] + [b.parent for b in model.bodies]
    ct = np.zeros((len(clusters) + 1, CT_N), dtype=np.int64)
    npos = sum(len(c.bodies) for c in clusters)
    bt = np.full((npos + 1, BT_N), -1, dtype=np.int64)
    local = {}  # body → (cluster row, local index)
    o = pos = 0
    mmax = 1
    for k, c in enumerate(clusters, start=1):
        if c.parent + 1 >= k:
            raise ValueError("clusters must come after their parent")
        nb, m = len(c.bodies), c.nv
        mmax = max(mmax, m)
        ct[k, CT_NB], ct[k, CT_M], ct[k, CT_IV], ct[k, CT_FIRST], ct[k, CT_PARENT] = (
            nb,
            m,
            c.iv,
            pos + 1,
            c.parent + 1,
        )
        n = 6 * nb
        for col, size in ((CT_IA, n * n), (CT_U, n * m), (CT_S, n * m), (CT_L, m * m), (CT_FLAG, nb * nb)):
            ct[k, col] = o
            o += size
        for a, b in enumerate(sorted(c.bodies)):
            pos += 1
            local[b] = (k, a)
            port = parent[b]
            while port != 0 and local.get(port, (0, 0))[0] == k:
                port = parent[port]
            bt[pos, BT_BODY], bt[pos, BT_PORTBODY] = b, port
            bt[pos, BT_PORT] = local[port][1] if port != 0 else -1
            if port != 0 and local[port][0] != c.parent + 1:
                raise ValueError(f"body {b}: its port is not in the parent cluster")
            bt[pos, BT_INPAR] = (
                local[parent[b]][1] if parent[b] != 0 and local.get(parent[b], (0, 0))[0] == k else -1
            )
    ct[0, 0], ct[0, 1], ct[0, 2], ct[0, 3] = len(clusters), o, mmax, npos
    return ct, bt


@inlined
def cluster_views(ct, fb, k):
    """Cluster k's tables in ``fb``: 𝖨^A (6nb × 6nb), 𝖴 and 𝖲 (6nb × m), L (m × m, 𝖣 = L Lᵀ), block flags."""
    nb, m = ct[k, CT_NB], ct[k, CT_M]
    n = 6 * nb
    IA = fb[ct[k, CT_IA] : ct[k, CT_IA] + n * n].reshape((n, n))
    U = fb[ct[k, CT_U] : ct[k, CT_U] + n * m].reshape((n, m))
    Sk = fb[ct[k, CT_S] : ct[k, CT_S] + n * m].reshape((n, m))
    Lk = fb[ct[k, CT_L] : ct[k, CT_L] + m * m].reshape((m, m))
    Fl = fb[ct[k, CT_FLAG] : ct[k, CT_FLAG] + nb * nb].reshape((nb, nb))
    return nb, m, IA, U, Sk, Lk, Fl


@inlined
def init_inertias(hf, ct, bt, Ib, cw, fb):
    """𝖨^A_k = blockdiag(M_b) (order 0, world frame) for every cluster, off-diagonal blocks unflagged."""
    for k in range(1, ct[0, 0] + 1):
        nb, m, IA, U, Sk, Lk, Fl = cluster_views(ct, fb, k)
        for a in range(nb):
            for b in range(nb):
                Fl[a, b] = 1.0 if a == b else 0.0
            spatial_inertia(
                hf, bt[ct[k, CT_FIRST] + a, BT_BODY], Ib, cw, IA[6 * a : 6 * a + 6, 6 * a : 6 * a + 6]
            )


@inlined
def motion_subspace(hb, mi, mf, ct, bt, k, S, dw, Sk):
    """𝖲_b = X 𝖲_{in-cluster parent} + Σ_c S_c G_c (about b's origin) for the bodies of cluster k; G's
    rows are the CSR rows of the v map."""
    _, _, _, _, _, _, vp, vi, nqe = map_offsets(mi)
    first, m, iv = ct[k, CT_FIRST], ct[k, CT_M], ct[k, CT_IV]
    for a in range(ct[k, CT_NB]):
        ip = bt[first + a, BT_INPAR]
        b = bt[first + a, BT_BODY]
        d = dw[b]
        for l in range(m):
            if ip >= 0:  # the parent's column moved to o_b: (ω; v + ω × d)
                w0, w1, w2 = Sk[6 * ip, l], Sk[6 * ip + 1, l], Sk[6 * ip + 2, l]
                Sk[6 * a, l], Sk[6 * a + 1, l], Sk[6 * a + 2, l] = w0, w1, w2
                Sk[6 * a + 3, l] = Sk[6 * ip + 3, l] + w1 * d[2] - w2 * d[1]
                Sk[6 * a + 4, l] = Sk[6 * ip + 4, l] + w2 * d[0] - w0 * d[2]
                Sk[6 * a + 5, l] = Sk[6 * ip + 5, l] + w0 * d[1] - w1 * d[0]
            else:
                for x in range(6):
                    Sk[6 * a + x, l] = 0.0
        for c in range(hb[b, HB_IV], hb[b, HB_IV] + hb[b, HB_NV]):
            for e in range(mi[vp + c], mi[vp + c + 1]):
                l = mi[vi + e] - iv
                g = mf[nqe + e]
                for x in range(6):
                    Sk[6 * a + x, l] += g * S[0, c, x]


@inlined
def joint_space_inertia(hb, hf, mi, mf, ct, bt, k, U, Sk, D):
    """𝖣 = 𝖲ᵀ𝖴 + Gᵀ diag(armature) G of cluster k (eq. 49 with armature)."""
    _, _, _, _, _, _, vp, vi, nqe = map_offsets(mi)
    first, m, iv, n = ct[k, CT_FIRST], ct[k, CT_M], ct[k, CT_IV], 6 * ct[k, CT_NB]
    for l1 in range(m):
        for l2 in range(m):
            s = 0.0
            for x in range(n):
                s += Sk[x, l1] * U[x, l2]
            D[l1, l2] = s
    for a in range(ct[k, CT_NB]):
        b = bt[first + a, BT_BODY]
        for c in range(hb[b, HB_IV], hb[b, HB_IV] + hb[b, HB_NV]):
            arm = hf[b, HF_ARM + c - hb[b, HB_IV]]
            if arm != 0.0:
                for e1 in range(mi[vp + c], mi[vp + c + 1]):
                    for e2 in range(mi[vp + c], mi[vp + c + 1]):
                        D[mi[vi + e1] - iv, mi[vi + e2] - iv] += mf[nqe + e1] * arm * mf[nqe + e2]


@shared
def cluster_factor(hb, hf, mi, mf, ct, bt, k, S, dw, E, fb, scratch):
    """Lemma 2 for cluster k (once per call): 𝖲, 𝖴 = 𝖨^A 𝖲 (then, for a cluster with a parent, ``Û =
    X_aᵀ 𝖴_a`` per body, as the sweeps use it), 𝖣 = L Lᵀ, and the articulated inertia
    𝖨^A − 𝖴𝖣⁻¹𝖴ᵀ = 𝖨^A − YᵀY (Y = L⁻¹𝖴ᵀ) added into the parent's blocks at the ports (moved to the
    ports' origins by the offsets ``E``: ``X_aᵀ 𝖨^A_ab X_b − Ŷ_aᵀŶ_b`` with ``Ŷ_a = Y_a X_a``, the Ŷ of
    bodies with the same port summed first). False if 𝖣 is not positive definite. ``scratch``: m² +
    6 nb m + 36 floats."""
    nb, m, IA, U, Sk, Lk, Fl = cluster_views(ct, fb, k)
    n = 6 * nb
    motion_subspace(hb, mi, mf, ct, bt, k, S, dw, Sk)
    for a in range(nb):  # 𝖴 = 𝖨^A 𝖲 over the flagged blocks
        for x in range(6 * a, 6 * a + 6):
            for l in range(m):
                s = 0.0
                for b in range(nb):
                    if Fl[a, b] != 0.0:
                        for y in range(6 * b, 6 * b + 6):
                            s += IA[x, y] * Sk[y, l]
                U[x, l] = s
    D = scratch[: m * m].reshape((m, m))
    joint_space_inertia(hb, hf, mi, mf, ct, bt, k, U, Sk, D)
    if not cholesky_lower(D, m, Lk):
        return False
    kp = ct[k, CT_PARENT]
    if kp == 0:
        return True
    Y = scratch[m * m : m * m + m * n].reshape((m, n))
    Tb = scratch[m * m + m * n : m * m + m * n + 36].reshape((6, 6))
    for j in range(n):  # Y = L⁻¹ 𝖴ᵀ, column by column
        for l in range(m):
            s = U[j, l]
            for t in range(l):
                s -= Lk[l, t] * Y[t, j]
            Y[l, j] = s / Lk[l, l]
    _, _, IAp, _, _, _, Flp = cluster_views(ct, fb, kp)
    first = ct[k, CT_FIRST]
    for a in range(nb):  # 𝖴 not needed any more: Û_a = X_aᵀ 𝖴_a (columns: wrenches about the port's
        e = E[first + a]  # origin) in its place, for the sweeps
        o = 6 * a
        for l in range(m):
            f0, f1, f2 = U[o + 3, l], U[o + 4, l], U[o + 5, l]
            U[o, l] += e[1] * f2 - e[2] * f1
            U[o + 1, l] += e[2] * f0 - e[0] * f2
            U[o + 2, l] += e[0] * f1 - e[1] * f0
    for a in range(nb):  # Ŷ_a = Y_a X_a: row l's angular entries −= its linear ones × e_a
        e = E[first + a]
        o = 6 * a
        for l in range(m):
            y3, y4, y5 = Y[l, o + 3], Y[l, o + 4], Y[l, o + 5]
            Y[l, o] -= y4 * e[2] - y5 * e[1]
            Y[l, o + 1] -= y5 * e[0] - y3 * e[2]
            Y[l, o + 2] -= y3 * e[1] - y4 * e[0]
    for a in range(nb):  # bodies with the same port: Ŷ summed into the first of them (a link and its
        f = first_with_port(bt, first, a)  # rotor: one product Ŷᵀ Ŷ instead of four)
        if f != a:
            for l in range(m):
                for x in range(6):
                    Y[l, 6 * f + x] += Y[l, 6 * a + x]
    for a in range(nb):
        pa = bt[first + a, BT_PORT]
        for b in range(nb):
            pb = bt[first + b, BT_PORT]
            if pa < 0 or pb < 0:
                continue
            if Flp[pa, pb] == 0.0:  # first touch of an off-diagonal parent block
                Flp[pa, pb] = 1.0
                IAp[6 * pa : 6 * pa + 6, 6 * pb : 6 * pb + 6] = 0.0
            if Fl[a, b] != 0.0:  # 𝖨^A's block moved to the ports' origins
                if a == b:
                    inertia_shift_add(IA, 6 * a, E[first + a], IAp, 6 * pa)
                else:
                    for x in range(6):
                        for y in range(6):
                            Tb[x, y] = IA[6 * a + x, 6 * b + y]
                    block_shift_add(Tb, E[first + a], E[first + b], IAp, 6 * pa, 6 * pb)
            if first_with_port(bt, first, a) == a and first_with_port(bt, first, b) == b:
                for x in range(6):
                    for y in range(6):
                        s = 0.0
                        for l in range(m):
                            s += Y[l, 6 * a + x] * Y[l, 6 * b + y]
                        IAp[6 * pa + x, 6 * pb + y] -= s
    return True


@inlined
def first_with_port(bt, first, a):
    """The first body of the cluster (local index ≤ a) with the same port as body a."""
    pa = bt[first + a, BT_PORT]
    for f in range(a):
        if bt[first + f, BT_PORT] == pa:
            return f
    return a


@inlined
def solve_flat(fb, oL, m, b, y, x):
    """``x = (L Lᵀ)⁻¹ b`` with L (m × m, row-major) at ``fb[oL:]`` (``y``: m floats of scratch; ``x``
    may be ``b``)."""
    for i in range(m):
        s = b[i]
        for k in range(i):
            s -= fb[oL + i * m + k] * y[k]
        y[i] = s / fb[oL + i * m + i]
    for i in range(m - 1, -1, -1):
        s = y[i]
        for k in range(i + 1, m):
            s -= fb[oL + k * m + i] * x[k]
        x[i] = s / fb[oL + i * m + i]


@inlined
def cluster_backward(hb, mi, mf, ct, bt, k, r, C, S, W, Vb, dtau, dw, E, fb, P, Cc, uy, scratch):
    """Order r, cluster k (C-ABA backward step, eq. 25): 𝖼, ``t = 𝖨^A 𝖼 + 𝗉``, ``𝗎 = τ_y^(r) − Gᵀτ̃ −
    𝖲ᵀt`` (kept in ``uy``), and the bias ``t + 𝖴𝖣⁻¹𝗎`` added into the parent's ports, moved to their
    origins (``X_aᵀ t_a + Û_a 𝖣⁻¹𝗎``). The cluster's tables are read flat from ``fb`` (row-major,
    :func:`cluster_views` layout)."""
    _, _, _, _, _, _, vp, vi, nqe = map_offsets(mi)
    nb, m, first, iv = ct[k, CT_NB], ct[k, CT_M], ct[k, CT_FIRST], ct[k, CT_IV]
    n = 6 * nb
    oIA, oU, oS, oF = ct[k, CT_IA], ct[k, CT_U], ct[k, CT_S], ct[k, CT_FLAG]
    for a in range(nb):  # 𝖼_b = X 𝖼_{in-cluster parent} + V_bias,b
        ip = bt[first + a, BT_INPAR]
        b = bt[first + a, BT_BODY]
        for x in range(6):
            Cc[first + a, x] = Vb[b, x]
        if ip >= 0:
            twist_shift_add(Cc[first + ip], dw[b], Cc[first + a])
    T = scratch  # t, 6 nb floats
    for a in range(nb):
        for x in range(6):
            s = P[first + a, x]
            for b in range(nb):
                if fb[oF + a * nb + b] != 0.0:
                    row = oIA + (6 * a + x) * n + 6 * b
                    for y in range(6):
                        s += fb[row + y] * Cc[first + b, y]
            T[6 * a + x] = s
    for l in range(m):
        s = dtau[r, iv + l]
        for x in range(n):
            s -= fb[oS + x * m + l] * T[x]
        uy[iv + l] = s
    for a in range(nb):  # − Gᵀ τ̃ (τ̃: the lower orders' wrenches projected, eq. 25)
        b = bt[first + a, BT_BODY]
        for c in range(hb[b, HB_IV], hb[b, HB_IV] + hb[b, HB_NV]):
            tt = joint_wrench_projection(hb, b, c, r, C, S, W)
            for e in range(mi[vp + c], mi[vp + c + 1]):
                uy[mi[vi + e]] -= mf[nqe + e] * tt
    kp = ct[k, CT_PARENT]
    if kp == 0:
        return
    yh = scratch[n : n + m]
    solve_flat(fb, ct[k, CT_L], m, uy[iv : iv + m], scratch[n + m : n + 2 * m], yh)
    fp = ct[kp, CT_FIRST]
    for a in range(nb):
        pa = bt[first + a, BT_PORT]
        if pa >= 0:
            o = 6 * a
            Pa = P[fp + pa]
            wrench_shift_add(T[o], T[o + 1], T[o + 2], T[o + 3], T[o + 4], T[o + 5], E[first + a], Pa)
            for x in range(6):
                s = 0.0
                for l in range(m):
                    s += fb[oU + (o + x) * m + l] * yh[l]
                Pa[x] += s


@inlined
def cluster_forward(hb, mi, mf, ct, bt, k, r, S, V, Vb, vd, uy, out, dw, E, fb):
    """Order r, cluster k (C-ABA forward step): ``y^(r+1) = 𝖣⁻¹(𝗎 − Ûᵀ V_Λ^(r+1))``, the spanning
    ``v^(r+1) = G y^(r+1)`` and the twists ``V_b^(r+1) = X V_parent + S v + V_bias`` (D2)."""
    _, _, _, _, _, _, vp, vi, nqe = map_offsets(mi)
    nb, m, first, iv, oU = ct[k, CT_NB], ct[k, CT_M], ct[k, CT_FIRST], ct[k, CT_IV], ct[k, CT_U]
    rhs = out[r, iv : iv + m]
    for l in range(m):
        rhs[l] = uy[iv + l]
    for a in range(nb):  # Û_aᵀ V_Λ = 𝖴_aᵀ X_a V_Λ (the root cluster's 𝖴: V_Λ = 0)
        Vp = V[r + 1, bt[first + a, BT_PORTBODY]]
        p0, p1, p2, p3, p4, p5 = Vp[0], Vp[1], Vp[2], Vp[3], Vp[4], Vp[5]
        u = oU + 6 * a * m
        for l in range(m):
            rhs[l] -= (
                fb[u + l] * p0 + fb[u + m + l] * p1 + fb[u + 2 * m + l] * p2
                + fb[u + 3 * m + l] * p3 + fb[u + 4 * m + l] * p4 + fb[u + 5 * m + l] * p5
            )  # fmt: skip
    solve_flat(fb, ct[k, CT_L], m, rhs, uy[iv : iv + m], rhs)  # uy is not needed any more at this order
    for a in range(nb):
        b = bt[first + a, BT_BODY]
        ivb = hb[b, HB_IV]
        for c in range(ivb, ivb + hb[b, HB_NV]):
            s = 0.0
            for e in range(mi[vp + c], mi[vp + c + 1]):
                s += mf[nqe + e] * rhs[mi[vi + e] - iv]
            vd[r + 1, c] = s
        Vi = V[r + 1, b]
        w = Vb[b]
        p0, p1, p2, p3, p4, p5 = twist_shift(V[r + 1, hb[b, HB_PARENT]], dw[b])
        Vi[0], Vi[1], Vi[2] = p0 + w[0], p1 + w[1], p2 + w[2]
        Vi[3], Vi[4], Vi[5] = p3 + w[3], p4 + w[4], p5 + w[5]
        for c in range(ivb, ivb + hb[b, HB_NV]):
            x = vd[r + 1, c]
            for e in range(6):
                Vi[e] += S[0, c, e] * x


@inlined
def joint_wrenches(hb, hf, r, V, B, Ib, cw, dw, W):
    """``W_i^(r) = M_i V_i^(r+1) + B_i`` summed over the subtree of every spanning body (D4: the
    wrench of joint i about o_i, needed by the later orders' τ̃)."""
    nb = hb[0, 0]
    for i in range(1, nb + 1):
        for a in range(6):
            W[r, i, a] = B[i, a]
        inertia_mul_add(hf, i, 0, Ib, cw, V[r + 1, i], 1.0, W[r, i])
    for i in range(nb, 1, -1):
        par = hb[i, HB_PARENT]
        if par > 0:
            w = W[r, i]
            wrench_shift_add(w[0], w[1], w[2], w[3], w[4], w[5], dw[i], W[r, par])


@inlined
def port_offsets(ct, bt, dw, E):
    """``E[position] = o_b − o_Λ(b)``: the offset of each cluster body's origin from its port's, the
    sum of the offsets ``d`` along its chain inside the cluster."""
    for k in range(1, ct[0, 0] + 1):
        first = ct[k, CT_FIRST]
        for a in range(ct[k, CT_NB]):
            ip = bt[first + a, BT_INPAR]
            b = bt[first + a, BT_BODY]
            for x in range(3):
                E[first + a, x] = dw[b, x] + (E[first + ip, x] if ip >= 0 else 0.0)


@shared
def cluster_aba_core(hb, hf, mi, mf, ct, bt, qs, vs, dtau, fext, out):
    """y^(1…R+1) into ``out`` from τ_y^(0…R) on validated inputs (spanning ``qs``, ``vs = G v``)."""
    nb, nvs = hb[0, 0], hb[0, 2]
    R = dtau.shape[0] - 1
    Cb = binomials(R + 2)
    Tc = tables(R + 1, R, nb, nvs)
    npos, mmax = ct[0, 3], ct[0, 2]
    bufc = np.empty(
        ct[0, 1]
        + (nb + 1) * 12
        + (npos + 1) * 15
        + mi[1]
        + mmax * (mmax + 6 * (npos + 1))
        + 6 * (npos + 1)
        + 2 * mmax
        + 36
    )
    C, buf, (V, S, Rw, pw, dw, cw, Jw, Ib, F, W, vd) = borrowed((Cb, bufc, borrowed(Tc)))
    vd[0] = vs
    fb = buf[: ct[0, 1]]
    o = ct[0, 1]
    Vb = buf[o : o + (nb + 1) * 6].reshape((nb + 1, 6))
    B = buf[o + (nb + 1) * 6 : o + (nb + 1) * 12].reshape((nb + 1, 6))
    o += (nb + 1) * 12
    P = buf[o : o + (npos + 1) * 6].reshape((npos + 1, 6))
    Cc = buf[o + (npos + 1) * 6 : o + (npos + 1) * 12].reshape((npos + 1, 6))
    E = buf[o + (npos + 1) * 12 : o + (npos + 1) * 15].reshape((npos + 1, 3))
    o += (npos + 1) * 15
    uy = buf[o : o + mi[1]]
    scratch = buf[o + mi[1] :]
    order_zero(hb, hf, qs, vd, V, S, Rw, pw, dw, cw, Jw, Ib, C)
    port_offsets(ct, bt, dw, E)
    init_inertias(hf, ct, bt, Ib, cw, fb)
    st = 0
    for k in range(ct[0, 0], 0, -1):  # Lemma 2: once for all orders
        if not cluster_factor(hb, hf, mi, mf, ct, bt, k, S, dw, E, fb, scratch):
            st = hv.SINGULAR * hv.STATUS_BASE + k
            break
    g = hf[0, 0:3]
    for r in range(R + 1 if st == 0 else 0):
        order_tables(hb, hf, fext, r, C, g, V, S, vd, Rw, pw, cw, Jw, Ib, F, Vb, B)
        for p in range(1, npos + 1):
            for x in range(6):
                P[p, x] = B[bt[p, BT_BODY], x]
        for k in range(ct[0, 0], 0, -1):
            cluster_backward(hb, mi, mf, ct, bt, k, r, C, S, W, Vb, dtau, dw, E, fb, P, Cc, uy, scratch)
        for k in range(1, ct[0, 0] + 1):
            cluster_forward(hb, mi, mf, ct, bt, k, r, S, V, Vb, vd, uy, out, dw, E, fb)
        if r < R:
            joint_wrenches(hb, hf, r, V, B, Ib, cw, dw, W)
    keep_alive(Cb)
    keep_alive(Tc)
    keep_alive(bufc)
    return st


@kernel(
    "int64(int64[:, ::1], float64[:, ::1], int64[::1], float64[::1], int64[:, ::1], int64[:, ::1], "
    "float64[::1], float64[::1], float64[:, ::1], float64[:, :, ::1], float64[:, ::1])",
)
def cluster_aba_kernel(hb, hf, mi, mf, ct, bt, q, v, dtau, fext, out):
    """H-GABI on the cluster tree (module docstring): validation, spanning q and v, the recursion."""
    hb, hf, mi, mf, ct, bt, q, v, dtau, fext, out = borrowed((hb, hf, mi, mf, ct, bt, q, v, dtau, fext, out))
    st = check_cluster_inputs(hb, mi, q, v, dtau, fext)
    if st != 0:
        return st
    qs = spanning_q(mi, mf, q)
    st = check_q(hb, qs)
    if st != 0:
        return st
    vs = spanning_v(mi, mf, v)
    return cluster_aba_core(hb, hf, mi, mf, ct, bt, qs, vs, dtau, fext, out)
