"""gpu_utils.triton_tools.triton_backward (chapter 12, section 10) against torch.autograd in Triton's
interpreter: the fused cross-entropy (loss and the gradient its forward writes, in a training
step through nn.Linear, ignored targets), FlashAttention-2's forward and backward against plain
attention (causal and not, sequences that are not multiples of the blocks), layer norm's backward
with the lock, without it and with atomics; bad input gets a clear error."""

import pytest

pytest.importorskip("triton")

import torch

import gpu_utils as gu
from gpu_utils.triton_tools import triton_backward as tb

pytestmark = pytest.mark.skipif(gu.mode != "simulator", reason="interpreter sizes")


def _grads(tensors):
    return [t.grad.detach().clone() for t in tensors]


def _double_leaves(*tensors):
    return [t.detach().double().requires_grad_() for t in tensors]


# --- cross-entropy ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "rows, vocab, block, ignored",
    [(1, 1, 16, ()), (2, 3, 16, ()), (3, 100, 32, (1,)), (7, 300, 64, (0, 6)), (5, 64, 64, ())],
)
def test_cross_entropy_loss_and_gradient_equal_torch(rows, vocab, block, ignored):
    generator = torch.Generator().manual_seed(rows * 1000 + vocab)
    logits = 3 * torch.randn(rows, vocab, generator=generator)
    target = torch.randint(0, vocab, (rows,), generator=generator)
    target[list(ignored)] = -100
    leaf = logits.clone().requires_grad_()
    mine = leaf * 1.0  # not a leaf: the kernel may overwrite it with its gradient
    loss, lse = tb.fused_cross_entropy(mine, target, block_v=block, return_lse=True)
    loss.backward()
    (reference,) = _double_leaves(logits)
    expected = torch.nn.functional.cross_entropy(reference, target)
    expected.backward()
    torch.testing.assert_close(loss.double(), expected, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(leaf.grad.double(), reference.grad, rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(
        lse.double(), torch.logsumexp(logits.double(), dim=1), rtol=1e-6, atol=1e-5
    )
    assert torch.equal(mine, leaf.grad)  # the gradient lives in the logits' memory


def test_a_training_step_through_linear_matches_torch():
    torch.manual_seed(3)
    x, target = torch.randn(6, 24), torch.randint(0, 150, (6,))
    target[2] = -100
    ours, theirs = torch.nn.Linear(24, 150), torch.nn.Linear(24, 150)
    theirs.load_state_dict(ours.state_dict())
    for model, loss_fn in (
        (ours, lambda logits: tb.fused_cross_entropy(logits, target, block_v=64)),
        (theirs, lambda logits: torch.nn.functional.cross_entropy(logits, target)),
    ):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
        for _ in range(3):
            optimizer.zero_grad()
            loss_fn(model(x)).backward()
            optimizer.step()
    torch.testing.assert_close(ours.weight, theirs.weight, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(ours.bias, theirs.bias, rtol=1e-5, atol=1e-6)


def test_a_scaled_loss_scales_the_gradient():
    logits = torch.randn(4, 40)
    target = torch.randint(0, 40, (4,))
    leaf = logits.clone().requires_grad_()
    (2.5 * tb.fused_cross_entropy(leaf * 1.0, target, block_v=16)).backward()
    reference = logits.clone().requires_grad_()
    (2.5 * torch.nn.functional.cross_entropy(reference, target)).backward()
    torch.testing.assert_close(leaf.grad, reference.grad, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize(
    "logits, target, words",
    [
        (torch.randn(3, 5, 2), torch.zeros(3, dtype=torch.long), "must be 2-D"),
        (torch.randn(3, 5), torch.zeros(3, dtype=torch.int32), "target must be int64"),
        (torch.randn(3, 5), torch.tensor([0, 5, 1]), "targets must be in [0, 5) or -100"),
        (torch.randn(5, 3).t(), torch.zeros(3, dtype=torch.long), "logits.contiguous()"),
        (torch.randn(3, 5).requires_grad_(), torch.zeros(3, dtype=torch.long), "leaf"),
    ],
)
def test_cross_entropy_bad_input_says_what_to_do(logits, target, words):
    with pytest.raises(ValueError) as raised:
        tb.fused_cross_entropy(logits, target)
    assert words in str(raised.value)


# --- FlashAttention-2 ---------------------------------------------------------------------------


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize(
    "shape, blocks",
    [((1, 1, 1, 16), (16, 16)), ((1, 2, 40, 16), (16, 16)), ((2, 1, 37, 32), (32, 16))],
)
def test_flash_attention_forward_and_backward_equal_autograd(causal, shape, blocks):
    generator = torch.Generator().manual_seed(sum(shape))
    q, k, v = (torch.randn(shape, generator=generator).requires_grad_() for _ in range(3))
    out = tb.flash_attention(q, k, v, causal=causal, blocks=blocks)
    grad_out = torch.randn(shape, generator=generator)
    out.backward(grad_out)
    leaves = _double_leaves(q, k, v)
    expected = tb.attention_reference(*leaves, causal=causal)
    expected.backward(grad_out.double())
    torch.testing.assert_close(out.double(), expected, rtol=1e-4, atol=1e-5)
    for name, got, want in zip("qkv", _grads((q, k, v)), leaves, strict=True):
        torch.testing.assert_close(got.double(), want.grad, rtol=1e-4, atol=1e-5, msg=name)


def test_the_reference_is_torchs_own_attention():
    q, k, v = (torch.randn(1, 2, 9, 16, dtype=torch.float64) for _ in range(3))
    for causal in (False, True):
        torch.testing.assert_close(
            tb.attention_reference(q, k, v, causal=causal),
            torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal),
        )


def test_causal_attention_ignores_the_future():
    q, k, v = (torch.randn(1, 1, 20, 16).requires_grad_() for _ in range(3))
    tb.flash_attention(q, k, v, causal=True, blocks=(16, 16))[0, 0, 5].sum().backward()
    assert not k.grad[0, 0, 6:].any() and not v.grad[0, 0, 6:].any()
    assert k.grad[0, 0, :6].abs().sum() > 0


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"q": torch.randn(2, 8, 16)}, "(batch, heads, seq, head_dim)"),
        ({"q": torch.randn(1, 1, 8, 24), "same": True}, "power of two of at least 16"),
        ({"blocks": (16, 24)}, "blocks must be powers of two"),
        ({"k": torch.randn(1, 1, 9, 16)}, "one shape"),
    ],
)
def test_flash_attention_bad_input_says_what_to_do(kwargs, words):
    base = torch.randn(1, 1, 8, 16)
    q = kwargs.get("q", base)
    k = q if kwargs.get("same") else kwargs.get("k", base)
    v = q if kwargs.get("same") else base
    with pytest.raises(ValueError) as raised:
        tb.flash_attention(q, k, v, blocks=kwargs.get("blocks", (16, 16)))
    assert words in str(raised.value)


# --- layer norm: partial dW, db between programs ------------------------------------------------


@pytest.mark.parametrize("reduction", tb.REDUCTIONS)
@pytest.mark.parametrize("rows, n, group", [(1, 1, 4), (3, 50, 2), (13, 100, 4), (9, 33, 16)])
def test_layer_norm_forward_and_backward_equal_autograd(reduction, rows, n, group):
    generator = torch.Generator().manual_seed(rows * 100 + n)
    x = (-2.3 + 0.5 * torch.randn(rows, n, generator=generator)).requires_grad_()
    weight = torch.rand(n, generator=generator).requires_grad_()
    bias = torch.rand(n, generator=generator).requires_grad_()
    y = tb.layer_norm(x, weight, bias, group_size_m=group, reduction=reduction)
    grad_y = torch.randn(rows, n, generator=generator)
    y.backward(grad_y)
    leaves = _double_leaves(x, weight, bias)
    expected = torch.nn.functional.layer_norm(leaves[0], (n,), leaves[1], leaves[2])
    expected.backward(grad_y.double())
    torch.testing.assert_close(y.double(), expected, rtol=1e-5, atol=1e-5)
    for name, got, want in zip(
        ("x", "weight", "bias"), _grads((x, weight, bias)), leaves, strict=True
    ):
        torch.testing.assert_close(got.double(), want.grad, rtol=1e-4, atol=1e-5, msg=name)


def test_without_the_lock_the_interpreter_still_gets_it_right():
    """Programs run one after another in the interpreter: no two read-add-writes of one buffer
    row overlap, so leaving the lock out changes nothing here (on a GPU it loses additions)."""
    torch.manual_seed(5)
    x, weight, bias = torch.randn(24, 40), torch.rand(40), torch.rand(40)
    grads = {}
    for reduction in tb.REDUCTIONS:
        leaves = [t.clone().requires_grad_() for t in (weight, bias)]
        tb.layer_norm(x, *leaves, group_size_m=3, reduction=reduction).sum().backward()
        grads[reduction] = _grads(leaves)
    for got, want in zip(grads["nolock"], grads["lock"], strict=True):
        assert torch.equal(got, want)  # bit for bit: the same additions in the same order
    for got, want in zip(grads["atomic"], grads["lock"], strict=True):
        torch.testing.assert_close(got, want)


def test_layer_norm_bad_input_says_what_to_do():
    x, w = torch.randn(4, 8), torch.rand(8)
    with pytest.raises(ValueError, match="reduction must be one of"):
        tb.layer_norm(x, w, w, reduction="race")
    with pytest.raises(ValueError, match="weight and bias must have 8 entries"):
        tb.layer_norm(x, torch.rand(7), w)
    with pytest.raises(ValueError, match="must be 2-D"):
        tb.layer_norm(torch.randn(8), w, w)


# --- every kernel compiles for a GPU (Triton's compiler needs none) -----------------------------

F32, F16 = "*fp32", "*fp16"
_ATTENTION = {"seq": "i32", "scale": "fp32", "stride_h": "i32", "stride_s": "i32"}
_BLOCKS = {"HEAD_DIM": 64, "BLOCK_M": 64, "BLOCK_N": 64, "CAUSAL": True}
COMPILED = [
    (
        "cross_entropy_fwd_bwd_kernel",
        {"logits_ptr": F16, "target_ptr": "*i64", "loss_ptr": F32, "lse_ptr": F32},
        {"stride": "i32", "vocab": "i32", "ignore_index": "i32", "inv_n": "fp32"},
        {"BLOCK_V": 1024},
    ),
    (
        "attention_fwd_kernel",
        {"q_ptr": F16, "k_ptr": F16, "v_ptr": F16, "o_ptr": F16, "lse_ptr": F32},
        _ATTENTION,
        _BLOCKS,
    ),
    (
        "attention_bwd_dkdv_kernel",
        {"q_ptr": F16, "k_ptr": F16, "v_ptr": F16, "do_ptr": F16, "lse_ptr": F32},
        {"delta_ptr": F32, "dk_ptr": F16, "dv_ptr": F16, **_ATTENTION},
        _BLOCKS,
    ),
    (
        "attention_bwd_dq_kernel",
        {"q_ptr": F16, "k_ptr": F16, "v_ptr": F16, "do_ptr": F16, "lse_ptr": F32},
        {"delta_ptr": F32, "dq_ptr": F16, **_ATTENTION},
        _BLOCKS,
    ),
    *[
        (
            "layer_norm_bwd_dx_kernel",
            {"dx_ptr": F32, "dy_ptr": F32, "dw_ptr": F32, "db_ptr": F32, "x_ptr": F32},
            {"w_ptr": F32, "mean_ptr": F32, "rstd_ptr": F32, "lock_ptr": "*i32"},
            {"GROUP_SIZE_M": 64, "BLOCK_N": 1024, "REDUCTION": reduction},
        )
        for reduction in tb.REDUCTIONS
    ],
]


@pytest.mark.parametrize(
    "name, pointers, scalars, constexprs",
    COMPILED,
    ids=[f"{c[0]}-{c[3].get('REDUCTION', '')}" for c in COMPILED],
)
def test_the_kernels_compile_for_an_a100(name, pointers, scalars, constexprs):
    from gpu_utils.triton_tools import triton_ir

    signature = {**pointers, **scalars}
    if name == "layer_norm_bwd_dx_kernel":
        signature |= {"stride": "i32", "n": "i32"}
    compiled = triton_ir.compile(getattr(tb, name), signature, constexprs, "sm_80")
    ptx = compiled.asm["ptx"]
    if "REDUCTION" in constexprs:  # the lock and the flag are atomics on the GPU too
        assert "atom" in ptx
    if name.startswith("attention"):  # tl.dot on float16 tiles: tensor-core instructions
        assert "mma.sync" in ptx
