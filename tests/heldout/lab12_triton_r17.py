"""Blind held-out round lab12_triton_r17 (half "held2") for labs/12_triton_lab.ipynb.

Written 2026-11-29 (about 15:22-15:27 UTC by the machine's clock) by a helper session that never
saw the checker, the tests or any FAQ. Read: the brief (/tmp/prompts/lab12_triton_r17.md),
tests/heldout/__init__.py, the docstring and first two entries of lab12_triton_r13.py (format
only), the learner notebook labs/12_triton_lab.ipynb (every exercise's markdown) and the
solution cells of solutions/12_triton_lab.ipynb. No list of earlier rounds' mistakes was read: the
wrong answers are the mistakes I expect most often from a class doing the lab for the first time,
one mistake each. Each answer's header imports torch, triton and triton.language as tl (the
string H). 6 right answers, 12 wrong ones; every exercise has at least one wrong answer.

Verification (scratch under /tmp/lab12_triton_r17/: verify.py, compile.py; run from tests/ with
GPU_COURSE_MODE=simulator, so TRITON_INTERPRET=1 via `import gpu_utils`; CPU tensors; outputs
filled with NaN first, often padded views): each answer was loaded with heldout.submitted() and
launched with the grids of the solution (cdiv over blocks / one program per row), case by case,
against torch (the solution's formulas); an exception (gu.runtime.LaunchOutOfBounds) or NaN left
counts as wrong.
- triton_vector_add: (n, BLOCK) = (1,32), (3,32), (100,32), (1000,128), (1025,256), (64,64),
  (256,128) vs x + y, tol 1e-6. add_block_start_with_selfcheck (other names, other=0.0, plus a
  self-check launch in the cell, device from gu.mode): exact everywhere, its self-check prints
  "ok: True". add_mask_less_equal: exact for (64,64), (256,128) (n a multiple of BLOCK);
  LaunchOutOfBounds reading x at offset n on the five others (also n = 1, 3).
- triton_outer_add: (M, N, BLOCK_M, BLOCK_N) = (1,1,16,16), (3,5,16,16), (37,70,16,16),
  (20,70,16,32) with out's rows 80 apart, (70,37,32,16), (16,16,16,16), (40,40,16,16), (2,3,16,16).
  outer_program_ids_swapped: exact whenever both grid axes have the same number of tiles (six
  cases, incl. (70,37,32,16) whose grid is 3 x 3); NaN left in out on (37,70,16,16) (grid 3 x 5)
  and (20,70,16,32) (grid 2 x 3), no out-of-bounds access.
- triton_row_sum: (R, C, BLOCK, row padding) = (3,1,128,0), (4,37,16,7), (2,3000,128,0), (3,3000,128,5)
  float16, (5,2,16,0), (4,64,16,0), (3,256,128,4), (1,1,16,0); vs x.float().sum(1), relative tol
  1e-4. rowsum_scalar_total (a scalar float32 total += tl.sum(block)): <= 6.6e-7 everywhere.
  rowsum_row_times_n_cols: right on the five unpadded cases, LaunchOutOfBounds on the three padded
  ones (the last row's reads run past the view).
- triton_softmax: (R, C, BLOCK, scale, shift) = (3,5,4,1,0), (4,37,16,3,0), (1,1,4,1,0),
  (5,100,32,3,0), (1,37,64,3,0), (2,64,16,3,0), (2,16,16,3,0), (3,50,16,1,-200), (3,48,16,1,+200);
  x padded by 3, out by 2; vs torch.softmax, tol 1e-5. softmax_sum_not_rescaled: right when the
  row fits one block ((3,5,4) happens to be right too: 1.5e-8), errors 0.035-0.71 on the five
  multi-block rows. softmax_masked_lanes_zero: right when C is a multiple of BLOCK ((2,64,16),
  (2,16,16), (3,48,16,+200)), errors 0.005-0.67 on the six others (0.22 on the rows near -200).
- triton_layernorm: (R, C, scale of x) = (3,5,1), (4,37,1), (2,64,1), (6,100,1), (1,1,1),
  (4,37,1e-3), (3,64,3e-3), (2,128,1), (2,3,1), x = randn*scale + 0.5*scale, BLOCK =
  next_pow2(C), eps 1e-5, padded x and out, random w, b; vs F.layer_norm, tol 1e-4.
  layernorm_rsqrt_where (.to(float32), tl.where-masked deviations, tl.rsqrt, w loaded with
  other=1.0): <= 4.8e-7 everywhere. layernorm_padding_in_variance: right for C = 1, 64, 128
  (no padded lanes), errors 0.015-1.26 for C = 3, 5, 37, 100.
- triton_matmul: float16 a (M x K), b either K x N or a transposed view of an N x K tensor ("T"),
  (M, N, K, BM, BN, BK, b, act) = (16,16,16,16,16,16,-,none), (20,24,40,16,16,16,T,relu),
  (33,17,50,16,16,16,-,none), (1,2,3,16,16,16,-,relu), (32,32,64,16,16,16,T,none),
  (17,40,20,16,32,16,-,relu), (20,24,40,16,32,32,-,none), (32,32,32,16,16,16,-,relu); vs
  a.float() @ b.float() (relu'd), relative tol 1e-3. matmul_k_mask_not_shifted: right when K is
  a multiple of BK or K <= BK (four cases), LaunchOutOfBounds reading a/b on the four others
  (K = 40, 50, 20 with BK 16; 40 with BK 32). matmul_b_columns_unit_stride: right for every
  row-major b (<= 1.3e-6), errors 14 and 22.8 on the two transposed-b cases.
- triton_flash_attention: float16 q, k, v with rows padded by 8, out padded by 4, (L, D, BLOCK_M,
  BLOCK_N, causal) = (1,16,16,16,F), (3,16,16,16,T), (37,32,16,16,F), (37,32,16,16,T),
  (64,16,32,16,T), (50,16,16,32,F), (50,16,16,32,T), (12,16,16,16,T), (45,16,32,16,F), sm_scale
  1/sqrt(D); vs F.scaled_dot_product_attention in float32, tol 1e-2. flash_exp2_all_key_blocks
  (log2(e)-scaled scores with tl.exp2, every key block visited, causal only through the mask):
  <= 2.9e-4 everywhere. flash_acc_not_rescaled: right when the queries see one key block ((1,..),
  (3,..,T), (12,..,T)), errors 0.28-1.22 on the six others. flash_causal_strict: right on the four
  non-causal cases, NaN output on all five causal cases (query 0 has no key left).
- triton_cross_entropy: float16 h (rows padded by 8) and w, int64 targets, (n, vocab, HIDDEN,
  BLOCK_M, BLOCK_V, scale) = (5,37,16,16,16,1), (20,100,32,16,32,1), (3,10,16,16,16,1),
  (1,1,16,16,16,1), (40,70,32,16,16,1), (40,64,16,16,16,1), (7,32,16,16,32,1), (9,50,16,16,16,4)
  (h, w times 4: large logits); vs F.cross_entropy(h.float() @ w.float().T, reduction="none"),
  relative tol 2e-3. ce_target_row_of_w (the target's logit as h . w[target] in float32, the
  log-sum-exp online over blocks): <= 3.1e-7 everywhere. ce_target_local_column: right when vocab
  <= BLOCK_V ((3,10), (1,1), (7,32,..,32)), inf (a masked -inf lane summed into the picked logit)
  or error 8.2 on the five others.
- triton_cross_entropy_backward: float32 logits*3 (rows padded by 3), dlogits a view with rows 5
  longer, (n, vocab, BLOCK_V) = (3,10,16), (4,100,32), (2,64,16), (1,1,16), (3,37,16), (40,16,16),
  and (3,37,16) with logits*40; lse = torch.logsumexp, dloss in [0.5, 1.5); vs (softmax - onehot)
  * dloss, tol 1e-5. ceb_onehot_cast_pointers (masked lanes loaded as -inf, (c == t).to(float32),
  g*soft - g*onehot): <= 1.2e-6 everywhere. ceb_dloss_forgotten: right only for vocab = 1 (the
  gradient is 0 there), errors 0.19-0.48 elsewhere.
All 18 answers were also compiled with triton.compile (ASTSource, GPUTarget("cuda", 90, 32),
TRITON_INTERPRET unset; float16 a, b, q, k, v, h, w and row_sum's x; int64 targets; BLOCK_N 32
with BLOCK_K 32, HEAD_DIM 32 with BLOCK 16, BLOCK_M 16 with BLOCK_V 32; matmul with "relu" and
"none", attention causal and not): all 18 compile, so every wrong answer fails on its numbers or
its accesses only. (The vector add's cell runs `import gpu_utils`, which sets TRITON_INTERPRET for
later @triton.jit kernels of the same process; compile.py imports gpu_utils first and then unsets
it, else the later kernels are interpreter objects that triton.compile cannot take.)
"""

from heldout import Blind

H = """import torch
import triton
import triton.language as tl

"""

ANSWERS = [
    # ---------------------------------------------------------------- triton_vector_add
    Blind(
        name="add_block_start_with_selfcheck",
        exercise_id="triton_vector_add",
        half="held2",
        correct=True,
        source=H
        + """@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    block_start = tl.program_id(axis=0) * BLOCK_SIZE
    idx = block_start + tl.arange(0, BLOCK_SIZE)
    in_bounds = idx < n_elements
    a = tl.load(x_ptr + idx, mask=in_bounds, other=0.0)
    b = tl.load(y_ptr + idx, mask=in_bounds, other=0.0)
    result = a + b
    tl.store(out_ptr + idx, result, mask=in_bounds)


# quick check of my own before submitting
import gpu_utils as gu

_dev = "cuda" if gu.mode == "gpu" else "cpu"
_n = 77
_x, _y = torch.rand(_n, device=_dev), torch.rand(_n, device=_dev)
_out = torch.empty(_n, device=_dev)
add_kernel[(triton.cdiv(_n, 32),)](_x, _y, _out, _n, BLOCK_SIZE=32)
print("ok:", torch.allclose(_out, _x + _y))
""",
    ),
    Blind(
        name="add_mask_less_equal",
        exercise_id="triton_vector_add",
        half="held2",
        correct=False,
        cause="The mask is offsets <= n_elements instead of offsets < n_elements (off by one), so when n_elements is not a multiple of BLOCK_SIZE the last program's lane at offset n_elements loads x and y and stores out one element past their end.",
        source=H
        + """@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets <= n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)
""",
        hints=("compare with `<`",),
    ),
    # ---------------------------------------------------------------- triton_outer_add
    Blind(
        name="outer_program_ids_swapped",
        exercise_id="triton_outer_add",
        half="held2",
        correct=False,
        cause="The tile's rows are taken from tl.program_id(1) and its columns from tl.program_id(0), but the grid is (cdiv(M, BLOCK_M), cdiv(N, BLOCK_N)) with the row tiles on axis 0, so when the two axes have different numbers of tiles some tiles of out are never written (they keep their NaN) while the programs mapped to tiles outside out store nothing (all lanes masked).",
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
    pid_n = tl.program_id(0)
    pid_m = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + offs_m, mask=offs_m < M)
    y = tl.load(y_ptr + offs_n, mask=offs_n < N)
    out_ptrs = out_ptr + offs_m[:, None] * out_row_stride + offs_n[None, :]
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(out_ptrs, x[:, None] + y[None, :], mask=mask)
""",
        hints=("program ids are exchanged",),
    ),
    # ---------------------------------------------------------------- triton_row_sum
    Blind(
        name="rowsum_scalar_total",
        exercise_id="triton_row_sum",
        half="held2",
        correct=True,
        source=H
        + """@triton.jit
def row_sum_kernel(x_ptr, out_ptr, x_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    base = x_ptr + pid * x_row_stride
    total = 0.0
    for off in range(0, n_cols, BLOCK_SIZE):
        idx = off + tl.arange(0, BLOCK_SIZE)
        chunk = tl.load(base + idx, mask=idx < n_cols, other=0.0).to(tl.float32)
        total += tl.sum(chunk, axis=0)
    tl.store(out_ptr + pid, total)
""",
    ),
    Blind(
        name="rowsum_row_times_n_cols",
        exercise_id="triton_row_sum",
        half="held2",
        correct=False,
        cause="Row r starts at x_ptr + r * n_cols instead of x_ptr + r * x_row_stride, so when x's rows are padded (stride larger than n_cols) every row after the first sums the wrong elements.",
        source=H
        + """@triton.jit
def row_sum_kernel(x_ptr, out_ptr, x_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * n_cols
    acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0)
        acc += x.to(tl.float32)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))
""",
        hints=("row stride",),
    ),
    # ---------------------------------------------------------------- triton_softmax
    Blind(
        name="softmax_sum_not_rescaled",
        exercise_id="triton_softmax",
        half="held2",
        correct=False,
        cause="The running sum is not rescaled when the maximum grows (s = s + sum(exp(x - m_new)) instead of s * exp(m - m_new) + sum(exp(x - m_new))), so the terms of earlier blocks stay relative to an old, smaller maximum and the denominator is too large whenever a later block of the row raises the maximum.",
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
        s = s + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=-float("inf"))
        tl.store(out_row + cols, tl.exp(x - m) / s, mask=mask)
""",
        hints=("not rescaled",),
    ),
    Blind(
        name="softmax_masked_lanes_zero",
        exercise_id="triton_softmax",
        half="held2",
        correct=False,
        cause="The masked lanes are loaded with other=0.0 instead of -inf, so in the last, partial block of a row each lane past n_cols adds exp(0 - m_new) to the running sum (and 0 can become the maximum of an all-negative row), giving too small probabilities whenever n_cols is not a multiple of BLOCK_SIZE.",
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
    # ---------------------------------------------------------------- triton_layernorm
    Blind(
        name="layernorm_rsqrt_where",
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
    row = tl.load(x_ptr + r * x_row_stride + offs, mask=valid, other=0.0).to(tl.float32)
    mu = tl.sum(row, axis=0) / n_cols
    centered = tl.where(valid, row - mu, 0.0)
    sigma2 = tl.sum(centered * centered, axis=0) / n_cols
    inv = tl.rsqrt(sigma2 + eps)
    gamma = tl.load(w_ptr + offs, mask=valid, other=1.0)
    beta = tl.load(b_ptr + offs, mask=valid, other=0.0)
    y = centered * inv * gamma + beta
    tl.store(out_ptr + r * out_row_stride + offs, y, mask=valid)
""",
    ),
    Blind(
        name="layernorm_padding_in_variance",
        exercise_id="triton_layernorm",
        half="held2",
        correct=False,
        cause="The deviations x - mean are not masked before squaring, so each padded lane past n_cols (loaded as 0) adds mean**2 to the variance's sum; the variance is too large whenever n_cols is not a power of two (BLOCK_SIZE > n_cols).",
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
    # ---------------------------------------------------------------- triton_matmul
    Blind(
        name="matmul_k_mask_not_shifted",
        exercise_id="triton_matmul",
        half="held2",
        correct=False,
        cause="The pointers advance by BLOCK_K each iteration but the K mask stays offs_k < K (not offs_k < K - k), so it never turns off the lanes past K in the last, partial K block: when K is larger than BLOCK_K and not a multiple of it, the loads read a and b past their K edge.",
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
    Blind(
        name="matmul_b_columns_unit_stride",
        exercise_id="triton_matmul",
        half="held2",
        correct=False,
        cause="b's columns are addressed as offs_n with a step of 1 instead of offs_n * stride_bn (b assumed row-major), so when b is a transposed view (stride_bn != 1) the kernel reads the wrong elements of b.",
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
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :]
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < K - k) & (offs_n[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    if ACTIVATION == "relu":
        acc = tl.maximum(acc, 0.0)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))
""",
        hints=("stride_bn",),
    ),
    # ---------------------------------------------------------------- triton_flash_attention
    Blind(
        name="flash_exp2_all_key_blocks",
        exercise_id="triton_flash_attention",
        half="held2",
        correct=True,
        source=H
        + """LOG2E = 1.4426950408889634


@triton.jit
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
    # exp2 instead of exp: scale the scores by log2(e) once
    qk_scale = sm_scale * 1.4426950408889634
    q_rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    d = tl.arange(0, HEAD_DIM)
    q_ok = q_rows < seq_len
    q = tl.load(q_ptr + q_rows[:, None] * stride_q + d[None, :], mask=q_ok[:, None], other=0.0)
    row_max = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    row_sum = tl.zeros((BLOCK_M,), dtype=tl.float32)
    out = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    # every key block, the causal mask does the rest (block 0 always has key 0)
    for kv0 in range(0, seq_len, BLOCK_N):
        kv_rows = kv0 + tl.arange(0, BLOCK_N)
        kv_ok = kv_rows < seq_len
        k = tl.load(k_ptr + kv_rows[:, None] * stride_k + d[None, :], mask=kv_ok[:, None], other=0.0)
        v = tl.load(v_ptr + kv_rows[:, None] * stride_v + d[None, :], mask=kv_ok[:, None], other=0.0)
        scores = tl.dot(q, tl.trans(k)) * qk_scale
        allowed = kv_ok[None, :]
        if CAUSAL:
            allowed = allowed & (kv_rows[None, :] <= q_rows[:, None])
        scores = tl.where(allowed, scores, float("-inf"))
        new_max = tl.maximum(row_max, tl.max(scores, axis=1))
        p = tl.exp2(scores - new_max[:, None])
        corr = tl.exp2(row_max - new_max)
        row_sum = row_sum * corr + tl.sum(p, axis=1)
        out = out * corr[:, None] + tl.dot(p.to(tl.float16), v)
        row_max = new_max
    out = out / row_sum[:, None]
    tl.store(o_ptr + q_rows[:, None] * stride_o + d[None, :], out, mask=q_ok[:, None])
""",
    ),
    Blind(
        name="flash_acc_not_rescaled",
        exercise_id="triton_flash_attention",
        half="held2",
        correct=False,
        cause="The output accumulator is not rescaled by alpha when the running maximum grows (acc = acc + p @ v instead of acc * alpha + p @ v), while l_i is, so the contributions of earlier key blocks keep their old, smaller maximum and the result is wrong whenever a row sees more than one key block.",
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
        acc = acc + tl.dot(p.to(tl.float16), v)
        m_i = m_new
    o = acc / l_i[:, None]
    tl.store(
        o_ptr + offs_m[:, None] * stride_o + offs_d[None, :], o, mask=offs_m[:, None] < seq_len
    )
""",
        hints=("not rescaled",),
    ),
    Blind(
        name="flash_causal_strict",
        exercise_id="triton_flash_attention",
        half="held2",
        correct=False,
        cause="The causal mask keeps only keys strictly before the query (offs_m > offs_n instead of >=), so each query loses its own key: query 0 has no key left (its row of s is all -inf, exp(-inf - -inf) gives NaN) and every other causal row is wrong; non-causal cases are right.",
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
            keep = keep & (offs_m[:, None] > offs_n[None, :])
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
        hints=("off by one",),
    ),
    # ---------------------------------------------------------------- triton_cross_entropy
    Blind(
        name="ce_target_row_of_w",
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
    r = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    k = tl.arange(0, HIDDEN)
    live = r < n_rows
    hb = tl.load(h_ptr + r[:, None] * stride_h + k[None, :], mask=live[:, None], other=0.0)
    tgt = tl.load(target_ptr + r, mask=live, other=0)
    # the target's logit straight from its row of w: h . w[target]
    w_tgt = tl.load(w_ptr + tgt[:, None] * stride_w + k[None, :], mask=live[:, None], other=0.0)
    tgt_logit = tl.sum(hb.to(tl.float32) * w_tgt.to(tl.float32), axis=1)
    run_max = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    run_sum = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for start in range(0, vocab, BLOCK_V):
        vcols = start + tl.arange(0, BLOCK_V)
        wb = tl.load(w_ptr + vcols[:, None] * stride_w + k[None, :], mask=vcols[:, None] < vocab, other=0.0)
        z = tl.dot(hb, tl.trans(wb))
        z = tl.where(vcols[None, :] < vocab, z, float("-inf"))
        new_max = tl.maximum(run_max, tl.max(z, axis=1))
        run_sum = run_sum * tl.exp(run_max - new_max) + tl.sum(tl.exp(z - new_max[:, None]), axis=1)
        run_max = new_max
    loss = run_max + tl.log(run_sum) - tgt_logit
    tl.store(loss_ptr + r, loss, mask=live)
""",
    ),
    Blind(
        name="ce_target_local_column",
        exercise_id="triton_cross_entropy",
        half="held2",
        correct=False,
        cause="The target's logit is picked where the column's index inside the block, tl.arange(0, BLOCK_V), equals the target instead of the global column v0 + arange, so when vocab > BLOCK_V a target below BLOCK_V is picked once in every vocabulary block (in the last, partial block possibly a masked -inf lane, which makes the loss inf) and a target at or above BLOCK_V is never picked.",
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
        lane = tl.arange(0, BLOCK_V)
        cols = v0 + lane
        w = tl.load(
            w_ptr + cols[:, None] * stride_w + dims[None, :], mask=cols[:, None] < vocab, other=0.0
        )
        logits = tl.dot(h, tl.trans(w))
        logits = tl.where(cols[None, :] < vocab, logits, -float("inf"))
        m_new = tl.maximum(m, tl.max(logits, axis=1))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(logits - m_new[:, None]), axis=1)
        m = m_new
        picked += tl.sum(tl.where(lane[None, :] == target[:, None], logits, 0.0), axis=1)
    tl.store(loss_ptr + rows, m + tl.log(s) - picked, mask=row_ok)
""",
        hints=("column inside the block",),
    ),
    # ---------------------------------------------------------------- triton_cross_entropy_backward
    Blind(
        name="ceb_onehot_cast_pointers",
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
    r = tl.program_id(0)
    t = tl.load(target_ptr + r)
    row_lse = tl.load(lse_ptr + r)
    g = tl.load(dloss_ptr + r)
    src = logits_ptr + r * stride_logits
    dst = dlogits_ptr + r * stride_dlogits
    for c0 in range(0, vocab, BLOCK_V):
        c = c0 + tl.arange(0, BLOCK_V)
        ok = c < vocab
        z = tl.load(src + c, mask=ok, other=-float("inf"))
        soft = tl.exp(z - row_lse)
        onehot = (c == t).to(tl.float32)
        tl.store(dst + c, g * soft - g * onehot, mask=ok)
""",
    ),
    Blind(
        name="ceb_dloss_forgotten",
        exercise_id="triton_cross_entropy_backward",
        half="held2",
        correct=False,
        cause="dloss is never loaded or multiplied in: the kernel stores softmax - onehot, the gradient of a loss whose every row gets gradient 1, instead of (softmax - onehot) * dloss[row].",
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
