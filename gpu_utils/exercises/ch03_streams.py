"""Exercises of lab 03 on streams and overlap (chapter 03): the time of a chunked copy-compute-copy
pipeline with two copy engines, as a number and as a function, checked against ``gu.streams``.

The model and its formula, T(k) = (t_in + t_c + t_out) / k + (k - 1) * max(t_in, t_c, t_out) / k,
are in ``gpu_utils/one_gpu/streams.py`` with their sources (CUDA C++ Programming Guide, "Asynchronous
Concurrent Execution")."""

from __future__ import annotations

import math
import numbers

from ..one_gpu import streams
from ._numeric import NumericAnswer, numeric_exercise
from ._registry import CheckResult, Exercise, failed, not_attempted, passed, register

CHAPTER = "03_first_kernels"

# --- stream_pipeline_time ---------------------------------------------------------------------

T_IN, T_COMPUTE, T_OUT, CHUNKS, STREAMS = 8.0, 6.0, 4.0, 8, 4  # milliseconds, for the whole job


def _model(t_in, t_c, t_out, k, copy_engines=2) -> float:
    return streams.schedule(
        t_in, t_c, t_out, chunks=k, streams=max(3, k), copy_engines=copy_engines
    ).total


def _shared_engine_formula(t_in, t_c, t_out, k) -> float:
    return (t_in + t_c + t_out) / k + (k - 1) * max(t_in + t_out, t_c) / k


_FILL = "the first chunk must pass through all three stages before the pipeline is full"
_SUM = (
    "that is the sum of the three stages, what one stream gives. With {streams} streams and two "
    "copy engines, chunk i's kernel runs while chunk i+1 is copied in and chunk i-1 copied out: "
    "the stages overlap, so the slowest one sets the pace (max, not sum)."
)
_SHARED = (
    "you let the copies in and out share one engine. This GPU has two copy engines "
    "(asyncEngineCount = 2): host-to-device and device-to-host copies run at the same time, so "
    "each direction is a stage of its own."
)
_K_NOT_K_MINUS_1 = (
    "after the fill (one chunk through all three stages), only k - 1 more chunks leave the "
    "slowest stage: (k - 1) x max / k, not k x max / k."
)


def _time_answer() -> NumericAnswer:
    k = CHUNKS
    fill = (T_IN + T_COMPUTE + T_OUT) / k
    slowest = max(T_IN, T_COMPUTE, T_OUT)
    expected = _model(T_IN, T_COMPUTE, T_OUT, k)
    return NumericAnswer(
        expected=expected,
        unit="ms",
        rel_tol=0.005,
        mistakes={
            slowest: f"that is the slowest stage alone; add the pipeline fill: {_FILL}.",
            (k - 1) * slowest / k: f"that leaves out the pipeline fill: {_FILL}.",
            T_IN + T_COMPUTE + T_OUT: _SUM.format(streams=STREAMS),
            fill + slowest: _K_NOT_K_MINUS_1,
            _shared_engine_formula(T_IN, T_COMPUTE, T_OUT, k): _SHARED,
            T_IN + T_OUT: _SHARED,
            _model(T_IN, T_COMPUTE, T_OUT, k, copy_engines=1): _SHARED,
            fill: "that is one chunk's trip through the three stages, the fill; the other k - 1 "
            "chunks follow at the pace of the slowest stage.",
            expected / 1e3: "the question asks for milliseconds, not seconds.",
            fill + (k - 1) * T_COMPUTE / k: (
                "the kernel is not the slowest stage here: copying in (8 ms for the whole job) "
                "takes longer, and the slowest stage sets the pace."
            ),
        },
        hint=(
            "fill + (k - 1) x slowest / k: one chunk through all three stages, then one chunk "
            "per max(t_in, t_c, t_out) / k."
        ),
    )


register(
    numeric_exercise(
        id="stream_pipeline_time",
        chapter=CHAPTER,
        title="The time of a copy-compute-copy pipeline on streams",
        question=(
            f"A job copies its input in ({T_IN:g} ms in one piece), runs a kernel ({T_COMPUTE:g} "
            f"ms) and copies the result out ({T_OUT:g} ms). Split into {CHUNKS} equal chunks on "
            f"{STREAMS} streams from pinned memory, on a GPU with two copy engines and no launch "
            "overhead, how many ms does it take?"
        ),
        answer=_time_answer,
    )
)


# --- stream_pipeline_function -----------------------------------------------------------------

CASES = (  # (t_in, t_compute, t_out, chunks): copy-in, compute- and copy-out-bound, one chunk
    (8.0, 6.0, 4.0, 8),
    (2.0, 10.0, 3.0, 5),
    (1.0, 2.0, 9.0, 4),
    (5.0, 5.0, 5.0, 1),
    (3.0, 1.0, 2.0, 20),
)

_WRONG_FORMULAS = (  # (formula, hint): what a common mistake computes
    (lambda i, c, o, k: max(i, c, o), f"you return the slowest stage alone; {_FILL}."),
    (lambda i, c, o, k: (k - 1) * max(i, c, o) / k, f"the pipeline fill is missing: {_FILL}."),
    (lambda i, c, o, k: i + c + o, _SUM.format(streams="enough")),
    (lambda i, c, o, k: (i + c + o) / k + max(i, c, o), _K_NOT_K_MINUS_1),
    (_shared_engine_formula, _SHARED),
    (
        lambda i, c, o, k: (i + c + o) / k,
        "you return the fill only: one chunk's trip; the other "
        "k - 1 chunks follow, one per max(t_in, t_c, t_out) / k.",
    ),
    (
        lambda i, c, o, k: (i + c + o) / k + (k - 1) * c / k,
        (
            "you pace the pipeline by the kernel; the slowest of the three stages sets the pace, "
            "and that can be a copy."
        ),
    ),
)


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-12)


def _run_function(function) -> CheckResult:
    exercise_id = "stream_pipeline_function"
    if not callable(function):
        return failed(
            exercise_id,
            f"Expected a function pipeline_total(t_in, t_compute, t_out, chunks), got "
            f"{type(function).__name__}.",
            "pass the function itself: check('stream_pipeline_function', pipeline_total).",
        )
    for t_in, t_c, t_out, k in CASES:
        call = f"pipeline_total({t_in:g}, {t_c:g}, {t_out:g}, {k})"
        try:
            value = function(t_in, t_c, t_out, k)
        except NotImplementedError:
            return not_attempted(exercise_id)
        except TypeError as error:
            return failed(
                exercise_id,
                f"{call} raised TypeError: {str(error)[:200]}",
                "the function takes four arguments, pipeline_total(t_in, t_compute, t_out, "
                "chunks), and returns a number.",
            )
        except (Exception, SystemExit) as error:
            return failed(
                exercise_id,
                f"{call} raised {type(error).__name__}: {str(error)[:200]}",
                "run it in a cell of its own with these arguments to see the full error.",
            )
        if getattr(value, "ndim", None) == 0:
            value = value.item()
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            shown = repr(value) if len(repr(value)) <= 60 else repr(value)[:57] + "..."
            return failed(
                exercise_id,
                f"{call} returned {shown} ({type(value).__name__}), not a number.",
                "end the function with `return <the total time>`.",
            )
        try:
            value = float(value)
        except OverflowError:
            return failed(exercise_id, f"{call} returned a number too large for a float.")
        expected = _model(t_in, t_c, t_out, k)
        if not math.isfinite(value):
            return failed(exercise_id, f"{call} returned {value}; expected {expected:g}.")
        if _close(value, expected):
            continue
        what = f"{call} returned {value:g}; gu.streams gives {expected:g}."
        for formula, hint in _WRONG_FORMULAS:
            if _close(value, formula(t_in, t_c, t_out, k)):
                return failed(exercise_id, what, hint)
        return failed(
            exercise_id,
            what,
            "the total is the fill, (t_in + t_compute + t_out) / chunks, plus (chunks - 1) "
            "times the slowest stage's time per chunk, max(t_in, t_compute, t_out) / chunks.",
        )
    shown = "; ".join(f"({i:g}, {c:g}, {o:g}, {k})" for i, c, o, k in CASES)
    return passed(
        exercise_id,
        f"Your totals match gu.streams' schedules for (t_in, t_compute, t_out, chunks) = {shown}.",
    )


register(
    Exercise(
        id="stream_pipeline_function",
        chapter=CHAPTER,
        title="The total time of a chunked pipeline, as a function",
        signature=(
            "pipeline_total(t_in, t_compute, t_out, chunks) -> float: the total time of the "
            "job split into `chunks` equal chunks on enough streams, two copy engines, pinned "
            "memory, no launch overhead (t_* are whole-job stage times)"
        ),
        launch="called on 5 cases (copy-in, compute- and copy-out-bound, one chunk, many chunks)",
        run=_run_function,
        kind="function",
    )
)
