"""Baselines of the cluster algorithms (Chignoli et al. 2024 §II, spec §2.7).

Importing this package registers two Delassus methods for models with loops with
:func:`loopdyn.delassus_methods.register_method`: ``"projected"`` (:func:`projected_delassus`) and
``"approximate"`` (:func:`approximate_delassus`).
"""

from ..delassus_methods import register_method
from .approximate import ApproximateModel, approximate_delassus, approximate_model, unconstrained_model
from .calls import projected_delassus_rows
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

__all__ = [
    "ApproximateModel",
    "approximate_delassus",
    "approximate_model",
    "constraint_jacobians",
    "explicit_G",
    "independent_indices",
    "lagrange_forward_dynamics",
    "projected_bias",
    "projected_delassus",
    "projected_mass_matrix",
    "projected_rnea",
    "projection_forward_dynamics",
    "spanning_state",
    "unconstrained_model",
]

register_method(
    "projected",
    lambda model, data, q, rows, constraints: projected_delassus_rows(model, q, rows),
    for_loops=True,
)
register_method(
    "approximate",
    lambda model, data, q, rows, constraints: approximate_delassus(model, q, constraints),
    for_loops=True,
)
