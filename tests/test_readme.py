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


def test_tree_and_sdf_sections_run():
    ns: dict = {}
    for heading in ("### Trees", "### SDF files"):
        exec(compile("import numpy as np\nimport loopdyn as ld\n", "README", "exec"), ns)
        for code in _blocks(heading):
            exec(compile(code, f"README {heading}", "exec"), ns)
    assert ns["forces"].shape == (12,) and ns["taus"].shape == (1000, 18)
    assert ns["ddq"].shape == (ns["model"].nv,) and ns["model"].sdf_cut_joints
    # the values of the batch: gravity torques, against Pinocchio's RNEA on solo12 (same joint order)
    import pinocchio as pin
    import trees

    pm = trees.robot_case("solo12")[1]
    pd, zero = pm.createData(), np.zeros(pm.nv)
    for k in (0, 499, 999):
        ref = pin.rnea(pm, pd, ns["Q"][k], zero, zero)
        assert np.abs(ns["taus"][k] - ref).max() < 1e-10 * np.abs(ref).max()


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
    names = ns["arm"].velocity_names
    assert names[:4] == ["slide[0]", "slide[1]", "slide[2]", "hip[0]"] and names[-1] == "wrist[1]"
    # the table lists every joint type exported by loopdyn
    text = README.read_text()
    table = text[text.index(heading) : text.index("The last four are")]
    for joint in ("Revolute", "RevoluteUnbounded", "Prismatic", "Spherical", "FreeFlyer", "Fixed",
                  "Universal", "Gimbal", "Planar", "Compound"):
        assert f"`{joint}(" in table and hasattr(ns["ld"], joint)
