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


def test_pointer_chase_follows_the_chain():
    chain = latency.pointer_chain(50, seed=7)
    out = np.zeros(1, dtype=np.int64)
    latency.pointer_chase[1, 1](chain, 13, out)
    i = 0
    for _ in range(13):
        i = chain[i]
    assert out[0] == i


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
