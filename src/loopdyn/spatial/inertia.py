"""Rigid-body spatial inertia (Featherstone convention: motion [ω; v], force [n; f]), and the one
check of physical consistency every loader and the builder apply (:func:`check_physical_inertia`)."""

from __future__ import annotations

import warnings

import numpy as np

from ..errors import InertiaWarning, ModelError

#: Masses (kg), lengths (m) and rotational inertias (kg m²) larger than this in magnitude are refused
#: as absurd: the algorithms form products of them (ABA the square of an articulated inertia, about
#: (m L²)²), which must stay far from overflow (1.8e308) for every state a robot can be in; 1e30 is
#: beyond any physical robot (the Earth weighs 6e24 kg) in any consistent units.
MAGNITUDE_LIMIT = 1e30

#: What the loaders (``inertia=``) and :meth:`Model.add_body <loopdyn.model.model.Model.add_body>`
#: (``inertia_check=``) do with a rotational inertia that violates the triangle inequality.
INERTIA_MODES = ("warn", "physical", "accept")

#: The triangle inequality is checked to within ``TRIANGLE_RTOL`` times the trace of the rotational
#: inertia (the rounding of printed tensors), and at least ``INERTIA_ATOL`` (kg m², the absolute floor
#: of the positive-semi-definiteness check): a zero inertia and rounding-level ones pass.
TRIANGLE_RTOL = 1e-6
INERTIA_ATOL = 1e-12


def check_magnitude(values, what: str) -> None:
    """Raise :class:`~loopdyn.errors.ModelError` naming ``what`` if an entry of ``values`` (a mass,
    length or inertia, finite) exceeds :data:`MAGNITUDE_LIMIT` in magnitude."""
    largest = float(np.max(np.abs(np.asarray(values, dtype=float)), initial=0.0))
    if largest > MAGNITUDE_LIMIT:
        raise ModelError(
            f"{what}: {largest:.3g} is larger than {MAGNITUDE_LIMIT:g} in magnitude: not a physical value "
            "(products of it would overflow)"
        )


def _eigvalsh(I: np.ndarray) -> np.ndarray:
    """Eigenvalues of the symmetric ``I``, scaled so that LAPACK never overflows (entries up to 1e308)."""
    scale = float(np.max(np.abs(I)))
    if scale == 0.0:
        return np.zeros(3)
    return scale * np.linalg.eigvalsh(I / scale)


def skew(x) -> np.ndarray:
    """The 3×3 matrix ``[x]×`` with ``[x]× y = x × y``."""
    return np.array([[0.0, -x[2], x[1]], [x[2], 0.0, -x[0]], [-x[1], x[0], 0.0]])


class Inertia:
    """Inertia of a rigid body: ``mass``, centre of mass ``com`` and rotational inertia ``inertia``
    about the centre of mass (3×3, in the body frame's axes).

    ``matrix()`` is the 6×6 spatial inertia about the frame origin,
    ``[[Ī_c + m c× c×ᵀ, m c×], [m c×ᵀ, m 1]]``.

    Raises :class:`~loopdyn.errors.ModelError` (naming ``name``) for a negative or non-finite mass, a
    non-finite centre of mass or tensor, an entry beyond :data:`MAGNITUDE_LIMIT`, a tensor that is
    not symmetric or not positive semi-definite. The triangle inequality is not checked here: the
    loaders and ``Model.add_body`` apply their policy with :func:`check_physical_inertia`.
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
        check_magnitude(m, f"{name}: mass")
        check_magnitude(c, f"{name}: centre of mass")
        check_magnitude(I, f"{name}: rotational inertia")
        if np.max(np.abs(I - I.T)) > 1e-9 * max(1.0, np.max(np.abs(I))):
            raise ModelError(f"{name}: rotational inertia is not symmetric:\n{I}")
        eig = _eigvalsh(0.5 * (I + I.T))
        tol = INERTIA_ATOL * max(1.0, float(np.max(np.abs(eig))))
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


def triangle_excess(inertia: Inertia) -> tuple[np.ndarray, float, float]:
    """``(moments, excess, trace)`` of the rotational inertia about the centre of mass: its principal
    moments ``I1 <= I2 <= I3``, ``excess = I3 - I1 - I2`` (``= -2 Σ m_k z_k²`` along the third
    principal axis for a real body, so never positive) and the trace ``I1 + I2 + I3``."""
    moments = _eigvalsh(inertia.inertia)
    return moments, float(moments[2] - moments[0] - moments[1]), float(np.sum(moments))


def inertia_violation(inertia: Inertia, rtol: float = TRIANGLE_RTOL) -> str | None:
    """``None`` if the rotational inertia can belong to a rigid body (its principal moments satisfy the
    triangle inequality ``I1 + I2 >= I3`` to within ``rtol`` times its trace, and at least
    :data:`INERTIA_ATOL`); otherwise what is wrong with it, and by how much relative to the trace.
    The test is rotation-invariant and relative to the inertia's own scale, so zero and tiny inertias
    (a link massless in all but rounding) pass."""
    moments, excess, trace = triangle_excess(inertia)
    if excess <= rtol * max(trace, 0.0) + INERTIA_ATOL:
        return None
    I1, I2, I3 = moments
    share = f"{100.0 * excess / trace:.3g} % of the trace" if trace > 0.0 else "the trace is not positive"
    return (
        f"rotational inertia violates the triangle inequality: principal moments {I1:.6g}, {I2:.6g}, "
        f"{I3:.6g} about the centre of mass, {I1:.6g} + {I2:.6g} < {I3:.6g} by {excess:.3g} ({share}); "
        "no rigid body has such an inertia"
    )


def check_physical_inertia(
    inertia: Inertia,
    what: str,
    mode: str = "physical",
    *,
    where: str = "",
    hint: str = "pass inertia='accept' to load it as written",
    stacklevel: int = 2,
) -> None:
    """Apply the inertia policy ``mode`` (one of :data:`INERTIA_MODES`) to ``inertia``, the inertia of
    ``what`` (e.g. ``"link 'thigh'"``), with :func:`inertia_violation`:

    * ``"physical"``: a violation raises :class:`~loopdyn.errors.ModelError` ``"{what}: …; {hint}"``
      (the loaders re-raise it as their own error, with the file and line);
    * ``"warn"``: a violation warns with :class:`~loopdyn.errors.InertiaWarning`
      ``"{where}{what}: …"`` (``where``: the ``"file:line: "`` prefix) and the inertia is kept;
    * ``"accept"``: nothing is checked.

    ``stacklevel`` is passed to :func:`warnings.warn` (2: the caller of this function)."""
    if mode not in INERTIA_MODES:
        raise ModelError(f"{what}: the inertia check must be one of {INERTIA_MODES}, got {mode!r}")
    if mode == "accept":
        return
    problem = inertia_violation(inertia)
    if problem is None:
        return
    if mode == "physical":
        raise ModelError(f"{what}: {problem}; {hint}")
    warnings.warn(
        f"{where}{what}: {problem}; loaded as written (inertia='physical' refuses it, "
        "inertia='accept' loads it without this warning)",
        InertiaWarning,
        stacklevel=stacklevel + 1,
    )
