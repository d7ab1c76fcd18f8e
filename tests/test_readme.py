"""The README's tutorial on robots with loops runs as written, and its claims hold."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

README = Path(__file__).resolve().parents[1] / "README.md"


def _blocks(after: str) -> list[str]:
    """The python code blocks of the README section whose heading is ``after``."""
    text = README.read_text()
    start = text.index(after)
    end = text.find("\n### ", start + len(after))
    return re.findall(r"```python\n(.*?)```", text[start:end], flags=re.S)


def _run(ns: dict, heading: str) -> None:
    exec(compile("import numpy as np\nimport loopdyn as ld\n", "README", "exec"), ns)
    blocks = _blocks(heading)
    assert blocks, heading
    for code in blocks:
        exec(compile(code, f"README {heading}", "exec"), ns)


def test_tree_and_sdf_sections_run():
    import pinocchio as pin
    import trees

    ns: dict = {}
    _run(ns, "### Trees")
    assert ns["forces"].shape == (12,) and ns["taus"].shape == (1000, 18)
    # the values, against Pinocchio on solo12 (same joint order): the batch's gravity torques, and the
    # first block's τ, M, M⁻¹ and foot Jacobian
    pm = trees.robot_case("solo12")[1]
    pd, zero = pm.createData(), np.zeros(pm.nv)
    for k in (0, 499, 999):
        ref = pin.rnea(pm, pd, ns["Q"][k], zero, zero)
        assert np.abs(ns["taus"][k] - ref).max() < 1e-10 * np.abs(ref).max()
    q, tau = ns["q"], ns["tau"]
    assert not np.any(ns["v"]) and not np.any(ns["a"])
    ref = pin.rnea(pm, pd, q, zero, zero)
    assert np.abs(tau - ref).max() < 1e-10 * np.abs(ref).max()
    M = pin.crba(pm, pd, q)
    M = np.triu(M) + np.triu(M, 1).T
    assert np.abs(ns["M"] - M).max() < 1e-12 * np.abs(M).max()
    Minv = np.linalg.inv(M)
    assert np.abs(ns["Minv"] - Minv).max() < 1e-12 * np.linalg.cond(M) * np.abs(Minv).max()
    pin.computeJointJacobians(pm, pd, q)
    pin.updateFramePlacements(pm, pd)
    J = pin.getFrameJacobian(pm, pd, pm.getFrameId("FL_FOOT"), pin.LOCAL_WORLD_ALIGNED)
    assert np.abs(ns["J"] - J).max() < 1e-12 * np.abs(J).max()
    # "standing on its feet" with τ the gravity torques at rest: nothing moves, the feet carry nothing
    assert np.abs(ns["ddq"]).max() < 1e-9 and np.abs(ns["forces"]).max() < 1e-9 * np.abs(tau).max()

    _run(ns, "### SDF files")
    model = ns["model"]
    assert ns["ddq"].shape == (model.nv,) and model.sdf_cut_joints
    # Cassie falling from neutral at rest: the dynamics from Pinocchio's CRBA and RNEA on the spanning
    # tree, projected on the loops' velocity map G (Gᵀ (M_span a_span + b_span) = Gᵀ τ_span = 0 with
    # a_span = G ÿ + g; G and g from loopdyn.to_spanning, the kinematics tests/test_clusters.py checks;
    # Pinocchio and loop_oracles have no rows for Cassie's prismatic loop joints, and the projection
    # baseline of tests/test_sdf.py takes 30 s to build here)
    from test_spatial_operators_loops import to_pinocchio

    import loopdyn as ld

    pm, qmap, vmap, _ = to_pinocchio(ld.spanning_tree(model))
    pm.gravity = pin.Motion(np.r_[model.gravity, np.zeros(3)])
    pd = pm.createData()
    q, zero = ld.neutral(model), np.zeros(model.nv)
    G = np.column_stack([ld.to_spanning(model, q, e)[1] for e in np.eye(model.nv)])
    qs, vs, a_span = ld.to_spanning(model, q, zero, ns["ddq"])
    assert not np.any(vs)
    Mp = pin.crba(pm, pd, qs[qmap])
    Ms = np.zeros((model.spanning_nv,) * 2)
    Ms[np.ix_(vmap, vmap)] = np.triu(Mp) + np.triu(Mp, 1).T
    bs = np.zeros(model.spanning_nv)
    bs[vmap] = pin.rnea(pm, pd, qs[qmap], np.zeros(pm.nv), np.zeros(pm.nv))
    residual = G.T @ (Ms @ a_span + bs)
    gravity = G.T @ bs  # negative control: ÿ = 0 leaves the projected gravity
    assert np.abs(gravity).max() > 1.0
    assert np.abs(residual).max() < 1e-9 * np.abs(gravity).max(), np.abs(residual).max()


def test_robot_with_loops_tutorial_runs():
    ns: dict = {}
    for heading in ("### A robot with loops", "### Contacts and the Delassus matrix"):
        blocks = _blocks(heading)
        assert blocks, heading
        for code in blocks:
            exec(compile(code, f"README {heading}", "exec"), ns)
    # what the comments say
    assert np.allclose(ns["ddq"].shape, (ns["robot"].nv,))
    assert ns["H"].shape == (24, 24) and ns["W"].shape == (9, 9) and ns["J"].shape == (9, 24)
    assert np.abs(ns["W"] - ns["J"] @ np.linalg.solve(ns["H"], ns["J"].T)).max() < 1e-10
    assert ns["forces"].shape == (9,)
    # the values, against Pinocchio alone on the spanning tree (loop_oracles): G from the couplings'
    # ratios, H = GᵀH_spanG, J = J_span G, and the feet held still by one KKT solve
    from loop_oracles import SpanningPinocchio

    robot, q, v, tau = ns["robot"], ns["q"], ns["v"], ns["tau"]
    oracle = SpanningPinocchio(robot)
    ddq, forces = oracle.forward_dynamics(q, v, tau, ns["feet"])
    K, ind = oracle.K_const, oracle.ind
    G = np.zeros((robot.spanning_nv, robot.nv))
    G[ind, np.arange(robot.nv)] = 1.0
    dep = np.setdiff1d(np.arange(robot.spanning_nv), ind)
    G[dep] = -np.linalg.solve(K[:, dep], K[:, ind])
    H = G.T @ oracle.last["M"] @ G
    assert np.abs(ns["H"] - H).max() < 1e-12 * np.abs(H).max()
    assert np.abs(ns["J"] - oracle.last["Jc"] @ G).max() < 1e-12 * max(1.0, np.abs(ns["J"]).max())
    assert np.abs(ns["ddq"] - ddq).max() < 1e-9 * max(1.0, np.abs(ddq).max())
    assert np.abs(ns["forces"] - forces).max() < 1e-9 * max(1.0, np.abs(forces).max())
    # "C-ABA: gives back a" (H a + C = τ with H from Pinocchio: the rnea / aba pair is consistent)
    assert np.abs(ld_aba(ns) - ns["a"]).max() < 1e-9 * max(1.0, np.abs(ns["a"]).max())


def ld_aba(ns):
    """C-ABA of the tutorial's τ at its state (the tutorial's own ``ddq`` is overwritten by the
    constrained dynamics of the next block)."""
    import loopdyn as ld

    return ld.aba(ns["robot"], ns["robot"].create_data(), ns["q"], ns["v"], ns["tau"])


def test_compound_joints_section_runs():
    ns: dict = {}
    exec(compile("import numpy as np\nimport loopdyn as ld\n", "README", "exec"), ns)
    heading = "### Joint types, compound joints and `merge`"
    blocks = _blocks(heading)
    assert blocks, heading
    for code in blocks:
        exec(compile(code, f"README {heading}", "exec"), ns)
    # what the comments say
    assert [r.joint.kind for r in ns["wrist"].compound_joints] == ["universal"]
    assert ns["wrist"].velocity_names == ["wrist_yaw[0]", "wrist_yaw[1]"]
    assert ns["two"].nq == ns["wrist"].nq == ns["part"].nq == 2
    for x in ns["ddq"][1:]:
        assert np.array_equal(x, ns["ddq"][0])
    for x in ns["M"][1:]:
        assert np.array_equal(x, ns["M"][0])
    # the values: Pinocchio's model of the same URDF
    import pinocchio as pin

    pm = pin.buildModelFromXML(ns["urdf"])
    pd = pm.createData()
    M = pin.crba(pm, pd, ns["q"])
    M = np.triu(M) + np.triu(M, 1).T
    assert np.abs(ns["M"][0] - M).max() < 1e-12 * np.abs(M).max()
    ddq = pin.aba(pm, pd, ns["q"], ns["v"], ns["tau"])
    assert np.abs(ns["ddq"][0] - ddq).max() < 1e-13 * np.linalg.cond(M) * np.abs(ddq).max()
    names = ns["arm"].velocity_names
    assert names[:4] == ["slide[0]", "slide[1]", "slide[2]", "hip[0]"] and names[-1] == "wrist[1]"
    # the table lists every joint type exported by loopdyn
    text = README.read_text()
    table = text[text.index(heading) : text.index("The last four are")]
    for joint in ("Revolute", "RevoluteUnbounded", "Prismatic", "Spherical", "FreeFlyer", "Fixed",
                  "Universal", "Gimbal", "Planar", "Compound"):
        assert f"`{joint}(" in table and hasattr(ns["ld"], joint)
