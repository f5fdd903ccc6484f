"""gu.cpu_vs_gpu: checked, timed rows with consistent rates; the GPU backend only on a GPU."""

import matplotlib.pyplot as plt
import pytest

import gpu_utils as gu

sweep = gu.cpu_vs_gpu.sweep


def test_work_counts_bytes_and_flops():
    assert gu.cpu_vs_gpu.work("add", 1000) == (12_000, 1000.0)
    assert gu.cpu_vs_gpu.work("matmul", 10) == (1200, 2000.0)
    with pytest.raises(ValueError, match="use one of add, matmul"):
        gu.cpu_vs_gpu.work("conv", 10)


def test_rows_carry_consistent_rates():
    rows = sweep("add", [1000, 5000], ["numpy", "torch-cpu-1"], repeat=3)
    rows += sweep("matmul", [16], ["torch-cpu-all"], repeat=3)
    assert [(r["op"], r["backend"], r["size"]) for r in rows] == [
        ("add", "numpy", 1000),
        ("add", "torch-cpu-1", 1000),
        ("add", "numpy", 5000),
        ("add", "torch-cpu-1", 5000),
        ("matmul", "torch-cpu-all", 16),
    ]
    assert [r["threads"] for r in rows] == [
        1,
        1,
        1,
        1,
        gu.cpu_vs_gpu.threads_used("torch-cpu-all", "matmul"),
    ]
    assert gu.cpu_vs_gpu.threads_used("torch-cpu-all", "add") >= 1
    assert gu.cpu_vs_gpu.threads_used("numpy", "matmul") is None  # NumPy's BLAS decides
    for row in rows:
        assert row["repeat"] == 3
        assert row["q1"] <= row["seconds"] <= row["q3"]
        assert row["bytes_per_s"] == pytest.approx(row["bytes"] / row["seconds"])
        assert row["flops_per_s"] == pytest.approx(row["flops"] / row["seconds"])
    fig = gu.cpu_vs_gpu.plot(rows, title="test", peaks={"bytes_per_s": 1e12})
    assert len(fig.axes) == 4
    plt.close(fig)


def test_torch_threads_are_restored():
    import torch

    before = torch.get_num_threads()
    sweep("add", [100], ["torch-cpu-1"], repeat=1)
    assert torch.get_num_threads() == before


def test_repeats_and_warmup_are_checked_and_used():
    rows = sweep("add", [64], ["numpy"], repeat=5, warmup=3)
    assert rows[0]["repeat"] == 5
    with pytest.raises(ValueError, match="need repeat >= 1"):
        sweep("add", [64], ["numpy"], repeat=0)
    with pytest.raises(ValueError, match="warmup >= 0"):
        sweep("add", [64], ["numpy"], warmup=-1)


def test_bad_backends_say_what_to_do():
    with pytest.raises(ValueError, match="use some of"):
        sweep("add", [10], ["cupy"])
    if gu.mode == "simulator":
        assert "torch-gpu" not in gu.cpu_vs_gpu.backends_here()
        with pytest.raises(ValueError, match="needs GPU mode"):
            sweep("add", [10], ["torch-gpu"])


@pytest.mark.gpu
def test_gpu_backend_runs_on_a_gpu():
    if "torch-gpu" not in gu.cpu_vs_gpu.backends_here():
        pytest.skip("PyTorch here is not a CUDA build")
    (row,) = sweep("matmul", [256], ["torch-gpu"], repeat=3)
    assert row["flops_per_s"] > 0


@pytest.mark.skipif(gu.mode == "gpu", reason="checks the refusal on a machine without a GPU")
def test_the_benchmark_script_refuses_without_a_gpu(root):
    import subprocess
    import sys

    script = root / "benchmarks" / "ch01_cpu_vs_gpu.py"
    run = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, cwd=root)
    assert run.returncode == 2
    assert "needs an NVIDIA GPU" in run.stderr and "nothing was written" in run.stderr
