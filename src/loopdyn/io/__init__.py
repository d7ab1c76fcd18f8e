"""Reading robot descriptions (URDF, MJCF, SDF) into loopdyn models."""

from .mjcf import from_mujoco, load_mjcf, to_mujoco
from .sdf import load_sdf
from .urdf import load_urdf

__all__ = ["from_mujoco", "load_mjcf", "load_sdf", "load_urdf", "to_mujoco"]
