"""Blind held-out round lab12_triton_r9 (half "held2") for labs/12_triton_lab.ipynb.

Written 2026-11-29 (about 06:09-06:18 UTC) by a helper session that never saw the checker. Read:
tests/heldout/__init__.py, the solution notebook's code cells (solutions/12_triton_lab.ipynb), the
docstring and first entries of lab12_triton_r8.py (format only) and the earlier rounds' causes
list (/tmp/blind/causes_lab12_triton.txt); every wrong answer here has a mistake not on that list.
Each answer's header imports torch, triton and triton.language as tl (the string H).

Verification (scratch under /tmp/lab12_triton_r9/, GPU_COURSE_MODE=simulator, TRITON_INTERPRET=1,
CPU tensors, outputs filled with NaN first): each answer was loaded with heldout.submitted() and
launched directly, compared with torch.
- triton_vector_add: n = 1, 3, 100, 1000, 1025 (BLOCK 32-256) vs x + y. Store at local lanes: exact
  for n <= BLOCK, NaN past the first block otherwise.
- triton_outer_add: (M, N, BLOCK_M, BLOCK_N) = (1,1,16,16), (3,5,16,16), (37,70,16,16),
  (70,37,32,16), (20,70,16,32), out a view with rows 80 apart. Product: errors ~0.9 on every size.
- triton_row_sum: (R, C, BLOCK) = (3,1,128), (4,37,16), (2,3000,128) float32, (3,3000,128),
  (2,3000,256) float16, rows padded by 7. Scalar total: rel. err < 1e-7. Stride mask: exact for
  contiguous rows or C a multiple of BLOCK, reads outside x (LaunchOutOfBounds) on padded rows
  with C = 1, 37, 70.
- triton_softmax: (R, C, BLOCK) = (3,5,4), (4,37,16), (1,1,4), (5,100,32), (1,37,64), rows of
  randn*3 and 3x50 rows around +200 / -200, x and out padded views. out_ptr + row: writes outside
  the padded out view (LaunchOutOfBounds); with contiguous out, NaN left in 8-108 elements (exact
  only for one row or one column). Per-lane sum: errors ~0.8-1 unless C = 1.
- triton_layernorm: (R, C) = (3,5), (4,37), (2,64), (6,100), (1,1), BLOCK = next_pow2(C), eps 1e-5,
  padded x; vs F.layer_norm. exp(-0.5 log) rstd: err < 1e-6. w unused: errors 4-9.
- triton_matmul: float16 a (M x K) and b a transposed view, (M, N, K) = (16,16,16), (20,24,40),
  (33,17,50), (1,2,3), (32,32,64), blocks 16, "none"/"relu"; vs a.float() @ b.float(). tl.cdiv loop
  with tl.dot(a, b, acc): err < 1e-5. Global offs_k with mask K - k: exact for K <= 16, errors
  10-20 for K = 40, 50, 64.
- triton_flash_attention: float16 q, k, v, (L, D, BLOCK_M, BLOCK_N, causal) = (1,16,16,16,F),
  (3,16,16,16,T), (37,32,16,16,F/T), (64,16,32,16,T), (50,16,16,32,F), sm_scale 1/sqrt(D); vs
  F.scaled_dot_product_attention in float32. exp2 + full key range: err < 3e-4. Row sum on axis 0:
  errors 1-14 with equal blocks, a shape error with unequal blocks. Divided by sm_scale: errors
  0.4-3 (exact only for L = 1).
- triton_cross_entropy: float16 h (padded rows) and w, (n, vocab, HIDDEN, BLOCK_M, BLOCK_V) =
  (5,37,16,16,16), (20,100,32,16,32), (3,10,16,16,16), (1,1,16,16,16), (40,70,32,16,16); vs
  F.cross_entropy(h.float() @ w.float().T, reduction="none"). w^T loaded by pointers: err < 1e-6.
  One target per program: errors 0.9-12 (exact only for n = 1).
- triton_cross_entropy_backward: float32 logits (padded), dlogits padded, (n, vocab, BLOCK_V) =
  (3,10,16), (4,100,32), (2,64,16), (1,1,16), (3,37,16), dloss in [0.5, 1.5); vs (softmax - onehot)
  * dloss. Float one-hot product: err < 2e-7. exp(x) / lse: errors 7-2900.
The six right answers were also compiled with triton.compile for GPUTarget("cuda", 90, 32)
(float16 inputs where the lab has them): all compile.
A first idea for the row sum (accumulator in the input's dtype, float16) was dropped: its error,
about 2.5e-4 of the sum on 3,000 float16 values, might sit inside a checker's tolerance.
"""

from heldout import Blind

H = "import torch\nimport triton\nimport triton.language as tl\n\n"

ANSWERS = [
    # ---------------------------------------------------------------- vector add
    Blind(
        name="add_store_at_local_lanes",
        exercise_id="triton_vector_add",
        half="held2",
        correct=False,
        cause="The loads use the global offsets pid * BLOCK_SIZE + arange, but the store goes to out_ptr + tl.arange(0, BLOCK_SIZE), the lanes inside the block, so every program writes its sums over the first block of out and everything past the first block is never written (whenever n_elements > BLOCK_SIZE).",
        source=H
        + """@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    lanes = tl.arange(0, BLOCK_SIZE)
    offsets = pid * BLOCK_SIZE + lanes
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + lanes, x + y, mask=mask)
""",
        hints=("stored into the first one",),
    ),
    # ---------------------------------------------------------------- outer add
    Blind(
        name="outer_add_multiplies",
        exercise_id="triton_outer_add",
        half="held2",
        correct=False,
        cause="The tile is the outer product x[:, None] * y[None, :] instead of the outer sum x[:, None] + y[None, :]: out[i, j] must be x[i] + y[j].",
        source=H
        + """@triton.jit
def outer_add_kernel(
    x_ptr,
    y_ptr,
    out_ptr,
    M,
    N,
    out_row_stride,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + offs_m, mask=offs_m < M)
    y = tl.load(y_ptr + offs_n, mask=offs_n < N)
    out_ptrs = out_ptr + offs_m[:, None] * out_row_stride + offs_n[None, :]
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(out_ptrs, x[:, None] * y[None, :], mask=mask)
""",
        hints=("x[i] + y[j]",),
    ),
    # ---------------------------------------------------------------- row sum
    Blind(
        name="row_sum_scalar_total",
        exercise_id="triton_row_sum",
        half="held2",
        correct=True,
        source=H
        + """@triton.jit
def row_sum_kernel(x_ptr, out_ptr, x_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    total = tl.zeros((), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        block = tl.load(x_ptr + row * x_row_stride + cols, mask=cols < n_cols, other=0.0)
        total += tl.sum(block.to(tl.float32), axis=0)
    tl.store(out_ptr + row, total)
""",
    ),
    Blind(
        name="row_sum_mask_by_row_stride",
        exercise_id="triton_row_sum",
        half="held2",
        correct=False,
        cause="The mask is cols < x_row_stride, the distance between rows, instead of cols < n_cols, the row's length, so when x's rows are padded (x_row_stride > n_cols) and n_cols is not a multiple of BLOCK_SIZE, the last block reads the padding past each row's end (outside x) and adds it to the sum; it is only right for contiguous rows.",
        source=H
        + """@triton.jit
def row_sum_kernel(x_ptr, out_ptr, x_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * x_row_stride
    acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_row + cols, mask=cols < x_row_stride, other=0.0)
        acc += x.to(tl.float32)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))
""",
        hints=("cols < n_cols",),
    ),
    # ---------------------------------------------------------------- softmax
    Blind(
        name="softmax_out_row_offset_by_row",
        exercise_id="triton_softmax",
        half="held2",
        correct=False,
        cause="The output row starts at out_ptr + row (one element per row, as in the row sum's out) instead of out_ptr + row * out_row_stride, so the rows' outputs overlap, each row overwriting all but the first element of the one before, and most of out is never written (whenever there are two or more rows of more than one column).",
        source=H
        + """@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * x_row_stride
    out_row = out_ptr + row
    m = -float("inf")
    s = 0.0
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf"))
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=-float("inf"))
        tl.store(out_row + cols, tl.exp(x - m) / s, mask=mask)
""",
        hints=("wrong places",),
    ),
    Blind(
        name="softmax_per_lane_sum_not_reduced",
        exercise_id="triton_softmax",
        half="held2",
        correct=False,
        cause="The running sum s is kept per lane (s = s * exp(m - m_new) + exp(x - m_new), a vector of BLOCK_SIZE) and never reduced, so the output pass divides each element by its own lane's partial sum instead of the row's total tl.sum(s).",
        source=H
        + """@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * x_row_stride
    out_row = out_ptr + row * out_row_stride
    m = -float("inf")
    s = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf"))
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.exp(x - m_new)
        m = m_new
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=-float("inf"))
        tl.store(out_row + cols, tl.exp(x - m) / s, mask=mask)
""",
        hints=("its own lane",),
    ),
    # ---------------------------------------------------------------- layer norm
    Blind(
        name="layernorm_exp_log_rstd",
        exercise_id="triton_layernorm",
        half="held2",
        correct=True,
        source=H
        + """@triton.jit
def layernorm_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
    out_ptr,
    x_row_stride,
    out_row_stride,
    n_cols,
    eps,
    BLOCK_SIZE: tl.constexpr,
):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    valid = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=valid, other=0.0)
    mu = tl.sum(x, axis=0) / n_cols
    xc = x - mu
    xc = tl.where(valid, xc, tl.zeros_like(xc))
    sigma2 = tl.sum(xc * xc, axis=0) / n_cols
    inv = tl.exp(-0.5 * tl.log(sigma2 + eps))
    w = tl.load(w_ptr + cols, mask=valid, other=1.0)
    b = tl.load(b_ptr + cols, mask=valid, other=0.0)
    y = w * (xc * inv) + b
    tl.store(out_ptr + row * out_row_stride + cols, y, mask=valid)
""",
    ),
    Blind(
        name="layernorm_weight_unused",
        exercise_id="triton_layernorm",
        half="held2",
        correct=False,
        cause="The weight w is loaded but never multiplied: the output is x_hat + b instead of x_hat * w + b.",
        source=H
        + """@triton.jit
def layernorm_kernel(
    x_ptr,
    w_ptr,
    b_ptr,
    out_ptr,
    x_row_stride,
    out_row_stride,
    n_cols,
    eps,
    BLOCK_SIZE: tl.constexpr,
):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    diff = tl.where(mask, x - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(out_ptr + row * out_row_stride + cols, diff * rstd + b, mask=mask)
""",
        hints=("multiply by the weight",),
    ),
    # ---------------------------------------------------------------- matmul
    Blind(
        name="matmul_fresh_offsets_dot_acc",
        exercise_id="triton_matmul",
        half="held2",
        correct=True,
        source=H
        + """@triton.jit
def matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    ACTIVATION: tl.constexpr,
):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for kb in range(0, tl.cdiv(K, BLOCK_K)):
        rk = kb * BLOCK_K + tl.arange(0, BLOCK_K)
        a = tl.load(
            a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak,
            mask=(rm[:, None] < M) & (rk[None, :] < K),
            other=0.0,
        )
        b = tl.load(
            b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn,
            mask=(rk[:, None] < K) & (rn[None, :] < N),
            other=0.0,
        )
        acc = tl.dot(a, b, acc)
    if ACTIVATION == "relu":
        acc = tl.where(acc > 0, acc, 0.0)
    tl.store(
        c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn,
        acc,
        mask=(rm[:, None] < M) & (rn[None, :] < N),
    )
""",
    ),
    Blind(
        name="matmul_global_k_mask_minus_k",
        exercise_id="triton_matmul",
        half="held2",
        correct=False,
        cause="offs_k is recomputed as the global index k + arange each step, but the mask still subtracts the step's start, offs_k < K - k, so k is subtracted twice: from the second K step on, lanes with k + i >= K - k are zeroed and real columns of a and rows of b are left out of the product whenever K > BLOCK_K.",
        source=H
        + """@triton.jit
def matmul_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_ak,
    stride_bk,
    stride_bn,
    stride_cm,
    stride_cn,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    ACTIVATION: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        offs_k = k + tl.arange(0, BLOCK_K)
        a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
        b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < K - k) & (offs_n[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    if ACTIVATION == "relu":
        acc = tl.maximum(acc, 0.0)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))
""",
        hints=("first 48 of K",),
    ),
    # ---------------------------------------------------------------- flash attention
    Blind(
        name="flash_exp2_full_key_range",
        exercise_id="triton_flash_attention",
        half="held2",
        correct=True,
        source=H
        + """@triton.jit
def attention_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    o_ptr,
    seq_len,
    stride_q,
    stride_k,
    stride_v,
    stride_o,
    sm_scale,
    HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr,
):
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    row_ok = offs_m[:, None] < seq_len
    q = tl.load(q_ptr + offs_m[:, None] * stride_q + offs_d[None, :], mask=row_ok, other=0.0)
    qk_scale = sm_scale * 1.4426950408889634
    m_i = tl.zeros((BLOCK_M,), dtype=tl.float32) - float("inf")
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    for start_n in range(0, seq_len, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        key_ok = offs_n[:, None] < seq_len
        k = tl.load(k_ptr + offs_n[:, None] * stride_k + offs_d[None, :], mask=key_ok, other=0.0)
        v = tl.load(v_ptr + offs_n[:, None] * stride_v + offs_d[None, :], mask=key_ok, other=0.0)
        s = tl.dot(q, tl.trans(k)) * qk_scale
        keep = offs_n[None, :] < seq_len
        if CAUSAL:
            keep = keep & (offs_n[None, :] <= offs_m[:, None])
        s = tl.where(keep, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp2(s - m_new[:, None])
        alpha = tl.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m_i = m_new
    tl.store(
        o_ptr + offs_m[:, None] * stride_o + offs_d[None, :],
        acc / l_i[:, None],
        mask=row_ok,
    )
""",
    ),
    Blind(
        name="flash_rowsum_over_keys_axis0",
        exercise_id="triton_flash_attention",
        half="held2",
        correct=False,
        cause="The running denominator adds tl.sum(p, axis=0), a sum over the queries for each key, instead of tl.sum(p, axis=1), each query's sum over its keys, so l_i is not the softmax's denominator (and the shapes only fit when BLOCK_M == BLOCK_N).",
        source=H
        + """@triton.jit
def attention_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    o_ptr,
    seq_len,
    stride_q,
    stride_k,
    stride_v,
    stride_o,
    sm_scale,
    HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr,
):
    start_m = tl.program_id(0) * BLOCK_M
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(
        q_ptr + offs_m[:, None] * stride_q + offs_d[None, :],
        mask=offs_m[:, None] < seq_len,
        other=0.0,
    )
    m_i = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    end = tl.minimum(start_m + BLOCK_M, seq_len) if CAUSAL else seq_len
    for start_n in range(0, end, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k = tl.load(
            k_ptr + offs_n[:, None] * stride_k + offs_d[None, :],
            mask=offs_n[:, None] < seq_len,
            other=0.0,
        )
        v = tl.load(
            v_ptr + offs_n[:, None] * stride_v + offs_d[None, :],
            mask=offs_n[:, None] < seq_len,
            other=0.0,
        )
        s = tl.dot(q, tl.trans(k)) * sm_scale
        keep = offs_n[None, :] < seq_len
        if CAUSAL:
            keep = keep & (offs_m[:, None] >= offs_n[None, :])
        s = tl.where(keep, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=0)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m_i = m_new
    o = acc / l_i[:, None]
    tl.store(
        o_ptr + offs_m[:, None] * stride_o + offs_d[None, :], o, mask=offs_m[:, None] < seq_len
    )
""",
        hints=("l_i",),
    ),
    Blind(
        name="flash_divides_by_sm_scale",
        exercise_id="triton_flash_attention",
        half="held2",
        correct=False,
        cause="The scores are divided by sm_scale, as if it were sqrt(head_dim), instead of multiplied by it: sm_scale is already 1/sqrt(head_dim), so the scores are multiplied by sqrt(head_dim) and the softmax is far too sharp.",
        source=H
        + """@triton.jit
def attention_kernel(
    q_ptr,
    k_ptr,
    v_ptr,
    o_ptr,
    seq_len,
    stride_q,
    stride_k,
    stride_v,
    stride_o,
    sm_scale,
    HEAD_DIM: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    CAUSAL: tl.constexpr,
):
    start_m = tl.program_id(0) * BLOCK_M
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(
        q_ptr + offs_m[:, None] * stride_q + offs_d[None, :],
        mask=offs_m[:, None] < seq_len,
        other=0.0,
    )
    m_i = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    end = tl.minimum(start_m + BLOCK_M, seq_len) if CAUSAL else seq_len
    for start_n in range(0, end, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k = tl.load(
            k_ptr + offs_n[:, None] * stride_k + offs_d[None, :],
            mask=offs_n[:, None] < seq_len,
            other=0.0,
        )
        v = tl.load(
            v_ptr + offs_n[:, None] * stride_v + offs_d[None, :],
            mask=offs_n[:, None] < seq_len,
            other=0.0,
        )
        s = tl.dot(q, tl.trans(k)) / sm_scale
        keep = offs_n[None, :] < seq_len
        if CAUSAL:
            keep = keep & (offs_m[:, None] >= offs_n[None, :])
        s = tl.where(keep, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m_i = m_new
    o = acc / l_i[:, None]
    tl.store(
        o_ptr + offs_m[:, None] * stride_o + offs_d[None, :], o, mask=offs_m[:, None] < seq_len
    )
""",
        hints=("divided by sm_scale",),
    ),
    # ---------------------------------------------------------------- cross-entropy
    Blind(
        name="ce_w_transposed_pointers",
        exercise_id="triton_cross_entropy",
        half="held2",
        correct=True,
        source=H
        + """@triton.jit
def cross_entropy_kernel(
    h_ptr,
    w_ptr,
    target_ptr,
    loss_ptr,
    n_rows,
    vocab,
    stride_h,
    stride_w,
    HIDDEN: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_V: tl.constexpr,
):
    pid = tl.program_id(0)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, HIDDEN)
    live = rows < n_rows
    h = tl.load(h_ptr + rows[:, None] * stride_h + dims[None, :], mask=live[:, None], other=0.0)
    tgt = tl.load(target_ptr + rows, mask=live, other=0)
    run_max = tl.full((BLOCK_M,), float("-inf"), tl.float32)
    run_sum = tl.zeros((BLOCK_M,), tl.float32)
    tgt_logit = tl.zeros((BLOCK_M,), tl.float32)
    for v0 in range(0, vocab, BLOCK_V):
        cols = v0 + tl.arange(0, BLOCK_V)
        # w^T tile (HIDDEN x BLOCK_V) straight from memory
        wt = tl.load(
            w_ptr + dims[:, None] + cols[None, :] * stride_w,
            mask=cols[None, :] < vocab,
            other=0.0,
        )
        z = tl.dot(h, wt)
        z = tl.where(cols[None, :] < vocab, z, float("-inf"))
        new_max = tl.maximum(run_max, tl.max(z, axis=1))
        run_sum = run_sum * tl.exp(run_max - new_max) + tl.sum(
            tl.exp(z - new_max[:, None]), axis=1
        )
        run_max = new_max
        hit = cols[None, :] == tgt[:, None]
        tgt_logit += tl.sum(tl.where(hit, z, 0.0), axis=1)
    loss = tl.log(run_sum) + run_max - tgt_logit
    tl.store(loss_ptr + rows, loss, mask=live)
""",
    ),
    Blind(
        name="ce_one_target_per_program",
        exercise_id="triton_cross_entropy",
        half="held2",
        correct=False,
        cause="The target is loaded once per program as a scalar, tl.load(target_ptr + tl.program_id(0)), instead of one per row, tl.load(target_ptr + rows), so every row of the block subtracts the logit of the same column (and not even the block's first row's target when BLOCK_M > 1).",
        source=H
        + """@triton.jit
def cross_entropy_kernel(
    h_ptr,
    w_ptr,
    target_ptr,
    loss_ptr,
    n_rows,
    vocab,
    stride_h,
    stride_w,
    HIDDEN: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_V: tl.constexpr,
):
    pid = tl.program_id(0)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, HIDDEN)
    row_ok = rows < n_rows
    h = tl.load(h_ptr + rows[:, None] * stride_h + dims[None, :], mask=row_ok[:, None], other=0.0)
    target = tl.load(target_ptr + pid)
    m = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)
    s = tl.zeros((BLOCK_M,), dtype=tl.float32)
    picked = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for v0 in range(0, vocab, BLOCK_V):
        cols = v0 + tl.arange(0, BLOCK_V)
        w = tl.load(
            w_ptr + cols[:, None] * stride_w + dims[None, :], mask=cols[:, None] < vocab, other=0.0
        )
        logits = tl.dot(h, tl.trans(w))
        logits = tl.where(cols[None, :] < vocab, logits, -float("inf"))
        m_new = tl.maximum(m, tl.max(logits, axis=1))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(logits - m_new[:, None]), axis=1)
        m = m_new
        picked += tl.sum(tl.where(cols[None, :] == target, logits, 0.0), axis=1)
    tl.store(loss_ptr + rows, m + tl.log(s) - picked, mask=row_ok)
""",
        hints=("another column than the target",),
    ),
    # ---------------------------------------------------------------- cross-entropy backward
    Blind(
        name="ceb_onehot_float_product",
        exercise_id="triton_cross_entropy_backward",
        half="held2",
        correct=True,
        source=H
        + """@triton.jit
def cross_entropy_backward_kernel(
    logits_ptr,
    target_ptr,
    lse_ptr,
    dloss_ptr,
    dlogits_ptr,
    vocab,
    stride_logits,
    stride_dlogits,
    BLOCK_V: tl.constexpr,
):
    i = tl.program_id(0)
    t = tl.load(target_ptr + i)
    row_lse = tl.load(lse_ptr + i)
    g = tl.load(dloss_ptr + i)
    src = logits_ptr + i * stride_logits
    dst = dlogits_ptr + i * stride_dlogits
    for c0 in range(0, vocab, BLOCK_V):
        c = c0 + tl.arange(0, BLOCK_V)
        ok = c < vocab
        z = tl.load(src + c, mask=ok, other=float("-inf"))
        onehot = (c == t).to(tl.float32)
        tl.store(dst + c, g * tl.exp(z - row_lse) - g * onehot, mask=ok)
""",
    ),
    Blind(
        name="ceb_divides_by_lse",
        exercise_id="triton_cross_entropy_backward",
        half="held2",
        correct=False,
        cause="The softmax is computed as exp(x) / lse, dividing by the log-sum-exp as if it were the sum of the exps, instead of exp(x - lse) (lse is the log of that sum).",
        source=H
        + """@triton.jit
def cross_entropy_backward_kernel(
    logits_ptr,
    target_ptr,
    lse_ptr,
    dloss_ptr,
    dlogits_ptr,
    vocab,
    stride_logits,
    stride_dlogits,
    BLOCK_V: tl.constexpr,
):
    row = tl.program_id(0)
    target = tl.load(target_ptr + row)
    lse = tl.load(lse_ptr + row)
    dloss = tl.load(dloss_ptr + row)
    for start in range(0, vocab, BLOCK_V):
        cols = start + tl.arange(0, BLOCK_V)
        mask = cols < vocab
        x = tl.load(logits_ptr + row * stride_logits + cols, mask=mask, other=0.0)
        p = tl.exp(x) / lse
        grad = (p - tl.where(cols == target, 1.0, 0.0)) * dloss
        tl.store(dlogits_ptr + row * stride_dlogits + cols, grad, mask=mask)
""",
        hints=("tl.exp(x - lse)",),
    ),
]
