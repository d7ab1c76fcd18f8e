"""GRBDA's URDF+ reference files (``shared/reference-models/grbda-urdf``) for the tests.

They are looked up in ``$LOOPDYN_GRBDA_URDF_DIR``, else in ``../shared`` beside the checkout (where CI
lays ``shared/``). A file that is not there fails the test that needs it, naming the path and the
variable: CI has the files, so a test that needs one never skips (a skip would hide a moved or
renamed file, or a checkout without ``shared/`` beside it)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ENV = "LOOPDYN_GRBDA_URDF_DIR"
GRBDA_DIR = Path(
    os.environ.get(ENV) or Path(__file__).resolve().parents[2] / "shared" / "reference-models" / "grbda-urdf"
)


def grbda_file(name: str) -> Path:
    """The path of the reference file ``name`` (``.urdf`` added when missing); fails if it is absent."""
    if not name.endswith(".urdf"):
        name += ".urdf"
    path = GRBDA_DIR / name
    if not path.is_file():
        pytest.fail(
            f"GRBDA reference file {path} not found: CI lays shared/ beside the checkout; in another "
            f"checkout set {ENV} to the directory holding the reference files",
            pytrace=False,
        )
    return path
