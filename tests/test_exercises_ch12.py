"""Checkers of lab 12 (Triton): the corpus in tests/triton_answers/ch12.py (the references and
alternative correct kernels pass; known mistakes fail with their own hint and without the words
of the others'), the lab's own solutions pass, and the interpreter's out-of-bounds guard."""

import pytest

pytest.importorskip("triton")  # the course's requirements pin it; without it, nothing to check

from answer_corpus import assert_corpus_shape, assert_fails_with_its_own_hint
from triton_answers import CORRECT, FORBIDDEN, Answer, ch12, load

import gpu_utils as gu

CHAPTER = "12_triton"
IDS = [
    "triton_vector_add",
    "triton_outer_add",
    "triton_row_sum",
    "triton_softmax",
    "triton_layernorm",
    "triton_matmul",
    "triton_flash_attention",
    "triton_cross_entropy",
    "triton_cross_entropy_backward",
]


def _params(correct: bool) -> list:
    return [
        pytest.param(exercise_id, answer, id=f"{exercise_id}/{answer.name}")
        for exercise_id, table in ch12.ANSWERS.items()
        for answer in table
        if (answer.kind == CORRECT) == correct
    ]


def test_lab_12_exercises_are_registered_in_order():
    assert gu.exercises.ids(CHAPTER) == IDS


def test_every_exercise_has_its_corpus():
    from triton_answers import ch12_backward, ch12_ramp  # tests/test_exercises_ch12_*.py

    tables = (ch12.ANSWERS, ch12_ramp.ANSWERS, ch12_backward.ANSWERS)
    answers = {k: v for table in tables for k, v in table.items()}
    assert set(answers) == set(IDS) and sum(map(len, tables)) == len(answers)
    assert_corpus_shape(answers)
    for exercise_id, table in answers.items():  # the reference and 2 alternatives at least
        assert "reference" in [a.name for a in table], exercise_id
        assert sum(a.kind == CORRECT for a in table) >= 3, exercise_id


@pytest.mark.parametrize("exercise_id, answer", _params(correct=True))
def test_correct_answers_pass(exercise_id, answer):
    result = gu.exercises.check(exercise_id, load(exercise_id, answer))
    assert result.passed, result.message
    assert "passed" in result.message


@pytest.mark.parametrize("exercise_id, answer", _params(correct=False))
def test_wrong_answers_fail_with_their_own_hint(exercise_id, answer):
    result = gu.exercises.check(exercise_id, load(exercise_id, answer))
    assert_fails_with_its_own_hint(result, answer, FORBIDDEN)


@pytest.mark.parametrize("exercise_id", IDS)
def test_a_stub_is_not_attempted_yet(exercise_id):
    stub = load(
        exercise_id,
        Answer(
            "stub",
            "@triton.jit\ndef kernel(x_ptr, BLOCK: tl.constexpr):\n    raise NotImplementedError()\n",
        ),
    )
    result = gu.exercises.check(exercise_id, stub)
    assert not result.passed and not result.attempted
    assert "not attempted yet" in result.message


@pytest.mark.parametrize("exercise_id", IDS)
def test_the_labs_solution_passes(exercise_id):
    from pathlib import Path

    from answer_tables import _cached_solution_cells

    notebook = Path(__file__).resolve().parent.parent / "solutions" / "12_triton_lab.ipynb"
    checked, namespace = _cached_solution_cells(notebook)
    result = gu.exercises.check(exercise_id, namespace[checked[exercise_id]])
    assert result.passed, result.message


@pytest.mark.parametrize(
    "outcome",
    [("unavailable", "no compiler here", None), ("RuntimeError", "the compiler crashed", None)],
    ids=["unavailable", "compiler-failed"],
)
def test_compiles_for_a_gpu_is_said_only_when_the_compiler_accepted_it(monkeypatch, outcome):
    from gpu_utils.triton_tools import triton_ir

    if gu.runtime.mode != "simulator":
        pytest.skip("the compile check runs only on the simulator")
    reference = next(a for a in ch12.ANSWERS["triton_vector_add"] if a.name == "reference")
    kernel = load("triton_vector_add", reference)
    exercise = gu.exercises.get("triton_vector_add")
    monkeypatch.setattr(triton_ir, "check", lambda *args, **kwargs: outcome)
    result = exercise.run(kernel)
    assert result.passed, result.message
    assert "compiles for a GPU" not in result.message
    # a skipped compile is said, with its reason (issue 30.2), not silent
    assert "could not compile it for a GPU here" in result.message, result.message
    assert outcome[1] in result.message and "interpreter only" in result.message
    monkeypatch.setattr(triton_ir, "check", lambda *args, **kwargs: None)
    result = exercise.run(kernel)
    assert result.passed and "It also compiles for a GPU (sm_80)." in result.message


def test_a_compiled_kernel_reaches_the_checker_when_triton_was_imported_after_the_exercises(
    tmp_path,
):
    """In GPU mode ``triton.jit`` makes a JITFunction, which holds locks and cannot be pickled as
    it is: the checker teaches pickle to send it by its Python function, even when the notebook
    imported triton only after ``gu.exercises`` had loaded (no GPU is needed to prepare it)."""
    import subprocess
    import sys
    import textwrap

    (tmp_path / "kernel.py").write_text(
        textwrap.dedent(
            """
            import triton
            import triton.language as tl


            @triton.jit
            def add(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
                offsets = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
                mask = offsets < n_elements
                x = tl.load(x_ptr + offsets, mask=mask)
                tl.store(out_ptr + offsets, x + tl.load(y_ptr + offsets, mask=mask), mask=mask)
            """
        )
    )
    script = textwrap.dedent(
        f"""
        import os, pickle, sys
        sys.path.insert(0, {str(tmp_path)!r})
        os.environ.pop("TRITON_INTERPRET", None)
        import gpu_utils.exercises as ex
        assert "triton" not in sys.modules
        import kernel
        assert type(kernel.add).__name__ == "JITFunction", type(kernel.add)
        payload, problem = ex._prepare(ex.get("triton_vector_add"), kernel.add)
        assert problem is None, problem
        print(type(pickle.loads(payload)).__name__)
        """
    )
    env = {k: v for k, v in __import__("os").environ.items() if k != "TRITON_INTERPRET"}
    env["GPU_COURSE_MODE"] = "gpu"  # JITFunction, as on a GPU; nothing here launches it
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "JITFunction"
