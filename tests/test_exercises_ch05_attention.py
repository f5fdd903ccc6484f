"""Checkers of lab 05's fused kernels (online softmax, one tile of attention): the corpus in
tests/kernel_answers/ch05_attention.py (correct kernels written differently from the solutions
pass; known mistakes fail with their own hint), the hint functions on crafted outputs, and the
attention reference against a plain softmax."""

import math

import numpy as np
from kernel_answers import ch05, ch05_attention

from answer_tables import kernel_table_tests

(
    test_every_kernel_exercise_has_its_corpus,
    test_alternative_correct_answers_pass,
    test_wrong_answers_fail_with_their_own_hint,
) = kernel_table_tests(
    "05_parallel_patterns",
    ch05_attention.ANSWERS,
    ch05_attention.CONSTANTS,
    elsewhere=tuple(ch05.ANSWERS),  # test_exercises_ch05.py
)


def test_attention_reference_is_softmax_of_scaled_scores_times_v():
    from gpu_utils.exercises.ch05_attention import attention

    rng = np.random.default_rng(1)
    q, k, v = (rng.standard_normal((5, 4)) for _ in range(3))
    out = attention(q, k, v)
    for i in range(5):
        scores = [float(q[i] @ k[j]) / math.sqrt(4) for j in range(5)]
        weights = [math.exp(s) for s in scores]
        expected = sum(w * v[j] for j, w in enumerate(weights)) / sum(weights)
        assert np.allclose(out[i], expected)


def test_missing_rescale_is_recognised_only_where_it_happened():
    from gpu_utils.exercises.ch05_attention import _matches_a_missing_rescale, attention

    rng = np.random.default_rng(2)
    q, k, v = (rng.uniform(-2, 2, (100, 8)) for _ in range(3))  # 2 tiles of 64
    scores = q @ k.T / math.sqrt(8)
    running = np.maximum.accumulate(scores, axis=1)  # key by key, acc never rescaled
    final = running[:, -1:]
    no_rescale = (np.exp(scores - running) @ v) / np.exp(scores - final).sum(1, keepdims=True)
    assert _matches_a_missing_rescale(q, k, v, no_rescale, "acc")
    assert not _matches_a_missing_rescale(q, k, v, attention(q, k, v), "acc")
    assert not _matches_a_missing_rescale(q, k, v, no_rescale, "d")
