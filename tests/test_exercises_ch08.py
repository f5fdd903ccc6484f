"""Checkers of lab 08: ring collectives written differently from the solutions pass; common
mistakes fail with their own hint; a deadlock ends with a message, not a hung kernel; the
cost-model questions accept the answer and explain the usual wrong ones."""

import inspect
import os
import time

import pytest
import torch
import torch.distributed as dist

import gpu_utils as gu
from gpu_utils.exercises import ch08_collectives

check = gu.exercises.check


def run(exercise_id, answer):
    """The checker's verdict, computed in this process (faster than a check's worker)."""
    return gu.exercises.get(exercise_id).run(answer)


# --- ring_all_gather --------------------------------------------------------------------------


def all_gather_reference(chunk, rank, world_size):
    out = torch.empty(world_size * chunk.numel())
    pieces = list(out.chunk(world_size))
    pieces[rank].copy_(chunk)
    right, left = (rank + 1) % world_size, (rank - 1) % world_size
    for step in range(world_size - 1):
        request = dist.isend(pieces[(rank - step) % world_size], dst=right)
        dist.recv(pieces[(rank - step - 1) % world_size], src=left)
        request.wait()
    return out


def all_gather_even_odd(chunk, rank, world_size):
    """Correct differently: blocking calls, even ranks send first; a list, concatenated."""
    received = {rank: chunk}
    current = chunk
    for step in range(world_size - 1):
        incoming = torch.empty_like(chunk)
        if rank % 2 == 0:
            dist.send(current, (rank + 1) % world_size)
            dist.recv(incoming, (rank - 1) % world_size)
        else:
            dist.recv(incoming, (rank - 1) % world_size)
            dist.send(current, (rank + 1) % world_size)
        received[(rank - step - 1) % world_size] = incoming
        current = incoming
    return torch.cat([received[r] for r in range(world_size)])


def all_gather_send_first(chunk, rank, world_size):
    out = torch.empty(world_size * chunk.numel())
    pieces = list(out.chunk(world_size))
    pieces[rank].copy_(chunk)
    for step in range(world_size - 1):
        dist.send(pieces[(rank - step) % world_size], (rank + 1) % world_size)
        dist.recv(pieces[(rank - step - 1) % world_size], (rank - 1) % world_size)
    return out


def all_gather_wrong_position(chunk, rank, world_size):
    out = torch.empty(world_size * chunk.numel())
    pieces = list(out.chunk(world_size))
    pieces[rank].copy_(chunk)
    for step in range(world_size - 1):
        request = dist.isend(pieces[(rank + step) % world_size], dst=(rank + 1) % world_size)
        dist.recv(pieces[(rank + step + 1) % world_size], src=(rank - 1) % world_size)
        request.wait()
    return out


def all_gather_forwards_own_chunk(chunk, rank, world_size):
    out = torch.empty(world_size * chunk.numel())
    pieces = list(out.chunk(world_size))
    pieces[rank].copy_(chunk)
    for step in range(world_size - 1):
        request = dist.isend(chunk, dst=(rank + 1) % world_size)
        dist.recv(pieces[(rank - step - 1) % world_size], src=(rank - 1) % world_size)
        request.wait()
    return out


def all_gather_one_step_short(chunk, rank, world_size):
    out = torch.zeros(world_size * chunk.numel())
    pieces = list(out.chunk(world_size))
    pieces[rank].copy_(chunk)
    for step in range(world_size - 2):
        request = dist.isend(pieces[(rank - step) % world_size], dst=(rank + 1) % world_size)
        dist.recv(pieces[(rank - step - 1) % world_size], src=(rank - 1) % world_size)
        request.wait()
    return out


def all_gather_library(chunk, rank, world_size):
    out = torch.empty(world_size * chunk.numel())
    dist.all_gather_into_tensor(out, chunk)
    return out


@pytest.mark.parametrize("answer", [all_gather_reference, all_gather_even_odd])
def test_ring_all_gather_accepts_correct_answers(answer):
    result = run("ring_all_gather", answer)
    assert result.passed, result.message


@pytest.mark.parametrize(
    "answer, hint",
    [
        (all_gather_wrong_position, "in the wrong place"),
        (all_gather_forwards_own_chunk, "send on the chunk you received"),
        (all_gather_one_step_short, "n - 1 steps"),
        (all_gather_library, "calls dist.all_gather_into_tensor"),
    ],
)
def test_ring_all_gather_rejects_mistakes_with_their_hint(answer, hint):
    result = run("ring_all_gather", answer)
    assert not result.passed
    assert hint in result.message, result.message


def test_a_deadlock_ends_with_a_message(monkeypatch):
    monkeypatch.setattr(ch08_collectives, "RUN_TIMEOUT", 6.0)
    result = run("ring_all_gather", all_gather_send_first)
    assert not result.passed
    assert "a deadlock" in result.message and "dist.isend" in result.message, result.message
    assert "waiting in dist.send" in result.message, result.message


def test_the_checker_process_runs_ranks_and_passes_a_correct_answer():
    result = check("ring_all_gather", all_gather_reference)
    assert result.passed, result.message


# --- ring_all_reduce --------------------------------------------------------------------------


def all_reduce_reference(x, rank, world_size):
    result = x.clone()
    chunks = list(torch.tensor_split(result, world_size))
    right, left = (rank + 1) % world_size, (rank - 1) % world_size
    for step in range(world_size - 1):
        incoming = torch.empty_like(chunks[(rank - step - 1) % world_size])
        request = dist.isend(chunks[(rank - step) % world_size], dst=right)
        dist.recv(incoming, src=left)
        request.wait()
        chunks[(rank - step - 1) % world_size] += incoming
    for step in range(world_size - 1):
        request = dist.isend(chunks[(rank + 1 - step) % world_size], dst=right)
        dist.recv(chunks[(rank - step) % world_size], src=left)
        request.wait()
    return result


def all_reduce_numpy_bounds(x, rank, world_size):
    """Correct differently: chunk bounds computed by hand, irecv, a fresh tensor per chunk."""
    import numpy as np

    bounds = np.linspace(0, len(x), world_size + 1).round().astype(int)
    parts = [x[bounds[i] : bounds[i + 1]].clone() for i in range(world_size)]
    for step in range(world_size - 1):
        send_index, recv_index = (rank - step) % world_size, (rank - step - 1) % world_size
        incoming = torch.empty_like(parts[recv_index])
        receive = dist.irecv(incoming, src=(rank - 1) % world_size)
        send = dist.isend(parts[send_index], dst=(rank + 1) % world_size)
        receive.wait()
        send.wait()
        parts[recv_index] = parts[recv_index] + incoming
    for step in range(world_size - 1):
        send_index, recv_index = (rank + 1 - step) % world_size, (rank - step) % world_size
        incoming = torch.empty_like(parts[recv_index])
        receive = dist.irecv(incoming, src=(rank - 1) % world_size)
        send = dist.isend(parts[send_index], dst=(rank + 1) % world_size)
        receive.wait()
        send.wait()
        parts[recv_index] = incoming
    return torch.cat(parts)


def all_reduce_scatter_only(x, rank, world_size):
    result = x.clone()
    chunks = list(torch.tensor_split(result, world_size))
    for step in range(world_size - 1):
        incoming = torch.empty_like(chunks[(rank - step - 1) % world_size])
        request = dist.isend(chunks[(rank - step) % world_size], dst=(rank + 1) % world_size)
        dist.recv(incoming, src=(rank - 1) % world_size)
        request.wait()
        chunks[(rank - step - 1) % world_size] += incoming
    return result


def all_reduce_split_drops_remainder(x, rank, world_size):
    result = x.clone()
    chunks = list(result.split(len(x) // world_size))
    for step in range(world_size - 1):
        incoming = torch.empty_like(chunks[(rank - step - 1) % world_size])
        request = dist.isend(chunks[(rank - step) % world_size], dst=(rank + 1) % world_size)
        dist.recv(incoming, src=(rank - 1) % world_size)
        request.wait()
        chunks[(rank - step - 1) % world_size] += incoming
    for step in range(world_size - 1):
        request = dist.isend(chunks[(rank + 1 - step) % world_size], dst=(rank + 1) % world_size)
        dist.recv(chunks[(rank - step) % world_size], src=(rank - 1) % world_size)
        request.wait()
    return result


def all_reduce_overwrites(x, rank, world_size):
    result = x.clone()
    chunks = list(torch.tensor_split(result, world_size))
    for step in range(world_size - 1):
        request = dist.isend(chunks[(rank - step) % world_size], dst=(rank + 1) % world_size)
        dist.recv(chunks[(rank - step - 1) % world_size], src=(rank - 1) % world_size)
        request.wait()
    for step in range(world_size - 1):
        request = dist.isend(chunks[(rank + 1 - step) % world_size], dst=(rank + 1) % world_size)
        dist.recv(chunks[(rank - step) % world_size], src=(rank - 1) % world_size)
        request.wait()
    return result


def all_reduce_mean(x, rank, world_size):
    return all_reduce_reference(x, rank, world_size) / world_size


def all_reduce_even_chunks(x, rank, world_size):
    """Equal-sized receive buffers: wrong when the length is not a multiple of world_size."""
    result = x.clone()
    chunks = list(torch.tensor_split(result, world_size))
    size = len(x) // world_size
    for step in range(world_size - 1):
        incoming = torch.empty(size)
        request = dist.isend(chunks[(rank - step) % world_size], dst=(rank + 1) % world_size)
        dist.recv(incoming, src=(rank - 1) % world_size)
        request.wait()
        chunks[(rank - step - 1) % world_size] += incoming
    return result


def all_reduce_tuple_of_chunks(x, rank, world_size):
    result = x.clone()
    chunks = torch.tensor_split(result, world_size)  # a tuple
    incoming = torch.empty_like(chunks[(rank - 1) % world_size])
    request = dist.isend(chunks[rank], dst=(rank + 1) % world_size)
    dist.recv(incoming, src=(rank - 1) % world_size)
    request.wait()
    chunks[(rank - 1) % world_size] += incoming
    return result


def not_attempted(x, rank, world_size):
    raise NotImplementedError()


@pytest.mark.parametrize("answer", [all_reduce_reference, all_reduce_numpy_bounds])
def test_ring_all_reduce_accepts_correct_answers(answer):
    result = run("ring_all_reduce", answer)
    assert result.passed, result.message


@pytest.mark.parametrize(
    "answer, hint",
    [
        (all_reduce_scatter_only, "Finish with an all-gather"),
        (all_reduce_split_drops_remainder, "torch.tensor_split(x, world_size)"),
        (all_reduce_overwrites, "you overwrote instead of adding"),
        (all_reduce_mean, "you returned the mean"),
        (all_reduce_even_chunks, "agree on each chunk's size"),
        (all_reduce_tuple_of_chunks, "returns a tuple"),
    ],
)
def test_ring_all_reduce_rejects_mistakes_with_their_hint(answer, hint):
    result = run("ring_all_reduce", answer)
    assert not result.passed
    assert hint in result.message, result.message


def test_a_stub_is_not_attempted():
    result = run("ring_all_reduce", not_attempted)
    assert not result.attempted and "not attempted yet" in result.message


def test_a_function_with_the_wrong_arguments_is_told_so():
    result = run("ring_all_reduce", lambda x: x)
    assert "(x, rank, world_size)" in result.message


def test_the_check_time_limit_is_the_rank_harness_s():
    from gpu_utils.exercises import _ranks

    limit = _ranks.check_time_limit(ch08_collectives.WORLD_SIZES)
    for exercise_id in ("ring_all_gather", "ring_all_reduce"):
        assert gu.exercises.get(exercise_id).time_limit == limit


# --- cost model -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "exercise_id, right, wrong, hint",
    [
        # 2 * 1024 * 16384 bytes * 7/8 / 450e9 B/s (How to Scale Your Model, GPU pop quiz 1)
        ("allgather_node_time", 65.24, 74.56, "(n - 1)/n of S"),
        ("allgather_node_time", 65.24, 32.62, "counts both directions"),
        ("allgather_node_time", 65.24, 8.155, "not one GPU's shard"),
        # 2 * 14e9 * 15/16 / (8 * 50e9) = 65.6 ms; NVLink level: 2 * 14e9 * 7/8 / 450e9
        ("allreduce_cluster_time", 65.63, 525.0, "own network card"),
        ("allreduce_cluster_time", 65.63, 54.44, "the slower level sets the time"),
        ("allreduce_cluster_time", 65.63, 32.81, "reduce-scatter plus an all-gather"),
        ("busbw_from_algbw", 315.0, 157.5, "all-gather's factor"),
        ("busbw_from_algbw", 315.0, 180.0, "busbw multiplies algbw"),
        ("busbw_from_algbw", 315.0, 360.0, "not 2"),
        # 3 (alpha + S beta) = 14 alpha + 1.75 S beta  =>  S = 8.8 alpha / beta = 4.4 MB
        ("ring_tree_crossover", 4.4, 4.0, "compare the two algorithms' whole times"),
        ("ring_tree_crossover", 4.4, 1.6, "2(n - 1) steps"),
        ("ring_tree_crossover", 4.4, 2.0, "solve for S"),
        # ring 14 alpha + 1.75 S beta = 175 us; Rabenseifner 6 alpha + 1.75 S beta = 95 us
        ("rabenseifner_speedup", 175 / 95, 175 / 65, "log2(n) steps twice"),
        ("rabenseifner_speedup", 175 / 95, 175 / 90, "moves the whole array at every step"),
        ("rabenseifner_speedup", 175 / 95, 95 / 175, "how many times faster"),
    ],
)
def test_cost_model_questions(exercise_id, right, wrong, hint):
    assert run(exercise_id, lambda: right).passed
    result = run(exercise_id, lambda: wrong)
    assert not result.passed and hint in result.message, result.message


def test_cost_model_answers_agree_with_the_cost_model():
    c = gu.collectives
    node = c.estimate_time("all_gather", 1024 * 16384 * 2, 8) * 1e6
    assert run("allgather_node_time", lambda: node).passed
    cluster = c.estimate_time("all_reduce", 14e9, 128) * 1e3
    assert run("allreduce_cluster_time", lambda: cluster).passed


# --- odd results and stuck rings: every path ends in a message ---------------------


def gather_returns_list(chunk, rank, world_size):
    return [chunk] * world_size


def gather_none_on_rank_one(chunk, rank, world_size):
    result = all_gather_reference(chunk, rank, world_size)
    return None if rank == 1 else result


def gather_wrong_shape(chunk, rank, world_size):
    return all_gather_reference(chunk, rank, world_size).reshape(world_size, -1)


def gather_complex(chunk, rank, world_size):
    return all_gather_reference(chunk, rank, world_size).to(torch.complex64)


def reduce_wrong_shape(x, rank, world_size):
    return all_reduce_reference(x, rank, world_size)[:-1]


@pytest.mark.parametrize(
    "exercise_id, answer, words",
    [
        ("ring_all_gather", gather_returns_list, "returned a list on rank 0"),
        ("ring_all_gather", gather_none_on_rank_one, "returned None on rank 1"),
        ("ring_all_gather", gather_wrong_shape, "instead of"),
        ("ring_all_gather", gather_complex, "tensor of dtype complex64"),
        ("ring_all_reduce", reduce_wrong_shape, "instead of"),
    ],
)
def test_odd_results_get_a_message_not_a_traceback(exercise_id, answer, words):
    result = run(exercise_id, answer)
    assert not result.passed
    assert words in result.message, result.message
    assert "Traceback" not in result.message and "checker itself failed" not in result.message


def gather_receives_from_the_right(chunk, rank, world_size):
    out = torch.empty(world_size * chunk.numel())
    pieces = list(out.chunk(world_size))
    pieces[rank].copy_(chunk)
    for step in range(world_size - 1):
        request = dist.isend(pieces[(rank - step) % world_size], dst=(rank + 1) % world_size)
        dist.recv(pieces[(rank - step - 1) % world_size], src=(rank + 1) % world_size)
        request.wait()
    return out


def gather_loop_never_advances(chunk, rank, world_size):
    out = torch.empty(world_size * chunk.numel())
    pieces = list(out.chunk(world_size))
    pieces[rank].copy_(chunk)
    step = 0
    while step < world_size - 1:
        request = dist.isend(pieces[(rank - step) % world_size], dst=(rank + 1) % world_size)
        dist.recv(pieces[(rank - step - 1) % world_size], src=(rank - 1) % world_size)
        request.wait()
    return out


def gather_rank_zero_returns_early(chunk, rank, world_size):
    if rank == 0:
        return torch.cat([chunk] * world_size)
    return all_gather_reference(chunk, rank, world_size)


@pytest.mark.parametrize(
    "answer, words, not_words",
    [
        (gather_receives_from_the_right, "none was sending", "every rank sends first"),
        # a live loop (the ranks keep exchanging) or, stopped at a wait, the loop around it
        (
            gather_loop_never_advances,
            ("inside the loop", "never ends on rank"),
            "every rank sends first",
        ),
        (gather_rank_zero_returns_early, "already returned", "crashed"),
    ],
)
def test_stuck_rings_are_told_apart(monkeypatch, answer, words, not_words):
    monkeypatch.setattr(ch08_collectives, "RUN_TIMEOUT", 6.0)
    result = run("ring_all_gather", answer)
    assert not result.passed
    words = (words,) if isinstance(words, str) else words
    assert any(word in result.message for word in words), result.message
    assert not_words not in result.message, result.message


# --- the rank harness: loops and deadlocks within 20 s, told apart ---------------------------------


def gather_loops_on_rank_one(chunk, rank, world_size):
    while rank == 1:
        chunk = chunk + 0
    return all_gather_reference(chunk, rank, world_size)


def gather_both_receive_first(chunk, rank, world_size):
    out = torch.empty(world_size * chunk.numel())
    pieces = list(out.chunk(world_size))
    pieces[rank].copy_(chunk)
    for step in range(world_size - 1):
        dist.recv(pieces[(rank - step - 1) % world_size], src=(rank - 1) % world_size)
        dist.send(pieces[(rank - step) % world_size], dst=(rank + 1) % world_size)
    return out


def _line_of(function, text):
    lines, first = inspect.getsourcelines(function)
    return first + next(i for i, line in enumerate(lines) if text in line)


def _timed_check(answer):
    """The verdict through the checker's process, as in a lab, once that process and its ranks'
    launcher are running (a first check starts them); seconds it took."""
    assert check("ring_all_gather", all_gather_reference).passed
    start = time.perf_counter()
    result = check("ring_all_gather", answer)
    return result, time.perf_counter() - start


def _within_the_promise(seconds):
    from gpu_utils.exercises import _ranks

    # the promise holds on a machine not busy with other work (as in tests/answer_tables.py)
    busy = max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))
    assert seconds < _ranks.VERDICT_WITHIN * busy, f"the verdict took {seconds:.1f} s"


def test_a_looping_rank_is_stopped_by_its_processor_time_and_named_with_its_line():
    result, seconds = _timed_check(gather_loops_on_rank_one)
    line = _line_of(gather_loops_on_rank_one, "while rank == 1")
    assert not result.passed
    assert "rank 1 was still running your code after" in result.message, result.message
    assert "s of processor time" in result.message, result.message
    assert f"`while` loop on line {line} (`while rank == 1:`)" in result.message, result.message
    # rank 0 is said to wait in a collective only when it got there before rank 1 was stopped
    # (on a busy machine it may still be starting: the clean-clone run of this stop saw that)
    if "Rank 0" in result.message:
        assert "Rank 0 waited in a collective meanwhile: no deadlock" in result.message
    _within_the_promise(seconds)


def test_a_deadlocked_pair_is_stopped_when_both_sleep_with_the_line_each_waits_at():
    result, seconds = _timed_check(gather_both_receive_first)
    line = _line_of(gather_both_receive_first, "dist.recv(")
    assert not result.passed
    assert "no rank was using the processor any more" in result.message, result.message
    assert "(a deadlock)" in result.message and "none was sending" in result.message
    for rank in (0, 1):
        where = f"rank {rank}: waiting in dist.recv, called from gather_both_receive_first"
        assert f"{where} (line {line})" in result.message, result.message
    _within_the_promise(seconds)


def test_a_loop_around_send_and_recv_is_not_called_a_deadlock():
    result = run("ring_all_gather", gather_loop_never_advances)
    line = _line_of(gather_loop_never_advances, "while step <")
    # stopped in a send or receive ("kept calling dist.recv") or in request.wait() (C++: the
    # learner's own line), as it happens: busy either way, which a deadlocked rank is not
    assert "s of processor time" in result.message, result.message
    assert "deadlock" not in result.message.replace("not a deadlock", ""), result.message
    assert f"the `while` loop on line {line}" in result.message and "`step`" in result.message


def test_the_limits_keep_the_20_s_promise():
    """Loops are stopped by processor time, deadlocks once every rank sleeps, the rest by the
    clock; a retry (only for a busy machine) and the stack dumps' waits stay within 20 s."""
    from gpu_utils.exercises import _ranks
    from gpu_utils.many_gpus import _dist_launcher

    dump = _dist_launcher.DUMP_WAIT
    assert _ranks.CPU_LIMIT * 4 < _ranks.VERDICT_WITHIN  # a loop gets >= 1/4 core on 2 cores
    assert _ranks.IDLE_LIMIT + dump < _ranks.VERDICT_WITHIN / 4
    assert _ranks.RUN_TIMEOUT + dump + _ranks.SLOW_TIMEOUT + dump < _ranks.VERDICT_WITHIN


def test_a_retry_only_when_the_machine_was_slow():
    from gpu_utils.exercises._ranks import machine_was_slow

    def stopped(reason="clock", cpu=0.05, queued=3.0, where="waiting in dist.recv"):
        error = gu.dist.RankTimeout(
            [0, 1], 5.0, {0: where, 1: where}, {0: cpu, 1: cpu}, 1.5, reason=reason
        )
        error.queued = {0: queued, 1: 0.1}
        return error

    assert machine_was_slow(stopped())  # little processor time, long waits for one
    assert not machine_was_slow(stopped(queued=0.1))  # a processor was there: not the machine
    assert not machine_was_slow(stopped(cpu=0.9))  # more work than a correct answer needs
    assert not machine_was_slow(stopped(reason="idle"))  # all asleep: a deadlock
    assert not machine_was_slow(stopped(reason="loop", cpu=1.6))
    assert machine_was_slow(stopped(where="had not reached your function yet", queued=0.0))


def test_ranks_busy_in_a_collective_at_the_clock_are_a_loop_and_idle_ones_a_deadlock():
    """Stopped by the clock in dist.recv: a rank that kept using the processor in its last
    seconds was calling it in a loop; ranks that used none were waiting (a deadlock)."""
    from gpu_utils.exercises._ranks import timeout_result

    line = _line_of(gather_loop_never_advances, "dist.recv(")
    where = f"waiting in dist.recv, called from gather_loop_never_advances (line {line})"

    def stopped(recent):
        return gu.dist.RankTimeout(
            [0, 1],
            5.0,
            {0: where, 1: where},
            {0: 0.8, 1: 0.8},
            1.5,
            reason="clock",
            recent_cpu={0: recent, 1: recent},
            queued={0: 0.1, 1: 0.1},
        )

    busy = timeout_result("ring_all_gather", 2, stopped(0.4), gather_loop_never_advances, "hint")
    assert "kept calling dist.recv" in busy.message and "not a deadlock" in busy.message
    assert "`while step < world_size - 1:`" in busy.message, busy.message
    idle = timeout_result("ring_all_gather", 2, stopped(0.0), gather_loop_never_advances, "hint")
    assert "(a deadlock)" in idle.message and "kept calling" not in idle.message, idle.message
