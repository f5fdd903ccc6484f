"""Record chapter 06's matmul rates per number format on a real GPU, for learners on the simulator.

Usage, on a machine with an NVIDIA GPU and a CUDA build of PyTorch, from the repository root:

    python benchmarks/ch06_tensor_cores.py

It times ``torch.matmul`` of n x n matrices in fp32 (CUDA cores; TF32 off), tf32, fp16 and bf16
(tensor cores), each result checked against an fp64 product first (``gu.matmul.matmul_rates``),
and writes ``gpu_utils/reference_data/ch06_tensor_cores.json`` with the device, date and command.
Commit that file; notebooks/06_matmul_and_tensor_cores.ipynb shows it on the simulator.
"""

from __future__ import annotations

import sys

import gpu_utils as gu

NAME = "ch06_tensor_cores"
SIZES = [1024, 2048, 4096, 8192]


def main() -> int:
    if gu.mode != "gpu" or gu.backends.torch_device() != "cuda":
        print(
            "This script records GPU measurements, so it needs an NVIDIA GPU (gpu_utils runs in "
            f"{gu.mode} mode here) and a CUDA build of PyTorch (torch sees: "
            f"{gu.backends.torch_device()}). Run it on a GPU machine; nothing was written.",
            file=sys.stderr,
        )
        return 2
    import torch

    rows = gu.matmul.matmul_rates(SIZES)
    spec = gu.device_info().spec
    for row in rows:
        peak = spec.peak_flops(row["format"]) if spec else None
        share = f" ({row['flops_per_s'] / peak:.0%} of the datasheet peak)" if peak else ""
        print(
            f"{row['format']:5} n = {row['size']:5}: {row['flops_per_s'] / 1e12:7.1f} TFLOP/s{share}"
        )
    path = gu.reference.save(NAME, {"torch": torch.__version__, "rows": rows})
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
