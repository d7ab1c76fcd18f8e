"""Converters between the paper's spatial derivative stacks and loopdyn's body-frame ones (spec D9–D12).

The paper (and :mod:`loopdyn.higher_order`'s internals) uses *spatial* quantities: twists ``V^s =
(ω; v)`` with ``[V^s] = Ċ C⁻¹`` and wrenches ``W⁰ = (n; f)`` about the world origin, angular first.
loopdyn's API uses *body*-frame quantities in Pinocchio's order ``[linear; angular]`` (a free-flyer's
velocity, ``f_ext``, the free-flyer rows of τ). For a frame with pose ``C = (R, p)`` (4×4 or
``(R, p)``) and stacks indexed ``[order, 6]``:

* :func:`body_to_spatial_twist` (D12) and :func:`spatial_to_body_twist` (D11);
* :func:`body_to_spatial_wrench` (D9) and :func:`spatial_to_body_wrench` (D10), which need the frame's
  spatial twist derivatives ``V^s`` (at least as many rows as the wrench stack minus one).

Only the first derivative of a twist transforms by ``Ad`` alone (``V̇^s = Ad_C V̇^b`` since
``ad_V V = 0``); from the second on the ``ad`` terms below matter.
"""

from __future__ import annotations

import numpy as np

from ..jit import njit
from ..model.model import as_placement
from . import validation as hv
from .kinematics import binomials

_PERM = np.array([3, 4, 5, 0, 1, 2])  # [linear; angular] ↔ (angular; linear)


@njit(cache=True)
def _ad(V):
    A = np.zeros((6, 6))
    w, v = V[:3], V[3:]
    for blk in range(2):
        o = 3 * blk
        A[o + 0, o + 1], A[o + 0, o + 2] = -w[2], w[1]
        A[o + 1, o + 0], A[o + 1, o + 2] = w[2], -w[0]
        A[o + 2, o + 0], A[o + 2, o + 1] = -w[1], w[0]
    A[3, 1], A[3, 2] = -v[2], v[1]
    A[4, 0], A[4, 2] = v[2], -v[0]
    A[5, 0], A[5, 1] = -v[1], v[0]
    return A


@njit(cache=True)
def _Ad(R, p):
    A = np.zeros((6, 6))
    A[:3, :3] = R
    A[3:, 3:] = R
    P = np.array([[0.0, -p[2], p[1]], [p[2], 0.0, -p[0]], [-p[1], p[0], 0.0]])
    A[3:, :3] = P @ R
    return A


@njit(cache=True)
def _transform(A0, Vs, x, mode):
    """Σ_m binom(k, m) A^(m) x^(k−m) with A^(m) from the Leibniz recursions D8/D10/D11/D12:
    mode 0: A = Ad_C, Ȧ = A ad_{V^b} (V = body twists); 1: A = Ad_{C⁻¹}, Ȧ = −A ad_{V^s};
    2: A = Ad_{C⁻¹}ᵀ, Ȧ = −ad_{V^s}ᵀ A; 3: A = Ad_Cᵀ, Ȧ = A ad_{V^s}ᵀ."""
    K = x.shape[0]
    C = binomials(K)
    A = np.empty((K, 6, 6))
    A[0] = A0
    for m in range(1, K):
        acc = np.zeros((6, 6))
        for l in range(m):
            ad = _ad(Vs[l])
            if mode == 0:
                acc += C[m - 1, l] * (A[m - 1 - l] @ ad)
            elif mode == 1:
                acc -= C[m - 1, l] * (A[m - 1 - l] @ ad)
            elif mode == 2:
                acc -= C[m - 1, l] * (ad.T @ A[m - 1 - l])
            else:
                acc += C[m - 1, l] * (A[m - 1 - l] @ ad.T)
        A[m] = acc
    out = np.zeros((K, 6))
    for k in range(K):
        for m in range(k + 1):
            out[k] += C[k, m] * (A[m] @ x[k - m])
    return out


def _inputs(pose, stack, name, twists=None):
    R, p = as_placement(pose, "pose")
    x = hv.as_array(stack, name, 2)
    if x.shape[1] != 6 or x.shape[0] < 1:
        raise hv.ShapeError(f"{name} must have shape (k + 1, 6), got {x.shape}")
    if not np.all(np.isfinite(x)):
        raise hv.NonFiniteError(f"{name} contains NaN or inf")
    if twists is None:
        return R, p, x, None
    Vs = hv.as_array(twists, "twists", 2)
    if Vs.shape[1] != 6 or Vs.shape[0] < x.shape[0] - 1:
        raise hv.ShapeError(f"twists must have shape (>= {max(x.shape[0] - 1, 0)}, 6), got {Vs.shape}")
    if not np.all(np.isfinite(Vs)):
        raise hv.NonFiniteError("twists contains NaN or inf")
    return R, p, x, np.ascontiguousarray(Vs[: max(x.shape[0], 1)])


def body_to_spatial_twist(pose, body_twists) -> np.ndarray:
    """Spatial twist derivatives ``(ω; v)`` from body-frame ones ``[linear; angular]`` (D12)."""
    R, p, x, _ = _inputs(pose, body_twists, "body_twists")
    xb = np.ascontiguousarray(x[:, _PERM])
    return _transform(_Ad(R, p), xb, xb, 0)


def spatial_to_body_twist(pose, spatial_twists) -> np.ndarray:
    """Body-frame twist derivatives ``[linear; angular]`` from spatial ones ``(ω; v)`` (D11)."""
    R, p, x, _ = _inputs(pose, spatial_twists, "spatial_twists")
    return _transform(_Ad(R.T, -R.T @ p), x, x, 1)[:, _PERM]


def body_to_spatial_wrench(pose, twists, body_wrenches) -> np.ndarray:
    """Spatial wrench derivatives ``(n; f)`` from body-frame ones ``[force; torque]`` (D9); ``twists``
    are the frame's spatial twist derivatives ``(ω; v)``."""
    R, p, x, Vs = _inputs(pose, body_wrenches, "body_wrenches", twists)
    return _transform(np.ascontiguousarray(_Ad(R.T, -R.T @ p).T), Vs, np.ascontiguousarray(x[:, _PERM]), 2)


def spatial_to_body_wrench(pose, twists, spatial_wrenches) -> np.ndarray:
    """Body-frame wrench derivatives ``[force; torque]`` from spatial ones ``(n; f)`` (D10); ``twists``
    are the frame's spatial twist derivatives ``(ω; v)``."""
    R, p, x, Vs = _inputs(pose, spatial_wrenches, "spatial_wrenches", twists)
    return _transform(np.ascontiguousarray(_Ad(R, p).T), Vs, x, 3)[:, _PERM]
