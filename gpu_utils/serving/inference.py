"""Serving a decoder (chapter 13): the lower bound of one decode step, the KV cache, and the batch
at which decoding stops being bound by memory.

One decode step produces one token for each of ``batch`` sequences. It must read every weight the
step multiplies by (once for the whole batch) and, for each sequence, the keys and values of all
its earlier tokens; it does about two FLOPs per weight per sequence plus the attention over the
context. Whichever of the two takes longer on the GPU, bytes over memory bandwidth or FLOPs over
peak, is the step's lower bound (the roofline of chapter 04; the same reasoning as J. Austin et
al., "How to Scale Your Model", 2025, chapter "All About Transformer Inference"). A real server
adds kernel launches, sampling and the scheduler's work, so measured steps are slower than this
bound; chapter 13 measures by how much.

    import gpu_utils as gu
    step = gu.inference.decode_step(gu.inference.DECODERS["Llama 2 7B"], "A100-SXM4-80GB",
                                    batch=1, context=1024)
    step.tokens_per_s, step.bound          # 148.3, "memory"
    gu.inference.critical_batch("H100-SXM")   # 295: below it, decode is bound by memory

Nothing here is measured: these are formulas over published shapes and datasheet figures
(``gu.specs``); tests/test_inference.py holds them against published runs.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..facts import specs as _specs
from ..many_gpus.memory import kv_cache_bytes

__all__ = [
    "DECODERS",
    "DecodeStep",
    "Decoder",
    "critical_batch",
    "decode_step",
    "max_batch",
]


@dataclass(frozen=True)
class Decoder:
    """A Llama-shaped decoder: ``params`` (all of them), ``layers``, ``hidden``, ``heads``,
    ``kv_heads`` (fewer than ``heads`` with grouped-query attention: J. Ainslie et al., "GQA",
    EMNLP 2023), ``vocab``, ``ffn`` (the SwiGLU MLP's inner width, when published) and whether
    the output layer shares the embedding's matrix (``tied_embeddings``; Llama's does not)."""

    params: float
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    vocab: int
    ffn: int | None = None
    tied_embeddings: bool = False
    source: str = ""

    def __post_init__(self) -> None:
        for name in ("params", "layers", "hidden", "heads", "kv_heads", "vocab"):
            if not getattr(self, name) > 0:
                raise ValueError(f"Decoder: {name} must be positive, got {getattr(self, name)!r}")
        if self.hidden % self.heads:
            raise ValueError(
                f"Decoder: hidden ({self.hidden}) must be a multiple of heads ({self.heads})"
            )
        if self.heads % self.kv_heads:
            raise ValueError(
                f"Decoder: heads ({self.heads}) must be a multiple of kv_heads ({self.kv_heads}): "
                "each key-value head serves a whole group of query heads"
            )

    @property
    def head_dim(self) -> int:
        return self.hidden // self.heads

    @property
    def shape_params(self) -> int | None:
        """Parameters counted from the shapes (None without ``ffn``): per layer the query and
        output projections (h x h each), the key and value projections (h x kv_heads x head_dim
        each), SwiGLU's three ffn x h matrices and two RMSNorm weights; then the embedding, the
        output layer unless tied, and the final norm (Meta's reference model.py,
        github.com/meta-llama/llama, llama/model.py)."""
        if self.ffn is None:
            return None
        h, kv = self.hidden, self.kv_heads * self.head_dim
        layer = 2 * h * h + 2 * h * kv + 3 * h * self.ffn + 2 * h
        embeddings = self.vocab * h * (1 if self.tied_embeddings else 2)
        return self.layers * layer + embeddings + h

    @property
    def streamed_params(self) -> float:
        """Parameters a decode step reads whole: all but the input embedding, of which each
        token reads one row (with tied embeddings the output layer reads the matrix anyway)."""
        if self.tied_embeddings:
            return self.params
        return self.params - self.vocab * self.hidden

    def kv_bytes_per_token(self, kv_bytes: float = 2) -> float:
        """Bytes of keys and values one token keeps in the cache, over all layers."""
        return kv_cache_bytes(self.layers, self.kv_heads, self.head_dim, 1, 1, kv_bytes)

    def flops_per_token(self, context: int) -> float:
        """FLOPs to produce one token that attends to ``context`` tokens: 2 per streamed weight
        (a multiply and an add) and, per layer, 2 x hidden x context for the scores q.k and as
        many for the weighted sum of values (every query head reads its group's keys)."""
        return 2 * self.streamed_params + 4 * self.layers * self.hidden * context


#: Published shapes. Llama 2: H. Touvron et al., "Llama 2: Open Foundation and Fine-Tuned Chat
#: Models", 2023, Table 1 (sizes, GQA for 70B) and the released configurations (hidden, layers,
#: heads, ffn, vocab 32,000: meta-llama/Llama-2-*-hf, config.json). Llama 3: A. Dubey et al., "The
#: Llama 3 Herd of Models", 2024, Table 3 (layers, model and FFN dimensions, heads, 8 key-value
#: heads), vocabulary 128,256 as released (meta-llama/Meta-Llama-3-8B, config.json).
_L2 = "Touvron et al. 2023, Table 1; meta-llama/Llama-2-{}-hf config.json"
_L3 = "Dubey et al. 2024, Table 3; vocabulary 128,256 as released"


def _llama(layers: int, hidden: int, heads: int, kv_heads: int, vocab: int, ffn: int, source: str):
    """A published Llama shape with its parameters counted from the shape (within 0.1% of the
    published totals: tests/test_inference.py)."""
    shape = Decoder(1, layers, hidden, heads, kv_heads, vocab, ffn, source=source)
    return Decoder(shape.shape_params, layers, hidden, heads, kv_heads, vocab, ffn, source=source)


DECODERS = {
    "Llama 2 7B": _llama(32, 4096, 32, 32, 32000, 11008, _L2.format("7b")),
    "Llama 2 13B": _llama(40, 5120, 40, 40, 32000, 13824, _L2.format("13b")),
    "Llama 2 70B": _llama(80, 8192, 64, 8, 32000, 28672, _L2.format("70b")),
    "Llama 3 8B": _llama(32, 4096, 32, 8, 128256, 14336, _L3),
    "Llama 3 70B": _llama(80, 8192, 64, 8, 128256, 28672, _L3),
    "Llama 3 405B": _llama(126, 16384, 128, 8, 128256, 53248, _L3),
}


@dataclass(frozen=True)
class DecodeStep:
    """The lower bound of one decode step (:func:`decode_step`)."""

    seconds: float  #: the bound: max(memory_seconds, compute_seconds)
    tokens_per_s: float  #: batch / seconds (all sequences together)
    memory_bytes: float  #: what the GPU must hold: all weights and the batch's KV cache
    bytes_moved: float  #: what one step reads: the streamed weights and every sequence's cache
    flops: float
    memory_seconds: float  #: bytes_moved / bandwidth
    compute_seconds: float  #: flops / peak
    fits: bool  #: memory_bytes within the GPU's memory
    bound: str  #: "memory" or "compute": the larger of the two times

    @property
    def tokens_per_s_per_sequence(self) -> float:
        """What one user sees: one token per step."""
        return 1 / self.seconds


def _gpu(gpu) -> _specs.GpuSpec:
    if isinstance(gpu, _specs.GpuSpec):
        return gpu
    return _specs.get(gpu)


def _peak(spec: _specs.GpuSpec, dtype: str) -> float:
    peak = spec.peak_flops(dtype)
    if peak is None:
        raise ValueError(
            f"the {spec.name} has no {dtype} tensor cores (gu.specs): pass dtype='fp16' or 'fp32'"
        )
    return peak


def _positive(name: str, value: float) -> None:
    if not value > 0:
        raise ValueError(f"{name} must be positive, got {value!r}")


def decode_step(
    decoder: Decoder,
    gpu,
    batch: int,
    context: int,
    weight_bytes: float = 2,
    kv_bytes: float = 2,
    dtype: str = "bf16",
) -> DecodeStep:
    """The lower bound of one decode step of ``batch`` sequences that each attend to
    ``context`` earlier tokens, on ``gpu`` (a ``gu.specs`` name or spec): weights stored with
    ``weight_bytes`` per parameter (2 for bf16, 1 for int8, 0.5 for int4 without its scales),
    the cache with ``kv_bytes`` per value, the math at ``dtype``'s peak (weight-only
    quantisation still multiplies in bf16)."""
    spec = _gpu(gpu)
    _positive("batch", batch)
    if context < 0:
        raise ValueError(f"context must be 0 or more tokens, got {context!r}")
    _positive("weight_bytes", weight_bytes)
    _positive("kv_bytes", kv_bytes)
    cache = batch * context * decoder.kv_bytes_per_token(kv_bytes)
    bytes_moved = decoder.streamed_params * weight_bytes + cache
    flops = batch * decoder.flops_per_token(context)
    memory_seconds = bytes_moved / spec.hbm_bandwidth
    compute_seconds = flops / _peak(spec, dtype)
    seconds = max(memory_seconds, compute_seconds)
    memory_bytes = decoder.params * weight_bytes + cache
    return DecodeStep(
        seconds=seconds,
        tokens_per_s=batch / seconds,
        memory_bytes=memory_bytes,
        bytes_moved=bytes_moved,
        flops=flops,
        memory_seconds=memory_seconds,
        compute_seconds=compute_seconds,
        fits=memory_bytes <= spec.hbm_bytes,
        bound="memory" if memory_seconds >= compute_seconds else "compute",
    )


def critical_batch(gpu, dtype: str = "bf16", weight_bytes: float = 2) -> float:
    """The batch above which a decode step's weight matmuls are bound by compute: 2 FLOPs per
    weight per sequence against ``weight_bytes`` per weight read once, so
    batch = peak x weight_bytes / (2 x bandwidth). It leaves out the KV cache, which each
    sequence reads alone (its intensity does not grow with the batch), so a long context keeps
    a step memory-bound beyond this batch."""
    spec = _gpu(gpu)
    _positive("weight_bytes", weight_bytes)
    return _peak(spec, dtype) * weight_bytes / (2 * spec.hbm_bandwidth)


def max_batch(
    decoder: Decoder,
    gpu,
    context: int,
    usable: float = 0.9,
    weight_bytes: float = 2,
    kv_bytes: float = 2,
) -> int:
    """The most sequences of ``context`` tokens whose KV cache fits in ``usable`` of the GPU's
    memory beside the weights (0 when the weights alone do not fit): the largest batch whose
    :func:`decode_step` ``memory_bytes`` stays within ``usable`` x the GPU's memory. vLLM
    takes 90% by default (``gpu_memory_utilization=0.9``, its engine arguments), leaving the
    rest to activations and the CUDA context."""
    spec = _gpu(gpu)
    _positive("context", context)
    if not 0 < usable <= 1:
        raise ValueError(f"usable is a share of the memory in (0, 1], got {usable!r}")
    _positive("weight_bytes", weight_bytes)
    _positive("kv_bytes", kv_bytes)
    room = usable * spec.hbm_bytes - decoder.params * weight_bytes
    if room <= 0:
        return 0
    return int(room // (context * decoder.kv_bytes_per_token(kv_bytes)))


# --- measured on this machine: a Llama-shaped decoder with a KV cache on the CPU -----------------

#: Llama-shaped decoders small enough for a laptop's CPU (random weights, nothing to download),
#: as ``gu.gpt.LlamaConfig`` fields. "125M": GPT-3 Small's width and depth (Brown et al. 2020,
#: Table 2.1: 12 layers, 768 wide, 12 heads) with Llama's blocks, 4 key-value heads, a SwiGLU of
#: 2,048 and Llama 2's 32,000-token vocabulary: 124.7M parameters. "1.1B": TinyLlama-1.1B's shape
#: (P. Zhang et al., "TinyLlama", 2024, Table 1: 22 layers, 2,048 wide, 32 heads, 4 key-value
#: heads, intermediate 5,632, vocabulary 32,000): 1.10B parameters.
CPU_SHAPES = {
    "125M": dict(vocab_size=32000, d_model=768, n_layers=12, n_heads=12, n_kv_heads=4,
                 ffn_hidden=2048),
    "1.1B": dict(vocab_size=32000, d_model=2048, n_layers=22, n_heads=32, n_kv_heads=4,
                 ffn_hidden=5632),
}  # fmt: skip


class KVCache:
    """Keys and values of every layer for ``batch`` sequences of up to ``length`` tokens, kept
    at the model's ``n_kv_heads`` (grouped-query attention keeps no copies per query head)."""

    def __init__(self, config, batch: int, length: int, dtype, device="cpu") -> None:
        import torch

        shape = (batch, length, config.n_kv_heads, config.head_dim)
        self.keys = [torch.zeros(shape, dtype=dtype, device=device) for _ in range(config.n_layers)]
        self.values = [torch.zeros_like(k) for k in self.keys]
        self.length = length

    @property
    def nbytes(self) -> int:
        return sum(t.numel() * t.element_size() for t in self.keys + self.values)


def forward_cached(model, idx, cache: KVCache, start: int):
    """Logits for the tokens ``idx`` (batch, new tokens) of a ``gu.gpt.Llama`` that continue
    sequences whose first ``start`` tokens are in ``cache``: a prefill when ``start`` is 0 and
    ``idx`` is the prompt, a decode step when ``idx`` holds one token per sequence."""
    end = start + idx.shape[1]
    if end > min(cache.length, model.config.seq_len):
        raise ValueError(
            f"positions up to {end} do not fit: the cache holds {cache.length} tokens and the "
            f"model's RoPE table {model.config.seq_len}; build both longer"
        )
    x = model.tok_embeddings(idx)
    for layer, keys, values in zip(model.layers, cache.keys, cache.values, strict=True):
        x = x + layer.attention(layer.attention_norm(x), keys, values, start)
        x = x + layer.feed_forward(layer.ffn_norm(x))
    return model.output(model.norm(x))


def cpu_read_bandwidth(nbytes: int = 256 * 2**20, repeats: int = 5) -> float:
    """Bytes per second this CPU reads from memory, the best of ``repeats`` sums of a
    ``nbytes`` float32 tensor far larger than its caches (``torch.sum``: each element read
    once, one add each, on every core torch uses): the bound a decode step that streams its
    weights cannot beat on this machine."""
    import time

    import torch

    src = torch.ones(nbytes // 4, dtype=torch.float32)
    src.sum()  # touch the pages once
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        src.sum()
        best = min(best, time.perf_counter() - t0)
    return src.numel() * 4 / best


@dataclass(frozen=True)
class CpuDecode:
    """What :func:`measure_cpu_decode` measured (a CPU, not a GPU)."""

    params: int
    batch: int
    prompt: int
    steps: int
    dtype: str
    prefill_tokens_per_s: float  #: prompt tokens of the whole batch per second
    decode_tokens_per_s: float  #: new tokens of the whole batch per second
    bytes_per_step: float  #: streamed weights + the batch's cache at the mean context
    read_bandwidth: float  #: :func:`cpu_read_bandwidth`, measured just before

    @property
    def bound_tokens_per_s(self) -> float:
        """The decode rate if every step read its bytes at the measured read bandwidth."""
        return self.batch * self.read_bandwidth / self.bytes_per_step

    @property
    def share_of_bound(self) -> float:
        return self.decode_tokens_per_s / self.bound_tokens_per_s


def measure_cpu_decode(
    shape: str | dict = "125M",
    batch: int = 1,
    prompt: int = 32,
    steps: int = 16,
    dtype: str = "float32",
    seed: int = 0,
) -> CpuDecode:
    """Build a Llama-shaped decoder with random weights (``CPU_SHAPES[shape]`` or a dict of
    ``gu.gpt.LlamaConfig`` fields), prefill a random prompt of ``prompt`` tokens for ``batch``
    sequences, then time ``steps`` decode steps (greedy, one token per sequence each) on this
    CPU, and set the decode rate against this CPU's read bandwidth."""
    import time

    import torch

    from ..many_gpus import gpt

    fields = CPU_SHAPES[shape] if isinstance(shape, str) else dict(shape)
    _positive("batch", batch)
    _positive("prompt", prompt)
    _positive("steps", steps)
    torch_dtype = getattr(torch, dtype)
    length = prompt + steps
    config = gpt.LlamaConfig(seq_len=length, **fields)
    torch.manual_seed(seed)
    model = gpt.Llama(config).to(torch_dtype).eval()
    n_params = gpt.llama_n_params(config)
    cache = KVCache(config, batch, length, torch_dtype)
    tokens = torch.randint(0, config.vocab_size, (batch, prompt))
    bandwidth = cpu_read_bandwidth()
    with torch.inference_mode():
        t0 = time.perf_counter()
        logits = forward_cached(model, tokens, cache, 0)
        prefill_s = time.perf_counter() - t0
        token = logits[:, -1:].argmax(-1)
        t0 = time.perf_counter()
        for step in range(steps):
            token = forward_cached(model, token, cache, prompt + step)[:, -1:].argmax(-1)
        decode_s = time.perf_counter() - t0
    size = torch.finfo(torch_dtype).bits // 8
    streamed = n_params - config.vocab_size * config.d_model  # one embedding row per token
    mean_context = prompt + (steps + 1) / 2
    kv_per_token = cache.nbytes / (batch * length)
    return CpuDecode(
        params=n_params,
        batch=batch,
        prompt=prompt,
        steps=steps,
        dtype=dtype,
        prefill_tokens_per_s=batch * prompt / prefill_s,
        decode_tokens_per_s=batch * steps / decode_s,
        bytes_per_step=streamed * size + batch * mean_context * kv_per_token,
        read_bandwidth=bandwidth,
    )


# --- weight-only quantisation (section 6) ----------------------------------------------------------


def quantized_bytes_per_weight(
    bits: int, group: int | None = None, scale_bytes: float = 2
) -> float:
    """Bytes one weight takes when stored in ``bits`` with one ``scale_bytes`` scale per
    ``group`` weights (None: one scale per output row, negligible for a large matrix)."""
    if bits not in (2, 3, 4, 8):
        raise ValueError(f"bits must be 2, 3, 4 or 8, got {bits!r}")
    if group is not None:
        _positive("group", group)
    return bits / 8 + (scale_bytes / group if group else 0)


def weight_only_speedup_bound(
    bits: int, group: int | None = 128, scale_bytes: float = 2, base_bytes: float = 2
) -> float:
    """How much faster a memory-bound matmul (a decode step at small batch) can get when its
    weights are stored in ``bits`` instead of ``base_bytes`` each: the ratio of bytes read. At 4
    bits with a 2-byte scale per 128 weights: 16 / 4.125 = 3.88, the "optimal 3.87x" that
    Marlin's README quotes (E. Frantar and D. Alistarh, github.com/IST-DASLab/marlin)."""
    return base_bytes / quantized_bytes_per_weight(bits, group, scale_bytes)


def quantize(weight, bits: int = 4, group: int = 128):
    """Symmetric round-to-nearest quantisation of a 2-D ``weight`` (out x in, numpy or torch)
    along its rows in groups of ``group`` inputs: ``(q, scales)`` with integers q in
    [-(2^(bits-1) - 1), 2^(bits-1) - 1] (int8 storage) and one float scale per group,
    ``weight ~ q * scale`` (the absmax scheme of LLM.int8's vector-wise quantisation and of
    gpt-fast's ``quantize.py``; GPTQ and AWQ choose q more cleverly, not the format)."""
    import numpy as np

    w = np.asarray(weight, dtype=np.float32)
    if w.ndim != 2:
        raise ValueError(f"quantize takes a 2-D weight (out x in), got shape {w.shape}")
    out, inp = w.shape
    if inp % group:
        raise ValueError(f"the input dimension {inp} must be a multiple of the group {group}")
    qmax = 2 ** (bits - 1) - 1
    groups = w.reshape(out, inp // group, group)
    scales = np.abs(groups).max(axis=-1) / qmax
    scales[scales == 0] = 1.0  # an all-zero group: any scale gives q = 0
    q = np.clip(np.rint(groups / scales[..., None]), -qmax, qmax).astype(np.int8)
    return q.reshape(out, inp), scales.astype(np.float32)


def dequantize(q, scales):
    """The float weights ``q * scale`` that :func:`quantize` stands for."""
    import numpy as np

    q = np.asarray(q, dtype=np.float32)
    out, inp = q.shape
    group = inp // scales.shape[1]
    return (q.reshape(out, -1, group) * scales[..., None]).reshape(out, inp)


# --- speculative decoding (section 7) --------------------------------------------------------------


def speculative_expected_tokens(acceptance: float, draft: int) -> float:
    """Tokens one verification step yields on average when the target accepts each of ``draft``
    proposed tokens with probability ``acceptance`` independently: (1 - a^(k+1)) / (1 - a)
    (Y. Leviathan, M. Kalman and Y. Matias, "Fast Inference from Transformers via Speculative
    Decoding", ICML 2023, equation 1): the accepted prefix plus the target's own next token."""
    if not 0 <= acceptance <= 1:
        raise ValueError(f"acceptance is a probability in [0, 1], got {acceptance!r}")
    if draft < 0 or int(draft) != draft:
        raise ValueError(f"draft is a whole number of tokens, 0 or more, got {draft!r}")
    if acceptance == 1:
        return draft + 1.0
    return (1 - acceptance ** (draft + 1)) / (1 - acceptance)


def speculative_speedup(acceptance: float, draft: int, cost_ratio: float) -> float:
    """Expected walltime improvement over plain decoding when one draft step costs
    ``cost_ratio`` of a target step: E[tokens] / (draft x cost_ratio + 1) (Leviathan et al.
    2023, Theorem 3.8), assuming the target verifies ``draft`` tokens as fast as it decodes one
    (true while the step is bound by reading its weights)."""
    if cost_ratio < 0:
        raise ValueError(f"cost_ratio must be 0 or more, got {cost_ratio!r}")
    return speculative_expected_tokens(acceptance, draft) / (draft * cost_ratio + 1)


def speculative_monte_carlo(acceptance: float, draft: int, steps: int = 100_000, seed: int = 0):
    """The mean tokens per verification step over ``steps`` simulated steps: each drafted token
    is accepted with probability ``acceptance`` until the first rejection; the step yields the
    accepted tokens plus one from the target (its correction, or a bonus after all ``draft``)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    accepted = rng.random((steps, draft)) < acceptance
    prefix = np.cumprod(accepted, axis=1).sum(axis=1) if draft else np.zeros(steps)
    return float(np.mean(prefix + 1))


# --- the KV cache in pages (section 5) -------------------------------------------------------------


class CacheFull(RuntimeError):
    """No free block is left for a sequence that needs one."""


class PagedAllocator:
    """vLLM's block table (W. Kwon et al., "Efficient Memory Management for Large Language Model
    Serving with PagedAttention", SOSP 2023, section 4.2): the cache is ``num_blocks`` blocks of
    ``block_size`` tokens; a sequence owns a list of blocks (its block table), not one
    contiguous region, and takes a new block only when its last one is full, so at most
    ``block_size - 1`` slots of each sequence stand empty."""

    def __init__(self, num_blocks: int, block_size: int = 16) -> None:
        _positive("num_blocks", num_blocks)
        _positive("block_size", block_size)
        self.block_size = block_size
        self.num_blocks = num_blocks
        self._free = list(range(num_blocks - 1, -1, -1))  # pop() hands out block 0 first
        self._tables: dict = {}
        self._tokens: dict = {}

    @property
    def free_blocks(self) -> int:
        return len(self._free)

    def blocks_for(self, tokens: int) -> int:
        return -(-tokens // self.block_size)

    def block_table(self, seq) -> list[int]:
        return list(self._tables[seq])

    def tokens(self, seq) -> int:
        return self._tokens[seq]

    def can_grow(self, seq, tokens: int = 1) -> bool:
        """Whether ``seq`` (new or held) can take ``tokens`` more without running out."""
        held = self._tokens.get(seq, 0)
        need = self.blocks_for(held + tokens) - self.blocks_for(held)
        return need <= len(self._free)

    def grow(self, seq, tokens: int = 1) -> list[int]:
        """Give ``seq`` room for ``tokens`` more tokens (a new sequence starts at 0); returns
        the blocks it newly took. Raises :class:`CacheFull`, taking nothing, when too few
        blocks are free."""
        if tokens < 0:
            raise ValueError(f"tokens must be 0 or more, got {tokens!r}")
        if not self.can_grow(seq, tokens):
            raise CacheFull(
                f"sequence {seq!r} needs more blocks than the {len(self._free)} free: free a "
                "sequence (preempt it) or wait for one to finish"
            )
        held = self._tokens.get(seq, 0)
        new = [
            self._free.pop() for _ in range(self.blocks_for(held + tokens) - self.blocks_for(held))
        ]
        self._tables.setdefault(seq, []).extend(new)
        self._tokens[seq] = held + tokens
        return new

    def free(self, seq) -> None:
        """Return every block of ``seq`` (it finished, or was preempted)."""
        self._free.extend(reversed(self._tables.pop(seq)))
        del self._tokens[seq]

    @property
    def used_slots(self) -> int:
        return sum(len(t) for t in self._tables.values()) * self.block_size

    @property
    def wasted_slots(self) -> int:
        """Slots held but not filled: the unused tail of each sequence's last block."""
        return self.used_slots - sum(self._tokens.values())


def cache_waste(lengths, reserve: int | None = None, block_size: int | None = None) -> float:
    """The share of the KV-cache slots held for the sequences of ``lengths`` tokens that hold
    no token: with a contiguous region of ``reserve`` slots per sequence (its maximum length,
    as systems before vLLM reserved), or with blocks of ``block_size`` (paging); give one."""
    lengths = [int(n) for n in lengths]
    if (reserve is None) == (block_size is None):
        raise ValueError("give either reserve= (contiguous) or block_size= (paged), not both")
    if not lengths or min(lengths) < 1:
        raise ValueError("lengths must be a non-empty list of positive token counts")
    if reserve is not None:
        if max(lengths) > reserve:
            raise ValueError(f"a sequence of {max(lengths)} tokens does not fit {reserve} slots")
        held = reserve * len(lengths)
    else:
        _positive("block_size", block_size)
        held = sum(-(-n // block_size) * block_size for n in lengths)
    return 1 - sum(lengths) / held


# --- batching: a scheduler the learner drives (section 4) ----------------------------------------


@dataclass(frozen=True)
class Request:
    """A request that arrives at step number ``arrival`` (steps count from 0) with a ``prompt``
    of tokens and wants ``output`` new tokens."""

    id: int
    arrival: int
    prompt: int
    output: int

    def __post_init__(self) -> None:
        if self.arrival < 0 or self.prompt < 1 or self.output < 1:
            raise ValueError(f"request {self.id}: arrival >= 0, prompt >= 1 and output >= 1")


@dataclass
class Seq:
    """A request inside the scheduler: ``to_prefill`` counts the prompt tokens (and, after a
    preemption, the generated ones) not yet in the cache; ``generated`` the tokens produced."""

    request: Request
    to_prefill: int
    generated: int = 0

    @property
    def id(self) -> int:
        return self.request.id


@dataclass
class SchedulerState:
    """What one scheduler step sees and changes: ``running`` (admitted sequences, prefilling or
    decoding, in admission order), ``waiting`` (queued: preempted sequences first, then
    arrivals in order) and ``cache`` (a :class:`PagedAllocator`, keyed by request id)."""

    running: list
    waiting: list
    cache: PagedAllocator


@dataclass(frozen=True)
class StepPlan:
    """What one scheduler step did: the ids of the sequences that ``decode`` a token, the
    ``prefill`` chunks as (id, tokens), the ids ``admitted`` from the queue and those
    ``preempted`` (their blocks freed, queued again to be recomputed)."""

    decode: tuple = ()
    prefill: tuple = ()
    admitted: tuple = ()
    preempted: tuple = ()

    @property
    def tokens(self) -> int:
        """Tokens the step runs through the model: one per decode plus the chunks."""
        return len(self.decode) + sum(n for _, n in self.prefill)


def schedule_step(
    state: SchedulerState,
    token_budget: int,
    max_batch: int | None = None,
    policy: str = "continuous",
) -> StepPlan:
    """One step of :func:`serve`'s scheduler: change ``state`` (the cache, ``running``,
    ``waiting``, each sequence's ``to_prefill``) and return what it did as a :class:`StepPlan`.

    ``"continuous"``, in this order:

    1. every running sequence past its prompt (``to_prefill == 0``), in admission order,
       decodes one token while budget is left: it takes one cache slot; when no block is free,
       the most recently admitted sequence (``running[-1]``, possibly itself) is preempted,
       again until it can grow or is itself preempted: its blocks are freed, its
       ``to_prefill`` becomes its prompt plus the tokens generated so far (recomputation, Kwon
       et al. 2023, section 4.5) and it goes to the front of ``waiting``;
    2. prompt chunks of ``min(budget left, to_prefill)`` tokens: first the running sequences
       still prefilling, then the waiting ones, in order, stopping at the first that finds no
       budget left, the batch full (``max_batch``: a waiting one is admitted, moved to the end
       of ``running``) or too few free blocks for its chunk.

    ``"static"``: decode as above; prefill only when nothing is running: a batch of waiting
    sequences, whole prompts, as long as ``max_batch`` and room for their whole output allow.

    The loop around it (:func:`serve`) queues arrivals, hands out the tokens (a decode, or a
    chunk that ends a prompt, makes one) and retires finished sequences."""
    if policy not in ("continuous", "static"):
        raise ValueError(f"policy must be 'continuous' or 'static', got {policy!r}")
    running, waiting, cache = state.running, state.waiting, state.cache
    budget = token_budget
    decode: list = []
    prefill: list = []
    admitted: list = []
    preempted: list = []

    def preempt(victim: Seq) -> None:
        cache.free(victim.id)
        running.remove(victim)
        victim.to_prefill = victim.request.prompt + victim.generated
        waiting.insert(0, victim)
        preempted.append(victim.id)

    # 1. every sequence past its prompt decodes one token (its last token enters the cache)
    for seq in [s for s in running if s.to_prefill == 0]:
        if seq not in running or budget == 0:
            continue
        while not cache.can_grow(seq.id) and seq in running:
            preempt(running[-1])
        if seq not in running:
            continue
        cache.grow(seq.id)
        budget -= 1
        decode.append(seq.id)

    # 2. prompt chunks, oldest admitted first, then new admissions
    if policy == "continuous":
        for seq in [s for s in running if s.to_prefill > 0] + list(waiting):
            full = max_batch is not None and len(running) >= max_batch
            if budget == 0 or (seq not in running and full):
                break
            chunk = min(budget, seq.to_prefill)
            if not cache.can_grow(seq.id, chunk):
                break
            if seq not in running:
                waiting.remove(seq)
                running.append(seq)
                admitted.append(seq.id)
            cache.grow(seq.id, chunk)
            seq.to_prefill -= chunk
            budget -= chunk
            prefill.append((seq.id, chunk))
    elif not running:  # static: a new batch only once the last one has finished
        spare = cache.free_blocks
        for seq in list(waiting):
            need = cache.blocks_for(seq.request.prompt + seq.request.output)
            if (max_batch is not None and len(running) >= max_batch) or need > spare:
                break
            spare -= need  # room for its whole output: a static batch never preempts
            waiting.remove(seq)
            running.append(seq)
            admitted.append(seq.id)
            cache.grow(seq.id, seq.to_prefill)
            prefill.append((seq.id, seq.to_prefill))
            seq.to_prefill = 0
    return StepPlan(tuple(decode), tuple(prefill), tuple(admitted), tuple(preempted))


@dataclass(frozen=True)
class ServeResult:
    """What :func:`serve` recorded. Times are in steps, or in seconds with ``step_time``."""

    steps: int
    seconds: float
    first_token: dict  #: request id -> time from arrival to its first token (TTFT)
    per_token: dict  #: request id -> mean time between its later tokens (TPOT)
    finished: dict  #: request id -> time from arrival to its last token
    tokens: int  #: output tokens produced
    preemptions: int
    trace: list  #: per step: (decode tokens, prefill tokens, sequences running, free blocks)

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.seconds


def _step_cost(step_time, decode: int, prefill: int, context: int) -> float:
    return 1.0 if step_time is None else step_time(decode, prefill, context)


def serve(
    requests,
    policy: str = "continuous",
    token_budget: int = 512,
    num_blocks: int = 1024,
    block_size: int = 16,
    max_batch: int | None = None,
    step_time=None,
    max_steps: int = 1_000_000,
    scheduler=None,
) -> ServeResult:
    """Run ``requests`` through one model replica, step by step.

    ``"continuous"`` (iteration-level scheduling: G. Yu et al., "Orca", OSDI 2022; chunked
    prefill within a token budget: A. Agrawal et al., "Sarathi-Serve", OSDI 2024): each step
    first gives every running sequence its next token, then spends what is left of
    ``token_budget`` on prompt chunks, oldest request first, admitting new requests while the
    cache and ``max_batch`` allow; a request's first token comes out of the step that
    finishes its prompt. When a running sequence needs a block and none is free, the most
    recently admitted sequence is preempted: its blocks are freed and it is queued first to
    be prefilled again, its tokens so far included (vLLM's recomputation, Kwon et al. 2023,
    section 4.5).
    ``"static"``: a batch of up to ``max_batch`` requests is admitted only when the previous
    batch has completely finished, as before iteration-level scheduling.

    ``step_time(decode_tokens, prefill_tokens, context_tokens)`` gives a step's seconds (for
    instance from :func:`decode_step`'s bound); without it every step counts 1.

    Each step is :func:`schedule_step` (or ``scheduler``, called the same way: lab 13's
    checker runs the learner's step in this loop)."""
    if policy not in ("continuous", "static"):
        raise ValueError(f"policy must be 'continuous' or 'static', got {policy!r}")
    _positive("token_budget", token_budget)
    requests = sorted(requests, key=lambda r: (r.arrival, r.id))
    if len({r.id for r in requests}) != len(requests):
        raise ValueError("every request needs its own id")
    scheduler = schedule_step if scheduler is None else scheduler
    cache = PagedAllocator(num_blocks, block_size)
    for r in requests:
        if cache.blocks_for(r.prompt + r.output) > num_blocks:
            raise ValueError(
                f"request {r.id} needs {r.prompt + r.output} tokens of cache, more than the "
                f"{num_blocks * block_size} there are: give serve() more num_blocks"
            )
    pending = list(requests)
    state = SchedulerState(running=[], waiting=[], cache=cache)
    clock, step, preemptions, tokens = 0.0, 0, 0, 0
    arrived_at, first, last, trace = {}, {}, {}, []
    gaps: dict = {}

    while pending or state.waiting or state.running:
        if step >= max_steps:
            raise RuntimeError(f"serve() stopped after {max_steps} steps: raise max_steps")
        while pending and pending[0].arrival <= step:
            r = pending.pop(0)
            arrived_at[r.id] = clock
            state.waiting.append(Seq(r, r.prompt))
        plan = scheduler(state, token_budget, max_batch, policy)
        running = state.running
        by_id = {s.id: s for s in running}
        preemptions += len(plan.preempted)
        decode = len(plan.decode)
        prefill = sum(n for _, n in plan.prefill)
        # a decode, or a chunk that ends its prompt, makes a token
        produced = [by_id[i] for i in plan.decode]
        produced += [by_id[i] for i, _ in plan.prefill if by_id[i].to_prefill == 0]
        context = sum(state.cache.tokens(s.id) for s in running)
        clock += _step_cost(step_time, decode, prefill, context)
        for seq in produced:
            rid = seq.request.id
            if seq.generated == 0 or rid not in first:
                first.setdefault(rid, clock - arrived_at[rid])
            else:
                gaps.setdefault(rid, []).append(clock - last[rid])
            seq.generated += 1
            tokens += 1
            last[rid] = clock
            if seq.generated == seq.request.output:
                running.remove(seq)
                state.cache.free(rid)
        trace.append((decode, prefill, len(running), state.cache.free_blocks))
        step += 1
    return ServeResult(
        steps=step,
        seconds=clock,
        first_token=first,
        per_token={k: sum(v) / len(v) for k, v in gaps.items()},
        finished={k: last[k] - arrived_at[k] for k in last},
        tokens=tokens,
        preemptions=preemptions,
        trace=trace,
    )
