"""Reading robot descriptions (URDF) into loopdyn models."""

from .urdf import load_urdf

__all__ = ["load_urdf"]
