"""Per-model workspace: the compiled arrays the kernels read and write, and Pinocchio-style views.

A :class:`Data` is created by :meth:`loopdyn.Model.create_data`. It owns private copies of the
compiled model arrays (so kernels take two model arguments) and is valid for the model it came
from until that model is modified.
"""

from __future__ import annotations

import copy

import numpy as np

from .. import jit
from ..constraints import native
from ..constraints.tape import T_NATIVE_KDOT, T_NATIVE_PHI_K, T_NATIVE_TAYLOR, T_TAYLOR_M
from . import layout as L


class Data:
    """Workspace of one model. After :func:`loopdyn.forward_kinematics` it exposes

    * ``oMi`` — (njoints, 4, 4) placements of the bodies in the world;
    * ``v``, ``a`` — (njoints, 6) spatial velocities / accelerations of the bodies in their own
      frames, Pinocchio layout ``[linear; angular]`` (accelerations exclude gravity).

    **Threads.** A Data is one thread's workspace. The compiled kernels release the GIL, so threads
    that each have their own Data of one shared model run in parallel, with results identical to a
    serial run (``tests/test_threads.py``; ``model.create_data()`` or ``copy.deepcopy(data)`` for
    each thread). One Data shared between threads is not silently corrupted: a kernel marks its Data
    in use with an atomic flag for the time it runs, and a call from another thread meanwhile raises
    :class:`~loopdyn.errors.DataInUseError` and writes nothing (a few ns per call). The state that
    functions read back from a Data (``oMi``, ``frame_placement`` after ``forward_kinematics``, ...)
    is the last call's, whichever thread made it.
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
        "kernel_arrays",
        "taylor_pending",
        "rates_pending",
    )

    def __init__(self, model, native_programs: bool | None = None):
        c = model.compiled()
        # the model's identity token when this Data was made: the public functions compare it with the
        # model's current token (a changed model needs a new Data)
        self.source_key = model._key
        self.model_name = model.name
        self.ib = np.array(c.ib, dtype=np.int64, order="C")  # private copies (packed below with loops)
        self.ws = np.array(c.ws, dtype=np.float64, order="C")
        self.nq = model.nq
        self.nv = model.nv
        self.njoints = model.njoints
        self.no_forces = np.zeros((0, 6))  # 'no external forces' argument of the kernels
        self.empty = np.zeros(0)  # 'not given' vector argument of the kernels
        self.frame_body = np.array(c.frame_body)
        self.frame_placement = np.array(c.frame_placement)
        cc = c.clusters
        if cc is not None:  # a model with loops: ib, ic, cb and ws, wc packed into two buffers
            self.code, self.consts, self.outputs = cc.code, cc.consts, cc.outputs
            self.table = np.array(cc.table)  # this Data's own: it holds the native programs' addresses
            # (the constraint programs are packed into cb and wc; code, consts, table and outputs are
            # the same programs as separate arrays, for the baselines)
            self.ib, self.ws, self.ic, self.cb, self.wc, ints, floats = _pack(c.ib, c.ws, cc.ic, cc.cb, cc.wc)
            # the model arguments every cluster kernel takes first (layout ``PACK_*``)
            self.cluster_arrays = (ints, floats)
            _ensure_lazy_passes(self.ic, self.table)
            if native_programs is None:
                native_programs = native.enabled()
            self._set_programs(native.native_addresses(cc.code, cc.table, cc.outputs)
                               if native_programs else None)  # fmt: skip
        else:
            self.ic = self.cb = self.wc = self.code = self.consts = self.table = self.outputs = None
            self.cluster_arrays = None
        self._reset_taylor_programs()
        self._set_kernel_arrays()
        # the universe: identity placement, at rest
        self.ws[0, L.W_OR : L.W_OR + 9] = np.eye(3).reshape(-1)
        self.ws[0, L.W_R : L.W_R + 9] = np.eye(3).reshape(-1)

    def _set_kernel_arrays(self) -> None:
        """The two model arguments that the dynamics kernels of this model take first: ``(ib, ws)`` for
        a tree, the packed ``(ints, floats)`` for a model with loops."""
        self.kernel_arrays = (self.ib, self.ws) if self.cluster_arrays is None else self.cluster_arrays

    def _set_programs(self, addresses) -> None:
        """Write the native programs' addresses (or zeros: interpret the tapes) into both copies of the
        program table: the one packed into cb, which the kernels read, and ``table``."""
        for t in self._tables():
            native.fill_addresses(t, addresses)

    def _tables(self) -> tuple[np.ndarray, np.ndarray]:
        """Both copies of the program table: the one packed into cb, which the kernels read, and
        ``table``."""
        o, n = self.ic[0, L.C0_TTABLE], self.ic[0, L.C0_NTPROG]
        return self.cb[o : o + n * self.table.shape[1]].reshape(self.table.shape), self.table

    def _reset_taylor_programs(self) -> None:
        """No native Taylor or rate functions yet (:func:`load_deferred_passes` loads them at the
        first call that runs them; the kernels interpret the programs meanwhile)."""
        self.taylor_pending = self.rates_pending = self.table is not None and self.table.shape[0] > 0
        if self.taylor_pending:
            self._set_table(T_NATIVE_TAYLOR, 0)
            self._set_table(T_TAYLOR_M, 0)
            self._set_table(T_NATIVE_KDOT, 0)

    def _set_table(self, column: int, values) -> None:
        """One column of both copies of the program table (:meth:`_tables`)."""
        for t in self._tables():
            t[:, column] = values

    def load_taylor_programs(self) -> None:
        """Compile (or load) the native Taylor functions of this model's implicit loops
        (:func:`loopdyn.constraints.native.taylor_addresses`) when the Data runs its programs natively;
        called once, by the first call that runs the derivatives' loop terms."""
        self.taylor_pending = False
        ms = np.zeros(self.table.shape[0], dtype=np.int64)  # per program: its clusters' m (−1: several)
        for k in range(1, int(self.ic[0, L.C0_NCL]) + 1):
            if self.ic[k, L.C_KIND] == L.IMPLICIT:
                p, m = int(self.ic[k, L.C_PROG]), int(self.ic[k, L.C_M])
                ms[p] = m if ms[p] in (0, m) else -1
        addresses = None
        if self.native_programs:
            addresses = native.taylor_addresses(self.code, self.table, self.outputs, ms)
        self._set_table(T_NATIVE_TAYLOR, 0 if addresses is None else addresses)
        self._set_table(T_TAYLOR_M, -1 if addresses is None else ms)

    def load_rate_programs(self) -> None:
        """Compile (or load) the native rate functions (K̇, for Ġ) of this model's implicit loops, as
        :meth:`load_taylor_programs`; called once, by the first Coriolis matrix or Ṁ."""
        self.rates_pending = False
        addresses = None
        if self.native_programs:
            ms = np.zeros(self.table.shape[0], dtype=np.int64)
            addresses = native.taylor_addresses(self.code, self.table, self.outputs, ms, second=False)
        self._set_table(T_NATIVE_KDOT, 0 if addresses is None else addresses)

    @property
    def native_programs(self) -> bool:
        """Whether the kernels run this model's constraint programs as native functions
        (:mod:`loopdyn.constraints.native`) rather than interpreting their tapes."""
        return self.table is not None and self.table.shape[0] > 0 and bool(self.table[0, T_NATIVE_PHI_K])

    def __getstate__(self):
        return {name: getattr(self, name) for name in self.__slots__}

    def __deepcopy__(self, memo):
        """A second workspace of the same model (e.g. for another thread): arrays copied, valid for
        the model as long as this one is."""
        state = {name: copy.deepcopy(getattr(self, name), memo) for name in self.__slots__}
        state["source_key"] = self.source_key  # the same model's identity token, not a copy of it
        other = Data.__new__(Data)
        other.__setstate__(state)
        return other

    def __setstate__(self, state):
        """Copies and unpickled Data: the named arrays become views of the two buffers again (NumPy
        copies a view as an array of its own), and the native programs' addresses are this process's.
        An unpickled Data is not valid for any model (the public functions raise DataMismatchError):
        only :func:`copy.deepcopy` keeps the model's identity."""
        for name, value in state.items():
            setattr(self, name, value)
        self.ib[0, L.I0_BUSY] = 0  # a copy taken while a kernel ran on the original is not in use
        if self.cluster_arrays is None:
            self._set_kernel_arrays()
            return
        ints, floats = self.cluster_arrays
        (self.ib, self.ws, self.ic, self.cb, self.wc) = _views(ints, floats, self.ib.shape, self.ws.shape,
                                                              self.ic.shape)  # fmt: skip
        self.ib[0, L.I0_BUSY] = 0
        self._set_kernel_arrays()
        _ensure_lazy_passes(self.ic, self.table)
        if self.native_programs:
            self._set_programs(native.native_addresses(self.code, self.table, self.outputs))
        self._reset_taylor_programs()  # this process's addresses: loaded again at the first call

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


def lazy_code_needed(ic: np.ndarray, table: np.ndarray) -> list[str]:
    """The groups of lazy passes (:func:`loopdyn.jit.lazy`) that a Data of a model with these cluster
    tables loads: ``"implicit_loops"`` (the loops' coordinates), ``"one_port_clusters"`` and
    ``"one_port_pairs"`` (C-ABA's step for one-port clusters of several bodies, m ≠ 2 and m = 2) and
    ``"generic_clusters"`` (C-ABA's generic step to the parent cluster: clusters whose bodies hand
    their parent several ports, and single bodies below the root). Stars and a root body need none.
    What only some functions run is loaded when they need it (:func:`load_deferred_passes`)."""
    needed = ["implicit_loops"] if table.shape[0] > 0 else []
    for k in range(1, int(ic[0, L.C0_NCL]) + 1):
        if ic[k, L.C_STAR] != 0:
            continue
        if ic[k, L.C_ONEPORT] != 0:
            needed.append("one_port_pairs" if ic[k, L.C_M] == 2 else "one_port_clusters")
        elif ic[k, L.C_PARENT] != 0:
            needed.append("generic_clusters")
    return sorted(set(needed))


def _ensure_lazy_passes(ic: np.ndarray, table: np.ndarray) -> None:
    """Compile (or load from the cache) the lazy passes this model's kernels call."""
    for group in lazy_code_needed(ic, table):
        jit.ensure_lazy(group)


def load_deferred_passes(data: Data, group: str) -> bool:
    """Compile (or load) the lazy passes of ``group`` (``"loop_derivatives"``: the derivatives' loop
    terms; ``"loop_rates"``: Ġ for the Coriolis matrix and Ṁ) if ``data``'s model has implicit loops,
    the only models that run them; True if one of them was not loaded yet (the call that needed it
    can run again). Unlike the groups of :func:`lazy_code_needed`, these wait for the first call that
    needs them: a Data of the four-bar made for C-ABA alone compiles 5 CPU-s less. With
    ``"loop_derivatives"`` (``"loop_rates"``) the Data's native Taylor (rate) functions are loaded
    too, once per Data (:meth:`Data.load_taylor_programs`, :meth:`Data.load_rate_programs`)."""
    if data.table is None or data.table.shape[0] == 0:
        return False
    loaded = jit.ensure_lazy(group) > 0
    if group == "loop_derivatives" and data.taylor_pending:  # and the Taylor terms' native functions
        data.load_taylor_programs()
        loaded = True
    elif group == "loop_rates" and data.rates_pending:  # and the native K̇ functions
        data.load_rate_programs()
        loaded = True
    return loaded


def _pack(ib, ws, ic, cb, wc) -> tuple:
    """Copies of the five model arrays of a model with loops as views of two new flat buffers (layout
    ``PACK_*``): ``(ib, ws, ic, cb, wc, ints, floats)``."""
    ints = np.empty(L.PACK_HEADER + ib.size + ic.size + cb.size, dtype=np.int64)
    ints[L.PACK_IB_ROWS], ints[L.PACK_IC_ROWS] = ib.shape[0], ic.shape[0]
    ints[L.PACK_CB], ints[L.PACK_WC] = cb.size, wc.size
    floats = np.empty(ws.size + wc.size)
    assert ib.shape[1] == L.NI and ic.shape[1] == L.NC and ws.shape == (ib.shape[0], L.NW)
    views = _views(ints, floats, ib.shape, ws.shape, ic.shape)
    for v, a in zip(views, (ib, ws, ic, cb, wc), strict=True):
        v[...] = a
    return (*views, ints, floats)


def _views(ints, floats, ib_shape, ws_shape, ic_shape) -> tuple:
    """``(ib, ws, ic, cb, wc)`` as views of the two buffers (layout ``PACK_*``)."""
    o = L.PACK_HEADER
    ib = ints[o : o + ib_shape[0] * ib_shape[1]].reshape(ib_shape)
    o += ib.size
    ic = ints[o : o + ic_shape[0] * ic_shape[1]].reshape(ic_shape)
    o += ic.size
    cb = ints[o : o + ints[L.PACK_CB]]
    ws = floats[: ws_shape[0] * ws_shape[1]].reshape(ws_shape)
    wc = floats[ws.size :]
    return ib, ws, ic, cb, wc
