"""The package's import graph has no cycles and no module imports another module's private names
(tools/check_architecture.py, which parses the sources with ast — function-level imports included)."""

import importlib.util
import io
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tool():
    path = ROOT / "tools" / "check_architecture.py"
    spec = importlib.util.spec_from_file_location("check_architecture", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


def test_no_import_cycles_and_no_private_imports():
    out = io.StringIO()
    failures = _tool().check(ROOT / "src", out=out)
    assert failures == 0, out.getvalue()


@pytest.fixture
def fake_package(tmp_path):
    pkg = tmp_path / "loopdyn"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("from .a import public\n")
    return tmp_path, pkg


def test_the_check_finds_a_cycle_through_a_function_level_import(fake_package):
    """Negative control: a cycle hidden in a function body is reported."""
    src, pkg = fake_package
    (pkg / "sub" / "a.py").write_text("def public():\n    from .b import g\n    return g\n")
    (pkg / "sub" / "b.py").write_text("from .a import public\n\ndef g():\n    return public\n")
    out = io.StringIO()
    assert _tool().check(src, out=out) == 1
    assert "import cycle: loopdyn.sub.a <-> loopdyn.sub.b" in out.getvalue()


def test_the_check_finds_a_private_import_and_follows_reexports(fake_package):
    """Negative control: ``from .a import _helper`` is reported; a name imported through the package's
    ``__init__`` links to the module that defines it (no false cycle through the package)."""
    src, pkg = fake_package
    (pkg / "sub" / "a.py").write_text("def public():\n    return 1\n\ndef _helper():\n    return 2\n")
    (pkg / "sub" / "b.py").write_text("from . import public\nfrom .a import _helper\n")
    out = io.StringIO()
    assert _tool().check(src, out=out) == 1
    text = out.getvalue()
    assert "imports private loopdyn.sub.a._helper" in text
    assert "import cycle:" not in text


def test_the_check_finds_an_entry_kernel_that_does_not_borrow_its_arrays(fake_package):
    """Negative control: an ``@kernel`` entry point whose first statement is not ``... = borrowed(...)``
    is reported; one that borrows (after its docstring) is not."""
    src, pkg = fake_package
    (pkg / "sub" / "a.py").write_text(
        "def public():\n    return 1\n\n"
        "@kernel('int64(float64[::1])')\ndef good_kernel(x):\n"
        "    '''doc'''\n    (x,) = borrowed((x,))\n    return 0\n\n"
        "@kernel('int64(float64[::1])')\ndef bad_kernel(x):\n    y = x\n    return 0\n"
    )
    out = io.StringIO()
    assert _tool().check(src, out=out) == 1
    text = out.getvalue()
    assert "bad_kernel" in text and "good_kernel" not in text


def test_the_check_finds_an_entry_kernel_that_writes_a_data_without_acquiring_it(fake_package):
    """Negative control: an ``@kernel`` entry point taking a Data's ``ib`` (or ``ints``) first without
    ``acquire``/``release`` is reported; one that acquires and releases is not, nor one taking other
    arrays first."""
    src, pkg = fake_package
    (pkg / "sub" / "a.py").write_text(
        "def public():\n    return 1\n\n"
        "@kernel('int64(int64[:, ::1])')\ndef good_kernel(ib):\n"
        "    (ib,) = borrowed((ib,))\n    if not acquire(ib):\n        return 1\n"
        "    release(ib)\n    return 0\n\n"
        "@kernel('int64(int64[::1])')\ndef bad_kernel(ints):\n"
        "    (ints,) = borrowed((ints,))\n    return 0\n\n"
        "@kernel('int64(int64[:, ::1])')\ndef other_kernel(hb):\n    (hb,) = borrowed((hb,))\n    return 0\n"
    )
    out = io.StringIO()
    assert _tool().check(src, out=out) == 1
    text = out.getvalue()
    assert "without acquire/release" in text and "bad_kernel" in text
    assert "good_kernel" not in text and "other_kernel" not in text
