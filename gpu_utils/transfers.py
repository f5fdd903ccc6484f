"""What moving data between the host and the GPU costs, next to the kernel (chapter 03).

A discrete GPU reaches the host's memory over PCI Express. The link's bandwidth per direction is
lanes x transfer rate x encoding efficiency / 8 bits (PCI-SIG, PCI Express Base Specifications:
3.0 (2010), 4.0 (2017) and 5.0 (2019) run at 8, 16 and 32 GT/s per lane, with 128b/130b
encoding). An x16 link is then about 16, 32 and 63 GB/s per direction: 50 to 150 times less than
the GPU's own memory (``gu.specs``). These are link rates; a copy also pays for packet headers and
set-up, so measured copies reach somewhat less, and copies from ordinary (pageable) host memory
less again, because the driver first stages them through a pinned buffer.

:func:`estimate` turns those figures into times; :func:`measure` times the copies and a kernel on
a real GPU (``benchmarks/ch03_transfers.py`` records its results for learners on the simulator).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
from numba import cuda  # gpu_utils is imported first (gu.transfers), so the mode is settled
from numba.cuda.core.errors import NumbaPerformanceWarning

from . import runtime
from .bench import BenchResult, bench

__all__ = ["PCIE", "Estimate", "estimate", "measure", "pcie_bandwidth"]

#: Transfer rate per lane in GT/s (gigatransfers per second) and the source of each figure.
PCIE: Mapping[str, tuple[float, str]] = MappingProxyType(
    {
        "3.0": (8.0, "PCI-SIG, PCI Express Base Specification Revision 3.0 (2010): 8.0 GT/s"),
        "4.0": (16.0, "PCI-SIG, PCI Express Base Specification Revision 4.0 (2017): 16.0 GT/s"),
        "5.0": (32.0, "PCI-SIG, PCI Express Base Specification Revision 5.0 (2019): 32.0 GT/s"),
    }
)
ENCODING = 128 / 130  # 128b/130b line code, PCIe 3.0 and later (same specifications)


def pcie_bandwidth(generation: str, lanes: int = 16) -> float:
    """Link bandwidth per direction in bytes/s: lanes x GT/s x 128/130 / 8."""
    if generation not in PCIE:
        raise ValueError(f"PCIe generation {generation!r}: use one of {', '.join(PCIE)}")
    if lanes not in (1, 2, 4, 8, 16):
        raise ValueError(f"lanes={lanes}: a PCIe link has 1, 2, 4, 8 or 16 lanes")
    rate, _ = PCIE[generation]
    return lanes * rate * 1e9 * ENCODING / 8


@dataclass(frozen=True)
class Estimate:
    """Lower bounds on the time of each step, from bandwidths alone (seconds)."""

    to_device: float
    kernel: float
    to_host: float

    @property
    def total(self) -> float:
        return self.to_device + self.kernel + self.to_host

    @property
    def transfer_share(self) -> float:
        """The fraction of the total spent copying."""
        return (self.to_device + self.to_host) / self.total


def estimate(
    bytes_to_device: float,
    kernel_bytes: float,
    bytes_to_host: float,
    *,
    link_bandwidth: float,
    memory_bandwidth: float,
) -> Estimate:
    """Each step's time if it ran at its bandwidth: bytes / (bytes per second).

    For ``out = a + b`` on n float32 values: 8n bytes to the device, 12n bytes of kernel traffic
    (read a and b, write out), 4n bytes back.
    """
    if link_bandwidth <= 0 or memory_bandwidth <= 0:
        raise ValueError("bandwidths must be positive (bytes per second)")
    return Estimate(
        to_device=bytes_to_device / link_bandwidth,
        kernel=kernel_bytes / memory_bandwidth,
        to_host=bytes_to_host / link_bandwidth,
    )


@cuda.jit
def _vector_add(a, b, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a[i] + b[i]


THREADS = 256  # eight warps per block; any multiple of 32 from 128 up streams memory equally well


def _row(n: int, name: str, result: BenchResult, nbytes: int) -> dict:
    return {
        "n": n,
        "step": name,
        "bytes": nbytes,
        "median_s": result.median,
        "q1_s": result.q1,
        "q3_s": result.q3,
        "gb_per_s": nbytes / result.median / 1e9 if result.median > 0 else None,
    }


def _measure_one(n: int, repeat: int, target: str, rng: np.random.Generator) -> list[dict]:
    """All steps for arrays of n float32 values; ``target="simulator"`` only exercises the code."""
    nbytes = 4 * n
    a = cuda.pinned_array(n, dtype=np.float32)
    b = cuda.pinned_array(n, dtype=np.float32)
    out = cuda.pinned_array(n, dtype=np.float32)
    a[:] = rng.random(n, dtype=np.float32)
    b[:] = rng.random(n, dtype=np.float32)
    a_pageable, b_pageable = np.array(a), np.array(b)
    out_pageable = np.empty(n, dtype=np.float32)
    d_a, d_b = cuda.to_device(a), cuda.to_device(b)
    d_out = cuda.device_array(n, dtype=np.float32)
    blocks = (n + THREADS - 1) // THREADS

    # Correct first: one full round trip, checked against NumPy.
    _vector_add[blocks, THREADS](d_a, d_b, d_out)
    d_out.copy_to_host(out)
    if not np.array_equal(out, a + b):
        raise AssertionError(f"vector_add gave a wrong result for n = {n}; nothing was timed")

    steps = (
        ("to device, pinned", lambda: d_a.copy_to_device(a), nbytes),
        ("to device, pageable", lambda: d_a.copy_to_device(a_pageable), nbytes),
        ("kernel", lambda: _vector_add[blocks, THREADS](d_a, d_b, d_out), 3 * nbytes),
        ("to host, pinned", lambda: d_out.copy_to_host(out), nbytes),
        ("to host, pageable", lambda: d_out.copy_to_host(out_pageable), nbytes),
        # NumPy arguments: Numba copies a, b and out to the device and all three back, each time.
        (
            "kernel with NumPy arguments",
            lambda: _vector_add[blocks, THREADS](a_pageable, b_pageable, out_pageable),
            6 * nbytes,
        ),
    )
    rows = []
    for step, fn, moved in steps:
        result = bench(fn, warmup=2, repeat=repeat, target=target, label=step)
        rows.append(_row(n, step, result, moved))
    return rows


def _measure(sizes: Sequence[int], repeat: int, target: str) -> list[dict]:
    rng = np.random.default_rng(0)
    return [row for n in sizes for row in _measure_one(n, repeat, target, rng)]


def measure(sizes: Sequence[int], repeat: int = 20) -> list[dict]:
    """Time copies and ``out = a + b`` on this GPU for n float32 values per array, each n in sizes.

    One row per (n, step): the median and quartiles in seconds and the bytes moved. Steps: one
    array to the device and back from pinned and from pageable host memory; the kernel on device
    arrays; the kernel given NumPy arrays (Numba copies all three in and back).
    """
    if runtime.mode != "gpu":
        raise RuntimeError(
            "measuring transfers needs a GPU; on the simulator, chapter 03 shows the recorded "
            "measurements of benchmarks/ch03_transfers.py (gu.reference.load('ch03_transfers'))"
        )
    if not sizes or any(int(n) < 1 for n in sizes):
        raise ValueError("sizes: one or more positive element counts")
    with warnings.catch_warnings():  # the NumPy-argument launch warns about its copies: on purpose
        warnings.simplefilter("ignore", NumbaPerformanceWarning)
        return _measure([int(n) for n in sizes], repeat, "gpu")
