"""Every registered exercise, of every chapter, answers odd answers with a message:
None, lists, strings, huge numbers, NaN, functions that raise several exception types, kernels
with the wrong parameters. No traceback and none of the simulator's internals reach the learner.

Exercises run across processes with ``gu.dist`` start several ranks per check; they get one odd
answer each (a function that returns None on every rank), the others the whole set."""

import math
import time
import warnings

import pytest
from numba import cuda

import gpu_utils as gu

FORBIDDEN = ("Traceback", "FakeCUDA", "tid=", "ctaid=", "checker itself failed", "site-packages")
#: A kernel check's own limit here: no per-exercise calibration, and a hang still ends.
LIMIT = 30.0


def huge():
    return 2 * 4096**4096


def raises_value_error(*args):
    raise ValueError("not like that")


def raises_zero_division(*args):
    return 1 / 0


def recurse(*args):
    return recurse(*args)


def returns_none(*args):
    return None


def returns_list(*args):
    return [1.0, 2.0]


def returns_string(*args):
    return "forty-two"


def returns_nan(*args):
    return math.nan


def returns_huge(*args):
    return huge()


def too_many_parameters(a, b, c, d, e, f, g, h, i):
    return 0.0


@cuda.jit
def kernel_one_parameter(x):
    x[0] = 1.0


@cuda.jit
def kernel_value_error(*args):
    raise ValueError("not like that")


@cuda.jit
def kernel_zero_division(*args):
    args[0][0] = 1 / 0


@cuda.jit
def kernel_recursion_error(*args):
    raise RecursionError("maximum recursion depth exceeded")


VALUES = [None, [1, 2], "forty-two", huge(), math.nan]
#: Most telling first: a slow checker (one that trains or times a model per answer) may get only
#: the first few within BUDGET seconds, and the test says which it left out.
FUNCTIONS = [
    raises_value_error,
    returns_none,
    returns_huge,
    too_many_parameters,
    returns_nan,
    returns_string,
    raises_zero_division,
    recurse,
    returns_list,
]
BUDGET = 20.0
KERNELS = [
    raises_value_error,  # a plain function, not a kernel
    kernel_one_parameter,
    kernel_value_error,
    kernel_zero_division,
    kernel_recursion_error,
]


def distributed(exercise) -> bool:
    return "gu.dist" in exercise.launch


def odd_answers(exercise) -> list:
    if distributed(exercise):
        return [returns_none]
    if exercise.kind == "kernel":
        return VALUES + KERNELS
    return VALUES + FUNCTIONS


def described(answer) -> str:
    return getattr(answer, "__name__", None) or type(answer).__name__


@pytest.mark.parametrize("exercise_id", gu.exercises.ids())
def test_every_checker_answers_odd_answers_with_a_message(exercise_id):
    exercise = gu.exercises.get(exercise_id)
    problems = []
    answers = odd_answers(exercise)
    start = time.perf_counter()
    for tried, answer in enumerate(answers):
        if tried >= 8 and time.perf_counter() - start > BUDGET:
            left = ", ".join(described(a) for a in answers[tried:])
            warnings.warn(f"{exercise_id}: over {BUDGET:g} s, not tried: {left}", stacklevel=1)
            break
        result = gu.exercises.check(exercise_id, answer, timeout=LIMIT)
        if not isinstance(result, gu.exercises.CheckResult):
            problems.append(f"{described(answer)}: returned {type(result).__name__}")
            continue
        message = result.message
        if result.passed or not message.strip():
            problems.append(f"{described(answer)}: passed={result.passed}, message {message!r}")
        leaked = [word for word in FORBIDDEN if word in message]
        if leaked:
            problems.append(f"{described(answer)}: {leaked} in {message!r}")
    assert not problems, "\n".join(problems)


def test_distributed_exercises_are_not_skipped_silently():
    """The ones that get a single odd answer are named here, so a new one is noticed."""
    names = [i for i in gu.exercises.ids() if distributed(gu.exercises.get(i))]
    assert all(odd_answers(gu.exercises.get(i)) == [returns_none] for i in names)
    assert "ring_all_reduce" in names
