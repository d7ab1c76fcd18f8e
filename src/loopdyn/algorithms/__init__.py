"""Rigid-body dynamics algorithms, one module per family.

* :mod:`.rnea` — inverse dynamics (``rnea``, ``nonlinear_effects``, ``gravity``)
* :mod:`.aba` — forward dynamics (``aba``)
* :mod:`.crba` — mass matrix (``crba``) and its inverse (``minverse``)
* :mod:`.kinematics` — forward kinematics, frame placements, frame Jacobians and their time variation
* :mod:`.delassus` — the Delassus matrix J M⁻¹ Jᵀ of contact / loop constraints (dense, EFPA) for trees
* :mod:`.cluster_kinematics`, :mod:`.cluster_dynamics` — the same on models with loops (C-RNEA, C-ABA)
"""

from .aba import aba
from .crba import crba, minverse
from .rnea import gravity, nonlinear_effects, rnea

__all__ = ["aba", "crba", "gravity", "minverse", "nonlinear_effects", "rnea"]
