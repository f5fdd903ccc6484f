"""Blind held-out round lab08b_r6 (held2), written 2026-11-29 ~03:26 UTC by a helper session
that never opened the checker, tests/ (beyond tests/heldout/__init__.py) or gpu_utils/exercises/.

Read: solutions/08b_pytorch_primer_lab.ipynb code cells (the reference answers), the earlier
causes file /tmp/blind/causes_lab08b.txt and the brief's list of round-5 causes.

Verification (/tmp/lab08b_r6/verify.py, GPU_COURSE_MODE=simulator): every answer runs through
submitted() and is compared with the reference on gu.gpt.build(seed=0, vocab 32, seq 8, d_model
16, 1 layer, 2 heads) and on a second shape (d_model 24, 3 heads, seq 5): train_step and
accumulate_step over 3 consecutive calls with SGD(momentum=0.9) (returned loss and every
parameter, atol 1e-5); block_forward on random x of (2, 8, 16) and (2, 5, 24) with random
(non-zero) biases, atol 1e-5. Correct answers agree everywhere; each wrong one differs on at least
one of these inputs (see verify output in the final report).
"""

from heldout import Blind

_PRE = """
import math
import torch
import torch.nn.functional as F
"""

ANSWERS = [
    Blind(
        name="train_step_reshape_float",
        exercise_id="primer_train_step",
        half="held2",
        correct=True,
        source=_PRE
        + """
def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad(set_to_none=True)
    logits, _ = model(tokens)
    v = logits.shape[-1]
    loss = F.cross_entropy(logits.reshape(-1, v), targets.reshape(-1))
    loss.backward()
    optimizer.step()
    return float(loss.detach())
""",
    ),
    Blind(
        name="train_step_double_step",
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause="optimizer.step() is called twice after the backward, so each call makes two updates instead of one.",
        source=_PRE
        + """
def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    loss.backward()
    optimizer.step()
    optimizer.step()
    return loss.item()
""",
        hints=("ran 2 times",),
    ),
    Blind(
        name="train_step_targets_transposed",
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause="The targets are flattened after a transpose (position-major) while the logits are flattened batch-major, so each prediction is scored against another sequence's target.",
        source=_PRE
        + """
def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.t().reshape(-1))
    loss.backward()
    optimizer.step()
    return loss.item()
""",
        hints=("flatten the logits and the targets in the same order",),
    ),
    Blind(
        name="block_chunk_sdpa",
        exercise_id="primer_block_forward",
        half="held2",
        correct=True,
        source=_PRE
        + """
def block_forward(block, x):
    b, s, h = x.shape
    nh = block.attn.config.n_heads
    q, k, v = block.attn.qkv(block.ln1(x)).chunk(3, dim=-1)
    q, k, v = (t.reshape(b, s, nh, h // nh).permute(0, 2, 1, 3) for t in (q, k, v))
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    y = y.permute(0, 2, 1, 3).reshape(b, s, h)
    x = x + block.attn.proj(y)
    m = block.ln2(x)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(m)))
""",
    ),
    Blind(
        name="block_tril_mask",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause="The mask is built with tril(-1), so it hides the past instead of the future: each position attends to itself and the later tokens only.",
        source=_PRE
        + """
def block_forward(block, x):
    b, s, h = x.shape
    n_heads = block.attn.config.n_heads
    d_head = h // n_heads
    q, k, v = block.attn.qkv(block.ln1(x)).split(h, dim=-1)
    q, k, v = (t.view(b, s, n_heads, d_head).transpose(1, 2) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_head)
    hidden = torch.ones(s, s, dtype=torch.bool).tril(-1)
    probs = scores.masked_fill(hidden, float("-inf")).softmax(dim=-1)
    y = (probs @ v).transpose(1, 2).reshape(b, s, h)
    x = x + block.attn.proj(y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
        hints=("scores of later keys must be -inf",),
    ),
    Blind(
        name="block_ln2_on_mlp_output",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause="ln2 is applied to the MLP's output instead of its input: the MLP branch must be fc2(gelu(fc1(ln2(x)))).",
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
    x = x + block.attn.proj(y)
    return x + block.ln2(block.mlp.fc2(F.gelu(block.mlp.fc1(x))))
""",
        hints=("applied after the MLP",),
    ),
    Blind(
        name="block_values_from_queries",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause="The attention weights are applied to the queries instead of the values (probs @ q), so the value projection is never used.",
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
    y = (probs @ q).transpose(1, 2).reshape(b, s, h)
    x = x + block.attn.proj(y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
        hints=("check v",),
    ),
    Blind(
        name="block_heads_averaged",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause="The heads are averaged (mean over the head axis, then repeated) instead of concatenated, so every head's output slot holds the same mixture instead of its own head.",
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
    y = (probs @ v).mean(dim=1).repeat(1, 1, n_heads)
    x = x + block.attn.proj(y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
        hints=("heads were averaged",),
    ),
    Blind(
        name="accumulate_manual_nll",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=True,
        source=_PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    n_real = sum((t >= 0).sum().item() for _, t in micro_batches)
    total = 0.0
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        lp = F.log_softmax(logits.float(), dim=-1).flatten(0, 1)
        tg = targets.flatten()
        keep = tg != -100
        nll = -lp[keep].gather(1, tg[keep].unsqueeze(1)).sum()
        (nll / n_real).backward()
        total += nll.item() / n_real
    optimizer.step()
    return total
""",
    ),
    Blind(
        name="accumulate_loss_detached",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=False,
        cause="Each micro-batch's loss is detached into a new leaf before backward, so no gradient reaches the model and the step changes nothing.",
        source=_PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    n_tokens = sum(int((t != -100).sum()) for _, t in micro_batches)
    total = 0.0
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        summed = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum")
        loss = (summed / n_tokens).detach().requires_grad_()
        loss.backward()
        total += loss.item()
    optimizer.step()
    return total
""",
        hints=("cut off",),
    ),
    Blind(
        name="accumulate_forward_under_no_grad",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=False,
        cause="The forward passes run under torch.no_grad(), so the logits carry no graph and backward() raises: only the token counting may be done without gradients.",
        source=_PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    with torch.no_grad():
        outs = [model(tokens)[0] for tokens, _ in micro_batches]
    n_tokens = sum(int((t != -100).sum()) for _, t in micro_batches)
    total = 0.0
    for logits, (_, targets) in zip(outs, micro_batches):
        summed = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum")
        loss = summed / n_tokens
        loss.backward()
        total += loss.item()
    optimizer.step()
    return total
""",
        hints=("torch.no_grad()",),
    ),
    Blind(
        name="accumulate_step_before_backward",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=False,
        cause="optimizer.step() runs before the summed micro-batch losses are back-propagated, so the step sees cleared gradients and updates nothing; the gradients computed afterwards are left unused.",
        source=_PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    n_tokens = sum(int((t != -100).sum()) for _, t in micro_batches)
    losses = []
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        losses.append(F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum") / n_tokens)
    loss = sum(losses)
    optimizer.step()
    loss.backward()
    return loss.item()
""",
        hints=("never before",),
    ),
]
