"""Record chapter 08's collective measurements with NCCL on real GPUs, for the simulator.

Usage, on a machine with NVIDIA GPUs and a CUDA build of PyTorch, from the repository root:

    python benchmarks/ch08_collectives.py            # 1 KiB to 1 GiB
    python benchmarks/ch08_collectives.py --quick    # 1 KiB to 64 MiB

With two or more GPUs, every rank gets its own GPU and each collective of chapter 08 runs with
NCCL, on 2, 4, 8 ... ranks up to the number of GPUs, through ``gu.collectives.measure`` (each
result checked first, then timed like nccl-tests). The results go to
``gpu_utils/reference_data/ch08_collectives_nccl.json`` with the device, date and command; commit
that file, and notebooks/08_collectives.ipynb shows it when it runs on the simulator.

With one GPU, NCCL cannot run a collective at all: it refuses two ranks on the same GPU
("Duplicate GPU detected", since NCCL 2.5; github.com/NVIDIA/nccl/issues/418). The script says so
and then measures 2 ranks sharing that one GPU through gloo, every call staged through host
memory, saved as ``ch08_collectives_shared_gpu.json``: real measurements of this machine, but of
PCIe copies and loopback TCP, not of NVLink.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

import gpu_utils as gu

NAME = "ch08_collectives_nccl"
SHARED_NAME = "ch08_collectives_shared_gpu"


def world_sizes(gpus: int) -> list[int]:
    """2, 4, 8, ... up to the number of GPUs, and that number itself."""
    sizes = [n for n in (2, 4, 8, 16, 32) if n <= gpus]
    return sorted({*sizes, gpus}) if gpus >= 2 else []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="sizes up to 64 MiB only")
    args = parser.parse_args(argv)
    if gu.mode != "gpu" or gu.backends.torch_device() != "cuda":
        print(
            "This script records GPU measurements, so it needs NVIDIA GPUs (gpu_utils runs in "
            f"{gu.mode} mode here) and a CUDA build of PyTorch (torch sees: "
            f"{gu.backends.torch_device()}). Run it on a GPU machine; nothing was written.",
            file=sys.stderr,
        )
        return 2
    import torch

    gpus = torch.cuda.device_count()
    largest = 26 if args.quick else 30
    sizes = [2**k for k in range(10, largest + 1, 2)]  # bytes: 1 KiB ... 64 MiB or 1 GiB
    results = []
    if gpus >= 2:
        print(f"{gpus} GPUs: NCCL, one GPU per rank, on {world_sizes(gpus)} ranks.")
        for ranks in world_sizes(gpus):
            for op in gu.collectives.OPS:
                rows = gu.collectives.measure(op, sizes, ranks, backend="nccl", timeout=600)
                for row in rows:
                    print(row)
                results += [dataclasses.asdict(row) for row in rows]
        path = gu.reference.save(NAME, results)
    else:
        print(
            "This machine has one GPU. NCCL needs one GPU per rank: it stops two ranks on the same "
            "GPU with 'Duplicate GPU detected' (NCCL 2.5 and later), so no NCCL collective can "
            "run here. Measuring instead 2 ranks that share this GPU through gloo, each call "
            "staged through host memory: PCIe copies and loopback TCP, not NVLink."
        )
        for op in gu.collectives.OPS:
            rows = gu.collectives.measure(
                op, sizes, 2, backend="gloo", gpu_tensors=True, timeout=600
            )
            for row in rows:
                print(row)
            results += [dataclasses.asdict(row) for row in rows]
        path = gu.reference.save(SHARED_NAME, results)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
