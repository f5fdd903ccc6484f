"""Checkers of lab 08b, the PyTorch primer: the references and answers written differently pass;
known-wrong answers (no zero_grad, a step before backward, a sum for a mean, .item() too early,
post-LN, no causal mask, a wrong scale...) fail with their own hint and none of the others'; a
stub is "not attempted yet"; an endless loop is stopped and its line quoted."""

import math

import pytest
import torch
import torch.nn.functional as F

import gpu_utils as gu
from gpu_utils.exercises import ch08b_primer as primer

INTERNALS = ("Traceback", "site-packages", "checker itself failed", "_run_", "_variant")


def run(exercise_id, answer):
    """The checker's verdict, computed in this process (faster than a check's worker)."""
    result = gu.exercises.get(exercise_id).run(answer)
    for word in INTERNALS:
        assert word not in result.message, result.message
    return result


def assert_only_hint(result, own, others):
    """Failed, with its own hint's words and no other mistake's."""
    assert not result.passed, result.message
    assert own in result.message, result.message
    for other in others:
        if other != own:
            assert other not in result.message, (other, result.message)


# --- 1. one training step ------------------------------------------------------------------------


def step_reference(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    loss.backward()
    optimizer.step()
    return loss.item()


def step_zero_at_end(model, optimizer, tokens, targets):
    """Correct differently: the model's own loss, gradients cleared after the step (chapter 11)."""
    _, loss = model(tokens, targets)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    return loss.detach().item()


def step_model_zero_grad(model, optimizer, tokens, targets):
    """Correct differently: model.zero_grad() to zeros, log_softmax + nll_loss, float()."""
    model.zero_grad(set_to_none=False)
    logits = model(tokens)[0]
    logp = torch.log_softmax(logits, dim=-1)
    loss = F.nll_loss(logp.reshape(-1, logp.shape[-1]), targets.reshape(-1))
    loss.backward()
    optimizer.step()
    return float(loss.detach())


def step_no_zero_grad(model, optimizer, tokens, targets):
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    loss.backward()
    optimizer.step()
    return loss.item()


def step_before_backward(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    optimizer.step()
    loss.backward()
    return loss.item()


def step_zero_between(model, optimizer, tokens, targets):
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    loss.backward()
    optimizer.zero_grad()
    optimizer.step()
    return loss.item()


def step_zero_at_start_and_step_first(model, optimizer, tokens, targets):
    """Step before backward, gradients cleared at the end: .grad is empty after the call too."""
    _, loss = model(tokens, targets)
    optimizer.step()
    loss.backward()
    optimizer.zero_grad()
    return loss.item()


def step_no_backward(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    _, loss = model(tokens, targets)
    loss.backward  # noqa: B018 - the parentheses forgotten
    optimizer.step()
    return loss.item()


def step_no_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    _, loss = model(tokens, targets)
    loss.backward()
    return loss.item()


def step_sum(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum")
    loss.backward()
    optimizer.step()
    return loss.item() / targets.numel()


def step_item_too_early(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    _, loss = model(tokens, targets)
    loss = loss.item()
    loss.backward()
    optimizer.step()
    return loss


def step_detached(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.detach().flatten(0, 1), targets.flatten())
    loss.backward()
    optimizer.step()
    return loss.item()


def step_new_optimizer(model, optimizer, tokens, targets):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    optimizer.zero_grad()
    _, loss = model(tokens, targets)
    loss.backward()
    optimizer.step()
    return loss.item()


def step_returns_nothing(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    _, loss = model(tokens, targets)
    loss.backward()
    optimizer.step()


def step_clipped(model, optimizer, tokens, targets):
    """Issue 25.4: a habit of many engineers, clipping the global gradient norm to 1."""
    optimizer.zero_grad()
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return loss.item()


def step_clipped_by_hand(model, optimizer, tokens, targets):
    """Clipping written out, to 0.5, gradients cleared at the end."""
    _, loss = model(tokens, targets)
    loss.backward()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    total = torch.sqrt(sum((g**2).sum() for g in grads))
    for g in grads:
        g.mul_(min(1.0, 0.5 / float(total)))
    optimizer.step()
    optimizer.zero_grad()
    return loss.item()


def step_clipped_by_value(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    _, loss = model(tokens, targets)
    loss.backward()
    torch.nn.utils.clip_grad_value_(model.parameters(), 0.01)
    optimizer.step()
    return loss.item()


def step_halved(model, optimizer, tokens, targets):
    """A common factor that is not clipping: the loss divided by 2."""
    optimizer.zero_grad()
    _, loss = model(tokens, targets)
    (loss / 2).backward()
    optimizer.step()
    return loss.item()


def step_returns_tensor(model, optimizer, tokens, targets):
    """Issue 25.4: the loss tensor itself where a Python number is asked."""
    optimizer.zero_grad()
    _, loss = model(tokens, targets)
    loss.backward()
    optimizer.step()
    return loss


def step_returns_detached(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    _, loss = model(tokens, targets)
    loss.backward()
    optimizer.step()
    return loss.detach()


def _step_with(model, optimizer, tokens, targets, before=None, after=None, sign=1.0):
    optimizer.zero_grad()
    if before is not None:
        before(model, optimizer)
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    (sign * loss).backward()
    optimizer.step()
    if after is not None:
        after(model, optimizer)
    return loss.item()


def _lower_lr(model, optimizer):
    for group in optimizer.param_groups:
        group["lr"] = 0.01


def _update_by_hand_too(model, optimizer):
    with torch.no_grad():
        for p in model.parameters():
            p -= 0.1 * p.grad


def _freeze_embedding(model, optimizer):
    model.wte.weight.requires_grad_(False)


@pytest.mark.parametrize(
    "answer, words",
    [
        (lambda *a: _step_with(*a, before=_lower_lr), "lr is now 0.01; it was given as 0.1"),
        (lambda *a: _step_with(*a, after=_update_by_hand_too), "moved 2 times as far"),
        (lambda *a: _step_with(*a, sign=-1.0), "the step climbs the loss"),
        (lambda *a: _step_with(*a, before=_freeze_embedding), "no gradient for `wte.weight`"),
    ],
    ids=["lr_changed", "second_update_by_hand", "negated_loss", "embedding_frozen"],
)
def test_train_step_evidence_per_parameter(answer, words):
    """Issue 30.5: parameters and gradients compared per parameter with a correct step's."""
    result = run("primer_train_step", answer)
    assert not result.passed and words in result.message, result.message
    for hint in (primer.NO_ZERO_GRAD, primer.NOT_THE_OPTIMIZER, primer.CLIPPED):
        assert hint not in result.message, result.message


def step_probabilities_into_cross_entropy(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    probs = torch.softmax(logits, dim=-1)
    loss = F.cross_entropy(probs.reshape(-1, probs.shape[-1]), targets.reshape(-1))
    loss.backward()
    optimizer.step()
    return loss.item()


def step_summed_over_positions(model, optimizer, tokens, targets):
    """Sums each sequence's positions, averages over the batch: 8 (seq) times too large."""
    optimizer.zero_grad()
    logits, _ = model(tokens)
    per_token = F.cross_entropy(logits.transpose(1, 2), targets, reduction="none")
    loss = per_token.sum(dim=1).mean()
    loss.backward()
    optimizer.step()
    return loss.item() / tokens.shape[1]


def test_train_step_names_what_its_gradients_equal():
    """Issue 30.7 (held-out tune half): probabilities fed to cross_entropy, and a sum over one
    axis of the batch, are named from the gradients the step saw."""
    message = run("primer_train_step", step_probabilities_into_cross_entropy).message
    assert "applied to softmax probabilities" in message, message
    message = run("primer_train_step", step_summed_over_positions).message
    assert "8 = the number of positions of each sequence" in message, message
    assert primer.SUM_REDUCTION in message


STEP_HINTS = [
    primer.NO_ZERO_GRAD,
    primer.STEP_BEFORE_BACKWARD,
    primer.ZERO_BETWEEN,
    primer.NO_STEP,
    primer.NO_BACKWARD,
    primer.SUM_REDUCTION,
    primer.ITEM_TOO_EARLY,
    primer.DETACHED,
    primer.NOT_THE_OPTIMIZER,
    primer.CLIPPED,
    primer.RETURN_A_NUMBER,
]


@pytest.mark.parametrize("answer", [step_reference, step_zero_at_end, step_model_zero_grad])
def test_train_step_accepts_correct_answers(answer):
    result = run("primer_train_step", answer)
    assert result.passed, result.message


@pytest.mark.parametrize(
    "answer, hint, words",
    [
        (step_no_zero_grad, primer.NO_ZERO_GRAD, "they accumulated"),
        (step_before_backward, primer.STEP_BEFORE_BACKWARD, "arrived afterwards"),
        (step_zero_between, primer.ZERO_BETWEEN, "cleared in between"),
        (step_zero_at_start_and_step_first, primer.STEP_BEFORE_BACKWARD, "arrived afterwards"),
        (step_no_backward, primer.NO_BACKWARD, "never ran"),
        (step_no_step, primer.NO_STEP, "parameters are unchanged"),
        (step_sum, primer.SUM_REDUCTION, "32 = batch x sequence"),
        (step_item_too_early, primer.ITEM_TOO_EARLY, "line "),
        (step_detached, primer.DETACHED, "does not require grad"),
        (step_new_optimizer, primer.NOT_THE_OPTIMIZER, "not through the optimizer"),
        (step_clipped, primer.CLIPPED, "global norm is 1, this batch's is"),
        (step_clipped_by_hand, primer.CLIPPED, "clipping to a norm of 0.5"),
        (step_clipped_by_value, primer.CLIPPED, "cut to at most 0.01 in size"),
        (step_returns_tensor, primer.RETURN_A_NUMBER, "still attached to its autograd graph"),
        (step_returns_detached, primer.RETURN_A_NUMBER, "returned a tensor of shape ()"),
    ],
)
def test_train_step_rejects_mistakes_with_their_hint(answer, hint, words):
    result = run("primer_train_step", answer)
    assert_only_hint(result, hint, STEP_HINTS)
    assert words in result.message, result.message


def test_a_common_factor_that_is_not_clipping_is_not_called_clipping():
    result = run("primer_train_step", step_halved)
    assert not result.passed and "0.5 times those of the mean loss" in result.message
    for hint in STEP_HINTS:
        assert hint not in result.message, result.message


def test_train_step_item_error_quotes_the_learners_line():
    message = run("primer_train_step", step_item_too_early).message
    assert "AttributeError" in message and "`loss.backward()`" in message, message


def test_train_step_asks_for_the_loss_when_nothing_is_returned():
    result = run("primer_train_step", step_returns_nothing)
    assert not result.passed and "returned NoneType" in result.message, result.message


# --- 2. the block ----------------------------------------------------------------------------------


def block_reference(block, x):
    b, s, h = x.shape
    n_heads = block.attn.config.n_heads
    d_head = h // n_heads
    q, k, v = block.attn.qkv(block.ln1(x)).split(h, dim=-1)
    q, k, v = (t.view(b, s, n_heads, d_head).transpose(1, 2) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_head)
    mask = torch.ones(s, s, dtype=torch.bool).triu(1)
    probs = scores.masked_fill(mask, float("-inf")).softmax(dim=-1)
    y = (probs @ v).transpose(1, 2).reshape(b, s, h)
    x = x + block.attn.proj(y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))


def block_sdpa(block, x):
    """Correct differently: PyTorch's fused attention with is_causal, and F.layer_norm."""
    b, s, h = x.shape
    a = block.attn.config.n_heads
    ln1, ln2 = block.ln1, block.ln2
    u = F.layer_norm(x, (h,), ln1.weight, ln1.bias, ln1.eps)
    q, k, v = block.attn.qkv(u).chunk(3, dim=-1)
    q, k, v = (t.reshape(b, s, a, h // a).permute(0, 2, 1, 3) for t in (q, k, v))
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    x = x + block.attn.proj(y.permute(0, 2, 1, 3).reshape(b, s, h))
    u = F.layer_norm(x, (h,), ln2.weight, ln2.bias, ln2.eps)
    return x + F.linear(
        F.gelu(F.linear(u, block.mlp.fc1.weight, block.mlp.fc1.bias)),
        block.mlp.fc2.weight,
        block.mlp.fc2.bias,
    )


def block_einsum(block, x):
    """Correct differently: separate q, k, v weights sliced from qkv, einsum, a tril mask."""
    b, s, h = x.shape
    a = block.attn.config.n_heads
    d = h // a
    u = block.ln1(x)
    w, bias = block.attn.qkv.weight, block.attn.qkv.bias
    q, k, v = (F.linear(u, w[i * h : (i + 1) * h], bias[i * h : (i + 1) * h]) for i in range(3))
    q, k, v = (t.reshape(b, s, a, d) for t in (q, k, v))
    scores = torch.einsum("bqad,bkad->baqk", q, k) * d**-0.5
    keep = torch.tril(torch.ones(s, s, dtype=torch.bool))
    probs = torch.where(keep, scores, torch.tensor(float("-inf"))).softmax(-1)
    y = torch.einsum("baqk,bkad->bqad", probs, v).reshape(b, s, h)
    x = block.attn.proj(y) + x
    return block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x)))) + x


def _attention(block, u, *, mask="triu1", scale=None, dim=-1, transpose=True):
    b, s, h = u.shape
    a = block.attn.config.n_heads
    d = h // a
    q, k, v = block.attn.qkv(u).split(h, dim=-1)
    if transpose:
        q, k, v = (t.view(b, s, a, d).transpose(1, 2) for t in (q, k, v))
    else:
        q, k, v = (t.view(b, s, a, d) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1) * (scale if scale is not None else 1 / math.sqrt(d))
    if mask == "triu1":
        scores = scores.masked_fill(torch.ones(s, s, dtype=torch.bool).triu(1), float("-inf"))
    elif mask == "triu0":
        scores = scores.masked_fill(torch.ones(s, s, dtype=torch.bool).triu(0), float("-inf"))
    y = scores.softmax(dim=dim) @ v
    y = y.transpose(1, 2).reshape(b, s, h) if transpose else y.reshape(b, s, h)
    return block.attn.proj(y)


def _mlp(block, u, act=F.gelu):
    return block.mlp.fc2(act(block.mlp.fc1(u)))


def block_post_ln(block, x):
    x = block.ln1(x + _attention(block, x))
    return block.ln2(x + _mlp(block, x))


def block_no_residual(block, x):
    x = _attention(block, block.ln1(x))
    return x + _mlp(block, block.ln2(x))


def block_no_mask(block, x):
    x = x + _attention(block, block.ln1(x), mask=None)
    return x + _mlp(block, block.ln2(x))


def block_post_ln_no_mask(block, x):
    """Two mistakes at once: no known variant matches, the probe still finds the leak."""
    x = block.ln1(x + _attention(block, x, mask=None))
    return block.ln2(x + _mlp(block, x))


def block_masked_diagonal(block, x):
    x = x + _attention(block, block.ln1(x), mask="triu0")
    return x + _mlp(block, block.ln2(x))


def block_scale_d_head(block, x):
    d = x.shape[-1] // block.attn.config.n_heads
    x = x + _attention(block, block.ln1(x), scale=1 / d)
    return x + _mlp(block, block.ln2(x))


def block_softmax_dim(block, x):
    x = x + _attention(block, block.ln1(x), dim=-2)
    return x + _mlp(block, block.ln2(x))


def block_relu(block, x):
    x = x + _attention(block, block.ln1(x))
    return x + _mlp(block, block.ln2(x), act=F.relu)


def block_no_transpose(block, x):
    x = x + _attention(block, block.ln1(x), transpose=False)
    return x + _mlp(block, block.ln2(x))


def block_merge_without_transpose(block, x):
    """Issue 25.3: heads merged with `(probs @ v).reshape(b, s, h)`, no transpose(1, 2)."""
    b, s, h = x.shape
    a = block.attn.config.n_heads
    q, k, v = block.attn.qkv(block.ln1(x)).split(h, dim=-1)
    q, k, v = (t.view(b, s, a, h // a).transpose(1, 2) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(h // a)
    probs = scores.masked_fill(torch.ones(s, s, dtype=torch.bool).triu(1), float("-inf"))
    x = x + block.attn.proj((probs.softmax(dim=-1) @ v).reshape(b, s, h))
    return x + _mlp(block, block.ln2(x))


def block_split_without_transpose(block, x):
    """Heads split by a reshape to (b, a, s, d) with no transpose; merged correctly."""
    b, s, h = x.shape
    a = block.attn.config.n_heads
    q, k, v = (t.reshape(b, a, s, h // a) for t in block.attn.qkv(block.ln1(x)).chunk(3, -1))
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    x = x + block.attn.proj(y.transpose(1, 2).reshape(b, s, h))
    return x + _mlp(block, block.ln2(x))


def block_merge_without_transpose_post_ln(block, x):
    """Two mistakes: no known variant matches; the probe sees a partial leak, not a lost mask."""
    x = block.ln1(x + block_merge_without_transpose(block, x) - x)
    return block.ln2(x + _mlp(block, x))


def block_mask_hides_too_little(block, x):
    """triu(2): position t also sees t + 1. Only position s - 2 sees the last token."""
    b, s, h = x.shape
    a = block.attn.config.n_heads
    q, k, v = block.attn.qkv(block.ln1(x)).split(h, dim=-1)
    q, k, v = (t.view(b, s, a, h // a).transpose(1, 2) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(h // a)
    probs = scores.masked_fill(torch.ones(s, s, dtype=torch.bool).triu(2), float("-inf"))
    x = x + block.attn.proj((probs.softmax(dim=-1) @ v).transpose(1, 2).reshape(b, s, h))
    return x + _mlp(block, block.ln2(x))


def block_calls_attn(block, x):
    x = x + block.attn(block.ln1(x))
    return x + _mlp(block, block.ln2(x))


@torch.no_grad()
def block_no_grad(block, x):
    return block_reference(block, x)


BLOCK_HINTS = [
    primer.POST_LN,
    primer.NO_RESIDUAL,
    primer.NO_CAUSAL_MASK,
    primer.LOOKS_AHEAD,
    primer.PARTIAL_LEAK,
    primer.MASK_SHIFTED,
    primer.MASK_INVERTED,
    primer.NORM_AXIS,
    primer.RANDOM,
    primer.NOT_NORMALISED,
    primer.NORM_OR_MASK,
    primer.WEIGHTS,
    primer.MASKED_DIAGONAL,
    primer.SCALE,
    primer.SOFTMAX_DIM,
    primer.GELU,
    primer.HEADS_SHAPE,
    primer.CALLS_THE_BLOCK,
    primer.NO_GRADIENT,
]


@pytest.mark.parametrize("answer", [block_reference, block_sdpa, block_einsum])
def test_block_accepts_correct_answers(answer):
    result = run("primer_block_forward", answer)
    assert result.passed, result.message


@pytest.mark.parametrize(
    "answer, hint, words",
    [
        (block_post_ln, primer.POST_LN, "post-LN block"),
        (block_no_residual, primer.NO_RESIDUAL, "without the residual around attention"),
        (block_no_mask, primer.NO_CAUSAL_MASK, "without the causal mask"),
        (block_post_ln_no_mask, primer.LOOKS_AHEAD, "at every earlier position"),
        (block_merge_without_transpose, primer.HEADS_SHAPE, "without `transpose(1, 2)`"),
        (block_split_without_transpose, primer.HEADS_SHAPE, "split by `view(b, n_heads"),
        (block_merge_without_transpose_post_ln, primer.HEADS_SHAPE, "in the wrong places"),
        (block_mask_hides_too_little, primer.MASK_SHIFTED, "at position 3 only"),
        (block_masked_diagonal, primer.MASKED_DIAGONAL, "NaN at position 0, and only there"),
        (block_scale_d_head, primer.SCALE, "divided by d_head"),
        (block_softmax_dim, primer.SOFTMAX_DIM, "dim=-2"),
        (block_relu, primer.GELU, "ReLU"),
        (block_no_transpose, primer.HEADS_SHAPE, "RuntimeError"),
        (block_calls_attn, primer.CALLS_THE_BLOCK, "`block.attn(...)`"),
        (block_no_grad, primer.NO_GRADIENT, "carries no gradient"),
    ],
)
def test_block_rejects_mistakes_with_their_hint(answer, hint, words):
    result = run("primer_block_forward", answer)
    assert_only_hint(result, hint, BLOCK_HINTS)
    assert words in result.message, result.message


def test_block_calling_the_whole_block_is_named():
    result = run("primer_block_forward", lambda block, x: block(x))
    assert_only_hint(result, primer.CALLS_THE_BLOCK, BLOCK_HINTS)
    assert "`block(x)`" in result.message


# Evidence-led hints (issue 30.5): each answer below is caught by what the checker observes
# (stage inputs, a changed last token or sequence, a one-position sequence, two identical calls).


def _core(block, u, *, fill=float("-inf"), after=False, scale=None, swap=False, drop=0.0):
    b, s, h = u.shape
    a = block.attn.config.n_heads
    d = h // a
    q, k, v = block.attn.qkv(u).split(h, dim=-1)
    q, k, v = (t.view(b, s, a, d).transpose(1, 2) for t in (q, k, v))
    if swap:
        q, k = k, q
    scores = q @ k.transpose(-2, -1) * (scale if scale is not None else d**-0.5)
    mask = torch.ones(s, s, dtype=torch.bool).triu(1)
    if after:
        probs = scores.softmax(-1).masked_fill(mask, 0.0)
    else:
        probs = scores.masked_fill(mask, fill).softmax(-1)
    if drop:
        probs = F.dropout(probs, drop)
    return block.attn.proj((probs @ v).transpose(1, 2).reshape(b, s, h))


def _norm_over(ln, x, dims):
    mu = x.mean(dim=dims, keepdim=True)
    var = x.var(dim=dims, keepdim=True, unbiased=False)
    return (x - mu) / torch.sqrt(var + ln.eps) * ln.weight + ln.bias


def _pre_ln(block, x, *, norm1=None, norm2=None, act=F.gelu, **core):
    x = x + _core(block, (norm1 or block.ln1)(x), **core)
    return x + _mlp(block, (norm2 or block.ln2)(x), act=act)


def block_layer_norm_over_sequence(block, x):
    return _pre_ln(block, x, norm1=lambda t: _norm_over(block.ln1, t, 1))


def block_layer_norm_over_batch(block, x):
    return _pre_ln(block, x, norm1=lambda t: _norm_over(block.ln1, t, (0, 2)))


def block_dropout_left_on(block, x):
    return _pre_ln(block, x, drop=0.1)


def block_mask_filled_with_zero(block, x):
    return _pre_ln(block, x, fill=0.0)


def block_masked_after_softmax(block, x):
    return _pre_ln(block, x, after=True)


def block_scale_hard_coded(block, x):
    """/ sqrt(8): right for the first case's d_head, not for the second's (4)."""
    return _pre_ln(block, x, scale=1 / math.sqrt(8))


def block_scale_multiplied(block, x):
    return _pre_ln(block, x, scale=math.sqrt(x.shape[-1] // block.attn.config.n_heads))


def block_keys_against_queries(block, x):
    return _pre_ln(block, x, swap=True)


def block_layer_norm_without_affine(block, x):
    return _pre_ln(block, x, norm1=lambda t: F.layer_norm(t, t.shape[-1:]))


def block_silu(block, x):
    return _pre_ln(block, x, act=F.silu)


def block_residual_from_normalised(block, x):
    u = block.ln1(x)
    x = u + _core(block, u)
    return x + _mlp(block, block.ln2(x))


def block_last_residual_from_input(block, x):
    x1 = x + _core(block, block.ln1(x))
    return x + _mlp(block, block.ln2(x1))


def block_mlp_without_ln2(block, x):
    x = x + _core(block, block.ln1(x))
    return x + _mlp(block, x)


def block_qkv_without_bias(block, x):
    b, s, h = x.shape
    a = block.attn.config.n_heads
    q, k, v = F.linear(block.ln1(x), block.attn.qkv.weight).split(h, dim=-1)
    q, k, v = (t.view(b, s, a, h // a).transpose(1, 2) for t in (q, k, v))
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    x = x + block.attn.proj(y.transpose(1, 2).reshape(b, s, h))
    return x + _mlp(block, block.ln2(x))


def block_mask_inverted(block, x):
    """masked_fill with the keys to keep (tril) hides t and every earlier key."""
    b, s, h = x.shape
    a = block.attn.config.n_heads
    q, k, v = block.attn.qkv(block.ln1(x)).split(h, dim=-1)
    q, k, v = (t.view(b, s, a, h // a).transpose(1, 2) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(h // a)
    keep = torch.ones(s, s, dtype=torch.bool).tril()
    y = scores.masked_fill(keep, float("-inf")).softmax(-1) @ v
    x = x + block.attn.proj(y.transpose(1, 2).reshape(b, s, h))
    return x + _mlp(block, block.ln2(x))


def block_sdpa_mask_inverted(block, x):
    """SDPA's boolean attn_mask keeps where True: triu(1) keeps only the later keys."""
    b, s, h = x.shape
    a = block.attn.config.n_heads
    q, k, v = block.attn.qkv(block.ln1(x)).split(h, dim=-1)
    q, k, v = (t.view(b, s, a, h // a).transpose(1, 2) for t in (q, k, v))
    mask = torch.ones(s, s, dtype=torch.bool).triu(1)
    y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    x = x + block.attn.proj(y.transpose(1, 2).reshape(b, s, h))
    return x + _mlp(block, block.ln2(x))


def block_mask_with_large_negative(block, x):
    """Correct differently: -1e4 instead of -inf (exp(-1e4) is 0 in fp32)."""
    return _pre_ln(block, x, fill=-1e4)


def test_block_accepts_a_large_negative_mask():
    result = run("primer_block_forward", block_mask_with_large_negative)
    assert result.passed, result.message


def _attention_core(block, x, heads_first=True, keep=None, merge=(0, 2, 1, 3), residual=False):
    """A pre-LN block with one piece of its attention changed (lab08b_r5's kinds)."""
    b, s, h = x.shape
    a = block.attn.config.n_heads
    u = block.ln1(x)
    q, k, v = block.attn.qkv(u).split(h, dim=-1)
    q, k, v = (t.view(b, s, a, h // a) for t in (q, k, v))
    if heads_first:
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(h // a)
    n = scores.shape[-1]
    mask = torch.ones(n, n, dtype=torch.bool).tril() if keep is None else keep(n)
    y = scores.masked_fill(~mask, float("-inf")).softmax(-1) @ v
    y = y.permute(*merge).reshape(b, s, h) if heads_first else y.reshape(b, s, h)
    x = x + (block.attn.proj(x + y) if residual else block.attn.proj(y))
    return x + _mlp(block, block.ln2(x))


def block_diagonal_mask(block, x):
    """The causal mask keeps only the diagonal: each position attends to itself alone."""
    return _attention_core(block, x, keep=lambda n: torch.eye(n, dtype=torch.bool))


def block_heads_not_transposed(block, x):
    """q, k, v left as (batch, seq, heads, d_head): attention over the heads of one token."""
    return _attention_core(block, x, heads_first=False)


def block_merge_interleaved(block, x):
    """Heads merged as (d_head, heads): each position's right numbers in other places."""
    return _attention_core(block, x, merge=(0, 2, 3, 1))


def block_proj_of_residual_sum(block, x):
    """proj(x + heads) instead of x + proj(heads)."""
    return _attention_core(block, x, residual=True)


@pytest.mark.parametrize(
    "answer, words",
    [
        (block_diagonal_mask, "attended to itself alone"),
        (block_heads_not_transposed, "never looked across positions"),
        (block_merge_interleaved, "merged back in another order"),
        (block_proj_of_residual_sum, "the residual was added before the output projection"),
    ],
)
def test_block_relations_at_the_projection(answer, words):
    """The input of attn.proj against the right one: its own v, each position alone, the right
    numbers in other places, or plus x (issue 30, lab08b_r5)."""
    result = run("primer_block_forward", answer)
    assert not result.passed and words in result.message, result.message


@pytest.mark.parametrize(
    "answer, hint, words",
    [
        (block_layer_norm_over_sequence, primer.NORM_AXIS, "at every earlier position"),
        (block_layer_norm_over_batch, primer.NORM_AXIS, "in another sequence"),
        (block_dropout_left_on, primer.RANDOM, "two calls on the same block"),
        (block_mask_filled_with_zero, primer.LOOKS_AHEAD, "input of `block.attn.proj`"),
        (block_masked_after_softmax, primer.LOOKS_AHEAD, "every earlier position"),
        (block_scale_hard_coded, primer.SCALE, "multiplied by 0.3536 = 1/2.828"),
        (block_scale_multiplied, primer.SCALE, "multiplied by 2.828"),
        (block_keys_against_queries, primer.WEIGHTS, "Position 0, which attends only to itself"),
        (block_layer_norm_without_affine, "block.ln1.weight", "without ln1's weight and bias"),
        (block_silu, primer.GELU, "input of `block.mlp.fc2`"),
        (block_residual_from_normalised, "not ln1(x)", "input of `block.ln2`"),
        (block_last_residual_from_input, "return x1 + fc2", "up to `block.mlp.fc2` is right"),
        (block_mlp_without_ln2, "block.mlp.fc1(block.ln2(x1))", "received x1 itself"),
        (block_mask_inverted, primer.MASK_INVERTED, "NaN at position 4, the last"),
        (block_sdpa_mask_inverted, primer.LOOKS_AHEAD, "at every earlier position"),
        (block_qkv_without_bias, "the layer's bias included", "the values themselves differ"),
    ],
)
def test_block_hints_come_from_evidence(answer, hint, words):
    result = run("primer_block_forward", answer)
    assert_only_hint(result, hint, BLOCK_HINTS)
    assert words in result.message, result.message


def block_double(block, x):
    return block_reference(block, x).double()


def block_scales_weights_in_place(block, x):
    with torch.no_grad():
        block.attn.proj.weight.mul_(2)
    return block_reference(block, x)


def block_divides_by_zero(block, x):
    return block_reference(block, x) / 0.0


@pytest.mark.parametrize(
    "answer, words",
    [
        (block_double, "Your output is torch.float64"),
        (block_scales_weights_in_place, "changed the block's parameter `attn.proj.weight`"),
        (block_divides_by_zero, "not finite at positions [0, 1, 2, 3, 4]"),
    ],
)
def test_block_odd_answers_get_a_generic_true_message(answer, words):
    result = run("primer_block_forward", answer)
    assert not result.passed and words in result.message, result.message
    for hint in BLOCK_HINTS:
        assert hint not in result.message, result.message


def test_every_block_mistake_variant_differs_from_the_block():
    """Each variant the hints rely on is a real difference on every case (none is the block)."""
    for case, (h, a, b, s) in enumerate(primer.BLOCK_CASES):
        block = primer._random_block(h, a, s, primer.BLOCK_SEED + case)
        x = torch.randn(b, s, h)
        with torch.no_grad():
            expected = block(x)
            assert torch.allclose(primer._variant(block, x), expected, atol=1e-5)
            for options, _, _ in primer.BLOCK_MISTAKES:
                variant = primer._variant(block, x, **options)
                assert not torch.allclose(variant, expected, rtol=1e-4, atol=1e-5), options


# --- 3. accumulation over micro-batches with padding (issue 25.14) --------------------------------


def accumulate_reference(model, optimizer, micro_batches):
    optimizer.zero_grad()
    n = sum(int((t != -100).sum()) for _, t in micro_batches)
    total = 0.0
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum") / n
        loss.backward()
        total += loss.item()
    optimizer.step()
    return total


def accumulate_weighted_means(model, optimizer, micro_batches):
    """Correct differently: each micro-batch's mean times its share n_i / N, cleared at the end."""
    counts = [(t != -100).sum() for _, t in micro_batches]
    n = sum(counts)
    total = 0.0
    for (tokens, targets), n_i in zip(micro_batches, counts, strict=True):
        _, loss = model(tokens, targets)
        (loss * n_i / n).backward()
        total += float(loss.detach() * n_i / n)
    optimizer.step()
    model.zero_grad()
    return total


def accumulate_whole_batch(model, optimizer, micro_batches):
    """Correct differently (no accumulation at all): one batch of every micro-batch's rows."""
    optimizer.zero_grad(set_to_none=False)
    tokens = torch.cat([t for t, _ in micro_batches])
    targets = torch.cat([t for _, t in micro_batches])
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))
    loss.backward()
    optimizer.step()
    return loss.item()


def accumulate_mean_of_means(model, optimizer, micro_batches):
    """The recipe that is exact only for equal token counts (transformers#34191)."""
    optimizer.zero_grad()
    m = len(micro_batches)
    total = 0.0
    for tokens, targets in micro_batches:
        _, loss = model(tokens, targets)
        (loss / m).backward()
        total += loss.item() / m
    optimizer.step()
    return total


def accumulate_counts_padding(model, optimizer, micro_batches):
    optimizer.zero_grad()
    n = sum(t.numel() for _, t in micro_batches)
    total = 0.0
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum") / n
        loss.backward()
        total += loss.item()
    optimizer.step()
    return total


def accumulate_sum(model, optimizer, micro_batches):
    optimizer.zero_grad()
    total = 0.0
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum")
        loss.backward()
        total += loss.item()
    optimizer.step()
    return total


def accumulate_means_added(model, optimizer, micro_batches):
    optimizer.zero_grad()
    total = 0.0
    for tokens, targets in micro_batches:
        _, loss = model(tokens, targets)
        loss.backward()
        total += loss.item()
    optimizer.step()
    return total


def accumulate_no_zero_grad(model, optimizer, micro_batches):
    n = sum(int((t != -100).sum()) for _, t in micro_batches)
    total = 0.0
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum") / n
        loss.backward()
        total += loss.item()
    optimizer.step()
    return total


def accumulate_step_per_micro_batch(model, optimizer, micro_batches):
    total = 0.0
    for tokens, targets in micro_batches:
        optimizer.zero_grad()
        _, loss = model(tokens, targets)
        loss.backward()
        optimizer.step()
        total += loss.item()
    return total / len(micro_batches)


def accumulate_zero_grad_in_loop(model, optimizer, micro_batches):
    n = sum(int((t != -100).sum()) for _, t in micro_batches)
    total = 0.0
    for tokens, targets in micro_batches:
        optimizer.zero_grad()
        logits, _ = model(tokens)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum") / n
        loss.backward()
        total += loss.item()
    optimizer.step()
    return total


def accumulate_counts_nonzero_targets(model, optimizer, micro_batches):
    """Real tokens counted with `targets > 0`: a real target of token id 0 is dropped."""
    optimizer.zero_grad()
    n = sum(int((t > 0).sum()) for _, t in micro_batches)
    total = 0.0
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum") / n
        loss.backward()
        total += loss.item()
    optimizer.step()
    return total


ACCUMULATE_HINTS = [
    primer.TOKEN_WEIGHTED,
    primer.PADDING_COUNTED,
    primer.NO_ZERO_GRAD,
    primer.STEP_BEFORE_BACKWARD,
    primer.SUM_REDUCTION,
    primer.CLIPPED,
]


@pytest.mark.parametrize(
    "answer", [accumulate_reference, accumulate_weighted_means, accumulate_whole_batch]
)
def test_accumulate_step_accepts_correct_answers(answer):
    result = run("primer_accumulate_step", answer)
    assert result.passed, result.message


@pytest.mark.parametrize(
    "answer, hint, words",
    [
        (accumulate_mean_of_means, primer.TOKEN_WEIGHTED, "real tokens are [5, 16, 12]"),
        (accumulate_means_added, primer.TOKEN_WEIGHTED, "were added, not averaged"),
        (accumulate_counts_padding, primer.PADDING_COUNTED, "33 real tokens over 48 positions"),
        (accumulate_sum, "divide the summed losses by N", "48 = the real tokens"),
        (accumulate_no_zero_grad, primer.NO_ZERO_GRAD, "they accumulated"),
        (accumulate_zero_grad_in_loop, "before the loop over micro-batches", "the last micro"),
        (
            accumulate_counts_nonzero_targets,
            "a token id of 0 is a real token",
            "divided by 47, but these micro-batches hold 48 real tokens",
        ),
    ],
)
def test_accumulate_step_rejects_mistakes_with_their_hint(answer, hint, words):
    result = run("primer_accumulate_step", answer)
    assert_only_hint(result, hint, ACCUMULATE_HINTS)
    assert words in result.message, result.message


def test_accumulate_step_mean_of_means_passes_equal_counts_and_fails_unequal():
    """The first call's micro-batches hold equal token counts (the recipe is exact there)."""
    assert len(set(sum(r) for r in primer.ACCUMULATE_LENGTHS[0])) == 1
    assert len(set(sum(r) for r in primer.ACCUMULATE_LENGTHS[1])) > 1
    assert "In call 2" in run("primer_accumulate_step", accumulate_mean_of_means).message


def test_accumulate_step_one_step_per_micro_batch_is_named():
    result = run("primer_accumulate_step", accumulate_step_per_micro_batch)
    assert not result.passed and "`optimizer.step()` ran 3 times" in result.message


# --- stubs, odd answers, endless loops ------------------------------------------------------------


def stub_step(model, optimizer, tokens, targets):
    raise NotImplementedError()


def stub_block(block, x):
    raise NotImplementedError()


def stub_accumulate(model, optimizer, micro_batches):
    raise NotImplementedError()


@pytest.mark.parametrize(
    "exercise_id, stub",
    [
        ("primer_train_step", stub_step),
        ("primer_block_forward", stub_block),
        ("primer_accumulate_step", stub_accumulate),
    ],
)
def test_a_stub_is_not_attempted(exercise_id, stub):
    result = gu.exercises.check(exercise_id, stub)
    assert not result.attempted and "not attempted yet" in result.message
    assert not run(exercise_id, stub).attempted  # also when run without the source check


def step_endless(model, optimizer, tokens, targets):
    done = 0
    while done < 1:
        optimizer.zero_grad()


def test_an_endless_step_is_stopped_with_its_line():
    # start the checker's process first (an answer with the wrong arguments is judged at once),
    # so that a slow start on a busy machine is not counted against the loop's few seconds
    assert "takes (model)" in gu.exercises.check("primer_train_step", lambda model: None).message
    result = gu.exercises.check("primer_train_step", step_endless, timeout=3)
    assert not result.passed
    assert "still running after 3 s" in result.message, result.message
    assert "`while done < 1:`" in result.message and "`done`" in result.message, result.message


def test_wrong_arguments_are_named():
    result = run("primer_train_step", lambda model, optimizer: None)
    assert "takes (model, optimizer)" in result.message
    assert "def f(model, optimizer, tokens, targets)" in result.message


def block_residual_in_place(block, x):
    b, s, h = x.shape
    a = block.attn.config.n_heads
    q, k, v = block.attn.qkv(block.ln1(x)).split(h, dim=-1)
    q, k, v = (t.view(b, s, a, h // a).transpose(1, 2) for t in (q, k, v))
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    x += block.attn.proj(y.transpose(1, 2).reshape(b, s, h))
    return x + _mlp(block, block.ln2(x))


def step_logits_not_flattened(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits, targets)
    loss.backward()
    optimizer.step()
    return loss.item()


def test_errors_get_the_hint_their_text_and_line_show():
    """An in-place residual (autograd refuses it on an input that carries a gradient) and
    logits passed to cross_entropy unflattened: the learner's line and what to write."""
    result = run("primer_block_forward", block_residual_in_place)
    assert primer.IN_PLACE in result.message and "`x += block.attn.proj(" in result.message
    result = run("primer_train_step", step_logits_not_flattened)
    assert primer.CROSS_ENTROPY_SHAPES in result.message, result.message


# --- issue 30.5-7: causes read from the gradient at the logits (held-out round 2) ----------------


def step_rebuilt_logits(model, optimizer, tokens, targets):
    """The logits rebuilt from their values: backward runs, but on a graph without the model."""
    optimizer.zero_grad()
    logits, _ = model(tokens)
    copy = torch.tensor(logits.tolist(), requires_grad=True)
    loss = F.cross_entropy(copy.view(-1, copy.shape[-1]), targets.view(-1))
    loss.backward()
    optimizer.step()
    return loss.item()


def step_forward_without_grad(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    with torch.no_grad():
        logits, _ = model(tokens)
    logits.requires_grad_()
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    loss.backward()
    optimizer.step()
    return loss.item()


def step_gathered_logit(model, optimizer, tokens, targets):
    """Minus the target's raw logit, gathered by hand: no log-softmax."""
    optimizer.zero_grad()
    logits, _ = model(tokens)
    loss = -logits.gather(-1, targets.unsqueeze(-1)).mean()
    loss.backward()
    optimizer.step()
    return loss.item()


def step_targets_seq_major(model, optimizer, tokens, targets):
    """Logits batch-major, targets flattened position-major (targets.T)."""
    optimizer.zero_grad()
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), targets.t().reshape(-1))
    loss.backward()
    optimizer.step()
    return loss.item()


def step_smoothed_by_hand(model, optimizer, tokens, targets):
    """Label smoothing 0.2 written out: 0.8 of the cross-entropy, 0.2 of the uniform term."""
    optimizer.zero_grad()
    logits, _ = model(tokens)
    logp = torch.log_softmax(logits, dim=-1)
    nll = -logp.gather(-1, targets[..., None]).mean()
    loss = 0.8 * nll + 0.2 * (-logp.mean(-1)).mean()
    loss.backward()
    optimizer.step()
    return loss.item()


def step_loss_in_half(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.half().flatten(0, 1), targets.flatten())
    loss.backward()
    optimizer.step()
    return float(loss)


def step_backward_twice_through_autograd(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    _, loss = model(tokens, targets)
    torch.autograd.backward(loss, retain_graph=True)
    loss.backward()
    optimizer.step()
    return loss.item()


@pytest.mark.parametrize(
    "answer, hint, words",
    [
        (step_rebuilt_logits, primer.DETACHED, "`backward()` ran (1x), but no gradient reached"),
        (step_forward_without_grad, primer.DETACHED, "logits without autograd"),
        (step_gathered_logit, primer.NLL_ON_LOGITS, "-1/32 at each target token"),
        (step_targets_seq_major, primer.WRONG_TARGETS, "towards a token that is not their target"),
        (step_smoothed_by_hand, primer.SMOOTHED, "targets smoothed by 0.2"),
        (step_loss_in_half, primer.LOW_PRECISION, "is a float16 number"),
        (step_backward_twice_through_autograd, primer.DOUBLE_BACKWARD, "2 times"),
    ],
)
def test_train_step_reads_the_cause_at_the_logits(answer, hint, words):
    """The gradient that reached the model's logits says what the loss did (issue 30.5)."""
    result = run("primer_train_step", answer)
    assert_only_hint(result, hint, [*STEP_HINTS, *LOGIT_HINTS])
    assert words in result.message, result.message
    assert primer.NO_BACKWARD not in result.message, result.message


LOGIT_HINTS = [
    primer.DOUBLE_BACKWARD,
    primer.NLL_ON_LOGITS,
    primer.WRONG_TARGETS,
    primer.SMOOTHED,
    primer.LOW_PRECISION,
    primer.PADDING_SCORED,
    primer.ONE_DIVISOR,
]


def accumulate_running_share(model, optimizer, micro_batches):
    """Each micro-batch's mean weighted by n_i over the tokens counted so far."""
    optimizer.zero_grad()
    counts = [int(t.ne(-100).sum()) for _, t in micro_batches]
    total = 0.0
    for i, (tokens, targets) in enumerate(micro_batches):
        _, mean = model(tokens, targets)
        part = mean * counts[i] / sum(counts[: i + 1])
        part.backward()
        total += part.item()
    optimizer.step()
    return total


def accumulate_padding_as_input_token(model, optimizer, micro_batches):
    """Padded targets replaced by the input token at that position: padding is scored."""
    optimizer.zero_grad()
    n = sum(int((t != -100).sum()) for _, t in micro_batches)
    total = 0.0
    for tokens, targets in micro_batches:
        filled = torch.where(targets == -100, tokens, targets)
        logits, _ = model(tokens)
        loss = F.cross_entropy(logits.flatten(0, 1), filled.flatten(), reduction="sum") / n
        loss.backward()
        total += loss.item()
    optimizer.step()
    return total


def accumulate_positions_weighted(model, optimizer, micro_batches):
    """Each micro-batch's mean times its positions (batch x seq) over N."""
    optimizer.zero_grad()
    n = sum(int((t != -100).sum()) for _, t in micro_batches)
    total = 0.0
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        mean = F.cross_entropy(logits.transpose(1, 2), targets)
        part = mean * targets.shape[0] * targets.shape[1] / n
        part.backward()
        total += part.item()
    optimizer.step()
    return total


def accumulate_count_from_last(model, optimizer, micro_batches):
    """N taken as the last micro-batch's real tokens times the number of micro-batches."""
    optimizer.zero_grad()
    n = len(micro_batches) * int((micro_batches[-1][1] >= 0).sum())
    total = 0.0
    for tokens, targets in micro_batches:
        _, mean = model(tokens, targets)
        part = mean * (targets != -100).sum() / n
        part.backward()
        total += part.item()
    optimizer.step()
    return total


@pytest.mark.parametrize(
    "answer, hint, words",
    [
        (accumulate_running_share, primer.ONE_DIVISOR, "running counts of real tokens"),
        (accumulate_padding_as_input_token, primer.PADDING_SCORED, "they were scored"),
        (accumulate_positions_weighted, primer.ONE_DIVISOR, "by its positions, [16, 16, 16]"),
        (
            accumulate_count_from_last,
            "in every micro-batch and add",
            "36 = the last micro-batch's 12 real tokens x 3 micro-batches",
        ),
    ],
)
def test_accumulate_step_reads_each_micro_batchs_share(answer, hint, words):
    """Per micro-batch, the factor on its gradient at the logits (issue 30.5)."""
    result = run("primer_accumulate_step", answer)
    assert_only_hint(result, hint, [*ACCUMULATE_HINTS, *LOGIT_HINTS])
    assert words in result.message, result.message


def test_a_first_micro_batch_with_padding_tells_its_count_from_the_positions():
    """Call 2's first micro-batch holds padding: m x its count (15) is not the positions (48)."""
    counts = [sum(r) for r in primer.ACCUMULATE_LENGTHS[1]]
    assert counts[0] * len(counts) != 16 * len(counts)


def step_floor_divided_sum(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum")
    loss = loss.floor_divide(targets.numel())
    loss.backward()
    optimizer.step()
    return loss.item()


def test_a_floor_division_is_named_from_its_error():
    result = run("primer_train_step", step_floor_divided_sum)
    assert_only_hint(result, primer.FLOOR_DIVISION, STEP_HINTS)
    assert "floor_divide" in result.message and "`loss.backward()`" in result.message


# --- issue 30, held-out round 3: causes from evidence (what backward ran on, which positions carry
# no gradient, what the model read, which parameters are off, what a one-position sequence shows)


def test_call_2s_targets_miss_token_0_and_the_last_id():
    """A size taken from the data (one_hot without num_classes) differs from the vocabulary only
    on a batch without the last id: call 2 has neither end, calls 1 and 3 have both (call 4 is
    a batch of one sequence, for `squeeze()`)."""
    v = primer.STEP_CONFIG["vocab_size"]
    batches = primer._step_batches()
    holds = [(bool((t == 0).any()), bool((t == v - 1).any())) for _, t in batches]
    assert holds[:3] == [(True, True), (False, False), (True, True)]
    assert [t.shape[0] for t, _ in batches] == [4, 4, 4, 1]


def step_one_hot_without_num_classes(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.flatten(0, 1), F.one_hot(targets.flatten()).float())
    loss.backward()
    optimizer.step()
    return loss.item()


def step_soft_targets_sized_by_max(model, optimizer, tokens, targets):
    """One-hot probabilities built by hand, as wide as the largest target + 1."""
    optimizer.zero_grad()
    logits, _ = model(tokens)
    flat = targets.flatten()
    probs = torch.zeros(flat.numel(), int(flat.max()) + 1).scatter_(1, flat[:, None], 1.0)
    loss = F.cross_entropy(logits.flatten(0, 1), probs)
    loss.backward()
    optimizer.step()
    return loss.item()


def step_one_hot_with_num_classes(model, optimizer, tokens, targets):
    """Correct differently: probabilities as targets, as wide as the vocabulary."""
    optimizer.zero_grad()
    logits, _ = model(tokens)
    probs = F.one_hot(targets.flatten(), num_classes=logits.shape[-1]).float()
    loss = F.cross_entropy(logits.flatten(0, 1), probs)
    loss.backward()
    optimizer.step()
    return loss.item()


def step_unpacks_loss_first(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    loss, _ = model(tokens, targets)
    loss.backward()
    optimizer.step()
    return loss.item()


def step_loss_per_position(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="none")
    loss.backward()
    optimizer.step()
    return loss.mean().item()


def step_scores_against_inputs(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.flatten(0, 1), tokens.flatten())
    loss.backward()
    optimizer.step()
    return loss.item()


def step_scores_against_inputs_class_dim(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.transpose(1, 2), tokens)
    loss.backward()
    optimizer.step()
    return loss.item()


def step_targets_rolled(model, optimizer, tokens, targets):
    """Each position scored against the previous position's target."""
    optimizer.zero_grad()
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.transpose(1, 2), targets.roll(1, dims=1))
    loss.backward()
    optimizer.step()
    return loss.item()


def step_model_reads_targets(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(targets)
    loss = F.cross_entropy(logits.flatten(0, 1), tokens.flatten())
    loss.backward()
    optimizer.step()
    return loss.item()


def step_ignore_index_zero(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=0)
    loss.backward()
    optimizer.step()
    return loss.item()


def step_targets_above_zero(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    keep = targets > 0  # token 0 taken for padding
    loss = F.cross_entropy(logits[keep], targets[keep])
    loss.backward()
    optimizer.step()
    return loss.item()


def step_drops_last_position(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits[:, :-1].flatten(0, 1), targets[:, :-1].flatten())
    loss.backward()
    optimizer.step()
    return loss.item()


def step_drops_first_position(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits[:, 1:].transpose(1, 2), targets[:, 1:])
    loss.backward()
    optimizer.step()
    return loss.item()


ROUND3_STEP_HINTS = [
    primer.SIZE_FROM_DATA,
    primer.LOGITS_NOT_LOSS,
    primer.PER_POSITION_LOSS,
    primer.NOT_A_NUMBER,
    primer.SCORED_INPUTS,
    primer.OTHER_TARGETS,
    primer.INPUTS_SWAPPED,
    primer.ZERO_IS_A_TOKEN,
    primer.LAST_POSITION,
    primer.UNSCORED,
    primer.TIED_ONCE,
]


@pytest.mark.parametrize(
    "answer, hint, words",
    [
        (step_one_hot_without_num_classes, primer.SIZE_FROM_DATA, "hold no token 31"),
        (step_soft_targets_sized_by_max, primer.SIZE_FROM_DATA, "one target set to 31 runs"),
        (step_unpacks_loss_first, primer.LOGITS_NOT_LOSS, "exactly the logits"),
        (step_loss_per_position, primer.PER_POSITION_LOSS, "shape (32,): one value per"),
        (step_scores_against_inputs, primer.SCORED_INPUTS, "same position of the input"),
        (step_scores_against_inputs_class_dim, primer.SCORED_INPUTS, "its own input token"),
        (step_targets_rolled, primer.OTHER_TARGETS, "but another position's"),
        (step_model_reads_targets, primer.INPUTS_SWAPPED, "the model's input was not"),
        (step_ignore_index_zero, primer.ZERO_IS_A_TOKEN, "whose target is token 0"),
        (step_targets_above_zero, primer.ZERO_IS_A_TOKEN, "a mean over those 30 alone"),
        (step_drops_last_position, primer.LAST_POSITION, "the last position (7)"),
        (step_drops_first_position, primer.UNSCORED, "position 0 of every sequence"),
    ],
)
def test_train_step_round3_causes_come_from_evidence(answer, hint, words):
    result = run("primer_train_step", answer)
    assert_only_hint(result, hint, [*STEP_HINTS, *LOGIT_HINTS, *ROUND3_STEP_HINTS])
    assert words in result.message, result.message


def test_train_step_accepts_one_hot_targets_as_wide_as_the_vocabulary():
    result = run("primer_train_step", step_one_hot_with_num_classes)
    assert result.passed, result.message


def test_a_flatten_order_mistake_is_not_called_scoring_the_inputs():
    message = run("primer_train_step", step_targets_seq_major).message
    assert primer.WRONG_TARGETS in message and primer.SCORED_INPUTS not in message, message


def block_float_d_head(block, x):
    b, s, h = x.shape
    a = block.attn.config.n_heads
    d = h / a
    q, k, v = block.attn.qkv(block.ln1(x)).split(h, dim=-1)
    q, k, v = (t.view(b, s, a, d).transpose(1, 2) for t in (q, k, v))
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    x = x + block.attn.proj(y.transpose(1, 2).reshape(b, s, h))
    return x + _mlp(block, block.ln2(x))


def block_float_d_head_unflatten(block, x):
    b, s, h = x.shape
    a = block.attn.config.n_heads
    q, k, v = block.attn.qkv(block.ln1(x)).split(h, dim=-1)
    q, k, v = (t.unflatten(-1, (a, h / a)).transpose(1, 2) for t in (q, k, v))
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    x = x + block.attn.proj(y.transpose(1, 2).reshape(b, s, h))
    return x + _mlp(block, block.ln2(x))


def _strided_heads(block, x, split):
    b, s, h = x.shape
    a = block.attn.config.n_heads
    q, k, v = block.attn.qkv(block.ln1(x)).split(h, dim=-1)
    q, k, v = (split(t, b, s, h // a, a) for t in (q, k, v))
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    x = x + block.attn.proj(y.permute(0, 2, 3, 1).reshape(b, s, h))
    return x + _mlp(block, block.ln2(x))


def block_heads_interleaved(block, x):
    return _strided_heads(block, x, lambda t, b, s, d, a: t.view(b, s, d, a).permute(0, 3, 1, 2))


def block_heads_interleaved_unflatten(block, x):
    return _strided_heads(block, x, lambda t, b, s, d, a: t.unflatten(-1, (d, a)).movedim(-1, 1))


def _attention_then(block, x, *, probs=1.0, values=1.0):
    """Unscaled scores, masked and softmaxed, then a factor on the probabilities or on v."""
    b, s, h = x.shape
    a = block.attn.config.n_heads
    d = h // a
    q, k, v = block.attn.qkv(block.ln1(x)).split(h, dim=-1)
    q, k, v = (t.view(b, s, a, d).transpose(1, 2) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1)
    mask = torch.ones(s, s, dtype=torch.bool).triu(1)
    weights = scores.masked_fill(mask, float("-inf")).softmax(-1) * probs
    y = (weights @ (v * values)).transpose(1, 2).reshape(b, s, h)
    x = x + block.attn.proj(y)
    return x + _mlp(block, block.ln2(x))


def block_scale_after_softmax(block, x):
    d = x.shape[-1] // block.attn.config.n_heads
    return _attention_then(block, x, probs=1 / math.sqrt(d))


def block_scale_on_values(block, x):
    d = x.shape[-1] // block.attn.config.n_heads
    return _attention_then(block, x, values=1 / math.sqrt(d))


def block_halved_weights(block, x):
    """A factor 0.5 after the softmax that is no scale of attention."""
    return _attention_then(block, x, probs=0.5)


_FUTURE = {}


def block_mask_cached_first_shape(block, x):
    s = x.shape[1]
    if "mask" not in _FUTURE:
        _FUTURE["mask"] = torch.ones(s, s, dtype=torch.bool).triu(1)
    return _mask_given(block, x, _FUTURE["mask"])


def block_mask_of_length_5(block, x):
    return _mask_given(block, x, torch.ones(5, 5, dtype=torch.bool).triu(1))


def block_mask_cached_per_length(block, x):
    """Correct differently: one mask per sequence length, kept between calls."""
    s = x.shape[1]
    if s not in _FUTURE:
        _FUTURE[s] = torch.ones(s, s, dtype=torch.bool).triu(1)
    return _mask_given(block, x, _FUTURE[s])


def _mask_given(block, x, mask):
    b, s, h = x.shape
    a = block.attn.config.n_heads
    d = h // a
    q, k, v = block.attn.qkv(block.ln1(x)).split(h, dim=-1)
    q, k, v = (t.view(b, s, a, d).transpose(1, 2) for t in (q, k, v))
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(d)
    y = scores.masked_fill(mask, float("-inf")).softmax(-1) @ v
    x = x + block.attn.proj(y.transpose(1, 2).reshape(b, s, h))
    return x + _mlp(block, block.ln2(x))


def block_queries_scaled(block, x):
    """Correct differently: q scaled by 1/sqrt(d_head) before the scores (not after softmax)."""
    b, s, h = x.shape
    a = block.attn.config.n_heads
    d = h // a
    q, k, v = block.attn.qkv(block.ln1(x)).split(h, dim=-1)
    q, k, v = (t.view(b, s, a, d).transpose(1, 2) for t in (q, k, v))
    y = F.scaled_dot_product_attention(q * d**-0.5, k, v, is_causal=True, scale=1.0)
    x = x + block.attn.proj(y.transpose(1, 2).reshape(b, s, h))
    return x + _mlp(block, block.ln2(x))


ROUND3_BLOCK_HINTS = [
    primer.D_HEAD_INT,
    primer.HEADS_CONTIGUOUS,
    primer.SCALE_PLACE,
    primer.AFTER_SOFTMAX,
    primer.STALE_LENGTH,
]


@pytest.mark.parametrize(
    "answer, hint, words",
    [
        (block_float_d_head, primer.D_HEAD_INT, "TypeError"),
        (block_float_d_head_unflatten, primer.D_HEAD_INT, "got float"),
        (block_heads_interleaved, primer.HEADS_CONTIGUOUS, "every n_heads-th feature"),
        (block_heads_interleaved_unflatten, primer.HEADS_CONTIGUOUS, "every n_heads-th feature"),
        (block_scale_after_softmax, primer.SCALE_PLACE, "is v times 0.3536"),
        (block_scale_on_values, primer.SCALE_PLACE, "1/sqrt(d_head) with d_head = 8"),
        (block_halved_weights, primer.AFTER_SOFTMAX, "is v times 0.5"),
        (block_mask_cached_first_shape, primer.STALE_LENGTH, "an earlier call's sequence length"),
        (block_mask_of_length_5, primer.STALE_LENGTH, "raised at sequence length 7"),
    ],
)
def test_block_round3_causes_come_from_evidence(answer, hint, words):
    _FUTURE.clear()
    result = run("primer_block_forward", answer)
    assert_only_hint(result, hint, [*BLOCK_HINTS, *ROUND3_BLOCK_HINTS])
    assert words in result.message, result.message


@pytest.mark.parametrize("answer", [block_mask_cached_per_length, block_queries_scaled])
def test_block_round3_correct_alternatives_pass(answer):
    _FUTURE.clear()
    result = run("primer_block_forward", answer)
    assert result.passed, result.message


def _accumulate_summed(model, micro_batches):
    total = 0.0
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        summed = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum")
        summed.backward()
        total += summed.item()
    return total


def accumulate_tied_weight_divided_twice(model, optimizer, micro_batches):
    optimizer.zero_grad()
    n = sum(int((t != -100).sum()) for _, t in micro_batches)
    total = _accumulate_summed(model, micro_batches)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, (torch.nn.Linear, torch.nn.Embedding, torch.nn.LayerNorm)):
                for p in module.parameters(recurse=False):
                    p.grad /= n
    optimizer.step()
    return total / n


def accumulate_divides_every_name(model, optimizer, micro_batches):
    """Every parameter name's gradient divided, the tied weight's under both of its names."""
    optimizer.zero_grad()
    n = sum(int((t != -100).sum()) for _, t in micro_batches)
    total = _accumulate_summed(model, micro_batches)
    with torch.no_grad():
        for _, p in model.named_parameters(remove_duplicate=False):
            p.grad /= n
    optimizer.step()
    return total / n


def accumulate_divides_each_parameter_once(model, optimizer, micro_batches):
    """Correct differently: summed losses, each parameter's gradient divided once after."""
    optimizer.zero_grad()
    n = sum(int((t != -100).sum()) for _, t in micro_batches)
    total = _accumulate_summed(model, micro_batches)
    with torch.no_grad():
        for p in model.parameters():
            p.grad /= n
    optimizer.step()
    return total / n


def accumulate_return_inside_loop(model, optimizer, micro_batches):
    optimizer.zero_grad()
    n = sum(int((t != -100).sum()) for _, t in micro_batches)
    total = 0.0
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum") / n
        loss.backward()
        total += loss.item()
        optimizer.step()
        return total


def accumulate_step_then_break(model, optimizer, micro_batches):
    optimizer.zero_grad()
    total = 0.0
    for tokens, targets in micro_batches:
        _, loss = model(tokens, targets)
        loss.backward()
        total += loss.item()
        optimizer.step()
        break
    return total


def accumulate_unpacks_targets_first(model, optimizer, micro_batches):
    optimizer.zero_grad()
    n = sum(int((t != -100).sum()) for t, _ in micro_batches)
    total = 0.0
    for targets, tokens in micro_batches:
        logits, _ = model(tokens)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum") / n
        loss.backward()
        total += loss.item()
    optimizer.step()
    return total


def accumulate_count_per_position(model, optimizer, micro_batches):
    optimizer.zero_grad()
    n = sum((t != -100).sum(dim=0) for _, t in micro_batches)
    total = 0.0
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum") / n
        loss.backward()
        total += loss.item()
    optimizer.step()
    return total


@pytest.mark.parametrize(
    "answer, hint, words",
    [
        (accumulate_tied_weight_divided_twice, primer.TIED_ONCE, "is also `lm_head.weight`"),
        (accumulate_divides_every_name, primer.TIED_ONCE, "`wte.weight`'s is 0.02083 = 1/48"),
        (accumulate_return_inside_loop, "after the loop", "micro-batch 1 of 3 alone"),
        (accumulate_step_then_break, "after the loop", "only 1 of the 3 micro-batches"),
        (accumulate_unpacks_targets_first, primer.INPUTS_SWAPPED, "tokens and targets were"),
        (accumulate_count_per_position, primer.NOT_A_NUMBER, "shape (8,), not one number"),
    ],
)
def test_accumulate_step_round3_causes_come_from_evidence(answer, hint, words):
    result = run("primer_accumulate_step", answer)
    assert_only_hint(result, hint, [*ACCUMULATE_HINTS, *LOGIT_HINTS, *ROUND3_STEP_HINTS])
    assert words in result.message, result.message


def test_accumulate_step_accepts_gradients_divided_once_per_parameter():
    result = run("primer_accumulate_step", accumulate_divides_each_parameter_once)
    assert result.passed, result.message


def accumulate_one_hot_without_num_classes(model, optimizer, micro_batches):
    """Soft targets as wide as the largest target present: call 1's first micro-batch holds
    neither token 0 nor the last id."""
    optimizer.zero_grad()
    n = sum(int((t != -100).sum()) for _, t in micro_batches)
    total = 0.0
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        real = targets != -100
        probs = F.one_hot(targets[real]).float()
        loss = F.cross_entropy(logits[real], probs, reduction="sum") / n
        loss.backward()
        total += loss.item()
    optimizer.step()
    return total


_RAISED = []


def step_raises_on_its_first_call_only(model, optimizer, tokens, targets):
    """An error that depends on a global, not on the data: never called data-dependent."""
    if not _RAISED:
        _RAISED.append(1)
        raise ValueError("first call")
    return step_reference(model, optimizer, tokens, targets)


def test_an_error_that_one_changed_target_removes_is_named_in_a_micro_batch_too():
    result = run("primer_accumulate_step", accumulate_one_hot_without_num_classes)
    assert_only_hint(result, primer.SIZE_FROM_DATA, [*ACCUMULATE_HINTS, *ROUND3_STEP_HINTS])
    assert "the targets of micro-batch 1 hold no token 31" in result.message, result.message


def test_an_error_that_does_not_come_back_is_not_blamed_on_the_data():
    _RAISED.clear()
    result = run("primer_train_step", step_raises_on_its_first_call_only)
    assert not result.passed and "ValueError" in result.message, result.message
    assert primer.SIZE_FROM_DATA not in result.message, result.message
