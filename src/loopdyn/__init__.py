"""loopdyn — recursive rigid-body dynamics for robots with kinematic loops.

Quick start::

    import loopdyn as ld
    model = ld.load_urdf("robot.urdf", floating_base=True)
    data = model.create_data()
    q = ld.random_configuration(model)
    tau = ld.rnea(model, data, q, v, a)
"""

from . import batch, errors, robots
from .algorithms import aba, crba, gravity, minverse, nonlinear_effects, rnea
from .algorithms.contact import constrained_forward_dynamics
from .algorithms.delassus import Constraint, constraint_jacobian, damped_delassus_inverse, delassus
from .algorithms.kinematics import (
    forward_kinematics,
    frame_acceleration,
    frame_classical_acceleration,
    frame_jacobian,
    frame_jacobian_time_variation,
    frame_placement,
    frame_velocity,
    update_frame_placements,
)
from .io import load_sdf, load_urdf
from .model import Fixed, FreeFlyer, Model, Prismatic, Revolute, RevoluteUnbounded, Spherical
from .model.configuration import (
    difference,
    integrate,
    is_normalized,
    neutral,
    normalize,
    random_configuration,
)
from .model.data import Data
from .model.state import (
    ProjectionError,
    constraint_residual,
    project_configuration,
    spanning_tree,
    to_spanning,
)
from .spatial import Inertia

__version__ = "0.1.0"

__all__ = [
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
    "crba",
    "errors",
    "forward_kinematics",
    "frame_acceleration",
    "frame_classical_acceleration",
    "frame_velocity",
    "frame_jacobian",
    "frame_jacobian_time_variation",
    "frame_placement",
    "gravity",
    "load_sdf",
    "load_urdf",
    "minverse",
    "nonlinear_effects",
    "rnea",
    "update_frame_placements",
]
