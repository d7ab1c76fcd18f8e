"""The approximate ("reflected inertia") and unconstrained models of a model with geared rotors.

Chignoli et al. 2024 §II-C (GRBDA's ``ReflectedInertiaTreeModel``, spec §2.7.2): the *independent
tree* keeps, cluster by cluster, only the links — rotors are dropped entirely, their mass is **not**
lumped into the links — and each kept link keeps its own joint, placement and inertia. The rotors'
inertia comes back, approximately, as reflected inertia on the kept joints:

* ``mode="diagonal"`` (the paper's "Approximate"): the armature of the kept joints is the diagonal
  of each explicit cluster's reflected inertia ``H̃_k = Σ_rotors S_rᵀ I_r S_r``. A rotor r with row
  ``g_r`` of the cluster's constant G (1 × m) turning about ``axis`` has ``S_r = s_axis g_r``, so it
  adds ``(axisᵀ Ī_r,o axis) g_rᵀ g_r`` (``Ī_r,o``: rotational inertia about the rotor frame's origin;
  for a prismatic rotor its mass): a geared joint of ratio N gets ``N² I_rot``.
* ``mode="none"`` (the paper's "Unconstrained"): no armature at all.

Which bodies are rotors:

* in an *explicit* cluster (couplings, linear constraints) the dependent bodies;
* in an *implicit* cluster the independent bodies that are leaves of the cluster hanging directly from
  the cluster's output body (Tello's differentials: the two rotors drive the two links through a
  nonlinear φ). The kept links then use their own spanning coordinates, and their reflected inertia is
  **zero** (spec §7 pitfall 28: "Approximate" ≡ "Unconstrained" for these clusters).

A rotor must be a leaf of the whole model attached directly to its cluster's output body, and an
implicit cluster must have as many rotors as independent coordinates (a four-bar has none): otherwise
:class:`~loopdyn.errors.UnsupportedFeatureError` names the cluster.

Coordinates. The tree's bodies are added cluster by cluster in the model's cluster order, so for
single-body clusters and explicit clusters the tree's coordinates are the model's, in the same order
(the independent coordinates of an explicit cluster, in the cluster's order). For an implicit cluster
the tree's coordinates are its links' spanning coordinates (the model's are the rotors'):
:meth:`ApproximateModel.state` maps the model's state onto the tree's, and the torque maps use
``τ_rotors = G_lᵀ τ_links`` (virtual power with massless rotors, ``G_l`` the links' rows of the
cluster's G at q), which is why they need ``q`` when the model has implicit clusters.
"""

from __future__ import annotations

import numpy as np

from ..constraint_rows import Constraint
from ..delassus_methods import delassus
from ..errors import InputError, ShapeError, UnsupportedFeatureError
from ..model.clusters import EXPLICIT
from ..model.joints import PRISMATIC
from ..model.model import Body, Frame, Model
from ..model.state import cluster_functions, to_spanning

__all__ = ["MODES", "ApproximateModel", "approximate_delassus", "approximate_model", "unconstrained_model"]

#: reflected-inertia modes: "diagonal" (the paper's Approximate), "none" (Unconstrained)
MODES = ("diagonal", "none")


class ApproximateModel:
    """The independent tree of a model with rotors, with reflected inertia as armature.

    Attributes
    ----------
    model:
        The original model (with constraints).
    tree:
        A plain loopdyn :class:`~loopdyn.Model` of the kept links, armature set; run any tree algorithm
        on it (``loopdyn.rnea(approx.tree, data, *approx.state(q, v, a))``).
    mode:
        ``"diagonal"`` or ``"none"``.
    rotors:
        Names of the dropped bodies.
    reflected_inertia:
        ``(nv, nv)`` block-diagonal matrix of the explicit clusters' full ``H̃_k`` in the tree's
        velocity order (zero blocks for implicit clusters), whatever the mode; the tree's armature is
        its diagonal (``"diagonal"``) or zero (``"none"``), plus the kept joints' own armature.
    """

    def __init__(self, model: Model, mode: str = "diagonal"):
        if mode not in MODES:
            raise InputError(f"approximate_model: mode must be one of {MODES}, got {mode!r}")
        self.model = model
        self.mode = mode
        self._version = model._version
        _build(self)

    # ------------------------------------------------------------------------------------------
    @property
    def nq(self) -> int:
        return self.tree.nq

    @property
    def nv(self) -> int:
        return self.tree.nv

    @property
    def has_implicit(self) -> bool:
        """True if some cluster is implicit (the tree's coordinates then differ from the model's)."""
        return bool(self._implicit)

    def _check_version(self) -> None:
        if self.model._version != self._version:
            raise InputError(
                f"model {self.model.name!r} changed after its approximate model was built; build it again"
            )

    def state(self, q, v=None, a=None):
        """The tree's ``(q, v)`` — or ``(q, v, a)`` when ``a`` is given — for the model's state (its
        cluster state: independent positions of explicit clusters, spanning positions of implicit
        ones; independent velocities and accelerations). ``v`` defaults to zero.

        Explicit and single-body clusters map one to one; an implicit cluster's links get their
        spanning position, velocity ``G_l ẏ`` and acceleration ``G_l ÿ + g_l``
        (:func:`loopdyn.to_spanning`)."""
        self._check_version()
        m = self.model
        q = _vector(q, m.nq, "q")
        v = np.zeros(m.nv) if v is None else _vector(v, m.nv, "v")
        a_ = None if a is None else _vector(a, m.nv, "a")
        qt = q[self._q_src]
        vt = np.empty(self.tree.nv)
        vt[self._v_dst] = v[self._v_src]
        at = None
        if a_ is not None:
            at = np.empty(self.tree.nv)
            at[self._v_dst] = a_[self._v_src]
        if self._implicit:
            if a_ is None:
                _, vs = to_spanning(m, q, v)
            else:
                _, vs, as_ = to_spanning(m, q, v, a_)
                at[self._span_dst] = as_[self._span_src]
            vt[self._span_dst] = vs[self._span_src]
        return (qt, vt) if at is None else (qt, vt, at)

    def torque_to_model(self, tau_tree, q=None) -> np.ndarray:
        """Generalized forces of the model (its independent coordinates) from the tree's joint
        torques: the same vector for explicit and single-body clusters (same coordinates, same
        order); ``G_lᵀ τ_links`` for an implicit cluster, which needs the model configuration
        ``q``."""
        self._check_version()
        tau = _vector(tau_tree, self.tree.nv, "tau_tree")
        out = np.empty(self.model.nv)
        out[self._v_src] = tau[self._v_dst]
        if self._implicit:
            for c, dst, Gl in self._implicit_G(q, "torque_to_model"):
                out[c.iv : c.iv + c.nv] = Gl.T @ tau[dst]
        return out

    def from_model_torque(self, tau, q=None) -> np.ndarray:
        """The tree's joint torques for the model's generalized forces (inverse of
        :meth:`torque_to_model`): the same vector for explicit and single-body clusters,
        ``G_l⁻ᵀ τ_y`` for an implicit cluster (needs ``q``)."""
        self._check_version()
        tau = _vector(tau, self.model.nv, "tau")
        out = np.empty(self.tree.nv)
        out[self._v_dst] = tau[self._v_src]
        if self._implicit:
            for c, dst, Gl in self._implicit_G(q, "from_model_torque"):
                out[dst] = np.linalg.solve(Gl.T, tau[c.iv : c.iv + c.nv])
        return out

    def _implicit_G(self, q, what: str):
        """(cluster, tree velocity indices of its links, G_l = links' rows of G at q) per implicit
        cluster."""
        if q is None:
            raise InputError(
                f"{what}: model {self.model.name!r} has implicit clusters, whose torque map depends on "
                "the configuration; pass q"
            )
        q = _vector(q, self.model.nq, "q")
        for c, links, dst in self._implicit:
            K = cluster_functions(c)[1](q[c.iq : c.iq + c.n])
            G = np.zeros((c.n, c.m))
            G[c.independent, np.arange(c.m)] = 1.0
            G[c.dependent] = -np.linalg.solve(K[:, c.dependent], K[:, c.independent])
            yield c, dst, G[links]

    def __repr__(self) -> str:
        return (
            f"<loopdyn ApproximateModel of {self.model.name!r} ({self.mode}): {self.tree.nbodies} bodies, "
            f"nv={self.nv}, {len(self.rotors)} rotors dropped>"
        )


def approximate_model(model: Model, mode: str = "diagonal") -> ApproximateModel:
    """The approximate model of ``model`` (module docstring): the independent tree with the rotors'
    reflected inertia as armature (``mode="diagonal"``, the paper's "Approximate") or without it
    (``mode="none"``, the paper's "Unconstrained")."""
    return ApproximateModel(model, mode)


def unconstrained_model(model: Model) -> ApproximateModel:
    """The independent tree of ``model`` without reflected inertia (the paper's "Unconstrained")."""
    return ApproximateModel(model, "none")


# ---------------------------------------------------------------------------------------------
def _vector(x, n: int, name: str) -> np.ndarray:
    try:
        arr = np.asarray(x, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be an array of real numbers: {exc}") from None
    if arr.shape != (n,):
        raise ShapeError(f"{name} must be a 1-D array of size {n}, got shape {arr.shape}")
    return arr


def _joint_inertia(body: Body) -> float:
    """sᵀ I s of a 1-DoF body about its joint (its frame origin): axisᵀ Ī_o axis, or the mass."""
    if body.joint.code == PRISMATIC:
        return float(body.inertia.mass)
    axis = body.joint.axis_array()
    xx, yy, zz, xy, xz, yz = body.inertia.compact()[4:]
    Io = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    return float(axis @ Io @ axis)


def _rotors(model: Model, c, children, output_body) -> list[int]:
    """Local indices of the rotors of a multi-body cluster (checked: leaves on the output body)."""
    names = [model.bodies[b - 1].name for b in c.bodies]
    if c.kind == EXPLICIT:
        rotors = list(c.dependent)
    else:
        in_cluster = set(c.bodies)
        rotors = [
            k
            for k in c.independent
            if model.bodies[c.bodies[k] - 1].parent not in in_cluster
            and not any(ch in in_cluster for ch in children[c.bodies[k]])
        ]
        if len(rotors) != c.m:
            raise UnsupportedFeatureError(
                f"approximate model: implicit cluster {names} is not a rotor differential (its independent "
                f"coordinates are not all leaf bodies hanging from the cluster's output body, found "
                f"{len(rotors)} such rotor(s) for {c.m} independent coordinate(s)); the reflected-inertia "
                "model handles geared rotors, belt transmissions and Tello-like differentials only"
            )
    for k in rotors:
        b = c.bodies[k]
        body = model.bodies[b - 1]
        if children[b]:
            kids = [model.bodies[ch - 1].name for ch in children[b]]
            raise UnsupportedFeatureError(
                f"approximate model: rotor {body.name!r} of cluster {names} carries bodies {kids}; the "
                "reflected-inertia model drops rotors, which must be leaves"
            )
        if body.parent != output_body[b]:
            raise UnsupportedFeatureError(
                f"approximate model: rotor {body.name!r} of cluster {names} hangs from "
                f"{model.body_names[body.parent]!r}, inside the cluster; its reflected inertia would depend "
                "on the configuration (rotors must hang from the cluster's output body "
                f"{model.body_names[output_body[b]]!r})"
            )
    return rotors


def _build(am: ApproximateModel) -> None:
    model = am.model
    ct = model.clusters()
    children: dict[int, list[int]] = {b: [] for b in range(model.nbodies + 1)}
    for i, b in enumerate(model.bodies, start=1):
        children[b.parent].append(i)

    kept: list[int] = []  # original body indices, in tree order
    v_src, v_dst = [], []  # tree velocity ← model velocity (single-body and explicit clusters)
    span_src, span_dst = [], []  # tree velocity ← spanning velocity (implicit clusters)
    q_src: list[int] = []  # tree position ← model position (all clusters)
    armature: dict[int, np.ndarray] = {}  # original body → reflected armature added
    blocks = []  # (tree velocity indices, H̃_k)
    implicit = []  # (cluster, local rows of its links, their tree velocity indices)
    rotors_all: list[str] = []
    nq_t = nv_t = 0
    for c in ct.clusters:
        if c.kind == 0:
            (b,) = c.bodies
            kept.append(b)
            q_src += range(c.iq, c.iq + c.nq)
            v_src += range(c.iv, c.iv + c.nv)
            v_dst += range(nv_t, nv_t + c.nv)
            nq_t += c.nq
            nv_t += c.nv
            continue
        rotors = _rotors(model, c, children, ct.output_body)
        links = [k for k in range(c.n) if k not in rotors]  # local indices, in body order
        if len(links) != c.m:  # explicit clusters: the independent bodies; implicit: n − m links
            names = [model.bodies[b - 1].name for b in c.bodies]
            raise UnsupportedFeatureError(
                f"approximate model: cluster {names} keeps {len(links)} link(s) for {c.m} independent "
                "coordinate(s); the independent tree needs one link per independent coordinate"
            )
        rotors_all += [model.bodies[c.bodies[k] - 1].name for k in rotors]
        kept += [c.bodies[k] for k in links]
        dst = list(range(nv_t, nv_t + len(links)))  # every cluster joint has 1 coordinate
        if c.kind == EXPLICIT:  # links = the independent coordinates, in order
            q_src += range(c.iq, c.iq + c.nq)
            v_src += range(c.iv, c.iv + c.nv)
            v_dst += dst
            H = np.zeros((c.m, c.m))
            for k in rotors:
                g = c.G_const[k]
                H += _joint_inertia(model.bodies[c.bodies[k] - 1]) * np.outer(g, g)
            blocks.append((dst, H))
            for j, k in enumerate(links):
                armature[c.bodies[k]] = H[j, j]
        else:  # IMPLICIT: the links' own spanning coordinates, zero reflected inertia
            q_src += [c.iq + k for k in links]
            span_src += [model.bodies[c.bodies[k] - 1].idx_v for k in links]
            span_dst += dst
            implicit.append((c, links, dst))
            blocks.append((dst, np.zeros((len(links), len(links)))))
        nq_t += len(links)
        nv_t += len(links)

    # the tree: kept bodies in cluster order (each cluster after its parent, so parents first)
    new_index = {0: 0}
    tree = Model(f"{model.name}-{'approximate' if am.mode == 'diagonal' else 'unconstrained'}", model.gravity)
    iq = iv = 0
    for t, b in enumerate(kept, start=1):
        src = model.bodies[b - 1]
        parent = src.parent
        if parent not in new_index:  # cannot happen: rotors are leaves (checked)
            raise UnsupportedFeatureError(f"approximate model: body {src.name!r} hangs from a dropped body")
        arm = src.armature_vector().copy()
        if am.mode == "diagonal" and b in armature:
            arm = arm + armature[b]
        body = Body(
            src.name,
            src.joint_name,
            new_index[parent],
            src.joint,
            src.rotation.copy(),
            src.translation.copy(),
            src.inertia,
            iq,
            iv,
            True,
            arm if np.any(arm) else None,
        )
        tree.bodies.append(body)
        new_index[b] = t
        iq += src.joint.nq
        iv += src.joint.nv
    tree._nq, tree._nv = iq, iv
    tree.universe_inertia = model.universe_inertia
    tree.frames = [
        Frame(f.name, new_index[f.body], f.rotation, f.translation, f.kind)
        for f in model.frames
        if f.body in new_index
    ]
    tree._touch()

    H = np.zeros((nv_t, nv_t))
    for dst, Hk in blocks:
        H[np.ix_(dst, dst)] = Hk
    am.tree = tree
    am.rotors = rotors_all
    am.reflected_inertia = H
    am._q_src = np.array(q_src, dtype=np.int64)
    am._v_src = np.array(v_src, dtype=np.int64)
    am._v_dst = np.array(v_dst, dtype=np.int64)
    am._span_src = np.array(span_src, dtype=np.int64)
    am._span_dst = np.array(span_dst, dtype=np.int64)
    am._implicit = implicit


_APPROX_CACHE: dict = {}


def approximate_delassus(model: Model, q, constraints, mode: str = "diagonal") -> np.ndarray:
    """The paper's "Approximate EFPA" (spec §2.7.2): EFPA on the reflected-inertia tree of ``model``
    (rotors dropped, their inertia as armature of the kept joints), at the tree's state for the
    model's configuration ``q``. Constraints name bodies or frames by name (a body index is taken as
    the model's); a constraint on a dropped rotor raises :class:`~loopdyn.errors.InputError`."""
    key = (id(model), mode)
    hit = _APPROX_CACHE.get(key)
    if hit is None or hit[0] is not model._key:
        am = ApproximateModel(model, mode)
        names = frozenset(b.name for b in am.tree.bodies) | frozenset(f.name for f in am.tree.frames)
        hit = (model._key, am, am.tree.create_data(), names)
        if len(_APPROX_CACHE) > 64:
            _APPROX_CACHE.clear()
        _APPROX_CACHE[key] = hit
    _, am, data, names = hit
    mapped = []
    for c in constraints:
        if not isinstance(c, Constraint):
            raise InputError(f"constraints must be loopdyn Constraint objects, got {type(c).__name__}")
        body = c.body
        if isinstance(body, int) and body > 0:
            body = model.bodies[body - 1].name
        if isinstance(body, str) and body not in names:
            raise InputError(
                f"constraint on {body!r}: the approximate model of {model.name!r} drops that body (a rotor)"
            )
        mapped.append(Constraint(body, c.kind, c.placement) if body is not c.body else c)
    qt, _ = am.state(q)
    return delassus(am.tree, data, qt, mapped, method="efpa")
