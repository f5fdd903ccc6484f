"""The roofline model: is a kernel limited by memory bandwidth or by arithmetic? (chapter 04;
chapter 07 plots CPUs and TPUs with the same function).

Williams, Waterman & Patterson, "Roofline: an insightful visual performance model for multicore
architectures", Communications of the ACM 52(4):65-76, 2009. A kernel that does F floating-point
operations while moving B bytes to and from DRAM has arithmetic intensity I = F / B (FLOP/byte).
On a device with peak compute P (FLOP/s) and peak bandwidth W (bytes/s), it can reach at most

    attainable(I) = min(P, I x W)

The two roofs meet at the ridge point I* = P / W: below it a kernel is memory-bound, above it
compute-bound.

Usage::

    gu.roofline.arithmetic_intensity(flops=2 * n**3, bytes=3 * 4 * n**2)
    gu.roofline.ridge_point("H100-SXM", dtype="fp32")        # FLOP/byte, from gu.specs
    gu.roofline.roof(("My laptop CPU", 1.0e12, 100e9))      # any device as (name, FLOP/s, bytes/s)
    gu.roofline.plot(["T4", "H100-SXM"], kernels=[gu.roofline.KernelPoint("copy", 0, 8 * n)])
    plt.show()

Devices are ``gu.specs`` names (peaks from the datasheets cited there; ``dtype`` chooses the
compute roof: fp32 CUDA cores, or tf32/fp16/bf16/fp8 tensor cores), ``(name, peak FLOP/s, peak
bytes/s)`` tuples, or :class:`Roof` objects.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from ..facts import specs

__all__ = [
    "CITATION",
    "KernelPoint",
    "Roof",
    "arithmetic_intensity",
    "attainable",
    "bound",
    "plot",
    "ridge_point",
    "roof",
]

CITATION = (
    "S. Williams, A. Waterman, D. Patterson, 'Roofline: an insightful visual performance model "
    "for multicore architectures', Communications of the ACM 52(4):65-76, 2009"
)


@dataclass(frozen=True)
class Roof:
    """One device's roofs: peak compute (FLOP/s) and peak memory bandwidth (bytes/s)."""

    name: str
    peak_flops: float
    peak_bandwidth: float
    source: str = ""

    def __post_init__(self) -> None:
        if not (self.peak_flops > 0 and self.peak_bandwidth > 0):
            raise ValueError(
                f"{self.name}: peak FLOP/s and peak bytes/s must be positive numbers, got "
                f"{self.peak_flops!r} and {self.peak_bandwidth!r}"
            )

    @property
    def ridge_point(self) -> float:
        """FLOP per byte where the bandwidth roof meets the compute roof."""
        return self.peak_flops / self.peak_bandwidth

    def attainable(self, intensity: float) -> float:
        """The most FLOP/s a kernel of this arithmetic intensity can reach here."""
        return min(self.peak_flops, intensity * self.peak_bandwidth)


DeviceLike = str | tuple[str, float, float] | Roof


def roof(device: DeviceLike, dtype: str = "fp32") -> Roof:
    """The roofs of a ``gu.specs`` GPU name, a ``(name, FLOP/s, bytes/s)`` tuple, or a Roof."""
    if isinstance(device, Roof):
        return device
    if isinstance(device, tuple):
        if len(device) != 3:
            raise ValueError(
                f"a device given as a tuple needs (name, peak FLOP/s, peak bytes/s), got {device!r}"
            )
        name, flops, bandwidth = device
        return Roof(str(name), float(flops), float(bandwidth), "given by the caller")
    spec = specs.get(device)
    flops = spec.peak_flops(dtype)
    if flops is None:
        raise ValueError(
            f"the {spec.name} has no {dtype} peak in gu.specs (no such tensor cores); "
            "choose another dtype, e.g. 'fp32' or 'fp16'"
        )
    field = "fp32_flops" if dtype == "fp32" else f"{dtype}_dense_flops"
    source = f"{spec.sources.get(field, '')}; bandwidth: {spec.sources.get('hbm_bandwidth', '')}"
    return Roof(f"{spec.name} {dtype}", flops, spec.hbm_bandwidth, source)


def arithmetic_intensity(flops: float, bytes: float) -> float:  # noqa: A002 - the usual name
    """FLOP per byte moved to and from DRAM."""
    if bytes <= 0:
        raise ValueError("bytes moved must be positive (every kernel reads or writes something)")
    return flops / bytes


def ridge_point(device: DeviceLike, dtype: str = "fp32") -> float:
    """Peak FLOP/s / peak bytes/s: intensities below it are memory-bound."""
    return roof(device, dtype).ridge_point


def attainable(intensity: float, device: DeviceLike, dtype: str = "fp32") -> float:
    """min(peak FLOP/s, intensity x peak bytes/s)."""
    return roof(device, dtype).attainable(intensity)


def bound(intensity: float, device: DeviceLike, dtype: str = "fp32") -> str:
    """``"memory-bound"`` or ``"compute-bound"`` on this device."""
    return "memory-bound" if intensity < ridge_point(device, dtype) else "compute-bound"


@dataclass(frozen=True)
class KernelPoint:
    """A kernel on the plot: its work per launch and, if measured on a GPU, its time."""

    name: str
    flops: float
    bytes: float
    seconds: float | None = None

    @property
    def intensity(self) -> float:
        return arithmetic_intensity(self.flops, self.bytes)

    @property
    def achieved_flops(self) -> float | None:
        return self.flops / self.seconds if self.seconds else None


def _spread(values: Sequence[float], factor: float) -> list[float]:
    """Raise values (in place order) so that sorted neighbours differ by at least ``factor``."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    placed = list(values)
    for previous, current in itertools.pairwise(order):
        placed[current] = max(placed[current], placed[previous] * factor)
    return placed


def plot(
    devices: Sequence[DeviceLike] = ("H100-SXM",),
    kernels: Sequence[KernelPoint] = (),
    dtype: str = "fp32",
    ax=None,
    intensity_range: tuple[float, float] | None = None,
    *,
    direct_labels: bool = False,
    ridge_labels: bool = True,
):
    """Draw each device's roofline on log-log axes and place the kernels; returns the axes.

    A kernel with a measured time is drawn at its achieved FLOP/s (filled marker); one without is
    drawn on the first device's roof (hollow marker), the best it could do there. Each ridge point
    is marked with its value in FLOP/byte (``ridge_labels``). ``direct_labels`` writes each
    device's name above its compute roof instead of in a legend, for plots with many roofs.
    ``dtype`` applies to devices given by their ``gu.specs`` name; pass ``roof(name, dtype)``
    objects to mix precisions on one plot (e.g. an H100's fp32 and bf16 roofs).
    """
    import matplotlib.pyplot as plt

    roofs = [roof(device, dtype) for device in devices]
    if not roofs:
        raise ValueError("give at least one device")
    if ax is None:
        _, ax = plt.subplots(figsize=(7, 4.5))
    intensities = [k.intensity for k in kernels if k.flops > 0]
    low, high = intensity_range or (
        min([0.05, *intensities, *(r.ridge_point / 20 for r in roofs)]),
        max([1000.0, *(4 * i for i in intensities), *(r.ridge_point * 20 for r in roofs)]),
    )
    label_heights = _spread([r.peak_flops * 1.12 for r in roofs], 2.1)  # a line of text apart
    for r, label_y in zip(roofs, label_heights, strict=True):
        xs = [low, r.ridge_point, high]
        (line,) = ax.plot(xs, [r.attainable(x) for x in xs], label=f"{r.name}")
        colour = line.get_color()
        ax.axvline(r.ridge_point, color=colour, linestyle=":", linewidth=0.8)
        if ridge_labels:
            ax.plot(r.ridge_point, r.peak_flops, "D", color=colour, markersize=4)
            ax.annotate(
                f"{r.ridge_point:.3g}",
                (r.ridge_point, r.peak_flops),
                textcoords="offset points",
                xytext=(4, -11),
                fontsize=7,
                color=colour,
            )
        if direct_labels:
            ax.text(
                high / 1.1,
                label_y,
                r.name,
                ha="right",
                va="bottom",
                fontsize=8,
                color=colour,
                bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 0.5},
            )
    first = roofs[0]
    for kernel in kernels:
        intensity = max(kernel.intensity, low)
        if kernel.achieved_flops is not None:
            ax.plot(intensity, kernel.achieved_flops, "o", color="black")
            label_y = kernel.achieved_flops
        else:
            label_y = first.attainable(intensity)
            ax.plot(intensity, label_y, "o", markerfacecolor="none", color="black")
        ax.annotate(kernel.name, (intensity, label_y), textcoords="offset points", xytext=(5, -12))
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP / byte of DRAM traffic)")
    ax.set_ylabel("attainable FLOP/s")
    named = all(isinstance(device, str) for device in devices)
    what = f"Roofline ({dtype})" if named else "Roofline"
    ridge = "\n(diamonds: ridge points, labelled in FLOP/byte)" if ridge_labels else ""
    ax.set_title(f"{what}; Williams, Waterman & Patterson, CACM 2009{ridge}", fontsize=9)
    if not direct_labels:
        ax.legend(loc="lower right", fontsize="small")
    return ax
