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
