"""Loop joints close on their assembly branch only: a weld's orientation rows (the skew part of the
relative rotation) also vanish at a half-turn, where the loop is open; such configurations are
refused, and the configurations loopdyn produces are closed — checked by MuJoCo's own equality
residual (efc_pos) on an MJCF weld mechanism."""

from pathlib import Path

import mujoco
import numpy as np
import pytest

import loopdyn as ld
from loopdyn.errors import ConfigurationError
from loopdyn.model.clusters import IMPLICIT
from loopdyn.model.state import cluster_functions

WELD = Path(__file__).parent / "data" / "mjcf" / "weld_slider.xml"


def _spanning(model, q):
    """The spanning configuration of a state of this model (one implicit cluster holding every body,
    whose state is its spanning positions), without the checks ``to_spanning`` makes."""
    (c,) = model.clusters().clusters
    qs = np.zeros(model.spanning_nq)
    for k, b in enumerate(c.bodies):
        qs[model.bodies[b - 1].idx_q] = q[c.iq + k]
    return qs


def _mujoco_weld_residual(m, d, model, q) -> float:
    qpos, _ = ld.to_mujoco(model, _spanning(model, q), np.zeros(model.spanning_nv), spanning=True)
    d.qpos[:] = qpos
    mujoco.mj_forward(m, d)
    rows = d.efc_type == mujoco.mjtConstraint.mjCNSTR_EQUALITY
    return float(np.max(np.abs(d.efc_pos[rows])))


def _half_turn_state(model, rng):
    """A configuration whose kept constraint rows vanish but whose weld is closed at a half-turn:
    Newton's method on the kept rows alone, started with the block turned by π."""
    c = next(c for c in model.clusters().clusters if c.kind == IMPLICIT)
    phi, K, _ = cluster_functions(c)
    for _ in range(50):
        q = ld.random_configuration(model, rng)
        qc = q[c.iq : c.iq + c.n].copy()
        qc[c.dependent] += np.pi * rng.uniform(0.8, 1.2, size=len(c.dependent))
        for _ in range(60):
            r = phi(qc)
            if np.max(np.abs(r)) < 1e-13:
                break
            qc[c.dependent] -= np.linalg.lstsq(K(qc)[:, c.dependent], r, rcond=None)[0]
        if np.max(np.abs(phi(qc))) < 1e-12:
            q[c.iq : c.iq + c.n] = qc
            return q, c
    pytest.fail("no half-turn solution found")


def test_random_configurations_close_the_weld_in_mujoco():
    model = ld.load_mjcf(WELD)
    m = mujoco.MjModel.from_xml_path(str(WELD))
    d = mujoco.MjData(m)
    rng = np.random.default_rng(0)
    worst = max(_mujoco_weld_residual(m, d, model, ld.random_configuration(model, rng)) for _ in range(20))
    assert worst < 1e-9, worst


def test_a_half_turn_weld_is_refused_and_is_open_in_mujoco():
    model = ld.load_mjcf(WELD)
    m = mujoco.MjModel.from_xml_path(str(WELD))
    d = mujoco.MjData(m)
    q, c = _half_turn_state(model, np.random.default_rng(3))
    # negative control: the kept rows alone accept it, yet MuJoCo sees an open weld
    assert np.max(np.abs(ld.constraint_residual(model, q))) < 1e-12
    assert _mujoco_weld_residual(m, d, model, q) > 0.1
    data = model.create_data()
    with pytest.raises(ConfigurationError, match="violate its constraints"):
        ld.rnea(model, data, q, np.zeros(model.nv), np.zeros(model.nv))
    with pytest.raises(ld.ProjectionError, match="another assembly branch"):
        ld.project_configuration(model, q)
    assert np.max(np.abs(cluster_functions(c)[2](q[c.iq : c.iq + c.n]))) > 0.5
    # the Data stays usable
    q0 = ld.neutral(model)
    assert _mujoco_weld_residual(m, d, model, q0) < 1e-9
    ld.rnea(model, data, q0, np.zeros(model.nv), np.zeros(model.nv))
