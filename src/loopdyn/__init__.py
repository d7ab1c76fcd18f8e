"""loopdyn — recursive rigid-body dynamics for robots with kinematic loops.

Quick start::

    import loopdyn as ld
    model = ld.load_urdf("robot.urdf", floating_base=True)
    data = model.create_data()
    q = ld.random_configuration(model)
    tau = ld.rnea(model, data, q, v, a)
"""

from . import baselines, batch, errors, higher_order, robots
from .compilation import compile
from .constraint_rows import Constraint, constraint_jacobian
from .contact import constrained_forward_dynamics
from .contact_derivatives import constrained_forward_dynamics_derivatives
from .delassus_methods import damped_delassus_inverse, delassus
from .derivatives import aba_derivatives, rnea_derivatives
from .dynamics import aba, crba, gravity, minverse, nonlinear_effects, rnea
from .identification import (
    BaseParameters,
    identifiable_parameters,
    inertial_parameters,
    parameter_names,
    regressor,
    with_inertial_parameters,
)
from .io import from_mujoco, load_mjcf, load_sdf, load_urdf, to_mujoco
from .kinematics import (
    forward_kinematics,
    frame_acceleration,
    frame_classical_acceleration,
    frame_jacobian,
    frame_jacobian_time_variation,
    frame_placement,
    frame_velocity,
    update_frame_placements,
)
from .model import (
    Compound,
    Fixed,
    FreeFlyer,
    Gimbal,
    Model,
    Planar,
    Prismatic,
    Revolute,
    RevoluteUnbounded,
    Spherical,
    Universal,
)
from .model.configuration import (
    difference,
    integrate,
    is_normalized,
    neutral,
    normalize,
    random_configuration,
)
from .model.data import Data
from .model.merge import merge
from .model.partition import PartitionMap, partition
from .model.state import (
    ProjectionError,
    constraint_residual,
    project_configuration,
    spanning_tree,
    to_spanning,
)
from .spatial import Inertia
from .spatial_operators import MassMatrixFactor, body_compliances, mass_matrix_factor
from .structure import christoffel, coriolis_matrix, mass_matrix_derivative

__version__ = "0.1.0"

__all__ = [
    "compile",
    "Constraint",
    "constraint_jacobian",
    "constrained_forward_dynamics",
    "Data",
    "damped_delassus_inverse",
    "delassus",
    "ProjectionError",
    "constraint_residual",
    "project_configuration",
    "spanning_tree",
    "to_spanning",
    "Fixed",
    "Compound",
    "Gimbal",
    "Planar",
    "Universal",
    "merge",
    "baselines",
    "batch",
    "difference",
    "integrate",
    "is_normalized",
    "neutral",
    "normalize",
    "random_configuration",
    "robots",
    "FreeFlyer",
    "Inertia",
    "Model",
    "Prismatic",
    "Revolute",
    "RevoluteUnbounded",
    "Spherical",
    "aba",
    "aba_derivatives",
    "constrained_forward_dynamics_derivatives",
    "body_compliances",
    "mass_matrix_factor",
    "partition",
    "PartitionMap",
    "MassMatrixFactor",
    "crba",
    "christoffel",
    "coriolis_matrix",
    "mass_matrix_derivative",
    "errors",
    "forward_kinematics",
    "frame_acceleration",
    "frame_classical_acceleration",
    "frame_velocity",
    "frame_jacobian",
    "frame_jacobian_time_variation",
    "frame_placement",
    "gravity",
    "higher_order",
    "load_sdf",
    "load_urdf",
    "load_mjcf",
    "from_mujoco",
    "to_mujoco",
    "minverse",
    "nonlinear_effects",
    "rnea",
    "rnea_derivatives",
    "update_frame_placements",
    "BaseParameters",
    "identifiable_parameters",
    "inertial_parameters",
    "parameter_names",
    "regressor",
    "with_inertial_parameters",
]
