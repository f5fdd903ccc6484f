"""Held-out answers to lab 08b (PyTorch primer), second round, all in the ``held2`` half.

Written blind on 2026-11-28 by a helper, from the lab text (labs/08b_pytorch_primer_lab.ipynb),
the chapter (notebooks/08b_pytorch_primer.ipynb), the reference solutions' code cells
(solutions/08b_pytorch_primer_lab.ipynb) and the public helpers (gpu_utils/many_gpus/gpt.py) only, without
the checker, its tests or any other corpus's sources in view (only the earlier writers' list of
cause sentences, so as not to repeat their mistakes). Each ``source`` is one lab cell, as a learner
could write it; the check cell submits the cell's last top-level ``def``.

Verified with a scratch script outside the repository, with torch on the CPU as the oracle (the
reference solutions' code copied into it): every cell runs; on small ``gu.gpt`` models (several
seeds and shapes, SGD with momentum, three steps; three micro-batches with and without padding)
and on ``gu.gpt.Block`` s with all parameters randomised, every correct answer matches the oracle
in returned loss, in the gradients ``optimizer.step()`` sees, in the parameters after the steps
and, for the block, in outputs and parameter gradients (to float32 round-off); every wrong answer
differs from the oracle on at least one of those inputs (or raises where the oracle does not).
"""

from heldout import Blind

PRE = "import math\n\nimport torch\nimport torch.nn.functional as F\n\n"

TRAIN = "primer_train_step"
BLOCK = "primer_block_forward"
ACC = "primer_accumulate_step"

ANSWERS = [
    # ------------------------------------------------------------------ 1. train_step
    Blind(
        name="kdim_cross_entropy_model_zero_grad",
        exercise_id=TRAIN,
        half="held2",
        correct=True,
        source=PRE
        + """
def train_step(model, optimizer, tokens, targets):
    model.zero_grad(set_to_none=True)
    logits, _ = model(tokens)
    # cross_entropy takes the classes on dim 1: (batch, vocab, seq) against (batch, seq)
    loss = F.cross_entropy(logits.transpose(1, 2), targets)
    loss.backward()
    optimizer.step()
    return float(loss.detach())
""",
    ),
    Blind(
        name="sum_over_numel_grads_to_none",
        exercise_id=TRAIN,
        half="held2",
        correct=True,
        source=PRE
        + """
def _clear(model):
    for p in model.parameters():
        p.grad = None


def train_step(model, optimizer, tokens, targets):
    _clear(model)
    logits, _ = model(tokens)
    vocab = logits.size(-1)
    flat_targets = targets.reshape(-1)
    total = F.cross_entropy(logits.reshape(-1, vocab), flat_targets, reduction="sum")
    loss = total / flat_targets.numel()
    loss.backward(retain_graph=False)
    optimizer.step()
    value = loss.item()
    return value
""",
    ),
    Blind(
        name="nll_loss_on_raw_logits",
        exercise_id=TRAIN,
        half="held2",
        correct=False,
        hints=("no softmax in it",),
        cause="It calls F.nll_loss on the raw logits, which only negates the target's logit; "
        "the log-softmax is missing, so use F.cross_entropy (or log_softmax before nll_loss).",
        source=PRE
        + """
def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    loss = F.nll_loss(logits.flatten(0, 1), targets.flatten())
    loss.backward()
    optimizer.step()
    return loss.item()
""",
    ),
    Blind(
        name="logits_flattened_seq_major",
        exercise_id=TRAIN,
        half="held2",
        correct=False,
        hints=("not their target", "flattened position-major"),
        cause="The logits are transposed to (seq, batch, vocab) before flattening while the "
        "targets are flattened batch-major, so each position's logits are scored against "
        "another sequence's target.",
        source=PRE
        + """
def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    per_position = logits.transpose(0, 1).reshape(-1, logits.shape[-1])
    loss = F.cross_entropy(per_position, targets.reshape(-1))
    loss.backward()
    optimizer.step()
    return loss.item()
""",
    ),
    Blind(
        name="detached_logits_requires_grad",
        exercise_id=TRAIN,
        half="held2",
        correct=False,
        hints=("no gradient reached the logits",),
        cause="The logits are detached (then marked requires_grad), which cuts the graph: "
        "backward never reaches the model's parameters, so their gradients stay empty and "
        "the step changes nothing.",
        source=PRE
        + """
def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    logits = logits.detach().requires_grad_(True)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    loss.backward()
    optimizer.step()
    return loss.item()
""",
    ),
    Blind(
        name="returns_loss_after_update",
        exercise_id=TRAIN,
        half="held2",
        correct=False,
        hints=("the loss of that batch before the step",),
        cause="It returns the loss recomputed with the updated model after optimizer.step() "
        "instead of the loss this step's backward was computed from.",
        source=PRE
        + """
def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    loss.backward()
    optimizer.step()
    with torch.no_grad():
        _, new_loss = model(tokens, targets)
    return new_loss.item()
""",
    ),
    Blind(
        name="manual_sgd_update",
        exercise_id=TRAIN,
        half="held2",
        correct=False,
        hints=("not through the optimizer",),
        cause="It updates the parameters by hand (p -= lr * grad) instead of calling "
        "optimizer.step(), so the optimizer never steps and its momentum is ignored.",
        source=PRE
        + """
def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    loss.backward()
    lr = optimizer.param_groups[0]["lr"]
    with torch.no_grad():
        for p in model.parameters():
            if p.grad is not None:
                p -= lr * p.grad
    return loss.item()
""",
    ),
    Blind(
        name="backward_called_twice",
        exercise_id=TRAIN,
        half="held2",
        correct=False,
        hints=("`backward()` ran that many times",),
        cause="loss.backward() runs twice (the first with retain_graph=True), and gradients "
        "add up in .grad, so the step sees twice the gradients.",
        source=PRE
        + """
def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    loss.backward(retain_graph=True)
    grad_norm = sum(p.grad.norm() ** 2 for p in model.parameters() if p.grad is not None)
    print(f"loss {loss.item():.4f} grad norm {grad_norm.sqrt().item():.4f}")
    loss.backward()
    optimizer.step()
    return loss.item()
""",
    ),
    Blind(
        name="label_smoothing_added",
        exercise_id=TRAIN,
        half="held2",
        correct=False,
        hints=("targets smoothed by 0.1",),
        cause="It adds label_smoothing=0.1 to the cross-entropy, which changes the loss and "
        "its gradients: the task asks for the plain mean cross-entropy.",
        source=PRE
        + """
def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), label_smoothing=0.1)
    loss.backward()
    optimizer.step()
    return loss.item()
""",
    ),
    Blind(
        name="loss_in_bfloat16",
        exercise_id=TRAIN,
        half="held2",
        correct=False,
        hints=("computed in bfloat16",),
        cause="The logits are cast to bfloat16 before the cross-entropy, so the loss and the "
        "gradients flowing back are rounded to 8 bits of mantissa: compute the loss in float32.",
        source=PRE
        + """
def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.flatten(0, 1).to(torch.bfloat16), targets.flatten())
    loss.backward()
    optimizer.step()
    return loss.item()
""",
    ),
    # ------------------------------------------------------------------ 2. block_forward
    Blind(
        name="sliced_weights_scaled_q_where_mask",
        exercise_id=BLOCK,
        half="held2",
        correct=True,
        source=PRE
        + """
def block_forward(block, x):
    batch, seq, width = x.shape
    heads = block.attn.config.n_heads
    dh = width // heads
    xn = block.ln1(x)
    w, bias = block.attn.qkv.weight, block.attn.qkv.bias
    q = F.linear(xn, w[:width], bias[:width])
    k = F.linear(xn, w[width : 2 * width], bias[width : 2 * width])
    v = F.linear(xn, w[2 * width :], bias[2 * width :])

    def heads_first(t):
        return t.reshape(batch, seq, heads, dh).permute(0, 2, 1, 3)

    q, k, v = heads_first(q) * dh**-0.5, heads_first(k), heads_first(v)
    scores = torch.matmul(q, k.transpose(2, 3))
    allowed = torch.tril(torch.ones(seq, seq, dtype=torch.bool, device=x.device))
    scores = torch.where(allowed, scores, torch.full_like(scores, float("-inf")))
    attn = torch.softmax(scores, dim=3)
    out = torch.matmul(attn, v).permute(0, 2, 1, 3).reshape(batch, seq, width)
    h = x + block.attn.proj(out)
    m = block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(h))))
    return h + m
""",
    ),
    Blind(
        name="loop_over_query_positions",
        exercise_id=BLOCK,
        half="held2",
        correct=True,
        source=PRE
        + """
def block_forward(block, x):
    b, s, h = x.shape
    nh = block.attn.config.n_heads
    dh = h // nh
    q, k, v = block.attn.qkv(block.ln1(x)).chunk(3, dim=-1)
    q = q.view(b, s, nh, dh)
    k = k.view(b, s, nh, dh)
    v = v.view(b, s, nh, dh)
    rows = []
    for t in range(s):  # position t sees keys 0..t only: causal by construction
        sc = torch.einsum("bnd,bjnd->bnj", q[:, t], k[:, : t + 1]) / math.sqrt(dh)
        w = sc.softmax(dim=-1)
        rows.append(torch.einsum("bnj,bjnd->bnd", w, v[:, : t + 1]).reshape(b, h))
    y = torch.stack(rows, dim=1)
    x = x + block.attn.proj(y)
    hidden = F.gelu(block.mlp.fc1(block.ln2(x)))
    return x + block.mlp.fc2(hidden)
""",
    ),
    Blind(
        name="mask_hides_diagonal",
        exercise_id=BLOCK,
        half="held2",
        correct=False,
        hints=("NaN at position 0",),
        cause="The mask is triu(0), which also hides the diagonal: a token cannot attend to "
        "itself and the first row is all -inf (NaN after softmax); mask only j > i with triu(1).",
        source=PRE
        + """
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
    ),
    Blind(
        name="heads_merged_without_transpose",
        exercise_id=BLOCK,
        half="held2",
        correct=False,
        hints=("without `transpose(1, 2)`",),
        cause="The heads are merged by reshaping (batch, heads, seq, d_head) straight to "
        "(batch, seq, h) without transposing heads and seq back first, which scrambles "
        "tokens and heads: each output row mixes other positions (later ones included).",
        source=PRE
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
    ),
    Blind(
        name="output_projection_skipped",
        exercise_id=BLOCK,
        half="held2",
        correct=False,
        hints=("without the output projection",),
        cause="The concatenated heads are added to the residual directly: the output "
        "projection block.attn.proj is never applied.",
        source=PRE
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
    attn_out = (probs @ v).transpose(1, 2).reshape(b, s, h)
    x = x + attn_out
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
    ),
    Blind(
        name="gelu_tanh_approximation",
        exercise_id=BLOCK,
        half="held2",
        correct=False,
        hints=("tanh approximation",),
        cause="It uses the tanh approximation of GeLU (approximate='tanh'), while the block's "
        "MLP uses the exact erf GeLU (F.gelu's default), so the outputs differ slightly.",
        source=PRE
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
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x)), approximate="tanh"))
""",
    ),
    Blind(
        name="layer_norm_without_affine",
        exercise_id=BLOCK,
        half="held2",
        correct=False,
        hints=("without ln1's weight and bias",),
        cause="It normalises with F.layer_norm(x, (h,)) instead of calling block.ln1 and "
        "block.ln2, so the LayerNorms' weight and bias are left out (and get no gradient).",
        source=PRE
        + """
def block_forward(block, x):
    b, s, h = x.shape
    n_heads = block.attn.config.n_heads
    d_head = h // n_heads
    q, k, v = block.attn.qkv(F.layer_norm(x, (h,))).split(h, dim=-1)
    q, k, v = (t.view(b, s, n_heads, d_head).transpose(1, 2) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_head)
    future = torch.ones(s, s, dtype=torch.bool).triu(1)
    probs = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
    y = (probs @ v).transpose(1, 2).reshape(b, s, h)
    x = x + block.attn.proj(y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(F.layer_norm(x, (h,)))))
""",
    ),
    Blind(
        name="qkv_split_per_head_interleaved",
        exercise_id=BLOCK,
        half="held2",
        correct=False,
        hints=("split(h, dim=-1)",),
        cause="It splits the qkv output per head (view to (b, s, heads, 3*d_head), then q, k, "
        "v from each head's slice), but the layer lays out q, k and v as three contiguous "
        "blocks of h: split the last dimension into three h-wide pieces first.",
        source=PRE
        + """
def block_forward(block, x):
    b, s, h = x.shape
    n_heads = block.attn.config.n_heads
    d_head = h // n_heads
    qkv = block.attn.qkv(block.ln1(x)).view(b, s, n_heads, 3 * d_head)
    q, k, v = qkv.transpose(1, 2).split(d_head, dim=-1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_head)
    future = torch.ones(s, s, dtype=torch.bool).triu(1)
    probs = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
    y = (probs @ v).transpose(1, 2).reshape(b, s, h)
    x = x + block.attn.proj(y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
    ),
    Blind(
        name="scores_divided_by_d_head",
        exercise_id=BLOCK,
        half="held2",
        correct=False,
        hints=("divided by d_head instead of sqrt(d_head)",),
        cause="The scores are divided by d_head instead of its square root, so the softmax "
        "is flatter than softmax(Q Kᵀ / √d_head).",
        source=PRE
        + """
def block_forward(block, x):
    b, s, h = x.shape
    n_heads = block.attn.config.n_heads
    d_head = h // n_heads
    q, k, v = block.attn.qkv(block.ln1(x)).split(h, dim=-1)
    q, k, v = (t.view(b, s, n_heads, d_head).transpose(1, 2) for t in (q, k, v))
    scores = (q @ k.transpose(-2, -1)) / d_head
    future = torch.ones(s, s, dtype=torch.bool).triu(1)
    probs = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
    y = (probs @ v).transpose(1, 2).reshape(b, s, h)
    x = x + block.attn.proj(y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
    ),
    Blind(
        name="scale_hardcoded_from_lab_model",
        exercise_id=BLOCK,
        half="held2",
        correct=False,
        hints=("1/sqrt(d_head) = 0.5 is expected",),
        cause="The scale is hard-coded as 1/√8, the d_head of the lab's example model "
        "(d_model 16, 2 heads), instead of computed as 1/√(d_model / n_heads), so it is "
        "wrong for any other block shape.",
        source=PRE
        + """
def block_forward(block, x):
    b, s, h = x.shape
    n_heads = block.attn.config.n_heads
    q, k, v = block.attn.qkv(block.ln1(x)).split(h, dim=-1)
    q, k, v = (t.view(b, s, n_heads, -1).transpose(1, 2) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1) * (1 / math.sqrt(8))
    future = torch.ones(s, s, dtype=torch.bool).triu(1)
    probs = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
    y = (probs @ v).transpose(1, 2).reshape(b, s, h)
    x = x + block.attn.proj(y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
    ),
    Blind(
        name="mlp_residual_onto_block_input",
        exercise_id=BLOCK,
        half="held2",
        correct=False,
        hints=("the sum after the attention residual",),
        cause="The MLP's residual is added to the block's input x instead of to x after the "
        "attention residual, so the attention output is dropped from the block's output "
        "(it only reaches it through ln2).",
        source=PRE
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
    after_attn = x + block.attn.proj(y)
    mlp_out = block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(after_attn))))
    return x + mlp_out
""",
    ),
    # ------------------------------------------------------------------ 3. accumulate_step
    Blind(
        name="masked_logits_sum_then_divide",
        exercise_id=ACC,
        half="held2",
        correct=True,
        source=PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad(set_to_none=True)
    counts = [(y != -100).sum().item() for _, y in micro_batches]
    n_real = sum(counts)
    loss_sum = 0.0
    for (x, y), n in zip(micro_batches, counts):
        if n == 0:
            continue  # nothing to learn from an all-padding micro-batch
        logits, _ = model(x)
        keep = y.reshape(-1) != -100
        picked = logits.reshape(-1, logits.shape[-1])[keep]
        part = F.cross_entropy(picked, y.reshape(-1)[keep], reduction="sum")
        (part / n_real).backward()
        loss_sum += part.item()
    optimizer.step()
    return loss_sum / n_real
""",
    ),
    Blind(
        name="per_token_losses_grads_cleared_by_hand",
        exercise_id=ACC,
        half="held2",
        correct=True,
        source=PRE
        + """
IGNORE = -100


def accumulate_step(model, optimizer, micro_batches):
    for p in model.parameters():
        if p.grad is not None:
            p.grad.zero_()
    total_real = 0
    for _, targets in micro_batches:
        total_real += int(targets.ne(IGNORE).sum())
    mean_loss = torch.zeros(())
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        per_token = F.cross_entropy(
            logits.flatten(0, 1), targets.flatten(), ignore_index=IGNORE, reduction="none"
        )
        share = per_token.sum() / total_real  # padded positions contribute exactly 0
        share.backward()
        mean_loss += share.detach()
    optimizer.step()
    return mean_loss.item()
""",
    ),
    Blind(
        name="running_token_count_denominator",
        exercise_id=ACC,
        half="held2",
        correct=False,
        hints=("running counts of real tokens",),
        cause="Each micro-batch's summed loss is divided by the running count of real tokens "
        "seen so far instead of the whole batch's total, so earlier micro-batches weigh "
        "more: count all real tokens before the loop.",
        source=PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    seen = 0
    total = 0.0
    for tokens, targets in micro_batches:
        seen += int((targets != -100).sum())
        logits, _ = model(tokens)
        summed = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum")
        loss = summed / seen
        loss.backward()
        total += loss.item()
    optimizer.step()
    return total
""",
    ),
    Blind(
        name="summed_loss_never_divided",
        exercise_id=ACC,
        half="held2",
        correct=False,
        hints=("The loss was a sum",),
        cause="Each micro-batch's summed loss (reduction='sum') is back-propagated without "
        "dividing by the number of real tokens, so the gradients are the batch's total, not "
        "its mean (N real tokens times too large).",
        source=PRE
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
    optimizer.step()
    return total / n_tokens
""",
    ),
    Blind(
        name="gradients_never_cleared",
        exercise_id=ACC,
        half="held2",
        correct=False,
        hints=("they accumulated",),
        cause="The gradients are never cleared before the first micro-batch, so a second "
        "call's step sees its gradients added onto those left by the previous call.",
        source=PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    n_tokens = sum(int((targets != -100).sum()) for _, targets in micro_batches)
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
    ),
    Blind(
        name="padding_targets_clamped_to_zero",
        exercise_id=ACC,
        half="held2",
        correct=False,
        hints=("as if -100 were replaced by 0",),
        cause="The -100 padding targets are clamped to 0, so padded positions are trained "
        "to predict token 0 instead of being ignored by the loss.",
        source=PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    n_tokens = sum(int((targets != -100).sum()) for _, targets in micro_batches)
    total = 0.0
    for tokens, targets in micro_batches:
        safe = targets.clamp(min=0)  # avoid a negative class index
        logits, _ = model(tokens)
        summed = F.cross_entropy(logits.flatten(0, 1), safe.flatten(), reduction="sum")
        loss = summed / n_tokens
        loss.backward()
        total += loss.item()
    optimizer.step()
    return total
""",
    ),
    Blind(
        name="floor_division_by_count",
        exercise_id=ACC,
        half="held2",
        correct=False,
        hints=("`//` is floor division",),
        cause="The summed loss is floor-divided (//) by the token count, which rounds it "
        "down to a whole number and has no derivative (backward() raises): divide with /.",
        source=PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    n_tokens = sum(int((targets != -100).sum()) for _, targets in micro_batches)
    total = 0.0
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        summed = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum")
        loss = summed // n_tokens
        loss.backward()
        total += loss.item()
    optimizer.step()
    return total
""",
    ),
    Blind(
        name="count_from_first_micro_batch",
        exercise_id=ACC,
        half="held2",
        correct=False,
        hints=("the first micro-batch's 5 real tokens x 3",),
        cause="The real-token total is the first micro-batch's count times the number of "
        "micro-batches, which is right only when every micro-batch holds as many real tokens: "
        "count the real targets of every micro-batch.",
        source=PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    per_micro = int((micro_batches[0][1] != -100).sum())
    n_tokens = per_micro * len(micro_batches)
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
    ),
    Blind(
        name="returned_loss_divided_by_micro_batches",
        exercise_id=ACC,
        half="held2",
        correct=False,
        hints=("the loss of that batch before the step",),
        cause="The gradients are right, but the returned loss (already the sum of the "
        "per-token shares, i.e. the batch's mean) is divided again by the number of "
        "micro-batches, so it is 3 times too small.",
        source=PRE
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
        total += loss.item()
    optimizer.step()
    return total / len(micro_batches)
""",
    ),
    Blind(
        name="mean_weighted_by_positions_not_real_tokens",
        exercise_id=ACC,
        half="held2",
        correct=False,
        hints=("by its positions",),
        cause="Each micro-batch's mean loss is weighted by its number of positions "
        "(targets.numel(), 16) instead of its number of real tokens, so with padding a "
        "micro-batch's few real tokens are over-weighted.",
        source=PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    n_real = sum(int((targets != -100).sum()) for _, targets in micro_batches)
    total = 0.0
    for tokens, targets in micro_batches:
        _, mean_loss = model(tokens, targets)
        weighted = mean_loss * targets.numel() / n_real
        weighted.backward()
        total += weighted.item()
    optimizer.step()
    return total
""",
    ),
]
