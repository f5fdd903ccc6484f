"""Blind held-out round lab10_planner_r9 (half "held2"), lab 10's planner part (10.1-10.4).

Written by a blind helper session on 2026-11-29 (about 09:34-10:10 UTC). Read: the code and
markdown cells of solutions/10_model_parallel_lab.ipynb (sections 10.1-10.4) and the check-cell
ids of labs/10_model_parallel_lab.ipynb; the module docstring and Layout/evaluate/
in_flight_chunks of gu.parallelism, the signatures and docstrings of gu.memory.model_state_bytes /
activation_bytes_per_layer, gu.flops.hardware_flops_per_token / attention_flops_per_token /
peak_flops, gu.pipeline.in_flight / one_f_one_b / interleaved; the earlier rounds' causes list
(/tmp/blind/causes_lab10_planner.txt); tests/heldout/__init__.py and the docstring and first
entries of lab10_planner_r8.py for the format (a head -60 of its ANSWERS also showed
the start of its third and fourth entries, whose causes are in the causes list anyway). Never opened gpu_utils/exercises/, the
tests/test_* files nor any FAQ, never ran a check cell nor the checker.

Verification (scratch /tmp/lab10_planner_r9/verify.py, run from tests/ with
GPU_COURSE_MODE=simulator): every source is loaded with heldout.submitted().
* planner_layout_fits: the returned dict is scored with P.evaluate (scratch only): fits, keeps
  the lab's rules, step / ranked[0].step_time (best: DP 16 x TP 4 x PP 4, v = 4, 9.71 s) under
  1.2. Right: TP 8 selective (1.076x, 56 GiB), TP 8 x PP 4 v = 5 (1.050x, 34 GiB). Wrong: the
  printing one returns None; the one with parameters raises TypeError when called as
  my_layout().
* planner_memory_prediction and planner_step_time: compared with the solution's reference
  functions and with P.evaluate (memory_per_gpu / 2**30, step_time) on 17 layouts (ZeRO 0-3,
  recompute none/selective/full, b = 1, 2, 4 with m < p, 1F1B and interleaved v = 2, 4, 5,
  TP 1 to 8, PP 1 to 16). Right ones agree with the reference within 1e-6 relative (memory)
  and 1% (step) everywhere; each wrong one is off by more than the lab's 5% (memory) / 10%
  (step) on at least one of them, or returns a non-number, as its cause says. Seen: the
  schedule-simulating memory answer and the hand-FLOPs step answer equal the reference exactly
  on all layouts; memory_micro_batches_per_stage is exact without a pipeline or with m = p but
  -11% (TP 4 x PP 4 v = 4), -40% (b = 2), -69% (PP 16 v = 5); memory_hardcodes_zero1 -63% on
  ZeRO-0, +40% on ZeRO-2, +130% and more on ZeRO-3; memory_returns_formatted_string returns
  '56.0 GiB'; step_nodes_for_gpus about 6.6x everywhere; step_mfu_on_whole_step +20% for
  TP 8 (+35% with ZeRO-2) but only +9% on layouts with little communication;
  step_tp_allreduces_per_chunk and step_virtual_stages_as_stages exact for v = 1, +13% to
  +44% and +6% to +18% for v = 2, 4, 5. A first try, gathered ZeRO-3 layers added for every
  ZeRO stage, was only 0.4-0.8 GiB (under 2%) off and was dropped.
* planner_defend: the dict is compared with the reference's (layout equal, memory_gib and
  step_seconds within 1% of the reference predictions for the same layout, vs_best within
  12%, bound and main_difference equal strings).
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

# the reference's memory function, as the learner wrote it in 10.2 (used by wrong variants)
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

# the reference's step-time function, as the learner wrote it in 10.3
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
        name="layout_tp8_selective",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=True,
        source=PRELUDE
        + """
def my_layout():
    # TP 8 fills the node, no pipeline at all. With flash attention selective recomputation has
    # nothing left to drop, so it costs nothing and saves nothing: 56 GiB, 10.45 s (1.08x).
    layout = {"tp": 8, "pp": 1}
    layout["dp"] = CLUSTER.n_gpus // (layout["tp"] * layout["pp"])
    layout.update(zero_stage=1, micro_batch_size=1, recompute="selective", interleave=1)
    return layout
""",
    ),
    Blind(
        name="layout_tp8_pp4_v5",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=True,
        source=PRELUDE
        + """
def my_layout():
    tp = CLUSTER.gpus_per_node          # a whole node of NVLink
    pp = 4                              # 20 layers per stage
    v = 5                               # chunks of 4 layers
    dp = CLUSTER.n_gpus // (tp * pp)    # 8 replicas
    m = BATCH_TOKENS // LLAMA.seq_len // dp
    assert m % pp == 0 and (LLAMA.layers // pp) % v == 0
    return dict(dp=dp, tp=tp, pp=pp, zero_stage=1, micro_batch_size=1,
                recompute="none", interleave=v)
""",
    ),
    Blind(
        name="layout_prints_instead_of_returning",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=False,
        cause="my_layout prints the layout dict but never returns it, so the function returns None and the check has no layout to judge.",
        source=PRELUDE
        + """
def my_layout():
    layout = dict(dp=32, tp=8, pp=1, zero_stage=1, micro_batch_size=1, recompute="none",
                  interleave=1)
    print(layout)
""",
        hints=("return dict(",),
    ),
    Blind(
        name="layout_takes_model_and_cluster",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=False,
        cause="my_layout must take no arguments (the check and the ranking cell call my_layout()); it requires model and cluster parameters, so the call raises a TypeError.",
        source=PRELUDE
        + """
def my_layout(model, cluster):
    tp = cluster.gpus_per_node
    dp = cluster.n_gpus // tp
    return dict(dp=dp, tp=tp, pp=1, zero_stage=1, micro_batch_size=1, recompute="none",
                interleave=1)
""",
        hints=("without parameters",),
    ),
    # ---------------- planner_memory_prediction ----------------
    Blind(
        name="memory_simulated_schedule_by_hand_states",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=True,
        source=PRELUDE
        + """
def predict_memory_gib(layout):
    dp, tp, pp = layout["dp"], layout["tp"], layout["pp"]
    v, b, zero = layout["interleave"], layout["micro_batch_size"], layout["zero_stage"]
    sequences = BATCH_TOKENS // LLAMA.seq_len
    m = sequences // (dp * b)
    psi = LLAMA.params / (tp * pp)
    # bf16 weights, bf16 gradients, 12 bytes of fp32 Adam state; ZeRO-k shards the last k
    weights = 2 * psi / (dp if zero >= 3 else 1)
    grads = 2 * psi / (dp if zero >= 2 else 1)
    optim = 12 * psi / (dp if zero >= 1 else 1)
    layer = gu.memory.activation_bytes_per_layer(
        LLAMA.seq_len, b, LLAMA.hidden, LLAMA.heads,
        tp=tp, sequence_parallel=(tp > 1), recompute=layout["recompute"],
        dropout_masks=LLAMA.dropout, attention="flash",
    )
    # ask the schedule itself how many chunks the first stage keeps alive
    if pp == 1:
        alive = 1
    elif v == 1:
        alive = gu.pipeline.in_flight(gu.pipeline.one_f_one_b(pp, m))[0]
    else:
        alive = gu.pipeline.in_flight(gu.pipeline.interleaved(pp, m, v))[0]
    acts = alive * layer * (LLAMA.layers // (pp * v))
    extra = 4 * LLAMA.layer_params / tp if zero == 3 else 0
    return (weights + grads + optim + acts + extra) / (1024**3)
""",
    ),
    Blind(
        name="memory_micro_batches_per_stage",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=False,
        cause="m is the number of micro-batches of a data-parallel rank, 256 / (dp x b), and every one of them passes through every stage; it divides them by pp as well, as if each stage had its own share of the sequences, so the first stage is counted as holding fewer micro-batches (chunks) than it does: 16 chunks instead of 19 for TP 4 x PP 4 with v = 4, 2 micro-batches instead of 4 with b = 2.",
        source=PRELUDE
        + MEM.replace(
            "    m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)\n",
            "    # each stage gets its share of the micro-batches\n"
            "    m = BATCH_TOKENS // LLAMA.seq_len // (dp * b * pp)\n",
        ),
        hints=("micro-batches in flight",),
    ),
    Blind(
        name="memory_hardcodes_zero1",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=False,
        cause="It passes zero_stage=1 (its own layout's) to model_state_bytes whatever the layout says, so ZeRO-0 layouts are not charged their whole optimizer states and ZeRO-2/3 layouts get no sharding of gradients and weights.",
        source=PRELUDE
        + MEM.replace(
            "dp=dp, zero_stage=zero)",
            "dp=dp, zero_stage=1)",
        ),
        hints=("ZeRO stage",),
    ),
    Blind(
        name="memory_returns_formatted_string",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=False,
        cause="predict_memory_gib must return a number of GiB; it returns a formatted string such as '56.0 GiB', which cannot be compared with the planner's figure.",
        source=PRELUDE
        + MEM.replace(
            "    return (states.total + activations + gathered) / 2**30\n",
            "    gib = (states.total + activations + gathered) / 2**30\n"
            '    return f"{gib:.1f} GiB"\n',
        ),
        hints=("not a finite number",),
    ),
    # ---------------- planner_step_time ----------------
    Blind(
        name="step_flops_by_hand",
        exercise_id="planner_step_time",
        half="held2",
        correct=True,
        source=PRELUDE
        + """
def predict_step_seconds(layout):
    dp, tp, pp, v = (layout[k] for k in ("dp", "tp", "pp", "interleave"))
    b, zero, rec = layout["micro_batch_size"], layout["zero_stage"], layout["recompute"]
    s, h, L, N = LLAMA.seq_len, LLAMA.hidden, LLAMA.layers, LLAMA.params
    m = (BATCH_TOKENS // s) // (dp * b)
    # hardware FLOPs per token with flash attention: 6N + 14 L h s, or 8N + 18 L h s when
    # every forward is recomputed (selective has nothing to drop with flash)
    if rec == "full":
        per_token = 8 * N + 18 * L * h * s
    else:
        per_token = 6 * N + 14 * L * h * s
    tokens_per_gpu = BATCH_TOKENS / CLUSTER.n_gpus
    compute = per_token * tokens_per_gpu / (0.5 * H100.peak_flops("bf16"))
    message = 2 * s * b * h                      # one micro-batch's bf16 activations
    est = gu.collectives.estimate_time
    tp_time = 0.0
    if tp > 1:
        per_layer = 6 if rec == "full" else 4
        tp_time = per_layer * (L / pp) * m * est("all_reduce", message, tp,
                                                 gpu=CLUSTER.gpu, gpus_per_node=8)
    idle = (pp - 1) / (v * m + pp - 1)
    pp_time = 0.0
    if pp > 1:
        bw = H100.nvlink_bandwidth if tp * pp <= 8 else H100.network_bandwidth
        pp_time = 2 * (v * m + pp - 2) * (message / tp) / bw
    dp_time = 0.0
    if dp > 1:
        grad_bytes = 2 * N / (tp * pp)
        kw = dict(gpu=CLUSTER.gpu, gpus_per_node=max(1, min(dp, 8 // (tp * pp))))
        if zero == 2:
            dp_time = (m * est("reduce_scatter", grad_bytes, dp, **kw)
                       + est("all_gather", grad_bytes, dp, **kw))
        else:
            dp_time = est("all_reduce", grad_bytes, dp, **kw)
    busy = compute + tp_time
    return busy / (1 - idle) + pp_time + dp_time
""",
    ),
    Blind(
        name="step_nodes_for_gpus",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        cause="The batch's FLOPs are shared by all 256 GPUs (CLUSTER.n_gpus); it divides them by the 32 nodes (CLUSTER.nodes), so every GPU is charged 8 times its compute.",
        source=PRELUDE
        + STEP.replace(
            "gpu, n = CLUSTER.gpu, CLUSTER.n_gpus", "gpu, n = CLUSTER.gpu, CLUSTER.nodes"
        ),
        hints=("GPUs per node",),
    ),
    Blind(
        name="step_mfu_on_whole_step",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        cause="MFU 0.5 describes the matmuls only: it computes the FLOPs at the full peak and then divides the whole step, communication included, by 0.5, so every collective and pipeline send is charged twice its time.",
        source=PRELUDE
        + STEP.replace(
            "    compute = per_token * BATCH_TOKENS / n / (0.5 * gu.flops.peak_flops(gpu))\n",
            "    compute = per_token * BATCH_TOKENS / n / gu.flops.peak_flops(gpu)\n",
        ).replace(
            "    return (compute + tp_time) / (1 - bubble) + pp_time + dp_time\n",
            "    ideal = (compute + tp_time) / (1 - bubble) + pp_time + dp_time\n"
            "    return ideal / 0.5  # the job runs at MFU 0.5\n",
        ),
        hints=("communication included",),
    ),
    Blind(
        name="step_tp_allreduces_per_chunk",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        cause="With interleaving a GPU runs v chunks of L/(p v) layers per micro-batch, still L/p layers' all-reduces in all; it charges every one of the v chunks a whole stage's L/p layers of all-reduces, v times the tensor-parallel time.",
        source=PRELUDE
        + STEP.replace(
            'tp_time = (6 if recompute == "full" else 4) * LLAMA.layers // pp * m * one',
            "# each micro-batch passes through the GPU's v chunks\n"
            '        tp_time = (6 if recompute == "full" else 4) * LLAMA.layers // pp * m * v * one',
        ),
        hints=("however many chunks",),
    ),
    Blind(
        name="step_virtual_stages_as_stages",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        cause="The interleaved bubble is (p - 1)/(v m + p - 1) with p the real stages; it counts the p x v virtual stages as stages, (p v - 1)/(v m + p v - 1), so interleaving makes its bubble larger instead of smaller.",
        source=PRELUDE
        + STEP.replace(
            "    bubble = (pp - 1) / (v * m + pp - 1)\n",
            "    stages = pp * v  # virtual stages in the pipeline\n"
            "    bubble = (stages - 1) / (v * m + stages - 1)\n",
        ),
        hints=("(p - 1)/(v m + p - 1)",),
    ),
    # ---------------- planner_defend ----------------
    Blind(
        name="defend_min_over_ranked",
        exercise_id="planner_defend",
        half="held2",
        correct=True,
        source=PRELUDE
        + MEM
        + STEP
        + TP8
        + RANKED
        + """
def defend():
    mine = my_layout()
    gib = predict_memory_gib(mine)
    secs = predict_step_seconds(mine)
    fastest = min(ranked, key=lambda x: x.step_time)
    ratio = secs / fastest.step_time
    # TP 8's four all-reduces per layer and micro-batch sit on NVLink (~1.5 s); the gradient
    # all-reduce over the network is ~0.7 s. The best (TP 4 x PP 4, v = 4) halves the
    # tensor-parallel cost, which is where the ~8% goes.
    answer = {}
    answer["layout"] = mine
    answer["memory_gib"] = gib
    answer["step_seconds"] = secs
    answer["bound"] = "NVLink"
    answer["vs_best"] = ratio
    answer["main_difference"] = "tensor-parallel" if ratio > 1.02 else "none"
    return answer
""",
    ),
    Blind(
        name="defend_memory_whole_cluster",
        exercise_id="planner_defend",
        half="held2",
        correct=False,
        cause="memory_gib is the predicted GiB on one GPU (about 56); it multiplies it by the 256 GPUs and reports the whole cluster's memory (about 14,300 GiB).",
        source=PRELUDE
        + MEM
        + STEP
        + TP8
        + RANKED
        + """
def defend():
    layout = my_layout()
    step = predict_step_seconds(layout)
    return dict(
        layout=layout,
        memory_gib=predict_memory_gib(layout) * CLUSTER.n_gpus,  # the whole job's memory
        step_seconds=step,
        bound="NVLink",
        vs_best=step / ranked[0].step_time,
        main_difference="tensor-parallel",
    )
""",
        hints=("the GPU count",),
    ),
    Blind(
        name="defend_predicts_the_best_layout",
        exercise_id="planner_defend",
        half="held2",
        correct=False,
        cause="memory_gib and step_seconds must be the predictions for its own layout, my_layout(); it feeds the planner's best layout (ranked[0]'s TP 4 x PP 4, v = 4) to its functions, so it reports 67 GiB and 9.7 s instead of 56 GiB and 10.3 s.",
        source=PRELUDE
        + MEM
        + STEP
        + TP8
        + RANKED
        + """
def defend():
    best = ranked[0]
    keys = ("dp", "tp", "pp", "zero_stage", "micro_batch_size", "recompute", "interleave")
    best_layout = {k: getattr(best, k) for k in keys}
    step = predict_step_seconds(best_layout)
    return dict(
        layout=my_layout(),
        memory_gib=predict_memory_gib(best_layout),
        step_seconds=step,
        bound="NVLink",
        vs_best=predict_step_seconds(my_layout()) / best.step_time,
        main_difference="tensor-parallel",
    )
""",
        hints=("its best layout",),
    ),
    Blind(
        name="defend_two_main_differences",
        exercise_id="planner_defend",
        half="held2",
        correct=False,
        cause='main_difference is one term, the string "tensor-parallel" here; it returns a list of two terms (["tensor-parallel", "data-parallel"]) instead of choosing the one that costs the most.',
        source=PRELUDE
        + MEM
        + STEP
        + TP8
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
        vs_best=step / ranked[0].step_time,
        # TP 8's all-reduces and the bigger gradient all-reduce over dp = 32 both cost it
        main_difference=["tensor-parallel", "data-parallel"],
    )
""",
        hints=("one of",),
    ),
]
