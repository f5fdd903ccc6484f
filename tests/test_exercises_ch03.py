"""Checkers of lab 03: the corpus in tests/kernel_answers/ch03.py (correct kernels written
differently from the solutions pass; known mistakes of many kinds fail with their own hint), the
lab's own solutions pass, and the checker never raises and never hangs."""

import numpy as np
from kernel_answers import ch03
from numba import cuda

import gpu_utils as gu
from answer_tables import kernel_table_tests, solution_kernel_tests

check = gu.exercises.check

(
    test_every_kernel_exercise_has_its_corpus,
    test_alternative_correct_answers_pass,
    test_wrong_answers_fail_with_their_own_hint,
) = kernel_table_tests("03_first_kernels", ch03.ANSWERS)
test_the_labs_solution_passes = solution_kernel_tests("03_first_kernels")


@cuda.jit
def vector_add_explicit_index(a, b, out):
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i < a.size:
        out[i] = b[i] + a[i]


# --- the contract -----------------------------------------------------------------------------


@cuda.jit
def stub(a, b, out):
    raise NotImplementedError()


@cuda.jit
def never_ends(a, b, out):
    i = 0
    while i >= 0:
        i = 1


def test_a_stub_is_not_attempted_yet():
    result = check("vector_add", stub)
    assert not result.passed and not result.attempted
    assert "not attempted yet" in result.message


def test_an_endless_kernel_is_stopped_and_the_checker_recovers():
    result = check("vector_add", never_ends, timeout=3)
    assert not result.passed
    assert "still running after 3 s" in result.message
    assert check("vector_add", vector_add_explicit_index).passed


def test_answers_that_are_not_kernels_get_a_hint():
    def plain(a, b, out):
        out[:] = a + b

    assert "put `@cuda.jit`" in check("vector_add", plain).message
    assert "pass the kernel itself" in check("vector_add", None).message


def test_unknown_exercise_lists_the_known_ones():
    result = check("vector_ad", vector_add_explicit_index)
    assert not result.passed
    assert "vector_add" in result.message


def test_globals_from_the_defining_module_travel_with_the_kernel():
    scale = np.float32(1.0)

    @cuda.jit
    def uses_closure(a, b, out):
        i = cuda.grid(1)
        if i < out.size:
            out[i] = (a[i] + b[i]) * scale

    assert check("vector_add", uses_closure).passed


def test_registry_documents_each_exercise():
    for exercise_id in gu.exercises.ids("03_first_kernels"):
        text = gu.exercises.describe(exercise_id)
        assert "signature:" in text and "launch:" in text
    assert gu.exercises.ids("03_first_kernels")[:3] == ["vector_add", "matmul_naive", "sum_atomic"]
    assert len(gu.exercises.ids("03_first_kernels")) >= 8


def test_kernel_prints_are_shown(capsys):
    @cuda.jit
    def chatty(a, b, out):
        i = cuda.grid(1)
        if i == 0:
            print("hello from thread 0")
        if i < out.size:
            out[i] = a[i] + b[i]

    assert check("vector_add", chatty).passed
    assert "hello from thread 0" in capsys.readouterr().out
