"""Training FLOPs per token and how well a run uses its GPUs: MFU and HFU (chapters 09 and 10).

Codebases count FLOPs differently, so every convention here is explicit:

* a multiply-add is 2 FLOPs; the backward pass costs twice the forward (one matmul for the
  input gradient, one for the weight gradient), so training costs 3 forward passes;
* the parameter term is 6N per token (J. Kaplan et al., "Scaling Laws for Neural Language
  Models", 2020, section 2.1); whether N includes the embedding is a switch;
* attention adds 12 L H Q T per token (A. Chowdhery et al., "PaLM: Scaling Language Modeling
  with Pathways", JMLR 2023 (arXiv:2204.02311), appendix B), L layers, H heads of size Q,
  T tokens of context, counting the whole T x T score matrix even though PaLM is causal. That
  is the default here, so MFU computed with the defaults is PaLM's MFU; ``causal=True`` counts
  only the lower triangle a causal kernel computes (half the term), a different convention
  whose MFU is lower and not comparable with PaLM's or Llama 3's published figures;
* model FLOPs utilization (MFU, PaLM appendix B) divides the FLOPs the model needs by what the
  hardware could do; hardware FLOPs utilization (HFU) also counts recomputed forward passes
  (V. Korthikanti et al., "Reducing Activation Recomputation in Large Transformer Models",
  MLSys 2023, section 6.3);
* peaks are dense tensor-core rates from ``gu.specs`` (never the 2:4 sparse figures).
"""

from __future__ import annotations

from ..facts import specs

__all__ = [
    "KORTHIKANTI_2022",
    "PALM_2022",
    "attention_flops_per_token",
    "hardware_flops_per_token",
    "hfu",
    "mfu",
    "peak_flops",
    "training_flops_per_token",
]

PALM_2022 = (
    "A. Chowdhery et al., 'PaLM: Scaling Language Modeling with Pathways', JMLR 24(240), 2023 "
    "(arXiv:2204.02311), appendix B 'Compute Usage and Environmental Impact'"
)
KORTHIKANTI_2022 = (
    "V. Korthikanti et al., 'Reducing Activation Recomputation in Large Transformer Models', "
    "MLSys 2023 (arXiv:2205.05198), section 6.3"
)

RECOMPUTE = ("none", "selective", "full")


def attention_flops_per_token(
    layers: int, d_model: int, seq_len: int, *, causal: bool = False, attention_width=None
) -> float:
    """Training FLOPs per token of the attention scores and their use: 12 L H Q T (PALM_2022).

    Per layer and token, forward: Q K^T is 2 H Q T FLOPs and scores x V another 2 H Q T; x3 for
    training. H Q = ``d_model`` unless ``attention_width`` gives it (PaLM 540B has 48 heads of
    256, H Q = 12288, and d_model 18432). ``causal=True`` halves it (only the lower triangle).
    """
    width = d_model if attention_width is None else attention_width
    term = 12 * layers * width * seq_len
    return term / 2 if causal else term


def training_flops_per_token(
    n_params: float,
    *,
    layers: int,
    d_model: int,
    seq_len: int,
    causal: bool = False,
    include_embedding: bool = True,
    vocab_size: int | None = None,
    attention_width: int | None = None,
) -> float:
    """Model FLOPs to train on one token: 6N + 12 L H Q T (PALM_2022, appendix B), with the
    defaults exactly PaLM's count (``causal=False``: the whole T x T scores, as PaLM counts).

    ``include_embedding=False`` takes the input embedding, V x d_model parameters that are
    looked up rather than multiplied, out of N (give ``vocab_size``). With this switch on and
    off the same run's MFU differs by a few percent for small models; PaLM counts all N.
    """
    n = n_params
    if not include_embedding:
        if vocab_size is None:
            raise ValueError("give vocab_size to leave the embedding out")
        n -= vocab_size * d_model
    attention = attention_flops_per_token(
        layers, d_model, seq_len, causal=causal, attention_width=attention_width
    )
    return 6 * n + attention


def hardware_flops_per_token(
    n_params: float,
    *,
    layers: int,
    d_model: int,
    seq_len: int,
    recompute: str = "none",
    causal: bool = False,
    attention_width: int | None = None,
    attention: str = "eager",
) -> float:
    """FLOPs the hardware executes per token, counting recomputation (KORTHIKANTI_2022).

    Full recompute runs every forward twice: 8N + 16 L H Q T instead of 6N + 12 L H Q T (the
    forward is a third of training: 2N + 4 L H Q T). Megatron-LM's count (Narayanan et al. 2021,
    equation 3) is the same except that it does not recompute the output layer (6 V h, not 8).
    Selective recompute follows KORTHIKANTI_2022's equation 8, 72 B L s h^2 (1 + s/(3h) + ...):
    6N + 24 L H Q T, the attention term doubled; with it the paper's Table 5 HFU figures follow
    from its iteration times (tests/test_flops.py). Re-running only the forward of Q K^T and
    scores x V would add 4 L H Q T (16 in all); the paper counts more.

    ``attention="flash"``: a fused kernel (T. Dao et al., "FlashAttention", NeurIPS 2022,
    section 3.1 and Algorithm 4) recomputes the scores Q K^T in its backward pass instead of
    storing them, one more forward matmul, 2 L H Q T: 6N + 14 L H Q T without recompute (there
    is nothing left for selective recompute to drop, so "selective" counts the same) and
    8N + 18 L H Q T with full recompute.
    """
    if recompute not in RECOMPUTE:
        raise ValueError(f"recompute must be one of {RECOMPUTE}, got {recompute!r}")
    if attention not in ("eager", "flash"):
        raise ValueError(f"attention must be 'eager' or 'flash', got {attention!r}")
    fused = attention == "flash"
    attention = attention_flops_per_token(
        layers, d_model, seq_len, causal=causal, attention_width=attention_width
    )
    parameter = 6 * n_params
    if fused:  # the backward's recomputed Q K^T: 1/6 of the training term
        flash_extra = attention / 6
        if recompute == "full":
            return 8 * n_params + attention * 4 / 3 + flash_extra
        return parameter + attention + flash_extra
    if recompute == "full":
        parameter += 2 * n_params
        attention *= 4 / 3
    elif recompute == "selective":
        attention *= 2
    return parameter + attention


def peak_flops(gpu: str, dtype: str = "bf16", n_gpus: int = 1) -> float:
    """Dense peak FLOP/s of ``n_gpus`` GPUs named in ``gu.specs`` (never the sparse figure)."""
    peak = specs.get(gpu).peak_flops(dtype)
    if peak is None:
        raise ValueError(f"{gpu} has no {dtype} tensor cores in gu.specs")
    return peak * n_gpus


def mfu(tokens_per_second: float, flops_per_token: float, peak_flops: float) -> float:
    """Model FLOPs utilization: tokens/s x model FLOPs per token / peak FLOP/s (PALM_2022).

    ``flops_per_token``: :func:`training_flops_per_token` with its defaults for PaLM's MFU,
    6N + 12 L H Q T. ``peak_flops`` is the whole system's: per-chip peak x number of chips.
    """
    if peak_flops <= 0:
        raise ValueError(f"peak_flops must be positive, got {peak_flops!r}")
    return tokens_per_second * flops_per_token / peak_flops


def hfu(tokens_per_second: float, hardware_flops_per_token: float, peak_flops: float) -> float:
    """Hardware FLOPs utilization: as :func:`mfu`, with the FLOPs recomputation adds counted
    (use :func:`hardware_flops_per_token`). HFU >= MFU; they are equal without recomputation."""
    return mfu(tokens_per_second, hardware_flops_per_token, peak_flops)
