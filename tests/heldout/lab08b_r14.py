"""Blind held-out round lab08b_r14 (held2), written 2026-11-29 ~15:22-15:24 UTC (date -u) by a helper
session that never opened the checker, tests/test_*, tests/heldout/report.py, any FAQ or
gpu_utils/exercises/, and read no list of earlier rounds' causes.

Read: solutions/08b_pytorch_primer_lab.ipynb and labs/08b_pytorch_primer_lab.ipynb (exercise
texts and reference answers), gpu_utils/many_gpus/gpt.py (gu.gpt: Block, CausalSelfAttention,
MLP, GPT.forward), tests/heldout/__init__.py, the docstring and first two entries of
tests/heldout/lab08b_r10.py (format only).

The wrong answers are the mistakes I would expect most often from a class doing this lab the
first time (forgotten zero_grad, cross_entropy on unflattened logits, returning the tensor,
shifting targets that are already shifted; no causal mask, sqrt(d_model) scale, heads merged
without transposing back, a mask that also hides the diagonal; per-micro-batch weighting, padding
counted, no division at all, zero_grad inside the accumulation loop), one mistake each.

Verification: /tmp/lab08b_r14/verify.py (output in /tmp/lab08b_r14/out.txt), run from tests/ with
GPU_COURSE_MODE=simulator and torch 2.13.0+cpu; each answer is loaded with heldout.submitted() and
compared with the solution notebook's reference code (copied into the script).
- train_step: gu.gpt.build(seed=0) with (vocab 32, seq 8, d_model 16, 1 layer, 2 heads) and
  (vocab 20, seq 8, d_model 24, 2 layers, 3 heads), SGD(lr=0.1, momentum=0.9), two data seeds,
  4 consecutive calls on batches of 4, 4, 4 and 1 sequences (one target set to token 0); the
  returned loss (and whether it is a Python float) and every parameter after each call.
- block_forward: gu.gpt.Block with every parameter 0.5 * randn, (b, s, h, heads) = (2, 8, 16, 2),
  (1, 5, 24, 3), (3, 1, 12, 4), (2, 7, 12, 1), (2, 6, 16, 4), (8, 8, 16, 2); output and every
  parameter's gradient of (out * r).sum() against a deep copy run through the reference; look-ahead
  test: the last token moved by a random vector, earlier outputs compared.
- accumulate_step: the two models above, 3 calls of 3 micro-batches (2, 8) with 16/16/16,
  16/5/12 and 7/16/1 real tokens (rest -100; one real target set to token 0); loss and every
  parameter after each call. The reference itself was checked against one model(all_tokens,
  all_targets) on 16/5/12 (3.468907 vs 3.468907).
What was seen: the 6 right answers agree everywhere (loss differences 0, parameters within 2e-8,
block values within 6e-6 and gradients within 5e-5, no look-ahead). Wrong ones:
- train_step_never_clears_grads: call 1 exact, later calls' losses off by up to 0.09 and
  parameters by up to 0.23.
- train_step_cross_entropy_on_3d_logits: RuntimeError (Expected target size [4, 32], got [4, 8])
  on the first call.
- train_step_returns_loss_tensor: values and parameters exact, but the return value is a tensor,
  not a Python number.
- train_step_shifts_targets_again: loss off from call 1 (7e-3, up to 0.04 later), parameters off
  (2e-2 to 0.13).
- block_forward_no_causal_mask: outputs off by 3-18 and looks ahead (1.1-3.5) for every s > 1;
  right for s = 1.
- block_forward_scale_by_sqrt_d_model: outputs off by 0.6-3 with 2-4 heads; exact with 1 head
  (2, 7, 12, 1) and for s = 1; no look-ahead.
- block_forward_merge_heads_without_transpose: outputs off by 14-30 (and outputs move when the
  last token changes) with several heads and s > 1; exact with 1 head or s = 1.
- block_forward_mask_hides_diagonal: NaN outputs and gradients on every shape (s = 1 included).
- accumulate_step_divide_by_number_of_micro_batches: exact on 16/16/16; loss and parameters off
  on 16/5/12 (3.4401 vs 3.4532) and 7/16/1.
- accumulate_step_counts_padding: exact on 16/16/16; on 16/5/12 loss 2.374 vs 3.453 (x 33/48),
  parameters off.
- accumulate_step_means_not_rescaled: loss about 3x (10.37 vs 3.46) and parameters off on every
  call.
- accumulate_step_zero_grad_inside_loop: returned loss right on 16/16/16 but parameters off
  (1.6e-2) on every call; loss also off once the parameters have diverged.
"""

from heldout import Blind

ANSWERS = [
    # ------------------------------------------------------------------ primer_train_step
    Blind(
        name="train_step_model_computes_loss_zero_after",
        exercise_id="primer_train_step",
        half="held2",
        correct=True,
        source="""
import torch
import torch.nn.functional as F


def train_step(model, optimizer, tokens, targets):
    # the model's second output is the same mean cross-entropy
    _, loss = model(tokens, targets)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()  # clean gradients for the next step
    value = loss.item()
    return value
""",
    ),
    Blind(
        name="train_step_nll_of_log_softmax",
        exercise_id="primer_train_step",
        half="held2",
        correct=True,
        source="""
import torch
import torch.nn.functional as F


def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad(set_to_none=False)
    logits, _ = model(tokens)
    vocab = logits.size(-1)
    log_probs = F.log_softmax(logits, dim=-1).reshape(-1, vocab)
    loss = F.nll_loss(log_probs, targets.reshape(-1))
    loss.backward()
    optimizer.step()
    return float(loss)
""",
    ),
    Blind(
        name="train_step_never_clears_grads",
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause="The gradients are never cleared (no optimizer.zero_grad()), so from the second step on "
        "backward() adds this step's gradients to the previous steps' and optimizer.step() uses their sum.",
        source="""
import torch
import torch.nn.functional as F


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
        name="train_step_cross_entropy_on_3d_logits",
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause="F.cross_entropy is given the (batch, seq, vocab) logits and (batch, seq) targets "
        "unflattened, so it takes dim 1 (seq) as the classes and raises a target-size error; the "
        "logits must be flattened to (batch*seq, vocab) and the targets to (batch*seq,).",
        source="""
import torch
import torch.nn.functional as F


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
    Blind(
        name="train_step_returns_loss_tensor",
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause="It returns the loss tensor (with its autograd graph) instead of a Python number; "
        "the step itself is right, but the return value must be loss.item().",
        source="""
import torch
import torch.nn.functional as F


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
        cause="The targets are already shifted, but it shifts again (logits[:, :-1] against "
        "targets[:, 1:]), so each position is scored on the token two ahead and the last "
        "position is left out of the loss.",
        source="""
import torch
import torch.nn.functional as F


def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    # predict the next token: drop the last prediction and the first target
    pred = logits[:, :-1, :].reshape(-1, logits.size(-1))
    gold = targets[:, 1:].reshape(-1)
    loss = F.cross_entropy(pred, gold)
    loss.backward()
    optimizer.step()
    return loss.item()
""",
        hints=("shifted again",),
    ),
    # ------------------------------------------------------------------ primer_block_forward
    Blind(
        name="block_forward_chunk_permute_sdpa",
        exercise_id="primer_block_forward",
        half="held2",
        correct=True,
        source="""
import math

import torch
import torch.nn.functional as F


def block_forward(block, x):
    B, T, C = x.shape
    nh = block.attn.config.n_heads
    hd = C // nh
    qkv = block.attn.qkv(block.ln1(x))
    q, k, v = qkv.chunk(3, dim=-1)
    q = q.reshape(B, T, nh, hd).permute(0, 2, 1, 3)
    k = k.reshape(B, T, nh, hd).permute(0, 2, 1, 3)
    v = v.reshape(B, T, nh, hd).permute(0, 2, 1, 3)
    att = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    att = att.permute(0, 2, 1, 3).reshape(B, T, C)
    h1 = x + block.attn.proj(att)
    hidden = F.gelu(block.mlp.fc1(block.ln2(h1)))
    out = h1 + block.mlp.fc2(hidden)
    return out
""",
    ),
    Blind(
        name="block_forward_einsum_additive_mask",
        exercise_id="primer_block_forward",
        half="held2",
        correct=True,
        source="""
import math

import torch
import torch.nn.functional as F


def split_heads(t, n_heads):
    b, s, h = t.shape
    return t.view(b, s, n_heads, h // n_heads)  # (b, s, heads, d)


def block_forward(block, x):
    b, s, h = x.shape
    n_heads = block.attn.config.n_heads
    d = h // n_heads
    q, k, v = block.attn.qkv(block.ln1(x)).split([h, h, h], dim=2)
    q, k, v = split_heads(q, n_heads), split_heads(k, n_heads), split_heads(v, n_heads)
    scores = torch.einsum("bqnd,bknd->bnqk", q, k) * d**-0.5
    mask = torch.full((s, s), float("-inf"), dtype=x.dtype).triu(diagonal=1)
    weights = torch.softmax(scores + mask, dim=-1)
    y = torch.einsum("bnqk,bknd->bqnd", weights, v).reshape(b, s, h)
    x = x + block.attn.proj(y)
    x = x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
    return x
""",
    ),
    Blind(
        name="block_forward_no_causal_mask",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause="The causal mask is missing: softmax runs over all key positions, so each token "
        "attends to later tokens (the outputs look ahead; right only for a sequence of length 1).",
        source="""
import math

import torch
import torch.nn.functional as F


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
        name="block_forward_scale_by_sqrt_d_model",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause="The scores are divided by sqrt(d_model) instead of sqrt(d_head) = sqrt(d_model // "
        "n_heads), so the softmax is too flat whenever there is more than one head.",
        source="""
import math

import torch
import torch.nn.functional as F


def block_forward(block, x):
    b, s, h = x.shape
    n_heads = block.attn.config.n_heads
    d_head = h // n_heads
    q, k, v = block.attn.qkv(block.ln1(x)).split(h, dim=-1)
    q, k, v = (t.view(b, s, n_heads, d_head).transpose(1, 2) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(h)
    future = torch.ones(s, s, dtype=torch.bool).triu(1)
    probs = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
    y = (probs @ v).transpose(1, 2).reshape(b, s, h)
    x = x + block.attn.proj(y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
        hints=("sqrt(d_model)",),
    ),
    Blind(
        name="block_forward_merge_heads_without_transpose",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause="The heads' outputs (batch, heads, seq, d_head) are reshaped straight to (batch, seq, "
        "d_model) without transposing heads and seq back first, which scrambles positions and "
        "heads (right only with one head or one token).",
        source="""
import math

import torch
import torch.nn.functional as F


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
        name="block_forward_mask_hides_diagonal",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause="The mask is built with triu() (diagonal 0) instead of triu(1), so each token is also "
        "hidden from itself: the first token's scores are all -inf and its softmax is NaN.",
        source="""
import math

import torch
import torch.nn.functional as F


def block_forward(block, x):
    b, s, h = x.shape
    n_heads = block.attn.config.n_heads
    d_head = h // n_heads
    q, k, v = block.attn.qkv(block.ln1(x)).split(h, dim=-1)
    q, k, v = (t.view(b, s, n_heads, d_head).transpose(1, 2) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_head)
    mask = torch.triu(torch.ones(s, s, dtype=torch.bool))
    probs = scores.masked_fill(mask, float("-inf")).softmax(dim=-1)
    y = (probs @ v).transpose(1, 2).reshape(b, s, h)
    x = x + block.attn.proj(y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
        hints=("triu(1)",),
    ),
    # ------------------------------------------------------------------ primer_accumulate_step
    Blind(
        name="accumulate_step_weight_means_by_token_share",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=True,
        source="""
import torch
import torch.nn.functional as F


def accumulate_step(model, optimizer, micro_batches):
    counts = [(targets >= 0).sum().item() for _, targets in micro_batches]
    total_real = sum(counts)
    optimizer.zero_grad()
    batch_loss = 0.0
    for (tokens, targets), n in zip(micro_batches, counts):
        _, mean_loss = model(tokens, targets)  # mean over this micro-batch's real tokens
        share = mean_loss * (n / total_real)
        share.backward()
        batch_loss += share.item()
    optimizer.step()
    return batch_loss
""",
    ),
    Blind(
        name="accumulate_step_sum_then_divide_grads",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=True,
        source="""
import torch
import torch.nn.functional as F


def accumulate_step(model, optimizer, micro_batches):
    summed_loss = 0.0
    n_real = 0
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        loss_sum = F.cross_entropy(
            logits.reshape(-1, logits.shape[-1]), targets.reshape(-1),
            ignore_index=-100, reduction="sum",
        )
        loss_sum.backward()  # gradients of the summed loss add up in .grad
        summed_loss += loss_sum.item()
        n_real += int(targets.ne(-100).sum())
    with torch.no_grad():
        for p in model.parameters():
            if p.grad is not None:
                p.grad /= n_real  # sum over real tokens -> mean over real tokens
    optimizer.step()
    optimizer.zero_grad()
    return summed_loss / n_real
""",
    ),
    Blind(
        name="accumulate_step_divide_by_number_of_micro_batches",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=False,
        cause="Each micro-batch's mean loss is divided by the number of micro-batches, which weights "
        "every micro-batch equally instead of by its real tokens: right only when all micro-batches "
        "hold the same number of real tokens (wrong once padding leaves 16, 5 and 12).",
        source="""
import torch
import torch.nn.functional as F


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
        cause="The summed loss is divided by every target position (targets.numel(), padding "
        "included) instead of the real tokens (targets != -100), so with padding the loss and "
        "gradients come out too small.",
        source="""
import torch
import torch.nn.functional as F


def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    n_tokens = sum(targets.numel() for _, targets in micro_batches)
    total = 0.0
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        summed = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum")
        loss = summed / n_tokens
        loss.backward()
        total += loss.item()
    optimizer.step()
    return total
""",
        hints=("padding was counted",),
    ),
    Blind(
        name="accumulate_step_means_not_rescaled",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=False,
        cause="Each micro-batch's mean loss is backpropagated as is, without any weighting, so the "
        "accumulated gradients (and the returned loss) are the sum of the micro-batch means, about "
        "3 times the batch's mean over real tokens.",
        source="""
import torch
import torch.nn.functional as F


def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    total = 0.0
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
        loss.backward()
        total += loss.item()
    optimizer.step()
    return total
""",
        hints=("means were added",),
    ),
    Blind(
        name="accumulate_step_zero_grad_inside_loop",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=False,
        cause="optimizer.zero_grad() is called inside the loop, before every micro-batch, so each "
        "backward wipes the previous micro-batches' gradients and the step sees only the last "
        "micro-batch's (scaled) gradient.",
        source="""
import torch
import torch.nn.functional as F


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
]
