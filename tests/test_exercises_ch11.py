"""Checkers of lab 11, the capstone: the corpus in tests/dist_answers/ch11.py (answers written
differently from the solutions pass; known-wrong answers, faster but wrong, fail with their own
hint: labels shuffled apart or shifted by two, a seed or learning rate ignored, a sum for a mean,
a loss read with .item(), Adam's L2 decay, syncs every step, a model cast to bf16, old gradients
never cleared, a loop that never ends); a fix with no speed-up on this machine still passes and
says why; nothing raises."""

import pytest
import torch.nn.functional as F
from dist_answers import ch11 as corpus

import gpu_utils as gu
from answer_tables import dist_table_tests
from gpu_utils.exercises import ch11_training as capstone

(
    test_every_code_exercise_has_its_corpus,
    test_alternative_correct_answers_pass,
    test_wrong_answers_fail_with_their_own_hint,
) = dist_table_tests("11_training_in_practice", corpus.ANSWERS, capstone)


def run(exercise_id, answer):
    """The checker's verdict, computed in this process (faster than a check's worker)."""
    return gu.exercises.get(exercise_id).run(answer)


def assert_fails(result, *phrases):
    assert not result.passed, result.message
    for phrase in phrases:
        assert phrase in result.message, result.message


def loss_log_softmax(logits, targets):
    logp = F.log_softmax(logits, dim=-1)
    return F.nll_loss(logp.reshape(-1, logp.shape[-1]), targets.reshape(-1))


def test_a_correct_loss_passes_with_a_measured_ratio_and_its_memory():
    result = run("ch11_fused_loss", lambda lg, t: F.cross_entropy(lg.flatten(0, 1), t.flatten()))
    assert result.passed, result.message
    assert "Saved for backward" in result.message and "Speed-up over the baseline" in result.message


# --- every exercise ---------------------------------------------------------------------------------


@pytest.mark.parametrize("exercise_id", gu.exercises.ids("11_training_in_practice"))
def test_stub_and_non_function_never_raise(exercise_id):
    def stub(*args):
        raise NotImplementedError()

    result = run(exercise_id, stub)
    assert not result.passed and not result.attempted, result.message
    assert_fails(run(exercise_id, 42), "Expected a function")

    def broken(*args):
        raise ValueError("boom")

    assert_fails(run(exercise_id, broken), "ValueError: boom")


def test_no_speed_up_is_said_honestly_and_still_passes(monkeypatch):
    monkeypatch.setattr(
        capstone, "_interleaved", lambda fns, repeat=5: {"baseline": 1.0, "yours": 1.0}
    )
    result = run("ch11_fused_loss", loss_log_softmax)
    assert result.passed
    assert "1.00x" in result.message and "not held against you" in result.message


def test_check_runs_in_the_worker_process_within_its_time_limit():
    result = gu.exercises.check("ch11_fused_loss", loss_log_softmax)
    assert result.passed, result.message
    for exercise_id in corpus.ANSWERS:
        assert gu.exercises.get(exercise_id).time_limit == capstone.TIME_LIMIT


def test_a_ratio_within_the_repeats_noise_is_called_noise_and_ranks_nothing():
    noisy = capstone._speed_text(1.8, "a step", "why.", spread=(0.4, 6.5))
    assert "from 0.40x to 6.50x" in noisy and "within this machine's noise" in noisy
    clear = capstone._speed_text(3.0, "a step", "why.", spread=(2.1, 4.0))
    assert "noise" not in clear and "not held against you" not in clear
    assert capstone._ratio_range([2.0, 3.0], [1.0, 1.5]) == (2.0 / 1.5, 3.0)
