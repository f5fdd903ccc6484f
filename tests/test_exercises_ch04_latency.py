"""Checkers of lab 04's latency exercises (gu.exercises.ch04_latency): correct answers written
differently from the solutions pass; common mistakes fail with their own hint; odd answers get a
message, never a traceback; a stub is 'not attempted yet'."""

import pytest

import gpu_utils as gu
from answer_tables import returns

check = gu.exercises.check
H100 = gu.specs.get("H100-SXM")

CORRECT = {
    "littles_law_in_flight": [
        returns(2.01e6),
        lambda: 600e-9 * 3350e9,
        lambda: gu.latency.bytes_in_flight(600e-9, H100.hbm_bandwidth),
    ],
    "littles_law_loads_per_thread": [
        returns(1.86),
        lambda: 600e-9 * H100.hbm_bandwidth / 4 / (H100.sm_count * 2048),
        lambda: (0.6e-6 * 3.35e12) / (132 * 64 * 32 * 4),  # 64 warps of 32 threads per SM
    ],
}

MISTAKES = {
    "littles_law_in_flight": [
        (600 * 3.35e12, "must be in seconds"),
        (600e-9 * 3350, "not in GB/s"),
        (600e-9 * 3.35e12 / 132, "the share of one SM"),
        (3.35e12 / 600e-9, "Little's law multiplies"),
        (8 * 600e-9 * 3.35e12, "not bits"),
        (1e3, "latency (s) x bandwidth"),  # anything else: the general hint
    ],
    "littles_law_loads_per_thread": [
        (7.44, "each float32 load brings 4 bytes"),
        (245.4, "shared by 132 x 2,048 threads"),
        (0.465, "float4 loads"),
        (59.5, "count threads, not warps"),
        (10.0, "SMs x threads per SM x bytes per load"),
    ],
}


def test_the_exercises_are_registered_in_chapter_04():
    assert set(CORRECT) <= set(gu.exercises.ids("04_memory"))
    assert set(CORRECT) == set(MISTAKES)


@pytest.mark.parametrize(
    "exercise_id, answer", [(e, a) for e, answers in CORRECT.items() for a in answers]
)
def test_correct_answers_pass(exercise_id, answer):
    result = check(exercise_id, answer)
    assert result.passed, result.message


@pytest.mark.parametrize(
    "exercise_id, value, hint", [(e, v, h) for e, cases in MISTAKES.items() for v, h in cases]
)
def test_mistakes_fail_with_their_hint(exercise_id, value, hint):
    result = check(exercise_id, returns(value))
    assert not result.passed
    assert hint in result.message, result.message


@pytest.mark.parametrize("exercise_id", list(CORRECT))
@pytest.mark.parametrize(
    "odd, words",
    [
        (None, "not a number"),
        ("2 MB", "not a number"),
        (10**400, "too large for a float"),
        (float("nan"), "returned nan"),
    ],
)
def test_odd_answers_get_a_message(exercise_id, odd, words):
    result = check(exercise_id, returns(odd))
    assert not result.passed and words in result.message, result.message


@pytest.mark.parametrize("exercise_id", list(CORRECT))
def test_a_stub_is_not_attempted_yet_and_a_value_is_not_a_function(exercise_id):
    def stub():
        raise NotImplementedError()

    result = check(exercise_id, stub)
    assert not result.passed and not result.attempted
    assert "not attempted yet" in result.message
    result = check(exercise_id, 2.01e6)  # the number itself, not a function returning it
    assert not result.passed and "function" in result.message
