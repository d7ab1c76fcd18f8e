"""loopdyn.higher_order wherever the floating base is (issue #29 §1).

The dynamics do not depend on where the robot is: with the same joint state (loopdyn's coordinates:
the free-flyer's velocity in its own frame), moving the base by a translation leaves every τ^(k) and
v^(k+1) unchanged. The reference is the base at the world origin; the base is then moved 1 m, 1 km
and 10 km away. The check is relative, per derivative order: ``‖x − x₀‖∞ ≤ 1e-12 · cond(M) · ‖x₀‖∞``
(M = :func:`loopdyn.crba`, the same at every base position). :func:`closed_form` returns the paper's
coordinates, whose base block is referred to the world origin: there the outputs at a distance must
be the exact change of coordinates of the outputs at the origin, entry by entry to rounding.

Negative controls show that the check catches a frame error: a base velocity given about the world
origin where the base's own frame is expected (at every distance), and forward dynamics solved in
the paper's world-origin coordinates, as the formulation without body-relative frames computed them
(correct at the origin, refused at 10 km).
"""

from __future__ import annotations

import functools
import os

import numpy as np
import pytest
import trees

import loopdyn as ld
from loopdyn import higher_order as ho

DISTANCES = (1.0, 1e3, 1e4)
DIRECTION = np.array([2.0, -1.0, 0.6]) / np.linalg.norm([2.0, -1.0, 0.6])
ORDERS = (0, 2, 4)
MAX_ORDER = max(ORDERS)
URDFS = {
    "g1": "g1_description/urdf/g1_29dof_rev_1_0.urdf",
    "anymal": "anymal_b_simple_description/robots/anymal.urdf",
}


@functools.cache
def robot(name):
    if name == "aerial":
        model = ld.robots.aerial_manipulator()
    elif name == "mini_cheetah":  # geared rotors: explicit clusters
        model = ld.robots.mini_cheetah()
    else:  # anymal's inertias violate the triangle inequality: as written, as Pinocchio reads them
        path = os.path.join(trees.example_robot_data_dir(), URDFS[name])
        model = ld.load_urdf(path, floating_base=True, inertia="accept")
    return model, model.create_data()


def state(model, seed, orders=MAX_ORDER):
    """A random configuration with the base at the origin, velocity derivatives v^(0…R+1) (scaled
    down with the order, as a smooth trajectory's) and body-frame external forces f^(0…R)."""
    rng = np.random.default_rng(seed)
    q = ld.random_configuration(model, rng)
    q[:3] = 0.0
    dv = rng.normal(size=(orders + 2, model.nv)) * 0.7 ** np.arange(orders + 2)[:, None]
    fe = rng.normal(size=(orders + 1, model.njoints, 6)) * 0.7 ** np.arange(orders + 1)[:, None, None]
    return q, dv, fe


def moved(q, d):
    out = q.copy()
    out[:3] = d * DIRECTION
    return out


def cond(model, data, q):
    return np.linalg.cond(ld.crba(model, data, q))


def invariant(x, x0, c) -> bool:
    """Row by row (one derivative order per row): ‖x − x₀‖∞ ≤ 1e-12 · c · ‖x₀‖∞."""
    x, x0 = np.atleast_2d(x), np.atleast_2d(x0)
    return all(np.abs(a - b).max() <= 1e-12 * c * np.abs(b).max() for a, b in zip(x, x0, strict=True))


@pytest.mark.parametrize("name", ["g1", "anymal", "aerial"])
def test_rnea_aba_hybrid_do_not_depend_on_where_the_base_is(name):
    model, data = robot(name)
    base = model.joint_names[1]
    others = model.joint_names[2::3]
    for seed in range(2):
        q, dv, fe = state(model, seed)
        c = cond(model, data, q)
        for r in ORDERS:
            d, f = dv[: r + 2], fe[: r + 1]
            tau0 = ho.rnea(model, data, q, d)
            tauf0 = ho.rnea(model, data, q, d, f)
            a0 = ho.aba(model, data, q, d[0], tau0)
            af0 = ho.aba(model, data, q, d[0], tauf0, f)
            np.testing.assert_allclose(a0, d[1:], atol=1e-8 * np.abs(tau0).max())  # a real round trip
            hyb0 = [ho.hybrid(model, data, q, d, tauf0, p, f) for p in ([base, *others], others)]
            for dist in DISTANCES:
                qd = moved(q, dist)
                assert cond(model, data, qd) == pytest.approx(c, rel=1e-9)
                assert invariant(ho.rnea(model, data, qd, d), tau0, c), (r, dist)
                assert invariant(ho.rnea(model, data, qd, d, f), tauf0, c), (r, dist)
                assert invariant(ho.aba(model, data, qd, d[0], tau0), a0, c), (r, dist)
                assert invariant(ho.aba(model, data, qd, d[0], tauf0, f), af0, c), (r, dist)
                for p, (acc0, t0) in zip(([base, *others], others), hyb0, strict=True):
                    acc, t = ho.hybrid(model, data, qd, d, tauf0, p, f)
                    assert invariant(acc, acc0, c) and invariant(t, t0, c), (r, dist, p)


def test_cluster_models_do_not_depend_on_where_the_base_is():
    model, data = robot("mini_cheetah")
    assert model.has_constraints
    q, dv, fe = state(model, 3)
    c = cond(model, data, q)
    for r in ORDERS:
        d, f = dv[: r + 2], fe[: r + 1]
        tau0 = ho.rnea(model, data, q, d, f)
        a0 = ho.aba(model, data, q, d[0], tau0, f)
        np.testing.assert_allclose(a0, d[1:], atol=1e-8 * np.abs(tau0).max())
        for dist in DISTANCES:
            qd = moved(q, dist)
            assert invariant(ho.rnea(model, data, qd, d, f), tau0, c), (r, dist)
            assert invariant(ho.aba(model, data, qd, d[0], tau0, f), a0, c), (r, dist)


def base_shift(nv, t) -> np.ndarray:
    """X: the paper's base coordinates about the world origin with the robot at the origin → about
    the world origin with the robot moved by t (``ν_t = X⁻¹ ν₀``: the linear part of the base twist
    about the origin gains ``t × ω``). A translation moves nothing else."""
    X = np.eye(nv)
    X[3:6, 0:3] = -np.array([[0.0, -t[2], t[1]], [t[2], 0.0, -t[0]], [-t[1], t[0], 0.0]])
    return X


@pytest.mark.parametrize("name", ["g1", "anymal", "aerial"])
def test_closed_form_is_the_change_of_base_coordinates(name):
    model, data = robot(name)
    q, dv, _ = state(model, 5)
    c = cond(model, data, q)
    cf0 = ho.closed_form(model, data, q, dv[0])
    tol = 1e-12 * c
    for dist in DISTANCES:
        X = base_shift(model.nv, dist * DIRECTION)
        cf = ho.closed_form(model, data, moved(q, dist), dv[0])
        for what in ("M", "C", "M_dot"):  # Xᵀ A X, entry by entry against the size of its terms
            A0 = getattr(cf0, what)
            err = np.abs(getattr(cf, what) - X.T @ A0 @ X)
            assert np.all(err <= tol * (np.abs(X.T) @ np.abs(A0) @ np.abs(X))), (what, dist)
        assert np.all(np.abs(cf.g - X.T @ cf0.g) <= tol * (np.abs(X.T) @ np.abs(cf0.g))), dist
        assert np.all(np.abs(cf.P - cf0.P @ X) <= tol * (np.abs(cf0.P) @ np.abs(X))), dist
        Xi = np.linalg.inv(X)
        assert np.all(np.abs(cf.nu - Xi @ cf0.nu) <= tol * (np.abs(Xi) @ np.abs(cf0.nu))), dist
        # the joint block is the same matrix wherever the base is
        assert invariant(cf.M[6:, 6:], cf0.M[6:, 6:], c)
        np.testing.assert_allclose(cf.P @ cf.nu, dv[0], rtol=0, atol=1e-12 * c * np.abs(dv[0]).max())


def test_negative_control_base_velocity_about_the_world_origin():
    """The base's twist given about the world origin (the paper's V₁, a world-frame quantity) where
    loopdyn expects it in the base's frame: the result moves with the base, and the check says so."""
    model, data = robot("aerial")
    q, dv, _ = state(model, 7, orders=2)
    c = cond(model, data, q)
    tau0 = ho.rnea(model, data, q, dv)
    for dist in DISTANCES:
        qd = moved(q, dist)
        assert invariant(ho.rnea(model, data, qd, dv), tau0, c)
        R = trees.quat_to_matrix(qd[3:7])
        spatial = ho.body_to_spatial_twist((R, qd[:3]), dv[:, :6])  # (ω; v) about the world origin
        wrong = dv.copy()
        wrong[:, :3] = spatial[:, 3:]  # its linear part in place of the base-frame one
        assert not invariant(ho.rnea(model, data, qd, wrong), tau0, c), dist


@pytest.mark.parametrize("name", ["g1", "anymal", "aerial"])
def test_negative_control_forward_dynamics_in_world_origin_coordinates(name):
    """Forward dynamics solved in the paper's coordinates about the world origin (``M̄ ν̇ = Pᵀτ − Cν
    − g``, ``a = P ν̇``, the closed form's outputs being exact to rounding): correct at the origin, it
    loses digits with the distance as the world-origin formulation did (relative errors of about
    1e-8 at 1 km, 3e-6 at 10 km), and the check refuses it ten kilometres away."""
    model, data = robot(name)
    q, dv, _ = state(model, 9, orders=0)
    c = cond(model, data, q)
    tau = ho.rnea(model, data, q, dv)[0]

    def world_aba(qq):
        cf = ho.closed_form(model, data, qq, dv[0])
        return cf.P @ np.linalg.solve(cf.M, cf.P.T @ tau - cf.C @ cf.nu - cf.g)

    a0 = ho.aba(model, data, q, dv[0], tau[None])
    assert invariant(world_aba(q), a0, c)
    qd = moved(q, 1e4)
    assert invariant(ho.aba(model, data, qd, dv[0], tau[None]), a0, c)
    assert not invariant(world_aba(qd), a0, c)
