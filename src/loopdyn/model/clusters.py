"""The tree of clusters of a model with loops and couplings (constraint embedding).

Bodies tied together by constraints are grouped into *clusters* so that the clusters form a tree
(Chignoli et al. 2024 §IV; Jain's constraint embedding). For each constraint the cluster holds every
body of the loop except the nearest common ancestor (NCA); clusters sharing bodies merge, and
automatically found clusters grow until each has a single parent cluster (the aggregation
condition). A body tied by nothing is a cluster of its own, so a tree model is the special case of one
body per cluster.

Per cluster with constraints:

* the constraint rows, ``K(q) q̇ = 0`` and ``K q̈ = k``, with redundant rows removed (a planar
  linkage closed by a revolute joint gives 5 equations of rank 2);
* the partition of its n spanning coordinates into m independent ones y and n − m dependent ones,
  from the joints' ``independent`` flags (URDF+), or chosen automatically when no flag is given;
* *explicit* clusters (only linear constraints) store y and complete ``q = G y`` with a constant G;
  *implicit* clusters (loops, formulas) store their spanning positions, which must satisfy φ = 0,
  and recompute ``G = P[1; −K_d⁻¹K_i]``, ``g = P[0; K_d⁻¹k]`` at every state.

State layout: clusters in regular order (each cluster after its parent, ordered by their first body),
each contributing its positions (nq) and its independent velocities (nv).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..errors import ModelError, UnsupportedFeatureError
from .joints import FREEFLYER, PRISMATIC, REVOLUTE, REVOLUTE_UNBOUNDED, SPHERICAL
from .layout import EXPLICIT, IMPLICIT, SINGLE_BODY  # the cluster kinds

RANK_TOL = 1e-9


@dataclass
class Cluster:
    """One node of the cluster tree."""

    index: int
    bodies: list[int]  # in regular order
    parent: int  # parent cluster index, −1 for the world
    constraints: list = field(default_factory=list)
    kind: int = 0  # 0 = no constraint (a tree joint), EXPLICIT, IMPLICIT
    n: int = 0  # spanning coordinates (velocity)
    m: int = 0  # independent coordinates
    independent: list[int] = field(default_factory=list)  # local indices of the independent coordinates
    dependent: list[int] = field(default_factory=list)
    auto_independent: bool = False  # chosen automatically (no flags given)
    rows_total: int = 0  # constraint rows before removing redundant ones
    rows: list[int] = field(default_factory=list)  # the independent rows kept
    K_const: np.ndarray | None = None  # explicit clusters: constant K (kept rows)
    G_const: np.ndarray | None = None  # explicit clusters: constant G
    phi_exprs: list | None = None  # implicit clusters: sympy φ rows (kept rows)
    check_exprs: list = field(default_factory=list)  # implicit: rows that vanish on the assembly branch
    symbols: list | None = None  # implicit clusters: the sympy coordinate symbols
    # implicit clusters: ((t, formula), ...) the rows use (long loops, constraints.formulas), else ()
    definitions: tuple = ()
    q_ref: np.ndarray | None = None  # a configuration of the cluster that satisfies the constraints
    iq: int = 0  # offsets in the cluster state
    nq: int = 0
    iv: int = 0
    nv: int = 0

    @property
    def output_body(self) -> int:
        """Not defined per cluster: see ClusterTree.output_body per body."""
        raise AttributeError


@dataclass
class ClusterTree:
    """Clusters of a model, their order and state layout (see the module docstring)."""

    clusters: list[Cluster]
    body_cluster: np.ndarray  # (nbodies + 1,) cluster of each body, −1 for the universe
    output_body: np.ndarray  # (nbodies + 1,) Λ(i): nearest supporting body outside i's cluster
    nq: int
    nv: int
    velocity_names: list[str]
    position_names: list[str]

    def summary(self, model) -> str:
        lines = []
        for c in self.clusters:
            if c.kind == SINGLE_BODY:
                continue
            names = [model.bodies[b - 1].name for b in c.bodies]
            kind = "explicit" if c.kind == EXPLICIT else "implicit"
            ind = [model.bodies[c.bodies[k] - 1].joint_name for k in c.independent]
            extra = ""
            if c.rows_total != len(c.rows):
                extra += f"; {c.rows_total} constraint rows of rank {len(c.rows)} (redundant rows dropped)"
            if c.auto_independent:
                extra += "; independent coordinates chosen automatically"
            lines.append(
                f"  cluster {c.index}: {names} — {kind}, {c.n} spanning / {c.m} independent "
                f"({', '.join(ind)}); constraints {[k.name for k in c.constraints]}{extra}"
            )
        return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# tree helpers
def _ancestors(model, b: int) -> list[int]:
    """[b, parent(b), ..., 0]."""
    out = [b]
    while b != 0:
        b = model.bodies[b - 1].parent
        out.append(b)
    return out


def nearest_common_ancestor(model, bodies) -> int:
    bodies = list(bodies)
    common = set(_ancestors(model, bodies[0]))
    for b in bodies[1:]:
        common &= set(_ancestors(model, b))
    return max(common)  # regular numbering: the deepest common ancestor has the largest index


def _path(model, nca: int, b: int) -> list[int]:
    """Bodies from nca (exclusive) to b (inclusive)."""
    out = []
    while b != nca:
        out.append(b)
        b = model.bodies[b - 1].parent
    return out


def _constraint_bodies(model, con) -> tuple[set[int], int]:
    """The bodies a constraint ties together (a loop minus its NCA), and the NCA."""
    from ..constraints.definitions import Coupling, LoopJoint

    if isinstance(con, Coupling | LoopJoint):
        ends = [model.body_id(con.predecessor), model.body_id(con.successor)]
        nca = nearest_common_ancestor(model, ends)
    else:  # every named joint's body belongs to the cluster, even one that supports the others
        ends = [model.joint_id(j) for j in con.joints]
        nca = nearest_common_ancestor(model, ends)
        if nca in ends:
            nca = model.bodies[nca - 1].parent
    members: set[int] = set()
    for e in ends:
        members.update(_path(model, nca, e))
    if not members:
        raise ModelError(f"constraint {con.name!r} ties no moving body (its ends are the same body)")
    return members, nca


# ---------------------------------------------------------------------------------------------
def _group_bodies(model) -> tuple[list[list[int]], list[set[int]]]:
    """The bodies of each cluster (sorted; clusters ordered by their first body) and the bodies each
    constraint ties together, in the order of ``model.constraints``."""
    nb = model.nbodies
    parent = [0] + [b.parent for b in model.bodies]
    # union-find over bodies
    root = list(range(nb + 1))

    def find(x: int) -> int:
        while root[x] != x:
            root[x] = root[root[x]]
            x = root[x]
        return x

    def union(xs) -> None:
        xs = list(xs)
        for x in xs[1:]:
            a, b = find(xs[0]), find(x)
            if a != b:
                root[max(a, b)] = min(a, b)

    check_coupling_cycles(model)
    con_bodies = []
    for con in model.constraints:
        members, _ = _constraint_bodies(model, con)
        con_bodies.append(members)
        union(members)
    declared = []
    for names in model.declared_clusters:
        ids = {model.body_id(n) for n in names}
        declared.append(ids)
        union(ids)

    # aggregation condition: every cluster has a single parent cluster
    while True:
        groups: dict[int, set[int]] = {}
        for b in range(1, nb + 1):
            groups.setdefault(find(b), set()).add(b)
        changed = False
        for members in groups.values():
            outside = {parent[b] for b in members if parent[b] not in members}
            parent_clusters = {find(p) if p else 0 for p in outside}
            if len(parent_clusters) <= 1:
                continue
            if any(members == d for d in declared):
                names = sorted(model.bodies[b - 1].name for b in members)
                raise ModelError(
                    f"declared cluster {names} breaks the tree condition: its bodies hang from "
                    f"{sorted(model.body_names[p] for p in outside)}, which lie in different clusters"
                )
            nca = nearest_common_ancestor(model, outside)
            extra: set[int] = set()
            for p in outside:
                extra.update(_path(model, nca, p))
            union(list(members) + list(extra))
            changed = True
            break
        if not changed:
            break

    out: dict[int, list[int]] = {}
    for b in range(1, nb + 1):
        out.setdefault(find(b), []).append(b)
    return sorted((sorted(v) for v in out.values()), key=lambda bs: bs[0]), con_bodies


def bodies_in_clusters(model) -> tuple[set[int], set[int]]:
    """``(inside, named)``: the bodies of the clusters that hold more than one body or a constraint
    (the ones whose joints must be 1-DoF), and among all bodies those a coupling, linear or implicit
    constraint ties directly (by a path or by naming their joint), as opposed to loops only."""
    from ..constraints.definitions import LoopJoint

    groups, con_bodies = _group_bodies(model)
    tied = set().union(*con_bodies) if con_bodies else set()
    inside = {b for g in groups for b in g if len(g) > 1 or b in tied}
    named: set[int] = set()
    for con, members in zip(model.constraints, con_bodies, strict=True):
        if not isinstance(con, LoopJoint):
            named |= members
    return inside, named


def build_cluster_tree(model) -> ClusterTree:
    nb = model.nbodies
    parent = [0] + [b.parent for b in model.bodies]
    ordered, con_bodies = _group_bodies(model)
    body_cluster = np.full(nb + 1, -1, dtype=np.int64)
    for k, bs in enumerate(ordered):
        body_cluster[bs] = k
    clusters = []
    for k, bs in enumerate(ordered):
        outside = [parent[b] for b in bs if body_cluster[parent[b]] != k or parent[b] == 0]
        pc = int(body_cluster[outside[0]]) if outside and outside[0] != 0 else -1
        clusters.append(Cluster(k, bs, pc))
    output_body = np.zeros(nb + 1, dtype=np.int64)
    for b in range(1, nb + 1):
        a = parent[b]
        while a != 0 and body_cluster[a] == body_cluster[b]:
            a = parent[a]
        output_body[b] = a

    for con, members in zip(model.constraints, con_bodies, strict=True):
        clusters[body_cluster[min(members)]].constraints.append(con)
    for c in clusters:
        if len(c.bodies) > 1 or c.constraints:
            _setup_constrained(model, c)

    # state layout
    iq = iv = 0
    vnames, qnames = [], []
    for c in clusters:
        c.iq, c.iv = iq, iv
        if c.kind == SINGLE_BODY:
            (b,) = c.bodies
            j = model.bodies[b - 1]
            c.nq, c.nv = j.joint.nq, j.joint.nv
            c.n = c.m = j.joint.nv
            vnames += [j.joint_name] if c.nv == 1 else [f"{j.joint_name}[{k}]" for k in range(c.nv)]
            qnames += [j.joint_name] if c.nq == 1 else [f"{j.joint_name}[{k}]" for k in range(c.nq)]
        else:
            c.nv = c.m
            names = [model.bodies[b - 1].joint_name for b in c.bodies]
            vnames += [names[k] for k in c.independent]
            if c.kind == EXPLICIT:
                c.nq = c.m
                qnames += [names[k] for k in c.independent]
            else:
                c.nq = c.n
                qnames += names
        iq += c.nq
        iv += c.nv
    return ClusterTree(clusters, body_cluster, output_body, iq, iv, vnames, qnames)


def check_coupling_cycles(model) -> None:
    """Couplings form a forest over bodies: a coupling between two bodies already tied by a chain of
    couplings would fix their ratio twice (inconsistent, or redundant at best) — refused."""
    from ..constraints.definitions import Coupling

    root: dict[str, str] = {}
    chain: dict[str, list[str]] = {}

    def find(x: str) -> str:
        while root.get(x, x) != x:
            x = root[x]
        return x

    for con in model.constraints:
        if not isinstance(con, Coupling):
            continue
        a, b = find(con.predecessor), find(con.successor)
        if a == b:
            names = chain.get(a, []) + [con.name]
            raise ModelError(
                f"coupling {con.name!r} between {con.predecessor!r} and {con.successor!r} closes a cycle of "
                f"couplings ({names}): these bodies are already coupled"
            )
        root[b] = a
        chain[a] = chain.get(a, []) + chain.pop(b, []) + [con.name]


def _setup_constrained(model, c: Cluster) -> None:
    """Constraint rows, redundancy, independent coordinates and G of one multi-body cluster."""
    from ..constraints.definitions import Coupling, LinearConstraint

    names = [model.bodies[b - 1].name for b in c.bodies]
    for b in c.bodies:
        j = model.bodies[b - 1]
        if j.joint.code not in (REVOLUTE, PRISMATIC):
            raise UnsupportedFeatureError(_multi_dof_message(j, names, c.constraints))
    c.n = len(c.bodies)
    local = {b: k for k, b in enumerate(c.bodies)}
    if not c.constraints:  # a declared cluster without constraints: all coordinates independent
        c.kind = EXPLICIT
        c.K_const = np.zeros((0, c.n))
        c.rows_total = 0
        _choose_partition(model, c, np.zeros((0, c.n)), names)
        c.G_const = np.eye(c.n)
        c.q_ref = np.zeros(c.n)
        return
    linear = all(isinstance(k, Coupling | LinearConstraint) for k in c.constraints)
    if linear:
        rows = []
        for con in c.constraints:
            if isinstance(con, Coupling):
                nca = nearest_common_ancestor(
                    model, [model.body_id(con.predecessor), model.body_id(con.successor)]
                )
                row = np.zeros(c.n)
                for b in _path(model, nca, model.body_id(con.predecessor)):
                    row[local[b]] += con.ratio
                for b in _path(model, nca, model.body_id(con.successor)):
                    row[local[b]] -= 1.0
                rows.append(row)
            else:
                for r in con.K:
                    row = np.zeros(c.n)
                    for jn, val in zip(con.joints, r, strict=True):
                        row[local[model.joint_id(jn)]] += val
                    rows.append(row)
        K = np.array(rows)
        c.kind = EXPLICIT
        c.rows_total = K.shape[0]
        c.rows = _independent_rows(K)
        K = K[c.rows]
        c.K_const = K
        _choose_partition(model, c, K, names)
        c.G_const = _G_from_K(K, c)
        c.q_ref = np.zeros(c.n)
        return
    # implicit: symbolic φ of every constraint, stacked
    import sympy as sp

    from ..constraints.definitions import ImplicitConstraint, LoopJoint
    from ..constraints.formulas import Definitions
    from ..constraints.geometry import loop_joint_branch, loop_joint_phi
    from ..constraints.symbolic_cache import cached_arrays, key

    syms = list(sp.symbols(f"q0:{c.n}", real=True))
    by_body = {b: syms[local[b]] for b in c.bodies}
    exprs = []
    checks = []  # assembly-branch rows of loop joints (zero on the branch, checked, never kept)
    defs = Definitions()  # intermediate symbols of long loops (none for short ones)
    for con in c.constraints:
        if isinstance(con, LoopJoint):
            _, nca = _constraint_bodies(model, con)
            exprs += loop_joint_phi(model, con, nca, by_body, defs)
            checks += loop_joint_branch(model, con, nca, by_body, defs)
        elif isinstance(con, ImplicitConstraint):
            args = [by_body[model.joint_id(j)] for j in con.joints]
            try:
                out = con.phi(args)
            except Exception as exc:  # noqa: BLE001 - report any failure of the user's formula
                raise ModelError(
                    f"constraint {con.name!r}: calling phi with sympy symbols failed: {exc}"
                ) from exc
            out = list(out) if isinstance(out, list | tuple) or hasattr(out, "__iter__") else [out]
            exprs += [sp.sympify(e) for e in out]
        elif isinstance(con, Coupling):
            nca = nearest_common_ancestor(
                model, [model.body_id(con.predecessor), model.body_id(con.successor)]
            )
            e = sum(con.ratio * by_body[b] for b in _path(model, nca, model.body_id(con.predecessor)))
            e -= sum(by_body[b] for b in _path(model, nca, model.body_id(con.successor)))
            exprs.append(e)
        else:
            for r in con.K:
                exprs.append(
                    sum(val * by_body[model.joint_id(jn)] for jn, val in zip(con.joints, r, strict=True))
                )
    c.kind = IMPLICIT
    c.symbols = syms
    c.rows_total = len(exprs)
    # the configuration to assemble around: the model's reference configuration, else zero
    ref = model.reference_configuration
    center = np.zeros(c.n) if ref is None else np.array([ref[model.bodies[b - 1].idx_q] for b in c.bodies])
    flags = [model.bodies[b - 1].independent for b in c.bodies]
    definitions = defs.used_by(exprs + checks)
    # (the key of a cluster without definitions is the one it always had)
    parts = (exprs, checks, syms, center, flags) + ((list(definitions),) if definitions else ())
    found = cached_arrays(
        key("cluster-assembly", *parts),
        lambda: _assemble(c, names, exprs, checks, syms, center, flags, definitions),
    )
    q_ref, K, c.rows = found["q_ref"].copy(), found["K"], [int(r) for r in found["rows"]]
    c.phi_exprs = [exprs[r] for r in c.rows]
    c.check_exprs = checks
    c.definitions = defs.used_by(c.phi_exprs + checks)
    c.q_ref = q_ref
    _choose_partition(model, c, K[c.rows], names)


def _assemble(
    c: Cluster, names, exprs: list, checks: list, syms: list, center, flags, definitions=()
) -> dict:
    """The assembly configuration of an implicit cluster, K there and the kept rows (as arrays, for
    :mod:`~loopdyn.constraints.symbolic_cache`): candidates from Gauss–Newton on φ and K evaluated by
    the constraint program of all the rows and the branch rows (the kernels' tape compiler; the same
    program as the kernels' when every row is kept)."""
    from ..constraints.tape import compile_constraint

    program = compile_constraint(list(exprs) + list(checks), syms, definitions)
    nphi = len(exprs)

    last: dict = {}  # Gauss–Newton asks for φ and then K at the same q: one run of the tape gives both

    def run(q):
        q = np.ascontiguousarray(q, dtype=np.float64)
        key = q.tobytes()
        if key not in last:
            last.clear()
            last[key] = program.evaluate(q)
        return last[key]

    def phi_f(q):
        return run(q)[0][:nphi]

    def K_f(q):
        return run(q)[1][:nphi]

    def branch_f(q):
        return run(q)[0][nphi:]

    branch_f = branch_f if checks else None
    # rows and partition at a generic configuration: the rank drops at singular ones (a four-bar's
    # collinear toggle). Among several solutions keep those of maximal rank that are well conditioned,
    # and of these the one nearest zero (the mechanism's assembly branch for most models).
    cands = []
    for q in _consistent_configurations(c, names, phi_f, K_f, center=center):
        K = np.atleast_2d(np.array(K_f(q), dtype=float))
        rows = _independent_rows(K)
        sv = np.linalg.svd(K[rows], compute_uv=False) if rows else np.ones(1)
        cands.append((len(rows), float(sv[-1] / max(sv[0], 1e-300)), q, K, rows))
    if branch_f is not None:  # solutions where a loop joint closes on its assembly branch only
        on_branch = [cd for cd in cands if np.max(np.abs(np.atleast_1d(branch_f(cd[2])))) <= 1e-6]
        cands = on_branch or cands
    rank = max(cd[0] for cd in cands)
    cands = [cd for cd in cands if cd[0] == rank]
    good = [cd for cd in cands if cd[1] > 1e-3] or sorted(cands, key=lambda cd: -cd[1])[:1]
    best = min(good, key=lambda cd: float(np.linalg.norm(cd[2] - center)))
    # independent joints chosen by the user (flags) whose K_d is singular at that configuration only
    # (a crank and a rod collinear at zero): build around the nearest configuration where it is regular
    dep = [k for k, f in enumerate(flags) if not f]
    if not all(flags) and len(dep) == rank and _kd_singular(best, dep):
        regular = [cd for cd in good if _kd_conditioning(cd, dep) > 1e-3]
        if regular:
            best = min(regular, key=lambda cd: float(np.linalg.norm(cd[2] - center)))
    _, _, q_ref, K, rows = best
    return {"q_ref": np.asarray(q_ref, float), "K": np.asarray(K, float), "rows": np.array(rows, np.int64)}


def _multi_dof_message(j, names, constraints) -> str:
    """Why a joint other than a 1-DoF revolute / prismatic one cannot sit inside a cluster, and what
    to write instead.

    Clusters are built on 1-DoF joints: their constraint tapes differentiate one angle or displacement
    per body, the independent coordinates are a subset of those, and C-ABA's per-cluster motion
    subspace has one column per body. A multi-DoF joint inside a loop is therefore written as a chain
    of 1-DoF sub-hinges separated by massless bodies, which Jain's partitioning (Lemma 2.1, spec
    §1.3–1.4) shows to be exact (M(k′) = 0): a ball joint as three revolutes (a gimbal, which
    :meth:`Model.embed_ball_joints <loopdyn.model.model.Model.embed_ball_joints>` does by itself), a
    universal joint as two. This also keeps every coordinate of a cluster unconstrained, so no
    quaternion unit-norm condition has to be carried inside a cluster."""
    cons = [k.name for k in constraints]
    extra = ", free_flyer_rotation='euler'" if j.joint.code == FREEFLYER else ""
    where = f"joint {j.joint_name!r} ({j.joint.kind}) is inside cluster {names} (constraints {cons})"
    if j.joint.code == REVOLUTE_UNBOUNDED:
        return (
            f"{where}: only revolute and prismatic joints can be part of a loop or a coupling (it needs "
            "an angle coordinate); use Revolute for this joint (no limits) instead of RevoluteUnbounded"
        )
    if j.joint.code == SPHERICAL:
        if j.armature is not None and np.any(j.armature):
            return (
                f"{where}: only revolute and prismatic joints can be part of a loop or a coupling, and "
                f"this ball joint's armature {j.armature.tolist()} (on the angular velocity) has no "
                "equivalent on the angle rates of the gimbal it would become: remove the armature"
            )
        return (
            f"{where}: only revolute and prismatic joints can be part of a loop or a coupling (clusters "
            "hold 1-DoF joints). A ball joint inside loops becomes a Gimbal (model.embed_ball_joints(), "
            "called when a loop is added outside a model.deferred_ball_joints() block); not one that a "
            "coupling, a linear or an implicit constraint ties directly, as these act on 1-DoF "
            "coordinates: tie the neighbouring revolute or prismatic joints instead"
        )
    return (
        f"{where}: only revolute and prismatic joints can be part of a loop or a coupling (clusters hold "
        "1-DoF joints). Write it as a chain of 1-DoF sub-hinges separated by "
        "massless bodies (exact, Jain's partitioning Lemma 2.1): a free joint as three prismatic joints "
        "and a gimbal (choose the axis order so the first and last axes stay apart in the operating "
        "range) — or build the model without its "
        f"constraints, apply loopdyn.partition(model, [{j.joint_name!r}]{extra}) to it, and add the "
        "constraints to the partitioned model"
    )


def _kd_conditioning(candidate, dep: list[int]) -> float:
    """σ_min / σ_max of K_d (the kept rows, the dependent columns) at a candidate configuration."""
    _, _, _, K, rows = candidate
    s = np.linalg.svd(K[rows][:, dep], compute_uv=False)
    return float(s[-1] / max(s[0], 1e-300)) if s.size else 1.0


def _kd_singular(candidate, dep: list[int]) -> bool:
    """K_d singular at a candidate configuration (the test :func:`_choose_partition` refuses on)."""
    _, _, _, K, rows = candidate
    s = np.linalg.svd(K[rows][:, dep], compute_uv=False)
    return bool(s.size and s[-1] < RANK_TOL * max(1.0, s[0]))


def _independent_rows(K: np.ndarray) -> list[int]:
    """Indices of a maximal set of linearly independent rows of K (column-pivoted QR of Kᵀ)."""
    if K.shape[0] == 0:
        return []
    from scipy.linalg import qr

    _, Rq, piv = qr(K.T, pivoting=True, mode="economic")
    d = np.abs(np.diag(Rq))
    scale = max(1.0, float(d[0])) if d.size else 1.0
    rank = int(np.sum(d > RANK_TOL * scale))
    return sorted(int(p) for p in piv[:rank])


def _choose_partition(model, c: Cluster, K: np.ndarray, names) -> None:
    """Independent / dependent coordinates from the joints' flags, or automatically."""
    rank = K.shape[0]
    c.m = c.n - rank
    flags = [model.bodies[b - 1].independent for b in c.bodies]
    if all(flags) and rank > 0:
        # no choice made: take as dependent the columns giving the best-conditioned K_d
        from scipy.linalg import qr

        _, _, piv = qr(K, pivoting=True, mode="economic")
        dep = sorted(int(p) for p in piv[:rank])
        c.auto_independent = True
    else:
        dep = [k for k, f in enumerate(flags) if not f]
        if len(dep) != rank:
            ind_names = [model.bodies[c.bodies[k] - 1].joint_name for k, f in enumerate(flags) if f]
            raise ModelError(
                f"cluster {names}: the constraints leave {c.m} independent coordinate(s) but "
                f"{c.n - len(dep)} joint(s) are marked independent ({ind_names})"
            )
    c.dependent = dep
    c.independent = [k for k in range(c.n) if k not in dep]
    if rank:
        Kd = K[:, dep]
        s = np.linalg.svd(Kd, compute_uv=False)
        if s[-1] < RANK_TOL * max(1.0, s[0]):
            dep_names = [model.bodies[c.bodies[k] - 1].joint_name for k in dep]
            raise ModelError(
                f"cluster {names}: with {dep_names} dependent, K_d is singular at the reference "
                "configuration (and at every other assembly configuration found) — choose other "
                "independent joints"
            )


def _G_from_K(K: np.ndarray, c: Cluster) -> np.ndarray:
    """G = P[1; −K_d⁻¹K_i] for the partition of c."""
    G = np.zeros((c.n, c.m))
    G[c.independent, np.arange(c.m)] = 1.0
    if K.shape[0]:
        G[c.dependent, :] = -np.linalg.solve(K[:, c.dependent], K[:, c.independent])
    return G


def _newton(phi_f, K_f, q: np.ndarray, iters: int = 100) -> np.ndarray | None:
    """Gauss–Newton (least squares, so redundant rows are fine) from q; None if it fails."""
    for _ in range(iters):
        r = np.atleast_1d(np.array(phi_f(q), dtype=float))
        if not np.all(np.isfinite(r)):
            return None
        if np.max(np.abs(r)) < 1e-13:
            return q
        J = np.atleast_2d(np.array(K_f(q), dtype=float))
        step, *_ = np.linalg.lstsq(J, -r, rcond=None)
        q = q + step
    r = np.atleast_1d(np.array(phi_f(q), dtype=float))
    return q if np.all(np.isfinite(r)) and np.max(np.abs(r)) < 1e-11 else None


def _consistent_configurations(
    c: Cluster, names, phi_f, K_f, wanted: int = 6, attempts: int = 60, center=None
) -> list:
    """Several configurations with φ = 0: Gauss–Newton from ``center`` (default zero), from points near
    it and from random points."""
    rng = np.random.default_rng(0)
    found = []
    center = np.zeros(c.n) if center is None else center
    for attempt in range(attempts):
        # the reference (zero by default), then small perturbations of it (the assembly configuration),
        # then anywhere
        scale = 0.0 if attempt == 0 else (0.3 if attempt < 6 else np.pi)
        start = center + rng.uniform(-scale, scale, c.n)
        q = _newton(phi_f, K_f, start)
        if q is not None:
            found.append(q)
            if len(found) >= wanted:
                break
    if not found:
        raise ModelError(
            f"cluster {names}: no configuration satisfying its constraints was found (is the loop closable?)"
        )
    return found


# ---------------------------------------------------------------------------------------------
# compiled form
@dataclass(frozen=True)
class CompiledClusters:
    """The flat arrays the cluster kernels read (layout: :mod:`loopdyn.model.layout`)."""

    ic: np.ndarray  # int64 (ncl + 1, NC)
    cb: np.ndarray  # int64: bodies, independent / dependent local indices, kept tape rows
    wc: np.ndarray  # float64 template: constant G, workspace
    code: np.ndarray  # constraint programs (loopdyn.constraints.tape.pack_programs)
    consts: np.ndarray
    table: np.ndarray
    outputs: np.ndarray


def _body_armature(model, b: int) -> np.ndarray:
    return np.asarray(model.bodies[b - 1].armature_vector(), float)


def _joint_subspace(model, b: int) -> np.ndarray:
    """The joint's motion subspace S (6 × nv, Featherstone [ω; v], body frame), row-major."""
    from .joints import FREEFLYER, REVOLUTE_UNBOUNDED, SPHERICAL

    j = model.bodies[b - 1].joint
    S = np.zeros((6, j.nv))
    if j.code in (REVOLUTE, REVOLUTE_UNBOUNDED):
        S[:3, 0] = j.axis_array()
    elif j.code == PRISMATIC:
        S[3:, 0] = j.axis_array()
    elif j.code == SPHERICAL:
        S[:3, :3] = np.eye(3)
    elif j.code == FREEFLYER:  # v = [linear; angular]
        S[3:, :3] = np.eye(3)
        S[:3, 3:] = np.eye(3)
    return S


def _g_rows(tree: ClusterTree, ic: np.ndarray, ib: np.ndarray, wc: np.ndarray, nvs: int) -> list[int]:
    """The sparse rows of the whole model's G (spanning velocity r → independent velocities): NVS + 1
    pointers relative to the start, then (independent index, wc offset of the G entry) per non-zero;
    an implicit cluster's dependent rows are kept whole (they change with q), its independent rows
    are the unit rows the cluster kernels write (``P[1; −K_d⁻¹K_i]``): their one entry only. See
    ``layout.C0_GMAP``."""
    from . import layout as L

    rows: list[list[tuple[int, int]]] = [[] for _ in range(nvs)]
    for c in tree.clusters:
        k = c.index + 1
        G, m = int(ic[k, L.C_G]), int(ic[k, L.C_M])
        if c.kind == SINGLE_BODY:
            b = c.bodies[0]
            for j in range(c.nv):
                rows[int(ib[b, L.I_IV]) + j].append((c.iv + j, G + j * m + j))
            continue
        for j, b in enumerate(c.bodies):  # 1-DoF joints: body j's coordinate is the cluster's j-th
            for l in range(m):
                if c.kind == IMPLICIT:
                    keep = j in c.dependent or c.independent[l] == j
                else:
                    keep = wc[G + j * m + l] != 0.0
                if keep:
                    rows[int(ib[b, L.I_IV])].append((c.iv + l, G + j * m + l))
    return _csr(rows)


def _g_columns(g_rows: list[int], nvs: int, nv: int) -> list[int]:
    """The sparse columns of G (independent velocity x → spanning velocities), from the rows
    :func:`_g_rows` made: NV + 1 pointers relative to the start, then (spanning index r, wc offset of
    G[r, x]) per non-zero, r increasing. See ``layout.C0_GCOLS``."""
    cols: list[list[tuple[int, int]]] = [[] for _ in range(nv)]
    for r in range(nvs):
        for e in range(g_rows[r], g_rows[r + 1], 2):
            cols[g_rows[e]].append((r, g_rows[e + 1]))
    return _csr(cols)


def _csr(lines: list[list[tuple[int, int]]]) -> list[int]:
    """len(lines) + 1 pointers (relative to the start: the first is len(lines) + 1), then the pairs of
    every line in order, flattened."""
    ptr = [len(lines) + 1]
    for line in lines:
        ptr.append(ptr[-1] + 2 * len(line))
    return ptr + [x for line in lines for e in line for x in e]


def _is_star(model, c) -> int:
    """1 if explicit cluster ``c`` is a star (layout column ``C_STAR``): one independent coordinate,
    every body hinged on the same body outside the cluster, and at most one body with children — so
    no child cluster can couple two of its bodies and its articulated inertia stays block-diagonal."""
    if c.m != 1 or list(c.bodies) != sorted(c.bodies):  # C-CRBA takes its column at the first body
        return 0
    parents = {model.bodies[b - 1].parent for b in c.bodies}
    if len(parents) != 1 or any(p in c.bodies for p in parents):
        return 0
    with_children = sum(1 for b in c.bodies if any(o.parent == b for o in model.bodies))
    return int(with_children <= 1)


def _one_output(tree: ClusterTree, c) -> bool:
    """Whether every body of cluster ``c`` has the same output body (one port into its parent)."""
    return len({tree.output_body[b] for b in c.bodies}) == 1


def _is_one_port(tree: ClusterTree, c) -> int:
    """1 if cluster ``c`` is one-port (layout column ``C_ONEPORT``): several bodies, all with the same
    output body, and every child cluster one-port too — no child couples two of its bodies, so its
    articulated inertia stays block-diagonal. Stars have their own, narrower flag."""
    if c.kind == SINGLE_BODY or len(c.bodies) < 2 or not _one_output(tree, c):
        return 0
    return int(all(_one_output(tree, o) for o in tree.clusters if o.parent == c.index))


def _rotor_inertia(ws: np.ndarray, i: int) -> np.ndarray | None:
    """Body i's 6 × 6 inertia in its parent's frame, ᶦXᵀ I ᶦX, if it does not depend on the angle of
    its revolute joint — the inertia is axisymmetric about the joint axis through the body origin
    (h ∥ axis and the rotational inertia commutes with the axis' cross product) — else None."""
    from . import layout as L

    axis = ws[i, L.W_AXIS : L.W_AXIS + 3]
    mass, h0, h1, h2, xx, yy, zz, xy, xz, yz = ws[i, L.W_INER : L.W_INER + 10]
    h = np.array([h0, h1, h2])
    Ib = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    K = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
    scale = max(float(np.abs(Ib).max()), float(np.abs(h).max()), mass, 1e-300)
    if np.abs(K @ h).max() > 1e-14 * scale or np.abs(K @ Ib - Ib @ K).max() > 1e-14 * scale:
        return None
    hx = np.array([[0.0, -h2, h1], [h2, 0.0, -h0], [-h1, h0, 0.0]])
    I6 = np.block([[Ib, hx], [hx.T, mass * np.eye(3)]])  # [ω; v] order
    R = ws[i, L.W_JR : L.W_JR + 9].reshape(3, 3)  # the placement at zero angle
    p = ws[i, L.W_JP : L.W_JP + 3]
    px = np.array([[0.0, -p[2], p[1]], [p[2], 0.0, -p[0]], [-p[1], p[0], 0.0]])
    X = np.block([[R.T, np.zeros((3, 3))], [-R.T @ px, R.T]])  # parent motion → body motion
    return X.T @ I6 @ X


def compile_clusters(model, tree: ClusterTree, ib: np.ndarray, ws: np.ndarray) -> CompiledClusters:
    """Fill the cluster columns of ``ib`` (and the rotors' constant inertias in ``ws``) and build the
    cluster arrays."""
    from ..constraints.tape import compile_constraint, pack_programs
    from . import layout as L

    ncl = len(tree.clusters)
    ic = np.zeros((ncl + 1, L.NC), dtype=np.int64)
    cb: list[int] = []
    wc_size = 0
    programs = []
    G_init = []
    arm_init = []
    const_init = []

    def alloc(n: int) -> int:
        nonlocal wc_size
        off = wc_size
        wc_size += int(n)
        return off

    for c in tree.clusters:
        r = c.index + 1
        row = ic[r]
        row[L.C_FIRST] = len(cb)
        cb.extend(c.bodies)
        row[L.C_NB] = len(c.bodies)
        row[L.C_KIND] = c.kind
        row[L.C_N] = c.n
        row[L.C_M] = c.m
        row[L.C_IQ], row[L.C_NQ], row[L.C_IV], row[L.C_NV] = c.iq, c.nq, c.iv, c.nv
        row[L.C_PARENT] = c.parent + 1
        row[L.C_PROG] = -1
        for k, b in enumerate(c.bodies):
            ib[b, L.I_CLUSTER] = r
            ib[b, L.I_OUT] = tree.output_body[b]
            p = model.bodies[b - 1].parent
            ib[b, L.I_CPAR] = p if p != 0 and tree.body_cluster[p] == c.index else 0
            ib[b, L.I_SUB] = k
            leaf = all(other.parent != b for other in model.bodies)
            if leaf and ib[b, L.I_CPAR] == 0 and ib[b, L.I_JTYPE] in (REVOLUTE, REVOLUTE_UNBOUNDED):
                C = _rotor_inertia(ws, b)
                if C is not None:
                    ib[b, L.I_ROTOR] = 1
                    ws[b, L.W_IPAR : L.W_IPAR + 36] = C.reshape(-1)
        # articulated-body workspace (C-ABA), every cluster
        nb6, mm = 6 * len(c.bodies), c.m if c.kind else c.nv
        row[L.C_IA] = alloc(nb6 * nb6)
        row[L.C_PA] = alloc(nb6)
        row[L.C_U] = alloc(nb6 * max(mm, 1))
        row[L.C_DINV] = alloc(max(mm, 1) ** 2)
        row[L.C_UU] = alloc(max(mm, 1))
        row[L.C_DSCR] = alloc(max(mm, 1) ** 2 + 72)
        # block mask (nb²) + per output-body groups: sub index (nb) and V = Σ Xᵀ U (nb × 6 × m)
        row[L.C_MASK] = alloc(len(c.bodies) ** 2 + len(c.bodies) + len(c.bodies) * 6 * max(mm, 1))
        row[L.C_ARM] = alloc(max(c.n, 1))
        arm_init.append((row[L.C_ARM], np.concatenate([_body_armature(model, b) for b in c.bodies])))
        if c.kind == SINGLE_BODY:
            # a tree joint: constant G = 1, g = 0 and 𝖲 = the joint's S (body frame), so that every
            # cluster reads G, g and 𝖲 from the same tables
            n1 = c.nv
            row[L.C_N], row[L.C_M] = n1, n1
            row[L.C_G] = alloc(n1 * n1)
            row[L.C_GB] = alloc(n1)
            row[L.C_S] = alloc(6 * max(n1, 1))
            const_init.append((row[L.C_G], np.eye(n1).reshape(-1)))
            const_init.append((row[L.C_S], _joint_subspace(model, c.bodies[0]).reshape(-1)))
            continue
        nrow = c.n - c.m
        row[L.C_NROW] = nrow
        ncheck = len(c.check_exprs) if c.kind == IMPLICIT else 0
        row[L.C_NCHECK] = ncheck
        nt = nrow + ncheck  # rows of the constraint program: the kept ones, then the branch checks
        row[L.C_IND] = len(cb)
        cb.extend(c.independent)
        row[L.C_DEP] = len(cb)
        cb.extend(c.dependent)
        row[L.C_ROWS] = len(cb)
        cb.extend(range(nrow))
        row[L.C_G] = alloc(c.n * c.m)
        row[L.C_GB] = alloc(c.n)
        row[L.C_S] = alloc(6 * len(c.bodies) * max(c.m, 1))
        # scratch: q, q̇ (n each), φ (nt), K (nt × n), k (nt), LU of K_d (nrow²), rhs (nrow × (m + 1))
        row[L.C_SCR] = alloc(2 * c.n + nt + nt * c.n + nt + nrow * nrow + nrow * (c.m + 1))
        if c.kind == EXPLICIT:
            G_init.append((row[L.C_G], c.G_const))
            row[L.C_STAR] = _is_star(model, c)
        else:
            row[L.C_PROG] = len(programs)
            programs.append(compile_constraint(c.phi_exprs + c.check_exprs, c.symbols, c.definitions))
        if not row[L.C_STAR]:
            row[L.C_ONEPORT] = _is_one_port(tree, c)
    nqs, nvs = model.spanning_nq, model.spanning_nv
    ic[0, L.C0_NCL] = ncl
    ic[0, L.C0_NQS] = nqs
    ic[0, L.C0_NVS] = nvs
    ic[0, L.C0_QS] = alloc(nqs)
    ic[0, L.C0_QDS] = alloc(nvs)
    ic[0, L.C0_QDDS] = alloc(nvs)
    packed = pack_programs(programs)
    ic[0, L.C0_REGS] = alloc(max(int(packed.max_reg), 1))
    # the programs themselves, packed into cb and wc (which Data packs with ib and ws into two buffers)
    ic[0, L.C0_TCONST], ic[0, L.C0_NTCONST] = alloc(packed.consts.size), packed.consts.size
    for at, count, arr in (
        (L.C0_TCODE, L.C0_NTCODE, packed.code),
        (L.C0_TTABLE, L.C0_NTPROG, packed.table),
        (L.C0_TOUT, L.C0_NTOUT, packed.outputs),
    ):
        ic[0, at], ic[0, count] = len(cb), arr.shape[0]
        cb.extend(int(x) for x in arr.reshape(-1))
    ic[0, L.C0_TAUS] = alloc(nvs)  # spanning joint forces
    ic[0, L.C0_PHITOL] = alloc(1)
    wc = np.zeros(wc_size)
    for off, G in G_init + const_init + arm_init:
        wc[off : off + G.size] = G.reshape(-1)
    ic[0, L.C0_GMAP] = len(cb)
    g_rows = _g_rows(tree, ic, ib, wc, nvs)
    cb.extend(g_rows)
    ic[0, L.C0_GCOLS] = len(cb)
    cb.extend(_g_columns(g_rows, nvs, tree.nv))
    ic[0, L.C0_SUMM] = int(ic[1 : ncl + 1, L.C_M].sum())
    ic[0, L.C0_SUMN2] = int((ic[1 : ncl + 1, L.C_N] ** 2).sum())
    dcol = [-1] * nvs
    for c in tree.clusters:
        if c.kind == IMPLICIT:
            for j in c.dependent:
                dcol[int(ib[c.bodies[j], L.I_IV])] = ic[0, L.C0_NDEP]
                ic[0, L.C0_NDEP] += 1
    ic[0, L.C0_DCOL] = len(cb)
    cb.extend(dcol)
    wc[ic[0, L.C0_PHITOL]] = model.constraint_tolerance
    wc[ic[0, L.C0_TCONST] : ic[0, L.C0_TCONST] + packed.consts.size] = packed.consts
    return CompiledClusters(
        ic, np.array(cb, dtype=np.int64), wc, packed.code, packed.consts, packed.table, packed.outputs
    )
