"""Placements (rigid transforms) given by the user: 4×4 matrices or ``(R, p)`` pairs."""

from __future__ import annotations

import numpy as np

from ..errors import ModelError
from ..spatial.inertia import MAGNITUDE_LIMIT


def as_placement(placement, what: str = "placement", error=ModelError) -> tuple[np.ndarray, np.ndarray]:
    """``(R, p)`` from a 4×4 homogeneous matrix, an ``(R, p)`` pair (``R`` 3×3, or 9 numbers row-major)
    or ``None`` (identity). Anything else raises ``error`` (default :class:`ModelError`) naming ``what``."""
    if placement is None:
        return np.eye(3), np.zeros(3)
    try:
        if isinstance(placement, tuple | list) and len(placement) == 2:
            R = np.array(placement[0], dtype=float)
            if R.shape == (9,):
                R = R.reshape(3, 3)
            p = np.array(placement[1], dtype=float).reshape(-1)
        else:
            T = np.asarray(placement, dtype=float)
            if T.shape != (4, 4):
                raise error(f"{what}: expected a 4x4 homogeneous matrix or (R, p), got shape {T.shape}")
            if np.max(np.abs(T[3] - [0, 0, 0, 1])) > 1e-12:
                raise error(f"{what}: last row of a homogeneous matrix must be [0, 0, 0, 1], got {T[3]}")
            R, p = T[:3, :3].copy(), T[:3, 3].copy()
    except (TypeError, ValueError) as exc:
        if isinstance(exc, error):
            raise
        raise error(f"{what}: expected a 4x4 homogeneous matrix or (R, p) of real numbers: {exc}") from None
    if R.shape != (3, 3) or p.shape != (3,):
        raise error(f"{what}: rotation must be 3x3 and translation 3, got {R.shape} and {p.shape}")
    if not (np.all(np.isfinite(R)) and np.all(np.isfinite(p))):
        raise error(f"{what}: contains NaN or inf")
    if np.max(np.abs(p)) > MAGNITUDE_LIMIT:
        raise error(
            f"{what}: translation {p.tolist()} has an entry larger than {MAGNITUDE_LIMIT:g} in magnitude: "
            "not a physical length (products of it would overflow)"
        )
    if np.max(np.abs(R.T @ R - np.eye(3))) > 1e-9 or np.linalg.det(R) < 0:
        raise error(f"{what}: rotation is not a proper rotation matrix (R^T R != I or det < 0):\n{R}")
    return R, p


def homogeneous(R: np.ndarray, p: np.ndarray) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3] = R
    T[:3, 3] = p
    return T
