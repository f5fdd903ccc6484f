"""Blind held-out round lab10_planner_r12 (half "held2"), lab 10's planner part (10.1-10.4).

Written by a blind helper session on 2026-11-29 (about 14:59-15:05 UTC). Read: the markdown and
code cells of labs/10_model_parallel_lab.ipynb (all, the planner part 10.1-10.4 closely) and
cells 31-50 of solutions/10_model_parallel_lab.ipynb; gpu_utils/many_gpus/parallelism.py (module
docstring, Model, Layout, evaluate, in_flight_chunks, plan); the docstrings and bodies of
gu.memory.model_state_bytes / activation_bytes_per_layer, gu.flops.hardware_flops_per_token /
peak_flops, gu.collectives.estimate_time, gu.pipeline.one_f_one_b / interleaved;
tests/heldout/__init__.py and the docstring, PRELUDE / RANKED / MEM / STEP / TP8 snippets and
first two entries of lab10_planner_r10.py for the format (MEM and STEP here are the solution's
own 10.2 / 10.3 code, as there). Never opened gpu_utils/exercises/, tests/test_*.py, report.py,
any FAQ or any list of earlier rounds' causes; never ran a check cell nor the checker.

Verification (scratch /tmp/lab10_planner_r12/verify.py, run from tests/ with
GPU_COURSE_MODE=simulator ../.venv/bin/python; output in verify.out there): every source is
loaded with heldout.submitted() and called as the check cell would.
* Reference: the solution's predict_memory_gib and predict_step_seconds (MEM / STEP), checked
  against P.evaluate on 31 layouts that keep the lab's rules: memory equal to 0.01 GiB on all;
  step 0.1-1.7% under the planner on ZeRO-0/1, 2.0-7.5% under on ZeRO-2 (no latency term).
  Layouts: TP 8 ZeRO 0/1/2/3-full; DP 256 ZeRO-1 and ZeRO-3; TP 4 ZeRO-2/3; TP 2 b=2 ZeRO-0/3;
  TP 4 x PP 4 with v = 1, 2, 4, 10 and full recompute; TP 8 x PP 4 b = 4 (m = 8), b = 8
  (m = 4 = p), v = 4, ZeRO-2; TP 8 x PP 8 b = 16 (m = 4 < p); TP 4 x PP 16 v = 5; TP 8 x PP 2
  ZeRO-2 v = 4 and b = 2; TP 2 x PP 8 full; TP 8 b = 2 selective; TP 1 x PP 8; TP 8 x PP 16
  v = 1 and v = 5; TP 1 x PP 4 (m = 4 = p); TP 4 x PP 8 b = 2 v = 2; TP 8 x PP 8 ZeRO-2 full
  v = 5. (An uneven TP 8 x PP 32 layout, 2.5 layers per stage, was dropped from the list: the
  lab's rules exclude it and the solution's integer L // pp does not model it either.)
* planner_layout_fits: the dict is checked against the lab's rules (product 256, tp <= 8,
  pp | 80, v | 80/pp, whole micro-batches, m % p == 0 when v > 1) and scored with P.evaluate
  (scratch only) against ranked[0] (DP 16 x TP 4 x PP 4, v = 4, 9.71 s).
  layout_tp8_pp4_v4_loop (right): keeps every rule, 35.1 GiB, 10.22 s, 1.052x the best.
  layout_tp16_across_nodes: breaks "TP inside a node" (P.evaluate itself would accept it: fits,
  29.5 GiB, 1.205x). layout_product_512: dp x tp x pp = 512, P.evaluate raises ValueError.
  layout_pp8_v4_uneven_chunks: 10 layers per stage, v = 4 does not divide them (P.evaluate
  accepts it, fits, 0.998x: only the lab's equal-chunk rule rejects it).
* planner_memory_prediction: compared with the reference on the 31 layouts.
  memory_schedule_in_flight (chunks in flight from gu.pipeline.in_flight of the 1F1B or
  interleaved schedule) and memory_states_by_hand (ZeRO's 2/2/12 bytes split by hand): equal to
  the reference everywhere (max relative difference 0). memory_eager_attention_default: +53%
  to +386% on every layout except full recomputation (exact there) and TP 8 b = 2 selective
  (-0.05%, the one where eager + selective equals flash). memory_states_split_by_tp_only: exact
  on pp = 1, +20% (TP 8 x PP 4 b = 8) to +557% (TP 2 x PP 8 full) on every pipelined layout.
  memory_zero3_no_gathered_layers: exact on ZeRO-0/1/2; on ZeRO-3 -0.96% (TP 2 b = 2), -1.8%
  (TP 4), -1.9% (DP 256) and -6.9% (TP 8 ZeRO-3 full recompute): beyond the lab's 5% only on
  a ZeRO-3 layout with small activations, so a HARD case (it passes if the check's ZeRO-3
  layouts all keep their activations). memory_gb_not_gib: +7.37% everywhere.
* planner_step_time: compared with the reference on the 27 ZeRO-0/1/2 layouts.
  step_per_replica_gcd (right): equal to 2e-16 relative everywhere. step_bubble_ignores_
  interleave: exact for v = 1; +3.6% (TP 8 x PP 2 ZeRO-2 v = 4), +6.7% (TP 8 x PP 4 v = 4),
  +7.3%, +8.3% (TP 4 x PP 4 v = 2), +8.8%, +12.9% (TP 4 x PP 4 v = 4, the best), +15.6%
  (v = 10), +17.0% (PP 16 v = 5), +17.5% (TP 4 x PP 8 b = 2 v = 2). step_zero2_single_all_reduce:
  exact on ZeRO-0/1; -9.7% (TP 4 ZeRO-2; -16% from the planner), -13.4%, -18.3%, -18.9%
  (TP 8 ZeRO-2), -19.7% on the other ZeRO-2 layouts. step_tp_all_layers_per_gpu: exact on
  pp = 1; +10.8% (TP 8 x PP 2 ZeRO-2 v = 4) to +207% (TP 8 x PP 16) on every pipelined layout.
* planner_defend: the dict compared with P.evaluate for the same layout (scratch) and the
  step_parts differences against ranked[0]. defend_tp8_pp4_v4_own_terms (right): memory 35.07
  GiB (planner 35.07), step 10.06 s (planner 10.22), vs_best 1.036 (planner 1.052), bound
  NVLink (planner NVLink: exposed NVLink 1.48 s, network 0.25 s), main_difference
  tensor-parallel (differences: tensor-parallel +0.876 s, bubble -0.187, data-parallel -0.184).
  defend_vs_best_inverted (DP 16 x TP 8 x PP 2): memory, step, bound, main_difference right
  (tensor-parallel +0.876 s, bubble +0.193 s) but vs_best 0.922 against the planner's 1.102
  (-16.3%, outside 12%). defend_says_bubble (TP 8): all right but main_difference "bubble":
  its bubble term is -0.415 s against the best, tensor-parallel +0.876 s. defend_bound_compute
  (TP 8): all right but bound "compute" where the planner says NVLink (1.48 s exposed, 14%).
Nothing raised except where stated (layout_product_512 only under P.evaluate; the answer itself
returns its dict).
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
        name="layout_tp8_pp4_v4_loop",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=True,
        source=PRELUDE
        + """
def my_layout():
    # TP 8 fills a node; 4 stages of 20 layers, 4 chunks of 5 layers each
    tp, pp, v, b = 8, 4, 4, 1
    dp = CLUSTER.n_gpus // (tp * pp)
    sequences = BATCH_TOKENS // LLAMA.seq_len
    m = sequences // (dp * b)
    for rule, ok in [("tp in a node", tp <= CLUSTER.gpus_per_node),
                     ("even stages", LLAMA.layers % pp == 0),
                     ("even chunks", (LLAMA.layers // pp) % v == 0),
                     ("m multiple of p", m % pp == 0)]:
        assert ok, rule
    layout = {}
    layout["dp"], layout["tp"], layout["pp"] = dp, tp, pp
    layout["zero_stage"] = 1
    layout["micro_batch_size"] = b
    layout["recompute"] = "none"
    layout["interleave"] = v
    return layout
""",
    ),
    Blind(
        name="layout_tp16_across_nodes",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=False,
        cause="tp=16 spans two nodes: the lab's rule keeps tensor parallelism inside one 8-GPU node.",
        source=PRELUDE
        + """
def my_layout():
    # split every layer over 16 GPUs so that the weights and activations are small, no pipeline
    return dict(dp=16, tp=16, pp=1, zero_stage=1, micro_batch_size=1, recompute="none", interleave=1)
""",
        hints=("spans 2 nodes",),
    ),
    Blind(
        name="layout_product_512",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=False,
        cause="dp x tp x pp = 32 x 8 x 2 = 512, not the cluster's 256 GPUs: dp was not reduced when pp=2 was added.",
        source=PRELUDE
        + """
def my_layout():
    # TP 8 per node, 32 replicas, and 2 pipeline stages to halve the model states per GPU
    return {"dp": 32, "tp": 8, "pp": 2, "zero_stage": 1, "micro_batch_size": 1,
            "recompute": "none", "interleave": 1}
""",
        hints=("dp x tp x pp = 512",),
    ),
    Blind(
        name="layout_pp8_v4_uneven_chunks",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=False,
        cause="pp=8 gives 10 layers per stage, which 4 virtual stages cannot split into equal chunks (interleave must divide the layers per stage).",
        source=PRELUDE
        + """
def my_layout():
    tp, pp = 4, 8
    dp = 256 // (tp * pp)          # 8 replicas, m = 32 micro-batches: a multiple of p
    return dict(dp=dp, tp=tp, pp=pp, zero_stage=1, micro_batch_size=1,
                recompute="none", interleave=4)
""",
        hints=("does not divide",),
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
    # micro-batches (chunks) in flight on stage 0, read off the schedule itself
    tp, pp, dp = layout["tp"], layout["pp"], layout["dp"]
    v = layout["interleave"]
    b = layout["micro_batch_size"]
    m = (BATCH_TOKENS // LLAMA.seq_len) // (dp * b)
    if pp == 1:
        held, layers_per_chunk = 1, LLAMA.layers
    elif v == 1:
        held = gu.pipeline.in_flight(gu.pipeline.one_f_one_b(pp, m))[0]
        layers_per_chunk = LLAMA.layers // pp
    else:
        held = gu.pipeline.in_flight(gu.pipeline.interleaved(pp, m, v))[0]
        layers_per_chunk = LLAMA.layers // (pp * v)
    one_layer = gu.memory.activation_bytes_per_layer(
        seq_len=LLAMA.seq_len, micro_batch=b, hidden=LLAMA.hidden, n_heads=LLAMA.heads,
        tp=tp, sequence_parallel=(tp > 1), recompute=layout["recompute"],
        attention="flash", dropout_masks=False,
    )
    states = gu.memory.model_state_bytes(LLAMA.params / tp / pp, dp=dp,
                                         zero_stage=layout["zero_stage"])
    total = states.parameters + states.gradients + states.optimizer
    total += one_layer * layers_per_chunk * held
    if layout["zero_stage"] == 3:
        total += 4 * LLAMA.layer_params / tp     # two gathered bf16 layers
    return total / 1024**3
""",
    ),
    Blind(
        name="memory_states_by_hand",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=True,
        source=PRELUDE
        + """
GIB = 2**30


def zero_states(psi, dp, stage):
    # 2 bytes bf16 weights, 2 bytes bf16 grads, 12 bytes fp32 master + Adam moments
    weights = 2 * psi / (dp if stage >= 3 else 1)
    grads = 2 * psi / (dp if stage >= 2 else 1)
    optim = 12 * psi / (dp if stage >= 1 else 1)
    return weights + grads + optim


def predict_memory_gib(layout):
    d = dict(layout)
    dp, tp, pp, v, b = d["dp"], d["tp"], d["pp"], d["interleave"], d["micro_batch_size"]
    m = 256 // (dp * b)
    psi = LLAMA.params / (tp * pp)
    mem = zero_states(psi, dp, d["zero_stage"])
    act = gu.memory.activation_bytes_per_layer(
        LLAMA.seq_len, b, LLAMA.hidden, LLAMA.heads, tp=tp,
        sequence_parallel=tp > 1, recompute=d["recompute"],
        dropout_masks=False, attention="flash",
    )
    if pp > 1 and v > 1:
        in_flight = min(v * m, v * pp + pp - 1) / v     # in units of a whole stage
    elif pp > 1:
        in_flight = min(pp, m)
    else:
        in_flight = 1
    mem += act * (LLAMA.layers // pp) * in_flight
    if d["zero_stage"] == 3:
        mem += 2 * 2 * LLAMA.layer_params / tp
    return mem / GIB
""",
    ),
    Blind(
        name="memory_eager_attention_default",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=False,
        cause='activation_bytes_per_layer is called without attention="flash", so its eager default counts the s x s attention scores that the job\'s fused attention never stores (activations about 5x too large, except with full recomputation).',
        source=PRELUDE
        + """
def predict_memory_gib(layout):
    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
    b, zero = layout["micro_batch_size"], layout["zero_stage"]
    m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)
    states = gu.memory.model_state_bytes(LLAMA.params / (tp * pp), dp=dp, zero_stage=zero)
    per_layer = gu.memory.activation_bytes_per_layer(
        LLAMA.seq_len, b, LLAMA.hidden, LLAMA.heads, tp=tp,
        sequence_parallel=tp > 1, recompute=layout["recompute"], dropout_masks=False,
    )
    if pp == 1:
        chunks = 1
    elif v == 1:
        chunks = min(pp, m)
    else:
        chunks = min(v * m, v * pp + pp - 1)
    activations = per_layer * LLAMA.layers / (pp * v) * chunks
    gathered = 4 * LLAMA.layer_params / tp if zero == 3 else 0
    return (states.total + activations + gathered) / 2**30
""",
        hints=("flash",),
    ),
    Blind(
        name="memory_states_split_by_tp_only",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=False,
        cause="the model states are computed for LLAMA.params / tp, forgetting that the pipeline also splits the parameters over its pp stages (too large by pp on every pipelined layout).",
        source=PRELUDE
        + """
def predict_memory_gib(layout):
    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
    b, zero = layout["micro_batch_size"], layout["zero_stage"]
    m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)
    # each GPU holds 1/tp of every weight matrix
    states = gu.memory.model_state_bytes(LLAMA.params / tp, dp=dp, zero_stage=zero)
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
        hints=("x pp",),
    ),
    Blind(
        name="memory_zero3_no_gathered_layers",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=False,
        cause="with ZeRO-3 it leaves out the two gathered bf16 layers (2 x 2 x LLAMA.layer_params / t bytes) that the lab says the planner counts; right on every ZeRO-0/1/2 layout.",
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
    return (states.total + activations) / 2**30
""",
        hints=("gathered",),
    ),
    Blind(
        name="memory_gb_not_gib",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=False,
        cause="it divides the bytes by 1e9 (GB) instead of 2**30 (GiB), so every figure is 7.4% too large.",
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
    return (states.total + activations + gathered) / 1e9
""",
        hints=("1e9",),
    ),
    # ---------------- planner_step_time ----------------
    Blind(
        name="step_per_replica_gcd",
        exercise_id="planner_step_time",
        half="held2",
        correct=True,
        source=PRELUDE
        + """
import math

MFU = 0.5


def predict_step_seconds(layout):
    dp, tp, pp = layout["dp"], layout["tp"], layout["pp"]
    v, b = layout["interleave"], layout["micro_batch_size"]
    rec, zero = layout["recompute"], layout["zero_stage"]
    gpu = CLUSTER.gpu
    m = BATCH_TOKENS // (LLAMA.seq_len * b * dp)

    # compute: one replica's tokens over its tp x pp GPUs
    hw = gu.flops.hardware_flops_per_token(LLAMA.params, layers=LLAMA.layers,
                                           d_model=LLAMA.hidden, seq_len=LLAMA.seq_len,
                                           recompute=rec, attention="flash")
    t_compute = hw * (BATCH_TOKENS / dp) / (tp * pp) / (MFU * gu.flops.peak_flops(gpu))

    # tensor parallel: 4 (or 6) all-reduces per layer of this stage, per micro-batch
    x_bytes = 2 * LLAMA.seq_len * b * LLAMA.hidden
    t_tp = 0.0
    if tp > 1:
        per_call = gu.collectives.estimate_time("all_reduce", x_bytes, tp, gpu=gpu,
                                                gpus_per_node=tp)
        t_tp = per_call * (6 if rec == "full" else 4) * (LLAMA.layers // pp) * m

    # pipeline: bubble and sends of x / tp (sequence parallel) both ways
    t_pp, frac = 0.0, 0.0
    if pp > 1:
        frac = (pp - 1) / (v * m + pp - 1)
        bw = H100.nvlink_bandwidth if tp * pp <= CLUSTER.gpus_per_node else H100.network_bandwidth
        t_pp = 2 * (v * m + pp - 2) * (x_bytes / tp) / bw

    # data parallel: replicas tp*pp GPUs apart
    t_dp = 0.0
    if dp > 1:
        grads = 2 * LLAMA.params / (tp * pp)
        stride = tp * pp
        same_node = math.gcd(dp, CLUSTER.gpus_per_node // stride) if stride <= 8 else 1
        kw = dict(gpu=gpu, gpus_per_node=same_node)
        if zero == 2:
            t_dp = (m * gu.collectives.estimate_time("reduce_scatter", grads, dp, **kw)
                    + gu.collectives.estimate_time("all_gather", grads, dp, **kw))
        else:
            t_dp = gu.collectives.estimate_time("all_reduce", grads, dp, **kw)

    busy = t_compute + t_tp
    return busy + busy * frac / (1 - frac) + t_pp + t_dp
""",
    ),
    Blind(
        name="step_bubble_ignores_interleave",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        cause="the bubble is (p - 1)/(m + p - 1), without the v of (p - 1)/(v m + p - 1), so interleaved layouts keep the un-interleaved bubble (right when v = 1).",
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
    bubble = (pp - 1) / (m + pp - 1)   # GPipe / 1F1B bubble
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
        name="step_zero2_single_all_reduce",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        cause="ZeRO-2 is charged one gradient all-reduce per step like ZeRO-0/1, instead of a reduce-scatter on every micro-batch (m of them) plus one all-gather; right on ZeRO-0/1 layouts.",
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
    # gradients: reduce-scatter + all-gather = the same bytes as one all-reduce, every ZeRO stage
    grads = 2 * LLAMA.params / (tp * pp)
    per_node = max(1, min(dp, 8 // (tp * pp)))
    dp_time = 0.0
    if dp > 1:
        dp_time = gu.collectives.estimate_time("all_reduce", grads, dp, gpu=gpu,
                                               gpus_per_node=per_node)
    return (compute + tp_time) / (1 - bubble) + pp_time + dp_time
""",
        hints=("ZeRO-2",),
    ),
    Blind(
        name="step_tp_all_layers_per_gpu",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        cause="the tensor-parallel all-reduces are counted for all 80 layers of the model instead of the L / pp layers of the GPU's own pipeline stage (pp times too many when pp > 1).",
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
        passes = 6 if recompute == "full" else 4
        tp_time = passes * LLAMA.layers * m * one      # 4 all-reduces in every layer
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
    # ---------------- planner_defend ----------------
    Blind(
        name="defend_tp8_pp4_v4_own_terms",
        exercise_id="planner_defend",
        half="held2",
        correct=True,
        source=PRELUDE
        + RANKED
        + MEM
        + STEP
        + """

def my_layout():
    return dict(dp=8, tp=8, pp=4, zero_stage=1, micro_batch_size=1, recompute="none", interleave=4)


def defend():
    mine = my_layout()
    step = predict_step_seconds(mine)
    # my own tally of the exposed seconds per link (no P.evaluate): TP 8 all-reduces stay on
    # NVLink, 4 per layer x 20 layers x 32 micro-batches of a 128 MiB activation, ~1.5 s;
    # the stage sends (TP 8 x PP 4 = 32 GPUs > a node) and the DP all-reduce go over the
    # network, ~0.25 s together. NVLink wins, and 1.5 s is far above 1% of the step.
    act = 2 * LLAMA.seq_len * LLAMA.hidden
    ar = gu.collectives.estimate_time("all_reduce", act, 8, gpu="H100-SXM", gpus_per_node=8)
    nvlink = 4 * (LLAMA.layers // 4) * 32 * ar
    network = (4 * 32 + 2) * 2 * act / 8 / H100.network_bandwidth
    network += gu.collectives.estimate_time("all_reduce", 2 * LLAMA.params / 32, 8,
                                            gpu="H100-SXM", gpus_per_node=1)
    bound = "NVLink" if nvlink >= network else "network"
    # against the best (TP 4 x PP 4, v = 4): twice the TP width on 20 layers and twice the
    # micro-batches, so about +0.9 s of all-reduces; my bubble is smaller (v m = 128 chunks)
    return {
        "layout": mine,
        "memory_gib": predict_memory_gib(mine),
        "step_seconds": step,
        "bound": bound,
        "vs_best": step / ranked[0].step_time,
        "main_difference": "tensor-parallel",
    }
""",
    ),
    Blind(
        name="defend_vs_best_inverted",
        exercise_id="planner_defend",
        half="held2",
        correct=False,
        cause="vs_best is the best's step time over its own (ranked[0].step_time / step), the inverse of the ratio asked for, so a slower layout reports a figure below 1.",
        source=PRELUDE
        + RANKED
        + MEM
        + STEP
        + """

def my_layout():
    return dict(dp=16, tp=8, pp=2, zero_stage=1, micro_batch_size=1, recompute="none", interleave=1)


def defend():
    layout = my_layout()
    step = predict_step_seconds(layout)
    return dict(
        layout=layout,
        memory_gib=predict_memory_gib(layout),
        step_seconds=step,
        bound="NVLink",
        vs_best=ranked[0].step_time / step,   # how fast the best is compared with mine
        main_difference="tensor-parallel",
    )
""",
        hints=("not the other way round",),
    ),
    Blind(
        name="defend_says_bubble",
        exercise_id="planner_defend",
        half="held2",
        correct=False,
        cause="main_difference names the bubble, where the TP 8 layout (no pipeline) is in fact ahead of the best; the term that costs it the most seconds against the best is its tensor-parallel all-reduces.",
        source=PRELUDE
        + RANKED
        + MEM
        + STEP
        + TP8
        + """

def defend():
    layout = my_layout()
    step = predict_step_seconds(layout)
    # the best layout has a pipeline and mine does not: that's the big difference
    return dict(
        layout=layout,
        memory_gib=predict_memory_gib(layout),
        step_seconds=step,
        bound="NVLink",
        vs_best=step / ranked[0].step_time,
        main_difference="bubble",
    )
""",
        hints=("(tensor-parallel)",),
    ),
    Blind(
        name="defend_bound_compute",
        exercise_id="planner_defend",
        half="held2",
        correct=False,
        cause='bound is "compute" because the layout has no pipeline bubble, but TP 8\'s exposed all-reduces (about 1.5 s, 14% of the step, far over 1%) make it NVLink-bound.',
        source=PRELUDE
        + RANKED
        + MEM
        + STEP
        + TP8
        + """

def defend():
    layout = my_layout()
    mem = predict_memory_gib(layout)
    step = predict_step_seconds(layout)
    return {
        "layout": layout,
        "memory_gib": mem,
        "step_seconds": step,
        "bound": "compute",          # no pipeline, so no idle time: the GPUs are computing
        "vs_best": step / ranked[0].step_time,
        "main_difference": "tensor-parallel",
    }
""",
        hints=("NVLink",),
    ),
]
