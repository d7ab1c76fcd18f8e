"""Loop closures across many joints with general axes (issue #29 §4): φ written through intermediate
symbols (:mod:`loopdyn.constraints.formulas`), K and k by forward mode on the tape, ∂²φ and ∂³φ by
third-order jets.

* the 9- and 12-joint point and weld loops of :mod:`long_loops` (random axes and placements) build
  their clusters and Data within 10 s of CPU with the symbolic cache off (a hang guard: the
  composed formulas took minutes), through definitions, with a tape linear in the loop's length;
* φ is checked against numpy forward kinematics of the spec (independent of the sympy geometry), and
  is 0 at the assembly configuration;
* the tape's K and k against central differences of its φ and K, and against the jets (another
  evaluation of the same definitions); the jets' second and third derivatives against differences;
* C-ABA, C-RNEA and CRBA against Pinocchio on the spanning tree with the loop rows from its frame
  Jacobians and one KKT solve (:class:`loop_oracles.SpanningPinocchio`), 1e-9 relative;
* ``rnea_derivatives`` against central differences along ``integrate``;
* an MJCF weld equality across 9 hinges loads within 10 s and matches the same oracle;
* today's loops keep their tapes: the programs of the built-in loop robots are the ones of the
  composed expressions (built here without definitions), with the instruction counts of main.
"""

from __future__ import annotations

import signal
import time
from contextlib import contextmanager

import numpy as np
import pytest
import sympy as sp
from long_loops import _axis_rotation, chain_spec, long_loop_model
from loop_oracles import SpanningPinocchio
from test_derivatives import RTOL_FD, assert_rel, central_jacobian

import loopdyn
from loopdyn.constraints import geometry
from loopdyn.constraints.formulas import Definitions, Formulas, jet_function
from loopdyn.constraints.tape import compile_constraint
from loopdyn.model.clusters import IMPLICIT, nearest_common_ancestor
from loopdyn.model.state import cluster_functions

BUDGET = 10.0  # CPU seconds: every loader call, clusters and Data included
TOL = 1e-9
CASES = [(9, "point"), (9, "weld"), (12, "point"), (12, "weld")]


@contextmanager
def hang_guard(seconds: float):
    """Fail (instead of hanging the suite) if the block runs past ``seconds`` of wall time."""

    def handler(signum, frame):
        raise TimeoutError(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _implicit(model):
    return [c for c in model.clusters().clusters if c.kind == IMPLICIT]


@pytest.fixture(scope="module", params=CASES, ids=[f"{k}{n}" for n, k in CASES])
def long_model(request):
    n, kind = request.param
    mp = pytest.MonkeyPatch()
    mp.setenv("LOOPDYN_SYMBOLIC_CACHE", "0")  # cold: every formula built, differentiated, compiled
    try:
        with hang_guard(12 * BUDGET):
            t = time.process_time()
            model = long_loop_model(n, kind)
            model.clusters()
            data = model.create_data(native_programs=False)
            cpu = time.process_time() - t
    finally:
        mp.undo()
    return n, kind, model, data, cpu


def test_loads_within_budget_through_definitions(long_model):
    n, kind, model, data, cpu = long_model
    assert cpu < BUDGET, f"{kind} loop over {n} joints: {cpu:.1f} s of CPU to build"
    (c,) = _implicit(model)
    assert c.n == n and len(c.definitions) > 0  # the long path was taken
    program = compile_constraint(list(c.phi_exprs) + list(c.check_exprs), c.symbols, c.definitions)
    # linear growth: the composed formulas of 9 general joints were ~330 000 operations
    assert program.n_instr < 1200 * n, program.n_instr


def _numpy_rows(n: int, kind: str, q_cluster: np.ndarray) -> np.ndarray:
    """φ of :func:`long_loops.chain_spec`'s loop by numpy forward kinematics (root angle irrelevant:
    the loop's NCA is the root, so use 0)."""
    s = chain_spec(n, 0)
    q = np.concatenate([[0.0], q_cluster])
    pose = {"universe": (np.eye(3), np.zeros(3))}
    for (name, parent, R, p, a), t in zip(s["bodies"], q, strict=True):
        Rp, pp = pose[parent]
        pose[name] = (Rp @ R @ _axis_rotation(a, t), pp + Rp @ p)
    (Ra, pa), (Rb, pb) = pose[s["tips"][0]], pose[s["tips"][1]]
    RA, pA = Ra @ s["pred"][0], pa + Ra @ s["pred"][1]
    RB, pB = Rb @ s["succ"][0], pb + Rb @ s["succ"][1]
    rows = list(pA - pB)
    if kind == "weld":
        Rr = RA.T @ RB
        rows += [(Rr[2, 1] - Rr[1, 2]) / 2, (Rr[0, 2] - Rr[2, 0]) / 2, (Rr[1, 0] - Rr[0, 1]) / 2]
    return np.array(rows)


def _all_rows_program(model):
    """All the loop's rows (not only the kept ones) through definitions, and the cluster."""
    (c,) = _implicit(model)
    con = model.constraints[0]
    nca = nearest_common_ancestor(model, [model.body_id(con.predecessor), model.body_id(con.successor)])
    by_body = {b: c.symbols[k] for k, b in enumerate(c.bodies)}
    defs = Definitions()
    rows = geometry.loop_joint_phi(model, con, nca, by_body, defs)
    return c, rows, defs.used_by(rows)


def test_phi_matches_forward_kinematics_and_closes_at_assembly(long_model):
    n, kind, model, data, _ = long_model
    c, rows, defs = _all_rows_program(model)
    program = compile_constraint(rows, c.symbols, defs)
    rng = np.random.default_rng(3)
    for _ in range(3):
        q = rng.uniform(-np.pi, np.pi, n)
        expected = _numpy_rows(n, kind, q)
        assert np.abs(program.evaluate(q)[0] - expected).max() < 1e-13 * max(1.0, np.abs(expected).max())
    assert np.abs(_numpy_rows(n, kind, c.q_ref)).max() < 1e-12
    q0 = loopdyn.neutral(model)
    assert np.abs(loopdyn.constraint_residual(model, q0)).max() < 1e-12
    assert np.abs(cluster_functions(c)[0](c.q_ref)).max() < 1e-12
    # negative control: off the loop, φ is far from zero
    assert np.abs(_numpy_rows(n, kind, c.q_ref + 0.1)).max() > 1e-3


def test_tape_K_k_against_differences_and_jets(long_model):
    n, kind, model, data, _ = long_model
    c, rows, defs = _all_rows_program(model)
    program = compile_constraint(rows, c.symbols, defs)
    jets = jet_function(Formulas(defs, tuple(rows), tuple(c.symbols)))
    rng = np.random.default_rng(4)
    h = 1e-5
    for _ in range(2):
        q, qd = rng.uniform(-np.pi, np.pi, n), rng.normal(size=n)
        phi, K, k = program.evaluate(q, qd)
        # K: central differences of the tape's own φ (4th order)
        K_fd = central_jacobian(lambda d, q=q: program.evaluate(q + d)[0], n, 1e-3)
        assert np.abs(K - K_fd).max() < 1e-9 * max(1.0, np.abs(K).max())
        # k = −K̇q̇: central difference of K along q̇
        Kdot = (program.evaluate(q + h * qd)[1] - program.evaluate(q - h * qd)[1]) / (2 * h)
        assert np.abs(k + Kdot @ qd).max() < 1e-8 * max(1.0, np.abs(k).max())
        # the jets: the same derivatives from the definitions evaluated in another way, to rounding
        J = jets(q)
        assert np.abs(phi - [r.f for r in J]).max() < 1e-13
        assert np.abs(K - np.array([r.g for r in J])).max() < 1e-12 * max(1.0, np.abs(K).max())
        assert np.abs(k + np.array([qd @ r.H @ qd for r in J])).max() < 1e-12 * max(1.0, np.abs(k).max())
        # the jets' third derivatives against differences of their Hessians
        u = rng.normal(size=n)
        T = np.array([r.T for r in J])
        Hp, Hm = (np.array([r.H for r in jets(q + s * h * u)]) for s in (1.0, -1.0))
        T_fd = (Hp - Hm) / (2 * h)
        assert np.abs(np.einsum("rijk,k->rij", T, u) - T_fd).max() < 1e-7 * max(1.0, np.abs(T_fd).max())
        # negative control: a wrong bias (K̇q̇ with the opposite sign) fails the same check
        assert np.abs(-k + Kdot @ qd).max() > 1e-6


def _oracle_G(oracle, model):
    """G (spanning velocity per independent velocity) from the oracle's null space N of the loop rows:
    the unique basis of span N whose independent rows are the identity."""
    N = oracle.last["N"]
    return N @ np.linalg.inv(N[oracle.ind, :])


def test_dynamics_match_pinocchio_kkt(long_model):
    """C-ABA (clusters of at most 6 independent coordinates: see the next test), C-RNEA and CRBA."""
    n, kind, model, data, _ = long_model
    (c,) = _implicit(model)
    oracle = SpanningPinocchio(model)
    rng = np.random.default_rng(5)
    q0 = loopdyn.neutral(model)
    for _ in range(2):
        q = loopdyn.integrate(model, q0, 0.3 * rng.normal(size=model.nv))
        v, tau = rng.normal(size=model.nv), rng.normal(size=model.nv)
        ddy_ref, _ = oracle.forward_dynamics(q, v, tau)
        scale = max(1.0, np.abs(ddy_ref).max())
        ddy = loopdyn.aba(model, data, q, v, tau) if c.m <= 6 else ddy_ref
        assert np.abs(ddy - ddy_ref).max() < TOL * scale, "C-ABA"
        # C-RNEA at the oracle's acceleration gives back τ
        tau_back = loopdyn.rnea(model, data, q, v, ddy_ref)
        assert np.abs(tau_back - tau).max() < TOL * max(1.0, np.abs(tau).max()), "C-RNEA"
        # CRBA: H = Gᵀ M_s G with G from the oracle's null space
        G = _oracle_G(oracle, model)
        H_ref = G.T @ oracle.last["M"] @ G
        H = loopdyn.crba(model, data, q)
        assert np.abs(H - H_ref).max() < TOL * np.abs(H_ref).max(), "CRBA"
        # negative control: without the loop's bias γ the oracle is measurably different
        ddy_n, _ = oracle.forward_dynamics(q, v, tau, loop_bias=False)
        assert np.abs(ddy - ddy_n).max() > 1e3 * TOL * scale


def test_aba_on_more_than_six_independent_coordinates_names_the_limit_and_crba_solves_it():
    """C-ABA inverts each cluster's articulated inertia 𝖣 (m × m) with a solver written for m ≤ 6: a
    point loop over 12 joints (m = 9) gets UnsupportedFeatureError naming the cluster and its size (not
    a SingularInertiaError, which would call a sound mechanism singular), the Data stays usable, and
    the way the message points to — crba and nonlinear_effects — gives the oracle's accelerations."""
    model = long_loop_model(12, "point")
    (c,) = _implicit(model)
    assert c.m == 9
    d = model.create_data(native_programs=False)
    rng = np.random.default_rng(5)
    q = loopdyn.integrate(model, loopdyn.neutral(model), 0.3 * rng.normal(size=model.nv))
    v, tau = rng.normal(size=model.nv), rng.normal(size=model.nv)
    ddy_ref, _ = SpanningPinocchio(model).forward_dynamics(q, v, tau)
    too_large = loopdyn.errors.UnsupportedFeatureError
    with pytest.raises(too_large, match=r"has 9 independent coordinates") as info:
        loopdyn.aba(model, d, q, v, tau)
    assert model.bodies[c.bodies[0] - 1].name in str(info.value)
    H = loopdyn.crba(model, d, q)
    ddy = np.linalg.solve(H, tau - loopdyn.nonlinear_effects(model, d, q, v))
    assert np.abs(ddy - ddy_ref).max() < TOL * max(1.0, np.abs(ddy_ref).max())


@pytest.mark.parametrize("case", [(9, "weld"), (12, "point")], ids=["weld9", "point12"])
def test_rnea_derivatives_match_central_differences(case):
    n, kind = case
    model = long_loop_model(n, kind)
    d = model.create_data(native_programs=False)
    rng = np.random.default_rng(6)
    q = loopdyn.integrate(model, loopdyn.neutral(model), 0.3 * rng.normal(size=model.nv))
    v, a = rng.normal(size=model.nv), rng.normal(size=model.nv)
    fext = rng.normal(size=(model.njoints, 6))
    got = loopdyn.rnea_derivatives(model, d, q, v, a, fext)
    rnea = loopdyn.rnea
    expected = (
        central_jacobian(lambda x: rnea(model, d, loopdyn.integrate(model, q, x), v, a, fext), model.nv),
        central_jacobian(lambda x: rnea(model, d, q, v + x, a, fext), model.nv),
        loopdyn.crba(model, d, q),
    )
    scale = np.max(np.abs(got[2]))
    for what, x, y in zip(("dtau_dq", "dtau_dv", "dtau_da"), got, expected, strict=True):
        assert_rel(x, y, RTOL_FD, f"{kind}{n}: {what}", scale)


DIAG = np.array([0.02, 0.025, 0.03])  # principal moments per unit mass of the MJCF bodies


def _mjcf(n: int, seed: int = 1) -> str:
    """A root hinge, two chains of hinges (``n`` in all, general axes and placements) and a weld
    equality between their tips, closed at qpos0 (MuJoCo computes the weld's relative pose there)."""
    s = chain_spec(n, seed)
    children: dict = {}
    for k, b in enumerate(s["bodies"]):
        children.setdefault(b[1], []).append(k)

    def quat(R):
        w = np.sqrt(max(0.0, 1.0 + np.trace(R))) / 2
        x = (R[2, 1] - R[1, 2]) / (4 * w)
        y = (R[0, 2] - R[2, 0]) / (4 * w)
        z = (R[1, 0] - R[0, 1]) / (4 * w)
        return w, x, y, z

    def f(xs):
        return " ".join(f"{float(x):.17g}" for x in xs)

    def body(k, indent):
        name, _, R, p, a = s["bodies"][k]
        mass, com, _ = s["inertias"][k]
        pad = " " * indent
        lines = [
            f'{pad}<body name="{name}" pos="{f(p)}" quat="{f(quat(R))}">',
            f'{pad}  <joint name="j_{name}" type="hinge" axis="{f(a)}"/>',
            f'{pad}  <inertial pos="{f(com)}" mass="{mass:.17g}" diaginertia="{f(mass * DIAG)}"/>',
        ]
        for child in children.get(name, []):
            lines += body(child, indent + 2)
        return lines + [f"{pad}</body>"]

    worldbody = "\n".join(body(0, 4))
    return f"""<mujoco model="long_weld">
  <worldbody>
{worldbody}
  </worldbody>
  <equality>
    <weld name="closure" body1="{s["tips"][0]}" body2="{s["tips"][1]}"/>
  </equality>
</mujoco>"""


def test_mjcf_weld_across_nine_hinges(monkeypatch):
    monkeypatch.setenv("LOOPDYN_SYMBOLIC_CACHE", "0")
    xml = _mjcf(9)
    with hang_guard(12 * BUDGET):
        t = time.process_time()
        model = loopdyn.load_mjcf(xml)
        model.clusters()
        cpu = time.process_time() - t
    assert cpu < BUDGET, f"load_mjcf: {cpu:.1f} s of CPU"
    (c,) = _implicit(model)
    assert c.n == 9 and len(c.definitions) > 0
    q0 = loopdyn.neutral(model)
    assert np.abs(loopdyn.constraint_residual(model, q0)).max() < 1e-12
    d = model.create_data(native_programs=False)
    oracle = SpanningPinocchio(model)
    rng = np.random.default_rng(7)
    q = loopdyn.integrate(model, q0, 0.3 * rng.normal(size=model.nv))
    v, tau = rng.normal(size=model.nv), rng.normal(size=model.nv)
    ddy_ref, _ = oracle.forward_dynamics(q, v, tau)
    assert np.abs(loopdyn.aba(model, d, q, v, tau) - ddy_ref).max() < TOL * max(1.0, np.abs(ddy_ref).max())


# ------------------------------------------------------------------------------------------------
# today's loops are unchanged

#: instruction counts of the programs of the built-in loop robots on main before this change
#: (commit 9a13226; ``ConstraintProgram.n_instr`` of each implicit cluster's program, in cluster order)
MAIN_N_INSTR = {
    "four_bar": [51],
    "planar_leg_linkage": [55],
    "five_bar": [104],
    "rssr_linkage": [116],
    "delta_robot": [2182],
}


@pytest.mark.parametrize("robot", sorted(MAIN_N_INSTR))
def test_small_loops_keep_their_composed_tapes(robot):
    """Below the size bound nothing changes: no definitions, and each program equals the one compiled
    from the composed expressions (``loop_joint_phi`` without definitions, as before), instruction for
    instruction, and is no longer than main's. Not equal to main's count: the count depends on the
    last bits of the model's constants, which NumPy and libm compute differently on different
    machines (sympy merges like terms only when their constants are equal) — the delta robot's
    program had 2182 instructions on the machines of the time and has 1972 on an AVX-512 machine of
    2026-11-28, the four smaller loops the same counts on both. Rounding the constants to make them
    machine-independent was tried: it moves the loops' closure at their built-in configurations by
    3e-16, which ``test_parallel_mechanisms`` refuses."""
    model = getattr(loopdyn.robots, robot)()
    counts = []
    for c in _implicit(model):
        assert c.definitions == ()
        program = compile_constraint(list(c.phi_exprs) + list(c.check_exprs), c.symbols, c.definitions)
        by_body = {b: c.symbols[k] for k, b in enumerate(c.bodies)}
        rows, checks = [], []
        for con in c.constraints:
            bodies = [model.body_id(con.predecessor), model.body_id(con.successor)]
            nca = nearest_common_ancestor(model, bodies)
            rows += geometry.loop_joint_phi(model, con, nca, by_body)
            checks += geometry.loop_joint_branch(model, con, nca, by_body)
        composed = [rows[r] for r in c.rows]
        assert [sp.srepr(e) for e in composed] == [sp.srepr(e) for e in c.phi_exprs]
        old = compile_constraint(composed + checks, c.symbols)
        assert np.array_equal(program.code, old.code) and np.array_equal(program.consts, old.consts)
        assert np.array_equal(program.K, old.K) and np.array_equal(program.kbias, old.kbias)
        counts.append(program.n_instr)
    assert len(counts) == len(MAIN_N_INSTR[robot])
    assert all(n <= main for n, main in zip(counts, MAIN_N_INSTR[robot], strict=True)), counts


def test_baselines_constraint_rows_through_jets():
    """The baselines' K and k of a long loop (third-order jets, :mod:`loopdyn.baselines`) equal the
    kernels' tape (forward mode) at random spanning states."""
    from loopdyn.baselines import constraint_jacobians

    model = long_loop_model(9, "weld")
    (c,) = _implicit(model)
    program = compile_constraint(list(c.phi_exprs), c.symbols, c.definitions)
    rng = np.random.default_rng(8)
    cols = np.array([model.bodies[b - 1].idx_v for b in c.bodies])
    for _ in range(2):
        qs, vs = rng.uniform(-np.pi, np.pi, model.spanning_nq), rng.normal(size=model.spanning_nv)
        K, k = constraint_jacobians(model, qs, vs)
        _, K_t, k_t = program.evaluate(qs[cols], vs[cols])
        assert np.abs(K[:, cols] - K_t).max() < 1e-12 * max(1.0, np.abs(K_t).max())
        assert np.abs(np.delete(K, cols, axis=1)).max() == 0.0
        assert np.abs(k - k_t).max() < 1e-12 * max(1.0, np.abs(k_t).max())


def test_long_programs_are_interpreted_not_compiled():
    """A program past ``MAX_NATIVE_INSTRUCTIONS`` is not compiled natively (LLVM's time on one long
    straight-line function: ~50 s for 10 000 instructions): its address is 0 and the kernels interpret
    it, with the same results as a Data that interprets every program."""
    from loopdyn.constraints.native import MAX_NATIVE_INSTRUCTIONS
    from loopdyn.constraints.tape import T_CODE_LEN, T_NATIVE_K, T_NATIVE_PHI_K

    model = long_loop_model(9, "weld")
    d = model.create_data()
    assert d.table[0, T_CODE_LEN] > MAX_NATIVE_INSTRUCTIONS
    assert d.table[0, T_NATIVE_PHI_K] == 0 and d.table[0, T_NATIVE_K] == 0
    ref = model.create_data(native_programs=False)
    rng = np.random.default_rng(9)
    q = loopdyn.integrate(model, loopdyn.neutral(model), 0.3 * rng.normal(size=model.nv))
    v, tau = rng.normal(size=model.nv), rng.normal(size=model.nv)
    assert np.array_equal(loopdyn.aba(model, d, q, v, tau), loopdyn.aba(model, ref, q, v, tau))


@pytest.mark.parametrize("fallback", [False, True], ids=["tape-forward-mode", "sympy-fallback"])
def test_compile_constraint_with_definitions(fallback):
    """``compile_constraint(rows, q, definitions)`` on small hand-written formulas: φ equals the
    expanded rows (sympy, evaluated independently), K and k match central differences. An ``atan2``
    (no forward-mode rule on the tape) takes the sympy path over the definitions."""
    x, y, z = sp.symbols("x y z", real=True)
    t0, t1 = sp.symbols("t0 t1", real=True)
    defs = ((t0, sp.sin(x) * y + sp.cos(z) ** 2), (t1, t0 * sp.exp(y) - sp.sqrt(1 + z**2) * x))
    rows = [t1 * t0 - z, t1 / (2 + sp.cos(t0)) + (sp.atan2(t0, 2 + y) if fallback else sp.log(3 + t0**2))]
    program = compile_constraint(rows, [x, y, z], defs)
    expanded = sp.lambdify([x, y, z], Formulas(defs, tuple(rows), (x, y, z)).expanded())
    rng = np.random.default_rng(10)
    h = 1e-5
    for _ in range(3):
        q, qd = rng.uniform(-1, 1, 3), rng.normal(size=3)
        phi, K, k = program.evaluate(q, qd)
        assert np.abs(phi - np.array(expanded(*q), float)).max() < 1e-14
        K_fd = central_jacobian(lambda d, q=q: program.evaluate(q + d)[0], 3, 1e-3)
        assert np.abs(K - K_fd).max() < 1e-9
        Kdot = (program.evaluate(q + h * qd)[1] - program.evaluate(q - h * qd)[1]) / (2 * h)
        assert np.abs(k + Kdot @ qd).max() < 1e-8
