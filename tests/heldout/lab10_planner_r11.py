"""Blind held-out round lab10_planner_r11 (half "held2"), lab 10's planner part (10.1-10.4).

Written by a blind helper session on 2026-11-29 (about 12:08-12:15 UTC). Read: the markdown and
code cells of labs/10_model_parallel_lab.ipynb (sections 9-10, the planner exercises' text) and
solutions/10_model_parallel_lab.ipynb (cells 31-50, the planner part); in gpu_utils/many_gpus:
parallelism.py (Model, Cluster, Layout, _link, _in_flight_chunks, evaluate), the docstrings and
bodies of memory.model_state_bytes / ModelState / activation_bytes_per_layer,
flops.training_flops_per_token / hardware_flops_per_token / peak_flops,
collectives.estimate_time / cluster_time and pipeline.one_f_one_b / interleaved /
bubble_fraction / in_flight; the earlier rounds' causes (/tmp/blind/causes_lab10_planner.txt,
all of them, to avoid their kinds), tests/heldout/__init__.py, and the docstring, snippets and
first two entries of lab10_planner_r10.py for the format (MEM, STEP and RANKED here are the
solution's own 10.2 / 10.3 / 10.4 code, copied from the solution notebook). Never opened
gpu_utils/exercises/, tests/test_*.py, report.py nor any FAQ, never ran a check cell nor the
checker.

Verification (scratch /tmp/lab10_planner_r11/verify.py, run from tests/ with
GPU_COURSE_MODE=simulator ../.venv/bin/python; output in verify.out there): every source is
loaded with heldout.submitted() and called as the check cell would.
* Reference: the solution's predict_memory_gib and predict_step_seconds on 28 layouts (TP 8
  with ZeRO 0/1/2/3; DP 256 ZeRO-3 full; TP 4 ZeRO-3; TP 2 ZeRO-3 full; TP 4 x PP 4 with b = 4
  (m = 4 = p), v = 2, 4, 5, 10, full recomputation, ZeRO-0; TP 4 x PP 2 v = 2; TP 8 x PP 4
  b = 4, 8, 16 (m = 2 < p); TP 4 x PP 16 v = 5; TP 4 x PP 8 1F1B; TP 8 x PP 2 ZeRO-2 v = 4 with
  b = 1, 2; TP 8 x PP 16 v = 5; TP 8 b = 2 selective; TP 8 b = 8 full; TP 8 x PP 4 b = 2 v = 2;
  TP 2 x PP 8 full; DP 256 ZeRO-1). Against P.evaluate (scratch only): memory equal to 0.01 GiB
  on all 28; step 0.1-1.7% under the planner's on ZeRO-0/1, 2.5-7.5% under on ZeRO-2, and far
  from the planner's FSDP figures on ZeRO-3 (which 10.3 leaves out; skipped for step answers).
* planner_layout_fits: the returned object scored with P.evaluate and keeps_the_rules, ratio
  step / ranked[0].step_time (best: DP 16 x TP 4 x PP 4, ZeRO-1, v = 4, 9.71 s, 67.1 GiB).
  Right: TP 4 x PP 4 v = 4 with recompute="selective" (with flash attention selective costs
  nothing: 67.1 GiB, ratio 1.000, keeps the rules); TP 8 x PP 4 v = 4 with ZeRO-0 (56.6 GiB,
  1.052x). Wrong: layout_returns_candidate_list returns a list of two dicts (TP 8 x PP 2 v = 4
  and TP 4 x PP 4 v = 4); layout_trailing_comma_tuple returns a 1-tuple holding the dict.
* planner_memory_prediction: compared with the reference on the 28 layouts.
  memory_schedule_in_flight (chunks from gu.pipeline.in_flight of the real schedule, float() of
  the ModelState, b sequences passed as one b*s-token sequence) equals it exactly on all 28.
  memory_hidden_and_b_swapped raises ValueError ("tp=8 must divide hidden (1)") on 23 of them;
  exact only on the two full-recompute layouts without a raise (DP 256 ZeRO-3, TP 8 b = 8);
  +178% (TP 4 x PP 4 b = 4), +93% (TP 8 x PP 4 b = 8), +47% (b = 16), +300% (DP 256 ZeRO-1).
  memory_rank_batch_as_micro_batch is exact only where m = 1 (DP 256 b = 1, TP 8 b = 8) and
  +47% to +10,000% elsewhere (+250% for TP 8 ZeRO-1, +1063% for the best).
  memory_state_object_added raises TypeError ('ModelState' + 'float') on every layout.
* planner_step_time: compared with the reference on the 24 non-ZeRO-3 layouts (the reference is
  0.1-7.5% under the planner, see above). step_sp_gather_scatter_pairs (all-gather +
  reduce-scatter pairs, bubble as (v m + p - 1)/(v m), ZeRO-0/1 as one reduce-scatter + one
  all-gather) equals it to 2e-16. step_overlap_takes_max: -4.8% to -35% (TP 8 ZeRO-1 -19.7%,
  8.26 s against the planner's 10.45 s, -21%; ZeRO-2 -35%; best -10.5%).
  step_attention_not_split: exact for DP 256 (tp = pp = 1), +69% to +1570% elsewhere (+85% TP 8).
  step_sizes_in_elements: -2.4% to -17% against the reference (TP 8 ZeRO-1 -9.8%, i.e. 9.27 s
  against the planner's 10.45 s, -11.3%; TP 8 ZeRO-2 -17.4%, -23.6% against the planner;
  TP 4 x PP 4 about -5%): beyond the lab's 10% only on TP 8 and ZeRO-2 layouts, a hard case.
  step_seq_len_is_batch_tokens: 25-36 times the reference everywhere.
* planner_defend: the dict compared with P.evaluate for the same layout and its step_parts
  minus ranked[0]'s (scratch only). defend_tp8_best_by_min: 55.98 GiB (planner 55.98), 10.28 s
  (10.45), vs_best 1.058 (planner 1.076), bound NVLink (exposed NVLink 1.48 s, network 0.72 s),
  tensor-parallel (+0.88 s; data-parallel +0.37, bubble -0.42). defend_tp8_pp2_v4: 42.04 GiB
  (42.04), 10.12 s (10.28), vs_best 1.042 (1.058), NVLink (1.48 against 0.39 s),
  tensor-parallel (+0.88 s; bubble -0.26, data-parallel 0.00). defend_best_bound_memory: the
  best's own layout, 67.07 GiB, 9.66 s, vs_best 0.995, "none" all right, but bound "memory"
  where the planner says NVLink (0.60 s against 0.43 s). defend_key_step_time: right values,
  key "step_time" instead of "step_seconds". defend_unpacks_layout_as_keywords raises TypeError
  (predict_memory_gib() got an unexpected keyword argument 'dp').
* Dropped: a layout with recompute="None" (too close to the earlier "not a boolean" cause).
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

# the learner's own 10.2 and 10.3 answers, written as the solution writes them (used in 10.4)
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

TP8 = """
def my_layout():
    return dict(dp=32, tp=8, pp=1, zero_stage=1, micro_batch_size=1, recompute="none", interleave=1)
"""

ANSWERS = [
    # ---------------- planner_layout_fits ----------------
    Blind(
        name="layout_tp4_pp4_v4_selective",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=True,
        source=PRELUDE
        + """
def my_layout():
    # 16 GPUs per replica: TP 4 inside half a node, 4 stages of 20 layers, 4 chunks of 5 layers.
    # Flash attention keeps no s x s scores, so selective recomputation drops nothing more and
    # costs no extra FLOPs; I keep it on as Megatron's recommended setting.
    n_replicas = CLUSTER.n_gpus // (4 * 4)
    layout = {}
    layout["dp"] = n_replicas
    layout["tp"] = 4
    layout["pp"] = 4
    layout["zero_stage"] = 1
    layout["micro_batch_size"] = 1
    layout["recompute"] = "selective"
    layout["interleave"] = 4
    return layout
""",
    ),
    Blind(
        name="layout_tp8_pp4_v4_zero0",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=True,
        source=PRELUDE
        + """
def my_layout():
    # TP 8 x PP 4 spreads the states over 32 GPUs (2.2e9 parameters each, 35 GB at 16 bytes),
    # so even plain data parallelism (no ZeRO) leaves room for 19 chunks of 5 layers.
    tp, pp = 8, 4
    return dict(
        dp=CLUSTER.n_gpus // (tp * pp),
        tp=tp,
        pp=pp,
        zero_stage=0,
        micro_batch_size=1,
        recompute="none",
        interleave=4,
    )
""",
    ),
    Blind(
        name="layout_returns_candidate_list",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=False,
        cause=(
            "my_layout must return one layout, a dict of the seven keys; it returns a list of "
            "the candidate layouts that pass its own filter (TP 8 x PP 2 and TP 4 x PP 4), "
            "never choosing one."
        ),
        source=PRELUDE
        + """
def my_layout():
    candidates = []
    for tp, pp, v in [(8, 1, 1), (8, 2, 4), (4, 4, 4), (2, 8, 1)]:
        dp = CLUSTER.n_gpus // (tp * pp)
        m = BATCH_TOKENS // LLAMA.seq_len // dp
        stage_ok = LLAMA.layers % pp == 0 and (LLAMA.layers // pp) % v == 0
        if pp > 1 and tp >= 4 and stage_ok and m % pp == 0:
            candidates.append(dict(dp=dp, tp=tp, pp=pp, zero_stage=1, micro_batch_size=1,
                                   recompute="none", interleave=v))
    return candidates
""",
    ),
    Blind(
        name="layout_trailing_comma_tuple",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=False,
        cause=(
            "A trailing comma after the returned dict makes my_layout return a one-element "
            "tuple, (dict,), instead of the layout dict itself (its TP 4 x PP 4, v = 4 layout "
            "would be fine)."
        ),
        source=PRELUDE
        + """
def my_layout():
    tp, pp, v = 4, 4, 4
    return dict(
        dp=CLUSTER.n_gpus // (tp * pp),
        tp=tp,
        pp=pp,
        zero_stage=1,
        micro_batch_size=1,
        recompute="none",
        interleave=v,
        hints=('a comma after it',),
    ),
""",
    ),
    # ---------------- planner_memory_prediction ----------------
    Blind(
        name="memory_schedule_in_flight",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=True,
        source=PRELUDE
        + """
def predict_memory_gib(layout):
    d = layout
    t, p, b = d["tp"], d["pp"], d["micro_batch_size"]
    v = d["interleave"] if p > 1 else 1
    sequences = BATCH_TOKENS // LLAMA.seq_len
    m = sequences // (d["dp"] * b)
    # model states of this GPU's 1/(t p) of the parameters, ZeRO over dp
    states = float(gu.memory.model_state_bytes(
        LLAMA.params / t / p, dp=d["dp"], zero_stage=d["zero_stage"]))
    # one layer, one micro-batch: b sequences of s tokens (passed as one b*s-token sequence)
    one_layer = gu.memory.activation_bytes_per_layer(
        LLAMA.seq_len * b, 1, LLAMA.hidden, LLAMA.heads, tp=t, sequence_parallel=(t > 1),
        recompute=d["recompute"], dropout_masks=False, attention="flash")
    # count what the first stage holds by running the schedule itself
    if p == 1:
        chunks = 1
    elif v == 1:
        chunks = gu.pipeline.in_flight(gu.pipeline.one_f_one_b(p, m))[0]
    else:
        chunks = gu.pipeline.in_flight(gu.pipeline.interleaved(p, m, v))[0]
    layers_per_chunk = LLAMA.layers // (p * v)
    zero3 = 4 * LLAMA.layer_params / t if d["zero_stage"] == 3 else 0
    GiB = 1024 ** 3
    return (states + chunks * layers_per_chunk * one_layer + zero3) / GiB
""",
    ),
    Blind(
        name="memory_hidden_and_b_swapped",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=False,
        cause=(
            "activation_bytes_per_layer takes (seq_len, micro_batch, hidden, n_heads): it passes "
            "hidden and b in each other's places, so with tensor parallelism and b = 1 the "
            "function's check that tp divides the hidden size sees 1 and raises ValueError; where "
            "it does not raise, flash attention's softmax statistics (4 a s b bytes) come out as "
            "4 a s h, h/b times too many, and the activations are several times too large (only "
            "full recomputation, 2 s b h, comes out right)."
        ),
        source=PRELUDE
        + """
def predict_memory_gib(layout):
    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
    b, zero = layout["micro_batch_size"], layout["zero_stage"]
    m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)
    states = gu.memory.model_state_bytes(LLAMA.params / (tp * pp), dp=dp, zero_stage=zero)
    per_layer = gu.memory.activation_bytes_per_layer(
        LLAMA.seq_len, LLAMA.hidden, b, LLAMA.heads, tp=tp, sequence_parallel=tp > 1,
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
        hints=("hidden=1, but LLAMA.hidden is 8,192",),
    ),
    Blind(
        name="memory_rank_batch_as_micro_batch",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=False,
        cause=(
            "A micro-batch holds the layout's micro_batch_size b sequences; it passes the rank's "
            "whole share of the batch, 256 / dp sequences, as the micro-batch to "
            "activation_bytes_per_layer, so every layout with more than one micro-batch per "
            "rank is charged m times each micro-batch's activations (8 times for TP 8 with "
            "dp = 32, b = 1); it is right only when m = 1."
        ),
        source=PRELUDE
        + """
def predict_memory_gib(layout):
    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
    b, zero = layout["micro_batch_size"], layout["zero_stage"]
    per_rank = BATCH_TOKENS // LLAMA.seq_len // dp      # sequences each replica trains on
    m = per_rank // b
    states = gu.memory.model_state_bytes(LLAMA.params / (tp * pp), dp=dp, zero_stage=zero)
    per_layer = gu.memory.activation_bytes_per_layer(
        LLAMA.seq_len, per_rank, LLAMA.hidden, LLAMA.heads, tp=tp, sequence_parallel=tp > 1,
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
    ),
    Blind(
        name="memory_state_object_added",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=False,
        cause=(
            "model_state_bytes returns a ModelState (parameters, gradients, optimizer), whose "
            "bytes are its .total; it adds the object itself to the activations' bytes, which "
            "raises TypeError (unsupported operand types for +) on every layout."
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
    return (states + activations + gathered) / 2**30
""",
        hints=("`states.total`",),
    ),
    # ---------------- planner_step_time ----------------
    Blind(
        name="step_sp_gather_scatter_pairs",
        exercise_id="planner_step_time",
        half="held2",
        correct=True,
        source=PRELUDE
        + """
def predict_step_seconds(layout):
    dp, t, p = layout["dp"], layout["tp"], layout["pp"]
    v = layout["interleave"] if p > 1 else 1
    b, zero, rc = layout["micro_batch_size"], layout["zero_stage"], layout["recompute"]
    gpu = CLUSTER.gpu
    m = (BATCH_TOKENS // LLAMA.seq_len) // (dp * b)
    est = gu.collectives.estimate_time

    # compute: this GPU's 1/256 of the batch's hardware FLOPs at half the bf16 dense peak
    flops_per_token = gu.flops.hardware_flops_per_token(
        LLAMA.params, layers=LLAMA.layers, d_model=LLAMA.hidden, seq_len=LLAMA.seq_len,
        recompute=rc, attention="flash")
    busy = flops_per_token * (BATCH_TOKENS / CLUSTER.n_gpus) / (0.5 * H100.peak_flops("bf16"))

    # sequence parallelism: each layer's forward runs 2 all-gathers + 2 reduce-scatters of the
    # s x b x h bf16 activations, the backward the same, full recompute repeats the forward's
    mb_bytes = LLAMA.seq_len * b * LLAMA.hidden * 2
    if t > 1:
        pair = est("all_gather", mb_bytes, t, gpu=gpu) + est("reduce_scatter", mb_bytes, t, gpu=gpu)
        pairs_per_layer = 6 if rc == "full" else 4
        busy += pairs_per_layer * (LLAMA.layers // p) * m * pair

    # bubble, as the busy time stretched by (v m + p - 1) / (v m)
    step = busy * (v * m + p - 1) / (v * m)

    # pipeline sends, each way, of the 1/t sequence-parallel shard
    if p > 1:
        bw = H100.nvlink_bandwidth if t * p <= CLUSTER.gpus_per_node else H100.network_bandwidth
        step += 2 * (v * m + p - 2) * (mb_bytes / t) / bw

    # data parallelism over ranks t*p GPUs apart
    if dp > 1:
        g = 2 * LLAMA.params / (t * p)
        near = max(1, min(dp, CLUSTER.gpus_per_node // (t * p)))
        rs = est("reduce_scatter", g, dp, gpu=gpu, gpus_per_node=near)
        ag = est("all_gather", g, dp, gpu=gpu, gpus_per_node=near)
        # ZeRO-0/1: one all-reduce per step = one reduce-scatter + one all-gather;
        # ZeRO-2: a reduce-scatter per micro-batch, then the all-gather
        step += (m if zero == 2 else 1) * rs + ag
    return step
""",
    ),
    Blind(
        name="step_overlap_takes_max",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        cause=(
            "Under Megatron-LM's defaults nothing hides communication, so the tensor-parallel, "
            "pipeline and data-parallel times add to the stretched compute; it returns the "
            "larger of compute and communication, as if all communication overlapped the "
            "matmuls, which drops about 2.2 s (21%) from TP 8 with ZeRO-1."
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
    # NCCL runs on its own streams, so communication hides behind the matmuls:
    # the step is whichever of the two is longer
    return max(compute / (1 - bubble), tp_time + pp_time + dp_time)
""",
    ),
    Blind(
        name="step_attention_not_split",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        cause=(
            "It passes the GPU's 1/(tp x pp) of the parameters to hardware_flops_per_token but "
            "still all 80 layers at full width, so only the 6N term is shared: the attention "
            "FLOPs of the 8,192-token sequences are charged tp x pp times (8 times for TP 8, "
            "about double the compute); it is right only without tensor and pipeline "
            "parallelism."
        ),
        source=PRELUDE
        + """
def predict_step_seconds(layout):
    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
    b, zero, recompute = layout["micro_batch_size"], layout["zero_stage"], layout["recompute"]
    gpu = CLUSTER.gpu
    m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)
    # FLOPs per token of the parameters this GPU holds, for the tokens of its replica
    local_per_token = gu.flops.hardware_flops_per_token(
        LLAMA.params / (tp * pp), layers=LLAMA.layers, d_model=LLAMA.hidden,
        seq_len=LLAMA.seq_len, recompute=recompute, attention="flash",
    )
    compute = local_per_token * (BATCH_TOKENS / dp) / (0.5 * gu.flops.peak_flops(gpu))
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
    ),
    Blind(
        name="step_sizes_in_elements",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        cause=(
            "estimate_time takes a message's size in bytes; it passes the number of values "
            "(s x b x h activations, N / (tp x pp) gradients) without the 2 bytes of bf16 each, "
            "so every all-reduce, pipeline send and gradient collective takes half its time "
            "(the step 11% under the planner's for TP 8 with ZeRO-1, 24% with ZeRO-2, but only "
            "about 5% for TP 4 x PP 4, where communication is a smaller share)."
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
    act = LLAMA.seq_len * b * LLAMA.hidden          # one micro-batch's activations (s x b x h)
    tp_time = 0.0
    if tp > 1:
        one = gu.collectives.estimate_time("all_reduce", act, tp, gpu=gpu, gpus_per_node=8)
        tp_time = (6 if recompute == "full" else 4) * LLAMA.layers // pp * m * one
    bubble = (pp - 1) / (v * m + pp - 1)
    pp_time = 0.0
    if pp > 1:
        link = H100.network_bandwidth if tp * pp > 8 else H100.nvlink_bandwidth
        pp_time = (v * m + pp - 2) * 2 * act / tp / link
    grads = LLAMA.params / (tp * pp)                 # this GPU's gradients
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
        hints=("not bytes",),
    ),
    Blind(
        name="step_seq_len_is_batch_tokens",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        cause=(
            "Attention's FLOPs per token grow with the sequence length, 8,192 tokens "
            "(LLAMA.seq_len); it passes the step's 2**21 tokens as seq_len to "
            "hardware_flops_per_token, so the attention term is 256 times too large and the "
            "compute many times the planner's."
        ),
        source=PRELUDE
        + """
def predict_step_seconds(layout):
    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
    b, zero, recompute = layout["micro_batch_size"], layout["zero_stage"], layout["recompute"]
    gpu, n = CLUSTER.gpu, CLUSTER.n_gpus
    m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)
    per_token = gu.flops.hardware_flops_per_token(
        LLAMA.params, layers=LLAMA.layers, d_model=LLAMA.hidden, seq_len=BATCH_TOKENS,
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
""",
        hints=("seq_len=2,097,152",),
    ),
    # ---------------- planner_defend ----------------
    Blind(
        name="defend_tp8_best_by_min",
        exercise_id="planner_defend",
        half="held2",
        correct=True,
        source=PRELUDE
        + RANKED
        + TP8
        + MEM
        + STEP
        + """
def defend():
    mine = my_layout()
    best = min(ranked, key=lambda x: x.step_time)      # the same entry as ranked[0]
    my_step = predict_step_seconds(mine)
    answer = {
        "layout": mine,
        "memory_gib": predict_memory_gib(mine),
        "step_seconds": my_step,
        # TP 8's 4 all-reduces per layer and micro-batch run over NVLink (about 1.5 s),
        # more than the gradients' all-reduce over the network (about 0.7 s)
        "bound": "NVLink",
        "vs_best": my_step / best.step_time,
        # the best (TP 4 x PP 4, v = 4) pays half as much tensor-parallel time per GPU
        "main_difference": "tensor-parallel",
    }
    return answer
""",
    ),
    Blind(
        name="defend_tp8_pp2_v4",
        exercise_id="planner_defend",
        half="held2",
        correct=True,
        source=PRELUDE
        + RANKED
        + """
def my_layout():
    return dict(dp=16, tp=8, pp=2, zero_stage=1, micro_batch_size=1, recompute="none",
                interleave=4)
"""
        + MEM
        + STEP
        + """
def defend():
    layout = my_layout()
    step = predict_step_seconds(layout)
    # TP 8's all-reduces over NVLink (about 1.5 s) outweigh what crosses the network (the
    # gradient all-reduce, 0.34 s, and a few pipeline sends). Against the best (TP 4 x PP 4,
    # v = 4) its bubble is smaller (3 more micro-batch slots per stage, 1/65), but its
    # tensor-parallel time is about 0.9 s more.
    return {
        "layout": layout,
        "memory_gib": predict_memory_gib(layout),
        "step_seconds": step,
        "bound": "NVLink",
        "vs_best": step / ranked[0].step_time,
        "main_difference": "tensor-parallel",
    }
""",
    ),
    Blind(
        name="defend_best_bound_memory",
        exercise_id="planner_defend",
        half="held2",
        correct=False,
        cause=(
            'bound is what limits the step\'s time, "compute" or the link with the most '
            "exposed communication (NVLink here: TP 4's all-reduces, 0.6 s, against 0.43 s on "
            'the network); it answers "memory" because the layout fills 67 of the 72 GiB, '
            "but memory decides only whether a layout fits, not how long its step takes."
        ),
        source=PRELUDE
        + RANKED
        + """
def my_layout():
    return dict(dp=16, tp=4, pp=4, zero_stage=1, micro_batch_size=1, recompute="none",
                interleave=4)
"""
        + MEM
        + STEP
        + """
def defend():
    layout = my_layout()
    step = predict_step_seconds(layout)
    memory = predict_memory_gib(layout)
    # 67 of the 72 usable GiB: any larger micro-batch or fewer chunks would not fit,
    # so memory is what holds this layout back
    return dict(
        layout=layout,
        memory_gib=memory,
        step_seconds=step,
        bound="memory",
        vs_best=step / ranked[0].step_time,
        main_difference="none",
    )
""",
    ),
    Blind(
        name="defend_key_step_time",
        exercise_id="planner_defend",
        half="held2",
        correct=False,
        cause=(
            "defend() must return the keys layout, memory_gib, step_seconds, bound, vs_best and "
            'main_difference; it names the predicted step "step_time" (the planner\'s '
            'attribute) instead of "step_seconds", so the dict has no step_seconds.'
        ),
        source=PRELUDE
        + RANKED
        + TP8
        + MEM
        + STEP
        + """
def defend():
    layout = my_layout()
    step_time = predict_step_seconds(layout)
    return dict(
        layout=layout,
        memory_gib=predict_memory_gib(layout),
        step_time=step_time,
        bound="NVLink",
        vs_best=step_time / ranked[0].step_time,
        main_difference="tensor-parallel",
    )
""",
    ),
    Blind(
        name="defend_unpacks_layout_as_keywords",
        exercise_id="planner_defend",
        half="held2",
        correct=False,
        cause=(
            "predict_memory_gib and predict_step_seconds take the layout dict as their one "
            "argument; it calls them with **layout, as keyword arguments dp=..., tp=..., so "
            "each call raises TypeError (unexpected keyword argument 'dp')."
        ),
        source=PRELUDE
        + RANKED
        + TP8
        + MEM
        + STEP
        + """
def defend():
    layout = my_layout()
    memory = predict_memory_gib(**layout)
    step = predict_step_seconds(**layout)
    return dict(
        layout=layout,
        memory_gib=memory,
        step_seconds=step,
        bound="NVLink",
        vs_best=step / ranked[0].step_time,
        main_difference="tensor-parallel",
    )
""",
        hints=("predict_memory_gib(layout)",),
    ),
]
