"""Blind held-out round lab08b_r8 (held2), written 2026-11-29 ~06:55-07:25 UTC by a helper session
that never opened the checker, tests/test_* or gpu_utils/exercises/.

Read: solutions/08b_pytorch_primer_lab.ipynb code cells (the reference answers),
gpu_utils/many_gpus/gpt.py (gu.gpt: Block, GPT, build), tests/heldout/__init__.py, the docstring
and first entries of tests/heldout/lab08b_r7.py (format only) and /tmp/blind/causes_lab08b.txt
(earlier causes, all avoided: every mistake here is of a new kind).

Verification (/tmp/lab08b_r8/verify.py, GPU_COURSE_MODE=simulator): every answer is loaded with
heldout.submitted() and compared with the reference solution.
- train_step: gu.gpt.build(seed=0, vocab 32, seq 8, d_model 16, 1 layer, 2 heads) and a second
  model (vocab 20, seq 6, d_model 24, 2 layers, 3 heads), SGD(lr=0.1, momentum=0.9), 4
  consecutive calls on batches of 4, 4, 4 and 1 sequences; returned loss and every parameter
  after each call, atol 1e-5.
- block_forward: blocks with every parameter randomised (torch.randn), shapes (b, s, h, heads,
  config seq_len) = (2, 8, 16, 2, 8), (1, 5, 24, 3, 8), (3, 1, 12, 4, 4), (2, 7, 12, 1, 7),
  (2, 6, 16, 4, 6); output and every parameter's gradient of (out * r).sum(), atol 1e-4.
- accumulate_step: the two models above, 2 calls of 3 micro-batches (2, seq): call 1 unpadded,
  call 2 padded (-100 targets) to 16/5/12 real tokens (other counts for the second model), then
  a third call with other padding; returned loss and every parameter after each call, atol 1e-5.
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
        name="train_step_log_softmax_then_ce",
        exercise_id="primer_train_step",
        half="held2",
        correct=True,
        source=_PRE
        + """
def train_step(model, optimizer, tokens, targets):
    for p in model.parameters():
        p.grad = None
    logits, _ = model(tokens)
    logp = torch.log_softmax(logits, dim=-1)
    loss = F.nll_loss(logp.reshape(-1, logp.shape[-1]), targets.reshape(-1))
    loss.backward()
    optimizer.step()
    return float(loss.detach())
""",
    ),
    Blind(
        name="train_step_autograd_grad",
        exercise_id="primer_train_step",
        half="held2",
        correct=True,
        source=_PRE
        + """
def train_step(model, optimizer, tokens, targets):
    params = [p for p in model.parameters() if p.requires_grad]
    logits, _ = model(tokens)
    vocab = logits.size(-1)
    loss = F.cross_entropy(logits.view(-1, vocab), targets.reshape(-1))
    grads = torch.autograd.grad(loss, params)
    for p, g in zip(params, grads):
        p.grad = g
    optimizer.step()
    return loss.item()
""",
    ),
    Blind(
        name="train_step_static_loss_scale",
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause="It multiplies the loss by a static loss scale (1024, as with mixed-precision loss scaling) before backward() and never unscales the gradients, so optimizer.step() sees gradients 1024 times too large (the returned loss is right).",
        source=_PRE
        + """
LOSS_SCALE = 1024.0


def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
    (loss * LOSS_SCALE).backward()
    optimizer.step()
    return loss.item()
""",
        hints=("1024 times",),
    ),
    Blind(
        name="train_step_bce_one_hot",
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause="It uses binary cross-entropy with logits against one-hot targets (an independent sigmoid per vocabulary entry) instead of the softmax cross-entropy F.cross_entropy, so the loss and its gradients are not the mean cross-entropy asked for.",
        source=_PRE
        + """
def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    one_hot = F.one_hot(targets, num_classes=logits.shape[-1]).float()
    loss = F.binary_cross_entropy_with_logits(logits, one_hot)
    loss.backward()
    optimizer.step()
    return loss.item()
""",
        hints=("sigmoid",),
    ),
    Blind(
        name="train_step_loss_class_called_as_function",
        exercise_id="primer_train_step",
        half="held2",
        correct=False,
        cause="It passes the logits and targets to the nn.CrossEntropyLoss constructor (which reads them as its weight and size_average arguments) instead of creating the loss module and calling it, so the constructor raises (a tensor tested as a boolean) and no loss is ever computed: use F.cross_entropy(logits, targets) or nn.CrossEntropyLoss()(logits, targets).",
        source=_PRE
        + """
from torch import nn


def train_step(model, optimizer, tokens, targets):
    optimizer.zero_grad()
    logits, _ = model(tokens)
    loss = nn.CrossEntropyLoss(logits.flatten(0, 1), targets.flatten())
    loss.backward()
    optimizer.step()
    return loss.item()
""",
        hints=("module class",),
    ),
    # ---------------------------------------------------------------- block_forward
    Blind(
        name="block_qkv_view_permute_big_negative",
        exercise_id="primer_block_forward",
        half="held2",
        correct=True,
        source=_PRE
        + """
def block_forward(block, x):
    b, s, h = x.shape
    heads = block.attn.config.n_heads
    d = h // heads
    qkv = block.attn.qkv(block.ln1(x)).view(b, s, 3, heads, d).permute(2, 0, 3, 1, 4)
    q, k, v = qkv[0], qkv[1], qkv[2]
    att = torch.matmul(q, k.mT) * d**-0.5
    allowed = torch.tril(torch.ones(s, s, device=x.device)) == 1
    att = att.masked_fill(~allowed, -1e9)
    att = F.softmax(att, dim=-1)
    y = torch.matmul(att, v).permute(0, 2, 1, 3).reshape(b, s, h)
    x = x + block.attn.proj(y)
    m = block.mlp
    return x + m.fc2(F.gelu(m.fc1(block.ln2(x))))
""",
    ),
    Blind(
        name="block_einsum_where_mask",
        exercise_id="primer_block_forward",
        half="held2",
        correct=True,
        source=_PRE
        + """
def block_forward(block, x):
    B, T, C = x.shape
    nh = block.attn.config.n_heads
    hd = C // nh
    q, k, v = block.attn.qkv(block.ln1(x)).chunk(3, dim=-1)
    q = q.reshape(B, T, nh, hd)
    k = k.reshape(B, T, nh, hd)
    v = v.reshape(B, T, nh, hd)
    scores = torch.einsum("bqnd,bknd->bnqk", q, k) / math.sqrt(hd)
    i = torch.arange(T)
    causal = i[None, :] <= i[:, None]
    scores = torch.where(causal, scores, torch.full_like(scores, float("-inf")))
    w = scores.softmax(-1)
    out = torch.einsum("bnqk,bknd->bqnd", w, v).reshape(B, T, C)
    h1 = x + block.attn.proj(out)
    h2 = block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(h1))))
    return h1 + h2
""",
    ),
    Blind(
        name="block_residual_from_normalised_x",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause="x is overwritten with ln1(x) before the attention residual, so the residual stream carries the normalised input (ln1(x) + attention(ln1(x))) instead of the raw x: the residual must add the attention output to the un-normalised x.",
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
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
        hints=("ln1(x) + attn.proj(y)",),
    ),
    Blind(
        name="block_view_heads_and_dhead_swapped",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause="The heads are split with view(b, s, d_head, n_heads), the two sizes swapped, so the attention runs d_head heads of n_heads features each instead of n_heads heads of d_head features (right only when n_heads equals d_head).",
        source=_PRE
        + """
def block_forward(block, x):
    b, s, h = x.shape
    n_heads = block.attn.config.n_heads
    d_head = h // n_heads
    q, k, v = block.attn.qkv(block.ln1(x)).split(h, dim=-1)
    q, k, v = (t.view(b, s, d_head, n_heads).transpose(1, 2) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_head)
    future = torch.ones(s, s, dtype=torch.bool).triu(1)
    probs = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
    y = (probs @ v).transpose(1, 2).reshape(b, s, h)
    x = x + block.attn.proj(y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
    ),
    Blind(
        name="block_scale_after_softmax",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause="The 1/sqrt(d_head) scale is applied to the softmax's output instead of to the scores before it, so the softmax is too sharp and each row of attention weights sums to 1/sqrt(d_head) instead of one.",
        source=_PRE
        + """
def block_forward(block, x):
    b, s, h = x.shape
    n_heads = block.attn.config.n_heads
    d_head = h // n_heads
    q, k, v = block.attn.qkv(block.ln1(x)).split(h, dim=-1)
    q, k, v = (t.view(b, s, n_heads, d_head).transpose(1, 2) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1)
    future = torch.ones(s, s, dtype=torch.bool).triu(1)
    probs = scores.masked_fill(future, float("-inf")).softmax(dim=-1) / math.sqrt(d_head)
    y = (probs @ v).transpose(1, 2).reshape(b, s, h)
    x = x + block.attn.proj(y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
        hints=("after the softmax",),
    ),
    Blind(
        name="block_mask_sized_by_config_seq_len",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause="The causal mask is built for the model's maximum length (block.attn.config.seq_len) and not cut to the input's length, so any input shorter than seq_len gets a mask of the wrong shape (an error): build it from x.shape[1] or slice it [:s, :s].",
        source=_PRE
        + """
def block_forward(block, x):
    b, s, h = x.shape
    cfg = block.attn.config
    d_head = h // cfg.n_heads
    mask = torch.triu(torch.ones(cfg.seq_len, cfg.seq_len, dtype=torch.bool), diagonal=1)
    q, k, v = block.attn.qkv(block.ln1(x)).split(h, dim=-1)
    q, k, v = (t.view(b, s, cfg.n_heads, d_head).transpose(1, 2) for t in (q, k, v))
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_head)
    probs = scores.masked_fill(mask, float("-inf")).softmax(dim=-1)
    y = (probs @ v).transpose(1, 2).reshape(b, s, h)
    x = x + block.attn.proj(y)
    return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
""",
        hints=("config.seq_len",),
    ),
    Blind(
        name="block_hand_layernorm_weight_bias_swapped",
        exercise_id="primer_block_forward",
        half="held2",
        correct=False,
        cause="The hand-written LayerNorm multiplies by the LayerNorm's bias and adds its weight (ln.bias * x_hat + ln.weight) instead of ln.weight * x_hat + ln.bias, so the LayerNorm's scale and shift are swapped (at initialisation, weight 1 and bias 0, it even outputs a constant 1 for every feature).",
        source=_PRE
        + """
def layer_norm(ln, x):
    mu = x.mean(dim=-1, keepdim=True)
    var = x.var(dim=-1, keepdim=True, unbiased=False)
    x_hat = (x - mu) / torch.sqrt(var + ln.eps)
    return ln.bias * x_hat + ln.weight


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
        hints=("weight and bias exchanged",),
    ),
    # ---------------------------------------------------------------- accumulate_step
    Blind(
        name="accumulate_mean_times_share_count_nonzero",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=True,
        source=_PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    counts = [torch.count_nonzero(targets + 100).item() for _, targets in micro_batches]
    total_tokens = sum(counts)
    reported = 0.0
    for (tokens, targets), n in zip(micro_batches, counts):
        _, mean_loss = model(tokens, targets)
        share = mean_loss * (n / total_tokens)
        share.backward()
        reported += share.item()
    optimizer.step()
    optimizer.zero_grad()
    return reported
""",
    ),
    Blind(
        name="accumulate_masked_sum_divide_grads_after",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=True,
        source=_PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad(set_to_none=True)
    summed_total = 0.0
    n_real = 0
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        keep = targets != -100
        summed = F.cross_entropy(logits[keep], targets[keep], reduction="sum")
        summed.backward()
        summed_total += summed.item()
        n_real += int(keep.sum())
    with torch.no_grad():
        for p in model.parameters():
            if p.grad is not None:
                p.grad /= n_real
    optimizer.step()
    return summed_total / n_real
""",
    ),
    Blind(
        name="accumulate_count_with_mean",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=False,
        cause="The real tokens are 'counted' with .float().mean(), which gives each micro-batch's fraction of real tokens instead of their number (.sum()), so the summed loss is divided by about 3 instead of the real-token count: gradients and loss are many times too large.",
        source=_PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    n_tokens = sum((targets != -100).float().mean() for _, targets in micro_batches)
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
        hints=("48 real tokens",),
    ),
    Blind(
        name="accumulate_step_guard_never_true",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=False,
        cause="optimizer.step() is guarded by i == len(micro_batches) inside the enumerate loop, whose last index is len(micro_batches) - 1, so the condition is never true and no step is ever taken (the parameters never change; the returned loss is right).",
        source=_PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    n_tokens = sum(int((t != -100).sum()) for _, t in micro_batches)
    total = 0.0
    for i, (tokens, targets) in enumerate(micro_batches):
        logits, _ = model(tokens)
        summed = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum")
        loss = summed / n_tokens
        loss.backward()
        total += loss.item()
        if i == len(micro_batches):
            optimizer.step()
    return total
""",
        hints=("never ran",),
    ),
    Blind(
        name="accumulate_backward_running_total",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=False,
        cause="backward() is called on the running total (the sum of the shares so far, with retain_graph=True) after every micro-batch, so the earlier micro-batches are back-propagated again at each later one (the first 3 times, the second twice): back-propagate each share once, or the total once after the loop.",
        source=_PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    n_tokens = sum(int((t != -100).sum()) for _, t in micro_batches)
    total = 0
    for tokens, targets in micro_batches:
        logits, _ = model(tokens)
        summed = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum")
        total = total + summed / n_tokens
        total.backward(retain_graph=True)
    optimizer.step()
    return total.item()
""",
        hints=("3 times",),
    ),
    Blind(
        name="accumulate_weight_ratio_inverted",
        exercise_id="primer_accumulate_step",
        half="held2",
        correct=False,
        cause="Each micro-batch's mean loss is weighted by n_total / n_i, the ratio upside down, instead of n_i / n_total (its share of the real tokens), so the gradients are far too large and micro-batches with few real tokens weigh the most.",
        source=_PRE
        + """
def accumulate_step(model, optimizer, micro_batches):
    optimizer.zero_grad()
    counts = [int((t != -100).sum()) for _, t in micro_batches]
    n_total = sum(counts)
    total = 0.0
    for (tokens, targets), n_i in zip(micro_batches, counts):
        logits, _ = model(tokens)
        mean_loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
        loss = mean_loss * (n_total / n_i)
        loss.backward()
        total += loss.item()
    optimizer.step()
    return total
""",
        hints=("9 times",),
    ),
]
