"""Held-out answers to lab 08b, round 5 (``half="held2"``), written blind.

Written on 2026-11-29 (02:24-02:30 UTC) by a helper session (round lab08b_r5) that never read
the lab's checker (``gpu_utils/exercises/``), its tests or its messages, nor the earlier rounds'
answer files: only the learner's lab (``labs/08b_pytorch_primer_lab.ipynb``), the reference
solutions' code cells (``solutions/08b_pytorch_primer_lab.ipynb``), ``gpu_utils/many_gpus/gpt.py``,
``tests/heldout/__init__.py`` and the list of earlier rounds' causes, whose mistakes these avoid.

How the answers were verified without the checker (script /tmp/lab08b_r5/verify.py): every
answer was taken through ``heldout.submitted`` and run beside the reference solution's code.

* primer_train_step: ``gu.gpt.build(seed=0)`` models (vocab 32, seq 8, d_model 16, 1 layer, 2
  heads; and vocab 64, d_model 12, 2 layers, 3 heads), two identical copies each with
  SGD(lr=0.1, momentum=0.9); step sequences of batches 4x8, 4x8, 4x8, 1x8 (the lab's) and 3x5,
  1x8, 2x3; targets drawn as the next tokens (token 0 included). Compared after every step: the
  returned value (must be a float, within 1e-5) and every parameter (within 1e-5).
* primer_block_forward: ``gu.gpt.Block`` s with every parameter redrawn at random (matrices
  N(0, 0.5), vectors including LayerNorm weights and all biases N(0, 1)) for d_model/heads 16/2,
  12/3, 16/4, 8/1, 6/2, 3/1, and x of (batch, seq) = (1, 1), (2, 2), (1, 3), (2, 5), (3, 8).
  Compared: the output (within 1e-4 relative to its largest value) and the gradients of
  sum(y^2) with respect to x and every parameter (within 1e-3 relative); an error counts as a
  difference.
* primer_accumulate_step: two calls on the same two models, three micro-batches of (2, 8) as
  the lab describes: call 1 unpadded (16, 16, 16 real tokens), call 2 padded to 16, 5 (3 + 2)
  and 12 (8 + 4); also a call 2 with a fully padded sequence (16, 5 + 0, 4 + 8), a single
  micro-batch of 9 tokens then two micro-batches (10, 1), and (1, 16) then unpadded.
  Compared after each call: the returned float (1e-5) and every parameter (1e-5).

Every correct answer agreed with the reference on every input above. Every wrong answer differed
on at least one, as intended:
* train: MSE on softmax, per-sequence sum, one-hot .mean() (32x too small) differ at step 1;
  logits[-1] differs on every batch of more than one sequence; the running average returns the
  right value on step 1 only (parameters always match); p.grad.zero_() raises AttributeError on
  the first call (the round's one plain error).
* block: probs @ k, GeLU after fc2, proj(x + y), F.dropout(p=0.1) (training=True by default)
  differ everywhere; SDPA on (b, s, heads, d_head) differs even for one token with 2+ heads;
  permute(0, 2, 3, 1) merge is right only with one head; * sqrt(d_head) is right only for one
  token.
* accumulate: the per-sequence mean matches on the unpadded call 1 and differs on the padded
  call 2 (NaN with a fully padded sequence); counting targets[0] is wrong on every call; the
  floor-divided weight n_i // N is 0 (zero gradients, loss 0) with several micro-batches; dividing
  .grad by N after each backward gives the right returned loss but the wrong parameters.
Note: ``train_ok_autograd_grad`` computes the gradients with torch.autograd.grad and assigns
them to .grad (no loss.backward() call): the gradients the step sees are exactly the reference's.
"""

from heldout import Blind

# --- primer_train_step -------------------------------------------------------------------------

TRAIN = [
    Blind(
        name="train_ok_ce_on_log_probs",
        exercise_id="primer_train_step",
        half="held2",
        correct=True,
        source="""
import torch.nn.functional as F


def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad(set_to_none=False)
    logits, _ = model(tokens)
    # log_softmax of log-probabilities changes nothing (their logsumexp is 0), so this is
    # still the plain mean cross-entropy
    log_probs = F.log_softmax(logits, dim=-1)
    loss = F.cross_entropy(log_probs.reshape(-1, log_probs.shape[-1]), targets.reshape(-1))
    loss.backward()
    optimizer.step()
    return loss.item()
""",
    ),
    Blind(
        name="train_ok_autograd_grad",
        exercise_id="primer_train_step",
        half="held2",
        correct=True,
        source="""
import torch
import torch.nn.functional as F


def train_step(model, optimizer, tokens, targets):
    params = [p for p in model.parameters() if p.requires_grad]
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    grads = torch.autograd.grad(loss, params)
    for p, g in zip(params, grads):  # fresh gradients: nothing left from the last step
        p.grad = g
    optimizer.step()
    return loss.item()
""",
    ),
    Blind(
        name="train_ok_manual_logsumexp",
        exercise_id="primer_train_step",
        half="held2",
        correct=True,
        source="""
import torch


def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    picked = logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    loss = (torch.logsumexp(logits, dim=-1) - picked).mean()
    loss.backward()
    optimizer.step()
    return loss.item()
""",
    ),
    Blind(
        name="train_mse_on_softmax",
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause=(
            "The loss is the mean squared error between the softmax probabilities and one-hot "
            "targets instead of the cross-entropy, so its value and gradients are not those of "
            "the mean cross-entropy the step must minimise."
        ),
        source="""
import torch.nn.functional as F


def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    probs = logits.softmax(dim=-1)
    one_hot = F.one_hot(targets, num_classes=logits.shape[-1]).float()
    loss = F.mse_loss(probs, one_hot)
    loss.backward()
    optimizer.step()
    return loss.item()
""",
        hints=("F.cross_entropy",),
    ),
    Blind(
        name="train_sum_over_seq_mean_over_batch",
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause=(
            "The per-token losses are summed over each sequence's 8 positions and only averaged "
            "over the sequences, so the loss and its gradients are seq_len (8) times too large: "
            "take the mean over every position."
        ),
        source="""
import torch.nn.functional as F


def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    per_token = F.cross_entropy(logits.transpose(1, 2), targets, reduction="none")  # (b, s)
    loss = per_token.sum(dim=1).mean()  # loss per sequence, averaged over the batch
    loss.backward()
    optimizer.step()
    return loss.item()
""",
        hints=("8 = the number of positions",),
    ),
    Blind(
        name="train_one_hot_mean_over_vocab",
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause=(
            "The hand-written cross-entropy takes .mean() of the whole (positions x vocabulary) "
            "product of one-hot targets and log-probabilities, so it also divides by the "
            "vocabulary size: the loss and gradients are 32 (vocab_size) times too small; sum "
            "over the vocabulary, then average over the positions."
        ),
        source="""
import torch.nn.functional as F


def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    log_probs = F.log_softmax(logits, dim=-1)
    one_hot = F.one_hot(targets, num_classes=logits.shape[-1]).to(log_probs.dtype)
    loss = -(one_hot * log_probs).mean()
    loss.backward()
    optimizer.step()
    return loss.item()
""",
        hints=("one over the vocabulary size",),
    ),
    Blind(
        name="train_last_sequence_only",
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause=(
            "logits[-1] and targets[-1] index the batch axis, so the loss covers only the last "
            "sequence of the batch and the others get no gradient (right only for a batch of one "
            "sequence)."
        ),
        source="""
import torch.nn.functional as F


def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    # (seq, vocab) against (seq,): the next-token predictions
    loss = F.cross_entropy(logits[-1], targets[-1])
    loss.backward()
    optimizer.step()
    return loss.item()
""",
        hints=("left out of the loss",),
    ),
    Blind(
        name="train_returns_running_average",
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause=(
            "The step is right, but it returns a running average of the losses of every call so "
            "far (kept in a global) instead of this step's loss (only the first call's value is "
            "right)."
        ),
        source="""
import torch.nn.functional as F

history = []


def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    loss.backward()
    optimizer.step()
    history.append(loss.item())
    return sum(history) / len(history)  # smoother to log
""",
        hints=("returned",),
    ),
    Blind(
        name="train_zero_none_grad",
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause=(
            "It clears the gradients with p.grad.zero_() for every parameter, but before the "
            "first backward p.grad is None, so the first call raises AttributeError: use "
            "optimizer.zero_grad() (or skip the parameters whose grad is None)."
        ),
        source="""
import torch.nn.functional as F


def train_step(model, optimizer, tokens, targets):
    for p in model.parameters():
        p.grad.zero_()
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    loss.backward()
    optimizer.step()
    return loss.item()
""",
        hints=("is None until the first",),
    ),
]

# --- primer_block_forward ----------------------------------------------------------------------

BLOCK = [
    Blind(
        name="block_ok_split_scale_where",
        exercise_id="primer_block_forward",
        half="held2",
        correct=True,
        source="""
import torch
import torch.nn.functional as F


def block_forward(block, x):
    b, s, h = x.shape
    n_heads = block.attn.config.n_heads
    d_head = h // n_heads
    q, k, v = block.attn.qkv(block.ln1(x)).chunk(3, dim=-1)
    q, k, v = (t.reshape(b, s, n_heads, d_head).permute(0, 2, 1, 3) for t in (q, k, v))
    # 1/sqrt(d_head) split between q and k: d_head ** -0.25 each
    q = q * d_head**-0.25
    k = k * d_head**-0.25
    scores = torch.einsum("bhqd,bhkd->bhqk", q, k)
    seen = torch.tril(torch.ones(s, s, dtype=torch.bool))
    scores = torch.where(seen, scores, torch.tensor(-1e9))
    probs = torch.softmax(scores, dim=-1)
    y = torch.einsum("bhqk,bhkd->bhqd", probs, v).permute(0, 2, 1, 3).flatten(2)
    x = x + block.attn.proj(y)
    hidden = F.gelu(block.mlp.fc1(block.ln2(x)))
    return x + block.mlp.fc2(hidden)
""",
    ),
    Blind(
        name="block_ok_manual_stable_softmax",
        exercise_id="primer_block_forward",
        half="held2",
        correct=True,
        source="""
import math

import torch
import torch.nn.functional as F


def block_forward(block, x):
    b, s, h = x.shape
    nh = block.attn.config.n_heads
    dh = h // nh
    qkv = block.attn.qkv(block.ln1(x))
    q = qkv[..., :h].reshape(b, s, nh, dh).transpose(1, 2)
    k = qkv[..., h : 2 * h].reshape(b, s, nh, dh).transpose(1, 2)
    v = qkv[..., 2 * h :].reshape(b, s, nh, dh).transpose(1, 2)
    scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(dh)
    keep = torch.ones(s, s).tril().bool()
    scores = scores.masked_fill(~keep, float("-inf"))
    scores = scores - scores.amax(dim=-1, keepdim=True)
    weights = scores.exp()
    weights = weights / weights.sum(dim=-1, keepdim=True)
    y = torch.matmul(weights, v).transpose(1, 2).contiguous().view(b, s, h)
    out = x + block.attn.proj(y)
    return out + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(out))))
""",
    ),
    Blind(
        name="block_weights_times_keys",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause=(
            "The attention weights multiply K instead of V (probs @ k), so the heads average "
            "the keys and the value projection is never used (its weights get no gradient)."
        ),
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
    y = (probs @ k).transpose(1, 2).reshape(b, s, h)
    x = x + block.attn.proj(y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
        hints=("check v",),
    ),
    Blind(
        name="block_gelu_after_fc2",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause=(
            "The GeLU is applied after fc2 (to the MLP's output) instead of between fc1 and "
            "fc2, so the MLP computes gelu(fc2(fc1(x))) rather than fc2(gelu(fc1(x)))."
        ),
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
    y = (probs @ v).transpose(1, 2).reshape(b, s, h)
    x = x + block.attn.proj(y)
    mlp = F.gelu(block.mlp.fc2(block.mlp.fc1(block.ln2(x))))
    return x + mlp
""",
        hints=("between fc1 and fc2",),
    ),
    Blind(
        name="block_proj_on_residual_sum",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause=(
            "The output projection is applied after the residual sum, proj(x + heads), instead "
            "of to the heads alone, x + proj(heads): the residual stream itself goes through "
            "proj."
        ),
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
    y = (probs @ v).transpose(1, 2).reshape(b, s, h)
    x = block.attn.proj(x + y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
        hints=("residual was added before",),
    ),
    Blind(
        name="block_dropout_on_weights",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause=(
            "It applies F.dropout(probs, 0.1) to the attention weights, and F.dropout defaults "
            "to training=True, so random weights are zeroed (and the rest scaled by 1/0.9) on "
            "every call, while the block's dropout is 0: the output is random and wrong."
        ),
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
    probs = F.dropout(probs, 0.1)  # attention dropout, as in GPT-2
    y = (probs @ v).transpose(1, 2).reshape(b, s, h)
    x = x + block.attn.proj(y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
        hints=("random",),
    ),
    Blind(
        name="block_sdpa_heads_not_transposed",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause=(
            "q, k and v are passed to F.scaled_dot_product_attention as (batch, seq, heads, "
            "d_head) without transpose(1, 2), and it attends over the second-to-last axis, so "
            "each token attends across its heads instead of across the sequence's tokens."
        ),
        source="""
import torch
import torch.nn.functional as F


def block_forward(block, x):
    b, s, h = x.shape
    n_heads = block.attn.config.n_heads
    d_head = h // n_heads
    q, k, v = block.attn.qkv(block.ln1(x)).split(h, dim=-1)
    q, k, v = (t.view(b, s, n_heads, d_head) for t in (q, k, v))
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    x = x + block.attn.proj(y.reshape(b, s, h))
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
        hints=("never looked across positions",),
    ),
    Blind(
        name="block_merge_head_dim_first",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause=(
            "The heads are merged with permute(0, 2, 3, 1), which lays the features out as "
            "(d_head, heads), interleaving the heads, instead of transpose(1, 2) to (seq, heads, "
            "d_head): proj reads each head's features in the wrong places (right only with one "
            "head)."
        ),
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
    y = probs @ v  # (b, heads, s, d_head)
    y = y.permute(0, 2, 3, 1).reshape(b, s, h)
    x = x + block.attn.proj(y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
        hints=("merged back in",),
    ),
    Blind(
        name="block_scale_multiplied",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause=(
            "The scores are multiplied by sqrt(d_head) instead of divided by it, so the softmax "
            "is far too sharp: softmax(Q Kᵀ / √d_head) needs the division."
        ),
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
    scores = q @ k.transpose(-2, -1) * math.sqrt(d_head)
    future = torch.ones(s, s, dtype=torch.bool).triu(1)
    probs = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
    y = (probs @ v).transpose(1, 2).reshape(b, s, h)
    x = x + block.attn.proj(y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
        hints=("1/sqrt(d_head)",),
    ),
]

# --- primer_accumulate_step --------------------------------------------------------------------

ACCUMULATE = [
    Blind(
        name="accumulate_ok_per_token_none",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=True,
        source="""
import torch.nn.functional as F


def accumulate_step(model, optimizer, micro_batches):
    n_real = sum((targets >= 0).sum().item() for _, targets in micro_batches)
    losses = []
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        # reduction="none": one loss per position, 0 where the target is -100
        per_token = F.cross_entropy(logits.transpose(1, 2), targets, reduction="none")
        share = per_token.sum() / n_real
        share.backward()
        losses.append(share.detach())
    optimizer.step()
    optimizer.zero_grad()  # clean for the next call
    return float(sum(losses))
""",
    ),
    Blind(
        name="accumulate_ok_fraction_weights",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=True,
        source="""
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    counts = [int(targets.ne(-100).sum()) for _, targets in micro_batches]
    total_count = sum(counts)
    result = 0.0
    for (tokens, targets), count in zip(micro_batches, counts):
        _, mean_loss = model(tokens, targets)  # mean over this micro-batch's real tokens
        weighted = mean_loss * (count / total_count)
        weighted.backward()
        result += weighted.item()
    optimizer.step()
    return result
""",
    ),
    Blind(
        name="accumulate_per_sequence_mean",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=False,
        cause=(
            "It averages each sequence's mean loss over the sequences, which weights every "
            "sequence the same instead of every real token: wrong when padding leaves the "
            "sequences different numbers of real tokens (and NaN for a sequence that is all "
            "padding)."
        ),
        source="""
import torch.nn.functional as F


def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    n_seqs = sum(len(tokens) for tokens, _ in micro_batches)
    total = 0.0
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        per_token = F.cross_entropy(logits.transpose(1, 2), targets, reduction="none")
        real = (targets != -100).sum(dim=1)  # real tokens of each sequence
        seq_means = per_token.sum(dim=1) / real
        loss = seq_means.sum() / n_seqs
        loss.backward()
        total += loss.item()
    optimizer.step()
    return total
""",
        hints=("mean of per-sequence means",),
    ),
    Blind(
        name="accumulate_counts_first_row",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=False,
        cause=(
            "The real tokens are counted in targets[0], the first sequence of each micro-batch "
            "only, so the total is too small (the second sequences' tokens are left out) and "
            "the gradients and loss are too large."
        ),
        source="""
import torch.nn.functional as F


def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    n_tokens = 0
    for _, targets in micro_batches:
        n_tokens += int((targets[0] != -100).sum())
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
        hints=("divided by 24",),
    ),
    Blind(
        name="accumulate_weight_floor_division",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=False,
        cause=(
            "The weight n_i // n_total is integer (floor) division, which is 0 whenever there "
            "are several micro-batches, so every loss is multiplied by 0: the step sees zero "
            "gradients and the returned loss is 0; use n_i / n_total."
        ),
        source="""
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    counts = [int((targets != -100).sum()) for _, targets in micro_batches]
    n_total = sum(counts)
    total = 0.0
    for (tokens, targets), n_i in zip(micro_batches, counts):
        _, loss = model(tokens, targets)
        loss = loss * (n_i // n_total)
        loss.backward()
        total += loss.item()
    optimizer.step()
    return total
""",
        hints=("integer division",),
    ),
    Blind(
        name="accumulate_grads_divided_each_micro_batch",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=False,
        cause=(
            "The .grad are divided by the real-token total inside the loop, after every "
            "micro-batch's backward, so the earlier micro-batches' gradients are divided again "
            "at each later one (the first by N three times): divide once, after the loop."
        ),
        source="""
import torch.nn.functional as F


def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    n_tokens = sum(int((t != -100).sum()) for _, t in micro_batches)
    summed_total = 0.0
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        summed = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum")
        summed.backward()
        summed_total += summed.item()
        for p in model.parameters():
            if p.grad is not None:
                p.grad /= n_tokens
    optimizer.step()
    return summed_total / n_tokens
""",
        hints=("divided inside the loop",),
    ),
]

ANSWERS = [*TRAIN, *BLOCK, *ACCUMULATE]
