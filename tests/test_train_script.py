"""gu.train_script (chapter 11): each rank reads its own shard of the data, as PyTorch's
DistributedSampler shards it, resumably; N ranks train like one process with N times the batch;
on a GPU each process binds its own device."""

import pytest
import torch

import gpu_utils as gu
from gpu_utils.many_gpus import train_script

DATA = torch.arange(1000)  # distinct "tokens", so a window is known by its content: 124 of 8


def _windows(x):
    return {tuple(row.tolist()) for row in x}


@pytest.mark.parametrize("world_size", [2, 3])
def test_shards_are_disjoint_and_together_are_one_process_batch(world_size):
    b = 4
    ranks = [
        train_script.ShardedWindows(DATA, 8, b, r, world_size, seed=1) for r in range(world_size)
    ]
    one = train_script.ShardedWindows(DATA, 8, world_size * b, 0, 1, seed=1)
    assert one.steps_per_epoch == ranks[0].steps_per_epoch == 124 // (world_size * b)
    seen = set()
    for step in range(2 * one.steps_per_epoch):  # two epochs
        parts = [s.batch(step) for s in ranks]
        xs = [_windows(x) for x, _ in parts]
        assert all(len(x) == b for x in xs)
        together = set().union(*xs)
        assert len(together) == world_size * b  # disjoint
        assert together == _windows(one.batch(step)[0])  # the same windows as one process
        for x, y in parts:
            assert torch.equal(x[:, 1:], y[:, :-1])  # targets shifted by one
        if step < one.steps_per_epoch:
            assert not seen & together  # no window twice within an epoch
            seen |= together
    # the next epoch is a new order of the same windows
    first = [tuple(ranks[0].indices(s).tolist()) for s in range(ranks[0].steps_per_epoch)]
    epoch = ranks[0].steps_per_epoch
    second = [tuple(ranks[0].indices(epoch + s).tolist()) for s in range(epoch)]
    assert first != second


def test_resuming_reads_what_an_uninterrupted_run_reads():
    run = train_script.ShardedWindows(DATA, 8, 4, 1, 2, seed=3)
    batches = iter(run)
    straight = [next(batches) for _ in range(30)]  # crosses an epoch boundary (15 steps each)
    resumed = train_script.ShardedWindows(DATA, 8, 4, 1, 2, seed=3)
    resumed.load_state_dict({"step": 17})
    again = iter(resumed)
    for k in range(17, 30):
        x, y = next(again)
        assert torch.equal(x, straight[k][0]) and torch.equal(y, straight[k][1])
    assert resumed.state_dict() == {"step": 30}


def test_sharding_refuses_what_cannot_be_split():
    with pytest.raises(ValueError, match="rank"):
        train_script.ShardedWindows(DATA, 8, 4, 2, 2)
    with pytest.raises(ValueError, match="fewer than one step"):
        train_script.ShardedWindows(DATA, 8, 64, 0, 2)


def test_two_gloo_ranks_on_their_shards_train_like_one_process():
    config = train_script.Config(steps=3, batch_size=4)
    ranks = gu.dist.run(train_script.train, 2, config, backend="gloo", timeout=240)
    assert ranks[0]["checksum"] == ranks[1]["checksum"]
    one = train_script.train(0, 1, train_script.Config(steps=3, batch_size=8))
    assert ranks[0]["losses"] == pytest.approx(one["losses"], abs=1e-4)
    assert ranks[0]["checksum"] == pytest.approx(one["checksum"], rel=1e-5)


def test_each_gpu_process_binds_its_own_device(monkeypatch):
    chosen = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    monkeypatch.setattr(torch.cuda, "set_device", chosen.append)
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert train_script._device() == torch.device("cuda", 1) and chosen == [1]
