"""Lab exercises and their checkers (chapter 00 explains how labs work).

``check(exercise_id, answer)`` runs the checker and returns a :class:`CheckResult` whose message
says what is wrong and what to try next; it never raises for a learner's mistake. Kernels are
checked in a separate process on the simulator, which reports out-of-bounds accesses precisely;
in GPU mode a kernel that passes there is also compiled and run on the GPU, and the check fails
if the GPU disagrees (the message of a pass is the same in both modes).

Each chapter's exercises live in a module ``chNN_topic.py`` of this package, listed with its ids
in ``_registry.INDEX`` and loaded when one of its exercises is first checked (or described).
"""

from __future__ import annotations

import contextlib
import functools
import linecache
import textwrap

from .. import runtime
from .._progress_file import record  # a pass is recorded; gu.progress() (above us) lists them
from ..pickling import dumps, python_function
from ._isolation import WALL_FACTOR, run_isolated
from ._registry import CheckResult, Exercise, failed, get, ids, not_attempted, register
from ._stub import is_stub

__all__ = ["CheckResult", "Exercise", "check", "describe", "get", "ids", "register"]

#: Seconds a check may run before the checker stops it (kernel exercises scale their own limit,
#: at most 20 s, from this machine's speed: see ``_worker``).
DEFAULT_TIMEOUT = 60.0
#: Seconds the notebook's side waits beyond the checker process's own limit (its start-up).
GRACE = 30.0


def describe(exercise_id: str) -> str:
    """What an exercise expects: the signature and the launch the checker uses."""
    exercise = get(exercise_id)
    lines = (f"  signature: {exercise.signature}", f"  launch: {exercise.launch}")
    folded = (  # 100 characters a line, no word broken: a laptop's browser shows it whole
        textwrap.fill(
            line, 100, subsequent_indent="      ", break_long_words=False, break_on_hyphens=False
        )
        for line in lines
    )
    return "\n".join([f"{exercise.id}: {exercise.title}", *folded])


def _prepare(exercise: Exercise, answer: object) -> tuple[bytes | None, CheckResult | None]:
    """Serialise the answer for the checker's process, or explain why it can't be checked."""
    target = answer
    if exercise.kind == "kernel":
        from ._kernels import not_launchable  # numba's modules: only for kernel exercises

        problem = not_launchable(answer, exercise.signature)
        if problem is not None:
            return None, failed(exercise.id, *problem)
        target = python_function(answer)
        if target is None:
            if callable(answer):
                return None, failed(
                    exercise.id,
                    "This is a plain Python function, not a CUDA kernel.",
                    "put `@cuda.jit` on the line above `def`, run the cell, then check again.",
                )
            return None, failed(
                exercise.id,
                f"Expected a CUDA kernel ({exercise.signature}), got {type(answer).__name__}.",
                "pass the kernel itself: check(..., my_kernel), not my_kernel(...).",
            )
    if (type(target).__module__ or "").startswith("triton"):
        # triton may have been imported after the exercises were: teach pickle its kernels now
        from ._triton import register_reducer

        register_reducer()
    try:
        return dumps(target), None
    except Exception as error:  # an unpicklable global, such as a device array or an open file
        return None, failed(
            exercise.id,
            f"The checker could not copy your code into its own process ({error}).",
            "use only kernel arguments, numbers and NumPy arrays from outside the function; "
            "pass data as arguments rather than reading globals.",
        )


def sources(answer: object) -> dict[str, list[str]]:
    """The text of the cell (or file) the answer's code comes from, keyed by the file name its
    code carries, for the checker's process to quote lines from."""
    if isinstance(answer, type):  # a class answer: the cells its methods come from
        functions = [getattr(member, "__func__", member) for member in vars(answer).values()]
    else:
        functions = [python_function(answer) or answer]
    found = {}
    for function in functions:
        code = getattr(function, "__code__", None)
        if code is not None and code.co_filename not in found:
            module_globals = getattr(function, "__globals__", None)
            found[code.co_filename] = linecache.getlines(code.co_filename, module_globals)
    return found


def _value_check(exercise: Exercise, answer: object) -> CheckResult:
    try:
        return exercise.run(answer)
    except Exception as error:  # a course bug: say so, in a sentence
        return CheckResult(
            False,
            f"{exercise.id}: the checker itself failed ({type(error).__name__}: {error}). This "
            "is a bug in the course, not in your answer; please report it.",
            exercise.id,
        )


def check(exercise_id: str, answer: object, *, timeout: float | None = None) -> CheckResult:
    """Check ``answer`` (a kernel, function or value) for ``exercise_id``; never raises for it.

    ``timeout`` (seconds) overrides the time limit: by default a kernel check may use up to 20 s
    of processor time (less for a quick exercise, scaled from this machine's speed), other
    checks 60 s, and one call of the learner's code 15 s of processor time or 17 s on the clock
    (``_worker.CALL_LIMIT``, ``_worker.CALL_WALL``): an endless answer's verdict comes within
    20 s.
    """
    try:
        exercise = get(exercise_id)
    except KeyError as error:
        return CheckResult(False, error.args[0], exercise_id)
    if is_stub(answer):  # without starting the checker's processes
        return not_attempted(exercise.id)
    if exercise.kind == "value":
        return _value_check(exercise, answer)
    payload, problem = _prepare(exercise, answer)
    if problem is not None:
        return problem
    cell = sources(answer)
    limit = (
        timeout or exercise.time_limit or (20.0 if exercise.kind == "kernel" else DEFAULT_TIMEOUT)
    )
    backstop = WALL_FACTOR * limit + GRACE  # the checker's process stops itself before this
    result = run_isolated(exercise_id, exercise.kind, payload, "simulator", backstop, cell, timeout)
    if result.output:
        print(result.output, end="")
    if result.passed and exercise.kind == "kernel" and runtime.mode == "gpu":
        on_gpu = run_isolated(exercise_id, exercise.kind, payload, "gpu", backstop, cell, timeout)
        if on_gpu.output:
            print(on_gpu.output, end="")
        if not on_gpu.passed:
            what = f"Correct on the simulator, but on the GPU: {on_gpu.what}"
            result = CheckResult(
                False,
                f"{exercise_id}: not yet. {what}"
                + (f"\nHint: {on_gpu.hint}" if on_gpu.hint else ""),
                exercise_id,
                output=result.output + on_gpu.output,
                what=what,
                hint=on_gpu.hint,
            )
        else:  # what the GPU run adds (a bandwidth measured, for instance) is shown too
            text = on_gpu.what.strip()
            if text and text not in result.message:
                result = CheckResult(
                    True,
                    f"{result.message}\nOn the GPU: {text}",
                    exercise_id,
                    output=result.output + on_gpu.output,
                    what=f"{result.what}\nOn the GPU: {text}",
                )
    return result


def _recorded(check):
    """Wrap ``check`` so a pass is recorded for ``gu.progress()``; recording never changes the
    result and never raises."""

    @functools.wraps(check)
    def wrapper(exercise_id, answer, *args, **kwargs):
        result = check(exercise_id, answer, *args, **kwargs)
        with contextlib.suppress(Exception):
            if result.passed:
                record(exercise_id, get(exercise_id).chapter)
        return result

    return wrapper


check = _recorded(check)  # recording can never change or break a check
