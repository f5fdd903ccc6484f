"""Record chapter 03's host<->device transfer and kernel times on a real GPU, for the simulator.

Usage, on a machine with an NVIDIA GPU, from the repository root:

    python benchmarks/ch03_transfers.py

For arrays of 2^16 to 2^26 float32 values it times, with device events (median of 20 after 2
warm-ups, each result checked first): one array copied to the device and back, from pinned and
from pageable host memory; ``out = a + b`` on device arrays; and the same kernel given NumPy
arrays, which Numba copies in and back on every launch. It then writes
``gpu_utils/reference_data/ch03_transfers.json`` with the device, date and command. Commit that
file; notebooks/03_first_kernels.ipynb shows it when it runs on the simulator.
"""

from __future__ import annotations

import sys

import gpu_utils as gu

NAME = "ch03_transfers"
SIZES = [2**16, 2**18, 2**20, 2**22, 2**24, 2**26]  # 256 KiB to 256 MiB per array


def main() -> int:
    if gu.reference.refuse_without_gpu():
        return 2
    rows = gu.transfers.measure(SIZES, repeat=20)
    for row in rows:
        print(
            f"n = {row['n']:>10,}  {row['step']:<28} {row['median_s'] * 1e6:>10.1f} us  "
            f"{row['gb_per_s']:>8.1f} GB/s"
        )
    path = gu.reference.save(NAME, {"threads_per_block": gu.transfers.THREADS, "rows": rows})
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
