"""PV-OSIMr over the tree of clusters: the Delassus matrix of a model with loops in O(N_C + m²).

PV-OSIMr (Sathya et al. 2023, Algorithm 3; spec ``delassus-pv-osimr-sathya2023`` §2.4, §3.5) with
the links replaced by clusters (Chignoli et al. 2024 §VIII). The cluster paper names this
combination as future work; it is C-EFPA (:mod:`.cluster_delassus`) with the propagators composed
along the unbranched stretches of the tree, so that the work per constraint pair no longer depends
on the depth.

Nodes are the clusters ``1 … N_C`` and one fictitious end-effector (EE) per constraint, a child of
its body's cluster. A node's *space* is the force distribution over its bodies (6 n_b numbers) for
a cluster, the constraint's rows (m_e) for an EE. The branching nodes ``N`` are the EEs and the
clusters with at least two children carrying EEs (spec §2.2, the robust definition; erratum E1).
``D(k)`` is the branching node at the bottom of k's unbranched stretch, ``A(i)`` the nearest
branching strict ancestor.

* EEs (Alg. 3 line 4): ``ᵏP_e = K_eᵀ`` placed on the constrained body's block, ``ᵏΩ_e = 0``.
* Backward sweep over the clusters (lines 5–15), after C-ABA's articulated inertias: with ``P`` the
  propagator from ``D(k)`` into k's space (the identity if k ∈ N, else that of k's chain child) and
  ``Y = 𝖲_kᵀ P``:

  * eq. 16: ``^{λ(k)}Ω_{D(k)} = ᵏΩ_{D(k)} + Yᵀ 𝖣_k⁻¹ Y``;
  * eq. 17: ``^{λ(k)}P_{D(k)} = 𝒳ᵀ 𝖫_kᵀ P``, column by column: ``χ − 𝖴 𝖣⁻¹ 𝖲ᵀχ``, then each body's
    force to its output body. An unbranched one-port cluster (a star — a link and its geared rotors —
    or a belt pair, a differential: every body hangs from one output body) takes the forces from
    below on one body only and pays one transform and m rank-one terms per column
    (:func:`cpv_port_step`).

* Forward sweep over N (line 17, eq. 18): ``⁰Ω_i = ^{A}Ω_i + ^{A}P_iᵀ ⁰Ω_A ^{A}P_i``.
* CEMPs up the branching ancestors (lines 18–22, eq. 19): ``^{A(e)}K_e = ^{A(e)}P_eᵀ``,
  ``^{A(j)}K_e = ʲK_e ^{A(j)}P_jᵀ``.
* Assembly (lines 23–28, eq. 13): ``Λ⁻¹_{e1,e2} = ᶜK_e1 ⁰Ω_c ᶜK_e2ᵀ`` at ``c = cca(e1, e2)`` (zero
  when the two hang from the world through different clusters), ``Λ⁻¹_{e,e} = ⁰Ω_e``.

The branching structure and the buffer layout depend only on the model and on which bodies carry
constraints: they are computed once and cached (pitfall P10); each thread gets its own buffer.
"""

from __future__ import annotations

import threading

import numpy as np

from ..jit import inlined, shared
from ..model import layout as L
from ..spatial import ops
from .borrow import STACK_FLOATS, borrowed, stack_floats, view
from .cluster_delassus import dinv_mul, force_to_parent_cluster, port_column, port_column1, st_mul_cluster
from .cluster_dynamics import c_aba_backward, has_port
from .cluster_kinematics import c_fk_core
from .pv_osim import branching_structure

__all__ = ["cluster_branching", "cluster_structure"]

# node table columns (rows: node 0 = the world, clusters 1 … N_C, EEs N_C + 1 …)
N_PARENT = 0  # parent node (a cluster, or 0)
N_HASES = 1  # 1 if an EE is at or below the node
N_INN = 2  # 1 if the node is branching
N_CHAIN = 3  # the child carrying the EEs, for an unbranched cluster with EEs (−1 otherwise)
N_DIM = 4  # dimension of the space of D(node)
N_PD = 5  # offset of ^{λ}P_{D(node)} (space(λ) × DIM) in the buffer, −1 if λ = 0
N_OD = 6  # offset of ^{λ}Ω_{D(node)} (DIM × DIM)
N_A = 7  # nearest branching strict ancestor (0: none)
N_TOP = 8  # for a branching node: the node below A on its stretch
N_O0 = 9  # for a branching node: offset of ⁰Ω (SPACE × SPACE)
N_SPACE = 10  # the node's own space: 6 n_b (cluster) or m_e (EE)
N_E = 11  # for an EE: its constraint index
N_FULL = 12  # for a cluster: 6 n_b, the rows of the propagators into it
N_PORT = 13  # for a branching cluster: offset of its ports (body sub-indices) in the ports array
N_ENTRY = 14  # for an unbranched cluster with EEs: the one body (sub-index) its chain child's forces reach
NN = 15


def cluster_branching(parents, ee_parents):
    """The branching structure over nodes 0 … n + len(ee_parents) (the world, the clusters ``1 … n``
    with ``parents[k - 1]`` the parent of cluster k, then one EE per entry of ``ee_parents``), from
    :func:`~.pv_osim.branching_structure` (spec §2.2); EEs on the world (``ee_parents[e] = 0``) are
    left out of the tree. Returns ``(has_es, in_n, chain, D, A)`` as lists over the nodes
    (``chain``/``D`` −1 where undefined)."""
    n = len(parents)
    live = [e for e, p in enumerate(ee_parents) if p > 0]
    bs = branching_structure(parents, [ee_parents[e] for e in live])
    total = n + 1 + len(ee_parents)

    def node(x):  # the structure's numbering → ours
        return x if x <= n else n + 1 + live[x - n - 1]

    has_es, in_n = [False] * total, [False] * total
    chain, D, A = [-1] * total, [-1] * total, [0] * total
    in_n[0] = has_es[0] = True
    for x in range(1, n + 1 + len(live)):
        y = node(x)
        has_es[y] = bs.has_ee[x]
        A[y] = bs.A[x - 1]  # a cluster or the world
        if bs.D[x - 1] is not None:
            D[y] = node(bs.D[x - 1])
        if x in bs.chain_child:
            chain[y] = node(bs.chain_child[x])
    for x in bs.N:
        in_n[node(x)] = True
    return has_es, in_n, chain, D, A


class ClusterStructure:
    """The node table, the CEMP and assembly programs and the float buffer for one (model,
    constraint bodies) pair."""

    def __init__(self, data, cbody, crow):
        ib, ic = data.ib, data.ic
        ncl = int(ic[0, L.C0_NCL])
        nc = len(cbody)
        parents = [int(ic[k, L.C_PARENT]) for k in range(1, ncl + 1)]
        ee_par = [int(ib[b, L.I_CLUSTER]) if b > 0 else 0 for b in cbody]
        has_es, in_n, chain, D, A = cluster_branching(parents, ee_par)
        total = ncl + 1 + nc
        par = [0] + parents + ee_par
        # A branching cluster's space is the forces on its *ports*: the bodies carrying its EEs and the
        # output bodies of its child clusters with EEs — the only bodies that forces from below reach.
        full = [0] + [6 * int(ic[k, L.C_NB]) for k in range(1, ncl + 1)] + [0] * nc
        ports: dict[int, set] = {k: set() for k in range(1, ncl + 1) if in_n[k]}
        for e in range(nc):
            if ee_par[e] in ports:
                ports[ee_par[e]].add(int(ib[cbody[e], L.I_SUB]))
        for c in range(1, ncl + 1):
            if has_es[c] and parents[c - 1] in ports:
                first, nb = int(ic[c, L.C_FIRST]), int(ic[c, L.C_NB])
                for j in range(nb):
                    out = int(ib[data.cb[first + j], L.I_OUT])
                    if out > 0 and int(ib[out, L.I_CLUSTER]) == parents[c - 1]:
                        ports[parents[c - 1]].add(int(ib[out, L.I_SUB]))
        space = list(full[: ncl + 1]) + [int(crow[e + 1] - crow[e]) for e in range(nc)]
        port_list: list[int] = []
        port_off = {}
        for k, ps in ports.items():
            port_off[k] = len(port_list)
            port_list += sorted(ps)
            space[k] = 6 * len(ps)
        entry = [-1] * total
        for k in range(1, ncl + 1):
            ch = chain[k]
            if in_n[k] or ch < 0:
                continue
            if ch > ncl:  # an EE: its body
                entry[k] = int(ib[cbody[ch - ncl - 1], L.I_SUB])
            else:  # a cluster: its bodies' output bodies in k, if they are one
                first, nb = int(ic[ch, L.C_FIRST]), int(ic[ch, L.C_NB])
                outs = {int(ib[int(ib[data.cb[first + j], L.I_OUT]), L.I_SUB]) for j in range(nb)}
                entry[k] = outs.pop() if len(outs) == 1 else -1
        T = np.full((total, NN), -1, dtype=np.int64)
        off = 0
        for x in range(total):
            T[x, N_PARENT] = par[x]
            T[x, N_HASES] = int(has_es[x])
            T[x, N_INN] = int(in_n[x])
            T[x, N_CHAIN] = chain[x]
            T[x, N_A] = A[x]
            T[x, N_SPACE] = space[x]
            T[x, N_E] = x - ncl - 1 if x > ncl else -1
            T[x, N_FULL] = full[x]
            T[x, N_PORT] = port_off.get(x, -1)
            T[x, N_ENTRY] = entry[x]
            if x == 0 or not has_es[x]:
                continue
            dim = space[D[x]]
            T[x, N_DIM] = dim
            if par[x] > 0:
                T[x, N_PD] = off
                off += full[par[x]] * dim
            T[x, N_OD] = off
            off += dim * dim
        branching = [x for x in range(1, total) if in_n[x]]
        for i in branching:
            t = i
            while par[t] != A[i]:
                t = par[t]
            T[i, N_TOP] = t
            T[i, N_O0] = off
            off += space[i] * space[i]
        # CEMPs: rows (EE, branching ancestor j, offset, previous row or −1, node whose PD is used)
        cemp = []
        where = {}
        for e in range(nc):
            x = ncl + 1 + e
            if not in_n[x]:
                continue
            j, prev, top = A[x], -1, int(T[x, N_TOP])
            while j > 0:
                cemp.append((x, j, off, prev, top))
                where[(x, j)] = off
                prev = len(cemp) - 1
                off += space[x] * space[j]
                top = T[j, N_TOP]
                j = A[j]
        # assembly: (e1, e2, cca, offset of ᶜK_e1, offset of ᶜK_e2); cca 0 → zero block
        asm = []
        for e1 in range(nc):
            x1 = ncl + 1 + e1
            anc1 = []
            j = A[x1] if in_n[x1] else 0
            while j > 0:
                anc1.append(j)
                j = A[j]
            for e2 in range(e1 + 1, nc):
                x2 = ncl + 1 + e2
                c = 0
                if in_n[x1] and in_n[x2]:
                    j = A[x2]
                    s1 = set(anc1)
                    while j > 0 and j not in s1:
                        j = A[j]
                    c = j
                if c > 0:
                    asm.append((e1, e2, c, where[(x1, c)], where[(x2, c)]))
                else:
                    asm.append((e1, e2, 0, -1, -1))
        self.table = T
        self.ports = np.array(port_list + [0], dtype=np.int64)
        self.order = np.array(branching, dtype=np.int64)
        self.cemp = np.array(cemp, dtype=np.int64).reshape(-1, 5)
        self.asm = np.array(asm, dtype=np.int64).reshape(-1, 5)
        self.size = max(off, 1)
        self.local = threading.local()
        self.packed = pack_tables(cbody, crow, T, self.ports, self.order, self.cemp, self.asm)

    def buffer(self) -> np.ndarray:
        """The float workspace of the calling thread (allocated once per thread)."""
        buf = getattr(self.local, "buf", None)
        if buf is None:
            buf = self.local.buf = np.zeros(self.size)
        return buf


# the kernel's int tables in one argument: a header of 7 sizes, then cbody, crow, T, ports, order,
# cemp and asm, row-major (Numba's dispatcher spends about 50 ns per array argument)
_PACK_HEADER = 7


def pack_tables(cbody, crow, T, ports, order, cemp, asm) -> np.ndarray:
    """The int tables of the cluster PV-OSIMr kernel in one array (:func:`unpack_tables`)."""
    parts = [np.asarray(x, dtype=np.int64).reshape(-1) for x in (cbody, crow, T, ports, order, cemp, asm)]
    head = [x.shape[0] for x in (cbody, crow, T, ports, order, cemp, asm)]
    return np.ascontiguousarray(np.concatenate([np.array(head, dtype=np.int64), *parts]))


@inlined
def unpack_tables(tables):
    """``(cbody, crow, T, ports, order, cemp, asm)``: views of the array :func:`pack_tables` built."""
    ncb, ncr, nt, npo = tables[0], tables[1], tables[2], tables[3]
    nor, nce, nas = tables[4], tables[5], tables[6]
    o = _PACK_HEADER
    cbody = view(tables, o, (ncb,))
    o += ncb
    crow = view(tables, o, (ncr,))
    o += ncr
    T = view(tables, o, (nt, NN))
    o += nt * NN
    ports = view(tables, o, (npo,))
    o += npo
    order = view(tables, o, (nor,))
    o += nor
    cemp = view(tables, o, (nce, 5))
    o += nce * 5
    asm = view(tables, o, (nas, 5))
    return cbody, crow, T, ports, order, cemp, asm


_CACHE: dict = {}


def cluster_structure(model, data, cbody, crow) -> ClusterStructure:
    """The cached cluster branching structure for constraints on the bodies ``cbody`` (rows ``crow``)."""
    key = (id(model), cbody.tobytes(), crow.tobytes())
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is model._key:
        return hit[1]
    s = ClusterStructure(data, cbody, crow)
    if len(_CACHE) > 256:
        _CACHE.clear()
    _CACHE[key] = (model._key, s)
    return s


@inlined
def cpv_seed_end_effectors(ib, cbody, crow, K, T, buf, ncl):
    """Line 4: for every EE, ᵏP_e = K_eᵀ on its body's block of the parent cluster, ᵏΩ_e = 0."""
    nc = cbody.shape[0]
    for e in range(nc):
        x = ncl + 1 + e
        if T[x, N_PD] < 0:
            continue
        me = crow[e + 1] - crow[e]
        pd = T[x, N_PD]
        for a in range(T[T[x, N_PARENT], N_FULL] * me):
            buf[pd + a] = 0.0
        sb = 6 * ib[cbody[e], L.I_SUB]
        for r in range(me):
            for c in range(6):
                buf[pd + (sb + c) * me + r] = K[crow[e] + r, c]
        for a in range(me * me):
            buf[T[x, N_OD] + a] = 0.0


@inlined
def cpv_port_step(ib, ws, ic, cb, wc, T, k, buf, Y, Z, z, y):
    """Lines 5–15 for an unbranched one-port cluster k (a star or ``C_ONEPORT``: every body hangs from
    the one output body Λ). Its chain child's forces reach one body e (``N_ENTRY``), so per column χ
    eq. 17 is ``ᵉX_Λᵀ χ_e − V 𝖣⁻¹ 𝖲_eᵀχ_e`` on Λ's block, V the cluster's port
    (:func:`~.cluster_delassus.port_column`)."""
    dim, ch, pd = T[k, N_DIM], T[k, N_CHAIN], T[k, N_PD]
    e = T[k, N_ENTRY]
    lam_rows = 0
    if pd >= 0:
        lam_rows = 6 * ib[ib[cb[ic[k, L.C_FIRST] + e], L.I_OUT], L.I_SUB]
        for a in range(T[T[k, N_PARENT], N_FULL] * dim):  # the parent's other bodies get nothing
            buf[pd + a] = 0.0
    so = T[ch, N_PD] + 6 * e * dim
    star = ic[k, L.C_M] == 1
    for col in range(dim):
        chi = ops.col6w(buf, so + col, dim)
        if star:  # in scalars
            Y[0, col], Z[0, col], f = port_column1(ib, ws, ic, cb, wc, k, e, chi)
        else:
            f = port_column(ib, ws, ic, cb, wc, k, e, chi, z, y)
            for l in range(ic[k, L.C_M]):
                Y[l, col] = z[l]
                Z[l, col] = y[l]
        if pd >= 0:
            for r in range(6):
                buf[pd + (lam_rows + r) * dim + col] = f[r]


@inlined
def cpv_omega(T, k, buf, Y, Z, mk):
    """Eq. 16: ``^{λ}Ω_{D(k)} = ᵏΩ_{D(k)} + Yᵀ Z`` with ``Y = 𝖲ᵀP`` and ``Z = 𝖣⁻¹Y`` (``mk`` rows), ᵏΩ
    zero at a branching cluster, else its chain child's."""
    dim, od = T[k, N_DIM], T[k, N_OD]
    branching = T[k, N_INN] == 1
    oc = 0 if branching else T[T[k, N_CHAIN], N_OD]
    for a in range(dim):
        for b in range(a, dim):
            acc = 0.0 if branching else buf[oc + a * dim + b]
            for l in range(mk):
                acc += Y[l, a] * Z[l, b]
            buf[od + a * dim + b] = acc
            buf[od + b * dim + a] = acc


@inlined
def cpv_backward_sweep(ib, ws, ic, cb, wc, T, ports, buf, f, z, y, Y, Z):
    """Lines 5–15, clusters from the leaves: per cluster with EEs below, the propagated force
    propagator ^{λ}P_{D(k)} = 𝒳ᵀ (χ − 𝖴 𝖣⁻¹ 𝖲ᵀ χ) column by column (eq. 17; χ = 1 on the ports of a
    branching cluster, line 7, else its chain child's propagator) and ^{λ}Ω_{D(k)} (eq. 16)."""
    ncl = ic[0, L.C0_NCL]
    for k in range(ncl, 0, -1):
        if T[k, N_HASES] == 0:
            continue
        nb6, mk, U = 6 * ic[k, L.C_NB], ic[k, L.C_M], ic[k, L.C_U]
        dim = T[k, N_DIM]
        branching = T[k, N_INN] == 1
        ch = T[k, N_CHAIN]
        src = 0 if branching else T[ch, N_PD]
        one_port = has_port(ic, k) and T[k, N_ENTRY] >= 0  # one entry body: cpv_port_step
        if one_port:
            cpv_port_step(ib, ws, ic, cb, wc, T, k, buf, Y, Z, z, y)
        for col in range(0 if one_port else dim):
            if branching:  # ᵏP_k = 1 (line 7), on the ports' forces
                for a in range(nb6):
                    f[0, a] = 0.0
                f[0, 6 * ports[T[k, N_PORT] + col // 6] + col % 6] = 1.0
            else:
                for a in range(nb6):
                    f[0, a] = buf[src + a * dim + col]
            st_mul_cluster(ib, ws, ic, cb, wc, k, f, 0, z)
            dinv_mul(ic, wc, k, z, y)
            for l in range(mk):
                Y[l, col] = z[l]
                Z[l, col] = y[l]
            pd = T[k, N_PD]
            if pd >= 0:  # eq. 17: 𝒳ᵀ (χ − 𝖴 𝖣⁻¹ 𝖲ᵀ χ), column by column
                for a in range(nb6):
                    acc = f[0, a]
                    for l in range(mk):
                        acc -= wc[U + a * mk + l] * Z[l, col]
                    f[0, a] = acc
                force_to_parent_cluster(ib, ws, ic, cb, k, f, 0, f, 1)
                for a in range(T[T[k, N_PARENT], N_FULL]):
                    buf[pd + a * dim + col] = f[1, a]
        cpv_omega(T, k, buf, Y, Z, mk)  # eq. 16


@inlined
def cpv_branch_inverse_inertias(T, ports, order, buf, f):
    """Line 17 (eq. 18), over N from the root: ⁰Ω_i = ^{A}Ω_i + Pᵀ ⁰Ω_A P with P = ^{A}P_i on A's
    ports."""
    for ii in range(order.shape[0]):
        i = order[ii]
        t = T[i, N_TOP]
        A = T[i, N_A]
        d = T[i, N_SPACE]
        o0 = T[i, N_O0]
        od = T[t, N_OD]
        for a in range(d * d):
            buf[o0 + a] = buf[od + a]
        if A == 0:
            continue
        pd = T[t, N_PD]
        da = T[A, N_SPACE]
        oa = T[A, N_O0]
        po = T[A, N_PORT]
        for b in range(d):  # column b of ⁰Ω_A P (into f[0]), then Pᵀ times it
            for r in range(da):
                acc = 0.0
                for c in range(da):
                    acc += buf[oa + r * da + c] * buf[pd + (6 * ports[po + c // 6] + c % 6) * d + b]
                f[0, r] = acc
            for a in range(b, d):
                acc = 0.0
                for r in range(da):
                    acc += buf[pd + (6 * ports[po + r // 6] + r % 6) * d + a] * f[0, r]
                buf[o0 + a * d + b] += acc
                if a != b:
                    buf[o0 + b * d + a] += acc


@inlined
def cpv_cemps(T, ports, cemp, buf):
    """Lines 18–22 (eq. 19): the CEMPs of every EE at its branching ancestors, on their ports, by the
    program ``cemp`` (rows: node, ancestor, offset, previous row, top)."""
    for row in range(cemp.shape[0]):
        x, j, o, prev, top = cemp[row, 0], cemp[row, 1], cemp[row, 2], cemp[row, 3], cemp[row, 4]
        me = T[x, N_SPACE]
        dj = T[j, N_SPACE]
        po = T[j, N_PORT]
        pd = T[top, N_PD]  # ^{j}P_{top's branching node} (rows: j's bodies, full)
        if prev < 0:  # ^{A(e)}K_e = ^{A(e)}P_eᵀ
            for r in range(me):
                for c in range(dj):
                    buf[o + r * dj + c] = buf[pd + (6 * ports[po + c // 6] + c % 6) * me + r]
        else:  # ^{A(j')}K_e = ^{j'}K_e ^{A(j')}P_{j'}ᵀ
            ps = cemp[prev, 2]
            dsrc = T[cemp[prev, 1], N_SPACE]
            for r in range(me):
                for c in range(dj):
                    rc = (6 * ports[po + c // 6] + c % 6) * dsrc
                    acc = 0.0
                    for s in range(dsrc):
                        acc += buf[ps + r * dsrc + s] * buf[pd + rc + s]
                    buf[o + r * dj + c] = acc


@inlined
def cpv_assemble(T, crow, asm, buf, f, out, ncl):
    """Lines 23–28: the diagonal blocks ⁰Ω_e, and by the program ``asm`` the off-diagonal blocks
    ᶜK_e1 ⁰Ω_c ᶜK_e2ᵀ at the closest common branching ancestor c (zero when c is the world)."""
    nc = crow.shape[0] - 1
    for e in range(nc):
        x = ncl + 1 + e
        r0 = crow[e]
        me = crow[e + 1] - r0
        if T[x, N_INN] == 0:  # a constraint on the world
            for r in range(me):
                for c in range(me):
                    out[r0 + r, r0 + c] = 0.0
            continue
        o0 = T[x, N_O0]
        for r in range(me):
            for c in range(me):
                out[r0 + r, r0 + c] = buf[o0 + r * me + c]
    for p in range(asm.shape[0]):
        e1, e2, c, k1, k2 = asm[p, 0], asm[p, 1], asm[p, 2], asm[p, 3], asm[p, 4]
        a0, b0 = crow[e1], crow[e2]
        m1, m2 = crow[e1 + 1] - a0, crow[e2 + 1] - b0
        if c == 0:
            for r in range(m1):
                for s in range(m2):
                    out[a0 + r, b0 + s] = 0.0
                    out[b0 + s, a0 + r] = 0.0
            continue
        dc = T[c, N_SPACE]
        oc = T[c, N_O0]
        for s in range(m2):  # f = ⁰Ω_c (ᶜK_e2)ᵀ column s
            for a in range(dc):
                acc = 0.0
                for b in range(dc):
                    acc += buf[oc + a * dc + b] * buf[k2 + s * dc + b]
                f[0, a] = acc
            for r in range(m1):
                acc = 0.0
                for a in range(dc):
                    acc += buf[k1 + r * dc + a] * f[0, a]
                out[a0 + r, b0 + s] = acc
                out[b0 + s, a0 + r] = acc


@shared
def c_pv_osimr_core(ib, ws, ic, cb, wc, code, consts, table, outputs, q, cbody, crow, K, T, ports, order,
                    cemp, asm, buf, out, ready):  # fmt: skip
    """Cluster PV-OSIMr on a validated state; writes Λ⁻¹ into ``out``. Returns 0 or a status.

    ``ready`` (int64) non-zero: the cluster kinematics at ``q`` and the articulated inertias (𝖨^A, 𝖴,
    𝖣⁻¹) are already in the Data — a C-ABA at the same configuration just ran, as in the contact
    solve — and are not made again (they depend on q alone).

    A function of its own, called by the Delassus kernel and by the contact kernel of models with
    loops: compiled once for both instead of inlined into each (its steps made each kernel's first
    call 4–5 s longer); the call costs tens of nanoseconds of a call of microseconds."""
    # uncounted here too: the call boundary hides that the caller's arrays are borrowed
    ib, ws, ic, cb, wc, code, consts, table, outputs, q = borrowed(
        (ib, ws, ic, cb, wc, code, consts, table, outputs, q)
    )
    cbody, crow, K, T, ports, order, cemp, asm, buf, out = borrowed(
        (cbody, crow, K, T, ports, order, cemp, asm, buf, out)
    )
    if ready == 0:
        no_v = wc[0:0]  # no velocity: an empty view, not an allocation per call
        st = c_fk_core(ib, ws, ic, cb, wc, code, consts, table, outputs, q, no_v, no_v, False)
        if st != 0:
            return st
        st = c_aba_backward(ib, ws, ic, cb, wc, no_v, view(wc, 0, (0, 6)))  # 𝖨^A, 𝖴, 𝖣⁻¹
        if st != 0:
            return st
    ncl = ic[0, L.C0_NCL]
    wmax = 6
    mmax = 1
    for k in range(1, ncl + 1):
        wmax = max(wmax, 6 * ic[k, L.C_NB])
        mmax = max(mmax, ic[k, L.C_M])
    for e in range(cbody.shape[0]):
        wmax = max(wmax, crow[e + 1] - crow[e])
    fbuf = stack_floats()  # the scratch below: on the kernel's stack when it fits
    nf = 2 * wmax + 2 * mmax + 2 * mmax * wmax
    if nf > STACK_FLOATS:
        fbuf = np.empty(nf)
    f = view(fbuf, 0, (2, wmax))  # row 0: a propagated column; row 1: the same moved to the parent
    z = view(fbuf, 2 * wmax, (mmax,))
    y = view(fbuf, 2 * wmax + mmax, (mmax,))
    Y = view(fbuf, 2 * wmax + 2 * mmax, (mmax, wmax))  # 𝖲ᵀ P
    Z = view(fbuf, 2 * wmax + 2 * mmax + mmax * wmax, (mmax, wmax))  # 𝖣⁻¹ 𝖲ᵀ P
    cpv_seed_end_effectors(ib, cbody, crow, K, T, buf, ncl)  # line 4
    cpv_backward_sweep(ib, ws, ic, cb, wc, T, ports, buf, f, z, y, Y, Z)  # lines 5–15
    cpv_branch_inverse_inertias(T, ports, order, buf, f)  # line 17
    cpv_cemps(T, ports, cemp, buf)  # lines 18–22
    cpv_assemble(T, crow, asm, buf, f, out, ncl)  # lines 23–28
    return 0
