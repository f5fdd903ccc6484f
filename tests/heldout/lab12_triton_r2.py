"""Held-out answers to lab 12 (Triton), second held half (``half="held2"``).

Written blind on 2026-11-28 by a helper, from the lab text (labs/12_triton_lab.ipynb) and the
reference solutions (solutions/12_triton_lab.ipynb) only, without the checker, its tests or the
earlier corpus's sources in view (only the earlier corpus's list of mistakes, so as not to repeat
them). Each cell is what a learner could write for the lab's kernel cell; the check cell submits
the kernel. Wrong answers carry their real mistake in ``cause``. See tests/heldout/__init__.py."""

from heldout import Blind

PRE = "import torch\nimport triton\nimport triton.language as tl\n\n"

ADD = "triton_vector_add"
OUTER = "triton_outer_add"
ROWSUM = "triton_row_sum"
SOFTMAX = "triton_softmax"
LN = "triton_layernorm"
MM = "triton_matmul"
ATTN = "triton_flash_attention"
CE = "triton_cross_entropy"

ANSWERS = [
    # ---------------------------------------------------------------- vector add
    Blind(
        name="add_pointer_shift",
        exercise_id=ADD,
        half="held2",
        correct=True,
        source=PRE
        + """
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    start = tl.program_id(0) * BLOCK_SIZE
    x_ptr += start
    y_ptr += start
    out_ptr += start
    lanes = tl.arange(0, BLOCK_SIZE)
    live = lanes < n_elements - start
    total = tl.load(x_ptr + lanes, mask=live, other=0.0) + tl.load(y_ptr + lanes, mask=live, other=0.0)
    tl.store(out_ptr + lanes, total, mask=live)
""",
    ),
    Blind(
        name="add_loads_x_twice",
        exercise_id=ADD,
        half="held2",
        correct=False,
        cause="The second load reads x_ptr again instead of y_ptr, so the kernel stores x + x and never reads y.",
        source=PRE
        + """
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(x_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)
""",
    ),
    Blind(
        name="add_mask_against_block_size",
        exercise_id=ADD,
        half="held2",
        correct=False,
        cause="The mask compares the global offsets with BLOCK_SIZE instead of n_elements, so only the first block is loaded and stored and every later program does nothing.",
        source=PRE
        + """
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offsets < BLOCK_SIZE
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)
""",
    ),
    # ---------------------------------------------------------------- outer add
    Blind(
        name="outer_add_2d_loads",
        exercise_id=OUTER,
        half="held2",
        correct=True,
        source=PRE
        + """
@triton.jit
def outer_add_kernel(
    x_ptr, y_ptr, out_ptr, M, N, out_row_stride, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr
):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)[:, None]
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]
    inside = (rows < M) & (cols < N)
    xs = tl.load(x_ptr + rows + cols * 0, mask=inside, other=0.0)
    ys = tl.load(y_ptr + cols + rows * 0, mask=inside, other=0.0)
    tl.store(out_ptr + rows * out_row_stride + cols, xs + ys, mask=inside)
""",
    ),
    Blind(
        name="outer_add_rows_by_n",
        exercise_id=OUTER,
        half="held2",
        correct=False,
        cause="The store steps between rows by N (out's row length) instead of out_row_stride, which is wrong when out is a view whose rows are further apart than N.",
        source=PRE
        + """
@triton.jit
def outer_add_kernel(
    x_ptr, y_ptr, out_ptr, M, N, out_row_stride, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + offs_m, mask=offs_m < M)
    y = tl.load(y_ptr + offs_n, mask=offs_n < N)
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(out_ptr + offs_m[:, None] * N + offs_n[None, :], x[:, None] + y[None, :], mask=mask)
""",
    ),
    Blind(
        name="outer_add_y_masked_by_m",
        exercise_id=OUTER,
        half="held2",
        correct=False,
        cause="y is loaded with the mask offs_n < M (x's length) instead of offs_n < N, so when N > M the columns past M get no y (and when N < M the load reads past y's end).",
        source=PRE
        + """
@triton.jit
def outer_add_kernel(
    x_ptr, y_ptr, out_ptr, M, N, out_row_stride, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + offs_m, mask=offs_m < M, other=0.0)
    y = tl.load(y_ptr + offs_n, mask=offs_n < M, other=0.0)
    out_ptrs = out_ptr + offs_m[:, None] * out_row_stride + offs_n[None, :]
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(out_ptrs, x[:, None] + y[None, :], mask=mask)
""",
    ),
    Blind(
        name="outer_add_store_masks_rows_only",
        exercise_id=OUTER,
        half="held2",
        correct=False,
        cause="The store is masked on the rows only, so the lanes of the last column tile past N write beyond the end of each row (into the next row or past out's end).",
        source=PRE
        + """
@triton.jit
def outer_add_kernel(
    x_ptr, y_ptr, out_ptr, M, N, out_row_stride, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + offs_m, mask=offs_m < M, other=0.0)
    y = tl.load(y_ptr + offs_n, mask=offs_n < N, other=0.0)
    out_ptrs = out_ptr + offs_m[:, None] * out_row_stride + offs_n[None, :]
    tl.store(out_ptrs, x[:, None] + y[None, :], mask=offs_m[:, None] < M)
""",
    ),
    Blind(
        name="outer_add_sum_transposed",
        exercise_id=OUTER,
        half="held2",
        correct=False,
        cause="The tile is built as x[None, :] + y[:, None], a BLOCK_N x BLOCK_M tile with x along the columns, instead of x[:, None] + y[None, :] with x down the rows.",
        source=PRE
        + """
@triton.jit
def outer_add_kernel(
    x_ptr, y_ptr, out_ptr, M, N, out_row_stride, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + offs_m, mask=offs_m < M, other=0.0)
    y = tl.load(y_ptr + offs_n, mask=offs_n < N, other=0.0)
    out_ptrs = out_ptr + offs_m[:, None] * out_row_stride + offs_n[None, :]
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(out_ptrs, x[None, :] + y[:, None], mask=mask)
""",
    ),
    # ---------------------------------------------------------------- row sum
    Blind(
        name="row_sum_scalar_total",
        exercise_id=ROWSUM,
        half="held2",
        correct=True,
        source=PRE
        + """
@triton.jit
def row_sum_kernel(x_ptr, out_ptr, x_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row_start = x_ptr + tl.program_id(0) * x_row_stride
    total = 0.0
    for block in range(0, tl.cdiv(n_cols, BLOCK_SIZE)):
        cols = block * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        vals = tl.load(row_start + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        total += tl.sum(vals, axis=0)
    tl.store(out_ptr + tl.program_id(0), total)
""",
    ),
    Blind(
        name="row_sum_acc_reset_in_loop",
        exercise_id=ROWSUM,
        half="held2",
        correct=False,
        cause="The accumulator is created inside the loop, so it is reset to zero on every block and the stored sum holds only the last block of the row.",
        source=PRE
        + """
@triton.jit
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
    ),
    Blind(
        name="row_sum_block_index_as_offset",
        exercise_id=ROWSUM,
        half="held2",
        correct=False,
        cause="The loop counts blocks (0, 1, 2, ...) but uses the count directly as the column offset without multiplying by BLOCK_SIZE, so the blocks overlap and the columns past the first block plus a few are never summed.",
        source=PRE
        + """
@triton.jit
def row_sum_kernel(x_ptr, out_ptr, x_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * x_row_stride
    acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for b in range(0, tl.cdiv(n_cols, BLOCK_SIZE)):
        cols = b + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0)
        acc += x.to(tl.float32)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))
""",
    ),
    Blind(
        name="row_sum_forgets_row_offset",
        exercise_id=ROWSUM,
        half="held2",
        correct=False,
        cause="The loads use x_ptr + cols without the row's offset row * x_row_stride, so every program sums row 0.",
        source=PRE
        + """
@triton.jit
def row_sum_kernel(x_ptr, out_ptr, x_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_ptr + cols, mask=cols < n_cols, other=0.0)
        acc += x.to(tl.float32)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))
""",
    ),
    Blind(
        name="row_sum_out_by_row_stride",
        exercise_id=ROWSUM,
        half="held2",
        correct=False,
        cause="The result is stored at out_ptr + row * x_row_stride, the input's row stride, but out holds one number per row, so it belongs at out_ptr + row.",
        source=PRE
        + """
@triton.jit
def row_sum_kernel(x_ptr, out_ptr, x_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * x_row_stride
    acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_row + cols, mask=cols < n_cols, other=0.0)
        acc += x.to(tl.float32)
    tl.store(out_ptr + row * x_row_stride, tl.sum(acc, axis=0))
""",
    ),
    # ---------------------------------------------------------------- softmax
    Blind(
        name="softmax_exp2_two_pass",
        exercise_id=SOFTMAX,
        half="held2",
        correct=True,
        source=PRE
        + """
LOG2E = tl.constexpr(1.4426950408889634)


@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    lanes = tl.arange(0, BLOCK_SIZE)
    m = tl.full((BLOCK_SIZE,), -float("inf"), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        x = tl.load(x_ptr + row * x_row_stride + start + lanes, mask=start + lanes < n_cols, other=-float("inf"))
        m = tl.maximum(m, x)
    row_max = tl.max(m, axis=0)
    total = 0.0
    for start in range(0, n_cols, BLOCK_SIZE):
        x = tl.load(x_ptr + row * x_row_stride + start + lanes, mask=start + lanes < n_cols, other=-float("inf"))
        total += tl.sum(tl.exp2((x - row_max) * LOG2E), axis=0)
    for start in range(0, n_cols, BLOCK_SIZE):
        keep = start + lanes < n_cols
        x = tl.load(x_ptr + row * x_row_stride + start + lanes, mask=keep, other=-float("inf"))
        tl.store(out_ptr + row * out_row_stride + start + lanes, tl.exp2((x - row_max) * LOG2E) / total, mask=keep)
""",
    ),
    Blind(
        name="softmax_new_terms_old_max",
        exercise_id=SOFTMAX,
        half="held2",
        correct=False,
        hints=("every value you store is 0", "`tl.exp(x - m_new)`"),
        cause="The new block's terms are exponentiated against the old maximum, exp(x - m), instead of the new one, exp(x - m_new): on the first block m is -inf so exp(+inf) makes the sum infinite, and later blocks are summed relative to the wrong maximum.",
        source=PRE
        + """
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
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m), axis=0)
        m = m_new
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=-float("inf"))
        tl.store(out_row + cols, tl.exp(x - m) / s, mask=mask)
""",
    ),
    Blind(
        name="softmax_output_pass_no_max",
        exercise_id=SOFTMAX,
        half="held2",
        correct=False,
        hints=("times exp(m)",),
        cause="The output pass writes exp(x) / s without subtracting the maximum, but s was summed as exp(x - m), so every output is off by a factor exp(m) (and exp(x) overflows for large rows).",
        source=PRE
        + """
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
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=-float("inf"))
        tl.store(out_row + cols, tl.exp(x) / s, mask=mask)
""",
    ),
    Blind(
        name="softmax_stores_in_first_loop",
        exercise_id=SOFTMAX,
        half="held2",
        correct=False,
        hints=("blocks 0 to j only",),
        cause="The outputs are written inside the statistics loop with the running maximum and sum so far, so every block except the last is normalised with partial statistics; a second pass after the loop must write them.",
        source=PRE
        + """
@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    x_row = x_ptr + row * x_row_stride
    out_row = out_ptr + row * out_row_stride
    m = -float("inf")
    s = 0.0
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=-float("inf"))
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
        tl.store(out_row + cols, tl.exp(x - m) / s, mask=mask)
""",
    ),
    # ---------------------------------------------------------------- layer norm
    Blind(
        name="layernorm_count_from_mask",
        exercise_id=LN,
        half="held2",
        correct=True,
        source=PRE
        + """
@triton.jit
def layernorm_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, eps, BLOCK_SIZE: tl.constexpr
):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    real = cols < n_cols
    count = tl.sum(real.to(tl.float32), axis=0)
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=real, other=0.0).to(tl.float32)
    mean = tl.sum(x, axis=0) / count
    centered = tl.where(real, x - mean, 0.0)
    var = tl.sum(centered * centered, axis=0) / count
    y = centered * tl.rsqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=real, other=1.0)
    b = tl.load(b_ptr + cols, mask=real, other=0.0)
    tl.store(out_ptr + row * out_row_stride + cols, y * w + b, mask=real)
""",
    ),
    Blind(
        name="layernorm_one_pass_variance",
        exercise_id=LN,
        half="held2",
        correct=False,
        cause="The variance is computed as mean(x^2) - mean^2 in float32, which cancels catastrophically when the row's mean is large next to its spread (a row of large values gets a variance that is mostly rounding error, even negative); subtract the mean first and average (x - mean)^2.",
        source=PRE
        + """
@triton.jit
def layernorm_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, eps, BLOCK_SIZE: tl.constexpr
):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    mean_sq = tl.sum(x * x, axis=0) / n_cols
    var = mean_sq - mean * mean
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(out_ptr + row * out_row_stride + cols, (x - mean) * rstd * w + b, mask=mask)
""",
    ),
    Blind(
        name="layernorm_weight_bias_swapped",
        exercise_id=LN,
        half="held2",
        correct=False,
        hints=("times b plus w", "swapped"),
        cause="w and b are swapped in the last step: the kernel computes x_hat * b + w instead of x_hat * w + b.",
        source=PRE
        + """
@triton.jit
def layernorm_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, eps, BLOCK_SIZE: tl.constexpr
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
    tl.store(out_ptr + row * out_row_stride + cols, diff * rstd * b + w, mask=mask)
""",
    ),
    Blind(
        name="layernorm_no_eps",
        exercise_id=LN,
        half="held2",
        correct=False,
        cause="eps is never used: the kernel divides by sqrt(var) instead of sqrt(var + eps), which differs for rows of small variance and gives 0/0 = NaN for a constant row.",
        source=PRE
        + """
@triton.jit
def layernorm_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, eps, BLOCK_SIZE: tl.constexpr
):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    diff = tl.where(mask, x - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(out_ptr + row * out_row_stride + cols, diff * rstd * w + b, mask=mask)
""",
    ),
    Blind(
        name="layernorm_output_not_centred",
        exercise_id=LN,
        half="held2",
        correct=False,
        hints=("not x - mean",),
        cause="The output scales x itself, x * rstd * w + b, instead of the centred x - mean: the mean is only used for the variance and never subtracted from the output.",
        source=PRE
        + """
@triton.jit
def layernorm_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, eps, BLOCK_SIZE: tl.constexpr
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
    tl.store(out_ptr + row * out_row_stride + cols, x * rstd * w + b, mask=mask)
""",
    ),
    # ---------------------------------------------------------------- matmul
    Blind(
        name="matmul_dot_acc_argument",
        exercise_id=MM,
        half="held2",
        correct=True,
        source=PRE
        + """
@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, ACTIVATION: tl.constexpr,
):
    rm = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    rk = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        kk = k * BLOCK_K + rk
        a = tl.load(a_ptr + rm[:, None] * stride_am + kk[None, :] * stride_ak,
                    mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + kk[:, None] * stride_bk + rn[None, :] * stride_bn,
                    mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
    if ACTIVATION == "relu":
        acc = acc * (acc > 0)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, acc,
             mask=(rm[:, None] < M) & (rn[None, :] < N))
""",
    ),
    Blind(
        name="matmul_relu_as_minimum",
        exercise_id=MM,
        half="held2",
        correct=False,
        hints=("min(a @ b, 0)",),
        cause="The relu epilogue uses tl.minimum(acc, 0.0), which keeps the negative values and zeroes the positive ones; relu is tl.maximum(acc, 0.0).",
        source=PRE
        + """
@triton.jit
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
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    if ACTIVATION == "relu":
        acc = tl.minimum(acc, 0.0)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))
""",
    ),
    Blind(
        name="matmul_a_advanced_by_row_stride",
        exercise_id=MM,
        half="held2",
        correct=False,
        hints=("move down a's rows",),
        cause="a's pointers advance by BLOCK_K * stride_am (down the rows) instead of BLOCK_K * stride_ak (along K), so after the first step the kernel reads other rows of a instead of the next columns.",
        source=PRE
        + """
@triton.jit
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
        a_ptrs += BLOCK_K * stride_am
        b_ptrs += BLOCK_K * stride_bk
    if ACTIVATION == "relu":
        acc = tl.maximum(acc, 0.0)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))
""",
    ),
    Blind(
        name="matmul_k_mask_uses_block_index",
        exercise_id=MM,
        half="held2",
        correct=False,
        hints=("`offs_k[:, None] < K - k`",),
        cause="The loop counts K blocks but the K mask subtracts the block index, K - k, instead of the elements already done, K - k * BLOCK_K, so the last partial block's lanes past K are not masked and garbage enters the dot product.",
        source=PRE
        + """
@triton.jit
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
    for k in range(0, tl.cdiv(K, BLOCK_K)):
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
    ),
    Blind(
        name="matmul_n_offsets_from_pid_m",
        exercise_id=MM,
        half="held2",
        correct=False,
        hints=("tile (i, i)",),
        cause="offs_n is computed from pid_m instead of pid_n (a copy-paste of the line above), so every program in a row of the grid computes and stores the same column tile and most tiles of c are never written.",
        source=PRE
        + """
@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, ACTIVATION: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_m * BLOCK_N + tl.arange(0, BLOCK_N)
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
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))
""",
    ),
    # ---------------------------------------------------------------- attention
    Blind(
        name="attention_prescaled_q_safe_max",
        exercise_id=ATTN,
        half="held2",
        correct=True,
        source=PRE
        + """
@triton.jit
def attention_kernel(
    q_ptr, k_ptr, v_ptr, o_ptr, seq_len, stride_q, stride_k, stride_v, stride_o, sm_scale,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
):
    qi = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + qi[:, None] * stride_q + d[None, :], mask=qi[:, None] < seq_len, other=0.0)
    q = (q * sm_scale).to(tl.float16)
    row_max = tl.zeros((BLOCK_M,), dtype=tl.float32) - float("inf")
    denom = tl.zeros((BLOCK_M,), dtype=tl.float32)
    out = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    for start_n in range(0, seq_len, BLOCK_N):
        kj = start_n + tl.arange(0, BLOCK_N)
        k = tl.load(k_ptr + kj[:, None] * stride_k + d[None, :], mask=kj[:, None] < seq_len, other=0.0)
        v = tl.load(v_ptr + kj[:, None] * stride_v + d[None, :], mask=kj[:, None] < seq_len, other=0.0)
        scores = tl.dot(q, tl.trans(k))
        hidden = kj[None, :] >= seq_len
        if CAUSAL:
            hidden = hidden | (kj[None, :] > qi[:, None])
        scores = tl.where(hidden, -float("inf"), scores)
        new_max = tl.maximum(row_max, tl.max(scores, axis=1))
        safe_max = tl.where(new_max == -float("inf"), 0.0, new_max)
        p = tl.exp(scores - safe_max[:, None])
        scale = tl.exp(row_max - safe_max)
        denom = denom * scale + tl.sum(p, axis=1)
        out = out * scale[:, None] + tl.dot(p.to(tl.float16), v)
        row_max = new_max
    tl.store(o_ptr + qi[:, None] * stride_o + d[None, :], out / denom[:, None], mask=qi[:, None] < seq_len)
""",
    ),
    Blind(
        name="attention_alpha_after_max_update",
        exercise_id=ATTN,
        half="held2",
        correct=False,
        cause="m_i is overwritten with m_new before alpha = exp(m_i - m_new) is computed, so alpha is always 1 and neither l_i nor acc is rescaled when the maximum grows over the key blocks.",
        source=PRE
        + """
@triton.jit
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
    end = tl.minimum(start_m + BLOCK_M, seq_len) if CAUSAL else seq_len
    for start_n in range(0, end, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        kv_ok = offs_n[:, None] < seq_len
        k = tl.load(k_ptr + offs_n[:, None] * stride_k + offs_d[None, :], mask=kv_ok, other=0.0)
        v = tl.load(v_ptr + offs_n[:, None] * stride_v + offs_d[None, :], mask=kv_ok, other=0.0)
        s = tl.dot(q, tl.trans(k)) * sm_scale
        keep = offs_n[None, :] < seq_len
        if CAUSAL:
            keep = keep & (offs_m[:, None] >= offs_n[None, :])
        s = tl.where(keep, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        m_i = m_new
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(tl.float16), v)
    o = acc / l_i[:, None]
    tl.store(o_ptr + offs_m[:, None] * stride_o + offs_d[None, :], o, mask=offs_m[:, None] < seq_len)
""",
    ),
    Blind(
        name="attention_divides_by_scale",
        exercise_id=ATTN,
        half="held2",
        correct=False,
        hints=("divided by sm_scale",),
        cause="The scores are divided by sm_scale instead of multiplied by it: sm_scale is already 1/sqrt(head_dim), so the scores end up multiplied by sqrt(head_dim) instead of divided by it.",
        source=PRE
        + """
@triton.jit
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
    end = tl.minimum(start_m + BLOCK_M, seq_len) if CAUSAL else seq_len
    for start_n in range(0, end, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        kv_ok = offs_n[:, None] < seq_len
        k = tl.load(k_ptr + offs_n[:, None] * stride_k + offs_d[None, :], mask=kv_ok, other=0.0)
        v = tl.load(v_ptr + offs_n[:, None] * stride_v + offs_d[None, :], mask=kv_ok, other=0.0)
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
    tl.store(o_ptr + offs_m[:, None] * stride_o + offs_d[None, :], o, mask=offs_m[:, None] < seq_len)
""",
    ),
    Blind(
        name="attention_causal_mask_axes_swapped",
        exercise_id=ATTN,
        half="held2",
        correct=False,
        hints=("transposed inside each",),
        cause="The causal comparison puts the key offsets down the rows and the query offsets along the columns (offs_n[:, None] <= offs_m[None, :]), so the mask is transposed relative to the scores and does not hide key j > query i.",
        source=PRE
        + """
@triton.jit
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
    end = tl.minimum(start_m + BLOCK_M, seq_len) if CAUSAL else seq_len
    for start_n in range(0, end, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        kv_ok = offs_n[:, None] < seq_len
        k = tl.load(k_ptr + offs_n[:, None] * stride_k + offs_d[None, :], mask=kv_ok, other=0.0)
        v = tl.load(v_ptr + offs_n[:, None] * stride_v + offs_d[None, :], mask=kv_ok, other=0.0)
        s = tl.dot(q, tl.trans(k)) * sm_scale
        keep = offs_n[None, :] < seq_len
        if CAUSAL:
            keep = keep & (offs_n[:, None] <= offs_m[None, :])
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
    ),
    Blind(
        name="attention_row_sum_over_queries",
        exercise_id=ATTN,
        half="held2",
        correct=False,
        cause="The denominator l_i sums p over axis 0 (over the queries of each key) instead of axis 1 (over the keys of each query).",
        source=PRE
        + """
@triton.jit
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
    end = tl.minimum(start_m + BLOCK_M, seq_len) if CAUSAL else seq_len
    for start_n in range(0, end, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        kv_ok = offs_n[:, None] < seq_len
        k = tl.load(k_ptr + offs_n[:, None] * stride_k + offs_d[None, :], mask=kv_ok, other=0.0)
        v = tl.load(v_ptr + offs_n[:, None] * stride_v + offs_d[None, :], mask=kv_ok, other=0.0)
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
    tl.store(o_ptr + offs_m[:, None] * stride_o + offs_d[None, :], o, mask=offs_m[:, None] < seq_len)
""",
    ),
    Blind(
        name="attention_rescale_after_adding",
        exercise_id=ATTN,
        half="held2",
        correct=False,
        hints=("rescaled after the new block is added",),
        cause="acc is rescaled by alpha after p @ v is added, so the new block's contribution is scaled by alpha as well; only the old acc should be multiplied by alpha before adding p @ v.",
        source=PRE
        + """
@triton.jit
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
    end = tl.minimum(start_m + BLOCK_M, seq_len) if CAUSAL else seq_len
    for start_n in range(0, end, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        kv_ok = offs_n[:, None] < seq_len
        k = tl.load(k_ptr + offs_n[:, None] * stride_k + offs_d[None, :], mask=kv_ok, other=0.0)
        v = tl.load(v_ptr + offs_n[:, None] * stride_v + offs_d[None, :], mask=kv_ok, other=0.0)
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
        acc = acc * alpha[:, None]
        m_i = m_new
    o = acc / l_i[:, None]
    tl.store(o_ptr + offs_m[:, None] * stride_o + offs_d[None, :], o, mask=offs_m[:, None] < seq_len)
""",
    ),
    Blind(
        name="attention_key_loop_ends_at_query_block",
        exercise_id=ATTN,
        half="held2",
        correct=False,
        cause="The key loop always stops at the end of the query block, also without CAUSAL, so in the non-causal case each query block never sees the keys after its own block.",
        source=PRE
        + """
@triton.jit
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
    end = tl.minimum(start_m + BLOCK_M, seq_len)
    for start_n in range(0, end, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        kv_ok = offs_n[:, None] < seq_len
        k = tl.load(k_ptr + offs_n[:, None] * stride_k + offs_d[None, :], mask=kv_ok, other=0.0)
        v = tl.load(v_ptr + offs_n[:, None] * stride_v + offs_d[None, :], mask=kv_ok, other=0.0)
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
    tl.store(o_ptr + offs_m[:, None] * stride_o + offs_d[None, :], o, mask=offs_m[:, None] < seq_len)
""",
    ),
    # ---------------------------------------------------------------- cross-entropy
    Blind(
        name="cross_entropy_two_pass_gather",
        exercise_id=CE,
        half="held2",
        correct=True,
        source=PRE
        + """
@triton.jit
def cross_entropy_kernel(
    h_ptr, w_ptr, target_ptr, loss_ptr, n_rows, vocab, stride_h, stride_w,
    HIDDEN: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_V: tl.constexpr,
):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    dims = tl.arange(0, HIDDEN)
    h = tl.load(h_ptr + rows[:, None] * stride_h + dims[None, :], mask=rows[:, None] < n_rows, other=0.0)
    # pass 1: the row maximum of the logits
    m = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)
    for v0 in range(0, vocab, BLOCK_V):
        cols = v0 + tl.arange(0, BLOCK_V)
        w = tl.load(w_ptr + cols[:, None] * stride_w + dims[None, :], mask=cols[:, None] < vocab, other=0.0)
        logits = tl.where(cols[None, :] < vocab, tl.dot(h, tl.trans(w)), -float("inf"))
        m = tl.maximum(m, tl.max(logits, axis=1))
    # pass 2: the sum of exp(logit - max), recomputing the logits
    s = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for v0 in range(0, vocab, BLOCK_V):
        cols = v0 + tl.arange(0, BLOCK_V)
        w = tl.load(w_ptr + cols[:, None] * stride_w + dims[None, :], mask=cols[:, None] < vocab, other=0.0)
        logits = tl.where(cols[None, :] < vocab, tl.dot(h, tl.trans(w)), -float("inf"))
        s += tl.sum(tl.exp(logits - m[:, None]), axis=1)
    # the target's logit: one row of w per row of h
    target = tl.load(target_ptr + rows, mask=rows < n_rows, other=0)
    w_t = tl.load(w_ptr + target[:, None] * stride_w + dims[None, :], mask=rows[:, None] < n_rows, other=0.0)
    target_logit = tl.sum(h.to(tl.float32) * w_t.to(tl.float32), axis=1)
    tl.store(loss_ptr + rows, m + tl.log(s) - target_logit, mask=rows < n_rows)
""",
    ),
    Blind(
        name="cross_entropy_picked_overwritten",
        exercise_id=CE,
        half="held2",
        correct=False,
        cause="The target's logit is assigned (picked = ...) on every vocabulary block instead of accumulated, so it is 0 unless the target lies in the last block.",
        source=PRE
        + """
@triton.jit
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
        logits = tl.where(cols[None, :] < vocab, logits, -float("inf"))
        m_new = tl.maximum(m, tl.max(logits, axis=1))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(logits - m_new[:, None]), axis=1)
        m = m_new
        picked = tl.sum(tl.where(cols[None, :] == target[:, None], logits, 0.0), axis=1)
    tl.store(loss_ptr + rows, m + tl.log(s) - picked, mask=row_ok)
""",
    ),
    Blind(
        name="cross_entropy_divides_by_rows",
        exercise_id=CE,
        half="held2",
        correct=False,
        hints=("divided by n_rows",),
        cause="The kernel divides each row's loss by n_rows as if returning the batch mean, but loss_ptr holds one unreduced loss per row.",
        source=PRE
        + """
@triton.jit
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
        logits = tl.where(cols[None, :] < vocab, logits, -float("inf"))
        m_new = tl.maximum(m, tl.max(logits, axis=1))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(logits - m_new[:, None]), axis=1)
        m = m_new
        picked += tl.sum(tl.where(cols[None, :] == target[:, None], logits, 0.0), axis=1)
    tl.store(loss_ptr + rows, (m + tl.log(s) - picked) / n_rows, mask=row_ok)
""",
    ),
    Blind(
        name="cross_entropy_sum_without_axis",
        exercise_id=CE,
        half="held2",
        correct=False,
        hints=("`tl.sum(..., axis=1)`",),
        cause="tl.sum(tl.exp(...)) has no axis=1, so it sums the whole BLOCK_M x BLOCK_V tile and every row's running sum includes the other rows' (and padded rows') terms.",
        source=PRE
        + """
@triton.jit
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
        logits = tl.where(cols[None, :] < vocab, logits, -float("inf"))
        m_new = tl.maximum(m, tl.max(logits, axis=1))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(logits - m_new[:, None]))
        m = m_new
        picked += tl.sum(tl.where(cols[None, :] == target[:, None], logits, 0.0), axis=1)
    tl.store(loss_ptr + rows, m + tl.log(s) - picked, mask=row_ok)
""",
    ),
    Blind(
        name="cross_entropy_w_block_start_twice",
        exercise_id=CE,
        half="held2",
        correct=False,
        cause="cols already contains the block start v0, but the w pointers add v0 * stride_w again, so from the second vocabulary block on the kernel reads the wrong rows of w (and past its end).",
        source=PRE
        + """
@triton.jit
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
        w = tl.load(w_ptr + v0 * stride_w + cols[:, None] * stride_w + dims[None, :], mask=cols[:, None] < vocab, other=0.0)
        logits = tl.dot(h, tl.trans(w))
        logits = tl.where(cols[None, :] < vocab, logits, -float("inf"))
        m_new = tl.maximum(m, tl.max(logits, axis=1))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(logits - m_new[:, None]), axis=1)
        m = m_new
        picked += tl.sum(tl.where(cols[None, :] == target[:, None], logits, 0.0), axis=1)
    tl.store(loss_ptr + rows, m + tl.log(s) - picked, mask=row_ok)
""",
    ),
]
