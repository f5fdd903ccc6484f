"""Time a piece of work honestly: check it first, warm up, repeat, report median and spread.

Taught in chapter 01 (CPU vs GPU) and used by every chapter that measures. On a GPU the work is
timed with device events on the default stream and the host waits for the device before reading
them; on the simulator the wall time is labelled as simulator time and no rate is derived from it,
because it says nothing about GPU speed.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass

from . import runtime
from .device import device_info

TARGETS = ("gpu", "cpu", "simulator")


@dataclass(frozen=True)
class BenchResult:
    """Timings in seconds and, where they mean something, achieved rates and % of peak."""

    target: str
    label: str
    times: tuple[float, ...]
    median: float
    q1: float
    q3: float
    bytes_per_s: float | None = None
    flops_per_s: float | None = None
    pct_peak_bandwidth: float | None = None
    pct_peak_flops: float | None = None

    @property
    def spread(self) -> float:
        """Interquartile range of the repeats, in seconds."""
        return self.q3 - self.q1

    def __str__(self) -> str:
        text = f"{self.label}: median {_fmt_time(self.median)} (IQR {_fmt_time(self.spread)})"
        if self.bytes_per_s is not None:
            text += f", {self.bytes_per_s / 1e9:,.1f} GB/s"
            if self.pct_peak_bandwidth is not None:
                text += f" ({self.pct_peak_bandwidth:.0f}% of peak)"
        if self.flops_per_s is not None:
            text += f", {self.flops_per_s / 1e9:,.1f} GFLOP/s"
            if self.pct_peak_flops is not None:
                text += f" ({self.pct_peak_flops:.0f}% of peak)"
        if self.target == "simulator":
            text += " [simulator time: not GPU performance]"
        return text

    __repr__ = __str__


def _fmt_time(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def _gpu_timer(fn: Callable[[], object]) -> float:
    from numba import cuda

    start, stop = cuda.event(), cuda.event()
    start.record()
    fn()
    stop.record()
    stop.synchronize()
    cuda.synchronize()
    return start.elapsed_time(stop) / 1e3  # elapsed_time is in milliseconds


def _wall_timer(fn: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def bench(
    fn: Callable[[], object],
    *,
    bytes: float | None = None,  # noqa: A002 - the name the course uses for bytes moved
    flops: float | None = None,
    warmup: int = 2,
    repeat: int = 10,
    target: str | None = None,
    peak_bandwidth: float | None = None,
    peak_flops: float | None = None,
    label: str | None = None,
) -> BenchResult:
    """Time ``fn()`` ``repeat`` times after ``warmup`` calls and summarise.

    ``bytes`` and ``flops`` are the bytes moved and floating-point operations of one call; with
    them the result carries achieved rates. ``target`` is ``"gpu"`` (device events), ``"cpu"``
    (wall time of CPU code, a real measurement in any mode) or ``"simulator"``; by default the
    course's mode. Peaks default to the detected GPU's published figures (fp32 FLOP/s); pass
    ``peak_flops`` for another precision or for a CPU.
    """
    if target is None:
        target = runtime.mode
    if target not in TARGETS:
        raise ValueError(f"target={target!r}: use one of {', '.join(TARGETS)}")
    if target == "gpu" and runtime.mode != "gpu":
        raise ValueError("target='gpu' needs a GPU; this session runs on the simulator")
    if repeat < 1 or warmup < 0:
        raise ValueError("repeat must be at least 1 and warmup at least 0")
    timer = _gpu_timer if target == "gpu" else _wall_timer
    for _ in range(warmup):
        timer(fn)
    times = tuple(timer(fn) for _ in range(repeat))
    median = statistics.median(times)
    q1, _, q3 = statistics.quantiles(times, n=4) if len(times) > 1 else (median,) * 3
    result = dict(target=target, times=times, median=median, q1=q1, q3=q3)
    if target == "simulator":
        return BenchResult(label=label or "simulator", **result)
    if target == "gpu":
        spec = device_info().spec
        peak_bandwidth = peak_bandwidth or (spec.hbm_bandwidth if spec else None)
        peak_bandwidth = peak_bandwidth or device_info().peak_bandwidth
        peak_flops = peak_flops or (spec.fp32_flops if spec else None)
    bytes_per_s = bytes / median if bytes is not None else None
    flops_per_s = flops / median if flops is not None else None
    return BenchResult(
        label=label or target,
        bytes_per_s=bytes_per_s,
        flops_per_s=flops_per_s,
        pct_peak_bandwidth=_pct(bytes_per_s, peak_bandwidth),
        pct_peak_flops=_pct(flops_per_s, peak_flops),
        **result,
    )


def _pct(achieved: float | None, peak: float | None) -> float | None:
    return 100 * achieved / peak if achieved is not None and peak else None
