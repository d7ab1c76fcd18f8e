"""Constraint programs compiled to native functions (``loopdyn.constraints.native``).

Oracles: the tape interpreter, which must give the same bits (the native code is the tape's
operations in the tape's order, without fast-math), and ``sympy.lambdify`` of the same φ, K and k
(test_tape's random expressions and every opcode). Negative controls: a table whose native columns
name another program's functions gives other results (the kernels really call the address), and a
Data with native programs off, or with no writable cache folder, interprets the tapes.
"""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
import sympy as sp
from test_tape import assert_close, every_opcode_phi, random_case, reference

import loopdyn as ld
from loopdyn.constraints import compile_constraint, evaluate, native, pack_programs
from loopdyn.constraints.tape import T_NATIVE_K, T_NATIVE_PHI_K
from loopdyn.model import layout

IMPLICIT_ROBOTS = ["four_bar", "planar_leg_linkage", "five_bar", "rssr_linkage", "tello", "delta_robot"]


def both_ways(programs, q, qd, p=0):
    """``(native, tape)`` results ``(φ, K, k)`` of program p of ``programs`` at (q, q̇)."""
    pk = pack_programs(programs)
    addresses = native.native_addresses(pk.code, pk.table, pk.outputs)
    assert addresses is not None and np.all(addresses != 0)
    out = []
    for addr in (addresses, None):
        table = pk.table.copy()
        native.fill_addresses(table, addr)
        prog = programs[p]
        regs = np.full(pk.max_reg + 3, np.nan)
        phi, K, k = np.full(prog.c, np.nan), np.full(prog.c * prog.n, np.nan), np.full(prog.c, np.nan)
        evaluate(pk.code, pk.consts, table, pk.outputs, p, np.asarray(q, float), np.asarray(qd, float),
                 regs, phi, K, k)  # fmt: skip
        out.append((phi, K.reshape(prog.c, prog.n), k))
    return out


@pytest.mark.parametrize("seed", range(40))
def test_random_programs_same_bits_as_tape(seed):
    """test_tape's random programs at the points where test_random_expressions_match_lambdify checks
    the tape against lambdify (same seeds, same draws): native = tape bit for bit, NaN included."""
    phi, q = random_case(seed)
    prog = compile_constraint(phi, q)
    rng = np.random.default_rng(seed)
    for _ in range(6):
        x = rng.uniform(-1.5, 1.5, len(q))
        v = rng.uniform(-2, 2, len(q))
        native_out, tape_out = both_ways([prog], x, v)
        for a, b in zip(native_out, tape_out, strict=True):
            np.testing.assert_array_equal(a, b)


def test_every_opcode_native():
    x, y = sp.symbols("x y", real=True)
    phi = every_opcode_phi(x, y)
    prog = compile_constraint(phi, [x, y])
    assert set(prog.op_counts()) >= set(ld.constraints.OPCODES) - {"COPY"}
    source = native.generate_source(prog.code, np.concatenate([prog.phi, prog.K.ravel(), prog.kbias]),
                                    prog.n, prog.c, prog.phi_len, prog.K_len)  # fmt: skip
    for call in ("math.sin", "math.atan2", "_powi(", "math.asin", "abs(", " ** "):
        assert call in source, call
    f_phi, f_K, f_k = reference(phi, [x, y])
    rng = np.random.default_rng(3)
    for _ in range(10):
        xs, vs = rng.uniform(-1, 1, 2), rng.uniform(-1, 1, 2)
        nat, tape = both_ways([prog], xs, vs)
        ref = (f_phi(xs), f_K(xs), f_k(xs, vs))
        for a, b, r, name in zip(nat, tape, ref, ("phi", "K", "k"), strict=True):
            np.testing.assert_array_equal(a, b)
            assert_close(a, r, what=name)


def test_hand_written_program_copy_negative_power_and_velocity():
    op = ld.constraints.OPCODES
    code = [(op["COPY"], 2, 0, 0), (op["CONST"], 3, 1, 0), (op["MUL"], 4, 2, 3), (op["POW_INT"], 5, 0, -2),
            (op["COPY"], 6, 4, 0), (op["MUL"], 7, 1, 1)]  # fmt: skip
    prog = ld.constraints.ConstraintProgram(
        n=1, c=2, code=np.array(code), consts=np.array([9.0, 2.5]), n_reg=8,
        phi=np.array([6, 5]), K=np.array([[3], [-1]]), kbias=np.array([-1, 7]),
    )  # fmt: skip
    (phi, K, k), _ = both_ways([prog], [0.5], [4.0])
    np.testing.assert_array_equal(phi, [1.25, 4.0])
    np.testing.assert_array_equal(K, [[2.5], [0.0]])
    np.testing.assert_array_equal(k, [0.0, 16.0])


def test_edge_programs_native():
    """Constant K with a structural zero row, an output that is an input register, no rows."""
    a, b = sp.symbols("a b", real=True)
    programs = [
        compile_constraint([a - 2 * b, sp.Integer(0), 3 * a + sp.pi], [a, b]),
        compile_constraint([a], [a]),
        compile_constraint([], [a, b]),
        compile_constraint([sp.sin(a) * b], [a, b]),
    ]
    x, v = np.array([0.4, -1.2]), np.array([0.9, 0.3])
    for p, prog in enumerate(programs):
        nat, tape = both_ways(programs, x[: prog.n], v[: prog.n], p)
        for got, want, ref in zip(nat, tape, prog.evaluate(x[: prog.n], v[: prog.n]), strict=True):
            np.testing.assert_array_equal(got, want)
            np.testing.assert_array_equal(got, ref)
    (phi, K, k), _ = both_ways(programs, x, v, 0)
    np.testing.assert_array_equal(K, [[1.0, -2.0], [0.0, 0.0], [3.0, 0.0]])
    np.testing.assert_array_equal(phi, [x[0] - 2 * x[1], 0.0, 3 * x[0] + np.pi])


def test_address_is_what_runs():
    """Negative control: program 0's row naming program 1's functions computes program 1's φ."""
    x, y = sp.symbols("x y", real=True)
    p0 = compile_constraint([sp.sin(x) + y], [x, y])
    p1 = compile_constraint([sp.cos(x) * y - x], [x, y])
    pk = pack_programs([p0, p1])
    addresses = native.native_addresses(pk.code, pk.table, pk.outputs)
    assert addresses[0, 0] != addresses[1, 0]
    table = pk.table.copy()
    native.fill_addresses(table, addresses[::-1].copy())
    regs, phi, K, k = np.zeros(pk.max_reg), np.zeros(1), np.zeros(2), np.zeros(1)
    q = np.array([0.3, 0.7])
    evaluate(pk.code, pk.consts, table, pk.outputs, 0, q, q, regs, phi, K, k)
    assert phi[0] == pytest.approx(np.cos(0.3) * 0.7 - 0.3, abs=1e-15)
    assert phi[0] != pytest.approx(np.sin(0.3) + 0.7)


def test_programs_differing_in_constants_share_a_function():
    q = sp.symbols("q0:3", real=True)

    def four_bar(la, lb, lc):
        return [la * sp.cos(q[0]) + lb * sp.cos(q[0] + q[2]) - 1.3 - lc * sp.cos(q[1]),
                la * sp.sin(q[0]) + lb * sp.sin(q[0] + q[2]) - lc * sp.sin(q[1])]  # fmt: skip

    a = compile_constraint(four_bar(0.41, 1.07, 0.53), q)
    b = compile_constraint(four_bar(0.37, 0.93, 0.61), q)
    assert not np.array_equal(a.consts, b.consts)
    pk = pack_programs([a, b])
    addresses = native.native_addresses(pk.code, pk.table, pk.outputs)
    np.testing.assert_array_equal(addresses[0], addresses[1])
    x, v = np.array([0.2, 1.1, -0.4]), np.array([0.5, -0.3, 0.8])
    for p, prog in ((0, a), (1, b)):  # each still reads its own constants
        (phi, K, k), tape = both_ways([a, b], x, v, p)
        np.testing.assert_array_equal(phi, tape[0])
        np.testing.assert_array_equal(phi, prog.evaluate(x, v)[0])


def _state(model, seed):
    rng = np.random.default_rng(seed)
    q = ld.random_configuration(model, rng=seed)
    return q, rng.normal(size=model.nv), rng.normal(size=model.nv)


def _results(model, data, q, v, a):
    """Every family's public function on one state (each must run the constraint programs)."""
    tau = ld.rnea(model, data, q, v, a)
    end = ld.Constraint(model.bodies[-1].name, "6d")
    out = {
        "rnea": tau,
        "aba": ld.aba(model, data, q, v, tau),
        "crba": ld.crba(model, data, q),
        "delassus": ld.delassus(model, data, q, [end]),
        "c-efpa": ld.delassus(model, data, q, [end], method="c-efpa"),
        "jacobian": ld.constraint_jacobian(model, data, q, [end]),
    }
    ddq, lam = ld.constrained_forward_dynamics(model, data, q, v, tau, [end], mu=1e-9)
    out["contact ddq"], out["contact forces"] = ddq, lam
    return out


@pytest.mark.parametrize("name", IMPLICIT_ROBOTS)
def test_robots_native_same_bits_as_tape(name):
    model = ld.robots.build(name)
    fast, tape = model.create_data(), model.create_data(native_programs=False)
    assert fast.native_programs and not tape.native_programs
    for seed in range(3):
        q, v, a = _state(model, seed)
        r_fast, r_tape = _results(model, fast, q, v, a), _results(model, tape, q, v, a)
        for key in r_fast:
            np.testing.assert_array_equal(r_fast[key], r_tape[key], err_msg=f"{name} {key}")
        np.testing.assert_allclose(r_fast["aba"], a, rtol=1e-9, atol=1e-9 * max(1.0, np.abs(a).max()))


def test_batch_runs_native_programs(monkeypatch):
    model = ld.robots.build("tello")
    states = [_state(model, s) for s in range(8)]
    Q, V, A = (np.array([s[i] for s in states]) for i in range(3))
    fast = ld.batch.rnea(model, Q, V, A)
    monkeypatch.setenv("LOOPDYN_NATIVE_PROGRAMS", "0")  # the batch's own Data interprets the tapes
    np.testing.assert_array_equal(fast, ld.batch.rnea(model, Q, V, A))
    data = model.create_data()
    for row, (q, v, a) in enumerate(states):
        np.testing.assert_array_equal(fast[row], ld.rnea(model, data, q, v, a))


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_copied_data_keeps_its_buffers_and_programs(how):
    model = ld.robots.build("four_bar")
    data = model.create_data()
    other = copy.deepcopy(data) if how == "deepcopy" else pickle.loads(pickle.dumps(data))
    assert other.native_programs
    ints, floats = other.cluster_arrays
    assert not np.shares_memory(ints, data.cluster_arrays[0])
    for arr, buf in ((other.ib, ints), (other.ic, ints), (other.cb, ints), (other.ws, floats),
                     (other.wc, floats)):  # fmt: skip
        assert np.shares_memory(arr, buf)  # the named arrays are views of the kernels' buffers again
    q, v, a = _state(model, 4)
    if how == "pickle":  # another process's Data (its model's identity is not carried)
        with pytest.raises(ld.errors.DataMismatchError):
            ld.rnea(model, other, q, v, a)
        return
    np.testing.assert_array_equal(ld.rnea(model, other, q, v, a), ld.rnea(model, data, q, v, a))
    ld.forward_kinematics(model, other, q)
    ld.forward_kinematics(model, data, np.zeros_like(q) + q)
    np.testing.assert_array_equal(other.oMi, data.oMi)


def test_switched_off_by_environment(monkeypatch):
    monkeypatch.setenv("LOOPDYN_NATIVE_PROGRAMS", "0")
    model = ld.robots.build("four_bar")
    data = model.create_data()
    assert not data.native_programs
    o, n = data.ic[0, layout.C0_TTABLE], data.ic[0, layout.C0_NTPROG]
    packed = data.cb[o : o + n * data.table.shape[1]].reshape(data.table.shape)
    assert np.all(packed[:, [T_NATIVE_PHI_K, T_NATIVE_K]] == 0)  # the kernels' copy says "interpret"
    q, v, a = _state(model, 1)
    tau = ld.rnea(model, data, q, v, a)
    np.testing.assert_allclose(ld.aba(model, data, q, v, tau), a, rtol=1e-10, atol=1e-10)


def test_no_writable_cache_folder_interprets(monkeypatch, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("LOOPDYN_CACHE_DIR", str(blocker / "below"))
    assert native.cache_dir() is None
    model = ld.robots.build("planar_leg_linkage")
    data = model.create_data()
    assert not data.native_programs
    q, v, a = _state(model, 2)
    tau = ld.rnea(model, data, q, v, a)
    np.testing.assert_allclose(ld.aba(model, data, q, v, tau), a, rtol=1e-10, atol=1e-10)


def test_cache_folder_from_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("LOOPDYN_CACHE_DIR", str(tmp_path))
    x = sp.symbols("x", real=True)
    prog = compile_constraint([sp.sin(x) ** 3 + 0.25 * x], [x])
    pk = pack_programs([prog])
    addresses = native.native_addresses(pk.code, pk.table, pk.outputs)
    assert addresses is not None
    files = list((tmp_path / "programs").glob("loopdyn_program_*.py"))
    assert len(files) == 1 and "def phi_K" in files[0].read_text()


def test_folder_writable_by_others_is_refused(monkeypatch, tmp_path):
    for name, mode in (("shared", 0o777), ("private", 0o755)):
        (tmp_path / name / "programs").mkdir(parents=True)
        (tmp_path / name / "programs").chmod(mode)
    monkeypatch.setenv("LOOPDYN_CACHE_DIR", str(tmp_path / "shared"))
    assert native.cache_dir() is None  # anyone could plant a module there: never imported from
    monkeypatch.setenv("LOOPDYN_CACHE_DIR", str(tmp_path / "private"))
    assert native.cache_dir() == tmp_path / "private" / "programs"


def test_compile_failure_warns_and_interprets(monkeypatch, tmp_path):
    monkeypatch.setenv("LOOPDYN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(native, "generate_source", lambda *args: "this is not python\n")
    y = sp.symbols("y", real=True)
    prog = compile_constraint([sp.cos(y) ** 5 - 0.125 * y], [y])  # a program no other test loads
    pk = pack_programs([prog])
    with pytest.warns(RuntimeWarning, match="interpreted instead"):
        assert native.native_addresses(pk.code, pk.table, pk.outputs) is None
