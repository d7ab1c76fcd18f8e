"""The public functions of :mod:`loopdyn.higher_order`: validation, the choice of the tree or cluster
path, one kernel call (kernels in :mod:`.dynamics` and :mod:`.clusters`)."""

from __future__ import annotations

import weakref

import numpy as np

from ..algorithms.validation import check_data, require_tree
from . import cluster_aba, loops
from . import clusters as cl
from . import dynamics as kernels
from . import validation as hv
from .arrays import model_arrays

_NO_FORCES = np.zeros((0, 0, 6))


_FAST: dict = {}  # id(model) → (weakref, model.compiled(), key, hb, hf, nv): checks passed for the model
# state ``key`` (the model's identity token, and the ``source_key`` of its Data)


_LAST = (object(), None, None, 0)  # (key, hb, hf, nv) of the tree model state used last: a model's
# identity token ``_key`` is a new object after any change and is kept alive here, so ``key is
# model._key`` identifies the model and its state, and ``key is data.source_key`` the Data, with no
# dictionary look-up (the common case: one model called repeatedly)

_FAST_CL: dict = {}  # the same for cluster models: id(model) → (…, (with_loops, tables)), the tables
# (hb, hf, mi, mf, ct, bt), or with loops (hb, hf, mi, mf, li, code, consts, table, outputs, tol)
# (:func:`.loops.loop_tables`)


def prepare_tree(model, data):
    """``(hb, hf)`` of a tree model after checking ``data`` against it; a repeated call with the same
    model state and a Data of that state skips the checks (the model's identity token ``_key`` is a new
    object after any change of the model, and a Data's ``source_key`` is the token of the model state
    it came from)."""
    global _LAST
    e = _FAST.get(id(model))
    if e is not None and e[2] is getattr(data, "source_key", None) and e[2] is model._key:
        _LAST = (e[2], e[3], e[4], e[5])
        return e[3], e[4]
    require_tree(model, "this higher-order function")
    check_data(model, data)
    hb, hf = model_arrays(model, data)
    key = id(model)
    _FAST[key] = (
        weakref.ref(model, lambda _, key=key: _FAST.pop(key, None)),
        model.compiled(),
        data.source_key,
        hb,
        hf,
        int(hb[0, 2]),
    )
    _LAST = (data.source_key, hb, hf, int(hb[0, 2]))
    return hb, hf


def _cluster_call(model, data, which, args, f_ext):
    """rnea / aba of a model with clusters: explicit constant-G clusters by
    :mod:`loopdyn.higher_order.clusters` and :mod:`loopdyn.higher_order.cluster_aba`, models with loops
    (implicit clusters) by :mod:`loopdyn.higher_order.loops`. One kernel call, the arguments coerced only
    if the compiled kernel refuses them."""
    e = _FAST_CL.get(id(model))
    if e is not None and e[1] is model.compiled() and e[2] is getattr(data, "source_key", None):
        with_loops, tables = e[3]
    else:
        check_data(model, data)
        hb, hf = model_arrays(model, data)
        with_loops = loops.has_loops(model)
        if with_loops:
            tables = (hb, hf, *loops.loop_tables(model, data))
        else:
            tables = (hb, hf, *cl.cluster_maps(model, data), *cluster_aba.cluster_tables(model, data))
        key = id(model)
        _FAST_CL[key] = (
            weakref.ref(model, lambda _, key=key: _FAST_CL.pop(key, None)),
            model.compiled(),
            data.source_key,
            (with_loops, tables),
        )
    nv = model.nv
    fext = _NO_FORCES if f_ext is None else f_ext
    if which == "rnea":
        rnea_kernel = loops.loop_rnea_kernel if with_loops else cl.cluster_rnea_kernel
        tables = tables if with_loops else tables[:4]  # (the explicit kernel needs no cluster tables)
        q, dv = args
        try:
            out = np.empty((max(dv.shape[0] - 1, 1), nv))
            st = rnea_kernel(*tables, q, dv, fext, out)
        except (TypeError, AttributeError, IndexError):
            q, dv = hv.as_array(q, "q", 1), hv.as_array(dv, "dv", 2)
            fext = _NO_FORCES if f_ext is None else hv.as_array(f_ext, "f_ext", 3)
            out = np.empty((max(dv.shape[0] - 1, 1), nv))
            st = rnea_kernel(*tables, q, dv, fext, out)
    else:
        aba_kernel = loops.loop_aba_kernel if with_loops else cluster_aba.cluster_aba_kernel
        q, v, dtau = args
        try:
            out = np.empty((dtau.shape[0], nv))
            st = aba_kernel(*tables, q, v, dtau, fext, out)
        except (TypeError, AttributeError, IndexError):
            q, v, dtau = (
                hv.as_array(x, n, d) for x, n, d in zip(args, ("q", "v", "dtau"), (1, 1, 2), strict=True)
            )
            fext = _NO_FORCES if f_ext is None else hv.as_array(f_ext, "f_ext", 3)
            out = np.empty((dtau.shape[0], nv))
            st = aba_kernel(*tables, q, v, dtau, fext, out)
    if st:
        _cluster_status(model, which, st)
    return out


def _cluster_status(model, which, st) -> None:
    """The exception for a non-zero status of a cluster kernel."""
    nv, nj = model.nv, model.njoints
    if which == "rnea":
        names = ("q", "dv", "f_ext")
        shapes = (f"({model.nq},)", f"(r + 2, {nv}) with r >= 0", f"(r + 1, {nj}, 6)")
    else:
        names = ("q", "v", "dtau", "f_ext")
        shapes = (f"({model.nq},)", f"({nv},)", f"(r + 1, {nv}) with r >= 0", f"(r + 1, {nj}, 6)")
    if divmod(int(st), hv.STATUS_BASE)[0] == hv.SINGULAR:
        raise hv.InputError(f"the mass matrix of model {model.name!r} is not positive definite")
    hv.raise_for_status(model, st, names, shapes)


def rnea(model, data, q, dv, f_ext=None) -> np.ndarray:
    """Time derivatives τ^(0…r) of inverse dynamics along a trajectory (H-GRNE, paper Alg. 2).

    Parameters
    ----------
    model, data:
        A :class:`~loopdyn.Model` and a Data created by it: a tree, or a model with clusters — explicit
        constant-G ones (geared rotors, belts) or closed loops (:mod:`loopdyn.higher_order.loops`;
        an implicit cluster's positions must satisfy its constraints, ``ConfigurationError`` otherwise).
    q:
        Configuration (nq) at the instant, Pinocchio's layout.
    dv:
        Array ``(r + 2, nv)``: row k is the k-th time derivative of the velocity vector ``v``
        (row 0 = v, row 1 = a, row 2 = jerk, …).
    f_ext:
        Optional ``(r + 1, njoints, 6)``: row k holds the k-th time derivatives of the external forces
        ``[force; torque]`` on each body, in the body's frame (as :func:`loopdyn.rnea`; index 0 =
        universe, ignored).

    Returns
    -------
    numpy.ndarray
        ``(r + 1, nv)``: row k is ``τ^(k)``; row 0 equals ``loopdyn.rnea(model, data, q, dv[0], dv[1],
        f_ext[0])``.
    """
    key, hb, hf, nv = _LAST
    if key is not model._key or key is not getattr(data, "source_key", None):
        if model.has_constraints:
            return _cluster_call(model, data, "rnea", (q, dv), f_ext)
        hb, hf = prepare_tree(model, data)
        nv = model.nv
    try:  # (one row of dv: an empty out, refused by the kernel; no row: ValueError, the slow path)
        out = np.empty((dv.shape[0] - 1, nv))
        if f_ext is None:
            st = kernels.rnea_nf_kernel(hb, hf, q, dv, out)
        else:
            st = kernels.rnea_kernel(hb, hf, q, dv, f_ext, out)
    except (TypeError, AttributeError, IndexError, ValueError):
        q = hv.as_array(q, "q", 1)
        dv = hv.as_array(dv, "dv", 2)
        fext = _NO_FORCES if f_ext is None else hv.as_array(f_ext, "f_ext", 3)
        out = np.empty((max(dv.shape[0] - 1, 1), hb[0, 2]))
        st = kernels.rnea_kernel(hb, hf, q, dv, fext, out)
    if st:
        nv, nj = hb[0, 2], hb[0, 0] + 1
        hv.raise_for_status(
            model,
            st,
            ("q", "dv", "f_ext"),
            (f"({model.nq},)", f"(r + 2, {nv}) with r >= 0", f"(r + 1, {nj}, 6)"),
        )
    return out


def aba(model, data, q, v, dtau, f_ext=None) -> np.ndarray:
    """Time derivatives v^(1…r+1) of forward dynamics (H-GABI, paper Alg. 3 with Lemma 2).

    Parameters
    ----------
    model, data:
        A :class:`~loopdyn.Model` and a Data created by it: a tree, or a model with clusters — explicit
        constant-G ones (geared rotors, belts) or closed loops (:mod:`loopdyn.higher_order.loops`;
        an implicit cluster's positions must satisfy its constraints, ``ConfigurationError`` otherwise).
    q, v:
        Configuration (nq) and velocity (nv) at the instant.
    dtau:
        ``(r + 1, nv)``: row k is τ^(k), the k-th time derivative of the joint forces.
    f_ext:
        Optional ``(r + 1, njoints, 6)`` external-force derivatives, as in :func:`rnea`.

    Returns
    -------
    numpy.ndarray
        ``(r + 1, nv)``: row k is v^(k+1) (row 0 = acceleration = ``loopdyn.aba``), so that
        ``aba(model, data, q, dv[0], rnea(model, data, q, dv)) == dv[1:]``.
    """
    key, hb, hf, nv = _LAST
    if key is not model._key or key is not getattr(data, "source_key", None):
        if model.has_constraints:
            return _cluster_call(model, data, "aba", (q, v, dtau), f_ext)
        hb, hf = prepare_tree(model, data)
        nv = model.nv
    try:
        out = np.empty((dtau.shape[0], nv))
        if f_ext is None:
            st = kernels.aba_nf_kernel(hb, hf, q, v, dtau, out)
        else:
            st = kernels.aba_kernel(hb, hf, q, v, dtau, f_ext, out)
    except (TypeError, AttributeError, IndexError):
        q = hv.as_array(q, "q", 1)
        v = hv.as_array(v, "v", 1)
        dtau = hv.as_array(dtau, "dtau", 2)
        fext = _NO_FORCES if f_ext is None else hv.as_array(f_ext, "f_ext", 3)
        out = np.empty((dtau.shape[0], hb[0, 2]))
        st = kernels.aba_kernel(hb, hf, q, v, dtau, fext, out)
    if st:
        nv, nj = hb[0, 2], hb[0, 0] + 1
        hv.raise_for_status(
            model,
            st,
            ("q", "v", "dtau", "f_ext"),
            (f"({model.nq},)", f"({nv},)", f"(r + 1, {nv}) with r >= 0", f"(r + 1, {nj}, 6)"),
        )
    return out


def _joint_mask(model, prescribed) -> np.ndarray:
    from ..errors import InputError

    mask = np.zeros(model.nbodies + 1, dtype=np.int64)
    names = model.joint_names
    for j in prescribed:
        if isinstance(j, str):
            if j not in names[1:]:
                raise InputError(f"prescribed: no joint called {j!r} in model {model.name!r}")
            mask[names.index(j)] = 1
        elif isinstance(j, int | np.integer) and 1 <= int(j) <= model.nbodies:
            mask[int(j)] = 1
        else:
            raise InputError(
                f"prescribed: {j!r} is neither a joint name nor a joint index in 1…{model.nbodies}"
            )
    return mask


def hybrid(model, data, q, dv, dtau, prescribed, f_ext=None) -> tuple[np.ndarray, np.ndarray]:
    """Time derivatives of hybrid dynamics (paper Alg. 4, H-GHYB): some joints have a prescribed
    motion, the others prescribed forces; returns the unknown halves.

    Parameters
    ----------
    q:
        Configuration (nq).
    dv:
        ``(r + 2, nv)``: row 0 is the velocity ``v`` (all joints); rows 1… are v^(1…r+1), used on the
        joints of ``prescribed`` only (other entries ignored; must be finite).
    dtau:
        ``(r + 1, nv)``: τ^(0…r), used on the joints not in ``prescribed``.
    prescribed:
        Joint names or indices whose motion is given. A floating base is its free-flyer joint: in
        ``prescribed`` its twist derivatives are given (the paper's "base twist" case) and the wrench
        derivatives are returned; otherwise its wrench derivatives are given (``dtau`` rows, the
        child-frame wrench ``[force; torque]``) and its twist derivatives returned.
    f_ext:
        Optional ``(r + 1, njoints, 6)`` external-force derivatives (body frames), as :func:`rnea`.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        ``v^(1…r+1)`` and ``τ^(0…r)``, both ``(r + 1, nv)``, for all joints (prescribed entries are
        the inputs). ``prescribed=()`` is :func:`aba`; all joints prescribed is :func:`rnea`.
    """
    hb, hf = prepare_tree(model, data)
    mask = _joint_mask(model, prescribed)
    q = hv.as_array(q, "q", 1)
    dv = hv.as_array(dv, "dv", 2)
    dtau = hv.as_array(dtau, "dtau", 2)
    fext = _NO_FORCES if f_ext is None else hv.as_array(f_ext, "f_ext", 3)
    rows = max(dv.shape[0] - 1, 1)
    out = np.empty((rows, hb[0, 2]))
    tau = np.empty((rows, hb[0, 2]))
    st = kernels.hybrid_kernel(hb, hf, q, mask, dv, dtau, fext, out, tau)
    if st:
        nv, nj = hb[0, 2], hb[0, 0] + 1
        hv.raise_for_status(
            model,
            st,
            ("q", "dv", "dtau", "f_ext"),
            (f"({model.nq},)", f"(r + 2, {nv}) with r >= 0", f"(r + 1, {nv})", f"(r + 1, {nj}, 6)"),
        )
    return out, tau
