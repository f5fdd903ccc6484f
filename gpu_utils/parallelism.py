"""Plan a training job on paper: which layout of data, tensor and pipeline parallelism fits and
how long a step takes (chapter 10).

:func:`evaluate` scores one layout; :func:`plan` enumerates them (DP x TP x PP, ZeRO stage,
micro-batch size, activation recompute) and sorts them, fitting layouts fastest first. The cost
model, and where each piece comes from:

* memory per GPU: ``gu.memory`` (ZeRO's model states for the parameters a GPU holds,
  Korthikanti et al. 2022 for activations, 1F1B holding ``pp`` micro-batches on the first stage),
  compared with ``usable_memory`` x the GPU's HBM from ``gu.specs``;
* compute time: the hardware FLOPs of ``gu.flops`` (6N + 12 L H Q T per token, 8N + 16 L H Q T
  with full recompute) at an assumed fraction ``mfu`` of the dense peak of ``gu.specs``, on the
  busiest pipeline stage (ceil(L/p) layers);
* pipeline bubble: a fraction (p - 1)/(m + p - 1) of the step idles (GPipe and 1F1B, Huang et
  al. 2019; Narayanan et al. 2021 section 2.2), so the pipelined time is compute x (m + p - 1)/m;
* tensor parallelism (Megatron, Shoeybi et al. 2019 section 3; with sequence parallelism,
  Korthikanti et al. 2022 section 4.2.2): per layer and micro-batch, the equivalent of two
  all-reduces of the s x b x h activations forward and two backward (three of each with full
  recompute), timed with ``gu.collectives.estimate_time`` and overlapped with the layer's
  matmuls, as the rooflines of J. Austin et al., "How to Scale Your Model" (2025), part 12
  "How to Think About GPUs", section "Rooflines for LLM Scaling on GPUs", assume. That is
  optimistic: in Megatron's own layers these all-reduces sit on the critical path, and hiding
  them takes overlapped ("collective") matmuls; ``Layout.comm_times["tp"]`` added to
  ``step_time`` gives the pessimistic bound;
* data parallelism: one gradient all-reduce per step (ZeRO-1: the same; ZeRO-2: reduce-scatter
  + all-gather, the same volume), overlapped with the backward pass of the last micro-batch;
  ZeRO-3 gathers the parameters forward and backward and reduce-scatters the gradients on every
  micro-batch, 1.5x the volume each time (Rajbhandari et al. 2020, section 7.2.2), overlapped
  with that micro-batch's compute. With one micro-batch and perfect overlap this is the book's
  roofline: data parallelism stays compute-bound while tokens per GPU > C / W;
* pipeline sends: the s x b x h activations forward and their gradient backward at each stage
  boundary, m + p - 2 hops (the book's "Pipeline Parallelism": practically free), overlapped
  with compute like the rest.

``bound`` names what limits the step in the roofline's sense: "memory" (it does not fit),
"NVLink" or "network" (some communication takes longer than the compute it overlaps with; the
link with the most exposed seconds, once they exceed 1% of the step), or "compute" (all
communication hidden; the pipeline bubble is compute time lost, reported as ``bubble``).
``Layout.exposed`` says how many seconds each link adds, so a "network" bound that costs 2% of
the step is told apart from one that doubles it.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

from . import collectives, flops, memory, specs

__all__ = [
    "SCALING_BOOK",
    "Cluster",
    "Layout",
    "Model",
    "critical_tokens_per_gpu",
    "evaluate",
    "plan",
]

SCALING_BOOK = (
    "J. Austin et al., 'How to Scale Your Model' (2025), part 12 'How to Think About GPUs', "
    "section 'Rooflines for LLM Scaling on GPUs' (jax-ml.github.io/scaling-book/gpus)"
)
RECOMPUTE = ("none", "selective", "full")
EXPOSED_TOLERANCE = 0.01  # exposed communication under 1% of the step does not name the bound


@dataclass(frozen=True)
class Model:
    """A dense decoder: ``params`` (all of them), ``layers``, ``hidden``, ``heads``,
    ``seq_len`` (tokens per sequence) and ``vocab``."""

    params: float
    layers: int
    hidden: int
    heads: int
    seq_len: int
    vocab: int


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


@dataclass(frozen=True)
class Layout:
    """One way to run the job and what it costs. Times in seconds per step, memory in bytes.

    ``margin`` is usable memory minus ``memory_per_gpu`` (negative: short by that much).
    ``mfu`` is the model FLOPs utilization the step time implies. ``comm_times`` holds the
    seconds each kind of communication ("tp", "pp", "dp") takes per step, ``exposed`` the
    seconds on each link ("NVLink", "network") that compute does not hide, and ``comm_bytes``
    the bytes each GPU sends per step for each kind.
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

    def describe(self) -> str:
        """One line: 'DP 128 x TP 8 x PP 16, ZeRO-1, 16 x 1 seq, recompute none: ...'."""
        gib = 2**30
        return (
            f"DP {self.dp} x TP {self.tp} x PP {self.pp}, ZeRO-{self.zero_stage}, "
            f"{self.micro_batches} x {self.micro_batch_size} seq"
            f"{f', {self.interleave} virtual stages' if self.interleave > 1 else ''}, "
            f"recompute {self.recompute}: "
            f"{self.memory_per_gpu / gib:.1f} GiB/GPU ({'fits' if self.fits else 'does not fit'}), "
            f"{self.step_time:.3g} s/step, bound by {self.bound}{self._exposed_note()}"
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


def _collective(op: str, nbytes: float, group: int, per_node: int, gpu: str) -> float:
    if group == 1 or nbytes == 0:
        return 0.0
    return collectives.estimate_time(op, nbytes, group, gpu=gpu, gpus_per_node=per_node)


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
    dropout_masks: bool = True,
    mfu: float = 0.5,
    dtype: str = "bf16",
    usable_memory: float = 0.9,
) -> Layout:
    """Memory and step time of one layout (see the module docstring for the model).

    ``interleave`` (v): virtual stages per GPU of the interleaved 1F1B schedule, which cuts the
    bubble to (p - 1)/(v m + p - 1) for v times as many pipeline sends (Narayanan et al. 2021,
    section 2.2.2) and holds 1 + (p - 1)/(p v) times the activations (Korthikanti et al. 2022,
    section 4.2.3).
    Ranks are laid out TP innermost (consecutive GPUs), then PP, then DP, as Megatron-LM does.
    ``mfu``: the fraction of the dense peak the matmuls reach when nothing waits (an assumption
    to state; Llama 3 405B reports 38-43% end to end, Dubey et al. 2024 Table 4).
    ``dropout_masks=False`` counts activations for a model trained without dropout (most LLMs
    today, Llama 3 among them), see ``gu.memory.activation_bytes_per_layer``.
    ``usable_memory``: the fraction of HBM left for the model after the CUDA context, NCCL
    buffers and allocator fragmentation (an assumption, 0.9 by default).
    """
    if dp * tp * pp != cluster.n_gpus:
        raise ValueError(
            f"dp x tp x pp = {dp * tp * pp}, but the cluster has {cluster.n_gpus} GPUs"
        )
    if recompute not in RECOMPUTE:
        raise ValueError(f"recompute must be one of {RECOMPUTE}, got {recompute!r}")
    if interleave < 1 or (pp > 1 and math.ceil(model.layers / pp) < interleave):
        raise ValueError(f"interleave={interleave}: each stage needs at least that many layers")
    spec = specs.get(cluster.gpu)
    sequences = global_batch_tokens // model.seq_len
    if sequences * model.seq_len != global_batch_tokens or sequences % (dp * micro_batch_size):
        raise ValueError(
            f"{global_batch_tokens} tokens is not a whole number of micro-batches of "
            f"{micro_batch_size} x {model.seq_len} tokens for each of {dp} data-parallel ranks"
        )
    m = sequences // (dp * micro_batch_size)
    s, b, h, L = model.seq_len, micro_batch_size, model.hidden, model.layers
    sp = sequence_parallel and tp > 1
    layers_per_stage = math.ceil(L / pp)

    # --- memory (bytes per GPU, the busiest: first pipeline stage) ---------------------------
    local_params = model.params / (tp * pp)
    state = memory.model_state_bytes(local_params, dp=dp, zero_stage=zero_stage if dp > 1 else 0)
    per_layer = memory.activation_bytes_per_layer(
        s,
        b,
        h,
        model.heads,
        tp=tp,
        sequence_parallel=sp,
        recompute=recompute,
        dropout_masks=dropout_masks,
    )
    activations = per_layer * layers_per_stage * min(pp, m)
    if pp > 1 and interleave > 1:  # the interleaved schedule keeps more in flight
        activations *= 1 + (pp - 1) / (pp * interleave)  # KORTHIKANTI section 4.2.3
    gathered = 2 * 2 * 12 * h * h / tp if zero_stage == 3 and dp > 1 else 0.0  # 2 layers, bf16
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
        model.params, layers=L, d_model=h, seq_len=s, recompute=recompute
    )
    model_flops = flops.training_flops_per_token(model.params, layers=L, d_model=h, seq_len=s)
    imbalance = layers_per_stage * pp / L  # the busiest stage's share when L % pp != 0
    compute = hw * tokens_per_gpu_group / (tp * pp) / (peak * mfu) * imbalance  # per GPU, step
    forward = 2 * model.params + 4 * L * h * s  # one forward pass per token, PALM's counting
    backward_share = 1 - forward / hw  # backward's part, recomputation included

    # --- communication --------------------------------------------------------------------
    act_bytes = 2 * s * b * h  # one micro-batch's s x b x h activations in bf16
    tp_kind, tp_per_node = _link(tp, 1, cluster.gpus_per_node)
    passes = 6 if recompute == "full" else 4  # all-reduce equivalents per layer and micro-batch
    tp_time = (
        passes
        * layers_per_stage
        * m
        * _collective("all_reduce", act_bytes, tp, tp_per_node, cluster.gpu)
    )
    pp_bytes = 2 * act_bytes / (tp if sp else 1)  # forward activations + backward gradients
    pp_time = 0.0
    pp_kind = "network" if tp * pp > cluster.gpus_per_node else "NVLink"
    if pp > 1:
        hops = interleave * m + pp - 2  # SCALING_BOOK, "Pipeline Parallelism"
        link = spec.network_bandwidth if pp_kind == "network" else spec.nvlink_bandwidth
        pp_time = hops * pp_bytes / link
    dp_kind, dp_per_node = _link(dp, tp * pp, cluster.gpus_per_node)
    grad_bytes = 2 * local_params  # bf16 gradients, ZeRO's 2 bytes per parameter
    if zero_stage == 3 and dp > 1:
        per_micro = 2 * _collective("all_gather", grad_bytes, dp, dp_per_node, cluster.gpu)
        per_micro += _collective("reduce_scatter", grad_bytes, dp, dp_per_node, cluster.gpu)
        dp_time = m * per_micro
        dp_exposed = m * max(0.0, per_micro - compute / m)
        dp_volume = m * 3 * grad_bytes
    else:
        dp_time = _collective("all_reduce", grad_bytes, dp, dp_per_node, cluster.gpu)
        dp_exposed = max(0.0, dp_time - backward_share * compute / m)
        dp_volume = 2 * grad_bytes if dp > 1 else 0.0

    # --- the step ---------------------------------------------------------------------------
    tp_exposed = max(0.0, tp_time - compute)
    pp_exposed = max(0.0, pp_time - compute)
    v = interleave if pp > 1 else 1
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
            "pp": (m * pp_bytes) if pp > 1 else 0.0,
            "dp": dp_volume,
        },
        memory_breakdown=breakdown,
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
    left. Layouts that fit come first, fastest first; then those that do not, smallest first.
    ``options`` go to :func:`evaluate` (``mfu``, ``dtype``, ``usable_memory``,
    ``sequence_parallel``, ``dropout_masks``).
    """
    n = cluster.n_gpus
    sequences = global_batch_tokens // model.seq_len
    max_tp = cluster.gpus_per_node if max_tp is None else max_tp
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
                stages = zero_stages if dp > 1 else (0,)
                virtual = [v for v in interleave if v == 1 or (pp > 1 and v <= model.layers // pp)]
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
    layouts.sort(key=lambda x: (not x.fits, x.step_time if x.fits else x.memory_per_gpu))
    return layouts
