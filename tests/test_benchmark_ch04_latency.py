"""benchmarks/ch04_latency.py: it refuses on the simulator, and the gu.latency measurements it
calls check their results before timing (run at tiny sizes on the simulator, where the times
themselves mean nothing)."""

import subprocess
import sys

import ch04_latency  # benchmarks/ch04_latency.py, on the path through pyproject.toml
import pytest

import gpu_utils as gu
from conftest import ROOT

pytestmark = pytest.mark.skipif(gu.mode != "simulator", reason="simulator-side checks")


def test_refuses_on_the_simulator():
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "ch04_latency.py")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "needs an NVIDIA GPU" in done.stderr and "nothing was written" in done.stderr


def test_the_measurements_run_and_check_their_results():
    assert ch04_latency.NAME == "ch04_latency"
    assert gu.latency.chase_ns(1024, 20, repeat=1) > 0  # simulator time: only "it ran"
    for ilp in gu.latency.READ_KERNELS:
        assert gu.latency.read_gbps(1000, 2, 32, ilp) > 0
