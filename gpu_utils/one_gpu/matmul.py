"""Cost model of matrix multiplication, and matmul rates per number format (chapter 06).

For ``C = A @ B`` with ``A`` of shape (M, K) and ``B`` of shape (K, N):

* FLOPs: ``2 M N K`` (one multiply and one add per term of each dot product);
* the least global-memory traffic: read A and B once, write C once;
* what each kernel of chapter 06 actually loads from global memory, counted exactly as the
  kernels are written (loads outside the matrices are skipped by their guards):

  - one thread per output: each thread reads a row of A and a column of B, ``2 M N K`` values;
  - tiles of ``BM x BN`` outputs per block (``BM = BN = T`` for the shared-memory kernel): each
    block reads its row panel of A and its column panel of B once, so A is read once per block
    column and B once per block row: ``M K ceil(N / BN) + K N ceil(M / BM)`` values.

:func:`matmul_rates` times ``torch.matmul`` in several formats on a GPU (tensor cores for tf32,
fp16 and bf16); ``benchmarks/ch06_tensor_cores.py`` records its rows for learners on the simulator.
"""

from __future__ import annotations

from collections.abc import Iterable

from .. import runtime
from ..bench import bench
from .backends import torch_device

__all__ = ["RATE_FORMATS", "flops", "global_loads", "intensity", "matmul_rates", "min_bytes"]

KERNELS = ("naive", "tiled")


def flops(m: int, n: int, k: int) -> int:
    """Floating-point operations of an (m x k) @ (k x n) product."""
    return 2 * m * n * k


def min_bytes(m: int, n: int, k: int, bytes_per_value: int = 4) -> int:
    """The least traffic: each input read once and the output written once."""
    return bytes_per_value * (m * k + k * n + m * n)


def _blocks(n: int, per_block: int) -> int:
    return -(-n // per_block)


def global_loads(kernel: str, m: int, n: int, k: int, tile: int | tuple[int, int] = 1) -> int:
    """Values a chapter-06 kernel loads from global memory (see the module docstring).

    ``kernel`` is ``"naive"`` or ``"tiled"``; for ``"tiled"``, ``tile`` is the block's output tile,
    ``T`` or ``(BM, BN)`` (the register-tiled kernel is ``"tiled"`` with its block tile).
    """
    if kernel == "naive":
        return 2 * m * n * k
    if kernel != "tiled":
        raise ValueError(f"kernel={kernel!r}: use one of {', '.join(KERNELS)}")
    bm, bn = (tile, tile) if isinstance(tile, int) else tile
    if bm < 1 or bn < 1:
        raise ValueError("tile sizes must be at least 1")
    return m * k * _blocks(n, bn) + k * n * _blocks(m, bm)


def intensity(kernel: str, m: int, n: int, k: int, tile=1, bytes_per_value: int = 4) -> float:
    """FLOPs per byte of global-memory loads for one of the kernels."""
    return flops(m, n, k) / (bytes_per_value * global_loads(kernel, m, n, k, tile))


#: torch dtype names for the formats :func:`matmul_rates` times ("tf32" is fp32 data with
#: ``torch.backends.cuda.matmul.allow_tf32`` on).
RATE_FORMATS = ("fp32", "tf32", "fp16", "bf16")


def matmul_rates(sizes: Iterable[int], formats: Iterable[str] = RATE_FORMATS, repeat: int = 10):
    """Time ``torch.matmul`` of n x n matrices on the GPU per format; one row (a dict) each.

    Each product is checked against an fp64 reference (with a tolerance for the format) before it
    is timed. Needs GPU mode and a CUDA build of PyTorch.
    """
    if runtime.mode != "gpu" or torch_device() != "cuda":
        raise RuntimeError(
            "matmul_rates times tensor cores, so it needs an NVIDIA GPU and a CUDA build of "
            f"PyTorch (mode here: {runtime.mode}, torch device: {torch_device()})."
        )
    import torch

    dtypes = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16}
    dtypes["bf16"] = torch.bfloat16
    tolerance = {"fp32": 1e-4, "tf32": 5e-3, "fp16": 5e-3, "bf16": 3e-2}
    rows = []
    previous = torch.backends.cuda.matmul.allow_tf32
    try:
        for fmt in formats:
            if fmt not in dtypes:
                raise ValueError(f"format {fmt!r}: use some of {', '.join(RATE_FORMATS)}")
            torch.backends.cuda.matmul.allow_tf32 = fmt == "tf32"
            for n in sizes:
                gen = torch.Generator(device="cuda").manual_seed(n)
                a = torch.randn(n, n, device="cuda", generator=gen).to(dtypes[fmt])
                b = torch.randn(n, n, device="cuda", generator=gen).to(dtypes[fmt])
                out = torch.matmul(a, b)
                reference = a.double() @ b.double()
                error = ((out.double() - reference).norm() / reference.norm()).item()
                if error > tolerance[fmt]:
                    raise AssertionError(f"{fmt} matmul at n={n}: relative error {error:.2g}")
                result = bench(
                    lambda a=a, b=b: torch.matmul(a, b), flops=flops(n, n, n), repeat=repeat
                )
                rows.append(
                    {
                        "format": fmt,
                        "size": n,
                        "seconds": result.median,
                        "q1": result.q1,
                        "q3": result.q3,
                        "flops_per_s": result.flops_per_s,
                        "relative_error": error,
                    }
                )
    finally:
        torch.backends.cuda.matmul.allow_tf32 = previous
    return rows
