"""The 12-DoF aerial manipulator of Ali, Gabellieri & Franchi (2026) §7 (spec §4), and its 30 s
reference trajectory.

A fully actuated tilted hexarotor base (free flyer, frame at its centre of mass) carries two
identical 3-R arms hanging below it: arm 1 = joints q2 (y axis), q3 (x), q4 (z) at x = +c/2, arm 2 =
q5, q6, q7 at x = −c/2. Table 3 parameters: b = 0.10 m, d = 0.06 m, c = 0.18 m; base 2.5 kg,
diag(0.03, 0.03, 0.05) kg m²; links 0.25 kg, diag(0.002, 0.002, 0.001) kg m², each 2d long with its
centre of mass d below its joint. At home every frame is parallel to the world frame.

In loopdyn's (Pinocchio's) convention a body's frame is its joint frame, placed on the joint axis
(the paper's axis point ``p̄_j = (0, 0, d)`` above the link's centre of mass); the inertias are the
same physical bodies, so the dynamics are the paper's. Gravity is 9.81 m/s² (the paper does not
state it; spec §4.3).

The reference trajectory (spec §4.5; the base formulas are the spec's reading of the paper):
base position ``(cos 2πt/20, sin 2πt/20, 0)``, yaw ``ψ = 25° sin(2πt/30)``, roll = pitch = 0; joints
``q_j = q0_j + (η_j/2)(1 − cos(πt/T))``, T = 30 s, sampled every 0.01 s.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import InputError
from ..model.joints import FreeFlyer, Revolute
from ..model.model import Model
from ..spatial.inertia import Inertia

__all__ = ["PAPER_TIMES_US", "aerial_manipulator", "aerial_reference", "aerial_times"]

B, D, C = 0.10, 0.06, 0.18
HORIZON = 30.0
DT = 0.01
Q0 = np.deg2rad([10.0, -5.0, 15.0, -10.0, 7.0, -12.0])
ETA = np.deg2rad([60.0, 50.0, 40.0, 55.0, 45.0, 35.0])

#: the paper's mean per-call times (Fig. 3 caption), µs, for r = 0…5
PAPER_TIMES_US = {
    "rnea": (2.326, 3.078, 2.867, 4.355, 5.960, 8.171),
    "aba": (4.106, 4.802, 6.486, 6.461, 8.589, 11.085),
}


def aerial_manipulator(gravity: float = 9.81) -> Model:
    """The paper's aerial manipulator: N = 7 bodies (base + 6 links), nq = 13, nv = 12.

    Bodies ``base`` (free flyer ``base_joint``) and ``link2`` … ``link7`` (revolute ``q2`` … ``q7``).
    """
    model = Model("aerial_manipulator", gravity=(0.0, 0.0, -float(gravity)))
    model.add_body(
        "base",
        0,
        FreeFlyer(),
        inertia=Inertia(2.5, np.zeros(3), np.diag([0.03, 0.03, 0.05])),
        joint_name="base_joint",
    )
    link = Inertia(0.25, (0.0, 0.0, -D), np.diag([0.002, 0.002, 0.001]))
    axes = ((0.0, 1.0, 0.0), (1.0, 0.0, 0.0), (0.0, 0.0, 1.0))
    for arm, x in ((0, C / 2), (1, -C / 2)):
        parent = "base"
        for k in range(3):
            j = 2 + 3 * arm + k
            # the axis point is d above the link's centre of mass; the first joint sits at z = −b
            offset = (x, 0.0, -B) if k == 0 else (0.0, 0.0, -2 * D)
            model.add_body(
                f"link{j}", parent, Revolute(axes[k]), (np.eye(3), np.array(offset)), link, joint_name=f"q{j}"
            )
            parent = f"link{j}"
    return model


def aerial_times() -> np.ndarray:
    """The 3000 sampling instants 0, 0.01, …, 29.99 s of the paper's simulation."""
    return np.arange(int(round(HORIZON / DT))) * DT


def _taylor_sin_cos(u):
    """Normalised Taylor coefficients of sin u(t), cos u(t) from those of u (u[k] = u^(k)/k!)."""
    n = len(u)
    s, c = np.zeros(n), np.zeros(n)
    s[0], c[0] = math.sin(u[0]), math.cos(u[0])
    for k in range(1, n):
        s[k] = sum(j * u[j] * c[k - j] for j in range(1, k + 1)) / k
        c[k] = -sum(j * u[j] * s[k - j] for j in range(1, k + 1)) / k
    return s, c


def _cauchy(a, b):
    n = len(a)
    return np.array([sum(a[j] * b[k - j] for j in range(k + 1)) for k in range(n)])


def aerial_reference(t: float, order: int) -> tuple[np.ndarray, np.ndarray]:
    """``(q, dv)`` of the reference trajectory at time ``t``: ``q`` (13) and ``dv`` ``(order + 2,
    12)``, row k = k-th time derivative of the velocity (base: child-frame linear and angular
    velocity), i.e. the inputs of :func:`loopdyn.higher_order.rnea` at order ``order``."""
    if not (isinstance(order, int | np.integer) and order >= 0):
        raise InputError(f"order must be an integer >= 0, got {order!r}")
    t = float(t)
    if not math.isfinite(t):
        raise InputError(f"t must be finite, got {t!r}")
    n = order + 3  # Taylor coefficients 0 … order + 2 of positions
    fact = np.array([math.factorial(k) for k in range(n)], dtype=float)
    w_pos, w_yaw, yaw_amp = 2 * math.pi / 20.0, 2 * math.pi / 30.0, math.radians(25.0)
    ks = np.arange(n)
    x = w_pos**ks * np.cos(w_pos * t + ks * math.pi / 2) / fact  # cos(ω t), differentiated k times
    y = w_pos**ks * np.sin(w_pos * t + ks * math.pi / 2) / fact
    psi = yaw_amp * w_yaw**ks * np.sin(w_yaw * t + ks * math.pi / 2) / fact
    s, c = _taylor_sin_cos(psi)
    dx, dy = x[1:] * ks[1:], y[1:] * ks[1:]  # coefficients of ẋ, ẏ (one fewer)
    vbx = _cauchy(c[:-1], dx) + _cauchy(s[:-1], dy)  # Rz(ψ)ᵀ (ẋ, ẏ)
    vby = -_cauchy(s[:-1], dx) + _cauchy(c[:-1], dy)
    wz = psi[1:] * ks[1:]
    rows = order + 2
    dv = np.zeros((rows, 12))
    dv[:, 0] = vbx[:rows] * fact[:rows]
    dv[:, 1] = vby[:rows] * fact[:rows]
    dv[:, 5] = wz[:rows] * fact[:rows]
    wj = math.pi / HORIZON
    for k in range(rows):  # joints: q^(k+1) = (η/2) (π/T)^(k+1) sin(πt/T + kπ/2)
        dv[k, 6:] = 0.5 * ETA * wj ** (k + 1) * math.sin(wj * t + k * math.pi / 2)
    q = np.zeros(13)
    q[0], q[1] = x[0], y[0]
    q[5], q[6] = math.sin(psi[0] / 2), math.cos(psi[0] / 2)
    q[7:] = Q0 + 0.5 * ETA * (1.0 - math.cos(wj * t))
    return q, dv
