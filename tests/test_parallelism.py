"""The planner against the worked problems of "How to Scale Your Model" (Austin et al. 2025,
part 12, "Rooflines for LLM Scaling on GPUs") and the published layout of Llama 3 405B
(Llama Team, "The Llama 3 Herd of Models", 2024, section 3.3.2 and Table 4)."""

import math

import pytest

import gpu_utils as gu

P = gu.parallelism
H100 = "H100-SXM"

# Llama 3 405B (Table 3 of the Llama 3 paper: 126 layers, model dimension 16,384, 128 heads,
# vocabulary 128,256, no dropout), trained at sequence length 8,192 with 16M-token batches on
# 16,384 H100s with TP 8, CP 1, PP 16, DP 128 (Table 4).
LLAMA3_405B = P.MODELS["Llama 3 405B"]
LLAMA3_CLUSTER = P.Cluster(H100, gpus_per_node=8, nodes=2048)
LLAMA3_BATCH = 16 * 2**20


@pytest.fixture(scope="module")
def llama3_plan():
    return P.plan(LLAMA3_405B, LLAMA3_CLUSTER, LLAMA3_BATCH)


def test_book_critical_batch_per_gpu():
    """'Within a node, we just need the per-GPU token batch size > 990e12 / 450e9 = 2200';
    across nodes 990e12 / 400e9 = 2475; so Llama 3 on 16k H100s with pure data parallelism
    'would need a batch size of at least 40M tokens'."""
    inside = P.critical_tokens_per_gpu(H100, across_nodes=False)
    across = P.critical_tokens_per_gpu(H100)
    assert inside == pytest.approx(2200, rel=0.01)
    assert across == pytest.approx(2475, rel=0.01)
    assert across * 16384 / 1e6 == pytest.approx(40, rel=0.02)


BOOK = dict(latency=False, overlap=1.0, tp_overlap=True)  # the rooflines' assumptions

# A wide, shallow model whose attention term is 0.1% of its FLOPs, so that the book's MLP-only
# roofline applies: 2 layers of hidden 8192 (1.6e9 parameters), sequences of 64 tokens.
WIDE = P.Model(params=2 * 12 * 8192**2, layers=2, hidden=8192, heads=64, seq_len=64, vocab=0)


@pytest.mark.parametrize(
    "nodes, gpus_per_node, across", [(64, 8, True), (1, 8, False)], ids=["across", "inside"]
)
def test_data_parallel_roofline_switches_at_c_over_w(nodes, gpus_per_node, across):
    """Pure data parallelism, one micro-batch, the book's model (bandwidth only, perfect overlap)
    and perfect FLOPs (mfu=1): the gradient
    all-reduce, 2 (X-1)/X x 2 bytes x N / W, hides behind the backward pass, 4 N FLOPs per token
    (+ 8 L h s for attention, a factor 1 + s/(6h)), exactly when the tokens per GPU exceed
    (X-1)/X x C/W / (1 + s/(6h)), X the number of nodes across nodes (the book's "What happens
    when X is small?"), of GPUs inside one. Checked 1% either side of that point."""
    cluster = P.Cluster(H100, gpus_per_node, nodes)
    n = cluster.n_gpus
    x = nodes if across else gpus_per_node  # members of the level whose link is the bottleneck
    critical = P.critical_tokens_per_gpu(H100, across_nodes=across) * (x - 1) / x
    critical /= 1 + WIDE.seq_len / (6 * WIDE.hidden)
    below = math.floor(0.99 * critical / WIDE.seq_len)
    above = math.ceil(1.01 * critical / WIDE.seq_len)
    for sequences, expected in [(below, "network" if across else "NVLink"), (above, "compute")]:
        layout = P.evaluate(
            WIDE,
            cluster,
            sequences * WIDE.seq_len * n,
            dp=n,
            micro_batch_size=sequences,
            mfu=1.0,
            **BOOK,
        )
        assert layout.fits and layout.micro_batches == 1
        assert layout.bound == expected, (sequences * WIDE.seq_len, layout.describe())


def test_llama3_layout_fits_and_ranks_among_the_best(llama3_plan):
    best = llama3_plan[0]
    assert best.fits and best.tp == 8  # tensor parallelism fills the NVLink node
    theirs = [x for x in llama3_plan if (x.tp, x.pp, x.dp) == (8, 16, 128) and x.fits]
    assert theirs, "Llama 3's layout should fit"
    assert llama3_plan.index(theirs[0]) < 0.01 * len(llama3_plan)  # among the best 1%
    assert theirs[0].micro_batches == 16  # 2,048 sequences / DP 128, one sequence each
    # no ZeRO-3 layout comes close: at 16,384 GPUs its 12 gathers per layer are rings of
    # thousands of hops, each paying NCCL's latency on every micro-batch
    zero3 = [x for x in llama3_plan if x.zero_stage == 3 and x.fits]
    assert all(x.step_time > 1.2 * theirs[0].step_time for x in zero3)


def test_llama3_with_zero_1_as_the_book_describes_it(llama3_plan):
    """The book: "8-way Tensor Parallelism ..., 16-way Pipeline Parallelism, 128-way ZeRO-1".
    Even with FlashAttention and no dropout that needs full recompute here: ZeRO-1 keeps the
    full bf16 parameters and gradients of a stage (4 bytes x 3.2e9, 11.8 GiB), and 16
    micro-batches x 8 layers of 32 sbh/t are 64 GiB more. Llama 3's own sharding (FSDP with
    gradients sharded too, section 3.3.2) fits without recompute, interleaved 4 ways: with
    m = p = 16 Megatron's warm-up holds v m = 64 chunks of 2 layers, not v p + p - 1 = 79."""
    zero1 = [x for x in llama3_plan if (x.tp, x.pp, x.dp, x.zero_stage) == (8, 16, 128, 1)]
    fitting = [x for x in zero1 if x.fits]
    assert fitting and {x.recompute for x in fitting} == {"full"}
    zero2 = [x for x in llama3_plan if (x.tp, x.pp, x.dp, x.zero_stage) == (8, 16, 128, 2)]
    assert any(x.fits and x.recompute == "none" and x.interleave == 4 for x in zero2)


def test_a_405b_model_fits_no_layout_without_model_parallelism(llama3_plan):
    """With 2,048 sequences per step, DP is at most 2,048: tp x pp >= 8, and one GPU per model
    replica (tp = pp = 1) is impossible on 16k GPUs; on a single node nothing fits at all."""
    assert all(x.tp * x.pp >= 8 for x in llama3_plan)
    node = P.plan(LLAMA3_405B, P.Cluster(H100, 8, 1), 2 * 8192, micro_batch_sizes=(1,))
    assert node and not any(x.fits for x in node)
    assert all(x.bound == "memory" and x.margin < 0 for x in node)


def test_plan_keeps_tensor_parallelism_inside_a_node(llama3_plan):
    assert {x.tp for x in llama3_plan} <= {1, 2, 4, 8}
    assert all(x.comm_times["tp"] == 0 for x in llama3_plan if x.tp == 1)


def test_sorted_fitting_fastest_first_then_the_rest():
    model = P.Model(params=7e9, layers=32, hidden=4096, heads=32, seq_len=4096, vocab=32000)
    layouts = P.plan(model, P.Cluster(H100, 8, 4), 4 * 2**20)
    fits = [x.fits for x in layouts]
    assert fits == sorted(fits, reverse=True) and any(fits) and not all(fits)
    times = [x.step_time for x in layouts if x.fits]
    assert times == sorted(times)


def test_memory_is_gu_memory():
    model = P.Model(params=7e9, layers=32, hidden=4096, heads=32, seq_len=4096, vocab=32000)
    cluster = P.Cluster(H100, 8, 2)
    x = P.evaluate(model, cluster, 64 * 4096, dp=4, tp=2, pp=2, zero_stage=1, recompute="selective")
    state = gu.memory.model_state_bytes(7e9 / 4, dp=4, zero_stage=1)
    acts = (
        gu.memory.activation_bytes_per_layer(
            4096, 1, 4096, 32, tp=2, sequence_parallel=True, attention="flash"
        )
        * (32 / 2)
        * 2
    )  # L/p layers x p micro-batches in flight (1F1B); flash attention by default
    assert x.memory_per_gpu == pytest.approx(state.total + acts)
    assert x.margin == pytest.approx(0.9 * gu.specs.get(H100).hbm_bytes - x.memory_per_gpu)
    eager = P.evaluate(
        model, cluster, 64 * 4096, dp=4, tp=2, pp=2, zero_stage=1, attention="eager"
    )  # Korthikanti's count, the s x s scores kept
    assert eager.memory_breakdown["activations"] > 5 * x.memory_breakdown["activations"]


def test_pipeline_bubble_and_interleaving():
    model = P.Model(params=7e9, layers=32, hidden=4096, heads=32, seq_len=4096, vocab=32000)
    cluster = P.Cluster(H100, 8, 2)
    for m in (4, 16):
        x = P.evaluate(model, cluster, 4 * m * 4096, dp=4, tp=1, pp=4, zero_stage=1)
        assert x.micro_batches == m and x.bubble == pytest.approx(3 / (m + 3))
        y = P.evaluate(model, cluster, 4 * m * 4096, dp=4, tp=1, pp=4, zero_stage=1, interleave=2)
        assert y.bubble == pytest.approx(3 / (2 * m + 3)) and y.step_time < x.step_time


@pytest.mark.parametrize("p, m, v", [(4, 4, 2), (4, 8, 2), (4, 16, 4), (8, 8, 2), (16, 16, 4)])
def test_interleaved_activations_are_what_gu_pipeline_holds(p, m, v):
    """The planner's first stage holds as many model chunks as gu.pipeline's interleaved
    schedule keeps in flight: Megatron's warm-up, capped at v m (Korthikanti's 1 + (p-1)/(p v)
    factor only when m is large)."""
    held = gu.pipeline.in_flight(gu.pipeline.interleaved(p, m, v))[0]
    assert P._in_flight_chunks(p, m, v) == held
    assert max(gu.pipeline.in_flight(gu.pipeline.one_f_one_b(p, m))) == P._in_flight_chunks(p, m, 1)
    model = P.Model(params=20e9, layers=16 * v, hidden=4096, heads=32, seq_len=4096, vocab=0)
    x = P.evaluate(model, P.Cluster(H100, p, 1), m * 4096, dp=1, pp=p, interleave=v)
    per_layer = gu.memory.activation_bytes_per_layer(4096, 1, 4096, 32, attention="flash")
    assert x.memory_breakdown["activations"] == pytest.approx(per_layer * 16 / p * held)


def test_interleaving_needs_micro_batches_a_multiple_of_the_stages():
    model = P.Model(params=7e9, layers=32, hidden=4096, heads=32, seq_len=4096, vocab=32000)
    cluster = P.Cluster(H100, 8, 1)
    with pytest.raises(ValueError, match="multiple"):
        P.evaluate(model, cluster, 6 * 4096, dp=1, pp=8, interleave=2)  # m = 6, p = 8
    layouts = P.plan(model, cluster, 12 * 4096)
    assert all(x.micro_batches % x.pp == 0 for x in layouts if x.interleave > 1)


def test_zero3_with_a_pipeline_is_refused_as_deepspeed_does():
    model = P.Model(params=7e9, layers=32, hidden=4096, heads=32, seq_len=4096, vocab=32000)
    cluster = P.Cluster(H100, 8, 2)
    with pytest.raises(ValueError, match="incompatible with pipeline"):
        P.evaluate(model, cluster, 64 * 4096, dp=8, pp=2, zero_stage=3)
    assert not any(x.zero_stage == 3 and x.pp > 1 for x in P.plan(model, cluster, 64 * 4096))


def test_data_parallel_traffic_per_zero_stage_and_micro_batch():
    """Rajbhandari et al. 2020 section 7: ZeRO-0/1 move 2 Psi per step whatever m; ZeRO-2
    reduce-scatters on every micro-batch (m Psi) and gathers once (Psi); ZeRO-3 gathers forward
    and backward and reduce-scatters on every micro-batch: 3 Psi x m (4 Psi x m with full
    recompute, which gathers again for the recomputed forward)."""
    model = P.Model(params=7e9, layers=32, hidden=4096, heads=32, seq_len=4096, vocab=32000)
    cluster = P.Cluster(H100, 8, 4)
    psi = 2 * 7e9  # bf16 bytes of the parameters (and of the gradients)
    for m in (1, 4):
        volume = {
            z: P.evaluate(model, cluster, 32 * m * 4096, dp=32, zero_stage=z).comm_bytes["dp"]
            for z in range(4)
        }
        assert volume[0] == volume[1] == pytest.approx(2 * psi)
        assert volume[2] == pytest.approx((m + 1) * psi)
        assert volume[3] == pytest.approx(3 * m * psi)
        full = P.evaluate(model, cluster, 32 * m * 4096, dp=32, zero_stage=3, recompute="full")
        assert full.comm_bytes["dp"] == pytest.approx(4 * m * psi)
    z1 = P.evaluate(model, cluster, 32 * 4096, dp=32, zero_stage=1)
    z3 = P.evaluate(model, cluster, 32 * 4096, dp=32, zero_stage=3)
    assert z3.memory_per_gpu < z1.memory_per_gpu


def test_latency_makes_thousands_of_small_collectives_cost_seconds():
    """ZeRO-3 gathers 12 tensors per layer, each a ring over every GPU: at 1,536 GPUs each
    gather's latency is NCCL's 8.4 us + 1,344 NVLink hops x 3.4 us + 191 network hops x 14 us."""
    model = P.MODELS["GPT-3 175B"]
    cluster = P.Cluster("A100-SXM4-80GB", 8, 192)
    args = dict(dp=1536, zero_stage=3, recompute="full")
    with_latency = P.evaluate(model, cluster, 1536 * 2048, **args)
    without = P.evaluate(model, cluster, 1536 * 2048, latency=False, **args)
    one = 8.4e-6 + 1344 * 3.4e-6 + 191 * 14e-6
    gathers = 3 * 96 * 12 * one + 96 * 12 * one  # forward, recomputed forward, backward; scatter
    assert with_latency.comm_times["dp"] - without.comm_times["dp"] == pytest.approx(gathers)
    assert gathers > 30  # seconds per step, more than the bytes take
    assert gathers > 3 * without.comm_times["dp"]


def test_zero3_gathers_each_parameter_tensor_of_the_model_s_own_layer():
    """ZeRO-3 pays one collective per parameter tensor of a layer: Llama's 9 (wq, wk, wv, wo,
    w1, w2, w3, attention_norm, ffn_norm in Meta's reference model.py, no biases) against GPT's
    12, so the latency of the same shape is 9/12 of a GPT layer's."""
    assert P.MODELS["Llama 3 70B"].tensors_per_layer == 9
    assert P.MODELS["GPT-3 175B"].tensors_per_layer == P.TENSORS_PER_LAYER == 12
    model = P.MODELS["Llama 3 70B"]
    as_gpt = P.Model(**{**model.__dict__, "tensors_per_layer": 12})
    cluster, args = P.Cluster(H100, 8, 32), dict(dp=256, zero_stage=3, recompute="none")
    latency = {}
    for name, m in (("llama", model), ("gpt", as_gpt)):
        with_latency = P.evaluate(m, cluster, 2**21, **args).comm_times["dp"]
        without = P.evaluate(m, cluster, 2**21, latency=False, **args).comm_times["dp"]
        latency[name] = with_latency - without
    assert latency["llama"] == pytest.approx(latency["gpt"] * 9 / 12)


def test_fsdp_gathers_one_block_per_collective_and_overlaps():
    """PyTorch FSDP's ``fully_shard`` "groups parameters together for a single all-gather": one
    collective per block instead of Llama's 9 per tensor, the same bytes, so only the latency
    shrinks, to 1/9; with FSDP's overlap the lab's FSDP + TP 8 layout (issue 25.1) comes within
    1.1x of the planner's best instead of 2.63x."""
    model, cluster = P.MODELS["Llama 3 70B"], P.Cluster(H100, 8, 32)
    args = dict(dp=256, zero_stage=3, recompute="none")
    latency = {}
    for unit in P.GATHER_UNITS:
        with_latency = P.evaluate(model, cluster, 2**21, gather_unit=unit, **args)
        without = P.evaluate(model, cluster, 2**21, gather_unit=unit, latency=False, **args)
        assert with_latency.comm_bytes == without.comm_bytes
        latency[unit] = with_latency.comm_times["dp"] - without.comm_times["dp"]
    assert latency["block"] == pytest.approx(latency["tensor"] / 9)
    best = P.plan(model, cluster, 2**21)[0]
    layout = dict(dp=32, tp=8, pp=1, zero_stage=3)
    megatron = P.evaluate(model, cluster, 2**21, **layout)
    fsdp = P.evaluate(model, cluster, 2**21, **layout, **P.FSDP)
    assert megatron.step_time / best.step_time > 2.5  # the lab reported 2.63x (rules kept)
    assert 1.0 <= fsdp.step_time / best.step_time < 1.1
    assert fsdp.memory_per_gpu == megatron.memory_per_gpu
    with pytest.raises(ValueError, match="gather_unit"):
        P.evaluate(model, cluster, 2**21, gather_unit="layer", **layout)


def test_zero3_holds_two_of_the_model_s_own_layers():
    """The gathered parameters ZeRO-3 holds are two layers of the model itself, counted from the
    architecture (oracle, not the planner): GPT-3's 12 h^2 (4 h^2 attention, 8 h^2 MLP, tied
    embedding); Llama 3 70B's 2 h^2 + 2 h (8 x 128) for GQA's q, o and k, v, 3 x h x 28,672
    for SwiGLU (Dubey et al. 2024, Table 3; params.json ffn_dim) = 12.75 h^2 (issue 25.12)."""
    gpt, llama = P.MODELS["GPT-3 175B"], P.MODELS["Llama 3 70B"]
    assert gpt.layer_params / gpt.hidden**2 == pytest.approx(12, rel=0.002)
    h = llama.hidden
    architecture = 2 * h * h + 2 * h * 8 * 128 + 3 * h * 28672 + 2 * h
    assert architecture / h**2 == pytest.approx(12.75, abs=0.01)
    assert llama.layer_params == pytest.approx(architecture, rel=0.005)
    x = P.evaluate(llama, P.Cluster(H100, 8, 32), 2**21, dp=64, tp=4, zero_stage=3)
    assert x.memory_breakdown["zero3_gathered"] == pytest.approx(
        2 * 2 * architecture / 4, rel=0.005
    )


@pytest.mark.parametrize("name, saved", [("Llama 3 405B", 0.044), ("Llama 3 8B", 0.119)])
def test_causal_attention_skips_the_masked_half_of_the_scores(name, saved):
    """A causal kernel computes the lower triangle of the scores: 4% fewer FLOPs for 405B at 8K,
    12% for Llama 3 8B (issue 25.11; with flash attention 6N + 14 L H Q T becomes 6N + 7 L H Q T,
    gu.flops). The model FLOPs behind ``mfu`` stay PaLM's, so the achieved mfu rises."""
    model = P.MODELS[name]
    cluster = P.Cluster(H100, 8, 1)
    args = dict(dp=1, tp=8, pp=1, recompute="none")
    full = P.evaluate(model, cluster, model.seq_len * 8, **args)
    causal = P.evaluate(model, cluster, model.seq_len * 8, causal=True, **args)
    assert 1 - causal.compute_time / full.compute_time == pytest.approx(saved, abs=0.002)
    assert causal.mfu > full.mfu


def test_llama3_fp32_reduce_scatter_reading():
    """Llama 3 reduce-scatters its gradients in FP32 (Dubey et al. 2024, sec. 3.3.2): with
    ``grad_reduce_bytes=4`` each micro-batch's reduce-scatter moves 4 bytes per parameter, and
    the 16,384-GPU row drops from 6% to 18% under the published 400 TFLOP/s (issue 25.10)."""
    cluster, args = P.Cluster(H100, 8, 2048), dict(dp=128, tp=8, pp=16, interleave=8)
    bf16 = P.evaluate(LLAMA3_405B, cluster, LLAMA3_BATCH, **args, **P.LLAMA3_SHARDING)
    fp32 = P.evaluate(LLAMA3_405B, cluster, LLAMA3_BATCH, **args, **P.LLAMA3_SHARDING_FP32)
    psi, m = LLAMA3_405B.params / 128, bf16.micro_batches
    assert bf16.comm_bytes["dp"] == pytest.approx((m * 2 + 2) * psi)
    assert fp32.comm_bytes["dp"] == pytest.approx((m * 4 + 2) * psi)
    assert fp32.memory_per_gpu == bf16.memory_per_gpu
    tflops = {
        k: x.mfu * P.flops.peak_flops(H100) / 1e12 for k, x in (("bf16", bf16), ("fp32", fp32))
    }
    assert tflops["bf16"] / 400 - 1 == pytest.approx(-0.06, abs=0.01)
    assert tflops["fp32"] / 400 - 1 == pytest.approx(-0.18, abs=0.01)
    with pytest.raises(ValueError, match="grad_reduce_bytes"):
        P.evaluate(LLAMA3_405B, cluster, LLAMA3_BATCH, grad_reduce_bytes=1, **args)


def test_overlap_hides_data_parallel_traffic_up_to_the_compute_beside_it():
    model = P.MODELS["GPT-3 175B"]
    cluster = P.Cluster("A100-SXM4-80GB", 8, 96)
    args = dict(dp=768, zero_stage=3, micro_batch_size=2, recompute="full")
    serial = P.evaluate(model, cluster, 1536 * 2048, **args)
    assert P.OVERLAP == 0 and serial.step_time == pytest.approx(
        serial.compute_time + serial.comm_times["dp"]
    )
    hidden = P.evaluate(model, cluster, 1536 * 2048, overlap=1.0, **args)
    assert hidden.step_time == pytest.approx(
        max(hidden.compute_time, hidden.comm_times["dp"]), rel=1e-9
    )
    with pytest.raises(ValueError, match="fraction"):
        P.evaluate(model, cluster, 1536 * 2048, overlap=1.5, **args)


# --- other published runs (the comparisons chapter 10 shows are held out of these tests) ----

# Narayanan et al. 2021, Table 2, the 530B model (105 layers, hidden 20480, 128 heads, sequence
# 2048, vocabulary 51,200; Table 1), A100-SXM4-80GB, 8 per node, full recompute. Achieved
# teraFLOP/s per GPU by their equation 3 (hardware FLOPs, recomputation counted).
GPT_530B = P.Model(529.6e9, 105, 20480, 128, 2048, 51200)
A100 = "A100-SXM4-80GB"


def narayanan_eq3(model, batch, seconds, n_gpus):
    s, layers, h, V = model.seq_len, model.layers, model.hidden, model.vocab
    total = 96 * batch * s * layers * h**2 * (1 + s / (6 * h) + V / (16 * layers * h))
    return total / seconds / n_gpus / 1e12


def test_530b_ptd_p_and_zero3_against_narayanan_table_2():
    """PTD-P (TP 8 x PP 35, batch 2240, micro-batch 1): 171, 167, 159 TFLOP/s per GPU on 560,
    1120 and 2240 GPUs; ZeRO-3 without model parallelism: 138 (640 GPUs, batch 2560,
    micro-batch 4), 98 (1120, micro-batch 2), 48 (2240, micro-batch 1). The planner, with its
    defaults, comes within 20% of PTD-P and of ZeRO-3 on 640 and 1120 GPUs, ranks PTD-P first
    from 1120 GPUs on, and has ZeRO-3 lose about half its throughput from 640 to 2240 GPUs
    (published: 2.9x; the planner's 2x is its worst miss here, +40% at 2240)."""
    ptd = {}
    for n, published in [(560, 171), (1120, 167), (2240, 159)]:
        x = P.evaluate(
            GPT_530B, P.Cluster(A100, 8, n // 8), 2240 * 2048, dp=n // 280, tp=8, pp=35,
            recompute="full",
        )  # fmt: skip
        ptd[n] = narayanan_eq3(GPT_530B, 2240, x.step_time, n)
        assert x.fits and ptd[n] == pytest.approx(published, rel=0.2)
    zero3 = {}
    for n, batch, b, published in [(640, 2560, 4, 138), (1120, 2240, 2, 98), (2240, 2240, 1, 48)]:
        x = P.evaluate(
            GPT_530B, P.Cluster(A100, 8, n // 8), batch * 2048, dp=n, zero_stage=3,
            micro_batch_size=b, recompute="full",
        )  # fmt: skip
        zero3[n] = narayanan_eq3(GPT_530B, batch, x.step_time, n)
        assert x.fits and x.bound == "network"
        if n < 2240:
            assert zero3[n] == pytest.approx(published, rel=0.2)
    assert ptd[1120] > zero3[1120] and ptd[2240] > 1.5 * zero3[2240]
    assert zero3[640] > 1.9 * zero3[2240]


def test_full_recompute_costs_a_third_more_compute():
    model = P.Model(params=7e9, layers=32, hidden=4096, heads=32, seq_len=4096, vocab=32000)
    cluster = P.Cluster(H100, 8, 1)
    args = dict(dp=8, zero_stage=3, attention="eager")
    none = P.evaluate(model, cluster, 8 * 4096, **args)
    full = P.evaluate(model, cluster, 8 * 4096, recompute="full", **args)
    assert full.compute_time / none.compute_time == pytest.approx(4 / 3)
    assert full.memory_breakdown["activations"] < none.memory_breakdown["activations"] / 10
    # with FlashAttention the backward also recomputes Q K^T: (8N + 18 LHQT) / (6N + 14 LHQT)
    none = P.evaluate(model, cluster, 8 * 4096, dp=8, zero_stage=3)
    full = P.evaluate(model, cluster, 8 * 4096, dp=8, zero_stage=3, recompute="full")
    lhqt = 32 * 4096 * 4096
    assert full.compute_time / none.compute_time == pytest.approx(
        (8 * 7e9 + 18 * lhqt) / (6 * 7e9 + 14 * lhqt)
    )


@pytest.mark.parametrize(
    "kwargs",
    [dict(dp=3), dict(dp=8, micro_batch_size=3), dict(dp=8, recompute="x")],
    ids=["gpus", "batch", "recompute"],
)
def test_evaluate_rejects_impossible_layouts(kwargs):
    model = P.Model(params=1e9, layers=16, hidden=2048, heads=16, seq_len=2048, vocab=32000)
    with pytest.raises(ValueError):
        P.evaluate(model, P.Cluster(H100, 8, 1), 16 * 2048, **kwargs)


# --- the planner widget -------------------------------------------------------------------------


def test_planner_widget_follows_its_controls():
    import matplotlib.pyplot as plt

    w = gu.widgets.planner("8B (Llama 3 shape)", nodes=1, batch_millions=1)
    assert w.layouts and "layouts" in w.summary.value
    model, cluster, batch = w.inputs()
    assert not model.dropout  # Llama has no dropout
    assert w.layouts[0] == P.plan(model, cluster, batch, mfu=0.5)[0]
    assert "implied MFU" in w.summary.value and "implied MFU" in w.mfu_help.value
    assert "m = micro-batches" in w.summary.value  # the plot's notation spelled out
    assert "50%" in w.summary.value
    before = w.summary.value
    w.model.value = "70B (Llama 3 shape)"  # 70B on one node: nothing fits
    assert w.summary.value != before and not any(x.fits for x in w.layouts)
    text = w.summary.value
    short = -w.layouts[0].margin / 2**30
    assert text.index("Nothing fits") < text.index("<table")  # said first
    assert f"needs {short:.0f} GiB more per GPU" in text
    assert "does not fit" in text and "bound by memory" not in text and "limited by" not in text
    w.nodes.value = 16
    assert w.inputs()[1].n_gpus == 128 and w.layouts[0].fits
    w.mfu.value = 0.3
    assert "30%" in w.summary.value
    axes = gu.widgets.planner_plot(w.layouts, 72 * 2**30, top=5)
    assert len(axes[0].patches) == 5
    assert axes[0].get_xlim()[1] >= 1.1 * 72  # the dashed usable line is not on the edge
    plt.close("all")


def test_planner_plot_leaves_headroom_and_picks_a_time_unit():
    import matplotlib.pyplot as plt

    model = P.MODELS["Llama 3 70B"]
    layouts = P.plan(model, P.Cluster(H100, 8, 1), 2**20)  # nothing fits: red bars, no times
    axes = gu.widgets.planner_plot(layouts, 72 * 2**30, top=4)
    biggest = max(x.memory_per_gpu for x in layouts[:4]) / 2**30
    assert axes[0].get_xlim()[1] >= 1.1 * max(72, biggest)
    assert all(p.get_width() == 0 for p in axes[1].patches)
    plt.close("all")
    slow = P.plan(P.MODELS["Llama 3 70B"], P.Cluster(H100, 8, 8), 16 * 2**20)
    axes = gu.widgets.planner_plot(slow, 72 * 2**30, top=3)
    assert "(min)" in axes[1].get_xlabel()  # several minutes per step
    assert P.format_seconds(42) == "42 s" and P.format_seconds(300) == "5 min"
    assert P.format_seconds(3 * 3600) == "3 h"
    plt.close("all")


def test_dropout_free_models_need_less_activation_memory():
    model = P.Model(params=7e9, layers=32, hidden=4096, heads=32, seq_len=4096, vocab=32000)
    cluster = P.Cluster(H100, 8, 1)
    args = dict(dp=8, zero_stage=3, micro_batch_size=1)
    paper = P.evaluate(model, cluster, 8 * 4096, attention="eager", **args)
    no_dropout = P.evaluate(
        model, cluster, 8 * 4096, dropout_masks=False, attention="eager", **args
    )
    ratio = no_dropout.memory_breakdown["activations"] / paper.memory_breakdown["activations"]
    assert ratio == pytest.approx((32 + 2 * 32) / (34 + 5 * 32))  # a s / h = 32


# --- the book's quiz 5, question 2: "How to shard LLaMA-3 70B" ---------------------------------

LLAMA3_70B = P.Model(params=70e9, layers=80, hidden=8192, heads=64, seq_len=8192, vocab=128256)
BOOK_CLUSTER = P.Cluster(H100, 8, 512)  # "train on 4096 H100 GPUs"
BOOK_BATCH = 4 * 2**20  # "a batch size of about 4M tokens"


def test_book_llama3_70b_storage_and_training_time():
    # 1. "2 bytes for the weights and 8 for the optimizer state, so at least 700GB ... at least
    #    9 GPUs"
    weights_and_adam = gu.memory.model_state_bytes(
        70e9, param_bytes=2, grad_bytes=0, optimizer_bytes=8
    )
    assert int(weights_and_adam) == 700e9
    assert math.ceil(weights_and_adam.total / gu.specs.get(H100).hbm_bytes) == 9
    # 2. "6 * 70e9 * 15e12 = 6.3e24 bf16 FLOPs ... at 45% MFU ... 3.5e6 seconds, or 40 days"
    per_token = gu.flops.training_flops_per_token(  # the book counts 6N only: no attention term
        70e9, layers=80, d_model=8192, seq_len=0
    )
    seconds = per_token * 15e12 / (0.45 * gu.flops.peak_flops(H100, n_gpus=4096))
    assert seconds == pytest.approx(3.5e6, rel=0.02) and seconds / 86400 == pytest.approx(40, abs=1)


def test_book_llama3_70b_tensor_parallelism_stops_at_the_node():
    # 3. "the limit is roughly F / 1995 = 14.4 ... realistically ... 8-way"; with gu.specs,
    #    F W / C = 28672 x 450e9 / 989.5e12 = 13: more than a node's 8, less than two nodes.
    limit = 28672 / P.critical_tokens_per_gpu(H100, across_nodes=False)
    assert 8 < limit < 16
    assert max(x.tp for x in P.plan(LLAMA3_70B, BOOK_CLUSTER, BOOK_BATCH)) == 8


def test_book_llama3_70b_pure_dp_does_not_fit():
    # 3.1 "700GB / 8 = 87.5GB / GPU, which won't fit, so no!"
    book = gu.memory.model_state_bytes(70e9 / 8, param_bytes=2, grad_bytes=0, optimizer_bytes=8)
    assert int(book) == 87.5e9
    layout = P.evaluate(LLAMA3_70B, BOOK_CLUSTER, BOOK_BATCH, dp=512, tp=8, zero_stage=0)
    assert not layout.fits and layout.bound == "memory"


def test_book_llama3_70b_zero3_is_comms_bound_and_8_way_pp_is_not():
    # 3.2 "512-way ZeRO-3 ... per-GPU batch size of 4e6 / 4096 = 976 ... below our pure DP limit
    #     ... So no."
    zero3 = P.evaluate(
        LLAMA3_70B, BOOK_CLUSTER, BOOK_BATCH, dp=512, tp=8, zero_stage=3, recompute="full", mfu=1
    )
    assert zero3.fits and zero3.bound == "network"
    assert zero3.comm_times["dp"] > zero3.compute_time
    # 3.3 "With 8-way pipelining ... 990e12 / 3200e9 = 309, so we should be good!"
    assert P.critical_tokens_per_gpu(H100, spanned_nodes=8) == pytest.approx(309, rel=0.01)
    piped = P.evaluate(
        LLAMA3_70B,
        BOOK_CLUSTER,
        BOOK_BATCH,
        dp=64,
        tp=8,
        pp=8,
        zero_stage=1,
        mfu=1,
        recompute="selective",
    )
    assert piped.fits
    # the roofline's test: the all-reduce fits inside the step's backward pass ...
    assert piped.comm_times["dp"] < 2 / 3 * piped.compute_time
    # ... though the planner, which overlaps it only with the last micro-batch's backward (the
    # book's "we can't AllReduce ... until the last microbatch has passed"), still sees some
    # of it exposed: a few percent of the step.
    assert piped.exposed["network"] < 0.1 * piped.step_time


# Narayanan et al. 2021, Table 1 (weak scaling, A100-SXM4-80GB, sequence 2048, vocabulary
# 51,200): parameters, layers, hidden, heads, TP, PP, GPUs, batch, achieved TFLOP/s per GPU.
TABLE_1 = [
    (1.7e9, 24, 2304, 24, 1, 1, 32, 512, 137),
    (3.6e9, 30, 3072, 32, 2, 1, 64, 512, 138),
    (7.5e9, 36, 4096, 32, 4, 1, 128, 512, 142),
    (18.4e9, 40, 6144, 48, 8, 1, 256, 1024, 135),
    (39.1e9, 48, 8192, 64, 8, 2, 512, 1536, 138),
    (76.1e9, 60, 10240, 80, 8, 4, 1024, 1792, 140),
    (145.6e9, 80, 12288, 96, 8, 8, 1536, 2304, 148),
    (310.1e9, 96, 16384, 128, 8, 16, 1920, 2160, 155),
    (529.6e9, 105, 20480, 128, 8, 35, 2520, 2520, 163),
    (1008e9, 128, 25600, 160, 8, 64, 3072, 3072, 163),
]


@pytest.mark.parametrize("row", TABLE_1, ids=lambda r: f"{r[0] / 1e9:g}B")
def test_weak_scaling_against_narayanan_table_1(row):
    """Each row's (t, p) and batch, with the planner's best fitting micro-batch size (1, 2, 4)
    and interleaving (1, 2, 4), full recompute as the paper used: within 20% of the published
    TFLOP/s per GPU (the table gives the best configuration the authors found). The planner's
    worst misses are the largest models (-15%: its mfu = 0.5 is below the 52% of peak they
    reached end to end)."""
    params, layers, hidden, heads, tp, pp, n, batch, published = row
    model = P.Model(params, layers, hidden, heads, 2048, 51200)
    cluster = P.Cluster(A100, 8, n // 8)
    best = 0.0
    for b in (1, 2, 4):
        for v in (1, 2, 4) if pp > 1 else (1,):
            try:
                x = P.evaluate(
                    model, cluster, batch * 2048, dp=n // (tp * pp), tp=tp, pp=pp,
                    micro_batch_size=b, interleave=v, recompute="full",
                )  # fmt: skip
            except ValueError:  # the batch does not split, or m is not a multiple of p
                continue
            if x.fits:
                best = max(best, narayanan_eq3(model, batch, x.step_time, n))
    assert best == pytest.approx(published, rel=0.2)


def test_describe_spells_the_layout_out_and_says_does_not_fit():
    model = P.MODELS["Llama 3 70B"]
    over = P.evaluate(model, P.Cluster(H100, 8, 1), 2**20, dp=8, zero_stage=1)
    text = over.describe()
    assert not over.fits and over.bound == "memory"
    assert "does not fit" in text and "GiB over the usable memory" in text
    assert "bound by" not in text and "s/step" not in text
    assert "16 micro-batches of 1 sequence" in over.short()  # 128 sequences over 8 ranks
    fits = P.evaluate(model, P.Cluster(H100, 8, 8), 2**20, dp=8, tp=8, zero_stage=1)
    assert fits.fits and "(fits)" in fits.describe() and "bound by" in fits.describe()


def test_layout_text_wraps_between_words_for_narrow_notebooks():
    layouts = P.plan(P.MODELS["Llama 3 70B"], P.Cluster(H100, 8, 8), 16 * 2**20)[:3]
    for x in layouts:
        lines = x.describe(width=60).splitlines()
        assert len(lines) > 1 and all(len(line) <= 60 for line in lines)
        assert " ".join(line.strip() for line in lines) == x.describe()  # only spaces broken
    table = gu.widgets.layout_table(layouts, title="Llama 3 70B, 8 nodes")
    assert "<table" in table._repr_html_() and "implied MFU" in table._repr_html_()
    text = repr(table)
    assert text.startswith("Llama 3 70B, 8 nodes") and all(len(t) <= 88 for t in text.splitlines())


# NVIDIA/Megatron-LM README, images/model_table.png (commit f2e5db4, 2024-07-15, Megatron-Core
# r0.8.0 on H100s; sequence 4096, vocabulary 131,072, DP 48, DP and TP communication overlapped):
# parameters, heads, hidden, layers, TP, PP, GPUs, batch (sequences), model TFLOP/s per GPU.
MEGATRON_CORE_H100 = [
    (1.7e9, 16, 2048, 24, 1, 1, 48, 192, 408.8),
    (7.1e9, 32, 4096, 30, 2, 1, 96, 192, 465.9),
    (16e9, 48, 6144, 32, 4, 1, 192, 192, 489.1),
    (32e9, 56, 7168, 48, 8, 1, 384, 192, 459.6),
    (70e9, 64, 8192, 84, 8, 2, 768, 384, 419.7),
    (119e9, 80, 10240, 92, 8, 4, 1536, 768, 420.5),
    (177e9, 96, 12288, 96, 8, 6, 2304, 1152, 432.8),
    (314e9, 128, 16384, 96, 8, 8, 3072, 1536, 474.4),
    (462e9, 144, 18432, 112, 8, 16, 6144, 3072, 459.9),
]


def megatron_core_flops_per_token(layers: int, hidden: int, seq: int, vocab: int) -> float:
    """The count behind Megatron-Core's published TFLOP/s (megatron/training/training.py,
    num_floating_point_operations, at the README commit): 72 L h^2 + 12 L h s + 6 h V per
    token, the output layer counted and the input embedding (a lookup) not."""
    return 72 * layers * hidden**2 + 12 * layers * hidden * seq + 6 * hidden * vocab


@pytest.mark.parametrize("row", MEGATRON_CORE_H100, ids=lambda r: f"{r[0] / 1e9:g}B")
def test_weak_scaling_against_megatron_core_on_h100(row):
    """The planner's default efficiency (0.5) on H100s: each published row, with the runs' own
    overlap flags and Megatron's distributed optimizer (ZeRO-1), and the fastest fitting choice
    of recomputation and of virtual stages Megatron accepts (v divides each stage's layers; the
    table gives neither), comes within 20% of the published throughput, converted to the
    planner's FLOP count; the efficiency each row implies lies within 0.45-0.7."""
    params, heads, hidden, layers, tp, pp, n, batch, published = row
    model = P.Model(params, layers, hidden, heads, 4096, 131072)
    ours = gu.flops.training_flops_per_token(params, layers=layers, d_model=hidden, seq_len=4096)
    published *= ours / megatron_core_flops_per_token(layers, hidden, 4096, 131072)
    cluster, tokens = P.Cluster(H100, 8, n // 8), batch * 4096
    flags = dict(overlap=1.0, tp_overlap=True)
    virtual = [v for v in range(1, 9) if (layers // pp) % v == 0] if pp > 1 else [1]
    assert layers % pp == 0  # Megatron's rule, which every row keeps
    x = P.best_layout(
        model, cluster, tokens, dp=n // (tp * pp), tp=tp, pp=pp, zero_stages=(1,),
        interleave=virtual, **flags,
    )  # fmt: skip
    got = x.mfu * gu.flops.peak_flops(H100) / 1e12
    assert got == pytest.approx(published, rel=0.2)
    e = P.implied_mfu(
        model, cluster, tokens, published * 1e12, dp=x.dp, tp=tp, pp=pp, zero_stage=1,
        recompute=x.recompute, interleave=x.interleave, **flags,
    )  # fmt: skip
    assert 0.45 < e < 0.7


def test_implied_mfu_inverts_evaluate():
    model = P.MODELS["Llama 3 70B"]
    cluster = P.Cluster(H100, 8, 32)
    layout = dict(dp=8, tp=8, pp=4, zero_stage=1, interleave=2)
    for efficiency in (0.31, 0.5, 0.77):
        x = P.evaluate(model, cluster, 4 * 2**20, mfu=efficiency, **layout)
        measured = x.mfu * gu.flops.peak_flops(H100)
        assert P.implied_mfu(model, cluster, 4 * 2**20, measured, **layout) == pytest.approx(
            efficiency, rel=1e-6
        )
    best = P.evaluate(model, cluster, 4 * 2**20, mfu=1.0, **layout).mfu * gu.flops.peak_flops(H100)
    with pytest.raises(ValueError, match="out of reach"):
        P.implied_mfu(model, cluster, 4 * 2**20, 1.01 * best, **layout)
    with pytest.raises(ValueError, match="positive"):
        P.implied_mfu(model, cluster, 4 * 2**20, 0, **layout)


def test_best_layout_is_the_fastest_fitting_evaluation():
    model, cluster = P.MODELS["Llama 3 70B"], P.Cluster(H100, 8, 8)
    x = P.best_layout(model, cluster, 2**20, dp=2, tp=8, pp=4)
    candidates = []
    for zero in (0, 1, 2):
        for r in ("none", "selective", "full"):
            for v in (1, 2, 4):
                try:
                    y = P.evaluate(model, cluster, 2**20, dp=2, tp=8, pp=4, zero_stage=zero,
                                   recompute=r, interleave=v)  # fmt: skip
                except ValueError:
                    continue
                if y.fits:
                    candidates.append(y.step_time)
    assert x.fits and x.step_time == min(candidates)
    fixed = P.best_layout(model, cluster, 2**20, dp=2, tp=8, pp=4, zero_stage=2)
    assert fixed.zero_stage == 2  # a zero_stage option fixes the stage
    assert P.best_layout(P.MODELS["Llama 3 405B"], P.Cluster(H100, 8, 1), 2**20, dp=8) is None


def _torch_flexible_in_flight(p, m, v):
    """Model chunks PyTorch's ScheduleInterleaved1F1B (the flexible schedule Llama 3 introduced)
    keeps in flight on rank 0: its own list of operations, forwards minus backwards."""
    from torch.distributed.pipelining import schedules

    s = object.__new__(schedules.ScheduleInterleaved1F1B)  # no process group needed
    s.pp_group_size, s.n_local_stages, s.rank, s._n_microbatches = p, v, 0, m
    s.number_of_rounds = max(1, m // p)
    s.microbatches_per_round = m // s.number_of_rounds
    held = peak = 0
    for op in s._calculate_single_rank_operations(0):
        kind = str(getattr(op, "computation_type", ""))
        held += 1 if kind.endswith("FORWARD") and "BACKWARD" not in kind else 0
        held -= 1 if "BACKWARD" in kind else 0
        peak = max(peak, held)
    return peak


@pytest.mark.parametrize("p, m, v", [(4, 10, 2), (4, 8, 2), (8, 20, 2), (16, 24, 2), (16, 32, 2),
                                     (16, 16, 4), (4, 12, 3)])  # fmt: skip
def test_flexible_schedule_holds_what_pytorch_schedules(p, m, v):
    """Llama 3's flexible interleaved schedule (schedule="flexible") runs m micro-batches that
    are not a multiple of p, and holds as many chunks on the first stage as PyTorch's
    implementation does: never fewer than Megatron's schedule would."""
    held = _torch_flexible_in_flight(p, m, v)
    assert held > 0 and P._in_flight_chunks(p, m, v, "flexible") == held
    assert held >= P._in_flight_chunks(p, m, v, "megatron")
    model = P.Model(params=20e9, layers=8 * p * v, hidden=4096, heads=32, seq_len=4096, vocab=0)
    cluster = P.Cluster(H100, p, 1)
    x = P.evaluate(model, cluster, m * 4096, dp=1, pp=p, interleave=v, schedule="flexible")
    per_layer = gu.memory.activation_bytes_per_layer(4096, 1, 4096, 32, attention="flash")
    assert x.memory_breakdown["activations"] == pytest.approx(per_layer * 8 * held)
    if m % p:
        with pytest.raises(ValueError, match="flexible"):
            P.evaluate(model, cluster, m * 4096, dp=1, pp=p, interleave=v)
        plain = P.plan(model, cluster, m * 4096, zero_stages=(0,), micro_batch_sizes=(1,))
        flexible = P.plan(model, cluster, m * 4096, zero_stages=(0,), micro_batch_sizes=(1,),
                          schedule="flexible")  # fmt: skip
        assert not any(y.interleave > 1 and y.pp == p for y in plain)
        assert any(y.interleave == v and y.pp == p for y in flexible)


def test_flexible_schedule_refusals():
    """Rounds of unequal size are refused as PyTorch refuses them; fewer micro-batches than
    stages run in PyTorch (Llama 3 wanted that), but every round then waits for its first
    micro-batch to come back, an idle time the planner's bubble does not count: refused here,
    saying so. An unknown schedule is named."""
    from torch.distributed.pipelining import schedules

    model = P.Model(params=7e9, layers=32, hidden=4096, heads=32, seq_len=4096, vocab=32000)
    cluster = P.Cluster(H100, 8, 1)
    with pytest.raises(ValueError, match="rounds of equal size"):  # 2 rounds, 17 micro-batches
        P.evaluate(model, cluster, 17 * 4096, dp=1, pp=8, interleave=2, schedule="flexible")
    s = object.__new__(schedules.ScheduleInterleaved1F1B)
    s.pp_group_size, s.n_local_stages, s._n_microbatches = 8, 2, 17
    s.number_of_rounds, s.microbatches_per_round = 2, 8
    assert 17 % s.number_of_rounds  # what PyTorch's __init__ refuses: a remainder
    for m in (3, 7):
        assert _torch_flexible_in_flight(8, m, 2) > 0  # PyTorch schedules it
        with pytest.raises(ValueError, match="does not count"):
            P.evaluate(model, cluster, m * 4096, dp=1, pp=8, interleave=2, schedule="flexible")
    with pytest.raises(ValueError, match="schedule must be one of"):
        P.evaluate(model, cluster, 16 * 4096, dp=1, pp=8, interleave=2, schedule="zigzag")


def test_best_layout_says_when_the_question_is_wrong_rather_than_nothing_fits():
    model, cluster = P.MODELS["Llama 3 70B"], P.Cluster(H100, 8, 8)
    for bad in (dict(dp=3, tp=8, pp=4), dict(dp=2, tp=8, pp=4, schedule="zigzag"),
                dict(dp=2, tp=8, pp=4, overlap=2.0), dict(dp=2, tp=8, pp=4, recompute=("some",))):  # fmt: skip
        with pytest.raises(ValueError):
            P.best_layout(model, cluster, 2**20, **bad)
    with pytest.raises(ValueError, match="without one"):
        P.implied_mfu(model, cluster, 2**20, 1e14, dp=2, tp=8, pp=4, mfu=0.4)


def test_plan_lists_selective_recompute_once_with_flash_attention():
    """With fused attention, selective recomputation equals none: plan() lists it once; with the
    scores written out (eager) it is a layout of its own."""
    model, cluster = P.MODELS["Llama 3 8B"], P.Cluster(H100, 8, 1)
    flash = P.plan(model, cluster, 2**20)
    assert {x.recompute for x in flash} == {"none", "full"}
    x = P.evaluate(model, cluster, 2**20, dp=8, recompute="selective")
    y = P.evaluate(model, cluster, 2**20, dp=8, recompute="none")
    assert (x.memory_per_gpu, x.step_time) == (y.memory_per_gpu, y.step_time)
    eager = P.plan(model, cluster, 2**20, attention="eager")
    assert "selective" in {x.recompute for x in eager}
    only = P.plan(model, cluster, 2**20, recompute=("selective",))
    assert only and {x.recompute for x in only} == {"selective"}


def test_llama3_rows_agree_at_the_interleaving_the_paper_states():
    """Llama 3 states an interleaved schedule whose first chunk holds only the embedding
    (Dubey et al. 2024, sec. 3.3.2): 126 layers + embedding + output = 128 slots over 16 stages,
    v = 8. At v = 8 both published rows (430 TFLOP/s on 8,192 GPUs, 400 on 16,384, Table 4) imply
    nearly one kernel efficiency, and 430/400 is v = 8's ratio of busy fractions, not 1F1B's;
    1F1B measured as the Megatron-Core calibration was (TP overlapped) needs 0.669 (issue
    25.7-25.8)."""
    assert (LLAMA3_405B.layers + 2) / 16 == 8

    def implied(n, published, **options):
        return P.implied_mfu(
            LLAMA3_405B,
            P.Cluster(H100, 8, n // 8),
            LLAMA3_BATCH,
            published * 1e12,
            dp=n // 128,
            tp=8,
            pp=16,
            **options,
        )

    at_v8 = [
        implied(n, t, interleave=8, **P.LLAMA3_SHARDING) for n, t in ((8192, 430), (16384, 400))
    ]
    assert at_v8 == pytest.approx([0.547, 0.541], abs=0.001)

    def busy(m, v):
        return 1 - 15 / (v * m + 15)

    assert busy(32, 8) / busy(16, 8) == pytest.approx(1.055, abs=0.001)
    assert busy(32, 1) / busy(16, 1) == pytest.approx(1.319, abs=0.001)
    assert abs(busy(32, 8) / busy(16, 8) - 430 / 400) < abs(busy(32, 1) / busy(16, 1) - 430 / 400)
    one_f = implied(8192, 430, zero_stage=2, overlap=1.0, tp_overlap=True)
    assert one_f == pytest.approx(0.669, abs=0.001)
