"""gu.flops against published worked numbers: PaLM's 46.2% MFU (Chowdhery et al. 2022, Table 3
and appendix B) and the FLOP expressions of Megatron-LM (Narayanan et al. 2021, section 5.1) and
Korthikanti et al. 2022 (section 6.3)."""

import pytest

import gpu_utils as gu

fl = gu.flops

# PaLM 540B, Table 1: 118 layers, 48 heads of size 256 (H Q = 12288; d_model is 18432), 540.35B
# parameters; section 4 / Table 3: sequence length 2048, 238.3K tokens/s on 6144 TPU v4 chips.
PALM = dict(n_params=540.35e9, layers=118, d_model=18432, seq_len=2048, attention_width=48 * 256)
# TPU v4 peak bf16: 275 TFLOP/s per chip (N. Jouppi et al., "TPU v4: An Optically Reconfigurable
# Supercomputer for Machine Learning", ISCA 2023; Google Cloud TPU v4 documentation).
TPU_V4_PEAK = 275e12


def test_palm_540b_model_flops_utilization():
    per_token = fl.training_flops_per_token(**PALM)
    assert per_token == 6 * 540.35e9 + 12 * 118 * 48 * 256 * 2048
    assert fl.mfu(238.3e3, per_token, 6144 * TPU_V4_PEAK) == pytest.approx(0.462, abs=0.0005)


def test_palm_attention_term_is_small_but_not_zero():
    attention = fl.attention_flops_per_token(118, 18432, 2048, attention_width=12288)
    assert attention / fl.training_flops_per_token(**PALM) == pytest.approx(0.0109, abs=0.0005)


def test_causal_halves_only_the_attention_term():
    args = dict(layers=24, d_model=2048, seq_len=4096)
    full = fl.training_flops_per_token(1.3e9, **args)
    causal = fl.training_flops_per_token(1.3e9, causal=True, **args)
    assert full - causal == pytest.approx(12 * 24 * 2048 * 4096 / 2)


def test_embedding_switch():
    args = dict(layers=12, d_model=768, seq_len=1024)
    with_emb = fl.training_flops_per_token(124e6, **args)
    without = fl.training_flops_per_token(124e6, include_embedding=False, vocab_size=50257, **args)
    assert with_emb - without == 6 * 50257 * 768
    with pytest.raises(ValueError):
        fl.training_flops_per_token(124e6, include_embedding=False, **args)


@pytest.mark.parametrize("n_layers, h, s, v", [(96, 12288, 2048, 51200), (105, 20480, 2048, 51200)])
def test_matches_megatron_and_korthikanti_expressions(n_layers, h, s, v):
    """Per token: 72 l h^2 (1 + s/(6h) + V/(12 l h)) model FLOPs (Korthikanti section 6.3), which
    is 6N + 12 l h s with N = 12 l h^2 + V h (Narayanan et al. 2021 eq. 3 without recompute)."""
    n_l = n_layers
    n = 12 * n_l * h * h + v * h
    got = fl.training_flops_per_token(n, layers=n_l, d_model=h, seq_len=s)
    assert got == pytest.approx(72 * n_l * h * h * (1 + s / (6 * h) + v / (12 * n_l * h)))


def test_hardware_flops_count_recomputation():
    args = dict(layers=32, d_model=4096, seq_len=4096)
    n = 6.7e9
    model = fl.training_flops_per_token(n, **args)
    assert fl.hardware_flops_per_token(n, **args) == model
    attention = 12 * 32 * 4096 * 4096
    assert fl.hardware_flops_per_token(n, recompute="full", **args) == 8 * n + attention * 4 / 3
    assert fl.hardware_flops_per_token(n, recompute="selective", **args) == pytest.approx(
        6 * n + attention * 2  # Korthikanti et al. equation 8: s/(3h) instead of s/(6h)
    )
    # full recompute: HFU / MFU = 4/3 when attention is counted the same way
    peak = fl.peak_flops("H100-SXM", n_gpus=8)
    hw = fl.hardware_flops_per_token(n, recompute="full", **args)
    assert fl.hfu(1e4, hw, peak) / fl.mfu(1e4, model, peak) == pytest.approx(4 / 3)
    with pytest.raises(ValueError):
        fl.hardware_flops_per_token(n, recompute="partial", **args)


def test_peaks_are_dense_from_specs():
    h100 = gu.specs.get("H100-SXM")
    assert fl.peak_flops("H100-SXM") == h100.bf16_dense_flops == 989.5e12  # not 1979 (sparse)
    assert fl.peak_flops("A100-SXM4-80GB", "bf16", n_gpus=8) == 8 * 312e12
    assert fl.peak_flops("H100-SXM", "fp8") == 1979e12
    with pytest.raises(ValueError):
        fl.peak_flops("T4", "bf16")  # no bf16 tensor cores


def test_mfu_of_a_run_at_peak_is_one_and_rejects_zero_peak():
    per_token = fl.training_flops_per_token(1e9, layers=16, d_model=2048, seq_len=2048)
    peak = fl.peak_flops("H100-SXM")
    assert fl.mfu(peak / per_token, per_token, peak) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        fl.mfu(1.0, per_token, 0)


# Korthikanti et al. 2022, Table 3 (heads, hidden, layers, GPUs, global batch; s = 2048,
# V = 51200, A100 at 312 TFLOP/s) and Table 5 (iteration time with sequence parallelism and
# selective recompute, model and hardware FLOPs utilization).
TABLE_5 = [
    # heads, hidden, layers, gpus, batch, seconds, MFU, HFU
    (64, 6144, 48, 8, 4, 1.10, 0.415, 0.437),  # 22B
    (96, 12288, 96, 64, 64, 13.75, 0.514, 0.528),  # 175B
    (128, 20480, 105, 280, 280, 37.83, 0.560, 0.570),  # 530B
    (160, 25600, 128, 512, 512, 71.49, 0.563, 0.570),  # 1T
]


@pytest.mark.parametrize("a, h, n_layers, gpus, batch, seconds, model_fu, hardware_fu", TABLE_5)
def test_korthikanti_table_5_mfu_and_hfu(
    a, h, n_layers, gpus, batch, seconds, model_fu, hardware_fu
):
    s, v = 2048, 51200
    n = 12 * n_layers * h * h + v * h  # the weights their FLOP count (eq. 7) multiplies
    tokens_per_second = batch * s / seconds
    peak = gpus * 312e12
    args = dict(layers=n_layers, d_model=h, seq_len=s)
    model = fl.training_flops_per_token(n, **args)
    hardware = fl.hardware_flops_per_token(n, recompute="selective", **args)
    assert fl.mfu(tokens_per_second, model, peak) == pytest.approx(model_fu, abs=0.002)
    assert fl.hfu(tokens_per_second, hardware, peak) == pytest.approx(hardware_fu, abs=0.002)


def test_the_default_is_palms_count_and_causal_is_another_convention():
    """PaLM's 46.2% comes from the defaults (the whole T x T attention term); counting only the
    causal half gives a different, lower figure, not comparable with the published one."""
    palm = fl.mfu(238.3e3, fl.training_flops_per_token(**PALM), 6144 * TPU_V4_PEAK)
    causal = fl.mfu(238.3e3, fl.training_flops_per_token(causal=True, **PALM), 6144 * TPU_V4_PEAK)
    assert palm == pytest.approx(0.462, abs=0.0005) and causal < palm - 0.002


def test_flash_attention_recomputes_the_scores_in_its_backward():
    """FlashAttention's backward recomputes Q K^T (2 L H Q T more per token): 6N + 14 L H Q T,
    selective recompute then adds nothing, and full recompute gives 8N + 18 L H Q T."""
    args = dict(layers=96, d_model=12288, seq_len=2048)
    lhqt = 96 * 12288 * 2048
    n = 175e9
    flash = fl.hardware_flops_per_token(n, attention="flash", **args)
    assert flash == pytest.approx(6 * n + 14 * lhqt)
    assert fl.hardware_flops_per_token(n, attention="flash", recompute="selective", **args) == flash
    full = fl.hardware_flops_per_token(n, attention="flash", recompute="full", **args)
    assert full == pytest.approx(8 * n + 18 * lhqt)
    with pytest.raises(ValueError, match="attention"):
        fl.hardware_flops_per_token(n, attention="fused", **args)
