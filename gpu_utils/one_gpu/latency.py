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

The chase measures the level that holds what one timed run touches, not the array's size: a chase
of 65,536 steps through 1 GiB touches 65,536 sectors (2 MiB), which stay in a 50 MB L2 between
repeats, and it measures L2 latency (what the first H100 run recorded). So the benchmark's chase
(:func:`chase_chain`, :func:`chase_steps`) puts one link in each 32-byte sector, takes enough
steps that one timed run touches several times the L2 (:func:`chase_footprint`), and starts each
run where the previous one stopped.
"""

from __future__ import annotations

import functools
import math
import numbers
import re

import numpy as np
from numba import cuda  # gpu_utils is imported first (gu.latency), so the mode is settled

from ..bench import bench
from ..facts import specs

__all__ = [
    "CITATION",
    "READ_KERNELS",
    "bandwidth",
    "bytes_in_flight",
    "chase_chain",
    "chase_footprint",
    "chase_ns",
    "chase_steps",
    "loads_per_loop",
    "loads_per_thread",
    "pointer_chain",
    "pointer_chase",
    "read_gbps",
    "read_ilp1",
    "read_ilp4",
]

#: Bytes of one sector, the unit a load moves between DRAM, L2 and L1 (CUDA C++ Best Practices
#: Guide, "Coalesced Access to Global Memory": "32-byte segments"); a 128-byte cache line holds 4.
SECTOR_BYTES = 32
LINE_BYTES = 128
#: The benchmark's chase touches this many times the L2 in one timed run when the array allows.
FOOTPRINT_OVER_L2 = 4
#: Fewest steps of one timed run: enough that the launch cost is small next to the chase.
MIN_CHASE_STEPS = 1 << 16

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


def chase_chain(nbytes: int, *, seed: int = 0):
    """The benchmark's chase array: ``nbytes`` of int64 with one link per 32-byte sector.

    The sectors form one shuffled cycle: element ``4 s`` of sector ``s`` holds the element index
    of the next sector's link, the other three elements of each sector are never read. Every step
    therefore lands in a sector the previous steps of this lap have not touched, and a lap visits
    all ``nbytes // 32`` sectors before any repeats.
    """
    per = SECTOR_BYTES // 8
    if not (isinstance(nbytes, numbers.Integral) and nbytes >= 2 * SECTOR_BYTES):
        raise ValueError(f"nbytes must be an int of at least {2 * SECTOR_BYTES}, got {nbytes!r}")
    sectors = int(nbytes) // SECTOR_BYTES
    chain = np.zeros(sectors * per, dtype=np.int64)
    chain[::per] = pointer_chain(sectors, seed=seed) * per
    return chain


def chase_footprint(nbytes: int, steps: int) -> int:
    """Bytes of distinct 32-byte sectors that one timed run of the benchmark's chase touches:
    ``steps`` links of :func:`chase_chain`, each in its own sector until a lap is complete."""
    if not (isinstance(nbytes, numbers.Integral) and nbytes >= 2 * SECTOR_BYTES):
        raise ValueError(f"nbytes must be an int of at least {2 * SECTOR_BYTES}, got {nbytes!r}")
    if not (isinstance(steps, numbers.Integral) and steps >= 1):
        raise ValueError(f"steps must be a whole number of at least 1, got {steps!r}")
    return SECTOR_BYTES * min(int(steps), int(nbytes) // SECTOR_BYTES)


def chase_steps(
    nbytes: int,
    l2_bytes: int,
    *,
    over_l2: int = FOOTPRINT_OVER_L2,
    min_steps: int = MIN_CHASE_STEPS,
) -> int:
    """Steps of one timed run: enough to touch ``over_l2`` times the L2 (``l2_bytes``, e.g.
    ``gu.specs.get("H100-SXM").l2_bytes``) in distinct sectors, or every sector of an array too
    small for that, and never fewer than ``min_steps``."""
    _positive(l2_bytes=l2_bytes, over_l2=over_l2, min_steps=min_steps)
    sectors = chase_footprint(nbytes, 1 << 62) // SECTOR_BYTES  # every sector of the array
    wanted = -(-int(over_l2 * l2_bytes) // SECTOR_BYTES)  # ceil
    return max(int(min_steps), min(sectors, wanted))


@cuda.jit
def pointer_chase(chain, steps, out):
    """One thread follows ``i = chain[i]`` ``steps`` times: every load waits for the previous one.

    Launch with one block of one thread; the time per step is the load-to-use latency of wherever
    the steps' loads are served from (L1, L2 or DRAM: see :func:`chase_footprint`). The chase
    starts at index ``out[0]`` and leaves its final index there, so a second launch continues
    where the first stopped, and the compiler cannot drop the loop.
    """
    i = out[0]
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


def _device_l2_bytes() -> int:
    from ..device import device_info

    info = device_info()
    known = info.l2_bytes or (info.spec.l2_bytes if info.spec else None)
    return int(known or specs.get("H100-SXM").l2_bytes)  # unknown: the largest common L2


def chase_ns(
    nbytes: int,
    steps: int | None = None,
    *,
    repeat: int = 5,
    warmup: int = 1,
    l2_bytes: int | None = None,
) -> float:
    """Nanoseconds per step of the pointer chase through ``nbytes`` (:func:`chase_chain`).

    ``steps`` per timed run defaults to :func:`chase_steps` for this GPU's L2 (``l2_bytes``
    overrides it). The first steps are checked on the host, then ``gu.bench`` times ``repeat``
    runs after ``warmup`` (device events on a GPU); each run starts where the previous stopped.
    """
    if steps is None:
        steps = chase_steps(nbytes, l2_bytes or _device_l2_bytes())
    chain = chase_chain(nbytes, seed=0)
    check = min(steps, 1000)
    expected = 0
    for _ in range(check):  # correct first: check the first steps on the host
        expected = int(chain[expected])
    d_chain, d_out = cuda.to_device(chain), cuda.to_device(np.zeros(1, dtype=np.int64))
    pointer_chase[1, 1](d_chain, check, d_out)
    assert int(d_out.copy_to_host()[0]) == expected, "the pointer chase went astray"
    result = bench(lambda: pointer_chase[1, 1](d_chain, steps, d_out), repeat=repeat, warmup=warmup)
    return result.median / steps * 1e9


@functools.lru_cache(maxsize=1)
def _read_input(n: int):
    """The ``n`` random floats every :func:`read_gbps` of one sweep sums, on the device, and
    their exact sum: made once per sweep, not once per point (making 256 MiB takes the host
    seconds)."""
    host = np.random.default_rng(0).random(n, dtype=np.float32)
    return cuda.to_device(host), float(host.sum(dtype=np.float64))


def read_gbps(n: int, blocks: int, threads: int, ilp: int) -> float:
    """GB/s read by the ``ilp`` kernel summing ``n`` random floats with ``blocks x threads``
    threads (checked against NumPy first, then timed with ``gu.bench``)."""
    kernel = READ_KERNELS[ilp]
    d_x, exact = _read_input(n)
    d_out = cuda.device_array(blocks * threads, dtype=np.float32)
    kernel[blocks, threads](d_x, d_out)  # correct first, then time
    total = float(d_out.copy_to_host().sum(dtype=np.float64))
    assert np.isclose(total, exact, rtol=1e-4), "the read kernel is wrong"
    result = bench(lambda: kernel[blocks, threads](d_x, d_out))
    return 4 * n / result.median / 1e9  # bytes read per second


def loads_per_loop(
    kernel, signature: str = "void(float32[::1], float32[::1])", compute_capability=(9, 0)
) -> int:
    """Global loads in one pass of the kernel's busiest loop, as compiled (``gu.ptx``, no GPU
    needed): the most ``ld.global`` instructions between a loop's label and its branch back.

    Little's law counts the loads actually in flight, and the compiler decides how many there
    are: NVVM unrolls a simple grid-stride loop, so a kernel written with one load per pass may
    issue several before it needs the first.
    """
    from .ptx import compile_kernel

    return _loads_in_loops(compile_kernel(kernel, signature, compute_capability).ptx)


def _loads_in_loops(ptx: str) -> int:
    labels = {m.group(1): m.end() for m in re.finditer(r"^(\$L__BB\w+):", ptx, flags=re.M)}
    most = 0
    for branch in re.finditer(r"\bbra(?:\.uni)?\s+(\$L__BB\w+);", ptx):
        start = labels.get(branch.group(1))
        if start is not None and start < branch.start():  # a branch back: a loop
            most = max(most, ptx[start : branch.start()].count("ld.global"))
    return most
