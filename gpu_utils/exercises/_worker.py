"""The checker's own process: it runs learners' kernels so that a crash or an endless loop never
touches the notebook. ``_isolation`` starts it as ``python -m gpu_utils.exercises._worker R W``
with ``GPU_COURSE_MODE`` set; R and W are the pipes it reads requests from and writes results to."""

from __future__ import annotations

import contextlib
import io
import pickle
import re
import signal
import sys
import traceback
from multiprocessing.connection import Connection

from ._registry import CheckResult

_CUDA_ERROR = re.compile(r"CUDA_ERROR|CudaAPIError|CudaSupportError")


def _rebuild(kind: str, payload: bytes):
    obj = pickle.loads(payload)
    if kind == "kernel":
        from numba import cuda

        return cuda.jit(obj)
    return obj


def _run_one(exercise_id: str, kind: str, payload: bytes) -> CheckResult:
    from . import get

    exercise = get(exercise_id)
    captured = io.StringIO()
    try:
        with contextlib.redirect_stdout(captured):
            result = exercise.run(_rebuild(kind, payload))
    except Exception:
        result = CheckResult(
            False,
            f"{exercise_id}: the checker itself failed. This is a bug in the course, not in your "
            "code; please report it with this text:\n" + traceback.format_exc(limit=4),
            exercise_id,
        )
    return CheckResult(
        result.passed, result.message, exercise_id, result.attempted, captured.getvalue()
    )


def serve(requests: Connection, results: Connection) -> None:
    """Answer (exercise_id, kind, payload) requests until the parent closes the pipe."""
    while True:
        try:
            request = requests.recv()
        except EOFError:
            return
        result = _run_one(*request)
        results.send(
            (result.passed, result.message, result.exercise_id, result.attempted, result.output)
        )
        if _CUDA_ERROR.search(result.message):
            return  # a CUDA error can leave the context unusable: the next check starts afresh


if __name__ == "__main__":
    # Ctrl-C / "interrupt kernel" reaches the whole process group; the parent decides what to do.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    serve(
        Connection(int(sys.argv[1]), writable=False),
        Connection(int(sys.argv[2]), readable=False),
    )
