"""States of models with loops: spanning tree, spanning coordinates, projection onto the constraints.

A model with constraints stores, cluster by cluster (see :mod:`loopdyn.model.clusters`), the
independent positions of explicit clusters and the spanning positions of implicit ones; its velocity
vector holds the independent velocities only. These functions translate between that state and the
spanning tree's, and keep implicit positions on the constraint manifold φ(q) = 0.
"""

from __future__ import annotations

import copy

import numpy as np

from ..algorithms import cluster_kinematics
from ..algorithms.call import CLUSTER_FIRST, CONFIGURATION, TANGENT, KernelArgs, run
from ..errors import ConfigurationError, InputError, ShapeError
from . import layout as L
from . import tree_configuration as configuration
from .clusters import EXPLICIT, IMPLICIT, SINGLE_BODY

PROJECTION_TOL = 1e-12


class ProjectionError(ConfigurationError):
    """Newton's method could not bring a cluster's positions onto its constraints."""


def spanning_tree(model):
    """The tree of all bodies with no constraints: same bodies, joints, frames and names, joint order
    and coordinates as Pinocchio would give for the same URDF."""
    tree = copy.copy(model)
    tree.bodies = [copy.copy(b) for b in model.bodies]
    tree.frames = list(model.frames)
    tree.constraints = []
    tree.declared_clusters = []
    tree.name = model.name
    tree._touch()
    return tree


def cluster_functions(c):
    """φ(q) and K(q) of an implicit cluster (kept rows), and its assembly-branch rows (zero on the
    branch the loop joints close on, see :func:`loopdyn.constraints.geometry.loop_joint_branch`), from
    the cluster's compiled constraint program (the kernels' tape: tens of µs per evaluation, where
    lambdified sympy took about a millisecond for a delta robot), built once and kept on the cluster."""
    fns = getattr(c, "_functions", None)
    if fns is None:
        from ..constraints.tape import compile_constraint

        # the same program as the kernels' (compile_clusters): φ's kept rows, then the branch rows
        program = compile_constraint(list(c.phi_exprs) + list(c.check_exprs), c.symbols, c.definitions)
        nphi = len(c.phi_exprs)

        def phi(q):
            return program.evaluate(q)[0][:nphi]

        def K(q):
            return program.evaluate(q)[1][:nphi]

        def branch(q):
            return program.evaluate(q)[0][nphi:]

        fns = (phi, K, branch)
        c._functions = fns
    return fns


def _vector(model, x, size: int, name: str) -> np.ndarray:
    try:
        arr = np.array(x, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InputError(f"{name} must be an array of real numbers: {exc}") from None
    if arr.shape != (size,):
        raise ShapeError(
            f"{name} must be a 1-D array of size {size} for model {model.name!r}, got shape {arr.shape}"
        )
    if not np.all(np.isfinite(arr)):
        raise InputError(f"{name} contains NaN or inf")
    return arr


def _body_names(model, c) -> list[str]:
    return [model.bodies[b - 1].name for b in c.bodies]


def constraint_residual(model, q) -> np.ndarray:
    """φ(q) of every implicit cluster (independent rows), stacked; empty if the model has none.
    Explicit clusters satisfy their constraints by construction."""
    q = _vector(model, q, model.nq, "q")
    out = []
    for c in model.clusters().clusters:
        if c.kind == IMPLICIT:
            out.append(cluster_functions(c)[0](q[c.iq : c.iq + c.n]))
    return np.concatenate(out) if out else np.zeros(0)


def _newton(c, qc: np.ndarray, tol: float, max_iter: int) -> tuple[np.ndarray, float]:
    """Move the dependent coordinates of an implicit cluster onto φ = 0 (independent ones fixed).
    A solution on another assembly branch than the loop joints' (a weld closed at a half-turn, a
    revolute loop with opposite axes: the loop is open there) is reported as a failure (res = inf)."""
    phi, K, branch = cluster_functions(c)
    q = qc.copy()
    res = np.inf
    for _ in range(max_iter):
        r = phi(q)
        res = float(np.max(np.abs(r))) if r.size else 0.0
        if not np.isfinite(res):
            break
        if res <= tol:
            off = branch(q)
            return (q, res) if not off.size or float(np.max(np.abs(off))) <= max(tol, 1e-9) else (q, np.inf)
        Kd = K(q)[:, c.dependent]
        try:
            step = np.linalg.solve(Kd, r)
        except np.linalg.LinAlgError:
            break
        q[c.dependent] -= step
    return q, res


def project_configuration(model, q, tol: float = PROJECTION_TOL, max_iter: int = 50) -> np.ndarray:
    """``q`` with the dependent coordinates of every implicit cluster moved (by Newton's method,
    independent ones fixed) so that ``|φ| ≤ tol``. Raises :class:`ProjectionError` naming the cluster
    if it does not converge (e.g. independent coordinates outside the mechanism's range)."""
    q = _vector(model, q, model.nq, "q")
    out = q.copy()
    for c in model.clusters().clusters:
        if c.kind != IMPLICIT:
            continue
        qc, res = _newton(c, q[c.iq : c.iq + c.n], tol, max_iter)
        if not res <= tol:
            dependent = [model.bodies[c.bodies[k] - 1].joint_name for k in c.dependent]
            raise ProjectionError(
                f"cluster {_body_names(model, c)}: could not satisfy its constraints (|φ| = {res:.3g} after "
                f"{max_iter} Newton steps on {dependent}; inf: Newton's method ended on another assembly "
                "branch, where a loop joint is open)"
            )
        out[c.iq : c.iq + c.n] = qc
    return out


def neutral(model) -> np.ndarray:
    """The neutral configuration: joints' neutral, zero independent coordinates, and for implicit
    clusters the reference configuration found when the model was built (it satisfies φ = 0)."""
    qs = configuration.neutral(spanning_tree(model))
    return _from_spanning(model, qs)


def _from_spanning(model, qs: np.ndarray) -> np.ndarray:
    """Cluster state from spanning positions: kept for single-body clusters, independent entries for
    explicit clusters, reference configuration for implicit ones."""
    q = np.empty(model.nq)
    for c in model.clusters().clusters:
        if c.kind == SINGLE_BODY:
            b = model.bodies[c.bodies[0] - 1]
            q[c.iq : c.iq + c.nq] = qs[b.idx_q : b.idx_q + c.nq]
        elif c.kind == EXPLICIT:
            q[c.iq : c.iq + c.nq] = [qs[model.bodies[c.bodies[k] - 1].idx_q] for k in c.independent]
        else:
            q[c.iq : c.iq + c.nq] = c.q_ref
    return q


def random_configuration(model, rng=None, attempts: int = 50) -> np.ndarray:
    """A random configuration satisfying every constraint: joints within their limits; for implicit
    clusters random independent coordinates, dependent ones solved by Newton's method from the
    reference configuration (resampled when the mechanism cannot reach them)."""
    gen = configuration.as_rng(rng)
    tree = spanning_tree(model)
    q = _from_spanning(model, configuration.random_configuration(tree, gen))
    for c in model.clusters().clusters:
        if c.kind != IMPLICIT:
            continue
        for _ in range(attempts):
            qs = configuration.random_configuration(tree, gen)
            start = c.q_ref.copy()
            for k in c.independent:
                start[k] = qs[model.bodies[c.bodies[k] - 1].idx_q]
            qc, res = _newton(c, start, PROJECTION_TOL, 50)
            if res <= PROJECTION_TOL:
                sv = np.linalg.svd(cluster_functions(c)[1](qc)[:, c.dependent], compute_uv=False)
                if sv.size == 0 or sv[-1] > 1e-6 * max(1.0, sv[0]):
                    q[c.iq : c.iq + c.n] = qc
                    break
        else:
            raise ProjectionError(
                f"cluster {_body_names(model, c)}: no random configuration found in {attempts} tries"
            )
    return q


def to_spanning(model, q, v=None, a=None):
    """Spanning-tree state of a cluster state: ``(q_span, v_span)``, or ``(q_span, v_span, a_span)``
    when accelerations ``a`` (independent) are given; ``v_span = G ẏ``, ``a_span = G ÿ + g``.
    The result uses the layout of :func:`spanning_tree` (Pinocchio's for a URDF). A tree is its own
    spanning tree: its state is returned (as copies)."""
    if not model.has_constraints:
        out = [_vector(model, q, model.nq, "q")]
        out.append(np.zeros(model.nv) if v is None else _vector(model, v, model.nv, "v"))
        if a is not None:
            out.append(_vector(model, a, model.nv, "a"))
        return tuple(x.copy() for x in out)
    data = model.create_data()
    v_ = np.zeros(model.nv) if v is None else v
    run(
        cluster_kinematics.c_fk_kernel,
        model,
        _FK_ARGS,
        (*data.cluster_arrays, q, v_, data.empty if a is None else a),
    )
    ic, wc = data.ic, data.wc
    qs = wc[ic[0, L.C0_QS] : ic[0, L.C0_QS] + model.spanning_nq].copy()
    vs = wc[ic[0, L.C0_QDS] : ic[0, L.C0_QDS] + model.spanning_nv].copy()
    if a is None:
        return qs, vs
    return qs, vs, wc[ic[0, L.C0_QDDS] : ic[0, L.C0_QDDS] + model.spanning_nv].copy()


_FK_ARGS = KernelArgs(CLUSTER_FIRST, ("q", CONFIGURATION), ("v", TANGENT), ("a", TANGENT))


def integrate(model, q, v, dt: float = 1.0) -> np.ndarray:
    """Move along independent velocity ``v`` for ``dt``: joints on their manifold, explicit clusters'
    independent coordinates linearly, implicit clusters by ``q + G(q) ẏ dt`` projected back onto φ = 0."""
    q = _vector(model, q, model.nq, "q")
    v = _vector(model, v, model.nv, "v")
    tree = spanning_tree(model)
    clusters = model.clusters().clusters
    # single-body clusters: integrate their joints on the spanning tree, all at once
    qs = configuration.neutral(tree)
    vs = np.zeros(tree.spanning_nv)
    for c in clusters:
        if c.kind == SINGLE_BODY:
            b = model.bodies[c.bodies[0] - 1]
            qs[b.idx_q : b.idx_q + c.nq] = q[c.iq : c.iq + c.nq]
            vs[b.idx_v : b.idx_v + c.nv] = v[c.iv : c.iv + c.nv]
    qs = configuration.integrate(tree, qs, vs, dt)
    out = q.copy()
    for c in clusters:
        if c.kind == SINGLE_BODY:
            b = model.bodies[c.bodies[0] - 1]
            out[c.iq : c.iq + c.nq] = qs[b.idx_q : b.idx_q + c.nq]
        elif c.kind == EXPLICIT:
            out[c.iq : c.iq + c.nq] = q[c.iq : c.iq + c.nq] + dt * v[c.iv : c.iv + c.nv]
        else:
            qc = q[c.iq : c.iq + c.n]
            K = cluster_functions(c)[1](qc)
            G = np.zeros((c.n, c.m))
            G[c.independent, np.arange(c.m)] = 1.0
            G[c.dependent] = -np.linalg.solve(K[:, c.dependent], K[:, c.independent])
            qn, res = _newton(c, qc + dt * (G @ v[c.iv : c.iv + c.nv]), PROJECTION_TOL, 50)
            if not res <= PROJECTION_TOL:
                raise ProjectionError(
                    f"cluster {_body_names(model, c)}: integration left the constraint manifold"
                )
            out[c.iq : c.iq + c.n] = qn
    return out


def difference(model, q0, q1) -> np.ndarray:
    """The independent velocity taking ``q0`` to ``q1`` in unit time: joints' differences on their
    manifolds, differences of the independent coordinates of clusters."""
    q0 = _vector(model, q0, model.nq, "q0")
    q1 = _vector(model, q1, model.nq, "q1")
    tree = spanning_tree(model)
    clusters = model.clusters().clusters
    qs0, qs1 = configuration.neutral(tree), configuration.neutral(tree)
    for c in clusters:
        if c.kind == SINGLE_BODY:
            b = model.bodies[c.bodies[0] - 1]
            qs0[b.idx_q : b.idx_q + c.nq] = q0[c.iq : c.iq + c.nq]
            qs1[b.idx_q : b.idx_q + c.nq] = q1[c.iq : c.iq + c.nq]
    vs = configuration.difference(tree, qs0, qs1)
    out = np.zeros(model.nv)
    for c in clusters:
        if c.kind == SINGLE_BODY:
            b = model.bodies[c.bodies[0] - 1]
            out[c.iv : c.iv + c.nv] = vs[b.idx_v : b.idx_v + c.nv]
        elif c.kind == EXPLICIT:
            out[c.iv : c.iv + c.nv] = q1[c.iq : c.iq + c.nq] - q0[c.iq : c.iq + c.nq]
        else:
            ind = np.asarray(c.independent)
            out[c.iv : c.iv + c.nv] = q1[c.iq + ind] - q0[c.iq + ind]
    return out
