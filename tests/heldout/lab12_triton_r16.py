"""Blind held-out round lab12_triton_r16 (half "held2") for labs/12_triton_lab.ipynb.

Written 2026-11-29 (about 15:05-15:10 UTC by the machine's clock, `date -u`) by a helper session
that never saw the checker. Read: the brief, tests/heldout/__init__.py, the docstring and first two
entries of lab12_triton_r13.py (format only), every cell of labs/12_triton_lab.ipynb (it has no
FAQ cell) and the nine solution cells of solutions/12_triton_lab.ipynb. No causes list and no other
heldout file was read; the wrong answers are the mistakes expected most often from a class doing
the lab for the first time, one mistake each. Each answer's header imports torch, triton and
triton.language as tl (the string H).
5 right answers (outer add, row sum, layer norm, matmul, cross-entropy backward) and 13 wrong ones,
over all nine exercises (wrong ones on each of them; two each on softmax, layer norm, matmul and
flash attention).

Verification (scratch under /tmp/lab12_triton_r16/: verify.py, compile.py; run from tests/ with
GPU_COURSE_MODE=simulator, so TRITON_INTERPRET=1 through `import gpu_utils`; CPU tensors; outputs
filled with NaN first and, where the kernel takes a stride, padded views): each answer was loaded
with heldout.submitted(), launched on the grid the lab's text implies (cdiv over blocks, or one
program per row) and compared with torch; the solution notebook's kernel ran on the same inputs
and met every tolerance (its errors are printed beside each case). A NaN left in the output, a
gu.runtime.LaunchOutOfBounds or an interpreter error counts as a failure.
- triton_vector_add, (n, BLOCK) = (1,32), (3,32), (100,32), (1000,128), (1025,256), (64,64),
  (256,128) vs x + y, exact. add_store_unmasked: exact for (64,64) and (256,128),
  LaunchOutOfBounds (store outside out) on the five others.
- triton_outer_add, (M, N, BLOCK_M, BLOCK_N, row padding of out) = (1,1,16,16,0), (3,5,16,16,0),
  (37,70,16,16,0), (20,70,16,32,10) (rows 80 apart), (70,37,32,16,0), (16,16,16,16,0),
  (40,40,16,16,3), exact. outer_where_tile_and_other: exact everywhere.
  outer_row_step_N: exact on the contiguous cases, LaunchOutOfBounds on the two padded ones.
- triton_row_sum, (R, C, BLOCK, dtype, row padding) = (3,1,128,f32,0), (4,37,16,f32,7),
  (2,3000,128,f32,0), (3,3000,128,f16,5), (5,2,16,f32,0), (4,64,16,f32,0), (3,100,128,f32,4) vs
  x.float().sum(1), tol 1e-4. rowsum_scalar_total_cdiv: <= 1.2e-5 everywhere.
  rowsum_acc_reset_in_loop: right when C <= BLOCK (C = 1, 2, 100), errors 4.3 to 73 on the four
  others.
- triton_softmax, (R, C, BLOCK) = (3,5,4), (4,37,16), (1,1,4), (5,100,32), (1,37,64), (2,64,16),
  (2,16,16), (2,48,16) with randn*3, and (3,50,16) with rows around +200 and around -200; x and
  out padded; vs torch.softmax, tol 1e-5. softmax_pad_lanes_zero: right when C is a multiple of
  BLOCK (and on the +200 rows, where the padded lanes' exp(0 - 200) underflows), errors 0.0055 to
  0.55 on the six others (including C = 1 and the -200 rows). softmax_sum_not_rescaled: right when
  the row fits one block and on (4,37,16) (its first block happened to hold each row's maximum),
  errors 0.028 to 0.76 on the six others.
- triton_layernorm, (R, C, scale, mean offset of x) = (3,5,1,0), (4,37,1,0), (2,64,1,0),
  (6,100,1,0), (1,1,1,0), (4,37,1e-3,0), (3,64,3e-3,0), (2,128,1,0), (3,48,1,5); BLOCK =
  next_pow2(C), eps 1e-5, random w and b, padded x and out; vs F.layer_norm, tol 1e-4.
  layernorm_rsqrt_xhat: <= 6e-7 everywhere. layernorm_var_includes_padding: right when C is a
  power of two (1, 64, 128), errors 3.6e-4 to 2.7 on the five others (largest with the mean
  offset 5). layernorm_unbiased_var: wrong on all nine (errors 2.8e-3 to 0.5; C = 1 gives 0/0,
  NaN).
- triton_matmul, float16 a (M x K), b either contiguous K x N or a transposed view of an N x K
  tensor, (M, N, K, BM, BN, BK, b transposed, act) = (16,16,16,16,16,16,F,none),
  (20,24,40,16,16,16,T,relu), (33,17,50,16,16,16,F,none), (1,2,3,16,16,16,T,none),
  (32,32,64,16,16,16,T,relu), (17,40,20,16,32,16,F,relu), (32,32,32,16,16,16,F,none),
  (20,24,40,16,32,32,F,none), (32,32,32,16,16,16,T,none); vs a.float() @ b.float() (relu'd),
  relative tol 2e-3. matmul_dot_acc_global_k: <= 3.4e-4 everywhere (same as the solution).
  matmul_b_contiguous: right on the five contiguous-b cases, wrong on the four transposed ones
  (error 0.63 on (1,2,3), 2e3-2e4 on the others). matmul_kmask_not_shifted: right when K is a
  multiple of BK or K <= BK (five cases), LaunchOutOfBounds reading b on the four others.
- triton_flash_attention, float16 q, k, v with rows padded by 8, o padded by 4, (L, D, BLOCK_M,
  BLOCK_N, causal) = (1,16,16,16,F), (3,16,16,16,T), (37,32,16,16,F/T), (64,16,32,16,T),
  (50,16,16,32,F/T), (16,16,16,16,F/T), sm_scale 1/sqrt(D); vs F.scaled_dot_product_attention in
  float32, tol 1e-2. flash_acc_not_rescaled: right when one key block is visited (L <= BLOCK_N),
  errors 0.43 to 1.36 on the five multi-block cases. flash_causal_strict: right on the four
  non-causal cases, NaN (first row has no key) on all five causal ones.
- triton_cross_entropy, float16 h (rows padded by 8) and w, int64 targets, (n, vocab, HIDDEN,
  BLOCK_M, BLOCK_V) = (5,37,16,16,16), (20,100,32,16,32), (3,10,16,16,16), (1,1,16,16,16),
  (40,70,32,16,16), (40,64,16,16,16), (7,32,16,16,32), and (9,50,16,16,16) with h and w times 4;
  vs F.cross_entropy(h.float() @ w.float().T, reduction="none"), relative tol 2e-3.
  ce_target_local_column: right when vocab <= BLOCK_V (three cases), wrong on the five others
  (inf where a matched column lies past vocab in the last block, errors 1.3-1.7 elsewhere).
- triton_cross_entropy_backward, float32 logits*3 (rows padded by 3), dlogits rows padded by 5,
  (n, vocab, BLOCK_V) = (3,10,16), (4,100,32), (2,64,16), (1,1,16), (3,37,16), (40,16,16), and
  (3,37,16) with logits*40; lse = torch.logsumexp; dloss in [0.5, 1.5); vs (softmax - onehot) *
  dloss, tol 1e-5. ceb_onehot_cast_scaled: <= 1.8e-6 everywhere. ceb_no_dloss: right for
  vocab = 1 only (the gradient is 0), errors 0.32 to 0.5 elsewhere.
All 18 answers were also compiled with triton.compile (ASTSource, GPUTarget("cuda", 90, 32),
TRITON_INTERPRET unset; float16 a, b, q, k, v, h, w and the row-sum x; int64 targets; BLOCK_N 32
with BLOCK_K 32 and BLOCK_M 16, HEAD_DIM 32 with 16 x 16 blocks, BLOCK_V 32): the five right
answers compile to cubin; of the wrong ones only rowsum_acc_reset_in_loop fails ("acc is not
defined", the accumulator being created inside the loop), the others compile.
"""

from heldout import Blind

H = "import torch\nimport triton\nimport triton.language as tl\n\n"

ANSWERS = [
    # ---------------------------------------------------------------- triton_vector_add
    Blind(
        name="add_store_unmasked",
        exercise_id="triton_vector_add",
        half="held2",
        correct=False,
        cause="The loads are masked but the tl.store is not, so when n_elements is not a multiple of BLOCK_SIZE the last program's lanes past the end write outside out.",
        source=H
        + """@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y)
""",
        hints=("no mask",),
    ),
    # ---------------------------------------------------------------- triton_outer_add
    Blind(
        name="outer_where_tile_and_other",
        exercise_id="triton_outer_add",
        half="held2",
        correct=True,
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
    row_block = tl.program_id(axis=0)
    col_block = tl.program_id(axis=1)
    i = row_block * BLOCK_M + tl.arange(0, BLOCK_M)
    j = col_block * BLOCK_N + tl.arange(0, BLOCK_N)
    i_ok = i < M
    j_ok = j < N
    xs = tl.load(x_ptr + i, mask=i_ok, other=0.0)
    ys = tl.load(y_ptr + j, mask=j_ok, other=0.0)
    tile = tl.expand_dims(xs, 1) + tl.expand_dims(ys, 0)   # BLOCK_M x BLOCK_N
    ptrs = out_ptr + tl.expand_dims(i, 1) * out_row_stride + tl.expand_dims(j, 0)
    tl.store(ptrs, tile, mask=tl.expand_dims(i_ok, 1) & tl.expand_dims(j_ok, 0))
""",
    ),
    Blind(
        name="outer_row_step_N",
        exercise_id="triton_outer_add",
        half="held2",
        correct=False,
        cause="The store steps between rows of out by N (offs_m[:, None] * N) instead of out_row_stride, so when out is a view whose rows are further apart than N (80 apart, 70 long) the rows after the first land in the wrong place.",
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
    out_ptrs = out_ptr + offs_m[:, None] * N + offs_n[None, :]
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(out_ptrs, x[:, None] + y[None, :], mask=mask)
""",
        hints=("row stride",),
    ),
    # ---------------------------------------------------------------- triton_row_sum
    Blind(
        name="rowsum_scalar_total_cdiv",
        exercise_id="triton_row_sum",
        half="held2",
        correct=True,
        source=H
        + """@triton.jit
def row_sum_kernel(x_ptr, out_ptr, x_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    r = tl.program_id(0)
    base = x_ptr + r.to(tl.int64) * x_row_stride
    total = 0.0
    n_blocks = tl.cdiv(n_cols, BLOCK_SIZE)
    for b in range(n_blocks):
        idx = b * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        chunk = tl.load(base + idx, mask=idx < n_cols, other=0.0).to(tl.float32)
        total += tl.sum(chunk, axis=0)
    tl.store(out_ptr + r, total)
""",
    ),
    Blind(
        name="rowsum_acc_reset_in_loop",
        exercise_id="triton_row_sum",
        half="held2",
        correct=False,
        cause="The accumulator is created with tl.zeros inside the loop instead of before it, so it is reset at every block and the stored sum is only the last block's (right only when the row fits one block, n_cols <= BLOCK_SIZE), and Triton's compiler rejects it (acc is not defined after the loop).",
        source=H
        + """@triton.jit
def row_sum_kernel(x_ptr, out_ptr, x_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * x_row_stride
    for start in range(0, n_cols, BLOCK_SIZE):
        acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0)
        acc += x.to(tl.float32)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))
""",
        hints=("before the loop",),
    ),
    # ---------------------------------------------------------------- triton_softmax
    Blind(
        name="softmax_pad_lanes_zero",
        exercise_id="triton_softmax",
        half="held2",
        correct=False,
        cause="The masked lanes are loaded with other=0.0 instead of -inf, so in the first pass each lane past the end of the row adds exp(0 - m) to the sum (and 0 can become the maximum of a negative row), wrong whenever n_cols is not a multiple of BLOCK_SIZE.",
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
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0)
        tl.store(out_row + cols, tl.exp(x - m) / s, mask=mask)
""",
        hints=("other=-float('inf')",),
    ),
    Blind(
        name="softmax_sum_not_rescaled",
        exercise_id="triton_softmax",
        half="held2",
        correct=False,
        cause="The running sum is not rescaled when the maximum grows (s = s + sum(exp(x - m_new)) without the factor exp(m - m_new)), so the terms of earlier blocks stay relative to an older, smaller maximum; right only when the row fits one block or its first block holds the row's maximum.",
        source=H
        + """@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    m = -float("inf")
    s = 0.0
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_ptr + row * x_row_stride + cols, mask=cols < n_cols, other=-float("inf"))
        m = tl.maximum(m, tl.max(x, axis=0))
        s = s + tl.sum(tl.exp(x - m), axis=0)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=-float("inf"))
        tl.store(out_ptr + row * out_row_stride + cols, tl.exp(x - m) / s, mask=mask)
""",
        hints=("not rescaled",),
    ),
    # ---------------------------------------------------------------- triton_layernorm
    Blind(
        name="layernorm_rsqrt_xhat",
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
    r = tl.program_id(0)
    offs = tl.arange(0, BLOCK_SIZE)
    valid = offs < n_cols
    x = tl.load(x_ptr + r * x_row_stride + offs, mask=valid, other=0.0).to(tl.float32)
    mu = tl.sum(x, axis=0) / n_cols
    centered = tl.where(valid, x - mu, 0.0)
    variance = tl.sum(centered * centered, axis=0) / n_cols
    xhat = centered * tl.rsqrt(variance + eps)
    gamma = tl.load(w_ptr + offs, mask=valid, other=1.0)
    beta = tl.load(b_ptr + offs, mask=valid, other=0.0)
    y = xhat * gamma + beta
    tl.store(out_ptr + r * out_row_stride + offs, y, mask=valid)
""",
    ),
    Blind(
        name="layernorm_var_includes_padding",
        exercise_id="triton_layernorm",
        half="held2",
        correct=False,
        cause="The variance sums (x - mean)^2 over all BLOCK_SIZE lanes, and the padding lanes (loaded as 0) each add mean^2, so the variance is too large whenever n_cols is not a power of two; the deviations must be zeroed on the masked lanes (tl.where(mask, x - mean, 0)).",
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
    diff = x - mean
    var = tl.sum(diff * diff, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(out_ptr + row * out_row_stride + cols, diff * rstd * w + b, mask=mask)
""",
        hints=("past the end of the row",),
    ),
    Blind(
        name="layernorm_unbiased_var",
        exercise_id="triton_layernorm",
        half="held2",
        correct=False,
        cause="The variance is divided by n_cols - 1 (the unbiased variance) instead of n_cols (the biased one that layer_norm uses), so every output is scaled by sqrt((n-1)/n) before w and b, and a row of one column divides 0 by 0.",
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
    var = tl.sum(diff * diff, axis=0) / (n_cols - 1)
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(out_ptr + row * out_row_stride + cols, diff * rstd * w + b, mask=mask)
""",
        hints=("n_cols - 1",),
    ),
    # ---------------------------------------------------------------- triton_matmul
    Blind(
        name="matmul_dot_acc_global_k",
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
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for kb in range(0, tl.cdiv(K, BLOCK_K)):
        kk = kb * BLOCK_K + rk
        a_tile = tl.load(
            a_ptr + rm[:, None] * stride_am + kk[None, :] * stride_ak,
            mask=(rm[:, None] < M) & (kk[None, :] < K),
            other=0.0,
        )
        b_tile = tl.load(
            b_ptr + kk[:, None] * stride_bk + rn[None, :] * stride_bn,
            mask=(kk[:, None] < K) & (rn[None, :] < N),
            other=0.0,
        )
        acc = tl.dot(a_tile, b_tile, acc)
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
        name="matmul_b_contiguous",
        exercise_id="triton_matmul",
        half="held2",
        correct=False,
        cause="The tile of b is addressed as if b were a contiguous K x N tensor (offs_k * N + offs_n, and the step BLOCK_K * N) instead of with stride_bk and stride_bn, so when b is passed as a transposed view the kernel multiplies by the wrong elements of b.",
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
    b_ptrs = b_ptr + offs_k[:, None] * N + offs_n[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < K - k) & (offs_n[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * N
    if ACTIVATION == "relu":
        acc = tl.maximum(acc, 0.0)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))
""",
        hints=("stride_bk",),
    ),
    Blind(
        name="matmul_kmask_not_shifted",
        exercise_id="triton_matmul",
        half="held2",
        correct=False,
        cause="The K mask compares the tile's local offsets with K (offs_k < K) while the pointers advance by BLOCK_K each iteration, so in the last, partial K block the lanes past K are not masked and read past the end of a's rows and b's columns (it must be offs_k < K - k, or the global k index < K); right only when K is a multiple of BLOCK_K.",
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
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < K) & (offs_n[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    if ACTIVATION == "relu":
        acc = tl.maximum(acc, 0.0)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))
""",
        hints=("K - k",),
    ),
    # ---------------------------------------------------------------- triton_flash_attention
    Blind(
        name="flash_acc_not_rescaled",
        exercise_id="triton_flash_attention",
        half="held2",
        correct=False,
        cause="The accumulator is not rescaled by alpha = exp(m_i - m_new) when the running maximum grows (acc = acc + p @ v instead of acc * alpha[:, None] + p @ v), while l_i is, so the earlier key blocks' contributions keep the old maximum's scale; right only when one key block is visited or the first block holds each row's maximum.",
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
    for start_n in range(0, seq_len, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        kv_mask = offs_n[:, None] < seq_len
        k = tl.load(k_ptr + offs_n[:, None] * stride_k + offs_d[None, :], mask=kv_mask, other=0.0)
        v = tl.load(v_ptr + offs_n[:, None] * stride_v + offs_d[None, :], mask=kv_mask, other=0.0)
        s = tl.dot(q, tl.trans(k)) * sm_scale
        keep = offs_n[None, :] < seq_len
        if CAUSAL:
            keep = keep & (offs_m[:, None] >= offs_n[None, :])
        s = tl.where(keep, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc + tl.dot(p.to(tl.float16), v)
        m_i = m_new
    o = acc / l_i[:, None]
    tl.store(o_ptr + offs_m[:, None] * stride_o + offs_d[None, :], o, mask=offs_m[:, None] < seq_len)
""",
        hints=("not rescaled",),
    ),
    Blind(
        name="flash_causal_strict",
        exercise_id="triton_flash_attention",
        half="held2",
        correct=False,
        cause="The causal mask keeps only keys strictly before the query (offs_m > offs_n) and so masks the diagonal, the query's own key, which it must keep (offs_n <= offs_m); the first query then has no key at all and gets NaN, and every other causal row is wrong.",
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
    for start_n in range(0, seq_len, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        kv_mask = offs_n[:, None] < seq_len
        k = tl.load(k_ptr + offs_n[:, None] * stride_k + offs_d[None, :], mask=kv_mask, other=0.0)
        v = tl.load(v_ptr + offs_n[:, None] * stride_v + offs_d[None, :], mask=kv_mask, other=0.0)
        s = tl.dot(q, tl.trans(k)) * sm_scale
        keep = offs_n[None, :] < seq_len
        if CAUSAL:
            keep = keep & (offs_m[:, None] > offs_n[None, :])
        s = tl.where(keep, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m_i = m_new
    o = acc / l_i[:, None]
    tl.store(o_ptr + offs_m[:, None] * stride_o + offs_d[None, :], o, mask=offs_m[:, None] < seq_len)
""",
        hints=("off by one",),
    ),
    # ---------------------------------------------------------------- triton_cross_entropy
    Blind(
        name="ce_target_local_column",
        exercise_id="triton_cross_entropy",
        half="held2",
        correct=False,
        cause="The target's logit is picked where the column index inside the block, tl.arange(0, BLOCK_V), equals the target instead of the global column v0 + arange, so a target below BLOCK_V is matched once in every vocabulary block (adding the logits of columns t, t + BLOCK_V, ..., or -inf past vocab) and a target >= BLOCK_V never; right only when vocab <= BLOCK_V.",
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
    target_logit = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for v0 in range(0, vocab, BLOCK_V):
        local = tl.arange(0, BLOCK_V)
        cols = v0 + local
        w = tl.load(
            w_ptr + cols[:, None] * stride_w + dims[None, :], mask=cols[:, None] < vocab, other=0.0
        )
        logits = tl.dot(h, tl.trans(w))
        logits = tl.where(cols[None, :] < vocab, logits, -float("inf"))
        m_new = tl.maximum(m, tl.max(logits, axis=1))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(logits - m_new[:, None]), axis=1)
        m = m_new
        hit = local[None, :] == target[:, None]
        target_logit += tl.sum(tl.where(hit, logits, 0.0), axis=1)
    tl.store(loss_ptr + rows, m + tl.log(s) - target_logit, mask=row_ok)
""",
        hints=("column inside the block",),
    ),
    # ---------------------------------------------------------------- triton_cross_entropy_backward
    Blind(
        name="ceb_onehot_cast_scaled",
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
    for j0 in tl.range(0, vocab, BLOCK_V):
        j = j0 + tl.arange(0, BLOCK_V)
        inside = j < vocab
        z = tl.load(src + j, mask=inside, other=-float("inf"))
        softmax = tl.exp(z - row_lse)
        onehot = (j == t).to(tl.float32)
        tl.store(dst + j, g * softmax - g * onehot, mask=inside)
""",
    ),
    Blind(
        name="ceb_no_dloss",
        exercise_id="triton_cross_entropy_backward",
        half="held2",
        correct=False,
        cause="The gradient softmax - onehot is stored without multiplying it by dloss[i], the gradient that reaches row i's loss, so every row is off by the factor dloss[i] (right only where dloss is 1).",
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
    for start in range(0, vocab, BLOCK_V):
        cols = start + tl.arange(0, BLOCK_V)
        mask = cols < vocab
        x = tl.load(logits_ptr + row * stride_logits + cols, mask=mask, other=0.0)
        p = tl.exp(x - lse)
        grad = p - tl.where(cols == target, 1.0, 0.0)
        tl.store(dlogits_ptr + row * stride_dlogits + cols, grad, mask=mask)
""",
        hints=("never multiplied by dloss",),
    ),
]
