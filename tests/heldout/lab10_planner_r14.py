"""Blind held-out round lab10_planner_r14 (half "held2"), lab 10's planner part (10.1-10.4).

Written by a blind helper session on 2026-11-29 (15:21-15:25 UTC by `date -u`). Read: the
markdown and code cells of labs/10_model_parallel_lab.ipynb (the exercise texts of 10-10.4
closely) and the solution cells of solutions/10_model_parallel_lab.ipynb (10.1-10.4); in
gpu_utils/many_gpus: parallelism.py (Layout's fields, evaluate's signature, in_flight_chunks),
memory.py (model_state_bytes, activation_bytes_per_layer: defaults and docstrings), flops.py
(hardware_flops_per_token), collectives.estimate_time / cluster_time's signatures, pipeline.py
(one_f_one_b, interleaved, in_flight); tests/heldout/__init__.py and the docstring, PRELUDE /
RANKED / MEM / STEP / TP8 snippets and first two entries of lab10_planner_r10.py for the format
(MEM, STEP and RANKED here are the solution notebook's own 10.2 / 10.3 / 10.4 code). Never
opened gpu_utils/exercises/, tests/test_*.py, report.py, any FAQ nor any earlier round's list
of causes; never ran a check cell nor the checker.

Verification (scratch /tmp/lab10_planner_r14/verify.py and two sweeps, run from tests/ with
GPU_COURSE_MODE=simulator ../.venv/bin/python; outputs verify.out, sweep_step.out there). Each
source is loaded with heldout.submitted() and called as the check cell would call it.
* Reference: the solution's predict_memory_gib / predict_step_seconds, checked against
  P.evaluate on 30 layouts (TP 8 ZeRO 0/1/2; DP 256 ZeRO-3 full; TP 4 ZeRO-3; TP 4 x PP 4 with
  v = 1, 2, 4, 10, full recompute, ZeRO-0, b = 4 v = 4 (m = p); TP 4 x PP 2 v = 2; TP 8 x PP 4
  b = 4, 8, b = 2 v = 2, b = 4 v = 2; TP 4 x PP 16 v = 5; TP 4 x PP 8; TP 8 x PP 2 ZeRO-2 v = 4
  b = 1, 2; TP 8 x PP 16 v = 5; TP 8 b = 2 selective, b = 8 full; TP 2 x PP 8 full; TP 2 x PP 4
  ZeRO-2; TP 8 x PP 2 b = 4; and m < p: TP 4 x PP 8 b = 8, TP 4 x PP 16 b = 8, TP 2 x PP 8
  b = 4): memory equal to the planner's to 0.01 GiB on all 30, step 0.1-1.7% under it on
  ZeRO-0/1, 2.5-7.5% under on ZeRO-2 (ZeRO-3 is left out of 10.3 by the lab).
  ranked[0] = DP 16 x TP 4 x PP 4, ZeRO-1, v = 4, 9.712 s.
* planner_layout_fits (returned dict scored with P.evaluate in scratch only):
  layout_tp8_pp4_v4_computed (right): DP 8 x TP 8 x PP 4, v = 4, ZeRO-1, keeps every rule
  (m = 32, multiple of 4; 5 layers per chunk), 35.1 GiB, 10.218 s = 1.052x the best (inside
  1.2x); it prints one line. layout_dp_forgets_pp: dp = 256 // tp = 32 with pp = 4, product
  1024 (P.evaluate itself raises "dp x tp x pp = 1024, but the cluster has 256 GPUs").
  layout_tp16_across_nodes: tp = 16 > 8 breaks the in-node rule (the planner would score it
  29.5 GiB, 11.70 s, 1.205x, so only the rule rejects it). layout_tp8_zero0_does_not_fit:
  keeps the rules, 151.5 GiB per GPU (79.5 over), does not fit.
* planner_memory_prediction, compared with the reference on the 30 layouts, and the right one
  also on an exhaustive sweep of 1740 rule-keeping layouts (tp 1-8, pp 1-16, b 1-8, v in
  1/2/4/5/10, ZeRO 0-3, all three recomputes): memory_in_flight_from_schedules (right; counts
  the first stage's chunks by simulating gu.pipeline.one_f_one_b / interleaved and
  gu.pipeline.in_flight, with Megatron's count as fallback when m % p != 0) equals it to 1e-12
  everywhere, fallback included (TP 4 x PP 4 v = 4 b = 8). memory_eager_attention_default is
  +53% to +382% on every layout except the one with selective recompute (-0.05%: eager +
  selective drops the scores too); memory_zero_without_dp is exact on ZeRO-0 layouts and
  +10.7% to +6058% on every ZeRO 1-3 one; memory_1f1b_always_p_in_flight is exact on every
  layout with m > p (and 1F1B m = p), and wrong only where the batch has fewer micro-batches than
  the warm-up: +89% to +96% on the three m < p layouts, +16.7% on interleaved m = p
  (TP 4 x PP 4 v = 4 b = 4) -- right on easy inputs.
* planner_step_time, compared with the reference on the 30 layouts and on a sweep of 822
  ZeRO 0-2 layouts (tp 1-8, pp 1-16, b 1-4, v 1/2/4/5, recompute none/full), also against
  P.evaluate: step_busy_times_schedule_ratio (right; busy x (v m + p - 1)/(v m), compute from
  a replica's tokens over its tp x pp GPUs) equals the reference to 1e-15, at most 7.5% from the
  planner; step_cluster_time_latencies (right; every collective by
  gu.collectives.cluster_time, NCCL latencies included) is 0.07-1.65% above the reference, at
  most 6.9% from the planner. step_peak_without_mfu: 32-49% short on all 822;
  step_bubble_ignores_interleave: exact for v = 1, +3.6% to +45.5% on the 12 interleaved
  layouts (+12.9% for the best, +15.6% v = 10, +17% v = 5, +45.5% for v = 4 with m = p = 4;
  under 10% on six of them, e.g. +5.5% TP 4 x PP 2 v = 2), beyond 10% on 368 of 822;
  step_tp_all_layers_not_stage: exact for pp = 1, +5% (TP 2 x PP 4) to +200% (TP 8 x PP 16),
  +18.6% for the best, beyond 10% on 468 of 822; step_zero2_scatter_once: exact on ZeRO-0/1,
  -10% to -20% on ZeRO-2 (-18.9% TP 8 ZeRO-2, -19.7% TP 8 x PP 2 v = 4), beyond 10% on 87.
* planner_defend (dict compared with P.evaluate of the same layout and step_parts against
  ranked[0], in scratch; P.evaluate was wrapped to count calls made inside defend()):
  defend_tp8_pp4_v4_reasoned (right): 35.07 GiB (planner 35.07), 10.061 s (10.218), vs_best
  1.036 (planner 1.052), bound NVLink (exposed NVLink 1.48 s, network 0.25 s), main difference
  tensor-parallel (+0.876 s; bubble -0.187, data-parallel -0.184), no P.evaluate call.
  defend_vs_best_inverted (TP 4 x PP 8 1F1B): all right (51.34 GiB, 10.97 s, NVLink 0.60 s vs
  network 0.21 s, bubble +1.52 s the main difference) except vs_best 0.885 against the
  planner's 1.134 (22% off). defend_bound_network (TP 8 layout): all right but bound
  "network" (exposed NVLink 1.48 s, network 0.71 s). defend_calls_evaluate: every value right
  (bound NVLink read from P.evaluate), one P.evaluate call inside defend(), which the text
  forbids.
* Dropped after writing: layout_interleave_3 (v = 3 with 20-layer stages), memory without
  sequence_parallel (+20% to +163%, too close in kind to the eager-default one) and a defend
  naming "bubble" for the TP 8 layout, to stay within 18 answers.
"""

from heldout import Blind

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

# the learner's 10.2 answer, as the solution notebook writes it (used by the 10.4 answers)
MEM = """
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
"""

# the learner's 10.3 answer, as the solution notebook writes it (used by the 10.4 answers)
STEP = """
def predict_step_seconds(layout):
    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
    b, zero, recompute = layout["micro_batch_size"], layout["zero_stage"], layout["recompute"]
    gpu, n = CLUSTER.gpu, CLUSTER.n_gpus
    m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)
    per_token = gu.flops.hardware_flops_per_token(
        LLAMA.params, layers=LLAMA.layers, d_model=LLAMA.hidden, seq_len=LLAMA.seq_len,
        recompute=recompute, attention="flash",
    )
    compute = per_token * BATCH_TOKENS / n / (0.5 * gu.flops.peak_flops(gpu))
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
    per_node = max(1, min(dp, 8 // (tp * pp)))
    dp_time = 0.0
    if dp > 1:
        where = dict(gpu=gpu, gpus_per_node=per_node)
        if zero == 2:
            scatter = gu.collectives.estimate_time("reduce_scatter", grads, dp, **where)
            dp_time = m * scatter + gu.collectives.estimate_time("all_gather", grads, dp, **where)
        else:
            dp_time = gu.collectives.estimate_time("all_reduce", grads, dp, **where)
    return (compute + tp_time) / (1 - bubble) + pp_time + dp_time
"""

TP8 = """
def my_layout():
    return dict(dp=32, tp=8, pp=1, zero_stage=1, micro_batch_size=1, recompute="none", interleave=1)
"""

TP4_PP8 = """
def my_layout():
    return dict(dp=8, tp=4, pp=8, zero_stage=1, micro_batch_size=1, recompute="none", interleave=1)
"""

TP8_PP4 = """
def my_layout():
    return dict(dp=8, tp=8, pp=4, zero_stage=1, micro_batch_size=1, recompute="none", interleave=4)
"""

ANSWERS = [
    # ---------------- planner_layout_fits ----------------
    Blind(
        name="layout_tp8_pp4_v4_computed",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=True,
        source=PRELUDE
        + """
def my_layout():
    # a full node of TP (NVLink), 4 stages of 20 layers, 4 chunks of 5 layers per GPU
    tp = CLUSTER.gpus_per_node
    pp = 4
    dp = CLUSTER.n_gpus // (tp * pp)
    sequences = BATCH_TOKENS // LLAMA.seq_len
    m = sequences // dp
    v = 4
    assert dp * tp * pp == CLUSTER.n_gpus and m % pp == 0 and (LLAMA.layers // pp) % v == 0
    print(f"dp={dp}, m={m}, bubble={(pp - 1) / (v * m + pp - 1):.3f}")
    return {"dp": dp, "tp": tp, "pp": pp, "zero_stage": 1,
            "micro_batch_size": 1, "recompute": "none", "interleave": v}
""",
    ),
    Blind(
        name="layout_dp_forgets_pp",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=False,
        cause=(
            "dp is computed as 256 // tp without dividing by pp as well, so dp x tp x pp is "
            "32 x 8 x 4 = 1024 GPUs, not the cluster's 256."
        ),
        source=PRELUDE
        + """
def my_layout():
    tp, pp = 8, 4
    dp = CLUSTER.n_gpus // tp          # 32 data-parallel replicas
    return dict(dp=dp, tp=tp, pp=pp, zero_stage=1, micro_batch_size=1,
                recompute="none", interleave=4)
""",
        hints=("dp x tp x pp = 1024",),
    ),
    Blind(
        name="layout_tp16_across_nodes",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=False,
        cause=(
            "tp = 16 spans two 8-GPU nodes: the lab's rule keeps tensor parallelism inside a "
            "node (tp at most 8)."
        ),
        source=PRELUDE
        + """
def my_layout():
    # shard the weights as much as possible with TP and avoid a pipeline bubble altogether
    return dict(dp=16, tp=16, pp=1, zero_stage=1, micro_batch_size=1,
                recompute="none", interleave=1)
""",
        hints=("spans 2 nodes",),
    ),
    Blind(
        name="layout_tp8_zero0_does_not_fit",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=False,
        cause=(
            "with ZeRO stage 0 every GPU of DP 32 x TP 8 keeps all 16 bytes per parameter of its "
            "8.8e9 parameters (about 132 GiB of model states), far over the 72 GiB usable: the "
            "optimizer states must be sharded (ZeRO-1) or the model split further."
        ),
        source=PRELUDE
        + """
def my_layout():
    # TP 8 inside the node, plain data parallelism across the 32 nodes, no pipeline
    return dict(dp=32, tp=8, pp=1, zero_stage=0, micro_batch_size=1,
                recompute="none", interleave=1)
""",
        hints=("over the 72 GiB",),
    ),
    Blind(
        name="memory_in_flight_from_schedules",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=True,
        source=PRELUDE
        + """
def predict_memory_gib(layout):
    d, t, p = layout["dp"], layout["tp"], layout["pp"]
    v, b = layout["interleave"], layout["micro_batch_size"]
    micro_batches = (BATCH_TOKENS // LLAMA.seq_len) // (d * b)
    GiB = 1024**3
    # model states of this GPU's share of the parameters
    ms = gu.memory.model_state_bytes(LLAMA.params / t / p, dp=d, zero_stage=layout["zero_stage"])
    total = ms.parameters + ms.gradients + ms.optimizer
    # one layer, as this job runs it (flash attention, no dropout, SP when t > 1)
    one_layer = gu.memory.activation_bytes_per_layer(
        seq_len=LLAMA.seq_len, micro_batch=b, hidden=LLAMA.hidden, n_heads=LLAMA.heads,
        tp=t, sequence_parallel=(t > 1), recompute=layout["recompute"],
        dropout_masks=False, attention="flash",
    )
    # how many chunks the first stage keeps: simulate the schedule itself
    if p == 1:
        live = 1
    elif v == 1:
        live = gu.pipeline.in_flight(gu.pipeline.one_f_one_b(p, micro_batches))[0]
    elif micro_batches % p == 0:
        live = gu.pipeline.in_flight(gu.pipeline.interleaved(p, micro_batches, v))[0]
    else:  # the interleaved schedule needs m % p == 0: Megatron's warm-up count instead
        live = min(v * micro_batches, v * p + p - 1)
    total += one_layer * (LLAMA.layers // (p * v)) * live
    if layout["zero_stage"] == 3:
        total += 4 * LLAMA.layer_params / t
    return total / GiB
""",
    ),
    Blind(
        name="memory_eager_attention_default",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=False,
        cause=(
            'activation_bytes_per_layer is called without attention="flash", so its default '
            '"eager" counts the s x s attention scores (2as/h = 128 sbh more per layer) that '
            "the job's fused attention never stores: activations about 5x too large."
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
        recompute=layout["recompute"], dropout_masks=False,
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
        hints=("flash",),
    ),
    Blind(
        name="memory_zero_without_dp",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=False,
        cause=(
            "model_state_bytes is called with the ZeRO stage but without dp=, so it shards over "
            "dp = 1: ZeRO 1-3 save nothing and every layout's model states are the full 16 bytes "
            "per parameter of its tp x pp share."
        ),
        source=PRELUDE
        + """
def predict_memory_gib(layout):
    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
    b, zero = layout["micro_batch_size"], layout["zero_stage"]
    m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)
    states = gu.memory.model_state_bytes(LLAMA.params / (tp * pp), zero_stage=zero)
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
""",
        hints=("dp=",),
    ),
    Blind(
        name="memory_1f1b_always_p_in_flight",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=False,
        cause=(
            "the first stage is taken to hold a full pipeline's worth of micro-batches always "
            "(p for 1F1B, v p + p - 1 chunks interleaved), without the min with what the batch "
            "has (m, v m): with fewer micro-batches than stages (m < p, b > 1; interleaved m = p) "
            "it counts activations of micro-batches that do not exist."
        ),
        source=PRELUDE
        + """
def predict_memory_gib(layout):
    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
    b, zero = layout["micro_batch_size"], layout["zero_stage"]
    states = gu.memory.model_state_bytes(LLAMA.params / (tp * pp), dp=dp, zero_stage=zero)
    per_layer = gu.memory.activation_bytes_per_layer(
        LLAMA.seq_len, b, LLAMA.hidden, LLAMA.heads, tp=tp, sequence_parallel=tp > 1,
        recompute=layout["recompute"], dropout_masks=False, attention="flash",
    )
    # 1F1B: the first stage holds p micro-batches (p chunks per virtual stage, plus the warm-up)
    if pp == 1:
        chunks = 1
    elif v == 1:
        chunks = pp
    else:
        chunks = v * pp + pp - 1
    activations = per_layer * LLAMA.layers / (pp * v) * chunks
    gathered = 2 * 2 * LLAMA.layer_params / tp if zero == 3 else 0.0
    return (states.total + activations + gathered) / 2**30
""",
        hints=("min() with m",),
    ),
    # ---------------- planner_step_time ----------------
    Blind(
        name="step_busy_times_schedule_ratio",
        exercise_id="planner_step_time",
        half="held2",
        correct=True,
        source=PRELUDE
        + """
def predict_step_seconds(layout):
    dp, tp, pp = layout["dp"], layout["tp"], layout["pp"]
    v, b = layout["interleave"], layout["micro_batch_size"]
    zero, rc = layout["zero_stage"], layout["recompute"]
    gpu = CLUSTER.gpu
    m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)
    # compute: each replica's tokens shared by its tp x pp GPUs (= the batch over all 256)
    flops_tok = gu.flops.hardware_flops_per_token(
        LLAMA.params, layers=LLAMA.layers, d_model=LLAMA.hidden, seq_len=LLAMA.seq_len,
        recompute=rc, attention="flash")
    tokens_per_replica = BATCH_TOKENS / dp
    t_compute = flops_tok * tokens_per_replica / (tp * pp) / (gu.flops.peak_flops(gpu) / 2)
    # TP: all-reduces of one micro-batch's bf16 activations, per layer of this stage
    msg = LLAMA.seq_len * b * LLAMA.hidden * 2
    n_ar = (6 if rc == "full" else 4) * (LLAMA.layers // pp) * m
    t_tp = n_ar * gu.collectives.estimate_time("all_reduce", msg, tp, gpu=gpu) if tp > 1 else 0.0
    # the bubble stretches the busy time: busy slots v m out of v m + p - 1
    busy = t_compute + t_tp
    step = busy * (v * m + pp - 1) / (v * m)
    # pipeline sends, each way, split over the TP ranks by sequence parallelism
    if pp > 1:
        bw = H100.nvlink_bandwidth if tp * pp <= 8 else H100.network_bandwidth
        step += 2 * (v * m + pp - 2) * (msg / tp) / bw
    # data parallel gradients (bf16)
    if dp > 1:
        g = 2 * LLAMA.params / (tp * pp)
        ranks_per_node = max(1, min(dp, 8 // (tp * pp)))
        est = lambda op: gu.collectives.estimate_time(op, g, dp, gpu=gpu, gpus_per_node=ranks_per_node)
        if zero == 2:
            step += m * est("reduce_scatter") + est("all_gather")
        else:
            step += est("all_reduce")
    return step
""",
    ),
    Blind(
        name="step_cluster_time_latencies",
        exercise_id="planner_step_time",
        half="held2",
        correct=True,
        source=PRELUDE
        + """
def predict_step_seconds(layout):
    # same model as the chapter, but collectives priced with NCCL's latencies too
    dp, tp, pp, v = (layout[k] for k in ("dp", "tp", "pp", "interleave"))
    b, zero, recompute = layout["micro_batch_size"], layout["zero_stage"], layout["recompute"]
    gpu = CLUSTER.gpu
    m = 256 // (dp * b)
    per_token = gu.flops.hardware_flops_per_token(
        LLAMA.params, layers=LLAMA.layers, d_model=LLAMA.hidden, seq_len=LLAMA.seq_len,
        recompute=recompute, attention="flash")
    compute = per_token * BATCH_TOKENS / CLUSTER.n_gpus / (0.5 * gu.flops.peak_flops(gpu))
    act = 2 * LLAMA.seq_len * b * LLAMA.hidden
    tp_time = 0.0
    if tp > 1:
        per_layer = 6 if recompute == "full" else 4
        one = gu.collectives.cluster_time("all_reduce", act, tp, gpu=gpu, gpus_per_node=8)
        tp_time = per_layer * (LLAMA.layers // pp) * m * one
    bubble = (pp - 1) / (v * m + pp - 1)
    pp_time = 0.0
    if pp > 1:
        link = H100.network_bandwidth if tp * pp > 8 else H100.nvlink_bandwidth
        pp_time = (v * m + pp - 2) * 2 * (act / tp) / link
    dp_time = 0.0
    if dp > 1:
        grads = 2 * LLAMA.params / (tp * pp)
        per_node = max(1, min(dp, 8 // (tp * pp)))
        ct = lambda op: gu.collectives.cluster_time(op, grads, dp, gpu=gpu, gpus_per_node=per_node)
        dp_time = m * ct("reduce_scatter") + ct("all_gather") if zero == 2 else ct("all_reduce")
    return (compute + tp_time) / (1 - bubble) + pp_time + dp_time
""",
    ),
    Blind(
        name="step_peak_without_mfu",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        cause=(
            "the compute time divides the FLOPs by the dense peak itself, forgetting the "
            "planner's MFU of 0.5, so the compute term (most of the step) is half what it is."
        ),
        source=PRELUDE
        + """
def predict_step_seconds(layout):
    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
    b, zero, recompute = layout["micro_batch_size"], layout["zero_stage"], layout["recompute"]
    gpu, n = CLUSTER.gpu, CLUSTER.n_gpus
    m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)
    per_token = gu.flops.hardware_flops_per_token(
        LLAMA.params, layers=LLAMA.layers, d_model=LLAMA.hidden, seq_len=LLAMA.seq_len,
        recompute=recompute, attention="flash",
    )
    compute = per_token * BATCH_TOKENS / n / gu.flops.peak_flops(gpu)
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
    per_node = max(1, min(dp, 8 // (tp * pp)))
    dp_time = 0.0
    if dp > 1:
        where = dict(gpu=gpu, gpus_per_node=per_node)
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
        name="step_bubble_ignores_interleave",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        cause=(
            "the bubble is (p - 1)/(m + p - 1), leaving out the virtual stages: with v > 1 the "
            "interleaved schedule's bubble is (p - 1)/(v m + p - 1), v times smaller."
        ),
        source=PRELUDE
        + """
def predict_step_seconds(layout):
    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
    b, zero, recompute = layout["micro_batch_size"], layout["zero_stage"], layout["recompute"]
    gpu, n = CLUSTER.gpu, CLUSTER.n_gpus
    m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)
    per_token = gu.flops.hardware_flops_per_token(
        LLAMA.params, layers=LLAMA.layers, d_model=LLAMA.hidden, seq_len=LLAMA.seq_len,
        recompute=recompute, attention="flash",
    )
    compute = per_token * BATCH_TOKENS / n / (0.5 * gu.flops.peak_flops(gpu))
    act = 2 * LLAMA.seq_len * b * LLAMA.hidden
    tp_time = 0.0
    if tp > 1:
        one = gu.collectives.estimate_time("all_reduce", act, tp, gpu=gpu, gpus_per_node=8)
        tp_time = (6 if recompute == "full" else 4) * LLAMA.layers // pp * m * one
    bubble = (pp - 1) / (m + pp - 1)          # 1F1B's bubble (question 5)
    pp_time = 0.0
    if pp > 1:
        link = H100.network_bandwidth if tp * pp > 8 else H100.nvlink_bandwidth
        pp_time = (v * m + pp - 2) * 2 * act / tp / link
    grads = 2 * LLAMA.params / (tp * pp)
    per_node = max(1, min(dp, 8 // (tp * pp)))
    dp_time = 0.0
    if dp > 1:
        where = dict(gpu=gpu, gpus_per_node=per_node)
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
        name="step_tp_all_layers_not_stage",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        cause=(
            "the tensor-parallel all-reduces are counted for all 80 layers on every GPU, but a "
            "GPU only runs its own stage's L / p layers: the TP term is p times too large for "
            "any pipeline (exact when pp = 1)."
        ),
        source=PRELUDE
        + """
def predict_step_seconds(layout):
    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
    b, zero, recompute = layout["micro_batch_size"], layout["zero_stage"], layout["recompute"]
    gpu, n = CLUSTER.gpu, CLUSTER.n_gpus
    m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)
    per_token = gu.flops.hardware_flops_per_token(
        LLAMA.params, layers=LLAMA.layers, d_model=LLAMA.hidden, seq_len=LLAMA.seq_len,
        recompute=recompute, attention="flash",
    )
    compute = per_token * BATCH_TOKENS / n / (0.5 * gu.flops.peak_flops(gpu))
    act = 2 * LLAMA.seq_len * b * LLAMA.hidden
    tp_time = 0.0
    if tp > 1:
        one = gu.collectives.estimate_time("all_reduce", act, tp, gpu=gpu, gpus_per_node=8)
        per_layer = 6 if recompute == "full" else 4
        tp_time = per_layer * LLAMA.layers * m * one     # 4 all-reduces per layer, per micro-batch
    bubble = (pp - 1) / (v * m + pp - 1)
    pp_time = 0.0
    if pp > 1:
        link = H100.network_bandwidth if tp * pp > 8 else H100.nvlink_bandwidth
        pp_time = (v * m + pp - 2) * 2 * act / tp / link
    grads = 2 * LLAMA.params / (tp * pp)
    per_node = max(1, min(dp, 8 // (tp * pp)))
    dp_time = 0.0
    if dp > 1:
        where = dict(gpu=gpu, gpus_per_node=per_node)
        if zero == 2:
            scatter = gu.collectives.estimate_time("reduce_scatter", grads, dp, **where)
            dp_time = m * scatter + gu.collectives.estimate_time("all_gather", grads, dp, **where)
        else:
            dp_time = gu.collectives.estimate_time("all_reduce", grads, dp, **where)
    return (compute + tp_time) / (1 - bubble) + pp_time + dp_time
""",
        hints=("L/p layers",),
    ),
    Blind(
        name="step_zero2_scatter_once",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        cause=(
            "ZeRO-2 is priced as one reduce-scatter and one all-gather per step, but a rank that "
            "keeps only its gradient shard must reduce-scatter the gradients after every one of "
            "its m micro-batches."
        ),
        source=PRELUDE
        + """
def predict_step_seconds(layout):
    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
    b, zero, recompute = layout["micro_batch_size"], layout["zero_stage"], layout["recompute"]
    gpu, n = CLUSTER.gpu, CLUSTER.n_gpus
    m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)
    per_token = gu.flops.hardware_flops_per_token(
        LLAMA.params, layers=LLAMA.layers, d_model=LLAMA.hidden, seq_len=LLAMA.seq_len,
        recompute=recompute, attention="flash",
    )
    compute = per_token * BATCH_TOKENS / n / (0.5 * gu.flops.peak_flops(gpu))
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
    per_node = max(1, min(dp, 8 // (tp * pp)))
    dp_time = 0.0
    if dp > 1:
        where = dict(gpu=gpu, gpus_per_node=per_node)
        if zero == 2:   # reduce-scatter the gradients, then all-gather the updated weights
            dp_time = (gu.collectives.estimate_time("reduce_scatter", grads, dp, **where)
                       + gu.collectives.estimate_time("all_gather", grads, dp, **where))
        else:
            dp_time = gu.collectives.estimate_time("all_reduce", grads, dp, **where)
    return (compute + tp_time) / (1 - bubble) + pp_time + dp_time
""",
        hints=("ZeRO-2",),
    ),
    # ---------------- planner_defend ----------------
    Blind(
        name="defend_tp8_pp4_v4_reasoned",
        exercise_id="planner_defend",
        half="held2",
        correct=True,
        source=PRELUDE
        + TP8_PP4
        + MEM
        + STEP
        + RANKED
        + """
def defend():
    mine = my_layout()
    mem = predict_memory_gib(mine)
    t = predict_step_seconds(mine)
    # my TP all-reduces: 4 per layer x 20 layers x 32 micro-batches over 8 GPUs (NVLink),
    # about 1.5 s; my network traffic: pipeline sends across nodes and 1/8 of a 4.4 GB
    # all-reduce over 8 replicas, a few tenths of a second. Against TP 4 x PP 4 (v = 4),
    # the bubble is smaller here (32 micro-batches) but TP costs ~0.9 s more.
    return {
        "layout": mine,
        "memory_gib": mem,
        "step_seconds": t,
        "bound": "NVLink",
        "vs_best": t / ranked[0].step_time,
        "main_difference": "tensor-parallel",
    }
""",
    ),
    Blind(
        name="defend_vs_best_inverted",
        exercise_id="planner_defend",
        half="held2",
        correct=False,
        cause=(
            "vs_best is the best step time divided by the learner's (0.89), the inverse of the "
            "ratio asked for, the learner's step over ranked[0].step_time (1.13)."
        ),
        source=PRELUDE
        + TP4_PP8
        + MEM
        + STEP
        + RANKED
        + """
def defend():
    layout = my_layout()
    step = predict_step_seconds(layout)
    return dict(
        layout=layout,
        memory_gib=predict_memory_gib(layout),
        step_seconds=step,
        bound="NVLink",
        vs_best=ranked[0].step_time / step,   # how close to the best I get
        main_difference="bubble",   # 1F1B, no interleaving: (p - 1)/(m + p - 1) = 7/39
    )
""",
        hints=("not the other way round",),
    ),
    Blind(
        name="defend_bound_network",
        exercise_id="planner_defend",
        half="held2",
        correct=False,
        cause=(
            'bound is "network" because the gradients\' all-reduce crosses nodes, but the link '
            "that costs the most exposed seconds is NVLink: TP 8's all-reduces take about 1.5 s "
            "against the data-parallel all-reduce's 0.7 s."
        ),
        source=PRELUDE
        + TP8
        + MEM
        + STEP
        + RANKED
        + """
def defend():
    layout = my_layout()
    step = predict_step_seconds(layout)
    # NVLink is 450 GB/s, the NIC only 50 GB/s: the network is the bottleneck
    return dict(
        layout=layout,
        memory_gib=predict_memory_gib(layout),
        step_seconds=step,
        bound="network",
        vs_best=step / ranked[0].step_time,
        main_difference="tensor-parallel",
    )
""",
        hints=("NVLink",),
    ),
    Blind(
        name="defend_calls_evaluate",
        exercise_id="planner_defend",
        half="held2",
        correct=False,
        cause=(
            "defend() calls P.evaluate to read the bound and the step time, which the lab forbids: "
            "step_seconds and bound must come from the learner's own predictions and reasoning."
        ),
        source=PRELUDE
        + TP8
        + MEM
        + STEP
        + RANKED
        + """
def defend():
    layout = my_layout()
    planned = P.evaluate(LLAMA, CLUSTER, BATCH_TOKENS, **layout)
    step = predict_step_seconds(layout)
    return dict(
        layout=layout,
        memory_gib=predict_memory_gib(layout),
        step_seconds=step,
        bound=planned.bound,
        vs_best=step / ranked[0].step_time,
        main_difference="tensor-parallel",
    )
""",
        hints=("gu.parallelism.evaluate",),
    ),
]
