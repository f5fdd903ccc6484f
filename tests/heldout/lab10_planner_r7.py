"""Blind held-out round lab10_planner_r7 (half "held2"), lab 10's planner part (10.1-10.4).

Written by a blind helper session on 2026-11-29 (about 04:03-04:20 UTC, a short round). Read:
labs/ and solutions/10_model_parallel_lab.ipynb (cells of 10.1-10.4), gu.parallelism's Layout and
evaluate signatures, gu.collectives.estimate_time's signature; the earlier causes list. Never
opened gpu_utils/exercises/, tests/ beyond tests/heldout/__init__.py, nor ran the checker.

Verification (scratch /tmp/lab10_planner_r7/verify.py): every source goes through submitted()
with PRELUDE (the lab's set-up cell) prepended. Layouts are scored with P.evaluate (scratch only):
fits and step / ranked[0].step_time against the lab's 1.2x. predict_memory_gib and
predict_step_seconds are compared with P.evaluate's memory_per_gpu / 2**30 and step_time on
nine layouts (ZeRO 0-3, recompute none/selective/full, b = 2 with m < p, interleaved v = 2, 4, 5):
correct ones within the lab's 5% / 10% everywhere, wrong ones outside on at least one layout.
defend() answers are compared with the reference's dict (12% on vs_best, exact strings).
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

MEM = 'def predict_memory_gib(layout):\n    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]\n    b, zero = layout["micro_batch_size"], layout["zero_stage"]\n    m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)  # micro-batches per data-parallel rank\n    # model states of the parameters this GPU holds, sharded over dp as the ZeRO stage says\n    states = gu.memory.model_state_bytes(LLAMA.params / (tp * pp), dp=dp, zero_stage=zero)\n    # one layer\'s activations: split over t (sequence parallelism), no s x s scores (flash),\n    # no dropout masks (Llama has none), only the layer\'s input with full recomputation\n    per_layer = gu.memory.activation_bytes_per_layer(\n        LLAMA.seq_len,\n        b,\n        LLAMA.hidden,\n        LLAMA.heads,\n        tp=tp,\n        sequence_parallel=tp > 1,\n        recompute=layout["recompute"],\n        dropout_masks=False,\n        attention="flash",\n    )\n    # what the first stage holds at once: 1F1B min(p, m) micro-batches of L/p layers;\n    # interleaved, min(v m, v p + p - 1) chunks of L/(p v) layers\n    if pp == 1:\n        chunks = 1\n    elif v == 1:\n        chunks = min(pp, m)\n    else:\n        chunks = min(v * m, v * pp + pp - 1)\n    activations = per_layer * LLAMA.layers / (pp * v) * chunks\n    gathered = 2 * 2 * LLAMA.layer_params / tp if zero == 3 else 0.0\n    return (states.total + activations + gathered) / 2**30\n    ### END SOLUTION'

STEP = 'def predict_step_seconds(layout):\n    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]\n    b, zero, recompute = layout["micro_batch_size"], layout["zero_stage"], layout["recompute"]\n    gpu, n = CLUSTER.gpu, CLUSTER.n_gpus\n    m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)\n    # compute: the batch\'s hardware FLOPs shared by all GPUs, at MFU 0.5 of the dense peak\n    per_token = gu.flops.hardware_flops_per_token(\n        LLAMA.params,\n        layers=LLAMA.layers,\n        d_model=LLAMA.hidden,\n        seq_len=LLAMA.seq_len,\n        recompute=recompute,\n        attention="flash",\n    )\n    compute = per_token * BATCH_TOKENS / n / (0.5 * gu.flops.peak_flops(gpu))\n    # tensor parallelism: all-reduces of one micro-batch\'s s x b x h bf16 activations\n    act = 2 * LLAMA.seq_len * b * LLAMA.hidden\n    tp_time = 0.0\n    if tp > 1:\n        one = gu.collectives.estimate_time("all_reduce", act, tp, gpu=gpu, gpus_per_node=8)\n        tp_time = (6 if recompute == "full" else 4) * LLAMA.layers // pp * m * one\n    # the pipeline: its bubble, and the sends (split by t with sequence parallelism)\n    bubble = (pp - 1) / (v * m + pp - 1)\n    pp_time = 0.0\n    if pp > 1:\n        link = H100.network_bandwidth if tp * pp > 8 else H100.nvlink_bandwidth\n        pp_time = (v * m + pp - 2) * 2 * act / tp / link\n    # data parallelism: dp ranks sit tp x pp GPUs apart, so each node holds 8 // (tp pp) of them\n    grads = 2 * LLAMA.params / (tp * pp)\n    per_node = max(1, min(dp, 8 // (tp * pp)))\n    dp_time = 0.0\n    if dp > 1:\n        where = dict(gpu=gpu, gpus_per_node=per_node)\n        if zero == 2:  # it keeps only its shard: a reduce-scatter per micro-batch\n            scatter = gu.collectives.estimate_time("reduce_scatter", grads, dp, **where)\n            dp_time = m * scatter + gu.collectives.estimate_time("all_gather", grads, dp, **where)\n        else:  # ZeRO-0/1 accumulate the whole gradient and all-reduce it once per step\n            dp_time = gu.collectives.estimate_time("all_reduce", grads, dp, **where)\n    return (compute + tp_time) / (1 - bubble) + pp_time + dp_time\n    ### END SOLUTION'


def _sub(text, old, new):
    assert old in text, old
    return text.replace(old, new)


def _layout(**kw):
    d = dict(dp=32, tp=8, pp=1, zero_stage=1, micro_batch_size=1, recompute="none", interleave=1)
    d.update(kw)
    return "def my_layout():\n    return " + repr(d) + "\n"


ANSWERS = [
    # ---------------- planner_layout_fits ----------------
    Blind(
        name="layout_tp4_pp4_interleaved_best",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=True,
        source=PRELUDE
        + """
def my_layout():
    layout = {"dp": 16, "tp": 4, "pp": 4}
    layout.update(zero_stage=1, micro_batch_size=1, recompute="none", interleave=4)
    return layout
""",
    ),
    Blind(
        name="layout_fsdp_tp2_full",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=False,
        cause="TP 2 leaves too little split for plain ZeRO-1, so it reaches for ZeRO-3 with full recomputation: every block's weights are gathered and its gradients reduce-scattered over the network across dp = 128 (about 7 s of traffic) and each forward runs twice (11 s of compute), about 1.9x the best step.",
        source=PRELUDE + _layout(dp=128, tp=2, pp=1, zero_stage=3, recompute="full"),
    ),
    Blind(
        name="layout_zero0_tp8_pp4_within_margin",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=True,
        source=PRELUDE + _layout(dp=8, tp=8, pp=4, zero_stage=0),
    ),
    Blind(
        name="layout_tp2_pp4_v2",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=False,
        cause="TP 2 splits each layer's activations only 2 ways, and with 4 stages and v = 2 the first stage holds v p + p - 1 = 11 chunks of 10 layers (110 layers' activations) on top of 8.8e9 parameters' bf16 weights and gradients: about 146 GiB, over the 72 GiB usable.",
        source=PRELUDE + _layout(dp=32, tp=2, pp=4, interleave=2),
        hints=("activations take 110 GiB",),
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
    L, h, s = LLAMA.layers, LLAMA.hidden, LLAMA.seq_len
    dp, tp, pp = layout["dp"], layout["tp"], layout["pp"]
    v, b, zero = layout["interleave"], layout["micro_batch_size"], layout["zero_stage"]
    m = (BATCH_TOKENS // s) // (dp * b)
    n = LLAMA.params / (tp * pp)
    weights = 2 * n / (dp if zero >= 3 else 1)
    grads = 2 * n / (dp if zero >= 2 else 1)
    optim = 12 * n / (dp if zero >= 1 else 1)
    if layout["recompute"] == "full":
        per_layer = 2 * s * b * h / tp
    else:
        per_layer = 32 * s * b * h / tp  # flash, no dropout, sequence parallel when tp > 1
    if pp == 1:
        in_flight, layers = 1, L
    elif v == 1:
        in_flight, layers = min(pp, m), L // pp
    else:
        in_flight, layers = min(v * m, v * pp + pp - 1), L // (pp * v)
    extra = 4 * LLAMA.layer_params / tp if zero == 3 else 0
    return (weights + grads + optim + per_layer * layers * in_flight + extra) / 1024**3
""",
    ),
    Blind(
        name="memory_hardcoded_recompute_none",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=False,
        cause='It passes recompute="none" whatever the layout says: with full recomputation a layer keeps only its 2 sbh/t input, not 32 sbh/t, so recomputing layouts are counted with all their activations.',
        source=PRELUDE + _sub(MEM, 'recompute=layout["recompute"]', 'recompute="none"'),
        hints=("as without recomputation",),
    ),
    Blind(
        name="memory_interleaved_p_chunks",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=False,
        cause="With interleaving the first stage holds min(v m, v p + p - 1) chunks of L/(p v) layers; it keeps 1F1B's min(p, m) count for chunks v times smaller, so it counts about a v-th of the activations.",
        source=PRELUDE + _sub(MEM, "chunks = min(v * m, v * pp + pp - 1)", "chunks = min(pp, m)"),
        hints=("min(v m, v p + p - 1)",),
    ),
    Blind(
        name="memory_states_divided_by_dp_times_pp_only",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=False,
        cause="A GPU holds 1/(tp x pp) of the parameters; it divides them by pp only, as if tensor parallelism split the activations but not the weights.",
        source=PRELUDE + _sub(MEM, "LLAMA.params / (tp * pp)", "LLAMA.params / pp"),
        hints=("model states x tp",),
    ),
    # ---------------- planner_step_time ----------------
    Blind(
        name="step_per_gpu_tokens",
        exercise_id="planner_step_time",
        half="held2",
        correct=True,
        source=PRELUDE
        + _sub(
            STEP,
            "compute = per_token * BATCH_TOKENS / n / (0.5 * gu.flops.peak_flops(gpu))",
            "tokens_per_gpu = BATCH_TOKENS / dp / (tp * pp)\n    compute = tokens_per_gpu * per_token / gu.flops.peak_flops(gpu) / 0.5",
        ),
    ),
    Blind(
        name="step_fp32_peak",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        cause='The matmuls run in bf16, so MFU 0.5 applies to the bf16 dense peak; it asks peak_flops for the fp32 peak (dtype="fp32"), many times lower, so the compute time is far too long.',
        source=PRELUDE
        + _sub(STEP, "gu.flops.peak_flops(gpu))", 'gu.flops.peak_flops(gpu, dtype="fp32"))'),
        hints=("as at the fp32 peak",),
    ),
    Blind(
        name="step_compute_divided_by_tp_only",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        cause="A replica's FLOPs are shared by its tp x pp GPUs; it divides a replica's share of the batch by tp only, so with a pipeline every GPU is charged all of its replica's layers (pp times the compute).",
        source=PRELUDE
        + _sub(
            STEP,
            "compute = per_token * BATCH_TOKENS / n / (0.5 * gu.flops.peak_flops(gpu))",
            "compute = per_token * BATCH_TOKENS / dp / tp / (0.5 * gu.flops.peak_flops(gpu))",
        ),
        hints=("compute x pp",),
    ),
    Blind(
        name="step_zero2_no_gather_ignores_m",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        cause="ZeRO-2 keeps only its gradient shard, so it reduce-scatters the gradients after each of the m micro-batches; it counts a single reduce-scatter per step, m times too little data-parallel traffic.",
        source=PRELUDE + _sub(STEP, "dp_time = m * scatter +", "dp_time = scatter +"),
        hints=("on every micro-batch",),
    ),
    # ---------------- planner_defend ----------------
    Blind(
        name="defend_best_layout_none",
        exercise_id="planner_defend",
        half="held2",
        correct=True,
        source=PRELUDE
        + MEM
        + "\n"
        + STEP
        + RANKED
        + """
def my_layout():
    return dict(dp=16, tp=4, pp=4, zero_stage=1, micro_batch_size=1, recompute="none", interleave=4)


def defend():
    mine = my_layout()
    seconds = predict_step_seconds(mine)
    ratio = seconds / ranked[0].step_time
    return {
        "layout": mine,
        "memory_gib": predict_memory_gib(mine),
        "step_seconds": seconds,
        "bound": "NVLink",  # TP 4's all-reduces over NVLink, about 0.6 s of the step
        "vs_best": ratio,
        "main_difference": "none" if ratio < 1.02 else "tensor-parallel",
    }
""",
    ),
    Blind(
        name="defend_memory_in_bytes",
        exercise_id="planner_defend",
        half="held2",
        correct=False,
        cause="memory_gib is in GiB as predict_memory_gib returns it; it multiplies it back by 2**30 and reports bytes.",
        source=PRELUDE
        + MEM
        + "\n"
        + STEP
        + RANKED
        + "\n"
        + _layout()
        + """

def defend():
    layout = my_layout()
    step = predict_step_seconds(layout)
    return dict(
        layout=layout,
        memory_gib=predict_memory_gib(layout) * 2**30,
        step_seconds=step,
        bound="NVLink",
        vs_best=step / ranked[0].step_time,
        main_difference="tensor-parallel",
    )
""",
        hints=("not bytes",),
    ),
    Blind(
        name="defend_best_layout_bound_network",
        exercise_id="planner_defend",
        half="held2",
        correct=False,
        cause="The best layout's pipeline sends and gradient all-reduce cross the network but expose only about 0.4 s together, while TP 4's all-reduces expose about 0.6 s over NVLink: the bound is NVLink, not the network.",
        source=PRELUDE
        + MEM
        + "\n"
        + STEP
        + RANKED
        + """
def my_layout():
    return dict(dp=16, tp=4, pp=4, zero_stage=1, micro_batch_size=1, recompute="none", interleave=4)


def defend():
    mine = my_layout()
    seconds = predict_step_seconds(mine)
    return {
        "layout": mine,
        "memory_gib": predict_memory_gib(mine),
        "step_seconds": seconds,
        "bound": "network",  # its pipeline crosses nodes
        "vs_best": seconds / ranked[0].step_time,
        "main_difference": "none",
    }
""",
        hints=("the planner says NVLink",),
    ),
]
