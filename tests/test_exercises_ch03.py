"""Checkers of lab 03: correct kernels written differently from the solutions pass; common
mistakes fail with their own hint; the checker never raises and never hangs."""

import numpy as np
import pytest
from numba import cuda

import gpu_utils as gu

check = gu.exercises.check

# --- vector_add -------------------------------------------------------------------------------


@cuda.jit
def vector_add_grid_stride(a, b, out):  # a correct variant: a grid-stride loop
    start, stride = cuda.grid(1), cuda.gridsize(1)
    for i in range(start, out.shape[0], stride):
        out[i] = a[i] + b[i]


@cuda.jit
def vector_add_explicit_index(a, b, out):
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    if i < a.size:
        out[i] = b[i] + a[i]


@cuda.jit
def vector_add_no_guard(a, b, out):
    i = cuda.grid(1)
    out[i] = a[i] + b[i]


@cuda.jit
def vector_add_wrong_operand(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i] + a[i]


@cuda.jit
def vector_add_thread_index_only(a, b, out):
    i = cuda.threadIdx.x
    if i < out.size:
        out[i] = a[i] + b[i]


@cuda.jit
def vector_add_off_by_one(a, b, out):
    i = cuda.grid(1)
    if i < out.size - 1:
        out[i] = a[i] + b[i]


@cuda.jit
def vector_add_subtracts(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i] - b[i]


@pytest.mark.parametrize("kernel", [vector_add_grid_stride, vector_add_explicit_index])
def test_vector_add_accepts_correct_kernels(kernel):
    result = check("vector_add", kernel)
    assert result.passed, result.message
    assert "passed" in result.message


@pytest.mark.parametrize(
    "kernel, hint",
    [
        (vector_add_no_guard, "if i < out.size:"),
        (vector_add_wrong_operand, "you used `a` twice"),
        (vector_add_thread_index_only, "cuda.grid(1)"),
        (vector_add_off_by_one, "the guard is one short"),
        (vector_add_subtracts, "equals a - b"),
    ],
)
def test_vector_add_rejects_mistakes_with_their_hint(kernel, hint):
    result = check("vector_add", kernel)
    assert not result.passed
    assert hint in result.message, result.message


# --- matmul_naive -----------------------------------------------------------------------------


@cuda.jit
def matmul_reference(a, b, out):
    col, row = cuda.grid(2)
    m, n = out.shape
    if row < m and col < n:
        total = 0.0
        for k in range(a.shape[1]):
            total += a[row, k] * b[k, col]
        out[row, col] = total


@cuda.jit
def matmul_swapped_indices(a, b, out):
    row, col = cuda.grid(2)
    if row < out.shape[0] and col < out.shape[1]:
        total = 0.0
        for k in range(a.shape[1]):
            total += a[row, k] * b[k, col]
        out[row, col] = total


@cuda.jit
def matmul_accumulates_into_out(a, b, out):
    col, row = cuda.grid(2)
    if row < out.shape[0] and col < out.shape[1]:
        for k in range(a.shape[1]):
            out[row, col] += a[row, k] * b[k, col]


@cuda.jit
def matmul_no_guard(a, b, out):
    col, row = cuda.grid(2)
    total = 0.0
    for k in range(a.shape[1]):
        total += a[row, k] * b[k, col]
    out[row, col] = total


@cuda.jit
def matmul_loop_over_wrong_dimension(a, b, out):
    col, row = cuda.grid(2)
    if row < out.shape[0] and col < out.shape[1]:
        total = 0.0
        for k in range(out.shape[1]):  # N terms instead of K
            total += a[row, k] * b[k, col]
        out[row, col] = total


@cuda.jit
def matmul_too_few_terms(a, b, out):
    col, row = cuda.grid(2)
    if row < out.shape[0] and col < out.shape[1]:
        total = 0.0
        for k in range(min(out.shape[0], a.shape[1])):  # M terms where K is larger
            total += a[row, k] * b[k, col]
        out[row, col] = total


def test_matmul_accepts_a_correct_kernel():
    result = check("matmul_naive", matmul_reference)
    assert result.passed, result.message


@pytest.mark.parametrize(
    "kernel, hint",
    [
        (matmul_swapped_indices, "`col, row = cuda.grid(2)`"),
        (matmul_accumulates_into_out, "Accumulate in a local variable"),
        (matmul_no_guard, "if row < out.shape[0] and col < out.shape[1]:"),
        (matmul_loop_over_wrong_dimension, "an index ran past K"),
        (matmul_too_few_terms, "each element sums 12 products instead of 24"),
    ],
)
def test_matmul_rejects_mistakes_with_their_hint(kernel, hint):
    result = check("matmul_naive", kernel)
    assert not result.passed
    assert hint in result.message, result.message


# --- sum_atomic -------------------------------------------------------------------------------


@cuda.jit
def sum_reference(x, out):
    i = cuda.grid(1)
    if i < x.shape[0]:
        cuda.atomic.add(out, 0, x[i])


@cuda.jit
def sum_assigns(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[0] = x[i]


@cuda.jit
def sum_thread_index_only(x, out):
    i = cuda.threadIdx.x
    if i < x.size:
        cuda.atomic.add(out, 0, x[i])


@cuda.jit
def sum_no_guard(x, out):
    cuda.atomic.add(out, 0, x[cuda.grid(1)])


@cuda.jit
def sum_first_element(x, out):
    i = cuda.grid(1)
    if i < x.size:
        cuda.atomic.add(out, 0, x[0])


def test_sum_accepts_a_correct_kernel():
    result = check("sum_atomic", sum_reference)
    assert result.passed, result.message


@pytest.mark.parametrize(
    "kernel, hint",
    [
        (sum_assigns, "`out[0] = x[i]` overwrites"),
        (sum_thread_index_only, "cuda.grid(1)"),
        (sum_no_guard, "if i < x.size:"),
        (sum_first_element, "you added x[0] every time"),
    ],
)
def test_sum_rejects_mistakes_with_their_hint(kernel, hint):
    result = check("sum_atomic", kernel)
    assert not result.passed
    assert hint in result.message, result.message


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
    for exercise_id in ("vector_add", "matmul_naive", "sum_atomic"):
        text = gu.exercises.describe(exercise_id)
        assert "signature:" in text and "launch:" in text
    assert gu.exercises.ids("03_first_kernels")[:3] == ["vector_add", "matmul_naive", "sum_atomic"]


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
