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
