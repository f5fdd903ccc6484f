"""Latency, bandwidth and Little's law: how many bytes must be in flight to keep memory busy
(chapter 04).

Little's law (J. D. C. Little, "A proof for the queuing formula L = lambda W", Operations
Research 9(3):383-387, 1961): in a steady state, the number of requests in a system equals their
arrival rate times the time each spends in it. For a memory system,

    bytes in flight = latency x bandwidth

so to sustain a bandwidth W when each load takes L seconds to return, L x W bytes must be
requested and not yet returned at every moment. V. Volkov applies this to GPUs (*Understanding
Latency Hiding on GPUs*, PhD thesis, UC Berkeley, 2016, chapter 4): the bytes in flight come from
warps x independent loads per thread (instruction-level parallelism, ILP) x bytes per load, and
occupancy, ILP and wider (vector) loads are interchangeable ways to supply them.

Usage::

    gu.latency.bytes_in_flight(latency_s=600e-9, bandwidth=3.35e12)   # bytes, whole GPU
    gu.latency.loads_per_thread(600e-9, "H100-SXM", threads_per_sm=2048, bytes_per_load=4)
    gu.latency.bandwidth(600e-9, "H100-SXM", threads_per_sm=512, bytes_per_load=16, ilp=2)

Latencies are arguments, never defaults: they depend on the GPU, the clock and the access
pattern, and the chapter measures them with a pointer chase (``benchmarks/ch04_latency.py``).
"""

from __future__ import annotations

import math
import numbers

import numpy as np
from numba import cuda  # gpu_utils is imported first (gu.latency), so the mode is settled

from . import specs
from .bench import bench

__all__ = [
    "CITATION",
    "READ_KERNELS",
    "bandwidth",
    "bytes_in_flight",
    "chase_ns",
    "loads_per_thread",
    "pointer_chain",
    "pointer_chase",
    "read_gbps",
    "read_ilp1",
    "read_ilp4",
]

CITATION = (
    "J. D. C. Little, 'A proof for the queuing formula L = lambda W', Operations Research "
    "9(3):383-387, 1961; V. Volkov, 'Understanding Latency Hiding on GPUs', PhD thesis, "
    "UC Berkeley, 2016, chapter 4"
)


def _positive(**values: float) -> None:
    for name, value in values.items():
        if not (isinstance(value, numbers.Real) and math.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be a positive number, got {value!r}")


def bytes_in_flight(latency_s: float, bandwidth: float) -> float:
    """Little's law: the bytes that must be outstanding to sustain ``bandwidth`` (bytes/s)."""
    _positive(latency_s=latency_s, bandwidth=bandwidth)
    return latency_s * bandwidth


def loads_per_thread(
    latency_s: float, gpu: str, *, threads_per_sm: int, bytes_per_load: int = 4
) -> float:
    """Independent loads each thread must have outstanding for the GPU's peak DRAM bandwidth.

    The whole GPU needs ``latency x bandwidth`` bytes in flight, shared by ``sm_count x
    threads_per_sm`` resident threads that each load ``bytes_per_load`` per instruction.
    """
    spec = specs.get(gpu)
    _positive(threads_per_sm=threads_per_sm, bytes_per_load=bytes_per_load)
    needed = bytes_in_flight(latency_s, spec.hbm_bandwidth)
    return needed / (spec.sm_count * threads_per_sm * bytes_per_load)


def bandwidth(
    latency_s: float, gpu: str, *, threads_per_sm: int, bytes_per_load: int = 4, ilp: int = 1
) -> float:
    """The DRAM bandwidth (bytes/s) a kernel can sustain with this much in flight.

    Little's law turned around: bytes in flight / latency, capped at the datasheet peak. Each of
    ``threads_per_sm`` threads on every SM keeps ``ilp`` independent loads of ``bytes_per_load``
    outstanding. A model: a real GPU also loses bandwidth to DRAM page misses, refresh and
    queueing, and its latency grows as the memory system fills up.
    """
    spec = specs.get(gpu)
    _positive(threads_per_sm=threads_per_sm, bytes_per_load=bytes_per_load, ilp=ilp)
    in_flight = spec.sm_count * threads_per_sm * bytes_per_load * ilp
    return min(spec.hbm_bandwidth, in_flight / latency_s)


def pointer_chain(n: int, *, seed: int = 0, stride: int | None = None):
    """A permutation ``next`` of ``range(n)`` that visits every element once, as one cycle.

    Following ``i = next[i]`` is a pointer chase: each load's address is the previous load's
    value, so no two loads overlap and the time per step is the latency. By default the order is
    shuffled (``seed``) so that neither caches nor prefetching can guess the next address; a
    ``stride`` instead makes the regular chain 0, stride, 2 stride, ... (mod n).
    """
    if not (isinstance(n, int) and n >= 2):
        raise ValueError(f"n must be an int of at least 2, got {n!r}")
    if stride is not None:
        if math.gcd(stride, n) != 1:
            raise ValueError(f"stride {stride} and n {n} share a factor: the chain would not cycle")
        order = (np.arange(n, dtype=np.int64) * stride) % n
    else:
        order = np.random.default_rng(seed).permutation(n)
    chain = np.empty(n, dtype=np.int64)
    chain[order] = np.roll(order, -1)  # each visited element points at the next one
    return chain


@cuda.jit
def pointer_chase(chain, steps, out):
    """One thread follows ``i = chain[i]`` ``steps`` times: every load waits for the previous one.

    Launch with one block of one thread; the time per step is the load-to-use latency of wherever
    ``chain`` lives (L1, L2 or DRAM, depending on its size). ``out[0]`` keeps the final index so
    that the compiler cannot drop the loop.
    """
    i = 0
    for _ in range(steps):
        i = chain[i]
    out[0] = i


@cuda.jit
def read_ilp1(x, out):
    """Sum ``x`` with a grid-stride loop, one load per pass: each add waits for its load."""
    start, threads = cuda.grid(1), cuda.gridsize(1)
    total = 0.0
    for j in range(start, x.size, threads):
        total += x[j]
    if start < out.size:
        out[start] = total  # one partial sum per thread of the grid


@cuda.jit
def read_ilp4(x, out):
    """The same sum with four independent loads per pass: all four are issued before any add
    needs one, so each thread has four loads in flight (written out: a loop over a runtime count
    would not be unrolled, and its loads would not overlap)."""
    start, threads = cuda.grid(1), cuda.gridsize(1)
    total = 0.0
    for j in range(start, x.size, 4 * threads):
        a = x[j]
        b = x[j + threads] if j + threads < x.size else 0.0
        c = x[j + 2 * threads] if j + 2 * threads < x.size else 0.0
        d = x[j + 3 * threads] if j + 3 * threads < x.size else 0.0
        total += (a + b) + (c + d)
    if start < out.size:
        out[start] = total


READ_KERNELS = {1: read_ilp1, 4: read_ilp4}  # independent loads per thread per pass -> kernel


def chase_ns(nbytes: int, steps: int, *, repeat: int = 5) -> float:
    """Nanoseconds per step of a pointer chase through ``nbytes`` of int64 links (checked on its
    first steps, then timed with ``gu.bench``; on a GPU, device events)."""
    chain = pointer_chain(max(2, nbytes // 8), seed=0)
    expected = 0
    for _ in range(min(steps, 1000)):  # correct first: check the first steps on the host
        expected = int(chain[expected])
    d_chain, d_out = cuda.to_device(chain), cuda.device_array(1, dtype=np.int64)
    pointer_chase[1, 1](d_chain, min(steps, 1000), d_out)
    assert int(d_out.copy_to_host()[0]) == expected, "the pointer chase went astray"
    result = bench(lambda: pointer_chase[1, 1](d_chain, steps, d_out), repeat=repeat)
    return result.median / steps * 1e9


def read_gbps(n: int, blocks: int, threads: int, ilp: int) -> float:
    """GB/s read by the ``ilp`` kernel summing ``n`` random floats with ``blocks x threads``
    threads (checked against NumPy first, then timed with ``gu.bench``)."""
    kernel = READ_KERNELS[ilp]
    host = np.random.default_rng(0).random(n, dtype=np.float32)
    d_x = cuda.to_device(host)
    d_out = cuda.device_array(blocks * threads, dtype=np.float32)
    kernel[blocks, threads](d_x, d_out)  # correct first, then time
    total = float(d_out.copy_to_host().sum(dtype=np.float64))
    assert np.isclose(total, host.sum(dtype=np.float64), rtol=1e-4), "the read kernel is wrong"
    result = bench(lambda: kernel[blocks, threads](d_x, d_out))
    return 4 * n / result.median / 1e9  # bytes read per second
