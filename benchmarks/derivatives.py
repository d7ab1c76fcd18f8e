"""Analytical derivatives of the dynamics on trees (issue #30): cold compile time and speed against
Pinocchio.

1. Cold compile: each public function's first call in a fresh child process with empty Numba and
   loopdyn caches (``NUMBA_CACHE_DIR``, ``LOOPDYN_CACHE_DIR`` set to new folders), CPU seconds
   (``time.process_time()``) around that first call only — its kernel and every helper it compiles
   (the ABA derivatives include the ABA and the LᵀL factorisation).
2. Speed: µs per call, medians of interleaved blocks in one process
   (:func:`loopdyn.bench.timing.interleaved`), ``loopdyn.rnea_derivatives`` against
   ``pinocchio.computeRNEADerivatives`` and ``loopdyn.aba_derivatives`` against
   ``pinocchio.computeABADerivatives`` (both without external forces), on solo12 and talos_reduced;
   each row also checks that the two results agree (largest relative difference); and
   ``loopdyn.constrained_forward_dynamics_derivatives`` against ``pinocchio.constraintDynamics`` +
   ``computeConstraintDynamicsDerivatives`` (solo12's four feet as 3D contacts, talos_reduced's soles
   as 6D contacts, LOCAL; Pinocchio's proximal solver with one iteration, μ = 1e-12).

3. Models with loops: on Mini Cheetah and the MIT Humanoid (explicit clusters), the four-bar, the
   five-bar, the delta robot and Tello (implicit loops), each function against the same function on
   ``spanning_tree(model)`` (same bodies) and against central differences of C-ABA (2 nv + 1 calls of
   ``loopdyn.aba``, what a user without derivatives pays); and ``constrained_forward_dynamics_derivatives``
   ("contact derivatives") under the contacts of :func:`loop_contacts` against the same call on the
   spanning tree.

Note: loopdyn's calls allocate and return new arrays (three nv × nv, plus ddq and a scratch factor
for ABA) and validate their inputs; Pinocchio's write into its Data.

Usage: ``python benchmarks/derivatives.py [--quick] [--no-compile]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

import loopdyn as ld  # noqa: E402
from loopdyn.bench.timing import interleaved  # noqa: E402

ROBOTS = ("solo12", "talos_reduced")

FIRST_CALL = r"""
import sys, time
import numpy as np
import loopdyn as ld
if sys.argv[2] == "solo12":
    path, floating = ld.robots.example_robot_urdf("solo12")
    m = ld.load_urdf(path, floating_base=floating)
else:
    m = getattr(ld.robots, sys.argv[2])()
d = m.create_data()
rng = np.random.default_rng(0)
q = ld.random_configuration(m, rng)
v, x = rng.normal(size=m.nv), rng.normal(size=m.nv)
f = getattr(ld, sys.argv[1])
extra = ()
if sys.argv[1] == "constrained_forward_dynamics_derivatives":
    extra = ([ld.Constraint(n, "3d") for n in ("FL_FOOT", "FR_FOOT", "HL_FOOT", "HR_FOOT")],)
t = time.process_time()
f(m, d, q, v, x, *extra)
print(time.process_time() - t)
"""

#: the contact sets of the constrained rows (LOCAL frames, as Pinocchio's contact models below)
CONTACTS = {
    "solo12": [("FL_FOOT", "3d"), ("FR_FOOT", "3d"), ("HL_FOOT", "3d"), ("HR_FOOT", "3d")],
    "talos_reduced": [("left_sole_link", "6d"), ("right_sole_link", "6d")],
}


def cold_compile(name: str, robot: str) -> float:
    """CPU seconds of the first call of ``loopdyn.<name>`` on ``robot`` in a fresh process with empty
    caches."""
    with tempfile.TemporaryDirectory() as numba_dir, tempfile.TemporaryDirectory() as loopdyn_dir:
        env = dict(os.environ, NUMBA_CACHE_DIR=numba_dir, LOOPDYN_CACHE_DIR=loopdyn_dir)
        out = subprocess.run(
            [sys.executable, "-c", FIRST_CALL, name, robot],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
    return float(out.stdout.strip().splitlines()[-1])


def symmetrized_upper(M):
    return np.triu(M) + np.triu(M, 1).T


def rel(a, b) -> float:
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def speed(pin, name: str, repeats: int, target: float) -> list[tuple]:
    path, floating = ld.robots.example_robot_urdf(name)
    lm = ld.load_urdf(path, floating_base=floating)
    d = lm.create_data()
    pm = pin.buildModelFromUrdf(path, *([pin.JointModelFreeFlyer()] if floating else []))
    pd = pm.createData()
    rng = np.random.default_rng(0)
    q = ld.random_configuration(lm, rng)
    v, x = rng.standard_normal(lm.nv), rng.standard_normal(lm.nv)
    rows = []
    for what, ours, theirs in (
        ("rnea_derivatives", ld.rnea_derivatives, pin.computeRNEADerivatives),
        ("aba_derivatives", ld.aba_derivatives, pin.computeABADerivatives),
    ):
        a = ours(lm, d, q, v, x)
        b = [np.array(m) for m in theirs(pm, pd, q, v, x)]
        b[2] = symmetrized_upper(b[2])
        err = max(rel(s, t) for s, t in zip(a, b, strict=True))
        t = interleaved(
            {"loopdyn": lambda o=ours: o(lm, d, q, v, x), "pinocchio": lambda f=theirs: f(pm, pd, q, v, x)},
            repeats=repeats,
            target=target,
        )
        rows.append((name, what, t["loopdyn"] * 1e6, t["pinocchio"] * 1e6, err))
    rows.append(constrained_speed(pin, name, lm, d, pm, pd, q, v, x, repeats, target))
    return rows


def constrained_speed(pin, name, lm, d, pm, pd, q, v, tau, repeats, target) -> tuple:
    """``loopdyn.constrained_forward_dynamics_derivatives`` against Pinocchio's ``constraintDynamics``
    followed by ``computeConstraintDynamicsDerivatives`` (LOCAL contact models on the same frames)."""
    cons = [ld.Constraint(f, kind) for f, kind in CONTACTS[name]]
    cms, cds = pin.StdVec_RigidConstraintModel(), pin.StdVec_RigidConstraintData()
    for f, kind in CONTACTS[name]:
        fr = pm.frames[pm.getFrameId(f)]
        ct = pin.ContactType.CONTACT_6D if kind == "6d" else pin.ContactType.CONTACT_3D
        cm = pin.RigidConstraintModel(ct, pm, fr.parentJoint, fr.placement, pin.ReferenceFrame.LOCAL)
        cms.append(cm)
        cds.append(cm.createData())
    pin.initConstraintDynamics(pm, pd, cms, cds)
    prox = pin.ProximalSettings(1e-12, 1e-12, 1)

    def theirs():
        pin.constraintDynamics(pm, pd, q, v, tau, cms, cds, prox)
        pin.computeConstraintDynamicsDerivatives(pm, pd, cms, cds, prox)

    def ours():
        return ld.constrained_forward_dynamics_derivatives(lm, d, q, v, tau, cons)

    r = ours()
    theirs()
    expected = (pd.ddq, pd.lambda_c, pd.ddq_dq, pd.ddq_dv, pd.ddq_dtau, pd.dlambda_dq, pd.dlambda_dv,
                pd.dlambda_dtau)  # fmt: skip
    err = max(rel(a, np.asarray(b)) for a, b in zip(r, expected, strict=True))
    t = interleaved({"loopdyn": ours, "pinocchio": theirs}, repeats=repeats, target=target)
    return (name, "constrained fd+deriv", t["loopdyn"] * 1e6, t["pinocchio"] * 1e6, err)


def central_differences_of_aba(m, d, q, v, tau, h=1e-6):
    """∂q̈/∂q, ∂q̈/∂v, ∂q̈/∂τ by central differences of ``loopdyn.aba`` (along ``integrate`` for q)."""
    cols = []
    for j in range(m.nv):
        e = np.zeros(m.nv)
        e[j] = h
        qp, qm = ld.integrate(m, q, e), ld.integrate(m, q, -e)
        cols.append(ld.aba(m, d, qp, v, tau) - ld.aba(m, d, qm, v, tau))
        cols.append(ld.aba(m, d, q, v + e, tau) - ld.aba(m, d, q, v - e, tau))
        cols.append(ld.aba(m, d, q, v, tau + e) - ld.aba(m, d, q, v, tau - e))
    return cols


def loop_contacts(robot: str) -> list:
    """The contact set of a built-in model with loops for the contact-derivative rows (none: []):
    Mini Cheetah's four feet (3-D points 0.2 m below the knees), the humanoids' two feet (6-D), and
    the five-bar's end effector held in its plane (rows x and z)."""
    if robot == "mini_cheetah":
        return [ld.Constraint(f"{leg}_knee_link", "3d", (np.eye(3), [0.0, 0.0, -0.2]))
                for leg in ("FL", "FR", "HL", "HR")]  # fmt: skip
    if robot == "mit_humanoid":
        return [ld.Constraint(f"{side}_ankle_link", "6d") for side in ("left", "right")]
    if robot == "tello":
        return [ld.Constraint(f"{side}-foot", "6d") for side in ("left", "right")]
    if robot == "five_bar":
        return [ld.Constraint("end_effector", np.eye(6)[[0, 2]])]
    return []


def against_spanning_tree(m, repeats: int, target: float, with_differences: bool = False,
                          contacts=()) -> dict:  # fmt: skip
    """``{function: {"loops": s, "tree": s[, "fd": s]}}``: ``rnea_derivatives`` and ``aba_derivatives``
    on model ``m`` and on ``spanning_tree(m)`` (the same state in spanning coordinates), interleaved;
    with ``with_differences``, central differences of C-ABA beside the ABA derivatives; with
    ``contacts``, ``constrained_forward_dynamics_derivatives`` under them on both models too (the tree's
    the same constraints on the same bodies, the loops left open)."""
    d = m.create_data()
    t = ld.spanning_tree(m)
    td = t.create_data()
    rng = np.random.default_rng(0)
    q = ld.random_configuration(m, rng)
    v, x = rng.standard_normal(m.nv), rng.standard_normal(m.nv)
    qs, vs, xs = ld.to_spanning(m, q, v, x)
    out = {}
    for what in ("rnea_derivatives", "aba_derivatives"):
        f = getattr(ld, what)
        args, targs = (m, d, q, v, x), (t, td, qs, vs, xs)
        f(*args)
        f(*targs)
        fns = {"loops": lambda f=f, a=args: f(*a), "tree": lambda f=f, a=targs: f(*a)}
        if with_differences and what == "aba_derivatives":
            fns["fd"] = lambda a=args: central_differences_of_aba(*a)
        out[what] = interleaved(fns, repeats=repeats, target=target)
    if contacts:
        f = ld.constrained_forward_dynamics_derivatives
        f(m, d, q, v, x, contacts)
        f(t, td, qs, vs, xs, contacts)
        fns = {"loops": lambda: f(m, d, q, v, x, contacts), "tree": lambda: f(t, td, qs, vs, xs, contacts)}
        out["contact derivatives"] = interleaved(fns, repeats=repeats, target=target)
    return out


def loops(repeats: int, target: float) -> list[tuple]:
    rows = []
    for robot in ("mini_cheetah", "mit_humanoid", "four_bar", "five_bar", "delta_robot", "tello"):
        model = getattr(ld.robots, robot)()
        for what, tm in against_spanning_tree(model, repeats, target, True, loop_contacts(robot)).items():
            rows.append((robot, what, tm["loops"] * 1e6, tm["tree"] * 1e6, tm.get("fd", float("nan")) * 1e6))
    return rows


def growth(repeats: int, target: float, sizes=(12, 24, 48, 96)) -> list[tuple]:
    """``rnea_derivatives`` / ``aba_derivatives`` on the cluster paper's GT and PBT chains of growing
    length, against the same function on the spanning tree (the outputs are nv × nv: a serial chain's
    depth is its length, so O(n·d) is O(n²) here)."""
    rows = []
    for kind, build in (("GT", ld.robots.gt_chain), ("PBT", ld.robots.pbt_chain)):
        for n in sizes:
            for what, tm in against_spanning_tree(build(n, seed=0), repeats, target).items():
                rows.append((f"{kind} {n}", what, tm["loops"] * 1e6, tm["tree"] * 1e6))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer, shorter timing blocks")
    parser.add_argument("--no-compile", action="store_true", help="skip the cold-compile measurements")
    args = parser.parse_args()
    if not args.no_compile:
        print("cold first call (empty caches), CPU seconds:")
        for robot, kind in (("solo12", "tree kernel"), ("mini_cheetah", "explicit-cluster kernel"),
                            ("four_bar", "implicit loops: cluster kernel + Taylor terms")):  # fmt: skip
            for name in ("rnea_derivatives", "aba_derivatives"):
                print(f"  {name:18s} {robot:13s} {cold_compile(name, robot):6.1f} s  ({kind})")
        name = "constrained_forward_dynamics_derivatives"
        secs = cold_compile(name, "solo12")
        print(f"  {name} solo12 {secs:6.1f} s  (tree kernel: forward solve + derivatives)")
    import pinocchio as pin

    repeats, target = (7, 1e-3) if args.quick else (21, 2e-3)
    print("\nrobot          function              loopdyn µs  pinocchio µs  ratio  max rel. diff")
    for name in ROBOTS:
        for robot, what, ours, theirs, err in speed(pin, name, repeats, target):
            print(f"{robot:14s} {what:21s} {ours:10.2f}  {theirs:12.2f}  {ours / theirs:5.2f}  {err:.1e}")
    print("\nmodel with loops  function           loops µs  spanning tree µs  ratio  differences of C-ABA µs")
    for robot, what, ours, tree, fd in loops(repeats, target):
        print(f"{robot:17s} {what:18s} {ours:9.1f}  {tree:16.1f}  {ours / tree:5.2f}  {fd:10.1f}")
    print("\nchain      function           loops µs  spanning tree µs  ratio")
    for chain, what, ours, tree in growth(repeats, target):
        print(f"{chain:10s} {what:18s} {ours:9.1f}  {tree:16.1f}  {ours / tree:5.2f}")


if __name__ == "__main__":
    main()
