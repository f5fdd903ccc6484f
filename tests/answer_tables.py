"""The standard checker tests for a chapter whose answers are functions returning a value.

A test module lists, per exercise, correct answers (written differently from the solutions) and
known mistakes (value, the words its hint must contain), then takes the four tests from here.
"""

import pytest

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
