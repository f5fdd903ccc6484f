"""Shared machinery for kernel exercises: random inputs, NaN-poisoned outputs, the launch, and
plain-language explanations of what went wrong. Chapter modules describe cases and hints only.

Since chapter 04, a kernel that is correct is also traced (``gu.trace``) on one small case: a race,
or a ``syncthreads`` that only some threads of a block reach (``report.divergent_barriers``),
fails the check by default (``check_races=False`` opts out), and ``requirements`` (from
``_trace_checks``, re-exported here: ``coalesced``, ``no_bank_conflicts``, ``uses_shared_memory``,
``max_loads_per_element``, ``max_stores_per_element``, ``max_divergent_branches``) add efficiency
conditions. ``trace_case`` picks the traced launch (default: the largest case of at most
``TRACE_THREAD_LIMIT`` threads).
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from .. import runtime
from ..pickling import python_function
from ..trace import Race
from ._registry import CheckResult, Exercise, failed, not_attempted, passed
from ._trace_checks import (
    TRACE_THREAD_LIMIT,
    TraceRequirement,
    coalesced,
    max_divergent_branches,
    max_loads_per_element,
    max_stores_per_element,
    no_bank_conflicts,
    race_hint,
    trace_kernel,
    uses_shared_memory,
)

__all__ = [
    "GUARD_HINT_1D",
    "GUARD_HINT_2D",
    "TRACE_THREAD_LIMIT",
    "Case",
    "Mismatch",
    "TraceRequirement",
    "blocks_for",
    "coalesced",
    "kernel_exercise",
    "max_divergent_branches",
    "max_loads_per_element",
    "max_stores_per_element",
    "no_bank_conflicts",
    "poisoned",
    "race_hint",
    "random_inputs",
    "uses_shared_memory",
]


@dataclass
class Case:
    """One launch: inputs, output buffers (copied fresh, usually NaN), and the expected outputs."""

    label: str
    griddim: tuple[int, ...] | int
    blockdim: tuple[int, ...] | int
    inputs: tuple[np.ndarray, ...]
    outputs: tuple[np.ndarray, ...]
    expected: tuple[np.ndarray, ...]
    rtol: float = 1e-5
    atol: float = 1e-6
    extra: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Mismatch:
    """How one output differs from the expected one."""

    name: str
    unwritten: np.ndarray  # bool mask: still NaN where a value was expected
    wrong: np.ndarray  # bool mask: written, but not the expected value
    got: np.ndarray
    expected: np.ndarray

    def first(self, mask: np.ndarray) -> tuple[int, ...]:
        return tuple(int(i) for i in np.argwhere(mask)[0])

    def describe(self) -> str:
        parts = []
        if self.unwritten.any():
            index = self.first(self.unwritten)
            parts.append(
                f"{_count(self.unwritten.sum(), self.got.size)} of `{self.name}` never written "
                f"(still NaN); the first is {self.name}{_fmt_index(index)}."
            )
        if self.wrong.any():
            index = self.first(self.wrong)
            parts.append(
                f"{_count(self.wrong.sum(), self.got.size)} of `{self.name}` wrong; the first is "
                f"{self.name}{_fmt_index(index)}: yours {self.got[index]:.6g}, "
                f"expected {self.expected[index]:.6g}."
            )
        return " ".join(parts)


def _count(bad: int, total: int) -> str:
    return f"{int(bad)} of {total} element{'s' if total != 1 else ''}"


def _fmt_index(index: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(i) for i in index) + "]"


def random_inputs(rng: np.random.Generator, *shapes, low=-1.0, high=1.0) -> tuple[np.ndarray, ...]:
    """Fresh float32 arrays of random values (never all zeros, so 'did nothing' can't pass)."""
    return tuple(rng.uniform(low, high, size=shape).astype(np.float32) for shape in shapes)


def poisoned(*shapes) -> tuple[np.ndarray, ...]:
    """Output buffers full of NaN: an element the kernel never writes stays visibly unwritten."""
    return tuple(np.full(shape, np.nan, dtype=np.float32) for shape in shapes)


def blocks_for(n: int, per_block: int) -> int:
    """Enough blocks of ``per_block`` threads for ``n`` items: ceil(n / per_block)."""
    return (n + per_block - 1) // per_block


_SIM_INDEX_ERROR = re.compile(
    r"tid=\[(\d+), (\d+), (\d+)\] ctaid=\[(\d+), (\d+), (\d+)\]: index (-?\d+) is out of bounds "
    r"for axis (\d+) with size (\d+)"
)


class NotAttempted(Exception):
    """The learner's code still raises NotImplementedError."""


def launch(kernel, case: Case, args: Sequence[np.ndarray]) -> str | None:
    """Launch the kernel on ``args``; None when it ran, else a plain-language account of the error."""
    try:
        kernel[case.griddim, case.blockdim](*args)
        from numba import cuda

        cuda.synchronize()
    except NotImplementedError as error:
        raise NotAttempted from error
    except IndexError as error:
        return explain_index_error(str(error))
    except Exception as error:
        first_line = (str(error).strip().splitlines() or [""])[0]
        return f"Your kernel raised {type(error).__name__}: {first_line}"
    return None


def explain_index_error(text: str) -> str:
    """Turn the simulator's out-of-bounds IndexError into a sentence and a fix."""
    match = _SIM_INDEX_ERROR.search(text)
    if not match:
        return f"An index was out of bounds: {text}"
    tx, ty, tz, bx, by, bz, index, axis, size = (int(g) for g in match.groups())
    thread = f"thread ({tx}, {ty}, {tz}) of block ({bx}, {by}, {bz})"
    return (
        f"{thread} used index {index} on axis {axis} of an array whose size there is {size} "
        f"(valid indices are 0 to {size - 1}). The grid has more threads than elements, so the "
        "extra threads must do nothing."
    )


GUARD_HINT_1D = "guard the work with `if i < out.size:` so threads past the end do nothing."
GUARD_HINT_2D = (
    "guard the work with `if row < out.shape[0] and col < out.shape[1]:` so threads outside "
    "the matrix do nothing."
)


def compare(case: Case, outputs: Sequence[np.ndarray], names: Sequence[str]) -> Mismatch | None:
    """The first output that differs from the expected one, or None when all match."""
    for name, got, expected in zip(names, outputs, case.expected, strict=True):
        got = np.asarray(got)
        unwritten = np.isnan(got) & ~np.isnan(expected)
        close = np.isclose(got, expected, rtol=case.rtol, atol=case.atol, equal_nan=True)
        wrong = ~close & ~unwritten
        if unwritten.any() or wrong.any():
            return Mismatch(name, unwritten, wrong, got, expected)
    return None


def threads_of(case: Case) -> int:
    """How many CUDA threads a case launches."""
    return int(np.prod(case.griddim)) * int(np.prod(case.blockdim))


def default_trace_case(cases: Sequence[Case]) -> Case:
    """The largest case of at most TRACE_THREAD_LIMIT threads (the smallest if none is)."""
    small = [c for c in cases if threads_of(c) <= TRACE_THREAD_LIMIT]
    if small:
        return max(small, key=threads_of)
    return min(cases, key=threads_of)


def _fresh_args(case: Case) -> tuple[tuple, tuple]:
    outputs = tuple(buffer.copy() for buffer in case.outputs)
    return tuple(a.copy() for a in case.inputs) + outputs, outputs


def _race_in(kernel, case: Case):
    """The first race the trace of ``case`` shows, or None (also when it cannot be traced)."""
    if threads_of(case) > TRACE_THREAD_LIMIT:
        return None
    for _ in range(2):  # a second try, should the first trace fail for a reason of its own
        args, _ = _fresh_args(case)
        try:
            report = trace_kernel(kernel, case, args)
        except Exception:
            continue
        return report.races[0] if report.races else None
    return None


def kernel_exercise(
    *,
    id: str,  # noqa: A002 - the registry's field name
    chapter: str,
    title: str,
    signature: str,
    launch_text: str,
    output_names: Sequence[str],
    cases: Callable[[np.random.Generator], list[Case]],
    hint: Callable[[Case, Mismatch], str],
    guard_hint: str = GUARD_HINT_1D,
    error_hint: Callable[[Case, str], str] | None = None,
    seed: int | None = None,
    check_races: bool = True,
    requirements: Sequence[TraceRequirement] = (),
    trace_case: Callable[[np.random.Generator], Case] | None = None,
    race_hint: Callable[[Race], str] = race_hint,
) -> Exercise:
    """Build an Exercise that launches the learner's kernel on each case and explains failures.

    ``hint(case, mismatch)`` names the likely mistake from the wrong output; ``error_hint(case,
    error)`` from an exception (by default ``guard_hint``, as most errors are a missing guard).
    ``seed`` fixes the inputs (for tests); by default every check draws fresh random data.

    Once every case is correct, one launch is traced on the simulator: a race fails the check
    (unless ``check_races=False``), and so does an unmet ``requirement``. ``trace_case(rng)``
    gives that launch (it must be correct too); by default the largest case of at most
    ``TRACE_THREAD_LIMIT`` threads. A wrong result also names a race if the trace shows one.
    ``race_hint(race)`` says what to do about a race (default: by the race's kind).
    """

    def run_case(kernel, case: Case) -> CheckResult | None:
        args, outputs = _fresh_args(case)
        error = launch(kernel, case, args)
        if error:
            why = error_hint(case, error) if error_hint else guard_hint
            return failed(id, f"With {case.label}: {error}", why)
        mismatch = compare(case, outputs, output_names)
        if mismatch:
            what = f"With {case.label}: {mismatch.describe()}"
            advice = hint(case, mismatch)
            race = _race_in(kernel, case) if check_races and tracing() else None
            if race is not None:
                what += f"\nYour kernel has a race: {race.describe()}"
                advice += f"\nTo fix the race: {race_hint(race)}"
            return failed(id, what, advice)
        return None

    def run_trace(kernel, case: Case, ran_before: bool) -> CheckResult | None:
        args, outputs = _fresh_args(case)
        divergence = any(r.needs_divergence for r in requirements)
        try:
            report = trace_kernel(kernel, case, args, divergence=divergence)
        except NotImplementedError as error:
            raise NotAttempted from error
        except Exception:
            if not ran_before:  # explain the learner's error as a plain launch would
                plain = run_case(kernel, case)
                if plain is not None:
                    return plain
            raise  # it runs without error outside the trace: the trace is at fault
        mismatch = compare(case, outputs, output_names)
        if mismatch:
            return failed(id, f"With {case.label}: {mismatch.describe()}", hint(case, mismatch))
        report = keyed_by_documented_names(report, kernel, signature)
        if check_races and report.races:
            race = report.races[0]
            return failed(
                id,
                f"With {case.label} your results came out right, but your kernel has a race: "
                f"{race.describe()} On a GPU the result can change from run to run.",
                race_hint(race),
            )
        if check_races and report.divergent_barriers:
            lines = ", ".join(str(line) for line in report.divergent_barriers)
            return failed(
                id,
                f"With {case.label} your results came out right, but every thread of the block "
                "must reach each cuda.syncthreads(): yours are reached by only some threads "
                f"(line {lines}). On a GPU that can hang or give wrong results.",
                "Move cuda.syncthreads() out of the `if` (or the loop condition) that not all "
                "threads take: every thread of the block must execute the same barriers, the same "
                "number of times.",
            )
        for requirement in requirements:
            problem = requirement.check(report)
            if problem is not None:
                what, why = problem
                return failed(id, f"Correct results, but traced with {case.label}, {what}", why)
        return None

    def run(kernel) -> CheckResult:
        rng = np.random.default_rng(seed)
        all_cases = cases(rng)
        try:
            for case in all_cases:
                result = run_case(kernel, case)
                if result is not None:
                    return result
            traced = None
            if tracing() and (check_races or requirements):
                traced = trace_case(rng) if trace_case else default_trace_case(all_cases)
                result = run_trace(kernel, traced, ran_before=trace_case is None)
                if result is not None:
                    return result
        except NotAttempted:
            return not_attempted(id)
        labels = "; ".join(case.label for case in all_cases)
        detail = f"Correct on {len(all_cases)} launches ({labels})."
        if traced is not None:
            checks = (["no races"] if check_races else []) + [r.label for r in requirements]
            detail += f" The trace of {traced.label} shows {', '.join(checks)}."
        return passed(id, detail)

    return Exercise(
        id=id, chapter=chapter, title=title, signature=signature, launch=launch_text, run=run
    )


def _documented_arguments(signature: str) -> list[str]:
    """The parameter names of a signature text such as ``"copy(src, dst): ..."``."""
    match = re.match(r"\s*\w+\(([^)]*)\)", signature)
    return [name.strip() for name in match.group(1).split(",")] if match else []


def keyed_by_documented_names(report, kernel, signature: str):
    """The report with kernel arguments keyed by the exercise's documented names, so that a
    requirement on ``"src"`` also finds a learner's argument called ``source``."""
    documented = _documented_arguments(signature)
    function = python_function(kernel)
    if not documented or function is None:
        return report
    learner = list(inspect.signature(function).parameters)
    pairs = zip(learner, documented, strict=False)  # a learner may add or drop arguments
    alias = {mine: theirs for mine, theirs in pairs if mine != theirs}
    if not alias:
        return report
    arrays = {alias.get(name, name): stats for name, stats in report.arrays.items()}
    return dataclasses.replace(report, arrays=arrays)


def tracing() -> bool:
    """Traces run in the simulator pass only (a GPU pass re-checks results, not the trace)."""
    return runtime.mode == "simulator"
