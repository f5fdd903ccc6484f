"""Record chapter 01's CPU-vs-GPU measurements on a real GPU, for learners on the simulator.

Usage, on a machine with an NVIDIA GPU and a CUDA build of PyTorch, from the repository root:

    python benchmarks/ch01_cpu_vs_gpu.py

It times an elementwise add and a matrix product on NumPy, PyTorch on one CPU thread and on every
core, and PyTorch on the GPU (each result checked before it is timed; each point the median of
7 calls, or 20 on the GPU, after 2 untimed warm-up calls; each row names the CPU threads it
used), then writes
``gpu_utils/reference_data/ch01_cpu_vs_gpu.json`` with the device, date and command. Commit that
file; notebooks/01_why_gpus.ipynb shows it when it runs on the simulator.
"""

from __future__ import annotations

import os
import platform
import sys

import gpu_utils as gu

NAME = "ch01_cpu_vs_gpu"
ADD_SIZES_CPU = [10**4, 10**5, 10**6, 10**7, 10**8]
ADD_SIZES_GPU = [10**4, 10**5, 10**6, 10**7, 10**8, 2 * 10**8]
MATMUL_SIZES_CPU = [128, 256, 512, 1024, 2048]
MATMUL_SIZES_GPU = [128, 256, 512, 1024, 2048, 4096, 8192]


def cpu_name() -> str:
    """The CPU's model name where the OS says it (Linux), else what platform reports."""
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main() -> int:
    if gu.mode != "gpu" or "torch-gpu" not in gu.cpu_vs_gpu.backends_here():
        print(
            "This script records GPU measurements, so it needs an NVIDIA GPU (gpu_utils runs in "
            f"{gu.mode} mode here) and a CUDA build of PyTorch "
            f"(torch sees: {gu.backends.torch_device()}). Run it on a GPU machine; nothing was "
            "written.",
            file=sys.stderr,
        )
        return 2
    cpu = ["numpy", "torch-cpu-1", "torch-cpu-all"]
    rows = []
    for op, cpu_sizes, gpu_sizes in (
        ("add", ADD_SIZES_CPU, ADD_SIZES_GPU),
        ("matmul", MATMUL_SIZES_CPU, MATMUL_SIZES_GPU),
    ):
        print(f"timing {op} ...", flush=True)
        rows += gu.cpu_vs_gpu.sweep(op, cpu_sizes, cpu)
        rows += gu.cpu_vs_gpu.sweep(op, gpu_sizes, ["torch-gpu"], repeat=20)
    import torch

    results = {
        "cpu": f"{cpu_name()}, {os.cpu_count()} logical cores",
        "torch": torch.__version__,
        "tf32_matmul": torch.backends.cuda.matmul.allow_tf32,  # False: fp32 matmuls are true fp32
        "rows": rows,
    }
    path = gu.reference.save(NAME, results)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
