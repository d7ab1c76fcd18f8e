"""Rigid-body spatial inertia (Featherstone convention: motion [ω; v], force [n; f])."""

from __future__ import annotations

import numpy as np

from ..errors import ModelError


def skew(x) -> np.ndarray:
    """The 3×3 matrix ``[x]×`` with ``[x]× y = x × y``."""
    return np.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])


class Inertia:
    """Inertia of a rigid body: ``mass``, centre of mass ``com`` and rotational inertia ``inertia``
    about the centre of mass (3×3, in the body frame's axes).

    ``matrix()`` is the 6×6 spatial inertia about the frame origin,
    ``[[Ī_c + m c× c×ᵀ, m c×], [m c×ᵀ, m 1]]``.
    """

    __slots__ = ("mass", "com", "inertia")

    def __init__(self, mass: float, com=(0.0, 0.0, 0.0), inertia=None, *, name: str = "body"):
        m = float(mass)
        c = np.array(com, dtype=float).reshape(-1)
        I = np.zeros((3, 3)) if inertia is None else np.array(inertia, dtype=float)
        if not np.isfinite(m) or m < 0.0:
            raise ModelError(f"{name}: mass must be finite and >= 0, got {mass!r}")
        if c.shape != (3,) or not np.all(np.isfinite(c)):
            raise ModelError(f"{name}: centre of mass must be 3 finite numbers, got {com!r}")
        if I.shape != (3, 3) or not np.all(np.isfinite(I)):
            raise ModelError(f"{name}: rotational inertia must be a finite 3x3 matrix, got {inertia!r}")
        if np.max(np.abs(I - I.T)) > 1e-9 * max(1.0, np.max(np.abs(I))):
            raise ModelError(f"{name}: rotational inertia is not symmetric:\n{I}")
        eig = np.linalg.eigvalsh(0.5 * (I + I.T))
        tol = 1e-12 * max(1.0, float(np.max(np.abs(eig))))
        if eig[0] < -tol:
            raise ModelError(f"{name}: rotational inertia is not positive semi-definite (eigenvalues {eig})")
        self.mass = m
        self.com = c
        self.inertia = 0.5 * (I + I.T)

    @classmethod
    def zero(cls) -> Inertia:
        return cls(0.0)

    @classmethod
    def from_compact(cls, params) -> Inertia:
        """From ``(m, h = m c, Ī_origin as xx, yy, zz, xy, xz, yz)`` (the compiled model's layout)."""
        m = float(params[0])
        h = np.asarray(params[1:4], float)
        xx, yy, zz, xy, xz, yz = (float(x) for x in params[4:10])
        Io = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
        if m <= 0.0:
            return cls(0.0, np.zeros(3), Io)
        c = h / m
        return cls(m, c, Io + m * skew(c) @ skew(c))

    def compact(self) -> np.ndarray:
        """``(m, h, Ī_origin[xx, yy, zz, xy, xz, yz])``: inertia about the frame origin, 10 numbers."""
        m, c = self.mass, self.com
        Io = self.inertia - m * skew(c) @ skew(c)
        return np.array([m, *(m * c), Io[0, 0], Io[1, 1], Io[2, 2], Io[0, 1], Io[0, 2], Io[1, 2]])

    def matrix(self) -> np.ndarray:
        """6×6 spatial inertia about the frame origin (Featherstone ordering [angular; linear])."""
        m, c = self.mass, self.com
        C = skew(c)
        out = np.zeros((6, 6))
        out[:3, :3] = self.inertia + m * C @ C.T
        out[:3, 3:] = m * C
        out[3:, :3] = m * C.T
        out[3:, 3:] = m * np.eye(3)
        return out

    def transformed(self, rotation, translation) -> Inertia:
        """This inertia (given in frame B) expressed in frame A, where B sits in A at
        ``rotation`` (active, B's axes in A) and ``translation`` (B's origin in A)."""
        R = np.asarray(rotation, float)
        p = np.asarray(translation, float)
        return Inertia(self.mass, R @ self.com + p, R @ self.inertia @ R.T)

    def __add__(self, other: Inertia) -> Inertia:
        m = self.mass + other.mass
        if m <= 0.0:
            return Inertia(0.0, np.zeros(3), self.inertia + other.inertia)
        c = (self.mass * self.com + other.mass * other.com) / m
        I = np.zeros((3, 3))
        for part in (self, other):
            d = part.com - c
            I += part.inertia + part.mass * (d @ d * np.eye(3) - np.outer(d, d))
        return Inertia(m, c, I)

    def __repr__(self) -> str:
        return f"Inertia(mass={self.mass:g}, com={self.com.tolist()}, inertia={self.inertia.tolist()})"
