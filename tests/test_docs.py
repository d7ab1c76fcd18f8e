"""The documentation site builds with warnings as errors, its executed pages' code runs (in this
process), and it covers the public API; the README stays a short first page.

The build needs the ``docs`` extra (``pip install -e ".[test,docs]"``, the README's test command): a
missing Sphinx or MyST-NB fails the build test, it is not skipped.
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from doc_pages import DOCS, README, code_blocks

import loopdyn

TUTORIALS = ["trees", "loops", "contacts", "higher-order", "partitioning", "joints", "derivatives",
             "identification", "robot-files", "batch"]


def _documented() -> set[str]:
    """Every object an autodoc directive of docs/api names (``loopdyn.rnea``, ``loopdyn.batch``)."""
    names = set()
    for path in (DOCS / "api").glob("*.rst"):
        names |= set(re.findall(r"^\.\. auto\w+:: (\S+)", path.read_text(), flags=re.M))
    return names


def test_api_reference_covers_every_public_name():
    documented = _documented()
    modules = {"batch", "higher_order", "errors", "robots", "baselines"}
    assert modules <= set(loopdyn.__all__)
    missing = [n for n in loopdyn.__all__ if n not in modules and f"loopdyn.{n}" not in documented]
    assert not missing, missing
    for mod in ("batch", "higher_order", "errors", "robots", "baselines", "io", "spatial_operators"):
        assert f"loopdyn.{mod}" in documented, mod
    # negative control: a name that is not public is not found
    assert "loopdyn._nothing" not in documented


def test_every_tutorial_is_an_executed_page_in_the_toctree():
    toctree = (DOCS / "tutorials" / "index.md").read_text()
    for page in TUTORIALS:
        text = (DOCS / "tutorials" / f"{page}.md").read_text()
        assert text.startswith("---\nfile_format: mystnb\n"), page  # executed by myst-nb
        assert code_blocks(f"tutorials/{page}"), page
        assert f"\n{page}\n" in toctree, page


def test_readme_is_a_short_first_page():
    lines = README.read_text().split("\n")
    assert len(lines) <= 300
    # the set-up commands first; the bench command is line 4 (scripts run it verbatim)
    assert lines[3] == ('python3 -m venv .venv && .venv/bin/pip install -q -e ".[bench]" && '
                        ".venv/bin/loopdyn bench")
    assert lines[4].startswith('python3 -m venv .venv && .venv/bin/pip install -q -e ".[test,docs]"')
    ci = (README.parent / ".ci" / "run").read_text()
    assert "grep -m1 -F 'pip install -q -e \".[test' README.md" in ci
    text = "\n".join(lines)
    assert "sphinx-build -W --keep-going -b html docs" in text[text.index("## Developing"):]
    # every page the README links to exists
    for target in re.findall(r"\]\((docs/[^)#]+)\)", text):
        assert (README.parent / target).exists(), target


EXECUTED = sorted(str(p.relative_to(DOCS).with_suffix("")) for p in DOCS.rglob("*.md")
                  if p.read_text().startswith("---\nfile_format: mystnb\n"))  # fmt: skip


@pytest.mark.parametrize("page", EXECUTED)
def test_executed_pages_run_in_one_namespace(page, tmp_path, monkeypatch, capsys):
    """Every code cell of every executed page, in order, in one fresh namespace and a temporary folder:
    what the site's build runs in a Jupyter kernel per page (``nb_execution_mode = "force"``), run here
    in the test process, which has the kernels loaded (the build test below builds without executing:
    one kernel process per page cost about 70 CPU-s of each test run)."""
    monkeypatch.chdir(tmp_path)
    ns: dict = {}
    for k, code in enumerate(code_blocks(page)):
        exec(compile(code, f"docs/{page}.md cell {k}", "exec"), ns)
    if page == "tutorials/batch":  # the threads' results, printed by the page: bit-equal to the serial run
        assert capsys.readouterr().out.rstrip().endswith("True")


def test_every_executed_page_is_found():
    assert "getting-started" in EXECUTED and {f"tutorials/{p}" for p in TUTORIALS} <= set(EXECUTED)


def test_docs_build_with_warnings_as_errors(tmp_path: Path):
    """The site builds with warnings as errors (links, references, the API reference's docstrings); its
    pages' code is not executed here: :func:`test_executed_pages_run_in_one_namespace` runs it."""
    out = tmp_path / "html"
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html", "-q",
         "-D", "nb_execution_mode=off", str(DOCS), str(out)],
        capture_output=True, text=True, timeout=1800,
    )
    wall = time.perf_counter() - t0
    log = f"{proc.stdout[-4000:]}\n{proc.stderr[-8000:]}"
    assert proc.returncode == 0, f"sphinx-build failed ({wall:.0f} s):\n{log}"
    for page in ["index", "getting-started", "conventions", "checking", "developing", "api/loopdyn",
                 "benchmarks/cluster-paper", *(f"tutorials/{p}" for p in TUTORIALS)]:
        assert (out / f"{page}.html").exists(), page
    # the figures of docs/results are on the results pages
    images = {p.name for p in (out / "_images").iterdir()}
    for fig in (DOCS / "results").glob("*.png"):
        assert fig.name in images, fig.name

