"""LTL-OSIM (Featherstone 2010): the Delassus matrix of a kinematic tree as
``Λ⁻¹ = (J L⁻¹)(J L⁻¹)ᵀ`` with ``M = LᵀL`` the branch-induced sparse factorisation (RBDA §6.5).

Each row of ``J L⁻¹`` lives on the ancestor dofs of its link, so the triangular solves and products
touch ancestors only: O(n d² + m² d + m d²). The constraint Jacobian kernel
(:func:`constraint_jacobian_core`) is shared with the contact dynamics.
"""

from __future__ import annotations

import numpy as np

from ..jit import njit
from ..model import layout as L
from ..spatial import ops
from .borrow import acquire, borrowed, release
from .common import check_configuration, kernel, s_column
from .crba import crba_core, dof_parents, ltl_in_place, ltl_singular_body
from .status import DATA_IN_USE, SINGULAR, STATUS_BASE


@njit(cache=True)
def constraint_jacobian_core(ib, ws, cbody, crow, K, J):
    """J (m × nv) from the rows K (acting on the body's [ω; v] in body coordinates), after jcalc of
    every body: the rows propagate up the ancestor path like forces, ``J_r,k = (ᵇX_jᵀ K_r) · S_j,k``.
    Entries outside the ancestor dofs of the constrained body are left untouched (zero them first)."""
    for e in range(cbody.shape[0]):
        for r in range(crow[e], crow[e + 1]):
            k = (K[r, 0], K[r, 1], K[r, 2], K[r, 3], K[r, 4], K[r, 5])
            j = cbody[e]
            while j > 0:
                iv = ib[j, L.I_IV]
                for c in range(ib[j, L.I_NV]):
                    J[r, iv + c] = ops.dot6(s_column(ib, ws, j, c), k)
                k = ops.force_to_parent(ops.load9(ws, j, L.W_R), ops.load3(ws, j, L.W_P), k)
                j = ib[j, L.I_PARENT]


@njit(cache=True)
def ltl_delassus_core(ib, ws, q, cbody, crow, K, Mf, lam, J, Y, out):
    """LTL-OSIM (Featherstone 2010) on validated inputs: ``M = Lᵀ L`` (branch-induced sparse factor,
    left in the lower triangle of ``Mf``), ``J`` (m × nv; zero outside each row's ancestor dofs),
    ``Y = J L⁻¹`` (same sparsity) and ``out = Λ⁻¹ = Y Yᵀ``. ``lam`` receives the dof parents.
    Returns 0 or a SINGULAR status.

    Cost O(n d²) for the factor, O(m d²) for the sparse triangular solves (each row of Y lives on the
    d ancestor dofs of its link) and O(m² d) for the products (the sum runs over one row's ancestors).
    """
    nb = ib[0, L.I0_NBODIES]
    crba_core(ib, ws, q, Mf)  # also runs jcalc on every body
    dof_parents(ib, lam)
    bad = ltl_in_place(Mf, lam)
    if bad >= 0:
        for i in range(1, nb + 1):
            if ib[i, L.I_IV] <= bad < ib[i, L.I_IV] + ib[i, L.I_NV]:
                return SINGULAR * STATUS_BASE + i
        return SINGULAR * STATUS_BASE
    bad = ltl_singular_body(ib, ws, Mf)
    if bad > 0:
        return SINGULAR * STATUS_BASE + bad
    J[:, :] = 0.0
    constraint_jacobian_core(ib, ws, cbody, crow, K, J)
    nc = cbody.shape[0]
    last = np.full(crow[nc], -1, dtype=np.int64)  # the last dof of each row's link (−1: the world)
    for e in range(nc):
        b = cbody[e]
        for r in range(crow[e], crow[e + 1]):
            if b > 0:
                last[r] = ib[b, L.I_IV] + ib[b, L.I_NV] - 1
    for r in range(crow[nc]):  # y L = j, k = n−1 … 0 over the ancestors only
        for c in range(Y.shape[1]):
            Y[r, c] = 0.0
        k = last[r]
        while k != -1:
            Y[r, k] = J[r, k]
            k = lam[k]
        k = last[r]
        while k != -1:
            y = Y[r, k] / Mf[k, k]
            Y[r, k] = y
            i = lam[k]
            while i != -1:
                Y[r, i] -= Mf[k, i] * y
                i = lam[i]
            k = lam[k]
    for r1 in range(crow[nc]):
        for r2 in range(r1, crow[nc]):
            v = 0.0
            k = last[r1]
            while k != -1:
                v += Y[r1, k] * Y[r2, k]
                k = lam[k]
            out[r1, r2] = v
            out[r2, r1] = v
    return 0


@kernel(
    "int64(int64[:, ::1], float64[:, ::1], float64[::1], int64[::1], int64[::1], float64[:, ::1], "
    "float64[:, ::1], int64[::1], float64[:, ::1], float64[:, ::1], float64[:, ::1])"
)
def ltl_kernel(ib, ws, q, cbody, crow, K, Mf, lam, J, Y, out):
    ib, ws, q, cbody, crow, K, Mf, lam, J, Y, out = borrowed((ib, ws, q, cbody, crow, K, Mf, lam, J, Y, out))
    st = check_configuration(ib, q)
    if st != 0:
        return st
    if not acquire(ib):
        return DATA_IN_USE * STATUS_BASE
    st = ltl_delassus_core(ib, ws, q, cbody, crow, K, Mf, lam, J, Y, out)
    release(ib)
    return st
