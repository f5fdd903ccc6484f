"""The course's simulator against numba-cuda's (issue 29): every lab reference kernel and every
answer of the kernel answer corpus (tests/kernel_answers) is checked by its checker with
``GPU_COURSE_SIM=compare``: each launch the checker makes runs on numba's simulator (whose
results the checker keeps) and on the course's engine with copies of the same inputs
(gpu_utils.sim.compare), and every launch must end with equal outputs, or both engines raising
the same kind of error, or, where numba's result is undefined on a GPU, an error from the
course's engine (a barrier not every thread reaches). Kernels with warp intrinsics run on both
(gu.warp's semantics); a kernel the engine cannot run is counted as not handled yet. The
checkers' traces (``gu.trace``, from chapter 04: races, coalescing, bank conflicts) run on both
engines too, and their reports must be equal field by field, for every answer, racy or not.

The default run covers lab 03's reference kernels; the whole corpus of every lab
is ``slow`` and runs only when asked for, ``pytest -m slow tests/test_sim_differential.py``
(about 6 minutes on this 2-core machine, lab 03 alone 80 s). ``python tests/test_sim_differential.py`` prints the counts for every lab.
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from pathlib import Path

import pytest
from kernel_answers import CORRECT, ch03, ch04, ch05, ch05_attention, ch06, load

import gpu_utils as gu
from answer_tables import _cached_solution_cells
from gpu_utils.exercises._isolation import shutdown

ROOT = Path(__file__).resolve().parent.parent
pytestmark = pytest.mark.skipif(gu.mode != "simulator", reason="compares simulator engines")

#: (lab, corpus module, constants of the lab's cells)
LABS = {
    "03_first_kernels": (ch03, None),
    "04_memory": (ch04, ch04.CONSTANTS),
    "05_parallel_patterns": (ch05, ch05.CONSTANTS),
    "05_attention": (ch05_attention, ch05_attention.CONSTANTS),
    "06_matmul": (ch06, ch06.CONSTANTS),
}
#: Errors of the course's engine for what numba's simulator runs but a GPU leaves undefined.
UNDEFINED_ON_A_GPU = ("BarrierDivergence",)

EQUAL, BOTH_RAISE, UNDEFINED, NOT_HANDLED, DIFFERENT = (
    "equal",
    "same error",
    "numba's undefined: course error",
    "not handled yet",
    "different",
)


def _verdict(record: dict) -> str:
    numba, course = record["numba_error"], record["course_error"]
    if course and course["type"] == "NotHandledYet":
        return NOT_HANDLED
    if numba is None and course is None:
        return DIFFERENT if record["differences"] else EQUAL
    if numba and course and numba["type"] in course["bases"]:
        return BOTH_RAISE
    if numba is None and course["type"] in UNDEFINED_ON_A_GPU:
        return UNDEFINED
    return DIFFERENT


def run_compared(items: list[tuple[str, str, object]]) -> dict[str, list[dict]]:
    """Check each (label, exercise id, kernel) with GPU_COURSE_SIM=compare; the launch records
    of each, by label."""
    log = Path(os.environ.get("TMPDIR", "/tmp")) / f"gu-sim-compare-{os.getpid()}.jsonl"
    log.write_text("")
    saved = {k: os.environ.get(k) for k in ("GPU_COURSE_SIM", "GPU_COURSE_SIM_LOG")}
    os.environ.update(GPU_COURSE_SIM="compare", GPU_COURSE_SIM_LOG=str(log))
    shutdown()  # the checker's processes start again with the variables set
    records: dict[str, list[dict]] = {}
    try:
        seen = 0
        for label, exercise_id, kernel in items:
            gu.exercises.check(exercise_id, kernel)
            lines = log.read_text().splitlines()
            records[label] = [json.loads(line) for line in lines[seen:]]
            seen = len(lines)
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        shutdown()
        log.unlink(missing_ok=True)
    return records


def lab_items(lab: str, references_only: bool = False) -> tuple[list, dict]:
    """The lab's reference kernels and (unless ``references_only``) its corpus, as (label,
    exercise id, kernel), and each label's answer kind (CORRECT for references)."""
    corpus, constants = LABS[lab]
    items, kinds = [], {}
    chapter = "05_parallel_patterns" if lab == "05_attention" else lab
    notebook = next((ROOT / "solutions").glob(f"{chapter[:2]}_*_lab.ipynb"))
    checked, namespace = _cached_solution_cells(notebook)
    for exercise_id in corpus.ANSWERS:
        if exercise_id in checked:
            label = f"{exercise_id}/reference"
            items.append((label, exercise_id, namespace[checked[exercise_id]]))
            kinds[label] = CORRECT
        for answer in corpus.ANSWERS[exercise_id]:
            if references_only:
                break
            label = f"{exercise_id}/{answer.name}"
            items.append((label, exercise_id, load(exercise_id, answer, constants)))
            kinds[label] = answer.kind
    return items, kinds


def trace_counts(records: dict[str, list[dict]]) -> Counter:
    """The checkers' traces: how many, how many with equal reports, with errors."""
    counts: Counter = Counter()
    for launches in records.values():
        for r in launches:
            if r.get("trace"):
                counts["traces"] += 1
                counts[_verdict(r)] += 1
    return counts


def summarise(records: dict[str, list[dict]], kinds: dict[str, str]) -> tuple[Counter, list]:
    """Counts of answers by their worst launch verdict, and the answers found different."""
    order = [EQUAL, BOTH_RAISE, NOT_HANDLED, UNDEFINED, DIFFERENT]
    counts: Counter = Counter()
    different = []
    for label, launches in records.items():
        verdicts = [_verdict(r) for r in launches] or ["no launch"]
        worst = max(verdicts, key=lambda v: order.index(v) if v in order else -1)
        counts[worst] += 1
        if worst == DIFFERENT:
            first = next(r for r in launches if _verdict(r) == DIFFERENT)
            different.append((label, kinds[label], first))
    return counts, different


def _check_lab(lab: str, references_only: bool = False) -> None:
    items, kinds = lab_items(lab, references_only)
    records = run_compared(items)
    counts, different = summarise(records, kinds)
    print(f"\n{lab}: {len(items)} answers, {dict(counts)}; traces: {dict(trace_counts(records))}")
    assert sum(len(r) for r in records.values()) > 0, "no launch was compared"
    # the checkers' traces give the same report on both engines (counts, races, divergence)
    traces_differ = [
        (label, r)
        for label, launches in records.items()
        for r in launches
        if r.get("trace") and _verdict(r) == DIFFERENT
    ]
    assert not traces_differ, traces_differ
    # a correct kernel (reference or alternative) gives numba's outputs exactly
    wrong_correct = [(label, r) for label, kind, r in different if kind == CORRECT]
    assert not wrong_correct, wrong_correct
    undefined_correct = [
        label
        for label, launches in records.items()
        if kinds[label] == CORRECT and any(_verdict(r) == UNDEFINED for r in launches)
    ]
    assert not undefined_correct, undefined_correct
    # a wrong answer differs only where its mistake makes numba's result undefined: a race or a
    # barrier only some threads reach (thread order), never by a plain formula or index mistake
    unexplained = [(label, kind, r) for label, kind, r in different if kind not in ("race",)]
    assert not unexplained, unexplained


def test_lab_03_references_on_both_engines():
    _check_lab("03_first_kernels", references_only=True)


@pytest.mark.slow
@pytest.mark.parametrize("lab", list(LABS))
def test_every_reference_and_corpus_answer_on_both_engines(lab, request):
    if "slow" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("5 minutes for the five labs: run with `-m slow`")
    _check_lab(lab)


def test_the_verdicts():
    base = {"numba_error": None, "course_error": None, "differences": [], "course_message": None}
    assert _verdict(base) == EQUAL
    assert _verdict({**base, "differences": ["argument 2: index (0,)"]}) == DIFFERENT
    index_error = {"type": "IndexError", "bases": ["IndexError", "Exception"]}
    ours = {"type": "IndexOutOfBounds", "bases": ["IndexOutOfBounds", "IndexError"]}
    assert _verdict({**base, "numba_error": index_error, "course_error": ours}) == BOTH_RAISE
    negative = {**base, "course_error": ours, "course_message": "... index -1 ..."}
    assert _verdict(negative) == DIFFERENT  # both wrap a[-1] (numba/numba#1533)
    assert _verdict({**base, "course_error": ours, "course_message": "index 9 is out"}) == DIFFERENT
    barrier = {"type": "BarrierDivergence", "bases": ["BarrierDivergence"]}
    assert _verdict({**base, "course_error": barrier}) == UNDEFINED
    assert _verdict({**base, "numba_error": index_error}) == DIFFERENT


if __name__ == "__main__":  # the counts for the report: python tests/test_sim_differential.py
    sys.path.insert(0, str(Path(__file__).parent))
    for lab in sys.argv[1:] or LABS:
        items, kinds = lab_items(lab)
        records = run_compared(items)
        counts, different = summarise(records, kinds)
        print(f"{lab}: {len(items)} answers: {dict(counts)}; traces: {dict(trace_counts(records))}")
        for label, launches in records.items():
            if any(_verdict(r) == UNDEFINED for r in launches):
                print(f"  numba's undefined: {label} ({kinds[label]})")
        for label, kind, record in different:
            print(f"  different: {label} ({kind}): {record['differences'] or record}")
