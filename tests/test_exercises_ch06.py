"""Checkers of lab 06: correct kernels written differently from the solutions pass; common
mistakes fail with their own hint (races and extra global traffic found by the trace)."""

import numpy as np
import pytest
import torch
from numba import cuda, float32

import gpu_utils as gu

check = gu.exercises.check
TILE = 8

# --- matmul_tiled -----------------------------------------------------------------------------


@cuda.jit
def tiled_with_explicit_indices(lhs, rhs, result):  # correct: own names, indices by hand, if/else
    sa = cuda.shared.array((TILE, TILE), float32)
    sb = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    total = float32(0.0)
    steps = (lhs.shape[1] + TILE - 1) // TILE
    for step in range(steps):
        k = step * TILE
        if row < lhs.shape[0] and k + tx < lhs.shape[1]:
            sa[ty, tx] = lhs[row, k + tx]
        else:
            sa[ty, tx] = 0.0
        if k + ty < rhs.shape[0] and col < rhs.shape[1]:
            sb[ty, tx] = rhs[k + ty, col]
        else:
            sb[ty, tx] = 0.0
        cuda.syncthreads()
        for j in range(TILE):
            total += sa[ty, j] * sb[j, tx]
        cuda.syncthreads()
    if row < result.shape[0] and col < result.shape[1]:
        result[row, col] = total


def _tiled(first_sync=True, second_sync=True, zero_fill=True, guard=True, transposed=False):
    """Build the tiled kernel with one mistake switched on (module-level `cuda` for the simulator)."""

    @cuda.jit
    def kernel(a, b, out):
        a_tile = cuda.shared.array((TILE, TILE), float32)
        b_tile = cuda.shared.array((TILE, TILE), float32)
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        col, row = cuda.grid(2)
        m, k_total = a.shape
        n = b.shape[1]
        acc = float32(0.0)
        for k0 in range(0, k_total, TILE):
            if not guard:
                a_tile[ty, tx] = a[row, k0 + tx]
                b_tile[ty, tx] = b[k0 + ty, col]
            elif not zero_fill:
                if row < m and k0 + tx < k_total:
                    a_tile[ty, tx] = a[row, k0 + tx]
                if k0 + ty < k_total and col < n:
                    b_tile[ty, tx] = b[k0 + ty, col]
            elif transposed:
                a_tile[tx, ty] = a[row, k0 + tx] if row < m and k0 + tx < k_total else 0.0
                b_tile[tx, ty] = b[k0 + ty, col] if k0 + ty < k_total and col < n else 0.0
            else:
                a_tile[ty, tx] = a[row, k0 + tx] if row < m and k0 + tx < k_total else 0.0
                b_tile[ty, tx] = b[k0 + ty, col] if k0 + ty < k_total and col < n else 0.0
            if first_sync:
                cuda.syncthreads()
            for k in range(TILE):
                if transposed:
                    acc += a_tile[k, ty] * b_tile[tx, k]
                else:
                    acc += a_tile[ty, k] * b_tile[k, tx]
            if second_sync:
                cuda.syncthreads()
        if row < m and col < n:
            out[row, col] = acc

    return kernel


@cuda.jit
def matmul_one_thread_per_output(a, b, out):
    col, row = cuda.grid(2)
    if row < out.shape[0] and col < out.shape[1]:
        acc = 0.0
        for k in range(a.shape[1]):
            acc += a[row, k] * b[k, col]
        out[row, col] = acc


@pytest.mark.parametrize("kernel", [tiled_with_explicit_indices, _tiled()])
def test_matmul_tiled_accepts_correct_kernels(kernel):
    result = check("matmul_tiled", kernel)
    assert result.passed, result.message
    assert "no races" in result.message and "no bank conflicts" in result.message


@pytest.mark.parametrize(
    "kernel, hints",
    [
        (_tiled(first_sync=False), ["race", "cuda.syncthreads()"]),
        (_tiled(second_sync=False), ["race", "cuda.syncthreads()"]),
        (_tiled(zero_fill=False), ["K = 11 is not a multiple of 8", "load 0.0"]),
        (_tiled(guard=False), ["valid indices are", "store 0.0 instead of reading"]),
        (matmul_one_thread_per_output, ["loaded 8,192 values", "ONE element of a"]),
        (_tiled(transposed=True), ["bank conflicts", "store each tile the way"]),
    ],
    ids=["no-first-sync", "no-second-sync", "no-zero-fill", "no-guard", "naive", "transposed"],
)
def test_matmul_tiled_rejects_mistakes_with_their_hint(kernel, hints):
    result = check("matmul_tiled", kernel)
    assert not result.passed
    for hint in hints:
        assert hint in result.message, result.message


# --- matmul_register_tiled --------------------------------------------------------------------


@cuda.jit
def register_tiled_scalars(a, b, out):  # correct: adjacent 2x2 outputs, four scalar accumulators
    a_tile = cuda.shared.array((16, 8), float32)
    b_tile = cuda.shared.array((8, 16), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row0, col0 = cuda.blockIdx.y * 16, cuda.blockIdx.x * 16
    m, kk = a.shape
    n = b.shape[1]
    c00 = c01 = c10 = c11 = float32(0.0)
    for k0 in range(0, kk, 8):
        for r in range(2):
            row, k = row0 + 2 * ty + r, k0 + tx
            a_tile[2 * ty + r, tx] = a[row, k] if row < m and k < kk else 0.0
            k, col = k0 + ty, col0 + 2 * tx + r
            b_tile[ty, 2 * tx + r] = b[k, col] if k < kk and col < n else 0.0
        cuda.syncthreads()
        for k in range(8):
            a0, a1 = a_tile[2 * ty, k], a_tile[2 * ty + 1, k]
            b0, b1 = b_tile[k, 2 * tx], b_tile[k, 2 * tx + 1]
            c00 += a0 * b0
            c01 += a0 * b1
            c10 += a1 * b0
            c11 += a1 * b1
        cuda.syncthreads()
    r0, c0 = row0 + 2 * ty, col0 + 2 * tx
    for i, j, value in ((0, 0, c00), (0, 1, c01), (1, 0, c10), (1, 1, c11)):
        if r0 + i < m and c0 + j < n:
            out[r0 + i, c0 + j] = value


def _register_tiled(second_sync=True, zero_fill=True, shared=True):
    @cuda.jit
    def kernel(a, b, out):
        a_tile = cuda.shared.array((16, 8), float32)
        b_tile = cuda.shared.array((8, 16), float32)
        acc = cuda.local.array((2, 2), float32)
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        tid = ty * 8 + tx
        row0, col0 = cuda.blockIdx.y * 16, cuda.blockIdx.x * 16
        m, kk = a.shape
        n = b.shape[1]
        for i in range(2):
            for j in range(2):
                acc[i, j] = 0.0
        for k0 in range(0, kk, 8):
            if shared:
                for e in range(tid, 128, 64):
                    r, c = e // 8, e % 8
                    if zero_fill:
                        a_tile[r, c] = a[row0 + r, k0 + c] if row0 + r < m and k0 + c < kk else 0.0
                    elif row0 + r < m and k0 + c < kk:
                        a_tile[r, c] = a[row0 + r, k0 + c]
                    r, c = e // 16, e % 16
                    if zero_fill:
                        b_tile[r, c] = b[k0 + r, col0 + c] if k0 + r < kk and col0 + c < n else 0.0
                    elif k0 + r < kk and col0 + c < n:
                        b_tile[r, c] = b[k0 + r, col0 + c]
                cuda.syncthreads()
            for k in range(8):
                for i in range(2):
                    for j in range(2):
                        row, col = row0 + ty + 8 * i, col0 + tx + 8 * j
                        if shared:
                            acc[i, j] += a_tile[ty + 8 * i, k] * b_tile[k, tx + 8 * j]
                        elif row < m and col < n and k0 + k < kk:
                            acc[i, j] += a[row, k0 + k] * b[k0 + k, col]
            if second_sync:
                cuda.syncthreads()
        for i in range(2):
            for j in range(2):
                row, col = row0 + ty + 8 * i, col0 + tx + 8 * j
                if row < m and col < n:
                    out[row, col] = acc[i, j]

    return kernel


@pytest.mark.parametrize("kernel", [register_tiled_scalars, _register_tiled()])
def test_matmul_register_tiled_accepts_correct_kernels(kernel):
    result = check("matmul_register_tiled", kernel)
    assert result.passed, result.message


@pytest.mark.parametrize(
    "kernel, hints",
    [
        (_tiled(), ["top-left 8x8 corner", "2x2 outputs"]),
        (_register_tiled(zero_fill=False), ["K = 13 is not a multiple of 8"]),
        (_register_tiled(shared=False), ["loaded 32,768 values", "16x8 and 8x16 shared tiles"]),
        (_register_tiled(second_sync=False), ["race", "cuda.syncthreads()"]),
    ],
    ids=["one-output-per-thread", "no-zero-fill", "no-shared-tiles", "no-second-sync"],
)
def test_matmul_register_tiled_rejects_mistakes_with_their_hint(kernel, hints):
    result = check("matmul_register_tiled", kernel)
    assert not result.passed
    for hint in hints:
        assert hint in result.message, result.message


# --- matvec_warp ---------------------------------------------------------------------------------


@cuda.jit
def matvec_xor_shuffles(mat, vec, res):  # correct: own names, a while loop, xor shuffles
    warp = cuda.grid(1) // 32
    lane = cuda.threadIdx.x % 32
    if warp < mat.shape[0]:
        partial = float32(0.0)
        j = lane
        while j < mat.shape[1]:
            partial += mat[warp, j] * vec[j]
            j += 32
        for mask in (1, 2, 4, 8, 16):
            partial += cuda.shfl_xor_sync(0xFFFFFFFF, partial, mask)
        if lane == 0:
            res[warp] = partial


def _matvec(per_thread=False, first_32=False, all_lanes_write=False, guard_lanes=False):
    @cuda.jit
    def kernel(a, x, y):
        if per_thread:  # one thread per row: each thread walks its own row
            row = cuda.grid(1)
            if row < a.shape[0]:
                acc = float32(0.0)
                for j in range(a.shape[1]):
                    acc += a[row, j] * x[j]
                y[row] = acc
            return
        row = cuda.blockIdx.x * 2 + cuda.threadIdx.x // 32
        lane = cuda.threadIdx.x % 32
        if row >= a.shape[0]:
            return
        v = float32(0.0)
        if first_32:
            if lane < a.shape[1]:
                v = a[row, lane] * x[lane]
        else:
            if guard_lanes and lane >= a.shape[1]:
                return  # these lanes will be missing from the shuffles
            for j in range(lane, a.shape[1], 32):
                v += a[row, j] * x[j]
        for offset in (16, 8, 4, 2, 1):
            v += cuda.shfl_down_sync(0xFFFFFFFF, v, offset)
        if all_lanes_write:
            y[row] = cuda.shfl_sync(0xFFFFFFFF, v, 0)  # the right value, written by 32 lanes
        elif lane == 0:
            y[row] = v

    return kernel


@pytest.mark.parametrize("kernel", [matvec_xor_shuffles, _matvec()])
def test_matvec_warp_accepts_correct_kernels(kernel):
    result = check("matvec_warp", kernel)
    assert result.passed, result.message
    assert "coalesced" in result.message


@pytest.mark.parametrize(
    "kernel, hints",
    [
        (_matvec(per_thread=True), ["not coalesced", "32 consecutive elements of ONE row"]),
        (_matvec(first_32=True), ["only the first 32 columns were summed"]),
        (_matvec(all_lanes_write=True), ["write-write race", "exactly one thread"]),
        (_matvec(guard_lanes=True), ["do not return early from lanes that have no column"]),
    ],
    ids=["thread-per-row", "first-32-columns", "every-lane-writes", "lanes-exit-early"],
)
def test_matvec_warp_rejects_mistakes_with_their_hint(kernel, hints):
    result = check("matvec_warp", kernel)
    assert not result.passed
    for hint in hints:
        assert hint in result.message, result.message


# --- matmul_tiled_traffic ----------------------------------------------------------------------


def test_traffic_accepts_the_formula_and_explains_mistakes():
    n, tile = 4096, 32
    assert check("matmul_tiled_traffic", lambda: 2 * n**3 * 4 / tile / 1e9).passed
    for value, hint in (
        (2 * n**3 * 4 / 1e9, "naive kernel's traffic"),
        (2 * n**3 * 4 / tile**2 / 1e9, "not 32x32 times"),
        (2 * n**2 * 4 / 1e9, "that is the ideal"),
        (2 * n**3 * 4 / tile, "not bytes"),
    ):
        result = check("matmul_tiled_traffic", lambda value=value: value)
        assert not result.passed and hint in result.message, result.message


def test_traffic_answer_agrees_with_the_cost_model():
    loads = gu.matmul.global_loads("tiled", 4096, 4096, 4096, 32)
    assert check("matmul_tiled_traffic", lambda: 4 * loads / 1e9).passed


# --- round_to_bf16 -------------------------------------------------------------------------------


def bf16_with_torch(x):  # correct, and nothing like the bit-level solution
    return torch.from_numpy(x).to(torch.bfloat16).float().numpy()


def bf16_with_integer_arithmetic(x):  # correct: round half to even on the upper 16 bits
    bits = x.view(np.uint32).astype(np.uint64)
    upper, lower = bits >> 16, bits & 0xFFFF
    round_up = (lower > 0x8000) | ((lower == 0x8000) & (upper & 1 == 1))
    return ((upper + round_up) << 16).astype(np.uint32).view(np.float32)


def bf16_truncates(x):
    return (x.view(np.uint32) & 0xFFFF0000).view(np.float32)


def bf16_rounds_half_up(x):
    return ((x.view(np.uint32) + 0x8000) & 0xFFFF0000).view(np.float32)


def bf16_is_fp16(x):
    return x.astype(np.float16).astype(np.float32)


def bf16_stub(x):
    raise NotImplementedError()


@pytest.mark.parametrize("function", [bf16_with_torch, bf16_with_integer_arithmetic])
def test_round_to_bf16_accepts_correct_functions(function):
    result = check("round_to_bf16", function)
    assert result.passed, result.message


@pytest.mark.parametrize(
    "function, hint",
    [
        (bf16_truncates, "you truncated"),
        (bf16_rounds_half_up, "ties must round to even"),
        (bf16_is_fp16, "that is fp16"),
        (lambda x: x[:10], "returned shape (10,)"),
        (lambda x: None, "returned None"),
    ],
    ids=["truncates", "half-up", "fp16", "wrong-shape", "returns-none"],
)
def test_round_to_bf16_rejects_mistakes_with_their_hint(function, hint):
    result = check("round_to_bf16", function)
    assert not result.passed and hint in result.message, result.message


def test_round_to_bf16_stub_is_not_attempted():
    result = check("round_to_bf16", bf16_stub)
    assert not result.attempted and "not attempted yet" in result.message


def test_lab_06_exercises_are_registered_in_order():
    assert gu.exercises.ids("06_matmul") == [
        "matmul_tiled",
        "matmul_register_tiled",
        "matvec_warp",
        "matmul_tiled_traffic",
        "round_to_bf16",
    ]
