"""The one engine of kernel exercises, Numba and Triton alike: what a check does with a learner's
kernel once a chapter has described its cases.

``_kernels`` (Numba, ``Case`` of NumPy arrays) and ``_triton`` (Triton, ``TritonCase`` of torch
tensors) differ only in how a kernel is launched and how its buffers are read back; the rest is
here, once:

- the case loop: each case in turn, the first failure is the verdict, a stub that still raises
  ``NotImplementedError`` is "not attempted" (:func:`run_cases`);
- the comparison of one output with its expected values, as a :class:`Mismatch` (which elements
  were never written, which are wrong) (:func:`mismatch_of`);
- an input the kernel changed, with its first changed element (:func:`changed_element`,
  :func:`changed_input_failure`);
- an output the kernel never wrote at all (:func:`wrote_nothing_text`);
- the signature's documented argument names (:func:`documented_arguments`) and the text of a pass
  (:func:`correct_on`).

The evidence is data (``Mismatch`` holds the masks and both arrays); the chapters' hints read it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from ._registry import CheckResult, failed, not_attempted

__all__ = [
    "Mismatch",
    "NotAttempted",
    "changed_element",
    "changed_input_failure",
    "correct_on",
    "documented_arguments",
    "mismatch_of",
    "run_cases",
    "wrote_nothing_text",
]


class NotAttempted(Exception):
    """The learner's code still raises NotImplementedError (a stub)."""


@dataclass(frozen=True)
class Mismatch:
    """How one output differs from the expected one."""

    name: str
    unwritten: np.ndarray  # bool mask: still holding the checker's NaN where a value was expected
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
                f"{count_text(self.unwritten.sum(), self.got.size)} of `{self.name}` never "
                f"written (still NaN); the first is {self.name}{index_text(index)}."
            )
        if self.wrong.any():
            index = self.first(self.wrong)
            parts.append(
                f"{count_text(self.wrong.sum(), self.got.size)} of `{self.name}` wrong; the "
                f"first is {self.name}{index_text(index)}: yours {self.got[index]:.6g}, "
                f"expected {self.expected[index]:.6g}."
            )
        return " ".join(parts)


def count_text(bad: int, total: int) -> str:
    """'3 of 10 elements'."""
    return f"{int(bad)} of {total} element{'s' if total != 1 else ''}"


def index_text(index: tuple[int, ...]) -> str:
    """'[2, 5]'."""
    return "[" + ", ".join(str(i) for i in index) + "]"


def mismatch_of(
    name: str,
    got: np.ndarray,
    expected: np.ndarray,
    unwritten: np.ndarray,
    rtol: float,
    atol: float,
) -> Mismatch | None:
    """How ``got`` differs from ``expected``, or None when every element is close. ``unwritten``
    marks the elements that still hold the checker's NaN (how that is told is the launcher's
    business: any NaN for Numba's NumPy buffers, the poison's own bits for Triton's tensors);
    an expected NaN is never counted as unwritten."""
    missing = unwritten & ~np.isnan(expected)
    close = np.isclose(got, expected, rtol=rtol, atol=atol, equal_nan=True)
    wrong = ~close & ~missing
    if missing.any() or wrong.any():
        return Mismatch(name, missing, wrong, got, expected)
    return None


def changed_element(name: str, before: np.ndarray, after: np.ndarray) -> str | None:
    """'`a` (a[3] was 0.5, now 1.5)' when ``after`` differs from ``before`` in any bit, with the
    first element whose value changed; '`a`' alone when only the shape, a zero's sign or a NaN's
    payload changed; None when nothing changed."""
    before, after = np.asarray(before), np.asarray(after)
    if before.shape == after.shape and before.tobytes() == after.tobytes():
        return None
    if before.shape != after.shape or before.ndim == 0:
        return f"`{name}`"
    same = before == after
    if before.dtype.kind in "fc":
        same |= np.isnan(before) & np.isnan(after)
    if same.all():
        return f"`{name}`"
    index = tuple(int(i) for i in np.argwhere(~same)[0])
    return f"`{name}` ({name}{index_text(index)} was {before[index]:.6g}, now {after[index]:.6g})"


def changed_input_failure(
    exercise_id: str, label: str, changed: str, outputs: Sequence[str], how_to_write: str
) -> CheckResult:
    """The verdict on a kernel that changed an input it should only read."""
    return failed(
        exercise_id,
        f"With {label}: your kernel changed its input {changed}, which it should only read.",
        how_to_write
        + (f" (`{'`, `'.join(outputs)}`)" if outputs else "")
        + "; leave the inputs as they were (the caller, or the next kernel, still needs them).",
    )


def wrote_nothing_text(outputs: Sequence[str]) -> str:
    """What a check observed when every element of every output still holds the checker's NaN."""
    names = ", ".join(f"`{n}`" for n in outputs) or "the output"
    return (
        f"your kernel wrote nothing at all: every element of {names} is still NaN (the checker "
        "fills outputs with NaN before the launch)."
    )


def documented_arguments(signature: str) -> list[str]:
    """The parameter names of a signature text such as ``"copy(src, dst): ..."`` or
    ``"add(x_ptr, y_ptr, n, BLOCK: tl.constexpr)"`` (annotations left out)."""
    match = re.match(r"\s*\w+\(([^)]*)\)", signature)
    if not match:
        return []
    return [part.split(":")[0].strip() for part in match.group(1).split(",") if part.strip()]


def run_cases(
    exercise_id: str, cases: Sequence, run_case: Callable[[object], CheckResult | None]
) -> CheckResult | None:
    """Run ``run_case`` on each case in turn: the first failure is the verdict; a stub is not
    attempted; None when every case passed."""
    try:
        for case in cases:
            result = run_case(case)
            if result is not None:
                return result
    except NotAttempted:
        return not_attempted(exercise_id)
    return None


def correct_on(cases: Sequence) -> str:
    """'Correct on 3 launches (n = 1; n = 100; ...).'"""
    labels = "; ".join(case.label for case in cases)
    return f"Correct on {len(cases)} launches ({labels})."
