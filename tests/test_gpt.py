"""gu.gpt: the small GPT the parallelism chapters shard, checked for what they rely on."""

import pytest
import torch

import gpu_utils as gu

gpt = gu.gpt


@pytest.mark.parametrize("tie", [True, False])
@pytest.mark.parametrize("fused", [True, False])
def test_parameter_count_matches_the_analytic_formula(tie, fused):
    config = gpt.GPTConfig(
        vocab_size=100,
        seq_len=16,
        d_model=32,
        n_layers=3,
        n_heads=4,
        tie_weights=tie,
        fused_qkv=fused,
    )
    model = gpt.build(config)
    assert gpt.n_params(model) == gpt.analytic_n_params(config)
    assert gpt.n_params(model, include_embedding=False) == 3 * (12 * 32**2 + 13 * 32) + 2 * 32
    assert gpt.n_params(model, include_embedding=False) == gpt.analytic_n_params(config, False)


def test_tied_weights_are_one_parameter():
    model = gpt.build(vocab_size=50, d_model=16, n_heads=2)
    assert model.lm_head.weight is model.wte.weight
    untied = gpt.build(vocab_size=50, d_model=16, n_heads=2, tie_weights=False)
    assert gpt.n_params(untied) - gpt.n_params(model) == 50 * 16


def test_forward_shapes_and_loss():
    model = gpt.build(vocab_size=64, seq_len=12, d_model=16, n_heads=2)
    idx = torch.randint(0, 64, (3, 12), generator=torch.Generator().manual_seed(0))
    logits, loss = model(idx)
    assert logits.shape == (3, 12, 64) and loss is None
    _, loss = model(idx[:, :-1], idx[:, 1:])
    assert loss.shape == () and 3.0 < loss.item() < 5.5  # about ln(64) = 4.16 at initialisation
    with pytest.raises(ValueError):
        model(torch.zeros(1, 13, dtype=torch.long))


def test_same_seed_same_model_and_the_global_rng_is_left_alone():
    torch.manual_seed(123)
    before = torch.rand(1)
    torch.manual_seed(123)
    a = gpt.build(seed=7, d_model=16, n_heads=2)
    after = torch.rand(1)
    assert torch.equal(before, after)
    b = gpt.build(seed=7, d_model=16, n_heads=2)
    c = gpt.build(seed=8, d_model=16, n_heads=2)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))
    assert not torch.equal(a.blocks[0].attn.qkv.weight, c.blocks[0].attn.qkv.weight)


def test_attention_is_causal():
    model = gpt.build(vocab_size=32, seq_len=10, d_model=16, n_heads=4)
    idx = torch.randint(0, 32, (1, 10), generator=torch.Generator().manual_seed(1))
    changed = idx.clone()
    changed[0, 6:] = (changed[0, 6:] + 1) % 32
    with torch.no_grad():
        a, _ = model(idx)
        b, _ = model(changed)
    torch.testing.assert_close(a[:, :6], b[:, :6])
    assert not torch.allclose(a[:, 6:], b[:, 6:])


def test_fused_and_separate_qkv_compute_the_same_function():
    fused = gpt.build(vocab_size=32, seq_len=8, d_model=16, n_heads=2)
    separate = gpt.build(vocab_size=32, seq_len=8, d_model=16, n_heads=2, fused_qkv=False)
    state = {k: v for k, v in fused.state_dict().items() if ".qkv." not in k}
    for i, block in enumerate(fused.blocks):
        for kind in ("weight", "bias"):
            q, k, v = getattr(block.attn.qkv, kind).chunk(3, dim=0)
            for name, part in zip("qkv", (q, k, v), strict=True):
                state[f"blocks.{i}.attn.{name}.{kind}"] = part
    separate.load_state_dict(state)
    idx = torch.randint(0, 32, (2, 8), generator=torch.Generator().manual_seed(2))
    torch.testing.assert_close(fused(idx)[0], separate(idx)[0])


@pytest.mark.parametrize("recompute", ["selective", "full"])
def test_recompute_gives_the_same_gradients(recompute):
    base = gpt.build(seed=3, vocab_size=32, seq_len=8, d_model=16, n_heads=2)
    other = gpt.build(seed=3, vocab_size=32, seq_len=8, d_model=16, n_heads=2, recompute=recompute)
    idx = torch.randint(0, 32, (2, 8), generator=torch.Generator().manual_seed(3))
    for model in (base, other):
        model(idx, idx)[1].backward()
    for p, q in zip(base.parameters(), other.parameters(), strict=True):
        torch.testing.assert_close(p.grad, q.grad)


@pytest.mark.parametrize(
    "bad", [dict(d_model=30, n_heads=4), dict(recompute="some")], ids=["heads", "recompute"]
)
def test_config_rejects_nonsense(bad):
    with pytest.raises(ValueError):
        gpt.GPTConfig(**bad)
    with pytest.raises(TypeError):
        gpt.build(gpt.GPTConfig(), d_model=8)


def test_flash_attention_computes_the_same_layer():
    """attention="flash" (PyTorch's fused scaled_dot_product_attention) gives the written-out
    attention's outputs and gradients, in fp32 to rounding."""
    import torch

    config = dict(seq_len=32, d_model=32, n_heads=4, n_layers=2, vocab_size=64)
    eager = gu.gpt.build(seed=1, **config)
    flash = gu.gpt.build(seed=1, attention="flash", **config)
    idx = torch.randint(0, 64, (3, 32), generator=torch.Generator().manual_seed(0))
    (le, loss_e), (lf, loss_f) = eager(idx, idx), flash(idx, idx)
    assert torch.allclose(le, lf, atol=1e-5)
    loss_e.backward()
    loss_f.backward()
    for pe, pf in zip(eager.parameters(), flash.parameters(), strict=True):
        assert torch.allclose(pe.grad, pf.grad, atol=1e-5)
    with pytest.raises(ValueError, match="attention"):
        gu.gpt.GPTConfig(attention="fused")


# --- the Llama block (chapter 08b, section 9) ---------------------------------------------------


def test_llama3_8b_has_the_published_shapes_and_parameter_count():
    """Built on the meta device (shapes only, no memory): Meta's model card says 8.03B parameters;
    Dubey et al. 2024, Table 3: FFN 14,336 / 28,672 / 53,248 for 8B / 70B / 405B."""
    config = gpt.LLAMA3_8B
    assert config.ffn_hidden == 14336
    assert gpt.llama_ffn_hidden(8192, 4096, 1.3) == 28672  # 70B's params.json
    assert gpt.llama_ffn_hidden(16384, 4096, 1.2) == 53248  # 405B's params.json
    with torch.device("meta"):
        model = gpt.Llama(config)
    counted = sum(p.numel() for p in model.parameters())
    assert counted == gpt.llama_n_params(config) == 8_030_261_248
    assert round(counted / 1e9, 2) == 8.03
    layer = model.layers[0]
    assert sum(p.numel() for p in layer.parameters()) == gpt.llama_layer_params(config)
    # nine tensors a layer, no biases (gu.parallelism's Model.tensors_per_layer=9)
    assert len(list(layer.parameters())) == 9
    assert not any(name.endswith("bias") for name, _ in model.named_parameters())
    assert tuple(layer.attention.wk.weight.shape) == (8 * 128, 4096)  # 8 KV heads of 128


@pytest.mark.parametrize(
    "fields",
    [dict(), dict(d_model=96, n_heads=6, n_kv_heads=2, ffn_hidden=256), dict(n_kv_heads=4)],
    ids=["gqa2", "gqa3", "mha"],
)
def test_llama_counts_match_the_module(fields):
    config = gpt.LlamaConfig(seq_len=32, **fields)
    model = gpt.Llama(config)
    assert sum(p.numel() for p in model.parameters()) == gpt.llama_n_params(config)
    block, h = model.layers[0], config.d_model
    if not gpt.gqa_attention_is_fused(config):
        pytest.skip("this PyTorch runs grouped-query attention on the CPU with its math kernel")
    for b, s in ((2, 16), (3, 32)):
        x = torch.randn(b, s, h, requires_grad=True)
        # measured = the fused count + each unfused RMSNorm's normalised x (2 h per token)
        measured = gpt.saved_elements(block, x)
        assert measured == gpt.llama_activation_elements(config, b * s) + 2 * h * b * s


def _reference_llama_attention(attn, x):
    """Written out as Meta's model.py: repeat_kv, then softmax(q k^T / sqrt(d) + mask) v."""
    c = attn.config
    b, s, h = x.shape
    rep = c.n_heads // c.n_kv_heads
    q = attn.wq(x).view(b, s, c.n_heads, c.head_dim)
    k = attn.wk(x).view(b, s, c.n_kv_heads, c.head_dim)
    v = attn.wv(x).view(b, s, c.n_kv_heads, c.head_dim)
    # RoPE as complex multiplication, Meta's apply_rotary_emb
    angles = torch.complex(attn.cos[:s], attn.sin[:s])
    q, k = (
        torch.view_as_real(torch.view_as_complex(t.reshape(*t.shape[:-1], -1, 2)) * angles)
        .flatten(-2)
        .type_as(t)
        for t in (q, k)
    )
    k, v = (t[:, :, :, None, :].expand(b, s, c.n_kv_heads, rep, c.head_dim) for t in (k, v))
    k, v = (t.reshape(b, s, c.n_heads, c.head_dim) for t in (k, v))
    q, k, v = (t.transpose(1, 2) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1) / c.head_dim**0.5
    scores = scores.masked_fill(torch.ones(s, s, dtype=torch.bool).triu(1), float("-inf"))
    return attn.wo((scores.softmax(-1) @ v).transpose(1, 2).reshape(b, s, h))


def test_llama_attention_equals_metas_written_out_form():
    config = gpt.LlamaConfig(d_model=48, n_heads=6, n_kv_heads=2, seq_len=16, rope_theta=100.0)
    attn = gpt.Llama(config).layers[0].attention
    x = torch.randn(2, 11, 48)
    with torch.no_grad():
        assert torch.allclose(attn(x), _reference_llama_attention(attn, x), atol=1e-5)


def test_rope_scores_depend_only_on_the_distance():
    """Su et al. 2021: <R(m) q, R(n) k> depends on m - n only."""
    attn = gpt.Llama(gpt.LlamaConfig(seq_len=16, rope_theta=100.0)).layers[0].attention
    generator = torch.Generator().manual_seed(0)
    q, k = torch.randn(2, 1, 1, 1, 16, generator=generator)
    # float32 rounding of the rotations, on the scale of |q| |k| (the score itself can be small)
    tolerance = 1e-5 * float(q.norm() * k.norm())

    def score(m, n):
        rq = gpt._rope(q, attn.cos[m : m + 1], attn.sin[m : m + 1])
        rk = gpt._rope(k, attn.cos[n : n + 1], attn.sin[n : n + 1])
        return float((rq * rk).sum())

    assert score(5, 2) == pytest.approx(score(12, 9), abs=tolerance)
    assert score(5, 2) != pytest.approx(score(5, 3), abs=100 * tolerance)


def test_llama_block_is_causal():
    block = gpt.Llama(gpt.LlamaConfig()).layers[0]
    x = torch.randn(2, 8, 64)
    changed = x.clone()
    changed[:, -1] += 1
    with torch.no_grad():
        assert torch.allclose(block(x)[:, :-1], block(changed)[:, :-1], atol=1e-6)


@pytest.mark.parametrize(
    "bad, words",
    [
        (dict(d_model=64, n_heads=3), "even size"),
        (dict(n_heads=4, n_kv_heads=3), "multiple of n_kv_heads"),
    ],
    ids=["heads", "kv"],
)
def test_llama_config_refuses_impossible_shapes(bad, words):
    with pytest.raises(ValueError, match=words):
        gpt.LlamaConfig(**bad)
