"""The loop derivatives' Taylor terms as native functions (``loopdyn.constraints.native``,
``generate_taylor_source``).

Oracle: the interpreter's three sweeps (``loopdyn.constraints.taylor``: coefficient 0, coefficient 1
along m + 1 lanes, coefficient 2 along q̇), which test_tape_taylor checks against sympy's series and
the loop derivatives' tests against JAX and central differences. The native function performs the
same operations in the same order, so its K blocks must equal the sweeps' bit for bit — on programs
holding every opcode (the zero branch of integer powers included), on test_tape's random programs,
and on the built-in robots' loops through the whole derivative terms. Negative control: a table whose
Taylor column names another program's function gives other terms (the kernels run that address).
"""

from __future__ import annotations

import copy
import ctypes
import pickle

import numpy as np
import pytest
import sympy as sp
from test_tape import every_opcode_phi, random_case
from test_tape_taylor import CASES, DEFAULT_CURVE

import loopdyn as ld
from loopdyn.constraints import compile_constraint, native, pack_programs
from loopdyn.constraints.tape import (
    T_C,
    T_K_LEN,
    T_N,
    T_NATIVE_KDOT,
    T_NATIVE_TAYLOR,
    T_OUT_START,
    T_TAYLOR_M,
)
from loopdyn.constraints.taylor import K_coefficient, tangent_sweep, taylor_sweep
from loopdyn.derivatives import loop_tangent_maps

_FN = ctypes.CFUNCTYPE(None, *[ctypes.POINTER(ctypes.c_double)] * 5)


def _ptr(a: np.ndarray):
    return a.ctypes.data_as(ctypes.POINTER(ctypes.c_double))


def interpreted_blocks(P, q, qd, G):
    """K's coefficient blocks (as the native function lays them out) from the interpreter's sweeps,
    in the order loopdyn.algorithms.loop_derivatives runs them."""
    n, c, m = int(P.table[0, T_N]), int(P.table[0, T_C]), G.shape[1]
    stop, o = int(P.table[0, T_K_LEN]), int(P.table[0, T_OUT_START]) + c
    nreg = P.max_reg
    T, A = np.zeros((nreg, 3)), np.zeros((nreg, 3))
    D, DA = np.zeros((nreg, m + 1)), np.zeros((nreg, m + 1))
    s1, s2 = np.empty(3), np.empty(3)
    T[:n, 0], T[:n, 1] = q, qd
    taylor_sweep(P.code, P.consts, P.table, 0, stop, 0, T, A, s1, s2)
    D[:n, 0], D[:n, 1:] = qd, G
    tangent_sweep(P.code, P.consts, P.table, 0, stop, T, A, D, DA, m + 1, s1, s2)
    T[:, 1], A[:, 1] = D[:, 0], DA[:, 0]
    taylor_sweep(P.code, P.consts, P.table, 0, stop, 2, T, A, s1, s2)
    out = np.empty((3 + m) * c * n)
    for at, (src, k) in enumerate([(T, 0), (T, 1), (T, 2)] + [(D, 1 + l) for l in range(m)]):
        K_coefficient(P.outputs, o, n, c, src, k, out, at * c * n)
    return out


def native_blocks(P, q, qd, G, second=True):
    """The same from the program's native Taylor function (``second=False``: its rate function, K
    and K̇ only)."""
    n, c, m = int(P.table[0, T_N]), int(P.table[0, T_C]), G.shape[1]
    address = native.taylor_addresses(P.code, P.table, P.outputs, [m], second=second)
    assert address is not None and address[0] != 0
    x = np.concatenate([q, qd, G.reshape(-1)])
    out = np.full((2 + second + m) * c * n, np.nan)
    kappa = np.ascontiguousarray(P.consts)
    _FN(int(address[0]))(_ptr(x), _ptr(x), _ptr(out), _ptr(out), _ptr(kappa))
    return out


def assert_same_bits(P, q, qd, G):
    a, b = native_blocks(P, q, qd, G), interpreted_blocks(P, q, qd, G)
    assert np.array_equal(a, b, equal_nan=True), np.abs(a - b).max()
    return a


def test_rate_function_is_the_first_two_blocks():
    # the rate function (m = 0, no coefficient 2: K and K̇ for Ġ) gives the Taylor function's first
    # two blocks, bit for bit
    x, y = sp.symbols("x y", real=True)
    P = pack_programs([compile_constraint(every_opcode_phi(x, y), [x, y])])
    rng = np.random.default_rng(2)
    q, qd = rng.uniform(-0.8, 0.8, 2), rng.normal(size=2)
    full = assert_same_bits(P, q, qd, rng.normal(size=(2, 1)))
    rate = native_blocks(P, q, qd, np.zeros((2, 0)), second=False)
    assert rate.size == 2 * 4 * 2 and np.array_equal(rate, full[: rate.size])


@pytest.mark.parametrize("name", list(CASES))
def test_every_opcode_same_bits(name):
    # test_tape_taylor's programs hold every opcode between them; "through_zero" puts q at 0, where
    # integer powers take their zero branch
    rows, curve = CASES[name]
    curve = curve or DEFAULT_CURVE
    x, y = sp.symbols("x y", real=True)
    P = pack_programs([compile_constraint(rows, [x, y])])
    q = np.array([float(curve[0][0]), float(curve[1][0])])
    qd = np.array([float(curve[0][1]), float(curve[1][1])])
    rng = np.random.default_rng(3)
    for m in (1, 2):
        out = assert_same_bits(P, q, qd, rng.normal(size=(2, m)))
        if name != "through_zero":  # not vacuous: the blocks hold numbers, not zeros
            assert np.count_nonzero(out) > out.size // 4


def test_every_opcode_program_same_bits():
    x, y = sp.symbols("x y", real=True)
    P = pack_programs([compile_constraint(every_opcode_phi(x, y), [x, y])])
    rng = np.random.default_rng(11)
    for _ in range(5):
        assert_same_bits(P, rng.uniform(-0.8, 0.8, 2), rng.normal(size=2), rng.normal(size=(2, 2)))


@pytest.mark.parametrize("seed", range(25))
def test_random_programs_same_bits(seed):
    # test_tape's random expressions (NaN and inf where they leave their domains: equal too)
    phi, q = random_case(seed)
    P = pack_programs([compile_constraint(phi, q)])
    n = len(q)
    rng = np.random.default_rng(seed)
    for _ in range(3):
        G = rng.normal(size=(n, max(1, n - 1)))
        assert_same_bits(P, rng.uniform(-1.5, 1.5, n), rng.uniform(-2, 2, n), G)


IMPLICIT = ["four_bar", "five_bar", "planar_leg_linkage", "rssr_linkage", "tello", "delta_robot"]


def _state(model, seed=0):
    rng = np.random.default_rng(seed)
    q = ld.random_configuration(model, rng)
    return q, rng.normal(size=model.nv), rng.normal(size=model.nv)


@pytest.mark.parametrize("name", IMPLICIT)
def test_robots_loop_terms_same_bits(name):
    # the whole terms of (L2)–(L4): a Data that runs the native Taylor functions against one that
    # interprets its programs
    model = getattr(ld.robots, name)()
    fast, slow = model.create_data(), model.create_data(native_programs=False)
    for seed in range(3):
        q, v, a = _state(model, seed)
        got = loop_tangent_maps(model, fast, q, v, a)
        want = loop_tangent_maps(model, slow, q, v, a)
        for x, y in zip(got, want, strict=True):
            assert np.array_equal(x, y)
    assert np.all(fast.table[:, T_NATIVE_TAYLOR] != 0)  # they ran natively
    assert np.all(slow.table[:, T_NATIVE_TAYLOR] == 0) and np.all(slow.table[:, T_TAYLOR_M] == -1)
    np.testing.assert_array_equal(ld.rnea_derivatives(model, fast, q, v, a)[0],
                                  ld.rnea_derivatives(model, slow, q, v, a)[0])  # fmt: skip


def test_loaded_at_the_first_derivative_call_only():
    model = ld.robots.four_bar()
    data = model.create_data()
    q, v, a = _state(model)
    ld.aba(model, data, q, v, a)
    assert data.taylor_pending and np.all(data.table[:, T_NATIVE_TAYLOR] == 0)
    ld.rnea_derivatives(model, data, q, v, a)
    assert not data.taylor_pending and np.all(data.table[:, T_NATIVE_TAYLOR] != 0)


def test_long_program_stays_interpreted(monkeypatch):
    # a program above MAX_TAYLOR_STATEMENTS keeps the interpreter (m still recorded: asked for)
    monkeypatch.setattr(native, "MAX_TAYLOR_STATEMENTS", 20)
    model = ld.robots.four_bar()
    data, ref = model.create_data(), model.create_data(native_programs=False)
    q, v, a = _state(model)
    got = ld.rnea_derivatives(model, data, q, v, a)
    assert native.taylor_statements(int(data.table[0, T_K_LEN]), 1) > 20
    assert np.all(data.table[:, T_NATIVE_TAYLOR] == 0) and np.all(data.table[:, T_TAYLOR_M] == 1)
    for x, y in zip(got, ld.rnea_derivatives(model, ref, q, v, a), strict=True):
        assert np.array_equal(x, y)


def test_address_is_what_runs():
    # Tello's hip and knee differentials have programs of the same shape (n = 4, c = 2, m = 2) but
    # different code: given each other's Taylor functions, the terms change
    model = ld.robots.tello()
    data = model.create_data()
    q, v, a = _state(model)
    ld.rnea_derivatives(model, data, q, v, a)
    right = loop_tangent_maps(model, data, q, v, a)
    o, n = data.ic[0, ld.model.layout.C0_TTABLE], data.ic[0, ld.model.layout.C0_NTPROG]
    packed = data.cb[o : o + n * data.table.shape[1]].reshape(data.table.shape)
    k_len = packed[:, T_K_LEN]
    i, j = int(np.argmax(k_len)), int(np.argmin(k_len))
    assert k_len[i] != k_len[j]
    packed[[i, j], T_NATIVE_TAYLOR] = packed[[j, i], T_NATIVE_TAYLOR]
    wrong = loop_tangent_maps(model, data, q, v, a)
    assert not np.array_equal(right[4], wrong[4])  # W: ∂G/∂δ ẏ


@pytest.mark.parametrize("how", ["deepcopy", "pickle"])
def test_copies_load_their_own(how):
    model = ld.robots.five_bar()
    data = model.create_data()
    q, v, a = _state(model)
    want = ld.rnea_derivatives(model, data, q, v, a)
    other = copy.deepcopy(data) if how == "deepcopy" else pickle.loads(pickle.dumps(data))
    assert other.taylor_pending and np.all(other.table[:, T_NATIVE_TAYLOR] == 0)
    if how == "pickle":
        other = copy.deepcopy(data)  # an unpickled Data belongs to no model (DataMismatchError)
    got = ld.rnea_derivatives(model, other, q, v, a)
    for x, y in zip(got, want, strict=True):
        assert np.array_equal(x, y)


@pytest.mark.parametrize("name", ["five_bar", "tello", "delta_robot"])
def test_coriolis_with_native_rates_equals_polarisation(name):
    # Ġ from the native K̇ against the interpreted polarisation of k (loopdyn.algorithms.coriolis,
    # (C6)): two formulas, equal to rounding; C itself is checked against differences of crba in
    # test_coriolis
    model = getattr(ld.robots, name)()
    fast, slow = model.create_data(), model.create_data(native_programs=False)
    for seed in range(3):
        q, v, _ = _state(model, seed)
        for f in (ld.coriolis_matrix, ld.mass_matrix_derivative):
            got, want = f(model, fast, q, v), f(model, slow, q, v)
            assert np.abs(got - want).max() <= 1e-12 * max(1.0, np.abs(want).max())
    assert np.all(fast.table[:, T_NATIVE_KDOT] != 0) and np.all(slow.table[:, T_NATIVE_KDOT] == 0)
    assert not fast.rates_pending and fast.taylor_pending  # the derivatives' functions not loaded


def test_rate_address_is_what_runs():
    model = ld.robots.tello()
    data = model.create_data()
    q, v, _ = _state(model)
    right = ld.coriolis_matrix(model, data, q, v)
    o, n = data.ic[0, ld.model.layout.C0_TTABLE], data.ic[0, ld.model.layout.C0_NTPROG]
    packed = data.cb[o : o + n * data.table.shape[1]].reshape(data.table.shape)
    k_len = packed[:, T_K_LEN]
    i, j = int(np.argmax(k_len)), int(np.argmin(k_len))
    packed[[i, j], T_NATIVE_KDOT] = packed[[j, i], T_NATIVE_KDOT]
    assert np.abs(ld.coriolis_matrix(model, data, q, v) - right).max() > 1e-6


def test_compile_failure_warns_and_interprets(monkeypatch, tmp_path):
    # a Taylor function that does not compile: a warning, and address 0 (the kernels interpret)
    monkeypatch.setenv("LOOPDYN_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(native, "generate_taylor_source", lambda *args: "this is not python\n")
    y = sp.symbols("y", real=True)
    P = pack_programs([compile_constraint([sp.sin(y) ** 7 - 0.375 * y], [y])])  # loaded by no other test
    with pytest.warns(RuntimeWarning, match="interpreted instead"):
        assert native.taylor_addresses(P.code, P.table, P.outputs, [1])[0] == 0


def test_switched_off_by_environment(monkeypatch):
    monkeypatch.setenv("LOOPDYN_NATIVE_PROGRAMS", "0")
    model = ld.robots.five_bar()
    data, ref = model.create_data(), model.create_data(native_programs=False)
    q, v, a = _state(model)
    got = ld.rnea_derivatives(model, data, q, v, a)
    c = ld.coriolis_matrix(model, data, q, v)
    assert np.all(data.table[:, [T_NATIVE_TAYLOR, T_NATIVE_KDOT]] == 0)
    for x, y in zip(got, ld.rnea_derivatives(model, ref, q, v, a), strict=True):
        assert np.array_equal(x, y)
    assert np.array_equal(c, ld.coriolis_matrix(model, ref, q, v))
