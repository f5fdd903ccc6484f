"""Held-out answers to lab 10's planner exercises, second held half (``half="held2"``).

Written blind on 2026-11-28 by a helper, from the lab's text (labs/10_model_parallel_lab.ipynb),
the reference solutions (solutions/10_model_parallel_lab.ipynb) and ``gpu_utils.many_gpus.parallelism``
only: neither the checkers, their tests, the first corpus (``lab10_planner.py``) nor the FAQ
were read. The mistakes are new ones, not those the first corpus already holds. Every source is
one notebook cell as the lab's check cell receives it: the lab's set-up cell (``P``,
``LLAMA``, ``CLUSTER``, ``BATCH_TOKENS``, ``H100``) and whatever earlier cells the answer needs.
Figures quoted in the causes are the planner's (``P.evaluate``) for this job. Most wrong
predictions are the reference solution's with one idea changed (``memory_variant``,
``step_variant``). 31 answers: 7 + 9 + 9 + 6 over the four exercises, 6 of them correct.
"""

from __future__ import annotations

import textwrap

from heldout import Blind


def cell(*parts: str) -> str:
    """One notebook cell made of the lab's earlier cells and the answer's own code."""
    return "\n\n".join(textwrap.dedent(p).strip("\n") for p in parts) + "\n"


SETUP = """
    import gpu_utils as gu

    P = gu.parallelism
    LLAMA = P.MODELS["Llama 3 70B"]
    CLUSTER = P.Cluster("H100-SXM", gpus_per_node=8, nodes=32)
    BATCH_TOKENS = 2**21
    H100 = gu.specs.get("H100-SXM")
"""

# The reference solutions' predictions (10.2 and 10.3), which 10.4's answers build on.
MEMORY = """
    def predict_memory_gib(layout):
        dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
        b, zero = layout["micro_batch_size"], layout["zero_stage"]
        m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)
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

RANKED = """
    def keeps_the_rules(x):
        stage_layers = LLAMA.layers // x.pp
        return x.tp <= 8 and LLAMA.layers % x.pp == 0 and stage_layers % x.interleave == 0


    ranked = [x for x in P.plan(LLAMA, CLUSTER, BATCH_TOKENS) if x.fits and keeps_the_rules(x)]
"""

REFERENCE_LAYOUT = """
    def my_layout():
        return dict(
            dp=32, tp=8, pp=1, zero_stage=1, micro_batch_size=1, recompute="none", interleave=1
        )
"""

TP8_PP4_LAYOUT = """
    def my_layout():
        return dict(
            dp=8, tp=8, pp=4, zero_stage=1, micro_batch_size=1, recompute="none", interleave=4
        )
"""

TP4_PP4_PLAIN_LAYOUT = """
    def my_layout():
        return dict(
            dp=16, tp=4, pp=4, zero_stage=1, micro_batch_size=1, recompute="none", interleave=1
        )
"""


def defence(layout: str, body: str) -> str:
    """A 10.4 cell: the set-up, the layout, the two predictions, the ranking and ``defend``."""
    return cell(SETUP, layout, MEMORY, STEP, RANKED, body)


LAYOUT = "planner_layout_fits"
MEM = "planner_memory_prediction"
TIME = "planner_step_time"
DEFEND = "planner_defend"

ANSWERS: list[Blind] = [
    # --- 10.1 planner_layout_fits ----------------------------------------------------------
    Blind(
        name="tp8_pp4_five_virtual_stages",
        exercise_id=LAYOUT,
        half="held2",
        correct=True,
        source=cell(
            SETUP,
            """
            def my_layout():
                # TP 8 in a node, 4 stages of 20 layers, each cut into 5 chunks of 4 layers;
                # dp = 256 / 32 = 8 replicas, m = 32 micro-batches (a multiple of p = 4), so the
                # bubble is 3 / (5 x 32 + 3), under 2%; ZeRO-1 shards the optimizer over dp.
                tp, pp = 8, 4
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
    ),
    Blind(
        name="pure_data_parallel_zero1",
        exercise_id=LAYOUT,
        half="held2",
        correct=False,
        cause=(
            "ZeRO-1 shards only the optimizer states: with neither tensor nor pipeline "
            "parallelism every GPU still keeps the bf16 weights and gradients of all 70.6e9 "
            "parameters (263 GiB) and all 80 layers' activations, 426 GiB in all."
        ),
        source=cell(
            """
            def my_layout():
                # no communication inside a layer at all: every GPU is a replica and ZeRO-1
                # spreads the optimizer states over all 256 of them
                return dict(
                    dp=256, tp=1, pp=1, zero_stage=1, micro_batch_size=1, recompute="none",
                    interleave=1,
                )
            """
        ),
    ),
    Blind(
        name="three_chunks_of_twenty_layers",
        exercise_id=LAYOUT,
        half="held2",
        correct=False,
        cause=(
            "With 4 stages of 20 layers, 3 virtual stages would be chunks of 6.67 layers: "
            "every interleaved chunk must hold the same whole number of layers, so v must "
            "divide 20 (2, 4 or 5)."
        ),
        source=cell(
            """
            def my_layout():
                # m = 256 / 16 = 16, a multiple of p = 4; three chunks per GPU cut the bubble
                # to 3 / (3 x 16 + 3)
                return dict(
                    dp=16, tp=4, pp=4, zero_stage=1, micro_batch_size=1, recompute="none",
                    interleave=3,
                )
            """
        ),
    ),
    Blind(
        name="recompute_as_boolean",
        exercise_id=LAYOUT,
        half="held2",
        correct=False,
        cause=(
            'recompute is one of the strings "none", "selective" or "full", not a boolean: '
            'no recomputation is recompute="none".'
        ),
        source=cell(
            """
            def my_layout():
                return dict(
                    dp=32, tp=8, pp=1, zero_stage=1, micro_batch_size=1, recompute=False,
                    interleave=1,
                )
            """
        ),
    ),
    Blind(
        name="zero2_with_pipeline",
        exercise_id=LAYOUT,
        half="held2",
        correct=False,
        cause=(
            "ZeRO-2 keeps only its shard of the gradients, so it reduce-scatters them over the "
            "network on each of the 16 micro-batches (3.2 s exposed) where ZeRO-1 reduces them "
            "once per step (0.34 s): the step is 1.3x the best."
        ),
        source=cell(
            """
            def my_layout():
                # the best shape, with gradients sharded too for more memory to spare
                return dict(
                    dp=16, tp=4, pp=4, zero_stage=2, micro_batch_size=1, recompute="none",
                    interleave=4,
                )
            """
        ),
    ),
    Blind(
        name="two_sequences_per_interleaved_micro_batch",
        exercise_id=LAYOUT,
        half="held2",
        correct=False,
        cause=(
            "Two sequences per micro-batch double every chunk's activations, and the first "
            "stage of the interleaved schedule holds v p + p - 1 = 19 chunks of them at once "
            "(95 GiB of activations, 115 GiB in all, over the 72 GiB)."
        ),
        source=cell(
            """
            def my_layout():
                # bigger micro-batches keep the matmuls busy; m = 256 / (16 x 2) = 8 is still
                # a multiple of p = 4
                return dict(
                    dp=16, tp=4, pp=4, zero_stage=1, micro_batch_size=2, recompute="none",
                    interleave=4,
                )
            """
        ),
    ),
    Blind(
        name="big_micro_batches_deep_bubble",
        exercise_id=LAYOUT,
        half="held2",
        correct=False,
        cause=(
            "With 4 sequences per micro-batch each replica gets only m = 256 / (32 x 4) = 2 "
            "micro-batches for 4 stages, so the bubble (p - 1)/(m + p - 1) idles 60% of the "
            "step: about 3x the best."
        ),
        source=cell(
            """
            def my_layout():
                # TP 2 x PP 4 = one node per replica; micro-batches of 4 sequences for large
                # matmuls, full recomputation to make room for them
                return dict(
                    dp=32, tp=2, pp=4, zero_stage=1, micro_batch_size=4, recompute="full",
                    interleave=1,
                )
            """
        ),
    ),
]


def memory_variant(old: str, new: str) -> str:
    """The reference prediction of 10.2 with one line changed (a learner's one mistake)."""
    assert old in MEMORY, old
    return cell(SETUP, MEMORY.replace(old, new))


def step_variant(*changes: tuple[str, str]) -> str:
    """The reference prediction of 10.3 with one idea changed (a learner's one mistake)."""
    text = STEP
    for old, new in changes:
        assert old in text, old
        text = text.replace(old, new)
    return cell(SETUP, text)


ANSWERS += [
    # --- 10.2 planner_memory_prediction ----------------------------------------------------
    Blind(
        name="gigabytes_by_hand_then_gib",
        exercise_id=MEM,
        half="held2",
        correct=True,
        source=cell(
            SETUP,
            """
            def predict_memory_gib(layout):
                dp, tp, pp = layout["dp"], layout["tp"], layout["pp"]
                v, b, zero = layout["interleave"], layout["micro_batch_size"], layout["zero_stage"]
                s, h, a, L = LLAMA.seq_len, LLAMA.hidden, LLAMA.heads, LLAMA.layers
                m = (BATCH_TOKENS // s) // (dp * b)

                # model states in GB: 2 + 2 + 12 bytes per parameter this GPU holds
                billions = LLAMA.params / (tp * pp) / 1e9
                weights = 2 * billions / (dp if zero >= 3 else 1)
                grads = 2 * billions / (dp if zero >= 2 else 1)
                adam = 12 * billions / (dp if zero >= 1 else 1)
                gathered = 4 * LLAMA.layer_params / tp / 1e9 if zero == 3 else 0.0

                # one layer, one micro-batch, in GB: everything split over t (sequence
                # parallelism); no dropout masks, flash attention keeps an fp32 LSE per head
                sbh = s * b * h / 1e9
                if layout["recompute"] == "full":
                    layer = 2 * sbh / tp
                else:
                    layer = sbh / tp * (32 + 4 * a / h)

                # count the first stage's chunks in flight by walking its warm-up
                if pp == 1:
                    held, chunk_layers = 1, L
                else:
                    warmup = min(2 * (pp - 1) + (v - 1) * pp if v > 1 else pp - 1, v * m - 1)
                    held, chunk_layers = warmup + 1, L // (pp * v)
                acts = layer * chunk_layers * held
                return (weights + grads + adam + gathered + acts) * 1e9 / 2**30
            """,
        ),
    ),
    Blind(
        name="per_token_activations_and_simulated_schedule",
        exercise_id=MEM,
        half="held2",
        correct=True,
        source=cell(
            SETUP,
            """
            def layer_bytes_per_token(tp, recompute):
                one_sequence = gu.memory.activation_bytes_per_layer(
                    LLAMA.seq_len, 1, LLAMA.hidden, LLAMA.heads, tp=tp,
                    sequence_parallel=tp > 1, recompute=recompute, dropout_masks=False,
                    attention="flash",
                )
                return one_sequence / LLAMA.seq_len


            def chunks_in_flight(pp, m, v):
                if pp == 1:
                    return 1
                if v == 1:
                    schedule = gu.pipeline.one_f_one_b(pp, m)
                else:
                    schedule = gu.pipeline.interleaved(pp, m, v)
                return gu.pipeline.in_flight(schedule)[0]


            def predict_memory_gib(layout):
                dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
                b = layout["micro_batch_size"]
                m = BATCH_TOKENS // (LLAMA.seq_len * dp * b)
                states = gu.memory.model_state_bytes(
                    LLAMA.params / (tp * pp), dp=dp, zero_stage=layout["zero_stage"]
                ).total
                if layout["zero_stage"] == 3:
                    states += 2 * 2 * LLAMA.layer_params / tp
                tokens_per_chunk = b * LLAMA.seq_len
                layers_per_chunk = LLAMA.layers // (pp * v)
                activations = (
                    layer_bytes_per_token(tp, layout["recompute"])
                    * tokens_per_chunk
                    * layers_per_chunk
                    * chunks_in_flight(pp, m, v)
                )
                return (states + activations) / 1024**3
            """,
        ),
        submit="predict_memory_gib",
    ),
    Blind(
        name="adam_without_master_weights",
        exercise_id=MEM,
        half="held2",
        correct=False,
        cause=(
            "Mixed-precision Adam keeps 12 bytes of fp32 state per parameter (a master copy of "
            "the weights, momentum and variance), not 8: it leaves out the fp32 master weights."
        ),
        source=memory_variant(
            "states = gu.memory.model_state_bytes(LLAMA.params / (tp * pp), dp=dp, zero_stage=zero)",
            "states = gu.memory.model_state_bytes(\n"
            "            LLAMA.params / (tp * pp), dp=dp, zero_stage=zero, optimizer_bytes=8\n"
            "        )  # Adam: momentum + variance, 4 bytes each",
        ),
    ),
    Blind(
        name="zero1_shards_gradients_too",
        exercise_id=MEM,
        half="held2",
        correct=False,
        cause=(
            "ZeRO-1 shards only the optimizer states over dp; the gradients stay whole on "
            "every rank (17.6 GB for TP 8) until ZeRO-2 shards them too."
        ),
        hints=("gradients / dp on ZeRO-1 layouts", "one ZeRO stage too early"),
        source=memory_variant(
            "states = gu.memory.model_state_bytes(LLAMA.params / (tp * pp), dp=dp, zero_stage=zero)",
            "# ZeRO-1 partitions the optimizer step, so each rank keeps the gradients it steps\n"
            "        stage = 2 if zero == 1 else zero\n"
            "        states = gu.memory.model_state_bytes(LLAMA.params / (tp * pp), dp=dp, zero_stage=stage)",
        ),
    ),
    Blind(
        name="activations_split_over_dp",
        exercise_id=MEM,
        half="held2",
        correct=False,
        cause=(
            "Data parallelism does not divide a GPU's activations: each rank keeps its own "
            "micro-batches' activations whole, so they depend on b, t, p and the schedule, "
            "not on dp."
        ),
        source=memory_variant(
            "activations = per_layer * LLAMA.layers / (pp * v) * chunks",
            "activations = per_layer * LLAMA.layers / (pp * v) * chunks / dp  # shared by replicas",
        ),
    ),
    Blind(
        name="p_in_flight_with_fewer_micro_batches",
        exercise_id=MEM,
        half="held2",
        correct=False,
        hints=("p micro-batches in flight on 1F1B layouts", "only m of them exist"),
        cause=(
            "1F1B's first stage holds min(p, m) micro-batches: when a replica has fewer "
            "micro-batches than stages (m < p) only m of them exist, not p."
        ),
        source=memory_variant("chunks = min(pp, m)", "chunks = pp  # 1F1B keeps p in flight"),
    ),
    Blind(
        name="interleaved_chunk_as_whole_stage",
        exercise_id=MEM,
        half="held2",
        correct=False,
        hints=("activations x v", "L/(p v) layers, a v-th of a stage"),
        cause=(
            "An interleaved chunk holds L/(p v) layers, a v-th of a stage; it counts each of "
            "the v p + p - 1 chunks in flight as a whole stage's L/p layers, v times too many "
            "activations."
        ),
        source=memory_variant(
            "activations = per_layer * LLAMA.layers / (pp * v) * chunks",
            "activations = per_layer * LLAMA.layers / pp * chunks  # layers of a stage per chunk",
        ),
    ),
    Blind(
        name="micro_batch_size_left_at_one",
        exercise_id=MEM,
        half="held2",
        correct=False,
        cause=(
            "A micro-batch of b sequences keeps b times one sequence's activations: it passes "
            "micro_batch=1 to activation_bytes_per_layer whatever the layout's b."
        ),
        source=memory_variant(
            "            LLAMA.seq_len,\n            b,\n",
            "            LLAMA.seq_len,\n            1,  # one micro-batch\n",
        ),
    ),
    Blind(
        name="every_layer_per_micro_batch",
        exercise_id=MEM,
        half="held2",
        correct=False,
        cause=(
            "A pipeline stage keeps activations only for its own L/p layers (L/(p v) per "
            "chunk): it multiplies every micro-batch in flight by all 80 layers of the model."
        ),
        source=memory_variant(
            "activations = per_layer * LLAMA.layers / (pp * v) * chunks",
            "activations = per_layer * LLAMA.layers / v * chunks  # each micro-batch: all layers",
        ),
    ),
]

ANSWERS += [
    # --- 10.3 planner_step_time ------------------------------------------------------------
    Blind(
        name="milliseconds_then_seconds_overhead_form",
        exercise_id=TIME,
        half="held2",
        correct=True,
        source=cell(
            SETUP,
            """
            def predict_step_seconds(layout):
                dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
                b, zero = layout["micro_batch_size"], layout["zero_stage"]
                full = layout["recompute"] == "full"
                s, h, L = LLAMA.seq_len, LLAMA.hidden, LLAMA.layers
                m = BATCH_TOKENS // s // (dp * b)
                ms = 1e3

                # compute on one GPU, in ms: 6N (8N with full recompute) plus the attention
                # term 12 L h s (16 with full recompute) and flash's recomputed scores 2 L h s
                attention = 12 * L * h * s
                per_token = (8 if full else 6) * LLAMA.params
                per_token += attention * (4 / 3 if full else 1) + attention / 6
                compute_ms = per_token * BATCH_TOKENS / CLUSTER.n_gpus / (0.5 * H100.bf16_dense_flops) * ms

                # TP: ring all-reduce of s b h bf16 values inside the node, 2 (t - 1)/t of it
                act = 2 * s * b * h
                ar_ms = 2 * (tp - 1) / tp * act / H100.nvlink_bandwidth * ms
                tp_ms = (6 if full else 4) * (L // pp) * m * ar_ms

                # the bubble as overhead on the busy time: (p - 1) / (v m) of it
                busy_ms = (compute_ms + tp_ms) * (1 + (pp - 1) / (v * m))

                # pipeline sends, 1/t of the activations each way per hop
                link = H100.network_bandwidth if tp * pp > 8 else H100.nvlink_bandwidth
                pp_ms = (v * m + pp - 2) * 2 * act / tp / link * ms if pp > 1 else 0.0

                # data parallelism: one GPU per node in the group whenever tp x pp >= 8
                grads = 2 * LLAMA.params / (tp * pp)
                per_node = max(1, min(dp, 8 // (tp * pp)))

                def collective_ms(op, nbytes):
                    return gu.collectives.estimate_time(
                        op, nbytes, dp, gpu=CLUSTER.gpu, gpus_per_node=per_node
                    ) * ms

                if zero == 2:
                    dp_ms = m * collective_ms("reduce_scatter", grads)
                    dp_ms += collective_ms("all_gather", grads)
                else:
                    dp_ms = collective_ms("all_reduce", grads)
                return (busy_ms + pp_ms + dp_ms) / ms
            """,
        ),
    ),
    Blind(
        name="sequence_parallel_collectives_and_ring_by_hand",
        exercise_id=TIME,
        half="held2",
        correct=True,
        source=cell(
            SETUP,
            """
            def ring_seconds(op, nbytes, n, bandwidth):
                # a ring moves (n - 1)/n of the buffer for a reduce-scatter or an all-gather
                if n == 1:
                    return 0.0
                factor = {"reduce_scatter": 1, "all_gather": 1, "all_reduce": 2}[op]
                return factor * (n - 1) / n * nbytes / bandwidth


            def predict_step_seconds(layout):
                dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
                b, zero, recompute = (
                    layout["micro_batch_size"],
                    layout["zero_stage"],
                    layout["recompute"],
                )
                m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)
                hw = gu.flops.hardware_flops_per_token(
                    LLAMA.params,
                    layers=LLAMA.layers,
                    d_model=LLAMA.hidden,
                    seq_len=LLAMA.seq_len,
                    recompute=recompute,
                    attention="flash",
                )
                compute = hw * BATCH_TOKENS / (dp * tp * pp) / (0.5 * gu.flops.peak_flops("H100-SXM"))

                # sequence parallelism: each all-reduce becomes a reduce-scatter + all-gather
                act = 2 * LLAMA.seq_len * b * LLAMA.hidden
                pair = ring_seconds("reduce_scatter", act, tp, H100.nvlink_bandwidth)
                pair += ring_seconds("all_gather", act, tp, H100.nvlink_bandwidth)
                passes = 6 if recompute == "full" else 4
                tensor_parallel = passes * (LLAMA.layers // pp) * m * pair

                stretched = (compute + tensor_parallel) / (1 - (pp - 1) / (v * m + pp - 1))

                pipeline = 0.0
                if pp > 1:
                    link = H100.network_bandwidth if tp * pp > 8 else H100.nvlink_bandwidth
                    pipeline = (v * m + pp - 2) * 2 * (act / tp) / link

                # data parallelism: the dp ranks are tp x pp GPUs apart; with tp x pp >= 8
                # each sits on its own node and its ring runs over its own NIC
                grads = 2 * LLAMA.params / (tp * pp)
                if tp * pp >= 8:
                    bw = H100.network_bandwidth
                else:  # several dp ranks per node: the nodes' NICs carry the ring between them
                    per_node = 8 // (tp * pp)
                    bw = min(H100.nvlink_bandwidth, per_node * H100.network_bandwidth)
                if zero == 2:
                    data_parallel = m * ring_seconds("reduce_scatter", grads, dp, bw)
                    data_parallel += ring_seconds("all_gather", grads, dp, bw)
                else:
                    data_parallel = ring_seconds("all_reduce", grads, dp, bw)
                return stretched + pipeline + data_parallel
            """,
        ),
        submit="predict_step_seconds",
    ),
    Blind(
        name="tensor_parallel_fp32_activations",
        exercise_id=TIME,
        half="held2",
        correct=False,
        cause=(
            "The tensor-parallel all-reduces move bf16 activations, 2 bytes per value, not "
            "4: it doubles the tensor-parallel time."
        ),
        source=step_variant(
            (
                'one = gu.collectives.estimate_time("all_reduce", act, tp, gpu=gpu, gpus_per_node=8)',
                "one = gu.collectives.estimate_time(\n"
                '                "all_reduce", 2 * act, tp, gpu=gpu, gpus_per_node=8\n'
                "            )  # activations reduced in fp32",
            )
        ),
    ),
    Blind(
        name="tensor_parallel_shard_bytes",
        exercise_id=TIME,
        half="held2",
        correct=False,
        cause=(
            "With sequence parallelism each GPU keeps 1/t of the activations, but every "
            "reduce-scatter and all-gather is sized by the whole s x b x h tensor: it divides "
            "the tensor-parallel bytes by t as well."
        ),
        source=step_variant(
            (
                'one = gu.collectives.estimate_time("all_reduce", act, tp, gpu=gpu, gpus_per_node=8)',
                "one = gu.collectives.estimate_time(\n"
                '                "all_reduce", act / tp, tp, gpu=gpu, gpus_per_node=8\n'
                "            )  # sequence parallel: each GPU holds s/t of the tokens",
            )
        ),
    ),
    Blind(
        name="bubble_added_not_stretched",
        exercise_id=TIME,
        half="held2",
        correct=False,
        cause=(
            "The bubble is (p - 1)/(v m + p - 1) of the step, so the busy time must be divided "
            "by 1 minus it; multiplying by 1 plus it is far too small when m is close to p."
        ),
        source=step_variant(
            (
                "return (compute + tp_time) / (1 - bubble) + pp_time + dp_time",
                "return (compute + tp_time) * (1 + bubble) + pp_time + dp_time",
            )
        ),
    ),
    Blind(
        name="dp_group_on_one_node",
        exercise_id=TIME,
        half="held2",
        correct=False,
        cause=(
            "Ranks are laid out TP innermost, so with tp x pp >= 8 a data-parallel group has one "
            "GPU per node and its collectives run over each GPU's own 400 Gb/s NIC, not NVLink "
            "plus eight NICs per node."
        ),
        hints=("one GPU per node", "own NIC"),
        source=step_variant(
            (
                "where = dict(gpu=gpu, gpus_per_node=per_node)",
                "where = dict(gpu=gpu, gpus_per_node=8)  # 8 GPUs per node",
            )
        ),
    ),
    Blind(
        name="fp8_peak",
        exercise_id=TIME,
        half="held2",
        correct=False,
        cause=(
            "The job's matmuls run in bf16, so MFU applies to the bf16 dense peak (990 "
            "TFLOP/s), not the FP8 one: its compute time is half the planner's."
        ),
        hints=("compute x 0.5", "dense peak", "FP8"),
        source=step_variant(
            (
                "compute = per_token * BATCH_TOKENS / n / (0.5 * gu.flops.peak_flops(gpu))",
                'compute = per_token * BATCH_TOKENS / n / (0.5 * gu.flops.peak_flops(gpu, "fp8"))',
            )
        ),
    ),
    Blind(
        name="zero2_all_reduces_per_micro_batch",
        exercise_id=TIME,
        half="held2",
        correct=False,
        cause=(
            "ZeRO-2 reduce-scatters the gradients on every micro-batch (each rank keeps only its "
            "shard), half an all-reduce's traffic; it counts a full all-reduce per micro-batch."
        ),
        hints=("on ZeRO-2 layouts", "half an all-reduce's traffic"),
        source=step_variant(
            (
                'scatter = gu.collectives.estimate_time("reduce_scatter", grads, dp, **where)',
                'scatter = gu.collectives.estimate_time("all_reduce", grads, dp, **where)',
            )
        ),
    ),
    Blind(
        name="micro_batches_of_the_whole_batch",
        exercise_id=TIME,
        half="held2",
        correct=False,
        cause=(
            "m is the number of micro-batches of one data-parallel rank, 256 / (dp x b); it "
            "counts the whole batch's 256 / b, so it runs dp times too many tensor-parallel "
            "all-reduces and pipeline sends and shrinks the bubble."
        ),
        hints=("m = 256 / b micro-batches per rank", "dp times too large"),
        source=step_variant(
            (
                "m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)",
                "m = BATCH_TOKENS // LLAMA.seq_len // b  # micro-batches per step",
            )
        ),
    ),
]

ANSWERS += [
    # --- 10.4 planner_defend ---------------------------------------------------------------
    Blind(
        name="tp8_pp4_interleaved_defended",
        exercise_id=DEFEND,
        half="held2",
        correct=True,
        source=defence(
            TP8_PP4_LAYOUT,
            """
            def defend():
                layout = my_layout()
                step = predict_step_seconds(layout)
                # TP 8's all-reduces over NVLink (about 1.5 s) outweigh the pipeline sends and
                # the gradients' all-reduce that cross the network (0.25 s together); against
                # the best (TP 4 x PP 4) it runs twice the tensor-parallel traffic per GPU,
                # while its bubble and data-parallel terms are smaller than the best's.
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
    ),
    Blind(
        name="vs_best_as_fraction_slower",
        exercise_id=DEFEND,
        half="held2",
        correct=False,
        cause=(
            "vs_best is the ratio of the two steps, step / best (about 1.08), not the fraction "
            "by which this layout is slower (0.08)."
        ),
        source=defence(
            REFERENCE_LAYOUT,
            """
            def defend():
                layout = my_layout()
                step = predict_step_seconds(layout)
                best = ranked[0].step_time
                return dict(
                    layout=layout,
                    memory_gib=predict_memory_gib(layout),
                    step_seconds=step,
                    bound="NVLink",
                    vs_best=(step - best) / best,  # how much slower than the best
                    main_difference="tensor-parallel",
                )
            """,
        ),
    ),
    Blind(
        name="main_difference_own_largest_term",
        exercise_id=DEFEND,
        half="held2",
        correct=False,
        cause=(
            "main_difference is the term that costs this layout the most seconds against the "
            "best, not its own largest term: both do the same FLOPs per GPU (8.3 s of compute), "
            "and the difference is TP 8's all-reduces (1.5 s against 0.6 s)."
        ),
        source=defence(
            REFERENCE_LAYOUT,
            """
            def defend():
                layout = my_layout()
                step = predict_step_seconds(layout)
                # compute is 8.3 s of the 10.5 s step: by far what this layout spends most on
                return dict(
                    layout=layout,
                    memory_gib=predict_memory_gib(layout),
                    step_seconds=step,
                    bound="NVLink",
                    vs_best=step / ranked[0].step_time,
                    main_difference="compute",
                )
            """,
        ),
    ),
    Blind(
        name="pipeline_across_nodes_called_network_bound",
        exercise_id=DEFEND,
        half="held2",
        correct=False,
        cause=(
            "Its pipeline sends and gradient all-reduce do cross the network, but they expose "
            "only about 0.25 s, while TP 8's all-reduces expose about 1.5 s over NVLink: the "
            "bound is NVLink."
        ),
        source=defence(
            TP8_PP4_LAYOUT,
            """
            def defend():
                layout = my_layout()
                step = predict_step_seconds(layout)
                # TP 8 x PP 4 = 32 GPUs, four nodes per replica: the pipeline's sends and the
                # gradients' all-reduce go between nodes, over 400 Gb/s instead of NVLink
                return {
                    "layout": layout,
                    "memory_gib": predict_memory_gib(layout),
                    "step_seconds": step,
                    "bound": "network",
                    "vs_best": step / ranked[0].step_time,
                    "main_difference": "tensor-parallel",
                }
            """,
        ),
    ),
    Blind(
        name="bubble_smaller_than_the_best",
        exercise_id=DEFEND,
        half="held2",
        correct=False,
        cause=(
            "With m = 32 micro-batches and v = 4 this layout's bubble (0.23 s) is smaller than "
            "the best's (0.42 s); what costs it most against the best is TP 8's all-reduces "
            "(1.5 s against TP 4's 0.6 s), tensor-parallel."
        ),
        source=defence(
            TP8_PP4_LAYOUT,
            """
            def defend():
                layout = my_layout()
                step = predict_step_seconds(layout)
                return {
                    "layout": layout,
                    "memory_gib": predict_memory_gib(layout),
                    "step_seconds": step,
                    "bound": "NVLink",
                    "vs_best": step / ranked[0].step_time,
                    "main_difference": "bubble",  # a pipeline always pays its bubble
                }
            """,
        ),
    ),
    Blind(
        name="plain_1f1b_blames_the_sends",
        exercise_id=DEFEND,
        half="held2",
        correct=False,
        cause=(
            "Against the best (the same TP 4 x PP 4 shape with 4 virtual stages) this plain "
            "1F1B layout loses most to its bubble, 3/19 of the step instead of 3/67 (1.7 s "
            "against 0.4 s); its pipeline sends cost less than the best's, not more."
        ),
        source=defence(
            TP4_PP4_PLAIN_LAYOUT,
            """
            def defend():
                layout = my_layout()
                step = predict_step_seconds(layout)
                # the best is my shape with interleaving; the pipeline is what differs
                return dict(
                    layout=layout,
                    memory_gib=predict_memory_gib(layout),
                    step_seconds=step,
                    bound="NVLink",
                    vs_best=step / ranked[0].step_time,
                    main_difference="pipeline",
                )
            """,
        ),
    ),
]
