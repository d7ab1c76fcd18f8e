"""Higher-order dynamics of models with explicit clusters of constant G (geared rotors, belt
transmissions): the spanning-tree derivatives are ``G`` times the independent ones at every order
(``q_span = G y``, ``v_span^(k) = G ẏ^(k)``, G constant), and ``τ^(k) = Gᵀ τ_span^(k)``.

* Inverse dynamics: the spanning tree's H-GRNE (one sweep pair for all orders) between the two sparse
  maps, in one kernel.
* Forward dynamics: :func:`loopdyn.higher_order.aba` runs the order-r cluster articulated-body
  recursion of :mod:`.cluster_aba` (Lemma 2 per cluster, O(N r²)). The joint-space variant kept here
  (``cluster_aba_dense_kernel``: ``H = Gᵀ (M_span + armature) G`` assembled once per call from ``n``
  spanning-tree evaluations, factorised once and reused at every order, the order-r right-hand side
  from the H-GRNE with ``v^(r+1) = 0``; O(N·n + N·r³)) is its test reference and benchmark baseline.

Implicit clusters (loops: four-bars, differentials) are the business of :mod:`.loops`, which uses the
maps of :func:`cluster_maps` for the rest of the model; the kernels here refuse them
(:class:`~loopdyn.errors.UnsupportedFeatureError` naming the cluster).
"""

from __future__ import annotations

import weakref

import numpy as np

from ..algorithms.borrow import borrowed
from ..algorithms.common import kernel
from ..errors import UnsupportedFeatureError
from ..jit import inlined, njit
from ..model.clusters import EXPLICIT
from . import validation as hv
from .dynamics import (
    check_fext,
    check_finite,
    check_motion_inputs,
    check_q,
    check_stack,
    cholesky_lower,
    cholesky_solve,
    rnea_core,
)

_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def cluster_maps(model, data, implicit: bool = False):
    """``(mi, mf)``: the sparse maps q → q_span and v → v_span of an explicit-cluster model, CSR
    packed: ``mi = [nq, nv, nq_span, nv_span, qptr…, qidx…, vptr…, vidx…]``, ``mf = [qval…, vval…]``.

    With ``implicit``, implicit clusters (loops) are accepted: their q entries (the spanning positions)
    are copied and their v entries left out — :mod:`.loops` computes those."""
    entry = _CACHE.get(model)
    if entry is not None and entry[0] is data.source_key and entry[1] == implicit:
        return entry[2], entry[3]
    qrows = [[] for _ in range(model.spanning_nq)]
    vrows = [[] for _ in range(model.spanning_nv)]
    for c in model.clusters().clusters:
        if c.kind == 0:  # a tree joint: copied
            b = model.bodies[c.bodies[0] - 1]
            for k in range(c.nq):
                qrows[b.idx_q + k].append((c.iq + k, 1.0))
            for k in range(c.nv):
                vrows[b.idx_v + k].append((c.iv + k, 1.0))
        elif c.kind == EXPLICIT and c.G_const is not None:
            for loc, bi in enumerate(c.bodies):  # revolute / prismatic joints only (1 coordinate)
                b = model.bodies[bi - 1]
                for j in range(c.m):
                    g = float(c.G_const[loc, j])
                    if g != 0.0:
                        qrows[b.idx_q].append((c.iq + j, g))
                        vrows[b.idx_v].append((c.iv + j, g))
        elif implicit and c.kind != EXPLICIT:
            for loc, bi in enumerate(c.bodies):  # q stores the loop's spanning positions
                qrows[model.bodies[bi - 1].idx_q].append((c.iq + loc, 1.0))
        else:
            names = [model.bodies[bi - 1].name for bi in c.bodies]
            cons = [getattr(k, "name", "?") for k in c.constraints]
            raise UnsupportedFeatureError(
                f"cluster {names} (constraints {cons}) is implicit (a kinematic loop): loopdyn.higher_order "
                "handles explicit clusters with a constant G only"
            )
    mi = [model.nq, model.nv, model.spanning_nq, model.spanning_nv]
    mf = []
    for rows in (qrows, vrows):
        ptr = [0]
        for row in rows:
            ptr.append(ptr[-1] + len(row))
        mi += ptr + [i for row in rows for i, _ in row]
        mf += [g for row in rows for _, g in row]
    mi, mf = np.array(mi, dtype=np.int64), np.array(mf, dtype=np.float64)
    _CACHE[model] = (data.source_key, implicit, mi, mf)
    return mi, mf


@inlined
def map_offsets(mi):
    """Sizes and offsets of the CSR q and v maps packed in ``mi``."""
    nq, nv, nqs, nvs = mi[0], mi[1], mi[2], mi[3]
    qp = 4
    qi = qp + nqs + 1
    vp = qi + mi[qp + nqs]
    vi = vp + nvs + 1
    return nq, nv, nqs, nvs, qp, qi, vp, vi, mi[qp + nqs]


@njit(cache=True)
def apply_map(mi, mf, ptr0, idx0, val0, n_out, x, out):
    """out = A x for the CSR map starting at ``ptr0`` / ``idx0`` in mi and ``val0`` in mf."""
    for r in range(n_out):
        s = 0.0
        for e in range(mi[ptr0 + r], mi[ptr0 + r + 1]):
            s += mf[val0 + e] * x[mi[idx0 + e]]
        out[r] = s


@njit(cache=True)
def apply_map_t(mi, mf, ptr0, idx0, val0, n_rows, y, out):
    """out = Aᵀ y."""
    out[:] = 0.0
    for r in range(n_rows):
        for e in range(mi[ptr0 + r], mi[ptr0 + r + 1]):
            out[mi[idx0 + e]] += mf[val0 + e] * y[r]


@njit(cache=True)
def spanning_q(mi, mf, q):
    """The spanning configuration ``q_span`` of ``q`` (the CSR q map)."""
    nq, nv, nqs, nvs, qp, qi, vp, vi, nqe = map_offsets(mi)
    qs = np.empty(nqs)
    apply_map(mi, mf, qp, qi, 0, nqs, q, qs)
    return qs


@njit(cache=True)
def spanning_v(mi, mf, v):
    """The spanning velocity ``G v`` (the CSR v map)."""
    nq, nv, nqs, nvs, qp, qi, vp, vi, nqe = map_offsets(mi)
    vs = np.empty(nvs)
    apply_map(mi, mf, vp, vi, nqe, nvs, v, vs)
    return vs


@inlined
def check_cluster_rnea_inputs(hb, mi, q, dv, fext):
    """Shapes and finiteness of the inverse-dynamics inputs of a cluster model (status codes; the
    spanning positions are checked once mapped)."""
    if q.shape[0] != mi[0]:
        return hv.BAD_SHAPE * hv.STATUS_BASE + 0
    st = check_finite(q, 0)
    if st == 0:
        st = check_motion_inputs(hb, dv, mi[1], fext)
    return st


@inlined
def spanning_motion(hb, mi, mf, q, dv):
    """``(status, q_s, dv_s)``: the spanning positions of q, checked (unit quaternions, unit complex
    numbers), and the rows ``dv_s[k]`` the linear maps give (tree joints and explicit clusters; a
    loop's entries are zero, :mod:`.loops` fills them)."""
    nq, nv, nqs, nvs, qp, qi, vp, vi, nqe = map_offsets(mi)
    qs = spanning_q(mi, mf, q)
    dvs = np.empty((dv.shape[0], nvs))
    st = check_q(hb, qs)
    if st == 0:
        for k in range(dv.shape[0]):
            apply_map(mi, mf, vp, vi, nqe, nvs, dv[k], dvs[k])
    return st, qs, dvs


@inlined
def check_cluster_inputs(hb, mi, q, v, dtau, fext):
    """Shapes and finiteness of the forward-dynamics inputs of a cluster model (status codes)."""
    if q.shape[0] != mi[0]:
        return hv.BAD_SHAPE * hv.STATUS_BASE + 0
    st = check_finite(q, 0)
    if st == 0:
        if v.shape[0] != mi[1]:
            st = hv.BAD_SHAPE * hv.STATUS_BASE + 1
        else:
            st = check_finite(v, 1)
    if st == 0:
        st = check_stack(dtau, -1, mi[1], 2)
    if st == 0:
        st = check_fext(hb, fext, dtau.shape[0], 3)
    return st


@kernel(
    "int64(int64[:, ::1], float64[:, ::1], int64[::1], float64[::1], float64[::1], float64[:, ::1], "
    "float64[:, :, ::1], float64[:, ::1])",
)
def cluster_rnea_kernel(hb, hf, mi, mf, q, dv, fext, out):
    hb, hf, mi, mf, q, dv, fext, out = borrowed((hb, hf, mi, mf, q, dv, fext, out))
    nq, nv, nqs, nvs, qp, qi, vp, vi, nqe = map_offsets(mi)
    st = check_cluster_rnea_inputs(hb, mi, q, dv, fext)
    if st != 0:
        return st
    st, qs, dvs = spanning_motion(hb, mi, mf, q, dv)
    if st != 0:
        return st
    rows = dv.shape[0]
    outs = np.empty((rows - 1, nvs))
    rnea_core(hb, hf, qs, dvs, fext, outs)
    for k in range(rows - 1):
        apply_map_t(mi, mf, vp, vi, nqe, nvs, outs[k], out[k])
    return 0


@kernel(
    "int64(int64[:, ::1], float64[:, ::1], int64[::1], float64[::1], float64[::1], float64[::1], "
    "float64[:, ::1], float64[:, :, ::1], float64[:, ::1])",
)
def cluster_aba_dense_kernel(hb, hf, mi, mf, q, v, dtau, fext, out):
    """The joint-space variant (``GᵀMG`` assembled and factorised once per call; module docstring),
    kept as a reference for the cluster recursion of :mod:`.cluster_aba`."""
    hb, hf, mi, mf, q, v, dtau, fext, out = borrowed((hb, hf, mi, mf, q, v, dtau, fext, out))
    nq, nv, nqs, nvs, qp, qi, vp, vi, nqe = map_offsets(mi)
    st = check_cluster_inputs(hb, mi, q, v, dtau, fext)
    if st != 0:
        return st
    qs = spanning_q(mi, mf, q)
    st = check_q(hb, qs)
    if st != 0:
        return st
    R = dtau.shape[0] - 1
    dvs = np.zeros((R + 2, nvs))
    apply_map(mi, mf, vp, vi, nqe, nvs, v, dvs[0])
    # leading coefficient H = Gᵀ (M_span + armature) G, the same at every order: assembled once
    no_f = np.zeros((0, 0, 6))
    base = np.empty((1, nvs))
    col = np.empty((1, nvs))
    rnea_core(hb, hf, qs, dvs[:2], no_f, base)
    H = np.empty((nv, nv))
    e = np.zeros(nv)
    g = np.empty(nv)
    for j in range(nv):
        e[:] = 0.0
        e[j] = 1.0
        apply_map(mi, mf, vp, vi, nqe, nvs, e, dvs[1])
        rnea_core(hb, hf, qs, dvs[:2], no_f, col)
        for a in range(nvs):
            col[0, a] -= base[0, a]
        apply_map_t(mi, mf, vp, vi, nqe, nvs, col[0], g)
        H[:, j] = g
    dvs[1, :] = 0.0
    L = np.zeros((nv, nv))  # Cholesky, once
    if not cholesky_lower(H, nv, L):
        return hv.SINGULAR * hv.STATUS_BASE + 1
    bias = np.empty((R + 1, nvs))
    for r in range(R + 1):  # order r: the spanning bias with v^(r+1) = 0, then H x = τ^(r) − Gᵀ b
        fr = fext[: r + 1] if fext.shape[0] > 0 else fext
        rnea_core(hb, hf, qs, dvs[: r + 2], fr, bias[: r + 1])
        apply_map_t(mi, mf, vp, vi, nqe, nvs, bias[r], g)
        for i in range(nv):
            g[i] = dtau[r, i] - g[i]
        cholesky_solve(L, nv, g, e, out[r])
        apply_map(mi, mf, vp, vi, nqe, nvs, out[r], dvs[r + 1])
    return 0
