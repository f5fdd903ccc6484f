"""Shared machinery for kernel exercises: random inputs, NaN-poisoned outputs, the launch, and
plain-language explanations of what went wrong. Chapter modules describe cases and hints only."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ._registry import CheckResult, Exercise, failed, not_attempted, passed


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
) -> Exercise:
    """Build an Exercise that launches the learner's kernel on each case and explains failures.

    ``hint(case, mismatch)`` names the likely mistake from the wrong output; ``error_hint(case,
    error)`` from an exception (by default ``guard_hint``, as most errors are a missing guard).
    ``seed`` fixes the inputs (for tests); by default every check draws fresh random data.
    """

    def run(kernel) -> CheckResult:
        rng = np.random.default_rng(seed)
        all_cases = cases(rng)
        for case in all_cases:
            outputs = tuple(buffer.copy() for buffer in case.outputs)
            args = tuple(a.copy() for a in case.inputs) + outputs
            try:
                error = launch(kernel, case, args)
            except NotAttempted:
                return not_attempted(id)
            if error:
                why = error_hint(case, error) if error_hint else guard_hint
                return failed(id, f"With {case.label}: {error}", why)
            mismatch = compare(case, outputs, output_names)
            if mismatch:
                return failed(id, f"With {case.label}: {mismatch.describe()}", hint(case, mismatch))
        labels = "; ".join(case.label for case in all_cases)
        return passed(id, f"Correct on {len(all_cases)} launches ({labels}).")

    return Exercise(
        id=id, chapter=chapter, title=title, signature=signature, launch=launch_text, run=run
    )
