"""Blind held-out round lab12_triton_r10 (half "held2") for labs/12_triton_lab.ipynb.

Written 2026-11-29 (about 06:54-07:00 UTC by the machine's clock) by a helper session that never
saw the checker. Read: tests/heldout/__init__.py, the solution notebook's cells
(solutions/12_triton_lab.ipynb), the docstring and first two entries of lab12_triton_r9.py (format
only; its cause= lines to avoid them) and the earlier rounds' causes list
(/tmp/blind/causes_lab12_triton.txt); every wrong answer here has a mistake not on that list.
Each answer's header imports torch, triton and triton.language as tl (the string H).

Verification (scratch under /tmp/lab12_triton_r10/, GPU_COURSE_MODE=simulator, TRITON_INTERPRET=1
via `import gpu_utils`, CPU tensors, outputs filled with NaN first): each answer was loaded with
heldout.submitted() and launched directly, compared with torch; an access outside the tensors
(gu.runtime.LaunchOutOfBounds) counts as wrong.
- triton_vector_add: (n, BLOCK) = (1,32), (3,32), (100,32), (1000,128), (1025,256), (64,64) vs
  x + y. Right answer exact. Half-block lanes: exact for n <= BLOCK/2, NaN in 32-512 elements
  otherwise.
- triton_outer_add: (M, N, BLOCK_M, BLOCK_N) = (1,1,16,16), (3,5,16,16), (37,70,16,16) and
  (20,70,16,32) with out a view whose rows are 80 apart, (70,37,32,16). Scalar x at pid_m: exact
  only for M = 1, errors ~0.8 otherwise.
- triton_row_sum: (R, C, BLOCK) = (3,1,128), (4,37,16) rows padded by 7, (2,3000,128), (3,3000,128)
  float16 padded, (5,2,16), (8,3,16). Store masked by n_cols: right when R <= C, NaN in the rows
  past n_cols for (3,1), (5,2), (8,3).
- triton_softmax: (R, C, BLOCK) = (3,5,4), (4,37,16), (1,1,4), (5,100,32), (1,37,64) with randn*3,
  and (3,50,16) rows around +200 and -200; x and out padded views; vs torch.softmax. exp(x - lse)
  answer: err < 1e-5 everywhere. Second pass reading row 0: right only with one row, errors
  0.1-98 otherwise.
- triton_layernorm: (R, C) = (3,5), (4,37), (2,64), (6,100), (1,1), BLOCK = next_pow2(C), eps 1e-5,
  padded x, random w and b; vs F.layer_norm. rsqrt answer: err < 1e-4. (diff * w + b) * rstd:
  errors 0.4-42.
- triton_matmul: float16 a (M x K) and b a transposed view of an N x K tensor, (M, N, K) =
  (16,16,16), (20,24,40), (33,17,50), (1,2,3), (32,32,64), (17,40,20), blocks 16, "none"/"relu";
  vs a.float() @ b.float(). Global-k answer: err < 1e-3 relative. c with a's strides: the
  (20,24,40) case writes outside c (LaunchOutOfBounds); right only when K == N.
- triton_flash_attention: float16 q, k, v, (L, D, BLOCK_M, BLOCK_N, causal) = (1,16,16,16,F),
  (3,16,16,16,T), (37,32,16,16,F/T), (64,16,32,16,T), (50,16,16,32,F/T), sm_scale 1/sqrt(D); vs
  F.scaled_dot_product_attention in float32 (tolerance 1e-2). Normalising inside the loop: right
  with one key block, errors 0.4-0.8 otherwise. Causal loop from start_m: right without CAUSAL or
  with a single query block, errors 2-3 on the causal cases with several query blocks.
- triton_cross_entropy: float16 h (rows padded to HIDDEN + 8) and w, (n, vocab, HIDDEN, BLOCK_M,
  BLOCK_V) = (5,37,16,16,16), (20,100,32,16,32), (3,10,16,16,16), (1,1,16,16,16), (40,70,32,16,16),
  (40,10,16,16,16); vs F.cross_entropy(h.float() @ w.float().T, reduction="none"). w stepped by
  stride_h: reads outside w on the first case (right only when stride_h == stride_w). Rows masked
  by vocab: reads outside h on the first case (n_rows < vocab); leaves NaN losses when
  n_rows > vocab.
- triton_cross_entropy_backward: float32 logits*3 (rows padded), dlogits a padded view,
  (n, vocab, BLOCK_V) = (3,10,16), (4,100,32), (2,64,16), (1,1,16), (3,37,16), dloss in
  [0.5, 1.5); vs (softmax - onehot) * dloss. tl.where(j == target, p - 1, p) answer: err < 1e-5.
  Store without row offset: right only for one row, NaN in the other rows. p * (1 - p): errors
  0.3-1.3.
The five right answers were also compiled with triton.compile for GPUTarget("cuda", 90, 32) in a
separate process with TRITON_INTERPRET=0 (float16 a, b for the matmul): all compile.
A first idea for layer norm (the mean with //, floor division) was dropped: Triton refuses // on
float32 values, so it fails at the launch instead of giving a wrong result.
"""

from heldout import Blind

H = "import torch\nimport triton\nimport triton.language as tl\n\n"

ANSWERS = [
    # ---------------------------------------------------------------- vector add
    Blind(
        name="add_base_pointers_and_where",
        exercise_id="triton_vector_add",
        half="held2",
        correct=True,
        source=H
        + """@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    block_start = tl.program_id(0) * BLOCK_SIZE
    lanes = tl.arange(0, BLOCK_SIZE)
    in_range = block_start + lanes < n_elements
    xs = tl.load(x_ptr + block_start + lanes, mask=in_range, other=0.0)
    ys = tl.load(y_ptr + block_start + lanes, mask=in_range, other=0.0)
    total = tl.where(in_range, xs + ys, 0.0)
    tl.store(out_ptr + block_start + lanes, total, mask=in_range)
""",
    ),
    Blind(
        name="add_half_block_lanes",
        exercise_id="triton_vector_add",
        half="held2",
        correct=False,
        cause="The lanes are tl.arange(0, BLOCK_SIZE // 2), half a block, while the programs start BLOCK_SIZE apart, so the second half of every block is never loaded or stored (out keeps its old values there whenever n_elements > BLOCK_SIZE // 2).",
        source=H
        + """@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE // 2)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)
""",
        hints=("tl.arange(0, BLOCK_SIZE)",),
    ),
    # ---------------------------------------------------------------- outer add
    Blind(
        name="outer_add_x_scalar_at_tile_index",
        exercise_id="triton_outer_add",
        half="held2",
        correct=False,
        cause="x is loaded as one scalar at x_ptr + pid_m (the tile's index) instead of the vector x at offs_m, so every row of a tile gets the same x value and out[i, j] = x[pid_m] + y[j] instead of x[i] + y[j] (right only when M == 1).",
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
    x = tl.load(x_ptr + pid_m)
    y = tl.load(y_ptr + offs_n, mask=offs_n < N)
    tile = x + y[None, :] + tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    out_ptrs = out_ptr + offs_m[:, None] * out_row_stride + offs_n[None, :]
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(out_ptrs, tile, mask=mask)
""",
        hints=("not its own",),
    ),
    # ---------------------------------------------------------------- row sum
    Blind(
        name="row_sum_store_masked_by_n_cols",
        exercise_id="triton_row_sum",
        half="held2",
        correct=False,
        cause="The store is masked with row < n_cols, the number of columns, as if it guarded the row index, so when there are more rows than columns the sums of the rows r >= n_cols are never written.",
        source=H
        + """@triton.jit
def row_sum_kernel(x_ptr, out_ptr, x_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        vals = tl.load(x_ptr + row * x_row_stride + cols, mask=cols < n_cols, other=0.0)
        acc += vals.to(tl.float32)
    tl.store(out_ptr + row, tl.sum(acc, axis=0), mask=row < n_cols)
""",
        hints=("is n_cols",),
    ),
    # ---------------------------------------------------------------- softmax
    Blind(
        name="softmax_exp_minus_lse",
        exercise_id="triton_softmax",
        half="held2",
        correct=True,
        source=H
        + """@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    run_max = -float("inf")
    run_sum = 0.0
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        vals = tl.load(x_ptr + row * x_row_stride + cols, mask=cols < n_cols, other=-float("inf"))
        new_max = tl.maximum(run_max, tl.max(vals, axis=0))
        run_sum = run_sum * tl.exp(run_max - new_max) + tl.sum(tl.exp(vals - new_max), axis=0)
        run_max = new_max
    lse = run_max + tl.log(run_sum)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        keep = cols < n_cols
        vals = tl.load(x_ptr + row * x_row_stride + cols, mask=keep, other=0.0)
        tl.store(out_ptr + row * out_row_stride + cols, tl.exp(vals - lse), mask=keep)
""",
    ),
    Blind(
        name="softmax_second_pass_reads_row0",
        exercise_id="triton_softmax",
        half="held2",
        correct=False,
        cause="The second pass loads from x_ptr + cols, row 0, instead of the program's own row x_ptr + row * x_row_stride + cols, so every row's output is exp(x[0] - m) / s with row 0's values and this row's statistics (right only for row 0).",
        source=H
        + """@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * x_row_stride
    out_row = out_ptr + row * out_row_stride
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
        x = tl.load(x_ptr + cols, mask=mask, other=-float("inf"))
        tl.store(out_row + cols, tl.exp(x - m) / s, mask=mask)
""",
        hints=("row 0's values",),
    ),
    # ---------------------------------------------------------------- layer norm
    Blind(
        name="layernorm_rsqrt_where_square",
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
    offs = tl.arange(0, BLOCK_SIZE)
    valid = offs < n_cols
    x = tl.load(x_ptr + row * x_row_stride + offs, mask=valid, other=0.0)
    mu = tl.sum(x, axis=0) / n_cols
    sq = tl.where(valid, (x - mu) * (x - mu), 0.0)
    inv_std = tl.rsqrt(tl.sum(sq, axis=0) / n_cols + eps)
    gamma = tl.load(w_ptr + offs, mask=valid, other=1.0)
    beta = tl.load(b_ptr + offs, mask=valid, other=0.0)
    y = (x - mu) * inv_std * gamma + beta
    tl.store(out_ptr + row * out_row_stride + offs, y, mask=valid)
""",
    ),
    Blind(
        name="layernorm_bias_scaled_by_rstd",
        exercise_id="triton_layernorm",
        half="held2",
        correct=False,
        cause="The bias is added before dividing by the standard deviation, (diff * w + b) * rstd, so b is scaled by 1 / sqrt(var + eps) too; the affine step comes after normalising, diff * rstd * w + b.",
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
    tl.store(out_ptr + row * out_row_stride + cols, (diff * w + b) * rstd, mask=mask)
""",
        hints=("bias went through the division",),
    ),
    # ---------------------------------------------------------------- matmul
    Blind(
        name="matmul_global_k_index_fresh_pointers",
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
        a_tile = tl.load(
            a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak,
            mask=(rm[:, None] < M) & (rk[None, :] < K),
            other=0.0,
        )
        b_tile = tl.load(
            b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn,
            mask=(rk[:, None] < K) & (rn[None, :] < N),
            other=0.0,
        )
        acc += tl.dot(a_tile, b_tile)
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
        name="matmul_c_with_a_strides",
        exercise_id="triton_matmul",
        half="held2",
        correct=False,
        cause="c is stored with a's strides (stride_am, stride_ak) instead of c's own (stride_cm, stride_cn), so its rows are K elements apart instead of N: the tile lands in the wrong places (and past c's end) whenever K != N.",
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
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < K - k) & (offs_n[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    if ACTIVATION == "relu":
        acc = tl.maximum(acc, 0.0)
    c_ptrs = c_ptr + offs_m[:, None] * stride_am + offs_n[None, :] * stride_ak
    tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))
""",
        hints=("stride_cm",),
    ),
    # ---------------------------------------------------------------- flash attention
    Blind(
        name="flash_normalise_inside_loop",
        exercise_id="triton_flash_attention",
        half="held2",
        correct=False,
        cause="acc is divided by l_i inside the key loop, after every block, instead of once after the loop, so the next block rescales an already normalised acc by alpha and adds unnormalised p @ v to it: the output is wrong whenever there are several key blocks.",
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
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        acc = acc / l_i[:, None]
        m_i = m_new
    tl.store(
        o_ptr + offs_m[:, None] * stride_o + offs_d[None, :], acc, mask=offs_m[:, None] < seq_len
    )
""",
    ),
    Blind(
        name="flash_causal_loop_starts_at_query_block",
        exercise_id="triton_flash_attention",
        half="held2",
        correct=False,
        cause="With CAUSAL the key loop starts at start_m, the query block's own start, instead of 0, so it skips all the earlier key blocks, the past that causal attention keeps, and runs to seq_len; every query block after the first misses its earlier keys.",
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
    lo = start_m if CAUSAL else 0
    for start_n in range(lo, seq_len, BLOCK_N):
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
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m_i = m_new
    o = acc / l_i[:, None]
    tl.store(
        o_ptr + offs_m[:, None] * stride_o + offs_d[None, :], o, mask=offs_m[:, None] < seq_len
    )
""",
        hints=("starts at start_m",),
    ),
    # ---------------------------------------------------------------- cross-entropy
    Blind(
        name="ce_w_rows_with_h_stride",
        exercise_id="triton_cross_entropy",
        half="held2",
        correct=False,
        cause="w's rows are stepped with stride_h, h's row stride, instead of stride_w (a copied line), which is only right when h and w have the same row stride; when h's rows are padded the kernel reads the wrong entries of w (and past its end).",
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
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, HIDDEN)
    row_ok = rows < n_rows
    h = tl.load(h_ptr + rows[:, None] * stride_h + dims[None, :], mask=row_ok[:, None], other=0.0)
    target = tl.load(target_ptr + rows, mask=row_ok, other=0)
    m = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)
    s = tl.zeros((BLOCK_M,), dtype=tl.float32)
    picked = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for v0 in range(0, vocab, BLOCK_V):
        cols = v0 + tl.arange(0, BLOCK_V)
        w = tl.load(
            w_ptr + cols[:, None] * stride_h + dims[None, :], mask=cols[:, None] < vocab, other=0.0
        )
        logits = tl.dot(h, tl.trans(w))
        logits = tl.where(cols[None, :] < vocab, logits, -float("inf"))
        m_new = tl.maximum(m, tl.max(logits, axis=1))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(logits - m_new[:, None]), axis=1)
        m = m_new
        picked += tl.sum(tl.where(cols[None, :] == target[:, None], logits, 0.0), axis=1)
    tl.store(loss_ptr + rows, m + tl.log(s) - picked, mask=row_ok)
""",
        hints=("stride_w",),
    ),
    Blind(
        name="ce_rows_masked_by_vocab",
        exercise_id="triton_cross_entropy",
        half="held2",
        correct=False,
        cause="The row mask is rows < vocab instead of rows < n_rows, so when n_rows > vocab the losses of the rows past vocab are never stored, and when n_rows < vocab the last block loads h and target rows past their end.",
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
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, HIDDEN)
    row_ok = rows < vocab
    h = tl.load(h_ptr + rows[:, None] * stride_h + dims[None, :], mask=row_ok[:, None], other=0.0)
    target = tl.load(target_ptr + rows, mask=row_ok, other=0)
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
        picked += tl.sum(tl.where(cols[None, :] == target[:, None], logits, 0.0), axis=1)
    tl.store(loss_ptr + rows, m + tl.log(s) - picked, mask=row_ok)
""",
        hints=("rows < n_rows",),
    ),
    # ---------------------------------------------------------------- cross-entropy backward
    Blind(
        name="ce_bwd_where_minus_one",
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
    tgt = tl.load(target_ptr + i)
    row_lse = tl.load(lse_ptr + i)
    g = tl.load(dloss_ptr + i)
    src = logits_ptr + i * stride_logits
    dst = dlogits_ptr + i * stride_dlogits
    for v0 in range(0, vocab, BLOCK_V):
        j = v0 + tl.arange(0, BLOCK_V)
        ok = j < vocab
        prob = tl.exp(tl.load(src + j, mask=ok, other=-float("inf")) - row_lse)
        prob = tl.where(j == tgt, prob - 1.0, prob)
        tl.store(dst + j, g * prob, mask=ok)
""",
    ),
    Blind(
        name="ce_bwd_store_without_row_offset",
        exercise_id="triton_cross_entropy_backward",
        half="held2",
        correct=False,
        cause="The gradient is stored at dlogits_ptr + cols without the row's offset row * stride_dlogits, so every program writes its row's gradient over row 0 and the other rows of dlogits are never written (whenever there are two or more rows).",
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
        p = tl.exp(x - lse)
        grad = (p - tl.where(cols == target, 1.0, 0.0)) * dloss
        tl.store(dlogits_ptr + cols, grad, mask=mask)
""",
        hints=("stride_dlogits",),
    ),
    Blind(
        name="ce_bwd_softmax_jacobian_diagonal",
        exercise_id="triton_cross_entropy_backward",
        half="held2",
        correct=False,
        cause="The gradient uses p * (1 - p), the diagonal of the softmax's Jacobian (the sigmoid-style derivative), instead of the cross-entropy's gradient p - onehot(target): the kernel stores (p * (1 - p) - onehot) * dloss.",
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
        p = tl.exp(x - lse)
        onehot = tl.where(cols == target, 1.0, 0.0)
        grad = (p * (1.0 - p) - onehot) * dloss
        tl.store(dlogits_ptr + row * stride_dlogits + cols, grad, mask=mask)
""",
        hints=("Jacobian",),
    ),
]
