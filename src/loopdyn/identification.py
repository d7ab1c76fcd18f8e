"""System identification: inertial parameters, the joint-torque regressor and the identifiable (base)
parameters, on trees and on models with loops (geared rotors, belts, linkages), in independent
coordinates.

* :func:`inertial_parameters` — π, 10 per body in Pinocchio's ``toDynamicParameters`` order
  (m, m c_x, m c_y, m c_z, I_xx, I_xy, I_yy, I_xz, I_yz, I_zz; I about the body origin), every body of
  the model (rotors, the massless bodies of compound joints), then, with ``armature=True``, one per
  spanning velocity coordinate; :func:`with_inertial_parameters` — the model with other parameters.
* :func:`regressor` — ``Y(q, v, a)`` with ``Y π == rnea(q, v, a)`` (on loops ``Y = Gᵀ Y_span(q, Gẏ,
  Gÿ + g)``), one kernel call (:mod:`loopdyn.algorithms.regressor`); :func:`loopdyn.batch.regressor`
  for many states.
* :func:`identifiable_parameters` — the base parameters β = B π: the combinations of π that the
  joint forces determine, from stacked regressors at random states (QR with column pivoting for the
  rank, Gautier 1990; the regrouping read off in a fixed order of preference, cleaned to exact
  rationals), each written out as a readable combination, e.g.
  ``knee_link.Iyy + knee_rotor.Izz·81``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .algorithms import regressor as kernels
from .algorithms.call import CONFIGURATION, TANGENT, KernelArgs, run
from .algorithms.validation import check_data
from .errors import InputError, ModelError
from .model import layout as L
from .model.configuration import random_configuration
from .spatial.inertia import INERTIA_MODES, Inertia, check_physical_inertia

__all__ = [
    "PARAMETER_NAMES",
    "BaseParameters",
    "identifiable_parameters",
    "inertial_parameters",
    "parameter_names",
    "regressor",
    "with_inertial_parameters",
]

#: the 10 parameters of a body, in π's order (Pinocchio's ``toDynamicParameters``): mass, first
#: moments m·c, rotational inertia about the body's origin
PARAMETER_NAMES = ("m", "mcx", "mcy", "mcz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz")

# π's order of the rotational inertia (xx, xy, yy, xz, yz, zz) ↔ the compact layout (xx, yy, zz, xy, xz, yz)
_TO_PI = np.array([0, 1, 2, 3, 4, 7, 5, 8, 9, 6])
_FROM_PI = np.argsort(_TO_PI)

REGRESSOR_ARGS = KernelArgs(2, ("q", CONFIGURATION), ("v", TANGENT), ("a", TANGENT))


# ---------------------------------------------------------------------------------------------
# inertial parameters
def inertial_parameters(model, armature: bool = False) -> np.ndarray:
    """The inertial parameters π of ``model``: 10 per body (``model.body_names[1:]`` order), in
    Pinocchio's ``toDynamicParameters`` order (m, m c_x, m c_y, m c_z, I_xx, I_xy, I_yy, I_xz, I_yz,
    I_zz, I the rotational inertia about the body's origin, in its frame); with ``armature=True`` the
    armature of every spanning velocity coordinate appended (``model.armature``)."""
    pi = np.empty(10 * model.nbodies)
    for i, b in enumerate(model.bodies):
        pi[10 * i : 10 * i + 10] = b.inertia.compact()[_TO_PI]
    return np.concatenate([pi, model.armature]) if armature else pi


def parameter_names(model, armature: bool = False) -> list[str]:
    """``"<body>.<parameter>"`` for every entry of :func:`inertial_parameters` (parameters named as in
    :data:`PARAMETER_NAMES`), then ``"<coordinate>.armature"`` for the armature entries."""
    names = [f"{b.name}.{p}" for b in model.bodies for p in PARAMETER_NAMES]
    if armature:
        names += [f"{n}.armature" for n in model.spanning_velocity_names]
    return names


def with_inertial_parameters(model, pi, inertia: str = "warn"):
    """A copy of ``model`` whose bodies have the inertial parameters ``pi`` (as
    :func:`inertial_parameters` orders them; 10 per body, or 10 per body plus one armature per spanning
    velocity coordinate, which then replaces the armature).

    Raises :class:`~loopdyn.errors.ModelError` naming the body for a negative mass, first moments of a
    massless body, a rotational inertia about the centre of mass that is not positive semi-definite
    (or not finite, or absurdly large), and for a ``pi`` of the wrong length. ``inertia`` is the
    loaders' policy for the triangle inequality (:data:`~loopdyn.spatial.inertia.INERTIA_MODES`):
    ``"warn"`` (default) keeps such a body with an :class:`~loopdyn.errors.InertiaWarning`,
    ``"physical"`` refuses it, ``"accept"`` keeps it silently."""
    if inertia not in INERTIA_MODES:
        raise InputError(f"with_inertial_parameters: inertia must be one of {INERTIA_MODES}, got {inertia!r}")
    try:
        pi = np.asarray(pi, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ModelError(f"inertial parameters must be an array of real numbers: {exc}") from None
    nb, nvs = model.nbodies, model.spanning_nv
    if pi.ndim != 1 or pi.shape[0] not in (10 * nb, 10 * nb + nvs):
        raise ModelError(
            f"inertial parameters of {model.name!r} must have 10 per body ({10 * nb}), or that plus one "
            f"armature per spanning velocity coordinate ({10 * nb + nvs}); got shape {pi.shape}"
        )
    inertias = []
    for i, b in enumerate(model.bodies):
        what = f"body {b.name!r}"
        x = pi[10 * i : 10 * i + 10]
        if not np.all(np.isfinite(x)):
            raise ModelError(f"{what}: inertial parameters must be finite, got {x}")
        m = float(x[0])
        if m < 0.0:
            raise ModelError(f"{what}: mass must be >= 0, got {m!r}")
        if m == 0.0 and np.any(x[1:4] != 0.0):
            raise ModelError(f"{what}: a massless body has no first moment, got m·c = {x[1:4]}")
        c = x[1:4] / m if m > 0.0 else np.zeros(3)
        xx, xy, yy, xz, yz, zz = x[4:]
        I_origin = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
        # about the centre of mass: I_c = I_o − m (cᵀc 1 − c cᵀ) (parallel axes); Inertia checks it
        I_com = I_origin - m * (float(c @ c) * np.eye(3) - np.outer(c, c))
        J = Inertia(m, c, I_com, name=what)
        check_physical_inertia(J, what, inertia, hint="pass inertia='accept' to keep it",
                               stacklevel=2)
        inertias.append(J)
    out = model.copy()  # a new model (new identity token, nothing compiled yet)
    for b, J in zip(out.bodies, inertias, strict=True):
        b.inertia = J
    if pi.shape[0] > 10 * nb:
        out.armature = pi[10 * nb :]  # checks it (finite, >= 0, naming the coordinate) and re-keys
    else:
        out.armature = out.armature  # re-keys the model after the change of inertias
    return out


# ---------------------------------------------------------------------------------------------
# the regressor
def regressor(model, data, q, v, a, armature: bool = False) -> np.ndarray:
    """The joint-torque regressor ``Y`` (nv × len(π), a new array): ``Y @ inertial_parameters(model,
    armature) == rnea(model, data, q, v, a)`` (gravity included; on a model with loops in independent
    coordinates, ``Y = Gᵀ Y_span(q, G ẏ, G ÿ + g)``, computed by one recursion). Column block
    ``10 i : 10 i + 10`` belongs to body ``i + 1``; with ``armature=True`` one column per spanning
    velocity coordinate follows. On trees, Pinocchio's ``computeJointTorqueRegressor`` (plus the
    armature columns ``diag(a)``)."""
    if data.source_key is not model._key:
        check_data(model, data)
    ncols = 10 * model.nbodies + (model.spanning_nv if armature else 0)
    out = np.empty((model.nv, ncols))
    m1, m2 = data.kernel_arrays
    kern = kernels.c_regressor_kernel if model.has_constraints else kernels.regressor_kernel
    run(kern, model, REGRESSOR_ARGS, (m1, m2, q, v, a, out))
    return out


# ---------------------------------------------------------------------------------------------
# identifiable parameters
#: the default rank tolerance of :func:`identifiable_parameters`: a diagonal entry of R (stacked
#: regressor with unit-norm columns) counts if larger than this times the largest one
RANK_RTOL = 1e-9
#: a combination coefficient is written as the fraction p/q (q ≤ this) it equals to 1e-9 relative
MAX_DENOMINATOR = 1000


@dataclass(frozen=True)
class BaseParameters:
    """The identifiable (base) parameters of a model: ``β = B π``, ``Y_β β = Y π`` at every state.

    Attributes
    ----------
    B:
        (rank × len(π)): row i is base parameter i as a combination of the physical parameters.
    names:
        The name of each base parameter (its leading physical parameter, ``"<body>.<parameter>"``).
    expressions:
        Each base parameter written out, e.g. ``"knee_link.Iyy + knee_rotor.Izz·81"``.
    rank:
        The number of base parameters (the rank of the stacked regressor).
    columns:
        The leading physical parameter of each base parameter (indices into π): ``Y_β = Y[:, columns]``.
    parameter_names:
        The names of the physical parameters (:func:`parameter_names`).
    armature:
        Whether π includes the armature.
    tol:
        The rank tolerance used (relative to the largest diagonal of R, unit-norm columns).
    singular_values:
        ``|R_kk|`` of the pivoted QR, in decreasing order, divided by the largest (the gap at ``rank``
        shows how clear the decision was).
    """

    B: np.ndarray
    names: tuple[str, ...]
    expressions: tuple[str, ...]
    rank: int
    columns: np.ndarray
    parameter_names: tuple[str, ...]
    armature: bool
    tol: float
    singular_values: np.ndarray

    def parameters(self, pi) -> np.ndarray:
        """β = B π."""
        return self.B @ np.asarray(pi, dtype=float)

    def regressor(self, model, data, q, v, a) -> np.ndarray:
        """``Y_β`` (nv × rank) with ``Y_β β == Y π`` (= rnea): the regressor's leading columns."""
        return regressor(model, data, q, v, a, self.armature)[:, self.columns]

    def __str__(self) -> str:
        return "\n".join(f"β{i:<3d} = {e}" for i, e in enumerate(self.expressions))


def _body_speeds(model) -> np.ndarray:
    """Per body (1..nb), how fast its joint moves per unit of its cluster's independent velocity:
    ``max_x |G[r, x]|`` over its row of an explicit cluster's constant G (a rotor geared 9:1 to its
    link: 9 against the link's 1, whichever of the two is the independent coordinate), 1 elsewhere."""
    speed = np.ones(model.nbodies + 1)
    if not model.has_constraints:
        return speed
    data = model.create_data()
    ic, cb, wc = data.ic, data.cb, data.wc
    for k in range(1, ic.shape[0]):
        if ic[k, L.C_KIND] != L.EXPLICIT:
            continue
        n, m, first = ic[k, L.C_N], ic[k, L.C_M], ic[k, L.C_FIRST]
        G = wc[ic[k, L.C_G] : ic[k, L.C_G] + n * m].reshape(n, m)
        for j in range(n):
            speed[cb[first + j]] = np.abs(G[j]).max()
    return speed / speed[1:].min(initial=1.0)


def _preference(model, armature: bool) -> np.ndarray:
    """The order in which parameters are tried as leaders of a base parameter: rotational inertias,
    then first moments, then masses, then armatures (masses and first moments regroup into the
    inertias of the bodies that carry them, as in Khalil's regrouping rules); within a kind, the
    slower bodies of a geared cluster before the faster ones (a link before its rotor, so that the
    rotor's inertia appears multiplied by the square of the gear ratio), then the tree order."""
    speed = _body_speeds(model)
    keys = []
    for i in range(model.nbodies):
        for c in range(10):
            kind = 0 if c >= 4 else (1 if c >= 1 else 2)
            keys.append((kind, round(float(speed[i + 1]), 9), i, c))
    if armature:
        keys += [(3, 0.0, r, 0) for r in range(model.spanning_nv)]
    return np.array(sorted(range(len(keys)), key=lambda j: keys[j]))


def _clean(x: float, scale: float) -> float | Fraction:
    """``x`` as an exact fraction if it is one to 1e-9 relative (gear ratios, their squares, link
    lengths in round numbers), 0 if below ``scale``, else ``x``."""
    if abs(x) <= scale:
        return 0.0
    f = Fraction(x).limit_denominator(MAX_DENOMINATOR)
    return f if abs(float(f) - x) <= 1e-9 * abs(x) else x


def _term(name: str, coef, first: bool) -> str:
    sign = "−" if coef < 0 else "+"
    mag = abs(coef)
    if mag == 1:
        body = name
    elif isinstance(mag, Fraction):
        body = f"{name}·{mag.numerator}" if mag.denominator == 1 else f"{name}·({mag})"
    else:
        body = f"{name}·{mag:.6g}"
    if first:
        return body if sign == "+" else f"−{body}"
    return f" {sign} {body}"


def identifiable_parameters(
    model, samples: int | None = None, rng=None, tol: float | None = None, armature: bool = False
) -> BaseParameters:
    """The base parameters of ``model``: the combinations ``β = B π`` of its inertial parameters
    (:func:`inertial_parameters`) that the joint forces determine.

    The regressor is stacked at ``samples`` random states (random configurations satisfying the loops,
    velocities and accelerations drawn from N(0, 1); default ``2 ⌈len(π) / nv⌉ + 10`` states) and its
    columns scaled to unit norm (zero columns — parameters that never act — left out). The rank is that
    of QR with column pivoting (``scipy.linalg.qr``): the number of diagonal entries of R above ``tol``
    times the largest (default :data:`RANK_RTOL` = 1e-9). The leading parameter of each base parameter
    is then chosen in a fixed order of preference (:func:`_preference`: inertias before first moments
    before masses, links before their rotors), by a QR of the columns in that order, and every other
    parameter's column is written as a combination of the leaders' (least squares, exact to rounding):
    ``B = [1, X]`` on (leaders, others). Coefficients that are fractions p/q (q ≤ 1000) to 1e-9 are
    written exactly (``81`` for the square of a 9:1 gear ratio).

    ``rng``: a seed or a :class:`numpy.random.Generator` (default: seed 0, reproducible)."""
    rng = np.random.default_rng(0 if rng is None else rng)
    names = parameter_names(model, armature)
    P, nv = len(names), model.nv
    if samples is None:
        samples = 2 * math.ceil(P / max(nv, 1)) + 10
    if samples < 1:
        raise InputError(f"identifiable_parameters: samples must be >= 1, got {samples}")
    tol = RANK_RTOL if tol is None else float(tol)
    if not 0.0 < tol < 1.0:
        raise InputError(f"identifiable_parameters: tol must be in (0, 1), got {tol}")
    data = model.create_data()
    W = np.empty((samples * nv, P))
    for k in range(samples):
        q = random_configuration(model, rng)
        v, a = rng.normal(size=nv), rng.normal(size=nv)
        W[k * nv : (k + 1) * nv] = regressor(model, data, q, v, a, armature)
    norms = np.linalg.norm(W, axis=0)
    active = np.flatnonzero(norms > 1e-12 * max(float(norms.max(initial=0.0)), 1e-300))
    Wn = W[:, active] / norms[active]
    import scipy.linalg

    R = scipy.linalg.qr(Wn, mode="r", pivoting=True)[0]
    diag = np.abs(np.diag(R))
    sv = diag / diag[0] if diag.size and diag[0] > 0 else diag
    rank = int(np.count_nonzero(sv > tol))
    # leaders: the columns, in the order of preference, that are independent of those before them
    live = set(active.tolist())
    order = [j for j in _preference(model, armature) if j in live]
    pos = {j: n for n, j in enumerate(active.tolist())}
    Ro = scipy.linalg.qr(Wn[:, [pos[j] for j in order]], mode="r")[0]
    do = np.abs(np.diag(Ro))
    leaders = [j for j, d in zip(order, do, strict=False) if d > tol * diag[0]]
    if len(leaders) != rank:  # the greedy choice disagrees with the pivoted rank: take the pivots'
        piv = scipy.linalg.qr(Wn, mode="r", pivoting=True)[1]
        leaders = sorted((int(active[p]) for p in piv[:rank]), key=order.index)
    leaders_arr = np.array(leaders, dtype=np.int64)
    lead_set = set(leaders)
    others = [j for j in range(P) if j not in lead_set]
    B = np.zeros((rank, P))
    B[np.arange(rank), leaders_arr] = 1.0
    exprs_terms: list[list[tuple[int, object]]] = [[(j, 1)] for j in leaders]
    if others and rank:
        L_n = Wn[:, [pos[j] for j in leaders]]
        act_others = [j for j in others if j in pos]
        Xn = np.linalg.lstsq(L_n, Wn[:, [pos[j] for j in act_others]], rcond=None)[0]
        for col, j in enumerate(act_others):
            for i, lead in enumerate(leaders):
                x = _clean(float(Xn[i, col]) * norms[j] / norms[lead], 1e-10 * norms[j] / norms[lead])
                if x != 0:
                    B[i, j] = float(x)
                    exprs_terms[i].append((j, x))
    expressions = []
    for terms in exprs_terms:
        terms[1:] = sorted(terms[1:], key=lambda t: t[0])  # the leader first, then π's order
        expressions.append("".join(_term(names[j], c, n == 0) for n, (j, c) in enumerate(terms)))
    return BaseParameters(
        B=B,
        names=tuple(names[j] for j in leaders),
        expressions=tuple(expressions),
        rank=rank,
        columns=leaders_arr,
        parameter_names=tuple(names),
        armature=armature,
        tol=tol,
        singular_values=sv,
    )
