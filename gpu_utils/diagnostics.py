"""The doctor (``python -m gpu_utils doctor``, ``gu.doctor()``): what this machine runs, and how
to fix each problem found.

Used in chapter 00 and for workshop preflight (``--json``). The course can run when the exit
status is 0; the simulator counts.
"""

from __future__ import annotations

import dataclasses
import platform
import sys
import types
from importlib import metadata
from unittest import mock

from . import colab, runtime
from .backends import cupy_problem, torch_device
from .device import device_info

OK, WARNING, ERROR = "ok", "warning", "error"
PACKAGES = (
    "numba",
    "numba-cuda",
    "cuda-bindings",
    "cupy-cuda13x",
    "cupy-cuda12x",
    "torch",
    "triton",
    "numpy",
    "jupyterlab",
)
#: The one command that installs the set matching the driver (the Makefile asks the driver).
REINSTALL = "rm -f .venv/.course-installed* && make lab"
# The fixes the doctor gives (also listed in instructors/FAQ.md, generated from them).
FIX_NUMBA_CUDA = (
    "run `make lab`, which installs the pinned numba-cuda with the CUDA extra that matches the "
    "driver (or pip install 'numba-cuda[cu13]', 'numba-cuda[cu12]' for a CUDA 12 driver)"
)
FIX_COLAB_GPU = colab.SWITCH_TO_GPU
FIX_KERNEL = (
    "run `make lab` to reinstall the pinned packages; if it persists, set "
    "GPU_COURSE_MODE=simulator to keep working while you fix the GPU setup"
)
FIX_CUPY = f"run `{REINSTALL}` to install the CuPy that matches the driver's CUDA version"
FIX_TORCH = (
    f"run `{REINSTALL}`: it installs the CUDA build of torch that matches the driver "
    "(2.13.0 for CUDA 13, 2.10.0 for CUDA 12)"
)


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def _finding(name: str, status: str, detail: str, fix: str = "") -> dict:
    return {"name": name, "status": status, "detail": detail, "fix": fix}


def _on_colab() -> bool:
    return colab.is_colab()


def wheel_cuda() -> dict[str, int]:
    """The CUDA major version each installed CUDA package was built for (from package metadata)."""
    found = {}
    bindings = _version("cuda-bindings")
    if bindings:
        found["cuda-bindings"] = int(bindings.split(".")[0])
    for major in (12, 13):
        if _version(f"cupy-cuda{major}x"):
            found[f"cupy-cuda{major}x"] = major
    try:
        requires = " ".join(metadata.requires("torch") or [])
    except metadata.PackageNotFoundError:
        requires = ""
    if "-cu12" in requires:
        found["torch"] = 12
    elif "-cu13" in requires or "cuda-toolkit" in requires:
        found["torch"] = 13
    return found


def cuda_mismatch(driver: tuple[int, int] | None, wheels: dict[str, int]) -> dict | None:
    """A finding when packages are built for a newer CUDA than the driver supports, else None.
    Newer drivers run older CUDA builds (backward compatibility); the reverse fails to load."""
    if driver is None:
        return None
    supported = f"{driver[0]}.{driver[1]}"
    if driver[0] < 12:
        return _finding(
            "CUDA driver",
            ERROR,
            f"the NVIDIA driver supports CUDA {supported} only; the course needs CUDA 12 or 13",
            "update the NVIDIA driver (525 or newer for the CUDA 12 set, 580 or newer for CUDA "
            "13), or set GPU_COURSE_MODE=simulator to work on the simulator meanwhile",
        )
    newer = sorted(name for name, major in wheels.items() if major > driver[0])
    if not newer:
        return None
    return _finding(
        "CUDA versions",
        ERROR,
        f"the NVIDIA driver supports CUDA {supported}, but {', '.join(newer)} "
        f"{'is' if len(newer) == 1 else 'are'} built for CUDA {max(wheels[n] for n in newer)}, "
        "which this driver cannot load",
        f"install the CUDA {driver[0]} set: `{REINSTALL}` (it reads the driver and installs "
        f"{colab.lock_for(driver)}); or update the NVIDIA driver to 580 or newer",
    )


def _smoke_kernel() -> str | None:
    """Run a tiny kernel in the current mode; None on success, else the error text."""
    try:
        from . import _smoke

        _smoke.run()
    except Exception as error:
        return f"{type(error).__name__}: {error}"
    return None


def _ptx_fix(driver: str | None, wheels: dict[str, int] | None = None) -> str:
    """The fix for CUDA_ERROR_UNSUPPORTED_PTX_VERSION: PTX from a newer compiler than the driver."""
    found = f" (this driver supports CUDA {driver})" if driver else ""
    wheels = wheel_cuda() if wheels is None else wheels
    built = f"CUDA {max(wheels.values())}" if wheels else "a newer CUDA"
    return (
        f"The CUDA compiler in this environment ({built}, from the installed wheels) is newer "
        f"than your NVIDIA driver supports{found}: the driver cannot load its PTX. Install the set "
        f"that matches the driver: `{REINSTALL}` (a CUDA 12 driver gets "
        "requirements/course-cu12.txt); or update the driver to version 580 or newer; or, to "
        "keep working meanwhile, set GPU_COURSE_MODE=simulator before starting JupyterLab."
    )


def _findings(info) -> list[dict]:
    found = []
    if _version("numba-cuda") is None:
        found.append(
            _finding(
                "numba-cuda",
                ERROR,
                "numba is installed without numba-cuda, which provides numba.cuda",
                FIX_NUMBA_CUDA,
            )
        )
    else:
        found.append(_finding("numba-cuda", OK, f"numba-cuda {_version('numba-cuda')}"))
    if runtime.mode_conflict:
        found.append(_finding("import order", ERROR, runtime.mode_conflict))
    mismatch = cuda_mismatch(colab.driver_cuda_version(), wheel_cuda())
    if mismatch:
        found.append(mismatch)
    if runtime.mode == "simulator" and _on_colab():
        found.append(
            _finding(
                "Colab runtime",
                WARNING,
                "this Colab session has no GPU, so kernels run on the (slow) simulator",
                FIX_COLAB_GPU,
            )
        )
    error = _smoke_kernel()
    if error is None:
        found.append(_finding("kernel", OK, f"a test kernel ran in {runtime.mode} mode"))
    elif "PTX" in error.upper():
        found.append(_finding("kernel", ERROR, error, _ptx_fix(info.driver_version)))
    else:
        found.append(
            _finding(
                "kernel",
                ERROR,
                f"a test kernel failed in {runtime.mode} mode: {error}",
                FIX_KERNEL,
            )
        )
    problem = cupy_problem()
    if problem is None:
        found.append(_finding("cupy", OK, "CuPy computes on the GPU"))
    else:
        status = WARNING if runtime.mode == "gpu" else OK
        fix = FIX_CUPY if status == WARNING else ""
        found.append(_finding("cupy", status, f"{problem}; notebooks use NumPy instead", fix))
    if runtime.mode == "gpu" and torch_device() == "cpu":
        found.append(
            _finding(
                "torch",
                WARNING,
                "PyTorch cannot see the GPU (a CPU-only build?), so its GPU comparisons are skipped",
                FIX_TORCH,
            )
        )
    return found


def diagnose() -> dict:
    """Everything the doctor knows, as plain data (what ``--json`` prints)."""
    info = device_info()
    findings = _findings(info)
    driver = colab.driver_cuda_version()
    return {
        "ok": all(f["status"] != ERROR for f in findings),
        "mode": runtime.mode,
        "mode_reason": runtime.mode_reason,
        "driver_cuda": f"{driver[0]}.{driver[1]}" if driver else None,
        "wheels_cuda": wheel_cuda(),
        "colab": _on_colab(),
        "device": dataclasses.asdict(info) | {"summary": info.summary()},
        "versions": {"python": platform.python_version()}
        | {package: _version(package) for package in PACKAGES},
        "findings": findings,
    }


def render(report: dict) -> str:
    """The report as text for a terminal or a notebook cell."""
    versions = ", ".join(f"{k} {v or 'not installed'}" for k, v in report["versions"].items())
    lines = [
        "GPU course doctor",
        f"  mode: {report['mode']} ({report['mode_reason']})",
        f"  device: {report['device']['summary']}",
        f"  driver supports CUDA: {report.get('driver_cuda') or 'no driver'}",
        f"  versions: {versions}",
    ]
    for finding in report["findings"]:
        lines.append(f"[{finding['status']}] {finding['name']}: {finding['detail']}")
        if finding["fix"]:
            lines.append(f"    fix: {finding['fix']}")
    if report["ok"]:
        lines.append(f"Verdict: the course runs here ({report['mode']} mode).")
    else:
        lines.append("Verdict: fix the errors above before starting the course.")
    return "\n".join(lines)


def catalogue() -> list[tuple[str, str]]:
    """(problem, fix) for every problem the doctor knows, from the same code and texts it uses
    (instructors/FAQ.md is generated from this list, so the two cannot drift)."""
    cu13 = {"cuda-bindings": 13, "cupy-cuda13x": 13, "torch": 13}
    found = [cuda_mismatch((12, 4), cu13), cuda_mismatch((11, 8), {})]
    problems = [(f["detail"] + " (example: a CUDA 12.4 driver)", f["fix"]) for f in found[:1]]
    problems.append((found[1]["detail"] + " (example: an 11.8 driver)", found[1]["fix"]))
    problems += [
        (
            "A kernel fails with CUDA_ERROR_UNSUPPORTED_PTX_VERSION (example: CUDA 13 wheels, a "
            "CUDA 12.4 driver)",
            _ptx_fix("12.4", cu13),
        ),
        ("numba is installed without numba-cuda, which provides numba.cuda", FIX_NUMBA_CUDA),
        ("On Colab, the session has no GPU: kernels run on the simulator", FIX_COLAB_GPU),
        ("A test kernel fails for another reason", FIX_KERNEL),
        ("In GPU mode, CuPy cannot use the GPU (notebooks use NumPy instead)", FIX_CUPY),
        ("In GPU mode, PyTorch cannot see the GPU (a CPU-only build?)", FIX_TORCH),
    ]
    fake = types.SimpleNamespace(ENABLE_CUDASIM=1)  # numba imported first, in simulator mode
    with mock.patch.dict(sys.modules, {"numba.core.config": fake}):
        conflict = runtime._numba_conflict("gpu") or ""
    what, _, fix = conflict.partition(" Fix: ")
    problems.append((what, fix))
    return problems
