"""Constrained forward dynamics of a kinematic tree with link constraints (contacts with the world,
welds, custom rows), solved in constraint space with the Delassus matrix.

With the constraint rows ``J`` (stacked ``K_e`` × LOCAL frame Jacobians, see
:class:`~loopdyn.Constraint`), the equations are (Pinocchio's sign: ``λ`` is the
force the constraints apply to the system)::

    M ddq + c = τ + Jᵀ λ,        J ddq + γ = k   (k: the desired constraint accelerations)

and, with the free accelerations ``a0 = M⁻¹ (τ − c)`` (one ABA), ``ddq = a0 + M⁻¹ Jᵀ λ`` where

    (Λ⁻¹ + μ I) λ = k − (J a0 + γ),      Λ⁻¹ = J M⁻¹ Jᵀ.

``J a0 + γ`` is the constraint acceleration the robot would have without the constraints; it is read
from the frame accelerations of a forward-kinematics pass with ``(q, v, a0)``, as Pinocchio's
``constraintDynamics`` does for contacts with the world in the LOCAL frame:

* ``"6d"`` — the *spatial* acceleration ``[linear; angular]`` of the constraint frame in its own axes
  (``γ = J̇ v``, LOCAL);
* ``"3d"`` — the *classical* acceleration of the constraint point (the second time derivative of its
  position) in the frame's axes: spatial linear acceleration + ``ω × v``;
* a custom ``K_e`` — ``K_e`` times the spatial acceleration, as for ``"6d"``.

On a tree the whole solve is one compiled call (:mod:`loopdyn.algorithms.contact`, in world
coordinates): one ABA, the bias from its body accelerations, Λ⁻¹ by PV-OSIMr reusing the ABA's
articulated-body factors, an in-kernel Cholesky of ``Λ⁻¹ + μ I`` and ``M⁻¹ Jᵀ λ`` by the ABA's last two
sweeps on the forces alone. On a model with loops it is one compiled call too
(:func:`loopdyn.algorithms.contact.contact_loops_kernel`): C-ABA, the bias from its body motions,
cluster PV-OSIMr on its articulated inertias, the Cholesky and C-ABA's backward and forward passes
again with the constraint wrenches. The constraint list is compiled once
(kept with its :class:`~loopdyn.constraint_rows.ConstraintRows`), so a call costs a cache lookup, the
allocation of the results and one kernel dispatch.
"""

from __future__ import annotations

import math

import numpy as np

from .algorithms import cluster_pv_osimr
from .algorithms import contact as contact_kernels
from .algorithms.call import CLUSTER_FIRST, CONFIGURATION, FORCES, TANGENT, KernelArgs, run
from .algorithms.status import raise_for_status
from .algorithms.validation import check_data
from .constraint_rows import ConstraintRows, prepare
from .delassus_methods import resolve_method
from .dynamics import aba
from .errors import InputError, RedundantConstraintsError, ShapeError
from .kinematics import forward_kinematics
from .model import layout as L

__all__ = ["RedundantConstraintsError", "constrained_forward_dynamics", "constraint_acceleration"]



def _frame_motions(data, rows: ConstraintRows):
    """(velocities, accelerations) ``[linear; angular]`` of every constraint frame in its own axes,
    from the body velocities / accelerations of the last forward kinematics (rows of ``nc × 6``)."""
    cbody, frames = rows.body, rows.frames
    ws = data.ws
    nc = len(cbody)
    vel = np.zeros((nc, 6))
    acc = np.zeros((nc, 6))
    for e in range(nc):
        b = int(cbody[e])
        if b == 0:
            continue
        R = frames[e, :9].reshape(3, 3)
        p = frames[e, 9:]
        for out, col in ((vel, L.W_V), (acc, L.W_A)):
            m = ws[b, col : col + 6]  # body motion [ω; v] in body coordinates
            out[e, :3] = R.T @ (m[3:] + np.cross(m[:3], p))
            out[e, 3:] = R.T @ m[:3]
    return vel, acc


def _bias(model, data, q, v, a, rows: ConstraintRows) -> np.ndarray:
    """``J a + γ`` (m): the constraint accelerations at state (q, v) with joint accelerations a."""
    forward_kinematics(model, data, q, v, a)
    vel, acc = _frame_motions(data, rows)
    crow, sels, cons_kinds = rows.row, rows.selections, rows.kinds
    out = np.zeros(int(crow[-1]))
    for e in range(len(sels)):
        a_e = acc[e].copy()
        if cons_kinds[e] == "3d":  # classical acceleration of the point
            a_e[:3] += np.cross(vel[e, 3:], vel[e, :3])
        out[crow[e] : crow[e + 1]] = sels[e] @ a_e
    return out


def constraint_acceleration(model, data, q, v, a, constraints) -> np.ndarray:
    """The constraint accelerations ``J a + γ`` (m, a new array) of ``constraints`` at state
    ``(q, v)`` with joint accelerations ``a``, in the convention of :func:`constrained_forward_dynamics`
    (spatial LOCAL acceleration for ``"6d"`` and custom rows, classical acceleration of the point for
    ``"3d"``)."""
    resolve_method(model, data, None)
    return _bias(model, data, q, v, a, prepare(model, constraints))


def damping(mu) -> float:
    """``mu`` as a float, checked: a non-negative finite number (else :class:`InputError`)."""
    if mu.__class__ is not float:
        try:
            mu = float(mu)
        except (TypeError, ValueError):
            raise InputError(f"mu must be a non-negative real number, got {mu!r}") from None
    if not 0.0 <= mu < math.inf:  # NaN fails too
        raise InputError(f"mu must be a non-negative finite number, got {mu!r}")
    return mu


def desired_accelerations(desired, m: int) -> np.ndarray:
    """A new float array holding the desired constraint accelerations (zeros when None)."""
    if desired is None:
        return np.zeros(m)
    k = np.array(desired, dtype=float).reshape(-1) if np.ndim(desired) else None
    if k is None or k.shape != (m,):
        raise ShapeError(
            f"desired must have one entry per constraint row ({m}), got shape {np.shape(desired)}"
        )
    if not np.all(np.isfinite(k)):
        raise InputError("desired contains NaN or inf")
    return k


def _program(data, rows: ConstraintRows) -> contact_kernels.ContactProgram:
    prog = rows.compiled.get("contact")
    if prog is None:
        classical = [k == "3d" for k in rows.kinds]
        prog = contact_kernels.contact_program(data.ib, rows.body, rows.row, rows.K, rows.frames, classical)
        rows.compiled["contact"] = prog
    return prog


def compiled_constraints(model, data, rows: ConstraintRows):
    """The compiled form of a prepared constraint list (cached with it): a
    :class:`~loopdyn.algorithms.contact.LoopProgram` on a model with loops, else a
    :class:`~loopdyn.algorithms.contact.ContactProgram`."""
    return _loop_program(model, data, rows) if model.has_constraints else _program(data, rows)


_CONTACT_ARGS = KernelArgs(2, ("q", CONFIGURATION), ("v", TANGENT), ("tau", TANGENT), ("f_ext", FORCES))


def constrained_forward_dynamics(
    model, data, q, v, tau, constraints, desired=None, mu: float = 0.0, f_ext=None
) -> tuple[np.ndarray, np.ndarray]:
    """Forward dynamics of a kinematic tree under link ``constraints`` (a sequence of
    :class:`~loopdyn.Constraint`, e.g. feet on the ground).

    Returns ``(ddq, forces)``: the joint accelerations (nv) and the constraint forces ``λ`` (m), the
    force each constraint applies to the robot in its constraint frame, in the given order and
    Pinocchio's layout (``"3d"``: the force; ``"6d"``: ``[force; torque]``; custom: one multiplier per
    row of ``K_e``), so that ``M ddq + c = τ + Jᵀ λ``.

    * ``desired`` — the desired constraint accelerations ``k`` (m; default zero: the constraint
      frames do not accelerate), in the convention of :func:`constraint_acceleration`.
    * ``mu`` — damping: solves ``(Λ⁻¹ + μ I) λ = k − (J a0 + γ)``. With ``mu = 0`` the constraint
      rows must be independent (otherwise :class:`RedundantConstraintsError`); ``mu > 0`` handles
      redundant sets (several contacts on one rigid foot, overlapping constraints) and gives the
      damped least-squares forces, with ``J ddq + γ = k − μ λ`` (the accelerations are off by
      ``O(μ)`` unless the rows are redundant *and* consistent).
    * ``f_ext`` — external forces on the bodies, as for :func:`loopdyn.aba`.

    On a tree: one compiled call (:mod:`loopdyn.algorithms.contact`) — one ABA, the bias from its body
    accelerations, PV-OSIMr reusing the ABA's factors for Λ⁻¹ (O(n + m²)), the m × m Cholesky (O(m³))
    and the ABA's last two sweeps on the forces ``Jᵀλ``. On a model with loops (``q``, ``v``, ``tau``
    and ``ddq`` in its cluster coordinates; constraints on any body, rotors included), one compiled
    call as well: C-ABA, the bias from its body motions, cluster PV-OSIMr for Λ⁻¹ on its articulated
    inertias, the Cholesky, and C-ABA's two passes again with the constraint wrenches ``K_eᵀλ_e`` added
    to the external forces (``Jᵀλ``); the loops are closed once.
    """
    if data.source_key is not model._key:
        check_data(model, data)
    if mu.__class__ is not float or not 0.0 <= mu < math.inf:
        mu = damping(mu)
    rows = prepare(model, constraints)
    if model.has_constraints:
        return _cluster_dynamics(model, data, q, v, tau, rows, desired, mu, f_ext)
    prog = rows.compiled.get("contact") or _program(data, rows)
    m = prog.m
    lam = np.zeros(m) if desired is None else desired_accelerations(desired, m)
    if m == 0:
        return aba(model, data, q, v, tau, f_ext), lam
    ddq = np.empty(data.nv)
    sc = getattr(prog.local, "sc", None)
    if sc is None:
        sc = prog.scratch()
    args = (data.ib, data.ws, q, v, tau, data.no_forces if f_ext is None else f_ext, mu, prog.cf, prog.ci, sc,
            ddq, lam)  # fmt: skip
    try:  # the fast path of algorithms.call.run, inlined
        st = contact_kernels.contact_kernel(*args)
    except TypeError:
        st = contact_kernels.contact_kernel(*_CONTACT_ARGS.coerce(model, args))
    if st:
        raise_for_status(model, st, _CONTACT_ARGS.names)
    return ddq, lam


def _loop_program(model, data, rows: ConstraintRows) -> contact_kernels.LoopProgram:
    prog = rows.compiled.get("contact_loops")
    if prog is None:
        structure = cluster_pv_osimr.cluster_structure(model, data, rows.body, rows.row)
        classical = [k == "3d" for k in rows.kinds]
        prog = contact_kernels.loop_program(
            data.ib, structure, rows.body, rows.row, rows.K, rows.frames, classical
        )
        rows.compiled["contact_loops"] = prog
    return prog


_LOOP_ARGS = KernelArgs(
    CLUSTER_FIRST, ("q", CONFIGURATION), ("v", TANGENT), ("tau", TANGENT), ("f_ext", FORCES)
)


def _cluster_dynamics(model, data, q, v, tau, rows: ConstraintRows, desired, mu: float, f_ext):
    """Models with loops, in one compiled call (:func:`loopdyn.algorithms.contact.contact_loops_kernel`):
    C-ABA, the bias from its body motions, cluster PV-OSIMr for Λ⁻¹, the Cholesky, and C-ABA's passes
    again with the constraint wrenches ``K_eᵀ λ_e`` among the external forces."""
    m = rows.m
    k = desired_accelerations(desired, m)
    if m == 0:
        return aba(model, data, q, v, tau, f_ext), k
    prog = _loop_program(model, data, rows)
    ddq = np.empty(data.nv)
    fext = data.no_forces if f_ext is None else f_ext
    args = (*data.cluster_arrays, q, v, tau, fext, mu, prog.cf, prog.ci, prog.T, prog.cemp, prog.asm,
            prog.scratch(), ddq, k)  # fmt: skip
    run(contact_kernels.contact_loops_kernel, model, _LOOP_ARGS, args)
    return ddq, k
