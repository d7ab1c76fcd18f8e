"""Robot models written in this project, and the example robots the benchmarks use."""

from .builtin import double_pendulum, four_bar, list_robots, mini_cheetah, mit_humanoid_leg
from .chains import revolute_chain_urdf
from .examples import example_robot_urdf, example_robots

__all__ = [
    "double_pendulum",
    "example_robot_urdf",
    "example_robots",
    "four_bar",
    "list_robots",
    "mini_cheetah",
    "mit_humanoid_leg",
    "revolute_chain_urdf",
]
