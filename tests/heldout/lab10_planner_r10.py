"""Blind held-out round lab10_planner_r10 (half "held2"), lab 10's planner part (10.1-10.4).

Written by a blind helper session on 2026-11-29 (about 11:52-12:05 UTC). Read: the markdown and
code cells of solutions/10_model_parallel_lab.ipynb (all of them, the planner part 10.1-10.4
closely); gu.parallelism's Layout class, evaluate's signature and its interleave handling, the
docstrings and bodies of gu.memory.model_state_bytes / activation_bytes_per_layer,
gu.flops.hardware_flops_per_token / peak_flops, gu.collectives.estimate_time and the
signatures of gu.pipeline.one_f_one_b / interleaved / in_flight; the earlier rounds' causes
(/tmp/blind/causes_lab10_planner.txt), tests/heldout/__init__.py, and the docstring, PRELUDE /
RANKED / MEM / STEP / TP8 snippets and first two entries of lab10_planner_r9.py for the format
(MEM, STEP and RANKED here are the solution's own 10.2 / 10.3 / 10.4 code, copied from the
solution notebook). Never opened gpu_utils/exercises/, tests/test_*.py, report.py nor any FAQ,
never ran a check cell nor the checker.

Verification (scratch /tmp/lab10_planner_r10/verify.py, run from tests/ with
GPU_COURSE_MODE=simulator ../.venv/bin/python; output in verify.out there): every source is
loaded with heldout.submitted() and called as the check cell would.
* Reference: the solution's predict_memory_gib and predict_step_seconds, checked against
  P.evaluate (memory_per_gpu / 2**30 equal to 0.001 GiB on all 23 layouts; step 0.2-1.7%
  under the planner's on the ZeRO-0/1 layouts, 4.2% and 7.5% under on the two ZeRO-2 ones,
  and far from the planner's FSDP figures for ZeRO-3, which the lab leaves out of 10.3).
  Layouts (23): TP 8 with ZeRO 0, 1, 2; DP 256 ZeRO-3 full; TP 4 ZeRO-3; TP 4 x PP 4 with
  v = 1 (b = 4, m = 4 = p), 2, 4, 10 and full recomputation; TP 4 x PP 2 v = 2; TP 8 x PP 4
  b = 4, b = 8 (m = 4 = p); TP 4 x PP 16 v = 5; TP 4 x PP 8 1F1B; TP 8 x PP 2 ZeRO-2, v = 4
  (b = 1 and 2); TP 8 x PP 16 v = 5; TP 8 b = 2 selective; TP 8 b = 8 full; TP 8 x PP 4
  b = 2 v = 2; TP 2 x PP 8 full.
* planner_layout_fits: the returned dict is scored with P.evaluate (scratch only) and
  keeps_the_rules, step / ranked[0].step_time (best: DP 16 x TP 4 x PP 4, v = 4, 9.71 s).
  Right: TP 4 x PP 4 v = 10 (62.6 GiB, 0.988x: faster than ranked[0], v = 10 is outside the
  planner's list but keeps every rule, m = 16 a multiple of p = 4, 2 layers per chunk);
  TP 8 x PP 2 v = 4 with keyword defaults (42.0 GiB, 1.058x; it prints a line). Wrong:
  layout_dict_not_function (submit="my_layout") is a dict, calling it raises TypeError;
  layout_hf_attribute_name raises AttributeError ('Model' object has no attribute
  'num_hidden_layers').
* planner_memory_prediction: compared with the reference on the 23 layouts. memory_by_hand_bytes
  equals it to 1e-12 relative everywhere. memory_attribute_access raises AttributeError on the
  first layout; memory_returns_bytes is 2**30 times too large everywhere;
  memory_interleave_p_v_swapped is exact for v = 1, pp = 1 and v = p = 4, and off on v != p:
  -13.4% (TP 4 x PP 4 v = 2), -10.1% (PP 16 v = 5), -15.1% (TP 8 x PP 4 b = 2 v = 2), +9.6%
  (PP 4 v = 10), +11.9% (TP 8 x PP 2 v = 4); memory_states_split_by_virtual_stages is exact
  for every v = 1 layout and -8.5% to -65% on every interleaved one (-21.8% for the best,
  -65% with full recomputation).
* planner_step_time: compared with the reference on the same layouts. step_per_gpu_share
  (a replica's tokens over tp x pp GPUs, TP group placed with gpus_per_node=tp, the bubble as
  busy x (v m + p - 1)/(v m)) equals it to 1e-15. step_sequences_not_tokens is 65-95% short
  everywhere; step_no_data_parallel_term is -0.2% to -7.2% on ZeRO-0/1 layouts (-6.7% for
  TP 8) and -24.3% / -21.6% on the ZeRO-2 ones; step_returns_breakdown_dict returns a dict;
  step_activation_without_b is exact for every b = 1 layout, -4.9% to -7.1% for b = 2 and
  TP 4 b = 4, and -10.5% (TP 8 x PP 4 b = 4), -12.2% (b = 8), -12.9% (TP 8 b = 8 full), so it
  is beyond the lab's 10% only with b >= 4 and TP 8: a hard case, possibly a pass.
* planner_defend: the dict compared with the planner's figures for the same layout and the
  step_parts differences against ranked[0] (scratch P.evaluate). defend_tp4_pp4_v10_none:
  memory 62.56 GiB (planner 62.56), step 9.545 s (planner 9.596), vs_best 0.983 (planner
  0.988), bound NVLink (planner NVLink; exposed NVLink 0.60 s, network 0.57 s), within 2% so
  "none". defend_subscripts_planner_layout raises TypeError. defend_tp4_pp8_1f1b_says_tp:
  everything right (51.3 GiB, 10.97 s, 1.129 against the planner's 1.134, NVLink) but
  main_difference: planner's term differences are bubble +1.52 s, tensor-parallel 0.00,
  data-parallel -0.18. defend_full_recompute_says_tp: 22.5 GiB, 12.78 s, vs_best 1.316
  (planner 1.323), NVLink right; differences compute +2.69 s, tensor-parallel +0.30 s,
  bubble +0.14 s.
* Dropped: a defend whose best was the fastest of all P.plan's layouts, fitting or not (the
  pure DP 256 ZeRO-1, 9.0 s): vs_best 1.14 against the planner's 1.076, inside the 12% the
  lab allows, so not a wrong answer.
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

# the learner's 10.2 answer, as the solution writes it (used by the 10.4 answers)
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

# the learner's 10.3 answer, as the solution writes it (used by the 10.4 answers)
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

ANSWERS = [
    # ---------------- planner_layout_fits ----------------
    Blind(
        name="layout_tp4_pp4_v10",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=True,
        source=PRELUDE
        + """
def my_layout():
    # 16 GPUs per replica (TP 4 inside a node, 4 stages of 20 layers), 16 replicas.
    # Chunks of 2 layers: 10 virtual stages per GPU shrink the bubble to 3/163.
    tp, pp, v = 4, 4, 10
    dp = CLUSTER.n_gpus // (tp * pp)
    m = (BATCH_TOKENS // LLAMA.seq_len) // dp       # 16 micro-batches of one sequence
    assert m % pp == 0 and (LLAMA.layers // pp) % v == 0
    return {
        "dp": dp,
        "tp": tp,
        "pp": pp,
        "zero_stage": 1,
        "micro_batch_size": 1,
        "recompute": "none",
        "interleave": v,
    }
""",
    ),
    Blind(
        name="layout_tp8_pp2_v4_keywords",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=True,
        source=PRELUDE
        + """
def my_layout(tp=8, pp=2, v=4):
    # defaults only: the check calls my_layout() with no arguments
    sequences = BATCH_TOKENS // LLAMA.seq_len
    dp = CLUSTER.n_gpus // tp // pp
    layout = dict(dp=dp, tp=tp, pp=pp, zero_stage=1, micro_batch_size=1,
                  recompute="none", interleave=v)
    print(f"{sequences // dp} micro-batches per replica, "
          f"{LLAMA.layers // pp // v} layers per chunk")
    return layout
""",
    ),
    Blind(
        name="layout_dict_not_function",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=False,
        submit="my_layout",
        cause=(
            "my_layout must be a function that returns the layout (the check and the ranking "
            "cell call my_layout()); it binds the dict itself to the name my_layout, so calling "
            "it raises TypeError: 'dict' object is not callable."
        ),
        source=PRELUDE
        + """
# TP 8 fills a node, ZeRO-1 shards the optimizer states over the 32 replicas
my_layout = {
    "dp": 32,
    "tp": 8,
    "pp": 1,
    "zero_stage": 1,
    "micro_batch_size": 1,
    "recompute": "none",
    "interleave": 1,
}
""",
    ),
    Blind(
        name="layout_hf_attribute_name",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=False,
        cause=(
            "The model's layer count is LLAMA.layers; it reads LLAMA.num_hidden_layers "
            "(Hugging Face's config name), which P.Model does not have, so my_layout() raises "
            "AttributeError before returning its (otherwise fine) TP 4 x PP 4, v = 4 layout."
        ),
        source=PRELUDE
        + """
def my_layout():
    tp, pp, v = 4, 4, 4
    stage_layers = LLAMA.num_hidden_layers // pp
    assert stage_layers % v == 0, "chunks must hold whole layers"
    dp = CLUSTER.n_gpus // (tp * pp)
    return dict(dp=dp, tp=tp, pp=pp, zero_stage=1, micro_batch_size=1,
                recompute="none", interleave=v)
""",
        hints=("`layers`",),
    ),
    # ---------------- planner_memory_prediction ----------------
    Blind(
        name="memory_by_hand_bytes",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=True,
        source=PRELUDE
        + """
def predict_memory_gib(layout):
    dp, tp, pp = layout["dp"], layout["tp"], layout["pp"]
    v, b, zero = layout["interleave"], layout["micro_batch_size"], layout["zero_stage"]
    # model states by hand: bf16 weights (2), bf16 grads (2), fp32 Adam (12) bytes/parameter
    n = LLAMA.params / (tp * pp)
    weights = 2 * n / (dp if zero >= 3 else 1)
    grads = 2 * n / (dp if zero >= 2 else 1)
    adam = 12 * n / (dp if zero >= 1 else 1)
    # activations by hand: s b h / t x (32 + 4 a / h) with flash and no dropout,
    # 2 s b h / t with full recomputation (sequence parallelism splits everything over t)
    s, h, a = LLAMA.seq_len, LLAMA.hidden, LLAMA.heads
    sbh_t = s * b * h / tp
    per_layer = 2 * sbh_t if layout["recompute"] == "full" else sbh_t * (32 + 4 * a / h)
    m = (BATCH_TOKENS // LLAMA.seq_len) // (dp * b)
    if pp == 1:
        layers_held = LLAMA.layers              # one micro-batch at a time, every layer
    elif v == 1:
        layers_held = LLAMA.layers // pp * min(pp, m)
    else:
        layers_held = LLAMA.layers / (pp * v) * min(v * m, (v + 1) * pp - 1)
    extra = 4 * LLAMA.layer_params / tp if zero == 3 else 0
    total = weights + grads + adam + per_layer * layers_held + extra
    return total / (1 << 30)
""",
    ),
    Blind(
        name="memory_attribute_access",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=False,
        cause=(
            "A layout is a plain dict, read with layout['dp']; it reads it as an object "
            "(layout.dp, layout.tp, ...), so every call raises AttributeError: 'dict' object "
            "has no attribute 'dp'."
        ),
        source=PRELUDE
        + """
def predict_memory_gib(layout):
    dp, tp, pp, v = layout.dp, layout.tp, layout.pp, layout.interleave
    b, zero = layout.micro_batch_size, layout.zero_stage
    m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)
    states = gu.memory.model_state_bytes(LLAMA.params / (tp * pp), dp=dp, zero_stage=zero)
    per_layer = gu.memory.activation_bytes_per_layer(
        LLAMA.seq_len, b, LLAMA.hidden, LLAMA.heads, tp=tp, sequence_parallel=tp > 1,
        recompute=layout.recompute, dropout_masks=False, attention="flash",
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
        hints=("layout['dp']",),
    ),
    Blind(
        name="memory_returns_bytes",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=False,
        cause=(
            "It never converts the total: it returns bytes (about 6.0e10 for TP 8 with ZeRO-1), "
            "but the function must return GiB, bytes / 2**30 (about 56)."
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
    activations = per_layer * LLAMA.layers / (pp * v) * chunks
    gathered = 2 * 2 * LLAMA.layer_params / tp if zero == 3 else 0.0
    memory = states.total + activations + gathered
    return memory
""",
        hints=("not bytes",),
    ),
    Blind(
        name="memory_interleave_p_v_swapped",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=False,
        cause=(
            "The interleaved first stage holds min(v m, v p + p - 1) chunks; it writes v p + v - 1 "
            "(p and v swapped in the last term), which is right only when v = p (19 chunks for "
            "p = v = 4) and counts too few chunks when v < p (9 instead of 11 for p = 4, v = 2) "
            "and too many when v > p."
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
        # warm-up of the interleaved schedule on the first stage
        chunks = min(v * m, pp * v + v - 1)
    activations = per_layer * LLAMA.layers / (pp * v) * chunks
    gathered = 2 * 2 * LLAMA.layer_params / tp if zero == 3 else 0.0
    return (states.total + activations + gathered) / 2**30
""",
    ),
    Blind(
        name="memory_states_split_by_virtual_stages",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=False,
        cause=(
            "Interleaving does not shrink the parameters a GPU holds: its v chunks of L/(p v) "
            "layers are still L/p layers, 1/(tp x pp) of the model; it divides the model states "
            "by tp x pp x v, so every interleaved layout is short of (v - 1)/v of its states."
        ),
        source=PRELUDE
        + """
def predict_memory_gib(layout):
    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
    b, zero = layout["micro_batch_size"], layout["zero_stage"]
    m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)
    stages = pp * v                       # virtual stages: each holds its own slice of the model
    states = gu.memory.model_state_bytes(LLAMA.params / (tp * stages), dp=dp, zero_stage=zero)
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
    activations = per_layer * LLAMA.layers / stages * chunks
    gathered = 2 * 2 * LLAMA.layer_params / tp if zero == 3 else 0.0
    return (states.total + activations + gathered) / 2**30
""",
        hints=("not divided by v",),
    ),
    # ---------------- planner_step_time ----------------
    Blind(
        name="step_per_gpu_share",
        exercise_id="planner_step_time",
        half="held2",
        correct=True,
        source=PRELUDE
        + """
def predict_step_seconds(layout):
    dp, tp, pp = layout["dp"], layout["tp"], layout["pp"]
    v, b = layout["interleave"], layout["micro_batch_size"]
    zero, recompute = layout["zero_stage"], layout["recompute"]
    gpu = CLUSTER.gpu
    sequences = BATCH_TOKENS // LLAMA.seq_len
    m = sequences // (dp * b)
    # a replica's tokens, its FLOPs split over its tp x pp GPUs
    replica_tokens = BATCH_TOKENS / dp
    flops_per_token = gu.flops.hardware_flops_per_token(
        LLAMA.params, layers=LLAMA.layers, d_model=LLAMA.hidden, seq_len=LLAMA.seq_len,
        recompute=recompute, attention="flash",
    )
    gpu_flops = flops_per_token * replica_tokens / (tp * pp)
    compute = gpu_flops / (0.5 * gu.flops.peak_flops(gpu, "bf16"))
    # tensor parallel: a group of tp GPUs inside one node
    msg = LLAMA.seq_len * b * LLAMA.hidden * 2
    per_layer = 6 if recompute == "full" else 4
    tp_time = 0.0
    if tp > 1:
        one = gu.collectives.estimate_time("all_reduce", msg, tp, gpu=gpu, gpus_per_node=tp)
        tp_time = per_layer * (LLAMA.layers / pp) * m * one
    # busy time stretched by the bubble: busy x (v m + p - 1) / (v m)
    step = (compute + tp_time) * (v * m + pp - 1) / (v * m)
    if pp > 1:
        bandwidth = H100.nvlink_bandwidth if tp * pp <= CLUSTER.gpus_per_node else H100.network_bandwidth
        step += 2 * (v * m + pp - 2) * msg / tp / bandwidth
    if dp > 1:
        grad_bytes = 2 * LLAMA.params / (tp * pp)
        ranks_per_node = max(1, min(dp, CLUSTER.gpus_per_node // (tp * pp)))
        kw = dict(gpu=gpu, gpus_per_node=ranks_per_node)
        if zero == 2:
            step += m * gu.collectives.estimate_time("reduce_scatter", grad_bytes, dp, **kw)
            step += gu.collectives.estimate_time("all_gather", grad_bytes, dp, **kw)
        else:
            step += gu.collectives.estimate_time("all_reduce", grad_bytes, dp, **kw)
    return step
""",
    ),
    Blind(
        name="step_sequences_not_tokens",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        cause=(
            "hardware_flops_per_token gives FLOPs per token, so the batch's compute is that "
            "times the 2**21 tokens; it multiplies by the 256 sequences instead, so the compute "
            "is 8192 times too small and the step is almost all communication."
        ),
        source=PRELUDE
        + """
def predict_step_seconds(layout):
    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
    b, zero, recompute = layout["micro_batch_size"], layout["zero_stage"], layout["recompute"]
    gpu, n = CLUSTER.gpu, CLUSTER.n_gpus
    sequences = BATCH_TOKENS // LLAMA.seq_len
    m = sequences // (dp * b)
    per_token = gu.flops.hardware_flops_per_token(
        LLAMA.params, layers=LLAMA.layers, d_model=LLAMA.hidden, seq_len=LLAMA.seq_len,
        recompute=recompute, attention="flash",
    )
    compute = per_token * sequences / n / (0.5 * gu.flops.peak_flops(gpu))
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
        hints=("2**21 tokens",),
    ),
    Blind(
        name="step_no_data_parallel_term",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        cause=(
            "It leaves out data parallelism's gradient traffic altogether: the ranks must "
            "all-reduce their bf16 gradients once per step (ZeRO-0/1), or reduce-scatter them on "
            "every micro-batch and all-gather once (ZeRO-2), which Megatron does not hide; "
            "about 7% of the step for TP 8 with ZeRO-1, a quarter of it with ZeRO-2."
        ),
        source=PRELUDE
        + """
def predict_step_seconds(layout):
    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
    b, recompute = layout["micro_batch_size"], layout["recompute"]
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
    # gradients: ZeRO shards the optimizer, the gradients are already where they are needed
    return (compute + tp_time) / (1 - bubble) + pp_time
""",
    ),
    Blind(
        name="step_returns_breakdown_dict",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        cause=(
            "predict_step_seconds must return one number, the step's seconds; it returns a dict "
            "of its terms (compute, tensor-parallel, bubble, pipeline, data-parallel) and never "
            "adds them up."
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
        if zero == 2:
            scatter = gu.collectives.estimate_time("reduce_scatter", grads, dp, **where)
            dp_time = m * scatter + gu.collectives.estimate_time("all_gather", grads, dp, **where)
        else:
            dp_time = gu.collectives.estimate_time("all_reduce", grads, dp, **where)
    return {
        "compute": compute,
        "tensor-parallel": tp_time,
        "bubble": (compute + tp_time) * bubble / (1 - bubble),
        "pipeline": pp_time,
        "data-parallel": dp_time,
    }
""",
    ),
    Blind(
        name="step_activation_without_b",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        cause=(
            "A micro-batch's activations are s x b x h values: it sizes the tensor-parallel "
            "all-reduces (and the pipeline sends) for one sequence, 2 s h bytes, so with b > 1 "
            "sequences per micro-batch they are b times too small (right only when b = 1)."
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
    act = 2 * LLAMA.seq_len * LLAMA.hidden          # bf16 activations of a sequence
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
        hints=("micro-batch size b",),
    ),
    # ---------------- planner_defend ----------------
    Blind(
        name="defend_tp4_pp4_v10_none",
        exercise_id="planner_defend",
        half="held2",
        correct=True,
        source=PRELUDE
        + MEM
        + STEP
        + RANKED
        + """
def my_layout():
    return dict(dp=16, tp=4, pp=4, zero_stage=1, micro_batch_size=1, recompute="none",
                interleave=10)


def defend():
    mine = my_layout()
    best = min(ranked, key=lambda x: x.step_time)     # the same entry as ranked[0]
    seconds = predict_step_seconds(mine)
    # The planner's best is this shape with v = 4; chunks of 2 layers (v = 10) cut the bubble
    # from 3/67 to 3/163 and cost a few more sends: as fast (faster, even), so "none".
    # TP 4's all-reduces over NVLink are the largest exposed communication.
    return {
        "layout": mine,
        "memory_gib": predict_memory_gib(mine),
        "step_seconds": seconds,
        "bound": "NVLink",
        "vs_best": seconds / best.step_time,
        "main_difference": "none",
    }
""",
    ),
    Blind(
        name="defend_subscripts_planner_layout",
        exercise_id="planner_defend",
        half="held2",
        correct=False,
        cause=(
            "The planner's entries are P.Layout objects, read as ranked[0].step_time; it "
            "subscripts the best one like its own layout dicts, ranked[0]['step_time'], which "
            "raises TypeError: 'Layout' object is not subscriptable."
        ),
        source=PRELUDE
        + MEM
        + STEP
        + RANKED
        + TP8
        + """

def defend():
    layout = my_layout()
    step = predict_step_seconds(layout)
    best_step = ranked[0]["step_time"]
    return dict(
        layout=layout,
        memory_gib=predict_memory_gib(layout),
        step_seconds=step,
        bound="NVLink",
        vs_best=step / best_step,
        main_difference="tensor-parallel",
    )
""",
        hints=("ranked[0].step_time",),
    ),
    Blind(
        name="defend_tp4_pp8_1f1b_says_tp",
        exercise_id="planner_defend",
        half="held2",
        correct=False,
        cause=(
            "This TP 4 x PP 8 layout has the same TP 4 as the best, so its tensor-parallel "
            "all-reduces cost the same (0.6 s); what costs it most is the plain 1F1B bubble over "
            "8 stages, 7/39 of the step (1.9 s against the best's 0.4 s): main_difference is "
            '"bubble", not "tensor-parallel".'
        ),
        source=PRELUDE
        + MEM
        + STEP
        + RANKED
        + """
def my_layout():
    return dict(dp=8, tp=4, pp=8, zero_stage=1, micro_batch_size=1, recompute="none",
                interleave=1)


def defend():
    layout = my_layout()
    step = predict_step_seconds(layout)
    # tensor parallelism's all-reduces are the communication on the critical path
    return dict(
        layout=layout,
        memory_gib=predict_memory_gib(layout),
        step_seconds=step,
        bound="NVLink",
        vs_best=step / ranked[0].step_time,
        main_difference="tensor-parallel",
    )
""",
    ),
    Blind(
        name="defend_full_recompute_says_tp",
        exercise_id="planner_defend",
        half="held2",
        correct=False,
        cause=(
            "This is the best's TP 4 x PP 4, v = 4 shape with full recomputation: what costs it "
            "most against the best is the repeated forward pass, a third more compute (10.95 s "
            "against 8.26 s, +2.7 s), not the two extra all-reduces per layer (+0.3 s): "
            'main_difference is "compute", not "tensor-parallel".'
        ),
        source=PRELUDE
        + MEM
        + STEP
        + RANKED
        + """
def my_layout():
    # full recomputation: 22 GiB per GPU, lots of memory to spare
    return dict(dp=16, tp=4, pp=4, zero_stage=1, micro_batch_size=1, recompute="full",
                interleave=4)


def defend():
    layout = my_layout()
    step = predict_step_seconds(layout)
    # recomputing the forward repeats its two all-reduces per layer: 6 instead of 4
    return dict(
        layout=layout,
        memory_gib=predict_memory_gib(layout),
        step_seconds=step,
        bound="NVLink",
        vs_best=step / ranked[0].step_time,
        main_difference="tensor-parallel",
    )
""",
    ),
]
