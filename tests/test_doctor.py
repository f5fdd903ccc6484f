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
    monkeypatch.setattr(doctor.cuda_driver, "cuda_version", lambda: (12, 4))
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


# --- the version table: pairs known to break, checked in every mode ------------------------------

TESTED = {"numpy": "2.4.6", "numba": "0.68.1", "numba-cuda": "0.30.4", "torch": "2.13.0"}
NUMPY_2_5 = TESTED | {"numpy": "2.5.2"}


def _table(versions, driver=None, wheels=None, where="clone", row_stack="numpy", limit=(2, 5)):
    found = doctor.version_findings(versions, driver, wheels or {}, where, row_stack, limit)
    return {f["name"]: f for f in found}


def test_the_tested_set_passes_every_row_of_the_table():
    table = _table(TESTED, (13, 0), CU13_WHEELS)
    assert set(table) == {
        "numba-cuda vs numpy",
        "numba vs numpy",
        "CUDA versions",
        "torch vs driver",
    }
    assert all(f["status"] == "ok" for f in table.values())


def test_numpy_2_5_without_row_stack_is_an_error_with_a_fix_for_where_you_are():
    clone = _table(NUMPY_2_5, row_stack="missing")["numba-cuda vs numpy"]
    assert clone["status"] == "error" and "row_stack" in clone["detail"]
    assert "make lab" in clone["fix"]
    on_colab = _table(NUMPY_2_5, where="colab", row_stack="missing")["numba-cuda vs numpy"]
    assert "`!pip install 'numpy<2.5'`" in on_colab["fix"]
    assert "Restart session" in on_colab["fix"] and "make" not in on_colab["fix"]
    elsewhere = _table(NUMPY_2_5, where="pip", row_stack="missing")["numba-cuda vs numpy"]
    assert "`pip install 'numpy<2.5'`" in elsewhere["fix"]


def test_numpy_2_5_with_the_courses_stub_works_and_says_why():
    finding = _table(NUMPY_2_5, row_stack="stub")["numba-cuda vs numpy"]
    assert finding["status"] == "ok" and "stand-in" in finding["detail"]
    newer = NUMPY_2_5 | {"numba-cuda": "0.31.0"}  # a numba-cuda that no longer registers it
    assert _table(newer, row_stack="missing")["numba-cuda vs numpy"]["status"] == "ok"


def test_a_numpy_newer_than_numba_accepts_is_an_error():
    finding = _table(TESTED | {"numpy": "2.6.0"}, limit=(2, 5))["numba vs numpy"]
    assert finding["status"] == "error" and "up to 2.5" in finding["detail"]
    on_colab = _table(TESTED | {"numpy": "2.6.0"}, where="colab")["numba vs numpy"]
    assert "'numpy<2.6'" in on_colab["fix"]


def test_the_installed_numba_says_which_numpy_it_accepts():
    """Read from numba's own import check: at least the NumPy installed beside it, which it
    imported (numba 0.68 accepts up to 2.4, Colab's 0.61 up to 2.2: every tier holds it)."""
    import numpy

    limit = doctor.numba_numpy_limit()
    installed = tuple(int(part) for part in numpy.__version__.split(".")[:2])
    assert limit is not None and limit >= installed, (limit, numpy.__version__)


def test_two_cupy_builds_are_an_error():
    both = TESTED | {"cupy-cuda12x": "14.2.0", "cupy-cuda13x": "14.2.0"}
    clone = _table(both, (12, 4))["CuPy builds"]
    assert clone["status"] == "error" and "make lab" in clone["fix"]
    on_colab = _table(both, (12, 4), where="colab")["CuPy builds"]
    assert "!pip uninstall -y cupy-cuda13x" in on_colab["fix"]


def test_torch_built_for_a_newer_cuda_than_the_driver_is_an_error():
    table = _table(TESTED, (12, 4), CU13_WHEELS, where="colab")
    assert table["torch vs driver"]["status"] == "error"
    assert "Restart session" in table["torch vs driver"]["fix"]
    assert "make lab" not in table["CUDA versions"]["fix"]
    assert "numba-cuda[cu12]>=0.30,<0.31" in table["CUDA versions"]["fix"]


def test_a_row_stack_failure_of_the_test_kernel_names_numpy(monkeypatch):
    monkeypatch.setattr(
        doctor,
        "_smoke_kernel",
        lambda: "AttributeError: module 'numpy' has no attribute 'row_stack'",
    )
    monkeypatch.setattr(doctor, "place", lambda: "colab")
    finding = _finding(doctor.diagnose(), "kernel")
    assert finding["status"] == "error" and "NumPy does not fit numba-cuda" in finding["detail"]
    assert "numpy<2.5" in finding["fix"] and "make lab" not in finding["fix"]


def test_the_doctor_knows_where_it_runs(monkeypatch):
    assert doctor.place() == "clone"  # this repository, with its Makefile
    monkeypatch.setattr(doctor, "_on_colab", lambda: True)
    assert doctor.place() == "colab"
    report = doctor.diagnose()
    assert report["place"] == "colab"
    assert {f["name"] for f in report["findings"]} >= {"numba-cuda vs numpy", "numba vs numpy"}


def test_missing_numba_cuda_on_colab_gets_the_pip_line_not_make(monkeypatch):
    real = doctor._version
    monkeypatch.setattr(doctor, "_version", lambda p: None if p == "numba-cuda" else real(p))
    monkeypatch.setattr(doctor, "place", lambda: "colab")
    fix = _finding(doctor.diagnose(), "numba-cuda")["fix"]
    assert "`!pip install 'numba-cuda" in fix and ">=0.30,<0.31" in fix
    assert "Restart session" in fix and "make" not in fix


def test_the_numpy_the_doctor_calls_tested_is_the_locked_one():
    from conftest import ROOT

    lock = (ROOT / "requirements" / "course.txt").read_text()
    assert f"numpy=={doctor.TESTED_NUMPY}\n" in lock


def test_a_triton_other_than_torchs_own_is_a_warning_with_the_pin():
    versions = TESTED | {"triton": "3.9.0"}
    found = doctor.version_findings(versions, None, {}, "colab", torch_triton="3.7.1")
    finding = {f["name"]: f for f in found}["triton vs torch"]
    assert finding["status"] == "warning" and "requires triton 3.7.1" in finding["detail"]
    assert "`!pip install 'triton==3.7.1'`" in finding["fix"]
    fine = doctor.version_findings(
        TESTED | {"triton": "3.7.1"}, None, {}, "clone", torch_triton="3.7.1"
    )
    assert {f["name"]: f for f in fine}["triton vs torch"]["status"] == "ok"
    assert doctor.torch_triton() in (None, "3.7.1", "3.6.0")  # a CPU torch requires none


def test_gpu_mode_without_a_usable_gpu_is_a_finding_not_a_traceback(monkeypatch):
    def no_gpu():
        raise RuntimeError("Error at driver init:\n\nCUDA driver library cannot be found.\n")

    monkeypatch.setattr(doctor, "device_info", no_gpu)
    monkeypatch.setattr(doctor, "_smoke_kernel", lambda: None)
    report = doctor.diagnose()
    finding = _finding(report, "GPU")
    assert finding["status"] == doctor.ERROR
    assert "CUDA driver library cannot be found" in finding["detail"]
    assert "GPU_COURSE_MODE" in finding["fix"]
    assert not report["ok"]
    assert "no usable GPU" in doctor.render(report)


# The tested package sets (make test, make test-cu12, make test-colab) and what each lacks.
def _pin(path, name):
    import re

    text = (doctor._ROOT / path).read_text()
    return re.search(rf"^{name}(?:\[\w+\])?==([^\s+]+)", text, re.M).group(1)


def test_package_sets_are_read_from_the_locks_and_colabs_list():
    sets = {s["tier"]: s for s in doctor.package_sets()}
    assert set(sets) == {"make test", "make test-cu12", "make test-colab"}
    assert sets["make test"]["torch"] == _pin("requirements/course.txt", "torch")
    assert sets["make test-cu12"]["torch"] == _pin("requirements/course-cu12.txt", "torch")
    colab = sets["make test-colab"]
    assert colab["python"] == "3.13" and colab["name"].startswith("Colab 20")
    assert colab["numpy"] == _pin(colab["file"], "numpy")
    assert colab["torch"] == _pin(colab["file"], "torch")  # 2.11.0+cu128 -> 2.11.0
    # numba-cuda: what the install cell installs there, not Colab's own (0.22.2)
    assert colab["numba-cuda"] == _pin("requirements/course-cu12.txt", "numba-cuda")
    assert sets["make test-cu12"]["lacks"] == ["FunctionEvent.input_dtypes"]
    assert sets["make test"]["lacks"] == []


def test_set_findings_name_the_set_or_say_it_was_not_tested():
    sets = doctor.package_sets()
    cu12 = next(s for s in sets if s["tier"] == "make test-cu12")
    versions = {p: cu12[p] for p in doctor.SET_PACKAGES} | {"torch": cu12["torch"] + "+cu128"}
    found = {f["name"]: f for f in doctor.set_findings(versions, "3.11.9", sets)}
    assert "CUDA 12 lock" in found["package set"]["detail"]
    gap = found["FunctionEvent.input_dtypes"]
    assert gap["status"] == "ok" and "add_input_dtypes" in gap["detail"]
    found = {f["name"]: f for f in doctor.set_findings(versions, "3.12.1", sets)}
    assert "not one of the tested sets" in found["package set"]["detail"]
    newer = versions | {"torch": "2.13.0"}
    assert "FunctionEvent.input_dtypes" not in {
        f["name"] for f in doctor.set_findings(newer, "3.11.9", sets)
    }


def test_lacks_answers_only_for_measured_releases():
    assert doctor.lacks("FunctionEvent.input_dtypes", "2.11.0+cu128") is True
    assert doctor.lacks("FunctionEvent.input_dtypes", "2.13.0") is False
    assert doctor.lacks("FunctionEvent.input_dtypes", "2.12.0") is None  # not measured


def test_doctor_shows_the_tested_sets_within_100_columns():
    text = doctor.render(doctor.diagnose())
    assert "tested sets (python numpy numba numba-cuda torch triton):" in text
    table = text.split("tested sets", 1)[1].split("\n[", 1)[0].splitlines()[1:]
    assert any("make test-cu12" in line for line in table)
    assert "      lacks FunctionEvent.input_dtypes" in table
    assert all(len(line) <= 100 for line in table)
