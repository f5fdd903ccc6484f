"""Chapter 05's reductions for ``benchmarks/kernels.py``: the shared-memory versions of the
notebook (sequential addressing, first add during load, shuffles with one atomic per block) and
the grid-stride reduction that the target applies to (80% of copy bandwidth on an H100-class GPU).
The kernels are those of notebooks/05_parallel_patterns.ipynb, repeated here as a script; the
grid-stride one adds four independent values per iteration, so each thread keeps four loads in
flight (enough bytes in flight per SM to cover the memory latency)."""

from __future__ import annotations

import numpy as np
from kernels import KernelBenchmark
from numba import cuda, float32

BLOCK = 64  # as in the notebook and the lab; 32 resident blocks of 64 fill an SM's 2,048 threads


@cuda.jit
def reduce_sequential(x, partial):
    s = cuda.shared.array(BLOCK, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    s[t] = x[i] if i < x.size else 0.0
    cuda.syncthreads()
    stride = BLOCK // 2
    while stride > 0:
        if t < stride:
            s[t] += s[t + stride]
        cuda.syncthreads()
        stride //= 2
    if t == 0:
        partial[cuda.blockIdx.x] = s[0]


@cuda.jit
def reduce_first_add(x, partial):
    s = cuda.shared.array(BLOCK, float32)
    t = cuda.threadIdx.x
    i = cuda.blockIdx.x * 2 * BLOCK + t
    value = x[i] if i < x.size else 0.0
    if i + BLOCK < x.size:
        value += x[i + BLOCK]
    s[t] = value
    cuda.syncthreads()
    stride = BLOCK // 2
    while stride > 0:
        if t < stride:
            s[t] += s[t + stride]
        cuda.syncthreads()
        stride //= 2
    if t == 0:
        partial[cuda.blockIdx.x] = s[0]


@cuda.jit
def reduce_shuffle_atomic(x, total):
    s = cuda.shared.array(BLOCK, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    s[t] = x[i] if i < x.size else 0.0
    cuda.syncthreads()
    stride = BLOCK // 2
    while stride > 32:  # shared-memory rounds while whole warps stay busy
        if t < stride:
            s[t] += s[t + stride]
        cuda.syncthreads()
        stride //= 2
    if t < 32:
        v = s[t] + s[t + 32]
        for offset in (16, 8, 4, 2, 1):
            v += cuda.shfl_down_sync(0xFFFFFFFF, v, offset)
        if t == 0:
            cuda.atomic.add(total, 0, v)


@cuda.jit
def reduce_grid_stride(x, total):
    s = cuda.shared.array(BLOCK, float32)
    t = cuda.threadIdx.x
    i, step = cuda.grid(1), cuda.gridsize(1)
    v0 = v1 = v2 = v3 = float32(0.0)
    while i + 3 * step < x.size:  # four independent loads per iteration
        v0 += x[i]
        v1 += x[i + step]
        v2 += x[i + 2 * step]
        v3 += x[i + 3 * step]
        i += 4 * step
    while i < x.size:
        v0 += x[i]
        i += step
    s[t] = (v0 + v1) + (v2 + v3)
    cuda.syncthreads()
    stride = BLOCK // 2
    while stride > 32:
        if t < stride:
            s[t] += s[t + stride]
        cuda.syncthreads()
        stride //= 2
    if t < 32:
        v = s[t] + s[t + 32]
        for offset in (16, 8, 4, 2, 1):
            v += cuda.shfl_down_sync(0xFFFFFFFF, v, offset)
        if t == 0:
            cuda.atomic.add(total, 0, v)


def _blocks(n: int, per_block: int) -> int:
    return (n + per_block - 1) // per_block


def _reduction(kernel, n: int, grid: int | None, to_total: bool):
    """Setup for one reduction: partial sums (checked by their sum) or a total via atomics;
    ``grid`` None: 32 blocks per SM of the GPU that runs it."""

    def setup():
        nonlocal grid
        if grid is None:
            grid = cuda.get_current_device().MULTIPROCESSOR_COUNT * 32
        host = np.random.default_rng(0).uniform(0.5, 1.5, n).astype(np.float32)
        exact = host.sum(dtype=np.float64)
        x = cuda.to_device(host)
        out = cuda.to_device(np.zeros(1 if to_total else grid, dtype=np.float32))
        first = [True]

        def run() -> None:
            kernel[grid, BLOCK](x, out)

        def verify() -> None:
            got = out.copy_to_host().astype(np.float64)
            total = got[0] if to_total else got.sum()
            if first[0] or not to_total:  # atomics accumulate over repeated runs
                np.testing.assert_allclose(total, exact, rtol=1e-3)  # float32 partial sums
            first[0] = False

        return run, verify

    return setup


def benchmarks(tiny: bool) -> list[KernelBenchmark]:
    if tiny:  # sizes the simulator runs in a second (tests only)
        n, resident = 200, 2
    else:  # 256 MiB of float32: far beyond the L2 cache
        n = 1 << 26
        resident = None  # 32 blocks per SM, counted in setup on the GPU
    size, read, host = f"n = {n:,}", 4 * n, 3 * 4 * n  # host: made, its float64 sum
    return [
        KernelBenchmark(
            "reduce_sequential",
            size,
            _reduction(reduce_sequential, n, _blocks(n, BLOCK), to_total=False),
            bytes=read,
            flops=n,
            host_bytes=host,
        ),
        KernelBenchmark(
            "reduce_first_add",
            size,
            _reduction(reduce_first_add, n, _blocks(n, 2 * BLOCK), to_total=False),
            bytes=read,
            flops=n,
            host_bytes=host,
        ),
        KernelBenchmark(
            "reduce_shuffle_atomic",
            size,
            _reduction(reduce_shuffle_atomic, n, _blocks(n, BLOCK), to_total=True),
            bytes=read,
            flops=n,
            host_bytes=host,
        ),
        KernelBenchmark(
            "reduce_grid_stride",
            size,
            _reduction(reduce_grid_stride, n, resident, to_total=True),
            bytes=read,
            flops=n,
            host_bytes=host,
            target=0.8,
        ),
    ]
