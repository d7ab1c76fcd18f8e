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
  ``(G y, G ẏ, G ÿ)``, each entry projected on y as the spanning pass makes it, a cluster's bodies
  grouped (one walk to the root per independent coordinate, O(n·d)); the ABA derivatives solve with
  a dense Cholesky factor of H (O(nv³), not recursive);
* a model with an implicit loop (four-bar, five-bar, Tello's differentials: G(q), g(q, q̇)): the same
  kernel call, exact, with the configuration dependence of G and g differentiated (spec §2): the
  terms of ∂G and ∂g (:mod:`loopdyn.algorithms.loop_derivatives`, (L1)–(L6)) from the loop's own
  constraint program run in Taylor arithmetic, added to the projected terms — O(nv · n) per
  independent coordinate of a loop (n its spanning coordinates), no symbolic differentiation.
"""

from __future__ import annotations

import numpy as np

from .algorithms import derivatives as kernels
from .algorithms import loop_derivatives
from .algorithms.call import CONFIGURATION, FORCES, TANGENT, KernelArgs, missing_code_loaded, run
from .algorithms.status import raise_for_status
from .algorithms.validation import check_data
from .model import layout as L
from .model.data import load_deferred_passes

STATE = KernelArgs(2, ("q", CONFIGURATION), ("v", TANGENT), ("a", TANGENT), ("f_ext", FORCES))
FORWARD = KernelArgs(2, ("q", CONFIGURATION), ("v", TANGENT), ("tau", TANGENT), ("f_ext", FORCES))


_CACHE_SIZE = 64  # models remembered by the cache of this module (then it starts again)


def rnea_derivatives(model, data, q, v, a, f_ext=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Partial derivatives of inverse dynamics ``τ = rnea(q, v, a, f_ext)``.

    Parameters
    ----------
    model, data:
        A :class:`~loopdyn.Model` (a tree, or with clusters, implicit loops included) and a
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
        kern = kernels.c_rnea_derivatives_kernel
        if data.taylor_pending:  # the implicit loops' native Taylor functions, once (their pass,
            data.load_taylor_programs()  # at its first call: missing_code_loaded below)
    else:
        kern = kernels.rnea_derivatives_kernel
    m1, m2 = data.kernel_arrays
    # run()'s three steps written out, as in loopdyn.dynamics (a Python frame less per call)
    try:
        st = kern(m1, m2, q, v, a, fext, dq, dv, M)
    except TypeError:
        st = kern(m1, m2, *STATE.coerce_user(model, (q, v, a, fext)), dq, dv, M)
    if st:
        if missing_code_loaded(data, st):  # the implicit loops' terms, compiled at the first call
            return rnea_derivatives(model, data, q, v, a, f_ext)
        raise_for_status(model, st, STATE.names)
    return dq, dv, M


def aba_derivatives(model, data, q, v, tau, f_ext=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Partial derivatives of forward dynamics ``q̈ = aba(q, v, tau, f_ext)``.

    ``q̈`` is computed by the ABA; then ``∂q̈/∂x = −M⁻¹ ∂τ/∂x`` at ``a = q̈`` (x = q, v) and
    ``∂q̈/∂τ = M⁻¹`` — M⁻¹ applied by the sparse LᵀL factorisation of M (RBDA Table 6.3) inside the
    same kernel call (on a model with clusters: C-ABA for ÿ, and a dense Cholesky factor of
    H = Gᵀ M_s G; see the module docstring). Arguments as
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
        kern = kernels.c_aba_derivatives_kernel
        if data.taylor_pending:
            data.load_taylor_programs()
    else:
        kern = kernels.aba_derivatives_kernel
    m1, m2 = data.kernel_arrays
    try:
        st = kern(m1, m2, q, v, tau, fext, ddq, dq, dv, minv, scratch)
    except TypeError:
        st = kern(m1, m2, *FORWARD.coerce_user(model, (q, v, tau, fext)), ddq, dq, dv, minv, scratch)
    if st:
        if missing_code_loaded(data, st):  # the implicit loops' terms, compiled at the first call
            return aba_derivatives(model, data, q, v, tau, f_ext)
        raise_for_status(model, st, FORWARD.names)
    return dq, dv, minv


# ------------------------------------------------------------------------------------------------
# the tangent maps of a model with implicit loops, as dense matrices, for the dense contact derivatives
# on models with clusters (loopdyn.contact_derivatives); the kernels above compute the same terms
# (algorithms.loop_derivatives, (L1)–(L6)) and use them without forming these matrices.

FK_ARGS = KernelArgs(2, ("q", CONFIGURATION), ("v", TANGENT), ("a", TANGENT))
LOOP_ARGS = KernelArgs(2, ("v", TANGENT), ("a", TANGENT))


class _LoopTerms:
    """What a model with implicit loops needs per call, built once: the sparse structure of G (spanning
    row, independent column, wc offset of each entry) and, per implicit cluster, its spanning velocity
    indices, its first independent velocity and its number of independent coordinates."""

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
            if c.kind == L.IMPLICIT:
                span_v = np.array([data.ib[b, L.I_IV] for b in c.bodies], dtype=np.int64)
                self.clusters.append((span_v, c.iv, c.m))
        self.size = int(loop_derivatives.terms_size(ic))


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
    as dense matrices: ``(qs, vs, as_, G, W, Zq, Zv, dG)`` with the spanning ``q_s``, ``q̇_s = G ẏ``,
    ``q̈_s = G ÿ + g`` at (q, v, a); G (nv_s × nv); per tangent step δ_j the change of q̇_s,
    ``W[:, j] = (∂G/∂δ_j) ẏ``, and of q̈_s, ``Zq[:, j] = (∂G/∂δ_j) ÿ + ∂g/∂δ_j``; per ẏ_j the change
    of q̈_s, ``Zv[:, j] = ∂g/∂ẏ_j`` (q_s moves by ``G e_j``, q̇_s by ``G e_j``); and ``dG[j] = ∂G/∂δ_j``
    (nv × nv_s × nv). W, Zq, Zv and dG are zero unless a cluster is implicit
    (:mod:`loopdyn.algorithms.loop_derivatives`, (L2)–(L4), computes them)."""
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
    W, Zq, Zv = np.zeros((nvs, nv)), np.zeros((nvs, nv)), np.zeros((nvs, nv))
    dG = np.zeros((nv, nvs, nv))
    if not terms.clusters:
        return qs, vs, as_, G, W, Zq, Zv, dG
    out = np.empty(terms.size)
    load_deferred_passes(data, "loop_derivatives")
    run(loop_derivatives.loop_terms_kernel, model, LOOP_ARGS, (ints, floats, v, a, out))
    at = 0
    for span_v, iv, m in terms.clusters:  # the layout of loop_derivatives' terms
        n = len(span_v)
        cols = np.arange(iv, iv + m)
        for l in range(m):
            j = iv + l
            dG[j][np.ix_(span_v, cols)] = out[at : at + n * m].reshape(n, m)
            at += n * m
            W[span_v, j], Zq[span_v, j], Zv[span_v, j] = out[at : at + 3 * n].reshape(3, n)
            at += 3 * n
    return qs, vs, as_, G, W, Zq, Zv, dG


