"""Blind held-out round lab08b_r13 (held2), written 2026-11-29 15:05-15:10 UTC (date -u) by a
helper session that never opened gpu_utils/exercises/, tests/test_*.py, tests/heldout/report.py,
any FAQ, any earlier round's list of causes, or any tests/heldout file other than __init__.py and
the docstring + first two entries of lab08b_r10.py (format only).

Read: labs/08b_pytorch_primer_lab.ipynb (the three exercise texts), the solution cells of
solutions/08b_pytorch_primer_lab.ipynb (reference answers), gpu_utils/many_gpus/gpt.py (gu.gpt:
Block, CausalSelfAttention with fused qkv, MLP, GPT.forward returning (logits, None) without
targets and the mean cross-entropy, ignore_index -100, with them).

The mistakes are the ones I would expect most often from a class doing the lab for the first
time: no zero_grad, returning the tensor, a summed loss, re-shifting already shifted targets; no
causal mask, sqrt(d_model) for sqrt(d_head), .view on a transposed tensor, a "parallel" MLP
branch; per-micro-batch weighting, padding counted, zero_grad or step inside the loop, the summed
loss returned.

Verification: /tmp/lab08b_r13/verify.py, run from tests/ with GPU_COURSE_MODE=simulator and the
course's .venv (torch 2.13.0+cpu); each answer loaded with heldout.submitted() and compared with
the solution notebook's reference code (copied into the script). Output in
/tmp/lab08b_r13/out.txt.
- train_step: gu.gpt.build(seed=0) with (vocab 32, seq 8, d_model 16, 1 layer, 2 heads) and
  (vocab 20, seq 8, d_model 24, 2 layers, 3 heads), SGD(lr=0.1, momentum=0.9), two data seeds,
  4 consecutive calls on batches of 4, 4, 4 and 1 sequences (one target set to token 0); compared:
  returned type (float), loss, every parameter after each call (max abs diff).
- block_forward: gu.gpt.Block with every parameter 0.5 * randn, (b, s, h, heads) = (2, 8, 16, 2),
  (1, 5, 24, 3), (3, 1, 12, 4), (2, 7, 12, 1), (2, 6, 16, 4); output and every parameter's
  gradient of (out * r).sum(); look-ahead: the last token moved by a random vector, earlier
  outputs compared.
- accumulate_step: the two models above, SGD(lr=0.1, momentum=0.9), 3 calls of 3 micro-batches
  (2, 8): real tokens (16, 16, 16), then (16, 5, 12), then (7, 16, 10), padded targets -100, one
  real target of token 0; loss and every parameter after each call.
What was seen:
- The 5 right answers agree everywhere (outputs within 5e-6, gradients within 4e-5, parameters and
  losses identical for train_step/accumulate_step; no look-ahead).
- train_step_no_zero_grad: call 1 identical; from call 2 the parameters differ (2.5e-2 .. 2.4e-1)
  and later losses differ (e.g. 3.4868 vs 3.4830).
- train_step_returns_tensor: values and parameters identical, but every return is a torch.Tensor
  (requires_grad) instead of a float.
- train_step_sum_reduction: loss 111.4 vs 3.48 on call 1 (x32 for batches of 4, x8 for the batch
  of 1); parameters off by 0.8 after one call and more later.
- train_step_shifts_targets_again: losses off by 0.003-0.1 and parameters off by 2e-2 .. 1.2e-1
  from call 1, on every batch size.
- block_forward_no_causal_mask: outputs off by 6-12 and looks ahead (0.6-9.6) for every s > 1;
  right for s = 1.
- block_forward_scale_by_d_model: outputs off by 1.2-2.4 when heads > 1; right for 1 head and for
  s = 1; no look-ahead.
- block_forward_view_after_transpose: RuntimeError ("view size is not compatible with input
  tensor's size and stride") whenever s > 1 and heads > 1; right for s = 1 or 1 head.
- block_forward_mlp_on_block_input: outputs off by 5.7-14 on every shape (s = 1 included); no
  look-ahead.
- accumulate_step_mean_per_micro_batch: call 1 (16/16/16 real tokens) identical; the padded calls
  give other losses (3.4548 vs 3.4567) and parameters (8e-3 .. 2e-2).
- accumulate_step_counts_padding: call 1 identical; padded calls loss about 2/3 of the right one
  (2.376 vs 3.457) and parameters off (6e-3 .. 1.7e-2).
- accumulate_step_zero_grad_in_loop: loss of call 1 identical, parameters off from call 1
  (1.5e-2) since only the last micro-batch's gradient reaches the step.
- accumulate_step_step_in_loop: parameters off from call 1 (4e-2), losses differ from call 1 on.
- accumulate_step_returns_summed_loss: parameters identical on every call, returned loss the
  summed one (166.2 vs 3.46 = 48 tokens x the mean).
Nothing behaved other than labelled.
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
        name="train_step_model_loss_zero_after",
        exercise_id="primer_train_step",
        half="held2",
        correct=True,
        source=_PRE
        + """
def train_step(model, optimizer, tokens, targets):
    # the model computes the same mean cross-entropy when given the targets
    _, loss = model(tokens, targets)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)  # clean gradients for the next step
    return float(loss.item())
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
    batch, seq, vocab = logits.shape
    log_probs = F.log_softmax(logits.reshape(batch * seq, vocab), dim=-1)
    loss = F.nll_loss(log_probs, targets.reshape(batch * seq))
    loss.backward()
    optimizer.step()
    step_loss = loss.item()
    return step_loss
""",
    ),
    Blind(
        name="train_step_no_zero_grad",
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause="The gradients are never cleared (no optimizer.zero_grad()), so from the second "
        "call on each backward adds to the previous steps' gradients and the step uses their sum.",
        source=_PRE
        + """
def train_step(model, optimizer, tokens, targets):
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    loss.backward()
    optimizer.step()
    return loss.item()
""",
        hints=("accumulated",),
    ),
    Blind(
        name="train_step_returns_tensor",
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause="It returns the loss tensor itself (still attached to the graph) instead of a "
        "Python number with loss.item().",
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
        name="train_step_sum_reduction",
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause="The loss is the sum of the cross-entropy over the positions (reduction='sum') "
        "instead of its mean, so the loss and the gradients are batch*seq (32, or 8 for the "
        "one-sequence batch) times too large.",
        source=_PRE
        + """
def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    loss = F.cross_entropy(
        logits.view(-1, logits.size(-1)), targets.view(-1), reduction="sum"
    )
    loss.backward()
    optimizer.step()
    return loss.item()
""",
        hints=("The loss was a sum",),
    ),
    Blind(
        name="train_step_shifts_targets_again",
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause="The targets are shifted a second time (logits[:, :-1] against targets[:, 1:]), "
        "although targets[b, t] already follows tokens[b, t]: every position is scored against "
        "the token two ahead and the last position is dropped.",
        source=_PRE
        + """
def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    # predict the next token: drop the last prediction and the first target
    logits = logits[:, :-1, :]
    next_targets = targets[:, 1:]
    loss = F.cross_entropy(logits.flatten(0, 1), next_targets.flatten())
    loss.backward()
    optimizer.step()
    return loss.item()
""",
        hints=("shifted again",),
    ),
    # ---------------------------------------------------------------- block_forward
    Blind(
        name="block_forward_chunk_tril_mask",
        exercise_id="primer_block_forward",
        half="held2",
        correct=True,
        source=_PRE
        + """
def block_forward(block, x):
    batch, seq, d_model = x.shape
    heads = block.attn.config.n_heads
    d_head = d_model // heads

    def split_heads(t):
        return t.reshape(batch, seq, heads, d_head).permute(0, 2, 1, 3)

    normed = block.ln1(x)
    q, k, v = map(split_heads, block.attn.qkv(normed).chunk(3, dim=-1))
    scores = torch.matmul(q, k.transpose(2, 3)) * d_head ** -0.5
    keep = torch.tril(torch.ones(seq, seq, dtype=torch.bool, device=x.device))
    scores = scores.masked_fill(~keep, float("-inf"))
    weights = torch.softmax(scores, dim=-1)
    out = torch.matmul(weights, v).permute(0, 2, 1, 3).reshape(batch, seq, d_model)
    h1 = x + block.attn.proj(out)
    hidden = F.gelu(block.mlp.fc1(block.ln2(h1)))
    return h1 + block.mlp.fc2(hidden)
""",
    ),
    Blind(
        name="block_forward_sdpa_helper",
        exercise_id="primer_block_forward",
        half="held2",
        correct=True,
        source=_PRE
        + """
def attention(block, h):
    b, s, d = h.shape
    n = block.attn.config.n_heads
    q, k, v = block.attn.qkv(h).split(d, dim=2)
    q = q.view(b, s, n, d // n).transpose(1, 2)
    k = k.view(b, s, n, d // n).transpose(1, 2)
    v = v.view(b, s, n, d // n).transpose(1, 2)
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    y = y.transpose(1, 2).contiguous().view(b, s, d)
    return block.attn.proj(y)


def mlp(block, h):
    return block.mlp.fc2(F.gelu(block.mlp.fc1(h)))


def block_forward(block, x):
    x = x + attention(block, block.ln1(x))
    x = x + mlp(block, block.ln2(x))
    return x
""",
    ),
    Blind(
        name="block_forward_no_causal_mask",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause="The causal mask is missing: softmax runs over every key, so each position "
        "attends to later tokens (the block looks ahead).",
        source=_PRE
        + """
def block_forward(block, x):
    b, s, h = x.shape
    n_heads = block.attn.config.n_heads
    d_head = h // n_heads
    q, k, v = block.attn.qkv(block.ln1(x)).split(h, dim=-1)
    q, k, v = (t.view(b, s, n_heads, d_head).transpose(1, 2) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_head)
    probs = scores.softmax(dim=-1)
    y = (probs @ v).transpose(1, 2).reshape(b, s, h)
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
        cause="The attention scores are divided by sqrt(d_model) instead of sqrt(d_head) "
        "(right only when there is a single head).",
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
    probs = scores.masked_fill(mask, float("-inf")).softmax(dim=-1)
    y = (probs @ v).transpose(1, 2).reshape(b, s, h)
    x = x + block.attn.proj(y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
        hints=("sqrt(d_model)",),
    ),
    Blind(
        name="block_forward_view_after_transpose",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause="The heads are merged with .view(b, s, h) on the transposed (non-contiguous) "
        "tensor, which raises a RuntimeError; it needs .reshape or .contiguous() first.",
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
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_head)
    mask = torch.triu(torch.ones(s, s, dtype=torch.bool), diagonal=1)
    probs = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
    y = (probs @ v).transpose(1, 2).view(b, s, h)
    x = x + block.attn.proj(y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
        hints=("reshape",),
    ),
    Blind(
        name="block_forward_mlp_on_block_input",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause="The MLP branch is computed from ln2 of the block's input x instead of ln2 of "
        "x + attention(ln1(x)) (the two branches run in parallel, not one after the other).",
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
    # ---------------------------------------------------------------- accumulate_step
    Blind(
        name="accumulate_step_weight_means_by_real_tokens",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=True,
        source=_PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    counts = [(targets != -100).sum().item() for _, targets in micro_batches]
    total_tokens = sum(counts)
    mean_loss = 0.0
    for (tokens, targets), count in zip(micro_batches, counts):
        _, micro_mean = model(tokens, targets)  # mean over this micro-batch's real tokens
        share = micro_mean * (count / total_tokens)
        share.backward()
        mean_loss += share.item()
    optimizer.step()
    return mean_loss
""",
    ),
    Blind(
        name="accumulate_step_mean_per_micro_batch",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=False,
        cause="Each micro-batch's mean loss is divided by the number of micro-batches, which "
        "weights every micro-batch equally instead of by its number of real tokens (right only "
        "when all micro-batches hold the same number of real tokens).",
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
        hints=("means",),
    ),
    Blind(
        name="accumulate_step_counts_padding",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=False,
        cause="The summed loss is divided by every position (targets.numel(), padding "
        "included) instead of by the number of real tokens (targets != -100), so the loss and "
        "gradients are too small whenever there is padding.",
        source=_PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    n_tokens = sum(targets.numel() for _, targets in micro_batches)
    total = 0.0
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        summed = F.cross_entropy(
            logits.flatten(0, 1), targets.flatten(), ignore_index=-100, reduction="sum"
        )
        loss = summed / n_tokens
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
        cause="optimizer.zero_grad() is called inside the loop, before each micro-batch's "
        "backward, so the step sees only the last micro-batch's gradient instead of the sum "
        "over all of them.",
        source=_PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    n_tokens = sum(int((targets != -100).sum()) for _, targets in micro_batches)
    total = 0.0
    for tokens, targets in micro_batches:
        optimizer.zero_grad()
        logits, _ = model(tokens)
        summed = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum")
        loss = summed / n_tokens
        loss.backward()
        total += loss.item()
    optimizer.step()
    return total
""",
        hints=("last micro-batch alone",),
    ),
    Blind(
        name="accumulate_step_step_in_loop",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=False,
        cause="optimizer.step() is called inside the loop, once per micro-batch, instead of "
        "once after all the micro-batches' backward passes.",
        source=_PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    n_tokens = sum(int((targets != -100).sum()) for _, targets in micro_batches)
    total = 0.0
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        summed = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum")
        loss = summed / n_tokens
        loss.backward()
        optimizer.step()
        total += loss.item()
    return total
""",
        hints=("ran 3 times",),
    ),
    Blind(
        name="accumulate_step_returns_summed_loss",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=False,
        cause="The gradients are right, but the returned loss is the sum of the cross-entropy "
        "over all real tokens instead of its mean (it is never divided by the token count).",
        source=_PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    n_tokens = sum(int((targets != -100).sum()) for _, targets in micro_batches)
    total = 0.0
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        summed = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum")
        (summed / n_tokens).backward()
        total += summed.item()
    optimizer.step()
    return total
""",
        hints=("not divided by N",),
    ),
]
