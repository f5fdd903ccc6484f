"""What moving data between the host and the GPU costs, next to the kernel (chapter 03).

A discrete GPU reaches the host's memory over PCI Express. The link's bandwidth per direction is
lanes x transfer rate x encoding efficiency / 8 bits (PCI-SIG, PCI Express Base Specifications:
3.0 (2010), 4.0 (2017) and 5.0 (2019) run at 8, 16 and 32 GT/s per lane, with 128b/130b
encoding). An x16 link is then about 16, 32 and 63 GB/s per direction. Datasheets print another
figure: "PCIe Gen5: 128 GB/s" on the H100's is both directions added and before encoding, 2 x 16
lanes x 32 GT/s / 8; :attr:`HostLink.datasheet_figure` computes it.

:data:`HOST_LINKS` pairs each GPU of ``gu.specs`` with the link its datasheet gives (a T4 has PCIe
3.0, an A100 4.0, an H100 5.0). Each GPU's own memory is then 10 to 120 times faster than its
host link (:func:`memory_to_link_ratios`; ``tests/test_transfers.py`` checks this sentence against
the computed ratios). These are link rates; a copy also pays for packet headers and set-up, so
measured copies reach somewhat less, and copies from ordinary (pageable) host memory less again,
because the driver first stages them through a pinned buffer.

:func:`estimate` turns those figures into times; :func:`measure` times the copies and a kernel on
a real GPU (``benchmarks/ch03_transfers.py`` records its results for learners on the simulator).
:func:`time_breakdown` and :func:`transfer_times` draw them.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
from numba import cuda  # gpu_utils is imported first (gu.transfers), so the mode is settled
from numba.cuda.core.errors import NumbaPerformanceWarning

from .. import runtime
from ..bench import BenchResult, bench
from ..facts import specs

__all__ = [
    "HOST_LINKS",
    "PCIE",
    "Estimate",
    "HostLink",
    "estimate",
    "host_link",
    "measure",
    "memory_to_link_ratios",
    "pcie_bandwidth",
    "time_breakdown",
    "transfer_times",
]

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
    _check_link(generation, lanes)
    rate, _ = PCIE[generation]
    return lanes * rate * 1e9 * ENCODING / 8


def _check_link(generation: str, lanes: int) -> None:
    if generation not in PCIE:
        raise ValueError(f"PCIe generation {generation!r}: use one of {', '.join(PCIE)}")
    if lanes not in (1, 2, 4, 8, 16):
        raise ValueError(f"lanes={lanes}: a PCIe link has 1, 2, 4, 8 or 16 lanes")


@dataclass(frozen=True)
class HostLink:
    """A GPU's link to the host, as its datasheet gives it."""

    generation: str
    lanes: int
    source: str

    def __post_init__(self) -> None:
        _check_link(self.generation, self.lanes)

    @property
    def bandwidth(self) -> float:
        """Bytes/s per direction after encoding: what one copy can use at most."""
        return pcie_bandwidth(self.generation, self.lanes)

    @property
    def datasheet_figure(self) -> float:
        """Bytes/s as datasheets print it: both directions added, before encoding."""
        return 2 * self.lanes * PCIE[self.generation][0] * 1e9 / 8

    @property
    def label(self) -> str:
        return f"PCIe {self.generation} x{self.lanes}"


_B200_HOST = (
    "NVIDIA GB200 NVL72 / HGX B200 datasheet (2024), HGX B200 per-GPU column: 'PCIe Gen5: 128GB/s'"
)

#: Each GPU of ``gu.specs`` and its host link, with the datasheet line that gives it.
HOST_LINKS: Mapping[str, HostLink] = MappingProxyType(
    {
        "T4": HostLink("3.0", 16, "NVIDIA T4 Tensor Core GPU datasheet (2019): 'x16 PCIe Gen3'"),
        "L4": HostLink(
            "4.0", 16, "NVIDIA L4 Tensor Core GPU datasheet (2023): 'PCIe Gen4 x16 64GB/s'"
        ),
        "A100-SXM4-80GB": HostLink(
            "4.0",
            16,
            "NVIDIA A100 Tensor Core GPU datasheet (2021), A100 80GB SXM: 'PCIe Gen4: 64GB/s'",
        ),
        "H100-SXM": HostLink(
            "5.0",
            16,
            "NVIDIA H100 Tensor Core GPU datasheet (2023), H100 SXM: 'PCIe Gen5: 128GB/s'",
        ),
        "H200": HostLink(
            "5.0",
            16,
            "NVIDIA H200 Tensor Core GPU datasheet (2024), H200 SXM: 'PCIe Gen5: 128GB/s'",
        ),
        "B200": HostLink("5.0", 16, _B200_HOST),
    }
)


def host_link(gpu: str) -> HostLink:
    """The host link of a GPU named as in ``gu.specs`` (e.g. "T4", "H100-SXM")."""
    if gpu not in HOST_LINKS:
        raise ValueError(f"no host link recorded for {gpu!r}: use one of {', '.join(HOST_LINKS)}")
    return HOST_LINKS[gpu]


def memory_to_link_ratios() -> dict[str, float]:
    """How many times faster each GPU reads its own memory than its host link carries data:
    memory bandwidth (``gu.specs``) / link bandwidth per direction (:data:`HOST_LINKS`)."""
    return {
        name: specs.get(name).hbm_bandwidth / link.bandwidth for name, link in HOST_LINKS.items()
    }


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


# --- pictures ---------------------------------------------------------------------------------

_STEP_STYLE = {
    "to device, pinned": ("tab:blue", "-", "o"),
    "to device, pageable": ("tab:blue", ":", "o"),
    "to host, pinned": ("tab:green", "-", "s"),
    "to host, pageable": ("tab:green", ":", "s"),
    "kernel": ("tab:red", "-", "D"),
    "kernel with NumPy arguments": ("tab:purple", "--", "^"),
}


def time_breakdown(estimates: dict, *, title: str = ""):
    """Horizontal bars of copy-in, kernel and copy-out times, one bar per labelled Estimate."""
    import matplotlib.pyplot as plt

    labels = list(estimates)
    fig, ax = plt.subplots(figsize=(8.5, 0.55 * len(labels) + 1.4), layout="constrained")
    left = np.zeros(len(labels))
    for part, colour in (
        ("to_device", "tab:blue"),
        ("kernel", "tab:red"),
        ("to_host", "tab:green"),
    ):
        widths = np.array([getattr(estimates[k], part) * 1e3 for k in labels])
        ax.barh(labels, widths, left=left, color=colour, label=part.replace("_", " "))
        left += widths
    for y, key in enumerate(labels):
        share = estimates[key].transfer_share
        ax.text(left[y], y, f"  {share:.0%} copying", va="center", fontsize=8)
    ax.set_xlim(0, left.max() * 1.25)
    ax.set_xlabel("time (ms), if each step ran at its bandwidth")
    ax.invert_yaxis()
    ax.legend(loc="lower right", fontsize=8)
    if title:
        ax.set_title(title, fontsize=10)
    return fig


def transfer_times(rows: list[dict], *, references: dict | None = None, title: str = ""):
    """Measured copy and kernel times (median, bars for the quartiles) and the rates they reach.

    ``rows`` are :func:`gu.transfers.measure` results; ``references`` maps labels to bandwidths
    in bytes/s (a link's rate, the GPU memory's peak), drawn as lines on the right-hand panel.
    """
    import matplotlib.pyplot as plt

    if not rows:
        raise ValueError("no measurements to draw")
    fig, (times, rates) = plt.subplots(1, 2, figsize=(12, 4.4), layout="constrained")
    steps = [step for step in _STEP_STYLE if any(r["step"] == step for r in rows)]
    for step in steps:
        mine = sorted((r for r in rows if r["step"] == step), key=lambda r: r["n"])
        mib = np.array([4 * r["n"] / 2**20 for r in mine])
        median = np.array([r["median_s"] for r in mine]) * 1e3
        spread = np.array([[r["median_s"] - r["q1_s"], r["q3_s"] - r["median_s"]] for r in mine])
        colour, line, marker = _STEP_STYLE[step]
        style = dict(color=colour, ls=line, marker=marker, ms=4, label=step)
        times.errorbar(mib, median, yerr=spread.T * 1e3, capsize=2, **style)
        if step != "kernel with NumPy arguments":  # its time mixes copies and the kernel
            rates.plot(mib, [r["gb_per_s"] for r in mine], **style)
    times.set(xscale="log", yscale="log", xlabel="MiB per array", ylabel="time (ms)")
    times.set_title("time per step (median; bars: quartiles)", fontsize=9)
    rates.set(xscale="log", yscale="log", xlabel="MiB per array", ylabel="GB/s achieved")
    rates.set_title("bytes moved / time", fontsize=9)
    for label, value in (references or {}).items():
        rates.axhline(value / 1e9, color="0.4", lw=0.8, ls="-.")
        rates.annotate(
            f"{label}: {value / 1e9:,.0f} GB/s",
            (0.02, value / 1e9),
            xycoords=("axes fraction", "data"),
            fontsize=7,
            va="bottom",
            color="0.3",
        )
    times.legend(fontsize=7)
    for ax in (times, rates):
        ax.grid(True, which="major", alpha=0.3)
    if title:
        fig.suptitle(title, fontsize=10)
    return fig
