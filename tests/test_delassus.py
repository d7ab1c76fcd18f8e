"""The Delassus matrix Λ⁻¹ = J M⁻¹ Jᵀ of link constraints on trees: EFPA against the dense reference,
structural properties, invariance, damping, errors, and Pinocchio (J M⁻¹ Jᵀ from its LOCAL frame
Jacobians and CRBA, and its own ``computeDelassusMatrix``)."""

from __future__ import annotations

import numpy as np
import pytest
import trees

import loopdyn
from loopdyn import Constraint, damped_delassus_inverse, delassus
from loopdyn.errors import ConfigurationError, InputError, ShapeError, UnsupportedFeatureError

# random positive definite rotational inertias, not all of which a rigid body can have (the triangle
# inequality): the algorithms hold for any, so the builder's InertiaWarning is expected here
pytestmark = pytest.mark.filterwarnings("ignore::loopdyn.errors.InertiaWarning")

TOL = 1e-10


def rel_err(a, b) -> float:
    return float(np.abs(a - b).max() / max(1.0, np.abs(b).max())) if b.size else 0.0


def check_psd(G, what=""):
    assert np.array_equal(G, G.T), f"{what}: not exactly symmetric"
    if G.size:
        lmin = np.linalg.eigvalsh(G).min()
        assert lmin >= -1e-10 * max(1.0, np.abs(G).max()), f"{what}: min eigenvalue {lmin}"


def random_constraints(rng, lm, n_cons, frames_only=False):
    """Mixed 3D / 6D / custom constraints on random frames of ``lm``, with random placements; some
    repeated on the same body."""
    names = [f.name for f in lm.frames if f.body > 0 or not frames_only]
    out = []
    for k in range(n_cons):
        name = out[-1].body if (k and rng.random() < 0.3) else names[rng.integers(len(names))]
        u = rng.random()
        kind = "6d" if u < 0.35 else "3d" if u < 0.7 else rng.normal(size=(int(rng.integers(1, 9)), 6))
        placement = None if rng.random() < 0.2 else (trees.random_rotation(rng), rng.normal(size=3) * 0.3)
        if rng.random() < 0.3 and placement is not None:
            placement = trees.homogeneous(*placement)
        out.append(Constraint(name, kind, placement))
    return out


# ----------------------------------------------------------------------------------------------
# EFPA == dense on random trees


@pytest.mark.parametrize("floating", [False, True])
def test_efpa_matches_dense_random_trees(floating):
    rng = np.random.default_rng(7 + floating)
    worst = 0.0
    for n in [1, 2, 3, 5, 8, 12, 17, 25, 40]:
        lm, _ = trees.random_tree(rng, n, floating=floating, with_pinocchio=False)
        d = lm.create_data()
        for s in range(3):
            cons = random_constraints(rng, lm, int(rng.integers(1, 9)))
            q, _, _ = trees.random_state(rng, lm)
            G = delassus(lm, d, q, cons, method="dense")
            E = delassus(lm, d, q, cons, method="efpa")
            assert E.shape == (sum(c.dim for c in cons),) * 2
            worst = max(worst, rel_err(E, G))
            assert rel_err(E, G) < TOL, f"n={n}, state {s}"
            check_psd(E, f"efpa n={n}")
            check_psd(G, f"dense n={n}")
    assert worst < TOL


def test_efpa_tables_larger_than_the_stack_buffers():
    """EFPA keeps its per-call tables (depths and paths: (n + 1)(n_c + 1) ints; rows: 12 m (d + 1)
    floats) on the kernel's stack within ``STACK_INTS`` / ``STACK_FLOATS`` and in heap buffers past
    them: a 48-link serial chain with 30 point constraints on its deep links needs both, two
    constraints on it neither; EFPA equals the dense CRBA + Cholesky reference either way."""
    from loopdyn.algorithms.borrow import STACK_FLOATS, STACK_INTS

    rng = np.random.default_rng(21)
    n = 48
    model = loopdyn.Model("chain48")
    parent = 0
    for i in range(n):
        axis = rng.normal(size=3)
        com, rot = rng.normal(size=3) * 0.05, np.diag(0.05 + rng.random(3) * 0.1)
        inertia = loopdyn.Inertia(1.0 + rng.random(), com, rot)
        placement = (trees.random_rotation(rng), rng.normal(size=3) * 0.2)
        model.add_body(f"l{i}", parent, loopdyn.Revolute(axis / np.linalg.norm(axis)), placement, inertia)
        parent = f"l{i}"
    d = model.create_data()
    q = loopdyn.random_configuration(model, rng)
    for nc in (2, 30):
        frames = [(np.eye(3), rng.normal(size=3) * 0.1) for _ in range(nc)]
        cons = [Constraint(f"l{n - 1 - (k % 18)}", "3d", frames[k]) for k in range(nc)]
        ints, floats = (n + 1) * (nc + 1), 12 * (3 * nc) * (n + 1)
        assert (ints > STACK_INTS and floats > STACK_FLOATS) == (nc == 30)
        assert (ints <= STACK_INTS and floats <= STACK_FLOATS) == (nc == 2)
        G = delassus(model, d, q, cons, method="dense")
        assert rel_err(delassus(model, d, q, cons, method="efpa"), G) < TOL


def test_efpa_world_tables_larger_than_the_stack_buffers():
    """Up to ``EFPA_WORLD_ROWS`` rows EFPA runs in world coordinates, with ``2 m + n + 1`` ints of
    tables (rows' links, links reached): on the stack for a short chain, in a heap buffer for a chain of
    more than ``STACK_INTS`` links; the dense reference either way, and either side of the row limit."""
    from loopdyn.algorithms.borrow import STACK_INTS
    from loopdyn.algorithms.efpa import EFPA_WORLD_ROWS

    rng = np.random.default_rng(22)
    for n in (6, STACK_INTS + 8):
        model = loopdyn.Model(f"chain{n}")
        parent = 0
        for i in range(n):
            axis = rng.normal(size=3)
            com, rot = rng.normal(size=3) * 0.05, np.diag(0.05 + rng.random(3))
            inertia = loopdyn.Inertia(1.0 + rng.random(), com, rot)
            placement = (trees.random_rotation(rng), rng.normal(size=3) * 0.02)
            model.add_body(f"l{i}", parent, loopdyn.Revolute(axis / np.linalg.norm(axis)), placement, inertia)
            parent = f"l{i}"
        d = model.create_data()
        q = loopdyn.random_configuration(model, rng)
        for cons in ([Constraint(f"l{n - 1}", "6d"), Constraint(f"l{n // 2}", "6d")],  # 12 rows: world
                     [Constraint(f"l{n - 1}", "6d"), Constraint(f"l{n // 2}", "6d"), Constraint("l1", "3d")]):
            m = sum(c.dim for c in cons)
            assert (m <= EFPA_WORLD_ROWS) == (len(cons) == 2)
            G = delassus(model, d, q, cons, method="dense")
            assert rel_err(delassus(model, d, q, cons, method="efpa"), G) < TOL * (100 if n > 100 else 1)


def test_redundant_and_more_rows_than_dofs():
    rng = np.random.default_rng(3)
    lm, _ = trees.random_tree(rng, 4, floating=False, with_pinocchio=False)
    d = lm.create_data()
    body = lm.bodies[-1].name
    cons = [Constraint(body, "3d", (np.eye(3), rng.normal(size=3))) for _ in range(4)]  # 4 points, one body
    cons += [Constraint(body, rng.normal(size=(12, 6))), Constraint(body, "6d"), Constraint(body, "6d")]
    q, _, _ = trees.random_state(rng, lm)
    G = delassus(lm, d, q, cons, method="dense")
    E = delassus(lm, d, q, cons, method="efpa")
    m = G.shape[0]
    assert m == 36 > lm.nv
    assert rel_err(E, G) < TOL
    check_psd(E)
    assert np.linalg.matrix_rank(E, tol=1e-9 * np.abs(E).max()) <= min(6, lm.nv)


def test_fig1_tree_and_zero_blocks():
    """The paper's Fig. 1 tree (π = 0,1,2,3,4,2; constraints on links 6, 3, 5), and a fixed base with
    two subtrees hanging from the world (off-diagonal blocks exactly zero)."""
    rng = np.random.default_rng(11)
    m = loopdyn.Model("fig1")
    parents = [0, 1, 2, 3, 4, 2]
    for k, p in enumerate(parents, start=1):
        ax = rng.normal(size=3)
        m.add_body(
            f"l{k}",
            p if p == 0 else f"l{p}",
            loopdyn.Revolute(ax / np.linalg.norm(ax)),
            (trees.random_rotation(rng), rng.normal(size=3) * 0.3),
            loopdyn.Inertia(*trees.random_inertia(rng)),
        )
    d = m.create_data()
    cons = [Constraint("l6", "6d"), Constraint("l3", "3d"), Constraint("l5", "6d")]
    for _ in range(3):
        q = rng.normal(size=m.nq)
        assert rel_err(delassus(m, d, q, cons, method="efpa"), delassus(m, d, q, cons, method="dense")) < TOL
    # two subtrees from the world: l1.. and a second root l7
    m.add_body(
        "l7",
        0,
        loopdyn.Revolute([0, 0, 1]),
        (np.eye(3), np.ones(3)),
        loopdyn.Inertia(*trees.random_inertia(rng)),
    )
    d = m.create_data()
    cons = [Constraint("l5", "3d"), Constraint("l7", "6d"), Constraint("universe", "6d")]
    q = rng.normal(size=m.nq)
    E = delassus(m, d, q, cons, method="efpa")
    assert np.all(E[:3, 3:] == 0.0) and np.all(E[3:9, 9:] == 0.0) and np.all(E[9:] == 0.0)
    assert rel_err(E, delassus(m, d, q, cons, method="dense")) < TOL


def test_order_and_empty():
    rng = np.random.default_rng(5)
    lm, _ = trees.random_tree(rng, 10, floating=True, with_pinocchio=False)
    d = lm.create_data()
    cons = random_constraints(rng, lm, 6)
    q, _, _ = trees.random_state(rng, lm)
    E = delassus(lm, d, q, cons, method="efpa")
    perm = rng.permutation(len(cons))
    Ep = delassus(lm, d, q, [cons[k] for k in perm], method="efpa")
    offs = np.cumsum([0] + [c.dim for c in cons])
    rows = np.concatenate([np.arange(offs[k], offs[k + 1]) for k in perm])
    assert rel_err(Ep, E[np.ix_(rows, rows)]) < 1e-13  # same blocks up to rounding
    for method in ("dense", "efpa"):
        assert delassus(lm, d, q, [], method=method).shape == (0, 0)


def test_invariant_to_world_placement_of_floating_base():
    rng = np.random.default_rng(9)
    lm, _ = trees.random_tree(rng, 15, floating=True, with_pinocchio=False)
    d = lm.create_data()
    cons = random_constraints(rng, lm, 6, frames_only=True)
    q, _, _ = trees.random_state(rng, lm)
    ref = delassus(lm, d, q, cons, method="efpa")
    for _ in range(3):
        q2 = q.copy()
        q2[:3] = rng.normal(size=3) * 10.0
        q2[3:7] = trees.random_quaternion(rng)
        for method in ("efpa", "dense", "ltl", "pv-osim", "pv-osimr"):
            assert rel_err(delassus(lm, d, q2, cons, method=method), ref) < 1e-9


@pytest.mark.parametrize("mu", [1e-1, 1e-4])
def test_damped_inverse(mu):
    rng = np.random.default_rng(13)
    for n, floating in [(6, False), (14, True)]:
        lm, _ = trees.random_tree(rng, n, floating=floating, with_pinocchio=False)
        d = lm.create_data()
        cons = random_constraints(rng, lm, 5)
        q, _, _ = trees.random_state(rng, lm)
        G = delassus(lm, d, q, cons, method="dense")
        ref = np.linalg.inv(G + mu * np.eye(len(G)))
        tol = 1e-12 if mu > 1e-2 else 1e-9
        for method in ("dense", "efpa"):
            X = damped_delassus_inverse(lm, d, q, cons, mu, method=method)
            assert np.abs(X - ref).max() / np.abs(ref).max() < tol, method
            check_psd(X)


def test_errors():
    rng = np.random.default_rng(1)
    lm, _ = trees.random_tree(rng, 4, floating=True, with_pinocchio=False)
    d = lm.create_data()
    q, _, _ = trees.random_state(rng, lm)
    with pytest.raises(KeyError, match="no_such_link"):
        delassus(lm, d, q, [Constraint("no_such_link", "3d")])
    for bad in ["2d", np.ones((2, 5)), np.ones((0, 6)), [[np.nan] * 6]]:
        with pytest.raises(InputError):
            Constraint(lm.bodies[0].name, bad)
    with pytest.raises(InputError):
        Constraint(lm.bodies[0].name, "3d", np.ones((3, 3)))
    cons = [Constraint(lm.bodies[-1].name, "6d")]
    for method in ("dense", "efpa"):
        with pytest.raises(ShapeError):
            delassus(lm, d, q[:-1], cons, method=method)
        qb = q.copy()
        qb[3:7] *= 2.0
        with pytest.raises(ConfigurationError):
            delassus(lm, d, qb, cons, method=method)
        with pytest.raises(InputError):
            damped_delassus_inverse(lm, d, q, cons, 0.0, method=method)
    with pytest.raises(InputError):
        delassus(lm, d, q, cons, method="pv")
    from cluster_models import random_cluster_model

    cm = random_cluster_model(2, n_blocks=2)
    for tree_only in ("ltl", "pv-osim"):  # tree algorithms on a model with loops
        with pytest.raises(UnsupportedFeatureError, match="trees only"):
            delassus(cm, cm.create_data(), np.zeros(cm.nq), [Constraint(cm.bodies[-1].name, "3d")], tree_only)
    for cluster_only in ("c-efpa", "projected"):  # and the other way round
        with pytest.raises(UnsupportedFeatureError, match="is a tree"):
            delassus(lm, d, q, cons, method=cluster_only)


# ----------------------------------------------------------------------------------------------
# Pinocchio


def pin_reference(pin, pm, q, lm, cons):
    """(J M⁻¹ Jᵀ from Pinocchio's LOCAL frame Jacobians and CRBA, computeDelassusMatrix or None)."""
    pm = pin.Model(pm)
    rows, cmodels, pin_ok = [], [], True
    for k, c in enumerate(cons):
        fid = pm.getFrameId(lm.frames[lm.frame_index(c.body)].name)
        f = pm.frames[fid]
        R = np.eye(3) if c.placement is None else np.array(c.placement[0]).reshape(3, 3)
        p = np.zeros(3) if c.placement is None else np.array(c.placement[1])
        M = f.placement * pin.SE3(R, p)
        cid = pm.addFrame(pin.Frame(f"constraint{k}", f.parentJoint, fid, M, pin.FrameType.OP_FRAME))
        rows.append((cid, c.selection()))
        pin_ok = pin_ok and isinstance(c.kind, str) and f.parentJoint > 0
        if pin_ok:
            ct = pin.ContactType.CONTACT_6D if c.kind == "6d" else pin.ContactType.CONTACT_3D
            cmodels.append(pin.RigidConstraintModel(ct, pm, f.parentJoint, M, pin.ReferenceFrame.LOCAL))
    pd = pm.createData()
    J = np.vstack([S @ pin.computeFrameJacobian(pm, pd, q, cid, pin.LOCAL).reshape(6, -1) for cid, S in rows])
    H = pin.crba(pm, pd, q)
    H = np.triu(H) + np.triu(H, 1).T
    G = J @ np.linalg.solve(H, J.T)
    Gp = None
    if pin_ok:
        cms, cds = pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData()
        for cm in cmodels:
            cms.append(cm)
            cds.append(cm.createData())
        Gp = pin.computeDelassusMatrix(pm, pd, q, cms, cds, 0.0)
    return G, Gp


def test_random_trees_vs_pinocchio():
    import pinocchio as pin
    rng = np.random.default_rng(21)
    checked_pin_delassus = 0
    for n, floating in [(3, False), (8, True), (15, False), (24, True)]:
        lm, pm = trees.random_tree(rng, n, floating=floating, with_pinocchio=True)
        d = lm.create_data()
        for s in range(2):
            cons = random_constraints(rng, lm, 5, frames_only=True)
            if s == 1:  # Pinocchio's own Delassus needs plain 3D / 6D contacts
                cons = [Constraint(c.body, "6d" if k % 2 else "3d", c.placement) for k, c in enumerate(cons)]
            q, _, _ = trees.random_state(rng, lm)
            G, Gp = pin_reference(pin, pm, q, lm, cons)
            for method in ("dense", "efpa"):
                assert rel_err(delassus(lm, d, q, cons, method=method), G) < 1e-9, (n, method)
            if Gp is not None:
                checked_pin_delassus += 1
                assert rel_err(delassus(lm, d, q, cons, method="efpa"), Gp) < 1e-9
    assert checked_pin_delassus >= 3


ROBOT_CONSTRAINTS = {
    "solo12": [Constraint(f, "3d") for f in ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")],
    "talos_reduced": [
        Constraint("left_sole_link", "6d"),
        Constraint("right_sole_link", "6d"),
        *[
            Constraint("left_sole_link", "3d", (np.eye(3), [sx * 0.1, sy * 0.05, 0.0]))
            for sx in (-1, 1)
            for sy in (-1, 1)
        ],
        Constraint("gripper_left_base_link", "6d"),
        Constraint("gripper_right_base_link", "3d", (np.eye(3), [0.0, 0.0, -0.1])),
    ],
}


@pytest.mark.parametrize("robot", list(ROBOT_CONSTRAINTS))
def test_robots_vs_pinocchio(robot):
    """dense, EFPA and LTL agree with each other and with Pinocchio's J M⁻¹ Jᵀ and computeDelassusMatrix."""
    import pinocchio as pin
    lm, pm = trees.robot_case(robot)
    d = lm.create_data()
    cons = ROBOT_CONSTRAINTS[robot]
    rng = np.random.default_rng(4)
    for _ in range(3):
        q, _, _ = trees.random_state(rng, lm)
        G, Gp = pin_reference(pin, pm, q, lm, cons)
        D = delassus(lm, d, q, cons, method="dense")
        E = delassus(lm, d, q, cons, method="efpa")
        T = delassus(lm, d, q, cons, method="ltl")
        assert rel_err(E, D) < TOL
        assert rel_err(T, D) < TOL
        assert rel_err(T, E) < TOL
        assert rel_err(D, G) < 1e-9
        assert rel_err(T, G) < 1e-9
        assert rel_err(E, Gp) < 1e-9
        assert rel_err(T, Gp) < 1e-9
        check_psd(E, robot)
        check_psd(T, robot)
