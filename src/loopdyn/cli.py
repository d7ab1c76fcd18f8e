"""Command line: ``loopdyn bench`` and ``loopdyn info``."""

from __future__ import annotations

import argparse
import sys

from . import __version__


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="loopdyn", description="Rigid-body dynamics for robots with loops.")
    parser.add_argument("--version", action="version", version=f"loopdyn {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("bench", help="time loopdyn against Pinocchio (if installed) on the benchmark robots")
    b.add_argument("--quick", action="store_true", help="fewer robots and repeats (about a minute)")
    b.add_argument("--out", metavar="DIR", help="write DIR/results.json with every number printed")
    b.add_argument("--batch-states", type=int, default=None, help="states per batch call (default 20000)")
    i = sub.add_parser("info", help="describe a robot: an example robot name or a URDF path")
    i.add_argument("robot")
    i.add_argument("--floating", action="store_true", help="URDF path: add a free-flyer root joint")
    args = parser.parse_args(argv)

    if args.command == "bench":
        from .bench.trees import run

        run(quick=args.quick, out_dir=args.out, batch_states=args.batch_states)
        return 0
    if args.command == "info":
        from . import io, robots

        try:
            path, floating = robots.example_robot_urdf(args.robot)
        except KeyError:
            path, floating = args.robot, args.floating
        except FileNotFoundError as exc:
            print(f"loopdyn: {exc}", file=sys.stderr)
            return 2
        try:
            model = io.load_urdf(path, floating_base=floating)
        except (OSError, ValueError, NotImplementedError) as exc:
            print(f"loopdyn: {exc}", file=sys.stderr)
            return 2
        print(model.summary())
        print(f"total mass {model.mass:.3f} kg, {len(model.frames)} frames")
        return 0
    return 1  # pragma: no cover


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
