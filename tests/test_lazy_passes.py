"""Lazy passes (``loopdyn.jit.lazy``) and IR-only helpers: the implicit loops' code is compiled only in
a process that has a model with implicit loops, results do not depend on it, and a kernel that meets
an implicit cluster without it says so instead of computing garbage."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import loopdyn as ld
from loopdyn.algorithms import cluster_kinematics
from loopdyn.algorithms.status import LOOP_CODE_MISSING, STATUS_BASE, raise_for_status
from loopdyn.errors import LoopdynError

PROBE = r"""
import json, numpy as np, loopdyn as ld
from loopdyn.algorithms import cluster_kinematics as ck, loop_derivatives as ldv
from loopdyn.jit import lazy_passes
out = {}
robot = ld.robots.mini_cheetah(); data = robot.create_data()
q = ld.random_configuration(robot, rng=0); v = np.ones(robot.nv)
ld.aba(robot, data, q, v, v); ld.rnea(robot, data, q, v, v); ld.crba(robot, data, q)
ld.rnea_derivatives(robot, data, q, v, v); ld.aba_derivatives(robot, data, q, v, v)
ld.coriolis_matrix(robot, data, q, v)
out["after_explicit"] = {p.__name__: p.ready for p in lazy_passes()}
loop = ld.robots.four_bar(); ldata = loop.create_data()
out["after_four_bar_data"] = {p.__name__: p.ready for p in lazy_passes()}
ql = ld.random_configuration(loop, rng=1)
out["four_bar_aba"] = ld.aba(loop, ldata, ql, np.ones(loop.nv), np.ones(loop.nv)).tolist()
out["four_bar_rnea_derivatives"] = ld.rnea_derivatives(loop, ldata, ql, np.ones(loop.nv),
                                                       np.ones(loop.nv))[0].tolist()
out["after_four_bar_derivatives"] = {p.__name__: p.ready for p in lazy_passes()}
out["four_bar_coriolis"] = ld.coriolis_matrix(loop, ldata, ql, np.ones(loop.nv)).tolist()
out["after_four_bar_coriolis"] = {p.__name__: p.ready for p in lazy_passes()}
slow = loop.create_data(native_programs=False)  # interpreted programs: Ġ by the pass's polarisation
out["four_bar_coriolis_interpreted"] = ld.coriolis_matrix(loop, slow, ql, np.ones(loop.nv)).tolist()
out["after_interpreted_coriolis"] = {p.__name__: p.ready for p in lazy_passes()}
print(json.dumps(out))
"""


def test_explicit_models_never_compile_the_implicit_pass_and_loop_models_do():
    proc = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    # the implicit loops' coordinates, the derivatives' loop terms, Ġ for the Coriolis matrix
    names = {
        "implicit_coordinates_pass",  # the implicit loops' coordinates
        "loop_tangent_terms",  # the derivatives' loop terms
        "loop_corrections",
        "implicit_gdot_pass",  # Ġ for the Coriolis matrix
        "c_aba_one_port_pass",  # C-ABA's steps for one-port clusters (m ≠ 2, m = 2)
        "c_aba_one_port2_pass",
        "c_aba_to_parent_pass",  # C-ABA's generic step to the parent cluster
    }
    assert set(out["after_explicit"]) == names
    # C-ABA, C-RNEA, CRBA, the derivatives and C on Mini Cheetah (stars and a root body) need none
    assert not any(out["after_explicit"].values())
    # the four-bar's Data (one implicit one-port cluster, m = 1) loads the loops' coordinates and its
    # C-ABA step; its first rnea_derivatives the loops' derivative terms; its first C the loops' Ġ
    def loaded(key):
        return {name for name, ready in out[key].items() if ready}

    assert loaded("after_four_bar_data") == {"implicit_coordinates_pass", "c_aba_one_port_pass"}
    assert loaded("after_four_bar_derivatives") == loaded("after_four_bar_data") | {
        "loop_tangent_terms",
        "loop_corrections",
    }
    # C takes Ġ from the program's native rate function (inlined in the kernel: no pass); a Data that
    # interprets its programs loads the Ġ pass at its first C
    assert loaded("after_four_bar_coriolis") == loaded("after_four_bar_derivatives")
    assert loaded("after_interpreted_coriolis") == loaded("after_four_bar_coriolis") | {"implicit_gdot_pass"}
    # the fresh process computes what this one does (the pass is a plain compiled function)
    loop = ld.robots.four_bar()
    ql = ld.random_configuration(loop, rng=1)
    ldata = loop.create_data()
    one = np.ones(loop.nv)
    assert np.array_equal(np.array(out["four_bar_aba"]), ld.aba(loop, ldata, ql, one, one))
    # the calls that compiled a pass on the way (a missing pass's status, then the call again)
    dtau_dq = ld.rnea_derivatives(loop, ldata, ql, one, one)[0]
    assert np.array_equal(np.array(out["four_bar_rnea_derivatives"]), dtau_dq)
    assert np.array_equal(np.array(out["four_bar_coriolis"]), ld.coriolis_matrix(loop, ldata, ql, one))
    # Ġ by the native K̇ and by the pass's polarisation: equal to rounding (C nearly vanishes here)
    scale = max(1.0, np.abs(ld.crba(loop, ldata, ql)).max())
    np.testing.assert_allclose(out["four_bar_coriolis_interpreted"], out["four_bar_coriolis"], rtol=0,
                               atol=1e-12 * scale)  # fmt: skip


def test_the_pass_returns_its_statuses_through_the_call():
    # negative control of the status path: an off-loop configuration must come back as the pass's
    # CONSTRAINT_VIOLATED status (a lost return value would let the kernel go on with garbage)
    loop = ld.robots.four_bar()
    data = loop.create_data()
    q = ld.random_configuration(loop, rng=0) + 0.3
    with pytest.raises(ld.errors.ConfigurationError, match="violate its constraints"):
        ld.aba(loop, data, q, np.zeros(loop.nv), np.zeros(loop.nv))
    assert cluster_kinematics.implicit_coordinates_pass.ready


def test_a_missing_pass_is_reported_not_computed():
    loop = ld.robots.four_bar()
    with pytest.raises(LoopdynError, match="lazy pass.* is not loaded"):
        raise_for_status(loop, LOOP_CODE_MISSING * STATUS_BASE)


MISSING = r"""
import numpy as np, loopdyn as ld
from loopdyn.model import data as data_module
data_module._ensure_lazy_passes = lambda ic, table: None  # a Data that loads nothing
for name in ("mit_humanoid", "five_bar"):  # a one-port pair (m = 2) without its C-ABA step
    robot = getattr(ld.robots, name)(); data = robot.create_data()
    q = ld.random_configuration(robot, rng=0)
    try:
        ld.aba(robot, data, q, np.zeros(robot.nv), np.zeros(robot.nv))
    except ld.errors.LoopdynError as e:
        print(name, "raised:", e)
    else:
        print(name, "computed")
"""


def test_a_kernel_without_its_lazy_pass_says_so():
    # negative control of the C-ABA steps' slots: with nothing loaded, the kernel must stop at the
    # first cluster that needs a missing pass (explicit pairs on the humanoid; the five-bar's
    # implicit loop stops earlier, in its coordinates), not skip the cluster and return garbage
    proc = subprocess.run([sys.executable, "-c", MISSING], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = proc.stdout.strip().splitlines()[-2:]
    # the status names the missing group (its number in the status, loopdyn.jit.lazy_group)
    expected = {"mit_humanoid": "one_port_pairs", "five_bar": "implicit_loops"}
    for name, line in zip(("mit_humanoid", "five_bar"), lines, strict=True):
        assert line.startswith(f"{name} raised:") and f"lazy pass '{expected[name]}'" in line, line


def test_a_lazy_pass_cannot_be_called_from_python():
    with pytest.raises(TypeError, match="lazy pass"):
        cluster_kinematics.implicit_coordinates_pass(*([0] * 15))


def test_a_helper_called_from_python_runs_its_twin():
    # tape.evaluate is a helper (IR only for compiled callers); from Python it runs a twin compiled
    # with a Python entry point, and gives the program's φ, K, k
    from loopdyn.constraints.tape import T_C, T_N, evaluate

    loop = ld.robots.four_bar()
    data = loop.create_data()
    q = ld.random_configuration(loop, rng=2)
    n, rows = data.table[0, T_N], data.table[0, T_C]
    iq = next(c for c in loop.clusters().clusters if len(c.bodies) > 1).iq
    regs = np.zeros(4096)
    phi, K, k = np.zeros(rows), np.zeros(rows * n), np.zeros(rows)
    evaluate(data.code, data.consts, data.table, data.outputs, 0, q[iq : iq + n], np.zeros(n), regs, phi, K,
             k)  # fmt: skip
    assert np.max(np.abs(phi)) < 1e-9  # a random configuration is on the loop
    assert np.max(np.abs(K)) > 0.1
