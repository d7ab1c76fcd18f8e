"""Column layout of the compiled model: the flat arrays the Numba kernels read, declared in one place.

A compiled tree model lives in two 2-D arrays with one row per body (row 0 = the universe):

* ``ib`` (int64, ``(nbodies + 1, NI)``): topology and coordinate indices;
* ``ws`` (float64, ``(nbodies + 1, NW)``): the body's constant parameters (joint placement, inertia,
  axis, armature) followed by the per-body workspace the algorithms fill (transforms, velocities,
  articulated inertias, ...).

A model with loops adds the cluster table ``ic`` (int64, ``(nclusters + 1, NC)``), whose columns hold
counts and *offsets* into the flat cluster workspace ``wc`` (see :mod:`loopdyn.model.clusters`).

Each :class:`~loopdyn.model.data.Data` owns its own copy of these arrays, so a kernel call needs few
model arguments besides the user's vectors. Rotations are stored row-major (9 numbers); spatial
vectors use Featherstone's order ``[angular; linear]``.

Every column is declared once below as ``(name, width, meaning)``, in storage order, as MuJoCo
declares its arrays in one table; the offsets are generated from the widths: ``I_<name>`` for ``ib``,
``W_<name>`` for ``ws``, ``C_<name>`` for ``ic``, and ``NI``, ``NW``, ``NC`` for the row widths. Row 0
of each array has its own small layout (``I0_``, ``W0_``, ``C0_``). Reorder or resize a column here and
every kernel follows (delete the ``__pycache__`` folders: Numba's cache freezes these constants).
"""

from __future__ import annotations

# ---- ib: one row per body -------------------------------------------------------------------------
IB_COLUMNS = (
    ("PARENT", 1, "parent body index (0 = universe)"),
    ("JTYPE", 1, "joint type code (loopdyn.model.joints)"),
    ("IQ", 1, "first index in q"),
    ("IV", 1, "first index in v"),
    ("NQ", 1, "number of configuration coordinates"),
    ("NV", 1, "number of velocity coordinates"),
    ("CLUSTER", 1, "cluster of the body (row index in the cluster table, from 1)"),
    ("OUT", 1, "output body Λ(i): nearest supporting body outside the body's cluster (0 = universe)"),
    ("CPAR", 1, "parent body if it is in the same cluster, else 0"),
    ("SUB", 1, "index of the body inside its cluster"),
    ("ROTOR", 1, "1 for a cluster body whose articulated inertia in Λ(i)'s frame is the constant W_IPAR: a "
     "leaf on a revolute joint, attached to Λ(i), axisymmetric about its joint axis (a rotor)"),
)
IB_ROW0 = (
    ("NBODIES", 1, "number of bodies"),
    ("NQ", 1, "size of the (spanning-tree) configuration"),
    ("NV", 1, "size of the (spanning-tree) velocity"),
    ("ANCESTORS", 1, "number of (body, non-root ancestor) pairs: the tree CRBA's choice of walk"),
    ("BUSY", 1, "1 while a kernel runs on this Data (algorithms.borrow.acquire): a call from another "
     "thread on the same Data meanwhile returns the DATA_IN_USE status"),
)

# ---- ws: one row per body ---------------------------------------------------------------------------
WS_COLUMNS = (
    # constant model parameters (filled when the model is compiled)
    ("JR", 9, "joint placement rotation (active: joint axes in parent-body axes)"),
    ("JP", 3, "joint placement translation (joint origin in the parent-body frame)"),
    ("INER", 10, "inertia about the body origin: m, h = m c (3), Ī_o (xx, yy, zz, xy, xz, yz)"),
    ("AXIS", 3, "unit joint axis (revolute / prismatic)"),
    ("ARM", 6, "armature of the joint's velocity coordinates (row 0: 1.0 if the model has any)"),
    ("MBOUND", 1, "1-DoF joint: an upper bound, over all configurations, of its diagonal mass-matrix entry "
     "M_ii (+inf if a translating joint below it makes M_ii unbounded; 0 for other joints): the fast "
     "half of the relative pivot test of algorithms.common.pivot_positive"),
    ("IPAR", 36, "for an I_ROTOR body: its inertia in its parent's frame, ᶦXᵀ I ᶦX (any joint angle), 6 × 6"),
    # workspace written by the algorithms, ordered by use: the tree kernels touch the first ~200
    # columns of a row; the scratch comes last
    ("R", 9, "rotation of the body frame in its parent body frame (parent_M_body)"),
    ("P", 3, "translation of parent_M_body"),
    ("OR", 9, "rotation of the body frame in the world"),
    ("OP", 3, "body origin in the world"),
    ("V", 6, "spatial velocity of the body, body frame"),
    ("A", 6, "spatial acceleration of the body, body frame"),
    ("F", 6, "spatial force transmitted by the body's joint (ABA: articulated bias force), body frame"),
    ("C", 6, "velocity-product acceleration v × vJ (clusters: the bias 𝖼 of the body)"),
    ("IA", 36, "articulated-body inertia, 6 × 6 row-major"),
    ("U", 36, "U = IA S, column k at W_U + 6 k"),
    ("DINV", 36, "D⁻¹ (nv × nv, row-major)"),
    ("UU", 6, "u = τ − Sᵀ pA"),
    ("IC", 10, "composite rigid-body inertia (compact form, as W_INER)"),
    # cluster kinematics (bodies of multi-body clusters), all in the frame of the output body Λ(i)
    ("XR", 9, "rotation of the body frame in Λ(i)'s frame"),
    ("XP", 3, "origin of the body in Λ(i)'s frame"),
    ("TMP", 168, "scratch: row 0 holds the kernels' global scratch"),
)
WS_ROW0 = (("GRAVITY", 3, "gravity vector in the world frame"),)

# ---- ic: the cluster table, one row per cluster (row 0 = header) -----------------------------------
# cluster kinds (ic[k, C_KIND])
SINGLE_BODY = 0  # one body with its tree joint (no constraint)
EXPLICIT = 1  # explicit constraints q = G y with a constant G
IMPLICIT = 2  # implicit constraints φ(q) = 0 (K(q), k(q, q̇) from the constraint program)

IC_COLUMNS = (
    ("FIRST", 1, "offset of the cluster's bodies in cb"),
    ("NB", 1, "number of bodies"),
    ("KIND", 1, "cluster kind: SINGLE_BODY, EXPLICIT or IMPLICIT"),
    ("N", 1, "spanning coordinates"),
    ("M", 1, "independent coordinates"),
    ("IQ", 1, "offset in q (cluster state)"),
    ("NQ", 1, "size in q"),
    ("IV", 1, "offset in v"),
    ("NV", 1, "size in v"),
    ("PROG", 1, "constraint program (tape) index, −1 if none"),
    ("NROW", 1, "independent constraint rows (= N − M)"),
    ("IND", 1, "offset in cb of the local indices of the independent coordinates (M)"),
    ("DEP", 1, "offset in cb of the local indices of the dependent coordinates (NROW)"),
    ("G", 1, "offset in wc of G (N × M, row-major)"),
    ("GB", 1, "offset in wc of g (N)"),
    ("S", 1, "offset in wc of the cluster motion subspace 𝖲 (6 NB × M, row-major)"),
    ("SCR", 1, "offset in wc of the cluster's scratch: q, q̇ (N each), φ, K, k, LU (see clusters.py)"),
    ("PARENT", 1, "parent cluster (0 = world)"),
    ("ROWS", 1, "offset in cb of the tape rows kept (NROW)"),
    ("IA", 1, "offset in wc of the articulated inertia 𝖨^A (6 NB × 6 NB, row-major)"),
    ("PA", 1, "offset in wc of the articulated bias force 𝗉^A (6 NB)"),
    ("U", 1, "offset in wc of 𝖴 = 𝖨^A 𝖲 (6 NB × M, row-major)"),
    ("DINV", 1, "offset in wc of 𝖣⁻¹ (M × M)"),
    ("UU", 1, "offset in wc of 𝗎 = τ − 𝖲ᵀ𝗉^A (M)"),
    ("DSCR", 1, "offset in wc of scratch for 𝖣 and its factorisation (M² + 72)"),
    ("MASK", 1, "offset in wc of the nonzero-block mask of 𝖨^A (NB × NB, 0/1) and group scratch"),
    ("ARM", 1, "offset in wc of the armature of the cluster's spanning coordinates (N)"),
    ("NCHECK", 1, "rows of the constraint program after the NROW kept ones that only check the branch"),
    ("STAR", 1, "1 for a star cluster: explicit, one independent coordinate, every body hinged on the same "
     "output body, at most one body with children (a link and its geared rotors); its 𝖨^A stays "
     "block-diagonal with one port, so C-ABA takes it in one step (cluster_dynamics.c_aba_star)"),
    ("ONEPORT", 1, "1 for a one-port cluster that is not a star: several bodies (any kind, any number of "
     "coordinates), every one with the same output body, and every child cluster one-port too, so its "
     "𝖨^A stays block-diagonal and it hands its parent one port (cluster_dynamics.c_aba_one_port)"),
)
IC_ROW0 = (
    ("NCL", 1, "number of clusters"),
    ("QS", 1, "offset in wc of the spanning-tree configuration"),
    ("QDS", 1, "offset in wc of the spanning-tree velocity"),
    ("QDDS", 1, "offset in wc of the spanning-tree acceleration"),
    ("REGS", 1, "offset in wc of the tape registers"),
    ("NQS", 1, "spanning nq"),
    ("NVS", 1, "spanning nv"),
    ("TAUS", 1, "offset in wc of spanning joint forces (nvs)"),
    ("PHITOL", 1, "offset in wc of the largest |φ| accepted for implicit clusters' positions"),
    ("TCODE", 1, "offset in cb of the constraint programs' instructions (NTCODE × 4, row-major)"),
    ("NTCODE", 1, "number of instructions"),
    ("TTABLE", 1, "offset in cb of the programs' table (NTPROG × TABLE_WIDTH of constraints.tape)"),
    ("NTPROG", 1, "number of programs"),
    ("TOUT", 1, "offset in cb of the programs' output registers"),
    ("NTOUT", 1, "their number"),
    ("TCONST", 1, "offset in wc of the programs' constants"),
    ("NTCONST", 1, "their number"),
    ("GMAP", 1, "offset in cb of the rows of G by spanning velocity index r: NVS + 1 pointers (relative to "
     "GMAP), then per entry the independent index and the wc offset of G[r, ·] (zeros of a constant G "
     "left out)"),
    ("GCOLS", 1, "offset in cb of the columns of G by independent velocity index x: NV + 1 pointers "
     "(relative to GCOLS), then per entry the spanning velocity index r and the wc offset of G[r, x], r "
     "increasing — GMAP transposed, so that τ = Gᵀ τ_span is one sum per independent coordinate"),
    ("SUMM", 1, "Σ M over the clusters (the derivatives' per-cluster sums)"),
    ("SUMN2", 1, "Σ N² over the clusters (the derivatives' per-cluster blocks)"),
    ("NDEP", 1, "dependent coordinates of the implicit clusters, Σ NROW"),
    ("DCOL", 1, "offset in cb of, per spanning velocity index, its place among the dependent coordinates "
     "(implicit clusters in order, their DEP order) or −1: the columns of the derivatives' Gᵀ X_v, Gᵀ M_s"),
)


# ---- the two model arguments of the cluster kernels -------------------------------------------------
# A model with loops hands its kernels two flat buffers instead of five arrays (Numba's dispatcher
# spends about 50 ns per array argument on every call): ``ints`` = a header, then ib, ic and cb
# (row-major), and ``floats`` = ws, then wc. Data's ``ib``, ``ic``, ``cb``, ``ws`` and ``wc`` are views
# of them; a kernel rebuilds the same views from the header (``algorithms.borrow.model_views``).
PACK_IB_ROWS = 0  # ints[0]: rows of ib (nbodies + 1)
PACK_IC_ROWS = 1  # ints[1]: rows of ic (nclusters + 1)
PACK_CB = 2  # ints[2]: size of cb
PACK_WC = 3  # ints[3]: size of wc
PACK_HEADER = 4  # ib starts at ints[PACK_HEADER]

def offsets(table) -> tuple[dict[str, int], int]:
    """The offset of every column of a declared table, and the row width."""
    out, at = {}, 0
    for name, width, _ in table:
        if name in out or width < 1:
            raise ValueError(f"layout: column {name!r} declared twice or with width {width}")
        out[name] = at
        at += width
    return out, at


def _define(prefix: str, table) -> int:
    cols, width = offsets(table)
    for name, at in cols.items():
        globals()[prefix + name] = at
    return width


NI = _define("I_", IB_COLUMNS)
_define("I0_", IB_ROW0)
NW = _define("W_", WS_COLUMNS)
_define("W0_", WS_ROW0)
NC = _define("C_", IC_COLUMNS)
_define("C0_", IC_ROW0)


def describe() -> str:
    """The whole layout as a table: array, column, offset, width, meaning."""
    lines = []
    for array, prefix, table in (
        ("ib", "I_", IB_COLUMNS),
        ("ib[0]", "I0_", IB_ROW0),
        ("ws", "W_", WS_COLUMNS),
        ("ws[0]", "W0_", WS_ROW0),
        ("ic", "C_", IC_COLUMNS),
        ("ic[0]", "C0_", IC_ROW0),
    ):
        cols, _ = offsets(table)
        for name, width, meaning in table:
            lines.append(f"{array:6s} {prefix + name:12s} {cols[name]:4d} {width:4d}  {meaning}")
    return "\n".join(lines)
