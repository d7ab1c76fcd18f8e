"""EFPA: the Delassus matrix ``Λ⁻¹ = J M⁻¹ Jᵀ`` of a kinematic tree by extended force propagators
(Wensing, Featherstone and Orin 2012), in its local-frame form (spec ``delassus-pv-osimr-sathya2023``
§3.4 and §3.7). O(n + m d + m²) arithmetic (n bodies, m constraint rows, d depth); the
closest-common-ancestor search adds O(m_b² log d) integer work.

In link coordinates (``Xup_i = ⁱX_{π(i)}``, ``U_i = Iᴬ_i S_i``, ``D_i = S_iᵀ U_i``):

* force propagator ``P_i f = Xup_iᵀ (f − U_i D_i⁻¹ S_iᵀ f)`` carries a force from i to π(i);
* motion propagator ``P_iᵀ a = a' − S_i D_i⁻¹ U_iᵀ a'`` with ``a' = Xup_i a``;
* CEMPs: ``ᵖK_e = ⁱK_e P_iᵀ`` up every ancestor of the constrained link (the rows of K propagate
  like forces);
* ``W_i = ⁰Ω_i ⁱK_eᵀ = P_iᵀ W_π(i) + S_i D_i⁻¹ S_iᵀ ⁱK_eᵀ`` down the same path;
* ``Λ⁻¹_{e1,e2} = ᶜK_{e1} W_c`` at ``c = cca(ℓ_e1, ℓ_e2)`` (the link itself for e1 = e2 or for two
  constraints on one link; zero when the two links hang from the world through different subtrees).

The rows ``K`` act on the constrained link's motion ``[ω; v]`` in link coordinates
(:class:`loopdyn.constraint_rows.ConstraintRows`).

Up to ``EFPA_WORLD_ROWS`` rows the kernel runs the same propagators in world coordinates instead
(:func:`efpa_world_core`, the steps of C-EFPA's world version on a tree): with the articulated
inertias, motion subspaces and row forces all in world axes, ``Iᴬ`` reaches the parent as a plain sum
and a force needs no change of frame, so there is neither the congruence ``Xupᵀ Iᵃ Xup`` per link
nor the pass down the paths; each pair of rows present at a link adds ``y₁ᵀ D⁻¹ y₂`` there, O(m² d),
which beats the link-coordinate O(m d + m²) for the few rows of one or two contacts (27–45 % faster
than C-EFPA on the same bodies, against 19 % slower to 18 % faster in link coordinates).
"""

from __future__ import annotations

import numpy as np

from ..jit import inlined, shared
from ..model import layout as L
from ..spatial import ops
from .aba import inertia_to_parent, joint_factor
from .borrow import STACK_FLOATS, STACK_INTS, acquire, borrowed, release, stack_floats, stack_ints, view
from .common import add_row_inertia, check_configuration, jcalc, kernel, s_column
from .pv_osim_world import (
    W_OO,
    W_SW,
    is_free,
    sym6_inverse,
    world_factor,
    world_inertia_to_parent,
    world_link,
)
from .status import DATA_IN_USE, SINGULAR, STATUS_BASE

_Z6 = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)

#: EFPA runs in world coordinates up to this many constraint rows (two 6-D or four 3-D contacts), as
#: C-EFPA (:data:`~.cluster_delassus_world.EFPA_WORLD_ROWS`): its pairwise sums cost O(m² d), against
#: O(m d + m²) for the link-coordinate version's pass down the paths
EFPA_WORLD_ROWS = 12


@inlined
def _dinv_proj(ib, ws, i, f, a, y):
    """y[:nv] = D_i⁻¹ (S_iᵀ f − U_iᵀ a) for the 6-tuples f (force) and a (motion); y[6:12] scratch."""
    nv = ib[i, L.I_NV]
    for k in range(nv):
        y[6 + k] = ops.dot6(s_column(ib, ws, i, k), f) - ops.dot6(ops.load6(ws, i, L.W_U + 6 * k), a)
    for k in range(nv):
        acc = 0.0
        for l in range(nv):
            acc += ws[i, L.W_DINV + nv * k + l] * y[6 + l]
        y[k] = acc


@inlined
def _s_comb(ib, ws, i, y):
    """S_i y[:nv] as a 6-tuple."""
    acc = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    for k in range(ib[i, L.I_NV]):
        acc = ops.add6(acc, ops.scale6(s_column(ib, ws, i, k), y[k]))
    return acc


@inlined
def _u_comb(ib, ws, i, y):
    """U_i y[:nv] as a 6-tuple."""
    acc = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    for k in range(ib[i, L.I_NV]):
        acc = ops.add6(acc, ops.scale6(ops.load6(ws, i, L.W_U + 6 * k), y[k]))
    return acc


@inlined
def common_depth(path, e1, e2, dmax):
    """The deepest t ≤ dmax with path[e1, t] == path[e2, t] (0: only the world in common). Equality
    is monotone in t (the paths run from the root), so a binary search: O(log depth)."""
    lo = 0
    hi = dmax
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if path[e1, mid] == path[e2, mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


@shared
def efpa_core(ib, ws, q, cbody, crow, K, added, out):
    """EFPA on validated inputs; writes Λ⁻¹ (m × m) into ``out``. Returns 0 or a SINGULAR status.

    ``added`` ≥ 0: before the sweep, ``added · K_eᵀ K_e`` is added to the inertia of each constrained
    link (the penalised system of Pinocchio's damped Delassus; 0 for the plain matrix).
    Workspace per body as the ABA: W_IA (articulated inertia, then Iᵃ), W_U = Iᴬ S, W_DINV = D⁻¹.
    """
    # uncounted here too: the call boundary hides that the caller's arrays are borrowed
    ib, ws, q, cbody, crow, K, added, out = borrowed((ib, ws, q, cbody, crow, K, added, out))
    nb = ib[0, L.I0_NBODIES]
    nc = cbody.shape[0]
    # pass 1: placements in the parent, Iᴬ ← I (+ penalty)
    for i in range(1, nb + 1):
        jcalc(ib, ws, i, q)
        ops.store_inertia_matrix(ws, i, L.W_IA, ops.load10(ws, i, L.W_INER))
    if added > 0.0:
        for e in range(nc):
            if cbody[e] > 0:
                add_row_inertia(ws, cbody[e], K, crow[e], crow[e + 1], added)
    # pass 2: articulated inertias (ABA's second loop without bias forces)
    for i in range(nb, 0, -1):
        if not joint_factor(ib, ws, i):  # U = Iᴬ S, D⁻¹ = (Sᵀ U + armature)⁻¹ as the ABA
            return SINGULAR * STATUS_BASE + i
        par = ib[i, L.I_PARENT]
        if par > 0:
            inertia_to_parent(ib, ws, i, par)  # Iᴬ_par += Xupᵀ (Iᴬ − U D⁻¹ Uᵀ) Xup
    # the root → link path of every constraint, indexed by depth; the per-call tables are views of
    # buffers on the kernel's stack (a heap buffer only past their size)
    ibuf = stack_ints()
    if (nb + 1) * (nc + 1) > STACK_INTS:
        ibuf = np.empty((nb + 1) * (nc + 1), dtype=np.int64)
    depth = view(ibuf, 0, (nb + 1,))
    depth[0] = 0
    for i in range(1, nb + 1):
        depth[i] = depth[ib[i, L.I_PARENT]] + 1
    dmax = 0
    for e in range(nc):
        dmax = max(dmax, depth[cbody[e]])
    path = view(ibuf, nb + 1, (nc, dmax + 1))
    for e in range(nc):
        for t in range(dmax + 1):
            path[e, t] = 0
        j = cbody[e]
        while j > 0:
            path[e, depth[j]] = j
            j = ib[j, L.I_PARENT]
    m = crow[nc]
    fbuf = stack_floats()
    if 12 * m * (dmax + 1) + 12 > STACK_FLOATS:
        fbuf = np.empty(12 * m * (dmax + 1) + 12)
    KC = view(fbuf, 0, (m, dmax + 1, 6))  # ᵗK_e rows at the path's link of depth t (link coordinates)
    W = view(fbuf, 6 * m * (dmax + 1), (m, dmax + 1, 6))  # ⁰Ω_t ᵗK_eᵀ columns
    y = view(fbuf, 12 * m * (dmax + 1), (12,))
    for e in range(nc):
        d = depth[cbody[e]]
        if d == 0:
            continue
        for r in range(crow[e], crow[e + 1]):
            k = (K[r, 0], K[r, 1], K[r, 2], K[r, 3], K[r, 4], K[r, 5])
            for c in range(6):
                KC[r, d, c] = k[c]
            for t in range(d, 1, -1):  # backward: ᵖK = P_i applied to the rows (as forces)
                i = path[e, t]
                _dinv_proj(ib, ws, i, k, _Z6, y)
                k = ops.force_to_parent(
                    ops.load9(ws, i, L.W_R), ops.load3(ws, i, L.W_P), ops.sub6(k, _u_comb(ib, ws, i, y))
                )
                for c in range(6):
                    KC[r, t - 1, c] = k[c]
            w = _Z6
            for t in range(1, d + 1):  # forward: W_i = P_iᵀ W_π(i) + S D⁻¹ Sᵀ ⁱK
                i = path[e, t]
                kt = (KC[r, t, 0], KC[r, t, 1], KC[r, t, 2], KC[r, t, 3], KC[r, t, 4], KC[r, t, 5])
                a = (
                    _Z6
                    if t == 1
                    else ops.motion_to_child(ops.load9(ws, i, L.W_R), ops.load3(ws, i, L.W_P), w)
                )
                _dinv_proj(ib, ws, i, kt, a, y)
                w = ops.add6(a, _s_comb(ib, ws, i, y))
                for c in range(6):
                    W[r, t, c] = w[c]
    # assembly: Λ⁻¹_{e1,e2} = ᶜK_e1 · W_c(e2) at the closest common ancestor c
    for e1 in range(nc):
        d1 = depth[cbody[e1]]
        for e2 in range(e1, nc):
            d2 = depth[cbody[e2]]
            c = common_depth(path, e1, e2, min(d1, d2))
            for r1 in range(crow[e1], crow[e1 + 1]):
                r2a = r1 if e1 == e2 else crow[e2]
                for r2 in range(r2a, crow[e2 + 1]):
                    v = 0.0
                    if c > 0:
                        for s in range(6):
                            v += KC[r1, c, s] * W[r2, c, s]
                    out[r1, r2] = v
                    out[r2, r1] = v
    return 0


# ---------------------------------------------------------------------------------------------
# world coordinates
@inlined
def efpa_world_rows(ib, ws, i, chi, cur, present, y, z, out):
    """At body i, its world factors S (W_SW), U, D⁻¹ in ``ws``: for each row whose force χ has reached
    i, ``y = Sᵀ χ`` and ``z = D⁻¹ y``; every pair of them adds ``y₁ · z₂`` to Λ⁻¹ (upper triangle);
    each force then moves on to the parent as ``χ − U z`` (no change of frame)."""
    n = 0
    for r in range(cur.shape[0]):
        if cur[r] == i:
            present[n] = r
            n += 1
    par = ib[i, L.I_PARENT]
    nv = ib[i, L.I_NV]
    if nv == 1:
        s = ops.load6(ws, i, W_SW)
        dinv = ws[i, L.W_DINV]
        for t in range(n):
            yv = ops.dot6(s, ops.load6(chi, present[t], 0))
            y[t, 0] = yv
            z[t, 0] = yv * dinv
        for t1 in range(n):
            r1 = present[t1]
            y1 = y[t1, 0]
            for t2 in range(t1, n):
                out[r1, present[t2]] += y1 * z[t2, 0]
        U = ops.load6(ws, i, L.W_U)
        for t in range(n):
            r = present[t]
            ops.store6(chi, r, 0, ops.sub6(ops.load6(chi, r, 0), ops.scale6(U, z[t, 0])))
            cur[r] = par
        return
    for t in range(n):
        c = ops.load6(chi, present[t], 0)
        for k in range(nv):
            y[t, k] = ops.dot6(ops.load6(ws, i, W_SW + 6 * k), c)
        for k in range(nv):
            acc = 0.0
            for l in range(nv):
                acc += ws[i, L.W_DINV + nv * k + l] * y[t, l]
            z[t, k] = acc
    for t1 in range(n):
        r1 = present[t1]
        for t2 in range(t1, n):
            acc = 0.0
            for k in range(nv):
                acc += y[t1, k] * z[t2, k]
            out[r1, present[t2]] += acc
    for t in range(n):
        r = present[t]
        c = ops.load6(chi, r, 0)
        for k in range(nv):
            c = ops.sub6(c, ops.scale6(ops.load6(ws, i, L.W_U + 6 * k), z[t, k]))
        ops.store6(chi, r, 0, c)
        cur[r] = par


@inlined
def efpa_world_free(ws, i, chi, cur, present, out):
    """:func:`efpa_world_rows` at a free-flyer without armature (``S`` invertible): ``χ₁ᵀ (Iᴬ)⁻¹ χ₂``
    per pair (W_DINV holds ``(Iᴬ)⁻¹``), and nothing reaches the parent (``χ − U D⁻¹ Sᵀ χ = 0``)."""
    n = 0
    for r in range(cur.shape[0]):
        if cur[r] == i:
            present[n] = r
            n += 1
    for t1 in range(n):
        r1 = present[t1]
        w = ops.mat6_mul(ws, i, L.W_DINV, ops.load6(chi, r1, 0))
        for t2 in range(t1, n):
            out[r1, present[t2]] += ops.dot6(w, ops.load6(chi, present[t2], 0))
    for t in range(n):
        cur[present[t]] = 0


@shared(fastmath={"contract"})
def efpa_world_core(ib, ws, q, cbody, crow, K, added, out):
    """EFPA in world coordinates on validated inputs (the steps of C-EFPA's world version,
    :func:`~.cluster_delassus_world.c_efpa_world_core`, on a tree); writes Λ⁻¹ into ``out``. Returns 0
    or a SINGULAR status.

    The articulated inertias and the constraint rows go up together, leaves first: each row starts as
    ``K_e`` carried to the world as a force on its link; at every link i it passes, ``y = S_iᵀ χ``
    and each pair of rows present adds ``y₁ᵀ D_i⁻¹ y₂`` to Λ⁻¹, and the force moves on to the parent
    as ``χ − U_i D_i⁻¹ y``. With every quantity in world coordinates (origin at link 1's, as
    :mod:`.pv_osim_world`) ``Iᴬ`` reaches the parent as a plain sum and the forces need no transform:
    the body-coordinate version's congruences ``Xupᵀ Iᵃ Xup`` and the pass down the paths are gone, for
    pairwise sums of O(m² d). ``added`` as :func:`efpa_core`."""
    # uncounted here too: the call boundary hides that the caller's arrays are borrowed
    ib, ws, q, cbody, crow, K, added, out = borrowed((ib, ws, q, cbody, crow, K, added, out))
    nb = ib[0, L.I0_NBODIES]
    nc = cbody.shape[0]
    m = crow[nc]
    origin = jcalc(ib, ws, 1, q)[1]  # the frame's origin: link 1's (a root), for conditioning
    for i in range(1, nb + 1):  # placements, world inertias Iᴬ = I and motion subspaces
        world_link(ib, ws, i, q, origin)
    fbuf = stack_floats()  # scratch on the kernel's stack (m ≤ EFPA_WORLD_ROWS: it fits)
    if 18 * m > STACK_FLOATS:
        fbuf = np.empty(18 * m)
    ibuf = stack_ints()
    if 2 * m + nb + 1 > STACK_INTS:
        ibuf = np.empty(2 * m + nb + 1, dtype=np.int64)
    chi = view(fbuf, 0, (m, 6))  # the rows' forces, world coordinates
    y = view(fbuf, 6 * m, (m, 6))
    z = view(fbuf, 12 * m, (m, 6))
    cur = view(ibuf, 0, (m,))  # the link each row's force has reached (0: the world)
    present = view(ibuf, m, (m,))
    reach = view(ibuf, 2 * m, (nb + 1,))  # 1 on the links some row passes
    for i in range(nb + 1):
        reach[i] = 0
    for e in range(nc):
        b = cbody[e]
        oR, op = ops.load9(ws, b, L.W_OR), ops.load3(ws, b, W_OO)
        for r in range(crow[e], crow[e + 1]):
            cur[r] = b
            kw = ops.force_to_parent(oR, op, ops.load6(K, r, 0)) if b > 0 else _Z6
            ops.store6(chi, r, 0, kw)
            if added > 0.0 and b > 0:  # the penalty inertia added · K_eᵀ K_e, world rows
                for a in range(6):
                    x = added * kw[a]
                    for c in range(6):
                        ws[b, L.W_IA + 6 * a + c] += x * kw[c]
        j = b
        while j > 0 and reach[j] == 0:
            reach[j] = 1
            j = ib[j, L.I_PARENT]
    for r in range(m):
        for c in range(m):
            out[r, c] = 0.0
    for i in range(nb, 0, -1):
        par = ib[i, L.I_PARENT]
        if is_free(ib, ws, i):  # Ω = (Iᴬ)⁻¹; nothing reaches the parent
            if not sym6_inverse(ws, i, L.W_IA, L.W_DINV):
                return SINGULAR * STATUS_BASE + i
            if reach[i] != 0:
                efpa_world_free(ws, i, chi, cur, present, out)
            continue
        if not world_factor(ib, ws, i):  # U = Iᴬ S, D⁻¹
            return SINGULAR * STATUS_BASE + i
        if reach[i] != 0:
            efpa_world_rows(ib, ws, i, chi, cur, present, y, z, out)
        if par > 0:
            world_inertia_to_parent(ib, ws, i, par)  # Iᴬ_par += Iᴬ − U D⁻¹ Uᵀ, no transform
    for r in range(m):  # the upper triangle was accumulated
        for c in range(r):
            out[r, c] = out[c, r]
    return 0


@kernel(
    "int64(int64[:, ::1], float64[:, ::1], float64[::1], int64[::1], int64[::1], float64[:, ::1], float64, "
    "float64[:, ::1])"
)
def efpa_kernel(ib, ws, q, cbody, crow, K, added, out):
    """EFPA: Λ⁻¹ of the rows ``K`` (constraint e on link ``cbody[e]``, rows ``crow[e] … crow[e + 1] −
    1``) into ``out``; in world coordinates (:func:`efpa_world_core`) up to ``EFPA_WORLD_ROWS`` rows,
    in link coordinates (:func:`efpa_core`, O(m d + m²)) beyond, where the pairwise sums cost more."""
    ib, ws, q, cbody, crow, K, added, out = borrowed((ib, ws, q, cbody, crow, K, added, out))
    st = check_configuration(ib, q)
    if st != 0:
        return st
    if not acquire(ib):
        return DATA_IN_USE * STATUS_BASE
    if crow[cbody.shape[0]] <= EFPA_WORLD_ROWS:
        st = efpa_world_core(ib, ws, q, cbody, crow, K, added, out)
    else:
        st = efpa_core(ib, ws, q, cbody, crow, K, added, out)
    release(ib)
    return st
