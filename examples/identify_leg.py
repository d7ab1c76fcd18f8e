"""Identifying the inertial parameters of the MIT Humanoid leg, geared rotors included.

Joint torques are simulated along an exciting trajectory (a five-harmonic Fourier series per joint, as
is usual for identification) with ``loopdyn.batch.rnea`` on the exact model (five links, five geared
rotors: explicit clusters), and 1 % Gaussian noise added. The base parameters (``ld.identifiable_parameters``)
are then fitted by least squares on ``Y_β β = τ`` (``ld.batch.regressor``), and compared with the true
ones; the same fit is made with the "approximate" model (the rotors dropped, their reflected inertia
N² I_rotor kept as a diagonal armature: what ignoring the rotors' gyroscopic coupling with the links
costs). Both fits predict the torques of a second trajectory; a PNG shows the measured torque of one
joint against both predictions.

Usage: ``python examples/identify_leg.py [output folder]``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

import loopdyn as ld


def fourier_trajectory(nv: int, t: np.ndarray, rng, period: float, harmonics: int = 5, scale: float = 0.4):
    """q, q̇, q̈ (len(t) × nv) of ``q_j(t) = Σ_l (a_jl sin(l ω t) − b_jl cos(l ω t)) / (l ω)``,
    ω = 2π / period: periodic, with velocities of the order of ``scale · harmonics``."""
    w = 2.0 * np.pi / period
    a, b = rng.uniform(-scale, scale, size=(2, nv, harmonics))
    Q, V, A = (np.zeros((t.size, nv)) for _ in range(3))
    for l in range(1, harmonics + 1):
        s, c = np.sin(l * w * t)[:, None], np.cos(l * w * t)[:, None]
        al, bl = a[:, l - 1], b[:, l - 1]
        Q += (al * s - bl * c) / (l * w)
        V += al * c + bl * s
        A += l * w * (-al * s + bl * c)
    return Q, V, A


def fit(Y: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """Least squares on the stacked rows: β̂ = argmin ‖Y β − τ‖."""
    return np.linalg.lstsq(Y.reshape(-1, Y.shape[-1]), tau.ravel(), rcond=None)[0]


def rms(x) -> float:
    return float(np.sqrt(np.mean(np.square(x))))


def main(out_dir=".", duration: float = 4.0, rate: float = 250.0, noise: float = 0.01, seed: int = 0) -> dict:
    out_dir = Path(out_dir)
    rng = np.random.default_rng(seed)
    leg = ld.robots.mit_humanoid_leg()
    approx = ld.robots.approximate(leg)  # .tree: the links, reflected inertia as armature
    t = np.arange(0.0, duration, 1.0 / rate)

    # measurements: exact torques along an exciting trajectory, plus noise
    Q, V, A = fourier_trajectory(leg.nv, t, rng, period=duration)
    tau_true = ld.batch.rnea(leg, Q, V, A)
    sigma = noise * np.sqrt(np.mean(tau_true**2, axis=0))
    tau = tau_true + sigma * rng.standard_normal(tau_true.shape)

    # the exact model's base parameters, fitted
    base = ld.identifiable_parameters(leg, rng=seed)
    beta_true = base.parameters(ld.inertial_parameters(leg))
    Yb = ld.batch.regressor(leg, Q, V, A)[:, :, base.columns]
    beta = fit(Yb, tau)

    # the approximate model's base parameters (its armature included), fitted to the same torques
    tree = approx.tree
    St = [approx.state(q, v, a) for q, v, a in zip(Q, V, A, strict=True)]
    Qt, Vt, At = (np.array([s[i] for s in St]) for i in range(3))
    base_a = ld.identifiable_parameters(tree, rng=seed, armature=True)
    Ya = ld.batch.regressor(tree, Qt, Vt, At, armature=True)[:, :, base_a.columns]
    beta_a = fit(Ya, tau)

    # validation: a second trajectory, torques predicted by both fits
    Q2, V2, A2 = fourier_trajectory(leg.nv, t, rng, period=duration)
    tau2 = ld.batch.rnea(leg, Q2, V2, A2) + sigma * rng.standard_normal((t.size, leg.nv))
    pred = ld.batch.regressor(leg, Q2, V2, A2)[:, :, base.columns] @ beta
    S2 = [approx.state(q, v, a) for q, v, a in zip(Q2, V2, A2, strict=True)]
    pred_a = ld.batch.regressor(tree, *(np.array([s[i] for s in S2]) for i in range(3)), armature=True)[
        :, :, base_a.columns
    ] @ beta_a

    err = np.abs(beta - beta_true) / np.maximum(np.abs(beta_true), 1e-3 * np.abs(beta_true).max())
    print(f"MIT Humanoid leg: {leg.nbodies} bodies ({len(base.parameter_names)} parameters), {base.rank} "
          f"base parameters; {t.size} samples, noise {100 * noise:g} % of each joint's RMS torque")
    print(f"{'base parameter':60s} {'true':>11s} {'identified':>11s}")
    for i in np.argsort(-np.abs(beta_true))[:12]:
        e = base.expressions[i]
        print(f"{e[:57] + '...' if len(e) > 60 else e:60s} {beta_true[i]:11.5f} {beta[i]:11.5f}")
    print(f"... median relative error over the {base.rank}: {np.median(err):.2e}")
    res, res_a = rms(pred - tau2), rms(pred_a - tau2)
    print(f"validation RMS torque error: exact model {res:.4f} N·m (noise {rms(sigma):.4f}), "
          f"approximate model ({base_a.rank} base parameters) {res_a:.4f} N·m")  # fmt: skip

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    j = leg.velocity_names.index("hipy_to_knee_link")
    fig, ax = plt.subplots(figsize=(8, 3.5))
    ax.plot(t, tau2[:, j], color="0.6", lw=2, label="measured")
    ax.plot(t, pred[:, j], "C0", lw=1, label=f"identified, exact model (RMS err {res:.3f})")
    ax.plot(t, pred_a[:, j], "C3--", lw=1, label=f"identified, approximate model (RMS err {res_a:.3f})")
    ax.set_xlabel("t [s]")
    ax.set_ylabel("knee torque [N·m]")
    ax.legend(fontsize=8)
    fig.tight_layout()
    png = out_dir / "identify_leg.png"
    fig.savefig(png, dpi=100)
    plt.close(fig)
    print(f"wrote {png}")
    return {"beta": beta, "beta_true": beta_true, "relative_error": err, "rms": res, "rms_approximate": res_a,
            "noise": rms(sigma), "rank": base.rank}  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
