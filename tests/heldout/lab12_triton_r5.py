"""Held-out answers to lab 12 (Triton), round 5: all ``half="held2"``.

Written blind on 2026-11-28 by a helper session that never read the lab's checker (nothing under
``gpu_utils/exercises/``, no ``tests/`` file but ``tests/heldout/__init__.py``, no check cell run).
Sources: the learner's lab ``labs/12_triton_lab.ipynb``, the reference code cells of
``solutions/12_triton_lab.ipynb``, chapter 12, and the earlier rounds' causes (avoided here).

Verified without the checker by a scratch harness (/tmp/lab12_triton_r5/, not kept) that ran each
answer through ``heldout.submitted`` and launched it in Triton's interpreter (TRITON_INTERPRET=1,
CPU tensors placed inside NaN guard zones, so an out-of-bounds read or write shows as a NaN or a
changed guard) with the lab's grids, comparing with torch (``x + y``, ``sum``,
``softmax``, ``layer_norm``, ``a @ b`` and ``relu``, ``scaled_dot_product_attention``,
``cross_entropy(reduction="none")`` and its autograd gradient times ``dloss``) and with the
reference solution. Inputs: sizes 1, 2, 3 and non-powers of two (e.g. n=129, 100 and 3000
columns, M/N/K = 37/45/70, seq 33/37/40/50, vocab 100/130/200, 1000), row strides larger
than the row, a transposed ``b``, BLOCK_M != BLOCK_N, HIDDEN 16 and 32, float16 ``x`` for the
row sum, very large and very negative rows, one query row scaled by 200, ``v`` with its own row
stride. Every correct answer matched on every input (and compiled for sm_80 with
``triton.compile``, no GPU); every wrong answer differed on at least one input (a wrong value, a
NaN left unwritten or read from a guard, or a shape error; the endless loop was stopped by a
60 s alarm). Wrong answers that are right on most inputs: ``row_sum_range_stops_at_n_minus_1``
(only n_cols = 1 differed), ``attention_tile_max_without_axis`` (only the scaled query row),
``attention_v_with_stride_k`` (only v with its own stride), ``cross_entropy_hidden_hard_coded_16``
(only HIDDEN 32), ``ce_backward_exp_over_exp_lse`` (only very large or very negative rows),
``layernorm_float16_compute`` (errors up to 1e-3 on ordinary rows, 2e-2 on a row of mean 100).
"""

from heldout import Blind

_HEAD = """
import torch
import triton
import triton.language as tl
"""

ANSWERS = [
    # ------------------------------------------------------------------ simpler exercises
    Blind(
        name="vector_add_other_zero_block_start",
        exercise_id="triton_vector_add",
        half="held2",
        correct=True,
        source=_HEAD
        + """
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    block_start = tl.program_id(0) * BLOCK_SIZE
    lanes = tl.arange(0, BLOCK_SIZE)
    offsets = block_start + lanes
    in_range = offsets < n_elements
    a = tl.load(x_ptr + offsets, mask=in_range, other=0.0)
    b = tl.load(y_ptr + offsets, mask=in_range, other=0.0)
    total = a + b
    tl.store(out_ptr + offsets, total, mask=in_range)
""",
    ),
    Blind(
        name="row_sum_range_stops_at_n_minus_1",
        exercise_id="triton_row_sum",
        half="held2",
        hints=("cdiv(n_cols, BLOCK_SIZE)",),
        correct=False,
        cause=(
            "The loop runs over range(0, n_cols - 1, BLOCK_SIZE), so when n_cols is one more "
            "than a multiple of BLOCK_SIZE (n_cols = 1 among them) the last block, which holds "
            "only the last column, is never summed."
        ),
        source=_HEAD
        + """
@triton.jit
def row_sum_kernel(x_ptr, out_ptr, x_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros((BLOCK_SIZE,), dtype=tl.float32)
    for start in range(0, n_cols - 1, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        vals = tl.load(x_ptr + row * x_row_stride + cols, mask=cols < n_cols, other=0.0)
        acc += vals.to(tl.float32)
    tl.store(out_ptr + row, tl.sum(acc, axis=0))
""",
    ),
    Blind(
        name="softmax_exp2_without_log2e",
        exercise_id="triton_softmax",
        half="held2",
        correct=False,
        cause=(
            "tl.exp2 is used as a faster exp without multiplying the exponent by log2(e), so "
            "the kernel computes 2^(x - m) / sum 2^(x - m), the softmax of x * ln 2, not of x."
        ),
        source=_HEAD
        + """
@triton.jit
def softmax_kernel(x_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    m = -float("inf")
    s = 0.0
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        x = tl.load(x_ptr + row * x_row_stride + cols, mask=cols < n_cols, other=-float("inf"))
        m_new = tl.maximum(m, tl.max(x, axis=0))
        s = s * tl.exp2(m - m_new) + tl.sum(tl.exp2(x - m_new), axis=0)
        m = m_new
    for start in range(0, n_cols, BLOCK_SIZE):
        cols = start + tl.arange(0, BLOCK_SIZE)
        mask = cols < n_cols
        x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=-float("inf"))
        tl.store(out_ptr + row * out_row_stride + cols, tl.exp2(x - m) / s, mask=mask)
""",
    ),
    # ------------------------------------------------------------------ matmul
    Blind(
        name="matmul_recomputed_pointers_dot_acc_where",
        exercise_id="triton_matmul",
        half="held2",
        correct=True,
        source=_HEAD
        + """
@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    ACTIVATION: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for kb in range(0, tl.cdiv(K, BLOCK_K)):
        rk = kb * BLOCK_K + tl.arange(0, BLOCK_K)
        a = tl.load(
            a_ptr + rm[:, None] * stride_am + rk[None, :] * stride_ak,
            mask=(rm[:, None] < M) & (rk[None, :] < K),
            other=0.0,
        )
        b = tl.load(
            b_ptr + rk[:, None] * stride_bk + rn[None, :] * stride_bn,
            mask=(rk[:, None] < K) & (rn[None, :] < N),
            other=0.0,
        )
        acc = tl.dot(a, b, acc)
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
        name="matmul_b_mask_n_against_m",
        exercise_id="triton_matmul",
        half="held2",
        hints=("column indices past N = 40", "`offs_n[None, :] < N`"),
        correct=False,
        cause=(
            "b's column mask compares offs_n with M instead of N (a copy of a's row mask), so "
            "when N > M the columns of b past M are loaded as 0 and those columns of c are "
            "wrong, and when N < M the last tile reads past the end of b's rows."
        ),
        source=_HEAD
        + """
@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
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
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < K - k) & (offs_n[None, :] < M), other=0.0)
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
        name="matmul_advance_before_load",
        exercise_id="triton_matmul",
        half="held2",
        correct=False,
        cause=(
            "The pointers are advanced by BLOCK_K at the top of the loop, before the loads, so "
            "the first block of K is never multiplied and every step reads the block after the "
            "one its mask K - k describes (past the end of a's rows and b's columns at the end)."
        ),
        source=_HEAD
        + """
@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
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
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
        a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & (offs_k[None, :] < K - k), other=0.0)
        b = tl.load(b_ptrs, mask=(offs_k[:, None] < K - k) & (offs_n[None, :] < N), other=0.0)
        acc += tl.dot(a, b)
    if ACTIVATION == "relu":
        acc = tl.maximum(acc, 0.0)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))
""",
    ),
    Blind(
        name="matmul_while_k_never_incremented",
        exercise_id="triton_matmul",
        half="held2",
        hints=("never ends",),
        correct=False,
        cause=(
            "The K loop is a while loop whose counter k is never increased (the k += BLOCK_K "
            "line is missing), so the loop never ends."
        ),
        source=_HEAD
        + """
@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    ACTIVATION: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    k = 0
    while k < K:
        ks = k + offs_k
        a = tl.load(
            a_ptr + offs_m[:, None] * stride_am + ks[None, :] * stride_ak,
            mask=(offs_m[:, None] < M) & (ks[None, :] < K),
            other=0.0,
        )
        b = tl.load(
            b_ptr + ks[:, None] * stride_bk + offs_n[None, :] * stride_bn,
            mask=(ks[:, None] < K) & (offs_n[None, :] < N),
            other=0.0,
        )
        acc += tl.dot(a, b)
    if ACTIVATION == "relu":
        acc = tl.maximum(acc, 0.0)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))
""",
    ),
    Blind(
        name="matmul_store_before_activation",
        exercise_id="triton_matmul",
        half="held2",
        hints=("the activation is missing",),
        correct=False,
        cause=(
            "The tile is stored before the activation is applied, so the relu only changes the "
            "registers afterwards and c holds a @ b with its negative values."
        ),
        source=_HEAD
        + """
@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
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
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))
    if ACTIVATION == "relu":
        acc = tl.maximum(acc, 0.0)
""",
    ),
    # ------------------------------------------------------------------ layer norm
    Blind(
        name="layernorm_rsqrt_count_from_mask",
        exercise_id="triton_layernorm",
        half="held2",
        correct=True,
        source=_HEAD
        + """
@triton.jit
def layernorm_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, eps,
    BLOCK_SIZE: tl.constexpr,
):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK_SIZE)
    valid = offs < n_cols
    x = tl.load(x_ptr + row * x_row_stride + offs, mask=valid, other=0.0).to(tl.float32)
    count = tl.sum(valid.to(tl.float32), axis=0)
    mu = tl.sum(x, axis=0) / count
    centred = tl.where(valid, x - mu, 0.0)
    variance = tl.sum(centred * centred, axis=0) / count
    inv_std = tl.rsqrt(variance + eps)
    gamma = tl.load(w_ptr + offs, mask=valid, other=1.0)
    beta = tl.load(b_ptr + offs, mask=valid, other=0.0)
    y = centred * inv_std
    tl.store(out_ptr + row * out_row_stride + offs, y * gamma + beta, mask=valid)
""",
    ),
    Blind(
        name="layernorm_sqrt_taken_twice",
        exercise_id="triton_layernorm",
        half="held2",
        hints=("(var + eps)^(-0.25)",),
        correct=False,
        cause=(
            "The square root is taken twice: var already holds the standard deviation "
            "sqrt(sum((x - mean)^2) / n_cols) before 1 / sqrt(var + eps), so the rows are "
            "divided by the fourth root of the variance."
        ),
        source=_HEAD
        + """
@triton.jit
def layernorm_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, eps,
    BLOCK_SIZE: tl.constexpr,
):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0)
    mean = tl.sum(x, axis=0) / n_cols
    diff = tl.where(mask, x - mean, 0.0)
    var = tl.sqrt(tl.sum(diff * diff, axis=0) / n_cols)
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(out_ptr + row * out_row_stride + cols, diff * rstd * w + b, mask=mask)
""",
    ),
    Blind(
        name="layernorm_float16_compute",
        exercise_id="triton_layernorm",
        half="held2",
        hints=("x rounded to float16",),
        correct=False,
        cause=(
            "x is cast to float16 right after loading, so its values are rounded to about three "
            "significant digits before the mean is subtracted; a row whose mean is large next to "
            "its spread loses most of its spread (compute in float32)."
        ),
        source=_HEAD
        + """
@triton.jit
def layernorm_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, eps,
    BLOCK_SIZE: tl.constexpr,
):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=0.0).to(tl.float16)
    mean = tl.sum(x.to(tl.float32), axis=0) / n_cols
    diff = tl.where(mask, x.to(tl.float32) - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(out_ptr + row * out_row_stride + cols, diff * rstd * w + b, mask=mask)
""",
    ),
    Blind(
        name="layernorm_other_minus_inf_from_softmax",
        exercise_id="triton_layernorm",
        half="held2",
        correct=False,
        cause=(
            "x is loaded with other=-inf (copied from the softmax), so when n_cols is not a power "
            "of two the padded lanes make sum(x) -inf and the mean, variance and every output "
            "NaN; for a sum the padding must be 0."
        ),
        source=_HEAD
        + """
@triton.jit
def layernorm_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, eps,
    BLOCK_SIZE: tl.constexpr,
):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * x_row_stride + cols, mask=mask, other=-float("inf"))
    mean = tl.sum(x, axis=0) / n_cols
    diff = tl.where(mask, x - mean, 0.0)
    var = tl.sum(diff * diff, axis=0) / n_cols
    rstd = 1.0 / tl.sqrt(var + eps)
    w = tl.load(w_ptr + cols, mask=mask)
    b = tl.load(b_ptr + cols, mask=mask)
    tl.store(out_ptr + row * out_row_stride + cols, diff * rstd * w + b, mask=mask)
""",
    ),
    Blind(
        name="layernorm_mean_subtracted_twice",
        exercise_id="triton_layernorm",
        half="held2",
        correct=False,
        cause=(
            "The output subtracts the mean a second time, (diff - mean) * rstd, although diff is "
            "already x - mean, so every row whose mean is not 0 is shifted by -mean * rstd."
        ),
        source=_HEAD
        + """
@triton.jit
def layernorm_kernel(
    x_ptr, w_ptr, b_ptr, out_ptr, x_row_stride, out_row_stride, n_cols, eps,
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
    y = (diff - mean) * rstd
    tl.store(out_ptr + row * out_row_stride + cols, y * w + b, mask=mask)
""",
    ),
]

_ATT_SIG = """
@triton.jit
def attention_kernel(
    q_ptr, k_ptr, v_ptr, o_ptr, seq_len, stride_q, stride_k, stride_v, stride_o, sm_scale,
    HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr,
):
"""

ANSWERS += [
    # ------------------------------------------------------------------ FlashAttention-2
    Blind(
        name="attention_exp2_all_key_blocks",
        exercise_id="triton_flash_attention",
        half="held2",
        correct=True,
        source=_HEAD
        + _ATT_SIG
        + """
    offs_m = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + offs_m[:, None] * stride_q + offs_d[None, :],
                mask=offs_m[:, None] < seq_len, other=0.0)
    qk_scale = sm_scale * 1.4426950408889634  # log2(e): exp(x) = exp2(x * log2(e))
    m_i = tl.full((BLOCK_M,), -float("inf"), dtype=tl.float32)
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    for start_n in range(0, seq_len, BLOCK_N):  # every key block; the mask does the rest
        offs_n = start_n + tl.arange(0, BLOCK_N)
        kv_ok = offs_n[:, None] < seq_len
        k = tl.load(k_ptr + offs_n[:, None] * stride_k + offs_d[None, :], mask=kv_ok, other=0.0)
        v = tl.load(v_ptr + offs_n[:, None] * stride_v + offs_d[None, :], mask=kv_ok, other=0.0)
        s = tl.dot(q, tl.trans(k)) * qk_scale
        ok = offs_n[None, :] < seq_len
        if CAUSAL:
            ok = ok & (offs_n[None, :] <= offs_m[:, None])
        s = tl.where(ok, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp2(s - m_new[:, None])
        alpha = tl.exp2(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    o = acc / l_i[:, None]
    tl.store(o_ptr + offs_m[:, None] * stride_o + offs_d[None, :], o,
             mask=offs_m[:, None] < seq_len)
""",
    ),
    Blind(
        name="attention_kT_tile_prescaled_q",
        exercise_id="triton_flash_attention",
        half="held2",
        hints=("`q` is float32 and `kT` is float16", "`q.to(tl.float16)`"),
        correct=False,
        cause=(
            "Relabelled wrong after the blind pass (the lab now says q, k, v are float16): q * "
            "sm_scale is float32 (sm_scale is a run-time float), so tl.dot(q, kT) mixes float32 "
            "with float16 k and the GPU's compiler refuses it (the interpreter accepts it)."
        ),
        source=_HEAD
        + _ATT_SIG
        + """
    pid = tl.program_id(0)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    d = tl.arange(0, HEAD_DIM)
    row_ok = rows < seq_len
    q = tl.load(q_ptr + rows[:, None] * stride_q + d[None, :], mask=row_ok[:, None], other=0.0)
    q = q * sm_scale  # scale the queries once instead of every score tile
    m_i = tl.zeros((BLOCK_M,), dtype=tl.float32) - float("inf")
    l_i = tl.zeros((BLOCK_M,), dtype=tl.float32)
    acc = tl.zeros((BLOCK_M, HEAD_DIM), dtype=tl.float32)
    if CAUSAL:
        hi = tl.minimum((pid + 1) * BLOCK_M, seq_len)
    else:
        hi = seq_len
    for lo in range(0, hi, BLOCK_N):
        keys = lo + tl.arange(0, BLOCK_N)
        key_ok = keys < seq_len
        # k^T loaded directly as a HEAD_DIM x BLOCK_N tile
        kT = tl.load(k_ptr + keys[None, :] * stride_k + d[:, None], mask=key_ok[None, :], other=0.0)
        v = tl.load(v_ptr + keys[:, None] * stride_v + d[None, :], mask=key_ok[:, None], other=0.0)
        s = tl.dot(q, kT)
        keep = key_ok[None, :]
        if CAUSAL:
            keep = keep & (rows[:, None] >= keys[None, :])
        s = tl.where(keep, s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        alpha = tl.exp(m_i - m_new)
        p = tl.exp(s - m_new[:, None])
        acc = acc * alpha[:, None]
        acc += tl.dot(p.to(v.dtype), v)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        m_i = m_new
    inv_l = 1.0 / l_i
    tl.store(o_ptr + rows[:, None] * stride_o + d[None, :], acc * inv_l[:, None],
             mask=row_ok[:, None])
""",
    ),
    Blind(
        name="attention_tile_max_without_axis",
        exercise_id="triton_flash_attention",
        half="held2",
        hints=("`p` is float32 and `v` is float16",),
        correct=False,
        cause=(
            "The block maximum is tl.max(s) without axis=1, one number for the whole tile instead "
            "of one per query row, so a row whose scores lie far below another row's maximum has "
            "every exp(s - m) underflow to 0 and its output is 0/0."
        ),
        source=_HEAD
        + _ATT_SIG
        + """
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
        m_new = tl.maximum(m_i, tl.max(s))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p, v)
        m_i = m_new
    o = acc / l_i[:, None]
    tl.store(o_ptr + offs_m[:, None] * stride_o + offs_d[None, :], o,
             mask=offs_m[:, None] < seq_len)
""",
    ),
    Blind(
        name="attention_v_with_stride_k",
        exercise_id="triton_flash_attention",
        half="held2",
        hints=("`p` is float32 and `v` is float16",),
        correct=False,
        cause=(
            "v's rows are addressed with stride_k (a copy of the line that loads k) instead of "
            "stride_v, which is only right when k and v have the same row stride; a v whose rows "
            "are padded differently is read from the wrong places."
        ),
        source=_HEAD
        + _ATT_SIG
        + """
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
        v = tl.load(v_ptr + offs_n[:, None] * stride_k + offs_d[None, :],
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
        acc = acc * alpha[:, None] + tl.dot(p, v)
        m_i = m_new
    o = acc / l_i[:, None]
    tl.store(o_ptr + offs_m[:, None] * stride_o + offs_d[None, :], o,
             mask=offs_m[:, None] < seq_len)
""",
    ),
    Blind(
        name="attention_scale_one_over_head_dim",
        exercise_id="triton_flash_attention",
        half="held2",
        hints=("`p` is float32 and `v` is float16",),
        correct=False,
        cause=(
            "The sm_scale argument is ignored and the scores are divided by HEAD_DIM instead of "
            "multiplied by 1/sqrt(HEAD_DIM), so the softmax is too flat."
        ),
        source=_HEAD
        + _ATT_SIG
        + """
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
        s = tl.dot(q, tl.trans(k)) / HEAD_DIM
        keep = offs_n[None, :] < seq_len
        if CAUSAL:
            keep = keep & (offs_m[:, None] >= offs_n[None, :])
        s = tl.where(keep, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p, v)
        m_i = m_new
    o = acc / l_i[:, None]
    tl.store(o_ptr + offs_m[:, None] * stride_o + offs_d[None, :], o,
             mask=offs_m[:, None] < seq_len)
""",
    ),
    Blind(
        name="attention_exp2_p_but_exp_alpha",
        exercise_id="triton_flash_attention",
        half="held2",
        hints=("`p` is float32 and `v` is float16",),
        correct=False,
        cause=(
            "The scores are scaled by sm_scale * log2(e) and p uses tl.exp2, but alpha is "
            "tl.exp(m_i - m_new) with the natural exp on those base-2 maxima, so the rescale is "
            "wrong whenever a later key block raises the maximum."
        ),
        source=_HEAD
        + _ATT_SIG
        + """
    start_m = tl.program_id(0) * BLOCK_M
    offs_m = start_m + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, HEAD_DIM)
    q = tl.load(q_ptr + offs_m[:, None] * stride_q + offs_d[None, :],
                mask=offs_m[:, None] < seq_len, other=0.0)
    qk_scale = sm_scale * 1.4426950408889634
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
        s = tl.dot(q, tl.trans(k)) * qk_scale
        keep = offs_n[None, :] < seq_len
        if CAUSAL:
            keep = keep & (offs_m[:, None] >= offs_n[None, :])
        s = tl.where(keep, s, -float("inf"))
        m_new = tl.maximum(m_i, tl.max(s, axis=1))
        p = tl.exp2(s - m_new[:, None])
        alpha = tl.exp(m_i - m_new)
        l_i = l_i * alpha + tl.sum(p, axis=1)
        acc = acc * alpha[:, None] + tl.dot(p, v)
        m_i = m_new
    o = acc / l_i[:, None]
    tl.store(o_ptr + offs_m[:, None] * stride_o + offs_d[None, :], o,
             mask=offs_m[:, None] < seq_len)
""",
    ),
    Blind(
        name="attention_start_m_without_block",
        exercise_id="triton_flash_attention",
        half="held2",
        hints=("`p` is float32 and `v` is float16",),
        correct=False,
        cause=(
            "start_m is tl.program_id(0) without * BLOCK_M, so program i starts at query i "
            "instead of i * BLOCK_M: the query blocks overlap and the queries past the first "
            "block plus the number of programs are never written."
        ),
        source=_HEAD
        + _ATT_SIG
        + """
    start_m = tl.program_id(0)
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
        acc = acc * alpha[:, None] + tl.dot(p, v)
        m_i = m_new
    o = acc / l_i[:, None]
    tl.store(o_ptr + offs_m[:, None] * stride_o + offs_d[None, :], o,
             mask=offs_m[:, None] < seq_len)
""",
    ),
]

_CE_SIG = """
@triton.jit
def cross_entropy_kernel(
    h_ptr, w_ptr, target_ptr, loss_ptr, n_rows, vocab, stride_h, stride_w,
    HIDDEN: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_V: tl.constexpr,
):
"""

_CE_REF_BODY = """
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
    tl.store(loss_ptr + rows, m + tl.log(s) - picked, mask=row_ok)
"""


def _ce_with(old: str, new: str) -> str:
    """The lab's reference-shaped kernel with one line changed (fails loudly if it is absent)."""
    assert old in _CE_REF_BODY, old
    return _HEAD + _CE_SIG + _CE_REF_BODY.replace(old, new)


ANSWERS += [
    # ------------------------------------------------------------------ cross-entropy forward
    Blind(
        name="cross_entropy_gather_target_row",
        exercise_id="triton_cross_entropy",
        half="held2",
        hints=("target's logit computed in float16",),
        correct=False,
        cause=(
            "Relabelled wrong after the blind pass (the lab now says h and w are float16): the "
            "target logit tl.sum(h * w_t, axis=1) multiplies and sums in float16, so it is off "
            "by float16 rounding (a small relative error) on some rows; tl.dot or a float32 "
            "cast before the product keeps it exact enough."
        ),
        source=_HEAD
        + _CE_SIG
        + """
    pid = tl.program_id(0)
    rows = pid * BLOCK_M + tl.arange(0, BLOCK_M)
    d = tl.arange(0, HIDDEN)
    live = rows < n_rows
    h = tl.load(h_ptr + rows[:, None] * stride_h + d[None, :], mask=live[:, None], other=0.0)
    tgt = tl.load(target_ptr + rows, mask=live, other=0)
    # the target's logit directly: the dot of h with the target's row of w
    w_t = tl.load(w_ptr + tgt[:, None] * stride_w + d[None, :], mask=live[:, None], other=0.0)
    target_logit = tl.sum(h * w_t, axis=1)
    run_max = tl.zeros((BLOCK_M,), dtype=tl.float32) - float("inf")
    run_sum = tl.zeros((BLOCK_M,), dtype=tl.float32)
    for v0 in range(0, vocab, BLOCK_V):
        vs = v0 + tl.arange(0, BLOCK_V)
        in_vocab = vs < vocab
        wb = tl.load(w_ptr + vs[:, None] * stride_w + d[None, :], mask=in_vocab[:, None], other=0.0)
        z = tl.dot(h, tl.trans(wb))
        z = tl.where(in_vocab[None, :], z, float("-inf"))
        new_max = tl.maximum(run_max, tl.max(z, axis=1))
        run_sum = run_sum * tl.exp(run_max - new_max)
        run_sum += tl.sum(tl.exp(z - new_max[:, None]), axis=1)
        run_max = new_max
    lse = run_max + tl.log(run_sum)
    tl.store(loss_ptr + rows, lse - target_logit, mask=live)
""",
    ),
    Blind(
        name="cross_entropy_hidden_hard_coded_16",
        exercise_id="triton_cross_entropy",
        half="held2",
        correct=False,
        cause=(
            "The hidden dimension is hard-coded as tl.arange(0, 16) instead of tl.arange(0, "
            "HIDDEN), so when HIDDEN > 16 the logits use only the first 16 features of h and w."
        ),
        source=_ce_with("dims = tl.arange(0, HIDDEN)", "dims = tl.arange(0, 16)"),
    ),
    Blind(
        name="cross_entropy_max_as_row_vector",
        exercise_id="triton_cross_entropy",
        half="held2",
        hints=("64 (BLOCK_V)", "16 (BLOCK_M)", "`[:, None]`"),
        correct=False,
        cause=(
            "m_new is subtracted as a row vector, logits - m_new, instead of a column, "
            "logits - m_new[:, None], so vocabulary column j is shifted by row j's maximum (and "
            "the shapes only fit when BLOCK_M == BLOCK_V)."
        ),
        source=_ce_with(
            "tl.sum(tl.exp(logits - m_new[:, None]), axis=1)",
            "tl.sum(tl.exp(logits - m_new), axis=1)",
        ),
    ),
    Blind(
        name="cross_entropy_pick_with_maximum_from_zero",
        exercise_id="triton_cross_entropy",
        half="held2",
        hints=("exactly the rows whose target logit is negative",),
        correct=False,
        cause=(
            "The target's logit is collected with tl.maximum(picked, ...) starting from "
            "picked = 0, so a negative target logit is replaced by 0."
        ),
        source=_ce_with(
            "picked += tl.sum(tl.where(cols[None, :] == target[:, None], logits, 0.0), axis=1)",
            "picked = tl.maximum(\n"
            "            picked,\n"
            '            tl.max(tl.where(cols[None, :] == target[:, None], logits, -float("inf")), axis=1),\n'
            "        )",
        ),
    ),
    Blind(
        name="cross_entropy_vocab_step_block_m",
        exercise_id="triton_cross_entropy",
        half="held2",
        correct=False,
        cause=(
            "The vocabulary loop steps by BLOCK_M instead of BLOCK_V, so when BLOCK_M < BLOCK_V "
            "the blocks overlap and columns are counted several times in the sum (and the target "
            "picked several times); when BLOCK_M > BLOCK_V columns are skipped."
        ),
        source=_ce_with(
            "for v0 in range(0, vocab, BLOCK_V):", "for v0 in range(0, vocab, BLOCK_M):"
        ),
    ),
]

_BWD_SIG = """
@triton.jit
def cross_entropy_backward_kernel(
    logits_ptr, target_ptr, lse_ptr, dloss_ptr, dlogits_ptr, vocab, stride_logits, stride_dlogits,
    BLOCK_V: tl.constexpr,
):
"""

_BWD_REF_BODY = """
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
        tl.store(dlogits_ptr + row * stride_dlogits + cols, grad, mask=mask)
"""


def _bwd_with(old: str, new: str) -> str:
    """The lab's reference-shaped backward with one line changed."""
    assert old in _BWD_REF_BODY, old
    return _HEAD + _BWD_SIG + _BWD_REF_BODY.replace(old, new)


ANSWERS += [
    # ------------------------------------------------------------------ cross-entropy backward
    Blind(
        name="ce_backward_cdiv_loop_onehot_cast",
        exercise_id="triton_cross_entropy_backward",
        half="held2",
        correct=True,
        source=_HEAD
        + _BWD_SIG
        + """
    i = tl.program_id(0)
    t = tl.load(target_ptr + i)
    row_lse = tl.load(lse_ptr + i)
    g = tl.load(dloss_ptr + i)
    src = logits_ptr + i * stride_logits
    dst = dlogits_ptr + i * stride_dlogits
    for blk in range(0, tl.cdiv(vocab, BLOCK_V)):
        j = blk * BLOCK_V + tl.arange(0, BLOCK_V)
        inside = j < vocab
        z = tl.load(src + j, mask=inside, other=-float("inf"))
        onehot = (j == t).to(tl.float32)
        soft = tl.exp(z - row_lse)
        tl.store(dst + j, soft * g - onehot * g, mask=inside)
""",
    ),
    Blind(
        name="ce_backward_exp2_where",
        exercise_id="triton_cross_entropy_backward",
        half="held2",
        correct=True,
        source=_HEAD
        + _BWD_SIG
        + """
    row = tl.program_id(0)
    target = tl.load(target_ptr + row)
    lse = tl.load(lse_ptr + row)
    scale = tl.load(dloss_ptr + row)
    for start in range(0, vocab, BLOCK_V):
        cols = start + tl.arange(0, BLOCK_V)
        mask = cols < vocab
        x = tl.load(logits_ptr + row * stride_logits + cols, mask=mask, other=0.0)
        p = tl.exp2((x - lse) * 1.4426950408889634)  # exp(a) = exp2(a * log2(e))
        grad = tl.where(cols == target, p - 1.0, p)
        tl.store(dlogits_ptr + row * stride_dlogits + cols, grad * scale, mask=mask)
""",
    ),
    Blind(
        name="ce_backward_dloss_on_softmax_only",
        exercise_id="triton_cross_entropy_backward",
        half="held2",
        correct=False,
        cause=(
            "dloss multiplies only the softmax, p * dloss - onehot, instead of the whole "
            "gradient (p - onehot) * dloss, so the target's column gets -1 instead of -dloss."
        ),
        source=_bwd_with(
            "grad = (p - tl.where(cols == target, 1.0, 0.0)) * dloss",
            "grad = p * dloss - tl.where(cols == target, 1.0, 0.0)",
        ),
    ),
    Blind(
        name="ce_backward_exp_over_exp_lse",
        exercise_id="triton_cross_entropy_backward",
        half="held2",
        hints=("exp(logits) overflows float32",),
        correct=False,
        cause=(
            "The softmax is computed as exp(x) / exp(lse) instead of exp(x - lse), so for rows "
            "of large logits both overflow to inf (inf / inf = NaN) and for very negative rows "
            "both underflow to 0 (0 / 0)."
        ),
        source=_bwd_with("p = tl.exp(x - lse)", "p = tl.exp(x) / tl.exp(lse)"),
    ),
    Blind(
        name="ce_backward_lse_of_row_0",
        exercise_id="triton_cross_entropy_backward",
        half="held2",
        hints=("row 0's log-sum-exp",),
        correct=False,
        cause=(
            "lse is loaded from lse_ptr without + row, so every row's softmax uses row 0's "
            "log-sum-exp and only row 0's gradient is right."
        ),
        source=_bwd_with("lse = tl.load(lse_ptr + row)", "lse = tl.load(lse_ptr)"),
    ),
    Blind(
        name="ce_backward_sign_flipped",
        exercise_id="triton_cross_entropy_backward",
        half="held2",
        hints=("the wrong sign",),
        correct=False,
        cause=(
            "The gradient's sign is flipped: the kernel stores (onehot - softmax) * dloss, the "
            "gradient of the target's log-probability, instead of (softmax - onehot) * dloss."
        ),
        source=_bwd_with(
            "grad = (p - tl.where(cols == target, 1.0, 0.0)) * dloss",
            "grad = (tl.where(cols == target, 1.0, 0.0) - p) * dloss",
        ),
    ),
    Blind(
        name="ce_backward_store_with_logits_stride",
        exercise_id="triton_cross_entropy_backward",
        half="held2",
        hints=("use `stride_dlogits`",),
        correct=False,
        cause=(
            "The gradient rows are stored stride_logits apart instead of stride_dlogits apart, "
            "so when dlogits' rows are spaced differently from the logits' rows the gradients "
            "land in the wrong places (and past the end of dlogits)."
        ),
        source=_bwd_with(
            "tl.store(dlogits_ptr + row * stride_dlogits + cols, grad, mask=mask)",
            "tl.store(dlogits_ptr + row * stride_logits + cols, grad, mask=mask)",
        ),
    ),
]
