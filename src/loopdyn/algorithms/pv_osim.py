"""PV-OSIM and PV-OSIMr: the Delassus matrix ``Λ⁻¹ = J M⁻¹ Jᵀ`` of link constraints on a kinematic
tree by propagation of the constraint rows (Sathya, Decré, Swevers; spec
``delassus-pv-osimr-sathya2023``).

* ``run_pv_osim`` — PV-OSIM (the paper's Algorithm 1), O(n + m² d): one backward sweep carries every
  constraint row up to the root (line 13) and adds the rank-nᵢ update ``(Kᴬ S) D⁻¹ (Kᴬ S)ᵀ`` of the
  joint to the block of all the rows below it (line 14).
* ``run_pv_osimr`` — PV-OSIMr (Algorithm 3), O(n + m²): between two branching links the tree is a
  chain, over which ONE 6×6 (or 6×m_e) force propagator and ONE inverse inertia are composed
  (lines 13 and 15, eqs 16–17) however many rows pass through it; the inverse inertias ``⁰Ω`` at the
  branching links follow in a forward sweep over the branching set N (line 17, eq 18), the
  constraint-space motion propagators (CEMPs) in a backward sweep over N (lines 20–22, eq 19), and
  the blocks ``ᶜK_e1 ⁰Ω_c ᶜK_e2ᵀ`` at the closest common ancestor c (lines 25–28, eq 13).

Both run in link coordinates (spec §3.7): with ``Xup_i = ⁱX_{π(i)}``, ``U_i = Iᴬ_i S_i`` and
``D_i = S_iᵀ U_i + diag(armature)`` (as the ABA and EFPA: ``joint_dinv``),

* the force propagator ``P_i f = Xup_iᵀ (f − U_i D_i⁻¹ S_iᵀ f)`` carries a force from i to π(i); the
  rows of ``K`` propagate like forces (``ᵖK = ⁱK P_iᵀ``, pitfall P3: P on forces, Pᵀ on motions);
* ``Ω_i = S_i D_i⁻¹ S_iᵀ`` is the inverse inertia of link i with π(i) grounded (i coordinates);
* ``K_e`` acts on the constrained link's ``[ω; v]`` in link coordinates (``loopdyn.constraint_rows.prepare``).

The branching set is the robust one of spec §2.2 (not the paper's literal formula, erratum E1):
``N = {0} ∪ E ∪ {links with ≥ 2 children whose subtrees hold end-effectors}``. Every constraint is
a fictitious end-effector (EE) child of its link; a constraint with more than 6 rows is split into
EEs of at most 6 rows on the same link (so every propagated block is at most 6 wide: pitfall P9;
this is the "identity propagation" of §3.5.1 — the link becomes a branching link and the split
blocks meet there). Constraints on the world (body 0) give zero rows and columns.

The bookkeeping (N, A, D, top, the compressed tree and its EE groups) depends only on the topology
and the constrained links: it is computed once per prepared constraint list (pure Python,
:func:`branching_structure`), packed into one int64 array and cached together with the float
scratch (pitfall P10: no closest-common-ancestor walk per pair).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from ..jit import inlined, njit, shared
from ..model import layout as L
from ..spatial import ops
from .aba import inertia_to_parent, joint_factor
from .borrow import acquire, borrowed, release
from .common import add_row_inertia, check_configuration, jcalc, kernel, s_column
from .status import DATA_IN_USE, SINGULAR, STATUS_BASE

__all__ = ["BranchingStructure", "PackedStructure", "branching_structure", "packed_structure"]


# ---------------------------------------------------------------------------------------------
# the branching structure (pure Python; once per topology and constraint attachment)
class _SubtreeEEs(Mapping):
    """ES(i): the end-effectors that are strict descendants of i (i = 0 … n_b + m_b), computed on
    demand from the depth-first intervals of the extended tree (O(m_b) per lookup)."""

    def __init__(self, s: BranchingStructure):
        self._s = s

    def __getitem__(self, i):
        s = self._s
        if not (isinstance(i, int | np.integer) and 0 <= i <= s.nb + s.ne):
            raise KeyError(i)
        return frozenset(e for e in range(s.nb + 1, s.nb + s.ne + 1) if s._tin[i] < s._tin[e] < s._tout[i])

    def __iter__(self):
        return iter(range(self._s.nb + self._s.ne + 1))

    def __len__(self):
        return self._s.nb + self._s.ne + 1


@dataclass
class BranchingStructure:
    """The index sets of the paper's §I-C for a tree with end-effectors, spec §2.2.

    Links are ``1 … nb``, the world is 0 and the EEs are ``nb+1 … nb+ne`` in the given order.
    Lists ``D`` and ``A`` hold ``D(i)`` and ``A(i)`` for ``i = 1 … nb+ne`` (``D[i-1]`` is ``D(i)``;
    ``None`` where ``D`` is undefined, i.e. no EE below i). ``ES[i]`` is a frozenset for ``i = 0 …``.
    """

    nb: int
    ne: int
    parent: list[int]  # π(i) for i = 0 … nb+ne (parent[0] = -1)
    N: list[int]  # branching links, sorted, with 0 and the EEs
    D: list[int | None]
    A: list[int]
    has_ee: list[bool]  # ES'(i) ≠ ∅ (EEs in the subtree rooted at i, i included), i = 0 … nb+ne
    chain_child: dict[int, int]  # real link i ∉ N with EEs below: its unique child holding EEs
    top: dict[int, int]  # j ∈ N∖{0}: the child of A(j) on the path to j
    groups: dict[int, list[int]]  # real c ∈ N∖{0}: its compressed children {u ∈ N : A(u) = c}
    ee_range: dict[int, tuple[int, int]]  # i with EEs below: (first, last) EE of ES'(i), if contiguous
    _tin: list[int] = field(repr=False, default_factory=list)
    _tout: list[int] = field(repr=False, default_factory=list)
    _depth: list[int] = field(repr=False, default_factory=list)
    ES: Mapping = field(init=False, repr=False)

    def __post_init__(self):
        self.ES = _SubtreeEEs(self)

    def cca(self, i: int, j: int) -> int:
        """The closest common ancestor ``max((anc(i) ∪ {i}) ∩ (anc(j) ∪ {j}))`` (O(depth); for tests
        and inspection — the kernels use the compressed groups instead)."""
        p, d = self.parent, self._depth
        while d[i] > d[j]:
            i = p[i]
        while d[j] > d[i]:
            j = p[j]
        while i != j:
            i, j = p[i], p[j]
        return i


def branching_structure(parents, ee_links) -> BranchingStructure:
    """The branching structure of the tree ``parents`` (``parents[i-1] = π(i)`` for the links
    ``1 … nb``, 0 = world, ``π(i) < i``) with one fictitious end-effector per entry of ``ee_links``
    (its link; 0 allowed), numbered ``nb+1, nb+2, …`` in that order.

    Robust branching set (spec §2.2, erratum E1): ``N = {0} ∪ E ∪ {i : at least two children c with
    ES'(c) ≠ ∅}``; ``A(i) = max(anc(i) ∩ N)``; ``D(i) = i`` if ``i ∈ N`` else ``D(chainChild(i))``
    (= ``min((desc(i) ∪ {i}) ∩ N)``). O(n + m_b) apart from the lazily evaluated ``ES``.
    """
    parents = [int(p) for p in parents]
    ee_links = [int(b) for b in ee_links]
    nb, ne = len(parents), len(ee_links)
    nt = nb + ne + 1
    par = [-1] + parents + ee_links
    for i in range(1, nb + 1):
        if not 0 <= par[i] < i:
            raise ValueError(f"parents must satisfy 0 ≤ π(i) < i; π({i}) = {par[i]}")
    for e in range(nb + 1, nt):
        if not 0 <= par[e] <= nb:
            raise ValueError(f"end-effector link {par[e]} out of range 0 … {nb}")
    children: list[list[int]] = [[] for _ in range(nt)]
    for i in range(1, nt):
        children[par[i]].append(i)
    # ES'(i) ≠ ∅ and the number of children holding EEs (reverse sweep; EEs come after all links)
    has = [False] * nt
    cnt = [0] * nt
    for i in range(nt - 1, 0, -1):
        if i > nb:
            has[i] = True
        if has[i]:
            cnt[par[i]] += 1
            has[par[i]] = True
    in_n = [False] * nt
    in_n[0] = True
    for i in range(1, nt):
        in_n[i] = i > nb or cnt[i] >= 2
    N = [i for i in range(nt) if in_n[i]]
    # A(i) := π(i) if π(i) ∈ N else A(π(i))  (forward sweep over links, then EEs)
    A = [0] * nt
    for i in range(1, nt):
        p = par[i]
        A[i] = p if in_n[p] else A[p]
    # D(k), chainChild(k) and top(D(k)) (reverse sweep over all links with EEs below)
    D: list[int | None] = [None] * nt
    chain: dict[int, int] = {}
    top: dict[int, int] = {}
    for k in range(nt - 1, 0, -1):
        if not has[k]:
            continue
        if in_n[k]:
            D[k] = k
        else:
            c = next(c for c in children[k] if has[c])
            chain[k] = c
            D[k] = D[c]
        if in_n[par[k]]:
            top[D[k]] = k
    groups = {c: [] for c in N if 0 < c <= nb}
    for u in N:
        if u > 0 and A[u] > 0:
            groups[A[u]].append(u)
    # depth-first intervals (EE children first, then links, each ascending) and depths
    tin, tout, depth = [0] * nt, [0] * nt, [0] * nt
    t = 0
    stack = [(0, False)]
    while stack:
        i, done = stack.pop()
        if done:
            tout[i] = t
            t += 1
            continue
        tin[i] = t
        t += 1
        stack.append((i, True))
        kids = sorted(children[i], key=lambda c: (c <= nb, c))
        for c in reversed(kids):
            depth[c] = depth[i] + 1
            stack.append((c, False))
    # (first, last) EE under each node when the EEs of its subtree are numbered contiguously
    lo = [nt] * nt
    hi = [-1] * nt
    n_under = [0] * nt
    for i in range(nt - 1, 0, -1):
        if i > nb:
            lo[i], hi[i], n_under[i] = i, i, 1
        p = par[i]
        if has[i]:
            lo[p], hi[p], n_under[p] = min(lo[p], lo[i]), max(hi[p], hi[i]), n_under[p] + n_under[i]
    ee_range = {i: (lo[i], hi[i]) for i in range(nt) if has[i] and hi[i] - lo[i] + 1 == n_under[i]}
    return BranchingStructure(
        nb=nb,
        ne=ne,
        parent=par,
        N=N,
        D=D[1:],
        A=A[1:],
        has_ee=has,
        chain_child=chain,
        top=top,
        groups=groups,
        ee_range=ee_range,
        _tin=tin,
        _tout=tout,
        _depth=depth,
    )


# ---------------------------------------------------------------------------------------------
# packing the structure for the kernels
#
# bk (int64, 1-D): header, then records
H_NB, H_NE, H_M, H_NN, H_NC, H_LINK, H_EE, H_NODE, H_CNODE, H_GROUP, H_RMAP, H_USER = range(12)
HEADER = 12  # H_USER: offset of records appended by a user of the structure (contact dynamics), else 0
# per link i = 0 … nb (LINK_W ints): flags, first and end internal row of ES'(i), chain child slot,
# width of D(i)
LK_FLAGS, LK_LO, LK_HI, LK_CHAIN, LK_W = range(5)
LINK_W = 5
F_HAS, F_IN_N = 1, 2
# per internal EE k (slot nb + 1 + k; EE_W ints): link, first internal row, rows, first user row
EE_LINK, EE_ROW, EE_DIM, EE_UROW = range(4)
EE_W = 4
# nodes j ∈ N∖{0}, ascending (NODE_W ints): slot j, A(j), top(j), width
ND_J, ND_A, ND_TOP, ND_W = range(4)
NODE_W = 4
# real branching links c, descending (CN_W ints): c, first group, number of groups, A(c) > 0 (the
# CEMPs at c are carried further up)
CN_C, CN_G0, CN_NG, CN_UP = range(4)
CN_W = 4
# groups (compressed children u of c; GR_W ints): top(u), first and end internal row of ES'(u), u is an EE
GR_TOP, GR_LO, GR_HI, GR_EE = range(4)
GR_W = 4
# float scratch (1-D): per slot (0 … nb+ne) SLOT_W floats — PD (6 × w, column c at 6 c),
# OD (w × w at 36), ⁰Ω (w × w at 72), and for the top s of a node j with A(j) > 0 the product
# T = ⁰Ω_A(j) PD (6 × w, column c at 108 + 6 c); slot 0 is the kernels' small scratch. Then per
# internal row ROW_W floats, then (PV-OSIM) the m × m accumulator.
SLOT_W = 144
PD_OFF, OD_OFF, O0_OFF, T_OFF = 0, 36, 72, 108
ROW_W = 18  # PV-OSIM: K, FS, Y (6 each); PV-OSIMr: ᶜK, W
TILE = 8  # rows per band in the assembly loops


@dataclass
class PackedStructure:
    """The branching structure of a constraint list packed for the PV-OSIM(r) kernels (``bk``), and
    per-thread float scratch."""

    rows: object  # the ConstraintRows this was built for (kept alive: its id is the cache key)
    structure: BranchingStructure
    bk: np.ndarray
    m_user: int
    m_int: int
    nslot: int
    local: threading.local = field(default_factory=threading.local)
    shape: tuple = field(init=False)  # (m_user, m_user): the shape of Λ⁻¹

    def __post_init__(self):
        self.shape = (self.m_user, self.m_user)

    @property
    def scratch_size(self) -> int:
        """Floats of PV-OSIMr scratch (PV-OSIM adds ``m_int²``)."""
        return SLOT_W * self.nslot + ROW_W * self.m_int

    def scratch(self, which: str) -> np.ndarray:
        """Per-thread float scratch (allocated once): ``"osimr"`` (PV-OSIMr), ``"osim"`` (PV-OSIM: the
        m × m accumulator after it), ``"world"`` / ``"world_added"`` (the world-coordinate PV-OSIMr of
        :mod:`loopdyn.algorithms.pv_osim_world`: then the rows ``K`` (m × 6, row-major) and the added
        inertia — 0 in ``"world"``, set per call in ``"world_added"``)."""
        buf = getattr(self.local, which, None)
        if buf is None:
            n = self.scratch_size
            if which == "osim":
                n += self.m_int * self.m_int
            elif which.startswith("world"):
                n += 6 * self.m_user + 1
            buf = np.zeros(n)
            if which.startswith("world"):
                buf[self.scratch_size : n - 1] = np.asarray(self.rows.K).reshape(-1)
            setattr(self.local, which, buf)
        return buf


def _pack(ib: np.ndarray, constraint_rows) -> PackedStructure:
    """PRECOMPUTE (spec §3.5.1): EEs in depth-first order, :func:`branching_structure`, and the
    records the kernels read, in one int64 array. O(n + m_b) (plus sorting the groups)."""
    return packed_structure_of(ib, constraint_rows.body, constraint_rows.row, constraint_rows)


def packed_structure_of(ib: np.ndarray, cbody, crow, owner=None) -> PackedStructure:
    """The packed structure of the constraints on bodies ``cbody`` with row offsets ``crow`` (not
    cached; :func:`packed_structure` caches it per prepared constraint list)."""
    nb = int(ib[0, L.I0_NBODIES])
    parents = [int(ib[i, L.I_PARENT]) for i in range(1, nb + 1)]
    # split the constraints into EEs of at most 6 rows: (link, first user row, rows)
    pieces_of: list[list[tuple[int, int, int]]] = [[] for _ in range(nb + 1)]
    for e in range(len(cbody)):
        b = int(cbody[e])
        if b == 0:
            continue  # on the world: zero rows and columns
        r0, r1 = int(crow[e]), int(crow[e + 1])
        for s in range(r0, r1, 6):
            pieces_of[b].append((b, s, min(6, r1 - s)))
    # depth-first order of the EEs (at each link its own EEs in constraint order, then its children
    # ascending), so that the EEs below any link are numbered contiguously
    children: list[list[int]] = [[] for _ in range(nb + 1)]
    for i in range(1, nb + 1):
        children[parents[i - 1]].append(i)
    pieces = []
    stack = [0]
    while stack:
        i = stack.pop()
        pieces.extend(pieces_of[i])
        stack.extend(reversed(children[i]))
    s = branching_structure(parents, [p[0] for p in pieces])
    ne = len(pieces)
    nslot = nb + ne + 1
    rstart = [0] * (ne + 1)
    for k, p in enumerate(pieces):
        rstart[k + 1] = rstart[k] + p[2]
    m_int = rstart[ne]

    def rows(i):  # internal rows of ES'(i)
        a, b = s.ee_range[i]
        return rstart[a - nb - 1], rstart[b - nb]

    def width(j):  # width of the node j ∈ N∖{0}
        return 6 if j <= nb else pieces[j - nb - 1][2]

    nodes = [j for j in s.N if j > 0]
    cnodes = [c for c in reversed(nodes) if c <= nb]
    # the groups of c in row order (they tile the rows of ES'(c))
    grp = {c: sorted(s.groups[c], key=lambda u: rows(u)[0]) for c in cnodes}
    ngroups = sum(len(grp[c]) for c in cnodes)
    off_link = HEADER
    off_ee = off_link + LINK_W * (nb + 1)
    off_node = off_ee + EE_W * ne
    off_cnode = off_node + NODE_W * len(nodes)
    off_group = off_cnode + CN_W * len(cnodes)
    off_rmap = off_group + GR_W * ngroups
    bk = np.zeros(off_rmap + m_int, dtype=np.int64)
    bk[:HEADER] = 0
    bk[[H_NB, H_NE, H_M, H_NN, H_NC]] = nb, ne, m_int, len(nodes), len(cnodes)
    bk[[H_LINK, H_EE, H_NODE, H_CNODE, H_GROUP, H_RMAP]] = (
        off_link,
        off_ee,
        off_node,
        off_cnode,
        off_group,
        off_rmap,
    )
    in_n = set(s.N)
    for i in range(1, nb + 1):
        if not s.has_ee[i]:
            continue
        o = off_link + LINK_W * i
        lo, hi = rows(i)
        bk[o + LK_FLAGS] = F_HAS | (F_IN_N if i in in_n else 0)
        bk[o + LK_LO], bk[o + LK_HI] = lo, hi
        bk[o + LK_CHAIN] = s.chain_child.get(i, 0)
        bk[o + LK_W] = width(s.D[i - 1])
    for k, (b, ur, dim) in enumerate(pieces):
        o = off_ee + EE_W * k
        bk[o + EE_LINK], bk[o + EE_ROW], bk[o + EE_DIM], bk[o + EE_UROW] = b, rstart[k], dim, ur
        bk[off_rmap + rstart[k] : off_rmap + rstart[k] + dim] = np.arange(ur, ur + dim)
    for n, j in enumerate(nodes):
        o = off_node + NODE_W * n
        bk[o + ND_J], bk[o + ND_A], bk[o + ND_TOP], bk[o + ND_W] = j, s.A[j - 1], s.top[j], width(j)
    g = 0
    for n, c in enumerate(cnodes):
        o = off_cnode + CN_W * n
        bk[o + CN_C], bk[o + CN_G0], bk[o + CN_NG], bk[o + CN_UP] = c, g, len(grp[c]), int(s.A[c - 1] > 0)
        for u in grp[c]:
            og = off_group + GR_W * g
            lo, hi = rows(u)
            bk[og + GR_TOP], bk[og + GR_LO], bk[og + GR_HI], bk[og + GR_EE] = s.top[u], lo, hi, int(u > nb)
            g += 1
    m_user = int(crow[-1])
    return PackedStructure(owner, s, bk, m_user, m_int, nslot)


_PACKED: dict = {}


def packed_structure(data, rows) -> PackedStructure:
    """The cached packed structure of prepared constraint rows (:func:`loopdyn.constraint_rows.prepare`
    returns the same object while the model and the constraints are unchanged)."""
    hit = _PACKED.get(id(rows))
    if hit is not None and hit.rows is rows:
        return hit
    p = _pack(data.ib, rows)
    if len(_PACKED) > 64:
        _PACKED.clear()
    _PACKED[id(rows)] = p
    return p


# ---------------------------------------------------------------------------------------------
# shared kernel pieces
@inlined
def _articulated_inertias_init(ib, ws, q, K, bk, added):
    """First forward sweep (lines 1–2): placements in the parent and Iᴬ_i ← I_i, plus
    ``added · K_eᵀ K_e`` on each constrained link (the penalised system of the damped Delassus)."""
    nb = ib[0, L.I0_NBODIES]
    for i in range(1, nb + 1):
        jcalc(ib, ws, i, q)
        ops.store_inertia_matrix(ws, i, L.W_IA, ops.load10(ws, i, L.W_INER))
    if added > 0.0:
        off_ee = bk[H_EE]
        for k in range(bk[H_NE]):
            o = off_ee + EE_W * k
            add_row_inertia(ws, bk[o + EE_LINK], K, bk[o + EE_UROW], bk[o + EE_UROW] + bk[o + EE_DIM], added)


@inlined
def _force_up(ib, ws, i, f, y, yo):
    """P_i f = Xup_iᵀ (f − U_i y) with y = D_i⁻¹ S_iᵀ f given at y[yo : yo + nv]."""
    g = f
    for k in range(ib[i, L.I_NV]):
        g = ops.sub6(g, ops.scale6(ops.load6(ws, i, L.W_U + 6 * k), y[yo + k]))
    return ops.force_to_parent(ops.load9(ws, i, L.W_R), ops.load3(ws, i, L.W_P), g)


# ---------------------------------------------------------------------------------------------
# PV-OSIM (Algorithm 1)
@shared
def pv_osim_core(ib, ws, q, K, bk, sc, added, out):
    """PV-OSIM on validated inputs; writes Λ⁻¹ (user order) into ``out``. Returns 0 or SINGULAR.

    Internal rows are numbered depth-first, so ``K_i^A`` (the rows of ES(i)) is the contiguous range
    ``[lo_i, hi_i)`` and ``L_i^A`` the matching diagonal block of the accumulator G: the "stacking"
    of lines 4 and 13 and the block-diagonal assembly of lines 5 and 14 are implicit. Each row keeps
    its current CEMP ``ⁱK_r`` (i = the link being processed) in the row scratch.
    """
    nb = bk[H_NB]
    m = bk[H_M]
    off_link = bk[H_LINK]
    off_rmap = bk[H_RMAP]
    R0 = SLOT_W * (nb + bk[H_NE] + 1)  # row scratch: K (0:6), FS = Kᴬ S (6:12), Y = D⁻¹ FSᵀ (12:18)
    G0 = R0 + ROW_W * m  # accumulator, m × m row-major (upper triangle)
    out[:, :] = 0.0
    _articulated_inertias_init(ib, ws, q, K, bk, added)  # lines 1–2
    for r in range(m):  # lines 3–4: Kᴬ_π(e) ← [Kᴬ_π(e); K_e]
        ur = bk[off_rmap + r]
        for c in range(6):
            sc[R0 + ROW_W * r + c] = K[ur, c]
    for k in range(m * m):  # line 5: Lᴬ ← blkdiag(…, 0)
        sc[G0 + k] = 0.0
    for i in range(nb, 0, -1):  # line 6
        if not joint_factor(ib, ws, i):  # line 7: D_i, Ω_i = S D⁻¹ Sᵀ (kept factored)
            return SINGULAR * STATUS_BASE + i
        nv = ib[i, L.I_NV]
        par = ib[i, L.I_PARENT]
        o = off_link + LINK_W * i
        if bk[o + LK_FLAGS] & F_HAS:  # line 11: ES(i) ≠ ∅
            lo = bk[o + LK_LO]
            hi = bk[o + LK_HI]
            if nv == 1:
                s0 = s_column(ib, ws, i, 0)
                dinv = ws[i, L.W_DINV]
                for r in range(lo, hi):  # FS = Kᴬ_i S_i, Y = D⁻¹ FSᵀ
                    ro = R0 + ROW_W * r
                    f = ops.dot6(s0, ops.load6_at(sc, ro))
                    sc[ro + 6] = f
                    sc[ro + 12] = dinv * f
                # line 14: Lᴬ_π(i) ← blkdiag(Lᴬ_π(i), Lᴬ_i + Kᴬ_i Ω_i Kᴬ_iᵀ), as the rank-1 update
                # (Kᴬ S) D⁻¹ (Kᴬ S)ᵀ of the block of ES(i) (for π(i) = 0 too: pitfall P8)
                for r1 in range(lo, hi):
                    f1 = sc[R0 + ROW_W * r1 + 6]
                    g = G0 + m * r1
                    for r2 in range(r1, hi):
                        sc[g + r2] += f1 * sc[R0 + ROW_W * r2 + 12]
                if par > 0:  # line 13: Kᴬ_π(i) ← [Kᴬ_π(i); Kᴬ_i P_iᵀ] (each row carried as a force)
                    R = ops.load9(ws, i, L.W_R)
                    p = ops.load3(ws, i, L.W_P)
                    U0 = ops.load6(ws, i, L.W_U)
                    for r in range(lo, hi):
                        ro = R0 + ROW_W * r
                        g6 = ops.sub6(ops.load6_at(sc, ro), ops.scale6(U0, sc[ro + 12]))
                        ops.store6_at(sc, ro, ops.force_to_parent(R, p, g6))
            else:
                for r in range(lo, hi):  # FS = Kᴬ_i S_i, Y = D⁻¹ FSᵀ
                    ro = R0 + ROW_W * r
                    kr = ops.load6_at(sc, ro)
                    for k in range(nv):
                        sc[ro + 6 + k] = ops.dot6(s_column(ib, ws, i, k), kr)
                    for k in range(nv):
                        acc = 0.0
                        for l in range(nv):
                            acc += ws[i, L.W_DINV + nv * k + l] * sc[ro + 6 + l]
                        sc[ro + 12 + k] = acc
                # line 14, as the rank-nᵢ update (Kᴬ S) D⁻¹ (Kᴬ S)ᵀ
                for r1 in range(lo, hi):
                    ro1 = R0 + ROW_W * r1 + 6
                    g = G0 + m * r1
                    for r2 in range(r1, hi):
                        ro2 = R0 + ROW_W * r2 + 12
                        acc = 0.0
                        for k in range(nv):
                            acc += sc[ro1 + k] * sc[ro2 + k]
                        sc[g + r2] += acc
                if par > 0:  # line 13
                    for r in range(lo, hi):
                        ro = R0 + ROW_W * r
                        ops.store6_at(sc, ro, _force_up(ib, ws, i, ops.load6_at(sc, ro), sc, ro + 12))
        if par > 0:  # lines 9–10
            inertia_to_parent(ib, ws, i, par)
    # line 15: Λ⁻¹ = Lᴬ_0, mapped to the user's constraint order (P5) and made exactly symmetric (P12);
    # in bands of TILE rows, so that both the (u1, u2) and the transposed (u2, u1) stores stay in cache
    for a0 in range(0, m, TILE):
        a1 = min(a0 + TILE, m)
        for r2 in range(a0, m):
            u2 = bk[off_rmap + r2]
            for r1 in range(a0, min(a1, r2 + 1)):
                v = sc[G0 + m * r1 + r2]
                u1 = bk[off_rmap + r1]
                out[u1, u2] = v
                out[u2, u1] = v
    return 0


@kernel(
    "int64(int64[:, ::1], float64[:, ::1], float64[::1], float64[:, ::1], int64[::1], float64[::1], float64, "
    "float64[:, ::1])"
)
def pv_osim_kernel(ib, ws, q, K, bk, sc, added, out):
    ib, ws, q, K, bk, sc, added, out = borrowed((ib, ws, q, K, bk, sc, added, out))
    st = check_configuration(ib, q)
    if st != 0:
        return st
    if not acquire(ib):
        return DATA_IN_USE * STATUS_BASE
    st = pv_osim_core(ib, ws, q, K, bk, sc, added, out)
    release(ib)
    return st


# ---------------------------------------------------------------------------------------------
# PV-OSIMr (Algorithm 3)
@inlined
def pvr_seed_end_effectors(K, bk, sc):
    """PV-OSIMr lines 3–4: ^{π(e)}P_e ← K_eᵀ, ^{π(e)}Ω_e ← 0 for every EE slot (abuse of notation, E8)."""
    nb = bk[H_NB]
    off_ee = bk[H_EE]
    for k in range(bk[H_NE]):
        o = off_ee + EE_W * k
        s = SLOT_W * (nb + 1 + k)
        w = bk[o + EE_DIM]
        ur = bk[o + EE_UROW]
        for c in range(w):
            for a in range(6):
                sc[s + PD_OFF + 6 * c + a] = K[ur + c, a]
        for a in range(w * w):
            sc[s + OD_OFF + a] = 0.0


@inlined
def pvr_propagate_1dof(ib, ws, sc, i, par, w, si, sb):
    """Lines 13–15 for the common case, a 1-dof link inside a chain: with W = Sᵀ Pb,
    ^{π(i)}Ω_{D(i)} = Ob + Wᵀ D⁻¹ W (eq. 16) and ^{π(i)}P_{D(i)} = Xupᵀ (Pb − U D⁻¹ W) (eq. 17)."""
    Wb = 0  # slot 0 scratch: W = Sᵀ Pb
    s0 = s_column(ib, ws, i, 0)
    dinv = ws[i, L.W_DINV]
    for c in range(w):  # W = Sᵀ Pb
        sc[Wb + c] = ops.dot6(s0, ops.load6_at(sc, sb + PD_OFF + 6 * c))
    for a in range(w):  # line 15 (eq 16): Ob + Wᵀ D⁻¹ W
        ya = sc[Wb + a] * dinv
        for c in range(a, w):
            v = sc[sb + OD_OFF + w * a + c] + ya * sc[Wb + c]
            sc[si + OD_OFF + w * a + c] = v
            sc[si + OD_OFF + w * c + a] = v
    if par > 0:  # line 13 (eq 17): P_i Pb = Xupᵀ (Pb − U D⁻¹ W)
        R = ops.load9(ws, i, L.W_R)
        p = ops.load3(ws, i, L.W_P)
        U0 = ops.load6(ws, i, L.W_U)
        for c in range(w):
            g = ops.sub6(ops.load6_at(sc, sb + PD_OFF + 6 * c), ops.scale6(U0, dinv * sc[Wb + c]))
            ops.store6_at(sc, si + PD_OFF + 6 * c, ops.force_to_parent(R, p, g))


@inlined
def pvr_propagate_general(ib, ws, sc, i, nv, par, w, si, sb, in_n):
    """Lines 13–15 for any link: (Pb, Ob) = (ⁱP_{D(i)}, ⁱΩ_{D(i)}) are (1₆, 0₆) when i ∈ N (lines
    6–7), else the chain child's; W = Sᵀ Pb, Y = D⁻¹ W, ^{π(i)}Ω_{D(i)} = Ob + Wᵀ Y (eq. 16),
    ^{π(i)}P_{D(i)} = Xupᵀ (Pb − U Y) column by column (eq. 17)."""
    Wb = 0  # slot 0 scratch: W (nv × w, row-major, row stride 6) at 0, Y = D⁻¹ W at 36
    Yb = 36
    if in_n:
        for k in range(nv):
            sk = s_column(ib, ws, i, k)
            for c in range(6):
                sc[Wb + 6 * k + c] = sk[c]
    else:
        for k in range(nv):
            sk = s_column(ib, ws, i, k)
            for c in range(w):
                sc[Wb + 6 * k + c] = ops.dot6(sk, ops.load6_at(sc, sb + PD_OFF + 6 * c))
    for k in range(nv):  # Y = D⁻¹ W
        for c in range(w):
            acc = 0.0
            for l in range(nv):
                acc += ws[i, L.W_DINV + nv * k + l] * sc[Wb + 6 * l + c]
            sc[Yb + 6 * k + c] = acc
    # line 15 (eq 16): ^{π(i)}Ω_{D(i)} = ⁱΩ_{D(i)} + ⁱP_{D(i)}ᵀ Ω_i ⁱP_{D(i)} = Ob + Wᵀ D⁻¹ W
    for a in range(w):
        for c in range(a, w):
            acc = 0.0
            for k in range(nv):
                acc += sc[Wb + 6 * k + a] * sc[Yb + 6 * k + c]
            if not in_n:
                acc += sc[sb + OD_OFF + w * a + c]
            sc[si + OD_OFF + w * a + c] = acc
            sc[si + OD_OFF + w * c + a] = acc
    if par > 0:  # line 13 (eq 17): ^{π(i)}P_{D(i)} = P_i ⁱP_{D(i)}, column by column
        R = ops.load9(ws, i, L.W_R)
        p = ops.load3(ws, i, L.W_P)
        for c in range(w):
            if in_n:
                g = ops.unit6(c)
            else:
                g = ops.load6_at(sc, sb + PD_OFF + 6 * c)
            for k in range(nv):
                g = ops.sub6(g, ops.scale6(ops.load6(ws, i, L.W_U + 6 * k), sc[Yb + 6 * k + c]))
            ops.store6_at(sc, si + PD_OFF + 6 * c, ops.force_to_parent(R, p, g))


@inlined
def pvr_branch_inverse_inertias(bk, sc, out):
    """Lines 16–17 (eq 18), ascending over N∖{0}: ⁰Ω_j = ^{A}Ω_j + ^{A}P_jᵀ ⁰Ω_A ^{A}P_j, with
    ^{A(j)}P_j = PD[top(j)] and ^{A(j)}Ω_j = OD[top(j)]; ⁰Ω_j = OD[top(j)] when A(j) = 0. The product
    T = ⁰Ω_A PD is kept in top(j)'s slot: its columns are the rows of ᶜK_e ⁰Ω_c the blocks of eq. 13
    need (line 25). For an EE j, ⁰Ω_j is the diagonal block Λ⁻¹_{j,j} (line 28; this also covers E5:
    no cca(e, e) = e lookup) and goes straight into ``out``."""
    nb = bk[H_NB]
    off_node = bk[H_NODE]
    off_ee = bk[H_EE]
    for n in range(bk[H_NN]):
        o = off_node + NODE_W * n
        j = bk[o + ND_J]
        sj = SLOT_W * j
        a_ = bk[o + ND_A]
        st = SLOT_W * bk[o + ND_TOP]
        w = bk[o + ND_W]
        ur = bk[off_ee + EE_W * (j - nb - 1) + EE_UROW] if j > nb else -1
        if a_ == 0:
            for r in range(w):
                for c in range(w):
                    if ur >= 0:
                        out[ur + r, ur + c] = sc[st + OD_OFF + w * r + c]
                    else:
                        sc[sj + O0_OFF + w * r + c] = sc[st + OD_OFF + w * r + c]
            continue
        so = SLOT_W * a_ + O0_OFF
        Tb = st + T_OFF
        o0 = ops.load6_at(sc, so)  # ⁰Ω_A, row by row (held across the columns)
        o1 = ops.load6_at(sc, so + 6)
        o2 = ops.load6_at(sc, so + 12)
        o3 = ops.load6_at(sc, so + 18)
        o4 = ops.load6_at(sc, so + 24)
        o5 = ops.load6_at(sc, so + 30)
        for c in range(w):  # T = ⁰Ω_A PD
            pc = ops.load6_at(sc, st + PD_OFF + 6 * c)
            t = (ops.dot6(o0, pc), ops.dot6(o1, pc), ops.dot6(o2, pc),
                 ops.dot6(o3, pc), ops.dot6(o4, pc), ops.dot6(o5, pc))  # fmt: skip
            ops.store6_at(sc, Tb + 6 * c, t)
        for r in range(w):
            pr = ops.load6_at(sc, st + PD_OFF + 6 * r)
            for c in range(r, w):
                v = sc[st + OD_OFF + w * r + c] + ops.dot6(pr, ops.load6_at(sc, Tb + 6 * c))
                if ur >= 0:
                    out[ur + r, ur + c] = v
                    out[ur + c, ur + r] = v
                else:
                    sc[sj + O0_OFF + w * r + c] = v
                    sc[sj + O0_OFF + w * c + r] = v


@inlined
def pvr_cemps_to_branch(bk, sc, g0, ng, R0, up):
    """Lines 20–22 for one branching link c: bring the CEMPs of the EEs below every compressed child u
    of c up to c (line 20: ^{c}K_e = PD[top(e)]ᵀ for an EE child; line 22, eq 19:
    ^{c}K_e = ^{u}K_e PD[top(u)]ᵀ, row ↦ Σ_b row[b] PD[:, b]), and beside each the row
    ``W = ᶜK_e ⁰Ω_c`` from the kept T = ⁰Ω_c PD[top(u)] (⁰Ω_c symmetric): ``Σ_b ᵘK_e[b] T[:, b]``.
    An EE child's rows are read in place (the columns of PD and T, :func:`group_rows`); they are
    copied to the row scratch only when c's CEMPs go further up (``up``)."""
    off_group = bk[H_GROUP]
    for g in range(g0, g0 + ng):
        og = off_group + GR_W * g
        st = SLOT_W * bk[og + GR_TOP]
        lo = bk[og + GR_LO]
        hi = bk[og + GR_HI]
        if bk[og + GR_EE]:  # line 20
            if up:
                for r in range(lo, hi):
                    ro = R0 + ROW_W * r
                    ops.store6_at(sc, ro, ops.load6_at(sc, st + PD_OFF + 6 * (r - lo)))
                    ops.store6_at(sc, ro + 6, ops.load6_at(sc, st + T_OFF + 6 * (r - lo)))
        else:  # line 22
            for r in range(lo, hi):
                ro = R0 + ROW_W * r
                kr = ops.load6_at(sc, ro)
                acc = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
                wacc = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
                for b in range(6):
                    acc = ops.add6(acc, ops.scale6(ops.load6_at(sc, st + PD_OFF + 6 * b), kr[b]))
                    wacc = ops.add6(wacc, ops.scale6(ops.load6_at(sc, st + T_OFF + 6 * b), kr[b]))
                ops.store6_at(sc, ro, acc)
                ops.store6_at(sc, ro + 6, wacc)


@inlined
def group_rows(bk, og, R0):
    """Where the rows of a group are: ``(ᶜK base, W base, stride)`` with row r's ᶜK at
    ``base + stride · r`` — the columns of PD and T of an EE child, else the row scratch."""
    if bk[og + GR_EE]:
        st = SLOT_W * bk[og + GR_TOP] - 6 * bk[og + GR_LO]
        return st + PD_OFF, st + T_OFF, 6
    return R0, R0 + 6, ROW_W


@inlined
def pvr_branch_blocks(bk, sc, out, g0, ng, R0):
    """Lines 25–26 for one branching link c: the blocks Λ⁻¹_{e1,e2} = ᶜK_e1 ⁰Ω_c ᶜK_e2ᵀ (eq. 13) between
    the groups of c — every off-diagonal pair with cca = c exactly once — as ``W_e1 · ᶜK_e2`` with the
    rows W = ᶜK ⁰Ω_c of :func:`pvr_cemps_to_branch`."""
    off_group = bk[H_GROUP]
    off_rmap = bk[H_RMAP]
    for g1 in range(g0, g0 + ng):
        oa = off_group + GR_W * g1
        hi_a = bk[oa + GR_HI]
        _ka, wa, sa = group_rows(bk, oa, R0)
        for g2 in range(g1 + 1, g0 + ng):
            ob = off_group + GR_W * g2
            kb, _wb, sb = group_rows(bk, ob, R0)
            for a0 in range(bk[oa + GR_LO], hi_a, TILE):  # bands of TILE rows (transposed stores in cache)
                a1 = min(a0 + TILE, hi_a)
                for r2 in range(bk[ob + GR_LO], bk[ob + GR_HI]):
                    k2 = ops.load6_at(sc, kb + sb * r2)
                    u2 = bk[off_rmap + r2]
                    for r1 in range(a0, a1):
                        v = ops.dot6(ops.load6_at(sc, wa + sa * r1), k2)
                        u1 = bk[off_rmap + r1]
                        out[u1, u2] = v  # line 25
                        out[u2, u1] = v  # line 26


@inlined
def pvr_link_step(ib, ws, bk, sc, i, par):
    """Lines 12–15 for link i, once its joint factors U_i and D_i⁻¹ are in ``ws`` (from
    :func:`~loopdyn.algorithms.aba.joint_factor` or from an ABA's backward sweep): nothing unless
    ES(i) ≠ ∅; then ^{π(i)}Ω_{D(i)} (eq. 16) and ^{π(i)}P_{D(i)} (eq. 17)."""
    o = bk[H_LINK] + LINK_W * i
    flags = bk[o + LK_FLAGS]
    if flags & F_HAS:
        w = bk[o + LK_W]
        in_n = flags & F_IN_N != 0
        sb = 0 if in_n else SLOT_W * bk[o + LK_CHAIN]
        if ib[i, L.I_NV] == 1 and not in_n:
            pvr_propagate_1dof(ib, ws, sc, i, par, w, SLOT_W * i, sb)
        else:
            pvr_propagate_general(ib, ws, sc, i, ib[i, L.I_NV], par, w, SLOT_W * i, sb, in_n)


@inlined
def pvr_assemble(bk, sc, out):
    """Lines 16–28, after the backward sweep: ⁰Ω at the branching links (eq. 18), the CEMPs
    (eq. 19) and the blocks of Λ⁻¹ (eq. 13) into ``out`` (zeroed first: cca = 0 blocks stay exactly
    zero, P7)."""
    out[:, :] = 0.0
    R0 = SLOT_W * (bk[H_NB] + bk[H_NE] + 1)  # row scratch: ᶜK (0:6), W = ᶜK ⁰Ω_c (6:12)
    pvr_branch_inverse_inertias(bk, sc, out)  # lines 16–17 and 28
    off_cnode = bk[H_CNODE]
    for n in range(bk[H_NC]):  # lines 18–26, one branching link c at a time, children before parents
        o = off_cnode + CN_W * n
        pvr_cemps_to_branch(bk, sc, bk[o + CN_G0], bk[o + CN_NG], R0, bk[o + CN_UP])
        pvr_branch_blocks(bk, sc, out, bk[o + CN_G0], bk[o + CN_NG], R0)


@njit(cache=True)
def pv_osimr_core(ib, ws, q, K, bk, sc, added, out):
    """PV-OSIMr on validated inputs (spec §3.5.1 in link coordinates, §3.7); writes Λ⁻¹ (user order)
    into ``out``. Returns 0 or SINGULAR.

    Per slot s (link or EE): ``PD[s] = ^{π(s)}P_{D(s)}`` (6 × w, w = 6 or m_e, force propagator from
    D(s)'s coordinates — constraint space for an EE — to π(s)'s), ``OD[s] = ^{π(s)}Ω_{D(s)}`` (w × w)
    and, for s ∈ N, ``⁰Ω_s``. Per internal row: its CEMP ``ᶜK_e`` at the branching ancestor c being
    processed, and ``W = ᶜK_e ⁰Ω_c``.
    """
    nb = bk[H_NB]
    _articulated_inertias_init(ib, ws, q, K, bk, added)  # lines 1–2
    pvr_seed_end_effectors(K, bk, sc)  # lines 3–4
    for i in range(nb, 0, -1):  # line 5
        if not joint_factor(ib, ws, i):  # line 8: D_i, ^{π(i)}Ω_i = S D⁻¹ Sᵀ (kept factored)
            return SINGULAR * STATUS_BASE + i
        par = ib[i, L.I_PARENT]
        pvr_link_step(ib, ws, bk, sc, i, par)  # lines 12–15
        if par > 0:  # lines 9–11
            inertia_to_parent(ib, ws, i, par)
    pvr_assemble(bk, sc, out)  # lines 16–28
    return 0


@kernel(
    "int64(int64[:, ::1], float64[:, ::1], float64[::1], float64[:, ::1], int64[::1], float64[::1], float64, "
    "float64[:, ::1])"
)
def pv_osimr_kernel(ib, ws, q, K, bk, sc, added, out):
    ib, ws, q, K, bk, sc, added, out = borrowed((ib, ws, q, K, bk, sc, added, out))
    st = check_configuration(ib, q)
    if st != 0:
        return st
    if not acquire(ib):
        return DATA_IN_USE * STATUS_BASE
    st = pv_osimr_core(ib, ws, q, K, bk, sc, added, out)
    release(ib)
    return st
