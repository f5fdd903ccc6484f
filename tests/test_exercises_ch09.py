"""Checkers of lab 09: the corpus in tests/dist_answers/ch09.py (data-parallel code written
differently from the solutions passes; mistakes of many kinds fail with their own hint: which
rank, which parameter, by what factor, which bucket, where a rank looped or waited); odd returns
give a message, not a traceback; the questions accept the answer and explain the usual wrong
ones."""

import pytest
import torch
import torch.distributed as dist
from dist_answers import ch09 as corpus

import gpu_utils as gu
from answer_tables import dist_table_tests
from gpu_utils.exercises import ch09_data_parallel

check = gu.exercises.check

(
    test_every_code_exercise_has_its_corpus,
    test_alternative_correct_answers_pass,
    test_wrong_answers_fail_with_their_own_hint,
) = dist_table_tests("09_data_parallel", corpus.ANSWERS, ch09_data_parallel)


def run(exercise_id, answer):
    """The checker's verdict, computed in this process (faster than a check's worker)."""
    return gu.exercises.get(exercise_id).run(answer)


def average_reference(model, world_size):
    for p in model.parameters():
        if p.grad is not None:
            dist.all_reduce(p.grad)
            p.grad /= world_size


# --- odd answers and stubs --------------------------------------------------------------------


def stub(model, world_size):
    raise NotImplementedError()


def test_a_stub_is_not_attempted():
    result = run("average_gradients", stub)
    assert not result.attempted and "not attempted yet" in result.message


@pytest.mark.parametrize(
    "exercise_id, answer, words",
    [
        ("average_gradients", 42, "Expected a function"),
        ("average_gradients", lambda model: None, "must take the arguments (model, world_size)"),
        ("bucketed_allreduce", average_reference, "(model, world_size, bucket_bytes)"),
        ("zero1_optimizer", None, "Expected a class"),
    ],
)
def test_odd_answers_get_a_message(exercise_id, answer, words):
    result = run(exercise_id, answer)
    assert not result.passed
    assert words in result.message, result.message


def test_an_exception_in_a_rank_names_the_rank_and_line():
    def broken(model, world_size):
        raise ValueError("oops")

    result = run("average_gradients", broken)
    assert not result.passed
    assert "rank 0 raised ValueError: oops" in result.message, result.message


def test_the_checker_process_runs_ranks_and_passes_a_correct_answer():
    result = check("average_gradients", average_reference)
    assert result.passed, result.message


def test_the_check_time_limit_is_the_rank_harness_s():
    from gpu_utils.exercises import _ranks

    limit = _ranks.check_time_limit(ch09_data_parallel.WORLD_SIZES)
    for exercise_id in ("average_gradients", "bucketed_allreduce", "zero1_optimizer"):
        assert gu.exercises.get(exercise_id).time_limit == limit


# --- memory and traffic -------------------------------------------------------------------------

PSI, N = 7.5e9, 64


@pytest.mark.parametrize(
    "exercise_id, right, wrong, hint",
    [
        ("zero2_memory_gb", 12, 11.67, "round up"),
        ("zero2_memory_gb", 12, 11, "24.55 GB, over 24"),
        ("zero2_memory_gb", 12, 10, "GiB"),
        ("zero2_memory_gb", 12, 5, "that is ZeRO-3"),
        # 4 micro-batches x (2 all-gathers + 1 reduce-scatter) x 15 GB x 63/64 = 177.2 GB
        ("zero3_traffic_gb", 177.2, 44.3, "does not amortise"),
        ("zero3_traffic_gb", 177.2, 29.53, "data parallelism's all-reduce"),
        ("zero3_traffic_gb", 177.2, 132.9, "only its shard of the gradients"),
        ("zero3_traffic_gb", 177.2, 118.1, "8 collectives"),
        ("zero3_traffic_gb", 177.2, 165.0, "not 2**30"),
        ("zero3_traffic_gb", 177.2, 180.0, "(n - 1)/n"),
        ("zero3_traffic_gb", 177.2, 354.4, "sent and received"),
    ],
)
def test_memory_questions(exercise_id, right, wrong, hint):
    assert run(exercise_id, lambda: right).passed
    result = run(exercise_id, lambda: wrong)
    assert not result.passed
    assert hint in result.message, result.message


def test_memory_answers_agree_with_gu_memory():
    def fewest(stage):
        return next(
            n
            for n in range(1, 1000)
            if int(gu.memory.model_state_bytes(PSI, dp=n, zero_stage=stage)) <= 24e9
        )

    assert run("zero2_memory_gb", lambda: fewest(2)).passed
    assert "that is ZeRO-3" in run("zero2_memory_gb", lambda: fewest(3)).message
    ring = gu.collectives.bus_bandwidth_factor("all_gather", N)
    assert run("zero3_traffic_gb", lambda: 4 * 3 * 2 * PSI * ring / 1e9).passed
    # the planner's ZeRO-3 traffic (bytes per GPU, before the ring's (n - 1)/n) agrees
    model = gu.parallelism.Model(PSI, 32, 4096, 32, 1024, 0)
    x = gu.parallelism.evaluate(
        model, gu.parallelism.Cluster("H100-SXM", 8, 8), N * 4 * 1024, dp=N, zero_stage=3
    )
    assert x.micro_batches == 4
    assert run("zero3_traffic_gb", lambda: x.comm_bytes["dp"] * ring / 1e9).passed


# --- gu.data_parallel, the pieces the checkers and chapter 09 share ------------------------------


@pytest.mark.parametrize("numel, world_size", [(241, 2), (241, 3), (241, 4), (8, 4), (3, 4)])
def test_shard_range_cuts_like_tensor_split(numel, world_size):
    pieces = torch.tensor_split(torch.arange(numel), world_size)
    for rank, piece in enumerate(pieces):
        start, stop = gu.data_parallel.shard_range(numel, rank, world_size)
        assert torch.equal(torch.arange(start, stop), piece)


def test_tiny_lm_has_the_awkward_cases_and_the_same_weights_everywhere():
    a, b = gu.data_parallel.TinyLM(seed=3), gu.data_parallel.TinyLM(seed=3)
    assert a.head.weight is a.embed.weight
    assert not any(p.requires_grad for p in a.frozen.parameters())
    trainable = sum(p.numel() for p in a.parameters() if p.requires_grad)
    assert trainable == 241 and all(trainable % n for n in (2, 3, 4))
    for (name, p), q in zip(a.named_parameters(), b.parameters(), strict=True):
        assert torch.equal(p, q), name
    tokens, targets = gu.data_parallel.batch(0)
    assert (
        tokens.shape == targets.shape == (gu.data_parallel.GLOBAL_BATCH, gu.data_parallel.SEQ_LEN)
    )
    assert torch.equal(tokens[:, 1:], targets[:, :-1])
    assert gu.data_parallel.loss_fn(a, tokens, targets).item() > 0


def test_state_counters_count_adam_moments_not_step_counters():
    model = gu.data_parallel.TinyLM()
    optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad])
    gu.data_parallel.loss_fn(model, *gu.data_parallel.batch(0)).backward()
    optimizer.step()

    class Holder:
        def __init__(self):
            self.optimizer = optimizer

    assert gu.data_parallel.state_numel(Holder()) == 2 * 241
    assert gu.data_parallel.optimizer_state_bytes(optimizer) == 2 * 241 * 4
    assert gu.data_parallel.state_numel(object()) is None


def test_a_rank_stopped_at_the_timeout_is_not_said_to_have_used_its_processor_time():
    from gpu_utils.exercises._ranks import timeout_result

    def answer(rank, world_size):
        import time

        time.sleep(100)

    line = answer.__code__.co_firstlineno + 3
    # stopped at the timeout, having used 0.04 s of processor time (it slept)
    slept = gu.dist.RankTimeout([0], 10.0, {0: f"at answer (line {line})"}, {0: 0.04}, 1.5)
    result = timeout_result("x", 2, slept, answer, "deadlock")
    assert "after 10 s" in result.message, result.message
    assert "processor time" not in result.message, result.message
    # stopped for using more than the limit: its processor time is named
    looped = gu.dist.RankTimeout([0], 10.0, {0: f"at answer (line {line})"}, {0: 1.62}, 1.5)
    assert looped.looping == [0]
    result = timeout_result("x", 2, looped, answer, "deadlock")
    assert "after 1.6 s of processor time" in result.message, result.message
