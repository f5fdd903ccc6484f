"""Held-out answers to lab 10's planner exercises (10.1 to 10.4), written from the lab's text,
the chapter and the public helpers only, without the checker in view (see ``__init__``).

Every cell re-defines what the lab's cell 10 defines (``PRE``); 10.4's cells also re-define the
earlier answers they call. Wrong answers of 10.2 and 10.3 are a learner's own working function
(``MEMORY``, ``STEP``) with one slip, made by ``_slip`` (which fails loudly if the text it
changes is missing, so that no "wrong" answer is silently the correct one).
"""

from heldout import Blind

PRE = """
import gpu_utils as gu

P = gu.parallelism
LLAMA = P.MODELS["Llama 3 70B"]
CLUSTER = P.Cluster("H100-SXM", gpus_per_node=8, nodes=32)
BATCH_TOKENS = 2**21
H100 = gu.specs.get("H100-SXM")
"""


def _slip(text: str, old: str, new: str) -> str:
    if text.count(old) != 1:
        raise ValueError(f"the slip's text is not in the answer once: {old!r}")
    return text.replace(old, new)


def _layout(**kw) -> str:
    return PRE + f"\n\ndef my_layout():\n    return {kw!r}\n"


# ---------------------------------------------------------------- 10.1 planner_layout_fits
E1 = "planner_layout_fits"
LAYOUT_FITS = [
    Blind(
        name="best_with_selective_recompute",
        exercise_id=E1,
        half="tune",
        correct=True,
        source=PRE
        + """

def my_layout():
    # flash attention keeps no s x s scores, so selective recomputation has nothing to drop
    # and costs nothing: TP 4 x PP 4, 4 virtual stages, 16 micro-batches per replica
    return {
        "tp": 4,
        "pp": 4,
        "dp": 16,
        "interleave": 4,
        "micro_batch_size": 1,
        "zero_stage": 1,
        "recompute": "selective",
    }
""",
    ),
    Blind(
        name="tp8_pp4_computed_dp",
        exercise_id=E1,
        half="held",
        correct=True,
        source=PRE
        + """

def my_layout():
    tp, pp = 8, 4  # a whole node of tensor parallelism, 20 layers per stage
    dp = CLUSTER.n_gpus // (tp * pp)
    b = 1
    m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)
    v = 4
    assert m % pp == 0 and (LLAMA.layers // pp) % v == 0
    return dict(dp=dp, tp=tp, pp=pp, zero_stage=1, micro_batch_size=b, recompute="none",
                interleave=v)
""",
    ),
    Blind(
        name="tp4_pp8_two_virtual_stages",
        exercise_id=E1,
        half="tune",
        correct=True,
        source=PRE
        + """

def my_layout():
    layout = {}
    layout["dp"], layout["tp"], layout["pp"] = 8, 4, 8
    layout.update(zero_stage=1, micro_batch_size=1, recompute="none", interleave=2)
    return layout
""",
    ),
    Blind(
        name="tp8_pp2_four_virtual_stages",
        exercise_id=E1,
        half="held",
        correct=True,
        source=_layout(
            dp=16, tp=8, pp=2, zero_stage=1, micro_batch_size=1, recompute="none", interleave=4
        ),
    ),
    Blind(
        name="tp16_spans_two_nodes",
        exercise_id=E1,
        half="held",
        correct=False,
        cause="Tensor parallelism of 16 spans two nodes, but the lab keeps t inside one node of "
        "8 GPUs (its all-reduces would cross the 400 Gb/s network).",
        source=_layout(
            dp=16, tp=16, pp=1, zero_stage=1, micro_batch_size=1, recompute="none", interleave=1
        ),
    ),
    Blind(
        name="product_512_not_256",
        exercise_id=E1,
        half="tune",
        correct=False,
        cause="dp x tp x pp is 32 x 8 x 2 = 512, not the 256 GPUs of the cluster: adding a "
        "pipeline must shrink dp to 16.",
        source=_layout(
            dp=32, tp=8, pp=2, zero_stage=1, micro_batch_size=1, recompute="none", interleave=1
        ),
    ),
    Blind(
        name="pp32_uneven_stages",
        exercise_id=E1,
        half="held",
        correct=False,
        cause="80 layers do not split evenly over 32 pipeline stages (2.5 layers each); the "
        "number of stages must divide 80.",
        source=_layout(
            dp=1, tp=8, pp=32, zero_stage=1, micro_batch_size=1, recompute="none", interleave=1
        ),
    ),
    Blind(
        name="interleave_with_too_few_micro_batches",
        exercise_id=E1,
        half="tune",
        correct=False,
        cause="With 8 sequences per micro-batch each replica gets only m = 256 / (16 x 8) = 2 "
        "micro-batches, not a multiple of p = 4 as the interleaved schedule requires.",
        source=_layout(
            dp=16, tp=4, pp=4, zero_stage=1, micro_batch_size=8, recompute="none", interleave=4
        ),
    ),
    Blind(
        name="zero3_with_pipeline",
        exercise_id=E1,
        half="held",
        correct=False,
        cause="ZeRO-3 cannot be combined with pipeline stages (DeepSpeed refuses it); with "
        "pp = 4 use ZeRO-1.",
        source=_layout(
            dp=16, tp=4, pp=4, zero_stage=3, micro_batch_size=1, recompute="none", interleave=4
        ),
    ),
    Blind(
        name="zero0_optimizer_not_sharded",
        exercise_id=E1,
        half="tune",
        correct=False,
        cause="With ZeRO-0 every data-parallel rank keeps the full 12 bytes per parameter of "
        "fp32 optimizer states for its 8.8e9 parameters (106 GB), so the GPU needs about 151 "
        "GiB, far above 72 GiB; ZeRO-1 shards them over dp.",
        source=_layout(
            dp=32, tp=8, pp=1, zero_stage=0, micro_batch_size=1, recompute="none", interleave=1
        ),
    ),
    Blind(
        name="whole_batch_in_one_micro_batch",
        exercise_id=E1,
        half="held",
        correct=False,
        cause="A micro-batch of 8 sequences keeps 8 sequences' activations of all 80 layers at "
        "once (about 160 GiB of activations), so the layout does not fit.",
        source=_layout(
            dp=32, tp=8, pp=1, zero_stage=1, micro_batch_size=8, recompute="none", interleave=1
        ),
    ),
    Blind(
        name="full_recompute_not_needed",
        exercise_id=E1,
        half="tune",
        correct=False,
        cause="Full recomputation repeats every forward pass (8N instead of 6N FLOPs per token) "
        "although the layout fits without it, making the step about 1.4x the best.",
        source=_layout(
            dp=32, tp=8, pp=1, zero_stage=1, micro_batch_size=1, recompute="full", interleave=1
        ),
    ),
    Blind(
        name="fsdp_everywhere_full_recompute",
        exercise_id=E1,
        half="held",
        correct=False,
        cause="Pure ZeRO-3 over 256 GPUs with one sequence per GPU needs full recomputation to "
        "fit and its gathers and reduce-scatters cross the network, about 1.6x the best step.",
        source=_layout(
            dp=256, tp=1, pp=1, zero_stage=3, micro_batch_size=1, recompute="full", interleave=1
        ),
    ),
    Blind(
        name="fractional_micro_batches",
        exercise_id=E1,
        half="tune",
        correct=False,
        cause="Each replica has 256 / 32 = 8 sequences, which do not split into whole "
        "micro-batches of 3 (m = 8/3).",
        source=_layout(
            dp=32, tp=8, pp=1, zero_stage=1, micro_batch_size=3, recompute="none", interleave=1
        ),
    ),
    Blind(
        name="interleave_zero_for_none",
        exercise_id=E1,
        half="held",
        correct=False,
        cause="interleave counts virtual stages per GPU, so no interleaving is v = 1, not 0.",
        source=_layout(
            dp=32, tp=8, pp=1, zero_stage=1, micro_batch_size=1, recompute="none", interleave=0
        ),
    ),
]

# ---------------------------------------------------------- 10.2 planner_memory_prediction
E2 = "planner_memory_prediction"

# a learner's own working answer (not the reference's arrangement): by-hand model states and
# activations per layer from Korthikanti et al.'s Table 2 with flash attention
MEMORY = (
    PRE
    + """

def predict_memory_gib(layout):
    dp, tp, pp = layout["dp"], layout["tp"], layout["pp"]
    v, b, zero = layout["interleave"], layout["micro_batch_size"], layout["zero_stage"]
    recompute = layout["recompute"]
    s, h, L = LLAMA.seq_len, LLAMA.hidden, LLAMA.layers
    m = (BATCH_TOKENS // s) // (dp * b)
    psi = LLAMA.params / (tp * pp)  # parameters on this GPU
    weights, grads, optim = 2 * psi, 2 * psi, 12 * psi
    if zero >= 1:
        optim /= dp
    if zero >= 2:
        grads /= dp
    if zero >= 3:
        weights /= dp
    # sequence parallel over t; no dropout in Llama: 32 sbh; flash attention keeps no s x s
    # scores, only one fp32 log-sum-exp per head and token (4 a / h x sbh)
    if recompute == "full":
        layer = 2 * s * b * h / tp
    else:
        layer = s * b * h / tp * (32 + 4 * LLAMA.heads / h)
    if pp == 1:
        held = 1
    elif v == 1:
        held = min(m, pp)
    else:
        held = min(v * m, v * pp + pp - 1)
    acts = held * (L // (pp * v)) * layer
    gathered = 4 * LLAMA.layer_params / tp if zero == 3 else 0
    return (weights + grads + optim + acts + gathered) / 2**30
"""
)

MEMORY_LIB = (
    PRE
    + '''

def predict_memory_gib(layout):
    """GiB per GPU on the first pipeline stage."""
    d = layout
    n_micro = BATCH_TOKENS // LLAMA.seq_len // d["dp"] // d["micro_batch_size"]
    model = gu.memory.model_state_bytes(
        LLAMA.params / d["tp"] / d["pp"], dp=d["dp"], zero_stage=d["zero_stage"]
    )
    per_layer = gu.memory.activation_bytes_per_layer(
        LLAMA.seq_len, d["micro_batch_size"], LLAMA.hidden, LLAMA.heads, tp=d["tp"],
        sequence_parallel=d["tp"] > 1, recompute=d["recompute"], dropout_masks=False,
        attention="flash",
    )
    if d["pp"] == 1:
        in_flight = 1
    elif d["interleave"] == 1:
        in_flight = gu.pipeline.in_flight(gu.pipeline.one_f_one_b(d["pp"], n_micro))[0]
    else:
        schedule = gu.pipeline.interleaved(d["pp"], n_micro, d["interleave"])
        in_flight = gu.pipeline.in_flight(schedule)[0]
    layers_per_chunk = LLAMA.layers // (d["pp"] * d["interleave"])
    extra = 2 * (2 * LLAMA.layer_params / d["tp"]) if d["zero_stage"] == 3 else 0.0
    return (model.parameters + model.gradients + model.optimizer
            + in_flight * layers_per_chunk * per_layer + extra) / 1024**3
'''
)

MEMORY_SPLIT = (
    PRE
    + """

GIB = 1024 * 1024 * 1024


def model_states(params, dp, zero):
    shards = {0: (1, 1, 1), 1: (1, 1, dp), 2: (1, dp, dp), 3: (dp, dp, dp)}[zero]
    return sum(nbytes * params / k for nbytes, k in zip((2, 2, 12), shards))


def chunks_in_flight(p, m, v):
    if p == 1:
        return 1
    return min(m, p) if v == 1 else min(v * m, (v + 1) * p - 1)


def predict_memory_gib(layout):
    t, p, v = layout["tp"], layout["pp"], layout["interleave"]
    b = layout["micro_batch_size"]
    m = 256 // (layout["dp"] * b)
    states = model_states(LLAMA.params / (t * p), layout["dp"], layout["zero_stage"])
    sbh_t = LLAMA.seq_len * b * LLAMA.hidden / t
    flash = 32 + 4 * LLAMA.heads / LLAMA.hidden  # no dropout masks, no s x s scores
    per_layer = sbh_t * (2 if layout["recompute"] == "full" else flash)
    activations = per_layer * LLAMA.layers / (p * v) * chunks_in_flight(p, m, v)
    zero3 = 2 * 2 * LLAMA.layer_params / t * (layout["zero_stage"] == 3)
    return (states + activations + zero3) / GIB
"""
)

MEMORY_TOTAL = (
    PRE
    + """

def predict_memory_gib(layout):
    tp, pp, dp = layout["tp"], layout["pp"], layout["dp"]
    v, b = layout["interleave"], layout["micro_batch_size"]
    sequences = BATCH_TOKENS // LLAMA.seq_len
    m = sequences // dp // b
    total = gu.memory.model_state_bytes(
        LLAMA.params / (tp * pp), dp=dp, zero_stage=layout["zero_stage"]
    ).total
    if layout["zero_stage"] == 3:
        total += 2 * 2 * LLAMA.layer_params / tp  # two layers' gathered bf16 weights
    one_layer = gu.memory.activation_bytes_per_layer(
        LLAMA.seq_len, b, LLAMA.hidden, LLAMA.heads, tp=tp, sequence_parallel=tp > 1,
        recompute=layout["recompute"], dropout_masks=False, attention="flash",
    )
    # layers' activations the first stage holds at its fullest
    if pp == 1:
        layers_held = LLAMA.layers
    elif v == 1:
        layers_held = LLAMA.layers // pp * min(pp, m)
    else:
        layers_held = LLAMA.layers // (pp * v) * min(v * m, v * pp + pp - 1)
    total += layers_held * one_layer
    return total / (1 << 30)
"""
)

MEMORY_PREDICTION = [
    Blind(name="by_hand_formulas", exercise_id=E2, half="tune", correct=True, source=MEMORY),
    Blind(
        name="library_and_schedule_in_flight",
        exercise_id=E2,
        half="held",
        correct=True,
        source=MEMORY_LIB,
    ),
    Blind(
        name="helpers_and_shard_table",
        exercise_id=E2,
        half="tune",
        correct=True,
        source=MEMORY_SPLIT,
    ),
    Blind(
        name="library_total_layers_held",
        exercise_id=E2,
        half="held",
        correct=True,
        source=MEMORY_TOTAL,
    ),
    Blind(
        name="gb_not_gib",
        exercise_id=E2,
        half="held",
        correct=False,
        cause="It divides by 1e9 (GB) instead of 2**30 (GiB), so every figure is 7% too large.",
        source=_slip(MEMORY, "/ 2**30", "/ 1e9"),
    ),
    Blind(
        name="zero_stage_ignored",
        exercise_id=E2,
        half="tune",
        correct=False,
        cause="It never shards the model states over dp: ZeRO-1 divides the optimizer states, "
        "ZeRO-2 also the gradients, ZeRO-3 also the weights, by dp.",
        source=_slip(
            _slip(_slip(MEMORY, "optim /= dp", "pass"), "grads /= dp", "pass"),
            "weights /= dp",
            "pass",
        ),
    ),
    Blind(
        name="params_split_by_tp_only",
        exercise_id=E2,
        half="held",
        correct=False,
        cause="A GPU holds 1/(tp x pp) of the parameters: it divides them by tp only and "
        "forgets that each pipeline stage holds only its own layers.",
        source=_slip(MEMORY, "LLAMA.params / (tp * pp)", "LLAMA.params / tp"),
    ),
    Blind(
        name="all_micro_batches_in_flight",
        exercise_id=E2,
        half="tune",
        correct=False,
        cause="It keeps all m micro-batches' activations (GPipe), but 1F1B holds at most p on "
        "the first stage (and v p + p - 1 chunks interleaved).",
        source=_slip(
            _slip(MEMORY, "held = min(m, pp)", "held = m"),
            "held = min(v * m, v * pp + pp - 1)",
            "held = v * m",
        ),
    ),
    Blind(
        name="interleaving_like_plain_1f1b",
        exercise_id=E2,
        half="held",
        correct=False,
        cause="With interleaving the first stage holds min(v m, v p + p - 1) chunks of L/(p v) "
        "layers, more than 1F1B's p micro-batches of L/p layers; it ignores the extra p - 1 "
        "chunks.",
        source=_slip(
            _slip(MEMORY, "held = min(v * m, v * pp + pp - 1)", "held = min(m, pp)"),
            "(L // (pp * v))",
            "(L // pp)",
        ),
    ),
    Blind(
        name="zero3_gathered_weights_missing",
        exercise_id=E2,
        half="tune",
        correct=False,
        cause="With ZeRO-3 it leaves out the two layers' gathered bf16 weights, "
        "2 x 2 x layer_params / t bytes, that the planner counts.",
        source=_slip(MEMORY, "4 * LLAMA.layer_params / tp if zero == 3 else 0", "0"),
    ),
    Blind(
        name="attention_scores_stored",
        exercise_id=E2,
        half="held",
        correct=False,
        cause="It counts the s x s attention scores of eager attention (2 a s^2 b bytes), but "
        "the job uses flash attention, which never stores them.",
        source=_slip(
            MEMORY,
            "(32 + 4 * LLAMA.heads / h)",
            "(32 + 2 * LLAMA.heads * s / h)",
        ),
        hints=("2 bytes for each of the a s x s attention scores", 'attention="flash"'),
    ),
    Blind(
        name="no_sequence_parallelism",
        exercise_id=E2,
        half="tune",
        correct=False,
        cause="It leaves out sequence parallelism: the LayerNorm and residual activations "
        "(8 sbh) stay whole on every GPU, but with t > 1 they are split over t as well.",
        source=_slip(
            MEMORY,
            "layer = s * b * h / tp * (32 + 4 * LLAMA.heads / h)",
            "layer = s * b * h * (8 + (24 + 4 * LLAMA.heads / h) / tp)",
        ),
    ),
    Blind(
        name="recompute_ignored",
        exercise_id=E2,
        half="held",
        correct=False,
        cause="With full recomputation a layer keeps only its input, 2 s b h / t, not the "
        "32 s b h / t of a layer that stores everything.",
        source=_slip(MEMORY, 'if recompute == "full":', 'if recompute == "never":'),
    ),
    Blind(
        name="copied_reference_layout_figure",
        exercise_id=E2,
        half="tune",
        correct=False,
        cause="It returns one figure (the planner's 56 GiB for DP 32 x TP 8 ZeRO-1) for every "
        "layout instead of computing the memory from the layout.",
        source=PRE
        + """

def predict_memory_gib(layout):
    return 56.0
""",
    ),
    Blind(
        name="last_stage_one_micro_batch",
        exercise_id=E2,
        half="held",
        correct=False,
        cause="It counts a single micro-batch in flight on every stage, as the last stage "
        "holds, but the busiest GPU is the first stage, which holds min(p, m) of them.",
        source=_slip(
            _slip(MEMORY, "held = min(m, pp)", "held = 1"),
            "held = min(v * m, v * pp + pp - 1)",
            "held = v",
        ),
    ),
]

# ---------------------------------------------------------------- 10.3 planner_step_time
E3 = "planner_step_time"

# a learner's own working answer: compute per GPU, TP all-reduces per micro-batch and layer of
# the stage, the bubble as a stretch of the busy time, pipeline sends, the DP gradient traffic
STEP = (
    PRE
    + """

def predict_step_seconds(layout):
    dp, tp, pp = layout["dp"], layout["tp"], layout["pp"]
    v, b, zero = layout["interleave"], layout["micro_batch_size"], layout["zero_stage"]
    recompute = layout["recompute"]
    gpu = "H100-SXM"
    m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)
    flops_per_token = gu.flops.hardware_flops_per_token(
        LLAMA.params, layers=LLAMA.layers, d_model=LLAMA.hidden, seq_len=LLAMA.seq_len,
        recompute=recompute, attention="flash",
    )
    tokens_per_gpu = BATCH_TOKENS / CLUSTER.n_gpus
    compute = flops_per_token * tokens_per_gpu / (0.5 * gu.flops.peak_flops(gpu))
    micro_bytes = LLAMA.seq_len * b * LLAMA.hidden * 2  # bf16 activations of a micro-batch
    tp_comm = 0.0
    if tp > 1:
        n_ar = 6 if recompute == "full" else 4
        one = gu.collectives.estimate_time("all_reduce", micro_bytes, tp, gpu=gpu)
        tp_comm = n_ar * (LLAMA.layers / pp) * m * one
    busy = compute + tp_comm
    step = busy * (v * m + pp - 1) / (v * m)  # the bubble: (p - 1)/(v m + p - 1) idle
    if pp > 1:
        bandwidth = H100.network_bandwidth if tp * pp > 8 else H100.nvlink_bandwidth
        step += 2 * (v * m + pp - 2) * (micro_bytes / tp) / bandwidth
    if dp > 1:
        grad_bytes = 2 * LLAMA.params / (tp * pp)
        per_node = max(1, min(dp, 8 // (tp * pp)))
        kw = dict(gpu=gpu, gpus_per_node=per_node)
        if zero == 2:
            rs = gu.collectives.estimate_time("reduce_scatter", grad_bytes, dp, **kw)
            ag = gu.collectives.estimate_time("all_gather", grad_bytes, dp, **kw)
            step += m * rs + ag
        else:
            step += gu.collectives.estimate_time("all_reduce", grad_bytes, dp, **kw)
    return step
"""
)

STEP_LATENCY = (
    PRE
    + """

def predict_step_seconds(layout):
    # the same model, with NCCL's latencies (gu.collectives.cluster_time) on every collective
    d = layout
    t, p, v = d["tp"], d["pp"], d["interleave"]
    m = BATCH_TOKENS // LLAMA.seq_len // d["dp"] // d["micro_batch_size"]
    gpu = CLUSTER.gpu
    hw = gu.flops.hardware_flops_per_token(
        LLAMA.params, layers=LLAMA.layers, d_model=LLAMA.hidden, seq_len=LLAMA.seq_len,
        recompute=d["recompute"], attention="flash",
    )
    seconds_compute = hw * BATCH_TOKENS / (CLUSTER.n_gpus * 0.5 * gu.flops.peak_flops(gpu))
    x = 2 * LLAMA.seq_len * d["micro_batch_size"] * LLAMA.hidden
    count = (6 if d["recompute"] == "full" else 4) * (LLAMA.layers // p) * m
    seconds_tp = (
        gu.collectives.cluster_time("all_reduce", count * x, t, gpu=gpu, messages=count)
        if t > 1 else 0.0
    )
    bubble = gu.pipeline.bubble_fraction(p, m, v)
    sends = v * m + p - 2
    link = H100.nvlink_bandwidth if t * p <= 8 else H100.network_bandwidth
    seconds_pp = 2 * sends * x / t / link if p > 1 else 0.0
    g = 2 * LLAMA.params / (t * p)
    near = max(1, min(d["dp"], 8 // (t * p)))
    seconds_dp = 0.0
    if d["dp"] > 1 and d["zero_stage"] == 2:
        seconds_dp = gu.collectives.cluster_time(
            "reduce_scatter", m * g, d["dp"], gpu=gpu, gpus_per_node=near, messages=m
        ) + gu.collectives.cluster_time("all_gather", g, d["dp"], gpu=gpu, gpus_per_node=near)
    elif d["dp"] > 1:
        seconds_dp = gu.collectives.cluster_time(
            "all_reduce", g, d["dp"], gpu=gpu, gpus_per_node=near
        )
    return (seconds_compute + seconds_tp) / (1 - bubble) + seconds_pp + seconds_dp
"""
)

STEP_BY_HAND = (
    PRE
    + '''

def ring_seconds(nbytes, n, per_node, factor):
    """Chapter 08's bandwidth model: the slower of NVLink inside a node and the network
    between nodes; factor 1 for a reduce-scatter or all-gather, 2 for an all-reduce."""
    nodes = n // per_node
    inside = nbytes * (per_node - 1) / per_node / H100.nvlink_bandwidth
    across = nbytes * (nodes - 1) / nodes / (per_node * H100.network_bandwidth)
    return factor * max(inside, across)


def predict_step_seconds(layout):
    dp, tp, pp = layout["dp"], layout["tp"], layout["pp"]
    v, b, zero = layout["interleave"], layout["micro_batch_size"], layout["zero_stage"]
    full = layout["recompute"] == "full"
    L, h, s = LLAMA.layers, LLAMA.hidden, LLAMA.seq_len
    m = 256 // (dp * b)
    # 6N + 14 L h s per token with flash attention, 8N + 18 L h s with full recomputation
    per_token = (8 if full else 6) * LLAMA.params + (18 if full else 14) * L * h * s
    compute = per_token * BATCH_TOKENS / 256 / (0.5 * gu.flops.peak_flops("H100-SXM"))
    act = 2 * s * b * h
    tp_time = (6 if full else 4) * (L // pp) * m * ring_seconds(act, tp, tp, 2) if tp > 1 else 0
    idle = (pp - 1) / (v * m + pp - 1)
    link = H100.network_bandwidth if tp * pp > 8 else H100.nvlink_bandwidth
    pp_time = (v * m + pp - 2) * 2 * (act / tp) / link if pp > 1 else 0
    grads = 2 * LLAMA.params / (tp * pp)
    near = max(1, min(dp, 8 // (tp * pp)))
    if dp == 1:
        dp_time = 0
    elif zero == 2:
        dp_time = (m + 1) * ring_seconds(grads, dp, near, 1)
    else:
        dp_time = ring_seconds(grads, dp, near, 2)
    return (compute + tp_time) / (1 - idle) + pp_time + dp_time
'''
)

STEP_SLOTS = (
    PRE
    + """

def predict_step_seconds(layout):
    dp, tp, pp = layout["dp"], layout["tp"], layout["pp"]
    v, b, zero = layout["interleave"], layout["micro_batch_size"], layout["zero_stage"]
    m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)
    chunks = v * m  # forward-and-backward slots each GPU runs
    flops = gu.flops.hardware_flops_per_token(
        LLAMA.params, layers=LLAMA.layers, d_model=LLAMA.hidden, seq_len=LLAMA.seq_len,
        recompute=layout["recompute"], attention="flash",
    ) * BATCH_TOKENS / CLUSTER.n_gpus
    per_chunk = flops / (0.5 * gu.flops.peak_flops("H100-SXM")) / chunks
    x = 2 * LLAMA.seq_len * b * LLAMA.hidden
    if tp > 1:
        reduces = 6 if layout["recompute"] == "full" else 4
        layers_per_chunk = LLAMA.layers // (pp * v)
        per_chunk += reduces * layers_per_chunk * gu.collectives.estimate_time(
            "all_reduce", x, tp, gpu="H100-SXM"
        )
    # the schedule runs v m slots of work plus p - 1 slots of bubble
    seconds = (chunks + pp - 1) * per_chunk
    if pp > 1:
        link = H100.nvlink_bandwidth if tp * pp <= 8 else H100.network_bandwidth
        seconds += 2 * (chunks + pp - 2) * x / tp / link
    if dp > 1:
        g = 2 * LLAMA.params / (tp * pp)
        node = max(1, min(dp, 8 // (tp * pp)))
        if zero == 2:
            for op, times in (("reduce_scatter", m), ("all_gather", 1)):
                seconds += times * gu.collectives.estimate_time(
                    op, g, dp, gpu="H100-SXM", gpus_per_node=node
                )
        else:
            seconds += gu.collectives.estimate_time(
                "all_reduce", g, dp, gpu="H100-SXM", gpus_per_node=node
            )
    return seconds
"""
)

STEP_TIME = [
    Blind(name="stretch_by_bubble", exercise_id=E3, half="tune", correct=True, source=STEP),
    Blind(
        name="with_nccl_latencies",
        exercise_id=E3,
        half="held",
        correct=True,
        source=STEP_LATENCY,
    ),
    Blind(
        name="ring_formulas_by_hand", exercise_id=E3, half="tune", correct=True, source=STEP_BY_HAND
    ),
    Blind(name="schedule_slots", exercise_id=E3, half="held", correct=True, source=STEP_SLOTS),
    Blind(
        name="bubble_forgotten",
        exercise_id=E3,
        half="held",
        correct=False,
        cause="It leaves out the pipeline bubble: the busy time must be stretched by "
        "1/(1 - (p - 1)/(v m + p - 1)), which costs a lot when m is close to p.",
        source=_slip(STEP, "step = busy * (v * m + pp - 1) / (v * m)", "step = busy"),
    ),
    Blind(
        name="bubble_ignores_interleaving",
        exercise_id=E3,
        half="tune",
        correct=False,
        cause="It uses the plain 1F1B bubble (p - 1)/(m + p - 1), but interleaving with v "
        "virtual stages shrinks it to (p - 1)/(v m + p - 1).",
        source=_slip(STEP, "busy * (v * m + pp - 1) / (v * m)", "busy * (m + pp - 1) / m"),
    ),
    Blind(
        name="dense_peak_without_mfu",
        exercise_id=E3,
        half="held",
        correct=False,
        cause="It runs the matmuls at the full dense peak; the planner assumes MFU 0.5, so the "
        "compute time is twice what it computes.",
        source=_slip(STEP, "(0.5 * gu.flops.peak_flops(gpu))", "gu.flops.peak_flops(gpu)"),
    ),
    Blind(
        name="recompute_flops_ignored",
        exercise_id=E3,
        half="tune",
        correct=False,
        cause="It counts the FLOPs without recomputation; full recomputation runs every forward "
        "twice (8N instead of 6N per token), a third more compute.",
        source=_slip(STEP, "recompute=recompute, attention", "recompute='none', attention"),
    ),
    Blind(
        name="tp_all_reduce_once_per_step",
        exercise_id=E3,
        half="held",
        correct=False,
        cause="It counts the tensor-parallel all-reduces once per layer per step, but they run "
        "for every one of the m micro-batches.",
        source=_slip(STEP, "(LLAMA.layers / pp) * m * one", "(LLAMA.layers / pp) * one"),
        hints=("tensor-parallel all-reduces / m", "per micro-batch"),
    ),
    Blind(
        name="tp_all_reduces_of_all_layers",
        exercise_id=E3,
        half="tune",
        correct=False,
        cause="A GPU runs the all-reduces of its own stage's L/p layers only, not of all 80 "
        "layers of the model.",
        source=_slip(STEP, "(LLAMA.layers / pp) * m * one", "LLAMA.layers * m * one"),
    ),
    Blind(
        name="zero2_like_zero1",
        exercise_id=E3,
        half="held",
        correct=False,
        cause="ZeRO-2 keeps only its gradient shard, so it reduce-scatters the gradients on "
        "every micro-batch (m reduce-scatters plus an all-gather), not one all-reduce per step.",
        source=_slip(STEP, "if zero == 2:", "if zero == 20:"),
    ),
    Blind(
        name="fp32_gradients_reduced",
        exercise_id=E3,
        half="tune",
        correct=False,
        cause="The data-parallel traffic moves bf16 gradients (2 bytes per parameter), not fp32 "
        "(4 bytes), which doubles that term.",
        source=_slip(STEP, "grad_bytes = 2 * LLAMA.params", "grad_bytes = 4 * LLAMA.params"),
    ),
    Blind(
        name="dp_reduces_whole_model",
        exercise_id=E3,
        half="held",
        correct=False,
        cause="Each data-parallel group reduces only the 1/(tp x pp) of the gradients its GPU "
        "holds, not the whole model's.",
        source=_slip(
            STEP, "grad_bytes = 2 * LLAMA.params / (tp * pp)", "grad_bytes = 2 * LLAMA.params"
        ),
        hints=("data-parallel traffic x (tp x pp)", "not the whole model's"),
    ),
    Blind(
        name="compute_shared_by_replica_only",
        exercise_id=E3,
        half="tune",
        correct=False,
        cause="It gives each GPU a replica's whole share of the batch (BATCH_TOKENS / dp), "
        "forgetting that tp x pp GPUs split that replica's FLOPs.",
        source=_slip(
            STEP,
            "tokens_per_gpu = BATCH_TOKENS / CLUSTER.n_gpus",
            "tokens_per_gpu = BATCH_TOKENS / dp",
        ),
    ),
    Blind(
        name="milliseconds",
        exercise_id=E3,
        half="held",
        correct=False,
        cause="It returns milliseconds; the function must return seconds.",
        source=_slip(STEP, "    return step\n", "    return step * 1000\n"),
    ),
]

# ------------------------------------------------------------------- 10.4 planner_defend
E4 = "planner_defend"

# the earlier answers a defence calls (a learner's own working ones) and the lab's ranking
EARLIER = (
    STEP
    + MEMORY[len(PRE) :]
    + """

def keeps_the_rules(x):
    stage_layers = LLAMA.layers // x.pp
    return x.tp <= 8 and LLAMA.layers % x.pp == 0 and stage_layers % x.interleave == 0


ranked = [x for x in P.plan(LLAMA, CLUSTER, BATCH_TOKENS) if x.fits and keeps_the_rules(x)]
"""
)

REF_LAYOUT = """

def my_layout():
    return dict(dp=32, tp=8, pp=1, zero_stage=1, micro_batch_size=1, recompute="none", interleave=1)
"""

DEFEND = (
    EARLIER
    + REF_LAYOUT
    + """

def defend():
    layout = my_layout()
    step = predict_step_seconds(layout)
    # TP 8: 4 all-reduces per layer and micro-batch over NVLink (1.5 s) against one gradient
    # all-reduce over the network (0.7 s); the best (TP 4 x PP 4, v = 4) runs half as many
    return {
        "layout": layout,
        "memory_gib": predict_memory_gib(layout),
        "step_seconds": step,
        "bound": "NVLink",
        "vs_best": step / ranked[0].step_time,
        "main_difference": "tensor-parallel",
    }
"""
)

DEFEND_BEST = (
    EARLIER
    + """

def my_layout():
    return dict(dp=16, tp=4, pp=4, zero_stage=1, micro_batch_size=1, recompute="none", interleave=4)


def defend():
    mine = my_layout()
    seconds = predict_step_seconds(mine)
    fastest = min(x.step_time for x in ranked)
    return dict(
        layout=mine,
        memory_gib=predict_memory_gib(mine),
        step_seconds=seconds,
        bound="NVLink",  # TP 4's all-reduces, 6% of the step; the gradients' all-reduce is less
        vs_best=seconds / fastest,
        main_difference="none",  # this is the planner's best layout
    )
"""
)

DEFEND_TP8_PP2 = (
    EARLIER
    + """

def my_layout():
    return dict(dp=16, tp=8, pp=2, zero_stage=1, micro_batch_size=1, recompute="none", interleave=1)


def defend():
    layout = my_layout()
    t = predict_step_seconds(layout)
    answer = dict(layout=layout, memory_gib=predict_memory_gib(layout), step_seconds=t)
    answer["bound"] = "NVLink"  # TP 8's all-reduces: 14% of the step
    answer["vs_best"] = t / ranked[0].step_time  # 1.10
    # against TP 4 x PP 4 (v = 4): twice the all-reduce bytes per GPU (1.2 s more) outweigh
    # the bubble of 1/17 (0.5 s)
    answer["main_difference"] = "tensor-parallel"
    return answer
"""
)

DEFEND_ZERO2 = (
    EARLIER
    + """

def my_layout():
    return dict(dp=32, tp=8, pp=1, zero_stage=2, micro_batch_size=2, recompute="none", interleave=1)


def defend():
    layout = my_layout()
    step = predict_step_seconds(layout)
    return {
        "layout": layout,
        "memory_gib": predict_memory_gib(layout),
        "step_seconds": step,
        # ZeRO-2 reduce-scatters the gradients over the network after each of the 4
        # micro-batches: that exposed traffic outweighs TP 8's NVLink all-reduces
        "bound": "network",
        "vs_best": step / ranked[0].step_time,
        "main_difference": "data-parallel",
    }
"""
)

DEFEND_CORRECT = [
    Blind(
        name="reference_layout_dict_literal",
        exercise_id=E4,
        half="tune",
        correct=True,
        source=DEFEND,
    ),
    Blind(name="the_planners_best", exercise_id=E4, half="held", correct=True, source=DEFEND_BEST),
    Blind(
        name="tp8_pp2_plain_1f1b", exercise_id=E4, half="tune", correct=True, source=DEFEND_TP8_PP2
    ),
    Blind(
        name="zero2_network_bound", exercise_id=E4, half="held", correct=True, source=DEFEND_ZERO2
    ),
]

DEFEND_WRONG = [
    Blind(
        name="bound_compute",
        exercise_id=E4,
        half="tune",
        correct=False,
        cause="Compute is the largest part of the step, but the bound the lab asks for is the "
        "link whose exposed communication costs the most once it exceeds 1% of the step: "
        "TP 8's all-reduces, 14% of it, over NVLink.",
        source=_slip(DEFEND, '"bound": "NVLink"', '"bound": "compute"'),
    ),
    Blind(
        name="bound_network",
        exercise_id=E4,
        half="held",
        correct=False,
        cause="The gradients' all-reduce over the network (0.7 s) costs less than TP 8's "
        "all-reduces over NVLink (1.5 s), so the layout is bound by NVLink, not the network.",
        source=_slip(DEFEND, '"bound": "NVLink"', '"bound": "network"'),
    ),
    Blind(
        name="vs_best_inverted",
        exercise_id=E4,
        half="tune",
        correct=False,
        cause="vs_best is this layout's step divided by the best one's (above 1), not the "
        "best's divided by this one's.",
        source=_slip(
            DEFEND, '"vs_best": step / ranked[0].step_time', '"vs_best": ranked[0].step_time / step'
        ),
    ),
    Blind(
        name="bubble_without_pipeline",
        exercise_id=E4,
        half="held",
        correct=False,
        cause="With pp = 1 this layout has no pipeline and no bubble; what costs it most "
        "against the best is tensor-parallel communication (TP 8 against TP 4).",
        source=_slip(DEFEND, '"main_difference": "tensor-parallel"', '"main_difference": "bubble"'),
    ),
    Blind(
        name="planner_figures_not_predictions",
        exercise_id=E4,
        half="tune",
        correct=False,
        cause="memory_gib and step_seconds must be the learner's own predictions from "
        "predict_memory_gib and predict_step_seconds, not P.evaluate's figures.",
        source=_slip(
            _slip(
                DEFEND,
                "    step = predict_step_seconds(layout)\n",
                "    planned = P.evaluate(LLAMA, CLUSTER, BATCH_TOKENS, **layout)\n"
                "    step = planned.step_time\n",
            ),
            '"memory_gib": predict_memory_gib(layout)',
            '"memory_gib": planned.memory_per_gpu / 2**30',
        ),
    ),
    Blind(
        name="compared_with_slowest",
        exercise_id=E4,
        half="held",
        correct=False,
        cause="ranked is sorted fastest first; it divides by the last (slowest) layout's step "
        "instead of the best one's, ranked[0].",
        source=_slip(DEFEND, "step / ranked[0].step_time", "step / ranked[-1].step_time"),
    ),
    Blind(
        name="copied_step_from_listing",
        exercise_id=E4,
        half="tune",
        correct=False,
        cause="It copies 10.5 s and 56 GiB from the planner's printed list instead of calling "
        "its own predictions, and vs_best from rounded figures.",
        source=EARLIER
        + REF_LAYOUT
        + """

def defend():
    return {
        "layout": my_layout(),
        "memory_gib": 56.0,
        "step_seconds": 10.5,
        "bound": "NVLink",
        "vs_best": 10.5 / 9.71,
        "main_difference": "tensor-parallel",
    }
""",
    ),
    Blind(
        name="best_itself_names_a_difference",
        exercise_id=E4,
        half="held",
        correct=False,
        cause="The chosen layout is the planner's best (vs_best 1.0), so the main difference "
        'is "none", not the term the learner thinks is its largest cost.',
        source=_slip(
            DEFEND_BEST,
            'main_difference="none",  # this is the planner\'s best layout',
            'main_difference="tensor-parallel",',
        ),
    ),
    Blind(
        name="layout_object_not_dict",
        exercise_id=E4,
        half="tune",
        correct=False,
        cause="layout must be the learner's own dict from my_layout(), not the planner's "
        "Layout object for the best entry of ranked.",
        source=_slip(DEFEND, '"layout": layout,', '"layout": ranked[0],'),
    ),
    Blind(
        name="zero2_bound_nvlink",
        exercise_id=E4,
        half="held",
        correct=False,
        cause="With ZeRO-2's reduce-scatter on every micro-batch the exposed network traffic "
        "exceeds TP 8's NVLink all-reduces, so the bound is the network; and the data-parallel "
        "term, not tensor parallelism, costs most against the best.",
        source=_slip(
            _slip(DEFEND_ZERO2, '"bound": "network"', '"bound": "NVLink"'),
            '"main_difference": "data-parallel"',
            '"main_difference": "tensor-parallel"',
        ),
    ),
]

ANSWERS = LAYOUT_FITS + MEMORY_PREDICTION + STEP_TIME + DEFEND_CORRECT + DEFEND_WRONG
