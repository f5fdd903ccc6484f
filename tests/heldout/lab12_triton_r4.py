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
of them (and compiles for sm_80 with ``gpu_utils.triton_tools.triton_ir``); every wrong answer gave a wrong
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
        cause="Each program starts at pid * BLOCK_SIZE // 2 (half a block per program) while it"
        " covers BLOCK_SIZE elements, so the programs overlap and the second half of the "
        "tensor is never written.",
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
        cause="offs_n steps pid_n by BLOCK_M instead of BLOCK_N, so when the tile is not square"
        " the column tiles overlap or leave gaps and some columns of out are never "
        "written.",
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
        "instead of the row offsets, so x[i] + y[j] is stored at out[j, i], column-major,"
        " and out of bounds when M and N differ.",
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
        "whenever n_cols is not a multiple of BLOCK_SIZE the last block adds -inf and the"
        " sum is -inf.",
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
        cause="The rescale factor exp(m - m_new) multiplies the new block's terms as well, s = "
        "(s + sum(exp(x - m_new))) * exp(m - m_new), instead of the old sum only: on the "
        "first block it is exp(-inf) = 0, so s ends at 0 or too small and the outputs are"
        " inf.",
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
        "padded lanes of the last block write zeros past the end of each row (into the "
        "next row's or the view's gap, and past the end of out on the last row).",
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
        "instead of the row's final maximum m that s was summed against, so every block "
        "but the one holding the row's maximum is scaled up when a row spans several "
        "blocks.",
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
        cause="The output row is addressed with x_row_stride instead of out_row_stride, so when"
        " x is a view with gaps between rows and out is contiguous the rows are written "
        "to the wrong places (and past the end of out).",
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
        "power of two the padded lanes write past the end of each output row (past out's "
        "end on the last row).",
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
        cause="w and b are applied to x before the mean and variance are taken, so the row x * "
        "w + b is normalised and stored; the affine step comes after normalising, (x - "
        "mean) / sqrt(var + eps) * w + b.",
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
        hints=("the kernel's `eps` argument",),
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
        "centring (neither (x - mean)^2 nor - mean^2), so it is too large for any row "
        "whose mean is not 0.",
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
    # ------------------------------------------------------------------ triton_matmul
    Blind(
        name="matmul_reverse_k_fresh_pointers",
        exercise_id="triton_matmul",
        half=H,
        correct=True,
        source=_HEAD
        + """
@triton.jit
def _relu(t):
    return t * (t > 0).to(t.dtype)


@triton.jit
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
    n_k = tl.cdiv(K, BLOCK_K)
    total = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for i in range(n_k):
        kb = n_k - 1 - i  # walk K from its last block back to the first
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
        total = total + tl.dot(a_tile, b_tile)
    if ACTIVATION == "relu":
        total = _relu(total)
    inside = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :] * stride_cn, total, mask=inside)
""",
    ),
    Blind(
        name="matmul_activation_string_truthy",
        exercise_id="triton_matmul",
        half=H,
        correct=False,
        cause='The epilogue tests `if ACTIVATION:`, but ACTIVATION is a string and "none" is a '
        "non-empty, true string, so the interpreter applies the relu in both cases (and "
        'Triton\'s compiler refuses an `if` on a str); compare it with ACTIVATION == "relu".',
        source=_HEAD
        + """
@triton.jit
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
    if ACTIVATION:
        acc = tl.maximum(acc, 0.0)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))
""",
    ),
    Blind(
        name="matmul_store_unmasked",
        exercise_id="triton_matmul",
        half=H,
        correct=False,
        cause="The final store has no mask, so the edge tiles write their padded rows and "
        "columns past the edges of c when M or N is not a multiple of the block.",
        source=_HEAD
        + """
@triton.jit
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
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc)
""",
    ),
    Blind(
        name="matmul_grouped_1d_pid_on_2d_grid",
        exercise_id="triton_matmul",
        half=H,
        correct=False,
        cause="The kernel decodes its tile from a one-dimensional program id (pid // num_pid_n,"
        " pid % num_pid_n) although the grid is two-dimensional, one axis per tile row "
        "and per tile column, so program_id(1) is ignored and most tiles of c are "
        "computed by several programs or by none.",
        source=_HEAD
        + """
@triton.jit
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
    # one program id, split into a tile row and column (as in the chapter's L2-friendly order)
    pid = tl.program_id(0)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    pid_m = pid // num_pid_n
    pid_n = pid % num_pid_n
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
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))
""",
    ),
    Blind(
        name="matmul_relu_on_input_tiles",
        exercise_id="triton_matmul",
        half=H,
        correct=False,
        cause="The relu is applied to the tiles of a and b as they are loaded, computing "
        "relu(a) @ relu(b), instead of once to the finished product, relu(a @ b).",
        source=_HEAD
        + """
@triton.jit
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
        if ACTIVATION == "relu":  # fuse the activation into the loads
            a = tl.maximum(a, 0.0)
            b = tl.maximum(b, 0.0)
        acc += tl.dot(a, b)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))
""",
    ),
    Blind(
        name="matmul_float16_accumulator",
        exercise_id="triton_matmul",
        half=H,
        correct=False,
        cause="The accumulator is float16 (each tl.dot result is rounded to float16 and added "
        "in float16), so a long K loses digits at every step; the accumulator must be "
        "float32.",
        source=_HEAD
        + """
@triton.jit
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
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float16)  # same type as the inputs
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < K - k) & (offs_n[None, :] < N), other=0.0)
        acc += tl.dot(a, b).to(tl.float16)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    if ACTIVATION == "relu":
        acc = tl.maximum(acc, 0.0)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))
""",
    ),
    # ------------------------------------------------------------------ triton_flash_attention
    Blind(
        name="attention_k_loaded_transposed",
        exercise_id="triton_flash_attention",
        half=H,
        correct=True,
        source=_HEAD
        + """
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
    q_rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    d = tl.arange(0, HEAD_DIM)
    q_ok = q_rows < seq_len
    q = tl.load(q_ptr + q_rows[:, None] * stride_q + d[None, :], mask=q_ok[:, None], other=0.0)
    row_max = tl.zeros((BLOCK_M,), dtype=tl.float32) - float("inf")
    denom = tl.zeros((BLOCK_M,), dtype=tl.float32)
    out = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    last_key = seq_len
    if CAUSAL:
        last_key = tl.minimum(seq_len, (tl.program_id(0) + 1) * BLOCK_M)
    for kv0 in range(0, last_key, BLOCK_N):
        keys = kv0 + tl.arange(0, BLOCK_N)
        k_ok = keys < seq_len
        # k^T loaded directly as a HEAD_DIM x BLOCK_N tile
        kT = tl.load(k_ptr + keys[None, :] * stride_k + d[:, None], mask=k_ok[None, :], other=0.0)
        vv = tl.load(v_ptr + keys[:, None] * stride_v + d[None, :], mask=k_ok[:, None], other=0.0)
        scores = tl.dot(q, kT) * sm_scale
        allowed = k_ok[None, :]
        if CAUSAL:
            allowed = allowed & (keys[None, :] <= q_rows[:, None])
        scores = tl.where(allowed, scores, float("-inf"))
        new_max = tl.maximum(row_max, tl.max(scores, axis=1))
        correction = tl.exp(row_max - new_max)
        probs = tl.exp(scores - new_max[:, None])
        denom = denom * correction + tl.sum(probs, axis=1)
        out = out * correction[:, None] + tl.dot(probs.to(vv.dtype), vv)
        row_max = new_max
    out = out / denom[:, None]
    tl.store(o_ptr + q_rows[:, None] * stride_o + d[None, :], out, mask=q_ok[:, None])
""",
    ),
    Blind(
        name="attention_causal_block_local_indices",
        exercise_id="triton_flash_attention",
        half=H,
        correct=False,
        cause="The causal mask compares the positions inside the tiles (tl.arange(0, BLOCK_M) "
        "against tl.arange(0, BLOCK_N)) instead of the global query and key indices "
        "offs_m and offs_n, so every key block gets the same triangle: earlier key blocks"
        " are partly hidden from later queries, and with BLOCK_M > BLOCK_N future keys "
        "leak in.",
        source=_HEAD
        + """
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
            rows = tl.arange(0, BLOCK_M)
            cols = tl.arange(0, BLOCK_N)
            keep = keep & (rows[:, None] >= cols[None, :])
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
    ),
    Blind(
        name="attention_kv_loads_unmasked",
        exercise_id="triton_flash_attention",
        half=H,
        correct=False,
        cause="k and v are loaded without the mask offs_n < seq_len (only the scores are "
        "masked), so when seq_len is not a multiple of BLOCK_N the last key block reads "
        "rows past the end of k and v.",
        source=_HEAD
        + """
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
        k = tl.load(k_ptr + offs_n[:, None] * stride_k + offs_d[None, :])
        v = tl.load(v_ptr + offs_n[:, None] * stride_v + offs_d[None, :])
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
    ),
    Blind(
        name="attention_store_unmasked",
        exercise_id="triton_flash_attention",
        half=H,
        correct=False,
        cause="The output is stored without the mask offs_m < seq_len, so the last query block "
        "writes its padded rows past the end of o when seq_len is not a multiple of "
        "BLOCK_M.",
        source=_HEAD
        + """
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
        m_i = m_new
    o = acc / l_i[:, None]
    tl.store(o_ptr + offs_m[:, None] * stride_o + offs_d[None, :], o)
""",
    ),
    Blind(
        name="attention_blocks_softmaxed_separately",
        exercise_id="triton_flash_attention",
        half=H,
        correct=False,
        cause="Each key block is softmax-normalised on its own and the blocks' outputs are "
        "averaged, instead of one softmax over all the keys: without a running maximum "
        "and a running sum rescaled across blocks, the weights are wrong whenever there "
        "are several key blocks.",
        source=_HEAD
        + """
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
    start_m = tl.program_id(0) * BLOCK_M
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(
        q_ptr + offs_m[:, None] * stride_q + offs_d[None, :],
        mask=offs_m[:, None] < seq_len,
        other=0.0,
    )
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    n_blocks = tl.zeros((BLOCK_M,), dtype=tl.float32)
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
        m_blk = tl.max(s, axis=1)
        p = tl.exp(s - m_blk[:, None])
        l_blk = tl.sum(p, axis=1)
        # softmax of this block of keys, then average the blocks
        acc += tl.dot((p / l_blk[:, None]).to(tl.float16), v)
        n_blocks += tl.where(m_blk > -float("inf"), 1.0, 0.0)
    o = acc / n_blocks[:, None]
    tl.store(
        o_ptr + offs_m[:, None] * stride_o + offs_d[None, :], o, mask=offs_m[:, None] < seq_len
    )
""",
    ),
    Blind(
        name="attention_q_times_k_untransposed",
        exercise_id="triton_flash_attention",
        half=H,
        correct=False,
        cause="The scores are tl.dot(q, k) with k as loaded (BLOCK_N x HEAD_DIM) instead of q @"
        " k^T (tl.trans(k)): the shapes only fit when HEAD_DIM == BLOCK_N, and then each "
        "score multiplies q by a column of k instead of a key row.",
        source=_HEAD
        + """
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
        s = tl.dot(q, k) * sm_scale
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
    ),
    # ------------------------------------------------------------------ triton_cross_entropy
    Blind(
        name="cross_entropy_max_picks_target",
        exercise_id="triton_cross_entropy",
        half=H,
        correct=True,
        source=_HEAD
        + """
@triton.jit
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
    ok = r < n_rows
    hid = tl.arange(0, HIDDEN)
    h_blk = tl.load(h_ptr + r[:, None] * stride_h + hid[None, :], mask=ok[:, None], other=0.0)
    tgt = tl.load(target_ptr + r, mask=ok, other=0)
    run_max = tl.full((BLOCK_M,), float("-inf"), tl.float32)
    run_sum = tl.zeros((BLOCK_M,), tl.float32)
    tgt_logit = tl.full((BLOCK_M,), float("-inf"), tl.float32)
    n_blocks = tl.cdiv(vocab, BLOCK_V)
    for j in range(n_blocks):
        v_idx = j * BLOCK_V + tl.arange(0, BLOCK_V)
        in_vocab = v_idx < vocab
        w_blk = tl.load(
            w_ptr + v_idx[:, None] * stride_w + hid[None, :], mask=in_vocab[:, None], other=0.0
        )
        z = tl.dot(h_blk, tl.trans(w_blk))
        z = tl.where(in_vocab[None, :], z, float("-inf"))
        is_tgt = v_idx[None, :] == tgt[:, None]
        # the target lies in exactly one block: keep the largest "picked" value seen
        tgt_logit = tl.maximum(tgt_logit, tl.max(tl.where(is_tgt, z, float("-inf")), axis=1))
        blk_max = tl.max(z, axis=1)
        new_max = tl.maximum(run_max, blk_max)
        run_sum = run_sum * tl.exp(run_max - new_max) + tl.sum(
            tl.exp(z - new_max[:, None]), axis=1
        )
        run_max = new_max
    loss = tl.log(run_sum) - (tgt_logit - run_max)
    tl.store(loss_ptr + r, loss, mask=ok)
""",
    ),
    Blind(
        name="cross_entropy_store_unmasked",
        exercise_id="triton_cross_entropy",
        half=H,
        correct=False,
        cause="The losses are stored without the row mask rows < n_rows, so when n_rows is not "
        "a multiple of BLOCK_M the last program writes its padded rows past the end of "
        "loss.",
        source=_HEAD
        + """
@triton.jit
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
        logits = tl.where(cols[None, :] < vocab, logits, -float("inf"))
        m_new = tl.maximum(m, tl.max(logits, axis=1))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(logits - m_new[:, None]), axis=1)
        m = m_new
        picked += tl.sum(tl.where(cols[None, :] == target[:, None], logits, 0.0), axis=1)
    tl.store(loss_ptr + rows, m + tl.log(s) - picked)
""",
    ),
    Blind(
        name="cross_entropy_log2_of_sum",
        exercise_id="triton_cross_entropy",
        half=H,
        correct=False,
        cause="The sum is turned back into a log-sum-exp with tl.log2 while it was summed with "
        "the natural tl.exp, so the loss is m + log2(s) - target instead of m + ln(s) - "
        "target.",
        source=_HEAD
        + """
@triton.jit
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
        logits = tl.where(cols[None, :] < vocab, logits, -float("inf"))
        m_new = tl.maximum(m, tl.max(logits, axis=1))
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(logits - m_new[:, None]), axis=1)
        m = m_new
        picked += tl.sum(tl.where(cols[None, :] == target[:, None], logits, 0.0), axis=1)
    tl.store(loss_ptr + rows, m + tl.log2(s) - picked, mask=row_ok)
""",
    ),
    Blind(
        name="cross_entropy_max_reset_each_block",
        hints=("never go down",),
        exercise_id="triton_cross_entropy",
        half=H,
        correct=False,
        cause="m_new is the block's own maximum instead of max(m, block maximum), so when a "
        "later vocabulary block has smaller logits the sum is rescaled by exp(m - m_new) "
        "> 1, which overflows to inf for rows whose logits differ widely between blocks.",
        source=_HEAD
        + """
@triton.jit
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
        logits = tl.where(cols[None, :] < vocab, logits, -float("inf"))
        m_new = tl.max(logits, axis=1)  # this block's maximum
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(logits - m_new[:, None]), axis=1)
        m = m_new
        picked += tl.sum(tl.where(cols[None, :] == target[:, None], logits, 0.0), axis=1)
    tl.store(loss_ptr + rows, m + tl.log(s) - picked, mask=row_ok)
""",
    ),
    Blind(
        name="cross_entropy_picks_shifted_logit",
        exercise_id="triton_cross_entropy",
        half=H,
        correct=False,
        cause="The target's value is picked from the shifted logits (logit - m_new of its "
        "block) instead of the raw logits, so the loss m + log(s) - picked has that "
        "block's running maximum added once too often.",
        source=_HEAD
        + """
@triton.jit
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
        logits = tl.where(cols[None, :] < vocab, logits, -float("inf"))
        m_new = tl.maximum(m, tl.max(logits, axis=1))
        shifted = logits - m_new[:, None]
        s = s * tl.exp(m - m_new) + tl.sum(tl.exp(shifted), axis=1)
        m = m_new
        picked += tl.sum(tl.where(cols[None, :] == target[:, None], shifted, 0.0), axis=1)
    tl.store(loss_ptr + rows, m + tl.log(s) - picked, mask=row_ok)
""",
    ),
]
