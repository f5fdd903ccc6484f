"""gu.memory against the papers it implements and against what autograd really saves.

ZeRO (Rajbhandari et al. 2020), Figure 1; Korthikanti et al. 2022, equations 1-4, Table 2 and
section 5's worked numbers; Kwon et al. 2023 (vLLM), section 3's KV-cache example.
"""

import pytest

import gpu_utils as gu

mem = gu.memory


# --- ZeRO, Figure 1: Psi = 7.5B, N_d = 64, K = 12 ----------------------------------------------


@pytest.mark.parametrize(
    "stage, gigabytes",
    [(0, 120), (1, 31.4), (2, 16.6), (3, 1.9)],  # the figure's labels, decimal GB
)
def test_zero_figure_1(stage, gigabytes):
    state = mem.model_state_bytes(7.5e9, dp=64, zero_stage=stage)
    assert state.total / 1e9 == pytest.approx(gigabytes, abs=0.05)


def test_zero_figure_1_exact_terms():
    psi, nd = 7.5e9, 64
    assert int(mem.model_state_bytes(psi, dp=nd)) == 16 * psi
    assert int(mem.model_state_bytes(psi, dp=nd, zero_stage=1)) == 4 * psi + 12 * psi / nd
    assert int(mem.model_state_bytes(psi, dp=nd, zero_stage=2)) == 2 * psi + 14 * psi / nd
    assert int(mem.model_state_bytes(psi, dp=nd, zero_stage=3)) == 16 * psi / nd  # 1.875 GB


def test_breakdown_parts_and_what_each_stage_partitions():
    s1 = mem.model_state_bytes(1e9, dp=8, zero_stage=1)
    assert (s1.parameters, s1.gradients, s1.optimizer) == (2e9, 2e9, 12e9 / 8)
    s2 = mem.model_state_bytes(1e9, dp=8, zero_stage=2)
    assert (s2.parameters, s2.gradients) == (2e9, 2e9 / 8)
    s3 = mem.model_state_bytes(1e9, dp=8, zero_stage=3)
    assert s3.parameters == 2e9 / 8
    # without data parallelism ZeRO has nothing to partition over
    assert all(int(mem.model_state_bytes(1e9, zero_stage=z)) == 16e9 for z in range(4))


def test_fp32_adam_accounting():
    # fp32 weights and gradients, Adam's two moments: 4 + 4 + 8 = 16 bytes per parameter
    assert int(mem.model_state_bytes(1e6, param_bytes=4, grad_bytes=4, optimizer_bytes=8)) == 16e6


@pytest.mark.parametrize("bad", [dict(zero_stage=4), dict(dp=0)])
def test_model_state_rejects_nonsense(bad):
    with pytest.raises(ValueError):
        mem.model_state_bytes(1e9, **bad)


# --- Korthikanti et al. 2022 ------------------------------------------------------------------

# GPT-3 175B and MT-NLG 530B as the paper's Table 3 configures them: s = 2048, t = 8.
GPT3 = dict(seq_len=2048, hidden=12288, n_heads=96)
MTNLG = dict(seq_len=2048, hidden=20480, n_heads=128)


def sbh(cfg, b=1):
    return cfg["seq_len"] * b * cfg["hidden"]


@pytest.mark.parametrize("cfg", [GPT3, MTNLG])
@pytest.mark.parametrize("b", [1, 4])
def test_equation_1_no_parallelism(cfg, b):
    s, h, a = cfg["seq_len"], cfg["hidden"], cfg["n_heads"]
    expected = s * b * h * (34 + 5 * a * s / h)
    got = mem.activation_bytes_per_layer(s, b, h, a)
    assert got == pytest.approx(expected)
    # the pieces of section 4.1: attention 11sbh + 5as^2b, MLP 19sbh, two LayerNorms 4sbh
    assert got == pytest.approx(11 * s * b * h + 5 * a * s * s * b + 19 * s * b * h + 4 * s * b * h)


@pytest.mark.parametrize("t", [1, 2, 4, 8])
def test_table_2_rows(t):
    s, h, a = GPT3["seq_len"], GPT3["hidden"], GPT3["n_heads"]
    x = s * h  # b = 1

    def f(**kw):
        return mem.activation_bytes_per_layer(s, 1, h, a, tp=t, **kw)

    assert f() == pytest.approx(x * (10 + 24 / t + 5 * a * s / (h * t)))  # eq. 2
    assert f(sequence_parallel=True) == pytest.approx(x / t * (34 + 5 * a * s / h))  # eq. 4
    assert f(recompute="selective") == pytest.approx(x * (10 + 24 / t))
    assert f(recompute="selective", sequence_parallel=True) == pytest.approx(x * 34 / t)
    assert f(recompute="full") == pytest.approx(2 * x)


def test_section_5_attention_share_gpt3_and_mtnlg():
    """Section 5: 5as/h is 80 for GPT-3 and 64 for MT-NLG, so selective recompute saves 70% and
    65% of the activation memory."""
    for cfg, ratio, saved in [(GPT3, 80, 0.70), (MTNLG, 64, 0.65)]:
        assert 5 * cfg["n_heads"] * cfg["seq_len"] / cfg["hidden"] == ratio
        full = mem.activation_bytes_per_layer(**cfg, micro_batch=1)
        selective = mem.activation_bytes_per_layer(**cfg, micro_batch=1, recompute="selective")
        assert 1 - selective / full == pytest.approx(saved, abs=0.005)


@pytest.mark.parametrize("cfg", [GPT3, MTNLG])
def test_abstract_five_times_less_activation_memory(cfg):
    """Abstract: sequence parallelism + selective recompute cut activation memory about 5x
    against tensor parallelism alone (t = 8)."""
    tp_only = mem.activation_bytes_per_layer(**cfg, micro_batch=1, tp=8)
    both = mem.activation_bytes_per_layer(
        **cfg, micro_batch=1, tp=8, sequence_parallel=True, recompute="selective"
    )
    assert 4.5 < tp_only / both < 5.5


def test_without_dropout_masks():
    s, b, h, a = 128, 2, 256, 8
    x = s * b * h
    assert mem.activation_bytes_per_layer(s, b, h, a, dropout_masks=False) == pytest.approx(
        x * (32 + 2 * a * s / h)
    )


def test_activation_bytes_under_1f1b_is_equation_5():
    """1F1B: the first stage holds p micro-batches of L/p layers = L layers' worth (eq. 5)."""
    per_layer = mem.activation_bytes_per_layer(2048, 1, 12288, 96, tp=8, sequence_parallel=True)
    for p in (1, 2, 8):
        total = mem.activation_bytes(96, 2048, 1, 12288, 96, tp=8, pp=p, sequence_parallel=True)
        assert total == pytest.approx(96 * per_layer)


@pytest.mark.parametrize(
    "bad", [dict(recompute="some"), dict(tp=3), dict(tp=0)], ids=["recompute", "tp3", "tp0"]
)
def test_activation_rejects_nonsense(bad):
    with pytest.raises(ValueError):
        mem.activation_bytes_per_layer(64, 1, 64, 4, **bad)


# --- KV cache: Kwon et al. 2023, section 3 ----------------------------------------------------


def test_kv_cache_opt_13b():
    """'the KV cache of a single token demands 800 KB of space, calculated as 2 (key and value
    vectors) x 5120 (hidden state size) x 40 (number of layers) x 2 (bytes per FP16)', and a
    2048-token request 'can be as much as 1.6 GB'."""
    per_token = mem.kv_cache_bytes(layers=40, kv_heads=40, head_dim=128, seq_len=1)
    assert per_token == 2 * 5120 * 40 * 2 == 819_200  # "800 KB" (KiB)
    request = mem.kv_cache_bytes(layers=40, kv_heads=40, head_dim=128, seq_len=2048)
    assert request / 2**30 == pytest.approx(1.6, abs=0.05)


def test_kv_cache_scales_with_kv_heads_batch_and_bytes():
    base = mem.kv_cache_bytes(80, 8, 128, 4096)
    assert mem.kv_cache_bytes(80, 64, 128, 4096) == 8 * base  # MHA vs 8 GQA groups
    assert mem.kv_cache_bytes(80, 8, 128, 4096, batch=3, bytes_per_value=1) == 1.5 * base


# --- measured against the formula ---------------------------------------------------------------

SHAPES = [(64, 2, 64, 4), (128, 1, 128, 8), (32, 3, 96, 6)]


@pytest.mark.parametrize("s, b, h, a", SHAPES)
def test_measured_equals_formula_plus_what_the_paper_leaves_out(s, b, h, a):
    """What autograd saves for one gu.gpt block (bf16, dropout 0) is the formula sbh(32 + 2as/h)
    plus exactly two things the paper does not count: LayerNorm's mean and 1/std (2 x s b values
    for each of the two LayerNorms, bf16 here) and the s x s boolean causal mask."""
    m = mem.measure_saved_activations(s, b, h, a)
    assert m.formula == mem.activation_bytes_per_layer(s, b, h, a, dropout_masks=False)
    assert m.measured == m.formula + 4 * s * b * 2 + s * s
    assert m.ratio == pytest.approx(1, abs=0.03)  # the stated tolerance: 3%


def test_measured_with_dropout_is_the_papers_own_formula():
    """With dropout the block saves what section 4.1 lists, 34 sbh + 5 as^2 b, except that the
    CPU's dropout masks are bf16 (2 bytes per element) where the paper assumes 1 byte."""
    s, b, h, a = 64, 2, 64, 4
    m = mem.measure_saved_activations(s, b, h, a, dropout=0.1)
    assert m.formula == mem.activation_bytes_per_layer(s, b, h, a)  # sbh (34 + 5as/h)
    masks_at_two_bytes = a * s * s * b + 2 * s * b * h
    assert m.measured == m.formula + 4 * s * b * 2 + s * s + masks_at_two_bytes
    assert m.ratio == pytest.approx(1, abs=0.13)


def test_measured_selective_and_full_recompute():
    s, b, h, a = 64, 2, 64, 4
    selective = mem.measure_saved_activations(s, b, h, a, recompute="selective")
    assert selective.measured == selective.formula + 4 * s * b * 2  # no mask: it is recomputed
    full = mem.measure_saved_activations(s, b, h, a, recompute="full")
    assert full.measured == full.formula == 2 * s * b * h  # only the block's input


def test_the_formula_with_dropout_masks_overestimates_a_dropout_free_model():
    m = mem.measure_saved_activations(64, 2, 64, 4)
    with_masks = mem.activation_bytes_per_layer(64, 2, 64, 4)
    assert m.measured < with_masks  # sbh(34 + 5as/h) counts masks and a copy this model lacks
    scores = [entry for entry in m.saved if entry[0] == (2, 4, 64, 64)]  # (b, a, s, s)
    assert scores == [((2, 4, 64, 64), "bfloat16", 2 * 4 * 64 * 64 * 2)]  # one softmax output


# --- one rank of a large FSDP2 job, traced with a fake process group and fake tensors --------


@pytest.mark.slow
def test_one_rank_of_a_64_way_fsdp2_job_matches_zero_3():
    """FSDP2 keeps fp32 parameter shards, fp32 gradient shards and Adam's two fp32 moments:
    ZeRO-3's (4 + 4 + 8) Psi / N_d bytes, exactly when the shapes divide by N_d; Adam adds one
    4-byte step counter per parameter tensor. Activations at the peak: the formula for the
    blocks plus the output layer's logits (bf16, then fp32 for the loss, and its gradient)."""
    config = gu.gpt.GPTConfig(
        vocab_size=512, seq_len=128, d_model=128, n_layers=2, n_heads=4, tie_weights=False
    )
    m = mem.measure_sharded_rank(config, world_size=64)
    assert m.n_params == gu.gpt.analytic_n_params(config)
    assert m.after_step["Sharded Param"] == m.formula["Sharded Param"] == 4 * m.n_params / 64
    assert m.after_step["Sharded Grad"] == m.formula["Sharded Grad"]
    n_tensors = len(list(gu.gpt.build(config).parameters()))
    assert m.after_step["OptState"] == m.formula["OptState"] + 4 * n_tensors
    logits = 128 * 512  # b s V values
    assert m.formula["Activation"] <= m.peak["Activation"]
    assert m.peak["Activation"] <= m.formula["Activation"] + 10 * logits + 16 * 128 * 128


def test_measured_state_of_a_model_with_adam():
    import torch

    model = gu.gpt.build(vocab_size=64, seq_len=16, d_model=32, n_layers=2, n_heads=4)
    n = gu.gpt.n_params(model)
    state = mem.measured_state_bytes(model)
    assert (state.parameters, state.gradients, state.optimizer) == (4 * n, 0, 0)
    optimizer = torch.optim.Adam(model.parameters())
    idx = torch.randint(0, 64, (2, 16), generator=torch.Generator().manual_seed(0))
    model(idx, idx)[1].backward()
    optimizer.step()
    state = mem.measured_state_bytes(model, optimizer)
    n_tensors = len(list(model.parameters()))  # Adam keeps a 4-byte step count per tensor
    # fp32 everything: 4 + 4 + 8 bytes per parameter, the tied embedding counted once
    assert (
        int(state)
        == int(mem.model_state_bytes(n, param_bytes=4, grad_bytes=4, optimizer_bytes=8))
        + 4 * n_tensors
    )


# --- fused attention (FlashAttention, Dao et al. 2022) ------------------------------------------


@pytest.mark.parametrize("t, sp", [(1, False), (8, False), (8, True)])
def test_flash_attention_drops_exactly_the_s_by_s_term(t, sp):
    """Korthikanti's 5as/h (x sbh) is the s x s part; a fused kernel keeps instead one fp32
    log-sum-exp per head and token, 4a/h: flash = selective recompute + 4as b bytes / t."""
    s, b, h, a = 2048, 1, 12288, 96  # GPT-3 175B (Korthikanti et al. 2022, Table 3)
    args = dict(tp=t, sequence_parallel=sp)
    flash = gu.memory.activation_bytes_per_layer(s, b, h, a, attention="flash", **args)
    selective = gu.memory.activation_bytes_per_layer(s, b, h, a, recompute="selective", **args)
    eager = gu.memory.activation_bytes_per_layer(s, b, h, a, **args)
    assert flash == pytest.approx(selective + 4 * a * s * b / t)
    assert eager - selective == pytest.approx(5 * a * s * s * b / t)
    flash_selective = gu.memory.activation_bytes_per_layer(
        s, b, h, a, attention="flash", recompute="selective", **args
    )
    assert flash_selective == flash  # nothing left for selective recompute to drop


def test_flash_attention_for_a_4096_token_sequence_of_a_7b_model():
    """Chapter 09's example without dropout: 32 layers x 96 sbh = 48 GiB written out, 16 GiB
    with a fused kernel."""
    args = dict(dropout_masks=False)
    eager = 32 * gu.memory.activation_bytes_per_layer(4096, 1, 4096, 32, **args)
    flash = 32 * gu.memory.activation_bytes_per_layer(4096, 1, 4096, 32, attention="flash", **args)
    assert eager / 2**30 == pytest.approx(48.0)
    assert flash / 2**30 == pytest.approx(16.0, abs=0.02)
    with pytest.raises(ValueError, match="attention"):
        gu.memory.activation_bytes_per_layer(4096, 1, 4096, 32, attention="fused")


@pytest.mark.parametrize("s, b, h, a", [(64, 2, 128, 4), (96, 3, 128, 8)])
def test_measured_flash_attention_keeps_no_s_by_s_tensor(s, b, h, a):
    """gu.gpt with PyTorch's fused attention saves the flash formula's bytes plus only the
    LayerNorms' mean and 1/std (2 per LayerNorm, s b values each, in bf16): no s x s tensor."""
    m = gu.memory.measure_saved_activations(s, b, h, a, attention="flash")
    assert m.measured == m.formula + 2 * 2 * s * b * 2
    assert all(tuple(shape[-2:]) != (s, s) for shape, *_ in m.saved)
    eager = gu.memory.measure_saved_activations(s, b, h, a)
    assert any(tuple(shape[-2:]) == (s, s) for shape, *_ in eager.saved)
    assert any(dtype == "float32" and shape == (b, a, s) for shape, dtype, _ in m.saved)


def _chapter_09_table() -> dict[str, list[str]]:
    """Chapter 09's table of one rank of the 7B model sharded 256 ways: row name -> cells."""
    import nbformat

    from conftest import ROOT

    notebook = nbformat.read(ROOT / "notebooks" / "09_data_parallel.ipynb", as_version=4)
    (cell,) = [c for c in notebook.cells if "| rank 0 of 256 | measured |" in c.source]
    rows = [line.strip("|").split("|") for line in cell.source.splitlines() if line.startswith("|")]
    return {r[0].strip(): [x.strip() for x in r[1:]] for r in rows[2:]}


@pytest.mark.slow
def test_chapter_09s_7b_table_is_what_the_trace_measures():
    """The table chapter 09 prints for rank 0 of the 7B-shaped gu.gpt sharded 256 ways (too slow
    for the notebook, about 30 s) is what measure_sharded_rank reports now, to its digits."""
    m = mem.measure_sharded_rank(world_size=256)
    table, gib = _chapter_09_table(), 2**30

    def shown(value: float, cell: str) -> bool:
        digits = len(cell.split()[0].split(".")[1])
        return f"{value / gib:.{digits}f} GiB" == cell

    pairs = {
        "sharded parameters (fp32)": "Sharded Param",
        "sharded gradients (fp32)": "Sharded Grad",
        "Adam moments": "OptState",
    }
    for row, key in pairs.items():
        measured, formula = table[row]
        assert shown(m.after_step[key], measured) and shown(m.formula[key], formula), row
    measured, formula = table["activations, at the peak"]
    assert shown(m.peak["Activation"], measured) and shown(m.formula["Activation"], formula)
    assert shown(m.peak["Total"], table["everything, at the peak"][0])
