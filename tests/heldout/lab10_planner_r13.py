"""Blind held-out round lab10_planner_r13 (half "held2"), lab 10's planner part (10.1-10.4).

Written by a blind helper session on 2026-11-29 (about 15:05-15:10 UTC by `date -u`). Read: the
markdown and code cells of labs/10_model_parallel_lab.ipynb (the exercise texts 10-10.4) and
solutions/10_model_parallel_lab.ipynb (cells 31-49: the solution's my_layout,
predict_memory_gib, predict_step_seconds, keeps_the_rules / ranked and defend);
gpu_utils/many_gpus/parallelism.py (module docstring, Model, Cluster, Layout, _in_flight_chunks,
evaluate); the docstrings and bodies of gu.memory.model_state_bytes /
activation_bytes_per_layer, gu.flops.hardware_flops_per_token / attention_flops_per_token /
peak_flops, gu.collectives.estimate_time, gu.pipeline.interleaved / bubble_fraction;
tests/heldout/__init__.py, and the docstring and first two entries of lab10_planner_r10.py
(format only). Never opened gpu_utils/exercises/, tests/test_*.py, report.py, any FAQ or any
earlier round's list of causes; never ran a check cell nor the checker.

Verification (scratch /tmp/lab10_planner_r13/verify.py with the solution's functions copied in
/tmp/lab10_planner_r13/ref.py, run from tests/ with GPU_COURSE_MODE=simulator
../.venv/bin/python; output in /tmp/lab10_planner_r13/verify.out): each source is loaded with
heldout.submitted() and called as the check cell would. Reference: the solution's
predict_memory_gib / predict_step_seconds (memory equal to P.evaluate's to 0.01 GiB on every
layout; step 0.2-1.8% under the planner's on ZeRO-0/1, 2.5-7.5% under on ZeRO-2), the planner's
P.evaluate only for scoring 10.1 and the defences (scratch only). Layouts (37 for memory, the 30
with ZeRO 0-2 for step time): TP 8 ZeRO 0/1/2/3 (b = 1, and b = 2 selective, b = 8 full, ZeRO-0
full); DP 256 ZeRO-3 none / selective / full; TP 4 ZeRO-3; TP 2 ZeRO-3 full; TP 2 ZeRO-2;
TP 4 ZeRO-1 full; TP 4 x PP 4 with v = 1, 2, 4, 10, v = 4 full, b = 4 (m = 4 = p); TP 4 x PP 2
v = 2; TP 8 x PP 4 b = 4, b = 8 (m < p), b = 8 full, b = 2 v = 2, ZeRO-2; TP 4 x PP 16 v = 5 and
b = 4 (m = 16 = p); TP 4 x PP 8 1F1B; TP 8 x PP 2 ZeRO-2 v = 4 (b = 1, 2), ZeRO-1 v = 1;
TP 8 x PP 16 v = 5, b = 8 (m = 16 = p), ZeRO-2 b = 16 (m = 8 < p); TP 8 x PP 8 v = 5;
TP 2 x PP 8 full. (A TP 8 x PP 32 layout, 2.5 layers per stage, was dropped from the list: it
breaks the lab's equal-stages rule.) Best in ranked: DP 16 x TP 4 x PP 4, v = 4, 9.712 s.

* planner_layout_fits: the dict checked against the lab's rules and scored with P.evaluate.
  Right: layout_tp4_pp16_v5 (54.7 GiB, fits, 1.010x the best, m = 64 a multiple of 16, one
  layer per chunk); layout_tp8_pp4_v4_zero0 (ZeRO-0 fits here: 56.7 GiB, 1.052x). Wrong:
  layout_dp_ignores_pp: dp 64 x tp 4 x pp 4 = 1024 (P.evaluate raises ValueError);
  layout_tp8_zero0_no_pipeline: 151.5 GiB, does not fit (everything else legal);
  layout_interleave_uneven_chunks: TP 4 x PP 8 v = 4, 10 layers per stage not divisible by 4
  (the only rule broken; P.evaluate itself still scores it, 60.1 GiB, 0.998x, because it rounds
  stages up: a checker that only asks the planner would pass it).
* planner_memory_prediction: memory_by_hand_in_flight_from_schedule (hand-written ZeRO and
  Korthikanti counts, chunks read off gu.pipeline.in_flight of one_f_one_b / interleaved)
  equals the reference to 0 relative on all 37 layouts. memory_eager_attention_default:
  +53% to +388% on every recompute="none" layout, -0.05%/-0.09% on the two selective ones and
  exact with full recomputation. memory_no_sequence_parallel: exact on the three tp = 1
  layouts, +6.6% (TP 8 ZeRO-0 full) to +329% elsewhere (+62.5% TP 8 ZeRO-1, +53% the best).
  memory_gigabytes_not_gib: +7.37% everywhere. memory_all_micro_batches_in_flight: exact with
  pp = 1 and when m <= p (b = 8 on PP 4, b = 4 on PP 16, b = 8 / 16 on PP 16), +31% (PP 4 v = 4
  full) to +401% (TP 8 x PP 2 ZeRO-2 v = 4) on every pipeline with m > p.
* planner_step_time: step_by_hand_flops_and_bubble_fraction (6N + 14 L h s / 8N + 18 L h s by
  hand, gu.pipeline.bubble_fraction, H100.peak_flops) equals the reference to 0 relative on
  all 30 layouts. step_bubble_ignores_interleave: exact on every v = 1 layout; on interleaved
  ones +3.6% to +17.0% against the reference (+12.3% / +15.0% / +16.4% against the planner for
  PP 4 v = 4, PP 4 v = 10, PP 16 v = 5; +4.8% to +7.7% for v = 2): wrong beyond 10% only for
  v >= 4 with p >= 4. step_full_peak_no_mfu: -32% to -48% everywhere.
  step_zero2_reduces_once: exact on ZeRO-0/1; on ZeRO-2 -18.9% (TP 8), -19.7% (TP 8 x PP 2
  v = 4), -18.3% (TP 8 x PP 4), -10.1% (b = 2, m = 8), -3.6% (TP 2, m = 2), -0.3% (m = 8,
  dp = 2) against the reference (-25%, -23%, -20%, -12%, -9.7%, -0.4% against the planner).
* planner_defend: the dict compared with P.evaluate of the same layout and the step_parts
  differences against ranked[0]. defend_tp8_pp2_v4 (right): memory 42.04 (planner 42.04), step
  10.12 s (10.28), vs_best 1.042 (planner 1.058, -1.6%), bound NVLink (exposed NVLink 1.48 s,
  network 0.39 s), main_difference tensor-parallel (+0.88 s; bubble -0.26, others <= 0).
  defend_tp8_bound_compute: TP 8 pp 1, all right (55.98 GiB, vs_best 1.058 against 1.076,
  tensor-parallel +0.88 s the largest difference) except bound "compute" (planner NVLink,
  1.48 s exposed of 10.45). defend_vs_best_inverted: TP 4 x PP 8 1F1B, 51.34 GiB, NVLink and
  bubble (+1.52 s) right, vs_best 0.886 against the planner's 1.134 (-21.9%).
  defend_main_difference_own_largest_term: the right defence's layout and figures with
  main_difference "compute" (difference 0.00 s; tensor-parallel +0.88 s).
* Nothing dropped; no answer behaved otherwise than labelled.
"""

from heldout import Blind

#: what the lab's cells 32 and 44 define, as a learner's cell would repeat them
PRELUDE = """
import gpu_utils as gu

P = gu.parallelism
LLAMA = P.MODELS["Llama 3 70B"]
CLUSTER = P.Cluster("H100-SXM", gpus_per_node=8, nodes=32)
BATCH_TOKENS = 2**21
H100 = gu.specs.get("H100-SXM")
"""

RANKED = """

def keeps_the_rules(x):
    stage_layers = LLAMA.layers // x.pp
    return x.tp <= 8 and LLAMA.layers % x.pp == 0 and stage_layers % x.interleave == 0


ranked = [x for x in P.plan(LLAMA, CLUSTER, BATCH_TOKENS) if x.fits and keeps_the_rules(x)]
"""

#: a learner's own 10.2 and 10.3 (equal to the solution's to 1e-12), used by the defences
MEM_STEP = """

def predict_memory_gib(layout):
    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
    b, zero = layout["micro_batch_size"], layout["zero_stage"]
    m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)
    states = gu.memory.model_state_bytes(LLAMA.params / (tp * pp), dp=dp, zero_stage=zero)
    per_layer = gu.memory.activation_bytes_per_layer(
        LLAMA.seq_len, b, LLAMA.hidden, LLAMA.heads, tp=tp, sequence_parallel=tp > 1,
        recompute=layout["recompute"], dropout_masks=False, attention="flash",
    )
    if pp == 1:
        chunks = 1
    elif v == 1:
        chunks = min(pp, m)
    else:
        chunks = min(v * m, v * pp + pp - 1)
    activations = per_layer * LLAMA.layers / (pp * v) * chunks
    gathered = 2 * 2 * LLAMA.layer_params / tp if zero == 3 else 0.0
    return (states.total + activations + gathered) / 2**30


def predict_step_seconds(layout):
    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
    b, zero, recompute = layout["micro_batch_size"], layout["zero_stage"], layout["recompute"]
    gpu = CLUSTER.gpu
    m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)
    per_token = gu.flops.hardware_flops_per_token(
        LLAMA.params, layers=LLAMA.layers, d_model=LLAMA.hidden, seq_len=LLAMA.seq_len,
        recompute=recompute, attention="flash",
    )
    compute = per_token * BATCH_TOKENS / CLUSTER.n_gpus / (0.5 * gu.flops.peak_flops(gpu))
    act = 2 * LLAMA.seq_len * b * LLAMA.hidden
    tp_time = 0.0
    if tp > 1:
        one = gu.collectives.estimate_time("all_reduce", act, tp, gpu=gpu, gpus_per_node=8)
        tp_time = (6 if recompute == "full" else 4) * LLAMA.layers // pp * m * one
    bubble = (pp - 1) / (v * m + pp - 1)
    pp_time = 0.0
    if pp > 1:
        link = H100.network_bandwidth if tp * pp > 8 else H100.nvlink_bandwidth
        pp_time = (v * m + pp - 2) * 2 * act / tp / link
    grads = 2 * LLAMA.params / (tp * pp)
    where = dict(gpu=gpu, gpus_per_node=max(1, min(dp, 8 // (tp * pp))))
    dp_time = 0.0
    if dp > 1:
        if zero == 2:
            scatter = gu.collectives.estimate_time("reduce_scatter", grads, dp, **where)
            dp_time = m * scatter + gu.collectives.estimate_time("all_gather", grads, dp, **where)
        else:
            dp_time = gu.collectives.estimate_time("all_reduce", grads, dp, **where)
    return (compute + tp_time) / (1 - bubble) + pp_time + dp_time
"""

ANSWERS = [
    # ------------------------------------------------------------------ 10.1 planner_layout_fits
    Blind(
        name="layout_tp4_pp16_v5",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=True,
        source=PRELUDE
        + """
def my_layout():
    # TP 4 inside half a node, 16 stages of 5 layers, each GPU running 5 one-layer chunks.
    tp, pp, v = 4, 16, 5
    dp = CLUSTER.n_gpus // (tp * pp)                 # 4 replicas
    sequences = BATCH_TOKENS // LLAMA.seq_len         # 256
    m = sequences // dp                               # 64 micro-batches, a multiple of 16
    assert LLAMA.layers % pp == 0 and (LLAMA.layers // pp) % v == 0 and m % pp == 0
    return {"dp": dp, "tp": tp, "pp": pp, "zero_stage": 1, "micro_batch_size": 1,
            "recompute": "none", "interleave": v}
""",
    ),
    Blind(
        name="layout_tp8_pp4_v4_zero0",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=True,
        source=PRELUDE
        + """
settings = dict(tp=8, pp=4, interleave=4, zero_stage=0, micro_batch_size=1, recompute="none")


def my_layout():
    # 32 GPUs per replica: 70.6e9 x 16 B / 32 = 35 GB of states even without ZeRO
    layout = dict(settings)
    layout["dp"] = CLUSTER.n_gpus // (settings["tp"] * settings["pp"])
    return layout
""",
    ),
    Blind(
        name="layout_dp_ignores_pp",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=False,
        cause=(
            "dp is computed as 256 // tp, forgetting to divide by pp too, so dp x tp x pp = "
            "64 x 4 x 4 = 1024 GPUs, not the cluster's 256."
        ),
        source=PRELUDE
        + """
def my_layout():
    tp = 4                       # half a node of NVLink
    pp = 4                       # 20 layers per stage
    dp = CLUSTER.n_gpus // tp    # the remaining GPUs do data parallelism
    return dict(dp=dp, tp=tp, pp=pp, zero_stage=1, micro_batch_size=1,
                recompute="none", interleave=4)
""",
        hints=("dp x tp x pp = 1024",),
    ),
    Blind(
        name="layout_tp8_zero0_no_pipeline",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=False,
        cause=(
            "With ZeRO-0 and only tp x pp = 8 GPUs per replica every GPU keeps the full 16 bytes "
            "per parameter of its 8.8e9 parameters (141 GB of model states, 151.5 GiB in all), "
            "far over the 72 GiB usable: it needs ZeRO-1 (or a pipeline) to fit."
        ),
        source=PRELUDE
        + """
def my_layout():
    # TP 8 fills a node, no pipeline so no bubble; plain data parallelism over the 32 nodes
    return dict(dp=32, tp=8, pp=1, zero_stage=0, micro_batch_size=1,
                recompute="none", interleave=1)
""",
        hints=("over the 72 GiB",),
    ),
    Blind(
        name="layout_interleave_uneven_chunks",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=False,
        cause=(
            "With pp = 8 each stage holds 10 layers, and interleave = 4 would split them into "
            "chunks of 2.5 layers: every interleaved chunk must have the same whole number of "
            "layers (v must divide L / p = 10)."
        ),
        source=PRELUDE
        + """
def my_layout():
    tp, pp = 4, 8
    dp = CLUSTER.n_gpus // (tp * pp)          # 8 replicas, m = 32 micro-batches
    return dict(dp=dp, tp=tp, pp=pp, zero_stage=1, micro_batch_size=1,
                recompute="none", interleave=4)   # 4 virtual stages, like the best layouts
""",
        hints=("does not divide",),
    ),
    # ------------------------------------------------------------ 10.2 planner_memory_prediction
    Blind(
        name="memory_by_hand_in_flight_from_schedule",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=True,
        source=PRELUDE
        + """
def predict_memory_gib(layout):
    dp, tp, pp = layout["dp"], layout["tp"], layout["pp"]
    v = layout["interleave"] if pp > 1 else 1
    b, zero, rc = layout["micro_batch_size"], layout["zero_stage"], layout["recompute"]
    s, h, a = LLAMA.seq_len, LLAMA.hidden, LLAMA.heads
    m = (BATCH_TOKENS // s) // (dp * b)
    psi = LLAMA.params / (tp * pp)
    # ZeRO: bf16 weights (2), bf16 grads (2), fp32 master + Adam moments (12)
    weights = 2 * psi / (dp if zero >= 3 else 1)
    grads = 2 * psi / (dp if zero >= 2 else 1)
    optim = 12 * psi / (dp if zero >= 1 else 1)
    # Korthikanti's count with sequence parallelism, no dropout masks, flash attention
    sbh = s * b * h
    if rc == "full":
        layer = 2 * sbh / tp
    else:
        layer = sbh / tp * (8 + 24 + 4 * a / h)
    # chunks the first stage holds at once, read off the schedule itself
    if pp == 1:
        held = 1
    elif v == 1:
        held = gu.pipeline.in_flight(gu.pipeline.one_f_one_b(pp, m))[0]
    else:
        held = gu.pipeline.in_flight(gu.pipeline.interleaved(pp, m, v))[0]
    acts = layer * (LLAMA.layers // (pp * v)) * held
    extra = 4 * LLAMA.layer_params / tp if zero == 3 else 0
    return (weights + grads + optim + acts + extra) / 1024**3
""",
    ),
    Blind(
        name="memory_eager_attention_default",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=False,
        cause=(
            "activation_bytes_per_layer is called without attention='flash', so its default "
            "'eager' counts the s x s attention scores (2as/h = 128 sbh more per layer): the "
            "activations are several times too large on every layout with recompute='none' "
            "(right only with 'full' or 'selective', which drop the scores anyway)."
        ),
        source=PRELUDE
        + """
def predict_memory_gib(layout):
    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
    b, zero = layout["micro_batch_size"], layout["zero_stage"]
    m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)
    states = gu.memory.model_state_bytes(LLAMA.params / (tp * pp), dp=dp, zero_stage=zero)
    per_layer = gu.memory.activation_bytes_per_layer(
        LLAMA.seq_len, b, LLAMA.hidden, LLAMA.heads,
        tp=tp, sequence_parallel=tp > 1, recompute=layout["recompute"], dropout_masks=False,
    )
    if pp == 1:
        in_flight = 1
    elif v == 1:
        in_flight = min(pp, m)
    else:
        in_flight = min(v * m, v * pp + pp - 1)
    activations = per_layer * LLAMA.layers / (pp * v) * in_flight
    gathered = 4 * LLAMA.layer_params / tp if zero == 3 else 0.0
    return (states.total + activations + gathered) / 2**30
""",
        hints=("flash",),
    ),
    Blind(
        name="memory_no_sequence_parallel",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=False,
        cause=(
            "sequence_parallel is left at its default False, so the 8 sbh of each layer outside "
            "the tensor-parallel regions is not split by t (and full recomputation's input 2sbh "
            "is not either): activations too large on every layout with tp > 1."
        ),
        source=PRELUDE
        + """
def predict_memory_gib(layout):
    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
    b, zero = layout["micro_batch_size"], layout["zero_stage"]
    m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)
    states = gu.memory.model_state_bytes(LLAMA.params / (tp * pp), dp=dp, zero_stage=zero)
    per_layer = gu.memory.activation_bytes_per_layer(
        LLAMA.seq_len, b, LLAMA.hidden, LLAMA.heads, tp=tp,
        recompute=layout["recompute"], dropout_masks=False, attention="flash",
    )
    if pp == 1:
        chunks = 1
    elif v == 1:
        chunks = min(pp, m)
    else:
        chunks = min(v * m, v * pp + pp - 1)
    activations = per_layer * LLAMA.layers / (pp * v) * chunks
    gathered = 2 * 2 * LLAMA.layer_params / tp if zero == 3 else 0.0
    return (states.total + activations + gathered) / 2**30
""",
        hints=("sequence_parallel=True",),
    ),
    Blind(
        name="memory_gigabytes_not_gib",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=False,
        cause=(
            "Divides the bytes by 1e9 (GB) instead of 2**30 (GiB), so every figure is 7.4% too "
            "large."
        ),
        source=PRELUDE
        + """
def predict_memory_gib(layout):
    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
    b, zero = layout["micro_batch_size"], layout["zero_stage"]
    m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)
    states = gu.memory.model_state_bytes(LLAMA.params / (tp * pp), dp=dp, zero_stage=zero)
    per_layer = gu.memory.activation_bytes_per_layer(
        LLAMA.seq_len, b, LLAMA.hidden, LLAMA.heads, tp=tp, sequence_parallel=tp > 1,
        recompute=layout["recompute"], dropout_masks=False, attention="flash",
    )
    if pp == 1:
        chunks = 1
    elif v == 1:
        chunks = min(pp, m)
    else:
        chunks = min(v * m, v * pp + pp - 1)
    total = states.total + per_layer * LLAMA.layers / (pp * v) * chunks
    if zero == 3:
        total += 2 * 2 * LLAMA.layer_params / tp
    return total / 1e9   # GB
""",
        hints=("1e9",),
    ),
    Blind(
        name="memory_all_micro_batches_in_flight",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=False,
        cause=(
            "Counts all m micro-batches' activations on the first stage (GPipe's memory; v m "
            "chunks interleaved) instead of 1F1B's min(p, m) (interleaved min(v m, v p + p - 1)): "
            "right only when m <= p or without a pipeline, too large whenever m > p."
        ),
        source=PRELUDE
        + """
def predict_memory_gib(layout):
    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
    b, zero = layout["micro_batch_size"], layout["zero_stage"]
    m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)
    states = gu.memory.model_state_bytes(LLAMA.params / (tp * pp), dp=dp, zero_stage=zero)
    per_layer = gu.memory.activation_bytes_per_layer(
        LLAMA.seq_len, b, LLAMA.hidden, LLAMA.heads, tp=tp, sequence_parallel=tp > 1,
        recompute=layout["recompute"], dropout_masks=False, attention="flash",
    )
    # the first stage has run every micro-batch's forward before the backwards come back
    micro_batches_kept = m if pp > 1 else 1
    activations = per_layer * LLAMA.layers / pp * micro_batches_kept
    gathered = 2 * 2 * LLAMA.layer_params / tp if zero == 3 else 0.0
    return (states.total + activations + gathered) / 2**30
""",
        hints=("GPipe",),
    ),
    # ------------------------------------------------------------------ 10.3 planner_step_time
    Blind(
        name="step_by_hand_flops_and_bubble_fraction",
        exercise_id="planner_step_time",
        half="held2",
        correct=True,
        source=PRELUDE
        + """
MFU = 0.5


def predict_step_seconds(layout):
    dp, tp, pp = layout["dp"], layout["tp"], layout["pp"]
    v = layout["interleave"] if pp > 1 else 1
    b, zero, rc = layout["micro_batch_size"], layout["zero_stage"], layout["recompute"]
    s, h, L, N = LLAMA.seq_len, LLAMA.hidden, LLAMA.layers, LLAMA.params
    m = BATCH_TOKENS // s // dp // b
    # hardware FLOPs per token with flash attention: 6N + 14 L h s, 8N + 18 L h s with full
    flops_tok = (8 * N + 18 * L * h * s) if rc == "full" else (6 * N + 14 * L * h * s)
    tokens_per_gpu = BATCH_TOKENS / dp / (tp * pp)
    t_compute = flops_tok * tokens_per_gpu / (MFU * H100.peak_flops("bf16"))
    # tensor parallel: all-reduces of s b h bf16 values, per layer of this stage, per micro-batch
    msg = 2 * s * b * h
    n_ar = (6 if rc == "full" else 4) * (L // pp) * m
    t_tp = n_ar * gu.collectives.estimate_time("all_reduce", msg, tp, gpu="H100-SXM") if tp > 1 else 0.0
    busy = t_compute + t_tp
    idle = gu.pipeline.bubble_fraction(pp, m, v) if pp > 1 else 0.0
    # pipeline sends: forward activations + backward grads, split by t (sequence parallel)
    t_pp = 0.0
    if pp > 1:
        bw = H100.nvlink_bandwidth if tp * pp <= 8 else H100.network_bandwidth
        t_pp = (v * m + pp - 2) * (2 * msg / tp) / bw
    # data parallel over dp ranks tp*pp GPUs apart
    grad_bytes = 2 * N / (tp * pp)
    per_node = max(1, 8 // (tp * pp))
    t_dp = 0.0
    if dp > 1:
        est = lambda op: gu.collectives.estimate_time(op, grad_bytes, dp, gpu="H100-SXM",
                                                      gpus_per_node=min(per_node, dp))
        if zero == 2:
            t_dp = m * est("reduce_scatter") + est("all_gather")
        else:
            t_dp = est("all_reduce")
    return busy / (1 - idle) + t_pp + t_dp
""",
    ),
    Blind(
        name="step_bubble_ignores_interleave",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        cause=(
            "The bubble is taken as (p - 1)/(m + p - 1), leaving out the v of (p - 1)/(v m + p - "
            "1): right for v = 1, but interleaved layouts get the 1F1B bubble, v times too large "
            "(e.g. +13% on TP 4 x PP 4 with v = 4)."
        ),
        source=PRELUDE
        + """
def predict_step_seconds(layout):
    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
    b, zero, recompute = layout["micro_batch_size"], layout["zero_stage"], layout["recompute"]
    gpu = CLUSTER.gpu
    m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)
    per_token = gu.flops.hardware_flops_per_token(
        LLAMA.params, layers=LLAMA.layers, d_model=LLAMA.hidden, seq_len=LLAMA.seq_len,
        recompute=recompute, attention="flash",
    )
    compute = per_token * BATCH_TOKENS / CLUSTER.n_gpus / (0.5 * gu.flops.peak_flops(gpu))
    act = 2 * LLAMA.seq_len * b * LLAMA.hidden
    tp_time = 0.0
    if tp > 1:
        one = gu.collectives.estimate_time("all_reduce", act, tp, gpu=gpu, gpus_per_node=8)
        tp_time = (6 if recompute == "full" else 4) * LLAMA.layers // pp * m * one
    bubble = (pp - 1) / (m + pp - 1)      # GPipe / 1F1B bubble
    pp_time = 0.0
    if pp > 1:
        link = H100.network_bandwidth if tp * pp > 8 else H100.nvlink_bandwidth
        pp_time = (v * m + pp - 2) * 2 * act / tp / link
    grads = 2 * LLAMA.params / (tp * pp)
    where = dict(gpu=gpu, gpus_per_node=max(1, min(dp, 8 // (tp * pp))))
    dp_time = 0.0
    if dp > 1:
        if zero == 2:
            scatter = gu.collectives.estimate_time("reduce_scatter", grads, dp, **where)
            dp_time = m * scatter + gu.collectives.estimate_time("all_gather", grads, dp, **where)
        else:
            dp_time = gu.collectives.estimate_time("all_reduce", grads, dp, **where)
    return (compute + tp_time) / (1 - bubble) + pp_time + dp_time
""",
        hints=("interleaving",),
    ),
    Blind(
        name="step_full_peak_no_mfu",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        cause=(
            "The compute time divides the FLOPs by the dense peak alone, leaving out MFU = 0.5, "
            "so the compute term (and the step) comes out about half the planner's."
        ),
        source=PRELUDE
        + """
def predict_step_seconds(layout):
    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
    b, zero, recompute = layout["micro_batch_size"], layout["zero_stage"], layout["recompute"]
    gpu = CLUSTER.gpu
    m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)
    per_token = gu.flops.hardware_flops_per_token(
        LLAMA.params, layers=LLAMA.layers, d_model=LLAMA.hidden, seq_len=LLAMA.seq_len,
        recompute=recompute, attention="flash",
    )
    peak = gu.flops.peak_flops(gpu)
    compute = per_token * BATCH_TOKENS / CLUSTER.n_gpus / peak
    act = 2 * LLAMA.seq_len * b * LLAMA.hidden
    tp_time = 0.0
    if tp > 1:
        one = gu.collectives.estimate_time("all_reduce", act, tp, gpu=gpu, gpus_per_node=8)
        tp_time = (6 if recompute == "full" else 4) * LLAMA.layers // pp * m * one
    bubble = (pp - 1) / (v * m + pp - 1)
    pp_time = 0.0
    if pp > 1:
        link = H100.network_bandwidth if tp * pp > 8 else H100.nvlink_bandwidth
        pp_time = (v * m + pp - 2) * 2 * act / tp / link
    grads = 2 * LLAMA.params / (tp * pp)
    where = dict(gpu=gpu, gpus_per_node=max(1, min(dp, 8 // (tp * pp))))
    dp_time = 0.0
    if dp > 1:
        if zero == 2:
            scatter = gu.collectives.estimate_time("reduce_scatter", grads, dp, **where)
            dp_time = m * scatter + gu.collectives.estimate_time("all_gather", grads, dp, **where)
        else:
            dp_time = gu.collectives.estimate_time("all_reduce", grads, dp, **where)
    return (compute + tp_time) / (1 - bubble) + pp_time + dp_time
""",
        hints=("MFU = 0.5",),
    ),
    Blind(
        name="step_zero2_reduces_once",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        cause=(
            "ZeRO-2 is given ZeRO-0/1's single gradient all-reduce per step, but ZeRO-2 keeps "
            "only its shard, so it reduce-scatters the gradients on every one of the m "
            "micro-batches (m x the reduce-scatter, plus one all-gather): right on ZeRO-0/1, "
            "too fast on ZeRO-2."
        ),
        source=PRELUDE
        + """
def predict_step_seconds(layout):
    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
    b, recompute = layout["micro_batch_size"], layout["recompute"]
    gpu = CLUSTER.gpu
    m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)
    per_token = gu.flops.hardware_flops_per_token(
        LLAMA.params, layers=LLAMA.layers, d_model=LLAMA.hidden, seq_len=LLAMA.seq_len,
        recompute=recompute, attention="flash",
    )
    compute = per_token * BATCH_TOKENS / CLUSTER.n_gpus / (0.5 * gu.flops.peak_flops(gpu))
    act = 2 * LLAMA.seq_len * b * LLAMA.hidden
    tp_time = 0.0
    if tp > 1:
        one = gu.collectives.estimate_time("all_reduce", act, tp, gpu=gpu, gpus_per_node=8)
        tp_time = (6 if recompute == "full" else 4) * LLAMA.layers // pp * m * one
    bubble = (pp - 1) / (v * m + pp - 1)
    pp_time = 0.0
    if pp > 1:
        link = H100.network_bandwidth if tp * pp > 8 else H100.nvlink_bandwidth
        pp_time = (v * m + pp - 2) * 2 * act / tp / link
    # ZeRO 0-2 all move the bf16 gradients once per step (reduce-scatter + all-gather = all-reduce)
    grads = 2 * LLAMA.params / (tp * pp)
    dp_time = 0.0
    if dp > 1:
        dp_time = gu.collectives.estimate_time(
            "all_reduce", grads, dp, gpu=gpu, gpus_per_node=max(1, min(dp, 8 // (tp * pp)))
        )
    return (compute + tp_time) / (1 - bubble) + pp_time + dp_time
""",
        hints=("ZeRO-2",),
    ),
    # ------------------------------------------------------------------ 10.4 planner_defend
    Blind(
        name="defend_tp8_pp2_v4",
        exercise_id="planner_defend",
        half="held2",
        correct=True,
        source=PRELUDE
        + RANKED
        + MEM_STEP
        + """

def my_layout():
    return dict(dp=16, tp=8, pp=2, zero_stage=1, micro_batch_size=1, recompute="none",
                interleave=4)


def defend():
    mine = my_layout()
    seconds = predict_step_seconds(mine)
    best_seconds = ranked[0].step_time
    # TP 8: 4 all-reduces x 40 layers x 16 micro-batches over NVLink (~1.5 s exposed) against
    # ~0.4 s of network (pipeline sends and the gradients' all-reduce): NVLink-bound. The best
    # (TP 4 x PP 4, v = 4) all-reduces over 4 GPUs, not 8: that is where the 0.9 s go.
    answer = {
        "layout": mine,
        "memory_gib": predict_memory_gib(mine),
        "step_seconds": seconds,
        "bound": "NVLink",
        "vs_best": seconds / best_seconds,
        "main_difference": "tensor-parallel",
    }
    return answer
""",
    ),
    Blind(
        name="defend_tp8_bound_compute",
        exercise_id="planner_defend",
        half="held2",
        correct=False,
        cause=(
            "bound is given as 'compute' because compute is the step's largest term, but the "
            "bound names the link with the most exposed communication once it exceeds 1% of the "
            "step: here TP 8's all-reduces, about 1.5 s of 10.3 s over NVLink, so 'NVLink'."
        ),
        source=PRELUDE
        + RANKED
        + MEM_STEP
        + """

def my_layout():
    return dict(dp=32, tp=8, pp=1, zero_stage=1, micro_batch_size=1, recompute="none",
                interleave=1)


def defend():
    layout = my_layout()
    step = predict_step_seconds(layout)
    # compute is ~8.3 s of the ~10.3 s step: the matmuls limit this layout
    return dict(
        layout=layout,
        memory_gib=predict_memory_gib(layout),
        step_seconds=step,
        bound="compute",
        vs_best=step / ranked[0].step_time,
        main_difference="tensor-parallel",
    )
""",
        hints=("NVLink",),
    ),
    Blind(
        name="defend_vs_best_inverted",
        exercise_id="planner_defend",
        half="held2",
        correct=False,
        cause=(
            "vs_best is computed as the best's step over this layout's (ranked[0].step_time / "
            "step), the inverse of the ratio asked for: 0.886 instead of about 1.13 for this "
            "TP 4 x PP 8 1F1B layout."
        ),
        source=PRELUDE
        + RANKED
        + MEM_STEP
        + """

def my_layout():
    return dict(dp=8, tp=4, pp=8, zero_stage=1, micro_batch_size=1, recompute="none",
                interleave=1)


def defend():
    layout = my_layout()
    step = predict_step_seconds(layout)
    # 1F1B with 32 micro-batches on 8 stages: a bubble of 7/39 of the step, against the best's
    # 3/67 (interleaved): the bubble costs this layout the most
    return dict(
        layout=layout,
        memory_gib=predict_memory_gib(layout),
        step_seconds=step,
        bound="NVLink",
        vs_best=ranked[0].step_time / step,   # relative speed of the best against mine
        main_difference="bubble",
    )
""",
        hints=("not the other way round",),
    ),
    Blind(
        name="defend_main_difference_own_largest_term",
        exercise_id="planner_defend",
        half="held2",
        correct=False,
        cause=(
            "main_difference names the largest term of this layout's own step (compute, the same "
            "8.26 s in both layouts) instead of the term that costs it the most seconds against "
            "the best: tensor-parallel (+0.88 s, TP 8's all-reduces against TP 4's)."
        ),
        source=PRELUDE
        + RANKED
        + MEM_STEP
        + """

def my_layout():
    return dict(dp=16, tp=8, pp=2, zero_stage=1, micro_batch_size=1, recompute="none",
                interleave=4)


def defend():
    layout = my_layout()
    step = predict_step_seconds(layout)
    return dict(
        layout=layout,
        memory_gib=predict_memory_gib(layout),
        step_seconds=step,
        bound="NVLink",
        vs_best=step / ranked[0].step_time,
        main_difference="compute",   # the matmuls are most of my step
    )
""",
        hints=("(tensor-parallel)",),
    ),
]
