"""Pick the execution mode once, before numba is imported (chapter 00, "How the course runs").

The course runs every kernel either on a real NVIDIA GPU (``"gpu"``) or on Numba's CUDA
simulator (``"simulator"``), which runs kernels as Python threads on the CPU. Numba reads
``NUMBA_ENABLE_CUDASIM`` once, when it is first imported, so this module decides the mode and sets
that variable *before* anything imports numba. The CUDA driver is probed through ``ctypes``, without
numba. ``GPU_COURSE_MODE=simulator|gpu`` overrides the choice.

In simulator mode it also sets ``TRITON_INTERPRET=1`` (chapter 12): Triton then runs
``@triton.jit`` kernels in its interpreter, on the CPU, with torch tensors. Triton reads the
variable when a kernel is decorated, so it must be set before a notebook defines one; setting it
here, at ``import gpu_utils``, covers every notebook that imports the package first. In GPU mode
it removes the variable (as it removes ``NUMBA_ENABLE_CUDASIM``), so that a process started from a
simulator session does not run the interpreter on a GPU; to debug a kernel in the interpreter on a
GPU machine, set ``os.environ["TRITON_INTERPRET"] = "1"`` after ``import gpu_utils`` and before
the kernel's ``@triton.jit``.

This module depends on nothing else in the package (the banner lives in :mod:`gpu_utils.device`,
and the package's ``__init__`` sets up the simulator's warp intrinsics once the mode is known).
"""

from __future__ import annotations

import ctypes
import os
import sys
import warnings
from typing import TypeVar

MODES = ("gpu", "simulator")
T = TypeVar("T")


def probe_driver() -> tuple[int, str | None]:
    """Return (number of CUDA devices, reason when zero) from the CUDA driver, via ctypes."""
    names = ("libcuda.so.1", "libcuda.so", "nvcuda.dll", "libcuda.dylib")
    lib = None
    for name in names:
        try:
            lib = ctypes.CDLL(name)
            break
        except OSError:
            continue
    if lib is None:
        return 0, "no CUDA driver library (libcuda) found"
    if lib.cuInit(0) != 0:
        return 0, "the CUDA driver is installed but cuInit failed (no usable GPU)"
    count = ctypes.c_int(0)
    if lib.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return 0, "the CUDA driver could not count devices"
    if count.value == 0:
        return 0, "the CUDA driver reports no GPU"
    return count.value, None


def _choose_mode() -> tuple[str, str]:
    """Return (mode, why)."""
    forced = os.environ.get("GPU_COURSE_MODE", "").strip().lower()
    if forced:
        if forced not in MODES:
            raise ValueError(
                f"GPU_COURSE_MODE={forced!r} is not a mode: use 'gpu' or 'simulator', "
                "or unset it to let the course choose."
            )
        return forced, f"GPU_COURSE_MODE={forced}"
    count, reason = probe_driver()
    if count:
        return "gpu", f"the CUDA driver reports {count} GPU(s)"
    return "simulator", reason or "no GPU"


def _numba_conflict(mode: str) -> str | None:
    """If numba was imported before gpu_utils in the other mode, explain how to fix it."""
    numba_config = sys.modules.get("numba.core.config")
    if numba_config is None:
        return None
    simulating = bool(getattr(numba_config, "ENABLE_CUDASIM", 0))
    if simulating == (mode == "simulator"):
        return None
    actual = "simulator" if simulating else "GPU"
    return (
        f"numba was imported before gpu_utils, in {actual} mode, but this machine needs {mode} mode; "
        "numba cannot switch afterwards. Fix: restart the kernel (Kernel > Restart) and make "
        "`import gpu_utils as gu` the first import of the notebook."
    )


def _settle() -> tuple[str, str, str | None]:
    wanted, why = _choose_mode()
    conflict = _numba_conflict(wanted)
    if conflict:
        warnings.warn(conflict, RuntimeWarning, stacklevel=3)
        numba_config = sys.modules["numba.core.config"]
        actual = "simulator" if getattr(numba_config, "ENABLE_CUDASIM", 0) else "gpu"
    else:
        actual = wanted
        if actual == "simulator":
            os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
        else:
            os.environ.pop("NUMBA_ENABLE_CUDASIM", None)
    if actual == "simulator":
        os.environ["TRITON_INTERPRET"] = "1"  # Triton's interpreter: no GPU needed (chapter 12)
    else:
        os.environ.pop("TRITON_INTERPRET", None)
    return actual, why, conflict


mode, mode_reason, mode_conflict = _settle()


def pick(*, gpu: T, simulator: T) -> T:
    """Return ``gpu`` on a real GPU and ``simulator`` on the simulator (problem sizes, repeats)."""
    return gpu if mode == "gpu" else simulator
