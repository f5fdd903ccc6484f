"""The doctor: runs here, says so, and gives a fix for each known problem."""

import json
import os
import subprocess
import sys

import gpu_utils as gu
from gpu_utils import diagnostics as doctor


def _run(*args):
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    return subprocess.run(
        [sys.executable, "-m", "gpu_utils", "doctor", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=180,
    )


def test_doctor_exits_zero_and_names_the_mode():
    out = _run()
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"mode: {gu.mode}" in out.stdout
    assert "Verdict: the course runs here" in out.stdout
    for package in ("numba", "numba-cuda", "torch"):
        assert f"{package} " in out.stdout


def test_doctor_json_is_the_same_report():
    report = json.loads(_run("--json").stdout)
    assert report["ok"] is True
    assert report["mode"] == gu.mode
    assert {f["name"] for f in report["findings"]} >= {"numba-cuda", "kernel", "cupy"}


def _finding(report, name):
    return next(f for f in report["findings"] if f["name"] == name)


def test_missing_numba_cuda_is_an_error_with_a_fix(monkeypatch):
    real = doctor._version
    monkeypatch.setattr(doctor, "_version", lambda p: None if p == "numba-cuda" else real(p))
    report = doctor.diagnose()
    assert not report["ok"]
    assert "pip install 'numba-cuda" in _finding(report, "numba-cuda")["fix"]


def test_colab_without_gpu_says_how_to_switch(monkeypatch):
    monkeypatch.setenv("COLAB_RELEASE_TAG", "test")
    monkeypatch.setattr(doctor.runtime, "mode", "simulator")
    finding = _finding(doctor.diagnose(), "Colab runtime")
    assert finding["status"] == "warning"
    assert "Change runtime type" in finding["fix"]


def test_ptx_version_mismatch_names_the_fix(monkeypatch):
    monkeypatch.setattr(
        doctor, "_smoke_kernel", lambda: "CudaAPIError: [222] CUDA_ERROR_UNSUPPORTED_PTX_VERSION"
    )
    report = doctor.diagnose()
    finding = _finding(report, "kernel")
    assert not report["ok"] and finding["status"] == "error"
    assert "newer than your NVIDIA driver" in finding["fix"]


def test_wrong_import_order_is_an_error(monkeypatch):
    monkeypatch.setattr(doctor.runtime, "mode_conflict", "numba was imported before gpu_utils")
    report = doctor.diagnose()
    assert not report["ok"]
    assert _finding(report, "import order")["status"] == "error"


def test_cupy_without_a_device_falls_back_to_numpy():
    finding = _finding(doctor.diagnose(), "cupy")
    if gu.mode == "simulator":
        assert finding["status"] == "ok"
        assert "NumPy instead" in finding["detail"]
