"""Kinematics against Pinocchio: model structure, forward kinematics, frame placements, frame
Jacobians (local, world, local-world-aligned) and their time variation.

Every vector and Jacobian row-pair is compared in Pinocchio's [linear; angular] order.
"""

from __future__ import annotations

import math

import pinocchio as pin
import pytest
from trees import assert_close, frame_pairs

import loopdyn

REFERENCES = {
    "local": pin.ReferenceFrame.LOCAL,
    "world": pin.ReferenceFrame.WORLD,
    "local_world_aligned": pin.ReferenceFrame.LOCAL_WORLD_ALIGNED,
}


def frames_for_state(pairs, s: int, at_least: int = 8):
    """A rotating subset of the frame pairs for state ``s``, so that all frames are covered over
    50 states while each state checks only a few."""
    k = min(len(pairs), max(at_least, math.ceil(len(pairs) / 50)))
    return [pairs[(s * k + j) % len(pairs)] for j in range(k)]


# ----------------------------------------------------------------------------------------------
# structure


def test_structure_matches_pinocchio(pin_case):
    lm, pm = pin_case.lm, pin_case.pm
    assert (lm.nq, lm.nv, lm.njoints) == (pm.nq, pm.nv, pm.njoints)
    assert lm.joint_names == list(pm.names)
    assert [b.parent for b in lm.bodies] == list(pm.parents)[1:]
    assert [b.idx_q for b in lm.bodies] == list(pm.idx_qs)[1:]
    assert [b.idx_v for b in lm.bodies] == list(pm.idx_vs)[1:]
    assert_close(lm.gravity, pm.gravity.linear, what="gravity")
    for i, b in enumerate(lm.bodies, start=1):
        where = f"{pin_case.name}, joint {i} ({b.joint_name})"
        assert_close(b.rotation, pm.jointPlacements[i].rotation, what=f"{where}: placement rotation")
        assert_close(b.translation, pm.jointPlacements[i].translation, what=f"{where}: placement translation")
        Y = pm.inertias[i]
        assert_close(b.inertia.mass, Y.mass, what=f"{where}: mass")
        assert_close(b.inertia.com, Y.lever, what=f"{where}: centre of mass")
        assert_close(b.inertia.inertia, Y.inertia, what=f"{where}: rotational inertia")


def test_frames_match_pinocchio(pin_case):
    lm, pm = pin_case.lm, pin_case.pm
    pairs = frame_pairs(lm, pm)
    # every link must exist on both sides
    ld_bodies = {f.name for f in lm.frames if f.kind == "body"}
    pin_bodies = {f.name for f in pm.frames if f.type == pin.FrameType.BODY}
    assert ld_bodies == pin_bodies
    if pin_case.name.startswith("tree"):
        assert len(pairs) == len(lm.frames) == len(pm.frames)
    for k, fid, label in pairs:
        f, pf = lm.frames[k], pm.frames[fid]
        assert f.body == pf.parentJoint, (
            f"{pin_case.name}: {label} is on body {f.body}, in Pinocchio on joint {pf.parentJoint}")
        assert_close(f.placement, pf.placement.homogeneous, what=f"{pin_case.name}: {label} placement")


# ----------------------------------------------------------------------------------------------
# forward kinematics


def test_forward_kinematics(pin_case):
    lm, pm = pin_case.lm, pin_case.pm
    ld, pd = lm.create_data(), pm.createData()
    for s, (q, v, a) in enumerate(pin_case.states()):
        loopdyn.forward_kinematics(lm, ld, q, v, a)
        pin.forwardKinematics(pm, pd, q, v, a)
        for i in range(1, lm.njoints):
            where = f"{pin_case.name}, state {s}, body {i}"
            assert_close(ld.oMi[i], pd.oMi[i].homogeneous, what=f"{where}: oMi")
            assert_close(ld.v[i], pd.v[i].vector, what=f"{where}: spatial velocity")
            assert_close(ld.a[i], pd.a[i].vector, what=f"{where}: spatial acceleration")


def test_forward_kinematics_position_only(pin_case):
    lm, pm = pin_case.lm, pin_case.pm
    ld, pd = lm.create_data(), pm.createData()
    for s, (q, _, _) in enumerate(pin_case.states(salt=1)):
        loopdyn.forward_kinematics(lm, ld, q)
        pin.forwardKinematics(pm, pd, q)
        for i in range(lm.njoints):
            assert_close(ld.oMi[i], pd.oMi[i].homogeneous, what=f"{pin_case.name}, state {s}, body {i}: oMi")


def test_frame_placements(pin_case):
    lm, pm = pin_case.lm, pin_case.pm
    ld, pd = lm.create_data(), pm.createData()
    pairs = frame_pairs(lm, pm)
    for s, (q, _, _) in enumerate(pin_case.states(salt=2)):
        loopdyn.forward_kinematics(lm, ld, q)
        pin.forwardKinematics(pm, pd, q)
        pin.updateFramePlacements(pm, pd)
        for k, fid, label in pairs:
            expected = pd.oMf[fid].homogeneous
            assert_close(loopdyn.frame_placement(lm, ld, k), expected,
                         what=f"{pin_case.name}, state {s}: {label}")
        # by name (a name shared by several frames means the body frame)
        k, fid, label = pairs[s % len(pairs)]
        frame = lm.frames[k]
        if frame.kind == "body" or lm.frame_names.count(frame.name) == 1:
            assert_close(loopdyn.frame_placement(lm, ld, frame.name), pd.oMf[fid].homogeneous,
                         what=f"{pin_case.name}, state {s}: {label} by name")


# ----------------------------------------------------------------------------------------------
# Jacobians (Pinocchio returns a 6 × 1 matrix as a flat 6-vector: reshape)


@pytest.mark.parametrize("reference", list(REFERENCES))
def test_frame_jacobian(pin_case, reference):
    lm, pm = pin_case.lm, pin_case.pm
    ld, pd = lm.create_data(), pm.createData()
    pairs = frame_pairs(lm, pm)
    for s, (q, _, _) in enumerate(pin_case.states(salt=3)):
        for k, fid, label in frames_for_state(pairs, s):
            J = loopdyn.frame_jacobian(lm, ld, q, k, reference=reference)
            expected = pin.computeFrameJacobian(pm, pd, q, fid, REFERENCES[reference]).reshape(6, lm.nv)
            assert_close(J, expected, what=f"{pin_case.name}, state {s}: {reference} Jacobian of {label}")


def test_frame_jacobian_default_reference_is_local(pin_case):
    lm, pm = pin_case.lm, pin_case.pm
    ld, pd = lm.create_data(), pm.createData()
    q, _, _ = pin_case.states(n=1, salt=4)[0]
    k, fid, label = frame_pairs(lm, pm)[-1]
    expected = pin.computeFrameJacobian(pm, pd, q, fid, pin.LOCAL).reshape(6, lm.nv)
    assert_close(loopdyn.frame_jacobian(lm, ld, q, k), expected, what=f"{pin_case.name}: Jacobian of {label}")
    # and a body frame given by name
    name = lm.body_names[-1]
    fid = pm.getFrameId(name, pin.FrameType.BODY)
    expected = pin.computeFrameJacobian(pm, pd, q, fid, pin.WORLD).reshape(6, lm.nv)
    assert_close(loopdyn.frame_jacobian(lm, ld, q, name, reference="world"), expected,
                 what=f"{pin_case.name}: world Jacobian of body {name!r} by name")


@pytest.mark.parametrize("reference", list(REFERENCES))
def test_frame_jacobian_time_variation(pin_case, reference):
    lm, pm = pin_case.lm, pin_case.pm
    ld, pd = lm.create_data(), pm.createData()
    pairs = frame_pairs(lm, pm)
    for s, (q, v, _) in enumerate(pin_case.states(salt=5)):
        pin.computeJointJacobiansTimeVariation(pm, pd, q, v)
        pin.updateFramePlacements(pm, pd)
        for k, fid, label in frames_for_state(pairs, s):
            dJ = loopdyn.frame_jacobian_time_variation(lm, ld, q, v, k, reference=reference)
            expected = pin.getFrameJacobianTimeVariation(pm, pd, fid, REFERENCES[reference]).reshape(6, lm.nv)
            assert_close(dJ, expected, what=f"{pin_case.name}, state {s}: {reference} dJ/dt of {label}")
