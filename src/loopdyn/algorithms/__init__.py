"""Rigid-body dynamics algorithms, one module per family.

* :mod:`.rnea` — inverse dynamics (``rnea``, ``nonlinear_effects``, ``gravity``)
* :mod:`.aba` — forward dynamics (``aba``)
* :mod:`.crba` — mass matrix (``crba``) and its inverse (``minverse``)
* :mod:`.kinematics` — forward kinematics, frame placements, frame Jacobians and their time variation
"""

from .aba import aba
from .crba import crba, minverse
from .rnea import gravity, nonlinear_effects, rnea

__all__ = ["aba", "crba", "gravity", "minverse", "nonlinear_effects", "rnea"]
