"""benchmarks/ch04_latency.py: the gu.latency measurements it
calls check their results before timing (run at tiny sizes on the simulator, where the times
themselves mean nothing)."""

import ch04_latency  # benchmarks/ch04_latency.py, on the path through pyproject.toml
import pytest

import gpu_utils as gu

pytestmark = pytest.mark.skipif(gu.mode != "simulator", reason="simulator-side checks")


def test_the_measurements_run_and_check_their_results():
    assert ch04_latency.NAME == "ch04_latency"
    assert gu.latency.chase_ns(1024, 20, repeat=1) > 0  # simulator time: only "it ran"
    assert gu.latency.chase_ns(1024, repeat=1, warmup=0, l2_bytes=64) > 0  # steps from the L2
    for ilp in gu.latency.READ_KERNELS:
        assert gu.latency.read_gbps(1000, 2, 32, ilp) > 0


def test_the_script_fits_its_budget_on_an_h100():
    """Four L2s of distinct sectors per timed run at the DRAM sizes cost seconds per run: the
    sizes, steps and repeats chosen must keep a pessimistic estimate within the limit."""
    estimate = ch04_latency.estimate_seconds()
    assert estimate <= ch04_latency.BUDGET_S, f"{estimate:.0f} s > {ch04_latency.BUDGET_S} s"
    # one warm-up run more of every chase would not fit: the estimate follows the choices
    assert ch04_latency.estimate_seconds(latency_s=2e-6) > ch04_latency.BUDGET_S
