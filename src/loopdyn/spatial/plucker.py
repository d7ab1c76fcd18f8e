"""Dense 6×6 Plücker matrices (Featherstone conventions) — for reference and tests, not hot paths.

Ordering: motion vectors ``[ω; v]``, force vectors ``[n; f]`` (angular first). Pinocchio orders
both the other way round (``[v; ω]``, ``[f; n]``); :func:`to_pinocchio_order` and
:func:`from_pinocchio_order` swap the two 3-blocks.

Frames: "B sits in A with rotation ``R`` and origin ``p``" means ``x_A = R x_B + p`` (``R`` active,
B's axes expressed in A; Pinocchio's ``SE3(R, p)`` for ``A_M_B``). Then

* :func:`motion_transform` ``(R, p)`` is ``B_X_A``: motion coordinates in A → in B,
  ``[[E, 0], [-E [p]×, E]]`` with ``E = Rᵀ`` (Featherstone's ``rot(E) xlt(p)``);
* :func:`inverse_motion_transform` ``(R, p)`` is ``A_X_B = (B_X_A)⁻¹ = [[R, 0], [[p]× R, R]]``
  (Pinocchio's ``SE3(R, p).action`` up to the block order);
* :func:`force_transform` ``(R, p)`` is ``B_X*_A = (B_X_A)⁻ᵀ = [[E, -E [p]×], [0, E]]``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .inertia import skew

__all__ = [
    "motion_transform",
    "inverse_motion_transform",
    "force_transform",
    "inverse_force_transform",
    "crm",
    "crf",
    "spatial_inertia_matrix",
    "to_pinocchio_order",
    "from_pinocchio_order",
]


def _rp(R: ArrayLike, p: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    R = np.asarray(R, dtype=float)
    p = np.asarray(p, dtype=float).reshape(-1)
    if R.shape != (3, 3) or p.shape != (3,):
        raise ValueError(f"expected a 3x3 rotation and a 3-vector, got shapes {R.shape} and {p.shape}")
    return R, p


def motion_transform(R: ArrayLike, p: ArrayLike) -> np.ndarray:
    """``B_X_A = [[E, 0], [-E [p]×, E]]`` (``E = Rᵀ``) for frame B at ``(R, p)`` in frame A.

    Maps a motion vector ``[ω; v]`` in A coordinates to B coordinates. Composition follows the
    frames: if C sits at ``(R2, p2)`` in B, ``C_X_A = motion_transform(R2, p2) @ motion_transform(R, p)``.
    """
    R, p = _rp(R, p)
    E = R.T
    X = np.zeros((6, 6))
    X[:3, :3] = E
    X[3:, 3:] = E
    X[3:, :3] = -E @ skew(p)
    return X


def inverse_motion_transform(R: ArrayLike, p: ArrayLike) -> np.ndarray:
    """``A_X_B = [[R, 0], [[p]× R, R]]``, the inverse of :func:`motion_transform` ``(R, p)``."""
    R, p = _rp(R, p)
    X = np.zeros((6, 6))
    X[:3, :3] = R
    X[3:, 3:] = R
    X[3:, :3] = skew(p) @ R
    return X


def force_transform(R: ArrayLike, p: ArrayLike) -> np.ndarray:
    """``B_X*_A = [[E, -E [p]×], [0, E]] = (B_X_A)⁻ᵀ``: force ``[n; f]`` in A → in B."""
    R, p = _rp(R, p)
    E = R.T
    X = np.zeros((6, 6))
    X[:3, :3] = E
    X[3:, 3:] = E
    X[:3, 3:] = -E @ skew(p)
    return X


def inverse_force_transform(R: ArrayLike, p: ArrayLike) -> np.ndarray:
    """``A_X*_B = [[R, [p]× R], [0, R]] = (B_X*_A)⁻¹``: force in B → in A."""
    R, p = _rp(R, p)
    X = np.zeros((6, 6))
    X[:3, :3] = R
    X[3:, 3:] = R
    X[:3, 3:] = skew(p) @ R
    return X


def crm(m: ArrayLike) -> np.ndarray:
    """Motion cross-product matrix ``[[ω×, 0], [v×, ω×]]`` of ``m = [ω; v]``: ``crm(m) u = m ×ₘ u``."""
    m = np.asarray(m, dtype=float).reshape(-1)
    if m.shape != (6,):
        raise ValueError(f"expected a 6-vector [ω; v], got shape {m.shape}")
    W, V = skew(m[:3]), skew(m[3:])
    out = np.zeros((6, 6))
    out[:3, :3] = W
    out[3:, 3:] = W
    out[3:, :3] = V
    return out


def crf(m: ArrayLike) -> np.ndarray:
    """Force cross-product matrix ``[[ω×, v×], [0, ω×]] = -crm(m)ᵀ``: ``crf(m) f = m ×* f``."""
    return -crm(m).T


def spatial_inertia_matrix(mass: float, com: ArrayLike, inertia_com: ArrayLike) -> np.ndarray:
    """6×6 spatial inertia about the frame origin, ``[[Ī_c + m c× c×ᵀ, m c×], [m c×ᵀ, m 1]]``.

    ``inertia_com`` is the rotational inertia about the centre of mass ``com``. The same matrix
    as :meth:`loopdyn.spatial.inertia.Inertia.matrix` (without its validation).
    """
    m = float(mass)
    c = np.asarray(com, dtype=float).reshape(-1)
    Ic = np.asarray(inertia_com, dtype=float)
    if c.shape != (3,) or Ic.shape != (3, 3):
        raise ValueError(f"expected a 3-vector com and a 3x3 inertia, got shapes {c.shape} and {Ic.shape}")
    C = skew(c)
    out = np.empty((6, 6))
    out[:3, :3] = Ic + m * (C @ C.T)
    out[:3, 3:] = m * C
    out[3:, :3] = m * C.T
    out[3:, 3:] = m * np.eye(3)
    return out


def _swap_blocks(a: ArrayLike, what: str) -> np.ndarray:
    a = np.asarray(a, dtype=float)
    if a.ndim not in (1, 2) or a.shape[0] != 6:
        raise ValueError(f"{what}: expected a 6-vector or a 6×n matrix, got shape {a.shape}")
    return np.concatenate([a[3:], a[:3]], axis=0)


def to_pinocchio_order(a: ArrayLike) -> np.ndarray:
    """Featherstone ``[angular; linear]`` → Pinocchio ``[linear; angular]`` (rows of a 6-vector or
    6×n matrix; for a 6×6 operator ``A`` use ``to_pinocchio_order(to_pinocchio_order(A).T).T``)."""
    return _swap_blocks(a, "to_pinocchio_order")


def from_pinocchio_order(a: ArrayLike) -> np.ndarray:
    """Pinocchio ``[linear; angular]`` → Featherstone ``[angular; linear]`` (rows; see
    :func:`to_pinocchio_order`)."""
    return _swap_blocks(a, "from_pinocchio_order")
