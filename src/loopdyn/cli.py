"""Command line: ``loopdyn bench``, ``loopdyn compile`` and ``loopdyn info``."""

from __future__ import annotations

import argparse
import sys

from . import __version__


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="loopdyn", description="Rigid-body dynamics for robots with loops.")
    parser.add_argument("--version", action="version", version=f"loopdyn {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser(
        "bench",
        help="reproduce the cluster paper's timing and accuracy experiments (Tables II-IV, Figs. 11, 13, "
        "14) on the built-in robots, then time tree dynamics against Pinocchio (if installed)",
    )
    b.add_argument("--quick", action="store_true", help="fewer states, repeats and random chains (minutes)")
    b.add_argument("--out", metavar="DIR", help="write DIR/results.json with every number printed, and PNGs")
    b.add_argument("--batch-states", type=int, default=None, help="states per batch call (default 20000)")
    c = sub.add_parser(
        "compile",
        help="compile every kernel (or those of the named families) into the on-disk cache, in parallel "
        "worker processes, and print the slowest; kernels already cached load in a fraction of a second",
    )
    c.add_argument(
        "--families",
        nargs="+",
        metavar="FAMILY",
        help="only these kernel families (" + ", ".join(_families()) + "); default: all",
    )
    c.add_argument("--jobs", type=int, default=None, help="worker processes (default: one per core)")
    c.add_argument("--quiet", action="store_true", help="no progress, only the summary")
    i = sub.add_parser(
        "info", help="describe a robot: a built-in robot name, an example robot name or a URDF path"
    )
    i.add_argument("robot", help="a built-in robot (loopdyn.robots.names()), an example robot or a URDF path")
    i.add_argument("--floating", action="store_true", help="URDF path: add a free-flyer root joint")
    i.add_argument(
        "--variant",
        choices=("exact", "approximate", "unconstrained"),
        default="exact",
        help="the model with its constraints (default), or its approximate / unconstrained twin",
    )
    i.add_argument(
        "--parameters",
        choices=("current", "paper"),
        default=None,
        help="built-in robots: the reference file's parameters (default) or the paper's",
    )
    i.add_argument(
        "--inertia",
        choices=("warn", "physical", "accept"),
        default="warn",
        help="URDF/SDF/MJCF files: inertias that violate the triangle inequality are loaded with a warning "
        "(default), refused, or accepted silently",
    )
    i.add_argument(
        "--mimic",
        choices=("error", "independent", "coupling"),
        default="error",
        help="URDF files: how <mimic> joints are loaded (see loopdyn.load_urdf)",
    )
    args = parser.parse_args(argv)

    if args.command == "bench":
        from .bench.paper import run_paper

        run_paper(quick=args.quick, out_dir=args.out, batch_states=args.batch_states)
        from pathlib import Path

        from .bench.higher_order import run as run_higher_order

        print()
        run_higher_order(quick=args.quick, out=Path(args.out) if args.out else None)
        return 0
    if args.command == "compile":
        return _compile(args)
    if args.command == "info":
        return _info(args)
    return 1  # pragma: no cover


def _families() -> list[str]:
    from .compilation import FAMILIES

    return list(FAMILIES)


def _compile(args) -> int:
    """``loopdyn compile``: fill the cache, print the wall time and the slowest kernels."""
    from .compilation import compile as compile_kernels
    from .errors import LoopdynError

    if args.jobs is not None and args.jobs < 1:
        print("loopdyn: --jobs must be at least 1", file=sys.stderr)
        return 2
    try:
        report = compile_kernels(families=args.families, jobs=args.jobs, progress=not args.quiet)
    except LoopdynError as exc:
        print(f"loopdyn: {exc}", file=sys.stderr)
        return 2
    print(report.summary())
    print(report.table(10))
    return 0


def _info(args) -> int:
    """``loopdyn info ROBOT``: a built-in robot by name, else an example robot or a URDF path."""
    from . import io, robots
    from .errors import LoopdynError

    if args.robot in robots.names():
        kwargs = {} if args.parameters is None else {"parameters": args.parameters}
        try:
            model = robots.build(args.robot, **kwargs)
        except TypeError as exc:  # a robot without parameter sets (the chains, the linkages)
            print(f"loopdyn: {args.robot}: no --parameters choice ({exc})", file=sys.stderr)
            return 2
        except LoopdynError as exc:
            print(f"loopdyn: {exc}", file=sys.stderr)
            return 2
    else:
        if args.parameters is not None:
            print("loopdyn: --parameters applies to built-in robots only", file=sys.stderr)
            return 2
        try:
            path, floating = robots.example_robot_urdf(args.robot)
        except KeyError:
            path, floating = args.robot, args.floating
        except FileNotFoundError as exc:
            print(f"loopdyn: {exc}", file=sys.stderr)
            return 2
        try:
            if io.mjcf.is_mjcf(path):  # an MJCF (MuJoCo) file: .mjcf, or .xml with a <mujoco> root
                model = io.load_mjcf(path, floating_base=True if floating else None, inertia=args.inertia)
            elif str(path).lower().endswith(".sdf"):
                model = io.load_sdf(path, floating_base=True if floating else None, inertia=args.inertia)
            else:
                model = io.load_urdf(path, floating_base=floating, inertia=args.inertia, mimic=args.mimic)
        except (OSError, ValueError, NotImplementedError, ImportError) as exc:
            print(f"loopdyn: {exc}", file=sys.stderr)
            return 2
    if args.variant != "exact":
        try:
            twin = robots.approximate(model) if args.variant == "approximate" else robots.unconstrained(model)
        except LoopdynError as exc:
            print(f"loopdyn: {exc}", file=sys.stderr)
            return 2
        print(repr(twin))
        model = twin.tree
    print(model.summary())
    clusters = len(model.clusters().clusters)
    print(
        f"bodies {model.nbodies}, clusters {clusters}, nq {model.nq}, nv {model.nv}, "
        f"total mass {model.mass:.6g} kg, {len(model.frames)} frames"
    )
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
