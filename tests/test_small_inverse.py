"""The closed-form inverse of an implicit cluster's K_d (one or two rows) against NumPy, and its
singularity verdict against the pivoted LU it replaces (`lu_solve_inplace`)."""

import numpy as np
import pytest
from numba import njit

from loopdyn.algorithms.cluster_kinematics import lu_solve_inplace
from loopdyn.algorithms.cluster_kinematics import small_inverse as _small_inverse_step


@njit
def small_inverse(wc, K, n, cb, dep, nrow, out):
    # the step is compiled without a Python entry point (loopdyn.jit.inlined): called from compiled code
    return _small_inverse_step(wc, K, n, cb, dep, nrow, out)


def _inverse(Kd, n=4, dep=(2, 0)):
    """K_d placed on columns ``dep`` of an nrow × n Jacobian padded with junk, then inverted."""
    nrow = Kd.shape[0]
    K = np.full((nrow, n), 7.5)
    for c, j in enumerate(dep[:nrow]):
        K[:, j] = Kd[:, c]
    wc = np.concatenate([np.full(3, -1.0), K.ravel(), np.full(nrow * nrow, np.nan)])
    cb = np.array([99, *dep[:nrow]], dtype=np.int64)
    ok = small_inverse(wc, 3, n, cb, 1, nrow, 3 + K.size)
    return ok, wc[3 + K.size :].reshape(nrow, nrow)


def _lu_verdict(Kd):
    A = np.ascontiguousarray(Kd, dtype=float).ravel().copy()
    B = np.eye(Kd.shape[0]).ravel().copy()
    return lu_solve_inplace(A, 0, Kd.shape[0], B, 0, Kd.shape[0])


@pytest.mark.parametrize("nrow", [1, 2])
def test_inverse_matches_numpy(nrow):
    rng = np.random.default_rng(nrow)
    for _ in range(200):
        Kd = rng.standard_normal((nrow, nrow)) * 10.0 ** rng.uniform(-3, 3)
        ok, inv = _inverse(Kd)
        assert ok
        ref = np.linalg.inv(Kd)
        cond = np.linalg.cond(Kd)
        assert np.max(np.abs(inv - ref)) <= 1e-14 * cond * np.max(np.abs(ref))


def test_singular_verdict_matches_the_pivoted_lu():
    """Across the threshold (a pivot of 1e-12 × max|K_d|) both verdicts agree, on either pivot."""
    seen = set()
    for delta in np.geomspace(1e-16, 1e-8, 81):
        for Kd in (
            np.array([[1.0, 2.0], [2.0, 4.0 + delta]]),  # second pivot −δ/2
            np.array([[3.0 * delta, 1.0], [delta, 2.0]]),  # first column tiny: first pivot
            np.array([[delta, 0.0], [0.0, 1.0]]),
            np.array([[delta]]),
        ):
            verdict = _inverse(Kd)[0]
            assert verdict == _lu_verdict(Kd), (delta, Kd)
            seen.add((Kd.shape[0], verdict))
    # the 2 × 2 sweeps cross the threshold (a 1 × 1 block is relative to itself: singular only at 0)
    assert seen == {(1, True), (2, True), (2, False)}
    # negative controls: an exactly singular block and a zero block are refused, NaN too
    for Kd in (np.array([[1.0, 2.0], [2.0, 4.0]]), np.zeros((2, 2)), np.zeros((1, 1)),
               np.array([[np.nan, 0.0], [0.0, 1.0]])):  # fmt: skip
        assert not _inverse(Kd)[0]
    # and a well-conditioned one is accepted by both
    Kd = np.array([[0.0, 1.0], [1.0, 0.0]])
    assert _inverse(Kd)[0] and _lu_verdict(Kd)
    np.testing.assert_array_equal(_inverse(Kd)[1], Kd)
