"""How much memory training and serving a transformer takes, per GPU (chapters 09 and 10).

Three formulas, each from the paper that introduced it, and one measurement to check them:

* :func:`model_state_bytes`: parameters, gradients and optimizer states under data parallelism
  with ZeRO stage 0-3, S. Rajbhandari, J. Rasley, O. Ruwase and Y. He, "ZeRO: Memory
  Optimizations Toward Training Trillion Parameter Models", SC 2020 (arXiv:1910.02054), section 3.1
  (mixed-precision Adam: 2Ψ + 2Ψ + KΨ bytes, K = 12) and section 5 / Figure 1 (the stages);
* :func:`activation_bytes_per_layer`: V. Korthikanti, J. Casper, S. Lym, L. McAfee, M. Andersch,
  M. Shoeybi and B. Catanzaro, "Reducing Activation Recomputation in Large Transformer Models",
  MLSys 2023 (arXiv:2205.05198), section 4 equations 1-4 and Table 2;
* :func:`kv_cache_bytes`: the keys and values a decoder keeps per token when serving, as in
  W. Kwon et al., "Efficient Memory Management for Large Language Model Serving with
  PagedAttention", SOSP 2023 (arXiv:2309.06180), section 3;
* :func:`measure_saved_activations`: what autograd really keeps for one layer of ``gu.gpt``,
  counted with ``torch.autograd.graph.saved_tensors_hooks``;
* :func:`measure_sharded_rank`: what one rank of a 64- or 256-way FSDP2 job of a 7B-shaped
  ``gu.gpt`` holds, traced on this CPU with a fake process group and fake tensors;
* :func:`measured_state_bytes`: the parameter, gradient and optimizer bytes a rank really holds.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "DAO_2022",
    "KORTHIKANTI_2022",
    "KWON_2023",
    "ZERO_2020",
    "ActivationMeasurement",
    "ModelState",
    "ShardedRankMeasurement",
    "activation_bytes",
    "activation_bytes_per_layer",
    "kv_cache_bytes",
    "measure_saved_activations",
    "measure_sharded_rank",
    "measured_state_bytes",
    "model_state_bytes",
]

ZERO_2020 = (
    "S. Rajbhandari, J. Rasley, O. Ruwase and Y. He, 'ZeRO: Memory Optimizations Toward Training "
    "Trillion Parameter Models', SC 2020 (arXiv:1910.02054)"
)
KORTHIKANTI_2022 = (
    "V. Korthikanti et al., 'Reducing Activation Recomputation in Large Transformer Models', "
    "MLSys 2023 (arXiv:2205.05198)"
)
DAO_2022 = (
    "T. Dao, D. Y. Fu, S. Ermon, A. Rudra and C. Re, 'FlashAttention: Fast and Memory-Efficient "
    "Exact Attention with IO-Awareness', NeurIPS 2022 (arXiv:2205.14135)"
)
KWON_2023 = (
    "W. Kwon et al., 'Efficient Memory Management for Large Language Model Serving with "
    "PagedAttention', SOSP 2023 (arXiv:2309.06180)"
)

RECOMPUTE = ("none", "selective", "full")
ATTENTION = ("eager", "flash")


@dataclass(frozen=True)
class ModelState:
    """Bytes per device of each part of the model state; ``.total`` (and ``int()``) is the sum."""

    parameters: float
    gradients: float
    optimizer: float

    @property
    def total(self) -> float:
        return self.parameters + self.gradients + self.optimizer

    def __int__(self) -> int:
        return round(self.total)

    def __float__(self) -> float:
        return float(self.total)


def model_state_bytes(
    n_params: float,
    *,
    dp: int = 1,
    zero_stage: int = 0,
    param_bytes: float = 2,
    grad_bytes: float = 2,
    optimizer_bytes: float = 12,
) -> ModelState:
    """Bytes per device of parameters, gradients and optimizer states (ZERO_2020).

    Mixed-precision Adam keeps fp16 parameters and gradients (2Ψ + 2Ψ bytes) and an fp32 copy of
    the parameters, momentum and variance (KΨ, K = 12): section 3.1. Under data parallelism of
    degree ``dp`` (the paper's N_d), ZeRO partitions (section 5, Figure 1):

    * stage 0 (plain data parallel): (2 + 2 + K)Ψ on every device;
    * stage 1, P_os: 2Ψ + 2Ψ + KΨ/N_d;
    * stage 2, P_os+g: 2Ψ + (2 + K)Ψ/N_d;
    * stage 3, P_os+g+p: (2 + 2 + K)Ψ/N_d.

    Figure 1's example: Ψ = 7.5e9, N_d = 64 gives 120 GB, 31.4 GB, 16.6 GB and 1.9 GB.
    Partitions are taken as exact fractions (Ψ/N_d), as the paper does; a real implementation
    pads each shard to a whole number of elements.
    """
    if zero_stage not in (0, 1, 2, 3):
        raise ValueError(f"zero_stage must be 0, 1, 2 or 3, got {zero_stage!r}")
    if dp < 1:
        raise ValueError(f"dp must be a positive integer, got {dp!r}")
    return ModelState(
        parameters=n_params * param_bytes / (dp if zero_stage >= 3 else 1),
        gradients=n_params * grad_bytes / (dp if zero_stage >= 2 else 1),
        optimizer=n_params * optimizer_bytes / (dp if zero_stage >= 1 else 1),
    )


def activation_bytes_per_layer(
    seq_len: int,
    micro_batch: int,
    hidden: int,
    n_heads: int,
    *,
    tp: int = 1,
    sequence_parallel: bool = False,
    recompute: str = "none",
    dropout_masks: bool = True,
    attention: str = "eager",
) -> float:
    """Bytes of activations one transformer layer keeps for its backward pass (KORTHIKANTI_2022).

    s = ``seq_len``, b = ``micro_batch``, h = ``hidden``, a = ``n_heads``, t = ``tp``; 16-bit
    activations, 1-byte dropout masks. Section 4.1, equation 1, no parallelism:
    sbh (34 + 5as/h), of which attention keeps 11sbh + 5as^2b, the MLP 19sbh and the two
    LayerNorms 4sbh. Table 2 (and equations 2 and 4), per GPU:

    ==========================================  ==============================
    tensor parallel (eq. 2)                     sbh (10 + 24/t + 5as/(ht))
    tensor + sequence parallel (eq. 4)          sbh/t (34 + 5as/h)
    tensor parallel + selective recompute       sbh (10 + 24/t)
    tensor + sequence + selective recompute     sbh (34/t)
    full recompute                              2sbh
    ==========================================  ==============================

    Selective recompute drops the 5as^2b of the attention core (QK^T, softmax, its dropout,
    attention over V), section 5. Full recompute keeps only the layer's input, 2sbh (Table 2);
    with sequence parallelism that input is split along the sequence too, 2sbh/t (an
    extension: Table 2 lists 2sbh for both).

    ``dropout_masks=False`` leaves out the three dropout masks (sbh each after the attention and
    the MLP, as^2b after the softmax) for a model trained without dropout: then the softmax
    output that attention-over-V uses is the one already counted, and eq. 1 becomes
    sbh (32 + 2as/h). This is what a PyTorch model with dropout 0 saves (see
    :func:`measure_saved_activations`).

    ``attention="flash"`` counts a fused attention kernel (DAO_2022) instead of the paper's
    attention written out (``"eager"``, the default: the formula as published). The 5as/h term
    of eq. 1 is exactly the s x s part (QK^T's softmax output 2as^2b, its dropout mask as^2b and
    the dropout output 2as^2b); FlashAttention never stores it: its backward recomputes the
    scores from Q, K, V (already counted) and the softmax statistics it saved, one fp32
    log-sum-exp per head and token (4ab s bytes, 4a/h x sbh), DAO_2022 section 3.1 and
    Algorithm 2. So flash is selective recompute's memory plus that sliver, and
    ``recompute="selective"`` changes nothing more. One 4096-token sequence through a 7B-shaped
    model without dropout (h = 4096, a = 32, 32 layers) keeps 32 + 2as/h = 96 sbh per layer
    eager, 48 GiB in all, and 32 + 4a/h = 32.03 sbh with flash, 16 GiB.
    """
    if recompute not in RECOMPUTE:
        raise ValueError(f"recompute must be one of {RECOMPUTE}, got {recompute!r}")
    if attention not in ATTENTION:
        raise ValueError(f"attention must be one of {ATTENTION}, got {attention!r}")
    if tp < 1 or hidden % tp or n_heads % tp:
        raise ValueError(f"tp={tp} must divide hidden ({hidden}) and n_heads ({n_heads})")
    s, b, h, a, t = seq_len, micro_batch, hidden, n_heads, tp
    sbh = s * b * h
    if recompute == "full":
        return 2 * sbh / (t if sequence_parallel else 1)
    # 10sbh outside the tensor-parallel regions, replicated on every TP rank unless SP splits
    # them: LayerNorm inputs 4, QKV and first-MLP inputs 2 + 2, the two dropout masks 1 + 1.
    # 24sbh inside, split by t: Q, K 4, V 2, output-projection input 2, GeLU input 8, second
    # MLP input 8. Without dropout the two masks go from the replicated part.
    replicated = 10.0 if dropout_masks else 8.0
    split = 24.0
    attention_core = (5.0 if dropout_masks else 2.0) * a * s / h  # x sbh; 5as^2b / sbh
    if attention == "flash":  # no s x s tensor kept: the fp32 log-sum-exp per head and token
        attention_core = 4.0 * a / h
    elif recompute == "selective":
        attention_core = 0.0
    if sequence_parallel:
        return sbh / t * (replicated + split + attention_core)
    return sbh * (replicated + split / t + attention_core / t)


def activation_bytes(
    layers: int,
    seq_len: int,
    micro_batch: int,
    hidden: int,
    n_heads: int,
    *,
    tp: int = 1,
    pp: int = 1,
    sequence_parallel: bool = False,
    recompute: str = "none",
    in_flight: int | None = None,
    attention: str = "eager",
) -> float:
    """Activation bytes on the busiest GPU: layers/pp layers x the micro-batches in flight.

    With 1F1B pipelining the first stage holds ``pp`` micro-batches (D. Narayanan et al.,
    "Efficient Large-Scale Language Model Training on GPU Clusters Using Megatron-LM", SC 2021,
    section 2.2.1), so the total is L/p x p = L layers' worth, KORTHIKANTI_2022 section 4.2.3
    equation 5 (which leaves out the embedding and output layer). ``in_flight`` overrides the
    number of micro-batches held (GPipe holds all m of them). ``attention``: see
    :func:`activation_bytes_per_layer`.
    """
    held = pp if in_flight is None else in_flight
    per_layer = activation_bytes_per_layer(
        seq_len,
        micro_batch,
        hidden,
        n_heads,
        tp=tp,
        sequence_parallel=sequence_parallel,
        recompute=recompute,
        attention=attention,
    )
    return per_layer * layers / pp * held


def kv_cache_bytes(
    layers: int,
    kv_heads: int,
    head_dim: int,
    seq_len: int,
    batch: int = 1,
    bytes_per_value: float = 2,
) -> float:
    """Bytes of the key-value cache: 2 (K and V) x layers x kv_heads x head_dim x tokens x bytes.

    KWON_2023 section 3: one token of OPT-13B takes 2 x 5120 x 40 x 2 bytes = 800 KB, and a
    2048-token request up to 1.6 GB. With grouped-query attention only the ``kv_heads`` key-value
    heads are kept (J. Ainslie et al., "GQA", EMNLP 2023).
    """
    return 2 * layers * kv_heads * head_dim * seq_len * batch * bytes_per_value


@dataclass(frozen=True)
class ActivationMeasurement:
    """What autograd saved for one block of ``gu.gpt``, and what the formula says.

    ``saved`` lists each distinct storage saved, in the order the forward pass saved it, as
    (shape, dtype, bytes) of the first tensor seen on it.
    """

    measured: int
    formula: float
    saved: list[tuple[tuple[int, ...], str, int]]

    @property
    def ratio(self) -> float:
        return self.measured / self.formula


def measure_saved_activations(
    seq_len: int = 64,
    micro_batch: int = 2,
    hidden: int = 64,
    n_heads: int = 4,
    *,
    recompute: str = "none",
    dropout: float = 0.0,
    dtype=None,
    seed: int = 0,
    attention: str = "eager",
) -> ActivationMeasurement:
    """Run one ``gu.gpt.Block`` forward on CPU and count the bytes autograd saves for backward.

    Every tensor saved for the backward pass goes through a ``saved_tensors_hooks`` pack hook;
    distinct storages are counted once (a softmax output saved by softmax and by the next
    matmul is one tensor), parameters are left out (they are model state, not activations).
    ``dtype`` defaults to ``torch.bfloat16``: 16-bit activations, as KORTHIKANTI_2022 assumes.
    The block has dropout 0, so the formula it is compared with is
    ``activation_bytes_per_layer(..., dropout_masks=False)``, sbh (32 + 2as/h). What is measured
    is that plus exactly two things the paper does not count (tests/test_memory.py): each
    LayerNorm's mean and 1/std (2 s b values each) and the s x s boolean causal mask that
    ``masked_fill`` keeps (recomputed, so absent, under selective recompute). Q, K and V are
    saved as copies (reshaped for the batched matmul) when b > 1 and as views of the fused QKV
    output when b = 1; both come to 6sbh, as the paper counts. With ``dropout`` > 0 the three
    dropout masks and the dropout output appear, and the formula compared is the paper's own,
    sbh (34 + 5as/h); PyTorch's CPU dropout keeps its masks in the activations' dtype (2 bytes
    per element in bf16) where the paper counts 1 byte, so as^2b + 2sbh more are measured.
    ``attention="flash"`` runs the block with PyTorch's fused attention and compares with the
    flash formula (tests/test_memory.py checks what is saved beyond it).
    """
    import torch

    from . import gpt

    dtype = torch.bfloat16 if dtype is None else dtype
    config = gpt.GPTConfig(
        seq_len=seq_len,
        d_model=hidden,
        n_heads=n_heads,
        n_layers=1,
        recompute=recompute,
        dropout=dropout,
        attention=attention,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        block = gpt.Block(config).to(dtype)
        x = torch.randn(micro_batch, seq_len, hidden, dtype=dtype, requires_grad=True)
    params = {p.untyped_storage().data_ptr() for p in block.parameters()}
    saved: dict[int, tuple[tuple[int, ...], str, int]] = {}

    def pack(t: torch.Tensor):
        storage = t.untyped_storage()
        key = storage.data_ptr()
        if key not in params and key not in saved:
            saved[key] = (tuple(t.shape), str(t.dtype).removeprefix("torch."), storage.nbytes())
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        if recompute == "full":
            from torch.utils.checkpoint import checkpoint

            y = checkpoint(block, x, use_reentrant=False)
        else:
            y = block(x)
    y.float().sum().backward()  # the saved tensors were usable
    formula = activation_bytes_per_layer(
        seq_len,
        micro_batch,
        hidden,
        n_heads,
        recompute=recompute,
        dropout_masks=dropout > 0,
        attention=attention,
    )
    items = list(saved.values())
    return ActivationMeasurement(sum(n for *_, n in items), formula, items)


@dataclass(frozen=True)
class ShardedRankMeasurement:
    """Bytes one rank of a ``world_size``-way FSDP2 job holds, traced without real data.

    ``peak`` and ``after_step`` map FSDPMemTracker's categories ("Sharded Param",
    "Unsharded Param", "Sharded Grad", "Activation", "Temp", "All Gather", "Reduce Scatter",
    "OptState", ..., "Total") to bytes, at the peak and after ``optimizer.step()``.
    ``formula`` holds what :func:`model_state_bytes` (ZeRO-3 with fp32 master weights, fp32
    gradients and Adam: 4 + 4 + 8 bytes per parameter, over ``world_size``) and
    :func:`activation_bytes_per_layer` (x layers, bf16, no dropout masks) predict.
    """

    world_size: int
    n_params: int
    peak: dict[str, int]
    after_step: dict[str, int]
    formula: dict[str, float]


def measure_sharded_rank(
    config=None, *, world_size: int = 256, micro_batch: int = 1
) -> ShardedRankMeasurement:
    """Trace rank 0 of a ``world_size``-way ``fully_shard`` (FSDP2) job of ``gu.gpt`` on this CPU.

    Nothing is allocated and nothing is sent: the process group is PyTorch's fake backend
    (``torch.testing._internal.distributed.fake_pg``: collectives return at once), the tensors
    are ``FakeTensorMode`` tensors (shapes and dtypes, no storage), and
    ``torch.distributed._tools.fsdp2_mem_tracker.FSDPMemTracker`` adds up the bytes each
    category would occupy through one forward, backward and Adam step. Each block and the root
    are sharded, with bf16 compute and fp32 gradient reduction (``MixedPrecisionPolicy``).
    ``config`` defaults to a 7B-shaped model (32 layers of 4096, 32 heads, 4096 tokens, 32k
    vocabulary). Takes about a minute for a 7B model on a laptop CPU.
    """
    import torch
    import torch.distributed as dist
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.distributed._tools.fsdp2_mem_tracker import FSDPMemTracker
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
    from torch.testing._internal.distributed.fake_pg import FakeStore

    from . import gpt

    if config is None:
        config = gpt.GPTConfig(
            vocab_size=32000, seq_len=4096, d_model=4096, n_layers=32, n_heads=32, tie_weights=False
        )
    if dist.is_initialized():
        raise RuntimeError("a process group is already initialised in this process")
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=world_size)
    try:
        mesh = init_device_mesh("cpu", (world_size,))
        policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        with FakeTensorMode():
            model = gpt.GPT(config)
            n_params = gpt.n_params(model)
            for block in model.blocks:
                fully_shard(block, mesh=mesh, mp_policy=policy)
            fully_shard(model, mesh=mesh, mp_policy=policy)
            optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
            idx = torch.randint(0, config.vocab_size, (micro_batch, config.seq_len))
            tracker = FSDPMemTracker(model, optimizer)
            tracker.track_inputs((idx,))
            with tracker:
                _, loss = model(idx, idx)
                loss.backward()
                optimizer.step()
                optimizer.zero_grad(set_to_none=False)
                after = tracker.get_tracker_snapshot("current")
            peak = tracker.get_tracker_snapshot("peak")
    finally:
        dist.destroy_process_group()

    def named(snapshot) -> dict[str, int]:
        (per_device,) = snapshot.values()  # one device: the CPU
        return {getattr(k, "value", k): int(v) for k, v in per_device.items()}

    s, b, h, a = config.seq_len, micro_batch, config.d_model, config.n_heads
    state = model_state_bytes(
        n_params, dp=world_size, zero_stage=3, param_bytes=4, grad_bytes=4, optimizer_bytes=8
    )
    layer = activation_bytes_per_layer(s, b, h, a, dropout_masks=False)
    formula = {
        "Sharded Param": state.parameters,
        "Sharded Grad": state.gradients,
        "OptState": state.optimizer,
        "Activation": layer * config.n_layers,
    }
    return ShardedRankMeasurement(world_size, n_params, named(peak), named(after), formula)


def measured_state_bytes(model, optimizer=None) -> ModelState:
    """What a rank actually holds: bytes of its parameters, gradients and optimizer states.

    Counts distinct storages (a tied weight once); a sharded parameter (an FSDP2 ``DTensor``)
    counts its local shard only. Put it beside :func:`model_state_bytes` for the same rank.
    """
    import torch

    def local(t):
        return t.to_local() if hasattr(t, "to_local") else t

    def total(tensors) -> int:
        seen: dict[int, int] = {}
        for t in tensors:
            if isinstance(t, torch.Tensor):
                storage = local(t).untyped_storage()
                seen[storage.data_ptr()] = storage.nbytes()
        return sum(seen.values())

    params = list(model.parameters())
    states = []
    if optimizer is not None:
        for state in optimizer.state.values():
            states.extend(v for v in state.values() if isinstance(v, torch.Tensor))
    return ModelState(
        parameters=total(params),
        gradients=total(p.grad for p in params if p.grad is not None),
        optimizer=total(states),
    )
