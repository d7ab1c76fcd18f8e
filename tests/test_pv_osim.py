"""PV-OSIM and PV-OSIMr (``delassus(..., method="pv-osim" | "pv-osimr")``, spec
``delassus-pv-osimr-sathya2023``): the branching structure (the paper's Fig. 1, erratum E1, brute-force
definitions on random trees), and the Delassus matrix against the dense reference, an independent
``J M⁻¹ Jᵀ`` (frame Jacobians and CRBA), ABA columns, EFPA and Pinocchio, on random trees and the edge
cases of spec §6.2; the damped inverse by Woodbury."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import trees
from test_delassus import check_psd, random_constraints, rel_err

import loopdyn
from loopdyn import Constraint, damped_delassus_inverse, delassus
from loopdyn.algorithms import pv_osim
from loopdyn.algorithms.pv_osim import branching_structure
from loopdyn.constraint_rows import prepare
from loopdyn.delassus_methods import run_efpa, run_pv_osim
from loopdyn.errors import ConfigurationError, ShapeError

TOL = 1e-10
METHODS = ("pv-osim", "pv-osimr")


# ----------------------------------------------------------------------------------------------
# references


def independent_jacobian(lm, d, q, cons) -> np.ndarray:
    """J (m × nv) from ``loopdyn.frame_jacobian`` (LOCAL) moved to each constraint frame, times the
    selection ``K_e`` — no code shared with the Delassus module."""
    rows = []
    for c in cons:
        f = lm.frames[lm.frame_index(c.body)] if isinstance(c.body, str) else None
        body = f.body if f is not None else c.body
        if body == 0:
            rows.append(np.zeros((c.dim, lm.nv)))
            continue
        Jf = loopdyn.frame_jacobian(lm, d, q, c.body if f is not None else lm.bodies[body - 1].name, "local")
        R = np.eye(3) if c.placement is None else np.array(c.placement[0]).reshape(3, 3)
        p = np.zeros(3) if c.placement is None else np.array(c.placement[1])
        X = np.zeros((6, 6))  # [v; ω] of the frame ↦ [v; ω] of the constraint frame c = frame · (R, p)
        X[:3, :3] = R.T
        X[:3, 3:] = -R.T @ trees.skew(p)
        X[3:, 3:] = R.T
        rows.append(c.selection() @ X @ Jf)
    return np.vstack(rows) if rows else np.zeros((0, lm.nv))


def independent_delassus(lm, d, q, cons) -> np.ndarray:
    """``J M⁻¹ Jᵀ`` with the independent ``J`` and ``M`` from the CRBA (armature included)."""
    J = independent_jacobian(lm, d, q, cons)
    return J @ np.linalg.solve(loopdyn.crba(lm, d, q), J.T)


def aba_delassus(lm, d, q, cons) -> np.ndarray:
    """Column k = J · ABA(q, 0, Jᵀ e_k) without gravity (spec §6.1 item 2): M⁻¹ from m ABA calls."""
    J = independent_jacobian(lm, d, q, cons)
    v0 = np.zeros(lm.nv)
    a0 = loopdyn.aba(lm, d, q, v0, np.zeros(lm.nv))  # gravity only
    cols = [loopdyn.aba(lm, d, q, v0, J[k]) - a0 for k in range(J.shape[0])]
    return J @ np.array(cols).T if cols else np.zeros((0, 0))


def check_all(lm, d, q, cons, what="", extra_refs=True):
    """PV-OSIM and PV-OSIMr against the dense reference (and the independent J M⁻¹ Jᵀ); returns the
    worst relative error."""
    G = delassus(lm, d, q, cons, method="dense")
    refs = [G]
    if extra_refs:
        refs.append(independent_delassus(lm, d, q, cons))
        assert rel_err(refs[1], G) < TOL, f"{what}: the two references disagree"
    worst = 0.0
    for method in METHODS:
        X = delassus(lm, d, q, cons, method=method)
        assert X.shape == G.shape == (sum(c.dim for c in cons),) * 2
        for ref in refs:
            err = rel_err(X, ref)
            worst = max(worst, err)
            assert err < TOL, f"{what}: {method} error {err:.2e}"
        check_psd(X, f"{what} {method}")
    return worst


def chain_model(rng, parents, joints=None, name="m", armature=0.0):
    """A model with the given parent list (``parents[i-1] = π(i)``) and random revolute joints (or the
    given joints), placements and inertias; bodies named ``l1 …``."""
    m = loopdyn.Model(name)
    for k, p in enumerate(parents, start=1):
        if joints is not None:
            jt = joints[k - 1]
        else:
            ax = rng.normal(size=3)
            jt = loopdyn.Revolute(ax / np.linalg.norm(ax))
        m.add_body(
            f"l{k}",
            p if p == 0 else f"l{p}",
            jt,
            (trees.random_rotation(rng), rng.normal(size=3) * 0.3),
            loopdyn.Inertia(*trees.random_inertia(rng)),
            armature=armature,
        )
    return m


# ----------------------------------------------------------------------------------------------
# branching structure


def test_fig1_branching_structure():
    """Spec §2.2 worked example (paper Fig. 1): π = 0,1,2,3,4,2; EEs 7 on link 6, 8 on 3, 9 on 5."""
    s = branching_structure([0, 1, 2, 3, 4, 2], [6, 3, 5])
    assert s.N == [0, 2, 3, 7, 8, 9]
    assert s.D == [2, 2, 3, 9, 9, 7, 7, 8, 9]
    assert s.A == [0, 0, 2, 3, 3, 2, 2, 3, 3]
    assert s.ES[2] == {7, 8, 9}
    assert s.ES[3] == {8, 9}
    assert s.ES[5] == {9}
    assert s.ES[0] == {7, 8, 9}
    assert s.ES[7] == frozenset()
    assert s.cca(8, 9) == 3
    assert s.cca(7, 9) == 2
    assert s.cca(7, 7) == 7
    assert s.parent[7:] == [6, 3, 5]
    # top(j): the child of A(j) on the path to j; compressed tree groups
    assert s.top == {2: 1, 3: 3, 7: 6, 8: 8, 9: 4}
    assert s.groups == {2: [3, 7], 3: [8, 9]}


def test_erratum_e1_unconstrained_leaf():
    """Spec §6.2 item 7: link 1 with an unconstrained leaf child 2 and a child 3 carrying EE 4. The
    paper's literal formula would put the leaf 2 into N and give D(1) = 2; it must be the EE."""
    s = branching_structure([0, 1, 1], [3])
    assert 2 not in s.N
    assert s.N == [0, 4]
    assert s.D[0] == 4  # D(1)
    assert s.D[1] is None  # D(2): no EE below the leaf
    assert s.D[2] == 4  # D(3)
    assert s.A == [0, 0, 0, 0]
    # and the kernels on that tree (a floating variant too)
    rng = np.random.default_rng(71)
    for joints in (None, [loopdyn.FreeFlyer(), loopdyn.Revolute([0, 0, 1]), loopdyn.Spherical()]):
        lm = chain_model(rng, [0, 1, 1], joints)
        d = lm.create_data()
        for kind in ("6d", "3d", rng.normal(size=(2, 6))):
            q, _, _ = trees.random_state(rng, lm)
            check_all(lm, d, q, [Constraint("l3", kind)], "E1")


def _brute_force(parents, ee_links):
    """N, A, D and cca from the definitions (ancestor sets; spec §2.2)."""
    nb = len(parents)
    par = [-1] + list(parents) + list(ee_links)
    nt = len(par)

    def anc(i):  # strict ancestors, including 0
        out = []
        while i > 0:
            i = par[i]
            out.append(i)
        return out

    def cca(i, j):
        return max(set(anc(i) + [i]) & set(anc(j) + [j]))

    ees = list(range(nb + 1, nt))
    branching = {cca(a, b) for a, b in itertools.combinations(ees, 2)} - {0}
    branching -= set(ees)
    N = sorted({0} | set(ees) | branching)
    desc = {i: [j for j in range(1, nt) if i in anc(j)] for i in range(nt)}
    A = [max(set(anc(i)) & set(N)) for i in range(1, nt)]
    D = []
    for i in range(1, nt):
        below = (set(desc[i]) | {i}) & set(N)
        D.append(min(below) if any(e in desc[i] or e == i for e in ees) else None)
    return N, A, D, cca


def test_branching_structure_random_trees():
    """Robust N (real branching links = closest common ancestors of two EEs), A, D and the compressed
    groups (every EE pair with cca ≠ 0 generated exactly once, at its cca) on random trees."""
    rng = np.random.default_rng(5)
    for _ in range(300):
        nb = int(rng.integers(1, 16))
        parents = [int(rng.integers(0, i)) for i in range(1, nb + 1)]
        ne = int(rng.integers(0, 7))
        ee_links = [int(rng.integers(0, nb + 1)) for _ in range(ne)]
        s = branching_structure(parents, ee_links)
        N, A, D, cca = _brute_force(parents, ee_links)
        assert s.N == N
        assert s.A == A
        assert s.D == D
        for e1, e2 in itertools.combinations_with_replacement(range(nb + 1, nb + ne + 1), 2):
            assert s.cca(e1, e2) == cca(e1, e2)
        pairs = {}
        for c, us in s.groups.items():
            below = [sorted(s.ES[u] | ({u} if u > nb else set())) for u in us]
            assert sorted(itertools.chain(*below)) == sorted(s.ES[c])
            for g1, g2 in itertools.combinations(below, 2):
                for e1 in g1:
                    for e2 in g2:
                        key = (min(e1, e2), max(e1, e2))
                        assert key not in pairs
                        pairs[key] = c
        expected = {
            (e1, e2): cca(e1, e2)
            for e1, e2 in itertools.combinations(range(nb + 1, nb + ne + 1), 2)
            if cca(e1, e2) != 0
        }
        assert pairs == expected


def test_structure_is_cached():
    """The bookkeeping is built once per prepared constraint list (no per-call tree walks: P10)."""
    rng = np.random.default_rng(3)
    lm, _ = trees.random_tree(rng, 12, floating=True, with_pinocchio=False)
    d = lm.create_data()
    cons = random_constraints(rng, lm, 5)
    q, _, _ = trees.random_state(rng, lm)
    delassus(lm, d, q, cons, method="pv-osimr")
    prep = prepare(lm, cons)
    packed = pv_osim.packed_structure(d, prep)
    calls = []
    original = pv_osim._pack
    pv_osim._pack = lambda *a: calls.append(a) or original(*a)
    try:
        for method in METHODS:
            delassus(lm, d, q, cons, method=method)
    finally:
        pv_osim._pack = original
    assert not calls
    assert pv_osim.packed_structure(d, prep) is packed


# ----------------------------------------------------------------------------------------------
# random trees


@pytest.mark.parametrize("floating", [False, True])
@pytest.mark.parametrize("depth_first", [True, False])
def test_random_trees(floating, depth_first):
    """Random branching, joints of every kind (revolute, prismatic, unbounded, spherical, free-flyer
    root), mixed 3D / 6D / custom constraints (up to 8 rows) on random frames, some repeated on a
    link, some on the world; links numbered depth-first or in drawn order."""
    rng = np.random.default_rng(101 + 2 * floating + depth_first)
    worst = 0.0
    for n in [1, 2, 3, 4, 6, 8, 12, 17, 25, 40]:
        lm, _ = trees.random_tree(
            rng, n, floating=floating, with_pinocchio=False, depth_first_order=depth_first
        )
        d = lm.create_data()
        for s in range(3):
            cons = random_constraints(rng, lm, int(rng.integers(1, 10)))
            q, _, _ = trees.random_state(rng, lm)
            worst = max(worst, check_all(lm, d, q, cons, f"n={n} state {s}", extra_refs=s == 0))
    assert worst < TOL


def test_against_aba_columns_and_efpa():
    """Spec §6.1 items 2 and 3: a reference from m ABA calls (no mass matrix), and EFPA."""
    rng = np.random.default_rng(17)
    for n, floating in [(5, False), (11, True), (20, True)]:
        lm, _ = trees.random_tree(rng, n, floating=floating, with_pinocchio=False)
        d = lm.create_data()
        cons = random_constraints(rng, lm, 6)
        q, _, _ = trees.random_state(rng, lm)
        ref = aba_delassus(lm, d, q, cons)
        E = delassus(lm, d, q, cons, method="efpa")
        for method in METHODS:
            X = delassus(lm, d, q, cons, method=method)
            assert rel_err(X, ref) < TOL
            assert rel_err(X, E) < 1e-12


def test_armature():
    rng = np.random.default_rng(23)
    for n, floating in [(6, False), (15, True)]:
        lm, _ = trees.random_tree(rng, n, floating=floating, with_pinocchio=False)
        arm = 10.0 ** rng.uniform(-3.0, 1.0, lm.nv)
        arm[rng.random(lm.nv) < 0.25] = 0.0
        lm.armature = arm
        d = lm.create_data()
        for _ in range(2):
            cons = random_constraints(rng, lm, 6)
            q, _, _ = trees.random_state(rng, lm)
            check_all(lm, d, q, cons, f"armature n={n}")
        X = delassus(lm, d, q, cons, method="pv-osimr")
        lm.armature = np.zeros(lm.nv)  # the armature matters
        assert rel_err(delassus(lm, lm.create_data(), q, cons, method="pv-osimr"), X) > 1e-6


# ----------------------------------------------------------------------------------------------
# edge cases (spec §6.2 item 8)


def test_no_constraint_and_single():
    rng = np.random.default_rng(2)
    lm, _ = trees.random_tree(rng, 7, floating=True, with_pinocchio=False)
    d = lm.create_data()
    q, _, _ = trees.random_state(rng, lm)
    for method in METHODS:
        assert delassus(lm, d, q, [], method=method).shape == (0, 0)
    for name in (lm.bodies[-1].name, lm.bodies[0].name):  # a leaf, the floating-base root link
        for kind in ("6d", "3d", [1.0, 0.0, 2.0, 0.0, 0.0, -1.0]):
            check_all(lm, d, q, [Constraint(name, kind)], f"single {name} {kind}")


def test_root_link_world_and_ancestor_descendant():
    """A constraint on the floating-base root link (Λ⁻¹ = K (Iᴬ_1)⁻¹ Kᵀ when alone), on the world
    (zero rows and columns), and on an ancestor and a descendant of one chain."""
    rng = np.random.default_rng(4)
    joints = [
        loopdyn.FreeFlyer(),
        loopdyn.Spherical(),
        loopdyn.Prismatic([0, 1, 0]),
        loopdyn.Revolute([1, 0, 0]),
    ]
    lm = chain_model(rng, [0, 1, 2, 3], joints)
    d = lm.create_data()
    q, _, _ = trees.random_state(rng, lm)
    cases = [
        [Constraint("l1", "6d")],
        [Constraint("l1", "3d"), Constraint("l4", "6d")],
        [
            Constraint("l4", "6d"),
            Constraint("l2", "3d"),
            Constraint("l1", "6d"),
            Constraint("l3", rng.normal(size=(4, 6))),
        ],
        [Constraint("universe", "6d"), Constraint("l3", "3d"), Constraint(0, "3d"), Constraint("l2", "6d")],
    ]
    for cons in cases:
        check_all(lm, d, q, cons, str([c.body for c in cons]))
    cons = cases[3]
    for method in METHODS:
        X = delassus(lm, d, q, cons, method=method)
        assert np.all(X[:6] == 0.0) and np.all(X[:, :6] == 0.0)
        assert np.all(X[9:12] == 0.0) and np.all(X[:, 9:12] == 0.0)


def test_redundant_sets():
    """Four 3D contacts on one link, a single 12-row K, duplicated 6D welds, 1-row constraints,
    m > n: singular PSD Λ⁻¹ returned exactly."""
    rng = np.random.default_rng(6)
    lm, _ = trees.random_tree(rng, 5, floating=False, with_pinocchio=False)
    d = lm.create_data()
    body = lm.bodies[-1].name
    other = lm.bodies[1].name
    cons = [Constraint(body, "3d", (np.eye(3), rng.normal(size=3) * 0.2)) for _ in range(4)]
    cons += [Constraint(body, rng.normal(size=(12, 6))), Constraint(other, "6d"), Constraint(other, "6d")]
    cons += [Constraint(other, rng.normal(size=(1, 6))), Constraint(body, rng.normal(size=6))]
    q, _, _ = trees.random_state(rng, lm)
    check_all(lm, d, q, cons, "redundant")
    X = delassus(lm, d, q, cons, method="pv-osimr")
    assert X.shape[0] == 38 > lm.nv
    assert np.linalg.matrix_rank(X, tol=1e-9 * np.abs(X).max()) <= lm.nv
    # alone: one 12-row K (split into two 6-row end-effectors on the same link) and a 7-row one
    for rows in (12, 7, 13):
        check_all(lm, d, q, [Constraint(body, rng.normal(size=(rows, 6)))], f"{rows}-row K")


def test_chain_with_weld_on_every_link():
    """Every link but the tip is a branching link (it carries an EE and has a child with EEs below)."""
    rng = np.random.default_rng(8)
    n = 12
    lm = chain_model(rng, list(range(n)))
    d = lm.create_data()
    s = branching_structure(list(range(n)), list(range(1, n + 1)))
    # every link but the last (whose only EE child makes it a plain chain link) branches
    assert s.N == list(range(n)) + list(range(n + 1, 2 * n + 1))
    for kinds in (["6d"] * n, ["3d", "6d"] * (n // 2)):
        cons = [Constraint(f"l{k + 1}", kind) for k, kind in enumerate(kinds)]
        q, _, _ = trees.random_state(rng, lm)
        check_all(lm, d, q, cons, "chain")


def test_k2_chain_and_fig1_tree():
    """The k² chain (6D at links k, 2k, …, k²) and the Fig. 1 tree with its constraints."""
    rng = np.random.default_rng(12)
    k = 4
    lm = chain_model(rng, list(range(k * k)))
    d = lm.create_data()
    cons = [Constraint(f"l{k * j}", "6d") for j in range(1, k + 1)]
    q, _, _ = trees.random_state(rng, lm)
    check_all(lm, d, q, cons, "k² chain")
    lm = chain_model(rng, [0, 1, 2, 3, 4, 2])
    d = lm.create_data()
    cons = [Constraint("l6", "6d"), Constraint("l3", "3d"), Constraint("l5", "6d")]
    for _ in range(3):
        q, _, _ = trees.random_state(rng, lm)
        check_all(lm, d, q, cons, "fig1")


def test_two_root_subtrees_exact_zero_blocks():
    """A fixed base with two subtrees hanging from the world: cca = 0, blocks exactly zero (P7)."""
    rng = np.random.default_rng(9)
    lm = chain_model(rng, [0, 1, 2, 0, 4, 4, 1])
    d = lm.create_data()
    cons = [
        Constraint("l3", "3d"),
        Constraint("l5", "6d"),
        Constraint("l7", "6d"),
        Constraint("l6", "3d"),
        Constraint("l2", rng.normal(size=(2, 6))),
    ]
    a = np.r_[0:3, 9:15, 18:20]  # rows on the subtree of l1 (l3, l7, l2)
    b = np.r_[3:9, 15:18]  # rows on the subtree of l4 (l5, l6)
    for _ in range(3):
        q, _, _ = trees.random_state(rng, lm)
        check_all(lm, d, q, cons, "two subtrees")
        for method in METHODS:
            X = delassus(lm, d, q, cons, method=method)
            assert X.shape == (20, 20)
            assert np.all(X[np.ix_(a, b)] == 0.0)
            assert np.all(X[np.ix_(b, a)] == 0.0)
            assert np.abs(X[np.ix_(a, a)]).max() > 0.0 and np.abs(X[np.ix_(b, b)]).max() > 0.0


def test_permutation_permutes_blocks():
    rng = np.random.default_rng(10)
    lm, _ = trees.random_tree(rng, 14, floating=True, with_pinocchio=False)
    d = lm.create_data()
    cons = random_constraints(rng, lm, 7)
    q, _, _ = trees.random_state(rng, lm)
    offs = np.cumsum([0] + [c.dim for c in cons])
    for method in METHODS:
        X = delassus(lm, d, q, cons, method=method)
        for _ in range(3):
            perm = rng.permutation(len(cons))
            Xp = delassus(lm, d, q, [cons[k] for k in perm], method=method)
            rows = np.concatenate([np.arange(offs[k], offs[k + 1]) for k in perm])
            assert rel_err(Xp, X[np.ix_(rows, rows)]) < 1e-13


def test_relabelled_links_same_matrix():
    """The same tree built in depth-first and in drawn (non depth-first) link order."""
    rng = np.random.default_rng(14)
    for idx in trees.drawn_order_indices()[:4]:
        lm_a, _ = trees.tree_case(idx, with_pinocchio=False)
        lm_b, _ = trees.tree_case(idx, with_pinocchio=False, depth_first_order=False)
        da, db = lm_a.create_data(), lm_b.create_data()
        names = [b.name for b in lm_a.bodies]
        cons = [Constraint(names[int(k)], "6d" if k % 2 else "3d") for k in rng.integers(0, len(names), 5)]
        qa = trees.random_configuration(rng, lm_a)
        # the same joint values in lm_b's coordinate order
        qb = np.empty(lm_b.nq)
        for b in lm_a.bodies:
            bb = lm_b.bodies[[x.name for x in lm_b.bodies].index(b.name)]
            qb[bb.idx_q : bb.idx_q + bb.joint.nq] = qa[b.idx_q : b.idx_q + b.joint.nq]
        for method in METHODS:
            assert (
                rel_err(
                    delassus(lm_b, db, qb, cons, method=method), delassus(lm_a, da, qa, cons, method=method)
                )
                < TOL
            )


def test_list_configuration_and_errors():
    rng = np.random.default_rng(1)
    lm, _ = trees.random_tree(rng, 5, floating=True, with_pinocchio=False)
    d = lm.create_data()
    q, _, _ = trees.random_state(rng, lm)
    cons = [Constraint(lm.bodies[-1].name, "6d"), Constraint(lm.bodies[0].name, "3d")]
    for method in METHODS:
        X = delassus(lm, d, q, cons, method=method)
        assert np.array_equal(delassus(lm, d, list(q), cons, method=method), X)
        with pytest.raises(ShapeError):
            delassus(lm, d, q[:-1], cons, method=method)
        qb = q.copy()
        qb[3:7] *= 2.0
        with pytest.raises(ConfigurationError):
            delassus(lm, d, qb, cons, method=method)


# ----------------------------------------------------------------------------------------------
# damping


def test_added_inertia_matches_efpa():
    """The penalised system (``added · K_eᵀ K_e`` on each constrained link) in all three algorithms."""
    rng = np.random.default_rng(15)
    lm, _ = trees.random_tree(rng, 16, floating=True, with_pinocchio=False)
    d = lm.create_data()
    cons = random_constraints(rng, lm, 6)
    q, _, _ = trees.random_state(rng, lm)
    prep = prepare(lm, cons)
    for added in (0.0, 0.3, 1e3):
        E = run_efpa(lm, d, q, prep, added)
        assert rel_err(run_pv_osim(lm, d, q, prep, added, reduced=True), E) < 1e-12
        assert rel_err(run_pv_osim(lm, d, q, prep, added), E) < 1e-12


@pytest.mark.parametrize("mu", [1e-1, 1e-4])
def test_damped_inverse(mu):
    rng = np.random.default_rng(13)
    for n, floating in [(6, False), (14, True), (25, True)]:
        lm, _ = trees.random_tree(rng, n, floating=floating, with_pinocchio=False)
        d = lm.create_data()
        cons = random_constraints(rng, lm, 5)
        q, _, _ = trees.random_state(rng, lm)
        G = delassus(lm, d, q, cons, method="dense")
        ref = np.linalg.inv(G + mu * np.eye(len(G)))
        tol = 1e-12 if mu > 1e-2 else 1e-9
        X = damped_delassus_inverse(lm, d, q, cons, mu, method="pv-osimr")
        assert np.abs(X - ref).max() / np.abs(ref).max() < tol
        check_psd(X)


# ----------------------------------------------------------------------------------------------
# Pinocchio (as the EFPA tests: its J M⁻¹ Jᵀ and computeDelassusMatrix on the example robots)


@pytest.mark.parametrize("robot", ["solo12", "talos_reduced"])
def test_robots_vs_pinocchio(robot):
    import pinocchio as pin
    from test_delassus import ROBOT_CONSTRAINTS, pin_reference

    lm, pm = trees.robot_case(robot)
    d = lm.create_data()
    cons = ROBOT_CONSTRAINTS[robot]
    rng = np.random.default_rng(4)
    for _ in range(3):
        q, _, _ = trees.random_state(rng, lm)
        G, Gp = pin_reference(pin, pm, q, lm, cons)
        assert Gp is not None
        for method in METHODS:
            X = delassus(lm, d, q, cons, method=method)
            assert rel_err(X, G) < 1e-9
            assert rel_err(X, Gp) < 1e-9
            check_psd(X, robot)
        check_all(lm, d, q, cons, robot)
