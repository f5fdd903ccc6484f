"""Blind held-out round lab08b_r15 (held2), written 2026-11-29 ~15:28-15:31 UTC (date -u) by a
helper session that never opened the checker, gpu_utils/exercises/, tests/test_*,
tests/heldout/report.py, any FAQ, any causes list or any other round's answers.

Read: labs/08b_pytorch_primer_lab.ipynb (the exercise texts), solutions/08b_pytorch_primer_lab.ipynb
(reference answers), notebooks/08b_pytorch_primer.ipynb (section 3's markdown on accumulation and
token weighting), gpu_utils/many_gpus/gpt.py (gu.gpt: Block, CausalSelfAttention, MLP, GPT.forward
returning (logits, None) without targets and the mean cross-entropy with them), tests/heldout/
__init__.py, and the docstring and first two entries of tests/heldout/lab08b_r10.py (format only).
The mistakes were chosen as the most frequent ones expected from a first-time class, one each.

Verification: /tmp/lab08b_r15/verify.py, run from tests/ with GPU_COURSE_MODE=simulator and torch
2.13 (CPU); each answer is loaded with heldout.submitted() and compared with the solution's code
(output in /tmp/lab08b_r15/out.txt).
- train_step: gu.gpt.build(seed=0) with (vocab 32, seq 8, d_model 16, 1 layer, 2 heads) and (vocab
  20, seq 6, d_model 24, 2 layers, 3 heads), SGD(lr=0.1, momentum=0.9), two data seeds, 4 calls on
  batches of 4, 4, 4 and 1 sequences (one target = token 0); returned value (type and number) and
  every parameter after each call.
- block_forward: gu.gpt.Block with every parameter 0.5 * randn, (b, s, h, heads) = (2, 8, 16, 2),
  (1, 5, 24, 3), (3, 1, 12, 4), (2, 7, 12, 1), (2, 6, 16, 4), (8, 8, 16, 2); output and every
  parameter's gradient of (out * r).sum(); look-ahead test (last token moved by a random vector,
  earlier outputs compared); the caller's x checked unchanged.
- accumulate_step: the same two models, 3 calls of 3 micro-batches of shape (2, seq), real-token
  counts [16,16,16], [16,5,12], [7,16,10] (model 1) and [12,12,12], [12,5,12], [7,12,10] (model 2),
  padding = -100 at the end of rows; loss and every parameter after each call.
What was seen: the 5 right answers agree everywhere (loss to 4 decimals, parameters bit-equal for
train/accumulate, block outputs within 6e-6 and gradients within 5e-5). Wrong ones:
- train_step_no_zero_grad: call 1 exact; from call 2 parameters off (0.025 -> 0.24), losses from
  call 3 off.
- train_step_sum_reduction: loss 111.4 vs 3.48, x batch*seq (32 and 8 on model 1, 24 and 6 on
  model 2, batches of 4 and 1) on call 1; parameters off by 0.8-10.
- train_step_cross_entropy_not_flattened: RuntimeError "Expected target size [4, 32], got [4, 8]"
  on the first call, both models.
- train_step_shifts_targets_again: loss slightly off (3.4790 vs 3.4823) and parameters off
  (2e-2 .. 1.2e-1) on every call.
- train_step_returns_tensor: numbers and parameters exact, but the value returned is a Tensor.
- block_forward_scale_by_d_model: outputs off by 0.9-1.6 for heads > 1 and s > 1; exact for
  (3, 1, 12, 4) (one token) and (2, 7, 12, 1) (one head); no look-ahead.
- block_forward_sdpa_not_causal: outputs off by 4-10 and looks ahead (0.28-4.2) for every s > 1;
  right for s = 1.
- block_forward_heads_merged_without_transpose: outputs off by 10-21 (and earlier outputs move
  with the last token) for heads > 1 and s > 1; exact with one head or one token.
- block_forward_residual_from_normalised_x: outputs off by 4-16 on every shape, including s = 1;
  no look-ahead.
- accumulate_step_divides_by_micro_batches: call 1 (equal counts) exact; padded calls: loss off
  by ~0.01 and parameters by 1-2e-2.
- accumulate_step_counts_padding: call 1 exact; padded calls: loss 2.36 vs 3.43, parameters off
  by 5e-3 .. 1e-2.
- accumulate_step_zero_grad_in_loop: returned loss right on call 1, parameters off from call 1
  (1.7e-2 .. 7.8e-2).
- accumulate_step_step_per_micro_batch: loss and parameters off from call 1 (5e-2 .. 2.8e-1).
"""

from heldout import Blind

_PRE = """
import math
import torch
import torch.nn.functional as F
"""

ANSWERS = [
    # ------------------------------------------------------------------ primer_train_step
    Blind(
        name="train_step_model_loss_zero_after_step",
        exercise_id="primer_train_step",
        half="held2",
        correct=True,
        source=_PRE
        + """
def train_step(model, optimizer, tokens, targets):
    _, loss = model(tokens, targets)  # the model's own mean cross-entropy
    loss.backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)  # clean gradients for the next step
    return float(loss.detach())
""",
    ),
    Blind(
        name="train_step_log_softmax_gather",
        exercise_id="primer_train_step",
        half="held2",
        correct=True,
        source=_PRE
        + """
def train_step(model, optimizer, tokens, targets):
    model.zero_grad()
    logits, _ = model(tokens)
    log_probs = F.log_softmax(logits, dim=-1)                      # (batch, seq, vocab)
    nll = -log_probs.gather(-1, targets.unsqueeze(-1)).squeeze(-1)  # (batch, seq)
    loss = nll.mean()
    loss.backward()
    optimizer.step()
    loss_value = loss.detach().item()
    return loss_value
""",
    ),
    Blind(
        name="train_step_no_zero_grad",
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause="The gradients are never cleared (no optimizer.zero_grad()), so from the second "
        "step on backward() adds this step's gradients to all the previous steps' ones.",
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
        name="train_step_sum_reduction",
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause="The loss uses reduction='sum' instead of the mean over every position, so the "
        "returned loss and the gradients are batch*seq times too large.",
        source=_PRE
        + """
def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1), reduction="sum")
    loss.backward()
    optimizer.step()
    return loss.item()
""",
        hints=("The loss was a sum",),
    ),
    Blind(
        name="train_step_cross_entropy_not_flattened",
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause="F.cross_entropy is given the (batch, seq, vocab) logits and (batch, seq) targets "
        "without flattening them, so it takes dim 1 (seq) as the class dimension and raises a "
        "shape error instead of computing the loss.",
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
    Blind(
        name="train_step_shifts_targets_again",
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause="The targets are shifted once more (logits[:, :-1] against targets[:, 1:]) although "
        "the shift is already done, so each position is scored against the token two ahead and "
        "the last position is left out of the loss.",
        source=_PRE
        + """
def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    # next-token prediction: position t predicts token t+1
    pred = logits[:, :-1, :]
    nxt = targets[:, 1:]
    loss = F.cross_entropy(pred.reshape(-1, pred.size(-1)), nxt.reshape(-1))
    loss.backward()
    optimizer.step()
    return loss.item()
""",
        hints=("shifted again",),
    ),
    Blind(
        name="train_step_returns_tensor",
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause="It returns the loss tensor itself (still attached to the graph) instead of a "
        "Python number from loss.item().",
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
    # ------------------------------------------------------------------ primer_block_forward
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
    hs = C // nh

    def heads(t):
        return t.reshape(B, T, nh, hs).permute(0, 2, 1, 3)  # (B, nh, T, hs)

    a = block.ln1(x)
    q, k, v = block.attn.qkv(a).chunk(3, dim=-1)
    att = F.scaled_dot_product_attention(heads(q), heads(k), heads(v), is_causal=True)
    att = att.permute(0, 2, 1, 3).reshape(B, T, C)
    x = x + block.attn.proj(att)
    m = block.ln2(x)
    x = x + block.mlp.fc2(F.gelu(block.mlp.fc1(m)))
    return x
""",
    ),
    Blind(
        name="block_forward_einsum_tril_slices",
        exercise_id="primer_block_forward",
        half="held2",
        correct=True,
        source=_PRE
        + """
def block_forward(block, x):
    b, s, h = x.shape
    n_heads = block.attn.config.n_heads
    d_head = h // n_heads
    qkv = block.attn.qkv(block.ln1(x))
    q = qkv[..., :h].reshape(b, s, n_heads, d_head).transpose(1, 2)
    k = qkv[..., h : 2 * h].reshape(b, s, n_heads, d_head).transpose(1, 2)
    v = qkv[..., 2 * h :].reshape(b, s, n_heads, d_head).transpose(1, 2)
    q = q * d_head ** -0.5
    scores = torch.einsum("bhqd,bhkd->bhqk", q, k)
    allowed = torch.tril(torch.ones(s, s, dtype=torch.bool, device=x.device))
    scores = scores.masked_fill(~allowed, float("-inf"))
    weights = F.softmax(scores, dim=-1)
    y = torch.einsum("bhqk,bhkd->bhqd", weights, v)
    y = y.transpose(1, 2).contiguous().view(b, s, h)
    attn_out = block.attn.proj(y)
    x = x + attn_out
    hidden = F.gelu(block.mlp.fc1(block.ln2(x)))
    mlp_out = block.mlp.fc2(hidden)
    return x + mlp_out
""",
    ),
    Blind(
        name="block_forward_scale_by_d_model",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause="The scores are divided by sqrt(d_model) instead of sqrt(d_head), so the softmax is "
        "too flat (wrong outputs whenever n_heads > 1 and seq > 1).",
        source=_PRE
        + """
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
        name="block_forward_sdpa_not_causal",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause="F.scaled_dot_product_attention is called without is_causal=True, so the attention "
        "has no causal mask and every position looks at later tokens.",
        source=_PRE
        + """
def block_forward(block, x):
    b, s, h = x.shape
    nh = block.attn.config.n_heads
    q, k, v = block.attn.qkv(block.ln1(x)).split(h, dim=-1)
    q = q.view(b, s, nh, h // nh).transpose(1, 2)
    k = k.view(b, s, nh, h // nh).transpose(1, 2)
    v = v.view(b, s, nh, h // nh).transpose(1, 2)
    y = F.scaled_dot_product_attention(q, k, v)
    y = y.transpose(1, 2).reshape(b, s, h)
    x = x + block.attn.proj(y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
        hints=("without the causal mask",),
    ),
    Blind(
        name="block_forward_heads_merged_without_transpose",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause="The heads' outputs (batch, heads, seq, d_head) are reshaped straight to (batch, seq, "
        "d_model) without transposing heads and seq back first, which mixes positions and heads "
        "(right only with one head or one token).",
        source=_PRE
        + """
def block_forward(block, x):
    b, s, h = x.shape
    n_heads = block.attn.config.n_heads
    d_head = h // n_heads
    q, k, v = block.attn.qkv(block.ln1(x)).split(h, dim=-1)
    q, k, v = (t.view(b, s, n_heads, d_head).transpose(1, 2) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_head)
    mask = torch.tril(torch.ones(s, s))
    scores = scores.masked_fill(mask == 0, float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    y = (probs @ v).reshape(b, s, h)
    x = x + block.attn.proj(y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
        hints=("transpose(1, 2)",),
    ),
    Blind(
        name="block_forward_residual_from_normalised_x",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause="The residual connections add the LayerNorm's output instead of the block's input "
        "(x = ln1(x) + attn(ln1(x)) rather than x + attn(ln1(x)), likewise for ln2 and the MLP).",
        source=_PRE
        + """
def block_forward(block, x):
    b, s, h = x.shape
    n_heads = block.attn.config.n_heads
    d_head = h // n_heads
    x = block.ln1(x)
    q, k, v = block.attn.qkv(x).split(h, dim=-1)
    q, k, v = (t.view(b, s, n_heads, d_head).transpose(1, 2) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_head)
    future = torch.ones(s, s, dtype=torch.bool).triu(1)
    probs = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
    y = (probs @ v).transpose(1, 2).reshape(b, s, h)
    x = x + block.attn.proj(y)
    x = block.ln2(x)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(x)))
""",
        hints=("added the normalised input",),
    ),
    # ------------------------------------------------------------------ primer_accumulate_step
    Blind(
        name="accumulate_step_mean_times_share",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=True,
        source=_PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    counts = [(t != -100).sum().item() for _, t in micro_batches]
    N = sum(counts)
    total = 0.0
    for (tokens, targets), n in zip(micro_batches, counts):
        _, loss = model(tokens, targets)  # mean over this micro-batch's n real tokens
        part = loss * (n / N)             # = its summed loss / N
        part.backward()
        total += part.item()
    optimizer.step()
    optimizer.zero_grad()
    return total
""",
    ),
    Blind(
        name="accumulate_step_divides_by_micro_batches",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=False,
        cause="Each micro-batch's mean loss is divided by the number of micro-batches, which "
        "weights every micro-batch equally instead of every real token (wrong as soon as the "
        "micro-batches hold different numbers of real tokens).",
        source=_PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    m = len(micro_batches)
    total = 0.0
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten()) / m
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
        cause="The summed loss is divided by every target position (targets.numel()), padding "
        "included, instead of by the number of real (not -100) tokens.",
        source=_PRE
        + """
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
        name="accumulate_step_zero_grad_in_loop",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=False,
        cause="optimizer.zero_grad() is called inside the loop, before each micro-batch's backward, "
        "so the gradients do not add up and the step sees only the last micro-batch's share.",
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
        name="accumulate_step_step_per_micro_batch",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=False,
        cause="optimizer.step() is called inside the loop after every micro-batch's backward, "
        "so the call takes one step per micro-batch on partial gradients instead of one step "
        "on the whole batch's gradient.",
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
]
