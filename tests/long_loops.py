"""Models with one loop across many revolute joints with random general axes and placements (the
builder's and an MJCF string's), for tests/test_long_loops.py."""

from __future__ import annotations

import warnings

import numpy as np

import loopdyn
from loopdyn.errors import InertiaWarning


def _rotation(rng) -> np.ndarray:
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    x, y, z, w = q
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
    ])  # fmt: skip


def _axis_rotation(a: np.ndarray, t: float) -> np.ndarray:
    K = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    return np.eye(3) + np.sin(t) * K + (1 - np.cos(t)) * K @ K


def _unit(rng) -> np.ndarray:
    a = rng.normal(size=3)
    return a / np.linalg.norm(a)


def chain_spec(n_joints: int, seed: int) -> dict:
    """A root revolute joint on the world, then two chains from the root of ``n_joints`` revolute
    joints in all (general axes and placements), and the configuration ``q0`` at which the loop
    between their tips is closed. Returns the bodies ``(name, parent, R, p, axis, mass, com, I)``."""
    rng = np.random.default_rng(seed)
    na = (n_joints + 1) // 2
    bodies = [("root", "universe", np.eye(3), np.zeros(3), np.array([0.0, 0.0, 1.0]))]
    for side, count in (("a", na), ("b", n_joints - na)):
        parent = "root"
        for k in range(count):
            name = f"{side}{k}"
            bodies.append((name, parent, _rotation(rng), rng.uniform(-0.3, 0.3, 3), _unit(rng)))
            parent = name
    inertias = []
    for _ in bodies:
        A = rng.normal(size=(3, 3))
        inertias.append((rng.uniform(0.2, 2.0), rng.uniform(-0.1, 0.1, 3), A @ A.T * 0.01 + np.eye(3) * 0.01))
    q0 = rng.uniform(-1.0, 1.0, len(bodies))
    # world placement of every body at q0 (numpy, independent of loopdyn's kinematics)
    pose = {"universe": (np.eye(3), np.zeros(3))}
    for (name, parent, R, p, a), t in zip(bodies, q0, strict=True):
        Rp, pp = pose[parent]
        pose[name] = (Rp @ R @ _axis_rotation(a, t), pp + Rp @ p)
    tip_a, tip_b = f"a{na - 1}", f"b{n_joints - na - 1}"
    Ra, pa = pose[tip_a]
    Rb, pb = pose[tip_b]
    pred = (_rotation(rng), rng.uniform(-0.2, 0.2, 3))  # frame A on tip a
    RA, pA = Ra @ pred[0], pa + Ra @ pred[1]  # in the world at q0
    succ = (Rb.T @ RA, Rb.T @ (pA - pb))  # frame B on tip b, equal to A at q0
    return dict(bodies=bodies, inertias=inertias, q0=q0, tips=(tip_a, tip_b), pred=pred, succ=succ)


def long_loop_model(n_joints: int, kind: str, seed: int = 0) -> loopdyn.Model:
    """The builder's model of :func:`chain_spec` with a ``kind`` (``"point"``, ``"weld"``) loop."""
    s = chain_spec(n_joints, seed)
    m = loopdyn.Model(f"long_{kind}_{n_joints}")
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=InertiaWarning)
        for (name, parent, R, p, a), (mass, c, I) in zip(s["bodies"], s["inertias"], strict=True):
            m.add_body(name, parent, loopdyn.Revolute(tuple(a)), (R, p), loopdyn.Inertia(mass, c, I))
    m.add_loop("closure", s["tips"][0], s["tips"][1], kind, s["pred"], s["succ"])
    m.set_reference_configuration(s["q0"])  # the assembly search starts on the closed loop
    return m
