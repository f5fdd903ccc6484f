"""Checkers of lab 04 (memory): the corpus in tests/kernel_answers/ch04.py (correct kernels
written differently from the solutions pass; mistakes such as uncoalesced accesses, bank
conflicts, races and wrong indices fail with their own hint), the lab's own solutions pass.
Also: every kernel exercise rejects races, e.g. `out[0] += x[i]` in lab 03's sum_atomic, and
kernel_exercise's options work."""

import numpy as np
import pytest
from kernel_answers import ch04
from numba import cuda

import gpu_utils as gu
from answer_tables import kernel_table_tests, solution_kernel_tests
from gpu_utils.exercises import _kernels

check = gu.exercises.check
pytestmark = pytest.mark.skipif(gu.mode != "simulator", reason="checks run their traces here")

(
    test_every_kernel_exercise_has_its_corpus,
    test_alternative_correct_answers_pass,
    test_wrong_answers_fail_with_their_own_hint,
) = kernel_table_tests("04_memory", ch04.ANSWERS, ch04.CONSTANTS)
test_the_labs_solution_passes = solution_kernel_tests("04_memory")

# --- races in every kernel exercise (lab 03's sum_atomic) -------------------------------------


@cuda.jit
def sum_one_thread_per_block_adds(x, out):
    i = cuda.grid(1)
    if cuda.threadIdx.x == 0:
        total = 0.0
        for k in range(i, min(i + cuda.blockDim.x, x.size)):
            total += x[k]
        out[0] += total  # one thread per block: a race between blocks


def test_sum_atomic_rejects_a_race_between_blocks():
    result = check("sum_atomic", sum_one_thread_per_block_adds)
    assert not result.passed
    assert (
        "thread (0, 0, 0) of block (0, 0, 0) and thread (0, 0, 0) of block (1, 0, 0)"
        in result.message
    )
    assert "threads of different blocks are not ordered within a launch" in result.message
    assert "cuda.atomic.add(out, 0, value)" in result.message


def test_correct_kernels_pass_with_the_race_check_named():
    @cuda.jit
    def sum_reference(x, out):
        i = cuda.grid(1)
        if i < x.shape[0]:
            cuda.atomic.add(out, 0, x[i])

    result = check("sum_atomic", sum_reference)
    assert result.passed and "shows no races" in result.message


def _toy_exercise(**options):
    """A vector copy exercise built in this process, to test kernel_exercise's options."""
    rng = np.random.default_rng(0)

    def cases(rng):
        (a,) = _kernels.random_inputs(rng, 256)
        return [_kernels.Case("n = 256", 2, 128, (a,), _kernels.poisoned(256), (a.copy(),))]

    return _kernels.kernel_exercise(
        id="toy_copy",
        chapter="tests",
        title="toy",
        signature="toy(a, out)",
        launch_text="2 x 128",
        output_names=("out",),
        cases=cases,
        hint=lambda case, mismatch: "toy hint",
        seed=int(rng.integers(100)),
        **options,
    )


@cuda.jit
def copy_strided_threads(a, out):  # correct, but thread t handles elements 2t and 2t+1
    t = cuda.grid(1)
    for k in (2 * t, 2 * t + 1):
        if k < out.size and t < out.size // 2:
            out[k] = a[k]


@cuda.jit
def copy_twice_racy(a, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i]
        out[(i + 1) % out.size] = a[(i + 1) % out.size]


def test_options_race_check_can_be_turned_off():
    assert not _toy_exercise().run(cuda.jit(copy_twice_racy.py_func)).passed
    assert _toy_exercise(check_races=False).run(cuda.jit(copy_twice_racy.py_func)).passed


def test_options_requirements_fail_correct_but_slow_kernels():
    exercise = _toy_exercise(requirements=(_kernels.coalesced(),))
    result = exercise.run(copy_strided_threads)
    assert not result.passed
    assert "your reads of `a` are not coalesced" in result.message
    assert "8.0 sectors" in result.message, result.message
    assert (
        _toy_exercise(requirements=(_kernels.coalesced(slack=2.0),))
        .run(copy_strided_threads)
        .passed
    )


# --- the contract -----------------------------------------------------------------------------


@cuda.jit
def stub(a, out):
    raise NotImplementedError()


@pytest.mark.parametrize("exercise", ["copy_grid_stride", "transpose_tiled", "stencil_shared"])
def test_stubs_are_not_attempted_yet_and_exercises_are_documented(exercise):
    result = check(exercise, stub)
    assert not result.passed and not result.attempted
    text = gu.exercises.describe(exercise)
    assert "signature:" in text and "launch:" in text


def test_chapter_lists_its_kernel_exercises_in_order():
    ids = gu.exercises.ids("04_memory")
    assert [e for e in ids if gu.exercises.get(e).kind == "kernel"] == [
        "copy_grid_stride",
        "transpose_tiled",
        "stencil_shared",
    ]


@cuda.jit
def copy_with_other_names(source, target):  # the checker maps arguments by position
    for k in range(cuda.grid(1), source.size, cuda.gridsize(1)):
        target[k] = source[k]


@cuda.jit
def copy_chunk_other_names(source, target):
    threads = cuda.gridsize(1)
    chunk = (source.size + threads - 1) // threads
    start = cuda.grid(1) * chunk
    for k in range(start, min(start + chunk, source.size)):
        target[k] = source[k]


def test_requirements_find_arguments_the_learner_named_differently():
    assert check("copy_grid_stride", copy_with_other_names).passed
    result = check("copy_grid_stride", copy_chunk_other_names)
    assert not result.passed
    assert "not coalesced" in result.message and "`source`" in result.message
    assert "checker itself failed" not in result.message
