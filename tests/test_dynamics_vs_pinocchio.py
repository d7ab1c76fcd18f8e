"""Dynamics against Pinocchio on random trees and the example-robot-data robots: RNEA (with and
without external forces), ABA (with and without external forces), CRBA, nonlinear effects,
generalized gravity and the inverse mass matrix."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
from trees import assert_close

import loopdyn


def symmetrized_upper(M) -> np.ndarray:
    """Pinocchio's crba / computeMinverse fill the upper triangle only."""
    return np.triu(M) + np.triu(M, 1).T


def pin_forces(fext: np.ndarray):
    """loopdyn's (njoints, 6) [force; torque] rows as Pinocchio's list of pin.Force."""
    out = pin.StdVec_Force()
    for row in fext:
        out.append(pin.Force(np.array(row, dtype=float)))
    return out


def test_rnea(pin_case):
    lm, pm = pin_case.lm, pin_case.pm
    ld, pd = lm.create_data(), pm.createData()
    for s, (q, v, a) in enumerate(pin_case.states()):
        tau = loopdyn.rnea(lm, ld, q, v, a)
        assert_close(tau, pin.rnea(pm, pd, q, v, a), what=f"{pin_case.name}, state {s}: rnea")


def test_rnea_external_forces(pin_case):
    lm, pm = pin_case.lm, pin_case.pm
    ld, pd = lm.create_data(), pm.createData()
    rng = pin_case.rng(salt=10)
    for s, (q, v, a) in enumerate(pin_case.states(salt=1)):
        fext = pin_case.random_fext(rng)
        tau = loopdyn.rnea(lm, ld, q, v, a, f_ext=fext)
        expected = pin.rnea(pm, pd, q, v, a, pin_forces(fext))
        assert_close(tau, expected, what=f"{pin_case.name}, state {s}: rnea with f_ext")


def test_aba(pin_case):
    lm, pm = pin_case.lm, pin_case.pm
    ld, pd = lm.create_data(), pm.createData()
    rng = pin_case.rng(salt=11)
    for s, (q, v, _) in enumerate(pin_case.states(salt=2)):
        tau = rng.normal(size=lm.nv) * 5.0
        ddq = loopdyn.aba(lm, ld, q, v, tau)
        assert_close(ddq, pin.aba(pm, pd, q, v, tau), what=f"{pin_case.name}, state {s}: aba")


def test_aba_external_forces(pin_case):
    lm, pm = pin_case.lm, pin_case.pm
    ld, pd = lm.create_data(), pm.createData()
    rng = pin_case.rng(salt=12)
    for s, (q, v, _) in enumerate(pin_case.states(salt=3)):
        tau = rng.normal(size=lm.nv) * 5.0
        fext = pin_case.random_fext(rng)
        ddq = loopdyn.aba(lm, ld, q, v, tau, f_ext=fext)
        expected = pin.aba(pm, pd, q, v, tau, pin_forces(fext))
        assert_close(ddq, expected, what=f"{pin_case.name}, state {s}: aba with f_ext")


def test_crba(pin_case):
    lm, pm = pin_case.lm, pin_case.pm
    ld, pd = lm.create_data(), pm.createData()
    for s, (q, _, _) in enumerate(pin_case.states(salt=4)):
        M = loopdyn.crba(lm, ld, q)
        expected = symmetrized_upper(pin.crba(pm, pd, q))
        assert_close(M, expected, what=f"{pin_case.name}, state {s}: crba")


def test_nonlinear_effects(pin_case):
    lm, pm = pin_case.lm, pin_case.pm
    ld, pd = lm.create_data(), pm.createData()
    for s, (q, v, _) in enumerate(pin_case.states(salt=5)):
        h = loopdyn.nonlinear_effects(lm, ld, q, v)
        assert_close(h, pin.nonLinearEffects(pm, pd, q, v), what=f"{pin_case.name}, state {s}: nle")


def test_gravity(pin_case):
    lm, pm = pin_case.lm, pin_case.pm
    ld, pd = lm.create_data(), pm.createData()
    for s, (q, _, _) in enumerate(pin_case.states(salt=6)):
        g = loopdyn.gravity(lm, ld, q)
        expected = pin.computeGeneralizedGravity(pm, pd, q)
        assert_close(g, expected, what=f"{pin_case.name}, state {s}: generalized gravity")


def test_minverse(pin_case):
    lm, pm = pin_case.lm, pin_case.pm
    ld, pd = lm.create_data(), pm.createData()
    for s, (q, _, _) in enumerate(pin_case.states(salt=7)):
        Minv = loopdyn.minverse(lm, ld, q)
        expected = symmetrized_upper(pin.computeMinverse(pm, pd, q))
        assert_close(Minv, expected, what=f"{pin_case.name}, state {s}: minverse")


def test_results_do_not_alias_data(pin_case):
    """A returned array must not be overwritten by the next call on the same Data."""
    lm, pm = pin_case.lm, pin_case.pm
    ld, pd = lm.create_data(), pm.createData()
    (q0, v0, a0), (q1, v1, a1) = pin_case.states(n=2, salt=8)
    tau0 = loopdyn.rnea(lm, ld, q0, v0, a0)
    M0 = loopdyn.crba(lm, ld, q0)
    ddq0 = loopdyn.aba(lm, ld, q0, v0, tau0)
    loopdyn.rnea(lm, ld, q1, v1, a1)
    loopdyn.crba(lm, ld, q1)
    loopdyn.aba(lm, ld, q1, v1, a1)
    assert_close(tau0, pin.rnea(pm, pd, q0, v0, a0), what="first rnea result after later calls")
    assert_close(M0, symmetrized_upper(pin.crba(pm, pd, q0)), what="first crba result after later calls")
    assert_close(ddq0, pin.aba(pm, pd, q0, v0, tau0), what="first aba result after later calls")
