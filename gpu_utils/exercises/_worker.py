"""The checker's own process: it runs learners' kernels so that a crash or an endless loop never
touches the notebook. ``_isolation`` starts it as ``python -m gpu_utils.exercises._worker R W``
with ``GPU_COURSE_MODE`` set; R and W are the pipes it reads requests from and writes results to.

Each request carries the learner's code, the source of the cell it came from (registered in this
process's ``linecache`` under the code's file name, so that every message can quote the line) and
an optional time limit. Without one, a kernel exercise's limit is scaled from this machine's own
time for the exercise's launches (measured once per exercise, ``Exercise.calibrate``), between
``FLOOR`` and ``CAP`` seconds of processor time (so that a machine busy with other work does not
stop a correct check). When the limit passes, a watchdog thread looks at where the learner's code
was running in every thread, reports that line and ends the process.
"""

from __future__ import annotations

import ast
import collections
import contextlib
import io
import linecache
import os
import pickle
import re
import signal
import sys
import textwrap
import threading
import time
import traceback
from multiprocessing.connection import Connection

from ._isolation import WALL_FACTOR
from ._registry import CheckResult

_CUDA_ERROR = re.compile(r"CUDA_ERROR|CudaAPIError|CudaSupportError")
_LONG_NUMBER = re.compile(r"\d{41,}")

#: Kernel checks: the limit is FACTOR x the calibrated time, at least FLOOR and at most CAP s.
#: (The floor covers a check's trace of one launch, which the calibration does not time; the
#: GPU compilation after a correct run is not counted at all.)
FLOOR, CAP, FACTOR = 15.0, 20.0, 20.0
#: Other checks (functions that start processes, for example) without a limit of their own.
DEFAULT_LIMIT = 60.0

_calibrated: dict[str, float] = {}


def register_sources(sources: dict | None) -> None:
    """Put the learner's cell text into ``linecache`` under the file names its code carries."""
    for filename, lines in (sources or {}).items():
        if not lines:
            continue
        lines = [line if line.endswith("\n") else line + "\n" for line in lines]
        linecache.cache[filename] = (sum(map(len, lines)), None, lines, filename)


def time_limit(exercise, override: float | None) -> float:
    """Seconds the check of ``exercise`` may run in this process."""
    if override:
        return float(override)
    if exercise.time_limit:
        return float(exercise.time_limit)
    if exercise.kind != "kernel" or exercise.calibrate is None:
        return DEFAULT_LIMIT
    if exercise.id not in _calibrated:
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                _calibrated[exercise.id] = float(exercise.calibrate())
        except Exception:
            _calibrated[exercise.id] = 0.0
    return min(CAP, max(FLOOR, FACTOR * _calibrated[exercise.id]))


def _rebuild(kind: str, obj):
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
            result = exercise.run(_rebuild(kind, pickle.loads(payload)))
    except (Exception, SystemExit):
        result = CheckResult(
            False,
            f"{exercise_id}: the checker itself failed. This is a bug in the course, not in your "
            "code; please report it with this text:\n" + traceback.format_exc(limit=4),
            exercise_id,
        )
    return CheckResult(
        result.passed,
        _short_numbers(result.message),
        exercise_id,
        result.attempted,
        captured.getvalue(),
    )


def _short_numbers(message: str) -> str:
    """A message with every number of more than 40 digits abbreviated (an answer such as
    ``2 * 4096 ** 4096`` has thousands)."""
    return _LONG_NUMBER.sub(lambda m: f"{m.group()[:6]}...({len(m.group())} digits)", message)


# --- the watchdog -------------------------------------------------------------------------------


def _lines_running(filenames: set[str], skip: int) -> collections.Counter:
    """How many threads are running each (file, line, waiting at a barrier) of the learner's."""
    counts: collections.Counter = collections.Counter()
    for thread_id, frame in sys._current_frames().items():
        if thread_id == skip:
            continue
        innermost, at_barrier = None, False
        while frame is not None:
            name = frame.f_code.co_name
            if innermost is None and "syncthreads" in name:
                at_barrier = True
            if innermost is None and frame.f_code.co_filename in filenames:
                innermost = (frame.f_code.co_filename, frame.f_lineno)
            frame = frame.f_back
        if innermost is not None:
            counts[(*innermost, at_barrier)] += 1
    return counts


def _while_loop_around(filename: str, line: int) -> tuple[int, list[str]] | None:
    """(line, names in its condition) of the innermost ``while`` of the cell around ``line``."""
    lines = linecache.getlines(filename)
    try:
        tree = ast.parse(textwrap.dedent("".join(lines)))
    except (SyntaxError, ValueError):
        return None
    around = [
        node
        for node in ast.walk(tree)
        if isinstance(node, ast.While) and node.lineno <= line <= (node.end_lineno or 0)
    ]
    if not around:
        return None
    loop = max(around, key=lambda node: node.lineno)
    names = [n.id for n in ast.walk(loop.test) if isinstance(n, ast.Name)]
    return loop.lineno, list(dict.fromkeys(names))


def timeout_result(exercise_id: str, limit: float, counts: collections.Counter) -> CheckResult:
    """The verdict on a check stopped after ``limit`` seconds, from where its threads were."""
    what = (
        f"{exercise_id}: not yet. Your code was still running after {limit:.0f} s of processor "
        "time, so the checker stopped it (your notebook is unaffected)."
    )
    hint = (
        "look for a loop that never ends, such as a `while` loop whose index never advances, or "
        "threads that wait for each other at a `syncthreads` that not all of them reach."
    )
    if counts:
        (filename, line, at_barrier), _ = counts.most_common(1)[0]
        source = linecache.getline(filename, line).strip()
        what += f" {'Its threads were' if sum(counts.values()) > 1 else 'It was'} at line {line}"
        what += f": `{source}`." if source else "."
        loop = _while_loop_around(filename, line)
        if at_barrier or "syncthreads" in source:
            hint = (
                "threads were waiting at a `cuda.syncthreads()` that other threads of the block "
                "never reach (an `if` or a loop that not all threads take): every thread of a "
                "block must reach every barrier."
            )
        elif loop is not None:
            start, names = loop
            loop_text = linecache.getline(filename, start).strip()
            changes = " or ".join(f"`{n}`" for n in names) or "its condition"
            hint = (
                f"the `while` loop on line {start} (`{loop_text}`) never ends: make sure "
                f"{changes} changes on every pass, so that the condition becomes false."
            )
        else:
            hint = f"line {line} runs for ever: " + hint
    return CheckResult(False, f"{what}\nHint: {hint}", exercise_id)


def _as_tuple(result: CheckResult) -> tuple:
    return (result.passed, result.message, result.exercise_id, result.attempted, result.output)


def _compiling() -> bool:
    """True while the main thread compiles a kernel for a GPU (``_compiles``)."""
    frame = sys._current_frames().get(threading.main_thread().ident)
    while frame is not None:
        if frame.f_code.co_filename.endswith("_compiles.py"):
            return True
        frame = frame.f_back
    return False


def _watch(results, exercise_id, limit, lock, finished, files) -> None:
    """The watchdog: once the check has used ``limit`` seconds of processor time (so that a
    busy machine does not stop a correct check), or ``WALL_FACTOR`` times that on the clock
    outside the course's own GPU compilation, report where the learner's code was running and
    end this process."""
    cpu, wall = time.process_time(), time.monotonic()
    while not finished.wait(0.25):
        used = time.process_time() - cpu
        waited = time.monotonic() - wall
        if used < limit and (waited < WALL_FACTOR * limit or _compiling()):
            continue
        with lock:
            if finished.is_set():
                return
            counts = _lines_running(files, threading.get_ident())
            result = timeout_result(exercise_id, limit, counts)
            results.send((*_as_tuple(result), "exiting"))
            os._exit(0)  # the learner's threads cannot be stopped otherwise


def serve(requests: Connection, results: Connection) -> None:
    """Answer (exercise_id, kind, payload[, sources, time limit]) requests until the parent
    closes the pipe."""
    from .. import runtime
    from . import _compiles, get

    if runtime.mode == "simulator":  # correct kernels are compiled for a GPU after their run
        threading.Thread(target=_compiles.warm_up, daemon=True).start()
    while True:
        try:
            request = requests.recv()
        except EOFError:
            return
        exercise_id, kind, payload, sources, override = (*request, None, None)[:5]
        register_sources(sources)
        limit = time_limit(get(exercise_id), override)
        lock, finished = threading.Lock(), threading.Event()

        files = frozenset(sources or ())
        watchdog = threading.Thread(
            target=_watch, args=(results, exercise_id, limit, lock, finished, files), daemon=True
        )
        watchdog.start()
        result = _run_one(exercise_id, kind, payload)
        with lock:
            finished.set()
            results.send(_as_tuple(result))
        if _CUDA_ERROR.search(result.message):
            return  # a CUDA error can leave the context unusable: the next check starts afresh


if __name__ == "__main__":
    # Ctrl-C / "interrupt kernel" reaches the whole process group; the parent decides what to do.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.set_int_max_str_digits(0)  # a learner's huge integer is shown (shortened), not an error
    serve(
        Connection(int(sys.argv[1]), writable=False),
        Connection(int(sys.argv[2]), readable=False),
    )
