"""Blind held-out round lab12_triton_r18 (half "held2") for labs/12_triton_lab.ipynb.

Written 2026-11-29, about 15:28-15:33 UTC by the machine's clock (`date -u`), by a helper session
that never saw the checker. Read: the brief, tests/heldout/__init__.py, the docstring and first
two entries of lab12_triton_r13.py (format only), the learner notebook labs/12_triton_lab.ipynb
(markdown and stubs; no FAQ cell) and the solution notebook's code cells
(solutions/12_triton_lab.ipynb). Nothing under gpu_utils/exercises, no tests/test_*.py, no other
heldout file, no list of earlier causes. The mistakes are the ones expected most often from a
class doing this lab for the first time, one mistake per answer. Each answer's header imports
torch, triton and triton.language as tl (the string H).
5 right answers, 13 wrong ones, over all nine exercises (a wrong one on each of them).

Verification (scratch under /tmp/lab12_triton_r18/: verify.py, compile.py; run from tests/ with
GPU_COURSE_MODE=simulator, TRITON_INTERPRET=1 via `import gpu_utils`, CPU tensors, outputs filled
with NaN first, grids as the lab's launches: cdiv(size, BLOCK) programs per tiled axis, one
program per row for row_sum/softmax/layernorm/backward): each answer was loaded with
heldout.submitted() and launched directly, case by case, and compared with torch (the solution's
formulas); an access outside the tensors (gu.runtime.LaunchOutOfBounds), NaN left or an error
counts as wrong. The solution notebook's nine kernels, run through the same harness, pass every
case (so the harness agrees with the reference). compile.py compiled all 18 kernels (Triton
3.7.1, no interpreter) for GPUTarget("cuda", 90, 32): all compile.
- triton_vector_add, (n, BLOCK) = (1,32), (3,32), (100,32), (1000,128), (1025,256), (64,64),
  vs x + y: add_where_and_other exact everywhere. add_offsets_pid_not_scaled: exact when one
  program covers everything ((1,32), (3,32), (64,64)); 65, 865, 765 NaN left on (100,32),
  (1000,128), (1025,256).
- triton_outer_add, (M, N, BLOCK_M, BLOCK_N, out row stride) = (1,1,16,16,1), (3,5,16,16,5),
  (37,70,16,16,70), (20,70,16,32,80) [out a view, rows 80 apart, 70 long], (70,37,32,16,37),
  (16,16,16,16,16): outer_row_step_N exact on the five contiguous cases, LaunchOutOfBounds (a
  store into the gap between two rows of the view) on (20,70,16,32,80).
- triton_row_sum, (R, C, BLOCK, row padding, dtype) = (3,1,128,0,f32), (4,37,16,7,f32),
  (2,3000,128,0,f32), (3,3000,128,5,f16), (5,2,16,0,f32), (4,64,16,0,f32), (3,256,128,4,f32), vs
  x.float().sum(1), rtol 1e-4: rowsum_scalar_accumulator errors <= 7.6e-6 everywhere.
  rowsum_assign_instead_of_add right for C <= BLOCK ((3,1,128), (5,2,16)), errors 4-140 on the
  five others.
- triton_softmax, (R, C, BLOCK, shift) = (3,5,4,0), (4,37,16,0), (1,1,4,0), (5,100,32,0),
  (2,16,16,0), (3,50,16,-200), (3,50,16,+200 with the maximum in the last column), (2,64,16,0);
  x = randn*3 + shift, x and out padded views; vs torch.softmax, rtol 1e-5 atol 1e-6:
  softmax_exp2_online errors <= 1.8e-7 everywhere. softmax_masked_lanes_zero right when C is a
  multiple of BLOCK ((2,16,16), (2,64,16)) and on the +200 rows (exp(0 - m) underflows), errors
  0.005-0.98 on the five others (0.56 on the -200 rows, where 0 becomes the maximum).
  softmax_sum_not_rescaled right when the row fits one block ((1,1,4), (2,16,16)) and on
  (3,5,4), whose rows' maxima happened to lie in the first block; errors 0.23-0.77 on the five
  others.
- triton_layernorm, (R, C, scale) = (3,5,1), (4,37,1), (2,64,1), (1,1,1), (6,100,1), (2,128,1),
  (4,37,1e-3); x = scale*(randn + 0.5), BLOCK = next_pow2(C), eps 1e-5, padded x and out, random
  w and b; vs F.layer_norm, tol 1e-4: layernorm_padding_in_variance right for C = 1, 64, 128
  (no padded lanes), errors 0.012-0.49 for C = 5, 37, 100. layernorm_unbiased_variance wrong on
  all seven (errors 0.0017-0.19), NaN for C = 1 (0/0).
- triton_matmul, float16 a (M x K), b either K x N or a transposed view of an N x K tensor,
  "none" and "relu", (M, N, K, BM, BN, BK) = (16,16,16,16,16,16), (20,24,40,16,16,16),
  (33,17,50,16,16,16), (1,2,3,16,16,16), (32,32,64,16,16,16), (17,40,20,16,32,16),
  (20,24,40,16,32,32) (28 launches); vs a.float() @ b.float(), tol 1e-3: matmul_dot_acc_argument
  errors <= 8.6e-6 on all 28. matmul_kmask_not_shifted right when K is a multiple of BK or
  K <= BK ((16,16,16), (1,2,3), (32,32,64)), LaunchOutOfBounds on the 16 launches of the four
  others.
- triton_flash_attention, float16 q, k, v (q and v padded views), (seq_len, HEAD_DIM, BLOCK_M,
  BLOCK_N) = (1,16,16,16), (3,16,16,16), (16,16,16,16), (40,32,16,16), (64,16,16,32),
  (100,32,32,16), causal and not, sm_scale 1/sqrt(HEAD_DIM); vs
  F.scaled_dot_product_attention in float32, rtol 1e-2 atol 3e-3 (the solution's p is cast to
  float16; the solution's own errors are <= 3e-4): attention_acc_not_rescaled right when all keys
  fit in one BLOCK_N block (seq_len 1, 3, 16), errors 0.6-1.7 on the six others.
  attention_causal_excludes_diagonal right on the six non-causal launches, NaN rows (first query,
  no key) on all six causal ones.
- triton_cross_entropy, float16 h (n_rows x HIDDEN) and w (vocab x HIDDEN, *0.5), int64 targets
  (last row's target = vocab - 1), (n_rows, vocab, HIDDEN, BLOCK_M, BLOCK_V) = (1,5,16,16,16),
  (3,16,16,16,16), (20,100,32,16,32), (33,257,16,16,64), (16,64,16,16,64), (5,3,16,16,16),
  (17,40,32,16,16); vs F.cross_entropy(h.float() @ w.float().T, reduction="none"), tol 1e-3:
  ce_target_row_dot errors <= 1.4e-6 everywhere. ce_target_local_column right when the
  vocabulary fits one block (vocab 5, 16, 64, 3), inf on vocab 100, 257, 40 (a -inf logit of the
  last partial block picked). ce_padded_logits_not_masked right when vocab is a multiple of
  BLOCK_V (16, 64), errors 0.04-2 on the five others.
- triton_cross_entropy_backward, float32 logits (randn*2, padded rows), int64 targets, lse =
  logsumexp, dloss = 1/R ("mean") or ones, (R, vocab, BLOCK_V, padding) = (1,1,16,0),
  (3,5,16,3), (4,37,16,0), (2,100,32,5), (3,1000,128,0), (2,64,64,0), (8,50,64,2), dlogits a
  padded view; vs (softmax - onehot) * dloss, rtol 1e-5: ceb_onehot_not_times_dloss right
  whenever dloss is 1 (the "ones" launches and R = 1), errors 0.5-0.88 on the six "mean" launches
  with R > 1.
"""

from heldout import Blind

H = """import torch
import triton
import triton.language as tl

"""

ANSWERS = [
    # ---------------------------------------------------------------- triton_vector_add
    Blind(
        name="add_where_and_other",
        exercise_id="triton_vector_add",
        half="held2",
        correct=True,
        source=H
        + """@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    block_start = tl.program_id(axis=0) * BLOCK_SIZE
    idx = block_start + tl.arange(0, BLOCK_SIZE)
    in_range = idx < n_elements
    a = tl.load(x_ptr + idx, mask=in_range, other=0.0)
    b = tl.load(y_ptr + idx, mask=in_range, other=0.0)
    total = a + b
    tl.store(out_ptr + idx, total, mask=in_range)
""",
    ),
    Blind(
        name="add_offsets_pid_not_scaled",
        exercise_id="triton_vector_add",
        half="held2",
        correct=False,
        cause="The block's offsets are pid + tl.arange(0, BLOCK_SIZE) instead of pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE), so the programs' blocks overlap, starting one element apart, and everything past the first BLOCK_SIZE + n_programs - 1 elements is never written when there is more than one program.",
        source=H
        + """@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)
""",
        hints=("pid * BLOCK_SIZE",),
    ),
    # ---------------------------------------------------------------- triton_outer_add
    Blind(
        name="outer_row_step_N",
        exercise_id="triton_outer_add",
        half="held2",
        correct=False,
        cause="The store steps between the rows of out with N (offs_m[:, None] * N) instead of out_row_stride, so when out is a view whose rows are further apart than N (80 apart, 70 long) the rows after the first are written at the wrong places, partly into the gaps between the view's rows (outside out), and parts of out are left unwritten.",
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
        name="rowsum_scalar_accumulator",
        exercise_id="triton_row_sum",
        half="held2",
        correct=True,
        source=H
        + """@triton.jit
def row_sum_kernel(x_ptr, out_ptr, x_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    r = tl.program_id(0)
    base = x_ptr + r * x_row_stride
    total = tl.zeros((), dtype=tl.float32)  # one running number per row
    for start in range(0, n_cols, BLOCK_SIZE):
        offs = start + tl.arange(0, BLOCK_SIZE)
        chunk = tl.load(base + offs, mask=offs < n_cols, other=0.0).to(tl.float32)
        total += tl.sum(chunk, axis=0)
    tl.store(out_ptr + r, total)
""",
    ),
    Blind(
        name="rowsum_assign_instead_of_add",
        exercise_id="triton_row_sum",
        half="held2",
        correct=False,
        cause="Inside the loop the accumulator is overwritten (total = tl.sum(x)) instead of added to (total += tl.sum(x)), so out holds only the last block's sum; it is right only when the row fits in one block (n_cols <= BLOCK_SIZE).",
        source=H
        + """@triton.jit
def row_sum_kernel(x_ptr, out_ptr, x_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    total = 0.0
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_ptr + row * x_row_stride + cols, mask=cols < n_cols, other=0.0)
        total = tl.sum(x.to(tl.float32), axis=0)
    tl.store(out_ptr + row, total)
""",
        hints=("add each block into it",),
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
    # the same online max / rescaled sum, in base 2 (exp(t) = exp2(t * log2(e)))
    pid = tl.program_id(0)
    src = x_ptr + pid * x_row_stride
    dst = out_ptr + pid * out_row_stride
    run_max = -float("inf")
    run_sum = 0.0
    for c0 in range(0, n_cols, BLOCK_SIZE):
        offs = c0 + tl.arange(0, BLOCK_SIZE)
        v = tl.load(src + offs, mask=offs < n_cols, other=-float("inf"))
        new_max = tl.maximum(run_max, tl.max(v, axis=0))
        run_sum = run_sum * tl.exp2((run_max - new_max) * 1.4426950408889634) + tl.sum(
            tl.exp2((v - new_max) * 1.4426950408889634), axis=0
        )
        run_max = new_max
    inv = 1.0 / run_sum
    for c0 in range(0, n_cols, BLOCK_SIZE):
        offs = c0 + tl.arange(0, BLOCK_SIZE)
        keep = offs < n_cols
        v = tl.load(src + offs, mask=keep, other=-float("inf"))
        tl.store(dst + offs, tl.exp2((v - run_max) * 1.4426950408889634) * inv, mask=keep)
""",
    ),
    Blind(
        name="softmax_masked_lanes_zero",
        exercise_id="triton_softmax",
        half="held2",
        correct=False,
        cause="The masked lanes are loaded with other=0.0 instead of -inf in the first pass, so every lane past the end of the row adds exp(0 - m) to the running sum (and a 0 can become the maximum of an all-negative row), which gives wrong probabilities whenever n_cols is not a multiple of BLOCK_SIZE.",
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
        cause="The running sum is not rescaled when the maximum grows (s = s + sum(exp(x - m_new)) instead of s * exp(m - m_new) + ...), so the terms of earlier blocks stay relative to an older, smaller maximum; it is right only when the row fits in one block or its maximum is in the first block.",
        source=H
        + """@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    m = -float("inf")
    s = 0.0
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_ptr + row * x_row_stride + cols, mask=cols < n_cols, other=-float("inf"))
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
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
        name="layernorm_padding_in_variance",
        exercise_id="triton_layernorm",
        half="held2",
        correct=False,
        cause="The variance sums (x - mean)^2 over all BLOCK_SIZE lanes: the masked lanes were loaded as 0, so each padded lane adds mean^2 to the variance (no tl.where(mask, x - mean, 0)), which is wrong whenever n_cols is not a power of two.",
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
    xc = x - mean
    var = tl.sum(xc * xc, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(out_ptr + row * out_row_stride + cols, xc * rstd * w + b, mask=mask)
""",
        hints=("past the end of the row",),
    ),
    Blind(
        name="layernorm_unbiased_variance",
        exercise_id="triton_layernorm",
        half="held2",
        correct=False,
        cause="The variance is divided by n_cols - 1 (the unbiased variance, torch.var's default) instead of n_cols, as layer_norm's biased variance asks, so every output is scaled by sqrt((n-1)/n) too small, and a one-column row divides by zero.",
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
        name="matmul_dot_acc_argument",
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
        acc = tl.dot(a_tile, b_tile, acc)  # accumulate inside the dot
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
        name="matmul_kmask_not_shifted",
        exercise_id="triton_matmul",
        half="held2",
        correct=False,
        cause="The pointers advance by BLOCK_K each step but the K mask stays offs_k < K (it should be offs_k < K - k, or use the global index k + offs_k), so the last, partial K block is not masked and reads past the end of a row of a and of b (outside the tensors or into the next row) whenever K is not a multiple of BLOCK_K.",
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
        name="attention_acc_not_rescaled",
        exercise_id="triton_flash_attention",
        half="held2",
        correct=False,
        cause="The accumulator is not rescaled by alpha = exp(m_i - m_new) when the running maximum grows (acc = acc + p @ v instead of acc * alpha[:, None] + p @ v) while l_i is, so earlier key blocks are weighted against an older maximum; it is right only when all keys fit in one BLOCK_N block.",
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
        name="attention_causal_excludes_diagonal",
        exercise_id="triton_flash_attention",
        half="held2",
        correct=False,
        cause="The causal mask keeps keys with offs_m > offs_n instead of offs_m >= offs_n, so each query is masked from its own key (the diagonal): every row attends one key too few and the first query has no key at all (its output is 0/0 = NaN); non-causal cases are right.",
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
    pid = tl.program_id(0)
    offs_m = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(
        q_ptr + offs_m[:, None] * stride_q + offs_d[None, :], mask=offs_m[:, None] < seq_len, other=0.0
    )
    m_i = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    for start_n in range(0, seq_len, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k = tl.load(
            k_ptr + offs_n[:, None] * stride_k + offs_d[None, :], mask=offs_n[:, None] < seq_len, other=0.0
        )
        v = tl.load(
            v_ptr + offs_n[:, None] * stride_v + offs_d[None, :], mask=offs_n[:, None] < seq_len, other=0.0
        )
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
        name="ce_target_row_dot",
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
    # the running log-sum-exp over vocabulary blocks; the target's logit is computed once,
    # directly, as h . w[target] (one row of w per row of h)
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, HIDDEN)
    live = rows < n_rows
    h = tl.load(h_ptr + rows[:, None] * stride_h + dims[None, :], mask=live[:, None], other=0.0)
    tgt = tl.load(target_ptr + rows, mask=live, other=0)
    w_t = tl.load(w_ptr + tgt[:, None] * stride_w + dims[None, :], mask=live[:, None], other=0.0)
    target_logit = tl.sum(h.to(tl.float32) * w_t.to(tl.float32), axis=1)
    run_max = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)
    run_sum = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for v0 in range(0, vocab, BLOCK_V):
        cols = v0 + tl.arange(0, BLOCK_V)
        w = tl.load(
            w_ptr + cols[:, None] * stride_w + dims[None, :], mask=cols[:, None] < vocab, other=0.0
        )
        z = tl.dot(h, tl.trans(w))
        z = tl.where(cols[None, :] < vocab, z, -float("inf"))
        new_max = tl.maximum(run_max, tl.max(z, axis=1))
        run_sum = run_sum * tl.exp(run_max - new_max) + tl.sum(tl.exp(z - new_max[:, None]), axis=1)
        run_max = new_max
    tl.store(loss_ptr + rows, run_max + tl.log(run_sum) - target_logit, mask=live)
""",
    ),
    Blind(
        name="ce_target_local_column",
        exercise_id="triton_cross_entropy",
        half="held2",
        correct=False,
        cause="The target's logit is picked where the column index inside the block, tl.arange(0, BLOCK_V), equals the target instead of the global column v0 + tl.arange(0, BLOCK_V), so every vocabulary block adds the logit at local position target of its own block (-inf when that lane is past the vocabulary in the last partial block); it is right only when the vocabulary fits in one BLOCK_V block.",
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
        j = tl.arange(0, BLOCK_V)
        cols = v0 + j
        w = tl.load(
            w_ptr + cols[:, None] * stride_w + dims[None, :], mask=cols[:, None] < vocab, other=0.0
        )
        logits = tl.dot(h, tl.trans(w))
        logits = tl.where(cols[None, :] < vocab, logits, -float("inf"))
        m_new = tl.maximum(m, tl.max(logits, axis=1))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(logits - m_new[:, None]), axis=1)
        m = m_new
        picked += tl.sum(tl.where(j[None, :] == target[:, None], logits, 0.0), axis=1)
    tl.store(loss_ptr + rows, m + tl.log(s) - picked, mask=row_ok)
""",
        hints=("column inside the block",),
    ),
    Blind(
        name="ce_padded_logits_not_masked",
        exercise_id="triton_cross_entropy",
        half="held2",
        correct=False,
        cause="The logits of the columns past the vocabulary are not set to -inf: w's masked rows load as 0, so each padded column has logit 0 and adds exp(0 - m) to the running sum (and 0 can become the maximum), which is wrong whenever vocab is not a multiple of BLOCK_V.",
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
            w_ptr + cols[:, None] * stride_w + dims[None, :], mask=cols[:, None] < vocab, other=0.0
        )
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
        cause="Only the softmax term is multiplied by dloss (p * dloss - onehot) instead of the whole gradient (p - onehot) * dloss, so the target's column gets -1 instead of -dloss; it is right only when dloss is 1.",
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
        p = tl.exp(x - lse) * dloss
        grad = tl.where(cols == target, p - 1.0, p)
        tl.store(dlogits_ptr + row * stride_dlogits + cols, grad, mask=mask)
""",
        hints=("after the multiplication by dloss",),
    ),
]
