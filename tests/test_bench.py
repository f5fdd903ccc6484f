"""gu.bench: medians and spreads, rates only where they mean something, simulator labelled."""

import time

import pytest

import gpu_utils as gu


def test_cpu_timing_gives_rates():
    result = gu.bench(lambda: time.sleep(0.002), bytes=2e6, flops=1e6, repeat=5, target="cpu")
    assert result.median >= 0.002
    assert result.spread >= 0
    assert len(result.times) == 5
    assert result.bytes_per_s == pytest.approx(2e6 / result.median)
    assert result.flops_per_s == pytest.approx(1e6 / result.median)
    assert result.pct_peak_bandwidth is None  # no peak given for a CPU
    with_peak = gu.bench(lambda: None, bytes=1e3, repeat=3, target="cpu", peak_bandwidth=1e20)
    assert 0 < with_peak.pct_peak_bandwidth < 100


def test_warmup_runs_are_not_timed():
    calls = []
    gu.bench(lambda: calls.append(1), warmup=3, repeat=4, target="cpu")
    assert len(calls) == 7


@pytest.mark.skipif(gu.mode != "simulator", reason="simulator labelling")
def test_simulator_time_is_labelled_and_has_no_rates():
    result = gu.bench(lambda: None, bytes=1e9, flops=1e9, repeat=2)
    assert result.target == "simulator"
    assert result.bytes_per_s is None and result.flops_per_s is None
    assert "simulator time: not GPU performance" in str(result)


def test_bad_arguments_say_what_to_do():
    with pytest.raises(ValueError, match="use one of"):
        gu.bench(lambda: None, target="tpu")
    with pytest.raises(ValueError, match="repeat must be at least 1"):
        gu.bench(lambda: None, repeat=0, target="cpu")
    if gu.mode == "simulator":
        with pytest.raises(ValueError, match="needs a GPU"):
            gu.bench(lambda: None, target="gpu")


def test_single_repeat_has_zero_spread():
    assert gu.bench(lambda: None, repeat=1, warmup=0, target="cpu").spread == 0


@pytest.mark.gpu
def test_gpu_copy_reports_a_plausible_bandwidth():
    import numpy as np
    from numba import cuda

    n = 1 << 24
    src, dst = cuda.to_device(np.ones(n, np.float32)), cuda.device_array(n, np.float32)

    @cuda.jit
    def copy(a, b):
        i = cuda.grid(1)
        if i < a.size:
            b[i] = a[i]

    result = gu.bench(lambda: copy[(n + 255) // 256, 256](src, dst), bytes=8 * n)
    assert result.target == "gpu"
    assert 1e10 < result.bytes_per_s < 2e13
