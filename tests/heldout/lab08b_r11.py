"""Blind held-out round lab08b_r11 (held2), written 2026-11-29 ~12:08-12:14 UTC (date -u) by a helper
session that never opened the checker, tests/test_*, tests/heldout/report.py, any FAQ or
gpu_utils/exercises/.

Read: labs/ and solutions/08b_pytorch_primer_lab.ipynb (exercise texts and reference answers),
gpu_utils/many_gpus/gpt.py (gu.gpt: Block, CausalSelfAttention, MLP, GPT.forward, which returns
(logits, None) without targets and the mean cross-entropy, ignore_index -100, with them),
tests/heldout/__init__.py, the docstring and first entries of tests/heldout/lab08b_r10.py (format;
the start of its third entry showed too, a cause already in the causes file) and
/tmp/blind/causes_lab08b.txt (all earlier causes, avoided: each mistake here is of a kind not
listed there). r10's scratch harness /tmp/lab08b_r10/verify.py (reference code copied from the
solution notebook) was reused unchanged except for the module it loads.

Verification: /tmp/lab08b_r11/verify.py, run from tests/ with GPU_COURSE_MODE=simulator (CPU);
each answer is loaded with heldout.submitted() and compared with the solution's reference code.
- train_step: gu.gpt.build(seed=0, vocab 32, seq 8, d_model 16, 1 layer, 2 heads) and (vocab 20,
  seq 6, d_model 24, 2 layers, 3 heads), SGD(lr=0.1, momentum=0.9), 4 consecutive calls on batches
  of 4, 4, 4 and 1 sequences (two data seeds, one target set to token 0); the returned loss (must
  be a float) and every parameter after each call, atol 1e-5.
- block_forward: gu.gpt.Block with every parameter random (0.5 * randn), (b, s, h, heads, seq_len)
  = (2, 8, 16, 2, 8), (1, 5, 24, 3, 8), (3, 1, 12, 4, 4), (2, 7, 12, 1, 7), (2, 6, 16, 4, 6),
  (8, 8, 16, 2, 8); output and every parameter's gradient of (out * r).sum(), atol 1e-4; look-ahead
  test (last token moved by a random vector, earlier outputs compared).
- accumulate_step: the two models above, 3 calls of 3 micro-batches (2, seq): call 1 unpadded,
  calls 2 and 3 padded with -100 targets (16/5/12 and 7/16/10 real tokens for the first model,
  other counts for the second), one real target of token 0; loss and every parameter after each
  call, atol 1e-5.
What was seen: the 6 right answers agree everywhere. Wrong ones:
- train_step_model_output_not_unpacked: AttributeError ('tuple' object has no attribute
  'flatten') on every call.
- train_step_reduction_none_not_averaged: RuntimeError (grad can be implicitly created only for
  scalar outputs) on every call.
- train_step_entropy_instead_of_cross_entropy: call 1 loss 3.462 vs 3.482, parameters off by
  2.5e-2 and growing; every call differs.
- train_step_log_softmax_missing_log: call 1 loss 32.5 vs 3.48, parameters off by ~1.
- block_forward_scale_by_key_count: right on (2, 8, 16, 2) and (8, 8, 16, 2) (seq 8 == d_head 8)
  and on the one-token input; outputs off by 0.3-0.7 on (1, 5, 24, 3), (2, 7, 12, 1),
  (2, 6, 16, 4).
- block_forward_heads_never_split: right with 1 head (2, 7, 12, 1) and with one token; outputs off
  by 4-8 for every shape with 2-4 heads.
- block_forward_mlp_layers_swapped: RuntimeError (mat1 and mat2 shapes cannot be multiplied) on
  every shape; with the two MLP layers put back in order (/tmp/lab08b_r11/extra.py) the answer
  agrees everywhere, so the swap is its only mistake.
- block_forward_mlp_sublayer_missing: outputs off by 4.6-15 on every shape.
- accumulate_step_count_index_shifted: right on call 1 (every micro-batch 16 real tokens); loss
  and parameters off on the padded calls (call 2 loss 3.4580 vs 3.4559).
- accumulate_step_counts_distinct_token_ids: call 1 loss 7.22 vs 3.46 (the divisor, distinct ids
  among the 48 real targets, is about half their number), every call off.
- accumulate_step_padding_dropped_from_inputs: ValueError (not enough values to unpack, the model
  gets a 1-d tensor) on the first call.
Dropped: an answer passing both attn_mask and is_causal=True to F.scaled_dot_product_attention was
meant to raise, but this torch (CPU) accepts the pair and gives the right output, so it was
replaced by block_forward_mlp_layers_swapped.
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
        name="train_step_kl_div_batchmean_zero_grad_after_forward",
        exercise_id="primer_train_step",
        half="held2",
        correct=True,
        source=_PRE
        + """
def train_step(model, optimizer, tokens, targets):
    logits, _ = model(tokens)
    optimizer.zero_grad()  # still before backward: this step starts from clean gradients
    vocab = logits.size(-1)
    logp = F.log_softmax(logits.reshape(-1, vocab), dim=-1)
    one_hot = F.one_hot(targets.reshape(-1), num_classes=vocab).to(logp.dtype)
    # KL(one-hot || p) = -log p[target] (a one-hot has no entropy); batchmean: / positions
    loss = F.kl_div(logp, one_hot, reduction="batchmean")
    loss.backward()
    optimizer.step()
    return loss.item()
""",
    ),
    Blind(
        name="train_step_per_sequence_losses_clear_after",
        exercise_id="primer_train_step",
        half="held2",
        correct=True,
        source=_PRE
        + """
def train_step(model, optimizer, tokens, targets):
    logits, _ = model(tokens)
    # every sequence has the same length, so the mean of the per-sequence means
    # is the mean over every position
    per_seq = [F.cross_entropy(lg, tg) for lg, tg in zip(logits, targets)]
    loss = torch.stack(per_seq).mean()
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)  # clean for the next step
    return float(loss)
""",
    ),
    Blind(
        name="train_step_model_output_not_unpacked",
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause="model(tokens) returns a pair (logits, loss) and it is assigned whole to logits without unpacking, so logits.flatten raises (a tuple has no flatten): write logits, _ = model(tokens).",
        source=_PRE
        + """
def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits = model(tokens)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    loss.backward()
    optimizer.step()
    return loss.item()
""",
        hints=("logits, _ = model(...)",),
    ),
    Blind(
        name="train_step_reduction_none_not_averaged",
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause="The cross-entropy is taken with reduction='none' and never averaged, so loss is a vector of per-position losses and backward() raises (grad can be implicitly created only for scalar outputs): take its .mean() (or keep the default reduction).",
        source=_PRE
        + """
def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="none")
    loss.backward()
    optimizer.step()
    return loss.mean().item()
""",
        hints=("reduction='none'",),
    ),
    Blind(
        name="train_step_entropy_instead_of_cross_entropy",
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause="The loss is the entropy of the model's own predicted distribution, -sum p log p over the vocabulary, which never uses the targets, instead of the cross-entropy -log p[target] of each position's target.",
        source=_PRE
        + """
def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    logp = F.log_softmax(logits, dim=-1)
    loss = -(logp.exp() * logp).sum(dim=-1).mean()  # cross-entropy, averaged over positions
    loss.backward()
    optimizer.step()
    return loss.item()
""",
        hints=("never reads the targets",),
    ),
    Blind(
        name="train_step_log_softmax_missing_log",
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause="The hand-written log-softmax subtracts the sum of exp(logits) instead of its logarithm (logits - logsumexp(logits)), so the log-probabilities, the loss and its gradients are wrong.",
        source=_PRE
        + """
def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    logp = logits - logits.exp().sum(dim=-1, keepdim=True)  # log-softmax
    picked = logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    loss = -picked.mean()
    loss.backward()
    optimizer.step()
    return loss.item()
""",
        hints=("logsumexp",),
    ),
    # ---------------------------------------------------------------- block_forward
    Blind(
        name="block_forward_unbind_einsum_tril_keep",
        exercise_id="primer_block_forward",
        half="held2",
        correct=True,
        source=_PRE
        + """
def block_forward(block, x):
    B, T, C = x.shape
    H = block.attn.config.n_heads
    D = C // H
    # q | k | v are three contiguous blocks of C features, each cut into H heads of D
    q, k, v = block.attn.qkv(block.ln1(x)).view(B, T, 3, H, D).unbind(dim=2)
    att = torch.einsum("bqhd,bkhd->bhqk", q, k) * D ** -0.5
    keep = torch.tril(torch.ones(T, T, dtype=torch.bool))  # key j <= query i
    att = torch.softmax(att.masked_fill(~keep, float("-inf")), dim=-1)
    out = torch.einsum("bhqk,bkhd->bqhd", att, v).reshape(B, T, C)
    x = x + block.attn.proj(out)
    hidden = F.gelu(block.mlp.fc1(block.ln2(x)))
    return x + block.mlp.fc2(hidden)
""",
    ),
    Blind(
        name="block_forward_loop_over_head_slices",
        exercise_id="primer_block_forward",
        half="held2",
        correct=True,
        source=_PRE
        + """
def block_forward(block, x):
    b, s, h = x.shape
    heads = block.attn.config.n_heads
    dh = h // heads
    qkv = block.attn.qkv(block.ln1(x))
    q, k, v = qkv[..., :h], qkv[..., h : 2 * h], qkv[..., 2 * h :]
    future = torch.full((s, s), float("-inf")).triu(1)  # 0 on and below the diagonal
    outs = []
    for i in range(heads):
        cols = slice(i * dh, (i + 1) * dh)
        scores = q[..., cols] @ k[..., cols].transpose(1, 2) / math.sqrt(dh) + future
        outs.append(scores.softmax(dim=-1) @ v[..., cols])
    x = x + block.attn.proj(torch.cat(outs, dim=-1))
    mlp = block.mlp
    return x + mlp.fc2(F.gelu(mlp.fc1(block.ln2(x))))
""",
    ),
    Blind(
        name="block_forward_scale_by_key_count",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause="The scores are divided by sqrt(k.size(-2)), the number of keys (the sequence length), instead of sqrt(k.size(-1)) = sqrt(d_head), so the scale is wrong whenever the sequence length differs from d_head (right only when seq == d_head, as in the lab's 8-token example with d_head 8).",
        source=_PRE
        + """
def block_forward(block, x):
    b, s, h = x.shape
    n_heads = block.attn.config.n_heads
    d_head = h // n_heads
    q, k, v = block.attn.qkv(block.ln1(x)).split(h, dim=-1)
    q, k, v = (t.view(b, s, n_heads, d_head).transpose(1, 2) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(k.size(-2))
    future = torch.ones(s, s, dtype=torch.bool).triu(1)
    probs = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
    y = (probs @ v).transpose(1, 2).reshape(b, s, h)
    x = x + block.attn.proj(y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
    ),
    Blind(
        name="block_forward_heads_never_split",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause="q, k and v are never split into heads: the attention runs as one head over all d_model features (one softmax per token instead of one per head), so it is right only when n_heads is 1.",
        source=_PRE
        + """
def block_forward(block, x):
    b, s, h = x.shape
    d_head = h // block.attn.config.n_heads
    q, k, v = block.attn.qkv(block.ln1(x)).split(h, dim=-1)  # (b, s, h) each
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_head)  # (b, s, s)
    future = torch.ones(s, s, dtype=torch.bool).triu(1)
    probs = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
    x = x + block.attn.proj(probs @ v)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
        hints=("never split into heads",),
    ),
    Blind(
        name="block_forward_mlp_layers_swapped",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause="The MLP applies fc2 first and fc1 second, fc1(gelu(fc2(ln2(x)))), but fc2 maps 4h to h and expects 4h inputs, so it raises (shape mismatch): the MLP is fc2(gelu(fc1(ln2(x)))), h to 4h then back to h.",
        source=_PRE
        + """
def block_forward(block, x):
    b, s, h = x.shape
    nh = block.attn.config.n_heads
    q, k, v = block.attn.qkv(block.ln1(x)).chunk(3, dim=-1)
    q, k, v = (t.reshape(b, s, nh, h // nh).transpose(1, 2) for t in (q, k, v))
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    x = x + block.attn.proj(y.transpose(1, 2).reshape(b, s, h))
    return x + block.mlp.fc1(F.gelu(block.mlp.fc2(block.ln2(x))))
""",
        hints=("has 16 features, not 64",),
    ),
    Blind(
        name="block_forward_mlp_sublayer_missing",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause="It returns right after the attention residual: the second sub-layer, x + fc2(gelu(fc1(ln2(x)))), is never applied (ln2, fc1 and fc2 get no gradient).",
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
    return x + block.attn.proj(y)
""",
    ),
    # ---------------------------------------------------------------- accumulate_step
    Blind(
        name="accumulate_step_sum_losses_then_divide_grads",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=True,
        source=_PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad(set_to_none=True)
    n_real = 0
    loss_sum = 0.0
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        summed = F.cross_entropy(
            logits.flatten(0, 1), targets.flatten(), ignore_index=-100, reduction="sum"
        )
        summed.backward()
        loss_sum += summed.item()
        n_real += int(torch.count_nonzero(targets + 100))  # -100 -> 0, real ids -> > 0
    # the .grad now hold the batch's summed gradients: one division makes them its mean
    with torch.no_grad():
        for p in model.parameters():  # each shared parameter listed once
            if p.grad is not None:
                p.grad.div_(n_real)
    optimizer.step()
    return loss_sum / n_real
""",
    ),
    Blind(
        name="accumulate_step_model_loss_weighted_by_share",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=True,
        source=_PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    counts = [(t != -100).sum().item() for _, t in micro_batches]
    total_real = sum(counts)
    optimizer.zero_grad()
    mean_loss = 0.0
    for (tokens, targets), n in zip(micro_batches, counts):
        _, mb_loss = model(tokens, targets)  # mean over this micro-batch's real tokens
        share = mb_loss * (n / total_real)
        share.backward()
        mean_loss += share.item()
    optimizer.step()
    return mean_loss
""",
    ),
    Blind(
        name="accumulate_step_count_index_shifted",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=False,
        cause="Micro-batch i's mean loss is weighted with counts[i - 1], the previous micro-batch's real-token count (the first one takes the last one's), so each weight n/N belongs to another micro-batch: right only when every micro-batch holds as many real tokens.",
        source=_PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    counts = [int((t != -100).sum()) for _, t in micro_batches]
    n_total = sum(counts)
    optimizer.zero_grad()
    total = 0.0
    for i, (tokens, targets) in enumerate(micro_batches):
        _, loss = model(tokens, targets)
        share = loss * counts[i - 1] / n_total
        share.backward()
        total += share.item()
    optimizer.step()
    return total
""",
    ),
    Blind(
        name="accumulate_step_counts_distinct_token_ids",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=False,
        cause="The denominator counts the distinct token ids among the real targets (unique().numel()) instead of the real target positions, so a token that appears several times is counted once: the divisor is too small and the gradients and loss too large.",
        source=_PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    all_targets = torch.cat([t.flatten() for _, t in micro_batches])
    n_tokens = all_targets[all_targets != -100].unique().numel()
    optimizer.zero_grad()
    total = 0.0
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum") / n_tokens
        loss.backward()
        total += loss.item()
    optimizer.step()
    return total
""",
    ),
    Blind(
        name="accumulate_step_padding_dropped_from_inputs",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=False,
        cause="It drops the padded positions from the inputs with tokens[targets != -100], which flattens them into one 1-d run of tokens, but the model needs (batch, seq) sequences, so the forward raises: keep the padded sequences whole and let ignore_index=-100 leave their targets out.",
        source=_PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    n_real = sum(int((t != -100).sum()) for _, t in micro_batches)
    optimizer.zero_grad()
    total = 0.0
    for tokens, targets in micro_batches:
        real = targets != -100
        logits, _ = model(tokens[real])  # only the real tokens
        summed = F.cross_entropy(logits.flatten(0, 1), targets[real].flatten(), reduction="sum")
        loss = summed / n_real
        loss.backward()
        total += loss.item()
    optimizer.step()
    return total
""",
        hints=("flat 1-d tensor",),
    ),
]
