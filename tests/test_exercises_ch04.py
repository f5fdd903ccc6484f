"""Checkers of lab 04 (memory): correct kernels written differently from the solutions pass;
common mistakes (uncoalesced, bank conflicts, races, wrong indices) fail with their own hint.
Also: every kernel exercise now rejects races, e.g. `out[0] += x[i]` in lab 03's sum_atomic."""

import numpy as np
import pytest
from numba import cuda, float32

import gpu_utils as gu
from gpu_utils.exercises import _kernels

check = gu.exercises.check
pytestmark = pytest.mark.skipif(gu.mode != "simulator", reason="checks run their traces here")

# --- races in every kernel exercise (lab 03's sum_atomic) -------------------------------------


@cuda.jit
def sum_plain_add(x, out):
    i = cuda.grid(1)
    if i < x.size:
        out[0] += x[i]


@cuda.jit
def sum_one_thread_per_block_adds(x, out):
    i = cuda.grid(1)
    if cuda.threadIdx.x == 0:
        total = 0.0
        for k in range(i, min(i + cuda.blockDim.x, x.size)):
            total += x[k]
        out[0] += total  # one thread per block: a race between blocks


def test_sum_atomic_rejects_a_plain_add_naming_the_race():
    result = check("sum_atomic", sum_plain_add)
    assert not result.passed, result.message
    assert "read-modify-write race on out[0]" in result.message, result.message
    assert "cuda.atomic.add(out, 0, value)" in result.message, result.message


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


# --- copy_grid_stride -------------------------------------------------------------------------


@cuda.jit
def copy_grid_stride_reference(src, dst):
    for k in range(cuda.grid(1), src.size, cuda.gridsize(1)):
        dst[k] = src[k]


@cuda.jit
def copy_while_loop(src, dst):  # a correct variant with a while loop
    k = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    step = cuda.blockDim.x * cuda.gridDim.x
    while k < dst.shape[0]:
        dst[k] = src[k]
        k += step


@cuda.jit
def copy_chunk_per_thread(src, dst):  # correct values, uncoalesced
    threads = cuda.gridsize(1)
    chunk = (src.size + threads - 1) // threads
    start = cuda.grid(1) * chunk
    for k in range(start, min(start + chunk, src.size)):
        dst[k] = src[k]


@cuda.jit
def copy_block_stride(src, dst):  # steps by one block: both blocks copy the same elements
    for k in range(cuda.grid(1), src.size, cuda.blockDim.x):
        dst[k] = src[k]


@cuda.jit
def copy_one_each(src, dst):
    k = cuda.grid(1)
    if k < src.size:
        dst[k] = src[k]


@cuda.jit
def copy_from_thread_index(src, dst):
    for k in range(cuda.threadIdx.x, src.size, cuda.gridsize(1)):
        dst[k] = src[k]


@cuda.jit
def copy_stops_short(src, dst):
    for k in range(cuda.grid(1), src.size - 1, cuda.gridsize(1)):
        dst[k] = src[k]


@pytest.mark.parametrize("kernel", [copy_grid_stride_reference, copy_while_loop])
def test_copy_accepts_correct_kernels(kernel):
    result = check("copy_grid_stride", kernel)
    assert result.passed, result.message
    assert "coalesced accesses" in result.message


@pytest.mark.parametrize(
    "kernel, hint",
    [
        (copy_chunk_per_thread, "each thread seems to copy its own contiguous chunk"),
        (copy_block_stride, "two threads copied the same element"),
        (copy_one_each, "only the first 128 elements were copied"),
        (copy_from_thread_index, "start at the global index `cuda.grid(1)`"),
        (copy_stops_short, "only the last element is missing"),
    ],
)
def test_copy_rejects_mistakes_with_their_hint(kernel, hint):
    result = check("copy_grid_stride", kernel)
    assert not result.passed
    assert hint in result.message, result.message


def test_copy_reports_sectors_for_the_chunked_copy():
    message = check("copy_grid_stride", copy_chunk_per_thread).message
    assert "32.0 sectors of 32 bytes" in message and "traced with n = 4096" in message


# --- transpose_tiled --------------------------------------------------------------------------

TILE = 32


@cuda.jit
def transpose_padded(a, out):
    tile = cuda.shared.array((TILE, TILE + 1), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    x = cuda.blockIdx.x * TILE + tx
    y = cuda.blockIdx.y * TILE + ty
    for j in range(0, TILE, 8):
        if y + j < a.shape[0] and x < a.shape[1]:
            tile[ty + j, tx] = a[y + j, x]
    cuda.syncthreads()
    x = cuda.blockIdx.y * TILE + tx
    y = cuda.blockIdx.x * TILE + ty
    for j in range(0, TILE, 8):
        if y + j < out.shape[0] and x < out.shape[1]:
            out[y + j, x] = tile[tx, ty + j]


@cuda.jit
def transpose_swizzled(a, out):  # correct differently: XOR-swizzled columns instead of padding
    tile = cuda.shared.array((32, 32), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row0, col0 = cuda.blockIdx.y * 32, cuda.blockIdx.x * 32
    for j in range(ty, 32, cuda.blockDim.y):
        if row0 + j < a.shape[0] and col0 + tx < a.shape[1]:
            tile[j, tx ^ j] = a[row0 + j, col0 + tx]
    cuda.syncthreads()
    for j in range(ty, 32, cuda.blockDim.y):
        if col0 + j < out.shape[0] and row0 + tx < out.shape[1]:
            out[col0 + j, row0 + tx] = tile[tx, j ^ tx]


@cuda.jit
def transpose_naive(a, out):
    x = cuda.blockIdx.x * TILE + cuda.threadIdx.x
    y = cuda.blockIdx.y * TILE + cuda.threadIdx.y
    for j in range(0, TILE, 8):
        if y + j < a.shape[0] and x < a.shape[1]:
            out[x, y + j] = a[y + j, x]


@cuda.jit
def transpose_unpadded(a, out):
    tile = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    x = cuda.blockIdx.x * TILE + tx
    y = cuda.blockIdx.y * TILE + ty
    for j in range(0, TILE, 8):
        if y + j < a.shape[0] and x < a.shape[1]:
            tile[ty + j, tx] = a[y + j, x]
    cuda.syncthreads()
    x = cuda.blockIdx.y * TILE + tx
    y = cuda.blockIdx.x * TILE + ty
    for j in range(0, TILE, 8):
        if y + j < out.shape[0] and x < out.shape[1]:
            out[y + j, x] = tile[tx, ty + j]


@cuda.jit
def transpose_no_syncthreads(a, out):
    tile = cuda.shared.array((TILE, TILE + 1), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    x = cuda.blockIdx.x * TILE + tx
    y = cuda.blockIdx.y * TILE + ty
    for j in range(0, TILE, 8):
        if y + j < a.shape[0] and x < a.shape[1]:
            tile[ty + j, tx] = a[y + j, x]
    x = cuda.blockIdx.y * TILE + tx
    y = cuda.blockIdx.x * TILE + ty
    for j in range(0, TILE, 8):
        if y + j < out.shape[0] and x < out.shape[1]:
            out[y + j, x] = tile[tx, ty + j]


@cuda.jit
def transpose_tile_not_transposed(a, out):
    tile = cuda.shared.array((TILE, TILE + 1), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    x = cuda.blockIdx.x * TILE + tx
    y = cuda.blockIdx.y * TILE + ty
    for j in range(0, TILE, 8):
        if y + j < a.shape[0] and x < a.shape[1]:
            tile[ty + j, tx] = a[y + j, x]
    cuda.syncthreads()
    x = cuda.blockIdx.y * TILE + tx
    y = cuda.blockIdx.x * TILE + ty
    for j in range(0, TILE, 8):
        if y + j < out.shape[0] and x < out.shape[1]:
            out[y + j, x] = tile[ty + j, tx]


@cuda.jit
def transpose_no_guard(a, out):
    tile = cuda.shared.array((TILE, TILE + 1), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    x = cuda.blockIdx.x * TILE + tx
    y = cuda.blockIdx.y * TILE + ty
    for j in range(0, TILE, 8):
        tile[ty + j, tx] = a[y + j, x]
    cuda.syncthreads()
    x = cuda.blockIdx.y * TILE + tx
    y = cuda.blockIdx.x * TILE + ty
    for j in range(0, TILE, 8):
        out[y + j, x] = tile[tx, ty + j]


@pytest.mark.parametrize("kernel", [transpose_padded, transpose_swizzled])
def test_transpose_accepts_correct_kernels(kernel):
    result = check("transpose_tiled", kernel)
    assert result.passed, result.message
    assert "no bank conflicts" in result.message


@pytest.mark.parametrize(
    "kernel, hint",
    [
        (transpose_naive, "consecutive threads write down a column of `out`"),
        (transpose_unpadded, "pad each row by one element"),
        (transpose_no_syncthreads, "put cuda.syncthreads() between the writes to shared memory"),
        (transpose_tile_not_transposed, "was not transposed inside"),
        (transpose_no_guard, "check every element against the matrix edges"),
    ],
)
def test_transpose_rejects_mistakes_with_their_hint(kernel, hint):
    result = check("transpose_tiled", kernel)
    assert not result.passed
    assert hint in result.message, result.message


def test_transpose_names_the_bank_conflicts_and_the_race():
    assert "3,968 extra wavefronts" in check("transpose_tiled", transpose_unpadded).message
    message = check("transpose_tiled", transpose_no_syncthreads).message
    assert "race on tile[" in message and "in shared memory" in message


# --- stencil_shared ---------------------------------------------------------------------------

THREADS = 128


@cuda.jit
def stencil_reference(x, out):
    tile = cuda.shared.array(THREADS + 2, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    n = x.size
    tile[t + 1] = x[i] if i < n else 0.0
    if t == 0:
        tile[0] = x[i - 1] if 0 < i <= n else 0.0
    if t == THREADS - 1:
        tile[THREADS + 1] = x[i + 1] if i + 1 < n else 0.0
    cuda.syncthreads()
    if i < n:
        out[i] = tile[t] - 2 * tile[t + 1] + tile[t + 2]


@cuda.jit
def stencil_halo_by_first_two_threads(x, out):  # correct differently: two threads load the halo
    tile = cuda.shared.array(130, float32)
    t = cuda.threadIdx.x
    start = cuda.blockIdx.x * cuda.blockDim.x
    i = start + t
    if i < x.size:
        tile[t + 1] = x[i]
    else:
        tile[t + 1] = 0
    if t < 2:
        k = start - 1 if t == 0 else start + cuda.blockDim.x
        cell = 0 if t == 0 else cuda.blockDim.x + 1
        tile[cell] = x[k] if 0 <= k < x.size else 0
    cuda.syncthreads()
    if i < x.size:
        out[i] = (tile[t] + tile[t + 2]) - 2 * tile[t + 1]


@cuda.jit
def stencil_global_only(x, out):
    i = cuda.grid(1)
    if i < x.size:
        left = x[i - 1] if i > 0 else 0.0
        right = x[i + 1] if i + 1 < x.size else 0.0
        out[i] = left - 2 * x[i] + right


@cuda.jit
def stencil_no_syncthreads(x, out):
    tile = cuda.shared.array(THREADS + 2, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    n = x.size
    tile[t + 1] = x[i] if i < n else 0.0
    if t == 0:
        tile[0] = x[i - 1] if 0 < i <= n else 0.0
    if t == THREADS - 1:
        tile[THREADS + 1] = x[i + 1] if i + 1 < n else 0.0
    if i < n:
        out[i] = tile[t] - 2 * tile[t + 1] + tile[t + 2]


@cuda.jit
def stencil_no_halo(x, out):
    tile = cuda.shared.array(THREADS + 2, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    tile[t + 1] = x[i] if i < x.size else 0.0
    if t == 0:
        tile[0] = 0.0
        tile[THREADS + 1] = 0.0
    cuda.syncthreads()
    if i < x.size:
        out[i] = tile[t] - 2 * tile[t + 1] + tile[t + 2]


@cuda.jit
def stencil_wraps_around(x, out):
    tile = cuda.shared.array(THREADS + 2, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    n = x.size
    tile[t + 1] = x[i % n]  # past the end: wraps to the start
    if t == 0:
        tile[0] = x[i - 1]  # at i = 0, x[-1] is the last element in Python
    if t == THREADS - 1:
        tile[THREADS + 1] = x[(i + 1) % n]
    cuda.syncthreads()
    if i < n:
        out[i] = tile[t] - 2 * tile[t + 1] + tile[t + 2]


@cuda.jit
def stencil_no_guard(x, out):
    tile = cuda.shared.array(THREADS + 2, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    tile[t + 1] = x[i]
    if t == 0:
        tile[0] = x[i - 1] if i > 0 else 0.0
    if t == THREADS - 1:
        tile[THREADS + 1] = x[i + 1] if i + 1 < x.size else 0.0
    cuda.syncthreads()
    out[i] = tile[t] - 2 * tile[t + 1] + tile[t + 2]


@pytest.mark.parametrize("kernel", [stencil_reference, stencil_halo_by_first_two_threads])
def test_stencil_accepts_correct_kernels(kernel):
    result = check("stencil_shared", kernel)
    assert result.passed, result.message


@pytest.mark.parametrize(
    "kernel, hint",
    [
        (stencil_global_only, "you read each x from global memory about three times"),
        (stencil_no_syncthreads, "put cuda.syncthreads() between the writes to shared memory"),
        (stencil_no_halo, "wrong only next to block edges"),
        (stencil_wraps_around, "in Numba on a GPU alike, so x[i - 1] at i = 0 silently"),
        (stencil_no_guard, "every load and store needs its guard"),
    ],
)
def test_stencil_rejects_mistakes_with_their_hint(kernel, hint):
    result = check("stencil_shared", kernel)
    assert not result.passed
    assert hint in result.message, result.message


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


def test_chapter_lists_its_exercises():
    assert gu.exercises.ids("04_memory") == [
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
