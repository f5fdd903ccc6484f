"""Run the checkers' answer corpora and print the verdicts and their times: the kernel labs'
(chapters 03-06, tests/kernel_answers) and the code exercises of labs 09-11 (tests/dist_answers).

    python benchmarks/checker_corpus.py                 # every answer of both corpora
    python benchmarks/checker_corpus.py --only ch05     # one chapter's module
    python benchmarks/checker_corpus.py --only ch09 ch10 ch11

Each answer is checked the way a learner's cell is, through ``gu.exercises.check`` (the
checker's own worker process, time limit and all). A correct alternative that fails is a false
rejection; a wrong answer that passes is a false pass; a wrong answer whose message lacks the
words of its hint (or shows another mistake's words) has the wrong hint; a message with a
traceback or the simulator's internals is a leak. The table counts each, then gives the median
and maximum seconds per check on this machine (wall-clock time of ``check``, simulator mode:
the speed of the course's checking, not of any GPU). The test suite asserts the same verdicts
(tests/test_exercises_ch0*.py); this script adds the timings, which tests do not assert.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import gpu_utils as gu  # before numba (which the corpus imports): it picks the mode

# The passes of this run go to a scratch progress file, never into a learner's own.
os.environ.setdefault("GPU_COURSE_PROGRESS", os.path.join(tempfile.gettempdir(), "corpus.json"))

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the corpus lives there

import dist_answers
from kernel_answers import CORRECT, FORBIDDEN, load

KERNEL_MODULES = ("ch03", "ch04", "ch05", "ch05_attention", "ch06")
DIST_MODULES = ("ch09", "ch10", "ch11")
MODULES = KERNEL_MODULES + DIST_MODULES


def verdict(exercise_id: str, answer, constants: dict | None) -> tuple[str, float]:
    """('ok' | 'false pass' | 'false rejection' | 'wrong hint' | 'leak', seconds)."""
    kernel = load(exercise_id, answer, constants)
    start = time.perf_counter()
    result = gu.exercises.check(exercise_id, kernel)
    seconds = time.perf_counter() - start
    message = result.message
    if any(words in message for words in FORBIDDEN):
        return "leak", seconds
    if answer.kind == CORRECT:
        return ("ok" if result.passed else "false rejection"), seconds
    if result.passed:
        return "false pass", seconds
    hinted = all(w in message for w in answer.hints) and not any(
        w in message for w in answer.absent
    )
    return ("ok" if hinted else "wrong hint"), seconds


def dist_verdict(exercise_id: str, answer) -> tuple[str, float]:
    """The same verdicts for an answer of labs 09-11 (multi-process checks, the capstone's),
    also checked through ``gu.exercises.check``; a message or anything printed with a gloo log
    line or a private name of the checker is a leak, and so is a looping answer whose check
    took more than 20 s."""
    function = dist_answers.load(exercise_id, answer)
    start = time.perf_counter()
    result = gu.exercises.check(exercise_id, function)
    seconds = time.perf_counter() - start
    seen = result.message + result.output
    if any(words in seen for words in dist_answers.FORBIDDEN):
        return "leak", seconds
    if answer.kind == dist_answers.CORRECT:
        return ("ok" if result.passed else "false rejection"), seconds
    if result.passed:
        return "false pass", seconds
    if answer.kind == "loop" and seconds > 20.0:
        return "slow loop", seconds
    hinted = all(w in result.message for w in answer.hints) and not any(
        w in result.message for w in answer.absent
    )
    return ("ok" if hinted else "wrong hint"), seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", choices=MODULES, default=list(MODULES))
    options = parser.parse_args()
    if gu.mode != "simulator":
        print("The corpus is timed in simulator mode (what a learner without a GPU waits for).")
        print("Run it as: GPU_COURSE_MODE=simulator python benchmarks/checker_corpus.py")
        return 2
    import importlib

    counts: dict[str, int] = {}
    seconds: list[float] = []
    problems: list[str] = []
    for name in options.only:
        kernels = name in KERNEL_MODULES
        package = "kernel_answers" if kernels else "dist_answers"
        module = importlib.import_module(f"{package}.{name}")
        constants = getattr(module, "CONSTANTS", None)
        for exercise_id, table in module.ANSWERS.items():
            for answer in table:
                if getattr(answer, "waiting", None):
                    continue  # a known gap, an xfail in the tests
                if kernels:
                    outcome, took = verdict(exercise_id, answer, constants)
                else:
                    outcome, took = dist_verdict(exercise_id, answer)
                counts[outcome] = counts.get(outcome, 0) + 1
                seconds.append(took)
                if outcome != "ok":
                    problems.append(f"  {outcome}: {exercise_id}/{answer.name}")
                print(f"{took:7.2f} s  {outcome:16s} {exercise_id}/{answer.name}", flush=True)
    print()
    print(f"answers checked: {len(seconds)}")
    for outcome in ("ok", "false pass", "false rejection", "wrong hint", "leak", "slow loop"):
        print(f"  {outcome:16s} {counts.get(outcome, 0)}")
    print(
        f"seconds per check: median {statistics.median(seconds):.2f}, "
        f"max {max(seconds):.2f} (simulator mode, this machine; load average "
        f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores at the end)"
    )
    print("\n".join(problems))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
