"""The standard, table-driven checker tests.

Value exercises: a test module lists, per exercise, correct answers (written differently from the
solutions) and known mistakes (value, the words its hint must contain), then takes the four tests
of ``answer_table_tests``. Kernel exercises: the chapter's corpus in ``tests/kernel_answers``
(kernel source text) gives the tests of ``kernel_table_tests``, and ``solution_kernel_tests``
checks the lab's own solutions with the same checkers.
"""

import os
import re
from pathlib import Path

import pytest
from answer_corpus import assert_corpus_shape, assert_fails_with_its_own_hint

import gpu_utils as gu


def returns(value):
    """An answer function that returns ``value``."""
    return lambda: value


def answer_table_tests(chapter: str, correct: dict, mistakes: dict):
    """Tests: every exercise covered; correct answers pass; each mistake gets its hint; stubs."""

    def test_every_exercise_of_the_chapter_is_tested():
        assert set(gu.exercises.ids(chapter)) == set(correct) == set(mistakes)

    @pytest.mark.parametrize(
        "exercise_id, answer", [(e, a) for e, answers in correct.items() for a in answers]
    )
    def test_correct_answers_pass(exercise_id, answer):
        result = gu.exercises.check(exercise_id, answer)
        assert result.passed, result.message
        assert "passed" in result.message

    @pytest.mark.parametrize(
        "exercise_id, value, hint", [(e, v, h) for e, cases in mistakes.items() for v, h in cases]
    )
    def test_mistakes_fail_with_their_hint(exercise_id, value, hint):
        result = gu.exercises.check(exercise_id, returns(value))
        assert not result.passed
        assert hint in result.message, result.message

    @pytest.mark.parametrize("exercise_id", list(correct))
    def test_a_stub_is_not_attempted_yet(exercise_id):
        def stub():
            raise NotImplementedError()

        result = gu.exercises.check(exercise_id, stub)
        assert not result.passed and not result.attempted
        assert "not attempted yet" in result.message

    return (
        test_every_exercise_of_the_chapter_is_tested,
        test_correct_answers_pass,
        test_mistakes_fail_with_their_hint,
        test_a_stub_is_not_attempted_yet,
    )


# --- kernel exercises: a corpus of answers as source text (tests/kernel_answers) ---------------


def _params(answers: dict, correct: bool) -> list:
    """pytest params (exercise_id, answer) with ids exercise/name, xfail where a fix is awaited."""
    from kernel_answers import CORRECT

    params = []
    for exercise_id, table in answers.items():
        for answer in table:
            if (answer.kind == CORRECT) != correct:
                continue
            marks = (
                [pytest.mark.xfail(strict=True, reason=answer.waiting)] if answer.waiting else []
            )
            params.append(
                pytest.param(exercise_id, answer, id=f"{exercise_id}/{answer.name}", marks=marks)
            )
    return params


def kernel_table_tests(
    chapter: str, answers: dict, constants: dict | None = None, elsewhere: tuple[str, ...] = ()
):
    """Tests for a chapter's kernel exercises from its corpus ``answers`` ({exercise_id:
    [Answer, ...]}): every kernel exercise has at least two correct alternatives and six wrong
    answers of at least four kinds; alternatives pass; each wrong answer fails with its hint,
    without the words of another mistake's hint, and no message shows a traceback or the
    simulator's internals. ``constants`` are the lab's module-level names (BLOCK, TILE, ...);
    ``elsewhere`` the chapter's kernel exercises whose corpus another test module holds."""
    from kernel_answers import FORBIDDEN, load

    def test_every_kernel_exercise_has_its_corpus():
        kernels = [e for e in gu.exercises.ids(chapter) if gu.exercises.get(e).kind == "kernel"]
        assert set(answers) == set(kernels) - set(elsewhere)
        assert_corpus_shape(answers)

    @pytest.mark.parametrize("exercise_id, answer", _params(answers, correct=True))
    def test_alternative_correct_answers_pass(exercise_id, answer):
        result = gu.exercises.check(exercise_id, load(exercise_id, answer, constants))
        assert result.passed, result.message
        assert "passed" in result.message

    @pytest.mark.parametrize("exercise_id, answer", _params(answers, correct=False))
    def test_wrong_answers_fail_with_their_own_hint(exercise_id, answer):
        result = gu.exercises.check(exercise_id, load(exercise_id, answer, constants))
        assert_fails_with_its_own_hint(result, answer, FORBIDDEN)

    return (
        test_every_kernel_exercise_has_its_corpus,
        test_alternative_correct_answers_pass,
        test_wrong_answers_fail_with_their_own_hint,
    )


def _solution_cells(notebook: Path) -> tuple[dict, dict]:
    """From a solution notebook: {exercise_id: name checked}, and the namespace made by running
    only its cells of imports, assignments and definitions (never a launch, a plot or a check)."""
    import ast
    import json
    import linecache

    quiet = (ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign, ast.FunctionDef)
    checked, namespace = {}, {"__name__": "__main__", "gu": gu}  # as after the first cell
    cells = json.loads(notebook.read_text())["cells"]
    for number, cell in enumerate(cells):
        if cell["cell_type"] != "code":
            continue
        text = "".join(cell["source"])
        checked.update(re.findall(r'gu\.exercises\.check\(\s*"(\w+)",\s*(\w+)\s*\)', text))
        try:
            tree = ast.parse(text)
        except SyntaxError:  # a shell or magic line (`!pip ...`, `%time`): not Python to run
            continue
        if tree.body and all(isinstance(node, quiet) for node in tree.body):
            filename = f"/tmp/ipykernel_solutions/{notebook.stem}_{number}.py"
            linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
            exec(compile(tree, filename, "exec"), namespace)
    return checked, namespace


def solution_kernel_tests(chapter: str):
    """A test that the lab's own solution passes each kernel exercise of ``chapter``, with the
    checker's current cases (adversarial inputs included), without executing the notebook."""
    notebook = Path(__file__).resolve().parent.parent / "solutions" / f"{chapter}_lab.ipynb"
    if not notebook.exists():  # chapter 06's lab is called 06_matmul_lab
        notebook = next(notebook.parent.glob(f"{chapter[:2]}_*_lab.ipynb"))
    kernels = [e for e in gu.exercises.ids(chapter) if gu.exercises.get(e).kind == "kernel"]

    @pytest.mark.parametrize("exercise_id", kernels)
    def test_the_labs_solution_passes(exercise_id):
        checked, namespace = _cached_solution_cells(notebook)
        result = gu.exercises.check(exercise_id, namespace[checked[exercise_id]])
        assert result.passed, result.message

    return test_the_labs_solution_passes


_SOLUTIONS: dict = {}


def _cached_solution_cells(notebook: Path) -> tuple[dict, dict]:
    if notebook not in _SOLUTIONS:
        _SOLUTIONS[notebook] = _solution_cells(notebook)
    return _SOLUTIONS[notebook]


# --- code exercises of labs 09-11: a corpus of answers as source text (tests/dist_answers) ------

#: Seconds within which the check of a looping answer must end (COURSE_DESIGN: 20 s).
LOOP_SECONDS = 20.0


def _dist_params(answers: dict, correct: bool) -> list:
    from dist_answers import CORRECT

    return [
        pytest.param(exercise_id, answer, id=f"{exercise_id}/{answer.name}")
        for exercise_id, table in answers.items()
        for answer in table
        if (answer.kind == CORRECT) == correct
    ]


def dist_verdict(exercise_id: str, answer, module=None, monkeypatch=None):
    """(CheckResult, seconds, printed text) of one corpus answer: checked in this process
    (``exercise.run``), or through ``gu.exercises.check`` when the answer asks for the worker;
    a deadlock's shorter seconds per run are set on ``module`` with ``monkeypatch``."""
    import contextlib
    import io
    import time

    from dist_answers import load

    function = load(exercise_id, answer)
    if answer.run_timeout and module is not None and monkeypatch is not None:
        monkeypatch.setattr(module, "RUN_TIMEOUT", answer.run_timeout)
    if not answer.worker and monkeypatch is not None and hasattr(module, "_interleaved"):
        # the capstone's speed measurement (seconds per check) decides nothing: skip it here
        monkeypatch.setattr(module, "_interleaved", lambda fns, repeat=5: dict.fromkeys(fns, 1.0))
    printed = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed):
        if answer.worker:
            gu.exercises.check(exercise_id, 42)  # a checker process already started, as in a lab
            start = time.perf_counter()
            result = gu.exercises.check(exercise_id, function)
        else:
            result = gu.exercises.get(exercise_id).run(function)
    return result, time.perf_counter() - start, printed.getvalue() + result.output


def dist_table_tests(chapter: str, answers: dict, module=None):
    """Tests for a lab's code exercises from its corpus ``answers`` ({exercise_id: [Answer]}):
    every code exercise has at least two correct alternatives and six wrong answers of at least
    four kinds; alternatives pass; each wrong answer fails with its own hint and without the
    words of others, no message shows a traceback, a private name of the checker or a gloo log
    line (nor does anything printed), and a looping answer is stopped within LOOP_SECONDS."""
    from dist_answers import FORBIDDEN

    def test_every_code_exercise_has_its_corpus():
        def runs_code(exercise_id):  # a function exercise of ``module``, not a question
            exercise = gu.exercises.get(exercise_id)
            run = getattr(exercise.run, "func", exercise.run)
            return (
                exercise.kind == "function"
                and not getattr(run, "__qualname__", "").startswith("numeric_exercise")
                and (module is None or run.__module__ == module.__name__)
            )

        code = [e for e in gu.exercises.ids(chapter) if runs_code(e)]
        assert set(answers) == set(code)
        assert_corpus_shape(answers)

    @pytest.mark.parametrize("exercise_id, answer", _dist_params(answers, correct=True))
    def test_alternative_correct_answers_pass(exercise_id, answer, monkeypatch):
        result, _, printed = dist_verdict(exercise_id, answer, module, monkeypatch)
        assert result.passed, result.message
        for words in FORBIDDEN:
            assert words not in result.message + printed, (words, printed)

    @pytest.mark.parametrize("exercise_id, answer", _dist_params(answers, correct=False))
    def test_wrong_answers_fail_with_their_own_hint(exercise_id, answer, monkeypatch):
        result, seconds, printed = dist_verdict(exercise_id, answer, module, monkeypatch)
        assert_fails_with_its_own_hint(result, answer, FORBIDDEN)
        for words in FORBIDDEN:
            assert words not in printed, (words, printed)
        if answer.kind == "loop":  # the promise holds on a machine not busy with other work
            busy = max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
            assert seconds < LOOP_SECONDS * busy, f"a looping answer took {seconds:.1f} s"

    return (
        test_every_code_exercise_has_its_corpus,
        test_alternative_correct_answers_pass,
        test_wrong_answers_fail_with_their_own_hint,
    )
