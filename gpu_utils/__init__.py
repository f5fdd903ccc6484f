"""gpu_utils: the helper package of "GPUs for Machine Learning, with live labs".

``import gpu_utils as gu`` must come first in every notebook: it chooses the mode (a real GPU,
or the course's CUDA simulator behind Numba's simulator mode) before numba is imported. Modules that later chapters add
(``gu.occupancy``, ``gu.trace``, ...) load on first use, so importing the package stays cheap.
"""

from __future__ import annotations

import importlib

from . import runtime  # first: sets NUMBA_ENABLE_CUDASIM before anything imports numba
from .bench import BenchResult, bench
from .device import DeviceInfo, banner, device_info
from .runtime import pick

mode: str = runtime.mode

if mode == "simulator":
    from . import warp

    warp.install_when_numba_loads()  # the warp intrinsics join the simulator when numba loads it

__all__ = [
    "BenchResult",
    "DeviceInfo",
    "banner",
    "bench",
    "device_info",
    "doctor",
    "mode",
    "pick",
]

__version__ = "0.1.0"


def doctor() -> bool:
    """Print what this machine can run and how to fix what is wrong; True when the course runs."""
    from .diagnostics import diagnose, render

    report = diagnose()
    print(render(report))
    return report["ok"]


def __getattr__(name: str):
    """Load submodules (``gu.specs``, ``gu.exercises``, ...) on first use."""
    if name.startswith("_"):
        raise AttributeError(name)
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as error:
        if error.name != f"{__name__}.{name}":
            raise
        raise AttributeError(f"module 'gpu_utils' has no attribute {name!r}") from None
