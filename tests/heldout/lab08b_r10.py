"""Blind held-out round lab08b_r10 (held2), written 2026-11-29 ~11:52-12:00 UTC (date -u) by a helper
session that never opened the checker, tests/test_*, tests/heldout/report.py, any FAQ or
gpu_utils/exercises/.

Read: solutions/08b_pytorch_primer_lab.ipynb (exercise texts and reference answers),
gpu_utils/many_gpus/gpt.py (gu.gpt: Block, CausalSelfAttention, MLP, GPT.forward, which returns
(logits, None) without targets and the mean cross-entropy with ignore_index -100 with them),
tests/heldout/__init__.py, the docstring and first entries of tests/heldout/lab08b_r9.py (format;
a few more of its entries were glimpsed by accident, all of them already listed in the causes
file) and /tmp/blind/causes_lab08b.txt (161 earlier causes, all avoided: each mistake here is of
a kind not listed there).

Verification: /tmp/lab08b_r10/verify.py (r9's harness, pointed at this file, with a stronger
look-ahead test), run from tests/ with GPU_COURSE_MODE=simulator and torch 2.13 (CPU); each answer
is loaded with heldout.submitted() and compared with the solution notebook's reference code.
- train_step: gu.gpt.build(seed=0, vocab 32, seq 8, d_model 16, 1 layer, 2 heads) and (vocab 20,
  seq 6, d_model 24, 2 layers, 3 heads), SGD(lr=0.1, momentum=0.9), 4 consecutive calls on batches
  of 4, 4, 4 and 1 sequences (two data seeds, one target set to token 0); the returned loss (must
  be a float) and every parameter after each call, atol 1e-5.
- block_forward: gu.gpt.Block with every parameter random (0.5 * randn), (b, s, h, heads, seq_len)
  = (2, 8, 16, 2, 8), (1, 5, 24, 3, 8), (3, 1, 12, 4, 4), (2, 7, 12, 1, 7), (2, 6, 16, 4, 6),
  (8, 8, 16, 2, 8); output and every parameter's gradient of (out * r).sum(), atol 1e-4; look-ahead
  test: the last token changed by a random vector (not a constant, which LayerNorm removes),
  earlier outputs compared; plus x's gradient for the einsum answer and an input x that requires
  grad for the in-place answer (/tmp/lab08b_r10/extra.py, extra2.py).
- accumulate_step: the two models above, 3 calls of 3 micro-batches (2, seq): call 1 unpadded,
  calls 2 and 3 padded with -100 targets (16/5/12 and 7/16/10 real tokens for the first model,
  other counts for the second), one real target of token 0; loss and every parameter after each
  call, atol 1e-5.
What was seen: the 6 right answers agree everywhere (largest differences about 4e-6). Wrong ones:
- train_step_forgets_optimizer_step: parameters never move; call 1's loss right, later ones off.
- train_step_loss_in_bits: loss 5.02 vs 3.48 (x 1/ln 2) and parameters off from call 1.
- train_step_gather_wrong_dim: batches of 4: wrong loss (3.449 vs 3.485) and parameters; the batch
  of 1 (8 positions, target ids up to 31) raises an index-out-of-bounds RuntimeError.
- train_step_loss_passed_to_step: TypeError ('Tensor' object is not callable) on every call.
- block_forward_masked_fill_result_dropped: outputs off by 4-9 and looks ahead (0.5-3.3) for
  every s > 1; right for s = 1.
- block_forward_rms_instead_of_layernorm: outputs off by 2-3.5 on every shape; no look-ahead.
- block_forward_bmm_on_4d: RuntimeError (batch1 must be a 3D tensor) on every shape.
- block_forward_inplace_residual: output values right on a copy of x, but the caller's x is
  changed (by up to 7.5), backward raises (modified by an inplace operation) on every shape, and an
  x that requires grad makes the forward raise (leaf Variable used in an in-place operation).
- accumulate_step_mask_not_flattened: IndexError (too many indices) on the first call.
- accumulate_step_torch_sum_of_list: TypeError (sum(): argument must be Tensor, not list).
- accumulate_step_count_from_leftover_loop_variable: call 1 (16 real tokens per micro-batch) loss
  10.39 vs 3.46 (3x) and parameters off; padded calls off by other factors.
- accumulate_step_model_loss_without_targets: TypeError (NoneType * float) on the first call.
"""

from heldout import Blind

_PRE = """
import math
import torch
import torch.nn.functional as F
"""

ANSWERS = [
    # ---------------------------------------------------------------- train_step
    Blind(
        name="train_step_logsumexp_model_zero_grad",
        exercise_id="primer_train_step",
        half="held2",
        correct=True,
        source=_PRE
        + """
def train_step(model, optimizer, tokens, targets):
    model.zero_grad(set_to_none=True)  # same parameters as the optimizer's
    logits, _ = model(tokens)
    flat = logits.reshape(-1, logits.shape[-1])
    picked = flat.gather(1, targets.reshape(-1, 1)).squeeze(1)
    # cross-entropy = logsumexp(logits) - logit of the target, averaged over positions
    loss = (torch.logsumexp(flat, dim=1) - picked).mean()
    loss.backward()
    optimizer.step()
    return loss.item()
""",
    ),
    Blind(
        name="train_step_per_token_mean_clear_both",
        exercise_id="primer_train_step",
        half="held2",
        correct=True,
        source=_PRE
        + """
def train_step(model, optimizer, tokens, targets):
    for p in model.parameters():
        p.grad = None
    logits, _ = model(tokens)
    per_token = F.cross_entropy(
        logits.transpose(1, 2), targets, reduction="none"
    )  # (batch, seq): classes on dim 1
    loss = per_token.mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return float(loss.detach())
""",
    ),
    Blind(
        name="train_step_forgets_optimizer_step",
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause="optimizer.step() is never called: the gradients are computed by backward() but the parameters are never updated, so every step leaves the model unchanged (only the first call's returned loss is right).",
        source=_PRE
        + """
def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    loss.backward()
    return loss.item()
""",
        hints=("optimizer.step()",),
    ),
    Blind(
        name="train_step_loss_in_bits",
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause="The cross-entropy is divided by ln 2 to express it in bits per token, but F.cross_entropy (and the task) uses nats: the loss and the gradients the step uses are 1/ln 2 (about 1.44) times too large.",
        source=_PRE
        + """
def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    # cross-entropy in bits per token
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten()) / math.log(2)
    loss.backward()
    optimizer.step()
    return loss.item()
""",
    ),
    Blind(
        name="train_step_gather_wrong_dim",
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause="The hand-written cross-entropy gathers the target log-probabilities along dim 0 (the positions) instead of dim 1 (the vocabulary) of the (positions, vocab) tensor, so each position picks logp[target, 0], another position's probability of token 0, instead of its own logp[position, target] (and it raises an index error when a target id is not below the number of positions, e.g. a batch of one sequence).",
        source=_PRE
        + """
def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    logp = F.log_softmax(logits.flatten(0, 1), dim=-1)   # (positions, vocab)
    nll = -logp.gather(0, targets.flatten().unsqueeze(1))
    loss = nll.mean()
    loss.backward()
    optimizer.step()
    return loss.item()
""",
        hints=("gather(-1",),
    ),
    Blind(
        name="train_step_loss_passed_to_step",
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause="The loss tensor is passed to optimizer.step(loss), whose only argument is a closure (a function it calls to recompute the loss), so step() tries to call the tensor and raises: call optimizer.step() with no argument after loss.backward().",
        source=_PRE
        + """
def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    loss.backward()
    optimizer.step(loss)
    return loss.item()
""",
        hints=("only argument is an optional closure",),
    ),
    # ---------------------------------------------------------------- block_forward
    Blind(
        name="block_forward_einsum_additive_mask",
        exercise_id="primer_block_forward",
        half="held2",
        correct=True,
        source=_PRE
        + """
def block_forward(block, x):
    batch, seq, width = x.shape
    heads = block.attn.config.n_heads
    hd = width // heads

    def norm(ln, t):
        return F.layer_norm(t, (width,), ln.weight, ln.bias, ln.eps)

    qkv = block.attn.qkv(norm(block.ln1, x)).view(batch, seq, 3, heads, hd)
    q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)          # each (batch, heads, seq, hd)
    scores = torch.einsum("bhid,bhjd->bhij", q, k) * hd ** -0.5
    bias = torch.full((seq, seq), float("-inf")).triu(1)    # 0 on and below the diagonal
    weights = torch.softmax(scores + bias, dim=-1)
    out = torch.einsum("bhij,bhjd->bihd", weights, v).reshape(batch, seq, width)
    x = x + block.attn.proj(out)
    hidden = F.gelu(block.mlp.fc1(norm(block.ln2, x)))
    return x + block.mlp.fc2(hidden)
""",
    ),
    Blind(
        name="block_forward_sdpa_chunk_helpers",
        exercise_id="primer_block_forward",
        half="held2",
        correct=True,
        source=_PRE
        + """
def split_heads(t, n_heads):
    b, s, h = t.shape
    return t.reshape(b, s, n_heads, h // n_heads).permute(0, 2, 1, 3)


def merge_heads(t):
    b, n_heads, s, d = t.shape
    return t.permute(0, 2, 1, 3).contiguous().view(b, s, n_heads * d)


def block_forward(block, x):
    attn, mlp = block.attn, block.mlp
    n = attn.config.n_heads
    q, k, v = (split_heads(t, n) for t in attn.qkv(block.ln1(x)).chunk(3, dim=-1))
    heads = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    h1 = x + attn.proj(merge_heads(heads))
    return h1 + mlp.fc2(F.gelu(mlp.fc1(block.ln2(h1))))
""",
    ),
    Blind(
        name="block_forward_masked_fill_result_dropped",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause="scores.masked_fill(...) is out-of-place and its result is thrown away (not assigned, and not masked_fill_), so the scores are never masked: every position attends to later tokens (right only for one token).",
        source=_PRE
        + """
def block_forward(block, x):
    b, s, h = x.shape
    n_heads = block.attn.config.n_heads
    d_head = h // n_heads
    q, k, v = block.attn.qkv(block.ln1(x)).split(h, dim=-1)
    q, k, v = (t.view(b, s, n_heads, d_head).transpose(1, 2) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_head)
    future = torch.ones(s, s, dtype=torch.bool).triu(1)
    scores.masked_fill(future, float("-inf"))
    probs = scores.softmax(dim=-1)
    y = (probs @ v).transpose(1, 2).reshape(b, s, h)
    x = x + block.attn.proj(y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
        hints=("throws the result away", "masked_fill_"),
    ),
    Blind(
        name="block_forward_rms_instead_of_layernorm",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause="The hand-written LayerNorm divides by the root mean square of the features without subtracting their mean first (an RMSNorm, as in Llama), while nn.LayerNorm centres each token's features: (x - mean) / sqrt(var + eps).",
        source=_PRE
        + """
def layer_norm(ln, x):
    # normalise each token's features, then scale and shift
    rms = torch.sqrt(x.pow(2).mean(dim=-1, keepdim=True) + ln.eps)
    return ln.weight * (x / rms) + ln.bias


def block_forward(block, x):
    b, s, h = x.shape
    n_heads = block.attn.config.n_heads
    d_head = h // n_heads
    q, k, v = block.attn.qkv(layer_norm(block.ln1, x)).split(h, dim=-1)
    q, k, v = (t.view(b, s, n_heads, d_head).transpose(1, 2) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_head)
    future = torch.ones(s, s, dtype=torch.bool).triu(1)
    probs = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
    y = (probs @ v).transpose(1, 2).reshape(b, s, h)
    x = x + block.attn.proj(y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(layer_norm(block.ln2, x))))
""",
        hints=("RMSNorm",),
    ),
    Blind(
        name="block_forward_bmm_on_4d",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause="torch.bmm only multiplies 3-d batches (batch, n, m), and q, k, v here are 4-d (batch, heads, seq, d_head), so it raises: use @ / torch.matmul (which broadcasts over batch and heads) or fold batch and heads into one axis first.",
        source=_PRE
        + """
def block_forward(block, x):
    b, s, h = x.shape
    n_heads = block.attn.config.n_heads
    d_head = h // n_heads
    q, k, v = block.attn.qkv(block.ln1(x)).split(h, dim=-1)
    q, k, v = (t.view(b, s, n_heads, d_head).transpose(1, 2) for t in (q, k, v))
    scores = torch.bmm(q, k.transpose(-2, -1)) / math.sqrt(d_head)
    future = torch.ones(s, s, dtype=torch.bool).triu(1)
    probs = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
    y = torch.bmm(probs, v).transpose(1, 2).reshape(b, s, h)
    x = x + block.attn.proj(y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
        hints=("torch.bmm", "torch.matmul"),
    ),
    Blind(
        name="block_forward_inplace_residual",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause="The attention residual is added in place (x += ...), which overwrites the caller's input tensor and the input that ln1 saved for its backward pass, so backward() raises (a variable needed for gradient computation was modified in place), and the caller's x is changed (if x itself requires grad, the in-place add raises at once): write x = x + ....",
        source=_PRE
        + """
def block_forward(block, x):
    b, s, h = x.shape
    n_heads = block.attn.config.n_heads
    d_head = h // n_heads
    q, k, v = block.attn.qkv(block.ln1(x)).split(h, dim=-1)
    q, k, v = (t.view(b, s, n_heads, d_head).transpose(1, 2) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_head)
    future = torch.ones(s, s, dtype=torch.bool).triu(1)
    probs = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
    y = (probs @ v).transpose(1, 2).reshape(b, s, h)
    x += block.attn.proj(y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
        hints=("x = x +",),
    ),
    # ---------------------------------------------------------------- accumulate_step
    Blind(
        name="accumulate_step_weighted_backward_gradient",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=True,
        source=_PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    counts = [int(targets.ge(0).sum()) for _, targets in micro_batches]  # padding is -100
    n_real = sum(counts)
    result = 0.0
    for (tokens, targets), n in zip(micro_batches, counts):
        _, mean_loss = model(tokens, targets)   # mean over this micro-batch's real tokens
        weight = n / n_real
        mean_loss.backward(gradient=torch.tensor(weight))  # d(weight * mean_loss)
        result += weight * mean_loss.item()
    optimizer.step()
    return result
""",
    ),
    Blind(
        name="accumulate_step_masked_none_reduction",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=True,
        source=_PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    for p in model.parameters():
        p.grad = None
    masks = [(t != -100).flatten().float() for _, t in micro_batches]
    denominator = torch.stack([m.sum() for m in masks]).sum()
    running = torch.zeros(())
    for (tokens, targets), mask in zip(micro_batches, masks):
        logits, _ = model(tokens)
        per_token = F.cross_entropy(
            logits.flatten(0, 1), targets.flatten().clamp(min=0), reduction="none"
        )
        share = (per_token * mask).sum() / denominator
        share.backward()
        running += share.detach()
    optimizer.step()
    return running.item()
""",
    ),
    Blind(
        name="accumulate_step_mask_not_flattened",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=False,
        cause="The per-token losses are flattened to (16,) but the real-token mask is left (2, 8), so indexing the losses with the mask raises a shape mismatch: flatten the mask like the targets.",
        source=_PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    n_tokens = sum(int((targets != -100).sum()) for _, targets in micro_batches)
    total = 0.0
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        per_token = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="none")
        real = targets != -100
        loss = per_token[real].sum() / n_tokens
        loss.backward()
        total += loss.item()
    optimizer.step()
    return total
""",
        hints=("boolean mask", "own shape"),
    ),
    Blind(
        name="accumulate_step_torch_sum_of_list",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=False,
        cause="torch.sum is given a Python list of 0-d tensors, but it only accepts a tensor, so counting the real tokens raises a TypeError: use Python's sum(...) or torch.stack(...).sum().",
        source=_PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    n_tokens = torch.sum([(targets != -100).sum() for _, targets in micro_batches])
    total = 0.0
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum") / n_tokens
        loss.backward()
        total += loss.item()
    optimizer.step()
    return total
""",
        hints=("torch.stack",),
    ),
    Blind(
        name="accumulate_step_count_from_leftover_loop_variable",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=False,
        cause="The real tokens are counted after the loop from the loop variable targets, which still holds only the last micro-batch, so the summed gradients and loss are divided by that micro-batch's real tokens instead of the whole batch's (too large).",
        source=_PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    summed = 0.0
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum")
        loss.backward()
        summed += loss.item()
    n_real = int((targets != -100).sum())
    for p in model.parameters():
        p.grad /= n_real
    optimizer.step()
    return summed / n_real
""",
        hints=("one micro-batch",),
    ),
    Blind(
        name="accumulate_step_model_loss_without_targets",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=False,
        cause="The loss is taken from model(tokens) called without the targets, which returns (logits, None), so the loss is None and weighting or back-propagating it raises: pass the targets, model(tokens, targets), or compute F.cross_entropy from the logits.",
        source=_PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    counts = [int((targets != -100).sum()) for _, targets in micro_batches]
    n_total = sum(counts)
    total = 0.0
    for (tokens, targets), n in zip(micro_batches, counts):
        _, loss = model(tokens)        # the model's mean loss over real tokens
        share = loss * (n / n_total)
        share.backward()
        total += share.item()
    optimizer.step()
    return total
""",
        hints=("without `targets`",),
    ),
]
