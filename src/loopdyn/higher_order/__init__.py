"""Higher-order time derivatives of the dynamics along a trajectory (Ali, Gabellieri & Franchi 2026).

* :func:`rnea` — τ^(0…r) from the velocity derivatives v^(0…r+1) (H-GRNE, Alg. 2);
* :func:`aba` — v^(1…r+1) from τ^(0…r) (H-GABI, Alg. 3; articulated inertias once per call, Lemma 2);
* :func:`hybrid` — prescribed motion on some joints, prescribed forces on the others (Alg. 4);
* :func:`closed_form` — the paper's ``M̄``, admissible Coriolis ``C``, gravity, ``M̄̇`` (Prop. 1);
* spatial ↔ body converters of twist and wrench derivative stacks (D9–D12).

Coordinates are loopdyn's (Pinocchio's), so order 0 is :func:`loopdyn.rnea` / :func:`loopdyn.aba`.
:func:`rnea` and :func:`aba` also take models with clusters: explicit constant-G ones (geared rotors,
belts) and closed loops (four-bars, differentials: :mod:`.loops`), in their independent coordinates.
"""

from .api import aba, hybrid, rnea
from .closed_form import ClosedForm, closed_form
from .frames import (
    body_to_spatial_twist,
    body_to_spatial_wrench,
    spatial_to_body_twist,
    spatial_to_body_wrench,
)

__all__ = [
    "ClosedForm",
    "aba",
    "body_to_spatial_twist",
    "body_to_spatial_wrench",
    "closed_form",
    "hybrid",
    "rnea",
    "spatial_to_body_twist",
    "spatial_to_body_wrench",
]
