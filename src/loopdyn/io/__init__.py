"""Reading robot descriptions (URDF, SDF) into loopdyn models."""

from .sdf import load_sdf
from .urdf import load_urdf

__all__ = ["load_sdf", "load_urdf"]
