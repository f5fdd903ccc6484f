"""gu.inference (chapter 13) against published runs and papers, not against its own formulas.

Published cases (kept out of the chapter's prose so that they stay a fair test):
- gpt-fast (github.com/pytorch-labs/gpt-fast, README "Benchmarks"): on an A100-80GB at batch 1,
  a 5-token prompt, Llama-2-7B in bf16 ran at 104.9 tokens/s and 1,397.31 GB/s; Llama-2-70B in
  bf16 did not fit ("OOM"), in int8 it ran at 19.13 tokens/s and 1,322.58 GB/s. gpt-fast's
  bandwidth is its model size (parameters and buffers, the embedding left out: generate.py,
  ``_get_model_size``) times tokens/s, so bandwidth / tokens/s is the bytes one step read. Its
  cache is preallocated for prompt + 200 new tokens; the mean context of the run is ~105.
- vLLM's announcement (blog.vllm.ai, 2023-06-20): the KV cache "takes up to 1.7GB for a single
  sequence in LLaMA-13B" (2,048 tokens; Llama 2 13B has LLaMA-13B's shape).
- Parameter totals: Llama 2 7B, 13B and 70B (Touvron et al. 2023: 6.74B, 13.0B, 69.0B as the
  released checkpoints count them), Llama 3 8B, 70B and 405B (Dubey et al. 2024).
"""

from __future__ import annotations

import pytest

import gpu_utils as gu

I = gu.inference
GPT_FAST_CONTEXT = 5 + 100  # a 5-token prompt and 200 new tokens: the mean context of a step


def test_llama_2_7b_reads_what_gpt_fast_measured_per_token():
    step = I.decode_step(I.DECODERS["Llama 2 7B"], "A100-SXM4-80GB", 1, GPT_FAST_CONTEXT)
    published_bytes = 1397.31e9 / 104.9
    assert step.bytes_moved == pytest.approx(published_bytes, rel=0.01)
    assert step.bound == "memory"
    # the run is slower than the bound (an A100 power-limited to 330 W), never faster
    assert 104.9 < step.tokens_per_s < 2 * 104.9


def test_llama_2_70b_does_not_fit_an_a100_in_bf16_and_does_in_int8():
    d = I.DECODERS["Llama 2 70B"]
    bf16 = I.decode_step(d, "A100-SXM4-80GB", 1, GPT_FAST_CONTEXT)
    int8 = I.decode_step(d, "A100-SXM4-80GB", 1, GPT_FAST_CONTEXT, weight_bytes=1)
    assert not bf16.fits and int8.fits
    # int8 adds a bf16 scale per output channel (gpt-fast's WeightOnlyInt8Linear): under 0.1%
    assert int8.bytes_moved == pytest.approx(1322.58e9 / 19.13, rel=0.01)
    assert 19.13 < int8.tokens_per_s


def test_the_kv_cache_of_one_llama_13b_sequence_is_vllms_1_7_gb():
    per_token = I.DECODERS["Llama 2 13B"].kv_bytes_per_token()
    assert round(per_token * 2048 / 1e9, 1) == 1.7


@pytest.mark.parametrize(
    ("name", "published"),
    [
        ("Llama 2 7B", 6.74e9),
        ("Llama 2 13B", 13.0e9),
        ("Llama 2 70B", 69.0e9),
        ("Llama 3 8B", 8.0e9),
        ("Llama 3 70B", 70.6e9),
        ("Llama 3 405B", 405e9),
    ],
)
def test_parameters_counted_from_the_shapes_match_the_published_totals(name, published):
    d = I.DECODERS[name]
    assert d.params == d.shape_params
    assert d.params == pytest.approx(published, rel=0.005)


def test_grouped_query_attention_keeps_only_the_key_value_heads():
    llama3_70b, llama2_70b = I.DECODERS["Llama 3 70B"], I.DECODERS["Llama 2 70B"]
    mha = I.Decoder(llama3_70b.params, 80, 8192, 64, 64, 128256)
    assert mha.kv_bytes_per_token() == 8 * llama3_70b.kv_bytes_per_token()
    # 2 (K and V) x 80 layers x 8 heads x 128 dims x 2 bytes
    assert llama2_70b.kv_bytes_per_token() == 2 * 80 * 8 * 128 * 2


@pytest.mark.parametrize("gpu", ["A100-SXM4-80GB", "H100-SXM", "H200", "L4"])
def test_decode_turns_compute_bound_at_the_critical_batch(gpu):
    # with no context the step is the weight matmuls alone; the critical batch separates them
    decoder = I.DECODERS["Llama 3 8B"]
    b = I.critical_batch(gpu)
    below = I.decode_step(decoder, gpu, int(b * 0.9), context=0)
    above = I.decode_step(decoder, gpu, int(b * 1.1) + 1, context=0)
    assert below.bound == "memory" and above.bound == "compute"
    spec = gu.specs.get(gpu)
    assert b == pytest.approx(spec.bf16_dense_flops / spec.hbm_bandwidth)


def test_a_long_context_keeps_a_large_batch_bound_by_memory():
    decoder, gpu = I.DECODERS["Llama 3 8B"], "H100-SXM"
    batch = int(2 * I.critical_batch(gpu))
    assert I.decode_step(decoder, gpu, batch, context=0).bound == "compute"
    assert I.decode_step(decoder, gpu, batch, context=32768).bound == "memory"


def test_int8_weights_halve_the_memory_bound_time_at_batch_1():
    decoder = I.DECODERS["Llama 3 8B"]
    bf16 = I.decode_step(decoder, "H100-SXM", 1, 0)
    int8 = I.decode_step(decoder, "H100-SXM", 1, 0, weight_bytes=1)
    assert int8.seconds == pytest.approx(bf16.seconds / 2)
    assert I.critical_batch("H100-SXM", weight_bytes=1) == pytest.approx(
        I.critical_batch("H100-SXM") / 2
    )


def test_batch_tokens_are_counted_for_all_sequences():
    step = I.decode_step(I.DECODERS["Llama 2 7B"], "H100-SXM", 8, 512)
    assert step.tokens_per_s == pytest.approx(8 / step.seconds)
    assert step.tokens_per_s_per_sequence == pytest.approx(1 / step.seconds)
    assert step.seconds == max(step.memory_seconds, step.compute_seconds)


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda: I.decode_step(I.DECODERS["Llama 2 7B"], "T4", 1, 1), "dtype='fp16'"),
        (lambda: I.critical_batch("T4"), "no bf16 tensor cores"),
        (lambda: I.decode_step(I.DECODERS["Llama 2 7B"], "H100-SXM", 0, 1), "batch must be"),
        (lambda: I.decode_step(I.DECODERS["Llama 2 7B"], "H100-SXM", 1, -1), "context must"),
        (lambda: I.Decoder(7e9, 32, 4096, 32, 5, 32000), "multiple of kv_heads"),
        (lambda: I.Decoder(7e9, 32, 4100, 32, 32, 32000), "multiple of heads"),
    ],
)
def test_bad_input_says_what_to_do(call, words):
    with pytest.raises(ValueError, match=words):
        call()


def test_an_unknown_gpu_names_the_known_ones():
    with pytest.raises(KeyError, match="known GPUs"):
        I.critical_batch("H1000")


def test_a_t4_works_in_fp16():
    assert I.critical_batch("T4", dtype="fp16") == pytest.approx(65e12 * 2 / (2 * 320e9))
