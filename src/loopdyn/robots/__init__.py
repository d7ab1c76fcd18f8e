"""Robot models written in this project, and the example robots the benchmarks use.

Built-in robots, one line each (spec §5): :func:`mini_cheetah`, :func:`mit_humanoid`,
:func:`mit_humanoid_leg`, :func:`tello`, :func:`jvrc1`, :func:`gt_chain`, :func:`pbt_chain`,
:func:`four_bar`, :func:`planar_leg_linkage`, :func:`five_bar`, :func:`rssr_linkage`, :func:`delta_robot`,
:func:`double_pendulum`. By name:
``loopdyn.robots.list()`` (sizes and masses), ``build(name, variant="exact" | "approximate" |
"unconstrained", **kwargs)``, ``approximate(name_or_model)``, ``unconstrained(name_or_model)``
(:mod:`loopdyn.robots.registry`).
Tello's differentials, transmissions and file loaders live in :mod:`loopdyn.robots.tello_model`.
"""

from .aerial import aerial_manipulator, aerial_reference, aerial_times
from .builtin import double_pendulum, four_bar, list_robots, mini_cheetah, mit_humanoid_leg
from .chains import revolute_chain_urdf
from .examples import example_robot_file, example_robot_urdf, example_robots
from .humanoids import jvrc1, mit_humanoid
from .linkages import five_bar, planar_leg_linkage
from .parallel import delta_robot, rssr_linkage
from .registry import RobotInfo, approximate, build, names, unconstrained
from .registry import list_ as list  # noqa: A004 - loopdyn.robots.list()
from .serial import gt_chain, pbt_chain
from .tello_model import tello

__all__ = [
    "RobotInfo",
    "aerial_manipulator",
    "aerial_reference",
    "aerial_times",
    "approximate",
    "build",
    "delta_robot",
    "double_pendulum",
    "example_robot_file",
    "example_robot_urdf",
    "example_robots",
    "five_bar",
    "four_bar",
    "gt_chain",
    "jvrc1",
    "list",
    "list_robots",
    "mini_cheetah",
    "mit_humanoid",
    "mit_humanoid_leg",
    "names",
    "pbt_chain",
    "planar_leg_linkage",
    "revolute_chain_urdf",
    "rssr_linkage",
    "tello",
    "unconstrained",
]
