"""Sphinx configuration of loopdyn's documentation (``sphinx-build -W --keep-going -b html docs OUT``)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# the checkout's sources, whether or not loopdyn is installed (the executed pages' kernels inherit it)
sys.path.insert(0, str(ROOT / "src"))
os.environ["PYTHONPATH"] = os.pathsep.join(
    [str(ROOT / "src")] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
)

project = "loopdyn"
author = "the loopdyn developers"
copyright = "the loopdyn developers"  # noqa: A001 (Sphinx's name)
release = version = "0.1.0"

extensions = [
    "myst_nb",  # Markdown pages (myst-parser) and executed tutorial pages
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb"}
# docs/results is written by `loopdyn bench`: its Markdown reports are included by the pages of
# docs/benchmarks, not built as pages of their own
exclude_patterns = ["_build", "results/*.md", "Thumbs.db", ".DS_Store"]

myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 4

# executed pages: every code cell runs at each build; a failing cell fails the build
nb_execution_mode = "force"
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_execution_timeout = 600
nb_merge_streams = True

autodoc_default_options = {"members": True, "undoc-members": False, "show-inheritance": False}
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_typehints_format = "short"
napoleon_google_docstring = True
napoleon_numpy_docstring = True

html_theme = "furo"
html_title = "loopdyn"
napoleon_use_ivar = True  # a class's "Attributes" section as fields, not a second description
nb_execution_in_temp = True  # files a cell writes (MuJoCo logs, figures) stay out of docs/
