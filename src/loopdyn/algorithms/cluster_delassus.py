"""The Delassus matrix ``Λ⁻¹ = J H⁻¹ Jᵀ`` of a model with loops, in independent coordinates.

``H = Gᵀ H_span G`` is the mass matrix of the independent coordinates and ``J = J_span G`` the rows
of the link constraints (:class:`~loopdyn.Constraint`) in those coordinates.
The link constraints are end-effector constraints (contacts, welds) on any body of the model,
rotors and the bodies inside a loop included; the loop constraints themselves are already
eliminated by the clusters.

* :func:`c_efpa_core` — C-EFPA (Chignoli et al. 2024 §VIII, eqs. 57–67; spec §2.4): EFPA over the
  tree of clusters. The articulated inertias, ``𝖴 = 𝖨^A 𝖲`` and ``𝖣⁻¹`` come from C-ABA's backward
  sweep (:func:`~.cluster_dynamics.c_aba_backward`, the inertias alone). A constraint row is a
  force distribution ``χ`` over the bodies of a cluster (6 n_b numbers):

  * to the parent cluster (eqs. 61–62): ``χ' = 𝖫ᵀ χ = χ − 𝖴 𝖣⁻¹ 𝖲ᵀ χ``, then each body's force to
    its output body, ``f_Λ(a) += ᵃX_Λᵀ χ'_a`` (the cluster transform, never formed);
  * down the path (eqs. 63–67): ``W_k = 𝖫_k 𝒳 W_λ(k) + 𝖲 𝖣⁻¹ 𝖲ᵀ χ_kᵀ``, i.e. with
    ``a'_a = ᵃX_Λ W_λ(Λ(a))``: ``W_k = a' + 𝖲 𝖣⁻¹ (𝖲ᵀ χ − 𝖴ᵀ a')``;
  * ``Λ⁻¹_{r1,r2} = χ_{r1,c} · W_{r2,c}`` at the deepest cluster c supporting both rows.

  On a one-port cluster (a star — a link and its geared rotors — or any cluster whose bodies all hang
  from one output body Λ, e.g. a belt pair or a differential) a row's χ is non-zero on one body e
  only, and both steps go through the cluster's port ``V = Σ_b ᵇX_Λᵀ 𝖴_b`` left by C-ABA's
  backward sweep: one transform and m rank-one terms per row (:func:`port_column`,
  :func:`efpa_port_up`, :func:`efpa_port_down`).

  O(N_C l³) for the sweep, O(m 𝖽 l²) for the propagation (𝖽 the depth of the cluster tree, l the
  cluster size) and O(m² l) for the products.
* :func:`c_constraint_jacobian_core` — ``J`` (m × nv): a row's force distribution walks up the
  clusters (``χ`` to the output bodies, no 𝖫 projection) and ``J_{r, cols(k)} = 𝖲_kᵀ χ_k``
  (spec §2.6).
"""

from __future__ import annotations

import numpy as np

from ..jit import inlined, njit
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
from .cluster_dynamics import c_aba_backward, has_port, placement_in_output, port_at, s_col
from .cluster_kinematics import c_fk_core, tapes, validate_cluster_configuration
from .common import kernel
from .efpa import common_depth
from .status import DATA_IN_USE, STATUS_BASE

__all__ = ["c_efpa_core", "c_constraint_jacobian_core"]


@inlined
def spanning_nv(ic):
    """The number of independent velocities."""
    nv = 0
    for k in range(1, ic[0, L.C0_NCL] + 1):
        nv += ic[k, L.C_NV]
    return nv


@inlined
def cluster_depths(ib, ic, cbody, depth):
    """The depth of every cluster into ``depth`` (ncl + 1 entries, the world at 0); returns the largest
    depth of a constrained cluster."""
    depth[0] = 0
    for k in range(1, ic[0, L.C0_NCL] + 1):
        depth[k] = depth[ic[k, L.C_PARENT]] + 1
    dmax = 0
    for e in range(cbody.shape[0]):
        if cbody[e] > 0:
            dmax = max(dmax, depth[ib[cbody[e], L.I_CLUSTER]])
    return dmax


@inlined
def cluster_paths(ib, ic, cbody, depth, path):
    """The path of every constraint's cluster into ``path`` (nc × (dmax + 1)): ``path[e, t]`` = the
    cluster at depth t on the way from the root, 1 ≤ t ≤ depth, the constraint's own cluster at its
    depth; 0 elsewhere."""
    for e in range(cbody.shape[0]):
        for t in range(path.shape[1]):
            path[e, t] = 0
        if cbody[e] == 0:
            continue
        k = ib[cbody[e], L.I_CLUSTER]
        while k > 0:
            path[e, depth[k]] = k
            k = ic[k, L.C_PARENT]


@inlined
def force_to_parent_cluster(ib, ws, ic, cb, k, S, rs, D, rd):
    """Row rd of D (6 n_b of k's parent cluster) = the forces in row rs of S (6 n_b of cluster k)
    moved to the output bodies: ``D[Λ(a)] += ᵃX_Λᵀ S[a]``. (2-D arrays and row indices, not row
    views: views cost reference counting in the inner loops.)"""
    for x in range(6 * ic[ic[k, L.C_PARENT], L.C_NB]):
        D[rd, x] = 0.0
    first = ic[k, L.C_FIRST]
    for a in range(ic[k, L.C_NB]):
        i = cb[first + a]
        R, p = placement_in_output(ib, ws, ic, k, i)
        o = 6 * a
        f = ops.force_to_parent(R, p, (S[rs, o], S[rs, o + 1], S[rs, o + 2],
                                       S[rs, o + 3], S[rs, o + 4], S[rs, o + 5]))  # fmt: skip
        o = 6 * ib[ib[i, L.I_OUT], L.I_SUB]
        for r in range(6):
            D[rd, o + r] += f[r]


@inlined
def _motion_from_parent_cluster(ib, ws, ic, cb, k, S, rs, D, rd):
    """Row rd of D (6 n_b of cluster k) = the motions in row rs of S (6 n_b of k's parent) seen by
    k's bodies: ``D[a] = ᵃX_Λ S[Λ(a)]``."""
    first = ic[k, L.C_FIRST]
    for a in range(ic[k, L.C_NB]):
        i = cb[first + a]
        R, p = placement_in_output(ib, ws, ic, k, i)
        o = 6 * ib[ib[i, L.I_OUT], L.I_SUB]
        x = ops.motion_to_child(R, p, (S[rs, o], S[rs, o + 1], S[rs, o + 2],
                                       S[rs, o + 3], S[rs, o + 4], S[rs, o + 5]))  # fmt: skip
        for r in range(6):
            D[rd, 6 * a + r] = x[r]


@inlined
def st_mul_cluster(ib, ws, ic, cb, wc, k, F, rf, z):
    """z[:m] = 𝖲_kᵀ F[rf] (a row of 6 n_b forces)."""
    for l in range(ic[k, L.C_M]):
        acc = 0.0
        for j in range(ic[k, L.C_NB]):
            o = 6 * j
            fj = (F[rf, o], F[rf, o + 1], F[rf, o + 2], F[rf, o + 3], F[rf, o + 4], F[rf, o + 5])
            acc += ops.dot6(s_col(ib, ws, ic, cb, wc, k, j, l), fj)
        z[l] = acc


@inlined
def dinv_mul(ic, wc, k, z, y):
    """y[:m] = 𝖣_k⁻¹ z."""
    m = ic[k, L.C_M]
    DI = ic[k, L.C_DINV]
    for l in range(m):
        acc = 0.0
        for l2 in range(m):
            acc += wc[DI + l * m + l2] * z[l2]
        y[l] = acc


@inlined
def entry_sub(ib, ic, cb, path, e, t, d, b):
    """The body (sub-index) of the cluster at depth t on constraint e's path that the constraint's
    forces reach: the constrained body b at t = d, above it the output body of the next cluster."""
    if t == d:
        return ib[b, L.I_SUB]
    return ib[ib[cb[ic[path[e, t + 1], L.C_FIRST]], L.I_OUT], L.I_SUB]


@inlined
def port_column1(ib, ws, ic, cb, wc, k, e, chi):
    """:func:`port_column` for a cluster with one coordinate (a star), in scalars: returns
    ``(z, y, f)`` with ``z = 𝖲_eᵀχ``, ``y = z / 𝖣`` and ``f = ᵉX_Λᵀ χ − V y``."""
    ie = cb[ic[k, L.C_FIRST] + e]
    z = ops.dot6(s_col(ib, ws, ic, cb, wc, k, e, 0), chi)
    y = wc[ic[k, L.C_DINV]] * z
    f = ops.force_to_parent(ops.load9(ws, ie, L.W_XR), ops.load3(ws, ie, L.W_XP), chi)
    return z, y, ops.sub6(f, ops.scale6(ops.load6_at(wc, port_at(ic, k)), y))


@inlined
def port_column(ib, ws, ic, cb, wc, k, e, chi, z, y):
    """A force column χ on body e alone of a one-port cluster k (a star or ``C_ONEPORT``: every body
    hangs from the one output body Λ) through 𝖫ᵀ to Λ (eqs. 17, 62): ``z = 𝖲_eᵀχ`` and
    ``y = 𝖣⁻¹ z`` (m each, into the arrays z, y); returns ``ᵉX_Λᵀ χ − V y``, V the cluster's port
    (:func:`~.cluster_dynamics.port_at`): one transform and m rank-one terms instead of the 6 n_b-row
    product and a transform per body."""
    m = ic[k, L.C_M]
    ie = cb[ic[k, L.C_FIRST] + e]
    f = ops.force_to_parent(ops.load9(ws, ie, L.W_XR), ops.load3(ws, ie, L.W_XP), chi)
    V = port_at(ic, k)
    for l in range(m):
        z[l] = ops.dot6(s_col(ib, ws, ic, cb, wc, k, e, l), chi)
    dinv_mul(ic, wc, k, z, y)
    for l in range(m):
        f = ops.sub6(f, ops.scale6(ops.col6w(wc, V + l, m), y[l]))
    return f


@njit(cache=True)  # not inlined: c_efpa_core inlines only the stars' step, keeping its loop small
def efpa_port_up(ib, ws, ic, cb, wc, k, es, lam, KC, r, z, y):
    """Eq. 62 for a one-port cluster k with m > 1 coordinates whose row r of χ is non-zero on body es
    only: row r − 1 (zero elsewhere) gets ``ᵉX_Λᵀ χ_e − V 𝖣⁻¹ 𝖲_eᵀ χ_e`` on the block of Λ
    (sub-index ``lam`` in the parent cluster) (:func:`port_column`)."""
    f = port_column(ib, ws, ic, cb, wc, k, es, ops.load6(KC, r, 6 * es), z, y)
    for c in range(6):
        KC[r - 1, 6 * lam + c] = f[c]


@inlined
def efpa_port_down1(ib, ws, ic, cb, wc, k, es, a, KC, W, r, root, entry_only):
    """:func:`efpa_port_down` for a cluster with one coordinate (a star), in scalars, with the
    parent's column on Λ given (``a``, carried in registers from the step above); with
    ``entry_only``, W on body es alone (where the next cluster and the assembly read it). Returns W
    on body es."""
    first = ic[k, L.C_FIRST]
    z = ops.dot6(s_col(ib, ws, ic, cb, wc, k, es, 0), ops.load6(KC, r, 6 * es))
    if not root:
        z -= ops.dot6(ops.load6_at(wc, port_at(ic, k)), a)
    y = wc[ic[k, L.C_DINV]] * z
    w_es = a
    for j in range(ic[k, L.C_NB]):
        if entry_only and j != es:
            continue
        i = cb[first + j]
        w = ops.add6(ops.motion_to_child(ops.load9(ws, i, L.W_XR), ops.load3(ws, i, L.W_XP), a),
                     ops.scale6(s_col(ib, ws, ic, cb, wc, k, j, 0), y))  # fmt: skip
        for c in range(6):
            W[r, 6 * j + c] = w[c]
        if j == es:
            w_es = w
    return w_es


@njit(cache=True)  # not inlined: only the star's step (efpa_port_down1) is
def efpa_port_down(ib, ws, ic, cb, wc, k, es, lam, KC, W, r, root, z, y):
    """Eqs. 63–67 for a one-port cluster k (row r of χ non-zero on body es only): with a_Λ the
    parent's column on Λ (sub-index ``lam`` in the parent; zero at the root),
    ``y = 𝖣⁻¹ (𝖲_eᵀ χ_e − Vᵀ a_Λ)`` and ``W_b = ᵇX_Λ a_Λ + 𝖲_b y``."""
    first, m = ic[k, L.C_FIRST], ic[k, L.C_M]
    chi = ops.load6(KC, r, 6 * es)
    a = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    if not root:
        a = ops.load6(W, r - 1, 6 * lam)
    V = port_at(ic, k)
    for l in range(m):
        z[l] = ops.dot6(s_col(ib, ws, ic, cb, wc, k, es, l), chi)
        if not root:
            z[l] -= ops.dot6(ops.col6w(wc, V + l, m), a)
    dinv_mul(ic, wc, k, z, y)
    for j in range(ic[k, L.C_NB]):
        i = cb[first + j]
        w = ops.motion_to_child(ops.load9(ws, i, L.W_XR), ops.load3(ws, i, L.W_XP), a)
        for l in range(m):
            w = ops.add6(w, ops.scale6(s_col(ib, ws, ic, cb, wc, k, j, l), y[l]))
        for c in range(6):
            W[r, 6 * j + c] = w[c]


@inlined
def efpa_generic_down(ib, ws, ic, cb, wc, k, KC, W, r, root, z, y):
    """Eqs. 63–67 for any cluster k: ``a' = 𝒳 W_λ`` on every body (zero at the root), then
    ``W = a' + 𝖲 𝖣⁻¹ (𝖲ᵀ χ − 𝖴ᵀ a')``, into row r of W."""
    nb6, mk, U = 6 * ic[k, L.C_NB], ic[k, L.C_M], ic[k, L.C_U]
    if root:
        for x in range(nb6):
            W[r, x] = 0.0
    else:
        _motion_from_parent_cluster(ib, ws, ic, cb, k, W, r - 1, W, r)
    st_mul_cluster(ib, ws, ic, cb, wc, k, KC, r, z)
    for l in range(mk):
        acc = z[l]
        for x in range(nb6):
            acc -= wc[U + x * mk + l] * W[r, x]
        z[l] = acc
    dinv_mul(ic, wc, k, z, y)
    for j in range(ic[k, L.C_NB]):
        for l in range(mk):
            sc = s_col(ib, ws, ic, cb, wc, k, j, l)
            for c in range(6):
                W[r, 6 * j + c] += sc[c] * y[l]


@inlined
def efpa_entries(ib, ic, cb, cbody, depth, path, ent):
    """Per constraint e and depth t on its path: ``[e, t, 0]`` the body (sub-index) of the cluster at
    depth t that the constraint's forces reach (:func:`entry_sub`; at t − 1 it is the output body of
    the cluster at t), and ``[e, t, 1]`` = 1 where the forward sweep must give W on every body of
    that cluster — another constraint's path leaves there (the assembly reads W on its entry body),
    or the next cluster down is not one-port — else 0 (W on the entry body alone). Into ``ent``
    (nc × (dmax + 1) × 2)."""
    nc = cbody.shape[0]
    for e in range(nc):
        for t in range(path.shape[1]):
            ent[e, t, 0] = 0
            ent[e, t, 1] = 0
    for e in range(nc):
        b = cbody[e]
        if b == 0:
            continue
        d = depth[ib[b, L.I_CLUSTER]]
        for t in range(1, d + 1):
            ent[e, t, 0] = entry_sub(ib, ic, cb, path, e, t, d, b)
            ent[e, t, 1] = 0 if t == d or has_port(ic, path[e, t + 1]) else 1
    for e1 in range(nc):
        for e2 in range(e1 + 1, nc):
            if cbody[e1] > 0 and cbody[e2] > 0:
                t = common_depth(path, e1, e2, min(depth[ib[cbody[e1], L.I_CLUSTER]],
                                                   depth[ib[cbody[e2], L.I_CLUSTER]]))  # fmt: skip
                ent[e1, t, 1] = 1
                ent[e2, t, 1] = 1


@inlined
def c_efpa_core(ib, ws, ic, cb, wc, code, consts, table, outputs, q, cbody, crow, K, out):
    """C-EFPA on a validated state; writes Λ⁻¹ (m × m) into ``out``. Returns 0 or an error status."""
    no_v = wc[0:0]  # no velocity: an empty view, not an allocation per call
    st = c_fk_core(ib, ws, ic, cb, wc, code, consts, table, outputs, q, no_v, no_v, False)
    if st != 0:
        return st
    st = c_aba_backward(ib, ws, ic, cb, wc, no_v, view(wc, 0, (0, 6)))  # 𝖨^A, 𝖴, 𝖣⁻¹ (eqs. 59–61)
    if st != 0:
        return st
    ncl = ic[0, L.C0_NCL]
    nbmax = 1
    mmax = 1
    for k in range(1, ncl + 1):
        nbmax = max(nbmax, ic[k, L.C_NB])
        mmax = max(mmax, ic[k, L.C_M])
    nc = cbody.shape[0]
    # per-call tables: on the kernel's stack when they fit, else one heap allocation each (kept
    # alive by the caller's reference until the kernel returns: the views are uncounted)
    ibuf = stack_ints()
    ni = (ncl + 1) + 3 * nc * (ncl + 1)  # depth, then path and ent at most this large
    if ni > STACK_INTS:
        ibuf = np.empty(ni, dtype=np.int64)
    depth = view(ibuf, 0, (ncl + 1,))
    dmax = cluster_depths(ib, ic, cbody, depth)
    nd = dmax + 1
    path = view(ibuf, ncl + 1, (nc, nd))
    cluster_paths(ib, ic, cbody, depth, path)
    ent = view(ibuf, ncl + 1 + nc * nd, (nc, nd, 2))
    efpa_entries(ib, ic, cb, cbody, depth, path, ent)
    m = crow[nc]
    w6 = 6 * nbmax
    fbuf = stack_floats()
    nf = 2 * m * nd * w6 + 2 * mmax + w6
    if nf > STACK_FLOATS:
        fbuf = np.empty(nf)
    KC = view(fbuf, 0, (m * nd, w6))  # row r·nd + t: χ of row r at the cluster of depth t (eqs. 57–58, 62)
    W = view(fbuf, m * nd * w6, (m * nd, w6))  # row r·nd + t: 𝛀⁻¹_{k e} column of row r (eq. 67)
    for x in range(2 * m * nd * w6):
        fbuf[x] = 0.0
    z = view(fbuf, 2 * m * nd * w6, (mmax,))
    y = view(fbuf, 2 * m * nd * w6 + mmax, (mmax,))
    ap = view(fbuf, 2 * m * nd * w6 + 2 * mmax, (1, w6))
    for e in range(nc):
        b = cbody[e]
        if b == 0:
            continue
        d = depth[ib[b, L.I_CLUSTER]]
        sb = 6 * ib[b, L.I_SUB]
        for r in range(crow[e], crow[e + 1]):
            base = r * nd
            for c in range(6):
                KC[base + d, sb + c] = K[r, c]
            chi = ops.load6(K, r, 0)  # the row's forces on its entry body, in registers down the stars
            for t in range(d, 1, -1):  # backward (eq. 62): χ_λ = 𝒳ᵀ 𝖫ᵀ χ_k
                k = path[e, t]
                lam = ent[e, t - 1, 0]
                if has_port(ic, k) and ic[k, L.C_M] == 1:
                    _, _, chi = port_column1(ib, ws, ic, cb, wc, k, ent[e, t, 0], chi)
                    for c in range(6):
                        KC[base + t - 1, 6 * lam + c] = chi[c]
                    continue
                if has_port(ic, k):
                    efpa_port_up(ib, ws, ic, cb, wc, k, ent[e, t, 0], lam, KC, base + t, z, y)
                else:
                    nb6, mk, U = 6 * ic[k, L.C_NB], ic[k, L.C_M], ic[k, L.C_U]
                    st_mul_cluster(ib, ws, ic, cb, wc, k, KC, base + t, z)
                    dinv_mul(ic, wc, k, z, y)
                    for x in range(nb6):
                        acc = KC[base + t, x]
                        for l in range(mk):
                            acc -= wc[U + x * mk + l] * y[l]
                        ap[0, x] = acc
                    force_to_parent_cluster(ib, ws, ic, cb, k, ap, 0, KC, base + t - 1)
                chi = ops.load6(KC, base + t - 1, 6 * lam)
            aw = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)  # W on the entry body of the step above, in registers
            for t in range(1, d + 1):  # forward (eqs. 63–67)
                k = path[e, t]
                es = ent[e, t, 0]
                if has_port(ic, k) and ic[k, L.C_M] == 1:
                    aw = efpa_port_down1(ib, ws, ic, cb, wc, k, es, aw, KC, W, base + t, t == 1,
                                         ent[e, t, 1] == 0)  # fmt: skip
                    continue
                if has_port(ic, k):
                    efpa_port_down(ib, ws, ic, cb, wc, k, es, ent[e, t - 1, 0], KC, W, base + t, t == 1, z, y)
                else:
                    efpa_generic_down(ib, ws, ic, cb, wc, k, KC, W, base + t, t == 1, z, y)
                aw = ops.load6(W, base + t, 6 * es)
    # assembly: Λ⁻¹_{r1,r2} = χ_{r1,c} · W_{r2,c} at the deepest common cluster c (0: none, zero block)
    for e1 in range(nc):
        d1 = depth[ib[cbody[e1], L.I_CLUSTER]] if cbody[e1] > 0 else 0
        for e2 in range(e1, nc):
            d2 = depth[ib[cbody[e2], L.I_CLUSTER]] if cbody[e2] > 0 else 0
            lo = common_depth(path, e1, e2, min(d1, d2))
            nb6 = 6 * ic[path[e1, lo], L.C_NB] if lo > 0 else 0
            for r1 in range(crow[e1], crow[e1 + 1]):
                r2a = r1 if e1 == e2 else crow[e2]
                for r2 in range(r2a, crow[e2 + 1]):
                    v = 0.0
                    for x in range(nb6):
                        v += KC[r1 * nd + lo, x] * W[r2 * nd + lo, x]
                    out[r1, r2] = v
                    out[r2, r1] = v
    return 0


@njit(cache=True)
def c_constraint_jacobian_core(ib, ws, ic, cb, wc, cbody, crow, K, J):
    """J (m × nv, independent velocities) of the constraint rows K, after the cluster kinematics:
    ``J_{r, cols(k)} = 𝖲_kᵀ χ_k`` along the row's cluster path, ``χ`` moved to the output bodies from
    cluster to cluster. Entries off the path are left untouched (zero J first)."""
    nbmax = 1
    for k in range(1, ic[0, L.C0_NCL] + 1):
        nbmax = max(nbmax, ic[k, L.C_NB])
    f = np.zeros((2, 6 * nbmax))  # the row's forces on the current cluster (row 0), its parent (row 1)
    z = np.empty(6 * nbmax)
    for e in range(cbody.shape[0]):
        b = cbody[e]
        if b == 0:
            continue
        for r in range(crow[e], crow[e + 1]):
            k = ib[b, L.I_CLUSTER]
            for x in range(6 * ic[k, L.C_NB]):
                f[0, x] = 0.0
            for c in range(6):
                f[0, 6 * ib[b, L.I_SUB] + c] = K[r, c]
            while k > 0:
                st_mul_cluster(ib, ws, ic, cb, wc, k, f, 0, z)
                iv = ic[k, L.C_IV]
                for l in range(ic[k, L.C_M]):
                    J[r, iv + l] = z[l]
                if ic[k, L.C_PARENT] == 0:
                    break
                force_to_parent_cluster(ib, ws, ic, cb, k, f, 0, f, 1)
                for x in range(6 * ic[ic[k, L.C_PARENT], L.C_NB]):
                    f[0, x] = f[1, x]
                k = ic[k, L.C_PARENT]


_SIG = (
    "int64(int64[::1], float64[::1], "
    "float64[::1], int64[::1], int64[::1], float64[:, ::1], "
    "float64[:, ::1])"
)


@kernel(_SIG)
def c_jacobian_kernel(ints, floats, q, cbody, crow, K, J):
    ints, floats, q, cbody, crow, K, J = borrowed((ints, floats, q, cbody, crow, K, J))
    ib, ws, ic, cb, wc = model_views(ints, floats)
    code, consts, table, outputs = tapes(ic, cb, wc)
    st = validate_cluster_configuration(ib, ic, cb, q)
    if st != 0:
        return st
    no_v = wc[0:0]  # no velocity: an empty view, not an allocation per call
    if not acquire(ints):
        return DATA_IN_USE * STATUS_BASE
    st = c_fk_core(ib, ws, ic, cb, wc, code, consts, table, outputs, q, no_v, no_v, False)
    if st == 0:
        J[:, :] = 0.0
        c_constraint_jacobian_core(ib, ws, ic, cb, wc, cbody, crow, K, J)
    release(ints)
    return st
