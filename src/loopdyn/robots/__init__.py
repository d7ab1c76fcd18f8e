"""Robot models written in this project, and the example robots the benchmarks use."""

from .chains import revolute_chain_urdf
from .examples import example_robot_urdf, example_robots

__all__ = ["example_robot_urdf", "example_robots", "revolute_chain_urdf"]
