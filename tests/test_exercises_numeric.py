"""The numeric-exercise machinery, on an exercise registered just for this test."""

import pytest

from gpu_utils.exercises import _numeric, _registry

ANSWER = _numeric.NumericAnswer(
    expected=14.0, unit="GB", rel_tol=0.01, mistakes={112.0: "bits, not bytes"}, hint="2 bytes"
)
EXERCISE = _numeric.numeric_exercise(
    id="test_numeric", chapter="test", title="t", question="q?", answer=ANSWER
)


def run(function):
    return EXERCISE.run(function)


def test_right_answer_within_tolerance_passes():
    assert run(lambda: 14.05).passed


@pytest.mark.parametrize(
    "function, text",
    [
        (lambda: 112.0, "bits, not bytes"),
        (lambda: 20.0, "1.43x the expected"),
        (lambda: "14", "not a number"),
        (lambda: 1 / 0, "ZeroDivisionError"),
        (lambda: 2 * 4096**4096, "too large for a float (about 10^"),
        (lambda: float("nan"), "returned nan"),
        (lambda: float("-inf"), "returned -inf"),
        (lambda: None, "returned None (NoneType), not a number"),
        (lambda: [14.0], "(list), not a number"),
        (lambda: 14 + 0j, "(complex), not a number"),
        (lambda: "x" * 500, "..."),
        (lambda: [2**20000], "a value (list)"),
        (lambda: {}["key"], "KeyError"),
        (lambda: exit(), "SystemExit"),
    ],
)
def test_wrong_answers_explain_themselves(function, text):
    result = run(function)
    assert not result.passed and text in result.message, result.message
    assert "Traceback" not in result.message and len(result.message) < 600


def test_nan_without_an_exercise_hint_still_gets_one():
    bare = _numeric.numeric_exercise(
        id="test_numeric_bare",
        chapter="test",
        title="t",
        question="q?",
        answer=_numeric.NumericAnswer(expected=14.0),
    )
    result = bare.run(lambda: float("nan"))
    assert "Hint:" in result.message and "0/0" in result.message


def test_stub_is_not_attempted():
    def stub():
        raise NotImplementedError()

    result = run(stub)
    assert not result.attempted and "not attempted yet" in result.message


def test_a_bare_number_gets_a_hint():
    assert "wrap your calculation" in run(14.0).message


def test_numeric_exercises_register_like_kernels():
    assert EXERCISE.kind == "function"
    assert _registry.KINDS == ("kernel", "function", "value")
