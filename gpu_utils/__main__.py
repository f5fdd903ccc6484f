"""Command line: ``python -m gpu_utils doctor [--json]`` (preflight) and
``python -m gpu_utils summary FILES`` (a class summary of attendees' reports and progress files)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from .diagnostics import diagnose, render


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m gpu_utils")
    commands = parser.add_subparsers(dest="command", required=True)
    doctor = commands.add_parser("doctor", help="explain this machine and how to fix problems")
    doctor.add_argument("--json", action="store_true", help="machine-readable, for preflight")
    summary = commands.add_parser("summary", help="summarise attendees' doctor --json reports")
    summary.add_argument(
        "paths", nargs="+", type=Path, help="doctor --json outputs, progress files"
    )
    args = parser.parse_args(argv)
    if args.command == "summary":
        from .authoring.workshop import summarise

        print(summarise(args.paths))
        return 0
    report = diagnose()
    print(json.dumps(report, indent=2) if args.json else render(report))
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
