"""Jain's spatial-operator results as public functions (spec §1.7 and §2.7).

* :func:`body_compliances` — the 6×6 operational-space compliance ``Υ(k) = Jₖ M⁻¹ Jₖᵀ`` of every
  body in one O(n) sweep (Eq. 22);
* :func:`mass_matrix_factor` — the innovations factorisation ``M = [I + HφK] D [I + HφK]ᵀ`` and its
  inverse, as O(n) operators, on trees and on the cluster tree of a model with loops (spec §2.7,
  :class:`ClusterMassMatrixFactor`); :func:`block_elimination_factor` gives the same factors of a
  model with loops by dense block elimination of its mass matrix (a reference and a baseline).
"""

from .block_elimination import BlockEliminationFactor, block_elimination_factor
from .compliance import body_compliances
from .factorization import ClusterMassMatrixFactor, MassMatrixFactor, mass_matrix_factor

__all__ = ["BlockEliminationFactor", "ClusterMassMatrixFactor", "MassMatrixFactor",
           "block_elimination_factor", "body_compliances", "mass_matrix_factor"]
