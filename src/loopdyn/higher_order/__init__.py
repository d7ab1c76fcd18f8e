"""Higher-order time derivatives of the dynamics along a trajectory (Ali, Gabellieri & Franchi 2026).

* :func:`rnea` — τ^(0…r) from the velocity derivatives v^(0…r+1) (H-GRNE, Alg. 2);
* :func:`aba` — v^(1…r+1) from τ^(0…r) (H-GABI, Alg. 3; articulated inertias once per call, Lemma 2).

Coordinates are loopdyn's (Pinocchio's), so order 0 is :func:`loopdyn.rnea` / :func:`loopdyn.aba`.
"""

from .dynamics import aba, rnea

__all__ = ["aba", "rnea"]
