"""Held-out answers to lab 12 (Triton), fourth blind round: every answer is in half "held2".

Written blind on 2026-11-28 by a helper, from the lab as a learner sees it
(``labs/12_triton_lab.ipynb``), the chapter (``notebooks/12_triton.ipynb``), the code cells of the
reference solutions (``solutions/12_triton_lab.ipynb``) and the public helpers (``gpu_utils/*.py``)
only: neither the checker (``gpu_utils/exercises/``) nor its tests nor any other corpus of answers
was read or run. The mistakes avoid those already listed for this lab (cause sentences of the
earlier rounds).

Verified outside the repository (a scratch script under ``/tmp/``) in simulator mode
(``GPU_COURSE_MODE=simulator``, Triton's interpreter, with the course's bounds check on every
access): every cell runs; each kernel was launched like the reference (grids with
``triton.cdiv``, outputs filled with NaN) on small shapes, sizes 1 to 3, sizes that are not
multiples of the block, several blocks, strided views and very large / very negative rows, and
compared with the reference solution's kernel and with torch. Every correct answer matched on all
of them (and compiles for sm_80 with ``gpu_utils.triton_ir``); every wrong answer gave a wrong
value, a NaN left in the output, or an access outside a tensor on at least one of them.
"""

from heldout import Blind

H = "held2"

_HEAD = """
import torch
import triton
import triton.language as tl
"""

ANSWERS = [
    # ------------------------------------------------------------------ triton_vector_add
    Blind(
        name="add_program_id_int64",
        exercise_id="triton_vector_add",
        half=H,
        correct=True,
        source=_HEAD
        + """
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    block_start = tl.program_id(0).to(tl.int64) * BLOCK_SIZE  # int64: safe for huge tensors
    lanes = tl.arange(0, BLOCK_SIZE)
    idx = block_start + lanes
    inside = idx < n_elements
    a = tl.load(x_ptr + idx, mask=inside, other=0.0)
    b = tl.load(y_ptr + idx, mask=inside, other=0.0)
    tl.store(out_ptr + idx, b + a, mask=inside)
""",
    ),
    Blind(
        name="add_lanes_start_at_one",
        exercise_id="triton_vector_add",
        half=H,
        correct=False,
        cause="The lanes are numbered tl.arange(1, BLOCK_SIZE + 1) instead of tl.arange(0, "
        "BLOCK_SIZE), so every offset is one too far and out[0] is never written.",
        source=_HEAD
        + """
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    offsets = pid * BLOCK_SIZE + tl.arange(1, BLOCK_SIZE + 1)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)
""",
    ),
    Blind(
        name="add_mask_stops_one_early",
        exercise_id="triton_vector_add",
        half=H,
        correct=False,
        cause="The mask is offsets < n_elements - 1 (as if n_elements were the last index), so "
        "the last element of out is never written.",
        source=_HEAD
        + """
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    offsets = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    last = n_elements - 1
    mask = offsets < last
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)
""",
    ),
    Blind(
        name="add_one_block_per_two_programs",
        exercise_id="triton_vector_add",
        half=H,
        correct=False,
        cause="Each program starts at pid * BLOCK_SIZE // 2 (half a block per program) while it "
        "covers BLOCK_SIZE elements, so the programs overlap and the second half of the tensor "
        "is never written.",
        source=_HEAD
        + """
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    start = pid * (BLOCK_SIZE // 2)
    offsets = start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    tl.store(out_ptr + offsets, x + y, mask=mask)
""",
    ),
    # ------------------------------------------------------------------ triton_outer_add
    Blind(
        name="outer_expand_dims_helper",
        exercise_id="triton_outer_add",
        half=H,
        correct=True,
        source=_HEAD
        + """
@triton.jit
def _tile(offs_m, offs_n, M, N):
    return (tl.expand_dims(offs_m, 1) < M) & (tl.expand_dims(offs_n, 0) < N)


@triton.jit
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
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    xs = tl.load(x_ptr + rows, mask=rows < M, other=0.0)
    ys = tl.load(y_ptr + cols, mask=cols < N, other=0.0)
    tile = tl.expand_dims(xs, 1) + tl.expand_dims(ys, 0)
    where = out_ptr + tl.expand_dims(rows * out_row_stride, 1) + tl.expand_dims(cols, 0)
    tl.store(where, tile, mask=_tile(rows, cols, M, N))
""",
    ),
    Blind(
        name="outer_cols_stepped_by_block_m",
        exercise_id="triton_outer_add",
        half=H,
        correct=False,
        cause="offs_n steps pid_n by BLOCK_M instead of BLOCK_N, so when the tile is not square "
        "the column tiles overlap or leave gaps and some columns of out are never written.",
        source=_HEAD
        + """
@triton.jit
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
    offs_n = pid_n * BLOCK_M + tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + offs_m, mask=offs_m < M)
    y = tl.load(y_ptr + offs_n, mask=offs_n < N)
    out_ptrs = out_ptr + offs_m[:, None] * out_row_stride + offs_n[None, :]
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(out_ptrs, x[:, None] + y[None, :], mask=mask)
""",
    ),
    Blind(
        name="outer_loads_unmasked",
        exercise_id="triton_outer_add",
        half=H,
        correct=False,
        cause="x and y are loaded without masks (only the store is masked), so when M or N is "
        "not a multiple of the block the edge tiles read past the end of x and y.",
        source=_HEAD
        + """
@triton.jit
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
    x = tl.load(x_ptr + offs_m)
    y = tl.load(y_ptr + offs_n)
    out_ptrs = out_ptr + offs_m[:, None] * out_row_stride + offs_n[None, :]
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(out_ptrs, x[:, None] + y[None, :], mask=mask)
""",
    ),
    Blind(
        name="outer_stride_on_columns",
        exercise_id="triton_outer_add",
        half=H,
        correct=False,
        cause="The row stride multiplies the column offsets (offs_m + offs_n * out_row_stride) "
        "instead of the row offsets, so x[i] + y[j] is stored at out[j, i], column-major, "
        "and out of bounds when M and N differ.",
        source=_HEAD
        + """
@triton.jit
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
    out_ptrs = out_ptr + offs_m[:, None] + offs_n[None, :] * out_row_stride
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(out_ptrs, x[:, None] + y[None, :], mask=mask)
""",
    ),
    # ------------------------------------------------------------------ triton_row_sum
    Blind(
        name="row_sum_cdiv_block_count",
        exercise_id="triton_row_sum",
        half=H,
        correct=True,
        source=_HEAD
        + """
@triton.jit
def row_sum_kernel(x_ptr, out_ptr, x_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(0)
    base = x_ptr + pid.to(tl.int64) * x_row_stride
    lane = tl.arange(0, BLOCK_SIZE)
    partial = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    n_blocks = tl.cdiv(n_cols, BLOCK_SIZE)
    for b in range(n_blocks):
        idx = b * BLOCK_SIZE + lane
        vals = tl.load(base + idx, mask=idx < n_cols)
        partial += tl.where(idx < n_cols, vals.to(tl.float32), 0.0)
    total = tl.sum(partial, axis=0)
    tl.store(out_ptr + pid, total)
""",
    ),
    Blind(
        name="row_sum_float16_accumulator",
        exercise_id="triton_row_sum",
        half=H,
        correct=False,
        cause="The accumulator is float16 (tl.zeros(..., dtype=tl.float16)), so the float16 "
        "case's long rows are summed in float16 and lose digits; accumulate in float32.",
        source=_HEAD
        + """
@triton.jit
def row_sum_kernel(x_ptr, out_ptr, x_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float16)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_ptr + row * x_row_stride + cols, mask=cols < n_cols, other=0.0)
        acc += x.to(tl.float16)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))
""",
    ),
    Blind(
        name="row_sum_other_minus_inf",
        exercise_id="triton_row_sum",
        half=H,
        correct=False,
        cause="The masked lanes are loaded as -inf (the softmax's padding) instead of 0.0, so "
        "whenever n_cols is not a multiple of BLOCK_SIZE the last block adds -inf and the sum "
        "is -inf.",
        source=_HEAD
        + """
@triton.jit
def row_sum_kernel(x_ptr, out_ptr, x_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_ptr + row * x_row_stride + cols, mask=cols < n_cols, other=-float("inf"))
        acc += x.to(tl.float32)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))
""",
    ),
    Blind(
        name="row_sum_stores_mean",
        exercise_id="triton_row_sum",
        half=H,
        correct=False,
        cause="The kernel divides the total by n_cols and stores the row's mean, but out[r] is "
        "the row's sum.",
        source=_HEAD
        + """
@triton.jit
def row_sum_kernel(x_ptr, out_ptr, x_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_ptr + row * x_row_stride + cols, mask=cols < n_cols, other=0.0)
        acc += x.to(tl.float32)
    tl.store(out_ptr + row, tl.sum(acc, axis=0) / n_cols)
""",
    ),
    # ------------------------------------------------------------------ triton_softmax
    Blind(
        name="softmax_store_exp_minus_log_sum",
        exercise_id="triton_softmax",
        half=H,
        correct=True,
        source=_HEAD
        + """
@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    r = tl.program_id(0)
    src = x_ptr + r * x_row_stride
    dst = out_ptr + r * out_row_stride
    run_max = float("-inf")
    run_sum = 0.0
    n_blocks = tl.cdiv(n_cols, BLOCK_SIZE)
    for b in range(n_blocks):
        offs = b * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        vals = tl.load(src + offs, mask=offs < n_cols, other=float("-inf")).to(tl.float32)
        new_max = tl.maximum(run_max, tl.max(vals, axis=0))
        run_sum = run_sum * tl.exp(run_max - new_max) + tl.sum(tl.exp(vals - new_max), axis=0)
        run_max = new_max
    log_sum = tl.log(run_sum)  # exp((x - m) - log(s)) = exp(x - m) / s
    for b in range(n_blocks):
        offs = b * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
        keep = offs < n_cols
        vals = tl.load(src + offs, mask=keep, other=0.0).to(tl.float32)
        tl.store(dst + offs, tl.exp((vals - run_max) - log_sum), mask=keep)
""",
    ),
    Blind(
        name="softmax_rescales_new_terms_too",
        exercise_id="triton_softmax",
        half=H,
        correct=False,
        cause="The rescale factor exp(m - m_new) multiplies the new block's terms as well, "
        "s = (s + sum(exp(x - m_new))) * exp(m - m_new), instead of the old sum only: on the "
        "first block it is exp(-inf) = 0, so s ends at 0 or too small and the outputs are inf.",
        source=_HEAD
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
        s = (s + tl.sum(tl.exp(x - m_new), axis=0)) * tl.exp(m - m_new)
        m = m_new
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(x_row + cols, mask=mask, other=-float("inf"))
        tl.store(out_row + cols, tl.exp(x - m) / s, mask=mask)
""",
    ),
    Blind(
        name="softmax_second_pass_store_unmasked",
        exercise_id="triton_softmax",
        half=H,
        correct=False,
        cause="The second pass stores the whole block without the mask cols < n_cols, so the "
        "padded lanes of the last block write zeros past the end of each row (into the next "
        "row's or the view's gap, and past the end of out on the last row).",
        source=_HEAD
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
        x = tl.load(x_row + cols, mask=cols < n_cols, other=-float("inf"))
        tl.store(out_row + cols, tl.exp(x - m) / s)
""",
    ),
    Blind(
        name="softmax_output_uses_block_max",
        exercise_id="triton_softmax",
        half=H,
        correct=False,
        cause="The second pass subtracts each block's own maximum, exp(x - max(block)) / s, "
        "instead of the row's final maximum m that s was summed against, so every block but "
        "the one holding the row's maximum is scaled up when a row spans several blocks.",
        source=_HEAD
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
        e = tl.exp(x - tl.max(x, axis=0))
        tl.store(out_row + cols, e / s, mask=mask)
""",
    ),
    Blind(
        name="softmax_out_rows_at_input_stride",
        exercise_id="triton_softmax",
        half=H,
        correct=False,
        cause="The output row is addressed with x_row_stride instead of out_row_stride, so when "
        "x is a view with gaps between rows and out is contiguous the rows are written to the "
        "wrong places (and past the end of out).",
        source=_HEAD
        + """
@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    offset = row * x_row_stride
    m = -float("inf")
    s = 0.0
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_ptr + offset + cols, mask=cols < n_cols, other=-float("inf"))
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
        m = m_new
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(x_ptr + offset + cols, mask=mask, other=-float("inf"))
        tl.store(out_ptr + offset + cols, tl.exp(x - m) / s, mask=mask)
""",
    ),
    # ------------------------------------------------------------------ triton_layernorm
    Blind(
        name="layernorm_scale_folded_into_weight",
        exercise_id="triton_layernorm",
        half=H,
        correct=True,
        source=_HEAD
        + """
@triton.jit
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
    v = tl.load(x_ptr + r * x_row_stride + offs, mask=valid).to(tl.float32)
    v = tl.where(valid, v, 0.0)
    mu = tl.sum(v, axis=0) / n_cols
    centred = tl.where(valid, v - mu, 0.0)
    sigma = tl.sqrt(tl.sum(centred * centred, axis=0) / n_cols + eps)
    gamma = tl.load(w_ptr + offs, mask=valid, other=0.0)
    beta = tl.load(b_ptr + offs, mask=valid, other=0.0)
    scale = gamma / sigma  # fold 1 / sigma into the weight
    tl.store(out_ptr + r * out_row_stride + offs, centred * scale + beta, mask=valid)
""",
    ),
    Blind(
        name="layernorm_store_unmasked",
        exercise_id="triton_layernorm",
        half=H,
        correct=False,
        cause="The result is stored without the mask cols < n_cols, so when n_cols is not a "
        "power of two the padded lanes write past the end of each output row (past out's end "
        "on the last row).",
        source=_HEAD
        + """
@triton.jit
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
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0)
    tl.store(out_ptr + row * out_row_stride + cols, diff * rstd * w + b)
""",
    ),
    Blind(
        name="layernorm_affine_before_stats",
        exercise_id="triton_layernorm",
        half=H,
        correct=False,
        cause="w and b are applied to x before the mean and variance are taken, so the row "
        "x * w + b is normalised and stored; the affine step comes after normalising, "
        "(x - mean) / sqrt(var + eps) * w + b.",
        source=_HEAD
        + """
@triton.jit
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
    w = tl.load(w_ptr + cols, mask=mask, other=0.0)
    b = tl.load(b_ptr + cols, mask=mask, other=0.0)
    y = x * w + b
    mean = tl.sum(y, axis=0) / n_cols
    diff = tl.where(mask, y - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / n_cols
    tl.store(out_ptr + row * out_row_stride + cols, diff / tl.sqrt(var + eps), mask=mask)
""",
    ),
    Blind(
        name="layernorm_eps_hardcoded",
        exercise_id="triton_layernorm",
        half=H,
        correct=False,
        cause="The kernel uses a hard-coded 1e-5 instead of its eps argument, so it is only "
        "right when the caller passes eps = 1e-5 (visible on rows of small variance).",
        source=_HEAD
        + """
@triton.jit
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
    rstd = 1.0 / tl.sqrt(var + 1e-5)  # the usual epsilon
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(out_ptr + row * out_row_stride + cols, diff * rstd * w + b, mask=mask)
""",
    ),
    Blind(
        name="layernorm_var_is_second_moment",
        exercise_id="triton_layernorm",
        half=H,
        correct=False,
        cause="The variance is taken as sum(x^2) / n_cols, the raw second moment, without "
        "centring (neither (x - mean)^2 nor - mean^2), so it is too large for any row whose "
        "mean is not 0.",
        source=_HEAD
        + """
@triton.jit
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
    var = tl.sum(x * x, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(out_ptr + row * out_row_stride + cols, (x - mean) * rstd * w + b, mask=mask)
""",
    ),
]
