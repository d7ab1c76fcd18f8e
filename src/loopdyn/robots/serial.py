"""Serial chains with geared and belt transmissions (GRBDA's benchmark chains, spec §5.5–5.6).

* :func:`gt_chain` — geared-transmission chain (``RevoluteChainWithRotor<N>``): cluster i =
  [link-i, rotor-i], both children of link-(i−1) (the world for i = 0), ``q_rotor = N_i q_link``.
* :func:`pbt_chain` — parallel-belt-transmission chain (``RevolutePairChainWithRotor<N>``): cluster i =
  [link-A-i, rotor-A-i, rotor-B-i, link-B-i]; link-A-i and both rotors hang from link-B-(i−1), link-B-i
  from link-A-i; ``q_rotorA = N1 b1 q_A`` and ``q_rotorB = N2 b21 (q_A + b22 q_B)``.

``seed`` an int: random parameters as GRBDA's ``SerialChain`` (random placements from rpy and
translation in U[−1, 1]³, axes among x/y/z, link mass U[0, 1], centre of mass U[−1, 1]³, rotational
inertia A Aᵀ with A ∈ U[−1, 1]³ˣ³, rotors scaled by 1e-4, integer ratios in U{1..5}).
``seed=None``: the uniform planar variant (z axes, links 1 m long along x, link mass 1, centre of
mass (0.5, 0, 0), I_zz 1, massless rotors with I_zz 1e-4, total ratios 6, gravity (9.81, 0, 0)).

Every link carries a contact frame (``cp-i`` for the GT chain, ``cp-A-i`` / ``cp-B-i`` for the PBT
chain): at a random offset for random chains, at the link's tip (1, 0, 0) for the uniform ones. The
last contact frame is the end effector.
"""

from __future__ import annotations

import numpy as np

from ..model import Model, Revolute
from ..spatial import Inertia

__all__ = ["gt_chain", "pbt_chain"]

_AXES = ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))
_UNIFORM_GRAVITY = (9.81, 0.0, 0.0)


def _rpy(r: float, p: float, y: float) -> np.ndarray:
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    Rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    Ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    Rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return Rz @ Ry @ Rx


class _Params:
    """Random (GRBDA ``SerialChain``) or uniform parameters of one chain."""

    def __init__(self, seed):
        self.rng = None if seed is None else np.random.default_rng(seed)

    @property
    def uniform(self) -> bool:
        return self.rng is None

    def placement(self, first: bool):
        if self.uniform:
            return (np.eye(3), np.zeros(3) if first else np.array([1.0, 0.0, 0.0]))
        return (_rpy(*self.rng.uniform(-1, 1, 3)), self.rng.uniform(-1, 1, 3))

    def axis(self):
        return _AXES[2] if self.uniform else _AXES[self.rng.integers(3)]

    def link_inertia(self) -> Inertia:
        if self.uniform:
            return Inertia(1.0, (0.5, 0.0, 0.0), np.diag([0.0, 0.0, 1.0]))
        m = self.rng.uniform(0, 1)
        c = self.rng.uniform(-1, 1, 3)
        A = self.rng.uniform(-1, 1, (3, 3))
        return Inertia(m, c, A @ A.T)

    def rotor_inertia(self) -> Inertia:
        if self.uniform:
            return Inertia(0.0, (0.0, 0.0, 0.0), np.diag([0.0, 0.0, 1e-4]))
        m = self.rng.uniform(0, 1)
        c = self.rng.uniform(-1, 1, 3)
        A = self.rng.uniform(-1, 1, (3, 3))
        return Inertia(1e-4 * m, 1e-4 * c, 1e-4 * (A @ A.T))

    def ratio(self) -> int:
        return int(self.rng.integers(1, 6))

    def contact(self):
        if self.uniform:
            return (np.eye(3), np.array([1.0, 0.0, 0.0]))
        return (np.eye(3), self.rng.uniform(-1, 1, 3))


def gt_chain(n: int, seed: int | None = None) -> Model:
    """A chain of ``n`` links, each driven through a gear by a rotor (``n`` clusters of 2 bodies,
    ``nv = n``). Bodies ``link-i``, ``rotor-i``; couplings ``gear-i``; frames ``cp-i``."""
    if n < 1:
        raise ValueError(f"a chain needs at least one link, got n={n}")
    P = _Params(seed)
    model = Model(f"gt_chain{n}" + ("" if P.uniform else f"_s{seed}"))
    if P.uniform:
        model.gravity = _UNIFORM_GRAVITY
    parent = 0
    for i in range(n):
        link, rotor = f"link-{i}", f"rotor-{i}"
        link_place, link_axis, link_I = P.placement(i == 0), P.axis(), P.link_inertia()
        if P.uniform:  # the rotor sits at its link's joint, on the same axis
            rotor_place, rotor_axis = link_place, link_axis
        else:
            rotor_place, rotor_axis = P.placement(i == 0), P.axis()
        rotor_I = P.rotor_inertia()
        ratio = 6 if P.uniform else P.ratio()
        # the paper's planar links and rotors (Izz only): no rigid body has them, added as given
        model.add_body(link, parent, Revolute(link_axis), link_place, link_I, inertia_check="accept")
        model.add_body(rotor, parent, Revolute(rotor_axis), rotor_place, rotor_I, independent=False,
                       inertia_check="accept")
        model.add_coupling(f"gear-{i}", link, rotor, ratio)  # q_rotor = ratio · q_link
        model.add_frame(f"cp-{i}", link, P.contact())
        parent = link
    return model


def pbt_chain(n: int, seed: int | None = None) -> Model:
    """A chain of ``n`` links (n even) in ``n/2`` parallel-belt clusters of 4 bodies (``nv = n``).
    Bodies ``link-A-i``, ``rotor-A-i``, ``rotor-B-i``, ``link-B-i``; constraints ``belt-A-i``,
    ``belt-B-i``; frames ``cp-A-i``, ``cp-B-i``.

    The distal rotor follows the sum of the proximal and distal joint angles: the coupling from
    link-B-i (predecessor) to rotor-B-i sums the coordinates on the path from their nearest common
    ancestor link-B-(i−1), i.e. ``ratio · (q_A + q_B) = q_rotorB``; a random chain whose second distal
    belt ratio b22 ≠ 1 uses the linear constraint ``N2 b21 q_A + N2 b21 b22 q_B − q_rotorB = 0``.
    """
    if n < 2 or n % 2:
        raise ValueError(f"a parallel-belt chain needs an even number of links >= 2, got n={n}")
    P = _Params(seed)
    model = Model(f"pbt_chain{n}" + ("" if P.uniform else f"_s{seed}"))
    if P.uniform:
        model.gravity = _UNIFORM_GRAVITY
    parent = 0
    for i in range(n // 2):
        la, lb, ra, rb = f"link-A-{i}", f"link-B-{i}", f"rotor-A-{i}", f"rotor-B-{i}"
        a_place, a_axis, a_I = P.placement(i == 0), P.axis(), P.link_inertia()
        if P.uniform:
            ra_place = rb_place = a_place
            ra_axis = rb_axis = a_axis
            ra_I, rb_I = P.rotor_inertia(), P.rotor_inertia()
            b_place, b_axis, b_I = P.placement(False), P.axis(), P.link_inertia()
            N1, N2, b1, b21, b22 = 2, 2, 3, 3, 1
        else:
            ra_place, ra_axis, ra_I = P.placement(False), P.axis(), P.rotor_inertia()
            rb_place, rb_axis, rb_I = P.placement(False), P.axis(), P.rotor_inertia()
            b_place, b_axis, b_I = P.placement(False), P.axis(), P.link_inertia()
            N1, N2, b1, b21, b22 = (P.ratio() for _ in range(5))
        # the paper's planar links and rotors (Izz only): no rigid body has them, added as given
        model.add_body(la, parent, Revolute(a_axis), a_place, a_I, inertia_check="accept")
        model.add_body(ra, parent, Revolute(ra_axis), ra_place, ra_I, independent=False,
                       inertia_check="accept")
        model.add_body(rb, parent, Revolute(rb_axis), rb_place, rb_I, independent=False,
                       inertia_check="accept")
        model.add_body(lb, la, Revolute(b_axis), b_place, b_I, inertia_check="accept")
        model.add_coupling(f"belt-A-{i}", la, ra, N1 * b1)  # q_rotorA = N1 b1 q_A
        if b22 == 1:  # q_rotorB = N2 b21 (q_A + q_B)
            model.add_coupling(f"belt-B-{i}", lb, rb, N2 * b21)
        else:
            model.add_linear_constraint(f"belt-B-{i}", (la, lb, rb), [[N2 * b21, N2 * b21 * b22, -1.0]])
        model.add_frame(f"cp-A-{i}", la, P.contact())
        model.add_frame(f"cp-B-{i}", lb, P.contact())
        parent = lb
    return model
