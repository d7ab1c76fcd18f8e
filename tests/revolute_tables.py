"""What the JAX oracles of the higher-order and derivative tests share, written from a model's
parameters only: the skew matrix, Featherstone's parent → child motion transform, and each revolute
body's transform as a function of its angle, ``X(θ) = X0 + sin θ XS − cos θ XC`` (Rodrigues:
``R = R0 (I + sin θ A + (1 − cos θ) A²)``, and the transform is linear in R), with its joint axis
``S`` and its spatial inertia about the body origin; and XLA's options for the oracles' one-off
compilations (XLA's expensive CPU passes off: the oracles are compiled once and run a few times)."""

from __future__ import annotations

import numpy as np

XLA_OPTIONS = {"xla_cpu_use_fusion_emitters": False, "xla_backend_optimization_level": 0}


def skew(x) -> np.ndarray:
    return np.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])


def motion_transform(R, p) -> np.ndarray:
    """Parent → child motion transform of a child frame at ``p`` with axes ``R`` (linear in R)."""
    return np.block([[R.T, np.zeros((3, 3))], [-R.T @ skew(p), R.T]])


def revolute_tables(bodies, axis_of=lambda b: b.joint.axis):
    """``(X0, XS, XC, S, I6)``, one row per body (all revolute): ``X(θ) = X0 + sin θ XS − cos θ XC``,
    the joint's motion subspace ``S`` and the spatial inertia ``I6`` ([angular; linear])."""
    X0, XS, XC, S, I6 = [], [], [], [], []
    for b in bodies:
        axis = np.asarray(axis_of(b), float)
        A, R0, p = skew(axis), np.asarray(b.rotation, float), np.asarray(b.translation, float)
        X0.append(motion_transform(R0 @ (np.eye(3) + A @ A), p))
        XS.append(motion_transform(R0 @ A, p) - motion_transform(np.zeros((3, 3)), p))
        XC.append(motion_transform(R0 @ A @ A, p) - motion_transform(np.zeros((3, 3)), p))
        S.append(np.concatenate([axis, np.zeros(3)]))
        mass, com, Ic = b.inertia.mass, np.asarray(b.inertia.com), np.asarray(b.inertia.inertia)
        C = skew(com)
        I6.append(np.block([[Ic + mass * C @ C.T, mass * C], [mass * C.T, mass * np.eye(3)]]))
    return tuple(np.array(x) for x in (X0, XS, XC, S, I6))
