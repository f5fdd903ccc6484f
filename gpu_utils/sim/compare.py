"""``GPU_COURSE_SIM=compare``: every launch of a ``@cuda.jit`` kernel in simulator mode runs on
numba-cuda's simulator (whose results the caller keeps, so a checker's verdict is numba's) and
then on the course's engine with copies of the same inputs; one JSON line per launch, appended to
the file named by ``GPU_COURSE_SIM_LOG``, says whether the outputs are equal. The differential
test (tests/test_sim_differential.py) runs the checkers this way, in their own processes.
"""

from __future__ import annotations

import json
import os

import numpy as np

LOG = "GPU_COURSE_SIM_LOG"


def _host(value):
    """A numpy copy of an array argument (numpy or device array), else None."""
    from numba.cuda.simulator.args import ArgHint
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

    if isinstance(value, ArgHint):
        value = value.value
    if isinstance(value, FakeCUDAArray):
        return value.copy_to_host()
    if isinstance(value, np.ndarray) and value.ndim > 0:
        return value.copy()
    return None


def _error(error: BaseException | None):
    if error is None:
        return None
    return {"type": type(error).__name__, "bases": [c.__name__ for c in type(error).__mro__]}


def _first_difference(expected: np.ndarray, got: np.ndarray) -> str | None:
    if expected.shape != got.shape or expected.dtype != got.dtype:
        return f"shape/dtype {expected.shape} {expected.dtype} vs {got.shape} {got.dtype}"
    same = (expected == got) | ((expected != expected) & (got != got))  # NaN == NaN here
    if same.all():
        return None
    where = tuple(int(i) for i in np.argwhere(~same)[0])
    return f"index {where}: numba {expected[where]!r}, course {got[where]!r}"


def launch_both(original_call, kernel, args) -> None:
    """Run ``kernel`` (a FakeCUDAKernel, configured) on both engines; log; behave as numba's."""
    from numba.cuda.errors import normalize_kernel_dimensions

    from .engine import launch

    grid_dim, block_dim = normalize_kernel_dimensions(kernel.grid_dim, kernel.block_dim)
    copies = [_host(a) for a in args]
    ours = [c.copy() if c is not None else a for c, a in zip(copies, args, strict=True)]
    numba_error = course_error = None
    try:
        original_call(kernel, *args)
    except Exception as error:
        numba_error = error
    try:
        launch(kernel.fn, grid_dim, block_dim, *ours, dynshared_size=kernel.dynshared_size)
    except Exception as error:
        course_error = error
    differences = []
    if numba_error is None and course_error is None:
        for k, (arg, mine) in enumerate(zip(args, ours, strict=True)):
            if copies[k] is None:
                continue
            found = _first_difference(_host(arg), mine)
            if found:
                differences.append(f"argument {k}: {found}")
    record = {
        "file": kernel.fn.__code__.co_filename,
        "kernel": kernel.fn.__name__,
        "grid": list(grid_dim),
        "block": list(block_dim),
        "numba_error": _error(numba_error),
        "course_error": _error(course_error),
        "course_message": str(course_error)[:300] if course_error else None,
        "differences": differences,
    }
    path = os.environ.get(LOG)
    if path:
        with open(path, "a") as log:
            log.write(json.dumps(record) + "\n")
    if numba_error is not None:
        raise numba_error
