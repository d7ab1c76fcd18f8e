"""Analytical derivatives of the dynamics: the public functions.

:func:`rnea_derivatives` and :func:`aba_derivatives` follow Pinocchio's conventions
(``computeRNEADerivatives``, ``computeABADerivatives``):

* the derivative with respect to ``q`` is taken in the tangent space,
  ``∂f/∂q := ∂/∂δ f(loopdyn.integrate(model, q, δ))`` at δ = 0 (δ of size nv: for a free flyer the
  body-frame twist [linear; angular], for a ball joint the body-frame rotation vector);
* ``v`` and ``a`` (``tau``) are held fixed, and so are the external forces, in their body frames.

By model:

* a kinematic tree: one kernel call (:mod:`loopdyn.algorithms.derivatives`), the recursive O(n·d)
  world-frame algorithm of Carpentier & Mansard (RSS 2018);
* a model whose clusters are all explicit (constant G: geared rotors, belts, gear trains — Mini
  Cheetah, the MIT Humanoid, ...): one kernel call, in independent coordinates y, exact, as
  ``Gᵀ (∂τ_s/∂x) G`` with the recursive tree derivatives ∂τ_s/∂x of the spanning tree at
  ``(G y, G ẏ, G ÿ)``; the congruence with G is a sparse product (O(nnz(G)²)) and the ABA
  derivatives solve with a dense Cholesky factor of H (O(nv³)): those two steps are not recursive;
* a model with an implicit loop (four-bar, five-bar, Tello's differentials: G(q), g(q, q̇)): exact,
  with the configuration dependence of G and g differentiated (spec §2), but a first, *dense*
  version in Python — the spanning tree's derivatives come from the recursive tree kernel, then
  dense products with G, per-cluster ∂G, ∂g from the second and third derivatives of the loop
  constraints (sympy, once per model), and for the ABA a Cholesky solve with H: several kernel calls
  and O(nv_s² nv) work per call, far from the issue's speed targets (see ``_loop_rnea_derivatives``).
"""

from __future__ import annotations

import numpy as np

from .algorithms import derivatives as kernels
from .algorithms.call import CONFIGURATION, FORCES, TANGENT, KernelArgs, run
from .algorithms.status import raise_for_status
from .algorithms.validation import check_data
from .constraints.formulas import Formulas, jet_function
from .model import layout as L

STATE = KernelArgs(2, ("q", CONFIGURATION), ("v", TANGENT), ("a", TANGENT), ("f_ext", FORCES))
FORWARD = KernelArgs(2, ("q", CONFIGURATION), ("v", TANGENT), ("tau", TANGENT), ("f_ext", FORCES))


_IMPLICIT: dict[int, tuple[object, bool]] = {}  # id(model._key) → (the key, has an implicit cluster)
_CACHE_SIZE = 64  # models remembered by the caches of this module (then they start again)


def _has_implicit(model, data) -> bool:
    """Whether ``model`` has an implicit cluster (G(q), g(q, q̇): the dense path); cached per model
    version (a dictionary look-up instead of a NumPy reduction on every call)."""
    key = model._key
    hit = _IMPLICIT.get(id(key))
    if hit is None or hit[0] is not key:
        hit = (key, bool((data.ic[1:, L.C_KIND] == L.IMPLICIT).any()))
        if len(_IMPLICIT) >= _CACHE_SIZE:
            _IMPLICIT.clear()
        _IMPLICIT[id(key)] = hit
    return hit[1]


def rnea_derivatives(model, data, q, v, a, f_ext=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Partial derivatives of inverse dynamics ``τ = rnea(q, v, a, f_ext)``.

    Parameters
    ----------
    model, data:
        A :class:`~loopdyn.Model` (a tree, or with explicit clusters only) and a
        :class:`~loopdyn.Data` created by it.
    q, v, a:
        Configuration (nq), velocity (nv), acceleration (nv); on a model with clusters, independent
        coordinates (as :func:`loopdyn.rnea`), and every derivative is with respect to them.
    f_ext:
        Optional external forces (njoints, 6), rows ``[force; torque]`` in body frames (row 0
        ignored), as :func:`loopdyn.rnea`; held fixed in the body frames when q moves.

    Returns
    -------
    (dtau_dq, dtau_dv, dtau_da):
        Three new (nv, nv) arrays: ``∂τ/∂q`` in the tangent space (column j: the derivative along
        ``integrate(model, q, δ e_j)``), ``∂τ/∂v``, and ``∂τ/∂a = M(q)`` (full and symmetric,
        armature included) — Pinocchio's ``computeRNEADerivatives`` (whose M has the upper triangle
        only).

    Raises
    ------
    loopdyn.errors.ShapeError, NonFiniteError, ...:
        For bad ``q``, ``v``, ``a``, ``f_ext`` (the argument is named), as :func:`loopdyn.rnea`.
    loopdyn.errors.ConfigurationError:
        On a model with loops, for positions off the loop (as :func:`loopdyn.rnea`).
    """
    if data.source_key is not model._key:
        check_data(model, data)
    nv = data.nv
    out = np.empty((3, nv, nv))  # one allocation; the three results are its (contiguous) planes
    dq, dv, M = out[0], out[1], out[2]
    fext = data.no_forces if f_ext is None else f_ext
    if model.has_constraints:
        if _has_implicit(model, data):
            return _loop_rnea_derivatives(model, data, q, v, a, f_ext)
        kern = kernels.c_rnea_derivatives_kernel
    else:
        kern = kernels.rnea_derivatives_kernel
    m1, m2 = data.kernel_arrays
    # run()'s three steps written out, as in loopdyn.dynamics (a Python frame less per call)
    try:
        st = kern(m1, m2, q, v, a, fext, dq, dv, M)
    except TypeError:
        st = kern(m1, m2, *STATE.coerce_user(model, (q, v, a, fext)), dq, dv, M)
    if st:
        raise_for_status(model, st, STATE.names)
    return dq, dv, M


def aba_derivatives(model, data, q, v, tau, f_ext=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Partial derivatives of forward dynamics ``q̈ = aba(q, v, tau, f_ext)``.

    ``q̈`` is computed by the ABA; then ``∂q̈/∂x = −M⁻¹ ∂τ/∂x`` at ``a = q̈`` (x = q, v) and
    ``∂q̈/∂τ = M⁻¹`` — M⁻¹ applied by the sparse LᵀL factorisation of M (RBDA Table 6.3) inside the
    same kernel call (on a model with explicit clusters: C-ABA for ÿ, and a dense Cholesky factor of
    H = Gᵀ M_s G; with implicit loops, see the module docstring). Arguments as
    :func:`rnea_derivatives` with ``tau`` (nv) in place of ``a``.

    Returns
    -------
    (dddq_dq, dddq_dv, dddq_dtau):
        Three new (nv, nv) arrays; ``dddq_dtau = M(q)⁻¹`` is full and symmetric (Pinocchio's
        ``computeABADerivatives`` fills its upper triangle only).

    Raises
    ------
    As :func:`rnea_derivatives`, and :class:`~loopdyn.errors.SingularMassMatrixError` (as
    :func:`loopdyn.aba`) when a joint's articulated inertia is singular.
    """
    if data.source_key is not model._key:
        check_data(model, data)
    nv = data.nv
    ddq = np.empty(nv)
    out = np.empty((4, nv, nv))  # the three results, then the scratch for the factor of M
    dq, dv, minv, scratch = out[0], out[1], out[2], out[3]
    fext = data.no_forces if f_ext is None else f_ext
    if model.has_constraints:
        if _has_implicit(model, data):
            return _loop_aba_derivatives(model, data, q, v, tau, f_ext)
        kern = kernels.c_aba_derivatives_kernel
    else:
        kern = kernels.aba_derivatives_kernel
    m1, m2 = data.kernel_arrays
    try:
        st = kern(m1, m2, q, v, tau, fext, ddq, dq, dv, minv, scratch)
    except TypeError:
        st = kern(m1, m2, *FORWARD.coerce_user(model, (q, v, tau, fext)), ddq, dq, dv, minv, scratch)
    if st:
        raise_for_status(model, st, FORWARD.names)
    return dq, dv, minv


# ------------------------------------------------------------------------------------------------
# models with implicit loops: spec §2 with dense G, ∂G, ∂g (a first, exact, non-recursive version)
#
# τ_y = Gᵀ τ_s(q_s, G ẏ, G ÿ + g) with G = P[1; −K_d⁻¹K_i], g = P[0; K_d⁻¹ k], K = ∂φ/∂q,
# k = −K̇q̇ = −∂²φ(q̇, q̇). A tangent step δ_j of an independent coordinate of cluster c moves the
# spanning coordinates by G e_j (integrate re-closes the loop), which changes only cluster c's block
# of G and g (G is block-diagonal by cluster). Differentiating K G = 0 (G's independent rows fixed)
# and K_d g_d = k along u = G e_j, with the spanning velocity q̇ = G ẏ moving by w = (∂G/∂δ_j) ẏ:
#     ∂G_d = −K_d⁻¹ (∂K[u] G),   ∂K[u] = ∂²φ(u, ·),
#     ∂g_d = K_d⁻¹ (∂k − ∂K[u] g),   ∂k = −∂³φ(q̇, q̇, u) − 2 ∂²φ(q̇, w),
# and along ẏ_j (u = 0, w = G e_j): ∂g_d = K_d⁻¹ (−2 ∂²φ(q̇, G e_j)). Then (spec §2)
#     ∂τ_y/∂δ_j = ∂G_jᵀ τ_s + Gᵀ [X_q G e_j + X_v ∂G_j ẏ + M_s (∂G_j ÿ + ∂g_j)],
#     ∂τ_y/∂ẏ = Gᵀ (X_v G + M_s ∂g/∂ẏ),   ∂τ_y/∂ÿ = Gᵀ M_s G = H,
# with X_q, X_v, M_s the spanning tree's derivatives from the recursive tree kernel (run on the
# model's own spanning arrays). The second and third derivatives of φ come from the cluster's sympy
# rows (differentiated once per model and lambdified; for a long loop written through definitions,
# constraints.formulas, third-order jets evaluated definition by definition, whose size is linear in
# the loop's length), independently of the compiled programs that give the kernels K and k. What is
# not recursive here: the dense products with G (O(nv_s² nv)), the
# per-cluster terms in Python, and, for the ABA, the Cholesky solve with H.

FK_ARGS = KernelArgs(2, ("q", CONFIGURATION), ("v", TANGENT), ("a", TANGENT))


class _ClusterTerms:
    """The second and third derivatives of one implicit cluster's kept constraint rows φ(q), as
    lambdified sympy expressions with their (symmetric) places in dense tensors."""

    def __init__(self, c):
        import sympy

        x = list(c.symbols)
        n, rows = len(x), list(c.phi_exprs)
        self.n, self.nrow = n, len(rows)
        self.dep = np.array(c.dependent, dtype=np.int64)
        self.jets = None
        if c.definitions:  # a long loop: third-order jets through its definitions (linear in its length)
            self.jets = jet_function(Formulas(tuple(c.definitions), tuple(rows), tuple(x)))
            return
        exprs, idx1, idx2, idx3 = [], [], [], []
        for r, f in enumerate(rows):
            free = [j for j in range(n) if x[j] in f.free_symbols]
            for ia, a in enumerate(free):
                d1 = sympy.diff(f, x[a])
                if d1 != 0:
                    idx1.append((len(exprs), r, a))
                    exprs.append(d1)
                for ib_, b in enumerate(free[ia:], ia):
                    d2 = sympy.diff(d1, x[b])
                    if d2 == 0:
                        continue
                    for perm in {(a, b), (b, a)}:
                        idx2.append((len(exprs), r, *perm))
                    exprs.append(d2)
                    for cc in free[ib_:]:
                        d3 = sympy.diff(d2, x[cc])
                        if d3 == 0:
                            continue
                        for perm in {(a, b, cc), (a, cc, b), (b, a, cc), (b, cc, a), (cc, a, b), (cc, b, a)}:
                            idx3.append((len(exprs), r, *perm))
                        exprs.append(d3)
        self.f = sympy.lambdify(x, exprs, "numpy")
        self.i1 = np.array(idx1, dtype=np.int64).reshape(-1, 3)
        self.i2 = np.array(idx2, dtype=np.int64).reshape(-1, 4)
        self.i3 = np.array(idx3, dtype=np.int64).reshape(-1, 5)

    def tensors(self, q):
        """``(K, T2, T3)`` at the cluster's spanning coordinates ``q``: ∂φ/∂q, ∂²φ/∂q², ∂³φ/∂q³."""
        if self.jets is not None:
            rows = self.jets(np.asarray(q, dtype=float))
            return (np.array([r.g for r in rows]).reshape(self.nrow, self.n),
                    np.array([r.H for r in rows]).reshape(self.nrow, self.n, self.n),
                    np.array([r.T for r in rows]).reshape(self.nrow, self.n, self.n, self.n))  # fmt: skip
        vals = np.array([float(e) for e in self.f(*q)]) if len(self.i1) else np.zeros(0)
        n, nrow = self.n, self.nrow
        K, T2, T3 = np.zeros((nrow, n)), np.zeros((nrow, n, n)), np.zeros((nrow, n, n, n))
        K[self.i1[:, 1], self.i1[:, 2]] = vals[self.i1[:, 0]]
        T2[self.i2[:, 1], self.i2[:, 2], self.i2[:, 3]] = vals[self.i2[:, 0]]
        T3[self.i3[:, 1], self.i3[:, 2], self.i3[:, 3], self.i3[:, 4]] = vals[self.i3[:, 0]]
        return K, T2, T3


class _LoopTerms:
    """What a model with implicit loops needs per call, built once: the sparse structure of G (spanning
    row, independent column, wc offset of each entry) and, per implicit cluster, its spanning velocity
    indices, its independent columns and its :class:`_ClusterTerms`."""

    def __init__(self, model, data):
        ic, cb = data.ic, data.cb
        GC = int(ic[0, L.C0_GCOLS])
        rows, cols, offs = [], [], []
        for x in range(model.nv):
            for e in range(GC + int(cb[GC + x]), GC + int(cb[GC + x + 1]), 2):
                rows.append(int(cb[e]))
                cols.append(x)
                offs.append(int(cb[e + 1]))
        self.g_rows, self.g_cols, self.g_offs = (np.array(z, dtype=np.int64) for z in (rows, cols, offs))
        self.clusters = []
        for c in model.clusters().clusters:
            if c.kind != L.IMPLICIT:
                continue
            span_v = np.array([data.ib[b, L.I_IV] for b in c.bodies], dtype=np.int64)
            span_q = np.array([data.ib[b, L.I_IQ] for b in c.bodies], dtype=np.int64)
            self.clusters.append((span_q, span_v, c.iv, c.m, _ClusterTerms(c)))


_LOOP_TERMS: dict[int, tuple[object, _LoopTerms]] = {}


def _loop_terms(model, data) -> _LoopTerms:
    key = model._key
    hit = _LOOP_TERMS.get(id(key))
    if hit is None or hit[0] is not key:
        hit = (key, _LoopTerms(model, data))
        if len(_LOOP_TERMS) >= _CACHE_SIZE:
            _LOOP_TERMS.clear()
        _LOOP_TERMS[id(key)] = hit
    return hit[1]


def loop_tangent_maps(model, data, q, v, a):
    """The spanning state of a model with loops and how it moves with the independent coordinates,
    as dense matrices (see above): ``(qs, vs, as_, G, W, Zq, Zv, dG)`` with the spanning
    ``q_s``, ``q̇_s = G ẏ``, ``q̈_s = G ÿ + g`` at (q, v, a); G (nv_s × nv); per tangent step δ_j the
    change of q̇_s, ``W[:, j] = (∂G/∂δ_j) ẏ``, and of q̈_s, ``Zq[:, j] = (∂G/∂δ_j) ÿ + ∂g/∂δ_j``; per
    ẏ_j the change of q̈_s, ``Zv[:, j] = ∂g/∂ẏ_j`` (q_s moves by ``G e_j``, q̇_s by ``G e_j``); and
    ``dG[j] = ∂G/∂δ_j`` (nv × nv_s × nv). W, Zq, Zv and dG are zero unless a cluster is implicit."""
    from .algorithms import cluster_kinematics

    terms = _loop_terms(model, data)
    ints, floats = data.cluster_arrays
    run(cluster_kinematics.c_fk_kernel, model, FK_ARGS, (ints, floats, q, v, a))
    ic, wc = data.ic, data.wc
    nqs, nvs, nv = model.spanning_nq, model.spanning_nv, model.nv
    qs = wc[ic[0, L.C0_QS] : ic[0, L.C0_QS] + nqs].copy()
    vs = wc[ic[0, L.C0_QDS] : ic[0, L.C0_QDS] + nvs].copy()
    as_ = wc[ic[0, L.C0_QDDS] : ic[0, L.C0_QDDS] + nvs].copy()
    G = np.zeros((nvs, nv))
    G[terms.g_rows, terms.g_cols] = wc[terms.g_offs]
    v = np.asarray(v, dtype=float)
    a = np.asarray(a, dtype=float)
    W, Zq, Zv = np.zeros((nvs, nv)), np.zeros((nvs, nv)), np.zeros((nvs, nv))
    dG = np.zeros((nv, nvs, nv))
    for span_q, span_v, iv, m, ct in terms.clusters:
        K, T2, T3 = ct.tensors(qs[span_q])
        dep = ct.dep
        Kd_inv = np.linalg.inv(K[:, dep])  # K_d is small (the cluster's constraint rows)
        Gl = G[span_v, iv : iv + m]
        qd = vs[span_v]
        gl = as_[span_v] - Gl @ a[iv : iv + m]  # g = q̈_s − G ÿ (zero on the independent rows)
        T2qd = np.einsum("rab,a->rb", T2, qd)  # ∂²φ(q̇, ·)
        T3qq = np.einsum("rabc,a,b->rc", T3, qd, qd)  # ∂³φ(q̇, q̇, ·)
        dep_v = span_v[dep]
        for l in range(m):  # only this cluster's block of G and g moves with its own δ_l, ẏ_l
            u = Gl[:, l]
            dK = np.einsum("rab,b->ra", T2, u)
            dGl = np.zeros_like(Gl)
            dGl[dep] = -Kd_inv @ (dK @ Gl)
            w = dGl @ v[iv : iv + m]
            dg = np.zeros(ct.n)
            dg[dep] = Kd_inv @ (-T3qq @ u - 2.0 * T2qd @ w - dK @ gl)
            j = iv + l
            dG[j][np.ix_(span_v, np.arange(iv, iv + m))] = dGl
            W[span_v, j] = w
            Zq[span_v, j] = dGl @ a[iv : iv + m] + dg
            Zv[dep_v, j] = Kd_inv @ (-2.0 * T2qd @ u)  # ∂g/∂ẏ_j: u = 0, w = G e_j
    return qs, vs, as_, G, W, Zq, Zv, dG


def _loop_rnea_derivatives(model, data, q, v, a, f_ext):
    """∂τ_y/∂δ, ∂τ_y/∂ẏ, H of a model with implicit loops (see above)."""
    from .algorithms import rnea as tree_rnea

    qs, vs, as_, G, W, Zq, Zv, dG = loop_tangent_maps(model, data, q, v, a)
    nvs = model.spanning_nv
    fext = data.no_forces if f_ext is None else f_ext
    Xq, Xv, Ms = np.empty((nvs, nvs)), np.empty((nvs, nvs)), np.empty((nvs, nvs))
    run(kernels.rnea_derivatives_kernel, model, STATE, (data.ib, data.ws, qs, vs, as_, fext, Xq, Xv, Ms))
    taus = np.empty(nvs)
    run(tree_rnea.rnea_fext_kernel, model, STATE, (data.ib, data.ws, qs, vs, as_, fext, taus))
    dq = G.T @ (Xq @ G + Xv @ W + Ms @ Zq) + np.einsum("jsc,s->cj", dG, taus)
    dv = G.T @ (Xv @ G + Ms @ Zv)
    H = G.T @ Ms @ G
    return dq, dv, H


def _loop_aba_derivatives(model, data, q, v, tau, f_ext):
    from scipy.linalg import cho_factor, cho_solve

    from .dynamics import aba

    ddy = aba(model, data, q, v, tau, f_ext)
    dq, dv, H = _loop_rnea_derivatives(model, data, q, v, ddy, f_ext)
    factor = cho_factor(H)
    return -cho_solve(factor, dq), -cho_solve(factor, dv), cho_solve(factor, np.eye(model.nv))
