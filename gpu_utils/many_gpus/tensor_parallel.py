"""Tensor and sequence parallelism, Megatron-style, for ranks of ``gu.dist`` (chapter 10).

Shoeybi et al. 2019 ("Megatron-LM", sec. 3) split a transformer layer's two matrix
multiplications across t ranks: the first by columns (output features, or attention heads),
the second by rows (input features), so each rank computes its part with no communication in
between. Two conjugate operators join the parts:

* ``f`` (:func:`copy_to_parallel`): identity in the forward pass, all-reduce in the backward;
* ``g`` (:func:`reduce_from_parallel`): all-reduce in the forward pass, identity in the backward.

Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer Models",
sec. 4.2.2) add sequence parallelism: ``g`` becomes a reduce-scatter along the sequence and ``f``
an all-gather (:func:`reduce_scatter_sequence`, :func:`all_gather_sequence`), so the layer norms
and dropouts between them run on 1/t of the tokens.

Shards follow ``torch.tensor_split``: sizes differ by at most one when t does not divide them.
Every function runs inside a rank (a process group must exist); ``dist`` is looked up at call
time, so a counter that wraps ``torch.distributed.all_reduce`` sees these calls.
"""

from __future__ import annotations

import copy

import torch
import torch.distributed as dist
import torch.nn.functional as F

__all__ = [
    "ParallelAttention",
    "ParallelBlock",
    "ParallelMLP",
    "all_gather_sequence",
    "column_parallel_linear",
    "copy_to_parallel",
    "count_collectives",
    "reduce_from_parallel",
    "reduce_scatter_sequence",
    "row_parallel_linear",
    "shard",
]

SHOEYBI_2019 = (
    "M. Shoeybi et al., 'Megatron-LM: Training Multi-Billion Parameter Language Models Using "
    "Model Parallelism', arXiv:1909.08053 (2019), sec. 3 and Fig. 3"
)
KORTHIKANTI_2022 = (
    "V. Korthikanti et al., 'Reducing Activation Recomputation in Large Transformer Models', "
    "MLSys 2023, arXiv:2205.05198, sec. 4.2.2 and Fig. 5"
)


def shard(n: int, rank: int, world_size: int) -> slice:
    """Rank ``rank``'s part of ``range(n)`` as ``torch.tensor_split`` cuts it."""
    base, extra = divmod(n, world_size)
    start = rank * base + min(rank, extra)
    return slice(start, start + base + (rank < extra))


# --- the conjugate operators f and g, and their sequence-parallel forms -------------------------


class _CopyToParallel(torch.autograd.Function):
    """f: identity forward, all-reduce of the gradient backward."""

    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad):
        grad = grad.contiguous().clone()
        dist.all_reduce(grad)
        return grad


class _ReduceFromParallel(torch.autograd.Function):
    """g: all-reduce forward, identity backward."""

    @staticmethod
    def forward(ctx, x):
        x = x.contiguous().clone()
        dist.all_reduce(x)
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad


def _gather(x, dim: int):
    """All-gather along ``dim`` (the ranks' pieces concatenated in rank order)."""
    x = x.transpose(0, dim).contiguous()
    out = torch.empty((dist.get_world_size() * x.shape[0], *x.shape[1:]), dtype=x.dtype)
    dist.all_gather_into_tensor(out, x)
    return out.transpose(0, dim)


def _reduce_scatter(x, dim: int):
    """Sum over the ranks, and keep this rank's piece along ``dim``."""
    world_size = dist.get_world_size()
    if x.shape[dim] % world_size:
        raise ValueError(
            f"sequence parallelism cuts the sequence into {world_size} equal parts: its length "
            f"{x.shape[dim]} must be a multiple of {world_size}"
        )
    x = x.transpose(0, dim).contiguous()
    out = torch.empty((x.shape[0] // world_size, *x.shape[1:]), dtype=x.dtype)
    dist.reduce_scatter_tensor(out, x)
    return out.transpose(0, dim)


class _AllGatherSequence(torch.autograd.Function):
    """Sequence parallelism's f: all-gather forward, reduce-scatter backward."""

    @staticmethod
    def forward(ctx, x, dim):
        ctx.dim = dim
        return _gather(x, dim)

    @staticmethod
    def backward(ctx, grad):
        return _reduce_scatter(grad, ctx.dim), None


class _ReduceScatterSequence(torch.autograd.Function):
    """Sequence parallelism's g: reduce-scatter forward, all-gather backward."""

    @staticmethod
    def forward(ctx, x, dim):
        ctx.dim = dim
        return _reduce_scatter(x, dim)

    @staticmethod
    def backward(ctx, grad):
        return _gather(grad, ctx.dim), None


def copy_to_parallel(x):
    """f (Shoeybi et al. 2019, sec. 3): identity forward, all-reduce of the gradient backward."""
    return _CopyToParallel.apply(x)


def reduce_from_parallel(x):
    """g (Shoeybi et al. 2019, sec. 3): all-reduce forward, identity backward."""
    return _ReduceFromParallel.apply(x)


def all_gather_sequence(x, dim: int = 1):
    """Sequence-parallel f (Korthikanti et al. 2022, sec. 4.2.2): all-gather the sequence
    (``dim``, 1 for (batch, seq, hidden)) forward, reduce-scatter backward.

    Every rank's piece must be the same length (a sequence the ranks divide, as Megatron-LM
    requires): with pieces of different lengths the all-gather itself fails (gloo aborts the
    ranks), before :func:`reduce_scatter_sequence` could say why."""
    return _AllGatherSequence.apply(x, dim)


def reduce_scatter_sequence(x, dim: int = 1):
    """Sequence-parallel g: reduce-scatter along the sequence forward, all-gather backward."""
    return _ReduceScatterSequence.apply(x, dim)


# --- layers --------------------------------------------------------------------------------------


def column_parallel_linear(x, weight, bias, rank: int, world_size: int):
    """This rank's output features of ``x @ weight.T + bias``; ``x`` is the same on every rank."""
    rows = shard(weight.shape[0], rank, world_size)
    return F.linear(copy_to_parallel(x), weight[rows], None if bias is None else bias[rows])


def row_parallel_linear(x_part, weight, bias, rank: int, world_size: int):
    """``x @ weight.T + bias`` from this rank's input features ``x_part``; the same on every rank.

    The bias is added once, after the all-reduce (added on every rank it would count t times).
    """
    cols = shard(weight.shape[1], rank, world_size)
    y = reduce_from_parallel(F.linear(x_part, weight[:, cols]))
    return y if bias is None else y + bias


class ParallelMLP(torch.nn.Module):
    """The transformer MLP, fc2(gelu(fc1(x))), with its hidden features split over the ranks.

    Built from the two full ``nn.Linear`` layers of a single-process model; each rank keeps only
    its rows of fc1, its columns of fc2, and the whole bias of fc2 (added once, after ``g``).
    With ``sequence_parallel=True`` the input and output are this rank's 1/t of the sequence
    (dim 1 of (batch, seq, hidden)), and f and g become all-gather and reduce-scatter.
    """

    def __init__(self, fc1, fc2, rank: int, world_size: int, *, sequence_parallel: bool = False):
        super().__init__()
        rows = shard(fc1.out_features, rank, world_size)
        self.w1 = torch.nn.Parameter(fc1.weight.detach()[rows].clone())
        self.b1 = torch.nn.Parameter(fc1.bias.detach()[rows].clone())
        self.w2 = torch.nn.Parameter(fc2.weight.detach()[:, rows].clone())
        self.b2 = torch.nn.Parameter(fc2.bias.detach().clone())
        self.sequence_parallel = sequence_parallel

    def forward(self, x):
        enter = all_gather_sequence if self.sequence_parallel else copy_to_parallel
        leave = reduce_scatter_sequence if self.sequence_parallel else reduce_from_parallel
        h = F.gelu(F.linear(enter(x), self.w1, self.b1))
        return leave(F.linear(h, self.w2)) + self.b2


def _heads_attention(x, wqkv, bqkv, n_heads: int):
    """Causal attention of x (batch, seq, hidden) for the heads whose Q, K, V rows are given;
    returns (batch, seq, n_heads * head_dim), the heads side by side."""
    b, s, _ = x.shape
    q, k, v = F.linear(x, wqkv, bqkv).chunk(3, dim=-1)
    q, k, v = (t.reshape(b, s, n_heads, -1).transpose(1, 2) for t in (q, k, v))
    out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return out.transpose(1, 2).reshape(b, s, -1)


class ParallelAttention(torch.nn.Module):
    """Self-attention with its heads split over the ranks (Shoeybi et al. 2019, sec. 3, Fig. 3b).

    Built from a ``gu.gpt`` attention's fused ``qkv`` (Linear(h, 3h): the rows of Q, then K,
    then V, each grouped by head) and ``proj`` (Linear(h, h)). Each rank keeps the Q, K and V
    rows of its heads (column-parallel) and the matching columns of ``proj`` (row-parallel):
    attention itself needs no communication, because heads are independent. The number of
    heads need not be a multiple of the number of ranks.
    """

    def __init__(
        self, qkv, proj, n_heads: int, rank: int, world_size: int, *, sequence_parallel=False
    ):
        super().__init__()
        hidden = proj.out_features
        head_dim = hidden // n_heads
        heads = shard(n_heads, rank, world_size)
        self.n_heads = heads.stop - heads.start
        rows = torch.arange(heads.start * head_dim, heads.stop * head_dim)
        qkv_rows = torch.cat([rows + i * hidden for i in range(3)])
        self.wqkv = torch.nn.Parameter(qkv.weight.detach()[qkv_rows].clone())
        self.bqkv = torch.nn.Parameter(qkv.bias.detach()[qkv_rows].clone())
        self.wo = torch.nn.Parameter(proj.weight.detach()[:, rows].clone())
        self.bo = torch.nn.Parameter(proj.bias.detach().clone())
        self.sequence_parallel = sequence_parallel

    def forward(self, x):
        enter = all_gather_sequence if self.sequence_parallel else copy_to_parallel
        leave = reduce_scatter_sequence if self.sequence_parallel else reduce_from_parallel
        out = _heads_attention(enter(x), self.wqkv, self.bqkv, self.n_heads)
        return leave(F.linear(out, self.wo)) + self.bo


class ParallelBlock(torch.nn.Module):
    """A ``gu.gpt`` pre-LN transformer layer, tensor-parallel (and optionally sequence-parallel).

    The layer norms are replicated. With ``sequence_parallel=True`` the block's input and output
    are this rank's piece of the sequence (dim 1), the layer norms run on it alone, and the
    gradients of the replicated parameters (:meth:`replicated_parameters`) are partial sums that
    must be all-reduced after the backward pass, as Megatron-LM does.
    """

    def __init__(self, block, rank: int, world_size: int, *, sequence_parallel: bool = False):
        super().__init__()
        n_heads = block.attn.config.n_heads
        self.ln1, self.ln2 = copy.deepcopy(block.ln1), copy.deepcopy(block.ln2)
        self.attn = ParallelAttention(
            block.attn.qkv, block.attn.proj, n_heads, rank, world_size,
            sequence_parallel=sequence_parallel,
        )  # fmt: skip
        self.mlp = ParallelMLP(
            block.mlp.fc1, block.mlp.fc2, rank, world_size, sequence_parallel=sequence_parallel
        )

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))

    def replicated_parameters(self) -> list:
        """Parameters every rank holds whole: the layer norms and the row-parallel biases."""
        return [*self.ln1.parameters(), *self.ln2.parameters(), self.attn.bo, self.mlp.b2]


# --- counting communication ----------------------------------------------------------------------

_COUNTED = ("all_reduce", "all_gather_into_tensor", "reduce_scatter_tensor", "all_to_all_single")


class count_collectives:
    """Count (and size) the collectives called inside a ``with`` block, in this rank.

    ``counter.calls`` is a list of (name, elements of the full array, "forward" or "backward"),
    the phase being "backward" while autograd runs a backward pass. The full array is the larger
    of output and input (the gathered result, or the array being reduce-scattered).
    """

    def __init__(self):
        self.calls: list[tuple[str, int, str]] = []
        self._saved: dict = {}

    def __enter__(self):
        for name in _COUNTED:
            original = getattr(dist, name)
            self._saved[name] = original
            setattr(dist, name, self._wrap(name, original))
        return self

    def _wrap(self, name, original):
        def call(*args, **kwargs):
            sizes = [a.numel() for a in args[:2] if isinstance(a, torch.Tensor)]
            phase = "backward" if torch._C._current_graph_task_id() != -1 else "forward"
            self.calls.append((name, max(sizes), phase))
            return original(*args, **kwargs)

        return call

    def __exit__(self, *exc):
        for name, original in self._saved.items():
            setattr(dist, name, original)
        return False

    def count(self, name: str, phase: str | None = None) -> int:
        return sum(1 for n, _, p in self.calls if n == name and phase in (None, p))
