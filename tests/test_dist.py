"""gu.dist: real multi-process runs that return results, stream prints, name the failing rank,
end deadlocks at the timeout, and leave no processes behind."""

import os
import time

import pytest
import torch
import torch.distributed as dist

import gpu_utils as gu
from gpu_utils.many_gpus import dist as gu_dist


def all_reduce_rank(rank, world_size, offset):
    tensor = torch.tensor([float(rank + offset)])
    dist.all_reduce(tensor)
    return rank, world_size, tensor.item(), os.getpid()


@pytest.mark.parametrize("world_size", [2, 3, 4])
def test_each_rank_runs_and_returns_its_result(world_size):
    results = gu.dist.run(all_reduce_rank, world_size, 10)
    expected_sum = sum(r + 10 for r in range(world_size))
    assert [r[:3] for r in results] == [(r, world_size, expected_sum) for r in range(world_size)]
    assert len({r[3] for r in results}) == world_size  # separate processes


def test_results_come_back_as_cpu_tensors_and_lambdas_work():
    results = gu.dist.run(lambda rank, world_size: torch.arange(3) * rank, 2)
    assert torch.equal(results[1], torch.tensor([0, 1, 2]))


def test_prints_stream_with_the_rank_in_front(capsys):
    def talk(rank, world_size):
        import sys

        print(f"hello from {rank}")
        print("no newline at the end", end="")
        print(f"warning {rank}", file=sys.stderr)

    gu.dist.run(talk, 2)
    captured = capsys.readouterr()
    for rank in (0, 1):
        assert f"[rank {rank}] hello from {rank}\n" in captured.out
        assert f"[rank {rank}] warning {rank}\n" in captured.err
    assert captured.out.count("[rank 0] no newline at the end") == 1


def raises_in_rank_one(rank, world_size):
    if rank == 1:
        raise ValueError("bad input on rank 1")
    buffer = torch.zeros(1)
    dist.recv(buffer, src=1)  # would wait for ever: rank 1 never sends


def test_an_exception_in_one_rank_is_one_error_naming_it():
    start = time.monotonic()
    with pytest.raises(gu.dist.RankError) as caught:
        gu.dist.run(raises_in_rank_one, 3, timeout=30)
    error = caught.value
    assert error.rank == 1 and error.exc_type == "ValueError"
    assert str(error).startswith("rank 1 raised ValueError: bad input on rank 1")
    assert "ranks 0 and 2 were stopped" in str(error)
    assert error.frames[-1][2] == "raises_in_rank_one"
    assert 'raise ValueError("bad input on rank 1")' in error.traceback()
    assert time.monotonic() - start < 15  # the others were stopped, not waited for


def mismatched_collectives(rank, world_size, pid_folder):
    (pid_folder / f"{rank}.pid").write_text(str(os.getpid()))
    tensor = torch.ones(4)
    if rank == 0:
        dist.all_reduce(tensor)  # rank 0 joins a collective that rank 1 never calls
    else:
        dist.recv(tensor, src=0)


def test_a_deadlock_ends_at_the_timeout_with_the_stuck_ranks(tmp_path):
    start = time.monotonic()
    with pytest.raises(gu.dist.RankTimeout) as caught:
        gu.dist.run(mismatched_collectives, 2, tmp_path, timeout=2)
    elapsed = time.monotonic() - start
    assert 2 <= elapsed < 10
    error = caught.value
    assert error.stuck == [0, 1]
    assert "waiting in dist.all_reduce" in error.where[0]
    assert "waiting in dist.recv, called from mismatched_collectives" in error.where[1]
    assert "ranks 0 and 1 were still running after 2 s" in str(error)
    for rank in (0, 1):  # the stuck ranks are gone, not left running
        pid = int((tmp_path / f"{rank}.pid").read_text())
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def done_but_slow_to_leave(rank, world_size):
    if rank == 1:
        raise ValueError("rank 1 fails")
    dist.destroy_process_group = lambda: time.sleep(60)  # the rank's teardown now hangs
    return rank


def test_a_rank_that_finished_is_not_reported_as_stopped():
    with pytest.raises(gu.dist.RankError) as caught:
        gu.dist.run(done_but_slow_to_leave, 3, timeout=30)
    assert str(caught.value) == "rank 1 raised ValueError: rank 1 fails"


def test_the_stack_dumps_of_stuck_ranks_are_awaited(tmp_path, monkeypatch):
    """On a busy machine a stuck rank may write where it waits well after the signal."""
    from gpu_utils.many_gpus import _dist_launcher

    monkeypatch.setattr(_dist_launcher, "DUMP_WAIT", 0.5)
    run = _dist_launcher._Run.__new__(_dist_launcher._Run)
    run.run_dir = str(tmp_path)
    ranks = [_dist_launcher._Rank(0, 0, {})]
    start = time.monotonic()
    run._wait_for_stack_dumps(ranks)  # no dump at all: gives up after DUMP_WAIT
    assert 0.5 <= time.monotonic() - start < 2
    (tmp_path / "rank0.stack").write_text('  File "x.py", line 1 in f\n')
    start = time.monotonic()
    run._wait_for_stack_dumps(ranks)  # a complete dump: done once it stops growing
    assert time.monotonic() - start < 0.45


def test_a_crashed_rank_is_named():
    def crash(rank, world_size):
        if rank == 1:
            os._exit(3)
        dist.barrier()

    with pytest.raises(gu.dist.RankError) as caught:
        gu.dist.run(crash, 2, timeout=20)
    assert caught.value.rank == 1 and caught.value.exc_type == "exited"
    assert "exited with code 3" in str(caught.value)


def test_a_crashed_rank_reports_the_error_torch_distributed_logged():
    """A rank that dies right after c10d logs an error (glog's [E...] format, which gu.dist
    keeps out of the notebook) is reported with that line: it is what explains the crash."""
    logged = "[E1126 11:22:33.444555 123 ProcessGroupGloo.cpp:143] Gloo connectFullMesh failed"

    def crash(rank, world_size):
        import sys

        if rank == 1:
            print("[W1126 11:22:33.000000 123 socket.cpp:1] a warning first", file=sys.stderr)
            print(logged, file=sys.stderr, flush=True)
            os._exit(3)
        dist.barrier()

    with pytest.raises(gu.dist.RankError) as caught:
        gu.dist.run(crash, 2, timeout=20)
    assert caught.value.exc_type == "exited" and caught.value.last_output == logged
    assert any(logged in line for line in gu.dist.log())


def test_gloo_s_abort_is_quoted_in_the_error_not_printed(capsys):
    """gloo aborts a rank whose collective does not match (C++'s 'terminate called ...' and
    'what(): ...'): the error quotes what it said; the notebook's cell does not show it."""
    what = (
        "  what():  [enforce fail at pair.cc:456] Received data size doesn't match expected size."
    )

    def aborts(rank, world_size):
        import sys

        if rank == 1:
            print(
                "terminate called after throwing an instance of 'gloo::EnforceNotMet'",
                file=sys.stderr,
            )
            print(what, file=sys.stderr, flush=True)
            os._exit(134)
        dist.barrier()

    with pytest.raises(gu.dist.RankError) as caught:
        gu.dist.run(aborts, 2, timeout=20)
    assert caught.value.last_output == what.strip()
    printed = capsys.readouterr()
    assert "terminate called" not in printed.err + printed.out and "what()" not in printed.err
    assert any("what():" in line for line in gu.dist.log())


def test_no_rank_outlives_its_run():
    pids = [r[3] for r in gu.dist.run(all_reduce_rank, 3, 0)]
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


def test_ranks_can_also_be_fresh_interpreters(monkeypatch):
    """The start used where fork is not available (macOS, Windows)."""
    monkeypatch.setattr(gu_dist, "_START", "exec")
    results = gu.dist.run(all_reduce_rank, 2, 1, timeout=120)
    assert [r[2] for r in results] == [3.0, 3.0]


@pytest.mark.parametrize(
    "call, text",
    [
        (lambda: gu.dist.run(all_reduce_rank, 0), "positive integer"),
        (lambda: gu.dist.run("not a function", 2), "fn must be a function"),
        (lambda: gu.dist.run(all_reduce_rank, 2, backend="mpi"), "use 'auto', 'gloo' or 'nccl'"),
        (lambda: gu.dist.run(all_reduce_rank, 2, timeout=0), "timeout must be positive"),
    ],
)
def test_bad_arguments_say_what_to_do(call, text):
    with pytest.raises((ValueError, TypeError), match=text):
        call()


@pytest.mark.skipif(gu.mode == "gpu", reason="on a GPU machine NCCL may be available")
def test_nccl_without_a_gpu_per_rank_is_refused_with_advice():
    with pytest.raises(ValueError, match="one GPU per rank"):
        gu.dist.run(all_reduce_rank, 2, 0, backend="nccl")
    assert gu.dist.choose_backend(2) == ("gloo", None)


def test_inside_a_rank_device_is_the_cpu_with_gloo():
    assert gu.dist.run(lambda rank, world_size: str(gu.dist.device()), 2, backend="gloo") == [
        "cpu",
        "cpu",
    ]


def test_where_a_stuck_rank_waits_is_read_from_its_stack_dump():
    dump = (
        "Thread 0x0001 (most recent call first):\n"
        '  File "/x/site-packages/torch/distributed/distributed_c10d.py", line 10 in recv\n'
        '  File "/x/site-packages/torch/distributed/c10d_logger.py", line 5 in wrapper\n'
        '  File "/tmp/ipykernel_1/123.py", line 7 in ring\n'
        '  File "/work/gpu_utils/many_gpus/_dist_launcher.py", line 80 in _call_fn\n'
    )
    assert gu_dist._where(dump) == "waiting in dist.recv, called from ring (line 7)"
    assert "still starting up" in gu_dist._where('  File "/x/a.py", line 1 in <module>\n')


def test_shutdown_ends_the_launcher():
    gu.dist.run(all_reduce_rank, 2, 0)
    launcher = gu_dist._launcher.process
    gu.dist.shutdown()
    assert launcher.poll() is not None and gu_dist._launcher is None


@pytest.mark.gpu
def test_nccl_with_one_gpu_per_rank():
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs: NCCL refuses two ranks on one GPU")

    def total(rank, world_size):
        tensor = torch.ones(4, device=gu.dist.device()) * (rank + 1)
        dist.all_reduce(tensor)
        return dist.get_backend(), tensor

    results = gu.dist.run(total, 2, backend="nccl")
    assert results[0][0] == "nccl" and torch.equal(results[1][1], torch.full((4,), 3.0))


def loops_on_rank_one(rank, world_size):
    tensor = torch.ones(1)
    while rank == 1:
        tensor = tensor + 1
    dist.all_reduce(tensor)
    return rank


def test_a_rank_that_loops_is_stopped_by_its_processor_time_and_named_with_its_line():
    start = time.monotonic()
    with pytest.raises(gu.dist.RankTimeout) as caught:
        gu.dist.run(loops_on_rank_one, 2, timeout=60, cpu_limit=1.0)
    assert time.monotonic() - start < 30  # not the 60 s of the wall-clock timeout
    error = caught.value
    assert error.looping == [1] and error.cpu[1] > 1.0
    assert error.where[1].startswith("at loops_on_rank_one (line ")
    assert "waiting in dist.all_reduce" in error.where[0]  # waiting for rank 1: no loop
    assert "rank 1 was busy for more than 1 s of processor time" in str(error)


def test_gloo_and_c10d_log_lines_are_kept_not_printed(capsys):
    def logs(rank, world_size):
        import sys

        print(f"[Gloo] Rank {rank} is connected to 1 peer ranks. Expected number of connected")
        print("[W1126 08:00:00.000000000 socket.cpp:200] [c10d] a warning", file=sys.stderr)
        print(f"mine {rank}")
        return rank

    assert gu.dist.run(logs, 2) == [0, 1]
    printed = capsys.readouterr()
    assert "[Gloo]" not in printed.out + printed.err and "c10d" not in printed.out + printed.err
    assert "[rank 0] mine 0" in printed.out
    assert any("[Gloo] Rank 1 is connected" in line for line in gu.dist.log())


def test_where_names_the_learners_line_never_the_course_s_private_frames():
    course = os.path.dirname(gu_dist.__file__)
    stack = (
        f'  File "{course}/exercises/ch10_model_parallel.py", line 88 in _all_agree\n'
        '  File "/tmp/ipykernel_1/2.py", line 4 in answer\n'
        f'  File "{course}/exercises/ch10_model_parallel.py", line 120 in _layer_rank\n'
        f'  File "{course}/_dist_launcher.py", line 80 in _call_fn\n'
    )
    assert gu_dist._where(stack) == "at answer (line 4)"
    inside = '  File "/x/site-packages/torch/distributed/c10d.py", line 9 in all_reduce\n'
    checker_only = inside + stack.replace('  File "/tmp/ipykernel_1/2.py", line 4 in answer\n', "")
    assert gu_dist._where(checker_only) == "waiting in dist.all_reduce, outside your function"


def wait_for_each_other(rank, world_size):
    dist.recv(torch.empty(1), src=1 - rank)  # both ranks receive first: neither ever sends


def all_reduce_for_ever(rank, world_size):
    tensor = torch.ones(4)
    while True:
        dist.all_reduce(tensor)


def test_ranks_that_all_sleep_are_stopped_as_a_deadlock_long_before_the_timeout():
    start = time.monotonic()
    with pytest.raises(gu.dist.RankTimeout) as caught:
        gu.dist.run(wait_for_each_other, 2, timeout=60, cpu_limit=1.5, idle_limit=1.0)
    assert time.monotonic() - start < 30  # not the 60 s of the timeout
    error = caught.value
    assert error.reason == "idle" and not error.looping and 1.0 <= error.elapsed < 30
    for rank in (0, 1):
        assert "waiting in dist.recv, called from wait_for_each_other" in error.where[rank]
        assert error.recent_cpu[rank] is not None and error.recent_cpu[rank] <= 0.02
    assert "none using the processor" in str(error)


def test_a_loop_around_a_collective_is_a_loop_not_a_deadlock():
    with pytest.raises(gu.dist.RankTimeout) as caught:
        gu.dist.run(all_reduce_for_ever, 2, timeout=60, cpu_limit=1.0, idle_limit=1.0)
    error = caught.value
    # waiting in dist.all_reduce when stopped, as a deadlocked rank would be, but busy
    assert error.reason == "loop" and error.looping, (error.reason, error.cpu)
    assert all(
        "dist.all_reduce, called from all_reduce_for_ever" in w for w in error.where.values()
    )


def test_limits_must_be_positive_seconds():
    with pytest.raises(ValueError, match="idle_limit must be a positive"):
        gu.dist.run(all_reduce_rank, 2, 0, idle_limit=0)


def _loaded_when_called(rank, world_size, parts):
    import sys

    return ".".join(parts) in sys.modules  # the name never appears whole in the pickled call


def test_the_course_modules_the_notebook_imported_are_in_every_forked_rank_at_once(monkeypatch):
    """A function that reaches ``gu.<module>`` through ``gu`` finds it imported: the launcher
    imported what the notebook had (once), instead of every rank importing it on the clock."""
    import gpu_utils.many_gpus.pipeline  # noqa: F401 - the notebook has it

    monkeypatch.setattr(gu_dist, "_START", "fork")
    gu.dist.shutdown()  # a fresh launcher, which has imported nothing of the course yet
    assert "gpu_utils.many_gpus.pipeline" in gu_dist._loaded_course_modules()
    assert gu.dist.run(_loaded_when_called, 2, ("gpu_utils", "many_gpus", "pipeline")) == [
        True,
        True,
    ]
    assert gu.dist.run(_loaded_when_called, 1, ("gpu_utils", "no_such_module")) == [False]
