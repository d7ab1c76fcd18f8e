"""The example scripts run, write their figures and show what they claim."""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import numpy as np

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_mini_cheetah_crouch(tmp_path, capsys):
    import matplotlib  # noqa: F401 (the example plots: a test dependency)
    example = _load("mini_cheetah_crouch")
    example.main(tmp_path, duration=0.02)  # compiles the kernels (about a minute with a cold numba cache)
    start = time.perf_counter()
    results = example.main(tmp_path)
    elapsed = time.perf_counter() - start
    png = tmp_path / "mini_cheetah_crouch.png"
    assert png.is_file() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "wrote" in capsys.readouterr().out
    assert elapsed < 60.0, f"the example took {elapsed:.1f} s (kernels compiled)"
    for name, r in results.items():
        h = r["height"]
        # it stands, crouches by more than 10 cm and stands up again
        assert h[0] - h.min() > 0.10 and abs(h[-1] - h[0]) < 0.01, name
        # the feet stay where they are (contacts solved exactly, velocity projected)
        assert r["drift"].max() < 1e-3, name
        # energy balance: kinetic + potential energy change = motor work, up to the O(dt) integration
        # error, which must be small against the work done
        balance = r["energy"] - r["energy"][0] - r["work"]
        assert np.max(np.abs(balance)) < 0.01 * np.ptp(r["work"]), name
        assert np.ptp(r["work"]) > 1.0, name  # the balance is not vacuous
    # the two models give different torques (the rotors' masses and gyroscopic effects), not wildly so
    diff = np.max(np.abs(results["exact"]["tau"] - results["approximate"]["tau"]))
    assert 0.01 < diff < 2.0


def test_ilqr_leg(tmp_path, capsys):
    """iLQR on the MIT Humanoid leg (geared rotors) with ``aba_derivatives``: the cost falls by orders
    of magnitude, the solver fed by central differences follows the same path (same costs), and the
    analytical linearisation makes an iteration faster."""
    import matplotlib  # noqa: F401 (the example plots: a test dependency)

    example = _load("ilqr_leg")
    results = example.main(tmp_path, horizon=30, iterations=6)
    png = tmp_path / "ilqr_leg.png"
    assert png.is_file() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "wrote" in capsys.readouterr().out
    exact, fd = results["aba_derivatives"], results["central differences"]
    c = exact["costs"]
    assert np.all(np.diff(c) <= 0.0) and c[-1] < 1e-2 * c[0]
    assert np.allclose(fd["costs"], c, rtol=1e-6)
    assert fd["seconds_per_iteration"] > 1.2 * exact["seconds_per_iteration"]
