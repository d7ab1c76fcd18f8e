"""The code of the documentation's pages, for the tests that run it and check its claims.

The tutorials are MyST-NB text notebooks in ``docs/``: their ``{code-cell} python`` blocks run when
the site is built (``tests/test_docs.py``); the tests here run them again and compare their results
with independent oracles. The README's ``python`` blocks are read the same way.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = ROOT / "README.md"

_FENCE = re.compile(r"^(`{3,}|~{3,})")
_CELL = re.compile(r"^```\{code-cell\} (?:python|ipython3)\s*$")
_PY = re.compile(r"^```python\s*$")


def page_text(page: str) -> str:
    """The Markdown source of ``docs/<page>.md`` (``page`` like ``"tutorials/trees"``), or of the
    README for ``"README"``."""
    path = README if page == "README" else DOCS / f"{page}.md"
    return path.read_text()


def section(text: str, heading: str) -> str:
    """The lines of ``text`` from the heading that starts with ``heading`` (``"## Coriolis"``) to the
    next heading of the same or a higher level, skipping fenced code (whose ``#`` lines are comments)."""
    level = len(heading) - len(heading.lstrip("#"))
    assert level > 0, heading
    lines = text.split("\n")
    start = next((i for i, line in enumerate(lines) if line.startswith(heading)), None)
    assert start is not None, f"no heading {heading!r}"
    fence = None
    for i in range(start + 1, len(lines)):
        line = lines[i]
        m = _FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)[0] * 3
            continue
        if fence is not None:
            if line.startswith(fence) and line.strip() == line.strip()[0] * len(line.strip()):
                fence = None
            continue
        hashes = len(line) - len(line.lstrip("#"))
        if 0 < hashes <= level and line[hashes:hashes + 1] == " ":
            return "\n".join(lines[start:i])
    return "\n".join(lines[start:])


def code_blocks(page: str, heading: str | None = None, executed: bool = True) -> list[str]:
    """The code of the executed cells (``executed``) or of the plain ``python`` blocks of a page,
    in order, optionally only those under ``heading``."""
    text = page_text(page)
    if heading is not None:
        text = section(text, heading)
    start = _CELL if executed else _PY
    blocks, current = [], None
    for line in text.split("\n"):
        if current is None:
            if start.match(line):
                current = []
        elif line.startswith("```"):
            blocks.append("\n".join(current) + "\n")
            current = None
        else:
            current.append(line)
    assert current is None, f"{page}: unclosed code block"
    return blocks


def run(page: str, heading: str | None = None, ns: dict | None = None, executed: bool = True) -> dict:
    """Run the blocks of a page (or of one of its sections) in one namespace, as the build does."""
    if ns is None:  # a section read alone starts, as every page does, from these two imports
        ns = {}
        exec("import numpy as np\nimport loopdyn as ld\n", ns)
    blocks = code_blocks(page, heading, executed)
    assert blocks, (page, heading)
    for k, code in enumerate(blocks):
        exec(compile(code, f"{page} block {k}", "exec"), ns)
    return ns
