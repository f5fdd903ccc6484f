"""Run a function in several processes with ``torch.distributed``, from a notebook (chapter 08).

``run(fn, world_size, *args)`` starts ``world_size`` ranks on 127.0.0.1, sets up a process group
(gloo on CPU; NCCL when every rank has its own GPU), calls ``fn(rank, world_size, *args)`` in
each and returns the ranks' results, rank 0 first. It works for functions defined in a notebook
cell, streams each rank's prints into the cell as ``[rank 1] ...``, turns an exception in any
rank into one :class:`RankError` naming the rank, and never hangs: ranks still running at the
timeout are stopped, and :class:`RankTimeout` says where each one was waiting.

How: ``fn`` travels by value (cloudpickle), so functions defined in a notebook cell work, to a
launcher (``gpu_utils.many_gpus._dist_launcher``): a fresh interpreter that has imported PyTorch once and
starts the ranks of each run. ``multiprocessing``'s spawn is not used because it re-imports the
notebook's ``__main__``, nor fork from the notebook, which is unsafe once CUDA is in use there.
"""

from __future__ import annotations

import atexit
import importlib.util
import os
import pickle
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from .. import runtime
from .._child import start_child
from ..pickling import dumps
from ._dist_launcher import DEVICE_VARIABLE, Job, kill_group

__all__ = [
    "DEFAULT_TIMEOUT",
    "DistError",
    "RankError",
    "RankTimeout",
    "choose_backend",
    "device",
    "log",
    "run",
    "shutdown",
]

#: Seconds a run may take before its ranks are stopped.
DEFAULT_TIMEOUT = 60.0
#: Extra seconds the notebook waits for the launcher beyond the run's own timeout.
LAUNCHER_GRACE = 15.0
#: Seconds a launcher may take to start the ranks (it imports PyTorch first).
LAUNCHER_START = 120.0
_START = os.environ.get("GPU_COURSE_DIST_START") or ("fork" if sys.platform == "linux" else "exec")
_FRAME = re.compile(r'File "(?P<file>.*)", line (?P<line>\d+) in (?P<name>\S+)')


# --- errors -----------------------------------------------------------------------------------


class DistError(RuntimeError):
    """A multi-process run did not complete."""


class RankError(DistError):
    """An exception (or a crash) in one rank; the message names the rank.

    ``exc_type`` is the exception's class name (``"exited"`` for a rank that died without one),
    ``frames`` the rank's traceback as (file, line, function, source) tuples, ``last_output``
    the last line the rank wrote to stderr (what a crashing library said).
    """

    def __init__(
        self,
        rank: int,
        exc_type: str,
        exc_message: str,
        frames=(),
        detail: str = "",
        last_output: str = "",
    ):
        self.rank, self.exc_type, self.exc_message = rank, exc_type, exc_message
        self.frames, self.last_output = list(frames), last_output
        text = f"rank {rank} raised {exc_type}: {exc_message}"
        if exc_type == "exited":
            text = f"rank {rank} {exc_message}"
            if last_output:
                text += f" Its last output: {last_output!r}."
        super().__init__(text + (f" {detail}" if detail else ""))
        if self.frames and hasattr(self, "add_note"):
            self.add_note(f"Traceback of rank {rank} (most recent call last):\n{self.traceback()}")

    def traceback(self) -> str:
        """The rank's traceback, with source lines where this process can find them."""
        import linecache

        lines = []
        for filename, lineno, name, source in self.frames:
            lines.append(f'  File "{filename}", line {lineno}, in {name}')
            source = source or linecache.getline(filename, lineno).strip()
            if source:
                lines.append(f"    {source}")
        return "\n".join(lines)


class RankTimeout(DistError):
    """Ranks were still running and were stopped: a deadlock, a loop or the timeout.

    ``stuck`` lists those ranks; ``where[rank]`` says where each was waiting, when known;
    ``cpu[rank]`` the seconds of processor time it had used (None where unknown);
    ``looping`` the ranks stopped for using more than ``cpu_limit`` seconds of it, busy in a
    loop rather than waiting (a rank waiting in a collective uses almost none). ``reason`` says
    what stopped the run: "loop" (``looping``), "idle" (every rank had slept ``idle_limit``
    seconds without using the processor: a deadlock, told before the timeout) or "clock" (the
    timeout). ``elapsed`` is the seconds the ranks ran, ``recent_cpu[rank]`` the processor
    seconds a rank used in its last 2 s (a rank calling a collective in a loop uses some, a
    waiting one none), ``queued[rank]`` the seconds it waited for a processor (a busy machine).
    """

    def __init__(
        self,
        stuck: list[int],
        timeout: float,
        where: dict[int, str],
        cpu: dict[int, float | None] | None = None,
        cpu_limit: float | None = None,
        *,
        reason: str = "",
        elapsed: float | None = None,
        recent_cpu: dict[int, float | None] | None = None,
        queued: dict[int, float | None] | None = None,
    ):
        self.stuck, self.timeout, self.where = stuck, timeout, where
        self.cpu = cpu or {}
        self.cpu_limit = cpu_limit
        self.looping = [r for r in stuck if cpu_limit and (self.cpu.get(r) or 0.0) > cpu_limit]
        self.reason = reason or ("loop" if self.looping else "clock")
        self.elapsed = timeout if elapsed is None else elapsed
        self.recent_cpu = recent_cpu or {}
        self.queued = queued or {}
        ranks = _ranks_text(stuck)
        text = (
            f"{ranks} still running after {timeout:g} s, so the run was stopped "
            f"(a deadlock? every rank must make matching calls, in the same order)."
        )
        if self.looping:
            text = (
                f"{_ranks_text(self.looping)} busy for more than {cpu_limit:g} s of processor "
                "time without finishing (an endless loop?), so the run was stopped."
            )
        elif self.reason == "idle":
            text = (
                f"{ranks} waiting, none using the processor, after {self.elapsed:.1f} s, so "
                "the run was stopped (a deadlock: every rank must make matching calls, in the "
                "same order)."
            )
        for rank in stuck:
            if where.get(rank):
                text += f"\n  rank {rank}: {where[rank]}"
        super().__init__(text)


def _ranks_list(ranks: list[int]) -> str:
    """'rank 1', 'ranks 0 and 2', 'ranks 0, 1 and 3'."""
    if len(ranks) == 1:
        return f"rank {ranks[0]}"
    return "ranks " + ", ".join(str(r) for r in ranks[:-1]) + f" and {ranks[-1]}"


def _ranks_text(ranks: list[int]) -> str:
    return _ranks_list(ranks) + (" was" if len(ranks) == 1 else " were")


# --- the notebook's side ----------------------------------------------------------------------


def _gpu_count() -> int:
    if runtime.mode != "gpu":
        return 0
    try:
        import torch
    except ImportError:
        return 0
    if torch.version.cuda is None or not torch.distributed.is_nccl_available():
        return 0
    return runtime.probe_driver()[0]


def choose_backend(world_size: int, backend: str = "auto") -> tuple[str, str | None]:
    """(backend, note): NCCL when every rank gets its own GPU, else gloo; the note says why."""
    if backend not in ("auto", "gloo", "nccl"):
        raise ValueError(f"backend={backend!r}: use 'auto', 'gloo' or 'nccl'")
    if backend == "gloo":
        return "gloo", None
    gpus = _gpu_count()
    if gpus >= world_size:
        return "nccl", None
    if backend == "nccl":
        raise ValueError(
            f"backend='nccl' needs one GPU per rank: {world_size} ranks, {gpus} usable GPU(s) "
            "here. Use backend='gloo' (it runs on the CPU), or fewer ranks."
        )
    if gpus:
        return "gloo", (
            f"{world_size} ranks share {gpus} GPU(s), and NCCL needs one GPU per rank (it stops "
            "with 'Duplicate GPU detected'), so this run uses gloo on the CPU."
        )
    return "gloo", None


@dataclass
class _Launcher:
    process: subprocess.Popen
    to_launcher: Connection
    from_launcher: Connection
    pgid: int | None = field(default=None)


_launcher: _Launcher | None = None
_lock = threading.Lock()


def _start_launcher() -> _Launcher:
    # GPU_COURSE_MODE: no CUDA probe in the launcher
    return _Launcher(
        *start_child(
            ["-m", "gpu_utils.many_gpus._dist_launcher", "serve"], GPU_COURSE_MODE=runtime.mode
        )
    )


def _stop_launcher() -> None:
    global _launcher
    launcher, _launcher = _launcher, None
    if launcher is None:
        return
    if launcher.pgid:
        kill_group(launcher.pgid)
    launcher.to_launcher.close()
    launcher.from_launcher.close()
    if launcher.process.poll() is None:
        launcher.process.kill()
    launcher.process.wait(10)


def shutdown() -> None:
    """End the launcher (also done when the interpreter exits)."""
    with _lock:
        _stop_launcher()


#: What gloo and torch.distributed print in a rank on their own ("[Gloo] Rank 0 is connected
#: to 1 peer ranks...", c10d's "[W1126 10:00:00.000 socket.cpp:...]"): kept, never printed.
_LOG_LINE = re.compile(r"^\s*(\[Gloo\]|\[c10d\]|\[[WIEF]\d{4} [\d:.]+ .*\] )")
#: A logged line that reports a failure: glog's error and fatal levels ([E...], [F...]).
_LOG_ERROR = re.compile(r"^\s*\[[EF]\d{4} [\d:.]+ .*\] ")
#: The C++ runtime's two lines as gloo aborts a rank ("terminate called after throwing an
#: instance of 'gloo::EnforceNotMet'", "  what():  [enforce fail at .../pair.cc:456] ...
#: Received data size doesn't match expected size..."): kept, not printed; the rank's error
#: quotes the second as its last output.
_ABORT_LINE = re.compile(r"^\s*(terminate called after throwing an instance of |what\(\): )")
_log: list[str] = []


def log() -> list[str]:
    """The lines gloo and torch.distributed logged in the ranks of the last run (not printed)."""
    return list(_log)


def _print_line(rank: int, stream: str, text: str) -> None:
    if _LOG_LINE.match(text) or _ABORT_LINE.match(text):
        _log.append(f"[rank {rank}] {text}")
        return
    target = sys.stderr if stream == "stderr" else sys.stdout
    print(f"[rank {rank}] {text}", file=target, flush=True)


def run(
    fn: Callable[..., Any],
    world_size: int,
    *args: Any,
    backend: str = "auto",
    timeout: float = DEFAULT_TIMEOUT,
    cpu_limit: float | None = None,
    idle_limit: float | None = None,
) -> list[Any]:
    """Call ``fn(rank, world_size, *args)`` in ``world_size`` processes; return their results.

    Each rank has a ``torch.distributed`` process group (``backend``: ``"auto"``, ``"gloo"`` or
    ``"nccl"``); inside a rank, :func:`device` is where its tensors belong. Raises
    :class:`RankError` when a rank raises or dies, :class:`RankTimeout` when ranks are still
    running after ``timeout`` seconds, when one rank has used more than ``cpu_limit`` seconds
    of processor time (Linux; a loop, not a wait), or when every rank still running has slept
    ``idle_limit`` seconds without using the processor (Linux; a deadlock), the ranks being
    stopped first. Lines that gloo and torch.distributed log in the ranks are kept in
    :func:`log`, not printed.
    """
    if not callable(fn):
        raise TypeError(f"fn must be a function taking (rank, world_size, ...), got {fn!r}")
    if not isinstance(world_size, int) or world_size < 1:
        raise ValueError(f"world_size must be a positive integer, got {world_size!r}")
    if timeout <= 0:
        raise ValueError(f"timeout must be positive, got {timeout!r}")
    for name, limit in (("cpu_limit", cpu_limit), ("idle_limit", idle_limit)):
        if limit is not None and not limit > 0:
            raise ValueError(f"{name} must be a positive number of seconds or None, got {limit!r}")
    if importlib.util.find_spec("torch") is None:
        raise DistError("gu.dist needs PyTorch: install it with `pip install torch`.")
    chosen, note = choose_backend(world_size, backend)
    if note:
        print(f"[gu.dist] note: {note}", flush=True)
    try:
        payload = dumps((fn, *args))
    except Exception as error:
        raise DistError(
            f"could not send the function to the ranks ({type(error).__name__}: {error}). Pass "
            "data as arguments (numbers, lists, NumPy arrays, CPU tensors), not open files, "
            "locks or GPU objects."
        ) from None
    job = Job(
        payload=payload,
        world_size=world_size,
        backend=chosen,
        timeout=float(timeout),
        cwd=os.getcwd(),
        env=dict(os.environ),
        start=_START,
        cpu_limit=cpu_limit,
        idle_limit=idle_limit,
        preload=_loaded_course_modules(),
    )
    with _lock:
        return _run_job(job)


def _loaded_course_modules() -> tuple[str, ...]:
    """The ``gpu_utils`` modules this process has imported (the launcher imports them too)."""
    return tuple(
        sorted(n for n, m in list(sys.modules.items()) if n.startswith("gpu_utils.") and m)
    )


def _run_job(job: Job) -> list[Any]:
    global _launcher
    if _launcher is None or _launcher.process.poll() is not None:
        _stop_launcher()
        _launcher = _start_launcher()
    launcher = _launcher
    # Until the ranks have started, allow for the launcher importing PyTorch (slow on a busy
    # machine); from then on the run has its own timeout and the launcher its grace.
    deadline = time.monotonic() + LAUNCHER_START + job.timeout + LAUNCHER_GRACE
    last_error_line: dict[int, str] = {}
    last_logged_error: dict[int, str] = {}
    _log.clear()
    try:
        launcher.to_launcher.send(job)
        while True:
            if not launcher.from_launcher.poll(max(0.0, min(1.0, deadline - time.monotonic()))):
                if time.monotonic() > deadline or launcher.process.poll() is not None:
                    _stop_launcher()
                    raise DistError("the launcher of the ranks stopped responding; try again")
                continue
            message = launcher.from_launcher.recv()
            kind = message[0]
            if kind == "started":
                launcher.pgid = message[1]
                deadline = time.monotonic() + job.timeout + LAUNCHER_GRACE
            elif kind == "out":
                _print_line(*message[1:])
                text = message[3]
                if message[2] == "stderr" and text.strip() and not _LOG_LINE.match(text):
                    last_error_line[message[1]] = text.strip()
                elif _LOG_ERROR.match(text):  # c10d's own error: kept unless the rank says more
                    last_logged_error[message[1]] = text.strip()
            elif kind == "fail":
                raise DistError(message[1])
            elif kind == "done":
                launcher.pgid = None
                outcomes = message[1]
                break
    except (EOFError, OSError, BrokenPipeError):
        _stop_launcher()
        raise DistError("the launcher of the ranks exited unexpectedly; try again") from None
    except BaseException:  # KeyboardInterrupt from the notebook's stop button, among others
        _stop_launcher()
        raise
    for rank, line in last_logged_error.items():
        last_error_line.setdefault(rank, line)
    return _outcome(outcomes, job.timeout, last_error_line, job.cpu_limit)


def _outcome(
    outcomes: list[dict], timeout: float, last_lines: dict[int, str], cpu_limit=None
) -> list[Any]:
    """Results in rank order, or the one error that explains the run."""
    failures = [o for o in outcomes if o["status"] in ("error", "exited")]
    if failures:
        first = min(failures, key=lambda o: (_is_consequence(o), o["rank"]))
        detail = _others_text(first, outcomes)
        if first["status"] == "exited":
            last = last_lines.get(first["rank"], "")
            raise RankError(first["rank"], "exited", first["message"], (), detail, last)
        raise RankError(first["rank"], first["type"], first["message"], first["frames"], detail)
    stuck = [o["rank"] for o in outcomes if o["status"] == "stuck"]
    if stuck:
        stopped = [o for o in outcomes if o["rank"] in stuck]
        raise RankTimeout(
            stuck,
            timeout,
            {o["rank"]: _where(o.get("stack", "")) for o in stopped},
            {o["rank"]: o.get("cpu") for o in stopped},
            cpu_limit,
            reason=stopped[0].get("reason", ""),
            elapsed=stopped[0].get("elapsed"),
            recent_cpu={o["rank"]: o.get("recent_cpu") for o in stopped},
            queued={o["rank"]: o.get("queued") for o in stopped},
        )
    return [pickle.loads(o["result"]) for o in outcomes]


def _others_text(first: dict, outcomes: list[dict]) -> str:
    """What happened to the other ranks, in a sentence."""
    same = [
        o["rank"]
        for o in outcomes
        if o is not first
        and o["status"] == first["status"]
        and (o.get("type"), o.get("message")) == (first.get("type"), first.get("message"))
    ]
    stopped = [o["rank"] for o in outcomes if o["status"] != "ok" and o is not first]
    stopped = [r for r in stopped if r not in same]
    parts = []
    if same:
        verb = "raised the same error" if first["status"] == "error" else "did the same"
        parts.append(f"{_ranks_list(same)} {verb}")
    if stopped:
        parts.append(f"{_ranks_text(stopped)} stopped as a result")
    return f"({'; '.join(parts)}.)" if parts else ""


#: Phrases of gloo's and NCCL's errors in a rank whose peer went away.
_PEER_GONE = (
    "Connection closed by peer",
    "Connection reset by peer",
    "Broken pipe",
    "remote worker crashing",
    "remote process exited",
)


def _is_consequence(outcome: dict) -> bool:
    """True for a rank's error that only reports that another rank went away."""
    text = outcome.get("message", "")
    return outcome["status"] == "error" and (
        outcome.get("type") == "DistNetworkError" or any(p in text for p in _PEER_GONE)
    )


def _where(stack: str) -> str:
    """'waiting in dist.recv, called from f (line 4)', from a faulthandler dump of a stuck rank.

    'at f (line 4)' when the rank was running the learner's own line; '..., outside your
    function' when only library and course frames were active (the course's code that called
    the function, after it returned or before it was called); never a private name of the course.
    """
    frames = [m.groupdict() for m in _FRAME.finditer(stack)]  # most recent call first
    names = [f["name"] for f in frames]
    if "_call_fn" not in names:
        return "had not reached your function yet (still starting up)" if frames else ""
    frames = frames[: names.index("_call_fn")]
    user = [f for f in frames if not _library_file(f["file"])]
    text = ""
    if frames and _library_file(frames[0]["file"]):
        top = frames[0]["file"].replace("\\", "/")
        if "torch/distributed" in top:
            text = f"waiting in dist.{frames[0]['name']}"
        elif not top.startswith(_PACKAGE):
            text = f"waiting in {frames[0]['name']}"
    if user:
        text += (
            ", called from " if text else "at "
        ) + f"{user[0]['name']} (line {user[0]['line']})"
    elif frames:
        text += (", " if text else "") + "outside your function"
    return text


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))).replace("\\", "/") + "/"


def _library_file(path: str) -> bool:
    """Not the learner's: installed packages, the standard library and the course's own
    package (a checker's code, which calls the learner's)."""
    path = path.replace("\\", "/")
    return (
        "site-packages" in path
        or "dist-packages" in path
        or "/lib/python3" in path
        or path.startswith(_PACKAGE)
    )


# --- inside a rank ----------------------------------------------------------------------------


def device():
    """Inside a rank: the ``torch.device`` its tensors belong on (its GPU with NCCL, else CPU)."""
    import torch

    return torch.device(os.environ.get(DEVICE_VARIABLE, "cpu"))


atexit.register(shutdown)
