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

import math

import numpy as np
import pytest

import gpu_utils as gu

inf = gu.inference
GPT_FAST_CONTEXT = 5 + 100  # a 5-token prompt and 200 new tokens: the mean context of a step


def test_llama_2_7b_reads_what_gpt_fast_measured_per_token():
    step = inf.decode_step(inf.DECODERS["Llama 2 7B"], "A100-SXM4-80GB", 1, GPT_FAST_CONTEXT)
    published_bytes = 1397.31e9 / 104.9
    assert step.bytes_moved == pytest.approx(published_bytes, rel=0.01)
    assert step.bound == "memory"
    # the run is slower than the bound (an A100 power-limited to 330 W), never faster
    assert 104.9 < step.tokens_per_s < 2 * 104.9


def test_llama_2_70b_does_not_fit_an_a100_in_bf16_and_does_in_int8():
    d = inf.DECODERS["Llama 2 70B"]
    bf16 = inf.decode_step(d, "A100-SXM4-80GB", 1, GPT_FAST_CONTEXT)
    int8 = inf.decode_step(d, "A100-SXM4-80GB", 1, GPT_FAST_CONTEXT, weight_bytes=1)
    assert not bf16.fits and int8.fits
    # int8 adds a bf16 scale per output channel (gpt-fast's WeightOnlyInt8Linear): under 0.1%
    assert int8.bytes_moved == pytest.approx(1322.58e9 / 19.13, rel=0.01)
    assert int8.tokens_per_s > 19.13


def test_the_kv_cache_of_one_llama_13b_sequence_is_vllms_1_7_gb():
    per_token = inf.DECODERS["Llama 2 13B"].kv_bytes_per_token()
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
    d = inf.DECODERS[name]
    assert d.params == d.shape_params
    assert d.params == pytest.approx(published, rel=0.005)


def test_grouped_query_attention_keeps_only_the_key_value_heads():
    llama3_70b, llama2_70b = inf.DECODERS["Llama 3 70B"], inf.DECODERS["Llama 2 70B"]
    mha = inf.Decoder(llama3_70b.params, 80, 8192, 64, 64, 128256)
    assert mha.kv_bytes_per_token() == 8 * llama3_70b.kv_bytes_per_token()
    # 2 (K and V) x 80 layers x 8 heads x 128 dims x 2 bytes
    assert llama2_70b.kv_bytes_per_token() == 2 * 80 * 8 * 128 * 2


@pytest.mark.parametrize("gpu", ["A100-SXM4-80GB", "H100-SXM", "H200", "L4"])
def test_decode_turns_compute_bound_at_the_critical_batch(gpu):
    # with no context the step is the weight matmuls alone; the critical batch separates them
    decoder = inf.DECODERS["Llama 3 8B"]
    b = inf.critical_batch(gpu)
    below = inf.decode_step(decoder, gpu, int(b * 0.9), context=0)
    above = inf.decode_step(decoder, gpu, int(b * 1.1) + 1, context=0)
    assert below.bound == "memory" and above.bound == "compute"
    spec = gu.specs.get(gpu)
    assert b == pytest.approx(spec.bf16_dense_flops / spec.hbm_bandwidth)


def test_a_long_context_keeps_a_large_batch_bound_by_memory():
    decoder, gpu = inf.DECODERS["Llama 3 8B"], "H100-SXM"
    batch = int(2 * inf.critical_batch(gpu))
    assert inf.decode_step(decoder, gpu, batch, context=0).bound == "compute"
    assert inf.decode_step(decoder, gpu, batch, context=32768).bound == "memory"


def test_int8_weights_halve_the_memory_bound_time_at_batch_1():
    decoder = inf.DECODERS["Llama 3 8B"]
    bf16 = inf.decode_step(decoder, "H100-SXM", 1, 0)
    int8 = inf.decode_step(decoder, "H100-SXM", 1, 0, weight_bytes=1)
    assert int8.seconds == pytest.approx(bf16.seconds / 2)
    assert inf.critical_batch("H100-SXM", weight_bytes=1) == pytest.approx(
        inf.critical_batch("H100-SXM") / 2
    )


def test_batch_tokens_are_counted_for_all_sequences():
    step = inf.decode_step(inf.DECODERS["Llama 2 7B"], "H100-SXM", 8, 512)
    assert step.tokens_per_s == pytest.approx(8 / step.seconds)
    assert step.tokens_per_s_per_sequence == pytest.approx(1 / step.seconds)
    assert step.seconds == max(step.memory_seconds, step.compute_seconds)


@pytest.mark.parametrize(
    ("call", "words"),
    [
        (lambda: inf.decode_step(inf.DECODERS["Llama 2 7B"], "T4", 1, 1), "dtype='fp16'"),
        (lambda: inf.critical_batch("T4"), "no bf16 tensor cores"),
        (lambda: inf.decode_step(inf.DECODERS["Llama 2 7B"], "H100-SXM", 0, 1), "batch must be"),
        (lambda: inf.decode_step(inf.DECODERS["Llama 2 7B"], "H100-SXM", 1, -1), "context must"),
        (lambda: inf.Decoder(7e9, 32, 4096, 32, 5, 32000), "multiple of kv_heads"),
        (lambda: inf.Decoder(7e9, 32, 4100, 32, 32, 32000), "multiple of heads"),
    ],
)
def test_bad_input_says_what_to_do(call, words):
    with pytest.raises(ValueError, match=words):
        call()


def test_an_unknown_gpu_names_the_known_ones():
    with pytest.raises(KeyError, match="known GPUs"):
        inf.critical_batch("H1000")


def test_a_t4_works_in_fp16():
    assert inf.critical_batch("T4", dtype="fp16") == pytest.approx(65e12 * 2 / (2 * 320e9))


# --- the CPU decoder: a KV cache that gives gu.gpt.Llama's own logits ---------------------------

SMALL = dict(vocab_size=97, d_model=32, n_layers=2, n_heads=4, n_kv_heads=2, ffn_hidden=48)


def _small_llama(seq_len=24, **fields):
    import torch

    torch.manual_seed(0)
    config = gu.gpt.LlamaConfig(seq_len=seq_len, **{**SMALL, **fields})
    return gu.gpt.Llama(config).double().eval()


@pytest.mark.parametrize("n_kv_heads", [1, 2, 4])
def test_prefill_then_decode_gives_the_full_forwards_logits(n_kv_heads):
    import torch

    model = _small_llama(n_kv_heads=n_kv_heads)
    tokens = torch.randint(0, 97, (3, 20))
    with torch.no_grad():
        full, _ = model(tokens)  # no cache: every position from scratch (the oracle)
        cache = inf.KVCache(model.config, 3, 20, torch.float64)
        pieces = [inf.forward_cached(model, tokens[:, :7], cache, 0)]  # prefill 7
        pieces.append(inf.forward_cached(model, tokens[:, 7:10], cache, 7))  # a chunk of 3
        for pos in range(10, 20):  # then one token at a time
            pieces.append(inf.forward_cached(model, tokens[:, pos : pos + 1], cache, pos))
    torch.testing.assert_close(torch.cat(pieces, dim=1), full, rtol=1e-10, atol=1e-10)


def test_the_cache_holds_only_the_key_value_heads():
    import torch

    model = _small_llama(n_kv_heads=1)
    cache = inf.KVCache(model.config, batch=2, length=10, dtype=torch.float32)
    # 2 (K and V) x layers x kv heads x head_dim x tokens x batch x 4 bytes
    assert cache.nbytes == 2 * 2 * 1 * 8 * 10 * 2 * 4


def test_a_position_past_the_cache_says_what_to_do():
    import torch

    model = _small_llama()
    cache = inf.KVCache(model.config, 1, 8, torch.float64)
    with pytest.raises(ValueError, match="build both longer"):
        inf.forward_cached(model, torch.zeros(1, 1, dtype=torch.long), cache, 8)


def test_the_cpu_shapes_have_their_published_sizes():
    # GPT-3 Small's width and depth with Llama's blocks; TinyLlama-1.1B (Zhang et al. 2024)
    sizes = {k: gu.gpt.llama_n_params(gu.gpt.LlamaConfig(**v)) for k, v in inf.CPU_SHAPES.items()}
    assert sizes["125M"] == pytest.approx(125e6, rel=0.01)
    assert sizes["1.1B"] == pytest.approx(1.1e9, rel=0.01)


def test_a_cpu_decode_is_measured_and_set_against_the_read_bandwidth():
    small = dict(SMALL, vocab_size=1000, d_model=64, ffn_hidden=128)
    r = inf.measure_cpu_decode(small, batch=2, prompt=4, steps=3)
    assert r.decode_tokens_per_s > 0 and r.prefill_tokens_per_s > 0 and r.read_bandwidth > 1e8
    assert r.params == gu.gpt.llama_n_params(gu.gpt.LlamaConfig(**small))
    assert r.bound_tokens_per_s == pytest.approx(2 * r.read_bandwidth / r.bytes_per_step)


def test_decoder_shape_params_agree_with_the_llama_block_of_chapter_08b():
    d = inf.DECODERS["Llama 3 8B"]
    config = gu.gpt.LlamaConfig(
        vocab_size=d.vocab,
        d_model=d.hidden,
        n_layers=d.layers,
        n_heads=d.heads,
        n_kv_heads=d.kv_heads,
        ffn_hidden=d.ffn,
    )
    assert d.shape_params == gu.gpt.llama_n_params(config)


# --- quantised weights and speculative decoding ------------------------------------------------


def test_int4_with_group_scales_gives_marlins_optimal_3_87x():
    # Marlin's README: "the optimal 3.87x (note the 0.125 bits storage overhead of the group
    # scales)" at group size 128 over FP16 weights
    bound = inf.weight_only_speedup_bound(4, 128)
    assert math.floor(bound * 100) / 100 == 3.87
    assert inf.quantized_bytes_per_weight(4, 128) * 8 == 4.125


def test_quantize_round_trips_within_half_a_step_per_group():
    rng = np.random.default_rng(1)
    w = rng.standard_normal((16, 384)).astype(np.float32)
    w[3, :128] = 0  # an all-zero group stays zero
    for bits in (8, 4):
        q, scales = inf.quantize(w, bits=bits, group=128)
        assert q.dtype == np.int8 and scales.shape == (16, 3)
        assert np.abs(q).max() <= 2 ** (bits - 1) - 1
        error = np.abs(inf.dequantize(q, scales) - w).reshape(16, 3, 128)
        assert np.all(error <= scales[..., None] / 2 + 1e-6)
        assert np.all(inf.dequantize(q, scales)[3, :128] == 0)


def test_quantize_says_what_to_do_with_a_bad_shape():
    with pytest.raises(ValueError, match="multiple of the group 128"):
        inf.quantize(np.ones((4, 100)), group=128)
    with pytest.raises(ValueError, match="2-D weight"):
        inf.quantize(np.ones(128))


@pytest.mark.parametrize(
    ("acceptance", "draft"), [(0.0, 3), (0.5, 1), (0.8, 4), (0.9, 7), (1.0, 5)]
)
def test_expected_tokens_per_verification_match_a_monte_carlo_run(acceptance, draft):
    formula = inf.speculative_expected_tokens(acceptance, draft)
    simulated = inf.speculative_monte_carlo(acceptance, draft, steps=200_000, seed=2)
    assert simulated == pytest.approx(formula, rel=0.01)


def test_speculation_pays_only_when_the_draft_is_cheap_and_often_right():
    assert inf.speculative_speedup(0.8, 4, cost_ratio=0.05) > 2.5
    assert inf.speculative_speedup(0.3, 4, cost_ratio=0.5) < 1
    assert inf.speculative_speedup(0.8, 0, cost_ratio=0.05) == 1  # no draft: plain decoding


# --- paging and scheduling -----------------------------------------------------------------------


def test_a_block_table_takes_a_block_only_when_the_last_one_is_full():
    cache = inf.PagedAllocator(num_blocks=4, block_size=16)
    assert cache.grow("a", 16) == [0]
    assert cache.grow("a", 1) == [1]  # the 17th token opens a second block
    assert cache.grow("a", 15) == []
    assert cache.grow("b", 3) == [2]
    assert cache.block_table("a") == [0, 1] and cache.wasted_slots == 13
    with pytest.raises(inf.CacheFull, match="preempt"):
        cache.grow("b", 30)  # needs 2 more blocks, 1 is free: takes nothing
    assert cache.tokens("b") == 3 and cache.free_blocks == 1
    cache.free("a")
    assert cache.free_blocks == 3 and cache.grow("c", 40) == [0, 1, 3]


def test_paging_wastes_under_4_percent_where_reserving_the_maximum_wastes_most():
    # lengths of requests well below the 2,048-token maximum, as in chat traffic
    rng = np.random.default_rng(0)
    lengths = np.clip(rng.lognormal(mean=5.5, sigma=0.8, size=2000), 1, 2048).astype(int)
    reserved = inf.cache_waste(lengths, reserve=2048)
    paged = inf.cache_waste(lengths, block_size=16)
    assert reserved > 0.6 and paged < 0.04
    # the paged waste is the last blocks' empty tails: under one block per sequence
    assert paged * sum(-(-n // 16) * 16 for n in lengths) < 16 * len(lengths)


def _requests(n=40, seed=0):
    rng = np.random.default_rng(seed)
    return [
        inf.Request(
            i, int(rng.integers(0, 60)), int(rng.integers(1, 200)), int(rng.integers(1, 80))
        )
        for i in range(n)
    ]


def test_one_request_alone_prefills_in_chunks_then_decodes_a_token_per_step():
    r = inf.serve([inf.Request(0, 0, prompt=100, output=5)], token_budget=32)
    assert r.first_token[0] == 4  # ceil(100 / 32) steps of prompt, the first token with the last
    assert r.steps == 4 + 4 and r.tokens == 5 and r.per_token[0] == 1
    assert [t[:2] for t in r.trace] == [(0, 32)] * 3 + [(0, 4)] + [(1, 0)] * 4


@pytest.mark.parametrize("policy", ["continuous", "static"])
def test_every_request_gets_all_its_tokens_and_the_cache_is_returned(policy):
    requests = _requests()
    r = inf.serve(requests, policy=policy, token_budget=256, num_blocks=200, max_batch=16)
    assert r.tokens == sum(q.output for q in requests)
    assert set(r.finished) == {q.id for q in requests}
    assert r.trace[-1][3] == 200  # every block free at the end
    if policy == "continuous":
        assert all(d + p <= 256 for d, p, _, _ in r.trace)
    assert all(n <= 16 for _, _, n, _ in r.trace)


def test_continuous_batching_finishes_sooner_than_static_batches():
    requests = _requests(seed=3)
    static = inf.serve(requests, policy="static", num_blocks=400, max_batch=8)
    continuous = inf.serve(requests, policy="continuous", num_blocks=400, max_batch=8)
    assert continuous.steps < static.steps
    mean_ttft = [np.mean(list(x.first_token.values())) for x in (static, continuous)]
    assert mean_ttft[1] < mean_ttft[0]


def test_a_full_cache_preempts_and_recomputes_yet_every_token_comes_out():
    requests = [inf.Request(i, 0, 40, 60) for i in range(6)]
    r = inf.serve(requests, token_budget=512, num_blocks=16, block_size=16)
    assert r.preemptions > 0
    assert r.tokens == 6 * 60 and set(r.finished) == set(range(6))
    assert r.trace[-1][3] == 16


def test_step_time_turns_steps_into_seconds():
    r = inf.serve([inf.Request(0, 0, 10, 3)], step_time=lambda d, p, c: 0.5 + 0.01 * p)
    assert r.seconds == pytest.approx(0.6 + 0.5 + 0.5)
    assert r.tokens_per_second == pytest.approx(3 / 1.6)


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [
        (dict(policy="fifo"), "policy must be"),
        (dict(num_blocks=2), "give serve\\(\\) more num_blocks"),
    ],
)
def test_serve_says_what_to_do_with_bad_input(kwargs, words):
    with pytest.raises(ValueError, match=words):
        inf.serve([inf.Request(0, 0, 100, 10)], **kwargs)


# --- one scheduler step (section 4; lab 13's serving_schedule_step) ---------------------------


def _state(num_blocks, block_size, running=(), waiting=()):
    """A scheduler state: ``running`` as (id, prompt, output, cached tokens, to_prefill,
    generated), ``waiting`` as (id, prompt, output)."""
    cache = inf.PagedAllocator(num_blocks, block_size)
    state = inf.SchedulerState([], [], cache)
    for rid, prompt, output, cached, to_prefill, generated in running:
        cache.grow(rid, cached)
        state.running.append(inf.Seq(inf.Request(rid, 0, prompt, output), to_prefill, generated))
    for rid, prompt, output in waiting:
        state.waiting.append(inf.Seq(inf.Request(rid, 0, prompt, output), prompt))
    return state


def test_a_step_decodes_first_then_spends_what_is_left_on_chunks_oldest_first():
    state = _state(
        64, 4,
        running=[(0, 5, 9, 7, 0, 2), (1, 10, 3, 6, 4, 0), (2, 3, 4, 4, 0, 1)],
        waiting=[(3, 20, 2), (4, 2, 2)],
    )  # fmt: skip
    plan = inf.schedule_step(state, token_budget=9)
    assert plan.decode == (0, 2)  # request 1 is still prefilling
    assert plan.prefill == ((1, 4), (3, 3))  # 9 - 2 decodes: 1's last 4 tokens, then 3 of 3's
    assert plan.admitted == (3,) and plan.preempted == () and plan.tokens == 9
    assert [s.id for s in state.running] == [0, 1, 2, 3] and [s.id for s in state.waiting] == [4]
    assert state.running[3].to_prefill == 17 and state.cache.tokens(3) == 3
    assert state.cache.tokens(0) == 8 and state.cache.tokens(1) == 10


def test_a_budget_smaller_than_the_decodes_leaves_the_last_ones_waiting():
    state = _state(16, 2, running=[(i, 2, 5, 3, 0, 1) for i in range(3)], waiting=[(3, 4, 1)])
    plan = inf.schedule_step(state, token_budget=2)
    assert plan.decode == (0, 1) and plan.prefill == () and plan.admitted == ()


def test_a_full_cache_preempts_the_most_recently_admitted_sequence_for_recomputation():
    # 3 blocks of 2 slots, all held and full: 0 (2 tokens), 1 (2), 2 (2, still prefilling)
    state = _state(3, 2, running=[(0, 1, 9, 2, 0, 1), (1, 1, 9, 2, 0, 1), (2, 5, 9, 2, 3, 0)])
    plan = inf.schedule_step(state, token_budget=8)
    # 0 needs a block: 2 (the newest) goes; 1 needs one: 1 itself is now the newest and goes
    assert plan.preempted == (2, 1) and plan.decode == (0,)
    # both queued, the last preempted first; 1 recomputes its prompt (1) and its token (1):
    # 2 tokens, in the block it gave back; 2's 5 need 3 blocks and wait
    assert plan.prefill == ((1, 2),) and plan.admitted == (1,)
    assert [s.id for s in state.running] == [0, 1] and [s.id for s in state.waiting] == [2]
    assert state.running[1].to_prefill == 0 and state.waiting[0].to_prefill == 5
    assert state.cache.free_blocks == 0


def test_max_batch_stops_admissions_but_not_the_chunks_of_admitted_sequences():
    state = _state(64, 4, running=[(0, 9, 2, 4, 5, 0)], waiting=[(1, 3, 1)])
    plan = inf.schedule_step(state, token_budget=16, max_batch=1)
    assert plan.prefill == ((0, 5),) and plan.admitted == ()


def test_serve_is_its_steps():
    """serve() with a recording scheduler: each step's tokens stay within the budget and the
    trace is the plans' counts."""
    plans = []

    def recording(state, budget, max_batch, policy):
        plans.append(inf.schedule_step(state, budget, max_batch, policy))
        return plans[-1]

    requests = _requests(seed=5)
    kw = dict(token_budget=48, num_blocks=60, block_size=16, max_batch=6)
    r = inf.serve(requests, scheduler=recording, **kw)
    assert r == inf.serve(requests, **kw)
    assert r.preemptions == sum(len(p.preempted) for p in plans) > 0
    assert [t[:2] for t in r.trace] == [(len(p.decode), p.tokens - len(p.decode)) for p in plans]
    assert all(p.tokens <= 48 for p in plans)


# --- the largest batch the cache allows (section 3; lab 13's serving_kv_budget) ----------------


@pytest.mark.parametrize(
    ("model", "gpu", "context", "weight_bytes"),
    [
        ("Llama 3 8B", "H100-SXM", 4096, 2),
        ("Llama 2 7B", "T4", 2048, 2),
        ("Llama 2 70B", "H100-SXM", 4096, 0.5),
        ("Llama 3 8B", "L4", 32768, 2),
    ],
)
def test_the_largest_batch_fits_and_one_more_does_not(model, gpu, context, weight_bytes):
    d = inf.DECODERS[model]
    b = inf.max_batch(d, gpu, context, usable=1.0, weight_bytes=weight_bytes)
    assert b >= 1
    step = inf.decode_step(d, gpu, b, context, weight_bytes, dtype="fp16")
    over = inf.decode_step(d, gpu, b + 1, context, weight_bytes, dtype="fp16")
    assert step.fits and not over.fits


def test_llama_2_7b_on_a_t4_leaves_room_for_one_sequence_of_2048_at_90_percent():
    # 0.9 x 16 GiB = 15.46 GB; weights 2 x 6.74e9 = 13.48 GB; one sequence 2048 x 0.52 MB = 1.07 GB
    assert inf.max_batch(inf.DECODERS["Llama 2 7B"], "T4", 2048) == 1
    assert inf.max_batch(inf.DECODERS["Llama 2 13B"], "T4", 1) == 0  # 26 GB of weights


@pytest.mark.parametrize(
    ("kwargs", "words"),
    [(dict(context=0), "context must be"), (dict(context=8, usable=1.5), "usable is a share")],
)
def test_max_batch_says_what_to_do_with_bad_input(kwargs, words):
    with pytest.raises(ValueError, match=words):
        inf.max_batch(inf.DECODERS["Llama 2 7B"], "H100-SXM", **kwargs)
