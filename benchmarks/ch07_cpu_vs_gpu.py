"""Record chapter 07's roofline measurements on a real GPU, for learners on the simulator.

Usage, on a machine with an NVIDIA GPU and a CUDA build of PyTorch, from the repository root:

    python benchmarks/ch07_cpu_vs_gpu.py

It times a square matrix product at several sizes and an elementwise add, in float32 (CUDA cores)
and bf16 (tensor cores) with PyTorch on the GPU, and in float32 with NumPy on the host CPU. Each
result is checked before it is timed; GPU times come from device events (``gu.bench``). It writes
``gpu_utils/reference_data/ch07_cpu_vs_gpu.json`` with the device, date and command; commit that
file, and notebooks/07_cpu_gpu_tpu.ipynb shows it when it runs on the simulator.

Each row: device ("gpu" or "cpu"), name, op, dtype, size, intensity (FLOP per byte moved at
least once), flops, bytes, seconds (median), q1, q3, flops_per_s, bytes_per_s.
"""

from __future__ import annotations

import os
import platform
import sys

import numpy as np

import gpu_utils as gu

NAME = "ch07_cpu_vs_gpu"
GPU_MATMUL_SIZES = [256, 1024, 2048, 4096, 8192]
GPU_ADD_SIZE = 2**26
CPU_MATMUL_SIZES = [64, 128, 256, 512, 1024, 2048]
CPU_ADD_SIZE = 2**24
BYTES = {"fp32": 4, "bf16": 2}


def _row(device, op, dtype, n, flops, nbytes, result) -> dict:
    return {
        "device": device,
        "name": f"{op} {n} {dtype}",
        "op": op,
        "dtype": dtype,
        "size": n,
        "intensity": flops / nbytes,
        "flops": flops,
        "bytes": nbytes,
        "seconds": result.median,
        "q1": result.q1,
        "q3": result.q3,
        "flops_per_s": result.flops_per_s,
        "bytes_per_s": result.bytes_per_s,
    }


def _work(op: str, n: int, size: int) -> tuple[float, float]:
    """(FLOPs, bytes moved at least once) of one call."""
    if op == "matmul":
        return 2.0 * n**3, 3.0 * size * n * n
    return float(n), 3.0 * size * n


def measure_gpu(op: str, dtype_name: str, n: int) -> dict:
    import torch

    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype_name]
    shape = (n, n) if op == "matmul" else (n,)
    x = torch.randn(shape, device="cuda", dtype=dtype)
    y = torch.randn(shape, device="cuda", dtype=dtype)
    out = torch.empty_like(x)
    fn = torch.matmul if op == "matmul" else torch.add
    fn(x, y, out=out)
    expected = x.double() @ y.double() if op == "matmul" else x.double() + y.double()
    # bf16 inputs are exact in float64; the error is the rounding of the fp32 accumulation and
    # of the bf16 output (8 bits of mantissa), which grows like sqrt(n) for sums of n products.
    tolerance = (1e-2 if dtype_name == "bf16" else 1e-4) * (n**0.5 if op == "matmul" else 1)
    if not torch.allclose(out.double(), expected, rtol=1e-2, atol=tolerance):
        raise AssertionError(f"torch {op} {dtype_name} at n={n} is wrong on the GPU; not timed")
    flops, nbytes = _work(op, n, BYTES[dtype_name])
    spec = gu.device_info().spec
    peak = None
    if spec is not None:
        peak = spec.fp32_flops if dtype_name == "fp32" else spec.peak_flops("bf16")
    result = gu.bench(
        lambda: fn(x, y, out=out),
        flops=flops,
        bytes=nbytes,
        target="gpu",
        repeat=20,
        peak_flops=peak,
    )
    print(f"  {result}", flush=True)
    return _row("gpu", op, dtype_name, n, flops, nbytes, result)


def measure_cpu(op: str, n: int) -> dict:
    rng = np.random.default_rng(0)
    shape = (n, n) if op == "matmul" else (n,)
    x = rng.standard_normal(shape, dtype=np.float32)
    y = rng.standard_normal(shape, dtype=np.float32)
    out = np.empty_like(x)
    fn = np.matmul if op == "matmul" else np.add
    fn(x, y, out=out)
    expected = x.astype(np.float64) @ y if op == "matmul" else x + y
    if not np.allclose(out, expected, rtol=1e-3, atol=1e-3 * np.sqrt(n)):
        raise AssertionError(f"NumPy {op} at n={n} is wrong; not timed")
    flops, nbytes = _work(op, n, BYTES["fp32"])
    result = gu.bench(lambda: fn(x, y, out=out), flops=flops, bytes=nbytes, target="cpu", repeat=10)
    print(f"  {result}", flush=True)
    return _row("cpu", op, "fp32", n, flops, nbytes, result)


def main() -> int:
    if gu.reference.refuse_without_gpu(torch_cuda=True):
        return 2
    import torch

    rows = []
    print("GPU:", flush=True)
    for dtype in ("fp32", "bf16"):
        rows += [measure_gpu("matmul", dtype, n) for n in GPU_MATMUL_SIZES]
        rows.append(measure_gpu("add", dtype, GPU_ADD_SIZE))
    print("host CPU (NumPy, float32):", flush=True)
    rows += [measure_cpu("matmul", n) for n in CPU_MATMUL_SIZES]
    rows.append(measure_cpu("add", CPU_ADD_SIZE))
    results = {
        "cpu": f"{platform.processor() or platform.machine()}, {os.cpu_count()} logical cores",
        "torch": torch.__version__,
        "tf32_matmul": torch.backends.cuda.matmul.allow_tf32,  # False: fp32 matmuls are true fp32
        "rows": rows,
    }
    path = gu.reference.save(NAME, results)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
