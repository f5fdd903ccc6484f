"""Run a held-out file's answers as the lab's check cells do and print every verdict and message.

    .venv/bin/python tests/heldout/report.py lab10_planner --half tune [--name NAME ...] [--source]

A wrong answer's hint is judged right or wrong by reading it against the answer's ``cause``;
this script prints both side by side and counts false passes, false rejections and leaks."""

from __future__ import annotations

import argparse
import collections
import importlib
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/, so `heldout` imports

import gpu_utils as gu
from heldout import submitted, verdict


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lab", help="a module of tests/heldout, e.g. lab10_planner")
    parser.add_argument("--half", choices=("tune", "held", "held2", "both"), default="tune")
    parser.add_argument("--name", nargs="*", default=None, help="only these answers")
    parser.add_argument("--source", action="store_true", help="print each answer's source too")
    args = parser.parse_args()
    answers = importlib.import_module(f"heldout.{args.lab}").ANSWERS
    counts = collections.Counter()
    for answer in answers:
        if args.half != "both" and answer.half != args.half:
            continue
        if args.name and answer.name not in args.name:
            continue
        start = time.perf_counter()
        try:
            result = gu.exercises.check(answer.exercise_id, submitted(answer))
        except Exception as error:  # the cell itself failed: the answer, not the checker
            print(f"### {answer.name}: the cell raised {type(error).__name__}: {error}\n")
            counts["cell error"] += 1
            continue
        seconds = time.perf_counter() - start
        v = verdict(answer, result)
        counts[v] += 1
        counts["wrong" if not answer.correct else "right"] += 1
        label = "right answer" if answer.correct else f"cause: {answer.cause}"
        print(f"### {answer.name} [{answer.exercise_id}] {v} ({seconds:.1f} s)\n{label}")
        if args.source:
            print(answer.source.strip("\n"))
        print("message: " + result.message.replace("\n", "\n         ") + "\n")
    print(dict(counts))


if __name__ == "__main__":
    main()
