"""loopdyn — recursive rigid-body dynamics for robots with kinematic loops.

Quick start::

    import loopdyn as ld
    model = ld.load_urdf("robot.urdf", floating_base=True)
    data = model.create_data()
    q = ld.random_configuration(model)
    tau = ld.rnea(model, data, q, v, a)
"""

from . import errors
from .algorithms import aba, crba, gravity, minverse, nonlinear_effects, rnea
from .model import Fixed, FreeFlyer, Model, Prismatic, Revolute, RevoluteUnbounded, Spherical
from .model.data import Data
from .spatial import Inertia

__version__ = "0.1.0"

__all__ = [
    "Data", "Fixed", "FreeFlyer", "Inertia", "Model", "Prismatic", "Revolute", "RevoluteUnbounded",
    "Spherical", "aba", "crba", "errors", "gravity", "minverse", "nonlinear_effects", "rnea",
]
