"""A small GPT built to the papers' assumptions, for chapters 09-11 (parallelism and memory).

The decoder is the one the memory and FLOP formulas of ``gu.memory`` and ``gu.flops`` count
(Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
section 4.1; Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU
Clusters Using Megatron-LM", appendix): pre-LayerNorm blocks, multi-head causal self-attention
(one fused QKV projection or three), an MLP of width 4h with GeLU, a learned positional
embedding, biases on every linear layer, optional tied input/output embedding, and dropout 0 by
default. Attention is written out (QK^T, mask, softmax, times V) rather than calling a fused
kernel, so that what autograd saves is exactly the tensors the papers list.

A layer has 12 h^2 + 13 h parameters (:func:`layer_params`): QKV 3h^2 + 3h, output projection
h^2 + h, MLP 8h^2 + 5h, two LayerNorms 4h.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

__all__ = [
    "GPT",
    "MLP",
    "Block",
    "CausalSelfAttention",
    "GPTConfig",
    "analytic_n_params",
    "build",
    "layer_params",
    "n_params",
]

RECOMPUTE = ("none", "selective", "full")
ATTENTION = ("eager", "flash")


@dataclass(frozen=True)
class GPTConfig:
    """The shape of a :class:`GPT`.

    ``recompute``: "none"; "selective" recomputes the attention core (QK^T, softmax, times V) in
    the backward pass, Korthikanti et al. 2022 section 5; "full" recomputes each whole block from
    its input (the checkpointing of Chen et al. 2016).
    ``attention``: "eager" writes the attention core out (QK^T, mask, softmax, times V), so
    autograd keeps the s x s scores as Korthikanti et al. count them; "flash" calls PyTorch's
    fused ``scaled_dot_product_attention`` (FlashAttention, Dao et al. 2022), which keeps only
    its output and one log-sum-exp per head and token (``gu.memory``, ``attention="flash"``).
    """

    vocab_size: int = 256
    seq_len: int = 64
    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    tie_weights: bool = True
    dropout: float = 0.0
    fused_qkv: bool = True
    recompute: str = "none"
    attention: str = "eager"

    def __post_init__(self) -> None:
        if self.attention not in ATTENTION:
            raise ValueError(f"attention must be one of {ATTENTION}, got {self.attention!r}")
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model {self.d_model} is not divisible by n_heads {self.n_heads}")
        if self.recompute not in RECOMPUTE:
            raise ValueError(f"recompute must be one of {RECOMPUTE}, got {self.recompute!r}")

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads


def _attention_core(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, p: float, training: bool):
    """softmax(Q K^T / sqrt(d) + causal mask) V for q, k, v of shape (batch, heads, seq, d)."""
    s = q.shape[-2]
    # scaling the scores (a multiply by a Python number saves nothing for backward) rather than
    # q keeps exactly Q, K and V alive, as Korthikanti et al. count them
    scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(q.shape[-1]))
    mask = torch.ones(s, s, dtype=torch.bool, device=q.device).triu(1)
    probs = scores.masked_fill(mask, float("-inf")).softmax(dim=-1)
    probs = F.dropout(probs, p, training)
    return probs @ v


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention: QKV projection, attention core, output projection."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        h = config.d_model
        self.config = config
        if config.fused_qkv:
            self.qkv = nn.Linear(h, 3 * h)
        else:
            self.q, self.k, self.v = nn.Linear(h, h), nn.Linear(h, h), nn.Linear(h, h)
        self.proj = nn.Linear(h, h)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, h = x.shape
        a = self.config.n_heads
        if self.config.fused_qkv:
            q, k, v = self.qkv(x).split(h, dim=-1)
        else:
            q, k, v = self.q(x), self.k(x), self.v(x)
        q, k, v = (t.view(b, s, a, h // a).transpose(1, 2) for t in (q, k, v))
        p = self.config.dropout
        if self.config.attention == "flash":
            y = F.scaled_dot_product_attention(
                q, k, v, dropout_p=p if self.training else 0.0, is_causal=True
            )
        elif self.config.recompute == "selective" and torch.is_grad_enabled():
            y = checkpoint(_attention_core, q, k, v, p, self.training, use_reentrant=False)
        else:
            y = _attention_core(q, k, v, p, self.training)
        y = y.transpose(1, 2).contiguous().view(b, s, h)
        return self.dropout(self.proj(y))


class MLP(nn.Module):
    """h -> 4h, GeLU, 4h -> h."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.fc1 = nn.Linear(config.d_model, 4 * config.d_model)
        self.fc2 = nn.Linear(4 * config.d_model, config.d_model)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.fc2(F.gelu(self.fc1(x))))


class Block(nn.Module):
    """A pre-LN transformer layer: x + attn(ln1(x)), then x + mlp(ln2(x))."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(config.d_model)
        self.attn = CausalSelfAttention(config)
        self.ln2 = nn.LayerNorm(config.d_model)
        self.mlp = MLP(config)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


def _init_weights(module: nn.Module) -> None:
    """GPT-2's initialisation (Radford et al. 2019; Megatron-LM's default): N(0, 0.02) weights
    and embeddings, zero biases, so the initial loss is about ln(vocab_size)."""
    if isinstance(module, (nn.Linear, nn.Embedding)):
        nn.init.normal_(module.weight, mean=0.0, std=0.02)
    if isinstance(module, nn.Linear) and module.bias is not None:
        nn.init.zeros_(module.bias)


class GPT(nn.Module):
    """Token + position embedding, ``n_layers`` :class:`Block` s, final LayerNorm, output layer.

    Submodules: ``wte``, ``wpe``, ``drop``, ``blocks`` (an ``nn.ModuleList``), ``ln_f``,
    ``lm_head`` (its weight *is* ``wte.weight`` when ``tie_weights``).
    """

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.d_model)
        self.wpe = nn.Embedding(config.seq_len, config.d_model)
        self.drop = nn.Dropout(config.dropout)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layers))
        self.ln_f = nn.LayerNorm(config.d_model)
        self.lm_head = nn.Linear(config.d_model, config.vocab_size, bias=False)
        if config.tie_weights:
            self.lm_head.weight = self.wte.weight
        self.apply(_init_weights)

    def forward(
        self, idx: torch.Tensor, targets: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Logits (batch, seq, vocab) for token ids ``idx`` (batch, seq), and the mean
        cross-entropy against ``targets`` (batch, seq) when given, else None."""
        _, s = idx.shape
        if s > self.config.seq_len:
            raise ValueError(f"sequence of {s} tokens is longer than seq_len {self.config.seq_len}")
        pos = torch.arange(s, device=idx.device)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        for block in self.blocks:
            if self.config.recompute == "full" and torch.is_grad_enabled():
                x = checkpoint(block, x, use_reentrant=False)
            else:
                x = block(x)
        logits = self.lm_head(self.ln_f(x))
        if targets is None:
            return logits, None
        loss = F.cross_entropy(logits.flatten(0, 1).float(), targets.flatten())
        return logits, loss


def build(config: GPTConfig | None = None, *, seed: int = 0, **fields) -> GPT:
    """A :class:`GPT` whose weights depend only on ``seed`` (same seed, same model, any process).

    ``build(seed=0, n_layers=4)`` is ``GPT(GPTConfig(n_layers=4))`` built under
    ``torch.manual_seed(0)``; the global RNG state is restored afterwards.
    """
    if config is None:
        config = GPTConfig(**fields)
    elif fields:
        raise TypeError("give either a config or its fields, not both")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return GPT(config)


def n_params(model: nn.Module, include_embedding: bool = True) -> int:
    """Number of distinct parameters (a tied weight counts once).

    ``include_embedding=False`` leaves out the token and position embeddings and an untied
    output layer: the "non-embedding" N of Kaplan et al. 2020 (section 2.1).
    """
    seen: dict[int, int] = {}
    skip: set[int] = set()
    if not include_embedding:
        for name in ("wte", "wpe", "lm_head"):
            sub = getattr(model, name, None)
            if sub is not None:
                skip.update(id(p) for p in sub.parameters())
    for p in model.parameters():  # parameters() already yields a shared tensor once
        if id(p) not in skip:
            seen[id(p)] = p.numel()
    return sum(seen.values())


def layer_params(d_model: int) -> int:
    """Parameters of one :class:`Block`: 12 h^2 + 13 h (Narayanan et al. 2021, appendix,
    "Floating-Point Operations": 12 l h^2 counts the weight matrices; biases and LayerNorms add 13 h).
    """
    h = d_model
    return 12 * h * h + 13 * h


def analytic_n_params(config: GPTConfig, include_embedding: bool = True) -> int:
    """What :func:`n_params` returns for ``GPT(config)``, from the shapes alone.

    L (12 h^2 + 13 h) + 2 h (final LayerNorm), plus V h + s h for the embeddings and V h more for
    an untied output layer when ``include_embedding``.
    """
    h, v = config.d_model, config.vocab_size
    total = config.n_layers * layer_params(h) + 2 * h
    if include_embedding:
        total += v * h + config.seq_len * h + (0 if config.tie_weights else v * h)
    return total
