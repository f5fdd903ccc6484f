"""gu.matmul: the cost model of chapter 06 agrees with the memory trace, and the GPU-only
measurements refuse clearly without a GPU."""

import subprocess
import sys

import kernels_ch06  # benchmarks/kernels_ch06.py, on the path through pyproject.toml
import numpy as np
import pytest

import gpu_utils as gu
from conftest import ROOT

TILE = 4


naive = kernels_ch06.matmul_naive  # the benchmark's kernels: one source for each
tiled = kernels_ch06.tiled(TILE)


def test_flops_and_least_traffic():
    assert gu.matmul.flops(2, 3, 4) == 48
    assert gu.matmul.min_bytes(2, 3, 4) == 4 * (2 * 4 + 4 * 3 + 2 * 3)
    assert gu.matmul.min_bytes(2, 3, 4, bytes_per_value=2) == 2 * 26


@pytest.mark.parametrize("m, k, n", [(8, 8, 8), (7, 5, 10)])
def test_global_loads_match_the_trace(m, k, n):
    rng = np.random.default_rng(0)
    a = rng.random((m, k), dtype=np.float32)
    b = rng.random((k, n), dtype=np.float32)
    for name, kernel, tile in (("naive", naive, 1), ("tiled", tiled, TILE)):
        out = np.full((m, n), np.nan, dtype=np.float32)
        grid = (-(-n // TILE), -(-m // TILE))
        report = gu.trace.analyze(kernel, grid, (TILE, TILE), a, b, out, divergence=False)
        np.testing.assert_allclose(out, a.astype(np.float64) @ b, rtol=1e-5)
        assert report.global_loads.accesses == gu.matmul.global_loads(name, m, n, k, tile)


def test_tiles_divide_the_traffic_and_raise_the_intensity():
    n = 4096
    naive_loads = gu.matmul.global_loads("naive", n, n, n)
    assert gu.matmul.global_loads("tiled", n, n, n, 32) * 32 == naive_loads
    assert gu.matmul.global_loads("tiled", n, n, n, (128, 64)) == n**3 // 64 + n**3 // 128
    assert gu.matmul.intensity("naive", n, n, n) == 0.25
    assert gu.matmul.intensity("tiled", n, n, n, 32) == 8.0
    with pytest.raises(ValueError, match="use one of naive, tiled"):
        gu.matmul.global_loads("strassen", n, n, n)


@pytest.mark.skipif(gu.mode == "gpu", reason="the refusal happens without a GPU")
def test_matmul_rates_and_its_script_refuse_without_a_gpu():
    with pytest.raises(RuntimeError, match="needs an NVIDIA GPU"):
        gu.matmul.matmul_rates([64])
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "ch06_tensor_cores.py")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and "nothing was written" in done.stderr


@pytest.mark.gpu
def test_matmul_rates_on_a_gpu():
    rows = gu.matmul.matmul_rates([512], repeat=3)
    assert [row["format"] for row in rows] == list(gu.matmul.RATE_FORMATS)
    assert all(row["flops_per_s"] > 0 and row["relative_error"] < 0.05 for row in rows)
