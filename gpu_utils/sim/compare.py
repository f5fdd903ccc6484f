"""``GPU_COURSE_SIM=compare``: every launch of a ``@cuda.jit`` kernel in simulator mode runs on
numba-cuda's simulator (whose results the caller keeps, so a checker's verdict is numba's) and
then on the course's engine with copies of the same inputs; one JSON line per launch, appended to
the file named by ``GPU_COURSE_SIM_LOG``, says whether the outputs are equal. ``gu.trace.analyze``
does the same (:func:`analyze_both`): its line (``"trace": true``) says whether the two reports
are equal. The differential test (tests/test_sim_differential.py) runs the checkers this way, in
their own processes.
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


def _copies(args) -> list:
    """Host copies of the array arguments; one array passed twice stays one array."""
    made: dict[int, np.ndarray] = {}
    result = []
    for arg in args:
        copy = _host(arg)
        if copy is not None:
            key = id(arg.value if hasattr(arg, "value") else arg)
            copy = made.setdefault(key, copy)
        result.append(copy if copy is not None else arg)
    return result


def analyze_both(analyze, kernel, griddim, blockdim, args, dynamic_shared_bytes, divergence):
    """``gu.trace.analyze`` on numba-cuda's simulator (the caller's arrays, the report returned)
    and on the course's engine (copies); one log line says whether the reports are equal."""
    from dataclasses import fields

    from . import _trace_run

    copies = _copies(args)
    reports: dict = {}
    errors: dict = {}
    for name, arguments in (("numba", args), ("course", copies)):
        _trace_run.forced_engine = name
        try:
            reports[name] = analyze(
                kernel,
                griddim,
                blockdim,
                *arguments,
                dynamic_shared_bytes=dynamic_shared_bytes,
                divergence=divergence,
            )
        except Exception as error:
            errors[name] = error
        finally:
            _trace_run.forced_engine = None
    differences = []
    if not errors:
        numba, course = reports["numba"], reports["course"]
        for f in fields(numba):
            if getattr(numba, f.name) != getattr(course, f.name):
                differences.append(
                    f"report.{f.name}: numba {getattr(numba, f.name)!r:.200}, "
                    f"course {getattr(course, f.name)!r:.200}"
                )
    function = getattr(kernel, "py_func", kernel)
    course_error = errors.get("course")
    record = {
        "file": getattr(getattr(function, "__code__", None), "co_filename", None),
        "kernel": getattr(function, "__name__", repr(function)),
        "trace": True,
        "grid": repr(griddim),
        "block": repr(blockdim),
        "numba_error": _error(errors.get("numba")),
        "course_error": _error(course_error),
        "course_message": str(course_error)[:300] if course_error else None,
        "differences": differences,
    }
    path = os.environ.get(LOG)
    if path:
        with open(path, "a") as log:
            log.write(json.dumps(record) + "\n")
    if "numba" in errors:
        raise errors["numba"]
    return reports["numba"]
