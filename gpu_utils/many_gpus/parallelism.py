"""Plan a training job on paper: which layout of data, tensor and pipeline parallelism fits and
how long a step takes (chapter 10).

:func:`evaluate` scores one layout; :func:`plan` enumerates them (DP x TP x PP, ZeRO stage,
micro-batch size, activation recompute, virtual pipeline stages) and sorts them, fitting layouts
fastest first. The cost model, and where each piece comes from:

* memory per GPU: ``gu.memory`` (ZeRO's model states for the parameters a GPU holds,
  Korthikanti et al. 2022 for activations, with ``attention="flash"`` by default: a fused
  attention kernel keeps no s x s scores, Dao et al. 2022), the micro-batches in flight on the
  first pipeline stage (1F1B: min(p, m); interleaved: min(v m, v p + p - 1) model chunks, as
  Megatron-LM's schedule and ``gu.pipeline.interleaved`` warm up, or (v - 1) N + 2 p - 1 with
  N >= p micro-batches per round for Llama 3's flexible schedule, :data:`SCHEDULES`), compared
  with ``usable_memory`` x the GPU's HBM from ``gu.specs``;
* compute time: the hardware FLOPs of ``gu.flops`` (6N + 12 L H Q T per token, 8N + 16 L H Q T
  with full recompute) at an assumed fraction ``mfu`` of the dense peak of ``gu.specs``, on the
  busiest pipeline stage (ceil(L/p) layers);
* pipeline bubble: a fraction (p - 1)/(v m + p - 1) of the step idles (GPipe and 1F1B, Huang et
  al. 2019; Narayanan et al. 2021 section 2.2);
* every collective costs its bandwidth time (``gu.collectives.estimate_time``) plus its latency
  per message, NCCL's own per-hop figures (``gu.collectives.cluster_time``: 3.4 us per NVLink
  hop, 14 us per network hop, 8.4 us per call, NVIDIA NCCL src/graph/tuning.cc); a ring of n
  ranks pays n - 1 hops, so thousands of small collectives over thousands of GPUs cost seconds;
* tensor parallelism (Megatron, Shoeybi et al. 2019 section 3; with sequence parallelism,
  Korthikanti et al. 2022 section 4.2.2): per layer and micro-batch, two all-reduces of the
  s x b x h activations forward and two backward (three each with full recompute). They sit on
  the critical path (Megatron-LM's RowParallelLinear waits for its all-reduce), so they are
  exposed unless ``tp_overlap=True`` (overlapped GEMMs, e.g. Transformer Engine's);
* pipeline sends: the s x b x h activations forward and their gradient backward at each stage
  boundary (divided by t with sequence parallelism, Narayanan et al. 2021 section 4.1's
  scatter/gather), v m + p - 2 of them on the critical path, exposed (1F1B waits for them);
* data parallelism, per step and GPU, for Ψ the parameters a GPU holds (Rajbhandari et al.
  2020, section 7): ZeRO-0 and ZeRO-1 all-reduce (or reduce-scatter + all-gather: the same
  bytes) the bf16 gradients once per step, in Megatron-LM's buckets of max(40M, 1M x DP)
  parameters (megatron/core/distributed/distributed_data_parallel_config.py, bucket_size),
  while the last micro-batch's backward runs; ZeRO-2 reduce-scatters the gradients on *every*
  micro-batch (it keeps only its shard, so it cannot accumulate the full gradient: m x Ψ instead
  of Ψ) and all-gathers the updated parameters once; ZeRO-3 also all-gathers the parameters
  for every micro-batch's forward and backward (and recomputed forward), tensor by tensor
  (``Model.tensors_per_layer``: 12 for GPT, 9 for Llama; one transformer block per collective
  as PyTorch FSDP does with ``gather_unit="block"``, :data:`FSDP`), so its 3 Ψ (4 Ψ with full
  recompute) of traffic is paid m times: gradient accumulation does not amortise it. DeepSpeed
  refuses ZeRO-2 and ZeRO-3 with pipeline parallelism (deepspeed/runtime/pipe/engine.py:
  "ZeRO-2 and ZeRO-3 are incompatible with pipeline parallelism"); :func:`evaluate` refuses
  ZeRO-3 with a pipeline but keeps ZeRO-2, which PyTorch FSDP runs with one, reduce-scattering on every
  micro-batch as above: Llama 3 405B trained that way (Dubey et al. 2024, section 3.3.2);
* overlap: data-parallel traffic runs on its own stream beside the compute it may hide behind
  (the last backward for ZeRO-0/1, each micro-batch's backward for ZeRO-2, each micro-batch's
  forward and backward for ZeRO-3); ``overlap`` (:data:`OVERLAP`) is the fraction of that
  compute that actually hides it. 1 is the rooflines' perfect overlap (J. Austin et al., "How
  to Scale Your Model", 2025, part 12); the default is lower, see :data:`OVERLAP`.

``bound`` names what limits the step: "memory" (it does not fit), "NVLink" or "network" (the
link with the most exposed seconds, once they exceed 1% of the step), or "compute" (the pipeline
bubble is compute time lost, reported as ``bubble``). ``Layout.exposed`` says how many seconds
each link adds.

What the model leaves out (so what it gets wrong): kernels' efficiency varies with their shapes
(``mfu`` is one number for all layouts; :func:`implied_mfu` says what a published run implies:
0.48-0.64 for Megatron-Core's nine published H100 runs, counted the planner's way, see
tests/test_parallelism.py), the embedding and output layer's memory and time, the optimizer
step, CPU overheads and stragglers, and network contention between jobs. :func:`best_layout`
scores a published run whose paper gives the shape but not every setting.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

from ..facts import specs
from . import collectives, flops, memory

__all__ = [
    "FSDP",
    "GATHER_UNITS",
    "LLAMA3_SHARDING",
    "LLAMA3_SHARDING_FP32",
    "MODELS",
    "OVERLAP",
    "SCALING_BOOK",
    "SCHEDULES",
    "Cluster",
    "Layout",
    "Model",
    "best_layout",
    "critical_tokens_per_gpu",
    "evaluate",
    "format_seconds",
    "implied_mfu",
    "in_flight_chunks",
    "plan",
]

SCALING_BOOK = (
    "J. Austin et al., 'How to Scale Your Model' (2025), part 12 'How to Think About GPUs', "
    "section 'Rooflines for LLM Scaling on GPUs' (jax-ml.github.io/scaling-book/gpus)"
)
RECOMPUTE = ("none", "selective", "full")
ATTENTION = ("flash", "eager")
#: Interleaved pipeline schedules. "megatron": Megatron-LM's (Narayanan et al. 2021, section
#: 2.2.2), micro-batches in rounds of exactly p, so m must be a multiple of p. "flexible": the
#: schedule Llama 3 introduced to lift that constraint (Dubey et al. 2024, section 3.3.2, Fig. 6:
#: N micro-batches per round, N tunable), as PyTorch implements it
#: (torch/distributed/pipelining/schedules.py, ScheduleInterleaved1F1B: max(1, m // p) rounds
#: of N = m / rounds micro-batches, warm-up (v - 1) N + 2 (p - 1 - rank) forwards).
SCHEDULES = ("megatron", "flexible")
EXPOSED_TOLERANCE = 0.01  # exposed communication under 1% of the step does not name the bound
#: Parameter tensors per layer ZeRO-3 gathers one by one, unless the Model says otherwise:
#: GPT's (Megatron-LM): fused QKV, projection, two MLP matrices, their 4 biases, 2 LayerNorms
#: (weight and bias). Llama's are 9 (``Model.tensors_per_layer``).
TENSORS_PER_LAYER = 12
#: The fraction of the compute beside which data-parallel traffic runs that actually hides it.
#: 0 by default: what Megatron-LM does out of the box (megatron/core/distributed/
#: distributed_data_parallel_config.py: overlap_grad_reduce, overlap_param_gather and
#: tp_comm_overlap all default to False), and what DeepSpeed's ZeRO-3 of 2021 measured like:
#: 67 s per step on both 768 and 1,536 A100s for GPT-3 175B (Narayanan et al. 2021, Table 2:
#: 88 and 44 TFLOP/s per GPU at the same batch), where hiding its communication behind
#: compute would have halved the step on 1,536. PyTorch FSDP issues its all-gathers and
#: reduce-scatters on separate streams by design (Y. Zhao et al., "PyTorch FSDP: Experiences on
#: Scaling Fully Sharded Data Parallel", VLDB 2023, section 3.3), so 1 describes it better.
OVERLAP = 0.0


def _bucket_params(dp: int) -> float:
    """Megatron-LM's default gradient bucket: max(40M, 1M x DP) parameters (module docstring)."""
    return max(40e6, 1e6 * dp)


@dataclass(frozen=True)
class Model:
    """A dense decoder: ``params`` (all of them), ``layers``, ``hidden``, ``heads``,
    ``seq_len`` (tokens per sequence) and ``vocab``; ``dropout``: whether it trains with
    dropout (GPT-3 and Megatron's models do; Llama does not, so no dropout masks are kept);
    ``tensors_per_layer``: the parameter tensors of one layer, which ZeRO-3 gathers one
    collective each (GPT's 12, :data:`TENSORS_PER_LAYER`; Llama's 9, no biases: wq, wk, wv,
    wo, w1, w2, w3, attention_norm and ffn_norm in the TransformerBlock of Meta's reference
    implementation, github.com/meta-llama/llama3, llama/model.py); ``tied_embeddings``: whether
    the output layer shares the embedding's matrix (GPT-3 does; Llama's ``output`` is its own
    matrix, same model.py)."""

    params: float
    layers: int
    hidden: int
    heads: int
    seq_len: int
    vocab: int
    dropout: bool = True
    tensors_per_layer: int = TENSORS_PER_LAYER
    tied_embeddings: bool = True

    @property
    def layer_params(self) -> float:
        """Parameters of one transformer layer: all of them less the embedding (and the output
        layer when it is not tied to it), over the layers. GPT-3 175B (tied): 12.0 h^2; Llama 3
        70B (untied, SwiGLU, 8 KV heads): 12.76 h^2."""
        embeddings = self.vocab * self.hidden * (1 if self.tied_embeddings else 2)
        return (self.params - embeddings) / self.layers


#: Published shapes. GPT-3 175B: T. Brown et al., "Language Models are Few-Shot Learners",
#: NeurIPS 2020, Table 2.1, with Megatron-LM's padded vocabulary of 51,200 (Narayanan et al.
#: 2021, section 5.1) and 174.6e9 parameters (their Table 2). Llama 3: Dubey et al., "The
#: Llama 3 Herd of Models", 2024, Table 3 (no dropout, sequence 8,192 in pre-training).
#: Llama 3 405B trained as TP 8 x PP 16 with FSDP that shards optimizer states and gradients
#: but keeps the parameters it gathered from forward to backward (section 3.3.2): ZeRO-2's
#: memory, and its reduce-scatter on every micro-batch, overlapped with the backward as FSDP
#: does: :data:`LLAMA3_SHARDING`.
_LLAMA = {"dropout": False, "tensors_per_layer": 9, "tied_embeddings": False}
MODELS = {
    "GPT-3 175B": Model(174.6e9, 96, 12288, 96, 2048, 51200),
    "Llama 3 8B": Model(8.0e9, 32, 4096, 32, 8192, 128256, **_LLAMA),
    "Llama 3 70B": Model(70.6e9, 80, 8192, 64, 8192, 128256, **_LLAMA),
    "Llama 3 405B": Model(405e9, 126, 16384, 128, 8192, 128256, **_LLAMA),
}

#: Llama 3's data parallelism (Dubey et al. 2024, section 3.3.2) as :func:`evaluate` options.
LLAMA3_SHARDING = {"zero_stage": 2, "overlap": 1.0}
#: The same with the paper's words on precision taken literally: gradients "accumulated" and
#: "reduce-scattered in FP32" (sec. 3.3.2), so every micro-batch's reduce-scatter moves 4 bytes
#: per parameter instead of 2. The planner keeps :data:`LLAMA3_SHARDING` (bf16) as its reading;
#: chapter 10 shows both.
LLAMA3_SHARDING_FP32 = {**LLAMA3_SHARDING, "grad_reduce_bytes": 4}
#: What one ZeRO-3 collective gathers (:func:`evaluate`'s ``gather_unit``).
GATHER_UNITS = ("tensor", "block")
#: PyTorch FSDP's ZeRO-3 as :func:`evaluate` options: one all-gather and one reduce-scatter per
#: unit, a transformer block (torch.distributed.fsdp.fully_shard docs: it "groups parameters
#: together for a single all-gather"), issued on their own streams and prefetched so that they
#: overlap compute by design (Y. Zhao et al., VLDB 2023, section 3.3; chapters 09 and 10).
FSDP = {"overlap": 1.0, "gather_unit": "block"}


@dataclass(frozen=True)
class Cluster:
    """``nodes`` x ``gpus_per_node`` GPUs named ``gpu`` in ``gu.specs`` (NVLink inside a node,
    the network between nodes)."""

    gpu: str = "H100-SXM"
    gpus_per_node: int = 8
    nodes: int = 1

    @property
    def n_gpus(self) -> int:
        return self.gpus_per_node * self.nodes


def format_seconds(seconds: float) -> str:
    """'0.85 s', '12.3 s', '4.2 min', '3.1 h', '2.5 days'."""
    if seconds < 100:
        return f"{seconds:.3g} s"
    if seconds < 6000:
        return f"{seconds / 60:.3g} min"
    if seconds < 48 * 3600:
        return f"{seconds / 3600:.3g} h"
    return f"{seconds / 86400:.3g} days"


@dataclass(frozen=True)
class Layout:
    """One way to run the job and what it costs. Times in seconds per step, memory in bytes.

    ``margin`` is usable memory minus ``memory_per_gpu`` (negative: short by that much).
    ``mfu`` is the model FLOPs utilization the step time implies: the assumed ``mfu`` of
    :func:`evaluate` less what the bubble, exposed communication and recomputation cost.
    ``comm_times`` holds the seconds each kind of communication ("tp", "pp", "dp") takes per
    step, ``exposed`` the seconds on each link ("NVLink", "network") that compute does not
    hide, and ``comm_bytes`` the bytes each GPU sends per step for each kind.
    ``step_parts`` splits ``step_time`` into the seconds of its terms, which add up to it:
    "compute" (the busiest GPU's matmuls), "bubble" (the pipeline's idle share of the step,
    (compute + exposed tensor-parallel) x bubble / (1 - bubble)), and the exposed seconds of
    "tensor-parallel", "pipeline" and "data-parallel" communication (chapter 10's planner lab
    compares a learner's prediction with each).
    """

    dp: int
    tp: int
    pp: int
    zero_stage: int
    micro_batches: int
    micro_batch_size: int
    recompute: str
    interleave: int
    memory_per_gpu: float
    fits: bool
    step_time: float
    bound: str
    margin: float = 0.0
    compute_time: float = 0.0
    bubble: float = 0.0
    mfu: float = 0.0
    comm_times: dict = field(default_factory=dict)
    exposed: dict = field(default_factory=dict)
    comm_bytes: dict = field(default_factory=dict)
    memory_breakdown: dict = field(default_factory=dict)
    step_parts: dict = field(default_factory=dict)

    def short(self) -> str:
        """The layout alone: 'DP 128 x TP 8 x PP 16, ZeRO-1, 16 micro-batches of 1 sequence,
        4 virtual stages, recompute none'."""
        seqs = "sequence" if self.micro_batch_size == 1 else "sequences"
        return (
            f"DP {self.dp} x TP {self.tp} x PP {self.pp}, ZeRO-{self.zero_stage}, "
            f"{self.micro_batches} micro-batch{'es' if self.micro_batches > 1 else ''} of "
            f"{self.micro_batch_size} {seqs}"
            f"{f', {self.interleave} virtual stages' if self.interleave > 1 else ''}, "
            f"recompute {self.recompute}"
        )

    def describe(self, width: int | None = None) -> str:
        """The layout, its memory per GPU and its step time, and what limits it: one line, or
        lines of at most ``width`` characters broken between words (continuations indented),
        so that a narrow notebook never breaks a word in two."""
        gib = 2**30
        if not self.fits:
            text = (
                f"{self.short()}: {self.memory_per_gpu / gib:.1f} GiB/GPU, does not fit "
                f"({-self.margin / gib:.1f} GiB over the usable memory)"
            )
        else:
            text = (
                f"{self.short()}: {self.memory_per_gpu / gib:.1f} GiB/GPU (fits), "
                f"{format_seconds(self.step_time)}/step, bound by {self.bound}"
                f"{self._exposed_note()}"
            )
        if width is None:
            return text
        import textwrap

        return textwrap.fill(
            text, width, subsequent_indent="    ", break_long_words=False, break_on_hyphens=False
        )

    def _exposed_note(self) -> str:
        if self.bound not in self.exposed or self.step_time <= 0:
            return ""
        return f" ({self.exposed[self.bound] / self.step_time:.0%} of the step exposed)"


def _link(group: int, stride: int, gpus_per_node: int) -> tuple[str, int]:
    """Which link a group of ``group`` ranks, ``stride`` GPUs apart, crosses; and how many of its
    members share a node (``gpus_per_node`` for ``estimate_time``)."""
    per_node = math.gcd(group, gpus_per_node // stride) if stride <= gpus_per_node else 1
    return ("NVLink" if per_node >= group else "network"), per_node


def _collective(
    op: str,
    nbytes: float,
    group: int,
    per_node: int,
    gpu: str,
    messages: float = 1,
    latency: bool = True,
) -> float:
    """Seconds for ``op`` on ``nbytes`` in ``messages`` collectives (latency counted unless
    ``latency=False``: bandwidth only, as the rooflines of SCALING_BOOK count)."""
    if group == 1 or nbytes == 0:
        return 0.0
    if not latency:
        return collectives.estimate_time(op, nbytes, group, gpu=gpu, gpus_per_node=per_node)
    messages = max(1, math.ceil(messages))
    return collectives.cluster_time(
        op, nbytes, group, gpu=gpu, gpus_per_node=per_node, messages=messages
    )


def _round(pp: int, m: int) -> int:
    """Micro-batches per round of the flexible schedule (:data:`SCHEDULES`): N = m / max(1, m // p)."""
    return m // max(1, m // pp)


def _in_flight_chunks(pp: int, m: int, v: int, schedule: str = "megatron") -> int:
    """Model chunks (of L/(p v) layers each) whose activations the first stage holds at once:
    1F1B min(p, m) micro-batches (Narayanan et al. 2021, section 2.2.1); interleaved, Megatron's
    warm-up of 2(p - 1) + (v - 1) p forwards plus the one in flight, min(v m, v p + p - 1)
    (``gu.pipeline.in_flight(gu.pipeline.interleaved(p, m, v))[0]``), which is Korthikanti et
    al. 2022's 1 + (p - 1)/(p v) times L layers when m is large, and v m chunks when it is not.
    The flexible schedule warms up (v - 1) N + 2 (p - 1) forwards with N >= p micro-batches per
    round: never fewer chunks than Megatron's, more when N > p."""
    if pp == 1:
        return 1
    if v == 1:
        return min(pp, m)
    per_round = _round(pp, m) if schedule == "flexible" else pp
    return min(v * m, (v - 1) * per_round + 2 * (pp - 1) + 1)


def in_flight_chunks(pp: int, m: int, v: int = 1, schedule: str = "megatron") -> int:
    """Model chunks of L/(p v) layers whose activations the first pipeline stage holds at once
    (:func:`evaluate`'s count: 1F1B min(p, m), interleaved min(v m, v p + p - 1) with
    Megatron-LM's schedule; 1 without a pipeline)."""
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
    return _in_flight_chunks(pp, m, v if pp > 1 else 1, schedule)


def evaluate(
    model: Model,
    cluster: Cluster,
    global_batch_tokens: int,
    *,
    dp: int,
    tp: int = 1,
    pp: int = 1,
    zero_stage: int = 0,
    micro_batch_size: int = 1,
    recompute: str = "none",
    interleave: int = 1,
    sequence_parallel: bool = True,
    dropout_masks: bool | None = None,
    attention: str = "flash",
    mfu: float = 0.5,
    dtype: str = "bf16",
    usable_memory: float = 0.9,
    overlap: float = OVERLAP,
    tp_overlap: bool = False,
    latency: bool = True,
    schedule: str = "megatron",
    gather_unit: str = "tensor",
    causal: bool = False,
    grad_reduce_bytes: int = 2,
) -> Layout:
    """Memory and step time of one layout (see the module docstring for the model).

    ``interleave`` (v): virtual stages per GPU of the interleaved 1F1B schedule, which cuts the
    bubble to (p - 1)/(v m + p - 1) for v times as many pipeline sends (Narayanan et al. 2021,
    section 2.2.2); like Megatron-LM and ``gu.pipeline.interleaved`` it needs m a multiple of p
    unless ``schedule="flexible"`` (:data:`SCHEDULES`: Llama 3's schedule, which needs m a
    multiple of its rounds and keeps at least as many activations; with m < p it runs, but with
    idle time in every round that the bubble formula does not count, so it is refused here).
    Ranks are laid out TP innermost (consecutive GPUs), then PP, then DP, as Megatron-LM does.
    ``mfu``: the fraction of the dense peak the matmuls reach when nothing waits (an assumption
    to state; Llama 3 405B reports 38-43% end to end, Dubey et al. 2024 Table 4).
    ``dropout_masks``: count dropout masks in the activations; by default ``model.dropout``.
    ``attention``: "flash" (default: a fused kernel, FlashAttention, Dao et al. 2022, keeps no
    s x s scores) or "eager" (the scores written out, as Korthikanti et al. 2022 count them);
    see ``gu.memory.activation_bytes_per_layer``.
    ``usable_memory``: the fraction of HBM left for the model after the CUDA context, NCCL
    buffers and allocator fragmentation (an assumption, 0.9 by default).
    ``overlap``: the share of the compute beside it that hides data-parallel communication
    (:data:`OVERLAP`); ``tp_overlap=True`` lets tensor-parallel all-reduces hide behind the
    layer's matmuls the same way (they are exposed by default, as in Megatron-LM's layers).
    ``latency=False`` counts bandwidth only (the rooflines' model, chapter 09); with
    ``overlap=1`` and ``tp_overlap=True`` too, this is the planner of "How to Scale Your Model".
    ``gather_unit``: what one ZeRO-3 collective moves, "tensor" (one parameter tensor each,
    ``Model.tensors_per_layer``: DeepSpeed's ZeRO-3 of 2021) or "block" (one transformer block
    each: PyTorch FSDP, whose ``fully_shard`` "groups parameters together for a single
    all-gather"); :data:`FSDP` sets it with FSDP's overlap.
    ``causal``: count the attention FLOPs a causal kernel computes (the lower triangle, half the
    score term, ``gu.flops``) in the compute time; False (the default) charges the whole s x s
    scores as PaLM's count does, the convention the published-run calibration (0.48-0.64, see
    :func:`implied_mfu`) was measured in. The model FLOPs behind ``Layout.mfu`` stay PaLM's.
    ``grad_reduce_bytes``: bytes per gradient element of ZeRO-2/3's reduce-scatters (2, bf16, by
    default; 4 for gradients reduced in fp32, as Llama 3 states: :data:`LLAMA3_SHARDING_FP32`).
    """
    if dp * tp * pp != cluster.n_gpus:
        raise ValueError(
            f"dp x tp x pp = {dp * tp * pp}, but the cluster has {cluster.n_gpus} GPUs"
        )
    if recompute not in RECOMPUTE:
        raise ValueError(f"recompute must be one of {RECOMPUTE}, got {recompute!r}")
    if attention not in ATTENTION:
        raise ValueError(f"attention must be one of {ATTENTION}, got {attention!r}")
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
    if not 0 <= overlap <= 1:
        raise ValueError(f"overlap is a fraction between 0 and 1, got {overlap!r}")
    if grad_reduce_bytes not in (2, 4):
        raise ValueError(f"grad_reduce_bytes is 2 (bf16) or 4 (fp32), got {grad_reduce_bytes!r}")
    if gather_unit not in GATHER_UNITS:
        raise ValueError(f"gather_unit must be one of {GATHER_UNITS}, got {gather_unit!r}")
    if interleave < 1 or (pp > 1 and math.ceil(model.layers / pp) < interleave):
        raise ValueError(f"interleave={interleave}: each stage needs at least that many layers")
    if pp > 1 and zero_stage == 3 and dp > 1:
        raise ValueError(
            "ZeRO-3 with pipeline parallelism: DeepSpeed refuses it ('ZeRO-2 and ZeRO-3 are "
            "incompatible with pipeline parallelism'), since every micro-batch of every stage "
            "would gather its parameters across the data-parallel group; use ZeRO-1 or ZeRO-2"
        )
    spec = specs.get(cluster.gpu)
    sequences = global_batch_tokens // model.seq_len
    if sequences * model.seq_len != global_batch_tokens or sequences % (dp * micro_batch_size):
        raise ValueError(
            f"{global_batch_tokens} tokens is not a whole number of micro-batches of "
            f"{micro_batch_size} x {model.seq_len} tokens for each of {dp} data-parallel ranks"
        )
    m = sequences // (dp * micro_batch_size)
    v = interleave if pp > 1 else 1
    if v > 1 and schedule == "megatron" and m % pp:
        raise ValueError(
            f"the interleaved schedule needs the micro-batches (m = {m}) to be a multiple of the "
            f"pipeline stages (p = {pp}), as Megatron-LM and gu.pipeline.interleaved require; "
            f'schedule="flexible" (Llama 3\'s) lifts this'
        )
    if v > 1 and schedule == "flexible" and m % max(1, m // pp):
        raise ValueError(
            f"the flexible interleaved schedule runs its micro-batches in rounds of equal size: "
            f"m = {m} is not a multiple of max(1, m // p) = {max(1, m // pp)}, as PyTorch's "
            "ScheduleInterleaved1F1B requires"
        )
    if v > 1 and schedule == "flexible" and m < pp:
        raise ValueError(
            f"m = {m} micro-batches on p = {pp} stages: the flexible schedule runs them (Llama 3 "
            "introduced it partly for this), but each round then waits for its first "
            "micro-batch to come back, an idle time the planner's bubble (p - 1)/(v m + p - 1) "
            "does not count; this planner does not score it"
        )
    s, b, h, L = model.seq_len, micro_batch_size, model.hidden, model.layers
    sp = sequence_parallel and tp > 1
    layers_per_stage = math.ceil(L / pp)
    masks = model.dropout if dropout_masks is None else dropout_masks
    zero = zero_stage if dp > 1 else 0

    # --- memory (bytes per GPU, the busiest: first pipeline stage) ---------------------------
    local_params = model.params / (tp * pp)
    state = memory.model_state_bytes(local_params, dp=dp, zero_stage=zero)
    per_layer = memory.activation_bytes_per_layer(
        s,
        b,
        h,
        model.heads,
        tp=tp,
        sequence_parallel=sp,
        recompute=recompute,
        dropout_masks=masks,
        attention=attention,
    )
    activations = per_layer * layers_per_stage / v * _in_flight_chunks(pp, m, v, schedule)
    # ZeRO-3 holds two layers' gathered bf16 parameters at once (the one computing, the next
    # prefetched), the model's own layer: 12.0 h^2 for GPT-3, 12.76 h^2 for Llama 3 70B
    gathered = 2 * 2 * model.layer_params / tp if zero == 3 else 0.0
    breakdown = {
        "parameters": state.parameters,
        "gradients": state.gradients,
        "optimizer": state.optimizer,
        "activations": activations,
        "zero3_gathered": gathered,
    }
    total_memory = sum(breakdown.values())
    usable = usable_memory * spec.hbm_bytes
    fits = total_memory <= usable

    # --- compute --------------------------------------------------------------------------
    peak = flops.peak_flops(cluster.gpu, dtype)
    tokens_per_gpu_group = global_batch_tokens / dp  # tokens each model replica processes
    hw = flops.hardware_flops_per_token(
        model.params,
        layers=L,
        d_model=h,
        seq_len=s,
        recompute=recompute,
        attention=attention,
        causal=causal,
    )
    model_flops = flops.training_flops_per_token(model.params, layers=L, d_model=h, seq_len=s)
    imbalance = layers_per_stage * pp / L  # the busiest stage's share when L % pp != 0
    compute = hw * tokens_per_gpu_group / (tp * pp) / (peak * mfu) * imbalance  # per GPU, step
    # one forward pass per token, PaLM's counting (a causal kernel computes half the scores)
    forward = 2 * model.params + 4 * L * h * s * (0.5 if causal else 1)
    backward_share = 1 - forward / hw  # backward's part, recomputation included
    per_micro = compute / m  # one micro-batch through this GPU's layers, forward and backward

    # --- communication --------------------------------------------------------------------
    act_bytes = 2 * s * b * h  # one micro-batch's s x b x h activations in bf16
    tp_kind, tp_per_node = _link(tp, 1, cluster.gpus_per_node)
    passes = 6 if recompute == "full" else 4  # all-reduce equivalents per layer and micro-batch
    tp_time = (
        passes
        * layers_per_stage
        * m
        * _collective("all_reduce", act_bytes, tp, tp_per_node, cluster.gpu, 1, latency)
    )
    pp_bytes = 2 * act_bytes / (tp if sp else 1)  # forward activations + backward gradients
    pp_time = 0.0
    pp_kind = "network" if tp * pp > cluster.gpus_per_node else "NVLink"
    if pp > 1:
        hops = v * m + pp - 2  # on the critical path (SCALING_BOOK, "Pipeline Parallelism")
        link = spec.network_bandwidth if pp_kind == "network" else spec.nvlink_bandwidth
        hop_latency = collectives.NCCL_LATENCY["base"] + collectives.NCCL_LATENCY[pp_kind]
        hop_latency *= latency
        pp_time = hops * (pp_bytes / link + 2 * hop_latency)  # a send each way per hop
    dp_kind, dp_per_node = _link(dp, tp * pp, cluster.gpus_per_node)
    grad_bytes = 2 * local_params  # bf16 gradients (and parameters), ZeRO's 2 bytes each
    reduce_bytes = grad_reduce_bytes * local_params  # what ZeRO-2/3 reduce-scatter
    buckets = local_params / _bucket_params(dp)
    gpu = cluster.gpu
    backward_window = overlap * backward_share * per_micro
    if zero == 3:
        gathers = 3 if recompute == "full" else 2  # forward, (recomputed forward), backward
        per_layer_calls = model.tensors_per_layer if gather_unit == "tensor" else 1
        tensors = layers_per_stage * per_layer_calls
        gather = _collective("all_gather", grad_bytes, dp, dp_per_node, gpu, tensors, latency)
        scatter = _collective(
            "reduce_scatter", reduce_bytes, dp, dp_per_node, gpu, tensors, latency
        )
        one = gathers * gather + scatter  # every micro-batch
        dp_time = m * one
        dp_exposed = m * max(0.0, one - overlap * per_micro)
        dp_volume = m * (gathers * grad_bytes + reduce_bytes)
    elif zero == 2:
        scatter = _collective(
            "reduce_scatter", reduce_bytes, dp, dp_per_node, gpu, buckets, latency
        )
        gather = _collective("all_gather", grad_bytes, dp, dp_per_node, gpu, buckets, latency)
        dp_time = m * scatter + gather
        dp_exposed = (m - 1) * max(0.0, scatter - backward_window)
        dp_exposed += max(0.0, scatter + gather - backward_window)
        dp_volume = (m * reduce_bytes + grad_bytes) if dp > 1 else 0.0
    else:
        dp_time = _collective("all_reduce", grad_bytes, dp, dp_per_node, gpu, buckets, latency)
        dp_exposed = max(0.0, dp_time - backward_window)
        dp_volume = 2 * grad_bytes if dp > 1 else 0.0

    # --- the step ---------------------------------------------------------------------------
    tp_exposed = max(0.0, tp_time - overlap * compute) if tp_overlap else tp_time
    pp_exposed = pp_time
    bubble = (pp - 1) / (v * m + pp - 1)
    step = (compute + tp_exposed) / (1 - bubble) + pp_exposed + dp_exposed
    exposed = {"NVLink": 0.0, "network": 0.0}
    exposed[tp_kind] += tp_exposed
    exposed[pp_kind] += pp_exposed
    exposed[dp_kind] += dp_exposed
    if not fits:
        bound = "memory"
    elif max(exposed.values()) > EXPOSED_TOLERANCE * step:  # some communication is not hidden
        bound = max(exposed, key=exposed.get)
    else:
        bound = "compute"
    achieved = model_flops * global_batch_tokens / (cluster.n_gpus * peak * step)
    return Layout(
        dp=dp,
        tp=tp,
        pp=pp,
        zero_stage=zero_stage,
        micro_batches=m,
        micro_batch_size=b,
        recompute=recompute,
        interleave=interleave,
        memory_per_gpu=total_memory,
        fits=fits,
        step_time=step,
        bound=bound,
        margin=usable - total_memory,
        compute_time=compute,
        bubble=bubble,
        mfu=achieved,
        comm_times={"tp": tp_time, "pp": pp_time, "dp": dp_time},
        exposed=exposed,
        comm_bytes={
            "tp": passes * layers_per_stage * m * act_bytes * (2 * (tp - 1) / tp),
            "pp": (v * m * pp_bytes) if pp > 1 else 0.0,
            "dp": dp_volume,
        },
        memory_breakdown=breakdown,
        step_parts={
            "compute": compute,
            "bubble": (compute + tp_exposed) * bubble / (1 - bubble),
            "tensor-parallel": tp_exposed,
            "pipeline": pp_exposed,
            "data-parallel": dp_exposed,
        },
    )


def critical_tokens_per_gpu(
    gpu: str = "H100-SXM",
    *,
    across_nodes: bool = True,
    gpus_per_node: int = 8,
    spanned_nodes: int = 1,
    dtype: str = "bf16",
) -> float:
    """Tokens per GPU above which data parallelism is compute-bound: C / W (SCALING_BOOK,
    "Data Parallelism"), C the dense peak, W the per-GPU NVLink bandwidth inside a node or the
    node's network bandwidth (``gpus_per_node`` NICs) across nodes. H100: 990e12 / 450e9 = 2200
    inside a node, 990e12 / 400e9 = 2475 across nodes, with perfect overlap and FLOPs
    utilization; (X - 1)/X of that for an axis of X members. When one model replica (its TP x
    PP group) spans ``spanned_nodes`` nodes, each GPU all-reduces only its share of the weights
    through its own NIC, which divides the threshold by ``spanned_nodes`` (the book's quiz 5,
    question 2: 8-way pipelining of Llama 3 70B gives 990e12 / 3200e9 = 309)."""
    spec = specs.get(gpu)
    if across_nodes:
        link = spanned_nodes * gpus_per_node * spec.network_bandwidth
    else:
        link = spec.nvlink_bandwidth
    return flops.peak_flops(gpu, dtype) / link


def _splits(pp: int, m: int, schedule: str) -> bool:
    """Whether the interleaved ``schedule`` can run m micro-batches on p stages (evaluate's rule)."""
    if schedule == "flexible":  # m < p runs too, but evaluate() does not score it
        return m >= pp and m % max(1, m // pp) == 0
    return m % pp == 0


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def plan(
    model: Model,
    cluster: Cluster,
    global_batch_tokens: int,
    *,
    zero_stages=(0, 1, 2, 3),
    recompute=RECOMPUTE,
    micro_batch_sizes=(1, 2, 4, 8, 16),
    interleave=(1, 2, 4),
    max_tp: int | None = None,
    **options,
) -> list[Layout]:
    """Every layout of ``cluster`` for ``model`` and ``global_batch_tokens``, best first.

    TP degrees divide the node (``max_tp`` defaults to ``gpus_per_node``: tensor parallelism
    stays inside NVLink, SCALING_BOOK "Tensor Parallelism") and the number of heads; PP degrees
    are at most the number of layers (stages may be uneven, as Llama 3's were); DP is what is
    left. ZeRO-3 is left out when PP > 1 (DeepSpeed refuses it; ZeRO-2 stays, as FSDP runs it
    with a pipeline), interleaved layouts whose m the schedule cannot split (m not a multiple of
    PP for Megatron's). With fused attention (``attention="flash"``, the default) selective
    recomputation has nothing left to recompute, so it equals "none" and is listed once, as
    "none". Layouts that fit come first, fastest first; then those that do not, smallest first.
    ``options`` go to :func:`evaluate` (``mfu``, ``dtype``, ``usable_memory``,
    ``sequence_parallel``, ``dropout_masks``, ``attention``, ``overlap``, ``tp_overlap``,
    ``latency``, ``schedule``, ``gather_unit``, ``causal``, ``grad_reduce_bytes``).
    """
    n = cluster.n_gpus
    sequences = global_batch_tokens // model.seq_len
    max_tp = cluster.gpus_per_node if max_tp is None else max_tp
    schedule = options.get("schedule", "megatron")
    recompute = tuple(recompute)
    if options.get("attention", "flash") == "flash" and "none" in recompute:
        recompute = tuple(r for r in recompute if r != "selective")  # the same as "none"
    layouts = []
    for tp in _divisors(n):
        if tp > max_tp or model.heads % tp or model.hidden % tp:
            continue
        for pp in _divisors(n // tp):
            dp = n // (tp * pp)
            if pp > model.layers or sequences % dp:
                continue
            for b in micro_batch_sizes:
                if (sequences // dp) % b:
                    continue
                m = sequences // (dp * b)
                stages = zero_stages if dp > 1 else (0,)
                if pp > 1:  # no ZeRO-3 with pipelines (DeepSpeed refuses it)
                    stages = [z for z in stages if z < 3]
                virtual = [
                    v
                    for v in interleave
                    if v == 1 or (pp > 1 and v <= model.layers // pp and _splits(pp, m, schedule))
                ]
                for stage, r, v in itertools.product(stages, recompute, virtual):
                    layout = evaluate(
                        model,
                        cluster,
                        global_batch_tokens,
                        dp=dp,
                        tp=tp,
                        pp=pp,
                        zero_stage=stage,
                        micro_batch_size=b,
                        recompute=r,
                        interleave=v,
                        **options,
                    )
                    layouts.append(layout)
    layouts.sort(key=lambda x: (not x.fits, x.step_time if x.fits else 0, x.memory_per_gpu))
    return layouts


def best_layout(
    model: Model,
    cluster: Cluster,
    global_batch_tokens: int,
    *,
    dp: int,
    tp: int = 1,
    pp: int = 1,
    zero_stages=(0, 1, 2),
    recompute=RECOMPUTE,
    micro_batch_sizes=(1,),
    interleave=(1, 2, 4),
    **options,
) -> Layout | None:
    """The fastest layout that fits for one DP x TP x PP shape, over the ZeRO stages,
    recomputation, micro-batch sizes and virtual stages given (the combinations :func:`evaluate`
    refuses are skipped), or None when none fits. This is how a published run's layout is
    scored when the paper names its shape but not every setting. ``options`` go to
    :func:`evaluate`; a ``zero_stage`` among them (as in :data:`LLAMA3_SHARDING`) fixes the stage.
    Raises ValueError when the shape or an option is wrong (not "nothing fits")."""
    if "zero_stage" in options:
        zero_stages = (options.pop("zero_stage"),)
    unknown = [r for r in recompute if r not in RECOMPUTE]
    if unknown or not set(zero_stages) <= {0, 1, 2, 3}:
        raise ValueError(
            f"recompute choices must be among {RECOMPUTE} and ZeRO stages among 0-3, got "
            f"{tuple(recompute)} and {tuple(zero_stages)}"
        )
    # The plainest layout of this shape: its errors (a shape that is not the cluster, an unknown
    # option, a batch that does not split) are the caller's, not "nothing fits".
    evaluate(model, cluster, global_batch_tokens, dp=dp, tp=tp, pp=pp, **options)
    best = None
    for zero, r, b, v in itertools.product(zero_stages, recompute, micro_batch_sizes, interleave):
        try:
            x = evaluate(
                model,
                cluster,
                global_batch_tokens,
                dp=dp,
                tp=tp,
                pp=pp,
                zero_stage=zero,
                recompute=r,
                micro_batch_size=b,
                interleave=v,
                **options,
            )
        except ValueError:  # a micro-batch size or interleaving this batch cannot have
            continue
        if x.fits and (best is None or x.step_time < best.step_time):
            best = x
    return best


def implied_mfu(
    model: Model,
    cluster: Cluster,
    global_batch_tokens: int,
    flops_per_gpu: float,
    *,
    dtype: str = "bf16",
    **layout,
) -> float:
    """The ``mfu`` at which :func:`evaluate` gives ``layout`` a measured throughput of
    ``flops_per_gpu`` model FLOP/s per GPU (``gu.flops.training_flops_per_token``): how fast a
    published run's kernels must have run with nothing waiting, once the planner has charged
    the layout's bubble and exposed communication. Compare it with the planner's assumed 0.5,
    and with what other runs on the same GPU imply. Memory is not considered: check
    ``evaluate(...).fits`` for that. Raises ValueError when even mfu = 1 falls short (then the
    planner's other costs alone exceed the measured step) or when ``layout`` sets ``mfu``."""
    if "mfu" in layout:
        raise ValueError("implied_mfu finds the mfu: pass the layout without one")
    peak = flops.peak_flops(cluster.gpu, dtype)

    def achieved(efficiency: float) -> float:
        x = evaluate(model, cluster, global_batch_tokens, mfu=efficiency, dtype=dtype, **layout)
        return x.mfu * peak

    if not flops_per_gpu > 0:
        raise ValueError(f"flops_per_gpu must be a positive FLOP/s figure, got {flops_per_gpu!r}")
    if achieved(1.0) < flops_per_gpu:
        raise ValueError(
            f"{flops_per_gpu / 1e12:.0f} TFLOP/s per GPU is out of reach for this layout even with "
            f"its matmuls at the full peak: the planner's bubble and exposed communication alone "
            f"cap it at {achieved(1.0) / 1e12:.0f}"
        )
    low, high = 0.0, 1.0
    for _ in range(60):  # bisection: achieved() grows with the efficiency
        middle = (low + high) / 2
        low, high = (middle, high) if achieved(middle) < flops_per_gpu else (low, middle)
    return high
