"""The one engine of kernel exercises (gpu_utils/exercises/_engine.py), shared by Numba's
(_kernels) and Triton's (_triton) checkers: the pieces each used to hold a copy of."""

from __future__ import annotations

import numpy as np
import pytest

from gpu_utils.exercises import _engine, _kernels, _triton
from gpu_utils.exercises._registry import failed


def test_both_checkers_share_the_engine():
    for name in ("Mismatch", "NotAttempted", "documented_arguments", "run_cases", "correct_on"):
        assert getattr(_kernels, name, getattr(_engine, name)) is getattr(_engine, name)
        assert getattr(_triton, name) is getattr(_engine, name)


def test_mismatch_tells_unwritten_from_wrong():
    expected = np.array([1.0, 2.0, np.nan, 4.0], dtype=np.float32)
    got = np.array([1.0, np.nan, np.nan, 5.0], dtype=np.float32)
    found = _engine.mismatch_of("out", got, expected, np.isnan(got), 1e-5, 1e-6)
    assert found.unwritten.tolist() == [False, True, False, False]  # an expected NaN is not
    assert found.wrong.tolist() == [False, False, False, True]
    assert "1 of 4 elements of `out` never written" in found.describe()
    assert "out[3]: yours 5, expected 4" in found.describe()
    assert _engine.mismatch_of("out", expected, expected, np.isnan(expected), 1e-5, 1e-6) is None


def test_a_computed_nan_is_wrong_when_the_launcher_says_it_was_written():
    # Triton's launcher marks only its poison's bits as unwritten: a NaN the kernel stored is
    # a wrong value, not a missing one
    expected = np.ones(3, dtype=np.float32)
    got = np.array([1.0, np.nan, 1.0], dtype=np.float32)
    found = _engine.mismatch_of("out", got, expected, np.zeros(3, bool), 1e-5, 1e-6)
    assert not found.unwritten.any() and found.wrong.tolist() == [False, True, False]


@pytest.mark.parametrize(
    ("before", "after", "expected"),
    [
        (np.arange(4.0), np.arange(4.0), None),
        (np.arange(4.0), np.array([0.0, 1.0, 7.5, 3.0]), "`a` (a[2] was 2, now 7.5)"),
        (np.zeros(2), np.array([0.0, -0.0]), "`a`"),  # only a zero's sign
        (np.zeros(2), np.zeros(3), "`a`"),
        (np.array([[1.0, 2.0]]), np.array([[1.0, 3.0]]), "`a` (a[0, 1] was 2, now 3)"),
    ],
)
def test_changed_element(before, after, expected):
    assert _engine.changed_element("a", before, after) == expected


def test_changed_input_failure_names_outputs_and_what_to_do():
    result = _engine.changed_input_failure(
        "ex", "n = 5", "`x` (x[0] was 1, now 2)", ["out"], "write results only into the output"
    )
    assert not result.passed
    assert (
        result.what
        == "With n = 5: your kernel changed its input `x` (x[0] was 1, now 2), which it should only read."
    )
    assert result.hint.startswith("write results only into the output (`out`); leave the inputs")


def test_documented_arguments_leave_annotations_out():
    assert _engine.documented_arguments("copy(src, dst): copies") == ["src", "dst"]
    assert _engine.documented_arguments("add(x_ptr, n, BLOCK: tl.constexpr)") == [
        "x_ptr",
        "n",
        "BLOCK",
    ]
    assert _engine.documented_arguments("no signature here") == []


def test_run_cases_first_failure_and_stub():
    seen = []

    def run_case(case):
        seen.append(case)
        return failed("ex", "case 2 is wrong", "fix it") if case == 2 else None

    assert not _engine.run_cases("ex", [1, 2, 3], run_case).passed
    assert seen == [1, 2]  # stops at the first failure
    assert _engine.run_cases("ex", [1, 3], run_case) is None

    def stub(case):
        raise _engine.NotAttempted

    result = _engine.run_cases("ex", [1], stub)
    assert not result.passed and not result.attempted


def test_correct_on_lists_the_launches():
    class Case:
        def __init__(self, label):
            self.label = label

    assert _engine.correct_on([Case("n = 1"), Case("n = 100")]) == (
        "Correct on 2 launches (n = 1; n = 100)."
    )


def test_a_launch_error_is_data_with_its_thread_and_block():
    """Chapter hints read the failing thread from the error's attributes, never its text."""
    from numba import cuda  # in simulator mode: gpu_utils was imported above

    @cuda.jit
    def unguarded(x, out):
        i = cuda.grid(1)
        out[i] = x[i] * 2

    case = _kernels.Case(
        label="n = 40",
        griddim=2,
        blockdim=32,
        inputs=(np.ones(40, np.float32),),
        outputs=_kernels.poisoned(40),
        expected=(np.full(40, 2.0, np.float32),),
    )
    args = (case.inputs[0].copy(), case.outputs[0].copy())
    error = _kernels.launch(unguarded, case, args)
    assert error.kind == "extra_threads"
    assert (error.index, error.axis, error.size) == (40, 0, 40)
    assert _kernels.out_of_bounds(error) == (40, 0, 40)
    assert error.block[0] == 1 and error.thread[0] >= 8  # a thread past the 40 elements
    assert _kernels.failing_thread(error, case.blockdim)[0] == 32 + error.thread[0]
    assert f"thread ({error.thread[0]}, 0, 0) of block (1, 0, 0)" in error
    assert _kernels.failing_thread(_kernels.KernelError("other", "text", "hint"), 32) is None
