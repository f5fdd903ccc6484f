"""Blind held-out round lab08b_r12 (held2), written 2026-11-29 ~14:59-15:05 UTC (date -u) by a
helper session that never opened the checker (gpu_utils/exercises/), tests/test_*,
tests/heldout/report.py, any FAQ, any causes list or any other tests/heldout file beyond the
format sample below.

Read: labs/08b_pytorch_primer_lab.ipynb and solutions/08b_pytorch_primer_lab.ipynb (exercise
texts and reference answers), gpu_utils/many_gpus/gpt.py (Block, CausalSelfAttention, MLP,
GPT.forward: (logits, None) without targets, (logits, mean cross-entropy with ignore_index -100)
with them; build), tests/heldout/__init__.py, and the docstring and first two entries of
tests/heldout/lab08b_r10.py (format only). The mistakes are the ones I expect most often from a
class doing this lab for the first time, one mistake per answer.

Verification: /tmp/lab08b_r12/verify.py (and xgrad.py), run from tests/ with
GPU_COURSE_MODE=simulator ../.venv/bin/python, torch 2.13.0+cpu; each answer is loaded with
heldout.submitted() and compared with the solution notebook's reference code.
- train_step: gu.gpt.build(seed=0, vocab 32, seq 8, d_model 16, 1 layer, 2 heads) and (vocab 20,
  seq 8, d_model 24, 2 layers, 3 heads), SGD(lr=0.1, momentum=0.9), reference and answer on twin
  models, 4 consecutive calls on batches of 4, 4, 4 and 1 sequences, two data seeds, one target
  set to token 0; returned loss (and its type) and the largest parameter difference after each
  call.
- block_forward: gu.gpt.Block with every parameter 0.5 * randn, (b, s, h, heads) = (2, 8, 16, 2),
  (1, 5, 24, 3), (3, 1, 12, 4), (2, 7, 12, 1), (2, 6, 16, 4), (8, 8, 16, 2); output and every
  parameter's gradient of (out * r).sum(); look-ahead test (last token moved by a random vector,
  earlier outputs compared); for the right answers also x's gradient with an x that requires
  grad, and x left unchanged (xgrad.py).
- accumulate_step: the two models above, 3 calls of 3 micro-batches (2, 8) each, real-token
  counts [16,16,16], [16,5,12], [7,16,10] (first model) and [16,16,16], [1,9,16], [3,3,14]
  (second), padding at the end of each row with target -100, one real target of token 0; loss
  and parameters after each call. Sanity: the reference equals one model(all_tokens,
  all_targets) on [16,5,12] (3.476517 both).
What was seen:
- the 6 right answers agree everywhere (parameters identical to 0 for train/accumulate, block
  values within 5e-6, gradients within 4.2e-5, x's gradient within 1.3e-5, no look-ahead).
  train_step_log_softmax_nll returns float(loss) on a tensor that requires grad: torch 2.13 prints
  a UserWarning ("Converting a tensor with requires_grad=True to a scalar...") but the value is
  exact; a checker that rejects it on that warning is a false rejection.
- train_step_no_zero_grad: call 1 exact; from call 2 the parameters differ (0.02-0.04 growing to
  0.1-0.23) and losses from call 3 on.
- train_step_returns_tensor: every value and parameter exact, but a torch.Tensor (requires grad)
  is returned, not a Python number.
- train_step_shifts_targets_again: loss off from call 1 (3.487 vs 3.480) and parameters off by
  0.02-0.13; batch of 1 too.
- train_step_cross_entropy_not_flattened: RuntimeError "Expected target size [4, 32], got [4, 8]"
  on the first call.
- block_forward_no_causal_mask: values off by 6-12 and look-ahead 1.3-10 for every s > 1; exact
  for s = 1.
- block_forward_scale_by_d_model: values off by 1.2-2.4 with 2-4 heads, no look-ahead; exact with
  1 head (2, 7, 12, 1) and for s = 1.
- block_forward_heads_merged_without_transpose: values off by 11-16 and looks ahead (0.8-1.8)
  with 2-4 heads; exact with 1 head and for s = 1.
- block_forward_parallel_residuals: values off by 5.7-14 on every shape (s = 1 included), no
  look-ahead.
- accumulate_step_mean_of_micro_means: exact on the all-16 calls; padded calls: loss 3.489 vs
  3.470 ([16,5,12]) and parameters off by 0.01-0.15.
- accumulate_step_counts_padding: exact on the all-16 calls; padded calls: loss 2.386 vs 3.470
  ([16,5,12]), 1.633 vs 3.015 ([1,9,16]), parameters off.
- accumulate_step_zero_grad_in_loop: the returned loss is right on the all-16 call, but the
  parameters are off from call 1 (0.016-0.019) since the step sees only the last micro-batch's
  gradient.
- accumulate_step_returns_last_share: parameters exact on every call; returned loss is the last
  micro-batch's share (1.166 vs 3.471 on the all-16 call).
"""

from heldout import Blind

_PRE = """
import math
import torch
import torch.nn.functional as F
"""

ANSWERS = [
    # ---------------------------------------------------------------- primer_train_step
    Blind(
        name="train_step_model_loss_zero_after",
        exercise_id="primer_train_step",
        half="held2",
        correct=True,
        source=_PRE
        + """
def train_step(model, optimizer, tokens, targets):
    # the model computes the mean cross-entropy itself when given the targets
    _, loss = model(tokens, targets)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)  # clean for the next step
    return loss.item()
""",
    ),
    Blind(
        name="train_step_log_softmax_nll",
        exercise_id="primer_train_step",
        half="held2",
        correct=True,
        source=_PRE
        + """
def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    vocab = logits.size(-1)
    log_probs = F.log_softmax(logits.reshape(-1, vocab), dim=-1)
    loss = F.nll_loss(log_probs, targets.reshape(-1))
    loss.backward()
    optimizer.step()
    return float(loss)
""",
    ),
    Blind(
        name="train_step_no_zero_grad",
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause="The gradients are never cleared (no optimizer.zero_grad()), so from the second step on backward() adds this step's gradients to the previous steps' and optimizer.step() uses their running sum.",
        source=_PRE
        + """
def train_step(model, optimizer, tokens, targets):
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    loss.backward()
    optimizer.step()
    return loss.item()
""",
        hints=("accumulated", "zero_grad"),
    ),
    Blind(
        name="train_step_returns_tensor",
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause="It returns the loss tensor itself (still attached to the graph) instead of a Python number with loss.item().",
        source=_PRE
        + """
def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    loss.backward()
    optimizer.step()
    return loss
""",
        hints=("returned a tensor",),
    ),
    Blind(
        name="train_step_shifts_targets_again",
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause="It shifts the targets a second time (logits[:, :-1] against targets[:, 1:]) although the targets are already shifted, so each position is trained to predict the token two ahead and the last position is dropped.",
        source=_PRE
        + """
def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    # next-token prediction: position t predicts position t+1
    pred = logits[:, :-1, :].reshape(-1, logits.shape[-1])
    gold = targets[:, 1:].reshape(-1)
    loss = F.cross_entropy(pred, gold)
    loss.backward()
    optimizer.step()
    return loss.item()
""",
        hints=("shifted again",),
    ),
    Blind(
        name="train_step_cross_entropy_not_flattened",
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause="It passes the 3-D logits (batch, seq, vocab) to F.cross_entropy without flattening them to (batch*seq, vocab), so cross_entropy takes dim 1 (seq) as the classes and raises a shape error against the (batch, seq) targets.",
        source=_PRE
        + """
def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits, targets)
    loss.backward()
    optimizer.step()
    return loss.item()
""",
        hints=("flatten",),
    ),
    # ---------------------------------------------------------------- primer_block_forward
    Blind(
        name="block_forward_sdpa_chunk_permute",
        exercise_id="primer_block_forward",
        half="held2",
        correct=True,
        source=_PRE
        + """
def block_forward(block, x):
    B, T, C = x.shape
    nh = block.attn.config.n_heads
    hd = C // nh

    def heads(t):  # (B, T, C) -> (B, nh, T, hd)
        return t.reshape(B, T, nh, hd).permute(0, 2, 1, 3)

    q, k, v = block.attn.qkv(block.ln1(x)).chunk(3, dim=-1)
    att = F.scaled_dot_product_attention(heads(q), heads(k), heads(v), is_causal=True)
    att = att.permute(0, 2, 1, 3).contiguous().view(B, T, C)
    h1 = x + block.attn.proj(att)
    hidden = F.gelu(block.mlp.fc1(block.ln2(h1)))
    h2 = h1 + block.mlp.fc2(hidden)
    return h2
""",
    ),
    Blind(
        name="block_forward_loop_over_heads_tril",
        exercise_id="primer_block_forward",
        half="held2",
        correct=True,
        source=_PRE
        + """
def block_forward(block, x):
    b, s, d_model = x.shape
    n_heads = block.attn.config.n_heads
    d_head = d_model // n_heads
    qkv = block.attn.qkv(block.ln1(x))
    q = qkv[..., :d_model]
    k = qkv[..., d_model : 2 * d_model]
    v = qkv[..., 2 * d_model :]
    allowed = torch.tril(torch.ones(s, s, dtype=torch.bool, device=x.device))
    outs = []
    for i in range(n_heads):  # one head at a time
        sl = slice(i * d_head, (i + 1) * d_head)
        qi, ki, vi = q[..., sl], k[..., sl], v[..., sl]
        scores = torch.einsum("bqd,bkd->bqk", qi, ki) / d_head**0.5
        scores = torch.where(allowed, scores, torch.full_like(scores, float("-inf")))
        weights = torch.softmax(scores, dim=-1)
        outs.append(torch.einsum("bqk,bkd->bqd", weights, vi))
    attn_out = block.attn.proj(torch.cat(outs, dim=-1))
    x = x + attn_out
    mlp_out = block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
    return x + mlp_out
""",
    ),
    Blind(
        name="block_forward_no_causal_mask",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause="The causal mask is left out: the softmax runs over every key, so each position attends to later tokens (the block looks ahead); it is right only for a sequence of length 1.",
        source=_PRE
        + """
def block_forward(block, x):
    b, s, h = x.shape
    n_heads = block.attn.config.n_heads
    d_head = h // n_heads
    q, k, v = block.attn.qkv(block.ln1(x)).split(h, dim=-1)
    q = q.view(b, s, n_heads, d_head).transpose(1, 2)
    k = k.view(b, s, n_heads, d_head).transpose(1, 2)
    v = v.view(b, s, n_heads, d_head).transpose(1, 2)
    att = (q @ k.transpose(-2, -1)) / math.sqrt(d_head)
    att = F.softmax(att, dim=-1)
    y = (att @ v).transpose(1, 2).reshape(b, s, h)
    x = x + block.attn.proj(y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
        hints=("without the causal mask",),
    ),
    Blind(
        name="block_forward_scale_by_d_model",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause="The scores are divided by sqrt(d_model) instead of sqrt(d_head) = sqrt(d_model // n_heads); it is right only when the block has a single head.",
        source=_PRE
        + """
def block_forward(block, x):
    b, s, h = x.shape
    n_heads = block.attn.config.n_heads
    d_head = h // n_heads
    q, k, v = block.attn.qkv(block.ln1(x)).split(h, dim=-1)
    q, k, v = (t.view(b, s, n_heads, d_head).transpose(1, 2) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(h)
    mask = torch.triu(torch.ones(s, s, dtype=torch.bool), diagonal=1)
    scores = scores.masked_fill(mask, float("-inf"))
    y = scores.softmax(dim=-1) @ v
    y = y.transpose(1, 2).reshape(b, s, h)
    x = x + block.attn.proj(y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
        hints=("sqrt(d_model)",),
    ),
    Blind(
        name="block_forward_heads_merged_without_transpose",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause="The heads' outputs, of shape (batch, heads, seq, d_head), are reshaped straight to (batch, seq, d_model) without first transposing heads and seq back, so values of different positions and heads are mixed (right only with one head).",
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
    y = (probs @ v).reshape(b, s, h)
    x = x + block.attn.proj(y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
        hints=("transpose(1, 2)",),
    ),
    Blind(
        name="block_forward_parallel_residuals",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause="The MLP branch is applied to ln2 of the block's input x instead of ln2 of x after the attention residual (x + attention(ln1(x))), so the two branches run in parallel rather than one after the other.",
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
    attn_out = block.attn.proj(y)
    mlp_out = block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
    return x + attn_out + mlp_out
""",
        hints=("input of `block.ln2`",),
    ),
    # ---------------------------------------------------------------- primer_accumulate_step
    Blind(
        name="accumulate_step_weighted_means",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=True,
        source=_PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    counts = [(targets != -100).sum().item() for _, targets in micro_batches]
    total_tokens = sum(counts)
    optimizer.zero_grad()
    mean_loss = 0.0
    for (tokens, targets), n in zip(micro_batches, counts):
        _, micro_mean = model(tokens, targets)  # mean over this micro-batch's real tokens
        weighted = micro_mean * (n / total_tokens)
        weighted.backward()
        mean_loss += weighted.item()
    optimizer.step()
    return mean_loss
""",
    ),
    Blind(
        name="accumulate_step_sum_then_divide_zero_after",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=True,
        source=_PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    n_real = 0
    for _, tgt in micro_batches:
        n_real += int(tgt.ne(-100).sum())
    loss_sum = 0.0
    for tok, tgt in micro_batches:
        logits, _ = model(tok)
        s = F.cross_entropy(
            logits.view(-1, logits.size(-1)), tgt.view(-1), ignore_index=-100, reduction="sum"
        )
        (s / n_real).backward()
        loss_sum += s.item()
    optimizer.step()
    optimizer.zero_grad()
    return loss_sum / n_real
""",
    ),
    Blind(
        name="accumulate_step_mean_of_micro_means",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=False,
        cause="Each micro-batch's mean loss is divided by the number of micro-batches (every micro-batch weighted equally) instead of by the whole batch's real-token count, which is exact only when every micro-batch holds the same number of real tokens.",
        source=_PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    n = len(micro_batches)
    total = 0.0
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten()) / n
        loss.backward()
        total += loss.item()
    optimizer.step()
    return total
""",
        hints=("mean of the 3 micro-batches' means",),
    ),
    Blind(
        name="accumulate_step_counts_padding",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=False,
        cause="The summed loss is divided by every target position (targets.numel(), padding included) instead of by the number of real (non -100) targets, so with padding the gradients and the loss are too small.",
        source=_PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    n_tokens = sum(targets.numel() for _, targets in micro_batches)
    total = 0.0
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum") / n_tokens
        loss.backward()
        total += loss.item()
    optimizer.step()
    return total
""",
        hints=("padding was counted",),
    ),
    Blind(
        name="accumulate_step_zero_grad_in_loop",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=False,
        cause="optimizer.zero_grad() is called inside the loop, before each micro-batch's backward, so the gradients do not accumulate and optimizer.step() sees only the last micro-batch's share.",
        source=_PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    n_tokens = sum(int((targets != -100).sum()) for _, targets in micro_batches)
    total = 0.0
    for tokens, targets in micro_batches:
        optimizer.zero_grad()
        logits, _ = model(tokens)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum") / n_tokens
        loss.backward()
        total += loss.item()
    optimizer.step()
    return total
""",
        hints=("last micro-batch alone",),
    ),
    Blind(
        name="accumulate_step_returns_last_share",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=False,
        cause="It returns loss.item() of the last micro-batch only (that micro-batch's share of the mean) instead of the whole batch's mean loss, the sum of all the shares; the gradients are right.",
        source=_PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    n_tokens = sum(int((targets != -100).sum()) for _, targets in micro_batches)
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum") / n_tokens
        loss.backward()
    optimizer.step()
    return loss.item()
""",
        hints=("last micro-batch's share",),
    ),
]
