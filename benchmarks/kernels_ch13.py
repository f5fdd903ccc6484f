"""Chapter 13's decode kernels for ``benchmarks/kernels.py``: the fp32 decode GEMV (Numba, one
block of 64 threads per row) and the weight-only int8 GEMV with a scale per 128 columns
(Triton), both from ``gu.inference_kernels`` (the solutions of lab 13, part 2). Both are bound by
reading their weights, so both are compared with the copy ceiling; neither has a target yet (no
GPU has run them). Their two times give the int8 speed-up measured against the bytes bound
``gu.inference.weight_only_speedup_bound`` (about 3.9x here: 4 bytes against 1 + 4/128)."""

from __future__ import annotations

import numpy as np
from kernels import KernelBenchmark
from numba import cuda

import gpu_utils as gu

GROUP = 128  # the chapter's group (Marlin's figure is at group 128)
INT8_BLOCK = 128  # columns per pass of a program


def _gemv(rows: int, cols: int):
    def setup():
        ik = gu.inference_kernels
        rng = np.random.default_rng(0)
        w = rng.uniform(-1, 1, (rows, cols)).astype(np.float32)
        x = rng.uniform(-1, 1, cols).astype(np.float32)
        d_w, d_x = cuda.to_device(w), cuda.to_device(x)
        d_y = cuda.device_array(rows, np.float32)
        kernel = ik.decode_gemv()
        check = slice(0, min(rows, 64))  # a few rows: the host product of all would dominate

        def run() -> None:
            kernel[rows, ik.GEMV_THREADS](d_w, d_x, d_y)

        def verify() -> None:
            want = w[check].astype(np.float64) @ x
            np.testing.assert_allclose(d_y.copy_to_host()[check], want, rtol=1e-4, atol=1e-3)

        return run, verify

    return setup


def _int8(rows: int, cols: int):
    def setup():
        import torch

        ik = gu.inference_kernels
        device = "cuda" if gu.mode == "gpu" else "cpu"
        rng = np.random.default_rng(0)
        q = rng.integers(-127, 128, (rows, cols), dtype=np.int8)  # as quantize would store
        scales = rng.uniform(1e-3, 1e-2, (rows, cols // GROUP)).astype(np.float32)
        x = rng.uniform(-1, 1, cols).astype(np.float32)
        args = [torch.from_numpy(a).to(device) for a in (q, scales, x)]
        y = torch.empty(rows, dtype=torch.float32, device=device)
        kernel = ik.int8_gemv()
        check = slice(0, min(rows, 64))

        def run() -> None:
            kernel[(rows,)](*args, y, cols, GROUP=GROUP, BLOCK=INT8_BLOCK)

        def verify() -> None:
            want = gu.inference.dequantize(q[check], scales[check]).astype(np.float64) @ x
            got = y.cpu().numpy()[check]
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)

        return run, verify

    return setup


def benchmarks(tiny: bool) -> list[KernelBenchmark]:
    fp32 = (3, 100) if tiny else (8192, 8192)  # 256 MiB of weights: beyond any L2
    int8 = (3, 2 * GROUP) if tiny else (16384, 16384)  # 256 MiB of int8 weights
    fp32_bytes = gu.inference_kernels.gemv_bytes(*fp32)
    groups = int8[0] * int8[1] // GROUP
    int8_bytes = gu.inference_kernels.gemv_bytes(*int8, weight_bytes=1, groups=groups)
    return [
        KernelBenchmark(
            "decode_gemv",
            f"{fp32[0]:,} x {fp32[1]:,} fp32",
            _gemv(*fp32),
            bytes=fp32_bytes,
            flops=2.0 * fp32[0] * fp32[1],
            host_bytes=fp32_bytes,
        ),
        KernelBenchmark(
            "int8_gemv",
            f"{int8[0]:,} x {int8[1]:,} int8, group {GROUP}",
            _int8(*int8),
            bytes=int8_bytes,
            flops=2.0 * int8[0] * int8[1],
            host_bytes=int8_bytes,
        ),
    ]
