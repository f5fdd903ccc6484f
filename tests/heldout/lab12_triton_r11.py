"""Blind held-out round lab12_triton_r11 (half "held2") for labs/12_triton_lab.ipynb.

Written 2026-11-29 (about 08:51-08:58 UTC by the machine's clock) by a helper session that never
saw the checker. Read: tests/heldout/__init__.py, the solution notebook's cells
(solutions/12_triton_lab.ipynb), the docstring and first two entries of lab12_triton_r10.py
(format only) and the earlier rounds' causes list (/tmp/blind/causes_lab12_triton.txt, read in
full); every wrong answer here has a mistake not on that list. Each answer's source starts with
the imports of torch, triton and triton.language as tl (the string H). 18 answers: 5 right, 13
wrong.

Verification (scratch /tmp/lab12_triton_r11/verify.py, run from tests/ with
GPU_COURSE_MODE=simulator, so `import gpu_utils` sets TRITON_INTERPRET=1; CPU tensors; every
output filled with NaN before the launch; an access outside the tensors
(gu.runtime.LaunchOutOfBounds) counts as wrong). Each answer was loaded with heldout.submitted()
and launched directly with grid cdiv(size, block), compared with torch:
- triton_vector_add: (n, BLOCK) = (1,32), (3,32), (100,32), (1000,128), (1025,256), (64,64) vs
  x + y. Cyclic-lanes answer (program p takes p, p + G, p + 2G, ...): exact everywhere.
- triton_outer_add: (M, N, BLOCK_M, BLOCK_N) = (1,1,16,16), (3,5,16,16), (37,70,16,16),
  (20,70,16,32) with out a view whose rows are 80 apart, (70,37,32,16), (40,40,16,16). Store mask
  with M and N swapped: exact for (1,1) and (40,40); LaunchOutOfBounds for (3,5), (37,70),
  (20,70); NaN left in rows 37-69 for (70,37).
- triton_row_sum: (R, C, BLOCK) = (3,1,128), (4,37,16) rows padded by 7, (2,3000,128),
  (3,3000,128) float16 padded by 5, (5,2,16), (8,3,16), vs x.float().sum(1). cdiv block-count
  answer: relative error < 1e-7. Storing the lane vector acc without tl.sum: every case raises
  ValueError('Value argument cannot be block type if pointer argument is not a block').
- triton_softmax: (R, C, BLOCK) = (3,5,4), (4,37,16), (1,1,4), (5,100,32), (1,37,64), (4,64,16)
  with randn*3, (3,50,16) around +200 and -200, and (2,48,16) with the row maximum in the first
  block; x and out padded views; vs torch.softmax. Three-pass answer: err < 3e-7 everywhere.
  m = block maximum: right for the one-block cases (1,1,4) and (1,37,64), errors 0.3-2700 on all
  the others. math.exp: every launch raises in the interpreter (InterpreterError wrapping
  OverflowError 'cannot convert float infinity to integer'), and triton.compile refuses it too.
- triton_layernorm: (R, C, pad) = (3,5,0), (4,37,3), (2,64,0), (6,100,4), (1,1,0), (40,8,0), x a
  padded view of randn*2+1, BLOCK = next_pow2(C), eps 1e-5, random w and b; vs F.layer_norm.
  x_row_stride as length: right (err < 5e-7) for contiguous rows, errors 0.15-0.22 for the padded
  (4,37,3) and (6,100,4). Bias per row: right only for (1,1), errors 2-4 otherwise and
  LaunchOutOfBounds for (40,8) (rows past n_cols read past b).
- triton_matmul: float16 a (M x K), b a transposed view of an N x K float16 tensor, c float32,
  (M, N, K, BM, BN, BK) = (16,16,16,16,16,16), (20,24,40,16,16,16), (33,17,50,16,16,16),
  (1,2,3,16,16,16), (32,32,64,16,16,16), (17,40,20,16,16,16), (32,32,64,16,32,16),
  (32,32,64,32,16,32), each with "none" and "relu"; vs a.float() @ b.float() (relu'd),
  relative to max |c|. tl.dot(a, b, acc) + tl.where relu answer: err < 4e-7. tl.trans(b):
  errors 0.6-1.9 when BLOCK_K == BLOCK_N, AssertionError (reduction dimensions) otherwise.
  Pointers advanced by k * stride: right when K <= BLOCK_K ((16,16,16), (1,2,3)), errors 0.6-1.1
  otherwise.
- triton_flash_attention: float16 q, k, v (rows padded by 8), (L, D, BLOCK_M, BLOCK_N, causal) =
  (1,16,16,16,F), (3,16,16,16,T), (37,32,16,16,F/T), (64,16,32,16,T), (50,16,16,32,F/T),
  sm_scale 1/sqrt(D); vs F.scaled_dot_product_attention in float32. p @ k: errors 1.5-4.3 on
  every case. Causal by loop bound only: non-causal cases right (err < 2e-4), causal cases
  errors 1.6-2.9.
- triton_cross_entropy: float16 h (rows padded to HIDDEN + 8), float16 w (randn*0.5), int64
  targets, (n, vocab, HIDDEN, BLOCK_M, BLOCK_V) = (5,37,16,16,16), (20,100,32,16,32),
  (3,10,16,16,16), (1,1,16,16,16), (40,70,32,16,16), (40,10,16,16,16), (7,16,16,16,16); vs
  F.cross_entropy(h.float() @ w.float().T, reduction="none"). Base-2 log-sum-exp answer (exp2 /
  log2 with log2(e) and ln 2, target logit by a running max from -inf): err < 1e-6. Subtracting
  the maximum: right only for vocab = 1, errors 6-15 otherwise. w loaded once before the loop:
  right when vocab <= BLOCK_V, errors 8-11 when vocab > BLOCK_V.
- triton_cross_entropy_backward: float32 logits*3 (rows padded by 3), dlogits a padded view, lse
  from torch.logsumexp, dloss in [0.5, 1.5), (n, vocab, BLOCK_V) = (3,10,16), (4,100,32),
  (2,64,16), (1,1,16), (3,37,16); vs (softmax - onehot) * dloss. Sigmoid: errors 0.5-1.4 on
  every case.
The five right answers were also compiled with triton.compile for GPUTarget("cuda", 90, 32) in a
separate process with TRITON_INTERPRET=0 (scratch comp.py; float16 a, b and h, w): all compile;
the math.exp softmax fails there with a CompilationError.
A vector add storing with tl.atomic_add was drafted and dropped (untested) to keep 18 answers.
"""

from heldout import Blind

H = "import torch\nimport triton\nimport triton.language as tl\n\n"

ANSWERS = [
    # ---------------------------------------------------------------- vector add
    Blind(
        name="add_cyclic_lanes",
        exercise_id="triton_vector_add",
        half="held2",
        correct=True,
        source=H
        + """@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    # cyclic distribution: program p takes p, p + G, p + 2G, ... (G programs in the grid)
    n_programs = tl.num_programs(0)
    idx = tl.program_id(0) + tl.arange(0, BLOCK_SIZE) * n_programs
    inside = idx < n_elements
    a = tl.load(x_ptr + idx, mask=inside, other=0.0)
    b = tl.load(y_ptr + idx, mask=inside, other=0.0)
    tl.store(out_ptr + idx, a + b, mask=inside)
""",
    ),
    # ---------------------------------------------------------------- outer add
    Blind(
        name="outer_store_mask_bounds_swapped",
        exercise_id="triton_outer_add",
        half="held2",
        correct=False,
        cause="The store's mask swaps the two bounds, (offs_m[:, None] < N) & (offs_n[None, :] < M), comparing the row offsets with N and the column offsets with M: when M < N the kernel writes rows past M (past the end of out), when M > N the rows past N are never written and the columns past N spill into the next row; right only when M == N.",
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
    x = tl.load(x_ptr + offs_m, mask=offs_m < M, other=0.0)
    y = tl.load(y_ptr + offs_n, mask=offs_n < N, other=0.0)
    tile = x[:, None] + y[None, :]
    out_ptrs = out_ptr + offs_m[:, None] * out_row_stride + offs_n[None, :]
    tl.store(out_ptrs, tile, mask=(offs_m[:, None] < N) & (offs_n[None, :] < M))
""",
        hints=("your mask lets these lanes through",),
    ),
    # ---------------------------------------------------------------- row sum
    Blind(
        name="row_sum_cdiv_block_count",
        exercise_id="triton_row_sum",
        half="held2",
        correct=True,
        source=H
        + """@triton.jit
def row_sum_kernel(x_ptr, out_ptr, x_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    r = tl.program_id(0)
    row_start = x_ptr + r.to(tl.int64) * x_row_stride
    total = 0.0
    n_blocks = tl.cdiv(n_cols, BLOCK_SIZE)
    for blk in range(n_blocks):
        cols = blk * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        vals = tl.load(row_start + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        total += tl.sum(vals, axis=0)
    tl.store(out_ptr + r, total)
""",
    ),
    Blind(
        name="row_sum_lane_vector_stored",
        exercise_id="triton_row_sum",
        half="held2",
        correct=False,
        cause="The per-lane accumulator acc (a vector of BLOCK_SIZE partial sums) is stored at out_ptr + row without the final reduction tl.sum(acc, axis=0), and a block of values cannot be stored through one scalar pointer, so the launch fails (Value argument cannot be block type if pointer argument is not a block) instead of storing the row's total.",
        source=H
        + """@triton.jit
def row_sum_kernel(x_ptr, out_ptr, x_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * x_row_stride
    acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0)
        acc += x.to(tl.float32)
    tl.store(out_ptr + row, acc)
""",
        hints=("reduce the block first",),
    ),
    # ---------------------------------------------------------------- softmax
    Blind(
        name="softmax_three_passes",
        exercise_id="triton_softmax",
        half="held2",
        correct=True,
        source=H
        + """@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    src = x_ptr + pid * x_row_stride
    dst = out_ptr + pid * out_row_stride
    # pass 1: the row's maximum
    row_max = tl.full((BLOCK_SIZE,), -float("inf"), dtype=tl.float32)
    for c0 in range(0, n_cols, BLOCK_SIZE):
        c = c0 + tl.arange(0, BLOCK_SIZE)
        v = tl.load(src + c, mask=c < n_cols, other=-float("inf"))
        row_max = tl.maximum(row_max, v)
    mx = tl.max(row_max, axis=0)
    # pass 2: the denominator
    denom = 0.0
    for c0 in range(0, n_cols, BLOCK_SIZE):
        c = c0 + tl.arange(0, BLOCK_SIZE)
        v = tl.load(src + c, mask=c < n_cols, other=-float("inf"))
        denom += tl.sum(tl.exp(v - mx), axis=0)
    inv = 1.0 / denom
    # pass 3: write
    for c0 in range(0, n_cols, BLOCK_SIZE):
        c = c0 + tl.arange(0, BLOCK_SIZE)
        ok = c < n_cols
        v = tl.load(src + c, mask=ok, other=-float("inf"))
        tl.store(dst + c, tl.exp(v - mx) * inv, mask=ok)
""",
    ),
    Blind(
        name="softmax_m_set_to_block_max",
        exercise_id="triton_softmax",
        half="held2",
        correct=False,
        cause="After each block the running maximum is set to the block's own maximum, m = tl.max(x, axis=0), instead of m = m_new, so m forgets larger values from earlier blocks: later rescales exp(m - m_new) start from the wrong old maximum and the output pass divides exp(x - m_last_block) by a sum kept relative to another maximum; right only when the row fits in one block (or its block maxima never decrease).",
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
        block_max = tl.max(x, axis=0)
        m_new = tl.maximum(m, block_max)
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = block_max
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=-float("inf"))
        tl.store(out_row + cols, tl.exp(x - m) / s, mask=mask)
""",
        hints=("the m of the second pass",),
    ),
    Blind(
        name="softmax_python_math_exp",
        exercise_id="triton_softmax",
        half="held2",
        correct=False,
        cause="The rescale factor is computed with Python's math.exp(m - m_new) inside the @triton.jit kernel, but m and m_new are Triton tensors (values of the kernel, not Python floats), so the kernel fails at the launch; it must be tl.exp(m - m_new).",
        source=H
        + """import math


@triton.jit
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
        s = s * math.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=-float("inf"))
        tl.store(out_row + cols, tl.exp(x - m) / s, mask=mask)
""",
        hints=("use `tl.exp`",),
    ),
    # ---------------------------------------------------------------- layer norm
    Blind(
        name="layernorm_row_stride_as_length",
        exercise_id="triton_layernorm",
        half="held2",
        correct=False,
        cause="The mean and the variance divide by x_row_stride, the distance between rows, as if it were the row's length, instead of n_cols: right for contiguous rows, but when x's rows are padded (x_row_stride > n_cols) the mean and variance are too small.",
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
    row_len = x_row_stride
    mean = tl.sum(x, axis=0) / row_len
    diff = tl.where(mask, x - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / row_len
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(out_ptr + row * out_row_stride + cols, diff * rstd * w + b, mask=mask)
""",
        hints=("x_row_stride", "not by n_cols"),
    ),
    Blind(
        name="layernorm_bias_per_row",
        exercise_id="triton_layernorm",
        half="held2",
        correct=False,
        cause="The bias is loaded as one number per row, tl.load(b_ptr + row), instead of one per column, tl.load(b_ptr + cols, mask=mask), so every element of row r gets b[r] (and rows past n_cols read past b's end).",
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
    b = tl.load(b_ptr + row)
    tl.store(out_ptr + row * out_row_stride + cols, diff * rstd * w + b, mask=mask)
""",
        hints=("one number per row",),
    ),
    # ---------------------------------------------------------------- matmul
    Blind(
        name="matmul_dot_acc_argument_where_relu",
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
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, tl.cdiv(K, BLOCK_K)):
        kk = k0 * BLOCK_K + rk
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
    in_c = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc, mask=in_c)
""",
    ),
    Blind(
        name="matmul_b_transposed_again",
        exercise_id="triton_matmul",
        half="held2",
        correct=False,
        cause="The dot product transposes b's tile, tl.dot(a, tl.trans(b)), as if b had to be turned around (the lab mentions a transposed view of b), but the strides already read b[k, n] as a K x N tile, so the kernel multiplies by its transpose: wrong values, and a shape error unless BLOCK_K == BLOCK_N.",
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
        acc += tl.dot(a, tl.trans(b))
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    if ACTIVATION == "relu":
        acc = tl.maximum(acc, 0.0)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))
""",
        hints=("b read transposed",),
    ),
    Blind(
        name="matmul_advance_by_k",
        exercise_id="triton_matmul",
        half="held2",
        correct=False,
        cause="The pointers advance by k * stride (the current step's start, 0, BLOCK_K, 2 * BLOCK_K, ...) instead of by BLOCK_K * stride, so the second step reloads the first K block and later steps jump too far while the mask K - k assumes they moved by one block each time: wrong whenever K > BLOCK_K.",
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
        a_ptrs += k * stride_ak
        b_ptrs += k * stride_bk
    if ACTIVATION == "relu":
        acc = tl.maximum(acc, 0.0)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))
""",
        hints=("advance by k",),
    ),
    # ---------------------------------------------------------------- flash attention
    Blind(
        name="flash_p_times_k",
        exercise_id="triton_flash_attention",
        half="held2",
        correct=False,
        cause="The accumulator adds p @ k instead of p @ v (the key tile where the value tile belongs, a copied line), so the output is the attention-weighted average of the keys, not of the values.",
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
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), k)
        m_i = m_new
    o = acc / l_i[:, None]
    tl.store(
        o_ptr + offs_m[:, None] * stride_o + offs_d[None, :], o, mask=offs_m[:, None] < seq_len
    )
""",
        hints=("averages the keys",),
    ),
    Blind(
        name="flash_causal_by_loop_bound_only",
        exercise_id="triton_flash_attention",
        half="held2",
        correct=False,
        cause="With CAUSAL the kernel only stops the key loop at the end of the query block and never masks key > query inside that last (diagonal) block, so each query also attends to the later keys of its own block; the loop bound skips the future blocks, but the diagonal block still needs the mask offs_m[:, None] >= offs_n[None, :].",
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
    # causal: the keys after this query block are never visited
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
        s = tl.where(offs_n[None, :] < seq_len, s, -float("inf"))
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
        hints=("later keys of its own block",),
    ),
    # ---------------------------------------------------------------- cross entropy
    Blind(
        name="ce_base2_logsumexp",
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
    LOG2E: tl.constexpr = 1.4426950408889634
    LN2: tl.constexpr = 0.6931471805599453
    pid = tl.program_id(0)
    r = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    d = tl.arange(0, HIDDEN)
    live = r < n_rows
    hb = tl.load(h_ptr + r[:, None] * stride_h + d[None, :], mask=live[:, None], other=0.0)
    tgt = tl.load(target_ptr + r, mask=live, other=0)
    run_max = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)  # in log2 units
    run_sum = tl.zeros((BLOCK_M,), dtype=tl.float32)
    tgt_logit = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)
    for v0 in range(0, vocab, BLOCK_V):
        c = v0 + tl.arange(0, BLOCK_V)
        wb = tl.load(w_ptr + c[:, None] * stride_w + d[None, :], mask=c[:, None] < vocab, other=0.0)
        z = tl.dot(hb, tl.trans(wb))
        z = tl.where(c[None, :] < vocab, z, -float("inf"))
        tgt_logit = tl.maximum(
            tgt_logit, tl.max(tl.where(c[None, :] == tgt[:, None], z, -float("inf")), axis=1)
        )
        z2 = z * LOG2E
        new_max = tl.maximum(run_max, tl.max(z2, axis=1))
        run_sum = run_sum * tl.exp2(run_max - new_max) + tl.sum(
            tl.exp2(z2 - new_max[:, None]), axis=1
        )
        run_max = new_max
    lse = (run_max + tl.log2(run_sum)) * LN2
    tl.store(loss_ptr + r, lse - tgt_logit, mask=live)
""",
    ),
    Blind(
        name="ce_subtract_max_logit",
        exercise_id="triton_cross_entropy",
        half="held2",
        correct=False,
        cause="The loss subtracts the row's largest logit, m + log(s) - m = log(s), instead of the target's logit: the target is loaded but never used, so the kernel computes logsumexp - max rather than logsumexp - logits[target].",
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
    # the predicted class's logit is the largest one
    tl.store(loss_ptr + rows, m + tl.log(s) - m, mask=row_ok)
""",
        hints=("largest logit",),
    ),
    Blind(
        name="ce_w_block_loaded_once",
        exercise_id="triton_cross_entropy",
        half="held2",
        correct=False,
        cause="The block of w is loaded once, before the vocabulary loop (rows 0..BLOCK_V-1 of w), and reused in every iteration, so every vocabulary block's logits are those of the first BLOCK_V entries: right only when vocab <= BLOCK_V.",
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
    # load h and w once, outside the loop
    vcols = tl.arange(0, BLOCK_V)
    w = tl.load(
        w_ptr + vcols[:, None] * stride_w + dims[None, :], mask=vcols[:, None] < vocab, other=0.0
    )
    m = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)
    s = tl.zeros((BLOCK_M,), dtype=tl.float32)
    picked = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for v0 in range(0, vocab, BLOCK_V):
        cols = v0 + tl.arange(0, BLOCK_V)
        logits = tl.dot(h, tl.trans(w))
        logits = tl.where(cols[None, :] < vocab, logits, -float("inf"))
        m_new = tl.maximum(m, tl.max(logits, axis=1))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(logits - m_new[:, None]), axis=1)
        m = m_new
        picked += tl.sum(tl.where(cols[None, :] == target[:, None], logits, 0.0), axis=1)
    tl.store(loss_ptr + rows, m + tl.log(s) - picked, mask=row_ok)
""",
        hints=("loaded once, before the loop",),
    ),
    # ---------------------------------------------------------------- cross entropy backward
    Blind(
        name="ce_bwd_sigmoid_probabilities",
        exercise_id="triton_cross_entropy_backward",
        half="held2",
        correct=False,
        cause="The probabilities are the sigmoid of each logit, 1 / (1 + exp(-x)), as in binary cross-entropy, instead of the softmax over the row, exp(x - lse): the saved lse is loaded but never used.",
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
        p = 1.0 / (1.0 + tl.exp(-x))
        grad = (p - tl.where(cols == target, 1.0, 0.0)) * dloss
        tl.store(dlogits_ptr + row * stride_dlogits + cols, grad, mask=mask)
""",
        hints=("sigmoid",),
    ),
]
