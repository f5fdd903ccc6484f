"""Checkers of lab 05: the corpus in tests/kernel_answers/ch05.py (correct kernels written
differently from the solutions pass; known mistakes fail with their own hint; races rarely change
the simulator's results, so most of them are caught by the trace, as are divergence, bank
conflicts and coalescing), the lab's own solutions pass, and hint functions on crafted outputs."""

from kernel_answers import ch05

import gpu_utils as gu
from answer_tables import kernel_table_tests, solution_kernel_tests

NBINS = 16

(
    test_every_kernel_exercise_has_its_corpus,
    test_alternative_correct_answers_pass,
    test_wrong_answers_fail_with_their_own_hint,
) = kernel_table_tests(
    "05_parallel_patterns",
    ch05.ANSWERS,
    ch05.CONSTANTS,
    elsewhere=("online_softmax", "attention_tile"),  # test_exercises_ch05_attention.py
)
test_the_labs_solution_passes = solution_kernel_tests("05_parallel_patterns")


def _hint_for(exercise: str, case_index: int, got):
    """The hint an exercise's checker gives when case ``case_index`` produced ``got``."""
    import numpy as np

    from gpu_utils.exercises import ch05_parallel_patterns as patterns
    from gpu_utils.exercises._kernels import compare

    cases, hint = {
        "histogram_shared": (patterns._histogram_cases, patterns._histogram_hint),
        "softmax_rows": (patterns._softmax_cases, patterns._softmax_hint),
    }[exercise]
    case = cases(np.random.default_rng(0))[case_index]
    if got is None:
        return case
    return hint(case, compare(case, [got], ("out",)))


def test_histogram_garbage_counts_get_the_zeroing_hint():
    import numpy as np

    garbage = np.full(NBINS, -1_500_000_000, np.int32)  # never-zeroed shared bins
    hint = _hint_for("histogram_shared", 1, garbage)
    assert "Initialise the shared bins to 0" in hint and "syncthreads" in hint


def test_softmax_overflow_hint_only_for_overflow():
    import numpy as np

    (x,) = _hint_for("softmax_rows", 1, None).inputs  # the 2x100 case, values up to 100
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(x)  # no maximum subtracted: float32 overflows
        no_max = e / e.sum(axis=1, keepdims=True)
    assert "exp overflows float32" in _hint_for("softmax_rows", 1, no_max)
    finite_but_wrong = np.full_like(x, 0.01)
    assert "exp overflows" not in _hint_for("softmax_rows", 1, finite_but_wrong)


def test_lab_05_exercises_are_registered_in_order():
    assert gu.exercises.ids("05_parallel_patterns") == [
        "reduce_block_sum",
        "reduce_first_add",
        "reduce_warp_shuffle",
        "block_scan",
        "histogram_shared",
        "softmax_rows",
        "online_softmax",
        "attention_tile",
    ]
