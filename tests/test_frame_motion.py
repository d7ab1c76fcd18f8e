"""Frame velocities and (spatial, classical) accelerations against Pinocchio's getFrame* functions,
on every random tree and example robot, every frame kind, all three references."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

import loopdyn

REFERENCES = {"local": "LOCAL", "world": "WORLD", "local_world_aligned": "LOCAL_WORLD_ALIGNED"}


@pytest.mark.parametrize("reference", sorted(REFERENCES))
def test_frame_motion_matches_pinocchio(pin_case, reference):
    lm, pm = pin_case.lm, pin_case.pm
    ld, pd = lm.create_data(), pm.createData()
    ref = getattr(pin, REFERENCES[reference])
    checked = 0
    for q, v, a in pin_case.states(n=10):
        loopdyn.forward_kinematics(lm, ld, q, v, a)
        pin.forwardKinematics(pm, pd, q, v, a)
        pin.updateFramePlacements(pm, pd)
        for k, frame in enumerate(lm.frames):
            fid = pm.getFrameId(frame.name, _PIN_KIND[frame.kind]) if frame.kind in _PIN_KIND else None
            if fid is None or fid >= pm.nframes:
                continue
            for ours, theirs in (
                (loopdyn.frame_velocity, pin.getFrameVelocity),
                (loopdyn.frame_acceleration, pin.getFrameAcceleration),
                (loopdyn.frame_classical_acceleration, pin.getFrameClassicalAcceleration),
            ):
                got = ours(lm, ld, k, reference)
                want = theirs(pm, pd, fid, ref).vector
                scale = max(1.0, float(np.max(np.abs(want))))
                assert np.max(np.abs(got - want)) <= 1e-10 + 1e-9 * scale, (
                    f"{pin_case.name}: {ours.__name__} of {frame.kind} frame {frame.name!r} ({reference})"
                )
                checked += 1
    assert checked > 0


_PIN_KIND = {
    "body": pin.FrameType.BODY,
    "joint": pin.FrameType.JOINT,
    "fixed_joint": pin.FrameType.FIXED_JOINT,
    "op": pin.FrameType.OP_FRAME,
}


def test_frame_velocity_is_jacobian_times_v(tree_case):
    """An identity independent of Pinocchio: v_frame = J v in every reference."""
    lm = tree_case.lm
    ld = lm.create_data()
    for q, v, _ in tree_case.states(n=5):
        loopdyn.forward_kinematics(lm, ld, q, v)
        for k in range(len(lm.frames)):
            for reference in REFERENCES:
                J = loopdyn.frame_jacobian(lm, ld, q, k, reference)
                loopdyn.forward_kinematics(lm, ld, q, v)
                np.testing.assert_allclose(
                    loopdyn.frame_velocity(lm, ld, k, reference), J @ v, rtol=1e-9, atol=1e-10
                )
