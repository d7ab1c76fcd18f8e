"""One-port clusters (layout column ``C_ONEPORT``): clusters that are not stars — several coordinates
(belt pairs), in-cluster parents, implicit loops (differentials, four-bars) — but whose bodies all
hang from one output body Λ and whose children do too, so that the articulated inertia stays
block-diagonal and the cluster hands its parent one port ``V = Σ_b ᵇX_Λᵀ 𝖴_b``. C-ABA's backward
sweep (``cluster_dynamics.c_aba_one_port``) and the two cluster Delassus algorithms
(``cluster_delassus.port_column``) take them in one step.

Checked against the generic cluster path on the same model (the flag cleared in a Data's own copy of
the cluster table), against the dense spanning-tree formulas, and the flag against an independent
reading of the model's topology — with a model whose bridge cluster hangs from two bodies of a belt
cluster, so that neither is one-port (the negative control: the generic path still runs there)."""

from __future__ import annotations

import numpy as np
import pytest
from cluster_models import assert_close as _close
from cluster_models import data_with_flag_cleared
from test_star_clusters import _axis, _inertia, _place, star_model

import loopdyn
from loopdyn.contact import constraint_acceleration
from loopdyn.model import layout as L
from loopdyn.robots import build

# random positive definite rotational inertias, not all of which a rigid body can have (the triangle
# inequality): the algorithms hold for any, so the builder's InertiaWarning is expected here
pytestmark = pytest.mark.filterwarnings("ignore::loopdyn.errors.InertiaWarning")


def bridged_model(seed: int, merged: bool = False) -> loopdyn.Model:
    """A belt cluster (two links and two rotors, two DoF, one port on the base) whose two links carry
    the two bodies of a declared 'bridge' cluster — a cluster with two output bodies, so neither the
    bridge nor the belt is one-port — and a belt on the bridge's second body (one-port). ``merged``:
    the bridge is a constraint ``q_x2 = r q_x1`` instead, which merges it into the belt (a one-port
    cluster of six bodies and three DoF, with in-cluster parents two deep)."""
    rng = np.random.default_rng(seed)
    m = loopdyn.Model(f"{'merged' if merged else 'bridged'}{seed}")
    m.add_body("base", 0, loopdyn.FreeFlyer(), inertia=_inertia(rng))
    for prefix, parent in (("a", "base"), ("c", "x2")):
        ax = _axis(rng)
        if prefix == "c":
            m.add_body("x2", "lower_a", loopdyn.Revolute(_axis(rng)), _place(rng), _inertia(rng))
            m.add_body("x1", "upper_a", loopdyn.Revolute(_axis(rng)), _place(rng), _inertia(rng))
            if merged:
                m.add_explicit_constraint("bridge", ("x1", "x2"), ("x1",), [[1.0], [rng.uniform(0.5, 2.0)]])
            else:
                m.add_cluster(("x1", "x2"))  # two bodies hanging from two bodies of the belt
        m.add_body(f"upper_{prefix}", parent, loopdyn.Revolute(ax), _place(rng), _inertia(rng))
        m.add_body(f"upper_rotor_{prefix}", parent, loopdyn.Revolute(ax), _place(rng), _inertia(rng, ax),
                   independent=False)  # fmt: skip
        m.add_body(f"lower_rotor_{prefix}", parent, loopdyn.Revolute(_axis(rng)), _place(rng),
                   _inertia(rng), independent=False)  # fmt: skip
        m.add_body(f"lower_{prefix}", f"upper_{prefix}", loopdyn.Revolute(_axis(rng)), _place(rng),
                   _inertia(rng))  # fmt: skip
        m.add_coupling(f"upper_belt_{prefix}", f"upper_{prefix}", f"upper_rotor_{prefix}", rng.uniform(2, 9))
        m.add_coupling(f"lower_belt_{prefix}", f"lower_{prefix}", f"lower_rotor_{prefix}", rng.uniform(2, 9))
    m.armature = rng.uniform(0.0, 0.3, m.spanning_nv)
    return m


MODELS = {
    "pbt_chain": lambda: build("pbt_chain", n=12),
    "mit_humanoid": lambda: build("mit_humanoid"),
    "tello": lambda: build("tello"),
    "four_bar": lambda: build("four_bar"),
    "planar_leg_linkage": lambda: build("planar_leg_linkage"),
    "stars2-floating": lambda: star_model(2, True),  # a belt with armature among stars
    "bridged7": lambda: bridged_model(7),
    "bridged8": lambda: bridged_model(8),
    "merged7": lambda: bridged_model(7, merged=True),
}


@pytest.fixture(params=sorted(MODELS), scope="module")
def model(request):
    return MODELS[request.param]()


def _generic(model):
    """The generic cluster path: every one-port flag cleared in a Data's own copy of the table."""
    d = data_with_flag_cleared(model, L.C_ONEPORT)
    assert model.create_data().ic[1:, L.C_ONEPORT].any()  # the model's own table keeps its flags
    return d


def _expected_flags(model, ic, cb):
    """C_ONEPORT read independently from the model's bodies: the output body of b is its nearest
    ancestor outside b's cluster; a non-star cluster of several bodies is one-port when its bodies
    share one output body and so do those of each of its child clusters."""
    parent = {i + 1: b.parent for i, b in enumerate(model.bodies)}
    ncl = int(ic[0, L.C0_NCL])
    members = {k: [int(cb[ic[k, L.C_FIRST] + j]) for j in range(ic[k, L.C_NB])] for k in range(1, ncl + 1)}
    cluster_of = {b: k for k, bs in members.items() for b in bs}

    def outputs(k):
        outs = set()
        for b in members[k]:
            p = parent[b]
            while p != 0 and cluster_of[p] == k:
                p = parent[p]
            outs.add(p)
        return outs

    flags = {}
    for k in range(1, ncl + 1):
        if len(members[k]) < 2 or ic[k, L.C_STAR]:
            flags[k] = 0
            continue
        flags[k] = int(len(outputs(k)) == 1 and all(len(outputs(c)) == 1 for c in range(1, ncl + 1)
                                                     if ic[c, L.C_PARENT] == k))  # fmt: skip
    return flags


def test_one_port_flags(model):
    """The flag is set exactly where the topology says, on every model; the built-in robots' clusters
    are all stars or one-port; the bridged models keep a cluster with two ports (and its parent)
    unflagged, so the generic path is exercised too."""
    d = model.create_data()
    ic, cb = d.ic, d.cb
    expected = _expected_flags(model, ic, cb)
    got = {k: int(ic[k, L.C_ONEPORT]) for k in expected}
    assert got == expected
    assert any(got.values()), "no one-port cluster: the specialised path is not exercised"
    multi = [k for k in expected if ic[k, L.C_NB] > 1 and not ic[k, L.C_STAR] and not got[k]]
    if model.name.startswith("bridged"):
        assert len(multi) == 2  # the bridge (two output bodies) and the belt it hangs from
        assert {int(ic[k, L.C_M]) for k in got if got[k]} == {2}
    elif model.name.startswith("merged"):  # the bridge merged into the belt: three DoF, one port
        assert multi == [] and {int(ic[k, L.C_M]) for k in got if got[k]} == {2, 3}
    else:
        assert multi == []


def test_one_port_path_equals_generic_path(model):
    """C-ABA (with external forces and, where the model has it, armature), C-RNEA, the mass matrix,
    both cluster Delassus algorithms and the body compliances: one-port steps against the generic
    steps, 1e-12 relative."""
    rng = np.random.default_rng(3)
    d1, dg = model.create_data(), _generic(model)
    names = [b.name for b in model.bodies]
    ee = [loopdyn.Constraint(names[-1], "6d"), loopdyn.Constraint(names[len(names) // 2], "3d")]
    for t in range(4):
        q = loopdyn.random_configuration(model, 300 + t)
        v, tau = rng.standard_normal(model.nv), rng.standard_normal(model.nv)
        fext = rng.standard_normal((model.nbodies + 1, 6))
        fext[0] = 0.0
        _close(loopdyn.aba(model, d1, q, v, tau, fext), loopdyn.aba(model, dg, q, v, tau, fext), "C-ABA")
        _close(loopdyn.rnea(model, d1, q, v, tau), loopdyn.rnea(model, dg, q, v, tau), "C-RNEA")
        _close(loopdyn.crba(model, d1, q), loopdyn.crba(model, dg, q), "mass matrix")
        for method in ("c-pv-osimr", "c-efpa"):
            _close(loopdyn.delassus(model, d1, q, ee, method=method),
                   loopdyn.delassus(model, dg, q, ee, method=method), method)  # fmt: skip
        _close(loopdyn.body_compliances(model, d1, q), loopdyn.body_compliances(model, dg, q), "compliances")


def test_one_port_against_dense_spanning_tree(model):
    """Independently of both cluster paths: C-ABA solves ``H ÿ = τ − Gᵀ(C_span + H_span g)`` with
    ``H = Gᵀ H_span G`` from the tree algorithms on ``spanning_tree(model)``, and the Delassus matrix is
    ``J H⁻¹ Jᵀ`` with ``J = J_span G``."""
    tree = loopdyn.spanning_tree(model)
    dt, d = tree.create_data(), model.create_data()
    rng = np.random.default_rng(9)
    names = [b.name for b in model.bodies]
    ee = [loopdyn.Constraint(names[-1], "6d"), loopdyn.Constraint(names[len(names) // 2], "3d")]
    for t in range(3):
        q = loopdyn.random_configuration(model, 400 + t)
        v, tau = rng.standard_normal(model.nv), rng.standard_normal(model.nv)
        G = np.column_stack([loopdyn.to_spanning(model, q, e)[1] for e in np.eye(model.nv)])
        qs, vs, g = loopdyn.to_spanning(model, q, v, np.zeros(model.nv))
        H = G.T @ loopdyn.crba(tree, dt, qs) @ G
        ddy = np.linalg.solve(H, tau - G.T @ loopdyn.rnea(tree, dt, qs, vs, g))
        _close(loopdyn.aba(model, d, q, v, tau), ddy, "C-ABA against the dense solve", rtol=1e-9)
        J = loopdyn.constraint_jacobian(tree, dt, qs, ee) @ G
        dense = J @ np.linalg.solve(H, J.T)
        for method in ("c-pv-osimr", "c-efpa"):
            _close(loopdyn.delassus(model, d, q, ee, method=method), dense, method, rtol=1e-9)


@pytest.mark.parametrize("mu", [1e-3, 0.5])  # damped: the nine rows exceed the four-bar's one DoF
def test_contact_solve_against_dense_spanning_tree(model, mu):
    """``constrained_forward_dynamics`` (its C-ABAs through every kind of backward step — star,
    one-port, one-port pair, the generic step — with armature where the model has it, and its cluster
    PV-OSIMr on the first C-ABA's articulated inertias) against one dense KKT solve built from the tree
    algorithms on ``spanning_tree(model)``: ``H = Gᵀ H_span G``, the
    bias ``Gᵀ rnea_span(q_s, v_s, g)`` (external forces included), ``J = J_span G`` and
    ``γ = J_span g + γ_span`` from the tree's ``constraint_acceleration`` at the spanning acceleration g:
    ``[[H, −Jᵀ], [J, μ I]] [ÿ; λ] = [τ − b; k − γ]``."""
    tree = loopdyn.spanning_tree(model)
    dt, d = tree.create_data(), model.create_data()
    rng = np.random.default_rng(11)
    names = [b.name for b in model.bodies]
    ee = [loopdyn.Constraint(names[-1], "6d"), loopdyn.Constraint(names[len(names) // 2], "3d")]
    m = 9
    for t in range(3):
        q = loopdyn.random_configuration(model, 500 + t)
        v, tau = rng.standard_normal(model.nv), rng.standard_normal(model.nv)
        k = rng.standard_normal(m)
        fext = rng.standard_normal((model.nbodies + 1, 6))
        fext[0] = 0.0
        G = np.column_stack([loopdyn.to_spanning(model, q, e)[1] for e in np.eye(model.nv)])
        qs, vs, g = loopdyn.to_spanning(model, q, v, np.zeros(model.nv))
        H = G.T @ loopdyn.crba(tree, dt, qs) @ G
        b = G.T @ loopdyn.rnea(tree, dt, qs, vs, g, fext)
        J = loopdyn.constraint_jacobian(tree, dt, qs, ee) @ G
        gamma = constraint_acceleration(tree, dt, qs, vs, g, ee)
        kkt = np.block([[H, -J.T], [J, mu * np.eye(m)]])
        expected = np.linalg.solve(kkt, np.concatenate([tau - b, k - gamma]))
        ddy, lam = loopdyn.constrained_forward_dynamics(model, d, q, v, tau, ee, desired=k, mu=mu, f_ext=fext)
        _close(ddy, expected[: model.nv], "ÿ against the dense KKT solve", rtol=1e-9)
        _close(lam, expected[model.nv :], "λ against the dense KKT solve", rtol=1e-9)
