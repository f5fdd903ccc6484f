"""Little's law and the pointer chain (gu.latency, chapter 04)."""

import numpy as np
import pytest

import gpu_utils as gu

latency = gu.latency


def test_bytes_in_flight_is_latency_times_bandwidth():
    assert latency.bytes_in_flight(1e-6, 1e12) == pytest.approx(1e6)
    assert latency.bytes_in_flight(500e-9, 2e12) == pytest.approx(1e6)
    with pytest.raises(ValueError, match="latency_s must be a positive number"):
        latency.bytes_in_flight(0, 1e12)
    with pytest.raises(ValueError, match="bandwidth must be a positive number"):
        latency.bytes_in_flight(1e-6, float("nan"))


def test_loads_per_thread_shares_the_bytes_among_resident_threads():
    spec = gu.specs.get("H100-SXM")
    per_thread = latency.loads_per_thread(1e-6, "H100-SXM", threads_per_sm=2048, bytes_per_load=4)
    assert per_thread == pytest.approx(1e-6 * spec.hbm_bandwidth / (spec.sm_count * 2048 * 4))
    wide = latency.loads_per_thread(1e-6, "H100-SXM", threads_per_sm=2048, bytes_per_load=16)
    assert wide == pytest.approx(per_thread / 4)  # a float4 load carries four floats


def test_bandwidth_grows_with_bytes_in_flight_until_the_peak():
    spec = gu.specs.get("T4")
    low = latency.bandwidth(1e-6, "T4", threads_per_sm=64, bytes_per_load=4)
    assert low == pytest.approx(spec.sm_count * 64 * 4 / 1e-6)
    assert latency.bandwidth(1e-6, "T4", threads_per_sm=64, bytes_per_load=4, ilp=4) == (
        pytest.approx(4 * low)
    )
    assert latency.bandwidth(1e-6, "T4", threads_per_sm=1024, bytes_per_load=16, ilp=8) == (
        spec.hbm_bandwidth
    )
    with pytest.raises(ValueError, match="ilp must be a positive number"):
        latency.bandwidth(1e-6, "T4", threads_per_sm=64, ilp=0)


@pytest.mark.parametrize("kwargs", [{"seed": 3}, {"stride": 5}])
def test_pointer_chain_is_one_cycle_through_every_element(kwargs):
    n = 64
    chain = latency.pointer_chain(n, **kwargs)
    seen, i = set(), 0
    for _ in range(n):
        seen.add(i)
        i = int(chain[i])
    assert i == 0 and seen == set(range(n))  # back at the start after exactly n steps
    assert chain.dtype == np.int64


def test_pointer_chain_rejects_a_stride_that_does_not_cycle():
    assert list(latency.pointer_chain(5, stride=2)) == [2, 3, 4, 0, 1]
    with pytest.raises(ValueError, match="share a factor"):
        latency.pointer_chain(64, stride=8)
    with pytest.raises(ValueError, match="at least 2"):
        latency.pointer_chain(1)


def test_pointer_chase_follows_the_chain_and_continues_where_it_stopped():
    chain = latency.pointer_chain(50, seed=7)
    out = np.zeros(1, dtype=np.int64)
    latency.pointer_chase[1, 1](chain, 13, out)
    i = 0
    for _ in range(13):
        i = chain[i]
    assert out[0] == i
    latency.pointer_chase[1, 1](chain, 5, out)  # the next run starts at out[0], not at 0
    for _ in range(5):
        i = chain[i]
    assert out[0] == i


def _walk(chain, start, steps):
    i, visited = start, []
    for _ in range(steps):
        i = int(chain[i])
        visited.append(i)
    return visited


def test_chase_chain_is_one_shuffled_cycle_with_one_link_per_sector():
    nbytes = 4096  # 128 sectors of 32 bytes
    chain = latency.chase_chain(nbytes, seed=1)
    assert chain.dtype == np.int64 and chain.nbytes == nbytes
    visited = _walk(chain, 0, nbytes // 32)
    assert visited[-1] == 0  # back at the start after one lap
    assert sorted(visited) == list(range(0, nbytes // 8, 4))  # each sector's first element once
    assert visited[:8] != list(range(4, 36, 4))  # shuffled, not a stream a prefetcher could guess
    with pytest.raises(ValueError, match="at least 64"):
        latency.chase_chain(32)


@pytest.mark.parametrize(("nbytes", "steps"), [(4096, 50), (4096, 128), (4096, 1000)])
def test_chase_footprint_counts_the_distinct_sectors_a_run_touches(nbytes, steps):
    chain = latency.chase_chain(nbytes, seed=2)
    sectors = {i * 8 // 32 for i in _walk(chain, 0, steps)}
    assert latency.chase_footprint(nbytes, steps) == 32 * len(sectors)
    with pytest.raises(ValueError, match="steps must be a whole number"):
        latency.chase_footprint(nbytes, 0)


def test_the_simulated_chase_touches_several_l2s_per_run_and_runs_continue():
    """The kernel itself on the simulator, scaled down: a 16 KiB array and a pretend 1 KiB L2.
    Each timed run must touch at least four L2s of distinct sectors and of distinct 128-byte
    lines, and start where the last run stopped (the old chase restarted at 0 with 65,536 steps
    and measured the L2 for every size from 1 MiB to 1 GiB on an H100)."""
    nbytes, l2 = 16 * 1024, 1024
    steps = latency.chase_steps(nbytes, l2, min_steps=1)
    assert steps == latency.FOOTPRINT_OVER_L2 * l2 // 32
    chain = latency.chase_chain(nbytes, seed=0)
    out = np.zeros(1, dtype=np.int64)
    starts = []
    for _ in range(3):
        starts.append(int(out[0]))
        latency.pointer_chase[1, 1](chain, steps, out)
    walk = _walk(chain, 0, 3 * steps)
    assert starts == [0, walk[steps - 1], walk[2 * steps - 1]] and out[0] == walk[-1]
    for run in range(3):
        visited = walk[run * steps : (run + 1) * steps]
        sectors = {i * 8 // 32 for i in visited}
        lines = {i * 8 // 128 for i in visited}
        assert 32 * len(sectors) == latency.chase_footprint(nbytes, steps) >= 4 * l2
        assert 128 * len(lines) >= 4 * l2


def test_the_benchmark_chase_fills_the_h100_l2_four_times_for_dram_sizes():
    import ch04_latency  # benchmarks/ch04_latency.py, on the path through pyproject.toml

    l2 = gu.specs.get("H100-SXM").l2_bytes
    dram_sizes = [n for n in ch04_latency.CHASE_BYTES if n >= 256 * 2**20]
    assert dram_sizes, "the benchmark must chase through arrays of 256 MiB and more"
    for nbytes in dram_sizes:
        steps = latency.chase_steps(nbytes, l2)
        assert latency.chase_footprint(nbytes, steps) >= 4 * l2
    # the first H100 run's chase: 65,536 steps touched 2 MiB of sectors, inside the L2
    assert latency.chase_footprint(2**30, 1 << 16) < l2
    # arrays that fit the L2 are chased whole, at least MIN_CHASE_STEPS steps
    assert latency.chase_steps(2**14, l2) == latency.MIN_CHASE_STEPS
    assert latency.chase_footprint(2**24, latency.chase_steps(2**24, l2)) == 2**24


@pytest.mark.parametrize("ilp", sorted(latency.READ_KERNELS))
@pytest.mark.parametrize("n", [1, 127, 1001])
def test_read_kernels_sum_every_element_once(ilp, n):
    x = np.random.default_rng(n).random(n, dtype=np.float32) + 1
    partial = np.zeros(2 * 32, dtype=np.float32)
    latency.READ_KERNELS[ilp][2, 32](x, partial)
    assert partial.sum() == pytest.approx(float(x.sum(dtype=np.float64)), rel=1e-5)


def test_numpy_numbers_are_accepted():
    assert latency.bandwidth(1e-6, "T4", threads_per_sm=np.int64(64)) == pytest.approx(
        latency.bandwidth(1e-6, "T4", threads_per_sm=64)
    )


def test_loads_in_loops_are_counted_between_a_label_and_its_branch_back():
    ptx = """
    ld.global.f32 %f1, [%rd1];
$L__BB0_2:
    ld.global.f32 %f2, [%rd2];
    @%p1 bra $L__BB0_4;
    ld.global.f32 %f3, [%rd3];
$L__BB0_4:
    ld.global.f32 %f4, [%rd4];
    @%p2 bra $L__BB0_2;
    bra.uni $L__BB0_9;
$L__BB0_9:
    ret;
"""
    assert latency._loads_in_loops(ptx) == 3  # the loop from BB0_2 back to it; forward jumps not
    assert latency._loads_in_loops("ld.global.f32 %f1, [%rd1];\nret;") == 0


def test_the_compiler_unrolls_the_one_load_read_kernel():
    """Chapter 04's explanation of the ILP-1 line: the compiled loop has several loads."""
    assert latency.loads_per_loop(latency.read_ilp1) >= 2
