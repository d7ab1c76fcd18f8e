"""The cluster mass matrix of one-port clusters (layout column ``C_ONEPORT``: several bodies, all with
the same output body Λ): every body's F = Ic S is carried to Λ's frame and combined per independent
coordinate through G, and the m combined columns walk to the root once (``c_crba_one_port_pair``); a
1-DoF tree joint takes the star column, a floating base the free-flyer block.

Oracles, never the code under test:

* ``Gᵀ (H_span + diag(armature)) G`` with H_span from Pinocchio's CRBA on ``spanning_tree(model)``
  (armature added by Pinocchio) and G from the sympy-based baseline ``loopdyn.baselines.explicit_G``;
* the same with loopdyn's tree CRBA on the spanning tree and G from ``to_spanning`` differences;
* the generic cluster path on the same model (``C_ONEPORT`` cleared in a Data's own cluster table).

Tolerance 1e-12 relative to the largest entry (1 when smaller)."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from cluster_models import assert_close, data_with_flag_cleared, random_cluster_model
from test_spatial_operators_loops import to_pinocchio
from test_star_clusters import star_model

import loopdyn
from loopdyn.baselines import explicit_G
from loopdyn.model import layout as L
from loopdyn.robots import build

# test_star_clusters' star models draw random positive definite rotational inertias, not all of which a
# rigid body can have: the builder's InertiaWarning is expected here
pytestmark = pytest.mark.filterwarnings("ignore::loopdyn.errors.InertiaWarning")

NESTED = ("pbt_chain12", "mit_humanoid", "tello")  # one-port clusters with an in-cluster parent
MODELS = {
    "pbt_chain12": lambda: build("pbt_chain", n=12),
    "mit_humanoid": lambda: build("mit_humanoid"),
    "tello": lambda: build("tello"),
    "four_bar": lambda: build("four_bar"),
    "planar_leg_linkage": lambda: build("planar_leg_linkage"),
    "jvrc1": lambda: build("jvrc1"),
    **{f"random{s}": (lambda s=s: random_cluster_model(s, n_blocks=6, floating=bool(s % 2)))
       for s in (0, 1, 4, 5, 21, 27)},  # fmt: skip
    "stars1-fixed": lambda: star_model(1, False),
    "stars2-floating": lambda: star_model(2, True),
}


@pytest.fixture(params=sorted(MODELS), scope="module")
def model(request):
    return MODELS[request.param]()


def _generic(model):
    """The generic per-body path of the cluster mass matrix: the one-port flags cleared in a Data's
    own copy of the cluster table."""
    return data_with_flag_cleared(model, L.C_ONEPORT)


_close = assert_close


def _one_port_clusters(d):
    ic = d.ic
    return [k for k in range(1, ic[0, L.C0_NCL] + 1) if ic[k, L.C_ONEPORT]]


def test_one_port_clusters_are_exercised(model):
    """Negative control for the comparisons below: every model but jvrc1 (stars and tree joints only)
    contains one-port clusters of 1-DoF bodies with m ≤ 2 (the specialised path), those of NESTED with
    an in-cluster parent, and the kernel's precondition holds: a cluster's first body in cb is its
    lowest, all its bodies share one output body."""
    d = model.create_data()
    ic, ib, cb = d.ic, d.ib, d.cb
    ks = _one_port_clusters(d)
    if not model.name.startswith("jvrc1"):
        assert ks, f"{model.name}: no one-port cluster, the specialised path is not exercised"
    nested = False
    for k in ks:
        bodies = [int(cb[ic[k, L.C_FIRST] + j]) for j in range(ic[k, L.C_NB])]
        assert bodies[0] == min(bodies)
        assert len({int(ib[b, L.I_OUT]) for b in bodies}) == 1
        assert ic[k, L.C_M] <= 2 and all(ib[b, L.I_NV] == 1 for b in bodies)
        nested |= any(ib[b, L.I_CPAR] != 0 for b in bodies)
    if model.name in NESTED:
        assert nested


def _pinocchio_oracle(model, q):
    tree = loopdyn.spanning_tree(model)
    pm, qmap, vmap, _ = to_pinocchio(tree)
    qs, _ = loopdyn.to_spanning(model, q)
    G, _ = explicit_G(model, q, np.zeros(model.nv))
    Hs = pin.crba(pm, pm.createData(), qs[qmap])  # armature included
    Hs = np.triu(Hs) + np.triu(Hs, 1).T
    Gp = G[vmap]
    return Gp.T @ Hs @ Gp


def test_mass_matrix_against_pinocchio(model):
    d = model.create_data()
    for t in range(3):
        q = loopdyn.random_configuration(model, 300 + t)
        _close(loopdyn.crba(model, d, q), _pinocchio_oracle(model, q), "H against Pinocchio Gᵀ H_span G")


def test_mass_matrix_against_tree_crba(model):
    tree = loopdyn.spanning_tree(model)
    dt, d = tree.create_data(), model.create_data()
    for t in range(3):
        q = loopdyn.random_configuration(model, 400 + t)
        G = np.column_stack([loopdyn.to_spanning(model, q, e)[1] for e in np.eye(model.nv)])
        qs = loopdyn.to_spanning(model, q, np.zeros(model.nv))[0]
        _close(loopdyn.crba(model, d, q), G.T @ loopdyn.crba(tree, dt, qs) @ G, "H against Gᵀ H_span G")


def test_one_port_path_equals_generic_path(model):
    d, dg = model.create_data(), _generic(model)
    assert model.create_data().ic[1:, L.C_ONEPORT].sum() == len(_one_port_clusters(d))  # untouched
    for t in range(5):
        q = loopdyn.random_configuration(model, 500 + t)
        H = loopdyn.crba(model, d, q)
        _close(H, loopdyn.crba(model, dg, q), "one-port path against the generic path")
        assert np.array_equal(H, H.T)


def test_armature_on_one_port_clusters():
    """Armature on every spanning coordinate of a model with nested one-port clusters (pbt chain):
    the diagonal term of each body's coordinate enters through G (Pinocchio oracle)."""
    m = build("pbt_chain", n=12)
    rng = np.random.default_rng(3)
    m.armature = rng.uniform(0.05, 0.5, m.spanning_nv)
    d = m.create_data()
    for t in range(2):
        q = loopdyn.random_configuration(m, 600 + t)
        H = loopdyn.crba(m, d, q)
        _close(H, _pinocchio_oracle(m, q), "H with armature against Pinocchio")
        _close(H, loopdyn.crba(m, _generic(m), q), "H with armature against the generic path")
