"""Per-model workspace: the compiled arrays the kernels read and write, and Pinocchio-style views.

A :class:`Data` is created by :meth:`loopdyn.Model.create_data`. It owns private copies of the
compiled model arrays (so kernels take two model arguments) and is valid for the model it came
from until that model is modified.
"""

from __future__ import annotations

import numpy as np

from . import layout as L


class Data:
    """Workspace of one model. After :func:`loopdyn.forward_kinematics` it exposes

    * ``oMi`` — (njoints, 4, 4) placements of the bodies in the world;
    * ``v``, ``a`` — (njoints, 6) spatial velocities / accelerations of the bodies in their own
      frames, Pinocchio layout ``[linear; angular]`` (accelerations exclude gravity).
    """

    __slots__ = (
        "model_name",
        "ib",
        "ws",
        "nq",
        "nv",
        "njoints",
        "no_forces",
        "empty",
        "frame_body",
        "frame_placement",
        "source_key",
        "ic",
        "cb",
        "wc",
        "code",
        "consts",
        "table",
        "outputs",
        "cluster_arrays",
    )

    def __init__(self, model):
        c = model.compiled()
        # the model's identity token when this Data was made: the public functions compare it with the
        # model's current token (a changed model needs a new Data)
        self.source_key = model._key
        self.model_name = model.name
        self.ib = np.array(c.ib, dtype=np.int64, order="C")
        self.ws = np.array(c.ws, dtype=np.float64, order="C")
        self.nq = model.nq
        self.nv = model.nv
        self.njoints = model.njoints
        self.no_forces = np.zeros((0, 6))  # 'no external forces' argument of the kernels
        self.empty = np.zeros(0)  # 'not given' vector argument of the kernels
        self.frame_body = np.array(c.frame_body)
        self.frame_placement = np.array(c.frame_placement)
        cc = c.clusters
        if cc is not None:  # a model with loops: the cluster arrays (private copies of the workspace)
            self.ic, self.cb, self.wc = cc.ic, cc.cb, np.array(cc.wc)
            self.code, self.consts, self.table, self.outputs = cc.code, cc.consts, cc.table, cc.outputs
            # the model arguments every cluster kernel takes first, in this order
            # the model arrays of the cluster kernels (the constraint programs are packed into cb and wc;
            # code, consts, table and outputs above are the same programs as separate arrays)
            self.cluster_arrays = (self.ib, self.ws, self.ic, self.cb, self.wc)
        else:
            self.ic = self.cb = self.wc = self.code = self.consts = self.table = self.outputs = None
            self.cluster_arrays = None
        # the universe: identity placement, at rest
        self.ws[0, L.W_OR : L.W_OR + 9] = np.eye(3).reshape(-1)
        self.ws[0, L.W_R : L.W_R + 9] = np.eye(3).reshape(-1)

    # ---- Pinocchio-style views (copies; valid after forward_kinematics) ----------------------
    @property
    def oMi(self) -> np.ndarray:
        out = np.zeros((self.njoints, 4, 4))
        out[:, 3, 3] = 1.0
        out[:, :3, :3] = self.ws[:, L.W_OR : L.W_OR + 9].reshape(-1, 3, 3)
        out[:, :3, 3] = self.ws[:, L.W_OP : L.W_OP + 3]
        return out

    @property
    def liMi(self) -> np.ndarray:
        """(njoints, 4, 4) placement of each body in its parent body."""
        out = np.zeros((self.njoints, 4, 4))
        out[:, 3, 3] = 1.0
        out[:, :3, :3] = self.ws[:, L.W_R : L.W_R + 9].reshape(-1, 3, 3)
        out[:, :3, 3] = self.ws[:, L.W_P : L.W_P + 3]
        return out

    @property
    def v(self) -> np.ndarray:
        w = self.ws[:, L.W_V : L.W_V + 6]
        return np.concatenate([w[:, 3:], w[:, :3]], axis=1)

    @property
    def a(self) -> np.ndarray:
        w = self.ws[:, L.W_A : L.W_A + 6]
        return np.concatenate([w[:, 3:], w[:, :3]], axis=1)

    def __repr__(self) -> str:
        return f"<loopdyn.Data for {self.model_name!r}: nq={self.nq}, nv={self.nv}>"
