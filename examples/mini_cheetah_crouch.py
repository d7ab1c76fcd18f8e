"""Mini Cheetah standing, crouching and standing up again, feet held on the ground.

The MIT Mini Cheetah has a geared motor (a rotor turning N times faster than its joint) on each of its
12 joints; with its four feet held on the ground, every leg closes a loop through the ground. A PD
controller tracks a crouch-and-rise joint trajectory; the feet are point contacts solved exactly by
:func:`loopdyn.constrained_forward_dynamics`. The robot is simulated twice:

* **exact**: the cluster model (each rotor a body of its own, tied to its joint by the gear
  constraint, C-ABA);
* **approximate**: the usual reflected-inertia model (rotors dropped, ``N² I_rotor`` added to the
  joints' diagonal as armature: :func:`loopdyn.robots.approximate`).

Integration: semi-implicit Euler (``v += dt·a``, then ``q = integrate(q, dt·v)``), the velocity kept on
the contact constraints by a mass-weighted projection (a plastic contact impulse, ``J v = 0``), and the
configuration projected on the loop constraints for models with implicit loops (a no-op here: the
gear constraints are linear). The energy balance ``E(t) − E(0) = ∫ τ·v dt`` (kinetic + gravity
potential energy against the work of the motors; the contacts do no work while ``J v = 0``) measures
the integration error.

Run ``python examples/mini_cheetah_crouch.py [output_dir]``: it prints a summary and writes
``mini_cheetah_crouch.png`` (joint torques, base height and energy balance of both models).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

import loopdyn as ld

LEGS = ("FL", "FR", "HL", "HR")
SHANK = 0.19  # m: the foot point on the knee link, (0, 0, −0.19) in its frame
STAND = (0.0, -0.8, 1.6)  # (abad, hip, knee) of every leg
CROUCH = (0.0, -1.2, 2.3)
KP, KD = 80.0, 2.0  # N·m/rad, N·m·s/rad
DT = 1e-3
DURATION = 2.0


def desired_joints(t: float) -> np.ndarray:
    """The 12 desired joint angles at time t: stand, crouch (0.3–0.9 s), hold, rise (1.2–1.8 s)."""

    def blend(t0, t1):
        s = np.clip((t - t0) / (t1 - t0), 0.0, 1.0)
        return 0.5 - 0.5 * np.cos(np.pi * s)

    w = blend(0.3, 0.9) - blend(1.2, 1.8)
    leg = (1 - w) * np.array(STAND) + w * np.array(CROUCH)
    return np.tile(leg, 4)


def feet() -> list[ld.Constraint]:
    return [ld.Constraint(f"{leg}_knee_link", "3d", (np.eye(3), [0.0, 0.0, -SHANK])) for leg in LEGS]


def _potential_energy(model, q) -> float:
    """−Σ m_i g·c_i over every body (rotors included), from the spanning tree's kinematics."""
    tree = ld.spanning_tree(model) if model.has_constraints else model
    qs = ld.to_spanning(model, q, np.zeros(model.nv))[0] if model.has_constraints else q
    data = tree.create_data()
    ld.forward_kinematics(tree, data, qs)
    g = model.gravity
    energy = 0.0
    for b in tree.bodies:
        X = ld.frame_placement(tree, data, tree.frame_names.index(b.joint_name))
        energy -= b.inertia.mass * g @ (X[:3, :3] @ b.inertia.com + X[:3, 3])
    return float(energy)


def standing_configuration(model) -> np.ndarray:
    """The standing posture with the base raised so that the feet touch the ground (z = 0)."""
    q = ld.neutral(model)
    q[7:19] = desired_joints(0.0)
    tree = ld.spanning_tree(model) if model.has_constraints else model
    qs = ld.to_spanning(model, q, np.zeros(model.nv))[0] if model.has_constraints else q
    data = tree.create_data()
    ld.forward_kinematics(tree, data, qs)
    lowest = min((ld.frame_placement(tree, data, f"{leg}_knee_link") @ [0, 0, -SHANK, 1])[2] for leg in LEGS)
    q[2] -= lowest
    return q


def simulate(model, duration: float = DURATION, dt: float = DT) -> dict:
    """Simulate ``model`` (exact or approximate Mini Cheetah); returns the time series."""
    data = model.create_data()
    contacts = feet()
    q = standing_configuration(model)
    v = np.zeros(model.nv)
    steps = int(round(duration / dt))
    out = {key: [] for key in ("t", "tau", "height", "energy", "work", "drift")}
    work = 0.0
    foot0 = None
    for k in range(steps + 1):
        t = k * dt
        tau = np.zeros(model.nv)
        tau[6:] = KP * (desired_joints(t) - q[7:19]) - KD * v[6:]
        if k % 10 == 0 or k == steps:
            H = ld.crba(model, data, q)
            energy = 0.5 * v @ H @ v + _potential_energy(model, q)
            feet_now = _feet_positions(model, q)
            foot0 = feet_now if foot0 is None else foot0
            for key, value in (
                ("t", t),
                ("tau", tau[6:].copy()),
                ("height", q[2]),
                ("energy", energy),
                ("work", work),
                ("drift", float(np.max(np.abs(feet_now - foot0)))),
            ):
                out[key].append(value)
        if k == steps:
            break
        a, _ = ld.constrained_forward_dynamics(model, data, q, v, tau, contacts)
        v_new = v + dt * a
        v_new = _project_velocity(model, data, q, v_new, contacts)
        work += dt * float(tau @ v_new)
        v = v_new
        q = ld.integrate(model, q, dt * v)
        if model.has_constraints:
            q = ld.project_configuration(model, q)  # implicit loops only; a no-op for gears
    return {key: np.array(value) for key, value in out.items()}


def _project_velocity(model, data, q, v, contacts) -> np.ndarray:
    """The velocity nearest to ``v`` in the kinetic-energy metric with ``J v = 0`` (a plastic contact
    impulse): ``v − H⁻¹Jᵀ (J H⁻¹ Jᵀ)⁻¹ J v``."""
    J = ld.constraint_jacobian(model, data, q, contacts)
    Hinv = ld.minverse(model, data, q)
    HJ = Hinv @ J.T
    return v - HJ @ np.linalg.solve(J @ HJ, J @ v)


def _feet_positions(model, q) -> np.ndarray:
    tree = ld.spanning_tree(model) if model.has_constraints else model
    qs = ld.to_spanning(model, q, np.zeros(model.nv))[0] if model.has_constraints else q
    data = tree.create_data()
    ld.forward_kinematics(tree, data, qs)
    return np.array(
        [(ld.frame_placement(tree, data, f"{leg}_knee_link") @ [0, 0, -SHANK, 1])[:3] for leg in LEGS]
    )


def plot(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, 1, figsize=(8, 9), sharex=True)
    styles = {"exact": "-", "approximate": "--"}
    for name, r in results.items():
        for j, label in ((1, "FL hip"), (2, "FL knee")):
            axes[0].plot(r["t"], r["tau"][:, j], styles[name], label=f"{label} ({name})")
        axes[1].plot(r["t"], r["height"], styles[name], label=name)
        axes[2].plot(r["t"], r["energy"] - r["energy"][0] - r["work"], styles[name], label=name)
    axes[0].set_ylabel("joint torque [N·m]")
    axes[1].set_ylabel("base height [m]")
    axes[2].set_ylabel("E(t) − E(0) − ∫τ·v dt [J]")
    axes[2].set_xlabel("time [s]")
    for ax in axes:
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    axes[0].set_title("Mini Cheetah crouch: exact cluster dynamics vs reflected-inertia approximation")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(output_dir: str | Path = ".", duration: float = DURATION) -> dict:
    exact = ld.robots.mini_cheetah()
    approximate = ld.robots.approximate(exact).tree  # same coordinates: the rotors' are dependent
    results = {}
    for name, model in (("exact", exact), ("approximate", approximate)):
        start = time.perf_counter()
        results[name] = r = simulate(model, duration)
        swing = r["energy"] - r["energy"][0] - r["work"]
        print(
            f"{name:12s}: {len(r['t']) - 1} samples in {time.perf_counter() - start:.1f} s; base height "
            f"{r['height'][0]:.4f} → min {r['height'].min():.4f} → {r['height'][-1]:.4f} m; energy balance "
            f"error max {np.max(np.abs(swing)):.2e} J (motor work ranges over "
            f"{np.ptp(r['work']):.2f} J); foot drift max {r['drift'].max():.1e} m"
        )
    diff = np.max(np.abs(results["exact"]["tau"] - results["approximate"]["tau"]))
    print(f"largest joint-torque difference exact vs approximate: {diff:.3f} N·m")
    path = Path(output_dir) / "mini_cheetah_crouch.png"
    plot(results, path)
    print(f"wrote {path}")
    return results


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
