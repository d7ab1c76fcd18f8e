"""The Delassus matrix of models with loops: cluster PV-OSIMr, C-EFPA, dense and projected against
oracles built on the spanning tree (J_span G (GᵀH_spanG)⁻¹ Gᵀ J_spanᵀ with G and the spanning positions
from the sympy-based baselines, not the cluster code, and frame Jacobians of the tree algorithms) and
against C-ABA (columns of J H⁻¹ Jᵀ from forward dynamics, no mass matrix), on random cluster models
and the reference robots; constrained forward dynamics against one KKT solve from Pinocchio alone."""

from __future__ import annotations

import numpy as np
import pytest
from cluster_models import random_cluster_model
from reference_files import grbda_file

import loopdyn
from loopdyn import Constraint, constraint_jacobian, damped_delassus_inverse, delassus
from loopdyn.algorithms.cluster_pv_osimr import cluster_branching
from loopdyn.baselines.constraints import explicit_G, spanning_positions
from loopdyn.delassus_methods import CLUSTER_METHODS
from loopdyn.errors import InputError, ShapeError

TOL = 1e-10
EXACT = ("c-pv-osimr", "c-efpa", "dense", "projected")
MODELS = [(1, 3, False), (2, 4, True), (3, 5, False), (4, 6, True), (5, 3, True), (6, 6, False), (7, 8, True)]


def rel_err(a, b) -> float:
    return float(np.abs(a - b).max() / max(1.0, np.abs(b).max())) if b.size else 0.0


def random_constraints(rng, model, n):
    """Constraints on random bodies (rotors, loop bodies and the world included), random kinds and
    placements, some repeated on one body."""
    names = ["universe"] + [b.name for b in model.bodies]
    out = []
    for k in range(n):
        name = out[-1].body if (k and rng.random() < 0.3) else names[rng.integers(1, len(names))]
        if rng.random() < 0.05:
            name = "universe"
        u = rng.random()
        kind = "6d" if u < 0.4 else "3d" if u < 0.8 else rng.normal(size=(int(rng.integers(1, 8)), 6))
        T = np.eye(4)
        if rng.random() < 0.8:
            A = np.linalg.qr(rng.normal(size=(3, 3)))[0]
            T[:3, :3] = A * np.sign(np.linalg.det(A))
            T[:3, 3] = rng.normal(size=3) * 0.2
        out.append(Constraint(name, kind, T))
    return out


def spanning_oracle(model, q, cons):
    """J (GᵀH_spanG)⁻¹ Jᵀ with J = J_span G: J_span from the spanning tree's LOCAL frame Jacobians,
    G and the spanning positions from the baselines (explicit clusters: their constant K; implicit
    ones: sympy of φ — not the cluster code's state map), H_span from the tree CRBA; np.linalg.solve."""
    tree = loopdyn.spanning_tree(model)
    td = tree.create_data()
    qs = spanning_positions(model, q)
    G, _ = explicit_G(model, q, np.zeros(model.nv))
    rows = []
    for c in cons:
        if c.body == "universe":
            rows.append(np.zeros((c.dim, tree.nv)))
            continue
        R, p = (np.eye(3), np.zeros(3)) if c.placement is None else c.placement
        fid = tree.add_frame(f"_c{len(tree.frames)}", c.body, (np.reshape(R, (3, 3)), np.array(p)))
        td = tree.create_data()
        Jf = loopdyn.frame_jacobian(tree, td, qs, fid, "local")
        rows.append(c.selection() @ Jf)
    J = np.vstack(rows) @ G
    H = G.T @ loopdyn.crba(tree, td, qs) @ G
    return J @ np.linalg.solve(H, J.T), J


def aba_columns(model, data, q, J):
    """Column k of J H⁻¹ Jᵀ = J (ÿ(τ = Jᵀe_k) − ÿ(τ = 0)) at zero velocity: C-ABA, no mass matrix."""
    z = np.zeros(model.nv)
    a0 = loopdyn.aba(model, data, q, z, z)
    return np.array([J @ (loopdyn.aba(model, data, q, z, J.T @ e) - a0) for e in np.eye(J.shape[0])]).T


@pytest.mark.parametrize("seed,blocks,floating", MODELS)
def test_every_method_equals_the_spanning_tree_oracle(seed, blocks, floating):
    model = random_cluster_model(seed, blocks, floating)
    d = model.create_data()
    rng = np.random.default_rng(100 + seed)
    for trial in range(3):
        cons = random_constraints(rng, model, int(rng.integers(1, 7)))
        q = loopdyn.random_configuration(model, rng)
        ref, J = spanning_oracle(model, q, cons)
        assert rel_err(constraint_jacobian(model, d, q, cons), J) < TOL
        assert rel_err(aba_columns(model, d, q, J), ref) < 1e-9  # the oracle itself, by C-ABA
        for method in EXACT:
            G = delassus(model, d, q, cons, method=method)
            assert G.shape == ref.shape
            assert rel_err(G, ref) < TOL, f"{method}, trial {trial}: {rel_err(G, ref):.2e}"
            assert np.array_equal(G, G.T), method
            if G.size:
                assert np.linalg.eigvalsh(G).min() >= -1e-10 * max(1.0, np.abs(G).max())


def test_default_method_and_aliases():
    model = random_cluster_model(3, 5)
    d = model.create_data()
    rng = np.random.default_rng(1)
    q = loopdyn.random_configuration(model, rng)
    cons = random_constraints(rng, model, 4)
    ref = delassus(model, d, q, cons, method="c-pv-osimr")
    assert CLUSTER_METHODS[0] == "c-pv-osimr"
    assert np.array_equal(delassus(model, d, q, cons), ref)
    assert np.array_equal(delassus(model, d, q, cons, method="pv-osimr"), ref)
    assert np.array_equal(delassus(model, d, q, cons, method="efpa"), delassus(model, d, q, cons, "c-efpa"))


def test_redundant_sets_many_rows_and_blocks_in_user_order():
    """Four points and two welds on one body, a 12-row K: m ≫ nv, rank-deficient; permuting the
    constraints permutes the blocks."""
    model = random_cluster_model(7, 8, True)
    d = model.create_data()
    rng = np.random.default_rng(5)
    q = loopdyn.random_configuration(model, rng)
    body = model.bodies[-1].name
    other = model.bodies[len(model.bodies) // 2].name
    cons = [Constraint(body, "3d", (np.eye(3), rng.normal(size=3))) for _ in range(4)]
    cons += [Constraint(body, "6d"), Constraint(other, rng.normal(size=(12, 6))), Constraint(other, "6d")]
    ref, _ = spanning_oracle(model, q, cons)
    assert ref.shape[0] > model.nv
    perm = rng.permutation(len(cons))
    rows = np.concatenate([np.arange(sum(c.dim for c in cons[:k]), sum(c.dim for c in cons[: k + 1]))
                           for k in perm])  # fmt: skip
    for method in ("c-pv-osimr", "c-efpa"):
        G = delassus(model, d, q, cons, method=method)
        assert rel_err(G, ref) < TOL, method
        Gp = delassus(model, d, q, [cons[k] for k in perm], method=method)
        assert rel_err(Gp, G[np.ix_(rows, rows)]) < 1e-13, method


def test_scratch_larger_than_the_stack_buffer():
    """C-EFPA keeps its per-call rows (2 · m · depth · 6 n_b floats) on the kernel's stack up to
    ``STACK_FLOATS`` and in a heap buffer past it: twelve 6-D constraints down a belt
    chain (six belt clusters of four bodies) need the heap, two fit on the stack; both equal the
    spanning-tree oracle."""
    from loopdyn.algorithms.borrow import STACK_FLOATS

    model = loopdyn.robots.pbt_chain(12, seed=3)
    d = model.create_data()
    rng = np.random.default_rng(8)
    q = loopdyn.random_configuration(model, rng)
    deep = [b.name for b in model.bodies][-12:]
    clusters = model.clusters().clusters
    depth = len(clusters)  # a chain: the deepest cluster's depth
    nb = max(len(c.bodies) for c in clusters)
    for names in (deep[:2], deep):
        cons = [Constraint(n, "6d", (np.eye(3), rng.normal(size=3) * 0.1)) for n in names]
        m = 6 * len(cons)
        scratch = 2 * m * (depth + 1) * 6 * nb
        assert (scratch > STACK_FLOATS) == (len(names) == 12)
        ref, _ = spanning_oracle(model, q, cons)
        for method in ("c-pv-osimr", "c-efpa"):
            assert rel_err(delassus(model, d, q, cons, method=method), ref) < TOL, method


def test_constraints_on_the_world_and_separate_subtrees_give_exact_zero_blocks():
    model = loopdyn.Model("two_subtrees")
    rng = np.random.default_rng(2)
    for side in ("a", "b"):
        model.add_body(
            f"{side}1", 0, loopdyn.Revolute((0, 0, 1)), None, loopdyn.Inertia(1.0, (0.1, 0, 0), np.eye(3))
        )
        model.add_body(
            f"{side}r",
            0,
            loopdyn.Revolute((0, 0, 1)),
            None,
            loopdyn.Inertia(0.1, (0, 0, 0), np.eye(3) * 1e-3),
        )
        place = (np.eye(3), np.array([0.3, 0, 0]))
        inertia = loopdyn.Inertia(1.0, (0.1, 0, 0), np.eye(3))
        model.add_body(f"{side}2", f"{side}1", loopdyn.Revolute((0, 1, 0)), place, inertia)
        model.add_coupling(f"{side}gear", f"{side}1", f"{side}r", 6.0)
    d = model.create_data()
    q = loopdyn.random_configuration(model, rng)
    cons = [
        Constraint("a2", "6d"),
        Constraint("universe", "3d"),
        Constraint("b2", "3d"),
        Constraint("ar", "6d"),
    ]
    ref, _ = spanning_oracle(model, q, cons)
    for method in ("c-pv-osimr", "c-efpa"):
        G = delassus(model, d, q, cons, method=method)
        assert rel_err(G, ref) < TOL
        assert not G[6:9].any() and not G[:, 6:9].any()  # the world
        assert not G[:6, 9:12].any() and not G[9:12, 12:].any()  # a and b subtrees
        assert np.abs(G[:6, 12:]).max() > 1e-3  # a2 and the rotor of its parent joint are coupled


def test_moving_the_floating_base_leaves_local_constraints_unchanged():
    model = random_cluster_model(4, 6, True)
    d = model.create_data()
    rng = np.random.default_rng(8)
    q = loopdyn.random_configuration(model, rng)
    cons = random_constraints(rng, model, 4)
    cons = [c for c in cons if c.body != "universe"]
    G = delassus(model, d, q, cons)
    q2 = q.copy()
    q2[:3] += rng.normal(size=3) * 5.0
    u = rng.normal(size=4)
    q2[3:7] = u / np.linalg.norm(u)
    assert rel_err(delassus(model, d, q2, cons), G) < 1e-12


def test_damped_inverse_on_a_model_with_loops():
    model = random_cluster_model(2, 4, True)
    d = model.create_data()
    rng = np.random.default_rng(3)
    q = loopdyn.random_configuration(model, rng)
    cons = random_constraints(rng, model, 5)
    G = delassus(model, d, q, cons, method="dense")
    for mu in (1e-1, 1e-4):
        ref = np.linalg.inv(G + mu * np.eye(G.shape[0]))
        for method in ("c-pv-osimr", "c-efpa"):
            assert rel_err(damped_delassus_inverse(model, d, q, cons, mu, method=method), ref) < 1e-9


def test_approximate_is_efpa_on_the_reflected_inertia_tree():
    """ "approximate" = J_tree (H_tree + diag(N² I_rot))⁻¹ J_treeᵀ on the independent tree, which
    differs from the exact matrix by the rotors' gyroscopic coupling."""
    model = loopdyn.robots.mini_cheetah()
    d = model.create_data()
    rng = np.random.default_rng(4)
    q = loopdyn.random_configuration(model, rng)
    cons = [
        Constraint("FR_knee_link", "3d", (np.eye(3), np.array([0.0, 0.0, -0.2]))),
        Constraint("HL_hip_link", "6d"),
    ]
    A = delassus(model, d, q, cons, method="approximate")
    am = loopdyn.baselines.approximate_model(model)
    qt, _ = am.state(q)
    td = am.tree.create_data()
    H = loopdyn.crba(am.tree, td, qt)
    J = constraint_jacobian(am.tree, td, qt, cons)
    assert rel_err(A, J @ np.linalg.solve(H, J.T)) < TOL
    exact = delassus(model, d, q, cons)
    assert 1e-6 < rel_err(A, exact) < 0.2  # close, not exact
    with pytest.raises(InputError, match="rotor"):
        delassus(model, d, q, [Constraint("FR_knee_rotor", "3d")], method="approximate")


def test_fig1_branching_structure_and_erratum_e1():
    """The paper's Fig. 1 (spec §2.2): links 1–6, π = (0, 1, 2, 3, 4, 2), EEs 7, 8, 9 on 6, 3, 5."""
    has_es, in_n, chain, D, A = cluster_branching([0, 1, 2, 3, 4, 2], [6, 3, 5])
    assert {x for x in range(10) if in_n[x]} == {0, 2, 3, 7, 8, 9}
    assert D[1:] == [2, 2, 3, 9, 9, 7, 7, 8, 9]
    assert A[1:] == [0, 0, 2, 3, 3, 2, 2, 3, 3]
    # E1: link 1 with an unconstrained leaf 2 and a child 3 carrying EE 4
    has_es, in_n, chain, D, A = cluster_branching([0, 1, 1], [3])
    assert not in_n[2] and not has_es[2]
    assert D[1] == 4 and chain[1] == 3


def test_errors_name_the_problem():
    model = random_cluster_model(3, 5)
    d = model.create_data()
    q = loopdyn.random_configuration(model, np.random.default_rng(0))
    cons = [Constraint(model.bodies[-1].name, "3d")]
    with pytest.raises(ShapeError):
        delassus(model, d, q[:-1], cons)
    bad = q.copy()
    bad[0] = np.nan
    with pytest.raises(InputError):
        delassus(model, d, bad, cons)
    with pytest.raises(KeyError, match="nope"):
        delassus(model, d, q, [Constraint("nope", "3d")])
    with pytest.raises(InputError, match="method"):
        delassus(model, d, q, cons, method="magic")


REFERENCE_ROBOTS = ["mini_cheetah", "mit_humanoid", "jvrc1_humanoid", "tello_humanoid"]


@pytest.mark.parametrize("name", REFERENCE_ROBOTS)
def test_reference_robots(name):
    """Feet and hands of the URDF+ reference robots: cluster PV-OSIMr = C-EFPA = projected."""
    if name == "tello_humanoid":
        from loopdyn.robots.tello_model import tello_humanoid

        model = tello_humanoid(grbda_file("tello_humanoid.urdf"))
    else:
        model = loopdyn.load_urdf(grbda_file(name), inertia="accept")
    d = model.create_data()
    rng = np.random.default_rng(11)
    parents = {b.parent for b in model.bodies}
    leaves = [b.name for k, b in enumerate(model.bodies) if k + 1 not in parents and "rotor" not in b.name][
        :6
    ]
    cons = [
        Constraint(n, "6d" if k % 2 else "3d", (np.eye(3), rng.normal(size=3) * 0.05))
        for k, n in enumerate(leaves)
    ]
    for _ in range(2):
        q = loopdyn.random_configuration(model, rng)
        ref = loopdyn.baselines.projected_delassus(model, q, cons)  # G by sympy, independent
        for method in ("c-pv-osimr", "c-efpa", "dense", "projected"):
            assert rel_err(delassus(model, d, q, cons, method=method), ref) < TOL, method


@pytest.mark.parametrize("seed,blocks,floating", [(2, 4, True), (4, 6, True), (6, 6, False)])
def test_constrained_forward_dynamics_with_loops_solves_the_kkt_system(seed, blocks, floating):
    """Feet on the ground of a robot with loops: (ÿ, λ) equal one KKT solve from Pinocchio alone on the
    spanning tree (:class:`loop_oracles.SpanningPinocchio`: loop and contact rows from frame Jacobians,
    biases from classical accelerations, couplings from their ratios, implicit rows by sympy); the
    constraint accelerations come out as desired."""
    from loop_oracles import SpanningPinocchio

    from loopdyn.contact import constrained_forward_dynamics, constraint_acceleration

    model = random_cluster_model(seed, blocks, floating)
    d = model.create_data()
    rng = np.random.default_rng(40 + seed)
    names = [b.name for b in model.bodies]
    cons = [Constraint(names[-1], "3d", (np.eye(3), rng.normal(size=3) * 0.1))]
    cons.append(Constraint(names[len(names) // 2], "6d" if floating else "3d"))
    oracle = SpanningPinocchio(model)
    for _ in range(2):
        q = loopdyn.random_configuration(model, rng)
        v, tau = rng.normal(size=model.nv), rng.normal(size=model.nv)
        f = rng.normal(size=(model.njoints, 6))
        m = sum(c.dim for c in cons)
        desired = rng.normal(size=m)
        ddy, lam = constrained_forward_dynamics(model, d, q, v, tau, cons, desired=desired, f_ext=f)
        ddy_r, lam_r = oracle.forward_dynamics(q, v, tau, cons, desired, 0.0, f)
        assert rel_err(ddy, ddy_r) < 1e-9
        assert rel_err(lam, lam_r) < 1e-9
        Jc, a_span = oracle.last["Jc"], oracle.last["a_span"]  # spanning-tree rows and accelerations
        # J ÿ + γ = k: the terms J ÿ can be 10⁴ × k here (ÿ up to 2·10⁴), so the residual is measured
        # relative to the size of the terms that cancel, not to k alone
        scale = max(1.0, float(np.max(np.abs(Jc) @ np.abs(a_span))))
        resid = np.abs(constraint_acceleration(model, d, q, v, ddy, cons) - desired).max()
        assert resid / scale < 1e-12


@pytest.mark.parametrize("seed,blocks,floating", [(2, 4, True), (3, 5, False)])
def test_frame_jacobians_of_a_model_with_loops(seed, blocks, floating):
    """frame_jacobian on a model with loops = the spanning tree's frame Jacobian times G, in the three
    references."""
    model = random_cluster_model(seed, blocks, floating)
    d = model.create_data()
    tree = loopdyn.spanning_tree(model)
    td = tree.create_data()
    rng = np.random.default_rng(seed)
    for _ in range(3):
        q = loopdyn.random_configuration(model, rng)
        qs, _ = loopdyn.to_spanning(model, q, np.zeros(model.nv))
        G = np.array([loopdyn.to_spanning(model, q, e)[1] for e in np.eye(model.nv)]).T
        for body in (model.bodies[-1].name, model.bodies[len(model.bodies) // 2].name):
            for ref in ("local", "world", "local_world_aligned"):
                J = loopdyn.frame_jacobian(model, d, q, body, ref)
                assert rel_err(J, loopdyn.frame_jacobian(tree, td, qs, body, ref) @ G) < 1e-12, ref


def test_branching_cluster_with_several_ports():
    """A geared cluster {link, rotor} whose link and rotor both carry a child subtree with a
    constraint, plus constraints on the rotor itself and on a belt cluster below: the branching
    cluster's space spans two ports (link and rotor)."""
    m = loopdyn.Model("ports")
    rng = np.random.default_rng(9)

    def inertia():
        return loopdyn.Inertia(
            rng.uniform(0.5, 2), rng.uniform(-0.1, 0.1, 3), np.eye(3) * rng.uniform(0.01, 0.1)
        )

    def place():
        return (np.eye(3), rng.uniform(-0.3, 0.3, 3))

    m.add_body("base", 0, loopdyn.FreeFlyer(), None, inertia())
    m.add_body("link", "base", loopdyn.Revolute((0, 0, 1)), place(), inertia())
    m.add_body("rotor", "base", loopdyn.Revolute((0, 1, 0)), place(), inertia())
    m.add_coupling("gear", "link", "rotor", 5.0)
    m.add_body("a", "link", loopdyn.Revolute((1, 0, 0)), place(), inertia())
    m.add_body("b", "rotor", loopdyn.Prismatic((0, 0, 1)), place(), inertia())
    m.add_body("c", "a", loopdyn.Revolute((0, 1, 0)), place(), inertia())
    m.add_body("c_rotor", "a", loopdyn.Revolute((0, 1, 0)), place(), inertia())
    m.add_coupling("gear_c", "c", "c_rotor", 3.0)
    d = m.create_data()
    cons = [Constraint("c", "6d"), Constraint("b", "3d"), Constraint("rotor", "6d")]
    cons += [Constraint("c_rotor", "3d"), Constraint("a", rng.normal(size=(2, 6)))]
    for _ in range(3):
        q = loopdyn.random_configuration(m, rng)
        ref, _ = spanning_oracle(m, q, cons)
        for method in ("c-pv-osimr", "c-efpa"):
            assert rel_err(delassus(m, d, q, cons, method=method), ref) < TOL, method


def test_belt_chain_with_a_weld_on_every_cluster():
    """Every four-body belt cluster branches (its weld and the rest of the chain) through one port,
    its distal link: the compressed 6-dimensional spaces give the same matrix."""
    model = loopdyn.robots.pbt_chain(8, seed=3)
    d = model.create_data()
    cons = [Constraint(f"link-B-{i}", "6d") for i in range(4)] + [Constraint("rotor-A-1", "3d")]
    q = loopdyn.random_configuration(model, np.random.default_rng(0))
    ref, _ = spanning_oracle(model, q, cons)
    for method in ("c-pv-osimr", "c-efpa"):
        assert rel_err(delassus(model, d, q, cons, method=method), ref) < TOL, method


def test_configuration_off_a_loop_is_refused():
    """A four-bar configuration that violates its loop closure raises ConfigurationError naming the
    cluster, for every method, and leaves the data usable."""
    from loopdyn.errors import ConfigurationError

    model = loopdyn.robots.four_bar()
    d = model.create_data()
    q = loopdyn.random_configuration(model, np.random.default_rng(1))
    cons = [Constraint("link3", "3d")]
    good = delassus(model, d, q, cons)
    bad = q.copy()
    bad[1] += 0.1
    for method in ("c-pv-osimr", "c-efpa", "dense"):
        with pytest.raises(ConfigurationError):
            delassus(model, d, bad, cons, method=method)
    assert np.array_equal(delassus(model, d, q, cons), good)
