"""Oracles for models with loops built from Pinocchio alone on the spanning tree, never from
loopdyn's cluster code (``to_spanning``, the cluster tables' G, ``constraint_acceleration``).

The model's bodies (its spanning tree: every body with its own joint) become a Pinocchio model
(:func:`test_spatial_operators_loops.to_pinocchio`). The loops become velocity rows ``K v_span = 0``
and acceleration rows ``K a_span + γ = 0`` built here from what the model was given:

* couplings (``ratio · Σ_P q − Σ_Q q = 0``, P and Q the bodies from the nearest common ancestor to
  each side) and linear constraints: constant rows from their ratios / matrices, γ = 0;
* loop joints: the two frames' origins coincide (rows of the world-aligned frame Jacobians of the two
  sides, γ the difference of their classical accelerations), plus for a revolute loop joint the
  relative angular velocity along the two directions normal to the axis (fixed to the predecessor
  side), for a weld along all three;
* implicit constraints: K = ∂φ/∂q and γ = ∂(K q̇)/∂q · q̇ by sympy from the constraint's own φ.

Only the cluster table's layout is read from loopdyn (which spanning coordinates a cluster's entries
of q and v are): a wrong layout makes the comparisons fail, it cannot make them pass.

The spanning state comes from the model's ``q`` (explicit clusters completed by the constant rows,
implicit clusters store spanning positions) and ``v`` (the independent spanning velocities, the
others by solving ``K v_span = 0``). Constrained dynamics then is one solve on the null space N of K
(the loop rows may be redundant, as a planar four-bar's revolute loop joint is):
``a_span = a_p + N z`` with ``K a_p = −γ`` and::

    [[NᵀMN, −(J_c N)ᵀ], [J_c N, μ I]] [z; λ] = [Nᵀ(S_indᵀ τ − b − M a_p); k − γ_c − J_c a_p]

with M, b (with external forces) from Pinocchio's CRBA and RNEA, J_c and γ_c from its frame
Jacobians and accelerations in LOCAL (classical for ``"3d"``). ``ÿ = a_span[independent]``.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import sympy as sp
from test_spatial_operators_loops import to_pinocchio

from loopdyn.constraints.definitions import Coupling, ImplicitConstraint, LinearConstraint, LoopJoint
from loopdyn.model.clusters import EXPLICIT, IMPLICIT

RANK_TOL = 1e-10  # singular values of K below RANK_TOL · max are redundant rows

_LAMBDIFIED: dict = {}  # φ's sympy expressions → the lambdified K(q) and K̇q̇(q, q̇)


def _lineage(model, b: int) -> list[int]:
    out = []
    while b > 0:
        out.append(b)
        b = model.bodies[b - 1].parent
    return out


def _one_dof(model, b: int) -> tuple[int, int]:
    body = model.bodies[b - 1]
    assert body.joint.nq == 1 and body.joint.nv == 1, f"{body.name}: a constrained joint must have 1 DoF"
    return body.idx_q, body.idx_v


class SpanningPinocchio:
    """A model with loops as Pinocchio's spanning tree plus constraint rows (see the module)."""

    def __init__(self, model):
        self.model = model
        self.pm, self.qmap, self.vmap, self.jmap = to_pinocchio(model)
        self.nvs = model.spanning_nv
        self._constant_rows()
        self._implicit = [self._lambdify(c) for c in model.constraints if isinstance(c, ImplicitConstraint)]
        self._loops = [c for c in model.constraints if isinstance(c, LoopJoint)]
        kinds = {type(c) for c in model.constraints}
        assert kinds <= {Coupling, LinearConstraint, LoopJoint, ImplicitConstraint}, kinds
        for c in self._loops:
            assert c.kind in ("point", "spherical", "revolute", "weld"), f"{c.name}: no rows for {c.kind}"
        self._layout()

    # -- the constraints as written --------------------------------------------------------
    def coupling_G(self) -> np.ndarray:
        """v_span = G v of a model whose loops are couplings (constant K), from this oracle's rows as
        written: unit rows at the independent coordinates, G_dep = −K_dep⁻¹ K_ind."""
        model, K, ind = self.model, self.K_const, self.ind
        G = np.zeros((model.spanning_nv, model.nv))
        G[ind, np.arange(model.nv)] = 1.0
        dep = np.setdiff1d(np.arange(model.spanning_nv), ind)
        G[dep] = -np.linalg.solve(K[:, dep], K[:, ind])
        return G

    def _constant_rows(self):
        model, rows = self.model, []
        for c in model.constraints:
            if isinstance(c, Coupling):
                a, b = model.body_id(c.predecessor), model.body_id(c.successor)
                la, lb = _lineage(model, a), _lineage(model, b)
                common = set(la) & set(lb)
                row = np.zeros(self.nvs)
                for k in la:
                    if k not in common:
                        row[_one_dof(model, k)[1]] += c.ratio
                for k in lb:
                    if k not in common:
                        row[_one_dof(model, k)[1]] -= 1.0
                rows.append(row)
            elif isinstance(c, LinearConstraint):
                cols = [_one_dof(model, model.joint_id(j))[1] for j in c.joints]
                for r in np.atleast_2d(c.K):
                    row = np.zeros(self.nvs)
                    row[cols] = r
                    rows.append(row)
        self.K_const = np.array(rows).reshape(-1, self.nvs)

    def _lambdify(self, c):
        model = self.model
        bodies = [model.joint_id(j) for j in c.joints]
        qi = [_one_dof(model, b)[0] for b in bodies]
        vi = [_one_dof(model, b)[1] for b in bodies]
        q = list(sp.symbols(f"x0:{len(bodies)}", real=True))
        qd = list(sp.symbols(f"xd0:{len(bodies)}", real=True))
        phi = sp.Matrix(list(c.phi(q)))
        key = (len(q), tuple(phi))  # the same φ (both sides of a robot, a model again): lambdify once
        if key not in _LAMBDIFIED:
            K = phi.jacobian(q)
            kdot = (K * sp.Matrix(qd)).jacobian(q) * sp.Matrix(qd)  # K̇ q̇
            _LAMBDIFIED[key] = (sp.lambdify([q], K, "numpy"), sp.lambdify([q, qd], kdot, "numpy"))
        return (np.array(qi), np.array(vi), *_LAMBDIFIED[key])

    def _layout(self):
        """Spanning indices of the model's q and v entries (the cluster table's layout only)."""
        model = self.model
        self.ind = np.zeros(model.nv, dtype=int)  # spanning v index of each model v entry
        self.copy_q = []  # (model q slice start, spanning q indices) copied as they are
        self.explicit = []  # (model q start, spanning q of the independent, spanning v of all bodies)
        for c in model.clusters().clusters:
            bodies = [model.bodies[b - 1] for b in c.bodies]
            qcols = np.concatenate([np.arange(b.idx_q, b.idx_q + b.joint.nq) for b in bodies])
            vcols = np.concatenate([np.arange(b.idx_v, b.idx_v + b.joint.nv) for b in bodies])
            if c.kind == 0:
                self.ind[c.iv : c.iv + c.nv] = vcols
                self.copy_q.append((c.iq, qcols))
                continue
            indep = np.asarray(c.independent)
            self.ind[c.iv : c.iv + c.nv] = vcols[indep]
            if c.kind == IMPLICIT:
                self.copy_q.append((c.iq, qcols))
            else:
                assert c.kind == EXPLICIT
                self.explicit.append((c.iq, qcols, vcols, indep))

    # -- the spanning state ----------------------------------------------------------------
    def spanning_q(self, q) -> np.ndarray:
        qs = np.zeros(self.model.spanning_nq)
        for iq, qcols in self.copy_q:
            qs[qcols] = q[iq : iq + qcols.size]
        for iq, qcols, vcols, indep in self.explicit:
            K = self.K_const[:, vcols]
            K = K[np.abs(K).max(axis=1) > 0]  # this cluster's rows
            dep = np.setdiff1d(np.arange(vcols.size), indep)
            y = q[iq : iq + indep.size]
            x = np.zeros(vcols.size)
            x[indep] = y
            x[dep] = np.linalg.solve(K[:, dep], -K[:, indep] @ y)
            qs[qcols] = x  # 1-DoF joints: position and velocity columns correspond
        return qs

    def _frames(self, specs):
        """A copy of the Pinocchio model with one frame per (body, R, p) and its data."""
        pm = pin.Model(self.pm)
        ids = []
        for k, (b, R, p) in enumerate(specs):
            if b == 0:
                ids.append(None)
                continue
            j = int(self.jmap[b])
            X = pin.SE3(np.asarray(R, float), np.asarray(p, float))
            ids.append(pm.addFrame(pin.Frame(f"_oracle{k}", j, X, pin.OP_FRAME)))
        return pm, pm.createData(), ids

    def _span(self, M):
        """Pinocchio's v columns to the spanning tree's."""
        out = np.zeros(M.shape[:-1] + (self.nvs,))
        out[..., self.vmap] = M
        return out

    def _loop_specs(self):
        specs = []
        for c in self._loops:
            for body, (R, p) in ((c.predecessor, c.predecessor_placement),
                                 (c.successor, c.successor_placement)):  # fmt: skip
                specs.append((self.model.body_id(body), R, p))
        return specs

    def constraint_rows(self, pm, pd, ids, qs):
        """(K, γ) of all the loops at the state in ``pd`` (forward kinematics with a = 0, joint Jacobians
        and frame placements already computed) and the spanning velocity ``self._vs``."""
        rows, gam = [self.K_const], [np.zeros(len(self.K_const))]
        for k, c in enumerate(self._loops):
            fa, fb = ids[2 * k], ids[2 * k + 1]
            lwa = pin.LOCAL_WORLD_ALIGNED
            Ja = self._span(pin.getFrameJacobian(pm, pd, fa, lwa))
            Jb = self._span(pin.getFrameJacobian(pm, pd, fb, lwa))
            aa = pin.getFrameClassicalAcceleration(pm, pd, fa, lwa)
            ab = pin.getFrameClassicalAcceleration(pm, pd, fb, lwa)
            rows.append(Jb[:3] - Ja[:3])
            gam.append(ab.linear - aa.linear)
            if c.kind in ("revolute", "weld"):
                Ra = pd.oMf[fa].rotation
                wa = pin.getFrameVelocity(pm, pd, fa, lwa).angular
                wb = pin.getFrameVelocity(pm, pd, fb, lwa).angular
                if c.kind == "revolute":
                    u = np.asarray(c.axis, float)
                    normals = np.linalg.svd(u[None, :])[2][1:]  # two unit vectors ⟂ axis (frame A)
                else:
                    normals = np.eye(3)
                for n_a in normals:
                    n = Ra @ n_a
                    rows.append(n @ (Jb[3:] - Ja[3:]))
                    gam.append(np.cross(wa, n) @ (wb - wa) + n @ (ab.angular - aa.angular))
        for qi, vi, K_fn, kd_fn in self._implicit:
            Kc = np.atleast_2d(np.asarray(K_fn(qs[qi]), float))
            K = np.zeros((Kc.shape[0], self.nvs))
            K[:, vi] = Kc
            rows.append(K)
            gam.append(np.asarray(kd_fn(qs[qi], self._vs[vi]), float).reshape(-1))
        return np.vstack(rows), np.concatenate([np.atleast_1d(g) for g in gam])

    def spanning_v(self, qs, v) -> np.ndarray:
        """The spanning velocity: the independent entries from v, the rest from K v_span = 0."""
        pm, pd, ids = self._frames(self._loop_specs())
        qp, zero = qs[self.qmap], np.zeros(self.pm.nv)
        pin.forwardKinematics(pm, pd, qp, zero, zero)
        pin.computeJointJacobians(pm, pd, qp)
        pin.updateFramePlacements(pm, pd)
        self._vs = np.zeros(self.nvs)
        K, _ = self.constraint_rows(pm, pd, ids, qs)
        S = np.zeros((self.model.nv, self.nvs))
        S[np.arange(self.model.nv), self.ind] = 1.0
        A = np.vstack([K, S])
        rhs = np.concatenate([np.zeros(K.shape[0]), v])
        vs = np.linalg.lstsq(A, rhs, rcond=None)[0]
        assert np.abs(A @ vs - rhs).max() <= 1e-10 * max(1.0, np.abs(vs).max()), "inconsistent loop rows"
        return vs

    # -- dynamics --------------------------------------------------------------------------
    def contact_specs(self, cons):
        """(body, R, p) of each constraint frame: the named frame (a body's or the model's) composed
        with the constraint's placement."""
        model, out = self.model, []
        for c in cons:
            if c.body == "universe" or c.body == 0:
                out.append((0, np.eye(3), np.zeros(3)))
                continue
            if isinstance(c.body, int):
                b, Rf, pf = c.body, np.eye(3), np.zeros(3)
            elif c.body in [bb.name for bb in model.bodies]:
                b, Rf, pf = model.body_id(c.body), np.eye(3), np.zeros(3)
            else:
                f = next(f for f in model.frames if f.name == c.body)
                b, Rf, pf = int(f.body), np.asarray(f.rotation, float), np.asarray(f.translation, float)
            if c.placement is not None:
                R, p = np.reshape(c.placement[0], (3, 3)), np.asarray(c.placement[1])
                Rf, pf = Rf @ R, Rf @ p + pf
            out.append((b, Rf, pf))
        return out

    def forward_dynamics(self, q, v, tau, cons=(), desired=None, mu=0.0, f_ext=None, loop_bias=True):
        """(ÿ, λ) of the constrained dynamics (λ the force the contacts apply, loopdyn's sign);
        ``loop_bias=False`` drops the loops' γ (a wrong oracle, for negative controls)."""
        model = self.model
        q, v, tau = (np.asarray(x, float) for x in (q, v, tau))
        qs = self.spanning_q(q)
        vs = self.spanning_v(qs, v)
        self._vs = vs
        specs = self._loop_specs()
        nl = len(specs)
        pm, pd, ids = self._frames(specs + self.contact_specs(cons))
        qp, vp = qs[self.qmap], vs[self.vmap]
        zero = np.zeros(pm.nv)
        pin.forwardKinematics(pm, pd, qp, vp, zero)
        pin.computeJointJacobians(pm, pd, qp)
        pin.updateFramePlacements(pm, pd)
        K, gam = self.constraint_rows(pm, pd, ids, qs)
        gam = gam if loop_bias else 0.0 * gam
        # contact rows in LOCAL (classical acceleration for "3d")
        Jc, gc = [], []
        for c, fid in zip(cons, ids[nl:], strict=True):
            Ke = {"6d": np.eye(6), "3d": np.eye(6)[:3]}.get(c.kind) if isinstance(c.kind, str) else None
            Ke = np.array(c.kind, float) if Ke is None else Ke
            if fid is None:
                Jc.append(np.zeros((Ke.shape[0], self.nvs)))
                gc.append(np.zeros(Ke.shape[0]))
                continue
            J = self._span(pin.getFrameJacobian(pm, pd, fid, pin.LOCAL))
            acc = (pin.getFrameClassicalAcceleration if c.kind == "3d" else pin.getFrameAcceleration)(
                pm, pd, fid, pin.LOCAL
            ).vector
            Jc.append(Ke @ J)
            gc.append(Ke @ acc)
        m = sum(len(g) for g in gc)
        Jc = np.vstack(Jc) if Jc else np.zeros((0, self.nvs))
        gc = np.concatenate(gc) if gc else np.zeros(0)
        k = np.zeros(m) if desired is None else np.asarray(desired, float)
        # M, b with the external forces (body frames, [force; torque], loopdyn's rows 1…nbodies)
        Mp = pin.crba(pm, pd, qp)
        Mp = np.triu(Mp) + np.triu(Mp, 1).T
        fe = pin.StdVec_Force()
        for _ in range(pm.njoints):
            fe.append(pin.Force.Zero())
        if f_ext is not None:
            for i in range(1, model.nbodies + 1):
                fe[int(self.jmap[i])] = pin.Force(np.asarray(f_ext[i], float))
        bp = pin.rnea(pm, pd, qp, vp, zero, fe)
        M = np.zeros((self.nvs, self.nvs))
        M[np.ix_(self.vmap, self.vmap)] = Mp
        b = np.zeros(self.nvs)
        b[self.vmap] = bp
        S = np.zeros((model.nv, self.nvs))
        S[np.arange(model.nv), self.ind] = 1.0
        # the null space of the loop rows, and a particular solution of K a = −γ
        U, s, Vt = np.linalg.svd(K) if K.size else (None, np.zeros(0), np.eye(self.nvs))
        rank = int(np.sum(s > RANK_TOL * max(1.0, s.max(initial=0.0))))
        N = Vt[rank:].T
        assert N.shape[1] == model.nv, f"null space of the loop rows: {N.shape[1]} ≠ nv = {model.nv}"
        a_p = np.linalg.lstsq(K, -gam, rcond=None)[0] if K.size else np.zeros(self.nvs)
        assert np.abs(K @ a_p + gam).max() <= 1e-9 * max(1.0, np.abs(gam).max()), "inconsistent γ"
        JN = Jc @ N
        A = np.block([[N.T @ M @ N, -JN.T], [JN, mu * np.eye(m)]])
        rhs = np.concatenate([N.T @ (S.T @ tau - b - M @ a_p), k - gc - Jc @ a_p])
        x = np.linalg.solve(A, rhs)
        a = a_p + N @ x[: model.nv]
        self.last = dict(qs=qs, vs=vs, a_span=a, K=K, gamma=gam, Jc=Jc, gamma_c=gc, N=N, M=M)
        return a[self.ind], x[model.nv :]
