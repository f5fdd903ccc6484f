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


def test_a_race_from_a_wrong_index_is_fixed_by_the_index_not_an_atomic():
    message = check("vector_add", vector_add_thread_index_only).message
    assert "Your kernel has a race: write-write race on out[0]" in message, message
    fix = message.split("To fix the race:", 1)[1]
    assert "not an atomic operation" in fix and "`i = cuda.grid(1)`" in fix, message


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
def sum_plain_add(x, out):  # lost updates on a GPU; the simulator's threads may not lose any
    i = cuda.grid(1)
    if i < x.size:
        out[0] += x[i]


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


def test_sum_with_a_plain_add_is_a_race_whose_fix_is_an_atomic():
    result = check("sum_atomic", sum_plain_add)
    assert not result.passed
    assert "read-modify-write race on out[0]" in result.message, result.message
    assert "Use `cuda.atomic.add(out, 0, value)`" in result.message.split("Hint:", 1)[1]


# --- saxpy ------------------------------------------------------------------------------------


@cuda.jit
def saxpy_reference(a, x, y, out):  # explicit index, terms in another order
    i = cuda.threadIdx.x + cuda.blockIdx.x * cuda.blockDim.x
    if i < x.shape[0]:
        out[i] = y[i] + x[i] * a


@cuda.jit
def saxpy_forgets_a(a, x, y, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = x[i] + y[i]


@cuda.jit
def saxpy_scales_both(a, x, y, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a * (x[i] + y[i])


@cuda.jit
def saxpy_scales_y(a, x, y, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a * y[i] + x[i]


@cuda.jit
def saxpy_no_guard(a, x, y, out):
    i = cuda.grid(1)
    out[i] = a * x[i] + y[i]


def test_saxpy_accepts_a_correct_kernel():
    result = check("saxpy", saxpy_reference)
    assert result.passed, result.message


@pytest.mark.parametrize(
    "kernel, hint",
    [
        (saxpy_forgets_a, "equals x + y; you left out the factor"),
        (saxpy_scales_both, "only x is scaled"),
        (saxpy_scales_y, "you scaled y instead of x"),
        (saxpy_no_guard, "if i < out.size:"),
    ],
)
def test_saxpy_rejects_mistakes_with_their_hint(kernel, hint):
    result = check("saxpy", kernel)
    assert not result.passed
    assert hint in result.message, result.message


# --- clamp ------------------------------------------------------------------------------------


@cuda.jit
def clamp_reference(x, lo, hi, out):  # min/max instead of the solution's if/elif/else
    i = cuda.grid(1)
    if i < x.size:
        out[i] = min(max(x[i], lo), hi)


@cuda.jit
def clamp_no_else(x, lo, hi, out):
    i = cuda.grid(1)
    if i < x.size:
        if x[i] < lo:
            out[i] = lo
        elif x[i] > hi:
            out[i] = hi


@cuda.jit
def clamp_nested_wrong_way(x, lo, hi, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = min(max(x[i], hi), lo)


@cuda.jit
def clamp_lower_bound_only(x, lo, hi, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = max(x[i], lo)


@cuda.jit
def clamp_bounds_swapped(x, lo, hi, out):
    i = cuda.grid(1)
    if i < x.size:
        v = x[i]
        if v < lo:
            v = hi
        elif v > hi:
            v = lo
        out[i] = v


def test_clamp_accepts_a_correct_kernel():
    result = check("clamp", clamp_reference)
    assert result.passed, result.message


@pytest.mark.parametrize(
    "kernel, hint",
    [
        (clamp_no_else, "`else: out[i] = x[i]`"),
        (clamp_nested_wrong_way, "lo everywhere; min and max are nested the wrong way round"),
        (clamp_lower_bound_only, "values above hi must become hi"),
        (clamp_bounds_swapped, "lo and hi are swapped"),
    ],
)
def test_clamp_rejects_mistakes_with_their_hint(kernel, hint):
    result = check("clamp", kernel)
    assert not result.passed
    assert hint in result.message, result.message


# --- stencil_1d -------------------------------------------------------------------------------


@cuda.jit
def stencil_reference(x, out):  # a loop over the three offsets
    i = cuda.grid(1)
    n = x.shape[0]
    if i >= n:
        return
    total = 0.0
    for offset in range(-1, 2):
        j = i + offset
        if 0 <= j < n:
            total += x[j]
    out[i] = total / 3.0


@cuda.jit
def stencil_no_right_boundary(x, out):
    i = cuda.grid(1)
    if i < x.size:
        left = x[i - 1] if i > 0 else 0.0
        out[i] = (left + x[i] + x[i + 1]) / 3


@cuda.jit
def stencil_wraps_left(x, out):
    i = cuda.grid(1)
    if i < x.size:
        right = x[i + 1] if i + 1 < x.size else 0.0
        out[i] = (x[i - 1] + x[i] + right) / 3


@cuda.jit
def stencil_skips_ends(x, out):
    i = cuda.grid(1)
    if 0 < i < x.size - 1:
        out[i] = (x[i - 1] + x[i] + x[i + 1]) / 3


@cuda.jit
def stencil_averages_what_exists(x, out):
    i = cuda.grid(1)
    n = x.size
    if i < n:
        if i == 0:
            out[i] = (x[0] + x[1]) / 2 if n > 1 else x[0]
        elif i == n - 1:
            out[i] = (x[i - 1] + x[i]) / 2
        else:
            out[i] = (x[i - 1] + x[i] + x[i + 1]) / 3


@cuda.jit
def stencil_not_centred(x, out):
    i = cuda.grid(1)
    n = x.size
    if i < n:
        a = x[i + 1] if i + 1 < n else 0.0
        b = x[i + 2] if i + 2 < n else 0.0
        out[i] = (x[i] + a + b) / 3


def test_stencil_accepts_a_correct_kernel():
    result = check("stencil_1d", stencil_reference)
    assert result.passed, result.message


@pytest.mark.parametrize(
    "kernel, hint",
    [
        (stencil_no_right_boundary, "read its right neighbour x[200], past the end"),
        (stencil_wraps_left, "out[0] used x[-1]"),
        (stencil_skips_ends, "the first and last elements were never written"),
        (stencil_averages_what_exists, "you averaged the two values that exist"),
        (stencil_not_centred, "centre the stencil on i"),
    ],
)
def test_stencil_rejects_mistakes_with_their_hint(kernel, hint):
    result = check("stencil_1d", kernel)
    assert not result.passed
    assert hint in result.message, result.message


# --- square_grid_stride -----------------------------------------------------------------------


@cuda.jit
def square_reference(x, out):  # a while loop instead of range
    i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    step = cuda.blockDim.x * cuda.gridDim.x
    while i < out.shape[0]:
        v = x[i]
        out[i] = v * v
        i += step


@cuda.jit
def square_no_loop(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[i] = x[i] * x[i]


@cuda.jit
def square_starts_at_thread_index(x, out):
    for i in range(cuda.threadIdx.x, x.size, cuda.gridsize(1)):
        out[i] = x[i] * x[i]


@cuda.jit
def square_starts_at_zero(x, out):
    for i in range(0, x.size, cuda.gridsize(1)):
        out[i] = x[i] * x[i]


@cuda.jit
def square_stops_one_short(x, out):
    for i in range(cuda.grid(1), x.size - 1, cuda.gridsize(1)):
        out[i] = x[i] * x[i]


@cuda.jit
def square_steps_by_block_size(x, out):  # right values, but threads redo each other's elements
    for i in range(cuda.grid(1), x.size, cuda.blockDim.x):
        out[i] = x[i] * x[i]


def test_square_grid_stride_accepts_a_correct_kernel():
    result = check("square_grid_stride", square_reference)
    assert result.passed, result.message


@pytest.mark.parametrize(
    "kernel, hint",
    [
        (square_no_loop, "only the first 128 elements were written, one per thread"),
        (square_starts_at_thread_index, "the loop starts at cuda.threadIdx.x"),
        (square_starts_at_zero, "every thread started at element 0"),
        (square_stops_one_short, "loop up to x.size, not x.size - 1"),
    ],
)
def test_square_grid_stride_rejects_mistakes_with_their_hint(kernel, hint):
    result = check("square_grid_stride", kernel)
    assert not result.passed
    assert hint in result.message, result.message


def test_square_grid_stride_with_too_small_a_step_is_caught_by_the_trace():
    result = check("square_grid_stride", square_steps_by_block_size)
    assert not result.passed
    assert "your results came out right, but your kernel has a race" in result.message
    assert "write-write race on out[" in result.message, result.message
    hint = result.message.split("Hint:", 1)[1]
    assert "two threads wrote out[" in hint, result.message
    assert "the loop's step must be the whole grid, `cuda.gridsize(1)`" in hint
    assert "not an atomic operation" in hint and "Use an atomic" not in hint


# --- add_bias_2d ------------------------------------------------------------------------------


@cuda.jit
def bias_reference(x, bias, out):  # indices from blockIdx/threadIdx, early return
    col = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    row = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    if row >= x.shape[0] or col >= x.shape[1]:
        return
    out[row, col] = bias[col] + x[row, col]


@cuda.jit
def bias_swapped_indices(x, bias, out):
    row, col = cuda.grid(2)
    if row < out.shape[0] and col < out.shape[1]:
        out[row, col] = x[row, col] + bias[col]


@cuda.jit
def bias_per_row(x, bias, out):
    col, row = cuda.grid(2)
    if row < out.shape[0] and col < out.shape[1]:
        out[row, col] = x[row, col] + bias[row]


@cuda.jit
def bias_no_guard(x, bias, out):
    col, row = cuda.grid(2)
    out[row, col] = x[row, col] + bias[col]


@cuda.jit
def bias_forgotten(x, bias, out):
    col, row = cuda.grid(2)
    if row < out.shape[0] and col < out.shape[1]:
        out[row, col] = x[row, col]


def test_add_bias_accepts_a_correct_kernel():
    result = check("add_bias_2d", bias_reference)
    assert result.passed, result.message


@pytest.mark.parametrize(
    "kernel, hint",
    [
        (bias_swapped_indices, "`col, row = cuda.grid(2)`"),
        (bias_per_row, "you added bias[row]"),
        (bias_no_guard, "if row < out.shape[0] and col < out.shape[1]:"),
        (bias_forgotten, "you forgot the bias"),
    ],
)
def test_add_bias_rejects_mistakes_with_their_hint(kernel, hint):
    result = check("add_bias_2d", kernel)
    assert not result.passed
    assert hint in result.message, result.message


# --- row_sums ---------------------------------------------------------------------------------


@cuda.jit
def row_sums_reference(x, out):  # a grid-stride loop over rows, summing from the end
    for row in range(cuda.grid(1), x.shape[0], cuda.gridsize(1)):
        total = 0.0
        for k in range(x.shape[1] - 1, -1, -1):
            total += x[row, k]
        out[row] = total


@cuda.jit
def row_sums_into_out(x, out):
    row = cuda.grid(1)
    if row < x.shape[0]:
        for col in range(x.shape[1]):
            out[row] += x[row, col]


@cuda.jit
def row_sums_loops_over_rows(x, out):
    row = cuda.grid(1)
    if row < x.shape[0]:
        total = 0.0
        for col in range(x.shape[0]):
            total += x[row, col]
        out[row] = total


@cuda.jit
def row_sums_skips_first_column(x, out):
    row = cuda.grid(1)
    if row < x.shape[0]:
        total = 0.0
        for col in range(1, x.shape[1]):
            total += x[row, col]
        out[row] = total


@cuda.jit
def row_sums_no_guard(x, out):
    row = cuda.grid(1)
    total = 0.0
    for col in range(x.shape[1]):
        total += x[row, col]
    out[row] = total


def test_row_sums_accepts_a_correct_kernel():
    result = check("row_sums", row_sums_reference)
    assert result.passed, result.message


@pytest.mark.parametrize(
    "kernel, hint",
    [
        (row_sums_into_out, "Sum into a local variable"),
        (row_sums_loops_over_rows, "an index ran past the 7 columns of x"),
        (row_sums_skips_first_column, "each sum misses the first column"),
        (row_sums_no_guard, "if row < x.shape[0]:"),
    ],
)
def test_row_sums_rejects_mistakes_with_their_hint(kernel, hint):
    result = check("row_sums", kernel)
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
