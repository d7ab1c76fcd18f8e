"""PV-OSIMr in world coordinates (:mod:`loopdyn.algorithms.pv_osim_world`, the default ``delassus`` on
trees) against independent oracles: ``J M⁻¹ Jᵀ`` from frame Jacobians and the CRBA, the link-coordinate
PV-OSIMr kernel, Pinocchio's ``computeDelassusMatrix``, and the penalised system ``J (M + a JᵀJ)⁻¹ Jᵀ``
for the added inertia; the free-flyer shortcut ``Ω = (Iᴬ)⁻¹`` at the root and inside the tree, with and
without armature. The contact kernel (world-coordinate ABA and PV-OSIMr) against a dense KKT solve with
a free flyer inside the tree, and a robot 1 km from the world origin."""

from __future__ import annotations

import numpy as np
import pytest
import trees
from test_delassus import ROBOT_CONSTRAINTS, check_psd, pin_reference, random_constraints, rel_err
from test_pv_osim import independent_delassus, independent_jacobian

import loopdyn
from loopdyn import Constraint, delassus
from loopdyn.algorithms import pv_osim, pv_osim_world
from loopdyn.constraint_rows import prepare
from loopdyn.contact import constraint_acceleration
from loopdyn.delassus_methods import _packed

TOL = 1e-9


def world_kernel(lm, d, q, cons, added=0.0):
    """Λ⁻¹ from the world kernel, called directly."""
    rows = prepare(lm, cons)
    p = _packed(d, rows)
    out = np.empty(p.shape)
    sc = p.scratch("world_added")
    sc[-1] = added
    st = pv_osim_world.pv_osimr_world_kernel(d.ib, d.ws, np.asarray(q, float), p.bk, sc, out)
    assert st == 0
    return out


def link_kernel(lm, d, q, cons):
    """Λ⁻¹ from the link-coordinate PV-OSIMr kernel (a separate implementation)."""
    rows = prepare(lm, cons)
    p = _packed(d, rows)
    out = np.empty(p.shape)
    assert (
        pv_osim.pv_osimr_kernel(d.ib, d.ws, np.asarray(q, float), rows.K, p.bk, p.scratch("osimr"), 0.0, out)
        == 0
    )
    return out


@pytest.mark.parametrize("floating", [False, True])
def test_random_trees(floating):
    """Every joint kind, random 3D / 6D / custom constraints (some on the world, some repeated on a link),
    links in depth-first and in drawn order."""
    rng = np.random.default_rng(301 + floating)
    for n in [1, 2, 4, 7, 12, 20, 33]:
        for depth_first in (True, False):
            lm, _ = trees.random_tree(
                rng, n, floating=floating, with_pinocchio=False, depth_first_order=depth_first
            )
            d = lm.create_data()
            cons = random_constraints(rng, lm, int(rng.integers(1, 9)))
            q, _, _ = trees.random_state(rng, lm)
            ref = independent_delassus(lm, d, q, cons)
            X = world_kernel(lm, d, q, cons)
            assert rel_err(X, ref) < TOL, n
            assert rel_err(X, link_kernel(lm, d, q, cons)) < 1e-11, n
            assert rel_err(delassus(lm, d, q, cons), ref) < TOL
            check_psd(delassus(lm, d, q, cons))


def _free_in_tree(rng, armature):
    """A fixed-base arm carrying a free-flying body (free flyer inside the tree) with two revolute
    children; armature on every coordinate (or none)."""
    m = loopdyn.Model("free-in-tree")
    parts = [
        ("a", 0, loopdyn.Revolute(rng.normal(size=3))),
        ("b", "a", loopdyn.Revolute(rng.normal(size=3))),
        ("f", "b", loopdyn.FreeFlyer()),
        ("c", "f", loopdyn.Revolute(rng.normal(size=3))),
        ("e", "f", loopdyn.Revolute(rng.normal(size=3))),
        ("g", "e", loopdyn.Prismatic(rng.normal(size=3))),
    ]
    for name, parent, joint in parts:
        m.add_body(
            name,
            parent,
            joint,
            (trees.random_rotation(rng), rng.normal(size=3) * 0.3),
            loopdyn.Inertia(*trees.random_inertia(rng)),
        )
    if armature:
        m.armature = 10.0 ** rng.uniform(-2.0, 0.0, m.nv)
    return m


@pytest.mark.parametrize("armature", [False, True])
def test_free_flyer_inside_the_tree(armature):
    """Ω = (Iᴬ)⁻¹ and P = 0 for a free flyer without armature (the general path with armature), with
    constraints below it, on it and above it."""
    rng = np.random.default_rng(7 + armature)
    lm = _free_in_tree(rng, armature)
    d = lm.create_data()
    sets = [
        [Constraint("c", "3d"), Constraint("g", "6d")],
        [Constraint("f", "6d"), Constraint("b", "3d")],
        [Constraint("a", "3d"), Constraint("c", "6d"), Constraint("g", "3d"), Constraint("f", "3d")],
    ]
    for cons in sets:
        q, _, _ = trees.random_state(rng, lm)
        ref = independent_delassus(lm, d, q, cons)
        assert rel_err(world_kernel(lm, d, q, cons), ref) < TOL
        assert rel_err(world_kernel(lm, d, q, cons), link_kernel(lm, d, q, cons)) < 1e-11


def test_armature_on_a_floating_base():
    """Armature on the free flyer at the root takes the general path (no ``(Iᴬ)⁻¹`` shortcut)."""
    rng = np.random.default_rng(12)
    lm, _ = trees.random_tree(rng, 12, floating=True, with_pinocchio=False)
    lm.armature = 10.0 ** rng.uniform(-3.0, 0.0, lm.nv)
    d = lm.create_data()
    cons = random_constraints(rng, lm, 5)
    q, _, _ = trees.random_state(rng, lm)
    assert rel_err(world_kernel(lm, d, q, cons), independent_delassus(lm, d, q, cons)) < TOL


@pytest.mark.parametrize("added", [1e-2, 1.0, 1e3])
def test_added_inertia(added):
    """``added · K_eᵀ K_e`` on each constrained link is ``M + added · JᵀJ``: J (M + a JᵀJ)⁻¹ Jᵀ."""
    rng = np.random.default_rng(5)
    for floating in (False, True):
        lm, _ = trees.random_tree(rng, 10, floating=floating, with_pinocchio=False)
        d = lm.create_data()
        cons = [c for c in random_constraints(rng, lm, 4)]
        q, _, _ = trees.random_state(rng, lm)
        J = independent_jacobian(lm, d, q, cons)
        ref = J @ np.linalg.solve(loopdyn.crba(lm, d, q) + added * J.T @ J, J.T)
        assert rel_err(world_kernel(lm, d, q, cons, added), ref) < TOL


@pytest.mark.parametrize("robot", ["solo12", "talos_reduced"])
def test_robots_vs_pinocchio(robot):
    """The benchmark's contact sets and the mixed sets of the EFPA tests against Pinocchio's
    ``computeDelassusMatrix`` and its ``J M⁻¹ Jᵀ``."""
    import pinocchio as pin
    lm, pm = trees.robot_case(robot)
    d = lm.create_data()
    feet = {
        "solo12": [Constraint(f, "3d") for f in ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")],
        "talos_reduced": [Constraint("left_sole_link", "6d"), Constraint("right_sole_link", "6d")],
    }
    rng = np.random.default_rng(31)
    for cons in (feet[robot], ROBOT_CONSTRAINTS[robot]):
        for _ in range(3):
            q, _, _ = trees.random_state(rng, lm)
            G, Gp = pin_reference(pin, pm, q, lm, cons)
            X = delassus(lm, d, q, cons)
            assert rel_err(X, G) < TOL
            assert rel_err(X, Gp) < TOL
            check_psd(X, robot)


# ----------------------------------------------------------------------------------------------
# the contact kernel, also in world coordinates (loopdyn.algorithms.contact)
def _kkt(lm, d, q, v, tau, cons, f_ext):
    """Dense KKT ``[[M, −Jᵀ], [J, 0]] [ddq; λ] = [τ − c; −γ]`` (CRBA, RNEA, the independent J and the
    NumPy constraint accelerations)."""
    nv = lm.nv
    J = independent_jacobian(lm, d, q, cons)
    c = loopdyn.rnea(lm, d, q, v, np.zeros(nv), f_ext)
    gamma = constraint_acceleration(lm, d, q, v, np.zeros(nv), cons)
    A = np.block([[loopdyn.crba(lm, d, q), -J.T], [J, np.zeros((J.shape[0],) * 2)]])
    x = np.linalg.solve(A, np.r_[tau - c, -gamma])
    return x[:nv], x[nv:]


@pytest.mark.parametrize("armature", [False, True])
def test_contact_free_flyer_inside_the_tree(armature):
    """``constrained_forward_dynamics`` with a free flyer inside the tree (with and without armature),
    external forces on every link, against the dense KKT solve."""
    rng = np.random.default_rng(41 + armature)
    lm = _free_in_tree(rng, armature)
    d = lm.create_data()
    off = (np.eye(3), [0.2, -0.1, 0.3])  # points off the joint axes (independent rows)
    for cons in (
        [Constraint("c", "3d", off), Constraint("g", "6d")],
        [Constraint("f", "3d", off), Constraint("e", "3d", off)],
    ):
        q, v, tau = trees.random_state(rng, lm)
        f_ext = rng.normal(size=(lm.njoints, 6))
        ddq, lam = loopdyn.constrained_forward_dynamics(lm, d, q, v, tau, cons, f_ext=f_ext)
        ddq_r, lam_r = _kkt(lm, d, q, v, tau, cons, f_ext)
        assert rel_err(ddq, ddq_r) < TOL
        assert rel_err(lam, lam_r) < TOL


def test_far_from_the_origin():
    """A floating robot 1 km from the world origin: the frame's origin at link 1 keeps Λ⁻¹ and the
    contact solution as accurate as at the origin (the result does not depend on the base position)."""
    lm, _ = trees.robot_case("solo12", with_pinocchio=False)
    d = lm.create_data()
    cons = [Constraint(f, "3d") for f in ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")]
    rng = np.random.default_rng(8)
    q, v, tau = trees.random_state(rng, lm)
    q[:3] = 0.0
    G0 = independent_delassus(lm, d, q, cons)
    ddq_r, lam_r = _kkt(lm, d, q, v, tau, cons, None)
    q[:3] = [1000.0, -700.0, 300.0]
    assert rel_err(delassus(lm, d, q, cons), G0) < 1e-12
    ddq, lam = loopdyn.constrained_forward_dynamics(lm, d, q, v, tau, cons)
    assert rel_err(ddq, ddq_r) < TOL
    assert rel_err(lam, lam_r) < TOL


def test_world_placements_left_as_after_forward_kinematics():
    """The world kernels leave W_OR / W_OP as a forward kinematics at the same q would."""
    lm, _ = trees.robot_case("talos_reduced", with_pinocchio=False)
    d = lm.create_data()
    rng = np.random.default_rng(9)
    q, v, tau = trees.random_state(rng, lm)
    q[:3] = [3.0, -2.0, 0.5]
    loopdyn.forward_kinematics(lm, d, q)
    ref = d.oMi
    q2, v2, tau2 = trees.random_state(rng, lm)
    loopdyn.forward_kinematics(lm, d, q2)
    cons = [Constraint("left_sole_link", "6d"), Constraint("right_sole_link", "3d")]
    delassus(lm, d, q, cons)
    assert np.abs(d.oMi - ref).max() < 1e-12
    loopdyn.forward_kinematics(lm, d, q2)
    loopdyn.constrained_forward_dynamics(lm, d, q, v, tau, cons)
    assert np.abs(d.oMi - ref).max() < 1e-12
