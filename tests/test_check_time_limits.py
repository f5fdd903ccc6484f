"""Every endless answer gets its verdict within 20 s of ``check()``, with what the watchdog saw:
a loop (processor time), a wait (a sleep, a lock: no processor time), a machine too busy to
tell, or one operation that holds the interpreter (the worker's watchdog falls silent and the
notebook's side stops it). Issue 30: "the same 20 s for function and value answers everywhere"."""

from __future__ import annotations

import collections
import linecache
import time

import pytest

import gpu_utils as gu
from gpu_utils.exercises import _isolation, _worker
from gpu_utils.exercises._worker import Stopped, timeout_result

EXERCISE = "device_query_resident_threads"  # a function answer: no argument, returns a number


def answer_from(source: str, name: str):
    """Compile ``source`` as a notebook cell whose lines the checker can quote."""
    filename = f"/tmp/check_time_limits/{name}.py"  # never on disk
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    namespace: dict = {}
    exec(compile(source, filename, "exec"), namespace)
    return namespace["answer"], filename


def test_the_limits_add_up_to_20_seconds():
    """The worker stops one call after CALL_LIMIT s of processor time or CALL_WALL s on the
    clock, and the notebook's side stops a worker whose watchdog is silent for SILENT s; with the
    worker's start-up (about a second), each verdict comes within 20 s."""
    assert _worker.CALL_LIMIT <= _worker.CALL_WALL <= 18.0
    assert _isolation.SILENT <= 18.0


def counts_at(filename: str, line: int, barrier: bool = False) -> collections.Counter:
    return collections.Counter({(filename, line, barrier): 1})


SLEEPER = "def answer():\n    import time\n    time.sleep(1000)\n    return 1\n"
LOOPER = "def answer():\n    n = 0\n    while n < 10:\n        pass\n    return n\n"


@pytest.mark.parametrize(
    ("stopped", "says", "never"),
    [
        (Stopped(15.0, False, 15.2, 15.0, 15.0), ["after 15 s of processor time"], ["busy"]),
        (Stopped(17.0, True, 17.1, 0.01, 0.0), ["waiting for 17 s", "never comes"], ["loop"]),
        (Stopped(17.0, True, 17.0, 4.0, 3.9), ["machine is busy", "only 4 s"], ["waiting"]),
        (Stopped(17.0, True, 17.0, 16.0, 15.9), ["still running after 17 s,"], ["busy"]),
    ],
    ids=["processor-time", "waiting", "starved", "computing-on-the-clock"],
)
def test_the_verdict_says_what_the_watchdog_saw(stopped, says, never):
    _, filename = answer_from(LOOPER, "verdict")
    message = timeout_result("x", stopped, counts_at(filename, 3)).message
    assert "line 3: `while n < 10:`" in message, message
    for words in says:
        assert words in message, message
    for words in never:
        assert words not in message, message


def test_a_thread_waiting_at_a_barrier_gets_the_barrier_hint_not_the_waiting_one():
    _, filename = answer_from(LOOPER, "barrier")
    stopped = Stopped(17.0, True, 17.0, 0.0, 0.0)
    message = timeout_result("x", stopped, counts_at(filename, 4, barrier=True)).message
    assert "syncthreads" in message and "never comes" not in message, message


def test_a_sleeping_answer_is_told_it_waits_with_its_line():
    gu.exercises.check(EXERCISE, lambda: 0)  # the checker's process is started and warm
    answer, _ = answer_from(SLEEPER, "sleeper")
    start = time.monotonic()
    result = gu.exercises.check(EXERCISE, answer, timeout=2)  # on the clock: 3 x 2 s
    assert not result.passed
    assert "waiting for 6 s" in result.message, result.message
    assert "line 3: `time.sleep(1000)`" in result.message, result.message
    assert time.monotonic() - start < 15
    assert gu.exercises.check(EXERCISE, lambda: 6912 * 1.0).attempted  # the checker recovers


def test_one_operation_that_holds_the_interpreter_is_stopped_from_the_notebook_side(monkeypatch):
    """``sum(range(10**14))`` runs in C and never lets the worker's watchdog run: the notebook's
    side hears nothing for SILENT s and stops the worker (shortened here to 3 s)."""
    monkeypatch.setattr(_isolation, "SILENT", 3.0)
    gu.exercises.check(EXERCISE, lambda: 0)
    answer, _ = answer_from("def answer():\n    return sum(range(10**14))\n", "gil")
    start = time.monotonic()
    result = gu.exercises.check(EXERCISE, answer)
    assert time.monotonic() - start < 15
    assert not result.passed
    assert "One operation of your code ran for more than 3 s" in result.message, result.message
    assert "Traceback" not in result.message
    assert gu.exercises.check(EXERCISE, lambda: 6912 * 1.0).attempted  # a new worker answers


def _replies(*steps):
    """A worker's side of the pipe that sends ``(delay, message)`` steps from a thread."""
    import multiprocessing
    import threading

    receiving, sending = multiprocessing.Pipe(duplex=False)

    def send():
        for delay, message in steps:
            time.sleep(delay)
            try:
                sending.send(message)
            except OSError:  # the test has its answer and closed its end
                return

    threading.Thread(target=send, daemon=True).start()
    return receiving


def test_the_backstop_counts_from_the_learners_code_not_the_workers_start(monkeypatch):
    """A slow start (imports, a kernel's calibration) is not the learner's time: the backstop
    of 1 s here starts at the first 'alive', sent 1.5 s after the request."""
    monkeypatch.setattr(_isolation, "STARTUP", 5.0)
    verdict = (True, "ok", "x", "", 1.0)
    pipe = _replies((1.5, ("alive",)), (0.5, verdict))
    assert _isolation._reply(pipe, 1.0) == verdict
    # ... but the learner's own time is held to it: no verdict 1 s after the start
    pipe = _replies((0.2, ("alive",)), (2.0, verdict))
    assert _isolation._reply(pipe, 1.0) is None


def test_a_worker_that_never_reaches_the_learners_code_is_told_apart(monkeypatch):
    monkeypatch.setattr(_isolation, "STARTUP", 1.0)
    assert isinstance(_isolation._reply(_replies((3.0, ("alive",))), 0.5), _isolation._NotStarted)


def test_compiling_for_a_gpu_holds_the_backstop_back(monkeypatch):
    """The course's own PTX compilation (bounded by _compiles.TIMEOUT) is not the learner's
    time either: each 'compiling' beat keeps the deadline COMPILE_SLACK s ahead."""
    monkeypatch.setattr(_isolation, "COMPILE_SLACK", 1.0)
    verdict = (True, "ok", "x", "", 1.0)
    beats = [(0.4, ("compiling",))] * 6  # 2.4 s of compiling against a backstop of 1 s
    pipe = _replies((0.0, ("alive",)), *beats, (0.2, verdict))
    assert _isolation._reply(pipe, 1.0) == verdict


def test_a_frame_between_lines_does_not_crash_the_watchdog(monkeypatch):
    # A frame's f_lineno is None while it starts or finishes; the watchdog once passed it to
    # linecache and crashed its thread with a traceback on the notebook's stderr.
    import types

    from gpu_utils.exercises import _worker

    code = types.SimpleNamespace(co_name="answer", co_filename="<cell>")
    between = types.SimpleNamespace(f_code=code, f_lineno=None, f_back=None)
    running = types.SimpleNamespace(f_code=code, f_lineno=3, f_back=None)
    monkeypatch.setattr(_worker.sys, "_current_frames", lambda: {1: between, 2: running})
    assert _worker._lines_running({"<cell>"}, skip=0) == {("<cell>", 3, False): 1}
    monkeypatch.setattr(_worker.sys, "_current_frames", lambda: {1: between})
    assert _worker._where(frozenset({"<cell>"}), skip=0) == ()


CRASHER = "def answer():\n    import os, signal\n    os.kill(os.getpid(), signal.SIGSEGV)\n"


def test_a_checker_process_killed_twice_by_a_signal_is_reported_as_a_crash():
    answer, _ = answer_from(CRASHER, "crash")
    result = gu.exercises.check(EXERCISE, answer)
    assert not result.passed and "stopped while running your code (exit code -11)" in result.message


def test_a_checker_process_killed_once_runs_the_answer_again(tmp_path):
    # A crash of the process that does not repeat (seen once in numba's simulator under heavy
    # load) is not the answer's fault: the check runs once more in a fresh process.
    flag = tmp_path / "crashed"
    source = (
        "def answer():\n    import os, pathlib, signal\n"
        f"    flag = pathlib.Path({str(flag)!r})\n"
        "    if not flag.exists():\n        flag.touch()\n"
        "        os.kill(os.getpid(), signal.SIGSEGV)\n    return 0\n"
    )
    answer, _ = answer_from(source, "crash_once")
    result = gu.exercises.check(EXERCISE, answer)
    assert flag.exists() and "exit code" not in result.message and result.attempted


def test_a_kernel_check_whose_worker_hung_runs_once_more(monkeypatch):
    # the backstop fires only when the worker's own watchdog said nothing: a hung process, which
    # gets one more run in a fresh process before the learner is told the code kept running
    replies = iter([None, (True, "k: passed.", "k", True, "")])
    started = []

    class Worker:
        def poll(self):
            return None

    class Pipe:
        def send(self, message):
            pass

    monkeypatch.setattr(_isolation, "_workers", {})
    monkeypatch.setattr(
        _isolation, "_start", lambda mode: started.append(mode) or (Worker(), Pipe(), Pipe())
    )
    monkeypatch.setattr(_isolation, "_stop", lambda mode: _isolation._workers.pop(mode, None))
    monkeypatch.setattr(_isolation, "_reply", lambda *args: next(replies))
    result = _isolation.run_isolated("k", "kernel", b"", "simulator", 1.0)
    assert result.passed and len(started) == 2


def _fake_gpu_check(monkeypatch, gpu_message, passed=True):
    """gu.exercises.check of a kernel in GPU mode, with both checker processes faked: the
    simulator's passes, the GPU's says ``gpu_message``."""
    import gpu_utils.exercises as ex
    from gpu_utils import runtime
    from gpu_utils.exercises._registry import failed
    from gpu_utils.exercises._registry import passed as passing

    said = gpu_message.split(". ", 1)[1]  # after "k: passed." or "k: not yet."
    replies = {
        "simulator": passing("k", "Correct on 3 launches."),
        "gpu": passing("k", said) if passed else failed("k", said),
    }
    exercise = type("E", (), {"id": "k", "kind": "kernel", "time_limit": 5.0})()
    monkeypatch.setattr(ex, "get", lambda exercise_id: exercise)
    monkeypatch.setattr(ex, "is_stub", lambda answer: False)
    monkeypatch.setattr(ex, "_prepare", lambda exercise, answer: (b"", None))
    monkeypatch.setattr(ex, "sources", lambda answer: {})
    monkeypatch.setattr(ex, "run_isolated", lambda eid, kind, p, mode, *a: replies[mode])
    monkeypatch.setattr(runtime, "mode", "gpu")
    return ex.check("k", object())


def test_what_a_passing_gpu_run_adds_is_shown_and_a_repeat_is_not(monkeypatch):
    added = "k: passed. Correct on 3 launches. 2,950 GB/s: 91% of this GPU's copy."
    result = _fake_gpu_check(monkeypatch, added)
    assert result.passed
    assert result.message.endswith(
        "On the GPU: Correct on 3 launches. 2,950 GB/s: 91% of this GPU's copy."
    )
    assert _fake_gpu_check(monkeypatch, "k: passed. Correct on 3 launches.").message == (
        "k: passed. Correct on 3 launches."
    )


def test_a_failing_gpu_run_turns_the_verdict(monkeypatch):
    result = _fake_gpu_check(monkeypatch, "k: not yet. 310 GB/s, 10% of the copy.", passed=False)
    assert not result.passed
    assert "Correct on the simulator, but on the GPU: 310 GB/s" in result.message
