"""Checkers of lab 03's stream exercises (gu.exercises.ch03_streams): correct answers written
differently from the solutions pass; common mistakes fail with their own hint; odd answers get a
message, never a traceback; a stub is 'not attempted yet'."""

import pytest

import gpu_utils as gu
from answer_tables import returns

check = gu.exercises.check

CORRECT_TIME = [
    returns(9.25),
    lambda: (8 + 6 + 4) / 8 + 7 * max(8, 6, 4) / 8,
    lambda: gu.streams.schedule(8, 6, 4, chunks=8, streams=4).total,
]

TIME_MISTAKES = [
    (8.0, "add the pipeline fill"),
    (7.0, "leaves out the pipeline fill"),
    (18.0, "max, not sum"),
    (10.25, "(k - 1) x max / k"),
    (12.75, "two copy engines"),
    (12.0, "two copy engines"),
    (2.25, "one chunk's trip"),
    (0.00925, "milliseconds, not seconds"),
    (7.5, "the kernel is not the slowest stage"),
    (3.0, "fill + (k - 1) x slowest / k"),  # anything else: the general hint
]


def pipeline_by_stages(t_in, t_compute, t_out, chunks):
    per = [t / chunks for t in (t_in, t_compute, t_out)]
    return sum(per) + (chunks - 1) * max(per)


def pipeline_by_simulation(t_in, t_compute, t_out, chunks):  # finish times, stage by stage
    done = [0.0, 0.0, 0.0]
    for _ in range(chunks):
        ready = 0.0
        for s, t in enumerate((t_in, t_compute, t_out)):
            done[s] = max(done[s], ready) + t / chunks
            ready = done[s]
    return done[2]


CORRECT_FUNCTIONS = [
    pipeline_by_stages,
    pipeline_by_simulation,
    lambda i, c, o, k: gu.streams.pipeline_time(i, c, o, k),
]

FUNCTION_MISTAKES = [
    (lambda i, c, o, k: max(i, c, o), "slowest stage alone"),
    (lambda i, c, o, k: (k - 1) * max(i, c, o) / k, "fill is missing"),
    (lambda i, c, o, k: i + c + o, "max, not sum"),
    (lambda i, c, o, k: (i + c + o) / k + max(i, c, o), "(k - 1) x max / k"),
    (lambda i, c, o, k: (i + c + o) / k + (k - 1) * max(i + o, c) / k, "two copy engines"),
    (lambda i, c, o, k: (i + c + o) / k + (k - 1) * c / k, "pace the pipeline by the kernel"),
    (lambda i, c, o, k: 2 * (i + c + o), "plus (chunks - 1) times the slowest"),
    (lambda i, c, o: i + c + o, "takes four arguments"),
    (lambda i, c, o, k: [i, c, o], "not a number"),
]


def test_the_exercises_are_registered_in_chapter_03():
    ids = gu.exercises.ids("03_first_kernels")
    assert {"stream_pipeline_time", "stream_pipeline_function"} <= set(ids)


@pytest.mark.parametrize("answer", CORRECT_TIME)
def test_correct_times_pass(answer):
    result = check("stream_pipeline_time", answer)
    assert result.passed, result.message


@pytest.mark.parametrize("value, hint", TIME_MISTAKES)
def test_time_mistakes_fail_with_their_hint(value, hint):
    result = check("stream_pipeline_time", returns(value))
    assert not result.passed
    assert hint in result.message, result.message


def test_all_correct_functions_pass():
    for function in CORRECT_FUNCTIONS:
        result = check("stream_pipeline_function", function)
        assert result.passed, result.message


def test_function_mistakes_fail_with_their_hint():
    for function, hint in FUNCTION_MISTAKES:
        result = check("stream_pipeline_function", function)
        assert not result.passed and result.attempted, result.message
        assert hint in result.message, result.message


def raises_zero_division(*args):
    return 1 / 0


def returns_nan(*args):
    return float("nan")


def returns_huge(*args):
    return 10**400


@pytest.mark.parametrize("exercise_id", ["stream_pipeline_time", "stream_pipeline_function"])
def test_odd_answers_get_a_message(exercise_id):
    for odd, words in [
        (lambda *args: None, "not a number"),
        (lambda *args: "9 ms", "not a number"),
        (returns_huge, "too large for a float"),
        (returns_nan, "nan"),
        (raises_zero_division, "raised ZeroDivisionError"),
        (42, "Expected a function"),
    ]:
        result = check(exercise_id, odd)
        assert not result.passed and words in result.message, result.message
        assert "Traceback" not in result.message and "checker itself failed" not in result.message


def test_a_stub_is_not_attempted_yet():
    def stub(*args):
        raise NotImplementedError()

    for exercise_id in ("stream_pipeline_time", "stream_pipeline_function"):
        result = check(exercise_id, stub)
        assert not result.passed and not result.attempted, result.message
