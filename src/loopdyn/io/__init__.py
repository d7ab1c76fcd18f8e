"""Reading robot descriptions (URDF, MJCF) into loopdyn models."""

from .mjcf import from_mujoco, load_mjcf, to_mujoco
from .urdf import load_urdf

__all__ = ["from_mujoco", "load_mjcf", "load_urdf", "to_mujoco"]
