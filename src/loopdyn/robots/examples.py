"""Locating the robots of the ``example-robot-data`` package (installed with the ``test``/``bench``
extras). They are only data: loopdyn parses the URDF files itself."""

from __future__ import annotations

import os
import sysconfig

from ..errors import UnknownNameError

# name → (path below the package's robots directory, floating base)
EXAMPLE_ROBOTS = {
    "solo12": ("solo_description/robots/solo12.urdf", True),
    "hyq": ("hyq_description/robots/hyq_no_sensors.urdf", True),
    "talos_reduced": ("talos_data/robots/talos_reduced.urdf", True),
    "panda": ("panda_description/urdf/panda.urdf", False),
    "ur5": ("ur_description/urdf/ur5_robot.urdf", False),
}


def _robots_dir() -> str | None:
    for key in ("purelib", "platlib"):
        d = os.path.join(sysconfig.get_paths()[key], "cmeel.prefix", "share", "example-robot-data", "robots")
        if os.path.isdir(d):
            return d
    return None


def example_robot_urdf(name: str) -> tuple[str, bool]:
    """``(path, floating_base)`` of an example-robot-data robot; raises FileNotFoundError if the
    package (``pip install example-robot-data``) is not installed."""
    if name not in EXAMPLE_ROBOTS:
        raise UnknownNameError(f"unknown example robot {name!r}; known: {sorted(EXAMPLE_ROBOTS)}")
    root = _robots_dir()
    rel, floating = EXAMPLE_ROBOTS[name]
    path = os.path.join(root, rel) if root else None
    if path is None or not os.path.isfile(path):
        raise FileNotFoundError(
            f"{name}: example-robot-data is not installed (pip install example-robot-data)"
        )
    return path, floating


def example_robot_file(relative_path: str) -> str:
    """The path of any file that example-robot-data ships, given below its ``robots`` folder (e.g.
    ``"cassie_description/robots/cassie.sdf"``); FileNotFoundError naming what is missing."""
    root = _robots_dir()
    if root is None:
        raise FileNotFoundError("example-robot-data is not installed (pip install example-robot-data)")
    path = os.path.join(root, relative_path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"example-robot-data has no file {relative_path!r} (below {root})")
    return path


def example_robots() -> list[str]:
    """Names of the example robots that are available on this machine."""
    out = []
    for name in EXAMPLE_ROBOTS:
        try:
            example_robot_urdf(name)
        except FileNotFoundError:
            continue
        out.append(name)
    return out
