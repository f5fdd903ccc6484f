"""Blind held-out round lab12_triton_r15 (half "held2") for labs/12_triton_lab.ipynb.

Written 2026-11-29 (about 14:59-15:05 UTC by the machine's clock, `date -u`) by a helper session
that never saw the checker. Read: the brief, tests/heldout/__init__.py, the docstring and first
two entries of lab12_triton_r13.py (format only), and the solution notebook
solutions/12_triton_lab.ipynb (markdown and solution cells; no FAQ cell). No earlier round's list
of causes was read. Each answer's header imports torch, triton and triton.language as tl (the
string H). 5 right answers, 13 wrong ones, over all nine exercises (at least one wrong answer on
each; two wrong ones on each of matmul, flash attention, cross-entropy and its backward).
Wrong answers are single mistakes a first-time learner makes: an off-by-one mask, stepping rows by
the size instead of the stride, a loop that forgets its start, a maximum starting at 0, padding
counted in the variance, an epilogue inside the K loop, a K mask not shifted with the pointers, an
accumulator not rescaled, a strict causal mask, a block-local target column, padded logits left
in the log-sum-exp, a dloss applied to half the gradient, the wrong tensor's stride.

Verification (scratch under /tmp/lab12_triton_r15/: verify.py, compile.py, run1.txt, run2.txt;
run from tests/ with GPU_COURSE_MODE=simulator, so TRITON_INTERPRET=1 via `import gpu_utils`; CPU
tensors; outputs filled with NaN first; each answer loaded with heldout.submitted() and launched
directly case by case on the solution's grids; compared with torch (the solution's formulas);
gu.runtime.LaunchOutOfBounds or an interpreter error counts as wrong). Padded inputs are views
whose row stride was asserted to be cols + pad.
- triton_vector_add: (n, BLOCK) = (1,32), (3,32), (100,32), (1000,128), (1025,256), (64,64),
  (256,128) vs x + y, tol 1e-6. add_where_other_zero: exact everywhere. add_mask_less_equal:
  exact for the multiples (64,64), (256,128); LaunchOutOfBounds reading x at offset n on the five
  others.
- triton_outer_add: (M, N, BLOCK_M, BLOCK_N, pad of out's rows) = (1,1,16,16,0), (3,5,16,16,0),
  (37,70,16,16,0), (20,70,16,32,10) (rows 80 apart), (70,37,32,16,0), (16,16,16,16,0),
  (40,40,16,16,3). outer_row_step_n: exact on the contiguous outs, LaunchOutOfBounds (a write in
  the gap between rows) on the two padded ones.
- triton_row_sum: (R, C, BLOCK, pad) = (3,1,128,0), (4,37,16,7), (2,3000,128,0), (3,3000,128,5)
  float16, (5,2,16,0), (4,64,16,0), (3,16,16,2); vs x.float().sum(1), relative tol 1e-4.
  rowsum_cols_without_start: right when C <= BLOCK ((3,1), (5,2), (3,16,16)), relative errors
  1.6-25 on the four with C > BLOCK.
- triton_softmax: (R, C, BLOCK, shift) = (3,5,4,0), (4,37,16,0), (1,1,4,0), (5,100,32,0),
  (1,37,64,0), (2,64,16,0), (3,50,16,+200), (3,50,16,-200), (2,16,16,-200), x = randn*3 + shift,
  x rows padded by 3 and out by 2; vs torch.softmax, tol 1e-5. softmax_exp2_online: <= 1.2e-7
  everywhere. softmax_max_starts_at_zero: right on the first seven, NaN (0/0) on the two rows
  around -200.
- triton_layernorm: (R, C, scale, shift of x) = (3,5,1,0), (4,37,1,0), (2,64,1,0), (6,100,1,0),
  (1,1,1,0), (4,37,1e-3,0), (3,37,1,2), (2,128,1,0), (3,100,1,1); BLOCK = next_pow2(C), eps 1e-5,
  padded x and out, random w and b; vs F.layer_norm, tol 1e-4. layernorm_mask_as_float:
  <= 8.3e-7 everywhere. layernorm_var_counts_padding: right for C = 1, 64, 128 (BLOCK == C),
  errors 2.6e-3 (scale 1e-3) to 1.45 (mean 2) on the six others.
- triton_matmul: float16 a (M x K), b (K x N) or a transposed view of an N x K tensor ("bT"),
  (M,N,K,BM,BN,BK,act) = (16,16,16,16,16,16,relu), (20,24,40,16,16,16,relu,bT),
  (33,17,50,16,16,16,none), (1,2,3,16,16,16,relu), (32,32,64,16,16,16,relu),
  (17,40,20,16,32,16,none,bT), (32,32,32,16,16,16,none), (20,24,40,16,32,32,relu),
  (32,32,48,16,16,16,relu,bT); vs (a.float() @ b.float()) then relu, relative tol 1e-3.
  matmul_recompute_ptrs_where_relu: <= 2.3e-7 everywhere. matmul_relu_inside_k_loop: right for
  "none" and for relu with K <= BK ((16,16,16), (1,2,3)), errors 0.33-0.46 on the four relu
  cases with K > BK. matmul_kmask_not_shifted: right when K is a multiple of BK (16, 64, 32, 48),
  LaunchOutOfBounds reading b on the four with K = 40, 50, 20 (BK 16) and 40 (BK 32); (1,2,3) is
  right too (K < BK: one K block, where offs_k < K is the right mask).
- triton_flash_attention: float16 q, k, v rows padded by 8, o padded by 4, (L, D, BLOCK_M,
  BLOCK_N, causal) = (1,16,16,16,F), (3,16,16,16,T), (37,32,16,16,F/T), (64,16,32,16,T),
  (50,16,16,32,F/T), (40,16,16,16,T), (45,16,32,16,F), (16,16,16,16,F); sm_scale 1/sqrt(D); vs
  F.scaled_dot_product_attention in float32, tol 1e-2. flash_exp2_all_blocks: <= 3.4e-4
  everywhere. flash_acc_not_rescaled: right when L <= BLOCK_N ((1,...), (3,...), (16,...)),
  errors 0.3-0.9 on the seven others. flash_causal_strict_less: right on the five non-causal
  cases, NaN on all five causal ones.
- triton_cross_entropy: float16 h (rows padded by 8) and w, int64 targets, (n, vocab, HIDDEN,
  BLOCK_M, BLOCK_V, scale) = (5,37,16,16,16,1), (20,100,32,16,32,1), (3,10,16,16,16,1),
  (1,1,16,16,16,1), (40,70,32,16,16,1), (40,64,16,16,16,1), (7,32,16,16,32,1), (9,50,16,16,16,4),
  (6,16,16,16,16,1); vs F.cross_entropy(h.float() @ w.float().T, reduction="none"), relative tol
  2e-3 (of the largest loss). ce_target_local_column: right when vocab <= BLOCK_V (10/16, 1/16,
  32/32, 16/16), errors 0.34-0.82 on the five with vocab > BLOCK_V. ce_padding_columns_not_masked:
  right (exact) when vocab is a multiple of BLOCK_V; when it is not, the extra exp(0 - m) terms
  are small next to the sum for most rows: relative errors 5e-4, 4e-5, 5e-5 on (5,37), (20,100),
  (40,70) (under 2e-3), 1e-2 on (3,10) and 1e7 on (1,1) (the true loss is 0 there, the kernel's
  is log(exp(l) + 15) - l for the lone logit l); so it is caught only on small vocabularies or
  on rows whose largest logit is near or below 0: the weakest wrong answer of this file.
- triton_cross_entropy_backward: float32 logits = randn*3 (rows padded by 3), dlogits a view with
  rows 5 longer (and one case contiguous), (n, vocab, BLOCK_V, scale, dpad) = (3,10,16,3,5),
  (4,100,32,3,5), (2,64,16,3,5), (1,1,16,3,5), (3,37,16,3,5), (40,16,16,3,5), (3,37,16,40,5),
  (3,37,16,3,0); lse = torch.logsumexp, dloss in [0.5, 1.5); vs (softmax - onehot) * dloss, tol
  1e-5. ceb_onehot_not_times_dloss: errors 0.13-0.49 on every case (the target column is off by
  1 - dloss). ceb_dlogits_logits_stride: right only for n = 1, LaunchOutOfBounds writing dlogits
  (rows written 3 or 2 elements off, into the gap or past the end) on the seven others.
All 18 answers were also compiled with triton.compile (ASTSource, GPUTarget("cuda", 90, 32),
TRITON_INTERPRET=0; float16 x for the row sum, a, b, q, k, v, h, w; int64 targets; BLOCK_M=16,
BLOCK_N=32 for outer add; matmul 32/32/32 relu; flash HEAD_DIM 32, BLOCK_M 32, BLOCK_N 16,
causal; cross-entropy HIDDEN 32, BLOCK_M 16, BLOCK_V 32): all 18 compile (none of the mistakes
is a compile error). The five right answers were compiled a second time with other constexprs
(float32 row-sum x, softmax/layernorm BLOCK 16, matmul BLOCK_K 16 "none", flash BLOCK_N 32 not
causal, cross-entropy BLOCK_M 32 BLOCK_V 16, in compile2.py): all compile.
"""

from heldout import Blind

H = "import torch\nimport triton\nimport triton.language as tl\n\n"

ANSWERS = [
    # ---------------------------------------------------------------- triton_vector_add
    Blind(
        name="add_where_other_zero",
        exercise_id="triton_vector_add",
        half="held2",
        correct=True,
        source=H
        + """@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    block_start = tl.program_id(0) * BLOCK_SIZE
    idx = block_start + tl.arange(0, BLOCK_SIZE)
    in_bounds = idx < n_elements
    a = tl.load(x_ptr + idx, mask=in_bounds, other=0.0)
    b = tl.load(y_ptr + idx, mask=in_bounds, other=0.0)
    total = a + b
    tl.store(out_ptr + idx, total, mask=in_bounds)
""",
    ),
    Blind(
        name="add_mask_less_equal",
        exercise_id="triton_vector_add",
        half="held2",
        correct=False,
        cause="The mask is offsets <= n_elements instead of offsets < n_elements, so when n_elements is not a multiple of BLOCK_SIZE the lane at offset n_elements stays on and loads x and y and stores out one element past their end.",
        source=H
        + """@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets <= n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)
""",
        hints=("offset 1000", "compare with `<`"),
    ),
    # ---------------------------------------------------------------- triton_outer_add
    Blind(
        name="outer_row_step_n",
        exercise_id="triton_outer_add",
        half="held2",
        correct=False,
        cause="The store steps between rows of out by N (offs_m[:, None] * N) instead of out_row_stride, so when out is a view whose rows are farther apart than N (rows 80 apart but 70 long) every row after the first is written at the wrong place.",
        source=H
        + """@triton.jit
def outer_add_kernel(
    x_ptr, y_ptr, out_ptr, M, N, out_row_stride, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr
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
        name="rowsum_cols_without_start",
        exercise_id="triton_row_sum",
        half="held2",
        correct=False,
        cause="Inside the loop the columns are tl.arange(0, BLOCK_SIZE) without adding the loop's start, so every iteration loads and adds the row's first block again and the columns past BLOCK_SIZE are never read: the sum is wrong whenever n_cols > BLOCK_SIZE.",
        source=H
        + """@triton.jit
def row_sum_kernel(x_ptr, out_ptr, x_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    row_start = x_ptr + row * x_row_stride
    acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = tl.arange(0, BLOCK_SIZE)
        vals = tl.load(row_start + cols, mask=cols < n_cols, other=0.0)
        acc += vals.to(tl.float32)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))
""",
        hints=("same, first block",),
    ),
    # ---------------------------------------------------------------- triton_softmax
    Blind(
        name="softmax_exp2_online",
        exercise_id="triton_softmax",
        half="held2",
        correct=True,
        source=H
        + """@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    LOG2E: tl.constexpr = 1.4426950408889634
    row = tl.program_id(0)
    running_max = float("-inf")
    running_sum = 0.0
    for off in range(0, n_cols, BLOCK_SIZE):
        idx = off + tl.arange(0, BLOCK_SIZE)
        vals = tl.load(x_ptr + row * x_row_stride + idx, mask=idx < n_cols, other=float("-inf"))
        new_max = tl.maximum(running_max, tl.max(vals, axis=0))
        running_sum = running_sum * tl.exp2((running_max - new_max) * LOG2E) + tl.sum(
            tl.exp2((vals - new_max) * LOG2E), axis=0
        )
        running_max = new_max
    inv = 1.0 / running_sum
    for off in range(0, n_cols, BLOCK_SIZE):
        idx = off + tl.arange(0, BLOCK_SIZE)
        ok = idx < n_cols
        vals = tl.load(x_ptr + row * x_row_stride + idx, mask=ok, other=float("-inf"))
        tl.store(out_ptr + row * out_row_stride + idx, tl.exp2((vals - running_max) * LOG2E) * inv, mask=ok)
""",
    ),
    Blind(
        name="softmax_max_starts_at_zero",
        exercise_id="triton_softmax",
        half="held2",
        correct=False,
        cause="The running maximum starts at 0.0 instead of -inf, so for a row whose values are all far below 0 (around -200) the maximum stays 0, every exp(x - 0) underflows to 0, the sum is 0 and the outputs are 0/0 = NaN.",
        source=H
        + """@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * x_row_stride
    out_row = out_ptr + row * out_row_stride
    m = 0.0
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
        hints=("-float('inf')",),
    ),
    # ---------------------------------------------------------------- triton_layernorm
    Blind(
        name="layernorm_mask_as_float",
        exercise_id="triton_layernorm",
        half="held2",
        correct=True,
        source=H
        + """@triton.jit
def layernorm_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, eps, BLOCK_SIZE: tl.constexpr
):
    r = tl.program_id(0)
    offs = tl.arange(0, BLOCK_SIZE)
    valid = offs < n_cols
    keep = valid.to(tl.float32)
    xs = tl.load(x_ptr + r * x_row_stride + offs, mask=valid, other=0.0)
    mu = tl.sum(xs, axis=0) / n_cols
    centered = (xs - mu) * keep  # padded lanes count for nothing
    variance = tl.sum(centered * centered, axis=0) / n_cols
    inv_std = tl.rsqrt(variance + eps)
    gamma = tl.load(w_ptr + offs, mask=valid, other=1.0)
    beta = tl.load(b_ptr + offs, mask=valid, other=0.0)
    y = centered * inv_std * gamma + beta
    tl.store(out_ptr + r * out_row_stride + offs, y, mask=valid)
""",
    ),
    Blind(
        name="layernorm_var_counts_padding",
        exercise_id="triton_layernorm",
        half="held2",
        correct=False,
        cause="The variance sums (x - mean)^2 over the whole block, including the padded lanes past n_cols that were loaded as 0 and so each add mean^2, instead of over the real columns only; the result is wrong whenever n_cols is not a power of two (BLOCK_SIZE > n_cols) and the row's mean is not 0.",
        source=H
        + """@triton.jit
def layernorm_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, eps, BLOCK_SIZE: tl.constexpr
):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    xc = x - mean
    var = tl.sum(xc * xc, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(out_ptr + row * out_row_stride + cols, xc * rstd * w + b, mask=mask)
""",
        hints=("past the end of the row",),
    ),
    # ---------------------------------------------------------------- triton_matmul
    Blind(
        name="matmul_recompute_ptrs_where_relu",
        exercise_id="triton_matmul",
        half="held2",
        correct=True,
        source=H
        + """@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, ACTIVATION: tl.constexpr,
):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, tl.cdiv(K, BLOCK_K)):
        rk = k0 * BLOCK_K + tl.arange(0, BLOCK_K)
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
        name="matmul_relu_inside_k_loop",
        exercise_id="triton_matmul",
        half="held2",
        correct=False,
        cause="The relu is applied to the accumulator inside the K loop, after every partial tl.dot, instead of once on the finished accumulator, so negative partial sums are clipped before the later K blocks are added: wrong with ACTIVATION='relu' whenever K spans more than one BLOCK_K.",
        source=H
        + """@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, ACTIVATION: tl.constexpr,
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
        # fused epilogue
        if ACTIVATION == "relu":
            acc = tl.maximum(acc, 0.0)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))
""",
        hints=("inside the K loop",),
    ),
    Blind(
        name="matmul_kmask_not_shifted",
        exercise_id="triton_matmul",
        half="held2",
        correct=False,
        cause="The pointers are advanced by BLOCK_K each iteration but the K mask stays offs_k < K, the in-block index compared with the full K, instead of offs_k < K - k (or the global k + offs_k < K), so on the last, partial K block lanes past K are loaded from a and b: out of bounds whenever K is not a multiple of BLOCK_K.",
        source=H
        + """@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, ACTIVATION: tl.constexpr,
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
        name="flash_exp2_all_blocks",
        exercise_id="triton_flash_attention",
        half="held2",
        correct=True,
        source=H
        + """@triton.jit
def attention_kernel(
    q_ptr, k_ptr, v_ptr, o_ptr, seq_len, stride_q, stride_k, stride_v, stride_o, sm_scale,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
):
    # exp2 form: fold log2(e) into the scale; loop over every key block, masks do the causal part
    qk_scale = sm_scale * 1.4426950408889634
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + rows[:, None] * stride_q + d[None, :], mask=rows[:, None] < seq_len, other=0.0)
    row_max = tl.zeros((BLOCK_M,), dtype=tl.float32) - float("inf")
    denom = tl.zeros((BLOCK_M,), dtype=tl.float32)
    out = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    for n0 in range(0, seq_len, BLOCK_N):
        keys = n0 + tl.arange(0, BLOCK_N)
        kv_ok = keys[:, None] < seq_len
        k = tl.load(k_ptr + keys[:, None] * stride_k + d[None, :], mask=kv_ok, other=0.0)
        v = tl.load(v_ptr + keys[:, None] * stride_v + d[None, :], mask=kv_ok, other=0.0)
        scores = tl.dot(q, tl.trans(k)) * qk_scale
        allowed = keys[None, :] < seq_len
        if CAUSAL:
            allowed = allowed & (keys[None, :] <= rows[:, None])
        scores = tl.where(allowed, scores, -float("inf"))
        new_max = tl.maximum(row_max, tl.max(scores, axis=1))
        # a row with every key masked so far keeps -inf: avoid -inf - -inf
        safe_max = tl.where(new_max == -float("inf"), 0.0, new_max)
        p = tl.exp2(scores - safe_max[:, None])
        corr = tl.exp2(row_max - safe_max)
        denom = denom * corr + tl.sum(p, axis=1)
        out = out * corr[:, None] + tl.dot(p.to(tl.float16), v)
        row_max = new_max
    out = out / denom[:, None]
    tl.store(o_ptr + rows[:, None] * stride_o + d[None, :], out, mask=rows[:, None] < seq_len)
""",
    ),
    Blind(
        name="flash_acc_not_rescaled",
        exercise_id="triton_flash_attention",
        half="held2",
        correct=False,
        cause="The accumulator is updated as acc += p @ v without first multiplying it by alpha = exp(m_i - m_new), so the values added under an older, smaller maximum are never rescaled: wrong whenever a row's maximum grows after its first key block (seq_len > BLOCK_N).",
        source=H
        + """@triton.jit
def attention_kernel(
    q_ptr, k_ptr, v_ptr, o_ptr, seq_len, stride_q, stride_k, stride_v, stride_o, sm_scale,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
):
    start_m = tl.program_id(0) * BLOCK_M
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + offs_m[:, None] * stride_q + offs_d[None, :], mask=offs_m[:, None] < seq_len, other=0.0)
    m_i = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    for start_n in range(0, seq_len, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k = tl.load(k_ptr + offs_n[:, None] * stride_k + offs_d[None, :], mask=offs_n[:, None] < seq_len, other=0.0)
        v = tl.load(v_ptr + offs_n[:, None] * stride_v + offs_d[None, :], mask=offs_n[:, None] < seq_len, other=0.0)
        s = tl.dot(q, tl.trans(k)) * sm_scale
        keep = offs_n[None, :] < seq_len
        if CAUSAL:
            keep = keep & (offs_m[:, None] >= offs_n[None, :])
        s = tl.where(keep, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc += tl.dot(p.to(tl.float16), v)
        m_i = m_new
    o = acc / l_i[:, None]
    tl.store(o_ptr + offs_m[:, None] * stride_o + offs_d[None, :], o, mask=offs_m[:, None] < seq_len)
""",
        hints=("not rescaled",),
    ),
    Blind(
        name="flash_causal_strict_less",
        exercise_id="triton_flash_attention",
        half="held2",
        correct=False,
        cause="The causal mask keeps keys with offs_n < offs_m (strictly before the query) instead of offs_n <= offs_m, so each query no longer attends to itself: row 0 has every key masked (0/0 = NaN) and every other row is wrong when CAUSAL is true.",
        source=H
        + """@triton.jit
def attention_kernel(
    q_ptr, k_ptr, v_ptr, o_ptr, seq_len, stride_q, stride_k, stride_v, stride_o, sm_scale,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
):
    start_m = tl.program_id(0) * BLOCK_M
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + offs_m[:, None] * stride_q + offs_d[None, :], mask=offs_m[:, None] < seq_len, other=0.0)
    m_i = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    for start_n in range(0, seq_len, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k = tl.load(k_ptr + offs_n[:, None] * stride_k + offs_d[None, :], mask=offs_n[:, None] < seq_len, other=0.0)
        v = tl.load(v_ptr + offs_n[:, None] * stride_v + offs_d[None, :], mask=offs_n[:, None] < seq_len, other=0.0)
        s = tl.dot(q, tl.trans(k)) * sm_scale
        keep = offs_n[None, :] < seq_len
        if CAUSAL:
            keep = keep & (offs_n[None, :] < offs_m[:, None])
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
        cause="The target's logit is picked where the in-block column tl.arange(0, BLOCK_V) equals the target instead of the global column v0 + tl.arange(0, BLOCK_V), so a target t also matches column v0 + t of later blocks (and targets >= BLOCK_V never match): wrong whenever vocab > BLOCK_V.",
        source=H
        + """@triton.jit
def cross_entropy_kernel(
    h_ptr, w_ptr, target_ptr, loss_ptr, n_rows, vocab, stride_h, stride_w,
    HIDDEN: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_V: tl.constexpr,
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
        lane = tl.arange(0, BLOCK_V)
        cols = v0 + lane
        w = tl.load(w_ptr + cols[:, None] * stride_w + dims[None, :], mask=cols[:, None] < vocab, other=0.0)
        logits = tl.dot(h, tl.trans(w))
        logits = tl.where(cols[None, :] < vocab, logits, -float("inf"))
        m_new = tl.maximum(m, tl.max(logits, axis=1))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(logits - m_new[:, None]), axis=1)
        m = m_new
        is_target = lane[None, :] == target[:, None]
        picked += tl.sum(tl.where(is_target & (cols[None, :] < vocab), logits, 0.0), axis=1)
    tl.store(loss_ptr + rows, m + tl.log(s) - picked, mask=row_ok)
""",
        hints=("column inside the block",),
    ),
    Blind(
        name="ce_padding_columns_not_masked",
        exercise_id="triton_cross_entropy",
        half="held2",
        correct=False,
        cause="The logits of the columns past vocab (w rows loaded as 0, so logits 0) are not set to -inf before the log-sum-exp, so each padded column adds exp(0 - m) to the sum: the loss is too large whenever vocab is not a multiple of BLOCK_V.",
        source=H
        + """@triton.jit
def cross_entropy_kernel(
    h_ptr, w_ptr, target_ptr, loss_ptr, n_rows, vocab, stride_h, stride_w,
    HIDDEN: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_V: tl.constexpr,
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
        w = tl.load(w_ptr + cols[:, None] * stride_w + dims[None, :], mask=cols[:, None] < vocab, other=0.0)
        logits = tl.dot(h, tl.trans(w))
        m_new = tl.maximum(m, tl.max(logits, axis=1))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(logits - m_new[:, None]), axis=1)
        m = m_new
        picked += tl.sum(tl.where(cols[None, :] == target[:, None], logits, 0.0), axis=1)
    tl.store(loss_ptr + rows, m + tl.log(s) - picked, mask=row_ok)
""",
        hints=("past `vocab`",),
    ),
    # ---------------------------------------------------------------- triton_cross_entropy_backward
    Blind(
        name="ceb_onehot_not_times_dloss",
        exercise_id="triton_cross_entropy_backward",
        half="held2",
        correct=False,
        cause="Only the softmax is multiplied by dloss and the one-hot is subtracted unscaled (p * dloss - onehot) instead of (p - onehot) * dloss, so the target's column is off by 1 - dloss whenever dloss[i] != 1.",
        source=H
        + """@triton.jit
def cross_entropy_backward_kernel(
    logits_ptr, target_ptr, lse_ptr, dloss_ptr, dlogits_ptr, vocab, stride_logits, stride_dlogits,
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
        p = tl.exp(x - lse) * dloss
        grad = p - tl.where(cols == target, 1.0, 0.0)
        tl.store(dlogits_ptr + row * stride_dlogits + cols, grad, mask=mask)
""",
        hints=("after the multiplication by dloss",),
    ),
    Blind(
        name="ceb_dlogits_logits_stride",
        exercise_id="triton_cross_entropy_backward",
        half="held2",
        correct=False,
        cause="The store into dlogits steps between rows with stride_logits instead of stride_dlogits, so when dlogits' rows are spaced differently from the logits' rows (a padded view) rows after the first are written at the wrong place.",
        source=H
        + """@triton.jit
def cross_entropy_backward_kernel(
    logits_ptr, target_ptr, lse_ptr, dloss_ptr, dlogits_ptr, vocab, stride_logits, stride_dlogits,
    BLOCK_V: tl.constexpr,
):
    row = tl.program_id(0)
    row_off = row * stride_logits
    target = tl.load(target_ptr + row)
    lse = tl.load(lse_ptr + row)
    dloss = tl.load(dloss_ptr + row)
    for start in range(0, vocab, BLOCK_V):
        cols = start + tl.arange(0, BLOCK_V)
        mask = cols < vocab
        x = tl.load(logits_ptr + row_off + cols, mask=mask, other=0.0)
        onehot = (cols == target).to(tl.float32)
        grad = (tl.exp(x - lse) - onehot) * dloss
        tl.store(dlogits_ptr + row_off + cols, grad, mask=mask)
""",
        hints=("stride_dlogits",),
    ),
]
