"""Reference measurements: loaded when recorded, refused from the simulator, named safely."""

import json
import subprocess
import sys

import pytest

import gpu_utils as gu
from gpu_utils import reference


def test_missing_recording_says_how_to_make_one():
    assert reference.load("no_such_benchmark") is None
    assert "python benchmarks/x.py" in reference.missing("no_such_benchmark", "benchmarks/x.py")


def test_recordings_load_with_their_provenance(tmp_path, monkeypatch):
    monkeypatch.setattr(reference, "DATA_DIR", tmp_path)
    record = {
        "device": "NVIDIA H100 80GB HBM3",
        "date": "2026-11-21",
        "command": "c",
        "results": [1],
    }
    (tmp_path / "demo.json").write_text(json.dumps(record))
    loaded = reference.load("demo")
    assert loaded.device == "NVIDIA H100 80GB HBM3" and loaded.results == [1]
    assert "NVIDIA H100 80GB HBM3, 2026-11-21" in loaded.caption()


def test_names_cannot_escape_the_data_folder():
    with pytest.raises(ValueError, match="letters, digits"):
        reference.load("../secrets")


@pytest.mark.skipif(gu.mode == "gpu", reason="simulator refusal")
def test_saving_from_the_simulator_is_refused():
    with pytest.raises(RuntimeError, match="real GPU"):
        reference.save("demo", [1])


def test_benchmarks_refuse_on_the_simulator_and_say_why(capsys):
    if gu.mode == "gpu":
        pytest.skip("on a GPU the scripts record")
    assert gu.reference.refuse_without_gpu() is True
    assert "nothing was written" in capsys.readouterr().err
    assert gu.reference.refuse_without_gpu(torch_cuda=True) is True
    assert "CUDA build of PyTorch" in capsys.readouterr().err


@pytest.mark.parametrize("script", ["ch03_streams", "ch04_latency"])
def test_benchmark_scripts_refuse_on_the_simulator(script, root):
    if gu.mode == "gpu":
        pytest.skip("on a GPU the scripts record")
    done = subprocess.run(
        [sys.executable, str(root / "benchmarks" / f"{script}.py")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert "needs an NVIDIA GPU" in done.stderr and "nothing was written" in done.stderr
