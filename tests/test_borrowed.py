"""Kernels borrow their array arguments (no reference counting inside, ``algorithms.borrow``): the
results are those of the counted arrays, and the caller's arrays keep their reference counts."""

import sys

import numpy as np
from numba import njit

import loopdyn
from loopdyn.algorithms.borrow import borrowed
from loopdyn.robots import build


@njit
def _sum_borrowed(x, y, k):
    x, y, k = borrowed((x, y, k))
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i] * y[i, 0]
    return s * k, y[1:, 0].sum()  # a view of a borrowed array


def test_borrowed_arrays_read_the_same_data():
    rng = np.random.default_rng(0)
    x = rng.standard_normal(7)
    y = rng.standard_normal((7, 3))
    s, t = _sum_borrowed(x, y, 2.0)
    assert np.isclose(s, 2.0 * float(np.dot(x, y[:, 0])), rtol=1e-14, atol=0)
    assert np.isclose(t, y[1:, 0].sum(), rtol=1e-15, atol=0)


def test_kernels_leave_reference_counts_unchanged():
    model = build("mini_cheetah")
    data = model.create_data()
    q = loopdyn.random_configuration(model, 0)
    v = np.ones(model.nv)
    a = np.ones(model.nv)
    before = [sys.getrefcount(x) for x in (q, v, a, data.ws, data.wc, data.ic)]
    for _ in range(200):
        tau = loopdyn.rnea(model, data, q, v, a)
        loopdyn.aba(model, data, q, v, tau)
        loopdyn.crba(model, data, q)
    after = [sys.getrefcount(x) for x in (q, v, a, data.ws, data.wc, data.ic)]
    assert after == before
    # and the result is still the independent-coordinate dynamics: aba inverts rnea
    assert np.allclose(loopdyn.aba(model, data, q, v, tau), a, rtol=1e-10, atol=1e-10)
