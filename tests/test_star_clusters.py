"""Star clusters (layout column ``C_STAR``): a specialised kind of explicit cluster — one independent
coordinate, every body hinged on the same body outside the cluster, at most one body with children —
that C-ABA, the cluster mass matrix, the cluster kinematics and the Delassus sweeps take in one
specialised step each. Checked against the generic cluster path on the same model (the flag cleared
in a Data's own copy of the cluster table) on random parameters, armature included, and against the
dense spanning-tree formula ``H = Gᵀ(H_span + A)G``; the flag is set exactly where it should be."""

from __future__ import annotations

import numpy as np
import pytest
from cluster_models import assert_close, data_with_flag_cleared, random_cluster_model

import loopdyn
from loopdyn.model import layout as L
from loopdyn.robots import build

# random positive definite rotational inertias, not all of which a rigid body can have (the triangle
# inequality): the algorithms hold for any, so the builder's InertiaWarning is expected here
pytestmark = pytest.mark.filterwarnings("ignore::loopdyn.errors.InertiaWarning")


def _inertia(rng, axisymmetric_about=None):
    """A random rigid-body inertia (mass, centre, rotational inertia about the centre); with an axis,
    axisymmetric about it through the body origin (a rotor)."""
    mass = rng.uniform(0.2, 2.0)
    if axisymmetric_about is not None:
        a = np.asarray(axisymmetric_about, float)
        a = a / np.linalg.norm(a)
        Ia, It = rng.uniform(0.01, 0.05), rng.uniform(0.01, 0.05)
        return loopdyn.Inertia(mass, a * 0.0, Ia * np.outer(a, a) + It * (np.eye(3) - np.outer(a, a)))
    A = rng.standard_normal((3, 3))
    return loopdyn.Inertia(mass, rng.uniform(-0.1, 0.1, 3), A @ A.T * 0.01 + 0.01 * np.eye(3))


def _axis(rng):
    a = rng.standard_normal(3)
    return a / np.linalg.norm(a)


def _place(rng):
    A = np.linalg.qr(rng.standard_normal((3, 3)))[0]
    if np.linalg.det(A) < 0:
        A[:, 0] *= -1
    return A, rng.uniform(-0.3, 0.3, 3)


def star_model(seed: int, floating: bool) -> loopdyn.Model:
    """Stars of every shape: a link with an axisymmetric rotor (constant inertia in its parent) and
    a generic one, a prismatic link geared to a rotor, a star hinged on the world, stars in a chain,
    and a belt cluster (two DoF, not a star) between them."""
    rng = np.random.default_rng(seed)
    m = loopdyn.Model(f"stars{seed}")
    root = 0
    if floating:
        m.add_body("base", 0, loopdyn.FreeFlyer(), inertia=_inertia(rng))
        root = "base"
    # a star on the root: link + axisymmetric rotor + generic rotor, both geared to the link
    ax = _axis(rng)
    m.add_body("hip", root, loopdyn.Revolute(_axis(rng)), _place(rng), _inertia(rng))
    m.add_body("hip_rotor", root, loopdyn.Revolute(ax), _place(rng), _inertia(rng, ax), independent=False)
    m.add_body("hip_rotor2", root, loopdyn.Revolute(_axis(rng)), _place(rng), _inertia(rng),
               independent=False)  # fmt: skip
    m.add_coupling("hip_gear", "hip", "hip_rotor", rng.uniform(3, 12))
    m.add_coupling("hip_gear2", "hip", "hip_rotor2", -rng.uniform(3, 12))
    # a prismatic link and its rotor on the hip
    ax = _axis(rng)
    m.add_body("slider", "hip", loopdyn.Prismatic(_axis(rng)), _place(rng), _inertia(rng))
    m.add_body("slider_rotor", "hip", loopdyn.Revolute(ax), _place(rng), _inertia(rng, ax), independent=False)
    m.add_coupling("slider_gear", "slider", "slider_rotor", rng.uniform(20, 60))
    # a belt (two DoF: not a star) on the slider, then a star on its last link
    ax = _axis(rng)
    m.add_body("knee", "slider", loopdyn.Revolute(ax), _place(rng), _inertia(rng))
    m.add_body("knee_rotor", "slider", loopdyn.Revolute(_axis(rng)), _place(rng), _inertia(rng),
               independent=False)  # fmt: skip
    m.add_body("ankle_rotor", "slider", loopdyn.Revolute(_axis(rng)), _place(rng), _inertia(rng),
               independent=False)  # fmt: skip
    m.add_body("ankle", "knee", loopdyn.Revolute(ax), _place(rng), _inertia(rng))
    m.add_coupling("knee_belt", "knee", "knee_rotor", rng.uniform(2, 12))
    m.add_coupling("ankle_belt", "ankle", "ankle_rotor", rng.uniform(2, 12))
    ax = _axis(rng)
    m.add_body("toe", "ankle", loopdyn.Revolute(_axis(rng)), _place(rng), _inertia(rng))
    m.add_body("toe_rotor", "ankle", loopdyn.Revolute(ax), _place(rng), _inertia(rng, ax), independent=False)
    m.add_coupling("toe_gear", "toe", "toe_rotor", rng.uniform(3, 12))
    m.armature = rng.uniform(0.0, 0.3, m.spanning_nv) * (rng.random(m.spanning_nv) < 0.7)
    return m


MODELS = {
    **{f"stars{s}-{'floating' if f else 'fixed'}": (lambda s=s, f=f: star_model(s, f))
       for s, f in ((1, False), (2, True), (3, True))},  # fmt: skip
    **{f"random{s}": (lambda s=s: random_cluster_model(s, n_blocks=6, floating=bool(s % 2)))
       for s in (4, 5, 21, 27)},  # fmt: skip
    "mini_cheetah": lambda: build("mini_cheetah"),
    "mit_humanoid": lambda: build("mit_humanoid"),
    "jvrc1": lambda: build("jvrc1"),
}


@pytest.fixture(params=sorted(MODELS), scope="module")
def model(request):
    return MODELS[request.param]()


def _generic(model):
    """The generic cluster path: every star flag cleared in a Data's own copy of the table."""
    d = data_with_flag_cleared(model, L.C_STAR)
    assert model.create_data().ic[1:, L.C_STAR].any()  # the model's own table keeps its stars
    return d


_close = assert_close


def test_star_flags_are_set_where_expected(model):
    """Negative control for the comparisons below: the models do contain stars (else the specialised
    path would not run), and no star has two DoF, an in-cluster parent, two hinge bodies or two bodies
    with children."""
    d = model.create_data()
    ic, ib, cb = d.ic, d.ib, d.cb
    stars = [k for k in range(1, ic[0, L.C0_NCL] + 1) if ic[k, L.C_STAR]]
    assert stars, "no star cluster in the model: the specialised path is not exercised"
    parents = {i + 1: b.parent for i, b in enumerate(model.bodies)}
    for k in stars:
        assert ic[k, L.C_KIND] == L.EXPLICIT and ic[k, L.C_M] == 1
        bodies = [int(cb[ic[k, L.C_FIRST] + j]) for j in range(ic[k, L.C_NB])]
        assert len({parents[b] for b in bodies}) == 1
        assert all(ib[b, L.I_CPAR] == 0 for b in bodies)
        assert sum(any(p == b for p in parents.values()) for b in bodies) <= 1
    if model.name.startswith("stars"):  # both kinds of star body: a rotor with a constant inertia, and not
        star_bodies = [int(cb[ic[k, L.C_FIRST] + j]) for k in stars for j in range(ic[k, L.C_NB])]
        assert {int(ib[b, L.I_ROTOR]) for b in star_bodies} == {0, 1}
    for k in range(1, ic[0, L.C0_NCL] + 1):  # the belts (two DoF) are not stars
        if ic[k, L.C_M] == 2:
            assert ic[k, L.C_STAR] == 0


def test_star_path_equals_generic_path(model):
    """C-ABA (with external forces), the mass matrix, C-RNEA, both cluster Delassus algorithms, the
    body compliances and the mass-matrix factor: the star steps against the generic cluster steps."""
    rng = np.random.default_rng(11)
    ds, dg = model.create_data(), _generic(model)
    deepest = model.bodies[-1].name
    middle = model.bodies[len(model.bodies) // 2].name
    ee = [loopdyn.Constraint(deepest, "6d"), loopdyn.Constraint(middle, "3d")]
    for t in range(5):
        q = loopdyn.random_configuration(model, 100 + t)
        v, tau = rng.standard_normal(model.nv), rng.standard_normal(model.nv)
        fext = rng.standard_normal((model.nbodies + 1, 6))
        fext[0] = 0.0
        _close(loopdyn.aba(model, ds, q, v, tau, fext), loopdyn.aba(model, dg, q, v, tau, fext), "C-ABA")
        _close(loopdyn.crba(model, ds, q), loopdyn.crba(model, dg, q), "mass matrix")
        _close(loopdyn.rnea(model, ds, q, v, tau), loopdyn.rnea(model, dg, q, v, tau), "C-RNEA")
        for method in ("c-pv-osimr", "c-efpa"):
            _close(loopdyn.delassus(model, ds, q, ee, method=method),
                   loopdyn.delassus(model, dg, q, ee, method=method), method)  # fmt: skip
        _close(loopdyn.body_compliances(model, ds, q), loopdyn.body_compliances(model, dg, q), "compliances")
        x = rng.standard_normal(model.nv)
        _close(loopdyn.mass_matrix_factor(model, ds, q).solve(x),
               loopdyn.mass_matrix_factor(model, dg, q).solve(x), "factor solve")  # fmt: skip


def test_star_mass_matrix_and_aba_against_spanning_tree(model):
    """Independently of both cluster paths: H = Gᵀ(H_span + A)G from the tree CRBA on
    ``spanning_tree(model)`` and the G of ``to_spanning`` differences, and C-ABA solves with it."""
    tree = loopdyn.spanning_tree(model)
    dt, d = tree.create_data(), model.create_data()
    rng = np.random.default_rng(5)
    for t in range(3):
        q = loopdyn.random_configuration(model, 200 + t)
        z = np.zeros(model.nv)
        G = np.column_stack([loopdyn.to_spanning(model, q, e)[1] for e in np.eye(model.nv)])
        qs = loopdyn.to_spanning(model, q, z)[0]
        H = G.T @ loopdyn.crba(tree, dt, qs) @ G
        _close(loopdyn.crba(model, d, q), H, "H against Gᵀ H_span G", rtol=1e-11)
        v = rng.standard_normal(model.nv)
        tau = rng.standard_normal(model.nv)
        qs, vs, g = loopdyn.to_spanning(model, q, v, np.zeros(model.nv))  # q̈_span = g at ÿ = 0
        bias = G.T @ loopdyn.rnea(tree, dt, qs, vs, g)  # Gᵀ(C_span + (H_span + A) g)
        ddy = np.linalg.solve(H, tau - bias)
        _close(loopdyn.aba(model, d, q, v, tau), ddy, "C-ABA against the dense solve", rtol=1e-9)
