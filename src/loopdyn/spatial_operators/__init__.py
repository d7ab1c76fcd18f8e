"""Jain's spatial-operator results as public functions (spec §1.7 and §2.7).

* :func:`body_compliances` — the 6×6 operational-space compliance ``Υ(k) = Jₖ M⁻¹ Jₖᵀ`` of every
  body in one O(n) sweep (Eq. 22);
* :func:`mass_matrix_factor` — the innovations factorisation ``M = [I + HφK] D [I + HφK]ᵀ`` and its
  inverse, as O(n) operators on trees (on the cluster tree of a model with loops: the same factors
  from the cluster mass matrix, see :class:`ClusterMassMatrixFactor`).
"""

from .compliance import body_compliances
from .factorization import ClusterMassMatrixFactor, MassMatrixFactor, mass_matrix_factor

__all__ = ["ClusterMassMatrixFactor", "MassMatrixFactor", "body_compliances", "mass_matrix_factor"]
