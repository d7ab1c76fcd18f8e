"""Pieces shared by every tree kernel: input validation inside kernels, joint calculations
(``jcalc``), the motion-subspace products ``S x`` / ``Sᵀ f``, and the lazily compiled ``kernel``
decorator.

Kernels validate their inputs themselves (shapes, finiteness, unit quaternions) *before* writing
anything, and return a status code (:mod:`.status`): 0 on success, else ``kind * STATUS_BASE + index``.
"""

from __future__ import annotations

import math

from ..jit import inlined, lazy_passes, njit
from ..model import layout as L
from ..model.joints import FREEFLYER, PRISMATIC, REVOLUTE, REVOLUTE_UNBOUNDED, SPHERICAL
from ..spatial import ops
from .status import BAD_QUAT, BAD_SHAPE, BAD_UNIT_COMPLEX, NOT_FINITE, STATUS_BASE, UNIT_TOL


# ---------------------------------------------------------------------------------------------
# validation (inside kernels)
@njit(cache=True)
def check_vector(x, n, arg):
    """Status for a vector argument that must have n finite entries."""
    if x.shape[0] != n:
        return BAD_SHAPE * STATUS_BASE + arg
    for k in range(n):
        if not math.isfinite(x[k]):
            return (NOT_FINITE + arg) * STATUS_BASE + k
    return 0


@inlined
def check_unit(jt, q, iq):
    """0, or the status kind of a non-unit quaternion / (cos, sin) pair of a joint of type jt whose
    coordinates start at q[iq]."""
    if jt == SPHERICAL or jt == FREEFLYER:
        o = iq + 3 if jt == FREEFLYER else iq
        n2 = q[o] * q[o] + q[o + 1] * q[o + 1] + q[o + 2] * q[o + 2] + q[o + 3] * q[o + 3]
        if abs(math.sqrt(n2) - 1.0) > UNIT_TOL:
            return BAD_QUAT
    elif jt == REVOLUTE_UNBOUNDED:
        if abs(math.sqrt(q[iq] * q[iq] + q[iq + 1] * q[iq + 1]) - 1.0) > UNIT_TOL:
            return BAD_UNIT_COMPLEX
    return 0


@njit(cache=True)
def check_configuration(ib, q):
    """Status for a configuration vector: size, finiteness, unit quaternions and (cos, sin) pairs."""
    st = check_vector(q, ib[0, L.I0_NQ], 0)
    if st != 0:
        return st
    for i in range(1, ib[0, L.I0_NBODIES] + 1):
        kind = check_unit(ib[i, L.I_JTYPE], q, ib[i, L.I_IQ])
        if kind != 0:
            return kind * STATUS_BASE + i
    return 0


@njit(cache=True)
def check_forces(ib, fext):
    """Status for an external-force array: empty (no forces) or (nbodies + 1, 6), finite."""
    if fext.shape[0] == 0:
        return 0
    if fext.shape[0] != ib[0, L.I0_NBODIES] + 1 or fext.shape[1] != 6:
        return BAD_SHAPE * STATUS_BASE + 3
    for i in range(fext.shape[0]):
        for k in range(6):
            if not math.isfinite(fext[i, k]):
                return (NOT_FINITE + 3) * STATUS_BASE + 6 * i + k
    return 0


# ---------------------------------------------------------------------------------------------
# joints
@inlined
def joint_motion(jt, ax, ay, az, q, iq):
    """The joint's own motion as scalars: rotation (row-major 9-tuple) and translation (3-tuple)."""
    if jt == REVOLUTE or jt == REVOLUTE_UNBOUNDED:
        if jt == REVOLUTE:
            c = math.cos(q[iq])
            s = math.sin(q[iq])
        else:
            c = q[iq]
            s = q[iq + 1]
        return ops.rot_axis_angle(ax, ay, az, c, s), (0.0, 0.0, 0.0)
    if jt == PRISMATIC:
        d = q[iq]
        return (1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0), (d * ax, d * ay, d * az)
    if jt == SPHERICAL:
        return ops.rot_quat(q[iq], q[iq + 1], q[iq + 2], q[iq + 3]), (0.0, 0.0, 0.0)
    return ops.rot_quat(q[iq + 3], q[iq + 4], q[iq + 5], q[iq + 6]), (q[iq], q[iq + 1], q[iq + 2])


@inlined
def jcalc(ib, ws, i, q):
    """Placement (R, p) of body i in its parent = joint placement · joint motion(q); stored in
    ws[i, W_R], ws[i, W_P] and returned."""
    Rm, pm = joint_motion(
        ib[i, L.I_JTYPE], ws[i, L.W_AXIS], ws[i, L.W_AXIS + 1], ws[i, L.W_AXIS + 2], q, ib[i, L.I_IQ]
    )
    JR = ops.load9(ws, i, L.W_JR)
    R = ops.rot_mul(JR, Rm)
    t = ops.rot_vec(JR, pm)
    p = (ws[i, L.W_JP] + t[0], ws[i, L.W_JP + 1] + t[1], ws[i, L.W_JP + 2] + t[2])
    ops.store9(ws, i, L.W_R, R)
    ops.store3(ws, i, L.W_P, p)
    return R, p


@inlined
def s_column(ib, ws, i, k):
    """The k-th column of body i's motion subspace S (body frame, [ω; v]) as a 6-tuple."""
    jt = ib[i, L.I_JTYPE]
    if jt == REVOLUTE or jt == REVOLUTE_UNBOUNDED:
        return (ws[i, L.W_AXIS], ws[i, L.W_AXIS + 1], ws[i, L.W_AXIS + 2], 0.0, 0.0, 0.0)
    if jt == PRISMATIC:
        return (0.0, 0.0, 0.0, ws[i, L.W_AXIS], ws[i, L.W_AXIS + 1], ws[i, L.W_AXIS + 2])
    if jt == SPHERICAL:
        return ops.unit6(k)
    # FREEFLYER: v = [linear; angular] (Pinocchio) → [ω; v] (Featherstone)
    return ops.unit6(k + 3 if k < 3 else k - 3)


# ---------------------------------------------------------------------------------------------
# the penalty inertia of the damped Delassus matrix (EFPA, PV-OSIM)
@inlined
def add_row_inertia(ws, b, K, r0, r1, added):
    """Iᴬ_b += added · K[r0:r1]ᵀ K[r0:r1]: the penalty inertia of the damped Delassus matrix (the
    rows K act on body b's motion in its own coordinates)."""
    for r in range(r0, r1):
        for a in range(6):
            x = added * K[r, a]
            for c in range(6):
                ws[b, L.W_IA + 6 * a + c] += x * K[r, c]


# ---------------------------------------------------------------------------------------------
# the pivot test of 1-DoF joints
@njit(cache=True)
def joint_mass_diagonal(ib, ws, i):
    """``M_ii = s_iᵀ Ic_i s_i + armature``: the diagonal mass-matrix entry of body i's 1-DoF joint
    (its subtree's composite inertia along the joint's motion), from the subtree's placements W_R,
    W_P (written by every kinematic pass before the articulated inertias). O(subtree · depth): the
    slow half of :func:`pivot_positive`, run only when the fast half cannot decide."""
    Ic = ops.load10(ws, i, L.W_INER)
    for k in range(i + 1, ib[0, L.I0_NBODIES] + 1):
        j = k  # parents come first: k is in i's subtree iff its ancestors reach i
        while j > i:
            j = ib[j, L.I_PARENT]
        if j != i:
            continue
        I = ops.load10(ws, k, L.W_INER)
        j = k
        while j != i:
            I = ops.inertia_to_parent(ops.load9(ws, j, L.W_R), ops.load3(ws, j, L.W_P), I)
            j = ib[j, L.I_PARENT]
        Ic = ops.add10(Ic, I)
    s = s_column(ib, ws, i, 0)
    return ops.dot6(s, ops.inertia_mul(Ic, s)) + ws[i, L.W_ARM]


@inlined
def pivot_positive(ib, ws, i, d):
    """Whether the pivot ``d`` of body i's 1-DoF joint (its ``D = Sᵀ Iᴬ S + armature``, the subtree
    already eliminated) is positive relative to the joint's diagonal mass-matrix entry:
    ``d > SPD_RTOL · M_ii``, the test :func:`loopdyn.spatial.ops.spd_inverse` applies to each pivot of a
    multi-DoF D. ``d > 0`` is not enough: at an exact singularity (a gimbal at its lock) rounding
    leaves a pivot of ``±1e-16 · M_ii``, and its inverse gives accelerations of 1e16. The fast half
    compares with the configuration-independent bound W_MBOUND ≥ M_ii (one multiply); only a pivot
    below it pays for the exact M_ii (:func:`joint_mass_diagonal`)."""
    if d > ops.SPD_RTOL * ws[i, L.W_MBOUND]:
        return True
    return d > ops.SPD_RTOL * joint_mass_diagonal(ib, ws, i)


@inlined
def cluster_pivot_positive(ib, ws, ic, cb, k, d):
    """Whether the 1 × 1 𝖣 = d of cluster k is positive definite: relative to the joint's diagonal
    mass-matrix entry for a tree joint (:func:`~.common.pivot_positive`: its subtree moves rigidly
    with it, so M_ii is the spanning tree's), ``d > 0`` for a cluster of several bodies."""
    if ic[k, L.C_KIND] == L.SINGLE_BODY:
        return pivot_positive(ib, ws, cb[ic[k, L.C_FIRST]], d)
    return d > 0.0


@inlined
def s_mul(ib, ws, i, x):
    """S x[iv : iv + nv] for body i (x is a full velocity-space vector), as a 6-tuple."""
    jt = ib[i, L.I_JTYPE]
    iv = ib[i, L.I_IV]
    if jt == REVOLUTE or jt == REVOLUTE_UNBOUNDED:
        d = x[iv]
        return (ws[i, L.W_AXIS] * d, ws[i, L.W_AXIS + 1] * d, ws[i, L.W_AXIS + 2] * d, 0.0, 0.0, 0.0)
    if jt == PRISMATIC:
        d = x[iv]
        return (0.0, 0.0, 0.0, ws[i, L.W_AXIS] * d, ws[i, L.W_AXIS + 1] * d, ws[i, L.W_AXIS + 2] * d)
    if jt == SPHERICAL:
        return (x[iv], x[iv + 1], x[iv + 2], 0.0, 0.0, 0.0)
    return (x[iv + 3], x[iv + 4], x[iv + 5], x[iv], x[iv + 1], x[iv + 2])


@inlined
def st_mul(ib, ws, i, f, out):
    """out[iv : iv + nv] = Sᵀ f for body i (f a 6-tuple)."""
    jt = ib[i, L.I_JTYPE]
    iv = ib[i, L.I_IV]
    if jt == REVOLUTE or jt == REVOLUTE_UNBOUNDED:
        out[iv] = ws[i, L.W_AXIS] * f[0] + ws[i, L.W_AXIS + 1] * f[1] + ws[i, L.W_AXIS + 2] * f[2]
    elif jt == PRISMATIC:
        out[iv] = ws[i, L.W_AXIS] * f[3] + ws[i, L.W_AXIS + 1] * f[4] + ws[i, L.W_AXIS + 2] * f[5]
    elif jt == SPHERICAL:
        out[iv] = f[0]
        out[iv + 1] = f[1]
        out[iv + 2] = f[2]
    else:
        out[iv] = f[3]
        out[iv + 1] = f[4]
        out[iv + 2] = f[5]
        out[iv + 3] = f[0]
        out[iv + 4] = f[1]
        out[iv + 5] = f[2]


@inlined
def velocity_pass(ib, ws, i, v, R, p):
    """Body i: v_i = ᶦX_λ v_λ + S q̇_i and the velocity-product term c_i = v_i × (S q̇_i), stored in
    ws[i, W_V] and ws[i, W_C]; returns v_i."""
    vJ = s_mul(ib, ws, i, v)
    vi = ops.add6(ops.motion_to_child(R, p, ops.load6(ws, ib[i, L.I_PARENT], L.W_V)), vJ)
    ops.store6(ws, i, L.W_V, vi)
    ops.store6(ws, i, L.W_C, ops.cross_motion(vi, vJ))
    return vi


@inlined
def external_force(fext, i):
    """The external force on body i as a Featherstone 6-tuple [n; f] (input rows are Pinocchio's
    [force; torque], body frame); zero when no forces are given."""
    if fext.shape[0] == 0:
        return (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    return (fext[i, 3], fext[i, 4], fext[i, 5], fext[i, 0], fext[i, 1], fext[i, 2])


@inlined
def gravity_seed(ws):
    """Base acceleration a_0 = −a_g (gravity enters as a fictitious upward acceleration)."""
    return (0.0, 0.0, 0.0, -ws[0, L.W0_GRAVITY], -ws[0, L.W0_GRAVITY + 1], -ws[0, L.W0_GRAVITY + 2])


# ---------------------------------------------------------------------------------------------
# kernels compiled lazily for exactly one signature
def kernel(signature: str, parallel: bool = False):
    """Decorator: compile ``pyfunc`` with Numba for ``signature`` on its first call (cached on disk).

    The stub replaces itself in its module's namespace by the compiled dispatcher, so the Python
    wrappers (which look the kernel up as a module global) pay no indirection after the first call.
    Because the signature is explicit, arguments of any other type raise ``TypeError`` instead of
    silently compiling a new specialisation; the wrappers catch it and validate slowly. Kernels
    release the GIL (``nogil=True``): user threads, each with its own Data, run them in parallel.
    """
    import sys

    def deco(pyfunc):
        module = sys.modules[pyfunc.__module__]
        name = pyfunc.__name__

        def stub(*args):
            dispatcher = compiled(stub)
            return dispatcher(*args)

        stub.__name__ = name
        stub.__qualname__ = name
        stub.__doc__ = pyfunc.__doc__
        stub.py_func = pyfunc
        stub.signature = signature
        stub.parallel = parallel
        stub.module = module
        _KERNELS.append(stub)
        return stub

    return deco


_KERNELS: list = []


def compiled(stub):
    """Compile (or load from the cache) the kernel behind ``stub`` and install it in its module."""
    if getattr(stub, "lazy", False):  # a lazy pass (loopdyn.jit.lazy): its dispatcher
        return stub.ensure()
    current = getattr(stub.module, stub.__name__)
    if current is not stub:
        return current
    dispatcher = njit(stub.signature, cache=True, parallel=stub.parallel, nogil=True)(stub.py_func)
    setattr(stub.module, stub.__name__, dispatcher)
    return dispatcher


def registered_kernels() -> list:
    """Every kernel stub registered so far (by the modules imported), in registration order, then the
    lazy passes (:func:`loopdyn.jit.lazy`)."""
    return list(_KERNELS) + lazy_passes()


def compile_all() -> float:
    """Compile (or load) every registered kernel and lazy pass now; returns the seconds it took."""
    import time

    t0 = time.perf_counter()
    for stub in registered_kernels():
        compiled(stub)
    return time.perf_counter() - t0
