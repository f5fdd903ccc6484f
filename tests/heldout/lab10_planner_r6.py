"""Blind held-out round r6 for lab 10's planner (exercises 10.1 to 10.4), half "held2".

Written 2026-11-29, 02:25-03:10 UTC, by a helper session that never opened the checker
(nothing under gpu_utils/exercises/, no tests/ file but tests/heldout/__init__.py, no other
held-out file) and never ran a check cell.

Read: labs/10_model_parallel_lab.ipynb and solutions/10_model_parallel_lab.ipynb (cells 31-48),
gpu_utils/many_gpus/parallelism.py (evaluate, plan, in_flight_chunks, FSDP), the docstrings and signatures
of gu.memory.model_state_bytes / activation_bytes_per_layer, gu.flops.hardware_flops_per_token /
peak_flops, gu.collectives.estimate_time, gu.pipeline.in_flight / interleaved / one_f_one_b,
and the earlier rounds' causes (/tmp/blind/causes_lab10_planner.txt), whose mistakes are avoided.

How each answer was verified (scratch scripts in /tmp/lab10_planner_r6/, run with
GPU_COURSE_MODE=simulator; every answer run through heldout.submitted()):
* planner_layout_fits: each layout evaluated with P.evaluate (ZeRO-3 without a pipeline with
  **P.FSDP, as the lab's text says such a layout is judged) and the lab's rules; ratio to
  ranked[0].step_time (9.71 s, DP 16 x TP 4 x PP 4, v = 4). Correct: fits, keeps the rules,
  step <= 1.2x the best (v = 5: 0.99x; FSDP DP 64 x TP 4: 0.91x; ZeRO-0 TP 8 x PP 4 v = 4:
  56.6 GiB, 1.05x). Wrong: does not fit (76.0 GiB and 85.8 GiB against 72 GiB usable) or is
  not a dict (P.evaluate cannot even read it).
* planner_memory_prediction: compared with the reference solution's predict_memory_gib (and
  P.evaluate's memory_per_gpu) on 23 layouts: ZeRO 0-3 with and without pipelines (p = 1 to 16), b = 1, 2,
  4 (m < p), v = 1, 2, 4, 5, recompute none/selective/full. Correct answers agree to 1e-6
  relative; each wrong one is off by more than 5% on at least one of those layouts (numbers in
  the verification script's output, summarized in each cause).
* planner_step_time: the 20 ZeRO 0-2 layouts among them, against the reference predict_step_seconds
  (itself within a few % of P.evaluate). Correct: agrees to 1e-6; wrong: off by more than 10%
  (usually far more) on at least one layout; the every-boundary sends mistake shows only on
  16-stage pipelines (12% on TP 8 x PP 16, 64% on TP 4 x PP 16 with v = 5), the selective one
  only on a recompute="selective" layout (33%).
* planner_defend: the returned dict compared with P.evaluate's figures for the chosen layout:
  memory and step within the 5% / 10% tolerances, bound equal to P.evaluate(...).bound, vs_best
  within 12% of the planner's ratio, main_difference the step_parts term with the largest
  excess over ranked[0] (or "none" within 2%). Each wrong answer breaks exactly one of these.
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

# The reference solution's predictions, as a learner who passed 10.2 and 10.3 has them.
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

RANKED = """
def keeps_the_rules(x):
    stage_layers = LLAMA.layers // x.pp
    return x.tp <= 8 and LLAMA.layers % x.pp == 0 and stage_layers % x.interleave == 0


ranked = [x for x in P.plan(LLAMA, CLUSTER, BATCH_TOKENS) if x.fits and keeps_the_rules(x)]
"""


def cell(*parts: str) -> str:
    return "\n".join(p.strip("\n") + "\n" for p in (PRELUDE, *parts))


ANSWERS = [
    # ------------------------------------------------------------------ 10.1 planner_layout_fits
    Blind(
        name="layout_tp4_pp4_five_virtual_stages",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=True,
        source=cell("""
def my_layout():
    # TP 4 inside half a node, 4 stages of 20 layers, 5 virtual stages of 4 layers each
    tp, pp = 4, 4
    dp = CLUSTER.n_gpus // (tp * pp)          # 16
    b = 1
    m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)   # 16 micro-batches, a multiple of p
    assert m % pp == 0 and (LLAMA.layers // pp) % 5 == 0
    return {"dp": dp, "tp": tp, "pp": pp, "zero_stage": 1,
            "micro_batch_size": b, "recompute": "none", "interleave": 5}
"""),
    ),
    Blind(
        name="layout_fsdp_tp4_no_pipeline",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=True,
        source=cell("""
def my_layout():
    # ZeRO-3 without a pipeline is FSDP: its gathers and reduce-scatters overlap the compute.
    # TP 4 halves TP 8's all-reduces; 64 replicas of 4 GPUs, 4 sequences each.
    layout = dict(tp=4, pp=1, zero_stage=3, micro_batch_size=1, recompute="none", interleave=1)
    layout["dp"] = 256 // (layout["tp"] * layout["pp"])
    return layout
"""),
    ),
    Blind(
        name="layout_two_sequences_tp8_no_pipeline",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=False,
        cause=(
            "Without a pipeline the one micro-batch in flight keeps the activations of all 80 "
            "layers, and two sequences per micro-batch double them to 40 GiB: with TP 8's 36 GiB "
            "of model states the GPU needs 76 GiB, just over the 72 GiB usable (b = 1 needs 56)."
        ),
        source=cell("""
def my_layout():
    # TP 8 fills the node; two sequences per micro-batch so that each all-reduce is bigger
    # and there are only 4 micro-batches to accumulate
    return dict(dp=32, tp=8, pp=1, zero_stage=1, micro_batch_size=2,
                recompute="none", interleave=1)
"""),
        hints=("activations take 40 GiB",),
    ),
    Blind(
        name="layout_fsdp_tp2_activations_not_sharded",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=False,
        cause=(
            "FSDP (ZeRO-3) shards the model states over the 128 replicas, but not the "
            "activations: with TP 2 and no pipeline one sequence keeps all 80 layers' "
            "activations split only two ways (1 GiB per layer, 80 GiB; 86 GiB in all), over the "
            "72 GiB usable."
        ),
        source=cell("""
def my_layout():
    # FSDP shards everything over 128 ranks, so a light TP 2 is enough:
    # 70.6e9 x 16 bytes / (2 x 128) = 4.4 GB of model states per GPU
    return dict(dp=128, tp=2, pp=1, zero_stage=3, micro_batch_size=1,
                recompute="none", interleave=1)
"""),
        hints=("activations take 80 GiB",),
    ),
    Blind(
        name="layout_zero0_tp8_pp4_interleaved",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=True,
        source=cell("""
def my_layout():
    # TP 8 x PP 4 leaves 2.2e9 parameters per GPU: 16 bytes each is 35 GB even unsharded,
    # so ZeRO-0 fits; 32 micro-batches per rank, 4 virtual stages of 5 layers for the bubble
    tp, pp, v = 8, 4, 4
    return {"dp": 256 // (tp * pp), "tp": tp, "pp": pp, "zero_stage": 0,
            "micro_batch_size": 1, "recompute": "none", "interleave": v}
"""),
    ),
    Blind(
        name="layout_returned_as_tuple",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=False,
        cause=(
            "my_layout must return a dict with the seven keys dp, tp, pp, zero_stage, "
            "micro_batch_size, recompute and interleave, not a tuple of the values in that order."
        ),
        source=cell("""
def my_layout():
    # (dp, tp, pp, zero_stage, micro_batch_size, recompute, interleave)
    return (32, 8, 1, 1, 1, "none", 1)
"""),
        hints=("Expected a layout, a dict",),
    ),
    # ------------------------------------------------------------ 10.2 planner_memory_prediction
    Blind(
        name="memory_from_pipeline_schedule_and_bytes",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=True,
        source=cell("""
def predict_memory_gib(layout):
    dp, tp, pp = layout["dp"], layout["tp"], layout["pp"]
    v, b, zero = layout["interleave"], layout["micro_batch_size"], layout["zero_stage"]
    s, h, L = LLAMA.seq_len, LLAMA.hidden, LLAMA.layers
    m = (BATCH_TOKENS // s) // (dp * b)
    n = LLAMA.params / (tp * pp)                # parameters on this GPU
    # bf16 weights, bf16 gradients, 12 bytes of fp32 Adam state; ZeRO shards over dp
    weights = 2 * n / (dp if zero >= 3 else 1)
    grads = 2 * n / (dp if zero >= 2 else 1)
    adam = 12 * n / (dp if zero >= 1 else 1)
    # what the first stage holds, read off the schedules themselves
    if pp == 1:
        chunks = 1
    elif v == 1:
        chunks = gu.pipeline.in_flight(gu.pipeline.one_f_one_b(pp, m))[0]
    else:
        chunks = gu.pipeline.in_flight(gu.pipeline.interleaved(pp, m, v))[0]
    per_layer = gu.memory.activation_bytes_per_layer(
        s, b, h, LLAMA.heads, tp=tp, sequence_parallel=tp > 1,
        recompute=layout["recompute"], dropout_masks=False, attention="flash")
    act = chunks * (L // (pp * v)) * per_layer
    extra = 4 * LLAMA.layer_params / tp if zero == 3 else 0
    return (weights + grads + adam + act + extra) / 1024**3
"""),
    ),
    Blind(
        name="memory_one_long_sequence_flash",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=True,
        source=cell("""
def predict_memory_gib(layout):
    d = layout
    m = 256 // (d["dp"] * d["micro_batch_size"])
    pp, v = d["pp"], d["interleave"] if d["pp"] > 1 else 1
    states = gu.memory.model_state_bytes(
        LLAMA.params / d["tp"] / pp, dp=d["dp"], zero_stage=d["zero_stage"]).total
    # flash keeps no s x s scores, so b sequences of s tokens cost what one of b*s tokens does
    one_layer = gu.memory.activation_bytes_per_layer(
        LLAMA.seq_len * d["micro_batch_size"], 1, LLAMA.hidden, LLAMA.heads,
        tp=d["tp"], sequence_parallel=d["tp"] > 1, recompute=d["recompute"],
        dropout_masks=False, attention="flash")
    in_flight = 1 if pp == 1 else min(v * m, v * pp + pp - 1) if v > 1 else min(pp, m)
    layers_per_chunk = LLAMA.layers / pp / v
    gathered = 0 if d["zero_stage"] != 3 else 2 * 2 * LLAMA.layer_params / d["tp"]
    return (states + one_layer * layers_per_chunk * in_flight + gathered) / 2**30
"""),
    ),
    Blind(
        name="memory_interleaved_capped_by_micro_batches",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=False,
        cause=(
            "The interleaved first stage holds min(v m, v p + p - 1) chunks: it caps the count "
            "by m micro-batches instead of by v m chunks, so when m is close to p it counts m "
            "chunks (16 instead of 19 for p = 4, m = 16, v = 4; 8 instead of 19 with b = 2)."
        ),
        source=cell("""
def predict_memory_gib(layout):
    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
    b, zero = layout["micro_batch_size"], layout["zero_stage"]
    m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)
    states = gu.memory.model_state_bytes(LLAMA.params / (tp * pp), dp=dp, zero_stage=zero)
    per_layer = gu.memory.activation_bytes_per_layer(
        LLAMA.seq_len, b, LLAMA.hidden, LLAMA.heads, tp=tp, sequence_parallel=tp > 1,
        recompute=layout["recompute"], dropout_masks=False, attention="flash")
    if pp == 1:
        chunks = 1
    elif v == 1:
        chunks = min(pp, m)
    else:
        # warm-up v p + p - 1 chunks, but never more than there are micro-batches
        chunks = min(m, v * pp + pp - 1)
    activations = per_layer * LLAMA.layers / (pp * v) * chunks
    gathered = 2 * 2 * LLAMA.layer_params / tp if zero == 3 else 0.0
    return (states.total + activations + gathered) / 2**30
"""),
        hints=("min(v m, v p + p - 1)",),
    ),
    Blind(
        name="memory_sums_in_flight_over_all_stages",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=False,
        cause=(
            "A GPU keeps the activations of its own stage only: it adds up the micro-batches in "
            "flight on every stage of the pipeline (p + (p-1) + ... + 1 for 1F1B) instead of "
            "taking the first stage's min(p, m)."
        ),
        source=cell("""
def predict_memory_gib(layout):
    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
    b, zero = layout["micro_batch_size"], layout["zero_stage"]
    m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)
    states = gu.memory.model_state_bytes(LLAMA.params / (tp * pp), dp=dp, zero_stage=zero)
    per_layer = gu.memory.activation_bytes_per_layer(
        LLAMA.seq_len, b, LLAMA.hidden, LLAMA.heads, tp=tp, sequence_parallel=tp > 1,
        recompute=layout["recompute"], dropout_masks=False, attention="flash")
    if pp == 1:
        chunks = 1
    elif v == 1:
        chunks = sum(gu.pipeline.in_flight(gu.pipeline.one_f_one_b(pp, m)))
    else:
        chunks = sum(gu.pipeline.in_flight(gu.pipeline.interleaved(pp, m, v)))
    activations = per_layer * LLAMA.layers / (pp * v) * chunks
    gathered = 2 * 2 * LLAMA.layer_params / tp if zero == 3 else 0.0
    return (states.total + activations + gathered) / 2**30
"""),
        hints=("on every stage added up",),
    ),
    Blind(
        name="memory_fp32_working_weights",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=False,
        cause=(
            "The working weights are bf16, 2 bytes per parameter (the fp32 master copy is "
            "already among the optimizer's 12 bytes): param_bytes=4 counts 18 bytes per "
            "parameter, 2 bytes too many on every unsharded weight."
        ),
        source=cell("""
def predict_memory_gib(layout):
    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
    b, zero = layout["micro_batch_size"], layout["zero_stage"]
    m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)
    # mixed precision: the weights the optimizer updates are fp32
    states = gu.memory.model_state_bytes(
        LLAMA.params / (tp * pp), dp=dp, zero_stage=zero, param_bytes=4)
    per_layer = gu.memory.activation_bytes_per_layer(
        LLAMA.seq_len, b, LLAMA.hidden, LLAMA.heads, tp=tp, sequence_parallel=tp > 1,
        recompute=layout["recompute"], dropout_masks=False, attention="flash")
    if pp == 1:
        chunks = 1
    elif v == 1:
        chunks = min(pp, m)
    else:
        chunks = min(v * m, v * pp + pp - 1)
    activations = per_layer * LLAMA.layers / (pp * v) * chunks
    gathered = 2 * 2 * LLAMA.layer_params / tp if zero == 3 else 0.0
    return (states.total + activations + gathered) / 2**30
"""),
        hints=("bf16 weights x 2",),
    ),
    Blind(
        name="memory_sequence_split_twice",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=False,
        cause=(
            "activation_bytes_per_layer with tp=t and sequence_parallel=True already splits the "
            "activations over t; passing seq_len / t as well divides them by t twice (t^2), so "
            "with TP 8 the activations are 8 times too small."
        ),
        source=cell("""
def predict_memory_gib(layout):
    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
    b, zero = layout["micro_batch_size"], layout["zero_stage"]
    m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)
    states = gu.memory.model_state_bytes(LLAMA.params / (tp * pp), dp=dp, zero_stage=zero)
    # sequence parallelism: each GPU keeps s / t tokens of the sequence
    per_layer = gu.memory.activation_bytes_per_layer(
        LLAMA.seq_len // tp, b, LLAMA.hidden, LLAMA.heads, tp=tp, sequence_parallel=tp > 1,
        recompute=layout["recompute"], dropout_masks=False, attention="flash")
    if pp == 1:
        chunks = 1
    elif v == 1:
        chunks = min(pp, m)
    else:
        chunks = min(v * m, v * pp + pp - 1)
    activations = per_layer * LLAMA.layers / (pp * v) * chunks
    gathered = 2 * 2 * LLAMA.layer_params / tp if zero == 3 else 0.0
    return (states.total + activations + gathered) / 2**30
"""),
        hints=("activations / tp",),
    ),
    # ------------------------------------------------------------------- 10.3 planner_step_time
    Blind(
        name="step_replica_peak_and_split_collectives",
        exercise_id="planner_step_time",
        half="held2",
        correct=True,
        source=cell("""
def predict_step_seconds(layout):
    dp, tp, pp = layout["dp"], layout["tp"], layout["pp"]
    v = layout["interleave"] if pp > 1 else 1
    b, zero, rc = layout["micro_batch_size"], layout["zero_stage"], layout["recompute"]
    s, h, L = LLAMA.seq_len, LLAMA.hidden, LLAMA.layers
    m = (BATCH_TOKENS // s) // (dp * b)
    est = gu.collectives.estimate_time
    # one replica (tp x pp GPUs) processes BATCH_TOKENS / dp tokens at half its peak
    flops = gu.flops.hardware_flops_per_token(
        LLAMA.params, layers=L, d_model=h, seq_len=s, recompute=rc, attention="flash")
    replica_peak = gu.flops.peak_flops("H100-SXM", "bf16", n_gpus=tp * pp)
    compute = flops * (BATCH_TOKENS / dp) / (0.5 * replica_peak)
    # sequence parallelism: each all-reduce is a reduce-scatter plus an all-gather
    x = 2 * s * b * h
    per_pair = est("reduce_scatter", x, tp, gpus_per_node=tp) + est("all_gather", x, tp, gpus_per_node=tp)
    n_pairs = (6 if rc == "full" else 4) * (L // pp) * m
    tp_s = n_pairs * per_pair if tp > 1 else 0.0
    # bubble: (p - 1) / v idle slots against m busy ones
    idle = (pp - 1) / v
    busy_share = m / (m + idle)
    send_bw = H100.network_bandwidth if tp * pp > 8 else H100.nvlink_bandwidth
    pp_s = (v * m + pp - 2) * 2 * (x / tp) / send_bw if pp > 1 else 0.0
    g = 2 * LLAMA.params / (tp * pp)
    k = max(1, min(dp, 8 // (tp * pp)))
    if dp == 1:
        dp_s = 0.0
    elif zero == 2:
        dp_s = m * est("reduce_scatter", g, dp, gpus_per_node=k) + est("all_gather", g, dp, gpus_per_node=k)
    else:  # ZeRO-0/1: one all-reduce per step, i.e. a reduce-scatter then an all-gather
        dp_s = est("reduce_scatter", g, dp, gpus_per_node=k) + est("all_gather", g, dp, gpus_per_node=k)
    return (compute + tp_s) / busy_share + pp_s + dp_s
"""),
    ),
    Blind(
        name="step_micro_batches_precedence",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        cause=(
            "256 // dp * b is (256 // dp) x b: the micro-batches per rank are 256 // (dp x b), "
            "so with b > 1 it counts b^2 times too many, multiplying the tensor-parallel "
            "all-reduces and pipeline sends and shrinking the bubble."
        ),
        source=cell("""
def predict_step_seconds(layout):
    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
    b, zero, recompute = layout["micro_batch_size"], layout["zero_stage"], layout["recompute"]
    gpu, n = CLUSTER.gpu, CLUSTER.n_gpus
    sequences = BATCH_TOKENS // LLAMA.seq_len
    m = sequences // dp * b
    per_token = gu.flops.hardware_flops_per_token(
        LLAMA.params, layers=LLAMA.layers, d_model=LLAMA.hidden, seq_len=LLAMA.seq_len,
        recompute=recompute, attention="flash")
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
"""),
        hints=("m = 256 / (dp x b)",),
    ),
    Blind(
        name="step_selective_counted_as_full",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        cause=(
            "With flash attention selective recomputation has nothing left to recompute and "
            "costs the same as none; it prices it like full recomputation (8N FLOPs per token "
            "and 6 all-reduces per layer), a third more compute."
        ),
        source=cell("""
def predict_step_seconds(layout):
    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
    b, zero = layout["micro_batch_size"], layout["zero_stage"]
    recomputes = layout["recompute"] != "none"   # selective or full: a forward is repeated
    gpu, n = CLUSTER.gpu, CLUSTER.n_gpus
    m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)
    per_token = gu.flops.hardware_flops_per_token(
        LLAMA.params, layers=LLAMA.layers, d_model=LLAMA.hidden, seq_len=LLAMA.seq_len,
        recompute="full" if recomputes else "none", attention="flash")
    compute = per_token * BATCH_TOKENS / n / (0.5 * gu.flops.peak_flops(gpu))
    act = 2 * LLAMA.seq_len * b * LLAMA.hidden
    tp_time = 0.0
    if tp > 1:
        one = gu.collectives.estimate_time("all_reduce", act, tp, gpu=gpu, gpus_per_node=8)
        tp_time = (6 if recomputes else 4) * LLAMA.layers // pp * m * one
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
"""),
        hints=("when only recompute changes",),
    ),
    Blind(
        name="step_tp_allreduce_times_group_size",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        cause=(
            "The t GPUs of a tensor-parallel group run each all-reduce together, at the same "
            "time; estimate_time already gives the time of the whole collective, and "
            "multiplying it by t charges every GPU's part one after another (t times too long)."
        ),
        source=cell("""
def predict_step_seconds(layout):
    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
    b, zero, recompute = layout["micro_batch_size"], layout["zero_stage"], layout["recompute"]
    gpu, n = CLUSTER.gpu, CLUSTER.n_gpus
    m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)
    per_token = gu.flops.hardware_flops_per_token(
        LLAMA.params, layers=LLAMA.layers, d_model=LLAMA.hidden, seq_len=LLAMA.seq_len,
        recompute=recompute, attention="flash")
    compute = per_token * BATCH_TOKENS / n / (0.5 * gu.flops.peak_flops(gpu))
    act = 2 * LLAMA.seq_len * b * LLAMA.hidden
    tp_time = 0.0
    if tp > 1:
        one = gu.collectives.estimate_time("all_reduce", act, tp, gpu=gpu, gpus_per_node=8)
        # every rank of the group contributes its all-reduce
        tp_time = tp * (6 if recompute == "full" else 4) * LLAMA.layers // pp * m * one
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
"""),
        hints=("tensor-parallel all-reduces x tp",),
    ),
    Blind(
        name="step_zero1_reduce_scatter_every_micro_batch",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        cause=(
            "ZeRO-1 shards only the optimizer states: every rank keeps the whole gradient, "
            "accumulates it over the m micro-batches and reduces it once per step; it "
            "reduce-scatters on every micro-batch as ZeRO-2 does (m times the traffic)."
        ),
        source=cell("""
def predict_step_seconds(layout):
    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
    b, zero, recompute = layout["micro_batch_size"], layout["zero_stage"], layout["recompute"]
    gpu, n = CLUSTER.gpu, CLUSTER.n_gpus
    m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)
    per_token = gu.flops.hardware_flops_per_token(
        LLAMA.params, layers=LLAMA.layers, d_model=LLAMA.hidden, seq_len=LLAMA.seq_len,
        recompute=recompute, attention="flash")
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
        if zero >= 1:  # sharded optimizer: each rank only needs its shard of the gradient
            scatter = gu.collectives.estimate_time("reduce_scatter", grads, dp, **where)
            dp_time = m * scatter + gu.collectives.estimate_time("all_gather", grads, dp, **where)
        else:
            dp_time = gu.collectives.estimate_time("all_reduce", grads, dp, **where)
    return (compute + tp_time) / (1 - bubble) + pp_time + dp_time
"""),
        hints=("ZeRO-0/1: one all-reduce per step",),
    ),
    Blind(
        name="step_per_gpu_tokens_and_ratio_bubble",
        exercise_id="planner_step_time",
        half="held2",
        correct=True,
        source=cell("""
def predict_step_seconds(layout):
    g = layout
    tp, pp, dp = g["tp"], g["pp"], g["dp"]
    v = g["interleave"] if pp > 1 else 1
    b = g["micro_batch_size"]
    full = g["recompute"] == "full"
    s, h, L = LLAMA.seq_len, LLAMA.hidden, LLAMA.layers
    seqs_per_rank = BATCH_TOKENS // s // dp
    m = seqs_per_rank // b
    # the tokens one GPU is responsible for: its replica's share, split over tp x pp GPUs
    tokens_per_gpu = seqs_per_rank * s / (tp * pp)
    hw = gu.flops.hardware_flops_per_token(
        LLAMA.params, layers=L, d_model=h, seq_len=s,
        recompute=g["recompute"], attention="flash")
    busy = tokens_per_gpu * hw / (gu.flops.peak_flops(CLUSTER.gpu) / 2)
    msg = 2 * s * b * h                                   # bf16 activations of a micro-batch
    if tp > 1:
        ar = gu.collectives.estimate_time("all_reduce", msg, tp, gpu=CLUSTER.gpu)
        busy += (3 if full else 2) * 2 * (L // pp) * m * ar   # forward + backward all-reduces
    idle_share = (pp - 1) / (v * m + pp - 1)
    step = busy / (1 - idle_share)
    if pp > 1:
        crosses = tp * pp > CLUSTER.gpus_per_node
        bw = H100.network_bandwidth if crosses else H100.nvlink_bandwidth
        step += 2 * (v * m + pp - 2) * (msg / tp) / bw       # both directions
    if dp > 1:
        grad = 2 * LLAMA.params / tp / pp
        on_node = max(1, min(dp, CLUSTER.gpus_per_node // (tp * pp)))
        kw = dict(gpu=CLUSTER.gpu, gpus_per_node=on_node)
        if g["zero_stage"] == 2:
            step += m * gu.collectives.estimate_time("reduce_scatter", grad, dp, **kw)
            step += gu.collectives.estimate_time("all_gather", grad, dp, **kw)
        else:
            step += gu.collectives.estimate_time("all_reduce", grad, dp, **kw)
    return step
"""),
    ),
    Blind(
        name="step_sends_times_every_boundary",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        cause=(
            "The v m + p - 2 sends each way are already the critical path through all p - 1 "
            "stage boundaries (the boundaries send at the same time as the others compute); "
            "multiplying them by p - 1 again charges every boundary one after another, far too "
            "much for deep pipelines (TP 4 x PP 16 with 5 virtual stages: about 7 s instead of "
            "0.46 s, a 1.6x step)."
        ),
        source=cell("""
def predict_step_seconds(layout):
    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
    b, zero, recompute = layout["micro_batch_size"], layout["zero_stage"], layout["recompute"]
    gpu, n = CLUSTER.gpu, CLUSTER.n_gpus
    m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)
    per_token = gu.flops.hardware_flops_per_token(
        LLAMA.params, layers=LLAMA.layers, d_model=LLAMA.hidden, seq_len=LLAMA.seq_len,
        recompute=recompute, attention="flash")
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
        one_boundary = (v * m + pp - 2) * 2 * act / tp / link
        pp_time = (pp - 1) * one_boundary          # every one of the p - 1 boundaries
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
"""),
        hints=("pipeline sends x pp",),
    ),
    # ---------------------------------------------------------------------- 10.4 planner_defend
    Blind(
        name="defend_best_shape_itself",
        exercise_id="planner_defend",
        half="held2",
        correct=True,
        source=cell(
            MEM,
            STEP,
            RANKED,
            """
def my_layout():
    return dict(dp=16, tp=4, pp=4, zero_stage=1, micro_batch_size=1,
                recompute="none", interleave=4)


def defend():
    mine = my_layout()
    seconds = predict_step_seconds(mine)
    # TP 4's all-reduces over NVLink (about 0.6 s) expose more than the pipeline sends and the
    # gradient all-reduce over the network (about 0.4 s together): bound by NVLink.
    # It is the planner's best layout, so there is no difference to name.
    return {
        "layout": mine,
        "memory_gib": predict_memory_gib(mine),
        "step_seconds": seconds,
        "bound": "NVLink",
        "vs_best": seconds / ranked[0].step_time,
        "main_difference": "none",
    }
""",
        ),
    ),
    Blind(
        name="defend_twenty_virtual_stages_network",
        exercise_id="planner_defend",
        half="held2",
        correct=True,
        source=cell(
            MEM,
            STEP,
            RANKED,
            """
def my_layout():
    # the best's shape with one layer per chunk: almost no bubble, many more sends
    return dict(dp=16, tp=4, pp=4, zero_stage=1, micro_batch_size=1,
                recompute="none", interleave=20)


def defend():
    layout = my_layout()
    step = predict_step_seconds(layout)
    # 20 x 16 + 2 = 322 sends each way over the network (16 GPUs per replica span two nodes),
    # about 0.45 s, plus the gradient all-reduce (0.34 s) beat TP 4's 0.6 s over NVLink.
    # The smaller bubble pays for the sends: within 2% of the best.
    return dict(layout=layout, memory_gib=predict_memory_gib(layout), step_seconds=step,
                bound="network", vs_best=step / ranked[0].step_time, main_difference="none")
""",
        ),
    ),
    Blind(
        name="defend_twenty_virtual_stages_bound_nvlink",
        exercise_id="planner_defend",
        half="held2",
        correct=False,
        cause=(
            "With 20 virtual stages its 322 pipeline sends each way cross the network (a TP 4 x "
            "PP 4 replica spans two nodes): 0.45 s plus the gradient all-reduce's 0.34 s exceed "
            "TP 4's 0.6 s over NVLink, so the bound is the network, not NVLink."
        ),
        source=cell(
            MEM,
            STEP,
            RANKED,
            """
def my_layout():
    return dict(dp=16, tp=4, pp=4, zero_stage=1, micro_batch_size=1,
                recompute="none", interleave=20)


def defend():
    layout = my_layout()
    step = predict_step_seconds(layout)
    # same shape as the best, so the same bound: TP 4's all-reduces over NVLink
    return dict(layout=layout, memory_gib=predict_memory_gib(layout), step_seconds=step,
                bound="NVLink", vs_best=step / ranked[0].step_time, main_difference="none")
""",
        ),
        hints=("the planner says network",),
    ),
    Blind(
        name="defend_twenty_virtual_stages_main_pipeline",
        exercise_id="planner_defend",
        half="held2",
        correct=False,
        cause=(
            "Its step is within 2% of the best (1.002x): the 0.36 s its extra pipeline sends "
            'cost are won back by a smaller bubble, so main_difference is "none", not '
            '"pipeline".'
        ),
        source=cell(
            MEM,
            STEP,
            RANKED,
            """
def my_layout():
    return dict(dp=16, tp=4, pp=4, zero_stage=1, micro_batch_size=1,
                recompute="none", interleave=20)


def defend():
    layout = my_layout()
    step = predict_step_seconds(layout)
    # five times the best's virtual stages: five times its pipeline sends
    return dict(layout=layout, memory_gib=predict_memory_gib(layout), step_seconds=step,
                bound="network", vs_best=step / ranked[0].step_time,
                main_difference="pipeline")
""",
        ),
    ),
    Blind(
        name="defend_reference_layout_min_of_ranked",
        exercise_id="planner_defend",
        half="held2",
        correct=True,
        source=cell(
            MEM,
            STEP,
            RANKED,
            """
def my_layout():
    return dict(dp=32, tp=8, pp=1, zero_stage=1, micro_batch_size=1,
                recompute="none", interleave=1)


def defend():
    layout = my_layout()
    mem = predict_memory_gib(layout)
    step = predict_step_seconds(layout)
    fastest = min(x.step_time for x in ranked)   # ranked is sorted, so this is ranked[0]
    # 4 all-reduces x 80 layers x 8 micro-batches over NVLink (~1.5 s) against one gradient
    # all-reduce over the network (~0.7 s): NVLink. The best (TP 4 x PP 4, v = 4) runs a
    # quarter of the layers per GPU at half the group size, so TP is what I pay for.
    out = {}
    out["layout"] = layout
    out["memory_gib"] = mem
    out["step_seconds"] = step
    out["bound"] = "NVLink"
    out["vs_best"] = step / fastest
    out["main_difference"] = "tensor-parallel"
    return out
""",
        ),
    ),
    Blind(
        name="defend_best_is_least_memory",
        exercise_id="planner_defend",
        half="held2",
        correct=False,
        cause=(
            "The best layout is ranked[0], the fastest that fits and keeps the rules (9.7 s); it "
            "divides by the layout that needs the least memory (ZeRO-3 with full recomputation, "
            "34 s per step), so vs_best is 0.30 instead of about 1.08."
        ),
        source=cell(
            MEM,
            STEP,
            RANKED,
            """
def my_layout():
    return dict(dp=32, tp=8, pp=1, zero_stage=1, micro_batch_size=1,
                recompute="none", interleave=1)


def defend():
    layout = my_layout()
    step = predict_step_seconds(layout)
    # the best plan: the one that leaves the most memory free
    best = min(ranked, key=lambda x: x.memory_per_gpu)
    return dict(layout=layout, memory_gib=predict_memory_gib(layout), step_seconds=step,
                bound="NVLink", vs_best=step / best.step_time,
                main_difference="tensor-parallel")
""",
        ),
        hints=("vs_best: yours 0.3",),
    ),
]
