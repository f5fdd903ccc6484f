"""Run a check in a separate, reusable process with a time limit (parent side).

The learner's kernel is serialised with cloudpickle (by value, so functions defined in a notebook
travel too), rebuilt with ``cuda.jit`` in the worker, and run there. A kernel that never finishes
is stopped by ending the worker; the notebook's own state is never touched.
"""

from __future__ import annotations

import atexit
import dataclasses
import subprocess
import threading
import time
from multiprocessing.connection import Connection

from .._child import start_child, stop_child
from ._registry import CheckResult, failed

#: A check's limit is processor time; on the clock it may take this many times longer.
#: (Here, not in ``_worker``: the package must not import the module that runs as ``-m``.)
WALL_FACTOR = 3.0
#: Seconds the worker's watchdog may go without a word while a check runs (it reports every
#: second): longer, and one operation holds the interpreter, which nothing inside can stop.
SILENT = 15.0
#: Seconds the parent's deadline stays ahead of a worker that reports it is compiling a kernel
#: for a GPU (``_compiles``, which gives up after its own ``TIMEOUT``): a first compilation on
#: a busy machine (numba's import, NVVM) may take longer than the whole backstop.
COMPILE_SLACK = 10.0
#: Seconds a check's process may take to reach the learner's code: its start (numba, torch),
#: the chapter's checker and, for a kernel, one timed run of the reference solution.
STARTUP = 120.0

_workers: dict[str, tuple[subprocess.Popen, Connection, Connection]] = {}
_lock = threading.Lock()


def _start(mode: str) -> tuple[subprocess.Popen, Connection, Connection]:
    """Start ``python -m gpu_utils.exercises._worker`` in its own mode."""
    return start_child(["-m", "gpu_utils.exercises._worker"], GPU_COURSE_MODE=mode)


def _stop(mode: str) -> None:
    worker = _workers.pop(mode, None)
    if worker is not None:
        stop_child(worker)


def shutdown() -> None:
    """End every checker process (also run at interpreter exit)."""
    for mode in list(_workers):
        _stop(mode)


def run_isolated(
    exercise_id: str,
    kind: str,
    payload: bytes,
    mode: str,
    timeout: float,
    sources: dict[str, list[str]] | None = None,
    limit: float | None = None,
):
    """Run one check in the ``mode`` worker; a CheckResult, or a plain-language failure.

    The worker stops the check itself after ``limit`` seconds (None: its own, scaled limit) and
    says where the code was; ``timeout`` is the parent's last resort, for code that never lets
    the worker's watchdog run. ``sources`` maps file names to the lines of the learner's cell.
    """
    with _lock:
        for attempt in range(2):
            if mode not in _workers or _workers[mode][0].poll() is not None:
                _stop(mode)
                _workers[mode] = _start(mode)
            process, to_worker, from_worker = _workers[mode]
            to_worker.send((exercise_id, kind, payload, sources or {}, limit))
            try:
                reply = _reply(from_worker, timeout, kind != "kernel")
                if reply is None and kind == "kernel" and attempt == 0:
                    # the worker's own watchdog stops an endless kernel well before this
                    # backstop, with its line; a worker that said nothing at all hung (numba's
                    # simulator, rarely, under heavy load: a check of 3 s in a CI run): run it
                    # once more in a fresh process before telling the learner
                    _stop(mode)
                    continue
                break
            except KeyboardInterrupt:  # the learner interrupted the check: stop the kernel too
                _stop(mode)
                raise
            except (EOFError, OSError):
                code = process.wait(5)
                _stop(mode)
                if attempt == 0 and code is not None and code < 0:
                    # killed by a signal: a crash of the process (seen once, rarely, in numba's
                    # simulator under heavy load), not necessarily of the answer: run it again
                    # once in a fresh process before blaming the learner's code
                    continue
                return failed(
                    exercise_id,
                    f"The checker's process stopped while running your code (exit code {code}). "
                    "This usually means a crash inside the kernel, such as an illegal memory "
                    "access on the GPU.",
                    "check every index against its array's size, then run the check again.",
                )
        if isinstance(reply, _NotStarted):
            _stop(mode)
            return CheckResult(
                False,
                f"{exercise_id}: the check could not start: the checker's process was still "
                f"getting ready after {STARTUP:g} s, before running any of your code. The "
                "machine is probably very busy.\nHint: run the check again; if this repeats, "
                "restart the notebook's kernel.",
                exercise_id,
            )
        if isinstance(reply, _Silent):
            _stop(mode)
            return _silent_result(exercise_id, reply)
        if reply is None:
            _stop(mode)
            return failed(
                exercise_id,
                f"Your code was still running after {timeout:g} s, so the checker stopped it "
                "(your notebook is unaffected).",
                "look for a loop that never ends, such as a `while` loop whose index never "
                "advances, or threads that wait for each other at a `syncthreads` that not all "
                "of them reach.",
            )
        if len(reply) > FIELDS:  # the worker stopped an endless check and is ending itself
            _stop(mode)
        return CheckResult(*reply[:FIELDS])


#: The fields of a CheckResult a worker's reply carries, in order (``_worker._as_tuple``); a
#: reply with one more item ("exiting") comes from a worker that is ending itself.
FIELDS = len(dataclasses.fields(CheckResult))


class _NotStarted:
    """The worker did not reach the learner's code within ``STARTUP`` s."""


class _Silent(tuple):
    """The worker's watchdog fell silent while the learner's code ran: (seconds, line, source)
    of the line it last reported, or (seconds,) when it had not reached the learner's code."""


def _reply(from_worker: Connection, timeout: float, heed_silence: bool = True):
    """The worker's verdict (a tuple); None after ``timeout`` s; a ``_Silent`` when the worker's
    watchdog, once it has reported that the check runs, says nothing for ``SILENT`` s: one
    operation of the learner's holds the interpreter (``sum(range(10**13))``: a C loop that no
    thread can interrupt), so the worker cannot stop it itself. Not for kernels
    (``heed_silence`` False): on numba's simulator up to 1,024 threads share the interpreter
    with the watchdog, which a busy machine can keep silent that long (a clean-clone run saw a
    correct ch05 check stopped so)."""
    # the backstop counts from the watched check's start: the worker's own start-up, the
    # chapter's import and a kernel's calibration run before it (and run no learner code), and
    # on a busy machine they once took most of a kernel check's 90 s in a CI run
    deadline = time.monotonic() + max(timeout, STARTUP)
    beat, where, started = None, (), False
    while True:
        now = time.monotonic()
        if now >= deadline:
            return None if started else _NotStarted()
        if heed_silence and beat is not None and now - beat > SILENT:
            return _Silent((now - beat, *where))
        if not from_worker.poll(min(1.0, deadline - now)):
            continue
        reply = from_worker.recv()
        if reply and reply[0] == "compiling":  # not the learner's time: push the deadline
            beat, deadline = time.monotonic(), max(deadline, time.monotonic() + COMPILE_SLACK)
            continue
        if reply and reply[0] == "alive":
            if not started:
                started, deadline = True, time.monotonic() + timeout
            beat, where = time.monotonic(), reply[1:] or where
            continue
        return reply


def _silent_result(exercise_id: str, silent: _Silent) -> CheckResult:
    line, that = "", "your code"
    if len(silent) == 3:
        number, source = silent[1], silent[2]
        line = f" It was at line {number}" + (f": `{source}`." if source else ".")
        that = "that line"
    return failed(
        exercise_id,
        f"One operation of your code ran for more than {SILENT:g} s without letting Python do "
        f"anything else, so the checker stopped it (your notebook is unaffected).{line}",
        "a single call on something enormous (a `range`, an integer power or a list of billions "
        f"of elements) runs for ever in practice: check the sizes {that} works on.",
    )


atexit.register(shutdown)
