"""Cluster dynamics (C-RNEA, C-ABA, cluster CRBA) against dense textbook formulas on the spanning
tree (G, g from the sympy-based baselines), physical identities, the tree special case, and energy
conservation."""

from __future__ import annotations

import numpy as np
import pytest
from cluster_models import random_cluster_model
from reference_files import grbda_file

import loopdyn
from loopdyn.baselines import spanning_state

MODELS = [(1, 3, False), (2, 4, True), (3, 5, False), (4, 6, True), (5, 3, True), (6, 6, False), (7, 8, True)]


@pytest.fixture(params=MODELS, ids=[f"clusters{s}-{n}{'-floating' if f else ''}" for s, n, f in MODELS])
def model(request):
    return random_cluster_model(*request.param)


def close(a, b, what, rtol=1e-9, atol=1e-10):
    a, b = np.asarray(a), np.asarray(b)
    scale = max(1.0, float(np.max(np.abs(b))))
    err = float(np.max(np.abs(a - b))) if a.size else 0.0
    assert err <= atol + rtol * scale, f"{what}: max error {err:.3g} (scale {scale:.3g})"


def dense_oracle(model, q, v):
    """The spanning tree, its data and the spanning state with G, g from the sympy-based baselines
    (``spanning_state``: explicit clusters from their constant K, implicit ones from sympy of φ by the
    partition formula), not from the cluster code's state map."""
    tree = loopdyn.spanning_tree(model)
    td = tree.create_data()
    qs, vs, G, g = spanning_state(model, q, v)
    return tree, td, qs, vs, G, g


def test_against_the_projected_spanning_tree(model):
    """τ = Gᵀ RNEA_span(q, Gẏ, Gÿ + g); H = GᵀH_spanG; C = Gᵀ(C_span + H_span g); ÿ by projection."""
    d = model.create_data()
    rng = np.random.default_rng(11)
    for _ in range(10):
        q = loopdyn.random_configuration(model, rng)
        v, a = rng.normal(size=model.nv), rng.normal(size=model.nv)
        fext = rng.normal(size=(model.njoints, 6))
        tree, td, qs, vs, G, g = dense_oracle(model, q, v)
        Hs = loopdyn.crba(tree, td, qs)
        Cs = loopdyn.rnea(tree, td, qs, vs, np.zeros(tree.nv), fext)
        H, C = G.T @ Hs @ G, G.T @ (Cs + Hs @ g)
        close(loopdyn.crba(model, d, q), H, "H = GᵀH_span G", rtol=1e-12, atol=1e-12)
        close(loopdyn.rnea(model, d, q, v, a, fext), H @ a + C, "C-RNEA with f_ext")
        close(loopdyn.rnea(model, d, q, v, a), G.T @ loopdyn.rnea(tree, td, qs, vs, G @ a + g), "C-RNEA")
        tau = rng.normal(size=model.nv)
        close(loopdyn.aba(model, d, q, v, tau, fext), np.linalg.solve(H, tau - C), "C-ABA with f_ext")
        Cn = G.T @ (loopdyn.rnea(tree, td, qs, vs, np.zeros(tree.nv)) + Hs @ g)
        close(loopdyn.nonlinear_effects(model, d, q, v), Cn, "nonlinear effects")
        close(loopdyn.gravity(model, d, q), G.T @ loopdyn.gravity(tree, td, qs), "gravity")


def test_armature_enters_every_cluster_algorithm(model):
    """With armature A on the spanning joints: H = Gᵀ(H_span + A)G, and C-RNEA / C-ABA agree with it."""
    rng = np.random.default_rng(13)
    model.armature = rng.uniform(0.0, 0.5, model.spanning_nv)
    d = model.create_data()
    for _ in range(5):
        q = loopdyn.random_configuration(model, rng)
        v, a, tau = rng.normal(size=model.nv), rng.normal(size=model.nv), rng.normal(size=model.nv)
        tree, td, qs, vs, G, g = dense_oracle(model, q, v)
        assert np.array_equal(tree.armature, model.armature)
        Hs = loopdyn.crba(tree, td, qs)
        H, C = G.T @ Hs @ G, G.T @ (loopdyn.rnea(tree, td, qs, vs, np.zeros(tree.nv)) + Hs @ g)
        close(loopdyn.crba(model, d, q), H, "H with armature", rtol=1e-12, atol=1e-12)
        close(loopdyn.rnea(model, d, q, v, a), H @ a + C, "C-RNEA with armature")
        close(loopdyn.aba(model, d, q, v, tau), np.linalg.solve(H, tau - C), "C-ABA with armature")


def test_identities(model):
    d = model.create_data()
    rng = np.random.default_rng(12)
    for _ in range(10):
        q = loopdyn.random_configuration(model, rng)
        v, a = rng.normal(size=model.nv), rng.normal(size=model.nv)
        tau = loopdyn.rnea(model, d, q, v, a)
        close(loopdyn.aba(model, d, q, v, tau), a, "aba(rnea(a)) = a")
        H = loopdyn.crba(model, d, q)
        close(H, H.T, "H symmetric", rtol=0, atol=0)
        assert np.linalg.eigvalsh(H)[0] > 0, "H positive definite"
        close(H @ a + loopdyn.nonlinear_effects(model, d, q, v), tau, "rnea = H a + C")
        close(loopdyn.minverse(model, d, q) @ H, np.eye(model.nv), "minverse")


def test_tree_special_case_is_the_tree_algorithm():
    """Declaring a one-body cluster makes the model take the cluster path; the results must be the
    tree algorithms' (a tree is one body per cluster)."""
    from trees import random_tree

    rng = np.random.default_rng(5)
    for n in (3, 8, 15):
        lm = random_tree(rng, n, floating=bool(n % 2), with_pinocchio=False)
        lm = lm[0] if isinstance(lm, tuple) else lm
        cm = loopdyn.spanning_tree(lm)
        cm.add_cluster([cm.bodies[0].name])
        assert cm.has_constraints and cm.nv == lm.nv and cm.nq == lm.nq
        dt, dc = lm.create_data(), cm.create_data()
        for _ in range(5):
            q = loopdyn.random_configuration(lm, rng)
            v, a = rng.normal(size=lm.nv), rng.normal(size=lm.nv)
            f = rng.normal(size=(lm.njoints, 6))
            close(loopdyn.rnea(cm, dc, q, v, a, f), loopdyn.rnea(lm, dt, q, v, a, f), "rnea", 1e-12, 1e-12)
            close(loopdyn.aba(cm, dc, q, v, a, f), loopdyn.aba(lm, dt, q, v, a, f), "aba", 1e-12, 1e-12)
            close(loopdyn.crba(cm, dc, q), loopdyn.crba(lm, dt, q), "crba", 1e-12, 1e-12)


def _energy(model, q, v):
    """½ ẏᵀHẏ + potential energy (−Σ m gᵀ c over the spanning tree's bodies)."""
    d = model.create_data()
    H = loopdyn.crba(model, d, q)
    tree = loopdyn.spanning_tree(model)
    td = tree.create_data()
    qs, _ = loopdyn.to_spanning(model, q, v)
    loopdyn.forward_kinematics(tree, td, qs)
    U = 0.0
    for i, b in enumerate(tree.bodies, start=1):
        T = td.oMi[i]
        U -= b.inertia.mass * float(model.gravity @ (T[:3, :3] @ b.inertia.com + T[:3, 3]))
    return 0.5 * v @ H @ v + U


def _rk4(model, q, v, dt, steps):
    """Fixed-step RK4 on (positions, independent velocities): independent coordinates move with ẏ,
    the spanning positions of implicit clusters with q̇ = G ẏ (read from the workspace, where C-ABA
    leaves the spanning velocities)."""
    from loopdyn.model import layout as L

    d = model.create_data()
    zero = np.zeros(model.nv)
    qds = d.ic[0, L.C0_QDS]
    clusters = model.clusters().clusters

    def f(q, v):
        ddy = loopdyn.aba(model, d, q, v, zero)
        out = np.empty(model.nq)
        for c in clusters:
            if c.kind == 2:
                out[c.iq : c.iq + c.n] = [d.wc[qds + model.bodies[b - 1].idx_v] for b in c.bodies]
            else:  # independent coordinates of 1-DoF joints: q̇ = ẏ
                out[c.iq : c.iq + c.nq] = v[c.iv : c.iv + c.nv]
        return out, ddy

    for _ in range(steps):
        k1 = f(q, v)
        k2 = f(q + dt / 2 * k1[0], v + dt / 2 * k1[1])
        k3 = f(q + dt / 2 * k2[0], v + dt / 2 * k2[1])
        k4 = f(q + dt * k3[0], v + dt * k3[1])
        q = q + dt / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0])
        v = v + dt / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1])
    return q, v


@pytest.mark.parametrize("blocks", [("fourbar",), ("geared", "belt")], ids=["four-bar", "geared-belt"])
def test_passive_motion_conserves_energy_and_constraints(blocks):
    """A passive mechanism integrated for 2 s with RK4 (projection only at the start) conserves energy
    to 1e-8 relative and keeps φ ≤ 1e-9."""
    model = random_cluster_model(21, 3, False, blocks=blocks, plain=("revolute", "prismatic"))
    model.constraint_tolerance = 1e-4  # RK4's intermediate stages leave the constraints by O(h²)
    rng = np.random.default_rng(2)
    q = loopdyn.project_configuration(model, loopdyn.random_configuration(model, rng))
    v = rng.normal(size=model.nv)
    E0 = _energy(model, q, v)
    q1, v1 = _rk4(model, q, v, 1e-3, 2000)
    scale = max(abs(E0), 0.5 * v @ loopdyn.crba(model, model.create_data(), q) @ v)
    assert abs(_energy(model, q1, v1) - E0) <= 1e-8 * scale
    assert np.max(np.abs(loopdyn.constraint_residual(model, q1)), initial=0.0) <= 1e-9


# ---------------------------------------------------------------------------------------------
# the reference robots (URDF+ files beside the repository, as CI lays them out)
REFERENCE_FILES = ["four_bar", "revolute_rotor_chain", "mit_humanoid_leg", "mini_cheetah", "mit_humanoid",
                   "jvrc1_humanoid", "tello"]  # fmt: skip


def _reference_model(name):
    if name == "tello":
        from loopdyn.robots.tello_model import tello_humanoid

        return tello_humanoid(grbda_file("tello_humanoid.urdf"))
    return loopdyn.load_urdf(grbda_file(name), inertia="accept")


@pytest.mark.parametrize("name", REFERENCE_FILES)
def test_reference_robots_against_the_baselines(name):
    """C-RNEA, C-ABA and the cluster mass matrix equal the projection and Lagrange-multiplier
    baselines on the spanning tree (1e-9 relative), with external forces."""
    from loopdyn.baselines.lagrange import lagrange_forward_dynamics
    from loopdyn.baselines.projection import (
        projected_mass_matrix,
        projected_rnea,
        projection_forward_dynamics,
    )

    model = _reference_model(name)
    d = model.create_data()
    rng = np.random.default_rng(31)
    for _ in range(4):
        q = loopdyn.random_configuration(model, rng)
        v, a, tau = (rng.normal(size=model.nv) for _ in range(3))
        f = rng.normal(size=(model.njoints, 6))
        close(loopdyn.crba(model, d, q), projected_mass_matrix(model, q), f"{name}: H")
        close(loopdyn.rnea(model, d, q, v, a, f), projected_rnea(model, q, v, a, f), f"{name}: C-RNEA")
        ddy = loopdyn.aba(model, d, q, v, tau, f)
        close(ddy, projection_forward_dynamics(model, q, v, tau, f), f"{name}: C-ABA vs projection")
        lm = lagrange_forward_dynamics(model, q, v, tau, f, method="ltl")
        close(ddy, lm, f"{name}: C-ABA vs LTL multipliers")
