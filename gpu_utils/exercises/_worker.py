"""The checker's own process: it runs learners' kernels so that a crash or an endless loop never
touches the notebook. ``_isolation`` starts it as ``python -m gpu_utils.exercises._worker R W``
with ``GPU_COURSE_MODE`` set; R and W are the pipes it reads requests from and writes results to.

Each request carries the learner's code, the source of the cell it came from (registered in this
process's ``linecache`` under the code's file name, so that every message can quote the line) and
an optional time limit. Without one, a kernel exercise's limit is scaled from this machine's own
time for the exercise's launches (measured once per exercise, ``Exercise.calibrate``), between
``FLOOR`` and ``CAP`` seconds of processor time (so that a machine busy with other work does not
stop a correct check), and one call of the learner's code may use ``CALL_LIMIT`` seconds of
processor time or ``CALL_WALL`` on the clock in any check. Every check starts from the same
process state (:class:`CleanState`), and its warnings reach the learner only as sentences
quoting their line. When a limit passes, a watchdog thread looks at where the learner's code was
running in every thread, reports that line (and whether it was computing or waiting) and ends
the process. The watchdog also tells the parent every second that it is alive: one operation
that holds the interpreter (a C loop) silences it, and the parent stops the process then.
"""

from __future__ import annotations

import ast
import collections
import contextlib
import dataclasses
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
import types
import warnings
from multiprocessing.connection import Connection

from ._isolation import WALL_FACTOR
from ._registry import CheckResult, failed

_CUDA_ERROR = re.compile(r"CUDA_ERROR|CudaAPIError|CudaSupportError")
_LONG_NUMBER = re.compile(r"\d{41,}")

#: Kernel checks: the limit is FACTOR x the calibrated time, at least FLOOR and at most CAP s.
#: (The floor covers a check's trace of one launch, which the calibration does not time; the
#: GPU compilation after a correct run is not counted at all.)
FLOOR, CAP, FACTOR = 15.0, 20.0, 20.0
#: Other checks (functions that start processes, for example) without a limit of their own.
DEFAULT_LIMIT = 60.0
#: Seconds of processor time one call of the learner's code may use, in any check, whatever the
#: check's own limit: an endless loop in a function answer is stopped after 15 s on an idle
#: machine. A kernel's threads on the simulator get ``CAP``: each lives as long as its block.
CALL_LIMIT = 15.0
#: Seconds on the clock one call of the learner's code may run, whatever its processor time, so
#: that an endless answer gets its verdict within 20 s of ``check()`` on a busy machine too
#: (the worker is started before, and its start-up is about a second). The verdict then says
#: what the evidence shows: computing all along (a loop), waiting (a sleep, a lock, input()), or
#: a machine too busy to tell (only a fraction of the time was processor time).
CALL_WALL = 17.0

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


_PATH = re.compile(r"(?:[A-Za-z]:)?[\\/][^\s:'\"()]*\.py\b(?::\d+)?")
#: A dotted name inside the course's package (``gpu_utils.many_gpus.parallelism.evaluate()``,
#: as Python names a function in a TypeError): shortened to its last part.
_COURSE_NAME = re.compile(r"\bgpu_utils(?:\.\w+)*\.(\w+)")


def _warning_note(message, category, files: frozenset[str]) -> str:
    """A sentence for a warning raised while the learner's code ran (its innermost line), or ''
    for one raised by the checker's own code (never shown: its text may name course files)."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename not in files:
        frame = frame.f_back
    if frame is None:
        return ""
    source = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
    text = _PATH.sub("", str(message).strip().splitlines()[0] if str(message).strip() else "")
    text = text if len(text) < 200 else text[:197] + "..."
    where = f"line {frame.f_lineno}" + (f" (`{source}`)" if source else "")
    note = f"Warning at your {where}: {getattr(category, '__name__', 'Warning')}: {text}"
    return textwrap.fill(note, width=100, break_long_words=False, break_on_hyphens=False) + "\n"


@contextlib.contextmanager
def _warnings_as_notes(files: frozenset[str], notes: list[str]):
    """Collect the warnings of a check as sentences quoting the learner's line, so that none is
    printed to the notebook with a course path."""

    def show(message, category, filename, lineno, file=None, line=None):
        note = _warning_note(message, category, files)
        if note and note not in notes:
            notes.append(note)

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = show
        yield


def _checker_failed(exercise_id: str, error: BaseException, files: frozenset[str]) -> CheckResult:
    """The checker raised: say so in a sentence, with the learner's last line it passed through
    (an answer that changed a setting the checker relies on), never a traceback or a path."""
    line = ""
    for frame, lineno in traceback.walk_tb(error.__traceback__):
        if frame.f_code.co_filename in files:
            source = linecache.getline(frame.f_code.co_filename, lineno).strip()
            line = f" It happened while running your line {lineno}: `{source}`."
    text = _PATH.sub("", str(error).strip().splitlines()[0] if str(error).strip() else "")
    text = _COURSE_NAME.sub(r"\1", text)
    text = text if len(text) < 200 else text[:197] + "..."
    return failed(
        exercise_id,
        f"The check could not finish ({type(error).__name__}: {text}).{line}",
        "if your code changes a global setting (grad mode, default dtype, warnings, recursion "
        "limit), leave it as it was; otherwise this is a bug in the course: please report it "
        "with this message.",
    )


def _run_one(
    exercise_id: str, kind: str, payload: bytes, files: frozenset[str] = frozenset()
) -> CheckResult:
    from . import get

    exercise = get(exercise_id)
    captured = io.StringIO()
    notes: list[str] = []
    try:
        with contextlib.redirect_stdout(captured), _warnings_as_notes(files, notes):
            result = exercise.run(_rebuild(kind, pickle.loads(payload)))
    except (Exception, SystemExit) as error:
        result = _checker_failed(exercise_id, error, files)
    return CheckResult(
        result.passed,
        _short_numbers(result.message),
        exercise_id,
        result.attempted,
        captured.getvalue() + "".join(notes),
        _short_numbers(result.what),
        _short_numbers(result.hint),
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
            # f_lineno is None while a frame is between lines (starting or finishing)
            if (
                innermost is None
                and frame.f_code.co_filename in filenames
                and frame.f_lineno is not None
            ):
                innermost = (frame.f_code.co_filename, frame.f_lineno)
            frame = frame.f_back
        if innermost is not None:
            counts[(*innermost, at_barrier)] += 1
    return counts


def _where(filenames: frozenset[str], skip: int) -> tuple:
    """(line, its source) where most of the learner's threads are now, or () when none is in
    the learner's code: what the watchdog's "alive" beat tells the parent."""
    counts = _lines_running(filenames, skip)
    if not counts:
        return ()
    (filename, line, _), _ = counts.most_common(1)[0]
    return line, linecache.getline(filename, line).strip()


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


@dataclasses.dataclass(frozen=True)
class Stopped:
    """Why the watchdog stopped a check: the evidence its verdict is worded from.

    ``limit`` the limit reached (seconds); ``clock`` True when it was the clock's, False for
    processor time; ``elapsed`` the seconds on the clock; ``cpu`` the seconds of processor time
    the whole process used meanwhile, ``thread_cpu`` those of the thread running the learner's
    call (None where the platform cannot tell)."""

    limit: float
    clock: bool = False
    elapsed: float = 0.0
    cpu: float = 0.0
    thread_cpu: float | None = None

    @property
    def waiting(self) -> bool:
        """The code sat waiting (a sleep, a lock, input()), not computing: its thread and the
        process used almost no processor time. (A thread that computes on a busy machine still
        gets its share: at 2% it would need fifty programs competing for each processor.)"""
        thread = self.cpu if self.thread_cpu is None else self.thread_cpu
        return self.clock and thread < 0.02 * self.elapsed and self.cpu < 0.1 * self.elapsed

    @property
    def starved(self) -> bool:
        """The code was computing, but got too little processor time to tell a loop from slow
        work: the machine is busy with other programs."""
        return self.clock and not self.waiting and self.cpu < 0.5 * self.elapsed


def main_thread_cpu(ident: int) -> float | None:
    """Seconds of processor time the main thread has used, when ``ident`` is the main thread
    (where a function answer runs) and the platform tells (Linux's /proc); else None. Other
    threads (a kernel's, on the simulator) come and go: their clocks are not read (reading the
    clock of a thread that has just ended can crash the process)."""
    if ident != threading.main_thread().ident:
        return None
    try:
        with open(f"/proc/self/task/{os.getpid()}/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime
    except (OSError, ValueError, IndexError):
        return None


_LOOP_HINT = (
    "look for a loop that never ends, such as a `while` loop whose index never advances, or "
    "threads that wait for each other at a `syncthreads` that not all of them reach."
)


def timeout_result(
    exercise_id: str, stopped: Stopped | float, counts: collections.Counter
) -> CheckResult:
    """The verdict on a check stopped by the watchdog (``stopped``: why, or the seconds of
    processor time it reached), from where its threads were."""
    if not isinstance(stopped, Stopped):
        stopped = Stopped(float(stopped))
    where, loop_hint, at_a_barrier = "", _LOOP_HINT, False
    if counts:
        (filename, line, at_barrier), _ = counts.most_common(1)[0]
        source = linecache.getline(filename, line).strip()
        where = f" {'Its threads were' if sum(counts.values()) > 1 else 'It was'} at line {line}"
        where += f": `{source}`." if source else "."
        loop = _while_loop_around(filename, line)
        if at_barrier or "syncthreads" in source:
            at_a_barrier = True
            loop_hint = (
                "threads were waiting at a `cuda.syncthreads()` that other threads of the block "
                "never reach (an `if` or a loop that not all threads take): every thread of a "
                "block must reach every barrier."
            )
        elif loop is not None:
            start, names = loop
            loop_text = linecache.getline(filename, start).strip()
            changes = " or ".join(f"`{n}`" for n in names) or "its condition"
            loop_hint = (
                f"the `while` loop on line {start} (`{loop_text}`) never ends: make sure "
                f"{changes} changes on every pass, so that the condition becomes false."
            )
        else:
            loop_hint = f"line {line} runs for ever: " + loop_hint
    stopped_it = "so the checker stopped it (your notebook is unaffected)."
    if stopped.waiting and not at_a_barrier:
        what = (
            f"Your code had been waiting for {stopped.elapsed:.0f} s, computing almost nothing "
            f"({stopped.cpu:.1f} s of processor time), {stopped_it}{where}"
        )
        hint = (
            "something your code waits for never comes: a `time.sleep`, an `input()`, a lock, "
            "a queue or another process that does not answer. A check calls your code without "
            "anyone at the keyboard."
        )
    elif stopped.starved:
        what = (
            f"Your code was still running after {stopped.elapsed:.0f} s on the clock, but this "
            f"machine is busy with other work and gave it only {stopped.cpu:.0f} s of processor "
            f"time, {stopped_it}{where}"
        )
        hint = (
            "if your code finishes within a few seconds when you run it in a cell of its own, "
            "run the check again when the machine is less busy; if it does not, " + loop_hint
        )
    else:
        seconds = (
            f"{stopped.elapsed:.0f} s"
            if stopped.clock
            else f"{stopped.limit:.0f} s of processor time"
        )
        what = f"Your code was still running after {seconds}, {stopped_it}{where}"
        hint = loop_hint
    return failed(exercise_id, what, hint)


def _as_tuple(result: CheckResult) -> tuple:
    """What crosses the pipe: the result's fields in order (``_isolation`` rebuilds it)."""
    return tuple(getattr(result, f.name) for f in dataclasses.fields(CheckResult))


def _compiling() -> bool:
    """True while the main thread compiles a kernel for a GPU (``_compiles``)."""
    frame = sys._current_frames().get(threading.main_thread().ident)
    while frame is not None:
        if frame.f_code.co_filename.endswith("_compiles.py"):
            return True
        frame = frame.f_back
    return False


def _outermost_calls(filenames: frozenset[str], skip: int) -> dict[int, object]:
    """For every thread but ``skip``, the frame of its outermost call into the learner's code."""
    calls = {}
    for thread_id, frame in sys._current_frames().items():
        if thread_id == skip:
            continue
        outermost = None
        while frame is not None:
            if frame.f_code.co_filename in filenames:
                outermost = frame
            frame = frame.f_back
        if outermost is not None:
            calls[thread_id] = outermost
    return calls


def _watch(results, exercise_id, limit, lock, finished, files, call_limit) -> None:
    """The watchdog: once one call of the learner's code has used ``call_limit`` seconds of
    processor time (the same call: its frame is held here, so a new call cannot look like it)
    or run ``CALL_WALL`` seconds on the clock (at most ``WALL_FACTOR`` x ``call_limit``), or the
    whole check has used ``limit`` seconds of processor time or ``WALL_FACTOR`` times that on
    the clock, all outside the course's own GPU compilation, report where the learner's code was
    running and end this process."""
    cpu, wall = time.process_time(), time.monotonic()
    call_wall = min(CALL_WALL, WALL_FACTOR * call_limit) if call_limit else 0.0
    # thread -> (frame, since: clock, process cpu, the thread's cpu when the main thread)
    calls: dict[int, tuple] = {}
    me, beat = threading.get_ident(), 0.0
    while not finished.wait(0.25):
        now, used_now = time.monotonic(), time.process_time()
        if now - beat >= 1.0:  # the parent takes a long silence for one endless operation
            beat = now
            with lock:
                if finished.is_set():
                    return
                # while the course compiles for a GPU (bounded by _compiles.TIMEOUT), the
                # parent holds its own deadline back: a cold compiler on a busy machine is slow
                results.send(("compiling",) if _compiling() else ("alive", *_where(files, me)))
        if call_limit:
            new_calls = {}
            for thread, frame in _outermost_calls(files, me).items():
                if thread in calls and calls[thread][0] is frame:
                    new_calls[thread] = calls[thread]
                else:  # a new call: held frames cannot be reused, so ``is`` tells calls apart
                    new_calls[thread] = (frame, now, used_now, main_thread_cpu(thread))
            calls = new_calls
            stopped = None
            for thread, (_, since, since_cpu, since_thread) in calls.items():
                used, elapsed = used_now - since_cpu, now - since
                thread_now = main_thread_cpu(thread) if since_thread is not None else None
                thread_used = None if thread_now is None else thread_now - since_thread
                if used >= call_limit:
                    stopped = Stopped(call_limit, False, elapsed, used, thread_used)
                elif elapsed >= call_wall:
                    stopped = Stopped(call_wall, True, elapsed, used, thread_used)
            if stopped is not None and not _compiling():
                _stop_check(results, exercise_id, stopped, lock, finished, files)
                return
        if used_now - cpu < limit and (now - wall < WALL_FACTOR * limit or _compiling()):
            continue
        used, elapsed = used_now - cpu, now - wall
        stopped = (
            Stopped(limit, False, elapsed, used)
            if used >= limit
            else Stopped(WALL_FACTOR * limit, True, elapsed, used)
        )
        _stop_check(results, exercise_id, stopped, lock, finished, files)
        return


def _stop_check(results, exercise_id, stopped: Stopped, lock, finished, files) -> None:
    """Send the verdict on a check stopped for ``stopped`` and end this process."""
    with lock:
        if finished.is_set():
            return
        counts = _lines_running(files, threading.get_ident())
        result = timeout_result(exercise_id, stopped, counts)
        results.send((*_as_tuple(result), "exiting"))
        os._exit(0)  # the learner's threads cannot be stopped otherwise


# --- a clean state for every check --------------------------------------------------------------

#: Modules whose attributes an answer might replace (``torch.nn.functional.softmax = ...``); a
#: replaced function or class is put back after the check. (Imported ones only.)
_PATCHABLE = ("builtins", "math", "random", "time", "numpy", "torch", "torch.nn.functional")
_NO_VALUE = object()


def _replaceable(value) -> bool:
    """True for a module attribute an answer may have replaced: a function or a class (a
    module's own counters and caches change legitimately)."""
    return callable(value) and not isinstance(value, types.ModuleType)


class _Unrestorable(Exception):
    """The answer left the process in a state this module cannot put back (a profiler or an
    autocast region still open, a thread still running the learner's code)."""


def _torch_state(torch) -> dict:
    """Every process-wide setting of torch's that an answer can change in one call."""
    cuda = torch.backends.cuda
    state = {
        "grad": torch.is_grad_enabled(),
        "dtype": torch.get_default_dtype(),
        "deterministic": (
            torch.are_deterministic_algorithms_enabled(),
            torch.is_deterministic_algorithms_warn_only_enabled(),
        ),
        "anomaly": (torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()),
        "rng": torch.random.get_rng_state(),
        "threads": torch.get_num_threads(),
        "matmul_precision": torch.get_float32_matmul_precision(),
        "cudnn": tuple(
            getattr(torch.backends.cudnn, name)
            for name in ("enabled", "benchmark", "deterministic", "allow_tf32")
        ),
        "cuda_matmul": (
            cuda.matmul.allow_tf32,
            cuda.matmul.allow_fp16_reduced_precision_reduction,
            cuda.matmul.allow_bf16_reduced_precision_reduction,
        ),
        "sdp": (
            cuda.flash_sdp_enabled(),
            cuda.mem_efficient_sdp_enabled(),
            cuda.math_sdp_enabled(),
        ),
        "print": dict(vars(torch._tensor_str.PRINT_OPTS)),
    }
    if hasattr(torch, "get_default_device"):
        state["device"] = torch.get_default_device()
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda_rng"] = torch.cuda.get_rng_state_all()
    return state


def _set_torch_state(torch, state: dict) -> None:
    cuda = torch.backends.cuda
    torch.set_grad_enabled(state["grad"])
    torch.set_default_dtype(state["dtype"])
    if "device" in state:
        torch.set_default_device(state["device"])
    mode, warn_only = state["deterministic"]
    torch.use_deterministic_algorithms(mode, warn_only=warn_only)
    torch.set_anomaly_enabled(*state["anomaly"])
    torch.random.set_rng_state(state["rng"])
    if "cuda_rng" in state:
        torch.cuda.set_rng_state_all(state["cuda_rng"])
    if torch.get_num_threads() != state["threads"]:
        torch.set_num_threads(state["threads"])
    torch.set_float32_matmul_precision(state["matmul_precision"])
    for name, value in zip(
        ("enabled", "benchmark", "deterministic", "allow_tf32"), state["cudnn"], strict=True
    ):
        setattr(torch.backends.cudnn, name, value)
    (
        cuda.matmul.allow_tf32,
        cuda.matmul.allow_fp16_reduced_precision_reduction,
        cuda.matmul.allow_bf16_reduced_precision_reduction,
    ) = state["cuda_matmul"]
    for enable, value in zip(
        (cuda.enable_flash_sdp, cuda.enable_mem_efficient_sdp, cuda.enable_math_sdp),
        state["sdp"],
        strict=True,
    ):
        enable(value)
    vars(torch._tensor_str.PRINT_OPTS).update(state["print"])


def _torch_regions(torch) -> dict[str, object]:
    """What is open in torch that no setter closes: a profiler, inference mode, autocast, modes."""
    return {
        "a profiler": torch._C._autograd._profiler_enabled(),
        "an inference_mode region": torch.is_inference_mode_enabled(),
        "an autocast region": tuple(torch.is_autocast_enabled(d) for d in ("cpu", "cuda")),
        "a TorchFunctionMode": torch._C._len_torch_function_stack(),
        "a TorchDispatchMode": torch._C._len_torch_dispatch_stack(),
    }


class CleanState:
    """Snapshot of the process's mutable state before a check, put back after it.

    Covered: the working directory, environment variables, warnings filters, the recursion limit,
    a trace or profile function, the random states of ``random``, NumPy and torch, NumPy's error
    and print settings, the attributes of a few modules (an answer that replaces
    ``torch.nn.functional.softmax``), and torch's grad mode, default dtype and device,
    deterministic and anomaly flags, intra-op threads, matmul precision, ``torch.backends``
    flags and print options. torch's state is only read when torch was already imported: the
    worker does not import it for a check that does not need it. :meth:`restore` raises
    :class:`_Unrestorable` for state it cannot put back, and the worker is then replaced.
    """

    def __init__(self) -> None:
        import random

        self.cwd = os.getcwd()
        self.environ = dict(os.environ)
        self.recursion = sys.getrecursionlimit()
        self.trace, self.profile = sys.gettrace(), sys.getprofile()
        self.random = random.getstate()
        self.numpy = self.torch = None
        numpy = sys.modules.get("numpy")
        if numpy is not None:
            self.numpy = (numpy.random.get_state(), numpy.geterr(), numpy.get_printoptions())
        torch = sys.modules.get("torch")
        if torch is not None and hasattr(torch, "is_grad_enabled"):
            self.torch = _torch_state(torch)
            self.regions = _torch_regions(torch)
        self.modules = {
            name: dict(vars(sys.modules[name])) for name in _PATCHABLE if name in sys.modules
        }

    def restore(self, files: frozenset[str]) -> None:
        import random

        with contextlib.suppress(OSError):
            os.chdir(self.cwd)
        if dict(os.environ) != self.environ:
            os.environ.clear()
            os.environ.update(self.environ)
        sys.setrecursionlimit(self.recursion)
        sys.settrace(self.trace)
        sys.setprofile(self.profile)
        random.setstate(self.random)
        for name, saved in self.modules.items():
            module = sys.modules.get(name)
            if module is None:
                continue
            now = vars(module)  # (names an answer adds are left: no checker reads them)
            for key, value in saved.items():
                if _replaceable(value) and now.get(key, _NO_VALUE) is not value:
                    setattr(module, key, value)
        numpy = sys.modules.get("numpy")
        if self.numpy is not None:
            state, errors, printing = self.numpy
            numpy.random.set_state(state)
            numpy.seterr(**errors)
            numpy.set_printoptions(**printing)
        torch = sys.modules.get("torch")
        if torch is not None:
            if self.torch is None:  # imported during the check: no state from before it
                raise _Unrestorable("torch was first imported during the check")
            now = _torch_regions(torch)
            _set_torch_state(torch, self.torch)
            left_open = [what for what, value in now.items() if value != self.regions[what]]
            if left_open:
                raise _Unrestorable(f"the check left {left_open[0]} open")
        running = _lines_running(files, threading.get_ident())
        if running:
            raise _Unrestorable("a thread still runs the learner's code")


_USES_TORCH: dict[str, bool] = {}


def _import_torch_if_used(exercise_id: str) -> None:
    """Import torch now when the exercise's chapter checker imports it anywhere (at the top or
    inside a function): otherwise its first import would fall inside the check, where
    :class:`CleanState` has no torch state to put back, and the worker would be replaced after
    every check of that chapter (5-10 s each on a 2-core machine)."""
    from ._registry import INDEX

    module = INDEX.get(exercise_id, ("", ""))[0]
    if not module or "torch" in sys.modules:
        return
    if module not in _USES_TORCH:
        path = os.path.join(os.path.dirname(__file__), f"{module}.py")
        try:
            with open(path, encoding="utf-8") as source:
                tree = ast.parse(source.read())
        except (OSError, SyntaxError):
            tree = ast.Module(body=[], type_ignores=[])
        _USES_TORCH[module] = any(
            (
                isinstance(node, ast.Import)
                and any(a.name.split(".")[0] == "torch" for a in node.names)
            )
            or (isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "torch")
            for node in ast.walk(tree)
        )
    if _USES_TORCH[module]:
        with contextlib.suppress(ImportError):
            import torch  # noqa: F401


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
        exercise = get(exercise_id)  # loads its chapter (and torch, if the chapter uses it)
        _import_torch_if_used(exercise_id)  # before the snapshot: the worker then lives on
        limit = time_limit(exercise, override)
        call_limit = override or (CAP if kind == "kernel" else CALL_LIMIT)
        lock, finished = threading.Lock(), threading.Event()

        files = frozenset(sources or ())
        watchdog = threading.Thread(
            target=_watch,
            args=(results, exercise_id, limit, lock, finished, files, call_limit),
            daemon=True,
        )
        state = CleanState()
        results.send(("alive",))  # from now on, the parent hears from the watchdog every second
        watchdog.start()
        result = _run_one(exercise_id, kind, payload, files)
        replace = bool(_CUDA_ERROR.search(result.message))  # the CUDA context may be unusable
        try:
            state.restore(files)
        except _Unrestorable:
            replace = True  # the next check starts in a fresh process
        except Exception:  # a setting that cannot be put back by its own setter
            replace = True
        with lock:
            finished.set()
            results.send((*_as_tuple(result), "exiting") if replace else _as_tuple(result))
        if replace:
            return


if __name__ == "__main__":
    # Ctrl-C / "interrupt kernel" reaches the whole process group; the parent decides what to do.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.set_int_max_str_digits(0)  # a learner's huge integer is shown (shortened), not an error
    serve(
        Connection(int(sys.argv[1]), writable=False),
        Connection(int(sys.argv[2]), readable=False),
    )
