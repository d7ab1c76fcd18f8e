"""Models: joints, the tree builder, the compiled layout and Data workspaces."""

from .compound import Compound, CompoundJoint, CompoundRecord, Gimbal, Planar, Universal
from .joints import (
    FIXED,
    FREEFLYER,
    PRISMATIC,
    REVOLUTE,
    REVOLUTE_UNBOUNDED,
    SPHERICAL,
    Fixed,
    FreeFlyer,
    Joint,
    Prismatic,
    Revolute,
    RevoluteUnbounded,
    Spherical,
)
from .model import Body, Frame, Model

__all__ = [
    "Body",
    "Compound",
    "CompoundJoint",
    "CompoundRecord",
    "Gimbal",
    "Planar",
    "Universal",
    "Fixed",
    "Frame",
    "FreeFlyer",
    "Joint",
    "Model",
    "Prismatic",
    "Revolute",
    "RevoluteUnbounded",
    "Spherical",
    "FIXED",
    "FREEFLYER",
    "PRISMATIC",
    "REVOLUTE",
    "REVOLUTE_UNBOUNDED",
    "SPHERICAL",
]
