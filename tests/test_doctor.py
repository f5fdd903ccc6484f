"""The doctor: runs here, says so, and gives a fix for each known problem."""

import json
import os
import subprocess
import sys
import types

import pytest

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
    for package in ("numba", "numba-cuda", "torch", "triton"):
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
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
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
    assert "make lab" in finding["fix"] and "course-cu12.txt" in finding["fix"]


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


# --- driver vs wheels: simulated machines --------------------------------------------------------

CU13_WHEELS = {"cuda-bindings": 13, "cupy-cuda13x": 13, "torch": 13}
CU12_WHEELS = {"cuda-bindings": 12, "cupy-cuda12x": 12, "torch": 12}


def test_cuda_13_wheels_on_a_cuda_12_driver_is_an_error_with_the_exact_fix():
    finding = doctor.cuda_mismatch((12, 4), CU13_WHEELS)
    assert finding["status"] == "error"
    assert "supports CUDA 12.4" in finding["detail"]
    assert "cuda-bindings, cupy-cuda13x, torch are built for CUDA 13" in finding["detail"]
    assert "rm -f .venv/.course-installed* && make lab" in finding["fix"]
    assert "requirements/course-cu12.txt" in finding["fix"]


@pytest.mark.parametrize(
    ("driver", "wheels"),
    [((12, 4), CU12_WHEELS), ((13, 0), CU13_WHEELS), ((13, 0), CU12_WHEELS), (None, CU13_WHEELS)],
    ids=["cu12-on-12", "cu13-on-13", "cu12-on-13", "no-driver"],
)
def test_matching_or_older_wheels_are_fine(driver, wheels):
    assert doctor.cuda_mismatch(driver, wheels) is None


def test_a_driver_older_than_cuda_12_needs_an_update():
    finding = doctor.cuda_mismatch((11, 8), CU12_WHEELS)
    assert finding["status"] == "error" and "update the NVIDIA driver" in finding["fix"]


def test_the_doctor_reports_a_simulated_mismatch(monkeypatch):
    monkeypatch.setattr(doctor.colab, "driver_cuda_version", lambda: (12, 4))
    monkeypatch.setattr(doctor, "wheel_cuda", lambda: {"cupy-cuda13x": 13})
    report = doctor.diagnose()
    assert not report["ok"] and report["driver_cuda"] == "12.4"
    assert _finding(report, "CUDA versions")["status"] == "error"
    assert "driver supports CUDA: 12.4" in doctor.render(report)


def test_ptx_error_on_a_cuda_12_driver_names_the_cuda_12_set(monkeypatch):
    monkeypatch.setattr(doctor, "wheel_cuda", lambda: CU13_WHEELS)
    fix = doctor._ptx_fix("12.4")
    assert "CUDA 13" in fix and "supports CUDA 12.4" in fix
    assert "course-cu12.txt" in fix and "580" in fix


def test_installed_wheels_are_read_from_metadata():
    wheels = doctor.wheel_cuda()
    assert set(wheels) <= {"cuda-bindings", "cupy-cuda12x", "cupy-cuda13x", "torch"}
    assert all(major in (12, 13) for major in wheels.values())
