"""``loopdyn bench``: the experiments of Chignoli et al. 2024, Section IX (spec §6), on the built-in robots.

* Tables II–IV — C-RNEA, C-ABA and C-EFPA against their baselines (spec §2.7) on the six robots of
  the paper: percent time differences ``100·(t_alg − t_cluster)/t_cluster`` from the medians of
  interleaved runs (:func:`loopdyn.bench.timing.interleaved`). One timed call runs the algorithm on
  the same ``S`` random states for every contender (``q`` random, ``ẏ``, ``ÿ``, ``τ`` uniform in
  [−1, 1]), and every call starts from the configuration: kinematics, constraint Jacobians and biases
  are inside the timing, as in the paper. The exact baselines run compiled too (``compiled=True``:
  one Numba kernel call each, :mod:`loopdyn.baselines.kernels`), evaluating the loop constraints with
  the same constraint tapes as the cluster algorithms and reusing the tree kernels on the spanning
  tree, as GRBDA runs every method in the same C++. The approximate models get their tree state
  directly (the paper sets each model's state outside the timed call, too). Beside each number, the
  paper's; and per robot whether our ordering matches the paper's (cluster algorithm faster than the
  exact baselines, slower than the approximate one).
* Figs. 11 and 13 — time against chain length N for random GT and PBT chains, the median over a few
  random robots of the median per call, with the log-log growth exponent fitted over all N and over
  N ≥ 12 (small chains are dominated by the fixed cost of a call from Python).
* Fig. 14 — the accuracy experiment on the MIT Humanoid leg: every joint follows
  ``q = A sin(2πωt)``; RMS error of the unconstrained and approximate inverse dynamics against C-RNEA.
* Then the tree benchmark against Pinocchio (:mod:`loopdyn.bench.trees`).

Everything printed is also returned by :func:`run_paper` and, with ``--out DIR``, written to
``DIR/results.json``, with the printed report (``results.md``) and the PNG figures (matplotlib, the
``[bench]`` extra; without it the figures are skipped). Absolute times are not comparable with the
paper's (C++ on an Apple M1 Pro; here one Python call of a Numba kernel per method call, the
dense factorisations of the baselines included): only the orderings and ratios are.
"""

from __future__ import annotations

import contextlib
import ctypes
import io
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass

import numba
import numpy as np

from .. import robots
from ..algorithms.common import compile_all
from ..baselines import approximate_model, unconstrained_model
from ..baselines.lagrange import lagrange_forward_dynamics
from ..baselines.projection import projected_rnea, projection_forward_dynamics
from ..constraint_rows import Constraint
from ..delassus_methods import delassus
from ..dynamics import aba, rnea
from ..model.configuration import random_configuration
from ..progress import Progress
from .timing import interleaved

__all__ = [
    "PAPER",
    "accuracy_experiment",
    "growth_exponent",
    "percent",
    "rms_error",
    "run_paper",
    "trajectory_torques",
]

#: environment variable: ``1`` shrinks every experiment to a smoke test (for the test suite)
TINY_ENV = "LOOPDYN_BENCH_TINY"

# ---------------------------------------------------------------------------------------------
# the paper's numbers (spec §6.3, copied exactly) and the robots
ROBOT_LABELS = (
    ("gt_chain", "12 Link GT Chain"),
    ("pbt_chain", "12 Link PBT Chain"),
    ("mini_cheetah", "Mini Cheetah"),
    ("mit_humanoid", "MIT Humanoid"),
    ("tello", "Tello Humanoid"),
    ("jvrc1", "JVRC-1"),
)

#: {table: (cluster algorithm, {baseline: paper percentages in robot order, as printed})}
PAPER = {
    "II": (
        "C-RNEA",
        {
            "Approximate RNEA": ("-40.3", "-36.2", "-41.0", "-42.0", "-59.6", "-37.7"),
            "Projected RNEA": ("+38.0", "+37.8", "+36.7", "+35.9", "+22.4", "+36.6"),
        },
    ),
    "III": (
        "C-ABA",
        {
            "Approximate ABA": ("-34.1", "-34.6", "-35.3", "-38.6", "-49.4", "-38.4"),
            "Projection": ("+86.8", "+73.5", "+21.0", "+32.5", "+22.2", "+87.3"),
            "Lagrange (dense)": ("+133.1", "+119.8", "+76.3", "+106.2", "+82.7", "+212.8"),
        },
    ),
    "IV": (
        "C-EFPA",
        {
            "Approximate EFPA": ("-35.7", "-52.1", "-28.6", "-37.4", "-51.4", "-22.54"),
            "Projected EFPA": ("+51.8", "+6.3", "+19.0", "+23.2", "+7.80", "+107.4"),
        },
    ),
}
TITLES = {
    "II": "Table II — inverse dynamics: % time vs C-RNEA",
    "III": "Table III — forward dynamics: % time vs C-ABA",
    "IV": "Table IV — inverse operational-space inertia (one 6-D end effector): % time vs C-EFPA",
}
#: recorded beside the paper's columns, not in the paper's table (spec §7.4 item 29)
EXTRA = {"III": ("Lagrange (LᵀL)",), "IV": ("Cluster PV-OSIMr",)}

CHAIN_SEED = 0
CHAIN_LINKS = 12
SCALING_SIZES = (2, 4, 6, 8, 12, 16, 20, 24)
TAIL_FROM = 12

# Fig. 14 (spec §6.5): the paper's RMS errors (N·m) and % of the max torque, for the joint its
# plotting script selected (the 4th independent torque, the knee in the code's ordering; the paper
# calls it the ankle, spec §7.4 item 24)
FIG14 = {"amplitude": 0.5, "frequency_hz": 1.5, "dt": 5e-4, "duration": 5.0}
FIG14_PAPER = {"joint_index": 3, "unconstrained": 4.31, "approximate": 1.04, "unc_pct": 39.2, "apx_pct": 9.5}


def _chain_ee(kind: str, n: int) -> str:
    return f"link-{n - 1}" if kind == "GT" else f"link-B-{n // 2 - 1}"


def _robot_cases():
    """(constructor, end-effector body) of the paper's six robots, in :data:`ROBOT_LABELS` order: the
    paper-era parameter sets where they differ (spec §5, §7.4 item 26), one 6-D end effector each
    (spec §6.2: the chain's last link, Mini Cheetah's FR foot, one ankle / foot link per humanoid)."""
    return (
        (lambda: robots.gt_chain(CHAIN_LINKS, seed=CHAIN_SEED), _chain_ee("GT", CHAIN_LINKS)),
        (lambda: robots.pbt_chain(CHAIN_LINKS, seed=CHAIN_SEED), _chain_ee("PBT", CHAIN_LINKS)),
        (lambda: robots.mini_cheetah(parameters="paper"), "FR_knee_link"),
        (lambda: robots.mit_humanoid(parameters="paper"), "right_ankle_link"),
        (lambda: robots.tello(arms=True), "left-foot"),
        (lambda: robots.jvrc1(parameters="paper"), "left-ankle-pitch"),
    )


# ---------------------------------------------------------------------------------------------
# small pure helpers (tested)
def percent(t_alg: float, t_cluster: float) -> float:
    """Percent time difference relative to the cluster algorithm: ``100·(t_alg − t_cluster)/t_cluster``
    (negative: the baseline is faster)."""
    return 100.0 * (t_alg - t_cluster) / t_cluster


def growth_exponent(sizes, times) -> float:
    """The exponent p of ``t ∝ N^p``: least-squares slope of log t against log N."""
    return float(np.polyfit(np.log(np.asarray(sizes, float)), np.log(np.asarray(times, float)), 1)[0])


def rms_error(reference, other) -> np.ndarray:
    """Per-column RMS of ``other − reference`` (rows: samples, columns: joints)."""
    e = np.asarray(other, float) - np.asarray(reference, float)
    return np.sqrt(np.mean(e * e, axis=0))


def trajectory_torques(model, Q, V, A) -> np.ndarray:
    """Inverse dynamics (``loopdyn.rnea``: C-RNEA on a model with constraints) at every sample
    (rows of Q, V, A); returns the ``(samples, nv)`` torques."""
    data = model.create_data()
    out = np.empty((len(Q), model.nv))
    for i in range(len(Q)):
        out[i] = rnea(model, data, Q[i], V[i], A[i])
    return out


# ---------------------------------------------------------------------------------------------
def _openblas_libraries() -> list[str]:
    """Paths of the OpenBLAS libraries loaded in this process (NumPy and SciPy each bundle one)."""
    try:
        with open("/proc/self/maps") as fh:
            return sorted({ln.split()[-1] for ln in fh if "openblas" in ln.lower() and "/" in ln})
    except OSError:  # not Linux: leave BLAS alone
        return []


@contextmanager
def single_threaded_blas():
    """Run the block with every loaded OpenBLAS on one thread, then restore its thread count.

    The dense baselines factorise small matrices; a multi-threaded OpenBLAS on a busy machine turns a
    50 × 50 Cholesky from ~60 µs into ~30 ms (threads waiting for a core), which measures the machine,
    not the method. The paper's Eigen code is single-threaded. Yields the number of libraries set."""
    restore = []
    for path in _openblas_libraries():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix, suffix in (("", ""), ("scipy_", "64_"), ("scipy_", ""), ("", "64_")):
            setter = getattr(lib, f"{prefix}openblas_set_num_threads{suffix}", None)
            getter = getattr(lib, f"{prefix}openblas_get_num_threads{suffix}", None)
            if setter is not None and getter is not None:
                restore.append((setter, int(getter())))
                setter(1)
                break
    try:
        yield len(restore)
    finally:
        for setter, n in restore:
            setter(n)


# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Settings:
    states: int  # random states per robot (tables)
    repeats: int  # interleaved samples per contender
    target: float  # seconds per timed block
    sizes: tuple[int, ...]  # chain lengths of Figs. 11 and 13
    scaling_robots: int  # random robots per chain length
    scaling_states: int  # states per random robot
    fig14_duration: float
    trees: bool  # run the trees-vs-Pinocchio section


FULL = Settings(500, 41, 1e-3, SCALING_SIZES, 25, 10, FIG14["duration"], True)
QUICK = Settings(20, 21, 1e-3, SCALING_SIZES, 3, 5, FIG14["duration"], True)
TINY = Settings(2, 1, 1e-5, (2, 4), 1, 2, 0.01, False)


def _settings(quick: bool) -> Settings:
    if os.environ.get(TINY_ENV, "") not in ("", "0"):
        return TINY
    return QUICK if quick else FULL


def _over(fn: Callable, states) -> Callable[[], None]:
    """One timed call: ``fn`` on every state in turn (the time per state is the time / len(states))."""

    def call():
        for s in states:
            fn(*s)

    return call


def _time(fns: dict, n_states: int, st: Settings) -> dict[str, float]:
    for f in fns.values():  # compile / load from cache, warm up
        f()
    t = interleaved(fns, repeats=st.repeats, target=st.target)
    return {k: v / n_states for k, v in t.items()}


class _Robot:
    """A model with its approximate twin, data and ``S`` random states (cluster and tree forms)."""

    def __init__(self, model, ee: str, n_states: int, seed: int):
        self.model = model
        self.data = model.create_data()
        self.approx = approximate_model(model)
        self.tdata = self.approx.tree.create_data()
        self.constraints = [Constraint(ee, "6d")]
        rng = np.random.default_rng(seed)
        self.states = []  # (q, v, a, tau)
        self.tree_states = []  # (q, v, a, tau) of the approximate tree
        for _ in range(n_states):
            q = random_configuration(model, rng)
            v, a, tau = (rng.uniform(-1.0, 1.0, model.nv) for _ in range(3))
            self.states.append((q, v, a, tau))
            qt, vt, at = self.approx.state(q, v, a)
            self.tree_states.append((qt, vt, at, self.approx.from_model_torque(tau, q)))

    # contenders: name → one timed call over all states
    def inverse_dynamics(self) -> dict:
        m, d, tm, td = self.model, self.data, self.approx.tree, self.tdata
        return {
            "C-RNEA": _over(lambda q, v, a, _: rnea(m, d, q, v, a), self.states),
            "Approximate RNEA": _over(lambda q, v, a, _: rnea(tm, td, q, v, a), self.tree_states),
            "Projected RNEA": _over(
                lambda q, v, a, _: projected_rnea(m, q, v, a, compiled=True), self.states
            ),
        }

    def forward_dynamics(self) -> dict:
        m, d, tm, td = self.model, self.data, self.approx.tree, self.tdata
        return {
            "C-ABA": _over(lambda q, v, _, t: aba(m, d, q, v, t), self.states),
            "Approximate ABA": _over(lambda q, v, _, t: aba(tm, td, q, v, t), self.tree_states),
            "Projection": _over(
                lambda q, v, _, t: projection_forward_dynamics(m, q, v, t, compiled=True), self.states
            ),
            "Lagrange (dense)": _over(
                lambda q, v, _, t: lagrange_forward_dynamics(m, q, v, t, method="dense", compiled=True),
                self.states,
            ),
            "Lagrange (LᵀL)": _over(
                lambda q, v, _, t: lagrange_forward_dynamics(m, q, v, t, method="ltl", compiled=True),
                self.states,
            ),
        }

    def iosim(self) -> dict:
        m, d, tm, td, c = self.model, self.data, self.approx.tree, self.tdata, self.constraints
        return {
            "C-EFPA": _over(lambda q, *_: delassus(m, d, q, c, method="c-efpa"), self.states),
            "Approximate EFPA": _over(lambda q, *_: delassus(tm, td, q, c, method="efpa"), self.tree_states),
            "Projected EFPA": _over(lambda q, *_: delassus(m, d, q, c, method="projected"), self.states),
            "Cluster PV-OSIMr": _over(lambda q, *_: delassus(m, d, q, c, method="c-pv-osimr"), self.states),
        }

    def check(self, table: str) -> dict[str, float]:
        """Largest |difference| of each exact baseline, as timed (compiled), from the cluster algorithm
        on the first state."""
        m, d = self.model, self.data
        q, v, a, tau = self.states[0]
        if table == "II":
            ref = rnea(m, d, q, v, a)
            outs = {"Projected RNEA": projected_rnea(m, q, v, a, compiled=True)}
        elif table == "III":
            ref = aba(m, d, q, v, tau)
            outs = {
                "Projection": projection_forward_dynamics(m, q, v, tau, compiled=True),
                "Lagrange (dense)": lagrange_forward_dynamics(m, q, v, tau, method="dense", compiled=True),
                "Lagrange (LᵀL)": lagrange_forward_dynamics(m, q, v, tau, method="ltl", compiled=True),
            }
        else:
            ref = delassus(m, d, q, self.constraints, method="c-efpa")
            outs = {
                "Projected EFPA": delassus(m, d, q, self.constraints, method="projected"),
                "Cluster PV-OSIMr": delassus(m, d, q, self.constraints, method="c-pv-osimr"),
            }
        return {k: float(np.max(np.abs(o - ref))) for k, o in outs.items()}


# ---------------------------------------------------------------------------------------------
# Tables II–IV
def _table_entry(table: str, times: dict, robot_index: int, check: dict) -> dict:
    cluster, paper_rows = PAPER[table]
    pct = {k: percent(t, times[cluster]) for k, t in times.items() if k != cluster}
    paper = {k: float(v[robot_index]) for k, v in paper_rows.items()}
    mismatches = [k for k, p in paper.items() if np.sign(pct[k]) != np.sign(p)]
    return {
        "cluster": cluster,
        "times_s": times,
        "percent": pct,
        "paper_percent": paper,
        "ordering_matches_paper": not mismatches,
        "mismatches": mismatches,
        "check_max_abs_diff": check,
    }


def _tables(st: Settings) -> list[dict]:
    cases = _robot_cases()
    out = []
    with Progress(3 * len(cases), "tables II-IV") as bar:
        for index, ((key, label), (build, ee)) in enumerate(zip(ROBOT_LABELS, cases, strict=True)):
            bar.update(0, f"{label}: building")
            t0 = time.perf_counter()
            model = build()
            r = _Robot(model, ee, st.states, seed=1 + index)
            entry = {
                "key": key,
                "name": model.name,
                "label": label,
                "nq": model.nq,
                "nv": model.nv,
                "nv_spanning": model.spanning_nv,
                "end_effector": ee,
                "states": st.states,
                "build_seconds": time.perf_counter() - t0,
            }
            bar.update(0, f"{label}: inverse dynamics")
            entry["II"] = _table_entry("II", _time(r.inverse_dynamics(), st.states, st), index, r.check("II"))
            bar.update(1, f"{label}: forward dynamics")
            entry["III"] = _table_entry(
                "III", _time(r.forward_dynamics(), st.states, st), index, r.check("III")
            )
            bar.update(1, f"{label}: inverse OSIM")
            entry["IV"] = _table_entry("IV", _time(r.iosim(), st.states, st), index, r.check("IV"))
            bar.update(1)
            out.append(entry)
    return out


def _print_table(table: str, entries: list[dict]) -> None:
    cluster, paper_rows = PAPER[table]
    print(f"\n## {TITLES[table]} (ours / paper)\n")
    print("| | " + " | ".join(e["label"] for e in entries) + " |")
    print("|---|" + "---:|" * len(entries))
    idx = {k: i for i, (k, _) in enumerate(ROBOT_LABELS)}

    def cell(e, alg):
        ours = f"{e[table]['percent'][alg]:+.1f}"
        return f"{ours} / {paper_rows[alg][idx[e['key']]]}" if alg in paper_rows else f"{ours} / –"

    for alg in (*paper_rows, *EXTRA.get(table, ())):
        print(f"| {alg} | " + " | ".join(cell(e, alg) for e in entries) + " |")
    verdicts = [
        "yes" if e[table]["ordering_matches_paper"] else "no: " + ", ".join(e[table]["mismatches"])
        for e in entries
    ]
    print("| **ordering as paper** | " + " | ".join(verdicts) + " |")
    algs = [cluster, *paper_rows, *EXTRA.get(table, ())]
    for alg in algs:
        cells = [f"{e[table]['times_s'][alg] * 1e6:.1f}" for e in entries]
        print(f"| µs {alg} | " + " | ".join(cells) + " |")
    worst = max(max(e[table]["check_max_abs_diff"].values()) for e in entries)
    print(f"\n(exact baselines vs {cluster}: max |difference| {worst:.1e} on each robot's first state)")


# ---------------------------------------------------------------------------------------------
# Figs. 11 and 13
FIG11 = ("C-ABA", "Lagrange (LᵀL)", "Projection", "Approximate ABA", "Lagrange (dense)")
FIG13 = ("C-EFPA", "Projected EFPA", "Approximate EFPA", "Cluster PV-OSIMr")


def _scaling(st: Settings) -> dict:
    builders = {"GT": robots.gt_chain, "PBT": robots.pbt_chain}
    runs = [("fig11", "GT"), ("fig11", "PBT"), ("fig13", "PBT")]
    times: dict = {(f, k): {n: [] for n in st.sizes} for f, k in runs}
    total = len(st.sizes) * st.scaling_robots * 2
    with Progress(total, "figs 11, 13") as bar:
        for kind in ("GT", "PBT"):
            for n in st.sizes:
                for r in range(st.scaling_robots):
                    bar.update(0, f"{kind} N={n} robot {r + 1}")
                    seed = 1000 * n + r
                    robot = _Robot(builders[kind](n, seed=seed), _chain_ee(kind, n), st.scaling_states, seed)
                    fd = robot.forward_dynamics()
                    times[("fig11", kind)][n].append(_time({k: fd[k] for k in FIG11}, st.scaling_states, st))
                    if kind == "PBT":
                        times[("fig13", kind)][n].append(_time(robot.iosim(), st.scaling_states, st))
                    bar.update(1)
    out: dict = {"fig11": {}, "fig13": {}}
    for (fig, kind), per_n in times.items():
        algs = FIG11 if fig == "fig11" else FIG13
        med = {a: [float(np.median([t[a] for t in per_n[n]])) for n in st.sizes] for a in algs}
        tail = [i for i, n in enumerate(st.sizes) if n >= TAIL_FROM]
        out[fig][kind] = {
            "sizes": list(st.sizes),
            "robots_per_size": st.scaling_robots,
            "states_per_robot": st.scaling_states,
            "times_s": med,
            "exponent": {a: growth_exponent(st.sizes, med[a]) for a in algs},
            "exponent_tail": {
                a: growth_exponent([st.sizes[i] for i in tail], [med[a][i] for i in tail]) for a in algs
            }
            if len(tail) >= 2
            else {},
        }
    return out


def _print_scaling(fig: str, kind: str, res: dict) -> None:
    title = {
        "fig11": "Fig. 11 — forward dynamics vs chain length",
        "fig13": "Fig. 13 — inverse OSIM (one 6-D end effector) vs chain length",
    }[fig]
    print(f"\n## {title}, {kind} chains (median µs per call)\n")
    algs = list(res["times_s"])
    print("| N | " + " | ".join(algs) + " |")
    print("|---:|" + "---:|" * len(algs))
    for i, n in enumerate(res["sizes"]):
        print(f"| {n} | " + " | ".join(f"{res['times_s'][a][i] * 1e6:.1f}" for a in algs) + " |")
    print("| exponent p (t ∝ N^p), all N | " + " | ".join(f"{res['exponent'][a]:.2f}" for a in algs) + " |")
    if res["exponent_tail"]:
        print(
            f"| exponent p, N ≥ {TAIL_FROM} | "
            + " | ".join(f"{res['exponent_tail'][a]:.2f}" for a in algs)
            + " |"
        )


# ---------------------------------------------------------------------------------------------
# Fig. 14
def accuracy_experiment(duration: float = FIG14["duration"], dt: float = FIG14["dt"]) -> dict:
    """Spec §6.5 on :func:`loopdyn.robots.mit_humanoid_leg`: every joint follows
    ``q = A sin(2πωt)`` (A = 0.5 rad, ω = 1.5 Hz), samples every ``dt`` for ``duration`` seconds;
    torques of C-RNEA (exact), the approximate (diagonal reflected inertia) and the unconstrained
    (no rotor inertia) inverse dynamics, and the per-joint RMS errors of the latter two."""
    model = robots.mit_humanoid_leg(parameters="paper")
    approx, unc = approximate_model(model), unconstrained_model(model)
    A, w = FIG14["amplitude"], 2.0 * np.pi * FIG14["frequency_hz"]
    t = np.arange(int(round(duration / dt)) + 1) * dt
    ones = np.ones(model.nv)
    Q = np.outer(A * np.sin(w * t), ones)
    V = np.outer(A * w * np.cos(w * t), ones)
    Acc = np.outer(-A * w * w * np.sin(w * t), ones)
    exact = trajectory_torques(model, Q, V, Acc)
    assert not approx.has_implicit  # explicit clusters: the trees' coordinates and torques are the model's
    approximate = trajectory_torques(approx.tree, Q, V, Acc)
    unconstrained = trajectory_torques(unc.tree, Q, V, Acc)
    peak = np.max(np.abs(exact), axis=0)
    rms_a, rms_u = rms_error(exact, approximate), rms_error(exact, unconstrained)
    return {
        "robot": model.name,
        "joints": [b.joint_name for b in approx.tree.bodies],
        "t": t,
        "q": Q,
        "v": V,
        "a": Acc,
        "exact": exact,
        "approximate": approximate,
        "unconstrained": unconstrained,
        "rms_approximate": rms_a,
        "rms_unconstrained": rms_u,
        "max_abs_torque": peak,
        "pct_approximate": 100.0 * rms_a / peak,
        "pct_unconstrained": 100.0 * rms_u / peak,
    }


def _fig14_summary(res: dict, duration: float) -> dict:
    return {
        "robot": res["robot"],
        "samples": len(res["t"]),
        "duration": duration,
        **{k: v for k, v in FIG14.items() if k != "duration"},
        "joints": res["joints"],
        "rms_unconstrained_Nm": res["rms_unconstrained"].tolist(),
        "rms_approximate_Nm": res["rms_approximate"].tolist(),
        "max_abs_torque_Nm": res["max_abs_torque"].tolist(),
        "pct_unconstrained": res["pct_unconstrained"].tolist(),
        "pct_approximate": res["pct_approximate"].tolist(),
        "paper": dict(FIG14_PAPER, joint=res["joints"][FIG14_PAPER["joint_index"]]),
    }


def _print_fig14(s: dict) -> None:
    print(
        f"\n## Fig. 14 — accuracy on {s['robot']}: q = {s['amplitude']} sin(2π·{s['frequency_hz']}·t) on "
        f"every joint, Δt = {s['dt']:g} s, {s['duration']:g} s ({s['samples']} samples)\n"
    )
    print("RMS torque error vs C-RNEA, N·m (% of the joint's max |τ|); paper beside the joint it plotted\n")
    print("| joint | unconstrained | approximate | max abs τ | paper unconstrained | paper approximate |")
    print("|---|---:|---:|---:|---:|---:|")
    p = s["paper"]
    for i, j in enumerate(s["joints"]):
        pu = pa = "–"
        if i == p["joint_index"]:
            pu = f"{p['unconstrained']:.2f} ({p['unc_pct']:.1f} %)"
            pa = f"{p['approximate']:.2f} ({p['apx_pct']:.1f} %)"
        print(
            f"| {j} | {s['rms_unconstrained_Nm'][i]:.2f} ({s['pct_unconstrained'][i]:.1f} %) "
            f"| {s['rms_approximate_Nm'][i]:.2f} ({s['pct_approximate'][i]:.1f} %) "
            f"| {s['max_abs_torque_Nm'][i]:.2f} | {pu} | {pa} |"
        )
    print(
        "\n(The paper calls its joint the ankle; its plotting script takes the 4th of the five torques, "
        f"{p['joint']} here: spec §7.4 item 24. Both knee and ankle are plotted.)"
    )


# ---------------------------------------------------------------------------------------------
# figures
def _pyplot():
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _plots(out_dir: str, scaling: dict, fig14: dict) -> list[str]:
    plt = _pyplot()
    if plt is None:
        print("\n(matplotlib not installed: no figures; `pip install loopdyn[bench]`)")
        return []
    written = []

    def save(f, name):
        f.tight_layout()
        path = os.path.join(out_dir, name)
        f.savefig(path, dpi=120)
        plt.close(f)
        written.append(path)

    specs = [
        ("fig11", ("GT", "PBT"), "Fig. 11: forward dynamics", "fig11_forward_dynamics_scaling.png"),
        ("fig13", ("PBT",), "Fig. 13: inverse OSIM, one 6-D end effector", "fig13_iosim_scaling.png"),
    ]
    for fig, kinds, title, fname in specs:
        f, axes = plt.subplots(1, len(kinds), figsize=(5.5 * len(kinds), 4.4), squeeze=False)
        for ax, kind in zip(axes[0], kinds, strict=True):
            res = scaling[fig][kind]
            for alg, ts in res["times_s"].items():
                label = f"{alg} (p = {res['exponent'][alg]:.2f})"
                ax.loglog(res["sizes"], np.asarray(ts) * 1e6, "o-", label=label)
            ax.set_xticks(res["sizes"], [str(n) for n in res["sizes"]])
            ax.xaxis.set_minor_locator(plt.NullLocator())
            ax.set_xlabel("degrees of freedom N")
            ax.set_ylabel("median time per call (µs)")
            ax.set_title(f"{title} — {kind} chains", fontsize=10)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
        save(f, fname)

    f, axes = plt.subplots(1, 2, figsize=(11, 4.4))
    names = fig14["joints"]
    for ax, i in zip(axes, (len(names) - 1, len(names) - 2), strict=True):
        for key, style in (("exact", "k-"), ("approximate", "C0--"), ("unconstrained", "C3:")):
            ax.plot(fig14["t"], fig14[key][:, i], style, label=key)
        ax.set_xlabel("time (s)")
        ax.set_ylabel("torque (N·m)")
        ax.set_title(f"Fig. 14: {names[i]} torque, {fig14['robot']}", fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    save(f, "fig14_accuracy.png")
    return written


# ---------------------------------------------------------------------------------------------
def run_paper(quick: bool = False, out_dir: str | None = None, batch_states: int | None = None) -> dict:
    """Run the paper's experiments (module docstring), print markdown tables and return every number.
    ``quick``: fewer states, repetitions and random chains (a few minutes). ``out_dir``: also write
    ``results.json``, the PNG figures and ``results.md`` (the printed report) there. BLAS runs
    single-threaded meanwhile (:func:`single_threaded_blas`)."""
    tee = _Tee(sys.stdout) if out_dir else None
    capture = contextlib.redirect_stdout(tee) if tee else contextlib.nullcontext()
    with single_threaded_blas() as n_blas, capture:
        results = _run(_settings(quick), quick, out_dir, batch_states, n_blas)
    if tee is not None:  # the printed report, for the README's Results section
        path = os.path.join(out_dir, "results.md")
        with open(path, "w") as fh:
            fh.write("".join(tee.parts))
        print(f"wrote {path}")
    return results


class _Tee(io.TextIOBase):
    """Writes to ``stream`` and keeps a copy of the text."""

    def __init__(self, stream):
        self.stream = stream
        self.parts: list[str] = []

    def write(self, s: str) -> int:
        self.stream.write(s)
        self.parts.append(s)
        return len(s)

    def flush(self) -> None:
        self.stream.flush()


def _run(st: Settings, quick: bool, out_dir: str | None, batch_states: int | None, n_blas: int) -> dict:
    t_start = time.perf_counter()
    results: dict = {
        "machine": {
            "python": platform.python_version(),
            "processor": platform.processor() or platform.machine(),
            "cpu_count": os.cpu_count(),
            "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
            "numba": numba.__version__,
            "numpy": np.__version__,
            "openblas_libraries_single_threaded": n_blas,
        },
        "settings": {**st.__dict__, "sizes": list(st.sizes), "quick": quick, "tiny": st is TINY},
        "formula": "percent = 100 * (t_alg - t_cluster) / t_cluster",
    }
    print("# loopdyn bench — Chignoli et al. 2024, Section IX, on loopdyn's built-in robots\n")
    results["kernel_first_call_seconds"] = None
    if st is not TINY:  # the tiny smoke test compiles only what it calls
        from ..compilation import compile as compile_kernels

        report = compile_kernels()  # every kernel, in parallel worker processes (`loopdyn compile`)
        results["compile"] = {
            "seconds": report.seconds,
            "jobs": report.jobs,
            "compiled": report.compiled,
            "kernels": [k.__dict__ for k in report.kernels],
        }
        print(
            f"{report.summary()}; the slowest:\n\n"
            + "\n".join("    " + line for line in report.table(5).splitlines())
            + "\n"
        )
        results["kernel_first_call_seconds"] = compile_all()  # now loaded from the cache
        print(f"kernels loaded in this process in {results['kernel_first_call_seconds']:.2f} s\n")
    print(
        f"Median time per call over {st.states} random states per robot, {st.repeats} interleaved samples; "
        "each call includes the kinematics.\nPercent = 100·(t_alg − t_cluster)/t_cluster "
        "(negative: faster than the cluster algorithm). Paper: C++ on an Apple M1 Pro; here one Python "
        "call of a Numba kernel per method call, the baselines' dense factorisations included (compiled "
        "too, no BLAS): compare orderings and ratios, not magnitudes.\n"
        f"BLAS: {n_blas} OpenBLAS librar{'y' if n_blas == 1 else 'ies'} set to one thread, as the paper's "
        "Eigen code (a threaded BLAS would time the machine's load, not the method)."
    )
    sys.stdout.flush()

    results["robots"] = _tables(st)
    for table in ("II", "III", "IV"):
        _print_table(table, results["robots"])
    sys.stdout.flush()

    results["scaling"] = _scaling(st)
    for fig, per_kind in results["scaling"].items():
        for kind, res in per_kind.items():
            _print_scaling(fig, kind, res)
    sys.stdout.flush()

    with Progress(1, "fig 14") as bar:
        fig14 = accuracy_experiment(duration=st.fig14_duration)
        bar.update()
    results["accuracy"] = {"fig14": _fig14_summary(fig14, st.fig14_duration)}
    _print_fig14(results["accuracy"]["fig14"])
    sys.stdout.flush()

    if out_dir:
        os.makedirs(out_dir, exist_ok=True)
        results["figures"] = _plots(out_dir, results["scaling"], fig14)
        for path in results["figures"]:
            print(f"wrote {path}")

    results["trees"] = None
    if st.trees:
        from .trees import run as run_trees

        print()
        results["trees"] = run_trees(quick=quick, out_dir=None, batch_states=batch_states)
    results["total_seconds"] = time.perf_counter() - t_start
    print(f"\ntotal {results['total_seconds']:.0f} s")
    if out_dir:
        path = os.path.join(out_dir, "results.json")
        with open(path, "w") as fh:
            json.dump(results, fh, indent=2, default=_json_default)
        print(f"wrote {path}")
    return results


def _json_default(x):
    if isinstance(x, np.ndarray):
        return x.tolist()
    if isinstance(x, np.integer | np.floating):
        return x.item()
    raise TypeError(f"not JSON serialisable: {type(x).__name__}")
