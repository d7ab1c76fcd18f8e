"""iLQR swings the MIT Humanoid's leg — five joints driven through geared rotors (explicit clusters:
the rotors' inertia and gyroscopic coupling are in the dynamics) — from hanging still to a target
posture, with the dynamics linearised by ``loopdyn.aba_derivatives`` at every knot; then the same
solver with the linearisation by central differences of ``loopdyn.aba``, for comparison.

Run ``python examples/ilqr_leg.py [out_dir]``: it prints the cost per iteration and the time per
iteration of both solvers, and writes ``ilqr_leg.png`` (cost against iteration).

Discretisation (semi-implicit Euler, step dt): ``v⁺ = v + dt · aba(q, v, u)``, ``q⁺ = q + dt · v⁺`` —
the leg's joints are revolute, so the tangent step is the coordinate step and
``∂q⁺/∂(q, v, u) = dt · ∂v⁺/∂(q, v, u)`` plus the identity in q.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

import loopdyn as ld

Q_TARGET = np.array([0.2, 0.1, -0.7, 1.1, -0.4])


class Problem:
    def __init__(self, horizon: int, dt: float = 0.01):
        self.model = ld.robots.mit_humanoid_leg()
        self.data = self.model.create_data()
        self.n = self.model.nv
        self.T, self.dt = horizon, dt
        n = self.n
        self.Qx = np.diag(np.r_[np.full(n, 1.0), np.full(n, 0.01)])  # running state cost
        self.Qf = np.diag(np.r_[np.full(n, 1e3), np.full(n, 10.0)])  # terminal
        self.R = 1e-3 * np.eye(n)
        self.x_goal = np.r_[Q_TARGET, np.zeros(n)]

    def step(self, x, u):
        n, dt = self.n, self.dt
        q, v = x[:n], x[n:]
        v1 = v + dt * ld.aba(self.model, self.data, q, v, u)
        return np.r_[q + dt * v1, v1]

    def linearize_analytic(self, x, u):
        n = self.n
        Aq, Av, Au = ld.aba_derivatives(self.model, self.data, x[:n], x[n:], u)
        return self._assemble(Aq, Av, Au)

    def linearize_differences(self, x, u, h: float = 1e-6):
        """∂q̈/∂(q, v, τ) by central differences of ``aba`` (2 · 3n calls)."""
        n = self.n
        q, v = x[:n], x[n:]
        aba = ld.aba
        cols = {"q": [], "v": [], "u": []}
        for j in range(n):
            e = np.zeros(n)
            e[j] = h
            m, d = self.model, self.data
            cols["q"].append((aba(m, d, q + e, v, u) - aba(m, d, q - e, v, u)) / (2 * h))
            cols["v"].append((aba(m, d, q, v + e, u) - aba(m, d, q, v - e, u)) / (2 * h))
            cols["u"].append((aba(m, d, q, v, u + e) - aba(m, d, q, v, u - e)) / (2 * h))
        return self._assemble(*(np.stack(cols[k], axis=1) for k in ("q", "v", "u")))

    def _assemble(self, Aq, Av, Au):
        n, dt = self.n, self.dt
        I = np.eye(n)
        dv = np.hstack([dt * Aq, I + dt * Av])  # ∂v⁺/∂x
        Fx = np.vstack([np.hstack([I, np.zeros((n, n))]) + dt * dv, dv])
        Fu = np.vstack([dt * dt * Au, dt * Au])
        return Fx, Fu

    def cost(self, X, U) -> float:
        e = X - self.x_goal
        running = 0.5 * self.dt * (np.einsum("ti,ij,tj->", e[:-1], self.Qx, e[:-1])
                                   + np.einsum("ti,ij,tj->", U, self.R, U))  # fmt: skip
        return float(running + 0.5 * e[-1] @ self.Qf @ e[-1])

    def rollout(self, x0, U):
        X = np.empty((self.T + 1, 2 * self.n))
        X[0] = x0
        for t in range(self.T):
            X[t + 1] = self.step(X[t], U[t])
        return X


def ilqr(problem: Problem, linearize, iterations: int) -> tuple[list[float], float]:
    """Plain iLQR (backward Riccati pass with Levenberg–Marquardt regularisation, line search).
    Returns the cost after each iteration and the mean seconds per iteration."""
    P, T, n = problem, problem.T, problem.n
    x0 = np.zeros(2 * n)
    U = np.tile(ld.gravity(P.model, P.data, x0[:n]), (T, 1))  # start by holding the leg still
    X = P.rollout(x0, U)
    costs = [P.cost(X, U)]
    mu, dt = 1e-6, P.dt
    start = time.perf_counter()
    for _ in range(iterations):
        lin = [linearize(X[t], U[t]) for t in range(T)]
        Vx = P.Qf @ (X[-1] - P.x_goal)
        Vxx = P.Qf.copy()
        K, k = np.empty((T, n, 2 * n)), np.empty((T, n))
        for t in range(T - 1, -1, -1):
            Fx, Fu = lin[t]
            lx, lu = dt * P.Qx @ (X[t] - P.x_goal), dt * P.R @ U[t]
            Qx_, Qu = lx + Fx.T @ Vx, lu + Fu.T @ Vx
            Qxx = dt * P.Qx + Fx.T @ Vxx @ Fx
            Quu = dt * P.R + Fu.T @ Vxx @ Fu + mu * np.eye(n)
            Qux = Fu.T @ Vxx @ Fx
            K[t] = -np.linalg.solve(Quu, Qux)
            k[t] = -np.linalg.solve(Quu, Qu)
            Vx = Qx_ + K[t].T @ Quu @ k[t] + K[t].T @ Qu + Qux.T @ k[t]
            Vxx = Qxx + K[t].T @ Quu @ K[t] + K[t].T @ Qux + Qux.T @ K[t]
            Vxx = 0.5 * (Vxx + Vxx.T)
        for alpha in (1.0, 0.5, 0.25, 0.125, 0.0625):
            Xn, Un = np.empty_like(X), np.empty_like(U)
            Xn[0] = x0
            for t in range(T):
                Un[t] = U[t] + alpha * k[t] + K[t] @ (Xn[t] - X[t])
                Xn[t + 1] = P.step(Xn[t], Un[t])
            c = P.cost(Xn, Un)
            if c < costs[-1]:
                X, U = Xn, Un
                mu = max(mu / 10.0, 1e-9)
                break
        else:
            mu *= 10.0
            c = costs[-1]
        costs.append(c)
    return costs, (time.perf_counter() - start) / max(iterations, 1)


def main(out_dir=".", horizon: int = 100, iterations: int = 25) -> dict:
    problem = Problem(horizon)
    problem.linearize_analytic(np.zeros(2 * problem.n), np.zeros(problem.n))  # compile outside the timing
    results = {}
    for name, lin in (("aba_derivatives", problem.linearize_analytic),
                      ("central differences", problem.linearize_differences)):  # fmt: skip
        costs, seconds = ilqr(problem, lin, iterations)
        results[name] = {"costs": np.array(costs), "seconds_per_iteration": seconds}
        print(f"{name:20s} cost {costs[0]:10.4g} → {costs[-1]:10.4g}  {seconds * 1e3:8.1f} ms per iteration")
    ratio = results["central differences"]["seconds_per_iteration"] / results["aba_derivatives"][
        "seconds_per_iteration"
    ]
    print(f"aba_derivatives: {ratio:.1f}× less time per iteration than central differences")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for name, r in results.items():
        ax.semilogy(r["costs"], marker="o" if name == "aba_derivatives" else "x", label=name)
    ax.set_xlabel("iLQR iteration")
    ax.set_ylabel("cost")
    ax.set_title(f"MIT Humanoid leg (geared rotors), {horizon} knots of {problem.dt} s")
    ax.legend()
    path = Path(out_dir) / "ilqr_leg.png"
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    print(f"wrote {path}")
    return results


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
