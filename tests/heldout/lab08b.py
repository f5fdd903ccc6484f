"""Held-out answers to lab 08b (PyTorch primer), written without the checker in view.

Each cell is what a learner could write in labs/08b_pytorch_primer_lab.ipynb; the wrong ones
carry their real mistake in ``cause``. See tests/heldout/__init__.py."""

from heldout import Blind

PRE = "import math\n\nimport torch\nimport torch.nn.functional as F\n\nimport gpu_utils as gu\n\n"

ANSWERS = [
    Blind(
        name="loss_from_model_second_value",
        exercise_id="primer_train_step",
        half="tune",
        correct=True,
        source=PRE
        + """
def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad(set_to_none=True)
    _, loss = model(tokens, targets)
    loss.backward()
    optimizer.step()
    return loss.item()
""",
    ),
    Blind(
        name="zero_grad_after_update",
        exercise_id="primer_train_step",
        half="held",
        correct=True,
        source=PRE
        + """
def train_step(model, optimizer, tokens, targets):
    logits, _ = model(tokens)
    vocab = logits.shape[-1]
    loss = F.cross_entropy(logits.reshape(-1, vocab), targets.reshape(-1))
    loss.backward()
    optimizer.step()
    optimizer.zero_grad()
    return float(loss.detach())
""",
    ),
    Blind(
        name="manual_log_softmax_nll",
        exercise_id="primer_train_step",
        half="tune",
        correct=True,
        source=PRE
        + """
def train_step(model, optimizer, tokens, targets):
    model.zero_grad()
    logits, _ = model(tokens)
    logp = torch.log_softmax(logits, dim=-1)
    picked = logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    loss = -picked.mean()
    loss.backward()
    optimizer.step()
    return loss.item()
""",
    ),
    Blind(
        name="helper_and_zero_fill",
        exercise_id="primer_train_step",
        half="held",
        correct=True,
        source=PRE
        + """
def mean_loss(model, tokens, targets):
    logits, _ = model(tokens)
    return F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="mean")


def train_step(model, optimizer, tokens, targets):
    for p in model.parameters():
        if p.grad is not None:
            p.grad.zero_()
    loss = mean_loss(model, tokens, targets)
    loss.backward()
    optimizer.step()
    value = loss.item()
    return value
""",
    ),
    Blind(
        name="no_zero_grad",
        exercise_id="primer_train_step",
        half="tune",
        correct=False,
        cause="The gradients are never cleared, so each step's backward adds onto the previous steps' gradients and the step uses their running sum.",
        source=PRE
        + """
def train_step(model, optimizer, tokens, targets):
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    loss.backward()
    optimizer.step()
    return loss.item()
""",
    ),
    Blind(
        name="step_before_backward",
        exercise_id="primer_train_step",
        half="held",
        correct=False,
        cause="optimizer.step() is called before loss.backward(), so the step runs on gradients that are not yet computed (none, or the ones about to be cleared).",
        source=PRE
        + """
def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    optimizer.step()
    loss.backward()
    return loss.item()
""",
    ),
    Blind(
        name="sum_reduction",
        exercise_id="primer_train_step",
        half="tune",
        correct=False,
        cause="The loss sums the cross-entropy over all 32 positions instead of taking the mean, so the gradients (and the returned loss) are 32 times too large.",
        source=PRE
        + """
def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum")
    loss.backward()
    optimizer.step()
    return loss.item()
""",
    ),
    Blind(
        name="returns_tensor",
        exercise_id="primer_train_step",
        half="held",
        correct=False,
        cause="The step returns the loss tensor (still attached to the graph) instead of a Python number from loss.item().",
        source=PRE
        + """
def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    loss.backward()
    optimizer.step()
    return loss
""",
    ),
    Blind(
        name="zero_grad_between_backward_and_step",
        exercise_id="primer_train_step",
        half="tune",
        correct=False,
        cause="optimizer.zero_grad() sits between backward() and step(), so it wipes this step's gradients and the step updates nothing.",
        source=PRE
        + """
def train_step(model, optimizer, tokens, targets):
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    loss.backward()
    optimizer.zero_grad()
    optimizer.step()
    return loss.item()
""",
    ),
    Blind(
        name="extra_grad_clipping",
        exercise_id="primer_train_step",
        half="held",
        correct=False,
        cause="It clips the gradient norm before the step, which the task rules out, so the step sees rescaled gradients.",
        source=PRE
        + """
def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=0.1)
    optimizer.step()
    return loss.item()
""",
    ),
    Blind(
        name="softmax_before_cross_entropy",
        exercise_id="primer_train_step",
        half="tune",
        correct=False,
        cause="It applies softmax before F.cross_entropy, which applies log-softmax itself, so the loss is computed on probabilities instead of logits and its value and gradients are wrong.",
        source=PRE
        + """
def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    probs = logits.softmax(dim=-1)
    loss = F.cross_entropy(probs.flatten(0, 1), targets.flatten())
    loss.backward()
    optimizer.step()
    return loss.item()
""",
    ),
    Blind(
        name="shifts_targets_again",
        exercise_id="primer_train_step",
        half="held",
        correct=False,
        cause="The targets are already the next tokens; shifting them again by one pairs each position with the token two ahead and drops a position, so the loss is not the one asked for.",
        source=PRE
        + """
def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    # predict the next token: drop the last logit and the first target
    loss = F.cross_entropy(logits[:, :-1].flatten(0, 1), targets[:, 1:].flatten())
    loss.backward()
    optimizer.step()
    return loss.item()
""",
    ),
    Blind(
        name="sum_over_batch_mean_over_seq",
        exercise_id="primer_train_step",
        half="tune",
        correct=False,
        cause="The loss averages over the sequence but sums over the 4 sequences of the batch, so gradients and loss are 4 times (the batch size) too large.",
        source=PRE
        + """
def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    per_token = F.cross_entropy(logits.transpose(1, 2), targets, reduction="none")
    loss = per_token.mean(dim=1).sum()
    loss.backward()
    optimizer.step()
    return loss.item()
""",
    ),
    Blind(
        name="loss_divided_by_batch",
        exercise_id="primer_train_step",
        half="held",
        correct=False,
        cause="The mean loss is divided once more by the batch size, an extra scaling that makes the gradients (and the returned loss) 4 times too small.",
        source=PRE
        + """
def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    loss = loss / tokens.shape[0]
    loss.backward()
    optimizer.step()
    return loss.item()
""",
    ),
    Blind(
        name="chunk_and_tril_mask",
        exercise_id="primer_block_forward",
        half="tune",
        correct=True,
        source=PRE
        + """
def block_forward(block, x):
    batch, seq, width = x.shape
    heads = block.attn.config.n_heads
    dh = width // heads
    qkv = block.attn.qkv(block.ln1(x))
    q, k, v = qkv.chunk(3, dim=-1)

    def split_heads(t):
        return t.reshape(batch, seq, heads, dh).permute(0, 2, 1, 3)

    q, k, v = split_heads(q), split_heads(k), split_heads(v)
    q = q / math.sqrt(dh)
    att = q @ k.transpose(-1, -2)
    keep = torch.tril(torch.ones(seq, seq, dtype=torch.bool))
    att = att.masked_fill(~keep, float("-inf"))
    att = torch.softmax(att, dim=-1)
    out = (att @ v).permute(0, 2, 1, 3).reshape(batch, seq, width)
    h = x + block.attn.proj(out)
    m = block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(h))))
    return h + m
""",
    ),
    Blind(
        name="sdpa_is_causal",
        exercise_id="primer_block_forward",
        half="held",
        correct=True,
        source=PRE
        + """
def block_forward(block, x):
    b, s, h = x.shape
    n = block.attn.config.n_heads
    q, k, v = block.attn.qkv(block.ln1(x)).split(h, dim=-1)
    q, k, v = (t.view(b, s, n, h // n).transpose(1, 2) for t in (q, k, v))
    y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    x = x + block.attn.proj(y.transpose(1, 2).reshape(b, s, h))
    x = x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
    return x
""",
    ),
    Blind(
        name="loop_over_heads",
        exercise_id="primer_block_forward",
        half="tune",
        correct=True,
        source=PRE
        + """
def attention(block, z):
    b, s, h = z.shape
    n = block.attn.config.n_heads
    d = h // n
    qkv = block.attn.qkv(z)
    q, k, v = qkv[..., :h], qkv[..., h : 2 * h], qkv[..., 2 * h :]
    future = torch.triu(torch.ones(s, s, dtype=torch.bool), diagonal=1)
    outs = []
    for i in range(n):
        qi, ki, vi = (t[..., i * d : (i + 1) * d] for t in (q, k, v))
        scores = qi @ ki.transpose(1, 2) / d**0.5
        scores = scores.masked_fill(future, -float("inf"))
        outs.append(F.softmax(scores, dim=-1) @ vi)
    return block.attn.proj(torch.cat(outs, dim=-1))


def block_forward(block, x):
    x = x + attention(block, block.ln1(x))
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
    ),
    Blind(
        name="einsum_additive_mask",
        exercise_id="primer_block_forward",
        half="held",
        correct=True,
        source=PRE
        + """
def block_forward(block, x):
    B_, S, H = x.shape
    nh = block.attn.config.n_heads
    hd = H // nh
    q, k, v = block.attn.qkv(block.ln1(x)).view(B_, S, 3, nh, hd).unbind(dim=2)
    scores = torch.einsum("bqhd,bkhd->bhqk", q, k) * hd**-0.5
    bias = torch.full((S, S), float("-inf")).triu(1)
    weights = (scores + bias).softmax(-1)
    y = torch.einsum("bhqk,bkhd->bqhd", weights, v).reshape(B_, S, H)
    x = x + block.attn.proj(y)
    hidden = F.gelu(block.mlp.fc1(block.ln2(x)))
    return x + block.mlp.fc2(hidden)
""",
    ),
    Blind(
        name="no_causal_mask",
        exercise_id="primer_block_forward",
        half="tune",
        correct=False,
        cause="The attention has no causal mask, so every position attends to later tokens (changing the last token moves earlier outputs).",
        source=PRE
        + """
def block_forward(block, x):
    b, s, h = x.shape
    n_heads = block.attn.config.n_heads
    d_head = h // n_heads
    q, k, v = block.attn.qkv(block.ln1(x)).split(h, dim=-1)
    q, k, v = (t.view(b, s, n_heads, d_head).transpose(1, 2) for t in (q, k, v))
    probs = (q @ k.transpose(-2, -1) / math.sqrt(d_head)).softmax(dim=-1)
    y = (probs @ v).transpose(1, 2).reshape(b, s, h)
    x = x + block.attn.proj(y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
    ),
    Blind(
        name="scale_by_sqrt_d_model",
        exercise_id="primer_block_forward",
        half="held",
        correct=False,
        cause="The scores are divided by sqrt(d_model) instead of sqrt(d_head), so the softmax is too flat.",
        source=PRE
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
    ),
    Blind(
        name="softmax_over_queries",
        exercise_id="primer_block_forward",
        half="tune",
        correct=False,
        cause="The softmax normalises over the query axis (dim=-2) instead of over the keys (dim=-1), so each row of attention weights does not sum to one.",
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
    probs = scores.masked_fill(future, float("-inf")).softmax(dim=-2)
    y = (probs @ v).transpose(1, 2).reshape(b, s, h)
    x = x + block.attn.proj(y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
    ),
    Blind(
        name="heads_viewed_without_transpose",
        exercise_id="primer_block_forward",
        half="held",
        correct=False,
        cause="The heads are split by reshaping (batch, seq, h) straight to (batch, heads, seq, d_head) without a transpose, which mixes features of different tokens into each head's rows.",
        source=PRE
        + """
def block_forward(block, x):
    b, s, h = x.shape
    n_heads = block.attn.config.n_heads
    d_head = h // n_heads
    q, k, v = block.attn.qkv(block.ln1(x)).split(h, dim=-1)
    q, k, v = (t.reshape(b, n_heads, s, d_head) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_head)
    future = torch.ones(s, s, dtype=torch.bool).triu(1)
    probs = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
    y = (probs @ v).reshape(b, s, h)
    x = x + block.attn.proj(y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
    ),
    Blind(
        name="post_ln",
        exercise_id="primer_block_forward",
        half="tune",
        correct=False,
        cause="It is a post-LN block (LayerNorm after each residual sum) instead of pre-LN: ln1 and ln2 must be applied to the sub-layer inputs, inside the residual branches.",
        source=PRE
        + """
def attn(block, z):
    b, s, h = z.shape
    n_heads = block.attn.config.n_heads
    d_head = h // n_heads
    q, k, v = block.attn.qkv(z).split(h, dim=-1)
    q, k, v = (t.view(b, s, n_heads, d_head).transpose(1, 2) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_head)
    future = torch.ones(s, s, dtype=torch.bool).triu(1)
    probs = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
    return block.attn.proj((probs @ v).transpose(1, 2).reshape(b, s, h))


def block_forward(block, x):
    x = block.ln1(x + attn(block, x))
    return block.ln2(x + block.mlp.fc2(F.gelu(block.mlp.fc1(x))))
""",
    ),
    Blind(
        name="ln1_used_twice",
        exercise_id="primer_block_forward",
        half="held",
        correct=False,
        cause="The MLP branch normalises with ln1 instead of ln2, so ln2's weight and bias are never used (their gradients stay zero).",
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
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln1(x))))
""",
    ),
    Blind(
        name="k_and_q_swapped",
        exercise_id="primer_block_forward",
        half="tune",
        correct=False,
        cause="The qkv output is unpacked as k, q, v instead of q, k, v (queries come first), so the scores are the transpose of the right ones.",
        source=PRE
        + """
def block_forward(block, x):
    b, s, h = x.shape
    n_heads = block.attn.config.n_heads
    d_head = h // n_heads
    k, q, v = block.attn.qkv(block.ln1(x)).split(h, dim=-1)
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
        name="mask_after_softmax",
        exercise_id="primer_block_forward",
        half="held",
        correct=False,
        cause="The mask is applied after the softmax (future weights set to 0), so the remaining weights no longer sum to one: the mask must add -inf to the scores before the softmax.",
        source=PRE
        + """
def block_forward(block, x):
    b, s, h = x.shape
    n_heads = block.attn.config.n_heads
    d_head = h // n_heads
    q, k, v = block.attn.qkv(block.ln1(x)).split(h, dim=-1)
    q, k, v = (t.view(b, s, n_heads, d_head).transpose(1, 2) for t in (q, k, v))
    probs = (q @ k.transpose(-2, -1) / math.sqrt(d_head)).softmax(dim=-1)
    future = torch.ones(s, s, dtype=torch.bool).triu(1)
    probs = probs.masked_fill(future, 0.0)
    y = (probs @ v).transpose(1, 2).reshape(b, s, h)
    x = x + block.attn.proj(y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
    ),
    Blind(
        name="relu_instead_of_gelu",
        exercise_id="primer_block_forward",
        half="tune",
        correct=False,
        cause="The MLP uses ReLU instead of GeLU between fc1 and fc2.",
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
    return x + block.mlp.fc2(F.relu(block.mlp.fc1(block.ln2(x))))
""",
    ),
    Blind(
        name="mlp_reads_block_input",
        exercise_id="primer_block_forward",
        half="held",
        correct=False,
        cause="The MLP branch reads ln2 of the block's input instead of ln2 of x after the attention residual (the two sub-layers run in parallel instead of in sequence).",
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
    a = block.attn.proj(y)
    return x + a + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
    ),
    Blind(
        name="no_attention_residual",
        exercise_id="primer_block_forward",
        half="tune",
        correct=False,
        cause="The attention residual is missing: x is replaced by the attention output instead of x + attention(ln1(x)).",
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
    x = block.attn.proj(y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
    ),
    Blind(
        name="share_of_mean_times_count",
        exercise_id="primer_accumulate_step",
        half="tune",
        correct=True,
        source=PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    counts = [(t != -100).sum().item() for _, t in micro_batches]
    total_tokens = sum(counts)
    loss_value = 0.0
    for (tokens, targets), count in zip(micro_batches, counts):
        logits, _ = model(tokens)
        mean = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=-100)
        part = mean * (count / total_tokens)
        part.backward()
        loss_value += part.item()
    optimizer.step()
    return loss_value
""",
    ),
    Blind(
        name="masked_manual_nll",
        exercise_id="primer_accumulate_step",
        half="held",
        correct=True,
        source=PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    for p in model.parameters():
        p.grad = None
    real = [targets.ne(-100) for _, targets in micro_batches]
    n_real = torch.stack([m.sum() for m in real]).sum()
    running = torch.zeros(())
    for (tokens, targets), mask in zip(micro_batches, real):
        logits, _ = model(tokens)
        logp = logits.log_softmax(-1)
        nll = -logp.gather(-1, targets.clamp(min=0).unsqueeze(-1)).squeeze(-1)
        loss = (nll * mask).sum() / n_real
        loss.backward()
        running += loss.detach()
    optimizer.step()
    return running.item()
""",
    ),
    Blind(
        name="sum_then_rescale_grads",
        exercise_id="primer_accumulate_step",
        half="tune",
        correct=True,
        source=PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    n_tokens = 0
    summed_loss = 0.0
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        s = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum")
        s.backward()
        summed_loss += s.item()
        n_tokens += int((targets != -100).sum())
    with torch.no_grad():
        for p in model.parameters():
            if p.grad is not None:
                p.grad /= n_tokens
    optimizer.step()
    return summed_loss / n_tokens
""",
    ),
    Blind(
        name="precount_with_enumerate",
        exercise_id="primer_accumulate_step",
        half="held",
        correct=True,
        source=PRE
        + """
IGNORE = -100


def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad(set_to_none=False)
    denom = 0
    for _, targets in micro_batches:
        denom += (targets != IGNORE).sum().item()
    losses = []
    for i, (tokens, targets) in enumerate(micro_batches):
        logits, _ = model(tokens)
        loss_i = F.cross_entropy(
            logits.view(-1, logits.size(-1)), targets.view(-1), reduction="sum"
        ) / denom
        loss_i.backward()
        losses.append(loss_i.item())
    optimizer.step()
    return sum(losses)
""",
    ),
    Blind(
        name="mean_per_micro_batch_averaged",
        exercise_id="primer_accumulate_step",
        half="tune",
        correct=False,
        cause="Each micro-batch's mean loss is divided by the number of micro-batches, which weights every micro-batch equally instead of every real token: wrong when padding leaves them different token counts.",
        source=PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    n = len(micro_batches)
    total = 0.0
    for tokens, targets in micro_batches:
        _, loss = model(tokens, targets)
        (loss / n).backward()
        total += loss.item() / n
    optimizer.step()
    return total
""",
    ),
    Blind(
        name="means_summed_not_divided",
        exercise_id="primer_accumulate_step",
        half="held",
        correct=False,
        cause="The micro-batch mean losses are back-propagated without any division, so the accumulated gradients are the sum of three means (about 3 times too large) instead of the batch's mean per real token.",
        source=PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    total = 0.0
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
        loss.backward()
        total += loss.item()
    optimizer.step()
    return total / len(micro_batches)
""",
    ),
    Blind(
        name="padding_counted",
        exercise_id="primer_accumulate_step",
        half="tune",
        correct=False,
        cause="The denominator counts every position including the padded ones (targets.numel()), so with padding the gradients and loss are too small: divide by the number of targets that are not -100.",
        source=PRE
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
    ),
    Blind(
        name="zero_grad_in_loop",
        exercise_id="primer_accumulate_step",
        half="held",
        correct=False,
        cause="zero_grad() is called inside the loop, so each micro-batch erases the gradients of the ones before and the step sees only the last micro-batch's gradients.",
        source=PRE
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
    ),
    Blind(
        name="step_per_micro_batch",
        exercise_id="primer_accumulate_step",
        half="tune",
        correct=False,
        cause="optimizer.step() is inside the loop, so there are three steps per call (on partial, growing gradients) instead of one step after all micro-batches.",
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
        optimizer.step()
        total += loss.item()
    return total
""",
    ),
    Blind(
        name="divides_by_sequences",
        exercise_id="primer_accumulate_step",
        half="held",
        correct=False,
        hints=("6 = the 6 sequences of all micro-batches",),
        cause="The summed loss is divided by the number of sequences (6) instead of the number of real tokens, so the gradients are a per-sequence sum, many times too large.",
        source=PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    n_sequences = sum(tokens.shape[0] for tokens, _ in micro_batches)
    total = 0.0
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        summed = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum")
        loss = summed / n_sequences
        loss.backward()
        total += loss.item()
    optimizer.step()
    return total
""",
    ),
    Blind(
        name="returns_last_loss",
        exercise_id="primer_accumulate_step",
        half="tune",
        correct=False,
        cause="The gradients are right but it returns only the last micro-batch's share of the loss instead of the whole batch's mean loss (the sum of the shares).",
        source=PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    n_tokens = sum(int((targets != -100).sum()) for _, targets in micro_batches)
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum")
        loss = loss / n_tokens
        loss.backward()
    optimizer.step()
    return loss.item()
""",
    ),
    Blind(
        name="right_grads_loss_mean_of_means",
        exercise_id="primer_accumulate_step",
        half="held",
        correct=False,
        cause="The gradients are weighted per token, but the returned loss is the plain average of the micro-batch means, which is not the batch's mean over real tokens when padding differs.",
        source=PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    n_tokens = sum(int((targets != -100).sum()) for _, targets in micro_batches)
    means = []
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        summed = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum")
        (summed / n_tokens).backward()
        means.append(summed.item() / int((targets != -100).sum()))
    optimizer.step()
    return sum(means) / len(means)
""",
    ),
    Blind(
        name="zero_token_ids_treated_as_padding",
        exercise_id="primer_accumulate_step",
        half="tune",
        correct=False,
        cause="Real tokens are counted with targets > 0, which also drops every real target whose token id is 0, so the denominator is too small: count targets != -100.",
        source=PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    n_tokens = sum(int((targets > 0).sum()) for _, targets in micro_batches)
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
        name="returns_tensor",
        exercise_id="primer_accumulate_step",
        half="held",
        correct=False,
        cause="It returns the accumulated loss as a tensor attached to the graph instead of a Python number (.item()).",
        source=PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    n_tokens = sum(int((targets != -100).sum()) for _, targets in micro_batches)
    total = 0
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        summed = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum")
        loss = summed / n_tokens
        loss.backward()
        total = total + loss
    optimizer.step()
    return total
""",
    ),
]
