"""Record chapter 04's latency and occupancy measurements on a real GPU, for the simulator.

Usage, on a machine with an NVIDIA GPU, from the repository root:

    python benchmarks/ch04_latency.py

1. **Pointer chase** (``gu.latency.pointer_chase``): one thread follows a shuffled chain
   ``i = chain[i]`` through arrays of 16 KiB to 1 GiB, one link per 32-byte sector
   (``gu.latency.chase_chain``). Each load's address is the previous load's value, so the loads
   cannot overlap and the time per step is the latency of the level that serves them (L1, L2,
   DRAM; the largest arrays also miss the TLB). One timed run takes
   ``gu.latency.chase_steps(nbytes, L2)`` steps: every sector of an array smaller than four
   times the L2, else enough distinct sectors to fill the L2 four times over
   (``gu.latency.chase_footprint``), and each run starts where the previous one stopped, so no
   run finds its sectors left in the L2 by the last. (The first H100 run took 65,536 steps from
   index 0 every time: 2 MiB of sectors, which stayed in the L2, so every size from 1 MiB to 1 GiB
   measured the L2.) Timed with device events (``gu.bench``: one warm-up, median of
   ``CHASE_REPEAT``), divided by the number of steps.
2. **Occupancy vs time** (``gu.latency.READ_KERNELS``): the sum of a 256 MiB float32 array with
   one block per SM of 32 to 1024 threads, then two blocks of 1024, so 1 to 64 resident warps per
   SM, each thread keeping 1 or 4 independent loads in flight. Each result is checked against
   NumPy first. Little's law predicts bandwidth = bytes in flight / latency until the DRAM peak.

Results go to ``gpu_utils/reference_data/ch04_latency.json`` (device, date, command); commit
that file, and notebooks/04_memory.ipynb shows it when it runs on the simulator. On the
simulator this script refuses: its timings would say nothing about a GPU.
"""

from __future__ import annotations

import sys

import gpu_utils as gu

NAME = "ch04_latency"
CHASE_BYTES = [2**14, 2**17, 2**20, 2**22, 2**24, 2**26, 2**28, 2**30]  # 16 KiB .. 1 GiB
CHASE_REPEAT = 3  # a run through the DRAM sizes takes seconds: 6.5 M steps of about 0.5 us
CHASE_WARMUP = 0  # the check run before the timing compiles the kernel; DRAM has nothing to warm
BUDGET_S = 75  # the whole script on an H100 (benchmarks/gpu_check.py stops it after that)
H100_L2 = gu.specs.get("H100-SXM").l2_bytes
READ_N = 1 << 26  # 256 MiB of float32: far beyond any L2 cache
BLOCK_SHAPES = [(1, 32), (1, 64), (1, 128), (1, 256), (1, 512), (1, 1024), (2, 1024)]


def estimate_seconds(latency_s: float = 1e-6, read_gbps: float = 100.0, host_gbps: float = 0.5):
    """A pessimistic bound on this script on an H100: every chase step at ``latency_s`` (DRAM
    with TLB misses is well under 1 us), every read at ``read_gbps`` (the slowest point of the
    first H100 sweep was 135 GB/s), and the host making and checking arrays at ``host_gbps``."""
    chase = 0.0
    for nbytes in CHASE_BYTES:
        steps = gu.latency.chase_steps(nbytes, H100_L2)
        chase += (CHASE_REPEAT + CHASE_WARMUP) * steps * latency_s + 3 * nbytes / host_gbps / 1e9
    reads = len(gu.latency.READ_KERNELS) * len(BLOCK_SHAPES)  # one input, made once
    read = reads * 13 * 4 * READ_N / read_gbps / 1e9 + 3 * 4 * READ_N / host_gbps / 1e9
    return chase + read


def main() -> int:
    if gu.reference.refuse_without_gpu():
        return 2
    from numba import cuda

    device = cuda.get_current_device()
    sms = device.MULTIPROCESSOR_COUNT
    l2 = device.L2_CACHE_SIZE
    chase = []
    for nbytes in CHASE_BYTES:
        steps = gu.latency.chase_steps(nbytes, l2)
        footprint = gu.latency.chase_footprint(nbytes, steps)
        ns = gu.latency.chase_ns(nbytes, steps, repeat=CHASE_REPEAT, warmup=CHASE_WARMUP)
        chase.append(
            {"bytes": nbytes, "steps": steps, "footprint_bytes": footprint, "ns_per_load": ns}
        )
        print(
            f"pointer chase through {nbytes / 2**10:>9,.0f} KiB, {steps:>9,} steps touching "
            f"{footprint / l2:5.2f} x L2: {ns:7.1f} ns per load"
        )
    occupancy = []
    for ilp in sorted(gu.latency.READ_KERNELS):
        for blocks_per_sm, threads in BLOCK_SHAPES:
            gbps = gu.latency.read_gbps(READ_N, sms * blocks_per_sm, threads, ilp)
            warps = blocks_per_sm * threads // 32
            occupancy.append({"ilp": ilp, "warps_per_sm": warps, "gb_per_s": gbps})
            print(f"ilp {ilp}, {warps:>2} warps per SM: {gbps:8.1f} GB/s")
    record = {
        "sm_count": sms,
        "l2_bytes": l2,
        "read_n": READ_N,
        "pointer_chase": chase,
        "occupancy": occupancy,
    }
    path = gu.reference.save(NAME, record)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
