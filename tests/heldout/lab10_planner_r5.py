"""Held-out answers (round 5, "held2") to the planner part of lab 10 (10.1 to 10.4).

Written blind on 2026-11-28 (23:34-23:45 UTC) by a helper session that never read the
checker (gpu_utils/exercises/, tests/test_exercises*, earlier rounds' files): only the learner's
lab, the reference solutions' code cells, gpu_utils/many_gpus/parallelism.py, memory.py, specs.py and the
signatures of the gu.memory / gu.flops / gu.collectives / gu.pipeline helpers, and the list of
earlier rounds' causes (the mistakes here are different ones).

Verified without the checker (scratch scripts in /tmp/lab10_planner_r5/, never in the repository):
every answer was run through ``heldout.submitted`` and compared with the reference solution's cells.
* planner_layout_fits: the returned layout against the lab's rules (written out from its text)
  and ``P.evaluate`` (fits in the 72 GiB usable, step within 1.2x of ``ranked[0]``); the correct
  ones fit at 0.994x and 1.116x the best; the figures quoted in the causes are ``P.evaluate``'s.
* planner_memory_prediction: against the reference ``predict_memory_gib`` on 20 layouts (ZeRO 0-3,
  recompute none/selective/full, pp 1/2/4/8/16, m < p with b > 1, v 1/2/4/5); the correct ones
  agree to 1e-6 on all, each wrong one is more than 5% off on 1 to 20 of them (6.1% to 78%).
* planner_step_time: against the reference ``predict_step_seconds`` on the 16 of those layouts
  with ZeRO 0-2; the correct one agrees to 1e-6, each wrong one is more than 5% off on 1 to 16
  of them (6.2% to 18.6% at most).
* planner_defend: the returned dict against the truth built from the reference functions and
  ``P.evaluate`` for the same layout (bound = the planner's bound; main_difference = the term of
  ``step_parts`` that grows most against ``ranked[0]``; vs_best within 12% of the planner's
  ratio): correct ones match on every key, each wrong one differs on the key its cause names.
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


def _cell(body: str) -> str:
    return PRELUDE + body


def _variant(base: str, old: str, new: str) -> str:
    """``base`` with one learner's change (which must be there to make)."""
    assert base.count(old) == 1, old
    return base.replace(old, new)


# A learner's memory prediction that the variants below change in one place each.
MEMORY = _cell("""
def predict_memory_gib(layout):
    dp, tp, pp = layout["dp"], layout["tp"], layout["pp"]
    v, b, zero = layout["interleave"], layout["micro_batch_size"], layout["zero_stage"]
    m = 256 // (dp * b)
    states = gu.memory.model_state_bytes(LLAMA.params / (tp * pp), dp=dp, zero_stage=zero)
    per_layer = gu.memory.activation_bytes_per_layer(
        LLAMA.seq_len, b, LLAMA.hidden, LLAMA.heads, tp=tp, sequence_parallel=tp > 1,
        recompute=layout["recompute"], dropout_masks=False, attention="flash",
    )
    if v == 1:
        in_flight = min(pp, m)  # micro-batches of L/p layers on the first stage
    else:
        in_flight = min(v * m, v * pp + pp - 1)  # chunks of L/(p v) layers
    activations = in_flight * per_layer * LLAMA.layers / (pp * v)
    gathered = 2 * 2 * LLAMA.layer_params / tp if zero == 3 else 0
    return (states.total + activations + gathered) / 2**30
""")


# A learner's step-time prediction that the variants below change in one place each.
STEP = _cell("""
def predict_step_seconds(layout):
    dp, tp, pp = layout["dp"], layout["tp"], layout["pp"]
    v, b, zero = layout["interleave"], layout["micro_batch_size"], layout["zero_stage"]
    recompute = layout["recompute"]
    gpu = CLUSTER.gpu
    m = 256 // (dp * b)
    flops = gu.flops.hardware_flops_per_token(
        LLAMA.params, layers=LLAMA.layers, d_model=LLAMA.hidden, seq_len=LLAMA.seq_len,
        recompute=recompute, attention="flash",
    )
    compute = flops * BATCH_TOKENS / CLUSTER.n_gpus / (0.5 * gu.flops.peak_flops(gpu))
    act = 2 * LLAMA.seq_len * b * LLAMA.hidden  # one micro-batch's bf16 activations
    tp_comm = 0.0
    if tp > 1:
        per_layer = 6 if recompute == "full" else 4
        one = gu.collectives.estimate_time("all_reduce", act, tp, gpu=gpu, gpus_per_node=8)
        tp_comm = per_layer * (LLAMA.layers // pp) * m * one
    bubble = (pp - 1) / (v * m + pp - 1)
    pp_comm = 0.0
    if pp > 1:
        link = H100.network_bandwidth if tp * pp > 8 else H100.nvlink_bandwidth
        pp_comm = (v * m + pp - 2) * 2 * (act / tp) / link
    grads = 2 * LLAMA.params / (tp * pp)
    per_node = max(1, min(dp, 8 // (tp * pp)))
    dp_comm = 0.0
    if dp > 1:
        if zero == 2:
            dp_comm = m * gu.collectives.estimate_time(
                "reduce_scatter", grads, dp, gpu=gpu, gpus_per_node=per_node
            ) + gu.collectives.estimate_time("all_gather", grads, dp, gpu=gpu, gpus_per_node=per_node)
        else:
            dp_comm = gu.collectives.estimate_time(
                "all_reduce", grads, dp, gpu=gpu, gpus_per_node=per_node
            )
    return (compute + tp_comm) / (1 - bubble) + pp_comm + dp_comm
""")


# What a learner's notebook holds by 10.4: the predictions above, the lab's ranking, a layout.
RANKED = """
def keeps_the_rules(x):
    stage_layers = LLAMA.layers // x.pp
    return x.tp <= 8 and LLAMA.layers % x.pp == 0 and stage_layers % x.interleave == 0


ranked = [x for x in P.plan(LLAMA, CLUSTER, BATCH_TOKENS) if x.fits and keeps_the_rules(x)]
"""
TP8 = """
def my_layout():
    return dict(dp=32, tp=8, pp=1, zero_stage=1, micro_batch_size=1, recompute="none", interleave=1)
"""
TP8_PP4 = """
def my_layout():
    return dict(dp=8, tp=8, pp=4, zero_stage=1, micro_batch_size=1, recompute="none", interleave=1)
"""


def _notebook(layout_cell: str, defend_cell: str) -> str:
    return MEMORY + STEP[len(PRELUDE) :] + RANKED + layout_cell + defend_cell


DEFEND = """
def defend():
    layout = my_layout()
    step = predict_step_seconds(layout)
    return dict(
        layout=layout,
        memory_gib=predict_memory_gib(layout),
        step_seconds=step,
        bound="NVLink",
        vs_best=step / ranked[0].step_time,
        main_difference="tensor-parallel",
    )
"""

ANSWERS = [
    # ---------------------------------------------------------------- 10.1 planner_layout_fits
    Blind(
        name="fits_interleave5_computed",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=True,
        source=_cell("""
def my_layout():
    tp, pp = 4, 4  # TP 4 stays in a node; 80 layers / 4 stages = 20, and 20 / 5 = 4 per chunk
    dp = CLUSTER.n_gpus // (tp * pp)
    v = 5
    m = BATCH_TOKENS // LLAMA.seq_len // dp
    assert LLAMA.layers % pp == 0 and (LLAMA.layers // pp) % v == 0 and m % pp == 0
    return {"dp": dp, "tp": tp, "pp": pp, "zero_stage": 1, "micro_batch_size": 1,
            "recompute": "none", "interleave": v}
"""),
    ),
    Blind(
        name="fits_tp8_pp4_plain",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=True,
        source=_cell("""
def my_layout():
    layout = dict(tp=8, pp=4, zero_stage=1, micro_batch_size=1, recompute="none", interleave=1)
    layout["dp"] = 256 // (layout["tp"] * layout["pp"])
    return layout
"""),
    ),
    Blind(
        name="fits_zero3_with_tp8",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=False,
        cause=(
            "ZeRO-3 is not needed once TP 8 fits with ZeRO-1; with tensor parallelism it gathers "
            "and reduce-scatters every block's weights and gradients over the network on every "
            "micro-batch (about 16 s of exposed traffic), so the step is about 2.6x the best."
        ),
        source=_cell("""
def my_layout():
    # shard everything to be safe on memory
    return dict(dp=32, tp=8, pp=1, zero_stage=3, micro_batch_size=1, recompute="none", interleave=1)
"""),
    ),
    Blind(
        name="fits_tp4_pp2_too_big",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=False,
        cause=(
            "TP 4 x PP 2 still leaves 8.8e9 parameters per GPU (35 GB of bf16 weights and "
            "gradients), and the first stage keeps 2 micro-batches of 40 layers' activations "
            "split only 4 ways: 76 GiB, over the 72 GiB usable."
        ),
        source=_cell("""
def my_layout():
    return dict(dp=32, tp=4, pp=2, zero_stage=1, micro_batch_size=1, recompute="none", interleave=1)
"""),
    ),
    Blind(
        name="fits_interleave2_more_chunks",
        hints=("with v = 4 fits",),
        exercise_id="planner_layout_fits",
        half="held2",
        correct=False,
        cause=(
            "With v = 2 the first stage holds v p + p - 1 = 11 chunks of 10 layers (110 layers' "
            "activations) against 19 chunks of 5 (95) with v = 4: the layout needs 74.6 GiB, "
            "over the 72 GiB usable, where the best's v = 4 fits."
        ),
        source=_cell("""
def my_layout():
    return dict(dp=16, tp=4, pp=4, zero_stage=1, micro_batch_size=1, recompute="none", interleave=2)
"""),
    ),
    Blind(
        name="fits_micro_batch_in_tokens",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=False,
        cause=(
            "micro_batch_size counts sequences per micro-batch (b = 1 here), not tokens: 8192 "
            "tokens per micro-batch gives m = 256 / (32 x 8192), not a whole number."
        ),
        source=_cell("""
def my_layout():
    return dict(dp=32, tp=8, pp=1, zero_stage=1, micro_batch_size=LLAMA.seq_len,
                recompute="none", interleave=1)
"""),
    ),
    Blind(
        name="fits_tp2_no_pipeline",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=False,
        cause=(
            "TP 2 without a pipeline leaves 35e9 parameters on each GPU, 141 GB of bf16 weights "
            "and gradients alone before the activations (215 GiB in all): ZeRO-1 shards only "
            "the optimizer states, so t x p must be much larger."
        ),
        source=_cell("""
def my_layout():
    # TP 2 costs little communication; ZeRO-1 over dp = 128 shards the optimizer states
    return dict(dp=128, tp=2, pp=1, zero_stage=1, micro_batch_size=1, recompute="none", interleave=1)
"""),
    ),
    # ---------------------------------------------------------- 10.2 planner_memory_prediction
    Blind(
        name="mem_simulated_schedule",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=True,
        source=_cell("""
def predict_memory_gib(layout):
    dp, tp, pp = layout["dp"], layout["tp"], layout["pp"]
    v, b, zero = layout["interleave"], layout["micro_batch_size"], layout["zero_stage"]
    m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)
    # the whole model's states with ZeRO over dp, then this GPU's 1/(tp pp) share of them
    states = gu.memory.model_state_bytes(LLAMA.params, dp=dp, zero_stage=zero)
    model_bytes = (states.parameters + states.gradients + states.optimizer) / (tp * pp)
    # how many chunks the busiest stage really holds: simulate the schedule itself
    if pp == 1:
        held = 1
    elif v == 1:
        held = max(gu.pipeline.in_flight(gu.pipeline.one_f_one_b(pp, m)))
    else:
        held = max(gu.pipeline.in_flight(gu.pipeline.interleaved(pp, m, v)))
    layers_per_chunk = LLAMA.layers // (pp * v)
    one_layer = gu.memory.activation_bytes_per_layer(
        LLAMA.seq_len, b, LLAMA.hidden, LLAMA.heads,
        tp=tp, sequence_parallel=tp > 1, recompute=layout["recompute"],
        dropout_masks=False, attention="flash",
    )
    act_bytes = held * layers_per_chunk * one_layer
    if zero == 3:
        act_bytes += 2 * (2 * LLAMA.layer_params / tp)  # two gathered bf16 layers
    return (model_bytes + act_bytes) / 2**30
"""),
    ),
    Blind(
        name="mem_by_hand_bytes",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=True,
        source=_cell("""
def predict_memory_gib(layout):
    dp, tp, pp = layout["dp"], layout["tp"], layout["pp"]
    v, b, zero = layout["interleave"], layout["micro_batch_size"], layout["zero_stage"]
    n = LLAMA.params / (tp * pp)  # parameters on this GPU
    weights = 2 * n / (dp if zero >= 3 else 1)
    grads = 2 * n / (dp if zero >= 2 else 1)
    adam = 12 * n / (dp if zero >= 1 else 1)  # fp32 master, momentum, variance
    m = 256 // (dp * b)
    chunks = 1 if pp == 1 else (min(pp, m) if v == 1 else min(v * m, v * pp + pp - 1))
    per_layer = gu.memory.activation_bytes_per_layer(
        LLAMA.seq_len, b, LLAMA.hidden, LLAMA.heads, tp=tp, sequence_parallel=tp > 1,
        recompute=layout["recompute"], dropout_masks=False, attention="flash",
    )
    acts = chunks * (LLAMA.layers / pp / v) * per_layer
    extra = 4 * LLAMA.layer_params / tp if zero == 3 else 0.0
    return (weights + grads + adam + acts + extra) / 2**30
"""),
    ),
    Blind(
        name="mem_dropout_default",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=False,
        cause=(
            "It leaves dropout_masks at its default (True), so every layer also counts the 2 sbh "
            "bytes of dropout masks that Llama 3, trained without dropout, never stores."
        ),
        source=_variant(
            MEMORY,
            'recompute=layout["recompute"], dropout_masks=False, ',
            'recompute=layout["recompute"], ',
        ),
    ),
    Blind(
        name="mem_zero_over_all_gpus",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=False,
        cause=(
            "ZeRO shards the model states over the dp ranks of a data-parallel group, not over "
            "all 256 GPUs: with tp x pp > 1 it divides the sharded states by tp x pp twice."
        ),
        source=_variant(
            MEMORY, "(tp * pp), dp=dp, zero_stage", "(tp * pp), dp=CLUSTER.n_gpus, zero_stage"
        ),
    ),
    Blind(
        name="mem_one_gathered_layer",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=False,
        cause=(
            "With ZeRO-3 the planner counts two gathered bf16 layers (the one computing and the "
            "one prefetched), 2 x 2 x layer_params / t bytes; it counts only one."
        ),
        source=_variant(MEMORY, "gathered = 2 * 2 * LLAMA", "gathered = 2 * LLAMA"),
    ),
    Blind(
        name="mem_1f1b_uses_interleaved_count",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=False,
        cause=(
            "Plain 1F1B (v = 1) keeps at most p micro-batches on the first stage; it applies the "
            "interleaved count v p + p - 1 to it too, which gives 2p - 1 when m is large."
        ),
        source=_variant(
            MEMORY,
            """    if v == 1:
        in_flight = min(pp, m)  # micro-batches of L/p layers on the first stage
    else:
        in_flight = min(v * m, v * pp + pp - 1)  # chunks of L/(p v) layers
""",
            """    if pp == 1:
        in_flight = 1
    else:  # chunks of L/(p v) layers on the first stage (v = 1: whole stages)
        in_flight = min(v * m, v * pp + pp - 1)
""",
        ),
    ),
    Blind(
        name="mem_scaled_by_usable_share",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=False,
        cause=(
            "It divides the bytes by the 0.9 usable share, but the planner's figure is the memory "
            "the GPU needs, which is then compared with the 72 GiB usable: it is 11% too large."
        ),
        source=_variant(
            MEMORY,
            "return (states.total + activations + gathered) / 2**30",
            "return (states.total + activations + gathered) / 0.9 / 2**30  # only 90% is usable",
        ),
    ),
    Blind(
        name="mem_selective_as_full",
        hints=("as full recomputation where the layout says selective",),
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=False,
        cause=(
            "It treats selective recomputation like full: selective drops only the attention "
            "scores (which flash never stores anyway), so a layer still keeps its 32 sbh/t of "
            "activations, not just its 2 sbh/t input."
        ),
        source=_variant(
            MEMORY,
            'recompute=layout["recompute"], dropout_masks=False',
            'recompute="none" if layout["recompute"] == "none" else "full",\n        dropout_masks=False',
        ),
    ),
    # ------------------------------------------------------------------ 10.3 planner_step_time
    Blind(
        name="step_per_replica_tokens",
        exercise_id="planner_step_time",
        half="held2",
        correct=True,
        source=_cell("""
def predict_step_seconds(layout):
    dp, tp, pp = layout["dp"], layout["tp"], layout["pp"]
    v, b = layout["interleave"], layout["micro_batch_size"]
    gpu = "H100-SXM"
    seqs_per_replica = BATCH_TOKENS // LLAMA.seq_len // dp
    m = seqs_per_replica // b
    # a replica's tokens, its FLOPs split over the tp x pp GPUs that hold it
    per_token = gu.flops.hardware_flops_per_token(
        LLAMA.params, layers=LLAMA.layers, d_model=LLAMA.hidden, seq_len=LLAMA.seq_len,
        recompute=layout["recompute"], attention="flash",
    )
    busy = per_token * seqs_per_replica * LLAMA.seq_len / (tp * pp)
    busy /= 0.5 * gu.flops.peak_flops(gpu)
    if tp > 1:  # per micro-batch and layer of my stage: 2 all-reduces forward, 2 backward
        n_ar = (4 + (2 if layout["recompute"] == "full" else 0)) * (LLAMA.layers // pp) * m
        msg = LLAMA.seq_len * b * LLAMA.hidden * 2
        busy += n_ar * gu.collectives.estimate_time("all_reduce", msg, tp, gpu=gpu, gpus_per_node=8)
    # idle share of the pipeline, from gu.pipeline
    total = busy / (1 - gu.pipeline.bubble_fraction(pp, m, v))
    if pp > 1:
        bw = H100.nvlink_bandwidth if tp * pp <= 8 else H100.network_bandwidth
        sends = 2 * (v * m + pp - 2)  # forward activations and backward gradients
        total += sends * (LLAMA.seq_len * b * LLAMA.hidden * 2 / tp) / bw
    if dp > 1:
        grad_bytes = 2 * LLAMA.params / tp / pp
        ranks_in_node = max(1, min(dp, 8 // (tp * pp)))
        est = lambda op: gu.collectives.estimate_time(  # noqa: E731
            op, grad_bytes, dp, gpu=gpu, gpus_per_node=ranks_in_node
        )
        if layout["zero_stage"] == 2:
            total += m * est("reduce_scatter") + est("all_gather")
        else:
            total += est("all_reduce")
    return total
"""),
    ),
    Blind(
        name="step_forward_all_reduces_only",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        cause=(
            "Megatron's tensor parallelism all-reduces twice per layer in the forward pass and "
            "twice in the backward (4 per layer, 6 with full recomputation); it counts only the "
            "forward's 2 (3 with full recomputation), half the tensor-parallel time."
        ),
        source=_variant(
            STEP,
            'per_layer = 6 if recompute == "full" else 4',
            'per_layer = 3 if recompute == "full" else 2  # attention + MLP',
        ),
    ),
    Blind(
        name="step_six_n_flops",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        cause=(
            "It counts 6N FLOPs per token (8N with full recomputation), the parameters' matmuls "
            "only, and leaves out attention's FLOPs over the 8192-token sequence, which "
            "hardware_flops_per_token adds (about 18% more compute here)."
        ),
        source=_variant(
            STEP,
            """    flops = gu.flops.hardware_flops_per_token(
        LLAMA.params, layers=LLAMA.layers, d_model=LLAMA.hidden, seq_len=LLAMA.seq_len,
        recompute=recompute, attention="flash",
    )
""",
            """    flops = (8 if recompute == "full" else 6) * LLAMA.params  # per token
""",
        ),
    ),
    Blind(
        name="step_sends_whole_activation",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        cause=(
            "With sequence parallelism each GPU of a stage holds and sends only 1/t of the "
            "micro-batch's activations across a stage boundary; it sends the whole s x b x h "
            "tensor from every GPU, t times the pipeline traffic."
        ),
        source=_variant(
            STEP,
            "pp_comm = (v * m + pp - 2) * 2 * (act / tp) / link",
            "pp_comm = (v * m + pp - 2) * 2 * act / link",
        ),
    ),
    Blind(
        name="step_dp_message_sharded",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        cause=(
            "Each data-parallel rank reduces the whole bf16 gradient of its tp x pp share, "
            "2 N / (tp x pp) bytes; it divides that message by dp as well, as if the ranks "
            "already held only their shard, so the collective's bytes are dp times too small."
        ),
        source=_variant(
            STEP,
            "grads = 2 * LLAMA.params / (tp * pp)",
            "grads = 2 * LLAMA.params / (tp * pp) / dp  # my share of the gradient",
        ),
    ),
    Blind(
        name="step_dp_ranks_per_node_no_pp",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        cause=(
            "Data-parallel ranks sit tp x pp GPUs apart (TP innermost, then PP), so a node holds "
            "8 / (tp x pp) of them; it uses 8 / tp, as if two ranks of a TP 4 x PP 2 layout shared "
            "a node, and prices part of the gradient traffic over NVLink."
        ),
        source=_variant(
            STEP,
            "per_node = max(1, min(dp, 8 // (tp * pp)))",
            "per_node = max(1, min(dp, 8 // tp))  # dp ranks in one node",
        ),
    ),
    Blind(
        name="step_bubble_stretches_compute_only",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        cause=(
            "The tensor-parallel all-reduces sit on the critical path of every micro-batch, so the "
            "bubble stretches them with the compute, (compute + tp) / (1 - bubble); it stretches "
            "the compute alone and adds the all-reduces afterwards."
        ),
        source=_variant(
            STEP,
            "return (compute + tp_comm) / (1 - bubble) + pp_comm + dp_comm",
            "return compute / (1 - bubble) + tp_comm + pp_comm + dp_comm",
        ),
    ),
    # ---------------------------------------------------------------------- 10.4 planner_defend
    Blind(
        name="defend_tp8_pp4_terms_from_planner_parts",
        exercise_id="planner_defend",
        half="held2",
        correct=True,
        source=_notebook(
            TP8_PP4,
            """
def defend():
    layout = my_layout()
    step = predict_step_seconds(layout)
    best = ranked[0]
    # which term costs me most against the best: the planner's parts, term by term
    mine = P.evaluate(LLAMA, CLUSTER, BATCH_TOKENS, **layout)
    extra = {k: mine.step_parts[k] - best.step_parts[k] for k in best.step_parts}
    worst = max(extra, key=extra.get)
    if step / best.step_time < 1.02:
        worst = "none"
    # TP 8 inside the node: 4 all-reduces per layer and micro-batch over NVLink
    bound = max(mine.exposed, key=mine.exposed.get)
    if mine.exposed[bound] < 0.01 * step:
        bound = "compute"
    return {"layout": layout, "memory_gib": predict_memory_gib(layout), "step_seconds": step,
            "bound": bound, "vs_best": step / best.step_time, "main_difference": worst}
""",
        ),
    ),
    Blind(
        name="defend_tp8_bound_from_own_pieces",
        exercise_id="planner_defend",
        half="held2",
        correct=True,
        source=_notebook(
            TP8,
            """
def defend():
    layout = my_layout()
    gpu = CLUSTER.gpu
    m = 256 // (layout["dp"] * layout["micro_batch_size"])
    # my own exposed communication, link by link: TP 8 all-reduces stay on NVLink,
    # the gradients' all-reduce over dp = 32 crosses the network (one rank per node)
    act = 2 * LLAMA.seq_len * LLAMA.hidden
    nvlink = 4 * LLAMA.layers * m * gu.collectives.estimate_time("all_reduce", act, 8, gpu=gpu)
    network = gu.collectives.estimate_time(
        "all_reduce", 2 * LLAMA.params / 8, 32, gpu=gpu, gpus_per_node=1
    )
    step = predict_step_seconds(layout)
    bound = "NVLink" if nvlink >= network else "network"
    assert max(nvlink, network) > 0.01 * step
    return {
        "layout": layout,
        "memory_gib": predict_memory_gib(layout),
        "step_seconds": step,
        "bound": bound,
        "vs_best": step / min(x.step_time for x in ranked),
        "main_difference": "tensor-parallel",  # TP 8 against the best's TP 4
    }
""",
        ),
    ),
    Blind(
        name="defend_bound_names_the_term",
        exercise_id="planner_defend",
        half="held2",
        correct=False,
        cause=(
            'bound names the link whose exposed communication costs most ("NVLink" for TP 8\'s '
            'all-reduces), or "compute"; it gives the term, "tensor-parallel", instead of the link.'
        ),
        source=_notebook(TP8, _variant(DEFEND, 'bound="NVLink"', 'bound="tensor-parallel"')),
    ),
    Blind(
        name="defend_layout_is_the_function",
        exercise_id="planner_defend",
        half="held2",
        correct=False,
        cause=(
            "layout must be the dict my_layout() returns; it hands over the function my_layout "
            "itself (not called)."
        ),
        source=_notebook(
            TP8,
            _variant(DEFEND, "        layout=layout,\n", "        layout=my_layout,\n"),
        ),
    ),
    Blind(
        name="defend_tp8_pp4_bubble",
        exercise_id="planner_defend",
        half="held2",
        correct=False,
        cause=(
            "This TP 8 x PP 4 layout's 1F1B bubble (3/35) does cost about 0.5 s more than the "
            "best's interleaved one, but TP 8's all-reduces cost about 0.9 s more than TP 4's: "
            "the main difference is tensor-parallel, not the bubble."
        ),
        source=_notebook(
            TP8_PP4,
            _variant(DEFEND, 'main_difference="tensor-parallel"', 'main_difference="bubble"'),
        ),
    ),
    Blind(
        name="defend_vs_best_compute_time",
        exercise_id="planner_defend",
        half="held2",
        correct=False,
        cause=(
            "vs_best divides by the best layout's whole step time, ranked[0].step_time (9.7 s); "
            "it divides by its compute time only (8.3 s), so the ratio is about 1.24, not 1.08."
        ),
        source=_notebook(
            TP8,
            _variant(
                DEFEND,
                "vs_best=step / ranked[0].step_time",
                "vs_best=step / ranked[0].compute_time",
            ),
        ),
    ),
    Blind(
        name="defend_tp8_data_parallel",
        exercise_id="planner_defend",
        half="held2",
        correct=False,
        cause=(
            "Its gradient all-reduce over dp = 32 costs about 0.4 s more than the best's over "
            "dp = 16, but TP 8's all-reduces cost about 0.9 s more than TP 4's: the main "
            "difference is tensor-parallel, not data-parallel."
        ),
        source=_notebook(
            TP8,
            _variant(
                DEFEND, 'main_difference="tensor-parallel"', 'main_difference="data-parallel"'
            ),
        ),
    ),
]
