"""Random models with loops and couplings, for the cluster tests.

Building blocks attached at random places of a random tree:

* ``geared`` — a link and its rotor on the same parent, ``rotor = N · link`` (explicit);
* ``belt`` — knee link, knee rotor, ankle rotor on a parent and an ankle link on the knee link, with
  ``knee_rotor = N1 · q_knee`` and ``ankle_rotor = N2 · (q_knee + q_ankle)`` (explicit, 4 bodies);
* ``fourbar`` — a planar four-bar closed by a revolute loop joint (implicit, 5 rows of rank 2);
* ``differential`` — two rotors and two links tied by a nonlinear user formula (implicit);
* plus ordinary revolute / prismatic / spherical bodies between them.
"""

from __future__ import annotations

import warnings

import numpy as np
import sympy as sp

import loopdyn
from loopdyn.errors import InertiaWarning

BLOCKS = ("geared", "belt", "fourbar", "differential")


def _inertia(rng):
    m = rng.uniform(0.2, 2.0)
    c = rng.uniform(-0.1, 0.1, 3)
    A = rng.normal(size=(3, 3))
    return loopdyn.Inertia(m, c, A @ A.T * 0.01 + np.eye(3) * 0.01)


def _rotation(rng):
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    x, y, z, w = q
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def _axis(rng):
    a = rng.normal(size=3)
    return a / np.linalg.norm(a)


def random_cluster_model(
    seed: int,
    n_blocks: int = 4,
    floating: bool = False,
    blocks=BLOCKS,
    plain=("revolute", "prismatic", "spherical"),
) -> loopdyn.Model:
    """A random model; ``plain`` lists the joint kinds allowed for the ordinary bodies between blocks
    (the random draws are the same whatever it is, so seeds give the same geometry). Its random
    rotational inertias need not satisfy the triangle inequality: they are added as given, without
    the builder's InertiaWarning."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=InertiaWarning)
        return _random_cluster_model(seed, n_blocks, floating, blocks, plain)


def _random_cluster_model(seed, n_blocks, floating, blocks, plain) -> loopdyn.Model:
    rng = np.random.default_rng(seed)
    m = loopdyn.Model(f"clusters{seed}")
    parents = [0]
    if floating:
        m.add_body("base", 0, loopdyn.FreeFlyer(), inertia=_inertia(rng))
        parents = ["base"]
    k = 0

    def place():
        return (_rotation(rng), rng.uniform(-0.3, 0.3, 3))

    for _ in range(n_blocks):
        kind = blocks[rng.integers(len(blocks))]
        par = parents[rng.integers(len(parents))]
        k += 1
        if rng.uniform() < 0.5:  # an ordinary body in between
            options = [loopdyn.Revolute(_axis(rng)), loopdyn.Prismatic(_axis(rng)), loopdyn.Spherical()]
            allowed = [
                j
                for j, name in zip(options, ("revolute", "prismatic", "spherical"), strict=True)
                if name in plain
            ]
            joint = allowed[int(rng.integers(3)) % len(allowed)]
            m.add_body(f"plain{k}", par, joint, place(), _inertia(rng))
            par = f"plain{k}"
            parents.append(par)
        if kind == "geared":
            m.add_body(f"link{k}", par, loopdyn.Revolute(_axis(rng)), place(), _inertia(rng))
            m.add_body(
                f"rotor{k}", par, loopdyn.Revolute(_axis(rng)), place(), _inertia(rng), independent=False
            )
            m.add_coupling(f"gear{k}", f"link{k}", f"rotor{k}", rng.uniform(2, 20))
            parents.append(f"link{k}")
        elif kind == "belt":
            ax = _axis(rng)
            m.add_body(f"knee{k}", par, loopdyn.Revolute(ax), place(), _inertia(rng))
            m.add_body(
                f"knee_rotor{k}", par, loopdyn.Revolute(_axis(rng)), place(), _inertia(rng), independent=False
            )
            m.add_body(
                f"ankle_rotor{k}",
                par,
                loopdyn.Revolute(_axis(rng)),
                place(),
                _inertia(rng),
                independent=False,
            )
            m.add_body(
                f"ankle{k}", f"knee{k}", loopdyn.Revolute(ax), (np.eye(3), [0, 0, -0.3]), _inertia(rng)
            )
            m.add_coupling(f"knee_belt{k}", f"knee{k}", f"knee_rotor{k}", rng.uniform(2, 12))
            m.add_coupling(f"ankle_belt{k}", f"ankle{k}", f"ankle_rotor{k}", rng.uniform(2, 12))
            parents.append(f"ankle{k}")
        elif kind == "fourbar":
            # planar four-bar in the x-y plane of a random frame: crank (l1), coupler (l2), rocker (l3)
            R0, p0 = place()
            l1, l2, l3, ground = 0.3, 0.8, 0.6, 0.7
            z = (0.0, 0.0, 1.0)
            m.add_body(f"crank{k}", par, loopdyn.Revolute(z), (R0, p0), _inertia(rng))
            m.add_body(f"coupler{k}", f"crank{k}", loopdyn.Revolute(z), (np.eye(3), [l1, 0, 0]),
                       _inertia(rng), independent=False)  # fmt: skip
            m.add_body(f"rocker{k}", par, loopdyn.Revolute(z), (R0, p0 + R0 @ [ground, 0, 0]), _inertia(rng),
                       independent=False)  # fmt: skip
            m.add_loop(f"loop{k}", f"coupler{k}", f"rocker{k}", "revolute", (np.eye(3), [l2, 0, 0]),
                       (np.eye(3), [l3, 0, 0]), axis=z)  # fmt: skip
            parents.append(f"coupler{k}")
        else:  # a nonlinear differential: links follow the rotors through a smooth formula
            n_ratio = rng.uniform(3, 8)
            for name, indep in ((f"dr1_{k}", True), (f"dr2_{k}", True)):
                m.add_body(name, par, loopdyn.Revolute(_axis(rng)), place(), _inertia(rng), independent=indep)
            m.add_body(
                f"dl1_{k}", par, loopdyn.Revolute(_axis(rng)), place(), _inertia(rng), independent=False
            )
            m.add_body(
                f"dl2_{k}",
                f"dl1_{k}",
                loopdyn.Revolute(_axis(rng)),
                place(),
                _inertia(rng),
                independent=False,
            )

            def phi(q, n=n_ratio):
                r1, r2, l1_, l2_ = q
                y1, y2 = r1 / n, r2 / n
                return [
                    sp.sin(l1_) + 0.3 * l1_ - (y1 + y2) / 2,
                    l2_ + 0.2 * sp.sin(l2_ + l1_) - (y1 - y2) / 2,
                ]

            m.add_implicit_constraint(f"diff{k}", [f"dr1_{k}", f"dr2_{k}", f"dl1_{k}", f"dl2_{k}"], phi)
            parents.append(f"dl2_{k}")
    return m


def data_with_flag_cleared(model, column: int):
    """A Data of ``model`` with its own copy of the cluster table and the layout column ``column``
    (a specialised cluster kind such as ``C_STAR`` or ``C_ONEPORT``) cleared on every cluster: the
    generic cluster path, to compare the specialised one against. The model's table is untouched."""
    from loopdyn import jit
    from loopdyn.model import layout as L
    from loopdyn.model.data import lazy_code_needed

    d = model.create_data()
    d.ic[:, column] = 0  # the Data's own copy, packed in d.cluster_arrays[0]
    ints = d.cluster_arrays[0]
    assert np.shares_memory(d.ic, ints) and L.NC == d.ic.shape[1]
    # the generic steps the cleared table now takes: create_data loaded what the model's own table
    # needs, which for a model of stars alone is nothing (run alone, these tests found them missing)
    for group in lazy_code_needed(d.ic, d.table):
        jit.ensure_lazy(group)
    return d


def assert_close(x, y, what: str, rtol: float = 1e-12) -> None:
    """``max |x − y| ≤ rtol · max(1, max |y|)``, with a message naming the quantity."""
    scale = max(1.0, float(np.abs(y).max()))
    err = float(np.abs(np.asarray(x) - np.asarray(y)).max()) / scale
    assert err <= rtol, f"{what}: relative difference {err:.2e} > {rtol:.0e}"


def two_output_model(seed: int = 7) -> loopdyn.Model:
    """A floating model with a declared cluster whose two bodies hang from the two bodies (link and
    rotor) of a geared cluster: it leaves its parent cluster through two output bodies (the kernels
    that group a cluster's bodies through one output body must walk it body by body). Physical
    inertias (boxes)."""
    rng = np.random.default_rng(seed)
    m = loopdyn.Model("two_outputs")

    def place():
        return (_rotation(rng), rng.uniform(-0.3, 0.3, 3))

    def inertia():
        a, b, c = rng.uniform(0.05, 0.3, 3) ** 2
        mass = rng.uniform(0.5, 2.0)
        return loopdyn.Inertia(mass, rng.uniform(-0.1, 0.1, 3), np.diag([b + c, a + c, a + b]) * mass / 12)

    m.add_body("base", 0, loopdyn.FreeFlyer(), inertia=inertia())
    m.add_body("p1", "base", loopdyn.Revolute(_axis(rng)), place(), inertia())
    m.add_body("p2", "base", loopdyn.Revolute(_axis(rng)), place(), inertia(), independent=False)
    m.add_coupling("gear", "p1", "p2", 6.0)
    m.add_body("a", "p1", loopdyn.Revolute(_axis(rng)), place(), inertia())
    m.add_body("b", "p2", loopdyn.Revolute(_axis(rng)), place(), inertia())
    m.add_cluster(["a", "b"])
    m.add_body("c", "a", loopdyn.Revolute(_axis(rng)), place(), inertia())
    return m
