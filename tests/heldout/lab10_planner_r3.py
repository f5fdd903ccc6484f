"""Held-out answers (third blind round, half "held2") to lab 10's planner exercises.

Written blind on 2026-11-28 by a helper, from the lab text (labs/10_model_parallel_lab.ipynb),
chapter 10, the reference solutions' code cells and the public helpers (gpu_utils/*.py outside
exercises/, gu.parallelism as the model the predictions are compared to); the checker, the tests
and the other corpora were not read, and no check cell was run. The mistakes are new against the
cause sentences of the earlier rounds (/tmp/prompts/lab10_existing_r3.txt).

Verified with a scratch script outside the repository: every cell runs (heldout.submitted); each
correct answer matches gu.parallelism.evaluate (memory within 5%, step time within 10%) on the
lab's kinds of layouts (ZeRO-0 to 3, recomputation, m < p, interleaved with v = 2, 4 and 5) or
keeps the rules, fits and is within 1.2x of the best; each wrong answer differs from it beyond the
lab's tolerance on at least one such layout (or breaks the rule its cause names).
"""

from heldout import Blind

_SETUP = """\
import gpu_utils as gu

P = gu.parallelism
LLAMA = P.MODELS["Llama 3 70B"]
CLUSTER = P.Cluster("H100-SXM", gpus_per_node=8, nodes=32)
BATCH_TOKENS = 2**21
H100 = gu.specs.get("H100-SXM")
"""

# --------------------------------------------------------------------------------------------
# 10.2 memory: a correct body, reused by the defend answers
_MEMORY = """
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

# 10.3 step time: a correct body, reused by the defend answers
_STEP = """
def predict_step_seconds(layout):
    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
    b, zero, recompute = layout["micro_batch_size"], layout["zero_stage"], layout["recompute"]
    gpu = CLUSTER.gpu
    m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)
    per_token = gu.flops.hardware_flops_per_token(
        LLAMA.params, layers=LLAMA.layers, d_model=LLAMA.hidden, seq_len=LLAMA.seq_len,
        recompute=recompute, attention="flash",
    )
    compute = per_token * BATCH_TOKENS / CLUSTER.n_gpus / (0.5 * gu.flops.peak_flops(gpu))
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

_RANKED = """

def keeps_the_rules(x):
    stage_layers = LLAMA.layers // x.pp
    return x.tp <= 8 and LLAMA.layers % x.pp == 0 and stage_layers % x.interleave == 0


ranked = [x for x in P.plan(LLAMA, CLUSTER, BATCH_TOKENS) if x.fits and keeps_the_rules(x)]
"""

_MY_LAYOUT = """

def my_layout():
    return dict(dp=8, tp=8, pp=4, zero_stage=1, micro_batch_size=1, recompute="none", interleave=2)
"""

_DEFEND_SETUP = _SETUP + _MY_LAYOUT + _MEMORY + _STEP + _RANKED

ANSWERS = [
    # ---------------------------------------------------------------- planner_layout_fits
    Blind(
        name="tp8_pp8_dp_from_division",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=True,
        source=_SETUP
        + """
def my_layout():
    tp, pp = 8, 8  # a node per stage, 10 layers per stage
    dp = CLUSTER.n_gpus // (tp * pp)
    layout = {"dp": dp, "tp": tp, "pp": pp}
    layout.update(zero_stage=1, micro_batch_size=1, recompute="none", interleave=1)
    return layout
""",
    ),
    Blind(
        name="pipeline_only_activations_unsplit",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=False,
        cause=(
            "Without tensor parallelism nothing splits a layer's activations (2 GiB per "
            "sequence per layer), and the first of 8 stages holds 8 micro-batches of its 10 "
            "layers, 160 GiB: pipeline stages divide the weights, not the activations the "
            "first stage keeps, so the layout needs about 196 GiB."
        ),
        source=_SETUP
        + """
def my_layout():
    # 8 stages divide the 70.6e9 parameters like TP 8 would, without any all-reduce
    return dict(dp=32, tp=1, pp=8, zero_stage=1, micro_batch_size=1, recompute="none", interleave=1)
""",
    ),
    Blind(
        name="tp4_zero2_no_pipeline_just_over",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=False,
        cause=(
            "ZeRO-2 shards the gradients and optimizer states, but TP 4 without a pipeline "
            "still keeps 17.6e9 bf16 parameters (33 GiB) and all 80 layers' activations split "
            "only 4 ways (40 GiB): 76.5 GiB, over the 72 GiB usable."
        ),
        source=_SETUP
        + """
def my_layout():
    return dict(dp=64, tp=4, pp=1, zero_stage=2, micro_batch_size=1, recompute="none", interleave=1)
""",
    ),
    Blind(
        name="five_stages_240_gpus",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=False,
        cause=(
            "5 stages divide the 80 layers but not the 256 GPUs: with TP 8, dp = 256 // 40 = 6 "
            "gives dp x tp x pp = 240, so the number of stages must divide 256 / 8 = 32 as well."
        ),
        source=_SETUP
        + """
def my_layout():
    tp, pp = 8, 5  # 16 layers per stage
    return dict(dp=CLUSTER.n_gpus // (tp * pp), tp=tp, pp=pp, zero_stage=1,
                micro_batch_size=1, recompute="none", interleave=1)
""",
    ),
    Blind(
        name="key_zero_instead_of_zero_stage",
        exercise_id="planner_layout_fits",
        half="held2",
        correct=False,
        cause=(
            "The layout's key is zero_stage, not zero: the dict must have exactly the seven "
            "keys dp, tp, pp, zero_stage, micro_batch_size, recompute and interleave."
        ),
        source=_SETUP
        + """
def my_layout():
    return dict(dp=32, tp=8, pp=1, zero=1, micro_batch_size=1, recompute="none", interleave=1)
""",
    ),
    # ---------------------------------------------------------- planner_memory_prediction
    Blind(
        name="bytes_by_term_with_helper",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=True,
        source=_SETUP
        + """
def _first_stage_chunks(p, m, v):
    # model chunks (L/(p v) layers each) whose activations the first stage holds at once
    if p == 1:
        return 1
    return min(p, m) if v == 1 else min(v * m, v * p + p - 1)


def predict_memory_gib(layout):
    t, p, d = layout["tp"], layout["pp"], layout["dp"]
    v, b = layout["interleave"], layout["micro_batch_size"]
    zero, rc = layout["zero_stage"], layout["recompute"]
    psi = LLAMA.params / t / p
    weights = 2 * psi / (d if zero == 3 else 1)
    grads = 2 * psi / (d if zero >= 2 else 1)
    adam = 12 * psi / (d if zero >= 1 else 1)
    sbh = LLAMA.seq_len * b * LLAMA.hidden
    if rc == "full":
        layer = 2 * sbh / t
    else:  # flash keeps one fp32 log-sum-exp per head and token; no dropout in Llama
        layer = sbh / t * (32 + 4 * LLAMA.heads / LLAMA.hidden)
    m = (BATCH_TOKENS // LLAMA.seq_len) // (d * b)
    acts = layer * (LLAMA.layers / (p * v)) * _first_stage_chunks(p, m, v)
    gathered = 4 * LLAMA.layer_params / t if zero == 3 else 0
    return (weights + grads + adam + acts + gathered) / 1024**3
""",
    ),
    Blind(
        name="simulated_schedule_in_flight",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=True,
        source=_SETUP
        + """
def predict_memory_gib(layout):
    L = dict(layout)
    n_seq = BATCH_TOKENS // LLAMA.seq_len
    m = n_seq // (L["dp"] * L["micro_batch_size"])
    if L["pp"] == 1:
        held = 1
    elif L["interleave"] == 1:
        held = gu.pipeline.in_flight(gu.pipeline.one_f_one_b(L["pp"], m))[0]
    else:
        held = gu.pipeline.in_flight(gu.pipeline.interleaved(L["pp"], m, L["interleave"]))[0]
    layers_per_chunk = LLAMA.layers // (L["pp"] * L["interleave"])
    one_layer = gu.memory.activation_bytes_per_layer(
        seq_len=LLAMA.seq_len,
        micro_batch=L["micro_batch_size"],
        hidden=LLAMA.hidden,
        n_heads=LLAMA.heads,
        tp=L["tp"],
        sequence_parallel=L["tp"] > 1,
        recompute=L["recompute"],
        dropout_masks=LLAMA.dropout,
        attention="flash",
    )
    states = gu.memory.model_state_bytes(
        LLAMA.params / (L["tp"] * L["pp"]), dp=L["dp"], zero_stage=L["zero_stage"]
    )
    total = states.parameters + states.gradients + states.optimizer
    total += one_layer * layers_per_chunk * held
    if L["zero_stage"] == 3:
        total += 2 * 2 * LLAMA.layer_params / L["tp"]
    return total / 2**30
""",
    ),
    Blind(
        name="tp_not_passed_to_activations",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=False,
        cause=(
            "It passes sequence_parallel=True but not tp= to activation_bytes_per_layer, "
            "which then assumes t = 1: none of a layer's activations are divided by the "
            "tensor-parallel degree, t times too many."
        ),
        source=_SETUP
        + """
def predict_memory_gib(layout):
    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
    b, zero = layout["micro_batch_size"], layout["zero_stage"]
    m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)
    states = gu.memory.model_state_bytes(LLAMA.params / (tp * pp), dp=dp, zero_stage=zero)
    per_layer = gu.memory.activation_bytes_per_layer(
        LLAMA.seq_len, b, LLAMA.hidden, LLAMA.heads, sequence_parallel=True,
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
        name="m_ignores_micro_batch_size",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=False,
        hints=("micro-batches in flight from m = 256 / dp", "m = 256 / (dp x b)"),
        cause=(
            "The micro-batches per rank are m = 256 / (dp x b): it takes m = 256 / dp, so with "
            "b > 1 and few micro-batches the first stage is counted as holding min(p, m) "
            "micro-batches that do not exist."
        ),
        source=_SETUP
        + """
def predict_memory_gib(layout):
    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
    b, zero = layout["micro_batch_size"], layout["zero_stage"]
    m = BATCH_TOKENS // LLAMA.seq_len // dp  # micro-batches per data-parallel rank
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
""",
    ),
    Blind(
        name="interleaved_warmup_without_vm_cap",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=False,
        hints=("v p + p - 1 chunks in flight on interleaved layouts", "only v m chunks"),
        cause=(
            "The interleaved first stage holds min(v m, v p + p - 1) chunks: when m = p there "
            "are only v m chunks to run, but it always counts v p + p - 1 (23 instead of 20 "
            "for p = 4, m = 4, v = 5)."
        ),
        source=_SETUP
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
    else:  # Megatron's warm-up: 2 (p - 1) + (v - 1) p forwards, plus the one running
        chunks = 2 * (pp - 1) + (v - 1) * pp + 1
    activations = per_layer * LLAMA.layers / (pp * v) * chunks
    gathered = 2 * 2 * LLAMA.layer_params / tp if zero == 3 else 0.0
    return (states.total + activations + gathered) / 2**30
""",
    ),
    Blind(
        name="mib_for_gib",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=False,
        cause=(
            "It divides the bytes by 2**20 (MiB) instead of 2**30 (GiB), so every figure is "
            "1024 times too large."
        ),
        source=_SETUP
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
    chunks = 1 if pp == 1 else (min(pp, m) if v == 1 else min(v * m, v * pp + pp - 1))
    activations = per_layer * LLAMA.layers / (pp * v) * chunks
    gathered = 2 * 2 * LLAMA.layer_params / tp if zero == 3 else 0.0
    GiB = 1024 * 1024
    return (states.total + activations + gathered) / GiB
""",
    ),
    Blind(
        name="zero3_gathered_not_split_by_t",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=False,
        cause=(
            "With ZeRO-3 the two gathered layers are each GPU's tensor-parallel shard of them, "
            "2 x 2 x layer_params / t bytes: it leaves out the / t and counts whole layers."
        ),
        source=_SETUP
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
    gathered = 0.0
    if zero == 3:  # the layer computing and the next one prefetched, bf16
        gathered = 2 * 2 * LLAMA.layer_params
    return (states.total + activations + gathered) / 2**30
""",
    ),
    Blind(
        name="optimizer_bytes_sixteen",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=False,
        cause=(
            "The 16 bytes per parameter are the total of mixed-precision Adam; the optimizer "
            "states are 12 of them (fp32 master weights, momentum, variance): passing "
            "optimizer_bytes=16 counts 20 bytes per parameter."
        ),
        source=_SETUP
        + """
def predict_memory_gib(layout):
    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
    b, zero = layout["micro_batch_size"], layout["zero_stage"]
    m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)
    states = gu.memory.model_state_bytes(
        LLAMA.params / (tp * pp), dp=dp, zero_stage=zero, optimizer_bytes=16
    )  # mixed-precision Adam: 16 bytes per parameter
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
    ),
    Blind(
        name="micro_batch_counted_twice",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=False,
        cause=(
            "activation_bytes_per_layer already counts the b sequences of a micro-batch "
            "(micro_batch=b); multiplying its result by b again counts b squared sequences."
        ),
        source=_SETUP
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
    per_micro_batch = per_layer * b  # b sequences per micro-batch
    if pp == 1:
        chunks = 1
    elif v == 1:
        chunks = min(pp, m)
    else:
        chunks = min(v * m, v * pp + pp - 1)
    activations = per_micro_batch * LLAMA.layers / (pp * v) * chunks
    gathered = 2 * 2 * LLAMA.layer_params / tp if zero == 3 else 0.0
    return (states.total + activations + gathered) / 2**30
""",
    ),
    Blind(
        name="gradients_left_out",
        exercise_id="planner_memory_prediction",
        half="held2",
        correct=False,
        cause=(
            "It adds the parameters and the optimizer states but leaves out the bf16 "
            "gradients (2 bytes per parameter, sharded over dp only from ZeRO-2 on)."
        ),
        source=_SETUP
        + """
def predict_memory_gib(layout):
    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
    b, zero = layout["micro_batch_size"], layout["zero_stage"]
    m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)
    st = gu.memory.model_state_bytes(LLAMA.params / (tp * pp), dp=dp, zero_stage=zero)
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
    weights_and_adam = st.parameters + st.optimizer
    return (weights_and_adam + activations + gathered) / 2**30
""",
    ),
    # ------------------------------------------------------------------ planner_step_time
    Blind(
        name="busy_times_slots_over_work",
        exercise_id="planner_step_time",
        half="held2",
        correct=True,
        source=_SETUP
        + """
def _allreduce(nbytes, n, per_node):
    return gu.collectives.estimate_time("all_reduce", nbytes, n, gpu="H100-SXM", gpus_per_node=per_node)


def predict_step_seconds(layout):
    t, p, d = layout["tp"], layout["pp"], layout["dp"]
    v, b = layout["interleave"], layout["micro_batch_size"]
    m = (BATCH_TOKENS // LLAMA.seq_len) // (d * b)
    flops = gu.flops.hardware_flops_per_token(
        LLAMA.params, layers=LLAMA.layers, d_model=LLAMA.hidden, seq_len=LLAMA.seq_len,
        recompute=layout["recompute"], attention="flash",
    )
    tokens_per_gpu = BATCH_TOKENS / d / (t * p)
    compute = tokens_per_gpu * flops / (H100.peak_flops("bf16") * 0.5)
    msg = 2 * LLAMA.seq_len * b * LLAMA.hidden  # bf16 activations of one micro-batch
    per_layer = 6 if layout["recompute"] == "full" else 4
    tensor = per_layer * (LLAMA.layers // p) * m * _allreduce(msg, t, 8) if t > 1 else 0.0
    # the step is v m + p - 1 slots of which v m do work: stretch the busy time by that ratio
    busy = compute + tensor
    step = busy * (v * m + p - 1) / (v * m)
    if p > 1:
        bw = H100.nvlink_bandwidth if t * p <= 8 else H100.network_bandwidth
        step += 2 * (v * m + p - 2) * (msg / t) / bw
    if d > 1:
        shard = 2 * LLAMA.params / (t * p)
        near = max(1, min(d, 8 // (t * p)))
        if layout["zero_stage"] == 2:
            rs = gu.collectives.estimate_time("reduce_scatter", shard, d, gpus_per_node=near)
            ag = gu.collectives.estimate_time("all_gather", shard, d, gpus_per_node=near)
            step += m * rs + ag
        else:
            step += _allreduce(shard, d, near)
    return step
""",
    ),
    Blind(
        name="nccl_cluster_time_milliseconds",
        exercise_id="planner_step_time",
        half="held2",
        correct=True,
        source=_SETUP
        + """
def predict_step_seconds(layout):
    dp, tp, pp = layout["dp"], layout["tp"], layout["pp"]
    v = layout["interleave"] if pp > 1 else 1
    b, zero, rc = layout["micro_batch_size"], layout["zero_stage"], layout["recompute"]
    sequences = BATCH_TOKENS // LLAMA.seq_len
    m = sequences // dp // b
    parts_ms = {}
    hw = gu.flops.hardware_flops_per_token(
        LLAMA.params, layers=LLAMA.layers, d_model=LLAMA.hidden, seq_len=LLAMA.seq_len,
        recompute=rc, attention="flash",
    )
    peak = gu.flops.peak_flops("H100-SXM", "bf16")
    parts_ms["compute"] = 1e3 * hw * BATCH_TOKENS / (dp * tp * pp) / (0.5 * peak)
    act = 2 * LLAMA.seq_len * b * LLAMA.hidden
    n_ar = (6 if rc == "full" else 4) * (LLAMA.layers // pp) * m
    parts_ms["tp"] = 0.0
    if tp > 1:
        parts_ms["tp"] = 1e3 * gu.collectives.cluster_time(
            "all_reduce", act, tp, gpu="H100-SXM", gpus_per_node=8, messages=1
        ) * n_ar
    bubble = (pp - 1) / (v * m + pp - 1)
    parts_ms["bubble"] = (parts_ms["compute"] + parts_ms["tp"]) * bubble / (1 - bubble)
    parts_ms["pp"] = 0.0
    if pp > 1:
        link = H100.network_bandwidth if tp * pp > 8 else H100.nvlink_bandwidth
        parts_ms["pp"] = 1e3 * (v * m + pp - 2) * (2 * act / tp) / link
    parts_ms["dp"] = 0.0
    if dp > 1:
        grads = 2 * LLAMA.params / (tp * pp)
        per_node = 8 // (tp * pp) if tp * pp < 8 else 1
        per_node = min(per_node, dp)
        if zero == 2:
            rs = gu.collectives.estimate_time("reduce_scatter", grads, dp, gpus_per_node=per_node)
            ag = gu.collectives.estimate_time("all_gather", grads, dp, gpus_per_node=per_node)
            parts_ms["dp"] = 1e3 * (m * rs + ag)
        else:
            parts_ms["dp"] = 1e3 * gu.collectives.estimate_time(
                "all_reduce", grads, dp, gpus_per_node=per_node
            )
    return sum(parts_ms.values()) / 1e3
""",
    ),
    Blind(
        name="tp_allreduce_priced_over_network",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        cause=(
            "The t GPUs of a tensor-parallel group sit in one node and all-reduce over NVLink; "
            "passing gpus_per_node=1 to estimate_time prices every one of those all-reduces "
            "over the 400 Gb/s network, many times too slow."
        ),
        source=_SETUP
        + _STEP.replace(
            'one = gu.collectives.estimate_time("all_reduce", act, tp, gpu=gpu, gpus_per_node=8)',
            'one = gu.collectives.estimate_time("all_reduce", act, tp, gpu=gpu, gpus_per_node=1)',
        ),
    ),
    Blind(
        name="bubble_large_m_approximation",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        hints=("(p - 1)/(v m) as its share of the step", "the large-m approximation"),
        cause=(
            "It uses the bubble's large-m approximation (p - 1)/(v m) instead of "
            "(p - 1)/(v m + p - 1): with few micro-batches per stage (m close to p) the idle "
            "share it divides by is far too large, even above 1."
        ),
        source=_SETUP
        + _STEP.replace(
            "bubble = (pp - 1) / (v * m + pp - 1)",
            "bubble = (pp - 1) / (v * m)  # idle share of the step",
        ),
    ),
    Blind(
        name="step_m_ignores_micro_batch_size",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        hints=("m = 256 / dp micro-batches per rank", "b times too large"),
        cause=(
            "A data-parallel rank runs m = 256 / (dp x b) micro-batches; it takes m = 256 / dp, "
            "so with b > 1 it counts b times too many tensor-parallel all-reduces (each already "
            "sized for b sequences) and pipeline sends, and too small a bubble."
        ),
        source=_SETUP
        + _STEP.replace(
            "m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)",
            "m = BATCH_TOKENS // LLAMA.seq_len // dp  # sequences, one micro-batch each",
        ),
    ),
    Blind(
        name="one_micro_batch_not_the_step",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        hints=("busy time (compute and all-reduces) / m", "one micro-batch's time"),
        cause=(
            "It times one micro-batch (s x b tokens of compute and its all-reduces) and never "
            "multiplies by the m micro-batches a data-parallel rank runs per step."
        ),
        source=_SETUP
        + """
def predict_step_seconds(layout):
    dp, tp, pp, v = layout["dp"], layout["tp"], layout["pp"], layout["interleave"]
    b, zero, recompute = layout["micro_batch_size"], layout["zero_stage"], layout["recompute"]
    gpu = CLUSTER.gpu
    m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)
    per_token = gu.flops.hardware_flops_per_token(
        LLAMA.params, layers=LLAMA.layers, d_model=LLAMA.hidden, seq_len=LLAMA.seq_len,
        recompute=recompute, attention="flash",
    )
    tokens = LLAMA.seq_len * b  # one micro-batch, shared by the tp x pp GPUs of a replica
    compute = per_token * tokens / (tp * pp) / (0.5 * gu.flops.peak_flops(gpu))
    act = 2 * LLAMA.seq_len * b * LLAMA.hidden
    tp_time = 0.0
    if tp > 1:
        one = gu.collectives.estimate_time("all_reduce", act, tp, gpu=gpu, gpus_per_node=8)
        tp_time = (6 if recompute == "full" else 4) * LLAMA.layers // pp * one
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
        name="peak_of_all_gpus_and_divided_by_n",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        cause=(
            "It divides the batch's FLOPs by the 256 GPUs and then by the peak of all 256 "
            "GPUs (peak_flops(..., n_gpus=256)), sharing the work out twice: the compute "
            "is 256 times too small."
        ),
        source=_SETUP
        + _STEP.replace(
            "compute = per_token * BATCH_TOKENS / CLUSTER.n_gpus / (0.5 * gu.flops.peak_flops(gpu))",
            "peak = gu.flops.peak_flops(gpu, n_gpus=CLUSTER.n_gpus)\n"
            "    compute = per_token * BATCH_TOKENS / CLUSTER.n_gpus / (0.5 * peak)",
        ),
    ),
    Blind(
        name="zero1_allreduce_every_micro_batch",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        cause=(
            "ZeRO-0 and ZeRO-1 accumulate the whole gradient over the m micro-batches and "
            "all-reduce it once per step; it all-reduces it after every micro-batch, m times "
            "the data-parallel traffic."
        ),
        source=_SETUP
        + _STEP.replace(
            'dp_time = gu.collectives.estimate_time("all_reduce", grads, dp, **where)',
            'dp_time = m * gu.collectives.estimate_time("all_reduce", grads, dp, **where)',
        ),
    ),
    Blind(
        name="interleaving_divides_compute",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        cause=(
            "Interleaving makes each chunk's pass 1/v of a stage's, but a GPU still runs all "
            "v chunks: it shrinks the bubble, not the compute, which it divides by v."
        ),
        source=_SETUP
        + _STEP.replace(
            "return (compute + tp_time) / (1 - bubble) + pp_time + dp_time",
            "compute = compute / v  # each chunk's forward and backward take 1/v of a stage's\n"
            "    return (compute + tp_time) / (1 - bubble) + pp_time + dp_time",
        ),
    ),
    Blind(
        name="m_counted_in_tokens",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        hints=("counted in tokens", "s = 8,192 times too large"),
        cause=(
            "m counts micro-batches of b sequences, 256 / (dp x b); dividing the batch's "
            "2**21 tokens instead of its 256 sequences makes m 8192 times too large, and with "
            "it the tensor-parallel all-reduces and pipeline sends."
        ),
        source=_SETUP
        + _STEP.replace(
            "m = BATCH_TOKENS // LLAMA.seq_len // (dp * b)",
            "m = BATCH_TOKENS // (dp * b)",
        ),
    ),
    Blind(
        name="mfu_multiplied_not_divided",
        exercise_id="planner_step_time",
        half="held2",
        correct=False,
        cause=(
            "At MFU 0.5 the matmuls reach half the peak, so the compute takes FLOPs / "
            "(0.5 x peak); multiplying FLOPs / peak by 0.5 makes it four times too short."
        ),
        source=_SETUP
        + _STEP.replace(
            "compute = per_token * BATCH_TOKENS / CLUSTER.n_gpus / (0.5 * gu.flops.peak_flops(gpu))",
            "compute = per_token * BATCH_TOKENS / CLUSTER.n_gpus / gu.flops.peak_flops(gpu) * 0.5",
        ),
    ),
    # ---------------------------------------------------------------------- planner_defend
    Blind(
        name="tp8_pp4_two_virtual_stages",
        exercise_id="planner_defend",
        half="held2",
        correct=True,
        source=_DEFEND_SETUP
        + """

def defend():
    mine = my_layout()
    step = predict_step_seconds(mine)
    best = min(ranked, key=lambda x: x.step_time)
    # same FLOPs per GPU as the best; TP 8 runs its 4 all-reduces per layer over 20 layers and
    # 32 micro-batches (1.5 s over NVLink) where TP 4 pays 0.6 s: tensor-parallel costs most
    return {
        "layout": mine,
        "memory_gib": predict_memory_gib(mine),
        "step_seconds": step,
        "bound": "NVLink",
        "vs_best": step / best.step_time,
        "main_difference": "tensor-parallel",
    }
""",
    ),
    Blind(
        name="main_difference_free_wording",
        exercise_id="planner_defend",
        half="held2",
        correct=False,
        cause=(
            'main_difference must be one of the lab\'s terms, "tensor-parallel" here; '
            '"TP all-reduces" is not one of them.'
        ),
        source=_DEFEND_SETUP
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
        main_difference="TP all-reduces",
    )
""",
    ),
    Blind(
        name="vs_best_as_percent",
        exercise_id="planner_defend",
        half="held2",
        correct=False,
        cause=(
            "vs_best is the ratio of the two step times (about 1.06), not that ratio as a "
            "percentage (106)."
        ),
        source=_DEFEND_SETUP
        + """

def defend():
    layout = my_layout()
    step = predict_step_seconds(layout)
    return dict(
        layout=layout,
        memory_gib=predict_memory_gib(layout),
        step_seconds=step,
        bound="NVLink",
        vs_best=round(100 * step / ranked[0].step_time, 1),  # % of the best's step
        main_difference="tensor-parallel",
    )
""",
    ),
    Blind(
        name="returns_a_tuple",
        exercise_id="planner_defend",
        half="held2",
        correct=False,
        cause=(
            "defend() must return a dict with the keys layout, memory_gib, step_seconds, "
            "bound, vs_best and main_difference, not a tuple of the values."
        ),
        source=_DEFEND_SETUP
        + """

def defend():
    layout = my_layout()
    step = predict_step_seconds(layout)
    return (
        layout,
        predict_memory_gib(layout),
        step,
        "NVLink",
        step / ranked[0].step_time,
        "tensor-parallel",
    )
""",
    ),
]
