"""Blind held-out round lab08b_r9 (held2), written 2026-11-29 ~08:52-09:00 UTC by a helper session
that never opened the checker, tests/test_*, tests/heldout/report.py or gpu_utils/exercises/.

Read: solutions/08b_pytorch_primer_lab.ipynb (the reference answers and the exercise texts),
gpu_utils/many_gpus/gpt.py (gu.gpt: Block, CausalSelfAttention, MLP, GPT.forward, whose loss is
F.cross_entropy with the default ignore_index -100, and build), tests/heldout/__init__.py, the
docstring and first two entries of tests/heldout/lab08b_r8.py (format only) and
/tmp/blind/causes_lab08b.txt (earlier causes, all avoided: every mistake here is of a new kind).

Verification: /tmp/lab08b_r9/verify.py (run from tests/ with GPU_COURSE_MODE=simulator):
every answer is loaded with heldout.submitted() and compared with the solution's reference code.
- train_step: gu.gpt.build(seed=0, vocab 32, seq 8, d_model 16, 1 layer, 2 heads) and a second
  model (vocab 20, seq 6, d_model 24, 2 layers, 3 heads), SGD(lr=0.1, momentum=0.9), 4
  consecutive calls on batches of 4, 4, 4 and 1 sequences (two data seeds; one target set to
  token 0); returned loss (must be a float) and every parameter after each call, atol 1e-5.
- block_forward: gu.gpt.Block with every parameter randomised (0.5 * randn), (b, s, h, heads,
  config seq_len) = (2, 8, 16, 2, 8), (1, 5, 24, 3, 8), (3, 1, 12, 4, 4), (2, 7, 12, 1, 7),
  (2, 6, 16, 4, 6), (8, 8, 16, 2, 8); output and every parameter's gradient of (out * r).sum()
  against the reference, atol 1e-4, plus a look-ahead test (last token changed, earlier outputs
  compared).
- accumulate_step: the two models above, 3 calls of 3 micro-batches (2, seq): call 1 unpadded,
  calls 2 and 3 padded with -100 targets (16/5/12 and 7/16/10 real tokens for the first model,
  other counts for the second); one real target is token 0; loss and every parameter after each
  call, atol 1e-5.
What was seen: the 5 right answers agree everywhere (max differences below 1e-5). Wrong ones:
- train_step_float_targets: RuntimeError (expected target dtype Long) on every input.
- train_step_view_by_seq_len: ValueError (input batch 128 vs target batch 32) on every input.
- train_step_returns_perplexity: parameters identical, returned value exp(loss) (about 32.5 vs 3.48).
- train_step_parameters_generator_consumed: returned loss of call 1 right, parameters never move.
- block_forward_dot_T_on_4d: shape RuntimeError on all six block shapes.
- block_forward_float_mask_masked_fill: RuntimeError (masked_fill_ only supports boolean masks).
- block_forward_softmax_max_over_queries: outputs off by about 5 and gradients off on every shape
  with s > 1 (right for s = 1); the column maxima include later queries, so a tiny look-ahead
  (about 2e-6) also shows.
- block_forward_mask_sized_by_batch: raises where batch != seq and batch > 1, no masking (wrong
  values, looks ahead) for the batch of 1, right for (8, 8, 16, 2) where batch == seq.
- block_forward_mlp_before_attention: wrong values and gradients on every shape.
- block_forward_chunk_sequence_axis: raises (invalid view, or too few pieces for s = 1) on every shape.
- accumulate_step_lr_scaled_instead_of_loss: first call identical (loss and parameters); the second
  and third calls (other real-token counts) give other parameters; returned loss right.
- accumulate_step_count_nonzero_targets: wrong loss and parameters already in call 1 (a target of
  token 0 is not counted) and more so with padding (-100 counted).
- accumulate_step_enumerate_unpacked: AttributeError (model called on an int) on the first call.
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
        name="train_step_closure",
        exercise_id="primer_train_step",
        half="held2",
        correct=True,
        source=_PRE
        + """
def train_step(model, optimizer, tokens, targets):
    def closure():
        optimizer.zero_grad(set_to_none=True)
        out, _ = model(tokens)
        batch, seq, vocab = out.shape
        l = F.cross_entropy(out.reshape(batch * seq, vocab), targets.reshape(batch * seq))
        l.backward()
        return l

    loss = optimizer.step(closure)
    return loss.item()
""",
    ),
    Blind(
        name="train_step_model_loss_clear_after",
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
    value = float(loss)
    model.zero_grad()  # clean gradients for the next step
    return value
""",
    ),
    Blind(
        name="train_step_float_targets",
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause="The targets are cast to float (to match the logits' dtype), but F.cross_entropy needs integer class indices (a float target is read as class probabilities), so it raises: pass the int64 targets unchanged.",
        source=_PRE
        + """
def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    # logits are float32, so the targets should be too
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten().float())
    loss.backward()
    optimizer.step()
    return loss.item()
""",
        hints=("class indices",),
    ),
    Blind(
        name="train_step_view_by_seq_len",
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause="The logits are reshaped with view(-1, logits.size(1)), and size(1) is the sequence length (8), not the vocabulary (size(-1), 32), so the rows no longer match the flattened targets and the cross-entropy raises.",
        source=_PRE
        + """
def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.view(-1, logits.size(1)), targets.view(-1))
    loss.backward()
    optimizer.step()
    return loss.item()
""",
        hints=("flatten batch and sequence",),
    ),
    Blind(
        name="train_step_returns_perplexity",
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause="The step is right, but it returns the perplexity exp(loss) instead of the loss itself (loss.item()).",
        source=_PRE
        + """
def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    loss.backward()
    optimizer.step()
    return math.exp(loss.item())  # perplexity, easier to read
""",
        hints=("loss.item()",),
    ),
    Blind(
        name="train_step_parameters_generator_consumed",
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause="model.parameters() is a generator: torch.autograd.grad consumes it, so the later zip(params, grads) is empty, no .grad is ever set and optimizer.step() changes nothing; build a list of the parameters first.",
        source=_PRE
        + """
def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    params = model.parameters()
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    grads = torch.autograd.grad(loss, params)
    for p, g in zip(params, grads):
        p.grad = g
    optimizer.step()
    return loss.item()
""",
        hints=("does not store them",),
    ),
    # ---------------------------------------------------------------- block_forward
    Blind(
        name="block_forward_additive_mask_einsum",
        exercise_id="primer_block_forward",
        half="held2",
        correct=True,
        source=_PRE
        + """
def block_forward(block, x):
    B, T, C = x.shape
    cfg = block.attn.config
    nh, hd = cfg.n_heads, cfg.head_dim
    a = block.ln1(x)
    qkv = block.attn.qkv(a).view(B, T, 3, nh, hd)
    q, k, v = qkv.unbind(dim=2)  # each (B, T, nh, hd)
    att = torch.einsum("bqhd,bkhd->bhqk", q, k) * hd ** -0.5
    mask = torch.full((T, T), float("-inf"), device=x.device).triu(diagonal=1)
    att = torch.softmax(att + mask, dim=-1)
    heads = torch.einsum("bhqk,bkhd->bqhd", att, v).reshape(B, T, C)
    x = x + block.attn.proj(heads)
    hidden = F.gelu(block.mlp.fc1(block.ln2(x)))
    x = x + block.mlp.fc2(hidden)
    return x
""",
    ),
    Blind(
        name="block_forward_dot_T_on_4d",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause="k.T on a 4-d tensor reverses all four axes, (batch, heads, seq, d_head) -> (d_head, seq, heads, batch), instead of swapping the last two, so q @ k.T does not compute Q Kᵀ per head (a shape error for the lab's sizes): use k.transpose(-2, -1) or k.mT.",
        source=_PRE
        + """
def block_forward(block, x):
    b, s, h = x.shape
    nh = block.attn.config.n_heads
    dh = h // nh
    q, k, v = block.attn.qkv(block.ln1(x)).split(h, dim=-1)
    q = q.view(b, s, nh, dh).transpose(1, 2)
    k = k.view(b, s, nh, dh).transpose(1, 2)
    v = v.view(b, s, nh, dh).transpose(1, 2)
    scores = (q @ k.T) / math.sqrt(dh)
    future = torch.ones(s, s, dtype=torch.bool).triu(1)
    probs = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
    y = (probs @ v).transpose(1, 2).reshape(b, s, h)
    x = x + block.attn.proj(y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
        hints=("reverses all 4 axes",),
    ),
    Blind(
        name="block_forward_float_mask_masked_fill",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause="The causal mask is a float 0/1 matrix (torch.ones(s, s).triu(1)), but masked_fill only accepts a boolean mask, so it raises: build it with dtype=torch.bool (or compare it with 1).",
        source=_PRE
        + """
def block_forward(block, x):
    b, s, h = x.shape
    n_heads = block.attn.config.n_heads
    d_head = h // n_heads
    q, k, v = block.attn.qkv(block.ln1(x)).split(h, dim=-1)
    q, k, v = (t.view(b, s, n_heads, d_head).transpose(1, 2) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_head)
    future = torch.ones(s, s).triu(1)
    probs = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
    y = (probs @ v).transpose(1, 2).reshape(b, s, h)
    x = x + block.attn.proj(y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
        hints=("boolean mask",),
    ),
    Blind(
        name="block_forward_softmax_max_over_queries",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause="The hand-written stable softmax subtracts the maximum over dim -2 (each key's column, across the queries) instead of each row's maximum over dim -1, so the value subtracted varies along the row and the weights are no longer softmax(scores): the shift must be constant within each row.",
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
    scores = scores.masked_fill(future, float("-inf"))
    # numerically stable softmax: subtract the max first
    e = torch.exp(scores - scores.amax(dim=-2, keepdim=True))
    probs = e / e.sum(dim=-1, keepdim=True)
    y = (probs @ v).transpose(1, 2).reshape(b, s, h)
    x = x + block.attn.proj(y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
        hints=("over the keys",),
    ),
    Blind(
        name="block_forward_mask_sized_by_batch",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause="The causal mask is sized with x.size(0), the batch size, instead of x.size(1), the sequence length: it raises when the two differ and, for a batch of one sequence, the 1 x 1 mask hides nothing, so every token attends to later ones (right only when batch == seq).",
        source=_PRE
        + """
def block_forward(block, x):
    n = x.size(0)
    h = x.size(-1)
    n_heads = block.attn.config.n_heads
    d_head = h // n_heads
    q, k, v = block.attn.qkv(block.ln1(x)).split(h, dim=-1)
    q, k, v = (t.unflatten(-1, (n_heads, d_head)).transpose(1, 2) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_head)
    future = torch.ones(n, n, dtype=torch.bool).triu(1)
    probs = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
    y = (probs @ v).transpose(1, 2).flatten(2)
    x = x + block.attn.proj(y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
        hints=("the batch size",),
    ),
    Blind(
        name="block_forward_mlp_before_attention",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause="The two sub-layers run in the wrong order: the MLP residual x + mlp(ln2(x)) comes first and the attention second, while the block applies attention first, x + attn(ln1(x)), then the MLP on that result.",
        source=_PRE
        + """
def attention(block, a):
    b, s, h = a.shape
    n_heads = block.attn.config.n_heads
    d_head = h // n_heads
    q, k, v = block.attn.qkv(a).split(h, dim=-1)
    q, k, v = (t.view(b, s, n_heads, d_head).transpose(1, 2) for t in (q, k, v))
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    return block.attn.proj(y.transpose(1, 2).reshape(b, s, h))


def mlp(block, a):
    return block.mlp.fc2(F.gelu(block.mlp.fc1(a)))


def block_forward(block, x):
    x = x + mlp(block, block.ln2(x))
    x = x + attention(block, block.ln1(x))
    return x
""",
        hints=("ln1 normalises the block's input x itself",),
    ),
    Blind(
        name="block_forward_chunk_sequence_axis",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause="q, k and v are cut with chunk(3, dim=1), along the sequence axis, instead of the last (feature) axis of the qkv output, so each piece is a third of the tokens with all 3h features and the head split raises: chunk (or split) along dim=-1.",
        source=_PRE
        + """
def block_forward(block, x):
    b, s, h = x.shape
    n_heads = block.attn.config.n_heads
    d_head = h // n_heads
    q, k, v = block.attn.qkv(block.ln1(x)).chunk(3, dim=1)
    q, k, v = (t.reshape(b, s, n_heads, d_head).transpose(1, 2) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_head)
    future = torch.ones(s, s, dtype=torch.bool).triu(1)
    probs = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
    y = (probs @ v).transpose(1, 2).reshape(b, s, h)
    x = x + block.attn.proj(y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
        hints=("along the last dimension",),
    ),
    # ---------------------------------------------------------------- accumulate_step
    Blind(
        name="accumulate_step_model_mean_weighted",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=True,
        source=_PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    model.zero_grad(set_to_none=True)
    counts = [torch.count_nonzero(t != -100).item() for _, t in micro_batches]
    n_total = sum(counts)
    batch_loss = 0.0
    for (tokens, targets), n_i in zip(micro_batches, counts):
        _, mean_i = model(tokens, targets)  # mean over this micro-batch's real tokens
        share = mean_i * (n_i / n_total)
        share.backward()
        batch_loss += share.item()
    optimizer.step()
    return batch_loss
""",
    ),
    Blind(
        name="accumulate_step_divide_grads_after_loop",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=True,
        source=_PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    total_loss = 0.0
    n_real = 0
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        per_token = F.cross_entropy(logits.transpose(1, 2), targets, reduction="none")
        keep = targets != -100
        summed = per_token[keep].sum()
        summed.backward()
        total_loss += summed.item()
        n_real += int(keep.sum())
    with torch.no_grad():
        for p in model.parameters():  # a tied weight is listed once
            if p.grad is not None:
                p.grad /= n_real
    optimizer.step()
    return total_loss / n_real
""",
    ),
    Blind(
        name="accumulate_step_lr_scaled_instead_of_loss",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=False,
        cause="It back-propagates the summed losses and divides the learning rate by the real-token count N for the step instead of dividing the loss, so the gradients the step sees (and SGD's momentum buffer) are N times too large: the first call's update is right, but the momentum carried into a call with another N is wrongly weighted.",
        source=_PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    n_tokens = sum(int((t != -100).sum()) for _, t in micro_batches)
    total = 0.0
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        summed = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum")
        summed.backward()
        total += summed.item()
    # same update as dividing the loss by n_tokens: scale the step size instead
    lrs = [g["lr"] for g in optimizer.param_groups]
    for g in optimizer.param_groups:
        g["lr"] = g["lr"] / n_tokens
    optimizer.step()
    for g, lr in zip(optimizer.param_groups, lrs):
        g["lr"] = lr
    return total / n_tokens
""",
        hints=("divide the summed losses by N",),
    ),
    Blind(
        name="accumulate_step_count_nonzero_targets",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=False,
        cause="The real tokens are counted with targets.count_nonzero(), which counts every target that is not 0: the -100 padding is counted as real and real targets equal to token 0 are not, so the denominator is wrong (count targets != -100).",
        source=_PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    n_tokens = sum(int(targets.count_nonzero()) for _, targets in micro_batches)
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
        hints=("a token id of 0 is a real token",),
    ),
    Blind(
        name="accumulate_step_enumerate_unpacked",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=False,
        cause="The loop is for tokens, targets in enumerate(micro_batches), so tokens is the index and targets the whole (tokens, targets) pair: the model is called on an int and it raises; unpack as for i, (tokens, targets) in enumerate(...) or drop enumerate.",
        source=_PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    n_tokens = 0
    for _, t in micro_batches:
        n_tokens += int((t != -100).sum())
    total = 0.0
    for tokens, targets in enumerate(micro_batches):
        logits, _ = model(tokens)
        summed = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum")
        loss = summed / n_tokens
        loss.backward()
        total += loss.item()
    optimizer.step()
    return total
""",
        hints=("is the Python int 0",),
    ),
]
