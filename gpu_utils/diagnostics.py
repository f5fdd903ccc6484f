"""The doctor (``python -m gpu_utils doctor``, ``gu.doctor()``): what this machine runs, and how
to fix each problem found.

Used in chapter 00 and for workshop preflight (``--json``). The course can run when the exit
status is 0; the simulator counts.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import sys
from importlib import metadata

from . import runtime
from .backends import cupy_problem, torch_device
from .device import device_info

OK, WARNING, ERROR = "ok", "warning", "error"
PACKAGES = ("numba", "numba-cuda", "cupy-cuda13x", "torch", "numpy", "jupyterlab")


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def _finding(name: str, status: str, detail: str, fix: str = "") -> dict:
    return {"name": name, "status": status, "detail": detail, "fix": fix}


def _on_colab() -> bool:
    return "google.colab" in sys.modules or "COLAB_RELEASE_TAG" in os.environ


def _smoke_kernel() -> str | None:
    """Run a tiny kernel in the current mode; None on success, else the error text."""
    try:
        from . import _smoke

        _smoke.run()
    except Exception as error:
        return f"{type(error).__name__}: {error}"
    return None


def _ptx_fix(driver: str | None) -> str:
    found = f" (this driver supports CUDA {driver})" if driver else ""
    return (
        "The CUDA compiler in this environment (CUDA 13, from the pinned wheels) is newer than "
        f"your NVIDIA driver supports{found}. Update the driver to version 580 or newer; or, to "
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
                "run `make lab`, which installs the pinned numba-cuda[cu13] (or pip install 'numba-cuda[cu13]')",
            )
        )
    else:
        found.append(_finding("numba-cuda", OK, f"numba-cuda {_version('numba-cuda')}"))
    if runtime.mode_conflict:
        found.append(_finding("import order", ERROR, runtime.mode_conflict))
    if runtime.mode == "simulator" and _on_colab():
        found.append(
            _finding(
                "Colab runtime",
                WARNING,
                "this Colab session has no GPU, so kernels run on the (slow) simulator",
                "Runtime > Change runtime type > T4 GPU > Save, then run the notebook again "
                "from the top",
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
                "run `make lab` to reinstall the pinned packages; if it persists, set "
                "GPU_COURSE_MODE=simulator to keep working while you fix the GPU setup",
            )
        )
    problem = cupy_problem()
    if problem is None:
        found.append(_finding("cupy", OK, "CuPy computes on the GPU"))
    else:
        status = WARNING if runtime.mode == "gpu" else OK
        fix = "run `make lab` to reinstall cupy-cuda13x (needs a CUDA 13 driver, 580 or newer)"
        fix = fix if status == WARNING else ""
        found.append(_finding("cupy", status, f"{problem}; notebooks use NumPy instead", fix))
    if runtime.mode == "gpu" and torch_device() == "cpu":
        found.append(
            _finding(
                "torch",
                WARNING,
                "PyTorch cannot see the GPU (a CPU-only build?), so its GPU comparisons are skipped",
                "install a CUDA build of torch 2.13.0 (see pytorch.org for the command)",
            )
        )
    return found


def diagnose() -> dict:
    """Everything the doctor knows, as plain data (what ``--json`` prints)."""
    info = device_info()
    findings = _findings(info)
    return {
        "ok": all(f["status"] != ERROR for f in findings),
        "mode": runtime.mode,
        "mode_reason": runtime.mode_reason,
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
