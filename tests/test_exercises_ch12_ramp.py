"""Checkers of lab 12's ramp (exercises 2 and 3, ``gpu_utils/exercises/ch12_triton_ramp.py``):
the corpus in tests/triton_answers/ch12_ramp.py (the references and alternative correct kernels
pass; known mistakes fail with their own hint and without the words of the others'), the lab's
own solutions pass, a stub is not attempted yet, and every case list holds sizes 1, 2 and 3, a
size that is not a power of two, sizes that are not multiples of the block and more than one
block along each dimension."""

import numpy as np
import pytest

pytest.importorskip("triton")  # the course's requirements pin it; without it, nothing to check

from answer_corpus import assert_corpus_shape, assert_fails_with_its_own_hint
from triton_answers import CORRECT, FORBIDDEN, Answer, ch12_ramp, load

import gpu_utils as gu

IDS = ["triton_outer_add", "triton_row_sum"]


def _params(correct: bool) -> list:
    return [
        pytest.param(exercise_id, answer, id=f"{exercise_id}/{answer.name}")
        for exercise_id, table in ch12_ramp.ANSWERS.items()
        for answer in table
        if (answer.kind == CORRECT) == correct
    ]


def test_the_ramp_sits_between_the_vector_add_and_the_softmax():
    ids = gu.exercises.ids("12_triton")
    start = ids.index("triton_vector_add")
    assert ids[start : start + 4] == ["triton_vector_add", *IDS, "triton_softmax"]


def test_every_exercise_has_its_corpus():
    assert set(ch12_ramp.ANSWERS) == set(IDS)
    assert_corpus_shape(ch12_ramp.ANSWERS)
    for exercise_id, table in ch12_ramp.ANSWERS.items():  # the reference and 2 alternatives
        assert "reference" in [a.name for a in table], exercise_id
        assert sum(a.kind == CORRECT for a in table) >= 3, exercise_id


def test_every_case_list_has_small_sizes_odd_sizes_and_several_blocks():
    from gpu_utils.exercises import ch12_triton_ramp as ramp

    rng = np.random.default_rng(0)
    outer = ramp._outer_cases(rng)
    dims = {d for case in outer for d in (case.args["M"], case.args["N"])}
    assert {1, 2, 3} <= dims
    assert any(d & (d - 1) for d in dims)  # not a power of two
    assert any(c.args["M"] % c.constexprs["BLOCK_M"] for c in outer)
    assert any(c.args["N"] % c.constexprs["BLOCK_N"] for c in outer)
    assert any(c.grid[0] > 1 and c.grid[1] > 1 and c.grid[0] != c.grid[1] for c in outer)
    assert any(c.args["out_row_stride"] != c.args["N"] for c in outer)
    rows = ramp._row_sum_cases(rng)
    sizes = {d for case in rows for d in (case.grid[0], case.args["n_cols"])}
    assert {1, 2, 3} <= sizes
    assert any(c.args["n_cols"] % c.constexprs["BLOCK_SIZE"] for c in rows)
    assert any(c.args["n_cols"] > 2 * c.constexprs["BLOCK_SIZE"] for c in rows)
    assert any(c.args["x_row_stride"] != c.args["n_cols"] for c in rows)
    for case in outer + rows:  # outputs poisoned, inputs never all zeros, fresh each check
        assert all(np.isnan(case.args[name].numpy()).all() for name in case.outputs)
    again = ramp._outer_cases(np.random.default_rng(1))
    assert not np.array_equal(outer[0].extra["x"], again[0].extra["x"])


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
