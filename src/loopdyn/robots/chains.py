"""Random serial chains, as URDF text so that any library can load exactly the same robot."""

from __future__ import annotations

import numpy as np


def revolute_chain_urdf(n: int, seed: int | None = 0, name: str | None = None) -> str:
    """URDF of a fixed-base chain of ``n`` revolute joints with random axes (x, y or z), link offsets
    and physically valid inertias. The same ``(n, seed)`` always gives the same robot."""
    if n < 1:
        raise ValueError(f"a chain needs at least one joint, got n={n}")
    rng = np.random.default_rng(seed)
    axes = ("1 0 0", "0 1 0", "0 0 1")
    parts = [f'<robot name="{name or f"chain{n}"}">', '  <link name="base"/>']
    for k in range(n):
        mass = rng.uniform(0.5, 2.0)
        com = rng.uniform(-0.05, 0.05, 3) + (0.0, 0.0, 0.1)
        principal = rng.uniform(0.005, 0.02, 3)
        # sorted and capped so that I1 + I2 >= I3 holds for the printed (6-decimal) values too
        i1, i2, i3 = np.round(np.sort(principal), 6)
        i3 = min(i3, round(i1 + i2, 6))
        parts.append(
            f'  <link name="link{k}"><inertial><origin xyz="{com[0]:.6f} {com[1]:.6f} {com[2]:.6f}"/>'
            f'<mass value="{mass:.6f}"/><inertia ixx="{i1:.6f}" iyy="{i2:.6f}" izz="{i3:.6f}" '
            'ixy="0" ixz="0" iyz="0"/></inertial></link>'
        )
        xyz = rng.uniform(-0.05, 0.05, 3) + (0.0, 0.0, 0.2 if k else 0.0)
        rpy = rng.uniform(-0.3, 0.3, 3)
        parent = "base" if k == 0 else f"link{k - 1}"
        parts.append(
            f'  <joint name="joint{k}" type="revolute"><parent link="{parent}"/><child link="link{k}"/>'
            f'<origin xyz="{xyz[0]:.6f} {xyz[1]:.6f} {xyz[2]:.6f}" '
            f'rpy="{rpy[0]:.6f} {rpy[1]:.6f} {rpy[2]:.6f}"/>'
            f'<axis xyz="{axes[rng.integers(3)]}"/>'
            '<limit lower="-3.14" upper="3.14" effort="100" velocity="10"/></joint>'
        )
    parts.append("</robot>")
    return "\n".join(parts)
