"""gu.tensor_parallel (chapter 10): a tensor-parallel (and sequence-parallel) transformer layer on
real gloo ranks computes what the whole layer computes in one process (the oracle: gu.gpt's own
layer, forward and backward), with the collectives Megatron-LM's Fig. 3 and Korthikanti's Fig. 5
prescribe, also when the ranks do not divide the heads. Sequence parallelism needs a sequence the
ranks divide (equal pieces, as Megatron-LM requires)."""

import pytest
import torch
import torch.distributed as dist

import gpu_utils as gu
from gpu_utils.many_gpus import tensor_parallel as tp

D_MODEL, N_HEADS, BATCH = 48, 6, 2


def _layer_and_data(seq):
    model = gu.gpt.build(seed=0, d_model=D_MODEL, n_heads=N_HEADS, n_layers=1, seq_len=16)
    block = model.blocks[0]
    g = torch.Generator().manual_seed(1)
    x = torch.randn(BATCH, seq, D_MODEL, generator=g, requires_grad=True)
    grad_out = torch.randn(BATCH, seq, D_MODEL, generator=g)
    out = block(x)
    out.backward(grad_out)
    return block, x, grad_out, out.detach()


def _rank_of_a_layer(rank, world_size, seq, sequence_parallel):
    block, x, grad_out, full = _layer_and_data(seq)
    mine = tp.ParallelBlock(block, rank, world_size, sequence_parallel=sequence_parallel)
    piece = tp.shard(seq, rank, world_size) if sequence_parallel else slice(None)
    x_mine = x.detach()[:, piece].clone().requires_grad_()
    with tp.count_collectives() as counter:
        out = mine(x_mine)
        out.backward(grad_out[:, piece])
    if sequence_parallel:
        for p in mine.replicated_parameters():  # partial sums over this rank's tokens
            dist.all_reduce(p.grad)
    rows = tp.shard(4 * D_MODEL, rank, world_size)
    heads = tp.shard(N_HEADS, rank, world_size)
    head_dim = D_MODEL // N_HEADS
    cols = slice(heads.start * head_dim, heads.stop * head_dim)
    pairs = {
        "output": (out, full[:, piece]),
        "grad of input": (x_mine.grad, x.grad[:, piece]),
        "fc1 rows": (mine.mlp.w1.grad, block.mlp.fc1.weight.grad[rows]),
        "fc2 columns": (mine.mlp.w2.grad, block.mlp.fc2.weight.grad[:, rows]),
        "fc2 bias": (mine.mlp.b2.grad, block.mlp.fc2.bias.grad),
        "proj columns": (mine.attn.wo.grad, block.attn.proj.weight.grad[:, cols]),
        "layer norm": (mine.ln1.weight.grad, block.ln1.weight.grad),
    }
    worst = {name: float((a - b).abs().max()) for name, (a, b) in pairs.items()}
    return {"worst": worst, "calls": counter.calls}


@pytest.mark.parametrize("world_size", [2, 3, 4])
def test_a_tensor_parallel_layer_equals_the_whole_layer(world_size):
    results = gu.dist.run(_rank_of_a_layer, world_size, 8, False, backend="gloo", timeout=60)
    for rank, result in enumerate(results):
        assert max(result["worst"].values()) < 1e-5, (rank, result["worst"])
        names = [(name, phase) for name, _, phase in result["calls"]]
        # f and g: one all-reduce forward per sublayer (attention, MLP), one backward each
        assert names.count(("all_reduce", "forward")) == 2, names
        assert names.count(("all_reduce", "backward")) == 2, names
        assert len(names) == 4, names


@pytest.mark.parametrize("world_size, seq", [(2, 8), (3, 9)])
def test_a_sequence_parallel_layer_equals_the_whole_layer(world_size, seq):
    results = gu.dist.run(_rank_of_a_layer, world_size, seq, True, backend="gloo", timeout=60)
    for rank, result in enumerate(results):
        assert max(result["worst"].values()) < 1e-5, (rank, result["worst"])
        names = [(name, phase) for name, _, phase in result["calls"]]
        # all-gather before each sublayer, reduce-scatter after; mirrored in the backward pass
        for name in ("all_gather_into_tensor", "reduce_scatter_tensor"):
            assert names.count((name, "forward")) == 2, names
            assert names.count((name, "backward")) == 2, names
        assert ("all_reduce", "forward") not in names, names


def _reduce_scatter_of(rank, world_size, seq):
    return tp.reduce_scatter_sequence(torch.ones(1, seq, 4)).shape


def test_a_sequence_that_the_ranks_do_not_divide_is_refused_with_the_reason():
    with pytest.raises(gu.dist.RankError, match="must be a multiple of 2"):
        gu.dist.run(_reduce_scatter_of, 2, 5, backend="gloo", timeout=60)


def _rank_with_a_wrong_shard(rank, world_size):
    block, x, _, full = _layer_and_data(8)
    mine = tp.ParallelBlock(block, 0, world_size)  # every rank takes rank 0's shard: a mistake
    return float((mine(x.detach()) - full).abs().max())


def test_the_comparison_catches_a_wrong_shard():
    errors = gu.dist.run(_rank_with_a_wrong_shard, 2, backend="gloo", timeout=60)
    assert min(errors) > 1e-3, errors
