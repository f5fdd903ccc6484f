"""Held-out answers to lab 08b, round 4 (``half="held2"``), written blind.

Written on 2026-11-28 (23:10-23:20 UTC) by a helper session that never read the lab's checker
(``gpu_utils/exercises/``), its tests or its messages, nor the other rounds' answer files: only the
learner's lab (``labs/08b_pytorch_primer_lab.ipynb``), the reference solutions' code cells,
``gpu_utils/many_gpus/gpt.py`` and the list of earlier rounds' causes (whose mistakes these avoid).

How the answers were verified (scratch scripts under /tmp/lab08b_r4/, no checker): every answer
was taken through ``heldout.submitted`` and run beside the reference solution.

* primer_train_step: 3 steps of SGD(lr=0.1, momentum=0.9) on ``gu.gpt.build`` models (vocab 32,
  seq 8, d_model 16, 2 heads; and vocab 64, d_model 12, 3 heads), batches of 4x8, 1x8 and 3x5
  tokens; compared: every returned loss and every parameter after every step (atol 1e-5).
* primer_block_forward: ``Block`` s with every parameter random (normal, LayerNorm weights
  included) for d_model/heads 16/2, 12/3, 16/4, 8/1, 6/2 and 3/1, x of shapes (batch, seq) =
  (1, 1), (2, 2), (1, 3), (2, 5), (3, 8); compared: outputs and the gradients of every
  parameter and of x (atol 1e-4), an error counting as a difference.
* primer_accumulate_step: two calls as the lab describes, three micro-batches of (2, 8): call 1
  without padding, call 2 padded to 16, 5 and 12 real tokens; also 1 and 2 micro-batches and a
  batch of 1 real token; compared: returned losses and the parameters after each call.

Each correct answer agreed with the reference on every input above; each wrong answer differed
on at least one (or raised, or looped: the endless loop was stopped by an alarm after 5 s).
The subtle ones were seen right where intended: clearing the blocks only matches on step 1 and
differs from step 2; the cached token count and ignore_index=-1 match on the unpadded call 1
and differ (or raise) on the padded call 2; squeeze() raises only for a batch of 1; split(3)
only works for d_model 3; view() after transpose only for 1 head or 1 token; 1/sqrt(n_heads)
only matches for d_model 16 with 4 heads (or 1 token).
"""

from heldout import Blind

# --- primer_train_step -------------------------------------------------------------------------

TRAIN = [
    Blind(
        name="train_ok_module_loss_permute",
        exercise_id="primer_train_step",
        half="held2",
        correct=True,
        source="""
import torch
from torch import nn


def train_step(model, optimizer, tokens, targets):
    logits, _ = model(tokens)
    # clearing here is fine too: nothing has been back-propagated yet in this step
    model.zero_grad(set_to_none=True)
    # CrossEntropyLoss takes (N, C, d): put the vocabulary on dim 1
    loss = nn.CrossEntropyLoss()(logits.permute(0, 2, 1), targets)
    loss.backward()
    optimizer.step()
    return float(loss.detach())
""",
    ),
    Blind(
        name="train_ok_model_loss_clear_after",
        exercise_id="primer_train_step",
        half="held2",
        correct=True,
        source="""
def train_step(model, optimizer, tokens, targets):
    _, loss = model(tokens, targets)  # the model's own mean cross-entropy
    loss.backward()
    optimizer.step()
    for p in model.parameters():  # clear after the update, ready for the next step
        p.grad = None
    return loss.item()
""",
    ),
    Blind(
        name="train_ce_not_flattened",
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause=(
            "F.cross_entropy is given the logits unflattened, (batch, seq, vocab), and reads "
            "dim 1 (the sequence) as the classes, so the shapes do not match the targets (an "
            "error): flatten batch and sequence first, or move the vocabulary to dim 1."
        ),
        source="""
import torch.nn.functional as F


def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits, targets)
    loss.backward()
    optimizer.step()
    return loss.item()
""",
    ),
    Blind(
        name="train_log_softmax_batch_axis",
        hints=("sums to 0 over the sequences",),
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause=(
            "The hand-written loss takes log_softmax over dim 0 (the batch) instead of the "
            "vocabulary (dim -1), so each position's log-probabilities are normalised across "
            "sequences, not across tokens."
        ),
        source="""
import torch.nn.functional as F


def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    logp = F.log_softmax(logits, dim=0)
    loss = F.nll_loss(logp.flatten(0, 1), targets.flatten())
    loss.backward()
    optimizer.step()
    return loss.item()
""",
    ),
    Blind(
        name="train_nll_missing_minus",
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause=(
            "The hand-written cross-entropy forgets the minus sign: it is the mean "
            "log-probability of the targets, so the step climbs the loss instead of descending "
            "it (and the returned loss is negative)."
        ),
        source="""
def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    logp = logits.log_softmax(dim=-1)
    loss = logp.gather(-1, targets.unsqueeze(-1)).mean()
    loss.backward()
    optimizer.step()
    return loss.item()
""",
    ),
    Blind(
        name="train_last_position_only",
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause=(
            "The loss scores only the last position of each sequence (logits[:, -1] against "
            "targets[:, -1]) instead of every position, so 7 of the 8 next-token predictions "
            "get no gradient."
        ),
        source="""
import torch.nn.functional as F


def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits[:, -1], targets[:, -1])
    loss.backward()
    optimizer.step()
    return loss.item()
""",
    ),
    Blind(
        name="train_clears_blocks_only",
        hints=("only part of the model's gradients were cleared",),
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause=(
            "Only the transformer blocks' gradients are cleared (model.blocks.zero_grad()), so "
            "the embeddings' and the final LayerNorm's gradients keep adding up from step to "
            "step (the first step is right, the later ones are not)."
        ),
        source="""
import torch.nn.functional as F


def train_step(model, optimizer, tokens, targets):
    model.blocks.zero_grad()
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    loss.backward()
    optimizer.step()
    return loss.item()
""",
    ),
    Blind(
        name="train_adds_l2_penalty",
        hints=("times the weights themselves",),
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause=(
            "It adds an L2 penalty (1e-3 times the sum of the squared parameters) to the loss, "
            "a weight decay the task does not ask for, so the gradients (and the returned loss) "
            "are not those of the plain mean cross-entropy."
        ),
        source="""
import torch.nn.functional as F


def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    l2 = sum((p**2).sum() for p in model.parameters())
    loss = loss + 1e-3 * l2  # a little regularisation
    loss.backward()
    optimizer.step()
    return loss.item()
""",
    ),
    Blind(
        name="train_squeeze_batch_of_one",
        hints=("batch of one sequence", "squeeze()"),
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause=(
            "logits.squeeze() also drops the batch axis when the batch holds one sequence, so "
            "flatten(0, 1) then merges the positions with the vocabulary and the cross-entropy "
            "fails (an error for a batch of 1; right for larger batches): do not squeeze."
        ),
        source="""
import torch.nn.functional as F


def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    logits = logits.squeeze()  # drop any extra dimension
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    loss.backward()
    optimizer.step()
    return loss.item()
""",
    ),
]

# --- primer_block_forward ----------------------------------------------------------------------

BLOCK = [
    Blind(
        name="block_ok_head_loop_einsum",
        exercise_id="primer_block_forward",
        half="held2",
        correct=True,
        source="""
import math

import torch
import torch.nn.functional as F


def block_forward(block, x):
    b, s, h = x.shape
    n_heads = block.attn.config.n_heads
    d = h // n_heads
    qkv = block.attn.qkv(block.ln1(x))
    q, k, v = qkv[..., :h], qkv[..., h : 2 * h], qkv[..., 2 * h :]
    mask = torch.full((s, s), float("-inf")).triu(1)  # 0 on and below the diagonal
    heads = []
    for i in range(n_heads):  # one head at a time, on its contiguous slice of d features
        cols = slice(i * d, (i + 1) * d)
        scores = torch.einsum("bqd,bkd->bqk", q[..., cols], k[..., cols]) / math.sqrt(d)
        weights = torch.softmax(scores + mask, dim=-1)
        heads.append(torch.einsum("bqk,bkd->bqd", weights, v[..., cols]))
    x = x + block.attn.proj(torch.cat(heads, dim=-1))
    hidden = F.gelu(block.mlp.fc1(block.ln2(x)))
    return x + block.mlp.fc2(hidden)
""",
    ),
    Blind(
        name="block_ok_functional_ln_sdpa",
        exercise_id="primer_block_forward",
        half="held2",
        correct=True,
        source="""
import torch
import torch.nn.functional as F


def layer_norm(ln, x):
    return F.layer_norm(x, ln.normalized_shape, ln.weight, ln.bias, ln.eps)


def block_forward(block, x):
    b, s, h = x.shape
    a = block.attn.config.n_heads
    q, k, v = torch.chunk(block.attn.qkv(layer_norm(block.ln1, x)), 3, dim=-1)
    q, k, v = (t.reshape(b, s, a, h // a).permute(0, 2, 1, 3) for t in (q, k, v))
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    y = y.permute(0, 2, 1, 3).reshape(b, s, h)
    x = x + block.attn.proj(y)
    m = block.mlp
    return x + m.fc2(F.gelu(m.fc1(layer_norm(block.ln2, x))))
""",
    ),
    Blind(
        name="block_split_three_not_h",
        hints=("pieces of 3",),
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause=(
            "split(3, dim=-1) cuts the qkv output into pieces of 3 features, not into 3 pieces, "
            "so q, k, v cannot be unpacked (an error) unless d_model is 3: use split(h) or "
            "chunk(3)."
        ),
        source="""
import math

import torch
import torch.nn.functional as F


def block_forward(block, x):
    b, s, h = x.shape
    n_heads = block.attn.config.n_heads
    d_head = h // n_heads
    q, k, v = block.attn.qkv(block.ln1(x)).split(3, dim=-1)
    q, k, v = (t.view(b, s, n_heads, d_head).transpose(1, 2) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_head)
    future = torch.ones(s, s, dtype=torch.bool).triu(1)
    probs = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
    y = (probs @ v).transpose(1, 2).reshape(b, s, h)
    x = x + block.attn.proj(y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
    ),
    Blind(
        name="block_manual_ln_unbiased_var",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause=(
            "The hand-written LayerNorm divides by the unbiased standard deviation "
            "(x.std(), n - 1 in the variance) while LayerNorm uses the biased variance "
            "(divide by n), so every normalised value is off by a factor sqrt((n-1)/n)."
        ),
        source="""
import math

import torch
import torch.nn.functional as F


def norm(ln, x):
    mean = x.mean(dim=-1, keepdim=True)
    std = torch.sqrt(x.var(dim=-1, keepdim=True) + ln.eps)
    return (x - mean) / std * ln.weight + ln.bias


def block_forward(block, x):
    b, s, h = x.shape
    n_heads = block.attn.config.n_heads
    d_head = h // n_heads
    q, k, v = block.attn.qkv(norm(block.ln1, x)).split(h, dim=-1)
    q, k, v = (t.view(b, s, n_heads, d_head).transpose(1, 2) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_head)
    future = torch.ones(s, s, dtype=torch.bool).triu(1)
    probs = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
    y = (probs @ v).transpose(1, 2).reshape(b, s, h)
    x = x + block.attn.proj(y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(norm(block.ln2, x))))
""",
    ),
    Blind(
        name="block_mask_times_inf_nan",
        hints=("0 x inf is NaN",),
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause=(
            "The additive mask is built as a 0/1 matrix times -inf, and 0 * -inf is NaN, so "
            "every allowed score becomes NaN and the whole output is NaN: put -inf only where "
            "the mask is set (masked_fill, or torch.where)."
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
    mask = torch.triu(torch.ones(s, s), diagonal=1) * float("-inf")
    probs = (scores + mask).softmax(dim=-1)
    y = (probs @ v).transpose(1, 2).reshape(b, s, h)
    x = x + block.attn.proj(y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
    ),
    Blind(
        name="block_merge_view_noncontiguous",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause=(
            "The heads are merged with .view(b, s, h) right after transpose(1, 2), and a "
            "transposed tensor is not contiguous, so view raises (it only works with one head "
            "or one token): call .contiguous() first or use reshape."
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
    y = (probs @ v).transpose(1, 2).view(b, s, h)
    x = x + block.attn.proj(y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
    ),
    Blind(
        name="block_scale_sqrt_n_heads",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause=(
            "The scores are scaled by 1/sqrt(n_heads), the number of heads, instead of "
            "1/sqrt(d_head), the size of each head (right only when the two are equal, as with "
            "d_model 16 and 4 heads)."
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
    scores = q @ k.transpose(-2, -1) / math.sqrt(n_heads)
    future = torch.ones(s, s, dtype=torch.bool).triu(1)
    probs = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
    y = (probs @ v).transpose(1, 2).reshape(b, s, h)
    x = x + block.attn.proj(y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
    ),
    Blind(
        name="block_qkv_reads_raw_x",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause=(
            "The attention's qkv projection reads the raw x instead of ln1(x): ln1 is never "
            "applied, so the attention branch is not pre-LN and ln1's weight and bias get no "
            "gradient."
        ),
        source="""
import math

import torch
import torch.nn.functional as F


def block_forward(block, x):
    b, s, h = x.shape
    n_heads = block.attn.config.n_heads
    d_head = h // n_heads
    q, k, v = block.attn.qkv(x).split(h, dim=-1)
    q, k, v = (t.view(b, s, n_heads, d_head).transpose(1, 2) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_head)
    future = torch.ones(s, s, dtype=torch.bool).triu(1)
    probs = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
    y = (probs @ v).transpose(1, 2).reshape(b, s, h)
    x = x + block.attn.proj(y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
    ),
]

# --- primer_accumulate_step --------------------------------------------------------------------

ACCUMULATE = [
    Blind(
        name="accumulate_ok_mean_times_share",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=True,
        source="""
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    counts = [(targets != -100).sum().item() for _, targets in micro_batches]
    n_total = sum(counts)
    total = 0.0
    for (tokens, targets), n in zip(micro_batches, counts):
        _, mean_loss = model(tokens, targets)  # mean over this micro-batch's real tokens
        share = mean_loss * (n / n_total)  # weighted by its real tokens
        share.backward()
        total += share.item()
    optimizer.step()
    return total
""",
    ),
    Blind(
        name="accumulate_ok_boolean_mask",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=True,
        source="""
import torch
import torch.nn.functional as F


def accumulate_step(model, optimizer, micro_batches):
    for p in model.parameters():
        p.grad = None
    n_real = 0
    for _, targets in micro_batches:
        n_real += int(torch.count_nonzero(targets >= 0))
    losses = []
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        real = targets >= 0  # keep only the real tokens, drop the -100 padding
        nll = F.cross_entropy(logits[real], targets[real], reduction="sum")
        (nll / n_real).backward()
        losses.append(nll.item())
    optimizer.step()
    return sum(losses) / n_real
""",
    ),
    Blind(
        name="accumulate_while_no_increment",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=False,
        cause=(
            "The while loop over the micro-batches never increments its index i, so it runs "
            "the first micro-batch forever and never reaches optimizer.step()."
        ),
        source="""
import torch.nn.functional as F


def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    n_tokens = sum(int((t != -100).sum()) for _, t in micro_batches)
    total = 0.0
    i = 0
    while i < len(micro_batches):
        tokens, targets = micro_batches[i]
        logits, _ = model(tokens)
        summed = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum")
        loss = summed / n_tokens
        loss.backward()
        total += loss.item()
    optimizer.step()
    return total
""",
    ),
    Blind(
        name="accumulate_skips_last_micro_batch",
        hints=("every micro-batch but the last one",),
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=False,
        cause=(
            "The loop runs over range(len(micro_batches) - 1), off by one, so the last "
            "micro-batch is never forwarded or back-propagated and its tokens are missing from "
            "the gradients and the loss."
        ),
        source="""
import torch.nn.functional as F


def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    n_tokens = sum(int((t != -100).sum()) for _, t in micro_batches)
    total = 0.0
    for i in range(len(micro_batches) - 1):
        tokens, targets = micro_batches[i]
        logits, _ = model(tokens)
        summed = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum")
        loss = summed / n_tokens
        loss.backward()
        total += loss.item()
    optimizer.step()
    return total
""",
    ),
    Blind(
        name="accumulate_token_count_cached",
        hints=("made first",),
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=False,
        cause=(
            "The real-token total is computed on the first call and kept in a global, so the "
            "next call (whose padding leaves another number of real tokens) divides by the "
            "first call's count: recount the tokens on every call."
        ),
        source="""
import torch.nn.functional as F

N_TOKENS = None


def accumulate_step(model, optimizer, micro_batches):
    global N_TOKENS
    if N_TOKENS is None:  # count once, it does not change
        N_TOKENS = sum(int((t != -100).sum()) for _, t in micro_batches)
    optimizer.zero_grad()
    total = 0.0
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        summed = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum")
        loss = summed / N_TOKENS
        loss.backward()
        total += loss.item()
    optimizer.step()
    return total
""",
    ),
    Blind(
        name="accumulate_returns_summed_loss",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=False,
        cause=(
            "The gradients are right, but the returned loss adds up the micro-batches' summed "
            "cross-entropies without dividing by the number of real tokens: it is the batch's "
            "total loss, not its mean."
        ),
        source="""
import torch.nn.functional as F


def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    n_tokens = sum(int((t != -100).sum()) for _, t in micro_batches)
    total = 0.0
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        summed = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum")
        (summed / n_tokens).backward()
        total += summed.item()
    optimizer.step()
    return total
""",
    ),
    Blind(
        name="accumulate_mean_divided_by_total",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=False,
        cause=(
            "Each micro-batch's mean loss (already divided by its own real tokens) is divided "
            "again by the batch's real-token total, mixing the two recipes: each micro-batch's "
            "gradients are n_i (its real tokens) times too small, a weight of 1/n_i instead of "
            "one per token."
        ),
        source="""
import torch.nn.functional as F


def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    n_tokens = sum(int((t != -100).sum()) for _, t in micro_batches)
    total = 0.0
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten()) / n_tokens
        loss.backward()
        total += loss.item()
    optimizer.step()
    return total
""",
    ),
    Blind(
        name="accumulate_ignore_index_minus_one",
        hints=("ignore_index",),
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=False,
        cause=(
            "It passes ignore_index=-1 though the padding targets are -100, so the loss no "
            "longer skips them and -100 is an out-of-range class (an error as soon as a "
            "micro-batch is padded)."
        ),
        source="""
import torch.nn.functional as F


def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    n_tokens = sum(int((t >= 0).sum()) for _, t in micro_batches)
    total = 0.0
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        summed = F.cross_entropy(
            logits.flatten(0, 1), targets.flatten(), ignore_index=-1, reduction="sum"
        )
        loss = summed / n_tokens
        loss.backward()
        total += loss.item()
    optimizer.step()
    return total
""",
    ),
    Blind(
        name="accumulate_ok_divide_grads_after",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=True,
        source="""
import torch.nn.functional as F


def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    n_tokens = 0
    summed_total = 0.0
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        summed = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum")
        summed.backward()  # .grad now holds the sum over the real tokens seen so far
        n_tokens += int((targets != -100).sum())
        summed_total += summed.item()
    for p in model.parameters():  # a tied weight is listed once, so divided once
        if p.grad is not None:
            p.grad /= n_tokens
    optimizer.step()
    return summed_total / n_tokens
""",
    ),
    Blind(
        name="accumulate_grads_divided_after_step",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=False,
        cause=(
            "The summed gradients are divided by the real-token count only after "
            "optimizer.step(), so the step used the batch's summed gradients (N times too "
            "large): divide before the step (or divide each loss before backward)."
        ),
        source="""
import torch.nn.functional as F


def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    n_tokens = 0
    summed_total = 0.0
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        summed = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum")
        summed.backward()
        n_tokens += int((targets != -100).sum())
        summed_total += summed.item()
    optimizer.step()
    for p in model.parameters():
        if p.grad is not None:
            p.grad /= n_tokens
    return summed_total / n_tokens
""",
    ),
]

ANSWERS = [*TRAIN, *BLOCK, *ACCUMULATE]
