"""Baselines of the cluster algorithms (Chignoli et al. 2024 §II, spec §2.7)."""

from .approximate import ApproximateModel, approximate_delassus, approximate_model, unconstrained_model

__all__ = ["ApproximateModel", "approximate_delassus", "approximate_model", "unconstrained_model"]
from .constraints import constraint_jacobians as constraint_jacobians
from .constraints import explicit_G as explicit_G
from .constraints import independent_indices as independent_indices
from .constraints import spanning_state as spanning_state
from .lagrange import lagrange_forward_dynamics as lagrange_forward_dynamics
from .projection import projected_bias as projected_bias
from .projection import projected_delassus as projected_delassus
from .projection import projected_mass_matrix as projected_mass_matrix
from .projection import projected_rnea as projected_rnea
from .projection import projection_forward_dynamics as projection_forward_dynamics
