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

:class:`Llama` is the block chapters 10-11 size (chapter 08b, section 9): RMSNorm, SwiGLU with
three matrices, grouped-query attention, RoPE, no biases, as in Meta's ``llama/model.py``
(github.com/meta-llama/llama3), with its parameter and activation counts
(:func:`llama_layer_params`, :func:`llama_n_params`, :func:`llama_activation_elements`).
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
    "LLAMA3_8B",
    "MLP",
    "Block",
    "CausalSelfAttention",
    "GPTConfig",
    "Llama",
    "LlamaAttention",
    "LlamaBlock",
    "LlamaConfig",
    "RMSNorm",
    "SwiGLU",
    "analytic_n_params",
    "build",
    "gqa_attention_is_fused",
    "layer_params",
    "llama_activation_elements",
    "llama_ffn_hidden",
    "llama_layer_params",
    "llama_n_params",
    "n_params",
    "saved_elements",
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


# --- the Llama block (chapter 08b, section 9; the shapes of chapters 10-11) ---------------------


@dataclass(frozen=True)
class LlamaConfig:
    """The shape of a :class:`Llama`, named as Meta's ``ModelArgs`` (github.com/meta-llama/llama3,
    ``llama/model.py``): ``n_kv_heads`` < ``n_heads`` is grouped-query attention (Ainslie et al.
    2023), ``ffn_hidden`` the SwiGLU width (:func:`llama_ffn_hidden` derives it as Meta does).

    :data:`LLAMA3_8B` is Llama 3 8B's published shape."""

    vocab_size: int = 256
    seq_len: int = 64
    d_model: int = 64
    n_layers: int = 2
    n_heads: int = 4
    n_kv_heads: int = 2
    ffn_hidden: int = 192
    norm_eps: float = 1e-5
    rope_theta: float = 500000.0

    def __post_init__(self) -> None:
        if self.d_model % self.n_heads or (self.d_model // self.n_heads) % 2:
            raise ValueError(
                f"d_model {self.d_model} must split into {self.n_heads} heads of an even size "
                "(RoPE rotates pairs of features)"
            )
        if self.n_heads % self.n_kv_heads:
            raise ValueError(
                f"n_heads {self.n_heads} must be a multiple of n_kv_heads {self.n_kv_heads} "
                "(each key/value head serves the same number of query heads)"
            )

    @property
    def head_dim(self) -> int:
        return self.d_model // self.n_heads


def llama_ffn_hidden(dim: int, multiple_of: int, ffn_dim_multiplier: float | None = None) -> int:
    """SwiGLU's hidden width as Meta's ``FeedForward`` computes it (``llama/model.py``): 2/3 of
    4 * dim (three matrices instead of two keep the parameters of a 4h MLP), times
    ``ffn_dim_multiplier``, rounded up to a multiple of ``multiple_of``. Llama 3 8B's
    ``params.json`` (dim 4096, multiplier 1.3, multiple_of 1024) gives 14,336."""
    hidden = int(2 * (4 * dim) / 3)
    if ffn_dim_multiplier is not None:
        hidden = int(ffn_dim_multiplier * hidden)
    return multiple_of * ((hidden + multiple_of - 1) // multiple_of)


#: Llama 3 8B (Meta's model card and ``params.json``: dim 4096, 32 layers, 32 heads, 8 KV heads,
#: ffn_dim_multiplier 1.3 with multiple_of 1024, vocabulary 128,256, rope_theta 500,000; context
#: 8,192 in pre-training, Dubey et al. 2024, Table 3). 8.03e9 parameters (model card).
LLAMA3_8B = LlamaConfig(
    vocab_size=128256,
    seq_len=8192,
    d_model=4096,
    n_layers=32,
    n_heads=32,
    n_kv_heads=8,
    ffn_hidden=llama_ffn_hidden(4096, 1024, 1.3),
)


class RMSNorm(nn.Module):
    """x / sqrt(mean(x^2) + eps) * weight (Zhang & Sennrich 2019): no mean subtracted, no bias."""

    def __init__(self, dim: int, eps: float = 1e-5) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # as Meta's model.py: computed in fp32, returned in x's dtype
        xf = x.float()
        normed = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return normed.type_as(x) * self.weight


def _rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate each pair (x[2i], x[2i+1]) of every head by the angle of its position (RoPE, Su et
    al. 2021; the pairing of Meta's ``apply_rotary_emb``). x is (batch, seq, heads, d_head)."""
    x1, x2 = x[..., 0::2], x[..., 1::2]
    return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)


class LlamaAttention(nn.Module):
    """Causal grouped-query attention with RoPE and no biases: ``wq`` (h -> h), ``wk`` and ``wv``
    (h -> n_kv_heads * d_head), ``wo`` (h -> h); PyTorch's fused attention with ``enable_gqa``,
    so the keys and values are kept at their n_kv_heads size, not repeated per query head."""

    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        h, d, kv = config.d_model, config.head_dim, config.n_kv_heads
        self.config = config
        self.wq = nn.Linear(h, h, bias=False)
        self.wk = nn.Linear(h, kv * d, bias=False)
        self.wv = nn.Linear(h, kv * d, bias=False)
        self.wo = nn.Linear(h, h, bias=False)
        freqs = config.rope_theta ** (-torch.arange(0, d, 2, dtype=torch.float32) / d)
        angles = torch.outer(torch.arange(config.seq_len, dtype=torch.float32), freqs)
        self.register_buffer("cos", angles.cos()[:, None, :], persistent=False)
        self.register_buffer("sin", angles.sin()[:, None, :], persistent=False)

    def forward(
        self,
        x: torch.Tensor,
        keys: torch.Tensor | None = None,
        values: torch.Tensor | None = None,
        start: int = 0,
    ) -> torch.Tensor:
        """Attention of the tokens ``x`` (batch, seq, h). With a KV cache (chapter 13's
        ``gu.inference.forward_cached``): ``keys`` and ``values`` (batch, length, n_kv_heads,
        d_head) hold the sequence's first ``start`` positions; the new tokens' keys and values
        are written after them, and each new query attends to every cached position up to its
        own (position ``start + i``)."""
        b, s, h = x.shape
        c = self.config
        cos, sin = self.cos[start : start + s].to(x.dtype), self.sin[start : start + s].to(x.dtype)
        q = _rope(self.wq(x).view(b, s, c.n_heads, c.head_dim), cos, sin)
        k = _rope(self.wk(x).view(b, s, c.n_kv_heads, c.head_dim), cos, sin)
        v = self.wv(x).view(b, s, c.n_kv_heads, c.head_dim)
        mask, causal = None, True
        if keys is not None:
            end = start + s
            keys[:, start:end], values[:, start:end] = k, v
            k, v, causal = keys[:, :end], values[:, :end], False
            if s > 1:  # query i (position start + i) sees keys 0 .. start + i
                mask = torch.ones(s, end, dtype=torch.bool, device=x.device).tril(diagonal=start)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, is_causal=causal, enable_gqa=True
        )
        return self.wo(y.transpose(1, 2).reshape(b, s, h))


class SwiGLU(nn.Module):
    """w2(silu(w1 x) * w3 x) (Shazeer 2020): three matrices h x f, no biases."""

    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        h, f = config.d_model, config.ffn_hidden
        self.w1 = nn.Linear(h, f, bias=False)
        self.w3 = nn.Linear(h, f, bias=False)
        self.w2 = nn.Linear(f, h, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class LlamaBlock(nn.Module):
    """Meta's ``TransformerBlock``: x + attention(attention_norm(x)), then
    x + feed_forward(ffn_norm(x)); pre-norm with RMSNorm, no biases, no dropout."""

    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        self.attention_norm = RMSNorm(config.d_model, config.norm_eps)
        self.attention = LlamaAttention(config)
        self.ffn_norm = RMSNorm(config.d_model, config.norm_eps)
        self.feed_forward = SwiGLU(config)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.attention_norm(x))
        return x + self.feed_forward(self.ffn_norm(x))


class Llama(nn.Module):
    """Token embedding, ``n_layers`` :class:`LlamaBlock` s, a final RMSNorm and an untied output
    layer (``tok_embeddings``, ``layers``, ``norm``, ``output``, as in Meta's ``Transformer``).
    No position embedding: RoPE rotates q and k inside attention."""

    def __init__(self, config: LlamaConfig) -> None:
        super().__init__()
        self.config = config
        self.tok_embeddings = nn.Embedding(config.vocab_size, config.d_model)
        self.layers = nn.ModuleList(LlamaBlock(config) for _ in range(config.n_layers))
        self.norm = RMSNorm(config.d_model, config.norm_eps)
        self.output = nn.Linear(config.d_model, config.vocab_size, bias=False)

    def forward(
        self, idx: torch.Tensor, targets: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Logits (batch, seq, vocab), and the mean cross-entropy when ``targets`` are given."""
        if idx.shape[1] > self.config.seq_len:
            raise ValueError(
                f"sequence of {idx.shape[1]} tokens is longer than seq_len {self.config.seq_len}"
            )
        x = self.tok_embeddings(idx)
        for layer in self.layers:
            x = layer(x)
        logits = self.output(self.norm(x))
        if targets is None:
            return logits, None
        return logits, F.cross_entropy(logits.flatten(0, 1).float(), targets.flatten())


def llama_layer_params(config: LlamaConfig) -> int:
    """Parameters of one :class:`LlamaBlock`: 2 h^2 (wq, wo) + 2 h n_kv d_head (wk, wv) + 3 h f
    (w1, w2, w3) + 2 h (two RMSNorm weights); no biases."""
    h, f = config.d_model, config.ffn_hidden
    return 2 * h * h + 2 * h * config.n_kv_heads * config.head_dim + 3 * h * f + 2 * h


def llama_n_params(config: LlamaConfig) -> int:
    """What ``sum(p.numel() for p in Llama(config).parameters())`` is, from the shapes alone:
    L layers, the final norm's h, and V h each for the embedding and the untied output layer."""
    return (
        config.n_layers * llama_layer_params(config)
        + config.d_model
        + 2 * config.vocab_size * config.d_model
    )


def llama_activation_elements(config: LlamaConfig, tokens: int = 1) -> int:
    """Elements one :class:`LlamaBlock` keeps for backward per ``tokens`` tokens, counted as
    Korthikanti et al. 2022 count GPT's (each operation keeps the inputs its backward needs) for a
    fused RMSNorm and a fused (flash) attention:

    * 6 h: each norm's input, each sub-layer's normalised input (read by wq/wk/wv, by w1/w3), q
      after RoPE, and the attention output (read by wo);
    * 2 n_kv d_head: k after RoPE and v, at their grouped size;
    * 4 f: w1's output (SiLU's input), SiLU's output and w3's output (the product's inputs), and
      the product (w2's input);
    * n_heads + 2: one log-sum-exp per head (fused attention) and one 1/rms per norm, in fp32.

    An unfused RMSNorm (this module, Meta's ``model.py``) also keeps its normalised x before the
    multiply by the weight: h more per norm, 2 h per block (tests/test_gpt.py measures both,
    where :func:`gqa_attention_is_fused`)."""
    c = config
    per_token = 6 * c.d_model + 2 * c.n_kv_heads * c.head_dim + 4 * c.ffn_hidden + c.n_heads + 2
    return per_token * tokens


def gqa_attention_is_fused(config: LlamaConfig) -> bool:
    """Whether this PyTorch runs :class:`LlamaAttention` on the CPU with its fused flash kernel,
    which keeps k and v at their grouped size and no s x s matrix (what
    :func:`llama_activation_elements` counts). A release whose CPU kernel does not take grouped
    queries falls back to the math kernel, which repeats k and v and keeps the probabilities."""
    from torch.nn.attention import SDPBackend

    q = torch.empty(1, config.n_heads, 2, config.head_dim)
    k = torch.empty(1, config.n_kv_heads, 2, config.head_dim)
    try:
        choice = torch._fused_sdp_choice(q, k, k, is_causal=True, enable_gqa=True)
    except (AttributeError, TypeError, RuntimeError):  # no such query in this release
        return False
    return choice == SDPBackend.FLASH_ATTENTION.value


def saved_elements(module: nn.Module, x: torch.Tensor) -> int:
    """Elements of the distinct storages ``module(x)`` keeps for backward, its own parameters and
    buffers left out (they are model state), counted with ``saved_tensors_hooks``."""
    state = {t.untyped_storage().data_ptr() for t in (*module.parameters(), *module.buffers())}
    kept: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        if storage.data_ptr() not in state:
            kept[storage.data_ptr()] = storage.nbytes() // t.element_size()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        module(x)
    return sum(kept.values())
