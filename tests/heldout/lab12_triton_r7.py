"""Held-out round lab12_triton_r7 (half "held2") for labs/12_triton_lab.ipynb.

Written blind (without the checker) on 2026-11-29, about 02:25-02:35 UTC, by a helper session.
Read: tests/heldout/__init__.py, labs/12_triton_lab.ipynb, solutions/12_triton_lab.ipynb (its
code cells are the reference answers), and the list of earlier rounds' causes (to avoid them).
Nothing under gpu_utils/exercises/ or tests/ (besides heldout/__init__.py) was opened, and no
check cell was run.

Verification (scratch script /tmp/lab12_triton_r7/verify.py, TRITON_INTERPRET=1, CPU tensors):
each answer is taken with ``submitted()`` and launched with the grid the lab describes
(cdiv over blocks, one program per row, a 2-D grid of tiles for outer add and matmul), next to
the reference solution's kernel, on shapes including sizes 1, 2, 3, sizes that are not a
multiple of the block, padded rows (strided views of wider tensors), a transposed b for the
matmul, float16 inputs for exercises 6-8 and a float16 x for the row sum, adversarial rows
(values around +-1000) for the softmax. Outputs are views into NaN-filled buffers with guard
cells after them, so writes past the end show up as changed guards; inputs are views with NaN
after their end, so reads past the end show up as NaN. Float32 results must match the reference
kernel (and torch) to rtol/atol 1e-5 (1e-4 where sums of 3000 values are involved); float16
-input exercises to 2e-3 against a float32 torch computation on the same float16 inputs. Every
correct answer agreed on every case; each wrong answer differed (or wrote past the end) on at
least one case, the one named in its cause (the reversed causal mask also gives NaN rows,
since key blocks wholly before a query are fully masked; the unmasked store in the backward
writes correct values but changes the guard cells past dlogits' end). Outputs live in buffers of
3n + 8192 NaN cells: with a smaller guard, the transposed outer-add store wrote far enough past
the buffer to corrupt the interpreter's heap. Finally every answer (right and wrong) was put
through triton.compile for GPUTarget("cuda", 90, 32) on this CPU machine (script comp.py): all
30 compile, so no answer fails only because the GPU compiler refuses it. No device was used.
"""

from heldout import Blind

H = "import torch\nimport triton\nimport triton.language as tl\n\n"

ANSWERS = [
    # ---------------------------------------------------------------- triton_vector_add
    Blind(
        name="r7_vadd_where_block_start",
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
    tl.store(out_ptr + idx, a + b, mask=in_range)
""",
    ),
    Blind(
        name="r7_vadd_mask_minus_one",
        exercise_id="triton_vector_add",
        half="held2",
        correct=False,
        cause="The mask is offsets < n_elements - 1, which turns off the last element as well, so out[n_elements - 1] is never written.",
        source=H
        + """@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    # last valid index is n_elements - 1
    mask = offsets < n_elements - 1
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)
""",
        hints=("the mask stops short",),
    ),
    # ---------------------------------------------------------------- triton_outer_add
    Blind(
        name="r7_outer_expand_dims",
        exercise_id="triton_outer_add",
        half="held2",
        correct=True,
        source=H
        + """@triton.jit
def outer_add_kernel(x_ptr, y_ptr, out_ptr, M, N, out_row_stride,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    xv = tl.load(x_ptr + rows, mask=rows < M, other=0.0)
    yv = tl.load(y_ptr + cols, mask=cols < N, other=0.0)
    r2 = tl.expand_dims(rows, 1)
    c2 = tl.expand_dims(cols, 0)
    tile = tl.expand_dims(xv, 1) + tl.expand_dims(yv, 0)
    tl.store(out_ptr + r2 * out_row_stride + c2, tile, mask=(r2 < M) & (c2 < N))
""",
    ),
    Blind(
        name="r7_outer_store_transposed",
        exercise_id="triton_outer_add",
        half="held2",
        correct=False,
        cause="The store address puts the column index on the row stride, out_ptr + offs_n[None, :] * out_row_stride + offs_m[:, None], so x[i] + y[j] is written at out[j, i] (the transpose), which is wrong (and past the end of out when N > M).",
        source=H
        + """@triton.jit
def outer_add_kernel(x_ptr, y_ptr, out_ptr, M, N, out_row_stride,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + offs_m, mask=offs_m < M)
    y = tl.load(y_ptr + offs_n, mask=offs_n < N)
    out_ptrs = out_ptr + offs_n[None, :] * out_row_stride + offs_m[:, None]
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(out_ptrs, x[:, None] + y[None, :], mask=mask)
""",
        hints=("the tile transposed",),
    ),
    # ---------------------------------------------------------------- triton_row_sum
    Blind(
        name="r7_rowsum_scalar_total",
        exercise_id="triton_row_sum",
        half="held2",
        correct=True,
        source=H
        + """@triton.jit
def row_sum_kernel(x_ptr, out_ptr, x_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    base = x_ptr + row * x_row_stride
    total = tl.zeros((), dtype=tl.float32)
    n_blocks = tl.cdiv(n_cols, BLOCK_SIZE)
    for i in range(n_blocks):
        cols = i * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        vals = tl.load(base + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        total += tl.sum(vals, axis=0)
    tl.store(out_ptr + row, total)
""",
    ),
    Blind(
        name="r7_rowsum_start_times_block",
        exercise_id="triton_row_sum",
        half="held2",
        correct=False,
        cause="The loop variable start already steps by BLOCK_SIZE, but the columns are start * BLOCK_SIZE + arange, multiplied by BLOCK_SIZE a second time, so only the first block is summed and the later blocks jump past the row (masked off) when n_cols > BLOCK_SIZE.",
        source=H
        + """@triton.jit
def row_sum_kernel(x_ptr, out_ptr, x_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * x_row_stride
    acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0)
        acc += x.to(tl.float32)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))
""",
        hints=("first BLOCK_SIZE = 128 columns only",),
    ),
    # ---------------------------------------------------------------- triton_softmax
    Blind(
        name="r7_softmax_three_passes",
        exercise_id="triton_softmax",
        half="held2",
        correct=True,
        source=H
        + """@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    src = x_ptr + row * x_row_stride
    dst = out_ptr + row * out_row_stride
    # pass 1: the row's maximum
    row_max = -float("inf")
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(src + cols, mask=cols < n_cols, other=-float("inf"))
        row_max = tl.maximum(row_max, tl.max(x, axis=0))
    # pass 2: the denominator, against the final maximum
    denom = 0.0
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(src + cols, mask=cols < n_cols, other=-float("inf"))
        denom += tl.sum(tl.exp(x - row_max), axis=0)
    # pass 3: write
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        ok = cols < n_cols
        x = tl.load(src + cols, mask=ok, other=-float("inf"))
        tl.store(dst + cols, tl.exp(x - row_max) / denom, mask=ok)
""",
    ),
    Blind(
        name="r7_softmax_per_lane_state_no_merge_rescale",
        exercise_id="triton_softmax",
        half="held2",
        correct=False,
        cause="The running maximum and sum are kept per lane (vectors of BLOCK_SIZE), but at the end the lanes' sums are simply added, tl.sum(s), without rescaling each lane's sum by exp(m_lane - m_row) to the row's maximum, so the denominator is too large whenever the lanes' maxima differ (as they do for any row longer than one lane).",
        source=H
        + """@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * x_row_stride
    out_row = out_ptr + row * out_row_stride
    # one online state per lane, merged once at the end
    m = tl.full((BLOCK_SIZE,), -float("inf"), dtype=tl.float32)
    s = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf"))
        m_new = tl.maximum(m, x)
        scale = tl.where(m_new == -float("inf"), 0.0, tl.exp(m - m_new))
        s = s * scale + tl.where(x == -float("inf"), 0.0, tl.exp(x - m_new))
        m = m_new
    row_max = tl.max(m, axis=0)
    total = tl.sum(s, axis=0)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=-float("inf"))
        tl.store(out_row + cols, tl.exp(x - row_max) / total, mask=mask)
""",
        hints=("a factor of its own",),
    ),
    Blind(
        name="r7_softmax_writes_log_softmax",
        exercise_id="triton_softmax",
        half="held2",
        correct=False,
        cause="The second pass stores x - m - log(s), the log-softmax, instead of the softmax exp(x - m) / s.",
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
    # stable form: subtract the max and the log of the normaliser
    log_s = tl.log(s)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=-float("inf"))
        tl.store(out_row + cols, x - m - log_s, mask=mask)
""",
        hints=("log-softmax",),
    ),
    Blind(
        name="r7_softmax_zero_padding_in_max",
        exercise_id="triton_softmax",
        half="held2",
        correct=False,
        cause="Masked lanes are loaded as 0.0 and only kept out of the sum, not out of the maximum, so when n_cols is not a multiple of BLOCK_SIZE and a row is very negative the maximum is 0 and every exp(x - 0) underflows to 0 (0/0 = NaN); padded lanes must be -inf for tl.max too.",
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
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=0.0)
        m_new = tl.maximum(m, tl.max(x, axis=0))
        e = tl.where(mask, tl.exp(x - m_new), 0.0)
        s = s * tl.exp(m - m_new) + tl.sum(e, axis=0)
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
        name="r7_layernorm_rsqrt_where_first",
        exercise_id="triton_layernorm",
        half="held2",
        correct=True,
        source=H
        + """@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, eps,
                     BLOCK_SIZE: tl.constexpr):
    r = tl.program_id(0)
    offs = tl.arange(0, BLOCK_SIZE)
    valid = offs < n_cols
    x = tl.load(x_ptr + r * x_row_stride + offs, mask=valid, other=0.0).to(tl.float32)
    mu = tl.sum(x, axis=0) / n_cols
    xc = tl.where(valid, x - mu, 0.0)
    sigma2 = tl.sum(xc * xc, axis=0) / n_cols
    inv = tl.rsqrt(sigma2 + eps)
    gamma = tl.load(w_ptr + offs, mask=valid, other=1.0)
    beta = tl.load(b_ptr + offs, mask=valid, other=0.0)
    y = (xc * inv) * gamma + beta
    tl.store(out_ptr + r * out_row_stride + offs, y, mask=valid)
""",
    ),
    Blind(
        name="r7_layernorm_var_over_block",
        exercise_id="triton_layernorm",
        half="held2",
        correct=False,
        cause="The variance divides by BLOCK_SIZE, the padded power-of-two width, instead of n_cols, so when n_cols is not a power of two the variance is too small and the outputs too large.",
        source=H
        + """@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, eps,
                     BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    diff = tl.where(mask, x - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / BLOCK_SIZE
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(out_ptr + row * out_row_stride + cols, diff * rstd * w + b, mask=mask)
""",
        hints=("n_cols",),
    ),
    Blind(
        name="r7_layernorm_var_not_reduced",
        exercise_id="triton_layernorm",
        half="held2",
        correct=False,
        cause="The variance is not reduced over the row: var = diff * diff is one value per column, so each element is divided by its own |x - mean| (the output is about sign(x - mean) * w + b) instead of by the row's standard deviation sqrt(sum((x - mean)^2) / n_cols + eps).",
        source=H
        + """@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, eps,
                     BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    diff = tl.where(mask, x - mean, 0.0)
    var = diff * diff
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(out_ptr + row * out_row_stride + cols, diff * rstd * w + b, mask=mask)
""",
        hints=("one number per row",),
    ),
    Blind(
        name="r7_layernorm_bias_before_scale",
        exercise_id="triton_layernorm",
        half="held2",
        correct=False,
        cause="The bias is added before the weight multiplies, (x_hat + b) * w, so b is scaled by w; layer norm's affine step is x_hat * w + b.",
        source=H
        + """@triton.jit
def layernorm_kernel(x_ptr, w_ptr, b_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, eps,
                     BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    diff = tl.where(mask, x - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / n_cols
    x_hat = diff / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(out_ptr + row * out_row_stride + cols, (x_hat + b) * w, mask=mask)
""",
        hints=("(x_hat + b) * w",),
    ),
    # ---------------------------------------------------------------- triton_matmul
    Blind(
        name="r7_matmul_dot_acc_recomputed_ptrs",
        exercise_id="triton_matmul",
        half="held2",
        correct=True,
        source=H
        + """@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  ACTIVATION: tl.constexpr):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k0 in range(0, K, BLOCK_K):
        rk = k0 + tl.arange(0, BLOCK_K)
        a_tile = tl.load(a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak,
                         mask=(rm[:, None] < M) & (rk[None, :] < K), other=0.0)
        b_tile = tl.load(b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn,
                         mask=(rk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a_tile, b_tile, acc)
    if ACTIVATION == "relu":
        acc = tl.where(acc > 0, acc, 0.0)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))
""",
    ),
    Blind(
        name="r7_matmul_acc_assigned_not_added",
        exercise_id="triton_matmul",
        half="held2",
        correct=False,
        cause="The loop assigns acc = tl.dot(a, b) instead of adding to it, so every K step overwrites the accumulator and c holds only the last BLOCK_K slice of the product whenever K > BLOCK_K.",
        source=H
        + """@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  ACTIVATION: tl.constexpr):
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
        acc = tl.dot(a, b)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    if ACTIVATION == "relu":
        acc = tl.maximum(acc, 0.0)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))
""",
        hints=("never reach the accumulator",),
    ),
    Blind(
        name="r7_matmul_a_strides_swapped",
        exercise_id="triton_matmul",
        half="held2",
        correct=False,
        cause="a's tile is addressed with its strides swapped, offs_m * stride_ak + offs_k * stride_am, so it reads a's transpose (a[k, m]) instead of a[m, k] (and past a's end when M and K differ).",
        source=H
        + """@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  ACTIVATION: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_ak + offs_k[None, :] * stride_am
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < K - k) & (offs_n[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
        a_ptrs += BLOCK_K * stride_am
        b_ptrs += BLOCK_K * stride_bk
    if ACTIVATION == "relu":
        acc = tl.maximum(acc, 0.0)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))
""",
        hints=("strides are swapped",),
    ),
    Blind(
        name="r7_matmul_k_mask_ignores_step",
        exercise_id="triton_matmul",
        half="held2",
        correct=False,
        cause="The K mask is offs_k < K, but offs_k counts from the current step's start (the pointers move by BLOCK_K), so it is always true once K >= BLOCK_K: at the last, partial step the lanes past K load values beyond a's rows and b's columns into the dot product; the mask must be offs_k < K - k.",
        source=H
        + """@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                  ACTIVATION: tl.constexpr):
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
        name="r7_attention_exp2_full_key_loop",
        exercise_id="triton_flash_attention",
        half="held2",
        correct=True,
        source=H
        + """@triton.jit
def attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, seq_len, stride_q, stride_k, stride_v, stride_o,
                     sm_scale, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                     BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    qi = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + qi[:, None] * stride_q + d[None, :], mask=qi[:, None] < seq_len, other=0.0)
    qk_scale = sm_scale * 1.4426950408889634  # work in base 2: exp(x) = exp2(x * log2(e))
    m_i = tl.zeros((BLOCK_M,), dtype=tl.float32) - float("inf")
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    for n0 in range(0, seq_len, BLOCK_N):
        kj = n0 + tl.arange(0, BLOCK_N)
        kv_ok = kj[:, None] < seq_len
        k = tl.load(k_ptr + kj[:, None] * stride_k + d[None, :], mask=kv_ok, other=0.0)
        v = tl.load(v_ptr + kj[:, None] * stride_v + d[None, :], mask=kv_ok, other=0.0)
        s = tl.dot(q, tl.trans(k)) * qk_scale
        allowed = kj[None, :] < seq_len
        if CAUSAL:
            allowed = allowed & (kj[None, :] <= qi[:, None])
        s = tl.where(allowed, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp2(m_i - m_new)
        p = tl.exp2(s - m_new[:, None])
        l_i = alpha * l_i + tl.sum(p, axis=1)
        acc = alpha[:, None] * acc + tl.dot(p.to(tl.float16), v)
        m_i = m_new
    tl.store(o_ptr + qi[:, None] * stride_o + d[None, :], acc / l_i[:, None],
             mask=qi[:, None] < seq_len)
""",
    ),
    Blind(
        name="r7_attention_causal_mask_reversed",
        exercise_id="triton_flash_attention",
        half="held2",
        correct=False,
        cause="The causal mask keeps key >= query (offs_n >= offs_m) instead of key <= query, so each query attends to itself and the keys after it, the future, instead of the past (and a key block lying wholly before a query is fully masked, which makes that row NaN).",
        source=H
        + """@triton.jit
def attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, seq_len, stride_q, stride_k, stride_v, stride_o,
                     sm_scale, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                     BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    start_m = tl.program_id(0) * BLOCK_M
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + offs_m[:, None] * stride_q + offs_d[None, :],
                mask=offs_m[:, None] < seq_len, other=0.0)
    m_i = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    for start_n in range(0, seq_len, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k = tl.load(k_ptr + offs_n[:, None] * stride_k + offs_d[None, :],
                    mask=offs_n[:, None] < seq_len, other=0.0)
        v = tl.load(v_ptr + offs_n[:, None] * stride_v + offs_d[None, :],
                    mask=offs_n[:, None] < seq_len, other=0.0)
        s = tl.dot(q, tl.trans(k)) * sm_scale
        keep = offs_n[None, :] < seq_len
        if CAUSAL:
            # a query may not look at an earlier key... (causal)
            keep = keep & (offs_n[None, :] >= offs_m[:, None])
        s = tl.where(keep, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
        m_i = m_new
    o = acc / l_i[:, None]
    tl.store(o_ptr + offs_m[:, None] * stride_o + offs_d[None, :], o,
             mask=offs_m[:, None] < seq_len)
""",
        hints=("the other triangle",),
    ),
    Blind(
        name="r7_attention_scaled_twice",
        exercise_id="triton_flash_attention",
        half="held2",
        correct=False,
        cause="sm_scale is applied twice, once to q as it is loaded and again to q @ k^T, so the scores are multiplied by 1/head_dim instead of 1/sqrt(head_dim) and the softmax is too flat.",
        source=H
        + """@triton.jit
def attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, seq_len, stride_q, stride_k, stride_v, stride_o,
                     sm_scale, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                     BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    start_m = tl.program_id(0) * BLOCK_M
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + offs_m[:, None] * stride_q + offs_d[None, :],
                mask=offs_m[:, None] < seq_len, other=0.0)
    q = (q * sm_scale).to(tl.float16)  # pre-scale the queries once
    m_i = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    end = tl.minimum(start_m + BLOCK_M, seq_len) if CAUSAL else seq_len
    for start_n in range(0, end, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k = tl.load(k_ptr + offs_n[:, None] * stride_k + offs_d[None, :],
                    mask=offs_n[:, None] < seq_len, other=0.0)
        v = tl.load(v_ptr + offs_n[:, None] * stride_v + offs_d[None, :],
                    mask=offs_n[:, None] < seq_len, other=0.0)
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
    tl.store(o_ptr + offs_m[:, None] * stride_o + offs_d[None, :], o,
             mask=offs_m[:, None] < seq_len)
""",
        hints=("not 1/HEAD_DIM",),
    ),
    Blind(
        name="r7_attention_alpha_scales_new_block",
        exercise_id="triton_flash_attention",
        half="held2",
        correct=False,
        cause="alpha multiplies the new block's p @ v as well as the old accumulator, acc = (acc + p @ v) * alpha, while p is already relative to the new maximum: on the first key block alpha is exp(-inf) = 0, which wipes that block out, and later blocks are scaled down too; only the old acc takes alpha.",
        source=H
        + """@triton.jit
def attention_kernel(q_ptr, k_ptr, v_ptr, o_ptr, seq_len, stride_q, stride_k, stride_v, stride_o,
                     sm_scale, HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr,
                     BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    start_m = tl.program_id(0) * BLOCK_M
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + offs_m[:, None] * stride_q + offs_d[None, :],
                mask=offs_m[:, None] < seq_len, other=0.0)
    m_i = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    end = tl.minimum(start_m + BLOCK_M, seq_len) if CAUSAL else seq_len
    for start_n in range(0, end, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        k = tl.load(k_ptr + offs_n[:, None] * stride_k + offs_d[None, :],
                    mask=offs_n[:, None] < seq_len, other=0.0)
        v = tl.load(v_ptr + offs_n[:, None] * stride_v + offs_d[None, :],
                    mask=offs_n[:, None] < seq_len, other=0.0)
        s = tl.dot(q, tl.trans(k)) * sm_scale
        keep = offs_n[None, :] < seq_len
        if CAUSAL:
            keep = keep & (offs_m[:, None] >= offs_n[None, :])
        s = tl.where(keep, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = (acc + tl.dot(p.to(tl.float16), v)) * alpha[:, None]
        m_i = m_new
    o = acc / l_i[:, None]
    tl.store(o_ptr + offs_m[:, None] * stride_o + offs_d[None, :], o,
             mask=offs_m[:, None] < seq_len)
""",
        hints=("Rescale the old acc first",),
    ),
    # ---------------------------------------------------------------- triton_cross_entropy
    Blind(
        name="r7_ce_target_row_gathered",
        exercise_id="triton_cross_entropy",
        half="held2",
        correct=True,
        source=H
        + """@triton.jit
def cross_entropy_kernel(h_ptr, w_ptr, target_ptr, loss_ptr, n_rows, vocab, stride_h, stride_w,
                         HIDDEN: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_V: tl.constexpr):
    r = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    k = tl.arange(0, HIDDEN)
    live = r < n_rows
    h = tl.load(h_ptr + r[:, None] * stride_h + k[None, :], mask=live[:, None], other=0.0)
    t = tl.load(target_ptr + r, mask=live, other=0)
    # the target's logit directly: the row w[t] dotted with h, in float32
    w_t = tl.load(w_ptr + t[:, None] * stride_w + k[None, :], mask=live[:, None], other=0.0)
    target_logit = tl.sum(h.to(tl.float32) * w_t.to(tl.float32), axis=1)
    run_max = tl.full((BLOCK_M,), float("-inf"), dtype=tl.float32)
    run_sum = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for v0 in range(0, vocab, BLOCK_V):
        vcols = v0 + tl.arange(0, BLOCK_V)
        wb = tl.load(w_ptr + vcols[:, None] * stride_w + k[None, :],
                     mask=vcols[:, None] < vocab, other=0.0)
        z = tl.dot(h, tl.trans(wb))
        z = tl.where(vcols[None, :] < vocab, z, float("-inf"))
        new_max = tl.maximum(run_max, tl.max(z, axis=1))
        run_sum = run_sum * tl.exp(run_max - new_max) + tl.sum(tl.exp(z - new_max[:, None]), axis=1)
        run_max = new_max
    lse = run_max + tl.log(run_sum)
    tl.store(loss_ptr + r, lse - target_logit, mask=live)
""",
    ),
    Blind(
        name="r7_ce_picks_row_index_column",
        exercise_id="triton_cross_entropy",
        half="held2",
        correct=False,
        cause="The target's logit is picked where the column equals the row index (cols == rows) instead of the row's target (cols == target), so each row subtracts the logit of column i, not of its target.",
        source=H
        + """@triton.jit
def cross_entropy_kernel(h_ptr, w_ptr, target_ptr, loss_ptr, n_rows, vocab, stride_h, stride_w,
                         HIDDEN: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_V: tl.constexpr):
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
        w = tl.load(w_ptr + cols[:, None] * stride_w + dims[None, :],
                    mask=cols[:, None] < vocab, other=0.0)
        logits = tl.dot(h, tl.trans(w))
        logits = tl.where(cols[None, :] < vocab, logits, -float("inf"))
        m_new = tl.maximum(m, tl.max(logits, axis=1))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(logits - m_new[:, None]), axis=1)
        m = m_new
        is_target = cols[None, :] == rows[:, None]
        picked += tl.sum(tl.where(is_target, logits, 0.0), axis=1)
    tl.store(loss_ptr + rows, m + tl.log(s) - picked, mask=row_ok)
""",
        hints=("the row's own index",),
    ),
    Blind(
        name="r7_ce_w_rows_hidden_apart",
        exercise_id="triton_cross_entropy",
        half="held2",
        correct=False,
        cause="w's rows are addressed as cols * HIDDEN, which assumes w is contiguous; when w's rows are padded they start stride_w elements apart, so the logits use the wrong weights.",
        source=H
        + """@triton.jit
def cross_entropy_kernel(h_ptr, w_ptr, target_ptr, loss_ptr, n_rows, vocab, stride_h, stride_w,
                         HIDDEN: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_V: tl.constexpr):
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
        w = tl.load(w_ptr + cols[:, None] * HIDDEN + dims[None, :],
                    mask=cols[:, None] < vocab, other=0.0)
        logits = tl.dot(h, tl.trans(w))
        logits = tl.where(cols[None, :] < vocab, logits, -float("inf"))
        m_new = tl.maximum(m, tl.max(logits, axis=1))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(logits - m_new[:, None]), axis=1)
        m = m_new
        picked += tl.sum(tl.where(cols[None, :] == target[:, None], logits, 0.0), axis=1)
    tl.store(loss_ptr + rows, m + tl.log(s) - picked, mask=row_ok)
""",
        hints=("row stride",),
    ),
    Blind(
        name="r7_ce_divides_by_n_rows",
        exercise_id="triton_cross_entropy",
        half="held2",
        correct=False,
        cause="The kernel divides each row's loss by n_rows (as if taking the mean), but loss holds one unreduced cross-entropy per row, m + log(s) - target_logit.",
        source=H
        + """@triton.jit
def cross_entropy_kernel(h_ptr, w_ptr, target_ptr, loss_ptr, n_rows, vocab, stride_h, stride_w,
                         HIDDEN: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_V: tl.constexpr):
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
        w = tl.load(w_ptr + cols[:, None] * stride_w + dims[None, :],
                    mask=cols[:, None] < vocab, other=0.0)
        logits = tl.dot(h, tl.trans(w))
        logits = tl.where(cols[None, :] < vocab, logits, -float("inf"))
        m_new = tl.maximum(m, tl.max(logits, axis=1))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(logits - m_new[:, None]), axis=1)
        m = m_new
        picked += tl.sum(tl.where(cols[None, :] == target[:, None], logits, 0.0), axis=1)
    # cross-entropy is averaged over the batch
    loss = (m + tl.log(s) - picked) / n_rows
    tl.store(loss_ptr + rows, loss, mask=row_ok)
""",
        hints=("divided by n_rows",),
    ),
    # ---------------------------------------------------------------- triton_cross_entropy_backward
    Blind(
        name="r7_ceb_where_subtract_dloss",
        exercise_id="triton_cross_entropy_backward",
        half="held2",
        correct=True,
        source=H
        + """@triton.jit
def cross_entropy_backward_kernel(logits_ptr, target_ptr, lse_ptr, dloss_ptr, dlogits_ptr, vocab,
                                  stride_logits, stride_dlogits, BLOCK_V: tl.constexpr):
    i = tl.program_id(0)
    g = tl.load(dloss_ptr + i)
    log_z = tl.load(lse_ptr + i)
    tgt = tl.load(target_ptr + i)
    src = logits_ptr + i * stride_logits
    dst = dlogits_ptr + i * stride_dlogits
    for j0 in tl.range(0, vocab, BLOCK_V):
        j = j0 + tl.arange(0, BLOCK_V)
        inside = j < vocab
        z = tl.load(src + j, mask=inside, other=-float("inf"))
        d = tl.exp(z - log_z) * g
        d = tl.where(j == tgt, d - g, d)
        tl.store(dst + j, d, mask=inside)
""",
    ),
    Blind(
        name="r7_ceb_onehot_local_columns",
        exercise_id="triton_cross_entropy_backward",
        half="held2",
        correct=False,
        cause="The one-hot compares the target with tl.arange(0, BLOCK_V), the column inside the block, instead of the global column start + arange, so the -1 lands in every block at target's position within the block (and targets past the first block are missed) when vocab > BLOCK_V.",
        source=H
        + """@triton.jit
def cross_entropy_backward_kernel(logits_ptr, target_ptr, lse_ptr, dloss_ptr, dlogits_ptr, vocab,
                                  stride_logits, stride_dlogits, BLOCK_V: tl.constexpr):
    row = tl.program_id(0)
    target = tl.load(target_ptr + row)
    lse = tl.load(lse_ptr + row)
    dloss = tl.load(dloss_ptr + row)
    lanes = tl.arange(0, BLOCK_V)
    for start in range(0, vocab, BLOCK_V):
        cols = start + lanes
        mask = cols < vocab
        x = tl.load(logits_ptr + row * stride_logits + cols, mask=mask, other=0.0)
        p = tl.exp(x - lse)
        onehot = tl.where(lanes == target, 1.0, 0.0)
        tl.store(dlogits_ptr + row * stride_dlogits + cols, (p - onehot) * dloss, mask=mask)
""",
        hints=("position inside the block",),
    ),
    Blind(
        name="r7_ceb_blockwise_softmax_ignores_lse",
        exercise_id="triton_cross_entropy_backward",
        half="held2",
        correct=False,
        cause="The softmax is recomputed per block, exp(x - max(block)) / sum(exp(x - max(block))), normalised over the current BLOCK_V columns only, instead of exp(x - lse) with the saved log-sum-exp of the whole row, so it is wrong whenever vocab > BLOCK_V.",
        source=H
        + """@triton.jit
def cross_entropy_backward_kernel(logits_ptr, target_ptr, lse_ptr, dloss_ptr, dlogits_ptr, vocab,
                                  stride_logits, stride_dlogits, BLOCK_V: tl.constexpr):
    row = tl.program_id(0)
    target = tl.load(target_ptr + row)
    dloss = tl.load(dloss_ptr + row)
    for start in range(0, vocab, BLOCK_V):
        cols = start + tl.arange(0, BLOCK_V)
        mask = cols < vocab
        x = tl.load(logits_ptr + row * stride_logits + cols, mask=mask, other=-float("inf"))
        e = tl.exp(x - tl.max(x, axis=0))
        p = e / tl.sum(e, axis=0)
        grad = (p - tl.where(cols == target, 1.0, 0.0)) * dloss
        tl.store(dlogits_ptr + row * stride_dlogits + cols, grad, mask=mask)
""",
        hints=("normalised by a sum of its own",),
    ),
    Blind(
        name="r7_ceb_store_unmasked",
        exercise_id="triton_cross_entropy_backward",
        half="held2",
        correct=False,
        cause="The loads are masked but the store is not, so when vocab is not a multiple of BLOCK_V the last block's padded lanes write past the end of each dlogits row (into the next row's gap and past the end of dlogits on the last row).",
        source=H
        + """@triton.jit
def cross_entropy_backward_kernel(logits_ptr, target_ptr, lse_ptr, dloss_ptr, dlogits_ptr, vocab,
                                  stride_logits, stride_dlogits, BLOCK_V: tl.constexpr):
    row = tl.program_id(0)
    target = tl.load(target_ptr + row)
    lse = tl.load(lse_ptr + row)
    dloss = tl.load(dloss_ptr + row)
    for start in range(0, vocab, BLOCK_V):
        cols = start + tl.arange(0, BLOCK_V)
        x = tl.load(logits_ptr + row * stride_logits + cols, mask=cols < vocab, other=0.0)
        grad = (tl.exp(x - lse) - tl.where(cols == target, 1.0, 0.0)) * dloss
        tl.store(dlogits_ptr + row * stride_dlogits + cols, grad)
""",
        hints=("this store has no mask",),
    ),
]
