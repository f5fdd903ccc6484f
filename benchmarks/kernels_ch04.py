"""Chapter 04's solution kernels for ``benchmarks/kernels.py``: the grid-stride copy, the tiled
transpose (padded, and unpadded and naive for comparison) and the shared-memory stencil. The
kernels are the lab's solutions (solutions/04_memory_lab.ipynb), repeated here as a script."""

from __future__ import annotations

import numpy as np
from kernels import KernelBenchmark
from numba import cuda, float32

TILE, ROWS = 32, 8
STENCIL_THREADS = 128
# A shared array's shape must be numbers or global constants: numba's CUDA compiler rejects an
# expression such as TILE + 1 there (the simulator does not), so the sums are constants too.
PADDED = TILE + 1  # + 1: a column spans all 32 banks
STENCIL_CELLS = STENCIL_THREADS + 2  # the block's values and one halo cell on each side


@cuda.jit
def copy_grid_stride(src, dst):
    for k in range(cuda.grid(1), src.size, cuda.gridsize(1)):
        dst[k] = src[k]


@cuda.jit
def transpose_naive(a, out):
    x = cuda.blockIdx.x * TILE + cuda.threadIdx.x
    y = cuda.blockIdx.y * TILE + cuda.threadIdx.y
    for j in range(0, TILE, ROWS):  # no bounds check: the sizes are multiples of TILE
        out[x, y + j] = a[y + j, x]


@cuda.jit
def transpose_tiled_unpadded(a, out):
    tile = cuda.shared.array((TILE, TILE), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    x = cuda.blockIdx.x * TILE + tx
    y = cuda.blockIdx.y * TILE + ty
    for j in range(0, TILE, ROWS):
        if y + j < a.shape[0] and x < a.shape[1]:
            tile[ty + j, tx] = a[y + j, x]
    cuda.syncthreads()
    x = cuda.blockIdx.y * TILE + tx
    y = cuda.blockIdx.x * TILE + ty
    for j in range(0, TILE, ROWS):
        if y + j < out.shape[0] and x < out.shape[1]:
            out[y + j, x] = tile[tx, ty + j]


@cuda.jit
def transpose_tiled(a, out):
    tile = cuda.shared.array((TILE, PADDED), float32)
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    x = cuda.blockIdx.x * TILE + tx
    y = cuda.blockIdx.y * TILE + ty
    for j in range(0, TILE, ROWS):
        if y + j < a.shape[0] and x < a.shape[1]:
            tile[ty + j, tx] = a[y + j, x]
    cuda.syncthreads()
    x = cuda.blockIdx.y * TILE + tx
    y = cuda.blockIdx.x * TILE + ty
    for j in range(0, TILE, ROWS):
        if y + j < out.shape[0] and x < out.shape[1]:
            out[y + j, x] = tile[tx, ty + j]


@cuda.jit
def stencil_shared(x, out):
    tile = cuda.shared.array(STENCIL_CELLS, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    n = x.size
    tile[t + 1] = x[i] if i < n else 0.0
    if t == 0:
        tile[0] = x[i - 1] if 0 < i <= n else 0.0
    if t == STENCIL_THREADS - 1:
        tile[STENCIL_THREADS + 1] = x[i + 1] if i + 1 < n else 0.0
    cuda.syncthreads()
    if i < n:
        out[i] = tile[t] - 2 * tile[t + 1] + tile[t + 2]


def _laplacian(x: np.ndarray) -> np.ndarray:
    padded = np.concatenate(([0.0], x.astype(np.float64), [0.0]))
    return (padded[:-2] - 2 * padded[1:-1] + padded[2:]).astype(np.float32)


def _copy(n: int, blocks: int | None, threads: int):
    def setup():
        nonlocal blocks
        if blocks is None:  # several blocks per SM, on the GPU that runs it
            blocks = cuda.get_current_device().MULTIPROCESSOR_COUNT * 16
        host = np.random.default_rng(0).random(n, dtype=np.float32)
        src, dst = cuda.to_device(host), cuda.device_array(n, np.float32)

        def run() -> None:
            copy_grid_stride[blocks, threads](src, dst)

        def verify() -> None:
            np.testing.assert_array_equal(dst.copy_to_host(), host)

        return run, verify

    return setup


def _transpose(kernel, m: int):
    def setup():
        host = np.random.default_rng(0).random((m, m), dtype=np.float32)
        a, out = cuda.to_device(host), cuda.device_array((m, m), np.float32)
        grid = ((m + TILE - 1) // TILE, (m + TILE - 1) // TILE)

        def run() -> None:
            kernel[grid, (TILE, ROWS)](a, out)

        def verify() -> None:
            np.testing.assert_array_equal(out.copy_to_host(), host.T)

        return run, verify

    return setup


def _stencil(n: int):
    def setup():
        host = np.random.default_rng(0).random(n, dtype=np.float32)
        x, out = cuda.to_device(host), cuda.device_array(n, np.float32)
        blocks = (n + STENCIL_THREADS - 1) // STENCIL_THREADS

        def run() -> None:
            stencil_shared[blocks, STENCIL_THREADS](x, out)

        def verify() -> None:
            np.testing.assert_allclose(out.copy_to_host(), _laplacian(host), rtol=1e-5, atol=1e-6)

        return run, verify

    return setup


def benchmarks(tiny: bool) -> list[KernelBenchmark]:
    if tiny:  # sizes the simulator runs in a second (tests only)
        n, m, blocks, threads, stencil_n = 4096, 64, 2, 64, 1000
    else:  # 256 MiB copies and transposes: five times an H100's 50 MB L2
        n, m, threads, blocks = 1 << 26, 8192, 256, None
        stencil_n = n
    matrix_bytes = 2 * 4 * m * m  # read once, written once
    # host: the input made, the output copied back, the expected result (stencil: float64 work)
    vector_host, matrix_host = 3 * 4 * n, 3 * 4 * m * m
    return [
        KernelBenchmark(
            "copy_grid_stride",
            f"n = {n:,}",
            _copy(n, blocks, threads),
            bytes=2 * 4 * n,
            target=0.8,
            host_bytes=vector_host,
        ),
        KernelBenchmark(
            "transpose_naive",
            f"{m} x {m}",
            _transpose(transpose_naive, m),
            bytes=matrix_bytes,
            host_bytes=matrix_host,
        ),
        KernelBenchmark(
            "transpose_tiled_unpadded",
            f"{m} x {m}",
            _transpose(transpose_tiled_unpadded, m),
            bytes=matrix_bytes,
            host_bytes=matrix_host,
        ),
        KernelBenchmark(
            "transpose_tiled",
            f"{m} x {m}",
            _transpose(transpose_tiled, m),
            bytes=matrix_bytes,
            target=0.8,
            host_bytes=matrix_host,
        ),
        KernelBenchmark(
            "stencil_shared",
            f"n = {stencil_n:,}",
            _stencil(stencil_n),
            bytes=2 * 4 * stencil_n,
            target=0.8,
            host_bytes=3 * 4 * stencil_n + 4 * 8 * stencil_n,  # _laplacian works in float64
        ),
    ]
