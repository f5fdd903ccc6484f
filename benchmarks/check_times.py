"""How long a kernel check takes on each simulator engine: every reference answer of the kernel
labs (03-06 and 05's attention exercises, from solutions/) checked with
``gu.exercises.check`` once on numba-cuda's simulator (``GPU_COURSE_SIM=numba``) and once on the
course's (the default), each in the checker's own worker process as a learner's check runs. Prints
each exercise's wall time on both and the median and 90th percentile per engine. Not a timed
test: a benchmark to run by hand (simulator timings, not GPU performance)::

    GPU_COURSE_MODE=simulator .venv/bin/python benchmarks/check_times.py
    GPU_COURSE_MODE=simulator .venv/bin/python benchmarks/check_times.py --labs 03 04

The first check on each engine also starts the checker's worker; it is run once before timing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("GPU_COURSE_MODE", "simulator")
# a pass is recorded as progress: not in the learner's own file
os.environ["GPU_COURSE_PROGRESS"] = os.path.join(
    os.environ.get("TMPDIR", "/tmp"), "gpu-course-check-times-progress.json"
)
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the solutions' cells, as the tests read them

import gpu_utils as gu  # noqa: E402
from answer_tables import _cached_solution_cells  # noqa: E402
from gpu_utils.exercises._isolation import shutdown  # noqa: E402

LABS = ("03", "04", "05", "06")


def references(labs) -> list[tuple[str, object]]:
    """(exercise id, reference kernel) for every kernel exercise of the labs' solutions."""
    found = []
    for lab in labs:
        notebook = next((ROOT / "solutions").glob(f"{lab}_*_lab.ipynb"))
        checked, namespace = _cached_solution_cells(notebook)
        for exercise_id, name in checked.items():
            answer = namespace[name]
            if hasattr(answer, "py_func"):  # a @cuda.jit kernel
                found.append((exercise_id, answer))
    return found


def timed(engine: str, items) -> dict[str, float]:
    os.environ["GPU_COURSE_SIM"] = engine
    shutdown()  # the worker starts again with the engine set
    seconds = {}
    try:
        gu.exercises.check(*items[0])  # starts the worker
        for exercise_id, answer in items:
            start = time.perf_counter()
            result = gu.exercises.check(exercise_id, answer)
            seconds[exercise_id] = time.perf_counter() - start
            if not result.passed:
                print(f"  {engine}: {exercise_id} did not pass: {result.message[:120]}")
    finally:
        shutdown()
    return seconds


def percentile(values, q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--labs", nargs="*", default=LABS, help="lab numbers (default: 03-06)")
    options = parser.parse_args(argv)
    if gu.mode != "simulator":
        print("run in simulator mode (GPU_COURSE_MODE=simulator): it compares the two simulators")
        return 2
    items = references(options.labs)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"simulator timings, not GPU performance; {len(items)} reference answers, "
        f"{os.cpu_count()} CPUs, load average {load:.1f} at the start"
    )
    numba = timed("numba", items)
    course = timed("course", items)
    print(f"{'exercise':40} {'numba s':>9} {'course s':>9} {'ratio':>7}")
    for exercise_id, _ in items:
        n, c = numba[exercise_id], course[exercise_id]
        print(f"{exercise_id:40} {n:9.2f} {c:9.2f} {n / c:6.1f}x")
    for name, values in (("numba", numba.values()), ("course", course.values())):
        values = list(values)
        print(
            f"{name:7} median {statistics.median(values):.2f} s, "
            f"p90 {percentile(values, 0.9):.2f} s, total {sum(values):.1f} s"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
