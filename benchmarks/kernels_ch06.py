"""Chapter 06's matrix products for ``benchmarks/kernels.py``, compared with cuBLAS SGEMM: one
thread per output, 32 x 32 shared-memory tiles, and register tiles in two configurations (the
target, 50% of cuBLAS SGEMM on an H100-class GPU, applies to the register-tiled kernel with
128 x 128 block tiles and 8 x 8 outputs per thread). The kernels are those of
notebooks/06_matmul_and_tensor_cores.ipynb with the GPU's tile sizes, repeated here as a script.
"""

from __future__ import annotations

import numpy as np
from kernels import KernelBenchmark
from numba import cuda, float32

TILE = 32


@cuda.jit
def matmul_naive(a, b, out):
    col, row = cuda.grid(2)
    if row < out.shape[0] and col < out.shape[1]:
        acc = float32(0.0)
        for k in range(a.shape[1]):
            acc += a[row, k] * b[k, col]
        out[row, col] = acc


def tiled(TILE: int):
    """The notebook's shared-memory tiled kernel for TILE x TILE tiles and thread blocks (the
    closure's value is a compile-time constant, like a module global)."""

    @cuda.jit
    def matmul_tiled(a, b, out):
        a_tile = cuda.shared.array((TILE, TILE), float32)
        b_tile = cuda.shared.array((TILE, TILE), float32)
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        col, row = cuda.grid(2)
        m, k_total = a.shape
        n = b.shape[1]
        acc = float32(0.0)
        for k0 in range(0, k_total, TILE):
            a_tile[ty, tx] = a[row, k0 + tx] if row < m and k0 + tx < k_total else 0.0
            b_tile[ty, tx] = b[k0 + ty, col] if k0 + ty < k_total and col < n else 0.0
            cuda.syncthreads()
            for k in range(TILE):
                acc += a_tile[ty, k] * b_tile[k, tx]
            cuda.syncthreads()
        if row < m and col < n:
            out[row, col] = acc

    return matmul_tiled


matmul_tiled = tiled(TILE)


def register_tiled(BM: int, BK: int, TM: int):
    """The notebook's register-tiled kernel for square block tiles BM x BM and TM x TM outputs
    per thread (the closure's values are compile-time constants, like module globals)."""
    BN, TN = BM, TM

    @cuda.jit
    def matmul_register_tiled(a, b, out):
        a_tile = cuda.shared.array((BM, BK), float32)
        b_tile = cuda.shared.array((BK, BN), float32)
        acc = cuda.local.array((TM, TN), float32)
        a_reg = cuda.local.array(TM, float32)
        b_reg = cuda.local.array(TN, float32)
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        threads = (BN // TN) * (BM // TM)
        tid = ty * (BN // TN) + tx
        row0, col0 = cuda.blockIdx.y * BM, cuda.blockIdx.x * BN
        m, k_total = a.shape
        n = b.shape[1]
        for i in range(TM):
            for j in range(TN):
                acc[i, j] = 0.0
        for k0 in range(0, k_total, BK):
            for e in range(tid, BM * BK, threads):
                r, c = e // BK, e % BK
                a_tile[r, c] = a[row0 + r, k0 + c] if row0 + r < m and k0 + c < k_total else 0.0
            for e in range(tid, BK * BN, threads):
                r, c = e // BN, e % BN
                b_tile[r, c] = b[k0 + r, col0 + c] if k0 + r < k_total and col0 + c < n else 0.0
            cuda.syncthreads()
            for k in range(BK):
                for i in range(TM):
                    a_reg[i] = a_tile[ty + i * (BM // TM), k]
                for j in range(TN):
                    b_reg[j] = b_tile[k, tx + j * (BN // TN)]
                for i in range(TM):
                    for j in range(TN):
                        acc[i, j] += a_reg[i] * b_reg[j]
            cuda.syncthreads()
        for i in range(TM):
            row = row0 + ty + i * (BM // TM)
            for j in range(TN):
                col = col0 + tx + j * (BN // TN)
                if row < m and col < n:
                    out[row, col] = acc[i, j]

    return matmul_register_tiled


matmul_register_tiled_64 = register_tiled(64, 8, 4)  # 16 x 16 threads, 4 x 4 outputs each
matmul_register_tiled_128 = register_tiled(128, 8, 8)  # 16 x 16 threads, 8 x 8 outputs each


def _blocks(n: int, per_block: int) -> int:
    return (n + per_block - 1) // per_block


def _matmul(kernel, size: tuple[int, int, int], per_block: int, threads: tuple[int, int]):
    m, k, n = size

    def setup():
        rng = np.random.default_rng(0)
        host_a = rng.uniform(-1, 1, (m, k)).astype(np.float32)
        host_b = rng.uniform(-1, 1, (k, n)).astype(np.float32)
        a, b = cuda.to_device(host_a), cuda.to_device(host_b)
        out = cuda.device_array((m, n), dtype=np.float32)
        grid = (_blocks(n, per_block), _blocks(m, per_block))

        def run() -> None:
            kernel[grid, threads](a, b, out)

        def verify() -> None:
            rows = slice(0, min(m, 256))  # a corner is enough: every block computes alike
            expected = host_a[rows].astype(np.float64) @ host_b
            got = out.copy_to_host()[rows]
            np.testing.assert_allclose(got, expected, rtol=1e-3, atol=1e-3 * np.sqrt(k))

        return run, verify

    return setup


def benchmarks(tiny: bool) -> list[KernelBenchmark]:
    if tiny:  # sizes the simulator runs in seconds (tests only); not multiples of the tiles
        sizes = {
            "naive": (20, 9, 18),
            "tiled": (33, 40, 31),
            "reg64": (70, 9, 65),
            "reg128": (40, 12, 36),
        }
    else:
        sizes = dict.fromkeys(("naive", "tiled", "reg64", "reg128"), (4096, 4096, 4096))

    def entry(name, kernel, key, per_block, threads, target=None):
        m, k, n = sizes[key]
        return KernelBenchmark(
            name,
            f"{m} x {k} @ {k} x {n}",
            _matmul(kernel, sizes[key], per_block, threads),
            bytes=4 * (m * k + k * n + m * n),  # the least traffic: inputs read, output written
            flops=2.0 * m * n * k,
            ceiling="sgemm",
            target=target,
            host_bytes=4 * (m * k + k * n + m * n) + 8 * min(m, 256) * (k + 2 * n),
        )

    return [
        entry("matmul_naive", matmul_naive, "naive", 16, (16, 16)),
        entry("matmul_tiled", matmul_tiled, "tiled", TILE, (TILE, TILE)),
        entry("matmul_register_tiled_64", matmul_register_tiled_64, "reg64", 64, (16, 16)),
        entry("matmul_register_tiled_128", matmul_register_tiled_128, "reg128", 128, (16, 16), 0.5),
    ]
