"""Held-out answers to lab 08b (PyTorch primer), third round, all ``half="held2"``.

Written blind on 2026-11-28 by a helper session that did not read the lab's checker
(``gpu_utils/exercises/``), its tests or its messages, and never ran a check cell. Sources read:
the learner's lab ``labs/08b_pytorch_primer_lab.ipynb``, the reference solutions' code cells
(``solutions/08b_pytorch_primer_lab.ipynb``), ``notebooks/08b_pytorch_primer.ipynb``,
``gpu_utils/many_gpus/gpt.py``, ``tests/heldout/__init__.py`` and the causes of earlier rounds' wrong
answers (each mistake here is a different one).

Verified without the checker (scratch script /tmp/lab08b_r3/verify.py, outside the repository):
every answer was taken through ``heldout.submitted`` and compared with the reference solution.

* train_step: 3 steps of SGD(lr=0.1, momentum=0.9) from the same seed on gu.gpt models
  (vocab 32 / seq 8 / d_model 16 / 2 heads, batch 4, the lab's shape; vocab 7 / seq 3 / d 12 /
  3 heads, batch 1, 2 and 3; targets with and without token 0 and the last vocabulary id);
  returned losses and every parameter after each step, within 1e-5.
* block_forward: blocks with every parameter redrawn from N(0, 1) (d_model 16/2 heads,
  12/3 heads, 6/1 head, 20/4 heads), x of batch 1-3 and seq 1, 2, 3, 5 and 8 (shorter than
  seq_len too); output and the gradient of every parameter and of x, within 1e-4.
* accumulate_step: two calls of three (2, 8) micro-batches, the first with 16 real tokens
  each, the second padded to 16, 5 and 12 (and a vocab 7 / seq 5 model, padded 3, 10, 1);
  returned losses and the parameters after each step, within 1e-5.

Tolerance: the largest difference over each tensor's largest magnitude + 1. Each correct answer
agreed on every input (gaps under 1e-5: 12/12 train cases, 20/20 block cases, 3/3 accumulate
cases); each wrong answer differed or raised on at least one. The subtle ones also agreed on
some: ignore_index=0 on the 5 of 12 cases without a target 0; one_hot on those holding the last
vocabulary id; the interleaved heads with one head or one token; the multiplied mask and triu(2)
with one token; the cached mask on the first shape; the bias-less qkv on a freshly built block
(zero biases, gap 0.0); the doubly divided tied weight on an untied model (only wte.weight
differs on a tied one, about 1/33 of the right gradient); the new optimizer on the first step.
"""

from heldout import Blind

TRAIN = "primer_train_step"
BLOCK = "primer_block_forward"
ACCUM = "primer_accumulate_step"

ANSWERS = [
    # ---------------------------------------------------------------- primer_train_step: right
    Blind(
        name="train_model_loss_clear_first",
        exercise_id=TRAIN,
        half="held2",
        correct=True,
        source="""
        import torch


        def train_step(model, optimizer, tokens, targets):
            model.zero_grad()  # the same parameters the optimizer holds
            _, loss = model(tokens, targets)  # the model's own mean cross-entropy
            loss.backward()
            optimizer.step()
            return float(loss)
        """,
    ),
    Blind(
        name="train_class_dim_second_clear_after",
        exercise_id=TRAIN,
        half="held2",
        correct=True,
        source="""
        import torch
        import torch.nn.functional as F


        def train_step(model, optimizer, tokens, targets):
            logits, _ = model(tokens)
            # cross_entropy takes (batch, classes, d1): move the vocabulary to dim 1
            loss = F.cross_entropy(logits.transpose(1, 2), targets)
            loss.backward()
            optimizer.step()
            for p in model.parameters():  # cleared after the update, ready for the next step
                p.grad = None
            return loss.item()
        """,
    ),
    Blind(
        name="train_log_softmax_gather",
        exercise_id=TRAIN,
        half="held2",
        correct=True,
        source="""
        import torch


        def train_step(model, optimizer, tokens, targets):
            optimizer.zero_grad(set_to_none=False)
            logits, _ = model(tokens)
            logp = torch.log_softmax(logits, dim=-1)
            picked = logp.gather(-1, targets.unsqueeze(-1)).squeeze(-1)  # (batch, seq)
            loss = -picked.mean()
            loss.backward()
            optimizer.step()
            return loss.item()
        """,
    ),
    # ---------------------------------------------------------------- primer_train_step: wrong
    Blind(
        name="train_ignore_index_zero",
        exercise_id=TRAIN,
        half="held2",
        correct=False,
        cause=(
            "It passes ignore_index=0, treating token 0 as padding, so every position whose "
            "target is token 0 is left out of the loss (right only when no target is 0)."
        ),
        hints=("whose target is token 0", "No `ignore_index=0`"),
        source="""
        import torch.nn.functional as F


        def train_step(model, optimizer, tokens, targets):
            optimizer.zero_grad()
            logits, _ = model(tokens)
            loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=0)
            loss.backward()
            optimizer.step()
            return loss.item()
        """,
    ),
    Blind(
        name="train_drops_last_position",
        exercise_id=TRAIN,
        half="held2",
        correct=False,
        cause=(
            "It drops the last position of every sequence (as if it had no next token), but the "
            "targets already hold it: the mean runs over 7 of 8 positions, not all of them."
        ),
        hints=("the last position (7) of every sequence carries no gradient",),
        source="""
        import torch.nn.functional as F


        def train_step(model, optimizer, tokens, targets):
            optimizer.zero_grad()
            logits, _ = model(tokens)
            # the last token has nothing after it
            loss = F.cross_entropy(logits[:, :-1].flatten(0, 1), targets[:, :-1].flatten())
            loss.backward()
            optimizer.step()
            return loss.item()
        """,
    ),
    Blind(
        name="train_new_optimizer_each_call",
        exercise_id=TRAIN,
        half="held2",
        correct=False,
        cause=(
            "It builds a new SGD optimizer inside the step instead of using the one passed in, "
            "so the momentum is lost (and reset every call): only the first step is right."
        ),
        hints=("not through the optimizer you were given",),
        source="""
        import torch
        import torch.nn.functional as F


        def train_step(model, optimizer, tokens, targets):
            optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
            optimizer.zero_grad()
            logits, _ = model(tokens)
            loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
            loss.backward()
            optimizer.step()
            return loss.item()
        """,
    ),
    Blind(
        name="train_one_hot_without_num_classes",
        exercise_id=TRAIN,
        half="held2",
        correct=False,
        cause=(
            "F.one_hot without num_classes sizes the one-hot targets by the largest target "
            "present, not the vocabulary, so the shapes disagree (an error) whenever the "
            "vocabulary's last token is not among the targets."
        ),
        hints=("hold no token 31", "num_classes=logits.shape[-1]"),
        source="""
        import torch.nn.functional as F


        def train_step(model, optimizer, tokens, targets):
            optimizer.zero_grad()
            logits, _ = model(tokens)
            probs = F.one_hot(targets.flatten()).float()  # class probabilities
            loss = F.cross_entropy(logits.flatten(0, 1), probs)
            loss.backward()
            optimizer.step()
            return loss.item()
        """,
    ),
    Blind(
        name="train_unpacks_loss_first",
        exercise_id=TRAIN,
        half="held2",
        correct=False,
        cause=(
            "The model returns (logits, loss) but it unpacks loss, _ = model(tokens, targets), "
            "so backward() is called on the logits tensor, which is not a scalar (an error)."
        ),
        hints=("exactly the logits", "`(logits, loss)`, in that order"),
        source="""
        def train_step(model, optimizer, tokens, targets):
            optimizer.zero_grad()
            loss, _ = model(tokens, targets)
            loss.backward()
            optimizer.step()
            return loss.item()
        """,
    ),
    Blind(
        name="train_zero_grad_not_called",
        exercise_id=TRAIN,
        half="held2",
        correct=False,
        cause=(
            "optimizer.zero_grad is written without parentheses, so it is never called and "
            "each step's gradients add onto the previous steps'."
        ),
        hints=("they accumulated",),
        source="""
        import torch.nn.functional as F


        def train_step(model, optimizer, tokens, targets):
            optimizer.zero_grad
            logits, _ = model(tokens)
            loss = F.cross_entropy(logits.flatten(0, 1), targets.flatten())
            loss.backward()
            optimizer.step()
            return loss.item()
        """,
    ),
    Blind(
        name="train_scores_against_inputs",
        exercise_id=TRAIN,
        half="held2",
        correct=False,
        cause=(
            "The loss compares the logits with the input tokens instead of the targets, so the "
            "model is trained to repeat the current token, not to predict the next one."
        ),
        hints=("its own input token",),
        source="""
        import torch.nn.functional as F


        def train_step(model, optimizer, tokens, targets):
            optimizer.zero_grad()
            logits, _ = model(tokens)
            loss = F.cross_entropy(logits.flatten(0, 1), tokens.flatten())
            loss.backward()
            optimizer.step()
            return loss.item()
        """,
    ),
    # ------------------------------------------------------------- primer_block_forward: right
    Blind(
        name="block_sdpa_chunk",
        exercise_id=BLOCK,
        half="held2",
        correct=True,
        source="""
        import torch
        import torch.nn.functional as F


        def block_forward(block, x):
            b, s, h = x.shape
            heads = block.attn.config.n_heads
            q, k, v = block.attn.qkv(block.ln1(x)).chunk(3, dim=-1)
            q, k, v = (t.reshape(b, s, heads, h // heads).permute(0, 2, 1, 3) for t in (q, k, v))
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            y = y.permute(0, 2, 1, 3).contiguous().view(b, s, h)
            x = x + block.attn.proj(y)
            hidden = F.gelu(block.mlp.fc1(block.ln2(x)))
            return x + block.mlp.fc2(hidden)
        """,
    ),
    Blind(
        name="block_loop_over_heads_einsum",
        exercise_id=BLOCK,
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
            u = block.ln1(x)
            qkv = F.linear(u, block.attn.qkv.weight, block.attn.qkv.bias)
            q_all, k_all, v_all = qkv[..., :h], qkv[..., h : 2 * h], qkv[..., 2 * h :]
            mask = torch.full((s, s), float("-inf")).triu(1)  # additive: 0 on and below
            outs = []
            for i in range(n_heads):  # one head at a time
                cols = slice(i * d, (i + 1) * d)
                q, k, v = q_all[..., cols], k_all[..., cols], v_all[..., cols]
                scores = torch.einsum("bqd,bkd->bqk", q, k) / math.sqrt(d) + mask
                outs.append(torch.softmax(scores, dim=-1) @ v)
            x = x + F.linear(torch.cat(outs, dim=-1), block.attn.proj.weight, block.attn.proj.bias)
            m = block.mlp
            return x + m.fc2(F.gelu(m.fc1(block.ln2(x))))
        """,
    ),
    Blind(
        name="block_tril_keep_scaled_q",
        exercise_id=BLOCK,
        half="held2",
        correct=True,
        source="""
        import math

        import torch
        import torch.nn.functional as F


        def block_forward(block, x):
            batch, seq, width = x.shape
            heads = block.attn.config.n_heads
            d_head = width // heads

            def split(t):
                return t.view(batch, seq, heads, d_head).transpose(1, 2)

            q, k, v = map(split, block.attn.qkv(block.ln1(x)).split(width, dim=-1))
            q = q * (1.0 / math.sqrt(d_head))  # scale the queries rather than the scores
            keep = torch.tril(torch.ones(seq, seq)) == 1  # True on and below the diagonal
            scores = (q @ k.mT).masked_fill(~keep, float("-inf"))
            weights = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
            weights = weights / weights.sum(dim=-1, keepdim=True)
            y = (weights @ v).transpose(1, 2).reshape(batch, seq, width)
            attended = x + block.attn.proj(y)
            mlp = block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(attended))))
            return attended + mlp
        """,
    ),
    # ------------------------------------------------------------- primer_block_forward: wrong
    Blind(
        name="block_mask_by_multiplying",
        exercise_id=BLOCK,
        half="held2",
        correct=False,
        cause=(
            "The mask multiplies the future scores by 0 instead of setting them to -inf, so "
            "after the softmax every later position still gets a weight of exp(0)."
        ),
        hints=("Later tokens reached them inside attention", "-inf before"),
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
            scores = scores * torch.tril(torch.ones(s, s))  # keep only the past
            probs = scores.softmax(dim=-1)
            y = (probs @ v).transpose(1, 2).reshape(b, s, h)
            x = x + block.attn.proj(y)
            return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
        """,
    ),
    Blind(
        name="block_float_d_head",
        exercise_id=BLOCK,
        half="held2",
        correct=False,
        cause=(
            "d_head is computed with / (a float, 8.0) instead of //, and view() only takes "
            "integers, so splitting the heads raises a TypeError."
        ),
        hints=("`d_head = h // n_heads`",),
        source="""
        import math

        import torch
        import torch.nn.functional as F


        def block_forward(block, x):
            b, s, h = x.shape
            n_heads = block.attn.config.n_heads
            d_head = h / n_heads
            q, k, v = block.attn.qkv(block.ln1(x)).split(h, dim=-1)
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
        name="block_residual_of_normalised_x",
        exercise_id=BLOCK,
        half="held2",
        correct=False,
        cause=(
            "x is overwritten by ln1(x), so the residual adds the attention output to the "
            "normalised input instead of to the block's raw input."
        ),
        hints=("input of `block.ln2`", "not ln1(x)"),
        source="""
        import math

        import torch
        import torch.nn.functional as F


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
    ),
    Blind(
        name="block_heads_interleaved",
        exercise_id=BLOCK,
        half="held2",
        correct=False,
        cause=(
            "The heads are split with view(b, s, d_head, n_heads), so head i takes every "
            "n_heads-th feature instead of a contiguous block of d_head features (right only "
            "with a single head)."
        ),
        hints=("every n_heads-th feature", "contiguous"),
        source="""
        import math

        import torch
        import torch.nn.functional as F


        def block_forward(block, x):
            b, s, h = x.shape
            n_heads = block.attn.config.n_heads
            d_head = h // n_heads
            q, k, v = block.attn.qkv(block.ln1(x)).split(h, dim=-1)
            # (b, s, d_head, heads) -> (b, heads, s, d_head)
            q, k, v = (t.view(b, s, d_head, n_heads).permute(0, 3, 1, 2) for t in (q, k, v))
            scores = q @ k.transpose(-2, -1) / math.sqrt(d_head)
            future = torch.ones(s, s, dtype=torch.bool).triu(1)
            probs = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
            y = (probs @ v).permute(0, 2, 3, 1).reshape(b, s, h)
            x = x + block.attn.proj(y)
            return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
        """,
    ),
    Blind(
        name="block_scale_after_softmax",
        exercise_id=BLOCK,
        half="held2",
        correct=False,
        cause=(
            "The 1/sqrt(d_head) scale is applied to the probabilities after the softmax instead "
            "of to the scores before it, so the softmax is too sharp and each row sums to "
            "1/sqrt(d_head) instead of 1."
        ),
        hints=("the scale was applied after the softmax",),
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
            scores = q @ k.transpose(-2, -1)
            future = torch.ones(s, s, dtype=torch.bool).triu(1)
            probs = scores.masked_fill(future, float("-inf")).softmax(dim=-1) / math.sqrt(d_head)
            y = (probs @ v).transpose(1, 2).reshape(b, s, h)
            x = x + block.attn.proj(y)
            return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
        """,
    ),
    Blind(
        name="block_qkv_without_bias",
        exercise_id=BLOCK,
        half="held2",
        correct=False,
        cause=(
            "q, k and v are computed by hand as ln1(x) @ qkv.weight.T without adding qkv.bias, "
            "so the bias is left out (right only while the biases are zero, as at initialisation)."
        ),
        hints=("the layer's bias included",),
        source="""
        import math

        import torch
        import torch.nn.functional as F


        def block_forward(block, x):
            b, s, h = x.shape
            n_heads = block.attn.config.n_heads
            d_head = h // n_heads
            qkv = block.ln1(x) @ block.attn.qkv.weight.T  # y = x W^T
            q, k, v = qkv.split(h, dim=-1)
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
        name="block_sdpa_mask_inverted",
        exercise_id=BLOCK,
        half="held2",
        correct=False,
        cause=(
            "It passes the masked_fill-style mask (True above the diagonal = hidden) as "
            "attn_mask to F.scaled_dot_product_attention, where a True entry means 'may attend', "
            "so each position sees only later positions and the last one sees none."
        ),
        hints=("at every earlier position",),
        source="""
        import torch
        import torch.nn.functional as F


        def block_forward(block, x):
            b, s, h = x.shape
            n_heads = block.attn.config.n_heads
            d_head = h // n_heads
            q, k, v = block.attn.qkv(block.ln1(x)).split(h, dim=-1)
            q, k, v = (t.view(b, s, n_heads, d_head).transpose(1, 2) for t in (q, k, v))
            future = torch.ones(s, s, dtype=torch.bool).triu(1)
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=future)
            y = y.transpose(1, 2).reshape(b, s, h)
            x = x + block.attn.proj(y)
            return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
        """,
    ),
    Blind(
        name="block_mask_triu_2",
        exercise_id=BLOCK,
        half="held2",
        correct=False,
        cause=(
            "The mask is triu(2) instead of triu(1), off by one: each position also attends to "
            "the next token (right only for a sequence of one token)."
        ),
        hints=("each position also sees the next one",),
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
            future = torch.ones(s, s, dtype=torch.bool).triu(2)
            probs = scores.masked_fill(future, float("-inf")).softmax(dim=-1)
            y = (probs @ v).transpose(1, 2).reshape(b, s, h)
            x = x + block.attn.proj(y)
            return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
        """,
    ),
    Blind(
        name="block_mask_cached_first_shape",
        exercise_id=BLOCK,
        half="held2",
        correct=False,
        cause=(
            "The causal mask is cached in a global on the first call and reused, so a later "
            "input with another sequence length gets a mask of the wrong size (an error, or no "
            "masking at all if the first sequence had one token)."
        ),
        hints=("an earlier call's sequence length", "from this call's"),
        source="""
        import math

        import torch
        import torch.nn.functional as F

        _future = None  # built once, reused by every call


        def block_forward(block, x):
            global _future
            b, s, h = x.shape
            n_heads = block.attn.config.n_heads
            d_head = h // n_heads
            if _future is None:
                _future = torch.ones(s, s, dtype=torch.bool).triu(1)
            q, k, v = block.attn.qkv(block.ln1(x)).split(h, dim=-1)
            q, k, v = (t.view(b, s, n_heads, d_head).transpose(1, 2) for t in (q, k, v))
            scores = q @ k.transpose(-2, -1) / math.sqrt(d_head)
            probs = scores.masked_fill(_future, float("-inf")).softmax(dim=-1)
            y = (probs @ v).transpose(1, 2).reshape(b, s, h)
            x = x + block.attn.proj(y)
            return x + block.mlp.fc2(F.gelu(block.mlp.fc1(block.ln2(x))))
        """,
    ),
    # ----------------------------------------------------------- primer_accumulate_step: right
    Blind(
        name="accum_mean_times_share",
        exercise_id=ACCUM,
        half="held2",
        correct=True,
        source="""
        import torch


        def accumulate_step(model, optimizer, micro_batches):
            counts = [int(targets.ne(-100).sum()) for _, targets in micro_batches]
            n_total = sum(counts)
            optimizer.zero_grad()
            result = 0.0
            for (tokens, targets), n in zip(micro_batches, counts):
                _, mean = model(tokens, targets)  # mean over this micro-batch's real tokens
                share = mean * (n / n_total)  # = its summed loss / N
                share.backward()
                result += share.item()
            optimizer.step()
            return result
        """,
    ),
    Blind(
        name="accum_sum_then_divide_grads",
        exercise_id=ACCUM,
        half="held2",
        correct=True,
        source="""
        import torch
        import torch.nn.functional as F


        def accumulate_step(model, optimizer, micro_batches):
            optimizer.zero_grad()
            n_real = 0
            summed_total = 0.0
            for tokens, targets in micro_batches:
                logits, _ = model(tokens)
                summed = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum")
                summed.backward()  # unscaled: the gradients add up to the batch's sum
                summed_total += summed.item()
                n_real += int((targets != -100).sum())
            with torch.no_grad():
                for p in model.parameters():  # a tied weight is yielded once
                    if p.grad is not None:
                        p.grad /= n_real  # sum -> mean over the real tokens
            optimizer.step()
            return summed_total / n_real
        """,
    ),
    Blind(
        name="accum_select_real_positions",
        exercise_id=ACCUM,
        half="held2",
        correct=True,
        source="""
        import torch
        import torch.nn.functional as F


        def accumulate_step(model, optimizer, micro_batches):
            n_tokens = sum(int((t >= 0).sum()) for _, t in micro_batches)
            loss_value = 0.0
            for tokens, targets in micro_batches:
                logits, _ = model(tokens)
                real = targets >= 0  # padding is -100
                nll = -torch.log_softmax(logits[real], dim=-1)
                picked = nll.gather(1, targets[real].unsqueeze(1)).sum()
                (picked / n_tokens).backward()
                loss_value += picked.item() / n_tokens
            optimizer.step()
            optimizer.zero_grad()  # cleared after the step, ready for the next call
            return loss_value
        """,
    ),
    # ----------------------------------------------------------- primer_accumulate_step: wrong
    Blind(
        name="accum_tied_weight_divided_twice",
        exercise_id=ACCUM,
        half="held2",
        correct=False,
        cause=(
            "The summed gradients are divided by N module by module, and the embedding weight "
            "shared by wte and lm_head is met twice, so its gradient is divided by N twice "
            "(N times too small) while every other gradient is right."
        ),
        hints=("is also `lm_head.weight`", "tied"),
        source="""
        import torch
        import torch.nn.functional as F
        from torch import nn


        def accumulate_step(model, optimizer, micro_batches):
            optimizer.zero_grad()
            n = sum(int((t != -100).sum()) for _, t in micro_batches)
            total = 0.0
            for tokens, targets in micro_batches:
                logits, _ = model(tokens)
                summed = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum")
                summed.backward()
                total += summed.item()
            with torch.no_grad():
                for module in model.modules():
                    if isinstance(module, (nn.Linear, nn.Embedding, nn.LayerNorm)):
                        module.weight.grad /= n
                        if getattr(module, "bias", None) is not None:
                            module.bias.grad /= n
            optimizer.step()
            return total / n
        """,
    ),
    Blind(
        name="accum_return_inside_loop",
        exercise_id=ACCUM,
        half="held2",
        correct=False,
        cause=(
            "The return (and the step) are indented inside the for loop, so the step is taken "
            "after the first micro-batch alone and the other two are never run."
        ),
        hints=("micro-batch 1 of 3 alone", "after the loop"),
        source="""
        import torch.nn.functional as F


        def accumulate_step(model, optimizer, micro_batches):
            optimizer.zero_grad()
            n_tokens = sum(int((t != -100).sum()) for _, t in micro_batches)
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
        name="accum_unpacks_targets_first",
        exercise_id=ACCUM,
        half="held2",
        correct=False,
        cause=(
            "Each micro-batch is unpacked as (targets, tokens) instead of (tokens, targets), so "
            "the model reads the targets as its input and is scored against the inputs (with "
            "padding, the -100 ids make the embedding lookup fail)."
        ),
        hints=("tokens and targets were swapped",),
        source="""
        import torch.nn.functional as F


        def accumulate_step(model, optimizer, micro_batches):
            optimizer.zero_grad()
            n_tokens = sum(int((t != -100).sum()) for t, _ in micro_batches)
            total = 0.0
            for targets, tokens in micro_batches:
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
        name="accum_one_target_less_per_sequence",
        exercise_id=ACCUM,
        half="held2",
        correct=False,
        cause=(
            "It counts each sequence's real tokens minus one (as if the last token had no "
            "target), but the targets are already the next tokens: the denominator is short by "
            "the number of sequences, so gradients and loss are too large."
        ),
        hints=("divided by 42, but these micro-batches hold 48",),
        source="""
        import torch.nn.functional as F


        def accumulate_step(model, optimizer, micro_batches):
            optimizer.zero_grad()
            # a sequence of n real tokens makes n - 1 predictions
            n_tokens = sum(int(((t != -100).sum(dim=1) - 1).sum()) for _, t in micro_batches)
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
        name="accum_count_per_position",
        exercise_id=ACCUM,
        half="held2",
        correct=False,
        cause=(
            "The real tokens are counted with sum(dim=0), which gives one count per position "
            "(a vector of 8) instead of one number, so the loss becomes a vector and backward() "
            "fails: sum over every axis."
        ),
        hints=("shape (8,), not one number",),
        source="""
        import torch.nn.functional as F


        def accumulate_step(model, optimizer, micro_batches):
            optimizer.zero_grad()
            n_tokens = sum((t != -100).sum(dim=0) for _, t in micro_batches)
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
        name="accum_returned_loss_divided_again",
        exercise_id=ACCUM,
        half="held2",
        correct=False,
        cause=(
            "The gradients are right, but the returned loss, already the sum of the shares "
            "summed_i / N (the batch's mean), is divided by N once more, so it is N times too small."
        ),
        hints=("Your step is right, but call 1 returned",),
        source="""
        import torch.nn.functional as F


        def accumulate_step(model, optimizer, micro_batches):
            optimizer.zero_grad()
            n_tokens = sum(int((t != -100).sum()) for _, t in micro_batches)
            total = 0.0
            for tokens, targets in micro_batches:
                logits, _ = model(tokens)
                summed = F.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="sum")
                loss = summed / n_tokens
                loss.backward()
                total += loss.item()
            optimizer.step()
            return total / n_tokens  # the mean over the real tokens
        """,
    ),
]
