"""benchmarks/kernels.py: it refuses on the simulator, and every registered benchmark's kernel is
correct (setup, run and verify at its tiny size, on the simulator)."""

import subprocess
import sys

import kernels  # benchmarks/kernels.py, on the path through pyproject.toml
import pytest

import gpu_utils as gu
from conftest import ROOT

pytestmark = pytest.mark.skipif(gu.mode != "simulator", reason="simulator-side checks")


def test_refuses_on_the_simulator():
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "kernels.py")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "measures real GPU performance" in done.stderr
    assert "simulator timings say nothing about a GPU" in done.stderr


@pytest.mark.parametrize("benchmark", kernels.discover(tiny=True), ids=lambda b: b.name)
def test_every_registered_kernel_is_correct(benchmark):
    assert benchmark.bytes > 0 and benchmark.ceiling in kernels.CEILINGS
    run, verify = benchmark.setup()
    run()
    verify()


def test_chapter_04_kernels_are_registered_with_targets():
    names = {b.name: b for b in kernels.discover(tiny=True)}
    assert {"copy_grid_stride", "transpose_tiled", "stencil_shared"} <= set(names)
    assert names["transpose_tiled"].target == 0.8
    assert names["transpose_naive"].target is None


def test_table_rendering():
    row = {
        "kernel": "copy_grid_stride",
        "size": "n = 1",
        "median_s": 1e-3,
        "iqr_s": 0.0,
        "achieved": 2000.0,
        "unit": "GB/s",
        "ceiling": "copy",
        "pct_of_ceiling": 80.5,
        "target_pct": 80.0,
        "met": True,
    }
    text = kernels.render([row])
    assert "copy_grid_stride" in text and "80.5%" in text and "yes" in text


def test_the_full_size_run_fits_its_budget():
    """The first H100 run had not finished 60 s after its ceilings (1 GiB arrays made and checked
    on the host for every chapter-04 kernel). The sizes and repeats chosen must keep a
    pessimistic estimate of the whole script within its budget, and the arrays beyond the L2."""
    full = kernels.discover(tiny=False)  # sizes only: nothing touches a GPU here
    assert {b.name for b in full} == {b.name for b in kernels.discover(tiny=True)}
    assert all(b.host_bytes > 0 for b in full), "every entry says what it makes on the host"
    estimate = kernels.estimate_seconds(full)
    assert estimate <= kernels.BUDGET_S, f"estimated {estimate:.0f} s > {kernels.BUDGET_S} s"
    l2 = gu.specs.get("H100-SXM").l2_bytes
    assert 4 * l2 <= kernels.COPY_BYTES
    streaming = [b for b in full if b.ceiling == "copy"]
    assert all(b.bytes >= 4 * l2 for b in streaming), "a streaming kernel must not fit the L2"
    # the estimate grows with the work: ten times the repeats would not fit
    slow = dict(kernels.ESTIMATE_RATES, copy=kernels.ESTIMATE_RATES["copy"] / 10)
    assert kernels.estimate_seconds(full, slow) > kernels.estimate_seconds(full)
