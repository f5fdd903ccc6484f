"""Checkers of lab 10: the corpus in tests/dist_answers/ch10.py (tensor-parallel layers and MLP
written differently from the solutions pass; mistakes of many kinds fail with their own hint: a
missing all-reduce, a bias added or divided on every rank, a missing transpose, the wrong
dimension split, a missing f, gradients all-reduced like data parallelism, full weights kept, a
rank that loops or waits; 1F1B schedules are checked against the rules of a pipeline); the
questions accept the answer and explain the usual wrong ones."""

import pytest
from dist_answers import ch10 as corpus

import gpu_utils as gu
from answer_tables import dist_table_tests
from gpu_utils.exercises import ch10_model_parallel
from gpu_utils.many_gpus import pipeline

check = gu.exercises.check
tp = gu.tensor_parallel

(
    test_every_code_exercise_has_its_corpus,
    test_alternative_correct_answers_pass,
    test_wrong_answers_fail_with_their_own_hint,
) = dist_table_tests("10_model_parallel", corpus.ANSWERS, ch10_model_parallel)


def run(exercise_id, answer):
    """The checker's verdict, computed in this process (faster than a check's worker)."""
    return gu.exercises.get(exercise_id).run(answer)


def test_the_checker_process_runs_ranks_and_passes_a_correct_answer():
    result = check("column_parallel_linear", tp.column_parallel_linear)
    assert result.passed, result.message
    assert "[Gloo]" not in result.output and "[rank" not in result.output, result.output


def test_a_stub_is_not_attempted():
    def stub(x_part, weight, bias, rank, world_size):
        raise NotImplementedError()

    result = run("row_parallel_linear", stub)
    assert not result.attempted and "not attempted yet" in result.message
    assert not run("one_f_one_b", lambda p, m: stub(0, 0, 0, 0, 0)).attempted


def test_a_function_with_the_wrong_arguments_is_told_so():
    result = run("row_parallel_linear", lambda x, w: x)
    assert "(x_part, weight, bias, rank, world_size)" in result.message


def test_the_check_time_limit_is_the_rank_harness_s():
    from gpu_utils.exercises import _ranks

    limit = _ranks.check_time_limit(ch10_model_parallel.WORLD_SIZES)
    for exercise_id in ("column_parallel_linear", "row_parallel_linear", "tensor_parallel_mlp"):
        assert gu.exercises.get(exercise_id).time_limit == limit


# --- the pipeline module --------------------------------------------------------------------


@pytest.mark.parametrize("p, m", [(2, 3), (4, 8), (8, 8), (4, 1), (5, 13)])
def test_simulated_bubble_matches_the_formula(p, m):
    for schedule in (pipeline.gpipe(p, m), pipeline.one_f_one_b(p, m)):
        timeline = pipeline.simulate(schedule, 1.0, 2.0)
        assert timeline.bubble() == pytest.approx(pipeline.bubble_fraction(p, m))
        assert timeline.makespan == pytest.approx(3 * (m + p - 1))
    assert max(pipeline.in_flight(pipeline.one_f_one_b(p, m))) == min(p, m)
    assert max(pipeline.in_flight(pipeline.gpipe(p, m))) == m


@pytest.mark.parametrize("p, m, v", [(2, 4, 2), (4, 8, 2), (4, 8, 4), (3, 6, 3)])
def test_interleaving_divides_the_bubble_by_v(p, m, v):
    timeline = pipeline.simulate(pipeline.interleaved(p, m, v))
    assert timeline.bubble() == pytest.approx(pipeline.bubble_fraction(p, m, v))
    assert timeline.makespan == pytest.approx(3 * m + 3 * (p - 1) / v)


# --- questions --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "exercise_id, right, wrong, hint",
    [
        ("pipeline_bubble_share", 7 / 31, 7 / 24, "relative to the ideal time"),
        ("pipeline_bubble_share", 7 / 31, 0.875, "single micro-batch"),
        ("pipeline_bubble_share", 7 / 31, 24 / 31, "busy fraction"),
        ("micro_batches_for_bubble", 285, 300, "(p - 1)/m at 5%"),
        ("micro_batches_for_bubble", 285, 284, "m >= 15/0.05 - 15"),
        ("micro_batches_for_bubble", 285, 304, "the pipeline fills in p - 1 steps"),
        ("interleaved_bubble_share", 7 / 71, 7 / 23, "without interleaving"),
        ("interleaved_bubble_share", 7 / 71, 7 / 64, "relative to the ideal time"),
        ("interleaved_bubble_share", 7 / 71, 7 / 92, "compute time is not"),
        # Korthikanti et al. 2022, Table 2, GPT-3 175B: sbh(34/t + 5as/(ht)), t = 8, s = 4096
        ("sequence_parallel_activations", 1220.5, 1660.9, "without sequence parallelism"),
        ("sequence_parallel_activations", 1220.5, 9764.3, "without any parallelism"),
        ("sequence_parallel_activations", 1220.5, 213.9, "attention scores and softmax"),
        ("sequence_parallel_activations", 1220.5, 717.2, "s squared"),
        ("sequence_parallel_activations", 1220.5, 358.6, "2,048-token sequences"),
        ("sequence_parallel_activations", 1220.5, 1164.0, "not 2**20"),
        ("min_pipeline_stages", 11, 10.48, "round up"),
        ("min_pipeline_stages", 11, 10, "over the 90% (72 GiB)"),
        ("min_pipeline_stages", 11, 12, "80 GiB"),
        ("min_pipeline_stages", 11, 84, "already divides the model by 8"),
        ("min_pipeline_stages", 11, 2, "16 bytes per parameter"),
    ],
)
def test_questions(exercise_id, right, wrong, hint):
    assert run(exercise_id, lambda: right).passed
    result = run(exercise_id, lambda: wrong)
    assert not result.passed and hint in result.message, result.message


def test_activation_answer_agrees_with_gu_memory():
    value = gu.memory.activation_bytes_per_layer(
        4096, 1, 12288, 96, tp=8, sequence_parallel=True, attention="eager"
    )
    assert run("sequence_parallel_activations", lambda: value / 1e6).passed


def test_stage_answer_agrees_with_gu_memory():
    hbm = gu.specs.get("H100-SXM").hbm_bytes
    states = int(gu.memory.model_state_bytes(405e9))
    stages = next(pp for pp in range(1, 100) if states / 8 / pp <= 0.9 * hbm)
    assert stages == 11 and run("min_pipeline_stages", lambda: stages).passed
