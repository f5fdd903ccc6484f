"""The CUDA driver, asked directly (course machinery; chapter 00, "How the course runs"): how many
GPUs it sees and which CUDA version it supports, through ``ctypes`` and ``libcuda``, with no
numba, no torch and no GPU context.

The one driver probe of the course: :mod:`gpu_utils.runtime` picks the mode from :func:`probe`,
the doctor (:mod:`gpu_utils.diagnostics`) and the Colab install (:mod:`gpu_utils.colab`) read
:func:`cuda_version`. Standard library only, and nothing else of the package: on Colab,
``colab.py`` loads this file by its path before the course is installed.
"""

from __future__ import annotations

import ctypes

#: The driver library's names: Linux (with and without the soname), Windows, macOS.
NAMES = ("libcuda.so.1", "libcuda.so", "nvcuda.dll", "libcuda.dylib")


def library(names: tuple[str, ...] = NAMES):
    """The CUDA driver library, loaded; None when there is none."""
    for name in names:
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


def probe(names: tuple[str, ...] = NAMES) -> tuple[int, str | None]:
    """(number of CUDA devices, why when zero), from ``cuInit`` and ``cuDeviceGetCount``."""
    lib = library(names)
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


def gpu_count(names: tuple[str, ...] = NAMES) -> int:
    """How many GPUs the driver reports (0 without a driver or a GPU)."""
    return probe(names)[0]


def cuda_version(names: tuple[str, ...] = NAMES) -> tuple[int, int] | None:
    """The newest CUDA version the installed driver supports, e.g. (12, 4); None when there is no
    driver. ``cuDriverGetVersion`` needs no ``cuInit`` and no GPU context."""
    lib = library(names)
    if lib is None:
        return None
    version = ctypes.c_int(0)
    if lib.cuDriverGetVersion(ctypes.byref(version)) != 0 or version.value <= 0:
        return None
    return version.value // 1000, (version.value % 1000) // 10
