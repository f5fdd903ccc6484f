"""Numeric exercises: the learner writes a function that returns a number (a size, a time, a
fraction), checked within a stated tolerance. Known wrong answers map to their own hints.

A lab cell looks like::

    def weights_gb():
        ### BEGIN SOLUTION
        return 7e9 * 2 / 1e9
        ### END SOLUTION

    gu.exercises.check("weights_7b_bf16", weights_gb)

The answer is a function (not a bare number) so that the generated lab's stub,
``raise NotImplementedError()``, raises only when the checker calls it.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from . import _pyerrors
from ._registry import CheckResult, Exercise, failed, not_attempted, passed


@dataclass(frozen=True)
class NumericAnswer:
    """The expected value, its tolerance, and the values common mistakes produce."""

    expected: float
    unit: str = ""
    rel_tol: float = 0.01
    mistakes: Mapping[float, str] = field(default_factory=dict)  # wrong value -> hint
    hint: str = ""  # for any other wrong value


def _fmt(value: float, unit: str) -> str:
    return f"{value:.4g} {unit}".strip()


def judge(exercise_id: str, answer: NumericAnswer, value: object) -> CheckResult:
    """Compare one returned value with the expected answer."""
    if getattr(value, "ndim", None) == 0:  # a 0-d array, e.g. from np.sum
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        try:
            shown = repr(value)
        except Exception:  # e.g. an integer too long to print
            shown = "a value"
        if len(shown) > 80:
            shown = shown[:77] + "..."
        return failed(
            exercise_id,
            f"Your function returned {shown} ({type(value).__name__}), not a number.",
            "end the function with `return <your number>`.",
        )
    try:
        value = float(value)
    except OverflowError:
        bits = int(value).bit_length() if isinstance(value, numbers.Integral) else 0
        size = f" (about 10^{int(bits * math.log10(2))})" if bits else ""
        return failed(
            exercise_id,
            f"Your function returned a number too large for a float{size}.",
            answer.hint or "check the formula: a power (`**`) where a product was meant?",
        )
    if not math.isfinite(value):
        return failed(
            exercise_id,
            f"Your function returned {value}.",
            answer.hint
            or "a NaN or an infinity comes from 0/0, inf - inf or an overflow: check each step.",
        )
    if math.isclose(value, answer.expected, rel_tol=answer.rel_tol):
        return passed(
            exercise_id,
            f"{_fmt(value, answer.unit)} is within {answer.rel_tol * 100:g}% of the expected answer.",
        )
    for wrong, hint in answer.mistakes.items():
        if math.isclose(value, wrong, rel_tol=answer.rel_tol):
            return failed(exercise_id, f"You returned {_fmt(value, answer.unit)}.", hint)
    ratio = value / answer.expected if answer.expected else math.inf
    what = f"You returned {_fmt(value, answer.unit)}, which is {ratio:.3g}x the expected answer."
    return failed(exercise_id, what, answer.hint)


def numeric_exercise(
    *,
    id: str,  # noqa: A002 - the registry's field name
    chapter: str,
    title: str,
    question: str,
    answer: NumericAnswer | Callable[[], NumericAnswer],
) -> Exercise:
    """An exercise whose answer is a zero-argument function returning a number.

    ``answer`` may be a callable, for answers computed from ``gu.specs`` at check time.
    """

    def run(function) -> CheckResult:
        if not callable(function):
            return failed(
                id,
                f"Expected a function that returns the answer, got {type(function).__name__}.",
                "wrap your calculation in `def answer(): return ...` and pass `answer`.",
            )
        try:
            value = function()
        except NotImplementedError:
            return not_attempted(id)
        except (Exception, SystemExit) as error:
            try:
                text = str(error)
            except Exception:  # e.g. an integer too long to print
                text = ""
            text = text if len(text) < 200 else text[:197] + "..."
            seen, hint = _pyerrors.explain(error, function) or ("", "")
            return failed(
                id,
                f"Your function raised {type(error).__name__}{_pyerrors.where(error, function)}"
                + (f": {text}" if text else ".")
                + (f" {seen}" if seen else ""),
                hint or "run it in a cell of its own to see the full error.",
            )
        return judge(id, answer() if callable(answer) else answer, value)

    return Exercise(
        id=id,
        chapter=chapter,
        title=title,
        signature=f"{question} A function with no arguments that returns a number.",
        launch="called once, in the checker's own process",
        run=run,
        kind="function",
    )
