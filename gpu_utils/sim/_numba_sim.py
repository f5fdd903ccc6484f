"""The private parts of numba-cuda's simulator that :mod:`gpu_utils.sim.warp` (chapter 05's warp
intrinsics) and :mod:`gpu_utils.sim._trace_run` (chapter 04's ``gu.trace``) patch, in one place: the
release they were tested with, a one-time warning when another release is installed, and a clear
error when a part they need is gone.
"""

from __future__ import annotations

import warnings

TESTED_NUMBA_CUDA = "0.30"  # the simulator internals used here were tested with numba-cuda 0.30.x
PIN_ADVICE = (
    f"The course pins numba-cuda {TESTED_NUMBA_CUDA}.x (requirements/course.txt): `make lab` "
    "reinstalls the pinned versions."
)
_version_checked = False


def installed_version() -> str:
    """The installed numba-cuda release, or 'not installed'."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("numba-cuda")
    except PackageNotFoundError:
        return "not installed"


def check_numba_cuda_version() -> None:
    """Warn once when numba-cuda is not the tested release: the warp intrinsics and ``gu.trace``
    patch private parts of its simulator (``kernel.BlockThread``, ``kernelapi.FakeCUDAModule``,
    ``swapped_cuda_module``, ...), which may change between releases."""
    global _version_checked
    if _version_checked:
        return
    _version_checked = True
    select_engine()  # runs once, when gu.warp joins numba's simulator (import gpu_utils)
    found = installed_version()
    if found.split(".")[:2] != TESTED_NUMBA_CUDA.split("."):
        warnings.warn(
            f"numba-cuda {found} is installed, but gpu_utils' simulator intrinsics and trace were "
            f"tested with numba-cuda {TESTED_NUMBA_CUDA}.x; they use private parts of its "
            f"simulator and may misbehave. {PIN_ADVICE}",
            RuntimeWarning,
            stacklevel=3,
        )


def require_simulator_internals(module, *names: str) -> None:
    """Raise a clear ImportError when a private part of numba's simulator is missing."""
    missing = [name for name in names if not hasattr(module, name)]
    if missing:
        raise ImportError(
            f"{module.__name__} has no {', '.join(missing)}: this numba-cuda release changed the "
            f"simulator internals gpu_utils uses (warp intrinsics, gu.trace). {PIN_ADVICE}"
        )


_engine_hooked = False
_numba_call = None  # numba-cuda's FakeCUDAKernel.__call__, kept when the launch hook replaces it


def launch_on_numba(kernel, *args) -> None:
    """Run a configured kernel (``kernel[grid, block]``) on numba-cuda's simulator, whichever
    engine ``GPU_COURSE_SIM`` selects: the oracle of the engine's tests and benchmark."""
    call = _numba_call
    if call is None:
        from numba.cuda.simulator import kernel as simulator_kernel

        call = simulator_kernel.FakeCUDAKernel.__call__
    call(kernel, *args)


def select_engine() -> str:
    """Launches of ``@cuda.jit`` kernels in simulator mode go through the course's engine
    (:mod:`gpu_utils.sim`, the default, issue 29) instead of numba-cuda's threads;
    ``GPU_COURSE_SIM=numba`` keeps numba-cuda's simulator, ``compare`` runs both and logs any
    difference (:mod:`gpu_utils.sim.compare`). Read once; returns the engine in use."""
    global _engine_hooked, _numba_call
    from . import engine_or_default

    chosen = engine_or_default(warn=True)  # a misspelt value: says so, runs the default
    if chosen == "numba" or _engine_hooked:
        return chosen
    from numba.cuda.simulator import kernel

    require_simulator_internals(kernel, "FakeCUDAKernel", "_get_kernel_context")
    original = _numba_call = kernel.FakeCUDAKernel.__call__

    def __call__(self, *args):
        if self._device or kernel._get_kernel_context() is not None or self.extensions:
            return original(self, *args)
        from numba.cuda.errors import normalize_kernel_dimensions

        from . import NotHandledYet, compare
        from .engine import prepare

        if chosen == "compare":
            return compare.launch_both(original, self, args)
        grid_dim, block_dim = normalize_kernel_dimensions(self.grid_dim, self.block_dim)
        try:
            prepared = prepare(
                self.fn, grid_dim, block_dim, *args, dynshared_size=self.dynshared_size
            )
        except NotHandledYet:  # refused before anything ran (no source, a grid group)
            return original(self, *args)
        prepared.run()

    kernel.FakeCUDAKernel.__call__ = __call__
    _engine_hooked = True
    return chosen
