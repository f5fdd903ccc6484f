"""Reference kernels of a decode step (chapter 13, lab 13 part 2), for the chapter, the lab's
checkers and ``make gpu-check`` to run and time.

- :func:`decode_gemv`: ``y = W x`` for one token (batch 1), fp32, W (out, in) row-major; one
  block of :data:`GEMV_THREADS` threads per output row, the row read by consecutive threads
  (coalesced), each thread's partial sum reduced by warp shuffles, then the block's
  :data:`GEMV_THREADS` / 32 warp sums through shared memory.
- :func:`int8_gemv`: the same product with weight-only int8 weights and one fp32 scale per group
  of ``GROUP`` input columns (``gu.inference.quantize``'s format), dequantised in a Triton kernel,
  accumulated in fp32; one program per output row.
- :func:`paged_decode_attention`: one decode token per sequence attending over its KV cache,
  gathered through a block table (PagedAttention), online softmax; one program per sequence.

A decode GEMV reads every weight once and does 2 FLOP per weight: it is bound by memory
bandwidth (chapter 13, section 1), so it is judged by bytes per second against the device's
copy ceiling, measured here as ``benchmarks/kernels.py`` measures it (a large device-to-device
copy, bytes read + bytes written per second). On the simulator nothing here states a speed.

Kernels are built on first use; triton loads only then.
"""

from __future__ import annotations

import functools

import numpy as np
from numba import cuda, float32

from .. import runtime  # imported by the package first: the mode is chosen before numba loads

#: Threads per block of the decode GEMV: two warps, so the block's sum has a shared-memory
#: step after the shuffles (and a launch on the simulator stays quick).
GEMV_THREADS = 64
#: Columns per pass of one program of the int8 GEMV.
INT8_BLOCK = 128


def _decode_gemv(w, x, y):
    row = cuda.blockIdx.x  # one block per output row: the grid has exactly `rows` blocks
    t = cuda.threadIdx.x
    acc = float32(0.0)
    for j in range(t, w.shape[1], 64):  # a warp reads 32 consecutive floats: 4 sectors
        acc += w[row, j] * x[j]
    offset = 16
    while offset > 0:  # all 32 lanes take part; lane 0 ends with the warp's sum
        acc += cuda.shfl_down_sync(0xFFFFFFFF, acc, offset)
        offset //= 2
    warp_sums = cuda.shared.array(2, float32)
    if t % 32 == 0:
        warp_sums[t // 32] = acc
    cuda.syncthreads()
    if t == 0:
        y[row] = warp_sums[0] + warp_sums[1]


@functools.cache
def decode_gemv():
    """The Numba CUDA kernel ``decode_gemv(w, x, y)``: launch ``[rows, GEMV_THREADS]``."""
    return cuda.jit(_decode_gemv)


@functools.cache
def int8_gemv():
    """The Triton kernel ``int8_gemv_kernel(q_ptr, scale_ptr, x_ptr, y_ptr, n_cols, GROUP,
    BLOCK)``: launch ``[(rows,)]``; q (rows, n_cols) int8, scales (rows, n_cols // GROUP) fp32.
    (It lives in ``gpu_utils.serving._inference_triton``, which imports triton in the course's mode.)"""
    from ._inference_triton import int8_gemv_kernel

    return int8_gemv_kernel


@functools.cache
def paged_decode_attention():
    """The Triton kernel ``paged_attention_kernel(q_ptr, k_ptr, v_ptr, table_ptr, lens_ptr,
    out_ptr, max_blocks, scale, D, BLOCK_SIZE, BLOCK_D)``: launch ``[(sequences,)]``; one query
    token per sequence attends over its cached keys and values, read block by block through
    its row of the block table (``gu.inference.PagedAllocator``'s layout: the caches are
    (num_blocks, BLOCK_SIZE, D)), with an online softmax (chapter 05)."""
    from ._inference_triton import paged_attention_kernel

    return paged_attention_kernel


def gemv_bytes(rows: int, cols: int, weight_bytes: float = 4, groups: int = 0) -> float:
    """Bytes a GEMV must move at least: the weights, x, y (fp32), and ``groups`` fp32 scales."""
    return rows * cols * weight_bytes + 4 * (cols + rows + groups)


def copy_ceiling(nbytes: int = 1 << 28) -> float:
    """Bytes per second (read + written) of a device-to-device copy of ``nbytes``, timed with
    ``gu.bench`` (the method of ``benchmarks/kernels.py``'s ``copy_ceiling``); GPU mode only."""
    if runtime.mode != "gpu":
        raise RuntimeError("copy_ceiling measures a GPU; this session runs on the simulator")
    from ..bench import bench

    source = cuda.to_device(np.arange(nbytes // 4, dtype=np.float32))
    target = cuda.device_array_like(source)
    result = bench(lambda: target.copy_to_device(source), bytes=2 * nbytes, target="gpu")
    if not np.array_equal(target[:1000].copy_to_host(), np.arange(1000, dtype=np.float32)):
        raise RuntimeError("the device-to-device copy did not copy")
    return result.bytes_per_s


def time_decode_gemv(kernel, rows: int = 8192, cols: int = 8192, threads: int = GEMV_THREADS):
    """(median seconds, bytes per second) of ``kernel[rows, threads](w, x, y)`` on random fp32
    data, after checking its result against NumPy; GPU mode only. 8192 x 8192 fp32 is 256 MiB,
    far more than any GPU's L2 cache, so every weight comes from DRAM."""
    if runtime.mode != "gpu":
        raise RuntimeError("timing needs a GPU; the simulator's time says nothing about one")
    from ..bench import bench

    rng = np.random.default_rng(0)
    w = rng.uniform(-1, 1, (rows, cols)).astype(np.float32)
    x = rng.uniform(-1, 1, cols).astype(np.float32)
    d_w, d_x = cuda.to_device(w), cuda.to_device(x)
    d_y = cuda.device_array(rows, dtype=np.float32)
    kernel[rows, threads](d_w, d_x, d_y)
    cuda.synchronize()
    expected = w.astype(np.float64) @ x
    if not np.allclose(d_y.copy_to_host(), expected, rtol=1e-3, atol=1e-3 * np.sqrt(cols)):
        raise RuntimeError("the kernel's result differs from NumPy's on the timed size")
    result = bench(lambda: kernel[rows, threads](d_w, d_x, d_y), bytes=gemv_bytes(rows, cols))
    return result.median, result.bytes_per_s
