"""The planner against the worked problems of "How to Scale Your Model" (Austin et al. 2025,
part 12, "Rooflines for LLM Scaling on GPUs") and the published layout of Llama 3 405B
(Llama Team, "The Llama 3 Herd of Models", 2024, section 3.3.2 and Table 4)."""

import math

import pytest

import gpu_utils as gu

P = gu.parallelism
H100 = "H100-SXM"

# Llama 3 405B (Table 3 of the Llama 3 paper: 126 layers, model dimension 16,384, 128 heads,
# vocabulary 128,256), trained at sequence length 8,192 with 16M-token batches on 16,384 H100s
# with TP 8, CP 1, PP 16, DP 128 (Table 4).
LLAMA3_405B = P.Model(params=405e9, layers=126, hidden=16384, heads=128, seq_len=8192, vocab=128256)
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


# A wide, shallow model whose attention term is 0.1% of its FLOPs, so that the book's MLP-only
# roofline applies: 2 layers of hidden 8192 (1.6e9 parameters), sequences of 64 tokens.
WIDE = P.Model(params=2 * 12 * 8192**2, layers=2, hidden=8192, heads=64, seq_len=64, vocab=0)


@pytest.mark.parametrize(
    "nodes, gpus_per_node, across", [(64, 8, True), (1, 8, False)], ids=["across", "inside"]
)
def test_data_parallel_roofline_switches_at_c_over_w(nodes, gpus_per_node, across):
    """Pure data parallelism, one micro-batch, perfect overlap and FLOPs (mfu=1): the gradient
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
            WIDE, cluster, sequences * WIDE.seq_len * n, dp=n, micro_batch_size=sequences, mfu=1.0
        )
        assert layout.fits and layout.micro_batches == 1
        assert layout.bound == expected, (sequences * WIDE.seq_len, layout.describe())


def test_llama3_layout_fits_and_ranks_among_the_best(llama3_plan):
    best = llama3_plan[0]
    assert best.fits and best.tp == 8  # tensor parallelism fills the NVLink node
    theirs = [x for x in llama3_plan if (x.tp, x.pp, x.dp) == (8, 16, 128) and x.fits]
    assert theirs, "Llama 3's layout should fit"
    rank = llama3_plan.index(theirs[0])
    assert rank < 0.02 * len(llama3_plan)  # among the best 2% of ~1,800 layouts (17th now)
    # within 1.6x of the best: the planner prefers 2048-way ZeRO-3 without pipelining, which
    # it credits with perfect overlap; with 16 micro-batches Llama 3's layout needs full
    # recompute here (see the next test), a third more compute
    assert theirs[0].step_time < 1.6 * best.step_time
    assert theirs[0].micro_batches == 16  # 2,048 sequences / DP 128, one sequence each


def test_llama3_with_zero_1_as_the_book_describes_it(llama3_plan):
    """The book: "8-way Tensor Parallelism ..., 16-way Pipeline Parallelism, 128-way ZeRO-1".
    With Korthikanti's activation accounting (no FlashAttention) that needs full recompute here:
    selective recompute leaves 16 micro-batches x 8 layers of 34 sbh/t, about 68 GiB."""
    zero1 = [x for x in llama3_plan if (x.tp, x.pp, x.dp, x.zero_stage) == (8, 16, 128, 1)]
    fitting = [x for x in zero1 if x.fits]
    assert fitting and {x.recompute for x in fitting} == {"full"}
    assert fitting[0].step_time < 1.6 * llama3_plan[0].step_time
    assert llama3_plan.index(fitting[0]) < 0.03 * len(llama3_plan)


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
            4096, 1, 4096, 32, tp=2, sequence_parallel=True, recompute="selective"
        )
        * (32 / 2)
        * 2
    )  # L/p layers x p micro-batches in flight (1F1B)
    assert x.memory_per_gpu == pytest.approx(state.total + acts)
    assert x.margin == pytest.approx(0.9 * gu.specs.get(H100).hbm_bytes - x.memory_per_gpu)


def test_pipeline_bubble_and_interleaving():
    model = P.Model(params=7e9, layers=32, hidden=4096, heads=32, seq_len=4096, vocab=32000)
    cluster = P.Cluster(H100, 8, 2)
    for m in (4, 16):
        x = P.evaluate(model, cluster, 4 * m * 4096, dp=4, tp=1, pp=4, zero_stage=1)
        assert x.micro_batches == m and x.bubble == pytest.approx(3 / (m + 3))
        y = P.evaluate(model, cluster, 4 * m * 4096, dp=4, tp=1, pp=4, zero_stage=1, interleave=2)
        assert y.bubble == pytest.approx(3 / (2 * m + 3)) and y.step_time < x.step_time


def test_zero3_moves_one_and_a_half_times_the_data_parallel_volume():
    model = P.Model(params=7e9, layers=32, hidden=4096, heads=32, seq_len=4096, vocab=32000)
    cluster = P.Cluster(H100, 8, 4)
    args = dict(dp=32, micro_batch_size=1, recompute="full")
    z1 = P.evaluate(model, cluster, 32 * 4096, zero_stage=1, **args)
    z3 = P.evaluate(model, cluster, 32 * 4096, zero_stage=3, **args)
    assert z3.comm_bytes["dp"] == pytest.approx(1.5 * z1.comm_bytes["dp"])
    assert z3.memory_per_gpu < z1.memory_per_gpu


def test_full_recompute_costs_a_third_more_compute():
    model = P.Model(params=7e9, layers=32, hidden=4096, heads=32, seq_len=4096, vocab=32000)
    cluster = P.Cluster(H100, 8, 1)
    none = P.evaluate(model, cluster, 8 * 4096, dp=8, zero_stage=3)
    full = P.evaluate(model, cluster, 8 * 4096, dp=8, zero_stage=3, recompute="full")
    assert full.compute_time / none.compute_time == pytest.approx(4 / 3)
    assert full.memory_breakdown["activations"] < none.memory_breakdown["activations"] / 10


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
    assert w.layouts[0] == P.plan(model, cluster, batch, mfu=0.5)[0]
    before = w.summary.value
    w.model.value = "70B (Llama 3 shape)"  # 70B on one node: nothing fits
    assert w.summary.value != before and not any(x.fits for x in w.layouts)
    assert ", 0 fit" in w.summary.value
    w.nodes.value = 16
    assert w.inputs()[1].n_gpus == 128 and w.layouts[0].fits
    assert "50%" in w.summary.value
    axes = gu.widgets.planner_plot(w.layouts, 72 * 2**30, top=5)
    assert len(axes[0].patches) == 5
    plt.close("all")


def test_dropout_free_models_need_less_activation_memory():
    model = P.Model(params=7e9, layers=32, hidden=4096, heads=32, seq_len=4096, vocab=32000)
    cluster = P.Cluster(H100, 8, 1)
    args = dict(dp=8, zero_stage=3, micro_batch_size=1)
    paper = P.evaluate(model, cluster, 8 * 4096, **args)
    no_dropout = P.evaluate(model, cluster, 8 * 4096, dropout_masks=False, **args)
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
