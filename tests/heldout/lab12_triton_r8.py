"""Blind held-out round lab12_triton_r8 (half "held2") for labs/12_triton_lab.ipynb.

Written 2026-11-29 (about 04:03-04:13 UTC) by a helper session that never saw the checker. Read:
tests/heldout/__init__.py, the solution notebook's code cells (solutions/12_triton_lab.ipynb) and
the earlier rounds' causes list. Each answer is the reference kernel with one edit (the header
imports torch, triton and triton.language as tl).

Verification (scratch under /tmp/lab12_triton_r8/, TRITON_INTERPRET=1, CPU tensors): each answer
was loaded with heldout.submitted() and launched directly, compared with torch.
- triton_softmax: (R, C, BLOCK) = (3,5,4), (4,37,16), (2,64,16), (1,1,4), (5,100,32), randn*3,
  plus a 3x50 row set around +200 / -200 (BLOCK 16); vs torch.softmax. Correct: max err 0.
  Ratio-of-exps: NaN on the +200 rows only. Output pass from BLOCK_SIZE: first block unwritten.
- triton_layernorm: (R, C) = (3,5), (4,37), (2,64), (6,100), BLOCK = next_pow2(C), eps 1e-5, float32;
  vs F.layer_norm. Correct: err 0. program_id(1): rows 1.. unwritten (garbage). Mean abs deviation:
  errors 1-3.
- triton_cross_entropy: float16 h, w; (n_rows, vocab, HIDDEN, BLOCK_M, BLOCK_V) = (5,37,16,16,16),
  (20,100,32,16,32), (3,10,16,16,16); vs F.cross_entropy(h.float() @ w.float().T). Correct: err
  < 1e-4. 1/sqrt(HIDDEN) scale: errors 3-24. Picked overwritten: inf when vocab > BLOCK_V. First-block
  max in the lse: errors 3-9 when vocab > BLOCK_V (exact with one block).
- triton_cross_entropy_backward: float32 logits (N, vocab, BLOCK_V) = (3,10,16), (4,100,32), (2,64,16),
  dloss in [0.5, 1.5); vs (softmax - onehot) * dloss. Correct: err 0. First block only and lse from
  the first block: wrong when vocab > BLOCK_V. dloss ignored: wrong on every size.
- triton_matmul: float32 a (M x K) and b as a transposed view (strides (1, K)), (M, N, K) =
  (16,16,16), (20,24,40), (33,17,50), (32,32,32), blocks 16, ACTIVATION "none"/"relu"; vs a @ b
  (clamped). Correct: err < 4e-6. Leaky relu: err ~0.17 with "relu". A first idea (c's strides
  swapped, a transposed store) was dropped: its out-of-bounds writes corrupted the interpreter's
  heap and aborted the process, which would crash a checker rather than be caught.
A first idea (softmax running sum starting at 1.0) was dropped: exp(-inf - m) = 0 wipes it on the
first block, so it is actually correct.
"""

from heldout import Blind

ANSWERS = [
    Blind(
        name="softmax_where_padding",
        exercise_id="triton_softmax",
        half="held2",
        correct=True,
        source='import torch\nimport triton\nimport triton.language as tl\n\n@triton.jit\ndef softmax_kernel(x_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):\n    row = tl.program_id(0)\n    x_row = x_ptr + row * x_row_stride\n    out_row = out_ptr + row * out_row_stride\n    m = -float("inf")\n    s = 0.0\n    for start in range(0, n_cols, BLOCK_SIZE):\n        cols = start + tl.arange(0, BLOCK_SIZE)\n        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0)\n        x = tl.where(cols < n_cols, x, -float("inf"))\n        m_new = tl.maximum(m, tl.max(x, axis=0))\n        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)\n        m = m_new\n    for start in range(0, n_cols, BLOCK_SIZE):\n        cols = start + tl.arange(0, BLOCK_SIZE)\n        mask = cols < n_cols\n        x = tl.load(x_row + cols, mask=mask, other=-float("inf"))\n        tl.store(out_row + cols, tl.exp(x - m) / s, mask=mask)\n    ### END SOLUTION',
    ),
    Blind(
        name="softmax_rescale_as_ratio_of_exps",
        exercise_id="triton_softmax",
        half="held2",
        correct=False,
        cause="The rescale factor is computed as exp(m) / exp(m_new) instead of exp(m - m_new): for rows with values above about 88 both exps overflow to inf and inf / inf gives NaN, although the maxima were meant to keep the exps bounded.",
        source='import torch\nimport triton\nimport triton.language as tl\n\n@triton.jit\ndef softmax_kernel(x_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):\n    row = tl.program_id(0)\n    x_row = x_ptr + row * x_row_stride\n    out_row = out_ptr + row * out_row_stride\n    m = -float("inf")\n    s = 0.0\n    for start in range(0, n_cols, BLOCK_SIZE):\n        cols = start + tl.arange(0, BLOCK_SIZE)\n        x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf"))\n        m_new = tl.maximum(m, tl.max(x, axis=0))\n        s = s * (tl.exp(m) / tl.exp(m_new)) + tl.sum(tl.exp(x - m_new), axis=0)\n        m = m_new\n    for start in range(0, n_cols, BLOCK_SIZE):\n        cols = start + tl.arange(0, BLOCK_SIZE)\n        mask = cols < n_cols\n        x = tl.load(x_row + cols, mask=mask, other=-float("inf"))\n        tl.store(out_row + cols, tl.exp(x - m) / s, mask=mask)\n    ### END SOLUTION',
        hints=("exp(x - m)",),
    ),
    Blind(
        name="softmax_log_sum_in_exponent",
        exercise_id="triton_softmax",
        half="held2",
        correct=True,
        source='import torch\nimport triton\nimport triton.language as tl\n\n@triton.jit\ndef softmax_kernel(x_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):\n    row = tl.program_id(0)\n    x_row = x_ptr + row * x_row_stride\n    out_row = out_ptr + row * out_row_stride\n    m = -float("inf")\n    s = 0.0\n    for start in range(0, n_cols, BLOCK_SIZE):\n        cols = start + tl.arange(0, BLOCK_SIZE)\n        x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf"))\n        m_new = tl.maximum(m, tl.max(x, axis=0))\n        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)\n        m = m_new\n    for start in range(0, n_cols, BLOCK_SIZE):\n        cols = start + tl.arange(0, BLOCK_SIZE)\n        mask = cols < n_cols\n        x = tl.load(x_row + cols, mask=mask, other=-float("inf"))\n        tl.store(out_row + cols, tl.exp(x - (m + tl.log(s))), mask=mask)\n    ### END SOLUTION',
    ),
    Blind(
        name="softmax_output_pass_skips_first_block",
        exercise_id="triton_softmax",
        half="held2",
        correct=False,
        cause="The output pass starts at column BLOCK_SIZE instead of 0, so the first block of every row is never written.",
        source='import torch\nimport triton\nimport triton.language as tl\n\n@triton.jit\ndef softmax_kernel(x_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):\n    row = tl.program_id(0)\n    x_row = x_ptr + row * x_row_stride\n    out_row = out_ptr + row * out_row_stride\n    m = -float("inf")\n    s = 0.0\n    for start in range(0, n_cols, BLOCK_SIZE):\n        cols = start + tl.arange(0, BLOCK_SIZE)\n        x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf"))\n        m_new = tl.maximum(m, tl.max(x, axis=0))\n        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)\n        m = m_new\n    for start in range(BLOCK_SIZE, n_cols, BLOCK_SIZE):\n        cols = start + tl.arange(0, BLOCK_SIZE)\n        mask = cols < n_cols\n        x = tl.load(x_row + cols, mask=mask, other=-float("inf"))\n        tl.store(out_row + cols, tl.exp(x - m) / s, mask=mask)\n    ### END SOLUTION',
        hints=("columns 0-31 are never written",),
    ),
    Blind(
        name="layernorm_rsqrt",
        exercise_id="triton_layernorm",
        half="held2",
        correct=True,
        source="import torch\nimport triton\nimport triton.language as tl\n\n@triton.jit\ndef layernorm_kernel(\n    x_ptr,\n    w_ptr,\n    b_ptr,\n    out_ptr,\n    x_row_stride,\n    out_row_stride,\n    n_cols,\n    eps,\n    BLOCK_SIZE: tl.constexpr,\n):\n    row = tl.program_id(0)\n    cols = tl.arange(0, BLOCK_SIZE)\n    mask = cols < n_cols\n    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0)\n    mean = tl.sum(x, axis=0) / n_cols\n    diff = tl.where(mask, x - mean, 0.0)\n    var = tl.sum(diff * diff, axis=0) / n_cols\n    rstd = tl.rsqrt(var + eps)\n    w = tl.load(w_ptr + cols, mask=mask)\n    b = tl.load(b_ptr + cols, mask=mask)\n    tl.store(out_ptr + row * out_row_stride + cols, diff * rstd * w + b, mask=mask)\n    ### END SOLUTION",
    ),
    Blind(
        name="layernorm_program_id_axis1",
        exercise_id="triton_layernorm",
        half="held2",
        correct=False,
        cause="The row is read from tl.program_id(1), but the grid is one-dimensional (one program per row on axis 0), so every program normalises and writes row 0 and the other rows are never written.",
        source="import torch\nimport triton\nimport triton.language as tl\n\n@triton.jit\ndef layernorm_kernel(\n    x_ptr,\n    w_ptr,\n    b_ptr,\n    out_ptr,\n    x_row_stride,\n    out_row_stride,\n    n_cols,\n    eps,\n    BLOCK_SIZE: tl.constexpr,\n):\n    row = tl.program_id(1)\n    cols = tl.arange(0, BLOCK_SIZE)\n    mask = cols < n_cols\n    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0)\n    mean = tl.sum(x, axis=0) / n_cols\n    diff = tl.where(mask, x - mean, 0.0)\n    var = tl.sum(diff * diff, axis=0) / n_cols\n    rstd = 1.0 / tl.sqrt(var + eps)\n    w = tl.load(w_ptr + cols, mask=mask)\n    b = tl.load(b_ptr + cols, mask=mask)\n    tl.store(out_ptr + row * out_row_stride + cols, diff * rstd * w + b, mask=mask)\n    ### END SOLUTION",
        hints=("only row 0 was written",),
    ),
    Blind(
        name="layernorm_mean_abs_deviation",
        exercise_id="triton_layernorm",
        half="held2",
        correct=False,
        cause="The variance is taken as the mean absolute deviation sum(|x - mean|) / n_cols instead of the mean squared deviation sum((x - mean)^2) / n_cols.",
        source="import torch\nimport triton\nimport triton.language as tl\n\n@triton.jit\ndef layernorm_kernel(\n    x_ptr,\n    w_ptr,\n    b_ptr,\n    out_ptr,\n    x_row_stride,\n    out_row_stride,\n    n_cols,\n    eps,\n    BLOCK_SIZE: tl.constexpr,\n):\n    row = tl.program_id(0)\n    cols = tl.arange(0, BLOCK_SIZE)\n    mask = cols < n_cols\n    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0)\n    mean = tl.sum(x, axis=0) / n_cols\n    diff = tl.where(mask, x - mean, 0.0)\n    var = tl.sum(tl.abs(diff), axis=0) / n_cols\n    rstd = 1.0 / tl.sqrt(var + eps)\n    w = tl.load(w_ptr + cols, mask=mask)\n    b = tl.load(b_ptr + cols, mask=mask)\n    tl.store(out_ptr + row * out_row_stride + cols, diff * rstd * w + b, mask=mask)\n    ### END SOLUTION",
        hints=("sum((x - mean)^2)",),
    ),
    Blind(
        name="ce_exp2_with_log2e",
        exercise_id="triton_cross_entropy",
        half="held2",
        correct=True,
        source='import torch\nimport triton\nimport triton.language as tl\n\n@triton.jit\ndef cross_entropy_kernel(\n    h_ptr,\n    w_ptr,\n    target_ptr,\n    loss_ptr,\n    n_rows,\n    vocab,\n    stride_h,\n    stride_w,\n    HIDDEN: tl.constexpr,\n    BLOCK_M: tl.constexpr,\n    BLOCK_V: tl.constexpr,\n):\n    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)\n    dims = tl.arange(0, HIDDEN)\n    row_ok = rows < n_rows\n    h = tl.load(h_ptr + rows[:, None] * stride_h + dims[None, :], mask=row_ok[:, None], other=0.0)\n    target = tl.load(target_ptr + rows, mask=row_ok, other=0)\n    m = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)\n    s = tl.zeros((BLOCK_M,), dtype=tl.float32)\n    picked = tl.zeros((BLOCK_M,), dtype=tl.float32)\n    for v0 in range(0, vocab, BLOCK_V):\n        cols = v0 + tl.arange(0, BLOCK_V)\n        w = tl.load(\n            w_ptr + cols[:, None] * stride_w + dims[None, :], mask=cols[:, None] < vocab, other=0.0\n        )\n        logits = tl.dot(h, tl.trans(w))\n        logits = tl.where(cols[None, :] < vocab, logits, -float("inf"))\n        m_new = tl.maximum(m, tl.max(logits, axis=1))\n        LOG2E = 1.4426950408889634\n        s = s * tl.exp2((m - m_new) * LOG2E) + tl.sum(tl.exp2((logits - m_new[:, None]) * LOG2E), axis=1)\n        m = m_new\n        picked += tl.sum(tl.where(cols[None, :] == target[:, None], logits, 0.0), axis=1)\n    tl.store(loss_ptr + rows, m + tl.log(s) - picked, mask=row_ok)\n    ### END SOLUTION',
    ),
    Blind(
        name="ce_logits_scaled_by_sqrt_hidden",
        exercise_id="triton_cross_entropy",
        half="held2",
        correct=False,
        cause="The logits are scaled by 1/sqrt(HIDDEN) (copied from attention), but the cross-entropy logits are the plain products h @ w^T with no scale.",
        source='import torch\nimport triton\nimport triton.language as tl\n\n@triton.jit\ndef cross_entropy_kernel(\n    h_ptr,\n    w_ptr,\n    target_ptr,\n    loss_ptr,\n    n_rows,\n    vocab,\n    stride_h,\n    stride_w,\n    HIDDEN: tl.constexpr,\n    BLOCK_M: tl.constexpr,\n    BLOCK_V: tl.constexpr,\n):\n    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)\n    dims = tl.arange(0, HIDDEN)\n    row_ok = rows < n_rows\n    h = tl.load(h_ptr + rows[:, None] * stride_h + dims[None, :], mask=row_ok[:, None], other=0.0)\n    target = tl.load(target_ptr + rows, mask=row_ok, other=0)\n    m = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)\n    s = tl.zeros((BLOCK_M,), dtype=tl.float32)\n    picked = tl.zeros((BLOCK_M,), dtype=tl.float32)\n    for v0 in range(0, vocab, BLOCK_V):\n        cols = v0 + tl.arange(0, BLOCK_V)\n        w = tl.load(\n            w_ptr + cols[:, None] * stride_w + dims[None, :], mask=cols[:, None] < vocab, other=0.0\n        )\n        logits = tl.dot(h, tl.trans(w)) * (1.0 / (HIDDEN ** 0.5))\n        logits = tl.where(cols[None, :] < vocab, logits, -float("inf"))\n        m_new = tl.maximum(m, tl.max(logits, axis=1))\n        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(logits - m_new[:, None]), axis=1)\n        m = m_new\n        picked += tl.sum(tl.where(cols[None, :] == target[:, None], logits, 0.0), axis=1)\n    tl.store(loss_ptr + rows, m + tl.log(s) - picked, mask=row_ok)\n    ### END SOLUTION',
    ),
    Blind(
        name="ce_picked_overwritten_each_block",
        exercise_id="triton_cross_entropy",
        half="held2",
        correct=False,
        cause="The target logit is assigned afresh in every vocabulary block (picked = max over the block, -inf when the target is not there) instead of accumulated, so only rows whose target lies in the last block keep it; the others get an infinite loss.",
        source='import torch\nimport triton\nimport triton.language as tl\n\n@triton.jit\ndef cross_entropy_kernel(\n    h_ptr,\n    w_ptr,\n    target_ptr,\n    loss_ptr,\n    n_rows,\n    vocab,\n    stride_h,\n    stride_w,\n    HIDDEN: tl.constexpr,\n    BLOCK_M: tl.constexpr,\n    BLOCK_V: tl.constexpr,\n):\n    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)\n    dims = tl.arange(0, HIDDEN)\n    row_ok = rows < n_rows\n    h = tl.load(h_ptr + rows[:, None] * stride_h + dims[None, :], mask=row_ok[:, None], other=0.0)\n    target = tl.load(target_ptr + rows, mask=row_ok, other=0)\n    m = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)\n    s = tl.zeros((BLOCK_M,), dtype=tl.float32)\n    picked = tl.zeros((BLOCK_M,), dtype=tl.float32)\n    for v0 in range(0, vocab, BLOCK_V):\n        cols = v0 + tl.arange(0, BLOCK_V)\n        w = tl.load(\n            w_ptr + cols[:, None] * stride_w + dims[None, :], mask=cols[:, None] < vocab, other=0.0\n        )\n        logits = tl.dot(h, tl.trans(w))\n        logits = tl.where(cols[None, :] < vocab, logits, -float("inf"))\n        m_new = tl.maximum(m, tl.max(logits, axis=1))\n        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(logits - m_new[:, None]), axis=1)\n        m = m_new\n        picked = tl.max(tl.where(cols[None, :] == target[:, None], logits, -float("inf")), axis=1)\n    tl.store(loss_ptr + rows, m + tl.log(s) - picked, mask=row_ok)\n    ### END SOLUTION',
        hints=("not in the last block",),
    ),
    Blind(
        name="ce_lse_uses_first_block_max",
        exercise_id="triton_cross_entropy",
        half="held2",
        correct=False,
        cause="The loss uses the maximum of the first vocabulary block for the log-sum-exp while the sum s was rescaled to the final running maximum, so the log-sum-exp is off whenever a later block raises the maximum.",
        source='import torch\nimport triton\nimport triton.language as tl\n\n@triton.jit\ndef cross_entropy_kernel(\n    h_ptr,\n    w_ptr,\n    target_ptr,\n    loss_ptr,\n    n_rows,\n    vocab,\n    stride_h,\n    stride_w,\n    HIDDEN: tl.constexpr,\n    BLOCK_M: tl.constexpr,\n    BLOCK_V: tl.constexpr,\n):\n    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)\n    dims = tl.arange(0, HIDDEN)\n    row_ok = rows < n_rows\n    h = tl.load(h_ptr + rows[:, None] * stride_h + dims[None, :], mask=row_ok[:, None], other=0.0)\n    target = tl.load(target_ptr + rows, mask=row_ok, other=0)\n    m = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)\n    m_first = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)\n    s = tl.zeros((BLOCK_M,), dtype=tl.float32)\n    picked = tl.zeros((BLOCK_M,), dtype=tl.float32)\n    for v0 in range(0, vocab, BLOCK_V):\n        cols = v0 + tl.arange(0, BLOCK_V)\n        w = tl.load(\n            w_ptr + cols[:, None] * stride_w + dims[None, :], mask=cols[:, None] < vocab, other=0.0\n        )\n        logits = tl.dot(h, tl.trans(w))\n        logits = tl.where(cols[None, :] < vocab, logits, -float("inf"))\n        m_new = tl.maximum(m, tl.max(logits, axis=1))\n        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(logits - m_new[:, None]), axis=1)\n        m = m_new\n        if v0 == 0:\n            m_first = m_new\n        picked += tl.sum(tl.where(cols[None, :] == target[:, None], logits, 0.0), axis=1)\n    tl.store(loss_ptr + rows, m_first + tl.log(s) - picked, mask=row_ok)\n    ### END SOLUTION',
    ),
    Blind(
        name="ceb_where_minus_one",
        exercise_id="triton_cross_entropy_backward",
        half="held2",
        correct=True,
        source="import torch\nimport triton\nimport triton.language as tl\n\n@triton.jit\ndef cross_entropy_backward_kernel(\n    logits_ptr,\n    target_ptr,\n    lse_ptr,\n    dloss_ptr,\n    dlogits_ptr,\n    vocab,\n    stride_logits,\n    stride_dlogits,\n    BLOCK_V: tl.constexpr,\n):\n    row = tl.program_id(0)\n    target = tl.load(target_ptr + row)\n    lse = tl.load(lse_ptr + row)\n    dloss = tl.load(dloss_ptr + row)\n    for start in range(0, vocab, BLOCK_V):\n        cols = start + tl.arange(0, BLOCK_V)\n        mask = cols < vocab\n        x = tl.load(logits_ptr + row * stride_logits + cols, mask=mask, other=0.0)\n        p = tl.exp(x - lse)\n        grad = tl.where(cols == target, p - 1.0, p) * dloss\n        tl.store(dlogits_ptr + row * stride_dlogits + cols, grad, mask=mask)\n    ### END SOLUTION",
    ),
    Blind(
        name="ceb_first_block_only",
        exercise_id="triton_cross_entropy_backward",
        half="held2",
        correct=False,
        cause="The kernel handles only the first BLOCK_V columns (no loop over the vocabulary), so when vocab > BLOCK_V the gradients of the later columns are never written.",
        source="import torch\nimport triton\nimport triton.language as tl\n\n@triton.jit\ndef cross_entropy_backward_kernel(\n    logits_ptr,\n    target_ptr,\n    lse_ptr,\n    dloss_ptr,\n    dlogits_ptr,\n    vocab,\n    stride_logits,\n    stride_dlogits,\n    BLOCK_V: tl.constexpr,\n):\n    row = tl.program_id(0)\n    target = tl.load(target_ptr + row)\n    lse = tl.load(lse_ptr + row)\n    dloss = tl.load(dloss_ptr + row)\n    for start in range(0, 1):\n        cols = start + tl.arange(0, BLOCK_V)\n        mask = cols < vocab\n        x = tl.load(logits_ptr + row * stride_logits + cols, mask=mask, other=0.0)\n        p = tl.exp(x - lse)\n        grad = (p - tl.where(cols == target, 1.0, 0.0)) * dloss\n        tl.store(dlogits_ptr + row * stride_dlogits + cols, grad, mask=mask)\n    ### END SOLUTION",
        hints=("loop must cover every block",),
    ),
    Blind(
        name="ceb_dloss_ignored",
        exercise_id="triton_cross_entropy_backward",
        half="held2",
        correct=False,
        cause="dloss is loaded but never used: the kernel stores softmax - onehot, the gradient for dloss = 1, instead of (softmax - onehot) * dloss.",
        source="import torch\nimport triton\nimport triton.language as tl\n\n@triton.jit\ndef cross_entropy_backward_kernel(\n    logits_ptr,\n    target_ptr,\n    lse_ptr,\n    dloss_ptr,\n    dlogits_ptr,\n    vocab,\n    stride_logits,\n    stride_dlogits,\n    BLOCK_V: tl.constexpr,\n):\n    row = tl.program_id(0)\n    target = tl.load(target_ptr + row)\n    lse = tl.load(lse_ptr + row)\n    dloss = tl.load(dloss_ptr + row)\n    for start in range(0, vocab, BLOCK_V):\n        cols = start + tl.arange(0, BLOCK_V)\n        mask = cols < vocab\n        x = tl.load(logits_ptr + row * stride_logits + cols, mask=mask, other=0.0)\n        p = tl.exp(x - lse)\n        grad = p - tl.where(cols == target, 1.0, 0.0)\n        tl.store(dlogits_ptr + row * stride_dlogits + cols, grad, mask=mask)\n    ### END SOLUTION",
        hints=("never multiplied by dloss",),
    ),
    Blind(
        name="ceb_lse_from_first_block",
        exercise_id="triton_cross_entropy_backward",
        half="held2",
        correct=False,
        cause="The softmax is normalised by a log-sum-exp recomputed from the first block of logits only, instead of the lse the forward pass saved for the whole row, so when vocab > BLOCK_V the probabilities are too large.",
        source='import torch\nimport triton\nimport triton.language as tl\n\n@triton.jit\ndef cross_entropy_backward_kernel(\n    logits_ptr,\n    target_ptr,\n    lse_ptr,\n    dloss_ptr,\n    dlogits_ptr,\n    vocab,\n    stride_logits,\n    stride_dlogits,\n    BLOCK_V: tl.constexpr,\n):\n    row = tl.program_id(0)\n    target = tl.load(target_ptr + row)\n    c0 = tl.arange(0, BLOCK_V)\n    x0 = tl.load(logits_ptr + row * stride_logits + c0, mask=c0 < vocab, other=-float("inf"))\n    m0 = tl.max(x0, axis=0)\n    lse = m0 + tl.log(tl.sum(tl.exp(x0 - m0), axis=0))\n    dloss = tl.load(dloss_ptr + row)\n    for start in range(0, vocab, BLOCK_V):\n        cols = start + tl.arange(0, BLOCK_V)\n        mask = cols < vocab\n        x = tl.load(logits_ptr + row * stride_logits + cols, mask=mask, other=0.0)\n        p = tl.exp(x - lse)\n        grad = (p - tl.where(cols == target, 1.0, 0.0)) * dloss\n        tl.store(dlogits_ptr + row * stride_dlogits + cols, grad, mask=mask)\n    ### END SOLUTION',
        hints=("lse_ptr + row",),
    ),
    Blind(
        name="matmul_relu_with_where",
        exercise_id="triton_matmul",
        half="held2",
        correct=True,
        source='import torch\nimport triton\nimport triton.language as tl\n\n@triton.jit\ndef matmul_kernel(\n    a_ptr,\n    b_ptr,\n    c_ptr,\n    M,\n    N,\n    K,\n    stride_am,\n    stride_ak,\n    stride_bk,\n    stride_bn,\n    stride_cm,\n    stride_cn,\n    BLOCK_M: tl.constexpr,\n    BLOCK_N: tl.constexpr,\n    BLOCK_K: tl.constexpr,\n    ACTIVATION: tl.constexpr,\n):\n    pid_m = tl.program_id(0)\n    pid_n = tl.program_id(1)\n    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)\n    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)\n    offs_k = tl.arange(0, BLOCK_K)\n    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak\n    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn\n    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)\n    for k in range(0, K, BLOCK_K):\n        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k), other=0.0)\n        b = tl.load(b_ptrs, mask=(offs_k[:, None] < K - k) & (offs_n[None, :] < N), other=0.0)\n        acc += tl.dot(a, b)\n        a_ptrs += BLOCK_K * stride_ak\n        b_ptrs += BLOCK_K * stride_bk\n    if ACTIVATION == "relu":\n        acc = tl.where(acc > 0, acc, 0.0)\n    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn\n    tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))\n    ### END SOLUTION',
    ),
    Blind(
        name="matmul_leaky_relu",
        exercise_id="triton_matmul",
        half="held2",
        correct=False,
        cause="The epilogue computes a leaky relu, tl.maximum(acc, 0.01 * acc), which keeps 1% of the negative values; relu sets them to exactly 0.",
        source='import torch\nimport triton\nimport triton.language as tl\n\n@triton.jit\ndef matmul_kernel(\n    a_ptr,\n    b_ptr,\n    c_ptr,\n    M,\n    N,\n    K,\n    stride_am,\n    stride_ak,\n    stride_bk,\n    stride_bn,\n    stride_cm,\n    stride_cn,\n    BLOCK_M: tl.constexpr,\n    BLOCK_N: tl.constexpr,\n    BLOCK_K: tl.constexpr,\n    ACTIVATION: tl.constexpr,\n):\n    pid_m = tl.program_id(0)\n    pid_n = tl.program_id(1)\n    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)\n    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)\n    offs_k = tl.arange(0, BLOCK_K)\n    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak\n    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn\n    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)\n    for k in range(0, K, BLOCK_K):\n        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k), other=0.0)\n        b = tl.load(b_ptrs, mask=(offs_k[:, None] < K - k) & (offs_n[None, :] < N), other=0.0)\n        acc += tl.dot(a, b)\n        a_ptrs += BLOCK_K * stride_ak\n        b_ptrs += BLOCK_K * stride_bk\n    if ACTIVATION == "relu":\n        acc = tl.maximum(acc, 0.01 * acc)\n    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn\n    tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))\n    ### END SOLUTION',
        hints=("a leaky relu",),
    ),
]
