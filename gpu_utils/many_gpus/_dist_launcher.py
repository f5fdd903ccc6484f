"""The launcher behind ``gu.dist.run`` (chapter 08): it starts each run's ranks and watches them.

``gu.dist`` starts it once per notebook as ``python -m gpu_utils.many_gpus._dist_launcher serve R W``, a fresh
interpreter that imports PyTorch once and never initialises CUDA, so that on Linux it can fork
ranks that start in milliseconds (elsewhere each rank is a fresh interpreter). A run's ranks
share one process group, so a timeout ends them together; each rank writes its outcome to a file
in the run's directory, and its stdout and stderr come back line by line through pipes. The
launcher ends when the notebook closes its pipe.
"""

from __future__ import annotations

import codecs
import contextlib
import datetime
import importlib
import os
import pickle
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback
import warnings
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

#: After one rank fails, the others get this long to finish before they are stopped.
FAILURE_GRACE = 1.0
#: At a timeout, the longest wait for the stuck ranks to write where they are waiting (a dump
#: is written within 0.1 s on an idle machine).
DUMP_WAIT = 2.0
#: Seconds between two readings of the ranks' processor time and state (Linux's /proc).
SAMPLE_EVERY = 0.2
#: Processor seconds a waiting rank may still use in a quiet window (a clock tick or two: a
#: rank blocked in a collective used 0.01-0.02 s in 6 s, measured, gloo on a 2-core machine).
QUIET_CPU = 0.02
#: Inside a rank, where its tensors belong ("cuda:1" or "cpu"); read by ``gu.dist.device()``.
DEVICE_VARIABLE = "GPU_COURSE_DIST_DEVICE"
#: Modules (comma-separated) the launcher imports before starting ranks, e.g. "torch._dynamo",
#: which a torch optimizer imports on first use: seconds in every rank otherwise (chapter 09).
PRELOAD_VARIABLE = "GPU_COURSE_DIST_PRELOAD"


@dataclass
class Job:
    """One ``gu.dist.run`` call, as the notebook sends it to the launcher.

    ``payload`` is the cloudpickled ``(fn, *args)``; ``timeout`` the seconds the ranks may run;
    ``cwd`` and ``env`` the notebook's working directory and environment, which every rank
    takes over; ``start`` how ranks start ("fork" from the launcher, or "exec" of a fresh
    interpreter).
    """

    payload: bytes
    world_size: int
    backend: str
    timeout: float
    cwd: str
    env: dict[str, str]
    start: str
    #: Seconds of processor time any one rank may use before the run is stopped as a loop
    #: (None: no limit). A rank waiting in a collective uses almost none, a busy machine slows
    #: a rank without using it up: so an endless loop is told apart from both, quickly.
    cpu_limit: float | None = None
    #: Seconds for which every unfinished rank may sleep (its main thread blocked, its processor
    #: time unchanged) before the run is stopped as a deadlock (None: only the timeout stops
    #: it). Nothing can wake ranks that all wait, whatever the load: a rank slowed by a busy
    #: machine is runnable, not asleep, and a loop around a collective keeps using processor time.
    idle_limit: float | None = None
    #: The course's modules the notebook had imported when it called ``gu.dist.run``: the
    #: launcher imports them once before it forks the ranks, so that a function reaching
    #: ``gu.gpt`` through ``gu`` does not import it in every rank, on the run's clock (four
    #: ranks importing at once on a busy 2-core machine took more than a minute).
    preload: tuple[str, ...] = ()


def _to_cpu(value: Any) -> Any:
    """Move tensors in a result (also inside lists, tuples and dicts) to the CPU."""
    if hasattr(value, "detach") and hasattr(value, "cpu"):
        return value.detach().cpu()
    if isinstance(value, (list, tuple)):
        return type(value)(_to_cpu(v) for v in value)
    if isinstance(value, dict):
        return {k: _to_cpu(v) for k, v in value.items()}
    return value


def _frames(error: BaseException) -> list[tuple]:
    frames = traceback.extract_tb(error.__traceback__)
    start = next((i + 1 for i, f in enumerate(frames) if f.name == "_call_fn"), 0)
    return [(f.filename, f.lineno, f.name, f.line or "") for f in frames[start:]]


def _call_fn(fn, rank, world_size, args):
    return fn(rank, world_size, *args)


def _rank_main(rank: int, job: Job, run_dir: str) -> int:
    """One rank: set up the process group, call the function, write the outcome to run_dir."""
    import faulthandler

    stack_file = open(os.path.join(run_dir, f"rank{rank}.stack"), "w")  # noqa: SIM115
    if hasattr(signal, "SIGUSR1"):
        faulthandler.register(signal.SIGUSR1, file=stack_file, all_threads=True)
    os.environ.clear()
    os.environ.update(job.env)
    backend, world_size = job.backend, job.world_size
    os.environ.update(
        MASTER_ADDR="127.0.0.1",
        RANK=str(rank),
        LOCAL_RANK=str(rank),
        WORLD_SIZE=str(world_size),
    )
    os.environ[DEVICE_VARIABLE] = f"cuda:{rank}" if backend == "nccl" else "cpu"
    loopback = _loopback_interface()
    if loopback:
        os.environ.setdefault("GLOO_SOCKET_IFNAME", loopback)
        os.environ.setdefault("NCCL_SOCKET_IFNAME", loopback)
    with contextlib.suppress(OSError):
        os.chdir(job.cwd)
    # The course uses the collective names that work across torch versions; newer versions
    # print a deprecation notice for some of them in every rank.
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"torch\.distributed")
    warnings.filterwarnings("ignore", message=r".*torch\.distributed.* is deprecated")
    # torch.distributed's own notice when a backward pass runs through dist.all_reduce (a
    # gradient hook, an autograd.Function): printed by every rank, about torch's internals.
    warnings.filterwarnings("ignore", message=r"c10d::\w+: an autograd kernel was not registered")
    outcome: dict[str, Any] = {"rank": rank}
    initialised = False
    try:
        import cloudpickle
        import torch
        import torch.distributed as dist

        fn, *args = pickle.loads(job.payload)
        timeout = datetime.timedelta(seconds=job.timeout + 30)  # our own timeout comes first
        store = _rendezvous(rank, world_size, run_dir, timeout)
        group = dict(store=store, rank=rank, world_size=world_size, timeout=timeout)
        if backend == "nccl":
            torch.cuda.set_device(rank)
            dist.init_process_group("nccl", device_id=torch.device("cuda", rank), **group)
        else:
            torch.set_num_threads(max(1, (os.cpu_count() or 1) // world_size))
            dist.init_process_group("gloo", **group)
        # Every rank finishes connecting before any starts: otherwise a rank whose function
        # returns at once closes its connections while others are still making theirs.
        dist.barrier(**({"device_ids": [rank]} if backend == "nccl" else {}))
        initialised = True
        result = _call_fn(fn, rank, world_size, args)
        outcome.update(status="ok", result=cloudpickle.dumps(_to_cpu(result)))
    except BaseException as error:  # report everything, SystemExit and KeyboardInterrupt too
        outcome.update(
            status="error",
            type=type(error).__name__,
            message=str(error),
            frames=_frames(error),
            when=time.time(),
        )
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    tmp = os.path.join(run_dir, f"rank{rank}.tmp")
    with open(tmp, "wb") as handle:
        pickle.dump(outcome, handle)
    os.replace(tmp, os.path.join(run_dir, f"rank{rank}.pkl"))
    if outcome["status"] == "ok" and initialised:
        with contextlib.suppress(Exception):
            torch.distributed.destroy_process_group()
    # os._exit skips interpreter teardown, where torch's process-group destructors can abort.
    return 0 if outcome["status"] == "ok" else 1


def _loopback_interface() -> str | None:
    with contextlib.suppress(OSError, AttributeError):
        for _, name in socket.if_nameindex():
            if name.startswith("lo"):
                return name
    return None


# --- the launcher -----------------------------------------------------------------------------


def _rendezvous(rank: int, world_size: int, run_dir: str, timeout: datetime.timedelta):
    """The run's TCPStore: rank 0 listens on a port the system picks and writes it to run_dir;
    the other ranks wait for that file and connect.

    A port that was only probed free can be taken by another run before rank 0 listens on it
    (EADDRINUSE when several runs start at once, as parallel tests do); a port the system hands
    to a listening socket cannot.
    """
    import torch.distributed as dist

    port_file = os.path.join(run_dir, "port")
    if rank == 0:
        store = dist.TCPStore(
            "127.0.0.1", 0, world_size, is_master=True, wait_for_workers=False, timeout=timeout
        )
        with open(port_file + ".tmp", "w") as handle:
            handle.write(str(store.port))
        os.replace(port_file + ".tmp", port_file)  # appears whole or not at all
        return store
    deadline = time.monotonic() + timeout.total_seconds()
    while not os.path.exists(port_file):
        if time.monotonic() > deadline:
            raise TimeoutError("rank 0 never opened the run's rendezvous port")
        time.sleep(0.01)
    with open(port_file) as handle:
        port = int(handle.read())
    return dist.TCPStore("127.0.0.1", port, world_size, is_master=False, timeout=timeout)


def kill_group(pgid: int, signum: int = signal.SIGKILL if hasattr(signal, "SIGKILL") else 9):
    with contextlib.suppress(ProcessLookupError, PermissionError, AttributeError, OSError):
        os.killpg(pgid, signum)


def _die_with_parent() -> None:
    """Linux: the kernel kills this rank if the launcher dies."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def sample(pid: int) -> tuple[float | None, str, float | None]:
    """(processor seconds used by all its threads, its main thread's state: "R" runnable, "S"
    asleep, "D" in the kernel..., seconds its main thread has waited for a processor while
    runnable) of process ``pid``, from Linux's /proc; (None, "", None) where unknown."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
        cpu, state = (int(fields[11]) + int(fields[12])) / _TICKS, fields[0]  # utime, stime
    except (OSError, IndexError, ValueError):
        return None, "", None
    try:  # on-cpu ns, run-queue wait ns, time slices (needs schedstats in the kernel)
        with open(f"/proc/{pid}/schedstat") as handle:
            queued = int(handle.read().split()[1]) / 1e9
    except (OSError, IndexError, ValueError):
        queued = None
    return cpu, state, queued


@dataclass
class _Rank:
    rank: int
    pid: int
    fds: dict[int, str]  # read end of its stdout and stderr pipes -> stream name
    process: subprocess.Popen | None = None  # when started as a fresh interpreter
    exit_code: int | None = None
    ended: bool = False
    ended_at: float = 0.0
    outcome: dict | None = None
    cpu: float | None = None  # processor seconds used, last read
    queued: float | None = None  # seconds it waited for a processor, last read
    state: str = ""  # its main thread's state, last read
    history: list = field(default_factory=list)  # (clock, cpu) of the readings


class _Run:
    """One job in the launcher: start the ranks, forward their output, collect outcomes."""

    def __init__(self, job: Job, results: Connection, requests: Connection):
        self.job, self.results, self.requests = job, results, requests
        self.run_dir = tempfile.mkdtemp(prefix="gu-dist-")
        self.ranks: list[_Rank] = []
        self.pgid = 0
        self.partial: dict[int, str] = {}
        self.decoders: dict[int, codecs.IncrementalDecoder] = {}
        self.started = time.monotonic()

    # starting

    def start(self) -> None:
        sys.stdout.flush()
        sys.stderr.flush()
        inherited = [self.results.fileno(), self.requests.fileno()]
        if self.job.start == "exec":
            with open(os.path.join(self.run_dir, "job.pkl"), "wb") as handle:
                pickle.dump(self.job, handle)
        for rank in range(self.job.world_size):
            out_read, out_write = os.pipe()
            err_read, err_write = os.pipe()
            process = None
            if self.job.start == "fork":
                pid = self._fork(rank, out_write, err_write, [*inherited, out_read, err_read])
            else:
                process = self._exec(rank, out_write, err_write)
                pid = process.pid
            if rank == 0:
                self.pgid = pid
            with contextlib.suppress(OSError):
                os.setpgid(pid, self.pgid)
            os.close(out_write)
            os.close(err_write)
            inherited += [out_read, err_read]
            fds = {out_read: "stdout", err_read: "stderr"}
            self.ranks.append(_Rank(rank, pid, fds, process))
            for fd in fds:
                self.decoders[fd] = codecs.getincrementaldecoder("utf-8")("replace")
                self.partial[fd] = ""
        self.results.send(("started", self.pgid))

    def _fork(self, rank: int, out_write: int, err_write: int, close: list[int]) -> int:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # "multi-threaded, fork()"
            pid = os.fork()
        if pid:
            return pid
        code = 1
        try:
            os.setpgid(0, self.pgid if rank else 0)
            _die_with_parent()
            for fd in close:
                with contextlib.suppress(OSError):
                    os.close(fd)
            os.dup2(out_write, 1)
            os.dup2(err_write, 2)
            os.close(out_write)
            os.close(err_write)
            sys.stdout = _line_buffered(1)
            sys.stderr = _line_buffered(2)
            code = _rank_main(rank, self.job, self.run_dir)
        finally:
            os._exit(code)

    def _exec(self, rank: int, out_write: int, err_write: int) -> subprocess.Popen:
        env = dict(self.job.env, PYTHONUNBUFFERED="1")
        group = {"process_group": self.pgid} if sys.version_info >= (3, 11) else {}
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gpu_utils.many_gpus._dist_launcher",
                "rank",
                self.run_dir,
                str(rank),
            ],
            stdin=subprocess.DEVNULL,
            stdout=out_write,
            stderr=err_write,
            env=env,
            **group,
        )

    # watching

    def _forward(self, fd: int) -> bool:
        """Send on the complete lines a rank printed; False at the end of its output."""
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            chunk = b""
        text = self.partial[fd] + self.decoders[fd].decode(chunk, final=not chunk)
        *lines, rest = text.split("\n")
        if not chunk and rest:
            lines.append(rest)
            rest = ""
        self.partial[fd] = rest
        rank = next(r for r in self.ranks if fd in r.fds)
        for line in lines:
            self.results.send(("out", rank.rank, rank.fds[fd], line))
        return bool(chunk)

    def _poll(self, rank: _Rank) -> None:
        if rank.ended:
            return
        if rank.process is not None:
            code = rank.process.poll()
        else:
            try:
                pid, status = os.waitpid(rank.pid, os.WNOHANG)
            except ChildProcessError:
                pid, status = rank.pid, 0
            code = os.waitstatus_to_exitcode(status) if pid else None
        if code is not None:
            rank.ended, rank.exit_code, rank.ended_at = True, code, time.time()
            rank.outcome = self._read_outcome(rank)

    def _read_outcome(self, rank: _Rank) -> dict | None:
        path = os.path.join(self.run_dir, f"rank{rank.rank}.pkl")
        if not os.path.exists(path):
            return None
        with open(path, "rb") as handle:
            return pickle.load(handle)

    def supervise(self) -> list[dict]:
        """Wait for every rank; stop them all at the timeout, soon after one fails, as soon as
        one has used more than ``cpu_limit`` seconds of processor time (a loop), or once all
        have slept ``idle_limit`` seconds with no processor time used (a deadlock)."""
        open_fds = {fd for r in self.ranks for fd in r.fds}
        self.started = time.monotonic()
        deadline = self.started + self.job.timeout
        stop_at = deadline
        cpu_limit = getattr(self.job, "cpu_limit", None)
        idle_limit = getattr(self.job, "idle_limit", None)
        next_read = time.monotonic()
        quiet_since: float | None = None
        while not all(r.ended for r in self.ranks):
            ready, _, _ = select.select([*open_fds, self.requests.fileno()], [], [], 0.02)
            for fd in ready:
                if fd == self.requests.fileno():
                    raise SystemExit(0)  # the notebook went away
                if not self._forward(fd):
                    open_fds.discard(fd)
            for rank in self.ranks:
                self._poll(rank)
            if any(r.ended and (r.outcome or {}).get("status") != "ok" for r in self.ranks):
                stop_at = min(stop_at, time.monotonic() + FAILURE_GRACE)
            if (cpu_limit or idle_limit) and time.monotonic() >= next_read:
                now = time.monotonic()
                next_read = now + SAMPLE_EVERY
                self._read_ranks(now)
                if cpu_limit and self._over_cpu_limit(cpu_limit):
                    self._stop_running("loop")
                    continue
                if idle_limit and stop_at == deadline:
                    quiet_since = self._quiet_since(quiet_since, now)
                    if quiet_since is not None and now - quiet_since >= idle_limit:
                        self._stop_running("idle")
                        continue
            if time.monotonic() > stop_at:
                self._stop_running("clock" if stop_at == deadline else "")
        self._drain(open_fds)
        return [self._collect(r) for r in self.ranks]

    def _read_ranks(self, now: float) -> None:
        for rank in self.ranks:
            if not rank.ended:
                rank.cpu, rank.state, rank.queued = sample(rank.pid)
                if rank.cpu is not None:
                    rank.history.append((now, rank.cpu))

    def _quiet_since(self, since: float | None, now: float) -> float | None:
        """When every unfinished rank began to sleep without using the processor (None while
        one runs): its main thread asleep ("S") and its processor time unchanged since then."""
        running = [r for r in self.ranks if not r.ended]
        if not running or any(r.state != "S" or r.cpu is None for r in running):
            return None
        start = now if since is None else since
        for rank in running:
            before = [cpu for when, cpu in rank.history if when >= start]
            if before and rank.cpu - before[0] > QUIET_CPU:
                return None
        return start

    def _over_cpu_limit(self, limit: float) -> bool:
        """True when a running rank has used more than ``limit`` seconds of processor time."""
        return any(r.cpu is not None and r.cpu > limit for r in self.ranks if not r.ended)

    def _stop_running(self, reason: str) -> None:
        """Stop the ranks still running: "loop" (one used too much processor time), "idle"
        (all slept: a deadlock), "clock" (the timeout), "" (after another rank failed)."""
        running = [r for r in self.ranks if not r.ended]
        now = time.monotonic()
        for rank in running:
            rank.cpu, rank.state, rank.queued = sample(rank.pid)
        if reason and hasattr(signal, "SIGUSR1"):
            for rank in running:  # each rank's faulthandler writes where it is waiting
                with contextlib.suppress(OSError):
                    os.kill(rank.pid, signal.SIGUSR1)
            self._wait_for_stack_dumps(running)
        self.stop()
        for rank in running:
            if rank.process is not None:
                rank.process.wait()
            else:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(rank.pid, 0)
            rank.ended = True
            # A rank that wrote its outcome had finished its function and was only tidying up.
            rank.outcome = self._read_outcome(rank) or {
                "rank": rank.rank,
                "status": "stuck" if reason else "stopped",
                "reason": reason,
                "elapsed": now - self.started,
                "recent_cpu": _recent(rank, now),
            }

    def _wait_for_stack_dumps(self, ranks: list[_Rank]) -> None:
        """Until every rank's stack dump is written (its size stops changing), at most
        DUMP_WAIT seconds: on a busy machine a rank may take a while to be scheduled."""
        paths = [os.path.join(self.run_dir, f"rank{r.rank}.stack") for r in ranks]
        end, sizes = time.monotonic() + DUMP_WAIT, None
        while time.monotonic() < end:
            time.sleep(0.05)
            now = [os.path.getsize(p) if os.path.exists(p) else 0 for p in paths]
            if all(now) and now == sizes:
                return
            sizes = now

    def _drain(self, open_fds: set[int]) -> None:
        end = time.monotonic() + 1.0  # a rank's own child processes may still hold its pipes
        while open_fds and time.monotonic() < end:
            ready, _, _ = select.select(list(open_fds), [], [], 0.05)
            for fd in ready:
                if not self._forward(fd):
                    open_fds.discard(fd)

    def _collect(self, rank: _Rank) -> dict:
        outcome = rank.outcome
        if outcome is None:
            code = rank.exit_code or 0
            how = f"exited with code {code}"
            if code < 0:
                with contextlib.suppress(ValueError):
                    how = f"was killed by signal {-code} ({signal.Signals(-code).name})"
            return {
                "rank": rank.rank,
                "status": "exited",
                "message": f"{how} before its function returned.",
                "when": rank.ended_at,
            }
        if outcome["status"] == "stuck":
            outcome["cpu"], outcome["queued"] = rank.cpu, rank.queued
            stack_path = os.path.join(self.run_dir, f"rank{rank.rank}.stack")
            with contextlib.suppress(OSError), open(stack_path) as handle:
                outcome["stack"] = _main_thread(handle.read())
        return outcome

    def stop(self) -> None:
        if self.pgid:
            kill_group(self.pgid)

    def close(self) -> None:
        self.stop()
        for rank in self.ranks:
            for fd in rank.fds:
                with contextlib.suppress(OSError):
                    os.close(fd)
            if not rank.ended:
                if rank.process is not None:
                    rank.process.wait()
                else:
                    with contextlib.suppress(ChildProcessError):
                        os.waitpid(rank.pid, 0)
        shutil.rmtree(self.run_dir, ignore_errors=True)


#: Seconds over which a stopped rank's recent processor time is measured.
RECENT = 2.0


def _recent(rank: _Rank, now: float) -> float | None:
    """Processor seconds ``rank`` used in the last RECENT seconds before ``now`` (since its
    first reading in a shorter run; None without readings): a rank waiting in a collective
    uses none, one calling a collective in a loop keeps using some."""
    if rank.cpu is None or not rank.history:
        return None
    before = [cpu for when, cpu in rank.history if when <= now - RECENT]
    return rank.cpu - (before[-1] if before else rank.history[0][1])


def _line_buffered(fd: int):
    return open(fd, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)


def _main_thread(dump: str) -> str:
    """The block of a faulthandler dump that holds the rank's own frames."""
    blocks = re.split(r"\n(?=(?:Current thread|Thread) 0x)", dump)
    return next((b for b in blocks if "_call_fn" in b), dump)


def _course_modules_in(job) -> list[str]:
    """The ``gpu_utils`` modules a job's pickled function and arguments refer to (a checker's
    rank function lives in ``gpu_utils.exercises``: importing it once here, rather than in every
    forked rank, saves each rank a fraction of a second). Importing them initialises no CUDA: the
    launcher runs with GPU_COURSE_MODE set, so ``gpu_utils`` does not probe the driver."""
    payload = getattr(job, "payload", b"")
    names = {name.decode() for name in re.findall(rb"gpu_utils(?:\.\w+)*", payload)}
    return sorted(name for name in names if not name.endswith("__main__"))


def _serve(requests: Connection, results: Connection) -> None:
    """The launcher's loop: one job at a time until the notebook closes the pipe."""
    import cloudpickle  # noqa: F401 - imported once here so that every rank starts warm
    import torch.distributed  # noqa: F401

    while True:
        try:
            job = requests.recv()
        except (EOFError, OSError):
            return
        env = job.env if hasattr(job, "env") else job.get("env", {})
        wanted = filter(None, env.get(PRELOAD_VARIABLE, "").split(","))
        for module in [*wanted, *getattr(job, "preload", ()), *_course_modules_in(job)]:
            with contextlib.suppress(ImportError):  # once per launcher; every rank starts with it
                importlib.import_module(module)
        current = _Run(job, results, requests)
        try:
            current.start()
            results.send(("done", current.supervise()))
        except SystemExit:
            return
        except Exception as error:
            results.send(("fail", f"the launcher failed: {type(error).__name__}: {error}"))
        finally:
            current.close()


def _exec_rank(run_dir: str, rank: int) -> int:
    with open(os.path.join(run_dir, "job.pkl"), "rb") as handle:
        job = pickle.load(handle)
    return _rank_main(rank, job, run_dir)


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the notebook's interrupt is for the notebook
        _serve(
            Connection(int(sys.argv[2]), writable=False),
            Connection(int(sys.argv[3]), readable=False),
        )
    elif sys.argv[1] == "rank":
        os._exit(_exec_rank(sys.argv[2], int(sys.argv[3])))
