"""Pieces for data parallelism and ZeRO (chapter 09): a tiny model with the awkward cases, its
batches, and counters of what each rank holds.

``TinyLM`` is a language model small enough to train in a few milliseconds but with every case a
data-parallel implementation must get right: an output layer *tied* to the embedding (one tensor,
two uses), a *frozen* layer (no gradient at all) and a number of trainable parameters that no
world size of 2, 3 or 4 divides. The lab's checkers and the chapter's cells train it the same way.
"""

from __future__ import annotations

import os

import numpy as np

__all__ = [
    "GLOBAL_BATCH",
    "SEQ_LEN",
    "TinyLM",
    "batch",
    "loss_fn",
    "optimizer_state_bytes",
    "preload_optimizers",
    "shard_range",
    "state_numel",
    "tensor_bytes",
]

#: Sequences in one global batch: 12, divisible by 2, 3 and 4 ranks, so every rank gets a shard.
GLOBAL_BATCH = 12
#: Tokens per sequence.
SEQ_LEN = 5


def _module_class():
    import torch
    from torch import nn

    class TinyLM(nn.Module):
        """Embedding, a frozen mixing layer, an MLP, and an output layer tied to the embedding.

        Trainable parameters: vocab*dim (shared by embedding and head) + the MLP's; with the
        defaults 11*6 + (6*13 + 13) + (13*6 + 6) = 241, a prime.
        """

        def __init__(self, vocab: int = 11, dim: int = 6, hidden: int = 13, seed: int = 0):
            super().__init__()
            generator = torch.Generator().manual_seed(seed)
            self.embed = nn.Embedding(vocab, dim)
            self.frozen = nn.Linear(dim, dim)
            self.up = nn.Linear(dim, hidden)
            self.down = nn.Linear(hidden, dim)
            self.head = nn.Linear(dim, vocab, bias=False)
            self.head.weight = self.embed.weight  # tied: one tensor, two uses
            with torch.no_grad():  # the same values on every rank, from the seed alone
                for p in self.parameters():
                    p.copy_(torch.randn(p.shape, generator=generator) * 0.5)
            self.frozen.requires_grad_(False)

        def forward(self, tokens):
            x = self.embed(tokens)
            x = x + torch.tanh(self.frozen(x))
            x = x + self.down(torch.nn.functional.gelu(self.up(x)))
            return self.head(x)

    return TinyLM


def TinyLM(vocab: int = 11, dim: int = 6, hidden: int = 13, seed: int = 0):
    """A new TinyLM (a ``torch.nn.Module``); the same ``seed`` gives the same weights anywhere."""
    return _module_class()(vocab, dim, hidden, seed)


def batch(
    step: int, seed: int = 0, vocab: int = 11, size: int = GLOBAL_BATCH, seq_len: int = SEQ_LEN
):
    """The global batch of one step: (tokens, targets), int64 tensors of shape (size, seq_len),
    the targets shifted by one token; the same on every rank for the same arguments."""
    import torch

    rng = np.random.default_rng([seed, step])
    tokens = rng.integers(0, vocab, size=(size, seq_len + 1))
    data = torch.from_numpy(tokens)
    return data[:, :-1].contiguous(), data[:, 1:].contiguous()


def loss_fn(model, tokens, targets):
    """Mean cross-entropy over every token of the batch (the mean of equal shards' means)."""
    import torch

    logits = model(tokens)
    return torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), targets.reshape(-1)
    )


def preload_optimizers() -> None:
    """Have ``gu.dist``'s launcher import, once, what a torch optimizer imports on first use
    (``torch._dynamo``, seconds), so that ranks started afterwards do not each import it."""
    from ._dist_launcher import PRELOAD_VARIABLE

    modules = set(filter(None, os.environ.get(PRELOAD_VARIABLE, "").split(",")))
    os.environ[PRELOAD_VARIABLE] = ",".join(sorted(modules | {"torch._dynamo"}))


def shard_range(numel: int, rank: int, world_size: int) -> tuple[int, int]:
    """[start, stop) of rank's shard of a flat vector, as ``torch.tensor_split`` cuts it: the
    first ``numel % world_size`` ranks get one element more."""
    base, extra = divmod(numel, world_size)
    start = rank * base + min(rank, extra)
    return start, start + base + (rank < extra)


def tensor_bytes(tensor) -> int:
    """Bytes of a tensor's elements on this rank (a DTensor counts only its local shard)."""
    local = tensor.to_local() if hasattr(tensor, "to_local") else tensor
    return local.numel() * local.element_size()


def _optimizers(obj) -> list:
    """Every torch optimizer among ``obj`` itself and its attributes (one level, lists too)."""
    import torch

    found = []
    candidates = [obj, *vars(obj).values()] if hasattr(obj, "__dict__") else [obj]
    for value in candidates:
        values = list(value) if isinstance(value, (list, tuple)) else [value]
        for item in values:
            if isinstance(item, torch.optim.Optimizer) and all(item is not f for f in found):
                found.append(item)
    return found


def state_numel(obj) -> int | None:
    """Elements of optimizer state (Adam's two moments...) held by the optimizers in ``obj``,
    not counting the scalar step counters; None when ``obj`` holds no torch optimizer."""
    optimizers = _optimizers(obj)
    if not optimizers:
        return None
    total = 0
    for optimizer in optimizers:
        for state in optimizer.state.values():
            for key, value in state.items():
                if key != "step" and hasattr(value, "numel"):
                    local = value.to_local() if hasattr(value, "to_local") else value
                    total += local.numel()
    return total


def optimizer_state_bytes(optimizer) -> int:
    """Bytes of optimizer state on this rank (local shards of DTensors), step counters aside."""
    total = 0
    for state in optimizer.state.values():
        for key, value in state.items():
            if key != "step" and hasattr(value, "numel"):
                total += tensor_bytes(value)
    return total
