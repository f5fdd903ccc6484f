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
