"""Blind held-out round lab08b_r7 (held2), written 2026-11-29 ~06:15 UTC by a helper session
that never opened the checker, tests/test_* or gpu_utils/exercises/.

Read: solutions/08b_pytorch_primer_lab.ipynb code cells (the reference answers),
gpu_utils/many_gpus/gpt.py (gu.gpt: Block, GPT, build), tests/heldout/__init__.py, the docstring
and first entries of tests/heldout/lab08b_r6.py (format only) and /tmp/blind/causes_lab08b.txt
(earlier causes, all avoided).

Verification (/tmp/lab08b_r7/verify.py, GPU_COURSE_MODE=simulator): every answer is loaded with
heldout.submitted() and compared with the reference solution.
- train_step: gu.gpt.build(seed=0, vocab 32, seq 8, d_model 16, 1 layer, 2 heads) and a second
  model (vocab 20, seq 6, d_model 24, 2 layers, 3 heads), SGD(lr=0.1, momentum=0.9), 4
  consecutive calls on batches of 4, 4, 4 and 1 sequences; returned loss and every parameter
  after each call, atol 1e-5.
- block_forward: blocks with every parameter randomised (torch.randn), shapes (b, s, h, heads) =
  (2, 8, 16, 2), (1, 5, 24, 3), (3, 1, 12, 4), (2, 7, 12, 1); output and every parameter's
  gradient of (out * r).sum(), atol 1e-4.
- accumulate_step: the two models above, 2 calls of 3 micro-batches (2, seq): call 1 unpadded,
  call 2 padded (-100 targets) to 16/5/12 real tokens, then a third call with other padding;
  returned loss and every parameter after each call, atol 1e-5.
Right answers agree everywhere; each wrong one differs (or raises) on at least one of these
inputs, as its cause says.
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
        name="train_step_vocab_dim1_zero_after",
        exercise_id="primer_train_step",
        half="held2",
        correct=True,
        source=_PRE
        + """
def train_step(model, optimizer, tokens, targets):
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.transpose(1, 2), targets)
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return loss.item()
""",
    ),
    Blind(
        name="train_step_model_loss_model_zero_grad",
        exercise_id="primer_train_step",
        half="held2",
        correct=True,
        source=_PRE
        + """
def train_step(model, optimizer, tokens, targets):
    model.zero_grad(set_to_none=True)
    _, loss = model(tokens, targets)
    loss.backward()
    optimizer.step()
    value = loss.detach().cpu().item()
    return value
""",
    ),
    Blind(
        name="train_step_forward_on_targets",
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause="The model is run on the targets (model(targets)) instead of the input tokens, so each position predicts from the next token and is scored against that same token.",
        source=_PRE
        + """
def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(targets)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    loss.backward()
    optimizer.step()
    return loss.item()
""",
        hints=("tokens and targets were swapped",),
    ),
    Blind(
        name="train_step_hardcoded_32_tokens",
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause="The summed cross-entropy is divided by a hard-coded 32 (the example's 4 x 8 positions) instead of the batch's number of positions, so any other batch size gets a wrong scale (a batch of 1 sequence: 4 times too small).",
        source=_PRE
        + """
def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    summed = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum")
    loss = summed / 32
    loss.backward()
    optimizer.step()
    return loss.item()
""",
        hints=("0.25 times",),
    ),
    Blind(
        name="train_step_logp_fancy_index",
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause="logp[..., targets] indexes the vocabulary with the whole (batch, seq) targets tensor, so every position is scored against every target of the batch (a (b, s, b, s) tensor) instead of its own: gather with targets.unsqueeze(-1).",
        source=_PRE
        + """
def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    logp = F.log_softmax(logits, dim=-1)
    loss = -logp[..., targets].mean()
    loss.backward()
    optimizer.step()
    return loss.item()
""",
        hints=("every target of the batch",),
    ),
    Blind(
        name="train_step_item_before_backward",
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause="The loss is turned into a Python number with .item() before backward(), so there is no tensor to call backward() on (an AttributeError): call backward() on the tensor, .item() only for the return.",
        source=_PRE
        + """
def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten()).item()
    loss.backward()
    optimizer.step()
    return loss
""",
        hints=("Python float",),
    ),
    # ---------------------------------------------------------------- block_forward
    Blind(
        name="block_head_loop_additive_mask",
        exercise_id="primer_block_forward",
        half="held2",
        correct=True,
        source=_PRE
        + """
def block_forward(block, x):
    b, s, h = x.shape
    n_heads = block.attn.config.n_heads
    d = h // n_heads
    qkv = block.attn.qkv(block.ln1(x))
    q, k, v = qkv[..., :h], qkv[..., h : 2 * h], qkv[..., 2 * h :]
    mask = torch.full((s, s), float("-inf")).triu(1)
    heads = []
    for i in range(n_heads):
        sl = slice(i * d, (i + 1) * d)
        scores = q[..., sl] @ k[..., sl].transpose(-2, -1) / d**0.5 + mask
        heads.append(torch.softmax(scores, dim=-1) @ v[..., sl])
    x = x + block.attn.proj(torch.cat(heads, dim=-1))
    hidden = F.gelu(block.mlp.fc1(block.ln2(x)))
    return x + block.mlp.fc2(hidden)
""",
    ),
    Blind(
        name="block_einsum_unbind_layer_norm",
        exercise_id="primer_block_forward",
        half="held2",
        correct=True,
        source=_PRE
        + """
def block_forward(block, x):
    b, s, h = x.shape
    nh = block.attn.config.n_heads
    dh = h // nh
    a = F.layer_norm(x, (h,), block.ln1.weight, block.ln1.bias, block.ln1.eps)
    q, k, v = block.attn.qkv(a).view(b, s, 3, nh, dh).unbind(dim=2)
    scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(dh)
    allowed = torch.tril(torch.ones(s, s, dtype=torch.bool))
    scores = scores.masked_fill(~allowed, torch.finfo(scores.dtype).min)
    y = torch.einsum("bhqk,bkhd->bqhd", scores.softmax(-1), v).reshape(b, s, h)
    x = x + block.attn.proj(y)
    m = F.layer_norm(x, (h,), block.ln2.weight, block.ln2.bias, block.ln2.eps)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(m)))
""",
    ),
    Blind(
        name="block_layernorm_over_sequence",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause="The hand-written LayerNorm takes the mean and variance over dim 1 (the sequence positions) instead of the last dim (each token's features), so every token is normalised with statistics of the whole sequence, later tokens included.",
        source=_PRE
        + """
def layer_norm(ln, x):
    mu = x.mean(dim=1, keepdim=True)
    var = x.var(dim=1, keepdim=True, unbiased=False)
    return (x - mu) / torch.sqrt(var + ln.eps) * ln.weight + ln.bias


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
        submit="block_forward",
        hints=("over its d_model features",),
    ),
    Blind(
        name="block_softmax_sum_no_keepdim",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause="The hand-written softmax divides by exp(scores).sum(-1) without keepdim=True, so the (batch, heads, seq) row sums do not line up with the (batch, heads, seq, seq) scores: a shape error (or, where sizes happen to match, division by the wrong rows' sums).",
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
    e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    probs = e / e.sum(dim=-1)
    y = (probs @ v).transpose(1, 2).reshape(b, s, h)
    x = x + block.attn.proj(y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
        hints=("keepdim=True",),
    ),
    Blind(
        name="block_scale_precedence",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause="The scale d_head ** -1/2 parses as (d_head ** -1) / 2 = 1/(2 d_head), not d_head ** -0.5 = 1/sqrt(d_head), so the scores are scaled too much and the softmax is too flat.",
        source=_PRE
        + """
def block_forward(block, x):
    b, s, h = x.shape
    n_heads = block.attn.config.n_heads
    d_head = h // n_heads
    q, k, v = block.attn.qkv(block.ln1(x)).split(h, dim=-1)
    q, k, v = (t.view(b, s, n_heads, d_head).transpose(1, 2) for t in (q, k, v))
    scores = (q @ k.transpose(-2, -1)) * d_head ** -1 / 2
    future = torch.ones(s, s, dtype=torch.bool).triu(1)
    probs = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
    y = (probs @ v).transpose(1, 2).reshape(b, s, h)
    x = x + block.attn.proj(y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
        hints=("1/sqrt(d_head)",),
    ),
    Blind(
        name="block_attention_over_flattened_batch",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause="The batch is flattened into one sequence of b*s tokens for the attention, so with a causal mask over all of them each sequence's tokens also attend to the earlier sequences' tokens (right only for a batch of one sequence).",
        source=_PRE
        + """
def block_forward(block, x):
    b, s, h = x.shape
    n_heads = block.attn.config.n_heads
    d_head = h // n_heads
    flat = x.reshape(b * s, h)
    q, k, v = block.attn.qkv(block.ln1(flat)).split(h, dim=-1)
    q, k, v = (t.view(b * s, n_heads, d_head).transpose(0, 1) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_head)
    future = torch.ones(b * s, b * s, dtype=torch.bool).triu(1)
    probs = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
    y = (probs @ v).transpose(0, 1).reshape(b * s, h)
    flat = flat + block.attn.proj(y)
    flat = flat + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(flat))))
    return flat.view(b, s, h)
""",
        hints=("across the sequences of the batch",),
    ),
    Blind(
        name="block_proj_weight_not_transposed",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause="The output projection is written by hand as y @ proj.weight + proj.bias, but nn.Linear computes y @ weight.T + bias; the square h x h weight hides the missing transpose (no shape error), so the heads are projected with the transposed matrix.",
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
    x = x + (y @ block.attn.proj.weight + block.attn.proj.bias)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
        hints=("without the transpose",),
    ),
    # ---------------------------------------------------------------- accumulate_step
    Blind(
        name="accumulate_concat_one_pass",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=True,
        source=_PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    tokens = torch.cat([t for t, _ in micro_batches], dim=0)
    targets = torch.cat([y for _, y in micro_batches], dim=0)
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=-100)
    loss.backward()
    optimizer.step()
    return loss.item()
""",
    ),
    Blind(
        name="accumulate_mean_weighted_by_share",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=True,
        source=_PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    counts = [int(y.ne(-100).sum()) for _, y in micro_batches]
    n_total = sum(counts)
    optimizer.zero_grad(set_to_none=True)
    result = 0.0
    for (tokens, targets), n in zip(micro_batches, counts):
        _, mean_loss = model(tokens, targets)
        share = mean_loss * (n / n_total)
        share.backward()
        result += share.item()
    optimizer.step()
    return result
""",
    ),
    Blind(
        name="accumulate_backward_after_loop",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=False,
        cause="loss.backward() is dedented out of the loop, so it runs once, on the last micro-batch's share only: the first micro-batches add nothing to the gradients the step uses (the returned loss is still right).",
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
        total += loss.item()
    loss.backward()
    optimizer.step()
    return total
""",
        hints=("last micro-batch alone",),
    ),
    Blind(
        name="accumulate_counts_padding",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=False,
        cause="The token count uses targets == -100, which counts the padded positions instead of the real tokens (!= -100): with no padding it divides by 0 (inf/NaN), otherwise by the wrong number.",
        source=_PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    n_tokens = sum(int((targets == -100).sum()) for _, targets in micro_batches)
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
        hints=("inf or NaN",),
    ),
    Blind(
        name="accumulate_concat_along_sequence",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=False,
        cause="The micro-batches are concatenated along dim 1 (the sequence) instead of dim 0 (the batch), which makes 2 sequences of 24 tokens, longer than the model's seq_len (an error): cat the sequences along dim 0.",
        source=_PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    tokens = torch.cat([t for t, _ in micro_batches], dim=1)
    targets = torch.cat([y for _, y in micro_batches], dim=1)
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    loss.backward()
    optimizer.step()
    return loss.item()
""",
        hints=("along the batch",),
    ),
]
