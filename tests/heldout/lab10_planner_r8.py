"""Blind held-out round lab10_planner_r8 (half "held2"), lab 10's planner part (10.1-10.4).

Written by a blind helper session on 2026-11-29 (about 06:39-06:55 UTC). Read: the code cells of
solutions/10_model_parallel_lab.ipynb (section 10), the signatures and docstrings of
gu.memory.model_state_bytes / activation_bytes_per_layer, gu.flops.hardware_flops_per_token /
peak_flops, gu.collectives.estimate_time, gu.parallelism.evaluate / Layout; the earlier causes
list; tests/heldout/__init__.py and the docstring and first entries of lab10_planner_r7.py for the
format. Never opened gpu_utils/exercises/, the tests/test_* files nor instructors/FAQ.md, never
ran the checker.

Verification (scratch /tmp/lab10_planner_r8/verify.py): every source is loaded with submitted().
Layouts are scored with P.evaluate (scratch only): fits, keeps the lab's rules, and step /
ranked[0].step_time against the lab's 1.2x. predict_memory_gib and predict_step_seconds are
compared with the reference solution and with P.evaluate (memory_per_gpu / 2**30, step_time) on
sixteen layouts (ZeRO 0-3, recompute none/selective/full, b = 2 with m < p, 1F1B and interleaved
v = 2, 4, 5, TP 1 to 8, PP 1 to 16): right ones within 1% everywhere, wrong ones off by more than
the lab's 5% / 10% on at least one layout the lab says it tries. defend() answers are compared
with the reference's reasoning applied to the same layout (vs_best within 12%, exact strings).
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

# a learner's own predictions (right), used by the defend() cells
HELPERS = """
def predict_memory_gib(layout):
    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
    b, zero = layout["micro_batch_size"], layout["zero_stage"]
    m = 256 // (dp * b)
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
    act = per_layer * LLAMA.layers / (pp * v) * chunks
    gathered = 4 * LLAMA.layer_params / tp if zero == 3 else 0.0
    return (states.total + act + gathered) / 2**30


def predict_step_seconds(layout):
    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
    b, zero, rec = layout["micro_batch_size"], layout["zero_stage"], layout["recompute"]
    gpu = CLUSTER.gpu
    m = 256 // (dp * b)
    per_token = gu.flops.hardware_flops_per_token(
        LLAMA.params, layers=LLAMA.layers, d_model=LLAMA.hidden, seq_len=LLAMA.seq_len,
        recompute=rec, attention="flash",
    )
    compute = per_token * BATCH_TOKENS / CLUSTER.n_gpus / (0.5 * gu.flops.peak_flops(gpu))
    act = 2 * LLAMA.seq_len * b * LLAMA.hidden
    tp_time = 0.0
    if tp > 1:
        one = gu.collectives.estimate_time("all_reduce", act, tp, gpu=gpu, gpus_per_node=8)
        tp_time = (6 if rec == "full" else 4) * (LLAMA.layers // pp) * m * one
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
            dp_time = m * gu.collectives.estimate_time("reduce_scatter", grads, dp, **where)
            dp_time += gu.collectives.estimate_time("all_gather", grads, dp, **where)
        else:
            dp_time = gu.collectives.estimate_time("all_reduce", grads, dp, **where)
    return (compute + tp_time) / (1 - bubble) + pp_time + dp_time
"""

TP8 = """
def my_layout():
    return dict(dp=32, tp=8, pp=1, zero_stage=1, micro_batch_size=1, recompute="none", interleave=1)
"""

# the reference solution's memory function, written out for the wrong variants below
MEM = """
def predict_memory_gib(layout):
    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
    b, zero = layout["micro_batch_size"], layout["zero_stage"]
    m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)  # micro-batches per data-parallel rank
    states = gu.memory.model_state_bytes(LLAMA.params / (tp * pp), dp=dp, zero_stage=zero)
    per_layer = gu.memory.activation_bytes_per_layer(
        LLAMA.seq_len,
        b,
        LLAMA.hidden,
        LLAMA.heads,
        tp=tp,
        sequence_parallel=tp > 1,
        recompute=layout["recompute"],
        dropout_masks=False,
        attention="flash",
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

# the reference solution's step-time function, written out for the wrong variants below
STEP = """
def predict_step_seconds(layout):
    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
    b, zero, recompute = layout["micro_batch_size"], layout["zero_stage"], layout["recompute"]
    gpu, n = CLUSTER.gpu, CLUSTER.n_gpus
    m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)
    per_token = gu.flops.hardware_flops_per_token(
        LLAMA.params,
        layers=LLAMA.layers,
        d_model=LLAMA.hidden,
        seq_len=LLAMA.seq_len,
        recompute=recompute,
        attention="flash",
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


def _sub(text, old, new):
    assert text.count(old) == 1, old
    return text.replace(old, new)


ANSWERS = [
    # ---------------- planner_layout_fits ----------------
    Blind(
        name="layout_tp4_pp8_v5",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=True,
        source=PRELUDE
        + """
def my_layout():
    # TP 4 inside half a node, 8 stages of 10 layers, 5 virtual stages of 2 layers each;
    # m = 256 / 8 = 32 micro-batches, a multiple of p = 8
    tp, pp = 4, 8
    dp = CLUSTER.n_gpus // (tp * pp)
    return {
        "dp": dp,
        "tp": tp,
        "pp": pp,
        "zero_stage": 1,
        "micro_batch_size": 1,
        "recompute": "none",
        "interleave": 5,
    }
""",
    ),
    Blind(
        name="layout_tp8_pp2_v2",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=True,
        source=PRELUDE
        + """
def my_layout():
    layout = dict(tp=8, pp=2, interleave=2, zero_stage=1, micro_batch_size=1, recompute="none")
    layout["dp"] = 256 // (layout["tp"] * layout["pp"])
    return layout
""",
    ),
    Blind(
        name="layout_no_tp_pp16",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=False,
        cause="Without tensor parallelism nothing splits a layer's activations (32 sbh = 2 GiB per layer for one sequence), and the first stage of 1F1B over 16 stages keeps 16 micro-batches of its 5 layers: 160 GiB of activations, about 180 GiB in all, far over the 72 GiB usable.",
        source=PRELUDE
        + """
def my_layout():
    # keep all communication off the tensor-parallel path: pipeline only
    return dict(dp=16, tp=1, pp=16, zero_stage=1, micro_batch_size=1, recompute="none", interleave=1)
""",
        hints=("activations take 160 GiB",),
    ),
    Blind(
        name="layout_returns_evaluated_layout",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=False,
        cause="my_layout must return the plain dict of the seven keys; it returns the planner's evaluated P.Layout object (from P.evaluate) for that layout instead of the dict.",
        source=PRELUDE
        + """
def my_layout():
    # score it while choosing it
    return P.evaluate(
        LLAMA, CLUSTER, BATCH_TOKENS, dp=32, tp=8, pp=1, zero_stage=1,
        micro_batch_size=1, recompute="none", interleave=1,
    )
""",
    ),
    # ---------------- planner_memory_prediction ----------------
    Blind(
        name="memory_by_hand",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=True,
        source=PRELUDE
        + """
def predict_memory_gib(layout):
    dp, tp, pp = layout["dp"], layout["tp"], layout["pp"]
    v, b, zero = layout["interleave"], layout["micro_batch_size"], layout["zero_stage"]
    s, h, L = LLAMA.seq_len, LLAMA.hidden, LLAMA.layers
    n = LLAMA.params / (tp * pp)  # parameters on this GPU
    weights = 2 * n / (dp if zero >= 3 else 1)
    grads = 2 * n / (dp if zero >= 2 else 1)
    optim = 12 * n / (dp if zero >= 1 else 1)
    # per layer, tensor + sequence parallel, flash attention, no dropout: 32 sbh / t;
    # full recomputation keeps only the input, 2 sbh / t
    per_layer = (2 if layout["recompute"] == "full" else 32) * s * b * h / tp
    m = 256 // (dp * b)
    if pp == 1:
        layers_held = L
    elif v == 1:
        layers_held = min(pp, m) * L / pp
    else:
        layers_held = min(v * m, v * pp + pp - 1) * L / (pp * v)
    extra = 2 * 2 * LLAMA.layer_params / tp if zero == 3 else 0
    return (weights + grads + optim + per_layer * layers_held + extra) / 1024**3
""",
    ),
    Blind(
        name="memory_b_squared",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=False,
        cause="activation_bytes_per_layer already scales with micro_batch=b; multiplying its result by b again counts b^2 sequences' activations per micro-batch, so every layout with b > 1 is overcounted (twice the activations for b = 2).",
        source=PRELUDE
        + _sub(
            MEM,
            "activations = per_layer * LLAMA.layers / (pp * v) * chunks",
            "activations = b * per_layer * LLAMA.layers / (pp * v) * chunks  # b sequences each",
        ),
        hints=("x the micro-batch size b",),
    ),
    Blind(
        name="memory_no_gradients",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=False,
        cause="It passes grad_bytes=0 as if gradients were transient, but mixed-precision training keeps a bf16 gradient for every parameter (2 bytes each, sharded over dp only from ZeRO-2): with TP 8 and ZeRO-1 that leaves out 16 GiB.",
        source=PRELUDE
        + _sub(
            MEM,
            "gu.memory.model_state_bytes(LLAMA.params / (tp * pp), dp=dp, zero_stage=zero)",
            "gu.memory.model_state_bytes(\n        LLAMA.params / (tp * pp), dp=dp, zero_stage=zero, grad_bytes=0\n    )",
        ),
        hints=("gradients x 0",),
    ),
    Blind(
        name="memory_optimizer_16",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=False,
        cause="Mixed-precision Adam's 16 bytes per parameter are all the model states together (2 weights + 2 gradients + 12 optimizer); passing optimizer_bytes=16 counts the weights and gradients twice (20 bytes per parameter), which shows wherever the optimizer states are not sharded (ZeRO-0: a quarter more states).",
        source=PRELUDE
        + _sub(
            MEM,
            "gu.memory.model_state_bytes(LLAMA.params / (tp * pp), dp=dp, zero_stage=zero)",
            "gu.memory.model_state_bytes(\n        LLAMA.params / (tp * pp), dp=dp, zero_stage=zero, optimizer_bytes=16\n    )",
        ),
        hints=("16 bytes per parameter where the planner counts 12",),
    ),
    Blind(
        name="memory_activations_not_split_by_tp",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=False,
        cause="It calls activation_bytes_per_layer without tp=t, so every GPU counts a whole layer's activations, but tensor plus sequence parallelism splits all of them over the t GPUs (32 sbh / t): with TP 8 the activations are 8 times too large.",
        source=PRELUDE
        + _sub(
            MEM,
            "        tp=tp,\n        sequence_parallel=tp > 1,\n",
            "        sequence_parallel=tp > 1,\n",
        ),
        hints=("activations x tp",),
    ),
    # ---------------- planner_step_time ----------------
    Blind(
        name="step_tp_as_reduce_scatter_all_gather",
        exercise_id="planner_step_time",
        half="held2",
        correct=True,
        source=PRELUDE
        + """
def predict_step_seconds(layout):
    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
    b, zero, rec = layout["micro_batch_size"], layout["zero_stage"], layout["recompute"]
    m = 256 // (dp * b)
    est = gu.collectives.estimate_time
    # each GPU computes 1/(tp pp) of its replica's share of the batch
    tokens = BATCH_TOKENS / dp / (tp * pp)
    flops = gu.flops.hardware_flops_per_token(
        LLAMA.params, layers=LLAMA.layers, d_model=LLAMA.hidden, seq_len=LLAMA.seq_len,
        recompute=rec, attention="flash",
    )
    compute = tokens * flops / (0.5 * gu.flops.peak_flops("H100-SXM", dtype="bf16"))
    # with sequence parallelism each all-reduce becomes a reduce-scatter plus an all-gather
    x = 2 * LLAMA.seq_len * b * LLAMA.hidden
    per_pair = est("reduce_scatter", x, tp) + est("all_gather", x, tp) if tp > 1 else 0.0
    n_pairs = (6 if rec == "full" else 4) * (LLAMA.layers / pp) * m
    tp_time = n_pairs * per_pair
    idle = (pp - 1) / (v * m + pp - 1)
    sends = 0.0
    if pp > 1:
        bw = H100.nvlink_bandwidth if tp * pp <= 8 else H100.network_bandwidth
        sends = 2 * (v * m + pp - 2) * (x / tp) / bw
    g = 2 * LLAMA.params / (tp * pp)
    node = max(1, min(dp, 8 // (tp * pp)))
    if dp == 1:
        dp_time = 0.0
    elif zero == 2:
        dp_time = m * est("reduce_scatter", g, dp, gpus_per_node=node)
        dp_time += est("all_gather", g, dp, gpus_per_node=node)
    else:
        dp_time = est("all_reduce", g, dp, gpus_per_node=node)
    return (compute + tp_time) / (1 - idle) + sends + dp_time
""",
    ),
    Blind(
        name="step_tp_priced_with_dp_placement",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        cause="A tensor-parallel group is t consecutive GPUs inside one node, so its all-reduces run over NVLink (gpus_per_node=8); it prices them with the data-parallel group's placement (one GPU per node once tp x pp >= 8), as if they crossed the 400 Gb/s network, many times too slow.",
        source=PRELUDE
        + _sub(
            _sub(
                STEP,
                '        one = gu.collectives.estimate_time("all_reduce", act, tp, gpu=gpu, gpus_per_node=8)\n',
                '        one = gu.collectives.estimate_time("all_reduce", act, tp, gpu=gpu, gpus_per_node=per_node)\n',
            ),
            "    tp_time = 0.0\n",
            "    per_node = max(1, min(dp, 8 // (tp * pp)))  # GPUs of a group per node\n    tp_time = 0.0\n",
        ),
        hints=("NVLink",),
    ),
    Blind(
        name="step_cluster_peak_divided_twice",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        cause="peak_flops(gpu, n_gpus=256) is already the whole cluster's peak; dividing the batch's FLOPs by the 256 GPUs as well makes the compute 256 times too short.",
        source=PRELUDE
        + _sub(
            STEP,
            "compute = per_token * BATCH_TOKENS / n / (0.5 * gu.flops.peak_flops(gpu))",
            "compute = per_token * BATCH_TOKENS / n / (0.5 * gu.flops.peak_flops(gpu, n_gpus=n))",
        ),
        hints=("GPUs twice",),
    ),
    Blind(
        name="step_mfu_multiplied",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        cause="At MFU 0.5 the matmuls reach half the peak, so the compute time is FLOPs / (0.5 x peak); it multiplies the time at peak by 0.5 instead, four times too short a compute time.",
        source=PRELUDE
        + _sub(
            STEP,
            "compute = per_token * BATCH_TOKENS / n / (0.5 * gu.flops.peak_flops(gpu))",
            "compute = 0.5 * per_token * BATCH_TOKENS / n / gu.flops.peak_flops(gpu)  # MFU 0.5",
        ),
        hints=("multiplied by MFU = 0.5",),
    ),
    # ---------------- planner_defend ----------------
    Blind(
        name="defend_tp8_own_words",
        exercise_id="planner_defend",
        half="held2",
        correct=True,
        source=PRELUDE
        + HELPERS
        + RANKED
        + TP8
        + """
def defend():
    mine = my_layout()
    t = predict_step_seconds(mine)
    best = ranked[0].step_time
    # TP 8's all-reduces over NVLink (about 1.5 s) outweigh the gradients' all-reduce over the
    # network (0.7 s); the best (TP 4 x PP 4, v = 4) runs half as many all-reduces per GPU
    return {
        "layout": mine,
        "memory_gib": predict_memory_gib(mine),
        "step_seconds": t,
        "bound": "NVLink",
        "vs_best": t / best,
        "main_difference": "tensor-parallel",
    }
""",
    ),
    Blind(
        name="defend_tp4_pp8_v5_none",
        exercise_id="planner_defend",
        half="held2",
        correct=True,
        source=PRELUDE
        + HELPERS
        + RANKED
        + """
def my_layout():
    return dict(dp=8, tp=4, pp=8, zero_stage=1, micro_batch_size=1, recompute="none", interleave=5)


def defend():
    layout = my_layout()
    step = predict_step_seconds(layout)
    # 5 virtual stages: as fast as the list's best (0.99x); TP 4's all-reduces over NVLink
    # (0.6 s) expose more than its pipeline sends and gradient all-reduce over the network
    return dict(
        layout=layout,
        memory_gib=predict_memory_gib(layout),
        step_seconds=step,
        bound="NVLink",
        vs_best=step / ranked[0].step_time,
        main_difference="none",
    )
""",
    ),
    Blind(
        name="defend_vs_best_memory_ratio",
        exercise_id="planner_defend",
        half="held2",
        correct=False,
        cause="vs_best compares step times, my predicted step over ranked[0].step_time (about 1.06-1.08 for TP 8); it divides my predicted memory by the best layout's memory (56 / 67 GiB, about 0.83).",
        source=PRELUDE
        + HELPERS
        + RANKED
        + TP8
        + """
def defend():
    layout = my_layout()
    mem = predict_memory_gib(layout)
    return dict(
        layout=layout,
        memory_gib=mem,
        step_seconds=predict_step_seconds(layout),
        bound="NVLink",
        vs_best=mem / (ranked[0].memory_per_gpu / 2**30),
        main_difference="tensor-parallel",
    )
""",
        hints=("memory per GPU over the best layout's",),
    ),
    Blind(
        name="defend_memory_as_share_of_budget",
        exercise_id="planner_defend",
        half="held2",
        correct=False,
        cause="memory_gib is the predicted GiB per GPU (about 56); it reports it as a share of the 72 GiB usable (0.78).",
        source=PRELUDE
        + HELPERS
        + RANKED
        + TP8
        + """
def defend():
    layout = my_layout()
    usable = 0.9 * H100.hbm_bytes / 2**30
    step = predict_step_seconds(layout)
    return dict(
        layout=layout,
        memory_gib=predict_memory_gib(layout) / usable,  # how full the GPU is
        step_seconds=step,
        bound="NVLink",
        vs_best=step / ranked[0].step_time,
        main_difference="tensor-parallel",
    )
""",
        hints=("share of the 72 GiB usable",),
    ),
    Blind(
        name="defend_term_spelled_with_space",
        exercise_id="planner_defend",
        half="held2",
        correct=False,
        cause='main_difference must be one of the planner\'s terms spelled exactly; it writes "tensor parallel" (a space) instead of "tensor-parallel".',
        source=PRELUDE
        + HELPERS
        + RANKED
        + TP8
        + """
def defend():
    layout = my_layout()
    step = predict_step_seconds(layout)
    return dict(
        layout=layout,
        memory_gib=predict_memory_gib(layout),
        step_seconds=step,
        bound="NVLink",
        vs_best=step / ranked[0].step_time,
        main_difference="tensor parallel",
    )
""",
        hints=("tensor-parallel",),
    ),
]
